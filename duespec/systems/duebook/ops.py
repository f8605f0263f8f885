"""Every value the duebook campaign sends, in one place (docs/operations.md, "What
duespec sends"): the op table, the argument strategies, the edges and garbage, and the
sizes and orders of deep runs' fills. Ordinary values most of the time, edges and garbage
some of it."""

from __future__ import annotations

import bisect
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable

from hypothesis import strategies as st

from duespec.model import duebook as model
from duespec.systems import MalformationMatrix
from duespec.targets.interface import Json

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

#: Argument names of each op, exactly as docs/operations.md lists them.
OPERATIONS: dict[str, tuple[str, ...]] = model.ARGUMENTS


@st.composite
def mostly(draw: st.DrawFn, common: st.SearchStrategy[Any], rare: st.SearchStrategy[Any],
           one_in: int) -> Any:
    """`rare` about once in `one_in` draws; shrinks towards `common`."""
    return draw(rare if draw(st.integers(0, one_in - 1)) == one_in - 1 else common)


@dataclass(frozen=True)
class Headroom:
    """A duration `offset` away from the largest one that still fits in int64 at this point:
    -1 and 0 fit exactly at the edge, +1 overflows (which must be `invalid`, never a wrap)."""

    offset: int

    def at(self, start: int) -> int:
        return INT64_MAX - start + self.offset


#: How an integer is dressed up as something that is not one (each must be `invalid`):
#: the integral float and the numeric string are what lenient parsers let through.
DISGUISES: dict[str, Callable[[int], Json]] = {
    "float": float,                       # 1 -> 1.0
    "string": str,                        # 5 -> "5"
    "null": lambda value: None,
    "true": lambda value: True,           # Python's own trap: True == 1
    "false": lambda value: False,
    "list": lambda value: [value],
    "object": lambda value: {"value": value},
}


@dataclass(frozen=True)
class Disguised:
    """An integer the machine would have sent, sent as a wrong-typed value instead."""

    form: str
    value: int = 0

    def of(self, value: int | None = None) -> Json:
        return DISGUISES[self.form](self.value if value is None else value)


#: The arguments a valid integer is sent disguised in, one at a time (DR-07).
DISGUISABLE = ("id", "now", "delay", "ttl", "limit")

#: Which open deferral an op or a clock move is about, named by what makes it stand out
#: rather than by position, so the choice survives when a shrunk run drops the others.
ROLES = ("newest", "oldest", "next due", "next to expire", "clock's focus")


@dataclass(frozen=True)
class OpenId:
    """The open deferral in `role` (the next id, not yet open, when none is open)."""

    role: str


@dataclass(frozen=True)
class DisguisedOpenId:
    """An open deferral's id as a wrong-typed value: `1.0` or `"1"` for the open id 1."""

    role: str
    form: str


@dataclass(frozen=True)
class ConsumedId:
    """The index-th newest id the book has consumed (the next id until one exists)."""

    index: int


@dataclass(frozen=True)
class UpcomingId:
    """The id the next successful schedule will allocate: not open yet."""


def normalized(form: str, other: str) -> Callable[[str], str]:
    """The owner in Unicode normalization `form`, or in `other` when `form` leaves it as it
    is: either way its other spelling whenever it has one (josé as é or as e + U+0301)."""
    def near_miss(owner: str) -> str:
        spelled = unicodedata.normalize(form, owner)
        return spelled if spelled != owner else unicodedata.normalize(other, owner)
    return near_miss


#: An owner's near misses: what a careless comparison (case folding, Unicode
#: normalization, trimming, prefix matching) or a length limit takes for the owner.
NEAR_MISSES: dict[str, Callable[[str], str]] = {
    "upper case": str.upper,
    "very long": lambda owner: owner * (1 + 4000 // len(owner)),
    "NFD": normalized("NFD", "NFC"),
    "padded": lambda owner: f" {owner} ",
    "prefix": lambda owner: owner[:-1] or owner + owner,
    "NFC": normalized("NFC", "NFD"),
    "title case": str.title,
    "trimmed": str.strip,
    "extended": lambda owner: owner + "x",
}


@dataclass(frozen=True)
class CallerPick:
    """Who calls cancel: the deferral's own owner, a near miss of it, or anyone else."""

    kind: str


#: The near-miss owners stored as they are: NFC and NFD spellings of one name (a
#: normalizing target changes them), surrounding blanks (a trimming one does), a prefix
#: and a case variant of another owner, a character beyond the BMP, a long name.
#: The two spellings of josé come early and twice: only they have a near miss in the other
#: normalization form.
OWNER_NAMES = ("alice", "jos\u00e9", "bob", "jose\u0301", "carol", "Alice", "jos\u00e9", "al",
               "jose\u0301", " dave ", "\U0001f986", "o" * 300)
#: Owners and callers that are not owners: empty, and wrong types.
NOT_OWNER_FORMS: dict[str, Json] = {"empty": "", "null": None, "int": 7, "float": 1.0, "true": True,
                                    "list": ["alice"], "object": {"name": "alice"}}
NOT_OWNERS = tuple(NOT_OWNER_FORMS.values())

NOT_INTS = (True, False, 1.5, "3", None)
OUT_OF_INT64 = (INT64_MAX + 1, INT64_MIN - 1)
#: Invalid integer arguments by kind (DR-08).
REFUSED_INTS: dict[str, Json] = {"negative": -1, "int64_min": INT64_MIN, "past_int64": INT64_MAX + 1,
                                 "fraction": 1.5}
#: An argument's invalid values by name, each sent with the op's other arguments valid
#: (DR-08): a schedule's owner, delay or ttl, a listing's limit, a claim's or an expire's now.
REFUSED_ARGUMENTS: dict[str, tuple[str, Json]] = {
    **{f"owner_{form}": ("owner", value) for form, value in NOT_OWNER_FORMS.items()},
    **{f"{name}_{kind}": (name, value) for name in ("delay", "ttl", "limit", "now")
       for kind, value in REFUSED_INTS.items()},
}
#: The first integer a double cannot hold: a parser reading every number as one loses it.
DOUBLE_EDGE = 2**53 + 1

#: Caps: 3 (shrinks there), the smallest, small ones, and caps no int32 holds.
CAPS = (3, 1, 3, 2, 1, 5, 64, 2**31, INT64_MAX)
#: The ops a misread instant is sent with.
MISREAD_OPS = ("claimable", "schedule", "claim", "expire", "expirable")
#: A deep run's cap of exactly what its opening schedules: the book is full when the
#: first drawn step comes, so a consume counted twice lets one schedule too many through.
AT_THE_FILL = "at the fill"
#: Deep runs fill the book, so their cap is large (or exactly the fill); the smallest still
#: holds the whole tour (TOUR_OPEN open, then its inserts).
DEEP_CAPS: tuple[int | str, ...] = (2500, 2**31, INT64_MAX, AT_THE_FILL)
#: How often a deferral is in a depth regime, for the coverage report (spec/duebook.md).
MANY_IDS, MANY_OPEN, INDEX_RUN, COMPACT_FLOOR = 256, 32, 1024, 64
#: The tour schedules short-lived deferrals (each window TOUR_WINDOW long) until TOUR_OPEN
#: are open: two full runs of the implementation's index (DR-04), so that inserts split
#: full runs with runs on both sides, the last run among them. Then TOUR_INSERTS inserts
#: all over the built index, listed after every TOUR_BATCH: each listing indexes one
#: batch, so later batches land below keys that earlier ones moved.
TOUR_OPEN, TOUR_WINDOW, TOUR_INSERTS, TOUR_BATCH = 2 * INDEX_RUN, 3, 61, 10
#: Deferrals the tour opens besides those: its probes of the index and the one that never expires.
TOUR_EXTRA = 8
#: The listings the tour takes, and its keeper's claim: each skipped when left out of the
#: campaign (the tour is an opening). Named here rather than at the calls, since
#: duespec.campaigns.scope counts an op the opening names as one every run takes.
LISTING_OPS = ("claimable", "expirable")
KEEPER_CLAIM = "claim"
#: How the tour's owners withdraw their deferrals (the opening's, its own first).
OWNER_CANCEL = "cancel"
#: How `an_old_deferral_outlives_many` asks for each id it has just cancelled.
PROBE_OPS = ("expire", "get", "claim", "cancel")
#: Later ids an old deferral outlives in `an_old_deferral_outlives_many`: enough that the
#: Book's compaction leaves it below its id window (a "far" deferral).
OUTLIVED = 80
#: Deferrals one fill may schedule (times `--depth`): past the implementation's index run
#: of 1024 rows at the top, so the default campaign reaches its split; that one rarely,
#: as every later step of its run compares a state of over a thousand entries. The first
#: is 1 because Hypothesis shrinks a sampled value towards the first: a counterexample
#: that does not need a deep book shrinks its fills to one schedule each.
FILL_SIZES = (1, 12, 40, 150, 300, 12, 40, 150, 300, 1100)
DRAIN_SIZES = (10, 100, 1000)
#: Scattered fills take their due times modulo this prime: all over the index, and past
#: SCATTER deferrals, several at each instant (ties broken by id all through the index).
SCATTER = 97
#: Orders in which a fill's due times arrive: the index is inserted at its end, at its
#: front, at one key (the book's next due instant), or all over. Every order makes ties
#: (two at each instant, all at one, several past SCATTER): deferrals scheduled in bursts
#: share a due_at, and the index must break each tie by id wherever it falls.
FILL_PATTERNS = ("ascending", "descending", "same instant", "scattered")
#: A run is deep when its draw from range(DEEP_ONE_IN) reaches DEEP_THRESHOLD: about half
#: the runs. Hypothesis keeps a run's opening in the half dozen runs it derives from it
#: (it varies their steps), so 200 runs have only about 30 openings of their own; at one
#: deep run in five the first deep opening came after run 60 for some seeds (one in three:
#: after run 35), at one in two it comes within the first ten runs (seeds 0-4, measured).
DEEP_ONE_IN, DEEP_THRESHOLD = 2, 1

#: Every value the duebook campaign sends, by argument: what a target author must answer.
VALUE_SPACE: dict[str, str] = {
    "config.max_open": f"{sorted(set(CAPS))} (deep runs: {list(DEEP_CAPS)}: as many as the opening schedules)",
    "owner": f"{list(OWNER_NAMES)}; invalid: {list(NOT_OWNERS)}",
    "caller": "the deferral's owner; a near miss of it (" + ", ".join(NEAR_MISSES)
              + f"); another owner; invalid: {list(NOT_OWNERS)}",
    "delay": "0, 1, 2, 3, 5, 8; int64 max, the largest that fits at now, one past it; "
             f"-1, {OUT_OF_INT64}; {', '.join(DISGUISES)} forms of a valid delay",
    "ttl": "0, 1, 2, 50, 1000; the largest that fits after due_at, one past it; as delay",
    "id": "an open id (newest, oldest, next due, next to expire, the clock's focus); a "
          "consumed id; the next id; 0, -1, int64 max, int64 min, out of int64, 1.5; an "
          f"open id in the {', '.join(DISGUISES)} forms",
    "limit": f"0-5; int64 max, -1, {OUT_OF_INT64}; {', '.join(DISGUISES)} forms of 2",
    "now": "the clock: 0 up, each window edge (due_at - 1, due_at, expires_at - 1, "
           f"expires_at), back one tick, to 0, to 2^31, to 2^53 + 1, to int64 max; for one "
           f"op: -1, int64 min, 2^63, or the clock's value in the {', '.join(DISGUISES)} forms, sent "
           f"with one of {', '.join(MISREAD_OPS)} in the same step",
    "fills": f"deep runs (about half; the opening fills, and may drain): fills of {sorted(set(FILL_SIZES))} x --depth "
             f"deferrals ({', '.join(FILL_PATTERNS)}), drains of {list(DRAIN_SIZES)}; the largest opening "
             "fill tours the index instead (the opening's deferrals cancelled by their owners, then deferrals "
             f"due two instants apart with windows {TOUR_WINDOW} long until {TOUR_OPEN} are open, the first "
             f"{INDEX_RUN} listed before one more is scheduled, the first cancelled and the expirable listed "
             f"with a limit of {INDEX_RUN - 1} past the first {INDEX_RUN + 1} windows, the book listed whole at "
             "three instants, the "
             f"expirable with a limit of {INDEX_RUN + 1}, one at a time at the second-to-last key (twice), in the "
             "gap after the middle key and at it, before and at the three-quarter key (one with a ttl of 1, "
             "listed with limits 3, 1 and none) and at now, each listed where it lands, one that never "
             "expires due at the median due_at "
             "and the book listed once every window has closed, the ones claimable at the latest due_at "
             f"claimed and the book listed past their windows, {TOUR_INSERTS} inserts all over the index (every "
             f"{TOUR_BATCH}th after all the others) with the claimable at the latest due_at listed after every "
             f"{TOUR_BATCH}, the book listed again)",
    "old deferrals": f"one deferral kept open while {OUTLIVED} later ids are scheduled and cancelled, "
                     "the book listed over it, then claimed or expired in its window",
    "malformation matrix": "every malformed field of every op (docs/protocol.md section 5), each "
                           "form in turn, the rest of the request valid: MATRIX_CELLS (DR-09)",
    "malformed requests": "one per run's opening: an unknown or non-string op, an argument missing, "
                          "extra or misnamed, args that are no object",
}

OWNER_POOL = st.sampled_from(OWNER_NAMES)
OWNERS = mostly(OWNER_POOL, st.sampled_from(NOT_OWNERS), one_in=10)
#: Callers: the owner a fifth of the time, a near miss of it (each kind 1 in 14) most of
#: the time, anyone or garbage the rest.
CALLER_PICKS = st.sampled_from(
    ("owner",) * 6 + tuple(NEAR_MISSES) * 2 + ("anyone", "anyone", "invalid", "invalid"))
#: Delays and ttls, uniformly: 0 (due now; for a ttl, never expires) as often as any
#: other, and some windows long enough for several deferrals to be claimable at once.
DELAYS = st.sampled_from((0, 1, 2, 3, 5, 8))
TTLS = st.sampled_from((0, 1, 2, 50, 1000))
#: The integral float and the numeric string, what lenient parsers let through, most often.
DISGUISE_FORMS = st.sampled_from(("float", "string", *DISGUISES))
#: Durations past int64, exactly at its edge, and not durations at all.
ODD_DURATIONS = st.one_of(st.builds(Headroom, st.sampled_from((-1, 0, 1))),
                          st.sampled_from((INT64_MAX, -1, *OUT_OF_INT64, *NOT_INTS)),
                          st.builds(Disguised, DISGUISE_FORMS, st.sampled_from((0, 1, 5)).map(int)))
LIMITS = mostly(st.integers(0, 5), st.one_of(
    st.sampled_from((INT64_MAX, -1, *OUT_OF_INT64, *NOT_INTS)),
    st.builds(Disguised, DISGUISE_FORMS, st.just(2))), one_in=8)
STRANGER_IDS = st.one_of(
    st.builds(ConsumedId, st.integers(0, 3)),
    st.just(UpcomingId()),
    # True beside the int64 edges: Python's own trap, since True == 1 passes isinstance(int).
    st.sampled_from((0, -1, INT64_MAX, INT64_MIN, True)),
    st.sampled_from((*NOT_INTS, *OUT_OF_INT64)),
)
#: An open id in a wrong type: as likely as any other stranger, since only an id that
#: names an open deferral shows a target that reads `1.0` as the id 1.
DISGUISED_OPEN_IDS = st.builds(DisguisedOpenId, st.sampled_from(ROLES), DISGUISE_FORMS)

#: The four instants where a deferral's window opens or closes.
EDGES = ("due_at - 1", "due_at", "expires_at - 1", "expires_at")
#: Clock jumps within int64 time; the far ones rarely, as the end of time leaves every
#: deferral already scheduled expired and every later one unable to expire.
JUMPS = mostly(st.sampled_from(("to zero", "one tick back")),
               st.sampled_from(("to int64 max", "to 2^31", "to 2^53 + 1")), one_in=6)
JUMP_TO = {"to zero": 0, "to int64 max": INT64_MAX, "to 2^31": 2**31, "to 2^53 + 1": DOUBLE_EDGE}
#: Instants that are not valid times, passed to a single op: out of range, or the clock's
#: own value in a wrong type.
MISREADS = st.sampled_from((-1, INT64_MAX + 1, INT64_MIN, Disguised("float"), Disguised("string"),
                            *(Disguised(form) for form in DISGUISES)))


def most_claimable_instant(open_deferrals: list[dict[str, Json]]) -> int:
    """The earliest due_at at which the most open deferrals are claimable, in one sweep
    over the sorted windows (a deep run holds hundreds: counting at each instant would
    cost the square of that on every wake)."""
    dues = sorted(d["due_at"] for d in open_deferrals)
    closes = sorted(d["expires_at"] for d in open_deferrals if d["expires_at"])
    best, best_count, closed = dues[0], 0, 0
    for opened, now in enumerate(dues, start=1):
        if opened < len(dues) and dues[opened] == now:
            continue  # count an instant once all that open at it have
        closed = bisect.bisect_right(closes, now, lo=closed)
        if opened - closed > best_count:
            best, best_count = now, opened - closed
    return best


#: Requests only JSON can send (D-27): an unknown or non-string op, an argument missing,
#: one extra, one misnamed, args that are no object. (The spec's step properties read args
#: as an object: a request whose args are none is judged by its response and the state.)
MALFORMED_REQUESTS: tuple[tuple[Json, Json], ...] = (
    ("reschedule", {"id": 1}), (7, {"id": 1}), ("schedule", {"owner": "alice", "delay": 0}),
    ("claim", {"id": 1, "now": 0}), ("cancel", {"id": 1, "owner": "alice"}), ("claimable", {}),
    ("get", [1]), ("claim", None),
)


# --- the malformation matrix (docs/protocol.md section 5, DR-09) ---

#: An integer field's malformed forms, each a function of the valid value it replaces:
#: out of range, a fraction, or the value in a wrong type (DISGUISES).
TIME_FORMS: dict[str, Callable[[int], Json]] = {
    "negative": lambda value: -1, "int64_min": lambda value: INT64_MIN,
    "past_int64": lambda value: INT64_MAX + 1, "fraction": lambda value: value + 0.5, **DISGUISES}
#: An id may be any int64 (a negative one is simply not_found): only what is no int64 is malformed.
ID_FORMS: dict[str, Callable[[int], Json]] = {
    "below_int64": lambda value: INT64_MIN - 1, "past_int64": lambda value: INT64_MAX + 1,
    "fraction": lambda value: value + 0.5, **DISGUISES}
OWNER_FORMS: dict[str, Callable[[str], Json]] = {
    form: (lambda value, bad=bad: bad) for form, bad in NOT_OWNER_FORMS.items()}
#: `args` that are no object (D-27), each built from the valid args it replaces.
ARGS_FORMS: dict[str, Callable[[dict[str, Json]], Json]] = {
    "null": lambda args: None, "list": lambda args: list(args.values()),
    "string": lambda args: "args", "number": lambda args: 1}
#: The malformed forms of each argument, by the argument's name.
ARGUMENT_FORMS: dict[str, dict[str, Callable[[Any], Json]]] = {
    "owner": OWNER_FORMS, "caller": OWNER_FORMS, "id": ID_FORMS,
    "delay": TIME_FORMS, "ttl": TIME_FORMS, "limit": TIME_FORMS}


def key_forms(op: str) -> tuple[str, ...]:
    """`args` missing one of the op's argument names, or holding a key it does not take
    (named `now`, the one a careless target might read from args)."""
    return (*(f"missing_{name}" for name in OPERATIONS[op]), "extra_now")


def matrix_fields(op: str) -> dict[str, tuple[str, ...]]:
    """Each field of a request to `op` that the contract says can be malformed, with its
    malformed forms: the op's arguments, `now` (sent to every op, even those that do not
    read it: Cancel and Get must answer as usual), `args` as a whole and its keys."""
    return {**{name: tuple(ARGUMENT_FORMS[name]) for name in OPERATIONS[op]},
            "now": tuple(TIME_FORMS), "args": tuple(ARGS_FORMS), "keys": key_forms(op)}


#: Every (op, field) row of the malformation matrix; a row's cells are its forms.
MATRIX_ROWS: tuple[tuple[str, str], ...] = tuple(
    (op, name) for op in OPERATIONS for name in matrix_fields(op))
#: The rows the machine sends in one go: a field of every op that has it (an owner and a
#: caller are one field; so are `now`, `args` and the keys of every op). A few groups, not
#: the 31 rows, are drawn: a default campaign draws each group dozens of times, where some
#: of 31 rows went undrawn (seed 0: 27 cells of 220 never sent).
MATRIX_GROUPS: dict[str, tuple[tuple[str, str], ...]] = {}
for _row in MATRIX_ROWS:
    MATRIX_GROUPS.setdefault("owner" if _row[1] == "caller" else _row[1], ())
    MATRIX_GROUPS["owner" if _row[1] == "caller" else _row[1]] += (_row,)
del _row
#: Every cell: (op, field, form).
MATRIX_CELLS: tuple[tuple[str, str, str], ...] = tuple(
    (op, name, form) for op, name in MATRIX_ROWS for form in matrix_fields(op)[name])


def malformed(op: str, field: str, form: str, args: dict[str, Json], now: int) -> tuple[Json, Json]:
    """(args, now) of a valid request to `op` with one field in one malformed form."""
    if field == "now":
        return args, TIME_FORMS[form](now)
    if field == "args":
        return ARGS_FORMS[form](args), now
    if field == "keys":
        if form == "extra_now":
            return {**args, "now": now}, now
        return {key: value for key, value in args.items() if key != form.removeprefix("missing_")}, now
    return {**args, field: ARGUMENT_FORMS[field][form](args[field])}, now


def valid_args(op: str, id: int, owner: str) -> dict[str, Json]:
    """Arguments of a request to `op` that only its malformed field can make fail: an open
    deferral's id (with its owner as the caller), a schedule that fits, a small limit."""
    values: dict[str, Json] = {"owner": OWNER_NAMES[0], "delay": 1, "ttl": 50, "id": id,
                               "caller": owner, "limit": 5}
    return {name: values[name] for name in OPERATIONS[op]}


#: The grid the coverage report shows (System.matrix).
MATRIX = MalformationMatrix("DR-09", MATRIX_CELLS, unsent={
    "an unknown op (`reschedule`, a non-string op)": "an op no row has: the opening of every run "
    "sends one of the malformed requests in MALFORMED_REQUESTS (D-27.unknown_op)"})

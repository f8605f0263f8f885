"""duebook for the harness: the model and the implementation as JSON targets, and the
lockstep machine that drives them through the whole protocol of docs/operations.md."""

from __future__ import annotations

import bisect
import marshal
import unicodedata
from dataclasses import dataclass
from operator import attrgetter, is_, itemgetter
from typing import Any, Callable

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, initialize, multiple, precondition, rule

from duespec.impl import duebook as impl
from duespec.impl import duebook_requests as impl_requests
from duespec.campaigns.lockstep import LockstepMachine
from duespec.coverage import reached
from duespec.model import duebook as model
from duespec.spec import duebook_invariants as spec
from duespec.systems import System
from duespec.targets.interface import PROSE_KEYS, Json

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

#: Argument names of each op, exactly as docs/operations.md lists them.
OPERATIONS: dict[str, tuple[str, ...]] = model.ARGUMENTS


def max_open_of(config: dict[str, Json]) -> Json:
    if set(config) != {"max_open"}:
        raise ValueError(f"duebook config is {{'max_open': N}}, got {config!r}")
    return config["max_open"]


class ModelTarget:
    """The reference model behind the JSON contract."""

    def __init__(self) -> None:
        self.book: model.Book | None = None
        #: The ids and the very Deferral objects (in the dict's order) the last observe()
        #: saw, and the rows it gave for them.
        self._seen: tuple[list[int], list[model.Deferral]] | None = None
        self._rows: list[dict[str, Json]] = []

    def reset(self, config: dict[str, Json]) -> None:
        book, code = model.new_book(max_open_of(config))
        if book is None:
            raise ValueError(f"duebook config {config!r} rejected by the model: {code}")
        self.book = book
        self._seen = None

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        assert self.book is not None, "reset() first"
        return model.step(self.book, op, args, now)

    def observe(self) -> dict[str, Json]:
        """model.observe, whose rows are reused while the book holds the very same
        Deferral objects under the same ids: a campaign observes after every rule, many
        rules leave a deep book as it was, and rebuilding its thousands of rows each time
        cost 6% of a campaign. Deferrals are frozen, so the same objects are the same
        values. Each call returns fresh containers, as model.observe does."""
        book = self.book
        assert book is not None, "reset() first"
        ids, deferrals, seen = list(book.open), list(book.open.values()), self._seen
        if seen is None or seen[0] != ids or not all(map(is_, seen[1], deferrals)):
            self._seen, self._rows = (ids, deferrals), model.observe(book)["open"]
        return {"max_open": book.max_open, "next_id": book.next_id, "open": list(self._rows)}

    def close(self) -> None:
        self.book = None


_by_id = itemgetter("id")


def impl_deferral_json(d: Any) -> dict[str, Json]:
    return {"id": d.id, "owner": d.owner, "due_at": d.due_at, "expires_at": d.expires_at}


#: What a careless caller does to a Deferral it was handed (seed, consumer contract 3).
CALLER_EDITS: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("id", lambda v: v + 1000),
    ("owner", lambda v: f"{v}~edited"),
    ("due_at", lambda v: v - 1),
    ("expires_at", lambda v: v - 1),
)


def edit_like_a_caller(value: Any) -> None:
    """Edit every returned Deferral (and a returned list) the plain way a caller could.

    The seed promises values, never pointers into the Book; if the implementation hands
    out a live handle, these edits reach its storage and the next observe() diverges
    from the model's. A frozen value refuses the edit, which is the correct answer."""
    deferrals = value if isinstance(value, list) else [value]
    for deferral in deferrals:
        if type(deferral) is impl.Deferral:
            continue  # frozen, with no __dict__: no edit can land
        for field, edit in CALLER_EDITS:
            try:
                setattr(deferral, field, edit(getattr(deferral, field)))
            except (AttributeError, TypeError):
                pass
    if isinstance(value, list):
        value.clear()


def _response(value: Any) -> dict[str, Json]:
    """A Book's answer as the JSON response, the caller's edits made after it is read."""
    if type(value) is impl.Deferral:
        # Frozen: no edit of a caller's can land (edit_like_a_caller).
        return {"ok": {"id": value.id, "owner": value.owner, "due_at": value.due_at,
                       "expires_at": value.expires_at}}
    if isinstance(value, list):
        response = {"ok": [impl_deferral_json(d) for d in value]}
    else:
        response = {"ok": impl_deferral_json(value)}
    edit_like_a_caller(value)
    return response


#: The ops whose success changes the state: True adds the deferral returned, False removes it.
_CHANGES = {"schedule": True, "claim": False, "cancel": False, "expire": False}


#: The keys an error response may have; only "error" is compared (PROSE_KEYS).
_ERROR_KEYS = frozenset({"error"} | PROSE_KEYS)


_deferral_fields = itemgetter("id", "owner", "due_at", "expires_at")
_impl_fields = attrgetter("id", "owner", "due_at", "expires_at")


def _rows_are(rows: Json, deferrals: list[Any]) -> bool:
    """Whether the JSON value `rows` is exactly the list `deferrals` as a response or a
    state shows it, checked a pass at a time in C: each row has the four fields and no
    other key, and the rows' fields marshal to the same bytes as the Deferrals' (marshal
    writes int, bool, float and str each its own way and refuses subclasses)."""
    if type(rows) is not list or len(rows) != len(deferrals):
        return False
    if not rows:
        return True
    try:
        recorded = list(map(_deferral_fields, rows))
    except (KeyError, TypeError):  # a row without one of the fields, or not an object
        return False
    if set(map(len, rows)) != {4} or set(map(type, deferrals)) != {impl.Deferral}:
        return False
    try:
        return marshal.dumps(recorded, 2) == marshal.dumps(list(map(_impl_fields, deferrals)), 2)
    except ValueError:  # a subclass of int or str among the fields: not a JSON value
        return False


class ImplTarget:
    """The production implementation behind the JSON contract, poked like a real caller.

    `book_class` may be any class with impl.Book's API (a variant, a subclass under test)."""

    #: Every answer is built here (`_response`), so the boundary need not walk it for
    #: values JSON cannot hold (duespec.targets.resolve.WatchedTarget): a listing of
    #: thousands of rows was walked row by row, a sixth of a campaign's CPU.
    builds_its_answers = True

    def __init__(self, book_class: type[impl.Book] = impl.Book) -> None:
        self.book_class = book_class
        self.book: impl.Book | None = None
        #: The rows state_is last found equal to the Book's deferrals, and those deferrals.
        self._vouched: tuple[tuple[Any, ...], tuple[Any, ...]] = ((), ())

    def reset(self, config: dict[str, Json]) -> None:
        self.book = self.book_class(max_open_of(config))
        self._vouched = ((), ())

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        assert self.book is not None, "reset() first"
        try:
            value = impl_requests.call(self.book, op, args, now)
        except impl.DuebookError as error:
            return {"error": error.code, "message": str(error)}
        return _response(value)

    def recorded_step_checker(self, implied: ImpliedState | None) -> Callable[[dict[str, Json]], Json]:
        """For replay: a function that takes a recorded step (one with a `result`) on this
        Book and returns None when the response is the recorded result exactly (as
        same_json has it, a message beside an error aside), having applied the step to
        `implied`; else the response, as step() gives it, for the general comparison
        (which applies it). The usual request calls the Book's method directly and the
        usual answer is compared field by field, with no response built."""
        book = self.book
        assert book is not None, "reset() first"
        opened = implied.open if implied is not None else None
        calls, call, failed, deferral = impl_requests.CALLS, impl_requests.call, impl.DuebookError, impl.Deferral

        def check(step: dict[str, Json]) -> Json:
            op, args, now, recorded = step["op"], step["args"], step["now"], step["result"]
            try:
                known = calls.get(op) if type(op) is str else None  # an op may be any JSON
                if known is not None and type(args) is dict and args.keys() == known[0]:
                    value = known[1](book, args, now)  # what call() does with the usual request
                else:
                    value = call(book, op, args, now)
            except failed as error:
                code = error.code
                if (type(code) is str and recorded.get("error") == code and type(recorded["error"]) is str
                        and recorded.keys() <= _ERROR_KEYS):
                    return None  # the same error; the message is for people
                return {"error": code, "message": str(error)}
            if type(value) is deferral:
                id, owner, due_at, expires_at = value.id, value.owner, value.due_at, value.expires_at
                try:  # the response's row exactly (same_json: a bool or a float equals an int in Python)
                    agrees = (len(recorded) == 1 and type(ok := recorded["ok"]) is dict and len(ok) == 4
                              and type(id) is int and type(field := ok["id"]) is int and field == id
                              and type(owner) is str and type(field := ok["owner"]) is str and field == owner
                              and type(due_at) is int and type(field := ok["due_at"]) is int
                              and field == due_at and type(expires_at) is int
                              and type(field := ok["expires_at"]) is int and field == expires_at)
                except KeyError:
                    agrees = False
                if agrees:
                    if opened is not None:  # ImpliedState.apply, inline
                        changes = _CHANGES.get(op)
                        if changes:
                            opened[id] = ok
                            implied.next_id = id + 1  # type: ignore[union-attr]
                        elif changes is not None:
                            opened.pop(id, None)
                    return None
            elif type(value) is list and len(recorded) == 1 and _rows_are(recorded.get("ok"), value):
                value.clear()  # what edit_like_a_caller does to a list of Deferrals
                return None
            return _response(value)

        return check

    def state_is(self, want: Json) -> bool:
        """Whether observe() would give `want` exactly (same_json), told without building
        it: replay's checkpoints and a campaign's every rule compare the whole state this
        way. True only if it would; False also where the Book lists its deferrals out of
        id order, which observe() would have sorted, so the caller observes and compares.

        Rows that are the very objects last found equal to the very same Deferrals agree
        again: Deferrals are frozen, and the rows of a state are never edited (the model's
        adapter reuses them too), so a deep book is not compared row by row after every
        rule that left it as it was."""
        book = self.book
        assert book is not None, "reset() first"
        max_open, next_id = book.max_open, book.next_id
        try:
            if not (type(want) is dict and len(want) == 3
                    and type(max_open) is int and type(value := want["max_open"]) is int and value == max_open
                    and type(next_id) is int and type(value := want["next_id"]) is int and value == next_id):
                return False
            rows = want["open"]
        except KeyError:
            return False
        deferrals = list(book.open_deferrals())
        rows_then, deferrals_then = self._vouched
        if (type(rows) is list and len(rows) == len(rows_then) == len(deferrals) == len(deferrals_then)
                and all(map(is_, rows, rows_then)) and all(map(is_, deferrals, deferrals_then))):
            return True
        if not _rows_are(rows, deferrals):
            return False
        self._vouched = (tuple(rows), tuple(deferrals))
        return True

    def observe(self) -> dict[str, Json]:
        book = self.book
        assert book is not None, "reset() first"
        deferrals = list(book.open_deferrals())
        rows = [{"id": d.id, "owner": d.owner, "due_at": d.due_at, "expires_at": d.expires_at}
                for d in deferrals]
        return {"max_open": book.max_open, "next_id": book.next_id, "open": sorted(rows, key=_by_id)}

    def close(self) -> None:
        self.book = None


# --- The value space: every value the campaign sends, in one place (docs/operations.md,
# "What duespec sends"). Ordinary values most of the time, edges and garbage some of it. ---

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


class DuebookMachine(LockstepMachine):
    """Every duebook op, at a clock biased to the edges of each deferral's window.

    The clock may stay, advance or jump back: duebook takes `now` as an argument and asks
    nothing of it, so a Book must answer any order of instants alike. It stays a valid
    time; an invalid instant is a one-off misread passed to the next op only, so it does
    not silently turn a whole run into `invalid` answers. Ids are mostly open ones, else
    scheduled (often since consumed), upcoming, unknown and wrong-typed ones. Every run
    starts with its own cap and one valid schedule: no id is ever drawn from an empty
    bundle, and runs whose rule subset leaves schedule out still have a deferral to work on.

    Three rules move the clock and act in one step (at a window edge; a keeper and a
    janitor waking when their listings are longest): the mutation tests showed that
    leaving such pairs to chance let edge and ordering bugs slip through some seeds.
    About half the runs are deep: their opening fills the book with up to a thousand
    deferrals (and may drain it) before the first drawn step, so bugs that need many ids
    or many open entries are reached, and every later step acts on a deep book."""

    system = "duebook"
    ids = Bundle("ids")
    #: Mostly an open deferral; else any scheduled id, or a stranger.
    ID_PICKS = mostly(st.builds(OpenId, st.sampled_from(ROLES)),
                      st.one_of(ids, STRANGER_IDS, DISGUISED_OPEN_IDS, DISGUISED_OPEN_IDS), one_in=3)

    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        #: An invalid instant the next op is given instead of `now`, once.
        self.misread: int | Disguised | None = None
        self.next_id = 1
        self.consumed: list[int] = []
        #: The id whose window edge the clock last reached.
        self.focus: int | None = None
        self.deep = False
        self.most_open = 0
        #: Consumed slots since the implementation last compacted (its rule, simulated).
        self.dead_slots = 0
        self.state = self.oracle_state()
        #: (state before, step, state after) of the latest op.
        self.transition: tuple[dict[str, Json], dict[str, Json], dict[str, Json]] | None = None
        #: The state check_properties last judged (the very object).
        self.checked_state: dict[str, Json] | None = None

    def act(self, op: str, args: dict[str, Json]) -> dict[str, Json]:
        now: Json = self.now
        if isinstance(self.misread, Disguised):
            now = self.misread.of(self.now)
        elif self.misread is not None:
            now = self.misread
        self.misread = None
        before = self.state
        response = self.call(op, args, now)
        self.observed(one_step=True)
        self.transition = (before, self.steps[-1], self.state)
        return response

    def observed(self, one_step: bool) -> None:
        """The oracle's state after a step (or after a fill or drain), and the depth regimes
        it is in (spec/duebook.md). One step that leaves one deferral fewer open consumed it:
        a slot the implementation leaves dead until it compacts (drains count their own)."""
        consumed = one_step and len(self.state["open"]) - 1 == len(self.oracle_state()["open"])
        self.state = self.oracle_state()
        open_count = len(self.state["open"])
        self.most_open = max(self.most_open, open_count)
        if consumed:
            self.dead_slots += 1
            if self.dead_slots > open_count and self.dead_slots > COMPACT_FLOOR:
                reached("DR-05.compaction")
                self.dead_slots = 0
        if open_count > 2 * INDEX_RUN:
            reached("DR-04.inner_run_split")
        if open_count > INDEX_RUN:
            reached("DR-04.index_run_split")
        elif open_count > MANY_OPEN:
            reached("DR-03.dozens_open")
        if self.state["next_id"] > MANY_IDS + 1:
            reached("DR-02.hundreds_of_ids")

    def depth_reached(self) -> dict[str, int]:
        return {"ids allocated": self.next_id - 1, "open entries reached": self.most_open}

    def in_role(self, role: str) -> dict[str, Json] | None:
        open_deferrals = self.state["open"]
        if not open_deferrals:
            return None
        expiring = [d for d in open_deferrals if d["expires_at"]] or open_deferrals
        focused = [d for d in open_deferrals if d["id"] == self.focus] or open_deferrals
        return {
            "newest": lambda: open_deferrals[-1],
            "oldest": lambda: open_deferrals[0],
            "next due": lambda: min(open_deferrals, key=lambda d: (d["due_at"], d["id"])),
            "next to expire": lambda: min(expiring, key=lambda d: (d["expires_at"], d["id"])),
            "clock's focus": lambda: focused[-1],
        }[role]()

    def an_id(self, pick: Any) -> Json:
        if isinstance(pick, OpenId):
            deferral = self.in_role(pick.role)
            return self.next_id if deferral is None else deferral["id"]
        if isinstance(pick, DisguisedOpenId):
            reached(f"DR-07.{pick.form}")
            deferral = self.in_role(pick.role)
            return DISGUISES[pick.form](self.next_id if deferral is None else deferral["id"])
        if isinstance(pick, ConsumedId):
            # Index 0 is the newest, so a shrunk run can drop whatever came before it.
            return self.consumed[-1 - pick.index % len(self.consumed)] if self.consumed else self.next_id
        if isinstance(pick, UpcomingId):
            return self.next_id
        return pick

    def a_caller(self, id: Json, pick: CallerPick, anyone: Json, invalid: Json) -> Json:
        owner = next((d["owner"] for d in self.state["open"] if d["id"] == id and type(id) is int),
                     None) if pick.kind in NEAR_MISSES or pick.kind == "owner" else None
        if pick.kind == "invalid":
            return invalid
        if owner is None:
            return anyone
        if pick.kind in NEAR_MISSES:
            reached(f"DR-06.{pick.kind.replace(' ', '_')}")
            return NEAR_MISSES[pick.kind](owner)
        return owner

    def consume(self, op: str, args: dict[str, Json]) -> None:
        response = self.act(op, args)
        if "ok" in response:
            self.consumed.append(response["ok"]["id"])

    def has_open(self) -> bool:
        return bool(self.state["open"])

    def few_open(self) -> bool:
        """Where the rules that send several invalid requests in a row run: each step
        compares whole states, so in a book of thousands they would cost thousands each,
        and no invalid value's answer depends on the book's size."""
        return len(self.state["open"]) <= MANY_OPEN

    def some_open_but_few(self) -> bool:
        return self.has_open() and self.few_open()

    def is_deep(self) -> bool:
        return self.deep

    # --- the protocol ---

    @initialize(target=ids, cap=st.sampled_from(CAPS), deep=st.integers(0, DEEP_ONE_IN - 1),
                deep_cap=st.sampled_from(DEEP_CAPS), opening=st.lists(
        st.tuples(OWNER_POOL, DELAYS,
                  mostly(TTLS, st.builds(Headroom, st.sampled_from((-1, 0))), one_in=6)),
        min_size=1, max_size=3),
        fill_size=st.sampled_from(FILL_SIZES), fill_pattern=st.sampled_from(FILL_PATTERNS))
    def opening_schedules(self, cap: int, deep: int, deep_cap: int,
                          opening: list[tuple[str, int, int | Headroom]], fill_size: int,
                          fill_pattern: str) -> Any:
        """This run's cap (a large one when the run is deep), then one to three valid
        schedules at time 0: the ids bundle is never empty, every run has deferrals to work
        on whatever rules it leaves out, and listings can hold several at once. A ttl may
        reach int64 max, so a shrunk counterexample needs no later schedule to get to the
        end of time. A deep run then fills the book before its first drawn step: every
        later step of the run acts on a deep book, and a short run (as Hypothesis's first
        runs are) is as deep as a long one. (It schedules and lists, and the tour claims, only
        the ops the campaign keeps: an opening that drained would keep claim, cancel and
        expire in a campaign told to leave them out.)"""
        self.deep = deep >= DEEP_THRESHOLD and self.depth > 0
        # The largest opening fill tours the index instead (as many schedules, and listings).
        tour = self.deep and fill_size == max(FILL_SIZES)
        if deep_cap == AT_THE_FILL:
            deep_cap = len(opening) + (sum(self.tour_size(len(opening))) + TOUR_EXTRA if tour
                                       else self.fill_count(fill_size, len(opening)))
        max_open = deep_cap if self.deep else cap
        if max_open != self.config.get("max_open"):
            self.reconfigure({**self.config, "max_open": max_open})
            self.state = self.oracle.observe()
        reached("DR-01.cap_1" if max_open == 1 else "DR-01.cap_beyond_int32" if max_open > 2**31 - 1
                else "DR-01.cap_small")
        scheduled = [self.schedule(owner, delay, ttl) for owner, delay, ttl in opening]
        self.send_a_malformed_request(cap + deep + len(opening))
        if tour:
            self.tour()
        elif self.deep:
            self.fill(fill_size, fill_pattern)
        return multiple(*(id for id in scheduled if type(id) is int))

    def tour_size(self, already_open: int) -> tuple[int, int]:
        """The tour's deferrals, to TOUR_OPEN open, and its inserts (times `--depth`)."""
        return max(1, round(TOUR_OPEN * self.depth) - already_open), max(1, round(TOUR_INSERTS * self.depth))

    def tour(self) -> None:
        """Tour the implementation's index: the opening's deferrals withdrawn, then
        short-lived deferrals (every window TOUR_WINDOW long, due two instants apart, so
        whole runs close before later rows open and there is room between any two) until
        two index runs are full, the first run indexed on its own and one more appended to
        it; the whole book listed where the most are claimable, at the median expiry and
        at the latest due_at; one at a time at the places of the index a run's bookkeeping
        changes (`probe_the_index`); one that never expires lands mid-book; the keeper
        claims what is claimable at the latest due_at and the book is listed over those
        consumed rows once their windows have closed; then inserts due all over the built
        index, the keeper listing after every TOUR_BATCH (full runs split, first keys and
        bounds move), the whole book listed again. Hypothesis shrinks it away with the fill
        size; the trace minimiser (duespec.campaigns.minimise) drops the steps a failure
        inside it does not need."""
        self.withdraw_the_opening()
        count, inserts = self.tour_size(len(self.oracle_state()["open"]))
        first_run = min(count, INDEX_RUN)
        # The first run full and indexed, then one due after it, listed where it is claimable
        # beside the first run's last: a run of its own after a full one (DR-04.after_a_full_run).
        scheduled = self.tour_rows(0, first_run)
        if scheduled and self.index_pending(self.now) and self.tour_rows(first_run, first_run + 1):
            if self.index_pending(self.now + 1 + 2 * first_run) and first_run == INDEX_RUN:
                reached("DR-04.after_a_full_run")
            # One more row than planned: the first is cancelled, and two full runs stay open.
            self.tour_rows(first_run + 1, count + self.expirable_at_a_run_end(first_run))
        elif scheduled:  # a campaign without claimable: the rest of the rows all the same
            self.tour_rows(first_run, count)
        self.tour_listings()
        self.expirable_across_the_first_run()
        self.probe_the_index()
        self.one_never_expires_mid_book()
        dropped = self.keeper_claims_the_latest()
        latest = max((d["due_at"] for d in self.oracle_state()["open"]), default=self.now)
        claimable, _ = LISTING_OPS
        span = 2 * count
        for n in range(inserts):
            batch_ends = n % TOUR_BATCH == TOUR_BATCH - 1
            # Each batch ends with one due after every other deferral: the end of the index.
            delay = span + n if batch_ends else (n * 1009) % max(span, 1)
            response = self.call("schedule", {"owner": OWNER_NAMES[n % len(OWNER_NAMES)], "delay": delay,
                                              "ttl": TOUR_WINDOW}, self.now)
            if "error" in response:
                break
            self.next_id = response["ok"]["id"] + 1
            if dropped:
                reached("DR-04.insert_after_dropped_rows")
            if batch_ends and claimable not in self.excluded_ops:
                # The keeper looks in: the Book indexes this batch, and every run's bounds are asked.
                self.call(claimable, {"limit": INT64_MAX}, latest)
        if inserts:
            self.tour_listings()
        self.bulk_done()

    def withdraw_the_opening(self) -> None:
        """The opening's owners cancel theirs, and the book is listed past them (claimable
        and expirable) so that their rows leave the indexes: the tour starts from an empty
        index, every key of it the tour's own, none at the instant the tour starts."""
        open_deferrals = self.oracle_state()["open"]
        if not open_deferrals or self.excluded_ops & {OWNER_CANCEL, *LISTING_OPS}:
            return
        for deferral in open_deferrals:
            if "ok" in self.call(OWNER_CANCEL, {"id": deferral["id"], "caller": deferral["owner"]}, self.now):
                self.consumed.append(deferral["id"])
        claimable, expirable = LISTING_OPS
        self.call(claimable, {"limit": INT64_MAX}, max(d["due_at"] for d in open_deferrals))
        self.call(expirable, {"limit": INT64_MAX}, max(d["expires_at"] for d in open_deferrals))

    def tour_rows(self, start: int, stop: int) -> bool:
        """The tour's deferrals number start to stop - 1, due at now + 1 + 2n; whether all were scheduled."""
        for n in range(start, stop):
            response = self.call("schedule", {"owner": OWNER_NAMES[n % len(OWNER_NAMES)], "delay": 1 + 2 * n,
                                              "ttl": TOUR_WINDOW}, self.now)
            if "error" in response:
                return False
            self.next_id = response["ok"]["id"] + 1
        return True

    def index_pending(self, instant: int) -> bool:
        """The claimable at `instant`: the Book indexes what was scheduled since the last
        listing (at the tour's own start nothing is claimable, so it costs no answer).
        Whether it was taken."""
        claimable, _ = LISTING_OPS
        if claimable in self.excluded_ops:
            return False
        self.call(claimable, {"limit": INT64_MAX}, instant)
        return True

    def expirable_at_a_run_end(self, first_run: int) -> int:
        """The owner cancels the tour's first deferral, then the expirable is listed once
        the first run's windows and the one after it have closed, with a limit of the
        first run's open rows: the limit is reached at that run's end, while the index
        still holds the cancelled row (a listing that walks each row to drop such rows
        must stop there too). The claimable at its due_at drops it from the other index.
        1 when it was cancelled, else 0."""
        open_deferrals = self.oracle_state()["open"]
        claimable, expirable = LISTING_OPS
        if len(open_deferrals) != first_run + 1 or self.excluded_ops & {OWNER_CANCEL, claimable, expirable}:
            return 0
        first, after = open_deferrals[0], open_deferrals[-1]
        if "error" in self.call(OWNER_CANCEL, {"id": first["id"], "caller": first["owner"]}, self.now):
            return 0
        self.consumed.append(first["id"])
        self.call(expirable, {"limit": first_run - 1}, after["expires_at"])
        self.call(claimable, {"limit": INT64_MAX}, first["due_at"])
        reached("DR-04.run_end_limit")
        return 1

    def expirable_across_the_first_run(self) -> None:
        """The expirable with a limit one past the first full run, where the second run
        has two rows expired: the limit cuts the second run after its first row."""
        _, expirable = LISTING_OPS
        expiries = sorted(d["expires_at"] for d in self.oracle_state()["open"] if d["expires_at"])
        if expirable not in self.excluded_ops and len(expiries) > INDEX_RUN + 1:
            self.call(expirable, {"limit": INDEX_RUN + 1}, expiries[INDEX_RUN + 1])

    def probe_the_index(self) -> None:
        """One deferral at a time at each place of a two-run index where a run's
        bookkeeping changes, each listed where it lands: at the second-to-last key of the
        full last run (it splits, and the new row goes to the second half), there again
        (now a last run with room, between its last two keys), in the gap after the first
        key of the second run and then at that first key (the run's first key must not
        move), one appended to the run before the last quarter's first key, one short-lived
        at that first key (the bound on its run's earliest expiry must come down), listed
        there with a limit that cuts the run after one row, then as it closes with a limit
        the run before fills and with none; last, one due now, below every key (the first
        run splits with it in the first half, whose bound on the earliest expiry must come
        down: listed as it lands and as it closes)."""
        keys = sorted(d["due_at"] for d in self.oracle_state()["open"])
        claimable, _ = LISTING_OPS
        if len(keys) < 2 * INDEX_RUN or claimable in self.excluded_ops:
            return
        second_half, last_quarter = keys[INDEX_RUN], keys[INDEX_RUN + INDEX_RUN // 2]
        probes = [(keys[-2], TOUR_WINDOW, ((keys[-2] + 1, INT64_MAX),)),
                  (keys[-2], TOUR_WINDOW, ((keys[-2] + 1, INT64_MAX),)),
                  (second_half + 1, TOUR_WINDOW, ()),
                  (second_half, TOUR_WINDOW, ((second_half + 1, INT64_MAX),)),
                  (last_quarter - 1, TOUR_WINDOW, ()),
                  (last_quarter, 1, ((last_quarter, 3), (last_quarter + 1, 1), (last_quarter + 1, INT64_MAX))),
                  (self.now, TOUR_WINDOW, ((self.now, INT64_MAX), (self.now + TOUR_WINDOW, INT64_MAX)))]
        for due_at, ttl, listings in probes:
            response = self.call("schedule", {"owner": OWNER_NAMES[0], "delay": due_at - self.now, "ttl": ttl},
                                 self.now)
            if "error" in response:
                return
            self.next_id = response["ok"]["id"] + 1
            if not listings:
                self.index_pending(self.now)
            for instant, limit in listings:
                self.call(claimable, {"limit": limit}, instant)
        reached("DR-04.probed_runs")

    def one_never_expires_mid_book(self) -> None:
        """One deferral that never expires, due at the median due_at (in an index of two
        full runs, the front of the second, which it splits), then the keeper lists what
        is claimable once every window has closed, at the latest expires_at: the run that
        took it in has a row no instant closes."""
        open_deferrals = self.oracle_state()["open"]
        claimable, _ = LISTING_OPS
        if not open_deferrals or claimable in self.excluded_ops:
            return
        dues = sorted(d["due_at"] for d in open_deferrals)
        response = self.call("schedule", {"owner": OWNER_NAMES[0], "delay": max(dues[len(dues) // 2] - self.now, 0),
                                          "ttl": 0}, self.now)
        if "error" in response:
            return
        self.next_id = response["ok"]["id"] + 1
        reached("DR-04.never_expiring_insert")
        closed = max(d["expires_at"] for d in open_deferrals)
        self.call(claimable, {"limit": INT64_MAX}, closed)

    def keeper_claims_the_latest(self) -> bool:
        """The keeper claims what is claimable at the latest due_at, the end of the index,
        and the book is listed once those windows have closed: the listing walks over
        the consumed rows, which the implementation drops from a run that keeps others.
        Whether it did (claim and expirable are in the campaign, and a claim succeeded)."""
        open_deferrals = self.oracle_state()["open"]
        claimable, expirable = LISTING_OPS
        if not open_deferrals or self.excluded_ops & {claimable, expirable, KEEPER_CLAIM}:
            return False
        latest = max(d["due_at"] for d in open_deferrals)
        claimed = [deferral for deferral in self.call(claimable, {"limit": INT64_MAX}, latest)["ok"]
                   if "ok" in self.call(KEEPER_CLAIM, {"id": deferral["id"]}, latest)]
        self.consumed.extend(deferral["id"] for deferral in claimed)
        closed = max((deferral["expires_at"] for deferral in claimed), default=0)
        if closed:
            self.call(expirable, {"limit": INT64_MAX}, closed)
        return bool(closed)

    def tour_listings(self) -> None:
        """The whole book, claimable and expirable, at three instants of the tour's span."""
        open_deferrals = self.oracle_state()["open"]
        if not open_deferrals:
            return
        expiries = sorted(d["expires_at"] for d in open_deferrals if d["expires_at"])
        instants = [most_claimable_instant(open_deferrals), max(d["due_at"] for d in open_deferrals)]
        if expiries:
            instants.insert(1, expiries[len(expiries) // 2])
        for instant in instants:
            for op in LISTING_OPS:
                if op not in self.excluded_ops:  # an opening takes no op left out of the campaign
                    self.call(op, {"limit": INT64_MAX}, instant)

    def fill_count(self, size: int, already_open: int) -> int:
        """How many a fill of `size` schedules into a book with room for all of them."""
        ceiling = round(max(FILL_SIZES) * self.depth) + 40
        return max(0, min(max(1, round(size * self.depth)), ceiling - already_open))

    @rule(target=ids, owner=OWNERS, delay=mostly(DELAYS, ODD_DURATIONS, one_in=6),
          ttl=mostly(TTLS, ODD_DURATIONS, one_in=6))
    def schedule(self, owner: Json, delay: Json, ttl: Json) -> Any:
        if isinstance(delay, Headroom):
            delay = delay.at(self.now)
        elif isinstance(delay, Disguised):
            delay = delay.of()
        if isinstance(ttl, Headroom):
            ttl = ttl.at(self.now + delay if type(delay) is int else self.now)
        elif isinstance(ttl, Disguised):
            ttl = ttl.of()
        response = self.act("schedule", {"owner": owner, "delay": delay, "ttl": ttl})
        if "error" in response:
            return multiple()
        deferral = response["ok"]
        self.next_id = deferral["id"] + 1
        return deferral["id"]

    @rule(id=ID_PICKS)
    def claim(self, id: Any) -> None:
        self.consume("claim", {"id": self.an_id(id)})

    @rule(id=ID_PICKS, caller=st.builds(CallerPick, CALLER_PICKS), anyone=OWNER_POOL,
          invalid=st.sampled_from(NOT_OWNERS))
    def cancel(self, id: Any, caller: CallerPick, anyone: str, invalid: Json) -> None:
        id = self.an_id(id)
        self.consume("cancel", {"id": id, "caller": self.a_caller(id, caller, anyone, invalid)})

    @precondition(some_open_but_few)
    @rule(whose=st.sampled_from(ROLES), who=st.sampled_from(("another owner", "near misses")),
          anyone=OWNER_POOL)
    def someone_else_cancels(self, whose: str, who: str, anyone: str) -> None:
        """Cancel an open deferral as someone who is not quite its owner: another owner, or
        each near miss of its owner in turn. In `cancel` that needs the id pick and the
        caller pick to line up, which a short campaign may never draw (D-12's not_owner,
        and every owner comparison bug)."""
        deferral = self.in_role(whose)
        assert deferral is not None
        owner = deferral["owner"]
        if who == "another owner":
            caller = anyone if anyone != owner else next(name for name in OWNER_NAMES if name != owner)
            self.consume("cancel", {"id": deferral["id"], "caller": caller})
            return
        for kind, near_miss in NEAR_MISSES.items():
            reached(f"DR-06.{kind.replace(' ', '_')}")
            response = self.act("cancel", {"id": deferral["id"], "caller": near_miss(owner)})
            if "ok" in response:  # a near miss of no other spelling is the owner itself
                self.consumed.append(response["ok"]["id"])
                return

    @precondition(few_open)
    @rule(where=st.sampled_from(DISGUISABLE),
          op=st.sampled_from(("get", "claim", "expire", "cancel")), whose=st.sampled_from(ROLES))
    def sends_a_disguised_integer(self, where: str, op: str, whose: str) -> None:
        """One valid integer (an open id, the clock, a delay, a ttl, a limit) sent as a
        wrong-typed value, in each form in turn (DR-07): in the other rules that is a rare
        pick among many values, which a short campaign may not make for every argument."""
        for form in DISGUISES:
            self.disguise_one_integer(where, form, op, whose)

    def disguise_one_integer(self, where: str, form: str, op: str, whose: str) -> None:
        deferral = self.in_role(whose)
        id = self.next_id if deferral is None else deferral["id"]
        disguised = DISGUISES[form]
        if where == "id":
            reached(f"DR-07.{form}")
            args: dict[str, Json] = {"id": disguised(id)}
            if op == "cancel":
                args["caller"] = deferral["owner"] if deferral is not None else OWNER_NAMES[0]
            if op == "get":
                self.act(op, args)
            else:
                self.consume(op, args)
        elif where == "now":
            reached(f"DR-07.now_{form}")
            self.misread = Disguised(form)
            if op == "get":
                self.claimable(5)
            elif op == "cancel":
                self.schedule(OWNER_NAMES[0], 1, 50)
            else:
                self.consume(op, {"id": id})
        elif where == "limit":
            self.act("claimable" if op in ("get", "claim") else "expirable", {"limit": disguised(2)})
        else:
            self.schedule(OWNER_NAMES[0], disguised(5) if where == "delay" else 5,
                          disguised(50) if where == "ttl" else 50)

    @precondition(few_open)
    @rule(argument=st.sampled_from(("owner", "delay", "ttl", "limit", "now")),
          listing=st.sampled_from(("claimable", "expirable")))
    def sends_each_invalid_value_of_one_argument(self, argument: str, listing: str) -> None:
        """Requests whose one invalid argument only that argument's own check can refuse,
        every invalid value of it in turn (DR-08): in `schedule` and the listings each is
        a rare pick of one argument, and those rules run in few of a run's steps, so a
        default campaign sent some never (an empty owner: 0 of 35,200 schedules). An
        invalid `now` goes with a claim and an expire of a deferral due now that never
        expires, which nothing else would refuse, and with both listings."""
        target = self.schedule(OWNER_NAMES[0], 0, 0) if argument == "now" else None
        for refused, (name, value) in REFUSED_ARGUMENTS.items():
            if name != argument:
                continue
            reached(f"DR-08.{refused}")
            if name == "limit":
                self.act(listing, {"limit": value})
            elif name == "now":
                for op in ("claim", "expire"):
                    self.misread = value
                    self.consume(op, {"id": target if type(target) is int else self.next_id})
                for op in LISTING_OPS:
                    self.misread = value
                    self.act(op, {"limit": 5})
            else:
                args: dict[str, Json] = {"owner": OWNER_NAMES[0], "delay": 5, "ttl": 50, name: value}
                self.schedule(args["owner"], args["delay"], args["ttl"])

    @rule(which=st.sampled_from(("delay", "ttl")), offset=st.sampled_from((0, 1, -1)))
    def schedules_at_the_int64_edge(self, which: str, offset: int) -> None:
        """A schedule whose due_at (or expires_at) lands exactly on int64 max, or one past
        it (`invalid`, never a wrap), or one short: in `schedule` that is a rare pick of a
        duration among many, which a short campaign may not make."""
        edge = Headroom(offset)
        if which == "delay":
            self.schedule(OWNER_NAMES[0], edge, 0)
        else:
            self.schedule(OWNER_NAMES[0], 1, edge)

    @rule(id=ID_PICKS)
    def expire(self, id: Any) -> None:
        self.consume("expire", {"id": self.an_id(id)})

    @rule(id=ID_PICKS)
    def get(self, id: Any) -> None:
        self.act("get", {"id": self.an_id(id)})

    @rule(limit=LIMITS)
    def claimable(self, limit: Json) -> None:
        self.act("claimable", {"limit": limit.of() if isinstance(limit, Disguised) else limit})

    @rule(limit=LIMITS)
    def expirable(self, limit: Json) -> None:
        self.act("expirable", {"limit": limit.of() if isinstance(limit, Disguised) else limit})

    @precondition(has_open)
    @rule(limit=LIMITS)
    def keeper_wakes_when_most_are_claimable(self, limit: Json) -> None:
        """A keeper wakes at the first instant the most open deferrals are claimable and
        lists its work: the listing is longest there, so its order and limit matter most."""
        self.now = most_claimable_instant(self.state["open"])
        self.claimable(limit)

    @precondition(has_open)
    @rule(limit=LIMITS)
    def janitor_wakes_when_all_have_expired(self, limit: Json) -> None:
        """The same for expiry: at the last open expires_at, every expiring one is late."""
        self.now = max(d["expires_at"] for d in self.state["open"])
        self.expirable(limit)

    # --- deep runs: many ids, many open entries ---

    @precondition(is_deep)
    @rule(size=st.sampled_from(FILL_SIZES), pattern=st.sampled_from(FILL_PATTERNS))
    def fill(self, size: int, pattern: str) -> None:
        """Schedule `size` (x depth) deferrals in one step, until the book is full; every
        answer is compared, the state once at the end."""
        # A fill stops a little past the largest fill: every step compares the whole state.
        count = self.fill_count(size, len(self.state["open"]))
        # "same instant": at the book's next due instant, so the fill ties with what is
        # there already and a listing at that instant starts inside the tie.
        tie = min((d["due_at"] for d in self.state["open"] if d["due_at"] >= self.now), default=self.now + 3)
        for n in range(count):
            delay = {"ascending": n // 2, "descending": (count - n) // 2, "same instant": tie - self.now,
                     "scattered": (n * 7919) % SCATTER}[pattern]
            ttl = (50, 0, 1000, 3, 400)[n % 5]  # the first expires: a fill of one still has a window
            response = self.call("schedule", {"owner": OWNER_NAMES[n % len(OWNER_NAMES)], "delay": delay, "ttl": ttl},
                                 self.now)
            if "error" in response:
                break
            self.next_id = response["ok"]["id"] + 1
        self.bulk_done()

    @precondition(lambda self: self.deep and self.has_open())
    @rule(size=st.sampled_from(DRAIN_SIZES), newest_first=st.booleans())
    def drain(self, size: int, newest_first: bool) -> None:
        """Consume up to `size` (x depth) of the oldest (or the newest) open deferrals:
        claim when it is claimable, else expire when late, else cancel as the owner."""
        open_count = len(self.state["open"])
        in_order = self.state["open"][::-1] if newest_first else self.state["open"]
        for deferral in in_order[:max(1, round(size * self.depth))]:
            if deferral["due_at"] <= self.now and (not deferral["expires_at"] or self.now < deferral["expires_at"]):
                op, args = "claim", {"id": deferral["id"]}
            elif deferral["expires_at"] and deferral["expires_at"] <= self.now:
                op, args = "expire", {"id": deferral["id"]}
            else:
                op, args = "cancel", {"id": deferral["id"], "caller": deferral["owner"]}
            response = self.call(op, args, self.now)
            if "ok" in response:
                self.consumed.append(deferral["id"])
                open_count -= 1
                self.dead_slots += 1
                if self.dead_slots > open_count and self.dead_slots > COMPACT_FLOOR:
                    reached("DR-05.compaction")
                    self.dead_slots = 0
        self.bulk_done()

    @precondition(lambda self: not self.deep and self.depth > 0)  # `--depth 0`: no run allocates many ids
    @rule(op=st.sampled_from(("claim", "expire")), owner=OWNER_POOL)
    def an_old_deferral_outlives_many(self, op: str, owner: str) -> None:
        """One deferral stays open while OUTLIVED later ids are scheduled and cancelled (each
        after the next is scheduled, when there is room, and then asked for again), then
        the book is listed over it (stale rows on the way) and it is claimed or expired in
        its window: the Book keeps such an old one apart from its id window once it
        compacts, and a short campaign rarely consumes that many ids around one survivor,
        nor asks for a consumed id just below where the window starts after a compaction."""
        response = self.act("schedule", {"owner": owner, "delay": 1, "ttl": TOUR_WINDOW})
        if "error" in response:
            return
        old = response["ok"]
        self.next_id = old["id"] + 1
        previous: int | None = None
        for n in range(OUTLIVED):
            request = {"owner": owner, "delay": n % 2, "ttl": 1 + n % 3}
            scheduled = self.call("schedule", request, self.now)
            if "error" in scheduled and previous is not None:  # no room for two: the previous one first
                self.cancel_and_probe(previous, owner)
                previous = None
                scheduled = self.call("schedule", request, self.now)
            if "error" in scheduled:
                break
            self.next_id = scheduled["ok"]["id"] + 1
            if previous is not None:
                self.cancel_and_probe(previous, owner)
            previous = scheduled["ok"]["id"]
        if previous is not None:
            self.cancel_and_probe(previous, owner)
        self.bulk_done()
        if op == "claim":
            self.now = old["due_at"]
            self.act("claimable", {"limit": INT64_MAX})
        else:
            self.now = old["expires_at"]
            self.act("expirable", {"limit": INT64_MAX})
        self.consume(op, {"id": old["id"]})

    def cancel_and_probe(self, id: int, owner: str) -> None:
        """Cancel `id` (the newest but one, when there is room for two), then ask for it again
        with every op that takes an id: each must answer not_found, also right after the
        Book compacted and its id window starts just above `id`."""
        if "ok" in self.call("cancel", {"id": id, "caller": owner}, self.now):
            self.consumed.append(id)
        for op in PROBE_OPS:
            self.call(op, {"id": id, "caller": owner} if op == "cancel" else {"id": id}, self.now)

    def bulk_done(self) -> None:
        """After many steps in one rule: one state comparison, no transition invariants
        (they judge one step), the depth regimes from the state reached."""
        self.observed(one_step=False)
        self.transition = None

    # --- the clock ---

    @rule(ticks=st.integers(0, 5))
    def time_passes(self, ticks: int) -> None:
        self.now = min(self.now + ticks, INT64_MAX)

    @precondition(has_open)
    @rule(whose=st.sampled_from(ROLES), edge=st.sampled_from(EDGES))
    def clock_reaches(self, whose: str, edge: str) -> None:
        """To an edge of an open deferral's window, where off-by-one bugs live."""
        deferral = self.in_role(whose)
        assert deferral is not None
        self.focus = deferral["id"]
        self.now = {
            "due_at - 1": max(deferral["due_at"] - 1, 0),
            "due_at": deferral["due_at"],
            "expires_at - 1": max(deferral["expires_at"] - 1, 0),
            "expires_at": deferral["expires_at"],
        }[edge]

    @precondition(has_open)
    @rule(whose=st.sampled_from(ROLES), edge=st.sampled_from(EDGES), op=st.sampled_from(("claim", "expire")))
    def realm_acts_at_an_edge(self, whose: str, edge: str, op: str) -> None:
        """Claim or Expire a deferral exactly at an edge of its window, as boundary tests
        of timelocks do: the clock move and the op in one step, so no bug at an edge
        depends on the two being drawn one after the other."""
        self.clock_reaches(whose, edge)
        self.consume(op, {"id": self.focus})

    def send_a_malformed_request(self, pick: int) -> None:
        """D-27: one request only JSON can send (an unknown op, an argument missing, extra
        or misnamed), chosen by `pick`: `invalid`, and nothing changes. Sent once per run
        with no draw of its own, so the campaign's other draws stay as they were. A request
        naming an op left out of the campaign (--skip-ops) is not sent: it would end the run."""
        sendable = [(op, args) for op, args in MALFORMED_REQUESTS if op not in self.excluded_ops]
        op, args = sendable[pick % len(sendable)]
        self.act(op, args)  # type: ignore[arg-type]
        if type(args) is not dict:
            self.transition = None  # the step properties read args as an object

    @rule(to=JUMPS)
    def clock_jumps(self, to: str) -> None:
        self.now = max(self.now - 1, 0) if to == "one tick back" else JUMP_TO[to]

    @rule(instant=MISREADS, op=st.sampled_from(MISREAD_OPS), whose=st.sampled_from(ROLES))
    def clock_misreads(self, instant: int | Disguised, op: str, whose: str) -> None:
        """An instant that is no valid time, sent with an op in the same step: left to the
        next drawn op, it would depend on which op a short campaign draws next (a listing
        at 2^63, say)."""
        if isinstance(instant, Disguised):
            reached(f"DR-07.now_{instant.form}")
        self.misread = instant
        if op == "schedule":
            self.schedule(OWNER_NAMES[0], 1, 50)
        elif op in ("claim", "expire"):
            deferral = self.in_role(whose)
            self.consume(op, {"id": self.next_id if deferral is None else deferral["id"]})
        else:
            self.act(op, {"limit": 5})

    # --- the spec's invariants, on the oracle's state (which the target's has matched) ---

    def check_properties(self) -> None:
        state = self.state
        if state is self.checked_state:
            # No step since the last check (a rule that only moved the clock): the same
            # state and transition, judged already.
            return
        self.checked_state = state
        transition = self.transition
        # Each state invariant is a function of the state's value, so a step that left
        # the state as it was (a read, a failure) cannot break one the state passed.
        if transition is None or transition[0] != state:
            for predicate in spec.STATE_INVARIANTS:
                if not predicate(state):
                    raise AssertionError(f"{predicate.__name__} broken in state {state}")
        if transition is not None:
            before, step, after = transition
            for transition in spec.TRANSITION_INVARIANTS:
                if not transition(before, step, after):
                    raise AssertionError(f"{transition.__name__} broken by step {step}\n"
                                         f"  before: {before}\n  after:  {after}")


class ImpliedState:
    """The observable state a duebook run's responses imply (D-26): a successful schedule
    returns the whole new deferral and takes the next id (D-03, D-04), a successful claim,
    cancel or expire returns the one it removed (D-02), anything else changes nothing
    (D-17). So a trace that records every result also pins down every state, and replay
    can check a target's state without running the model."""

    def __init__(self, config: dict[str, Json]) -> None:
        self.max_open = max_open_of(config)
        self.next_id = 1
        self.open: dict[int, Json] = {}

    def apply(self, op: str, args: dict[str, Json], response: dict[str, Json]) -> None:
        changes = _CHANGES.get(op)  # most steps are reads: one lookup settles them
        if changes is None:
            return
        deferral = response.get("ok")
        if not isinstance(deferral, dict) or type(id := deferral.get("id")) is not int:
            return
        if changes:
            self.open[id] = deferral
            self.next_id = id + 1
        else:
            self.open.pop(id, None)

    def state(self) -> dict[str, Json]:
        return {"max_open": self.max_open, "next_id": self.next_id,
                "open": [self.open[id] for id in sorted(self.open)]}


#: The model's branches reachable from a valid config: D-01.invalid is only reachable by
#: a bad config, which reset() refuses before any campaign starts.
#: The depth and value regimes of spec/duebook.md (DR-01..DR-08) too. Each run's opening
#: sends one malformed request (MALFORMED_REQUESTS), args that are no object among them.
REQUIRED_TAGS = (model.OPERATION_TAGS - {"D-01.invalid"}) | {
    "DR-01.cap_1", "DR-01.cap_small", "DR-01.cap_beyond_int32", "DR-02.hundreds_of_ids",
    "DR-03.dozens_open", "DR-04.index_run_split", "DR-04.inner_run_split", "DR-04.insert_after_dropped_rows",
    "DR-04.never_expiring_insert", "DR-04.after_a_full_run", "DR-04.run_end_limit", "DR-04.probed_runs",
    "DR-05.compaction",
    *(f"DR-06.{kind.replace(' ', '_')}" for kind in NEAR_MISSES),
    *(f"DR-07.{form}" for form in DISGUISES), *(f"DR-07.now_{form}" for form in DISGUISES),
    *(f"DR-08.{refused}" for refused in REFUSED_ARGUMENTS)}

#: Requirements that are properties of every step rather than branches a step takes: the
#: campaign checks them all the time, so no coverage tag marks them reached.
UNREACHED_REASONS = {
    "D-02": "a property, not a branch: consumed_id_never_returns and success_consumes_only_its_id "
            "(spec/duebook_invariants.py) are checked after every step",
    "D-04": "a property, not a branch: counter_monotonic, counter_advances_only_on_schedule and "
            "ids_below_counter are checked after every step",
    "D-06": "consumed deferrals leave the compared state (consumed_id_never_returns, every step); "
            "the implementation's storage bound is tests/test_duebook_impl.py (storage under churn, "
            "one old deferral) and its compaction regime DR-05",
    "D-16": "no branch: every returned deferral is edited as a careless caller would "
            "(edit_like_a_caller) and the next state comparison catches a handle into the Book",
    "D-17": "a property, not a branch: failure_changes_nothing is checked after every step",
    "D-18": "the Must* wrappers are the Go API's panics, outside the JSON contract: "
            "tests/test_duebook_model.py checks them",
    "D-21": "every error code is compared step by step, so a target's precedence shows there; the "
            "model takes the branches in the spec's order, proved in spec/duebook_z3.py, and "
            "test_error_precedence in tests/test_duebook_model.py and test_duebook_impl.py pin it",
    "D-22": "a property, not a branch: success_consumes_only_its_id and "
            "schedule_adds_only_the_new_deferral are checked after every step",
    "D-25": "snapshot and restore are the production Book's own API, outside the JSON contract: "
            "tests/test_duebook_impl.py checks them",
    "D-26": "the observable state itself: compared between model and target after every step",
}


SYSTEM = System(
    name="duebook",
    profiles=("seed",),
    config=lambda profile: {"max_open": 3},
    model=ModelTarget,
    impl=ImplTarget,
    machine=DuebookMachine,
    catalogue="duebook.md",
    operations=OPERATIONS,
    state_keys=("max_open", "next_id", "open"),
    required_tags=REQUIRED_TAGS,
    implied_state=ImpliedState,
    unreached_reasons=UNREACHED_REASONS,
    # Draws a function of the seed and the machine alone: what a seed reaches must not
    # move with the modules a caller happens to have loaded.
    seeded_draws_only=True,
)


# --- what a linearizability search needs (duespec/systems/concurrent.py) ---

def fork_model(target: ModelTarget) -> ModelTarget:
    """A copy whose book moves on alone: the open dict copied, the Deferrals (frozen) shared."""
    book = target.book
    assert book is not None, "reset() first"
    copy = ModelTarget()
    copy.book = model.Book(max_open=book.max_open, next_id=book.next_id, open=dict(book.open))
    return copy


def _concurrency() -> Any:
    from duespec.systems.concurrent import Concurrency, no_links

    # Every call may touch every key: `schedule` allocates the one next_id and is refused
    # at the cap on open deferrals, which every claim, cancel and expire moves. Expiry is
    # an op a caller sends, never a background timeout.
    return Concurrency(fork=fork_model, keys=lambda op, args: None, links=no_links,
                       next_timer=lambda observed: None, tick=None)


CONCURRENCY = _concurrency()

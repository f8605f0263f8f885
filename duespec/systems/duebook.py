"""duebook for the harness: the model and the implementation as JSON targets, and the
lockstep machine that drives them through the whole protocol of docs/operations.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, initialize, multiple, precondition, rule

from duespec.impl import duebook as impl
from duespec.impl import duebook_requests as impl_requests
from duespec.campaigns.lockstep import LockstepMachine
from duespec.model import duebook as model
from duespec.spec import duebook_invariants as spec
from duespec.systems import System
from duespec.targets.interface import Json

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

    def reset(self, config: dict[str, Json]) -> None:
        book, code = model.new_book(max_open_of(config))
        if book is None:
            raise ValueError(f"duebook config {config!r} rejected by the model: {code}")
        self.book = book

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        assert self.book is not None, "reset() first"
        return model.step(self.book, op, args, now)

    def observe(self) -> dict[str, Json]:
        assert self.book is not None, "reset() first"
        return model.observe(self.book)

    def close(self) -> None:
        self.book = None


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
            continue  # a tuple with read-only fields and no __dict__: no edit can land
        for field, edit in CALLER_EDITS:
            try:
                setattr(deferral, field, edit(getattr(deferral, field)))
            except (AttributeError, TypeError):
                pass
    if isinstance(value, list):
        value.clear()


class ImplTarget:
    """The production implementation behind the JSON contract, poked like a real caller.

    `book_class` may be any class with impl.Book's API (a variant, a subclass under test)."""

    def __init__(self, book_class: type[impl.Book] = impl.Book) -> None:
        self.book_class = book_class
        self.book: impl.Book | None = None

    def reset(self, config: dict[str, Json]) -> None:
        self.book = self.book_class(max_open_of(config))

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        assert self.book is not None, "reset() first"
        try:
            value = impl_requests.call(self.book, op, args, now)
        except impl.DuebookError as error:
            return {"error": error.code, "message": str(error)}
        if isinstance(value, list):
            response = {"ok": [impl_deferral_json(d) for d in value]}
        else:
            response = {"ok": impl_deferral_json(value)}
        edit_like_a_caller(value)
        return response

    def observe(self) -> dict[str, Json]:
        book = self.book
        assert book is not None, "reset() first"
        return {
            "max_open": book.max_open,
            "next_id": book.next_id,
            "open": sorted((impl_deferral_json(d) for d in book.open_deferrals()),
                           key=lambda d: d["id"]),
        }

    def close(self) -> None:
        self.book = None


# --- Strategies: ordinary values most of the time, the edges and garbage some of it. ---

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


#: Which open deferral an op or a clock move is about, named by what makes it stand out
#: rather than by position, so the choice survives when a shrunk run drops the others.
ROLES = ("newest", "oldest", "next due", "next to expire", "clock's focus")


@dataclass(frozen=True)
class OpenId:
    """The open deferral in `role` (the next id, not yet open, when none is open)."""

    role: str


@dataclass(frozen=True)
class ConsumedId:
    """The index-th newest id the book has consumed (the next id until one exists)."""

    index: int


@dataclass(frozen=True)
class UpcomingId:
    """The id the next successful schedule will allocate: not open yet."""


NOT_INTS = (True, False, 1.5, "3", None)
OUT_OF_INT64 = (INT64_MAX + 1, INT64_MIN - 1)

OWNER_POOL = st.sampled_from(("alice", "bob", "carol"))
NOT_OWNERS = st.sampled_from(("", None, 7, ["alice"]))
OWNERS = mostly(OWNER_POOL, NOT_OWNERS, one_in=10)
#: Callers are wrong more often than owners: Cancel has no other input to get wrong.
CALLERS = mostly(OWNER_POOL, NOT_OWNERS, one_in=6)
#: Delays and ttls, uniformly: 0 (due now; for a ttl, never expires) as often as any
#: other, and some windows long enough for several deferrals to be claimable at once.
DELAYS = st.sampled_from((0, 1, 2, 3, 5, 8))
TTLS = st.sampled_from((0, 1, 2, 50, 1000))
#: Durations past int64, exactly at its edge, and not durations at all.
ODD_DURATIONS = st.one_of(st.builds(Headroom, st.sampled_from((-1, 0, 1))),
                          st.sampled_from((INT64_MAX, -1, *OUT_OF_INT64, *NOT_INTS)))
LIMITS = mostly(st.integers(0, 5), st.sampled_from((INT64_MAX, -1, *OUT_OF_INT64, *NOT_INTS)),
                one_in=8)
STRANGER_IDS = st.one_of(
    st.builds(ConsumedId, st.integers(0, 3)),
    st.just(UpcomingId()),
    # True beside the int64 edges: Python's own trap, since True == 1 passes isinstance(int).
    st.sampled_from((0, -1, INT64_MAX, INT64_MIN, True)),
    st.sampled_from((*NOT_INTS, *OUT_OF_INT64)),
)

#: The four instants where a deferral's window opens or closes.
EDGES = ("due_at - 1", "due_at", "expires_at - 1", "expires_at")
#: Clock jumps within int64 time; the end of time rarely, as it leaves every deferral
#: already scheduled expired and every later one unable to expire.
JUMPS = mostly(st.sampled_from(("to zero", "one tick back")), st.just("to int64 max"), one_in=6)
#: Instants that are not valid times, passed to a single op.
MISREADS = (-1, INT64_MAX + 1)


class DuebookMachine(LockstepMachine):
    """Every duebook op, at a clock biased to the edges of each deferral's window.

    The clock may stay, advance or jump back: duebook takes `now` as an argument and asks
    nothing of it, so a Book must answer any order of instants alike. It stays a valid
    time; an invalid instant is a one-off misread passed to the next op only, so it does
    not silently turn a whole run into `invalid` answers. Ids are mostly open ones, else
    scheduled (often since consumed), upcoming, unknown and wrong-typed ones. Every run
    starts with one valid schedule: no id is ever drawn from an empty bundle, and runs
    whose rule subset leaves schedule out still have a deferral to work on.

    Three rules move the clock and act in one step (at a window edge; a keeper and a
    janitor waking when their listings are longest): the mutation tests showed that
    leaving such pairs to chance let edge and ordering bugs slip through some seeds."""

    system = "duebook"
    ids = Bundle("ids")
    #: Mostly an open deferral; else any scheduled id, or a stranger.
    ID_PICKS = mostly(st.builds(OpenId, st.sampled_from(ROLES)), st.one_of(ids, STRANGER_IDS), one_in=3)

    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        #: An invalid instant the next op is given instead of `now`, once.
        self.misread: int | None = None
        self.next_id = 1
        self.consumed: list[int] = []
        #: The id whose window edge the clock last reached.
        self.focus: int | None = None
        self.state = self.oracle_state()
        #: (state before, step, state after) of the latest op.
        self.transition: tuple[dict[str, Json], dict[str, Json], dict[str, Json]] | None = None

    def act(self, op: str, args: dict[str, Json]) -> dict[str, Json]:
        now = self.now if self.misread is None else self.misread
        self.misread = None
        before = self.state
        response = self.call(op, args, now)
        self.state = self.oracle_state()
        self.transition = (before, self.steps[-1], self.state)
        return response

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
        if isinstance(pick, ConsumedId):
            # Index 0 is the newest, so a shrunk run can drop whatever came before it.
            return self.consumed[-1 - pick.index % len(self.consumed)] if self.consumed else self.next_id
        if isinstance(pick, UpcomingId):
            return self.next_id
        return pick

    def consume(self, op: str, args: dict[str, Json]) -> None:
        response = self.act(op, args)
        if "ok" in response:
            self.consumed.append(response["ok"]["id"])

    def has_open(self) -> bool:
        return bool(self.state["open"])

    # --- the protocol ---

    @initialize(target=ids, opening=st.lists(
        st.tuples(OWNER_POOL, DELAYS,
                  mostly(TTLS, st.builds(Headroom, st.sampled_from((-1, 0))), one_in=6)),
        min_size=1, max_size=3))
    def opening_schedules(self, opening: list[tuple[str, int, int | Headroom]]) -> Any:
        """One to three valid schedules at time 0: the ids bundle is never empty, every run
        has deferrals to work on whatever rules it leaves out, and listings can hold
        several at once. A ttl may reach int64 max, so a shrunk counterexample needs no
        later schedule to get to the end of time."""
        scheduled = [self.schedule(owner, delay, ttl) for owner, delay, ttl in opening]
        return multiple(*(id for id in scheduled if type(id) is int))

    @rule(target=ids, owner=OWNERS, delay=mostly(DELAYS, ODD_DURATIONS, one_in=6),
          ttl=mostly(TTLS, ODD_DURATIONS, one_in=6))
    def schedule(self, owner: Json, delay: Json, ttl: Json) -> Any:
        if isinstance(delay, Headroom):
            delay = delay.at(self.now)
        if isinstance(ttl, Headroom):
            ttl = ttl.at(self.now + delay if type(delay) is int else self.now)
        response = self.act("schedule", {"owner": owner, "delay": delay, "ttl": ttl})
        if "error" in response:
            return multiple()
        deferral = response["ok"]
        self.next_id = deferral["id"] + 1
        return deferral["id"]

    @rule(id=ID_PICKS)
    def claim(self, id: Any) -> None:
        self.consume("claim", {"id": self.an_id(id)})

    @rule(id=ID_PICKS, caller=CALLERS)
    def cancel(self, id: Any, caller: Json) -> None:
        self.consume("cancel", {"id": self.an_id(id), "caller": caller})

    @rule(id=ID_PICKS)
    def expire(self, id: Any) -> None:
        self.consume("expire", {"id": self.an_id(id)})

    @rule(id=ID_PICKS)
    def get(self, id: Any) -> None:
        self.act("get", {"id": self.an_id(id)})

    @rule(limit=LIMITS)
    def claimable(self, limit: Json) -> None:
        self.act("claimable", {"limit": limit})

    @rule(limit=LIMITS)
    def expirable(self, limit: Json) -> None:
        self.act("expirable", {"limit": limit})

    @precondition(has_open)
    @rule(limit=LIMITS)
    def keeper_wakes_when_most_are_claimable(self, limit: Json) -> None:
        """A keeper wakes at the first instant the most open deferrals are claimable and
        lists its work: the listing is longest there, so its order and limit matter most."""
        open_deferrals = self.state["open"]

        def claimable_count(now: int) -> int:
            return sum(d["due_at"] <= now and (d["expires_at"] == 0 or now < d["expires_at"])
                       for d in open_deferrals)
        self.now = max(sorted(d["due_at"] for d in open_deferrals), key=claimable_count)
        self.claimable(limit)

    @precondition(has_open)
    @rule(limit=LIMITS)
    def janitor_wakes_when_all_have_expired(self, limit: Json) -> None:
        """The same for expiry: at the last open expires_at, every expiring one is late."""
        self.now = max(d["expires_at"] for d in self.state["open"])
        self.expirable(limit)

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

    @rule(to=JUMPS)
    def clock_jumps(self, to: str) -> None:
        self.now = {"to zero": 0, "to int64 max": INT64_MAX, "one tick back": max(self.now - 1, 0)}[to]

    @rule(instant=st.sampled_from(MISREADS))
    def clock_misreads(self, instant: int) -> None:
        self.misread = instant

    # --- the spec's invariants, on the oracle's state (which the target's has matched) ---

    def check_properties(self) -> None:
        state = self.state
        for predicate in spec.STATE_INVARIANTS:
            if not predicate(state):
                raise AssertionError(f"{predicate.__name__} broken in state {state}")
        if self.transition is not None:
            before, step, after = self.transition
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
        deferral = response.get("ok")
        if not isinstance(deferral, dict) or type(deferral.get("id")) is not int:
            return
        if op == "schedule":
            self.open[deferral["id"]] = deferral
            self.next_id = deferral["id"] + 1
        elif op in ("claim", "cancel", "expire"):
            self.open.pop(deferral["id"], None)

    def state(self) -> dict[str, Json]:
        return {"max_open": self.max_open, "next_id": self.next_id,
                "open": [self.open[id] for id in sorted(self.open)]}


#: The model's branches a campaign must reach. D-01.invalid needs a bad config, which
#: reset() refuses before any campaign starts. The machine sends no malformed requests
#: (D-27): a rule for them changed the search enough that a mutant's counterexample no
#: longer shrank; tests/test_malformed_requests.py and the corpus check them instead.
REQUIRED_TAGS = model.OPERATION_TAGS - {"D-01.invalid", "D-27.unknown_op", "D-27.args_not_object",
                                        "D-27.wrong_keys"}

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
)

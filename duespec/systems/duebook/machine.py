"""The duebook lockstep machine: every op of docs/operations.md, at a clock biased to the
edges of each deferral's window, checked against spec/duebook_invariants.py after every
step. Its deep runs are in deep.py, the values it draws in ops.py."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, initialize, multiple, precondition, rule

from duespec.systems.machine import ProtocolMachine
from duespec.coverage import reached
from duespec.spec import duebook_invariants as spec
from duespec.systems.duebook.deep import DeepRuns
from duespec.systems.duebook.ops import (
    AT_THE_FILL,
    CALLER_PICKS,
    CAPS,
    COMPACT_FLOOR,
    CallerPick,
    ConsumedId,
    DEEP_CAPS,
    DEEP_ONE_IN,
    DEEP_THRESHOLD,
    DELAYS,
    DISGUISABLE,
    DISGUISED_OPEN_IDS,
    DISGUISES,
    Disguised,
    DisguisedOpenId,
    EDGES,
    FILL_PATTERNS,
    FILL_SIZES,
    Headroom,
    INDEX_RUN,
    INT64_MAX,
    JUMPS,
    JUMP_TO,
    LIMITS,
    LISTING_OPS,
    MALFORMED_REQUESTS,
    MATRIX,
    MATRIX_GROUPS,
    MANY_IDS,
    MANY_OPEN,
    MISREADS,
    MISREAD_OPS,
    NEAR_MISSES,
    NOT_OWNERS,
    ODD_DURATIONS,
    OWNERS,
    OWNER_NAMES,
    OWNER_POOL,
    OpenId,
    REFUSED_ARGUMENTS,
    ROLES,
    STRANGER_IDS,
    TOUR_EXTRA,
    TTLS,
    UpcomingId,
    malformed,
    matrix_fields,
    most_claimable_instant,
    mostly,
    valid_args,
)
from duespec.targets.interface import Json

#: act()'s default instant: the machine's clock.
CLOCK: Any = object()


class DuebookMachine(DeepRuns, ProtocolMachine):
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

    def act(self, op: str, args: dict[str, Json], now: Json = CLOCK) -> dict[str, Json]:
        """One step at the clock, at the misread instant left for it, or at `now` if given."""
        if now is CLOCK:
            misread, self.misread = self.misread, None
            now = (misread.of(self.now) if isinstance(misread, Disguised)
                   else self.now if misread is None else misread)
        before = self.state
        response = self.call(op, args, now)
        self.observed(one_step=True)
        self.transition = (before, self.latest_step, self.state)
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

    @precondition(few_open)
    @rule(group=st.sampled_from(tuple(MATRIX_GROUPS)), whose=st.sampled_from(ROLES))
    def sends_every_malformation_of_one_field(self, group: str, whose: str) -> None:
        """DR-09: one field (an argument, `now`, `args`, the keys) of every op that has it,
        in each of its malformed forms in turn, the rest of the request valid and about an
        open deferral, so only that field's check can refuse it: every op gets every
        malformation the contract defines (the coverage report's malformation matrix),
        `now` included where the op never reads it: Cancel and Get must answer as usual
        (the first cancel by the owner, so it succeeds; the rest by a near miss). It names
        no op in its source (duespec.campaigns.scope reads that): a row whose op the
        campaign leaves out is not sent."""
        for op, field in MATRIX_GROUPS[group]:
            if op not in self.excluded_ops:
                self.send_each_malformed_form(op, field, whose)

    def send_each_malformed_form(self, op: str, field: str, whose: str) -> None:
        for index, form in enumerate(matrix_fields(op)[field]):
            deferral = self.in_role(whose)
            id, owner = (self.next_id, OWNER_NAMES[0]) if deferral is None else (deferral["id"], deferral["owner"])
            caller = owner if index == 0 else NEAR_MISSES["extended"](owner)
            args, now = malformed(op, field, form, valid_args(op, id, caller), self.now)
            reached(MATRIX.tag(op, field, form))
            response = self.act(op, args, now)
            if type(args) is not dict:
                self.transition = None  # the step properties read args as an object
            if "ok" in response and type(response["ok"]) is dict and all(
                    d["id"] != response["ok"]["id"] for d in self.state["open"]):
                self.consumed.append(response["ok"]["id"])

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

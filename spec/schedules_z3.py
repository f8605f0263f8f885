"""Z3 proofs for the schedule catch-up, for EVERY cron whatever its dialect.

A cron is abstracted to its set of fire instants `is_tick` and `next_cron`, with the one
contract the Lean spec gives nextCron: it returns the first tick strictly after its
argument. Both are uninterpreted, so a proof holds for every cron a dialect can express
(and every one it cannot): minutely, yearly, irregular, a gap of a century.

The catch-up loop (Lean `catchUp`, model TO-02) is unbounded, so it is proved by induction
over iterations, never unrolled: Entry => LoopInv; LoopInv and the guard and one
iteration => LoopInv'; LoopInv and not the guard => Post. The loop state records every
promiseCreate made so far (its cronTime, timeoutAt and the `now` it was given) in arrays
indexed by firing order, and a ghost array `index_of` maps each tick fired to its index,
so "every tick in the window was fired" needs no existential.

Requirement IDs refer to spec/schedules.md."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable

from z3 import (
    And,
    Array,
    ArrayRef,
    ArithRef,
    Bool,
    BoolRef,
    BoolSort,
    BoolVal,
    ExprRef,
    ForAll,
    Function,
    FuncDeclRef,
    If,
    Implies,
    Int,
    IntSort,
    IntVal,
    ModelRef,
    Not,
    Or,
    Solver,
    Store,
    sat,
)

from duespec.spec.duebook_z3 import SOLVER_TIMEOUT_MS, all_of, as_check, as_control, valid
from duespec.spec.proofs import Outcome, Proof

#: The deliberately broken variants the negative controls run.
BUGS = {
    "advance_from_wall_clock": "catch-up advances with nextCron(now) instead of nextCron(cronTime)",
    "fire_latest_only": "catch-up fires one occurrence at the latest tick <= now and skips the rest",
    "next_cron_not_strict": "nextCron may return its argument when it is a tick (>= instead of >)",
    "timeout_from_wall_clock": "each promise's timeoutAt is now + promiseTimeout, not cronTime + ...",
    "stores_schedule_before_catch_up": "onScheduleTimeout stores the schedule as it was before catch-up",
    "last_run_at_is_now": "catch-up records the firing time as lastRunAt instead of the cronTime",
    "expand_ignores_timestamp": "the promise id template has no {{.timestamp}}: every tick gets one id",
}

PROFILES = ("lean", "server")
#: The controls run on one concrete cron, a tick every 60 (a minute of seconds). The proofs
#: hold for every cron, so one cron where the broken variant fails refutes it.
CONTROL_PERIOD = 60


def next_cron_contract(next_cron: Callable[[ArithRef], ArithRef], is_tick: Callable[[ArithRef], BoolRef]) -> BoolRef:
    """The Lean's contract for nextCron: nextCron(t) is the first tick strictly after t."""
    t, u = Int("t"), Int("u")
    first = ForAll([u], Implies(And(t < u, u < next_cron(t)), Not(is_tick(u))))
    return ForAll([t], And(next_cron(t) > t, is_tick(next_cron(t)), first))


@dataclass(frozen=True)
class Cron:
    """A cron expression, as far as catch-up can tell: its ticks and its nextCron."""
    next_cron: Callable[[ArithRef], ArithRef]
    is_tick: Callable[[ArithRef], BoolRef]
    #: The latest tick <= t; only the fire_latest_only control uses it.
    latest_tick: Callable[[ArithRef], ArithRef]
    #: What the proofs may assume about this cron.
    axioms: BoolRef

    @staticmethod
    def any() -> Cron:
        """Every cron at once: uninterpreted, constrained only by the nextCron contract."""
        next_cron, is_tick = Function("nextCron", IntSort(), IntSort()), Function("is_tick", IntSort(), BoolSort())
        return Cron(next_cron, is_tick, Function("latest_tick", IntSort(), IntSort()),
                    next_cron_contract(next_cron, is_tick))

    @staticmethod
    def every(period: int, strict: bool = True) -> Cron:
        """One concrete cron, a tick every `period` (say, minutely): a model of the contract,
        so a counterexample with it refutes a claim about every cron. strict=False is the
        classic off-by-one nextCron that returns t itself when t is a tick."""
        def next_cron(t: ArithRef) -> ArithRef:
            ceiling = t - t % period + period
            return ceiling if strict else If(t % period == 0, t, ceiling)  # type: ignore[return-value]
        return Cron(next_cron, lambda x: x % period == 0, lambda t: t - t % period, BoolVal(True))


@dataclass(frozen=True)
class Schedule:
    """The fields catch-up reads and writes; lastRunAt is an option (has_last)."""
    next_run_at: ArithRef
    has_last: BoolRef
    last_run_at: ArithRef
    created_at: ArithRef
    promise_timeout: ArithRef

    @staticmethod
    def fresh(name: str) -> Schedule:
        return Schedule(Int(f"{name}.nextRunAt"), Bool(f"{name}.hasLastRunAt"), Int(f"{name}.lastRunAt"),
                        Int(f"{name}.createdAt"), Int(f"{name}.promiseTimeout"))

    def anchor(self) -> ArithRef:
        """The instant after which the next tick is due: lastRunAt, or createdAt before any."""
        return If(self.has_last, self.last_run_at, self.created_at)  # type: ignore[return-value]


def well_anchored(cron: Cron, s: Schedule) -> BoolRef:
    """The schedule invariant: nextRunAt is the first tick after the anchor. S-02 creates
    it (nextRunAt = nextCron(createdAt), no lastRunAt) and TO-03 re-establishes it."""
    return s.next_run_at == cron.next_cron(s.anchor())


@dataclass(frozen=True)
class Loop:
    """catchUp in progress: the schedule so far and every promiseCreate made so far."""
    schedule: Schedule
    fired: ArithRef
    cron_time: ArrayRef
    timeout_at: ArrayRef
    create_now: ArrayRef
    #: The promise id each promiseCreate was given, as an opaque value.
    promise_id: ArrayRef
    #: Ghost: tick -> the index it was fired at.
    index_of: ArrayRef

    @staticmethod
    def fresh(name: str) -> Loop:
        return Loop(Schedule.fresh(name), Int(f"{name}.fired"),
                    *(Array(f"{name}.{a}", IntSort(), IntSort())
                      for a in ("cronTime", "timeoutAt", "createNow", "promiseId", "indexOf")))


@dataclass(frozen=True)
class Expand:
    """expand(promiseId template, schedule id, cronTime) for one schedule: a function of the
    cronTime alone. X-02 requires it injective in the timestamp."""
    of: Callable[[ArithRef], ArithRef]
    axioms: BoolRef

    @staticmethod
    def any() -> Expand:
        """Every injective expand: uninterpreted, with a left inverse (which is injectivity)."""
        expand, recover = Function("expand", IntSort(), IntSort()), Function("timestamp_of", IntSort(), IntSort())
        t = Int("t")
        return Expand(expand, ForAll([t], recover(expand(t)) == t))

    @staticmethod
    def concrete(uses_timestamp: bool) -> Expand:
        """For the controls: the timestamp itself, or (broken) a template without it."""
        return Expand((lambda t: t) if uses_timestamp else (lambda t: IntVal(0)), BoolVal(True))


def iteration(cron: Cron, expand: Expand, loop: Loop, now: ArithRef, profile: str, bug: str | None) -> Loop:
    """One round of catchUp while nextRunAt <= now: fire the occurrence at cronTime."""
    s = loop.schedule
    cron_time = cron.latest_tick(now) if bug == "fire_latest_only" else s.next_run_at
    timeout_at = (now if bug == "timeout_from_wall_clock" else cron_time) + s.promise_timeout
    create_now = cron_time if profile == "lean" else now
    advance_from = now if bug in ("advance_from_wall_clock", "fire_latest_only") else cron_time
    k = loop.fired
    return Loop(
        Schedule(cron.next_cron(advance_from), BoolVal(True), now if bug == "last_run_at_is_now" else cron_time,
                 s.created_at,
                 s.promise_timeout),
        k + 1, Store(loop.cron_time, k, cron_time), Store(loop.timeout_at, k, timeout_at),
        Store(loop.create_now, k, create_now), Store(loop.promise_id, k, expand.of(cron_time)),
        Store(loop.index_of, cron_time, k))


@dataclass(frozen=True)
class Run:
    """One symbolic onScheduleTimeout at `now` from a well-anchored schedule `start`."""
    cron: Cron
    expand: Expand
    now: ArithRef
    start: Schedule
    profile: str
    bug: str | None

    @staticmethod
    def of(profile: str, bug: str | None) -> Run:
        if bug is None:
            return Run(Cron.any(), Expand.any(), Int("now"), Schedule.fresh("start"), profile, bug)
        cron = Cron.every(CONTROL_PERIOD, strict=bug != "next_cron_not_strict")
        expand = Expand.concrete(uses_timestamp=bug != "expand_ignores_timestamp")
        return Run(cron, expand, Int("now"), Schedule.fresh("start"), profile, bug)

    def axioms(self) -> BoolRef:
        """The cron contract, the schedule invariant, and epoch times (never negative)."""
        s = self.start
        return And(self.cron.axioms, self.expand.axioms, well_anchored(self.cron, s), self.now >= 0, s.created_at >= 0,
                   s.promise_timeout >= 0, Implies(s.has_last, s.last_run_at >= s.created_at))

    def entry(self) -> Loop:
        empty = Loop.fresh("entry")
        return Loop(self.start, IntVal(0), empty.cron_time, empty.timeout_at, empty.create_now,
                    empty.promise_id, empty.index_of)

    def invariant(self, loop: Loop) -> BoolRef:
        """What holds after every iteration, with a0 the anchor catch-up started from."""
        cron, now, s, k = self.cron, self.now, loop.schedule, loop.fired
        a0, a = self.start.anchor(), s.anchor()
        occ = loop.cron_time
        i, j, u = Int("i"), Int("j"), Int("u")
        fired = lambda x: And(0 <= x, x < k)  # noqa: E731
        anchored_create = occ[i] if self.profile == "lean" else now
        return And(
            k >= 0,
            s.next_run_at == cron.next_cron(a),
            s.created_at == self.start.created_at, s.promise_timeout == self.start.promise_timeout,
            If(k == 0, And(a == a0, s.has_last == self.start.has_last),
               And(s.has_last, a == occ[k - 1], occ[0] == cron.next_cron(a0))),
            ForAll([i], Implies(fired(i), And(
                cron.is_tick(occ[i]), a0 < occ[i], occ[i] <= a, occ[i] <= now,
                loop.timeout_at[i] == occ[i] + self.start.promise_timeout,
                loop.create_now[i] == anchored_create,
                loop.promise_id[i] == self.expand.of(occ[i]),
                Implies(i + 1 < k, occ[i + 1] == cron.next_cron(occ[i]))))),
            ForAll([i, j], Implies(And(fired(i), fired(j), i < j), occ[i] < occ[j])),
            ForAll([u], Implies(And(a0 < u, u <= a, cron.is_tick(u)),
                                And(fired(loop.index_of[u]), occ[loop.index_of[u]] == u))),
        )

    def guard(self, loop: Loop) -> BoolRef:
        return loop.schedule.next_run_at <= self.now

    def step(self, loop: Loop) -> Loop:
        return iteration(self.cron, self.expand, loop, self.now, self.profile, self.bug)


def _render(run: Run, loops: dict[str, Loop], witnesses: tuple[tuple[str, ArithRef], ...] = ()
            ) -> Callable[[ModelRef], str]:
    def render(model: ModelRef) -> str:
        v = lambda e: model.eval(e, model_completion=True)  # noqa: E731
        a0 = v(run.start.anchor())
        lines = [f"profile={run.profile} now={v(run.now)} catch-up started after {a0} "
                 f"({'lastRunAt' if str(v(run.start.has_last)) == 'True' else 'createdAt'}); "
                 f"nextCron({a0}) = {v(run.cron.next_cron(run.start.anchor()))}, "
                 f"promiseTimeout={v(run.start.promise_timeout)}"]
        for label, loop in loops.items():
            s, k = loop.schedule, v(loop.fired).as_long()
            shown = min(k, 4)
            fired = ", ".join(f"{v(loop.cron_time[n])} (timeoutAt {v(loop.timeout_at[n])})" for n in range(shown))
            more = f", ... {k - shown} more" if k > shown else ""
            lines.append(f"{label}: nextRunAt={v(s.next_run_at)} lastRunAt="
                         f"{v(s.last_run_at) if str(v(s.has_last)) == 'True' else 'none'}; "
                         f"fired {k}: [{fired}{more}]")
        for label, x in witnesses:
            value = v(x)
            lines.append(f"{label} = {value}: is a tick: {v(run.cron.is_tick(x))}; "
                         f"nextCron({value}) = {v(run.cron.next_cron(x))}")
        return "\n".join(lines)
    return render


def _loop_induction(run: Run, post: Callable[[Loop], BoolRef], post_name: str,
                    witnesses: Callable[[Loop], tuple[tuple[str, ArithRef], ...]] = lambda loop: ()) -> Outcome:
    before, entry = Loop.fresh("before"), run.entry()
    after = run.step(before)
    exit_ = Loop.fresh("exit")
    outcome = all_of(
        lambda: valid(Implies(run.axioms(), run.invariant(entry)),
                      _render(run, {"entry": entry}), "the loop invariant holds on entry"),
        lambda: valid(Implies(And(run.axioms(), run.invariant(before), run.guard(before)),
                              run.invariant(after)),
                      _render(run, {"before an iteration": before, "after it": after}),
                      "one iteration preserves the loop invariant"),
        lambda: valid(Implies(And(run.axioms(), run.invariant(exit_), Not(run.guard(exit_))), post(exit_)),
                      _render(run, {"on exit": exit_}, witnesses(exit_)), post_name),
    )
    if outcome.holds or run.bug is None:
        return outcome
    return Outcome(False, f"{outcome.counterexample}\n{counter_run(run, post)}")


def counter_run(run: Run, post: Callable[[Loop], BoolRef], max_iterations: int = 4) -> str:
    """A whole broken catch-up (up to max_iterations rounds) on the control's concrete cron
    that ends with the postcondition false: the bug seen end to end, not just one step."""
    solver = Solver()
    solver.set(timeout=SOLVER_TIMEOUT_MS)
    solver.add(run.axioms())
    loop = run.entry()
    for rounds in range(max_iterations + 1):
        solver.push()
        solver.add(Not(run.guard(loop)), Not(post(loop)))
        if solver.check() == sat:
            model = solver.model()
            v = lambda e: model.eval(e, model_completion=True).as_long()  # noqa: E731
            a0, now = v(run.start.anchor()), v(run.now)
            ticks = list(range(a0 - a0 % CONTROL_PERIOD + CONTROL_PERIOD, now + 1, CONTROL_PERIOD))
            fired = [f"{v(loop.cron_time[n])} (promise id {v(loop.promise_id[n])}, timeoutAt "
                     f"{v(loop.timeout_at[n])})" for n in range(rounds)]
            return "\n".join([
                f"a whole catch-up on a cron ticking every {CONTROL_PERIOD}, from anchor {a0} at now={now} "
                f"(promiseTimeout {v(run.start.promise_timeout)}):",
                f"  ticks in ({a0}, {now}]: {ticks[:8]}{' ...' if len(ticks) > 8 else ''}",
                f"  fired in {rounds} round(s): [{', '.join(fired)}]; afterwards nextRunAt "
                f"{v(loop.schedule.next_run_at)}, lastRunAt {v(loop.schedule.last_run_at)}",
            ])
        solver.pop()
        solver.add(run.guard(loop))
        loop = run.step(loop)
    return f"(no broken catch-up of <= {max_iterations} rounds ends with the postcondition false)"


#: A free instant standing for "every instant": the goal must hold whatever Z3 picks.
_ANY = Int("any_instant")


def exactly_the_missed_ticks(run: Run) -> Outcome:
    def post(loop: Loop) -> BoolRef:
        a0, k, occ = run.start.anchor(), loop.fired, loop.cron_time
        in_window = And(a0 < _ANY, _ANY <= run.now, run.cron.is_tick(_ANY))
        fired_index = loop.index_of[_ANY]
        complete = Implies(in_window, And(0 <= fired_index, fired_index < k, occ[fired_index] == _ANY))
        i = Int("i")
        sound = ForAll([i], Implies(And(0 <= i, i < k), And(
            run.cron.is_tick(occ[i]), a0 < occ[i], occ[i] <= run.now,
            Implies(i + 1 < k, occ[i] < occ[i + 1]))))
        a = loop.schedule.anchor()
        caught_up = And(loop.schedule.next_run_at > run.now, well_anchored(run.cron, loop.schedule),
                        Implies(a0 <= run.now, a <= run.now),
                        Implies(k > 0, And(run.cron.is_tick(a), a0 < a)), Implies(k == 0, a == a0))
        return And(complete, sound, caught_up)
    return _loop_induction(run, post, "catch-up fires exactly the ticks in (anchor, now], in order",
                           lambda loop: (("the instant", _ANY),))


def terminates(run: Run) -> Outcome:
    """now - nextRunAt is a natural number while the guard holds, and every iteration
    lowers it, so catchUp stops after at most now - nextRunAt + 1 iterations."""
    before = Loop.fresh("before")
    after = run.step(before)
    return valid(Implies(And(run.axioms(), run.invariant(before), run.guard(before)),
                         And(run.now - before.schedule.next_run_at >= 0,
                             run.now - after.schedule.next_run_at < run.now - before.schedule.next_run_at)),
                 _render(run, {"before an iteration": before, "after it": after}),
                 "every iteration moves nextRunAt forward")


def anchored_at_cron_time(run: Run) -> Outcome:
    def post(loop: Loop) -> BoolRef:
        i = Int("i")
        create_now = loop.cron_time[i] if run.profile == "lean" else run.now
        return ForAll([i], Implies(And(0 <= i, i < loop.fired), And(
            loop.timeout_at[i] == loop.cron_time[i] + run.start.promise_timeout,
            loop.create_now[i] == create_now)))
    return _loop_induction(run, post, "each promiseCreate has timeoutAt = its cronTime + promiseTimeout")


def stays_anchored(run: Run) -> Outcome:
    def post(loop: Loop) -> BoolRef:
        s, k = loop.schedule, loop.fired
        return And(well_anchored(run.cron, s), Implies(s.has_last, s.last_run_at < s.next_run_at),
                   Implies(k > 0, And(s.has_last, s.last_run_at == loop.cron_time[k - 1])))
    return _loop_induction(run, post, "the stored schedule is anchored at its last fired tick")


def distinct_promise_ids(run: Run) -> Outcome:
    def post(loop: Loop) -> BoolRef:
        i, j = Int("i"), Int("j")
        fired = lambda x: And(0 <= x, x < loop.fired)  # noqa: E731
        return ForAll([i, j], Implies(And(fired(i), fired(j), i < j), loop.promise_id[i] != loop.promise_id[j]))
    return _loop_induction(run, post, "the occurrences' promise ids are pairwise distinct")


def consecutive_runs_partition_ticks(run: Run) -> Outcome:
    """Two onScheduleTimeout runs, at now1 <= now2: the second fires exactly the ticks in
    (now1, now2], so across any number of timeouts each tick fires once and none is lost.

    The first run is summarized by its proved postcondition (the stored schedule is well
    anchored, its anchor at or before now1 and its nextRunAt after now1); the second by
    `exactly_the_missed_ticks`, which fires the ticks in (stored anchor, now2]."""
    cron, now1, now2 = run.cron, Int("now1"), Int("now2")
    first, stored = Loop.fresh("first_run"), run.start
    caught_up = first.schedule
    kept = stored if run.bug == "stores_schedule_before_catch_up" else caught_up
    u = _ANY
    fires_in_second = And(kept.anchor() < u, u <= now2, cron.is_tick(u))
    new_since_first = And(now1 < u, u <= now2, cron.is_tick(u))
    epoch = And(now1 >= 0, stored.created_at >= 0, Implies(stored.has_last, stored.last_run_at >= stored.created_at))
    first_run_post = And(caught_up.next_run_at > now1, well_anchored(cron, caught_up),
                         caught_up.anchor() <= now1, stored.anchor() <= now1,
                         Implies(first.fired > 0, And(caught_up.anchor() > stored.anchor(),
                                                      cron.is_tick(caught_up.anchor()))),
                         Implies(first.fired == 0, caught_up.anchor() == stored.anchor()))
    return valid(Implies(And(cron.axioms, epoch, well_anchored(cron, stored), now1 <= now2, first_run_post),
                         fires_in_second == new_since_first),
                 _render_two_runs(cron, stored, caught_up, kept, now1, now2, u),
                 "the second run fires exactly the ticks in (now1, now2]")


def _render_two_runs(cron: Cron, stored: Schedule, caught_up: Schedule, kept: Schedule,
                     now1: ArithRef, now2: ArithRef, u: ArithRef) -> Callable[[ModelRef], str]:
    def render(model: ModelRef) -> str:
        v = lambda e: model.eval(e, model_completion=True)  # noqa: E731
        return "\n".join([
            f"first run at now1={v(now1)} from anchor {v(stored.anchor())} "
            f"(nextRunAt {v(stored.next_run_at)}); catch-up ends at anchor {v(caught_up.anchor())}, "
            f"nextRunAt {v(caught_up.next_run_at)}",
            f"stored for the second run: anchor {v(kept.anchor())}, nextRunAt {v(kept.next_run_at)}",
            f"second run at now2={v(now2)}; tick {v(u)} (is a tick: {v(cron.is_tick(u))}) is fired "
            f"{'by both runs' if v(u).as_long() <= v(now1).as_long() else 'by neither'}",
        ])
    return render


def _proof(requirements: tuple[str, ...], name: str, check: Callable[[Run], Outcome],
           bug: str, profile: str = "lean") -> Proof:
    return Proof(system="schedules", requirements=requirements, name=name,
                 check=as_check(lambda: all_of(*(lambda p=p: check(Run.of(p, None)) for p in PROFILES))),
                 control=as_control(lambda: check(Run.of(profile, bug))),
                 control_name=f"{bug}: {BUGS[bug]}")


PROOFS: list[Proof] = [
    _proof(("TO-02", "SP-01", "SP-02", "X-01"), "catch-up fires exactly the ticks in (lastRunAt or createdAt, "
           "now], in order, then nextRunAt > now", exactly_the_missed_ticks, "advance_from_wall_clock"),
    _proof(("TO-02", "SP-01"), "catch-up never fires only the latest missed tick",
           exactly_the_missed_ticks, "fire_latest_only"),
    _proof(("TO-02", "X-01"), "catch-up terminates: every iteration moves nextRunAt forward",
           terminates, "next_cron_not_strict"),
    _proof(("TO-02", "SP-01", "X-05"), "each occurrence's promise has timeoutAt = cronTime + promiseTimeout",
           anchored_at_cron_time, "timeout_from_wall_clock"),
    _proof(("TO-03", "SP-12"), "the stored schedule: lastRunAt = last tick fired < nextRunAt = nextCron(lastRunAt)",
           stays_anchored, "last_run_at_is_now"),
    _proof(("SP-06", "X-02"), "each occurrence gets its own promise id (expand injective in the timestamp)",
           distinct_promise_ids, "expand_ignores_timestamp"),
    _proof(("TO-03", "SP-07"), "consecutive timeouts fire each tick once: the next run fires exactly (now1, now2]",
           consecutive_runs_partition_ticks, "stores_schedule_before_catch_up"),
]

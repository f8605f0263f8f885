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

The loop invariant already states most conclusions; the goals below are its corollaries
(spec/schedules.md, Proofs). So a negative control is not judged by the induction (a
broken iteration breaks the shared invariant whatever the goal): it is a bounded search
for a concrete broken run that ends with its own goal false, confirmed outside Z3 by the
goal restated over concrete runs (`Firing`) and by the model's own run of the same
schedule and clock. `evaluate` runs the encoding on concrete values, which is how
tests/test_schedules_z3_vs_model.py keeps it in step with model/schedules.

Requirement IDs refer to spec/schedules.md."""

from __future__ import annotations

from bisect import bisect_right
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

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
    is_int_value,
    is_true,
    sat,
    simplify,
    unknown,
)

from duespec.model.schedules import catch_up as catch_up_module
from duespec.model.schedules.clock import next_run
from duespec.model.schedules.on_schedule_timeout import on_schedule_timeout
from duespec.model.schedules.state import Config, Schedule as ModelSchedule, Value, new_state, set_schedule
from duespec.spec.duebook_z3 import SOLVER_TIMEOUT_MS, Undecided, all_of, as_check, as_control, valid
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
#: The controls run on one concrete cron, a tick every minute (in ms, as the model counts),
#: so their runs replay in the model as CONTROL_CRON. The proofs hold for every cron, so
#: one cron where the broken variant fails refutes it.
CONTROL_PERIOD = 60_000
CONTROL_CRON = "* * * * *"


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

    @staticmethod
    def table(ticks: Sequence[int]) -> Cron:
        """A concrete cron given by its strictly increasing ticks, to evaluate the encoding
        on concrete values: each argument must simplify to a number within the table."""
        tick_set = frozenset(ticks)

        def next_cron(x: ArithRef) -> ArithRef:
            t = _number(x)
            following = bisect_right(ticks, t)
            if following == len(ticks):
                raise ValueError(f"nextCron({t}) lies beyond the table's last tick {ticks[-1]}")
            return IntVal(ticks[following])

        def latest_tick(x: ArithRef) -> ArithRef:
            t = _number(x)
            latest = bisect_right(ticks, t) - 1
            if latest < 0:
                raise ValueError(f"no tick of the table lies at or before {t}")
            return IntVal(ticks[latest])
        return Cron(next_cron, lambda x: BoolVal(_number(x) in tick_set), latest_tick, BoolVal(True))


def _number(x: ExprRef) -> int:
    value = simplify(x)
    if not is_int_value(value):
        raise ValueError(f"{x} is not a concrete number")
    return value.as_long()  # type: ignore[attr-defined]


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


# ---------------------------------------------------------------------------------------
# Concrete runs: what the encoding, the model and the goals' Python statements share

@dataclass(frozen=True)
class Stored:
    """A schedule's catch-up fields as concrete values."""
    next_run_at: int
    last_run_at: int | None
    created_at: int
    promise_timeout: int

    def anchor(self) -> int:
        return self.created_at if self.last_run_at is None else self.last_run_at

    def symbolic(self) -> Schedule:
        return Schedule(IntVal(self.next_run_at), BoolVal(self.last_run_at is not None),
                        IntVal(self.last_run_at or 0), IntVal(self.created_at), IntVal(self.promise_timeout))

    @staticmethod
    def of_model(s: ModelSchedule) -> Stored:
        return Stored(s.next_run_at, s.last_run_at, s.created_at, s.promise_timeout)


@dataclass(frozen=True)
class Occurrence:
    """One promiseCreate a catch-up made."""
    cron_time: int
    timeout_at: int
    #: The `now` promiseCreate was given (X-05).
    create_now: int
    #: expand's result: a number from the encoding (its injective abstraction), the id
    #: string from the model.
    promise_id: Any


@dataclass(frozen=True)
class Firing:
    """One onScheduleTimeout at `now`: the schedule before, what it created, what was stored."""
    now: int
    before: Stored
    occurrences: tuple[Occurrence, ...]
    after: Stored
    #: False for a broken catch-up cut off while still looping.
    finished: bool = True

    def cron_times(self) -> list[int]:
        return [o.cron_time for o in self.occurrences]

    def describe(self) -> str:
        fired = ", ".join(f"{o.cron_time} (timeoutAt {o.timeout_at}, now {o.create_now}, id {o.promise_id!r})"
                          for o in self.occurrences[:4])
        more = f", ... {len(self.occurrences) - 4} more" if len(self.occurrences) > 4 else ""
        end = "stored" if self.finished else "cut off still looping with"
        return (f"at now={self.now} from {_fields(self.before)}: fired [{fired}{more}]; "
                f"{end} {_fields(self.after)}")


def _fields(s: Stored) -> str:
    last = "none" if s.last_run_at is None else s.last_run_at
    return (f"nextRunAt={s.next_run_at} lastRunAt={last} createdAt={s.created_at} "
            f"promiseTimeout={s.promise_timeout}")


def _firing(value: Callable[[ExprRef], ExprRef], run: Run, loop: Loop, finished: bool) -> Firing:
    """Read one catch-up of the encoding off concrete values (a Z3 model or `simplify`)."""
    n = lambda e: value(e).as_long()  # noqa: E731
    s = loop.schedule
    occurrences = tuple(Occurrence(n(loop.cron_time[k]), n(loop.timeout_at[k]), n(loop.create_now[k]),
                                   n(loop.promise_id[k])) for k in range(n(loop.fired)))
    start = run.start
    return Firing(n(run.now), Stored(n(start.next_run_at), n(start.last_run_at) if is_true(value(start.has_last))
                                     else None, n(start.created_at), n(start.promise_timeout)),
                  occurrences,
                  Stored(n(s.next_run_at), n(s.last_run_at) if is_true(value(s.has_last)) else None,
                         n(s.created_at), n(s.promise_timeout)), finished)


def _simplified(loop: Loop) -> Loop:
    s = loop.schedule
    return Loop(Schedule(*(simplify(x) for x in (s.next_run_at, s.has_last, s.last_run_at, s.created_at,
                                                  s.promise_timeout))),
                *(simplify(x) for x in (loop.fired, loop.cron_time, loop.timeout_at, loop.create_now,
                                        loop.promise_id, loop.index_of)))


def evaluate(cron: Cron, expand: Expand, profile: str, before: Stored, now: int, bug: str | None = None,
             max_iterations: int = 10_000) -> Firing:
    """The encoding's catch-up (entry, guard, `iteration`) run on concrete values: the same
    definitions the proofs are about, instantiated, not re-encoded."""
    run = Run(cron, expand, IntVal(now), before.symbolic(), profile, bug)
    loop = run.entry()
    for _ in range(max_iterations):
        if not is_true(simplify(run.guard(loop))):
            return _firing(simplify, run, loop, finished=True)
        loop = _simplified(run.step(loop))
    return _firing(simplify, run, loop, finished=False)


@contextmanager
def promise_creates() -> Iterator[list[tuple[int, Any, int]]]:
    """Records, while inside, each occurrence the model's catch-up fires as (cronTime, the
    PromiseCreateReq, the `now` it was given): the interface the encoding models."""
    calls: list[tuple[int, Any, int]] = []
    real_expand, real_create = catch_up_module.expand, catch_up_module.promise_create
    cron_times: list[int] = []

    def expanding(template: str, id: str, timestamp: int) -> str:
        cron_times.append(timestamp)
        return real_expand(template, id, timestamp)

    def creating(state: Any, req: Any, now: int) -> Any:
        calls.append((cron_times[-1], req, now))
        return real_create(state, req, now)
    catch_up_module.expand, catch_up_module.promise_create = expanding, creating
    try:
        yield calls
    finally:
        catch_up_module.expand, catch_up_module.promise_create = real_expand, real_create


def occurrences_of(calls: Sequence[tuple[int, Any, int]]) -> tuple[Occurrence, ...]:
    return tuple(Occurrence(cron_time, req.timeout_at, now, req.id) for cron_time, req, now in calls)


#: The promise id template of the schedules the controls replay in the model.
REPLAY_TEMPLATE = "{{.id}}.{{.timestamp}}"


def model_firings(profile: str, cron: str, before: Stored, nows: Sequence[int]) -> list[Firing]:
    """The model's onScheduleTimeout, at each of `nows` in turn, on a schedule holding
    `before`'s fields, re-armed as S-02 and TO-03 arm it (nextRunAt = nextCron(anchor))."""
    state = new_state(Config(profile=profile))  # type: ignore[arg-type]
    stored = ModelSchedule(id="s", cron=cron, promise_id=REPLAY_TEMPLATE, promise_timeout=before.promise_timeout,
                           promise_param=Value(), promise_tags={}, next_run_at=next_run(cron, before.anchor()),
                           created_at=before.created_at, last_run_at=before.last_run_at)
    set_schedule(state, stored)
    firings = []
    for now in nows:
        start = Stored.of_model(state.schedules["s"])
        with promise_creates() as calls:
            on_schedule_timeout(state, "s", now)
        firings.append(Firing(now, start, occurrences_of(calls), Stored.of_model(state.schedules["s"])))
    return firings


# ---------------------------------------------------------------------------------------
# The goals over concrete runs: each proof's conclusion restated in Python, using only
# the model's nextCron, so a control's run is judged outside Z3. Each returns why the
# firings break it, or None.

Judge = Callable[[str, str, Sequence[Firing]], "str | None"]


def ticks_in(cron: str, after: int, upto: int, limit: int = 10_000) -> list[int]:
    """The ticks in (after, upto], by the model's nextCron."""
    ticks, t = [], next_run(cron, after)
    while t <= upto and len(ticks) < limit:
        ticks.append(t)
        t = next_run(cron, t)
    return ticks


def fires_the_missed_ticks(cron: str, profile: str, firings: Sequence[Firing]) -> str | None:
    for f in firings:
        if not f.finished:
            return f"catch-up at now={f.now} never ends"
        owed = ticks_in(cron, f.before.anchor(), f.now)
        if f.cron_times() != owed:
            return f"at now={f.now} it fired {f.cron_times()}, but the ticks in ({f.before.anchor()}, {f.now}] are {owed}"
        if not f.now < f.after.next_run_at == next_run(cron, f.after.anchor()):
            return (f"at now={f.now} it stored nextRunAt {f.after.next_run_at}, not the first tick after "
                    f"both now and its anchor {f.after.anchor()}")
    return None


def moves_forward(cron: str, profile: str, firings: Sequence[Firing]) -> str | None:
    for f in firings:
        following = f.cron_times()[1:] + [f.after.next_run_at]
        for o, next_run_at in zip(f.occurrences, following):
            if next_run_at <= o.cron_time:
                return f"the iteration firing {o.cron_time} left nextRunAt at {next_run_at}"
        if not f.finished:
            return f"catch-up at now={f.now} was still looping after {len(f.occurrences)} iterations"
    return None


def created_at_cron_time(cron: str, profile: str, firings: Sequence[Firing]) -> str | None:
    for f in firings:
        for o in f.occurrences:
            create_now = o.cron_time if profile == "lean" else f.now
            if (o.timeout_at, o.create_now) != (o.cron_time + f.before.promise_timeout, create_now):
                return (f"the occurrence at {o.cron_time} got timeoutAt {o.timeout_at} and now {o.create_now}, "
                        f"not {o.cron_time + f.before.promise_timeout} and {create_now}")
    return None


def anchored_at_last_tick(cron: str, profile: str, firings: Sequence[Firing]) -> str | None:
    for f in firings:
        last = f.occurrences[-1].cron_time if f.occurrences else f.before.last_run_at
        if f.after.last_run_at != last:
            return f"at now={f.now} it stored lastRunAt {f.after.last_run_at}, not the last tick fired {last}"
        if f.after.next_run_at != next_run(cron, f.after.anchor()):
            return f"it stored nextRunAt {f.after.next_run_at}, not nextCron({f.after.anchor()})"
        if last is not None and not last < f.after.next_run_at:
            return f"it stored lastRunAt {last} >= nextRunAt {f.after.next_run_at}"
    return None


def distinct_ids(cron: str, profile: str, firings: Sequence[Firing]) -> str | None:
    for f in firings:
        ids = [o.promise_id for o in f.occurrences]
        if len(set(ids)) != len(ids):
            return f"at now={f.now} its {len(ids)} occurrences got the ids {ids}"
    return None


def partitions_ticks(cron: str, profile: str, firings: Sequence[Firing]) -> str | None:
    for first, second in zip(firings, firings[1:]):
        owed = ticks_in(cron, first.now, second.now)
        if second.cron_times() != owed:
            return (f"the timeout at now2={second.now} fired {second.cron_times()}, but the ticks in "
                    f"(now1={first.now}, now2] are {owed}")
    return None


#: Every goal over concrete runs; each holds of every run of the model.
JUDGES: tuple[Judge, ...] = (fires_the_missed_ticks, moves_forward, created_at_cron_time, anchored_at_last_tick,
                             distinct_ids, partitions_ticks)


# ---------------------------------------------------------------------------------------
# The proofs (induction over the loop) and their goals

def loop_invariant_is_inductive(run: Run) -> Outcome:
    """The one induction: the loop invariant holds on entry and every iteration keeps it."""
    before, entry = Loop.fresh("before"), run.entry()
    after = run.step(before)
    return all_of(
        lambda: valid(Implies(run.axioms(), run.invariant(entry)),
                      _render(run, {"entry": entry}), "the loop invariant holds on entry"),
        lambda: valid(Implies(And(run.axioms(), run.invariant(before), run.guard(before)),
                              run.invariant(after)),
                      _render(run, {"before an iteration": before, "after it": after}),
                      "one iteration preserves the loop invariant"),
    )


def _loop_induction(run: Run, post: Callable[[Run, Loop], BoolRef], post_name: str,
                    witnesses: Callable[[Loop], tuple[tuple[str, ArithRef], ...]] = lambda loop: ()) -> Outcome:
    """A corollary of the loop invariant: the invariant on exit (guard false) implies `post`.
    Each corollary re-checks the induction itself, so a proof stands on its own."""
    exit_ = Loop.fresh("exit")
    return all_of(
        lambda: loop_invariant_is_inductive(run),
        lambda: valid(Implies(And(run.axioms(), run.invariant(exit_), Not(run.guard(exit_))), post(run, exit_)),
                      _render(run, {"on exit": exit_}, witnesses(exit_)), post_name),
    )


#: A free instant standing for "every instant": the goal must hold whatever Z3 picks.
_ANY = Int("any_instant")


def missed_ticks_post(run: Run, loop: Loop) -> BoolRef:
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


def timeouts_post(run: Run, loop: Loop) -> BoolRef:
    i = Int("i")
    create_now = loop.cron_time[i] if run.profile == "lean" else run.now
    return ForAll([i], Implies(And(0 <= i, i < loop.fired), And(
        loop.timeout_at[i] == loop.cron_time[i] + run.start.promise_timeout,
        loop.create_now[i] == create_now)))


def anchored_post(run: Run, loop: Loop) -> BoolRef:
    s, k = loop.schedule, loop.fired
    return And(well_anchored(run.cron, s), Implies(s.has_last, s.last_run_at < s.next_run_at),
               Implies(k > 0, And(s.has_last, s.last_run_at == loop.cron_time[k - 1])))


def distinct_ids_post(run: Run, loop: Loop) -> BoolRef:
    i, j = Int("i"), Int("j")
    fired = lambda x: And(0 <= x, x < loop.fired)  # noqa: E731
    return ForAll([i, j], Implies(And(fired(i), fired(j), i < j), loop.promise_id[i] != loop.promise_id[j]))


def exactly_the_missed_ticks(run: Run) -> Outcome:
    return _loop_induction(run, missed_ticks_post, "catch-up fires exactly the ticks in (anchor, now], in order",
                           lambda loop: (("the instant", _ANY),))


def terminates(run: Run) -> Outcome:
    """now - nextRunAt is a natural number while the guard holds, and every iteration
    lowers it, so catchUp stops after at most now - nextRunAt + 1 iterations. A ranking
    argument on top of the loop invariant, which it re-checks."""
    before = Loop.fresh("before")
    after = run.step(before)
    return all_of(
        lambda: loop_invariant_is_inductive(run),
        lambda: valid(Implies(And(run.axioms(), run.invariant(before), run.guard(before)),
                              And(run.now - before.schedule.next_run_at >= 0,
                                  run.now - after.schedule.next_run_at < run.now - before.schedule.next_run_at)),
                      _render(run, {"before an iteration": before, "after it": after}),
                      "every iteration moves nextRunAt forward"))


def anchored_at_cron_time(run: Run) -> Outcome:
    return _loop_induction(run, timeouts_post, "each promiseCreate has timeoutAt = its cronTime + promiseTimeout")


def stays_anchored(run: Run) -> Outcome:
    return _loop_induction(run, anchored_post, "the stored schedule is anchored at its last fired tick")


def distinct_promise_ids(run: Run) -> Outcome:
    return _loop_induction(run, distinct_ids_post, "the occurrences' promise ids are pairwise distinct")


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


# ---------------------------------------------------------------------------------------
# The negative controls: a concrete broken run that breaks the goal, confirmed in the model

@dataclass(frozen=True)
class Goal:
    """A proof's conclusion, as the control searches for its breach and judges it."""
    name: str
    #: The condition on a broken run (unrolled catch-ups, each a list of loop states from
    #: entry) under which Z3's run breaks the goal.
    broken: Callable[[Run, list[list[Loop]]], BoolRef]
    #: The same goal over concrete runs, which judges the run Z3 found.
    judge: Judge
    #: How many consecutive onScheduleTimeout runs a breach needs.
    firings: int = 1


#: The second timeout's `now` in the two-run control.
_NOW2 = Int("now2")


def _guard_at(loop: Loop, now: ArithRef) -> BoolRef:
    return loop.schedule.next_run_at <= now


def _broken_on_exit(post: Callable[[Run, Loop], BoolRef]) -> Callable[[Run, list[list[Loop]]], BoolRef]:
    return lambda run, runs: And(*(Not(run.guard(loops[-1])) for loops in runs), Not(post(run, runs[-1][-1])))


def _stalls(run: Run, runs: list[list[Loop]]) -> BoolRef:
    loops = runs[-1]
    return Or(BoolVal(False), *(after.schedule.next_run_at <= before.schedule.next_run_at
                                for before, after in zip(loops, loops[1:])))


def _refires_or_skips(run: Run, runs: list[list[Loop]]) -> BoolRef:
    """The second run fires a tick <= now1, or leaves a tick in (now1, now2] unfired."""
    (first, second), now1 = runs, run.now
    finished = And(Not(run.guard(first[-1])), Not(_guard_at(second[-1], _NOW2)))
    last = second[-1]
    refired = Or(BoolVal(False), *(last.cron_time[k] <= now1 for k in range(len(second) - 1)))
    k = last.index_of[_ANY]
    skipped = And(now1 < _ANY, _ANY <= _NOW2, run.cron.is_tick(_ANY),
                  Not(And(0 <= k, k < last.fired, last.cron_time[k] == _ANY)))
    return And(finished, Or(refired, skipped))


GOALS = {
    "missed": Goal("catch-up fires exactly the ticks in (anchor, now], in order, and stops after now",
                   _broken_on_exit(missed_ticks_post), fires_the_missed_ticks),
    "forward": Goal("every iteration moves nextRunAt forward", _stalls, moves_forward),
    "timeouts": Goal("each promiseCreate has timeoutAt = cronTime + promiseTimeout and its profile's now",
                     _broken_on_exit(timeouts_post), created_at_cron_time),
    "anchored": Goal("the stored schedule is anchored at its last fired tick",
                     _broken_on_exit(anchored_post), anchored_at_last_tick),
    "ids": Goal("the occurrences' promise ids are pairwise distinct", _broken_on_exit(distinct_ids_post),
                distinct_ids),
    "partition": Goal("a timeout at now2 after one at now1 fires exactly the ticks in (now1, now2]",
                      _refires_or_skips, partitions_ticks, firings=2),
}

#: Bounds of the controls' search: small enough to read, large enough for every bug here.
CONTROL_ROUNDS = 3
_CONTROL_HORIZON_MS = 10**12


def _unroll(run: Run, start: Loop, rounds: int, now: ArithRef) -> tuple[list[Loop], BoolRef]:
    """`rounds` iterations of the (broken) loop from `start`, each under its guard."""
    loops, guards = [start], []
    for _ in range(rounds):
        guards.append(_guard_at(loops[-1], now))
        loops.append(iteration(run.cron, run.expand, loops[-1], now, run.profile, run.bug))
    return loops, And(BoolVal(True), *guards)


def _realistic(run: Run) -> BoolRef:
    """The start as S-02 creates and TO-03 stores it, fired no earlier (the clock only moves
    forward), on times the model accepts."""
    s = run.start
    return And(run.axioms(), s.anchor() <= run.now, run.now <= _CONTROL_HORIZON_MS, s.promise_timeout <= 10**9,
               Implies(s.has_last, And(run.cron.is_tick(s.last_run_at), s.last_run_at > s.created_at)))


def _kept(run: Run, first: Loop) -> Loop:
    """What onScheduleTimeout stores after the first run, as the (broken) TO-03 does."""
    stored = run.start if run.bug == "stores_schedule_before_catch_up" else first.schedule
    fresh = Loop.fresh("second")
    return Loop(stored, IntVal(0), fresh.cron_time, fresh.timeout_at, fresh.create_now, fresh.promise_id,
                fresh.index_of)


def search_broken_run(run: Run, goal: Goal, rounds: int = CONTROL_ROUNDS) -> list[Firing] | None:
    """The shortest concrete run of the broken catch-up (up to `rounds` iterations per
    firing) that Z3 finds breaking `goal`."""
    solver = Solver()
    solver.set(timeout=SOLVER_TIMEOUT_MS)
    solver.add(_realistic(run))
    for r1 in range(rounds + 1):
        first, first_guards = _unroll(run, run.entry(), r1, run.now)
        seconds = range(rounds + 1) if goal.firings == 2 else [None]
        for r2 in seconds:
            runs, guards = [first], first_guards
            if r2 is not None:
                second, second_guards = _unroll(run, _kept(run, first[-1]), r2, _NOW2)
                runs, guards = [first, second], And(first_guards, second_guards, run.now <= _NOW2,
                                                    _NOW2 <= _CONTROL_HORIZON_MS)
            solver.push()
            solver.add(guards, goal.broken(run, runs))
            answer = solver.check()
            if answer == sat:
                return _firings(solver.model(), run, runs)
            solver.pop()
            if answer == unknown:
                raise Undecided(f"the control's search: Z3 answered unknown ({solver.reason_unknown()})")
    return None


def _firings(model: ModelRef, run: Run, runs: list[list[Loop]]) -> list[Firing]:
    value = lambda e: model.eval(e, model_completion=True)  # noqa: E731
    firings, nows = [], [run.now, _NOW2]
    for loops, now in zip(runs, nows):
        first_loop = loops[0]
        as_run = Run(run.cron, run.expand, now, first_loop.schedule, run.profile, run.bug)
        finished = not is_true(value(_guard_at(loops[-1], now)))
        firings.append(_firing(value, as_run, loops[-1], finished))
    return firings


def refute(goal: Goal, bug: str, profile: str = "lean") -> Outcome:
    """The control: Z3's concrete broken run must break `goal`, by `goal.judge`, while the
    model's run of the same schedule and clock keeps it."""
    run = Run.of(profile, bug)
    firings = search_broken_run(run, goal)
    if firings is None:
        return Outcome(True, f"no broken run of <= {CONTROL_ROUNDS} iterations breaks '{goal.name}'")
    return confirm(goal, profile, firings)


def confirm(goal: Goal, profile: str, firings: Sequence[Firing]) -> Outcome:
    """Judge a broken run outside Z3: the goal over concrete values must call it broken, and
    the model, given the same schedule and clock, must keep the goal."""
    broken_run = "\n".join(f"  broken run: {f.describe()}" for f in firings)
    why = goal.judge(CONTROL_CRON, profile, firings)
    if why is None:
        return Outcome(True, f"Z3's broken run does not break '{goal.name}' when judged on its values:\n{broken_run}")
    model_run = model_firings(profile, CONTROL_CRON, firings[0].before, [f.now for f in firings])
    model_text = "\n".join(f"  model:      {f.describe()}" for f in model_run)
    kept = goal.judge(CONTROL_CRON, profile, model_run)
    if kept is not None:
        return Outcome(True, f"the model breaks '{goal.name}' too on these inputs ({kept}):\n{model_text}")
    return Outcome(False, f"breaks '{goal.name}': {why}\n"
                          f"  on cron '{CONTROL_CRON}', profile {profile}\n{broken_run}\n{model_text}  (keeps it)",
                   breaks=goal.name)


def _proof(requirements: tuple[str, ...], name: str, check: Callable[[Run], Outcome], goal: Goal,
           bug: str, profile: str = "lean") -> Proof:
    return Proof(system="schedules", requirements=requirements, name=name,
                 check=as_check(lambda: all_of(*(lambda p=p: check(Run.of(p, None)) for p in PROFILES))),
                 goal=goal.name, control=as_control(lambda: refute(goal, bug, profile)),
                 control_name=f"{bug}: {BUGS[bug]}")


PROOFS: list[Proof] = [
    _proof(("TO-02", "SP-01", "SP-02", "X-01"), "catch-up fires exactly the ticks in (lastRunAt or createdAt, "
           "now], in order, then nextRunAt > now", exactly_the_missed_ticks, GOALS["missed"], "advance_from_wall_clock"),
    _proof(("TO-02", "SP-01"), "catch-up never fires only the latest missed tick",
           exactly_the_missed_ticks, GOALS["missed"], "fire_latest_only"),
    _proof(("TO-02", "X-01"), "catch-up terminates: every iteration moves nextRunAt forward",
           terminates, GOALS["forward"], "next_cron_not_strict"),
    _proof(("TO-02", "SP-01", "X-05"), "each occurrence's promise has timeoutAt = cronTime + promiseTimeout",
           anchored_at_cron_time, GOALS["timeouts"], "timeout_from_wall_clock"),
    _proof(("TO-03", "SP-12"), "the stored schedule: lastRunAt = last tick fired < nextRunAt = nextCron(lastRunAt)",
           stays_anchored, GOALS["anchored"], "last_run_at_is_now"),
    _proof(("SP-06", "X-02"), "each occurrence gets its own promise id (expand injective in the timestamp)",
           distinct_promise_ids, GOALS["ids"], "expand_ignores_timestamp"),
    _proof(("TO-03", "SP-07"), "consecutive timeouts fire each tick once: the next run fires exactly (now1, now2]",
           consecutive_runs_partition_ticks, GOALS["partition"], "stores_schedule_before_catch_up"),
]

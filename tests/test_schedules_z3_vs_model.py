"""The schedules Z3 encoding and the reference model agree on concrete runs.

Hypothesis draws schedules (crons whose ticks this file computes on its own), a profile
and a clock; the model creates the schedules and runs `tick` at each clock value, and
what its catch-up hands promiseCreate is recorded. The encoding's own catch-up (the entry,
guard and `iteration` of spec/schedules_z3.py that the proofs are about) is evaluated on
the same concrete values, chained on its own results, and must give the same occurrences
(cronTime, timeoutAt, the `now` given, promise id) and store the same lastRunAt and
nextRunAt after every tick. Every goal of the proofs, restated over concrete runs, must
hold of the model's run. A model whose catch-up drifts from the encoding fails here even
though `duespec prove` still proves the encoding.

To cover a handler the encoding later gains (promise settle, tasks), add its step to
`Clock`'s script and compare its recorded effect beside `assert_same_firing`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import count, islice
from typing import Iterator

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from z3 import IntVal

from duespec.model import schedules as model
from duespec.model.schedules import catch_up as catch_up_module
from duespec.model.schedules import on_schedule_timeout as on_schedule_timeout_module
from duespec.model.schedules.catch_up import catch_up
from duespec.model.schedules.clock import next_run
from duespec.model.schedules.expand import expand
from duespec.model.schedules.requests import PromiseCreateReq, ScheduleCreateReq
from duespec.model.schedules.s02_schedule_create import schedule_create
from duespec.model.schedules.state import Schedule, ServerState, Value
from duespec.model.schedules.tick import tick
from duespec.spec import schedules_z3 as z3s

MINUTE, HOUR, DAY = 60_000, 3_600_000, 86_400_000
T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z
TEMPLATE = "{{.id}}/{{.timestamp}}"


@dataclass(frozen=True)
class Cron:
    """A cron of the form `M H * * *`, its ticks computed here, not by croniter."""
    minutes: tuple[int, ...]
    hours: tuple[int, ...] | None

    def expression(self) -> str:
        hours = "*" if self.hours is None else ",".join(map(str, self.hours))
        return f"{','.join(map(str, self.minutes))} {hours} * * *"

    def ticks_after(self, t: int) -> Iterator[int]:
        for day in count(t // DAY):
            for hour in self.hours or range(24):
                for minute in self.minutes:
                    tick = day * DAY + hour * HOUR + minute * MINUTE
                    if tick > t:
                        yield tick

    def table(self, after: int, upto: int) -> list[int]:
        """Every tick in (after, first tick > upto]: the nextCron table the encoding gets."""
        ticks = []
        for tick in self.ticks_after(after):
            ticks.append(tick)
            if tick > upto:
                return ticks
        raise AssertionError("unreachable: ticks_after is endless")


@dataclass(frozen=True)
class Plan:
    profile: str
    created_at: int
    #: (cron, promiseTimeout, tags) per schedule, ids s0, s1, ...
    schedules: tuple[tuple[Cron, int, tuple[tuple[str, str], ...]], ...]
    nows: tuple[int, ...]


crons = st.builds(Cron, st.lists(st.integers(0, 59), min_size=1, max_size=4, unique=True).map(lambda m: tuple(sorted(m))),
                  st.none() | st.lists(st.integers(0, 23), min_size=1, max_size=3, unique=True)
                  .map(lambda h: tuple(sorted(h))))
schedule_specs = st.tuples(crons, st.sampled_from([0, 1, MINUTE - 1, MINUTE, HOUR, 5 * DAY]),
                           st.sampled_from([(), (("resonate:timer", "true"),)]))


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    """A clock that lands on, just before and just after ticks, and jumps over several."""
    specs = tuple(draw(st.lists(schedule_specs, min_size=1, max_size=2)))
    created_at = T0 + draw(st.integers(0, 2 * DAY))
    now, nows = created_at, []
    for _ in range(draw(st.integers(1, 5))):
        cron = specs[draw(st.integers(0, len(specs) - 1))][0]
        ahead = draw(st.integers(1, 6))
        target = next(t for n, t in enumerate(cron.ticks_after(now), 1) if n == ahead)
        now = max(now, target + draw(st.sampled_from([-1, 0, 0, 1, 2 * MINUTE])))
        if draw(st.integers(0, 4)) == 0:
            now += draw(st.integers(0, 30 * MINUTE))
        nows.append(now)
    return Plan(draw(st.sampled_from(["lean", "server"])), created_at, specs, tuple(nows))


def create_all(state: ServerState, plan: Plan) -> None:
    for n, (cron, promise_timeout, tags) in enumerate(plan.schedules):
        schedule_create(state, ScheduleCreateReq(f"s{n}", cron.expression(), TEMPLATE, promise_timeout, Value(),
                                                 dict(tags)), plan.created_at)


def model_run(plan: Plan) -> dict[str, list[z3s.Firing]]:
    """The model at each clock value: `tick`, with each schedule's catch-up recorded."""
    state = model.new_state(model.Config(profile=plan.profile))  # type: ignore[arg-type]
    create_all(state, plan)
    firings: dict[str, list[z3s.Firing]] = {id: [] for id in state.schedules}
    for now in plan.nows:
        before = {id: z3s.Stored.of_model(s) for id, s in state.schedules.items()}
        with z3s.promise_creates() as calls:
            tick(state, now)
        for id in before:
            mine = [call for call in calls if call[1].id.startswith(f"{id}/")]
            firings[id].append(z3s.Firing(now, before[id], z3s.occurrences_of(mine),
                                          z3s.Stored.of_model(state.schedules[id])))
    return firings


def encoding_run(plan: Plan, n: int) -> list[z3s.Firing]:
    """The encoding's catch-up of schedule s<n> at each clock value, from its own state: a
    timeout at a clock value with nothing due is its guard failing at once."""
    cron, promise_timeout, _ = plan.schedules[n]
    table = z3s.Cron.table(cron.table(plan.created_at, max(plan.nows)))
    first = table.next_cron(IntVal(plan.created_at)).as_long()  # type: ignore[attr-defined]
    stored = z3s.Stored(first, None, plan.created_at, promise_timeout)
    firings = []
    for now in plan.nows:
        firing = z3s.evaluate(table, z3s.Expand.concrete(uses_timestamp=True), plan.profile, stored, now)
        firings.append(firing)
        stored = firing.after
    return firings


def assert_same_firing(id: str, mine: z3s.Firing, encoded: z3s.Firing) -> None:
    where = f"{id} at now={mine.now}"
    assert encoded.finished, f"{where}: the encoding's catch-up did not end"
    assert mine.before == encoded.before, f"{where}: schedule before {mine.before} vs encoding {encoded.before}"
    assert [o.cron_time for o in mine.occurrences] == [o.cron_time for o in encoded.occurrences], (
        f"{where}: model fired {mine.cron_times()}, encoding {encoded.cron_times()}")
    for o, e in zip(mine.occurrences, encoded.occurrences):
        assert (o.timeout_at, o.create_now) == (e.timeout_at, e.create_now), f"{where}: {o} vs encoding {e}"
        assert o.promise_id == expand(TEMPLATE, id, e.promise_id), f"{where}: id {o.promise_id} vs {e.promise_id}"
    assert mine.after == encoded.after, f"{where}: model stored {mine.after}, encoding {encoded.after}"


def cross_check(plan: Plan) -> None:
    mine = model_run(plan)
    for n, (cron, _, _) in enumerate(plan.schedules):
        id = f"s{n}"
        for model_firing, encoded in zip(mine[id], encoding_run(plan, n), strict=True):
            assert_same_firing(id, model_firing, encoded)
        for judge in z3s.JUDGES:
            why = judge(cron.expression(), plan.profile, mine[id])
            assert why is None, f"{id}: the model breaks {judge.__name__}: {why}"


#: Three ticks owed at once, minutely; the model at 03:30 must fire 01, 02 and 03.
THREE_MISSED = Plan("lean", T0, ((Cron(tuple(range(60)), None), MINUTE, ()),), (T0 + 3 * MINUTE + 30_000,))


@settings(max_examples=60, deadline=None)
@given(plans())
@example(THREE_MISSED)
@example(replace(THREE_MISSED, profile="server", nows=(T0 + MINUTE, T0 + 4 * MINUTE - 1, T0 + 4 * MINUTE)))
def test_encoding_and_model_catch_up_agree(plan: Plan) -> None:
    cross_check(plan)


def test_tick_table_agrees_with_the_model_cron() -> None:
    """The crons here are computed independently of croniter, and agree with it."""
    cron = Cron((5, 35), (0, 13))
    t = T0 + 7
    for tick_ in islice(cron.ticks_after(t), 10):
        assert next_run(cron.expression(), t) == tick_
        t = tick_


def catch_up_advancing_from_now(state: ServerState, now: int, s: Schedule) -> Schedule:
    """The drift the review found slipping past `duespec prove`: advance with nextCron(now)."""
    while s.next_run_at <= now:
        cron_time = s.next_run_at
        create_now = cron_time if state.config.profile == "lean" else now
        catch_up_module.promise_create(state, PromiseCreateReq(
            id=catch_up_module.expand(s.promise_id, s.id, cron_time), timeout_at=cron_time + s.promise_timeout,
            param=s.promise_param, tags=s.promise_tags), create_now)
        s = replace(s, last_run_at=cron_time, next_run_at=next_run(s.cron, now))
    return s


def test_a_model_catch_up_advancing_from_now_fails_the_cross_check(monkeypatch: pytest.MonkeyPatch) -> None:
    cross_check(THREE_MISSED)
    assert on_schedule_timeout_module.catch_up is catch_up
    monkeypatch.setattr(on_schedule_timeout_module, "catch_up", catch_up_advancing_from_now)
    with pytest.raises(AssertionError, match=r"model fired \[1735689660000\], encoding \[1735689660000, "
                                             r"1735689720000, 1735689780000\]"):
        cross_check(THREE_MISSED)


def test_a_drifted_encoding_fails_the_cross_check() -> None:
    """The other side: the encoding's own broken variant disagrees with the model."""
    plan = THREE_MISSED
    cron, promise_timeout, _ = plan.schedules[0]
    table = z3s.Cron.table(cron.table(plan.created_at, max(plan.nows)))
    stored = z3s.Stored(T0 + MINUTE, None, T0, promise_timeout)
    drifted = z3s.evaluate(table, z3s.Expand.concrete(uses_timestamp=True), "lean", stored, plan.nows[0],
                           bug="advance_from_wall_clock")
    with pytest.raises(AssertionError, match="model fired"):
        assert_same_firing("s0", model_run(plan)["s0"][0], drifted)

"""The schedules lockstep machine: the implementation holds against the model in both
profiles, and a campaign reaches every required spec branch."""

from __future__ import annotations

import copy

import pytest

from duespec.campaigns.run import run_campaign
from duespec.spec import schedules_properties as spec
from duespec.systems import get_system
from duespec.systems.schedules import SYSTEM, ImplTarget, ModelTarget, config_of

#: The default budget of `duespec check schedules`: what a default campaign must reach.
EXAMPLES, STEPS = 200, 50
DEPLOYED_TICK_FIRES_NO_TASK_TIMEOUTS = {"ENV-01.lease", "ENV-01.retry", "TO-04.redispatched", "TO-05.lapsed"}


@pytest.mark.parametrize("profile", SYSTEM.profiles)
def test_impl_holds_against_the_model_and_reaches_every_required_branch(profile: str) -> None:
    result = run_campaign(SYSTEM, SYSTEM.impl, profile=profile, examples=EXAMPLES, step_count=STEPS)
    assert result.ok, result.failure
    reached = set(result.coverage)
    unreachable: set[str] = set()
    if profile == "deployed":
        # The deployed server's tick fires no task timeouts (spec/schedules.md, the deployed
        # reading's deliberate deviations), so their branches are out of this profile's
        # reach, and a few task branches are rare in it: a second seed must reach them.
        unreachable = DEPLOYED_TICK_FIRES_NO_TASK_TIMEOUTS
        second = run_campaign(SYSTEM, SYSTEM.impl, profile=profile, seed=1, examples=EXAMPLES,
                              step_count=STEPS)
        assert second.ok, second.failure
        reached |= set(second.coverage)
    missed = sorted(SYSTEM.required_tags - unreachable - reached)
    assert not missed, f"[{profile}] never reached: {missed}"


def test_the_profiles_disagree_where_the_spec_is_ambiguous() -> None:
    """The two readings of X-05 are really different: the lean model is not a server oracle."""
    server_impl = ImplTarget()
    lean_model = ModelTarget()
    server_impl.reset({"profile": "server"})
    lean_model.reset({"profile": "lean"})
    create = {"id": "s", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}",
              "promiseTimeout": 60_000, "promiseParam": {"headers": {}, "data": None},
              "promiseTags": {"resonate:target": "poll://w"}}
    for target in (server_impl, lean_model):
        target.step("schedule.create", create, 1_735_689_600_000)
        target.step("schedule.timeout", {"id": "s"}, 1_735_689_600_000 + 10 * 60_000)
    assert server_impl.observe()["outbox"] != lean_model.observe()["outbox"]
    server_impl.close()


def test_the_system_is_registered() -> None:
    assert get_system("schedules") is SYSTEM
    assert SYSTEM.catalogue == "schedules.md"


@pytest.mark.parametrize("config", [
    {"profile": "cron"}, {"profile": "lean", "retry_timeout": -1}, {"profile": "lean", "retry_timeout": 0},
    {"profile": "lean", "retry_timeout": 1.5}, {"profile": "lean", "max_open": 3},
])
def test_a_bad_config_is_refused_by_both_targets(config: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        config_of(config)
    for target in (ModelTarget(), ImplTarget()):
        with pytest.raises(ValueError):
            target.reset(config)


# --- the properties can fail: each rejects a transition with the bug it names ------------

T0 = 1_735_689_600_000
MIN = 60_000
CREATE = {"id": "s", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}", "promiseTimeout": 0,
          "promiseParam": {"headers": {}, "data": None},
          "promiseTags": {"resonate:target": "poll://w"}}


def transition(target: ModelTarget, op: str, args: dict, now: int) -> tuple[dict, dict, dict]:
    before = copy.deepcopy(target.observe())
    result = target.step(op, args, now)
    return before, {"op": op, "args": args, "now": now, "result": result}, copy.deepcopy(target.observe())


def fresh(profile: str = "lean") -> ModelTarget:
    target = ModelTarget()
    target.reset({"profile": profile})
    return target


def test_catch_up_property_rejects_a_skipped_tick() -> None:
    target = fresh()
    target.step("schedule.create", CREATE, T0)
    before, step, after = transition(target, "schedule.timeout", {"id": "s"}, T0 + 3 * MIN)
    assert spec.catch_up_is_chronological(before, step, after, "lean")
    skipped = {**after, "promises": [p for p in after["promises"] if p["id"] != f"s.{T0 + 2 * MIN}"]}
    assert not spec.catch_up_is_chronological(before, step, skipped, "lean")
    wall_clock = {**after, "promises": [{**p, "timeoutAt": T0 + 3 * MIN} for p in after["promises"]]}
    assert not spec.catch_up_is_chronological(before, step, wall_clock, "lean")
    target = fresh()
    target.step("schedule.create", {**CREATE, "promiseTimeout": 10 * MIN}, T0)
    before, step, after = transition(target, "schedule.timeout", {"id": "s"}, T0 + 3 * MIN)
    assert spec.catch_up_is_chronological(before, step, after, "lean")
    assert not spec.catch_up_is_chronological(before, step, after, "server")  # created at cronTime


def test_expired_at_creation_property_rejects_a_dispatch() -> None:
    target = fresh()
    target.step("schedule.create", CREATE, T0)
    before, step, after = transition(target, "schedule.timeout", {"id": "s"}, T0 + MIN)
    assert spec.expired_at_creation_dispatches_nothing(before, step, after, "lean")
    dispatched = {**after, "outbox": [{"address": "poll://w",
                                       "message": {"kind": "execute", "taskId": f"s.{T0 + MIN}", "version": 0}}]}
    assert not spec.expired_at_creation_dispatches_nothing(before, step, dispatched, "lean")


def test_delete_and_create_properties_reject_their_bugs() -> None:
    target = fresh()
    target.step("schedule.create", CREATE, T0)
    before, step, after = transition(target, "schedule.delete", {"id": "s"}, T0)
    assert spec.delete_disarms(before, step, after, "lean")
    assert not spec.delete_disarms(before, step, {**after, "scheduleTimeouts": before["scheduleTimeouts"]}, "lean")
    target.step("schedule.create", CREATE, T0)
    before, step, after = transition(target, "schedule.create", {**CREATE, "cron": "0 * * * *"}, T0 + 1)
    assert spec.create_is_idempotent(before, step, after, "lean")
    overwritten = {**after, "schedules": [{**after["schedules"][0], "cron": "0 * * * *"}]}
    assert not spec.create_is_idempotent(before, step, overwritten, "lean")
    assert not spec.every_schedule_armed_at_next_run({**after, "scheduleTimeouts": []})


def test_the_coverage_report_says_why_a_requirement_is_never_reached() -> None:
    from collections import Counter

    from duespec.campaigns.report import coverage_report
    report = coverage_report(SYSTEM, "lean", Counter({"S-01.found": 1}))
    assert "never reached: X-04, by design: the end of time" in report.render()
    assert set(report.to_json()["never_reached_reasons"]) == {"X-04"}
    assert "(checked elsewhere, or not by this machine)" in report.render()  # the IDs without a reason

"""The schedules lockstep machine: the implementation holds against the model in both
profiles, and a campaign reaches every required spec branch."""

from __future__ import annotations

import copy

import pytest

from duespec.campaigns.report import report_for
from duespec.campaigns.run import run_campaign
from duespec.spec import schedules_properties as spec
from duespec.systems import get_system
from duespec.systems.schedules import SYSTEM, ImplTarget, ModelTarget
from duespec.systems.schedules.adapter import config_of

#: The default budget of `duespec check schedules`: what a default campaign must reach.
EXAMPLES, STEPS = 200, 50


@pytest.mark.parametrize("profile", [
    # One profile in make test; each takes 20-50 s at the default budget: make test-long runs the others.
    profile if profile == "deployed" else pytest.param(profile, marks=pytest.mark.long) for profile in SYSTEM.profiles])
def test_impl_holds_against_the_model_and_reaches_every_required_branch(profile: str) -> None:
    """Every branch the profile can take is taken; what it cannot take (SYSTEM.out_of_reach,
    e.g. task timeouts under `deployed`, whose tick fires none) is never taken, and every
    requirement the campaign leaves unreached has its reason in the report."""
    result = run_campaign(SYSTEM, SYSTEM.impl, profile=profile, examples=EXAMPLES, step_count=STEPS)
    assert result.ok, result.failure
    missed = sorted(SYSTEM.required_in(profile) - set(result.coverage))
    assert not missed, f"[{profile}] never reached: {missed}"
    report = report_for(SYSTEM, result)
    assert report.missing_required == []
    assert report.unexplained == [], f"[{profile}] never reached without a reason: {report.unexplained}"
    assert report.reached_out_of_reach == [], f"[{profile}] reached although declared out of reach"
    assert set(report.never_reached) == set(SYSTEM.reasons_in(profile))
    assert report.unknown == []


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
    {"profile": "lean", "retry_timeout": 2**63 - 253402300799999},
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


def test_the_coverage_report_gives_each_profile_its_reasons() -> None:
    from collections import Counter

    from duespec.campaigns.report import coverage_report
    lean = coverage_report(SYSTEM, "lean", Counter({"S-01.found": 1}))
    assert "never reached: DEP-02, by design: the deployed server's reading" in lean.render()
    assert "TO-04" in lean.unexplained  # reachable in lean: not reaching it is a gap
    assert "never reached, WITHOUT A REASON: " in lean.render()
    deployed = coverage_report(SYSTEM, "deployed", Counter({"S-01.found": 1, "ENV-01.promise": 1}))
    assert "TO-04" not in deployed.unexplained and "DEP-02" in deployed.unexplained
    assert deployed.reasons["TO-04"].startswith("profile deployed's tick is one pass")
    assert "ENV-01.lease" in deployed.excused_tags and "ENV-01.lease" not in deployed.missing_required
    assert "ENV-01.lease" in lean.missing_required
    assert "branches out of [deployed]'s reach: ENV-01.lease, ENV-01.retry: " in deployed.render()
    assert set(deployed.to_json()["never_reached_reasons"]) == {"TO-04", "TO-05", "X-05"}
    wrong = coverage_report(SYSTEM, "deployed", Counter({"TO-04.redispatched": 1, "ENV-01.lease": 1}))
    assert wrong.reached_out_of_reach == ["ENV-01.lease", "TO-04"]
    assert "(a wrong reason): ENV-01.lease, TO-04" in wrong.render()
    assert coverage_report(SYSTEM, "lean", Counter({"C-02.next_fire": 1})).unknown == []


@pytest.mark.parametrize("profile", SYSTEM.profiles)
def test_every_requirement_is_required_or_has_a_reason_in_every_profile(profile: str) -> None:
    """A requirement a profile's campaign leaves unreached is either a failure of the test
    above (one of its tags is required there) or printed with its reason: none is unexplained."""
    from duespec.campaigns.report import catalogue_ids, catalogue_text, requirement_of

    ids = catalogue_ids(catalogue_text(SYSTEM.catalogue))
    required = {requirement_of(tag) for tag in SYSTEM.required_in(profile)}
    reasons = SYSTEM.reasons_in(profile)
    assert [id for id in ids if id not in required and id not in reasons] == []
    assert required.isdisjoint(reasons), "a requirement both required and excused"
    # every excuse names a requirement of the catalogue, a profile that exists, and a real reason
    assert set(SYSTEM.out_of_reach) <= set(SYSTEM.profiles)
    for key, why in SYSTEM.out_of_reach.get(profile, {}).items():
        assert requirement_of(key) in ids and len(why) > 40, key
    for tag in SYSTEM.excused_tags_in(profile):
        assert tag in SYSTEM.required_tags and tag not in SYSTEM.required_in(profile), tag


def test_each_field_edge_is_refused_or_accepted_as_its_list_says() -> None:
    """SR-05 promises a 400 for every rejected form and a schedule for every accepted one:
    the dialect (spec/cron_dialect.py) and the implementation's parser agree with the lists."""
    from duespec.impl.cron import CronError, compile_cron
    from duespec.spec import cron_dialect
    from duespec.systems.schedules.ops import FIELD_EDGES
    for field, (rejected, accepted) in FIELD_EDGES.items():
        for cron in rejected:
            with pytest.raises(ValueError):
                cron_dialect.parse(cron)
            with pytest.raises(CronError):
                compile_cron(cron)
        for cron in accepted:
            cron_dialect.parse(cron)
            compile_cron(cron)

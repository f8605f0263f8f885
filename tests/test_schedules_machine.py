"""The schedules lockstep machine: the implementation holds against the model in both
profiles, and a campaign reaches every required spec branch."""

from __future__ import annotations

import pytest

from duespec.campaign import run_campaign
from duespec.systems import get_system
from duespec.systems.schedules import SYSTEM, ImplTarget, ModelTarget, config_of

#: Small enough for `make test`; `duespec check schedules` runs the full default budget.
EXAMPLES, STEPS = 150, 50


@pytest.mark.parametrize("profile", SYSTEM.profiles)
def test_impl_holds_against_the_model_and_reaches_every_required_branch(profile: str) -> None:
    result = run_campaign(SYSTEM, SYSTEM.impl, profile=profile, examples=EXAMPLES, step_count=STEPS)
    assert result.ok, result.failure
    missed = sorted(SYSTEM.required_tags - set(result.coverage))
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
    {"profile": "cron"}, {"profile": "lean", "retry_timeout": -1},
    {"profile": "lean", "retry_timeout": 1.5}, {"profile": "lean", "max_open": 3},
])
def test_a_bad_config_is_refused_by_both_targets(config: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        config_of(config)
    for target in (ModelTarget(), ImplTarget()):
        with pytest.raises(ValueError):
            target.reset(config)

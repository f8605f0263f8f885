"""The duebook lockstep campaign, at the defaults `duespec check duebook` uses, and the
JSON adapters it drives."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from duespec.campaigns.report import report_for
from duespec.campaigns.run import CampaignResult, run_campaign
from duespec.systems import get_system
from duespec.systems.duebook import SYSTEM, ImplTarget, ModelTarget
from duespec.targets.interface import Target

TARGETS = {"model": ModelTarget, "impl": ImplTarget}


def print_coverage(result: CampaignResult) -> None:
    print(f"\n{result.system}: {result.examples} examples, {result.steps} steps, {result.seconds:.1f}s")
    for tag in sorted(SYSTEM.required_tags):
        print(f"  {result.coverage[tag]:6d}  {tag}")


def unreached(coverage: Counter[str]) -> list[str]:
    return sorted(tag for tag in SYSTEM.required_tags if coverage[tag] == 0)


def test_the_registry_finds_duebook() -> None:
    assert get_system("duebook") is SYSTEM


def test_implementation_conforms_at_the_default_budget() -> None:
    result = run_campaign(SYSTEM, SYSTEM.impl)
    print_coverage(result)
    assert result.ok, result.failure
    assert unreached(result.coverage) == []
    # Deep runs (issue 8): hundreds of ids, and past the implementation's index run of 1024.
    assert max(run["ids allocated"] for run in result.depths) > 256
    assert max(run["open entries reached"] for run in result.depths) > 1024
    assert len(result.depths) == result.examples
    # Requests only JSON can send (D-27): the impl's wrong-keys path runs too.
    assert result.coverage["D-27.unknown_op"] and result.coverage["D-27.wrong_keys"]
    # What no step marks as reached is said why (the per-step properties, the APIs
    # outside the JSON contract), and nothing with a reason is reached after all.
    report = report_for(SYSTEM, result)
    assert report.unexplained == [], f"never reached without a reason: {report.unexplained}"
    assert set(report.never_reached) == set(SYSTEM.unreached_reasons)
    # Every malformation of every op (DR-09), many times each.
    assert report.matrix is not None and report.matrix.unreached == {}
    assert min(report.matrix.hits.values()) >= 5


@pytest.mark.long
def test_model_agrees_with_itself() -> None:
    result = run_campaign(SYSTEM, SYSTEM.model)
    assert result.ok, result.failure
    assert unreached(result.coverage) == []


def test_required_tags_are_every_contract_branch_of_the_model() -> None:
    from duespec.model.duebook import OPERATION_TAGS

    assert OPERATION_TAGS - SYSTEM.required_tags == {"D-01.invalid"}


@pytest.fixture(params=sorted(TARGETS))
def target(request: pytest.FixtureRequest) -> Target:
    fresh = TARGETS[request.param]()
    fresh.reset({"max_open": 2})
    return fresh


@pytest.mark.parametrize("op, args", [
    ("schedule", {"owner": "alice", "delay": True, "ttl": 0}),
    ("schedule", {"owner": "alice", "delay": 1.0, "ttl": 0}),
    ("schedule", {"owner": "", "delay": 1, "ttl": 0}),
    ("claim", {"id": "1"}),
    ("cancel", {"id": 1, "caller": None}),
    ("get", {"id": 2**63}),
    ("claimable", {"limit": -1}),
])
def test_wrong_typed_values_reach_the_system(target: Target, op: str, args: dict) -> None:
    before = target.observe()
    assert target.step(op, args, 5).get("error") == "invalid"
    assert target.observe() == before


def test_both_targets_speak_the_same_json(target: Target) -> None:
    assert target.step("schedule", {"owner": "alice", "delay": 2, "ttl": 3}, 10) == {
        "ok": {"id": 1, "owner": "alice", "due_at": 12, "expires_at": 15}}
    assert target.step("claim", {"id": 1}, 11)["error"] == "not_due"
    assert target.step("claimable", {"limit": 5}, 12) == {
        "ok": [{"id": 1, "owner": "alice", "due_at": 12, "expires_at": 15}]}
    assert target.observe() == {"max_open": 2, "next_id": 2, "open": [
        {"id": 1, "owner": "alice", "due_at": 12, "expires_at": 15}]}


def test_a_bad_config_is_refused_before_the_campaign(target: Target) -> None:
    with pytest.raises(ValueError):
        target.reset({"max_open": 2, "extra": 1})


class ListsNewestFirst(ModelTarget):
    """Shows its open deferrals newest first: a broken state that oracle and target agree
    on, so only the spec's state invariants (open_listed_by_id) can catch it."""

    def observe(self):  # type: ignore[no-untyped-def]
        state = super().observe()
        return {**state, "open": state["open"][::-1]}


def test_state_invariants_judge_each_new_state_even_when_most_steps_change_nothing() -> None:
    """check_properties skips the state invariants after a step that left the state as it
    was (and everything after a rule that took no step); a state a step changed is judged."""
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis.stateful import run_state_machine_as_test

    from duespec.bench.duebook import DuebookMachine
    from duespec.campaigns.lockstep import lockstep

    machine = lockstep(DuebookMachine, ListsNewestFirst, ListsNewestFirst, SYSTEM.config("seed"))
    with pytest.raises(AssertionError, match="open_listed_by_id broken in state"):
        run_state_machine_as_test(machine, settings=settings(
            max_examples=50, stateful_step_count=20, deadline=None, database=None,
            phases=[Phase.generate], suppress_health_check=list(HealthCheck)))


def test_the_model_adapter_observes_what_the_model_holds_even_when_it_reuses_rows() -> None:
    """ModelTarget reuses the rows of its last observe() while the book holds the very same
    Deferrals: a step, a deferral replaced under its id, and max_open or next_id edited
    behind its back must each show, and every state is a fresh object."""
    from duespec.model import duebook as model
    from duespec.targets.interface import same_json

    target = ModelTarget()
    target.reset({"max_open": 5})
    assert target.book is not None
    seen = []

    def observed_is_the_model() -> None:
        state = target.observe()
        assert same_json(state, model.observe(target.book))
        assert all(state is not other and state["open"] is not other["open"] for other in seen)
        seen.append(state)

    observed_is_the_model()
    for owner in ("a", "b", "c"):
        target.step("schedule", {"owner": owner, "delay": 0, "ttl": 0}, 0)
        observed_is_the_model()
    observed_is_the_model()  # nothing changed: the reused rows
    target.step("get", {"id": 2}, 0)
    observed_is_the_model()
    target.book.open[2] = dataclasses.replace(target.book.open[2], owner="z")
    observed_is_the_model()
    assert seen[-1]["open"][1]["owner"] == "z"
    target.book.max_open, target.book.next_id = 9, 7
    observed_is_the_model()
    assert "ok" in target.step("claim", {"id": 1}, 0)
    observed_is_the_model()
    assert [row["id"] for row in seen[-1]["open"]] == [2, 3]

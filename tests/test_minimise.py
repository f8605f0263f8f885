"""The trace minimiser after Hypothesis's shrink: shorter, never another failure, bounded."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from duespec.campaigns.classes import Masks
from duespec.judge import DivergenceClass, FindingKind

RESPONSE = FindingKind.RESPONSE
from duespec.campaigns.minimise import minimise, replay_failure
from duespec.campaigns.run import run_campaign
from duespec.coverage import collecting, reached
from duespec.impl import duebook as impl
from duespec.systems.duebook import SYSTEM, ImplTarget, ModelTarget

CONFIG = {"max_open": 2000}


class LateClaimsRefused(impl.Book):
    """Claim refuses (not_due) a deferral due at 7: a bug a deep opening may happen to show
    first, after hundreds of steps it does not need."""

    def claim(self, id: Any, now: Any) -> Any:
        try:
            due_at = impl.Book.get(self, id).due_at
        except impl.DuebookError:
            due_at = None
        if due_at == 7:
            raise impl.NotDue("planted")
        return super().claim(id, now)


def deep_trace() -> list[dict[str, Any]]:
    """An opening of 400 schedules with gets and listings in between, then a claim of the
    third deferral, the one due at 7."""
    requests: list[tuple[str, Any, int]] = []
    for n in range(400):
        requests.append(("schedule", {"owner": "alice", "delay": 7 if n == 2 else n % 5, "ttl": 0}, 0))
        if n % 3 == 0:
            requests.append(("get", {"id": n + 1}, 0))
        if n % 50 == 0:
            requests.append(("claimable", {"limit": 5}, 3))
    requests.append(("claim", {"id": 3}, 9))
    got = replay_failure(ModelTarget, partial(ImplTarget, LateClaimsRefused), CONFIG, requests, None, False)
    assert got is not None
    return got[0]


def test_a_long_failing_trace_shrinks_to_a_short_one_of_the_same_class() -> None:
    steps = deep_trace()
    wanted = replay_failure(ModelTarget, partial(ImplTarget, LateClaimsRefused), CONFIG,
                            [(s["op"], s["args"], s["now"]) for s in steps], None, True)[1].divergence_class
    assert (wanted.kind, wanted.op, wanted.requirements) == (RESPONSE, "claim", ("D-08",))
    shorter = minimise(ModelTarget, partial(ImplTarget, LateClaimsRefused), CONFIG, steps, wanted)
    assert shorter is not None
    assert len(shorter.steps) <= 4  # three schedules (id 3 is the one due at 7) and the claim
    assert shorter.error.divergence_class == wanted
    # What it hands back fails the same way when replayed with the state after every step.
    again = replay_failure(ModelTarget, partial(ImplTarget, LateClaimsRefused), CONFIG,
                           [(s["op"], s["args"], s["now"]) for s in shorter.steps], None, True)
    assert again is not None and again[1].divergence_class == wanted
    assert [s["i"] for s in shorter.steps] == list(range(len(shorter.steps)))
    assert shorter.steps[-1]["op"] == "claim"


def test_a_class_the_trace_does_not_show_is_left_alone() -> None:
    steps = deep_trace()
    other = DivergenceClass(RESPONSE, "get", ("D-14",), "$")
    assert minimise(ModelTarget, partial(ImplTarget, LateClaimsRefused), CONFIG, steps, other) is None


def test_a_trace_that_passes_is_never_minimised_into_a_failure() -> None:
    steps = deep_trace()
    wanted = DivergenceClass(RESPONSE, "claim", ("D-08",), "$.error", ("$.error", "$.ok"))
    assert minimise(ModelTarget, ImplTarget, CONFIG, steps, wanted) is None


def test_a_masked_class_is_not_what_the_minimiser_keeps() -> None:
    steps = deep_trace()
    wanted = DivergenceClass(RESPONSE, "claim", ("D-08",), "$.error", ("$.error", "$.ok"))
    masks = Masks("seed")
    masks.add(wanted)
    assert minimise(ModelTarget, partial(ImplTarget, LateClaimsRefused), CONFIG, steps, wanted, masks) is None


def test_no_time_means_no_minimising() -> None:
    steps = deep_trace()
    wanted = DivergenceClass(RESPONSE, "claim", ("D-08",), "$.error", ("$.error", "$.ok"))
    assert minimise(ModelTarget, partial(ImplTarget, LateClaimsRefused), CONFIG, steps, wanted,
                    max_seconds=0) is None


def test_replays_add_nothing_to_the_campaigns_coverage() -> None:
    steps = deep_trace()
    wanted = DivergenceClass(RESPONSE, "claim", ("D-08",), "$.error", ("$.error", "$.ok"))
    with collecting() as outside:
        reached("outside")
        minimise(ModelTarget, partial(ImplTarget, LateClaimsRefused), CONFIG, steps, wanted)
    assert outside == {"outside": 1}


class ClaimsRefusedPastId1000(impl.Book):
    """A bug only a deep run reaches: claims of ids above 1000 are refused as not due."""

    def claim(self, id: Any, now: Any) -> Any:
        if type(id) is int and id > 1000:
            raise impl.NotDue("planted")
        return super().claim(id, now)


@pytest.mark.long
def test_the_campaign_reports_the_minimised_run() -> None:
    result = run_campaign(SYSTEM, partial(ImplTarget, ClaimsRefusedPastId1000))
    assert not result.ok
    assert result.counterexample[-1]["op"] == "claim"
    # The claimed id (past 1000) needs that many schedules first; little else is left.
    assert len(result.counterexample) <= result.counterexample[-1]["args"]["id"] + 16
    assert result.failure.startswith("Divergence: step ")
    assert f"step {len(result.counterexample) - 1}: claim" in result.failure

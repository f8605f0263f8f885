"""A slow target is a finding, not a hang (issue 29, item 3).

A call past --timeout is one class per op ("target too slow: OP took > Ns (--timeout)"),
its shrinking is bounded (run.SLOW_SHRINK_RUNS), the reset-leak probe does not send
the slow call again and calls itself inconclusive rather than inventing a class, and the
campaign goes on to find the target's other classes.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from duespec.campaigns import run as run_module
from duespec.campaigns.classes import Masks
from duespec.campaigns.reset_leak import probe
from duespec.cli import main
from duespec.judge import DivergenceClass, FindingKind, raised_verdict
from duespec.systems import get_system
from duespec.systems.duebook import ModelTarget
from duespec.targets.deadline import deadline
from duespec.targets.interface import TargetTooSlow
from duespec.targets.resolve import WatchedFactory

DUEBOOK = get_system("duebook")
#: The bound the planted target's slow op passes, and how long it sleeps.
TIMEOUT, SLEEP = 0.2, 5.0


class SlowListing(ModelTarget):
    """Two planted bugs: `expirable` never answers within the timeout, and a claim of a
    deferral not due yet answers not_found (not not_due). Counts its slow calls."""

    slow_calls = 0

    def step(self, op: str, args: dict[str, Any], now: int) -> dict[str, Any]:
        if op == "expirable":
            type(self).slow_calls += 1
            time.sleep(SLEEP)
        response = super().step(op, args, now)
        if op == "claim" and response.get("error") == "not_due":
            return {"error": "not_found", "message": "nothing claimable with this id"}
        return response


class SlowOnSecondPass(ModelTarget):
    """Answers a run the first time, and `get` runs past the timeout the second: a
    reset-leak probe must say inconclusive, not 'state survives reset'."""

    resets = 0

    def reset(self, config: dict[str, Any]) -> None:
        type(self).resets += 1
        super().reset(config)

    def step(self, op: str, args: dict[str, Any], now: int) -> dict[str, Any]:
        if op == "get" and type(self).resets % 2 == 0:
            time.sleep(SLEEP)
        return super().step(op, args, now)


class BusyAfterSlow(ModelTarget):
    """`expirable` runs past the timeout, and the target is still busy with it when the
    next call comes, which then runs past it too, as one HTTP server's lock makes it under
    load. Raised, not slept: the slowness is the same on any machine."""

    busy = False

    def reset(self, config: dict[str, Any]) -> None:
        self.still_busy()
        super().reset(config)

    def step(self, op: str, args: dict[str, Any], now: int) -> dict[str, Any]:
        self.still_busy()
        if op == "expirable":
            type(self).busy = True
            raise TargetTooSlow(f"expirable did not return within {TIMEOUT:g}s (--timeout)", seconds=TIMEOUT)
        return super().step(op, args, now)

    def still_busy(self) -> None:
        if type(self).busy:
            type(self).busy = False
            raise TargetTooSlow(f"did not return within {TIMEOUT:g}s (--timeout): still busy", seconds=TIMEOUT)


def test_a_call_past_its_deadline_is_too_slow_and_one_class_per_op() -> None:
    with pytest.raises(TargetTooSlow) as raised:
        with deadline(0.05, "step tick"):
            time.sleep(1.0)
    assert raised.value.seconds == 0.05
    step = {"i": 3, "op": "tick", "args": {}, "now": 2_678_400_000, "result": {}}
    verdict = raised_verdict(step, "tick", raised.value, ("ENV-01",))
    found = verdict.divergence_class
    assert found.kind == FindingKind.TARGET_TOO_SLOW and found.kind.outcome == "target_error"
    assert found.label() == "target too slow: tick took > 0.05s (--timeout) [ENV-01]"
    masks = Masks("lean")
    masks.add(found)
    other = raised_verdict(step, "tick", TargetTooSlow("again", seconds=0.05), ("S-01",), masks)
    assert other.ends_run  # the same op slow again: masked, and its run ends there
    elsewhere = raised_verdict({**step, "op": "schedule.get"}, "schedule.get",
                               TargetTooSlow("x", seconds=0.05), (), masks)
    assert isinstance(elsewhere.divergence_class, DivergenceClass)  # another op: a class of its own


def test_the_reset_leak_probe_is_inconclusive_when_a_replay_runs_past_the_timeout() -> None:
    factory = WatchedFactory(SlowOnSecondPass, TIMEOUT, "SlowOnSecondPass")
    SlowOnSecondPass.resets = 0
    steps = [{"i": 0, "op": "schedule", "args": {"owner": "Alice", "delay": 5, "ttl": 0}, "now": 0},
             {"i": 1, "op": "get", "args": {"id": 1}, "now": 1}]
    checked = probe(DUEBOOK.model, factory, DUEBOOK.config(DUEBOOK.profiles[0]), steps)
    assert checked.leak is None
    assert checked.inconclusive is not None and "past --timeout" in checked.inconclusive
    assert SlowOnSecondPass.resets == 2  # the third pass, beside the model, never ran


@pytest.mark.long
def test_a_slow_op_is_one_class_shrunk_under_a_budget_and_the_campaign_goes_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_module, "SLOW_SHRINK_RUNS", 3)
    SlowListing.slow_calls = 0
    factory = WatchedFactory(SlowListing, TIMEOUT, "SlowListing")
    result = run_module.run_campaign(DUEBOOK, factory, examples=30, step_count=20, max_classes=4)
    labels = [finding.label for finding in result.findings]
    slow = [finding for finding in result.findings if finding.kind == FindingKind.TARGET_TOO_SLOW]
    assert [finding.label.split(" [")[0] for finding in slow] == [
        f"target too slow: expirable took > {TIMEOUT:g}s (--timeout)"], labels
    assert any(label.startswith("response claim $.error") for label in labels), labels
    assert slow[0].counterexample[-1]["op"] == "expirable"
    # Bounded: the shrinking budget's worth of slow calls, one per run of every later search
    # (a masked slow call ends its run), and never one for the reset-leak probe.
    assert SlowListing.slow_calls <= 3 + 1 + 5 + result.examples, (SlowListing.slow_calls, result.examples)
    assert not any(f.kind in (FindingKind.STATE_SURVIVES_RESET, FindingKind.NOT_REPRODUCIBLE)
                   for f in result.findings), labels


@pytest.mark.long
def test_conform_reports_the_slow_class_and_prints_progress_meanwhile(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_module, "SLOW_SHRINK_RUNS", 3)
    code = main(["conform", "duebook", "--target", "tests.test_slow_target:SlowListing",
                 "--timeout", str(TIMEOUT), "--examples", "30", "--steps", "20", "--max-classes", "4",
                 "--progress", "1", "--no-coverage", "--trace-dir", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 1
    assert f"target too slow: expirable took > {TIMEOUT:g}s (--timeout)" in out
    assert "not replayed here, since each replay waits the whole timeout" in out
    assert "response claim $.error" in out
    assert "  ... class 1 found:" in err and "  ... running:" in err


def test_a_target_still_busy_with_a_slow_call_is_too_slow_never_not_reproducible() -> None:
    """Hypothesis calls the slow run flaky when its replay fails elsewhere (the target still
    busy) or ends earlier: that is the slowness, reported as the too-slow class with the
    shortest failing run seen, never as a target whose answers change."""
    BusyAfterSlow.busy = False
    result = run_module.run_campaign(DUEBOOK, WatchedFactory(BusyAfterSlow, 10.0, "BusyAfterSlow"),
                                     examples=30, step_count=20, max_classes=4)
    labels = [finding.label for finding in result.findings]
    assert labels and all(finding.kind == FindingKind.TARGET_TOO_SLOW for finding in result.findings), labels
    first = result.findings[0]
    assert first.label.startswith(f"target too slow: expirable took > {TIMEOUT:g}s"), labels
    assert first.counterexample[-1]["op"] == "expirable"
    assert "its replays differed" in first.failure

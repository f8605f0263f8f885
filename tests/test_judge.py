"""One judge: every path that checks a target names one planted bug the same way.

A target with one bug (its `get` answers the owner with a "!" added) is checked by each
path duespec has: a campaign's lockstep runs, the minimiser's replay, a long run, `duespec
replay` of the campaign's trace, and the reset-leak probe. Each must report the same
divergence class (kind, op, first differing path) with the same requirement IDs, because
each asks duespec.judge and none compares on its own.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from duespec.campaigns.long_run import run_long
from duespec.campaigns.minimise import replay_failure
from duespec.campaigns.reset_leak import probe
from duespec.campaigns.run import run_campaign, write_failure_trace
from duespec.judge import Difference, DivergenceClass, FindingKind, StepJudge, trusts
from duespec.systems import get_system
from duespec.targets.interface import TargetError, fast_checks
from duespec.targets.resolve import WatchedTarget, resolve, unwrapped
from duespec.traces.replay import replay

DUEBOOK = get_system("duebook")
ROOT = Path(__file__).resolve().parent.parent


class LoudGet:
    """duespec's own duebook, except that `get` adds "!" to the owner it answers."""

    def __init__(self) -> None:
        self.inner = DUEBOOK.impl()

    def reset(self, config: dict[str, Any]) -> None:
        self.inner.reset(config)

    def step(self, op: str, args: dict[str, Any], now: int) -> dict[str, Any]:
        response = self.inner.step(op, args, now)
        if op == "get" and isinstance(response.get("ok"), dict):
            return {"ok": {**response["ok"], "owner": response["ok"]["owner"] + "!"}}
        return response

    def observe(self) -> dict[str, Any]:
        return self.inner.observe()


def test_every_path_names_one_planted_bug_alike(tmp_path: Path) -> None:
    campaign = run_campaign(DUEBOOK, LoudGet, examples=300)
    assert not campaign.ok
    finding = campaign.findings[0]
    found = finding.divergence_class
    assert found is not None and found.kind == FindingKind.RESPONSE and found.op == "get"
    assert found.path == "$.ok.owner" and found.requirements, found.label()

    requests = [(step["op"], step["args"], step["now"]) for step in finding.counterexample]
    minimised = replay_failure(DUEBOOK.model, LoudGet, finding.config, requests, None, True)
    assert minimised is not None
    assert _named(minimised[1]) == _named_class(found)

    long = run_long(DUEBOOK, LoudGet, steps=3000, seed=1)
    assert long.findings, "the long run never called get on an open deferral"
    assert _named_class(long.findings[0].divergence_class) == _named_class(found)

    trace = write_failure_trace(campaign, tmp_path, target="LoudGet", producer="test")
    replayed = replay(trace, "LoudGet", factory=LoudGet)
    assert not replayed.confirmed and replayed.difference is not None
    assert _named(replayed.difference) == _named_class(found)

    probed = probe(DUEBOOK.model, LoudGet, finding.config, finding.counterexample)
    assert probed.leak is None and probed.reproduced is not None
    assert _named(probed.reproduced) == _named_class(found)


def _named(difference: Difference) -> tuple[Any, ...]:
    return _named_class(difference.divergence_class)


def _named_class(found: DivergenceClass | None) -> tuple[Any, ...]:
    assert found is not None
    return found.kind, found.op, found.path, found.requirements


def test_a_raise_is_named_by_its_site_on_every_path() -> None:
    """A target that raises is classed where it raised: the same site from a campaign's
    run and from a long run (they once named it differently)."""

    class Crashes(LoudGet):
        def step(self, op: str, args: dict[str, Any], now: int) -> dict[str, Any]:
            if op == "get":
                raise ZeroDivisionError("planted")
            return self.inner.step(op, args, now)

    campaign = run_campaign(DUEBOOK, Crashes, examples=300)
    long = run_long(DUEBOOK, Crashes, steps=3000, seed=1)
    sites = {result.findings[0].divergence_class.path for result in (campaign, long)}  # type: ignore[union-attr]
    assert len(sites) == 1 and next(iter(sites)).startswith("ZeroDivisionError at test_judge.py:"), sites
    assert campaign.findings[0].kind == long.findings[0].kind == FindingKind.TARGET_RAISED


def test_only_duespecs_own_adapters_are_trusted_with_their_fast_checks() -> None:
    """The one trust rule: a target defined outside duespec.systems is observed and
    compared, whatever hooks it offers."""

    class Vouches(LoudGet):
        def state_is(self, want: Any) -> bool:
            return True  # would hide every state difference if it were believed

    class OwnBoundary(WatchedTarget):
        """A wrapper of someone else's, however much it looks like duespec's."""

    assert trusts(DUEBOOK.impl())
    assert not trusts(Vouches())
    # duespec's own call boundary is looked through, to what it wraps, and no further.
    assert trusts(WatchedTarget(DUEBOOK.impl(), 5.0))
    assert trusts(WatchedTarget(WatchedTarget(DUEBOOK.impl(), 5.0), 5.0))
    assert not trusts(WatchedTarget(Vouches(), 5.0))
    assert not trusts(OwnBoundary(DUEBOOK.impl(), 5.0))
    for vouching in (Vouches(), WatchedTarget(Vouches(), 5.0)):
        judge = StepJudge(DUEBOOK.model(), vouching)
        judge.reset(DUEBOOK.config(DUEBOOK.profiles[0]))
        judge.step("schedule", {"owner": "a", "delay": 0, "ttl": 0}, 0)
        unwrapped(judge.target).inner.reset(DUEBOOK.config(DUEBOOK.profiles[0]))  # type: ignore[attr-defined]
        verdict = judge.state()
        assert isinstance(verdict, Difference) and verdict.kind == FindingKind.STATE, vouching


def test_the_boundary_passes_the_trusted_fast_checks_through_under_its_deadline() -> None:
    """`duespec check duebook` resolves `impl` behind the per-call deadline; the judge
    still uses the adapter's own checks (no state built per step), and they are watched."""
    watched = resolve(DUEBOOK, "impl", timeout=5.0)()
    judge = StepJudge(DUEBOOK.model(), watched)
    judge.reset(DUEBOOK.config(DUEBOOK.profiles[0]))
    assert judge.check is not None  # the adapter's fused step check, through the boundary
    observed = []
    watched.observe = lambda: observed.append(1) or {}  # type: ignore[method-assign]
    for now, (op, args) in enumerate([("schedule", {"owner": "a", "delay": 5, "ttl": 9}),
                                      ("get", {"id": 1}), ("claim", {"owner": "b"})]):
        assert judge.step(op, args, now)[1] is None
        assert judge.state() is None
    assert observed == []  # every state was vouched for without being built

    assert fast_checks(WatchedTarget(LoudGet(), 5.0)) is None  # nothing to pass through

    slow = DUEBOOK.impl()
    slow.state_is = lambda want: time.sleep(30)  # type: ignore[method-assign]
    with pytest.raises(TargetError, match="observe"):
        WatchedTarget(slow, 0.2).state_is({})  # type: ignore[misc]


def test_no_harness_module_probes_a_target_for_its_hooks() -> None:
    """The Target protocol names every optional hook (targets/interface.py); only targets/
    reads them, so no other module decides on its own what a target offers."""
    probing = re.compile(r"getattr\([^)]*(target|subject|side)")
    offenders = [f"{path.relative_to(ROOT)}:{number}"
                 for path in (ROOT / "duespec").rglob("*.py") if "targets" not in path.parts
                 for number, line in enumerate(path.read_text().splitlines(), 1) if probing.search(line)]
    assert offenders == []

"""Every trace under traces/ replays against the model and the implementation.

A failing campaign's trace dropped into traces/<system>/ becomes a regression test here
with no further work. The rest checks that replay really reports what diverged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from duespec.campaigns.run import run_campaign, write_failure_trace
from duespec.cli import UsageError
from duespec.cli import main as cli_main
from duespec.traces.replay import replay
from duespec.systems import get_system
from duespec.targets.interface import Json
from duespec.traces.format import TraceError, TraceHeader, read_trace, write_trace

ROOT = Path(__file__).resolve().parent.parent
CORPUS = sorted((ROOT / "traces").rglob("*.jsonl"))


def test_corpus_covers_every_system_with_small_files() -> None:
    systems = {path.parent.name for path in CORPUS}
    assert systems == {"duebook", "schedules"}
    for path in CORPUS:
        assert path.stat().st_size < 50_000, f"{path} is too big for the corpus"
        header, _ = read_trace(path)
        assert header.system == path.parent.name, f"{path} is filed under the wrong system"


@pytest.mark.parametrize("target", ["model", "impl"])
@pytest.mark.parametrize("trace", CORPUS, ids=[f"{p.parent.name}/{p.name}" for p in CORPUS])
def test_corpus_trace_replays(trace: Path, target: str) -> None:
    result = replay(trace, target)
    assert result.confirmed, result.report()
    _, steps = read_trace(trace)
    assert result.steps == sum(1 for _ in steps) > 0


# --- replay reports the first divergence ---------------------------------------------------

class LateClock:
    """The implementation, except that claims see the clock one tick late: an off-by-one."""

    def __init__(self) -> None:
        self.inner = get_system("duebook").impl()

    def reset(self, config: dict[str, Json]) -> None:
        self.inner.reset(config)

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        return self.inner.step(op, args, now - 1 if op == "claim" else now)

    def observe(self) -> dict[str, Json]:
        return self.inner.observe()

    def close(self) -> None:
        self.inner.close()


class ForgetsOpenEntries(LateClock):
    """Right answers, wrong state: its observe() loses the last open deferral."""

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        return self.inner.step(op, args, now)

    def observe(self) -> dict[str, Json]:
        state = self.inner.observe()
        return {**state, "open": state["open"][:-1]}


class Crashes(LateClock):
    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        if op == "claim":
            raise RuntimeError("connection reset")
        return self.inner.step(op, args, now)


WINDOW = ROOT / "traces" / "duebook" / "window_edges.jsonl"


def test_first_response_divergence_names_step_op_args_now_and_both_answers() -> None:
    result = replay(WINDOW, "late-clock", factory=LateClock)
    assert not result.confirmed
    assert result.step is not None and result.step["i"] == 2 and result.steps == 3
    text = result.report()
    assert "at step 2" in text
    assert 'step 2: claim {"id": 1} at now=110' in text
    assert 'expected response: {"ok": {"due_at": 110' in text
    assert 'actual response:   {"error": "not_due"}' in text
    # The state difference after the step: the model consumed id 1, the target kept it.
    assert "$.open" in text


def test_state_divergence_is_reported_after_the_step_that_caused_it() -> None:
    result = replay(WINDOW, "forgetful", factory=ForgetsOpenEntries, state_every=1)
    assert not result.confirmed and result.step is not None and result.step["i"] == 0
    assert "state differs after the step" in result.report()
    assert "$.open" in result.report()


def test_a_state_that_differs_at_a_checkpoint_is_traced_back_to_its_first_step(tmp_path: Path) -> None:
    """By default states are compared at checkpoints (here only the end, step 3); a
    difference there is narrowed down by a second pass to the step that caused it."""
    header, steps = read_trace(WINDOW)
    trace = write_trace(tmp_path / "open_at_the_end.jsonl", header, list(steps)[:4])
    result = replay(trace, "forgetful", factory=ForgetsOpenEntries)
    assert not result.confirmed and result.step is not None and result.step["i"] == 0, result.report()
    assert "state differs after the step" in result.report()
    assert result.states_compared == 0 and result.responses_compared >= 4
    assert replay(trace, "impl").states_compared == 1


def test_a_crashing_target_is_a_finding_not_a_traceback() -> None:
    result = replay(WINDOW, "crashes", factory=Crashes)
    assert not result.confirmed and result.step is not None and result.step["i"] == 1
    assert "the target raised: RuntimeError: connection reset" in result.report()


def test_a_failing_campaign_trace_is_a_regression_test(tmp_path: Path) -> None:
    """The loop the corpus exists for: campaign finds a bug, its trace replays the bug."""
    campaign = run_campaign(get_system("duebook"), LateClock, seed=0, examples=100, step_count=20)
    assert not campaign.ok
    trace = write_failure_trace(campaign, tmp_path, target="late-clock", producer="test")
    against_bug = replay(trace, "late-clock", factory=LateClock)
    assert not against_bug.confirmed and against_bug.step is not None
    assert against_bug.step["op"] == "claim"
    _, steps = read_trace(trace)
    assert against_bug.step["i"] == len(list(steps)) - 1  # the shrunk run ends at the bug
    assert replay(trace, "impl").confirmed


def _tampered(tmp_path: Path, change: Any) -> Path:
    header, steps = read_trace(WINDOW)
    return write_trace(tmp_path / "tampered.jsonl", header, (change(s) for s in steps))


def test_a_result_the_model_no_longer_gives_is_reported_as_spec_drift(tmp_path: Path) -> None:
    trace = _tampered(tmp_path, lambda s: {**s, "result": {"error": "not_due"}} if s["i"] == 2 else s)
    for target in ("impl", "model"):
        result = replay(trace, target)
        assert not result.confirmed and result.step is not None and result.step["i"] == 2
    assert "does not follow the current spec" in replay(trace, "impl").report()
    assert 'expected response: {"error": "not_due"}' in replay(trace, "model").report()


def test_a_recorded_state_is_checked_too(tmp_path: Path) -> None:
    wrong = {"max_open": 3, "next_id": 99, "open": []}
    trace = _tampered(tmp_path, lambda s: {**s, "state": wrong} if s["i"] == 4 else s)
    result = replay(trace, "model")
    assert not result.confirmed and result.step is not None and result.step["i"] == 4
    assert "$.next_id: expected 99, actual 3" in result.report()


class CannotReset(LateClock):
    def reset(self, config: dict[str, Json]) -> None:
        raise ConnectionError("refused")


def test_a_config_the_model_refuses_makes_the_trace_malformed(tmp_path: Path) -> None:
    header = TraceHeader("duebook", "seed", {"max_open": 0})
    trace = write_trace(tmp_path / "t.jsonl", header, [])
    for target in ("model", "impl"):
        with pytest.raises(TraceError, match=r"t.jsonl:1: header: the model refuses config"):
            replay(trace, target)


def test_a_target_that_cannot_reset_is_unusable() -> None:
    """Issue 7: a failure on the first reset is an unusable target (exit 2), not a finding."""
    with pytest.raises(UsageError, match="target unusable: .*ConnectionError: refused"):
        replay(WINDOW, "cannot-reset", factory=CannotReset)


def test_replay_command_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["replay", str(WINDOW)]) == 0
    assert "CONFIRMED" in capsys.readouterr().out
    drifted = _tampered(tmp_path, lambda s: {**s, "result": {"error": "expired"}} if s["i"] == 1 else s)
    assert cli_main(["replay", str(drifted), "--target", "model"]) == 1
    assert "DIVERGES" in capsys.readouterr().out
    broken = tmp_path / "broken.jsonl"
    broken.write_text(WINDOW.read_text().replace('"i": 2,', '"i": "2",'))
    assert cli_main(["replay", str(broken)]) == 2
    assert f'{broken}:4: step: "i" must be an integer, got the string "2"' in capsys.readouterr().err
    assert cli_main(["replay", str(tmp_path / "absent.jsonl")]) == 2
    assert cli_main(["replay", str(WINDOW), "--target", "no-such-target"]) == 2


def test_replay_command_takes_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    header = TraceHeader("duebook", "seed", {"max_open": 1})
    write_trace(tmp_path / "a" / "one.jsonl", header, [{"i": 0, "op": "get", "args": {"id": 1}, "now": 0,
                                                        "result": {"error": "not_found"}}])
    write_trace(tmp_path / "two.jsonl", header, [])
    assert cli_main(["replay", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("CONFIRMED") == 2
    assert json.loads((tmp_path / "two.jsonl").read_text().splitlines()[0])["system"] == "duebook"

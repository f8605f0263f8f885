"""conform prints a replay command for a leak across reset only when replaying its trace
(the steps, a reset, the same steps) on a fresh target fails: a leak that needs more runs
before it than the trace's two gets no command that would say CONFIRMED."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from duespec.cli import main
from duespec.traces.format import is_reset, read_trace

ROOT = Path(__file__).resolve().parents[1]


def program(tmp_path: Path, body: str) -> str:
    """A stdio target: the skeleton of docs/protocol.md around a MyBook class."""
    doc = (ROOT / "docs" / "protocol.md").read_text()
    skeleton = doc.split("## 9. Skeleton", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "target.py"
    script.write_text("from duespec.systems.duebook import ModelTarget\n\n" + body + "\n\n" + skeleton)
    return f"stdio:{sys.executable} {script}"


def conform(target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], *, examples: int,
            steps: int) -> tuple[int, str]:
    """`duespec conform duebook` against `target`, failure traces under tmp_path/failures:
    its exit code and what it printed."""
    code = main(["conform", "duebook", "--target", target, "--examples", str(examples), "--steps", str(steps),
                 "--progress", "0", "--no-coverage", "--trace-dir", str(tmp_path / "failures")])
    return code, capsys.readouterr().out


def test_a_leak_a_fresh_program_does_not_show_gets_no_replay_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """From its sixth run on, every other run of the program hands out ids 100 higher: the
    campaign sees it, a fresh program's two runs do not."""
    target = program(tmp_path, (
        "RUNS = [0]\n\n"
        "class MyBook(ModelTarget):\n"
        "    def __init__(self, config):\n"
        "        super().__init__()\n"
        "        RUNS[0] += 1\n"
        "        self.reset(config)\n\n"
        "    def step(self, op, args, now):\n"
        "        response = super().step(op, args, now)\n"
        "        if op == 'schedule' and 'ok' in response and RUNS[0] >= 6 and RUNS[0] % 2 == 0:\n"
        "            response = {'ok': {**response['ok'], 'id': response['ok']['id'] + 100}}\n"
        "        return response\n"))
    code, out = conform(target, tmp_path, capsys, examples=40, steps=20)
    assert code == 1 and "the target's state survives reset" in out, out
    assert ("a fresh target does not show the leak (both runs of the trace pass, so the leak needs more "
            "runs before it than the trace's two)") in out
    assert "duespec replay" not in out and "duespec conform duebook" in out
    [trace] = (tmp_path / "failures").glob("*.jsonl")
    assert sum(1 for line in read_trace(trace)[1] if is_reset(line)) == 1
    assert main(["replay", str(trace), "--target", target]) == 0  # what the printed command would say


def test_a_divergence_a_fresh_program_does_not_show_gets_no_replay_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A program that keeps the config of its first reset: the campaign's runs draw other
    caps and all see the first one, both passes of the leak probe alike, so the leak shows
    as a plain divergence. A fresh program resets to the trace's config and passes, so the
    replay command would say CONFIRMED: it is not printed, and the report says why."""
    target = program(tmp_path, (
        "FIRST = []\n\n"
        "class MyBook(ModelTarget):\n"
        "    def __init__(self, config):\n"
        "        super().__init__()\n"
        "        self.reset(config)\n\n"
        "    def reset(self, config):\n"
        "        FIRST.append(config)\n"
        "        super().reset(FIRST[0])\n"))
    code, out = conform(target, tmp_path, capsys, examples=50, steps=10)
    assert code == 1 and "max_open" in out, out
    assert "replayed on a fresh target, the trace does not fail (every step of the trace passes)" in out
    assert "the target's state survives reset" in out
    assert "duespec replay" not in out and "duespec conform duebook" in out
    traces = sorted((tmp_path / "failures").glob("*.jsonl"))
    # A class whose trace cannot be written (a request whose op is a number, at seed 0)
    # leaves no empty file behind: every file is a trace the report names.
    assert traces and len(traces) == out.count("\ntrace: ")
    assert all(main(["replay", str(trace), "--target", target]) == 0 for trace in traces)

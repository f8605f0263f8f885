"""A campaign killed while it writes failure traces never leaves one that is empty or half
written under its final name (docs/traces.md), and the next write into the folder removes
what the killed writer left (its `.partial`).

The writer (tests/trace_writer_victim.py) writes one 2,000-step failure trace after another
through `write_failure_trace`, the function every campaign uses; each round SIGKILLs it at a
random moment (after it is ready, within about ten traces' time), so kills land before,
during and after writes, between the fsync and the link, and between the link and the
removal of the partial. After every kill each trace under a final name is whole; at the end
`duespec replay` of the folder never exits 2, and after one more write no partial of a dead
writer is left."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from duespec.cli import main

ROOT = Path(__file__).resolve().parent.parent
VICTIM = ROOT / "tests" / "trace_writer_victim.py"
STEPS = 2000


def start(folder: Path, count: int | None = None) -> subprocess.Popen[str]:
    argv = [sys.executable, str(VICTIM), str(folder), str(STEPS), *([str(count)] if count else [])]
    victim = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert victim.stdout is not None and victim.stdout.readline().strip() == "ready"
    return victim


def assert_whole(folder: Path) -> int:
    """Every trace under a final name has its header and all its steps, newline-ended."""
    traces = sorted(folder.glob("*.jsonl"))
    for trace in traces:
        data = trace.read_bytes()
        assert data.endswith(b"\n") and data.count(b"\n") == STEPS + 1, f"{trace.name}: {len(data)} bytes"
    return len(traces)


def kill_rounds(folder: Path, kills: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    dead = []
    for _ in range(kills):
        victim = start(folder)
        time.sleep(rng.uniform(0, 0.4))
        victim.send_signal(signal.SIGKILL)
        victim.wait(30)
        victim.stdout.close()  # type: ignore[union-attr]
        dead.append(victim.pid)
        assert_whole(folder)
        for trace in sorted(folder.glob("*.jsonl"))[:-3]:  # keep the replay at the end short
            trace.unlink()
    return dead


def check_after_kills(folder: Path, dead: list[int], capsys: pytest.CaptureFixture[str]) -> None:
    leftovers = [p.name for p in folder.glob("*.partial")]
    finisher = start(folder, count=1)  # the next write into the folder
    assert finisher.wait(60) == 0
    finisher.stdout.close()  # type: ignore[union-attr]
    assert_whole(folder) >= 1
    stale = [p.name for p in folder.glob("*.partial") if int(p.name.split(".")[-2]) in dead]
    assert stale == [], f"partials of killed writers left after the next write: {stale} (before: {leftovers})"
    assert main(["replay", str(folder), "--target", "model"]) == 0, capsys.readouterr().err[-2000:]


@pytest.mark.long
def test_a_few_kills_leave_no_half_trace_and_the_next_write_sweeps(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dead = kill_rounds(tmp_path, kills=8, seed=1)
    check_after_kills(tmp_path, dead, capsys)


@pytest.mark.long
def test_fifty_kills_leave_no_half_trace_and_the_next_write_sweeps(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dead = kill_rounds(tmp_path, kills=50, seed=2)
    check_after_kills(tmp_path, dead, capsys)


def test_an_empty_claim_left_by_an_old_writer_is_not_a_trace_replay_refuses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What the old writer left on SIGKILL (an empty file under the final name) is what this
    guards against: replay refuses it with exit 2, so no writer may ever create one."""
    (tmp_path / "claimed.jsonl").write_bytes(b"")
    assert main(["replay", str(tmp_path), "--target", "model"]) == 2
    assert "empty" in capsys.readouterr().err


def test_a_campaign_sweeps_its_trace_folder_before_it_runs(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Even a campaign that holds (and so writes no trace) removes what killed writers left in
    its --trace-dir, and nothing else there."""
    dead = 2**22 + 4321  # above the default pid_max: no such process
    stale = tmp_path / f"duebook-x.jsonl.{dead}.partial"
    stale.write_text('{"duespec_trace": 1')
    alive = tmp_path / f"duebook-y.jsonl.{os.getppid()}.partial"
    alive.write_text("a live writer's")
    other = tmp_path / f"notes.txt.{dead}.partial"
    other.write_text("not a trace")
    assert main(["conform", "duebook", "--target", "impl", "--examples", "1", "--steps", "1", "--progress", "0",
                 "--trace-dir", str(tmp_path)]) == 0
    capsys.readouterr()
    assert not stale.exists() and alive.exists() and other.exists()

"""`duespec suite` (what `make check` runs) ends in a summary and fails if any part fails."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from duespec.cli import main

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.long
def test_everything_holds_on_a_small_budget(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["suite", "--examples", "5", "--traces", str(REPO / "traces")]) == 0
    out = capsys.readouterr().out
    summary = out[out.index("== summary"):]
    assert re.search(r"^\d+ held, 0 failed in \d+s$", summary, re.MULTILINE)
    for part in ("prove", "check", "replay"):
        assert re.search(rf"^ok   {part} ", summary, re.MULTILINE), part
    assert "schedules [server]" in summary and "schedules [lean]" in summary
    # each campaign says it started, so minutes of campaigns never pass in silence
    assert re.search(r"^schedules \[lean\]: impl vs model, 5 runs$", out[:out.index("== summary")], re.MULTILINE)


def test_a_malformed_trace_fails_the_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(REPO / "traces" / "duebook" / "window_edges.jsonl", tmp_path / "good.jsonl")
    (tmp_path / "broken.jsonl").write_text('{"duespec_trace": 1, "system": "duebook"\n')
    os.mkfifo(tmp_path / "fifo.jsonl")  # never opened for reading: that would block
    assert main(["suite", "--examples", "2", "--traces", str(tmp_path)]) == 1
    summary = capsys.readouterr().out.split("== summary")[1]
    assert re.search(r"^FAIL replay .*broken\.jsonl is malformed", summary, re.MULTILINE)
    assert re.search(r"^FAIL replay .*fifo\.jsonl is malformed .*not a regular file \(a FIFO\)", summary, re.MULTILINE)
    assert re.search(r"^ok   replay .*good\.jsonl", summary, re.MULTILINE)
    assert re.search(r"^\d+ held, 2 failed", summary, re.MULTILINE)


def test_a_database_that_cannot_be_one_is_refused_before_the_proofs(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`suite --database /dev/zero` ran every proof first and said so after them."""
    assert main(["suite", "--examples", "1", "--traces", str(tmp_path), "--database", "/dev/zero"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "duespec suite: --database '/dev/zero' is a file, not a directory\n", out + err

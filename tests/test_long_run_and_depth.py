"""`conform --long-run N` against any target, and `--depth`: how deep a campaign goes,
reported per campaign."""

from __future__ import annotations

import re
import shlex

import pytest

from duespec.bench.variants import target_of
from duespec.cli import main


def test_a_long_run_catches_a_bug_only_a_churning_book_shows(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    target = target_of("id-block-skip")  # shows from the 256th id on
    code = main(["conform", "duebook", "--target", target, "--examples", "1", "--depth", "0",
                 "--long-run", "4000", "--trace-dir", str(tmp_path), "--progress", "0", "--no-coverage"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "long run of 4,000 steps:" in out and "DIVERGES: duebook" in out
    assert "--long-run 4000" in out
    replay = re.search(r"^  (duespec replay .*)$", out, re.MULTILINE)
    assert replay is not None
    assert main(shlex.split(replay.group(1))[1:]) == 1


def test_a_long_run_holds_on_the_implementation(capsys: pytest.CaptureFixture[str]) -> None:
    for system in ("duebook", "schedules"):
        code = main(["conform", system, "--target", "impl", "--examples", "1", "--long-run", "1500",
                     "--progress", "0", "--no-coverage"])
        out = capsys.readouterr().out
        assert code == 0, out
        assert re.search(r"long run of 1,500 steps:\nHOLDS: .* runs=1 steps=1500 ", out), out


def depth_of(out: str) -> dict[str, int]:
    found = re.search(r"ids allocated median [\d,]+, p90 [\d,]+, max ([\d,]+); "
                      r"open entries reached median [\d,]+, p90 [\d,]+, max ([\d,]+)", out)
    assert found, out
    return {"ids": int(found.group(1).replace(",", "")), "open": int(found.group(2).replace(",", ""))}


def test_depth_zero_turns_deep_runs_off_and_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    """The default campaign's depth (hundreds of ids, over a thousand open) is asserted by
    tests/test_duebook_machine.py; here the knob's other end and its usage error."""
    args = ["conform", "duebook", "--target", "impl", "--examples", "100", "--progress", "0"]
    assert main([*args, "--depth", "0", "--coverage"]) == 0  # the depth line is part of the --coverage report
    shallow = depth_of(capsys.readouterr().out)
    assert shallow["open"] < 32 and shallow["ids"] < 64  # below DR-03 dozens open, far below DR-02
    with pytest.raises(SystemExit) as usage:
        main([*args, "--depth", "-1"])
    assert usage.value.code == 2
    assert "must be a finite number >= 0" in capsys.readouterr().err

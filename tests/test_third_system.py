"""docs/architecture.md's recipe, proved: a third system written in tests/ alone (a counter
with a cap, tests/counter/) goes through `check`, `conform` (a program written from the
docs, and one with a bug), `replay` and JUnit output, plugged in by DUESPEC_SYSTEMS with
no file of duespec changed for it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

TESTS = Path(__file__).resolve().parent
PROGRAM = TESTS / "counter" / "stdio_counter.py"
ENV = {**os.environ, "DUESPEC_SYSTEMS": "counter.system:SYSTEM",
       "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}
BUDGET = ["--examples", "60", "--steps", "20", "--progress", "0"]


def duespec(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "duespec", *args], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=300)


def test_check_runs_the_counters_model_against_its_impl_with_coverage(tmp_path: Path) -> None:
    done = duespec("check", "counter", *BUDGET, "--profile", "all", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "HOLDS: counter [default]" in done.stdout and "HOLDS: counter [roomy]" in done.stdout
    # The catalogue kept beside the system is read: every requirement reached in default.
    assert "4 of 4 requirements of" in done.stdout, done.stdout


@pytest.mark.long
def test_conform_replay_and_junit_on_a_program_written_from_the_docs(tmp_path: Path) -> None:
    good = duespec("conform", "counter", "--target", f"stdio:{sys.executable} {PROGRAM}", *BUDGET,
                   cwd=tmp_path)
    assert good.returncode == 0, good.stdout + good.stderr

    junit = tmp_path / "report.xml"
    bad = duespec("conform", "counter", "--target", f"stdio:{sys.executable} {PROGRAM} --bug", *BUDGET,
                  "--junit", str(junit), "--trace-dir", str(tmp_path / "failures"), cwd=tmp_path)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "add $.error [CT-02]" in bad.stdout or "add $.ok [CT-02]" in bad.stdout, bad.stdout
    failures = [case for case in ElementTree.parse(junit).getroot().iter("testcase")
                if case.find("failure") is not None]
    assert len(failures) == 1 and "CT-02" in failures[0].get("name", ""), ElementTree.tostring(
        ElementTree.parse(junit).getroot()).decode()

    traces = sorted((tmp_path / "failures").glob("counter-default-*.jsonl"))
    assert len(traces) == 1
    confirmed = duespec("replay", str(traces[0]), "--target", "impl", cwd=tmp_path)
    assert confirmed.returncode == 0 and "CONFIRMED" in confirmed.stdout, confirmed.stdout + confirmed.stderr
    diverges = duespec("replay", str(traces[0]), "--target", f"stdio:{sys.executable} {PROGRAM} --bug",
                       cwd=tmp_path)
    assert diverges.returncode == 1 and "DIVERGES" in diverges.stdout, diverges.stdout + diverges.stderr
    assert "requirements of the step: CT-02" in diverges.stdout


def test_a_system_that_cannot_be_plugged_in_is_a_usage_error(tmp_path: Path) -> None:
    for value, said in (("nowhere.at_all:SYSTEM", "cannot import 'nowhere.at_all'"),
                        ("counter.system:CounterModel", "not a duespec.systems.System"),
                        ("counter.system", "is not module:attribute")):
        done = subprocess.run([sys.executable, "-m", "duespec", "check", "counter", "--examples", "1"],
                              cwd=tmp_path, env={**ENV, "DUESPEC_SYSTEMS": value},
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr

"""A race a server is known to have, declared, and a new one behind it (docs/findings.md F-8).

tests/resonate_pg_read_skew.ndjson is the part of id k2-11 of a `make stress-resonate-pg`
run (seed 11) against the unmodified resonate.sql: 19 calls of 12 clients, one of them a
`task.get` that answered `fulfilled` at version 0 after an acquire had answered version 1
(F-8: task_get reads its task and its promise in two statements).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from duespec.histories.format import read_history
from duespec.histories.linearize import NO_ORDER, check_history

HERE = Path(__file__).resolve().parent
SKEW = HERE / "resonate_pg_read_skew.ndjson"
DECLARED = HERE.parent / "examples" / "resonate-pg" / "stress-declared.toml"


def duespec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "duespec", *args], capture_output=True, text=True, timeout=120)


def declared() -> list:
    from duespec.campaigns.declared import load
    from duespec.systems import get_system

    return load(DECLARED, get_system("schedules"))


def test_the_read_skew_is_shrunk_to_the_read_and_the_writes_it_saw() -> None:
    """The shortest failing prefix keeps every answer as justified as the history does: a
    create still running at a cut answered with another client's create, made after the
    cut; without that care the counterexample was that create alone, 'never given'."""
    history = read_history(SKEW)
    verdict = check_history(history, budget=60)
    assert verdict.status == "not linearizable"
    counterexample = verdict.counterexample
    assert counterexample is not None and counterexample.violation is not None
    culprit = history.events[counterexample.violation.culprit]
    assert (culprit.op, culprit.response["task"]["state"], culprit.response["task"]["version"]) == \
        ("task.get", "fulfilled", 0)
    assert counterexample.violation.kind == NO_ORDER
    assert sorted(history.events[i].op for i in counterexample.original) == \
        ["promise.create", "promise.settle", "task.acquire", "task.get"]


def test_declared_the_known_race_passes_and_the_report_says_what_was_not_compared(tmp_path: Path) -> None:
    without = duespec("linearize", str(SKEW))
    assert without.returncode == 1, without.stdout + without.stderr
    with_it = duespec("linearize", str(SKEW), "--declared", str(DECLARED), "--json", str(tmp_path / "v.json"))
    assert with_it.returncode == 0, with_it.stdout + with_it.stderr
    assert "note: declared, not compared: response task.get $.task.version requirement T-01: F-8" in with_it.stdout
    assert any(note.startswith("declared, not compared") for note in json.loads((tmp_path / "v.json").read_text())["notes"])


def test_a_new_race_behind_the_declared_one_is_still_found(tmp_path: Path) -> None:
    """A second worker that also wins the task at version 0 (an acquire without its lock)
    after the first acquire returned: the declaration masks task.get's version only."""
    lines = SKEW.read_text().splitlines()
    first = next(json.loads(line) for line in lines[1:] if '"task.acquire"' in line and '"status":200' in line)
    second = {**first, "client": "c99", "args": {**first["args"], "pid": "c99"},
              "call_ns": first["return_ns"] + 1, "return_ns": first["return_ns"] + 2,
              "response": {**first["response"], "task": {**first["response"]["task"], "pid": "c99"}}}
    path = tmp_path / "double.ndjson"
    events = sorted([json.loads(line) for line in lines[1:]] + [second], key=lambda event: event["return_ns"])
    path.write_text("\n".join([lines[0], *map(json.dumps, events)]) + "\n")  # in return order
    verdict = check_history(read_history(path), budget=60, declared=declared())
    assert verdict.status == "not linearizable"
    counterexample = verdict.counterexample
    assert counterexample is not None
    ours = [index for index, event in zip(counterexample.original, counterexample.events) if event.client == "c99"]
    assert len(ours) == 1 and counterexample.roles[ours[0]].startswith("core")  # two winners: either is the race


def test_a_declaration_of_another_op_or_path_masks_nothing(tmp_path: Path) -> None:
    for op, path in (("promise.get", "$.task.version"), ("task.get", "$.task.pid")):
        file = tmp_path / f"{op}.toml"
        file.write_text(f'[[difference]]\nreason = "x"\nop = "{op}"\nresponse = "{path}"\n')
        result = duespec("linearize", str(SKEW), "--declared", str(file))
        assert result.returncode == 1, (op, path, result.stdout)


def test_bad_declared_files_are_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "unknown_op.toml").write_text('[[difference]]\nreason = "x"\nop = "task.nope"\nresponse = "$"\n')
    (tmp_path / "not_toml.toml").write_text("[[difference]\n")
    for args in (("linearize", str(SKEW), "--declared", str(tmp_path / "missing.toml")),
                 ("linearize", str(SKEW), "--declared", str(tmp_path / "unknown_op.toml")),
                 ("linearize", str(SKEW), "--declared", str(tmp_path / "not_toml.toml")),
                 ("stress", "schedules", "--target", "serve", "--ops", "10",
                  "--declared", str(tmp_path / "unknown_op.toml"))):
        result = duespec(*args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "--declared" in result.stderr or "declared" in result.stderr or "task.nope" in result.stderr

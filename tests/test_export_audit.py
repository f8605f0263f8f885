"""The export audit (tools/export_audit.py, tests/history_audit.py) checks what it claims.

`make export-audit` copies every history the suite writes and compares each one's `duespec
linearize` verdict with its valid/ export's. These tests show the audit can fail: an
exporter that drops a call is caught and named; a real history passes; what the format
cannot express is listed with the export's reason; a difference is put down to the format's
limit only when leaving out the internal steps alone makes it; and the capture finds
histories however the suite writes them (or checks them without writing), under xdist too.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))  # the tool is a script
sys.path.insert(0, str(ROOT / "tests"))

import export_audit  # noqa: E402

from duespec.histories.format import Event, HistoryHeader, HistoryWriter  # noqa: E402
from duespec.histories.generate import START_MS, VALUE, generate  # noqa: E402
from duespec.systems import get_system  # noqa: E402
from history_audit import capture  # noqa: E402

CONFIG = {"profile": "lean", "retry_timeout": 5000}
NS = 1_000_000
CALLS = [("promise.create", {"id": "x", "timeoutAt": START_MS + 300, "param": VALUE, "tags": {}}, 0),
         ("promise.get", {"id": "x"}, 10),
         ("tick", {}, 500),
         ("promise.get", {"id": "x"}, 600)]


def events_with_a_tick() -> list[Event]:
    """A promise, read, timed out by a tick, read again: each answer the model's."""
    model = get_system("schedules").model()
    model.reset(CONFIG)
    events = []
    for n, (op, args, at) in enumerate(CALLS):
        now = START_MS + at
        events.append(Event("c0", op, args, (10 * n) * NS, (10 * n + 5) * NS, now, now, "ok",
                            model.step(op, args, now), now))
    return events


def captured(tmp_path: Path, name: str, events: list[Event], header: HistoryHeader | None = None) -> Path:
    """`events` written as a history by a test, and copied into the audit folder."""
    audit_dir = tmp_path / "audit"
    with HistoryWriter(tmp_path / name, header or HistoryHeader("schedules", "pinned", CONFIG)) as writer:
        for event in events:
            writer.write(event)
    assert capture(tmp_path / name, audit_dir, f"planted::{name}", "test") is not None
    return audit_dir


def run_audit(audit_dir: Path) -> tuple[int, str]:
    out = io.StringIO()
    code = export_audit.audit(audit_dir, budget=30, out=out)
    return code, out.getvalue()


def test_a_real_history_passes(tmp_path: Path) -> None:
    audit_dir = captured(tmp_path, "real.ndjson", events_with_a_tick())
    code, out = run_audit(audit_dir)
    assert code == 0, out
    assert out.startswith("SAME ") and "written exit 0 (linearizable), exported exit 0 (linearizable)" in out, out
    assert "1 internal steps left out" in out and "1 histories captured, 1 compared: 1 same (0 of" in out, out


def test_an_exporter_that_drops_a_call_is_caught_and_the_history_named(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the create, the reads of promise x answer for a promise nobody made."""
    real_export = export_audit.export_lines

    def drops_the_first_call(path: str) -> tuple[list[str], int]:
        lines, internal = real_export(path)
        return lines[1:], internal

    monkeypatch.setattr(export_audit, "export_lines", drops_the_first_call)
    audit_dir = captured(tmp_path, "dropped.ndjson", events_with_a_tick())
    code, out = run_audit(audit_dir)
    assert code == 1, out
    assert out.startswith("MISMATCH ") and "exported exit 1 (not linearizable)" in out, out
    assert "FAILED: MISMATCH " in out and "written by planted::dropped.ndjson" in out, out


def test_a_difference_is_the_formats_limit_only_when_leaving_out_the_ticks_alone_makes_it(tmp_path: Path) -> None:
    """A tick whose own answer is wrong (it says it fired a promise it did not): the written
    history is not linearizable; its export, which has no ticks, is, and so is the written
    history with its tick left out: the format's limit, said with its reason, not a failure."""
    events = events_with_a_tick()
    tick = events[2]
    wrong = {**tick.response, "fired": [*tick.response.get("fired", []), {"kind": "promise", "id": "y"}]}
    events[2] = dataclasses.replace(tick, response=wrong)
    code, out = run_audit(captured(tmp_path, "tick.ndjson", events))
    assert out.startswith("LIMIT "), out
    assert ("written exit 1 (not linearizable), exported exit 0 (linearizable), written without internal steps "
            "exit 0 (linearizable)") in out, out
    assert "holds no internal steps" in out and code == 0, out


def test_a_tick_that_alone_carried_the_clock_to_a_firing_is_the_formats_limit(tmp_path: Path) -> None:
    """A read pinned before the tick arrives after it and sees the timer it fired (stress
    pins requests from one shared clock, so this happens): linearizable as written. Exported,
    the tick and its instant are gone, no call is pinned at or past the timeout, and the
    firing the read shows could not have happened: not linearizable, and so is the written
    history without its tick. The format's limit, with the tick's instant said."""
    timer = {"resonate:timer": "true"}
    model = get_system("schedules").model()
    model.reset(CONFIG)
    script = [("promise.create", {"id": "a", "timeoutAt": START_MS + 500, "param": VALUE, "tags": timer}, 0),
              ("tick", {}, 1000),
              ("promise.get", {"id": "a"}, 100)]
    events = [Event(f"c{n}", op, args, (2 * n) * NS, (2 * n + 1) * NS, START_MS, START_MS, "ok",
                    model.step(op, args, START_MS + at), START_MS + at) for n, (op, args, at) in enumerate(script)]
    assert events[2].response["promise"]["state"] == "resolved"
    code, out = run_audit(captured(tmp_path, "clock.ndjson", events))
    assert out.startswith("LIMIT ") and code == 0, out
    assert ("written exit 0 (linearizable), exported exit 1 (not linearizable), written without internal steps "
            f"exit 1 (not linearizable); a tick pinned the server's clock at {START_MS + 1000}") in out, out


def test_the_same_tick_without_the_clock_it_carried_is_a_mismatch(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """An export judged not linearizable where the written history is, though calls are
    pinned past every tick, is no limit of the format but a wrong search, and fails the
    audit. (Planted: the verdict on what the valid/ format holds is made to differ.)"""
    real_verdict = export_audit.verdict_of

    def export_judged_not_linearizable(history, source, budget):  # type: ignore[no-untyped-def]
        verdict = real_verdict(history, source, budget)
        if history.header.meta.get("source_format") == "resonate-valid":
            return {**verdict, "exit_code": 1, "status": "not linearizable"}
        return verdict

    monkeypatch.setattr(export_audit, "verdict_of", export_judged_not_linearizable)
    code, out = run_audit(captured(tmp_path, "late.ndjson", events_with_a_tick()))
    assert out.startswith("MISMATCH ") and code == 1, out


def test_one_side_running_out_of_budget_fails_and_both_alike_is_the_same_verdict(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_verdict = export_audit.verdict_of
    sides = {"resonate-valid"}

    def runs_out(history, source, budget):  # type: ignore[no-untyped-def]
        verdict = real_verdict(history, source, budget)
        if history.header.meta.get("source_format", "duespec") in sides:
            return {**verdict, "exit_code": 3, "status": "unknown"}
        return verdict

    monkeypatch.setattr(export_audit, "verdict_of", runs_out)
    audit_dir = captured(tmp_path, "h.ndjson", events_with_a_tick())
    code, out = run_audit(audit_dir)
    assert out.startswith("UNDECIDED ") and code == 1 and "FAILED: UNDECIDED" in out, out
    sides.add("duespec")
    code, out = run_audit(audit_dir)
    assert out.startswith("SAME ") and "both searches ran out of budget alike" in out, out
    assert "1 same (1 of them unknown on both sides)" in out and code == 0, out


def test_what_the_format_cannot_express_is_listed_with_the_exports_reason(tmp_path: Path) -> None:
    real = generate(seed=1, ops=6, clock="real")
    audit_dir = captured(tmp_path, "real-clock.ndjson", real.events, real.header)
    code, out = run_audit(audit_dir)
    assert out.startswith("NOT EXPRESSIBLE ") and "a real-clock history" in out, out
    assert "1 not expressible in resonate-valid" in out and "not expressible (1): a real-clock history" in out, out
    assert code == 1 and "FAILED: no history was compared" in out, out  # it compared nothing


def test_a_history_the_reader_refuses_is_listed_as_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "bad.ndjson"
    path.write_text(json.dumps(HistoryHeader("schedules", "pinned", CONFIG).to_json()) + "\n{\"client\": 1}\n")
    audit_dir = captured(tmp_path, "good.ndjson", events_with_a_tick())
    assert capture(path, audit_dir, "planted::bad", "test") is not None
    code, out = run_audit(audit_dir)
    assert code == 0 and "UNREADABLE" in out and "missing op, args" in out, out
    assert "1 compared: 1 same (0 of" in out and "1 unreadable as written" in out, out


def test_an_audit_folder_without_a_capture_is_refused(tmp_path: Path) -> None:
    code, out = run_audit(tmp_path)
    assert code == 2 and "holds no captured history" in out, out


PLANTED_TESTS = '''
import json, subprocess, sys, tempfile
from pathlib import Path
from duespec.histories.format import HistoryHeader, HistoryWriter

HEADER = HistoryHeader("schedules", "pinned", {})

def test_through_the_writer_into_a_folder_gone_before_teardown():
    with tempfile.TemporaryDirectory() as folder:
        HistoryWriter(Path(folder) / "gone.ndjson", HEADER).close()

def test_by_hand_into_tmp_path(tmp_path):
    (tmp_path / "by-hand.txt").write_text(json.dumps({**HEADER.to_json(), "meta": {"by": "hand"}}) + "\\n")
    (tmp_path / "trace.ndjson").write_text(json.dumps({"duespec_trace": 1}) + "\\n")

def test_in_memory():
    from duespec.histories.generate import generate
    from duespec.histories.linearize import check_history
    assert check_history(generate(seed=1, ops=6)).status == "linearizable"

def test_by_a_duespec_process(tmp_path):
    subprocess.run([sys.executable, "-m", "duespec", "stress", "schedules", "--target", "serve", "--clients", "2",
                    "--ops", "6", "-o", str(tmp_path / "stress.ndjson")], check=True, capture_output=True)
'''


def test_the_capture_finds_every_history_however_it_was_written_under_xdist(tmp_path: Path) -> None:
    """`make export-audit` runs the suite under xdist: a worker, not the controller, runs each
    test, and indexes what it copies in a file of its own."""
    (tmp_path / "test_planted.py").write_text(PLANTED_TESTS)
    audit_dir = tmp_path / "audit"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DUESPEC_HISTORY_AUDIT": str(audit_dir)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.history_audit",
                          "-n", "1", "--basetemp", str(tmp_path / "basetemp"), "test_planted.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    indexes = sorted(audit_dir.glob("index-*.jsonl"))
    assert [index.name for index in indexes] == ["index-gw0.jsonl"]
    entries = [json.loads(line) for line in indexes[0].read_text().splitlines()]
    found = {(entry["origin"].split("::")[-1], Path(str(entry["source"])).name, entry["via"]) for entry in entries}
    assert ("test_through_the_writer_into_a_folder_gone_before_teardown", "gone.ndjson",
            "HistoryWriter.close") in found, found
    assert ("test_by_hand_into_tmp_path", "by-hand.txt", "tmp_path") in found, found
    assert ("test_by_a_duespec_process", "stress.ndjson", "tmp_path") in found, found
    assert ("test_in_memory", "None", "check_history") in found, found
    assert not any(name == "trace.ndjson" for _, name, _ in found), found
    assert len(list((audit_dir / "histories").iterdir())) == 4


@pytest.mark.parametrize("events", [[], events_with_a_tick()[2:3]], ids=["no events", "only a tick"])
def test_a_history_without_calls_is_refused_by_the_export_rather_than_written_unreadable(
        tmp_path: Path, events: list[Event], capsys: pytest.CaptureFixture[str]) -> None:
    """The audit found it: `duespec stress` against a target unusable from the start keeps a
    history of its header alone (linearizable, exit 0); its export was an empty file, which
    `duespec linearize` refuses (exit 2). The export now refuses it, and writes nothing."""
    from duespec.cli import main

    audit_dir = captured(tmp_path, "empty.ndjson", events)
    out = tmp_path / "empty.history"
    assert main(["export", str(tmp_path / "empty.ndjson"), "--format", "resonate-valid", "-o", str(out)]) == 2
    said = capsys.readouterr().err.strip()
    assert "no call to write" in said and len(said.splitlines()) == 1 and not out.exists(), said
    code, report = run_audit(audit_dir)
    assert report.startswith("NOT EXPRESSIBLE ") and "no call to write" in report, report

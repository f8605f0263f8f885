"""One rule for calls the server left unanswered (issue 41, item 4), in both formats.

A 5xx answer or a lost one (timed out, the connection broken) is an unknown outcome to the
linearizability search, as the specification's valid/ checkers read a 500, and a finding
of its own that fails the check unless --allow-unanswered; so `duespec export` to the
valid/ format never changes a verdict."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from duespec.cli import main
from duespec.histories.format import Event, HistoryHeader, HistoryWriter
from duespec.histories.generate import START_MS, VALUE
from duespec.systems import get_system

CONFIG = {"profile": "lean", "retry_timeout": 5000}
NS = 1_000_000
CALLS = [("promise.create", {"id": "x", "timeoutAt": START_MS + 60_000, "param": VALUE, "tags": {}}),
         ("promise.get", {"id": "x"}),
         ("promise.settle", {"id": "x", "state": "resolved", "value": VALUE}),
         ("promise.get", {"id": "x"})]


def sequential_events() -> list[Event]:
    """One client's calls, one after another, each with the model's answer."""
    model = get_system("schedules").model()
    model.reset(CONFIG)
    events = []
    for n, (op, args) in enumerate(CALLS):
        now = START_MS + n
        events.append(Event("c0", op, args, 10 * n * NS, (10 * n + 5) * NS, now, now, "ok",
                            model.step(op, args, now), now))
    return events


def variants() -> dict[str, list[Event]]:
    events = sequential_events()
    settle = 2
    return {
        "linearizable": events,
        "not linearizable": events[:3] + [dataclasses.replace(events[3], response={"status": 404})],
        "settle answered 500": events[:settle] + [dataclasses.replace(events[settle], response={"status": 500})]
                               + events[settle + 1:],
        "settle answered 503": events[:settle] + [dataclasses.replace(events[settle], response={"status": 503})]
                               + events[settle + 1:],
        "settle lost": events[:settle] + [dataclasses.replace(events[settle], outcome="unknown", response=None)]
                       + events[settle + 1:],
        "everything answered 500": [dataclasses.replace(event, response={"status": 500}) for event in events],
    }


EXPECTED = {"linearizable": 0, "not linearizable": 1, "settle answered 500": 1, "settle answered 503": 1,
            "settle lost": 1, "everything answered 500": 1}


def write(path: Path, events: list[Event]) -> Path:
    with HistoryWriter(path, HistoryHeader("schedules", "pinned", CONFIG)) as writer:
        for event in events:
            writer.write(event)
    return path


def exported(history: Path) -> Path:
    valid = history.with_suffix(".history")
    assert main(["export", str(history), "--format", "resonate-valid", "-o", str(valid)]) == 0
    return valid


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_export_never_changes_a_verdict(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    history = write(tmp_path / "h.ndjson", variants()[name])
    valid = exported(history)
    ours = main(["linearize", str(history)])
    ours_out = capsys.readouterr().out
    theirs = main(["linearize", str(valid)])
    theirs_out = capsys.readouterr().out
    assert ours == theirs == EXPECTED[name], (ours_out, theirs_out)
    if name not in ("linearizable", "not linearizable"):
        for out in (ours_out, theirs_out):
            assert out.startswith("FAILED: UNANSWERED: ") and "fails the check" in out, out
    # Accepted, an unanswered call is still an unknown outcome to the search, in both formats.
    allowed = [main(["linearize", str(path), "--allow-unanswered"]) for path in (history, valid)]
    capsys.readouterr()
    assert allowed[0] == allowed[1] == (1 if name == "not linearizable" else 0)


def test_a_server_that_answers_500_to_everything_never_passes(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    history = write(tmp_path / "h.ndjson", variants()["everything answered 500"])
    report = tmp_path / "verdict.json"
    assert main(["linearize", str(history), "--json", str(report)]) == 1
    out = capsys.readouterr().out
    assert "UNANSWERED: 4 calls answered 5xx" in out.splitlines()[0], out
    written = json.loads(report.read_text())
    assert written["exit_code"] == 1 and written["unanswered"] == {"calls": 4, "allowed": False, "fails": True}
    assert written["status"] == "linearizable"  # the search's own verdict: every outcome unknown


def test_a_lost_answer_is_said_as_lost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = write(tmp_path / "h.ndjson", variants()["settle lost"])
    assert main(["linearize", str(history)]) == 1
    assert "1 call lost (no answer" in capsys.readouterr().out


def test_stress_histories_keep_their_verdict_through_export(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """What `duespec stress` records (a correct server and the racy one) reads back alike."""
    codes = []
    for name, extra in (("correct", []), ("racy", ["--unsafe-drop-acquire-lock"]), ("ticks", ["--ticks"])):
        history = tmp_path / f"{name}.ndjson"
        code = main(["stress", "schedules", "--target", "serve", "--clients", "6", "--ops", "150", "--seed", "1",
                     "-o", str(history), *extra])
        capsys.readouterr()
        assert main(["linearize", str(history)]) == code
        assert main(["linearize", str(exported(history))]) == code, capsys.readouterr().out
        capsys.readouterr()
        codes.append(code)
    assert codes[0] == 0 and codes[2] == 0


def test_the_501_the_specification_answers_a_search_with_is_an_answer_like_any_other(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The model answers the search ops 501 (not implemented): that is compared, never read
    as an unanswered call; a 501 where the model answers otherwise is a violation."""
    events = sequential_events()
    search = Event("c0", "promise.search", {"id": "*"}, 100 * NS, 105 * NS, START_MS + 9, START_MS + 9, "ok",
                   {"status": 501}, START_MS + 9)
    history = write(tmp_path / "search.ndjson", [*events, search])
    for path in (history, exported(history)):
        assert main(["linearize", str(path)]) == 0
        assert "UNANSWERED" not in capsys.readouterr().out
    wrong = write(tmp_path / "wrong.ndjson", [*events[:3], dataclasses.replace(events[3], response={"status": 501})])
    for path in (wrong, exported(wrong)):
        assert main(["linearize", str(path)]) == 1
        assert capsys.readouterr().out.startswith("NOT LINEARIZABLE")

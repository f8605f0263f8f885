"""The trace format: what the writer writes the reader reads back, and every malformed
trace is refused with the file, the line and the problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from duespec.bench.traces import duebook_churn, peak_bytes
from duespec.traces.format import (FORMAT_VERSION, TraceError, TraceHeader, TraceWriter, read_trace,
                            record, write_trace)

HEADER = {"duespec_trace": FORMAT_VERSION, "system": "duebook", "profile": "seed",
          "config": {"max_open": 3}, "seed": 7, "producer": "test", "created": "2026-11-30T00:00:00+00:00"}
STEP = {"i": 0, "op": "claim", "args": {"id": 1}, "now": 5, "result": {"error": "not_found"}}


def lines(*values: Any) -> str:
    return "".join((v if isinstance(v, str) else json.dumps(v)) + "\n" for v in values)


def test_what_is_written_reads_back_unchanged(tmp_path: Path) -> None:
    steps = [{"i": 0, "op": "schedule", "args": {"owner": "a", "delay": 1, "ttl": 0}, "now": 10,
              "result": {"ok": {"id": 1, "owner": "a", "due_at": 11, "expires_at": 0}}},
             {"i": 1, "op": "claim", "args": {"id": 1}, "now": 2**63 - 1}]
    path = write_trace(tmp_path / "t.jsonl", {**HEADER, "note": "kept"}, iter(steps))
    header, read = read_trace(path)
    assert header.to_json() == {**HEADER, "note": "kept"}
    assert list(read) == steps
    assert path.read_text().count("\n") == 3


def test_writer_publishes_the_file_only_when_it_finishes(tmp_path: Path) -> None:
    target = tmp_path / "t.jsonl"
    with pytest.raises(RuntimeError):
        with TraceWriter(target, HEADER) as writer:
            writer.write(STEP)
            raise RuntimeError("campaign interrupted")
    assert list(tmp_path.iterdir()) == []


def test_writer_refuses_a_malformed_step_and_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match='"i" is 3 where 0 was expected'):
        write_trace(tmp_path / "t.jsonl", TraceHeader("duebook", "seed", {"max_open": 1}), [{**STEP, "i": 3}])
    assert list(tmp_path.iterdir()) == []


MALFORMED = [
    ("empty file", "", 1, "empty file"),
    ("header not JSON", "{nope\n", 1, "not JSON"),
    ("header not an object", lines([1, 2]), 1, "expected a JSON object, got a list"),
    ("not a duespec trace", lines({"vars": []}), 1, 'missing "duespec_trace"'),
    ("future version", lines({**HEADER, "duespec_trace": 2}), 1, "unsupported format version 2"),
    ("unknown system", lines({**HEADER, "system": "ledger"}), 1, 'unknown system "ledger"'),
    ("header key missing", lines({k: v for k, v in HEADER.items() if k != "config"}), 1, 'missing key "config"'),
    ("config not an object", lines({**HEADER, "config": [3]}), 1, '"config" must be a JSON object'),
    ("seed a string", lines({**HEADER, "seed": "7"}), 1, '"seed" must be an integer or null'),
    # The config's profile is the reading that runs; a report printed the header's.
    ("profiles disagree", lines({**HEADER, "system": "schedules", "profile": "lean",
                                 "config": {"profile": "server", "retry_timeout": 5000}}), 1,
     '"profile" "lean" disagrees with the config\'s "profile" "server"'),
    ("step not JSON", lines(HEADER, STEP, '{"i": 1, "op": '), 3, "not JSON"),
    ("blank line", lines(HEADER, "", STEP), 2, "blank line"),
    ("step not an object", lines(HEADER, "[]"), 2, "expected a JSON object, got a list"),
    ("step key missing", lines(HEADER, {k: v for k, v in STEP.items() if k != "now"}), 2, 'missing key "now"'),
    ("op a number", lines(HEADER, {**STEP, "op": 3}), 2, '"op" must be a string, got the number 3'),
    ("op null", lines(HEADER, {**STEP, "op": None}), 2, '"op" must be a string, got null'),
    ("i a string", lines(HEADER, {**STEP, "i": "0"}), 2, '"i" must be an integer, got the string "0"'),
    ("i a boolean", lines(HEADER, {**STEP, "i": False}), 2, '"i" must be an integer, got a boolean'),
    ("result a string", lines(HEADER, {**STEP, "result": "ok"}), 2, '"result" must be a JSON object'),
    ("state a list", lines(HEADER, {**STEP, "state": []}), 2, '"state" must be a JSON object'),
    ("unknown step key", lines(HEADER, {**STEP, "expected": {}}), 2, 'unknown key(s) "expected"'),
    ("i starts at 1", lines(HEADER, {**STEP, "i": 1}), 2, '"i" is 1 where 0 was expected'),
    ("i skips", lines(HEADER, STEP, {**STEP, "i": 2}), 3, '"i" is 2 where 1 was expected'),
    ("i repeats", lines(HEADER, STEP, STEP), 3, '"i" is 0 where 1 was expected'),
]


@pytest.mark.parametrize("content, line, problem", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_trace_names_file_line_and_problem(tmp_path: Path, content: str, line: int, problem: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(TraceError) as caught:
        _, steps = read_trace(path)
        list(steps)
    assert caught.value.line == line
    assert str(caught.value).startswith(f"{path}:{line}: ")
    assert problem in str(caught.value)


def test_malformed_requests_are_recorded_verbatim(tmp_path: Path) -> None:
    """An unknown op, args that are no object, a `now` that is no integer: the contract
    answers each (400, invalid), so campaigns send them and traces must carry them."""
    steps = [{"i": 0, "op": "warp", "args": {"id": "p1", "extra": 1}, "now": 1.5},
             {"i": 1, "op": "promise.get", "args": None, "now": True},
             {"i": 2, "op": "tick", "args": {}, "now": None},
             {"i": 3, "op": "promise.get", "args": {"id": "\ud800"}, "now": -1}]
    header = TraceHeader("schedules", "lean", {"profile": "lean", "retry_timeout": 5000})
    _, read = read_trace(write_trace(tmp_path / "t.jsonl", header, steps))
    assert list(read) == steps


def test_a_line_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(lines(HEADER).encode() + b'{"i": 0, "op": "get", "args": {"owner": "J\xf6rg"}}\n')
    _, steps = read_trace(path)
    with pytest.raises(TraceError, match=r":2: not UTF-8: byte 0xf6 at column 43"):
        list(steps)


def test_missing_file_is_a_trace_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="cannot open"):
        read_trace(tmp_path / "absent.jsonl")


def test_steps_before_a_broken_line_are_delivered(tmp_path: Path) -> None:
    """Streaming: a replay runs everything up to the broken line, then learns where it is."""
    path = tmp_path / "t.jsonl"
    path.write_text(lines(HEADER, STEP, "garbage"))
    _, steps = read_trace(path)
    assert next(steps) == STEP
    with pytest.raises(TraceError, match=":3: "):
        next(steps)


# --- constant memory --------------------------------------------------------------------

@pytest.mark.long
def test_replay_memory_does_not_grow_with_trace_length(tmp_path: Path) -> None:
    config = {"max_open": 3}
    header = TraceHeader("duebook", "seed", config)
    short = write_trace(tmp_path / "short.jsonl", header, record("duebook", config, duebook_churn(10_000)))
    long = write_trace(tmp_path / "long.jsonl", header, record("duebook", config, duebook_churn(100_000)))
    short_steps, short_peak = peak_bytes(short)
    long_steps, long_peak = peak_bytes(long)
    assert (short_steps, long_steps) == (10_000, 100_000)
    # Ten times the steps, the same peak: nothing accumulates per step.
    assert long_peak / short_peak < 1.5, (short_peak, long_peak)

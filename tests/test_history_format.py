"""The history format (docs/histories.md): written as calls return, read back strictly."""

from __future__ import annotations

import json

import pytest

from duespec.histories.format import Event, HistoryError, HistoryHeader, HistoryWriter, read_history

HEADER = HistoryHeader("schedules", "pinned", {"profile": "lean", "retry_timeout": 5000})


def event(client: str, call: int, ret: int, **extra: object) -> Event:
    fields = dict(client=client, op="promise.get", args={"id": "p"}, call_ns=call, return_ns=ret,
                  call_ms=1000, return_ms=1000, response={"status": 404}, now=1000)
    fields.update(extra)
    return Event(**fields)  # type: ignore[arg-type]


def test_written_events_read_back_equal(tmp_path):
    path = tmp_path / "h.ndjson"
    written = [event("c0", 1, 5), event("c1", 2, 6), event("c0", 6, 9, outcome="unknown", response=None)]
    with HistoryWriter(path, HEADER) as writer:
        for item in written:
            writer.write(item)
    history = read_history(path)
    assert history.header == HEADER and history.events == written and not history.truncated


def test_a_cut_last_line_is_truncation_not_refusal(tmp_path):
    path = tmp_path / "h.ndjson"
    with HistoryWriter(path, HEADER) as writer:
        writer.write(event("c0", 1, 5))
        writer.write(event("c1", 2, 6))
    data = path.read_bytes()
    path.write_bytes(data[:-7])
    history = read_history(path)
    assert history.truncated and [e.client for e in history.events] == ["c0"]


def lines(tmp_path, *events: dict) -> str:
    path = tmp_path / "bad.ndjson"
    path.write_text("\n".join(json.dumps(line) for line in (HEADER.to_json(), *events)) + "\n")
    return str(path)


GOOD = event("c0", 1, 5).to_json()


@pytest.mark.parametrize("bad, words", [
    ({**GOOD, "return_ns": 0}, "before its call"),
    ({**GOOD, "op": "promise.explode"}, "unknown op"),
    ({**GOOD, "now": None}, "pinned-clock history"),
    ({**GOOD, "outcome": "ok", "response": None}, "needs its response"),
    ({**GOOD, "client": 7}, "client must be"),
    ({**GOOD, "surprise": 1}, "unknown keys"),
])
def test_malformed_events_are_named(tmp_path, bad, words):
    with pytest.raises(HistoryError, match=words):
        read_history(lines(tmp_path, bad))


def test_out_of_order_and_overlapping_client_calls_are_refused(tmp_path):
    with pytest.raises(HistoryError, match="out of order"):
        read_history(lines(tmp_path, event("c0", 1, 9).to_json(), event("c1", 2, 5).to_json()))
    with pytest.raises(HistoryError, match="before its previous call returned"):
        read_history(lines(tmp_path, event("c0", 1, 5).to_json(), event("c0", 4, 9).to_json()))


def test_the_event_limit_is_enforced_before_checking(tmp_path):
    path = lines(tmp_path, *(event(f"c{i}", i, i + 1).to_json() for i in range(5)))
    with pytest.raises(HistoryError, match="more than 3 events"):
        read_history(path, max_events=3)


def test_a_checked_event_is_the_event_its_constructor_makes() -> None:
    """check_event builds its Event without the dataclass's __init__ (reading's hot path):
    what it builds must be what Event(...) builds, every field of the dataclass set, so a
    field added to Event cannot be left out of what is read."""
    import dataclasses

    from duespec.histories.format import Event, HistoryHeader, check_event

    line = {"client": "a", "op": "promise.get", "args": {"id": "x"}, "call_ns": 1, "return_ns": 2,
            "call_ms": 0, "return_ms": 0, "outcome": "ok", "response": {"status": 404}, "now": 5,
            "wire": {"request": {}}}
    read = check_event(line, HistoryHeader("schedules", "pinned", {}), "h.ndjson", 2)
    made = Event(**line)
    assert read == made and vars(read) == vars(made)
    assert list(vars(read)) == [f.name for f in dataclasses.fields(Event)]
    with pytest.raises(dataclasses.FrozenInstanceError):
        read.client = "b"  # type: ignore[misc]

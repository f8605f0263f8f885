"""Concurrent histories: what many clients sent one server, and when, as NDJSON.

A trace (duespec.traces) is one client's sequence of steps at pinned times; a history is
what a server was really asked by many clients at once: every call with its client, the
instant it was sent and the instant its answer came back. Whether the server behaved as
the spec allows is then a question about orders (duespec linearize), not about one run.
The format is documented in docs/histories.md; this module is its only reader and writer.

A history is written one complete line per returned call, flushed as it goes, so a
recorder that is killed leaves every call up to its last complete line readable; the
reader reports a cut last line as truncation rather than refusing the file (a last line
without its newline that parses is whole: duespec.limits.JsonLines frames every reader).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterator

import orjson

from duespec.limits import InputError, JsonLines, open_regular
from duespec.systems import names, operations_of

Json = Any

#: The version this code writes and the only one it reads.
FORMAT_VERSION = 1
#: Most events one history may hold: a checker's memory grows with the events, and a
#: history past this is refused before it is checked (split it, or check it by key).
MAX_EVENTS = 1_000_000
CLOCKS = ("pinned", "real")
#: An event's outcome: `ok` (the response is the server's answer) or `unknown` (the call
#: timed out or its connection broke: it may or may not have taken effect, at any instant
#: after its call, as Jepsen's :info).
OUTCOMES = ("ok", "unknown")

_HEADER_KEYS = frozenset({"duespec_history", "system", "clock", "config", "producer", "meta"})
_EVENT_KEYS = frozenset({"client", "op", "args", "now", "call_ns", "return_ns", "call_ms", "return_ms",
                         "outcome", "response", "wire"})
_REQUIRED_EVENT_KEYS_IN_ORDER = ("client", "op", "args", "call_ns", "return_ns", "call_ms", "return_ms")
_REQUIRED_EVENT_KEYS = frozenset(_REQUIRED_EVENT_KEYS_IN_ORDER)


class HistoryError(ValueError):
    """A history that is not well formed; the message names the file, line and problem."""

    def __init__(self, where: str, line: int | None, problem: str):
        self.where, self.line, self.problem = where, line, problem
        super().__init__(f"{where}:{line}: {problem}" if line is not None else f"{where}: {problem}")


@dataclass(frozen=True)
class HistoryHeader:
    """Line 1: which system was called, how its clock was read, and how it was configured."""

    system: str
    #: `pinned`: every call carried the time it is to run at (`now`); `real`: the server
    #: read its own clock, somewhere inside the call's [call_ms, return_ms] interval.
    clock: str
    #: The config the server was started with (the system's reset config), if known.
    config: dict[str, Json] = field(default_factory=dict)
    producer: str = "duespec"
    meta: dict[str, Json] = field(default_factory=dict)

    def to_json(self) -> dict[str, Json]:
        return {"duespec_history": FORMAT_VERSION, "system": self.system, "clock": self.clock,
                "config": self.config, "producer": self.producer, "meta": self.meta}


@dataclass(frozen=True)
class Event:
    """One call: sent by `client` at call_ns, answered (or given up on) at return_ns.

    Instants are the recorder's monotonic clock in ns (they order calls) and its wall clock
    in ms (what a server's own clock is compared with). `now` is the pinned time the call
    carried, or None under the real clock. `wire` keeps the bytes' meaning as sent and
    answered (for an HTTP server, the request and response envelopes), for people."""

    client: str
    op: str
    args: dict[str, Json]
    call_ns: int
    return_ns: int
    call_ms: int
    return_ms: int
    outcome: str = "ok"
    response: dict[str, Json] | None = None
    now: int | None = None
    wire: dict[str, Json] | None = None

    def to_json(self) -> dict[str, Json]:
        line = {"client": self.client, "op": self.op, "args": self.args, "now": self.now,
                "call_ns": self.call_ns, "return_ns": self.return_ns, "call_ms": self.call_ms,
                "return_ms": self.return_ms, "outcome": self.outcome, "response": self.response}
        if self.wire is not None:
            line["wire"] = self.wire
        return line


@dataclass
class History:
    header: HistoryHeader
    events: list[Event]
    #: The last line was cut short (no newline and not JSON: a recorder killed mid-write):
    #: the events before it are kept. A last line without a newline that parses is whole.
    truncated: bool = False


def _is_int(value: Json) -> bool:
    return type(value) is int


def _header(value: Json, where: str) -> HistoryHeader:
    if type(value) is not dict or "duespec_history" not in value:
        raise HistoryError(where, 1, "line 1 is not a history header (an object with "
                                     "\"duespec_history\"); see docs/histories.md")
    unknown = sorted(set(value) - _HEADER_KEYS)
    if unknown:
        raise HistoryError(where, 1, f"header has unknown keys {unknown}")
    if value["duespec_history"] != FORMAT_VERSION or not _is_int(value["duespec_history"]):
        raise HistoryError(where, 1, f"history format version {value['duespec_history']!r}; this "
                                     f"duespec reads version {FORMAT_VERSION}")
    system = value.get("system")
    if system not in names():
        raise HistoryError(where, 1, f"unknown system {system!r}; known: {', '.join(names())}")
    clock = value.get("clock")
    if clock not in CLOCKS:
        raise HistoryError(where, 1, f"clock must be one of {', '.join(CLOCKS)}, got {clock!r}")
    config, meta, producer = value.get("config", {}), value.get("meta", {}), value.get("producer", "duespec")
    if type(config) is not dict or type(meta) is not dict or type(producer) is not str:
        raise HistoryError(where, 1, "config and meta must be objects, producer a string")
    return HistoryHeader(system, clock, config, producer, meta)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a history is read or searched. Both build a
    heap that only grows until they end: reading, a dict per value and an Event per line
    (the collector's passes over them cost a sixth of reading a 10,000-line capture);
    searching, a memo entry, a fork and a frame per step, freed only at its end (a quarter
    of the CPU of a 10,000-call search). Neither makes reference cycles: what they drop is
    freed by reference counting."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def check_event(value: Json, header: HistoryHeader, where: str, line: int | None) -> Event:
    """One event line, every field checked; the message says which and why."""
    def bad(problem: str) -> HistoryError:
        return HistoryError(where, line, problem)

    if type(value) is not dict:
        raise bad("an event must be a JSON object")
    if not value.keys() <= _EVENT_KEYS:  # (set views: no set built for a good line)
        raise bad(f"unknown keys {sorted(set(value) - _EVENT_KEYS)}")
    if not value.keys() >= _REQUIRED_EVENT_KEYS:
        missing = [key for key in _REQUIRED_EVENT_KEYS_IN_ORDER if key not in value]
        raise bad(f"missing {', '.join(missing)}")
    client, op, args = value["client"], value["op"], value["args"]
    if type(client) is not str or not client:
        raise bad(f"client must be a non-empty string, got {client!r}")
    operations = operations_of(header.system)
    if type(op) is not str or op not in operations:
        raise bad(f"unknown op {op!r} for {header.system}")
    if type(args) is not dict:
        raise bad("args must be an object")
    for key in ("call_ns", "return_ns", "call_ms", "return_ms"):
        if not _is_int(value[key]) or value[key] < 0:
            raise bad(f"{key} must be a non-negative integer, got {value[key]!r}")
    if value["return_ns"] < value["call_ns"]:
        raise bad(f"returns at {value['return_ns']} ns, before its call at {value['call_ns']} ns")
    if value["return_ms"] < value["call_ms"]:
        raise bad(f"returns at {value['return_ms']} ms, before its call at {value['call_ms']} ms")
    outcome = value.get("outcome", "ok")
    if outcome not in OUTCOMES:
        raise bad(f"outcome must be one of {', '.join(OUTCOMES)}, got {outcome!r}")
    response = value.get("response")
    if outcome == "ok" and type(response) is not dict:
        raise bad("an ok event needs its response (an object)")
    if outcome == "unknown" and response is not None:
        raise bad("an unknown outcome has no response (null)")
    now = value.get("now")
    if header.clock == "pinned" and not _is_int(now):
        raise bad(f"a pinned-clock history gives every call its now (an integer), got {now!r}")
    if header.clock == "real" and now is not None:
        raise bad("a real-clock history has no now: the server read its own clock")
    wire = value.get("wire")
    if wire is not None and type(wire) is not dict:
        raise bad("wire must be an object")
    # Every field given and checked above, so the frozen dataclass's __init__ (one
    # object.__setattr__ per field: a tenth of reading a capture) is not needed.
    event = object.__new__(Event)
    event.__dict__.update(client=client, op=op, args=args, call_ns=value["call_ns"], return_ns=value["return_ns"],
                          call_ms=value["call_ms"], return_ms=value["return_ms"], outcome=outcome,
                          response=response, now=now, wire=wire)
    return event


def read_history(path: str | os.PathLike[str], *, max_events: int = MAX_EVENTS) -> History:
    """The whole history, checked: lines in return order, each client's calls one after another.

    Returned-order and per-client sequence are what a recorder guarantees (it writes a
    line when its call returns, and a client waits for each answer); a file that breaks
    them was not recorded, or was edited, and no order found in it would mean anything."""
    where = str(path)
    try:
        handle = open_regular(path)
    except InputError as error:
        raise HistoryError(where, None, error.problem) from None
    except OSError as error:
        raise HistoryError(where, None, f"cannot open: {error.strerror or error}") from None
    with handle, collector_paused():
        return _read(handle, where, max_events)


def _read(handle: IO[bytes], where: str, max_events: int) -> History:
    events: list[Event] = []
    header: HistoryHeader | None = None
    last_return, client_free = -1, {}
    try:
        lines = JsonLines(handle)
        for line, value in lines:
            if header is None:
                header = _header(value, where)
                continue
            if len(events) >= max_events:
                raise HistoryError(where, line, f"more than {max_events:,} events, the limit on one history "
                                                f"(split it by key or by time)")
            event = check_event(value, header, where, line)
            if event.return_ns < last_return:
                raise HistoryError(where, line, f"out of order: returns at {event.return_ns} ns, before the "
                                                f"line above ({last_return} ns); lines are in return order")
            if event.call_ns < client_free.get(event.client, -1):
                raise HistoryError(where, line, f"client {event.client!r} calls at {event.call_ns} ns before its "
                                                f"previous call returned ({client_free[event.client]} ns)")
            last_return, client_free[event.client] = event.return_ns, event.return_ns
            events.append(event)
    except InputError as error:
        raise HistoryError(where, error.line, error.problem) from None
    except OSError as error:
        raise HistoryError(where, None, f"cannot read: {error.strerror or error}") from None
    if header is None:
        if lines.cut_short is not None:
            raise HistoryError(where, lines.cut_short, "the header line is cut short")
        raise HistoryError(where, None, "empty file; a history starts with its header line")
    return History(header, events, lines.cut_short is not None)


class HistoryWriter:
    """Appends events as their calls return, one flushed line each, from any thread.

    Unlike a trace, a history is visible while it is written: it is a log of what
    happened, and a recorder killed mid-run must leave what it saw. Lines are written
    under a lock, in the order `write` is called (callers call it as each call returns)."""

    def __init__(self, path: str | os.PathLike[str], header: HistoryHeader):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._out = open(self.path, "x", encoding="utf-8")
        self.count = 0
        self._last_return = -1
        self._write_line(header.to_json())

    def _write_line(self, value: dict[str, Json]) -> None:
        # orjson: a recorder writes a line per call while its clients wait (the bench's
        # recording-overhead figure); json for what orjson refuses (integers past 64 bits).
        try:
            text = orjson.dumps(value).decode()
        except TypeError:
            text = json.dumps(value, allow_nan=False, separators=(",", ":"))
        self._out.write(text + "\n")
        self._out.flush()

    def write(self, event: Event) -> None:
        with self._lock:
            # Two threads can return in one order and reach the lock in the other: keep the
            # file in return order by never writing an instant earlier than the last.
            if event.return_ns < self._last_return:
                event = _returning_at(event, self._last_return)
            self._last_return = event.return_ns
            self._write_line(event.to_json())
            self.count += 1

    def close(self) -> None:
        with self._lock:
            self._out.close()

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _returning_at(event: Event, return_ns: int) -> Event:
    """The same call, its return instant moved later: a wider interval is always sound."""
    return Event(event.client, event.op, event.args, event.call_ns, return_ns, event.call_ms,
                 event.return_ms, event.outcome, event.response, event.now, event.wire)

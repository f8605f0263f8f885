"""The Resonate specification's own trace format (its `valid/` folder), read and written.

resonatehq/resonate-specification checks recorded traffic with two checkers over one
NDJSON format: one line per external call, `{kind, now, req, res}` (the request kind, the
pinned instant in ms, the request's `data`, the whole response envelope), and its
`.history` captures add `call`, `return` (the recorder's ns) and `client` (an integer) to
each line. Internal steps (timeouts firing) are never in the file: a checker places them.
A 500 answer is an operation whose outcome nobody saw (their "pending"), which is
duespec's `unknown` outcome; so is any 5xx but the 501 the specification answers its
search ops with, in this format as in duespec's own (`duespec linearize` reports such
calls as a finding of their own). The facts and the mapping are in docs/field.md.

Reading turns such a file into a duespec History, so `duespec linearize` checks the
specification's own captures; `read_any_history` tells the two formats apart by their first
line. Writing goes the other way, from duespec events (`resonate_valid_line`), for
`duespec record --format resonate-valid` and `duespec export --format resonate-valid`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from pathlib import Path
from typing import IO, Any

from duespec.histories.format import (
    MAX_EVENTS, Event, History, HistoryError, HistoryHeader, check_event, collector_paused, read_history,
)
from duespec.limits import InputError, JsonLines, open_regular, parse_json, read_line
from duespec.wire.envelope import (
    KIND_OF_OP, OP_OF_KIND, ProtocolViolation, Request, WireError, args_to_wire,
    envelope, op_response, request_to_op, response_envelope,
)

Json = Any

#: The format's name on the command line.
FORMAT = "resonate-valid"
#: The status the specification's checkers read as "applied or not, answer unobserved".
PENDING_STATUS = 500
#: Kinds the format carries: the external calls. debug.tick and duespec's single-timeout
#: kinds are internal steps there, which a file of this format must not hold.
EXTERNAL_OPS = frozenset(op for kind, op in OP_OF_KIND.items() if not kind.startswith("debug."))
_LINE_KEYS = frozenset({"kind", "now", "req", "res", "call", "return", "client"})
_REQUIRED_LINE_KEYS = frozenset({"kind", "now", "req", "res"})
#: 5xx answers the specification gives itself (501: the search ops are not implemented),
#: compared like any other answer; any other 5xx is the server failing to answer.
SPECIFIED_5XX = frozenset({501})


def unanswered_status(status: Json) -> bool:
    """Whether an answer of this status says nothing of what the server did: a 5xx the
    specification never gives. The call may or may not have taken effect."""
    return type(status) is int and 500 <= status <= 599 and status not in SPECIFIED_5XX


def read_any_history(path: str | os.PathLike[str], *, max_events: int = MAX_EVENTS) -> History:
    """A duespec history (docs/histories.md) or a Resonate `valid/` trace or `.history`
    capture, told apart by the first line, as a History either way.

    This is the reading path for `duespec linearize`: a user points it at whatever file
    they have, and a file of neither format is refused naming both."""
    where = str(path)
    try:
        handle = open_regular(path)
    except InputError as error:
        raise HistoryError(where, None, error.problem) from None
    except OSError as error:
        raise HistoryError(where, None, f"cannot open: {error.strerror or error}") from None
    with handle:
        try:
            first = read_line(handle, 1)
        except InputError as error:
            raise HistoryError(where, 1, error.problem) from None
        if not first.strip():
            raise HistoryError(where, 1, "empty first line; a history starts with its header, a Resonate "
                                         "valid/ trace with its first call")
        try:
            value = parse_json(first, 1)
        except InputError as error:
            raise HistoryError(where, 1, f"{error.problem}; neither a duespec history nor a Resonate "
                                         f"valid/ trace") from None
        if isinstance(value, dict) and "duespec_history" in value:
            handle.close()
            return read_history(path, max_events=max_events)
        if isinstance(value, dict) and {"kind", "req", "res"} <= set(value):
            handle.seek(0)
            with collector_paused():
                return _read_valid(handle, where, max_events)
        if isinstance(value, dict) and "duespec_trace" in value:
            raise HistoryError(where, 1, "this is a duespec trace (one client at pinned times), not a history; "
                                         "check it with `duespec replay`, or convert it with `duespec export "
                                         "--format resonate-valid` and read that")
        raise HistoryError(where, 1, "neither a duespec history (line 1 a header with \"duespec_history\", "
                                     "docs/histories.md) nor a Resonate valid/ trace (one {kind, now, req, res} "
                                     "object per line)")


def _read_valid(handle: IO[bytes], where: str, max_events: int) -> History:
    """Every line of a valid/ trace as an Event, then put in return order.

    A trace without `call`/`return` is sequential by the format's definition (one call at a
    time, in observation order), so its calls get consecutive instants on one client; a
    `.history` capture's own instants and clients are kept."""
    header = HistoryHeader("schedules", "pinned", {}, producer="resonate valid/ trace",
                           meta={"source_format": FORMAT})
    rows: list[tuple[int, Event]] = []
    sequential = None
    try:
        lines = JsonLines(handle, skip_blank=True)  # the specification's readers skip blank lines too
        for line, value in lines:
            if len(rows) >= max_events:
                raise HistoryError(where, line, f"more than {max_events:,} events, the limit on one history")
            timed = isinstance(value, dict) and ("call" in value or "return" in value)
            if sequential is None:
                sequential = not timed
            elif sequential == timed:
                raise HistoryError(where, line, "some lines carry call/return instants and some do not; a "
                                                "capture gives them on every line or on none")
            rows.append((line, _event(value, header, where, line, len(rows))))
    except InputError as error:
        raise HistoryError(where, error.line, error.problem) from None
    except OSError as error:
        raise HistoryError(where, None, f"cannot read: {error.strerror or error}") from None
    truncated = lines.cut_short is not None
    if not rows and not truncated:
        raise HistoryError(where, None, "no calls in the file")
    return History(header, _in_lanes(rows), truncated)


def _in_lanes(rows: list[tuple[int, Event]]) -> list[Event]:
    """The events in return order, each client's overlapping calls put in lanes of their own.

    The specification's `client` is a worker, and one worker (an SDK with a connection
    pool) has several calls in flight at once; duespec's client is a sequence of calls
    that never overlap. So a client's calls are dealt, by call instant, to the first of
    its lanes that is free (`c1`, `c1.2`, ...). Lanes only name who called: a checker
    draws no order from them beyond each call's own interval, so splitting loses nothing."""
    lanes: dict[str, list[int]] = {}
    placed: list[tuple[int, Event]] = []
    for line, event in sorted(rows, key=lambda row: (row[1].call_ns, row[0])):
        ends = lanes.setdefault(event.client, [])
        lane = next((i for i, end in enumerate(ends) if end <= event.call_ns), len(ends))
        if lane == len(ends):
            ends.append(event.return_ns)
        ends[lane] = event.return_ns
        if lane:
            event = dataclasses.replace(event, client=f"{event.client}.{lane + 1}")
        placed.append((line, event))
    return [event for _, event in sorted(placed, key=lambda row: (row[1].return_ns, row[0]))]


def _event(value: Json, header: HistoryHeader, where: str, line: int, index: int) -> Event:
    def bad(problem: str) -> HistoryError:
        return HistoryError(where, line, problem)

    if not isinstance(value, dict):
        raise bad("a valid/ trace line must be a JSON object {kind, now, req, res}")
    if not value.keys() <= _LINE_KEYS:
        raise bad(f"unknown keys {sorted(set(value) - _LINE_KEYS)}; a line has kind, now, req, res (and call, "
                  f"return, client)")
    if not value.keys() >= _REQUIRED_LINE_KEYS:
        missing = [key for key in ("kind", "now", "req", "res") if key not in value]
        raise bad(f"missing {', '.join(missing)}")
    kind, now, req, res = value["kind"], value["now"], value["req"], value["res"]
    if type(kind) is not str or OP_OF_KIND.get(kind) not in EXTERNAL_OPS:
        raise bad(f"kind {str(kind)[:80]!r} is not an external call of the format (promise.*, task.*, "
                  f"schedule.*); internal steps and debug kinds are never in such a file")
    if type(now) is not int or now < 0:
        raise bad(f"now must be a non-negative integer (ms), got {str(now)[:80]!r}")
    if type(req) is not dict:
        raise bad("req must be the request's data, an object")
    head = res.get("head") if isinstance(res, dict) else None
    status = head.get("status") if isinstance(head, dict) else None
    if type(status) is not int:
        raise bad("res must be the whole response envelope {kind, head: {status, ...}, data}")
    corr_id = head.get("corrId") if isinstance(head.get("corrId"), str) else "0"
    try:
        op, args, _ = request_to_op(Request(kind, corr_id, dict(req), now), now)
    except WireError as error:
        raise bad(f"req is not a valid {kind} request: {error.message}") from None
    if unanswered_status(status):  # the server failed, not said what it did: applied or not
        outcome, response = "unknown", None
    else:
        outcome = "ok"
        try:
            response = op_response(op, status, res.get("data"))
        except ProtocolViolation as error:
            raise bad(f"res: {error}") from None
    if "call" in value or "return" in value:
        for key in ("call", "return"):
            if type(value.get(key)) is not int or value[key] < 0:
                raise bad(f"{key} must be a non-negative integer (ns), got {str(value.get(key))[:80]!r}")
        call_ns, return_ns = value["call"], value["return"]
        call_ms, return_ms = call_ns // 1_000_000, return_ns // 1_000_000
    else:
        call_ns, return_ns, call_ms, return_ms = 2 * index, 2 * index + 1, now, now
    client = value.get("client", 0)
    if type(client) is not int and type(client) is not str:
        raise bad(f"client must be an integer or a string, got {str(client)[:80]!r}")
    line_json = {"client": f"c{client}", "op": op, "args": args, "now": now, "call_ns": call_ns,
                 "return_ns": return_ns, "call_ms": call_ms, "return_ms": return_ms, "outcome": outcome,
                 "response": response, "wire": {"request": {"kind": kind, "data": req}, "response": res}}
    return check_event(line_json, header, where, line)


def resonate_valid_line(event: Event, client: int) -> dict[str, Json] | None:
    """One event as a line of the specification's `.history` format, or None for an
    internal step (a tick, a single timeout), which that format leaves to the checker.

    The request's data and the response envelope are the ones that went over the wire
    when the event kept them, else rebuilt from the op and its answer by duespec's wire
    mapping; an unknown outcome is a 500, which the format reads as "may have applied"."""
    if event.op not in EXTERNAL_OPS:
        return None
    if event.now is None:
        raise ValueError("the format needs the pinned time of every call (now), and this history "
                         "is under the real clock")
    kind = KIND_OF_OP[event.op]
    wire = event.wire or {}
    request, answer = wire.get("request"), wire.get("response")
    corr_id = f"c{client}-{event.call_ns}"
    if isinstance(request, dict) and isinstance(request.get("data"), dict):
        req = request["data"]
    else:
        req = args_to_wire(event.op, event.args, corr_id)
    if event.outcome == "unknown":
        res = envelope(kind, corr_id, PENDING_STATUS, "outcome unknown: the call timed out or its "
                                                      "connection broke")
    elif isinstance(answer, dict):
        res = answer
    else:
        res = response_envelope(kind, corr_id, event.op, event.response)
    return {"kind": kind, "now": event.now, "req": req, "res": res, "call": event.call_ns,
            "return": event.return_ns, "client": client}


class ResonateValidWriter:
    """Appends events in the specification's `.history` format, one flushed line each.

    The same contract as HistoryWriter (duespec.histories.format): a line per returned
    call, written under a lock in the order `write` is called, so a killed recorder leaves
    every call up to its last complete line. Clients are numbered in order of first call,
    as the format's clients are integers. The format has no header: what duespec would put
    there (the system is always schedules, the clock always pinned) the format implies."""

    def __init__(self, path: str | os.PathLike[str], header: HistoryHeader):
        if header.clock != "pinned":
            raise ValueError("the resonate-valid format has one pinned clock (`now` on every line); "
                             "record with --clock pinned, or write duespec's own format")
        self.path = Path(path)
        self._lock = threading.Lock()
        self._out = open(self.path, "x", encoding="utf-8")
        self._clients: dict[str, int] = {}
        self.count = 0

    def write(self, event: Event) -> None:
        with self._lock:
            client = self._clients.setdefault(event.client, len(self._clients))
            line = resonate_valid_line(event, client)
            if line is None:
                return
            self._out.write(json.dumps(line, allow_nan=False, separators=(",", ":")) + "\n")
            self._out.flush()
            self.count += 1

    def close(self) -> None:
        with self._lock:
            self._out.close()

    def __enter__(self) -> ResonateValidWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


"""`duespec export --format resonate-valid`: duespec traces and histories as the Resonate
specification's own trace format, for its checkers (valid/lean, valid/porc).

A trace is one client at pinned times, so it becomes a sequential `valid/` trace with
consecutive call/return instants; a history keeps its clients (numbered) and instants.
Ticks and single timeouts are internal steps the specification's format must not hold
(its checkers place them), so they are left out and counted. The mapping of each op to
its request data and response envelope is duespec's wire mapping (docs/wire.md).
"""

from __future__ import annotations

import argparse
import json
import sys

from duespec.histories.format import Event, HistoryError
from duespec.histories.resonate_valid import FORMAT, read_any_history, resonate_valid_line
from duespec.limits import InputError, open_regular, parse_json, read_line

EXIT_HOLDS = 0


def _is_trace(path: str) -> bool:
    """Whether line 1 is a duespec trace header (anything else is read as a history)."""
    try:
        with open_regular(path) as handle:
            first = read_line(handle, 1)
        value = parse_json(first, 1) if first.strip() else None
    except (InputError, OSError):
        return False  # read_any_history names the problem
    return isinstance(value, dict) and "duespec_trace" in value


def trace_events(path: str) -> list[Event]:
    """A schedules trace's steps as one client's calls, in order, each with its result."""
    from duespec.traces.format import is_reset, read_trace

    header, steps = read_trace(path)
    if header.system != "schedules":
        raise HistoryError(path, 1, f"a {header.system} trace; the Resonate format holds schedules calls only")
    events = []
    for number, step in enumerate(steps):
        if is_reset(step):
            raise HistoryError(path, None, "the trace restarts the server (a reset line); the Resonate format "
                                           "has no reset: export each run on its own")
        if "result" not in step:
            raise HistoryError(path, None, f"step {step['i']} has no result; the format records answers "
                                           f"(replay the trace to record them)")
        if type(step["now"]) is not int or type(step["args"]) is not dict:
            raise HistoryError(path, None, f"step {step['i']} is a malformed request (now or args); the "
                                           f"format records only requests a server reads")
        events.append(Event("c0", step["op"], step["args"], 2 * number, 2 * number + 1, step["now"],
                            step["now"], "ok", step["result"], step["now"]))
    return events


def export_lines(path: str) -> tuple[list[str], int]:
    """The output's lines and how many internal steps were left out."""
    if _is_trace(path):
        events = trace_events(path)
    else:
        history = read_any_history(path)
        if history.header.system != "schedules":
            raise HistoryError(path, 1, f"a {history.header.system} history; the Resonate format holds "
                                        f"schedules calls only")
        if history.header.clock != "pinned":
            raise HistoryError(path, 1, "a real-clock history: the Resonate format needs the pinned time of "
                                        "every call (`now`), and a real-clock call has only an interval")
        events = history.events
    clients: dict[str, int] = {}
    lines, internal = [], 0
    for event in events:
        line = resonate_valid_line(event, clients.setdefault(event.client, len(clients)))
        if line is None:
            internal += 1
            continue
        lines.append(json.dumps(line, allow_nan=False, separators=(",", ":")) + "\n")
    if not lines:
        # The format has no header: a file of no calls is no trace, and reading it back is
        # refused, so writing one would turn a verdict into a malformed input.
        raise HistoryError(path, None, f"no call to write ({len(events):,} events, {internal:,} of them internal "
                                       f"steps): the Resonate format has no header, so a file without calls is "
                                       f"not a trace of it")
    return lines, internal


def main(args: argparse.Namespace) -> int:
    from duespec.exits import UsageError
    from duespec.outputs import AtomicFile
    from duespec.traces.format import TraceError

    try:
        lines, internal = export_lines(args.source)
    except (HistoryError, TraceError) as error:
        raise UsageError(f"MALFORMED: {error}") from None
    with AtomicFile(args.output, inputs=[args.source], what="-o") as out:
        for line in lines:
            out.write(line)
    print(f"duespec export: {len(lines)} calls written to {args.output} ({FORMAT})"
          + (f"; {internal} internal steps (ticks, timeouts) left out, as the format requires" if internal else ""),
          file=sys.stderr)
    return EXIT_HOLDS


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "export", help="write a trace or history in the Resonate specification's valid/ format",
        description="Write a duespec trace (docs/traces.md) or history (docs/histories.md) as the "
                    "Resonate specification's valid/ trace format: one {kind, now, req, res, call, "
                    "return, client} line per call. See docs/field.md.",
        epilog="example: duespec export traffic.ndjson --format resonate-valid -o traffic.history")
    parser.add_argument("source", help="a duespec trace or history (schedules, pinned clock)")
    parser.add_argument("--format", choices=(FORMAT,), required=True, help="the output format")
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="the file to write")
    parser.set_defaults(run=main)

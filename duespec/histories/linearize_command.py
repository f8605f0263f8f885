"""`duespec linearize HISTORY --system S`: the verdict on a concurrent history, for people.

Exit 0 linearizable, 1 not linearizable (with a shrunk counterexample) or calls left
unanswered (5xx, or lost) unless --allow-unanswered, 2 bad usage or a malformed history,
3 unknown: the budget ran out first. Unknown is never 0: a checker that gave up has not
shown anything holds. Both formats read alike: a 5xx answer is an unknown outcome. The user's guide is docs/linearize.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from typing import Any, Sequence

from duespec.exits import EXIT_FAILED
from duespec.histories.format import Event, History, HistoryError
from duespec.systems import system_argument

#: Default seconds for the search (and, again, for shrinking a counterexample).
DEFAULT_BUDGET = 60.0
#: Most events `duespec linearize` reads by default: past this the file is refused as soon
#: as the reader reaches it, before the rest is read, so a huge file costs neither time nor
#: memory. 250,000 events are about 250 MB of parsed history; --max-events raises it up to
#: the format's own limit (1,000,000).
MAX_CHECK_EVENTS = 250_000
#: Default --max-memory, MiB: what one search's memo may hold before the verdict is unknown
#: (duespec.histories.linearize.DEFAULT_MAX_MEMORY, said here so --help needs no search).
DEFAULT_MAX_MEMORY_MIB = 512


def budget_seconds(text: str) -> float:
    """argparse type for --budget: finite seconds >= 0 (0 gives unknown at once)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text[:40]!r}") from None
    if not math.isfinite(value) or value < 0 or value > 86_400:
        raise argparse.ArgumentTypeError(f"must be between 0 and 86400 seconds, got {text[:40]!r}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text[:40]!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def memory_mib(text: str) -> int:
    """argparse type for --max-memory: whole MiB, at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of MiB, got {text[:40]!r}") from None
    if not 1 <= value <= 1 << 20:
        raise argparse.ArgumentTypeError(f"must be between 1 and {1 << 20:,} MiB, got {value:,}")
    return value


def answered_5xx(event: Event) -> bool:
    """Whether the server answered this call with a 5xx the specification never gives (its
    search ops' 501 is an answer like any other): in duespec's format, a response of that
    status; in the valid/ format (read as an unknown outcome), its envelope's."""
    from duespec.histories.resonate_valid import unanswered_status

    answer = event.response if event.outcome == "ok" else (event.wire or {}).get("response")
    if not isinstance(answer, dict):
        return False
    head = answer.get("head")
    return unanswered_status(head.get("status") if isinstance(head, dict) else answer.get("status"))


def unanswered_as_unknown(history: History) -> History:
    """One rule for every format: a call answered 5xx is an unknown outcome to the search.

    The server said that it failed, not what it did, so the call may or may not have taken
    effect, as the specification's valid/ checkers read a 500 (and as a lost answer is
    read). Its answer is kept under the event's wire, for people."""
    events = [dataclasses.replace(event, outcome="unknown", response=None,
                                  wire={"response": event.response, **(event.wire or {})})
              if event.outcome == "ok" and answered_5xx(event) else event for event in history.events]
    return dataclasses.replace(history, events=events)


def unanswered_finding(history: History, allowed: bool) -> tuple[str | None, bool]:
    """The calls the server left unanswered (5xx, or no answer at all), as one finding of its
    own: (what to say, or None when there are none; whether it fails the check). A server
    that answers 500 to everything must never pass because every call is then unknown."""
    unknown = [event for event in history.events if event.outcome == "unknown"]
    if not unknown:
        return None, False
    errors = sum(1 for event in unknown if answered_5xx(event))
    lost = len(unknown) - errors
    parts = [f"{errors:,} call{'' if errors == 1 else 's'} answered 5xx"] if errors else []
    parts += [f"{lost:,} call{'' if lost == 1 else 's'} lost (no answer: timed out or the connection broke)"] if lost else []
    what = (f"UNANSWERED: {' and '.join(parts)}, each an unknown outcome to the search (it may or may not have "
            f"taken effect)")
    if allowed:
        return what + "; accepted (--allow-unanswered), so it does not fail the check", False
    return what + "; a finding of its own, which fails the check (--allow-unanswered accepts it)", True


def load(path: str, system: str | None, max_events: int) -> History:
    """A duespec history or a Resonate valid/ trace or .history capture, checked for `system`."""
    from duespec.exits import UsageError
    from duespec.histories.format import MAX_EVENTS
    from duespec.histories.resonate_valid import read_any_history

    if not 1 <= max_events <= MAX_EVENTS:
        raise UsageError(f"--max-events must lie in [1, {MAX_EVENTS:,}], got {max_events:,}")
    try:
        history = read_any_history(path, max_events=max_events)
    except HistoryError as error:
        raise UsageError(f"MALFORMED: {error}") from None
    if system is not None and history.header.system != system:
        raise UsageError(f"{path}: a {history.header.system} history, checked as --system {system}; "
                         f"give --system {history.header.system}")
    return history


def judge(history: History, *, source: str, profile: str | None, budget: float, max_timer_lag: int,
          html_path: str | None = None, json_path: str | None = None, out=None,
          max_memory_mib: int = DEFAULT_MAX_MEMORY_MIB, allow_unanswered: bool = False,
          declared: Sequence[Any] = ()) -> int:
    """Check, print the verdict, write the reports; the exit code. Shared with `duespec stress`.

    The exit code is derived from the search's verdict and the unanswered calls: 5xx or
    lost answers fail the check (exit 1) unless `allow_unanswered`, whatever the search says."""
    from duespec.exits import UsageError
    from duespec.histories.linearize import check_history
    from duespec.histories.report import describe, render_html
    from duespec.outputs import write_text

    out = out or sys.stdout
    history = unanswered_as_unknown(history)
    try:
        verdict = check_history(history, profile=profile, budget=budget, max_timer_lag=max_timer_lag,
                                max_memory=max_memory_mib * 2**20, declared=declared)
    except ValueError as error:  # a profile or config the model refuses
        raise UsageError(f"{source}: {error}") from None
    unanswered, fails = unanswered_finding(history, allow_unanswered)
    if unanswered is not None:
        verdict.notes.append(unanswered)
    code = EXIT_FAILED if fails else verdict.exit_code
    # The files first: a closed stdout (a pipe into `head`) must not cost the reports.
    if html_path:
        write_text(html_path, render_html(verdict, source), what="--html")
    if json_path:
        report = {**verdict.to_json(), "exit_code": code,
                  "unanswered": {"calls": sum(1 for e in history.events if e.outcome == "unknown"),
                                 "allowed": allow_unanswered, "fails": fails}}
        write_text(json_path, json.dumps(report, indent=1) + "\n", what="--json")
    first = f"FAILED: {unanswered}\n" if fails else ""
    print(first + cut_short_said(describe(verdict), history) + (f"\nreport: {html_path}" if html_path else ""),
          file=out, flush=True)
    return code


def read_declared(path: str | None, system: str) -> list[Any]:
    """--declared FILE (docs/declared.md) for a history of `system`: its entries, or a
    UsageError naming the file, the entry and the problem."""
    if path is None:
        return []
    from duespec.campaigns.declared import DeclaredError, load
    from duespec.exits import UsageError
    from duespec.systems import get_system

    try:
        return load(path, get_system(system))
    except DeclaredError as error:
        raise UsageError(str(error)) from None


def add_declared(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--declared", metavar="FILE",
                        help="differences the target's maintainers accept (docs/declared.md): an answer that "
                             "differs from the model's only at a response path an entry names for its op is "
                             "taken as the model's; the report lists them")


def cut_short_said(text: str, history: History) -> str:
    """The verdict text, its first line (the verdict's) saying so when the history's last
    line was cut short: a verdict over part of a file must not read as one over all of it."""
    if not history.truncated:
        return text
    verdict, newline, rest = text.partition("\n")
    return (f"{verdict} [INPUT CUT SHORT: the last line is incomplete; only the {len(history.events):,} "
            f"calls before it were checked]{newline}{rest}")


def main(args: argparse.Namespace) -> int:
    from duespec.exits import UsageError
    from duespec.outputs import check_output

    for what, path in (("--html", args.html), ("--json", args.json)):
        if path:
            check_output(path, inputs=[args.history], what=what)
    if args.html and args.json and args.html == args.json:
        raise UsageError("--html and --json name the same file; give each report its own")
    history = load(args.history, args.system, args.max_events)
    declared = read_declared(args.declared, history.header.system)
    return judge(history, source=args.history, profile=args.profile, budget=args.budget,
                 max_timer_lag=args.max_timer_lag, html_path=args.html, json_path=args.json,
                 max_memory_mib=args.max_memory, allow_unanswered=args.allow_unanswered, declared=declared)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from duespec.histories.linearize import DEFAULT_MAX_TIMER_LAG

    parser = subparsers.add_parser(
        "linearize", help="check a concurrent history against the model (linearizability)",
        description="Is there an order of the history's calls, each taking effect at one instant inside "
                    "its [call, return] interval, in which the model gives every recorded answer? Reads a "
                    "duespec history (docs/histories.md) or a Resonate valid/ trace or .history capture. "
                    "Exit 0 linearizable; 1 not (a shrunk counterexample is printed); 2 bad usage or "
                    "malformed input; 3 unknown (the budget ran out: never a pass). See docs/linearize.md.",
        epilog="example: duespec linearize run.ndjson --system schedules --budget 30 --html report.html")
    parser.add_argument("history", help="the history file")
    parser.add_argument("--system", type=system_argument, default=None,
                        help="the system the history is of (default: the one its header names; a Resonate "
                             "trace is schedules); a history of another system is refused")
    parser.add_argument("--profile", default=None, help="the spec reading (default: the history's config)")
    parser.add_argument("--budget", type=budget_seconds, default=DEFAULT_BUDGET, metavar="SECONDS",
                        help=f"seconds for the search, and again for shrinking a counterexample "
                             f"(default {DEFAULT_BUDGET:g}; 0 answers unknown at once)")
    parser.add_argument("--max-timer-lag", type=_non_negative, default=DEFAULT_MAX_TIMER_LAG, metavar="MS",
                        help=f"real clock: how late the server may fire a due timeout "
                             f"(default {DEFAULT_MAX_TIMER_LAG})")
    parser.add_argument("--max-memory", type=memory_mib, default=DEFAULT_MAX_MEMORY_MIB, metavar="MIB",
                        help=f"cap on what one search may hold, in MiB (default {DEFAULT_MAX_MEMORY_MIB}); past "
                             f"it the verdict is unknown (exit 3), whatever budget is left")
    parser.add_argument("--max-events", type=int, default=MAX_CHECK_EVENTS, metavar="N",
                        help=f"refuse a history of more events, before reading the rest (default "
                             f"{MAX_CHECK_EVENTS:,}; at most 1,000,000)")
    add_allow_unanswered(parser)
    add_declared(parser)
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    parser.add_argument("--json", metavar="FILE", help="also write the verdict as JSON")
    parser.set_defaults(run=main)


def add_allow_unanswered(parser: argparse.ArgumentParser) -> None:
    """--allow-unanswered, the same for `linearize` and `stress`."""
    parser.add_argument("--allow-unanswered", action="store_true",
                        help="accept calls answered 5xx or lost (no answer): still checked as unknown "
                             "outcomes and reported, they no longer fail the check by themselves")

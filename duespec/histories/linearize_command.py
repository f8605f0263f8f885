"""`duespec linearize HISTORY --system S`: the verdict on a concurrent history, for people.

Exit 0 linearizable, 1 not linearizable (with a shrunk counterexample), 2 bad usage or a
malformed history, 3 unknown: the budget ran out first. Unknown is never 0: a checker
that gave up has not shown anything holds. The user's guide is docs/linearize.md.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from duespec.histories.format import History, HistoryError
from duespec.systems import system_argument

#: Default seconds for the search (and, again, for shrinking a counterexample).
DEFAULT_BUDGET = 60.0
#: Most events `duespec linearize` reads by default: past this the file is refused as soon
#: as the reader reaches it, before the rest is read, so a huge file costs neither time nor
#: memory. 250,000 events are about 250 MB of parsed history; --max-events raises it up to
#: the format's own limit (1,000,000).
MAX_CHECK_EVENTS = 250_000


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
          html_path: str | None = None, json_path: str | None = None, out=None) -> int:
    """Check, print the verdict, write the reports; the exit code. Shared with `duespec stress`."""
    from duespec.exits import UsageError
    from duespec.histories.linearize import check_history
    from duespec.histories.report import describe, render_html
    from duespec.outputs import write_text

    out = out or sys.stdout
    try:
        verdict = check_history(history, profile=profile, budget=budget, max_timer_lag=max_timer_lag)
    except ValueError as error:  # a profile or config the model refuses
        raise UsageError(f"{source}: {error}") from None
    # The files first: a closed stdout (a pipe into `head`) must not cost the reports.
    if html_path:
        write_text(html_path, render_html(verdict, source), what="--html")
    if json_path:
        write_text(json_path, json.dumps(verdict.to_json(), indent=1) + "\n", what="--json")
    print(cut_short_said(describe(verdict), history) + (f"\nreport: {html_path}" if html_path else ""),
          file=out, flush=True)
    return verdict.exit_code


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
    return judge(history, source=args.history, profile=args.profile, budget=args.budget,
                 max_timer_lag=args.max_timer_lag, html_path=args.html, json_path=args.json)


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
    parser.add_argument("--max-events", type=int, default=MAX_CHECK_EVENTS, metavar="N",
                        help=f"refuse a history of more events, before reading the rest (default "
                             f"{MAX_CHECK_EVENTS:,}; at most 1,000,000)")
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    parser.add_argument("--json", metavar="FILE", help="also write the verdict as JSON")
    parser.set_defaults(run=main)

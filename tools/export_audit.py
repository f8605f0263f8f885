"""`make export-audit`: every history the test suite wrote keeps its verdict through `duespec export`.

tests/history_audit.py copies each history the suite writes into a folder; this checks each
one: the `duespec linearize` verdict on the file as written, then on the file exported to the
Resonate valid/ format (`duespec export --format resonate-valid`) and read back, as
`duespec linearize` reads one. It prints a line per history with both verdicts and exits 1,
naming the history, when any differs.

    .venv/bin/python tools/export_audit.py .duespec/export-audit [--budget SECONDS]

What each history comes to (docs/linearize.md, "The export audit"):
- SAME: both verdicts agree (exit code and the search's status).
- LIMIT: the written history with only its internal steps left out (ticks: the valid/ format
  holds none, its checkers place timeout firings themselves) is judged as the export, and
  either the written history is not linearizable and its export is (a tick's own answer is
  no longer checked), or the reverse with a tick pinned past every call's `now` (the clock
  it carried is gone with it): the difference is the format's, shown, not assumed. Any
  other difference is a MISMATCH.
- NOT EXPRESSIBLE: the export refuses the history (a duebook history, a real-clock one); the
  export's own reason is printed.
- UNREADABLE: the reader refuses the file as written (the suite writes malformed histories
  on purpose, to test the reader); the reader's reason is printed.
- UNDECIDED: one side's search decided and the other's ran out of budget, so nothing was
  compared; fails. (Both running out alike is the same verdict, said as such.)
The valid/ format carries no server config, so the export is read back under the written
history's config (what `--profile` gives a user).

Exit 0 when at least one history was compared and none differed, was undecided, or failed
to read back; 1 otherwise; 2 for a folder that holds no capture.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import sys
import tempfile
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

from duespec.exits import UsageError
from duespec.histories.export import export_lines
from duespec.histories.format import History, HistoryError
from duespec.histories.linearize import DEFAULT_MAX_TIMER_LAG
from duespec.histories.linearize_command import judge
from duespec.histories.resonate_valid import EXTERNAL_OPS, FORMAT, read_any_history

EXIT_SAME, EXIT_DIFFERS, EXIT_USAGE = 0, 1, 2
#: Outcomes that fail the audit.
FAILING = ("MISMATCH", "UNDECIDED", "ERROR")


@dataclasses.dataclass
class Outcome:
    kind: str
    file: str
    origins: list[str]
    native: dict[str, Any] | None = None
    exported: dict[str, Any] | None = None
    without_internal_steps: dict[str, Any] | None = None
    reason: str = ""

    def line(self) -> str:
        verdicts = ""
        if self.native is not None and self.exported is not None:
            verdicts = f"written {_said(self.native)}, exported {_said(self.exported)}"
            if self.without_internal_steps is not None:
                verdicts += f", written without internal steps {_said(self.without_internal_steps)}"
        origin = self.origins[0] + (f" (and {len(self.origins) - 1} more)" if len(self.origins) > 1 else "")
        detail = "; ".join(part for part in (verdicts, self.reason) if part)
        return f"{self.kind:<15} {self.file}  {origin}: {detail}"


def _said(verdict: dict[str, Any]) -> str:
    return f"exit {verdict['exit_code']} ({verdict['status']})"


def verdict_of(history: History, source: str, budget: float) -> dict[str, Any]:
    """What `duespec linearize` says of `history`: its exit code, the search's status and how
    many calls were unanswered, from the command's own JSON report."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "verdict.json"
        code = judge(history, source=source, profile=None, budget=budget, max_timer_lag=DEFAULT_MAX_TIMER_LAG,
                     json_path=str(report), out=io.StringIO())
        written = json.loads(report.read_text())
    assert written["exit_code"] == code, (written["exit_code"], code)
    return {"exit_code": code, "status": written["status"], "unanswered": written["unanswered"]["calls"]}


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (a["exit_code"], a["status"], a["unanswered"]) == (b["exit_code"], b["status"], b["unanswered"])


def without_internal_steps(history: History) -> History:
    """The written history as the valid/ format sees it in every way but the wire mapping:
    its internal steps left out, and marked as a format whose checkers place them."""
    header = dataclasses.replace(history.header, meta={**history.header.meta, "source_format": FORMAT})
    return dataclasses.replace(history, header=header,
                               events=[event for event in history.events if event.op in EXTERNAL_OPS])


def audit_one(path: Path, origins: list[str], budget: float, scratch: Path) -> Outcome:
    outcome = Outcome("SAME", path.name, origins)
    try:
        native = read_any_history(path)
    except HistoryError as error:
        outcome.kind, outcome.reason = "UNREADABLE", error.problem
        return outcome
    try:
        lines, internal = export_lines(str(path))
    except HistoryError as error:
        outcome.kind, outcome.reason = "NOT EXPRESSIBLE", error.problem
        return outcome
    exported_path = scratch / (path.stem + ".history")
    exported_path.write_text("".join(lines), encoding="utf-8")
    try:
        back = read_any_history(exported_path)
    except HistoryError as error:
        outcome.kind, outcome.reason = "ERROR", f"the export does not read back: {error}"
        return outcome
    back = dataclasses.replace(back, header=dataclasses.replace(back.header, config=native.header.config))
    try:
        outcome.native = verdict_of(native, str(path), budget)
    except UsageError as error:  # a config the model refuses: `duespec linearize` refuses it too
        outcome.kind, outcome.reason = "UNREADABLE", str(error)
        return outcome
    outcome.exported = verdict_of(back, str(exported_path), budget)
    if internal:
        outcome.reason = f"{internal} internal steps left out by the export"
    if same(outcome.native, outcome.exported):
        if outcome.native["status"] == "unknown":
            outcome.reason = "both searches ran out of budget alike"
        return outcome
    if "unknown" in (outcome.native["status"], outcome.exported["status"]):
        outcome.kind = "UNDECIDED"
        outcome.reason = "one search decided and the other ran out of budget (try --budget)"
        outcome.without_internal_steps = verdict_of(without_internal_steps(native), str(path), budget)
        return outcome
    outcome.without_internal_steps = verdict_of(without_internal_steps(native), str(path), budget)
    limit = format_limit(native, outcome.native, outcome.exported, outcome.without_internal_steps)
    outcome.kind, outcome.reason = ("LIMIT", limit) if limit else ("MISMATCH", outcome.reason)
    return outcome


def format_limit(native: History, written: dict[str, Any], exported: dict[str, Any],
                 without: dict[str, Any]) -> str | None:
    """Why the two verdicts may differ by the valid/ format's design, or None when they may not.

    Only when the written history with its internal steps left out (and nothing else
    changed) gets the export's verdict is the difference the format's; then it is one of two:
    a tick's own answer was wrong (not checked once the tick is gone), or a tick carried the
    server's clock past every call's pinned `now` (gone with it, so a firing the calls show
    seems to come before the clock could reach it)."""
    if not same(without, exported):
        return None
    if written["status"] == "not linearizable" and exported["status"] == "linearizable":
        return ("the valid/ format holds no internal steps: its checkers place timeout firings where they may, "
                "so what the written history's ticks fired, and when, is not checked")
    pinned = [event.now for event in native.events if event.op in EXTERNAL_OPS and event.now is not None]
    ticked = [event.now for event in native.events if event.op not in EXTERNAL_OPS and event.now is not None]
    if (written["status"] == "linearizable" and exported["status"] == "not linearizable" and ticked
            and max(ticked) > max(pinned, default=-1)):
        return (f"a tick pinned the server's clock at {max(ticked)}, past every call's `now` (at most "
                f"{max(pinned, default=0)}); the valid/ format leaves the tick and its instant out, so a firing "
                f"the calls show comes before any call could have moved the clock there")
    return None


def read_index(audit_dir: Path) -> tuple[dict[str, list[str]], list[dict[str, Any]]]:
    """The captured files with the tests that wrote them, and the histories not copied."""
    origins: dict[str, list[str]] = {}
    not_copied = []
    for index in sorted(audit_dir.glob("index-*.jsonl")):
        for text in index.read_text(encoding="utf-8").splitlines():
            entry = json.loads(text)
            if entry["file"] is None:
                not_copied.append(entry)
                continue
            seen = origins.setdefault(entry["file"], [])
            if entry["origin"] not in seen:
                seen.append(entry["origin"])
    return origins, not_copied


def audit(audit_dir: Path, budget: float, out=sys.stdout) -> int:
    origins, not_copied = read_index(audit_dir)
    if not origins and not not_copied:
        print(f"export audit: {audit_dir} holds no captured history (run the suite with -p tests.history_audit "
              f"and DUESPEC_HISTORY_AUDIT={audit_dir})", file=out)
        return EXIT_USAGE
    outcomes = []
    with tempfile.TemporaryDirectory() as scratch:
        for name in sorted(origins, key=lambda name: (origins[name][0], name)):
            try:
                outcome = audit_one(audit_dir / "histories" / name, origins[name], budget, Path(scratch))
            except Exception:  # one history's crash is a failing outcome, never the end of the audit
                outcome = Outcome("ERROR", name, origins[name],
                                  reason=traceback.format_exc(limit=3).strip().replace("\n", " | "))
            outcomes.append(outcome)
            print(outcome.line(), file=out, flush=True)
    for entry in not_copied:
        print(f"{'NOT COPIED':<15} {entry['source'] or entry['via']}  {entry['origin']}: {entry['not_copied']}",
              file=out)
    kinds = Counter(outcome.kind for outcome in outcomes)
    compared = kinds["SAME"] + kinds["LIMIT"] + kinds["MISMATCH"]
    alike_unknown = sum(1 for outcome in outcomes if outcome.kind == "SAME" and outcome.native["status"] == "unknown")
    print(f"export audit: {len(outcomes):,} histories captured, {compared:,} compared: {kinds['SAME']:,} same "
          f"({alike_unknown:,} of them unknown on both sides), "
          f"{kinds['LIMIT']:,} differing only by the format's limit, {kinds['MISMATCH']:,} mismatched; "
          f"{kinds['NOT EXPRESSIBLE']:,} not expressible in {FORMAT}, {kinds['UNREADABLE']:,} unreadable as "
          f"written, {kinds['UNDECIDED']:,} undecided, {kinds['ERROR']:,} errors, {len(not_copied):,} not copied",
          file=out)
    reasons = Counter(outcome.reason for outcome in outcomes if outcome.kind == "NOT EXPRESSIBLE")
    for reason, count in reasons.most_common():
        print(f"  not expressible ({count:,}): {reason}", file=out)
    failing = [outcome for outcome in outcomes if outcome.kind in FAILING]
    for outcome in failing:
        print(f"FAILED: {outcome.kind} {outcome.file} written by {', '.join(outcome.origins)}", file=out)
    if failing:
        return EXIT_DIFFERS
    if not compared:
        print("FAILED: no history was compared; an audit that compared nothing shows nothing", file=out)
        return EXIT_DIFFERS
    return EXIT_SAME


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("audit_dir", type=Path, help="the folder tests/history_audit.py copied histories into")
    parser.add_argument("--budget", type=float, default=60.0,
                        help="seconds for each search (and each shrink), as duespec linearize --budget")
    args = parser.parse_args(argv)
    if not args.audit_dir.is_dir():
        print(f"export audit: {args.audit_dir} is not a folder", file=sys.stderr)
        return EXIT_USAGE
    return audit(args.audit_dir, args.budget)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""`duespec merge REPORT.json...`: the shards of one campaign, one verdict.

Every campaign command writes a machine-readable report with `--json FILE` (schema
below). A campaign split with `--shard I/N` over N machines writes N reports; `merge`
checks that together they ran every chunk of each campaign exactly once, and prints the
verdict, the class table and (with `--junit`) one JUnit file, as the unsharded campaign
would. Exit 0: every campaign holds (and every trace replayed is confirmed); 1: a class is
not declared or a trace diverges; 2: a report is malformed, shards overlap or are missing.

Report (JSON, `"duespec_report": 1`): `command`, `exit`, `campaigns` (one per system and
profile: its budget, the chunks it ran of `total_chunks`, runs, steps, seconds, coverage,
what masks kept from comparison, the database's counts, and `findings`: per class its
kind, class, summary, counterexample, config, declared entries, the chunks that found it,
its trace and the text of its report) and `replays` (per trace: path, verdict, report).
"""

from __future__ import annotations

import argparse
from typing import Any

from duespec.campaigns import junit
from duespec.campaigns.conform import summary_table, verdict_line
from duespec.campaigns.parallel import combine, cutoff
from duespec.campaigns.run import CampaignResult
from duespec.campaigns.report_json import campaign_from_json, campaign_to_json, load_report, write_report
from duespec.exits import EXIT_FAILED, EXIT_HOLDS, EXIT_USAGE, UsageError


# -- merging --------------------------------------------------------------------------

_IDENTITY = ("system", "profile", "target", "seed", "examples_budget", "steps_per_run", "depth",
             "max_classes", "total_chunks")


def merge_campaigns(entries: list[tuple[str, dict[str, Any]]]) -> list[tuple[dict[str, Any], CampaignResult]]:
    """Group the campaigns of all reports by identity and combine each group's shards.
    Overlapping or missing chunks are a UsageError naming them."""
    groups: dict[tuple[Any, ...], list[tuple[str, dict[str, Any]]]] = {}
    for path, campaign in entries:
        try:
            key = tuple(campaign[name] for name in _IDENTITY)
        except KeyError as error:
            raise UsageError(f"{path}: a campaign without {error}") from None
        groups.setdefault(key, []).append((path, campaign))
    merged = []
    for key, members in groups.items():
        seen: dict[int, str] = {}
        chunks: list[tuple[str, dict[str, Any]]] = []
        for path, campaign in members:
            for part in campaign.get("parts") or [campaign]:
                chunks.append((path, part))
            for chunk in campaign["chunks"]:
                if chunk in seen:
                    raise UsageError(f"{seen[chunk]} and {path} both ran chunk {chunk} of {key[0]} [{key[1]}] "
                                     f"seed {key[3]}: shards overlap")
                seen[chunk] = path
        total = key[-1]
        try:
            parts = [campaign_from_json(campaign) for _, campaign in chunks]
        except (KeyError, TypeError, ValueError) as error:
            raise UsageError(f"{members[0][0]}: malformed campaign ({type(error).__name__}: {error})") from None
        last = cutoff(parts, list(range(total)), key[7]) if all(len(p.chunks) == 1 for p in parts) else None  # type: ignore[attr-defined]
        needed = range(total if last is None else last + 1)
        missing = sorted(set(needed) - set(seen))
        if missing:
            raise UsageError(f"{key[0]} [{key[1]}] seed {key[3]}: chunks {', '.join(map(str, missing))} of {total} "
                             f"are in no report (a shard is missing)")
        if last is not None:
            parts = [part for part in parts if part.chunks[0] <= last]  # type: ignore[attr-defined]
        result = combine(parts, profile=key[1], system=key[0], seed=key[3])
        result.total_chunks = total  # type: ignore[attr-defined]
        merged.append((members[0][1], result))
    return merged


def main(args: argparse.Namespace) -> int:
    entries: list[tuple[str, dict[str, Any]]] = []
    replays: list[dict[str, Any]] = []
    commands = set()
    checks: list[dict[str, Any]] = []
    totals: set[Any] = set()
    for path in args.reports:
        document = load_report(path)
        commands.add(document.get("command"))
        checks += document.get("checks", [])
        if document.get("command") == "replay" and document.get("shard"):
            totals.add(document.get("traces_total"))
        entries += [(path, campaign) for campaign in document.get("campaigns", [])]
        replays += document.get("replays", [])
    campaigns = merge_campaigns(entries)
    cases: list[junit.Case] = []
    failed = False
    for first, result in campaigns:
        print(verdict_line(result, first["target"]), flush=True)
        details = []
        for finding in result.findings:
            text = getattr(finding, "details", None) or f"{finding.label}\n{finding.summary}"
            chunks = getattr(finding, "chunks", [])
            text += f"\nfound in chunk{'s' if len(chunks) > 1 else ''} {', '.join(map(str, chunks))}"
            if getattr(finding, "from_database", False):
                text += " (by replay from the example database)"
            details.append(text)
            print(text, flush=True)
        if result.findings:
            print("\n".join(summary_table(result, [getattr(f, "trace", None) for f in result.findings])), flush=True)
        stats = getattr(result, "database_stats", None)
        if stats is not None:
            print(stats.line(), flush=True)
        failed = failed or not result.ok
        cases.append(junit.Case(result, first["target"], "\n\n".join(details), tuple(details)))
    seen_paths: dict[str, dict[str, Any]] = {}
    for replayed in replays:
        if replayed["path"] in seen_paths:
            raise UsageError(f"trace {replayed['path']} is in two reports: shards overlap")
        seen_paths[replayed["path"]] = replayed
    if totals and (len(totals) > 1 or len(replays) != next(iter(totals))):
        raise UsageError(f"the replay shards hold {len(replays)} traces of {', '.join(map(str, sorted(totals)))}: "
                         f"a shard is missing, or they replayed different corpora")
    malformed = any(r.get("malformed") for r in replays)
    for replayed in replays:
        if not replayed.get("confirmed"):
            print(replayed.get("report") or f"{replayed['path']}: not confirmed", flush=True)
            failed = True
    for check in checks:
        if not check.get("holds"):
            print(f"FAIL {check.get('part')} {check.get('what')}", flush=True)
            failed = True
    if replays:
        confirmed = sum(1 for r in replays if r.get("confirmed"))
        print(f"traces: {confirmed} of {len(replays)} confirmed", flush=True)
    code = EXIT_USAGE if malformed else (EXIT_FAILED if failed else EXIT_HOLDS)
    print(f"merged {len(args.reports)} report{'s' if len(args.reports) > 1 else ''}: "
          f"{'HOLDS' if code == EXIT_HOLDS else 'MALFORMED' if code == EXIT_USAGE else 'FAILS'}", flush=True)
    if args.junit:
        print(f"junit: {junit.write(args.junit, 'duespec merge', cases)}")
    if args.json:
        command = commands.pop() if len(commands) == 1 else "merge"
        out = [campaign_to_json(result, target=first["target"], examples=first["examples_budget"],
                                steps=first["steps_per_run"], depth=first["depth"], max_classes=first["max_classes"])
               for first, result in campaigns]
        print(f"json: {write_report(args.json, command, code, out, replays)}")
    return code


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "merge", help="combine the --json reports of a campaign's shards into one verdict",
        description="Combine the --json reports of the shards of one or more campaigns (run with "
                    "--shard I/N) into one verdict, one class table and one JUnit file. Exit 0: "
                    "everything holds; 1: a class is not declared or a trace diverges; 2: a "
                    "report is malformed, or shards overlap or are missing.")
    parser.add_argument("reports", nargs="+", metavar="REPORT.json")
    parser.add_argument("--junit", metavar="FILE", help="write JUnit XML here")
    parser.add_argument("--json", metavar="FILE", help="write the merged report here")
    parser.set_defaults(run=main)

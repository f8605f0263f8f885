"""`duespec suite` (what `make check` runs): every proof, a differential campaign per
system and profile, and the replay of every recorded trace, ending in a one-screen summary."""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from duespec.campaigns.run import add_budget_arguments, run_campaign, write_failure_trace
from duespec.campaigns import parallel
from duespec.campaigns.conform import verdict_line
from duespec.campaigns.database import CampaignDatabase
from duespec.campaigns.report_json import campaign_to_json, write_report
from duespec.targets.stdio import DEFAULT_TIMEOUT
from duespec.prove import all_proofs, render
from duespec.spec.proofs import decide
from duespec.systems import BUILT_IN, get_system


@dataclass(frozen=True)
class Line:
    part: str
    what: str
    holds: bool
    seconds: float
    detail: str = ""


def prove_all(verbose: bool) -> list[Line]:
    lines = []
    for proof in all_proofs():
        verdict = decide(proof)
        if not verdict.proved or verbose:
            print(render(verdict, verbose=True), flush=True)
        lines.append(Line("prove", f"{proof.system} {','.join(proof.requirements)} {proof.name}",
                          verdict.proved, verdict.seconds))
    return lines


#: Seconds between the progress lines of a suite campaign (minutes each at 1,000 runs).
PROGRESS_SECONDS = 30.0


def campaign_all(seed: int, examples: int, steps: int, args: argparse.Namespace | None = None,
                 reports: list[dict] | None = None, database: CampaignDatabase | None = None
                 ) -> list[Line]:
    lines = []
    for name in BUILT_IN:
        system = get_system(name)
        for profile in system.profiles:
            print(f"{name} [{profile}]: impl vs model, {examples:,} runs", flush=True)
            if args is None:
                result = run_campaign(system, system.impl, profile=profile, seed=seed,
                                      examples=examples, step_count=steps)
            else:  # chunked: --jobs, --shard, --database (duespec.campaigns.parallel)
                spec = parallel.CampaignSpec(system=name, target="impl", timeout=DEFAULT_TIMEOUT,
                                             start_timeout=DEFAULT_TIMEOUT, profile=profile, steps=steps,
                                             depth=1.0, max_classes=1, database=parallel._database_spec(args))
                result = parallel.run_chunks(system, system.impl, spec, seed=seed, examples=examples,
                                             jobs=args.jobs, shard=args.shard, database=database,
                                             progress_every=PROGRESS_SECONDS)
                if reports is not None:
                    reports.append(campaign_to_json(result, target="impl", examples=examples, steps=steps,
                                                    depth=1.0, max_classes=1))
            if not result.ok:
                print(f"{verdict_line(result, 'impl')}\n{result.failure}", flush=True)
                trace = write_failure_trace(result, target="impl", producer="duespec suite")
                print(f"trace of the shrunk counterexample: {trace}", flush=True)
            lines.append(Line("check", f"{name} [{profile}] impl vs model, {result.examples} runs, "
                              f"{result.steps} steps", result.ok, result.seconds))
    return lines


def replay_all(corpus: Path, shard: tuple[int, int] | None = None, replays: list[dict] | None = None) -> list[Line]:
    from duespec.traces.replay import replay, trace_files
    from duespec.traces.format import TraceError

    lines = []
    for index, path in enumerate(trace_files([str(corpus)])):
        if not parallel.in_shard(index, shard):
            continue
        try:
            results = [replay(path, target) for target in ("model", "impl")]
        except TraceError as error:
            lines.append(Line("replay", f"{path} is malformed", False, 0.0, str(error)))
            if replays is not None:  # in the report too, or merge would find nothing that failed
                replays.append({"path": str(path), "confirmed": False, "malformed": str(error),
                                "report": f"MALFORMED: {error}"})
            continue
        for result in results:
            if not result.confirmed:
                print(result.report(), flush=True)
        lines.append(Line("replay", f"{path} against model and impl, {results[0].steps} steps",
                          all(r.confirmed for r in results), sum(r.seconds for r in results)))
        if replays is not None:
            replays.append({"path": str(path), "confirmed": lines[-1].holds, "malformed": None,
                            "report": "\n".join(r.report() for r in results if not r.confirmed)})
    return lines


def main(args: argparse.Namespace) -> int:
    from duespec.exits import UsageError

    # The corpus is read last, after minutes of proofs and campaigns: a folder that is not
    # there is bad usage, said before any of that work.
    if not Path(args.traces).is_dir():
        raise UsageError(f"--traces {args.traces!r}: no such folder (the trace corpus to replay)")
    database = parallel.open_database_of(args)  # so is a --database that cannot be one
    reports: list[dict] = []
    replays: list[dict] = []
    # Shards share the campaigns' chunks and the traces; the proofs run in shard 1 only.
    parts: list[tuple[str, Callable[[], list[Line]]]] = [
        ("proofs", lambda: prove_all(args.verbose) if args.shard is None or args.shard[0] == 1 else []),
        ("campaigns", lambda: campaign_all(args.seed, args.examples, args.steps, args, reports, database)),
        ("traces", lambda: replay_all(Path(args.traces), args.shard, replays)),
    ]
    lines: list[Line] = []
    started = time.perf_counter()
    for title, run in parts:
        print(f"== {title}", flush=True)
        lines.extend(run())
    print("\n== summary")
    for line in lines:
        mark = "ok  " if line.holds else "FAIL"
        print(f"{mark} {line.part:6} {line.what}  ({line.seconds:.1f}s)"
              + (f"  {line.detail}" if line.detail and not line.holds else ""))
    failed = sum(not line.holds for line in lines)
    print(f"{len(lines) - failed} held, {failed} failed in {time.perf_counter() - started:.0f}s")
    if args.json:
        checks = [{"part": line.part, "what": line.what, "holds": line.holds} for line in lines if line.part == "prove"]
        print(f"json: {write_report(args.json, 'suite', 1 if failed else 0, reports, replays, checks=checks, shard=args.shard)}")
    return 1 if failed else 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "suite", help="everything: proofs, a campaign per system and profile, trace replay",
        description="Run every proof, a differential campaign (implementation vs model) per "
                    "system and profile, and replay every trace in the corpus; print a "
                    "one-screen summary. Exit 0 only if all holds.")
    add_budget_arguments(parser, examples=1000)
    parser.add_argument("--traces", default="traces", help="trace corpus folder (default traces/)")
    parser.add_argument("-v", "--verbose", action="store_true")
    parallel.add_parallel_arguments(parser)
    parser.set_defaults(run=main)

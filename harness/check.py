"""`duespec check SYSTEM`: the production implementation against the model."""

from __future__ import annotations

import argparse

from duespec.campaign import (
    DEFAULT_FAILURE_DIR,
    CampaignResult,
    add_budget_arguments,
    progress_printer,
    run_campaign,
    write_failure_trace,
)
from duespec.cli import UsageError
from duespec.report import report_for, write_json
from duespec.systems import NAMES, get_system


def report(result: CampaignResult) -> str:
    verdict = "HOLDS" if result.ok else "DIVERGES"
    rate = result.steps / result.seconds if result.seconds else 0.0
    head = (f"{verdict}: {result.system} [{result.profile}] seed={result.seed} "
            f"examples={result.examples} steps={result.steps} "
            f"({result.seconds:.1f}s, {rate:,.0f} steps/s)")
    return head if result.ok else f"{head}\n{result.failure}"


def main(args: argparse.Namespace) -> int:
    system = get_system(args.system)
    if args.profile is not None and args.profile not in system.profiles:
        raise UsageError(f"{system.name} has no profile {args.profile!r}; known: {', '.join(system.profiles)}")
    result = run_campaign(system, system.impl, profile=args.profile, seed=args.seed,
                          examples=args.examples, step_count=args.steps,
                          progress=progress_printer(args.progress) if args.progress > 0 else None)
    print(report(result))
    if not result.ok:
        try:
            trace = write_failure_trace(result, args.trace_dir, target="impl", producer="duespec check")
        except (OSError, ValueError) as error:
            print(f"trace not written: {error}")
        else:
            print(f"trace of the shrunk counterexample: {trace}\n"
                  f"reproduce: duespec replay {trace} --target impl")
    coverage = report_for(system, result)
    if not args.no_coverage:
        print(coverage.render())
    if args.coverage_json:
        print(f"coverage: {write_json([coverage], args.coverage_json)}")
    return 0 if result.ok else 1


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check", help="differential campaign: implementation vs model",
        description="Drive the model and the production implementation in lockstep with a "
                    "Hypothesis state machine; compare every response and the whole state.")
    parser.add_argument("system", choices=NAMES)
    add_budget_arguments(parser, examples=200)
    parser.add_argument("--profile", default=None, help="spec reading (default: the system's first)")
    parser.add_argument("--trace-dir", default=str(DEFAULT_FAILURE_DIR), metavar="DIR",
                        help=f"where a failure's trace is written (default {DEFAULT_FAILURE_DIR})")
    parser.add_argument("--progress", type=float, default=10.0, metavar="SECONDS",
                        help="print a progress line to stderr every SECONDS (default 10; 0: never)")
    parser.add_argument("--no-coverage", action="store_true", help="do not print the spec-coverage report")
    parser.add_argument("--coverage-json", metavar="FILE", help="write the spec-coverage report as JSON")
    parser.set_defaults(run=main)

"""`duespec check SYSTEM`: the production implementation against the model."""

from __future__ import annotations

import argparse

from duespec.campaign import CampaignResult, run_campaign
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
    result = run_campaign(system, system.impl, profile=args.profile, seed=args.seed,
                          examples=args.examples, step_count=args.steps)
    print(report(result))
    return 0 if result.ok else 1


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check", help="differential campaign: implementation vs model",
        description="Drive the model and the production implementation in lockstep with a "
                    "Hypothesis state machine; compare every response and the whole state.")
    parser.add_argument("system", choices=NAMES)
    parser.add_argument("--seed", type=int, default=0, help="Hypothesis seed (default 0)")
    parser.add_argument("--examples", type=int, default=200, help="runs to try (default 200)")
    parser.add_argument("--steps", type=int, default=50, help="steps per run (default 50)")
    parser.add_argument("--profile", default=None, help="spec reading (default: the system's first)")
    parser.set_defaults(run=main)

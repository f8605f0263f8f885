"""`duespec check SYSTEM`: the production implementation against the model.

The same campaign, report and failure trace as `duespec conform SYSTEM --target impl`."""

from __future__ import annotations

import argparse

from duespec.campaigns import conform
from duespec.systems import SYSTEM_HELP, system_argument


def main(args: argparse.Namespace) -> int:
    args.target = "impl"
    return conform.main(args)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check", help="differential campaign: implementation vs model",
        description="Drive the model and the production implementation in lockstep with a "
                    "Hypothesis state machine; compare every response and the whole state. "
                    "Exit 0: holds; 1: a divergence (its shrunk counterexample is written as "
                    "a trace); 2: bad usage.")
    parser.add_argument("system", type=system_argument, metavar="SYSTEM", help=SYSTEM_HELP)
    conform.add_campaign_options(parser)
    parser.set_defaults(run=main)

"""The `duespec` command. Exit 0: everything holds; 1: refuted or diverged; 2: bad usage."""

from __future__ import annotations

import argparse
import importlib
import sys

#: Each module defines `add_parser(subparsers)` and `main(args) -> int`.
COMMANDS = ("duespec.prove", "duespec.campaigns.check", "duespec.bench", "duespec.campaigns.suite", "duespec.campaigns.conform",
            "duespec.traces.replay", "duespec.traces.itf")

EXIT_HOLDS, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
#: What shells report for a process ended by SIGINT (128 + 2).
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """Bad input from the user: printed without a traceback, exit 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="duespec",
        description="Executable specifications and a model-checking harness for duebook "
                    "and Resonate schedules.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(name).add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except UsageError as error:
        print(f"duespec {args.command}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        # Each command closes its targets in `finally` blocks on the way out; say so once.
        print(f"duespec {args.command}: interrupted (Ctrl-C); targets stopped", file=sys.stderr)
        return EXIT_INTERRUPTED

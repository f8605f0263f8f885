"""What every command answers with: its exit codes and the error for bad usage.

Low in the harness so that commands (campaigns, traces, histories, wire) can use them
without importing duespec.cli, which imports every command. Exit 0: everything holds;
1: refuted or diverged; 2: bad usage or malformed input; 3: a campaign cut short (SIGTERM,
SIGINT) with nothing found; 130: interrupted (Ctrl-C) outside a campaign."""

from __future__ import annotations

import argparse
import math

EXIT_HOLDS, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
#: A campaign cut short by a signal before it could say HOLDS (nothing undeclared found).
EXIT_INCOMPLETE = 3
#: Ctrl-C, as shells report a process ended by SIGINT.
EXIT_INTERRUPTED = 130

#: Longest --timeout accepted: a day. Longer is not a deadline.
MAX_TIMEOUT = 86_400.0


class UsageError(Exception):
    """Bad input from the user: printed without a traceback, exit 2."""


def seconds(text: str) -> float:
    """argparse type for --timeout: a finite number of seconds in (0, MAX_TIMEOUT]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text[:40]!r}") from None
    if not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT):
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most {MAX_TIMEOUT:g} seconds, "
                                         f"got {text[:40]!r}")
    return value

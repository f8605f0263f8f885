"""The `duespec` command. Exit 0: everything holds; 1: refuted or diverged; 2: bad usage.

Every failure of input, target or environment ends here as one paragraph on stderr and
exit 2 (a divergence, "the target raised" included, is a command's own exit 1); a Python
traceback is shown only with `--debug`, for a bug in duespec itself.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

# The exit codes, UsageError and --timeout's type live in duespec.exits, below every
# command that uses them; named here too, as the command's own.
from duespec.exits import (
    EXIT_FAILED,
    EXIT_HOLDS,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    MAX_TIMEOUT,
    UsageError,
    seconds,
)
from duespec.outputs import tolerate_unencodable

#: Each module defines `add_parser(subparsers)` and `main(args) -> int`.
COMMANDS = ("duespec.prove", "duespec.campaigns.check", "duespec.bench", "duespec.campaigns.suite", "duespec.campaigns.conform",
            "duespec.campaigns.replay_jobs", "duespec.traces.itf", "duespec.wire.serve", "duespec.histories.record",
            "duespec.histories.export", "duespec.histories.linearize_command", "duespec.histories.stress",
            "duespec.campaigns.merge", "duespec.campaigns.catch_up")

#: Commands whose module is imported alone when the command line names them: a check run
#: once per history (by scripts, by CI, beside the specification's own checker) should not
#: pay for importing every other command (about half a second of CPU).
ALONE = {"linearize": "duespec.histories.linearize_command"}

__all__ = ["EXIT_FAILED", "EXIT_HOLDS", "EXIT_INTERRUPTED", "EXIT_USAGE", "MAX_TIMEOUT", "UsageError",
           "build_parser", "explain", "main", "seconds"]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; or, for a command in ALONE, only that command's parser."""
    parser = argparse.ArgumentParser(
        prog="duespec",
        description="Executable specifications and a model-checking harness for duebook "
                    "and Resonate schedules.",
    )
    parser.add_argument("--debug", action="store_true",
                        help="show Python tracebacks (for reporting a bug in duespec)")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in (ALONE[command],) if command in ALONE else COMMANDS:
        importlib.import_module(name).add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    tolerate_unencodable(sys.stdout, sys.stderr)  # a lone surrogate read from a file is printed escaped
    # --debug is accepted anywhere before a bare `--`, so it can be added to any command line.
    end = argv.index("--") if "--" in argv else len(argv)
    debug = "--debug" in argv[:end]
    argv = [a for a in argv[:end] if a != "--debug"] + argv[end:]
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    _one_value_each(parser, args)
    args.debug = debug  # taken out of argv above, so commands that log can honour it
    previous = _catch_sigint()
    try:
        _check_arguments(args)
        return int(args.run(args))
    except BaseException as error:
        if debug:
            raise
        if isinstance(error, BrokenPipeError):
            # Python would flush the closed stdout again at exit and print a second error.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"duespec {args.command}: {explain(error)}", file=sys.stderr, flush=True)
        # Each command closes its targets in `finally` blocks on the way out.
        return EXIT_INTERRUPTED if isinstance(error, KeyboardInterrupt) else EXIT_USAGE
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _one_value_each(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse `--json=--` as argparse refuses `--json --`. Before Python 3.13, argparse takes
    the `--` out as the end of the options even inside one token, and leaves an empty list
    where the option's one value belongs: an internal error later, far from the command line."""
    [commands] = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    command = commands.choices[args.command]
    for action in command._actions:
        if action.option_strings and action.nargs in (None, "?"):
            value = getattr(args, action.dest, None)
            given = value if isinstance(action, argparse._AppendAction) else [value]
            if any(item == [] for item in given or ()):
                command.error(f"argument {'/'.join(action.option_strings)}: expected one argument")


def _catch_sigint() -> Any:
    """Make Ctrl-C a UserInterrupt, which the target boundary lets through (a
    KeyboardInterrupt raised by target code is that target's failure)."""
    from duespec.targets.interface import UserInterrupt

    def interrupted(signum: int, frame: object) -> None:
        raise UserInterrupt()

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, interrupted)


def _check_arguments(args: argparse.Namespace) -> None:
    """What argparse cannot check, checked before any work: output paths and timeouts."""
    from duespec.outputs import check_output, remove_dead_partials

    timeout = getattr(args, "timeout", None)
    if isinstance(timeout, float) and not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT):
        raise UsageError(f"--timeout must be more than 0 and at most {MAX_TIMEOUT:g} seconds, got {timeout}")
    inputs = [path for path in (getattr(args, "declared", None), getattr(args, "mapping", None)) if path]
    outputs = [("--" + option.replace("_", "-"), getattr(args, option, None)) for option in ("junit", "coverage_json", *(("json",) if args.command != "bench" else ()))]
    if args.command == "itf":
        inputs.append(args.source)
        outputs.append(("-o", getattr(args, "output", None)))
    if args.command == "bench" and args.json not in (None, "-"):
        outputs.append(("--json", args.json))
    trace_dir = getattr(args, "trace_dir", None)
    if trace_dir is not None:
        outputs.append(("--trace-dir", Path(trace_dir) / "failure.jsonl"))
    named: dict[str, str] = {}
    for what, path in outputs:
        if path is None:
            continue
        check_output(path, inputs=inputs, what=what)
        if what == "--trace-dir":  # what a killed earlier campaign left there
            remove_dead_partials(Path(path).parent, of=".jsonl")
        # Two reports into one file: the second would silently replace the first.
        same = named.setdefault(os.path.realpath(path), what)
        if same != what:
            raise UsageError(f"{what} and {same} name the same file {str(path)[:200]!r}; "
                             f"give each report its own")


def explain(error: BaseException) -> str:
    """One paragraph for people: what went wrong, without a traceback."""
    from duespec.limits import InputError, LimitExceeded
    from duespec.outputs import OutputError
    from duespec.targets.interface import TargetError
    from duespec.traces.format import TraceError

    if isinstance(error, UsageError):
        return str(error)
    if isinstance(error, TraceError):
        return f"MALFORMED: {error}"
    if isinstance(error, (OutputError, InputError, LimitExceeded)):
        return str(error)
    if isinstance(error, TargetError):
        return f"target unusable: {error}"
    if isinstance(error, KeyboardInterrupt):
        by = str(error)  # the signal's name, when a campaign's Stopper raised it
        return f"interrupted ({by if by and by != 'SIGINT' else 'Ctrl-C'}); targets stopped"
    if isinstance(error, SystemExit):
        return (f"stopped by a call of sys.exit({error.code!r}) outside any target; nothing "
                f"was checked to the end")
    if isinstance(error, MemoryError):
        return "out of memory (see docs/limits.md for the sizes duespec accepts)"
    if isinstance(error, RecursionError):
        return "input nested too deeply (see docs/limits.md)"
    if isinstance(error, BrokenPipeError):
        return ("standard output was closed before the whole report was written (broken pipe: "
                "its reader, such as `head`, stopped early); a report cut short is no verdict")
    if isinstance(error, OSError):
        where = f" {error.filename!r}"[:200] if error.filename else ""
        return f"cannot use{where}: {error.strerror or error}"
    text = str(error)[:500]
    return (f"internal error: {type(error).__name__}{': ' + text if text else ''} (a bug in duespec; "
            f"run again with --debug for the traceback)")

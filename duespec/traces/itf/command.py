"""`duespec itf export|import`: the command line over export.py and importer.py."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from duespec.exits import EXIT_HOLDS, EXIT_USAGE, UsageError, seconds
from duespec.outputs import OutputError, check_output
from duespec.systems import system_argument
from duespec.targets.interface import TargetError
from duespec.targets.deadline import deadline
from duespec.targets.stdio import DEFAULT_TIMEOUT
from duespec.traces.format import TraceError
from duespec.traces.itf.export import export_itf
from duespec.traces.itf.importer import import_itf
from duespec.traces.itf.recipe import DEFAULT_TIME, DEFAULT_TIME_ACTIONS, ImportRecipe, RecipeError, load_mapping
from duespec.traces.itf.values import Json


def _recipe(args: argparse.Namespace) -> tuple[ImportRecipe, dict[str, Json]]:
    """The import recipe: the mapping file, then the flags on top of it."""
    mapping = load_mapping(args.mapping) if args.mapping else {}
    base = Path(args.mapping).parent if args.mapping else Path(".")
    renames = dict(mapping.get("args", {}))
    for flag in args.arg or ():
        source, equals, argument = flag.partition("=")
        if not equals or not source or not argument:
            raise RecipeError(f"--arg {flag}: expected OP.PICK=ARG or PICK=ARG")
        renames[source] = argument
    time = tuple(args.time or ())
    if not time and args.now_var:
        time = (f"pick:{args.now_var}", f"after:{args.now_var}")
    hook, hook_base = mapping.get("hook"), base
    if args.hook:
        hook, hook_base = args.hook, Path(".")
    recipe = ImportRecipe(
        time_actions=tuple(args.time_action or mapping.get("time_actions") or DEFAULT_TIME_ACTIONS),
        time=time or tuple(mapping.get("time") or DEFAULT_TIME),
        args=renames, ignore_picks=frozenset(mapping.get("ignore_picks", ())) | set(args.ignore_pick or ()),
        hook=hook, base=hook_base, states=mapping.get("states", True) and not args.no_states,
        mapping=Path(args.mapping) if args.mapping else None)
    return recipe, mapping


def main(args: argparse.Namespace) -> int:
    source = Path(args.source)
    if not source.name:  # "", "/", "..": no file, and no name to make the output's from
        raise UsageError(f"{args.source!r} names no file (the trace to export, or the ITF file to import)")
    out = Path(args.output) if args.output else _renamed(source, ".itf.json" if args.direction == "export" else ".jsonl")
    try:
        if args.direction == "export":
            _new_or_forced(out, args.force, [source])
            out = export_itf(source, out, timeout=args.timeout)
        else:
            recipe, mapping = _recipe(args)
            _new_or_forced(out, args.force, [source, *recipe.files()])
            config = mapping.get("config")
            if args.config is not None:
                try:
                    config = json.loads(args.config)
                except json.JSONDecodeError as error:
                    print(f"duespec itf: --config is not JSON: {error.msg}", file=sys.stderr)
                    return EXIT_USAGE
                if not isinstance(config, dict):
                    print("duespec itf: --config must be a JSON object", file=sys.stderr)
                    return EXIT_USAGE
            with deadline(args.timeout, "the import"):
                out = import_itf(source, out,
                                 system=args.system or mapping.get("system"),
                                 profile=args.profile or mapping.get("profile"), config=config,
                                 recipe=recipe)
    except RecipeError as error:
        print(f"duespec itf: {error}", file=sys.stderr)
        return EXIT_USAGE
    except (TraceError, TargetError) as error:
        print(f"MALFORMED: {error}", file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote {out}")
    return EXIT_HOLDS


def _new_or_forced(out: Path, force: bool, inputs: list[Path]) -> None:
    """Refuse an output over an input always, and over any existing file without --force:
    the default name of an import is often the very trace the ITF was exported from."""
    check_output(out, inputs=inputs, what="output")
    if out.exists() and not force:
        raise OutputError(f"{out} exists; give --force to replace it, or -o a new name")


def _renamed(path: Path, suffix: str) -> Path:
    name = path.name
    for old in (".itf.json", ".jsonl", ".json"):
        if name.endswith(old):
            name = name[: -len(old)]
            break
    return path.with_name(name + suffix)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "itf", help="convert traces to and from ITF (Apalache/Quint Informal Trace Format)",
        description="export: a duespec trace as ITF, one state per step with the model's state. "
                    "import: an ITF trace from `quint run --mbt` (or an export) as a duespec "
                    "trace for `duespec replay`; a foreign spec's names, clock and answers are "
                    "mapped with --arg, --time and --hook, or a --mapping file. The mapping is in "
                    "docs/traces.md.")
    parser.add_argument("direction", choices=("export", "import"))
    parser.add_argument("source", metavar="FILE", help="the trace (export) or the ITF file (import)")
    parser.add_argument("-o", "--output", default=None, help="where to write (default: beside FILE)")
    parser.add_argument("--force", action="store_true",
                        help="replace the output if it exists (atomically: the old file stays whole until "
                             "the new one is); without it an existing output is refused")
    parser.add_argument("--mapping", metavar="FILE.toml", default=None,
                        help="import: a TOML file holding any of the options below; flags add to it")
    parser.add_argument("--system", type=system_argument, default=None, help="import: the system the spec models")
    parser.add_argument("--profile", default=None, help="import: spec reading (default: the system's first)")
    parser.add_argument("--config", default=None, help="import: the config as a JSON object")
    parser.add_argument("--arg", action="append", metavar="[OP.]PICK=ARG",
                        help="import: the spec's pick PICK is argument ARG (of operation OP only, "
                             "e.g. cancel.who=caller); repeatable")
    parser.add_argument("--ignore-pick", action="append", metavar="PICK",
                        help="import: a pick that is no argument (e.g. a clock step dt); repeatable")
    parser.add_argument("--time", action="append", metavar="SOURCE",
                        help="import: where a step's time is: pick:NAME, after:VAR (the state the "
                             "action reached) or before:VAR (the state it left); repeatable, tried "
                             "in order (default: pick:now, after:now)")
    parser.add_argument("--now-var", default=None, metavar="NAME",
                        help="import: shorthand for --time pick:NAME --time after:NAME")
    parser.add_argument("--time-action", action="append", metavar="NAME",
                        help="import: a Quint action that only advances the clock (repeatable; "
                             f"default {', '.join(DEFAULT_TIME_ACTIONS)})")
    parser.add_argument("--hook", default=None, metavar="MODULE:FUNCTION",
                        help="import: a function (module:function or file.py:function) turning the "
                             "spec's variables into duespec's response and state (docs/traces.md)")
    parser.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT,
                        help=f"export: seconds the model may take per step; import: seconds for the "
                             f"whole conversion (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--no-states", action="store_true",
                        help="import: do not import the ITF states as expected observable states")
    parser.set_defaults(run=main)

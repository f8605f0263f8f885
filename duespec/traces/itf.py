"""ITF, the Informal Trace Format of Apalache and Quint, to and from duespec traces.

Export lets Quint and Apalache tooling (the ITF trace viewer, quint-connect style drivers)
read a duespec trace: one ITF state per step, holding the model's observable state after
the step, the time, the response, and the `mbt::` metadata that `quint run --mbt` writes.
Import turns a trace produced by `quint run --mbt` for a duebook-like or schedules-like
Quint spec into a duespec trace that `duespec replay` runs. The mapping is documented in
docs/traces.md ("ITF").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

from duespec import __version__
from duespec.cli import EXIT_HOLDS, EXIT_USAGE, seconds
from duespec.targets.stdio import DEFAULT_TIMEOUT
from duespec.limits import (MAX_ITF_DEPTH, InputError, LimitExceeded, check_int_text, open_regular,
                            parse_json, read_document)
from duespec.outputs import AtomicFile, check_output
from duespec.systems import NAMES, get_system
from duespec.targets.interface import TargetError
from duespec.targets.resolve import deadline
from duespec.traces.format import (TraceError, TraceHeader, check_step,
                            read_trace, write_trace)

Json = Any

FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
ACTION_TAKEN, NONDET_PICKS = "mbt::actionTaken", "mbt::nondetPicks"
#: The response to the step that reached the state; only duespec writes it.
RESULT_VAR = "duespec::result"
#: Quint's Option, which `mbt::nondetPicks` wraps every pick in; None also stands for JSON null.
NONE: dict[str, Json] = {"tag": "None", "value": {"#tup": []}}
#: Object-valued fields of the contract that are free-form maps, not records: exported as
#: `#map` so a Quint spec can type them `str -> str`.
MAP_FIELDS = frozenset({"tags", "headers", "promiseTags"})
#: Quint actions that only move the clock: imported as no step, their `now` carries over.
DEFAULT_TIME_ACTIONS = ("advanceTime", "advance", "passTime")
_BIGINT = re.compile(r"-?[0-9]+")


def action_name(op: str) -> str:
    """The Quint action for an operation: dots cannot appear in a Quint name, so camelCase."""
    first, *rest = op.split(".")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def op_for_action(system: str, action: str) -> str | None:
    """The operation a Quint action name stands for, or None.

    Case, dots and underscores are ignored, and a trailing `Action`/`_action` is dropped, so
    `claim`, `Claim`, `claim_action`, `scheduleCreate` and `schedule_create` all resolve."""
    for suffix in ("_action", "Action"):
        if action.endswith(suffix) and len(action) > len(suffix):
            action = action[: -len(suffix)]
    wanted = _canonical(action)
    return next((op for op in get_system(system).operations if _canonical(op) == wanted), None)


def _canonical(name: str) -> str:
    return name.replace(".", "").replace("_", "").lower()


# --- values -----------------------------------------------------------------------------

def to_itf(value: Json, where: str, key: str | None = None) -> Json:
    """A duespec JSON value as an ITF expression (integers as #bigint, null as None)."""
    if value is None:
        return NONE
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, int):
        return {"#bigint": str(value)}
    if isinstance(value, list):
        return [to_itf(item, where) for item in value]
    if isinstance(value, dict):
        as_map = key in MAP_FIELDS or any(k.startswith("#") for k in value) or set(value) == {"tag", "value"}
        if as_map:
            return {"#map": [[k, to_itf(v, where)] for k, v in value.items()]}
        return {k: to_itf(v, where, k) for k, v in value.items()}
    raise TraceError(where, None, f"{json.dumps(value)} has no ITF form (ITF has no fractional numbers)")


def from_itf(value: Json, where: str) -> Json:
    """An ITF expression as a duespec JSON value; raises TraceError naming `where`."""
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, list):
        return [from_itf(item, where) for item in value]
    if not isinstance(value, dict):
        raise TraceError(where, None, f"not an ITF value: {json.dumps(value)[:80]}")
    keys = set(value)
    if keys == {"#bigint"}:
        digits = value["#bigint"]
        if not isinstance(digits, str) or not _BIGINT.fullmatch(digits):
            raise TraceError(where, None, f'"#bigint" must hold a string of digits, got {json.dumps(digits)[:80]}')
        try:
            check_int_text(digits)
        except LimitExceeded as error:
            raise TraceError(where, None, f'"#bigint": {error}') from None
        return int(digits)
    if keys in ({"#tup"}, {"#set"}):
        items = value["#tup" if "#tup" in keys else "#set"]
        if not isinstance(items, list):
            raise TraceError(where, None, f"{sorted(keys)[0]} must hold a list")
        return [from_itf(item, where) for item in items]
    if keys == {"#map"}:
        return _map(value["#map"], where)
    if keys == {"tag", "value"} and isinstance(value["tag"], str):
        if value["tag"] == "None":
            return None
        if value["tag"] == "Some":
            return from_itf(value["value"], where)
        return {"tag": value["tag"], "value": from_itf(value["value"], where)}
    if keys == {"s", "e", "c"}:
        raise TraceError(where, None, "an integer in bignumber.js form ({s, e, c}): Quint's rust "
                                      "backend writes integers >= 10^15 this way; re-run quint with "
                                      "--backend=typescript")
    special = sorted(k for k in keys if k.startswith("#"))
    if special:
        raise TraceError(where, None, f"unsupported ITF form {special[0]!r}")
    return {k: from_itf(v, f"{where}.{k}") for k, v in value.items()}


def _map(pairs: Json, where: str) -> dict[str, Json]:
    if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise TraceError(where, None, '"#map" must hold a list of [key, value] pairs')
    result: dict[str, Json] = {}
    for raw_key, raw_value in pairs:
        key = from_itf(raw_key, where)
        if not isinstance(key, str):
            raise TraceError(where, None, f"a map with a non-string key ({json.dumps(key)}) has no "
                                          f"duespec JSON form")
        result[key] = from_itf(raw_value, f"{where}.{key}")
    return result


# --- export -----------------------------------------------------------------------------

def export_itf(trace_path: str | os.PathLike[str], out_path: str | os.PathLike[str],
               timeout: float | None = None) -> Path:
    """Write `trace_path` as ITF, one state per step, streaming in constant memory.

    The state variables are the model's observable state after each step (the model is
    replayed alongside), `now`, and `duespec::result`: the recorded result, or the model's
    response where the trace has none. State 0 is the fresh instance, action "init"."""
    out = Path(out_path)
    writer = AtomicFile(out, inputs=[trace_path], what="ITF output")  # checked before any work
    try:
        header, steps = read_trace(trace_path)
        system = get_system(header.system)
        model = system.model()
    except BaseException:
        writer.abandon()
        raise
    arg_names = sorted({name for args in system.operations.values() for name in args})
    variables = ["now", *system.state_keys, RESULT_VAR, ACTION_TAKEN, NONDET_PICKS]
    meta = {"format": "ITF", "format-description": FORMAT_DESCRIPTION, "source": Path(trace_path).name,
            "description": f"Created by duespec {__version__} from {Path(trace_path).name}",
            "duespec": header.to_json()}
    where = str(trace_path)

    def state(index: int, now: int, result: Json, action: str, picks: dict[str, Json], at: str) -> str:
        observed = _by_model(model.observe, at)
        body = {"#meta": {"index": index}, "now": to_itf(now, at),
                **{k: to_itf(observed[k], at, k) for k in system.state_keys},
                RESULT_VAR: NONE if result is None else {"tag": "Some", "value": to_itf(result, at)},
                ACTION_TAKEN: action, NONDET_PICKS: picks}
        return json.dumps(body)

    try:
        try:
            model.reset(dict(header.config))
        except Exception as error:  # the model's own words on what is wrong with the config
            raise TraceError(where, 1, f"header: the model refuses config {json.dumps(header.config)[:200]}: "
                                       f"{type(error).__name__}: {error}") from None
        writer.write(f'{{"#meta": {json.dumps(meta)},\n "vars": {json.dumps(variables)},\n "states": [\n')
        first = next(steps, None)
        writer.write(state(0, first["now"] if first else 0, None, "init", {n: NONE for n in arg_names}, where))
        pending = [first] if first else []
        for step in _chain(pending, steps):
            at = f"{where}: step {step['i']}"
            response = _by_model(lambda: model.step(step["op"], step["args"], step["now"]), at, timeout)
            result = step.get("result", response)
            picks = {n: NONE for n in arg_names}
            if not isinstance(step["args"], dict):
                raise TraceError(at, None, f"args {json.dumps(step['args'])[:200]} are not an object, so "
                                           f"they cannot become named nondeterministic picks")
            picks.update({n: {"tag": "Some", "value": to_itf(v, at, n)} for n, v in step["args"].items()})
            writer.write(",\n" + state(step["i"] + 1, step["now"], result, action_name(step["op"]), picks, at))
        writer.write("\n]}\n")
        writer.commit()
    except BaseException:
        writer.abandon()
        raise
    finally:
        model.close()
    return out


def _by_model(call: Callable[[], Json], at: str, timeout: float | None = None) -> Json:
    """A step the model cannot take (or not within `timeout` seconds) makes the trace
    unexportable, not duespec broken."""
    try:
        with deadline(timeout, "the model"):
            return call()
    except TargetError as error:  # --timeout
        raise TraceError(at, None, str(error)) from None
    except LimitExceeded as error:
        raise TraceError(at, None, str(error)) from None
    except Exception as error:
        raise TraceError(at, None, f"the model raised {type(error).__name__}: {error}") from None


def _chain(first: list[dict[str, Json]], rest: Iterator[dict[str, Json]]) -> Iterator[dict[str, Json]]:
    yield from first
    yield from rest


# --- import -----------------------------------------------------------------------------

def import_itf(itf_path: str | os.PathLike[str], out_path: str | os.PathLike[str], *,
               system: str | None = None, profile: str | None = None,
               config: dict[str, Json] | None = None,
               time_actions: tuple[str, ...] = DEFAULT_TIME_ACTIONS, now_var: str = "now",
               states: bool = True) -> Path:
    """Convert an ITF trace (from `quint run --mbt`, or from `export_itf`) to a duespec trace."""
    check_output(out_path, inputs=[itf_path], what="trace")
    header, steps = read_itf(itf_path, system=system, profile=profile, config=config,
                             time_actions=time_actions, now_var=now_var, states=states)
    return write_trace(out_path, header, steps, inputs=[itf_path])


def read_itf(itf_path: str | os.PathLike[str], *, system: str | None = None, profile: str | None = None,
             config: dict[str, Json] | None = None,
             time_actions: tuple[str, ...] = DEFAULT_TIME_ACTIONS, now_var: str = "now",
             states: bool = True) -> tuple[TraceHeader, Iterator[dict[str, Json]]]:
    """The duespec header and steps an ITF trace stands for.

    System, profile and config come from the arguments, else from the `#meta.duespec`
    header a duespec export leaves, else from the system's defaults."""
    where = str(itf_path)
    try:
        with open_regular(itf_path) as handle:
            document = parse_json(read_document(handle), max_depth=MAX_ITF_DEPTH)
    except OSError as error:
        raise TraceError(where, None, f"cannot open: {error.strerror or error}") from None
    except InputError as error:
        raise TraceError(where, error.line, error.problem) from None
    if not isinstance(document, dict) or not isinstance(document.get("states"), list):
        raise TraceError(where, None, 'not an ITF trace: expected an object with a "states" list')
    if not document["states"]:
        raise TraceError(where, None, "ITF trace has no states")
    meta = document.get("#meta") if isinstance(document.get("#meta"), dict) else {}
    recorded = meta.get("duespec") if isinstance(meta.get("duespec"), dict) else {}
    name = system or recorded.get("system")
    if name is None:
        raise TraceError(where, None, f"which system is this trace of? pass --system ({', '.join(NAMES)})")
    if name not in NAMES:
        raise TraceError(where, None, f"unknown system {name!r}; known: {', '.join(NAMES)}")
    descriptor = get_system(name)
    chosen = profile or recorded.get("profile") or descriptor.profiles[0]
    if chosen not in descriptor.profiles:
        raise TraceError(where, None, f"{name} has no profile {chosen!r}; known: {', '.join(descriptor.profiles)}")
    header = TraceHeader(
        system=name, profile=chosen,
        config=config if config is not None else recorded.get("config", descriptor.config(chosen)),
        seed=recorded.get("seed"), producer=f"duespec {__version__} itf import of {Path(itf_path).name}",
        extra={"itf_meta": {k: v for k, v in meta.items() if k != "duespec"}} if meta else {})
    return header, _itf_steps(document["states"], name, where, frozenset(time_actions), now_var, states)


def _itf_steps(states: list[Json], system: str, where: str, time_actions: frozenset[str],
               now_var: str, with_states: bool) -> Iterator[dict[str, Json]]:
    own_args = get_system(system).operations
    every_arg = {name for args in own_args.values() for name in args}
    index = 0
    for position, state in enumerate(states[1:], start=1):
        place = f"ITF state {position}"
        if not isinstance(state, dict):
            raise TraceError(where, None, f"{place}: expected an object")
        variables = _unqualified(state, where, place)
        action = _metadata(state, "actionTaken", ACTION_TAKEN)
        if not isinstance(action, str):
            raise TraceError(where, None, f'{place}: no "{ACTION_TAKEN}"; produce the trace with '
                                          f"`quint run --mbt`")
        if action in time_actions:
            continue
        op = op_for_action(system, action)
        if op is None:
            hint = ("an anonymous action: name it in the spec" if action == "" else
                    f"not an operation of {system} (known: "
                    f"{', '.join(action_name(o) for o in own_args)}; clock-only actions: "
                    f"{', '.join(sorted(time_actions)) or 'none'})")
            raise TraceError(where, None, f"{place}: action {action!r} is {hint}")
        picks = _metadata(state, "nondetPicks", NONDET_PICKS)
        if picks is None:
            picks = {}
        if not isinstance(picks, dict):
            raise TraceError(where, None, f'{place}: "{NONDET_PICKS}" must be a record')
        args: dict[str, Json] = {}
        now: Json = None
        for pick, raw in picks.items():
            value = from_itf(raw, f"{where}: {place}: pick {pick}")
            if raw == NONE:
                continue
            if pick == now_var:
                now = value
            elif pick in own_args[op] or pick not in every_arg:
                args[pick] = value
        if now is None:
            if now_var not in variables:
                raise TraceError(where, None, f"{place}: no time: need a state variable or a "
                                              f"nondeterministic pick named {now_var!r}")
            now = from_itf(variables[now_var], f"{where}: {place}: {now_var}")
        step: dict[str, Json] = {"i": index, "op": op, "args": args, "now": now}
        if RESULT_VAR in state:
            result = from_itf(state[RESULT_VAR], f"{where}: {place}: {RESULT_VAR}")
            if result is not None:
                step["result"] = result
        keys = get_system(system).state_keys
        if with_states and all(k in variables for k in keys):
            step["state"] = {k: from_itf(variables[k], f"{where}: {place}: {k}") for k in keys}
        yield check_step(step, index, where, None)
        index += 1


def _metadata(state: dict[str, Json], name: str, variable: str) -> Json:
    """`quint run --mbt` writes mbt:: variables; some tools put the same under #meta."""
    if variable in state:
        return state[variable]
    meta = state.get("#meta")
    return meta.get(name) if isinstance(meta, dict) else None


def _unqualified(state: dict[str, Json], where: str, place: str) -> dict[str, Json]:
    """State variables by their own name: Quint prefixes instance paths (`main::book::now`)."""
    found: dict[str, Json] = {}
    for key, value in state.items():
        if key == "#meta" or key.startswith(("mbt::", "duespec::")):
            continue
        short = key.rsplit("::", 1)[-1]
        if short in found:
            raise TraceError(where, None, f"{place}: two state variables are both named {short!r}")
        found[short] = value
    return found


# --- command ----------------------------------------------------------------------------

def main(args: argparse.Namespace) -> int:
    source = Path(args.source)
    try:
        if args.direction == "export":
            out = export_itf(source, args.output or _renamed(source, ".itf.json"), timeout=args.timeout)
        else:
            config = None
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
                out = import_itf(source, args.output or _renamed(source, ".jsonl"), system=args.system,
                                 profile=args.profile, config=config,
                                 time_actions=tuple(args.time_action or DEFAULT_TIME_ACTIONS),
                                 now_var=args.now_var, states=not args.no_states)
    except (TraceError, TargetError) as error:
        print(f"MALFORMED: {error}", file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote {out}")
    return EXIT_HOLDS


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
                    "trace for `duespec replay`. The mapping is in docs/traces.md.")
    parser.add_argument("direction", choices=("export", "import"))
    parser.add_argument("source", metavar="FILE", help="the trace (export) or the ITF file (import)")
    parser.add_argument("-o", "--output", default=None, help="where to write (default: beside FILE)")
    parser.add_argument("--system", choices=NAMES, default=None, help="import: the system the spec models")
    parser.add_argument("--profile", default=None, help="import: spec reading (default: the system's first)")
    parser.add_argument("--config", default=None, help="import: the config as a JSON object")
    parser.add_argument("--time-action", action="append", metavar="NAME",
                        help="import: a Quint action that only advances the clock (repeatable; "
                             f"default {', '.join(DEFAULT_TIME_ACTIONS)})")
    parser.add_argument("--now-var", default="now", help="import: the variable or pick holding the time")
    parser.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT,
                        help=f"export: seconds the model may take per step; import: seconds for the "
                             f"whole conversion (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--no-states", action="store_true",
                        help="import: do not import the ITF states as expected observable states")
    parser.set_defaults(run=main)

"""ITF, the Informal Trace Format of Apalache and Quint, to and from duespec traces.

Export lets Quint and Apalache tooling (the ITF trace viewer, quint-connect style drivers)
read a duespec trace: one ITF state per step, holding the model's observable state after
the step, the time, the response, and the `mbt::` metadata that `quint run --mbt` writes.
Import turns a trace produced by `quint run --mbt` into a duespec trace that `duespec
replay` runs. A spec written in its own names gets an import recipe: which pick is which
argument, where the clock is, and a mapping hook that reads the spec's own answers and
state as duespec's, so replay holds the foreign model to duespec's model and the target.
The mapping is documented in docs/traces.md ("ITF").
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import re
import sys
import tomllib
from dataclasses import dataclass, field
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
from duespec.traces.format import (TraceError, TraceHeader, check_step, is_reset,
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


def _map(pairs: Json, where: str) -> dict[str | int, Json]:
    """A Quint map: string keys (`str -> str` tags) or integer keys (`int -> Deferral`)."""
    if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise TraceError(where, None, '"#map" must hold a list of [key, value] pairs')
    result: dict[str | int, Json] = {}
    for raw_key, raw_value in pairs:
        key = from_itf(raw_key, where)
        if isinstance(key, bool) or not isinstance(key, (str, int)):
            raise TraceError(where, None, f"a map key must be a string or an integer, got "
                                          f"{json.dumps(key)[:80]}")
        result[key] = from_itf(raw_value, f"{where}.{key}")
    return result


def json_problem(value: Json) -> str | None:
    """Why `value` is no JSON value (an integer map key, say), or None when it is one."""
    if value is None or isinstance(value, (bool, int, str)):
        return None
    if isinstance(value, float):
        return None if value == value and abs(value) != float("inf") else f"the number {value}"
    if isinstance(value, list):
        return next((problem for item in value if (problem := json_problem(item))), None)
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"a map with {type(key).__name__} keys ({key!r}, ...), which a JSON object cannot have"
            problem = json_problem(item)
            if problem:
                return problem
        return None
    return f"a Python {type(value).__name__}"


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
        if first is not None and is_reset(first):
            raise _no_itf_reset(where, 0)
        writer.write(state(0, first["now"] if first else 0, None, "init", {n: NONE for n in arg_names}, where))
        pending = [first] if first else []
        after = 0
        for step in _chain(pending, steps):
            if is_reset(step):
                raise _no_itf_reset(where, after)
            at = f"{where}: step {step['i']}"
            after = step["i"] + 1
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


def _no_itf_reset(where: str, before: int) -> TraceError:
    return TraceError(where, None, f"the reset before step {before} has no ITF form: an ITF trace is one "
                                   f"run from its initial state, so a trace of several runs (a reset "
                                   f"line in the middle, docs/traces.md) cannot be exported; export "
                                   f"each run as a trace of its own")


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

#: Where the time of a step may come from, tried in order: a nondeterministic pick of the
#: action, a state variable of the state the action reached, or of the state before it.
TIME_KINDS = ("pick", "after", "before")
DEFAULT_TIME = ("pick:now", "after:now")


@dataclass(frozen=True)
class ForeignStep:
    """What a mapping hook is given for one operation of a foreign spec's trace.

    `before` and `after` are the ITF state variables of the state the action left and the
    one it reached, by their last `::` component, decoded (integers as int, `int -> T` maps
    as dicts with int keys, Option as its value or None, other variants as {"tag", "value"})."""

    #: Index of the ITF state the action reached (its position in "states").
    index: int
    action: str
    op: str
    args: dict[str, Json]
    now: Json
    config: dict[str, Json]
    before: dict[str, Json]
    after: dict[str, Json]


#: hook(step) -> {"result": response, "state": observable state}; either key may be left out.
Hook = Callable[[ForeignStep], "dict[str, Json] | None"]


@dataclass(frozen=True)
class ImportRecipe:
    """How a foreign spec's trace reads as duespec steps (docs/traces.md, "ITF import")."""

    #: Actions that only move the clock: no step.
    time_actions: tuple[str, ...] = DEFAULT_TIME_ACTIONS
    #: "pick:NAME", "after:VAR" or "before:VAR", tried in order.
    time: tuple[str, ...] = DEFAULT_TIME
    #: "OP.PICK" or "PICK" -> the argument name the pick stands for.
    args: dict[str, str] = field(default_factory=dict)
    #: Picks that are no argument of any operation (a clock step `dt`, say).
    ignore_picks: frozenset[str] = frozenset()
    #: "package.module:function" or "path/to/file.py:function", turning a foreign state into
    #: duespec's response and observable state.
    hook: str | None = None
    #: Where a relative hook file is looked for (the mapping file's folder).
    base: Path = Path(".")
    #: Import the expected observable state of each step (from the hook or the variables).
    states: bool = True
    #: The mapping file the recipe was read from, if any.
    mapping: Path | None = None

    def files(self) -> list[Path]:
        """What the import reads besides the ITF file: never to be written over."""
        found = [self.mapping] if self.mapping is not None else []
        module = (self.hook or "").rpartition(":")[0]
        if module.endswith(".py"):
            found.append(self.base / module)
        return found


class RecipeError(ValueError):
    """An import recipe that cannot work (bad --arg, --time or hook): a usage error."""


def import_itf(itf_path: str | os.PathLike[str], out_path: str | os.PathLike[str], *,
               system: str | None = None, profile: str | None = None,
               config: dict[str, Json] | None = None, recipe: ImportRecipe = ImportRecipe()) -> Path:
    """Convert an ITF trace (from `quint run --mbt`, or from `export_itf`) to a duespec trace.

    The trace is published only when every step was read, so a refused import writes nothing."""
    inputs = [itf_path, *recipe.files()]
    check_output(out_path, inputs=inputs, what="trace")
    header, steps = read_itf(itf_path, system=system, profile=profile, config=config, recipe=recipe)
    _check_config(str(itf_path), header)
    return write_trace(out_path, header, steps, inputs=inputs)


def _check_config(where: str, header: TraceHeader) -> None:
    """A config the model refuses would make replay refuse the trace: refuse it here."""
    model = get_system(header.system).model()
    try:
        model.reset(dict(header.config))
    except Exception as error:  # the model's own words on what is wrong with the config
        raise TraceError(where, None, f"the model refuses config {json.dumps(header.config)[:200]}: "
                                      f"{error}") from None
    finally:
        model.close()


def read_itf(itf_path: str | os.PathLike[str], *, system: str | None = None, profile: str | None = None,
             config: dict[str, Json] | None = None,
             recipe: ImportRecipe = ImportRecipe()) -> tuple[TraceHeader, Iterator[dict[str, Json]]]:
    """The duespec header and steps an ITF trace stands for.

    System, profile and config come from the arguments, else from the `#meta.duespec`
    header a duespec export leaves, else from the system's defaults. Raises RecipeError for
    a recipe that does not fit the system, TraceError for a trace that does not fit it."""
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
    reader = _StepReader(name, recipe, where)
    chosen_config = config if config is not None else recorded.get("config", descriptor.config(chosen))
    extra: dict[str, Json] = {"itf_meta": {k: v for k, v in meta.items() if k != "duespec"}} if meta else {}
    if recipe != ImportRecipe():
        extra["itf_import"] = reader.describe()
    header = TraceHeader(
        system=name, profile=chosen, config=chosen_config, seed=recorded.get("seed"),
        producer=f"duespec {__version__} itf import of {Path(itf_path).name}", extra=extra)
    return header, reader.steps(document["states"], chosen_config)


class _StepReader:
    """One recipe applied to one system: checked once, then run over the ITF states."""

    def __init__(self, system: str, recipe: ImportRecipe, where: str):
        self.system, self.recipe, self.where = system, recipe, where
        self.operations = get_system(system).operations
        self.state_keys = get_system(system).state_keys
        self.optional = get_system(system).optional_args
        self.time = [_time_source(source) for source in recipe.time]
        if not self.time:
            raise RecipeError("no time source: give --time pick:NAME, after:VAR or before:VAR")
        self.renames = self._renames(recipe.args)
        self.hook = load_hook(recipe.hook, recipe.base) if recipe.hook else None

    def describe(self) -> dict[str, Json]:
        """The recipe as the trace header keeps it, so the import can be repeated."""
        return {"args": dict(self.recipe.args), "ignore_picks": sorted(self.recipe.ignore_picks),
                "time": list(self.recipe.time), "time_actions": list(self.recipe.time_actions),
                "hook": self.recipe.hook, "states": self.recipe.states}

    def _renames(self, args: dict[str, str]) -> dict[str, dict[str, str]]:
        """op -> {pick: argument}, from "OP.PICK" (one op) and "PICK" (every op that has ARG)."""
        renames: dict[str, dict[str, str]] = {op: {} for op in self.operations}
        for source, argument in sorted(args.items(), key=lambda item: "." in item[0]):
            action, dot, pick = source.rpartition(".")
            if not pick or (dot and not action):
                raise RecipeError(f"--arg {source}={argument}: expected OP.PICK=ARG or PICK=ARG")
            if dot:
                op = action if action in self.operations else op_for_action(self.system, action)
                if op is None:
                    raise RecipeError(f"--arg {source}={argument}: {action!r} is no operation of "
                                      f"{self.system} ({', '.join(self.operations)})")
                if argument not in self.operations[op]:
                    raise RecipeError(f"--arg {source}={argument}: {op} has no argument {argument!r} "
                                      f"(it takes {', '.join(self.operations[op]) or 'none'})")
                renames[op][pick] = argument
                continue
            owners = [op for op, names in self.operations.items() if argument in names]
            if not owners:
                raise RecipeError(f"--arg {source}={argument}: no operation of {self.system} takes "
                                  f"an argument {argument!r}")
            for op in owners:
                renames[op][pick] = argument
        return renames

    def steps(self, states: list[Json], config: dict[str, Json]) -> Iterator[dict[str, Json]]:
        index = 0
        before = self._variables(states[0], 0)
        for position, state in enumerate(states[1:], start=1):
            after = self._variables(state, position)
            step = self._step(state, position, index, before, after, config)
            before = after
            if step is not None:
                yield check_step(step, index, self.where, None)
                index += 1

    def _variables(self, state: Json, position: int) -> _Variables:
        place = f"ITF state {position}"
        if not isinstance(state, dict):
            raise TraceError(self.where, None, f"{place}: expected an object")
        return _Variables(_unqualified(state, self.where, place), f"{self.where}: {place}")

    def _step(self, state: dict[str, Json], position: int, index: int, before: _Variables,
              after: _Variables, config: dict[str, Json]) -> dict[str, Json] | None:
        place = f"ITF state {position}"

        def refuse(problem: str) -> TraceError:
            return TraceError(self.where, None, f"{place}: {problem}")

        action = _metadata(state, "actionTaken", ACTION_TAKEN)
        if not isinstance(action, str):
            raise refuse(f'no "{ACTION_TAKEN}"; produce the trace with `quint run --mbt`')
        if action in self.recipe.time_actions:
            return None
        op = op_for_action(self.system, action)
        if op is None:
            hint = ("an anonymous action: name it in the spec" if action == "" else
                    f"not an operation of {self.system} (known: "
                    f"{', '.join(action_name(o) for o in self.operations)}; clock-only actions: "
                    f"{', '.join(sorted(self.recipe.time_actions)) or 'none'})")
            raise refuse(f"action {action!r} is {hint}")
        picks = _metadata(state, "nondetPicks", NONDET_PICKS)
        if picks is None:
            picks = {}
        if not isinstance(picks, dict):
            raise refuse(f'"{NONDET_PICKS}" must be a record')
        chosen = {pick: from_itf(raw, f"{self.where}: {place}: pick {pick}")
                  for pick, raw in picks.items() if raw != NONE}
        now = self._now(chosen, before, after, refuse)
        args = self._args(op, action, chosen, refuse)
        step: dict[str, Json] = {"i": index, "op": op, "args": args, "now": now}
        answered = self._hook(ForeignStep(position, action, op, dict(args), now, dict(config),
                                          before.decoded(), after.decoded()), refuse) if self.hook else {}
        if "result" in answered:
            step["result"] = answered["result"]
        elif RESULT_VAR in state:
            result = from_itf(state[RESULT_VAR], f"{self.where}: {place}: {RESULT_VAR}")
            if result is not None:
                step["result"] = result
        if self.recipe.states:
            if "state" in answered:
                step["state"] = answered["state"]
            elif not self.hook and all(k in after.raw for k in self.state_keys):
                step["state"] = {k: after.get(k) for k in self.state_keys}
        for key in ("args", "now", "result", "state"):
            problem = json_problem(step.get(key))
            if problem:
                raise refuse(f"the step's {key} holds {problem}; turn the spec's values into "
                             f"duespec's with a mapping hook (--hook, docs/traces.md)"
                             + ("" if key != "state" else ", or pass --no-states"))
        return step

    def _now(self, picks: dict[str, Json], before: _Variables, after: _Variables,
             refuse: Callable[[str], TraceError]) -> Json:
        for kind, name in self.time:
            if kind == "pick" and name in picks:
                return picks[name]
            variables = after if kind == "after" else before if kind == "before" else None
            if variables is not None and name in variables.raw:
                return variables.get(name)
        tried = ", ".join(TIME_SOURCE_WORDS[kind].format(name) for kind, name in self.time)
        raise refuse(f"no time: tried {tried}; say where the time is with --time "
                     f"pick:NAME, after:VAR or before:VAR")

    def _args(self, op: str, action: str, picks: dict[str, Json],
              refuse: Callable[[str], TraceError]) -> dict[str, Json]:
        """The op's arguments from the action's picks; a pick that fits no operation, or an
        argument no pick gave, refuses the import rather than write a trace every target fails."""
        wanted = self.operations[op]
        renamed = self.renames[op]
        time_picks = {name for kind, name in self.time if kind == "pick"}
        elsewhere = ({n for names in self.operations.values() for n in names}
                     | {pick for table in self.renames.values() for pick in table})
        args: dict[str, Json] = {}
        for pick, value in picks.items():
            if pick in time_picks or pick in self.recipe.ignore_picks:
                continue
            argument = renamed.get(pick, pick if pick in wanted else None)
            if argument is not None:
                if argument in args:
                    raise refuse(f"{op} argument {argument!r} is given by two picks; drop one with "
                                 f"--ignore-pick")
                args[argument] = value
            elif pick not in elsewhere:
                raise refuse(f"pick {pick!r} of action {action!r} is no argument of {op} (it takes "
                             f"{', '.join(wanted) or 'none'}); rename it with --arg {op}.{pick}=ARG "
                             f"or drop it with --ignore-pick {pick}")
        optional = self.optional.get(op, ())
        missing = [name for name in wanted if name not in args and name not in optional]
        if missing:
            given = ", ".join(sorted(picks)) or "none"
            raise refuse(f"{op} needs {', '.join(missing)}, but no pick of action {action!r} gives "
                         f"{'it' if len(missing) == 1 else 'them'} (its picks: {given}); rename "
                         f"one with --arg {op}.PICK={missing[0]}")
        return {name: args[name] for name in wanted if name in args}

    def _hook(self, step: ForeignStep, refuse: Callable[[str], TraceError]) -> dict[str, Json]:
        assert self.hook is not None
        try:
            answered = self.hook(step)
        except Exception as error:  # a hook is the user's code: name it and what it raised
            raise refuse(f"the mapping hook {self.recipe.hook} raised {type(error).__name__}: "
                         f"{error}") from None
        if answered is None:
            return {}
        if not isinstance(answered, dict) or set(answered) - {"result", "state"}:
            raise refuse(f"the mapping hook {self.recipe.hook} must return a dict with the keys "
                         f"'result' and/or 'state', got {answered!r:.200}")
        for key in ("result", "state"):
            if key in answered and not isinstance(answered[key], dict):
                raise refuse(f"the mapping hook's {key} must be a JSON object, got {answered[key]!r:.200}")
        if "state" in answered and set(answered["state"]) != set(self.state_keys):
            raise refuse(f"the mapping hook's state has the keys {', '.join(sorted(answered['state']))}; "
                         f"{self.system}'s observable state has {', '.join(self.state_keys)}")
        return answered


@dataclass(frozen=True)
class _Variables:
    """One ITF state's variables by their own name, decoded when asked for: a variable
    nobody reads (a lambda Quint could not serialize, say) does not stop an import."""

    raw: dict[str, Json]
    place: str

    def get(self, name: str) -> Json:
        return from_itf(self.raw[name], f"{self.place}: {name}")

    def decoded(self) -> dict[str, Json]:
        return {name: self.get(name) for name in self.raw}


TIME_SOURCE_WORDS = {"pick": "the pick {!r}", "after": "the variable {!r} after the step",
                     "before": "the variable {!r} before the step"}


def _time_source(source: str) -> tuple[str, str]:
    kind, colon, name = source.partition(":")
    if not colon or kind not in TIME_KINDS or not name:
        raise RecipeError(f"--time {source}: expected pick:NAME, after:VAR or before:VAR")
    return kind, name


def load_hook(spec: str, base: Path = Path(".")) -> Hook:
    """The function `spec` names: "package.module:function" (found from the working
    directory) or "path/to/file.py:function" (relative to `base`)."""
    module_name, colon, function = spec.rpartition(":")
    if not colon or not module_name or not function:
        raise RecipeError(f"hook {spec!r}: expected MODULE:FUNCTION or FILE.py:FUNCTION")
    try:
        if module_name.endswith(".py"):
            path = base / module_name
            loader = importlib.util.spec_from_file_location(f"duespec_itf_hook_{path.stem}", path)
            if loader is None or loader.loader is None or not path.is_file():
                raise RecipeError(f"hook {spec!r}: no such file {path}")
            module = importlib.util.module_from_spec(loader)
            loader.loader.exec_module(module)
        else:
            if os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(module_name)
    except RecipeError:
        raise
    except Exception as error:  # importing runs the user's code; report whatever it raised
        raise RecipeError(f"hook {spec!r}: cannot load {module_name}: {type(error).__name__}: {error}") from None
    found = getattr(module, function, None)
    if not callable(found):
        raise RecipeError(f"hook {spec!r}: {module_name} has no function {function!r}")
    return found


def load_mapping(path: str | os.PathLike[str]) -> dict[str, Json]:
    """A mapping file (TOML): the import flags written down once for a foreign spec.

    Keys: system, profile, config (a table), args (a table "OP.PICK" = "ARG"),
    ignore_picks, time, time_actions (lists of strings), hook (a file relative to the
    mapping file, or a module), states (bool)."""
    where = Path(path)
    try:
        data = tomllib.loads(where.read_text(encoding="utf-8"))
    except OSError as error:
        raise RecipeError(f"mapping file {where}: cannot read: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise RecipeError(f"mapping file {where}: not TOML: {error}") from None
    kinds: dict[str, type | tuple[type, ...]] = {
        "system": str, "profile": str, "config": dict, "args": dict, "ignore_picks": list, "time": list,
        "time_actions": list, "hook": str, "states": bool}
    for key, value in data.items():
        if key not in kinds:
            raise RecipeError(f"mapping file {where}: unknown key {key!r}; known: {', '.join(kinds)}")
        if not isinstance(value, kinds[key]):
            raise RecipeError(f"mapping file {where}: {key} must be a {kinds[key].__name__}")  # type: ignore[union-attr]
        if isinstance(value, list) and not all(isinstance(item, str) for item in value):
            raise RecipeError(f"mapping file {where}: {key} must be a list of strings")
    if not all(isinstance(v, str) for v in data.get("args", {}).values()):
        raise RecipeError(f"mapping file {where}: every args value must be a string (an argument name)")
    return data


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
    try:
        if args.direction == "export":
            out = export_itf(source, args.output or _renamed(source, ".itf.json"), timeout=args.timeout)
        else:
            recipe, mapping = _recipe(args)
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
                out = import_itf(source, args.output or _renamed(source, ".jsonl"),
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
    parser.add_argument("--mapping", metavar="FILE.toml", default=None,
                        help="import: a TOML file holding any of the options below; flags add to it")
    parser.add_argument("--system", choices=NAMES, default=None, help="import: the system the spec models")
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

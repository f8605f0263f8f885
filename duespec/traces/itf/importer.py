"""ITF import: a trace from `quint run --mbt` (or from an export) as a duespec trace that
`duespec replay` runs, each ITF state read through an import recipe (recipe.py).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from duespec import __version__
from duespec.limits import MAX_ITF_DEPTH, InputError, open_regular, parse_json, read_document, text_problem
from duespec.outputs import check_output
from duespec.systems import get_system, names
from duespec.traces.format import TRACE_HEADER_KEYS, TraceError, TraceHeader, check_step, write_trace
from duespec.traces.itf.recipe import TIME_SOURCE_WORDS, ForeignStep, ImportRecipe, RecipeError, load_hook, time_source
from duespec.traces.itf.values import (ACTION_TAKEN, NONDET_PICKS, NONE, RAW_ARGS, RAW_OP, RESULT_VAR, Json,
                                       action_name, from_itf, json_problem, op_for_action)


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
            document = parse_json(read_document(handle), max_depth=MAX_ITF_DEPTH, unique_keys=True)
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
        raise TraceError(where, None, f"which system is this trace of? pass --system ({', '.join(names())})")
    if name not in names():
        raise TraceError(where, None, f"unknown system {name!r}; known: {', '.join(names())}")
    descriptor = get_system(name)
    chosen = profile or recorded.get("profile") or descriptor.profiles[0]
    if chosen not in descriptor.profiles:
        raise TraceError(where, None, f"{name} has no profile {chosen!r}; known: {', '.join(descriptor.profiles)}")
    reader = _StepReader(name, recipe, where)
    chosen_config = config if config is not None else recorded.get("config", descriptor.config(chosen))
    extra: dict[str, Json] = {"itf_meta": {k: v for k, v in meta.items() if k != "duespec"}} if meta else {}
    if recipe != ImportRecipe():
        extra["itf_import"] = reader.describe()
    # A duespec export carries its trace's whole header: every field of it comes back
    # (what the import itself adds goes beside them), so a round trip loses nothing.
    kept = {key: value for key, value in recorded.items() if key not in TRACE_HEADER_KEYS and key not in extra}
    producer, created = recorded.get("producer"), recorded.get("created")
    header = TraceHeader(
        system=name, profile=chosen, config=chosen_config, seed=recorded.get("seed"),
        producer=producer if isinstance(producer, str) else f"duespec {__version__} itf import of {Path(itf_path).name}",
        extra={**kept, **extra}, **({"created": created} if isinstance(created, str) else {}))
    return header, reader.steps(document["states"], chosen_config)


class _StepReader:
    """One recipe applied to one system: checked once, then run over the ITF states."""

    def __init__(self, system: str, recipe: ImportRecipe, where: str):
        self.system, self.recipe, self.where = system, recipe, where
        self.operations = get_system(system).operations
        self.state_keys = get_system(system).state_keys
        self.optional = get_system(system).optional_args
        self.time = [time_source(source) for source in recipe.time]
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
        picks = _metadata(state, "nondetPicks", NONDET_PICKS)
        if picks is None:
            picks = {}
        if not isinstance(picks, dict):
            raise refuse(f'"{NONDET_PICKS}" must be a record')
        chosen = {pick: from_itf(raw, f"{self.where}: {place}: pick {pick}")
                  for pick, raw in picks.items() if raw != NONE}
        # an op the system does not have, as duespec exported it (its action name alone could
        # read back as one it has: `Claim` is the action `claim`)
        raw_op = chosen.get(RAW_OP) if RAW_ARGS in chosen else None
        op = raw_op if isinstance(raw_op, str) else op_for_action(self.system, action)
        if op is None:
            hint = ("an anonymous action: name it in the spec" if action == "" else
                    f"not an operation of {self.system} (known: "
                    f"{', '.join(action_name(o) for o in self.operations)}; clock-only actions: "
                    f"{', '.join(sorted(self.recipe.time_actions)) or 'none'})")
            raise refuse(f"action {action!r} is {hint}")
        now = self._now(chosen, before, after, refuse)
        args = chosen[RAW_ARGS] if RAW_ARGS in chosen else self._args(op, action, chosen, refuse)
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
        from duespec.targets.resolve import UserInterrupt

        try:
            answered = self.hook(step)
        except UserInterrupt:  # Ctrl-C while the hook ran: the user's, not the hook's
            raise
        except BaseException as error:  # a hook is the user's code: name it and what it raised,
            # KeyboardInterrupt and SystemExit included (they are its failure, not a Ctrl-C)
            raise refuse(f"the mapping hook {self.recipe.hook} raised {type(error).__name__}: "
                         f"{error}") from None
        if answered is None:
            return {}
        try:
            text = json.dumps(answered, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as error:
            raise refuse(f"the mapping hook {self.recipe.hook} returned what JSON cannot hold: "
                         f"{type(error).__name__}: {str(error)[:200]}") from None
        problem = text_problem(text.encode("utf-8", "surrogatepass"))
        if problem:
            raise refuse(f"the mapping hook {self.recipe.hook} returned {problem}")
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

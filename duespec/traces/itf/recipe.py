"""How a foreign spec's ITF trace reads as duespec steps: the import recipe (which pick is
which argument, where the clock is, a mapping hook for the spec's own answers and state),
written as flags or once in a mapping file (docs/traces.md, "ITF import").
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from duespec.limits import InputError, read_file
from duespec.traces.itf.values import Json

#: Quint actions that only move the clock: imported as no step, their `now` carries over.
DEFAULT_TIME_ACTIONS = ("advanceTime", "advance", "passTime")

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


TIME_SOURCE_WORDS = {"pick": "the pick {!r}", "after": "the variable {!r} after the step",
                     "before": "the variable {!r} before the step"}


def time_source(source: str) -> tuple[str, str]:
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
    except BaseException as error:  # importing runs the user's code; report whatever it raised
        from duespec.targets.resolve import UserInterrupt

        if isinstance(error, UserInterrupt):  # Ctrl-C while it loaded: the user's, not the hook's
            raise
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
        data = tomllib.loads(read_file(where).decode("utf-8"))
    except InputError as error:
        raise RecipeError(f"mapping file {where}: cannot read: {error.problem}") from None
    except UnicodeDecodeError as error:
        raise RecipeError(f"mapping file {where}: not UTF-8: {error.reason} at byte {error.start}") from None
    except tomllib.TOMLDecodeError as error:
        raise RecipeError(f"mapping file {where}: not TOML: {error}") from None
    except RecursionError:
        raise RecipeError(f"mapping file {where}: not TOML: nested too deeply") from None
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

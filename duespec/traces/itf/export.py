"""ITF export: a duespec trace as an ITF trace that Quint and Apalache tooling (the ITF
trace viewer, quint-connect style drivers) read: one ITF state per step, holding the
model's observable state after the step, the time, the response, and the `mbt::` metadata
that `quint run --mbt` writes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterator

from duespec import __version__
from duespec.limits import LimitExceeded
from duespec.outputs import AtomicFile
from duespec.systems import get_system
from duespec.targets.interface import TargetError
from duespec.targets.deadline import deadline
from duespec.traces.format import TraceError, is_reset, read_trace
from duespec.traces.itf.values import (ACTION_TAKEN, FORMAT_DESCRIPTION, NONDET_PICKS, NONE, RAW_ARGS, RAW_OP,
                                       RESULT_VAR,
                                       Json, action_name, to_itf)


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
            if step["op"] not in system.operations:
                picks[RAW_OP] = {"tag": "Some", "value": step["op"]}
            if _as_named_picks(system, step["op"], step["args"]):
                picks.update({n: {"tag": "Some", "value": to_itf(v, at, n)} for n, v in step["args"].items()})
            else:
                picks[RAW_ARGS] = {"tag": "Some", "value": to_itf(step["args"], at)}
            writer.write(",\n" + state(step["i"] + 1, step["now"], result, action_name(step["op"]), picks, at))
        writer.write("\n]}\n")
        writer.commit()
    except BaseException:
        writer.abandon()
        raise
    finally:
        model.close()
    return out


def _as_named_picks(system: Any, op: str, args: Json) -> bool:
    """Whether named picks give `args` back as they are: an object of names the operation
    (one of the system's) takes, each it requires given (the importer reads picks so)."""
    if not isinstance(args, dict) or op not in system.operations:
        return False
    names = system.operations[op]
    optional = system.optional_args.get(op, ())
    return set(args) <= set(names) and all(name in args or name in optional for name in names)


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

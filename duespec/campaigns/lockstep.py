"""The lockstep stateful machine: one oracle, one target, every answer compared.

Each system subclasses `LockstepMachine` with rules that read like its protocol and call
`self.call(op, args)`. The oracle (normally the model) and the target take the same step;
their responses must agree, and after every step their whole observable states must too.
Every run records its steps, so the shrunk failing run can be written out as a trace.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from hypothesis.stateful import RuleBasedStateMachine, invariant

from duespec.targets.interface import Json, Target, TargetFactory, comparable, responses_agree, same_json


class Divergence(AssertionError):
    """The target answered differently from the oracle."""

    def __init__(self, step: dict[str, Json], kind: str, expected: Json, actual: Json):
        self.step, self.kind, self.expected, self.actual = step, kind, expected, actual
        super().__init__(describe_divergence(step, kind, expected, actual))


def describe_divergence(step: dict[str, Json], kind: str, expected: Json, actual: Json) -> str:
    where = f"step {step['i']}: {step['op']} {json.dumps(step['args'], sort_keys=True)} at now={step['now']}"
    if kind == "response":
        return f"{where}\n  expected response: {_dump(expected)}\n  actual response:   {_dump(actual)}"
    return f"{where}\n  state differs after the step:\n" + "\n".join(
        "    " + line for line in state_diff(expected, actual)
    )


def state_diff(expected: Json, actual: Json, path: str = "$") -> list[str]:
    """Human-sized list of the places where two JSON values differ."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        lines: list[str] = []
        for key in sorted(set(expected) | set(actual), key=str):
            sub = f"{path}.{key}"
            if key not in actual:
                lines.append(f"{sub}: missing from target (expected {_dump(expected[key])})")
            elif key not in expected:
                lines.append(f"{sub}: unexpected in target ({_dump(actual[key])})")
            else:
                lines.extend(state_diff(expected[key], actual[key], sub))
        return lines
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        lines = []
        for index, (e, a) in enumerate(zip(expected, actual)):
            lines.extend(state_diff(e, a, f"{path}[{index}]"))
        return lines
    if same_json(expected, actual):
        return []
    return [f"{path}: expected {_dump(expected)}, actual {_dump(actual)}"]


def _dump(value: Json) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 400 else text[:400] + "..."


class LockstepMachine(RuleBasedStateMachine):
    """Base class; a campaign sets the class attributes below on a fresh subclass."""

    oracle_factory: ClassVar[TargetFactory]
    target_factory: ClassVar[TargetFactory]
    config: ClassVar[dict[str, Json]]
    #: Steps of the most recent run; after a failure, the shrunk counterexample.
    last_steps: ClassVar[list[dict[str, Json]]] = []
    #: Steps taken by every run of this class, for throughput figures.
    total_steps: ClassVar[int] = 0
    #: The config the most recent run was reset with: a machine may draw its own per run.
    last_config: ClassVar[dict[str, Json]] = {}
    #: Scale of the deep runs a machine mixes in (0: none); `--depth`.
    depth: ClassVar[float] = 1.0
    #: Per finished run, what `depth_reached` measured: how deep the campaign went.
    depths: ClassVar[list[dict[str, int]]] = []

    def __init__(self) -> None:
        super().__init__()
        self.oracle: Target = type(self).oracle_factory()
        self.target: Target = type(self).target_factory()
        self.oracle.reset(dict(self.config))
        self.target.reset(dict(self.config))
        type(self).last_config = dict(self.config)
        self.steps: list[dict[str, Json]] = []
        type(self).last_steps = self.steps

    def reconfigure(self, config: dict[str, Json]) -> None:
        """Reset both sides to this run's own config, drawn by the machine's first
        initialize rule: a target that only works with the default config must not pass."""
        self.oracle.reset(dict(config))
        self.target.reset(dict(config))
        type(self).last_config = dict(config)

    def depth_reached(self) -> dict[str, int]:
        """Named sizes this run reached (ids allocated, entries open...), for the report."""
        return {}

    def call(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        """Take one step on both sides; return the oracle's response for the rules to use."""
        expected = self.oracle.step(op, args, now)
        step = {"i": len(self.steps), "op": op, "args": args, "now": now, "result": expected}
        self.steps.append(step)
        type(self).total_steps += 1
        actual = self.target.step(op, args, now)
        if not responses_agree(expected, actual):
            raise Divergence(step, "response", comparable(expected), comparable(actual))
        return expected

    @invariant()
    def observable_states_agree(self) -> None:
        if not self.steps:
            return
        expected, actual = self.oracle.observe(), self.target.observe()
        if not same_json(expected, actual):
            raise Divergence(self.steps[-1], "state", expected, actual)

    def teardown(self) -> None:
        reached = self.depth_reached()
        if reached:
            type(self).depths.append(reached)
        self.oracle.close()
        self.target.close()


def lockstep(base: type[LockstepMachine], oracle: TargetFactory, target: TargetFactory,
             config: dict[str, Any], depth: float = 1.0) -> type[LockstepMachine]:
    """A runnable machine class: `base`'s rules, this oracle, this target, this config."""
    return type(base.__name__, (base,), {
        "oracle_factory": staticmethod(oracle),
        "target_factory": staticmethod(target),
        "config": dict(config),
        "last_steps": [],
        "total_steps": 0,
        "last_config": dict(config),
        "depth": depth,
        "depths": [],
    })

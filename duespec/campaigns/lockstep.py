"""The lockstep stateful machine: one oracle, one target, every answer compared.

Each system subclasses `LockstepMachine` with rules that read like its protocol and call
`self.call(op, args)`. The oracle (normally the model) and the target take the same step;
their responses must agree, and after every step their whole observable states must too.
Every run records its steps, so the shrunk failing run can be written out as a trace.

A difference is classified (duespec.campaigns.classes); one the campaign has masked (a
class already found, or a declared difference) does not fail the run: a masked response
is not compared and the run goes on if the state after the step still agrees; a state
that differs after a masked response (its consequence), a masked state difference or a
masked target failure ends the run there, as nothing after it could be compared.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections import Counter
from typing import Any, ClassVar

from hypothesis import reject
from hypothesis.stateful import RuleBasedStateMachine, invariant

from duespec.campaigns.classes import (
    RESPONSE,
    STATE,
    TARGET_RAISED,
    DivergenceClass,
    Masks,
    differing_paths,
    requirements_of,
)
from duespec.targets.interface import (
    Json,
    Target,
    TargetError,
    TargetFactory,
    comparable,
    responses_agree,
    same_json,
)

#: Innermost traceback frames shown when a target raises.
SHOWN_FRAMES = 4


class Divergence(AssertionError):
    """The target answered differently from the oracle."""

    def __init__(self, step: dict[str, Json], kind: str, expected: Json, actual: Json,
                 divergence_class: DivergenceClass | None = None,
                 messages: tuple[Json, Json] = (None, None), exchange: str | None = None):
        self.step, self.kind, self.expected, self.actual = step, kind, expected, actual
        self.divergence_class = divergence_class
        requirements = divergence_class.requirements if divergence_class else None
        super().__init__(describe_divergence(step, kind, expected, actual, requirements, messages, exchange))


class TargetRaised(TargetError):
    """A target call raised (an in-process target) or got no answer (a program): the
    target's failure, never duespec's, with the exception's type, message and frames."""

    def __init__(self, text: str, divergence_class: DivergenceClass, step: dict[str, Json] | None):
        super().__init__(text)
        self.divergence_class, self.step = divergence_class, step


def describe_divergence(step: dict[str, Json], kind: str, expected: Json, actual: Json,
                        requirements: tuple[str, ...] | None = None,
                        messages: tuple[Json, Json] = (None, None),
                        exchange: str | None = None) -> str:
    """`exchange`: what the target says went over the wire for the step (an HTTP target's
    request and response bodies), shown under the difference."""
    lines = [where_of(step)]
    if requirements is not None:
        lines.append(f"  requirements of the step: {', '.join(requirements) or 'none reached'}")
    if kind == "response":
        lines += [f"  expected response: {_dump(expected)}", f"  actual response:   {_dump(actual)}"]
    else:
        lines.append("  state differs after the step:")
        lines += ["    " + line for line in state_diff(expected, actual)]
    if messages != (None, None):
        lines.append(f"  model message:  {_dump(messages[0])}")
        lines.append(f"  target message: {_dump(messages[1])}")
    if exchange is not None:
        lines.append("  " + exchange.replace("\n", "\n  "))
    return "\n".join(lines)


def where_of(step: dict[str, Json] | None) -> str:
    if step is None:
        return "reset (before the first step)"
    return f"step {step['i']}: {step['op']} {_dump(step['args'])} at now={step['now']}"


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
    try:
        text = json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):  # a target's non-JSON answer, shown as what it is
        text = repr(value)
    return text if len(text) <= 400 else text[:400] + "..."


def exception_details(error: BaseException) -> tuple[str, str, list[str], str]:
    """Type name, message, innermost frames and raise site (type and innermost frame) of
    what a target raised; a TargetError that wraps a Python exception (the in-process
    boundary) is described by what it wraps."""
    if isinstance(error, TargetError) and error.exc_type:  # what the in-process boundary caught
        site = error.exc_type
        if error.frames:
            where, _, _ = error.frames[-1].rpartition(" in ")
            site += f" at {os.path.basename(where)}"
        return error.exc_type, error.exc_message, list(error.frames), site
    inner = error.__cause__ if isinstance(error, TargetError) and error.__cause__ is not None else error
    # A TargetError of duespec's own (a program that died, a deadline) has no frames worth showing.
    own = isinstance(inner, TargetError)
    frames = traceback.extract_tb(inner.__traceback__)[-SHOWN_FRAMES:] if inner.__traceback__ and not own else []
    shown = [f"{frame.filename}:{frame.lineno} in {frame.name}: {(frame.line or '').strip()}"
             for frame in frames]
    site = type(inner).__name__
    if frames:
        site += f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}"
    return type(inner).__name__, str(error), shown, site


class LockstepMachine(RuleBasedStateMachine):
    """Base class; a campaign sets the class attributes below on a fresh subclass."""

    oracle_factory: ClassVar[TargetFactory]
    target_factory: ClassVar[TargetFactory]
    config: ClassVar[dict[str, Json]]
    #: Steps of the most recent run; after a failure, the shrunk counterexample.
    last_steps: ClassVar[list[dict[str, Json]]] = []
    #: Steps taken by every run of this class, for throughput figures.
    total_steps: ClassVar[int] = 0
    #: What no longer fails (None: every difference fails).
    masks: ClassVar[Masks | None] = None
    #: Coverage tags collected while the oracle takes a step (run_campaign registers it).
    step_tags: ClassVar[Counter[str] | None] = None
    #: Ops left out of the campaign (--ops/--skip-ops): a step with one ends its run.
    excluded_ops: ClassVar[frozenset[str]] = frozenset()
    #: The config the most recent run was reset with: a machine may draw its own per run.
    last_config: ClassVar[dict[str, Json]] = {}
    #: Scale of the deep runs a machine mixes in (0: none); `--depth`.
    depth: ClassVar[float] = 1.0
    #: Per finished run, what `depth_reached` measured: how deep the campaign went.
    depths: ClassVar[list[dict[str, int]]] = []

    def __init__(self) -> None:
        super().__init__()
        self.oracle: Target = type(self).oracle_factory()
        self.oracle.reset(dict(self.config))
        self.steps: list[dict[str, Json]] = []
        type(self).last_steps = self.steps
        #: The oracle's coverage tags in the latest step: its requirement IDs.
        self.latest_tags: tuple[str, ...] = ()
        #: (step index, mask label) of the latest response that went uncompared.
        self.masked_response: tuple[int, str] = (-1, "")
        self._observed: dict[str, Json] = {}
        self._observed_at = -1
        try:
            self.target: Target = type(self).target_factory()
            self.target.reset(dict(self.config))
        except Exception as error:
            raise self.target_failure(None, "reset", error) from error
        type(self).last_config = dict(self.config)
        #: duespec's own adapters tell whether their state and answer are the expected
        #: ones without building them (as replay's fast path does: a deep book's state and
        #: whole-book listings are thousands of rows); anything else is observed and
        #: compared, so no outside code can vouch for itself.
        trusted = type(self.target).__module__.startswith("duespec.systems.")
        self.trusted_state_is = getattr(self.target, "state_is", None) if trusted else None
        self._trusted_checker = getattr(self.target, "recorded_step_checker", None) if trusted else None
        self.trusted_check = self._trusted_checker(None) if self._trusted_checker else None

    def reconfigure(self, config: dict[str, Json]) -> None:
        """Reset both sides to this run's own config, drawn by the machine's first
        initialize rule: a target that only works with the default config must not pass."""
        self.oracle.reset(dict(config))
        try:
            self.target.reset(dict(config))
        except Exception as error:
            raise self.target_failure(None, "reset", error) from error
        type(self).last_config = dict(config)
        self._observed_at = -1  # the oracle's state changed with no step taken
        if self._trusted_checker:  # it holds the target's Book, which reset replaced
            self.trusted_check = self._trusted_checker(None)

    def depth_reached(self) -> dict[str, int]:
        """Named sizes this run reached (ids allocated, entries open...), for the report."""
        return {}

    def call(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        """Take one step on both sides; return the oracle's response for the rules to use."""
        if op in self.excluded_ops:
            reject()
        tags = self.step_tags
        if tags is not None:
            tags.clear()
        expected = self.oracle.step(op, args, now)
        step = {"i": len(self.steps), "op": op, "args": args, "now": now, "result": expected}
        self.steps.append(step)
        type(self).total_steps += 1
        if tags is not None:
            self.latest_tags = tuple(tags)
        check = self.trusted_check
        try:
            actual = self.target.step(op, args, now) if check is None else check(step)
        except Exception as error:
            raise self.target_failure(step, op, error) from error
        if actual is None and check is not None:
            return expected  # the target's own adapter found its answer equal to this one
        if type(actual) is not dict:
            raise self.target_failure(step, op, TargetError(
                f"step returned {type(actual).__name__}, not a JSON object: {_dump(repr(actual))}"))
        # Identical answers (the usual case) need no copies without their prose.
        if not same_json(expected, actual) and not responses_agree(expected, actual):
            self.judge(RESPONSE, step, comparable(expected), comparable(actual),
                       (expected.get("message"), actual.get("message")))
        return expected

    def judge(self, kind: str, step: dict[str, Json], expected: Json, actual: Json,
              messages: tuple[Json, Json] = (None, None)) -> None:
        """Fail with the difference's class, unless the campaign masks it: then a response
        goes uncompared and the run goes on; a state difference ends the run."""
        requirements = requirements_of(self.latest_tags)
        paths = differing_paths(expected, actual) or ["$"]
        masks = self.masks
        if masks is None:
            found: DivergenceClass | None = DivergenceClass(kind, step["op"], requirements, paths[0], tuple(paths))
        else:
            found, masked = masks.classify(kind, step["op"], requirements, paths)
            if found is None:
                masks.skipped.update(masked)
                if kind == STATE:
                    masks.runs_ended[masked[0]] += 1
                    reject()
                self.masked_response = (step["i"], masked[0])
                return
            if kind == STATE and self.masked_response[0] == step["i"]:
                # The state after a masked response differs: its consequence, not a new class.
                masks.runs_ended[self.masked_response[1]] += 1
                reject()
        raise Divergence(step, kind, expected, actual, found, messages,
                         getattr(self.target, "last_exchange", None))

    def target_failure(self, step: dict[str, Json] | None, op: str, error: BaseException) -> TargetRaised:
        """The target raised, or could not answer: its failure, classified like a divergence.
        A masked one ends the run (what the target holds after it is unknown)."""
        type_name, message, frames, site = exception_details(error)
        found = DivergenceClass(TARGET_RAISED, op, requirements_of(self.latest_tags if step else ()),
                                site, (site,))
        masks = self.masks
        if masks is not None:
            mask = masks.mask_of(TARGET_RAISED, op, found.requirements, site)
            if mask is not None:
                masks.runs_ended[mask] += 1
                reject()
        lines = [where_of(step), f"  target raised {type_name}: {message}"]
        if frames:
            lines.append("  innermost frames:")
            lines.extend(f"    {frame}" for frame in frames)
        return TargetRaised("\n".join(lines), found, step)

    @invariant()
    def invariants_hold(self) -> None:
        """The one registered invariant, since Hypothesis's bookkeeping costs per invariant:
        the whole observable states agree, then each property of `check_properties`."""
        if self.steps:
            expected = self.oracle_state()
            state_is = self.trusted_state_is
            try:
                agrees = state_is is not None and state_is(expected)
                if not agrees:
                    actual = self.target.observe()
            except Exception as error:
                raise self.target_failure(self.steps[-1], self.steps[-1]["op"], error) from error
            if not agrees and not same_json(expected, actual):
                self.judge(STATE, self.steps[-1], expected, actual)
        self.check_properties()

    def check_properties(self) -> None:
        """A system's own invariants; each failure raises AssertionError naming its property."""

    def oracle_state(self) -> dict[str, Json]:
        """The oracle's observable state after the latest step, observed once per step."""
        if self._observed_at != len(self.steps):
            self._observed, self._observed_at = self.oracle.observe(), len(self.steps)
        return self._observed

    def teardown(self) -> None:
        reached = self.depth_reached()
        if reached:
            type(self).depths.append(reached)
        self.oracle.close()
        close = getattr(getattr(self, "target", None), "close", None)
        if close is None:  # close() is optional for a target
            return
        in_flight = sys.exc_info()[1]  # Hypothesis tears down in a `finally`
        try:
            close()
        except Exception as error:
            if in_flight is None:
                raise self.target_failure(self.steps[-1] if self.steps else None, "close", error) from error


def lockstep(base: type[LockstepMachine], oracle: TargetFactory, target: TargetFactory,
             config: dict[str, Any], masks: Masks | None = None,
             excluded_rules: frozenset[str] = frozenset(),
             excluded_ops: frozenset[str] = frozenset(), depth: float = 1.0) -> type[LockstepMachine]:
    """A runnable machine class: `base`'s rules but `excluded_rules`, this oracle, this
    target, this config, these masks, this depth."""
    attributes: dict[str, Any] = {
        "oracle_factory": staticmethod(oracle),
        "target_factory": staticmethod(target),
        "config": dict(config),
        "last_steps": [],
        "total_steps": 0,
        "masks": masks,
        "excluded_ops": excluded_ops,
        "last_config": dict(config),
        "depth": depth,
        "depths": [],
    }
    for name in excluded_rules:  # still callable by other rules, no longer drawn as a rule
        attributes[name] = _plain(getattr(base, name))
    return type(base.__name__, (base,), attributes)


def _plain(rule: Any) -> Any:
    def not_a_rule(self: LockstepMachine, *args: Any, **kwargs: Any) -> Any:
        return rule(self, *args, **kwargs)
    not_a_rule.__name__ = not_a_rule.__qualname__ = rule.__name__
    return not_a_rule

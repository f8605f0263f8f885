"""Is a failure the target's answer to these steps, or to the runs before them?

A target that keeps something across `reset` (an id counter, a cache) answers a run
according to the runs before it. Hypothesis then sees the same inputs fail and pass, shrinks
to a run that passes on its own, or reports flakiness. So every failure a campaign finds is
replayed on the target twice, each time from a reset, and once on the model: two different
transcripts are a target bug of its own kind, "state survives reset", with the evidence;
two equal ones that match the model mean the failure does not reproduce (also the
target's: the model is deterministic). A pass in which a call runs past --timeout
proves nothing either way (Probe.inconclusive) and stops the probe there: the failure
keeps its class, and the slow call is not sent again.

A leak's trace (leak_trace) is the steps, a reset line and the same steps again, each with
the model's answer: `duespec replay` starts a fresh program, whose first run agrees with
the model, and finds the leak in the second.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from duespec.campaigns.minimise import replay_failure
from duespec.judge import Difference, FindingKind
from duespec.targets.interface import (
    Json,
    Target,
    TargetFactory,
    TargetTooSlow,
    close_quietly,
    comparable,
    same_json,
)

#: How a transcript records a call past --timeout.
TOO_SLOW = TargetTooSlow.__name__


@dataclass(frozen=True)
class Probe:
    #: The first step whose answer (or state after it) differed between the two passes.
    leak: str | None
    #: The judge's first difference when the steps are taken once more beside the model,
    #: after the two passes; None when the target agrees with the model throughout.
    reproduced: Difference | None
    #: Index of the step where the two passes first differ.
    leak_step: int | None = None
    #: What the target answered there in each pass, and the model: kept in the trace header.
    evidence: dict[str, Json] | None = None
    #: Why the probe could not tell (a call in it ran past --timeout): no leak is claimed,
    #: and the failure keeps its class.
    inconclusive: str | None = None


def probe(oracle: TargetFactory, factory: TargetFactory, config: dict[str, Json],
          steps: list[dict[str, Json]], observe: bool = True) -> Probe:
    """`observe`: whether the target's state is compared (False for a target with no
    observe(): its answers alone make the transcripts)."""
    target = factory()
    first = transcript(target, config, steps, observe)
    if first and first[-1].get("raised") == TOO_SLOW:
        # A call near or past --timeout answers or not as the machine's load has it: two
        # passes that differ there show no leak, and each more pass costs the whole timeout.
        close_quietly(target)
        return Probe(None, None, inconclusive=f"replayed from a reset, step {len(first) - 1} ran past --timeout")
    if first and "raised" in first[-1]:  # a program that failed is restarted by its factory
        close_quietly(target)
        target = factory()
    second = transcript(target, config, steps, observe)
    if second and second[-1].get("raised") == TOO_SLOW:
        close_quietly(target)
        return Probe(None, None, inconclusive=f"replayed from a reset, step {len(second) - 1} ran past --timeout")
    # The third pass on the same target, beside the model: replay_failure closes both.
    judged = replay_failure(oracle, lambda: target, config,
                            [(step["op"], step["args"], step["now"]) for step in steps], None, True, observe)
    reproduced = judged[1] if judged is not None else None
    if reproduced is not None and reproduced.kind == FindingKind.TARGET_TOO_SLOW:
        return Probe(None, None, inconclusive=f"replayed beside the model, {reproduced.step and reproduced.step['op']} "
                                              f"ran past --timeout")
    for index, (one, two) in enumerate(zip(first, second)):
        if not same_json(one, two):
            step = steps[index]
            expected = step.get("result")
            where = (f"step {step['i']}: {step['op']} {json.dumps(step['args'], sort_keys=True)} "
                     f"at now={step['now']}")
            return Probe(
                f"the same {len(steps)} steps, run twice on one target with a reset before each, "
                f"were answered differently: the target's state survives reset (or its answers "
                f"depend on chance)\n  {where}\n"
                f"    first run:              {_dump(one)}\n"
                f"    after one more reset:   {_dump(two)}\n"
                f"    the model:              {_dump(_model_entry(expected))}",
                reproduced, index,
                {"step": step["i"], "first_run": one, "after_one_more_reset": two,
                 "model": _model_entry(expected)})
    if len(first) != len(second):
        return Probe(f"the same {len(steps)} steps, run twice with a reset before each, ran "
                     f"{len(first)} and {len(second)} steps: the target's state survives reset",
                     reproduced, min(len(first), len(second)))
    return Probe(None, reproduced)


def _model_entry(result: Json) -> Json:
    """The model's answer to a step, as a transcript entry shows an answer."""
    return {"response": comparable(result)} if isinstance(result, dict) else None


def leak_trace(steps: list[dict[str, Json]], config: dict[str, Json]) -> list[dict[str, Json]]:
    """The trace lines that show a leak on a fresh target: the steps, a reset with the same
    config, the same steps again (numbered on), each with its recorded result, the model's
    answer. The model answers both runs alike, so a target that agrees with it on the first
    and keeps something across the reset diverges in the second."""
    again = [{**step, "i": len(steps) + index} for index, step in enumerate(steps)]
    return [*steps, {"reset": dict(config)}, *again]


def transcript(target: Target, config: dict[str, Json], steps: list[dict[str, Json]],
               observe: bool = True) -> list[Json]:
    """Per step: the response (prose left out) and a digest of the state after it; a call
    that raises ends the transcript with what it raised. A digest, not the state: a run
    that fills a book with thousands keeps thousands of states, each of thousands."""
    answers: list[Json] = []
    try:
        target.reset(dict(config))
        for step in steps:
            response = target.step(step["op"], step["args"], step["now"])
            answers.append({"response": comparable(response) if isinstance(response, dict) else response,
                            "state": state_digest(target.observe()) if observe else None})
    except Exception as error:  # what the target raised is part of its answer
        answers.append({"raised": type(error).__name__})
    return answers


def state_digest(state: Json) -> str:
    """Equal for states that are equal as JSON (1, 1.0 and true stay apart, as in
    same_json); what is no JSON (a set, a tuple key) is digested by its repr."""
    try:
        text = json.dumps(state, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        text = repr(state)
    return f"sha256:{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:32]}"


def _dump(value: Json) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 300 else text[:300] + "..."

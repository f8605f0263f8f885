"""After Hypothesis has shrunk a failing run: drop the steps the failure does not need.

Hypothesis shrinks the *draws* of a run. A step that a rule takes many times in one draw
(a deep opening's fill of a thousand schedules, a drain) goes or stays with that draw, so
a failure first seen deep inside such a rule can keep hundreds of steps that have nothing
to do with it, or a dozen that a draw cannot express away. This pass works on the
recorded trace instead: it removes every request the oracle gave one same answer (an
opening's refused requests, whatever their ops), then every request of one op at a time, then chunks of
steps (delta debugging, complements only, then one step at a time), replays each candidate from a reset on a fresh oracle and a
fresh target, and keeps a candidate only when its first difference is **the same
divergence class** (duespec.campaigns.classes) as the shrunk run's. It never turns a
failure into a pass nor changes its class: a candidate that passes, fails elsewhere or
fails another way is dropped. The state is compared after every step when the shrunk run
shows its class that way (as `duespec replay` compares it); a run whose class needs the
state compared only after a rule of many steps (a fill, a drain), as the campaign compared
it, is minimised that way: every response, and the state after the last step. It is bounded: at most
REPLAY_STEP_BUDGET_FACTOR times the shrunk run's length in replayed steps (at least
MIN_REPLAY_STEPS), MAX_SECONDS of this process's CPU and WALL_PER_CPU times that of wall
clock, after which the best so far is kept; a replay with a call past --timeout ends it
too (the best so far kept: each more would wait the whole timeout). CPU, so that a loaded machine finds the same
counterexample as a quiet one; the wall clock bounds a slow target in another process.

Classes of a compared difference are minimised, and a target that raised (its class is
the op where it raised, and the exception's type): a replay that raises elsewhere, or
otherwise, is another class and dropped. A program that hung is not (each replay would
wait its whole --timeout).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from duespec.campaigns.classes import Masks
from duespec.judge import Difference, Divergence, DivergenceClass, FindingKind, Masked, StepJudge, TargetRaised
from duespec.coverage import isolated
from duespec.targets.interface import Json, TargetFactory, close_quietly, comparable

#: Replayed steps allowed, as a multiple of the shrunk run's length.
REPLAY_STEP_BUDGET_FACTOR = 40
#: ... but never fewer than this many (a short run gets its one-step-at-a-time pass).
MIN_REPLAY_STEPS = 4_000
#: Bound of the whole pass in CPU seconds of this process ...
MAX_SECONDS = 20.0
#: ... and this many times as long by the wall clock (a target in another process spends
#: none of our CPU).
WALL_PER_CPU = 6
#: A shrunk run up to this long is first replayed with the state compared after every
#: step (as `duespec replay` does); longer ones compare every response and the state
#: after their last step, as the campaign did after a rule that takes many steps.
EVERY_STATE_UP_TO = 200


@dataclass
class Minimised:
    steps: list[dict[str, Json]]
    #: What went wrong in the minimised run (a Divergence or TargetRaised, whose text names its step).
    error: Divergence | TargetRaised
    replays: int
    replayed_steps: int


class _Budget:
    def __init__(self, steps: int, seconds: float) -> None:
        self.steps, self.replays, self.used = steps, 0, 0
        self.cpu_deadline = time.process_time() + seconds
        self.deadline = time.monotonic() + seconds * WALL_PER_CPU
        #: A replay ran past --timeout: the pass ends with what it has (each more such
        #: replay would wait the whole timeout, and its verdict depends on the load).
        self.too_slow = False

    def left(self) -> bool:
        return (not self.too_slow and self.used < self.steps and time.process_time() < self.cpu_deadline
                and time.monotonic() < self.deadline)


def replay_failure(oracle_factory: TargetFactory, target_factory: TargetFactory, config: dict[str, Json],
                   requests: list[tuple[str, Json, Json]], masks: Masks | None,
                   every_state: bool, observe: bool = True,
                   refuses: Any = None, accepts: Any = None) -> tuple[list[dict[str, Json]], Difference] | None:
    """Run `requests` ((op, args, now) each) from a reset on a fresh oracle and target, as
    the lockstep machine does, each step judged; return the steps up to the first unmasked
    difference (a raise included) and that difference, or None when there is none (or a
    masked difference ended the run, as it ends a campaign's run)."""
    with isolated() as tags:
        oracle, target = oracle_factory(), None
        try:
            target = target_factory()
            judge = StepJudge(oracle, target, masks=masks, tags=tags, observe=observe, messages=not observe,
                              refuses=refuses, accepts=accepts)
            at_reset = judge.reset(config)
            if at_reset is not None:
                return ([], at_reset) if type(at_reset) is Difference else None
            last = len(requests) - 1
            for index, (op, args, now) in enumerate(requests):
                _, verdict = judge.step(op, args, now)  # type: ignore[arg-type]
                if verdict is None or (type(verdict) is Masked and not verdict.ends_run):
                    if every_state or index == last:
                        verdict = judge.state()
                if type(verdict) is Difference:
                    return judge.steps, verdict
                if verdict is not None and verdict.ends_run:
                    return None  # a masked difference that ends a campaign's run
        except Exception:  # the target's factory, or the oracle, raised: no verdict on the steps
            return None
        finally:
            close_quietly(oracle)
            close_quietly(target)
    return None


def minimise(oracle_factory: TargetFactory, target_factory: TargetFactory, config: dict[str, Json],
             steps: list[dict[str, Any]], wanted: DivergenceClass, masks: Masks | None = None,
             *, max_seconds: float = MAX_SECONDS, observe: bool = True,
             refuses: Any = None, accepts: Any = None) -> Minimised | None:
    """The shortest run this pass finds whose first difference is of class `wanted`, or
    None when it found none shorter than `steps` (or `steps` does not show `wanted` when
    replayed on its own). `refuses`: the campaign's System.refuses, so that a cause is
    judged as the campaign judged it."""
    if not wanted.kind.minimised or len(steps) < 2:
        return None
    budget = _Budget(max(MIN_REPLAY_STEPS, REPLAY_STEP_BUDGET_FACTOR * len(steps)), max_seconds)

    def fails(requests: list[tuple[str, Json, Json]], every_state: bool) -> tuple[list[Any], Difference] | None:
        budget.replays += 1
        budget.used += len(requests)
        got = replay_failure(oracle_factory, target_factory, config, requests, masks, every_state, observe,
                             refuses, accepts)
        if got is not None and got[1].kind == FindingKind.TARGET_TOO_SLOW:
            budget.too_slow = True
        if got is None or got[1].divergence_class != wanted:
            return None
        return got

    current = [(step["op"], step["args"], step["now"]) for step in steps]
    # The state after every step, as `duespec replay` compares it, when the shrunk run
    # shows its class that way; else (a rule that takes many steps, whose state the
    # campaign compared once, after the last) every response and the final state only.
    every_state = len(current) <= EVERY_STATE_UP_TO and fails(current, True) is not None
    if not every_state and fails(current, False) is None:
        return None  # the shrunk run does not show its class when replayed alone: leave it

    def candidate_fails(requests: list[tuple[str, Json, Json]]) -> list[tuple[str, Json, Json]] | None:
        got = fails(requests, every_state)
        return None if got is None else requests[:len(got[0])]
    # First every request the oracle gave one same answer, for each answer given more than
    # once (most often first): an opening's refused requests (a 400 or `invalid` each,
    # whatever their op) go in one replay.
    answers = [json.dumps(comparable(step["result"]), sort_keys=True) for step in steps[:-1]]
    for answer, count in Counter(answers).most_common():
        if count < 2 or not budget.left():
            break
        candidate = [request for request, given in zip(current[:-1], answers) if given != answer] + current[-1:]
        shorter = candidate_fails(candidate)
        if shorter is not None:
            current = shorter
            break  # `answers` are the shrunk run's: the passes below go on from here
    # Then every request of one op at a time (the failing last step kept): a rule of many
    # steps interleaves requests the failure does not need (listings between a tour's
    # schedules) with ones it does, and no chunk of neighbouring steps takes them out
    # without the schedules around them.
    for op in dict.fromkeys(repr(request[0]) for request in current[:-1]):
        if not budget.left():
            break
        candidate = [request for request in current[:-1] if repr(request[0]) != op] + current[-1:]
        shorter = candidate_fails(candidate)
        if shorter is not None:
            current = shorter
    chunks = 2
    while len(current) >= 2 and budget.left():
        size = -(-len(current) // chunks)
        reduced = False
        # From the end backwards: a failure is at its run's end, the opening at its start,
        # and removing late steps first keeps the ids of the earlier ones.
        for start in reversed(range(0, len(current), size)):
            if not budget.left():
                break
            shorter = candidate_fails(current[:start] + current[start + size:])
            if shorter is not None:
                current, reduced = shorter, True
                chunks = max(chunks - 1, 2)
                break
        if not reduced:
            if size == 1:
                break
            chunks = min(chunks * 2, len(current))
    if len(current) >= len(steps):
        return None
    final = fails(current, every_state)  # once more, as the pass judged it
    if final is None or len(final[0]) != len(current):
        return None
    error = Divergence(final[1]) if final[1].kind.compared else TargetRaised(final[1])
    return Minimised(final[0], error, budget.replays, budget.used)

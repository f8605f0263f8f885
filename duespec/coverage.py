"""Which requirement IDs and spec branches a run exercised.

model/ calls `reached("D-05.not_due")` on each branch it takes; a campaign collects the
tags, and the report lists the catalogue's IDs that were never reached."""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from typing import Iterable, Iterator

_collectors: list[Counter[str]] = []

#: A branch the model took in a step the target refused, so that the step was taken back
#: (duespec.judge.StepJudge.step): not reached against that target, for its answer there
#: was the refusal, not the branch. Counted under this prefix instead.
TAKEN_BACK = "taken back: "


def reached(tag: str) -> None:
    """Record that a spec branch was taken (cheap no-op when nobody is collecting)."""
    for counter in _collectors:
        counter[tag] += 1


def taken_back(tags: Iterable[str]) -> None:
    """Move the latest step's tags, just reached, to their taken-back count."""
    for counter in _collectors:
        for tag in tags:
            counter[tag] -= 1
            if counter[tag] <= 0:
                del counter[tag]
            counter[TAKEN_BACK + tag] += 1


@contextmanager
def collecting() -> Iterator[Counter[str]]:
    counter: Counter[str] = Counter()
    _collectors.append(counter)
    try:
        yield counter
    finally:
        _collectors.remove(counter)


@contextmanager
def isolated() -> Iterator[Counter[str]]:
    """Collect into a counter of its own only: what runs inside (a replay that checks a
    counterexample) adds nothing to the collectors outside, the campaign's coverage."""
    global _collectors
    outside, counter = _collectors, Counter()
    _collectors = [counter]
    try:
        yield counter
    finally:
        _collectors = outside

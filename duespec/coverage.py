"""Which requirement IDs and spec branches a run exercised.

model/ calls `reached("D-05.not_due")` on each branch it takes; a campaign collects the
tags, and the report lists the catalogue's IDs that were never reached."""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from typing import Iterator

_collectors: list[Counter[str]] = []


def reached(tag: str) -> None:
    """Record that a spec branch was taken (cheap no-op when nobody is collecting)."""
    for counter in _collectors:
        counter[tag] += 1


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

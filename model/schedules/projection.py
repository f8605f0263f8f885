"""The projection P-01 and P-02 share: a pending promise past its timeout reads as settled.

Inlined twice in the Lean; one function here so the two readers cannot drift apart."""

from __future__ import annotations

from dataclasses import replace

from duespec.model.schedules.state import PromiseObject, is_timer


def timed_out(p: PromiseObject) -> PromiseObject:
    """p as its own timeout settles it: a timer resolves, anything else times out."""
    return replace(p, state="resolved" if is_timer(p.tags) else "rejected_timedout",
                   settled_at=p.timeout_at)

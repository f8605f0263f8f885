"""R-00 enqueueResume (Lean 00-resume): wake an awaiter whose awaited promise settled.

The version is not bumped (only an acquire does); a busy awaiter buffers the resume once."""

from __future__ import annotations

from dataclasses import replace

from duespec.coverage import reached
from duespec.model.schedules.state import (
    RETRY, Execute, ServerState, get_promise, get_task, set_message, set_task, set_task_timeout, tags_get,
)


def enqueue_resume(state: ServerState, awaited_id: str, awaiter_id: str, now: int) -> None:
    t = get_task(state, awaiter_id)
    if t is None:
        reached("R-00.no_task")
        return
    if t.state == "suspended":
        reached("R-00.resumed")
        t = replace(t, state="pending", resumes=(awaited_id,))
        set_task(state, t)
        set_task_timeout(state, t.id, RETRY, now + state.config.retry_timeout)
        p = get_promise(state, awaiter_id)
        if p is not None:
            target = tags_get(p.tags, "resonate:target") or ""
            if target != "":
                set_message(state, target, Execute(t.id, t.version), "R-00.resumed")
    elif t.state in ("pending", "acquired", "halted"):
        if awaited_id in t.resumes:
            reached("R-00.already_buffered")
            return
        reached("R-00.buffered")
        set_task(state, replace(t, resumes=t.resumes + (awaited_id,)))
    else:
        reached("R-00.fulfilled")

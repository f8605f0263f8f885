"""The canonical observable state and records of docs/operations.md, as JSON values."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from duespec.model.schedules.state import (
    Execute, OutboxEntry, PromiseObject, Schedule, SentMessage, ServerState, TaskObject, Value, forget_sent,
)

Json = Any


def value_json(v: Value) -> Json:
    return {"headers": dict(v.headers), "data": v.data}


def promise_record_json(p: PromiseObject) -> Json:
    """Lean PromiseObject.toRecord."""
    return {"id": p.id, "state": p.state, "param": value_json(p.param), "value": value_json(p.value),
            "tags": dict(p.tags), "timeoutAt": p.timeout_at, "createdAt": p.created_at,
            "settledAt": p.settled_at}


def promise_object_json(p: PromiseObject) -> Json:
    return {**promise_record_json(p), "callbacks": list(p.callbacks), "listeners": list(p.listeners)}


def task_json(t: TaskObject) -> Json:
    return {"id": t.id, "state": t.state, "version": t.version, "resumes": list(t.resumes),
            "ttl": t.ttl, "pid": t.pid}


def task_record_json(t: TaskObject) -> Json:
    """Lean TaskObject.toRecord: a response carries how many resumes are buffered, not which."""
    return {"id": t.id, "state": t.state, "version": t.version, "resumes": len(t.resumes),
            "ttl": t.ttl, "pid": t.pid}


def schedule_json(s: Schedule) -> Json:
    return {"id": s.id, "cron": s.cron, "promiseId": s.promise_id,
            "promiseTimeout": s.promise_timeout, "promiseParam": value_json(s.promise_param),
            "promiseTags": dict(s.promise_tags), "nextRunAt": s.next_run_at,
            "lastRunAt": s.last_run_at, "createdAt": s.created_at}


def outbox_entry_json(e: OutboxEntry) -> Json:
    if isinstance(e.message, Execute):
        message = {"kind": "execute", "taskId": e.message.task_id, "version": e.message.version}
    else:
        message = {"kind": "unblock", "promise": promise_record_json(e.message.promise)}
    return {"address": e.address, "message": message}


def observe(state: ServerState) -> Json:
    return {
        "promises": [promise_object_json(state.promises[id]) for id in sorted(state.promises)],
        "tasks": [task_json(state.tasks[id]) for id in sorted(state.tasks)],
        "schedules": [schedule_json(state.schedules[id]) for id in sorted(state.schedules)],
        "promiseTimeouts": [{"id": id, "timeout": state.promise_timeouts[id]}
                            for id in sorted(state.promise_timeouts)],
        "taskTimeouts": [{"id": id, "kind": kind, "timeout": state.task_timeouts[(id, kind)]}
                         for id, kind in sorted(state.task_timeouts)],
        "scheduleTimeouts": [{"id": id, "timeout": state.schedule_timeouts[id]}
                             for id in sorted(state.schedule_timeouts)],
        "outbox": [outbox_entry_json(state.outbox[key]) for key in sorted(state.outbox)],
    }


def drain_sent(state: ServerState) -> list[list[SentMessage]]:
    """The messages sent since the last call, in order, grouped by the transition that sent
    them (docs/operations.md, "What a worker receives"), each with the branches behind it
    (SentMessage); the log is emptied."""
    fulfilled = state.fulfilled
    groups = [[replace(sent, fulfilled_by=fulfilled.get(sent.entry.message.task_id))
               if isinstance(sent.entry.message, Execute) else sent for sent in group]
              for group in state.sent if group]
    forget_sent(state)
    return groups

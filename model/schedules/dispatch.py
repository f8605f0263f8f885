"""`step`: one docs/operations.md operation against the model, JSON in and JSON out.

Reads the request (the 400 path first, before any lookup), runs the handler named by its
spec ID, and writes the Lean response in the wire's shape."""

from __future__ import annotations

from typing import Any, Callable

from duespec.coverage import reached
from duespec.model.schedules.observe import promise_record_json, schedule_json, task_record_json
from duespec.model.schedules.on_promise_timeout import on_promise_timeout
from duespec.model.schedules.on_schedule_timeout import on_schedule_timeout
from duespec.model.schedules.p01_promise_get import promise_get
from duespec.model.schedules.p02_promise_create import promise_create
from duespec.model.schedules.p03_promise_settle import promise_settle
from duespec.model.schedules.p04_promise_register_callback import promise_register_callback
from duespec.model.schedules.p05_promise_register_listener import promise_register_listener
from duespec.model.schedules.p06_promise_search import promise_search
from duespec.model.schedules.requests import (
    Invalid, Res, exact_args, id_req, promise_create_req, promise_settle_req, register_callback_req,
    register_listener_req, schedule_create_req, task_acquire_req, task_create_req, task_fence_req,
    task_fulfill_req, task_heartbeat_req, task_suspend_req, task_version_req, time_value, unicode_text,
)
from duespec.model.schedules.s01_schedule_get import schedule_get
from duespec.model.schedules.s02_schedule_create import schedule_create
from duespec.model.schedules.s03_schedule_delete import schedule_delete
from duespec.model.schedules.s04_schedule_search import schedule_search
from duespec.model.schedules.state import ServerState
from duespec.model.schedules.t01_task_get import task_get
from duespec.model.schedules.t02_task_create import task_create
from duespec.model.schedules.t03_task_acquire import task_acquire
from duespec.model.schedules.t04_task_fence import task_fence
from duespec.model.schedules.t05_task_heartbeat import task_heartbeat
from duespec.model.schedules.t06_task_suspend import task_suspend
from duespec.model.schedules.t07_task_fulfill import task_fulfill
from duespec.model.schedules.t08_task_release import task_release
from duespec.model.schedules.t09_task_halt import task_halt
from duespec.model.schedules.t10_task_continue import task_continue
from duespec.model.schedules.t11_task_search import task_search
from duespec.model.schedules.tick import tick

Json = Any


def res_json(res: Res) -> dict[str, Json]:
    out: dict[str, Json] = {"status": res.status}
    if res.schedule is not None:
        out["schedule"] = schedule_json(res.schedule)
    if res.promise is not None:
        out["promise"] = promise_record_json(res.promise)
    if res.schedules is not None:
        out["schedules"] = [schedule_json(s) for s in res.schedules]
        out["cursor"] = res.cursor
    if res.task is not None:
        out["task"] = task_record_json(res.task)
    if res.action is not None:
        kind, inner = res.action
        out["action"] = {"kind": kind, **res_json(inner)}
    return out


def _schedule_timeout(state: ServerState, args: Json, now: int) -> dict[str, Json]:
    on_schedule_timeout(state, id_req(args).id, now)
    return {"status": 200}


def _promise_timeout(state: ServerState, args: Json, now: int) -> dict[str, Json]:
    on_promise_timeout(state, id_req(args).id, now)
    return {"status": 200}


def _tick(state: ServerState, args: Json, now: int) -> dict[str, Json]:
    exact_args(args, ())
    return {"status": 200, "fired": tick(state, now)}


#: op -> (requirement ID, run). Each run reads its whole request before touching state.
OPERATIONS: dict[str, tuple[str, Callable[[ServerState, Json, int], dict[str, Json]]]] = {
    "schedule.get": ("S-01", lambda st, a, now: res_json(schedule_get(st, id_req(a), now))),
    "schedule.create": ("S-02", lambda st, a, now: res_json(schedule_create(st, schedule_create_req(a, now), now))),
    "schedule.delete": ("S-03", lambda st, a, now: res_json(schedule_delete(st, id_req(a), now))),
    "schedule.search": ("S-04", lambda st, a, now: res_json(schedule_search(st, a, now))),
    "promise.get": ("P-01", lambda st, a, now: res_json(promise_get(st, id_req(a), now))),
    "promise.create": ("P-02", lambda st, a, now: res_json(promise_create(st, promise_create_req(a), now))),
    "promise.settle": ("P-03", lambda st, a, now: res_json(promise_settle(st, promise_settle_req(a), now))),
    "promise.register_callback": ("P-04", lambda st, a, now: res_json(
        promise_register_callback(st, register_callback_req(a), now))),
    "promise.register_listener": ("P-05", lambda st, a, now: res_json(
        promise_register_listener(st, register_listener_req(a), now))),
    "promise.search": ("P-06", lambda st, a, now: res_json(promise_search(st, now))),
    "task.get": ("T-01", lambda st, a, now: res_json(task_get(st, id_req(a), now))),
    "task.create": ("T-02", lambda st, a, now: res_json(task_create(st, task_create_req(a), now))),
    "task.acquire": ("T-03", lambda st, a, now: res_json(task_acquire(st, task_acquire_req(a), now))),
    "task.fence": ("T-04", lambda st, a, now: res_json(task_fence(st, task_fence_req(a), now))),
    "task.heartbeat": ("T-05", lambda st, a, now: res_json(task_heartbeat(st, task_heartbeat_req(a), now))),
    "task.suspend": ("T-06", lambda st, a, now: res_json(task_suspend(st, task_suspend_req(a), now))),
    "task.fulfill": ("T-07", lambda st, a, now: res_json(task_fulfill(st, task_fulfill_req(a), now))),
    "task.release": ("T-08", lambda st, a, now: res_json(task_release(st, task_version_req(a), now))),
    "task.halt": ("T-09", lambda st, a, now: res_json(task_halt(st, id_req(a), now))),
    "task.continue": ("T-10", lambda st, a, now: res_json(task_continue(st, id_req(a), now))),
    "task.search": ("T-11", lambda st, a, now: res_json(task_search(st, now))),
    "schedule.timeout": ("TO-03", _schedule_timeout),
    "promise.timeout": ("TO-01", _promise_timeout),
    "tick": ("ENV-01", _tick),
}


def step(state: ServerState, op: str, args: Json, now: Json) -> dict[str, Json]:
    if op not in OPERATIONS:
        reached("X-03.unknown_op")
        return {"status": 400, "message": f"unknown op {op!r}; known: {', '.join(OPERATIONS)}"}
    spec_id, run = OPERATIONS[op]
    try:
        time_value(now, "now")
        unicode_text(args)
        if not isinstance(args, dict):
            # no request of any op, a search's included, is read from JSON that is no object
            raise Invalid(f"args must be an object, got {args!r}")
        return run(state, args, now)
    except Invalid as error:
        reached(f"{spec_id}.invalid")
        return {"status": 400, "message": str(error)}

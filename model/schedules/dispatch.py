"""`step`: one docs/operations.md operation against the model, JSON in and JSON out.

Reads the request (the 400 path first, before any lookup), runs the handler named by its
spec ID, and writes the Lean response in the wire's shape."""

from __future__ import annotations

from typing import Any, Callable

from duespec.coverage import reached
from duespec.model.schedules.observe import promise_record_json, schedule_json
from duespec.model.schedules.on_promise_timeout import on_promise_timeout
from duespec.model.schedules.on_schedule_timeout import on_schedule_timeout
from duespec.model.schedules.p01_promise_get import promise_get
from duespec.model.schedules.p02_promise_create import promise_create
from duespec.model.schedules.requests import (
    Invalid, Res, exact_args, id_req, promise_create_req, schedule_create_req, time_value,
    unicode_text,
)
from duespec.model.schedules.s01_schedule_get import schedule_get
from duespec.model.schedules.s02_schedule_create import schedule_create
from duespec.model.schedules.s03_schedule_delete import schedule_delete
from duespec.model.schedules.s04_schedule_search import schedule_search
from duespec.model.schedules.state import ServerState
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
        return run(state, args, now)
    except Invalid as error:
        reached(f"{spec_id}.invalid")
        return {"status": 400, "message": str(error)}

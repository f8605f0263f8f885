"""The promise and task handlers of the model (P-03..P-06, T-01..T-11, TO-04, TO-05)
against behaviour computed by hand from the Lean at 83d64c3."""

from __future__ import annotations

import pytest

from duespec.model import schedules as model

E = {"headers": {}, "data": None}
W = "poll://w"
TARGETED = {"resonate:target": W}


def server(retry_timeout: int = 5000) -> model.ServerState:
    return model.new_state(model.Config(retry_timeout=retry_timeout))


def create(state: model.ServerState, id: str, timeout_at: int = 100_000, tags: dict = TARGETED, now: int = 0):
    return model.step(state, "promise.create", {"id": id, "timeoutAt": timeout_at, "param": E, "tags": tags}, now)


def task(state: model.ServerState, id: str) -> dict:
    return next(t for t in model.observe(state)["tasks"] if t["id"] == id)


def promise(state: model.ServerState, id: str) -> dict:
    return next(p for p in model.observe(state)["promises"] if p["id"] == id)


def acquire(state, id, version=0, pid="w1", ttl=1000, now=0):
    return model.step(state, "task.acquire", {"id": id, "version": version, "pid": pid, "ttl": ttl}, now)


def test_settle_unblocks_listeners_resumes_callbacks_and_scrubs() -> None:
    s = server()
    create(s, "awaiter")
    create(s, "awaited", tags={})
    create(s, "other", tags={})
    assert acquire(s, "awaiter")["status"] == 200
    suspend = {"id": "awaiter", "version": 1, "actions": [{"awaited": "awaited", "awaiter": "x"},
                                                          {"awaited": "other", "awaiter": "x"}]}
    assert model.step(s, "task.suspend", suspend, 10)["status"] == 200
    assert promise(s, "other")["callbacks"] == ["awaiter"]
    model.step(s, "promise.register_listener", {"awaited": "awaited", "address": "l"}, 10)
    settled = model.step(s, "promise.settle", {"id": "awaited", "state": "rejected", "value": E}, 20)
    assert settled["promise"]["state"] == "rejected" and settled["promise"]["settledAt"] == 20
    assert task(s, "awaiter") == {"id": "awaiter", "state": "pending", "version": 1, "resumes": ["awaited"],
                                  "ttl": None, "pid": None}
    observed = model.observe(s)
    assert {"id": "awaiter", "kind": 0, "timeout": 5020} in observed["taskTimeouts"]
    assert {"address": "l", "message": {"kind": "unblock", "promise": settled["promise"]}} in observed["outbox"]
    assert promise(s, "awaited")["callbacks"] == [] and promise(s, "awaited")["listeners"] == []
    # the second settlement buffers its resume on the now pending task, once
    model.step(s, "promise.settle", {"id": "other", "state": "resolved", "value": E}, 30)
    assert task(s, "awaiter")["resumes"] == ["awaited", "other"]


def test_suspend_answers_300_when_an_awaited_is_done_and_422_when_absent() -> None:
    s = server()
    create(s, "t")
    create(s, "done", timeout_at=5, tags={})
    acquire(s, "t")
    before = model.observe(s)
    assert model.step(s, "task.suspend", {"id": "t", "version": 1, "actions": [
        {"awaited": "done", "awaiter": "t"}]}, 10)["status"] == 300
    assert model.observe(s) == before  # resumes were already empty
    assert model.step(s, "task.suspend", {"id": "t", "version": 1, "actions": [
        {"awaited": "done", "awaiter": "t"}, {"awaited": "nobody", "awaiter": "t"}]}, 10)["status"] == 422
    assert model.step(s, "task.suspend", {"id": "t", "version": 0, "actions": []}, 10)["status"] == 409


def test_register_callback_needs_a_targeted_live_awaiter() -> None:
    s = server()
    create(s, "awaited", tags={})
    create(s, "plain", tags={})
    create(s, "late", timeout_at=50)
    assert model.step(s, "promise.register_callback", {"awaited": "nobody", "awaiter": "late"}, 0)["status"] == 404
    assert model.step(s, "promise.register_callback", {"awaited": "awaited", "awaiter": "x"}, 0)["status"] == 422
    assert model.step(s, "promise.register_callback", {"awaited": "awaited", "awaiter": "plain"}, 0)["status"] == 422
    # the awaiter is past its timeout: 200, nothing registered
    assert model.step(s, "promise.register_callback", {"awaited": "awaited", "awaiter": "late"}, 60)["status"] == 200
    assert promise(s, "awaited")["callbacks"] == []
    model.step(s, "promise.register_callback", {"awaited": "awaited", "awaiter": "late"}, 10)
    model.step(s, "promise.register_callback", {"awaited": "awaited", "awaiter": "late"}, 11)
    assert promise(s, "awaited")["callbacks"] == ["late"]


def test_lease_lapses_in_tick_and_the_next_acquire_fences_the_old_holder() -> None:
    s = server()
    create(s, "t")
    acquire(s, "t", ttl=1000, now=0)
    assert model.step(s, "tick", {}, 999)["fired"] == []
    fired = model.step(s, "tick", {}, 1000)["fired"]
    assert fired == [{"kind": "lease", "id": "t"}]
    assert task(s, "t")["state"] == "pending" and task(s, "t")["version"] == 1
    assert acquire(s, "t", version=1, pid="w2", now=1001)["task"]["version"] == 2
    stale = {"id": "t", "version": 1, "action": {"kind": "settle", "id": "t", "state": "resolved", "value": E}}
    assert model.step(s, "task.fence", stale, 1002)["status"] == 409
    fulfill = {"id": "t", "version": 1, "action": {"id": "t", "state": "resolved", "value": E}}
    assert model.step(s, "task.fulfill", fulfill, 1002)["status"] == 409


def test_heartbeat_renews_only_the_holders_current_version() -> None:
    s = server()
    create(s, "t")
    acquire(s, "t", pid="w1", ttl=1000, now=0)
    model.step(s, "task.heartbeat", {"pid": "w2", "tasks": [{"id": "t", "version": 1}]}, 500)
    model.step(s, "task.heartbeat", {"pid": "w1", "tasks": [{"id": "t", "version": 0}]}, 500)
    assert model.observe(s)["taskTimeouts"] == [{"id": "t", "kind": 1, "timeout": 1000}]
    assert model.step(s, "task.heartbeat", {"pid": "w1", "tasks": [{"id": "t", "version": 1}]}, 600) == {
        "status": 200}
    assert model.observe(s)["taskTimeouts"] == [{"id": "t", "kind": 1, "timeout": 1600}]


def test_tick_fires_promise_timeouts_before_task_timeouts() -> None:
    """The task's retry (at 5000) is earlier than its promise's timeout (6000), but the
    promise goes first: the task is fulfilled and its retry never fires."""
    s = server()
    create(s, "t", timeout_at=6000)
    assert model.step(s, "tick", {}, 7000)["fired"] == [{"kind": "promise", "id": "t"}]
    assert task(s, "t")["state"] == "fulfilled"


def test_an_early_promise_timeout_is_skipped() -> None:
    s = server()
    create(s, "t", timeout_at=6000)
    before = model.observe(s)
    assert model.step(s, "promise.timeout", {"id": "t"}, 5999) == {"status": 200}
    assert model.observe(s) == before
    model.step(s, "promise.timeout", {"id": "t"}, 6000)
    assert promise(s, "t")["state"] == "rejected_timedout" and promise(s, "t")["settledAt"] == 6000


def test_task_create_branches() -> None:
    s = server()
    made = model.step(s, "task.create", {"pid": "w", "ttl": 10, "action": {
        "id": "n", "timeoutAt": 100, "param": E, "tags": {}}}, 0)
    assert made["task"] == {"id": "n", "state": "acquired", "version": 1, "resumes": 0, "ttl": 10, "pid": "w"}
    assert set(made) == {"status", "task", "promise"}  # no preload: no handler at 83d64c3 fills it
    assert model.observe(s)["promiseTimeouts"] == [{"id": "n", "timeout": 100}]  # even without a target
    # an existing promise without a target
    assert model.step(s, "task.create", {"pid": "w", "ttl": 10, "action": {
        "id": "n", "timeoutAt": 100, "param": E, "tags": {}}}, 0)["status"] == 422
    create(s, "p")
    again = {"pid": "w", "ttl": 10, "action": {"id": "p", "timeoutAt": 1, "param": E, "tags": {}}}
    assert model.step(s, "task.create", again, 5)["task"]["version"] == 1
    assert model.step(s, "task.create", again, 5)["status"] == 409
    born = model.step(s, "task.create", {"pid": "w", "ttl": 10, "action": {
        "id": "old", "timeoutAt": 3, "param": E, "tags": {"resonate:timer": "true"}}}, 5)
    assert born["promise"]["state"] == "resolved" and born["task"]["state"] == "fulfilled"


def test_halt_and_continue() -> None:
    s = server()
    create(s, "t")
    assert model.step(s, "task.continue", {"id": "t"}, 1)["status"] == 409
    assert model.step(s, "task.halt", {"id": "t"}, 1) == {"status": 200}
    assert model.observe(s)["taskTimeouts"] == []
    assert model.step(s, "task.halt", {"id": "t"}, 2) == {"status": 200}
    assert model.step(s, "task.continue", {"id": "t"}, 3) == {"status": 200}
    assert task(s, "t")["state"] == "pending"
    assert model.observe(s)["taskTimeouts"] == [{"id": "t", "kind": 0, "timeout": 5003}]
    model.step(s, "promise.settle", {"id": "t", "state": "resolved", "value": E}, 4)
    assert model.step(s, "task.halt", {"id": "t"}, 5)["status"] == 409


def test_task_get_projects_a_done_promise_and_searches_are_501() -> None:
    s = server()
    create(s, "t", timeout_at=50)
    assert model.step(s, "task.get", {"id": "t"}, 10)["task"]["state"] == "pending"
    assert model.step(s, "task.get", {"id": "t"}, 50)["task"]["state"] == "fulfilled"
    assert model.step(s, "promise.search", {}, 0) == {"status": 501}
    assert model.step(s, "task.search", {"state": "pending"}, 0) == {"status": 501}


def test_fulfill_settles_the_tasks_own_promise() -> None:
    s = server()
    create(s, "t")
    acquire(s, "t")
    done = model.step(s, "task.fulfill", {"id": "t", "version": 1, "action": {
        "id": "ignored", "state": "resolved", "value": {"headers": {}, "data": "42"}}}, 10)
    assert done["promise"]["id"] == "t" and done["promise"]["value"]["data"] == "42"
    assert task(s, "t")["state"] == "fulfilled" and model.observe(s)["taskTimeouts"] == []


@pytest.mark.parametrize("op, args", [
    ("promise.settle", {"id": "t", "state": "pending", "value": E}),
    ("promise.settle", {"id": "t", "state": "rejected_timedout", "value": E}),
    ("task.acquire", {"id": "t", "version": -1, "pid": "w", "ttl": 1}),
    ("task.acquire", {"id": "t", "version": True, "pid": "w", "ttl": 1}),
    ("task.fence", {"id": "t", "version": 0, "action": {"kind": "delete", "id": "t"}}),
    ("task.heartbeat", {"pid": "w", "tasks": {"id": "t"}}),
    ("task.suspend", {"id": "t", "version": 0, "actions": [{"awaited": "a"}]}),
])
def test_invalid_task_requests_are_400_and_change_nothing(op: str, args: dict) -> None:
    s = server()
    create(s, "t")
    before = model.observe(s)
    assert model.step(s, op, args, 0)["status"] == 400
    assert model.observe(s) == before

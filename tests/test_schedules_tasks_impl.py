"""The implementation's promise and task handlers: each is one transaction, and tick finds
due task timeouts through their index."""

from __future__ import annotations

import pytest

from duespec.impl.schedules import ScheduleServer

E = {"headers": {}, "data": None}
TARGETED = {"resonate:target": "poll://w"}


class Planted(RuntimeError):
    """A failure planted in the middle of a handler."""


def suspended(server: ScheduleServer) -> None:
    server.handle("promise.create", {"id": "t", "timeoutAt": 100_000, "param": E, "tags": TARGETED}, 0)
    server.handle("promise.create", {"id": "a", "timeoutAt": 50_000, "param": E, "tags": {}}, 0)
    server.handle("promise.create", {"id": "b", "timeoutAt": 50_000, "param": E, "tags": {}}, 0)
    assert server.handle("task.acquire", {"id": "t", "version": 0, "pid": "w", "ttl": 1000}, 0)["status"] == 200


@pytest.mark.parametrize("op, args, fail_in", [
    ("task.suspend", {"id": "t", "version": 1, "actions": [{"awaited": "a", "awaiter": "t"},
                                                          {"awaited": "b", "awaiter": "t"}]}, "set_task"),
    ("task.fulfill", {"id": "t", "version": 1, "action": {"id": "t", "state": "resolved", "value": E}},
     "pending_awaiters_of"),
    ("task.release", {"id": "t", "version": 1}, "set_message"),
    ("task.fence", {"id": "t", "version": 1, "action": {"kind": "settle", "id": "a", "state": "rejected",
                                                         "value": E}}, "del_promise_timeout"),
])
def test_a_handler_that_fails_midway_changes_nothing(op: str, args: dict, fail_in: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    server = ScheduleServer()
    suspended(server)
    before = server.observe()

    def fail(*_: object) -> None:
        raise Planted(fail_in)

    monkeypatch.setattr(server.store, fail_in, fail)
    with pytest.raises(Planted):
        server.handle(op, args, 10)
    monkeypatch.undo()
    assert server.observe() == before
    assert server.handle(op, args, 10)["status"] == 200  # and the same request then succeeds
    server.close()


def test_tick_finds_due_task_timeouts_through_the_index() -> None:
    server = ScheduleServer()
    plan = server.store.db.execute("EXPLAIN QUERY PLAN SELECT id, kind FROM task_timeouts WHERE timeout <= ? "
                                   "ORDER BY timeout, id, kind", (0,)).fetchall()
    assert any("task_timeouts_due" in str(row) for row in plan), plan
    suspended(server)
    assert server.handle("tick", {}, 1000)["fired"] == [{"kind": "lease", "id": "t"}]
    server.close()

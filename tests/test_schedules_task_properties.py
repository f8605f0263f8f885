"""SP-13..SP-17 hold on real model transitions and each rejects a transition carrying the
bug it names (the negative controls)."""

from __future__ import annotations

import copy

from duespec.spec import schedules_properties as spec
from duespec.systems.schedules import ModelTarget

E = {"headers": {}, "data": None}
TARGETED = {"resonate:target": "poll://w"}


def fresh() -> ModelTarget:
    target = ModelTarget()
    target.reset({"profile": "lean"})
    return target


def transition(target: ModelTarget, op: str, args: dict, now: int) -> tuple[dict, dict, dict]:
    before = copy.deepcopy(target.observe())
    result = target.step(op, args, now)
    return before, {"op": op, "args": args, "now": now, "result": result}, copy.deepcopy(target.observe())


def with_task(after: dict, id: str, **changes) -> dict:
    return {**after, "tasks": [{**t, **changes} if t["id"] == id else t for t in after["tasks"]]}


def suspended_on(target: ModelTarget, awaited_tags: dict = {}) -> None:
    """Task `t` acquired (version 1) and suspended on promise `a`, which has a listener."""
    target.step("promise.create", {"id": "t", "timeoutAt": 100_000, "param": E, "tags": TARGETED}, 0)
    target.step("promise.create", {"id": "a", "timeoutAt": 50_000, "param": E, "tags": awaited_tags}, 0)
    target.step("task.acquire", {"id": "t", "version": 0, "pid": "w1", "ttl": 1000}, 0)
    target.step("task.suspend", {"id": "t", "version": 1, "actions": [{"awaited": "a", "awaiter": "t"}]}, 1)
    target.step("promise.register_listener", {"awaited": "a", "address": "poll://l"}, 1)


def test_a_settled_promise_that_changes_is_rejected() -> None:
    target = fresh()
    target.step("promise.create", {"id": "a", "timeoutAt": 50, "param": E, "tags": {}}, 0)
    target.step("promise.settle", {"id": "a", "state": "resolved", "value": E}, 1)
    before, step, after = transition(target, "promise.settle", {"id": "a", "state": "rejected", "value": E}, 2)
    assert spec.settled_promise_never_changes(before, step, after, "lean")
    resettled = {**after, "promises": [{**p, "state": "rejected", "settledAt": 2} for p in after["promises"]]}
    assert not spec.settled_promise_never_changes(before, step, resettled, "lean")


def test_fencing_rejects_two_holders_of_one_version_and_a_stale_fenced_op() -> None:
    target = fresh()
    target.step("promise.create", {"id": "t", "timeoutAt": 100_000, "param": E, "tags": TARGETED}, 0)
    target.step("task.acquire", {"id": "t", "version": 0, "pid": "w1", "ttl": 1000}, 0)
    target.step("tick", {}, 1000)  # the lease lapses: pending at version 1
    before, step, after = transition(target, "task.acquire", {"id": "t", "version": 1, "pid": "w2", "ttl": 1000},
                                     1001)
    assert spec.one_holder_per_version(before, step, after, "lean")
    # the acquire forgot to bump the version: w1 and w2 both held version 1
    assert not spec.one_holder_per_version(before, step, with_task(after, "t", version=1), "lean")
    # the old holder's release at the stale version was accepted
    stale = {"op": "task.release", "args": {"id": "t", "version": 1}, "now": 1002, "result": {"status": 200}}
    assert spec.one_holder_per_version(after, {**stale, "result": {"status": 409}}, after, "lean")
    assert not spec.one_holder_per_version(after, stale, after, "lean")
    # a heartbeat from a worker that does not hold the task renewed its lease
    beat = {"op": "task.heartbeat", "args": {"pid": "w1", "tasks": [{"id": "t", "version": 2}]}, "now": 1500,
            "result": {"status": 200}}
    renewed = {**after, "taskTimeouts": [{**t, "timeout": 2500} for t in after["taskTimeouts"]]}
    assert not spec.one_holder_per_version(after, beat, renewed, "lean")
    assert spec.one_holder_per_version(after, {**beat, "args": {**beat["args"], "pid": "w2"}}, renewed, "lean")


def test_a_fulfilled_task_that_returns_is_rejected() -> None:
    target = fresh()
    target.step("promise.create", {"id": "t", "timeoutAt": 100, "param": E, "tags": TARGETED}, 0)
    target.step("promise.settle", {"id": "t", "state": "resolved", "value": E}, 1)
    before, step, after = transition(target, "task.acquire", {"id": "t", "version": 0, "pid": "w", "ttl": 9}, 2)
    assert spec.fulfilled_task_never_returns(before, step, after, "lean")
    assert not spec.fulfilled_task_never_returns(before, step, with_task(after, "t", state="pending"), "lean")


def test_a_lost_or_duplicated_resume_and_a_lost_unblock_are_rejected() -> None:
    target = fresh()
    suspended_on(target)
    before, step, after = transition(target, "promise.settle", {"id": "a", "state": "resolved", "value": E}, 2)
    assert after["tasks"][0]["state"] == "pending"
    assert spec.every_callback_resumed_once(before, step, after, "lean")
    lost = with_task(after, "t", state="suspended", resumes=[])
    assert not spec.every_callback_resumed_once(before, step, lost, "lean")
    duplicated = with_task(after, "t", resumes=["a", "a"])
    assert not spec.every_callback_resumed_once(before, step, duplicated, "lean")
    no_unblock = {**after, "outbox": [e for e in after["outbox"] if e["message"]["kind"] != "unblock"]}
    assert not spec.every_callback_resumed_once(before, step, no_unblock, "lean")


def test_a_timeout_resumes_too() -> None:
    target = fresh()
    suspended_on(target, {"resonate:timer": "true"})
    before, step, after = transition(target, "tick", {}, 50_000)
    assert [t["resumes"] for t in after["tasks"]] == [["a"]]
    assert spec.every_callback_resumed_once(before, step, after, "lean")
    assert not spec.every_callback_resumed_once(before, step, with_task(after, "t", resumes=[]), "lean")


def test_task_timeouts_must_match_the_task_state() -> None:
    target = fresh()
    target.step("promise.create", {"id": "t", "timeoutAt": 100_000, "param": E, "tags": TARGETED}, 0)
    target.step("task.acquire", {"id": "t", "version": 0, "pid": "w1", "ttl": 1000}, 0)
    state = target.observe()
    assert spec.task_timeouts_match_task_state(state)
    not_renewed_on_release = {**state, "tasks": [{**state["tasks"][0], "state": "pending"}]}
    assert not spec.task_timeouts_match_task_state(not_renewed_on_release)
    assert not spec.task_timeouts_match_task_state({**state, "taskTimeouts": []})

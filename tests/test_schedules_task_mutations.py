"""Realistic bugs planted in the implementation's promise and task handlers, each of which
the default schedules campaign must catch with a short, shrunk counterexample.

Each is a subclass of `ScheduleServer` that overrides one handler or helper the way a
plausible slip would (the implementation has no mutation hooks)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from duespec.campaigns.run import run_campaign
from duespec.impl.schedules import ScheduleServer
from duespec.impl.schedules_records import Promise, Task
from duespec.impl.schedules_tasks import LEASE, RETRY
from duespec.systems.schedules import SYSTEM, ImplTarget

#: A counterexample longer than this is not one a person can read at a glance.
SHORT = 15
#: As tests/test_schedules_mutations.py: the default campaign's runs, 25 steps each.
STEPS = 25


class AcquireKeepsVersion(ScheduleServer):
    """Fencing off by one: an acquire hands out the version the previous holder had."""

    def _acquire(self, t: Task, pid: str, ttl: int, now: int) -> Task:
        acquired = super()._acquire(t, pid, ttl, now)
        acquired = replace(acquired, version=t.version)
        self.store.set_task(acquired)
        return acquired


class PreviousVersionAccepted(ScheduleServer):
    """Fencing off by one: the holder of the version just before the current one passes."""

    def _held(self, task_id: str, version: int, needed: str, now: int) -> tuple[Task, Promise] | int:
        t = self.store.get_task(task_id)
        if t is not None and version == t.version - 1:
            version = t.version
        return super()._held(task_id, version, needed, now)


class HeartbeatDoesNotRenew(ScheduleServer):
    """The lease is not renewed: a heartbeat answers 200 and changes nothing."""

    def task_heartbeat(self, req: Any, now: int) -> dict[str, Any]:
        return {"status": 200}


class HeartbeatFromAnyWorker(ScheduleServer):
    """Renews the lease whoever sends the heartbeat."""

    def task_heartbeat(self, req: Any, now: int) -> dict[str, Any]:
        with self.store.transaction():
            pids = {self.store.get_task(task_id).pid for task_id, _ in req.tasks
                    if self.store.get_task(task_id) is not None}
        pid = next(iter(pids - {None}), req.pid) if pids else req.pid
        return super().task_heartbeat(replace(req, pid=pid), now)


class CallbacksLostOnSettle(ScheduleServer):
    """Settles and unblocks, but forgets to resume the awaiters."""

    def _enqueue_resume(self, awaited_id: str, awaiter_id: str, now: int) -> None:
        return None


class ResumeBumpsVersion(ScheduleServer):
    """A resume hands out a fresh version, as if it were an acquire (the Lean keeps it)."""

    def _enqueue_resume(self, awaited_id: str, awaiter_id: str, now: int) -> None:
        before = self.store.get_task(awaiter_id)
        super()._enqueue_resume(awaited_id, awaiter_id, now)
        after = self.store.get_task(awaiter_id)
        if before is not None and before.state == "suspended" and after is not None:
            self.store.set_task(replace(after, version=after.version + 1))


class ResumeDuplicated(ScheduleServer):
    """A busy awaiter's resume is buffered even when it is already there; a suspended one
    keeps what was buffered and adds the new one."""

    def _enqueue_resume(self, awaited_id: str, awaiter_id: str, now: int) -> None:
        t = self.store.get_task(awaiter_id)
        super()._enqueue_resume(awaited_id, awaiter_id, now)
        after = self.store.get_task(awaiter_id)
        if t is not None and after is not None and t.state != "fulfilled":
            self.store.set_task(replace(after, resumes=(*t.resumes, awaited_id, awaited_id)))


class ListenersNotUnblocked(ScheduleServer):
    """Settlement sends no unblock to the listeners."""

    def _settle(self, p: Promise, settled: Promise, now: int) -> Promise:
        return super()._settle(replace(p, listeners=()), settled, now)


class TaskNotFulfilledOnSettle(ScheduleServer):
    """promise.settle leaves the promise's task where it was (still pending, still retried)."""

    def promise_settle(self, req: Any, now: int) -> dict[str, Any]:
        with self.store.transaction():
            t = self.store.get_task(req.id)
            timeouts = self.store.db.execute("SELECT id, kind, timeout FROM task_timeouts WHERE id = ?",
                                             (req.id,)).fetchall()
            answer = self._promise_settle(req, now)
            if t is not None and answer.get("promise", {}).get("settledAt") == now:
                self.store.set_task(t)
                for id, kind, timeout in timeouts:
                    self.store.set_task_timeout(id, kind, timeout)
            return answer


class SuspendKeepsLease(ScheduleServer):
    """A suspended task keeps its lease timeout, which later lapses it back to pending."""

    def task_suspend(self, req: Any, now: int) -> dict[str, Any]:
        with self.store.transaction():
            lease = self.store.db.execute("SELECT timeout FROM task_timeouts WHERE id = ? AND kind = ?",
                                          (req.id, LEASE)).fetchone()
        answer = super().task_suspend(req, now)
        if answer["status"] == 200 and lease is not None:
            with self.store.transaction():
                self.store.set_task_timeout(req.id, LEASE, lease[0])
        return answer


class LapsedHolderKept(ScheduleServer):
    """A lapsed lease makes the task pending but leaves the old holder's pid and ttl on it."""

    def _on_task_timeout(self, task_id: str, kind: int, now: int) -> None:
        t = self.store.get_task(task_id)
        super()._on_task_timeout(task_id, kind, now)
        after = self.store.get_task(task_id)
        if kind == LEASE and t is not None and t.state == "acquired" and after is not None:
            self.store.set_task(replace(after, pid=t.pid, ttl=t.ttl))


class HaltFulfilled(ScheduleServer):
    """Halts a fulfilled task (it should be 409): the done task comes back to life later."""

    def task_halt(self, task_id: str, now: int) -> dict[str, Any]:
        with self.store.transaction():
            t = self.store.get_task(task_id)
            if t is not None and t.state == "fulfilled":
                self.store.set_task(replace(t, state="halted"))
                return {"status": 200}
        return super().task_halt(task_id, now)


class ContinueWithoutRetry(ScheduleServer):
    """Continue makes the task pending and dispatches it, but arms no retry."""

    def task_continue(self, task_id: str, now: int) -> dict[str, Any]:
        answer = super().task_continue(task_id, now)
        if answer["status"] == 200:
            with self.store.transaction():
                self.store.db.execute("DELETE FROM task_timeouts WHERE id = ? AND kind = ?", (task_id, RETRY))
        return answer


class CallbackFromUntargetedAwaiter(ScheduleServer):
    """Registers a callback for an awaiter with no target (422 in the spec)."""

    def promise_register_callback(self, awaited_id: str, awaiter_id: str, now: int) -> dict[str, Any]:
        with self.store.transaction():
            awaited = self.store.get_promise(awaited_id)
            awaiter = self.store.get_promise(awaiter_id)
            if awaited is not None and awaiter is not None and "resonate:target" not in awaiter.tags:
                return {"status": 200, "promise": awaited.seen_at(now).record()}
        return super().promise_register_callback(awaited_id, awaiter_id, now)


class TaskGetNotProjected(ScheduleServer):
    """task.get answers the stored task even when its promise is past its timeout."""

    def task_get(self, task_id: str, now: int) -> dict[str, Any]:
        with self.store.transaction():
            t = self.store.get_task(task_id)
            p = None if t is None else self.store.get_promise(t.id)
        if t is None or p is None:
            return {"status": 404}
        return {"status": 200, "task": t.record()}


class TaskTimeoutsBeforePromiseTimeouts(ScheduleServer):
    """tick fires due task timeouts first: a task whose promise is due is re-dispatched."""

    def tick(self, now: int) -> dict[str, Any]:
        fired = []
        with self.store.transaction():
            for task_id, kind in self.store.due_task_timeouts(now):
                self._on_task_timeout(task_id, kind, now)
                fired.append({"kind": "retry" if kind == RETRY else "lease", "id": task_id})
        rest = super().tick(now)
        return {"status": 200, "fired": fired + rest["fired"]}


#: Each is found within a few runs; what costs is Hypothesis shrinking the failing run.
#: These shrink in a few seconds and run in `make test`.
MUTANTS: list[type[ScheduleServer]] = [LapsedHolderKept, TaskTimeoutsBeforePromiseTimeouts]
#: These take 7-110 s each to shrink, more than `make test` affords: `make test-long` runs them.
LONG_MUTANTS: list[type[ScheduleServer]] = [
    AcquireKeepsVersion, PreviousVersionAccepted, CallbacksLostOnSettle, ResumeDuplicated,
    ListenersNotUnblocked, SuspendKeepsLease, HeartbeatDoesNotRenew, HeartbeatFromAnyWorker, ResumeBumpsVersion, TaskNotFulfilledOnSettle,
    HaltFulfilled, ContinueWithoutRetry, CallbackFromUntargetedAwaiter, TaskGetNotProjected,
]
#: Deselected by `make test` (-m "not long"), run by `make test-long`.
LONG = pytest.mark.long


@pytest.mark.parametrize("mutant", [*MUTANTS, *(pytest.param(m, marks=LONG) for m in LONG_MUTANTS)],
                         ids=[m.__name__ for m in (*MUTANTS, *LONG_MUTANTS)])
def test_the_campaign_catches_and_shrinks(mutant: type[ScheduleServer]) -> None:
    result = run_campaign(SYSTEM, lambda: ImplTarget(mutant), profile="lean", step_count=STEPS)
    assert not result.ok, f"{mutant.__name__} survived {result.examples} runs"
    print(f"\n{mutant.__name__}: caught, {len(result.counterexample)} steps")
    for step in result.counterexample:
        print(f"  {step['op']} {json.dumps(step['args'])} now={step['now']}")
    print("  " + result.failure.splitlines()[0])
    assert result.failure.startswith(("Divergence", "AssertionError")), result.failure
    assert 0 < len(result.counterexample) <= SHORT, (
        f"{mutant.__name__}: counterexample of {len(result.counterexample)} steps\n{result.failure}")

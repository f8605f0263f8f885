"""The promise and task handlers of the Resonate server (Lean P-03..P-06, T-01..T-11 and the
two task timeouts), each one transaction on the SQLite store.

A task is the unit of work behind a targeted promise: `pending` until a worker acquires
it (the version goes up by one, so whoever held the previous version is fenced out),
`acquired` while that worker heartbeats, `suspended` while it waits on other promises,
`halted` by an operator, `fulfilled` once its promise is settled. Every handler that acts
for a worker names the version it holds and is refused (409) when it is not the current
one, when the task is not in the state the handler needs, or when the task's promise is
already settled or past its timeout.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Callable

from duespec.impl.schedules_records import (
    EMPTY_VALUE, TARGET_TAG, Json, Promise, PromiseCreate, PromiseSettle, Task, TaskAcquire, TaskCreate,
    TaskFence, TaskFulfill, TaskHeartbeat, TaskSuspend, execute_message, timed_out_state, unblock_message,
)

if TYPE_CHECKING:
    from duespec.impl.schedules_sql import Store

RETRY, LEASE = 0, 1


class PromiseAndTaskHandlers:
    """Mixed into ScheduleServer, which supplies the store, the retry timeout and P-02."""

    store: Store
    retry_timeout: int
    _promise_create: Callable[[PromiseCreate, int], Promise]

    # ---- settlement, shared by promise.settle, task.fulfill and the promise timeout ------

    def _settle(self, p: Promise, settled: Promise, now: int) -> Promise:
        """Store `settled`, fulfil the promise's task, and release everyone waiting on it."""
        store = self.store
        settled = replace(settled, callbacks=(), listeners=())
        store.set_promise(settled)
        store.del_promise_timeout(settled.id)
        t = store.get_task(settled.id)
        if t is not None:
            store.set_task(replace(t, state="fulfilled", pid=None, ttl=None, resumes=()))
            store.del_task_timeout(t.id)
        # Settlement scrub: nobody can be resumed by this promise any more.
        for awaiter in store.pending_awaiters_of(settled.id):
            remaining = tuple(c for c in awaiter.callbacks if c != settled.id)
            store.set_promise(replace(awaiter, callbacks=remaining))
        for address in p.listeners:
            store.set_message(address, unblock_message(settled.record()))
        for awaiter_id in p.callbacks:
            self._enqueue_resume(settled.id, awaiter_id, now)
        return settled

    def _enqueue_resume(self, awaited_id: str, awaiter_id: str, now: int) -> None:
        """00-resume: wake a suspended awaiter, or remember the resume for a busy one."""
        store = self.store
        t = store.get_task(awaiter_id)
        if t is None or t.state == "fulfilled":
            return
        if t.state == "suspended":
            t = replace(t, state="pending", resumes=(awaited_id,))
            store.set_task(t)
            store.set_task_timeout(t.id, RETRY, now + self.retry_timeout)
            awaiter = store.get_promise(awaiter_id)
            target = "" if awaiter is None else awaiter.tags.get(TARGET_TAG, "")
            if target != "":
                store.set_message(target, execute_message(t.id, t.version))
        elif awaited_id not in t.resumes:
            store.set_task(replace(t, resumes=(*t.resumes, awaited_id)))

    # ---- P-03..P-06 -----------------------------------------------------------------------

    def promise_settle(self, req: PromiseSettle, now: int) -> dict[str, Json]:
        """P-03: only a pending promise before its timeout settles; others answer as they read."""
        with self.store.transaction():
            return self._promise_settle(req, now)

    def _promise_settle(self, req: PromiseSettle, now: int) -> dict[str, Json]:
        p = self.store.get_promise(req.id)
        if p is None:
            return {"status": 404}
        if p.state != "pending" or p.timeout_at <= now:
            return {"status": 200, "promise": p.seen_at(now).record()}
        settled = self._settle(p, replace(p, state=req.state, value=req.value, settled_at=now), now)
        return {"status": 200, "promise": settled.record()}

    def promise_register_callback(self, awaited_id: str, awaiter_id: str, now: int) -> dict[str, Json]:
        """P-04: the awaiter must be a targeted promise; the callback is kept only while both
        promises are live."""
        with self.store.transaction():
            awaited = self.store.get_promise(awaited_id)
            if awaited is None:
                return {"status": 404}
            awaiter = self.store.get_promise(awaiter_id)
            if awaiter is None or TARGET_TAG not in awaiter.tags:
                return {"status": 422}
            live = awaited.state == "pending" and awaited.timeout_at > now
            if live and awaiter.state == "pending" and awaiter.timeout_at > now \
                    and awaiter_id not in awaited.callbacks:
                self.store.set_promise(replace(awaited, callbacks=(*awaited.callbacks, awaiter_id)))
            return {"status": 200, "promise": awaited.seen_at(now).record()}

    def promise_register_listener(self, awaited_id: str, address: str, now: int) -> dict[str, Json]:
        """P-05: an address told when the awaited promise settles."""
        with self.store.transaction():
            awaited = self.store.get_promise(awaited_id)
            if awaited is None:
                return {"status": 404}
            if awaited.state == "pending" and awaited.timeout_at > now and address not in awaited.listeners:
                awaited = replace(awaited, listeners=(*awaited.listeners, address))
                self.store.set_promise(awaited)
            return {"status": 200, "promise": awaited.seen_at(now).record()}

    def promise_search(self, now: int) -> dict[str, Json]:
        """P-06: not implemented in the spec, so not here either."""
        return {"status": 501}

    # ---- T-01, T-02 -----------------------------------------------------------------------

    def task_get(self, task_id: str, now: int) -> dict[str, Json]:
        """T-01: a task whose promise is done reads as fulfilled."""
        with self.store.transaction():
            t = self.store.get_task(task_id)
            p = None if t is None else self.store.get_promise(t.id)
        if t is None or p is None:
            return {"status": 404}
        if not (p.state == "pending" and p.timeout_at > now):
            t = replace(t, state="fulfilled", pid=None, ttl=None, resumes=())
        return {"status": 200, "task": t.record()}

    def task_create(self, req: TaskCreate, now: int) -> dict[str, Json]:
        """T-02: a new promise with its task already acquired (version 1), or the acquire of
        an existing targeted promise's pending task."""
        with self.store.transaction():
            return self._task_create(req, now)

    def _task_create(self, req: TaskCreate, now: int) -> dict[str, Json]:
        store, a = self.store, req.promise
        p = store.get_promise(a.id)
        if p is None:
            if a.timeout_at > now:
                p = Promise(id=a.id, state="pending", param=a.param, value=EMPTY_VALUE, tags=a.tags,
                            timeout_at=a.timeout_at, created_at=now, settled_at=None)
                store.set_promise(p)
                store.set_promise_timeout(p.id, p.timeout_at)
                t = Task(id=p.id, state="acquired", version=1, ttl=req.ttl, pid=req.pid)
                store.set_task(t)
                store.set_task_timeout(t.id, LEASE, now + req.ttl)
            else:
                p = Promise(id=a.id, state=timed_out_state(a.tags), param=a.param, value=EMPTY_VALUE,
                            tags=a.tags, timeout_at=a.timeout_at, created_at=a.timeout_at,
                            settled_at=a.timeout_at)
                store.set_promise(p)
                t = Task(id=p.id, state="fulfilled", version=0)
                store.set_task(t)
            return {"status": 200, "task": t.record(), "promise": p.record()}
        if TARGET_TAG not in p.tags:
            return {"status": 422}
        t = store.get_task(p.id)
        if t is None or t.state not in ("fulfilled", "pending"):
            return {"status": 409}
        if t.state == "pending":
            t = self._acquire(t, req.pid, req.ttl, now)
        return {"status": 200, "task": t.record(), "promise": p.record()}

    def _acquire(self, t: Task, pid: str, ttl: int, now: int) -> Task:
        """The next version to `pid`, leased until now + ttl."""
        t = replace(t, state="acquired", version=t.version + 1, ttl=ttl, pid=pid, resumes=())
        self.store.set_task(t)
        self.store.del_task_timeout(t.id)
        self.store.set_task_timeout(t.id, LEASE, now + ttl)
        return t

    # ---- T-03..T-08: the fenced handlers --------------------------------------------------

    def _held(self, task_id: str, version: int, needed: str, now: int) -> tuple[Task, Promise] | int:
        """The task and its live promise if the caller may act on it, else the status."""
        t = self.store.get_task(task_id)
        if t is None:
            return 404
        p = self.store.get_promise(t.id)
        if p is None or t.state != needed or p.state != "pending" or p.timeout_at <= now \
                or t.version != version:
            return 409
        return t, p

    def task_acquire(self, req: TaskAcquire, now: int) -> dict[str, Json]:
        """T-03: a pending task at the version the caller saw."""
        with self.store.transaction():
            held = self._held(req.id, req.version, "pending", now)
            if isinstance(held, int):
                return {"status": held}
            t, p = held
            t = self._acquire(t, req.pid, req.ttl, now)
        return {"status": 200, "task": t.record(), "promise": p.record()}

    def task_fence(self, req: TaskFence, now: int) -> dict[str, Json]:
        """T-04: a promise.create or promise.settle, only for the current holder."""
        with self.store.transaction():
            held = self._held(req.id, req.version, "acquired", now)
            if isinstance(held, int):
                return {"status": held}
            if isinstance(req.action, PromiseCreate):
                created = self._promise_create(req.action, now)
                inner = {"kind": "create", "status": 200, "promise": created.record()}
            else:
                inner = {"kind": "settle", **self._promise_settle(req.action, now)}
        return {"status": 200, "action": inner}

    def task_heartbeat(self, req: TaskHeartbeat, now: int) -> dict[str, Json]:
        """T-05: renew the lease of each listed task still held by `pid` at that version."""
        with self.store.transaction():
            for task_id, version in req.tasks:
                t = self.store.get_task(task_id)
                if t is None or t.state != "acquired" or t.version != version or t.pid != req.pid:
                    continue
                p = self.store.get_promise(t.id)
                if p is not None and p.state == "pending" and p.timeout_at > now:
                    self.store.del_task_timeout(t.id)
                    self.store.set_task_timeout(t.id, LEASE, now + (t.ttl or 0))
        return {"status": 200}

    def task_suspend(self, req: TaskSuspend, now: int) -> dict[str, Json]:
        """T-06: wait on the awaited promises; 300 when one is already done, 422 when absent."""
        store = self.store
        with store.transaction():
            held = self._held(req.id, req.version, "acquired", now)
            if isinstance(held, int):
                return {"status": held}
            t, _ = held
            awaited = []
            for awaited_id in req.awaited:
                pa = store.get_promise(awaited_id)
                if pa is None:
                    return {"status": 422}
                awaited.append(pa)
            if any(pa.state != "pending" or pa.timeout_at <= now for pa in awaited):
                store.set_task(replace(t, resumes=()))
                return {"status": 300}
            for awaited_id in req.awaited:
                pa = store.get_promise(awaited_id)
                if pa is not None and req.id not in pa.callbacks:
                    store.set_promise(replace(pa, callbacks=(*pa.callbacks, req.id)))
            store.set_task(replace(t, state="suspended", pid=None, ttl=None, resumes=()))
            store.del_task_timeout(t.id)
        return {"status": 200}

    def task_fulfill(self, req: TaskFulfill, now: int) -> dict[str, Json]:
        """T-07: settle the task's own promise (the action's id is not read, as in the Lean)."""
        with self.store.transaction():
            held = self._held(req.id, req.version, "acquired", now)
            if isinstance(held, int):
                return {"status": held}
            _, p = held
            settled = self._settle(p, replace(p, state=req.settle.state, value=req.settle.value,
                                              settled_at=now), now)
        return {"status": 200, "promise": settled.record()}

    def task_release(self, task_id: str, version: int, now: int) -> dict[str, Json]:
        """T-08: the holder gives the task back; pending again and dispatched."""
        with self.store.transaction():
            held = self._held(task_id, version, "acquired", now)
            if isinstance(held, int):
                return {"status": held}
            t, p = held
            self._make_pending(replace(t, pid=None, ttl=None), p, now)
        return {"status": 200}

    def _make_pending(self, t: Task, p: Promise | None, now: int) -> None:
        """The task pending, its retry armed and (if its promise exists) an execute sent."""
        store = self.store
        store.set_task(replace(t, state="pending"))
        store.del_task_timeout(t.id)
        store.set_task_timeout(t.id, RETRY, now + self.retry_timeout)
        if p is not None:
            store.set_message(p.tags.get(TARGET_TAG, ""), execute_message(t.id, t.version))

    # ---- T-09..T-11 -----------------------------------------------------------------------

    def task_halt(self, task_id: str, now: int) -> dict[str, Json]:
        """T-09: stop a task that is not done (it keeps its buffered resumes)."""
        with self.store.transaction():
            t = self.store.get_task(task_id)
            if t is None:
                return {"status": 404}
            if t.state == "fulfilled":
                return {"status": 409}
            if t.state != "halted":
                self.store.set_task(replace(t, state="halted", pid=None, ttl=None))
                self.store.del_task_timeout(t.id)
        return {"status": 200}

    def task_continue(self, task_id: str, now: int) -> dict[str, Json]:
        """T-10: a halted task is pending and dispatched again."""
        with self.store.transaction():
            t = self.store.get_task(task_id)
            if t is None:
                return {"status": 404}
            if t.state != "halted":
                return {"status": 409}
            p = self.store.get_promise(t.id)
            if p is None:
                return {"status": 404}
            self._make_pending(t, p, now)
        return {"status": 200}

    def task_search(self, now: int) -> dict[str, Json]:
        """T-11: not implemented in the spec."""
        return {"status": 501}

    # ---- task timeouts (fired by tick) ----------------------------------------------------

    def _on_task_timeout(self, task_id: str, kind: int, now: int) -> None:
        """A retry re-dispatches a task still pending; a lapsed lease takes an acquired task
        from its holder (same version: the next acquire bumps it)."""
        t = self.store.get_task(task_id)
        if t is None or t.state != ("pending" if kind == RETRY else "acquired"):
            return
        self._make_pending(replace(t, pid=None, ttl=None) if kind == LEASE else t,
                           self.store.get_promise(t.id), now)


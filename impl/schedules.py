"""Resonate schedules, production: the Lean handlers at 83d64c3 on a SQLite store.

Each public method is one handler and one transaction: it either happens entirely or
leaves the store as it found it, so a crash can never persist half a catch-up. Time
comes only from the `now` argument. `handle(op, args, now)` is the JSON face of
docs/operations.md (validation included); the typed methods behind it take requests
that have already passed those checks.

Profiles differ only in the `now` catch-up hands to promise.create: `lean` passes the
occurrence's own cronTime, as the Lean does; `server` passes the real firing time, as
the seed text and the deployed server do, so an occurrence already past its timeout is
created settled and dispatches nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import chain, islice
from typing import Callable, Iterable, Iterator, Literal

from duespec.impl.cron import Cron, compile_cron
from duespec.impl.schedules_records import (
    DELAY_TAG, EMPTY_VALUE, MAX_TIME, TARGET_TAG, InvalidRequest, Json, Promise, PromiseCreate,
    Schedule, ScheduleCreate, Tags, Value, check_args, check_time, check_unicode, execute_message,
    expand, is_external, is_timer, next_run, parse_id, parse_promise_create,
    parse_schedule_create, timed_out_state, unblock_message,
)
from duespec.impl.schedules_sql import PromiseRow, Store, TaskRow, dumps

Profile = Literal["lean", "server"]
PROFILES: tuple[Profile, ...] = ("lean", "server")
DEFAULT_RETRY_TIMEOUT = 5000
#: Occurrences handled per round of set-wise inserts during a catch-up.
CATCH_UP_CHUNK = 4096

OK: dict[str, Json] = {"status": 200}
NOT_FOUND: dict[str, Json] = {"status": 404}


@lru_cache(maxsize=1024)
def cron_of(expr: str) -> Cron:
    """Parsed cron per expression; stored expressions were validated at schedule.create."""
    return compile_cron(expr)


def chunks(items: Iterable[int], size: int) -> Iterator[list[int]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


@dataclass
class Writes:
    """Rows that creating promises produces, gathered to be written set-wise."""

    promises: list[PromiseRow] = field(default_factory=list)
    promise_timeouts: list[tuple[str, int]] = field(default_factory=list)
    tasks: list[TaskRow] = field(default_factory=list)
    task_timeouts: list[tuple[str, int, int]] = field(default_factory=list)
    messages: list[tuple[str, str, str]] = field(default_factory=list)

    def apply(self, store: Store) -> None:
        store.insert_promises(self.promises)
        store.set_promise_timeouts(self.promise_timeouts)
        store.set_tasks(self.tasks)
        store.set_task_timeouts(self.task_timeouts)
        store.set_messages(self.messages)


class PromiseBlueprint:
    """P-02 promise.create for an absent id, for every promise sharing one param and tags.

    A schedule creates all its promises from one blueprint, so the tag lookups and JSON
    encoding happen once per catch-up rather than once per occurrence."""

    def __init__(self, param: Value, tags: Tags, retry_timeout: int) -> None:
        self.param = dumps(param.to_json())
        self.value = dumps(EMPTY_VALUE.to_json())
        self.tags = dumps(tags)
        self.timer = int(is_timer(tags))
        self.external = is_external(tags)
        self.target = tags.get(TARGET_TAG)
        delay = tags.get(DELAY_TAG)
        self.delay = None if delay is None else int(delay)
        self.retry_timeout = retry_timeout
        self.timed_out_state = timed_out_state(tags)

    def create(self, writes: Writes, promise_id: str, timeout_at: int, now: int) -> None:
        if timeout_at > now:
            writes.promises.append((promise_id, "pending", self.param, self.value, self.tags,
                                    timeout_at, now, None, "[]", "[]", self.timer))
            if self.external:
                writes.promise_timeouts.append((promise_id, timeout_at))
            if self.target is not None:
                writes.tasks.append((promise_id, "pending", 0, "[]", None, None))
                if self.delay is not None and self.delay > now:
                    writes.task_timeouts.append((promise_id, 0, self.delay))
                else:
                    writes.task_timeouts.append((promise_id, 0, now + self.retry_timeout))
                    writes.messages.append((promise_id, self.target, dumps(execute_message(promise_id, 0))))
        else:
            # Already past its timeout: born settled, at the instant it timed out.
            writes.promises.append((promise_id, self.timed_out_state, self.param, self.value, self.tags,
                                    timeout_at, timeout_at, timeout_at, "[]", "[]", self.timer))
            if self.target is not None:
                writes.tasks.append((promise_id, "fulfilled", 0, "[]", None, None))


class ScheduleServer:
    """One Resonate server (schedules and the promise, task and outbox parts they use)."""

    def __init__(self, path: str = ":memory:", *, profile: Profile | None = None,
                 retry_timeout: int | None = None) -> None:
        """Open (or create) the store at `path`; a file keeps the config it was created with."""
        if profile is not None and profile not in PROFILES:
            raise ValueError(f"profile must be one of {', '.join(PROFILES)}, got {profile!r}")
        if retry_timeout is not None and (type(retry_timeout) is not int or not 0 <= retry_timeout <= MAX_TIME):
            raise ValueError(f"retry_timeout must be an integer in [0, {MAX_TIME}], got {retry_timeout!r}")
        self.store = Store(path)
        try:
            with self.store.transaction():
                self.profile: Profile = self._config("profile", profile, "lean")  # type: ignore[assignment]
                self.retry_timeout = int(self._config("retry_timeout", retry_timeout, DEFAULT_RETRY_TIMEOUT))
        except BaseException:
            self.store.close()
            raise

    def _config(self, key: str, wanted: object, default: object) -> str:
        stored = self.store.get_config(key)
        if stored is None:
            stored = str(default if wanted is None else wanted)
            self.store.set_config(key, stored)
        elif wanted is not None and str(wanted) != stored:
            raise ValueError(f"store {self.store.path!r} was created with {key}={stored}, not {wanted}")
        return stored

    def close(self) -> None:
        self.store.close()

    # ---- the JSON face of docs/operations.md -------------------------------------------

    def handle(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        """One operation as JSON in, JSON out; an invalid request is a 400 that changes nothing."""
        try:
            check_time(now, "now")
            route = ROUTES.get(op) if isinstance(op, str) else None
            if route is None:
                raise InvalidRequest(f"unknown op {op!r}; known: {', '.join(ROUTES)}")
            check_unicode(args)
            return route(self, args, now)
        except InvalidRequest as problem:
            return {"status": 400, "message": str(problem)}

    def observe(self) -> dict[str, Json]:
        """The canonical observable state of operations.md."""
        with self.store.transaction():
            return self.store.snapshot()

    # ---- S-01..S-04 --------------------------------------------------------------------

    def schedule_get(self, schedule_id: str, now: int) -> dict[str, Json]:
        """S-01."""
        with self.store.transaction():
            s = self.store.get_schedule(schedule_id)
        return NOT_FOUND if s is None else {"status": 200, "schedule": s.to_json()}

    def schedule_create(self, req: ScheduleCreate, now: int) -> dict[str, Json]:
        """S-02: an existing id answers the stored schedule and ignores the request body."""
        with self.store.transaction():
            s = self.store.get_schedule(req.id)
            if s is None:
                s = Schedule(id=req.id, cron=req.cron, promise_id=req.promise_id,
                             promise_timeout=req.promise_timeout, promise_param=req.promise_param,
                             promise_tags=req.promise_tags, next_run_at=next_run(req.compiled, now),
                             last_run_at=None, created_at=now)
                self.store.set_schedule(s)
                self.store.set_schedule_timeout(s.id, s.next_run_at)
        return {"status": 200, "schedule": s.to_json()}

    def schedule_delete(self, schedule_id: str, now: int) -> dict[str, Json]:
        """S-03: the record and its timeout go together, so no timeout outlives its schedule."""
        with self.store.transaction():
            if self.store.get_schedule(schedule_id) is None:
                return NOT_FOUND
            self.store.del_schedule(schedule_id)
            self.store.del_schedule_timeout(schedule_id)
        return OK

    def schedule_search(self, now: int) -> dict[str, Json]:
        """S-04: not implemented in the spec, so not here either."""
        return {"status": 501}

    # ---- P-01, P-02 --------------------------------------------------------------------

    def promise_get(self, promise_id: str, now: int) -> dict[str, Json]:
        """P-01, projected: a pending promise past its timeout reads as timed out."""
        with self.store.transaction():
            p = self.store.get_promise(promise_id)
        return NOT_FOUND if p is None else {"status": 200, "promise": p.seen_at(now).record()}

    def promise_create(self, req: PromiseCreate, now: int) -> dict[str, Json]:
        """P-02: create-if-absent; an existing id answers its (projected) record."""
        with self.store.transaction():
            p = self._promise_create(req, now)
        return {"status": 200, "promise": p.record()}

    def _promise_create(self, req: PromiseCreate, now: int) -> Promise:
        existing = self.store.get_promise(req.id)
        if existing is not None:
            return existing.seen_at(now)
        writes = Writes()
        PromiseBlueprint(req.param, req.tags, self.retry_timeout).create(writes, req.id, req.timeout_at, now)
        writes.apply(self.store)
        created = self.store.get_promise(req.id)
        assert created is not None
        return created

    # ---- 02-timeouts -------------------------------------------------------------------

    def on_schedule_timeout(self, schedule_id: str, now: int) -> dict[str, Json]:
        """Fire every occurrence missed up to `now`, in order, then re-arm at the next one."""
        with self.store.transaction():
            self._on_schedule_timeout(schedule_id, now)
        return OK

    def _on_schedule_timeout(self, schedule_id: str, now: int) -> None:
        s = self.store.get_schedule(schedule_id)
        if s is None:
            return
        s = self._catch_up(s, now)
        self.store.set_schedule(s)
        self.store.del_schedule_timeout(s.id)
        self.store.set_schedule_timeout(s.id, s.next_run_at)

    def _catch_up(self, s: Schedule, now: int) -> Schedule:
        """The Lean's catchUp loop, one promise.create per occurrence, written set-wise.

        Occurrences are handled in chronological order in chunks; within a chunk an id
        already present (in the store or earlier in the catch-up) is the idempotent
        branch of promise.create and writes nothing, exactly as the sequential loop."""
        if s.next_run_at > now:
            return s
        cron = cron_of(s.cron)
        blueprint = PromiseBlueprint(s.promise_param, s.promise_tags, self.retry_timeout)
        anchored_at_tick = self.profile == "lean"
        last = s.next_run_at
        for chunk in chunks(chain((s.next_run_at,), cron.occurrences(s.next_run_at, now)), CATCH_UP_CHUNK):
            ids = [expand(s.promise_id, s.id, cron_time) for cron_time in chunk]
            seen = self.store.present_promise_ids(ids)
            writes = Writes()
            for cron_time, promise_id in zip(chunk, ids):
                if promise_id in seen:
                    continue
                seen.add(promise_id)
                blueprint.create(writes, promise_id, cron_time + s.promise_timeout,
                                 cron_time if anchored_at_tick else now)
            writes.apply(self.store)
            last = chunk[-1]
        return replace(s, last_run_at=last, next_run_at=next_run(cron, last))

    def on_promise_timeout(self, promise_id: str, now: int) -> dict[str, Json]:
        """Settle a pending promise at its timeout and release everything waiting on it."""
        with self.store.transaction():
            self._on_promise_timeout(promise_id, now)
        return OK

    def _on_promise_timeout(self, promise_id: str, now: int) -> None:
        store = self.store
        p = store.get_promise(promise_id)
        if p is None or p.state != "pending":
            return
        settled = replace(p.timed_out(), callbacks=(), listeners=())
        store.set_promise(settled)
        store.del_promise_timeout(settled.id)
        t = store.get_task(settled.id)
        if t is not None:
            store.set_task(replace(t, state="fulfilled", pid=None, ttl=None, resumes=()))
            store.del_task_timeout(t.id)
        # Settlement scrub: nobody can be resumed by this promise any more.
        for awaiter in store.pending_awaiters_of(settled.id):
            store.set_promise(replace(awaiter, callbacks=tuple(c for c in awaiter.callbacks if c != settled.id)))
        for address in p.listeners:
            store.set_message(address, unblock_message(settled.record()))
        for awaiter_id in p.callbacks:
            self._enqueue_resume(settled.id, awaiter_id, now)

    def _enqueue_resume(self, awaited_id: str, awaiter_id: str, now: int) -> None:
        """00-resume: wake a suspended awaiter, or remember the resume for a busy one."""
        store = self.store
        t = store.get_task(awaiter_id)
        if t is None or t.state == "fulfilled":
            return
        if t.state == "suspended":
            t = replace(t, state="pending", resumes=(awaited_id,))
            store.set_task(t)
            store.set_task_timeout(t.id, 0, now + self.retry_timeout)
            awaiter = store.get_promise(awaiter_id)
            target = "" if awaiter is None else awaiter.tags.get(TARGET_TAG, "")
            if target != "":
                store.set_message(target, execute_message(t.id, t.version))
        elif awaited_id not in t.resumes:
            store.set_task(replace(t, resumes=(*t.resumes, awaited_id)))

    def tick(self, now: int) -> dict[str, Json]:
        """Fire every due promise and schedule timeout, smallest (timeout, kind, id) first.

        Firing a promise timeout never arms another promise or schedule timeout, so all
        the promise timeouts that precede the next due schedule timeout fire as one run
        (set-wise when no registrations make their order observable); then that schedule
        fires, which may arm new due promise timeouts, and the search starts again."""
        fired: list[dict[str, str]] = []
        with self.store.transaction():
            while True:
                schedule_due = self.store.first_due_schedule_timeout(now)
                bound = now if schedule_due is None else schedule_due[0]
                promise_ids = self.store.due_promise_timeouts(bound)
                if promise_ids:
                    if self.store.any_registrations():
                        for promise_id in promise_ids:
                            self._on_promise_timeout(promise_id, now)
                    else:
                        self.store.settle_timed_out(bound)
                    fired.extend({"kind": "promise", "id": promise_id} for promise_id in promise_ids)
                if schedule_due is None:
                    break
                self._on_schedule_timeout(schedule_due[1], now)
                fired.append({"kind": "schedule", "id": schedule_due[1]})
        return {"status": 200, "fired": fired}


# ---- routes: operations.md op -> arguments checked -> typed handler --------------------

Route = Callable[[ScheduleServer, dict[str, Json], int], dict[str, Json]]


def _search(server: ScheduleServer, args: dict[str, Json], now: int) -> dict[str, Json]:
    return server.schedule_search(now)


def _tick(server: ScheduleServer, args: dict[str, Json], now: int) -> dict[str, Json]:
    check_args(args, ())
    return server.tick(now)


ROUTES: dict[str, Route] = {
    "schedule.create": lambda server, args, now: server.schedule_create(parse_schedule_create(args, now), now),
    "schedule.get": lambda server, args, now: server.schedule_get(parse_id(args), now),
    "schedule.delete": lambda server, args, now: server.schedule_delete(parse_id(args), now),
    "schedule.search": _search,
    "promise.create": lambda server, args, now: server.promise_create(parse_promise_create(args), now),
    "promise.get": lambda server, args, now: server.promise_get(parse_id(args), now),
    "schedule.timeout": lambda server, args, now: server.on_schedule_timeout(parse_id(args), now),
    "promise.timeout": lambda server, args, now: server.on_promise_timeout(parse_id(args), now),
    "tick": _tick,
}

"""Resonate schedules, production: the Lean handlers at 83d64c3 on a SQLite store.

Each public method is one handler and one transaction: it either happens entirely or
leaves the store as it found it, so a crash can never persist half a catch-up. Time
comes only from the `now` argument. `handle(op, args, now)` is the JSON face of
docs/operations.md (validation included); the typed methods behind it take requests
that have already passed those checks.

Profiles differ only in the `now` catch-up hands to promise.create: `lean` passes the
occurrence's own cronTime, as the Lean does; `server` passes the real firing time, as
the seed text and the deployed server do, so an occurrence already past its timeout is
created settled and dispatches nothing. `deployed` follows the deployed Rust server
(spec/schedules.md DEP-01..DEP-04): schedules need a `resonate:target`, a pass fires one
occurrence per schedule, and search answers.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import chain, islice
from typing import Callable, Iterable, Iterator, Literal

from duespec.impl.cron import compile_cron
from duespec.impl.schedules_records import (
    EMPTY_VALUE, ID_PLACEHOLDER, LINEAGE_TAGS, MAX_DURATION, MAX_TIME, SCHEDULE_TAG, TARGET_TAG, InvalidRequest, Json, Promise,
    PromiseCreate, Schedule, ScheduleCreate, SearchRequest, Task, check_args, check_time,
    check_unicode, execute_message, expand, next_run, parse_id, parse_promise_create,
    parse_promise_settle, parse_register_callback, parse_register_listener, parse_schedule_create,
    parse_search, parse_task_acquire, parse_task_create, parse_task_fence, parse_task_fulfill,
    parse_task_heartbeat, parse_task_suspend, parse_task_version,
)
from duespec.impl.schedules_sql import PromiseShape, Store
from duespec.impl.schedules_tasks import LEASE, RETRY, PromiseAndTaskHandlers

Profile = Literal["lean", "server", "deployed"]
PROFILES: tuple[Profile, ...] = ("lean", "server", "deployed")
#: How a timer pass catches up a schedule owing several occurrences (spec/schedules.md
#: "Catch-up policies"); `all` is the Lean's. Profiles lean and server only: deployed's is DEP-02.
CatchUp = Literal["all", "one-per-pass", "once-skip", "never"]
CATCH_UP_POLICIES: tuple[CatchUp, ...] = ("all", "one-per-pass", "once-skip", "never")
DEFAULT_RETRY_TIMEOUT = 5000
#: Occurrences handled per round of set-wise inserts during a catch-up.
CATCH_UP_CHUNK = 16384
#: Most occurrences one catch-up fires (two years of minutely ticks); more would hold the
#: store's write lock for minutes and is refused with CatchUpTooLong, changing nothing.
MAX_CATCH_UP_OCCURRENCES = 1_000_000


def check_config(profile: object, retry_timeout: object, catch_up: object = None) -> None:
    """A server's config (None: the default or the stored one), or ValueError naming the field."""
    if profile is not None and profile not in PROFILES:
        raise ValueError(f"profile must be one of {', '.join(PROFILES)}, got {profile!r}")
    if catch_up is not None and catch_up not in CATCH_UP_POLICIES:
        raise ValueError(f"catch_up must be one of {', '.join(CATCH_UP_POLICIES)}, got {catch_up!r}")
    if profile == "deployed" and catch_up not in (None, "all"):
        raise ValueError("catch_up applies to profiles lean and server: profile deployed fires one "
                         "occurrence per pass, as the deployed server does (DEP-02)")
    if retry_timeout is not None and (type(retry_timeout) is not int
                                      or not 1 <= retry_timeout <= MAX_DURATION):
        raise ValueError(f"retry_timeout must be an integer in [1, {MAX_DURATION}] (0 would re-arm "
                         f"a retry due at once, forever), got {retry_timeout!r}")


class CatchUpTooLong(RuntimeError):
    """A catch-up past MAX_CATCH_UP_OCCURRENCES: refused, the transaction rolled back."""


def occurrences_due(cron: str, next_run_at: int, now: int, limit: int) -> int:
    """How many occurrences a catch-up of a schedule due at `next_run_at` fires at `now`,
    counted only up to `limit` + 1, so an outage of centuries costs no more than the limit.
    A cron fires at most once a minute, which callers use to skip counting short outages."""
    if next_run_at > now:
        return 0
    later = compile_cron(cron).occurrences(next_run_at, now)
    return sum(1 for _ in islice(chain((next_run_at,), later), limit + 1))


def chunks(items: Iterable[int], size: int) -> Iterator[list[int]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


class ScheduleServer(PromiseAndTaskHandlers):
    """One Resonate server: schedules, promises, tasks and the outbox."""

    def __init__(self, path: str = ":memory:", *, profile: Profile | None = None,
                 retry_timeout: int | None = None, catch_up: CatchUp | None = None,
                 wait: float = 0.0) -> None:
        """Open (or create) the store at `path`; a file keeps the config it was created with.

        A store file is owned by one process at a time: another process's server raises
        StoreInUse (schedules_sql), at once or after waiting up to `wait` seconds."""
        check_config(profile, retry_timeout, catch_up)
        self.store = Store(path, wait=wait)
        try:
            with self.store.transaction():
                self.profile: Profile = self._config("profile", profile, "lean")  # type: ignore[assignment]
                self.retry_timeout = int(self._config("retry_timeout", retry_timeout, DEFAULT_RETRY_TIMEOUT))
                self.catch_up: CatchUp = self._config("catch_up", catch_up, "all")  # type: ignore[assignment]
                check_config(self.profile, None, self.catch_up)
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

    def reset(self, profile: Profile, retry_timeout: int, catch_up: CatchUp = "all") -> None:
        """Empty the store and give it this config, in one transaction, without letting go of
        it: the config is checked first, so a refused reset changes nothing."""
        check_config(profile, retry_timeout, catch_up)
        with self.store.transaction():
            self.store.clear()
            self.store.set_config("profile", profile)
            self.store.set_config("retry_timeout", str(retry_timeout))
            self.store.set_config("catch_up", catch_up)
        self.profile, self.retry_timeout, self.catch_up = profile, retry_timeout, catch_up

    # ---- the JSON face of docs/operations.md -------------------------------------------

    def handle(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        """One operation as JSON in, JSON out; an invalid request is a 400 that changes nothing."""
        try:
            check_time(now, "now")
            route = ROUTES.get(op) if isinstance(op, str) else None
            if route is None:
                raise InvalidRequest(f"unknown op {op!r}; known: {', '.join(ROUTES)}")
            check_unicode(args)
            if not isinstance(args, dict):
                # a search reads no argument, but its request is an object like every op's
                raise InvalidRequest(f"args must be an object, not {type(args).__name__}")
            return route(self, args, now)
        except InvalidRequest as problem:
            return {"status": 400, "message": str(problem)}

    def observe(self) -> dict[str, Json]:
        """The canonical observable state of operations.md."""
        with self.store.transaction():
            return self.store.snapshot()

    def log_messages(self) -> None:
        """Keep the messages sent from now on for `sent_messages` (a checker's server: a
        log nobody reads would grow without end)."""
        self.store.log_messages()

    def sent_messages(self) -> list[dict[str, Json]]:
        """The messages sent since the last call (log_messages first), in order, as
        docs/operations.md's outbox entries: what workers have been sent meanwhile."""
        with self.store.transaction():
            return self.store.sent_messages()

    # ---- S-01..S-04 --------------------------------------------------------------------

    def schedule_get(self, schedule_id: str, now: int) -> dict[str, Json]:
        """S-01."""
        with self.store.transaction():
            s = self.store.get_schedule(schedule_id)
        return {"status": 404} if s is None else {"status": 200, "schedule": s.to_json()}

    def schedule_create(self, req: ScheduleCreate, now: int) -> dict[str, Json]:
        """S-02: an existing id answers the stored schedule and ignores the request body."""
        if self.profile == "deployed" and TARGET_TAG not in req.promise_tags:
            raise InvalidRequest(f"promiseTags must include a {TARGET_TAG} tag (profile deployed)")
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
                return {"status": 404}
            self.store.del_schedule(schedule_id)
            self.store.del_schedule_timeout(schedule_id)
        return {"status": 200}

    def schedule_search(self, req: SearchRequest | None, now: int) -> dict[str, Json]:
        """S-04: not implemented in the spec, so not here either; `deployed` answers a page."""
        if req is None:
            return {"status": 501}
        with self.store.transaction():
            found = self.store.search_schedules(req.tags, req.cursor, req.limit + 1)
        page = found[:req.limit]
        more = len(found) > req.limit
        return {"status": 200, "schedules": [s.to_json() for s in page],
                "cursor": page[-1].id if more else None}

    # ---- P-01, P-02 --------------------------------------------------------------------

    def promise_get(self, promise_id: str, now: int) -> dict[str, Json]:
        """P-01, projected: a pending promise past its timeout reads as timed out."""
        with self.store.transaction():
            p = self.store.get_promise(promise_id)
        return {"status": 404} if p is None else {"status": 200, "promise": p.seen_at(now).record()}

    def promise_create(self, req: PromiseCreate, now: int) -> dict[str, Json]:
        """P-02: create-if-absent; an existing id answers its (projected) record."""
        with self.store.transaction():
            p = self._promise_create(req, now)
        return {"status": 200, "promise": p.record()}

    def _promise_create(self, req: PromiseCreate, now: int) -> Promise:
        existing = self.store.get_promise(req.id)
        if existing is not None:
            return existing.seen_at(now)
        shape = PromiseShape(req.param, req.tags, self.retry_timeout)
        self.store.create_promises([(req.id, req.timeout_at, now)], shape)
        created = self.store.get_promise(req.id)
        assert created is not None
        return created

    # ---- 02-timeouts -------------------------------------------------------------------

    def on_schedule_timeout(self, schedule_id: str, now: int) -> dict[str, Json]:
        """Fire every occurrence missed up to `now`, in order, then re-arm at the next one."""
        with self.store.transaction():
            self._on_schedule_timeout(schedule_id, now)
        return {"status": 200}

    def _on_schedule_timeout(self, schedule_id: str, now: int) -> None:
        s = self.store.get_schedule(schedule_id)
        if s is None:
            return
        s = self._catch_up(s, now)
        self.store.set_schedule(s)
        self.store.del_schedule_timeout(s.id)
        self.store.set_schedule_timeout(s.id, s.next_run_at)

    def _catch_up(self, s: Schedule, now: int) -> Schedule:
        """The Lean's catchUp loop: one promise.create per occurrence, oldest first.

        Occurrences go to `create_occurrences` a chunk at a time, in chronological order;
        that keeps memory flat over a year of minutely ticks and is still the Lean's
        sequence of creates, since each only reads and writes its own id."""
        if self.profile == "deployed":
            return self._deployed_occurrence(s, now) if s.next_run_at <= now else s
        if s.next_run_at > now or self.catch_up == "never":
            return s  # never: the schedule stays as it was
        if self.catch_up == "one-per-pass":  # one-per-pass: the earliest owed occurrence only
            self._create_occurrences(s, [s.next_run_at], now)
            return replace(s, last_run_at=s.next_run_at, next_run_at=next_run(compile_cron(s.cron), s.next_run_at))
        if self.catch_up == "once-skip":  # once-skip: that one, the rest skipped, next from now
            self._create_occurrences(s, [s.next_run_at], now)
            return replace(s, last_run_at=s.next_run_at, next_run_at=next_run(compile_cron(s.cron), now))
        if ((now - s.next_run_at) // 60_000 >= MAX_CATCH_UP_OCCURRENCES
                and occurrences_due(s.cron, s.next_run_at, now, MAX_CATCH_UP_OCCURRENCES)
                > MAX_CATCH_UP_OCCURRENCES):
            raise CatchUpTooLong(f"schedule {s.id!r} would fire more than {MAX_CATCH_UP_OCCURRENCES:,} "
                                 f"occurrences in one catch-up (from {s.next_run_at} to {now})")
        cron = compile_cron(s.cron)
        last = s.next_run_at
        for chunk in chunks(chain((s.next_run_at,), cron.occurrences(s.next_run_at, now)), CATCH_UP_CHUNK):
            self._create_occurrences(s, chunk, now)
            last = chunk[-1]
        return replace(s, last_run_at=last, next_run_at=next_run(cron, last))

    def _create_occurrences(self, s: Schedule, cron_times: list[int], now: int) -> None:
        """promise.create of these occurrences, in order, at the `now` of X-05: each one's
        cronTime under `lean`, the firing time under `server`."""
        shape = PromiseShape(s.promise_param, s.promise_tags, self.retry_timeout)
        template = s.promise_id.replace(ID_PLACEHOLDER, s.id)  # the timestamp is the store's to fill
        self.store.create_occurrences(template, cron_times, s.promise_timeout,
                                      None if self.profile == "lean" else now, shape)

    def _deployed_occurrence(self, s: Schedule, now: int) -> Schedule:
        """One occurrence per pass, as the deployed server fires it: created at its cronTime
        with lineage tags, judged expired at the firing time, dispatched at once when pending."""
        cron_time = s.next_run_at
        promise_id = expand(s.promise_id, s.id, cron_time)
        store = self.store
        if store.get_promise(promise_id) is None:
            tags = {**s.promise_tags, SCHEDULE_TAG: s.id, **dict.fromkeys(LINEAGE_TAGS, promise_id)}
            timeout_at = cron_time + s.promise_timeout
            target = tags.get(TARGET_TAG)
            pending = Promise(id=promise_id, state="pending", param=s.promise_param, value=EMPTY_VALUE,
                              tags=tags, timeout_at=timeout_at, created_at=cron_time, settled_at=None)
            if now >= timeout_at:
                store.set_promise(pending.timed_out())
                if target is not None:
                    store.set_task(Task(id=promise_id, state="fulfilled", version=0))
            else:
                store.set_promise(pending)
                if target is not None:
                    store.set_promise_timeout(promise_id, timeout_at)
                    store.set_task(Task(id=promise_id, state="pending", version=0))
                    store.set_task_timeout(promise_id, 0, now + self.retry_timeout)
                    store.set_message(target, execute_message(promise_id, 0))
        return replace(s, last_run_at=cron_time, next_run_at=next_run(compile_cron(s.cron), cron_time))

    def on_promise_timeout(self, promise_id: str, now: int) -> dict[str, Json]:
        """Settle a pending promise at its timeout and release everything waiting on it."""
        with self.store.transaction():
            self._on_promise_timeout(promise_id, now)
        return {"status": 200}

    def _on_promise_timeout(self, promise_id: str, now: int) -> None:
        """A delivery before the promise's timeoutAt is skipped (spec/schedules.md TO-01)."""
        p = self.store.get_promise(promise_id)
        if p is None or p.state != "pending" or p.timeout_at > now:
            return
        self._settle(p, p.timed_out(), now)

    def tick(self, now: int) -> dict[str, Json]:
        """Fire every due timeout: promise and schedule timeouts, smallest (timeout, kind, id)
        first, until none is due, each schedule once a tick; then each task timeout due, smallest (timeout, id, kind) first.

        Firing a promise timeout never arms another promise or schedule timeout, so all
        the promise timeouts that precede the next due schedule timeout fire as one run
        (set-wise when no registrations make their order observable); then that schedule
        fires, which may arm new due promise timeouts, and the search starts again. A task
        timeout arms only a retry at now + retry_timeout (> now), and touches only its own
        task, so one pass over the due ones leaves none due."""
        fired: list[dict[str, str]] = []
        if self.profile == "deployed":
            return self._deployed_tick(now)
        fired_schedules: set[str] = set()  # each schedule fires once a tick (one-per-pass, never)
        with self.store.transaction():
            while True:
                schedule_due = self.store.first_due_schedule_timeout(now, fired_schedules)
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
                fired_schedules.add(schedule_due[1])
                fired.append({"kind": "schedule", "id": schedule_due[1]})
            for task_id, kind in self.store.due_task_timeouts(now):
                self._on_task_timeout(task_id, kind, now)
                fired.append({"kind": TASK_TIMEOUT_KINDS[kind], "id": task_id})
        return {"status": 200, "fired": fired}

    def _deployed_tick(self, now: int) -> dict[str, Json]:
        """One pass of the deployed server's timeout processing: the due promise timeouts,
        then each schedule due at the start of the pass once, by (timeout, id)."""
        fired: list[dict[str, str]] = []
        with self.store.transaction():
            for promise_id in self.store.due_promise_timeouts(now):
                self._on_promise_timeout(promise_id, now)
                fired.append({"kind": "promise", "id": promise_id})
            for schedule_id in self.store.due_schedule_timeouts(now):
                self._on_schedule_timeout(schedule_id, now)
                fired.append({"kind": "schedule", "id": schedule_id})
        return {"status": 200, "fired": fired}


#: How `tick` names a fired task timeout, by its kind.
TASK_TIMEOUT_KINDS = {RETRY: "retry", LEASE: "lease"}


# ---- routes: operations.md op -> arguments checked -> typed handler --------------------

Route = Callable[[ScheduleServer, dict[str, Json], int], dict[str, Json]]


def _search(server: ScheduleServer, args: dict[str, Json], now: int) -> dict[str, Json]:
    return server.schedule_search(parse_search(args) if server.profile == "deployed" else None, now)


def _tick(server: ScheduleServer, args: dict[str, Json], now: int) -> dict[str, Json]:
    check_args(args, ())
    return server.tick(now)


ROUTES: dict[str, Route] = {
    "schedule.create":
        lambda server, args, now: server.schedule_create(parse_schedule_create(args, now), now),
    "schedule.get": lambda server, args, now: server.schedule_get(parse_id(args), now),
    "schedule.delete": lambda server, args, now: server.schedule_delete(parse_id(args), now),
    "schedule.search": _search,
    "promise.create": lambda server, args, now: server.promise_create(parse_promise_create(args), now),
    "promise.get": lambda server, args, now: server.promise_get(parse_id(args), now),
    "promise.settle": lambda server, args, now: server.promise_settle(parse_promise_settle(args), now),
    "promise.register_callback":
        lambda server, args, now: server.promise_register_callback(*parse_register_callback(args), now),
    "promise.register_listener":
        lambda server, args, now: server.promise_register_listener(*parse_register_listener(args), now),
    "promise.search": lambda server, args, now: server.promise_search(now),
    "task.get": lambda server, args, now: server.task_get(parse_id(args), now),
    "task.create": lambda server, args, now: server.task_create(parse_task_create(args), now),
    "task.acquire": lambda server, args, now: server.task_acquire(parse_task_acquire(args), now),
    "task.fence": lambda server, args, now: server.task_fence(parse_task_fence(args), now),
    "task.heartbeat": lambda server, args, now: server.task_heartbeat(parse_task_heartbeat(args), now),
    "task.suspend": lambda server, args, now: server.task_suspend(parse_task_suspend(args), now),
    "task.fulfill": lambda server, args, now: server.task_fulfill(parse_task_fulfill(args), now),
    "task.release": lambda server, args, now: server.task_release(*parse_task_version(args), now),
    "task.halt": lambda server, args, now: server.task_halt(parse_id(args), now),
    "task.continue": lambda server, args, now: server.task_continue(parse_id(args), now),
    "task.search": lambda server, args, now: server.task_search(now),
    "schedule.timeout": lambda server, args, now: server.on_schedule_timeout(parse_id(args), now),
    "promise.timeout": lambda server, args, now: server.on_promise_timeout(parse_id(args), now),
    "tick": _tick,
}

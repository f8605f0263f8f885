"""The server state of the Lean `ServerState` on SQLite, reached only through named effects.

One method per Lean effect (get_promise, set_promise, set_promise_timeout, set_message...)
so the handlers read like the spec; a few set-wise variants (insert_*, settle_timed_out)
exist because catch-up and tick touch hundreds of thousands of rows and a row at a time
through Python would take minutes. The store never commits on its own: `transaction()`
brackets one handler, and any exception inside it rolls the whole handler back.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, Container, Iterable, Iterator, Sequence

from duespec.impl.schedules_records import (
    DELAY_TAG, EMPTY_VALUE, TARGET_TAG, TIMESTAMP_PLACEHOLDER, Json, Promise, Schedule, Tags, Task, Value, delay_ms, execute_message,
    is_external, is_timer, outbox_key, timed_out_state, unblock_message,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS config (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS promises (
    id         TEXT PRIMARY KEY,
    state      TEXT NOT NULL,
    param      TEXT NOT NULL,
    value      TEXT NOT NULL,
    tags       TEXT NOT NULL,
    timeout_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    settled_at INTEGER,
    callbacks  TEXT NOT NULL DEFAULT '[]',
    listeners  TEXT NOT NULL DEFAULT '[]',
    timer      INTEGER NOT NULL            -- derived from tags, for set-wise settling
) WITHOUT ROWID;
-- Promises with registrations are rare; this index lets the settlement scrub and the
-- tick's fast path find them without scanning every promise.
CREATE INDEX IF NOT EXISTS promises_registered ON promises (id)
    WHERE callbacks != '[]' OR listeners != '[]';
CREATE TABLE IF NOT EXISTS tasks (
    id      TEXT PRIMARY KEY,
    state   TEXT NOT NULL,
    version INTEGER NOT NULL,
    resumes TEXT NOT NULL DEFAULT '[]',
    ttl     INTEGER,
    pid     TEXT
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS schedules (
    id              TEXT PRIMARY KEY,
    cron            TEXT NOT NULL,
    promise_id      TEXT NOT NULL,
    promise_timeout INTEGER NOT NULL,
    promise_param   TEXT NOT NULL,
    promise_tags    TEXT NOT NULL,
    next_run_at     INTEGER NOT NULL,
    last_run_at     INTEGER,
    created_at      INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS promise_timeouts (
    id      TEXT PRIMARY KEY,
    timeout INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS promise_timeouts_due ON promise_timeouts (timeout, id);
CREATE TABLE IF NOT EXISTS task_timeouts (
    id      TEXT NOT NULL,
    kind    INTEGER NOT NULL,
    timeout INTEGER NOT NULL,
    PRIMARY KEY (id, kind)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS task_timeouts_due ON task_timeouts (timeout, id, kind);
CREATE TABLE IF NOT EXISTS schedule_timeouts (
    id      TEXT PRIMARY KEY,
    timeout INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS schedule_timeouts_due ON schedule_timeouts (timeout, id);
-- A message is either execute (task_id, version) or unblock (promise: the JSON record).
CREATE TABLE IF NOT EXISTS outbox (
    key     TEXT PRIMARY KEY,
    address TEXT NOT NULL,
    kind    TEXT NOT NULL CHECK (kind IN ('execute', 'unblock')),
    task_id TEXT,
    version INTEGER,
    promise TEXT
) WITHOUT ROWID;
"""

#: Page cache of a file-backed store: a year-long catch-up touches ~100 MB of B-tree pages.
CACHE_KIB = 256 * 1024

def _own(path: str, wait: float) -> IO[str]:
    """Hold FILE.lock exclusively (the owner's pid inside), or raise StoreInUse."""
    lock_path = path + ".lock"
    try:
        handle = open(lock_path, "a+", encoding="utf-8")
    except OSError as error:
        raise StoreError(f"cannot open store {path!r}: {lock_path}: {error.strerror or error}") from None
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                handle.seek(0)
                owner = handle.read(32).strip() or "unknown"
                handle.close()
                waited = f" after waiting {wait:g}s" if wait else ""
                raise StoreInUse(f"store {path!r} is in use by another process (pid {owner}){waited}; "
                                 f"a store is opened by one process at a time") from None
            time.sleep(0.05)
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


PromiseRow = tuple[str, str, str, str, str, int, int, int | None, str, str, int]
TaskRow = tuple[str, str, int, str, int | None, str | None]


@dataclass(frozen=True, slots=True)
class PromiseShape:
    """What the promises of one request, or of one schedule's occurrences, share."""

    param: Value
    tags: Tags
    retry_timeout: int


def dumps(value: Json) -> str:
    """Compact JSON; ASCII-only so any Python string survives the round trip."""
    return json.dumps(value, separators=(",", ":"))


def promise_row(p: Promise) -> PromiseRow:
    return (p.id, p.state, dumps(p.param.to_json()), dumps(p.value.to_json()), dumps(p.tags),
            p.timeout_at, p.created_at, p.settled_at, dumps(list(p.callbacks)),
            dumps(list(p.listeners)), int(is_timer(p.tags)))


def task_row(t: Task) -> TaskRow:
    return (t.id, t.state, t.version, dumps(list(t.resumes)), t.ttl, t.pid)


def _value(text: str) -> Value:
    raw = json.loads(text)
    return Value(raw["headers"], raw["data"])


def _list(text: str) -> list[str]:
    return [] if text == "[]" else list(json.loads(text))


def _promise(row: Sequence[Any]) -> Promise:
    return Promise(
        id=row[0], state=row[1], param=_value(row[2]), value=_value(row[3]), tags=json.loads(row[4]),
        timeout_at=row[5], created_at=row[6], settled_at=row[7],
        callbacks=tuple(json.loads(row[8])), listeners=tuple(json.loads(row[9])),
    )


def _task(row: Sequence[Any]) -> Task:
    return Task(id=row[0], state=row[1], version=row[2], resumes=tuple(json.loads(row[3])),
                ttl=row[4], pid=row[5])


def _schedule(row: Sequence[Any]) -> Schedule:
    return Schedule(
        id=row[0], cron=row[1], promise_id=row[2], promise_timeout=row[3],
        promise_param=_value(row[4]), promise_tags=json.loads(row[5]),
        next_run_at=row[6], last_run_at=row[7], created_at=row[8],
    )


def _message(kind: str, task_id: str | None, version: int | None, promise: str | None) -> dict[str, Json]:
    if kind == "execute":
        return execute_message(str(task_id), int(version or 0))
    return unblock_message(json.loads(str(promise)))


PROMISE_COLUMNS = ("id, state, param, value, tags, timeout_at, created_at, settled_at, "
                   "callbacks, listeners, timer")
#: The columns operations.md shows, without the derived `timer`.
PROMISE_COLUMNS_SHOWN = PROMISE_COLUMNS.removesuffix(", timer")
TASK_COLUMNS = "id, state, version, resumes, ttl, pid"
SCHEDULE_COLUMNS = ("id, cron, promise_id, promise_timeout, promise_param, promise_tags, "
                    "next_run_at, last_run_at, created_at")


class StoreError(RuntimeError):
    """A store file that cannot be opened or written: the message says which and why."""


class StoreInUse(StoreError):
    """Another process has the store file open: one server owns a store at a time."""


#: Milliseconds a statement waits for a lock held by a foreign SQLite connection (say the
#: sqlite3 shell) before the store reports itself busy.
BUSY_TIMEOUT_MS = 5000


class Store:
    """One SQLite connection holding one server's state.

    A file-backed store belongs to one process at a time: opening takes an exclusive
    `flock` on FILE.lock (released by the kernel however the owner ends, SIGKILL included),
    and a second process gets StoreInUse at once, or after waiting up to `wait` seconds for
    the owner to close. Never a raw "database is locked"."""

    def __init__(self, path: str, *, wait: float = 0.0) -> None:
        self.path = path
        self.lock = threading.Lock()
        self._owner: IO[str] | None = None
        #: Whether this open made FILE.lock: a store that then fails to open leaves none behind.
        made_lock = False
        if path != ":memory:":
            made_lock = not os.path.lexists(path + ".lock")
            self._owner = _own(path, wait)
        try:
            # Autocommit mode: transactions are opened and closed explicitly, never implicitly.
            self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False,
                                      timeout=BUSY_TIMEOUT_MS / 1000)
            if path != ":memory:":
                self.db.execute("PRAGMA journal_mode = WAL")
                # FULL: a handler's 200 means its transaction is on disk, not merely consistent.
                self.db.execute("PRAGMA synchronous = FULL")
                self.db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            self.db.executescript(SCHEMA)
            self.db.execute("CREATE TEMP TABLE IF NOT EXISTS firing (id TEXT PRIMARY KEY) WITHOUT ROWID")
            self.db.execute("CREATE TEMP TABLE IF NOT EXISTS creating (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, "
                            "timeout_at INTEGER NOT NULL, now INTEGER NOT NULL) WITHOUT ROWID")
            self.db.execute("CREATE TEMP TABLE IF NOT EXISTS sent (seq INTEGER PRIMARY KEY, address TEXT, "
                            "kind TEXT, task_id TEXT, version INTEGER, promise TEXT)")
        except sqlite3.Error as error:
            if made_lock:  # still held, so no other process is using it
                with contextlib.suppress(OSError):
                    os.unlink(path + ".lock")
            self._release()
            raise StoreError(f"cannot open store {path!r}: {error}") from None

    def close(self) -> None:
        try:
            self.db.close()
        finally:
            self._release()

    def _release(self) -> None:
        if self._owner is not None:
            self._owner.close()  # closing the descriptor drops the flock
            self._owner = None

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All of one handler or none of it; one handler at a time if threads share the store."""
        with self.lock:
            try:
                self.db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as error:
                raise StoreError(f"store {self.path!r} is busy: another connection has held its write "
                                 f"lock for over {BUSY_TIMEOUT_MS / 1000:g}s ({error})") from None
            try:
                yield
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    def clear(self) -> None:
        """Delete every row of every table, config included (inside the caller's transaction,
        so a reset is all or nothing and the store stays owned throughout)."""
        tables = [row[0] for row in self.db.execute(
            "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        for table in tables:
            self.db.execute(f'DELETE FROM main."{table}"')
        self.db.execute("DELETE FROM temp.sent")

    # ---- config -----------------------------------------------------------------------

    def get_config(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM config WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_config(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO config (key, value) VALUES (?, ?)", (key, value))

    # ---- promises ---------------------------------------------------------------------

    def get_promise(self, promise_id: str) -> Promise | None:
        row = self.db.execute(f"SELECT {PROMISE_COLUMNS} FROM promises WHERE id = ?",
                              (promise_id,)).fetchone()
        return None if row is None else _promise(row)

    def set_promise(self, p: Promise) -> None:
        self.db.execute(f"INSERT OR REPLACE INTO promises ({PROMISE_COLUMNS}) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", promise_row(p))

    def create_promises(self, requests: Iterable[tuple[str, int, int]], shape: PromiseShape) -> None:
        """P-02 promise.create for each (id, timeoutAt, now) of `requests`, in order, set-wise.

        The id's first request creates it and any later one, like any id already stored,
        takes the idempotent branch, which writes nothing; so only the absent ids matter,
        each written independently of the others (`_create_absent`)."""
        self.db.execute("DELETE FROM temp.creating")
        self.db.executemany("INSERT OR IGNORE INTO temp.creating (id, seq, timeout_at, now) VALUES (?, ?, ?, ?)",
                            ((id, seq, timeout_at, now) for seq, (id, timeout_at, now) in enumerate(requests)))
        self._create_absent(shape)

    def create_occurrences(self, template: str, times: Sequence[int], promise_timeout: int,
                           now: int | None, shape: PromiseShape) -> None:
        """`create_promises` of a catch-up's occurrences at `times` (strictly increasing):
        each id is `template` with its time in place of the timestamp placeholder, times
        out promise_timeout after it, and is created at its time (now=None) or at `now`.

        The times go in as one JSON array, expanded by SQLite: a row bound from Python
        costs more than the row itself. Distinct times make distinct ids, as schedule.create
        requires the placeholder; were one missing, the first occurrence (json_each reads
        the array in order) would create the id and the others find it, as in P-02."""
        self.db.execute("DELETE FROM temp.creating")
        self.db.execute(
            "INSERT OR IGNORE INTO temp.creating (id, seq, timeout_at, now) "
            "SELECT replace(:template, :placeholder, value), key, value + :timeout, coalesce(:now, value) "
            "FROM json_each(:times)",
            {"template": template, "placeholder": TIMESTAMP_PLACEHOLDER, "timeout": promise_timeout,
             "now": now, "times": f"[{','.join(map(str, times))}]"})
        self._create_absent(shape)

    def _create_absent(self, shape: PromiseShape) -> None:
        """The P-02 creates of temp.creating's ids that are not promises yet, in the order
        they were asked for (`seq`: a catch-up's oldest first, as its executes must go out;
        not by id, whose text order puts "s-1004486400000" before "s-991267200000"). The
        CASEs are P-02's branches: created pending (with a task dispatched now or delayed)
        or created already timed out."""
        db = self.db
        db.execute("DELETE FROM temp.creating "
                   "WHERE EXISTS (SELECT 1 FROM promises WHERE promises.id = creating.id)")
        timer = is_timer(shape.tags)
        db.execute(
            f"INSERT INTO promises ({PROMISE_COLUMNS}) SELECT id, "
            "CASE WHEN timeout_at > now THEN 'pending' ELSE :timed_out END, "
            ":param, :value, :tags, timeout_at, "
            "CASE WHEN timeout_at > now THEN now ELSE timeout_at END, "
            "CASE WHEN timeout_at > now THEN NULL ELSE timeout_at END, '[]', '[]', :timer "
            "FROM temp.creating ORDER BY seq",
            {"timed_out": timed_out_state(shape.tags), "param": dumps(shape.param.to_json()),
             "value": dumps(EMPTY_VALUE.to_json()), "tags": dumps(shape.tags), "timer": int(timer)})
        if is_external(shape.tags):
            db.execute("INSERT OR REPLACE INTO promise_timeouts (id, timeout) SELECT id, timeout_at "
                       "FROM temp.creating WHERE timeout_at > now ORDER BY seq")
        target = shape.tags.get(TARGET_TAG)
        if target is None:
            return
        delay = shape.tags.get(DELAY_TAG)
        times = {"delay": None if delay is None else delay_ms(delay), "retry": shape.retry_timeout}
        db.execute(f"INSERT OR REPLACE INTO tasks ({TASK_COLUMNS}) SELECT id, "
                   "CASE WHEN timeout_at > now THEN 'pending' ELSE 'fulfilled' END, 0, '[]', NULL, NULL "
                   "FROM temp.creating ORDER BY seq")
        db.execute("INSERT OR REPLACE INTO task_timeouts (id, kind, timeout) SELECT id, 0, "
                   "CASE WHEN :delay > now THEN :delay ELSE now + :retry END "
                   "FROM temp.creating WHERE timeout_at > now ORDER BY seq", times)
        db.execute("INSERT OR REPLACE INTO outbox (key, address, kind, task_id, version, promise) "
                   "SELECT id, :target, 'execute', id, 0, NULL FROM temp.creating "
                   "WHERE timeout_at > now AND NOT coalesce(:delay > now, 0) ORDER BY seq",
                   {**times, "target": target})

    def pending_awaiters_of(self, promise_id: str) -> list[Promise]:
        """Pending promises whose callbacks name `promise_id` (the settlement scrub)."""
        rows = self.db.execute(
            f"SELECT {PROMISE_COLUMNS} FROM promises WHERE (callbacks != '[]' OR listeners != '[]') "
            "AND state = 'pending'").fetchall()
        return [p for p in map(_promise, rows) if promise_id in p.callbacks]

    def any_registrations(self) -> bool:
        """Whether any promise holds a callback or a listener."""
        found = self.db.execute(
            "SELECT 1 FROM promises WHERE callbacks != '[]' OR listeners != '[]' LIMIT 1").fetchone()
        return found is not None

    # ---- tasks ------------------------------------------------------------------------

    def get_task(self, task_id: str) -> Task | None:
        row = self.db.execute(f"SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?", (task_id,)).fetchone()
        return None if row is None else _task(row)

    def set_task(self, t: Task) -> None:
        self.db.execute(f"INSERT OR REPLACE INTO tasks ({TASK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                        task_row(t))

    # ---- schedules --------------------------------------------------------------------

    def get_schedule(self, schedule_id: str) -> Schedule | None:
        row = self.db.execute(f"SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE id = ?",
                              (schedule_id,)).fetchone()
        return None if row is None else _schedule(row)

    def set_schedule(self, s: Schedule) -> None:
        self.db.execute(
            f"INSERT OR REPLACE INTO schedules ({SCHEDULE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (s.id, s.cron, s.promise_id, s.promise_timeout, dumps(s.promise_param.to_json()),
             dumps(s.promise_tags), s.next_run_at, s.last_run_at, s.created_at))

    def search_schedules(self, tags: Tags, cursor: str | None, limit: int) -> list[Schedule]:
        """Up to `limit` schedules after `cursor` whose promiseTags hold every pair of `tags`,
        by id (SQLite's binary order of UTF-8 text is code-point order)."""
        rows = self.db.execute(f"SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE ? IS NULL OR id > ? "
                               "ORDER BY id", (cursor, cursor))
        found: list[Schedule] = []
        for row in rows:
            s = _schedule(row)
            if all(s.promise_tags.get(key) == value for key, value in tags.items()):
                found.append(s)
                if len(found) == limit:
                    break
        return found

    def del_schedule(self, schedule_id: str) -> None:
        self.db.execute("DELETE FROM schedules WHERE id = ?", (schedule_id,))

    # ---- timeouts ---------------------------------------------------------------------

    def set_promise_timeout(self, promise_id: str, timeout: int) -> None:
        self.db.execute("INSERT OR REPLACE INTO promise_timeouts (id, timeout) VALUES (?, ?)",
                        (promise_id, timeout))

    def del_promise_timeout(self, promise_id: str) -> None:
        self.db.execute("DELETE FROM promise_timeouts WHERE id = ?", (promise_id,))

    def set_task_timeout(self, task_id: str, kind: int, timeout: int) -> None:
        self.db.execute("INSERT OR REPLACE INTO task_timeouts (id, kind, timeout) VALUES (?, ?, ?)",
                        (task_id, kind, timeout))

    def del_task_timeout(self, task_id: str) -> None:
        """Both kinds, as the Lean's delTaskTimeout."""
        self.db.execute("DELETE FROM task_timeouts WHERE id = ?", (task_id,))

    def set_schedule_timeout(self, schedule_id: str, timeout: int) -> None:
        self.db.execute("INSERT OR REPLACE INTO schedule_timeouts (id, timeout) VALUES (?, ?)",
                        (schedule_id, timeout))

    def del_schedule_timeout(self, schedule_id: str) -> None:
        self.db.execute("DELETE FROM schedule_timeouts WHERE id = ?", (schedule_id,))

    def first_due_schedule_timeout(self, now: int, fired: Container[str] = ()) -> tuple[int, str] | None:
        """The earliest due schedule timeout, by (timeout, id), of a schedule not in `fired`
        (those that fired already in this tick; a schedule that is no longer due costs nothing)."""
        for timeout, schedule_id in self.db.execute("SELECT timeout, id FROM schedule_timeouts WHERE timeout <= ? "
                                                    "ORDER BY timeout, id", (now,)):
            if schedule_id not in fired:
                return timeout, schedule_id
        return None

    def due_schedule_timeouts(self, now: int) -> list[str]:
        """Ids of the schedule timeouts at or before `now`, by (timeout, id)."""
        return [row[0] for row in self.db.execute(
            "SELECT id FROM schedule_timeouts WHERE timeout <= ? ORDER BY timeout, id", (now,))]

    def due_task_timeouts(self, now: int) -> list[tuple[str, int]]:
        """(id, kind) of the task timeouts at or before `now`, in firing order."""
        return self.db.execute("SELECT id, kind FROM task_timeouts WHERE timeout <= ? "
                               "ORDER BY timeout, id, kind", (now,)).fetchall()

    def due_promise_timeouts(self, bound: int) -> list[str]:
        """Ids of the promise timeouts at or before `bound`, in firing order."""
        return [row[0] for row in self.db.execute(
            "SELECT id FROM promise_timeouts WHERE timeout <= ? ORDER BY timeout, id", (bound,))]

    def settle_timed_out(self, bound: int) -> None:
        """onPromiseTimeout for every promise timeout at or before `bound`, set-wise.

        Only valid when no promise holds a callback or listener: then each settlement
        touches its own promise, task and timeouts and nothing else, so the order in
        which they happen cannot show."""
        db = self.db
        db.execute("DELETE FROM temp.firing")
        db.execute("INSERT INTO temp.firing (id) SELECT t.id FROM promise_timeouts AS t "
                   "JOIN promises AS p ON p.id = t.id WHERE t.timeout <= ? AND p.state = 'pending'", (bound,))
        db.execute("UPDATE promises "
                   "SET state = CASE timer WHEN 1 THEN 'resolved' ELSE 'rejected_timedout' END, "
                   "settled_at = timeout_at, callbacks = '[]', listeners = '[]' "
                   "WHERE id IN (SELECT id FROM temp.firing)")
        db.execute("UPDATE tasks SET state = 'fulfilled', pid = NULL, ttl = NULL, resumes = '[]' "
                   "WHERE id IN (SELECT id FROM temp.firing)")
        db.execute("DELETE FROM task_timeouts WHERE id IN (SELECT id FROM temp.firing)")
        db.execute("DELETE FROM promise_timeouts WHERE id IN (SELECT id FROM temp.firing)")

    # ---- outbox -----------------------------------------------------------------------

    def set_message(self, address: str, message: dict[str, Json]) -> None:
        """A message replaces the pending one with the same key (Lean setMessage)."""
        if message["kind"] == "execute":
            columns = (message["taskId"], message["version"], None)
        else:
            columns = (None, None, dumps(message["promise"]))
        self.db.execute("INSERT OR REPLACE INTO outbox (key, address, kind, task_id, version, promise) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        (outbox_key(address, message), address, message["kind"], *columns))

    def log_messages(self) -> None:
        """From now on, keep every message written to the outbox, in order, until
        `sent_messages` hands them over: what a worker receives, which the outbox (one row
        per key, replaced in place) cannot show. A trigger, so that the set-wise writes of
        a catch-up are logged as they are written, row by row."""
        self.db.execute("CREATE TEMP TRIGGER IF NOT EXISTS log_sent AFTER INSERT ON main.outbox BEGIN "
                        "INSERT INTO sent (address, kind, task_id, version, promise) "
                        "VALUES (NEW.address, NEW.kind, NEW.task_id, NEW.version, NEW.promise); END")

    def sent_messages(self) -> list[dict[str, Json]]:
        """The messages logged since the last call (see log_messages), in the order they
        were written, each as an outbox entry of docs/operations.md; the log is emptied."""
        rows = self.db.execute("SELECT address, kind, task_id, version, promise FROM temp.sent ORDER BY seq").fetchall()
        self.db.execute("DELETE FROM temp.sent")
        return [{"address": address, "message": _message(kind, task_id, version, promise)}
                for address, kind, task_id, version, promise in rows]

    # ---- observation ------------------------------------------------------------------

    def snapshot(self) -> dict[str, Json]:
        """The whole state as operations.md shows it, every list in its canonical order.

        Sorted in Python, not SQL, so the order is code-point order whatever the collation."""
        db = self.db
        schedules = sorted((_schedule(r) for r in db.execute(f"SELECT {SCHEDULE_COLUMNS} FROM schedules")),
                           key=lambda s: s.id)
        return {
            # Promises and tasks straight from their rows: they are most of a big state.
            "promises": [
                {"id": i, "state": state, "param": json.loads(param), "value": json.loads(value),
                 "tags": json.loads(tags), "timeoutAt": timeout_at, "createdAt": created_at,
                 "settledAt": settled_at, "callbacks": _list(callbacks), "listeners": _list(listeners)}
                for i, state, param, value, tags, timeout_at, created_at, settled_at, callbacks, listeners
                in sorted(db.execute(f"SELECT {PROMISE_COLUMNS_SHOWN} FROM promises"))],
            "tasks": [
                {"id": i, "state": state, "version": version, "resumes": _list(resumes),
                 "ttl": ttl, "pid": pid}
                for i, state, version, resumes, ttl, pid
                in sorted(db.execute(f"SELECT {TASK_COLUMNS} FROM tasks"))],
            "schedules": [s.to_json() for s in schedules],
            "promiseTimeouts": [{"id": i, "timeout": t} for i, t in
                                sorted(db.execute("SELECT id, timeout FROM promise_timeouts"))],
            "taskTimeouts": [{"id": i, "kind": k, "timeout": t} for i, k, t in
                             sorted(db.execute("SELECT id, kind, timeout FROM task_timeouts"))],
            "scheduleTimeouts": [{"id": i, "timeout": t} for i, t in
                                 sorted(db.execute("SELECT id, timeout FROM schedule_timeouts"))],
            "outbox": [
                {"address": address, "message": _message(kind, task_id, version, promise)}
                for _, address, kind, task_id, version, promise in
                sorted(db.execute("SELECT key, address, kind, task_id, version, promise FROM outbox"))],
        }

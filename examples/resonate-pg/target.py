"""resonate-pg (a Resonate server in one PostgreSQL file) as a duespec schedules target.

    export RESONATE_PG_DSN='host=127.0.0.1 port=5432 user=postgres dbname=resonate'
    PYTHONPATH=examples/resonate-pg duespec conform schedules --target target:make_target
    PYTHONPATH=examples/resonate-pg duespec stress schedules --target target:make_client --clients 16

Every operation of docs/operations.md that is a Resonate kind travels as the envelope
`duespec --target http://...` would POST (built by duespec.wire.envelope.op_envelope, with
`resonate:debug_time` = now) through `SELECT resonate.resonate_rpc(envelope)`, and the
answer envelope is read back with the same functions the HTTP target uses, so the mapping
is the wire's, unchanged. resonate-pg has no debug kinds (it answers them 501), so the
environment and the checker's controls are done here, against its own functions and
tables:

- `tick`: `resonate.process_timeouts(now)`, its timer driver, pass after pass until one
  fires nothing (a pass leaves the timeouts of the occurrences it created, already due, to
  the next; the spec's tick fires them too: `_tick`). It returns a count of the
  timeouts it selected as due, not which it fired; a handler that finds its timeout no
  longer due (another pass fired it first) does nothing. So `fired` is recorded as the
  pass runs, by a trigger this adapter adds to resonate-pg's tables (`TICK_RECORDER`,
  installed by `reset`), which notes each transition a timeout handler makes, in the
  order the handlers make them (due promises, then due tasks, then due schedules), in a
  setting local to the tick's transaction: other sessions' writes note nothing, and a
  subtransaction process_timeouts rolls back (a deadlock it retries) takes its notes with it.
- `schedule.timeout` / `promise.timeout`: `resonate._on_schedule_timeout(id, now)` /
  `resonate._on_promise_timeout(id, now)`, the transitions process_timeouts runs; a
  promise's only once due, as its driver calls it (docs/operations.md: an early delivery
  does nothing).
- `reset`: empties its seven tables (DELETE in one round trip while nothing has been
  observed, TRUNCATE after: see _OBSERVED); `retry_timeout` sets its one constant,
  `resonate._retry_timeout()`.
- `observe`: duespec's state shape, read from the tables (see `observe`).

Validation of the environment ops' arguments (tick takes `{}`, the single timeouts
`{"id"}`, `now` an integer in [0, MAX_TIME]) is this adapter's, since those ops are not
part of resonate-pg's protocol. A SQL error that escapes resonate_rpc (its DECLARE block
casts the head's `resonate:debug_time` before its own error handler is in force) is
answered as the HTTP front of a database would answer it: status 500, the error as message.
"""

from __future__ import annotations

import itertools
import json
import os
from typing import Any

import psycopg
from psycopg import pq

from duespec.targets.interface import TargetError
from duespec.wire.envelope import ProtocolViolation, check_envelope, op_envelope, op_response

Json = Any

#: docs/operations.md X-04: the largest valid `now`, 9999-12-31T23:59:59.999Z in ms.
MAX_TIME = 253_402_300_799_999
#: resonate-pg's tables (resonate.sql, section 1): its whole state.
TABLES = ("promises", "tasks", "task_resumes", "callbacks", "listeners", "schedules", "outbox")
#: The largest duration the config takes (duespec's own adapter's bound; campaigns draw it
#: as a retry_timeout): now + it still fits resonate-pg's bigint columns.
MAX_DURATION = 9_223_118_634_553_975_808
#: resonate.sql's retry timeout, `_retry_timeout()`, as shipped.
SHIPPED_RETRY_TIMEOUT = 5000
#: Lean TaskTimeout.kind (docs/operations.md taskTimeouts): 0 retry (a pending task), 1 lease
#: (an acquired one). resonate-pg keeps one `timeout_at` per task and fires it by state.
TASK_TIMEOUT_KIND = {"pending": 0, "acquired": 1}
TASK_TIMEOUT_NAME = {"pending": "retry", "acquired": "lease"}
#: The `p_limit` of a dequeue that takes every message of an address (an int, as declared).
DEQUEUE_ALL = 2**31 - 1
#: How long the second of two workers polling one address may wait for a row lock: it
#: should wait for none (resonate-pg's dequeues skip the rows another worker holds).
SECOND_WORKER_LOCK_TIMEOUT = "2s"
#: The ops this adapter answers itself (resonate-pg has no debug kinds).
ENVIRONMENT_OPS = ("tick", "schedule.timeout", "promise.timeout")
#: The passes of process_timeouts one tick may run (_tick): a catch-up leaves at most one
#: more pass's work (its occurrences' promise timeouts), so a tick needs two, rarely more.
TICK_PASSES = 16
#: The trigger that records what a tick's pass fired (see the module docstring): on an
#: UPDATE in a transaction that set `duespec_tick.on`, a promise whose state or settlement
#: changed (its timeout fired), a task that went from acquired to pending (its lease) or
#: stayed pending with a new timeout (its retry), a schedule whose last run moved (it
#: fired). It writes nothing but a transaction-local setting, so it changes no behaviour.
TICK_RECORDER = """
CREATE SCHEMA IF NOT EXISTS duespec_tick;
CREATE OR REPLACE FUNCTION duespec_tick.record() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE kind text;
BEGIN
  IF current_setting('duespec_tick.on', true) IS DISTINCT FROM 'on' THEN RETURN NULL; END IF;
  IF TG_TABLE_NAME = 'promises' THEN
    IF NEW.state IS DISTINCT FROM OLD.state OR NEW.settled_at IS DISTINCT FROM OLD.settled_at THEN
      kind := 'promise';
    END IF;
  ELSIF TG_TABLE_NAME = 'tasks' THEN
    IF OLD.state = 'acquired' AND NEW.state = 'pending' THEN
      kind := 'lease';
    ELSIF OLD.state = 'pending' AND NEW.state = 'pending' AND NEW.timeout_at IS DISTINCT FROM OLD.timeout_at THEN
      kind := 'retry';
    END IF;
  ELSIF NEW.last_run_at IS DISTINCT FROM OLD.last_run_at THEN
    kind := 'schedule';
  END IF;
  IF kind IS NOT NULL THEN
    PERFORM set_config('duespec_tick.fired', current_setting('duespec_tick.fired', true)
                       || jsonb_build_object('kind', kind, 'id', NEW.id)::text || chr(10), true);
  END IF;
  RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER duespec_tick AFTER UPDATE ON resonate.promises
  FOR EACH ROW EXECUTE FUNCTION duespec_tick.record();
CREATE OR REPLACE TRIGGER duespec_tick AFTER UPDATE ON resonate.tasks
  FOR EACH ROW EXECUTE FUNCTION duespec_tick.record();
CREATE OR REPLACE TRIGGER duespec_tick AFTER UPDATE ON resonate.schedules
  FOR EACH ROW EXECUTE FUNCTION duespec_tick.record();
"""


def make_target() -> ResonatePgTarget:
    """The factory duespec calls once per run. The connection string is $RESONATE_PG_DSN."""
    dsn = os.environ.get("RESONATE_PG_DSN")
    if not dsn:
        raise TargetError("RESONATE_PG_DSN is not set: give the libpq connection string of a database "
                          "resonate.sql was applied to (examples/resonate-pg/README.md)", unusable=True)
    return ResonatePgTarget(dsn)


def make_client() -> ResonatePgTarget:
    """The factory `duespec stress --target target:make_client` calls once per client: a
    target on a PostgreSQL connection of its own (closed by `close`), so that N clients
    are N sessions calling resonate_rpc at once, as N SDK workers would. The connection
    string is $RESONATE_PG_DSN, as for make_target."""
    dsn = os.environ.get("RESONATE_PG_DSN")
    if not dsn:
        raise TargetError("RESONATE_PG_DSN is not set: give the libpq connection string of a database "
                          "resonate.sql was applied to (examples/resonate-pg/README.md)", unusable=True)
    return ResonatePgTarget(dsn, own_connection=True)


#: duespec stress may drive the targets make_client makes from many threads at once.
make_client.concurrent_clients = True  # type: ignore[attr-defined]


def _connect(dsn: str) -> psycopg.Connection:
    try:
        conn = psycopg.connect(dsn, autocommit=True)
    except psycopg.Error as error:
        raise TargetError(f"cannot connect to RESONATE_PG_DSN ({dsn}): {error}".strip(), unusable=True) from None
    conn.add_notice_handler(lambda notice: None)
    return conn


#: One connection per DSN for the whole campaign: a campaign makes a target per run, and a
#: new PostgreSQL session would recompile every PL/pgSQL function on first use. Keyed by
#: (DSN, worker): worker 0 runs every step, worker 1 is the second of two workers polling
#: one address (ResonatePgTarget.messages).
_CONNECTIONS: dict[tuple[str, int], psycopg.Connection] = {}
#: DSNs whose state has been observed (observe() called): their resets TRUNCATE, so that
#: rows are stored in insertion order, which observe() reads (`ORDER BY ctid`). A
#: response-only campaign (--observe none) never observes, and resets by DELETE in one
#: round trip: about 1 ms where TRUNCATE's new files take 40 to 50 ms on a loaded machine.
_OBSERVED: set[str] = set()
#: DSNs whose database has TICK_RECORDER (installed once, by the first reset).
_RECORDING: set[str] = set()
#: The retry timeout each DSN's database has now (saves a query per reset).
_RETRY_TIMEOUT: dict[str, int] = {}
#: Empties the tables, children first, and restarts the outbox's `seq` as TRUNCATE ...
#: RESTART IDENTITY would: one statement string, one round trip.
_DELETE_ALL = "; ".join([*(f"DELETE FROM resonate.{table}" for table in reversed(TABLES)),
                         "SELECT setval(pg_get_serial_sequence('resonate.outbox', 'seq'), 1, false)"])


def _connection(dsn: str, worker: int = 0) -> psycopg.Connection:
    conn = _CONNECTIONS.get((dsn, worker))
    if conn is not None and not conn.closed and conn.info.transaction_status == pq.TransactionStatus.IDLE:
        return conn
    if conn is not None:  # interrupted mid-query (a --timeout): stop that query, start afresh
        _drop(dsn, worker, conn)
    conn = _connect(dsn)
    _CONNECTIONS[dsn, worker] = conn
    return conn


def _drop(dsn: str, worker: int, conn: psycopg.Connection) -> None:
    pid = conn.info.backend_pid if not conn.closed else None
    try:
        conn.close()
    finally:
        _CONNECTIONS.pop((dsn, worker), None)
    if pid:
        with psycopg.connect(dsn, autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", [pid])


def _dequeue(conn: psycopg.Connection, kind: str, address: str, limit: int) -> list[tuple[Json, Json, Json]]:
    """(task id, version, promise) of each message one worker's dequeue at `address` took."""
    if kind == "execute":
        return [(task_id, version, None) for task_id, version in conn.execute(
            "SELECT task_id, version FROM resonate.dequeue_execute(%s, %s)", [address, limit])]
    return [(None, None, promise) for (promise,) in conn.execute(
        "SELECT promise FROM resonate.dequeue_unblock(%s, %s)", [address, limit])]


class ResonatePgTarget:
    #: Workers poll resonate-pg's outbox table, one row per OutboxEntry.key (`_emit_execute`
    #: upserts): a task dispatched twice before a worker polls is read once
    #: (duespec.targets.interface.TargetBase.messages_keyed).
    messages_keyed = True

    def __init__(self, dsn: str, *, own_connection: bool = False) -> None:
        """`own_connection`: a connection of this target's own (a stress client), opened
        on first use and closed by `close`; otherwise the campaign's shared one."""
        self.dsn = dsn
        self.own_connection = own_connection
        self._own: psycopg.Connection | None = None
        self.corr_ids = itertools.count(1)
        #: The envelope and answer of the last step, for divergence reports.
        self.last_exchange: str | None = None

    @property
    def conn(self) -> psycopg.Connection:
        if not self.own_connection:
            return _connection(self.dsn)
        if self._own is None or self._own.closed:
            self._own = _connect(self.dsn)
        return self._own

    # --- the Target interface ------------------------------------------------------------

    def reset(self, config: dict[str, Json]) -> None:
        unknown = set(config) - {"profile", "retry_timeout"}
        if unknown:
            raise TargetError(f"resonate-pg takes no config {sorted(unknown)}")
        retry = config.get("retry_timeout", SHIPPED_RETRY_TIMEOUT)
        if type(retry) is not int or not 1 <= retry <= MAX_DURATION:
            raise TargetError(f"retry_timeout must be an integer in [1, {MAX_DURATION}], got {retry!r}")
        conn = self.conn
        if self.dsn not in _RECORDING:
            with conn.transaction():
                conn.execute(TICK_RECORDER, prepare=False)
            _RECORDING.add(self.dsn)
        if self.dsn not in _OBSERVED:
            conn.execute(_DELETE_ALL, prepare=False)  # several statements: one implicit transaction
            if _RETRY_TIMEOUT.get(self.dsn) == retry:
                return
        with conn.transaction():
            if self.dsn in _OBSERVED:
                conn.execute("TRUNCATE " + ", ".join(f"resonate.{t}" for t in TABLES) + " RESTART IDENTITY CASCADE")
            _RETRY_TIMEOUT.pop(self.dsn, None)
            current = conn.execute("SELECT resonate._retry_timeout()").fetchone()[0]
            if current != retry:
                # resonate.sql's one configuration constant; redefined as the file defines it
                # (search_path pinned, as its section 11 pins every function).
                conn.execute(f"CREATE OR REPLACE FUNCTION resonate._retry_timeout() RETURNS bigint "
                             f"LANGUAGE sql IMMUTABLE SET search_path = resonate, pg_temp "
                             f"AS $$ SELECT {int(retry)}::bigint $$")
        _RETRY_TIMEOUT[self.dsn] = retry

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        if op in ENVIRONMENT_OPS:
            return self._environment(op, args, now)
        corr_id = f"duespec-{next(self.corr_ids)}"
        request = op_envelope(op, args, now, corr_id)
        body = json.dumps(request)
        try:
            answer = self.conn.execute("SELECT resonate.resonate_rpc(%s::jsonb)", [body]).fetchone()[0]
        except psycopg.Error as error:
            if isinstance(error, psycopg.OperationalError):
                raise
            self.last_exchange = f"resonate_rpc\n  request:  {body[:2000]}\n  raised:   {error}"
            return {"status": 500, "message": f"resonate_rpc raised {error.sqlstate}: {str(error).splitlines()[0]}"}
        self.last_exchange = f"resonate_rpc\n  request:  {body[:2000]}\n  response: {json.dumps(answer)[:2000]}"
        try:
            head = answer.get("head") if isinstance(answer, dict) else None
            status = head.get("status") if isinstance(head, dict) else None
            status, data = check_envelope(answer, request["kind"], corr_id, status)
            return op_response(op, status, data)
        except ProtocolViolation as error:
            raise TargetError(f"resonate_rpc broke the protocol on {op}: {error}\n{self.last_exchange}") from None

    def observe(self) -> dict[str, Json]:
        """docs/operations.md's state, from resonate-pg's tables.

        - promises: the rows as stored (no projection), with `callbacks` (the awaiter ids of
          its rows in `callbacks`) and `listeners` (the addresses of its rows in `listeners`);
        - tasks: the rows, `resumes` the awaited ids of its rows in `task_resumes`;
        - promiseTimeouts: what `process_promise_timeouts` would fire: every pending promise
          that is external (resonate-pg's `_promise_timed`), at its `timeout_at`;
        - taskTimeouts: what `process_task_timeouts` would fire: a pending task's retry
          (kind 0) and an acquired task's lease (kind 1), at its `timeout_at`;
        - scheduleTimeouts: every schedule at its `next_run_at`;
        - outbox: the rows by key, as the Lean's messages.

        The order of `callbacks`, `listeners` and `resumes` is the model's insertion order;
        resonate-pg's tables keep no order, so they are read in physical order (`ctid`),
        which is insertion order while rows are only inserted and deleted in a short run."""
        _OBSERVED.add(self.dsn)  # from the next reset on, rows keep insertion order
        conn = self.conn
        with conn.transaction():
            promises = conn.execute(
                "SELECT id, state, param_headers, param_data, value_headers, value_data, tags, timeout_at,"
                " created_at, settled_at, external FROM resonate.promises").fetchall()
            tasks = conn.execute("SELECT id, state, version, ttl, pid, timeout_at FROM resonate.tasks").fetchall()
            resumes = conn.execute("SELECT task_id, awaited_id FROM resonate.task_resumes ORDER BY ctid").fetchall()
            callbacks = conn.execute("SELECT awaited_id, awaiter_id FROM resonate.callbacks ORDER BY ctid").fetchall()
            listeners = conn.execute("SELECT awaited_id, address FROM resonate.listeners ORDER BY ctid").fetchall()
            schedules = conn.execute(
                "SELECT id, cron, promise_id, promise_timeout, promise_param_headers, promise_param_data,"
                " promise_tags, next_run_at, last_run_at, created_at FROM resonate.schedules").fetchall()
            outbox = conn.execute("SELECT key, kind, address, task_id, version, promise FROM resonate.outbox").fetchall()
        awaiters: dict[str, list[str]] = {}
        for awaited, awaiter in callbacks:
            awaiters.setdefault(awaited, []).append(awaiter)
        addresses: dict[str, list[str]] = {}
        for awaited, address in listeners:
            addresses.setdefault(awaited, []).append(address)
        buffered: dict[str, list[str]] = {}
        for task_id, awaited in resumes:
            buffered.setdefault(task_id, []).append(awaited)
        promises.sort(key=lambda row: row[0])
        tasks.sort(key=lambda row: row[0])
        schedules.sort(key=lambda row: row[0])
        outbox.sort(key=lambda row: row[0])
        return {
            "promises": [{
                "id": id, "state": state, "param": {"headers": ph, "data": pd}, "value": {"headers": vh, "data": vd},
                "tags": tags, "timeoutAt": timeout_at, "createdAt": created_at, "settledAt": settled_at,
                "callbacks": awaiters.get(id, []), "listeners": addresses.get(id, []),
            } for id, state, ph, pd, vh, vd, tags, timeout_at, created_at, settled_at, _ in promises],
            "tasks": [{"id": id, "state": state, "version": version, "resumes": buffered.get(id, []),
                       "ttl": ttl, "pid": pid} for id, state, version, ttl, pid, _ in tasks],
            "schedules": [{
                "id": id, "cron": cron, "promiseId": promise_id, "promiseTimeout": promise_timeout,
                "promiseParam": {"headers": ph, "data": pd}, "promiseTags": tags, "nextRunAt": next_run_at,
                "lastRunAt": last_run_at, "createdAt": created_at,
            } for id, cron, promise_id, promise_timeout, ph, pd, tags, next_run_at, last_run_at, created_at
                in schedules],
            "promiseTimeouts": [{"id": row[0], "timeout": row[7]} for row in promises
                                if row[1] == "pending" and row[10]],
            "taskTimeouts": sorted(({"id": id, "kind": TASK_TIMEOUT_KIND[state], "timeout": timeout_at}
                                    for id, state, _, _, _, timeout_at in tasks
                                    if state in TASK_TIMEOUT_KIND and timeout_at is not None),
                                   key=lambda t: (t["id"], t["kind"])),
            "scheduleTimeouts": [{"id": row[0], "timeout": row[7]} for row in schedules],
            "outbox": [{"address": address,
                        "message": ({"kind": "execute", "taskId": task_id, "version": version} if kind == "execute"
                                    else {"kind": "unblock", "promise": promise})}
                       for _, kind, address, task_id, version, promise in outbox],
        }

    def messages(self) -> list[Json]:
        """What resonate-pg's workers have been handed since the last call, in the order each
        worker receives it: the duespec Target hook `messages` (docs/protocol.md, "messages").

        A worker polling an address calls `resonate.dequeue_execute(address)` or
        `resonate.dequeue_unblock(address)` (the `resonate-pg` connector does, woken by the
        address's NOTIFY channel); this calls them, for every address the outbox holds a row
        for, as two workers of a group polling it at once would: the first takes one message
        in a transaction still open while the second takes the rest. A dequeue must skip the
        rows another worker holds (resonate.sql's `FOR UPDATE SKIP LOCKED`): one that waits
        for them lets a stalled worker hold back every message of its address, and fails
        here with `lock_timeout` after SECOND_WORKER_LOCK_TIMEOUT. The dequeues are
        destructive: a message read here is no longer in the outbox, as after any worker's
        read. No worker of anyone else's can be robbed, since the target's database is the
        campaign's alone (it is emptied at each run), but `observe` reads the outbox too: so
        duespec asks for messages only where it does not observe (--observe none). An
        http(s) address is pushed by resonate-pg's trigger as the row is written (pg_net or
        pgsql-http), and never dequeued; its rows, which stay in the outbox where neither is
        installed, are taken here in the order written, as a push would have sent them."""
        conn = self.conn
        sent: list[Json] = []
        with conn.transaction():
            places = conn.execute("SELECT kind, address FROM resonate.outbox GROUP BY kind, address"
                                  " ORDER BY min(seq)").fetchall()
            for kind, address in places:
                if address.startswith(("http://", "https://")):
                    rows = conn.execute(
                        "WITH d AS (DELETE FROM resonate.outbox WHERE kind = %s AND address = %s"
                        " RETURNING task_id, version, promise, seq) SELECT task_id, version, promise FROM d"
                        " ORDER BY seq", [kind, address]).fetchall()
                else:
                    rows = _dequeue(conn, kind, address, 1)
                    if rows:
                        rows += self._second_worker_polls(kind, address)
                sent += [{"address": address,
                          "message": ({"kind": "execute", "taskId": task_id, "version": version} if kind == "execute"
                                      else {"kind": "unblock", "promise": promise})}
                         for task_id, version, promise in rows]
        return sent

    def _second_worker_polls(self, kind: str, address: str) -> list[tuple[Json, Json, Json]]:
        other = _connection(self.dsn, worker=1)
        try:
            with other.transaction():
                other.execute(f"SET LOCAL lock_timeout = '{SECOND_WORKER_LOCK_TIMEOUT}'")
                return _dequeue(other, kind, address, DEQUEUE_ALL)
        except psycopg.errors.LockNotAvailable:
            raise TargetError(f"a second worker polling {address} waited {SECOND_WORKER_LOCK_TIMEOUT} for the "
                              f"first one's uncommitted dequeue (lock_timeout): resonate.dequeue_{kind} must skip "
                              f"the rows another worker holds") from None

    def close(self) -> None:
        """Closes a connection of its own; the shared one stays for the campaign's next
        target (see _CONNECTIONS)."""
        if self._own is not None:
            self._own.close()
            self._own = None

    # --- the environment -----------------------------------------------------------------

    def _environment(self, op: str, args: Json, now: Json) -> dict[str, Json]:
        problem = _environment_problem(op, args, now)
        if problem:
            return {"status": 400, "message": problem}
        conn = self.conn
        if op == "tick":
            return self._tick(conn, now)
        with conn.transaction():
            function = "_on_schedule_timeout" if op == "schedule.timeout" else "_on_promise_timeout"
            if op == "promise.timeout":
                # docs/operations.md: the environment delivering the timeout, which does nothing
                # before timeoutAt. resonate-pg's driver (process_timeouts) only ever calls it
                # once due; `_on_promise_timeout` itself settles whenever it is called.
                due = conn.execute("SELECT timeout_at <= %s FROM resonate.promises WHERE id = %s",
                                   [now, args["id"]]).fetchone()
                if due is not None and not due[0]:
                    self.last_exchange = f"promise {args['id']!r} not due at {now}: _on_promise_timeout not called"
                    return {"status": 200}
            conn.execute(f"SELECT resonate.{function}(%s, %s::bigint)", [args["id"], now])
            self.last_exchange = f"SELECT resonate.{function}({args['id']!r}, {now})"
            return {"status": 200}


    def _tick(self, conn: psycopg.Connection, now: int) -> dict[str, Json]:
        """Passes of process_timeouts(now) until one fires nothing (at most TICK_PASSES), and
        what they fired (TICK_RECORDER's notes), in order.

        The spec's tick fires every timeout due at its `now` (docs/operations.md), among
        them those of the occurrences its own catch-up creates already due; one pass of
        process_timeouts times promises out before it fires schedules, so it leaves those
        to its next pass (5 s later under pg_cron: a timeout fired late, which the spec
        allows). Each pass is the driver as shipped, in a transaction of its own."""
        fired: list[Json] = []
        passes = []
        for _ in range(TICK_PASSES):
            with conn.transaction():
                conn.execute("SELECT set_config('duespec_tick.on', 'on', true), "
                             "set_config('duespec_tick.fired', '', true)")
                count = conn.execute("SELECT resonate.process_timeouts(%s::bigint)", [now]).fetchone()[0]
                notes = conn.execute("SELECT current_setting('duespec_tick.fired')").fetchone()[0]
            this_pass = [json.loads(line) for line in notes.splitlines()]
            if len(this_pass) > count:
                raise TargetError(f"process_timeouts({now}) selected {count} timeouts, but fired "
                                  f"{len(this_pass)}: {this_pass}")
            passes.append(f"SELECT resonate.process_timeouts({now}) -> {count}, fired {this_pass}")
            if not this_pass:
                break
            fired += this_pass
        self.last_exchange = "; ".join(passes)
        return {"status": 200, "fired": fired}


def _environment_problem(op: str, args: Json, now: Json) -> str | None:
    if type(now) is not int or not 0 <= now <= MAX_TIME:
        return f"now must be an integer in [0, {MAX_TIME}], got {json.dumps(now)[:40]}"
    if not isinstance(args, dict):
        return f"args must be an object, got {type(args).__name__}"
    expected = set() if op == "tick" else {"id"}
    if set(args) != expected:
        return f"{op} takes {sorted(expected)}, got {sorted(args)}"
    if op != "tick" and (not isinstance(args["id"], str) or args["id"] == ""):
        return "id must be a non-empty string"
    if op != "tick":
        try:
            args["id"].encode("utf-8")
        except UnicodeEncodeError:
            return "id is not Unicode text"
    return None

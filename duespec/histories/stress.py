"""`duespec stress schedules --target URL`: many clients at once against one server, then a verdict.

A server's bugs under concurrency (a lost update, a read of stale state, a lock held too
briefly) show only when calls really overlap on the same state. So N clients run at once
(asyncio, one aiohttp session), each drawing its calls from small shared pools of ids,
so that the same promise is settled twice, the same task version acquired by two
workers, a schedule created and deleted while it fires. Every op of the system is sent
(WEIGHTS), the task protocol most. Workers also share what they have seen (a task's
current version, who holds it, which tasks a tick offered again), as real workers learn
it from the server, so their acquires, heartbeats and fulfills aim at the version that
matters (and sometimes at a stale or a future one), and a task whose lease a tick fired
is acquired again at once, as a worker that receives its execute message would.

Every call is recorded as it returns (duespec.histories.format's writer), with its
interval on this process's clocks; then `duespec linearize` judges the history. Exit
codes are linearize's: 0 linearizable, 1 not, 2 bad usage or an unusable target, 3
unknown (the budget ran out). The guide is docs/linearize.md, "duespec stress".

Clocks: `--clock pinned` stamps every request from one shared monotone clock with
`resonate:debug_time` (each request moves it on by --pin-step-ms; with --ticks clients
also send debug.tick, so timeouts and schedules fire in a short run); `--clock real` sends no pin,
and the server reads its own clock (`duespec serve --clock real` fires timeouts itself).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duespec.histories.format import Event, History, HistoryHeader, HistoryWriter

Json = Any

#: Where the pinned clock starts: 2025-01-01T00:00:00Z less 20 s, so that a short run
#: crosses a minute boundary and minutely schedules fire.
PIN_START_MS = 1_735_689_600_000 - 20_000
DEFAULT_PIN_STEP_MS = 100
#: Seconds one call may take before it is given up on (recorded with outcome unknown).
CALL_TIMEOUT = 10.0
#: Calls in a row that get no answer at all (the connection refused or broken, or timed
#: out) after which the target is taken for dead: the run ends, "target unusable", exit 2.
DEAD_AFTER = 20
VALUE = {"headers": {}, "data": None}
#: The largest run: every event is held in memory for the check.
MAX_OPS = 200_000
MAX_CLIENTS = 256
#: With --ticks, the share of calls that are debug.tick.
TICK_SHARE = 0.05
#: With --ticks, the server's retry timeout (ms): short, so that a task nobody acquires is
#: offered again within a few calls, and overlapping timeout passes meet on due retries.
TICKS_RETRY_TIMEOUT = 1000
#: Seconds for the check of a stress run (and again for its shrinking).
DEFAULT_STRESS_BUDGET = 10.0


@dataclass
class Shared:
    """What the clients share: the pinned clock and what workers have seen of tasks."""

    clock: str
    #: Pinned clock only: the share of calls that are debug.tick (0: none).
    ticks: float = 0.0
    now: int = PIN_START_MS
    step_ms: int = DEFAULT_PIN_STEP_MS
    rng: random.Random = field(default_factory=random.Random)
    versions: dict[str, int] = field(default_factory=dict)
    #: Each pool slot's generation: once a task of a slot has been acquired, or its promise
    #: is no longer pending, the workers move on to a fresh id for that slot, so there is
    #: always a pending task to contend for (a slot's id is k<slot>-<generation>: no dot,
    #: since a schedule id `s<id>` may hold none, docs/operations.md "Validation").
    generations: dict[int, int] = field(default_factory=dict)
    #: Who holds each task the workers have seen acquired (its pid), for heartbeats.
    holders: dict[str, str] = field(default_factory=dict)
    #: Tasks offered again (a tick fired their lease or retry): a worker that receives the
    #: execute message acquires it, so these are acquired again soon, at the version known.
    offered: list[str] = field(default_factory=list)
    #: Promises the workers have seen created: a suspend or a callback awaits one of them.
    created: set[str] = field(default_factory=set)

    def id_of(self, slot: int) -> str:
        return f"k{slot}-{self.generations.get(slot, 0)}"

    def move_on(self, id: str) -> None:
        """The task of `id` was won or its promise ended: its slot moves to a fresh id."""
        head, _, generation = id.partition("-")
        if head.startswith("k") and head[1:].isdigit() and generation.isdigit():
            slot = int(head[1:])
            if self.generations.get(slot, 0) == int(generation):
                self.generations[slot] = int(generation) + 1

    def pin(self) -> int | None:
        if self.clock != "pinned":
            return None
        self.now += self.rng.randrange(0, 2 * self.step_ms + 1)
        return self.now


#: The calls a client draws, by weight: the task protocol that contends on one id most,
#: every other op of the system some of the time (docs/operations.md), so that each meets
#: the states the others leave (a heartbeat on a lease a tick is firing, a suspend on a
#: task another worker acquired, a halt during a fulfill).
WEIGHTS = {
    "promise.create": 4, "promise.get": 1, "promise.settle": 1, "task.acquire": 5, "task.get": 1,
    "task.fulfill": 1, "task.release": 1, "task.heartbeat": 1, "task.suspend": 1, "task.fence": 0.4,
    "task.create": 0.4, "task.halt": 0.2, "task.continue": 0.2, "promise.register_callback": 0.4,
    "promise.register_listener": 0.2, "promise.search": 0.1, "task.search": 0.1, "schedule.search": 0.1,
}
#: With --ticks, the share of acquires that take a task a tick offered again (see Shared.offered).
REACQUIRE_SHARE = 0.5


def _version(rng: random.Random, shared: Shared, id: str) -> int:
    """The version workers last saw (most of the time), else a stale or a future one."""
    known = shared.versions.get(id, 0)
    return known if rng.random() < 0.85 else rng.choice((known - 1 if known else 0, known + 1, 0, 2))


def draw(rng: random.Random, shared: Shared, keys: int, pid: str, now_ms: int) -> tuple[str, dict[str, Json]]:
    """One call from the pools, weighted toward the ones that contend on a task."""
    slot = rng.randrange(keys)
    id = shared.id_of(slot)
    # The promise a callback, a suspend or a fence's settle names beside `id`: `id`'s own
    # companion (a task awaiting its own promise is no real state). Always the same one, so a
    # call naming two ids joins only `id`'s family: a companion drawn from the other slots
    # would chain the slots' generations into one part too large to check (linearize
    # compositionality: parts are cut by the keys their calls share).
    other = f"{id}-f"
    roll = rng.random()
    if roll < shared.ticks:
        return "tick", {}
    if roll < shared.ticks + 0.10:
        kind = rng.choice(("schedule.create", "schedule.get", "schedule.delete"))
        if kind == "schedule.create":
            # Occurrences without a target: no task, so no retry that a catch-up makes due in
            # the tick that creates it (a pass that leaves it to the next, as resonate-pg's
            # does, differs there in sequence, docs/findings.md: not a race).
            return kind, {"id": "s" + id, "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}",
                          "promiseTimeout": 60_000, "promiseParam": VALUE, "promiseTags": {}}
        return kind, {"id": "s" + id}
    kind = rng.choices(list(WEIGHTS), list(WEIGHTS.values()))[0]
    held = [task for task, holder in shared.holders.items() if holder == pid]
    if kind in ("task.fulfill", "task.release", "task.suspend", "task.fence") and held and rng.random() < 0.7:
        # A worker finishes, releases or suspends what it holds; it suspends on a promise it
        # created (as an SDK does), so a held task whose companion exists first.
        ready = [task for task in held if f"{task}-f" in shared.created] if kind == "task.suspend" else []
        # The latest acquired most often: an older lease has likely lapsed.
        pool = ready if ready and rng.random() < 0.8 else held
        id = pool[-1] if rng.random() < 0.6 else rng.choice(pool)
        other = f"{id}-f"
    if kind in ("task.suspend", "promise.register_callback") and other not in shared.created and rng.random() < 0.7:
        kind, id = "promise.create", other  # the promise to await, created first
    if kind == "promise.create":
        # Every promise has a target, as an SDK's do: callbacks and suspensions may await it.
        return kind, {"id": id, "timeoutAt": now_ms + rng.choice((300, 1_000, 10_000, 600_000)), "param": VALUE,
                      "tags": {"resonate:target": "poll://any"}}
    if kind in ("promise.get", "task.get", "task.halt", "task.continue"):
        return kind, {"id": id}
    if kind == "promise.settle":
        return kind, {"id": id, "state": rng.choice(("resolved", "rejected")), "value": VALUE}
    if kind == "promise.register_callback":
        return kind, {"awaited": other, "awaiter": id}
    if kind == "promise.register_listener":
        return kind, {"awaited": id, "address": f"poll://listeners@{pid}"}
    if kind in ("promise.search", "task.search", "schedule.search"):
        return kind, {"promise.search": {"state": "pending"}, "task.search": {"state": "acquired"},
                      "schedule.search": {}}[kind]
    if kind == "task.create":
        return kind, {"pid": pid, "ttl": rng.choice((300, 5_000)),
                      "action": {"id": id, "timeoutAt": now_ms + rng.choice((1_000, 600_000)), "param": VALUE,
                                 "tags": {"resonate:target": "poll://any"}}}
    if kind == "task.acquire" and shared.offered and rng.random() < REACQUIRE_SHARE:
        id = shared.offered.pop(rng.randrange(len(shared.offered)))
        return kind, {"id": id, "version": shared.versions.get(id, 0), "pid": pid, "ttl": rng.choice((300, 60_000))}
    if kind == "task.heartbeat":
        mine = held or [id]
        # Two at once now and then: each joins the two tasks' parts.
        chosen = rng.sample(mine, min(len(mine), rng.choice((1, 1, 1, 2))))
        return kind, {"pid": pid if rng.random() < 0.8 else rng.choice([*shared.holders.values(), pid]),
                      "tasks": [{"id": task, "version": _version(rng, shared, task)} for task in chosen]}
    version = _version(rng, shared, id)
    if kind == "task.acquire":
        return kind, {"id": id, "version": version, "pid": pid, "ttl": rng.choice((300, 5_000))}
    if kind == "task.fulfill":
        return kind, {"id": id, "version": version, "action": {"id": id, "state": "resolved", "value": VALUE}}
    if kind == "task.suspend":
        return kind, {"id": id, "version": version,
                      "actions": [{"awaited": other, "awaiter": id}]}
    if kind == "task.fence":
        # The fenced create has a target like every promise here: one without (internal) may
        # not be awaited on resonate-pg (422, examples/resonate-pg/declared.toml), and a
        # suspend on it would show that known refusal, not a race.
        action = ({"kind": "create", "id": other, "timeoutAt": now_ms + 10_000, "param": VALUE,
                   "tags": {"resonate:target": "poll://any"}}
                  if rng.random() < 0.5 else
                  {"kind": "settle", "id": other, "state": "resolved", "value": VALUE})
        return kind, {"id": id, "version": version, "action": action}
    return kind, {"id": id, "version": version}


def learn(shared: Shared, op: str, response: dict[str, Json] | None) -> None:
    """What a worker tells the others: a task's version and holder (until it is let go),
    a task won, a promise ended, a task a tick offered again."""
    response = response or {}
    task, promise = response.get("task"), response.get("promise")
    if isinstance(task, dict) and isinstance(task.get("id"), str) and type(task.get("version")) is int:
        shared.versions[task["id"]] = task["version"]
        if op in ("task.acquire", "task.create") and response.get("status") == 200:
            if isinstance(task.get("pid"), str):
                shared.holders.pop(task["id"], None)  # the latest acquired last
                shared.holders[task["id"]] = task["pid"]
            shared.move_on(task["id"])
        elif task.get("state") not in (None, "acquired"):
            shared.holders.pop(task["id"], None)  # released, suspended, done: held no more
    if isinstance(promise, dict) and isinstance(promise.get("id"), str):
        shared.created.add(promise["id"])
    if isinstance(promise, dict) and isinstance(promise.get("id"), str) and promise.get("state") != "pending":
        shared.move_on(promise["id"])
        shared.holders.pop(promise["id"], None)
    if op == "tick" and isinstance(response.get("fired"), list):
        for entry in response["fired"]:
            if isinstance(entry, dict) and entry.get("kind") in ("lease", "retry") and isinstance(entry.get("id"), str):
                shared.holders.pop(entry["id"], None)
                if entry["id"] not in shared.offered:
                    shared.offered.append(entry["id"])


class StressError(Exception):
    """A target that cannot be used (not listening, refuses a reset): exit 2."""


async def _post(session: Any, url: str, body: dict[str, Json]) -> tuple[int, Json]:
    async with session.post(url, json=body) as answer:
        return answer.status, await answer.json(content_type=None)


async def reset_target(session: Any, url: str, config: dict[str, Json]) -> None:
    from duespec.wire.envelope import PROTOCOL_VERSION

    body = {"kind": "debug.reset", "head": {"corrId": "reset", "version": PROTOCOL_VERSION}, "data": config}
    try:
        status, answer = await _post(session, url, body)
    except Exception as error:  # aiohttp's errors, a refused connection, a non-JSON answer
        raise StressError(f"cannot reach {url}: {type(error).__name__}: {error}") from None
    if status != 200:
        raise StressError(f"{url} refused debug.reset ({status}: {str(answer)[:200]}); stress needs a server it can "
                          f"start empty (duespec serve, or a Resonate server in debug mode)")


async def run_clients(url: str, *, clients: int, ops: int, clock: str, seed: int, keys: int,
                      writer: HistoryWriter | None, step_ms: int = DEFAULT_PIN_STEP_MS,
                      config: dict[str, Json] | None = None, ticks: bool = False) -> int:
    """N clients, `ops` calls in all; each call written to `writer` as it returns (None: the
    same loop without recording, for the bench). Returns the number of calls made."""
    import aiohttp

    from duespec.wire.envelope import (
        DEBUG_TIME, KIND_OF_OP, PROTOCOL_VERSION, STRICT, ProtocolViolation, args_to_wire, check_envelope,
        op_response,
    )

    shared = Shared(clock, TICK_SHARE if ticks and clock == "pinned" else 0.0, step_ms=step_ms,
                    rng=random.Random(seed))
    remaining = [ops]
    counter = [0]
    #: calls in a row with no answer, and the last one's error: DEAD_AFTER of them end the run
    unanswered: list[Any] = [0, None]
    connector = aiohttp.TCPConnector(limit=clients + 1)
    timeout = aiohttp.ClientTimeout(total=CALL_TIMEOUT)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        await reset_target(session, url, config or {"profile": "lean", "retry_timeout": 5000})

        async def client(n: int) -> None:
            rng = random.Random(seed * 1_000_003 + n)
            name = f"c{n}"
            while remaining[0] > 0 and unanswered[0] < DEAD_AFTER:
                remaining[0] -= 1
                counter[0] += 1
                corr = f"{name}.{counter[0]}"
                now = shared.pin()
                op, args = draw(rng, shared, keys, name, now if now is not None else time.time_ns() // 1_000_000)
                kind = KIND_OF_OP[op]
                head: dict[str, Json] = {"corrId": corr, "version": PROTOCOL_VERSION, STRICT: True}
                if now is not None:
                    head[DEBUG_TIME] = now
                data = {**args, "time": now} if op == "tick" else args_to_wire(op, args, corr)
                body = {"kind": kind, "head": head, "data": data}
                call_ns, call_ms = time.monotonic_ns(), time.time_ns() // 1_000_000
                response: dict[str, Json] | None
                try:
                    status, answer = await _post(session, url, body)
                    wire_status, wire_data = check_envelope(answer, kind, corr, status)
                    response, outcome = op_response(op, wire_status, wire_data), "ok"  # a 5xx: judge()'s
                    unanswered[0] = 0
                except (aiohttp.ClientError, asyncio.TimeoutError) as error:
                    response, outcome = None, "unknown"
                    unanswered[0], unanswered[1] = unanswered[0] + 1, error
                except (ProtocolViolation, ValueError):
                    response, outcome = None, "unknown"
                return_ns, return_ms = time.monotonic_ns(), time.time_ns() // 1_000_000
                learn(shared, op, response)
                if writer is not None:
                    writer.write(Event(name, op, args, call_ns, return_ns, call_ms, return_ms, outcome, response,
                                       now))

        await asyncio.gather(*(client(n) for n in range(clients)))
    if unanswered[0] >= DEAD_AFTER:
        error = unanswered[1]
        raise StressError(f"{url} stopped answering: {DEAD_AFTER} calls in a row got no answer (the last: "
                          f"{type(error).__name__}{': ' + str(error)[:200] if str(error) else ''}), after "
                          f"{ops - remaining[0]:,} of {ops:,} calls")
    return ops


def in_process_factory(spec: str) -> Any:
    """The factory `module:factory` names, if it declares `concurrent_clients = True`; else
    StressError saying what to declare. The factory is wrapped as every in-process target
    is (duespec.targets.resolve): whatever its code raises comes out as a TargetError."""
    from duespec.systems import get_system
    from duespec.targets import resolve as targets

    try:
        factory = targets.resolve(get_system("schedules"), spec)
    except targets.TargetSpecError as error:
        raise StressError(str(error)) from None
    if not targets.declares_concurrent_clients(factory):
        raise StressError(f"{spec} does not declare `{targets.CONCURRENT_CLIENTS} = True`: stress drives one target per "
                          f"client from many threads at once, so an in-process factory must say that each target "
                          f"it makes is a client of its own, safe beside the others (docs/linearize.md)")
    return factory


def run_threads(factory: Any, *, clients: int, ops: int, seed: int, keys: int, writer: HistoryWriter | None,
                step_ms: int = DEFAULT_PIN_STEP_MS, config: dict[str, Json] | None = None,
                ticks: bool = False) -> int:
    """N threads, one target each from `factory`, `ops` calls in all on the pinned clock.

    As run_clients, but a call is `target.step(op, args, now)`. The pin and the call
    instant are taken under one lock, so pins rise in call order as over HTTP; a call
    whose step raises (a dropped connection, a SQL error escaping the target) is recorded
    with its outcome unknown. A target that says it is unusable stops the run."""
    import threading

    from duespec.targets.interface import TargetError, close_quietly
    from duespec.targets.resolve import guarded

    made: list[Any] = []
    try:
        for _ in range(clients):
            made.append(guarded("the factory", factory))
        made[0].reset(config or {"profile": "lean", "retry_timeout": 5000})
    except TargetError as error:
        for target in made:
            close_quietly(target)
        raise StressError(f"{error}") from None
    shared = Shared("pinned", TICK_SHARE if ticks else 0.0, step_ms=step_ms, rng=random.Random(seed))
    lock = threading.Lock()
    remaining = [ops]
    unusable: list[TargetError] = []
    raised: list[TargetError] = []

    def client(n: int) -> None:
        rng = random.Random(seed * 1_000_003 + n)
        name, target = f"c{n}", made[n]
        while True:
            with lock:
                if remaining[0] <= 0 or unusable:
                    return
                remaining[0] -= 1
                now = shared.pin()
                assert now is not None
                op, args = draw(rng, shared, keys, name, now)
                call_ns, call_ms = time.monotonic_ns(), time.time_ns() // 1_000_000
            response: dict[str, Json] | None
            try:
                response, outcome = target.step(op, args, now), "ok"  # a 5xx is judge()'s to read
            except TargetError as error:
                (unusable if error.unusable else raised).append(error)
                response, outcome = None, "unknown"
            if outcome == "unknown":
                response = None
            return_ns, return_ms = time.monotonic_ns(), time.time_ns() // 1_000_000
            with lock:
                learn(shared, op, response)
            if writer is not None:
                writer.write(Event(name, op, args, call_ns, return_ns, call_ms, return_ms, outcome, response, now))

    threads = [threading.Thread(target=client, args=(n,), name=f"stress-c{n}", daemon=True) for n in range(clients)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for target in made:
            close_quietly(target)
    if unusable:
        raise StressError(f"the target became unusable: {unusable[0]}")
    if raised:
        first = str(raised[0]).splitlines()[0][:300]
        print(f"duespec stress: {len(raised)} calls raised in the target (recorded with their outcome unknown); "
              f"the first: {first}", file=sys.stderr, flush=True)
    return ops


def is_in_process(target: str) -> bool:
    """`package.module:factory`, as opposed to an http(s) URL, `serve` or anything else."""
    return re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*", target) is not None


def start_serve(clock: str, db: str, profile: str, tick_ms: int | None, unsafe: bool) -> Any:
    """`duespec serve` in a thread of this process, on a free loopback port."""
    from duespec.wire.serve import ServerThread, WireServer

    return ServerThread(WireServer(db, profile=profile, clock_mode=clock, tick_ms=tick_ms,
                                   unsafe_drop_acquire_lock=unsafe))


def stress(*, target: str, clients: int, ops: int, clock: str, seed: int, keys: int, output: Path,
           profile: str = "lean", db: str = ":memory:", tick_ms: int | None = None, unsafe: bool = False,
           step_ms: int = DEFAULT_PIN_STEP_MS, ticks: bool = False) -> History:
    """Drive the target and return the recorded history (also written to `output`)."""
    import sqlite3

    from duespec.exits import UsageError
    from duespec.histories.format import read_history
    from duespec.impl.schedules_sql import StoreError

    config = {"profile": profile, "retry_timeout": TICKS_RETRY_TIMEOUT if ticks else 5000}
    header = HistoryHeader("schedules", clock, config, "duespec stress",
                           {"seed": seed, "clients": clients, "ops": ops, "keys": keys})
    if is_in_process(target):
        factory = in_process_factory(target)
        with HistoryWriter(output, header) as writer:
            run_threads(factory, clients=clients, ops=ops, seed=seed, keys=keys, writer=writer, step_ms=step_ms,
                        config=config, ticks=ticks)
        return read_history(output)
    try:
        served = start_serve(clock, db, profile, tick_ms, unsafe) if target == "serve" else None
    except (ValueError, OSError, sqlite3.Error, StoreError) as error:
        raise UsageError(f"--db {db[:200]!r}: cannot open the store: {error}") from None
    try:
        url = served.url if served is not None else target
        with HistoryWriter(output, header) as writer:
            asyncio.run(run_clients(url, clients=clients, ops=ops, clock=clock, seed=seed, keys=keys,
                                    writer=writer, step_ms=step_ms, config=config, ticks=ticks))
    finally:
        if served is not None:
            served.stop()
    return read_history(output)


def main(args: argparse.Namespace) -> int:
    from duespec.exits import UsageError
    from duespec.histories.format import HistoryError
    from duespec.histories.linearize_command import judge, read_declared
    from duespec.outputs import check_output

    if not 1 <= args.clients <= MAX_CLIENTS:
        raise UsageError(f"--clients must lie in [1, {MAX_CLIENTS}], got {args.clients}")
    if not 1 <= args.ops <= MAX_OPS:
        raise UsageError(f"--ops must lie in [1, {MAX_OPS:,}], got {args.ops}")
    if not 1 <= args.keys <= 1000:
        raise UsageError(f"--keys must lie in [1, 1000], got {args.keys}")
    if not 0 <= args.pin_step_ms <= 86_400_000:
        raise UsageError(f"--pin-step-ms must lie in [0, 86400000], got {args.pin_step_ms}")
    if args.db != ":memory:" and (os.path.exists(args.db) and not os.path.isfile(args.db)
                                  or not os.path.isdir(os.path.dirname(os.path.abspath(args.db)))):
        raise UsageError(f"--db {args.db[:200]!r}: not a regular file in an existing folder (the SQLite store, "
                         f"an existing one or a new name)")
    in_process = is_in_process(args.target)
    if args.target != "serve" and not args.target.startswith(("http://", "https://")) and not in_process:
        raise UsageError(f"--target must be an http(s) URL, `serve` or module:factory, got {args.target[:200]!r}")
    if in_process and args.clock != "pinned":
        raise UsageError("an in-process target (module:factory) takes --clock pinned only: its step is given "
                         "`now`, so there is no clock of its own to read")
    if args.target != "serve" and (args.db != ":memory:" or args.unsafe_drop_acquire_lock or args.tick_ms):
        raise UsageError("--db and --tick-ms are for --target serve (the in-process server)")
    if args.ticks and args.clock != "pinned":
        raise UsageError("--ticks is for --clock pinned (a real-clock server fires its own timeouts)")
    if args.tick_ms is not None and not 1 <= args.tick_ms <= 60_000:
        raise UsageError(f"--tick-ms must lie in [1, 60000], got {args.tick_ms}")
    for what, path in (("-o", args.output), ("--html", args.html)):
        if path:
            check_output(path, what=what)
    declared = read_declared(args.declared, args.system)
    keep = args.output is not None
    if keep:
        output = Path(args.output)
        if output.exists():
            raise UsageError(f"-o {args.output}: the file exists; stress writes a new history")
    else:
        output = Path(tempfile.mkdtemp(prefix="duespec-stress-")) / "history.ndjson"
    started = time.perf_counter()
    try:
        history = stress(target=args.target, clients=args.clients, ops=args.ops, clock=args.clock, seed=args.seed,
                         keys=args.keys, output=output, profile=args.profile, db=args.db, tick_ms=args.tick_ms,
                         unsafe=args.unsafe_drop_acquire_lock, step_ms=args.pin_step_ms, ticks=args.ticks)
    except StressError as error:
        kept = f"; the history up to there: {output}" if output.exists() and output.stat().st_size else ""
        raise UsageError(f"target unusable: {error}{kept}") from None
    except HistoryError as error:
        raise UsageError(f"the recorded history does not read back: {error}") from None
    unknown = sum(1 for e in history.events if e.outcome == "unknown")
    print(f"duespec stress: {len(history.events):,} calls by {args.clients} clients in "
          f"{time.perf_counter() - started:.1f} s ({args.clock} clock"
          f"{f', {unknown} with outcome unknown' if unknown else ''}); history {output}", flush=True)
    code = judge(history, source=str(output), profile=None, budget=args.budget, max_timer_lag=args.max_timer_lag,
                 html_path=args.html, allow_unanswered=args.allow_unanswered, declared=declared)
    if not keep and code == 0:
        output.unlink()
        os.rmdir(output.parent)
    return code


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from duespec.histories.linearize import DEFAULT_MAX_TIMER_LAG
    from duespec.histories.linearize_command import _non_negative, add_allow_unanswered, add_declared, budget_seconds

    parser = subparsers.add_parser(
        "stress", help="drive a server with many concurrent clients and check the history",
        description="Run N concurrent clients against a Resonate server, drawing calls from small shared "
                    "id pools so they contend; record the history (docs/histories.md) and judge it with "
                    "duespec linearize. Exit 0 linearizable, 1 not (counterexample printed) or calls answered "
                    "5xx or lost, 2 bad usage or an unusable target (one that stops answering), 3 unknown "
                    "(the budget ran out). See docs/linearize.md.",
        epilog="example: duespec stress schedules --target serve --clients 8 --ops 400 --seed 1")
    parser.add_argument("system", choices=("schedules",))
    parser.add_argument("--target", required=True,
                        help="the server's URL (it must accept debug.reset), `serve` for duespec serve "
                             "started in this process on a free loopback port, or module:factory, an in-process "
                             "target whose factory declares concurrent_clients = True (one target per client, "
                             "each driven by a thread of its own; pinned clock)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument("--ops", type=int, default=400, help="calls in all (default 400)")
    parser.add_argument("--keys", type=int, default=3, help="ids in the shared pool (default 3: real contention)")
    parser.add_argument("--clock", choices=("pinned", "real"), default="pinned",
                        help="pinned (default): every request carries resonate:debug_time from one shared "
                             "clock; real: no pin, the server reads its own clock")
    parser.add_argument("--pin-step-ms", type=int, default=DEFAULT_PIN_STEP_MS, metavar="MS",
                        help=f"pinned clock: each request moves it on by 0..2*MS ms (default {DEFAULT_PIN_STEP_MS})")
    parser.add_argument("--ticks", action="store_true",
                        help=f"pinned clock: also send debug.tick ({TICK_SHARE * 100:.0f}%% of calls) so that timeouts "
                             f"and schedules fire; a tick reads every id, so the check is one search (slower)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the clients' draws (default 0)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write the history here (default: a temporary file, kept only if not linearizable)")
    parser.add_argument("--budget", type=budget_seconds, default=DEFAULT_STRESS_BUDGET, metavar="SECONDS",
                        help=f"seconds for the check, and again for shrinking a counterexample (default "
                             f"{DEFAULT_STRESS_BUDGET:g}: a run stays under half a minute)")
    parser.add_argument("--max-timer-lag", type=_non_negative, default=DEFAULT_MAX_TIMER_LAG, metavar="MS",
                        help="real clock: how late the server may fire a due timeout")
    add_allow_unanswered(parser)
    add_declared(parser)
    parser.add_argument("--html", metavar="FILE", help="also write linearize's HTML report")
    parser.add_argument("--profile", choices=("lean", "deployed"), default="lean",
                        help="the spec reading the server is reset to (default lean)")
    parser.add_argument("--db", default=":memory:", metavar="FILE",
                        help="with --target serve: the SQLite store (default in memory)")
    parser.add_argument("--tick-ms", type=int, default=None, metavar="MS",
                        help="with --target serve --clock real: the server's background tick period")
    parser.add_argument("--unsafe-drop-acquire-lock", action="store_true", help=argparse.SUPPRESS)
    parser.set_defaults(run=main)

"""Histories known to be linearizable, made by running the model at chosen instants.

Each simulated client makes calls one after another, each over a random interval that
overlaps the other clients' calls; each call is given a linearization point inside its
interval, and the model answers the calls in the order of those points. The recorded
answers are then, by construction, what one legal order gives: the checker must find one.
Under the real clock the model also fires every timeout as it falls due (a tick at the
due instant, unrecorded, as the server's background loop does) and each call runs at its
point's millisecond, which it does not record (the server's hidden `now`).

The corpus of docs/linearize.md ("Checking the checker") and the bench's scale histories
are made here. Calls draw from small id pools, so that they contend.
"""

from __future__ import annotations

import random
from typing import Any

from duespec.histories.format import Event, History, HistoryHeader
from duespec.systems import get_system
from duespec.systems.concurrent import concurrency_of

Json = Any

#: 2025-01-01T00:00:00Z: where a generated history's clock starts.
START_MS = 1_735_689_600_000
_NS = 1_000_000
VALUE = {"headers": {}, "data": None}


def _draw(rng: random.Random, ids: list[str], now: int, pids: list[str], with_schedules: bool,
          with_ticks: bool) -> tuple[str, dict[str, Json]]:
    id = rng.choice(ids)
    roll = rng.random()
    if with_ticks and roll < 0.04:
        return "tick", {}
    if with_schedules and roll < 0.16:
        kind = rng.choice(("schedule.create", "schedule.get", "schedule.delete"))
        sid = "s" + id
        if kind == "schedule.create":
            return kind, {"id": sid, "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}",
                          "promiseTimeout": 60_000, "promiseParam": VALUE, "promiseTags": {}}
        return kind, {"id": sid}
    kind = rng.choice(("promise.create", "promise.create", "promise.get", "promise.settle",
                       "task.acquire", "task.acquire", "task.get", "task.fulfill", "task.release"))
    if kind == "promise.create":
        tags = {"resonate:target": "poll://any"} if rng.random() < 0.7 else {}
        return kind, {"id": id, "timeoutAt": now + rng.choice((50, 400, 5_000, 600_000)), "param": VALUE,
                      "tags": tags}
    if kind in ("promise.get", "task.get"):
        return kind, {"id": id}
    if kind == "promise.settle":
        return kind, {"id": id, "state": rng.choice(("resolved", "rejected")), "value": VALUE}
    version = rng.choice((0, 0, 1, 1, 2))
    if kind == "task.acquire":
        return kind, {"id": id, "version": version, "pid": rng.choice(pids), "ttl": rng.choice((100, 2_000))}
    if kind == "task.fulfill":
        return kind, {"id": id, "version": version, "action": {"id": id, "state": "resolved", "value": VALUE}}
    return kind, {"id": id, "version": version}


def generate(*, seed: int, clients: int = 4, ops: int = 16, keys: int = 3, clock: str = "pinned",
             system: str = "schedules", config: dict[str, Json] | None = None, with_schedules: bool = True,
             with_ticks: bool = False, unknown_rate: float = 0.0, max_call_ms: int = 30) -> History:
    """A linearizable history of `ops` calls by `clients` clients over `keys` ids.

    `unknown_rate` records that share of calls as unknown outcomes (whether or not the
    model applied them, as a lost reply would be)."""
    if system != "schedules":
        raise ValueError("generated histories are of schedules")
    rng = random.Random(seed)
    config = dict(config or {"profile": "lean", "retry_timeout": 5000})
    ids = [f"k{n}" for n in range(keys)]
    pids = [f"w{n}" for n in range(clients)]
    # Intervals: each client's calls in sequence, with random gaps and lengths (ms, plus ns).
    plans: list[tuple[int, int, int, str]] = []  # (call_ns, return_ns, point_ns, client)
    per_client = [ops // clients + (1 if c < ops % clients else 0) for c in range(clients)]
    for c in range(clients):
        t = START_MS * _NS + rng.randrange(0, 5 * _NS)
        for _ in range(per_client[c]):
            start = t + rng.randrange(0, 3 * _NS)
            end = start + rng.randrange(_NS // 10, max_call_ms * _NS)
            plans.append((start, end, rng.randrange(start, end + 1), f"c{c}"))
            t = end + rng.randrange(1, _NS)
    by_point = sorted(range(len(plans)), key=lambda n: plans[n][2])
    model = get_system(system).model()
    model.reset(config)
    hooks = concurrency_of(system)
    records: dict[int, Event] = {}
    for n in by_point:
        call_ns, return_ns, point_ns, client = plans[n]
        call_ms, return_ms, point_ms = call_ns // _NS, return_ns // _NS, point_ns // _NS
        now = point_ms if clock == "real" else call_ms
        if clock == "real" and hooks.tick is not None:
            while (due := hooks.next_timer(model.observe())) is not None and due <= point_ms:
                model.step(hooks.tick, {}, due)
        op, args = _draw(rng, ids, call_ms, pids, with_schedules, with_ticks and clock == "pinned")
        unknown = rng.random() < unknown_rate
        if unknown and rng.random() < 0.5:
            response = None  # lost before it took effect
        else:
            response = model.step(op, args, now)
        records[n] = Event(client, op, args, call_ns, return_ns, call_ms, return_ms,
                           "unknown" if unknown else "ok", None if unknown else response,
                           now if clock == "pinned" else None)
    events = sorted(records.values(), key=lambda e: (e.return_ns, e.call_ns))
    header = HistoryHeader(system, clock, config, "duespec.histories.generate", {"seed": seed})
    return History(header, events)

"""What checking over Resonate's HTTP protocol costs, and what `duespec serve` sustains.

1. One schedules campaign with every op in scope (same seed, runs, steps) against `duespec
   serve` over HTTP (the server in a thread of this process, so this process's CPU time
   covers both ends), against the same campaign in-process; timed in alternation, CPU
   seconds, median of the repeats with min-max.
2. `duespec serve` as a separate process, loaded by 4 concurrent keep-alive clients for
   10 s (2 s with --quick), each walking a task through its life (task.create with a nested
   promise.create, task.get, task.heartbeat, task.fence, task.fulfill with a nested
   promise.settle, promise.get): requests/s and p99 latency, wall clock (latency is wall time).
"""

from __future__ import annotations

import http.client
import json
import statistics
import threading
import time
from urllib.parse import urlsplit

from duespec.bench import MIN_REPEATS, Figure, Sample, alternate, rate_figure, timed
from duespec.campaigns.run import run_campaign
from duespec.systems.schedules import SYSTEM
from duespec.targets.interface import TargetFactory
from duespec.wire.envelope import PROTOCOL_VERSION
from duespec.wire.http_target import HttpTargetFactory
from duespec.wire.serve import ServerThread, WireServer

SECTION = "wire (Resonate HTTP protocol)"
CLIENTS = 4
T0 = 1_735_689_600_000


def campaign(target: TargetFactory, examples: int) -> Sample:
    """One timed campaign; its count is the steps it took."""
    def run() -> int:
        result = run_campaign(SYSTEM, target, seed=0, examples=examples, step_count=30)
        if not result.ok:
            raise RuntimeError(f"bench campaign failed, figures would be meaningless:\n{result.failure_summary}")
        return result.steps
    return timed(run)


#: One task's life, as each load client repeats it: (kind, data for the task id `id`).
TASK_LIFE = (
    ("task.create", lambda id: {"pid": "bench", "ttl": 60_000, "action": _nested("promise.create", {
        "id": id, "timeoutAt": T0 + 3_600_000, "tags": {"resonate:target": "poll://any@bench"}})}),
    ("task.get", lambda id: {"id": id}),
    ("task.heartbeat", lambda id: {"pid": "bench", "tasks": [{"id": id, "version": 1}]}),
    ("task.fence", lambda id: {"id": id, "version": 1, "action": _nested("promise.create", {
        "id": f"{id}.child", "timeoutAt": T0 + 3_600_000})}),
    ("task.fulfill", lambda id: {"id": id, "version": 1, "action": _nested("promise.settle", {
        "id": id, "state": "resolved"})}),
    ("promise.get", lambda id: {"id": id}),
)


def _nested(kind: str, data: dict) -> dict:
    return {"kind": kind, "head": {"corrId": "inner", "version": PROTOCOL_VERSION}, "data": data}


def load(url: str, seconds: float) -> tuple[int, list[float], float]:
    """(requests, latencies, wall seconds) of CLIENTS threads posting for `seconds`."""
    parts = urlsplit(url)
    latencies: list[list[float]] = [[] for _ in range(CLIENTS)]
    errors: list[str] = []

    def client(index: int) -> None:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        deadline, n = time.perf_counter() + seconds, 0
        while time.perf_counter() < deadline:
            kind, data = TASK_LIFE[n % len(TASK_LIFE)]
            body = json.dumps({"kind": kind, "head": {"corrId": str(n), "version": PROTOCOL_VERSION,
                                                      "resonate:debug_time": T0},
                               "data": data(f"c{index}-{n // len(TASK_LIFE)}")})
            n += 1
            sent = time.perf_counter()
            connection.request("POST", "/", body=body, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            latencies[index].append(time.perf_counter() - sent)
            if response.status != 200:
                errors.append(f"{kind}: {response.status}")
        connection.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"load run got errors: {errors[:3]}")
    flat = [x for per_client in latencies for x in per_client]
    return len(flat), flat, wall


def figures(quick: bool) -> list[Figure]:
    import subprocess
    import sys

    examples, seconds = (4, 2.0) if quick else (20, 10.0)
    with ServerThread(WireServer()) as server:
        over_http = HttpTargetFactory(server.url, timeout=30)
        http_samples, local_samples = alternate([lambda: campaign(over_http, examples),
                                                 lambda: campaign(SYSTEM.impl, examples)], MIN_REPEATS)
    process = subprocess.Popen([sys.executable, "-m", "duespec", "serve", "schedules", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().split("listening on ")[1].split()[0]
        count, latencies, wall = load(url, seconds)
    finally:
        process.terminate()
        process.wait(10)
    p99 = statistics.quantiles(latencies, n=100)[98] * 1000
    local = rate_figure(SECTION, "campaign steps/s (CPU), same campaign, impl in-process", local_samples,
                        "steps/s", note=f"seed 0, {examples} runs x 30 steps, every op in scope")
    kinds = ", ".join(kind for kind, _ in TASK_LIFE)
    return [
        rate_figure(SECTION, "campaign steps/s (CPU), duespec serve over HTTP", http_samples, "steps/s",
                    baseline=f"the same campaign in-process, {local.value:,.0f} steps/s (next figure)",
                    note=f"seed 0, {examples} runs x 30 steps, every op in scope, alternated with the "
                         "in-process campaign; server in a thread of this process (its CPU counted)"),
        local,
        Figure(SECTION, f"duespec serve requests/s, {CLIENTS} clients, {seconds:g} s", count / wall, "req/s",
               note=f"p99 latency {p99:.1f} ms over {count} requests, all answered 200 ({kinds}, in turn; "
                    "keep-alive, server in its own process; wall clock)",
               extra={"p99_ms": p99, "requests": count}),
    ]

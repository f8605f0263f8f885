"""What checking over Resonate's HTTP protocol costs, and what `duespec serve` sustains.

1. One schedules campaign (same seed, runs, steps) against `duespec serve` over HTTP (the
   server in a thread of this process, so this process's CPU time covers both ends),
   against the same campaign in-process; timed in alternation, CPU seconds, median of the
   rounds with min-max.
2. `duespec serve` as a separate process, loaded by 4 concurrent keep-alive clients for
   10 s (2 s with --quick): requests/s and p99 latency, wall clock (latency is wall time).
"""

from __future__ import annotations

import http.client
import json
import statistics
import threading
import time
from urllib.parse import urlsplit

from duespec.bench import Figure
from duespec.campaigns.run import run_campaign
from duespec.systems.schedules import SYSTEM
from duespec.targets.interface import TargetFactory
from duespec.wire.envelope import PROTOCOL_VERSION
from duespec.wire.http_target import HttpTargetFactory
from duespec.wire.serve import ServerThread, WireServer

SECTION = "wire (Resonate HTTP protocol)"
CLIENTS = 4
T0 = 1_735_689_600_000


def campaign_cpu_rate(target: TargetFactory, examples: int) -> float:
    started = time.process_time()
    result = run_campaign(SYSTEM, target, seed=0, examples=examples, step_count=30)
    if not result.ok:
        raise RuntimeError(f"bench campaign failed, figures would be meaningless:\n{result.failure_summary}")
    return result.steps / (time.process_time() - started)


def load(url: str, seconds: float) -> tuple[int, list[float], float]:
    """(requests, latencies, wall seconds) of CLIENTS threads posting for `seconds`."""
    parts = urlsplit(url)
    latencies: list[list[float]] = [[] for _ in range(CLIENTS)]
    errors: list[str] = []

    def client(index: int) -> None:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        deadline, n = time.perf_counter() + seconds, 0
        while time.perf_counter() < deadline:
            n += 1
            kind, data = (("promise.create", {"id": f"c{index}-{n}", "timeoutAt": T0 + 60_000,
                                              "param": {"headers": {}, "data": None}, "tags": {}})
                          if n % 2 else ("promise.get", {"id": f"c{index}-{n - 1}"}))
            body = json.dumps({"kind": kind, "head": {"corrId": str(n), "version": PROTOCOL_VERSION,
                                                      "resonate:debug_time": T0}, "data": data})
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

    examples, rounds, seconds = (5, 1, 2.0) if quick else (20, 3, 10.0)
    http_rates, local_rates = [], []
    with ServerThread(WireServer()) as server:
        over_http = HttpTargetFactory(server.url, timeout=30)
        for _ in range(rounds):
            http_rates.append(campaign_cpu_rate(over_http, examples))
            local_rates.append(campaign_cpu_rate(SYSTEM.impl, examples))
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

    def spread(values: list[float]) -> str:
        return f"median of {len(values)} rounds, min {min(values):,.0f} max {max(values):,.0f}"

    return [
        Figure(SECTION, "campaign steps/s (CPU), duespec serve over HTTP", statistics.median(http_rates),
               "steps/s", "same campaign, impl in-process", statistics.median(local_rates),
               note=f"seed 0, {examples} runs x 30 steps, alternated; HTTP {spread(http_rates)}; "
                    f"in-process {spread(local_rates)}; server in a thread of this process"),
        Figure(SECTION, f"duespec serve requests/s, {CLIENTS} clients, {seconds:g} s", count / wall, "req/s",
               note=f"p99 latency {p99:.1f} ms over {count} requests (promise.create/get alternating, "
                    "keep-alive, server in its own process; wall clock)"),
    ]

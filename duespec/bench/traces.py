"""Trace figures, each against a baseline measured in the same run.

1. Replay throughput of one trace against the model, against reading it alone, and
   against the implementation (with the model alongside as oracle) on the same trace.
2. Peak traced memory replaying (and exporting to ITF) a long trace against one a tenth
   as long: reader and writers stream and keep nothing per step, so the ratio should
   stay near 1."""

from __future__ import annotations

import gc
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from duespec.bench import Figure
from duespec.traces.itf import export_itf
from duespec.traces.replay import replay
from duespec.systems import get_system
from duespec.traces.format import Call, TraceHeader, read_trace, record, write_trace

SECTION = "traces"
T = TypeVar("T")


def duebook_churn(count: int) -> Iterator[Call]:
    """schedule, claim, schedule, claim...: any length, and never more than one open deferral."""
    for n in range(count):
        if n % 2 == 0:
            yield "schedule", {"owner": "o", "delay": 0, "ttl": 0}, n // 2
        else:
            yield "claim", {"id": n // 2 + 1}, n // 2


def schedules_churn(count: int) -> Iterator[Call]:
    """create, get, delete of one schedule after another: the server state stays small."""
    ops = ("schedule.create", "schedule.get", "schedule.delete")
    for n in range(count):
        op, id = ops[n % 3], f"s{n // 3}"
        args = {"id": id}
        if op == "schedule.create":
            args.update(cron="*/5 * * * *", promiseId="{{.id}}.{{.timestamp}}", promiseTimeout=60_000,
                        promiseParam={"headers": {}, "data": None}, promiseTags={})
        yield op, args, 1_767_225_600_000 + n


def recorded(directory: Path, system: str, script: Iterator[Call], name: str) -> Path:
    descriptor = get_system(system)
    profile = descriptor.profiles[0]
    config = descriptor.config(profile)
    return write_trace(directory / name, TraceHeader(system, profile, config, producer="duespec bench"),
                       record(system, config, script))


def read_rate(path: Path) -> float:
    started = time.perf_counter()
    _, steps = read_trace(path)
    count = sum(1 for _ in steps)
    return count / (time.perf_counter() - started)


def replay_rate(path: Path, target: str) -> float:
    result = replay(path, target)
    if not result.confirmed:
        raise AssertionError(result.report())
    return result.steps / result.seconds


def peak_bytes(path: Path) -> tuple[int, int]:
    """Steps replayed against the model and the peak of traced allocations meanwhile."""
    result, peak = _traced(lambda: replay(path, "model"))
    if not result.confirmed:
        raise AssertionError(result.report())
    return result.steps, peak


def export_peak_bytes(path: Path) -> int:
    _, peak = _traced(lambda: export_itf(path, path.with_suffix(".itf.json")))
    path.with_suffix(".itf.json").unlink()
    return peak


def _traced(action: Callable[[], T]) -> tuple[T, int]:
    gc.collect()
    tracemalloc.start()
    try:
        value = action()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return value, peak


def figures(quick: bool) -> list[Figure]:
    throughput_steps = 20_000 if quick else 100_000
    long_steps = 100_000 if quick else 1_000_000
    found: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="duespec-bench-") as tmp:
        directory = Path(tmp)
        for system, script, steps in (("duebook", duebook_churn, throughput_steps),
                                      ("schedules", schedules_churn, throughput_steps // 10)):
            path = recorded(directory, system, script(steps), f"{system}.jsonl")
            reading, on_model, on_impl = read_rate(path), replay_rate(path, "model"), replay_rate(path, "impl")
            found.append(Figure(SECTION, f"replay {system} ({steps:,} steps) against model", on_model,
                                "steps/s", "reading and validating the trace only", reading))
            found.append(Figure(SECTION, f"replay {system} against impl, model as oracle", on_impl,
                                "steps/s", "replay against model", on_model,
                                note="impl side compares every response and the whole state per step"))
        short = recorded(directory, "duebook", duebook_churn(long_steps // 10), "short.jsonl")
        long = recorded(directory, "duebook", duebook_churn(long_steps), "long.jsonl")
        short_count, short_peak = peak_bytes(short)
        long_count, long_peak = peak_bytes(long)
        found.append(Figure(SECTION, f"peak traced memory replaying {long_count:,} steps", long_peak / 1024,
                            "KiB", f"replaying {short_count:,} steps", short_peak / 1024,
                            note=f"trace file {long.stat().st_size / 2**20:,.0f} MiB; a ratio near 1 "
                                 f"means nothing is kept per step"))
        found.append(Figure(SECTION, f"peak traced memory exporting {long_count:,} steps to ITF",
                            export_peak_bytes(long) / 1024, "KiB", f"exporting {short_count:,} steps",
                            export_peak_bytes(short) / 1024))
    return found

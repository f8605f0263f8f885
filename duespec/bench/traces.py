"""Trace figures, each beside its goal.

1. Replay of a 100,000-step mixed duebook trace against the implementation, with about
   1, 100 and 10,000 deferrals open throughout: steps/s (goal >= 100,000 at 100 open),
   and the 10,000-open rate against the 1-open rate (goal: no more than 2x slower).
   Reading and validating the trace alone is measured beside them, as the floor.
2. What the per-call deadline of in-process targets costs: the same replay through the
   SIGALRM-watched target that `module:factory` targets get (and the general comparison
   any target but duespec's own impl gets), against the unwatched impl.
3. Replay of a schedules trace against the implementation (the model runs alongside: its
   responses do not show every change).
4. Peak traced memory replaying (and exporting to ITF) a long trace against one a tenth
   as long: reader and writers stream and keep nothing per step, so the ratio should
   stay near 1."""

from __future__ import annotations

import gc
import random
import tempfile
import tracemalloc
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from duespec.bench import Figure, Goal, Sample, alternate, rate_figure, ratio_figure, timed
from duespec.systems import get_system
from duespec.targets import resolve as targets
from duespec.traces.format import Call, TraceHeader, TraceWriter, read_trace, record, write_trace
from duespec.traces.itf import export_itf
from duespec.traces.replay import ReplayResult, replay

SECTION = "traces"
T = TypeVar("T")
OPEN_SIZES = (1, 100, 10_000)


def write_mixed_duebook(path: Path, steps: int, open_target: int, seed: int = 0) -> Path:
    """A busy realm's trace: `open_target` schedules, then schedules, claims, cancels,
    expiries, lookups and keeper queries with the clock moving forward, about
    `open_target` deferrals staying open. The model answers while the trace is written,
    so consumers pick deferrals that are open and mostly succeed."""
    rng = random.Random(seed)
    config = {"max_open": 2 * open_target + 10}
    model = get_system("duebook").model()
    model.reset(config)
    opened: dict[int, dict] = {}
    now = 1_000
    with TraceWriter(path, TraceHeader("duebook", "seed", config, producer="duespec bench")) as writer:
        for i in range(steps):
            if i >= open_target:
                now += rng.randrange(3)
            roll = rng.random()
            share = 1.0 if i < open_target else 0.55 if len(opened) < open_target else 0.35
            if roll < share or not opened:
                op, args = "schedule", {"owner": f"o{rng.randrange(50)}", "delay": rng.randrange(20),
                                        "ttl": rng.choice((0, 50, 500))}
            else:
                roll = rng.random()
                id = rng.choice(list(opened)) if len(opened) < 64 else _any_key(rng, opened)
                deferral = opened[id]
                if roll < 0.7:
                    expired = deferral["expires_at"] and now >= deferral["expires_at"]
                    if expired:
                        op, args = "expire", {"id": id}
                    elif deferral["due_at"] <= now and roll < 0.45:
                        op, args = "claim", {"id": id}
                    else:
                        op, args = "cancel", {"id": id, "caller": deferral["owner"]}
                elif roll < 0.92:
                    op, args = "get", {"id": id}
                else:
                    op, args = rng.choice(("claimable", "expirable")), {"limit": 10}
            result = model.step(op, args, now)
            if "ok" in result and op == "schedule":
                opened[result["ok"]["id"]] = result["ok"]
            elif "ok" in result and op in ("claim", "cancel", "expire"):
                del opened[result["ok"]["id"]]
            writer.write({"i": i, "op": op, "args": args, "now": now, "result": result})
    model.close()
    return path


def _any_key(rng: random.Random, opened: dict[int, dict]) -> int:
    """A random open id without listing them all: ids are dense, so a few tries hit one."""
    low, high = min(opened), max(opened)
    while True:
        id = rng.randint(low, high)
        if id in opened:
            return id


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


def duebook_churn(count: int) -> Iterator[Call]:
    """schedule, claim, schedule, claim...: any length, and never more than one open deferral."""
    for n in range(count):
        if n % 2 == 0:
            yield "schedule", {"owner": "o", "delay": 0, "ttl": 0}, n // 2
        else:
            yield "claim", {"id": n // 2 + 1}, n // 2


def recorded(directory: Path, system: str, script: Iterator[Call], name: str) -> Path:
    descriptor = get_system(system)
    profile = descriptor.profiles[0]
    config = descriptor.config(profile)
    return write_trace(directory / name, TraceHeader(system, profile, config, producer="duespec bench"),
                       record(system, config, script))


def replaying(path: Path, target: str = "impl", **options: object) -> Callable[[], Sample]:
    def measure() -> Sample:
        gc.collect()
        sample = timed(lambda: _confirmed(replay(path, target, **options)))  # type: ignore[arg-type]
        return sample
    return measure


def _confirmed(result: ReplayResult) -> int:
    if not result.confirmed:
        raise AssertionError(result.report())
    return result.steps


def reading(path: Path) -> Callable[[], Sample]:
    def measure() -> Sample:
        gc.collect()
        return timed(lambda: sum(1 for _ in read_trace(path)[1]))
    return measure


def replay_figures(directory: Path, quick: bool) -> list[Figure]:
    repeats = 5
    # The goal is about a 100,000-step trace; the open-size comparison needs less.
    lengths = {size: 100_000 if size == 100 or not quick else 10_000 for size in OPEN_SIZES}
    paths = {size: write_mixed_duebook(directory / f"mixed_{size}.jsonl", lengths[size], size)
             for size in OPEN_SIZES}
    sides = [replaying(paths[size]) for size in OPEN_SIZES] + [reading(paths[100])]
    samples = alternate(sides, repeats)
    by_size = dict(zip(OPEN_SIZES, samples))
    found = [rate_figure(SECTION, f"replay {lengths[size]:,}-step mixed duebook trace, ~{size:,} open, impl",
                         by_size[size], "steps/s", goal=Goal(">=", 100_000) if size == 100 else None,
                         note="every response compared; the state at checkpoints and at the end"
                         if size == 100 else "")
             for size in OPEN_SIZES]
    found.append(ratio_figure(SECTION, "replay time per step, ~10,000 open / ~1 open", by_size[10_000],
                              by_size[1], goal=Goal("<=", 2.0),
                              baseline="the same replay with about 1 deferral open"))
    found.append(rate_figure(SECTION, "reading and validating the same trace, no replay", samples[-1],
                             "steps/s", note="the floor under any replay: JSON parsing and the format's checks"))
    watched = targets.resolve(get_system("duebook"), "impl")
    unwatched, deadline = alternate([replaying(paths[1]),
                                     replaying(paths[1], "impl (watched)", factory=watched)], repeats)
    found.append(ratio_figure(SECTION, "replay time per step, watched by a deadline / unwatched", deadline,
                              unwatched, baseline="impl without the per-call SIGALRM deadline",
                              note="what `replay --target impl` saves by running its own code unwatched "
                                   "and comparing through its fused path"))
    return found


def schedules_figure(directory: Path, quick: bool) -> Figure:
    steps = 1_000 if quick else 20_000
    path = recorded(directory, "schedules", schedules_churn(steps), "schedules.jsonl")
    on_impl, on_model = alternate([replaying(path), replaying(path, "model")], 5)
    return rate_figure(SECTION, f"replay schedules ({steps:,} steps) against impl", on_impl, "steps/s",
                       baseline=f"against the model: {rate_figure(SECTION, '', on_model, '').value:,.0f} "
                                "steps/s", note="the model runs alongside: a schedules response does "
                                                "not show every change")


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


def memory_figures(directory: Path, quick: bool) -> list[Figure]:
    long_steps = 4_000 if quick else 1_000_000  # quick: still ten times the short trace
    short = recorded(directory, "duebook", duebook_churn(long_steps // 10), "short.jsonl")
    long = recorded(directory, "duebook", duebook_churn(long_steps), "long.jsonl")
    short_count, short_peak = peak_bytes(short)
    long_count, long_peak = peak_bytes(long)
    return [
        Figure.single(SECTION, f"peak traced memory replaying {long_count:,} / {short_count:,} steps",
                      long_peak / short_peak, "x", goal=Goal("<=", 1.5),
                      baseline=f"{long_peak / 1024:,.0f} KiB vs {short_peak / 1024:,.0f} KiB",
                      note="tracemalloc; near 1 means nothing is kept per step"),
        Figure.single(SECTION, f"peak traced memory exporting {long_count:,} / {short_count:,} steps to ITF",
                      export_peak_bytes(long) / export_peak_bytes(short), "x", goal=Goal("<=", 1.5)),
    ]


def figures(quick: bool) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="duespec-bench-") as tmp:
        directory = Path(tmp)
        return [*replay_figures(directory, quick), schedules_figure(directory, quick),
                *memory_figures(directory, quick)]

"""duebook figures, each against a baseline measured in the same run.

1. The implementation against the reference model on one mixed workload (same calls).
2. The lockstep machine's differential steps/s against a bare Hypothesis state machine
   over a dict with as many rules: what the harness itself costs per step.
3. Bytes per open deferral in the implementation against the model's dict of frozen
   dataclasses, measured with tracemalloc."""

from __future__ import annotations

import gc
import random
import time
import tracemalloc
from typing import Any, Callable

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

from duespec.bench import Figure, rate
from duespec.campaigns.run import run_campaign
from duespec.impl import duebook as impl
from duespec.model import duebook as model
from duespec.spec import duebook_invariants as spec
from duespec.systems.duebook import SYSTEM, ImplTarget

SECTION = "duebook"
OWNERS = tuple(f"g1owner{n:03d}" for n in range(50))

Call = tuple[str, tuple[Any, ...]]


def mixed_workload(length: int, open_target: int, seed: int = 0) -> list[Call]:
    """`open_target` schedules to fill the Book, then `length` calls a busy realm makes:
    schedules, claims and cancels of open ids, expiries, lookups and keeper queries, with
    the clock moving forward and about `open_target` deferrals staying open (schedules
    are likelier below it, consumption above it).

    Ids are chosen from the model's open set while generating, so both sides replay calls
    that mostly name open deferrals rather than a stream of not_found."""
    rng = random.Random(seed)
    book, _ = model.new_book(2 * open_target)
    assert book is not None
    now = 1_000
    calls: list[Call] = []
    for _ in range(open_target):
        args = (rng.choice(OWNERS), rng.randrange(50), rng.choice((0, 100, 1_000)), now)
        calls.append(("schedule", args))
        model.schedule(book, *args)
    length += open_target
    while len(calls) < length:
        now += rng.randrange(3)
        open_ids = list(book.open)
        schedule_share = 0.6 if len(open_ids) < open_target else 0.3
        roll = rng.random()
        if roll < schedule_share or not open_ids:
            args = (rng.choice(OWNERS), rng.randrange(50), rng.choice((0, 100, 1_000)), now)
            call = ("schedule", args)
            model.schedule(book, *args)
        else:
            roll = rng.random()
            if roll < 0.35:
                call = ("claim", (rng.choice(open_ids), now))
                model.claim(book, *call[1])
            elif roll < 0.5:
                id = rng.choice(open_ids)
                caller = book.open[id].owner if rng.random() < 0.8 else rng.choice(OWNERS)
                call = ("cancel", (id, caller))
                model.cancel(book, id, caller)
            elif roll < 0.65:
                call = ("expire", (rng.choice(open_ids), now))
                model.expire(book, *call[1])
            elif roll < 0.9:
                call = ("get", (rng.choice(open_ids),))
            elif roll < 0.95:
                call = ("claimable", (now, 10))
            else:
                call = ("expirable", (now, 10))
        calls.append(call)
    return calls


def model_replay(calls: list[Call], max_open: int) -> Callable[[], int]:
    functions: dict[str, Callable[..., Any]] = {
        "schedule": model.schedule, "claim": model.claim, "cancel": model.cancel,
        "expire": model.expire, "get": model.get, "claimable": model.claimable,
        "expirable": model.expirable,
    }
    bound = [(functions[op], args) for op, args in calls]

    def run() -> int:
        book, _ = model.new_book(max_open)
        for function, args in bound:
            function(book, *args)
        return len(bound)
    return run


def impl_replay(calls: list[Call], max_open: int) -> Callable[[], int]:
    def run() -> int:
        book = impl.Book(max_open)
        for op, args in calls:
            try:
                getattr(book, op)(*args)
            except impl.DuebookError:
                pass
        return len(calls)
    return run


def workload_figure(open_target: int, quick: bool) -> Figure:
    calls = mixed_workload(5_000 if quick else 50_000, open_target)
    seconds = 0.3 if quick else 1.0
    impl_rate = rate(impl_replay(calls, 2 * open_target), seconds)
    model_rate = rate(model_replay(calls, 2 * open_target), seconds)
    return Figure(SECTION, f"impl, mixed workload, ~{open_target:,} open ({len(calls):,} calls)",
                  impl_rate, "ops/s", "reference model, same calls", model_rate,
                  note=f"{open_target:,} schedules fill the Book; then, around that size, schedules "
                       "and claim 35% / cancel 15% / expire 15% / get 25% / claimable, expirable "
                       "(limit 10) 10%")


class BareDictMachine(RuleBasedStateMachine):
    """Shaped like the duebook machine (an initialize rule, nine rules that each count as a
    step, four clock rules that do not), each touching a plain dict once: what Hypothesis
    itself costs per step, rule selection, drawing and bookkeeping."""

    keys = Bundle("keys")
    taken = 0

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[int, int] = {}
        self.next_key = 1
        self.now = 0
        self.listed: list[int] = []

    def count(self) -> None:
        type(self).taken += 1

    @initialize(target=keys, value=st.integers(0, 4))
    def first_put(self, value: int) -> int:
        return self.put(value)

    @rule(target=keys, value=st.integers(0, 4))
    def put(self, value: int) -> int:
        self.count()
        key, self.next_key = self.next_key, self.next_key + 1
        self.store[key] = value
        return key

    @rule(key=keys)
    def pop(self, key: int) -> None:
        self.count()
        self.store.pop(key, None)

    @rule(key=keys, who=st.sampled_from(("alice", "bob")))
    def pop_if(self, key: int, who: str) -> None:
        self.count()
        if who == "alice":
            self.store.pop(key, None)

    @rule(key=keys)
    def drop(self, key: int) -> None:
        self.count()
        self.store.pop(key, None)

    @rule(key=keys)
    def read(self, key: int) -> None:
        self.count()
        self.store.get(key)

    @rule(limit=st.integers(0, 5))
    def first(self, limit: int) -> None:
        self.count()
        self.listed = sorted(self.store)[:limit]

    @rule(limit=st.integers(0, 5))
    def last(self, limit: int) -> None:
        self.count()
        self.listed = sorted(self.store)[-limit:]

    @rule(limit=st.integers(0, 5))
    def first_after_the_last_key(self, limit: int) -> None:
        self.now = self.next_key
        self.first(limit)

    @rule(limit=st.integers(0, 5))
    def last_after_the_first_key(self, limit: int) -> None:
        self.now = min(self.store, default=0)
        self.last(limit)

    @rule(ticks=st.integers(0, 5))
    def tick(self, ticks: int) -> None:
        self.now += ticks

    @rule(key=keys, edge=st.sampled_from((-1, 0)))
    def jump(self, key: int, edge: int) -> None:
        self.now = key + edge

    @rule(to=st.sampled_from((0, 1)))
    def reset_clock(self, to: int) -> None:
        self.now = to

    @rule(to=st.sampled_from((-1, 2)))
    def misread(self, to: int) -> None:
        self.now = to


def bare_steps_per_second(examples: int, steps: int) -> float:
    BareDictMachine.taken = 0
    run_settings = settings(max_examples=examples, stateful_step_count=steps, deadline=None,
                            database=None, suppress_health_check=list(HealthCheck),
                            phases=[Phase.generate])
    started = time.perf_counter()
    run_state_machine_as_test(BareDictMachine, settings=run_settings)
    return BareDictMachine.taken / (time.perf_counter() - started)


def harness_figure(quick: bool) -> Figure:
    examples = 50 if quick else 200
    result = run_campaign(SYSTEM, ImplTarget, examples=examples, step_count=50)
    if not result.ok:
        raise RuntimeError(f"the benchmark campaign diverged:\n{result.failure}")
    lockstep_rate = result.steps / result.seconds
    bare_rate = bare_steps_per_second(examples, 50)
    return Figure(SECTION, f"lockstep impl vs model ({examples} examples x 50 steps)",
                  lockstep_rate, "steps/s", "bare Hypothesis machine over a dict", bare_rate,
                  note="each lockstep step: both sides, response and whole-state comparison, "
                       f"{len(spec.STATE_INVARIANTS) + len(spec.TRANSITION_INVARIANTS)} spec invariants")


def traced_bytes(fill: Callable[[], Any]) -> int:
    """Bytes still allocated after `fill` returns (what it built and kept)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = fill()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del kept
    gc.collect()
    return after - before


def memory_figure(quick: bool) -> Figure:
    count = 100_000 if quick else 1_000_000
    now = 1_700_000_000

    def fill_impl() -> Any:
        book = impl.Book(count)
        for n in range(count):
            book.schedule(OWNERS[n % len(OWNERS)], n, 3_600, now)
        return book

    def fill_model() -> Any:
        book, _ = model.new_book(count)
        for n in range(count):
            model.schedule(book, OWNERS[n % len(OWNERS)], n, 3_600, now)
        return book

    impl_bytes = traced_bytes(fill_impl) / count
    model_bytes = traced_bytes(fill_model) / count
    return Figure(SECTION, f"impl bytes per open deferral ({count:,} open)", impl_bytes,
                  "bytes", "model's dict of frozen dataclasses", model_bytes,
                  note="tracemalloc, whole Book after filling; owners drawn from 50 shared strings")


def figures(quick: bool) -> list[Figure]:
    return [workload_figure(100, quick), workload_figure(10_000, quick),
            harness_figure(quick), memory_figure(quick)]

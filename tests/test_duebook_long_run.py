"""Long lockstep runs with a large Book, where the implementation's run splitting and
compaction happen: the Hypothesis machine (cap 3, 50 steps) never gets there."""

from __future__ import annotations

import random

import pytest

from duespec.impl import duebook as impl
from duespec.systems.duebook import ImplTarget, ModelTarget
from duespec.targets.interface import responses_agree, same_json

OWNERS = ("alice", "bob", "carol")


def random_call(rng: random.Random, now: int, next_id: int) -> tuple[str, dict[str, object]]:
    """Mostly calls that succeed, so the Book fills, churns and drains."""
    known = rng.randrange(1, next_id + 1)
    pick = rng.random()
    if pick < 0.45:
        return "schedule", {"owner": rng.choice(OWNERS), "delay": rng.randrange(0, 400),
                            "ttl": rng.choice((0, rng.randrange(1, 600)))}
    if pick < 0.65:
        return "claim", {"id": known}
    if pick < 0.75:
        return "cancel", {"id": known, "caller": rng.choice(OWNERS)}
    if pick < 0.85:
        return "expire", {"id": known}
    if pick < 0.92:
        return "get", {"id": known}
    return rng.choice(("claimable", "expirable")), {"limit": rng.choice((1, 10, 5000))}


def test_model_and_impl_agree_through_splits_and_compactions(monkeypatch: pytest.MonkeyPatch) -> None:
    compactions, runs_added = [], []
    real_compact, real_add_run = impl.Book._compact, impl._SortedRuns._add_run

    def counting_compact(book: impl.Book) -> None:
        compactions.append(len(book))
        real_compact(book)

    def counting_add_run(index: impl._SortedRuns, r: int, run: list) -> None:
        runs_added.append(len(run))
        real_add_run(index, r, run)

    monkeypatch.setattr(impl.Book, "_compact", counting_compact)
    monkeypatch.setattr(impl._SortedRuns, "_add_run", counting_add_run)
    rng = random.Random(1)
    model, target = ModelTarget(), ImplTarget()
    config = {"max_open": 1500}
    model.reset(config)
    target.reset(config)
    now = 0
    for step in range(25_000):
        now += rng.choice((0, 0, 1, 3, 17))
        op, args = random_call(rng, now, model.book.next_id)
        expected, actual = model.step(op, args, now), target.step(op, args, now)
        assert responses_agree(expected, actual), (step, op, args, now, expected, actual)
        if step % 1000 == 0:
            assert same_json(model.observe(), target.observe()), step
    assert same_json(model.observe(), target.observe())
    assert compactions, "the run never compacted the Book; make it churn more"
    split_tail = impl._RUN_MAX + 1 - impl._RUN_MAX // 2
    assert split_tail in runs_added, "no index run was ever split"
    assert model.observe()["next_id"] > 1000

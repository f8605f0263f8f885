"""Realistic bugs planted in the production implementation, each of which the default
schedules campaign must catch with a short, shrunk counterexample.

The bugs are subclasses of `ScheduleServer` (the implementation has no mutation hooks);
catch-up bugs go through `SequentialCatchUp`, the Lean's loop over the server's own
promise.create, which the campaign first shows to be a correct stand-in."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import Any

import pytest

from duespec.campaigns.run import run_campaign
from duespec.impl.cron import compile_cron
from duespec.impl import schedules_sql
from duespec.impl.schedules import ScheduleServer
from duespec.impl.schedules_records import (
    TARGET_TAG, Promise, PromiseCreate, Schedule, execute_message, expand, next_run,
)
from duespec.systems.schedules import SYSTEM, ImplTarget
from duespec.systems.schedules import adapter as schedules_adapter
from duespec.systems.schedules.adapter import RESTART_EVERY
from duespec.targets.resolve import WatchedFactory

#: A counterexample longer than this is not one a person can read at a glance.
SHORT = 12


class SequentialCatchUp(ScheduleServer):
    """catchUp one occurrence at a time, with three choices a bug can get wrong as hooks.

    A bug that can hang `tick` (a schedule left due forever) is planted apart, behind the
    per-call deadline of duespec.targets.resolve.WatchedTarget."""

    def _catch_up(self, s: Schedule, now: int) -> Schedule:
        cron = compile_cron(s.cron)
        while s.next_run_at <= now:
            cron_time = s.next_run_at
            self._promise_create(PromiseCreate(
                id=self.promise_id(s, cron_time, now), timeout_at=self.timeout_at(s, cron_time, now),
                param=s.promise_param, tags=s.promise_tags),
                cron_time if self.profile == "lean" else now)
            s = self.advanced(s, cron_time, next_run(cron, cron_time))
        return s

    def promise_id(self, s: Schedule, cron_time: int, now: int) -> str:
        return expand(s.promise_id, s.id, cron_time)

    def timeout_at(self, s: Schedule, cron_time: int, now: int) -> int:
        return cron_time + s.promise_timeout

    def advanced(self, s: Schedule, cron_time: int, following: int) -> Schedule:
        return replace(s, last_run_at=cron_time, next_run_at=following)


class OnlyLatestMissedTick(SequentialCatchUp):
    """Fires once for the whole outage, at the most recent tick."""

    def _catch_up(self, s: Schedule, now: int) -> Schedule:
        cron = compile_cron(s.cron)
        latest = s.next_run_at
        while latest <= now and next_run(cron, latest) <= now:
            latest = next_run(cron, latest)
        return super()._catch_up(replace(s, next_run_at=latest), now)


class FirstMissedTickSkipped(SequentialCatchUp):
    """Walks the occurrences strictly after nextRunAt, forgetting nextRunAt itself."""

    def _catch_up(self, s: Schedule, now: int) -> Schedule:
        if s.next_run_at > now:
            return s
        return super()._catch_up(replace(s, next_run_at=next_run(compile_cron(s.cron), s.next_run_at)), now)


class TimeoutFromWallClock(SequentialCatchUp):
    """Anchors each occurrence's timeout at the firing time instead of its cronTime."""

    def timeout_at(self, s: Schedule, cron_time: int, now: int) -> int:
        return now + s.promise_timeout


class IdFromFiringTime(SequentialCatchUp):
    """Expands the id with the firing time: every missed tick of one outage collides."""

    def promise_id(self, s: Schedule, cron_time: int, now: int) -> str:
        return expand(s.promise_id, s.id, now)


class LastRunAtNotUpdated(SequentialCatchUp):
    def advanced(self, s: Schedule, cron_time: int, following: int) -> Schedule:
        return replace(s, next_run_at=following)


class ServerProfileAnchorsAtTick(SequentialCatchUp):
    """Ignores the profile: always hands cronTime to promise.create (wrong under `server`)."""

    def _catch_up(self, s: Schedule, now: int) -> Schedule:
        profile, self.profile = self.profile, "lean"
        try:
            return super()._catch_up(s, now)
        finally:
            self.profile = profile


class ReArmSkipped(ScheduleServer):
    """Stores the advanced schedule and disarms the fired timeout, but never arms the next."""

    def _on_schedule_timeout(self, schedule_id: str, now: int) -> None:
        s = self.store.get_schedule(schedule_id)
        if s is not None:
            self.store.set_schedule(self._catch_up(s, now))
            self.store.del_schedule_timeout(schedule_id)


class ReArmedAtFiredTick(ScheduleServer):
    """Re-arms at the tick it just fired instead of nextRunAt: the schedule stays due, so
    a tick fires it again and again and never returns."""

    def _on_schedule_timeout(self, schedule_id: str, now: int) -> None:
        s0 = self.store.get_schedule(schedule_id)
        if s0 is not None:
            s = self._catch_up(s0, now)
            self.store.set_schedule(s)
            self.store.del_schedule_timeout(s.id)
            self.store.set_schedule_timeout(s.id, s0.next_run_at)


class DeleteLeavesTimeoutArmed(ScheduleServer):
    def schedule_delete(self, schedule_id: str, now: int) -> dict[str, Any]:
        with self.store.transaction():
            if self.store.get_schedule(schedule_id) is None:
                return {"status": 404}
            self.store.del_schedule(schedule_id)
        return {"status": 200}


class CreateOverwrites(ScheduleServer):
    """An upsert: a second create replaces the stored schedule with the new body."""

    def schedule_create(self, req: Any, now: int) -> dict[str, Any]:
        with self.store.transaction():
            self.store.del_schedule(req.id)
        return super().schedule_create(req, now)


class NextCronNotStrictlyAfter(ScheduleServer):
    """nextCron read as "at or after": created exactly on a fire instant, it fires at once."""

    def schedule_create(self, req: Any, now: int) -> dict[str, Any]:
        with self.store.transaction():
            s = self.store.get_schedule(req.id)
            if s is None:
                s = Schedule(id=req.id, cron=req.cron, promise_id=req.promise_id,
                             promise_timeout=req.promise_timeout, promise_param=req.promise_param,
                             promise_tags=req.promise_tags,
                             next_run_at=next_run(req.compiled, max(now - 1, 0)),
                             last_run_at=None, created_at=now)
                self.store.set_schedule(s)
                self.store.set_schedule_timeout(s.id, s.next_run_at)
        return {"status": 200, "schedule": s.to_json()}


class ProjectionMissing(ScheduleServer):
    """promise.get answers the stored record: a pending promise past its timeout reads pending."""

    def promise_get(self, promise_id: str, now: int) -> dict[str, Any]:
        with self.store.transaction():
            p = self.store.get_promise(promise_id)
        return {"status": 404} if p is None else {"status": 200, "promise": p.record()}


class LookupBeforeValidation(ScheduleServer):
    """Answers a duplicate create with the stored schedule before checking the request."""

    def handle(self, op: str, args: dict[str, Any], now: int) -> dict[str, Any]:
        if op == "schedule.create" and isinstance(args, dict) and isinstance(args.get("id"), str):
            with self.store.transaction():
                s = self.store.get_schedule(args["id"])
            if s is not None:
                return {"status": 200, "schedule": s.to_json()}
        return super().handle(op, args, now)


class DispatchesExpiredAtCreation(SequentialCatchUp):
    """Sends `execute` for a targeted promise even when it is born already timed out."""

    def _promise_create(self, req: PromiseCreate, now: int) -> Promise:
        existed = self.store.get_promise(req.id) is not None
        p = super()._promise_create(req, now)
        if not existed and p.state != "pending" and TARGET_TAG in p.tags:
            self.store.set_message(p.tags[TARGET_TAG], execute_message(p.id, 0))
        return p


#: (bug, profile it is checked in).
MUTANTS: list[tuple[type[ScheduleServer], str]] = [
    (OnlyLatestMissedTick, "lean"),
    (FirstMissedTickSkipped, "lean"),
    (TimeoutFromWallClock, "lean"),
    (IdFromFiringTime, "lean"),
    (LastRunAtNotUpdated, "lean"),
    (ServerProfileAnchorsAtTick, "server"),
    (ReArmSkipped, "lean"),
    (DeleteLeavesTimeoutArmed, "lean"),
    (CreateOverwrites, "lean"),
    (NextCronNotStrictlyAfter, "lean"),
    (ProjectionMissing, "lean"),
    (LookupBeforeValidation, "lean"),
    (DispatchesExpiredAtCreation, "server"),
]


#: The default campaign's 200 runs, each of 25 steps rather than 50: every bug here shows
#: within a few steps, and shorter runs halve the shrinking (`duespec check` runs 50).
STEPS = 25


@pytest.mark.parametrize("profile", ["lean", "server"])
def test_the_sequential_stand_in_is_correct(profile: str) -> None:
    result = run_campaign(SYSTEM, lambda: ImplTarget(SequentialCatchUp), profile=profile,
                          examples=40, step_count=STEPS)
    assert result.ok, result.failure


#: These take 8-190 s each to catch and shrink: make test-long runs them.
SLOW_TO_SHRINK = {OnlyLatestMissedTick, FirstMissedTickSkipped, TimeoutFromWallClock, IdFromFiringTime,
                  ServerProfileAnchorsAtTick, CreateOverwrites, ProjectionMissing, LookupBeforeValidation,
                  DispatchesExpiredAtCreation}


@pytest.mark.parametrize("mutant, profile", [
    pytest.param(m, p, id=m.__name__, marks=pytest.mark.long if m in SLOW_TO_SHRINK else ()) for m, p in MUTANTS])
def test_the_campaign_catches_and_shrinks(mutant: type[ScheduleServer], profile: str) -> None:
    result = run_campaign(SYSTEM, lambda: ImplTarget(mutant), profile=profile, step_count=STEPS)
    assert not result.ok, f"{mutant.__name__} survived {result.examples} runs"
    print(f"\n{mutant.__name__} [{profile}]: caught, {len(result.counterexample)} steps")
    for step in result.counterexample:
        print(f"  {step['op']} {json.dumps(step['args'])} now={step['now']}")
    print("  " + result.failure.splitlines()[0])
    # a target finding (a lookup before validation raises on an id that is no text, say), never duespec's
    assert result.failure.startswith(("Divergence", "AssertionError", "TargetRaised")), result.failure
    assert 0 < len(result.counterexample) <= SHORT, (
        f"{mutant.__name__}: counterexample of {len(result.counterexample)} steps\n{result.failure}")


def test_a_bug_that_hangs_tick_is_caught_and_cannot_hang_the_campaign() -> None:
    """Whichever the campaign meets first, the wrong timeout after schedule.timeout or a
    tick that never returns, it fails in bounded time with a short counterexample."""
    result = run_campaign(SYSTEM, WatchedFactory(lambda: ImplTarget(ReArmedAtFiredTick), 1.0, "impl"),
                          step_count=STEPS)
    assert not result.ok, f"ReArmedAtFiredTick survived {result.examples} runs"
    print(f"\nReArmedAtFiredTick: {result.failure_kind}, {len(result.counterexample)} steps")
    assert result.failure.startswith(("Divergence", "AssertionError", "TargetError")), result.failure
    assert 0 < len(result.counterexample) <= SHORT, result.failure


class ForgetsSchedulesOnReopen(ScheduleServer):
    """A restarted server that loses its schedules (say, a table created anew on open)."""

    def __init__(self, path: str = ":memory:", **config: Any) -> None:
        reopened = path != ":memory:" and os.path.exists(path)
        super().__init__(path, **config)
        if reopened:
            with self.store.transaction():
                for (schedule_id,) in self.store.db.execute("SELECT id FROM schedules").fetchall():
                    self.store.del_schedule(schedule_id)


def test_a_server_that_forgets_its_schedules_on_reopen_is_caught() -> None:
    """The server profile's store file is reopened every RESTART_EVERY steps (ImplTarget):
    what a restart loses shows as a divergence at the next step that reads it."""
    result = run_campaign(SYSTEM, lambda: ImplTarget(ForgetsSchedulesOnReopen), profile="server",
                          step_count=STEPS)
    assert not result.ok, f"survived {result.examples} runs"
    assert result.failure.startswith(("Divergence", "AssertionError")), result.failure
    assert len(result.counterexample) >= RESTART_EVERY  # the failing step comes after a restart


def test_a_store_file_two_servers_can_open_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before each reopen a second server must be refused the open file (StoreInUse)."""
    monkeypatch.setattr(schedules_sql, "_own", lambda path, wait: open(os.devnull, encoding="utf-8"))
    result = run_campaign(SYSTEM, SYSTEM.impl, profile="server", step_count=STEPS)
    assert not result.ok, f"survived {result.examples} runs"
    assert "a second server opened the store file" in result.failure, result.failure


def test_a_server_that_cannot_open_leaves_no_store_file(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    class CannotOpen(ScheduleServer):
        def __init__(self, *args: Any, **config: Any) -> None:
            raise OSError("planted: the disk is full")

    monkeypatch.setattr(schedules_adapter, "STORE_DIR", str(tmp_path))
    with pytest.raises(OSError, match="planted"):
        ImplTarget(CannotOpen).reset({"profile": "server"})
    assert list(tmp_path.iterdir()) == []

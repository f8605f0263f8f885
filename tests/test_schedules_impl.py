"""The production schedules server (duespec.impl.schedules): handlers, profiles, atomicity,
persistence, the 400 path, and agreement with the reference model on whole scenarios."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from duespec.impl import schedules as impl
from duespec.impl.schedules import ScheduleServer
from duespec.impl.schedules_records import (
    ID_PLACEHOLDER, MAX_DURATION, MAX_INSTANT, MAX_TIME, NEVER, TIMESTAMP_PLACEHOLDER, Promise, Task, Value, expand,
)
from duespec.model import schedules as model
from duespec.targets.interface import comparable

T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z, a whole minute
MIN, HOUR, DAY = 60_000, 3_600_000, 86_400_000
EMPTY = {"headers": {}, "data": None}
TARGET = {"resonate:target": "poll://any@workers"}
TIMER = {"resonate:timer": "true"}


@pytest.fixture
def lean() -> Iterator[ScheduleServer]:
    server = ScheduleServer()
    yield server
    server.close()


@pytest.fixture(params=["lean", "server"])
def either(request: pytest.FixtureRequest) -> Iterator[ScheduleServer]:
    server = ScheduleServer(profile=request.param)
    yield server
    server.close()


def create_schedule(server: ScheduleServer, now: int, **overrides: Any) -> dict[str, Any]:
    args = {"id": "s", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}",
            "promiseTimeout": MIN, "promiseParam": EMPTY, "promiseTags": {}, **overrides}
    return server.handle("schedule.create", args, now)


def create_promise(server: ScheduleServer, now: int, id: str = "p", timeout_at: int | None = None,
                   tags: dict[str, str] | None = None) -> dict[str, Any]:
    timeout_at = now + MIN if timeout_at is None else timeout_at
    return server.handle("promise.create", {"id": id, "timeoutAt": timeout_at, "param": EMPTY,
                                            "tags": tags or {}}, now)


def promises(server: ScheduleServer) -> dict[str, dict[str, Any]]:
    return {p["id"]: p for p in server.observe()["promises"]}


def task(id: str, state: str) -> dict[str, Any]:
    """A task as P-02 creates it: version 0, nothing buffered, no lease."""
    return {"id": id, "state": state, "version": 0, "resumes": [], "ttl": None, "pid": None}


def record(promise: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in promise.items() if k not in ("callbacks", "listeners")}


# --- S-01..S-04 ----------------------------------------------------------------------------

def test_schedule_create_arms_the_first_tick_strictly_after_now(lean: ScheduleServer) -> None:
    response = create_schedule(lean, T0, promiseTags=TARGET)
    assert response == {"status": 200, "schedule": {
        "id": "s", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}", "promiseTimeout": MIN,
        "promiseParam": EMPTY, "promiseTags": TARGET, "nextRunAt": T0 + MIN, "lastRunAt": None,
        "createdAt": T0}}
    state = lean.observe()
    assert state["scheduleTimeouts"] == [{"id": "s", "timeout": T0 + MIN}]
    assert state["schedules"] == [response["schedule"]]
    assert state["promises"] == state["tasks"] == state["outbox"] == []


def test_schedule_create_of_an_existing_id_answers_the_stored_one_and_changes_nothing(
        lean: ScheduleServer) -> None:
    first = create_schedule(lean, T0)
    before = lean.observe()
    again = create_schedule(lean, T0 + 5 * MIN, cron="0 * * * *", promiseTimeout=0, promiseTags=TARGET)
    assert again == first
    assert lean.observe() == before


def test_schedule_get_delete_and_search(lean: ScheduleServer) -> None:
    assert lean.handle("schedule.get", {"id": "s"}, T0) == {"status": 404}
    created = create_schedule(lean, T0)["schedule"]
    assert lean.handle("schedule.get", {"id": "s"}, T0) == {"status": 200, "schedule": created}
    assert lean.handle("schedule.search", {"limit": 3, "cursor": "x"}, T0) == {"status": 501}
    assert lean.handle("schedule.delete", {"id": "s"}, T0) == {"status": 200}
    assert lean.observe()["schedules"] == lean.observe()["scheduleTimeouts"] == []
    assert lean.handle("schedule.delete", {"id": "s"}, T0) == {"status": 404}
    assert lean.handle("schedule.get", {"id": "s"}, T0) == {"status": 404}


def test_schedule_timeout_of_an_absent_schedule_changes_nothing(lean: ScheduleServer) -> None:
    create_schedule(lean, T0)
    lean.handle("schedule.delete", {"id": "s"}, T0)
    before = lean.observe()
    assert lean.handle("schedule.timeout", {"id": "s"}, T0 + DAY) == {"status": 200}
    assert lean.observe() == before


# --- P-01, P-02 ----------------------------------------------------------------------------

def test_promise_create_plain_is_pending_and_arms_nothing(lean: ScheduleServer) -> None:
    response = create_promise(lean, T0)
    assert response == {"status": 200, "promise": {
        "id": "p", "state": "pending", "param": EMPTY, "value": EMPTY, "tags": {},
        "timeoutAt": T0 + MIN, "createdAt": T0, "settledAt": None}}
    state = lean.observe()
    assert state["promiseTimeouts"] == state["tasks"] == state["outbox"] == []


def test_promise_create_timer_arms_its_timeout_without_a_task(lean: ScheduleServer) -> None:
    create_promise(lean, T0, tags=TIMER)
    state = lean.observe()
    assert state["promiseTimeouts"] == [{"id": "p", "timeout": T0 + MIN}]
    assert state["tasks"] == []


def test_promise_create_with_target_dispatches_a_task(lean: ScheduleServer) -> None:
    create_promise(lean, T0, tags=TARGET)
    state = lean.observe()
    assert state["promiseTimeouts"] == [{"id": "p", "timeout": T0 + MIN}]
    assert state["tasks"] == [task("p", "pending")]
    assert state["taskTimeouts"] == [{"id": "p", "kind": 0, "timeout": T0 + 5000}]
    assert state["outbox"] == [{"address": TARGET["resonate:target"],
                                "message": {"kind": "execute", "taskId": "p", "version": 0}}]


@pytest.mark.parametrize(("delay", "retry_at", "dispatched"),
                         [(T0 + HOUR, T0 + HOUR, False), (T0, T0 + 5000, True)])
def test_promise_create_with_delay(lean: ScheduleServer, delay: int, retry_at: int, dispatched: bool) -> None:
    create_promise(lean, T0, timeout_at=T0 + DAY, tags={**TARGET, "resonate:delay": str(delay)})
    state = lean.observe()
    assert state["taskTimeouts"] == [{"id": "p", "kind": 0, "timeout": retry_at}]
    assert bool(state["outbox"]) is dispatched


@pytest.mark.parametrize("tags", [TARGET, {**TARGET, **TIMER}])
def test_promise_expired_at_creation_is_settled_task_fulfilled_nothing_sent_nothing_armed(
        lean: ScheduleServer, tags: dict[str, str]) -> None:
    response = create_promise(lean, T0, timeout_at=T0 - 10, tags=tags)
    expected_state = "resolved" if "resonate:timer" in tags else "rejected_timedout"
    assert response["promise"] == {"id": "p", "state": expected_state, "param": EMPTY, "value": EMPTY,
                                   "tags": tags, "timeoutAt": T0 - 10, "createdAt": T0 - 10,
                                   "settledAt": T0 - 10}
    state = lean.observe()
    assert state["tasks"] == [task("p", "fulfilled")]
    assert state["outbox"] == state["promiseTimeouts"] == state["taskTimeouts"] == []


def test_promise_create_and_get_of_an_existing_id_project_without_writing(lean: ScheduleServer) -> None:
    created = create_promise(lean, T0, tags=TARGET)["promise"]
    assert lean.handle("promise.get", {"id": "p"}, T0 + MIN - 1) == {"status": 200, "promise": created}
    before = lean.observe()
    projected = {**created, "state": "rejected_timedout", "settledAt": T0 + MIN}
    assert lean.handle("promise.get", {"id": "p"}, T0 + MIN) == {"status": 200, "promise": projected}
    assert create_promise(lean, T0 + HOUR, tags={}) == {"status": 200, "promise": projected}
    assert lean.observe() == before
    assert lean.handle("promise.get", {"id": "q"}, T0) == {"status": 404}


# --- onPromiseTimeout ----------------------------------------------------------------------

def test_promise_timeout_settles_at_timeout_fulfills_task_and_disarms(lean: ScheduleServer) -> None:
    create_promise(lean, T0, tags=TARGET)
    assert lean.handle("promise.timeout", {"id": "p"}, T0 + HOUR) == {"status": 200}
    state = lean.observe()
    assert record(state["promises"][0]) == {
        "id": "p", "state": "rejected_timedout", "param": EMPTY, "value": EMPTY, "tags": TARGET,
        "timeoutAt": T0 + MIN, "createdAt": T0, "settledAt": T0 + MIN}
    assert state["tasks"][0]["state"] == "fulfilled"
    assert state["promiseTimeouts"] == state["taskTimeouts"] == []
    again = lean.observe()
    lean.handle("promise.timeout", {"id": "p"}, T0 + DAY)  # settled: nothing more happens
    lean.handle("promise.timeout", {"id": "absent"}, T0 + DAY)
    assert lean.observe() == again


def test_timer_times_out_resolved(lean: ScheduleServer) -> None:
    create_promise(lean, T0, tags=TIMER)
    lean.handle("promise.timeout", {"id": "p"}, T0 + MIN)
    assert promises(lean)["p"]["state"] == "resolved"


def test_promise_timeout_unblocks_listeners_scrubs_and_resumes_awaiters(lean: ScheduleServer) -> None:
    """Registrations planted straight in the store, so the test names exactly the ones it needs."""
    store = lean.store
    with store.transaction():
        nothing = Value({}, None)
        store.set_promise(Promise("awaited", "pending", nothing, nothing, {}, T0 + MIN, T0, None,
                                  callbacks=("sleeper", "busy"), listeners=("poll://l1",)))
        store.set_promise(Promise("sleeper", "pending", nothing, nothing, TARGET, T0 + DAY, T0, None,
                                  callbacks=("awaited", "other")))
        store.set_promise(Promise("busy", "pending", nothing, nothing, {}, T0 + DAY, T0, None))
        store.set_task(Task("sleeper", "suspended", 3))
        store.set_task(Task("busy", "acquired", 1, resumes=("earlier",)))
        store.set_promise_timeout("awaited", T0 + MIN)
    fired = lean.handle("tick", {}, T0 + MIN)
    assert fired == {"status": 200, "fired": [{"kind": "promise", "id": "awaited"}]}
    state = lean.observe()
    by_id = {p["id"]: p for p in state["promises"]}
    assert by_id["awaited"]["callbacks"] == by_id["awaited"]["listeners"] == []
    assert by_id["sleeper"]["callbacks"] == ["other"]  # the scrub
    tasks = {t["id"]: t for t in state["tasks"]}
    assert tasks["sleeper"] == {"id": "sleeper", "state": "pending", "version": 3, "resumes": ["awaited"],
                                "ttl": None, "pid": None}
    assert tasks["busy"]["resumes"] == ["earlier", "awaited"]
    assert state["taskTimeouts"] == [{"id": "sleeper", "kind": 0, "timeout": T0 + MIN + 5000}]
    assert {e["message"]["kind"] for e in state["outbox"]} == {"execute", "unblock"}
    unblock = next(e for e in state["outbox"] if e["message"]["kind"] == "unblock")
    assert unblock["address"] == "poll://l1"
    assert unblock["message"]["promise"] == record(by_id["awaited"])


# --- catch-up, both profiles ---------------------------------------------------------------

def test_catch_up_fires_every_missed_tick_once_in_order(either: ScheduleServer,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    created_at: list[int] = []
    original = impl.Store.create_occurrences

    def spy(store: impl.Store, template: str, times: Any, *rest: Any) -> None:
        created_at.extend(times)
        original(store, template, times, *rest)

    monkeypatch.setattr(impl.Store, "create_occurrences", spy)
    monkeypatch.setattr(impl, "CATCH_UP_CHUNK", 1000)
    create_schedule(either, T0 + 30_000, promiseTags=TARGET)
    outage_end = T0 + 3 * DAY + 30_000
    either.handle("schedule.timeout", {"id": "s"}, outage_end)
    expected = [T0 + k * MIN for k in range(1, 3 * 1440 + 1)]
    assert created_at == expected  # each tick once, oldest first, across chunks
    state = either.observe()
    assert sorted(int(p["id"].split(".")[1]) for p in state["promises"]) == expected
    assert state["schedules"][0]["lastRunAt"] == expected[-1]
    assert state["schedules"][0]["nextRunAt"] == expected[-1] + MIN
    assert state["scheduleTimeouts"] == [{"id": "s", "timeout": expected[-1] + MIN}]


UNICODE = st.text(st.characters(blacklist_categories=("Cs",)))


@given(schedule_id=UNICODE.filter(lambda id: id and not set(id) & set(".{}")),
       pieces=st.lists(st.one_of(UNICODE, st.just(ID_PLACEHOLDER)), min_size=2, max_size=5),
       missed=st.integers(0, 4))
@example(schedule_id="s\x00\U0001F600", pieces=["a\x00", ID_PLACEHOLDER, "\U0001F600z"], missed=2)
@settings(max_examples=60, deadline=None)
def test_catch_up_ids_are_the_template_expanded_for_each_tick(schedule_id: str, pieces: list[str],
                                                              missed: int) -> None:
    """The store fills in the timestamp itself (in SQLite): for any Unicode template and
    schedule id, NUL and astral characters too, it must give `expand`'s ids."""
    template = TIMESTAMP_PLACEHOLDER.join(pieces)
    server = ScheduleServer()
    try:
        assert create_schedule(server, T0 - 1, id=schedule_id, promiseId=template)["status"] == 200
        server.handle("schedule.timeout", {"id": schedule_id}, T0 + missed * MIN)
        ticks = [T0 + k * MIN for k in range(missed + 1)]
        found = {p["id"]: (p["timeoutAt"], p["createdAt"]) for p in server.observe()["promises"]}
        assert found == {expand(template, schedule_id, tick): (tick + MIN, tick) for tick in ticks}
    finally:
        server.close()


def test_lean_late_occurrence_is_created_pending_at_its_tick(lean: ScheduleServer) -> None:
    create_schedule(lean, T0, promiseTags=TARGET, promiseTimeout=MIN)
    lean.handle("schedule.timeout", {"id": "s"}, T0 + 10 * MIN)
    first = promises(lean)[f"s.{T0 + MIN}"]
    assert (first["state"], first["createdAt"], first["settledAt"]) == ("pending", T0 + MIN, None)
    state = lean.observe()
    assert len(state["outbox"]) == len(state["tasks"]) == len(state["promiseTimeouts"]) == 10
    assert {t["timeout"] for t in state["taskTimeouts"]} == {T0 + k * MIN + 5000 for k in range(1, 11)}
    fired = lean.handle("tick", {}, T0 + 10 * MIN)["fired"]
    # The 10th is not due yet.
    assert fired == [{"kind": "promise", "id": f"s.{T0 + k * MIN}"} for k in range(1, 10)]


def test_server_late_occurrence_is_born_settled_with_no_dispatch() -> None:
    server = ScheduleServer(profile="server")
    create_schedule(server, T0, promiseTags=TARGET, promiseTimeout=MIN)
    now = T0 + 10 * MIN + 1
    server.handle("schedule.timeout", {"id": "s"}, now)
    state = server.observe()
    by_id = {p["id"]: p for p in state["promises"]}
    for k in range(1, 10):  # timed out before the firing: settled, fulfilled, silent
        p = by_id[f"s.{T0 + k * MIN}"]
        at = T0 + (k + 1) * MIN
        assert (p["state"], p["createdAt"], p["settledAt"]) == ("rejected_timedout", at, at)
    last = by_id[f"s.{T0 + 10 * MIN}"]
    assert (last["state"], last["createdAt"]) == ("pending", now)
    assert [e["message"]["taskId"] for e in state["outbox"]] == [last["id"]]
    assert state["promiseTimeouts"] == [{"id": last["id"], "timeout": T0 + 11 * MIN}]
    assert state["taskTimeouts"] == [{"id": last["id"], "kind": 0, "timeout": now + 5000}]
    assert sum(t["state"] == "fulfilled" for t in state["tasks"]) == 9
    server.close()


def test_lean_zero_timeout_occurrences_are_born_settled(lean: ScheduleServer) -> None:
    create_schedule(lean, T0, promiseTags=TARGET, promiseTimeout=0)
    lean.handle("schedule.timeout", {"id": "s"}, T0 + 3 * MIN)
    state = lean.observe()
    assert [(p["state"], p["createdAt"]) for p in state["promises"]] == [
        ("rejected_timedout", T0 + k * MIN) for k in (1, 2, 3)]
    assert [t["state"] for t in state["tasks"]] == ["fulfilled"] * 3
    assert state["outbox"] == state["promiseTimeouts"] == state["taskTimeouts"] == []


def test_a_promise_already_there_is_kept_by_its_tick(either: ScheduleServer) -> None:
    create_schedule(either, T0, promiseTags=TARGET)
    taken = create_promise(either, T0, id=f"s.{T0 + 2 * MIN}", timeout_at=T0 + DAY, tags={})["promise"]
    either.handle("schedule.timeout", {"id": "s"}, T0 + 3 * MIN)
    state = either.observe()
    assert record(promises(either)[taken["id"]]) == taken
    assert taken["id"] not in {t["id"] for t in state["tasks"]}
    assert len(state["promises"]) == 3


def test_refiring_the_same_timeout_changes_nothing(either: ScheduleServer) -> None:
    create_schedule(either, T0, promiseTags=TARGET)
    either.handle("schedule.timeout", {"id": "s"}, T0 + 5 * MIN)
    before = either.observe()
    either.handle("schedule.timeout", {"id": "s"}, T0 + 5 * MIN + 59_999)
    assert either.observe() == before


def test_a_schedule_with_no_occurrence_left_waits_beyond_max_time(lean: ScheduleServer) -> None:
    last_minute = MAX_TIME - MAX_TIME % MIN
    create_schedule(lean, last_minute - 1, cron="59 23 31 12 *")
    lean.handle("schedule.timeout", {"id": "s"}, MAX_TIME)
    s = lean.observe()["schedules"][0]
    assert (s["lastRunAt"], s["nextRunAt"]) == (last_minute, NEVER)
    assert create_schedule(lean, MAX_TIME, id="t")["status"] == 400  # no occurrence after now


# --- tick ----------------------------------------------------------------------------------

def test_tick_fires_in_timeout_kind_id_order_until_nothing_is_due(lean: ScheduleServer) -> None:
    create_schedule(lean, T0, id="b", promiseTags=TIMER, promiseTimeout=MIN)
    create_schedule(lean, T0, id="a", promiseTags=TIMER, promiseTimeout=MIN)
    create_promise(lean, T0, id="z", timeout_at=T0 + MIN, tags=TIMER)
    create_promise(lean, T0, id="y", timeout_at=T0 + 2 * MIN, tags=TIMER)
    fired = lean.handle("tick", {}, T0 + 2 * MIN)["fired"]
    assert fired == [
        {"kind": "promise", "id": "z"},  # promise before schedule at T0 + MIN
        {"kind": "schedule", "id": "a"}, {"kind": "schedule", "id": "b"},
        {"kind": "promise", "id": "a." + str(T0 + MIN)}, {"kind": "promise", "id": "b." + str(T0 + MIN)},
        {"kind": "promise", "id": "y"},
    ]
    assert lean.handle("tick", {}, T0 + 2 * MIN) == {"status": 200, "fired": []}
    state = lean.observe()
    assert all(t["timeout"] > T0 + 2 * MIN for t in state["promiseTimeouts"] + state["scheduleTimeouts"])


def test_schedules_sharing_a_template_collide_and_the_first_creator_wins(either: ScheduleServer) -> None:
    state = model.new_state(model.Config(profile=either.profile))
    steps = [("schedule.create", {"id": sid, "cron": "*/5 * * * *", "promiseId": "tick-{{.timestamp}}",
                                  "promiseTimeout": HOUR, "promiseParam": EMPTY, "promiseTags": tags}, T0)
             for sid, tags in (("a", TARGET), ("b", TIMER))]
    steps += [("schedule.timeout", {"id": "b"}, T0 + 12 * MIN), ("tick", {}, T0 + DAY)]
    for op, args, now in steps:
        assert comparable(either.handle(op, args, now)) == comparable(model.step(state, op, args, now))
    assert either.observe() == model.observe(state)
    fired_by_b = [p for p in either.observe()["promises"] if int(p["id"][5:]) <= T0 + 10 * MIN]
    assert [p["tags"] for p in fired_by_b] == [TIMER] * 2  # b fired first; a later found them there


def test_unusual_strings_round_trip_and_order_by_code_point_as_the_model() -> None:
    """NUL, non-ASCII and astral characters: SQLite orders UTF-8 bytes, which is code-point order."""
    state, server = model.new_state(), ScheduleServer()
    tags = {"resonate:timer": "true", "resonate:target": "a\x00b"}
    steps: list[tuple[str, dict[str, Any], int]] = [
        ("promise.create", {"id": id, "timeoutAt": T0 + 5,
                            "param": {"headers": {"\x00k": "v\x00"}, "data": "\x00"}, "tags": tags}, T0)
        for id in ("a\x00b", "a\x00a", "a", "\x00", "é", "\uffff", "\U0001f600")]
    steps += [("schedule.create", {"id": "x\x00y", "cron": "* * * * *",
                                   "promiseId": "{{.id}}\x00{{.timestamp}}", "promiseTimeout": 7,
                                   "promiseParam": EMPTY, "promiseTags": TARGET}, T0),
              ("tick", {}, T0 + 3 * MIN)]
    for op, args, now in steps:
        assert server.handle(op, args, now) == model.step(state, op, args, now)
    assert server.observe() == model.observe(state)
    server.close()


def test_due_timeouts_are_found_through_their_index(lean: ScheduleServer) -> None:
    db = lean.store.db
    for query in ("SELECT id FROM promise_timeouts WHERE timeout <= 5 ORDER BY timeout, id",
                  "SELECT timeout, id FROM schedule_timeouts WHERE timeout <= 5 ORDER BY timeout, id"):
        plan = " ".join(str(row[-1]) for row in db.execute("EXPLAIN QUERY PLAN " + query))
        assert "USING COVERING INDEX" in plan and "_due" in plan, plan


# --- atomicity -----------------------------------------------------------------------------

def test_a_failure_mid_catch_up_leaves_the_store_exactly_as_before(lean: ScheduleServer,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    create_schedule(lean, T0, promiseTags=TARGET)
    create_promise(lean, T0, id="bystander", tags=TARGET)
    before = lean.observe()
    calls = {"n": 0}
    original = impl.Store.create_occurrences

    def failing_on_the_third(store: impl.Store, *args: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("injected failure")
        original(store, *args)

    monkeypatch.setattr(impl.Store, "create_occurrences", failing_on_the_third)
    monkeypatch.setattr(impl, "CATCH_UP_CHUNK", 1)  # two occurrences are fully written first
    with pytest.raises(RuntimeError, match="injected"):
        lean.handle("schedule.timeout", {"id": "s"}, T0 + HOUR)
    assert calls["n"] == 3
    assert lean.observe() == before


def test_a_database_failure_mid_insert_rolls_back_the_whole_tick(lean: ScheduleServer) -> None:
    create_schedule(lean, T0, id="a", promiseTags=TARGET)
    create_schedule(lean, T0, id="b", promiseTags=TARGET)
    create_promise(lean, T0, id="due", timeout_at=T0 + 1, tags=TARGET)
    before = lean.observe()
    lean.store.db.execute(
        "CREATE TEMP TRIGGER third_insert_fails BEFORE INSERT ON main.promises "
        "WHEN (SELECT count(*) FROM main.promises) >= 3 BEGIN SELECT RAISE(ABORT, 'injected'); END")
    with pytest.raises(sqlite3.IntegrityError, match="injected"):
        lean.handle("tick", {}, T0 + 10 * MIN)  # fires "due", then schedule a, then fails
    assert lean.observe() == before
    lean.store.db.execute("DROP TRIGGER third_insert_fails")
    assert len(lean.handle("tick", {}, T0 + 10 * MIN)["fired"]) == 1 + 2 + 2 * 9


# --- persistence ---------------------------------------------------------------------------

def test_a_file_store_reopened_has_the_same_state_and_config(tmp_path: Path) -> None:
    path = str(tmp_path / "server.db")
    server = ScheduleServer(path, profile="server", retry_timeout=700)
    assert server.store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    create_schedule(server, T0, promiseTags=TARGET)
    create_promise(server, T0, id="own", tags={**TARGET, "resonate:delay": str(T0 + HOUR)})
    server.handle("tick", {}, T0 + 3 * MIN + 1)
    state = server.observe()
    server.close()
    reopened = ScheduleServer(path)
    assert (reopened.profile, reopened.retry_timeout) == ("server", 700)
    assert reopened.observe() == state
    assert reopened.handle("schedule.get", {"id": "s"}, T0)["schedule"] == state["schedules"][0]
    reopened.close()
    with pytest.raises(ValueError, match="profile"):
        ScheduleServer(path, profile="lean")


CRASH_MID_CATCH_UP = """
import os, sys
from duespec.impl import schedules as impl
calls = 0
def create_then_die(store, *args):
    global calls
    calls += 1
    if calls == 3:
        os._exit(9)  # the process dies: no rollback, no close
    original(store, *args)
original = impl.Store.create_occurrences
impl.Store.create_occurrences, impl.CATCH_UP_CHUNK = create_then_die, 1
impl.ScheduleServer(sys.argv[1]).handle("schedule.timeout", {"id": "s"}, int(sys.argv[2]))
"""


def test_a_process_killed_mid_catch_up_leaves_the_file_as_before(tmp_path: Path) -> None:
    path = str(tmp_path / "server.db")
    server = ScheduleServer(path)
    create_schedule(server, T0, promiseTags=TARGET)
    before = server.observe()
    server.close()
    died = subprocess.run([sys.executable, "-c", CRASH_MID_CATCH_UP, path, str(T0 + HOUR)], timeout=60)
    assert died.returncode == 9
    reopened = ScheduleServer(path)
    assert reopened.observe() == before
    reopened.handle("schedule.timeout", {"id": "s"}, T0 + HOUR)
    assert len(reopened.observe()["promises"]) == 60
    reopened.close()


def test_bad_config_is_refused() -> None:
    with pytest.raises(ValueError, match="profile"):
        ScheduleServer(profile="fast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="retry_timeout"):
        ScheduleServer(retry_timeout=-1)


# --- the 400 path --------------------------------------------------------------------------

INVALID: list[tuple[str, dict[str, Any] | Any, str]] = [
    ("schedule.create", {"id": "s.x"}, "'.'"),
    ("schedule.create", {"id": ""}, "empty"),
    ("schedule.create", {"id": 5}, "id"),
    ("schedule.create", {"cron": "60 * * * *"}, "cron"),
    ("schedule.create", {"cron": "0 0 30 2 *"}, "cron"),
    ("schedule.create", {"cron": None}, "cron"),
    ("schedule.create", {"promiseId": "fixed"}, "{{.timestamp}}"),
    ("schedule.create", {"promiseTimeout": -1}, "promiseTimeout"),
    ("schedule.create", {"promiseTimeout": True}, "promiseTimeout"),
    ("schedule.create", {"promiseTimeout": MAX_DURATION + 1}, "promiseTimeout"),
    ("schedule.create", {"promiseTags": {"resonate:delay": "9" * 5000}}, "resonate:delay"),
    ("schedule.create", {"promiseTags": {"resonate:delay": str(MAX_INSTANT + 1)}}, "resonate:delay"),
    ("schedule.create", {"promiseParam": {"headers": {}}}, "promiseParam"),
    ("schedule.create", {"promiseParam": {"headers": {"a": 1}, "data": None}}, "headers"),
    ("schedule.create", {"promiseTags": {"k": 1}}, "promiseTags"),
    ("schedule.create", {"promiseTags": {"resonate:delay": "-5"}}, "resonate:delay"),
    ("schedule.create", {"promiseTags": {"resonate:delay": "٣"}}, "resonate:delay"),
    ("schedule.create", {"extra": 1}, "extra"),
    ("promise.create", {"id": "p", "timeoutAt": 1.5, "param": EMPTY, "tags": {}}, "timeoutAt"),
    ("promise.create", {"id": "p", "timeoutAt": 5, "param": EMPTY}, "tags"),
    ("promise.create", {"id": "p\udc80", "timeoutAt": 5, "param": EMPTY, "tags": {}}, "surrogate"),
    ("promise.get", {"id": None}, "id"),
    ("promise.get", [], "object"),
    ("schedule.timeout", {}, "id"),
    ("tick", {"now": 5}, "now"),
    ("schedule.warp", {}, "unknown op"),
]


@pytest.mark.parametrize(("op", "change", "named"), INVALID)
def test_invalid_requests_are_400_naming_the_problem_and_change_nothing(
        either: ScheduleServer, op: str, change: Any, named: str) -> None:
    create_schedule(either, T0, promiseTags=TARGET)
    either.handle("tick", {}, T0 + 2 * MIN)
    before = either.observe()
    args = change
    if op == "schedule.create":  # a valid request for the existing id, spoiled by `change`
        args = {"id": "s", "cron": "* * * * *", "promiseId": "{{.timestamp}}", "promiseTimeout": 0,
                "promiseParam": EMPTY, "promiseTags": {}, **change}
    response = either.handle(op, args, T0 + 5 * MIN)
    assert response["status"] == 400 and named in response["message"], response
    assert either.observe() == before


@pytest.mark.parametrize("now", [-1, MAX_TIME + 1, 1.0, True, None, "1"])
def test_an_invalid_now_is_400_for_every_op(lean: ScheduleServer, now: Any) -> None:
    create_schedule(lean, T0)
    before = lean.observe()
    for op in ("tick", "schedule.get", "schedule.search", "promise.get"):
        response = lean.handle(op, {} if op in ("tick", "schedule.search") else {"id": "s"}, now)
        assert response["status"] == 400 and "now" in response["message"]
    assert lean.observe() == before


@pytest.mark.parametrize("op", ["schedule.search", "promise.search", "task.search"])
def test_a_search_whose_args_are_no_object_is_400(lean: ScheduleServer, op: str) -> None:
    for args in (None, ["tags"], "args", 1):
        response = lean.handle(op, args, T0)
        assert response["status"] == 400 and "object" in response["message"], (args, response)
    assert lean.handle(op, {}, T0)["status"] == 501


# --- agreement with the reference model ------------------------------------------------------

def scenario(tags: dict[str, str], promise_timeout: int) -> list[tuple[str, dict[str, Any], int]]:
    """Two schedules through a long outage, hand-made promises on tick ids, and ticks."""
    schedule = {"cron": "17 * * * *", "promiseId": "{{.id}}.{{.timestamp}}",
                "promiseTimeout": promise_timeout, "promiseParam": {"headers": {"h": "1"}, "data": "x"},
                "promiseTags": tags}
    return [
        ("schedule.create", {"id": "hourly", **schedule}, T0),
        ("schedule.create", {"id": "six_hourly", **schedule, "cron": "0 */6 * * *"}, T0 + 1),
        ("promise.create", {"id": f"hourly.{T0 + 17 * MIN}", "timeoutAt": T0 + DAY, "param": EMPTY,
                            "tags": TIMER}, T0 + 2),
        ("promise.create", {"id": "own", "timeoutAt": T0 + HOUR, "param": EMPTY,
                            "tags": {**TARGET, "resonate:delay": str(T0 + 40 * DAY)}}, T0 + 3),
        ("tick", {}, T0 + 30 * MIN),
        ("schedule.timeout", {"id": "hourly"}, T0 + 30 * DAY + 5),
        ("promise.get", {"id": f"hourly.{T0 + 17 * MIN + HOUR}"}, T0 + 30 * DAY + 6),
        ("tick", {}, T0 + 45 * DAY),
        ("schedule.delete", {"id": "six_hourly"}, T0 + 45 * DAY),
        ("schedule.timeout", {"id": "six_hourly"}, T0 + 46 * DAY),
        ("promise.timeout", {"id": "own"}, T0 + 46 * DAY),
        ("tick", {}, T0 + 46 * DAY + 17 * MIN),
    ]


@pytest.mark.parametrize("profile", ["lean", "server"])
@pytest.mark.parametrize(("tags", "promise_timeout"), [
    ({}, 0), (TARGET, MIN), ({**TARGET, **TIMER}, DAY),
    ({**TARGET, "resonate:delay": str(T0 + 20 * DAY)}, 2 * DAY)])
def test_whole_scenarios_agree_with_the_model(profile: str, tags: dict[str, str],
                                              promise_timeout: int) -> None:
    state = model.new_state(model.Config(profile=profile))  # type: ignore[arg-type]
    server = ScheduleServer(profile=profile)  # type: ignore[arg-type]
    for op, args, now in scenario(tags, promise_timeout):
        expected, actual = model.step(state, op, args, now), server.handle(op, args, now)
        assert comparable(actual) == comparable(expected), (op, args, now)
        assert server.observe() == model.observe(state), (op, args, now)
    server.close()

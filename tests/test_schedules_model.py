"""The schedules model against behaviour computed by hand from the Lean at 83d64c3."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duespec.model import schedules as model
from duespec.model.schedules import catch_up as catch_up_module
from duespec.model.schedules.clock import MAX_DURATION, MAX_TIME, NEVER
from duespec.model.schedules.expand import expand

T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z, a whole minute
MIN = 60_000
EMPTY = {"headers": {}, "data": None}
TARGET = {"resonate:target": "poll://any@workers"}


def server(profile: str = "lean") -> model.ServerState:
    return model.new_state(model.Config(profile=profile))


def create(state: model.ServerState, now: int, **overrides: Any) -> dict[str, Any]:
    args = {"id": "s", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}",
            "promiseTimeout": 0, "promiseParam": EMPTY, "promiseTags": {}, **overrides}
    return model.step(state, "schedule.create", args, now)


def promises(state: model.ServerState) -> dict[str, dict[str, Any]]:
    return {p["id"]: p for p in model.observe(state)["promises"]}


# --- S-01..S-04 ----------------------------------------------------------------------------

def test_create_computes_first_tick_strictly_after_now_and_arms_it() -> None:
    state = server()
    response = create(state, T0)  # now is itself a fire instant: the next one is a minute on
    assert response["status"] == 200
    assert response["schedule"] == {
        "id": "s", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}", "promiseTimeout": 0,
        "promiseParam": EMPTY, "promiseTags": {}, "nextRunAt": T0 + MIN, "lastRunAt": None,
        "createdAt": T0}
    assert model.observe(state)["scheduleTimeouts"] == [{"id": "s", "timeout": T0 + MIN}]


def test_create_is_idempotent_and_ignores_the_duplicates_body() -> None:
    state = server()
    first = create(state, T0)
    before = model.observe(state)
    again = create(state, T0 + 5 * MIN, cron="0 * * * *", promiseTimeout=MIN, promiseTags=TARGET)
    assert again == first
    assert model.observe(state) == before


def test_get_and_delete_and_search() -> None:
    state = server()
    assert model.step(state, "schedule.get", {"id": "s"}, T0) == {"status": 404}
    create(state, T0)
    assert model.step(state, "schedule.get", {"id": "s"}, T0)["schedule"]["id"] == "s"
    assert model.step(state, "schedule.search", {}, T0) == {"status": 501}
    assert model.step(state, "schedule.delete", {"id": "s"}, T0) == {"status": 200}
    observed = model.observe(state)
    assert observed["schedules"] == [] and observed["scheduleTimeouts"] == []
    assert model.step(state, "schedule.delete", {"id": "s"}, T0) == {"status": 404}


@pytest.mark.parametrize("op", ["schedule.search", "promise.search", "task.search"])
@pytest.mark.parametrize("args", [None, ["tags"], "args", 1])
def test_a_search_whose_args_are_no_object_is_400(op: str, args: Any) -> None:
    """A search is 501 whatever its args, once they are an object: JSON that is none is no
    request to any op (X-03), as the HTTP front end and the deployed server refuse it."""
    state = server()
    before = model.observe(state)
    response = model.step(state, op, args, T0)
    assert response["status"] == 400 and "object" in response["message"]
    assert model.step(state, op, {}, T0) == {"status": 501}
    assert model.observe(state) == before


def test_firing_a_deleted_schedule_changes_nothing() -> None:
    state = server()
    create(state, T0)
    model.step(state, "schedule.delete", {"id": "s"}, T0)
    before = model.observe(state)
    assert model.step(state, "schedule.timeout", {"id": "s"}, T0 + 10 * MIN) == {"status": 200}
    assert model.observe(state) == before


# --- TO-02 / TO-03 catch-up ------------------------------------------------------------------

def test_catch_up_creates_each_missed_tick_in_order_at_its_cron_time(monkeypatch: pytest.MonkeyPatch) -> None:
    state = server("lean")
    create(state, T0 + 1, promiseTimeout=10 * MIN)
    calls: list[tuple[str, int, int]] = []
    real = catch_up_module.promise_create

    def spy(st: model.ServerState, req: Any, now: int) -> Any:
        calls.append((req.id, req.timeout_at, now))
        return real(st, req, now)

    monkeypatch.setattr(catch_up_module, "promise_create", spy)
    now = T0 + 3 * MIN + 30_000
    model.step(state, "schedule.timeout", {"id": "s"}, now)
    ticks = [T0 + MIN, T0 + 2 * MIN, T0 + 3 * MIN]
    assert calls == [(f"s.{t}", t + 10 * MIN, t) for t in ticks]
    s = model.step(state, "schedule.get", {"id": "s"}, now)["schedule"]
    assert (s["lastRunAt"], s["nextRunAt"]) == (T0 + 3 * MIN, T0 + 4 * MIN)
    assert model.observe(state)["scheduleTimeouts"] == [{"id": "s", "timeout": T0 + 4 * MIN}]
    assert {p["id"]: p["createdAt"] for p in promises(state).values()} == {f"s.{t}": t for t in ticks}


def test_server_profile_creates_at_the_firing_time() -> None:
    state = server("server")
    create(state, T0, promiseTimeout=10 * MIN)
    now = T0 + 2 * MIN + 1
    model.step(state, "schedule.timeout", {"id": "s"}, now)
    assert {p["id"]: p["createdAt"] for p in promises(state).values()} == {
        f"s.{T0 + MIN}": now, f"s.{T0 + 2 * MIN}": now}


def test_refiring_an_already_fired_tick_changes_nothing() -> None:
    state = server()
    create(state, T0)
    model.step(state, "schedule.timeout", {"id": "s"}, T0 + MIN)
    before = model.observe(state)
    model.step(state, "schedule.timeout", {"id": "s"}, T0 + MIN + 59_999)
    assert model.observe(state) == before


def test_a_promise_already_there_is_not_recreated_by_its_tick() -> None:
    state = server()
    create(state, T0)
    taken = {"id": f"s.{T0 + MIN}", "timeoutAt": T0 + 30 * MIN, "param": EMPTY, "tags": {"mine": "1"}}
    model.step(state, "promise.create", taken, T0 + 1)
    model.step(state, "schedule.timeout", {"id": "s"}, T0 + MIN)
    assert promises(state)[f"s.{T0 + MIN}"]["tags"] == {"mine": "1"}


# --- the expired-at-creation path, in each profile where it applies ----------------------------

def assert_born_settled_without_dispatch(state: model.ServerState, promise_id: str) -> None:
    observed = model.observe(state)
    p = promises(state)[promise_id]
    assert p["state"] == "rejected_timedout"
    assert p["createdAt"] == p["settledAt"] == p["timeoutAt"]
    assert {"id": promise_id, "state": "fulfilled", "version": 0, "resumes": [], "ttl": None,
            "pid": None} in observed["tasks"]
    assert all(t["id"] != promise_id for t in observed["taskTimeouts"])
    assert all(t["id"] != promise_id for t in observed["promiseTimeouts"])
    assert all(e["message"].get("taskId") != promise_id for e in observed["outbox"])


def test_lean_zero_timeout_occurrence_is_born_settled_and_dispatches_no_task() -> None:
    state = server("lean")
    create(state, T0, promiseTimeout=0, promiseTags=TARGET)
    model.step(state, "schedule.timeout", {"id": "s"}, T0 + MIN)  # on time, yet timeoutAt = cronTime
    assert_born_settled_without_dispatch(state, f"s.{T0 + MIN}")
    assert model.observe(state)["outbox"] == []


def test_server_late_occurrence_is_born_settled_and_dispatches_no_task() -> None:
    state = server("server")
    create(state, T0, promiseTimeout=MIN, promiseTags=TARGET)
    model.step(state, "schedule.timeout", {"id": "s"}, T0 + 5 * MIN)
    for late in (T0 + MIN, T0 + 2 * MIN, T0 + 3 * MIN, T0 + 4 * MIN):
        assert_born_settled_without_dispatch(state, f"s.{late}")
    # the tick that fired exactly on time is still within its timeout: dispatched
    assert promises(state)[f"s.{T0 + 5 * MIN}"]["state"] == "pending"
    assert [e["message"]["taskId"] for e in model.observe(state)["outbox"]] == [f"s.{T0 + 5 * MIN}"]


def test_lean_late_occurrence_is_dispatched_then_projected_then_timed_out() -> None:
    state = server("lean")
    create(state, T0, promiseTimeout=MIN, promiseTags=TARGET)
    now = T0 + 5 * MIN
    model.step(state, "schedule.timeout", {"id": "s"}, now)
    late = f"s.{T0 + MIN}"
    assert promises(state)[late]["state"] == "pending"
    assert {"address": TARGET["resonate:target"],
            "message": {"kind": "execute", "taskId": late, "version": 0}} in model.observe(state)["outbox"]
    seen = model.step(state, "promise.get", {"id": late}, now)["promise"]
    assert (seen["state"], seen["settledAt"]) == ("rejected_timedout", T0 + 2 * MIN)
    fired = model.step(state, "tick", {}, now)["fired"]
    assert fired[:4] == [{"kind": "promise", "id": f"s.{T0 + k * MIN}"} for k in range(1, 5)]
    assert promises(state)[late]["state"] == "rejected_timedout"
    assert {t["id"]: t["state"] for t in model.observe(state)["tasks"]}[late] == "fulfilled"


# --- P-01 / P-02 ---------------------------------------------------------------------------

def test_promise_create_branches() -> None:
    state = server()
    created = model.step(state, "promise.create", {"id": "t", "timeoutAt": T0 + MIN, "param": EMPTY,
                                                   "tags": {"resonate:timer": "true"}}, T0)["promise"]
    assert (created["state"], created["createdAt"], created["settledAt"]) == ("pending", T0, None)
    assert model.observe(state)["promiseTimeouts"] == [{"id": "t", "timeout": T0 + MIN}]
    assert model.observe(state)["tasks"] == []
    projected = model.step(state, "promise.create", {"id": "t", "timeoutAt": 1, "param": EMPTY,
                                                     "tags": {}}, T0 + MIN)["promise"]
    assert (projected["state"], projected["settledAt"]) == ("resolved", T0 + MIN)
    delayed = {**TARGET, "resonate:delay": str(T0 + 10 * MIN)}
    model.step(state, "promise.create", {"id": "d", "timeoutAt": T0 + 60 * MIN, "param": EMPTY,
                                         "tags": delayed}, T0)
    observed = model.observe(state)
    assert {"id": "d", "kind": 0, "timeout": T0 + 10 * MIN} in observed["taskTimeouts"]
    assert observed["outbox"] == []
    plain = model.step(state, "promise.create", {"id": "x", "timeoutAt": T0, "param": EMPTY,
                                                 "tags": {}}, T0)["promise"]
    assert (plain["state"], plain["createdAt"], plain["settledAt"]) == ("rejected_timedout", T0, T0)


# --- validation: 400 before any lookup, and nothing changes --------------------------------------

@pytest.mark.parametrize("overrides", [
    {"id": "a.b"}, {"id": ""}, {"id": "x{y"}, {"id": 3},
    {"cron": "60 * * * *"}, {"cron": "0 0 30 2 *"}, {"cron": 5},
    {"promiseId": "{{.id}}"}, {"promiseTimeout": -1}, {"promiseTimeout": True},
    {"promiseTimeout": MAX_DURATION + 1}, {"promiseParam": {"data": None}},
    {"promiseTags": {"resonate:delay": "-1"}}, {"promiseTags": {"k": 1}},
])
def test_invalid_schedule_create_is_400_even_for_an_existing_id(overrides: dict[str, Any]) -> None:
    state = server()
    create(state, T0)
    before = copy.deepcopy(model.observe(state))
    response = create(state, T0, **({"id": "s"} | overrides))
    assert response["status"] == 400 and response["message"]
    assert model.observe(state) == before


@pytest.mark.parametrize("now", [-1, MAX_TIME + 1, 1.5, True, None])
def test_invalid_now_is_400(now: Any) -> None:
    state = server()
    assert model.step(state, "tick", {}, now)["status"] == 400
    assert model.step(state, "schedule.get", {"id": "s"}, now)["status"] == 400


def test_unknown_op_and_wrong_args_are_400() -> None:
    state = server()
    assert model.step(state, "schedule.update", {}, T0)["status"] == 400
    assert model.step(state, "promise.get", {"id": "p", "x": 1}, T0)["status"] == 400
    assert model.step(state, "tick", {"now": 3}, T0)["status"] == 400
    assert model.step(state, "promise.get", {"id": "\ud800"}, T0)["status"] == 400


# --- the end of time (X-04) --------------------------------------------------------------------

def test_no_occurrence_after_max_time() -> None:
    dec_30_9999 = MAX_TIME + 1 - 2 * 86_400_000
    state = server()
    response = create(state, dec_30_9999, cron="0 0 31 12 *")
    assert response["schedule"]["nextRunAt"] == MAX_TIME + 1 - 86_400_000
    model.step(state, "schedule.timeout", {"id": "s"}, MAX_TIME)
    s = model.step(state, "schedule.get", {"id": "s"}, MAX_TIME)["schedule"]
    assert s["nextRunAt"] == NEVER and s["lastRunAt"] == MAX_TIME + 1 - 86_400_000
    assert create(state, MAX_TIME - 1000, id="late", cron="0 0 31 12 *")["status"] == 400


# --- tick ------------------------------------------------------------------------------------

def test_tick_fires_promise_before_schedule_at_the_same_instant() -> None:
    state = server()
    create(state, T0)
    model.step(state, "promise.create", {"id": "p", "timeoutAt": T0 + MIN, "param": EMPTY,
                                         "tags": {"resonate:timer": "true"}}, T0)
    assert model.step(state, "tick", {}, T0 + MIN)["fired"] == [
        {"kind": "promise", "id": "p"}, {"kind": "schedule", "id": "s"}]
    assert model.step(state, "tick", {}, T0 + MIN)["fired"] == []


# --- expand (X-02) -----------------------------------------------------------------------------

SCHEDULE_IDS = st.text(st.characters(blacklist_characters=".{}", blacklist_categories=("Cs",)), min_size=1)
TIMESTAMPS = st.integers(0, MAX_TIME)
TEMPLATES = st.lists(st.sampled_from(["{{.id}}", "{{.timestamp}}", "-", ".", "x", "{", "}"]),
                     max_size=6).map("".join).filter(lambda t: "{{.timestamp}}" in t)


@settings(max_examples=300, deadline=None)
@given(template=TEMPLATES, id=SCHEDULE_IDS, a=TIMESTAMPS, b=TIMESTAMPS)
def test_expand_is_injective_in_the_timestamp(template: str, id: str, a: int, b: int) -> None:
    """G1: one schedule's ticks never share a promise id."""
    if a != b:
        assert expand(template, id, a) != expand(template, id, b)


@settings(max_examples=300, deadline=None)
@given(ids=st.tuples(SCHEDULE_IDS, SCHEDULE_IDS), stamps=st.tuples(TIMESTAMPS, TIMESTAMPS),
       suffix=st.sampled_from(["", "-x", ".{{.timestamp}}"]))
def test_expand_with_a_dot_after_the_id_is_injective(ids: tuple[str, str], stamps: tuple[int, int],
                                                     suffix: str) -> None:
    """G2: a template whose first placeholder is {{.id}} followed by '.' separates schedules."""
    template = "run:{{.id}}.{{.timestamp}}" + suffix
    if (ids[0], stamps[0]) != (ids[1], stamps[1]):
        assert expand(template, ids[0], stamps[0]) != expand(template, ids[1], stamps[1])


def test_expand_without_a_separator_can_collide_across_schedules() -> None:
    """Why G2 needs its separator: the documented, tolerated collision."""
    assert expand("{{.id}}{{.timestamp}}", "a1", 23) == expand("{{.id}}{{.timestamp}}", "a", 123)

"""Profile `deployed` (spec/schedules.md DEP-01..DEP-04), by hand-computed examples of the
deployed Rust server's behaviour, in the model and the implementation alike."""

from __future__ import annotations

import pytest

from duespec.systems.schedules import ImplTarget, ModelTarget

MINUTE, HOUR = 60_000, 3_600_000
T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z, a minute boundary
TARGET = {"resonate:target": "poll://any@workers"}
EMPTY = {"headers": {}, "data": None}


def schedule(id: str = "s", cron: str = "* * * * *", timeout: int = HOUR, tags: dict | None = None) -> dict:
    return {"id": id, "cron": cron, "promiseId": "{{.id}}.{{.timestamp}}", "promiseTimeout": timeout,
            "promiseParam": EMPTY, "promiseTags": TARGET if tags is None else tags}


@pytest.fixture(params=[ModelTarget, ImplTarget], ids=["model", "impl"])
def target(request):
    t = request.param()
    t.reset({"profile": "deployed"})
    yield t
    t.close()


def test_dep01_a_schedule_needs_a_target_even_for_an_existing_id(target) -> None:
    assert target.step("schedule.create", schedule(tags={}), T0)["status"] == 400
    assert target.step("schedule.create", schedule(), T0)["status"] == 200
    assert target.step("schedule.create", schedule(tags={"resonate:timer": "true"}), T0)["status"] == 400
    assert len(target.observe()["schedules"]) == 1


def test_dep02_one_occurrence_per_pass_and_dep03_its_promise(target) -> None:
    target.step("schedule.create", schedule(timeout=90_000), T0)
    now = T0 + 3 * MINUTE + 30_000            # owes the ticks at T0+1, +2, +3 minutes
    assert target.step("tick", {}, now)["fired"] == [{"kind": "schedule", "id": "s"}]
    state = target.observe()
    [s] = state["schedules"]
    assert (s["lastRunAt"], s["nextRunAt"]) == (T0 + MINUTE, T0 + 2 * MINUTE)   # still owed: due
    [p] = state["promises"]
    first = T0 + MINUTE
    assert p["id"] == f"s.{first}"
    # expired at the firing time (first + 90 s <= now): settled, created at its cronTime
    assert (p["state"], p["createdAt"], p["settledAt"]) == ("rejected_timedout", first, first + 90_000)
    assert p["tags"] == {**TARGET, "resonate:schedule": "s", "resonate:origin": p["id"],
                         "resonate:branch": p["id"], "resonate:parent": p["id"], "resonate:prefix": p["id"]}
    assert [t["state"] for t in state["tasks"]] == ["fulfilled"] and state["outbox"] == []
    target.step("tick", {}, now)
    target.step("tick", {}, now)
    state = target.observe()
    assert [p["id"] for p in state["promises"]] == [f"s.{T0 + k * MINUTE}" for k in (1, 2, 3)]
    last = state["promises"][-1]           # T0+3min + 90 s > now: pending, dispatched at once
    assert (last["state"], last["createdAt"], last["settledAt"]) == ("pending", T0 + 3 * MINUTE, None)
    assert {"id": last["id"], "kind": 0, "timeout": now + 5000} in state["taskTimeouts"]
    assert state["outbox"] == [{"address": TARGET["resonate:target"],
                                "message": {"kind": "execute", "taskId": last["id"], "version": 0}}]
    assert target.step("tick", {}, now)["fired"] == []


def test_dep03_a_delay_tag_is_not_honoured_at_firing(target) -> None:
    tags = {**TARGET, "resonate:delay": str(T0 + 10 * HOUR)}
    target.step("schedule.create", schedule(tags=tags), T0)
    target.step("schedule.timeout", {"id": "s"}, T0 + MINUTE)
    state = target.observe()
    assert len(state["outbox"]) == 1 and state["taskTimeouts"][0]["timeout"] == T0 + MINUTE + 5000


def test_dep04_search_filters_by_tags_orders_by_id_and_pages_with_a_cursor(target) -> None:
    for id in ("c", "a", "b"):
        target.step("schedule.create", schedule(id=id, tags={**TARGET, "team": "x" if id != "b" else "y"}), T0)
    before = target.observe()
    page = target.step("schedule.search", {"limit": 2}, T0)
    assert [s["id"] for s in page["schedules"]] == ["a", "b"] and page["cursor"] == "b"
    rest = target.step("schedule.search", {"limit": 2, "cursor": "b"}, T0)
    assert [s["id"] for s in rest["schedules"]] == ["c"] and rest["cursor"] is None
    team = target.step("schedule.search", {"tags": {"team": "x"}}, T0)
    assert [s["id"] for s in team["schedules"]] == ["a", "c"] and team["cursor"] is None
    for bad in ({"limit": 0}, {"limit": 1001}, {"limit": True}, {"cursor": 3}, {"tags": {"k": 1}}, {"id": "a"}):
        assert target.step("schedule.search", bad, T0)["status"] == 400, bad
    assert target.observe() == before


def test_the_lean_reading_still_answers_search_with_501() -> None:
    for cls in (ModelTarget, ImplTarget):
        t = cls()
        t.reset({"profile": "lean"})
        assert t.step("schedule.search", {"limit": 0}, T0) == {"status": 501}

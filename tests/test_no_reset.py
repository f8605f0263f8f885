"""Campaigns against a target that cannot be reset (`conform --reset none`, and `auto`
for a target that says it has no reset): each run in a namespace of its own.

The targets below are one production implementation shared by every instance, never
reset, so every run finds the objects of the runs before it; each refuses reset and has
no snapshot, as a production server would. A correct one must hold, a planted bug must
still be caught and its trace must replay against the dirty target, and every id on the
wire must carry its run's token.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from duespec.cli import main
from duespec.systems import get_system

SCHEDULES = get_system("schedules")
#: The one implementation every instance shares: the server that is never reset.
_SERVER: dict[str, Any] = {}
#: Every request as the server received it.
RECEIVED: list[tuple[str, Any]] = []


class NeverReset:
    def __init__(self) -> None:
        if "impl" not in _SERVER:
            impl = SCHEDULES.impl()
            impl.reset(SCHEDULES.config("lean"))
            _SERVER["impl"] = impl
        self.inner = _SERVER["impl"]

    def reset(self, config: dict[str, Any]) -> None:
        raise NotImplementedError("this server cannot be reset")

    def step(self, op: str, args: Any, now: Any) -> dict[str, Any]:
        RECEIVED.append((op, args))
        return self.inner.step(op, args, now)

    def observe(self) -> dict[str, Any]:
        raise NotImplementedError("this server has no snapshot of its state")


class SettleAnswersTheOldRecord(NeverReset):
    """Settles as it should, and answers with the promise as it was before."""

    def step(self, op: str, args: Any, now: Any) -> dict[str, Any]:
        if op == "promise.settle" and isinstance(args, dict) and isinstance(args.get("id"), str):
            before = self.inner.step("promise.get", {"id": args["id"]}, now)
            response = super().step(op, args, now)
            if response.get("status") in (200, 201) and "promise" in before:
                return {**response, "promise": before["promise"]}
            return response
        return super().step(op, args, now)


def conform(tmp_path: Path, target: str, *extra: str, coverage: bool = False) -> int:
    return main(["conform", "schedules", "--target", f"{__name__}:{target}", "--progress", "0",
                 *(["--coverage"] if coverage else ["--no-coverage"]), "--trace-dir", str(tmp_path / "failures"), *extra])


@pytest.fixture(autouse=True)
def fresh_server() -> Any:
    """Each test starts its own never-reset server (and its record of what it received)."""
    _SERVER.clear()
    RECEIVED.clear()
    yield
    _SERVER.clear()


def ids_sent(received: list[tuple[str, Any]] | None = None) -> list[str]:
    """Every id, awaited, awaiter and pid the server received, nested ones included."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("id", "awaited", "awaiter", "pid") and isinstance(item, str) and item:
                    found.append(item)
                elif key in ("action", "actions", "tasks"):
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for _, args in RECEIVED if received is None else received:
        walk(args)
    return found


def test_a_server_that_is_never_reset_holds_run_after_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = conform(tmp_path, "NeverReset", "--observe", "none", "--examples", "20", "--database", "none",
                   coverage=True)
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("no reset:") and "HOLDS: schedules [lean]" in out, out
    # the retry timeouts a run draws cannot be applied to a server that keeps its own config:
    # out of reach with that reason, not a gap
    assert "SR-03.retry_timeout_one: a target that is not reset" in out, out
    assert not any("SR-03" in line for line in out.splitlines() if line.startswith("  required tags not reached"))
    sent = ids_sent()
    assert sent and all(id.startswith("run-") for id in sent), [id for id in sent if not id.startswith("run-")][:5]
    # the server kept many runs' objects side by side: each run had a namespace of its own
    tokens = {id[:len("run-") + 13] for id in sent}
    assert len(tokens) > 20, len(tokens)
    held = {promise["id"][:len("run-") + 13] for promise in _SERVER["impl"].observe()["promises"]}
    assert len(held) > 1, held
    # and every search asked for the run's own objects only
    searches = [args for op, args in RECEIVED if op == "schedule.search" and isinstance(args, dict)
                and isinstance(args.get("tags"), dict)]
    assert all(args["tags"].get("duespec:run", "").startswith("run-") for args in searches)


def test_auto_finds_no_reset_and_a_planted_bug_replays_against_the_dirty_server(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = conform(tmp_path, "SettleAnswersTheOldRecord", "--examples", "100", "--max-classes", "1",
                   "--database", "none")
    out = capsys.readouterr().out
    assert code == 1, out
    assert out.startswith("no reset:"), out
    first = next(line for line in out.splitlines() if line.startswith("class 1 of"))
    assert "response promise.settle $.promise" in first, first
    assert "--reset none" in out  # the reproduce command keeps it
    (trace,) = (tmp_path / "failures").glob("*.jsonl")
    assert '"reset": "none"' in trace.read_text().splitlines()[0]
    before = len(RECEIVED)
    # the server still holds every object of the campaign: replay goes on under a fresh token
    assert main(["replay", str(trace), "--target", f"{__name__}:SettleAnswersTheOldRecord"]) == 1
    replayed = capsys.readouterr().out
    assert "DIVERGES" in replayed and "promise.settle" in replayed, replayed
    fresh = {id[:len("run-") + 13] for id in ids_sent(RECEIVED[before:])}
    assert fresh and not fresh & {id[:len("run-") + 13] for id in ids_sent(RECEIVED[:before])}
    assert main(["replay", str(trace), "--target", f"{__name__}:NeverReset"]) == 0


def test_no_reset_needs_a_response_only_check_and_a_system_with_namespaces(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert conform(tmp_path, "NeverReset", "--observe", "state") == 2
    assert "target unusable" in capsys.readouterr().err
    assert conform(tmp_path, "NeverReset", "--reset", "target") == 2
    assert "cannot be reset" in capsys.readouterr().err
    assert main(["conform", "duebook", "--target", "impl", "--reset", "none", "--progress", "0"]) == 2
    assert "has no id namespaces" in capsys.readouterr().err


def test_the_namespace_sends_the_token_and_takes_it_out_again() -> None:
    space, token = SCHEDULES.namespace, "run-0123456789ab-"
    assert space is not None
    create = {"id": "nightly", "cron": "* * * * *", "promiseId": "tick-{{.timestamp}}", "promiseTimeout": 1,
              "promiseParam": {"headers": {}, "data": None}, "promiseTags": {"k": "v"}}
    sent = space.request("schedule.create", create, token)
    assert sent["id"] == token + "nightly" and sent["promiseId"] == token + "tick-{{.timestamp}}"
    assert sent["promiseTags"] == {"k": "v", "duespec:run": token} and create["promiseTags"] == {"k": "v"}
    # a template that starts with the id expands to the (namespaced) id: no second token
    assert space.request("schedule.create", {**create, "promiseId": "{{.id}}.{{.timestamp}}"},
                         token)["promiseId"] == "{{.id}}.{{.timestamp}}"
    # invalid stays invalid: an empty id, a value that is no string, malformed tags
    assert space.request("promise.get", {"id": ""}, token) == {"id": ""}
    assert space.request("promise.get", {"id": 7}, token) == {"id": 7}
    assert space.request("schedule.search", {"tags": None}, token) == {"tags": None}
    assert space.request("schedule.search", {"cursor": "a"}, token) == {"cursor": token + "a",
                                                                         "tags": {"duespec:run": token}}
    nested = space.request("task.suspend", {"id": "t1", "version": 1, "actions": [{"awaited": "a", "awaiter": "t1"}]},
                           token)
    assert nested["actions"] == [{"awaited": token + "a", "awaiter": token + "t1"}]
    fired = {"status": 200, "fired": [{"kind": "promise", "id": "run-ffffffffffff-p1"},
                                      {"kind": "schedule", "id": token + "nightly"}]}
    assert space.response("tick", fired, token) == {"status": 200, "fired": [{"kind": "schedule", "id": "nightly"}]}
    answer = {"status": 200, "promise": {"id": token + "nightly.60000", "state": "pending",
                                         "tags": {"duespec:run": token, "k": "v"}}}
    logical = space.response("promise.get", answer, token)
    assert logical["promise"] == {"id": "nightly.60000", "state": "pending", "tags": {"k": "v"}}
    assert space.undo("promise.get", {"id": "nightly.60000"}, logical) == [
        ("promise.settle", {"id": "nightly.60000", "state": "rejected_canceled",
                            "value": {"headers": {}, "data": None}})]


def test_duespec_serve_never_reset_holds_twice_and_keeps_only_run_ids(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Over HTTP: the second campaign finds the first one's objects in the server, and
    each run retired its schedules (the protocol deletes them; promises stay, settled)."""
    from duespec.wire.http_target import HttpTarget
    from wire_support import Served

    with Served() as served:
        for _ in range(2):
            code = main(["conform", "schedules", "--target", served.url, "--reset", "none", "--examples", "3", "--steps", "20",
                         "--progress", "0", "--no-coverage", "--database", "none",
                         "--trace-dir", str(tmp_path / "failures")])
            out = capsys.readouterr().out
            assert code == 0 and "HOLDS: schedules [lean]" in out, out
        snapshot = HttpTarget(served.url, 10.0).observe()
    promises = [promise["id"] for promise in snapshot["promises"]]
    assert promises and all(id.startswith("run-") for id in promises), promises[:5]
    assert len({id[:len("run-") + 13] for id in promises}) > 3
    assert snapshot["schedules"] == [], [schedule["id"] for schedule in snapshot["schedules"]][:5]


@pytest.mark.parametrize(("status", "offered"), [(404, False), (501, False), (400, False), (500, True)])
def test_an_http_server_that_refuses_debug_reset_says_it_has_none(
        monkeypatch: pytest.MonkeyPatch, status: int, offered: bool) -> None:
    """400, 404, 501 to debug.reset: no reset offered (auto then namespaces the runs); any
    other failure is a broken reset, never a quiet fallback."""
    from duespec.targets.interface import TargetError
    from duespec.wire.http_target import HttpTarget

    target = HttpTarget("http://127.0.0.1:9", 1.0)
    monkeypatch.setattr(target, "_call", lambda kind, data: (status, {"error": "no"}, ""))
    with pytest.raises(TargetError) as refused:
        target.reset({"profile": "lean"})
    assert refused.value.says_not_offered is not offered


def test_a_run_that_ends_at_a_refused_time_still_retires_its_schedules() -> None:
    """A run's last step may carry a time the protocol refuses (past the end of time): its
    schedules are deleted at the latest time the server took, not left to later runs. Left
    behind, a schedule created in 2026 owed ~550,000 occurrences to a later run's tick at
    the end of time, which then ran past --timeout on a loaded machine, and the replay
    behind it (the server still busy) made a correct server 'not reproducible'."""
    from duespec.model.schedules.clock import MAX_TIME
    from duespec.targets.namespaced import namespaced

    assert SCHEDULES.namespace is not None
    factory = namespaced(NeverReset, SCHEDULES.namespace, "schedules")
    target = factory()
    create = {"id": "nightly", "cron": "59 23 28-31 * *", "promiseId": "{{.id}}-{{.timestamp}}",
              "promiseTimeout": 1000, "promiseParam": {"headers": {}, "data": None}, "promiseTags": {}}
    assert target.step("schedule.create", create, 1_780_000_000_000)["status"] == 200
    for refused in (-1, 1.5, MAX_TIME + 1):  # the last one is the one retiring would have used
        assert target.step("schedule.get", {"id": "nightly"}, refused)["status"] == 400
    target.reset({"profile": "lean"})  # the next run: the last one's objects are retired
    assert _SERVER["impl"].observe()["schedules"] == []
    (deleted,) = [args["id"] for op, args in RECEIVED if op == "schedule.delete"]
    assert deleted.startswith("run-") and deleted.endswith("-nightly"), deleted

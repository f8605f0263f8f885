"""Every malformed request docs/protocol.md ("Malformed requests") says the contract
answers gets that answer, for both systems, from the model, the implementation and the
JavaScript example target, and changes nothing (duebook D-27, schedules X-03)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from duespec.systems import get_system
from duespec.targets.interface import Target
from duespec.targets.stdio import StdioTargetFactory

ROOT = Path(__file__).resolve().parent.parent
MAX_TIME = 253402300799999
T0 = 1_767_225_600_000

#: (shape, op, args, now, expected error code) for duebook: `invalid` for every shape;
#: None where the documented answer is the op's ordinary one (cancel and get ignore now).
DUEBOOK: list[tuple[str, Any, Any, Any, str]] = [
    ("args null", "claim", None, 5, "invalid"),
    ("args a list", "get", [1], 5, "invalid"),
    ("args a string", "expire", "1", 5, "invalid"),
    ("args a number", "claimable", 3, 5, "invalid"),
    ("extra key", "claim", {"id": 1, "now": 5}, 5, "invalid"),
    ("extra key beside every argument", "cancel", {"id": 1, "caller": "alice", "force": True}, 5, "invalid"),
    ("missing key", "cancel", {"id": 1}, 5, "invalid"),
    ("missing every key", "schedule", {}, 5, "invalid"),
    ("unknown op", "reschedule", {"id": 1}, 5, "invalid"),
    ("an op of the other system", "schedule.get", {"id": "s"}, 5, "invalid"),
    ("op in another case", "Claim", {"id": 1}, 5, "invalid"),
    ("op a list", ["claim"], {"id": 1}, 5, "invalid"),
    ("op an object", {"op": "claim"}, {"id": 1}, 5, "invalid"),
    ("id a bool", "claim", {"id": True}, 5, "invalid"),
    ("id a float", "expire", {"id": 1.0}, 5, "invalid"),
    ("id a string", "get", {"id": "1"}, 5, "invalid"),
    ("id beyond int64", "get", {"id": 2**63}, 5, "invalid"),
    ("owner null", "schedule", {"owner": None, "delay": 0, "ttl": 0}, 5, "invalid"),
    ("caller empty", "cancel", {"id": 1, "caller": ""}, 5, "invalid"),
    ("delay negative", "schedule", {"owner": "bob", "delay": -1, "ttl": 0}, 5, "invalid"),
    ("limit a float", "expirable", {"limit": 1.5}, 5, "invalid"),
    ("now a float", "claim", {"id": 1}, 5.5, "invalid"),
    ("now a string", "schedule", {"owner": "bob", "delay": 0, "ttl": 0}, "5", "invalid"),
    ("now null", "claimable", {"limit": 2}, None, "invalid"),
    ("now a bool", "expire", {"id": 1}, True, "invalid"),
    ("now negative", "claim", {"id": 1}, -1, "invalid"),
    ("now beyond int64", "expirable", {"limit": 2}, 2**63, "invalid"),
]

#: Cancel and Get do not read `now`, so a `now` that is no time leaves their answer alone.
DUEBOOK_NOW_IGNORED = [
    ("get", {"id": 1}, 1.5, {"ok": {"id": 1, "owner": "alice", "due_at": 0, "expires_at": 5}}),
    ("cancel", {"id": 1, "caller": "bob"}, None, {"error": "not_owner"}),
]

SCHEDULES: list[tuple[str, Any, Any, Any]] = [
    ("args null", "schedule.get", None, T0),
    ("args a list", "promise.get", ["p"], T0),
    ("args a string", "schedule.delete", "s", T0),
    ("extra key", "schedule.get", {"id": "s", "now": T0}, T0),
    ("tick with an argument", "tick", {"limit": 1}, T0),
    ("missing key", "promise.create", {"id": "p", "timeoutAt": T0}, T0),
    ("unknown op", "schedule.reschedule", {"id": "s"}, T0),
    ("an op of the other system", "claim", {"id": 1}, T0),
    ("id a number", "schedule.get", {"id": 1}, T0),
    ("id empty", "promise.get", {"id": ""}, T0),
    ("timeoutAt a float", "promise.create",
     {"id": "p", "timeoutAt": 1.5, "param": {"headers": {}, "data": None}, "tags": {}}, T0),
    ("tags not strings", "promise.create",
     {"id": "p", "timeoutAt": T0, "param": {"headers": {}, "data": None}, "tags": {"a": 1}}, T0),
    ("now a float", "schedule.get", {"id": "s"}, 1.5),
    ("now a string", "tick", {}, str(T0)),
    ("now null", "promise.get", {"id": "p"}, None),
    ("now a bool", "schedule.delete", {"id": "s"}, True),
    ("now negative", "tick", {}, -1),
    ("now beyond MAX_TIME", "schedule.get", {"id": "s"}, MAX_TIME + 1),
]

SCHEDULE = {"id": "s", "cron": "* * * * *", "promiseId": "s.{{.timestamp}}", "promiseTimeout": 60_000,
            "promiseParam": {"headers": {}, "data": None}, "promiseTags": {}}


def node_duebook() -> Target:
    node = shutil.which("node")
    assert node, "node is required (docs/protocol.md's example target is JavaScript); install node 20+"
    return StdioTargetFactory([node, str(ROOT / "examples/node-duebook/duebook.js")], "duebook")()


DUEBOOK_TARGETS = {"model": lambda: get_system("duebook").model(),
                   "impl": lambda: get_system("duebook").impl(), "node example": node_duebook}


@pytest.fixture(scope="module", params=sorted(DUEBOOK_TARGETS))
def duebook(request: pytest.FixtureRequest) -> Any:
    target = DUEBOOK_TARGETS[request.param]()
    yield target
    target.close()


def fresh_duebook(target: Target) -> dict[str, Any]:
    """A Book with deferral 1 (alice's) claimable and expirable at 5."""
    target.reset({"max_open": 2})
    assert "ok" in target.step("schedule", {"owner": "alice", "delay": 0, "ttl": 5}, 0)
    return target.observe()


@pytest.mark.parametrize("shape, op, args, now, code", DUEBOOK, ids=[row[0] for row in DUEBOOK])
def test_duebook_answers_a_malformed_request_with_its_code(duebook: Target, shape: str, op: Any, args: Any,
                                                          now: Any, code: str) -> None:
    before = fresh_duebook(duebook)
    response = duebook.step(op, args, now)
    assert {k: v for k, v in response.items() if k != "message"} == {"error": code}, shape
    assert duebook.observe() == before, f"{shape} changed the Book"


@pytest.mark.parametrize("op, args, now, answer", DUEBOOK_NOW_IGNORED)
def test_duebook_cancel_and_get_ignore_a_now_that_is_no_time(duebook: Target, op: str, args: Any, now: Any,
                                                            answer: dict[str, Any]) -> None:
    fresh_duebook(duebook)
    response = duebook.step(op, args, now)
    assert {k: v for k, v in response.items() if k != "message"} == answer


@pytest.fixture(scope="module", params=["model", "impl"])
def schedules(request: pytest.FixtureRequest) -> Any:
    system = get_system("schedules")
    target = (system.model if request.param == "model" else system.impl)()
    yield target
    target.close()


@pytest.mark.parametrize("shape, op, args, now", SCHEDULES, ids=[row[0] for row in SCHEDULES])
def test_schedules_answers_a_malformed_request_with_400(schedules: Target, shape: str, op: Any, args: Any,
                                                      now: Any) -> None:
    schedules.reset({"profile": "lean"})
    assert schedules.step("schedule.create", SCHEDULE, T0)["status"] == 200
    before = schedules.observe()
    response = schedules.step(op, args, now)
    assert response["status"] == 400, shape
    assert isinstance(response.get("message"), str) and response["message"], "400 names the rule it broke"
    assert schedules.observe() == before, f"{shape} changed the state"


# ---- duespec serve: every malformed request, in memory and on a store file ------------------

import fcntl  # noqa: E402
import http.client  # noqa: E402
import json  # noqa: E402
import sqlite3  # noqa: E402
from urllib.parse import urlsplit  # noqa: E402

from wire_malformations import PROBE, SEED, body as wire_body, malformations  # noqa: E402

from duespec.wire.serve import ServerThread, WireServer  # noqa: E402

MALFORMED = malformations()


def test_the_corpus_has_over_a_hundred_kinds_of_malformation_across_every_kind() -> None:
    from duespec.wire.envelope import CONTROL_KINDS, OP_OF_KIND

    assert len(MALFORMED) >= 100
    touched = {label.split()[0] for label, _, _ in MALFORMED}
    assert set(OP_OF_KIND) - {"schedule.search", "promise.search", "task.search"} <= touched
    assert "debug.reset" in touched and set(CONTROL_KINDS) & touched


class Wire:
    """One keep-alive HTTP connection to a served store, and what it can see of the store."""

    def __init__(self, url: str, db: str | None) -> None:
        parts = urlsplit(url)
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        self.db = db

    def post(self, data: bytes) -> tuple[int, Any]:
        self.connection.request("POST", "/", body=data, headers={"Content-Type": "application/json"})
        response = self.connection.getresponse()
        raw = response.read()
        return response.status, json.loads(raw)

    def snap(self) -> Any:
        status, answer = self.post(wire_body("debug.snap", {}))
        assert status == 200
        return answer["data"]

    def rows(self) -> dict[str, list[Any]] | None:
        """Every row of every table of the store file, read by a connection of its own."""
        if self.db is None:
            return None
        reader = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            tables = [r[0] for r in reader.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            return {t: sorted(map(repr, reader.execute(f'SELECT * FROM "{t}"'))) for t in tables}
        finally:
            reader.close()

    def lock_held(self) -> str:
        """The owner recorded in the store's lock file, after checking nobody else can take it."""
        assert self.db is not None
        with open(self.db + ".lock", "a+", encoding="utf-8") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                return handle.read()
            fcntl.flock(handle, fcntl.LOCK_UN)
            raise AssertionError("the store's lock was free while the server ran")


@pytest.mark.parametrize("store", ["memory", "db"])
def test_serve_refuses_every_malformed_request_without_a_500_or_a_change(store: str, tmp_path: Path) -> None:
    """Each malformed request of tests/wire_malformations.py gets a 4xx (a 400 names the field
    it is about), the served state, the store file's rows and its lock are as before, and the
    next valid request is answered 200."""
    db = str(tmp_path / "store.sqlite") if store == "db" else None
    with ServerThread(WireServer(db or ":memory:", profile="lean")) as server:
        wire = Wire(server.url, db)
        for kind, data in SEED:
            status, answer = wire.post(wire_body(kind, data))
            assert status == 200, (kind, answer)
        before, rows, owner = wire.snap(), wire.rows(), wire.lock_held() if db else None
        assert before["promises"] and before["schedules"] and before["tasks"]
        problems = []
        for label, data, field in MALFORMED:
            status, answer = wire.post(data)
            message = answer.get("data") if isinstance(answer, dict) else None
            if not 400 <= status < 500 or answer["head"]["status"] != status:
                problems.append(f"{label}: {status} {str(message)[:200]}")
            elif status == 400 and field is not None and field not in str(message):
                problems.append(f"{label}: a 400 that does not name {field!r}: {str(message)[:200]}")
            if wire.snap() != before:
                problems.append(f"{label}: changed the served state")
                break
            if db and (wire.rows() != rows or wire.lock_held() != owner):
                problems.append(f"{label}: changed the store file or its lock")
                break
            probe_status, _ = wire.post(wire_body(*PROBE))
            if probe_status != 200:
                problems.append(f"{label}: the next valid request got {probe_status}")
                break
        assert problems == [], f"{len(problems)} of {len(MALFORMED)}:\n" + "\n".join(problems[:60])
        wire.connection.close()


def test_a_refused_debug_reset_keeps_the_store_and_its_lock(tmp_path: Path) -> None:
    """The issue's case, against `duespec serve --db FILE` as a process: a debug.reset the
    server refuses once emptied the store, released its lock (a second server started on the
    file) and answered 500 ever after. Now: 400, the data still served, the file still owned."""
    import subprocess
    import sys
    import urllib.request

    from wire_support import Served

    store = tmp_path / "store.sqlite"
    with Served("--db", str(store)) as server:
        def post(kind: str, data: Any) -> tuple[int, Any]:
            request = urllib.request.Request(server.url, data=wire_body(kind, data), method="POST")
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    return response.status, json.loads(response.read())
            except urllib.error.HTTPError as error:
                return error.code, json.loads(error.read())

        for kind, data in SEED:
            assert post(kind, data)[0] == 200
        before = post("debug.snap", {})[1]["data"]
        for retry_timeout in (0, -1, 2**63 - MAX_TIME, 2**63, 1.5, None, "5000"):
            status, answer = post("debug.reset", {"retry_timeout": retry_timeout})
            assert status == 400 and "retry_timeout" in answer["data"], retry_timeout
            assert post("debug.snap", {})[1]["data"] == before
            assert post(*PROBE)[0] == 200
        second = subprocess.run([sys.executable, "-m", "duespec", "serve", "schedules", "--port", "0",
                                 "--db", str(store)], capture_output=True, text=True, timeout=60)
        assert second.returncode == 2 and "in use by another process" in second.stderr
        assert server.alive() and post(*PROBE)[0] == 200
        assert post("debug.reset", {"retry_timeout": 7000})[0] == 200   # a valid reset still empties
        assert post("debug.snap", {})[1]["data"]["promises"] == []

"""`duespec serve --clock real` and `duespec stress`: a server that keeps its own time is
checked from outside by many clients at once, and a real race planted in it is caught."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from duespec.cli import main
from duespec.histories.format import read_history
from duespec.wire.envelope import DEBUG_TIME, PROTOCOL_VERSION
from duespec.wire.serve import ServerThread, WireServer

VALUE = {"headers": {}, "data": None}
T0 = 1_735_689_600_000


def body(kind: str, data: dict, corr: str = "1", **head) -> bytes:
    return json.dumps({"kind": kind, "head": {"corrId": corr, "version": PROTOCOL_VERSION, **head},
                       "data": data}).encode()


def snap(wire: WireServer) -> dict:
    return wire.answer(body("debug.snap", {}))[1]["data"]


def test_a_real_clock_server_fires_timeouts_itself_and_a_pinned_one_does_not() -> None:
    for mode in ("real", "pinned"):
        with ServerThread(WireServer(clock_mode=mode, tick_ms=10)) as server:
            wire = server.wire
            now = time.time_ns() // 1_000_000
            status, _ = wire.answer(body("promise.create", {"id": "p", "timeoutAt": now + 50, "param": VALUE,
                                                            "tags": {"resonate:target": "poll://any"}}))
            assert status == 200
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and snap(wire)["promises"][0]["state"] == "pending":
                time.sleep(0.02)
            state = snap(wire)
            if mode == "real":
                assert state["promises"][0]["state"] == "rejected_timedout"
                assert state["promises"][0]["settledAt"] == state["promises"][0]["timeoutAt"]
                assert wire.tick_errors == 0
            else:
                assert state["promises"][0]["state"] == "pending"


def test_a_real_clock_server_refuses_a_second_clock() -> None:
    wire = WireServer(clock_mode="real")
    try:
        status, answer = wire.answer(body("promise.get", {"id": "p"}, **{DEBUG_TIME: T0}))
        assert status == 400 and "own clock" in answer["data"]
        status, _ = wire.answer(body("debug.tick", {"time": T0}))
        assert status == 400
        assert wire.answer(body("promise.get", {"id": "p"}))[0] == 404
    finally:
        wire.close()


def race(unsafe: bool) -> list[int]:
    """Two threads acquire version 0 of one task at once; their statuses."""
    wire = WireServer(unsafe_drop_acquire_lock=unsafe)
    try:
        created = wire.answer(body("promise.create", {"id": "t", "timeoutAt": T0 + 60_000, "param": VALUE,
                                                      "tags": {"resonate:target": "poll://any"}},
                                   **{DEBUG_TIME: T0}))
        assert created[0] == 200
        barrier = threading.Barrier(2)
        statuses: list[int] = []

        def acquire(pid: str) -> None:
            barrier.wait()
            statuses.append(wire.answer(body("task.acquire", {"id": "t", "version": 0, "pid": pid, "ttl": 5000},
                                             pid, **{DEBUG_TIME: T0 + 1}))[0])

        threads = [threading.Thread(target=acquire, args=(f"w{n}",)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        return sorted(statuses)
    finally:
        wire.close()


def test_the_unsafe_switch_plants_a_real_race_and_the_default_has_none() -> None:
    assert all(race(unsafe=False) == [200, 409] for _ in range(5))
    assert any(race(unsafe=True) == [200, 200] for _ in range(5))


def test_serve_flags_are_checked_and_the_unsafe_one_is_hidden() -> None:
    run = subprocess.run([sys.executable, "-m", "duespec", "serve", "schedules", "--port", "0", "--tick-ms", "10"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "--tick-ms needs --clock real" in run.stderr
    help_text = subprocess.run([sys.executable, "-m", "duespec", "serve", "--help"], capture_output=True, text=True,
                               timeout=60).stdout
    assert "--clock" in help_text and "--tick-ms" in help_text and "unsafe" not in help_text


def stress(capsys, *args: str) -> tuple[int, str]:
    code = main(["stress", "schedules", *args])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_stress_catches_the_racy_server_and_passes_the_correct_one(capsys, seed: int) -> None:
    code, out = stress(capsys, "--target", "serve", "--clients", "8", "--ops", "400", "--seed", str(seed),
                       "--unsafe-drop-acquire-lock")
    assert code == 1 and "NOT LINEARIZABLE" in out, out
    assert "task.acquire" in out and "<- cannot be placed" in out
    code, out = stress(capsys, "--target", "serve", "--clients", "8", "--ops", "400", "--seed", str(seed))
    assert code == 0 and "LINEARIZABLE" in out, out


def test_stress_catches_the_racy_server_on_its_own_clock(capsys) -> None:
    code, out = stress(capsys, "--target", "serve", "--clock", "real", "--clients", "8", "--ops", "400", "--seed", "2",
                       "--unsafe-drop-acquire-lock")
    assert code == 1 and "task.acquire" in out and "ms [" in out, out


def test_stress_with_ticks_fires_timeouts_and_schedules_and_passes_the_correct_server(tmp_path: Path, capsys) -> None:
    path = tmp_path / "h.ndjson"
    code, out = stress(capsys, "--target", "serve", "--clients", "6", "--ops", "400", "--seed", "5", "--ticks",
                       "-o", str(path))
    assert code == 0 and "LINEARIZABLE" in out, out
    events = read_history(path).events
    fired = [item for e in events if e.op == "tick" for item in e.response["fired"]]
    assert fired and {item["kind"] for item in fired} & {"schedule", "promise", "lease"}, fired
    assert main(["stress", "schedules", "--target", "serve", "--clock", "real", "--ticks"]) == 2


@pytest.mark.long
def test_stress_catches_the_race_in_19_of_20_runs_and_never_blames_the_correct_server(capsys) -> None:
    caught = passed = 0
    for seed in range(100, 120):
        caught += stress(capsys, "--target", "serve", "--clients", "8", "--ops", "400", "--seed", str(seed),
                         "--unsafe-drop-acquire-lock")[0] == 1
        passed += stress(capsys, "--target", "serve", "--clients", "8", "--ops", "400", "--seed", str(seed))[0] == 0
    assert caught >= 19 and passed == 20, (caught, passed)


def test_stress_against_a_real_clock_server_process(tmp_path: Path) -> None:
    """`duespec serve --clock real` in a process of its own, `duespec stress --clock real`
    against its URL: the history is kept and reads back with the real clock."""
    server = subprocess.Popen([sys.executable, "-m", "duespec", "serve", "schedules", "--port", "0", "--clock", "real",
                               "--tick-ms", "20"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        url = re.search(r"listening on (http://\S+)", line).group(1)
        history = tmp_path / "h.ndjson"
        run = subprocess.run([sys.executable, "-m", "duespec", "stress", "schedules", "--target", url, "--clock",
                              "real", "--clients", "6", "--ops", "300", "--seed", "4", "-o", str(history)],
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0 and "LINEARIZABLE" in run.stdout, run.stdout + run.stderr
        recorded = read_history(history)
        assert recorded.header.clock == "real" and len(recorded.events) == 300
        assert len({e.client for e in recorded.events}) == 6
        assert all(e.now is None for e in recorded.events)
        overlapping = sum(1 for a, b in zip(recorded.events, recorded.events[1:]) if b.call_ns < a.return_ns)
        assert overlapping > 50, "the clients' calls really overlap"
    finally:
        server.terminate()
        server.wait(10)


def test_stress_pinned_history_carries_one_monotone_shared_clock(tmp_path: Path, capsys) -> None:
    path = tmp_path / "h.ndjson"
    code, _ = stress(capsys, "--target", "serve", "--clients", "4", "--ops", "120", "--seed", "9", "-o", str(path))
    assert code == 0
    events = sorted(read_history(path).events, key=lambda e: e.call_ns)
    nows = [e.now for e in events]
    assert all(type(n) is int for n in nows)
    # Pins are taken in call order from one clock: sorted by call instant, they never go back.
    assert nows == sorted(nows) and nows[-1] > nows[0]
    ops = {e.op for e in events}
    assert {"promise.create", "task.acquire"} <= ops


@pytest.mark.parametrize("args, words", [
    (["--target", "http://127.0.0.1:9", "--ops", "5"], "target unusable"),
    (["--target", "serve", "--clients", "0"], "--clients"),
    (["--target", "ftp://x"], "--target must be"),
    (["--target", "http://127.0.0.1:9", "--db", "x.db"], "--db"),
])
def test_stress_usage_errors_exit_2(capsys, args: list[str], words: str) -> None:
    code = main(["stress", "schedules", *args])
    err = capsys.readouterr().err
    assert code == 2 and words in err and "Traceback" not in err, err


def test_stress_sends_every_op_at_real_states_and_stays_decidable_with_ticks(tmp_path: Path, capsys) -> None:
    """Every op of the system but the single-timeout deliveries (`tick` fires those), with
    arguments that meet real states: heartbeats at the version the holder has and at stale
    ones, acquires of a task whose lease a tick fired; and with ticks in it the history is
    still decided, in many parts (a tick is checked id by id)."""
    from duespec.systems.schedules.ops import OPERATIONS

    path = tmp_path / "h.ndjson"
    code, out = stress(capsys, "--target", "serve", "--clients", "8", "--ops", "1500", "--seed", "3", "--ticks",
                       "--pin-step-ms", "50", "--budget", "300", "-o", str(path))
    assert code == 0 and "LINEARIZABLE" in out, out
    parts = int(re.search(r"([\d,]+) independent parts", out).group(1).replace(",", ""))
    assert parts > 20, out
    events = read_history(path).events
    assert {e.op for e in events} == set(OPERATIONS) - {"schedule.timeout", "promise.timeout"}
    beats = [e for e in events if e.op == "task.heartbeat"]
    assert {e.response["status"] for e in beats} >= {200}
    fired_leases = {(item["id"]) for e in events if e.op == "tick" for item in e.response["fired"]
                    if item["kind"] == "lease"}
    reacquired = [e for e in events if e.op == "task.acquire" and e.args["id"] in fired_leases
                  and e.response["status"] == 200 and e.response["task"]["version"] >= 2]
    assert fired_leases and reacquired, "a task whose lease fired is acquired again"
    by_status = {}
    for e in events:
        if e.op in ("task.acquire", "task.fulfill", "task.suspend", "task.fence", "task.release"):
            by_status.setdefault(e.op, set()).add(e.response["status"])
    # Each both succeeds and meets a conflict; a suspend succeeds as 200 (suspended) or 300
    # (what it awaits is already settled: it goes on at once).
    succeeded = {op: statuses - {300} | ({200} if 300 in statuses else set()) for op, statuses in by_status.items()}
    assert all({200, 409} <= statuses for statuses in succeeded.values()), by_status
    suspends = [e for e in events if e.op == "task.suspend" and e.response["status"] in (200, 300)]
    created = ({e.args["id"] for e in events if e.op == "promise.create"}
               | {e.args["action"]["id"] for e in events if e.op == "task.fence" and e.args["action"]["kind"] == "create"})
    assert {e.args["actions"][0]["awaited"] for e in suspends} <= created

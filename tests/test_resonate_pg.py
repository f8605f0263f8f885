"""resonate-pg, a Resonate server in one PostgreSQL file, checked through examples/resonate-pg.

A real PostgreSQL is started once per session (tests/pg_support.py) and each test gets a
fresh database with resonate.sql applied. Without the server binaries or resonate.sql the
tests fail, saying what to install or set: CI installs both, so a skip would hide that
resonate-pg went unchecked. The campaign test asserts what docs/findings.md and
examples/resonate-pg/declared.toml say: conform exits 1, and every class it does not find
declared is one docs/findings.md lists.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


from duespec.cli import main  # noqa: E402
from duespec.histories.format import read_history  # noqa: E402
from duespec.systems.schedules import ModelTarget  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "resonate-pg"
FINDINGS = ROOT / "docs" / "findings.md"
sys.path.insert(0, str(EXAMPLE))

import target as resonate_pg  # noqa: E402

T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z
MINUTE = 60_000
LEAN = {"profile": "lean", "retry_timeout": 5000}
_names = itertools.count(1)


@pytest.fixture
def dsn(postgres) -> str:
    """A database of its own: a target's reset truncates every table of its database."""
    return postgres.create_database(f"t{os.getpid()}_{next(_names)}")


@pytest.fixture
def pg(dsn):
    target = resonate_pg.ResonatePgTarget(dsn)
    target.reset(LEAN)
    return target


def value(data=None):
    return {"headers": {}, "data": data}


def test_promise_create_then_get_round_trips(pg) -> None:
    created = pg.step("promise.create", {"id": "p1", "timeoutAt": T0 + MINUTE, "param": value("eA=="),
                                         "tags": {"k": "v"}}, T0)
    record = {"id": "p1", "state": "pending", "param": value("eA=="), "value": value(), "tags": {"k": "v"},
              "timeoutAt": T0 + MINUTE, "createdAt": T0, "settledAt": None}
    assert created == {"status": 200, "promise": record}
    assert pg.step("promise.get", {"id": "p1"}, T0 + 1) == {"status": 200, "promise": record}
    # read past its timeout: projected as timed out, stored as pending until a tick
    assert pg.step("promise.get", {"id": "p1"}, T0 + MINUTE)["promise"]["state"] == "rejected_timedout"
    state = pg.observe()
    assert [p["state"] for p in state["promises"]] == ["pending"]
    assert state["promiseTimeouts"] == []  # not external: resonate-pg never times it out
    assert pg.step("promise.get", {"id": "p2"}, T0) == {"status": 404, "message": "not found"}


def test_a_schedule_fires_at_tick(pg) -> None:
    schedule = pg.step("schedule.create", {"id": "s", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}",
                                           "promiseTimeout": MINUTE, "promiseParam": value(),
                                           "promiseTags": {"resonate:target": "poll://any@workers"}}, T0)
    assert schedule["status"] == 200 and schedule["schedule"]["nextRunAt"] == T0 + MINUTE
    assert pg.step("tick", {}, T0 + MINUTE - 1) == {"status": 200, "fired": []}
    assert pg.step("tick", {}, T0 + MINUTE) == {"status": 200, "fired": [{"kind": "schedule", "id": "s"}]}
    state = pg.observe()
    assert [(p["id"], p["state"], p["createdAt"]) for p in state["promises"]] == [
        (f"s.{T0 + MINUTE}", "pending", T0 + MINUTE)]
    assert state["schedules"][0]["lastRunAt"] == T0 + MINUTE
    assert state["scheduleTimeouts"] == [{"id": "s", "timeout": T0 + 2 * MINUTE}]
    # its task was dispatched: an execute message and a retry timeout at now + retry_timeout
    assert state["taskTimeouts"] == [{"id": f"s.{T0 + MINUTE}", "kind": 0, "timeout": T0 + MINUTE + 5000}]
    assert state["outbox"] == [{"address": "poll://any@workers",
                                "message": {"kind": "execute", "taskId": f"s.{T0 + MINUTE}", "version": 0}}]


def test_catch_up_fires_every_missed_occurrence_in_one_call(pg) -> None:
    pg.step("schedule.create", {"id": "s", "cron": "*/10 * * * *", "promiseId": "{{.id}}.{{.timestamp}}",
                                "promiseTimeout": 0, "promiseParam": value(), "promiseTags": {}}, T0)
    assert pg.step("tick", {}, T0 + 60 * MINUTE)["fired"] == [{"kind": "schedule", "id": "s"}]
    promises = pg.observe()["promises"]
    assert [p["id"] for p in promises] == [f"s.{T0 + k * 10 * MINUTE}" for k in range(1, 7)]
    assert {p["state"] for p in promises} == {"rejected_timedout"}  # promiseTimeout 0: created expired


def test_reset_empties_every_table_and_sets_the_retry_timeout(pg) -> None:
    targeted = {"resonate:target": "poll://any@workers"}
    pg.step("promise.create", {"id": "p", "timeoutAt": T0 + MINUTE, "param": value(), "tags": targeted}, T0)
    assert pg.observe()["taskTimeouts"] == [{"id": "p", "kind": 0, "timeout": T0 + 5000}]
    pg.reset({"profile": "lean", "retry_timeout": 1})
    assert all(rows == [] for rows in pg.observe().values())
    pg.step("promise.create", {"id": "p", "timeoutAt": T0 + MINUTE, "param": value(), "tags": targeted}, T0)
    assert pg.observe()["taskTimeouts"] == [{"id": "p", "kind": 0, "timeout": T0 + 1}]
    pg.reset({"profile": "lean"})  # left out: resonate.sql's own 5000
    pg.step("promise.create", {"id": "p", "timeoutAt": T0 + MINUTE, "param": value(), "tags": targeted}, T0)
    assert pg.observe()["taskTimeouts"] == [{"id": "p", "kind": 0, "timeout": T0 + 5000}]


def test_a_suspended_task_is_answered_as_the_lean_answers(pg) -> None:
    """resonate-pg writes `"preload": []` beside task.suspend's 200, which is the Lean's
    TaskSuspendRes `{status := 200}` (its preload defaults to []): read back as the model's
    answer, not as a difference (docs/findings.md, the response-only campaign)."""
    targeted = {"resonate:target": "poll://any@workers"}
    for id in ("a", "b"):
        pg.step("promise.create", {"id": id, "timeoutAt": T0 + MINUTE, "param": value(), "tags": targeted}, T0)
    assert pg.step("task.acquire", {"id": "a", "version": 0, "pid": "w", "ttl": 1000}, T0)["status"] == 200
    suspended = pg.step("task.suspend", {"id": "a", "version": 1, "actions": [{"awaited": "b"}]}, T0)
    assert '"data": {"preload": []}' in pg.last_exchange
    assert suspended == {"status": 200}


def test_tick_fires_what_the_model_fires_in_its_own_order(pg) -> None:
    """declared.toml, tick `$.fired[].id` and `$.fired[].kind`: process_timeouts fires due
    promises, then tasks, then schedules; operations.md's dispatcher fires promises and
    schedules by their timeout. The same timeouts fire, to the same state."""
    model = ModelTarget()
    model.reset(LEAN)
    steps = [("schedule.create", {"id": "s", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}",
                                  "promiseTimeout": 10 * MINUTE, "promiseParam": value(), "promiseTags": {}}, T0),
             ("promise.create", {"id": "x", "timeoutAt": T0 + 90_000, "param": value(),
                                 "tags": {"resonate:timer": "true"}}, T0)]
    for op, args, now in steps:
        assert pg.step(op, args, now) == model.step(op, args, now)
    fired = pg.step("tick", {}, T0 + 100_000)["fired"]
    expected = model.step("tick", {}, T0 + 100_000)["fired"]
    assert expected == [{"kind": "schedule", "id": "s"}, {"kind": "promise", "id": "x"}]
    assert fired == [{"kind": "promise", "id": "x"}, {"kind": "schedule", "id": "s"}]
    for op, args in (("promise.get", {"id": "x"}), ("promise.get", {"id": f"s.{T0 + MINUTE}"}),
                     ("schedule.get", {"id": "s"})):
        assert pg.step(op, args, T0 + 100_000) == model.step(op, args, T0 + 100_000)


def _side_by_side(pg, steps) -> list[tuple[dict, dict]]:
    """(the model's answer, resonate-pg's) of each step, both from a fresh reset."""
    model = ModelTarget()
    model.reset(LEAN)
    return [(model.step(op, dict(args), now), pg.step(op, dict(args), now)) for op, args, now in steps]


def test_finding_f2_a_request_at_an_invalid_now_shows_again_at_later_steps(pg) -> None:
    """docs/findings.md, the response-only campaign: what resonate-pg created at a `now` the
    spec refuses (F-2) is still there when a valid request names the same id, so later steps
    differ too: tick fires another promise (`$.fired[].id`, the campaign's shrunk run),
    task.create answers the old promise (`$.promise.createdAt`), task.acquire finds it timed
    out (`$.promise`: 409 where the model acquires)."""
    targeted = {"resonate:target": "poll://any@workers"}
    answers = _side_by_side(pg, [
        ("promise.create", {"id": "p1", "timeoutAt": T0 + MINUTE, "param": value(), "tags": {}}, -1),
        ("task.create", {"pid": "w1", "ttl": MINUTE, "action": {"id": "t2", "timeoutAt": T0 + MINUTE,
                                                                "param": value(), "tags": targeted}}, -1),
        ("promise.create", {"id": "p1", "timeoutAt": T0 + 1440 * MINUTE, "param": value(), "tags": targeted}, T0),
        ("tick", {}, T0 + 27 * 1440 * MINUTE)])
    assert [(m["status"], r["status"]) for m, r in answers[:2]] == [(400, 200), (400, 200)]
    assert answers[2][1]["promise"]["createdAt"] == -1  # the old p1, untargeted, internal
    assert (answers[3][0]["fired"], answers[3][1]["fired"]) == ([{"kind": "promise", "id": "p1"}],
                                                                [{"kind": "promise", "id": "t2"}])
    pg.reset(LEAN)
    created = _side_by_side(pg, [
        ("promise.create", {"id": "t1", "timeoutAt": T0 + MINUTE, "param": value(), "tags": targeted}, "5"),
        ("task.create", {"pid": "w1", "ttl": MINUTE, "action": {"id": "t1", "timeoutAt": T0 + MINUTE,
                                                                "param": value(), "tags": targeted}}, T0)])[1]
    assert (created[0]["status"], created[1]["status"]) == (200, 200)
    assert created[0]["task"] == created[1]["task"]  # the stored pending task, acquired: the same
    assert (created[0]["promise"]["createdAt"], created[1]["promise"]["createdAt"]) == (T0, 5)
    pg.reset(LEAN)
    acquired = _side_by_side(pg, [
        ("promise.create", {"id": "t1", "timeoutAt": T0 + MINUTE, "param": value(), "tags": targeted}, -1),
        ("promise.create", {"id": "t1", "timeoutAt": T0 + 1440 * MINUTE, "param": value(), "tags": targeted}, T0),
        ("task.acquire", {"id": "t1", "version": 0, "pid": "w1", "ttl": MINUTE}, T0 + MINUTE)])[2]
    assert (acquired[0]["status"], acquired[1]["status"]) == (200, 409)
    assert "promise" in acquired[0] and "promise" not in acquired[1]


def test_environment_ops_reject_what_operations_md_calls_invalid(pg) -> None:
    assert pg.step("tick", {}, -1)["status"] == 400
    assert pg.step("tick", {}, 1.5)["status"] == 400
    assert pg.step("tick", {"x": 1}, T0)["status"] == 400
    assert pg.step("schedule.timeout", {"id": ""}, T0)["status"] == 400
    assert pg.step("promise.timeout", {"id": "absent"}, T0) == {"status": 200}


def test_a_sql_error_escaping_resonate_rpc_is_a_500(pg) -> None:
    """resonate_rpc casts the head's debug time before its own error handler is in force."""
    answer = pg.step("promise.get", {"id": "p"}, 1.5)
    assert answer["status"] == 500 and "22P02" in answer["message"]
    assert pg.step("promise.get", {"id": "p"}, T0)["status"] == 404  # the session survives it


def test_each_finding_still_reproduces(dsn, monkeypatch, capsys) -> None:
    """docs/findings.md: each finding's trace diverges at its last step, the step the
    finding is about; a fixed resonate-pg would make this test say which."""
    monkeypatch.setenv("RESONATE_PG_DSN", dsn)
    traces = sorted((EXAMPLE / "findings").glob("*.jsonl"))
    assert len(traces) >= 7
    findings = FINDINGS.read_text()
    for trace in traces:
        assert f"`{trace.name}`" in findings or trace.name in findings, f"{trace.name} is not in docs/findings.md"
        last = sum(1 for _ in trace.open()) - 2
        code = main(["replay", str(trace), "--target", "target:make_target"])
        out = capsys.readouterr().out
        assert code == 1, f"{trace.name} no longer diverges:\n{out}"
        assert f"against target:make_target at step {last}\n" in out, out


def _conform(dsn: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RESONATE_PG_DSN": dsn,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(EXAMPLE), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "duespec", "conform", "schedules", "--target", "target:make_target",
                           "--declared", str(EXAMPLE / "declared.toml"), "--timeout", "60", "--no-coverage",
                           "--progress", "0", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def _classes(output: str) -> list[tuple[str, str]]:
    """(class, status) of each row of conform's table of divergence classes."""
    table = output.split("\ndivergence classes:\n", 1)[1].split("\nnot compared:", 1)[0]
    rows = []
    for line in table.splitlines()[1:]:
        match = re.match(r"\s*\d+\s+(.+?)\s{2,}.*?\s(declared|NOT DECLARED)\s", line)
        assert match, f"unreadable row of the classes table: {line!r}"
        rows.append((match.group(1), match.group(2)))
    return rows


def _listed_classes() -> list[re.Pattern[str]]:
    """The classes docs/findings.md lists, in backquotes; `*` there stands for any op."""
    return [re.compile(re.escape(text).replace(r"\*", r"\S+"))
            for text in re.findall(r"`((?:response|state|target not reproducible) [^`]+)`", FINDINGS.read_text())]


def _assert_documented(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-2000:]
    rows = _classes(result.stdout)
    assert rows, result.stdout[-3000:]
    undeclared = [name for name, status in rows if status == "NOT DECLARED"]
    assert undeclared, "every class declared: docs/findings.md says resonate-pg has real differences"
    listed = _listed_classes()
    missing = [name for name in undeclared if not any(pattern.fullmatch(name) for pattern in listed)]
    assert not missing, f"classes docs/findings.md does not list: {missing}\n{result.stdout[-4000:]}"


@pytest.mark.long
@pytest.mark.parametrize("profile", ["lean", "deployed"])
def test_a_conform_campaign_finds_only_documented_differences(dsn, profile) -> None:
    """The first class a campaign finds is a finding docs/findings.md lists. About three
    minutes of PostgreSQL's CPU: every run opens with the cron edges of one field, the
    first run's are the minute's, and resonate-pg takes ~10 s to refuse `60 * * * *`
    (findings F-1c), again at each shrinking attempt. No conform campaign against
    resonate-pg is shorter; test_each_finding_still_reproduces is the fast check."""
    _assert_documented(_conform(dsn, "--profile", profile, "--examples", "1", "--max-classes", "1",
                                timeout=1800))


#: The section of docs/findings.md that lists what a response-only campaign finds.
RESPONSE_ONLY = "## A response-only campaign"


def _response_only_rows() -> list[tuple[re.Pattern[str], str]]:
    """(class pattern, finding id) of each row of docs/findings.md's response-only table;
    `*` in a class stands for any op."""
    section = FINDINGS.read_text().split(RESPONSE_ONLY, 1)[1].split("\n## ", 1)[0]
    return [(re.compile(re.escape(name).replace(r"\*", r"\S+")), finding)
            for cell, finding in re.findall(r"^\| ([^|]+?) \| (F-\d+[a-z]?)\b", section, re.MULTILINE)
            for name in re.findall(r"`((?:response|state|target) [^`]+)`", cell)]


@pytest.mark.long
def test_a_response_only_campaign_gives_a_verdict_and_every_class_is_declared_or_documented(dsn, tmp_path) -> None:
    """issue 29: `conform --observe none` through the adapter, nothing but answers and public
    reads, with --timeout 5 (the three crons resonate-pg takes ~10 s to refuse are then
    one class, F-1c, and not sent again), ends with a verdict; every class it finds is declared (declared.toml, with its reason) or
    listed in docs/findings.md's response-only section under a finding that page has."""
    env = {**os.environ, "RESONATE_PG_DSN": dsn,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(EXAMPLE), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run([sys.executable, "-m", "duespec", "conform", "schedules", "--target", "target:make_target",
                             "--observe", "none", "--examples", "100", "--timeout", "5",
                             "--declared", str(EXAMPLE / "declared.toml"),
                             "--no-coverage", "--progress", "30", "--trace-dir", str(tmp_path), "--database", "none"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-2000:]
    assert re.search(r"^(DIVERGES|TARGET FAILED): schedules \[lean\]", result.stdout, re.MULTILINE), result.stdout[-3000:]
    rows = _classes(result.stdout)
    listed = _response_only_rows()
    assert listed, f"docs/findings.md has no table under {RESPONSE_ONLY!r}"
    headings = set(re.findall(r"^## (F-\d+)", FINDINGS.read_text(), re.MULTILINE))
    assert {finding.rstrip("abcdefgh") for _, finding in listed} <= headings
    undeclared = [name for name, status in rows if status == "NOT DECLARED"]
    missing = [name for name in undeclared if not any(pattern.fullmatch(name) for pattern, _ in listed)]
    assert not missing, f"classes docs/findings.md does not list: {missing}\n{result.stdout[-4000:]}"


@pytest.mark.long
def test_finding_a_long_catch_up_backlog_stops_every_timeout(pg) -> None:
    """docs/findings.md, F-5: a catch-up takes one advisory lock per missed occurrence in
    one transaction; past the lock table (Debian's defaults: between 11,520 and 12,960
    locks) process_timeouts fails as a whole, so an unrelated timer due in the same call
    is not fired either, and every later call owes more."""
    pg.step("schedule.create", {"id": "s", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}",
                                "promiseTimeout": MINUTE, "promiseParam": value(), "promiseTags": {}}, T0)
    pg.step("promise.create", {"id": "timer", "timeoutAt": T0 + MINUTE, "param": value(),
                               "tags": {"resonate:timer": "true"}}, T0)
    with pytest.raises(Exception, match="out of shared memory"):
        pg.step("tick", {}, T0 + 14 * 1440 * MINUTE)
    state = pg.observe()
    assert [(p["id"], p["state"]) for p in state["promises"]] == [("timer", "pending")]
    assert state["schedules"][0]["lastRunAt"] is None


# --- many clients at once: duespec stress through target:make_client -----------------------


def test_stress_16_clients_on_the_pinned_clock_is_linearizable(dsn, monkeypatch, tmp_path, capsys) -> None:
    """16 threads, each a PostgreSQL session of its own, share three ids: the verdict is
    linearizable but for F-8, declared (docs/findings.md, "Many clients at once"), and the
    contention was real."""
    monkeypatch.setenv("RESONATE_PG_DSN", dsn)
    path = tmp_path / "h.ndjson"
    code = main(["stress", "schedules", "--target", "target:make_client", "--clients", "16", "--ops", "400",
                 "--seed", "1", "-o", str(path), "--declared", str(ROOT / "examples/resonate-pg/stress-declared.toml")])
    out = capsys.readouterr().out
    assert code == 0 and "LINEARIZABLE" in out and "NOT" not in out, out
    events = read_history(path).events
    assert len(events) == 400 and len({e.client for e in events}) == 16
    assert all(e.outcome == "ok" for e in events)
    # Every call drawn is valid (stress's ids hold no dot, which a schedule id may not).
    assert not [e for e in events if e.response["status"] == 400]
    assert any(e.op == "schedule.create" for e in events)
    clients_of: dict[str, set[str]] = {}
    for e in events:
        clients_of.setdefault(e.args.get("id"), set()).add(e.client)
    assert max(len(c) for c in clients_of.values()) >= 8, "one id touched by many clients"
    ordered = sorted(events, key=lambda e: e.call_ns)
    assert sum(1 for a, b in zip(ordered, ordered[1:]) if b.call_ns < a.return_ns) > 100, "calls overlap"
    won = [e for e in events if e.op == "task.acquire" and e.response["status"] == 200]
    lost = [e for e in events if e.op == "task.acquire" and e.response["status"] == 409]
    assert won and lost, "workers raced for the same task versions"


def test_stress_refuses_a_factory_that_does_not_declare_concurrent_clients(dsn, monkeypatch, capsys) -> None:
    monkeypatch.setenv("RESONATE_PG_DSN", dsn)
    code = main(["stress", "schedules", "--target", "target:make_target", "--ops", "5"])
    err = capsys.readouterr().err
    assert code == 2 and "concurrent_clients = True" in err and "Traceback" not in err, err
    code = main(["stress", "schedules", "--target", "target:make_client", "--clock", "real", "--ops", "5"])
    err = capsys.readouterr().err
    assert code == 2 and "--clock pinned only" in err, err


def test_a_pass_that_finds_its_timeout_fired_by_another_says_it_fired_nothing(dsn) -> None:
    """Two passes select one due lease; the first fires it; the second, once it has the
    task's lock, finds it pending and does nothing: its `fired` is empty (it was the due
    rows read beforehand, so both passes said they fired the lease, which no order of
    atomic ticks gives)."""
    import threading

    a = resonate_pg.ResonatePgTarget(dsn, own_connection=True)
    b = resonate_pg.ResonatePgTarget(dsn, own_connection=True)
    watcher = resonate_pg.ResonatePgTarget(dsn, own_connection=True)
    try:
        a.reset(LEAN)
        a.step("promise.create", {"id": "k", "timeoutAt": T0 + 10 * MINUTE, "param": value(),
                                  "tags": {"resonate:target": "poll://any"}}, T0)
        assert a.step("task.acquire", {"id": "k", "version": 0, "pid": "w1", "ttl": 300}, T0)["status"] == 200
        b_answer: list[dict] = []
        with a.conn.transaction():
            a.conn.execute("SELECT resonate._lock('k')")
            b_pid = b.conn.info.backend_pid
            tick_b = threading.Thread(target=lambda: b_answer.append(b.step("tick", {}, T0 + 1000)))
            tick_b.start()
            for _ in range(2000):  # until B waits on the lock A holds (a count, not a time)
                waiting = watcher.conn.execute(
                    "SELECT count(*) FROM pg_locks WHERE pid = %s AND NOT granted", [b_pid]).fetchone()[0]
                if waiting:
                    break
                threading.Event().wait(0.01)
            assert waiting, "tick B never waited for the task's lock"
            assert a.step("tick", {}, T0 + 1000) == {"status": 200, "fired": [{"kind": "lease", "id": "k"}]}
        tick_b.join(30)
        assert b_answer == [{"status": 200, "fired": []}]
    finally:
        for target in (a, b, watcher):
            target.close()


def test_finding_two_concurrent_timeout_passes_revoke_a_fresh_lease(dsn) -> None:
    """F-6, with the interleaving forced: tick B selects a lease that is due, then waits for
    the task's lock, which session A holds; A fires that lease and a second worker acquires
    the task with a 60 s lease; when A commits, B fires the lease again, on the new
    acquisition, 60 s early. In the spec the second tick finds nothing due."""
    import threading

    a = resonate_pg.ResonatePgTarget(dsn, own_connection=True)
    b = resonate_pg.ResonatePgTarget(dsn, own_connection=True)
    watcher = resonate_pg.ResonatePgTarget(dsn, own_connection=True)
    try:
        a.reset(LEAN)
        a.step("promise.create", {"id": "k", "timeoutAt": T0 + 10 * MINUTE, "param": value(),
                                  "tags": {"resonate:target": "poll://any"}}, T0)
        assert a.step("task.acquire", {"id": "k", "version": 0, "pid": "w1", "ttl": 300}, T0)["status"] == 200
        b_answer: list[dict] = []
        with a.conn.transaction():
            a.conn.execute("SELECT resonate._lock('k')")
            b_pid = b.conn.info.backend_pid  # B's session opened here, before its thread uses it
            tick_b = threading.Thread(target=lambda: b_answer.append(b.step("tick", {}, T0 + 1000)))
            tick_b.start()
            for _ in range(2000):  # until B waits on the lock A holds (a count, not a time)
                waiting = watcher.conn.execute(
                    "SELECT count(*) FROM pg_locks WHERE pid = %s AND NOT granted", [b_pid]).fetchone()[0]
                if waiting:
                    break
                threading.Event().wait(0.01)
            assert waiting, "tick B never waited for the task's lock"
            assert a.step("tick", {}, T0 + 1000) == {"status": 200, "fired": [{"kind": "lease", "id": "k"}]}
            version = a.step("task.get", {"id": "k"}, T0 + 1000)["task"]["version"]
            again = a.step("task.acquire", {"id": "k", "version": version, "pid": "w2", "ttl": MINUTE}, T0 + 1000)
            assert again["status"] == 200
        tick_b.join(30)
        assert b_answer == [{"status": 200, "fired": [{"kind": "lease", "id": "k"}]}]
        task = a.step("task.get", {"id": "k"}, T0 + 1001)["task"]
        assert task["state"] == "pending", "w2's 60 s lease was revoked 1 ms after it was granted"
    finally:
        for target in (a, b, watcher):
            target.close()


#: `duespec stress` runs tried before a race is called not found: each a fresh database,
#: 16 sessions and 1,000 calls with ticks.
STRESS_RUNS = 10


def _overlap(a: dict, b: dict) -> bool:
    return a["call_ns"] < b["return_ns"] and b["call_ns"] < a["return_ns"]


def _fires_a_task_timeout_another_tick_fired(counterexample: dict) -> bool:
    """F-6: a tick fired a retry or a lease of a task another tick, overlapping it, fired
    too: the culprit, or (a counterexample whose every order fails names none) any tick."""
    by_index = dict(zip(counterexample["original"], counterexample["events"]))
    culprit = counterexample["violation"]["culprit"] if counterexample["violation"] else None
    ticks = [e for index, e in by_index.items() if e["op"] == "tick" and culprit in (None, index)]

    def fired_twice(tick: dict) -> bool:
        mine = {(f["kind"], f["id"]) for f in tick["response"]["fired"] if f["kind"] in ("retry", "lease")}
        return any(e is not tick and e["op"] == "tick" and _overlap(e, tick)
                   and {(f["kind"], f["id"]) for f in e["response"]["fired"]} & mine for e in by_index.values())

    return any(fired_twice(tick) for tick in ticks)


def _fires_the_timeout_of_a_settled_promise(counterexample: dict) -> bool:
    """The planted overwrite: a tick fired the timeout of a promise a settle in the
    counterexample really settled (its answer settled at its own `now`, not an echo of a
    promise already done)."""
    events = counterexample["events"]
    fired = {f["id"] for e in events if e["op"] == "tick" for f in e["response"]["fired"] if f["kind"] == "promise"}
    settled = {e["response"]["promise"]["id"] for e in events if e["op"] in ("promise.settle", "task.fulfill")
               and e["response"]["status"] == 200 and e["response"]["promise"]["settledAt"] == e["now"]}
    return bool(fired & settled)


def _stress_until(postgres, monkeypatch, tmp_path, capsys, shows, sql: Path | None = None) -> list[int]:
    """`duespec stress ... --ticks` (examples/resonate-pg/README.md), seed 1, 2, ... each on a
    fresh database (resonate.sql, or `sql`), until a run is not linearizable with a
    counterexample that `shows` the race; the seeds run, the last the one that showed it
    (all of them, STRESS_RUNS, when none did)."""
    from duespec.histories.linearize import check_history

    if sql is not None:
        monkeypatch.setattr(postgres, "sql", sql)
    for seed in range(1, STRESS_RUNS + 1):
        dsn = postgres.create_database(f"t{os.getpid()}_{next(_names)}")
        monkeypatch.setenv("RESONATE_PG_DSN", dsn)
        path = tmp_path / f"s{seed}.ndjson"
        code = main(["stress", "schedules", "--target", "target:make_client", "--clients", "16", "--ops", "1000",
                     "--ticks", "--seed", str(seed), "-o", str(path)])
        capsys.readouterr()
        assert code in (0, 1, 3), code
        if code == 1:
            verdict = check_history(read_history(path), budget=60)
            assert verdict.status == "not linearizable"
            if shows(verdict.counterexample.to_json()):
                return list(range(1, seed + 1))
    return list(range(1, STRESS_RUNS + 1)) + [0]


@pytest.mark.long
def test_stress_alone_finds_f6_two_timeout_passes_firing_one_timeout_twice(postgres, monkeypatch, tmp_path,
                                                                            capsys) -> None:
    """F-6 (docs/findings.md), found by `duespec stress --ticks` from a fresh database, with
    no interleaving forced: the counterexample's culprit is a tick that fired a retry or a
    lease of a task another tick, overlapping it, fired too."""
    seeds = _stress_until(postgres, monkeypatch, tmp_path, capsys, _fires_a_task_timeout_another_tick_fired)
    assert seeds[-1] != 0, f"F-6 not found in {STRESS_RUNS} stress runs"


@pytest.mark.long
def test_stress_finds_a_promise_timeout_that_overwrites_a_concurrent_settle(postgres, monkeypatch, tmp_path,
                                                                             capsys) -> None:
    """A planted bug: resonate.sql's `_on_promise_timeout` without its re-check that the
    promise is still pending (one line), so a pass that selected a due promise, then waited
    for its lock while a settle committed, overwrites the settle. `duespec stress --ticks`
    finds it: a tick that fired the timeout of a promise a settle in the counterexample
    settled."""
    from pg_support import resonate_sql

    text = resonate_sql().read_text()
    check = "  IF p.state <> 'pending' THEN RETURN; END IF;\n"
    start = text.index("CREATE OR REPLACE FUNCTION _on_promise_timeout")
    at = text.index(check, start)
    assert at < text.index("END $$;", start), "the check is _on_promise_timeout's"
    planted = tmp_path / "resonate-overwrite.sql"
    planted.write_text(text[:at] + text[at + len(check):])
    seeds = _stress_until(postgres, monkeypatch, tmp_path, capsys, _fires_the_timeout_of_a_settled_promise, planted)
    assert seeds[-1] != 0, f"the planted overwrite not found in {STRESS_RUNS} stress runs"

#: Runs of the README's baseline check here: enough to meet its classes again, about a minute.
BASELINE_EXAMPLES = 20


@pytest.mark.long
def test_the_unmodified_server_gives_no_class_outside_its_baseline_and_declarations(dsn, tmp_path) -> None:
    """issue 40: examples/resonate-pg/README.md's response-only campaign, with its baseline
    (examples/resonate-pg/baseline.json, made by the README's command against this
    resonate.sql), finds nothing NEW: exit 0, and what it met again is KNOWN."""
    result = _baseline_gate(dsn, tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    verdict = result.stdout.splitlines()[1] if result.stdout.startswith("response-only") else result.stdout
    assert re.search(r"^HOLDS: schedules \[lean\].* 0 NEW; \d+ known from the baseline", result.stdout,
                     re.MULTILINE), verdict
    assert re.search(r"known from the baseline .*: \d+ classes, [1-9]\d* met again", result.stdout), \
        result.stdout[-3000:]
    witnessed = re.search(r"(\d+) with a witness, (\d+) of them replayed as recorded", result.stdout)
    assert witnessed and int(witnessed[1]) >= 30 and witnessed[1] == witnessed[2], result.stdout[-3000:]


def _baseline_gate(dsn: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The README's response-only campaign at BASELINE_EXAMPLES, gated by its baseline."""
    env = {**os.environ, "RESONATE_PG_DSN": dsn,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(EXAMPLE), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "duespec", "conform", "schedules", "--target", "target:make_target",
                           "--observe", "none", "--examples", str(BASELINE_EXAMPLES), "--timeout", "5",
                           "--declared", str(EXAMPLE / "declared.toml"),
                           "--baseline", str(EXAMPLE / "baseline.json"),
                           "--no-coverage", "--progress", "0", "--trace-dir", str(tmp_path), "--database", "none"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)


@pytest.mark.long
def test_a_known_difference_the_server_now_answers_otherwise_fails_the_gate(postgres, monkeypatch, tmp_path) -> None:
    """A change to resonate.sql inside a known class: task_suspend no longer refuses a suspend on
    no promise (400, a known difference: the Lean parks the task) and answers as the Lean
    does. No comparison with the spec shows it; the class's witness, replayed, does."""
    text = postgres.sql.read_text()
    refusal = "IF jsonb_array_length(COALESCE(p_actions, '[]'::jsonb)) = 0 THEN"
    assert text.count(refusal) == 1
    planted = tmp_path / "resonate-empty-suspend.sql"
    planted.write_text(text.replace(refusal, refusal.replace("= 0 THEN", "= -1 THEN")))
    monkeypatch.setattr(postgres, "sql", planted)
    result = _baseline_gate(postgres.create_database(f"t{os.getpid()}_{next(_names)}"), tmp_path)
    assert result.returncode == 1, result.stdout[-4000:] + result.stderr[-2000:]
    assert re.search(r"^DIVERGES: schedules \[lean\].* 0 NEW; \d+ known from the baseline, 1 of them CHANGED",
                     result.stdout, re.MULTILINE), result.stdout[-3000:]
    assert "known difference changed task.suspend $.status [T-06] via T-06.awaits_nothing" in result.stdout, \
        result.stdout[-3000:]

"""tools/pg_variants: the single-bug variants of resonate.sql apply, and the runner reads the
README's commands and tells a new finding from one the unmodified server also shows."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools" / "pg_variants"))

import pg_support  # noqa: E402
from needs import unavailable  # noqa: E402
import run as runner  # noqa: E402
import variants  # noqa: E402


@pytest.fixture(scope="module")
def resonate_source() -> str:
    try:
        return pg_support.resonate_sql().read_text()
    except pg_support.PostgresUnavailable as error:
        unavailable("the resonate.sql variants", str(error))


def test_ten_variants_with_distinct_names():
    names = [v.name for v in variants.VARIANTS]
    assert len(names) == 10 and len(set(names)) == 10


@pytest.mark.parametrize("variant", variants.VARIANTS, ids=lambda v: v.name)
def test_each_edit_applies_once_and_changes_the_file(variant, resonate_source):
    assert resonate_source.count(variant.old) == 1
    edited = variants.apply(variant, resonate_source)
    assert edited != resonate_source
    assert edited.count(variant.new) == 1 + resonate_source.count(variant.new)


def test_an_edit_whose_old_text_is_not_there_once_is_refused(resonate_source):
    moved = variants.Variant("moved", "test", "no such text in resonate.sql", "x", "", "")
    with pytest.raises(variants.VariantError, match="0 times"):
        variants.apply(moved, resonate_source)
    twice = variants.Variant("twice", "test", "RETURN jsonb_build_object('status', 404);", "x", "", "")
    with pytest.raises(variants.VariantError, match="not once"):
        variants.apply(twice, resonate_source)


def test_the_readme_commands_are_read_from_its_sh_blocks():
    commands = runner.readme_commands()
    labels = [c.label for c in commands]
    assert "conform response-only" in labels and "replay" in labels and "stress" in labels
    for command in commands:
        assert not command.argv[0].startswith("-")  # a duespec command, not an option
        assert command.env.get("PYTHONPATH") == "examples/resonate-pg"
        assert "\\" not in command.argv  # continuation lines joined


def _outcome(command, findings, returncode=1):
    return runner.Outcome(command, returncode, 10.0, findings=dict(findings))


def test_only_findings_the_unmodified_server_did_not_show_count():
    conform = runner.Command("conform response-only", {}, ["conform", "schedules"], "")
    stress = runner.Command("stress", {}, ["stress", "schedules"], "")
    base = [_outcome(conform, {"response promise.get $.status [P-01]": 3.0}), _outcome(stress, {}, 0)]
    same = [_outcome(conform, {"response promise.get $.status [P-01]": 2.0}), _outcome(stress, {}, 0)]
    assert runner.detections(base, same) == []
    new = [_outcome(conform, {"response promise.get $.status [P-01]": 2.0,
                              "response task.acquire $.status [T-03]": 7.5}),
           _outcome(stress, {}, 1)]
    found = runner.detections(base, new)
    assert [(d.command.label, d.seconds, d.what) for d in found] == [
        ("conform response-only", 7.5, "response task.acquire $.status [T-03]"),
        ("stress", 10.0, "exit 1 (unmodified: 0)")]


def test_conform_lines_parsed_declared_and_slow_calls_set_aside():
    conform = runner.Command("conform state", {}, ["conform", "schedules"], "")
    line = "  ... class 3 found: response schedule.delete $.status [S-03] (2 steps); searching on"
    assert runner.findings_of(conform, line) == ("response schedule.delete $.status [S-03]", False)
    declared = "  ... class 9 found: response promise.register_callback $.status [P-04] (1 steps, declared); searching on"
    assert runner.findings_of(conform, declared) == (None, False)
    slow = "  ... class 1 found: target too slow: schedule.create took > 5s (--timeout) [S-02] (1 steps); searching on"
    assert runner.findings_of(conform, slow)[1] is True
    replay = runner.Command("replay", {}, ["replay", "traces/schedules"], "")
    assert runner.findings_of(replay, "DIVERGES: traces/schedules/x.jsonl [schedules/lean] against t at step 1")[0] \
        == "DIVERGES: traces/schedules/x.jsonl [schedules/lean] against t at step 1"
    assert runner.findings_of(replay, "CONFIRMED: traces/schedules/crud.jsonl (0.1s)") == (None, False)
    stress = runner.Command("stress", {}, ["stress", "schedules"], "")
    assert runner.findings_of(stress, "NOT LINEARIZABLE: no order of the calls explains the answers: "
                                      "2,000 calls of 16 clients, 258 independent parts") \
        == ("NOT LINEARIZABLE", False)
    assert runner.findings_of(stress, "LINEARIZABLE: an order of the calls explains every answer") == (None, False)


def test_bad_usage_is_one_line_and_exit_2(capsys):
    """An unknown variant or command selection is exit 2, one line; --list runs nothing."""
    assert runner.main(["--only", "no_such_variant"]) == 2
    assert "unknown variant no_such_variant" in capsys.readouterr().err
    assert runner.main(["--commands", "no_such_command"]) == 2
    kept = ROOT / "tests" / "test_pg_variants.py"
    assert runner.main(["--logs", str(kept.parent), "--only", "catchup_strict_bound"]) == 2
    assert "not an empty directory" in capsys.readouterr().err
    assert runner.main(["--list"]) == 0
    assert "settle_overwrites_settled" in capsys.readouterr().out


def test_a_command_past_its_wall_is_stopped_and_what_it_reports_on_stop_counts(tmp_path):
    """SIGTERM at the wall limit; a finding printed in reply is credited at the limit, one
    printed before at its own time; the run counts as stopped, not as an exit code."""
    script = ("import signal, sys, time\n"
              "def stop(*_):\n"
              "    print('DIVERGES: late.jsonl at step 2', flush=True); sys.exit(1)\n"
              "signal.signal(signal.SIGTERM, stop)\n"
              "print('DIVERGES: early.jsonl at step 1', flush=True)\n"
              "time.sleep(60)\n")
    command = runner.Command("replay", {}, ["-c", script], "python -c ...")
    outcome = runner.run_command(command, "dsn", 3.0, tmp_path / "log", program=sys.executable)
    assert outcome.returncode is None
    assert set(outcome.findings) == {"DIVERGES: early.jsonl at step 1", "DIVERGES: late.jsonl at step 2"}
    assert outcome.findings["DIVERGES: early.jsonl at step 1"] < 3.0
    assert outcome.findings["DIVERGES: late.jsonl at step 2"] == 3.0
    assert outcome.seconds < 30


def test_a_variable_in_a_readme_line_is_expanded_as_the_shell_would():
    env = {"RESONATE_PG_DSN": "host=h port=1", "X": "y"}
    assert runner._expand("--dsn=$RESONATE_PG_DSN", env) == "--dsn=host=h port=1"
    assert runner._expand("${X}z/$UNSET", env) == "yz/"


def _rpc(dsn: str, request: dict) -> dict:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT resonate.resonate_rpc(%s::jsonb)::text", (json.dumps(request),)).fetchone()
    return json.loads(row[0])


def test_a_variant_loads_into_postgresql_and_changes_what_it_answers(tmp_path, resonate_source):
    """settle_overwrites_settled applied to a real PostgreSQL: the file loads, and a second
    settle of a settled promise rewrites it there, where the unmodified file keeps the first."""
    variant = variants.by_name("settle_overwrites_settled")
    edited = variants.write_variant(variant, pg_support.resonate_sql(), tmp_path)
    try:
        server = pg_support.PostgresServer().start()
    except pg_support.PostgresUnavailable as error:
        unavailable("the resonate.sql variants on PostgreSQL", str(error))
    try:
        server.sql = edited
        variant_dsn = server.create_database("variant")
        head = {"corrId": "c", "version": "2026-04-01", "resonate:debug_time": 1000}
        states = {}
        for name, dsn in (("unmodified", server.dsn), ("variant", variant_dsn)):
            _rpc(dsn, {"kind": "promise.create", "head": head,
                       "data": {"id": "p", "timeoutAt": 10_000, "param": {}, "tags": {}}})
            for state in ("resolved", "rejected"):
                answer = _rpc(dsn, {"kind": "promise.settle", "head": head,
                                    "data": {"id": "p", "state": state, "value": {}}})
            states[name] = answer["data"]["promise"]["state"]
        assert states == {"unmodified": "resolved", "variant": "rejected"}
    finally:
        server.stop()


T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z, on a minute
MINUTE = 60_000
TARGET = {"resonate:target": "poll://any@workers"}


def _call(dsn: str, kind: str, data: dict, now: int) -> dict:
    return _rpc(dsn, {"kind": kind, "head": {"corrId": "c", "version": "2026-04-01",
                                             "resonate:debug_time": now}, "data": data})


def _query(dsn: str, sql: str, *args):
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(sql, args).fetchall()


def _schedule(dsn: str) -> None:
    _call(dsn, "schedule.create", {"id": "s", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}",
                                   "promiseTimeout": MINUTE, "promiseParam": {}, "promiseTags": {}}, T0)


def _occurrences_after(dsn: str, now: int):
    _schedule(dsn)
    _query(dsn, "SELECT resonate.process_timeouts(%s)", now)
    return _query(dsn, "SELECT id, timeout_at FROM resonate.promises ORDER BY id")


def _create(dsn: str, pid: str, timeout_at: int, now: int, tags=TARGET, data=None) -> dict:
    return _call(dsn, "promise.create", {"id": pid, "timeoutAt": timeout_at,
                                         "param": {"headers": {}, "data": data}, "tags": tags}, now)


def _expired_with_target(dsn: str):
    _create(dsn, "p", 500, 1000)
    return _query(dsn, "SELECT t.state, (SELECT count(*) FROM resonate.outbox) FROM resonate.tasks t")


def _re_create(dsn: str):
    _create(dsn, "p", 100_000, 1000, tags={}, data="first")
    return _create(dsn, "p", 100_000, 2000, tags={}, data="second")["data"]["promise"]["param"]


def _stale_acquire(dsn: str):
    _create(dsn, "p", 100_000, 1000)
    _call(dsn, "task.acquire", {"id": "p", "version": 0, "pid": "w", "ttl": 1000}, 1000)
    _call(dsn, "task.release", {"id": "p", "version": 1}, 1100)
    return _call(dsn, "task.acquire", {"id": "p", "version": 0, "pid": "w", "ttl": 1000}, 1200)["head"]["status"]


def _heartbeat(dsn: str):
    _create(dsn, "p", 100_000, 1000)
    _call(dsn, "task.acquire", {"id": "p", "version": 0, "pid": "w", "ttl": 1000}, 1000)
    _call(dsn, "task.heartbeat", {"pid": "w", "tasks": [{"id": "p", "version": 1}]}, 1500)
    return _query(dsn, "SELECT timeout_at FROM resonate.tasks")


def _concurrent_settles(dsn: str):
    """One session settles inside an open transaction; a second settles the same promise
    meanwhile; the first commits. The second's answer says whether it waited for the first."""
    import threading

    import psycopg

    _create(dsn, "p", 100_000, 1000, tags={})
    request = {"kind": "promise.settle", "head": {"corrId": "c", "version": "2026-04-01", "resonate:debug_time": 2000},
               "data": {"id": "p", "state": "resolved", "value": {}}}
    answers = []
    with psycopg.connect(dsn) as first:
        first.execute("SELECT resonate.resonate_rpc(%s::jsonb)", (json.dumps(request),))
        second_request = {**request, "data": {**request["data"], "state": "rejected"}}
        second = threading.Thread(target=lambda: answers.append(_rpc(dsn, second_request)))
        second.start()
        second.join(2.0)  # blocked on the first's lock (advisory or row) until it commits
        first.commit()
    second.join(60)
    return answers[0]["data"]["promise"]["state"]


def _timeout_after_settle(dsn: str):
    _create(dsn, "p", 10_000, 1000)
    _call(dsn, "promise.settle", {"id": "p", "state": "resolved", "value": {}}, 2000)
    _query(dsn, "SELECT resonate._on_promise_timeout('p', 20000)")
    return _query(dsn, "SELECT state FROM resonate.promises")


def _settle_twice(dsn: str):
    _create(dsn, "p", 10_000, 1000, tags={})
    _call(dsn, "promise.settle", {"id": "p", "state": "resolved", "value": {}}, 2000)
    return _call(dsn, "promise.settle", {"id": "p", "state": "rejected", "value": {}}, 3000)["data"]["promise"]["state"]


#: For each variant, a scenario whose outcome differs between the unmodified file and the
#: variant: the variant's `why`, shown on a real PostgreSQL.
SCENARIOS = {
    "catchup_skips_to_now": lambda dsn: _occurrences_after(dsn, T0 + 3 * MINUTE),
    "catchup_strict_bound": lambda dsn: _occurrences_after(dsn, T0 + MINUTE),
    "catchup_timeout_from_now": lambda dsn: _occurrences_after(dsn, T0 + 3 * MINUTE),
    "create_expired_dispatches": _expired_with_target,
    "create_existing_overwrites_param": _re_create,
    "acquire_accepts_stale_version": _stale_acquire,
    "heartbeat_not_renewing": _heartbeat,
    "settle_without_lock": _concurrent_settles,
    "timeout_overwrites_settle": _timeout_after_settle,
    "settle_overwrites_settled": _settle_twice,
}


def test_every_variant_has_a_scenario():
    assert set(SCENARIOS) == {v.name for v in variants.VARIANTS}


@pytest.mark.long
def test_every_variant_loads_and_changes_what_its_scenario_shows(tmp_path):
    """Each edit leaves a file PostgreSQL applies without error, and really changes behaviour:
    its scenario, run on a fresh database of the unmodified file and of the variant, ends
    differently."""
    try:
        server = pg_support.PostgresServer().start()
    except pg_support.PostgresUnavailable as error:
        unavailable("the resonate.sql variants on PostgreSQL", str(error))
    original = server.sql
    same = []
    try:
        for index, variant in enumerate(variants.VARIANTS):
            server.sql = original
            unmodified = SCENARIOS[variant.name](server.create_database(f"unmodified_{index}"))
            server.sql = variants.write_variant(variant, original, tmp_path)
            edited = SCENARIOS[variant.name](server.create_database(f"variant_{index}"))
            if edited == unmodified:
                same.append(f"{variant.name}: {edited!r}")
    finally:
        server.stop()
    assert same == []

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
import run as runner  # noqa: E402
import variants  # noqa: E402


@pytest.fixture(scope="module")
def resonate_source() -> str:
    try:
        return pg_support.resonate_sql().read_text()
    except pg_support.PostgresUnavailable as error:
        pytest.fail(f"the variants cannot be checked: {error}", pytrace=False)


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
        assert command.argv[0] in {"conform", "replay", "stress"}
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
    assert runner.main(["--list"]) == 0
    assert "settle_overwrites_settled" in capsys.readouterr().out


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
        pytest.fail(f"resonate-pg cannot be checked: {error}", pytrace=False)
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


@pytest.mark.long
def test_every_variant_loads_into_postgresql(tmp_path):
    """Each of the ten edits leaves a file PostgreSQL applies without error (the runner
    would otherwise stop at that variant with exit 2)."""
    try:
        server = pg_support.PostgresServer().start()
    except pg_support.PostgresUnavailable as error:
        pytest.fail(f"resonate-pg cannot be checked: {error}", pytrace=False)
    try:
        for variant in variants.VARIANTS:
            server.sql = variants.write_variant(variant, pg_support.resonate_sql(), tmp_path)
            server.create_database(variant.name)
    finally:
        server.stop()


def test_a_command_label_selects_that_command_alone(capsys):
    assert runner.main(["--commands", "conform state", "--list"]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("command ")]
    assert len(listed) == 1 and "--profile" not in listed[0]
    assert runner.main(["--commands", "conform", "--list"]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("command ")]
    assert len(listed) == 3

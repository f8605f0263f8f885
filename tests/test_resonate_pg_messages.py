"""What resonate-pg's workers receive, read through its own dequeue functions, compared.

The adapter's `messages` hook (examples/resonate-pg/target.py) calls
`resonate.dequeue_execute` / `dequeue_unblock` as a polling worker does. A copy of
resonate.sql with one planted dispatch bug (an execute message for a promise created
already expired, with a target) must be found by the messages alone, named P-02, and the
unmodified file must send what the model sends there. Real PostgreSQL (tests/pg_support.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pg_support import resonate_sql  # noqa: E402

from duespec.coverage import isolated  # noqa: E402
from duespec.judge import Difference, StepJudge  # noqa: E402
from duespec.systems.schedules import ModelTarget  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "resonate-pg"
sys.path.insert(0, str(EXAMPLE))

import target as resonate_pg  # noqa: E402

T0 = 1_735_689_600_000
MINUTE = 60_000
LEAN = {"profile": "lean", "retry_timeout": 5000}
W = "poll://any@workers"
EMPTY = {"headers": {}, "data": None}
#: resonate.sql's promise.create, where a promise created already expired gets its task.
EXPIRED_TASK = "      INSERT INTO tasks (id, state, version) VALUES (p.id, 'fulfilled', 0);\n"
#: The planted bug: the same, and an execute message for that task.
DISPATCHES_EXPIRED = EXPIRED_TASK + "      PERFORM _emit_execute(tags->>'resonate:target', p.id, 0);\n"


@pytest.fixture(scope="module")
def planted_sql(tmp_path_factory) -> Path:
    """resonate.sql with the one change; the shared file is read, never written."""
    text = resonate_sql().read_text()
    assert text.count(EXPIRED_TASK) == 1, "resonate.sql changed: the planted bug's anchor is gone"
    path = tmp_path_factory.mktemp("planted") / "resonate-dispatches-expired.sql"
    path.write_text(text.replace(EXPIRED_TASK, DISPATCHES_EXPIRED))
    return path


def execute(task: str, version: int = 0) -> dict:
    return {"address": W, "message": {"kind": "execute", "taskId": task, "version": version}}


def create(id: str, timeout_at: int) -> tuple[str, dict]:
    return "promise.create", {"id": id, "timeoutAt": timeout_at, "param": EMPTY, "tags": {"resonate:target": W}}


def _last_verdict(dsn: str, *steps):
    with isolated() as tags:
        target = resonate_pg.ResonatePgTarget(dsn)
        judge = StepJudge(ModelTarget(), target, observe=False, messages=True, tags=tags)
        assert judge.reset(LEAN) is None
        verdict = None
        for op, args, now in steps:
            _, verdict = judge.step(op, args, now)
        return verdict


def test_the_hook_hands_over_what_a_worker_dequeues_once(postgres) -> None:
    target = resonate_pg.ResonatePgTarget(postgres.create_database("m_dequeue"))
    target.reset(LEAN)
    target.step(*create("due", T0 + MINUTE), T0)
    assert target.messages() == [execute("due")]
    assert target.messages() == []  # dequeued: a worker gets each message once
    target.step("schedule.create", {"id": "s", "cron": "* * * * *", "promiseId": "p{{.timestamp}}",
                                    "promiseTimeout": 3_600_000, "promiseParam": EMPTY,
                                    "promiseTags": {"resonate:target": W}}, T0)
    target.step("tick", {}, T0 + 3 * MINUTE)
    assert target.messages() == [execute(f"p{T0 + k * MINUTE}") for k in (1, 2, 3)]  # oldest first


def test_unmodified_resonate_pg_sends_nothing_for_a_promise_created_expired(postgres) -> None:
    dsn = postgres.create_database("m_unmodified")
    assert _last_verdict(dsn, (*create("late", T0 - 1), T0)) is None
    assert _last_verdict(dsn, (*create("due", T0 + MINUTE), T0)) is None


def test_the_planted_dispatch_bug_shows_in_the_messages_alone(postgres, planted_sql) -> None:
    verdict = _last_verdict(postgres.create_database("m_planted", planted_sql), (*create("late", T0 - 1), T0))
    assert isinstance(verdict, Difference), verdict
    assert verdict.divergence_class.label() == ("messages promise.create $ [P-02] via P-02.expired_at_creation, "
                                                "P-02.expired_at_creation_task")
    assert verdict.actual == [execute("late")] and verdict.expected == []


def _conform(dsn: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The README's response-only command, with the seed fixed and room for the classes
    resonate-pg's validation gives first (some 30, docs/findings.md): the planted class
    comes after them."""
    env = {**os.environ, "RESONATE_PG_DSN": dsn,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(EXAMPLE), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "duespec", "conform", "schedules", "--target", "target:make_target",
                           "--observe", "none", "--examples", "100", "--timeout", "5", "--seed", "0", "--max-classes", "60",
                           "--declared", str(EXAMPLE / "declared.toml"), "--no-coverage", "--progress", "0",
                           "--trace-dir", str(tmp_path), "--database", "none"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)


def _messages_classes(output: str) -> list[str]:
    return re.findall(r"^class \d+ of \d+: (messages \S+ \S+ \[[^]]*\])", output, re.MULTILINE)


@pytest.mark.long
def test_conform_response_only_finds_the_planted_dispatch_bug(postgres, planted_sql, tmp_path) -> None:
    result = _conform(postgres.create_database("m_conform_planted", planted_sql), tmp_path)
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-2000:]
    assert "messages promise.create $ [P-02]" in _messages_classes(result.stdout), result.stdout[-4000:]


@pytest.mark.long
def test_conform_response_only_finds_no_such_class_in_unmodified_resonate_pg(postgres, tmp_path) -> None:
    result = _conform(postgres.create_database("m_conform_unmodified"), tmp_path)
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-2000:]  # its known findings
    assert not any(name.startswith("messages promise.create") for name in _messages_classes(result.stdout)), \
        result.stdout[-4000:]


#: resonate.sql's dequeue_unblock skips the rows another worker's dequeue holds.
SKIPS_LOCKED = "      ORDER BY seq\n      FOR UPDATE SKIP LOCKED\n      LIMIT p_limit)\n    RETURNING promise, seq)"
#: The mistake: it waits for them (a dropped SKIP LOCKED).
WAITS = SKIPS_LOCKED.replace(" SKIP LOCKED", "")


def _two_unblocks(target: resonate_pg.ResonatePgTarget) -> list:
    target.reset(LEAN)
    for id in ("a", "b"):
        target.step("promise.create", {"id": id, "timeoutAt": T0 + MINUTE, "param": EMPTY,
                                       "tags": {"resonate:timer": "true"}}, T0)
        target.step("promise.register_listener", {"awaited": id, "address": "poll://any@x"}, T0)
        target.step("promise.settle", {"id": id, "state": "resolved", "value": EMPTY}, T0)
    return target.messages()


def test_two_workers_poll_an_address_and_one_may_not_wait_for_the_other(postgres, tmp_path) -> None:
    """The hook polls as two workers of a group: the first holds one message in an open
    transaction while the second takes the rest. The shipped file hands both over, in
    order; a dequeue that waits for the first worker's row fails the step (lock_timeout)."""
    unmodified = resonate_pg.ResonatePgTarget(postgres.create_database("m_two_workers"))
    assert [m["message"]["promise"]["id"] for m in _two_unblocks(unmodified)] == ["a", "b"]
    text = resonate_sql().read_text()
    assert text.count(SKIPS_LOCKED) == 1, "resonate.sql changed: the dequeue's anchor is gone"
    waits = tmp_path / "resonate-dequeue-waits.sql"
    waits.write_text(text.replace(SKIPS_LOCKED, WAITS))
    stalled = resonate_pg.ResonatePgTarget(postgres.create_database("m_waits", waits))
    with pytest.raises(resonate_pg.TargetError, match="must skip the rows another worker holds"):
        _two_unblocks(stalled)

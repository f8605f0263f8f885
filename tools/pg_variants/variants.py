"""Ten single-bug variants of resonate-pg's resonate.sql, written from a list of plausible mistakes.

Each variant is one exact textual edit of the pinned file: `old` must occur in resonate.sql
exactly once, and is replaced by `new` in a copy (the project never holds resonate.sql itself,
only these snippets). They were written from outside duespec: from the file, the seed
documents and RESEARCH.md, not from duespec's campaigns or tests, so they measure what
examples/resonate-pg/README.md's commands find in a server with one bug more than it ships with.

`why` says what behaviour changes and where a client could see it; `visible` names the
reads that can show it (a response, the state, the messages a worker gets, or only a race
between two sessions), so a miss can be told from an undetectable edit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Variant:
    name: str
    area: str
    old: str
    new: str
    why: str
    visible: str


class VariantError(ValueError):
    """An edit that does not apply: its old text is missing or occurs more than once."""


VARIANTS: tuple[Variant, ...] = (
    Variant(
        name="catchup_skips_to_now",
        area="catch-up",
        old="    s.next_run_at := _next_cron(s.cron, cron_time);\n  END LOOP;",
        new="    s.next_run_at := _next_cron(s.cron, p_now);\n  END LOOP;",
        why="the next occurrence is computed from the firing time instead of the occurrence just "
            "created: after a gap only the first missed occurrence is created and the rest are "
            "skipped (the seed: 'Skipping missed ticks ... violates the spec')",
        visible="response: promise.get of the second missed occurrence is 404; schedule.get's "
                "lastRunAt/nextRunAt after a tick"),
    Variant(
        name="catchup_strict_bound",
        area="catch-up",
        old="  WHILE s.next_run_at <= p_now LOOP",
        new="  WHILE s.next_run_at < p_now LOOP",
        why="off by one at nextRunAt: a timer pass at exactly nextRunAt selects the schedule "
            "(process_schedule_timeouts uses <=) but creates nothing and leaves nextRunAt where "
            "it was, so the occurrence is late until a pass strictly after it",
        visible="response: promise.get of the occurrence after a tick exactly at nextRunAt is 404; "
                "schedule.get's nextRunAt/lastRunAt unchanged"),
    Variant(
        name="catchup_timeout_from_now",
        area="catch-up",
        old="      pid, cron_time + s.promise_timeout,",
        new="      pid, p_now + s.promise_timeout,",
        why="an occurrence's timeout is anchored to when the timer pass ran, not to its cron "
            "time (the seed: 'anchored to when the tick should have fired, not when the handler "
            "ran'): a late occurrence lives longer than promiseTimeout",
        visible="response: promise.get's timeoutAt (and state) of an occurrence created late"),
    Variant(
        name="create_expired_dispatches",
        area="promise creation",
        old="    IF tags ? 'resonate:target' THEN\n"
            "      INSERT INTO tasks (id, state, version) VALUES (p.id, 'fulfilled', 0);\n"
            "    END IF;",
        new="    IF tags ? 'resonate:target' THEN\n"
            "      INSERT INTO tasks (id, state, version, timeout_at)\n"
            "        VALUES (p.id, 'pending', 0, p_now + _retry_timeout());\n"
            "      PERFORM _emit_execute(tags->>'resonate:target', p.id, 0);\n"
            "    END IF;",
        why="the already-expired branch copies the pending branch's task creation: a promise "
            "created past its timeout with a target gets a pending task and an execute message "
            "(the seed: 'an expired-at-creation promise does not dispatch a task')",
        visible="state: the task's state and taskTimeouts; messages: the execute in the outbox; "
                "tick: a retry of that task fires later"),
    Variant(
        name="create_existing_overwrites_param",
        area="promise creation",
        old="  IF FOUND THEN\n"
            "    RETURN jsonb_build_object('status', 200, 'promise', _promise_json(p, p_now));\n"
            "  END IF;\n\n"
            "  IF p_timeout_at > p_now THEN",
        new="  IF FOUND THEN\n"
            "    UPDATE promises SET param_headers = ph, param_data = pd WHERE id = p_id\n"
            "      RETURNING * INTO p;\n"
            "    RETURN jsonb_build_object('status', 200, 'promise', _promise_json(p, p_now));\n"
            "  END IF;\n\n"
            "  IF p_timeout_at > p_now THEN",
        why="an idempotent create of an existing id behaves as an upsert of the param: the "
            "answer (and the stored promise) carry the new request's body instead of the "
            "stored one (S-02/P-02: 'returns the existing promise and does nothing')",
        visible="response: promise.create of an existing id with a different param, and "
                "promise.get after it"),
    Variant(
        name="acquire_accepts_stale_version",
        area="task leases",
        old="  IF t.version IS DISTINCT FROM p_version THEN RETURN jsonb_build_object('status', 409); END IF;\n\n"
            "  DELETE FROM task_resumes WHERE task_id = t.id;\n"
            "  UPDATE tasks SET state = 'acquired'",
        new="  IF p_version > t.version THEN RETURN jsonb_build_object('status', 409); END IF;\n\n"
            "  DELETE FROM task_resumes WHERE task_id = t.id;\n"
            "  UPDATE tasks SET state = 'acquired'",
        why="task.acquire rejects only a version from the future: a worker holding an older "
            "version (its lease lapsed and the task was redispatched) acquires it again",
        visible="response: task.acquire with a version below the task's answers 200, not 409"),
    Variant(
        name="heartbeat_not_renewing",
        area="task leases",
        old="  UPDATE tasks t SET timeout_at = p_now + COALESCE(t.ttl, 0)",
        new="  UPDATE tasks t SET timeout_at = COALESCE(t.timeout_at, p_now + t.ttl)",
        why="the heartbeat keeps an existing lease deadline instead of moving it to now + ttl: "
            "it answers 200 but a lease that is heartbeaten still lapses at its first deadline",
        visible="state: taskTimeouts after task.heartbeat; response: task.get's state after a "
                "tick past the first deadline (pending, where a renewed lease is still acquired)"),
    Variant(
        name="settle_without_lock",
        area="a lock left out",
        old="    RETURN jsonb_build_object('status', 400);\n"
            "  END IF;\n"
            "  PERFORM _lock(p_id);\n"
            "  SELECT * INTO p FROM promises WHERE id = p_id FOR UPDATE;\n"
            "  IF NOT FOUND THEN RETURN jsonb_build_object('status', 404); END IF;\n\n"
            "  IF p.state = 'pending'",
        new="    RETURN jsonb_build_object('status', 400);\n"
            "  END IF;\n"
            "  SELECT * INTO p FROM promises WHERE id = p_id;\n"
            "  IF NOT FOUND THEN RETURN jsonb_build_object('status', 404); END IF;\n\n"
            "  IF p.state = 'pending'",
        why="promise.settle reads the promise with neither its advisory lock nor FOR UPDATE: two "
            "sessions settling one pending promise both see it pending and both settle it (the "
            "second UPDATE waits on the row, then overwrites), so both answer their own value "
            "and the cascade runs twice; one session alone behaves as before",
        visible="only a race: concurrent promise.settle of one id (stress)"),
    Variant(
        name="timeout_overwrites_settle",
        area="promise timeout",
        old="  IF NOT FOUND THEN RETURN; END IF;\n"
            "  IF p.state <> 'pending' THEN RETURN; END IF;\n\n"
            "  st := CASE WHEN p.is_timer",
        new="  IF NOT FOUND THEN RETURN; END IF;\n\n"
            "  st := CASE WHEN p.is_timer",
        why="the promise-timeout transition no longer checks that the promise is still pending: "
            "process_promise_timeouts picks its due ids before locking each, so a settle that "
            "commits in between is overwritten as timed out (and a direct timeout delivery to a "
            "settled promise rewrites it)",
        visible="a race between a settle and a timer pass (stress with ticks), or a timeout "
                "delivered to a settled promise: promise.get's state afterwards"),
    Variant(
        name="settle_overwrites_settled",
        area="settle",
        old="  IF p.state = 'pending' AND p.timeout_at > p_now THEN\n"
            "    UPDATE promises\n"
            "       SET state = p_state",
        new="  IF p.timeout_at > p_now THEN\n"
            "    UPDATE promises\n"
            "       SET state = p_state",
        why="promise.settle forgets that settled is final: settling an already settled promise "
            "(before its timeoutAt) settles it again with the new state and value",
        visible="response: the second promise.settle of one id, and promise.get after it"),
)


def by_name(name: str) -> Variant:
    for variant in VARIANTS:
        if variant.name == name:
            return variant
    raise KeyError(name)


def apply(variant: Variant, source: str) -> str:
    """The source with the variant's edit made, or VariantError if its old text is not there
    exactly once (the pinned file moved: the edit must be rewritten, not guessed)."""
    count = source.count(variant.old)
    if count != 1:
        raise VariantError(f"variant {variant.name}: its old text occurs {count} times in "
                           f"resonate.sql, not once")
    if variant.old == variant.new:
        raise VariantError(f"variant {variant.name}: its edit changes nothing")
    return source.replace(variant.old, variant.new, 1)


def write_variant(variant: Variant, sql: Path, directory: Path) -> Path:
    """Write the variant of `sql` into `directory` (a temporary one; never the original)."""
    out = Path(directory) / f"resonate-{variant.name}.sql"
    if out.resolve() == Path(sql).resolve():
        raise VariantError("refusing to overwrite the original resonate.sql")
    out.write_text(apply(variant, Path(sql).read_text()))
    return out

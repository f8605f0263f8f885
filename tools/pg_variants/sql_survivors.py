"""Mutants of resonate.sql that survived the benchmark, each judged (tools/pg_variants/mutate_sql.py).

Keyed by the mutant's id (tools/pg_variants/sql_mutants.py: operator, function, line, the
snippet before and after), as tools/mutate/equivalent.py keys the survivors of impl/:

- EQUIVALENT: no client of resonate-pg can tell the mutant from the file as shipped, for
  the reason given; left out of the kill rate;
- GAP: a real difference the two commands did not show; the reason says what would show
  it. Counted as a survivor.

Only mutants that were run and survived are here: an entry is a judgment of one
measured survivor, never a guess about a mutant nobody ran.
"""

from __future__ import annotations

EQUIVALENT = "EQUIVALENT"
GAP = "GAP"

#: Why a dropped FOR UPDATE changes nothing where the function has taken the id's advisory lock
#: first: every statement that writes a row of promises or tasks runs in a transaction that
#: holds `_lock` on that row's id (the task_* and promise_* actions and the _on_* timeouts lock
#: their id; _cascade_settle locks each awaiter before _enqueue_resume updates it; task_heartbeat
#: locks every id it renews; promise_create, also reached from a schedule's firing, locks the id
#: it inserts). An xact advisory lock is released only after the holder's commit is visible,
#: and under READ COMMITTED the SELECT's snapshot is taken after the lock is granted: it reads
#: the last committed row, which no one else can change before this transaction ends.
_ADVISORY_LOCK_FIRST = ("the function takes _lock(id) before this SELECT, and every writer of a promises or "
                        "tasks row holds _lock on its id (resonate.sql serialises by advisory lock, not row "
                        "lock), so the row read without FOR UPDATE is the last committed one and cannot change "
                        "before this transaction ends (gc, which deletes without the lock, is run by no "
                        "command): no client can tell")

SURVIVORS: dict[str, tuple[str, str]] = {
    # --sample 6 --seed 1 (docs/mutation.md, section 3)
    "for-update _on_task_retry_timeout:909 id = p_id FOR UPDATE; -> id = p_id;":
        (EQUIVALENT, _ADVISORY_LOCK_FIRST),
    "drop-statement task_create:589 DELETE FROM task_resumes WHERE task_id = t.id; -> (dropped)":
        (GAP, "task.create re-acquiring a pending task keeps the resumes it buffered: after task.create t, "
              "promise.create a (resonate:external), task.suspend t on a, promise.settle a, a second "
              "task.create of t answers task.resumes 1 where the spec's acquire clears them (T-02: 0), and "
              "task.get says 1 after; checked by hand on both files. Neither response-only campaign reaches "
              "a task.create of a pending task holding a resume (--examples 20, and --examples 100: exit 0 in "
              "259 s); a campaign story that resumes a task and then re-creates it would show it"),
    # --sample 6 --seed 2 (docs/mutation.md, section 3)
    "for-update promise_settle:458 id = p_id FOR UPDATE; -> id = p_id;":
        (EQUIVALENT, _ADVISORY_LOCK_FIRST),
    "order-by process_task_timeouts:979 timeout_at, id LOOP -> timeout_at, id DESC LOOP":
        (EQUIVALENT, "only the order in which tasks due at the same instant time out changes: each "
                     "_on_task_*_timeout touches its own task row and its own outbox key (the task id), so "
                     "the only trace is the order of different tasks' execute messages, which the protocol "
                     "leaves free (docs/operations.md: any order between transitions); the adapter's `fired` "
                     "is read from the tables, and a deadlock with a heartbeat, possible in either order, is "
                     "retried by process_timeouts and resonate_rpc alike"),
    "cmp _cascade_settle:275 task_id = p.id; -> task_id <> p.id;":
        (GAP, "a settle deletes every other task's waiting execute message and keeps its own: with "
              "promise.create t1 and t2 (resonate:target poll://any@w) then promise.settle t2, "
              "dequeue_execute gives t1 on the shipped file and t2 on the mutant (checked by hand). The "
              "response-only campaign drains every address after each step, so a settle finds only its own "
              "step's messages: a messages check that lets them wait a step, the state campaign (which "
              "observes the outbox undrained), or one tick timing out two promises after the first resumed "
              "a task would show it"),
    "off-by-one _next_cron:339 _cron_field(f[3], 1, 31); -> _cron_field(f[3], 0, 31);":
        (GAP, "a day-of-month step counts from day 0: `0 0 */10 * *` from 1970-01-05 next fires on the "
              "10th, not the 11th (checked by hand: _next_cron on both files), so schedule.create answers "
              "another nextRunAt. Only a step from `*` reads the bound (`*`, values, ranges and lists expand "
              "alike: there is no day 0); cron_expressions draws `*/10` for that field, yet the 20-example "
              "campaign showed no difference: more examples, or a day-of-month step among the hand-picked "
              "CRONS, would show it"),
}

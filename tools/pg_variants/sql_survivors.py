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

#: Why dropping a task action's advisory lock changes nothing where its next statement locks the task row:
#: that row lock, not the advisory one, orders the action with every other writer. Each writer of a tasks row
#: or of its task_resumes takes the row lock before writing (SELECT ... FOR UPDATE or UPDATE first,
#: _enqueue_resume included), and a promise's state changes only in a transaction that then updates its
#: task's row (the settlement cascade), so such a change commits before the row lock is granted (and is read
#: by the action's later statements) or after the action commits. The action waits only at that first lock,
#: holding none, so it is in no deadlock either way.
_ROW_LOCK_SUFFICES = ("the function's next statement takes the task's row FOR UPDATE, and that row lock orders it "
                      "with every other writer: each writer of a tasks row or of its task_resumes takes the row "
                      "lock before writing (_enqueue_resume included), and a promise's state changes only in a "
                      "transaction that then updates its task's row (the settlement cascade), so such a change "
                      "commits before the lock is granted, and is read after it, or after this call commits. The "
                      "function reads nothing else another call could change, and waits only at that first lock, "
                      "holding none, so it is in no deadlock either way: no client can tell")

#: What a changed lock order (or a lock taken or left out) leaves of itself when every answer is the file's:
#: which interleavings deadlock. resonate_rpc and process_timeouts retry a deadlocked call from the start
#: with its writes undone, so the only trace is what a rolled-back attempt sent outside the database.
_DEADLOCK_TRACE = ("Every deadlocked call is retried from the start by resonate_rpc or process_timeouts with its "
                   "writes undone (an advisory xact lock is released at ROLLBACK TO SAVEPOINT, checked by hand), "
                   "so answers, state and polled messages are those of a serial order either way; what a rolled-"
                   "back attempt sent outside the database is not undone: with pgsql-http installed (a supported "
                   "dispatch, synchronous in the outbox trigger) a settle's unblock to an http(s) listener, pushed "
                   "before the deadlock, is pushed again by the retry. Neither command installs pgsql-http, "
                   "listens at an http address or forces the interleaving. A GAP only by that push: read a "
                   "retried deadlock as invisible, as the process_task_timeouts order entry does, and it is "
                   "EQUIVALENT")

SURVIVORS: dict[str, tuple[str, str]] = {
    # --sample 6 --seed 1 (docs/mutation.md, section 3)
    "for-update _on_task_retry_timeout:909 id = p_id FOR UPDATE; -> id = p_id;":
        (EQUIVALENT, _ADVISORY_LOCK_FIRST),
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
    # --sample 40 --seed 1 (make pg-mutation): 23 survivors, judged by reading resonate.sql; "shown by
    # hand" is a run of both files on a throwaway PostgreSQL through examples/resonate-pg/target.py
    "lock _cascade_settle:290 PERFORM _lock(awaiter_id) FROM callbacks ... -> (dropped)":
        (GAP, "_enqueue_resume's SELECT ... FOR UPDATE of the awaiter's task row then orders the resume with "
              "every writer of that row and its task_resumes (each takes the row lock first), and nothing "
              "else the resume writes is read under the advisory lock alone, so every answer is the file's; "
              "which interleavings deadlock changes: shown by hand, promise.settle w (a listener, awaiter k's "
              "callback) paused in its cascade beside task.suspend k on [w] deadlocks in the file (the settle "
              "holds w and waits for k, the suspend holds k and waits for w) and not in the mutant (it needs "
              "only k's row, not yet locked); a heartbeat locking rows in another order than the cascade can "
              "deadlock with it only in the mutant. " + _DEADLOCK_TRACE),
    "off-by-one process_promise_timeouts:963 := 0; -> := 1;":
        (EQUIVALENT, "cnt only counts the promise timeouts a pass selected: the loop never reads it, and "
                     "process_timeouts returns the sum to its caller alone, pg_cron (which discards it) or the "
                     "adapter's tick (which uses it as an upper bound on what the pass fired, one more never "
                     "trips it, and stops on a pass that fired nothing, not on the count); no protocol call "
                     "returns it (section 11 grants resonate_worker neither function): arithmetic on a value "
                     "no client sees"),
    "lock task_acquire:606 PERFORM _lock(p_id); -> (dropped)":
        (EQUIVALENT, _ROW_LOCK_SUFFICES),
    "off-by-one _promise_json_raw:199 _promise_json(p, -1) $$; -> _promise_json(p, -2) $$;":
        (GAP, "the projection of task.create's and task.fulfill's promise differs only for a pending promise "
              "due at -1, which only a request at a negative now can store: task.create {action: {id t, "
              "timeoutAt -1, resonate:target}} at now -3 answers the promise rejected_timedout (settledAt -1) "
              "in the file and pending in the mutant (shown by hand). The spec refuses a negative now (400, "
              "X-04; F-2, a known class the campaign does not send again), so no comparison with the spec "
              "can tell the two files apart: only a check of resonate-pg against itself (the file's answers "
              "to refused requests) would"),
    "for-update _on_task_lease_timeout:926 id = p_id FOR UPDATE; -> id = p_id;":
        (EQUIVALENT, _ADVISORY_LOCK_FIRST),
    "off-by-one _next_cron:341 0, 6); -> 0, 7);":
        (EQUIVALENT, "the day-of-week bound is read only by an item stepping from `*` or from a value (`*/s`, "
                     "`a/s`), whose values up to 6 are the file's; the only value it can add is 7, which "
                     "extract(dow) (0 to 6) never equals, so every cron matches the same days and every "
                     "nextRunAt (schedule.create, the catch-up) is the file's, and no cron fails or passes "
                     "differently (checked by hand: `*/1` to `*/8`, `5/1`, `1/3`, `6/7`, `0-6/2`, `*,3`, `7`, "
                     "`6-7`, and with a day of the month)"),
    "order-by task_suspend:702 BY lid; -> BY lid DESC;":
        (GAP, "only the order in which task.suspend takes its advisory locks changes, so only which "
              "interleavings deadlock: shown by hand, promise.settle b (a listener, awaiter z's callback) "
              "paused in its cascade beside task.suspend z on [b]: the mutant locks z and then waits for b, "
              "and deadlocks with the settle, which waits for z (one deadlock; the answers, 200 and 300, are "
              "the file's); the file waits for b first, holding nothing (no deadlock). " + _DEADLOCK_TRACE),
    "order-by _cascade_settle:291 awaited_id, awaiter_id; -> awaited_id, awaiter_id DESC;":
        (GAP, "only the order in which a settlement locks its awaiters changes (its loop still resumes them "
              "in ascending order): shown by hand, promise.settle a (awaiters t1, t2) beside task.heartbeat "
              "[t1, t2], which locks in ascending order: the mutant deadlocks (one deadlock; both answer 200, "
              "as in the file), the file does not. " + _DEADLOCK_TRACE),
    "off-by-one _cron_field:307 part) > 0 THEN -> part) > 1 THEN":
        (EQUIVALENT, "only an item beginning with '/' (the slash at position 1) is read otherwise: the file "
                     "takes its range as '' and the mutant the whole item ('/5'), neither a number, so both "
                     "raise in _cron_field before any search and schedule_create's handler answers 400 alike "
                     "(checked by hand: `/5` in each field, `/`, `/-5`, `*,/5`); _next_cron is reached "
                     "elsewhere only with a cron schedule_create took"),
    "drop-statement _cascade_settle:286 DELETE FROM callbacks ... -> (dropped)":
        (GAP, "a settled awaiter keeps its callbacks on pending promises (the Lean's settlement scrub removes "
              "them): task.create w, promise.create a (resonate:timer), register_callback(a, w), task.fulfill "
              "w: the callbacks table holds (a, w) in the mutant and nothing in the file (shown by hand, "
              "observe's $.promises[].callbacks). No protocol read returns callbacks, and when a settles, "
              "_enqueue_resume finds w's task fulfilled (for good) and does nothing, so answers do not "
              "change; duespec's state campaign would show the row, but every state-campaign run against "
              "resonate-pg ends in its opening (F-1). The settlement of a also locks the finished awaiter: "
              "shown by hand, promise.settle z beside promise.register_callback(z, p) for a fulfilled p "
              "deadlocks in the mutant only. " + _DEADLOCK_TRACE),
    "off-by-one resonate_rpc:1064 clock_timestamp()) * 1000)::bigint); -> clock_timestamp()) * 1001)::bigint);":
        (GAP, "a request without resonate:debug_time, as every SDK request is, runs at the wall clock plus a "
              "thousandth of the epoch (about 20 days): promise.create {id p, timeoutAt: wall clock + 1 h, "
              "tags {}} answers pending, createdAt the wall clock, in the file, and rejected_timedout with "
              "createdAt = timeoutAt in the mutant (shown by hand). duespec pins now on every request; the "
              "one without it (a null now, F-2) is refused by the spec, a known class not sent again, and "
              "answered at a clock that differs from run to run: a check that a request without "
              "resonate:debug_time is served at the database's clock (createdAt within a second of it) "
              "would show it"),
    "lock task_halt:793 PERFORM _lock(p_id); -> (dropped)":
        (EQUIVALENT, _ROW_LOCK_SUFFICES),
    "for-update task_halt:794 id = p_id FOR UPDATE; -> id = p_id;":
        (EQUIVALENT, _ADVISORY_LOCK_FIRST),
}

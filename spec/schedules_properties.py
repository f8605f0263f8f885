"""Resonate schedules' properties (spec/schedules.md SP-01..SP-17) as plain predicates.

They speak only the JSON of docs/operations.md: a state invariant takes one observable
state; a transition property takes the states before and after one step, the step
`{"op", "args", "now", "result"}` and the profile. They use the spec's two opaque
functions, nextCron (X-01) and expand (X-02), and nothing of the handlers, so they judge
the model as independently as they judge any target.
"""

from __future__ import annotations

from typing import Any, Callable

from duespec.coverage import reached
from duespec.model.schedules.clock import next_run
from duespec.model.schedules.expand import expand

State = dict[str, Any]
Step = dict[str, Any]

READ_ONLY_OPS = frozenset({"schedule.get", "schedule.search", "promise.get", "promise.search", "task.get",
                           "task.search"})


def _by_id(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in records}


def occurrences(schedule: dict[str, Any], now: int, profile: str = "lean", catch_up: str = "all") -> list[int]:
    """The cronTimes a firing at `now` creates: nextRunAt and every following tick up to now;
    under `deployed` (DEP-02) and the catch-up policies one-per-pass and once-skip only the
    earliest of them; under never none."""
    due, t = [], schedule["nextRunAt"]
    while t <= now and catch_up != "never":
        due.append(t)
        if profile == "deployed" or catch_up in ("one-per-pass", "once-skip"):
            break
        t = next_run(schedule["cron"], t)
    return due


def next_run_after_firing(schedule: dict[str, Any], ticks: list[int], now: int, catch_up: str) -> int:
    """A fired schedule's nextRunAt: the tick after the last one fired, or under once-skip
    the first tick after the firing time; unchanged when none fired."""
    if not ticks:
        return schedule["nextRunAt"]
    return next_run(schedule["cron"], now if catch_up == "once-skip" else ticks[-1])


#: Tags the deployed server adds to an occurrence's promise (DEP-03), each the promise's id.
DEPLOYED_LINEAGE_TAGS = ("resonate:origin", "resonate:branch", "resonate:parent", "resonate:prefix")


def occurrence_tags(schedule: dict[str, Any], promise_id: str, profile: str) -> dict[str, str]:
    if profile != "deployed":
        return schedule["promiseTags"]
    return {**schedule["promiseTags"], "resonate:schedule": schedule["id"],
            **dict.fromkeys(DEPLOYED_LINEAGE_TAGS, promise_id)}


def fired_schedules(step: Step) -> list[str]:
    """Ids whose onScheduleTimeout this step ran, in firing order."""
    if step["result"].get("status") != 200:
        return []
    if step["op"] == "schedule.timeout":
        return [step["args"]["id"]]
    if step["op"] == "tick":
        return [f["id"] for f in step["result"]["fired"] if f["kind"] == "schedule"]
    return []


# --- state invariants -------------------------------------------------------------------


def every_schedule_armed_at_next_run(state: State) -> bool:
    """SP-11: exactly one schedule timeout per schedule, at its nextRunAt; none for a gone one."""
    reached("SP-11.state")
    armed = {t["id"]: t["timeout"] for t in state["scheduleTimeouts"]}
    return armed == {s["id"]: s["nextRunAt"] for s in state["schedules"]}


def last_run_precedes_next_run(state: State) -> bool:
    """SP-12: a schedule's last fired tick is strictly before its next one."""
    reached("SP-12.state")
    return all(s["lastRunAt"] is None or s["lastRunAt"] < s["nextRunAt"] for s in state["schedules"])


# --- transition properties --------------------------------------------------------------


def rejected_request_changes_nothing(before: State, step: Step, after: State, profile: str) -> bool:
    """SP-09: a 400 (checked before any lookup) leaves the whole state as it was."""
    if step["result"].get("status") != 400:
        return True
    reached("SP-09.rejected")
    return before == after


def reads_change_nothing(before: State, step: Step, after: State, profile: str) -> bool:
    """SP-10: get, search and promise.get (projection included) never write."""
    if step["op"] not in READ_ONLY_OPS:
        return True
    reached("SP-10.read")
    return before == after


def create_is_idempotent(before: State, step: Step, after: State, profile: str) -> bool:
    """SP-03: creating an existing id answers the stored schedule, ignores the body, writes nothing."""
    if step["op"] != "schedule.create" or step["result"].get("status") != 200:
        return True
    stored = _by_id(before["schedules"]).get(step["args"]["id"])
    if stored is None:
        return True
    reached("SP-03.duplicate")
    return step["result"]["schedule"] == stored and before == after


def create_arms_first_tick(before: State, step: Step, after: State, profile: str) -> bool:
    """SP-03: a new schedule is the request at createdAt = now, armed at nextCron(cron, now)."""
    if step["op"] != "schedule.create" or step["result"].get("status") != 200:
        return True
    args, now = step["args"], step["now"]
    if args["id"] in _by_id(before["schedules"]):
        return True
    expected = {"id": args["id"], "cron": args["cron"], "promiseId": args["promiseId"],
                "promiseTimeout": args["promiseTimeout"], "promiseParam": args["promiseParam"],
                "promiseTags": args["promiseTags"], "nextRunAt": next_run(args["cron"], now),
                "lastRunAt": None, "createdAt": now}
    reached("SP-03.new")
    armed = {"id": args["id"], "timeout": expected["nextRunAt"]}
    return step["result"]["schedule"] == expected and after == {
        **before,
        "schedules": sorted(before["schedules"] + [expected], key=lambda s: s["id"]),
        "scheduleTimeouts": sorted(before["scheduleTimeouts"] + [armed], key=lambda t: t["id"]),
    }


def delete_disarms(before: State, step: Step, after: State, profile: str) -> bool:
    """SP-04: delete removes the schedule and its timeout together and touches nothing else."""
    if step["op"] != "schedule.delete" or step["result"].get("status") not in (200, 404):
        return True
    id = step["args"]["id"]
    reached("SP-04.delete")
    if step["result"]["status"] == 404:
        return id not in _by_id(before["schedules"]) and before == after
    return after == {**before,
                     "schedules": [s for s in before["schedules"] if s["id"] != id],
                     "scheduleTimeouts": [t for t in before["scheduleTimeouts"] if t["id"] != id]}


def firing_a_missing_schedule_changes_nothing(before: State, step: Step, after: State, profile: str) -> bool:
    """SP-05: the timeout of a deleted (or never created) schedule is a no-op."""
    if step["op"] != "schedule.timeout" or step["result"].get("status") != 200:
        return True
    if step["args"]["id"] in _by_id(before["schedules"]):
        return True
    reached("SP-05.missing_schedule_fired")
    return before == after


def refiring_a_fired_tick_changes_nothing(before: State, step: Step, after: State, profile: str) -> bool:
    """SP-07: firing a schedule with no tick due (its tick already fired) changes nothing."""
    if step["op"] != "schedule.timeout" or step["result"].get("status") != 200:
        return True
    s = _by_id(before["schedules"]).get(step["args"]["id"])
    if s is None or s["nextRunAt"] <= step["now"]:
        return True
    reached("SP-07.refired")
    return before == after


def catch_up_is_chronological(before: State, step: Step, after: State, profile: str, *,
                              catch_up: str = "all") -> bool:
    """SP-01: a firing creates one promise per missed tick, each at its own cronTime, none skipped
    or repeated, and leaves lastRunAt on the last tick and nextRunAt on the first one after now.

    Each tick's promise must exist afterwards; a tick whose id was new is created from the
    schedule with timeoutAt = cronTime + promiseTimeout and createdAt = the `now` the tick
    was created at (cronTime under `lean`, the firing time under `server`), or timeoutAt if
    it was born expired; under `deployed` only the earliest owed tick fires, created at its
    cronTime with the deployed server's lineage tags. No promise appears that is not one of
    the fired ticks. Under another catch-up policy, the ticks that policy fires."""
    now = step["now"]
    schedules_before = _by_id(before["schedules"])
    schedules_after = _by_id(after["schedules"])
    promises_before = _by_id(before["promises"])
    promises_after = _by_id(after["promises"])
    owed: dict[str, dict[str, Any]] = {}
    for id in fired_schedules(step):
        s = schedules_before.get(id)
        if s is None:
            continue
        ticks = occurrences(s, now, profile, catch_up)
        reached("SP-01.fired")
        fired = schedules_after.get(id)
        expected_last = ticks[-1] if ticks else s["lastRunAt"]
        expected_next = next_run_after_firing(s, ticks, now, catch_up)
        if fired != {**s, "lastRunAt": expected_last, "nextRunAt": expected_next}:
            return False
        for cron_time in ticks:
            promise_id = expand(s["promiseId"], s["id"], cron_time)
            created_at = cron_time if profile == "lean" else now
            timeout_at = cron_time + s["promiseTimeout"]
            owed.setdefault(promise_id, {
                "param": s["promiseParam"], "tags": occurrence_tags(s, promise_id, profile),
                "timeoutAt": timeout_at,
                # deployed (DEP-03): created at the cronTime, expired or not
                "createdAt": cron_time if profile == "deployed"
                else created_at if timeout_at > created_at else timeout_at})
    for promise_id, fields in owed.items():
        p = promises_after.get(promise_id)
        if p is None:
            return False
        if promise_id not in promises_before and any(p[k] != v for k, v in fields.items()):
            return False
    if step["op"] in ("schedule.timeout", "tick"):
        new = set(promises_after) - set(promises_before)
        return new <= set(owed)
    return True


def firing_leaves_nothing_due(before: State, step: Step, after: State, profile: str, *,
                              catch_up: str = "all") -> bool:
    """SP-02: after a tick nothing is due: every schedule's nextRunAt and promise timeout > now.
    Under `deployed` (DEP-02) and the catch-up policies one-per-pass and never
    a pass fires each schedule once and may leave it due, so only promise timeouts."""
    if step["op"] != "tick" or step["result"].get("status") != 200:
        return True
    now = step["now"]
    reached("SP-02.tick")
    if profile == "deployed" or catch_up in ("one-per-pass", "never"):
        return all(t["timeout"] > now for t in after["promiseTimeouts"])
    return (all(t["timeout"] > now for t in after["scheduleTimeouts"])
            and all(t["timeout"] > now for t in after["promiseTimeouts"])
            and all(s["nextRunAt"] > now for s in after["schedules"]))


def occurrence_ids_unique(before: State, step: Step, after: State, profile: str, *,
                          catch_up: str = "all") -> bool:
    """SP-06: one schedule's ticks fired by a step get pairwise distinct promise ids."""
    for id in fired_schedules(step):
        s = _by_id(before["schedules"]).get(id)
        if s is None:
            continue
        ticks = occurrences(s, step["now"], profile, catch_up)
        reached("SP-06.fired")
        if len({expand(s["promiseId"], s["id"], t) for t in ticks}) != len(ticks):
            return False
    return True


def expired_at_creation_dispatches_nothing(before: State, step: Step, after: State, profile: str) -> bool:
    """SP-08: a promise born past its timeout (createdAt = timeoutAt; a promise born pending has
    createdAt < timeoutAt) is settled at its timeout, and dispatches no task: its task, if
    any, is fulfilled, with no retry timeout and no execute message."""
    promises_before = _by_id(before["promises"])
    tasks_after = _by_id(after["tasks"])
    timed_tasks = {t["id"] for t in after["taskTimeouts"]}
    messages = {e["message"]["taskId"] for e in after["outbox"] if e["message"]["kind"] == "execute"}
    for p in after["promises"]:
        if p["id"] in promises_before or p["createdAt"] != p["timeoutAt"]:
            continue
        reached("SP-08.expired_at_creation")
        timer = p["tags"].get("resonate:timer") == "true"
        if p["state"] != ("resolved" if timer else "rejected_timedout") or p["settledAt"] != p["timeoutAt"]:
            return False
        task = tasks_after.get(p["id"])
        if task is not None and task["state"] != "fulfilled":
            return False
        if p["id"] in timed_tasks or p["id"] in messages:
            return False
    return True


# --- promises and tasks (SP-13..SP-17) ---------------------------------------------------

FENCED_OPS = frozenset({"task.fence", "task.suspend", "task.fulfill", "task.release"})
ACQUIRING_OPS = frozenset({"task.acquire", "task.create"})


def _live(p: dict[str, Any] | None, now: int) -> bool:
    return p is not None and p["state"] == "pending" and p["timeoutAt"] > now


def settled_promise_never_changes(before: State, step: Step, after: State, profile: str) -> bool:
    """SP-13: a settled promise never changes again (state, value, settledAt, registrations)."""
    promises_after = _by_id(after["promises"])
    for p in before["promises"]:
        if p["state"] != "pending":
            reached("SP-13.settled_kept")
            if promises_after.get(p["id"]) != p:
                return False
    return True


def one_holder_per_version(before: State, step: Step, after: State, profile: str) -> bool:
    """SP-14: fencing. A task's version only grows, and only by an acquisition (task.acquire or
    task.create answering 200), by exactly one, to a single holder; a holder keeps its
    version until it lets go; a fenced op (fence, suspend, fulfill, release) succeeds only
    for the current version of an acquired task whose promise is live; a heartbeat renews
    only the leases of tasks the caller holds at the versions it names."""
    tasks_before, promises_before = _by_id(before["tasks"]), _by_id(before["promises"])
    status, op = step["result"].get("status"), step["op"]
    for t in after["tasks"]:
        old = tasks_before.get(t["id"])
        if old is None:
            if t["version"] != (1 if t["state"] == "acquired" else 0):
                return False
            continue
        if t["version"] == old["version"]:
            if t["state"] == "acquired" and old["state"] == "acquired" and t["pid"] != old["pid"]:
                return False
            if t["state"] == "acquired" and old["state"] != "acquired":
                return False  # acquired without a new version: two holders of one version
            continue
        reached("SP-14.acquired")
        if not (t["version"] == old["version"] + 1 and t["state"] == "acquired"
                and op in ACQUIRING_OPS and status == 200):
            return False
    if op in FENCED_OPS and status in (200, 300):
        reached("SP-14.fenced")
        held = tasks_before.get(step["args"]["id"])
        if held is None or held["state"] != "acquired" or held["version"] != step["args"]["version"] \
                or not _live(promises_before.get(held["id"]), step["now"]):
            return False
    if op == "task.heartbeat" and status == 200:
        leases_before = {t["id"]: t["timeout"] for t in before["taskTimeouts"] if t["kind"] == 1}
        named = {(ref["id"], ref["version"]) for ref in step["args"]["tasks"]}
        for lease in after["taskTimeouts"]:
            if lease["kind"] == 1 and leases_before.get(lease["id"]) != lease["timeout"]:
                reached("SP-14.renewed")
                held = tasks_before.get(lease["id"])
                if held is None or held["pid"] != step["args"]["pid"] or (held["id"], held["version"]) not in named:
                    return False
    return True


def fulfilled_task_never_returns(before: State, step: Step, after: State, profile: str) -> bool:
    """SP-15: a fulfilled task stays exactly as it is: never pending, acquired or resumed again."""
    tasks_after = _by_id(after["tasks"])
    for t in before["tasks"]:
        if t["state"] == "fulfilled":
            reached("SP-15.fulfilled_kept")
            if tasks_after.get(t["id"]) != t:
                return False
    return True


def every_callback_resumed_once(before: State, step: Step, after: State, profile: str) -> bool:
    """SP-16: when a promise settles, each callback's task is resumed exactly once (its
    resumes name the promise once, and a suspended one is suspended no more) unless it is
    done, each listener gets one unblock carrying the settled record, and nothing is left
    registered: not on the promise, not in any pending promise's callbacks."""
    promises_after, tasks_after = _by_id(after["promises"]), _by_id(after["tasks"])
    tasks_before = _by_id(before["tasks"])
    outbox = {(e["address"], e["message"]["promise"]["id"]): e["message"]["promise"]
              for e in after["outbox"] if e["message"]["kind"] == "unblock"}
    for p in before["promises"]:
        settled = promises_after.get(p["id"])
        if p["state"] != "pending" or settled is None or settled["state"] == "pending":
            continue
        if settled["callbacks"] or settled["listeners"]:
            return False
        if any(p["id"] in q["callbacks"] for q in after["promises"] if q["state"] == "pending"):
            return False
        for awaiter in p["callbacks"]:
            reached("SP-16.callback")
            t = tasks_after.get(awaiter)
            if t is None or t["state"] == "fulfilled":
                continue
            old = tasks_before.get(awaiter)
            if t["resumes"].count(p["id"]) != 1 or (old is not None and old["state"] == "suspended"
                                                     and t["state"] == "suspended"):
                return False
        for address in p["listeners"]:
            reached("SP-16.listener")
            record = {k: v for k, v in settled.items() if k not in ("callbacks", "listeners")}
            if outbox.get((address, p["id"])) != record:
                return False
    return True


def task_timeouts_match_task_state(state: State) -> bool:
    """SP-17: a pending task has exactly one timeout, its retry; an acquired one exactly one,
    its lease; a suspended, halted or fulfilled task none; no timeout without a task."""
    reached("SP-17.state")
    kinds: dict[str, list[int]] = {}
    for t in state["taskTimeouts"]:
        kinds.setdefault(t["id"], []).append(t["kind"])
    expected = {t["id"]: {"pending": [0], "acquired": [1]}.get(t["state"], []) for t in state["tasks"]}
    return all(kinds.get(id, []) == want for id, want in expected.items()) and set(kinds) <= set(expected)


StateInvariant = Callable[[State], bool]
TransitionProperty = Callable[[State, Step, State, str], bool]

STATE_INVARIANTS: tuple[StateInvariant, ...] = (
    every_schedule_armed_at_next_run,
    last_run_precedes_next_run,
    task_timeouts_match_task_state,
)
TRANSITION_PROPERTIES: tuple[TransitionProperty, ...] = (
    catch_up_is_chronological,
    firing_leaves_nothing_due,
    create_is_idempotent,
    create_arms_first_tick,
    delete_disarms,
    firing_a_missing_schedule_changes_nothing,
    occurrence_ids_unique,
    refiring_a_fired_tick_changes_nothing,
    expired_at_creation_dispatches_nothing,
    rejected_request_changes_nothing,
    reads_change_nothing,
    settled_promise_never_changes,
    one_holder_per_version,
    fulfilled_task_never_returns,
    every_callback_resumed_once,
)
#: The transition properties whose expectation depends on the catch-up policy (spec/schedules.md,
#: "Catch-up policies"):
#: each takes it as the keyword `catch_up`.
CATCH_UP_PROPERTIES = frozenset({catch_up_is_chronological, firing_leaves_nothing_due, occurrence_ids_unique})

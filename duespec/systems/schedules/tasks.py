"""Promises and tasks in the schedules machine (P-03..P-06, T-01..T-11): settle,
callbacks, listeners, the task state machine.

A mixin of SchedulesMachine (machine.py): its methods use the machine's state and steps
(`act`, `state`, `now`, `move_clock`). Hypothesis collects a machine's rules by name over
its whole class hierarchy, so a rule here is drawn exactly as if written in the machine."""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import rule

from duespec.model.schedules.state import LEASE, RETRY
from duespec.systems.schedules.adapter import DAY, HOUR, MINUTE
from duespec.systems.schedules.ops import (
    AWAITED_ID,
    ODD_TASK_REQUESTS,
    PARAMS,
    PIDS,
    SETTLE_STATES,
    TARGET,
    TASK_IDS,
    TASK_STORIES,
    TTLS,
)
from duespec.targets.interface import Json

#: A listener's address as a worker group's (an SDK's `poll://group@id`): any non-empty
#: string is one to the Lean, and servers that check addresses (resonate-pg) take this one.
LISTENER = "poll://any@listeners"


class PromisesAndTasks:
    """Targets are drawn from the oracle's state most of the time (the current holder at
    its version, a pending promise, a suspended task's awaited) so that runs reach a lease
    lapsing, a suspension resumed by a settle or a timeout, and listeners unblocked; a stale
    version, another worker or a name from the pool the rest."""

    @rule(pick=st.integers(0, 9))
    def settle_overdue(self, pick: int) -> None:
        """A settle of a promise still pending a moment past its timeout (read as timed out),
        then a listener on it (already settled, P-05). Half of them have a task, read first
        (projected as fulfilled, T-01): no timeout has fired, so the stored task is still
        pending. Those also meet, exactly at the timeout's instant, a task held by a worker
        whose promise times out then too (its heartbeat renews nothing, T-05) and a promise
        live a minute on: a callback between either of those and a promise at its timeoutAt
        is not kept (P-04). The live one awaits itself, so its settle resumes a task that
        settle has just fulfilled (R-00)."""
        id, with_task = f"{AWAITED_ID}.overdue.{pick}", pick % 2 == 1
        held, live = f"{id}.held", f"{id}.live"
        self.act("promise.create", {"id": id, "timeoutAt": self.now + 1, "param": PARAMS[0],
                                    "tags": TARGET if with_task else {}})
        if with_task:
            self.act("task.create", {"pid": PIDS[0], "ttl": MINUTE, "action": {
                "id": held, "timeoutAt": self.now + 1, "param": PARAMS[0], "tags": TARGET}})
            self.act("promise.create", {"id": live, "timeoutAt": self.now + MINUTE, "param": PARAMS[0],
                                        "tags": TARGET})
            self.act("promise.register_callback", {"awaited": live, "awaiter": live})
        self.move_clock(self.now + 1)
        if with_task:
            version = next((t["version"] for t in self.tasks() if t["id"] == held), 1)
            self.act("task.heartbeat", {"pid": PIDS[0], "tasks": [{"id": held, "version": version}]})
            self.act("promise.register_callback", {"awaited": id, "awaiter": live})
            self.act("promise.register_callback", {"awaited": live, "awaiter": held})
            # what these change shows only in the state: compare it before the settle below
            self.invariants_hold()
            self.act("task.get", {"id": id})
        self.act("promise.settle", {"id": id, "state": "resolved", "value": PARAMS[1]})
        self.act("promise.register_listener", {"awaited": id, "address": LISTENER})
        if with_task:
            self.act("promise.settle", {"id": live, "state": "resolved", "value": PARAMS[1]})

    def tasks(self, *states: str) -> list[dict[str, Json]]:
        return [t for t in self.state["tasks"] if not states or t["state"] in states]

    def live(self, id: str) -> bool:
        return any(p["id"] == id and p["state"] == "pending" and p["timeoutAt"] > self.now
                   for p in self.state["promises"])

    def pick_promise(self, pick: int, fallback: str, pending: bool = False) -> str:
        """A stored promise (a pending one before its timeout if asked), else `fallback`."""
        promises = [p["id"] for p in self.state["promises"] if not pending or self.live(p["id"])]
        return promises[pick % len(promises)] if promises and pick % 8 else fallback

    def pick_task(self, pick: int, *states: str) -> dict[str, Json]:
        """A task in one of `states`, mostly one whose promise is live, else any task; one
        pick in eight a name from the pool."""
        live = [t for t in self.tasks(*states) if self.live(t["id"])] if pick % 4 else []
        tasks = live or self.tasks(*states) or self.tasks()
        if tasks and pick % 8:
            return tasks[pick % len(tasks)]
        return {"id": TASK_IDS[pick % len(TASK_IDS)], "version": 0, "pid": None}

    def some_work_to_start_with(self, work: str, ttl: int) -> None:
        """Most runs start with a task to work on: a targeted promise's pending task, one
        already acquired by task.create, or both; the rules then take them through their
        states (a run of 50 steps that must first stumble on a task rarely gets far). A
        campaign that leaves out promise.create or task.create starts without that work."""
        if work in ("promise", "both") and "promise.create" not in self.excluded_ops:
            self.act("promise.create", {"id": TASK_IDS[2], "timeoutAt": self.now + DAY, "param": PARAMS[0],
                                        "tags": TARGET})
        if work in ("task", "both") and "task.create" not in self.excluded_ops:
            self.act("task.create", {"pid": PIDS[0], "ttl": ttl, "action": {
                "id": TASK_IDS[0], "timeoutAt": self.now + DAY, "param": PARAMS[0], "tags": TARGET}})

    @rule(op=st.sampled_from(("task.create", "task.create", "task.acquire", "task.acquire",
                              "task.heartbeat", "task.release", "task.halt", "task.continue", "task.get")),
          pick=st.integers(0, 30), other=st.integers(0, 30), off=st.sampled_from((0, 0, 0, -1, 1)),
          pid=st.sampled_from(PIDS), ttl=st.sampled_from(TTLS), timeout=st.sampled_from((0, MINUTE, DAY)),
          tags=st.sampled_from(({}, TARGET, TARGET, {**TARGET, "resonate:timer": "true"})),
          stranger=st.booleans())
    def task_lifecycle(self, op: str, pick: int, other: int, off: int, pid: str, ttl: int, timeout: int,
                       tags: Json, stranger: bool) -> None:
        """Create, acquire (mostly a pending task at its version), heartbeat (mostly the
        holder), release, halt, continue, get."""
        if op == "task.create":
            self.act(op, {"pid": pid, "ttl": ttl, "action": {
                "id": self.pick_promise(pick, TASK_IDS[pick % len(TASK_IDS)]) if stranger else
                TASK_IDS[pick % len(TASK_IDS)], "timeoutAt": max(self.now + timeout, 0),
                "param": PARAMS[0], "tags": tags}})
        elif op == "task.acquire":
            t = self.pick_task(pick, "pending")
            self.act(op, {"id": t["id"], "version": max(t["version"] + off, 0), "pid": pid, "ttl": ttl})
        elif op == "task.heartbeat":
            t = self.holder(pick)
            refs = [{"id": t["id"], "version": max(t["version"] + min(off, 0), 0)}]
            if other % 3 == 0:
                extra = self.pick_task(other)
                refs.append({"id": extra["id"], "version": extra["version"]})
            holder = t.get("pid")
            self.act(op, {"pid": pid if stranger or holder is None else holder, "tasks": refs})
        elif op == "task.release":
            t = self.holder(pick)
            self.act(op, {"id": t["id"], "version": max(t["version"] + min(off, 0), 0)})
        else:
            preferred = {"task.halt": ("pending", "acquired", "suspended", "halted")[pick % 3:],
                         "task.continue": ("halted",)}
            self.act(op, {"id": self.pick_task(pick, *preferred.get(op, ()))["id"]})

    def lease_of(self, id: str) -> int | None:
        """When the lease of task `id` lapses (the model's state), or None: not acquired."""
        return self.deadline_of(id, LEASE)

    def deadline_of(self, id: str, kind: int) -> int | None:
        """When task `id`'s timeout of this kind (LEASE or RETRY) is due, or None: none armed."""
        return next((x["timeout"] for x in self.state["taskTimeouts"] if x["id"] == id and x["kind"] == kind), None)

    def ticks_either_side(self, deadline: int | None) -> None:
        """A tick 1 ms before a deadline the story just armed, then one at it: it must not
        fire at the first and must at the second. Each deadline is armed by its own line of
        a server (a lease by create or acquire, a retry by a resume or a lapse), and only a
        tick to the millisecond tells `now + ttl - 1` or `+ 1` from the rule."""
        if deadline is None or deadline <= self.now:
            return
        for at in (deadline - 1, deadline):
            self.move_clock(at)
            if self.now != at:  # stopped short of owing too many occurrences
                return
            self.act("tick", {})

    def holder(self, pick: int, awaited_first: bool = False) -> dict[str, Json]:
        """An acquired task with a live promise (one somebody awaits first, if asked); when
        there is none but a pending task with one, a worker first acquires it (its own
        step), so the holder's work is reached."""
        if awaited_first:
            waited_on = [t for t in self.tasks("acquired") if self.live(t["id"]) and
                         any(p["id"] == t["id"] and p["callbacks"] for p in self.state["promises"])]
            if waited_on:
                return waited_on[pick % len(waited_on)]
        if not any(self.live(t["id"]) for t in self.tasks("acquired")):
            pending = [t for t in self.tasks("pending") if self.live(t["id"])]
            if pending and pick % 8:
                t = pending[pick % len(pending)]
                self.act("task.acquire", {"id": t["id"], "version": t["version"], "pid": PIDS[0], "ttl": MINUTE})
        return self.pick_task(pick, "acquired")

    def holds_a_lease(self, t: dict[str, Json]) -> bool:
        """Whether task `t` is acquired, its promise live and its lease not yet due."""
        lease = self.lease_of(t["id"])
        return t.get("state") == "acquired" and self.live(t["id"]) and lease is not None and lease > self.now

    def a_new_holder(self, pick: int) -> dict[str, Json]:
        """A task created acquired for a story, under an id of its own, its lease one of the
        ttls a clock can reach (1 s, a minute, an hour); when no holder is live, the stories
        were told on a fulfilled task or one whose lease had lapsed, and every step of theirs
        answered 409 (a heartbeat that renews nothing: in no campaign against resonate-pg).
        Where task.create is left out or refused, whatever task there is."""
        id = f"{AWAITED_ID}.holder.{self.stories_told}"
        if "task.create" not in self.excluded_ops:
            self.act("task.create", {"pid": PIDS[0], "ttl": TTLS[1 + pick % (len(TTLS) - 1)], "action": {
                "id": id, "timeoutAt": self.now + DAY, "param": PARAMS[0], "tags": TARGET}})
        return next((t for t in self.tasks("acquired") if t["id"] == id), None) or self.pick_task(pick, "acquired")

    @rule(op=st.sampled_from(("task.suspend", "task.suspend", "task.fulfill", "task.fence")),
          pick=st.integers(0, 30), off=st.sampled_from((0, 0, 0, -1)),
          awaited=st.lists(st.integers(0, 30), max_size=2), live=st.booleans(),
          state=st.sampled_from(SETTLE_STATES), create=st.booleans(), tags=st.sampled_from(({}, TARGET)))
    def task_work(self, op: str, pick: int, off: int, awaited: list[int], live: bool, state: str,
                  create: bool, tags: Json) -> None:
        """What the holder does (mostly at its version): suspend on pending promises (parked),
        on any (300, 422) or on none (parked for good), fulfil, or a fenced create or settle."""
        t = self.holder(pick, awaited_first=op == "task.fulfill")
        id, version = t["id"], max(t["version"] + off, 0)
        if op == "task.suspend":
            others = [p["id"] for p in self.state["promises"] if self.live(p["id"]) and p["id"] != id]
            if live and not others:
                timer = pick % 2 == 0  # a timer resolves by its timeout: the resume comes from tick
                self.act("promise.create", {"id": AWAITED_ID, "timeoutAt": self.now + (MINUTE if timer else HOUR),
                                            "param": PARAMS[0], "tags": {"resonate:timer": "true"} if timer else {}})
                others = [AWAITED_ID]
            actions = [{"awaited": others[a % len(others)] if live else self.pick_promise(a, "absent"),
                        "awaiter": id} for a in awaited]
            self.act(op, {"id": id, "version": version, "actions": actions})
        elif op == "task.fulfill":
            self.act(op, {"id": id, "version": version,
                          "action": {"id": id, "state": state, "value": PARAMS[1]}})
        elif create:
            self.act(op, {"id": id, "version": version, "action": {
                "kind": "create", "id": TASK_IDS[pick % len(TASK_IDS)] + ".child",
                "timeoutAt": self.now + MINUTE, "param": PARAMS[0], "tags": tags}})
        else:
            self.act(op, {"id": id, "version": version, "action": {
                "kind": "settle", "id": self.pick_promise(pick, "absent", pending=True),
                "state": state, "value": PARAMS[0]}})

    @rule(pick=st.integers(0, 30), state=st.sampled_from(SETTLE_STATES))
    def settle_twice(self, pick: int, state: str) -> None:
        """A second settle of a promise, with another state and value (a client retrying a
        settle, or two racing): the first stays and the answer is the stored promise
        (P-03.already_settled), which the read after it shows. A pending one is settled first."""
        promises = [p for p in self.state["promises"] if p["state"] != "pending" or p["timeoutAt"] > self.now]
        if not promises:
            return
        chosen = promises[pick % len(promises)]
        id = chosen["id"]
        if chosen["state"] == "pending":
            self.act("promise.settle", {"id": id, "state": "resolved", "value": PARAMS[0]})
        self.act("promise.settle", {"id": id, "state": state, "value": PARAMS[1]})
        self.act("promise.get", {"id": id})

    @rule(op=st.sampled_from(("promise.settle", "promise.register_callback", "promise.register_listener")),
          pick=st.integers(0, 30), other=st.integers(0, 30), state=st.sampled_from(SETTLE_STATES),
          live=st.booleans(), address=st.sampled_from(("poll://a", "poll://b")))
    def promise_waits(self, op: str, pick: int, other: int, state: str, live: bool, address: str) -> None:
        """Settle (mostly a promise somebody waits on, so callbacks and listeners fire), or
        register a callback (mostly with a targeted awaiter) or a listener."""
        if op == "promise.settle":
            suspended = {t["id"] for t in self.tasks("suspended")}
            waited = ([p["id"] for p in self.state["promises"] if suspended & set(p["callbacks"])]
                      if pick % 2 else [])
            waited = waited or [p["id"] for p in self.state["promises"] if p["callbacks"] or p["listeners"]]
            id = waited[pick % len(waited)] if live and waited else \
                self.pick_promise(pick, "absent", pending=pick % 3 != 0)
            self.act(op, {"id": id, "state": state, "value": PARAMS[1]})
        elif op == "promise.register_callback":
            busy = {t["id"] for t in self.tasks("pending", "acquired", "halted")}
            awaiters = ([p["id"] for p in self.state["promises"] if p["id"] in busy] if other % 2 else []) or \
                [p["id"] for p in self.state["promises"] if "resonate:target" in p["tags"]]
            awaiter = awaiters[other % len(awaiters)] if awaiters and other % 3 else \
                ("absent" if other % 2 else self.pick_promise(other, "absent"))
            self.act(op, {"awaited": self.pick_promise(pick, "absent", pending=live), "awaiter": awaiter})
        else:
            self.act(op, {"awaited": self.pick_promise(pick, "absent", pending=live), "address": address})

    @rule(story=st.sampled_from(TASK_STORIES), pick=st.integers(0, 30), off=st.sampled_from((-1, 1)))
    def task_story(self, story: str, pick: int, off: int) -> None:
        """A few steps that lead to one of the paths a random walk rarely finds in 50 steps,
        each step checked like any other (half of them after a heartbeat, by the holder or by
        another worker): a lease renewed, then lapsing; a suspended task resumed by a
        settle or by a timer's timeout; a busy task's resume buffered; a listener unblocked
        by a timeout; a holder's fulfil resuming another task; a stale worker fenced out;
        halt twice then continue; task.create taking a pending task or refused; a resume
        that finds its task fulfilled; a tick either side of a task's deadline; a callback
        registered at the very instant its promise times out.

        The run's stories are taken in turn from the drawn one: Hypothesis draws the same
        choice again and again within a run, and a story drawn by chance alone was left
        untold in whole campaigns (a lease lapsing: none in 46 stories of 22 runs)."""
        story = TASK_STORIES[(TASK_STORIES.index(story) + self.stories_told) % len(TASK_STORIES)]
        self.stories_told += 1
        # what a story awaits is external, then internal, by turns (the Lean takes a callback
        # on either; a server may refuse the internal one, as resonate-pg does): external in
        # a run's first story, the opening's
        external = self.stories_told % 2 == 1
        t = self.holder(pick)
        if not self.holds_a_lease(t):
            t = self.a_new_holder(pick)
        id, version = t["id"], t["version"]
        first = self.lease_of(id)
        if story == "lease_lapses" or pick % 2:
            # later in the lease (half way to its deadline, the promise still pending) the
            # holder heartbeats (renewed), or a worker that is not the holder does; a renewal
            # then moves the deadline well on
            ends = min(first, *(p["timeoutAt"] for p in self.state["promises"] if p["id"] == id)) \
                if first is not None else self.now
            self.move_clock((self.now + ends) // 2 if ends > self.now + 1 else self.now + 1)
            pid = "stranger" if pick % 4 == 1 else t.get("pid") or PIDS[0]
            self.act("task.heartbeat", {"pid": pid, "tasks": [{"id": id, "version": version}]})
            # a renewal shows only in the state (the lease's timeout), which the story's later
            # steps replace or lapse before the rule's own comparison: compare it here
            self.invariants_hold()
        if story == "lease_lapses":
            lease = self.lease_of(id)
            if first is not None and lease is not None and self.now <= first < lease:
                # renewed: its first deadline passes and the task is still held (a response
                # shows it: the tick fires no lease, a read finds the task acquired)
                self.move_clock(first)
                self.act("tick", {})
                self.act("task.get", {"id": id})
            self.move_clock(lease if lease is not None else self.now + 1)
            self.act("tick", {})
            self.ticks_either_side(self.deadline_of(id, RETRY))  # the retry the lapse armed
        elif story in ("resumed_by_settle", "resumed_by_timeout"):
            by_timeout = story == "resumed_by_timeout"
            awaited = f"{AWAITED_ID}.{pick}"
            tags = {"resonate:timer": "true"} if by_timeout else TARGET
            self.act("promise.create", {"id": awaited, "timeoutAt": self.now + MINUTE, "param": PARAMS[0],
                                        "tags": tags if external else {}})
            self.act("promise.register_listener", {"awaited": awaited, "address": LISTENER})
            self.act("task.suspend", {"id": id, "version": version,
                                      "actions": [{"awaited": awaited, "awaiter": id}]})
            # another promise settles first: its settlement scrub must leave this callback be
            other = f"{awaited}.other"
            self.act("promise.create", {"id": other, "timeoutAt": self.now + MINUTE, "param": PARAMS[0], "tags": {}})
            # which has no target, so no worker could be resumed for it: no callback (P-04: 422)
            self.act("promise.register_callback", {"awaited": awaited, "awaiter": other})
            self.act("promise.settle", {"id": other, "state": "resolved", "value": PARAMS[1]})
            if by_timeout:
                self.move_clock(self.now + MINUTE)
                self.act("tick", {})
            else:
                self.act("promise.settle", {"id": awaited, "state": "resolved", "value": PARAMS[1]})
            self.ticks_either_side(self.deadline_of(id, RETRY))  # the retry the resume armed
            # the resumed task created again: taking it clears what resumed it (T-02)
            self.act("task.create", {"pid": PIDS[1], "ttl": MINUTE, "action": {
                "id": id, "timeoutAt": self.now + DAY, "param": PARAMS[0], "tags": TARGET}})
            self.act("task.get", {"id": id})
        elif story == "resume_buffered":
            awaited = f"{AWAITED_ID}.{pick}"
            if not self.live(id):  # no busy task to buffer the resume on (an outage ended them all)
                id = f"{awaited}.busy"
                self.act("task.create", {"pid": PIDS[0], "ttl": HOUR, "action": {
                    "id": id, "timeoutAt": self.now + DAY, "param": PARAMS[0], "tags": TARGET}})
            self.act("promise.create", {"id": awaited, "timeoutAt": self.now + MINUTE, "param": PARAMS[0],
                                        "tags": TARGET if external else {}})
            self.act("promise.register_callback", {"awaited": awaited, "awaiter": id})
            # and one for an awaiter no one created (P-04: 422), which the settle must not resume
            self.act("promise.register_callback", {"awaited": awaited, "awaiter": f"{awaited}.nobody"})
            self.act("promise.settle", {"id": awaited, "state": "rejected", "value": PARAMS[1]})
        elif story == "fulfil_resumes_another":
            waiter = f"{AWAITED_ID}.{pick}"
            self.act("task.create", {"pid": PIDS[1], "ttl": HOUR, "action": {
                "id": waiter, "timeoutAt": self.now + DAY, "param": PARAMS[0], "tags": TARGET}})
            self.act("task.suspend", {"id": waiter, "version": 1, "actions": [{"awaited": id, "awaiter": waiter}]})
            self.act("task.fulfill", {"id": id, "version": version,
                                      "action": {"id": id, "state": "resolved", "value": PARAMS[1]}})
        elif story == "stale_worker":
            self.act("task.suspend", {"id": id, "version": max(version + off, 0),
                                      "actions": [{"awaited": AWAITED_ID, "awaiter": id}]})
            self.act("task.release", {"id": id, "version": max(version + off, 0)})
            self.act("task.release", {"id": id, "version": version})
            self.act("task.acquire", {"id": id, "version": max(version + off, 0), "pid": PIDS[1], "ttl": MINUTE})
            self.act("task.create", {"pid": PIDS[1], "ttl": MINUTE, "action": {
                "id": id, "timeoutAt": self.now + DAY, "param": PARAMS[0], "tags": TARGET}})
        elif story == "halt_twice_then_continue":
            self.act("task.halt", {"id": id})
            self.act("task.halt", {"id": id})
            self.act("task.continue", {"id": id})
        elif story == "fulfilled_before_its_resume":
            # the holder awaits a promise, settles another by fence, and is fulfilled before
            # the awaited one settles: its fulfilment scrubbed the callback, so that settle
            # resumes nothing (a server that keeps the callback resumes a fulfilled task);
            # a halt then finds the task fulfilled (T-09)
            awaited, fenced = f"{AWAITED_ID}.{pick}", f"{AWAITED_ID}.{pick}.fenced"
            self.act("task.get", {"id": id})
            for promise in (awaited, fenced):
                self.act("promise.create", {"id": promise, "timeoutAt": self.now + HOUR, "param": PARAMS[0],
                                            "tags": {"resonate:timer": "true"} if external and promise == awaited
                                            else {}})
            self.act("promise.register_callback", {"awaited": awaited, "awaiter": id})
            self.act("task.fence", {"id": id, "version": version, "action": {
                "kind": "settle", "id": fenced, "state": "resolved", "value": PARAMS[1]}})
            self.act("task.fulfill", {"id": id, "version": version,
                                      "action": {"id": id, "state": "resolved", "value": PARAMS[1]}})
            self.act("promise.settle", {"id": awaited, "state": "resolved", "value": PARAMS[1]})
            self.act("task.halt", {"id": id})
        elif story == "a_fresh_lease_to_the_ms":
            # a task created at its promise's own timeoutAt (timed out at creation, T-02:
            # no lease at all), then one created acquired, its lease either side of the
            # millisecond, then the retry its lapse arms
            self.act("task.create", {"pid": PIDS[0], "ttl": MINUTE, "action": {
                "id": f"{AWAITED_ID}.{pick}.due_now", "timeoutAt": self.now, "param": PARAMS[0], "tags": TARGET}})
            fresh = f"{AWAITED_ID}.{pick}.leased"
            self.act("task.create", {"pid": PIDS[0], "ttl": TTLS[1 + pick % (len(TTLS) - 1)], "action": {
                "id": fresh, "timeoutAt": self.now + DAY, "param": PARAMS[0], "tags": TARGET}})
            self.ticks_either_side(self.lease_of(fresh))
            self.ticks_either_side(self.deadline_of(fresh, RETRY))  # the retry its lapse armed
        elif story == "a_deadline_to_the_ms":
            # the next task deadline of any task (a lease, or a retry after a resume or a
            # lapse) either side of the millisecond: a timer pass that compares with a
            # millisecond to spare shows nowhere else. The next one only: a later one would
            # lapse every lease before it.
            armed = [x["timeout"] for x in self.state["taskTimeouts"] if self.now < x["timeout"] <= self.now + DAY]
            self.ticks_either_side(min(armed, default=None))
        elif story == "awaited_at_its_timeout":
            # the holder suspends on a promise not created yet (refused), which is then
            # created; at exactly its timeoutAt (timed out, though no timer pass has run
            # yet) the holder registers a callback on it and suspends on it again, then a
            # pass runs: a server that reads "timed out" as now > timeoutAt keeps a callback
            # nothing will fire, or suspends a task nothing will resume
            awaited = f"{AWAITED_ID}.{pick}.due"
            suspend = {"id": id, "version": version, "actions": [{"awaited": awaited, "awaiter": id}]}
            self.act("task.suspend", suspend)
            self.act("promise.create", {"id": awaited, "timeoutAt": self.now + 1, "param": PARAMS[0],
                                        "tags": {"resonate:timer": "true"} if external else {}})
            self.move_clock(self.now + 1)
            self.act("promise.register_callback", {"awaited": awaited, "awaiter": id})
            self.act("task.suspend", suspend)
            self.act("tick", {})
            self.act("task.get", {"id": id})  # a callback kept would have resumed it (a resume buffered)
        else:  # fence_then_create_on_untargeted
            self.act("task.fence", {"id": id, "version": version, "action": {
                "kind": "create", "id": f"{id}.child", "timeoutAt": self.now + MINUTE, "param": PARAMS[0],
                "tags": {}}})
            self.act("task.create", {"pid": PIDS[0], "ttl": MINUTE, "action": {
                "id": f"{id}.child", "timeoutAt": self.now + MINUTE, "param": PARAMS[0], "tags": {}}})

    @rule(request=st.sampled_from(ODD_TASK_REQUESTS))
    def task_odd_requests(self, request: tuple[str, Json]) -> None:
        """The two searches (501 whatever the args), and wrong shapes for every promise and
        task op: 400 and nothing changes. One whose op the campaign leaves out
        (--ops/--skip-ops) is not sent: it would end the run."""
        if request[0] not in self.excluded_ops:
            self.act(*request)

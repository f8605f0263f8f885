"""The schedules lockstep machine: schedules, promises and a clock that jumps.

The environment is part of the machine: the clock only moves forward, sometimes a little,
sometimes to the edge of the next tick, sometimes far enough to miss many ticks; timeouts
fire one by one, all at once (`tick`), again, or for a schedule already deleted. After every
step the properties of spec/schedules_properties.py are checked on the oracle's states.
Its promise and task rules are in tasks.py, the values it draws in ops.py."""

from __future__ import annotations

import datetime as dt

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from duespec.jsondiff import state_diff
from duespec.systems.machine import ProtocolMachine
from duespec.coverage import TAKEN_BACK, reached
from duespec.limits import MAX_CATCH_UP_OCCURRENCES
from duespec.model.schedules.clock import MAX_TIME, next_run
from duespec.model.schedules.expand import expand
from duespec.spec import schedules_properties as spec
from duespec.systems.schedules.dialect import DialectAndCatchUp
from duespec.systems.schedules.tasks import PromisesAndTasks
from duespec.systems.schedules.adapter import DAY, HOUR, MINUTE
from duespec.systems.schedules.ops import (
    CRONS,
    OPERATIONS,
    DELAYED_AN_HOUR,
    EDGE_ID,
    EPOCH_2025,
    FIELD_EDGES,
    INVALID_CRONS,
    INVALID_PARAMS,
    INVALID_SCHEDULE_IDS,
    INVALID_TAGS,
    INVALID_TEMPLATES,
    INVALID_TIMEOUTS,
    LAST_YEAR,
    LAST_YEAR_ROLLOVER,
    MATRIX,
    MATRIX_BLOCKS,
    MAX_OWED_PER_JUMP,
    MAX_PROMISES_PER_RUN,
    NEAR_MISS_IDS,
    NOW_FORMS,
    ODD_NOWS,
    PAGE_FILL,
    PARAMS,
    PROMISE_IDS,
    PROMISE_TIMEOUTS,
    RETRY_TIMEOUTS,
    SCHEDULE_IDS,
    SCHEDULE_STORIES,
    STARTING_WORK,
    STARTS,
    TAGS,
    TASK_STORIES,
    TARGET,
    TEMPLATES,
    TTLS,
    cron_expressions,
    cron_regimes,
    instant_regimes,
    malformed,
    pool,
    well_formed,
)
from duespec.targets.interface import Json


class SchedulesMachine(DialectAndCatchUp, PromisesAndTasks, ProtocolMachine):
    """schedule.create/get/delete/search, promise.create/get, and the environment; every
    cron feature and catch-up at every hour by rules of their own (dialect.py)."""

    system = "schedules"
    #: The opening sends each step only when its op is in the campaign (--ops/--skip-ops).
    skippable_in_opening = frozenset({"schedule.create", "schedule.delete", "promise.create", "task.create"})
    #: What the opening does only in a campaign that leaves out no op (its task story).
    opening_with_every_op = frozenset({"task_story"})

    def __init__(self) -> None:
        super().__init__()
        self.profile = self.config.get("profile", "lean")
        self.catch_up = self.config.get("catch_up", "all")
        self.now = EPOCH_2025
        self.deleted: list[str] = []
        self.stories_told = 0  # task stories, taken in turn (PromisesAndTasks.task_story)
        self.state = self.oracle_state()

    def act(self, op: str, args: dict[str, Json]) -> dict[str, Json]:
        """One lockstep step, then every transition property on the oracle's before/after."""
        before = self.state
        response = self.call(op, args, self.now)
        self.state = after = self.oracle_state()
        if type(self.now) is int and 0 <= self.now <= MAX_TIME:
            for regime in instant_regimes(self.now):
                reached(f"SR-02.{regime}")
        if op == "schedule.create" and response.get("status") == 200:
            # a cron the target refused is not one of its regimes reached (duespec.coverage)
            taken_back = self.latest_step_taken_back
            if taken_back or not before["schedules"] == after["schedules"]:
                for feature in cron_regimes(args["cron"]):
                    reached(f"{TAKEN_BACK if taken_back else ''}SR-01.{feature}")
        step = self.latest_step
        for prop in () if self.latest_step_taken_back else spec.TRANSITION_PROPERTIES:
            policy = {"catch_up": self.catch_up} if prop in spec.CATCH_UP_PROPERTIES else {}
            if not prop(before, step, after, self.profile, **policy):
                raise AssertionError(
                    f"{prop.__name__} broken: {(prop.__doc__ or '').splitlines()[0]}\n"
                    f"  step {step['op']} {step['args']} at now={self.now}: "
                    f"{step['result']}\n  changes:\n    "
                    + "\n    ".join(state_diff(before, after)[:20]))
        return response

    # --- views of the oracle's state ---

    def schedules(self) -> list[dict[str, Json]]:
        return self.state["schedules"]

    def due(self, kind: str) -> list[str]:
        return [t["id"] for t in self.state[kind] if t["timeout"] <= self.now]

    def move_clock(self, to: int) -> None:
        """Forward only, and never so far that the schedules owe more occurrences than
        MAX_OWED_PER_JUMP (or than MAX_PROMISES_PER_RUN leaves room for): then the clock
        stops just before the first occurrence over the bound."""
        to = min(max(to, self.now), MAX_TIME)
        budget = max(0, min(MAX_OWED_PER_JUMP, MAX_PROMISES_PER_RUN - len(self.state["promises"])))
        owed: list[int] = []
        for s in self.schedules():
            t = s["nextRunAt"]
            for _ in range(budget + 1):
                if t > to:
                    break
                owed.append(t)
                t = next_run(s["cron"], t)
        if len(owed) > budget:
            to = max(self.now, sorted(owed)[budget] - 1)
        self.now = to

    @initialize(start=st.sampled_from(STARTS), retry_timeout=st.sampled_from(RETRY_TIMEOUTS),
                work=st.sampled_from(STARTING_WORK), ttl=st.sampled_from(TTLS))
    def start_run(self, start: int, retry_timeout: int | None, work: str, ttl: int) -> None:
        """This run's config (its retry_timeout, or none: the default), where its clock
        starts, then the work it starts with: one initialize rule, so that the reset a new
        config needs always comes before the first step."""
        self.start_clock(start, retry_timeout)
        fields = tuple(FIELD_EDGES)
        pick = (STARTS.index(start) + 2 * RETRY_TIMEOUTS.index(retry_timeout)
                + 3 * STARTING_WORK.index(work) + 5 * TTLS.index(ttl))
        self.sends_each_edge_of_one_field(fields[pick % len(fields)])
        self.sends_a_malformed_now_to_every_op(pick)
        # the draws as one number in mixed radix: unlike `pick`, every combination its own
        draws = (((STARTS.index(start) * len(RETRY_TIMEOUTS) + RETRY_TIMEOUTS.index(retry_timeout))
                  * len(STARTING_WORK) + STARTING_WORK.index(work)) * len(TTLS) + TTLS.index(ttl))
        self.sends_a_block_of_the_malformation_matrix(draws % len(MATRIX_BLOCKS))
        self.some_work_to_start_with(work, ttl)
        if not self.excluded_ops:
            # one task story, on that work or on a task of its own (a_new_holder), chosen
            # by the opening's draws as the edges are: told as a rule alone, a story came a
            # few times in a short campaign, each deadline to the millisecond fewer (a
            # resumed task's retry: never in 41 runs against resonate-pg). Each draw weighs
            # in by a factor prime to the number of stories, so every story meets every ttl
            # and every work (by `draws` modulo 12 the ttl was fixed by the story, and a
            # lease lapsing was told only on a lease of 0 ms, which nothing can renew)
            told = (STARTS.index(start) + 5 * RETRY_TIMEOUTS.index(retry_timeout) + 7 * STARTING_WORK.index(work)
                    + 11 * TTLS.index(ttl))
            self.task_story(TASK_STORIES[told % len(TASK_STORIES)], pick=draws % 31, off=(-1, 1)[draws % 2])

    def sends_each_edge_of_one_field(self, field: str) -> None:
        """SR-05: every cron of one field's edges in turn, the other arguments valid: each
        rejected form is a 400 that changes nothing; each accepted one is created (its
        first nextRunAt compared) under an id of its own and deleted again. Part of the
        opening, the field chosen from the opening's own draws: as a rule of its own it
        moved every later draw, and a default campaign then missed a required branch."""
        rejected, accepted = FIELD_EDGES[field]
        if "schedule.create" in self.excluded_ops:
            return  # a campaign without schedule.create sends no edge
        if "schedule.delete" in self.excluded_ops:
            accepted = ()  # each accepted one would stay, under an id the rules never draw
        create = {"promiseId": TEMPLATES[0], "promiseTimeout": MINUTE, "promiseParam": PARAMS[0],
                  "promiseTags": {}}
        for cron in rejected:
            self.act("schedule.create", {"id": SCHEDULE_IDS[0], "cron": cron, **create})
        for cron in accepted:
            if self.act("schedule.create", {"id": EDGE_ID, "cron": cron, **create})["status"] == 200:
                self.act("schedule.delete", {"id": EDGE_ID})
        if accepted:
            reached(f"SR-05.{field.replace('-', '_')}")

    def sends_a_malformed_now_to_every_op(self, pick: int) -> None:
        """SR-06: every op, a request that only its `now` makes a 400 (over HTTP, a bad
        `resonate:debug_time`), each op with another of the forms docs/protocol.md section 5
        names, the forms turning with `pick`: over a campaign's openings every op gets every
        form (a default campaign: each cell over a dozen times; half the ops per opening
        left some cells to one run at some seeds). Part of the opening with no draw of its
        own, as the edges above: the 400s change nothing, so every later draw and step of
        the run is as it was without them (a draw of its own moved every later draw, and a
        default campaign then let a mutant through); the minimiser drops them from a
        counterexample that does not need them. It names no op in its source (duespec.campaigns.scope reads that): an op the
        campaign leaves out is not sent."""
        forms = tuple(NOW_FORMS)
        saved = self.now
        try:
            for index, op in enumerate(OPERATIONS):
                if op in self.excluded_ops:
                    continue
                form = forms[(pick + index) % len(forms)]
                reached(MATRIX.tag(op, "now", form))
                self.now = NOW_FORMS[form](saved)
                self.act(op, well_formed(op, saved))
        finally:
            self.now = saved

    def sends_a_block_of_the_malformation_matrix(self, block: int) -> None:
        """SR-06: one block of the matrix's other cells, each a request that only its one
        malformed field (an argument in one of its forms, `args` that are no object, a key
        missing or extra) makes a 400, or a search's 501, the block chosen from the
        opening's draws: over a campaign's openings every op gets every malformation of
        each of its arguments (the coverage report's grid). Part of the opening with no
        draw of its own, as the `now` cells above, for the same reason: every later draw
        and step of the run stays as it was (as a drawn rule, the matrix moved the rest
        of a default campaign, which then missed required branches). It names no op in
        its source (duespec.campaigns.scope reads that): a cell whose op the campaign
        leaves out is not sent."""
        for op, field, form in MATRIX_BLOCKS[block]:
            if op in self.excluded_ops:
                continue
            reached(MATRIX.tag(op, field, form))
            self.act(op, malformed(op, field, form, self.now))

    def start_clock(self, start: int, retry_timeout: int | None) -> None:
        config = {key: value for key, value in self.config.items() if key != "retry_timeout"}
        if retry_timeout is not None:
            config["retry_timeout"] = retry_timeout
        applied = self.config
        if config != self.config and self.reconfigure(config):
            applied = config
            self.state = self.oracle_state()
        retry_timeout = applied.get("retry_timeout")  # a target that keeps its own config: its own
        reached("SR-03.default_retry_timeout" if retry_timeout is None else
                f"SR-03.retry_timeout_{'one' if retry_timeout == 1 else 'set'}")
        self.now = start

    # --- the protocol ---

    @rule(id=pool(SCHEDULE_IDS + NEAR_MISS_IDS[:2], INVALID_SCHEDULE_IDS, one_in=12),
          cron=st.one_of(pool(CRONS, INVALID_CRONS, one_in=12), cron_expressions()),
          template=pool(TEMPLATES, INVALID_TEMPLATES), timeout=pool(PROMISE_TIMEOUTS, INVALID_TIMEOUTS),
          param=pool(PARAMS, INVALID_PARAMS), tags=pool(TAGS, INVALID_TAGS))
    def create_schedule(self, id: Json, cron: Json, template: Json, timeout: Json, param: Json,
                        tags: Json) -> None:
        self.act("schedule.create", {"id": id, "cron": cron, "promiseId": template,
                                     "promiseTimeout": timeout, "promiseParam": param,
                                     "promiseTags": tags})

    @rule(op=st.sampled_from(("schedule.get", "schedule.search")), id=st.sampled_from(SCHEDULE_IDS + NEAR_MISS_IDS),
          search=st.sampled_from(({}, {"limit": 10}, {"cursor": "nightly", "limit": 1}, {"limit": 1},
                                 {"tags": TARGET}, {"tags": {"resonate:timer": "true"}, "limit": 2},
                                 {"limit": 0}, {"limit": 1000}, {"limit": 1001})))
    def read_schedules(self, op: str, id: str, search: dict[str, Json]) -> None:
        self.act(op, {"id": id} if op == "schedule.get" else search)

    @rule(id=st.sampled_from(SCHEDULE_IDS + NEAR_MISS_IDS))
    def delete_schedule(self, id: str) -> None:
        if self.act("schedule.delete", {"id": id})["status"] == 200:
            self.deleted.append(id)

    @rule(id=st.sampled_from(PROMISE_IDS), timeout=st.sampled_from((-MINUTE, -1, 0, 1, MINUTE, DAY)),
          tags=pool((*TAGS, DELAYED_AN_HOUR), INVALID_TAGS), param=pool(PARAMS, INVALID_PARAMS))
    def create_promise(self, id: str, timeout: int, tags: Json, param: Json) -> None:
        if tags is DELAYED_AN_HOUR:
            tags = {**TARGET, "resonate:delay": str(self.now + HOUR)}
        self.act("promise.create", {"id": id, "timeoutAt": max(self.now + timeout, 0),
                                    "param": param, "tags": tags})

    def has_promises(self) -> bool:
        return bool(self.state["promises"])

    @precondition(has_promises)
    @rule(pick=st.integers(0, 30), timeout=st.sampled_from((-1, MINUTE, DAY)), tags=st.sampled_from(TAGS))
    def create_an_existing_promise(self, pick: int, timeout: int, tags: Json) -> None:
        """A create of an id that exists, with another body (a client retrying a create whose
        arguments changed): the spec answers the stored promise and changes nothing (P-02),
        which the read after it shows."""
        promises = self.state["promises"]
        existing = promises[pick % len(promises)]
        other = PARAMS[1] if existing["param"] == PARAMS[0] else PARAMS[0]
        self.act("promise.create", {"id": existing["id"], "timeoutAt": max(self.now + timeout, 0),
                                    "param": other, "tags": tags})
        self.act("promise.get", {"id": existing["id"]})

    def has_schedules(self) -> bool:
        return bool(self.schedules())

    @precondition(has_schedules)
    @rule(pick=st.integers(0, 9), ahead=st.integers(0, 2), timeout=st.sampled_from((-1, 0, MINUTE)),
          tags=st.sampled_from(TAGS))
    def create_promise_on_an_occurrence(self, pick: int, ahead: int, timeout: int, tags: Json) -> None:
        """A caller takes the id a coming (or the last) tick will expand to, before it fires."""
        s = self.schedules()[pick % len(self.schedules())]
        cron_time = s["nextRunAt"] if ahead or s["lastRunAt"] is None else s["lastRunAt"]
        for _ in range(ahead - 1):
            cron_time = next_run(s["cron"], cron_time)
        if cron_time > MAX_TIME:
            return
        self.act("promise.create", {"id": expand(s["promiseId"], s["id"], cron_time),
                                    "timeoutAt": max(self.now + timeout, 0),
                                    "param": PARAMS[0], "tags": tags})

    @rule(which=st.sampled_from(("known", "pending", "overdue", "named")),
          id=st.sampled_from(PROMISE_IDS), pick=st.integers(0, 30))
    def get_promise(self, which: str, id: str, pick: int) -> None:
        """A promise that exists; one pending; one still pending past its timeout (read
        projected); or a name from the pool."""
        promises = self.state["promises"]
        if which in ("pending", "overdue"):
            promises = [p for p in promises if p["state"] == "pending"
                        and (p["timeoutAt"] <= self.now) == (which == "overdue")]
        if which != "named" and promises:
            id = promises[pick % len(promises)]["id"]
        self.act("promise.get", {"id": id})

    @rule(op=st.sampled_from(("schedule.get", "promise.get", "promise.create", "tick", "warp")),
          args=st.sampled_from(({}, {"id": 3}, {"id": "p1", "extra": 1}, {"id": "\ud800"}, None)),
          now=st.sampled_from(ODD_NOWS))
    def garbage(self, op: str, args: Json, now: Json) -> None:
        """Malformed requests, an unknown op, invalid instants: 400, and nothing changes."""
        saved = self.now
        self.now = {None: saved, "now as float": float(saved), "now as string": str(saved),
                    "null": None}.get(now, now) if isinstance(now, str) or now is None else now
        if now is not None:
            reached("SR-04.odd_now")
        try:
            self.act(op, args)
        finally:
            self.now = saved

    # --- the clock ---

    @rule(span=st.sampled_from((1, 999, 30_000, MINUTE - 1, MINUTE, 3 * HOUR, DAY, 7 * DAY, 45 * DAY,
                                400 * DAY)))
    def time_passes(self, span: int) -> None:
        """A moment, or downtime that misses many ticks (bounded by MAX_OWED_PER_JUMP)."""
        self.move_clock(self.now + span)

    @rule(ahead=st.integers(0, 13))
    def clock_to_a_month_tail(self, ahead: int) -> None:
        """To 00:00 on the 28th of the month `ahead` months on: a cron computed from there
        walks that month's last days, so its length (28 to 31, a leap or century February)
        decides the next month's days. Months of 2000, 2028 and 2100 come from STARTS."""
        moment = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=self.now)
        month_count = moment.year * 12 + moment.month - 1 + ahead
        if month_count // 12 > 9999:
            self.move_clock(MAX_TIME)
            return
        tail = dt.datetime(month_count // 12, month_count % 12 + 1, 28) - dt.datetime(1970, 1, 1)
        self.move_clock(tail // dt.timedelta(milliseconds=1))

    @precondition(has_schedules)
    @rule(pick=st.integers(0, 9), edge=st.sampled_from((-1, 0, 1)))
    def clock_reaches_a_tick(self, pick: int, edge: int) -> None:
        """To 1 ms before, at, or 1 ms after a schedule's next tick; at an odd pick, exactly
        to the tick after it instead of the next one: a catch-up then owes two occurrences
        and the clock is on the second (it must fire, and nextRunAt move past it)."""
        s = self.schedules()[pick % len(self.schedules())]
        if edge == 0 and pick % 2 and s["nextRunAt"] <= MAX_TIME:
            self.move_clock(next_run(s["cron"], s["nextRunAt"]))
        else:
            self.move_clock(s["nextRunAt"] + edge)

    # --- the environment firing timeouts ---

    def schedule_due(self) -> bool:
        return bool(self.due("scheduleTimeouts"))

    @precondition(schedule_due)
    @rule(pick=st.integers(0, 9))
    def fire_due_schedule(self, pick: int) -> None:
        due = self.due("scheduleTimeouts")
        self.act("schedule.timeout", {"id": due[pick % len(due)]})

    @rule(pick=st.integers(0, 9), id=st.sampled_from(PROMISE_IDS))
    def fire_promise_timeout(self, pick: int, id: str) -> None:
        """A due promise timeout if there is one; else, on an odd pick, an armed one not yet
        due (TO-01.early: left to the id drawn, it hung on the draws of every other rule),
        or one for a promise that is absent, settled or not yet due."""
        due = self.due("promiseTimeouts")
        early = [t["id"] for t in self.state["promiseTimeouts"] if t["timeout"] > self.now]
        if due:
            id = due[pick % len(due)]
        elif early and pick % 2:
            id = early[pick // 2 % len(early)]
        self.act("promise.timeout", {"id": id})

    def has_fired(self) -> bool:
        return any(s["lastRunAt"] is not None for s in self.schedules())

    @precondition(has_fired)
    @rule(pick=st.integers(0, 9))
    def refire_schedule(self, pick: int) -> None:
        """The same timeout delivered twice: the tick it was for has already fired."""
        fired = [s["id"] for s in self.schedules() if s["lastRunAt"] is not None]
        self.act("schedule.timeout", {"id": fired[pick % len(fired)]})

    def has_deleted(self) -> bool:
        return bool(self.deleted)

    @precondition(has_deleted)
    @rule(pick=st.integers(0, 9))
    def fire_deleted_schedule(self, pick: int) -> None:
        """A timeout that was in flight when its schedule was deleted."""
        self.act("schedule.timeout", {"id": self.deleted[pick % len(self.deleted)]})

    @rule()
    def tick(self) -> None:
        self.act("tick", {})

    @rule(story=st.sampled_from(SCHEDULE_STORIES), pick=st.integers(0, 9))
    def schedule_story(self, story: str, pick: int) -> None:
        """Paths a random walk rarely finds in 50 steps: a timeout for a schedule that is not
        there (deleted, or never created); a get of one that is; a search page with more
        after it; near the end of time, a schedule whose next occurrence would lie past
        MAX_TIME fired (nextRunAt = NEVER); a yearly schedule caught up after an outage of
        about two years."""
        if story == "timeout_for_no_schedule":
            gone = [id for id in self.deleted if id not in {s["id"] for s in self.schedules()}]
            self.act("schedule.timeout", {"id": gone[pick % len(gone)] if gone else NEAR_MISS_IDS[-1]})
        elif story == "get_a_schedule":
            ids = [s["id"] for s in self.schedules()] or list(SCHEDULE_IDS)
            self.act("schedule.get", {"id": ids[pick % len(ids)]})
        elif story == "a_page_of_schedules":
            self.pages_of_schedules()
        elif story == "outage_of_years":
            # in a run with no schedule yet, a yearly one is left unticked for more minutes than
            # one catch-up may fire occurrences (MAX_CATCH_UP_OCCURRENCES), yet owes only two.
            # (Deleting the run's other schedules first would leave the timeouts of a target
            # that forgets to disarm them due, and such a target's tick loops forever in-process.)
            if self.schedules():
                return
            self.act("schedule.create", {"id": SCHEDULE_IDS[pick % len(SCHEDULE_IDS)], "cron": "@yearly",
                                         "promiseId": TEMPLATES[0], "promiseTimeout": MINUTE,
                                         "promiseParam": PARAMS[0], "promiseTags": TARGET})
            yearly = self.schedules()
            if yearly and yearly[0]["nextRunAt"] + MAX_CATCH_UP_OCCURRENCES * MINUTE <= MAX_TIME:
                self.move_clock(yearly[0]["nextRunAt"] + MAX_CATCH_UP_OCCURRENCES * MINUTE)
                self.act("tick", {})
        else:  # the end of time: a run with no schedule may jump there
            if self.now < LAST_YEAR_ROLLOVER and not self.schedules():
                self.move_clock(LAST_YEAR_ROLLOVER)
            if self.now < LAST_YEAR_ROLLOVER:
                return
            id = SCHEDULE_IDS[pick % len(SCHEDULE_IDS)]
            self.act("schedule.create", {
                "id": id, "cron": "@yearly" if self.now < LAST_YEAR else "59 23 31 12 *",
                "promiseId": TEMPLATES[0], "promiseTimeout": MINUTE, "promiseParam": PARAMS[0],
                "promiseTags": TARGET})
            mine = [s for s in self.schedules() if s["id"] == id]
            if mine and mine[0]["nextRunAt"] <= MAX_TIME:
                self.move_clock(mine[0]["nextRunAt"])
                self.act("tick", {})

    def pages_of_schedules(self) -> None:
        """Pages of schedules (yearly, `?` for any weekday): one of two or more, with a limit
        of 1. The deployed profile answers searches, so there the book is filled past a
        default page (DEP-04): a search with no limit returns 10 and a cursor, one with a
        limit of 2 a full page with more after it, and its cursor the rest."""
        create = {"cron": "0 0 1 1 ?", "promiseId": TEMPLATES[0], "promiseTimeout": MINUTE,
                  "promiseParam": PARAMS[0], "promiseTags": TARGET}
        wanted = PAGE_FILL if self.profile == "deployed" else 2
        taken = {s["id"] for s in self.schedules()}
        ids = [id for id in SCHEDULE_IDS + tuple(f"page{n}" for n in range(PAGE_FILL)) if id not in taken]
        for id in ids[:max(0, wanted - len(taken))]:
            self.act("schedule.create", {"id": id, **create})
        self.act("schedule.search", {"limit": 1})
        if self.profile == "deployed":
            self.act("schedule.search", {})
            cursor = self.act("schedule.search", {"limit": 2}).get("cursor")
            if isinstance(cursor, str):
                self.act("schedule.search", {"limit": 2, "cursor": cursor})

    # --- state invariants (on the oracle, whose state the target has matched) ---

    def check_properties(self) -> None:
        for holds in spec.STATE_INVARIANTS:
            if not holds(self.state):
                raise AssertionError(f"{holds.__name__} broken: {(holds.__doc__ or '').splitlines()[0]}")

"""Resonate schedules for the harness: model and implementation as JSON targets, and the
lockstep machine that drives them through schedules, promises and a clock that jumps.

The environment is part of the machine: the clock only moves forward, sometimes a little,
sometimes to the edge of the next tick, sometimes far enough to miss many ticks; timeouts
fire one by one, all at once (`tick`), again, or for a schedule already deleted. After every
step the properties of spec/schedules_properties.py are checked on the oracle's states."""

from __future__ import annotations

import calendar
import datetime as dt
import os
import shutil
import tempfile
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from duespec.impl.schedules import ScheduleServer, occurrences_due
from duespec.impl.schedules_sql import StoreInUse
from duespec.limits import MAX_CATCH_UP_OCCURRENCES, LimitExceeded
from duespec.campaigns.lockstep import LockstepMachine, state_diff
from duespec.model import schedules as model
from duespec.model.schedules.clock import MAX_DURATION, MAX_INSTANT, MAX_TIME, next_run
from duespec.model.schedules.expand import expand
from duespec.coverage import reached
from duespec.spec import cron_dialect
from duespec.spec import schedules_properties as spec
from duespec.spec.cron_dialect import ALIASES
from duespec.systems import System
from duespec.targets.interface import Json

PROFILES = ("lean", "server", "deployed")
DEFAULT_RETRY_TIMEOUT = 5000

MINUTE, HOUR, DAY = 60_000, 3_600_000, 86_400_000


def config_of(config: dict[str, Json]) -> model.Config:
    """operations.md config: {"profile": "lean" | "server" | "deployed", "retry_timeout": int}."""
    unknown = set(config) - {"profile", "retry_timeout"}
    if unknown:
        raise ValueError(f"schedules config takes profile and retry_timeout, not {sorted(unknown)}")
    profile = config.get("profile", "lean")
    retry_timeout = config.get("retry_timeout", DEFAULT_RETRY_TIMEOUT)
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    if type(retry_timeout) is not int or not 1 <= retry_timeout <= MAX_DURATION:
        raise ValueError(f"retry_timeout must be an integer in [1, {MAX_DURATION}] (0 would re-arm a "
                         f"retry due at once, forever), got {retry_timeout!r}")
    return model.Config(retry_timeout=retry_timeout, profile=profile)


class ModelTarget:
    """The reference model behind the JSON contract."""

    def __init__(self) -> None:
        self.state: model.ServerState | None = None
        #: observe() of the current state: only step() and reset() change it.
        self.observed: dict[str, Json] | None = None

    def reset(self, config: dict[str, Json]) -> None:
        self.state, self.observed = model.new_state(config_of(config)), None

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        assert self.state is not None, "reset() first"
        if op in ("tick", "schedule.timeout"):
            refuse_long_catch_up(self.state, op, args, now)
        self.observed = None
        return model.step(self.state, op, args, now)

    def observe(self) -> dict[str, Json]:
        assert self.state is not None, "reset() first"
        if self.observed is None:
            self.observed = model.observe(self.state)
        return self.observed

    def close(self) -> None:
        self.state = None


def refuse_long_catch_up(state: model.ServerState, op: str, args: Json, now: Json) -> None:
    """LimitExceeded, before the model starts, if this step would fire more than
    MAX_CATCH_UP_OCCURRENCES occurrences in all (the model runs ~10^4 a second, so a
    minutely schedule ticked at year 9999 would take days). The model itself has no bound:
    this is the harness's, documented in README.md ("Limits"); the machine stays far below."""
    if type(now) is not int or not isinstance(args, dict) or now > MAX_TIME:
        return  # the contract answers 400 and fires nothing
    if op == "tick":
        owed = [state.schedules[id] for id, due in state.schedule_timeouts.items()
                if due <= now and id in state.schedules]
    else:
        found = state.schedules.get(args["id"]) if isinstance(args.get("id"), str) else None
        owed = [found] if found is not None else []
    owed = [s for s in owed if s.next_run_at <= now]
    if sum((now - s.next_run_at) // MINUTE + 1 for s in owed) <= MAX_CATCH_UP_OCCURRENCES:
        return  # a cron fires at most once a minute: no need to count
    budget = MAX_CATCH_UP_OCCURRENCES
    for s in owed:
        budget -= occurrences_due(s.cron, s.next_run_at, now, budget)
        if budget < 0:
            raise LimitExceeded(f"{op} at now={now} would fire more than {MAX_CATCH_UP_OCCURRENCES:,} "
                                f"schedule occurrences (the limit on one step's catch-up)")


#: How often the `server` profile's store file is reopened, in steps (see ImplTarget).
RESTART_EVERY = 16
#: Where those store files live: in memory where the machine has a tmpfs (a file store
#: syncs every commit to disk), else the system's temporary directory.
STORE_DIR = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


class ImplTarget:
    """duespec.impl.schedules behind the JSON contract.

    The lean and deployed profiles run on an in-memory store. The server profile, the one
    that reads like a running server, runs on a store file that is reopened every
    RESTART_EVERY steps as a restarted server would reopen it: alternately naming its
    config and naming none (the file keeps its own). Before each reopen a second server
    must be refused the open file (StoreInUse, naming this process). The answers and the
    state after a reopen are compared like any others.

    `server` may be a subclass of ScheduleServer: the mutation tests plant bugs that way."""

    def __init__(self, server: type[ScheduleServer] = ScheduleServer) -> None:
        self.server_class = server
        self.server: ScheduleServer | None = None
        self.scratch: str | None = None
        self.path, self.config, self.steps = ":memory:", model.Config(), 0

    def reset(self, config: dict[str, Json]) -> None:
        self.close()
        self.config, self.steps = config_of(config), 0
        if self.config.profile == "server":
            self.scratch = tempfile.mkdtemp(prefix="duespec-store-", dir=STORE_DIR)
            self.path = os.path.join(self.scratch, "store.db")
        try:
            self.server = self.open(named=True)
        except BaseException:  # a server that cannot open leaves no store file behind
            self.close()
            raise

    def open(self, *, named: bool) -> ScheduleServer:
        if not named:
            return self.server_class(self.path)
        return self.server_class(self.path, profile=self.config.profile, retry_timeout=self.config.retry_timeout)

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        assert self.server is not None, "reset() first"
        self.steps += 1
        if self.scratch is not None and self.steps % RESTART_EVERY == 0:
            self.restart(named=self.steps % (2 * RESTART_EVERY) == 0)
        return self.server.handle(op, args, now)

    def restart(self, *, named: bool) -> None:
        assert self.server is not None
        try:
            second = self.open(named=True)
        except StoreInUse as refused:
            if f"pid {os.getpid()}" not in str(refused):
                raise AssertionError(f"StoreInUse does not name the owner (pid {os.getpid()}): {refused}") from None
        else:
            second.close()
            raise AssertionError(f"a second server opened the store file {self.path} while it was open")
        self.server.close()
        self.server = None
        self.server = self.open(named=named)

    def observe(self) -> dict[str, Json]:
        assert self.server is not None, "reset() first"
        return self.server.observe()

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch, self.path = None, ":memory:"


# --- the values the machine draws: realistic most of the time, the edges and garbage some ---

#: 2025-01-01T00:00:00Z.
EPOCH_2025 = 1_735_689_600_000
#: Where a run's clock starts: minute, month, year and century edges, leap days that are
#: (2000, 2028) and are not (2100), and the last minutes before the end of time.
STARTS = (
    EPOCH_2025,
    59_999,                                  # 1970-01-01T00:00:59.999Z: 1 ms before a minute boundary, the epoch's first day
    1_740_787_140_000,                       # 2025-02-28T23:59:00Z: month end, no leap day
    1_835_387_940_000,                       # 2028-02-28T23:59:00Z: the night before a leap day
    1_767_225_540_000,                       # 2025-12-31T23:59:00Z: year end
    951_782_340_000,                         # 2000-02-28T23:59:00Z: a century year that leaps
    951_868_740_000,                         # 2000-02-29T23:59:00Z: its leap day rolls into March
    4_107_542_340_000,                       # 2100-02-28T23:59:00Z: a century year that does not
    4_102_444_740_000,                       # 2099-12-31T23:59:00Z: the century rolls over
    1_746_057_480_000,                       # 2025-04-30T23:58:00Z: a 30-day month ends (a day's last minute next)
    253_370_678_400_000,                     # 9998-12-31T00:00:00Z: the last year rollover
    MAX_TIME - 3 * 60_000 + 1,               # 9999-12-31T23:57:00Z: the end of time
)
LAST_YEAR_ROLLOVER, LAST_YEAR = 253_370_678_400_000, 253_370_764_800_000  # 9998-12-31, 9999-01-01
SCHEDULE_STORIES = ("timeout_for_no_schedule", "get_a_schedule", "a_page_of_schedules", "end_of_time",
                    "outage_of_years")

SCHEDULE_IDS = ("nightly", "poll", "report")
#: Schedules the deployed profile's page story fills to: past the default page of 10.
PAGE_FILL = 11
#: What a run starts with (`some_work_to_start_with`).
STARTING_WORK = ("none", "promise", "task", "both")
#: The id `sends_each_edge_of_one_field` creates and deletes its accepted crons under.
EDGE_ID = "edge"
#: Near misses of the ids above and of each other: a store that folds case, trims,
#: normalizes Unicode or matches prefixes answers them as the original.
NEAR_MISS_IDS = ("Nightly", "nightly ", "night", "caf\u00e9", "cafe\u0301")
#: A hand-picked spread of the dialect (spec/cron.md); `cron_expressions` draws the rest.
CRONS = (
    "* * * * *",            # every minute
    "0 * * * *",            # hourly
    "*/7 * * * *",          # minutes 0,7,...,56: the step does not divide the hour
    "30 9 * * mon-fri",     # named days
    "0 0 15 12 mon-fri",    # December only, both day fields: after its last fire, next December 1
    "0 0 31 * *",           # month end, skips short months
    "0 0 29 2 *",           # leap day
    "59 23 28-31 * *",
    "@hourly",
)
INVALID_CRONS = ("60 * * * *", "* * * *", "0 0 30 2 *", "every minute", "", 5, "5-5 * * * *",
                 "*/0 * * * *", "*/61 * * * *", "0 0 ? * ?x", "@fortnightly", "0 0 * * 8", "0 0 1-31 * *", None)
#: Each field's crons in turn (SR-05): the forms the dialect rejects for what is wrong in
#: that field (spec/cron.md C-03, C-04, C-05, C-07: one past either end of the field as a
#: value, a range's end, a step or a step's start; equal and reversed ranges; a name of
#: another field or none; a full day field not written `*`; extensions), and the accepted
#: forms at the field's ends. As picks among the pool's values each was rare: a parser that
#: takes one value too many (minute 60, day 32) passed a default campaign.
FIELD_EDGES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "minute": (("60 * * * *", "0-60 * * * *", "*/61 * * * *", "60/5 * * * *", "005 * * * *",
                "5-5 * * * *", "50-10 * * * *", "jan * * * *", "? * * * *", "*/ * * * *"),
               ("59 * * * *", "58-59 * * * *", "*/60 * * * *", "59/15 * * * *", "0-59/30 * * * *", "*/1 * * * *")),
    "hour": (("0 24 * * *", "0 0-24 * * *", "0 */25 * * *", "0 24/2 * * *", "0 12-12 * * *",
              "0 mon * * *", "0 1- * * *"),
             ("0 23 * * *", "0 22-23 * * *", "0 */24 * * *", "0 23/5 * * *", "0 0-23/12 * * *", "0 */1 * * *")),
    "day-of-month": (("0 0 0 * *", "0 0 32 * *", "0 0 0-5 * *", "0 0 1-32 * *", "0 0 */32 * *",
                      "0 0 32/2 * *", "0 0 1-31 * *", "0 0 */1 * *", "0 0 L * *", "0 0 15W * *",
                      "0 0 jan * *", "0 0 ?,1 * *"),
                     ("0 0 31 * *", "0 0 1 * *", "0 0 30-31 * *", "0 0 */31 * *", "0 0 31/7 * *")),
    "month": (("0 0 1 0 *", "0 0 1 13 *", "0 0 1 0-6 *", "0 0 1 1-13 *", "0 0 1 */13 *", "0 0 1 13/2 *",
               "0 0 1 jam *", "0 0 1 mon *", "0 0 1 ? *", "0 0 30 2 *", "0 0 31 4,6 *", "0 0 1 dec-jan *"),
              ("0 0 1 12 *", "0 0 1 1 *", "0 0 1 11-12 *", "0 0 1 */12 *", "0 0 1 DEC *")),
    "day-of-week": (("0 0 * * 8", "0 0 * * 0-8", "0 0 * * */8", "0 0 * * 7/2", "0 0 * * 7-7",
                     "0 0 * * sat-sun", "0 0 * * 0-6", "0 0 * * mon-sun", "0 0 * * 1#2", "0 0 * * 5L",
                     "0 0 * * jan", "0 0 * * 1-7"),
                    ("0 0 * * 7", "0 0 * * 0", "0 0 * * 6-7", "0 0 * * */7", "0 0 * * 6/7")),
    "whole": (("* * * *", "* * * * * *", "*,5 * * * *", "0\n0 * * * *", "@reboot", "@every 5m",
               "@fortnightly", "0 0 * * * 2026", "0  0 * * *x", "@daily 0"),
              (" @daily\t", "0\t0  * * *", "@YEARLY")),
}
TEMPLATES = ("{{.id}}.{{.timestamp}}", "{{.id}}-{{.timestamp}}", "tick-{{.timestamp}}",
             "{{.timestamp}}")
INVALID_TEMPLATES = ("{{.id}}", "fixed", 7, "{{ .timestamp }}", "{{.Timestamp}}", None)
PROMISE_TIMEOUTS = (0, 1, 1000, MINUTE, HOUR, DAY, 30 * DAY, MAX_DURATION)
#: Not timeouts: out of range, and the wrong types (an integral float, a numeric string).
INVALID_TIMEOUTS = (-1, 1.5, True, MAX_DURATION + 1, "60000", 60000.0, None, [MINUTE], {"ms": MINUTE})
PARAMS = ({"headers": {}, "data": None}, {"headers": {"traceparent": "00-1"}, "data": "eyJ4IjoxfQ=="})
INVALID_PARAMS = ({"data": None}, {"headers": [], "data": None}, {"headers": {}, "data": 3},
                  {"headers": {"k": 1}, "data": None}, {"headers": {}, "data": None, "x": 1}, None)
TARGET = {"resonate:target": "poll://any@workers"}
TAGS = (
    {},
    TARGET,
    {"resonate:timer": "true"},
    {**TARGET, "resonate:timer": "true"},
    {**TARGET, "resonate:delay": "0"},
    {**TARGET, "resonate:delay": str(EPOCH_2025 + 2 * HOUR)},
    {**TARGET, "resonate:delay": str(EPOCH_2025 + 400 * DAY)},
    {**TARGET, "resonate:delay": str(MAX_TIME)},          # the end of time
    {**TARGET, "resonate:delay": str(MAX_INSTANT)},       # the last valid delay
    {**TARGET, "resonate:delay": "0005"},                 # leading zeros are still digits
)
#: promise.create only: a delay one hour after the clock, wherever the clock is.
DELAYED_AN_HOUR = {**TARGET, "resonate:delay": "in an hour"}
INVALID_TAGS = ({"resonate:delay": "-5"}, {"resonate:delay": "soon"}, {"k": 1}, [],
                {"resonate:delay": str(MAX_INSTANT + 1)}, {"resonate:delay": "9" * 5000},
                {"resonate:delay": "+5"},
                {"resonate:delay": " 5"}, {"resonate:delay": "5.0"}, {"resonate:delay": ""},
                {"k": None}, {"k": {"nested": "x"}}, None)
INVALID_SCHEDULE_IDS = ("a.b", "", "x{y}", 7, None, 1.0, ["nightly"], {"id": "nightly"})
PROMISE_IDS = ("p1", "p2", "nightly.1")
#: Each run draws its config: retry_timeout from these (None: the key is left out, so the
#: default of 5000 applies), the profile is the campaign's.
RETRY_TIMEOUTS = (DEFAULT_RETRY_TIMEOUT, None, 1, MINUTE, MAX_TIME, MAX_DURATION)
#: Instants sent with a malformed request (None: the clock's own, valid).
ODD_NOWS = (None, -1, MAX_TIME + 1, 1.5, True, "now as float", "now as string", "null")

#: Every value the schedules campaign sends, by argument: what a target author must answer.
VALUE_SPACE: dict[str, str] = {
    "config": f"profile: the campaign's; retry_timeout: {[t for t in RETRY_TIMEOUTS if t is not None]} "
              "or left out",
    "now": "starts at a minute, month, year or century edge (1970's first minute, 2000, 2025, 2028, "
           "2099-2100), "
           "or minutes before 9999 and before MAX_TIME; moves forward by 1 ms to 400 days, to 1 ms "
           "before/at/after a tick, exactly to the tick after the next, and to 00:00 on the 28th of a "
           "month up to 13 months on, and a run "
           "with no schedule may leap to 9998-12-31; malformed requests: -1, MAX_TIME + 1, 1.5, true, null, "
           "the clock as a float or a numeric string",
    "schedule id": f"{list(SCHEDULE_IDS)}, near misses {list(NEAR_MISS_IDS)}; invalid "
                   f"{list(INVALID_SCHEDULE_IDS)}",
    "cron": "the whole dialect of spec/cron.md (`cron_expressions`: every alias in any case, "
            "month and weekday names, `?`, values, ranges, steps, lists, both day fields "
            f"restricted, dates that rarely or never occur, the 29th-31st of one month) and "
            f"{list(CRONS)}; invalid "
            f"{list(INVALID_CRONS)}; and each field's edges in turn (`FIELD_EDGES`): "
            + "; ".join(f"{field} rejected {list(rejected)}, accepted {list(accepted)}"
                        for field, (rejected, accepted) in FIELD_EDGES.items()),
    "promiseId": f"{list(TEMPLATES)}; invalid {list(INVALID_TEMPLATES)}",
    "promiseTimeout": f"{list(PROMISE_TIMEOUTS)}; invalid {list(INVALID_TIMEOUTS)}",
    "timeoutAt": "now - 1 minute, -1 ms, +0, +1 ms, +1 minute, +1 day (clamped at 0)",
    "param": f"{list(PARAMS)}; invalid {list(INVALID_PARAMS)}",
    "tags": f"{list(TAGS)}, a delay one hour ahead; invalid {list(INVALID_TAGS)}",
    "promise id": f"{list(PROMISE_IDS)} and the ids a coming tick expands to",
}


@st.composite
def cron_expressions(draw: st.DrawFn) -> str:
    """A cron from the whole dialect: each field a `*`, value, name, range, step or list
    (`?` in the day fields), sometimes an alias in any case. Drawn expressions the dialect
    rejects (a range with equal ends, a date that never occurs) are sent as they are:
    the answer is a 400, which is compared too."""
    shape = draw(st.integers(0, 7))
    if shape == 0:
        alias = draw(st.sampled_from(sorted(ALIASES)))
        return draw(st.sampled_from((alias, alias.upper(), alias.capitalize())))
    # `*/60`, `*/24`: a step of the whole cycle (once an hour, once a day); `*/0`: rejected (C-03)
    minute = draw(_field(0, 59, ("0", "*/15", "30", "5/20", "0,30", "10-20/5", "59", "*/60", "*/0")))
    hour = draw(_field(0, 23, ("0", "*", "9-17", "*/6", "23", "0,12", "*/24")))
    weekday = draw(st.sampled_from(("*", "*", "?", "mon-fri", "sun", "7", "0", "1,3,5", "SAT,sun",
                                    "*/2", "5")))
    if shape <= 2:
        # A month's last days in that one month: each month's length is what decides
        # whether it fires (or whether the dialect refuses it as a date that never occurs).
        day = draw(st.sampled_from(("29", "30", "31", "28-31", "30,31")))
        return f"{minute} {hour} {day} {draw(_one_month())} {draw(st.sampled_from(('*', '?', weekday)))}"
    day = draw(_field(1, 31, ("*", "?", "1", "15", "28-31", "31", "29", "1,15", "*/10", "30")))
    month = draw(st.one_of(st.sampled_from(("*", "*", "2", "feb", "jan-jun", "*/3", "FEB,aug", "12",
                                            "4,6,9,11", "Dec")), _one_month()))
    return f"{minute} {hour} {day} {month} {weekday}"


def _one_month() -> st.SearchStrategy[str]:
    """One month, as a number or a name in any case."""
    return st.tuples(st.integers(1, 12), st.sampled_from((str, str.lower, str.upper, str.capitalize))).map(
        lambda pair: str(pair[0]) if pair[1] is str else pair[1](MONTH_NAMES[pair[0] - 1]))


MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _field(low: int, high: int, common: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(common), st.integers(low, high).map(str),
                     st.tuples(st.integers(low, high), st.integers(low, high)).map(
                         lambda pair: f"{min(pair)}-{max(pair)}"),
                     # up to one past the field's size: the first step the dialect rejects
                     st.integers(1, high - low + 2).map(lambda step: f"*/{step}"))


def cron_regimes(cron: str) -> list[str]:
    """The dialect features a cron uses (spec/schedules.md SR-01), for the coverage report."""
    expression = cron_dialect.parse(cron)
    text = cron.strip(" \t")
    fields = [] if text.startswith("@") else text.split()
    found = ["alias"] if text.startswith("@") else []
    for feature, present in (("names", any(c.isalpha() for c in "".join(fields))),
                             ("question_mark", "?" in text), ("range", "-" in text),
                             ("step", "/" in text), ("list", "," in text)):
        if present:
            found.append(feature)
    if not expression.any_day and not expression.any_weekday:
        found.append("both_day_fields")
    if expression.any_weekday and min(expression.days) >= 29:
        found.append("rare_date")
    return found


def instant_regimes(now: int) -> list[str]:
    """The calendar edges an instant is on (spec/schedules.md SR-02)."""
    moment = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=now)
    found = []
    if moment.month == 2 and moment.day == 29:
        found.append("leap_day")
    if moment.year in (2000, 2100) and moment.month <= 3:
        found.append("century_year")
    if moment.day == calendar.monthrange(moment.year, moment.month)[1]:
        found.append("month_end")
    if now > MAX_TIME - DAY:
        found.append("end_of_time")
    return found


#: Promise and task handlers: ids, workers, leases (a few ms, a second, a minute: the clock's
#: moves lapse them), what a caller settles to, and malformed requests.
TASK_IDS = ("t1", "t2", "p1")
#: A promise the machine creates for a task to suspend on when no other is pending.
AWAITED_ID = "awaited"
PIDS = ("w1", "w2")
TTLS = (0, 1000, MINUTE, HOUR)
SETTLE_STATES = ("resolved", "rejected", "rejected_canceled")
TASK_STORIES = ("lease_lapses", "resumed_by_settle", "resumed_by_timeout", "resume_buffered",
                "fulfil_resumes_another", "stale_worker", "halt_twice_then_continue",
                "fence_then_create_on_untargeted", "fulfilled_before_its_resume")
#: One malformed request per op, and the two searches (501 whatever the args).
ODD_TASK_REQUESTS = (
    ("promise.settle", {"id": "t1", "state": "pending", "value": PARAMS[0]}),
    ("promise.settle", {"id": "t1", "state": "resolved"}),
    ("promise.register_callback", {"awaited": "", "awaiter": "t1"}),
    ("promise.register_listener", {"awaited": "t1", "address": 7}),
    ("task.get", {"id": ["t1"]}),
    ("task.create", {"pid": "w1", "ttl": -1, "action": {}}),
    ("task.acquire", {"id": "t1", "version": True, "pid": "w1", "ttl": 0}),
    ("task.acquire", {"id": "t1", "version": -1, "pid": "w1", "ttl": 0}),
    ("task.fence", {"id": "t1", "version": 1, "action": {"kind": "drop", "id": "t1"}}),
    ("task.heartbeat", {"pid": "w1", "tasks": [{"id": "t1"}]}),
    ("task.suspend", {"id": "t1", "version": 1, "actions": [{"awaited": "p1"}]}),
    ("task.fulfill", {"id": "t1", "version": 1, "action": {"id": "t1", "state": "rejected_timedout",
                                                           "value": PARAMS[0]}}),
    ("task.release", {"id": "t1"}),
    ("task.halt", None),
    ("task.continue", {"id": ""}),
    ("promise.search", {}), ("promise.search", {"state": "pending", "limit": 10}),
    ("task.search", {}), ("task.search", {"state": "acquired", "cursor": "t1"}),
)

#: Most catch-up occurrences one clock move may owe, over all schedules: bounds a step's work.
MAX_OWED_PER_JUMP = 60
#: Promises a run may accumulate before the clock stops short of further ticks: every step
#: observes and compares the whole state, so this bounds a run's work.
MAX_PROMISES_PER_RUN = 150


def pool(common: tuple[Any, ...], invalid: tuple[Any, ...], one_in: int = 30) -> st.SearchStrategy[Any]:
    """An invalid value about once in `one_in` draws, as one choice that shrinks to common[0]:
    the common values are repeated so that they outweigh the invalid ones."""
    repeat = max(1, round((one_in - 1) * len(invalid) / len(common)))
    return st.sampled_from(common * repeat + invalid)


class SchedulesMachine(LockstepMachine):
    """schedule.create/get/delete/search, promise.create/get, and the environment."""

    system = "schedules"

    def __init__(self) -> None:
        super().__init__()
        self.profile = self.config.get("profile", "lean")
        self.now = EPOCH_2025
        self.deleted: list[str] = []
        self.state = self.oracle_state()

    def act(self, op: str, args: dict[str, Json]) -> dict[str, Json]:
        """One lockstep step, then every transition property on the oracle's before/after."""
        before = self.state
        response = self.call(op, args, self.now)
        self.state = after = self.oracle_state()
        if type(self.now) is int and 0 <= self.now <= MAX_TIME:
            for regime in instant_regimes(self.now):
                reached(f"SR-02.{regime}")
        if op == "schedule.create" and response.get("status") == 200 and not before["schedules"] == after["schedules"]:
            for feature in cron_regimes(args["cron"]):
                reached(f"SR-01.{feature}")
        for prop in spec.TRANSITION_PROPERTIES:
            if not prop(before, self.steps[-1], after, self.profile):
                raise AssertionError(
                    f"{prop.__name__} broken: {(prop.__doc__ or '').splitlines()[0]}\n"
                    f"  step {self.steps[-1]['op']} {self.steps[-1]['args']} at now={self.now}: "
                    f"{self.steps[-1]['result']}\n  changes:\n    "
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
        self.some_work_to_start_with(work, ttl)

    def sends_each_edge_of_one_field(self, field: str) -> None:
        """SR-05: every cron of one field's edges in turn, the other arguments valid: each
        rejected form is a 400 that changes nothing; each accepted one is created (its
        first nextRunAt compared) under an id of its own and deleted again. Part of the
        opening, the field chosen from the opening's own draws: as a rule of its own it
        moved every later draw, and a default campaign then missed a required branch."""
        rejected, accepted = FIELD_EDGES[field]
        create = {"promiseId": TEMPLATES[0], "promiseTimeout": MINUTE, "promiseParam": PARAMS[0],
                  "promiseTags": {}}
        for cron in rejected:
            self.act("schedule.create", {"id": SCHEDULE_IDS[0], "cron": cron, **create})
        for cron in accepted:
            if self.act("schedule.create", {"id": EDGE_ID, "cron": cron, **create})["status"] == 200:
                self.act("schedule.delete", {"id": EDGE_ID})
        reached(f"SR-05.{field.replace('-', '_')}")

    def start_clock(self, start: int, retry_timeout: int | None) -> None:
        config = {key: value for key, value in self.config.items() if key != "retry_timeout"}
        if retry_timeout is not None:
            config["retry_timeout"] = retry_timeout
        if config != self.config:
            self.reconfigure(config)
            self.state = self.oracle_state()
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
        """A due promise timeout if there is one; else one for a promise that is absent,
        settled or not yet due."""
        due = self.due("promiseTimeouts")
        self.act("promise.timeout", {"id": due[pick % len(due)] if due else id})

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
        self.act("promise.register_listener", {"awaited": id, "address": "poll://a"})
        if with_task:
            self.act("promise.settle", {"id": live, "state": "resolved", "value": PARAMS[1]})

    # --- promises and tasks (P-03..P-06, T-01..T-11): settle, callbacks, listeners, the task
    # state machine. Targets are drawn from the oracle's state most of the time (the
    # current holder at its version, a pending promise, a suspended task's awaited) so
    # that runs reach a lease lapsing, a suspension resumed by a settle or a timeout, and
    # listeners unblocked; a stale version, another worker or a name from the pool the rest.

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
        states (a run of 50 steps that must first stumble on a task rarely gets far)."""
        if work in ("promise", "both"):
            self.act("promise.create", {"id": TASK_IDS[2], "timeoutAt": self.now + DAY, "param": PARAMS[0],
                                        "tags": TARGET})
        if work in ("task", "both"):
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

    @rule(op=st.sampled_from(("task.suspend", "task.suspend", "task.fulfill", "task.fence")),
          pick=st.integers(0, 30), off=st.sampled_from((0, 0, 0, -1)),
          awaited=st.lists(st.integers(0, 30), min_size=1, max_size=2), live=st.booleans(),
          state=st.sampled_from(SETTLE_STATES), create=st.booleans(), tags=st.sampled_from(({}, TARGET)))
    def task_work(self, op: str, pick: int, off: int, awaited: list[int], live: bool, state: str,
                  create: bool, tags: Json) -> None:
        """What the holder does (mostly at its version): suspend on pending promises (parked)
        or on any (300, 422), fulfil, or a fenced create or settle."""
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
        that finds its task fulfilled."""
        t = self.holder(pick)
        id, version = t["id"], t["version"]
        if story == "lease_lapses" or pick % 2:
            # a moment later the holder heartbeats (renewed), or a worker that is not the holder does
            self.move_clock(self.now + 1)
            pid = "stranger" if pick % 4 == 1 else t.get("pid") or PIDS[0]
            self.act("task.heartbeat", {"pid": pid, "tasks": [{"id": id, "version": version}]})
            # a renewal shows only in the state (the lease's timeout), which the story's later
            # steps replace or lapse before the rule's own comparison: compare it here
            self.invariants_hold()
        if story == "lease_lapses":
            lease = [x["timeout"] for x in self.state["taskTimeouts"] if x["id"] == id and x["kind"] == 1]
            self.move_clock(lease[0] if lease else self.now + 1)
            self.act("tick", {})
        elif story in ("resumed_by_settle", "resumed_by_timeout"):
            by_timeout = story == "resumed_by_timeout"
            awaited = f"{AWAITED_ID}.{pick}"
            self.act("promise.create", {"id": awaited, "timeoutAt": self.now + MINUTE, "param": PARAMS[0],
                                        "tags": {"resonate:timer": "true"} if by_timeout else {}})
            self.act("promise.register_listener", {"awaited": awaited, "address": "poll://a"})
            self.act("task.suspend", {"id": id, "version": version,
                                      "actions": [{"awaited": awaited, "awaiter": id}]})
            if by_timeout:
                self.move_clock(self.now + MINUTE)
                self.act("tick", {})
            else:
                self.act("promise.settle", {"id": awaited, "state": "resolved", "value": PARAMS[1]})
        elif story == "resume_buffered":
            awaited = f"{AWAITED_ID}.{pick}"
            if not self.live(id):  # no busy task to buffer the resume on (an outage ended them all)
                id = f"{awaited}.busy"
                self.act("task.create", {"pid": PIDS[0], "ttl": HOUR, "action": {
                    "id": id, "timeoutAt": self.now + DAY, "param": PARAMS[0], "tags": TARGET}})
            self.act("promise.create", {"id": awaited, "timeoutAt": self.now + MINUTE, "param": PARAMS[0],
                                        "tags": {}})
            self.act("promise.register_callback", {"awaited": awaited, "awaiter": id})
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
            # the awaited one settles: that resume finds its task fulfilled
            awaited, fenced = f"{AWAITED_ID}.{pick}", f"{AWAITED_ID}.{pick}.fenced"
            self.act("task.get", {"id": id})
            for promise in (awaited, fenced):
                self.act("promise.create", {"id": promise, "timeoutAt": self.now + HOUR, "param": PARAMS[0],
                                            "tags": {}})
            self.act("promise.register_callback", {"awaited": awaited, "awaiter": id})
            self.act("task.fence", {"id": id, "version": version, "action": {
                "kind": "settle", "id": fenced, "state": "resolved", "value": PARAMS[1]}})
            self.act("task.fulfill", {"id": id, "version": version,
                                      "action": {"id": id, "state": "resolved", "value": PARAMS[1]}})
            self.act("promise.settle", {"id": awaited, "state": "resolved", "value": PARAMS[1]})
        else:  # fence_then_create_on_untargeted
            self.act("task.fence", {"id": id, "version": version, "action": {
                "kind": "create", "id": f"{id}.child", "timeoutAt": self.now + MINUTE, "param": PARAMS[0],
                "tags": {}}})
            self.act("task.create", {"pid": PIDS[0], "ttl": MINUTE, "action": {
                "id": f"{id}.child", "timeoutAt": self.now + MINUTE, "param": PARAMS[0], "tags": {}}})

    @rule(request=st.sampled_from(ODD_TASK_REQUESTS))
    def task_odd_requests(self, request: tuple[str, Json]) -> None:
        """The two searches (501 whatever the args), and wrong shapes for every promise and
        task op: 400 and nothing changes."""
        self.act(*request)

    # --- state invariants (on the oracle, whose state the target has matched) ---

    def check_properties(self) -> None:
        for holds in spec.STATE_INVARIANTS:
            if not holds(self.state):
                raise AssertionError(f"{holds.__name__} broken: {(holds.__doc__ or '').splitlines()[0]}")


#: Branches a default campaign reaches in every profile that can take them (checked by
#: tests/test_schedules_machine.py; OUT_OF_REACH says which a profile cannot take, and why).
REQUIRED_TAGS = frozenset({
    "S-01.absent", "S-01.found",
    "S-02.created", "S-02.exists", "S-02.invalid",
    "S-03.absent", "S-03.deleted",
    "S-04.answered",
    "P-01.absent", "P-01.pending", "P-01.projected", "P-01.settled", "P-01.invalid",
    "P-02.pending", "P-02.pending_external", "P-02.dispatched", "P-02.delayed", "P-02.delay_passed",
    "P-02.expired_at_creation", "P-02.expired_at_creation_task", "P-02.exists",
    "P-02.exists_projected", "P-02.invalid",
    "TO-01.absent", "TO-01.not_pending", "TO-01.settled", "TO-01.task_fulfilled",
    "TO-02.occurrence", "TO-02.caught_up",
    "TO-03.absent", "TO-03.fired",
    "ENV-01.promise", "ENV-01.schedule", "ENV-01.idle", "ENV-01.invalid",
    "X-01.first_after_now", "X-01.next_after_cron_time", "X-02.expanded", "X-03.unknown_op",
    "X-04.end_of_time",
    # the readings of the spec: each profile's own branches (the others' are out of its reach)
    "X-05.lean_now_is_cron_time", "X-05.server_now_is_firing_time", "S-04.not_implemented",
    "DEP-01.missing_target", "DEP-02.one_occurrence", "DEP-02.still_owed",
    "DEP-03.pending", "DEP-03.expired_at_firing", "DEP-03.exists",
    "DEP-04.page_with_more", "DEP-04.last_page",
    # every property checked on a step where it says something (not vacuously)
    "SP-01.fired", "SP-02.tick", "SP-03.duplicate", "SP-03.new", "SP-04.delete",
    "SP-05.missing_schedule_fired", "SP-06.fired", "SP-07.refired", "SP-08.expired_at_creation",
    "SP-09.rejected", "SP-10.read", "SP-11.state", "SP-12.state",
    # promises and tasks: every handler's main branch, the guard's refusals, and the paths
    # the brief names (a lease lapsing, a suspension resumed by a settle and by a timeout,
    # listeners unblocked). Not required: TO-04/TO-05's absent/not_* branches (unreachable
    # through tick: SP-17), T-01/T-03..T-08/T-10 `no_promise` and T-02 `no_task` (every
    # task is created with its promise and neither is ever deleted), and the rarer
    # refusals, which the unit tests cover.
    "R-00.resumed", "R-00.buffered", "R-00.fulfilled",
    "TO-01.early", "TO-01.resumed", "TO-01.unblocked",
    "P-03.absent", "P-03.already_settled", "P-03.projected", "P-03.settled", "P-03.resumed",
    "P-03.unblocked", "P-03.invalid",
    "P-04.absent", "P-04.no_awaiter", "P-04.already_settled", "P-04.registered", "P-04.awaiter_done",
    "P-05.absent", "P-05.already_settled", "P-05.registered",
    "P-06.not_implemented",
    "T-01.found", "T-01.projected",
    "T-02.created", "T-02.expired_at_creation", "T-02.no_target", "T-02.fulfilled", "T-02.acquired",
    "T-02.busy",
    # T-03.promise_done (acquire a pending task whose promise is already settled) is rare
    # here and reached by some seeds only: counted when reached, not required.
    "T-03.acquired", "T-03.stale_version", "T-03.wrong_state",
    "T-04.create", "T-04.settle", "T-04.wrong_state",
    "T-05.renewed", "T-05.not_held",
    "T-06.suspended", "T-06.already_settled", "T-06.awaited_absent", "T-06.stale_version",
    "T-07.fulfilled", "T-07.resumed", "T-07.wrong_state",
    "T-08.released", "T-08.stale_version",
    "T-09.halted", "T-09.already_halted", "T-09.fulfilled",
    "T-10.continued", "T-10.not_halted",
    "T-11.not_implemented",
    "TO-04.redispatched", "TO-05.lapsed", "ENV-01.retry", "ENV-01.lease",
    "X-06.settle_state",
    "SP-13.settled_kept", "SP-14.acquired", "SP-14.fenced", "SP-15.fulfilled_kept", "SP-16.callback",
    "SP-16.listener", "SP-17.state",
    # the regimes of spec/schedules.md (SR-01..SR-05)
    "SR-01.alias", "SR-01.names", "SR-01.question_mark", "SR-01.range", "SR-01.step",
    "SR-01.list", "SR-01.both_day_fields", "SR-01.rare_date",
    "SR-02.leap_day", "SR-02.century_year", "SR-02.month_end", "SR-02.end_of_time",
    "SR-03.default_retry_timeout", "SR-03.retry_timeout_one", "SR-03.retry_timeout_set",
    "SR-04.odd_now",
    *(f"SR-05.{field.replace('-', '_')}" for field in FIELD_EDGES),
})

#: Why a profile's campaigns cannot reach a requirement (an ID) or one of its branches (a
#: tag): each a fact of the model, which the report prints beside the requirement and the
#: machine test checks against a default campaign (nothing listed here is ever reached).
_DEPLOYED_ONLY = ("the deployed server's reading (spec/schedules.md, the deployed reading), "
                  "which profile {profile} does not take: there {lean}; the deployed campaign "
                  "and tests/test_schedules_deployed.py check it")
_LEAN_AND_SERVER_READINGS = {
    "DEP-01": "any promiseTags are accepted (S-02)",
    "DEP-02": "tick and a schedule timeout create every owed occurrence at once (TO-02, ENV-01)",
    "DEP-03": "an occurrence is created by P-02 at the now of X-05",
    "DEP-04": "schedule.search is 501 (S-04)",
}
_DEPLOYED_TICK = ("profile deployed's tick is one pass of the due promise and schedule "
                  "timeouts (DEP-02) and fires no task timeout (docs/operations.md tick; "
                  "spec/schedules.md, deviations of deployed), and no op fires a single task "
                  "timeout, so {what} in this profile; the lean and server campaigns reach {it}")
OUT_OF_REACH: dict[str, dict[str, str]] = {
    **{profile: {
        **{id: _DEPLOYED_ONLY.format(profile=profile, lean=lean)
           for id, lean in _LEAN_AND_SERVER_READINGS.items()},
        other: f"profile {other_profile}'s reading of X-05; profile {profile} creates each "
               f"occurrence at {now} (spec/schedules.md X-05)",
    } for profile, other, other_profile, now in (
        ("lean", "X-05.server_now_is_firing_time", "server", "now = cronTime"),
        ("server", "X-05.lean_now_is_cron_time", "lean", "the firing time"))},
    "deployed": {
        "TO-04": _DEPLOYED_TICK.format(what="onTaskRetryTimeout never runs", it="it"),
        "TO-05": _DEPLOYED_TICK.format(what="onTaskLeaseTimeout never runs", it="it"),
        **dict.fromkeys(("ENV-01.retry", "ENV-01.lease"), _DEPLOYED_TICK.format(
            what="tick fires neither a retry nor a lease timeout", it="both")),
        "X-05": "profile deployed replaces both readings of X-05 by the deployed server's "
                "DEP-03 (created at cronTime, expiry judged at the firing time), so catch-up "
                "never takes X-05's branches; the lean and server campaigns reach them",
        "S-04.not_implemented": "profile deployed answers schedule.search as the deployed "
                                "server does (DEP-04), never 501",
    },
}

#: Argument names of each op, exactly as docs/operations.md lists them.
OPERATIONS: dict[str, tuple[str, ...]] = {
    "schedule.create": ("id", "cron", "promiseId", "promiseTimeout", "promiseParam", "promiseTags"),
    "schedule.get": ("id",),
    "schedule.delete": ("id",),
    "schedule.search": ("tags", "limit", "cursor"),
    "promise.create": ("id", "timeoutAt", "param", "tags"),
    "promise.get": ("id",),
    "promise.settle": ("id", "state", "value"),
    "promise.register_callback": ("awaited", "awaiter"),
    "promise.register_listener": ("awaited", "address"),
    "promise.search": ("state", "tags", "limit", "cursor"),
    "task.get": ("id",),
    "task.create": ("pid", "ttl", "action"),
    "task.acquire": ("id", "version", "pid", "ttl"),
    "task.fence": ("id", "version", "action"),
    "task.heartbeat": ("pid", "tasks"),
    "task.suspend": ("id", "version", "actions"),
    "task.fulfill": ("id", "version", "action"),
    "task.release": ("id", "version"),
    "task.halt": ("id",),
    "task.continue": ("id",),
    "task.search": ("state", "limit", "cursor"),
    "schedule.timeout": ("id",),
    "promise.timeout": ("id",),
    "tick": (),
}

SYSTEM = System(
    name="schedules",
    profiles=PROFILES,
    config=lambda profile: {"profile": profile, "retry_timeout": DEFAULT_RETRY_TIMEOUT},
    model=ModelTarget,
    impl=ImplTarget,
    machine=SchedulesMachine,
    catalogue="schedules.md",
    operations=OPERATIONS,
    state_keys=("promises", "tasks", "schedules", "promiseTimeouts", "taskTimeouts",
                "scheduleTimeouts", "outbox"),
    required_tags=REQUIRED_TAGS,
    optional_args={"schedule.search": ("tags", "limit", "cursor")},
    out_of_reach=OUT_OF_REACH,
    tag_catalogues=("cron.md",),
    seeded_draws_only=True,
)


# --- what a linearizability search needs (duespec/systems/concurrent.py) ---

def fork_model(target: ModelTarget) -> ModelTarget:
    """A copy whose state moves on alone: the state's dicts copied, their values shared.
    Every value in them is a frozen dataclass, and every effect of model/schedules/state.py
    replaces an entry rather than editing it, so sharing the values is safe."""
    assert target.state is not None, "reset() first"
    s = target.state
    copy = ModelTarget()
    copy.state = model.ServerState(
        config=s.config, promises=dict(s.promises), tasks=dict(s.tasks), schedules=dict(s.schedules),
        promise_timeouts=dict(s.promise_timeouts), task_timeouts=dict(s.task_timeouts),
        schedule_timeouts=dict(s.schedule_timeouts), outbox=dict(s.outbox))
    copy.observed = target.observed
    return copy


def _ids(value: Json, field: str) -> list[str]:
    if type(value) is not list:
        raise TypeError(field)
    out = []
    for item in value:
        if type(item) is not dict or type(item.get(field)) is not str:
            raise TypeError(field)
        out.append(item[field])
    return out


def concurrent_keys(op: str, args: Json) -> frozenset[str] | None:
    """The state a call may read or write, by key: a promise and its task share their id
    ("p:" + id), a schedule is "s:" + id. A promise's settlement reaches its awaiters'
    tasks and its listeners only through callbacks registered by calls that name both
    ids (promise.register_callback, task.suspend), so those calls join the two keys.
    `tick` and the searches read everything: None. A request whose ids cannot be read is
    None too, though the model would refuse it unread: being wrong here costs speed only."""
    try:
        if type(args) is not dict:
            return None
        if op in ("promise.create", "promise.get", "promise.settle", "promise.timeout", "task.get",
                  "task.acquire", "task.fulfill", "task.release", "task.halt", "task.continue"):
            ids = [args["id"]]
        elif op == "promise.register_callback":
            ids = [args["awaited"], args["awaiter"]]
        elif op == "promise.register_listener":
            ids = [args["awaited"]]
        elif op == "task.create":
            ids = [args["action"]["id"]]
        elif op == "task.fence":
            ids = [args["id"], args["action"]["id"]]
        elif op == "task.heartbeat":
            ids = _ids(args["tasks"], "id")
        elif op == "task.suspend":
            ids = [args["id"], *_ids(args["actions"], "awaited"), *_ids(args["actions"], "awaiter")]
        elif op in ("schedule.create", "schedule.get", "schedule.delete", "schedule.timeout"):
            if type(args["id"]) is not str:
                return None
            return frozenset({"s:" + args["id"]})
        else:
            return None
    except (KeyError, TypeError):
        return None
    if not all(type(id) is str for id in ids):
        return None
    return frozenset("p:" + id for id in ids)


def concurrent_links(calls: list[tuple[str, Json]]) -> list[tuple[str, str]]:
    """A schedule joins every promise id its template could expand to: its occurrences
    create (and so read) those promises (model/schedules/catch_up.py)."""
    from duespec.systems.concurrent import template_pattern

    patterns = []
    for op, args in calls:
        if op == "schedule.create" and type(args) is dict:
            pattern = template_pattern(args.get("promiseId"), args.get("id"))
            if pattern is not None:
                patterns.append((pattern, "s:" + args["id"]))
    if not patterns:
        return []
    promise_keys = {key for op, args in calls for key in (concurrent_keys(op, args) or ())
                    if key.startswith("p:")}
    return [(schedule, key) for pattern, schedule in patterns for key in promise_keys
            if pattern.fullmatch(key[2:])]


def next_timer(observed: dict[str, Json]) -> int | None:
    """The earliest timeout due in an observed state (promise, task and schedule timeouts)."""
    due = [t["timeout"] for key in ("promiseTimeouts", "taskTimeouts", "scheduleTimeouts")
           for t in observed[key]]
    return min(due) if due else None


def _concurrency() -> Any:
    from duespec.systems.concurrent import Concurrency

    return Concurrency(fork=fork_model, keys=concurrent_keys, links=concurrent_links,
                       next_timer=next_timer, tick="tick")


CONCURRENCY = _concurrency()

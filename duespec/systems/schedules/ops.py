"""Every value the schedules campaign sends, in one place (docs/operations.md, "What
duespec sends"): the op table, the argument pools and strategies (the whole cron dialect
among them), the calendar edges a run's clock starts on, and the regimes the coverage
report names. Realistic most of the time, the edges and garbage some of it."""

from __future__ import annotations

import calendar
import datetime as dt
from typing import Any, Callable, Mapping

from hypothesis import strategies as st

from duespec.model.schedules.clock import MAX_DURATION, MAX_INSTANT, MAX_TIME
from duespec.spec import cron_dialect
from duespec.spec.cron_dialect import ALIASES
from duespec.systems import MalformationMatrix
from duespec.systems.schedules.adapter import DAY, DEFAULT_RETRY_TIMEOUT, HOUR, MINUTE
from duespec.systems.schedules.operations import OPERATIONS


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
#: The id `sends_each_edge_of_one_field` and the dialect rule create and delete their accepted
#: crons under: outside ASCII, as a schedule id may be, so every such create also shows that a
#: server takes one (the near misses reach create only now and then).
EDGE_ID = "\u00e9dge"
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
    "malformed now": "every op, in every run's opening, a well-formed request at a now of -1, "
                     "MAX_TIME + 1, a fraction, the clock as a float or a string, null or true "
                     "(one form per op, turning from run to run): MATRIX_CELLS (SR-06)",
    "malformed args": "every op, in every run's opening one block of 8: each argument of "
                      "well_formed(op, now) in each form of ARGUMENT_FORMS, args null, a list, "
                      "a string or a number, each required argument missing, an extra `now` "
                      "key: MATRIX_CELLS (SR-06)",
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
                "fence_then_create_on_untargeted", "fulfilled_before_its_resume", "a_deadline_to_the_ms",
                "awaited_at_its_timeout", "a_fresh_lease_to_the_ms")
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


#: Where each op's request carries the tags of a promise or schedule it creates:
#: a key path into the args (task.fence's only when its action creates).
TAGGED_ARGS: dict[str, tuple[str, ...]] = {
    "schedule.create": ("promiseTags",),
    "promise.create": ("tags",),
    "task.create": ("action", "tags"),
    "task.fence": ("action", "tags"),
}


def with_required_tags(op: str, args: Any, required: Mapping[str, str]) -> Any:
    """The request `args` with `required` put into the tags of every promise and schedule
    it creates (`--require-tag`: a real server that refuses a schedule without a
    `resonate:target`). The tags become the required values; the args are copied, never
    changed. Only a tags value that is an object gets them, and only where the request
    has the shape that carries it (a fence's action only when it creates), so a request
    malformed on purpose (tags null, a list, args that are no object) stays as it was."""
    path = TAGGED_ARGS.get(op)
    if not required or path is None or not isinstance(args, dict):
        return args
    if op == "task.fence" and not (isinstance(args.get("action"), dict) and args["action"].get("kind") == "create"):
        return args
    *outer, key = path
    holder = args
    for name in outer:
        holder = holder.get(name) if isinstance(holder, dict) else None
    if not isinstance(holder, dict) or not isinstance(holder.get(key), dict):
        return args
    shaped = dict(args)
    inner = shaped
    for name in outer:
        inner[name] = dict(inner[name])
        inner = inner[name]
    inner[key] = {**inner[key], **required}
    return shaped


# --- the malformation matrix (docs/protocol.md section 5, SR-06) ---

#: A `now` that is no valid instant, in the forms docs/protocol.md section 5 names, each a
#: function of the clock it replaces (the `resonate:debug_time` header over HTTP).
NOW_FORMS: dict[str, Any] = {
    "negative": lambda now: -1, "past_max_time": lambda now: MAX_TIME + 1,
    "fraction": lambda now: now + 0.5, "float": float, "string": str,
    "null": lambda now: None, "true": lambda now: True}


def well_formed(op: str, now: int) -> dict[str, Any]:
    """A request to `op` that nothing but its `now` (or the one field the matrix makes
    malformed) can make a 400: each argument present and of its rule's shape
    (docs/operations.md "Validation"), about ids the rules use; a schedule carries a
    `resonate:target`, which profile deployed requires (DEP-01)."""
    promise = {"id": PROMISE_IDS[0], "timeoutAt": now + MINUTE, "param": PARAMS[0], "tags": {}}
    task, version = TASK_IDS[0], 1
    return {
        "schedule.create": {"id": SCHEDULE_IDS[0], "cron": "* * * * *", "promiseId": TEMPLATES[0],
                            "promiseTimeout": MINUTE, "promiseParam": PARAMS[0], "promiseTags": TARGET},
        "schedule.get": {"id": SCHEDULE_IDS[0]}, "schedule.delete": {"id": SCHEDULE_IDS[0]},
        "schedule.search": {"tags": {}, "limit": 10, "cursor": None}, "schedule.timeout": {"id": SCHEDULE_IDS[0]},
        "promise.create": promise, "promise.get": {"id": PROMISE_IDS[0]},
        "promise.settle": {"id": PROMISE_IDS[0], "state": "resolved", "value": PARAMS[1]},
        "promise.register_callback": {"awaited": PROMISE_IDS[0], "awaiter": PROMISE_IDS[1]},
        "promise.register_listener": {"awaited": PROMISE_IDS[0], "address": "poll://a"},
        "promise.search": {"state": "pending", "tags": {}, "limit": 10, "cursor": None},
        "promise.timeout": {"id": PROMISE_IDS[0]},
        "task.get": {"id": task}, "task.halt": {"id": task}, "task.continue": {"id": task},
        "task.create": {"pid": PIDS[0], "ttl": MINUTE, "action": {**promise, "id": TASK_IDS[1], "tags": TARGET}},
        "task.acquire": {"id": task, "version": version, "pid": PIDS[0], "ttl": MINUTE},
        "task.fence": {"id": task, "version": version, "action": {"kind": "create", **promise}},
        "task.heartbeat": {"pid": PIDS[0], "tasks": [{"id": task, "version": version}]},
        "task.suspend": {"id": task, "version": version, "actions": [{"awaited": PROMISE_IDS[0], "awaiter": task}]},
        "task.fulfill": {"id": task, "version": version,
                         "action": {"id": task, "state": "resolved", "value": PARAMS[1]}},
        "task.release": {"id": task, "version": version},
        "task.search": {"state": "pending", "limit": 10, "cursor": None},
        "tick": {},
    }[op]


#: `args` that are no object (X-03), each built from the valid args it replaces (the list
#: holds the argument names: the values would carry ids that no namespace reaches inside
#: a list, with --reset none).
ARGS_FORMS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "null": lambda args: None, "list": lambda args: list(args),
    "string": lambda args: "args", "number": lambda args: 1}
#: A string that is no Unicode text: it cannot be stored (docs/operations.md "Validation").
LONE_SURROGATE = "\ud800"


def _text(value: Any) -> str:
    """The valid string a form builds on (a cursor's valid value is null)."""
    return value if isinstance(value, str) else "x"


#: An id (and `pid`, `awaited`, `awaiter`, `address`): a non-empty string of Unicode text.
ID_FORMS: dict[str, Callable[[Any], Any]] = {
    "empty": lambda value: "", "number": lambda value: 7, "null": lambda value: None,
    "list": lambda value: [value], "lone_surrogate": lambda value: _text(value) + LONE_SURROGATE}
#: A search's cursor: a string, or null for none.
CURSOR_FORMS: dict[str, Callable[[Any], Any]] = {
    "number": lambda value: 7, "list": lambda value: [value],
    "lone_surrogate": lambda value: _text(value) + LONE_SURROGATE}


def integer_forms(upper: int | None) -> dict[str, Callable[[Any], Any]]:
    """An integer argument's malformed forms: below 0, one past `upper` (none for a
    version, which has no bound), a fraction, and the value in a wrong type."""
    past = {} if upper is None else {"past_bound": lambda value: upper + 1}
    return {"negative": lambda value: -1, **past, "fraction": lambda value: value + 0.5,
            "float": float, "string": str, "null": lambda value: None, "true": lambda value: True}


#: A search's page size (profile deployed: 1..1000; absent or null is the default, not malformed).
LIMIT_FORMS: dict[str, Callable[[Any], Any]] = {
    "zero": lambda value: 0, "past_bound": lambda value: 1001, "negative": lambda value: -1,
    "fraction": lambda value: value + 0.5, "float": float, "string": str, "true": lambda value: True}
#: Tags: an object of strings, `resonate:delay` decimal digits <= MAX_INSTANT.
TAGS_FORMS: dict[str, Callable[[Any], Any]] = {
    "null": lambda tags: None, "list": lambda tags: [],
    "number_value": lambda tags: {**tags, "k": 1}, "null_value": lambda tags: {**tags, "k": None},
    "lone_surrogate": lambda tags: {**tags, "k": LONE_SURROGATE},
    **{f"delay_{name}": (lambda tags, delay=delay: {**tags, "resonate:delay": delay})
       for name, delay in (("signed", "+5"), ("not_digits", "soon"), ("empty", ""),
                           ("past_bound", str(MAX_INSTANT + 1)))}}
#: A Value: an object of exactly `headers` (an object of strings) and `data` (a string or null).
VALUE_FORMS: dict[str, Callable[[Any], Any]] = {
    "null": lambda value: None, "missing_data": lambda value: {"headers": value["headers"]},
    "extra_key": lambda value: {**value, "x": 1}, "headers_list": lambda value: {**value, "headers": []},
    "header_number": lambda value: {**value, "headers": {"k": 1}},
    "data_number": lambda value: {**value, "data": 3},
    "lone_surrogate": lambda value: {**value, "data": LONE_SURROGATE}}
CRON_FORMS: dict[str, Callable[[Any], Any]] = {
    "empty": lambda cron: "", "number": lambda cron: 5, "null": lambda cron: None,
    "six_fields": lambda cron: cron + " *", "out_of_range": lambda cron: "60 * * * *",
    "lone_surrogate": lambda cron: cron + LONE_SURROGATE}
TEMPLATE_FORMS: dict[str, Callable[[Any], Any]] = {
    "no_timestamp": lambda template: "{{.id}}", "number": lambda template: 7,
    "null": lambda template: None, "lone_surrogate": lambda template: template + LONE_SURROGATE}
#: A settle's state: resolved, rejected or rejected_canceled (X-06).
STATE_FORMS: dict[str, Callable[[Any], Any]] = {
    "pending": lambda state: "pending", "timed_out": lambda state: "rejected_timedout",
    "unknown": lambda state: "done", "number": lambda state: 1, "null": lambda state: None}
#: A task's action that is a promise.create request (task.create; task.fence's with its kind).
CREATE_ACTION_FORMS: dict[str, Callable[[Any], Any]] = {
    "null": lambda action: None, "list": lambda action: list(action.values()),
    "missing_timeoutAt": lambda action: {k: v for k, v in action.items() if k != "timeoutAt"},
    "extra_key": lambda action: {**action, "now": 0}, "empty_id": lambda action: {**action, "id": ""},
    "negative_timeoutAt": lambda action: {**action, "timeoutAt": -1},
    "malformed_param": lambda action: {**action, "param": {"headers": {}}},
    "malformed_tags": lambda action: {**action, "tags": {**action["tags"], "resonate:delay": "soon"}}}
FENCE_ACTION_FORMS: dict[str, Callable[[Any], Any]] = {
    **CREATE_ACTION_FORMS, "unknown_kind": lambda action: {**action, "kind": "delete"},
    "missing_kind": lambda action: {k: v for k, v in action.items() if k != "kind"}}
#: A task's action that is a promise.settle request (task.fulfill).
SETTLE_ACTION_FORMS: dict[str, Callable[[Any], Any]] = {
    "null": lambda action: None, "list": lambda action: list(action.values()),
    "missing_value": lambda action: {k: v for k, v in action.items() if k != "value"},
    "extra_key": lambda action: {**action, "now": 0}, "empty_id": lambda action: {**action, "id": ""},
    "pending": lambda action: {**action, "state": "pending"},
    "malformed_value": lambda action: {**action, "value": {"headers": {}}}}


def list_forms(item_forms: dict[str, Callable[[Any], Any]]) -> dict[str, Callable[[Any], Any]]:
    """A list of objects with exactly the listed keys (task.heartbeat's tasks,
    task.suspend's actions): no list, an item that is no object, one malformed item."""
    return {"null": lambda items: None, "object": lambda items: items[0],
            "item_not_object": lambda items: [1],
            **{f"item_{name}": (lambda items, form=form: [form(items[0])]) for name, form in item_forms.items()}}


TASKS_FORMS = list_forms({
    "missing_version": lambda ref: {"id": ref["id"]}, "extra_key": lambda ref: {**ref, "pid": "w1"},
    "negative_version": lambda ref: {**ref, "version": -1}, "empty_id": lambda ref: {**ref, "id": ""}})
ACTIONS_FORMS = list_forms({
    "missing_awaiter": lambda action: {"awaited": action["awaited"]},
    "extra_key": lambda action: {**action, "id": "x"}, "empty_awaited": lambda action: {**action, "awaited": ""}})
#: The malformed forms of each argument, by its name (an op's own where names collide).
ARGUMENT_FORMS: dict[str, dict[str, Callable[[Any], Any]]] = {
    **dict.fromkeys(("id", "pid", "awaited", "awaiter", "address"), ID_FORMS), "cursor": CURSOR_FORMS,
    "timeoutAt": integer_forms(MAX_INSTANT), **dict.fromkeys(("promiseTimeout", "ttl"), integer_forms(MAX_DURATION)),
    "version": integer_forms(None), "limit": LIMIT_FORMS,
    **dict.fromkeys(("tags", "promiseTags"), TAGS_FORMS),
    **dict.fromkeys(("param", "promiseParam", "value"), VALUE_FORMS),
    "cron": CRON_FORMS, "promiseId": TEMPLATE_FORMS, "state": STATE_FORMS,
    "tasks": TASKS_FORMS, "actions": ACTIONS_FORMS,
    "task.create/action": CREATE_ACTION_FORMS, "task.fence/action": FENCE_ACTION_FORMS,
    "task.fulfill/action": SETTLE_ACTION_FORMS,
}


def argument_forms(op: str, name: str) -> dict[str, Callable[[Any], Any]]:
    return ARGUMENT_FORMS.get(f"{op}/{name}") or ARGUMENT_FORMS[name]


#: Arguments a search may leave out (docs/operations.md marks them `?`): leaving one out,
#: or sending it null, is the default, not a malformation.
OPTIONAL_ARGS: dict[str, tuple[str, ...]] = {
    "schedule.search": ("tags", "limit", "cursor"), "promise.search": ("state", "tags", "limit", "cursor"),
    "task.search": ("state", "limit", "cursor")}


def matrix_fields(op: str) -> dict[str, tuple[str, ...]]:
    """Each field of a request to `op` that can be malformed, with its malformed forms:
    every argument of `well_formed(op, now)`, `now`, `args` as a whole, and its keys (a
    required one left out in turn, or one it does not take, named `now`: the one a careless
    target might read from args)."""
    names = tuple(well_formed(op, 0))
    optional = OPTIONAL_ARGS.get(op, ())
    return {**{name: tuple(form for form in argument_forms(op, name) if not (name in optional and form == "null"))
               for name in names},
            "now": tuple(NOW_FORMS), "args": tuple(ARGS_FORMS),
            "keys": (*(f"missing_{name}" for name in names if name not in optional), "extra_now")}


def malformed(op: str, field: str, form: str, now: int) -> Any:
    """The args of `well_formed(op, now)` with one field (not `now`) in one malformed form."""
    args = well_formed(op, now)
    if field == "args":
        return ARGS_FORMS[form](args)
    if field == "keys":
        if form == "extra_now":
            return {**args, "now": now}
        return {key: value for key, value in args.items() if key != form.removeprefix("missing_")}
    return {**args, field: argument_forms(op, field)[form](args[field])}


#: Every cell: (op, field, form).
MATRIX_CELLS: tuple[tuple[str, str, str], ...] = tuple(
    (op, field, form) for op in OPERATIONS for field, forms in matrix_fields(op).items() for form in forms)
#: The cells one run's opening sends (`sends_a_block_of_the_malformation_matrix`): every
#: cell but the `now` ones (sent in every opening), dealt into MATRIX_BLOCK_COUNT blocks
#: like cards, so that each block holds cells of every op. Few blocks: a default campaign's
#: two hundred runs open in only forty-odd distinct ways (Hypothesis repeats much), which
#: reached each of 8 blocks at least 8 times at seeds 0-2, where 16 blocks left some unsent.
MATRIX_BLOCK_COUNT = 8
_ARGUMENT_CELLS = tuple(cell for cell in MATRIX_CELLS if cell[1] != "now")
MATRIX_BLOCKS: tuple[tuple[tuple[str, str, str], ...], ...] = tuple(
    _ARGUMENT_CELLS[start::MATRIX_BLOCK_COUNT] for start in range(MATRIX_BLOCK_COUNT))
#: The grid the coverage report shows (System.matrix).
MATRIX = MalformationMatrix("SR-06", MATRIX_CELLS, unsent={
    "an unknown op": "an op no row has: the `garbage` rule sends one (`warp`, X-03.unknown_op)",
    "each field of a nested request malformed in every form (a task's action, a heartbeat's "
    "tasks, a suspend's actions)": "the nested request gets a handful of forms of its own "
    "(a key missing or extra, an empty id, a bad instant, Value, tags, kind or state), not its "
    "op's whole grid: the inner request is read by the same checks as the op's own",
    "a schedule id holding `.`, `{` or `}`, and each cron field's rejected forms":
        "schedule.create only, where they are read: `create_schedule` (INVALID_SCHEDULE_IDS) "
        "and SR-05's field edges in every opening",
})

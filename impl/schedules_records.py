"""Records of the Resonate server (Lean `01-objects`) and the checks that admit a request.

Everything a handler stores or answers is built here, so the JSON shapes of
docs/operations.md live in one place. Parsing is the server's own 400 path: a request
that fails a check never reaches a handler, so it can neither read nor change state.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal, Mapping

from duespec.impl.cron import Cron, CronError, compile_cron

Json = Any
Tags = dict[str, str]
PromiseState = Literal["pending", "resolved", "rejected", "rejected_canceled", "rejected_timedout"]
TaskState = Literal["pending", "acquired", "suspended", "halted", "fulfilled"]

#: 9999-12-31T23:59:59.999Z: the last instant a request may name.
MAX_TIME = 253_402_300_799_999
#: Where a schedule with no occurrence left waits: beyond every valid `now`.
NEVER = MAX_TIME + 1
#: The last instant a request may store (timeoutAt, `resonate:delay`): the int64 maximum,
#: what SQLite's INTEGER holds and what real clients send as "never".
MAX_INSTANT = 2**63 - 1
#: The longest duration (promiseTimeout, ttl, retry timeout): now + duration <= MAX_INSTANT.
MAX_DURATION = MAX_INSTANT - MAX_TIME

TIMER_TAG = "resonate:timer"
TARGET_TAG = "resonate:target"
DELAY_TAG = "resonate:delay"
#: Added by the deployed server to each occurrence's promise (profile `deployed`).
SCHEDULE_TAG = "resonate:schedule"
LINEAGE_TAGS = ("resonate:origin", "resonate:branch", "resonate:parent", "resonate:prefix")
#: schedule.search page sizes of the deployed server.
SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT = 10, 1000
ID_PLACEHOLDER = "{{.id}}"
TIMESTAMP_PLACEHOLDER = "{{.timestamp}}"


class InvalidRequest(ValueError):
    """The request breaks a rule of operations.md; the message names which."""


@dataclass(frozen=True, slots=True)
class Value:
    headers: Tags
    data: str | None

    def to_json(self) -> dict[str, Json]:
        return {"headers": dict(self.headers), "data": self.data}


EMPTY_VALUE = Value({}, None)


def is_timer(tags: Mapping[str, str]) -> bool:
    return tags.get(TIMER_TAG) == "true"


def is_external(tags: Mapping[str, str]) -> bool:
    """External promises are the ones the server itself must time out."""
    return TARGET_TAG in tags or is_timer(tags)


def timed_out_state(tags: Mapping[str, str]) -> PromiseState:
    """A timer reaching its timeout has succeeded; anything else has failed."""
    return "resolved" if is_timer(tags) else "rejected_timedout"


@dataclass(frozen=True, slots=True)
class Promise:
    """PromiseObject: the record plus the registrations the server keeps."""

    id: str
    state: PromiseState
    param: Value
    value: Value
    tags: Tags
    timeout_at: int
    created_at: int
    settled_at: int | None
    callbacks: tuple[str, ...] = ()
    listeners: tuple[str, ...] = ()

    def record(self) -> dict[str, Json]:
        return {
            "id": self.id, "state": self.state, "param": self.param.to_json(),
            "value": self.value.to_json(), "tags": dict(self.tags),
            "timeoutAt": self.timeout_at, "createdAt": self.created_at,
            "settledAt": self.settled_at,
        }

    def timed_out(self) -> Promise:
        """Settled by its own timeout, at the instant it was due."""
        return replace(self, state=timed_out_state(self.tags), settled_at=self.timeout_at)

    def seen_at(self, now: int) -> Promise:
        """Projection: a pending promise past its timeout reads as already timed out."""
        if self.state == "pending" and self.timeout_at <= now:
            return self.timed_out()
        return self


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    state: TaskState
    version: int
    resumes: tuple[str, ...] = ()
    ttl: int | None = None
    pid: str | None = None

    def record(self) -> dict[str, Json]:
        """What a response shows: how many resumes are buffered, not which."""
        return {"id": self.id, "state": self.state, "version": self.version,
                "resumes": len(self.resumes), "ttl": self.ttl, "pid": self.pid}


@dataclass(frozen=True, slots=True)
class Schedule:
    id: str
    cron: str
    promise_id: str
    promise_timeout: int
    promise_param: Value
    promise_tags: Tags
    next_run_at: int
    last_run_at: int | None
    created_at: int

    def to_json(self) -> dict[str, Json]:
        return {
            "id": self.id, "cron": self.cron, "promiseId": self.promise_id,
            "promiseTimeout": self.promise_timeout, "promiseParam": self.promise_param.to_json(),
            "promiseTags": dict(self.promise_tags), "nextRunAt": self.next_run_at,
            "lastRunAt": self.last_run_at, "createdAt": self.created_at,
        }


def execute_message(task_id: str, version: int) -> dict[str, Json]:
    return {"kind": "execute", "taskId": task_id, "version": version}


def unblock_message(record: dict[str, Json]) -> dict[str, Json]:
    return {"kind": "unblock", "promise": record}


def outbox_key(address: str, message: Mapping[str, Json]) -> str:
    """One pending message per task, one per (promise, listener): later ones replace."""
    if message["kind"] == "execute":
        return str(message["taskId"])
    return f"{message['promise']['id']}:notify:{address}"


def expand(template: str, schedule_id: str, timestamp: int) -> str:
    """The promise id of one occurrence, filled in as the deployed servers do.

    Schedule ids hold no braces, so the order of the two replacements cannot matter."""
    return template.replace(ID_PLACEHOLDER, schedule_id).replace(TIMESTAMP_PLACEHOLDER, str(timestamp))


def next_run(cron: Cron, after: int) -> int:
    """nextCron, clamped: an occurrence past MAX_TIME never happens."""
    if after >= MAX_TIME:
        return NEVER
    following = cron.next_after(after)
    return following if following <= MAX_TIME else NEVER


# ---- requests -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ScheduleCreate:
    id: str
    cron: str
    promise_id: str
    promise_timeout: int
    promise_param: Value
    promise_tags: Tags
    compiled: Cron


@dataclass(frozen=True, slots=True)
class PromiseCreate:
    id: str
    timeout_at: int
    param: Value
    tags: Tags


def check_unicode(value: Json, where: str = "args") -> None:
    """Every string must be Unicode text: a lone surrogate cannot be stored or sent on."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidRequest(f"{where} holds a lone surrogate, not Unicode text: {value!r}") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            check_unicode(key, where)
            check_unicode(item, f"{where}.{key}" if isinstance(key, str) else where)
    elif isinstance(value, list):
        for item in value:
            check_unicode(item, where)


def check_time(value: Json, name: str, upper: int = MAX_TIME) -> int:
    """An integer in [0, upper]: MAX_TIME for a `now`, MAX_INSTANT for a stored instant,
    MAX_DURATION for a duration added to `now`."""
    if type(value) is not int:
        raise InvalidRequest(f"{name} must be an integer, not {type(value).__name__}")
    if not 0 <= value <= upper:
        raise InvalidRequest(f"{name} must lie in [0, {upper}], got {value}")
    return value


def check_duration(value: Json, name: str) -> int:
    return check_time(value, name, MAX_DURATION)


def delay_ms(delay: str) -> int:
    """A checked `resonate:delay` as its number (leading zeros dropped first: Python counts
    them against its 4,300-digit conversion limit)."""
    return int(delay.lstrip("0") or "0")


def check_args(args: Json, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict[str, Json]:
    if not isinstance(args, dict):
        raise InvalidRequest(f"args must be an object, not {type(args).__name__}")
    missing = [key for key in required if key not in args]
    if missing:
        raise InvalidRequest(f"missing argument(s): {', '.join(missing)}")
    unknown = sorted(str(key) for key in args if key not in required and key not in optional)
    if unknown:
        raise InvalidRequest(f"unknown argument(s): {', '.join(unknown)}")
    return args


def check_id(value: Json, name: str = "id") -> str:
    if not isinstance(value, str):
        raise InvalidRequest(f"{name} must be a string, not {type(value).__name__}")
    if not value:
        raise InvalidRequest(f"{name} must not be empty")
    return value


def check_tags(value: Json, name: str) -> Tags:
    if not isinstance(value, dict):
        raise InvalidRequest(f"{name} must be an object of strings, not {type(value).__name__}")
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise InvalidRequest(f"{name} must map strings to strings; {key!r} maps to {item!r}")
    delay = value.get(DELAY_TAG)
    if delay is not None:
        if not delay or any(char not in "0123456789" for char in delay):
            raise InvalidRequest(f"{name}[{DELAY_TAG!r}] must be decimal digits, got {delay!r}")
        significant = delay.lstrip("0")
        if len(significant) > len(str(MAX_INSTANT)) or delay_ms(delay) > MAX_INSTANT:
            raise InvalidRequest(f"{name}[{DELAY_TAG!r}] must be <= {MAX_INSTANT}, got "
                                 f"{delay[:40]}{'...' if len(delay) > 40 else ''} ({len(delay)} digits)")
    return dict(value)


def check_value(value: Json, name: str) -> Value:
    if not isinstance(value, dict):
        raise InvalidRequest(f"{name} must be an object with exactly 'headers' and 'data', "
                             f"not {type(value).__name__}")
    if set(value) != {"headers", "data"}:
        odd = sorted(map(str, set(value) ^ {"headers", "data"}))
        raise InvalidRequest(f"{name} must be an object with exactly 'headers' and 'data' "
                             f"({', '.join(map(repr, odd))} {'is' if len(odd) == 1 else 'are'} amiss)")
    data = value["data"]
    if data is not None and not isinstance(data, str):
        raise InvalidRequest(f"{name}.data must be a string or null, not {type(data).__name__}")
    return Value(check_tags(value["headers"], f"{name}.headers"), data)


def parse_schedule_create(args: Json, now: int) -> ScheduleCreate:
    args = check_args(args, ("id", "cron", "promiseId", "promiseTimeout", "promiseParam", "promiseTags"))
    schedule_id = check_id(args["id"])
    forbidden = sorted({char for char in schedule_id if char in ".{}"})
    if forbidden:
        raise InvalidRequest(f"schedule id must not contain {' '.join(map(repr, forbidden))}")
    expr = args["cron"]
    if not isinstance(expr, str):
        raise InvalidRequest(f"cron must be a string, not {type(expr).__name__}")
    try:
        compiled = compile_cron(expr)
    except CronError as error:
        raise InvalidRequest(f"cron {expr!r}: {error}") from None
    if next_run(compiled, now) > MAX_TIME:
        raise InvalidRequest(f"cron {expr!r} never fires after now={now} within MAX_TIME")
    template = args["promiseId"]
    if not isinstance(template, str):
        raise InvalidRequest(f"promiseId must be a string, not {type(template).__name__}")
    if TIMESTAMP_PLACEHOLDER not in template:
        raise InvalidRequest(f"promiseId must contain {TIMESTAMP_PLACEHOLDER}, "
                             "so every occurrence gets a promise of its own")
    return ScheduleCreate(
        id=schedule_id, cron=expr, promise_id=template,
        promise_timeout=check_duration(args["promiseTimeout"], "promiseTimeout"),
        promise_param=check_value(args["promiseParam"], "promiseParam"),
        promise_tags=check_tags(args["promiseTags"], "promiseTags"),
        compiled=compiled,
    )


def parse_promise_create(args: Json) -> PromiseCreate:
    args = check_args(args, ("id", "timeoutAt", "param", "tags"))
    return PromiseCreate(
        id=check_id(args["id"]), timeout_at=check_time(args["timeoutAt"], "timeoutAt", MAX_INSTANT),
        param=check_value(args["param"], "param"), tags=check_tags(args["tags"], "tags"),
    )


def parse_id(args: Json) -> str:
    return check_id(check_args(args, ("id",))["id"])


@dataclass(frozen=True, slots=True)
class SearchRequest:
    tags: Tags
    limit: int
    cursor: str | None


def parse_search(args: Json) -> SearchRequest:
    """schedule.search as the deployed server reads it: optional tag filter, limit, cursor."""
    args = check_args(args, (), ("tags", "limit", "cursor"))
    limit = args.get("limit", SEARCH_DEFAULT_LIMIT)
    if type(limit) is not int or not 1 <= limit <= SEARCH_MAX_LIMIT:
        raise InvalidRequest(f"limit must be an integer in [1, {SEARCH_MAX_LIMIT}], got {limit!r}")
    cursor = args.get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise InvalidRequest(f"cursor must be a string, not {type(cursor).__name__}")
    tags = args.get("tags")
    return SearchRequest(tags={} if tags is None else check_tags(tags, "tags"), limit=limit, cursor=cursor)


# ---- promise and task requests ----------------------------------------------------------

#: What a caller may settle a promise to; timing out is the promise's own timeout's job.
SETTLE_STATES: tuple[PromiseState, ...] = ("resolved", "rejected", "rejected_canceled")


@dataclass(frozen=True, slots=True)
class PromiseSettle:
    id: str
    state: PromiseState
    value: Value


@dataclass(frozen=True, slots=True)
class TaskCreate:
    pid: str
    ttl: int
    promise: PromiseCreate


@dataclass(frozen=True, slots=True)
class TaskAcquire:
    id: str
    version: int
    pid: str
    ttl: int


@dataclass(frozen=True, slots=True)
class TaskFence:
    id: str
    version: int
    action: PromiseCreate | PromiseSettle


@dataclass(frozen=True, slots=True)
class TaskHeartbeat:
    pid: str
    tasks: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class TaskSuspend:
    id: str
    version: int
    awaited: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TaskFulfill:
    id: str
    version: int
    settle: PromiseSettle


def check_version(value: Json) -> int:
    if type(value) is not int:
        raise InvalidRequest(f"version must be an integer, not {type(value).__name__}")
    if value < 0:
        raise InvalidRequest(f"version must not be negative, got {value}")
    return value


def check_list(value: Json, name: str) -> list[Json]:
    if not isinstance(value, list):
        raise InvalidRequest(f"{name} must be a list, not {type(value).__name__}")
    return value


def parse_promise_settle(args: Json) -> PromiseSettle:
    args = check_args(args, ("id", "state", "value"))
    state = args["state"]
    if state not in SETTLE_STATES:
        raise InvalidRequest(f"state must be one of {', '.join(SETTLE_STATES)}, got {state!r}")
    return PromiseSettle(check_id(args["id"]), state, check_value(args["value"], "value"))


def parse_register_callback(args: Json) -> tuple[str, str]:
    args = check_args(args, ("awaited", "awaiter"))
    return check_id(args["awaited"], "awaited"), check_id(args["awaiter"], "awaiter")


def parse_register_listener(args: Json) -> tuple[str, str]:
    args = check_args(args, ("awaited", "address"))
    return check_id(args["awaited"], "awaited"), check_id(args["address"], "address")


def parse_task_create(args: Json) -> TaskCreate:
    args = check_args(args, ("pid", "ttl", "action"))
    return TaskCreate(check_id(args["pid"], "pid"), check_duration(args["ttl"], "ttl"),
                      parse_promise_create(args["action"]))


def parse_task_acquire(args: Json) -> TaskAcquire:
    args = check_args(args, ("id", "version", "pid", "ttl"))
    return TaskAcquire(check_id(args["id"]), check_version(args["version"]), check_id(args["pid"], "pid"),
                       check_duration(args["ttl"], "ttl"))


def parse_task_fence(args: Json) -> TaskFence:
    args = check_args(args, ("id", "version", "action"))
    action = args["action"]
    kind = action.get("kind") if isinstance(action, dict) else None
    if kind not in ("create", "settle"):
        raise InvalidRequest("action must be an object whose kind is 'create' or 'settle'")
    inner = {key: item for key, item in action.items() if key != "kind"}
    parsed = parse_promise_create(inner) if kind == "create" else parse_promise_settle(inner)
    return TaskFence(check_id(args["id"]), check_version(args["version"]), parsed)


def parse_task_heartbeat(args: Json) -> TaskHeartbeat:
    args = check_args(args, ("pid", "tasks"))
    refs = [check_args(ref, ("id", "version")) for ref in check_list(args["tasks"], "tasks")]
    return TaskHeartbeat(check_id(args["pid"], "pid"),
                         tuple((check_id(ref["id"]), check_version(ref["version"])) for ref in refs))


def parse_task_suspend(args: Json) -> TaskSuspend:
    args = check_args(args, ("id", "version", "actions"))
    awaited = tuple(parse_register_callback(action)[0] for action in check_list(args["actions"], "actions"))
    return TaskSuspend(check_id(args["id"]), check_version(args["version"]), awaited)


def parse_task_fulfill(args: Json) -> TaskFulfill:
    args = check_args(args, ("id", "version", "action"))
    return TaskFulfill(check_id(args["id"]), check_version(args["version"]), parse_promise_settle(args["action"]))


def parse_task_version(args: Json) -> tuple[str, int]:
    args = check_args(args, ("id", "version"))
    return check_id(args["id"]), check_version(args["version"])

"""Requests (Lean `types.lean` *Req) read from JSON, and the 400 path (spec X-03).

The Lean receives typed requests; JSON must first become one. Every rule of
docs/operations.md "Validation" is checked here, before any handler runs, so a rejected
request neither reads nor changes state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from duespec.coverage import reached
from duespec.model.schedules.clock import MAX_DURATION, MAX_INSTANT, MAX_TIME, next_run
from duespec.model.schedules.expand import TIMESTAMP_PLACEHOLDER
from duespec.model.schedules.state import PromiseObject, Schedule, Tags, TaskObject, Value
from duespec.spec.cron_dialect import validate as validate_cron

Json = Any


class Invalid(ValueError):
    """The request breaks a validation rule; the message names the rule."""


@dataclass(frozen=True)
class IdReq:
    """ScheduleGetReq, ScheduleDeleteReq, PromiseGetReq and the timeout handlers' id."""

    id: str


@dataclass(frozen=True)
class ScheduleCreateReq:
    id: str
    cron: str
    promise_id: str
    promise_timeout: int
    promise_param: Value
    promise_tags: Tags


@dataclass(frozen=True)
class PromiseCreateReq:
    id: str
    timeout_at: int
    param: Value
    tags: Tags


def unicode_text(value: Json, where: str = "args") -> None:
    """Every string in a request must encode as UTF-8: a lone surrogate cannot be stored."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise Invalid(f"{where} holds a lone surrogate, not Unicode text: {value!r}") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            unicode_text(key, where)
            unicode_text(item, where)
    elif isinstance(value, list):
        for item in value:
            unicode_text(item, where)


def time_value(value: Json, name: str, upper: int = MAX_TIME) -> int:
    """An integer in [0, upper]: MAX_TIME for a `now`, MAX_INSTANT for a stored instant,
    MAX_DURATION for a duration added to `now` (spec/schedules.md "Bounds")."""
    if type(value) is not int:
        raise Invalid(f"{name} must be an integer, got {value!r}")
    if not 0 <= value <= upper:
        raise Invalid(f"{name} must lie in [0, {upper}], got {value}")
    return value


def instant_value(value: Json, name: str) -> int:
    return time_value(value, name, MAX_INSTANT)


def duration_value(value: Json, name: str) -> int:
    return time_value(value, name, MAX_DURATION)


def digits_at_most(digits: str, upper: int) -> bool:
    """Whether decimal `digits` name a number <= upper, judged by length before converting
    (Python refuses to convert more than 4,300 digits)."""
    significant = digits.lstrip("0")
    return len(significant) < len(str(upper)) or (len(significant) == len(str(upper))
                                                   and int(significant) <= upper)


def exact_args(args: Json, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict[str, Json]:
    if not isinstance(args, dict):
        raise Invalid(f"args must be an object, got {args!r}")
    missing = [key for key in required if key not in args]
    if missing:
        raise Invalid(f"missing argument(s): {', '.join(missing)}")
    unknown = [str(key) for key in args if key not in required + optional]
    if unknown:
        raise Invalid(f"unknown argument(s): {', '.join(sorted(unknown))}")
    return args


def id_value(value: Json, name: str = "id") -> str:
    if not isinstance(value, str) or not value:
        raise Invalid(f"{name} must be a non-empty string, got {value!r}")
    return value


def schedule_id_value(value: Json) -> str:
    """No '.' (as the deployed server), no braces (an id never holds a placeholder)."""
    id = id_value(value)
    bad = sorted(set(id) & set(".{}"))
    if bad:
        raise Invalid(f"schedule id must not contain {', '.join(map(repr, bad))}, got {id!r}")
    return id


def tags_value(value: Json, name: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise Invalid(f"{name} must be an object of strings, got {value!r}")
    delay = value.get("resonate:delay")
    if delay is not None:
        if not (delay.isascii() and delay.isdigit()):
            raise Invalid(f"{name}: resonate:delay must be decimal digits, got {delay!r}")
        if not digits_at_most(delay, MAX_INSTANT):
            raise Invalid(f"{name}: resonate:delay must be <= {MAX_INSTANT}, got {delay[:40]}"
                          f"{'...' if len(delay) > 40 else ''} ({len(delay)} digits)")
    return dict(value)


def delay_ms(delay: str) -> int:
    """A `resonate:delay` tag that passed tags_value as its number: leading zeros are
    dropped first, since Python counts them against its 4,300-digit conversion limit."""
    return int(delay.lstrip("0") or "0")


def value_value(value: Json, name: str) -> Value:
    if not isinstance(value, dict) or set(value) != {"headers", "data"}:
        raise Invalid(f"{name} must be an object with exactly headers and data, got {value!r}")
    if value["data"] is not None and not isinstance(value["data"], str):
        raise Invalid(f"{name}.data must be a string or null, got {value['data']!r}")
    return Value(headers=tags_value(value["headers"], f"{name}.headers"), data=value["data"])


def cron_value(value: Json, now: int) -> str:
    if not isinstance(value, str):
        raise Invalid(f"cron must be a string, got {value!r}")
    try:
        validate_cron(value)
    except ValueError as error:
        raise Invalid(f"cron {value!r}: {error}") from None
    if next_run(value, now) > MAX_TIME:
        raise Invalid(f"cron {value!r} has no occurrence after {now} up to MAX_TIME")
    return value


def template_value(value: Json) -> str:
    if not isinstance(value, str) or TIMESTAMP_PLACEHOLDER not in value:
        raise Invalid(f"promiseId must be a string containing {TIMESTAMP_PLACEHOLDER}, got {value!r}")
    return value


def schedule_create_req(args: Json, now: int) -> ScheduleCreateReq:
    args = exact_args(args, ("id", "cron", "promiseId", "promiseTimeout", "promiseParam", "promiseTags"))
    return ScheduleCreateReq(
        id=schedule_id_value(args["id"]),
        cron=cron_value(args["cron"], now),
        promise_id=template_value(args["promiseId"]),
        promise_timeout=duration_value(args["promiseTimeout"], "promiseTimeout"),
        promise_param=value_value(args["promiseParam"], "promiseParam"),
        promise_tags=tags_value(args["promiseTags"], "promiseTags"),
    )


def promise_create_req(args: Json) -> PromiseCreateReq:
    args = exact_args(args, ("id", "timeoutAt", "param", "tags"))
    return PromiseCreateReq(
        id=id_value(args["id"]),
        timeout_at=instant_value(args["timeoutAt"], "timeoutAt"),
        param=value_value(args["param"], "param"),
        tags=tags_value(args["tags"], "tags"),
    )


@dataclass(frozen=True)
class SearchReq:
    """ScheduleSearchReq as the deployed server reads it (profile `deployed`, DEP-04)."""

    tags: dict[str, str] | None
    limit: int | None
    cursor: str | None


def search_req(args: Json) -> SearchReq:
    args = exact_args(args, (), ("tags", "limit", "cursor"))
    tags, limit, cursor = args.get("tags"), args.get("limit"), args.get("cursor")
    if limit is not None and type(limit) is not int:
        raise Invalid(f"limit must be an integer, got {limit!r}")
    if cursor is not None and not isinstance(cursor, str):
        raise Invalid(f"cursor must be a string, got {cursor!r}")
    return SearchReq(tags=None if tags is None else tags_value(tags, "tags"), limit=limit, cursor=cursor)


def id_req(args: Json) -> IdReq:
    return IdReq(id=id_value(exact_args(args, ("id",))["id"]))




# ---- the promise and task handlers (P-03..P-06, T-01..T-11) ---------------------------

#: States a caller may settle a promise to: pending is not a settlement and timing out
#: belongs to the promise's own timeout (spec/schedules.md X-06).
SETTLE_STATES = ("resolved", "rejected", "rejected_canceled")


@dataclass(frozen=True)
class PromiseSettleReq:
    id: str
    state: str
    value: Value


@dataclass(frozen=True)
class RegisterCallbackReq:
    awaited: str
    awaiter: str


@dataclass(frozen=True)
class RegisterListenerReq:
    awaited: str
    address: str


@dataclass(frozen=True)
class TaskCreateReq:
    pid: str
    ttl: int
    action: PromiseCreateReq


@dataclass(frozen=True)
class TaskAcquireReq:
    id: str
    version: int
    pid: str
    ttl: int


@dataclass(frozen=True)
class TaskFenceReq:
    """action is the inner promise.create or promise.settle (Lean TaskFenceAction)."""

    id: str
    version: int
    action: PromiseCreateReq | PromiseSettleReq


@dataclass(frozen=True)
class TaskRef:
    id: str
    version: int


@dataclass(frozen=True)
class TaskHeartbeatReq:
    pid: str
    tasks: tuple[TaskRef, ...]


@dataclass(frozen=True)
class TaskSuspendReq:
    id: str
    version: int
    actions: tuple[RegisterCallbackReq, ...]


@dataclass(frozen=True)
class TaskFulfillReq:
    id: str
    version: int
    action: PromiseSettleReq


@dataclass(frozen=True)
class TaskVersionReq:
    """TaskReleaseReq: an id and the version the caller holds."""

    id: str
    version: int


def version_value(value: Json, name: str = "version") -> int:
    if type(value) is not int or value < 0:
        raise Invalid(f"{name} must be a non-negative integer, got {value!r}")
    return value


def list_value(value: Json, name: str) -> list[Json]:
    if not isinstance(value, list):
        raise Invalid(f"{name} must be a list, got {value!r}")
    return value


def promise_settle_req(args: Json) -> PromiseSettleReq:
    args = exact_args(args, ("id", "state", "value"))
    if args["state"] not in SETTLE_STATES:
        reached("X-06.settle_state")
        raise Invalid(f"state must be one of {', '.join(SETTLE_STATES)}, got {args['state']!r}")
    return PromiseSettleReq(id=id_value(args["id"]), state=args["state"],
                            value=value_value(args["value"], "value"))


def register_callback_req(args: Json) -> RegisterCallbackReq:
    args = exact_args(args, ("awaited", "awaiter"))
    return RegisterCallbackReq(awaited=id_value(args["awaited"], "awaited"),
                               awaiter=id_value(args["awaiter"], "awaiter"))


def register_listener_req(args: Json) -> RegisterListenerReq:
    args = exact_args(args, ("awaited", "address"))
    return RegisterListenerReq(awaited=id_value(args["awaited"], "awaited"),
                               address=id_value(args["address"], "address"))


def task_create_req(args: Json) -> TaskCreateReq:
    args = exact_args(args, ("pid", "ttl", "action"))
    return TaskCreateReq(pid=id_value(args["pid"], "pid"), ttl=duration_value(args["ttl"], "ttl"),
                         action=promise_create_req(args["action"]))


def task_acquire_req(args: Json) -> TaskAcquireReq:
    args = exact_args(args, ("id", "version", "pid", "ttl"))
    return TaskAcquireReq(id=id_value(args["id"]), version=version_value(args["version"]),
                          pid=id_value(args["pid"], "pid"), ttl=duration_value(args["ttl"], "ttl"))


def task_fence_req(args: Json) -> TaskFenceReq:
    args = exact_args(args, ("id", "version", "action"))
    action = args["action"]
    if not isinstance(action, dict) or action.get("kind") not in ("create", "settle"):
        raise Invalid(f"action must be an object with kind 'create' or 'settle', got {action!r}")
    inner = {k: v for k, v in action.items() if k != "kind"}
    parsed = promise_create_req(inner) if action["kind"] == "create" else promise_settle_req(inner)
    return TaskFenceReq(id=id_value(args["id"]), version=version_value(args["version"]), action=parsed)


def task_heartbeat_req(args: Json) -> TaskHeartbeatReq:
    args = exact_args(args, ("pid", "tasks"))
    refs = tuple(TaskRef(id=id_value(ref["id"]), version=version_value(ref["version"]))
                 for ref in (exact_args(r, ("id", "version")) for r in list_value(args["tasks"], "tasks")))
    return TaskHeartbeatReq(pid=id_value(args["pid"], "pid"), tasks=refs)


def task_suspend_req(args: Json) -> TaskSuspendReq:
    args = exact_args(args, ("id", "version", "actions"))
    actions = tuple(register_callback_req(a) for a in list_value(args["actions"], "actions"))
    return TaskSuspendReq(id=id_value(args["id"]), version=version_value(args["version"]), actions=actions)


def task_fulfill_req(args: Json) -> TaskFulfillReq:
    args = exact_args(args, ("id", "version", "action"))
    return TaskFulfillReq(id=id_value(args["id"]), version=version_value(args["version"]),
                          action=promise_settle_req(args["action"]))


def task_version_req(args: Json) -> TaskVersionReq:
    args = exact_args(args, ("id", "version"))
    return TaskVersionReq(id=id_value(args["id"]), version=version_value(args["version"]))


@dataclass(frozen=True)
class Res:
    """Every handler's response (Lean *Res): the status and the records it carries."""

    status: int
    schedule: Schedule | None = None
    #: Answered as Lean `toRecord`: callbacks and listeners are not part of a response.
    promise: PromiseObject | None = None
    #: schedule.search under profile `deployed` (DEP-04): one page and the cursor after it.
    schedules: tuple[Schedule, ...] | None = None
    cursor: str | None = None
    #: Answered as Lean TaskObject.toRecord: `resumes` is a count.
    task: TaskObject | None = None
    #: task.fence: the inner promise.create or promise.settle response, and which it was.
    action: tuple[str, "Res"] | None = None

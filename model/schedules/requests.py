"""Requests (Lean `types.lean` *Req) read from JSON, and the 400 path (spec X-03).

The Lean receives typed requests; JSON must first become one. Every rule of
docs/operations.md "Validation" is checked here, before any handler runs, so a rejected
request neither reads nor changes state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from duespec.model.schedules.clock import MAX_TIME, next_run
from duespec.model.schedules.expand import TIMESTAMP_PLACEHOLDER
from duespec.model.schedules.state import PromiseObject, Schedule, Tags, Value
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


def time_value(value: Json, name: str) -> int:
    if type(value) is not int:
        raise Invalid(f"{name} must be an integer, got {value!r}")
    if not 0 <= value <= MAX_TIME:
        raise Invalid(f"{name} must lie in [0, {MAX_TIME}], got {value}")
    return value


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
        if int(delay) > MAX_TIME:
            raise Invalid(f"{name}: resonate:delay must be <= {MAX_TIME}, got {delay}")
    return dict(value)


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
        promise_timeout=time_value(args["promiseTimeout"], "promiseTimeout"),
        promise_param=value_value(args["promiseParam"], "promiseParam"),
        promise_tags=tags_value(args["promiseTags"], "promiseTags"),
    )


def promise_create_req(args: Json) -> PromiseCreateReq:
    args = exact_args(args, ("id", "timeoutAt", "param", "tags"))
    return PromiseCreateReq(
        id=id_value(args["id"]),
        timeout_at=time_value(args["timeoutAt"], "timeoutAt"),
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


@dataclass(frozen=True)
class Res:
    """Every handler's response (Lean *Res): the status and at most one record."""

    status: int
    schedule: Schedule | None = None
    #: Answered as Lean `toRecord`: callbacks and listeners are not part of a response.
    promise: PromiseObject | None = None
    #: schedule.search under profile `deployed` (DEP-04): one page and the cursor after it.
    schedules: tuple[Schedule, ...] | None = None
    cursor: str | None = None

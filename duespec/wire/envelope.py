"""Resonate's HTTP envelope protocol, mapped both ways to docs/operations.md.

One endpoint, `POST /`, body `{kind, head: {corrId, version, auth?, "resonate:debug_time"?},
data}`; the answer `{kind, head: {corrId, status, version}, data}` with the HTTP status equal
to head.status. Records travel as the deployed server writes them: a null `settledAt` or
`lastRunAt` and a null Value `data` are left out, and an error's data is its message. The
server side (`duespec serve`) reads requests with `parse_request` and `request_to_op` and
answers with `response_envelope`; the client side (the HTTP target) writes with
`op_envelope` and reads with `op_response`. Facts and sources: spec/schedules.md "On the wire".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

Json = Any

#: The protocol version the deployed server and resonate-sdk 0.8 speak.
PROTOCOL_VERSION = "2026-04-01"
SUPPORTED_VERSIONS = (PROTOCOL_VERSION,)
#: Head field that pins `now` for one request (the deployed server honours it in debug mode).
DEBUG_TIME = "resonate:debug_time"
#: duespec's head field: `true` makes `data` exactly the operations.md args, without the
#: wire's defaults, so a checker can send a request operations.md calls invalid (a Value
#: without `headers`) and see it rejected. Resonate clients never send it.
STRICT = "duespec:strict"

#: Wire kind -> operations.md op, for the kinds that are one operation at `now`.
OP_OF_KIND = {
    "schedule.create": "schedule.create",
    "schedule.get": "schedule.get",
    "schedule.delete": "schedule.delete",
    "schedule.search": "schedule.search",
    "promise.create": "promise.create",
    "promise.get": "promise.get",
    # the environment, as debug kinds; debug.tick is the deployed server's, the two
    # single-timeout kinds are duespec's (operations.md schedule.timeout, promise.timeout)
    "debug.tick": "tick",
    "debug.schedule_timeout": "schedule.timeout",
    "debug.promise_timeout": "promise.timeout",
}
KIND_OF_OP = {op: kind for kind, op in OP_OF_KIND.items()}
#: Kinds that act on the server itself rather than its state at a time.
CONTROL_KINDS = ("debug.reset", "debug.snap", "debug.start", "debug.stop")
#: Kinds of the deployed server outside the schedules scope: 501, not "unknown".
UNSUPPORTED_KINDS = frozenset({
    "promise.settle", "promise.register_callback", "promise.register_listener", "promise.search",
    "task.get", "task.create", "task.acquire", "task.release", "task.fulfill", "task.suspend",
    "task.fence", "task.heartbeat", "task.halt", "task.continue", "task.search",
})

#: Wire defaults: the deployed server lets these be left out of a create (they mean empty).
_DEFAULTED = {
    "promise.create": {"param": "value", "tags": "tags"},
    "schedule.create": {"promiseParam": "value", "promiseTags": "tags"},
}


class WireError(Exception):
    """A request the protocol itself rejects (not an envelope, unknown kind...): its status
    and message, and the kind and corrId to echo when they could be read."""

    def __init__(self, status: int, message: str, kind: str = "unknown", corr_id: str = "0") -> None:
        super().__init__(message)
        self.status, self.message, self.kind, self.corr_id = status, message, kind, corr_id


@dataclass(frozen=True)
class Request:
    kind: str
    corr_id: str
    data: dict[str, Json]
    #: The head's `resonate:debug_time`, as sent (validated by the handler); None if absent.
    debug_time: Json
    #: The head's STRICT flag: no wire defaults.
    strict: bool = False


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def parse_request(body: bytes) -> Request:
    """The envelope of `body`, or WireError(400) naming what is wrong with it."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise WireError(400, f"Invalid request envelope: body is not UTF-8 ({error.reason} at byte "
                             f"{error.start})") from None
    try:
        raw = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as error:
        raise WireError(400, f"Invalid request envelope: not JSON ({error})") from None
    kind = raw.get("kind") if isinstance(raw, dict) else None
    head = raw.get("head") if isinstance(raw, dict) else None
    echo_kind = kind if isinstance(kind, str) and kind else "unknown"
    corr_id = head.get("corrId") if isinstance(head, dict) else None
    echo_corr = corr_id if isinstance(corr_id, str) else "0"

    def reject(message: str) -> WireError:
        return WireError(400, message, echo_kind, echo_corr)

    if not isinstance(raw, dict):
        raise reject(f"Invalid request envelope: expected an object, got {type(raw).__name__}")
    missing = [key for key in ("kind", "head", "data") if key not in raw]
    if missing:
        raise reject(f"Invalid request envelope: missing {', '.join(missing)}")
    if not isinstance(kind, str) or not kind:
        raise reject("Missing or invalid 'kind' field: must be a non-empty string")
    if not isinstance(head, dict):
        raise reject("Invalid request envelope: 'head' must be an object")
    if not isinstance(corr_id, str):
        raise reject("Invalid request envelope: head.corrId must be a string")
    version = head.get("version")
    if not isinstance(version, str):
        raise reject("Invalid request envelope: head.version must be a string")
    if version not in SUPPORTED_VERSIONS:
        raise reject(f"Unsupported protocol version {version!r}; supported: {', '.join(SUPPORTED_VERSIONS)}")
    if not isinstance(raw["data"], dict):
        raise reject("Invalid 'data' field: must be an object")
    strict = head.get(STRICT, False)
    if not isinstance(strict, bool):
        raise reject(f"Invalid request envelope: head.{STRICT} must be a boolean")
    return Request(kind=kind, corr_id=corr_id, data=raw["data"], debug_time=head.get(DEBUG_TIME),
                   strict=strict)


def request_to_op(request: Request, clock_now: int) -> tuple[str, dict[str, Json], Json]:
    """(op, args, now) of a kind in OP_OF_KIND; `now` is the pinned time, else `clock_now`."""
    op = OP_OF_KIND[request.kind]
    args = dict(request.data)
    now = clock_now if request.debug_time is None else request.debug_time
    if op == "tick":
        if "time" not in args:
            raise WireError(400, "Missing or invalid 'time' field", request.kind, request.corr_id)
        now = args.pop("time")
        if request.debug_time is not None and not _same_number(request.debug_time, now):
            raise WireError(400, f"{DEBUG_TIME} must equal data.time", request.kind, request.corr_id)
    for key, shape in ({} if request.strict else _DEFAULTED.get(op, {})).items():
        if args.get(key) is None:
            args[key] = {"headers": {}, "data": None} if shape == "value" else {}
        elif shape == "value" and isinstance(args[key], dict):
            args[key] = value_from_wire(args[key])
    return op, args, now


def _same_number(a: Json, b: Json) -> bool:
    return type(a) is type(b) and a == b


# ---- records ------------------------------------------------------------------------------

def value_to_wire(value: Json) -> Json:
    if not isinstance(value, dict) or value.get("data", 0) is not None:
        return value
    return {k: v for k, v in value.items() if k != "data"}


def value_from_wire(value: Json) -> Json:
    """A wire Value with its left-out fields filled in; anything else as it came."""
    if not isinstance(value, dict):
        return value
    out = dict(value)
    if out.get("headers") is None:
        out["headers"] = {}
    out.setdefault("data", None)
    return out


def record_to_wire(record: dict[str, Json]) -> dict[str, Json]:
    """A promise or schedule record as the deployed server writes it."""
    out = {k: v for k, v in record.items() if not (k in ("settledAt", "lastRunAt") and v is None)}
    for key in ("param", "value", "promiseParam"):
        if key in out:
            out[key] = value_to_wire(out[key])
    return out


def promise_from_wire(record: Json) -> Json:
    if not isinstance(record, dict):
        return record
    out = dict(record)
    for key in ("param", "value"):
        out[key] = value_from_wire(out.get(key, {}))
    out.setdefault("tags", {})
    out.setdefault("settledAt", None)
    return out


def schedule_from_wire(record: Json) -> Json:
    if not isinstance(record, dict):
        return record
    out = dict(record)
    out["promiseParam"] = value_from_wire(out.get("promiseParam", {}))
    out.setdefault("promiseTags", {})
    out.setdefault("lastRunAt", None)
    return out


# ---- responses ------------------------------------------------------------------------------

#: Error data when the handler gave no message (a plain 404).
DEFAULT_ERRORS = {404: "Not found", 501: "Not implemented"}


def envelope(kind: str, corr_id: str, status: int, data: Json) -> dict[str, Json]:
    return {"kind": kind, "head": {"corrId": corr_id, "status": status, "version": PROTOCOL_VERSION},
            "data": data}


def response_envelope(kind: str, corr_id: str, op: str, response: dict[str, Json]) -> dict[str, Json]:
    """An operations.md response as the wire answer to `kind`."""
    status = response["status"]
    if status >= 300:
        message = response.get("message") or DEFAULT_ERRORS.get(status, f"status {status}")
        return envelope(kind, corr_id, status, message)
    if op == "tick":
        return envelope(kind, corr_id, status, response["fired"])
    data: dict[str, Json] = {}
    for key in ("schedule", "promise"):
        if key in response:
            data[key] = record_to_wire(response[key])
    if "schedules" in response:
        data["schedules"] = [record_to_wire(s) for s in response["schedules"]]
        if response.get("cursor") is not None:
            data["cursor"] = response["cursor"]
    return envelope(kind, corr_id, status, data)


# ---- the client side ------------------------------------------------------------------------

def op_envelope(op: str, args: Json, now: Json, corr_id: str) -> dict[str, Json]:
    """The request for one operations.md step; `now` pins the time. An op without a kind
    (an unknown op, which the campaign sends on purpose) goes as a kind of its own name."""
    kind = KIND_OF_OP.get(op, op)
    data = {**args, "time": now} if op == "tick" and isinstance(args, dict) else args
    return {"kind": kind, "head": {"corrId": corr_id, "version": PROTOCOL_VERSION, DEBUG_TIME: now,
                                   STRICT: True},
            "data": data}


class ProtocolViolation(ValueError):
    """The server's answer is not a well-formed envelope for the request."""


def check_envelope(answer: Json, kind: str, corr_id: str, http_status: int) -> tuple[int, Json]:
    """(status, data) of an answer, after checking it echoes the request as the protocol says."""
    if not isinstance(answer, dict) or not isinstance(answer.get("head"), dict):
        raise ProtocolViolation(f"the answer is not an envelope: {str(answer)[:200]}")
    head = answer["head"]
    status = head.get("status")
    if type(status) is not int:
        raise ProtocolViolation(f"head.status is not an integer: {status!r}")
    if status != http_status:
        raise ProtocolViolation(f"HTTP status {http_status} differs from head.status {status}")
    if answer.get("kind") != kind and status < 400:
        raise ProtocolViolation(f"answer kind {answer.get('kind')!r} for a {kind!r} request")
    if head.get("corrId") != corr_id and status < 400:
        raise ProtocolViolation(f"answer corrId {head.get('corrId')!r} for request {corr_id!r}")
    return status, answer.get("data")


def op_response(op: str, status: int, data: Json) -> dict[str, Json]:
    """The operations.md response of a wire answer."""
    if status >= 300:
        return {"status": status, **({"message": data} if isinstance(data, str) else {})}
    if op == "tick":
        return {"status": status, "fired": data}
    if not isinstance(data, dict):
        raise ProtocolViolation(f"a {status} answer to {op} carries {type(data).__name__} data, not an object")
    out: dict[str, Json] = {"status": status}
    if "schedule" in data:
        out["schedule"] = schedule_from_wire(data["schedule"])
    if "promise" in data:
        out["promise"] = promise_from_wire(data["promise"])
    if op == "schedule.search" and "schedules" in data:
        out["schedules"] = [schedule_from_wire(s) for s in data["schedules"]]
        out["cursor"] = data.get("cursor")
    return out

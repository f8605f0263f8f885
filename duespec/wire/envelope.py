"""Resonate's HTTP envelope protocol, mapped both ways to docs/operations.md.

One endpoint, `POST /`, body `{kind, head: {corrId, version, auth?, "resonate:debug_time"?},
data}`; the answer `{kind, head: {corrId, status, version}, data}` with the HTTP status equal
to head.status. Every kind the model has is the op of its name. Records travel as the
deployed server writes them (a null `settledAt`, `lastRunAt`, task `ttl` or `pid` and a null
Value `data` are left out), task requests nest their promise requests as request envelopes,
and an error's data is its message. The server side (`duespec serve`) reads requests with
`parse_request` and `request_to_op` and answers with `response_envelope`; the client side
(the HTTP target) writes with `op_envelope` and reads with `op_response`, the inverses, so
every answer of the model survives the round trip. The mapping: docs/wire.md; facts and
sources: spec/schedules.md "On the wire".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from duespec.model.schedules.clock import MAX_TIME  # the protocol's last instant, as the spec bounds it
from duespec.limits import nested_deeper

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

#: Resonate kinds that are the operations.md op of the same name, one operation at `now`.
RESONATE_KINDS = (
    "schedule.create", "schedule.get", "schedule.delete", "schedule.search",
    "promise.create", "promise.get", "promise.settle", "promise.register_callback",
    "promise.register_listener", "promise.search",
    "task.get", "task.create", "task.acquire", "task.fence", "task.heartbeat", "task.suspend",
    "task.fulfill", "task.release", "task.halt", "task.continue", "task.search",
)
#: Wire kind -> operations.md op.
OP_OF_KIND = {
    **{kind: kind for kind in RESONATE_KINDS},
    # the environment, as debug kinds; debug.tick is the deployed server's, the two
    # single-timeout kinds are duespec's (operations.md schedule.timeout, promise.timeout)
    "debug.tick": "tick",
    "debug.schedule_timeout": "schedule.timeout",
    "debug.promise_timeout": "promise.timeout",
}
KIND_OF_OP = {op: kind for kind, op in OP_OF_KIND.items()}
#: Kinds that act on the server itself rather than its state at a time.
CONTROL_KINDS = ("debug.reset", "debug.snap", "debug.messages", "debug.start", "debug.stop")

#: Wire defaults: the deployed server lets these be left out (they mean empty), in a
#: request's data and in the data of the request envelopes nested in task requests.
_DEFAULTED = {
    "promise.create": {"param": "value", "tags": "tags"},
    "promise.settle": {"value": "value"},
    "schedule.create": {"promiseParam": "value", "promiseTags": "tags"},
}
#: A task.fence action's operations.md kind <-> the kind of the request envelope it travels as.
FENCE_KINDS = {"create": "promise.create", "settle": "promise.settle"}
FENCE_OPS = {kind: op for op, kind in FENCE_KINDS.items()}
#: Op -> the status of its answers that carry the deployed server's `preload` (promises it
#: sends ahead: task.suspend's 300 is the "redirect" that carries them). duespec's model has
#: none (no handler at 83d64c3 fills it), so it is always `[]` here. These are the ops whose
#: Lean response type declares `preload : List PromiseRecord := []` (types.lean at 83d64c3:
#: TaskCreateRes, TaskAcquireRes, TaskFenceRes, TaskSuspendRes) whatever the status, so an
#: empty one read back from any of their answers is that default (resonate-pg writes it on
#: task.suspend's 200 too), and reading drops it.
PRELOADING = {"task.create": 200, "task.acquire": 200, "task.fence": 200, "task.suspend": 300}


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


#: Deepest nesting of arrays and objects in a request body: a valid request nests about six
#: levels (envelope, data, action, its data, param, headers); anything deeper is refused
#: before a handler's recursive checks could exhaust the stack.
MAX_REQUEST_DEPTH = 64
#: Longest integer literal read as a number: Python refuses to convert more digits.
MAX_INT_LITERAL = 4300


class OversizedInt:
    """An integer literal too long to convert: it reaches the validators as a value that is no
    int (nor string), so the field it sits in is refused by name with a 400, never a 500."""

    __slots__ = ("digits",)

    def __init__(self, text: str) -> None:
        self.digits = len(text.lstrip("-"))

    def __repr__(self) -> str:
        return f"<an integer of {self.digits:,} digits>"


def _parse_int(text: str) -> int | OversizedInt:
    return int(text) if len(text) <= MAX_INT_LITERAL else OversizedInt(text)


def _no_duplicates(pairs: list[tuple[str, Json]]) -> dict[str, Json]:
    """An object whose keys are all distinct: which of two values a server would take is
    nowhere specified, so a request that says both is refused."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        raise ValueError(f"duplicate key {twice[:80]!r} in an object")
    return out




def parse_request(body: bytes) -> Request:
    """The envelope of `body`, or WireError(400) naming what is wrong with it."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise WireError(400, f"Invalid request envelope: body is not UTF-8 ({error.reason} at byte "
                             f"{error.start})") from None
    if nested_deeper(body, MAX_REQUEST_DEPTH):
        raise WireError(400, f"Invalid request envelope: nested deeper than {MAX_REQUEST_DEPTH} levels")
    try:
        raw = json.loads(text, parse_constant=_reject_constant, parse_int=_parse_int,
                         object_pairs_hook=_no_duplicates)
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
    if DEBUG_TIME in head:
        pinned = head[DEBUG_TIME]
        if type(pinned) is not int or not 0 <= pinned <= MAX_TIME:
            raise reject(f"Invalid request envelope: head.{DEBUG_TIME} must be an integer (epoch ms) in "
                         f"[0, {MAX_TIME}] when present, got {_shown(pinned)}")
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
        if type(now) is not int or not 0 <= now <= MAX_TIME:
            raise WireError(400, f"data.time must be an integer (epoch ms) in [0, {MAX_TIME}], got {_shown(now)}",
                            request.kind, request.corr_id)
        if request.debug_time is not None and not _same_number(request.debug_time, now):
            raise WireError(400, f"{DEBUG_TIME} must equal data.time", request.kind, request.corr_id)
    try:
        return op, _args_from_wire(op, args, request.strict), now
    except NestingError as error:
        raise WireError(400, f"Invalid request: {error}", request.kind, request.corr_id) from None


class NestingError(ValueError):
    """A task request's nested action is not the request envelope the protocol puts there."""


def _args_from_wire(op: str, args: dict[str, Json], strict: bool) -> dict[str, Json]:
    """The operations.md args of a request's data: nested envelopes opened, defaults filled."""
    args = _with_defaults(op, args, strict)
    if op in ("task.create", "task.fulfill") and "action" in args:
        kind = "promise.create" if op == "task.create" else "promise.settle"
        args["action"] = _with_defaults(kind, _opened(args["action"], kind, "action"), strict)
    elif op == "task.suspend" and isinstance(args.get("actions"), list):
        args["actions"] = [_opened(action, "promise.register_callback", f"actions[{i}]")
                           for i, action in enumerate(args["actions"])]
    elif op == "task.fence" and "action" in args:
        args["action"] = fence_action_from_wire(args["action"], strict)
    return args


def _with_defaults(op: str, data: Json, strict: bool) -> Json:
    """`data` with the wire defaults of `op` filled in (none when strict); a non-object as it came."""
    if strict or not isinstance(data, dict):
        return data
    out = dict(data)
    for key, shape in _DEFAULTED.get(op, {}).items():
        if out.get(key) is None:
            out[key] = {"headers": {}, "data": None} if shape == "value" else {}
        elif shape == "value" and isinstance(out[key], dict):
            out[key] = value_from_wire(out[key])
    return out


def _opened(nested: Json, kind: str, where: str) -> Json:
    """The data of a request envelope nested in a task request (its head is not read, as the
    deployed server does not read it)."""
    if not isinstance(nested, dict) or nested.get("kind") != kind or "data" not in nested:
        raise NestingError(f"{where} must be a {kind} request envelope {{kind, head, data}}, got "
                           f"{_described(nested)}")
    if not isinstance(nested["data"], dict):
        raise NestingError(f"{where}.data must be an object (the {kind} args), got {_described(nested['data'])}")
    return nested["data"]


def fence_action_from_wire(nested: Json, strict: bool) -> dict[str, Json]:
    """A task.fence action, `{kind: "promise.create" | "promise.settle", head, data}` on the wire,
    as operations.md writes it: `{"kind": "create" | "settle", ...data}`."""
    kind = nested.get("kind") if isinstance(nested, dict) else None
    data = nested.get("data") if isinstance(nested, dict) else None
    if not isinstance(kind, str) or kind not in FENCE_OPS or not isinstance(data, dict) or "kind" in data:
        raise NestingError("action must be a promise.create or promise.settle request envelope "
                           f"{{kind, head, data}} whose data is an object, got {_described(nested)}")
    return {"kind": FENCE_OPS[kind], **_with_defaults(kind, data, strict)}


def _described(value: Json) -> str:
    """What a misplaced value is, in a few words (it may be deep or huge: never dumped whole)."""
    if isinstance(value, dict):
        kind = value.get("kind")
        return f"an object of kind {kind!r:.60}" if isinstance(kind, str) else "an object without a string kind"
    return "null" if value is None else f"a {type(value).__name__}"


def _shown(value: Json) -> str:
    """A value as JSON, cut short (a request may put anything anywhere)."""
    if isinstance(value, OversizedInt):
        return repr(value)
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


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


#: Record fields the deployed server leaves out when null (serde skip_serializing_if).
_LEFT_OUT_WHEN_NULL = ("settledAt", "lastRunAt", "ttl", "pid")


def record_to_wire(record: dict[str, Json]) -> dict[str, Json]:
    """A promise, schedule or task record as the deployed server writes it."""
    out = {k: v for k, v in record.items() if not (k in _LEFT_OUT_WHEN_NULL and v is None)}
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


def task_from_wire(record: Json) -> Json:
    if not isinstance(record, dict):
        return record
    return {**record, "ttl": record.get("ttl"), "pid": record.get("pid")}


# ---- responses ------------------------------------------------------------------------------

#: Error data when the handler gave no message (a plain 404).
DEFAULT_ERRORS = {404: "Not found", 501: "Not implemented"}


def envelope(kind: str, corr_id: str, status: int, data: Json) -> dict[str, Json]:
    return {"kind": kind, "head": {"corrId": corr_id, "status": status, "version": PROTOCOL_VERSION},
            "data": data}


def response_envelope(kind: str, corr_id: str, op: str, response: dict[str, Json]) -> dict[str, Json]:
    """An operations.md response as the wire answer to `kind`: an error's data is its message;
    records go as the deployed server writes them, a task.fence action as the answer envelope
    of its promise.create/settle, and any other key as it is."""
    status = response["status"]
    if status >= 400:
        message = response.get("message") or DEFAULT_ERRORS.get(status, f"status {status}")
        return envelope(kind, corr_id, status, message)
    if op == "tick":
        return envelope(kind, corr_id, status, response["fired"])
    data: dict[str, Json] = {}
    for key, value in response.items():
        if key in ("status", "message") or (key == "cursor" and value is None):
            continue
        if key in ("schedule", "promise", "task"):
            data[key] = record_to_wire(value)
        elif key == "schedules":
            data[key] = [record_to_wire(s) for s in value]
        elif key == "action":
            inner_kind = FENCE_KINDS[value["kind"]]
            inner = {k: v for k, v in value.items() if k != "kind"}
            data[key] = response_envelope(inner_kind, corr_id, inner_kind, inner)
        else:
            data[key] = value
    if PRELOADING.get(op) == status:
        data["preload"] = []
    return envelope(kind, corr_id, status, data)


# ---- the client side ------------------------------------------------------------------------

def op_envelope(op: str, args: Json, now: Json, corr_id: str) -> dict[str, Json]:
    """The request for one operations.md step; `now` pins the time. An op without a kind
    (an unknown op, which the campaign sends on purpose) goes as a kind of its own name."""
    kind = KIND_OF_OP.get(op, op)
    data = {**args, "time": now} if op == "tick" and isinstance(args, dict) else args_to_wire(op, args, corr_id)
    return {"kind": kind, "head": {"corrId": corr_id, "version": PROTOCOL_VERSION, DEBUG_TIME: now,
                                   STRICT: True},
            "data": data}


def args_to_wire(op: str, args: Json, corr_id: str) -> Json:
    """A request's data for operations.md args: the actions of task requests nested as the
    request envelopes the protocol carries there. An action operations.md calls invalid goes
    as it is, or, if the server would read it as a valid envelope, inside a list (which no
    reading accepts), so that the server rejects it as the model does."""
    if not isinstance(args, dict):
        return args

    def nested(kind: str, data: Json) -> dict[str, Json]:
        return {"kind": kind, "head": {"corrId": corr_id, "version": PROTOCOL_VERSION}, "data": data}

    out = dict(args)
    if op in ("task.create", "task.fulfill") and "action" in out:
        out["action"] = nested("promise.create" if op == "task.create" else "promise.settle", out["action"])
    elif op == "task.suspend" and isinstance(out.get("actions"), list):
        out["actions"] = [nested("promise.register_callback", action) for action in out["actions"]]
    elif op == "task.fence" and "action" in out:
        action = out["action"]
        if isinstance(action, dict) and action.get("kind") in FENCE_KINDS:
            out["action"] = nested(FENCE_KINDS[action["kind"]], {k: v for k, v in action.items() if k != "kind"})
        elif _reads_as_fence_action(action):
            out["action"] = [action]
    return out


def _reads_as_fence_action(value: Json) -> bool:
    try:
        fence_action_from_wire(value, strict=True)
    except NestingError:
        return False
    return True


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
    """The operations.md response of a wire answer (the inverse of response_envelope). An
    empty `preload` of an op whose Lean response declares one is dropped at any status; a
    non-empty one, or any `preload` of another op, is kept, so that it differs from the
    model's answer."""
    if status >= 400:
        return {"status": status, **({"message": data} if isinstance(data, str) else {})}
    if op == "tick":
        return {"status": status, "fired": data}
    if not isinstance(data, dict):
        raise ProtocolViolation(f"a {status} answer to {op} carries {type(data).__name__} data, not an object")
    out: dict[str, Json] = {"status": status}
    for key, value in data.items():
        if key == "schedule":
            out[key] = schedule_from_wire(value)
        elif key == "promise":
            out[key] = promise_from_wire(value)
        elif key == "task":
            out[key] = task_from_wire(value)
        elif key == "schedules":
            out[key] = [schedule_from_wire(s) for s in value] if isinstance(value, list) else value
        elif key == "action":
            out[key] = _fence_answer_from_wire(value)
        elif key != "cursor" and not (key == "preload" and value == [] and op in PRELOADING):
            out[key] = value
    if "schedules" in data or "cursor" in data:  # a page: its cursor is null when left out
        out["cursor"] = data.get("cursor")
    return out


def _fence_answer_from_wire(answer: Json) -> dict[str, Json]:
    """task.fence's `action`, the answer envelope of its promise.create/settle, as operations.md
    writes it: `{"kind": "create" | "settle", "status", ...}`. An inner error's data is prose,
    and operations.md's action carries none."""
    if not isinstance(answer, dict) or answer.get("kind") not in FENCE_OPS:
        raise ProtocolViolation(f"task.fence's action is not a promise.create/settle answer: {str(answer)[:200]}")
    head = answer.get("head")
    status = head.get("status") if isinstance(head, dict) else None
    if type(status) is not int:
        raise ProtocolViolation(f"task.fence's action head.status is not an integer: {status!r}")
    inner = op_response(answer["kind"], status, answer.get("data"))
    inner.pop("message", None)
    return {"kind": FENCE_OPS[answer["kind"]], **inner}

"""Malformed requests for `duespec serve`, generated: every kind, every field, every way.

`malformations()` yields (label, body) pairs; the label names the kind of malformation
(where and how), and no two pairs share one. Three families:

- the envelope: bodies that are not UTF-8, not JSON, not an object, duplicate keys, deep
  nesting, over-long numbers; every head field missing, null or of the wrong type; an
  unsupported version; a `resonate:debug_time` that is null, negative, fractional, a
  string, past MAX_TIME;
- the data of every kind the server answers (the debug kinds included): for every field,
  at every depth (nested action envelopes, Values, tags), the field left out, null, of
  each wrong JSON type, and, by what it holds, the numbers and strings just past its bounds;
  an unknown key beside the fields at every level; `resonate:delay` tags that are no delay;
- debug.reset's config: every field out of its bounds (what destroyed the store before).

Every request is built on a valid one (`VALID`) aimed at the state `SEED` leaves (a
schedule, a pending targeted promise whose task is pending at version 0, a task held at
version 1), so a server that acted on any part of a malformed request would change that
state: tests/test_malformed_requests.py sends each and checks nothing changed. Variants the
protocol accepts (a wire default: `param`, `tags`, `promiseParam`, `promiseTags`, a settle's
`value`, a Value's `headers`/`data` left out or null; a nested envelope's unread `head`)
are not generated.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

PROTOCOL_VERSION = "2026-04-01"
T0 = 1_767_225_600_000          # 2026-01-01T00:00:00Z
HOUR = 3_600_000
MAX_TIME = 253_402_300_799_999
INT64_MAX = 2**63 - 1
MAX_DURATION = INT64_MAX - MAX_TIME
TARGET = {"resonate:target": "poll://any@workers"}
EMPTY = {"headers": {}, "data": None}


def head(**extra: Any) -> dict[str, Any]:
    return {"corrId": "m", "version": PROTOCOL_VERSION, "resonate:debug_time": T0, **extra}


def nested(kind: str, data: Any) -> dict[str, Any]:
    return {"kind": kind, "head": {"corrId": "inner", "version": PROTOCOL_VERSION}, "data": data}


def head_of(kind: str) -> dict[str, Any]:
    """A valid head for `kind`: debug.tick carries its time in data, so it pins none."""
    return {k: v for k, v in head().items() if not (kind == "debug.tick" and k == "resonate:debug_time")}


def body(kind: str, data: Any, **head_fields: Any) -> bytes:
    return json.dumps({"kind": kind, "head": {**head_of(kind), **head_fields}, "data": data}).encode()


#: Requests that build the state every malformation is aimed at (all answered 200).
SEED: list[tuple[str, dict[str, Any]]] = [
    ("schedule.create", {"id": "s", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}",
                         "promiseTimeout": HOUR, "promiseParam": EMPTY, "promiseTags": TARGET}),
    ("promise.create", {"id": "p", "timeoutAt": T0 + HOUR, "param": EMPTY, "tags": TARGET}),
    ("promise.create", {"id": "q", "timeoutAt": T0 + HOUR, "param": EMPTY, "tags": {}}),
    ("task.create", {"pid": "w", "ttl": HOUR, "action": nested(
        "promise.create", {"id": "t", "timeoutAt": T0 + HOUR, "param": EMPTY, "tags": TARGET})}),
]
#: A valid request that reads without changing anything: the "next valid request".
PROBE = ("promise.get", {"id": "p"})

#: One valid request per kind, aimed at SEED's state (each would change it: a fresh id, the
#: pending task, the held task), the base every data malformation starts from.
VALID: dict[str, dict[str, Any]] = {
    "schedule.create": {"id": "fresh", "cron": "*/5 * * * *", "promiseId": "{{.id}}.{{.timestamp}}",
                        "promiseTimeout": HOUR, "promiseParam": {"headers": {"h": "v"}, "data": "x"},
                        "promiseTags": {**TARGET, "resonate:delay": "5"}},
    "schedule.get": {"id": "s"},
    "schedule.delete": {"id": "s"},
    "promise.create": {"id": "fresh", "timeoutAt": T0 + HOUR, "param": {"headers": {"h": "v"}, "data": "x"},
                       "tags": {**TARGET, "resonate:delay": str(T0 + 60_000)}},
    "promise.get": {"id": "p"},
    "promise.settle": {"id": "q", "state": "resolved", "value": {"headers": {"h": "v"}, "data": "x"}},
    "promise.register_callback": {"awaited": "q", "awaiter": "p"},
    "promise.register_listener": {"awaited": "q", "address": "poll://listener"},
    "task.get": {"id": "t"},
    "task.create": {"pid": "w2", "ttl": HOUR, "action": nested(
        "promise.create", {"id": "fresh", "timeoutAt": T0 + HOUR, "param": EMPTY, "tags": TARGET})},
    "task.acquire": {"id": "p", "version": 0, "pid": "w2", "ttl": HOUR},
    "task.fence": {"id": "t", "version": 1, "action": nested(
        "promise.create", {"id": "fresh", "timeoutAt": T0 + HOUR, "param": EMPTY, "tags": {}})},
    "task.heartbeat": {"pid": "w", "tasks": [{"id": "t", "version": 1}]},
    "task.suspend": {"id": "t", "version": 1, "actions": [nested(
        "promise.register_callback", {"awaited": "q", "awaiter": "t"})]},
    "task.fulfill": {"id": "t", "version": 1, "action": nested(
        "promise.settle", {"id": "t", "state": "resolved", "value": EMPTY})},
    "task.release": {"id": "t", "version": 1},
    "task.halt": {"id": "t"},
    "task.continue": {"id": "t"},
    "debug.tick": {"time": T0 + 2 * HOUR},
    "debug.schedule_timeout": {"id": "s"},
    "debug.promise_timeout": {"id": "p"},
    "debug.reset": {"profile": "lean", "retry_timeout": 5000},
}

#: Keys the wire lets be left out or null (they mean empty), by the kind of the data holding them.
DEFAULTED = {"promise.create": {"param", "tags"}, "promise.settle": {"value"},
             "schedule.create": {"promiseParam", "promiseTags"}}
VALUE_KEYS = {"param", "value", "promiseParam"}
TAG_KEYS = {"tags", "promiseTags", "headers"}
#: Integer fields and the first integer past their upper bound (None: only compared, no bound).
INTEGERS = {"timeoutAt": INT64_MAX + 1, "promiseTimeout": MAX_DURATION + 1, "ttl": MAX_DURATION + 1,
            "time": MAX_TIME + 1, "retry_timeout": MAX_DURATION + 1, "version": None}
#: debug.reset: profile and retry_timeout may be left out (they keep the current ones).
OPTIONAL = {"debug.reset": {"profile", "retry_timeout"}}
WRONG_TYPES: dict[str, Any] = {"a string": "x", "a float": 1.5, "true": True, "a list": [], "an object": {},
                               "a number": 7}
BAD_DELAYS = {"negative": "-5", "a float": "5.0", "an exponent": "1e3", "empty": "", "spaced": " 5",
              "signed": "+5", "past int64": str(INT64_MAX + 1), "5,000 digits": "9" * 5000,
              "Arabic digits": "\u0663"}


class Raw:
    """A JSON fragment written as it is (a number too long for json.dumps to be asked)."""

    def __init__(self, text: str) -> None:
        self.text = text


def dumps(value: Any) -> str:
    """JSON with Raw fragments in place (and lone surrogates escaped, as json.dumps does)."""
    raws: list[str] = []

    def swap(item: Any) -> Any:
        if isinstance(item, Raw):
            raws.append(item.text)
            return f"@@RAW{len(raws) - 1}@@"
        if isinstance(item, dict):
            return {k: swap(v) for k, v in item.items()}
        if isinstance(item, list):
            return [swap(v) for v in item]
        return item

    text = json.dumps(swap(value))
    for index, raw in enumerate(raws):
        text = text.replace(f'"@@RAW{index}@@"', raw)
    return text


def _variants(kind: str, value: Any, path: tuple[Any, ...], key: Any,
              data_kind: str) -> Iterator[tuple[str, Any]]:
    """(how, replacement) for the value at `path`; replacement None with how 'left out'
    means delete the key. `data_kind` is the kind whose data holds the key."""
    defaulted = key in DEFAULTED.get(data_kind, set()) or (
        key in ("headers", "data") and len(path) >= 2 and path[-2] in VALUE_KEYS)
    in_tags = len(path) >= 2 and path[-2] in TAG_KEYS  # a tag or header: any may be left out
    if isinstance(key, str) and not defaulted and not in_tags and key not in OPTIONAL.get(kind, set()):
        yield "left out", _DELETE
    if not defaulted and not (key == "data" and path[-2:-1] and path[-2] in VALUE_KEYS):
        yield "null", None
    for name, wrong in WRONG_TYPES.items():
        if type(wrong) is type(value) or (isinstance(value, int) and name == "a number"):
            continue
        if key == "data" and len(path) >= 2 and path[-2] in VALUE_KEYS and isinstance(wrong, str):
            continue
        yield name, wrong
    if type(value) is int and key in INTEGERS:
        yield "negative", -1
        yield "an integral float", float(value)
        yield "4,301 digits", Raw("9" * 4301)
        yield "a negative of 5,000 digits", Raw("-" + "9" * 5000)
        if INTEGERS[key] is not None:
            yield "one past its bound", INTEGERS[key]
            yield "2^64", 2**64
    if type(value) is str and key not in ("data",):
        if key != "state" and not (len(path) >= 2 and path[-2] in TAG_KEYS):
            yield "empty", ""
        yield "a lone surrogate", "\ud800"
    if key == "state":
        yield "pending", "pending"
        yield "rejected_timedout", "rejected_timedout"
        yield "in capitals", "RESOLVED"
    if key == "cron":
        for how, cron in (("six fields", "0 * * * * *"), ("out of range", "61 * * * *"),
                          ("never", "0 0 30 2 *"), ("a descriptor Resonate lacks", "@reboot")):
            yield how, cron
    if key == "promiseId":
        yield "without the timestamp", "{{.id}}"
    if key == "id" and data_kind == "schedule.create":
        yield "with a dot", "a.b"
        yield "with a brace", "a{b"
    if key == "profile":
        yield "unknown", "mainnet"
    if key == "retry_timeout":
        yield "zero", 0


_DELETE = object()


def _walk(value: Any, path: tuple[Any, ...], data_kind: str) -> Iterator[tuple[tuple[Any, ...], Any, str]]:
    """(path, value, data_kind) for every field under `value`; a nested action envelope's
    data is walked as the data of its own kind, and its unread head is skipped."""
    if isinstance(value, dict):
        is_envelope = "kind" in value and "data" in value and "head" in value
        for key, item in value.items():
            if is_envelope and key == "head":
                continue
            yield (*path, key), item, data_kind
            inner = value["kind"] if is_envelope and key == "data" else data_kind
            yield from _walk(item, (*path, key), inner)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, (*path, index), data_kind)


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head_key, rest = path[0], path[1:]
    if isinstance(value, dict):
        out = dict(value)
        if not rest and new is _DELETE:
            del out[head_key]
        else:
            out[head_key] = _replaced(value[head_key], rest, new)
        return out
    out_list = list(value)
    out_list[head_key] = _replaced(value[head_key], rest, new)
    return out_list


def _label(path: tuple[Any, ...]) -> str:
    return "data" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def data_malformations() -> Iterator[tuple[str, bytes, str | None]]:
    """(label, body, the field a 400 must name or None) for every kind's data."""
    for kind, valid in VALID.items():
        for path, value, data_kind in _walk(valid, (), kind):
            key = path[-1]
            if isinstance(key, int):
                continue
            for how, new in _variants(kind, value, path, key, data_kind):
                data = _replaced(valid, path, new)
                yield (f"{kind} {_label(path)} {how}",
                       dumps({"kind": kind, "head": head_of(kind), "data": data}).encode(), str(key))
        for path, value, _ in [((), valid, kind), *_walk(valid, (), kind)]:
            if isinstance(value, dict) and not (path and path[-1] == "head"):
                if path and isinstance(value.get("kind"), str) and "data" in value:
                    continue  # an envelope's own keys: unread beside kind and data
                data = _replaced(valid, path, {**value, "zzz_unknown": 1}) if path else {**valid, "zzz_unknown": 1}
                yield f"{kind} {_label(path)} with an unknown key", body(kind, data), "zzz_unknown"
        tag_paths = [path for path, value, _ in _walk(valid, (), kind)
                     if path[-1] in ("tags", "promiseTags") and isinstance(value, dict)]
        for path in tag_paths:
            tags = _value_at(valid, path)
            for how, delay in BAD_DELAYS.items():
                yield (f"{kind} {_label(path)} resonate:delay {how}",
                       body(kind, _replaced(valid, path, {**tags, "resonate:delay": delay})), "resonate:delay")
            yield (f"{kind} {_label(path)} a tag not a string",
                   body(kind, _replaced(valid, path, {**tags, "n": 1})), _label(path).rsplit(".", 1)[-1])


def _value_at(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def envelope_malformations() -> Iterator[tuple[str, bytes, str | None]]:
    good = {"kind": "promise.get", "head": head(), "data": {"id": "p"}}
    yield "body not UTF-8", b'{"kind": "promise.get", "head": \xff}', None
    yield "body empty", b"", None
    yield "body not JSON", b"{kind: promise.get}", None
    yield "body truncated", json.dumps(good).encode()[:-3], None
    yield "body NaN", b'{"kind": "promise.get", "head": {"corrId": "m", "version": "2026-04-01"}, "data": NaN}', None
    yield "body an array", b"[]", None
    yield "body a string", b'"promise.get"', None
    yield "body null", b"null", None
    yield "body nested 10,000 deep", b"[" * 10_000 + b"]" * 10_000, None
    yield "data nested 100 deep", dumps({**good, "data": {"id": "p", "x": Raw("[" * 100 + "0" + "]" * 100)}}).encode(), None
    yield "body a 5,000-digit number", dumps({**good, "data": {"id": Raw("9" * 5000)}}).encode(), "id"
    yield "body a duplicate key", b'{"kind": "promise.get", "kind": "promise.settle", "head": ' + \
        json.dumps(head()).encode() + b', "data": {"id": "p"}}', None
    yield "data a duplicate key", b'{"kind": "promise.settle", "head": ' + json.dumps(head()).encode() + \
        b', "data": {"id": "q", "id": "p", "state": "resolved", "value": {}}}', None
    for key in ("kind", "head", "data"):
        yield f"envelope without {key}", json.dumps({k: v for k, v in good.items() if k != key}).encode(), key
    for name, wrong in {**WRONG_TYPES, "null": None}.items():
        if not isinstance(wrong, dict):
            yield f"head {name}", json.dumps({**good, "head": wrong}).encode(), "head"
            yield f"data {name}", json.dumps({**good, "data": wrong}).encode(), "data"
        if not isinstance(wrong, str):
            yield f"kind {name}", json.dumps({**good, "kind": wrong}).encode(), "kind"
            yield f"head.corrId {name}", json.dumps({**good, "head": {**head(), "corrId": wrong}}).encode(), "corrId"
            yield f"head.version {name}", json.dumps({**good, "head": {**head(), "version": wrong}}).encode(), "version"
        if not isinstance(wrong, bool):
            yield f"head.duespec:strict {name}", json.dumps(
                {**good, "head": {**head(), "duespec:strict": wrong}}).encode(), "duespec:strict"
    yield "kind empty", json.dumps({**good, "kind": ""}).encode(), "kind"
    yield "kind unknown", json.dumps({**good, "kind": "promise.frobnicate"}).encode(), "promise.frobnicate"
    yield "kind in capitals", json.dumps({**good, "kind": "PROMISE.GET"}).encode(), "PROMISE.GET"
    for key in ("corrId", "version"):
        yield f"head without {key}", json.dumps({**good, "head": {k: v for k, v in head().items() if k != key}}).encode(), key
    yield "head.version unsupported", json.dumps({**good, "head": {**head(), "version": "2025-01-01"}}).encode(), "version"
    for how, time in (("null", None), ("negative", -1), ("a float", 1.5), ("a string", str(T0)), ("true", True),
                      ("past MAX_TIME", MAX_TIME + 1), ("int64 max", INT64_MAX), ("a list", [T0]),
                      ("4,301 digits", Raw("9" * 4301))):
        yield (f"head.resonate:debug_time {how}",
               dumps({"kind": "promise.settle", "head": {**head(), "resonate:debug_time": time},
                      "data": VALID["promise.settle"]}).encode(), "resonate:debug_time")
    yield ("debug.tick time differs from resonate:debug_time",
           body("debug.tick", {"time": T0 + 2 * HOUR}, **{"resonate:debug_time": T0}), "resonate:debug_time")
    yield ("debug.tick a million occurrences and more", body(
        "debug.tick", {"time": T0 + 3 * 365 * 24 * HOUR}, **{"resonate:debug_time": T0 + 3 * 365 * 24 * HOUR}),
        None)


def malformations() -> list[tuple[str, bytes, str | None]]:
    """Every malformed request: (label, body, the field a 400 must name, or None)."""
    out = [*envelope_malformations(), *data_malformations()]
    labels = [label for label, _, _ in out]
    assert len(labels) == len(set(labels)), "each malformation has a label of its own"
    return out

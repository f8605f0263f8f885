"""The ITF value language, shared by export and import: integers as `#bigint`, Quint's
Option, maps, and the names ITF gives duespec's operations. Both directions must agree on
every form, so each form is written once, here.
"""

from __future__ import annotations

import json
import re
from typing import Any

from duespec.limits import LimitExceeded, check_int_text
from duespec.systems import get_system
from duespec.traces.format import TraceError

Json = Any

FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
ACTION_TAKEN, NONDET_PICKS = "mbt::actionTaken", "mbt::nondetPicks"
#: The response to the step that reached the state; only duespec writes it.
RESULT_VAR = "duespec::result"
#: Quint's Option, which `mbt::nondetPicks` wraps every pick in; None also stands for JSON null.
NONE: dict[str, Json] = {"tag": "None", "value": {"#tup": []}}
#: Object-valued fields of the contract that are free-form maps, not records: exported as
#: `#map` so a Quint spec can type them `str -> str`.
MAP_FIELDS = frozenset({"tags", "headers", "promiseTags"})
#: The pick that carries a step's whole args when named picks cannot give them back as they
#: were (args that are no object, a name the operation does not take, a required one left
#: out: a malformed request, which a Quint spec does not model). Only duespec writes it.
RAW_ARGS = "duespec::args"
#: The pick that names a step's op when it is none of the system's (a request for an op the
#: contract does not have, which a target must refuse); its action is the op's ITF name.
RAW_OP = "duespec::op"
_BIGINT = re.compile(r"-?[0-9]+")


def action_name(op: str) -> str:
    """The Quint action for an operation: dots cannot appear in a Quint name, so camelCase."""
    first, *rest = op.split(".")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def op_for_action(system: str, action: str) -> str | None:
    """The operation a Quint action name stands for, or None.

    Case, dots and underscores are ignored, and a trailing `Action`/`_action` is dropped, so
    `claim`, `Claim`, `claim_action`, `scheduleCreate` and `schedule_create` all resolve."""
    for suffix in ("_action", "Action"):
        if action.endswith(suffix) and len(action) > len(suffix):
            action = action[: -len(suffix)]
    wanted = _canonical(action)
    return next((op for op in get_system(system).operations if _canonical(op) == wanted), None)


def _canonical(name: str) -> str:
    return name.replace(".", "").replace("_", "").lower()


def to_itf(value: Json, where: str, key: str | None = None) -> Json:
    """A duespec JSON value as an ITF expression (integers as #bigint, null as None)."""
    if value is None:
        return NONE
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, int):
        return {"#bigint": str(value)}
    if isinstance(value, list):
        return [to_itf(item, where) for item in value]
    if isinstance(value, dict):
        as_map = key in MAP_FIELDS or any(k.startswith("#") for k in value) or set(value) == {"tag", "value"}
        if as_map:
            return {"#map": [[k, to_itf(v, where)] for k, v in value.items()]}
        return {k: to_itf(v, where, k) for k, v in value.items()}
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        # ITF has no fractional numbers: its own form for a value it cannot hold, the number's
        # JSON text, so that 1.0 comes back 1.0 (a float a request sends is never the integer)
        return {"#unserializable": json.dumps(value)}
    raise TraceError(where, None, f"{json.dumps(value)} has no ITF form")


def from_itf(value: Json, where: str) -> Json:
    """An ITF expression as a duespec JSON value; raises TraceError naming `where`."""
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, list):
        return [from_itf(item, where) for item in value]
    if not isinstance(value, dict):
        raise TraceError(where, None, f"not an ITF value: {json.dumps(value)[:80]}")
    keys = set(value)
    if keys == {"#bigint"}:
        digits = value["#bigint"]
        if not isinstance(digits, str) or not _BIGINT.fullmatch(digits):
            raise TraceError(where, None, f'"#bigint" must hold a string of digits, got {json.dumps(digits)[:80]}')
        try:
            check_int_text(digits)
        except LimitExceeded as error:
            raise TraceError(where, None, f'"#bigint": {error}') from None
        return int(digits)
    if keys == {"#unserializable"}:
        text = value["#unserializable"]
        number = _fraction(text) if isinstance(text, str) else None
        if number is None:
            raise TraceError(where, None, '"#unserializable" holds a value duespec cannot read back '
                                          f"(only a fractional number's JSON text): {json.dumps(text)[:80]}")
        return number
    if keys in ({"#tup"}, {"#set"}):
        items = value["#tup" if "#tup" in keys else "#set"]
        if not isinstance(items, list):
            raise TraceError(where, None, f"{sorted(keys)[0]} must hold a list")
        return [from_itf(item, where) for item in items]
    if keys == {"#map"}:
        return _map(value["#map"], where)
    if value.get("tag") == "Some" and keys != {"tag", "value"}:
        # Read as a record, it would pass as the JSON object {"tag": "Some"}: a value lost.
        raise TraceError(where, None, 'an Option "Some" must hold exactly a "value" (Quint writes '
                                      '{"tag": "Some", "value": ...}), got the keys '
                                      f'{", ".join(sorted(keys))}')
    if keys == {"tag", "value"} and isinstance(value["tag"], str):
        if value["tag"] == "None":
            return None
        if value["tag"] == "Some":
            return from_itf(value["value"], where)
        return {"tag": value["tag"], "value": from_itf(value["value"], where)}
    if keys == {"s", "e", "c"}:
        raise TraceError(where, None, "an integer in bignumber.js form ({s, e, c}): Quint's rust "
                                      "backend writes integers >= 10^15 this way; re-run quint with "
                                      "--backend=typescript")
    special = sorted(k for k in keys if k.startswith("#"))
    if special:
        raise TraceError(where, None, f"unsupported ITF form {special[0]!r}")
    return {k: from_itf(v, f"{where}.{k}") for k, v in value.items()}


def _fraction(text: str) -> float | None:
    """The finite fractional number `text` is the JSON text of, or None."""
    if len(text) > 64:
        return None
    try:
        number = json.loads(text)
    except ValueError:
        return None
    return number if isinstance(number, float) and number == number and abs(number) != float("inf") else None


def _map(pairs: Json, where: str) -> dict[str | int, Json]:
    """A Quint map: string keys (`str -> str` tags) or integer keys (`int -> Deferral`)."""
    if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise TraceError(where, None, '"#map" must hold a list of [key, value] pairs')
    result: dict[str | int, Json] = {}
    for raw_key, raw_value in pairs:
        key = from_itf(raw_key, where)
        if isinstance(key, bool) or not isinstance(key, (str, int)):
            raise TraceError(where, None, f"a map key must be a string or an integer, got "
                                          f"{json.dumps(key)[:80]}")
        result[key] = from_itf(raw_value, f"{where}.{key}")
    return result


def json_problem(value: Json) -> str | None:
    """Why `value` is no JSON value (an integer map key, say), or None when it is one."""
    if value is None or isinstance(value, (bool, int, str)):
        return None
    if isinstance(value, float):
        return None if value == value and abs(value) != float("inf") else f"the number {value}"
    if isinstance(value, list):
        return next((problem for item in value if (problem := json_problem(item))), None)
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"a map with {type(key).__name__} keys ({key!r}, ...), which a JSON object cannot have"
            problem = json_problem(item)
            if problem:
                return problem
        return None
    return f"a Python {type(value).__name__}"

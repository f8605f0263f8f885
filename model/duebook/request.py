"""The JSON face of the model (D-27): one docs/operations.md request in, one response out.

The Go API cannot be called with an unknown function or a missing argument; JSON can. So
the shape of a request is read first, and a request the API could not even express is
`invalid` like a wrong-typed argument, before the Book is looked at (D-17, D-21)."""

from __future__ import annotations

from typing import Any

from duespec.coverage import reached
from duespec.model.duebook.book import Book
from duespec.model.duebook.cancel import cancel
from duespec.model.duebook.claim import claim
from duespec.model.duebook.errors import INVALID
from duespec.model.duebook.expire import expire
from duespec.model.duebook.get import get
from duespec.model.duebook.queries import claimable, expirable
from duespec.model.duebook.schedule import schedule
from duespec.model.duebook.state import deferral_json
from duespec.model.duebook.validate import is_time

Json = Any

#: Each op with its argument names, exactly as docs/operations.md lists them.
ARGUMENTS: dict[str, tuple[str, ...]] = {
    "schedule": ("owner", "delay", "ttl"),
    "claim": ("id",),
    "cancel": ("id", "caller"),
    "expire": ("id",),
    "get": ("id",),
    "claimable": ("limit",),
    "expirable": ("limit",),
}


#: Ops that take no time: an invalid `now` sent with one is not read (D-27).
NOT_READING_NOW = frozenset({"cancel", "get"})

_KEYS = {op: frozenset(names) for op, names in ARGUMENTS.items()}


def malformed(problem: str) -> dict[str, Json]:
    return {"error": INVALID, "message": problem}


def step(book: Book, op: Json, args: Json, now: Json) -> dict[str, Json]:
    """Shape first (op, then args an object, then exactly the op's keys), then the op."""
    if not isinstance(op, str) or op not in ARGUMENTS:
        reached("D-27.unknown_op")
        return malformed(f"duebook has no op {op!r}; known: {', '.join(ARGUMENTS)}")
    if not isinstance(args, dict):
        reached("D-27.args_not_object")
        return malformed(f"args must be an object, got {args!r}")
    wanted = ARGUMENTS[op]
    if args.keys() != _KEYS[op]:
        reached("D-27.wrong_keys")
        missing = ", ".join(k for k in wanted if k not in args) or "none"
        unexpected = ", ".join(sorted(str(k) for k in args if k not in wanted)) or "none"
        return malformed(f"{op} takes {', '.join(wanted)}; missing: {missing}; unexpected: {unexpected}")
    if op in NOT_READING_NOW and not is_time(now):
        reached("D-27.now_not_read")  # and answered as usual: the op takes no time
    value, code = _run(book, op, args, now)
    if code is not None:
        return {"error": code}
    if isinstance(value, list):
        return {"ok": [deferral_json(d) for d in value]}
    return {"ok": deferral_json(value)}


def _run(book: Book, op: str, a: dict[str, Json], now: Json) -> tuple[Any, str | None]:
    if op == "schedule":
        return schedule(book, a["owner"], a["delay"], a["ttl"], now)
    if op == "claim":
        return claim(book, a["id"], now)
    if op == "cancel":
        return cancel(book, a["id"], a["caller"])
    if op == "expire":
        return expire(book, a["id"], now)
    if op == "get":
        return get(book, a["id"])
    if op == "claimable":
        return claimable(book, now, a["limit"])
    return expirable(book, now, a["limit"])

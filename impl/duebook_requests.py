"""duebook requests as JSON (docs/operations.md) for the production Book.

A caller speaking JSON can send what no Python call could: an op the Book lacks, `args`
that are no object, a missing or an extra argument. Each is `invalid` (spec D-27), raised
before the Book is touched, so it changes nothing."""

from __future__ import annotations

from typing import Any, Callable

from duespec.impl.duebook import Book, Deferral, Invalid

#: op -> (its argument names, as docs/operations.md lists them; how the Book is called).
CALLS: dict[str, tuple[frozenset[str], Callable[[Book, dict[str, Any], Any], Any]]] = {
    "schedule": (frozenset({"owner", "delay", "ttl"}),
                 lambda book, a, now: book.schedule(a["owner"], a["delay"], a["ttl"], now)),
    "claim": (frozenset({"id"}), lambda book, a, now: book.claim(a["id"], now)),
    "cancel": (frozenset({"id", "caller"}), lambda book, a, now: book.cancel(a["id"], a["caller"])),
    "expire": (frozenset({"id"}), lambda book, a, now: book.expire(a["id"], now)),
    "get": (frozenset({"id"}), lambda book, a, now: book.get(a["id"])),
    "claimable": (frozenset({"limit"}), lambda book, a, now: book.claimable(now, a["limit"])),
    "expirable": (frozenset({"limit"}), lambda book, a, now: book.expirable(now, a["limit"])),
}


def call(book: Book, op: Any, args: Any, now: Any) -> Deferral | list[Deferral]:
    """Run one request; every failure, a malformed request included, is a DuebookError."""
    known = CALLS.get(op) if type(op) is str or isinstance(op, str) else None
    if known is None:
        raise Invalid(f"unknown op {op!r}; the Book has {', '.join(CALLS)}")
    names, run = known
    if type(args) is dict and args.keys() == names:
        return run(book, args, now)  # the usual request, checked in two C comparisons
    if not isinstance(args, dict):
        raise Invalid(f"{op}: args must be a JSON object, got {type(args).__name__} {args!r}")
    if args.keys() != names:
        absent = sorted(names - args.keys())
        extra = sorted(map(str, args.keys() - names))
        raise Invalid(f"{op} takes exactly {', '.join(sorted(names))}"
                      + (f"; absent: {', '.join(absent)}" if absent else "")
                      + (f"; not an argument: {', '.join(extra)}" if extra else ""))
    return run(book, args, now)

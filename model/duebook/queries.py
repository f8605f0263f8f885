"""duespec's read-only queries (D-23, D-24): what a keeper could act on at `now`.

The seed has no queries; a realm needs them to find work without knowing ids. Neither
changes the Book."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.duebook.book import Book, Deferral
from duespec.model.duebook.errors import INVALID
from duespec.model.duebook.validate import is_time


def claimable(book: Book, now: object, limit: object) -> tuple[list[Deferral] | None, str | None]:
    """D-23: up to `limit` deferrals a Claim at `now` would accept, by (due_at, id)."""
    if not (is_time(now) and is_time(limit)):
        reached("D-19.claimable_invalid")
        return None, INVALID
    window = [
        d for d in book.open.values()
        if d.due_at <= now and (d.expires_at == 0 or now < d.expires_at)
    ]
    window.sort(key=lambda d: (d.due_at, d.id))
    reached("D-23.listed")
    return window[:limit], None


def expirable(book: Book, now: object, limit: object) -> tuple[list[Deferral] | None, str | None]:
    """D-24: up to `limit` deferrals an Expire at `now` would accept, by (expires_at, id)."""
    if not (is_time(now) and is_time(limit)):
        reached("D-19.expirable_invalid")
        return None, INVALID
    late = [d for d in book.open.values() if d.expires_at != 0 and d.expires_at <= now]
    late.sort(key=lambda d: (d.expires_at, d.id))
    reached("D-24.listed")
    return late[:limit], None

"""Claim (D-08): the at-most-once authorization; consumes before it returns."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.duebook.book import Book, Deferral
from duespec.model.duebook.effects import consume
from duespec.model.duebook.errors import EXPIRED, INVALID, NOT_DUE, NOT_FOUND
from duespec.model.duebook.validate import is_int64, is_time


def claim(book: Book, id: object, now: object) -> tuple[Deferral | None, str | None]:
    """Claimable on the half-open window [DueAt, ExpiresAt); ExpiresAt 0 has no end (D-11).

    Errors in precedence order (D-21): invalid, not_found, not_due, expired."""
    if not (is_int64(id) and is_time(now)):
        reached("D-19.claim_invalid")
        return None, INVALID
    deferral = book.open.get(id)
    if deferral is None:
        # Never allocated, or consumed by an earlier Claim, Cancel or Expire (D-05).
        reached("D-05.claim_not_found")
        return None, NOT_FOUND
    if now < deferral.due_at:
        reached("D-09.not_due")
        return None, NOT_DUE
    if deferral.expires_at != 0 and now >= deferral.expires_at:
        # The deferral stays open: only Expire or Cancel may consume it now (D-10).
        reached("D-10.expired")
        return None, EXPIRED
    reached("D-08.claimed")
    return consume(book, id), None

"""Expire (D-13): anyone may clear a deferral whose window has closed."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.duebook.book import Book, Deferral
from duespec.model.duebook.effects import consume
from duespec.model.duebook.errors import INVALID, NOT_EXPIRED, NOT_FOUND
from duespec.model.duebook.validate import is_int64, is_time


def expire(book: Book, id: object, now: object) -> tuple[Deferral | None, str | None]:
    """Errors in precedence order (D-21): invalid, not_found, not_expired."""
    if not (is_int64(id) and is_time(now)):
        reached("D-19.expire_invalid")
        return None, INVALID
    deferral = book.open.get(id)
    if deferral is None:
        reached("D-05.expire_not_found")
        return None, NOT_FOUND
    if deferral.expires_at == 0:
        # ttl = 0: no time is late enough (D-11).
        reached("D-11.expire_refused")
        return None, NOT_EXPIRED
    if now < deferral.expires_at:
        reached("D-13.not_expired")
        return None, NOT_EXPIRED
    reached("D-13.expired")
    return consume(book, id), None

"""Schedule (D-03): open a deferral due at now + delay, expiring ttl after that."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.duebook.book import Book, Deferral
from duespec.model.duebook.effects import open_deferral
from duespec.model.duebook.errors import FULL, INVALID
from duespec.model.duebook.validate import INT64_MAX, is_owner, is_time


def schedule(
    book: Book, owner: object, delay: object, ttl: object, now: object
) -> tuple[Deferral | None, str | None]:
    """Errors in precedence order (D-21): invalid, then full."""
    if not is_owner(owner):
        reached("D-15.schedule_invalid_owner")
        return None, INVALID
    if not (is_time(now) and is_time(delay) and is_time(ttl)):
        reached("D-19.schedule_invalid")
        return None, INVALID
    due_at = now + delay
    if due_at > INT64_MAX:
        reached("D-20.due_overflow")
        return None, INVALID
    # ExpiresAt must never wrap into 0, which would mean "never expires" (D-20).
    if ttl > 0 and due_at + ttl > INT64_MAX:
        reached("D-20.expiry_overflow")
        return None, INVALID
    if len(book.open) >= book.max_open:
        reached("D-07.full")
        return None, FULL
    if ttl == 0:
        reached("D-11.never_expires")
        expires_at = 0
    else:
        expires_at = due_at + ttl
    reached("D-03.scheduled")
    return open_deferral(book, owner, due_at, expires_at), None

"""Cancel (D-12): the owner withdraws an open deferral, at any time."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.duebook.book import Book, Deferral
from duespec.model.duebook.effects import consume
from duespec.model.duebook.errors import INVALID, NOT_FOUND, NOT_OWNER
from duespec.model.duebook.validate import is_int64, is_owner


def cancel(book: Book, id: object, caller: object) -> tuple[Deferral | None, str | None]:
    """No `now`: ownership is the only check, so the clock cannot matter.

    Errors in precedence order (D-21): invalid, not_found, not_owner."""
    if not is_int64(id):
        reached("D-19.cancel_invalid")
        return None, INVALID
    if not is_owner(caller):
        reached("D-15.cancel_invalid_caller")
        return None, INVALID
    deferral = book.open.get(id)
    if deferral is None:
        reached("D-05.cancel_not_found")
        return None, NOT_FOUND
    if caller != deferral.owner:
        reached("D-12.not_owner")
        return None, NOT_OWNER
    reached("D-12.cancelled")
    return consume(book, id), None

"""Get (D-14): read one open deferral."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.duebook.book import Book, Deferral
from duespec.model.duebook.errors import INVALID, NOT_FOUND
from duespec.model.duebook.validate import is_int64


def get(book: Book, id: object) -> tuple[Deferral | None, str | None]:
    """Consumed deferrals are gone, not archived, so they are not_found too (D-05, D-06)."""
    if not is_int64(id):
        reached("D-19.get_invalid")
        return None, INVALID
    deferral = book.open.get(id)
    if deferral is None:
        reached("D-05.get_not_found")
        return None, NOT_FOUND
    reached("D-14.found")
    return deferral, None

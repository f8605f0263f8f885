"""The Book and its Deferral values, and NewBook (D-01)."""

from __future__ import annotations

from dataclasses import dataclass

from duespec.coverage import reached
from duespec.model.duebook.errors import INVALID
from duespec.model.duebook.validate import is_int64


@dataclass(frozen=True)
class Deferral:
    """A value, never a handle into the Book (D-16): frozen, so a caller cannot edit it."""

    id: int
    owner: str
    due_at: int
    #: 0 means the deferral never expires (D-11).
    expires_at: int


@dataclass
class Book:
    max_open: int
    #: The id the next successful Schedule allocates (D-04).
    next_id: int
    #: Open deferrals only; consumed ones are deleted, not archived (D-06).
    open: dict[int, Deferral]


def new_book(max_open: object) -> tuple[Book | None, str | None]:
    """D-01: a Book needs room for at least one open deferral; ids start at 1 (Gno seqid)."""
    if not is_int64(max_open) or max_open < 1:  # type: ignore[operator]
        reached("D-01.invalid")
        return None, INVALID
    reached("D-01.created")
    return Book(max_open=max_open, next_id=1, open={}), None  # type: ignore[arg-type]

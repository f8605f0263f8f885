"""The only two writes the Book ever sees, named as in the Lean handlers.

Every handler validates first and calls one of these last, so a failure cannot have
written anything (D-17)."""

from __future__ import annotations

from duespec.model.duebook.book import Book, Deferral


def open_deferral(book: Book, owner: str, due_at: int, expires_at: int) -> Deferral:
    """Allocate the next id (never reused, D-04) and store the new open deferral."""
    deferral = Deferral(id=book.next_id, owner=owner, due_at=due_at, expires_at=expires_at)
    book.open[deferral.id] = deferral
    book.next_id += 1
    return deferral


def consume(book: Book, id: int) -> Deferral:
    """Remove an open deferral for good: no archive, no tombstone (D-02, D-06)."""
    return book.open.pop(id)

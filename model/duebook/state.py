"""The observable state of docs/operations.md (D-26): what two correct targets agree on."""

from __future__ import annotations

from typing import Any

from duespec.model.duebook.book import Book, Deferral


def deferral_json(d: Deferral) -> dict[str, Any]:
    return {"id": d.id, "owner": d.owner, "due_at": d.due_at, "expires_at": d.expires_at}


def observe(book: Book) -> dict[str, Any]:
    """Open deferrals by id; nothing about consumed ones, which are gone (D-06)."""
    return {
        "max_open": book.max_open,
        "next_id": book.next_id,
        "open": [deferral_json(book.open[id]) for id in sorted(book.open)],
    }

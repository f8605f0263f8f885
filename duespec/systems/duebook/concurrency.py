"""What a linearizability search needs of duebook (duespec/systems/concurrent.py)."""

from __future__ import annotations

from duespec.model import duebook as model
from duespec.systems.concurrent import Concurrency, no_links
from duespec.systems.duebook.adapter import ModelTarget


def fork_model(target: ModelTarget) -> ModelTarget:
    """A copy whose book moves on alone: the open dict copied, the Deferrals (frozen) shared."""
    book = target.book
    assert book is not None, "reset() first"
    copy = ModelTarget()
    copy.book = model.Book(max_open=book.max_open, next_id=book.next_id, open=dict(book.open))
    return copy


# Every call may touch every key: `schedule` allocates the one next_id and is refused
# at the cap on open deferrals, which every claim, cancel and expire moves. Expiry is
# an op a caller sends, never a background timeout.
CONCURRENCY = Concurrency(fork=fork_model, keys=lambda op, args: None, links=no_links,
                          next_timer=lambda observed: None, tick=None)

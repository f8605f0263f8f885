"""The duebook reference model: a Go-style mirror of the seed, one function per file.

Every function returns (value, None) or (None, code) as the Go API returns (value, err);
only the Must* wrappers raise. Requirement IDs refer to spec/duebook.md."""

from duespec.model.duebook.book import Book, Deferral, new_book
from duespec.model.duebook.cancel import cancel
from duespec.model.duebook.claim import claim
from duespec.model.duebook.errors import (
    EXPIRED,
    FULL,
    INVALID,
    NOT_DUE,
    NOT_EXPIRED,
    NOT_FOUND,
    NOT_OWNER,
    Panic,
)
from duespec.model.duebook.expire import expire
from duespec.model.duebook.get import get
from duespec.model.duebook.must import must_cancel, must_claim, must_expire, must_get, must_schedule
from duespec.model.duebook.queries import claimable, expirable
from duespec.model.duebook.request import ARGUMENTS, step
from duespec.model.duebook.schedule import schedule
from duespec.model.duebook.state import deferral_json, observe
from duespec.model.duebook.tags import OPERATION_TAGS, WRAPPER_TAGS
from duespec.model.duebook.validate import INT64_MAX, INT64_MIN

__all__ = [
    "Book", "Deferral", "new_book", "schedule", "claim", "cancel", "expire", "get",
    "claimable", "expirable", "step", "ARGUMENTS", "must_schedule", "must_claim", "must_cancel", "must_expire",
    "must_get", "observe", "deferral_json", "Panic", "INVALID", "NOT_FOUND", "NOT_DUE",
    "EXPIRED", "NOT_EXPIRED", "NOT_OWNER", "FULL", "OPERATION_TAGS", "WRAPPER_TAGS",
    "INT64_MAX", "INT64_MIN",
]

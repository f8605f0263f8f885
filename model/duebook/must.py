"""The Must* wrappers (D-18): the only functions in duebook that panic.

For realm code that treats any failure as fatal, as in the seed's `panic(err)` example."""

from __future__ import annotations

from typing import TypeVar

from duespec.coverage import reached
from duespec.model.duebook.book import Book, Deferral
from duespec.model.duebook.cancel import cancel
from duespec.model.duebook.claim import claim
from duespec.model.duebook.errors import Panic
from duespec.model.duebook.expire import expire
from duespec.model.duebook.get import get
from duespec.model.duebook.schedule import schedule

T = TypeVar("T")


def _value_or_panic(result: tuple[T | None, str | None]) -> T:
    value, code = result
    if code is not None:
        reached("D-18.panicked")
        raise Panic(code)
    reached("D-18.returned")
    return value  # type: ignore[return-value]


def must_schedule(book: Book, owner: object, delay: object, ttl: object, now: object) -> Deferral:
    return _value_or_panic(schedule(book, owner, delay, ttl, now))


def must_claim(book: Book, id: object, now: object) -> Deferral:
    return _value_or_panic(claim(book, id, now))


def must_cancel(book: Book, id: object, caller: object) -> Deferral:
    return _value_or_panic(cancel(book, id, caller))


def must_expire(book: Book, id: object, now: object) -> Deferral:
    return _value_or_panic(expire(book, id, now))


def must_get(book: Book, id: object) -> Deferral:
    return _value_or_panic(get(book, id))

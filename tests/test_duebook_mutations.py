"""Mutation check: realistic duebook bugs, each applied to the production implementation
as a subclass (the source is untouched). The default campaign must catch every one and
shrink it to a short counterexample; a bug it cannot catch is a hole in the machine."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from duespec.campaigns.run import run_campaign
from duespec.impl import duebook as impl
from duespec.systems.duebook import SYSTEM, ImplTarget

INT64_MAX = 2**63 - 1
#: A shrunk counterexample longer than this means the shrinker or the machine got worse.
SHORT = 8


def peek(book: impl.Book, id: Any) -> Any:
    """The open deferral `id` names, read through the unmutated Get, or None."""
    try:
        return impl.Book.get(book, id)
    except impl.DuebookError:
        return None


def is_time(value: Any) -> bool:
    return type(value) is int and 0 <= value <= INT64_MAX


MUTANTS: dict[str, type[impl.Book]] = {}


def mutant(cls: type[impl.Book]) -> type[impl.Book]:
    MUTANTS[cls.__name__] = cls
    return cls


# --- off by one at each edge of the window ---

@mutant
class ClaimOpensAtDueMinusOne(impl.Book):
    """`now + 1 >= due_at` instead of `now >= due_at`: the Gno timelock that ran early."""

    def claim(self, id: Any, now: Any) -> Any:
        deferral = peek(self, id)
        if deferral is not None and now == deferral.due_at - 1:
            now = deferral.due_at
        return super().claim(id, now)


@mutant
class ClaimStillOpenAtExpiresAt(impl.Book):
    """`now <= expires_at`: the closed window [due, expires] of Compound's grace period."""

    def claim(self, id: Any, now: Any) -> Any:
        deferral = peek(self, id)
        if deferral is not None and deferral.expires_at and now == deferral.expires_at:
            now = deferral.expires_at - 1
        return super().claim(id, now)


@mutant
class ExpireAllowedAtExpiresMinusOne(impl.Book):
    """`now >= expires_at - 1`: Expire consumes a deferral that is still claimable."""

    def expire(self, id: Any, now: Any) -> Any:
        deferral = peek(self, id)
        if deferral is not None and deferral.expires_at and now == deferral.expires_at - 1:
            now = deferral.expires_at
        return super().expire(id, now)


@mutant
class ClaimRefusedAtDueAt(impl.Book):
    """`now > due_at`: the first instant of the window is lost."""

    def claim(self, id: Any, now: Any) -> Any:
        deferral = peek(self, id)
        if deferral is not None and now == deferral.due_at:
            raise impl.NotDue("mutant: refused at due_at")
        return super().claim(id, now)


# --- lifecycle and authority ---

@mutant
class CancelByAnyone(impl.Book):
    """The ownership check forgotten: any non-empty caller cancels."""

    def cancel(self, id: Any, caller: Any) -> Any:
        deferral = peek(self, id)
        if deferral is not None and type(caller) is str and caller:
            caller = deferral.owner
        return super().cancel(id, caller)


@mutant
class NeverExpiringCanBeExpired(impl.Book):
    """`now >= expires_at` without the `expires_at != 0` guard: ttl 0 expires at once."""

    def expire(self, id: Any, now: Any) -> Any:
        deferral = peek(self, id)
        if deferral is not None and deferral.expires_at == 0 and is_time(now):
            return super().cancel(id, deferral.owner)
        return super().expire(id, now)


@mutant
class ExpiredClaimConsumesFirst(impl.Book):
    """Consume, then check the window (CVE-2021-39167's order): a refused claim still
    removes the deferral, so a failure changes the Book."""

    def claim(self, id: Any, now: Any) -> Any:
        try:
            return super().claim(id, now)
        except impl.DuebookError as refused:
            deferral = peek(self, id)
            if refused.code == "expired" and deferral is not None:
                super().cancel(id, deferral.owner)
            raise


# --- inputs and arithmetic ---

@mutant
class TtlOverflowNeverExpires(impl.Book):
    """`due_at + ttl` wraps and lands on the 0 sentinel: a deferral that should be refused
    as invalid is stored as never expiring."""

    def schedule(self, owner: Any, delay: Any, ttl: Any, now: Any) -> Any:
        if (is_time(now) and is_time(delay) and is_time(ttl) and ttl > 0
                and now + delay <= INT64_MAX < now + delay + ttl):
            ttl = 0
        return super().schedule(owner, delay, ttl, now)


@mutant
class BoolIsAnId(impl.Book):
    """`isinstance(id, int)` accepts True as id 1: Python's bool is an int subclass."""

    def claim(self, id: Any, now: Any) -> Any:
        return super().claim(int(id) if isinstance(id, bool) else id, now)


# --- queries ---

@mutant
class ClaimableById(impl.Book):
    """Claimable ordered by id alone, not (due_at, id): a keeper serves later work first."""

    def claimable(self, now: Any, limit: Any) -> Any:
        super().claimable(now, limit)  # the same validation and errors
        return sorted(super().claimable(now, INT64_MAX), key=lambda d: d.id)[:limit]


@mutant
class ZeroLimitMeansAll(impl.Book):
    """The Go idiom `if limit == 0 { limit = len }` where the contract says 0 is 0."""

    def expirable(self, now: Any, limit: Any) -> Any:
        return super().expirable(now, INT64_MAX if type(limit) is int and limit == 0 else limit)


@mutant
class ClaimableIncludesExpiresAt(impl.Book):
    """The keeper query closes the window with `<=`: it lists deferrals Claim refuses."""

    def claimable(self, now: Any, limit: Any) -> Any:
        super().claimable(now, limit)  # the same validation and errors
        listed = super().claimable(now, INT64_MAX)
        closing = [d for d in self.open_deferrals() if d.expires_at and d.expires_at == now]
        return sorted(listed + closing, key=lambda d: (d.due_at, d.id))[:limit]


# --- the id counter and the cap (these reach into the implementation's storage) ---

@mutant
class IdReusedAfterCancel(impl.Book):
    """The next id derived from storage (highest open id + 1) instead of a counter that
    only grows: cancelling the newest deferral hands its id out again, and a replayed
    Claim of the old id would authorize the new deferral."""

    def cancel(self, id: Any, caller: Any) -> Any:
        deferral = super().cancel(id, caller)
        self._compact()
        self._next_id = max((d.id for d in self.open_deferrals()), default=0) + 1
        return deferral


@mutant
class FailedScheduleBumpsCounter(impl.Book):
    """The id is allocated before the cap check, so a refused Schedule burns one."""

    def schedule(self, owner: Any, delay: Any, ttl: Any, now: Any) -> Any:
        try:
            return super().schedule(owner, delay, ttl, now)
        except impl.Full:
            self._next_id += 1
            raise


@mutant
class FullCheckedAfterInsert(impl.Book):
    """Insert first, check the cap afterwards: the error is right, but the deferral it
    refused is stored anyway."""

    def schedule(self, owner: Any, delay: Any, ttl: Any, now: Any) -> Any:
        if len(self) < self.max_open:
            return super().schedule(owner, delay, ttl, now)
        self._max_open += 1
        try:
            super().schedule(owner, delay, ttl, now)
        finally:
            self._max_open -= 1
        raise impl.Full("mutant: full, after storing it")


@mutant
class CapOffByOne(impl.Book):
    """`open > max_open` instead of `>=`: one deferral more than the cap fits."""

    def schedule(self, owner: Any, delay: Any, ttl: Any, now: Any) -> Any:
        if len(self) != self.max_open:
            return super().schedule(owner, delay, ttl, now)
        self._max_open += 1
        try:
            return super().schedule(owner, delay, ttl, now)
        finally:
            self._max_open -= 1


class LiveDeferral:
    """A view onto the Book's storage, as a careless "zero-copy" Get might return: reading
    it reads storage, and writing it rewrites the stored deferral (the seed forbids
    pointers into the Book)."""

    FIELDS = ("id", "owner", "due_at", "expires_at")

    def __init__(self, book: impl.Book, id: int) -> None:
        self.__dict__.update(book=book, id=id)

    def __getattr__(self, name: str) -> Any:
        if name not in self.FIELDS:
            raise AttributeError(name)
        return getattr(impl.Book.get(self.book, self.id), name)

    def __setattr__(self, name: str, value: Any) -> None:
        stored = impl.Book.get(self.book, self.id)
        fields = [value if field == name else getattr(stored, field) for field in self.FIELDS]
        self.book._slots[self.id - self.book._base] = impl.Deferral(*fields)


@mutant
class GetReturnsLiveHandle(impl.Book):
    """Get hands out a view instead of a value; the adapter edits what it is handed, as a
    caller may, and the edit lands in the Book."""

    def get(self, id: Any) -> Any:
        return LiveDeferral(self, super().get(id).id)


#: These take 8-14 s each to shrink: make test-long runs them.
SLOW_TO_SHRINK = {"BoolIsAnId", "ClaimableById", "ClaimableIncludesExpiresAt", "ExpireAllowedAtExpiresMinusOne"}


@pytest.fixture(params=[pytest.param(name, marks=pytest.mark.long) if name in SLOW_TO_SHRINK else name
                        for name in sorted(MUTANTS)])
def mutated_book(request: pytest.FixtureRequest) -> type[impl.Book]:
    return MUTANTS[request.param]


def test_the_default_campaign_catches_and_shrinks(mutated_book: type[impl.Book]) -> None:
    result = run_campaign(SYSTEM, partial(ImplTarget, mutated_book))
    assert not result.ok, f"{mutated_book.__name__} survived the default campaign"
    print(f"\n{mutated_book.__name__}: caught, {len(result.counterexample)} steps")
    for step in result.counterexample:
        print(f"  {step['op']} {json.dumps(step['args'])} now={step['now']} -> {json.dumps(step['result'])}")
    print("  " + result.failure.splitlines()[0])
    assert result.failure.startswith(("Divergence", "AssertionError")), result.failure
    assert 1 <= len(result.counterexample) <= SHORT

"""The input checks every operation shares: int64 as in Gno (D-19) and owners (D-15).

They only answer yes or no; the caller records the coverage tag and returns `invalid`,
before it writes anything (D-17)."""

from __future__ import annotations

from typing import TypeGuard

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def is_int64(value: object) -> TypeGuard[int]:
    """A Python int inside int64. bool is an int subclass in Python but not an integer in JSON."""
    return type(value) is int and INT64_MIN <= value <= INT64_MAX


def is_time(value: object) -> TypeGuard[int]:
    """now, delay, ttl and limit: a non-negative int64."""
    return is_int64(value) and value >= 0


def is_owner(value: object) -> TypeGuard[str]:
    """Owners and callers are non-empty strings; the Book is address-agnostic."""
    return type(value) is str and value != ""

"""A target that cannot be reset, checked one run at a time in a namespace of its own.

A production server keeps every object a campaign ever made in it, and offers no
`debug.reset`. Each run then gets a fresh token (`run-<12 hex>-`): every id, template and
tag the run makes carries it on the wire, and every answer has it taken out again, so the
model (reset alone) and the trace see the run's own logical ids, and the target's objects
of earlier runs stay out of sight. Which request fields are ids, how a listing is kept to
the run and how a run's objects are retired is the system's to say (`Namespacing`, given
by `System.namespace`); this module only applies it.

`reset(config)` never reaches the target: it retires what the last run made (where the
protocol allows: deleting schedules, settling promises; best effort, correctness never
depends on it) and takes a new token. The config the target runs with is its own, so a
campaign against it keeps one config for every run (`run_campaign(reset=False)`).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from itertools import count
from typing import Callable, Protocol

from duespec.targets.interface import Json, Target, TargetError, close_target, exchange_of

#: How a run's token starts; its hex part is NAMESPACE_HEX digits long.
TOKEN_PREFIX = "run-"
NAMESPACE_HEX = 12


class Namespacing(Protocol):
    """A system's description of how one run is kept apart on a target shared by many."""

    #: What a campaign run this way cannot see, printed before its verdict.
    blind_spots: str
    #: {requirement ID or coverage tag: why a campaign run this way cannot reach it}, for
    #: the coverage report (as System.out_of_reach).
    out_of_reach: dict[str, str]

    def request(self, op: str, args: Json, token: str) -> Json:
        """The request as sent: every id, template and tag the run makes carries `token`,
        and every listing asks for the run's objects only. `args` is never changed."""

    def response(self, op: str, response: dict[str, Json], token: str) -> dict[str, Json]:
        """The answer as the model would give it: `token` taken out of every id, and
        entries of other runs (which carry other tokens) left out of listings."""

    def undo(self, op: str, args: Json, response: dict[str, Json]) -> list[tuple[str, Json]]:
        """For one step as the model sees it (logical ids): the calls that retire what it
        made, sent when the run ends; answers to them are ignored."""

    def instant(self, now: Json) -> bool:
        """Whether the target takes `now` as an instant. A run also sends times the protocol
        refuses (past the end of time, negative, no integer); its retiring calls are sent at
        the latest one it takes, since at a refused one they would be refused in turn and
        leave the run's objects to every later run."""


def strip_token(value: Json, token: str) -> Json:
    """`value` with `token` removed from every string and key in it."""
    if isinstance(value, str):
        return value.replace(token, "") if token in value else value
    if isinstance(value, dict):
        return {strip_token(key, token): strip_token(item, token) for key, item in value.items()}
    if isinstance(value, list):
        return [strip_token(item, token) for item in value]
    return value


class NamespacedTarget:
    """`inner`, never reset: one namespace per reset (see the module's docstring)."""

    def __init__(self, inner: Target, namespacing: Namespacing, tokens: Callable[[], str]) -> None:
        self.inner, self.namespacing, self.tokens = inner, namespacing, tokens
        self.token = tokens()
        #: Calls that retire what this run made, keyed so each is sent once.
        self.undo: dict[str, tuple[str, Json]] = {}
        #: The latest instant the run sent that the target takes (Namespacing.instant).
        self.last_now = 0

    @property
    def last_exchange(self) -> str | None:
        return exchange_of(self.inner)

    def reset(self, config: dict[str, Json]) -> None:
        self.retire()
        self.token = self.tokens()

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        if self.namespacing.instant(now):
            self.last_now = now
        response = self.inner.step(op, self.namespacing.request(op, args, self.token), now)
        if not isinstance(response, dict):
            return response  # the judge says what is wrong with it
        answer = self.namespacing.response(op, response, self.token)
        for call in self.namespacing.undo(op, args, answer):
            self.undo.setdefault(json.dumps(call, sort_keys=True), call)
        return answer

    def observe(self) -> dict[str, Json]:
        raise TargetError("a target that is not reset holds other runs' objects: its whole state "
                          "is not this run's (--observe none)", not_offered=True)

    def retire(self) -> None:
        """Send the run's retiring calls, in the run's namespace; what they answer or raise
        is not the run's verdict."""
        calls, self.undo = list(self.undo.values()), {}
        for op, args in calls:
            try:
                self.inner.step(op, self.namespacing.request(op, args, self.token), self.last_now)
            except TargetError:
                return  # a target that cannot answer now says so on the next run's first step

    def close(self) -> None:
        try:
            self.retire()
        finally:
            close_target(self.inner)


class NamespacedFactory:
    """Targets from `factory`, each run in a namespace no run before it used: tokens come
    from a random nonce of this campaign and a count, so two campaigns against one server
    (or the same campaign run again) never share one. The logical ids a run sends are the
    model's and the trace's, whatever the token: shrinking and replay do not need it."""

    def __init__(self, factory: Callable[[], Target], namespacing: Namespacing) -> None:
        self.factory, self.namespacing = factory, namespacing
        self.nonce, self.runs = secrets.token_hex(16), count(1)
        self.name = getattr(factory, "name", None)

    def token(self) -> str:
        digest = hashlib.sha256(f"{self.nonce}:{next(self.runs)}".encode()).hexdigest()
        return f"{TOKEN_PREFIX}{digest[:NAMESPACE_HEX]}-"

    def __call__(self) -> NamespacedTarget:
        return NamespacedTarget(self.factory(), self.namespacing, self.token)

    def close(self) -> None:
        close = getattr(self.factory, "close", None)
        if callable(close):
            close()


def namespaced(factory: Callable[[], Target], namespacing: Namespacing | None, system: str) -> NamespacedFactory:
    """`factory`'s targets, one namespace per run; ValueError when the system has none."""
    if namespacing is None:
        raise ValueError(f"{system} has no id namespaces: its target must offer reset")
    return NamespacedFactory(factory, namespacing)


__all__ = ["Namespacing", "NamespacedFactory", "NamespacedTarget", "namespaced", "strip_token"]

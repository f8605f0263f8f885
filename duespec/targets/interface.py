"""The one interface every system under test speaks.

A target takes JSON values and answers JSON values, so the reference model, the
production implementation, a Python object of someone else's and a program in another
language reached over stdin/stdout are interchangeable. Time is never read from a clock:
it arrives with every step, as in the Lean handlers `Req -> now -> M Res`.
"""

from __future__ import annotations

import marshal
from dataclasses import dataclass
from typing import Any, Callable, Protocol

Json = Any

#: Response keys that carry prose for people; comparisons ignore them.
PROSE_KEYS = frozenset({"message"})


class Target(Protocol):
    """Porcupine-sized: start fresh, take a step, show your state.

    The three methods below are all a target must have. `TargetBase` names the optional
    hooks, each with what it is for and its default; a target may subclass it or just
    define the hooks it has. The harness reads the optional hooks only through the
    functions at the end of this module (`close_target`, `exchange_of`, `fast_checks`),
    never by probing a target itself."""

    def reset(self, config: dict[str, Json]) -> None:
        """Discard everything and start a fresh instance configured by `config`."""

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        """Apply one operation at logical time `now`; return its response."""

    def observe(self) -> dict[str, Json]:
        """The whole observable state in canonical form (lists sorted, JSON only)."""


class TargetBase:
    """The optional hooks of a target, with their defaults."""

    #: What went over the wire for the latest step (an HTTP target's request and response
    #: bodies), shown under a difference at that step; None: nothing to show.
    last_exchange: str | None = None

    def close(self) -> None:
        """Release whatever the target holds (files, processes, connections). Default:
        nothing to release."""

    messages: Callable[[], list[Json]] | None = None
    """`messages()`: the messages the target sent since the last call, in the order it
    sent them: what its workers receive, which answers alone never show. Each is an outbox
    entry of docs/operations.md, `{"address": str, "message": {"kind": "execute", "taskId":
    str, "version": int}}` or `{"address": str, "message": {"kind": "unblock", "promise":
    record}}`. A response-only campaign (--observe none) compares them after every step
    (duespec.judge.messages_verdict). Raising TargetError with `not_offered` (or
    NotImplementedError) says the target has no such hook after all. Default: not offered."""

    messages_keyed: bool = False
    """Whether the target's workers poll a keyed outbox (the Lean's, OutboxEntry.key)
    rather than receive each message as it is sent: then a message sent again under the
    same key before the worker polls replaces the earlier one (stored where the first was,
    as a table keyed by it keeps its row), and `messages()` gives one per key per step.
    The model's messages are compared so (resonate-pg: its outbox table). Default: each
    message sent is received."""

    snapshot: Callable[[], Any] | None = None
    """`snapshot()`: an oracle's whole state, to give back to `restore(snapshot)`, which
    takes back every step since. The judge uses it where a response-only campaign meets a
    known class in which the target refused a request the model took (a cron edge the
    server does not accept, say): the model's step is taken back, both sides hold the same
    again, and the run goes on past the class instead of ending there. Default: not
    offered (such a run ends at the class)."""

    # The two fast checks below are trusted only from duespec's own adapters (the
    # judge's one rule, duespec.judge.trusts): they let a deep state or a long trace be
    # checked without building every answer. Default: not offered.
    state_is: Callable[[Json], bool] | None = None
    """`state_is(want)`: whether observe() would give `want` exactly, told without
    building it; False whenever unsure, and the caller observes and compares."""

    recorded_step_checker: Callable[[Any], Callable[[dict[str, Json]], Json]] | None = None
    """`recorded_step_checker(implied)`: a function that takes a recorded step (with its
    `result`), applies it, and returns None when the answer is that result exactly
    (applying it to `implied`, a tracker of the implied state, if any), else the answer."""


@dataclass(frozen=True)
class FastChecks:
    """A target's own fast checks (TargetBase.state_is, recorded_step_checker)."""

    state_is: Callable[[Json], bool] | None
    make_step_checker: Callable[[Any], Callable[[dict[str, Json]], Json]] | None

    def step_checker(self, implied: Any) -> Callable[[dict[str, Json]], Json] | None:
        return self.make_step_checker(implied) if self.make_step_checker is not None else None


def fast_checks(target: Target) -> FastChecks | None:
    """The fast checks a target offers, or None; whether to trust them is the judge's call."""
    state_is = getattr(target, "state_is", None)
    checker = getattr(target, "recorded_step_checker", None)
    if not callable(state_is) and not callable(checker):
        return None
    return FastChecks(state_is if callable(state_is) else None, checker if callable(checker) else None)


def exchange_of(target: Target) -> str | None:
    """What the target says went over the wire for its latest step, if it says."""
    exchange = getattr(target, "last_exchange", None)
    return exchange if isinstance(exchange, str) else None


def messages_of(target: Target) -> Callable[[], list[Json]] | None:
    """The target's `messages` hook (TargetBase.messages), if it has one."""
    messages = getattr(target, "messages", None)
    return messages if callable(messages) else None


def messages_keyed(target: Target) -> bool:
    """Whether the target's workers poll a keyed outbox (TargetBase.messages_keyed)."""
    return getattr(target, "messages_keyed", False) is True


def close_target(target: Target | None) -> None:
    """Call the target's close(), if it has one; what it raises is the caller's to judge."""
    close = getattr(target, "close", None)
    if callable(close):
        close()


def close_quietly(target: Target | None) -> None:
    """Close a target whose failure is already known: what closing raises says nothing new."""
    try:
        close_target(target)
    except Exception:
        pass


TargetFactory = Callable[[], Target]


class UserInterrupt(KeyboardInterrupt):
    """Ctrl-C (SIGINT) while duespec runs: passes the target boundary (targets.resolve),
    unlike a KeyboardInterrupt that target code raises itself. Its argument, when given,
    names the signal that stopped the command ("SIGTERM" before a campaign's first search).
    Defined here, below the boundary, so that a command that runs no target can catch
    Ctrl-C without importing it."""


class TargetError(Exception):
    """The target could not answer at all (crashed, spoke garbage, timed out).

    Distinct from a divergence: a divergence is a wrong answer, this is no answer.
    `unusable` marks a target that cannot be used at all (it cannot be built, or answers
    in a shape the interface does not allow): exit 2 rather than a finding (exit 1).
    An exception from a Python target's own code carries its type and last frames."""

    def __init__(self, message: str, *, unusable: bool = False, exc_type: str | None = None,
                 exc_message: str = "", frames: tuple[str, ...] = (), not_offered: bool = False) -> None:
        super().__init__(message)
        self.unusable, self.exc_type, self.exc_message, self.frames = unusable, exc_type, exc_message, frames
        #: The target says it does not offer what was asked (an HTTP server without
        #: duespec's debug.snap): not a failure, a capability it lacks.
        self.not_offered = not_offered

    @property
    def says_not_offered(self) -> bool:
        """The call failed because the target does not offer it: it said so (an HTTP
        server answering 400, 404 or 501), or a Python target raised NotImplementedError."""
        return self.not_offered or self.exc_type == "NotImplementedError"


class TargetTooSlow(TargetError):
    """A call did not return within --timeout: a finding of its own kind ("target too
    slow"), one class per op, never a hang. `seconds` is the bound it passed."""

    def __init__(self, message: str, *, seconds: float) -> None:
        super().__init__(message)
        self.seconds = seconds


def same_json(a: Json, b: Json) -> bool:
    """JSON equality that tells 1 from 1.0 and from true, unlike Python's ==.

    A target in another language that answers `"next_id": 2.0` or `true` for `1` is wrong,
    and the comparison must say so. Python's == (in C) settles the values; then, where
    marshal writes both sides to the same bytes (it writes each exact type its own way and
    refuses subclasses), the types agree too, also in C; else (keys in another order, a
    subclass) a walk checks that every value has the same type on both sides, which is
    the part == misses."""
    if not a == b:
        return False
    try:
        if marshal.dumps(a, _MARSHAL_VERSION) == marshal.dumps(b, _MARSHAL_VERSION):
            return True
    except ValueError:  # a subclass, or nested past marshal's depth
        pass
    return _types_agree(a, b)


#: The newest marshal format without back-references: equal values are written alike
#: whether or not they are the same objects.
_MARSHAL_VERSION = 2


def _types_agree(a: Json, b: Json) -> bool:
    """Given a == b: the same JSON type everywhere (containers recursively)."""
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        pairs = ((value, b[key]) for key, value in a.items())
    elif kind is list:
        pairs = zip(a, b)
    else:
        return True
    for x, y in pairs:
        inner = type(x)
        if inner is not type(y):
            return False
        if (inner is dict or inner is list) and not _types_agree(x, y):
            return False
    return True


def responses_agree(expected: dict[str, Json], actual: dict[str, Json]) -> bool:
    return same_json(comparable(expected), comparable(actual))


def comparable(response: dict[str, Json]) -> dict[str, Json]:
    """The part of a response that must agree between oracle and target."""
    return {k: v for k, v in response.items() if k not in PROSE_KEYS}

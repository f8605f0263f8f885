"""The systems duespec specifies, each described once for the harness."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from duespec.campaigns.lockstep import LockstepMachine
from duespec.targets.interface import TargetFactory

NAMES = ("duebook", "schedules")


@dataclass(frozen=True)
class System:
    name: str
    #: Named readings of the spec; the first is the default.
    profiles: tuple[str, ...]
    #: profile -> the config a fresh instance is reset with.
    config: Callable[[str], dict[str, Any]]
    model: TargetFactory
    impl: TargetFactory
    #: Rules of the lockstep machine (the campaign binds oracle and target).
    machine: type[LockstepMachine]
    #: Requirement catalogue in duespec.spec, for the coverage report.
    catalogue: str
    #: Each op with its argument names, as docs/operations.md lists them.
    operations: dict[str, tuple[str, ...]]
    #: Top-level keys of the observable state, as docs/operations.md lists them.
    state_keys: tuple[str, ...]
    #: Coverage tags every default campaign must reach (a test fails if one is missed).
    required_tags: frozenset[str] = field(default_factory=frozenset)
    #: Arguments an op may leave out (docs/operations.md marks them `?`).
    optional_args: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: config -> a tracker of the observable state that a run's responses imply, when
    #: every state change shows in some response (replay then needs no model to know
    #: the state a trace with recorded results must leave).
    implied_state: Callable[[dict[str, Any]], ImpliedState] | None = None
    #: Requirement ID -> why this machine's campaigns do not reach it (and what checks it).
    unreached_reasons: dict[str, str] = field(default_factory=dict)


class ImpliedState(Protocol):
    def apply(self, op: str, args: dict[str, Any], response: dict[str, Any]) -> None:
        """Take in one step and the response the spec gives it."""

    def state(self) -> dict[str, Any]:
        """The observable state the responses so far imply, in observe()'s canonical form."""


def get_system(name: str) -> System:
    if name not in NAMES:
        raise KeyError(f"unknown system {name!r}; known: {', '.join(NAMES)}")
    return importlib.import_module(f"duespec.systems.{name}").SYSTEM

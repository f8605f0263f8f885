"""The systems duespec checks, each described once for the harness: the registry.

A system is one `System` object; everything the harness knows of it is reachable from
there, and no generic module names one. duespec ships two (BUILT_IN). More are plugged in
without changing duespec: DUESPEC_SYSTEMS names each one's `module:attribute`
(comma-separated), the module importable as a target's is (docs/architecture.md shows a
whole system written that way).
"""

from __future__ import annotations

import argparse
import importlib
import os
import random
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

from duespec.exits import UsageError
from duespec.targets.interface import TargetFactory

if TYPE_CHECKING:  # a campaign's (Hypothesis); the registry is read by commands that run none
    from duespec.systems.machine import ProtocolMachine
    from duespec.targets.namespaced import Namespacing

#: The systems duespec ships: name -> the module whose SYSTEM describes it.
BUILT_IN = {"duebook": "duespec.systems.duebook", "schedules": "duespec.systems.schedules"}
#: The environment variable that plugs in more systems: `module:attribute` of a System each,
#: comma-separated.
SYSTEMS_VARIABLE = "DUESPEC_SYSTEMS"

#: A step, the model's state before the rule that took it and after -> the public reads
#: (op, args) that show what the step touched: how a target with no observe() has its
#: state checked.
Probes = Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], list[tuple[str, dict[str, Any]]]]

#: A long run's next call: (rng, the model's state as of the last comparison, now) ->
#: (op, args, now).
Workload = Callable[[random.Random, dict[str, Any], int], tuple[str, dict[str, Any], int]]


@dataclass(frozen=True)
class LongRun:
    """A system's `conform --long-run N` (duespec.campaigns.long_run): a seeded random
    workload of mostly successful calls, run far past where a Hypothesis run goes."""

    call: Workload
    #: The profile's config -> the long run's.
    config: Callable[[dict[str, Any]], dict[str, Any]]
    #: The clock's first instant.
    start_now: int


@dataclass(frozen=True)
class MalformationMatrix:
    """Every malformation a system's contract defines, as the grid of (op, field, form)
    cells its campaign must send: each op's arguments, its `now` and its `args` in each
    malformed form the contract names (docs/protocol.md section 5). The machine marks a
    cell reached with `tag(cell)`; the coverage report counts the grid and names each cell
    a campaign did not reach, with why (docs/campaigns.md, coverage)."""

    #: The requirement of the catalogue the cells' tags belong to (DR-09).
    requirement: str
    #: (op, field, form), every cell.
    cells: tuple[tuple[str, str, str], ...]
    #: Malformations the contract defines that no campaign of this machine sends -> why.
    unsent: dict[str, str] = field(default_factory=dict)

    def tag(self, op: str, field: str, form: str) -> str:
        return f"{self.requirement}.{op}/{field}/{form}"


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
    machine: type[ProtocolMachine]
    #: Requirement catalogue, for the coverage report: a file name in duespec.spec, or the
    #: absolute path of a catalogue kept elsewhere (a system plugged in from outside).
    catalogue: str
    #: Each op with its argument names, as docs/operations.md lists them.
    operations: dict[str, tuple[str, ...]]
    #: Top-level keys of the observable state, as docs/operations.md lists them.
    state_keys: tuple[str, ...]
    #: Coverage tags a default campaign must reach in every profile that can (see
    #: required_in; a test fails if one is missed).
    required_tags: frozenset[str] = field(default_factory=frozenset)
    #: Arguments an op may leave out (docs/operations.md marks them `?`).
    optional_args: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: config -> a tracker of the observable state that a run's responses imply, when
    #: every state change shows in some response (replay then needs no model to know
    #: the state a trace with recorded results must leave).
    implied_state: Callable[[dict[str, Any]], ImpliedState] | None = None
    #: Requirement ID -> why no campaign of this machine reaches it, in any profile (and what
    #: checks it instead).
    unreached_reasons: dict[str, str] = field(default_factory=dict)
    #: Other catalogues whose IDs the model's tags may carry (the schedules model tags the
    #: cron dialect's C-02/C-08): known IDs, though not this system's requirements.
    tag_catalogues: tuple[str, ...] = ()
    #: Draw without Hypothesis's pool of constants read from local source files, so that a
    #: seed draws the same runs in `duespec check` as in a test, whatever else is loaded
    #: (duespec.campaigns.run.without_local_constants). Both systems set it; a machine that
    #: drives a campaign's rules some other way must draw the same way to run the same runs.
    seeded_draws_only: bool = False
    #: profile -> {requirement ID or tag: why that profile's campaigns cannot reach it}. An ID
    #: puts the whole requirement out of the profile's reach, a tag ("ENV-01.lease") one
    #: branch; a required tag out of a profile's reach is not required in that profile.
    out_of_reach: dict[str, dict[str, str]] = field(default_factory=dict)
    #: The workload of `conform --long-run`, None if the system has none.
    long_run: LongRun | None = None
    #: Whether a target may be an HTTP server (`http://HOST:PORT`, duespec.wire.http_target):
    #: only a system whose ops are Resonate's have that wire.
    http_targets: bool = False
    #: The module in duespec.spec whose PROOFS `duespec prove` runs, None if none.
    proofs: str | None = None
    #: The public reads that check a target with no observe() (`conform --observe none`),
    #: and what they cannot show (printed with the coverage report); None: every target
    #: must have observe().
    probes: Probes | None = None
    blind_spots: str = ""
    #: Ops a campaign sends that the system does not have (an unknown op, answered as
    #: malformed): nameable in --ops, --skip-ops and a declaration's `op` like any other.
    unknown_ops: tuple[str, ...] = ()
    #: The model's answer -> whether it refuses the request as malformed (a 400, `invalid`):
    #: part of a divergence class's cause, and what `conform --inputs valid` does not send.
    #: None: no answer is told apart as a refusal, and --inputs valid is a usage error.
    refuses: Callable[[Any], bool] | None = None
    #: Either side's answer -> whether the request took effect (a 2xx, `ok`). In a
    #: response-only check a masked difference where one side took a request and the other
    #: did not ends the run: what each then holds differs where no read was compared, and
    #: every later difference would be its consequence. None: such runs go on.
    accepts: Callable[[Any], bool] | None = None
    #: (op, args, required tags) -> the args with every promise and schedule they create
    #: carrying those tags (`--require-tag`, a declarations file's [inputs]); None when the
    #: system's requests carry no tags. Only a well-formed tags object gets the tags, so a
    #: request that is malformed on purpose stays malformed.
    tag_request: Callable[[str, Any, Mapping[str, str]], Any] | None = None
    #: required tags -> {requirement ID or tag: why a campaign whose every promise and
    #: schedule carries them cannot reach it}.
    out_of_reach_with_tags: Callable[[Mapping[str, str]], dict[str, str]] | None = None
    #: How one run is kept apart on a target that cannot be reset (`conform --reset none`,
    #: duespec.targets.namespaced): which request fields are ids, templates and tags the run
    #: makes, how its answers lose the run's token and other runs' entries, how a run's
    #: objects are retired; its `blind_spots` say what such a campaign cannot see. None:
    #: every target must offer reset.
    namespace: Namespacing | None = None
    #: The malformations the campaign sends to every op (the coverage report's grid); None
    #: when the system defines none.
    matrix: MalformationMatrix | None = None

    @property
    def nameable_ops(self) -> tuple[str, ...]:
        """Every op a campaign may send: the system's and its unknown ops."""
        return (*self.operations, *self.unknown_ops)

    def out_of_reach_in(self, profile: str, tags: Mapping[str, str] | None = None) -> dict[str, str]:
        """Requirement ID or tag -> why a campaign in `profile` (whose promises and
        schedules carry `tags`) cannot reach it."""
        out = dict(self.out_of_reach.get(profile, {}))
        if tags and self.out_of_reach_with_tags is not None:
            out.update({key: why for key, why in self.out_of_reach_with_tags(tags).items() if key not in out})
        return out

    def reasons_in(self, profile: str, tags: Mapping[str, str] | None = None) -> dict[str, str]:
        """Requirement ID -> why a campaign in `profile` does not reach it."""
        return {**self.unreached_reasons,
                **{key: why for key, why in self.out_of_reach_in(profile, tags).items() if "." not in key}}

    def excused_tags_in(self, profile: str, tags: Mapping[str, str] | None = None) -> dict[str, str]:
        """Tag -> why a campaign in `profile` cannot take that branch (of a requirement it
        otherwise reaches)."""
        return {key: why for key, why in self.out_of_reach_in(profile, tags).items() if "." in key}

    def required_in(self, profile: str, tags: Mapping[str, str] | None = None) -> frozenset[str]:
        """The required tags a default campaign in `profile` must reach: those it can."""
        out = self.out_of_reach_in(profile, tags)
        return frozenset(tag for tag in self.required_tags
                         if tag not in out and tag.split(".", 1)[0] not in out)


class ImpliedState(Protocol):
    def apply(self, op: str, args: dict[str, Any], response: dict[str, Any]) -> None:
        """Take in one step and the response the spec gives it."""

    def state(self) -> dict[str, Any]:
        """The observable state the responses so far imply, in observe()'s canonical form."""


def names() -> tuple[str, ...]:
    """Every system's name: the built-in ones, then those DUESPEC_SYSTEMS plugs in."""
    return (*BUILT_IN, *_plugged())


def system_argument(text: str) -> str:
    """argparse type for a SYSTEM argument: a known system's name, else an error naming
    the known ones (and why DUESPEC_SYSTEMS could not be read, if it could not)."""
    try:
        known = names()
    except UsageError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if text not in known:
        raise argparse.ArgumentTypeError(f"unknown system {text!r}; known: {', '.join(known)}")
    return text


#: The help of a SYSTEM argument: its choices, built in and added.
SYSTEM_HELP = (f"the system to check: {' or '.join(BUILT_IN)} (or one added through DUESPEC_SYSTEMS: "
               f"docs/architecture.md)")


def model_of(name: str) -> TargetFactory:
    """The reference model of system `name`: `get_system(name).model`, without importing
    what only a campaign uses (Hypothesis, the implementation), which a built-in system's
    package leaves to its SYSTEM. What `duespec linearize` needs, and all it loads."""
    if name in BUILT_IN:
        return importlib.import_module(BUILT_IN[name]).ModelTarget
    return get_system(name).model


def operations_of(name: str) -> dict[str, tuple[str, ...]]:
    """`get_system(name).operations`, loading as little as model_of does. (Asked once per
    event read: the module loaded is taken from sys.modules, as import_module costs more.)"""
    if name in BUILT_IN:
        module = BUILT_IN[name]
        return (sys.modules.get(module) or importlib.import_module(module)).OPERATIONS
    return get_system(name).operations


def get_system(name: str) -> System:
    """The system called `name`; KeyError naming the known ones when there is none."""
    if name in BUILT_IN:
        return importlib.import_module(BUILT_IN[name]).SYSTEM
    plugged = _plugged()
    if name in plugged:
        return plugged[name]
    raise KeyError(f"unknown system {name!r}; known: {', '.join(names())}")


_loaded: dict[str, dict[str, System]] = {}


def _plugged() -> dict[str, System]:
    """The systems DUESPEC_SYSTEMS names, loaded once per value of the variable; a name
    that cannot be loaded, is no System or takes a name already taken is a UsageError."""
    value = os.environ.get(SYSTEMS_VARIABLE, "")
    if value not in _loaded:
        found: dict[str, System] = {}
        for spec in filter(None, (part.strip() for part in value.split(","))):
            system = _load(spec)
            if system.name in BUILT_IN or system.name in found:
                raise UsageError(f"{SYSTEMS_VARIABLE}: {spec} is a system named {system.name!r}, "
                                 f"a name already taken")
            found[system.name] = system
        _loaded[value] = found
    return _loaded[value]


def _load(spec: str) -> System:
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise UsageError(f"{SYSTEMS_VARIABLE}: {spec!r} is not module:attribute (e.g. mypkg.counter:SYSTEM)")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # what importing someone's module raised is theirs to fix
        raise UsageError(f"{SYSTEMS_VARIABLE}: cannot import {module_name!r}: "
                         f"{type(error).__name__}: {error}") from None
    system = getattr(module, attribute, None)
    if not isinstance(system, System):
        raise UsageError(f"{SYSTEMS_VARIABLE}: {spec} is {type(system).__name__}, not a "
                         f"duespec.systems.System")
    return system

"""What a system's rules are written against: the protocol machine.

A system describes its protocol as a Hypothesis rule-based state machine whose rules read
like the protocol and call `self.call(op, args, now)`. What a call does (step an oracle and
a target, judge the answers, compare the states) is the campaign's: duespec.campaigns.
lockstep binds a system's rules to a `LockstepMachine` that implements this interface. So
a system names no campaign and no judge, and the layers stay in order (systems below the
judge, the judge below the campaigns).
"""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis.stateful import RuleBasedStateMachine

Json = Any


class ProtocolMachine(RuleBasedStateMachine):
    """The interface a system's rules use. A campaign supplies every method below; a
    system overrides only `check_properties` and `depth_reached`, which have defaults."""

    #: The config every run is reset with (a machine may draw its own per run: reconfigure).
    config: ClassVar[dict[str, Json]]
    #: Ops left out of the campaign (--ops/--skip-ops): a rule may steer around them.
    excluded_ops: ClassVar[frozenset[str]] = frozenset()
    #: Ops the machine's openings (initialize rules) and deep runs leave out when the
    #: campaign does, rather than take: they are not "still taken by every run's opening".
    skippable_in_opening: ClassVar[frozenset[str]] = frozenset()
    #: Tags every promise and schedule a request creates must carry (--require-tag); the
    #: campaign applies them to every request (System.tag_request).
    request_tags: ClassVar[dict[str, str]] = {}
    #: Scale of the deep runs a machine mixes in (0: none); `--depth`.
    depth: ClassVar[float] = 1.0
    #: The oracle (normally the model) and the steps taken so far, set by the campaign.
    oracle: Any
    steps: list[dict[str, Json]]

    @property
    def latest_step(self) -> dict[str, Json]:
        """The step `call` took last, as the oracle answered it: the last of `steps`, or
        one the campaign did not send to the target (--inputs valid), which `steps` leaves
        out."""
        raise NotImplementedError("a campaign binds the rules to a machine (duespec.campaigns.lockstep)")

    @property
    def latest_step_taken_back(self) -> bool:
        """Whether the campaign took the oracle's latest step back (the target refused it,
        of a known class: duespec.judge.StepJudge.step): the oracle's state is the one
        before it, so a property of that step's transition has none to judge."""
        raise NotImplementedError("a campaign binds the rules to a machine (duespec.campaigns.lockstep)")

    def call(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        """Take one step on the oracle and the target; the oracle's response."""
        raise NotImplementedError("a campaign binds the rules to a machine (duespec.campaigns.lockstep)")

    def oracle_state(self) -> dict[str, Json]:
        """The oracle's observable state after the latest step."""
        raise NotImplementedError("a campaign binds the rules to a machine (duespec.campaigns.lockstep)")

    def reconfigure(self, config: dict[str, Json]) -> bool:
        """Reset both sides to this run's own config; False when the target keeps its own
        (one that cannot be reset): the run goes on with the campaign's config."""
        raise NotImplementedError("a campaign binds the rules to a machine (duespec.campaigns.lockstep)")

    def check_properties(self) -> None:
        """A system's own invariants; each failure raises AssertionError naming its property."""

    def depth_reached(self) -> dict[str, int]:
        """Named sizes this run reached (ids allocated, entries open...), for the report."""
        return {}

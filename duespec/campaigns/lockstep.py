"""The lockstep stateful machine: one oracle, one target, every step judged.

Each system subclasses `LockstepMachine` with rules that read like its protocol and call
`self.call(op, args)`. The oracle (normally the model) and the target take the same step
and the judge (duespec.judge) compares their responses, and after every rule their whole
observable states. Every run records its steps, so the shrunk failing run can be written
out as a trace.

What the judge finds, this machine acts on: a difference fails the run (Hypothesis then
shrinks it); a masked one (a class already found, or a declared difference) does not. A
declared difference masks exactly the places it names: the rest of the answer and the
state are still compared and the run goes on. A class already found ends the run at its
state difference (or the state after its masked response), as does a masked target
failure: nothing after it could be compared. A request that already ran past --timeout
under a found `target too slow` class is not sent again when a run makes it again after
the same config and steps (Hypothesis replays prefixes often: every run's opening is
drawn from a few values): the run ends before it, as it would have after waiting the
timeout out. Every run ended early is counted with its
reason (Masks.runs_ended), for the verdict line.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Any, ClassVar

from hypothesis import reject
from hypothesis.stateful import invariant

from duespec.campaigns.classes import Masks, RunPrefix, slow_key
from duespec.systems import Probes
from duespec.systems.machine import ProtocolMachine
from duespec.judge import (
    Difference,
    FOUND,
    Divergence,
    FindingKind,
    Masked,
    StepJudge,
    TargetRaised,
    Verdict,
    raised_verdict,
)
from duespec.targets.interface import Json, Target, TargetFactory, close_target


class CampaignStopped(BaseException):
    """The campaign was told to stop (SIGTERM, SIGINT, its --budget): the run in progress
    ends here, at a step boundary, and the search keeps what it has found. A
    BaseException, so that no rule or target boundary takes it for a failure."""


class LockstepMachine(ProtocolMachine):
    """The campaign's side of a system's ProtocolMachine: `lockstep` binds the system's
    rules to it and sets the class attributes below on the class it makes."""

    oracle_factory: ClassVar[TargetFactory]
    target_factory: ClassVar[TargetFactory]
    config: ClassVar[dict[str, Json]]
    #: Steps of the most recent run; after a failure, the shrunk counterexample.
    last_steps: ClassVar[list[dict[str, Json]]] = []
    #: Steps taken by every run of this class, for throughput figures.
    total_steps: ClassVar[int] = 0
    #: What no longer fails (None: every difference fails).
    masks: ClassVar[Masks | None] = None
    #: Coverage tags collected while the oracle takes a step (run_campaign registers it).
    step_tags: ClassVar[Counter[str] | None] = None
    #: Ops left out of the campaign (--ops/--skip-ops): a step with one ends its run.
    excluded_ops: ClassVar[frozenset[str]] = frozenset()
    #: The config the most recent run was reset with: a machine may draw its own per run.
    last_config: ClassVar[dict[str, Json]] = {}
    #: Scale of the deep runs a machine mixes in (0: none); `--depth`.
    depth: ClassVar[float] = 1.0
    #: Per finished run, what `depth_reached` measured: how deep the campaign went.
    depths: ClassVar[list[dict[str, int]]] = []
    #: For a target with no observe(): the system's public reads of what a step touched,
    #: taken after every rule in place of comparing whole states (None: states compared).
    probes: ClassVar[Probes | None] = None
    #: How the system puts request_tags on a request (System.tag_request).
    tag_request: ClassVar[Any] = None
    #: Whether the campaign has been told to stop (a signal, its --budget): checked before
    #: every step and comparison, so a run ends at the next one (CampaignStopped).
    stop_requested: ClassVar[Any] = staticmethod(lambda: False)
    #: The target is never reset (a namespace per run, duespec.targets.namespaced): it runs
    #: with its own config, so the machine's drawn configs are not applied.
    fixed_config: ClassVar[bool] = False
    #: Only requests the spec accepts are sent (--inputs valid): the rest the oracle alone
    #: answers (StepJudge.valid_only), counted under "not compared".
    valid_only: ClassVar[bool] = False
    #: Whether the model's answer refuses a request as malformed (System.refuses).
    refuses: ClassVar[Any] = None
    #: Whether an answer took effect (System.accepts).
    accepts: ClassVar[Any] = None

    def __init__(self) -> None:
        super().__init__()
        self.oracle: Target = type(self).oracle_factory()
        self.target: Target | None = None
        try:
            self.target = type(self).target_factory()
        except Exception as error:
            self.act_on(raised_verdict(None, "reset", error, masks=self.masks), error)
        # A response-only check compares what workers were sent too, where the target says.
        self.judge = StepJudge(self.oracle, self.target, masks=self.masks, tags=self.step_tags,
                               observe=self.probes is None, messages=self.probes is not None,
                               refuses=self.refuses, valid_only=self.valid_only, accepts=self.accepts)
        #: Steps before this one have had their public reads taken (a response-only check),
        #: and the model's state then (empty before the first step).
        self.read_up_to = 0
        self.read_state: dict[str, Json] = {}
        #: This run so far, digested, once the campaign knows a request too slow to send again.
        self.prefix: RunPrefix | None = None
        self.steps: list[dict[str, Json]] = self.judge.steps
        type(self).last_steps = self.steps
        self.act_on(self.judge.reset(self.config))
        type(self).last_config = dict(self.config)

    def reconfigure(self, config: dict[str, Json]) -> bool:
        """Reset both sides to this run's own config, drawn by the machine's first
        initialize rule: a target that only works with the default config must not pass.
        A target that is not reset (fixed_config) keeps the campaign's: False."""
        if self.fixed_config:
            return False
        self.act_on(self.judge.reset(config))
        type(self).last_config = dict(config)
        return True

    def call(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        """Take one step on both sides; return the oracle's response for the rules to use."""
        if self.stop_requested():
            raise CampaignStopped()
        if op in self.excluded_ops:
            if self.masks is not None:
                self.masks.runs_ended[f"a rule took op {op}, which the campaign leaves out (--ops/--skip-ops)"] += 1
            reject()
        if self.request_tags and self.tag_request is not None:
            args = self.tag_request(op, args, self.request_tags)
        masks = self.masks
        if masks is not None and masks.slow_requests:
            if self.prefix is None:
                self.prefix = RunPrefix(type(self).last_config)
            slow = masks.slow_requests.get(self.prefix.key(self.steps, op, args, now))
            if slow is not None:  # this run made it before, and it ran past --timeout: the run ends here
                masks.runs_ended[slow] += 1
                reject()
        sent = self.judge.not_sent
        expected, verdict = self.judge.step(op, args, now)
        if self.judge.not_sent != sent and masks is not None:
            masks.not_sent += 1
            return expected
        type(self).total_steps += 1
        if verdict is not None:
            if (masks is not None and type(verdict) is Masked and verdict.ends_run
                    and verdict.labels[0].startswith(FOUND + str(FindingKind.TARGET_TOO_SLOW))):
                masks.slow_requests[slow_key(type(self).last_config, self.steps)] = verdict.labels[0]
            self.act_on(verdict)
        return expected

    def act_on(self, verdict: Verdict, cause: BaseException | None = None) -> None:
        """Fail the run with the judge's difference, or count what a mask kept from being
        compared (and end the run where nothing after it could be compared)."""
        if verdict is None:
            return
        if type(verdict) is Masked:
            masks = self.masks
            assert masks is not None
            if verdict.skipped:
                masks.skipped.update(verdict.labels)
            if verdict.ends_run:
                masks.runs_ended[verdict.labels[0]] += 1
                reject()
            return
        assert isinstance(verdict, Difference)
        if verdict.kind in (FindingKind.TARGET_RAISED, FindingKind.TARGET_TOO_SLOW):
            raise TargetRaised(verdict) from cause
        raise Divergence(verdict)

    @invariant()
    def invariants_hold(self) -> None:
        """The one registered invariant, since Hypothesis's bookkeeping costs per invariant:
        the whole observable states agree, then each property of `check_properties`."""
        if self.stop_requested():
            raise CampaignStopped()
        if self.steps:
            if self.probes is None:
                self.act_on(self.judge.state())
            else:
                self.read_back()
        self.check_properties()

    def read_back(self) -> None:
        """A response-only check: read back, through the system's public reads, what the
        rule's steps touched; each read is a step like any other, its answer judged."""
        taken, now = self.steps[self.read_up_to:], self.steps[-1]["now"]
        before, state = self.read_state, self.oracle_state()
        reads = dict.fromkeys((op, json.dumps(args, sort_keys=True)) for step in taken
                              for op, args in self.probes(step, before, state)  # type: ignore[misc]
                              if op not in self.excluded_ops)
        for op, args in reads:
            self.call(op, json.loads(args), now)
        self.read_up_to, self.read_state = len(self.steps), state  # the reads changed nothing

    def oracle_state(self) -> dict[str, Json]:
        """The oracle's observable state after the latest step, observed once per step."""
        return self.judge.oracle_state()

    @property
    def latest_step(self) -> dict[str, Json]:
        return self.judge.latest_step

    @property
    def latest_step_taken_back(self) -> bool:
        return self.judge.taken_back

    def teardown(self) -> None:
        reached = self.depth_reached()
        if reached:
            type(self).depths.append(reached)
        self.oracle.close()
        in_flight = sys.exc_info()[1]  # Hypothesis tears down in a `finally`
        try:
            close_target(self.target)
        except Exception as error:
            if in_flight is None:
                self.act_on(raised_verdict(self.steps[-1] if self.steps else None, "close", error,
                                           self.judge.cause(), self.masks), error)


def lockstep(base: type[ProtocolMachine], oracle: TargetFactory, target: TargetFactory,
             config: dict[str, Any], masks: Masks | None = None,
             excluded_rules: frozenset[str] = frozenset(),
             excluded_ops: frozenset[str] = frozenset(), depth: float = 1.0,
             probes: Probes | None = None,
             request_tags: dict[str, str] | None = None, tag_request: Any = None,
             stop_requested: Any = None, fixed_config: bool = False,
             refuses: Any = None, valid_only: bool = False, accepts: Any = None) -> type[LockstepMachine]:
    """A runnable machine class: a system's rules (`base`) but `excluded_rules`, bound to
    a LockstepMachine (unless `base` already is one), with this oracle, this target, this
    config, these masks, this depth."""
    attributes: dict[str, Any] = {
        "oracle_factory": staticmethod(oracle),
        "target_factory": staticmethod(target),
        "config": dict(config),
        "last_steps": [],
        "total_steps": 0,
        "masks": masks,
        "excluded_ops": excluded_ops,
        "last_config": dict(config),
        "depth": depth,
        "depths": [],
        "probes": staticmethod(probes) if probes is not None else None,
        "request_tags": dict(request_tags or {}),
        "tag_request": staticmethod(tag_request) if tag_request is not None else None,
        "stop_requested": staticmethod(stop_requested or (lambda: False)),
        "fixed_config": fixed_config,
        "valid_only": valid_only,
        "refuses": staticmethod(refuses) if refuses is not None else None,
        "accepts": staticmethod(accepts) if accepts is not None else None,
    }
    for name in excluded_rules:  # still callable by other rules, no longer drawn as a rule
        attributes[name] = _plain(getattr(base, name))
    bases = (base,) if issubclass(base, LockstepMachine) else (base, LockstepMachine)
    return type(base.__name__, bases, attributes)  # type: ignore[return-value]


def _plain(rule: Any) -> Any:
    def not_a_rule(self: ProtocolMachine, *args: Any, **kwargs: Any) -> Any:
        return rule(self, *args, **kwargs)
    not_a_rule.__name__ = not_a_rule.__qualname__ = rule.__name__
    return not_a_rule

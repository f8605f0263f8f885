"""Run one differential campaign: a lockstep machine, a seed, a budget, a verdict.

A campaign may look for every divergence class (duespec.campaigns.classes) instead of
stopping at the first: when Hypothesis has found and shrunk a failure, its class is
recorded and masked, and the search runs again, until a search finds nothing new or
`max_classes` undeclared classes are found. Every failure is shortened by the trace minimiser
where it can be, then replayed twice from a reset and once on the model
(duespec.campaigns.reset_leak): a target whose answers depend on earlier runs is reported as
"state survives reset", and the search stops there.

A call past --timeout is a finding ("target too slow: OP took > Ns (--timeout)"), one
class per op, never a hang: its shrinking is bounded by SLOW_SHRINK_RUNS (every other
class's by SHRINK_STEPS; then the shortest failing run of the class seen is kept), it is
not replayed by the reset-leak probe, and the search goes on to other classes.

Shrinking budgets count work, never wall seconds, so a counterexample does not depend on
the machine's load; SHRINK_WALL_SECONDS is only a last resort against a target that hangs
short of --timeout, and a counterexample it cuts says so.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import itertools
import os
import re
import sys
import time
from collections import Counter
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TextIO
from unittest.mock import patch

from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Flaky, Unsatisfiable, UnsatisfiedAssumption
from hypothesis.reporting import with_reporter
from hypothesis.stateful import run_state_machine_as_test

from duespec import __version__
from duespec.campaigns.classes import Masks, slow_key
from duespec.campaigns.database import Stats
from duespec.campaigns.lockstep import CampaignStopped, lockstep
from duespec.campaigns.minimise import minimise
from duespec.campaigns.reset_leak import leak_trace, probe
from duespec.campaigns.scope import Scope
from duespec.campaigns.stopping import Stopper
from duespec.coverage import collecting
from duespec.systems import System
from duespec.judge import FOUND, Divergence, DivergenceClass, FindingKind, TargetRaised, raised_verdict
from duespec.limits import MAX_EXAMPLES
from duespec.targets.interface import TargetError, TargetFactory
from duespec.targets.namespaced import namespaced

#: Where a failing campaign writes its shrunk counterexample unless told otherwise.
DEFAULT_FAILURE_DIR = Path(".duespec") / "failures"
#: Failing runs a search may replay while shrinking a `target too slow` failure: each one
#: waits the whole --timeout for the slow call.
SLOW_SHRINK_RUNS = 10
#: Steps a search may run while shrinking any other failure, counted from its first
#: failing run: Hypothesis replays the run hundreds of times, and a server that takes
#: milliseconds a call would spend many minutes on one class. Generous: the shrinking of
#: a duebook or schedules class takes a few thousand to a few tens of thousands of steps.
SHRINK_STEPS = 200_000
#: Wall-clock seconds of shrinking after which a search stops whatever its work: a last
#: resort, reported as such, for a target that answers each call just short of --timeout.
SHRINK_WALL_SECONDS = 900.0


@dataclass(frozen=True)
class CampaignProgress:
    examples: int
    steps: int
    seconds: float
    #: A failing run was found and Hypothesis is now shrinking it.
    shrinking: bool


ProgressCallback = Callable[[CampaignProgress], None]


@dataclass
class Finding:
    """One divergence class, with the shrunk run that shows it."""

    kind: FindingKind
    divergence_class: DivergenceClass | None
    #: What went wrong, for people (Hypothesis's printed program left out).
    summary: str
    #: The summary with Hypothesis's notes.
    failure: str
    counterexample: list[dict[str, Any]]
    #: The declared entries that cover it; empty when it is not declared.
    declared: list[Any] = field(default_factory=list)
    #: The config its run was reset with (the machine may draw one per run).
    config: dict[str, Any] = field(default_factory=dict)
    #: A leak's evidence (reset_leak.Probe.evidence): both passes' answers and the model's.
    evidence: dict[str, Any] | None = None
    #: Its class is in the campaign's baseline (--baseline): KNOWN, not NEW.
    known: bool = False
    #: The chunks of the campaign that found it (duespec.campaigns.parallel), and its place
    #: in the earliest one's findings: what orders classes the same however a campaign is split.
    chunks: list[int] = field(default_factory=lambda: [0])
    position: int = 0
    #: Found by replaying a saved example (--database), not by a new run.
    from_database: bool = False
    #: Where its counterexample was written, and what the report printed of it (for --json).
    trace: Path | str | None = None
    details: str | None = None
    #: Its counterexample was shrunk (a declared class's is kept as first seen: NOT_SHRUNK).
    shrunk: bool = True
    #: Its counterexample's steps with the target's own answers (duespec.campaigns.baseline:
    #: what a baseline replays to see that a known class still answers as it did), or None.
    witness: dict[str, Any] | None = None

    @property
    def gates(self) -> bool:
        """Whether it fails the campaign: neither declared nor known from its baseline."""
        return not self.declared and not self.known

    @property
    def label(self) -> str:
        return self.divergence_class.label() if self.divergence_class else f"{self.kind} (inside duespec)"


@dataclass
class CampaignResult:
    system: str
    profile: str
    seed: int
    examples: int
    steps: int
    seconds: float
    coverage: Counter[str]
    #: The first finding that gates (Finding.gates)'s failure; None when the campaign held.
    failure: str | None = None
    #: Its shrunk failing run, as trace steps; empty when the campaign held.
    counterexample: list[dict[str, Any]] = field(default_factory=list)
    #: The config every run was reset with (a trace header needs it).
    config: dict[str, Any] = field(default_factory=dict)
    #: The first undeclared finding's kind when the campaign failed.
    failure_kind: FindingKind | None = None
    #: The failure without Hypothesis's printed program: what went wrong, for people.
    failure_summary: str | None = None
    #: Every class found, declared ones included, in the order found.
    findings: list[Finding] = field(default_factory=list)
    #: What the masks kept from being compared.
    masks: Masks | None = None
    scope: Scope | None = None
    #: Searches run (one per class found, plus the one that found nothing new).
    searches: int = 1
    #: Why the search stopped before finding nothing new, if it did.
    stopped: str | None = None
    #: Per run, the sizes it reached (ProtocolMachine.depth_reached): how deep it went.
    depths: list[dict[str, int]] = field(default_factory=list)
    #: Seconds into the campaign when the first failing run ended (before shrinking); a
    #: chunked campaign counts from its own start, not its chunk's.
    first_failure_seconds: float | None = None
    #: Which run that was (1 = the first run of the campaign; chunks counted in order).
    first_failure_run: int | None = None
    #: Why the campaign stopped before its runs were done (SIGTERM, SIGINT, --budget).
    cut_short: str | None = None
    #: Runs asked for (--examples) in the search that was cut short.
    examples_asked: int = 0
    #: The tags every promise and schedule of the campaign carried (--require-tag).
    request_tags: dict[str, str] = field(default_factory=dict)
    #: The target was never reset: each run in a namespace of its own (--reset none).
    namespaced: bool = False
    #: The chunks of the campaign it ran, of `total_chunks` (duespec.campaigns.parallel); a
    #: campaign run whole is its own chunk 0 of 1.
    chunks: list[int] = field(default_factory=lambda: [0])
    total_chunks: int = 1
    #: The share of the chunks it ran (--shard I/N), and on how many processes (--jobs).
    shard: tuple[int, int] | None = None
    jobs: int = 1
    #: A merged campaign's per-chunk results, in chunk order (what `duespec merge` combines).
    parts: list[CampaignResult] = field(default_factory=list)
    #: When its chunk started, by the clock every process of the machine shares (time.time()).
    started_at: float | None = None
    #: What the example database (--database) replayed and saved.
    database_stats: Stats | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None

    def runs_ended_early(self) -> str:
        """How many runs ended before their last step, and why: for the verdict line."""
        ended = self.masks.runs_ended if self.masks is not None else Counter()
        total = sum(ended.values())
        if not total:
            return "0 runs ended early"
        reasons = [f"{count:,} {label}" for label, count in ended.most_common(3)]
        more = f"; and {len(ended) - 3} more reasons under 'not compared'" if len(ended) > 3 else ""
        return f"{total:,} runs ended early ({'; '.join(reasons)}{more})"

    def not_compared(self) -> list[str]:
        """What the campaign did not compare, for the report: never silently dropped."""
        lines: list[str] = []
        if self.masks is not None:
            lines += [f"{count:,} steps: a difference not compared ({label})"
                      for label, count in self.masks.skipped.most_common()]
            lines += [f"{count:,} runs ended early, the steps after it not taken ({label})"
                      for label, count in self.masks.runs_ended.most_common()]
            if self.masks.not_sent:
                lines.append(f"{self.masks.not_sent:,} requests the spec refuses, not sent (--inputs valid, or of a "
                             f"class already found or known)")
        if self.scope is not None:
            lines.append(self.scope.describe())
        return lines


def run_campaign(system: System, target: TargetFactory, *, profile: str | None = None,
                 seed: int = 0, examples: int = 200, step_count: int = 50,
                 oracle: TargetFactory | None = None,
                 progress: ProgressCallback | None = None,
                 declared: Iterable[Any] = (), max_classes: int = 1,
                 scope: Scope | None = None, depth: float = 1.0, observe: bool = True,
                 database: Callable[[Masks], Any] | None = None,
                 request_tags: dict[str, str] | None = None, stopper: Stopper | None = None,
                 on_finding: Callable[[int, Finding], None] | None = None,
                 reset: bool = True, baseline: Iterable[DivergenceClass] = (),
                 valid_only: bool = False, config: dict[str, Any] | None = None) -> CampaignResult:
    """Drive `target` against the model (or `oracle`) until `examples` runs pass, finding
    up to `max_classes` undeclared divergence classes (1: stop at the first; declared
    classes never count, so a declared difference never ends the search).

    `progress`, when given, is called as each run starts (it decides how often to speak).
    `depth` scales the deep runs the machine mixes in (0: none). `observe=False` checks a
    target that has no observe(): every response is compared, and its state is read
    through the system's public reads (System.probes) after every rule instead. `database`,
    when given, makes the Hypothesis example database of a search from the masks in force
    (duespec.campaigns.database): saved failures are replayed before new generation.
    `request_tags` go on every promise and schedule a request creates (System.tag_request).
    `stopper` cuts the campaign short (duespec.campaigns.stopping; the caller installs its
    signal handlers, as conform does): the classes found so far are kept, and a failure
    being shrunk is kept as it stands when the grace period ends. `reset=False` checks a
    target that cannot be reset: every run (and every replay of one while shrinking) in
    a namespace of its own (duespec.targets.namespaced), the model reset alone, the
    campaign's config kept for every run, and the state checked response-only."""
    if not reset:
        target = namespaced(target, system.namespace, system.name)
        observe = False
    if not observe and system.probes is None:
        raise ValueError(f"{system.name} has no public reads to check a target without observe() by")
    stopper = stopper or Stopper()
    request_tags = dict(request_tags or {})
    if request_tags and system.tag_request is None:
        raise ValueError(f"{system.name}'s requests carry no tags: --require-tag does not apply")
    profile = profile or system.profiles[0]
    if profile not in system.profiles:
        raise ValueError(f"{system.name} has no profile {profile!r}; known: {', '.join(system.profiles)}")
    config = {**system.config(profile), **(config or {})}  # `config`: keys set over the profile's (--catch-up)
    masks = Masks(profile, declared=list(declared), known=list(baseline))
    if valid_only and system.refuses is None:
        raise ValueError(f"{system.name} does not tell a refused request apart: --inputs valid does not apply")
    oracle = oracle or system.model
    machine = lockstep(system.machine, oracle, target, config, masks,
                       scope.excluded_rules if scope else frozenset(),
                       scope.excluded_ops if scope else frozenset(), depth,
                       probes=None if observe else system.probes,
                       request_tags=request_tags, tag_request=system.tag_request,
                       stop_requested=lambda: stopper.should_stop(counted["failed_runs"] > 0) or slow_budget_spent(),
                       fixed_config=not reset, refuses=system.refuses, valid_only=valid_only,
                       accepts=system.accepts)
    counted: dict[str, Any] = {"examples": 0, "failed_runs": 0, "first_failure": None, "first_failure_run": None,
                               "smallest": None, "shrink_since": None, "smallest_of_class": None, "shrink_cut": None,
                               "first_class": None, "shrink_steps": 0}

    def slow_budget_spent() -> bool:
        """A search shrinking a failure stops when its budget of work is spent (steps, or
        failing runs of a too-slow class; none for a declared class), or at the wall-clock
        last resort: the run in progress ends, once (Hypothesis may then replay its best run
        as it stands)."""
        since = counted["shrink_since"]
        if since is None:
            return False
        first_class = counted["first_class"]
        slow = first_class is not None and first_class.kind == FindingKind.TARGET_TOO_SLOW
        if first_class is not None and masks.declarations_of(first_class) is not None:
            # A difference the target declares is reported, not debugged: its search moves
            # on to what is left at once rather than spend a shrinking budget on it.
            cut = NOT_SHRUNK
        elif slow and counted["failed_runs"] > SLOW_SHRINK_RUNS:
            cut = f"shrinking stopped after {SLOW_SHRINK_RUNS} slow runs, its budget"
        elif not slow and machine.total_steps - counted["shrink_steps"] > SHRINK_STEPS:
            cut = f"shrinking stopped after {SHRINK_STEPS:,} steps, its budget"
        elif time.perf_counter() - since > SHRINK_WALL_SECONDS:
            cut = (f"shrinking stopped after {SHRINK_WALL_SECONDS:g}s of wall clock, a last resort: this "
                   f"counterexample depends on the machine's speed")
        else:
            return False
        counted["shrink_since"], counted["shrink_cut"] = None, cut
        return True

    started = time.perf_counter()
    base_init, base_teardown = machine.__init__, machine.teardown

    def counting_init(self: Any) -> None:
        counted["examples"] += 1
        if progress is not None:
            progress(CampaignProgress(counted["examples"], machine.total_steps,
                                      time.perf_counter() - started, counted["failed_runs"] > 0))
        try:
            base_init(self)
        except Exception as error:  # failed at its reset: Hypothesis never tears it down
            note_failure(error, getattr(self, "steps", []))
            raise

    def noting_teardown(self: Any) -> None:
        # Hypothesis tears down in a `finally`, so a failing run's exception is in flight
        # (its own control flow uses BaseExceptions such as StopTest).
        note_failure(sys.exc_info()[1], self.steps)
        base_teardown(self)

    def note_failure(in_flight: BaseException | None, steps: list[dict[str, Any]]) -> None:
        if isinstance(in_flight, Exception) and not isinstance(in_flight, UnsatisfiedAssumption):
            counted["failed_runs"] += 1
            if counted["first_failure"] is None:
                counted["first_failure"] = time.perf_counter() - started
                counted["first_failure_run"] = counted["examples"]
            # the smallest failing run so far: what a search cut short while shrinking keeps
            smallest = counted["smallest"]
            if smallest is None or len(steps) < len(smallest[1]):
                counted["smallest"] = (in_flight, list(steps), dict(machine.last_config))
            found = getattr(in_flight, "divergence_class", None)
            if counted["failed_runs"] == 1 and not counted["shrink_cut"]:  # its shrinking is bounded from now
                counted["shrink_since"], counted["first_class"] = time.perf_counter(), found
                counted["shrink_steps"] = machine.total_steps
            if found is not None and found == counted["first_class"]:
                best = counted["smallest_of_class"]
                if best is None or len(steps) < len(best[1]):
                    counted["smallest_of_class"] = (in_flight, list(steps), dict(machine.last_config))

    machine.__init__ = counting_init  # type: ignore[method-assign]
    machine.teardown = noting_teardown  # type: ignore[method-assign]
    run_settings = settings(
        max_examples=examples, stateful_step_count=step_count, deadline=None,
        database=database(masks) if database is not None else None,
        derandomize=False, print_blob=False, report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, *([Phase.reuse] if database is not None else []), Phase.generate, Phase.shrink],
    )
    findings: list[Finding] = []
    searches, stopped = 0, None

    def keep_as_it_stands() -> None:
        """Stopped at once (stopping.StopNow): the failure being shrunk or replayed is kept
        as the smallest failing run seen, not replayed from a reset."""
        nonlocal stopped
        stopped = f"stopped at once by {stopper.reason}: the search in progress ended where it stood"
        error, steps, run_config = counted["smallest"] or (None, [], config)
        found = getattr(error, "divergence_class", None)
        if found is None or any(found == other.divergence_class for other in findings):
            return
        summary = f"{type(error).__name__}: {error}"
        note = "\n(stopped at once while this failure was being shrunk or checked: not replayed from a reset)"
        finding = Finding(found.kind, found, summary + note, summary + note, steps, config=run_config)
        finding.declared = masks.add(found)
        findings.append(finding)

    with collecting() as coverage, collecting() as step_tags, stopper.searching(keep_as_it_stands):
        machine.step_tags = step_tags
        while True:
            if stopper.requested:
                break
            searches += 1
            counted["failed_runs"], counted["smallest"] = 0, None
            counted["shrink_since"], counted["smallest_of_class"], counted["shrink_cut"] = None, None, None
            counted["first_class"] = None
            hypothesis_seed(seed)(machine)
            try:
                # the report is ours; Hypothesis's would repeat it
                with with_reporter(_quiet), (without_local_constants() if system.seeded_draws_only
                                             else nullcontext()), hypothesis_shrinks_by_work():
                    run_state_machine_as_test(machine, settings=run_settings)
                break
            except Unsatisfiable:
                stopped = "every run of the last search ended at a masked difference"
                break
            except CampaignStopped:
                # its shrinking budget spent: the shortest run of the class found is the class's
                cut = counted["smallest_of_class"] if counted["shrink_cut"] and not stopper.requested else None
                if (cut or counted["smallest"]) is None:
                    break  # cut short with nothing failing in this search
                error, steps, run_config = cut or counted["smallest"]
                finding = finding_of(error, steps, oracle, target, run_config, observe)
                if cut is not None:
                    _note_shrink_cut(finding, counted["shrink_cut"])
                    finding.shrunk = counted["shrink_cut"] != NOT_SHRUNK
            except Exception as error:  # the machine's verdict, reported rather than raised
                run_config = dict(machine.last_config)
                steps = list(machine.last_steps)
                if stopper.reason is not None and not isinstance(error, (Divergence, TargetRaised)):
                    # A run that Hypothesis replays (its shrunk run, or data it generated) ended
                    # by the stop, which it then calls flaky: the stop's doing, not the target's.
                    if counted["smallest"] is None:
                        break  # cut short with nothing failing in this search
                    error, steps, run_config = counted["smallest"]
                elif counted["shrink_cut"] and counted["smallest_of_class"] is not None and not isinstance(
                        error, (Divergence, TargetRaised)):
                    error, steps, run_config = counted["smallest_of_class"]  # flaky by the shrinking budget's cut
                elif isinstance(error, Flaky) and _too_slow(counted["first_class"]) and counted["smallest_of_class"]:
                    # A call past --timeout may finish on a replay, and a target still busy with
                    # the call abandoned at the deadline is slow to answer the replay's first: the
                    # slowness's doing, reported as its class, never as answers that change.
                    error, steps, run_config = counted["smallest_of_class"]
                    counted["shrink_cut"] = counted["shrink_cut"] or SLOW_REPLAYS_DIFFER
                elif isinstance(error, Flaky) and counted["smallest"] is None and any(
                        _too_slow(other.divergence_class) for other in findings):
                    # nothing failed: a run that a too-slow class's call ended did not end there
                    # when replayed (the call finished in time, or the target was still busy)
                    stopped = (f"a run ended by a call past --timeout ended elsewhere when replayed "
                               f"({SLOW_REPLAYS_DIFFER}): the search stopped there")
                    break
                # not once told to stop: it replays, shortening the run before probing it
                shorten = None if stopper.reason is not None else partial(
                    _shorter, oracle=oracle, target=target, masks=masks, observe=observe, refuses=system.refuses,
                    accepts=system.accepts)
                finding = finding_of(error, steps, oracle, target, run_config, observe, shorten)
                if counted["shrink_cut"]:
                    _note_shrink_cut(finding, counted["shrink_cut"])
            findings.append(finding)
            found = finding.divergence_class
            finding.known = found is not None and found in masks.known
            if finding.kind.outcome not in ("divergence", "target_error") or found is None:
                break  # nothing to mask: a leak, a failure that does not reproduce, duespec's own
            if any(found == other.divergence_class for other in findings[:-1]):
                stopped = f"the class {found.label()} was found again although masked"
                break
            finding.declared = masks.add(found)
            if found.kind == FindingKind.TARGET_TOO_SLOW and finding.counterexample:
                masks.slow_requests[slow_key(finding.config, finding.counterexample)] = FOUND + found.label()
            if on_finding is not None:
                on_finding(len(findings), finding)
            if sum(1 for other in findings if other.gates) >= max_classes:
                # declared and known classes are reported and searched past: they are no verdict
                stopped = (None if max_classes == 1 else
                           f"stopped at {max_classes} undeclared classes (--max-classes); there may be more")
                break
    seconds = time.perf_counter() - started
    first = next((f for f in findings if f.gates), None)
    return CampaignResult(
        system=system.name, profile=profile, seed=seed, examples=counted["examples"],
        steps=machine.total_steps, seconds=seconds, coverage=coverage,
        failure=first.failure if first else None,
        counterexample=first.counterexample if first else [],
        # The machine may draw each run's config: the counterexample's is the one to replay.
        config=first.config if first else config, failure_kind=first.kind if first else None,
        failure_summary=first.summary if first else None,
        findings=findings, masks=masks, scope=scope, searches=searches, stopped=stopped,
        depths=list(machine.depths),
        first_failure_seconds=counted["first_failure"] if first else None,
        first_failure_run=counted["first_failure_run"] if first else None,
        cut_short=stopper.reason, examples_asked=examples, request_tags=request_tags,
        namespaced=not reset,
    )


#: Why a declared class's counterexample is as first seen: it is reported, not debugged.
NOT_SHRUNK = "not shrunk, a declared difference"
#: Why a too-slow class's counterexample is the shortest failing run seen: its replays differed.
SLOW_REPLAYS_DIFFER = "its replays differed, as a call near --timeout's can"


def _too_slow(found: DivergenceClass | None) -> bool:
    return found is not None and found.kind == FindingKind.TARGET_TOO_SLOW


def _shorter(steps: list[dict[str, Any]], config: dict[str, Any], found: DivergenceClass, *,
             oracle: TargetFactory, target: TargetFactory, masks: Masks, observe: bool, refuses: Any,
             accepts: Any) -> Any:
    """A shorter run of the same class than Hypothesis's shrunk one, if the trace minimiser
    (duespec.campaigns.minimise) finds one by removing steps and replaying from a reset."""
    return minimise(oracle, target, config, steps, found, masks, observe=observe, refuses=refuses, accepts=accepts)


def hypothesis_shrinks_by_work() -> Any:
    """Hypothesis ends any shrinking at five minutes of wall clock, which under load cuts a
    counterexample short where an idle machine would not: its cap is moved past ours
    (SHRINK_WALL_SECONDS), so that the work budgets decide."""
    from hypothesis.internal.conjecture import engine

    return patch.object(engine, "MAX_SHRINKING_SECONDS", SHRINK_WALL_SECONDS + 60)


def _note_shrink_cut(finding: Finding, cut: str) -> None:
    note = f"\n({cut}: the shortest failing run of the class seen is kept)"
    finding.summary += note
    finding.failure += note


def _quiet(text: object) -> None:
    """Hypothesis's reporter, silenced."""


@contextmanager
def without_local_constants() -> Iterator[None]:
    """Keep the campaign's draws a function of its seed and the machine alone.

    Hypothesis (6.131 and later) mixes into its draws the literals of every "local" module
    loaded so far, which for an editable install is all of duespec: a seeded campaign then
    draws differently from `duespec check` and from a test (which load different modules),
    and after any edit anywhere, so what it reaches and finds changes. An empty pool of
    local constants (Hypothesis's own global ones stay) removes that; an older Hypothesis
    has no pool to empty."""
    providers = importlib.import_module("hypothesis.internal.conjecture.providers")
    if not all(hasattr(providers, name) for name in ("_get_local_constants", "Constants", "CONSTANTS_CACHE")):
        yield
        return
    empty = providers.Constants()
    with patch.object(providers, "_get_local_constants", lambda: empty):
        providers.CONSTANTS_CACHE.cache.clear()
        try:
            yield
        finally:
            providers.CONSTANTS_CACHE.cache.clear()


def finding_of(error: Exception, steps: list[dict[str, Any]], oracle: TargetFactory,
               target: TargetFactory, config: dict[str, Any], observe: bool = True,
               shorten: Callable[..., Any] | None = None) -> Finding:
    """Classify what a failing run raised, after checking on the target that it is the
    target's answer to these steps and not to the runs before them (reset_leak).

    `shorten(steps, config, class)`: a shorter run of the class, replayed from a reset (the
    trace minimiser), or None. It runs first, so the reset-leak probe replays the short run
    three times, not Hypothesis's shrunk one (thousands of steps, each observed, when a rule
    fills a book); where it finds none, the probe replays the run as Hypothesis left it."""
    notes = "\n".join(getattr(error, "__notes__", []))
    summary = f"{type(error).__name__}: {error}"
    failure = summary + (f"\n{notes}" if notes else "")
    if isinstance(error, (Divergence, TargetRaised)):
        found: DivergenceClass | None = error.divergence_class
    elif isinstance(error, TargetError):  # no answer at all, outside a step the judge saw
        found = raised_verdict(steps[-1] if steps else None, steps[-1]["op"] if steps else "reset",
                               error).divergence_class  # type: ignore[union-attr]
    elif isinstance(error, Flaky):
        # The model is deterministic: inputs that fail and then pass are the target's doing.
        found = None
    else:
        return Finding(FindingKind.HARNESS_ERROR, None, summary, failure, steps, config=config)
    if found is not None and found.kind == FindingKind.TARGET_TOO_SLOW:
        # Not probed: each replay would wait the whole --timeout again, and whether a call
        # near the bound finishes proves nothing about a leak.
        return Finding(found.kind, found, summary, failure, steps, config=config)
    if shorten is not None and found is not None and found.kind.minimised:
        shorter = shorten(steps, config, found)
        if shorter is not None:
            before, steps = len(steps), shorter.steps
            summary = f"{type(shorter.error).__name__}: {shorter.error}"
            failure = (f"{summary}\n(Hypothesis shrank the failing run to {before} steps; removing steps and "
                       f"replaying left these {len(steps)}, with the same divergence class)")
    checked = probe(oracle, target, config, steps, observe) if steps else None
    if checked is not None and checked.inconclusive is not None:
        failure += f"\n(the reset-leak check was inconclusive: {checked.inconclusive})"
        return Finding(found.kind, found, summary, failure, steps, config=config) if found is not None else Finding(
            FindingKind.NOT_REPRODUCIBLE, DivergenceClass(FindingKind.NOT_REPRODUCIBLE, steps[-1]["op"], (), "$"),
            summary, failure, steps, config=config)
    if checked is not None and checked.leak is not None:
        at = steps[checked.leak_step or 0]
        leak = DivergenceClass(FindingKind.STATE_SURVIVES_RESET, at["op"], (), "$")
        text = f"target bug: {checked.leak}"
        return Finding(leak.kind, leak, text, f"{text}\n(found as: {summary})", steps, config=config,
                       evidence=checked.evidence)
    if found is None or (checked is not None and checked.reproduced is None and found.kind.compared):
        op = steps[-1]["op"] if steps else "reset"
        text = (f"target bug: the target's answers are not reproducible: the failing run "
                f"({len(steps)} steps) passes when replayed from a reset ({summary})")
        return Finding(FindingKind.NOT_REPRODUCIBLE, DivergenceClass(FindingKind.NOT_REPRODUCIBLE, op, (), "$"),
                       text, f"{text}\n{failure}", steps, config=config)
    return Finding(found.kind, found, summary, failure, steps, config=config)


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 1, with an error that names what was given."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def examples_count(text: str) -> int:
    """argparse type for --examples: a whole number in [1, MAX_EXAMPLES]."""
    value = positive_int(text)
    if value > MAX_EXAMPLES:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_EXAMPLES:,} (docs/limits.md), got {value:,}")
    return value


def add_budget_arguments(parser: argparse.ArgumentParser, examples: int) -> None:
    """--seed, --examples and --steps, the same for every command that runs campaigns."""
    parser.add_argument("--seed", type=int, default=0, help="Hypothesis seed (default 0)")
    parser.add_argument("--examples", type=examples_count, default=examples,
                        help=f"runs per campaign (default {examples}; at most {MAX_EXAMPLES:,})")
    parser.add_argument("--steps", type=positive_int, default=50,
                        help="steps per run (default 50)")


def progress_printer(every_seconds: float, stream: TextIO | None = None, label: str = "") -> ProgressCallback:
    """A progress callback that prints one line at most every `every_seconds`, and once
    when shrinking starts, to stderr: long campaigns show they are alive. `label` names
    the part of the campaign (a chunk) the figures are of."""
    last = {"printed": 0.0, "shrinking": False}

    def report(now: CampaignProgress) -> None:
        shrinking_started = now.shrinking and not last["shrinking"]
        if not shrinking_started and now.seconds - last["printed"] < every_seconds:
            return
        last["printed"], last["shrinking"] = now.seconds, now.shrinking
        rate = now.steps / now.seconds if now.seconds else 0.0
        phase = "failing run found, shrinking it" if now.shrinking else "running"
        print(f"  ... {label + ': ' if label else ''}{phase}: {now.examples} runs, {now.steps} steps, {now.seconds:.0f}s "
              f"({rate:,.0f} steps/s)", file=stream or sys.stderr, flush=True)

    return report


def write_failure_trace(result: CampaignResult, directory: str | Path = DEFAULT_FAILURE_DIR, *,
                        target: str, producer: str, finding: Finding | None = None) -> Path:
    """Write a finding's shrunk counterexample (default: the first undeclared one) as a
    trace (docs/traces.md) that `duespec replay` reruns. A leak across reset is written as
    the steps, a reset and the same steps again (reset_leak.leak_trace), so that a fresh
    target shows it.

    The name never collides and no file is ever overwritten: system, profile, seed, a
    readable slug of the target, a hash of its full identity (the target as given and the
    working directory it was given in), the UTC time and, when all that is taken, a count."""
    from duespec.outputs import remove_dead_partials
    from duespec.traces.format import TraceHeader, TraceWriter

    if finding is None:
        finding = next((f for f in result.findings if f.gates), None)
    steps = finding.counterexample if finding else result.counterexample
    identity = hashlib.sha256(f"{os.getcwd()}\0{target}".encode("utf-8", "surrogatepass")).hexdigest()
    words = re.sub(r"[^A-Za-z0-9]+", "-", target).strip("-")
    slug = (words if len(words) <= 32 else words[-32:].split("-", 1)[-1]) or "target"
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    stem = f"{result.system}-{result.profile}-seed{result.seed}-{slug}-{identity[:12]}-{stamp}"
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    remove_dead_partials(folder, of=".jsonl")
    names = (folder / (f"{stem}.jsonl" if count == 1 else f"{stem}-{count}.jsonl")
             for count in range(1, 10_000))
    extra: dict[str, Any] = {
        "target": target, "target_identity": identity,
        "failure_kind": kind.outcome if (kind := finding.kind if finding else result.failure_kind) else None,
        "failure": ((finding.summary if finding else result.failure_summary) or result.failure or "")[:2000]}
    if result.namespaced:
        extra["reset"] = "none"  # replay keeps it: a namespace per run, on a target never reset
    if finding is not None and finding.divergence_class is not None:
        extra["divergence_class"] = finding.divergence_class.to_json()
        if finding.declared:
            extra["declared"] = [entry.describe() for entry in finding.declared]
    config = finding.config if finding is not None and finding.config else result.config
    if finding is not None and finding.kind == FindingKind.STATE_SURVIVES_RESET:
        steps = leak_trace(steps, config)
        if finding.evidence is not None:
            extra["leak_evidence"] = finding.evidence
    header = TraceHeader(system=result.system, profile=result.profile, config=config,
                         seed=result.seed, producer=f"{producer} {__version__}", extra=extra)
    # Written whole under `NAME.<pid>.partial`, then linked to the first free name: the final
    # name never exists before the trace is complete, and a killed writer leaves only a
    # partial, which the next write into the folder removes (docs/traces.md).
    first = next((name for name in names if not os.path.lexists(name)), None)
    if first is None:
        raise OSError(f"no free trace name for {stem} in {folder}")
    names = itertools.chain((first,), names)  # a writer racing us may take it: then the next
    with TraceWriter(first, header) as writer:
        for step in steps:
            writer.write(step)
        try:
            return writer.close_as(names)
        except FileExistsError:
            raise OSError(f"no free trace name for {stem} in {folder}") from None

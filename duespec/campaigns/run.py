"""Run one differential campaign: a lockstep machine, a seed, a budget, a verdict."""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TextIO

from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.stateful import run_state_machine_as_test

from duespec import __version__
from duespec.coverage import collecting
from duespec.campaigns.lockstep import Divergence, lockstep
from duespec.systems import System
from duespec.targets.interface import TargetError, TargetFactory

#: Where a failing campaign writes its shrunk counterexample unless told otherwise.
DEFAULT_FAILURE_DIR = Path(".duespec") / "failures"

#: How a campaign failed: the target answered differently, or could not answer at all,
#: or something else raised (an oracle invariant, a bug in the harness or the model).
DIVERGENCE, TARGET_ERROR, ERROR = "divergence", "target_error", "error"


@dataclass(frozen=True)
class CampaignProgress:
    examples: int
    steps: int
    seconds: float
    #: A failing run was found and Hypothesis is now shrinking it.
    shrinking: bool


ProgressCallback = Callable[[CampaignProgress], None]


@dataclass
class CampaignResult:
    system: str
    profile: str
    seed: int
    examples: int
    steps: int
    seconds: float
    coverage: Counter[str]
    failure: str | None = None
    #: The shrunk failing run, as trace steps; empty when the campaign held.
    counterexample: list[dict[str, Any]] = field(default_factory=list)
    #: The config every run was reset with (a trace header needs it).
    config: dict[str, Any] = field(default_factory=dict)
    #: DIVERGENCE, TARGET_ERROR or ERROR when the campaign failed.
    failure_kind: str | None = None
    #: The failure without Hypothesis's printed program: what went wrong, for people.
    failure_summary: str | None = None
    #: Per run, the sizes it reached (LockstepMachine.depth_reached): how deep it went.
    depths: list[dict[str, int]] = field(default_factory=list)
    #: Seconds into the campaign when the first failing run ended (before shrinking).
    first_failure_seconds: float | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


def run_campaign(system: System, target: TargetFactory, *, profile: str | None = None,
                 seed: int = 0, examples: int = 200, step_count: int = 50,
                 oracle: TargetFactory | None = None,
                 progress: ProgressCallback | None = None, depth: float = 1.0) -> CampaignResult:
    """Drive `target` against the model (or `oracle`) until `examples` runs pass or one fails.

    `progress`, when given, is called as each run starts (it decides how often to speak).
    `depth` scales the deep runs the machine mixes in (0: none)."""
    profile = profile or system.profiles[0]
    if profile not in system.profiles:
        raise ValueError(f"{system.name} has no profile {profile!r}; known: {', '.join(system.profiles)}")
    config = system.config(profile)
    machine = lockstep(system.machine, oracle or system.model, target, config, depth)
    hypothesis_seed(seed)(machine)
    counted: dict[str, Any] = {"examples": 0, "failed_runs": 0, "first_failure": None}
    started = time.perf_counter()
    base_init, base_teardown = machine.__init__, machine.teardown

    def counting_init(self: Any) -> None:
        base_init(self)
        counted["examples"] += 1
        if progress is not None:
            progress(CampaignProgress(counted["examples"], machine.total_steps,
                                      time.perf_counter() - started, counted["failed_runs"] > 0))

    def noting_teardown(self: Any) -> None:
        # Hypothesis tears down in a `finally`, so a failing run's exception is in flight
        # (its own control flow uses BaseExceptions such as StopTest).
        if isinstance(sys.exc_info()[1], Exception):
            counted["failed_runs"] += 1
            if counted["first_failure"] is None:
                counted["first_failure"] = time.perf_counter() - started
        base_teardown(self)

    machine.__init__ = counting_init  # type: ignore[method-assign]
    machine.teardown = noting_teardown  # type: ignore[method-assign]
    run_settings = settings(
        max_examples=examples, stateful_step_count=step_count, deadline=None,
        database=None, derandomize=False, print_blob=False, report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
    )
    failure = failure_kind = failure_summary = None
    with collecting() as coverage:
        try:
            run_state_machine_as_test(machine, settings=run_settings)
        except Exception as error:  # the machine's verdict, reported rather than raised
            notes = "\n".join(getattr(error, "__notes__", []))
            failure_summary = f"{type(error).__name__}: {error}"
            failure = failure_summary + (f"\n{notes}" if notes else "")
            failure_kind = (DIVERGENCE if isinstance(error, Divergence)
                            else TARGET_ERROR if isinstance(error, TargetError) else ERROR)
    seconds = time.perf_counter() - started
    return CampaignResult(
        system=system.name, profile=profile, seed=seed, examples=counted["examples"],
        steps=machine.total_steps, seconds=seconds,
        coverage=coverage, failure=failure,
        counterexample=list(machine.last_steps) if failure else [],
        # The machine may draw each run's config: the counterexample's is the one to replay.
        config=dict(machine.last_config) if failure else config,
        failure_kind=failure_kind, failure_summary=failure_summary, depths=list(machine.depths),
        first_failure_seconds=counted["first_failure"] if failure else None,
    )


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 1, with an error that names what was given."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_budget_arguments(parser: argparse.ArgumentParser, examples: int) -> None:
    """--seed, --examples and --steps, the same for every command that runs campaigns."""
    parser.add_argument("--seed", type=int, default=0, help="Hypothesis seed (default 0)")
    parser.add_argument("--examples", type=positive_int, default=examples,
                        help=f"runs per campaign (default {examples})")
    parser.add_argument("--steps", type=positive_int, default=50,
                        help="steps per run (default 50)")


def progress_printer(every_seconds: float, stream: TextIO | None = None) -> ProgressCallback:
    """A progress callback that prints one line at most every `every_seconds`, and once
    when shrinking starts, to stderr: long campaigns show they are alive."""
    last = {"printed": 0.0, "shrinking": False}

    def report(now: CampaignProgress) -> None:
        shrinking_started = now.shrinking and not last["shrinking"]
        if not shrinking_started and now.seconds - last["printed"] < every_seconds:
            return
        last["printed"], last["shrinking"] = now.seconds, now.shrinking
        rate = now.steps / now.seconds if now.seconds else 0.0
        phase = "failing run found, shrinking it" if now.shrinking else "running"
        print(f"  ... {phase}: {now.examples} runs, {now.steps} steps, {now.seconds:.0f}s "
              f"({rate:,.0f} steps/s)", file=stream or sys.stderr, flush=True)

    return report


def write_failure_trace(result: CampaignResult, directory: str | Path = DEFAULT_FAILURE_DIR, *,
                        target: str, producer: str) -> Path:
    """Write the shrunk counterexample as a trace (docs/traces.md) that `duespec replay`
    reruns; the name says system, profile, seed and target, so reruns overwrite it."""
    from duespec.traces.format import TraceHeader, write_trace

    slug = re.sub(r"[^A-Za-z0-9]+", "-", target).strip("-")[:48] or "target"
    path = Path(directory) / f"{result.system}-{result.profile}-seed{result.seed}-{slug}.jsonl"
    header = TraceHeader(
        system=result.system, profile=result.profile, config=result.config, seed=result.seed,
        producer=f"{producer} {__version__}",
        extra={"target": target, "failure_kind": result.failure_kind,
               "failure": (result.failure_summary or result.failure or "")[:2000]})
    return write_trace(path, header, result.counterexample)


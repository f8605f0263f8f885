"""`duespec replay TRACE...`: re-run recorded traces against a target, stop at the first divergence.

Each step goes to the target (default: the production implementation). Its response must
equal the recorded `result`; a trace without results (an ITF import from Quint, say) is
judged by the model instead. The model also runs alongside as the state oracle, because a
trace records responses, not states: after every step the target's whole observable state
must equal the model's. Against the model itself the oracle would only compare the model
with itself, so it is left out and only the recorded results (and states, if any) count.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from duespec.targets import resolve as targets
from duespec.cli import EXIT_FAILED, EXIT_HOLDS, EXIT_USAGE, UsageError, seconds
from duespec.campaigns.lockstep import describe_divergence, state_diff
from duespec.systems import System, get_system
from duespec.limits import LimitExceeded
from duespec.targets.interface import (Json, Target, TargetError, TargetFactory, comparable,
                                       responses_agree, same_json)
from duespec.targets.stdio import DEFAULT_TIMEOUT, START_TIMEOUT
from duespec.traces.format import TraceError, TraceHeader, read_trace

@dataclass
class ReplayResult:
    path: str
    system: str
    profile: str
    target: str
    #: Steps taken, the diverging one included.
    steps: int
    seconds: float
    #: Responses and whole states actually compared (a trace without results, replayed
    #: against the model, compares nothing, and says so).
    responses_compared: int = 0
    states_compared: int = 0
    #: How many of the trace's own results and states (a foreign model's answers, for an
    #: ITF import) were compared, with the model's or, against the model, with the target's.
    recorded_results: int = 0
    recorded_states: int = 0
    #: None when the trace is confirmed; otherwise what went wrong, for people.
    divergence: str | None = None
    #: The diverging step, as recorded.
    step: dict[str, Json] | None = None
    #: The target the trace's header says it was recorded against (a failure trace's).
    recorded_target: Json = None
    #: Index of the step being replayed (for messages about it).
    steps_seen: int = 0

    @property
    def confirmed(self) -> bool:
        return self.divergence is None

    def report(self) -> str:
        rate = self.steps / self.seconds if self.seconds else 0.0
        where = f"{self.path} [{self.system}/{self.profile}] against {self.target}"
        if self.confirmed:
            recorded = (f"; the trace's own {self.recorded_results} results and {self.recorded_states} "
                        f"states among them" if self.recorded_results or self.recorded_states else "")
            return (f"CONFIRMED: {where}: {self.steps} steps, {self.responses_compared} responses and "
                    f"{self.states_compared} states compared{recorded} ({self.seconds:.2f}s, "
                    f"{rate:,.0f} steps/s)")
        at = f"step {self.step['i']}" if self.step and self.step["i"] >= 0 else "the start"
        return f"DIVERGES: {where} at {at}\n{self.divergence}"


class _Diverged(Exception):
    def __init__(self, step: dict[str, Json], text: str):
        super().__init__(text)
        self.step, self.text = step, text


def resolve_target(system: System, spec: str, timeout: float = DEFAULT_TIMEOUT) -> TargetFactory:
    """The factory `spec` names (model, impl, module:factory, stdio:COMMAND), or UsageError."""
    try:
        return targets.resolve(system, spec, timeout=timeout, start_timeout=max(timeout, START_TIMEOUT))
    except targets.TargetSpecError as error:
        raise UsageError(str(error)) from None


def replay(path: str | Path, target: str = "impl", factory: TargetFactory | None = None,
           timeout: float | None = None) -> ReplayResult:
    """Replay one trace file; raise TraceError if it is malformed, UsageError if the target
    is unusable.

    `factory` overrides how the target is built (tests pass a deliberately broken one);
    `target` is then only its name in the report. `timeout` bounds every call into the
    target and the model alike (seconds)."""
    header, steps = read_trace(path)
    system = get_system(header.system)
    if header.profile not in system.profiles:
        raise TraceError(str(path), 1, f"header: {header.system} has no profile {header.profile!r}; "
                                       f"known: {', '.join(system.profiles)}")
    made = factory or resolve_target(system, target, timeout or DEFAULT_TIMEOUT)
    try:
        subject = targets.guarded(f"starting {target}", made)
    except TargetError as error:
        raise UsageError(f"target unusable: {error}") from None
    if target == "model" and factory is None:
        subject, oracle = _Bounded(subject, timeout), None
    else:
        oracle = _Bounded(system.model(), timeout)
    result = ReplayResult(str(path), header.system, header.profile, target, 0, 0.0,
                          recorded_target=header.extra.get("target"))
    started = time.perf_counter()
    try:
        _reset(str(path), header, subject, oracle)
        result.steps = _run(steps, subject, oracle, result)
    except _Diverged as diverged:
        result.steps = max(diverged.step["i"] + 1, 0)
        result.step, result.divergence = diverged.step, diverged.text
    except LimitExceeded as error:  # a step the model refuses to start, by a documented limit
        raise TraceError(str(path), None, f"step {result.steps_seen}: {error}") from None
    finally:
        result.seconds = time.perf_counter() - started
        close_failure = _close(subject)
        if close_failure:  # the target's failure, reported like a divergence
            result.divergence = result.divergence or close_failure
        if oracle is not None:
            oracle.close()
    return result


class _Bounded:
    """The model under --timeout: a step it cannot finish in time makes the trace too
    costly to check (LimitExceeded, exit 2), which is no finding about the target.
    observe() is left unwatched: its cost is bounded by the state the steps built."""

    def __init__(self, model: Target, timeout: float | None) -> None:
        self.model, self.timeout = model, timeout

    def reset(self, config: dict[str, Json]) -> None:
        self._within("reset", lambda: self.model.reset(config))

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        return self._within(f"step {op}", lambda: self.model.step(op, args, now))

    def observe(self) -> dict[str, Json]:
        return self.model.observe()

    def close(self) -> None:
        self.model.close()

    def _within(self, what: str, call: Callable[[], Json]) -> Json:
        try:
            with targets.deadline(self.timeout, f"the model's {what}"):
                return call()
        except TargetError as error:
            raise LimitExceeded(str(error)) from None


def _close(subject: Target) -> str | None:
    """Why the target's close() failed, or None; close() is optional for a Python target."""
    close = getattr(subject, "close", None)
    if callable(close):
        try:
            close()
        except TargetError as error:
            return f"the target's close() failed: {error}"
    return None


def _reset(where: str, header: TraceHeader, subject: Target, oracle: Target | None) -> None:
    """A config the model refuses makes the trace malformed; a target that cannot take a
    config the model accepts is a finding about the target."""
    model = oracle or subject  # without an oracle, the subject is the model
    try:
        model.reset(dict(header.config))
    except Exception as error:  # the model's own words on what is wrong with the config
        raise TraceError(where, 1, f"header: the model refuses config {json.dumps(header.config)}: "
                                   f"{error}") from None
    if subject is not model:
        try:
            subject.reset(dict(header.config))
        except Exception as error:  # the first reset failing: the target cannot be used at all
            raise UsageError(f"target unusable: its reset with config {json.dumps(header.config)[:200]} "
                             f"failed: {error if isinstance(error, TargetError) else _named(error)}") from None


def _run(steps: Iterator[dict[str, Json]], subject: Target, oracle: Target | None, counts: ReplayResult) -> int:
    taken = 0
    for step in steps:
        counts.steps_seen = step["i"]
        op, args, now = step["op"], step["args"], step["now"]
        recorded = step.get("result")
        expected = recorded
        if oracle is not None:
            answer = _attempt(lambda: oracle.step(op, args, now), step, "the model raised")
            if recorded is not None and not responses_agree(recorded, answer):
                raise _Diverged(step, "the model does not give the recorded result, so the trace does "
                                      "not follow the current spec (it moved since the trace was "
                                      "recorded, or the trace's producer, a foreign model say, "
                                      "disagrees with it):\n"
                                + _indent(describe_divergence(step, "response", comparable(recorded),
                                                              comparable(answer))))
            expected = answer
        actual = _attempt(lambda: subject.step(op, args, now), step, "the target raised")
        if expected is not None and not responses_agree(expected, actual):
            text = describe_divergence(step, "response", comparable(expected), comparable(actual),
                                       exchange=getattr(subject, "last_exchange", None))
            if oracle is not None:
                lines = state_diff(oracle.observe(), _attempt(subject.observe, step, "observe raised"))
                text += "\n  state after the step (model vs target):\n" + "\n".join(
                    f"    {line}" for line in lines or ["(no difference)"])
            raise _Diverged(step, text)
        counts.responses_compared += expected is not None
        counts.recorded_results += recorded is not None
        if oracle is not None or "state" in step:
            want = oracle.observe() if oracle is not None else step["state"]
            if "state" in step and not same_json(step["state"], want):
                raise _Diverged(step, "the model's state differs from the state recorded in the trace:\n"
                                + _indent(describe_divergence(step, "state", step["state"], want)))
            have = _attempt(subject.observe, step, "the target's observe() raised")
            if not same_json(want, have):
                raise _Diverged(step, describe_divergence(step, "state", want, have,
                                                          exchange=getattr(subject, "last_exchange", None)))
            counts.states_compared += 1
            counts.recorded_states += "state" in step
        taken += 1
    return taken


def _attempt(action: Callable[[], Json], step: dict[str, Json] | None, what: str) -> Json:
    try:
        return action()
    except LimitExceeded:
        raise
    except TargetError as error:
        if error.unusable:
            raise UsageError(f"target unusable: {error}") from None
        where = (f"step {step['i']}: {step['op']}" if step else "before the first step")
        raise _Diverged(step or {"i": -1}, f"{where}\n  {error}") from None
    except Exception as error:  # a crash is a finding, reported like a divergence
        where = (f"step {step['i']}: {step['op']} {json.dumps(step['args'], sort_keys=True)[:300]} "
                 f"at now={step['now']}") if step else "before the first step"
        raise _Diverged(step or {"i": -1}, f"{where}\n  {what}: {type(error).__name__}: {error}") from None


def _named(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def trace_files(paths: list[str]) -> list[Path]:
    """The given files, and every *.jsonl under the given directories, in a stable order."""
    found: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found.extend(sorted(path.rglob("*.jsonl")))
        elif path.exists():
            found.append(path)
        else:
            raise UsageError(f"no such file or directory: {name}")
    if not found:
        raise UsageError(f"no traces (*.jsonl) under {', '.join(paths)}")
    return found


def main(args: argparse.Namespace) -> int:
    worst = EXIT_HOLDS
    for path in trace_files(args.traces):
        try:
            result = replay(path, args.target, timeout=args.timeout)
        except TraceError as error:
            print(f"MALFORMED: {error}", file=sys.stderr)
            worst = EXIT_USAGE
            continue
        if isinstance(result.recorded_target, str) and result.recorded_target.strip() != args.target.strip():
            print(f"warning: {path} was recorded against target {result.recorded_target!r}, "
                  f"replayed against {args.target!r}", file=sys.stderr)
        print(result.report(), flush=True)
        if not result.confirmed and worst == EXIT_HOLDS:
            worst = EXIT_FAILED
    return worst


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "replay", help="re-run recorded traces against a target; report the first divergence",
        description="Replay each trace (a .jsonl file, or every .jsonl under a directory) against "
                    "the target, comparing every response with the recorded result and, after "
                    "every step, the target's whole state with the model's. Exit 0 when every "
                    "trace is confirmed, 1 when one diverges, 2 when one is malformed.")
    parser.add_argument("traces", nargs="+", metavar="TRACE", help="trace file or directory")
    parser.add_argument("--target", default="impl", help=f"{targets.SPEC_HELP} (default: impl)")
    parser.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT,
                        help=f"seconds any one call may take, into the target or the model that "
                             f"checks it, and a Python target's import and factory (default "
                             f"{DEFAULT_TIMEOUT:g}); a call that takes longer fails the replay")
    parser.set_defaults(run=main)

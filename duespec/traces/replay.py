"""`duespec replay TRACE...`: re-run recorded traces against a target, stop at the first divergence.

Each step goes to the target (default: the production implementation) and its response
must equal the recorded `result`. Where a step has none (an ITF import from Quint, say)
the model's answer counts instead: the model is started there and brought up to that
step from the trace, then runs alongside.

The target's whole observable state is compared at checkpoints: every step that records a
`state`, the end of the trace, and in between as often as keeps the cost per step
independent of the state's size (every max(8, 4 x state items) steps; `--state-every N`
chooses). The state expected there is the one the recorded results imply when the
system can say (duebook: every change shows in some response), else the model's, which
then runs alongside from the first step. When a checkpoint differs, the trace is replayed
again from the start comparing after every step since the last checkpoint that agreed,
so the report names the first step after which the states differ.

A response that differs is diagnosed with the model, run over the trace up to that step:
if the model does not give the recorded result either, the trace does not follow the
current spec; otherwise the report shows the model's state beside the target's. Replayed
against the model itself, only the recorded results (and states, if any) count.

`impl` and `model` are duespec's own code in this process, so they run without the
per-call deadline other in-process targets get (its SIGALRM watch costs a few
microseconds a call; `duespec bench --only traces` measures it). The impl, when its
system offers one (duebook), is also trusted with a fused check: recorded_step_checker
takes a recorded step and compares the answer in one call, state_is compares a
checkpoint's state without building it; whatever they do not find equal goes through
the general comparison, so the report is the same as on the general path.

A reset line in the middle of a trace (docs/traces.md) starts the target, the model and
the expected state again from its config, after the state reached so far is compared: a
trace of the same steps twice with a reset between shows a target whose state survives
reset, on a fresh program.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from duespec.campaigns.run import positive_int
from duespec.exits import EXIT_FAILED, EXIT_HOLDS, EXIT_USAGE, UsageError, seconds
from duespec.judge import trusts
from duespec.limits import LimitExceeded
from duespec.systems import System, get_system
from duespec.targets import resolve as targets
from duespec.targets.interface import Target, TargetError, TargetFactory, close_target
from duespec.targets.namespaced import namespaced
from duespec.targets.stdio import DEFAULT_TIMEOUT, START_TIMEOUT
from duespec.traces.format import RESET_KEY, TraceError, read_trace
from duespec.traces.replay_pass import BoundedModel, Diverged, ReplayPass, ReplayResult, StateDiffers

def resolve_target(system: System, spec: str, timeout: float = DEFAULT_TIMEOUT) -> TargetFactory:
    """The factory `spec` names (model, impl, module:factory, stdio:COMMAND), or UsageError."""
    if spec == "impl":
        return system.impl
    if spec == "model":
        return system.model
    try:
        return targets.resolve(system, spec, timeout=timeout, start_timeout=max(timeout, START_TIMEOUT))
    except targets.TargetSpecError as error:
        raise UsageError(str(error)) from None


def replay(path: str | Path, target: str = "impl", factory: TargetFactory | None = None,
           state_every: int | None = None, timeout: float | None = None, observe: bool = True,
           reset: str = "auto") -> ReplayResult:
    """Replay one trace file; raise TraceError if it is malformed, UsageError if the target
    is unusable.

    `factory` overrides how the target is built (tests pass a deliberately broken one);
    `target` is then only its name in the report. `state_every` compares the whole state
    every that many steps instead of at the automatic checkpoints (1: after every step).
    `timeout` bounds every call into the target and the model alike (seconds).
    `observe=False` compares the answers alone (a target that cannot show its state).
    `reset="none"` never resets the target: the trace's ids go out under a fresh run token
    (duespec.targets.namespaced), so a server that holds earlier runs' objects replays it,
    answers alone compared; `auto` does so for a trace its campaign ran that way (header
    `reset: none`)."""
    header, steps = read_trace(path)
    system = get_system(header.system)
    if header.profile not in system.profiles:
        raise TraceError(str(path), 1, f"header: {header.system} has no profile {header.profile!r}; "
                                       f"known: {', '.join(system.profiles)}")
    made = factory or resolve_target(system, target, timeout or DEFAULT_TIMEOUT)
    if reset == "none" or (reset == "auto" and header.extra.get("reset") == "none"):
        if system.namespace is None:
            raise UsageError(f"--reset none: {system.name} has no id namespaces, so its target must offer reset")
        made, observe = namespaced(made, system.namespace, system.name), False
    try:
        subject = targets.guarded(f"starting {target}", made)
    except TargetError as error:
        raise UsageError(f"target unusable: {error}") from None
    model_is_subject = target == "model" and factory is None
    if model_is_subject:
        subject = BoundedModel(subject, timeout)
    result = ReplayResult(str(path), header.system, header.profile, target, 0, 0.0,
                          recorded_target=header.extra.get("target"))
    run = ReplayPass(str(path), header, system, subject, model_is_subject, result, state_every, timeout,
                  trusts(subject), observe)
    started = time.perf_counter()
    try:
        try:
            run.reset()
            result.steps = run.take_all(steps)
        except StateDiffers as differs:
            run.locate(differs)
    except Diverged as diverged:
        result.steps = max(diverged.step["i"] + (RESET_KEY not in diverged.step), 0)
        result.step, result.divergence, result.difference = diverged.step, diverged.text, diverged.difference
    except LimitExceeded as error:  # a step the model refuses to start, by a documented limit
        raise TraceError(str(path), None, f"step {result.steps_seen}: {error}") from None
    finally:
        result.seconds = time.perf_counter() - started
        run.close()
        close_failure = _close(subject)
        if close_failure:  # the target's failure, reported like a divergence
            result.divergence = result.divergence or close_failure
    return result


def _close(subject: Target) -> str | None:
    """Why the target's close() failed, or None; close() is optional for a Python target."""
    try:
        close_target(subject)
    except TargetError as error:
        return f"the target's close() failed: {error}"
    return None


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
            result = replay(path, args.target, state_every=args.state_every, timeout=args.timeout,
                            observe=args.observe == "state", reset=args.reset)
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
                    "the target, comparing every response with the recorded result (or the "
                    "model's, where none is recorded) and the target's whole state with the "
                    "expected one at checkpoints and at the end; a state that differs is traced "
                    "back to the first step after which it differs. Exit 0 when every trace is "
                    "confirmed, 1 when one diverges, 2 when one is malformed.")
    parser.add_argument("traces", nargs="+", metavar="TRACE", help="trace file or directory")
    parser.add_argument("--target", default="impl", help=f"{targets.SPEC_HELP} (default: impl)")
    parser.add_argument("--state-every", type=positive_int, metavar="N",
                        help="compare the whole state every N steps (1: after every step); by "
                             "default every max(8, 4 x items in the state) steps, so the cost "
                             "per step does not grow with the state")
    parser.add_argument("--observe", choices=("state", "none"), default="state",
                        help="compare the target's state at checkpoints (state, the default) or its "
                             "answers alone (none: a target that cannot show its state)")
    parser.add_argument("--reset", choices=("auto", "target", "none"), default="auto",
                        help="reset the target from the trace's config (target), or never (none: a "
                             "server that keeps earlier runs' objects; the trace's ids go out under "
                             "a fresh run token and only the answers are compared); auto (the "
                             "default): none for a trace whose campaign ran that way")
    parser.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT,
                        help=f"seconds any one call may take, into the target or the model that "
                             f"checks it, and a Python target's import and factory (default "
                             f"{DEFAULT_TIMEOUT:g}); a call that takes longer fails the replay")
    parser.set_defaults(run=main)

"""`duespec conform SYSTEM --target T`: is an implementation duespec did not write conformant?

The system's lockstep machine drives the target and the reference model (the oracle) side
by side and compares every answer and the whole observable state after every step. The
target may be a Python object or any program speaking docs/protocol.md. A campaign reports
every divergence class it finds (up to --max-classes), each with its shrunk counterexample
and trace. Exit 0: every campaign held, or every class found is declared (--declared)
or known from a baseline (--baseline, duespec.campaigns.baseline); 1: a class is neither
(NEW), or a known class's witness no longer replays as recorded (CHANGED); 2: bad usage,
a malformed declared-differences file or baseline, or the target is unusable (cannot
start, fails the handshake or its first reset); 3: cut short (SIGTERM, SIGINT) before it
could say HOLDS. A campaign cut short by its own --budget with
nothing undeclared found says HOLDS within that budget, with the runs it took, and exits 0:
the user asked for that bound.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from duespec.campaigns import baseline as baselines
from duespec.campaigns import junit, parallel
from duespec.campaigns.declared import DeclaredError, read
from duespec.campaigns.stopping import Stopper
from duespec.campaigns.long_run import run_long
from duespec.campaigns.run import (
    DEFAULT_FAILURE_DIR,
    CampaignResult,
    Finding,
    add_budget_arguments,
    positive_int,
    write_failure_trace,
)
from duespec.campaigns.scope import ScopeError, scope_of
from duespec.exits import EXIT_FAILED, EXIT_HOLDS, EXIT_INCOMPLETE, UsageError
from duespec.judge import FindingKind
from duespec.campaigns.report import CoverageReport, report_for, write_json
from duespec.campaigns.report_json import campaign_to_json, write_report
from duespec.targets.stdio import DEFAULT_TIMEOUT, START_TIMEOUT
from duespec.systems import SYSTEM_HELP, System, get_system, system_argument
from duespec.targets.interface import TargetError, TargetFactory, close_target
from duespec.targets.resolve import SPEC_HELP, TargetSpecError, close_factory, resolve

#: Longest counterexample printed step by step; the trace file always has all of it.
SHOWN_STEPS = 30
#: Undeclared divergence classes one campaign looks for before it stops (--max-classes).
#: One: the verdict is known at the first, and a CI gate wants it then, not after minutes
#: of searching for more (a broken target's first class is shrunk and reported within
#: seconds of its first failing run). Declared classes never count.
DEFAULT_MAX_CLASSES = 1


@dataclass(frozen=True)
class ReportSettings:
    """What the report of a campaign says beyond its result: the command that reproduces it
    (the campaign's settings, named as conform's options name them), where its traces are
    written, and what they are replayed on. The defaults are conform's."""

    system: str
    #: The target as --target names it, in the reproduce commands.
    target: str
    examples: int = 200
    steps: int = 50
    #: The command named as each trace's producer (conform or check).
    command: str = "conform"
    trace_dir: str | Path = DEFAULT_FAILURE_DIR
    timeout: float = DEFAULT_TIMEOUT
    declared: str | None = None
    max_classes: int = DEFAULT_MAX_CLASSES
    ops: tuple[str, ...] | None = None
    skip_ops: tuple[str, ...] | None = None
    require_tag: tuple[tuple[str, str], ...] = ()
    depth: float = 1.0
    long_run: int | None = None
    reset: str = "auto"
    #: The --baseline reports, in the order given.
    baseline: tuple[str, ...] = ()
    inputs: str = "all"
    catch_up: str | None = None
    #: The whole spec-coverage report and the depth line (-v), or no coverage line at all.
    coverage: bool = False
    no_coverage: bool = False
    #: What a trace is replayed on to see whether it fails on a fresh target; None: the
    #: target `target` names, resolved as `duespec replay --target` would.
    factory: TargetFactory | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ReportSettings:
        return cls(system=args.system, target=args.target, examples=args.examples, steps=args.steps,
                   command=args.command, trace_dir=args.trace_dir, timeout=args.timeout, declared=args.declared,
                   max_classes=args.max_classes, ops=tuple(args.ops) if args.ops else None,
                   skip_ops=tuple(args.skip_ops) if args.skip_ops else None,
                   require_tag=tuple(args.require_tag or ()), depth=args.depth, long_run=args.long_run,
                   reset=args.reset, baseline=tuple(args.baseline or ()), inputs=args.inputs, coverage=args.coverage,
                   no_coverage=args.no_coverage, catch_up=getattr(args, "catch_up", None))


def verdict_line(result: CampaignResult, target: str) -> str:
    outcome = result.failure_kind.outcome if result.failure_kind else ""
    verdict = "HOLDS" if result.ok else {"divergence": "DIVERGES", "error": "FAILED"}.get(outcome, "TARGET FAILED")
    if result.ok and result.cut_short is not None and not result.cut_short.startswith("--budget"):
        verdict = "INCOMPLETE"
    rate = result.steps / result.seconds if result.seconds else 0.0
    line = (f"{verdict}: {result.system} [{result.profile}] target={target} seed={result.seed} "
            f"runs={result.examples} steps={result.steps} ({result.seconds:.1f}s, {rate:,.0f} steps/s)")
    if result.findings:
        declared = sum(1 for finding in result.findings if finding.declared)
        line += (f": {len(result.findings)} divergence class{'es' if len(result.findings) > 1 else ''}, "
                 f"{declared} declared")
    known = result.masks.known if result.masks is not None else []
    if known:
        new = sum(1 for finding in result.findings if finding.gates and finding.kind != FindingKind.KNOWN_CHANGED)
        changed = sum(1 for finding in result.findings if finding.kind == FindingKind.KNOWN_CHANGED)
        line += (f"{',' if result.findings else ':'} {new} NEW; {len(known)} known from the baseline"
                 + (f", {changed} of them CHANGED" if changed else ""))
    line = f"{line}; {result.runs_ended_early()}"
    if result.cut_short is not None:
        within = " (HOLDS within that budget only)" if result.ok and result.cut_short.startswith("--budget") else ""
        line += (f"; CUT SHORT by {result.cut_short} after {result.examples:,} runs "
                 f"({result.examples_asked:,} asked per search){within}")
    return line


def depth_line(result: CampaignResult) -> str:
    """How deep the runs went: per measure, the median, 90th percentile and largest."""
    parts = []
    for measure in result.depths[0]:
        values = sorted(run[measure] for run in result.depths)
        parts.append(f"{measure} median {values[len(values) // 2]:,}, "
                     f"p90 {values[len(values) * 9 // 10]:,}, max {values[-1]:,}")
    return f"depth over {len(result.depths)} runs: " + "; ".join(parts)


def counterexample_lines(steps: list[dict], shrunk: bool = True, witness: bool = False) -> list[str]:
    what = ("the witness" if witness else "shrunk counterexample" if shrunk else "counterexample as first seen")
    whose = "the target's answer when the baseline was made" if witness else "the model's answer"
    lines = [f"{what} ({len(steps)} steps; `result` is {whose}):"]
    shown = steps if len(steps) <= SHOWN_STEPS else steps[-SHOWN_STEPS:]
    if len(shown) < len(steps):
        lines.append(f"  ... {len(steps) - len(shown)} earlier steps in the trace file")
    for step in shown:
        args = json.dumps(step["args"], sort_keys=True)
        answer = json.dumps(step.get("result"), sort_keys=True)
        lines.append(f"  {step['i']:>3}  {step['op']} {args} at now={step['now']}  ->  {answer}")
    return lines


def progress_seconds(text: str) -> float:
    """argparse type for --progress: a finite number of seconds >= 0 (0: never)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (value >= 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds >= 0 (0: never), got {text}")
    return value


def reproduce_lines(settings: ReportSettings, result: CampaignResult, trace: Path | None) -> list[str]:
    command = ["duespec", "conform", settings.system, "--target", settings.target, "--profile", result.profile,
               "--seed", str(result.seed), "--examples", str(settings.examples), "--steps", str(settings.steps)]
    for flag, value in (("--declared", settings.declared), ("--max-classes", settings.max_classes)):
        if value is not None and value != DEFAULT_MAX_CLASSES:
            command += [flag, str(value)]
    for flag, values in (("--ops", settings.ops), ("--skip-ops", settings.skip_ops)):
        if values:
            command += [flag, ",".join(values)]
    for key, value in settings.require_tag:
        command += ["--require-tag", f"{key}={value}"]
    if settings.depth != 1.0:
        command += ["--depth", f"{settings.depth:g}"]
    if settings.long_run:
        command += ["--long-run", str(settings.long_run)]
    if settings.reset == "none":
        command += ["--reset", "none"]
    if settings.catch_up is not None:
        command += ["--catch-up", settings.catch_up]
    for report in settings.baseline:
        command += ["--baseline", report]
    if settings.inputs != "all":
        command += ["--inputs", settings.inputs]
    lines = ["reproduce:", "  " + shlex.join(command)]
    if trace is not None:
        lines.append("  " + shlex.join(["duespec", "replay", str(trace), "--target", settings.target]))
    return lines


#: What fresh_replay says of a trace that replays CONFIRMED.
PASSES = "every step of the trace passes"


def fresh_replay(settings: ReportSettings, trace: Path) -> tuple[bool, str]:
    """Whether `duespec replay TRACE --target T` fails, replayed here on a fresh target as
    that command would; and why not, or where it failed. A replay command is printed only
    when it does fail.

    A leak that needs more runs before it than a leak trace's two (the steps, a reset, the
    same steps), or a divergence that needs a run before the campaign's, does not show on
    a fresh target: its replay command would say CONFIRMED."""
    from duespec.traces.format import TraceError
    from duespec.traces.replay import replay

    try:
        replayed = replay(trace, settings.target, factory=settings.factory, timeout=settings.timeout)
    except (TraceError, UsageError) as error:
        return False, f"replaying it failed: {error}"
    except TargetError as error:  # unusable on a fresh start too: the replay command shows it
        return True, f"the target is unusable: {str(error)[:300]}"
    if replayed.confirmed:
        return False, PASSES
    return True, f"it diverges at {replayed.diverged_at()}"


def finding_details(settings: ReportSettings, result: CampaignResult, number: int, finding: Finding,
                    trace: Path | None, trace_problem: str | None) -> str:
    """Everything a person (or a CI log) needs about one divergence class."""
    status = ("DECLARED: " + "; ".join(dict.fromkeys(entry.reason for entry in finding.declared))
              if finding.declared else "KNOWN: in the baseline" if finding.known
              else "CHANGED: in the baseline, answered otherwise now" if finding.kind == FindingKind.KNOWN_CHANGED
              else "NEW: not declared, not in the baseline" if _has_baseline(result) else "not declared")
    lines = [f"class {number} of {len(result.findings)}: {finding.label} ({status})", finding.summary]
    if finding.kind == FindingKind.HARNESS_ERROR:
        lines.append("(this failure was raised inside duespec, by the oracle or the harness, not "
                     "by a comparison with the target; Hypothesis's report follows)")
        lines.append(finding.failure)
    if finding.counterexample:
        lines.extend(counterexample_lines(finding.counterexample, finding.shrunk,
                                          witness=finding.kind == FindingKind.KNOWN_CHANGED))
    if result.first_failure_seconds is not None and number == 1:
        which = f" (run {result.first_failure_run:,})" if result.first_failure_run is not None else ""
        lines.append(f"first failing run{which} found after {result.first_failure_seconds:.2f}s "
                     f"(then shrunk, {result.seconds:.1f}s in all)")
    if trace is not None:
        lines.append(f"trace: {trace}")
    elif trace_problem:
        lines.append(f"trace not written: {trace_problem}")
    # A failure that needs the runs before it: replaying its trace on a fresh target passes.
    history = finding.divergence_class is not None and finding.divergence_class.kind == FindingKind.NOT_REPRODUCIBLE
    if history:
        lines.append("(these steps pass on a fresh target: the failure needs the runs before it, "
                     "so the conform command below reproduces it and replaying the trace does not)")
    elif finding.kind == FindingKind.STATE_SURVIVES_RESET:
        shown, said = fresh_replay(settings, trace) if trace is not None else (False, "no trace was written")
        history = not shown
        if shown:
            lines.append(f"(the trace holds these steps, a reset and the same steps again; replayed on a "
                         f"fresh target, as the replay command below does: {said})")
        else:
            if said == PASSES:
                said = "both runs of the trace pass, so the leak needs more runs before it than the trace's two"
            lines.append(f"(a fresh target does not show the leak ({said}): the conform command below "
                         f"reproduces it and replaying the trace does not)")
    elif finding.kind == FindingKind.KNOWN_CHANGED:
        history = True
        lines.append("(its trace would hold the answers the target no longer gives: the conform command below "
                     "replays the witness again)")
    elif finding.kind == FindingKind.MESSAGES:
        history = True
        lines.append("(a trace records the answers, not what workers were sent, so replaying it cannot show "
                     "this class: the conform command below reproduces it)")
    elif finding.kind == FindingKind.TARGET_TOO_SLOW:
        lines.append(f"(a call past --timeout {settings.timeout:g}s is a finding of its own, one class per op: "
                     f"not replayed here, since each replay waits the whole timeout; raise --timeout if the "
                     f"target is meant to take that long)")
    elif trace is not None and finding.kind != FindingKind.HARNESS_ERROR:
        # The replay command is printed only if it fails: a target that answered these steps
        # alike twice in the campaign, and right on a fresh start (one that kept its first
        # config, say), kept something from before the campaign's reset.
        shown, said = fresh_replay(settings, trace)
        history = not shown
        if not shown:
            lines.append(f"(replayed on a fresh target, the trace does not fail ({said}): the target's "
                         f"state survives reset, from a run before these steps; the conform command "
                         f"below reproduces it and replaying the trace does not)")
    lines.extend(reproduce_lines(settings, result, None if history else trace))
    return "\n".join(lines)


def _has_baseline(result: CampaignResult) -> bool:
    return result.masks is not None and bool(result.masks.known)


def summary_table(result: CampaignResult, traces: Sequence[Path | str | None]) -> list[str]:
    """One row per class, grouped by (kind, op, path) for reading: each group's causes
    (the model's branch, valid or refused input) on the rows under its first."""
    rows = [("#", "class", "cause", "requirements", "steps", "status", "trace")]
    numbered = list(enumerate(zip(result.findings, traces), 1))
    groups: dict[str, int] = {}
    for _, (finding, _) in numbered:
        groups.setdefault(_group_of(finding), len(groups))
    baseline = _has_baseline(result)
    for number, (finding, trace) in sorted(numbered, key=lambda row: groups[_group_of(row[1][0])]):
        found = finding.divergence_class
        status = ("declared" if finding.declared else "KNOWN" if finding.known
                  else "CHANGED" if finding.kind == FindingKind.KNOWN_CHANGED
                  else "NEW" if baseline else "NOT DECLARED")
        rows.append((str(number), _group_of(finding), (found.cause_text() if found else "") or "-",
                     (", ".join(found.requirements) if found else "") or "-",
                     str(len(finding.counterexample)), status, str(trace or "-")))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return ["divergence classes:"] + [
        "  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1]
        for row in rows]


def _group_of(finding: Finding) -> str:
    return finding.divergence_class.group if finding.divergence_class is not None else str(finding.kind)


def known_lines(result: CampaignResult, where: str) -> list[str]:
    """The baseline's classes: each KNOWN, with how often the campaign met it again."""
    known = result.masks.known if result.masks is not None else []
    if not known:
        return []
    from duespec.judge import KNOWN

    skipped = result.masks.skipped if result.masks is not None else {}
    ended = result.masks.runs_ended if result.masks is not None else {}
    met = [(found, skipped.get(KNOWN + found.label(), 0) + ended.get(KNOWN + found.label(), 0)) for found in known]
    again = sum(1 for _, count in met if count)
    lines = [f"known from the baseline {where}: {len(known)} classes, {again} met again (masked, KNOWN), "
             f"{len(known) - again} not met in this campaign"]
    witnesses = result.masks.witnesses if result.masks is not None else {}
    if witnesses:
        lines.append(f"  {len(witnesses)} with a witness, {result.masks.rechecked} of them replayed as recorded "
                     f"(answers alone); {len(known) - len(witnesses)} without one, masked unchecked")
    lines += [f"  KNOWN  {found.label()}: met at {count:,} steps" for found, count in met if count]
    return lines


def campaign_report(result: CampaignResult, settings: ReportSettings,
                    coverage: CoverageReport | None = None) -> Iterator[str]:
    """The report of one campaign as conform and check print it, a line or a class at a
    time: the verdict, the share of chunks run, each class (its trace written into
    settings.trace_dir and replayed on a fresh target first; its trace and text noted on
    the finding, for --json and JUnit), the table of classes, what was not compared, and
    the spec coverage (`coverage`, or the result's own report when None)."""
    yield verdict_line(result, settings.target)
    yield from parallel.share_lines(result)
    if result.depths and settings.coverage:
        yield depth_line(result)
    traces: list[Path | None] = []
    for number, finding in enumerate(result.findings, 1):
        trace, problem = None, None
        try:
            if finding.kind != FindingKind.KNOWN_CHANGED:  # its steps are the baseline's witness, not a run of this one
                trace = write_failure_trace(result, settings.trace_dir, target=settings.target,
                                            producer=f"duespec {settings.command}", finding=finding)
        except (OSError, ValueError) as error:
            problem = str(error)
        traces.append(trace)
        finding.trace, finding.details = trace, finding_details(settings, result, number, finding, trace, problem)
        yield finding.details
    if result.findings:
        yield "\n".join(summary_table(result, traces))
    yield from known_lines(result, ", ".join(settings.baseline) or "-")
    not_compared = result.not_compared()
    if not_compared or result.stopped:
        yield "not compared:" if not_compared else "search:"
        for line in not_compared:
            yield f"  - {line}"
        if result.stopped:
            yield f"  search stopped: {result.stopped}"
    if settings.coverage or not settings.no_coverage:
        report = coverage if coverage is not None else report_for(get_system(result.system), result)
        yield report.render() if settings.coverage else report.summary_line()


def render_report(result: CampaignResult, settings: ReportSettings) -> str:
    """campaign_report as one text: what conform prints of the campaign."""
    return "".join(f"{block}\n" for block in campaign_report(result, settings))


def finding_printer(number: int, finding: Finding, then: str = "searching on") -> None:
    """A line on stderr as each class is found, before the campaign's report: a long
    campaign shows what it has, and what a stop (SIGTERM, --budget) will keep."""
    print(f"  ... class {number} found: {finding.label} ({len(finding.counterexample)} steps"
          f"{', declared' if finding.declared else ', known' if finding.known else ''}); {then}",
          file=sys.stderr, flush=True)


def preflight(system: System, factory: TargetFactory, profile: str, observe: str = "state",
              reset: str = "target") -> tuple[bool, bool]:
    """Start one instance before the campaign, so a target that cannot even start is reported
    as unusable (exit 2) instead of as a counterexample of zero steps. Whether its whole
    state is compared: `state` requires observe(), `none` never calls it, and `auto`
    compares it when observe() answers and falls back to a response-only check only when
    the target says it has none (an HTTP server answering debug.snap with 400, 404 or
    501; a Python target whose observe() raises NotImplementedError). An observe() that
    fails any other way is an unusable target, never a quiet fallback.

    Whether the target is reset between runs, the same way: `target` requires reset(),
    `none` never calls it (each run in a namespace of its own, System.namespace), and
    `auto` falls back to namespaces only when the target says it has no reset (debug.reset
    answered 400, 404 or 501; NotImplementedError). A target that is not reset shows
    other runs' objects in its state, so its state is never observed whole.

    Returns (observe the whole state, reset the target)."""
    try:
        target = factory()
        if reset != "none":
            try:
                target.reset(system.config(profile))
            except TargetError as error:
                if reset == "target" or system.namespace is None or not error.says_not_offered:
                    raise
                reset = "none"
        if reset == "none":
            if observe == "state":
                raise UsageError("--observe state: a target that is not reset holds other runs' objects, "
                                 "so its whole state is not one run's; use --observe none (or auto)")
            observe = "none"
        try:
            if observe != "none":
                target.observe()
        except TargetError as error:
            if observe == "state" or system.probes is None or not error.says_not_offered:
                raise
            observe = "none"
        close_target(target)
        return observe != "none", reset != "none"
    except TargetError as error:
        raise UsageError(f"target unusable: {error}") from None
    except Exception as error:  # a Python target's constructor or reset may raise anything
        raise UsageError(f"target unusable: starting a fresh instance raised "
                         f"{type(error).__name__}: {error}") from None


def profiles_of(system: System, requested: list[str] | None) -> list[str]:
    if not requested:
        return [system.profiles[0]]
    if requested == ["all"]:
        return list(system.profiles)
    unknown = [p for p in requested if p not in system.profiles]
    if unknown:
        raise UsageError(f"{system.name} has no profile {', '.join(unknown)}; known: "
                         f"{', '.join(system.profiles)} (or all)")
    return list(dict.fromkeys(requested))


def main(args: argparse.Namespace) -> int:
    stopper = Stopper(getattr(args, "budget", None))
    # SIGTERM, SIGINT: stop, and report what was found, from the first search to the last
    # file written (stopping.py)
    with stopper.signals():
        return _conform(args, stopper)


def _conform(args: argparse.Namespace, stopper: Stopper) -> int:
    if args.timeout <= 0:
        raise UsageError(f"--timeout must be positive, got {args.timeout}")
    system = get_system(args.system)
    profiles = profiles_of(system, args.profile)
    try:
        declared_file = read(args.declared, system) if args.declared else None
        scope = scope_of(system, args.ops, args.skip_ops)
    except (DeclaredError, ScopeError) as error:
        raise UsageError(str(error)) from None
    declared = declared_file.entries if declared_file else []
    if getattr(args, "inputs", "all") == "valid" and system.refuses is None:
        raise UsageError(f"--inputs valid: {system.name} does not tell a refused request apart")
    try:
        known = baselines.read_all(getattr(args, "baseline", None) or [], system.name, args.target, profiles)
    except baselines.BaselineError as error:
        raise UsageError(str(error)) from None
    request_tags = {**(declared_file.require_tags if declared_file else {}),
                    **dict(getattr(args, "require_tag", None) or [])}
    if request_tags and system.tag_request is None:
        raise UsageError(f"--require-tag: {system.name}'s requests carry no tags")
    for profile in profiles:  # the model judges a config it cannot take (--catch-up)
        try:
            system.model().reset({**system.config(profile), **parallel.config_over_profile(args)})
        except ValueError as error:
            raise UsageError(f"--catch-up under profile {profile}: {error}") from None
    try:
        factory = resolve(system, args.target, timeout=args.timeout,
                          start_timeout=max(args.timeout, START_TIMEOUT))
    except TargetSpecError as error:
        raise UsageError(str(error)) from None
    cases: list[junit.Case] = []
    coverage: list[CoverageReport] = []
    reports: list[dict] = []
    try:
        database = parallel.open_database_of(args)
        if args.observe == "none" and system.probes is None:
            raise UsageError(f"{system.name} has no public reads to check a target without its state by")
        reset_mode = vars(args).get("reset", "target")
        if reset_mode == "none" and system.namespace is None:
            raise UsageError(f"--reset none: {system.name} has no id namespaces, so its target must offer reset")
        observe, reset = preflight(system, factory, profiles[0], args.observe, reset_mode)
        if not reset:
            args.reset = "none"  # the reproduce command says so
            print(f"no reset: the target keeps every run's objects, so each run sends its ids, templates and "
                  f"tags under a token of its own (run-<hex>-), the model is reset alone, and every run uses "
                  f"the target's own config; not seen that way: {system.namespace.blind_spots}", flush=True)
        if not observe:
            print(f"response-only: every answer is compared, and the state through the public reads of "
                  f"what each step touched, not whole; not seen that way: {system.blind_spots}", flush=True)
        jobs = parallel.effective_jobs(args.jobs, args.target, factory, parallel.say)
        runs = [(profile, False) for profile in profiles]
        if args.long_run:
            runs += [(profile, True) for profile in profiles]
        for profile, long in runs:
            if stopper.requested:
                print(f"not run (cut short by {stopper.reason}): {'long run' if long else 'campaign'} "
                      f"[{profile}]", flush=True)
                continue
            if long:
                if not reset:
                    print(f"not run: long run [{profile}] (it needs a target that can be reset)", flush=True)
                    continue
                result = run_long(system, factory, steps=args.long_run, profile=profile, seed=args.seed,
                                  observe=observe, request_tags=request_tags, stopper=stopper,
                                  config=parallel.config_over_profile(args))
                print(f"long run of {args.long_run:,} steps:", flush=True)
            else:
                result = parallel.run_chunks(
                    system, factory, parallel.spec_from_args(
                        args, profile, observe, request_tags, reset,
                        tuple(entry.divergence_class for entry in known.get(profile, ()))),
                    seed=args.seed,
                    examples=args.examples, jobs=jobs, shard=args.shard, declared=declared, scope=scope,
                    database=database, progress_every=args.progress, stopper=stopper,
                    on_finding=finding_printer if args.progress > 0 else None)
                if known.get(profile):  # the witnesses are replayed once, in the shard that ran chunk 0
                    rechecked = (baselines.recheck(system, factory, profile, known[profile], reset)
                                 if 0 in result.chunks and not stopper.requested else baselines.Recheck(0, ()))
                    result = baselines.with_recheck(result, known[profile], rechecked)
                    if args.progress > 0:
                        for number, finding in enumerate(result.findings, 1):
                            if finding.kind == FindingKind.KNOWN_CHANGED:
                                finding_printer(number, finding, then="by replaying the baseline's witness")
                if args.json and not stopper.requested:  # a stop writes what was found, now
                    result = baselines.with_witnesses(result, system, factory, reset)
            stopper.settle()  # a stop asked for now only keeps later campaigns from starting
            report = report_for(system, result)
            coverage.append(report)
            for block in campaign_report(result, ReportSettings.from_args(args), report):
                print(block, flush=True)
            details = [finding.details or "" for finding in result.findings]
            cases.append(junit.Case(result, args.target, "\n\n".join(details), tuple(details)))
            if not long:
                reports.append(campaign_to_json(result, target=args.target, examples=args.examples, steps=args.steps,
                                                depth=args.depth, max_classes=args.max_classes))
    finally:
        stopper.phase = "report"  # a signal from here on is noted: what was found is written
        close_factory(factory)
    if args.junit:
        print(f"junit: {junit.write(args.junit, f'duespec conform {system.name}', cases)}")
    if args.coverage_json:
        print(f"coverage: {write_json(coverage, args.coverage_json)}")
    if not all(case.result.ok for case in cases):
        code = EXIT_FAILED
    elif not cases:
        code = EXIT_INCOMPLETE  # stopped before any campaign started: nothing was checked
    elif stopper.reason is not None and not stopper.reason.startswith("--budget"):
        code = EXIT_INCOMPLETE  # cut short by a signal: nothing found, nothing shown to hold
    else:
        code = EXIT_HOLDS
    if args.json:
        print(f"json: {write_report(args.json, args.command, code, reports, shard=args.shard)}")
    return code


def tag_argument(text: str) -> tuple[str, str]:
    """argparse type for --require-tag: KEY=VALUE, a non-empty key."""
    key, equals, value = text.partition("=")
    if not equals or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (e.g. resonate:target=poll://any@w), got {text!r}")
    return key, value


def budget_seconds(text: str) -> float:
    """argparse type for --budget: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    """argparse type for --depth: a number >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "conform", help="conformance campaign: any target (a program, a Python object) vs the model",
        description="Drive a target and the reference model in lockstep with the system's "
                    "Hypothesis state machine; compare every response and the whole state. "
                    "Exit 0: conforms; 1: a divergence (its shrunk counterexample is written "
                    "as a trace); 2: bad usage or an unusable target.",
        epilog='example: duespec conform duebook --target "stdio:node examples/node-duebook/duebook.js"')
    parser.add_argument("system", type=system_argument, metavar="SYSTEM", help=SYSTEM_HELP)
    parser.add_argument("--target", required=True, metavar="TARGET", help=f"the target: {SPEC_HELP}")
    add_campaign_options(parser)
    parser.set_defaults(run=main)


def add_campaign_options(parser: argparse.ArgumentParser) -> None:
    """Everything but the target: `duespec check` is this command with the target fixed."""
    parser.add_argument("--profile", action="append", metavar="PROFILE",
                        help="spec reading; repeat for several, or 'all' (default: the system's first)")
    parser.add_argument("--catch-up", metavar="POLICY", default=None,
                        help="schedules: the catch-up policy both sides are reset with: all (the spec's, "
                             "the default), one-per-pass, once-skip or never (spec/schedules.md, 'Catch-up policies'; "
                             "profiles lean and server), for a server that implements another on purpose")
    add_budget_arguments(parser, examples=200)
    parser.add_argument("--long-run", type=positive_int, metavar="N",
                        help="after the campaigns, one long lockstep run of N steps per profile "
                             "(a seeded workload that fills and drains a large book; e.g. 25000)")
    parser.add_argument("--depth", type=non_negative_float, default=1.0, metavar="SCALE",
                        help="scale of the deep runs mixed into the campaign (hundreds of ids, "
                             "a large book; see docs/operations.md): 0 for none, 2 for twice "
                             "as large (default 1)")
    parser.add_argument("--observe", choices=("auto", "state", "none"), default="auto",
                        help="compare the target's whole state after every step (state), or check "
                             "it through public reads of what each step touched, every answer "
                             "compared (none: a server that cannot show its state); auto (the "
                             "default) compares the state unless the target says it has no "
                             "observe() (NotImplementedError; debug.snap answered 400, 404 or 501)")
    parser.add_argument("--reset", choices=("auto", "target", "none"), default="auto",
                        help="reset the target before every run (target), or never (none: a server "
                             "that keeps every run's objects; each run's ids, templates and tags "
                             "carry a token of its own, the model is reset alone, and the state is "
                             "checked response-only); auto (the default) resets unless the target "
                             "says it cannot (NotImplementedError; debug.reset answered 400, 404 or 501)")
    parser.add_argument("--junit", metavar="FILE", help="write JUnit XML here")
    parser.add_argument("--trace-dir", default=str(DEFAULT_FAILURE_DIR), metavar="DIR",
                        help=f"where a failing campaign writes its trace (default {DEFAULT_FAILURE_DIR})")
    parser.add_argument("--coverage-json", metavar="FILE", help="write the spec-coverage report as JSON")
    parser.add_argument("-v", "--coverage", action="store_true",
                        help="print the whole spec-coverage report and how deep the runs went (by "
                             "default: one line of it)")
    parser.add_argument("--no-coverage", action="store_true", help="do not print even that line")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help=f"seconds the target may take per call, stdio or in-process; a call that "
                             f"takes longer fails the campaign (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--declared", metavar="FILE",
                        help="TOML or JSON file of accepted differences (docs/declared.md): "
                             "reported as declared, they do not fail the campaign")
    parser.add_argument("--baseline", metavar="REPORT.json", action="append",
                        help="a previous `conform --json` report of this system, target and profile "
                             "(repeat it to take the classes of several, each once): "
                             "its classes are KNOWN, masked from the first step; only a NEW class "
                             "fails the campaign, or a known one whose witness (the run that showed "
                             "it, with the target's answers then) the target no longer answers as "
                             "recorded (docs/campaigns.md, a baseline in CI)")
    parser.add_argument("--inputs", choices=("all", "valid"), default="all",
                        help="send every request the machine draws (all, the default), or only those "
                             "the spec accepts (valid: malformed ones the model alone answers), so "
                             "that a server whose known gaps are in validation is explored in depth")
    parser.add_argument("--max-classes", type=positive_int, default=DEFAULT_MAX_CLASSES, metavar="N",
                        help=f"undeclared divergence classes to find before stopping (default "
                             f"{DEFAULT_MAX_CLASSES}: the first decides the verdict; more to list more; "
                             f"declared classes are reported and never count)")
    parser.add_argument("--ops", action="append", metavar="OP,...",
                        help="only these ops (comma-separated or repeated); rules that may call "
                             "another op are not drawn")
    parser.add_argument("--skip-ops", action="append", metavar="OP,...",
                        help="leave these ops out (comma-separated or repeated)")
    parser.add_argument("--require-tag", action="append", type=tag_argument, metavar="KEY=VALUE",
                        help="put this tag on every promise and schedule the campaign creates "
                             "(repeatable; e.g. resonate:target=poll://any@w for a server that "
                             "requires one); the model answers as for the tagged request")
    parser.add_argument("--budget", type=budget_seconds, metavar="SECONDS",
                        help="stop after SECONDS in all, keeping what was found (shrinking it "
                             "for a few seconds more); nothing undeclared found: HOLDS within "
                             "the budget, exit 0")
    parser.add_argument("--progress", type=progress_seconds, default=10.0, metavar="SECONDS",
                        help="print a progress line to stderr every SECONDS (default 10; 0: never)")
    parallel.add_parallel_arguments(parser)

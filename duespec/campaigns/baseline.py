"""Known differences: `duespec conform --baseline REPORT.json`.

A baseline is a previous `conform --json` report of the same system, target and profile.
Its classes (those that failed it: not declared) are known: each is masked from the first
step of the campaign, as a class the campaign found itself is masked once found (the same
kind, op and cause, at one of its paths or below one; duespec.campaigns.classes), so the
search spends its runs past them. What the campaign finds is then NEW by construction,
and only a NEW class fails it, as a linter's baseline lets only new warnings fail a build.

A report made with a baseline carries that baseline's classes too (`baseline` in each
campaign), so it is itself the refreshed baseline: known classes, and the new ones.

A known class also keeps its witness where it has one: the run that showed it (a
finding's counterexample), with the answers the target gave to it when the class was
found (`witness`: each step sent twice on a fresh target; kept only if both answered
alike), carried from report to report. After the search, each witness is replayed
against the target (`recheck`), its answers alone compared: a target that now answers
otherwise, inside a difference the baseline knew, fails the campaign with a `known
difference changed` class, since masking the class would hide whatever it does there
now. A fix is such a change too: refresh the baseline.

Anything else is refused, one line naming the file and the problem, never ignored: a
file that is no such report, one of another system, target or profile, a class that is
not one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from duespec.campaigns.report_json import SCHEMA
from duespec.campaigns.run import CampaignResult, Finding
from duespec.judge import DivergenceClass, FindingKind, answers_agree, requirements_of
from duespec.limits import MAX_REPORT_BYTES, InputError, parse_json, read_file
from duespec.systems import System
from duespec.targets.interface import TargetFactory, close_target
from duespec.targets.namespaced import namespaced
from duespec.targets.resolve import guarded
from duespec.traces.format import TraceError, check_step

#: Kinds of class a witness can show again: an answer replayed on a fresh target. A state
#: or messages class's witness replays its answers alone; timing, reset and
#: reproducibility classes have none.
WITNESSED = (FindingKind.RESPONSE, FindingKind.STATE, FindingKind.MESSAGES)


class BaselineError(ValueError):
    """The baseline cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class Known:
    """A class of the baseline, and its witness (as the report holds it: config and steps,
    each step with the target's `result`), or None."""

    divergence_class: DivergenceClass
    witness: dict[str, Any] | None = None


def read(path: str | Path, system: str, target: str, profiles: list[str]) -> dict[str, list[Known]]:
    """profile -> the known classes of the report at `path`, with their witnesses, for a
    campaign of `system` against `target` in each of `profiles`."""
    where = str(path)
    try:  # read as `merge` reads a report: a regular file only, within MAX_REPORT_BYTES
        data = read_file(path, MAX_REPORT_BYTES)
    except InputError as error:
        raise BaselineError(f"--baseline {where}: {error.problem}") from None
    try:
        document = parse_json(data, unique_keys=True)
    except InputError as error:
        raise BaselineError(f"--baseline {where}: not JSON: {error.problem}") from None
    if not isinstance(document, dict) or document.get("duespec_report") != SCHEMA \
            or not isinstance(document.get("campaigns"), list):
        raise BaselineError(f"--baseline {where}: not a duespec `conform --json` report (schema {SCHEMA})")
    campaigns = [c for c in document["campaigns"] if isinstance(c, dict)]
    systems = sorted({str(c.get("system")) for c in campaigns})
    mine = [c for c in campaigns if c.get("system") == system]
    if not mine:
        raise BaselineError(f"--baseline {where}: a report of {', '.join(systems) or 'no campaign'}, "
                            f"not of {system}")
    targets = sorted({str(c.get("target")) for c in mine})
    if targets != [target]:
        raise BaselineError(f"--baseline {where}: made against target {', '.join(targets)}, not {target}")
    known: dict[str, list[Known]] = {}
    for profile in profiles:
        of_profile = [c for c in mine if c.get("profile") == profile]
        if not of_profile:
            had = sorted({str(c.get("profile")) for c in mine})
            raise BaselineError(f"--baseline {where}: has no campaign of profile {profile} (it has "
                                f"{', '.join(had)}); make one with --profile {profile}")
        entries: list[Known] = []
        for campaign in of_profile:
            for number, (entry, witness) in enumerate(_known_entries(where, campaign), 1):
                found = _class_of(where, profile, number, entry)
                entries.append(Known(found, _witness_of(where, profile, number, found, witness)))
        known[profile] = _each_once(entries)
    return known


def read_all(paths: list[str], system: str, target: str, profiles: list[str]) -> dict[str, list[Known]]:
    """`read` of each report, its classes taken once per profile (`_each_once`)."""
    reports = [read(path, system, target, profiles) for path in paths]
    return {profile: _each_once(entry for report in reports for entry in report[profile]) for profile in profiles}


def _each_once(entries: Iterable[Known]) -> list[Known]:
    """Each class once, in the order first met, with the witness any of its entries has."""
    kept: dict[DivergenceClass, Known] = {}
    for entry in entries:
        if entry.divergence_class not in kept or kept[entry.divergence_class].witness is None:
            kept[entry.divergence_class] = entry
    return list(kept.values())


def _known_entries(where: str, campaign: dict[str, Any]) -> list[tuple[Any, Any]]:
    """A campaign's classes that failed it (not declared), and the baseline it had, each
    with its witness where the report holds one (a finding's, or a carried class's)."""
    findings = campaign.get("findings")
    carried = campaign.get("baseline", [])
    if not isinstance(findings, list) or not isinstance(carried, list):
        raise BaselineError(f"--baseline {where}: a campaign whose findings or baseline is not a list")
    entries = []
    for finding in findings:
        if not isinstance(finding, dict):
            raise BaselineError(f"--baseline {where}: a finding that is not an object: {finding!r}")
        if finding.get("class") is not None and not finding.get("declared"):
            entries.append((finding["class"], finding.get("witness")))
    return entries + [(entry, entry.get("witness") if isinstance(entry, dict) else None) for entry in carried]


def _witness_of(where: str, profile: str, number: int, found: DivergenceClass, witness: Any) -> dict[str, Any] | None:
    """The witness as the report holds it (None: the class has none); a malformed one is refused."""
    if witness is None:
        return None

    def fail(problem: str) -> BaselineError:
        return BaselineError(f"--baseline {where}: profile {profile}, class {number}: its witness: {problem}")

    if found.kind not in WITNESSED:
        raise fail(f"a {found.kind} class has none (an answer cannot show it)")
    if not (isinstance(witness, dict) and isinstance(witness.get("config"), dict)
            and isinstance(witness.get("steps"), list) and witness["steps"]):
        raise fail("needs a config (an object) and steps (a list, not empty)")
    config, steps = witness["config"], witness["steps"]
    for i, step in enumerate(steps):
        try:
            check_step(step, i, f"--baseline {where}", None)
        except TraceError as error:
            raise fail(error.problem) from None
        if step.get("result") is None:
            raise fail(f"step {i} records no result (the target's answer)")
    return {"config": config, "steps": steps}


def witness(system: System, factory: TargetFactory, config: dict[str, Any], steps: list[dict[str, Any]],
            reset: bool) -> dict[str, Any] | None:
    """`steps` (a counterexample: the model's answers) with the target's answers instead, sent
    twice on a fresh target (from `config`, or under run tokens on one that keeps its objects);
    None when the two passes answer otherwise, or the target fails: an answer that differs
    from run to run (a wall clock, a race) witnesses nothing."""
    passes = [_answers(system, factory, config, steps, reset) for _ in range(2)]
    if passes[0] is None or passes[0] != passes[1]:
        return None
    return {"config": config, "steps": [{**step, "result": answer} for step, answer in zip(steps, passes[0])]}


def _answers(system: System, factory: TargetFactory, config: dict[str, Any], steps: list[dict[str, Any]],
             reset: bool) -> list[Any] | None:
    made = factory if reset else namespaced(factory, system.namespace, system.name)
    try:
        target = guarded("starting the target", made)
        try:
            target.reset(dict(config))
            return [guarded(f"{step['op']} (the witness's step {step['i']})",
                            lambda step=step: target.step(step["op"], step["args"], step["now"]))
                    for step in steps]
        finally:
            close_target(target)
    except Exception:  # whatever the target raised: it cannot answer the witness
        return None


@dataclass(frozen=True)
class Recheck:
    """What replaying the baseline's witnesses showed."""

    #: Witnesses the target replayed as recorded.
    held: int
    #: A `known difference changed` finding per witness it did not.
    changed: tuple[Finding, ...]


def recheck(system: System, factory: TargetFactory, profile: str, known: list[Known], reset: bool) -> Recheck:
    """Send each known class's witness to the target again, from its config (`reset`), or
    under run tokens on a target that keeps its objects, and compare every answer with the
    one it recorded (duespec.judge.answers_agree: the same answer, prose aside)."""
    held, changed = 0, []
    for entry in known:
        if entry.witness is None:
            continue
        found, steps = entry.divergence_class, entry.witness["steps"]
        answers = _answers(system, factory, entry.witness["config"], steps, reset)
        if answers is None:
            how = "the target failed while answering it"
        else:
            differs = next((i for i, (step, answer) in enumerate(zip(steps, answers))
                            if not answers_agree(step["result"], answer)), None)
            if differs is None:
                held += 1
                continue
            step = steps[differs]
            how = (f"step {differs}: {step['op']} {_short(step['args'])} at now={step['now']}\n"
                   f"  recorded answer: {_short(step['result'])}\n  answer now:      {_short(answers[differs])}")
        summary = (f"Known difference changed: {found.label()}: its witness ({len(steps)} steps, with the "
                   f"target's answers when the baseline was made) no longer replays as recorded:\n  {how}")
        changed.append(Finding(FindingKind.KNOWN_CHANGED,
                               DivergenceClass(FindingKind.KNOWN_CHANGED, found.op, found.requirements, found.path,
                                               found.paths, found.cause),
                               summary=summary, failure=summary, counterexample=steps,
                               config=entry.witness["config"], shrunk=False))
    return Recheck(held, tuple(changed))


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 600 else text[:600] + " ..."


def with_recheck(result: CampaignResult, known: list[Known], rechecked: Recheck) -> CampaignResult:
    """The campaign's result with the baseline's witnesses (carried into its report) and
    what replaying them showed: a changed one is a finding that fails the campaign."""
    witnesses = {entry.divergence_class: entry.witness for entry in known if entry.witness is not None}
    masks = replace(result.masks, witnesses=witnesses, rechecked=rechecked.held) if result.masks else None
    # a chunked campaign's parts too, the replay counted in chunk 0's: what `duespec merge` reads
    parts = [with_recheck(part, known, rechecked if 0 in part.chunks else Recheck(0, ()))
             for part in result.parts]
    changed = [replace(finding, position=len(result.findings) + number)
               for number, finding in enumerate(rechecked.changed)]
    if not changed:
        return replace(result, masks=masks, parts=parts)
    first = changed[0]
    failure = {} if result.failure is not None else {
        "failure": first.failure, "failure_summary": first.summary, "failure_kind": first.kind,
        "counterexample": first.counterexample}
    return replace(result, masks=masks, parts=parts, findings=[*result.findings, *changed], **failure)


def _class_of(where: str, profile: str, number: int, entry: Any) -> DivergenceClass:
    def fail(problem: str) -> BaselineError:
        return BaselineError(f"--baseline {where}: profile {profile}, class {number}: {problem}")

    if not isinstance(entry, dict):
        raise fail(f"not an object: {entry!r}")
    try:
        kind = FindingKind(entry.get("kind"))
    except ValueError:
        raise fail(f"unknown kind {entry.get('kind')!r}; known: {', '.join(map(str, FindingKind))}") from None
    path, paths, cause = entry.get("path"), entry.get("paths", [entry.get("path")]), entry.get("cause", [])
    if not isinstance(entry.get("op"), str) or not isinstance(path, str):
        raise fail("needs an op and a path (strings)")
    if not (isinstance(paths, list) and all(isinstance(p, str) for p in paths)
            and isinstance(cause, list) and all(isinstance(t, str) for t in cause)):
        raise fail("paths and cause must be lists of strings")
    return DivergenceClass(kind, entry["op"], requirements_of(cause), path,
                           tuple(paths), tuple(cause))


def with_witnesses(result: CampaignResult, system: System, factory: TargetFactory, reset: bool) -> CampaignResult:
    """The result with a witness on each finding that fails it and an answer can show: what
    a baseline made of its report replays."""
    findings = [replace(finding, witness=witness(system, factory, finding.config or result.config,
                                                 finding.counterexample, reset))
                if finding.gates and finding.kind in WITNESSED and finding.counterexample else finding
                for finding in result.findings]
    return replace(result, findings=findings)

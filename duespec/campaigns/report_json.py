"""The machine-readable report of every campaign command (`--json FILE`), and reading it
back: what `duespec merge` combines. Its schema is in duespec.campaigns.merge's docstring."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from duespec import __version__, outputs
from duespec.campaigns.classes import DivergenceClass, Masks
from duespec.campaigns.database import Stats
from duespec.campaigns.declared import Declared
from duespec.campaigns.run import CampaignResult, Finding
from duespec.exits import UsageError
from duespec.judge import FindingKind
from duespec.limits import MAX_REPORT_BYTES, InputError, parse_json, read_file

SCHEMA = 1


class _ScopeText:
    """A scope read back from a report: only its description is needed."""

    def __init__(self, text: str) -> None:
        self.text = text

    def describe(self) -> str:
        return self.text


# -- to JSON --------------------------------------------------------------------------

def class_to_json(found: DivergenceClass) -> dict[str, Any]:
    return {**found.to_json(), "paths": list(found.paths)}


def class_from_json(found: dict[str, Any]) -> DivergenceClass:
    return DivergenceClass(FindingKind(found["kind"]), found["op"], tuple(found["requirements"]), found["path"],
                           tuple(found.get("paths", ())), tuple(found.get("cause", ())))


def finding_to_json(finding: Finding) -> dict[str, Any]:
    found = finding.divergence_class
    return {
        "kind": finding.kind, "class": None if found is None else class_to_json(found),
        "label": finding.label, "summary": finding.summary, "failure": finding.failure,
        "counterexample": finding.counterexample, "config": finding.config,
        "declared": [declared_to_json(entry) for entry in finding.declared],
        "evidence": finding.evidence, "known": finding.known, "chunks": list(finding.chunks),
        "position": finding.position, "from_database": finding.from_database,
        "trace": None if finding.trace is None else str(finding.trace), "details": finding.details,
        "witness": finding.witness,
    }


def incomplete(result: CampaignResult) -> bool:
    """Cut short by a signal (not by its own --budget, within which it says HOLDS)."""
    return result.cut_short is not None and not result.cut_short.startswith("--budget")


def declared_to_json(entry: Any) -> dict[str, Any]:
    return vars(entry) if isinstance(entry, Declared) else {"reason": getattr(entry, "reason", str(entry))}


def campaign_to_json(result: CampaignResult, *, target: str, examples: int, steps: int, depth: float,
                     max_classes: int) -> dict[str, Any]:
    """The campaign as `--json` holds it. `ok` is its verdict (no undeclared class, and not
    cut short by a signal), written for people and other tools; `merge` derives its own
    from the findings, the chunks and `cut_short` (why it stopped early, or null)."""
    stats = result.database_stats
    masks = result.masks
    return {
        "system": result.system, "profile": result.profile, "target": target, "seed": result.seed,
        "examples_budget": examples, "steps_per_run": steps, "depth": depth, "max_classes": max_classes,
        "chunks": list(result.chunks), "total_chunks": result.total_chunks,
        "runs": result.examples, "steps": result.steps, "seconds": round(result.seconds, 3),
        "ok": result.ok and not incomplete(result), "failure_kind": result.failure_kind,
        "searches": result.searches, "stopped": result.stopped, "cut_short": result.cut_short,
        "declared": [declared_to_json(entry) for entry in masks.declared] if masks is not None else [],
        "request_tags": dict(result.request_tags), "first_failure_seconds": result.first_failure_seconds,
        "first_failure_run": result.first_failure_run,
        "coverage": dict(result.coverage), "depths": result.depths,
        "skipped": dict(result.masks.skipped) if result.masks else {},
        "runs_ended": dict(result.masks.runs_ended) if result.masks else {},
        "not_sent": result.masks.not_sent if result.masks else 0,
        "scope": result.scope.describe() if result.scope is not None else None,
        "database": stats.to_json() if stats is not None else None,
        "findings": [finding_to_json(finding) for finding in result.findings],
        # The classes known before it (--baseline), so that this report is the refreshed baseline.
        "baseline": [class_to_json(known) | _witness_of(masks, known) for known in masks.known] if masks else [],
        "rechecked": masks.rechecked if masks else 0,
        # Per chunk, what `duespec merge` combines (it applies --max-classes across shards).
        "parts": [campaign_to_json(part, target=target, examples=examples, steps=steps, depth=depth,
                                   max_classes=max_classes) | {"total_chunks": result.total_chunks}
                  for part in result.parts],
    }


def _witness_of(masks: Masks, known: DivergenceClass) -> dict[str, Any]:
    witness = masks.witnesses.get(known)
    return {} if witness is None else {"witness": witness}


def write_report(path: str | Path, command: str, exit_code: int, campaigns: list[dict[str, Any]],
                 replays: list[dict[str, Any]] | None = None, **extra: Any) -> Path:
    document = {"duespec_report": SCHEMA, "version": __version__, "command": command, "exit": exit_code,
                **extra, "campaigns": campaigns, "replays": replays or []}
    return outputs.write_text(path, json.dumps(document, indent=1, sort_keys=True) + "\n", what="--json")


# -- from JSON ------------------------------------------------------------------------

def finding_from_json(data: dict[str, Any]) -> Finding:
    found = data.get("class")
    divergence_class = None if found is None else class_from_json(found)
    finding = Finding(kind=FindingKind(data["kind"]), divergence_class=divergence_class, summary=data["summary"],
                      failure=data["failure"], counterexample=data["counterexample"],
                      declared=[declared_from_json(entry) for entry in data.get("declared", [])],
                      config=data.get("config") or {}, evidence=data.get("evidence"),
                      known=bool(data.get("known")), chunks=list(data.get("chunks", [0])),
                      position=data.get("position", 0), from_database=bool(data.get("from_database")),
                      trace=data.get("trace"), details=data.get("details"), witness=data.get("witness"))
    return finding


def declared_from_json(entry: dict[str, Any]) -> Declared:
    if "where" not in entry:
        return Declared(entry["reason"], FindingKind.RESPONSE, "$")
    return Declared(**{**entry, "where": FindingKind(entry["where"])})


def campaign_from_json(data: dict[str, Any]) -> CampaignResult:
    masks = Masks(data["profile"], declared=[declared_from_json(entry) for entry in data.get("declared", [])],
                  known=[class_from_json(known) for known in data.get("baseline", [])],
                  witnesses={class_from_json(known): known["witness"] for known in data.get("baseline", [])
                             if "witness" in known},
                  rechecked=data.get("rechecked", 0))
    masks.skipped.update(data.get("skipped", {}))
    masks.runs_ended.update(data.get("runs_ended", {}))
    masks.not_sent = data.get("not_sent", 0)
    findings = [finding_from_json(entry) for entry in data["findings"]]
    first = next((f for f in findings if f.gates), None)
    result = CampaignResult(
        system=data["system"], profile=data["profile"], seed=data["seed"], examples=data["runs"],
        steps=data["steps"], seconds=data["seconds"], coverage=Counter(data.get("coverage", {})),
        failure=first.failure if first else None, counterexample=first.counterexample if first else [],
        config=first.config if first else {}, failure_kind=first.kind if first else None,
        failure_summary=first.summary if first else None, findings=findings, masks=masks,
        scope=_ScopeText(data["scope"]) if data.get("scope") else None,  # type: ignore[arg-type]
        searches=data.get("searches", 1), stopped=data.get("stopped"), depths=data.get("depths", []),
        first_failure_seconds=data.get("first_failure_seconds"), first_failure_run=data.get("first_failure_run"),
        cut_short=data.get("cut_short"), examples_asked=data.get("examples_budget", 0),
        request_tags=dict(data.get("request_tags", {})), chunks=list(data["chunks"]),
        total_chunks=data["total_chunks"],
        database_stats=Stats.from_json(data["database"]) if data.get("database") else None)
    return result


def load_report(path: str) -> dict[str, Any]:
    try:
        data = read_file(path, MAX_REPORT_BYTES)
    except InputError as error:
        raise UsageError(f"{path}: cannot read the report: {error.problem}") from None
    try:
        document = parse_json(data, unique_keys=True)
    except InputError as error:
        raise UsageError(f"{path}: not a JSON report: {error.problem}") from None
    if not isinstance(document, dict) or document.get("duespec_report") != SCHEMA:
        raise UsageError(f"{path}: not a duespec --json report (schema {SCHEMA})")
    return document



"""`duespec merge REPORT.json...`: the shards of one campaign, one verdict.

Every campaign command writes a machine-readable report with `--json FILE` (schema
below). A campaign split with `--shard I/N` over N machines writes N reports; `merge`
checks that together they ran every chunk of each campaign exactly once, and prints the
verdict, the class table and (with `--junit`) one JUnit file, as the unsharded campaign
would. The verdict is derived here, never read: from each campaign's classes (whether
each is declared is decided again from the campaign's declared entries), its chunks and
whether a chunk was cut short. Exit 0: every campaign holds (and every trace replayed is
confirmed); 1: a class is not declared or a trace diverges; 2: a report is malformed,
contradicts itself, or is not a shard of the same campaign as the others, or shards
overlap or are missing; 3: nothing fails but a chunk was cut short or not run (a shard
stopped by SIGTERM): incomplete, never HOLDS.

Report (JSON, `"duespec_report": 1`): `command`, `exit`, `shard`, `campaigns` (one per
system and profile: its budget, the chunks it ran of `total_chunks`, `cut_short` (why it
stopped early, or null), runs, steps, seconds, coverage, its declared entries, what masks
kept from comparison, the database's counts, per chunk its `parts`, and `findings`: per
class its kind, class, summary, counterexample, config, declared entries, the chunks that
found it, its trace and the text of its report) and `replays` (per trace: path, verdict,
report).
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from typing import Any, Callable

from duespec.campaigns import junit
from duespec.campaigns.conform import summary_table, verdict_line
from duespec.campaigns.classes import Masks
from duespec.campaigns.parallel import chunk_seed, chunks_of, combine, cutoff
from duespec.campaigns.run import CampaignResult
from duespec.campaigns.report_json import (campaign_from_json, campaign_to_json, class_from_json, declared_from_json,
                                           load_report, write_report)
from duespec.exits import EXIT_FAILED, EXIT_HOLDS, EXIT_INCOMPLETE, EXIT_USAGE, UsageError
from duespec.judge import FindingKind
from duespec.limits import MAX_EXAMPLES
from duespec.systems import get_system, names


# -- checking ---------------------------------------------------------------------------
#
# Nothing a report says about itself is believed: a campaign's verdict is derived from its
# classes (re-checked against its declared entries), its chunks and whether it was cut
# short, and every field merge reads is checked for its type before it is used. A report
# that contradicts itself (a class its parts do not list, an exit code its contents do not
# give, a chunk twice) was edited or is not whole: it is refused, never merged.

#: What makes campaigns shards of one campaign: the same run plan and the same masks.
_IDENTITY = ("system", "profile", "target", "seed", "examples_budget", "steps_per_run", "depth",
             "max_classes", "total_chunks", "scope", "declared", "request_tags", "baseline")


def _is_int(value: Any) -> bool:
    return type(value) is int


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _is_number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value) and value >= 0


def _is_str(value: Any) -> bool:
    return isinstance(value, str)  # a FindingKind too, in a report not yet written out


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or check(value)


def _list_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: type(value) is list and all(check(item) for item in value)


def _counts(value: Any) -> bool:
    return type(value) is dict and all(type(k) is str and _is_count(v) for k, v in value.items())


def _is_dict(value: Any) -> bool:
    return type(value) is dict


_KINDS = frozenset(kind.value for kind in FindingKind)
_CLASS_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "kind": (lambda v: _is_str(v) and v in _KINDS, "a finding kind"), "op": (_is_str, "a string"),
    "requirements": (_list_of(_is_str), "a list of strings"), "path": (_is_str, "a string"),
    "paths": (_list_of(_is_str), "a list of strings"), "cause": (_list_of(_is_str), "a list of strings")}
_DECLARED_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "reason": (_is_str, "a string"),
    "where": (lambda v: v in (FindingKind.RESPONSE, FindingKind.STATE, FindingKind.MESSAGES),
              '"response", "state" or "messages"'),
    "path": (_is_str, "a string"), "op": (_optional(_is_str), "a string or null"),
    "requirement": (_optional(_is_str), "a string or null"), "profile": (_optional(_is_str), "a string or null"),
    "branch": (_optional(_is_str), "a string or null"), "unordered": (lambda v: type(v) is bool, "true or false"),
    "order_within": (_optional(_is_str), "a string or null")}
#: Fields of a declared entry that reports written before them lack (their defaults apply).
_DECLARED_LATER = ("branch", "unordered", "order_within")
_FINDING_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "kind": (lambda v: _is_str(v) and v in _KINDS, "a finding kind"), "class": (_optional(_is_dict), "an object or null"),
    "label": (_is_str, "a string"), "summary": (_is_str, "a string"), "failure": (_is_str, "a string"),
    "counterexample": (_list_of(_is_dict), "a list of steps"), "config": (_is_dict, "an object"),
    "declared": (_list_of(_is_dict), "a list of objects"), "evidence": (_optional(_is_dict), "an object or null"),
    "chunks": (lambda v: _list_of(_is_count)(v) and bool(v), "a non-empty list of chunk numbers"),
    "position": (_is_count, "a whole number"), "from_database": (lambda v: type(v) is bool, "true or false"),
    "trace": (_optional(_is_str), "a string or null"), "details": (_optional(_is_str), "a string or null"),
    "known": (lambda v: type(v) is bool, "true or false")}
_CAMPAIGN_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "system": (lambda v: _is_str(v) and v in names(), "a known system"), "profile": (_is_str, "a string"),
    "target": (_is_str, "a string"), "seed": (_is_int, "an integer"),
    "examples_budget": (lambda v: _is_int(v) and 1 <= v <= MAX_EXAMPLES,
                        f"a positive integer of at most {MAX_EXAMPLES:,} (docs/limits.md)"),
    "steps_per_run": (_is_count, "a whole number"), "depth": (_is_number, "a number"),
    "max_classes": (lambda v: _is_int(v) and v >= 1, "a positive integer"),
    "chunks": (_list_of(_is_count), "a list of chunk numbers (whole numbers)"),
    "total_chunks": (lambda v: _is_int(v) and v >= 1, "a positive integer"),
    "runs": (_is_count, "a whole number"), "steps": (_is_count, "a whole number"),
    "seconds": (_is_number, "a number"), "ok": (lambda v: type(v) is bool, "true or false"),
    "searches": (_is_count, "a whole number"), "stopped": (_optional(_is_str), "a string or null"),
    "cut_short": (_optional(_is_str), "a string or null"), "coverage": (_counts, "an object of counts"),
    "depths": (_list_of(_is_dict), "a list of objects"), "skipped": (_counts, "an object of counts"),
    "runs_ended": (_counts, "an object of counts"), "scope": (_optional(_is_str), "a string or null"),
    "database": (_optional(_is_dict), "an object or null"), "findings": (_list_of(_is_dict), "a list of objects"),
    "declared": (_list_of(_is_dict), "a list of objects"),
    "baseline": (_list_of(_is_dict), "a list of classes"), "not_sent": (_is_count, "a whole number"),
    "request_tags": (lambda v: _is_dict(v) and all(_is_str(x) for x in v.values()), "an object of strings"),
    "first_failure_seconds": (_optional(_is_number), "a number or null"),
    "first_failure_run": (_optional(_is_count), "a whole number or null"),
    "parts": (_list_of(_is_dict), "a list of objects")}
_REPLAY_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "path": (_is_str, "a string"), "confirmed": (lambda v: type(v) is bool, "true or false"),
    "malformed": (_optional(_is_str), "a string or null"), "report": (_optional(_is_str), "a string or null")}
_CHECK_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "part": (_is_str, "a string"), "what": (_is_str, "a string"), "holds": (lambda v: type(v) is bool, "true or false")}


def _check_fields(where: str, value: Any, fields: dict[str, tuple[Callable[[Any], bool], str]],
                  optional: tuple[str, ...] = ()) -> None:
    if type(value) is not dict:
        raise UsageError(f"{where}: must be an object, got {_shown(value)}")
    for name, (check, what) in fields.items():
        if name not in value:
            if name in optional:
                continue
            raise UsageError(f'{where}: no "{name}" (a report of an older or other duespec? re-run it)')
        if not check(value[name]):
            raise UsageError(f'{where}: "{name}" must be {what}, got {_shown(value[name])}')


def _check_declared(where: str, entry: Any) -> None:
    """A declared entry: each field of its type, and no field a declared entry has not."""
    _check_fields(where, entry, _DECLARED_FIELDS, optional=_DECLARED_LATER)
    unknown = sorted(set(entry) - set(_DECLARED_FIELDS))
    if unknown:
        raise UsageError(f"{where}: {_shown(unknown[0])} is no field of a declared entry")


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 60 else text[:59] + "…"


def check_report(path: str, document: dict[str, Any]) -> None:
    """Every field of a report that merge reads, its type checked: a UsageError naming the
    first that is wrong."""
    _check_fields(path, document, {
        "command": (_is_str, "a string"), "exit": (lambda v: _is_int(v) and v in (0, 1, 2, 3), "0, 1, 2 or 3"),
        "campaigns": (_list_of(_is_dict), "a list of objects"), "replays": (_list_of(_is_dict), "a list of objects"),
        "checks": (_list_of(_is_dict), "a list of objects"),
        "shard": (_optional(lambda v: type(v) is list and len(v) == 2 and all(_is_int(x) for x in v)
                            and 1 <= v[0] <= v[1]), "null or [I, N] with 1 <= I <= N"),
        "traces_total": (_is_count, "a whole number")}, optional=("checks", "shard", "traces_total"))
    for number, replayed in enumerate(document["replays"], 1):
        _check_fields(f"{path}: replay {number}", replayed, _REPLAY_FIELDS)
    for number, check in enumerate(document.get("checks", []), 1):
        _check_fields(f"{path}: check {number}", check, _CHECK_FIELDS)
    for number, campaign in enumerate(document["campaigns"], 1):
        _check_campaign(f"{path}: campaign {number}", campaign, top=True)
    if not (document["campaigns"] or document["replays"] or document.get("checks")):
        raise UsageError(f"{path}: holds no campaign, replay or check: nothing to merge")


def _check_campaign(where: str, campaign: dict[str, Any], *, top: bool) -> None:
    _check_fields(where, campaign, _CAMPAIGN_FIELDS, optional=() if top else ("parts",))
    system = get_system(campaign["system"])
    if campaign["profile"] not in system.profiles:
        raise UsageError(f"{where}: {campaign['system']} has no profile {_shown(campaign['profile'])}")
    planned = len(chunks_of(campaign["seed"], campaign["examples_budget"]))
    if campaign["total_chunks"] != planned:
        raise UsageError(f"{where}: total_chunks is {campaign['total_chunks']}, but --examples "
                         f"{campaign['examples_budget']} makes {planned} chunk{'' if planned == 1 else 's'}")
    chunks = campaign["chunks"]
    if len(set(chunks)) != len(chunks) or any(chunk >= planned for chunk in chunks):
        raise UsageError(f"{where}: chunks {_shown(chunks)} are not distinct chunk numbers below {planned}")
    for number, entry in enumerate(campaign["declared"], 1):
        _check_declared(f"{where}: declared entry {number}", entry)
    for number, known in enumerate(campaign["baseline"], 1):  # before a finding is looked up in it
        _check_fields(f"{where}: baseline class {number}", known, _CLASS_FIELDS)
    for number, finding in enumerate(campaign["findings"], 1):
        at = f"{where}: finding {number}"
        _check_fields(at, finding, _FINDING_FIELDS)
        if finding["class"] is not None:
            _check_fields(f"{at}: class", finding["class"], _CLASS_FIELDS)
        for entry_number, entry in enumerate(finding["declared"], 1):
            _check_declared(f"{at}: declared entry {entry_number}", entry)
        if not set(finding["chunks"]) <= set(chunks):
            raise UsageError(f"{at}: found in chunks {_shown(finding['chunks'])}, not all of which the "
                             f"campaign ran ({_shown(chunks)})")
        if bool(finding["declared"]) != _declared(campaign, finding):
            raise UsageError(f"{at}: {finding['label'][:80]} is marked {'' if finding['declared'] else 'un'}declared, "
                             f"but the campaign's declared entries {'do not ' if finding['declared'] else ''}cover "
                             f"every path of its class")
        if finding["known"] != _known(campaign, finding):
            raise UsageError(f"{at}: {finding['label'][:80]} is marked {'' if finding['known'] else 'not '}known, "
                             f"but the campaign's baseline {'does not hold' if finding['known'] else 'holds'} its class")
    if campaign["ok"] != (_holds(campaign) and not _incomplete(campaign)):
        raise UsageError(f'{where}: says "ok": {json.dumps(campaign["ok"])}, but its classes and chunks give '
                         f'{json.dumps(not campaign["ok"])}')
    if not top:
        return
    parts = campaign["parts"]
    for number, part in enumerate(parts, 1):
        at = f"{where}: part {number}"
        _check_campaign(at, part, top=False)
        different = [name for name in _IDENTITY if name != "seed" and part[name] != campaign[name]]
        if different:
            raise UsageError(f"{at}: its {different[0]} differs from its campaign's")
        if len(part["chunks"]) != 1:
            raise UsageError(f"{at}: a part is one chunk, this one lists {_shown(part['chunks'])}")
        if part["seed"] != chunk_seed(campaign["seed"], part["chunks"][0]):
            raise UsageError(f"{at}: seed {part['seed']} is not chunk {part['chunks'][0]}'s of seed {campaign['seed']}")
    if parts:
        listed = [part["chunks"][0] for part in parts]
        if sorted(listed) != sorted(chunks):
            raise UsageError(f"{where}: its parts ran chunks {_shown(sorted(listed))}, it says {_shown(chunks)}")
        by_parts = {_class_of(finding) for part in parts for finding in part["findings"]}
        by_campaign = {_class_of(finding) for finding in campaign["findings"]}
        if by_parts != by_campaign:
            extra = sorted(map(str, by_campaign - by_parts)) or sorted(map(str, by_parts - by_campaign))
            raise UsageError(f"{where}: its findings and its parts' list different classes ({extra[0][:120]})")
        if any(part["cut_short"] for part in parts) and not campaign["cut_short"]:
            raise UsageError(f"{where}: a part was cut short, the campaign says it was not")


def _class_of(finding: dict[str, Any]) -> str:
    found = finding["class"]
    if found is None:
        return f"{finding['kind']}: {finding['summary']}"
    return json.dumps([found["kind"], found["op"], found["requirements"], found["path"], found["cause"]])


def _declared(campaign: dict[str, Any], finding: dict[str, Any]) -> bool:
    """Whether the campaign's declared entries name every path of the finding's class: the
    rule the campaign itself applied (Masks.add), applied again."""
    found = finding["class"]
    if found is None:
        return False
    masks = Masks(campaign["profile"], declared=[declared_from_json(entry) for entry in campaign["declared"]])
    kind, requirements = FindingKind(found["kind"]), tuple(found["requirements"])
    return all(masks.declaring(kind, found["op"], requirements, path) is not None
               for path in found["paths"] or [found["path"]])


def _known(campaign: dict[str, Any], finding: dict[str, Any]) -> bool:
    """Whether the finding's class is one of the campaign's baseline (KNOWN): the campaign's
    own rule (Masks.known), applied again to the classes its report lists."""
    found = finding["class"]
    return found is not None and class_from_json(found) in {class_from_json(known) for known in campaign["baseline"]}


def _holds(campaign: dict[str, Any]) -> bool:
    """No finding fails the gate: each is declared or known from the campaign's baseline."""
    return all(finding["declared"] or _known(campaign, finding) for finding in campaign["findings"])


def _incomplete(campaign: dict[str, Any]) -> bool:
    cut = campaign["cut_short"]
    return cut is not None and not cut.startswith("--budget")


#: What an exit code says, for comparing a report's with what its contents give: `suite`
#: exits 1 over a malformed trace where `replay` exits 2; both say something failed.
_OUTCOME = {EXIT_HOLDS: "holds", EXIT_FAILED: "fails", EXIT_USAGE: "fails", EXIT_INCOMPLETE: "incomplete"}


def _report_exit(document: dict[str, Any]) -> int:
    """The exit a report's contents give, by the rules its command followed."""
    if any(replayed["malformed"] for replayed in document["replays"]):
        return EXIT_USAGE
    if (not all(_holds(campaign) for campaign in document["campaigns"])
            or not all(replayed["confirmed"] for replayed in document["replays"])
            or not all(check["holds"] for check in document.get("checks", []))):
        return EXIT_FAILED
    if any(_incomplete(campaign) for campaign in document["campaigns"]):
        return EXIT_INCOMPLETE
    return EXIT_HOLDS


# -- merging --------------------------------------------------------------------------

@dataclass
class Merged:
    """One campaign put together from its shards, its verdict derived here."""

    first: dict[str, Any]
    result: CampaignResult
    #: Why it is not whole (a chunk cut short or not run), None when every chunk ran whole.
    incomplete: str | None = None


def merge_campaigns(entries: list[tuple[str, dict[str, Any]]],
                    shards: dict[str, tuple[int, int] | None] | None = None) -> list[tuple[dict[str, Any], CampaignResult]]:
    """Group the campaigns of all reports and combine each group's shards (see merge_groups)."""
    return [(group.first, group.result) for group in merge_groups(entries, shards)]


def merge_groups(entries: list[tuple[str, dict[str, Any]]],
                 shards: dict[str, tuple[int, int] | None] | None = None) -> list[Merged]:
    """Group the campaigns of all reports (by system, profile and target) and combine each
    group's shards. Campaigns of one group that are not shards of one campaign, chunks run
    twice, and chunks no report planned to run (a shard missing) are a UsageError. A chunk
    cut short, or planned by a report that was cut short and not run, makes the campaign
    incomplete. `shards` gives each report's --shard (None: it planned every chunk)."""
    shards = shards or {}
    for path, campaign in entries:
        _check_campaign(f"{path}: campaign", campaign, top=True)
    groups: dict[tuple[str, ...], list[tuple[str, dict[str, Any]]]] = {}
    for path, campaign in entries:
        groups.setdefault((campaign["system"], campaign["profile"], campaign["target"]), []).append((path, campaign))
    merged = []
    for (system, profile, _), members in groups.items():
        first_path, first = members[0]
        for path, campaign in members[1:]:
            for name in _IDENTITY:
                if campaign[name] != first[name]:
                    raise UsageError(f"{first_path} and {path} are not shards of one campaign of {system} "
                                     f"[{profile}]: their {name} differ ({_shown(first[name])} and "
                                     f"{_shown(campaign[name])})")
        name = f"{system} [{profile}] seed {first['seed']}"
        seen: dict[int, str] = {}
        chunks: list[tuple[str, dict[str, Any]]] = []
        for path, campaign in members:
            for part in campaign["parts"] or [campaign]:
                chunks.append((path, part))
            for chunk in campaign["chunks"]:
                if chunk in seen:
                    raise UsageError(f"{seen[chunk]} and {path} both ran chunk {chunk} of {name}: shards overlap")
                seen[chunk] = path
        total = first["total_chunks"]
        try:
            parts = [campaign_from_json(campaign) for _, campaign in chunks]
        except (KeyError, TypeError, ValueError) as error:
            raise UsageError(f"{first_path}: malformed campaign ({type(error).__name__}: {error})") from None
        single = all(len(p.chunks) == 1 for p in parts)
        last = cutoff(parts, list(range(total)), first["max_classes"]) if single else None
        needed = range(total if last is None else last + 1)
        not_run, cut = [], []
        for chunk in sorted(set(needed) - set(seen)):
            planners = [(path, campaign) for path, campaign in members if _plans(shards.get(path), chunk)]
            stopped = [(path, campaign) for path, campaign in planners if campaign["cut_short"]]
            if not stopped:
                missing = sorted(set(needed) - set(seen))
                listed = ", ".join(map(str, missing[:10])) + (f" and {len(missing) - 10:,} more" if len(missing) > 10 else "")
                raise UsageError(f"{name}: chunks {listed} of {total} are in no report (a shard is missing)")
            not_run.append((chunk, stopped[0]))
        if last is not None:
            keep = [index for index, part in enumerate(parts) if part.chunks[0] <= last]
            parts, chunks = [parts[i] for i in keep], [chunks[i] for i in keep]
        for (path, part), result in zip(chunks, parts):
            if part["cut_short"]:
                cut.append((result.chunks[0], path, part["cut_short"]))
        result = combine(parts, profile=profile, system=system, seed=first["seed"],
                         declared=[declared_from_json(entry) for entry in first["declared"]])
        result.total_chunks = total
        result.examples_asked = first["examples_budget"]
        result.request_tags = dict(first["request_tags"])
        incomplete = _why_incomplete(cut, not_run)
        result.cut_short = incomplete
        merged.append(Merged(first, result, incomplete))
    return merged


def _plans(shard: tuple[int, int] | None, chunk: int) -> bool:
    return shard is None or chunk % shard[1] == shard[0] - 1


def _why_incomplete(cut: list[tuple[int, str, str]], not_run: list[tuple[int, tuple[str, dict[str, Any]]]]) -> str | None:
    """What the merged campaign lacks and what stopped its shards, said so that it never
    starts with "--budget": a merged campaign with a chunk not run is INCOMPLETE whatever
    stopped it."""
    if not cut and not not_run:
        return None
    stops = sorted({f"{reason} in {path}" for _, path, reason in cut}
                   | {f"{campaign['cut_short']} in {path}" for _, (path, campaign) in not_run})
    lacks = []
    if cut:
        numbers = sorted(chunk for chunk, _, _ in cut)
        lacks.append(f"chunk{'s' if len(numbers) > 1 else ''} {', '.join(map(str, numbers[:5]))}"
                     f"{'...' if len(numbers) > 5 else ''} cut short")
    if not_run:
        lacks.append(f"{len(not_run):,} chunk{'s' if len(not_run) > 1 else ''} not run")
    return f"its shards' stops ({'; '.join(stops[:3])}{'; ...' if len(stops) > 3 else ''}: {', '.join(lacks)})"


def main(args: argparse.Namespace) -> int:
    entries: list[tuple[str, dict[str, Any]]] = []
    replays: list[dict[str, Any]] = []
    commands = set()
    checks: list[dict[str, Any]] = []
    totals: set[Any] = set()
    shards: dict[str, tuple[int, int] | None] = {}
    said_incomplete = False
    for path in args.reports:
        document = load_report(path)
        check_report(path, document)
        derived = _report_exit(document)
        if _OUTCOME[derived] != _OUTCOME[document["exit"]]:
            if document["exit"] == EXIT_INCOMPLETE and derived == EXIT_HOLDS:
                said_incomplete = True  # cut short between campaigns: it lists only those it ran
            else:
                raise UsageError(f"{path}: says exit {document['exit']}, but its contents give exit {derived}: "
                                 f"an edited report, or one that does not hold all its command did")
        if path in shards:
            raise UsageError(f"{path} is given twice")
        shards[path] = tuple(document["shard"]) if document.get("shard") else None  # type: ignore[assignment]
        commands.add(document["command"])
        checks += document.get("checks", [])
        if document["command"] == "replay" and document.get("shard"):
            totals.add(document.get("traces_total"))
        entries += [(path, campaign) for campaign in document["campaigns"]]
        replays += document["replays"]
    campaigns = merge_groups(entries, shards)
    cases: list[junit.Case] = []
    failed = False
    incomplete = said_incomplete
    for group in campaigns:
        first, result = group.first, group.result
        print(verdict_line(result, first["target"]), flush=True)
        details = []
        for finding in result.findings:
            text = finding.details or f"{finding.label}\n{finding.summary}"
            chunks = finding.chunks
            text += f"\nfound in chunk{'s' if len(chunks) > 1 else ''} {', '.join(map(str, chunks))}"
            if finding.from_database:
                text += " (by replay from the example database)"
            details.append(text)
            print(text, flush=True)
        if result.findings:
            print("\n".join(summary_table(result, [f.trace for f in result.findings])), flush=True)
        if result.database_stats is not None:
            print(result.database_stats.line(), flush=True)
        failed = failed or not result.ok
        incomplete = incomplete or group.incomplete is not None
        cases.append(junit.Case(result, first["target"], "\n\n".join(details), tuple(details)))
    seen_paths: dict[str, dict[str, Any]] = {}
    for replayed in replays:
        if replayed["path"] in seen_paths:
            raise UsageError(f"trace {replayed['path']} is in two reports: shards overlap")
        seen_paths[replayed["path"]] = replayed
    if totals and (len(totals) > 1 or len(replays) != next(iter(totals))):
        raise UsageError(f"the replay shards hold {len(replays)} traces of {', '.join(map(str, sorted(totals)))}: "
                         f"a shard is missing, or they replayed different corpora")
    malformed = any(r["malformed"] for r in replays)
    for replayed in replays:
        if not replayed["confirmed"]:
            print(replayed["report"] or f"{replayed['path']}: not confirmed", flush=True)
            failed = True
    for check in checks:
        if not check["holds"]:
            print(f"FAIL {check['part']} {check['what']}", flush=True)
            failed = True
    if replays:
        confirmed = sum(1 for r in replays if r["confirmed"])
        print(f"traces: {confirmed} of {len(replays)} confirmed", flush=True)
    code = (EXIT_USAGE if malformed else EXIT_FAILED if failed else EXIT_INCOMPLETE if incomplete
            else EXIT_HOLDS)
    verdict = {EXIT_HOLDS: "HOLDS", EXIT_FAILED: "FAILS", EXIT_USAGE: "MALFORMED",
               EXIT_INCOMPLETE: "INCOMPLETE (a shard was cut short: nothing shown to hold)"}[code]
    if said_incomplete and code == EXIT_INCOMPLETE and not any(group.incomplete for group in campaigns):
        verdict = "INCOMPLETE (a report says it was cut short before all its campaigns ran)"
    print(f"merged {len(args.reports)} report{'s' if len(args.reports) > 1 else ''}: {verdict}", flush=True)
    if args.junit:
        print(f"junit: {junit.write(args.junit, 'duespec merge', cases)}")
    if args.json:
        command = commands.pop() if len(commands) == 1 else "merge"
        out = [campaign_to_json(group.result, target=group.first["target"], examples=group.first["examples_budget"],
                                steps=group.first["steps_per_run"], depth=group.first["depth"],
                                max_classes=group.first["max_classes"])
               for group in campaigns]
        print(f"json: {write_report(args.json, command, code, out, replays)}")
    return code


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "merge", help="combine the --json reports of a campaign's shards into one verdict",
        description="Combine the --json reports of the shards of one or more campaigns (run with "
                    "--shard I/N) into one verdict, one class table and one JUnit file. Exit 0: "
                    "everything holds; 1: a class is not declared or a trace diverges; 2: a "
                    "report is malformed or contradicts itself, or shards overlap or are missing; "
                    "3: a shard was cut short (a chunk not run), so nothing is shown to hold.")
    parser.add_argument("reports", nargs="+", metavar="REPORT.json")
    parser.add_argument("--junit", metavar="FILE", help="write JUnit XML here")
    parser.add_argument("--json", metavar="FILE", help="write the merged report here")
    parser.set_defaults(run=main)

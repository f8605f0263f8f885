"""`duespec merge` derives every verdict (issue 41, items 2 and 3): from each campaign's
classes, its chunks and whether it was cut short; never from what a report says of itself.
Shards cut short merge to INCOMPLETE (exit 3); anything forged or inconsistent is refused
with exit 2 in one line."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from duespec.cli import main as cli

ROOT = Path(__file__).resolve().parent.parent


def duespec(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "duespec", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


def _shard_cut_by_sigterm(tmp_path: Path, shard: int) -> tuple[int, str]:
    """A shard of a campaign far too long to finish, stopped by SIGTERM once under way."""
    out = tmp_path / f"s{shard}.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "duespec", "check", "duebook", "--examples", "1000000", "--steps", "5",
         "--shard", f"{shard}/2", "--json", str(out), "--database", "none", "--no-coverage", "--progress", "1"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert process.stderr is not None
    try:
        line = process.stderr.readline()  # a progress line: the campaign is under way
        assert "running" in line or " done (" in line, line
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, stdout + stderr


def test_shards_cut_short_by_sigterm_merge_to_incomplete_never_holds(tmp_path: Path) -> None:
    """Item 2: two shards each stopped by SIGTERM (each exit 3) merged to HOLDS, exit 0: their
    JSON said `ok: true`, `stopped: null`, and listed the cut chunk as run."""
    chunks_cut = 0
    for shard in (1, 2):
        code, output = _shard_cut_by_sigterm(tmp_path, shard)
        assert code == 3, output
        campaign = json.loads((tmp_path / f"s{shard}.json").read_text())["campaigns"][0]
        assert campaign["ok"] is False and campaign["cut_short"] == "SIGTERM", campaign
        # The chunk it was in says so; a signal that lands between two chunks cut none.
        assert all(part["cut_short"] is None for part in campaign["parts"][:-1]), campaign["parts"]
        assert campaign["parts"][-1]["cut_short"] in ("SIGTERM", None)
        chunks_cut += campaign["parts"][-1]["cut_short"] is not None
        assert sum(part["runs"] for part in campaign["parts"]) == campaign["runs"]
    run = duespec("merge", "s1.json", "s2.json", "--json", "all.json", "--junit", "all.xml", cwd=tmp_path)
    assert run.returncode == 3, run.stdout + run.stderr
    assert run.stdout.startswith("INCOMPLETE: duebook") and "HOLDS" not in run.stdout, run.stdout
    first = run.stdout.splitlines()[0]
    # The chunks after the signals are not run; a chunk a signal landed in is cut short.
    assert "not run" in first and ("cut short" in first) == bool(chunks_cut), first
    assert "merged 2 reports: INCOMPLETE" in run.stdout
    merged = json.loads((tmp_path / "all.json").read_text())
    assert merged["exit"] == 3 and merged["campaigns"][0]["ok"] is False
    assert 'type="incomplete"' in (tmp_path / "all.xml").read_text()
    again = duespec("merge", "all.json", cwd=tmp_path)  # a merged report merges to the same verdict
    assert again.returncode == 3, again.stdout + again.stderr


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The two reports of a small campaign that holds, run as two shards."""
    folder = tmp_path_factory.mktemp("shards")
    documents = []
    for shard in (1, 2):
        path = folder / f"s{shard}.json"
        assert cli(["check", "duebook", "--examples", "100", "--steps", "5", "--shard", f"{shard}/2", "--json",
                    str(path), "--database", "none", "--no-coverage", "--progress", "0",
                    "--trace-dir", str(folder)]) == 0
        documents.append(json.loads(path.read_text()))
    return documents


def merged(tmp_path: Path, documents: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    names = []
    for number, document in enumerate(documents, 1):
        path = tmp_path / f"r{number}.json"
        path.write_text(json.dumps(document))
        names.append(str(path))
    capsys.readouterr()
    code = cli(["merge", *names])
    out, err = capsys.readouterr()
    return code, out, err


def _finding(op: str = "claim") -> dict[str, Any]:
    return {"kind": "response", "class": {"kind": "response", "op": op, "requirements": ["DB-01"],
                                          "path": "$.error", "paths": ["$.error"], "cause": ["D-09.found"]},
            "label": f"response {op} $.error", "summary": "differs", "failure": "differs", "counterexample": [],
            "config": {}, "declared": [], "evidence": None, "chunks": [0], "position": 0,
            "from_database": False, "trace": None, "details": None, "known": False}


def _campaign(document: dict[str, Any]) -> dict[str, Any]:
    return document["campaigns"][0]


FORGERIES: dict[str, tuple[Callable[[dict[str, Any]], Any], str]] = {
    "exit 1 and no campaigns": (lambda d: d.update(exit=1, campaigns=[]), "holds no campaign"),
    "exit 1 over campaigns that hold": (lambda d: d.update(exit=1), "says exit 1, but its contents give exit 0"),
    "a finding its parts do not list": (
        lambda d: _campaign(d).update(findings=[_finding()], ok=False), "its parts' list different classes"),
    "a class said known that the baseline does not hold": (
        lambda d: _campaign(d).update(findings=[{**_finding(), "known": True}]), "is marked known"),
    "a class said declared that no entry covers": (
        lambda d: _campaign(d).update(findings=[{**_finding(), "declared": [
            {"reason": "x", "where": "response", "path": "$.other", "op": None, "requirement": None,
             "profile": None}]}]), "is marked declared"),
    "holds as a string": (lambda d: d.update(checks=[{"part": "prove", "what": "x", "holds": "false"}]),
                          '"holds" must be true or false'),
    "ok as a string": (lambda d: _campaign(d).update(ok="true"), '"ok" must be true or false'),
    "ok true over a cut-short campaign": (lambda d: _campaign(d).update(cut_short="SIGTERM"),
                                          'says "ok": true'),
    "a campaign that is a list": (lambda d: d.update(campaigns=[[1]]), "must be a list of objects"),
    "a negative chunk": (lambda d: _campaign(d).update(chunks=[-1]), "chunk numbers"),
    "a chunk twice": (lambda d: _campaign(d).update(chunks=[0, 0]), "not distinct chunk numbers"),
    "a chunk past the plan": (lambda d: _campaign(d).update(chunks=[7]), "not distinct chunk numbers below 2"),
    "a forged chunk plan": (lambda d: _campaign(d).update(total_chunks=1), "makes 2 chunks"),
    "parts that ran other chunks": (lambda d: _campaign(d)["parts"][0].update(chunks=[1]), "is not chunk 1's"),
    "an exit that is no exit": (lambda d: d.update(exit="0"), '"exit" must be 0, 1, 2 or 3'),
    "a count that is negative": (lambda d: _campaign(d).update(runs=-5), '"runs" must be a whole number'),
    "a report without the cut_short field": (lambda d: _campaign(d).pop("cut_short"), 'no "cut_short"'),
    "a finding beside a baseline class without its requirements (an internal error: KeyError)": (
        lambda d: _campaign(d).update(findings=[_finding()], baseline=[
            {"kind": "response", "op": "cancel", "path": "$.error", "paths": ["$.error"], "cause": []}]),
        'baseline class 1: no "requirements"'),
    "a declared entry with a field no entry has, beside a finding (an internal error: TypeError)": (
        lambda d: _campaign(d).update(findings=[_finding()], declared=[
            {"reason": "x", "where": "response", "path": "$.x", "op": None, "requirement": None, "profile": None,
             "1e999unordered": False}]),
        '"1e999unordered" is no field of a declared entry'),
    "a declared entry whose unordered is a string": (
        lambda d: _campaign(d).update(declared=[{"reason": "x", "where": "response", "path": "$.x", "op": None,
                                                 "requirement": None, "profile": None, "unordered": "yes"}]),
        '"unordered" must be true or false'),
    "a budget past the limit (its plan of chunks never ended)": (
        lambda d: _campaign(d).update(examples_budget=2**70), "a positive integer of at most 10,000,000"),
}


@pytest.mark.parametrize("name", FORGERIES)
def test_a_forged_or_inconsistent_report_is_refused_in_one_line(
        name: str, shards: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Item 3: each of these merged to HOLDS (exit 0), or ended in an internal error."""
    forge, words = FORGERIES[name]
    documents = copy.deepcopy(shards)
    forge(documents[0])
    code, out, err = merged(tmp_path, documents, capsys)
    assert code == 2, (name, code, out, err)
    assert words in err and "internal error" not in err and len(err.strip().splitlines()) == 1, (name, err)
    assert "HOLDS" not in out


def test_shards_of_different_campaigns_are_refused(shards: list[dict[str, Any]], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    documents = copy.deepcopy(shards)
    documents[1]["campaigns"][0]["scope"] = "ops left out: claim"
    for part in documents[1]["campaigns"][0]["parts"]:
        part["scope"] = "ops left out: claim"
    code, _, err = merged(tmp_path, documents, capsys)
    assert code == 2 and "are not shards of one campaign" in err and "their scope differ" in err, err


def test_untouched_shards_still_merge_to_holds(shards: list[dict[str, Any]], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = merged(tmp_path, shards, capsys)
    assert code == 0 and out.startswith("HOLDS: duebook") and "merged 2 reports: HOLDS" in out, out + err
    code, _, err = merged(tmp_path, shards[:1], capsys)
    assert code == 2 and "a shard is missing" in err


def test_a_report_cut_short_between_its_campaigns_merges_to_incomplete(
        shards: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A command stopped before its later campaigns lists only those it ran, with exit 3:
    that says less than its contents, and the merge may not say more."""
    documents = copy.deepcopy(shards)
    documents[0]["exit"] = 3
    code, out, _ = merged(tmp_path, documents, capsys)
    assert code == 3 and "merged 2 reports: INCOMPLETE" in out and "HOLDS" not in out.splitlines()[-1]


def test_a_suite_with_a_malformed_trace_does_not_merge_to_holds(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The suite's report left a malformed trace out, so merge of it said HOLDS over a
    suite that had failed (exit 1)."""
    corpus = tmp_path / "traces"
    corpus.mkdir()
    (corpus / "broken.jsonl").write_text('{"duespec_trace": 1, "system": "duebook"\n')
    report = tmp_path / "suite.json"
    assert cli(["suite", "--examples", "2", "--traces", str(corpus), "--json", str(report),
                "--database", "none"]) == 1
    document = json.loads(report.read_text())
    assert [replayed["malformed"] is not None for replayed in document["replays"]] == [True]
    capsys.readouterr()
    assert cli(["merge", str(report)]) == 2
    assert capsys.readouterr().out.splitlines()[-1] == "merged 1 report: MALFORMED"


def test_a_budget_spent_before_any_campaign_started_is_incomplete_not_holds(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing was checked: exit 3 (it was 0, HOLDS of nothing), and the report says so."""
    path = tmp_path / "nothing.json"
    assert cli(["check", "duebook", "--budget", "0.000001", "--json", str(path), "--database", "none",
                "--no-coverage", "--progress", "0", "--trace-dir", str(tmp_path)]) == 3
    assert "not run (cut short by --budget" in capsys.readouterr().out
    report = json.loads(path.read_text())
    assert report["exit"] == 3 and report["campaigns"] == []


def test_a_shard_stopped_by_its_budget_merges_to_incomplete(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A shard's --budget lets it say HOLDS of what it ran (exit 0); the merged campaign,
    whose chunk the budget cut short, may not."""
    names = []
    for shard, budget in ((1, ["--budget", "0.001"]), (2, [])):
        path = tmp_path / f"b{shard}.json"
        # 3 when the budget was spent before the campaign started (a loaded machine)
        assert cli(["check", "duebook", "--examples", "100", "--steps", "3", "--shard", f"{shard}/2", "--json",
                    str(path), "--database", "none", "--no-coverage", "--progress", "0", "--trace-dir",
                    str(tmp_path), *budget]) in ((0, 3) if budget else (0,))
        names.append(str(path))
    campaigns = json.loads(Path(names[0]).read_text())["campaigns"]
    capsys.readouterr()
    if not campaigns:
        # On a loaded machine the budget can be spent before the campaign starts: the
        # report then holds nothing, and merge refuses it rather than say HOLDS.
        assert cli(["merge", *names]) == 2
        assert "holds no campaign, replay or check: nothing to merge" in capsys.readouterr().err
        return
    assert campaigns[0]["cut_short"].startswith("--budget")
    assert cli(["merge", *names]) == 3
    out = capsys.readouterr().out
    assert out.startswith("INCOMPLETE: duebook") and "merged 2 reports: INCOMPLETE" in out, out

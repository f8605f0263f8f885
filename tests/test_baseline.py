"""Classes by cause, known differences as a baseline, and only valid inputs (issue 40).

A server with a known gap in validation (it answers a malformed `get` not_found) must not
hide a new bug at the same op and path (a `get` that loses a deferral): the two are
classes of their own, told apart by the model's branch in the step. A baseline of the
known gap masks it from the first step, and the campaign fails only on the new one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from duespec.campaigns.classes import Masks
from duespec.campaigns.run import run_campaign
from duespec.cli import main
from duespec.judge import Difference, FindingKind, Masked, compared_verdict
from duespec.systems import get_system

DUEBOOK = get_system("duebook")


#: Whether Server has the new bug too (a test sets it: the same target, a new build).
NEW_BUG = {"loses even ids": False}


class Server:
    """duespec's own duebook, except that a malformed `get` is answered not_found (a
    known gap in validation, as resonate-pg's F-2); with NEW_BUG, also a `get` of an even
    id (a new bug at the same op and path)."""

    #: Malformed gets answered not_found, in this process.
    answered = 0

    def __init__(self) -> None:
        self.inner = DUEBOOK.impl()

    def reset(self, config: dict[str, Any]) -> None:
        self.inner.reset(config)

    def observe(self) -> dict[str, Any]:
        return self.inner.observe()

    def step(self, op: str, args: Any, now: Any) -> dict[str, Any]:
        answer = self.inner.step(op, args, now)
        if op == "get" and answer.get("error") == "invalid" and GAP["answer"] != "fixed":
            Server.answered += 1
            return {"error": "not_found", **({"n": Server.answered} if GAP["answer"] == "counted" else {})}
        if (NEW_BUG["loses even ids"] and op == "get" and isinstance(answer.get("ok"), dict)
                and answer["ok"]["id"] % 2 == 0):
            return {"error": "not_found"}
        return answer


@pytest.fixture
def new_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(NEW_BUG, "loses even ids", True)


def test_a_found_class_masks_only_its_own_cause() -> None:
    masks = Masks("seed")
    step = {"i": 0, "op": "get", "args": {"id": "x"}, "now": 0, "result": {"error": "invalid"}}
    refused = compared_verdict(FindingKind.RESPONSE, step, {"error": "invalid"}, {"error": "not_found"},
                               ("D-19.get_invalid", "refused"), masks)
    assert isinstance(refused, Difference) and refused.divergence_class.refused
    masks.add(refused.divergence_class)
    again = compared_verdict(FindingKind.RESPONSE, step, {"error": "invalid"}, {"error": "not_found"},
                             ("D-19.get_invalid", "refused"), masks)
    assert isinstance(again, Masked)
    lost = compared_verdict(FindingKind.RESPONSE, {**step, "args": {"id": 2}}, {"error": "expired"},
                            {"error": "not_found"}, ("D-14.found",), masks)
    assert isinstance(lost, Difference), "another branch of the model at the same op and path is another class"
    assert lost.divergence_class.group == refused.divergence_class.group == "response get $.error"
    assert not lost.divergence_class.refused
    assert lost.divergence_class.label() == "response get $.error [D-14] via D-14.found"


@pytest.mark.long
def test_a_campaign_reports_a_new_bug_at_the_op_and_path_of_a_known_gap(new_bug: None) -> None:
    result = run_campaign(DUEBOOK, Server, examples=EXAMPLES, max_classes=10, depth=0)
    at_get = [f.divergence_class for f in result.findings
              if f.divergence_class is not None and f.divergence_class.group == "response get $.error"]
    assert any(found.refused for found in at_get), at_get
    assert any(not found.refused and "D-14.found" in found.cause for found in at_get), \
        f"the lost deferral hid behind the malformed get's class: {[f.label() for f in at_get]}"


#: Runs per campaign: enough to meet both bugs, without deep runs (--depth 0).
EXAMPLES = 20


def conform(tmp_path: Path, *extra: str) -> int:
    return main(["conform", "duebook", "--target", f"{__name__}:Server", "--examples", str(EXAMPLES), "--depth", "0",
                 "--progress", "0", "--no-coverage", "--database", "none",
                 "--trace-dir", str(tmp_path / "traces"), *extra])


@pytest.fixture
def known_gap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """The report of a campaign against the server with the known gap alone: every class
    the gap gives (a malformed `get` reaches more than one branch of the model), not only
    the first, which is where a campaign stops by default."""
    report = tmp_path / "baseline.json"
    assert conform(tmp_path, "--json", str(report), "--max-classes", "10") == 1
    capsys.readouterr()
    return report


@pytest.mark.long
def test_a_baseline_masks_its_classes_and_gates_only_on_new_ones(
        tmp_path: Path, known_gap: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert conform(tmp_path, "--baseline", str(known_gap)) == 0
    out = capsys.readouterr().out
    assert out.startswith("HOLDS: duebook [seed]") and "0 NEW;" in out, out
    # the known gap's requests are refused ones: known, they are not sent again at all
    assert "3 known from the baseline" in out and "requests the spec refuses, not sent" in out, out
    monkeypatch.setitem(NEW_BUG, "loses even ids", True)
    refreshed = tmp_path / "refreshed.json"
    assert conform(tmp_path, "--baseline", str(known_gap), "--json", str(refreshed), "--max-classes", "10") == 1
    out = capsys.readouterr().out
    table = out[out.index("divergence classes:"):]
    new = [line for line in table.splitlines() if " NEW " in line]
    assert any("response get $.error" in line and "D-14.found; valid input" in line for line in new), table
    assert not any("refused input" in line for line in new), table
    # the report made with the baseline carries it and every new class: it is the refreshed baseline
    assert conform(tmp_path, "--baseline", str(refreshed)) == 0, capsys.readouterr().out


def _one_line_usage_error(capsys: pytest.CaptureFixture[str], code: int, words: str) -> None:
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and words in err[-1], err


def test_a_malformed_baseline_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    _one_line_usage_error(capsys, conform(tmp_path, "--baseline", str(bad)), "not JSON")
    bad.write_text(json.dumps({"duespec_report": 1, "campaigns": [
        {"system": "duebook", "profile": "seed", "target": f"{__name__}:Server",
         "findings": [{"class": {"kind": "answer", "op": "get", "path": "$"}}]}]}))
    _one_line_usage_error(capsys, conform(tmp_path, "--baseline", str(bad)),
                          "unknown kind 'answer'")
    _one_line_usage_error(capsys, conform(tmp_path, "--baseline", str(tmp_path / "none")),
                          "cannot read")


@pytest.mark.long
def test_a_baseline_of_another_system_target_or_profile_is_a_usage_error(
        tmp_path: Path, known_gap: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = main(["conform", "duebook", "--target", "duespec.systems.duebook:ImplTarget", "--baseline", str(known_gap)])
    _one_line_usage_error(capsys, other, f"made against target {__name__}:Server, not duespec.systems.duebook:ImplTarget")
    _one_line_usage_error(capsys, main(["conform", "schedules", "--target", "duespec.systems.schedules:ImplTarget",
                                        "--baseline", str(known_gap)]), "a report of duebook, not of schedules")
    report = json.loads(known_gap.read_text())
    for campaign in report["campaigns"]:
        campaign["profile"] = "elsewhere"
    of_another_profile = tmp_path / "elsewhere.json"
    of_another_profile.write_text(json.dumps(report))
    _one_line_usage_error(capsys, conform(tmp_path, "--baseline", str(of_another_profile)),
                          "has no campaign of profile seed (it has elsewhere)")


def test_an_unknown_inputs_value_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        conform(tmp_path, "--inputs", "most")
    _one_line_usage_error(capsys, exit.value.code, "argument --inputs: invalid choice: 'most'")


def test_only_valid_inputs_leave_a_gap_in_validation_unsent(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert conform(tmp_path, "--inputs", "valid") == 0
    out = capsys.readouterr().out
    assert out.startswith("HOLDS: duebook [seed]"), out
    assert "not sent (--inputs valid, or of a class already found or known)" in out, out
    monkeypatch.setitem(NEW_BUG, "loses even ids", True)
    assert conform(tmp_path, "--inputs", "valid") == 1
    out = capsys.readouterr().out
    assert "response get $.error" in out and "refused input" not in out[out.index("divergence classes:"):], out


def test_a_known_class_never_ends_a_chunked_campaign_early() -> None:
    """A campaign in chunks stops after the chunk that found --max-classes classes: only
    classes that fail it may count. A known class (found anyway: a target error, or in a
    chunk run before its class was masked) once counted, and resonate-pg's response-only
    campaign said HOLDS having run one chunk of two."""
    from types import SimpleNamespace

    from duespec.campaigns.parallel import cutoff
    from duespec.campaigns.run import Finding

    def part(index: int, *findings: Finding) -> Any:
        return SimpleNamespace(chunks=[index], findings=list(findings))

    known = Finding(FindingKind.NOT_REPRODUCIBLE, None, "not reproducible", "not reproducible", [], known=True)
    declared = Finding(FindingKind.RESPONSE, None, "declared", "declared", [], declared=["an entry"])
    new = Finding(FindingKind.RESPONSE, None, "new", "new", [])
    assert cutoff([part(0, known, declared), part(1)], [0, 1], max_classes=1) is None
    assert cutoff([part(0, known), part(1, new)], [0, 1], max_classes=1) == 1
    assert cutoff([part(0, new), part(1)], [0, 1], max_classes=1) == 0


#: How Server answers its known gap instead (a test sets it): "fixed" answers as the spec
#: does, "counted" adds a count that differs from run to run.
GAP = {"answer": "not_found"}


@pytest.fixture
def one_known_gap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """The report of a campaign that stops at its first class, the known gap, with its witness."""
    report = tmp_path / "one.json"
    assert conform(tmp_path, "--json", str(report), "--max-classes", "1", "--steps", "5") == 1
    capsys.readouterr()
    return report


def test_a_known_class_is_replayed_by_its_witness_and_a_fixed_one_fails_as_changed(
        tmp_path: Path, one_known_gap: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    witness = json.loads(one_known_gap.read_text())["campaigns"][0]["findings"][0]["witness"]
    assert witness["steps"][-1]["result"] == {"error": "not_found"}, witness  # the target's answer, not the model's
    refreshed = tmp_path / "refreshed.json"
    assert conform(tmp_path, "--baseline", str(one_known_gap), "--inputs", "valid", "--json", str(refreshed)) == 0
    out = capsys.readouterr().out
    assert "1 with a witness, 1 of them replayed as recorded" in out, out
    assert json.loads(refreshed.read_text())["campaigns"][0]["baseline"][0]["witness"] == witness
    monkeypatch.setitem(GAP, "answer", "fixed")
    changed = tmp_path / "changed.json"
    assert conform(tmp_path, "--baseline", str(refreshed), "--inputs", "valid", "--json", str(changed)) == 1
    out = capsys.readouterr().out
    assert main(["merge", str(changed)]) == 1, capsys.readouterr().out  # the verdict survives the report
    assert out.startswith("DIVERGES: duebook [seed]") and "0 NEW; 1 known from the baseline, 1 of them CHANGED" in out
    assert "(CHANGED: in the baseline, answered otherwise now)" in out, out
    assert 'recorded answer: {"error": "not_found"}' in out and 'answer now:      {"error": "invalid"' in out, out
    assert "known difference changed" in capsys.readouterr().out


def test_an_answer_that_differs_from_run_to_run_witnesses_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(GAP, "answer", "counted")
    report = tmp_path / "counted.json"
    assert conform(tmp_path, "--json", str(report), "--max-classes", "1", "--steps", "5") == 1
    assert json.loads(report.read_text())["campaigns"][0]["findings"][0]["witness"] is None
    assert conform(tmp_path, "--baseline", str(report), "--inputs", "valid") == 0
    out = capsys.readouterr().out
    assert "1 known from the baseline" in out and "with a witness" not in out, out


def test_a_malformed_witness_is_a_usage_error(
        tmp_path: Path, one_known_gap: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = json.loads(one_known_gap.read_text())
    report["campaigns"][0]["findings"][0]["witness"]["steps"][0].pop("result")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(report))
    _one_line_usage_error(capsys, conform(tmp_path, "--baseline", str(bad)),
                          "class 1: its witness: step 0 records no result (the target's answer)")


def test_baselines_given_twice_take_each_class_once_with_the_witness_one_of_them_has(
        tmp_path: Path, one_known_gap: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = json.loads(one_known_gap.read_text())
    del report["campaigns"][0]["findings"][0]["witness"]  # as a report of a duespec before witnesses
    older = tmp_path / "older.json"
    older.write_text(json.dumps(report))
    assert conform(tmp_path, "--baseline", str(older), "--inputs", "valid") == 0
    assert "with a witness" not in capsys.readouterr().out
    assert conform(tmp_path, "--baseline", str(older), "--baseline", str(one_known_gap), "--inputs", "valid") == 0
    out = capsys.readouterr().out
    assert "0 NEW; 1 known from the baseline" in out and "1 with a witness, 1 of them replayed" in out, out

"""One conform campaign reports every divergence class, declared differences included;
a target's exceptions and its state surviving reset are the target's failures."""

from __future__ import annotations

import re
import shlex
import shutil
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from duespec.judge import covers, differing_paths
from duespec.campaigns.run import CampaignResult, write_failure_trace
from duespec.campaigns.scope import ScopeError, scope_of
from duespec.cli import main
from duespec.systems import get_system
from duespec.traces.format import read_trace

ROOT = Path(__file__).resolve().parents[1]
PLANTED = "tests.planted_targets"
BUDGET = ["--examples", "40", "--steps", "20", "--progress", "0", "--no-coverage"]
CANCEL = '''
[[difference]]
reason = "a stranger is told not_found, so that cancel does not reveal which ids exist"
op = "cancel"
response = "$.error"
'''
EXPIRE = '''
[[difference]]
reason = "our API calls it too_early"
op = "expire"
requirement = "D-13"
response = "$.error"
'''
CLAIM = '''
[[difference]]
reason = "an early claim answers not_found in our API"
op = "claim"
response = "$.error"
'''
#: One row of the summary table: number, class, cause, requirement IDs, steps, status, trace.
ROW = re.compile(r"^  (\d)  response (\w+) \$\.error\s+\S+; valid input\s+(D-\d\d)\s+(\d+)\s+(declared|NOT DECLARED)\s+(\S+)$",
                 re.MULTILINE)


def conform(tmp_path: Path, target: str, *extra: str) -> int:
    return main(["conform", "duebook", "--target", target, *BUDGET,
                 "--trace-dir", str(tmp_path / "failures"), *extra])


def declared_file(tmp_path: Path, *entries: str) -> str:
    path = tmp_path / "declared.toml"
    path.write_text("".join(entries))
    return str(path)


def test_one_campaign_reports_all_three_classes_and_fails_only_for_the_undeclared(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junit = tmp_path / "junit.xml"
    code = conform(tmp_path, f"{PLANTED}:ThreePlantedBugs", "--junit", str(junit), "--max-classes", "3",
                   "--declared", declared_file(tmp_path, CANCEL, EXPIRE))
    out = capsys.readouterr().out
    assert code == 1, out
    assert out.startswith("DIVERGES: duebook [seed]") and "3 divergence classes, 2 declared" in out
    rows = {op: (requirement, int(steps), status, Path(trace))
            for _, op, requirement, steps, status, trace in ROW.findall(out)}
    assert set(rows) == {"claim", "cancel", "expire"}, out
    assert {op: row[0] for op, row in rows.items()} == {"claim": "D-09", "cancel": "D-12", "expire": "D-13"}
    assert {op: row[2] for op, row in rows.items()} == {
        "claim": "NOT DECLARED", "cancel": "declared", "expire": "declared"}
    for op, (requirement, steps, status, trace) in rows.items():
        # The undeclared class is shrunk; a declared one is kept as first seen.
        assert 1 <= steps <= 5 if status == "NOT DECLARED" else steps >= 1, out
        header, recorded = read_trace(trace)
        recorded = list(recorded)
        assert len(recorded) == steps and recorded[-1]["op"] == op
        assert header.extra["divergence_class"]["requirements"] == [requirement]
    assert len({row[3] for row in rows.values()}) == 3  # a trace per class
    # Every divergence line names the step's requirements and both messages.
    assert "requirements of the step: D-12" in out
    assert 'target message: "no deferral of yours has this id"' in out
    assert "DECLARED: a stranger is told not_found" in out
    assert "a difference not compared (declared: response cancel $.error" in out
    cases = ElementTree.parse(junit).getroot().findall("./testsuite/testcase")
    assert len(cases) == 3
    failed = [case.get("name") for case in cases if case.find("failure") is not None]
    assert len(failed) == 1 and "class response claim $.error [D-09]" in failed[0]
    # The printed replay command reproduces the undeclared class; the correct model passes it.
    claim_trace = str(rows["claim"][3])
    assert main(["replay", claim_trace, "--target", f"{PLANTED}:ThreePlantedBugs"]) == 1
    assert main(["replay", claim_trace, "--target", "model"]) == 0


def test_a_campaign_whose_classes_are_all_declared_holds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = conform(tmp_path, f"{PLANTED}:ThreePlantedBugs",
                   "--declared", declared_file(tmp_path, CANCEL, EXPIRE, CLAIM))
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("HOLDS: duebook [seed]") and "3 divergence classes, 3 declared" in out
    assert "NOT DECLARED" not in out
    assert "not compared:" in out


@pytest.mark.parametrize("text, problem", [
    ('[[difference]]\nop = "cancel"\nresponse = "$.error"\n', 'needs a "reason"'),
    ('[[difference]]\nreason = "r"\nop = "cancel"\n', 'exactly one of "response", "state" or "messages"'),
    ('[[difference]]\nreason = "r"\nresponse = "$"\nstate = "$"\n', 'exactly one of'),
    ('[[difference]]\nreason = "r"\nop = "cancle"\nresponse = "$"\n', "has no op 'cancle'"),
    ('[[difference]]\nreason = "r"\nresponse = "status"\n', "is not a path"),
    ('[[difference]]\nreason = "r"\nresponse = "$"\nrequirement = "D9"\n', "not a requirement ID"),
    ('[[difference]]\nreason = "r"\nresponse = "$"\nwhy = 1\n', "unknown key(s) why"),
    ('[[difference]\n', "not valid TOML"),
])
def test_a_malformed_declared_file_exits_2_naming_the_problem(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str) -> None:
    path = tmp_path / "declared.toml"
    path.write_text(text)
    assert conform(tmp_path, "model", "--declared", str(path)) == 2
    err = capsys.readouterr().err
    assert problem in err and str(path) in err


def test_a_json_declared_file_is_read_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "declared.json"
    path.write_text('{"difference": [{"reason": "r", "op": "get", "state": "$.open"}]}')
    assert conform(tmp_path, "model", "--declared", str(path)) == 0, capsys.readouterr().out


def test_ops_narrow_the_campaign_and_unknown_ops_are_usage_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The default budget, stopped at the first class: the small BUDGET's 40 runs leave the
    # not-due claim to the luck of the draw, which moves with the modules loaded.
    code = conform(tmp_path, f"{PLANTED}:ThreePlantedBugs", "--skip-ops", "cancel,expire",
                   "--examples", "200", "--steps", "50", "--max-classes", "1")
    out = capsys.readouterr().out
    assert code == 1
    assert "response claim $.error [D-09]" in out
    assert " cancel $.error" not in out and " expire $.error" not in out
    assert "ops left out: cancel, expire" in out
    for trace in (tmp_path / "failures").glob("*.jsonl"):
        assert {step["op"] for step in read_trace(trace)[1]} <= {"schedule", "claim", "get",
                                                                 "claimable", "expirable"}
    assert conform(tmp_path, "model", "--ops", "claim,nope") == 2
    assert "duebook has no op nope" in capsys.readouterr().err


def test_rules_that_may_call_a_left_out_op_are_not_drawn() -> None:
    scope = scope_of(get_system("duebook"), ["claim"], None)
    assert scope is not None
    assert {"realm_acts_at_an_edge", "keeper_wakes_when_most_are_claimable", "cancel",
            "schedule"} <= scope.excluded_rules
    assert "claim" not in scope.excluded_rules and "time_passes" not in scope.excluded_rules
    assert scope.kept_for_opening == ("schedule",)  # every run opens with schedules
    with pytest.raises(ScopeError, match="no rule to draw"):
        scope_of(get_system("duebook"), None, ["schedule,claim,cancel,expire,get,claimable,expirable"])


def test_state_that_survives_reset_is_a_target_bug_of_its_own(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = conform(tmp_path, f"{PLANTED}:KeepsIdsAcrossReset")
    out = capsys.readouterr().out
    assert code == 1, out
    assert out.startswith("TARGET FAILED")
    assert "state survives reset" in out and "after one more reset" in out
    assert "inside duespec" not in out and "Flaky" not in out.split("found as:")[0]
    assert printed_replay(out, capsys)[0] == 1  # the trace: the steps, a reset, the same steps


def test_a_program_that_keeps_its_id_counter_across_reset_is_reported_as_such(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One process serves every run of a stdio campaign: the issue's own case."""
    doc = (ROOT / "docs" / "protocol.md").read_text()
    skeleton = doc.split("## 9. Skeleton", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "leaky_target.py"
    script.write_text(
        "from duespec.systems.duebook import ModelTarget\n\n"
        "ALLOCATED = [0]\n\n"
        "class MyBook(ModelTarget):\n"
        "    def __init__(self, config):\n"
        "        super().__init__()\n"
        "        self.reset(config)\n\n"
        "    def step(self, op, args, now):\n"
        "        response = super().step(op, args, now)\n"
        "        if op == 'schedule' and 'ok' in response:\n"
        "            ALLOCATED[0] += 1\n"
        "            response = {'ok': {**response['ok'], 'id': ALLOCATED[0]}}\n"
        "        return response\n\n" + skeleton)
    code = conform(tmp_path, f"stdio:{sys.executable} {script}")
    out = capsys.readouterr().out
    assert code == 1, out
    assert out.startswith("TARGET FAILED") and "the target's state survives reset" in out
    assert "inside duespec" not in out
    assert "replayed on a fresh target, as the replay command below does: it diverges at step" in out
    code, said = printed_replay(out, capsys)
    assert code == 1 and "(run 2 of the trace, which starts at the reset before step" in said, said


def printed_replay(out: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The exit status and output of the `duespec replay` command conform printed, run as printed."""
    [command] = re.findall(r"^  duespec replay (.*)$", out, re.MULTILINE)
    code = main(["replay", *shlex.split(command)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out


def test_an_exception_in_a_python_target_is_the_targets_failure(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = conform(tmp_path, f"{PLANTED}:RaisesOnExpirable")
    out = capsys.readouterr().out
    assert code == 1, out
    assert out.startswith("TARGET FAILED")
    assert "target raised ZeroDivisionError: integer division or modulo by zero" in out
    assert "planted_targets.py" in out and "in _limit_of" in out  # the innermost frames
    assert re.search(r"class 1 of 1: target raised expirable ZeroDivisionError at planted_targets.py:\d+", out)
    assert "inside duespec" not in out
    # Replay blames the target too, without a traceback, though the target has no close().
    [trace] = (tmp_path / "failures").glob("*.jsonl")
    assert main(["replay", str(trace), "--target", f"{PLANTED}:RaisesOnExpirable"]) == 1
    assert "ZeroDivisionError" in capsys.readouterr().out


def test_replay_reports_a_target_that_cannot_start_or_close_without_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"duespec_trace": 1, "system": "duebook", "profile": "seed", "config": '
                     '{"max_open": 3}, "seed": null, "producer": "test", "created": "now"}\n'
                     '{"i": 0, "op": "get", "args": {"id": 1}, "now": 0, "result": {"error": "not_found"}}\n')
    assert main(["replay", str(trace), "--target", f"{PLANTED}:CannotStart"]) == 2
    err = capsys.readouterr().err
    assert "target unusable:" in err and "RuntimeError: cannot connect to the database" in err
    assert "Traceback" not in err
    assert main(["replay", str(trace), "--target", f"{PLANTED}:CloseRaises"]) == 1
    out = capsys.readouterr().out
    assert "the target's close() failed" in out and "OSError: close failed" in out


def test_failure_traces_never_collide_and_replay_warns_on_another_target(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = CampaignResult(system="duebook", profile="seed", seed=0, examples=1, steps=1, seconds=0.1,
                            coverage=__import__("collections").Counter(), failure="f",
                            config={"max_open": 3}, counterexample=[
                                {"i": 0, "op": "get", "args": {"id": 1}, "now": 0,
                                 "result": {"error": "not_found"}}])
    common = "stdio:node /a/very/long/common/path/to/some/checkout/of/the/target/"
    paths = [write_failure_trace(result, tmp_path, target=common + suffix, producer="test")
             for suffix in ("one.js", "one.js", "two.js")]
    assert len(set(paths)) == 3 and all(path.exists() for path in paths)
    assert main(["replay", str(paths[2]), "--target", "model"]) == 0
    captured = capsys.readouterr()
    assert "was recorded against target" in captured.err and "two.js" in captured.err


def test_paths_name_the_first_difference_with_indices_folded() -> None:
    assert differing_paths({"status": 200, "schedule": {"a": 1}}, {"status": 400}) == [
        "$.schedule", "$.status"]
    assert differing_paths({"ok": [{"id": 1, "x": 2}, {"id": 2, "x": 3}]},
                           {"ok": [{"id": 1, "x": 9}, {"id": 2, "x": 8}]}) == ["$.ok[].x"]
    assert differing_paths({"ok": [1]}, {"ok": [1, 2]}) == ["$.ok"]
    assert differing_paths({"n": 1}, {"n": 1.0}) == ["$.n"]
    assert covers("$.schedules", "$.schedules[].nextRunAt") and covers("$", "$.x")
    assert not covers("$.schedule", "$.schedules") and not covers("$.ok[].x", "$.ok")


@pytest.mark.long
@pytest.mark.skipif(shutil.which("node") is None, reason="node runs the JavaScript example")
def test_a_program_in_another_language_with_two_declared_differences(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    example = ROOT / "examples" / "node-duebook"
    target = f"stdio:node {example / 'differs.js'}"
    # More runs than BUDGET: the closed-window bug needs a claim at the window edge, and which
    # runs a seed draws depends on the modules loaded beside it (Hypothesis mines constants).
    code = conform(tmp_path, target, "--declared", str(example / "declared.toml"), "--examples", "150")
    out = capsys.readouterr().out
    assert code == 1, out
    statuses = {}
    for line in out.splitlines():
        match = re.match(r"^  \d  response (\w+) (\S+)\s+\S+; valid input\s+(D-\d\d)\s+(\d+)\s+(declared|NOT DECLARED)", line)
        if match:
            statuses[match[1]] = (match[2], match[3], int(match[4]), match[5])
    assert statuses["cancel"][::3] == ("$.error", "declared")
    assert statuses["get"][::3] == ("$.ok.state", "declared")
    assert statuses["claim"][3] == "NOT DECLARED" and statuses["claim"][1] == "D-10"
    # The closed window also shows in claimable (D-23); a deep run's opening fill keeps
    # that counterexample at up to 7 steps (issue 8's campaign: half the runs deep).
    assert all(steps <= 8 for _, _, steps, _ in statuses.values()), out

"""What a campaign sends and how it ends: required tags (--require-tag, [inputs]), --ops
that openings honour (warp included), and a campaign cut short by a signal or --budget
keeping what it found."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from duespec.campaigns.report import report_for
from duespec.campaigns.run import run_campaign
from duespec.campaigns.scope import scope_of
from duespec.campaigns.stopping import Stopper
from duespec.cli import main
from duespec.systems import get_system
from duespec.systems.schedules import ImplTarget, ModelTarget
from duespec.systems.schedules.ops import with_required_tags

ROOT = Path(__file__).resolve().parents[1]
SCHEDULES = get_system("schedules")
TARGET_TAG = {"resonate:target": "poll://any@w"}
TAGGED_OPS = ("schedule.create", "promise.create", "task.create", "task.fence")


def test_required_tags_go_on_every_promise_and_schedule_created_and_nowhere_else() -> None:
    create = {"id": "s", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}", "promiseTimeout": 1,
              "promiseParam": {"headers": {}, "data": None}, "promiseTags": {"resonate:timer": "true"}}
    shaped = with_required_tags("schedule.create", create, TARGET_TAG)
    assert shaped["promiseTags"] == {"resonate:timer": "true", **TARGET_TAG}
    assert create["promiseTags"] == {"resonate:timer": "true"}  # the drawn value is never changed
    other = {"resonate:target": "poll://any@workers"}
    assert with_required_tags("promise.create", {"id": "p", "tags": other}, TARGET_TAG)["tags"] == TARGET_TAG
    task = {"pid": "w", "ttl": 1, "action": {"id": "t", "timeoutAt": 5, "param": {}, "tags": {}}}
    assert with_required_tags("task.create", task, TARGET_TAG)["action"]["tags"] == TARGET_TAG
    assert task["action"]["tags"] == {}
    fence = {"id": "t", "version": 1, "action": {"kind": "create", "id": "c", "tags": {}}}
    assert with_required_tags("task.fence", fence, TARGET_TAG)["action"]["tags"] == TARGET_TAG
    # a fenced settle creates nothing; a search filters, it creates nothing
    settle = {"id": "t", "version": 1, "action": {"kind": "settle", "id": "c", "tags": {}}}
    assert with_required_tags("task.fence", settle, TARGET_TAG) == settle
    assert with_required_tags("schedule.search", {"tags": {}}, TARGET_TAG) == {"tags": {}}
    # malformed on purpose stays malformed: tags that are no object, args that are none
    for tags in (None, [], "x"):
        assert with_required_tags("promise.create", {"id": "p", "tags": tags}, TARGET_TAG)["tags"] == tags
    assert with_required_tags("promise.create", None, TARGET_TAG) is None
    assert with_required_tags("promise.create", {"id": 3}, TARGET_TAG) == {"id": 3}
    assert with_required_tags("task.create", {"pid": "w", "action": None}, TARGET_TAG) == {"pid": "w", "action": None}


class RequiresATarget(ImplTarget):
    """As the deployed Rust server and resonate-pg: a promise or schedule created without a
    `resonate:target` tag is refused (400). Counts the requests that lacked one."""

    untagged: list[tuple[str, Any]] = []

    def step(self, op: str, args: dict[str, Any], now: int) -> dict[str, Any]:
        if op in TAGGED_OPS and isinstance(args, dict):
            holder = args.get("action") if op in ("task.create", "task.fence") else args
            key = "promiseTags" if op == "schedule.create" else "tags"
            tags = holder.get(key) if isinstance(holder, dict) else None
            creates = op != "task.fence" or (isinstance(holder, dict) and holder.get("kind") == "create")
            if creates and isinstance(tags, dict) and tags.get("resonate:target") != TARGET_TAG["resonate:target"]:
                type(self).untagged.append((op, args))
                return {"status": 400, "message": "promiseTags must include a resonate:target tag"}
        return super().step(op, args, now)


def conform(tmp_path: Path, *extra: str) -> int:
    return main(["conform", "schedules", "--target", f"{__name__}:RequiresATarget", "--examples", "25",
                 "--progress", "0", "--max-classes", "1", "--trace-dir", str(tmp_path / "failures"), *extra])


@pytest.mark.long
def test_a_target_that_requires_a_tag_diverges_at_once_without_it_and_holds_with_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    RequiresATarget.untagged.clear()
    assert conform(tmp_path, "--no-coverage") == 1
    assert "DIVERGES" in capsys.readouterr().out
    assert RequiresATarget.untagged  # the opening's edge schedules carry no target
    RequiresATarget.untagged.clear()
    code = conform(tmp_path, "--require-tag", "resonate:target=poll://any@w", "--coverage")
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("HOLDS: schedules [lean]") and "; 0 runs ended early" in out.splitlines()[0], out
    assert RequiresATarget.untagged == []
    assert "T-02.no_target: every promise and schedule this campaign creates carries" in out


def test_the_inputs_table_of_a_declarations_file_shapes_requests_as_the_flag_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    declared = tmp_path / "declared.toml"
    declared.write_text('[inputs]\nrequire_tags = {"resonate:target" = "poll://any@w"}\n')
    RequiresATarget.untagged.clear()
    code = conform(tmp_path, "--declared", str(declared), "--no-coverage")
    out = capsys.readouterr().out
    assert code == 0, out
    assert RequiresATarget.untagged == []


@pytest.mark.parametrize("argv, message", [
    (["--require-tag", "resonate:target"], "argument --require-tag: expected KEY=VALUE"),
    (["--require-tag", "=x"], "'=x'"),
    (["--budget", "0"], "argument --budget: must be a finite number of seconds > 0"),
    (["--budget", "soon"], "argument --budget: expected a number of seconds, got 'soon'"),
])
def test_a_malformed_tag_or_budget_is_a_usage_error_naming_it(
        argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["check", "schedules", *argv])
    assert exit.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("text, message", [
    ('[inputs]\nrequire_tags = ["resonate:target"]\n', "require_tags must be a table of tag names"),
    ('[inputs]\nrequire = {a = "b"}\n', "[inputs]: unknown key(s) require"),
    ('[inputs]\nrequire_tags = {a = 1}\n', "require_tags must be a table"),
])
def test_a_malformed_inputs_table_is_a_usage_error(tmp_path: Path, text: str, message: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    declared = tmp_path / "declared.toml"
    declared.write_text(text)
    assert main(["check", "schedules", "--declared", str(declared)]) == 2
    err = capsys.readouterr().err
    assert message in err and str(declared) in err, err


def test_duebook_has_no_tags_to_require(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "duebook", "--require-tag", "a=b"]) == 2
    assert "duebook's requests carry no tags" in capsys.readouterr().err


class Recording(ModelTarget):
    ops: set[str] = set()

    def step(self, op: str, args: dict[str, Any], now: int) -> dict[str, Any]:
        type(self).ops.add(op)
        return super().step(op, args, now)


def test_an_opening_leaves_out_the_ops_left_out_and_no_run_dies_of_them() -> None:
    scope = scope_of(SCHEDULES, ["schedule.create,schedule.get,schedule.delete,tick"], None)
    assert scope is not None and scope.kept_for_opening == ()
    assert "still taken by every run's opening" not in scope.describe()
    Recording.ops = set()
    result = run_campaign(SCHEDULES, Recording, examples=30, scope=scope)
    assert result.ok, result.failure
    assert Recording.ops <= {"schedule.create", "schedule.get", "schedule.delete", "tick"}, Recording.ops
    assert {"schedule.create", "schedule.delete", "tick"} <= Recording.ops
    assert result.runs_ended_early() == "0 runs ended early"
    # what only the ops left out reach is out of this campaign's reach, with that reason
    report = report_for(SCHEDULES, result)
    assert report.unexplained == [] and report.missing_required == []
    assert "T-02" in report.never_reached
    assert "leaves out 21 ops (promise.create, " in report.reasons["T-02"]
    assert "; --ops/--skip-ops; every rule that takes an op left out" in report.render()


def test_warp_is_an_op_like_any_other(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`warp` is the unknown op the machine's malformed requests send (400, X-03)."""
    scope = scope_of(SCHEDULES, None, ["warp"])
    assert scope is not None and scope.excluded_ops == {"warp"}
    assert scope_of(SCHEDULES, ["warp,tick,schedule.get,promise.get,promise.create"], None) is not None
    declared = tmp_path / "declared.toml"
    declared.write_text('[[difference]]\nreason = "an unknown op is 404 here"\nop = "warp"\nresponse = "$.status"\n')
    assert main(["check", "schedules", "--declared", str(declared), "--skip-ops", "warp", "--examples", "5",
                 "--progress", "0", "--no-coverage", "--trace-dir", str(tmp_path)]) == 0
    assert "warp" in capsys.readouterr().out  # named among the ops left out
    assert main(["check", "schedules", "--ops", "nowarp"]) == 2
    assert "has no op nowarp; known: " in capsys.readouterr().err


@pytest.mark.long
def test_sigterm_keeps_the_class_found_and_its_trace(tmp_path: Path) -> None:
    """Killed after its first class is found, a campaign prints that class, its table row
    and trace path, and exits 1, within 10 s."""
    process = subprocess.Popen(
        [sys.executable, "-m", "duespec", "conform", "duebook", "--target", "tests.planted_targets:OnePlantedBug",
         "--examples", "1000000", "--progress", "1", "--no-coverage", "--trace-dir", str(tmp_path)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert process.stderr is not None
    try:
        seen = []
        for line in process.stderr:
            seen.append(line)
            if "class 1 found" in line:
                break
        else:
            pytest.fail("no class found: " + "".join(seen))
        process.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        out, err = process.communicate(timeout=10)
        assert time.monotonic() - sent < 10
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1, out + err
    first = out.splitlines()[0]
    assert first.startswith("DIVERGES: duebook") and "CUT SHORT by SIGTERM" in first, out
    assert "class 1 of 1: response claim $.error" in out
    traces = list(tmp_path.glob("*.jsonl"))
    assert len(traces) == 1 and f"trace: {traces[0]}" in out


def test_a_campaign_cut_short_by_a_signal_with_nothing_found_does_not_say_holds(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "duespec", "check", "duebook", "--examples", "1000000", "--progress", "1",
         "--no-coverage", "--trace-dir", str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    try:
        line = process.stderr.readline()  # a progress line: the campaign is under way
        assert "running" in line or " done (" in line, line
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 3, out + err
    assert out.startswith("INCOMPLETE: duebook") and "CUT SHORT by SIGINT after" in out, out
    assert "HOLDS" not in out


def test_a_budget_holds_within_it_only_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "duebook", "--examples", "1000000", "--budget", "2", "--progress", "0",
                 "--no-coverage", "--trace-dir", str(tmp_path)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("HOLDS: duebook") and "CUT SHORT by --budget 2s after" in first, first
    assert "(1,000,000 asked per search) (HOLDS within that budget only)" in first


class StopsAtTheFirstFailure(Stopper):
    """Told to stop as soon as a failing run is found, with no grace to shrink it."""

    def should_stop(self, shrinking: bool) -> bool:
        if shrinking:
            self.request("a test")
        return shrinking


@pytest.mark.long
def test_a_stop_while_shrinking_keeps_the_smallest_failing_run_seen() -> None:
    from tests.planted_targets import OnePlantedBug

    duebook = get_system("duebook")
    result = run_campaign(duebook, OnePlantedBug, examples=1000, max_classes=5, stopper=StopsAtTheFirstFailure())
    assert result.cut_short == "a test"
    assert not result.ok and len(result.findings) == 1
    [finding] = result.findings
    assert finding.divergence_class is not None and finding.divergence_class.label().startswith("response claim $.error")
    assert finding.counterexample and finding.counterexample[-1]["op"] == "claim"


def test_junit_reports_a_campaign_cut_short_by_a_signal_as_an_error_not_a_pass(tmp_path: Path) -> None:
    from duespec.campaigns import junit

    class Told(Stopper):
        def should_stop(self, shrinking: bool) -> bool:
            self.request("SIGTERM")
            return True

    result = run_campaign(get_system("duebook"), get_system("duebook").impl, examples=100, stopper=Told())
    assert result.ok and result.cut_short == "SIGTERM"
    xml = junit.to_xml("duespec conform duebook", [junit.Case(result, "impl", "", ())])
    assert 'errors="1"' in xml and 'type="incomplete"' in xml and "cut short by SIGTERM" in xml


@pytest.mark.long
def test_sigterm_while_a_slow_failure_is_shrunk_keeps_it_in_the_report_and_json(tmp_path: Path) -> None:
    """Issue 41, item 12: stopped while shrinking a failure whose every replay takes minutes
    (the stop's grace and its hard deadline both pass), the campaign still reports the class
    it was shrinking, writes its --json, and exits 1; never "interrupted (Ctrl-C)"."""
    report = tmp_path / "report.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "duespec", "conform", "duebook", "--target", "tests.planted_targets:SlowOnceItsBugShows",
         "--examples", "1000", "--progress", "1", "--no-coverage", "--database", "none",
         "--trace-dir", str(tmp_path), "--json", str(report)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert process.stderr is not None
    try:
        seen = []
        for line in process.stderr:
            seen.append(line)
            if "failing run found, shrinking it" in line:
                break
        else:
            pytest.fail("no failing run found: " + "".join(seen))
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1, out + err
    assert "interrupted" not in err, err
    assert out.startswith("DIVERGES: duebook") and "CUT SHORT by SIGTERM" in out.splitlines()[0], out[:2000]
    written = json.loads(report.read_text())
    assert written["exit"] == 1
    [campaign] = written["campaigns"]
    assert [finding["label"] for finding in campaign["findings"]] == ["response claim $.error [D-09] via D-09.not_due"]
    assert "not replayed from a reset" in campaign["findings"][0]["summary"]


def test_a_signal_while_the_report_is_written_is_noted_not_raised() -> None:
    """Issue 41, item 12: once the search has ended, SIGTERM (even twice) lets the report
    and its files be written; it only keeps later campaigns from starting."""
    stopper = Stopper()
    with stopper.signals():
        with stopper.searching(lambda: None):
            pass
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.1)  # the handler runs at the next bytecode boundary in the main thread
        assert stopper.reason == "SIGTERM" and stopper.phase == "report"


def test_a_process_group_sigterm_with_jobs_keeps_what_the_workers_found(tmp_path: Path) -> None:
    """Issue 41, item 12, as `timeout` sends it: SIGTERM to the whole process group while
    worker processes (--jobs 2) shrink a slow failure. Each worker ends its chunk with
    what it found, and the report and --json list the class, exit 1."""
    report, shown = tmp_path / "report.json", tmp_path / "bug-shown"
    process = subprocess.Popen(
        [sys.executable, "-m", "duespec", "conform", "duebook", "--target", "tests.planted_targets:SlowOnceItsBugShows",
         "--examples", "200", "--jobs", "2", "--progress", "0", "--no-coverage", "--database", "none",
         "--trace-dir", str(tmp_path), "--json", str(report)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, "DUESPEC_TEST_BUG_SHOWN": str(shown)})
    try:
        deadline = time.monotonic() + 300
        while not shown.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert shown.exists(), process.communicate(timeout=60)
        os.killpg(process.pid, signal.SIGTERM)
        out, err = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 1, out + err
    assert "interrupted" not in err and "CUT SHORT by SIGTERM" in out.splitlines()[0], out[:2000] + err
    written = json.loads(report.read_text())
    assert written["exit"] == 1
    assert [finding["label"] for finding in written["campaigns"][0]["findings"]] == ["response claim $.error [D-09] via D-09.not_due"]

class LoadedClock:
    """time.perf_counter on a machine so loaded that every reading is 1,000 s after the last."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1000.0
        return self.now


def test_the_counterexample_does_not_depend_on_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shrinking budgets count work: a clock that runs a thousand times too fast (a loaded
    machine, to a wall-clock budget) shrinks to the very same counterexample."""
    from duespec.campaigns import run as run_module
    from tests.planted_targets import OnePlantedBug

    duebook = get_system("duebook")
    idle = run_campaign(duebook, OnePlantedBug, examples=200, seed=7)
    monkeypatch.setattr(run_module, "SHRINK_WALL_SECONDS", float("inf"))
    monkeypatch.setattr(time, "perf_counter", LoadedClock())
    loaded = run_campaign(duebook, OnePlantedBug, examples=200, seed=7)
    monkeypatch.undo()
    assert idle.counterexample and loaded.counterexample == idle.counterexample
    assert "shrinking stopped" not in loaded.findings[0].summary


def test_a_shrinking_cut_by_its_work_budget_says_so_and_keeps_the_shortest_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from duespec.campaigns import run as run_module
    from tests.planted_targets import OnePlantedBug

    monkeypatch.setattr(run_module, "SHRINK_STEPS", 20)
    result = run_campaign(get_system("duebook"), OnePlantedBug, examples=200, seed=7)
    [finding] = result.findings
    assert "(shrinking stopped after 20 steps, its budget: the shortest failing run of the class seen is kept)" in finding.summary
    assert finding.counterexample[-1]["op"] == "claim"

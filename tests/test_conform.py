"""`duespec conform` end to end: the JavaScript duebook holds, its broken copy is caught
with a short counterexample written as a trace, and unusable targets exit 2."""

from __future__ import annotations

import json
import shutil
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from duespec.campaigns.run import CampaignProgress, progress_printer
from duespec.cli import main
from duespec.systems.duebook import ModelTarget
from duespec.targets.interface import TargetError
from duespec.traces.format import read_trace

ROOT = Path(__file__).resolve().parents[1]
GOOD = f"stdio:node {ROOT / 'examples/node-duebook/duebook.js'}"
BROKEN = f"stdio:node {ROOT / 'examples/node-duebook/broken.js'}"
SMALL = ["--examples", "30", "--steps", "20", "--progress", "0"]


@pytest.fixture(scope="module", autouse=True)
def node_is_installed() -> None:
    assert shutil.which("node"), "node is required for the conformance examples; install node 20+"


def conform(*args: str) -> int:
    return main(["conform", "duebook", *args])


def test_the_javascript_duebook_conforms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junit, coverage = tmp_path / "junit.xml", tmp_path / "coverage.json"
    code = conform("--target", GOOD, *SMALL, "--junit", str(junit), "--coverage-json", str(coverage),
                   "--trace-dir", str(tmp_path / "failures"))
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("HOLDS: duebook [seed]")
    assert not (tmp_path / "failures").exists()
    suite = ElementTree.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("1", "0", "0")
    [report] = json.loads(coverage.read_text())
    assert report["reached"]["D-03"]["D-03.scheduled"] > 0
    assert "D-25" in report["never_reached"]  # snapshot/restore is not in the JSON contract


@pytest.mark.long
def test_the_broken_copy_fails_with_a_short_counterexample_and_a_trace(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junit = tmp_path / "junit.xml"
    code = conform("--target", BROKEN, "--examples", "500", "--steps", "50", "--seed", "1",
                   "--max-classes", "1", "--progress", "0", "--junit", str(junit),
                   "--trace-dir", str(tmp_path))
    out = capsys.readouterr().out
    assert code == 1, out
    assert out.startswith("DIVERGES: duebook [seed]")
    [trace] = tmp_path.glob("*.jsonl")
    header, steps = read_trace(trace)
    steps = list(steps)
    # The run's own cap: a deep run's (2500) stays when the minimiser drops its fill's steps.
    assert header.system == "duebook" and header.seed == 1 and set(header.config) == {"max_open"}
    # The bug is at the end of the claim window: a claim (or the claimable list) at the
    # very instant some scheduled deferral expires.
    assert 2 <= len(steps) <= 5, steps
    last = steps[-1]
    assert last["op"] in ("claim", "claimable")
    window_ends = {s["result"]["ok"]["expires_at"] for s in steps
                   if s["op"] == "schedule" and "ok" in s["result"]}
    assert last["now"] in window_ends
    assert f"trace: {trace}" in out
    assert f"duespec replay {trace} --target" in out
    assert "--seed 1" in out
    assert "--max-classes" not in out, "the reproduce command leaves out a default (1)"
    failure = ElementTree.parse(junit).getroot().find("./testsuite/testcase/failure")
    assert failure is not None and str(trace) in (failure.text or "")
    # The printed replay command reproduces it, and the correct duebook passes the same trace.
    assert main(["replay", str(trace), "--target", BROKEN]) == 1
    assert main(["replay", str(trace), "--target", GOOD]) == 0


def test_the_skeleton_in_the_protocol_doc_is_a_working_target(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/protocol.md section 9, verbatim, with the model as its MyBook."""
    doc = (ROOT / "docs" / "protocol.md").read_text()
    skeleton = doc.split("## 9. Skeleton", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "skeleton_target.py"
    script.write_text(
        "from duespec.systems.duebook import ModelTarget\n\n"
        "class MyBook(ModelTarget):\n"
        "    def __init__(self, config):\n"
        "        super().__init__()\n"
        "        self.reset(config)\n\n" + skeleton)
    code = conform("--target", f"stdio:{sys.executable} {script}", *SMALL, "--no-coverage")
    assert code == 0, capsys.readouterr().out


def test_a_python_factory_is_a_target(capsys: pytest.CaptureFixture[str]) -> None:
    code = conform("--target", "duespec.systems.duebook:ModelTarget", *SMALL, "--no-coverage")
    assert code == 0, capsys.readouterr().out


class CrashesOnLargeTimes(ModelTarget):
    """A target that cannot answer at all for some inputs (as a crashing program would)."""

    def step(self, op: str, args: dict, now: int) -> dict:
        if type(now) is int and now > 2**62:  # campaigns also send "5", 1.0, null as now
            raise TargetError("pretend the program died")
        return super().step(op, args, now)


@pytest.mark.long
def test_a_target_error_mid_campaign_is_a_shrunk_failure(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junit = tmp_path / "junit.xml"
    # The default budget, stopped at the first class: a clock past 2^62 is a rare jump, which
    # SMALL's runs reach or not as the draws move.
    code = conform("--target", f"{__name__}:CrashesOnLargeTimes", "--max-classes", "1", "--progress", "0", "--no-coverage",
                   "--junit", str(junit), "--trace-dir", str(tmp_path))
    out = capsys.readouterr().out
    assert code == 1, out
    assert out.startswith("TARGET FAILED") and "pretend the program died" in out
    _, steps = read_trace(next(tmp_path.glob("*.jsonl")))
    assert [s["now"] > 2**62 for s in steps][-1]
    assert ElementTree.parse(junit).getroot().find("./testsuite/testcase/error") is not None


@pytest.mark.parametrize("target, expected", [
    ("nonsense", "unknown target 'nonsense'"),
    ("stdio:", "names no command"),
    ("no_such_module_duespec:factory", "cannot import 'no_such_module_duespec'"),
    ("duespec.systems.duebook:NoSuchThing", "has no attribute 'NoSuchThing'"),
    ("stdio:no-such-program-duespec", "target unusable: cannot start target"),
    (f"stdio:{sys.executable} -c pass", "target unusable"),
])
def test_unusable_targets_exit_2(target: str, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert conform("--target", target, *SMALL) == 2
    assert expected in capsys.readouterr().err


def test_an_unknown_profile_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert conform("--target", "model", "--profile", "nope", *SMALL) == 2
    assert "no profile nope" in capsys.readouterr().err


def test_progress_speaks_at_most_every_interval_and_when_shrinking_starts(
        capsys: pytest.CaptureFixture[str]) -> None:
    report = progress_printer(5.0, sys.stdout)
    for seconds, shrinking in ((1, False), (3, False), (6, False), (7, True), (8, True), (12, True)):
        report(CampaignProgress(examples=seconds, steps=10 * seconds, seconds=seconds, shrinking=shrinking))
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0].strip() for line in lines] == [
        "... running", "... failing run found, shrinking it", "... failing run found, shrinking it"]
    assert "6 runs" in lines[0] and "7 runs" in lines[1] and "12 runs" in lines[2]


def test_every_profile_is_one_junit_testcase(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junit = tmp_path / "junit.xml"
    code = main(["conform", "schedules", "--target", "model", "--profile", "all", "--examples", "5",
                 "--steps", "10", "--progress", "0", "--no-coverage", "--junit", str(junit)])
    out = capsys.readouterr().out
    assert code == 0, out
    names = [case.get("name") for case in ElementTree.parse(junit).getroot().iter("testcase")]
    assert names == [f"schedules[{profile}] seed=0 target=model" for profile in ("lean", "server", "deployed")]
    assert out.count("HOLDS: schedules") == 3


class HangsOnSecondClaim:
    """A duebook that loops forever the second time anyone claims: an endless catch-up's
    in-process cousin. Conform must fail it, not hang."""

    def __init__(self) -> None:
        from duespec.systems.duebook import ModelTarget

        self.inner, self.claims = ModelTarget(), 0

    def reset(self, config: dict) -> None:
        self.inner.reset(config)
        self.claims = 0

    def step(self, op: str, args: dict, now: int) -> dict:
        if op == "claim":
            self.claims += 1
            while self.claims > 1:
                pass
        return self.inner.step(op, args, now)

    def observe(self) -> dict:
        return self.inner.observe()

    def close(self) -> None:
        self.inner.close()


def test_an_in_process_target_that_hangs_fails_within_its_timeout(tmp_path: Path) -> None:
    from duespec.campaigns.run import run_campaign
    from duespec.judge import FindingKind
    from duespec.systems import get_system
    from duespec.targets.resolve import resolve

    system = get_system("duebook")
    factory = resolve(system, f"{__name__}:HangsOnSecondClaim", timeout=0.2)
    result = run_campaign(system, factory, examples=50)
    assert result.failure_kind == FindingKind.TARGET_TOO_SLOW  # a finding of its own kind, not a hang
    assert "step claim did not return within 0.2s" in (result.failure or "")
    assert [step["op"] for step in result.counterexample].count("claim") == 2


@pytest.mark.parametrize("command", ["conform", "check"])
def test_the_help_names_the_system_argument_and_its_choices(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    from duespec.cli import main as cli

    with pytest.raises(SystemExit):
        cli([command, "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "SYSTEM the system to check: duebook or schedules (or one added through DUESPEC_SYSTEMS" in help_text

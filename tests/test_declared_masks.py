"""Declared differences never blind a campaign.

The case in point, as a user met it: a server that fires only one owed schedule
occurrence per tick (a real divergence from the Lean reading) and answers `tick` with an
empty `fired` list (a harmless difference its maintainers declare). One declaration on
`tick $.fired` once made every schedule divergence invisible, since each shows at a tick
step, and the campaign said HOLDS. A declaration masks exactly what it names now, and the
state after the step is still compared, so the campaign must DIVERGE and name the
undeclared difference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from duespec.cli import main
from duespec.systems import get_system

SCHEDULES = get_system("schedules")
#: The last millisecond of year 9999: a valid `now` for every reading of the clock.
YEAR_9999 = 253_402_300_799_999
TICK_FIRED = '''
[[difference]]
reason = "our server answers tick with an empty fired list"
op = "tick"
response = "$.fired"
'''


class OneOccurrencePerTick:
    """duespec's own schedules server, except that a tick fires at most the earliest owed
    instant's timeouts (a catch-up that stops after one occurrence) and answers `fired: []`."""

    def __init__(self) -> None:
        self.inner = SCHEDULES.impl()

    def reset(self, config: dict[str, Any]) -> None:
        self.inner.reset(config)

    def step(self, op: str, args: dict[str, Any], now: int) -> dict[str, Any]:
        if op != "tick" or args != {} or type(now) is not int or not 0 <= now <= YEAR_9999:
            return self.inner.step(op, args, now)  # a malformed tick is refused as ever
        state = self.inner.observe()
        due = [entry["timeout"] for entry in state["scheduleTimeouts"] + state["promiseTimeouts"]
               if entry["timeout"] <= now]
        response = self.inner.step("tick", args, min(due) if due else now)
        return {**response, "fired": []} if "fired" in response else response

    def observe(self) -> dict[str, Any]:
        return self.inner.observe()


class OnlyTheTickAnswerDiffers(OneOccurrencePerTick):
    """The harmless difference alone: every tick fires what is due, and answers `fired: []`."""

    def step(self, op: str, args: dict[str, Any], now: int) -> dict[str, Any]:
        response = self.inner.step(op, args, now)
        return {**response, "fired": []} if op == "tick" and "fired" in response else response


def conform(tmp_path: Path, target: str, *extra: str) -> int:
    declared = tmp_path / "declared.toml"
    declared.write_text(TICK_FIRED)
    return main(["conform", "schedules", "--target", f"{__name__}:{target}", "--profile", "lean",
                 "--declared", str(declared), "--examples", "150", "--progress", "0", "--no-coverage",
                 "--max-classes", "3", "--trace-dir", str(tmp_path / "failures"), *extra])


@pytest.mark.long
def test_a_declared_tick_answer_does_not_hide_a_catch_up_that_stops_early(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = conform(tmp_path, "OneOccurrencePerTick")
    out = capsys.readouterr().out
    assert code == 1, out
    assert out.startswith("DIVERGES: schedules [lean]"), out
    table = out[out.index("divergence classes:"):]
    undeclared = [line for line in table.splitlines() if "NOT DECLARED" in line]
    # The undeclared difference is the state a short catch-up leaves: owed occurrences
    # not fired (their promises missing, the schedule's next run behind).
    assert any("state tick" in line for line in undeclared), table


@pytest.mark.long
def test_the_harmless_difference_alone_holds_with_every_run_taken_to_its_end(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = conform(tmp_path, "OnlyTheTickAnswerDiffers", "--json", str(tmp_path / "report.json"))
    out = capsys.readouterr().out
    assert code == 0, out
    verdict = out.splitlines()[0]
    assert verdict.startswith("HOLDS: schedules [lean]") and "1 declared" in verdict, verdict
    assert verdict.endswith("; 0 runs ended early"), verdict
    # Reported as first seen, not shrunk: a declared class costs its search no shrinking.
    report = json.loads((tmp_path / "report.json").read_text())
    [finding] = report["campaigns"][0]["findings"]
    assert finding["declared"] and "not shrunk, a declared difference" in finding["failure"], finding


class ExpireSaysNope(OnlyTheTickAnswerDiffers):
    """A duebook whose every refused expire answers one wrong error code, whichever
    requirement refused it: one difference, reached through several branches."""

    def __init__(self) -> None:
        from duespec.systems import get_system as system_named

        self.inner = system_named("duebook").impl()

    def step(self, op: str, args: dict[str, Any], now: int) -> dict[str, Any]:
        response = self.inner.step(op, args, now)
        return {"error": "nope"} if op == "expire" and "error" in response else response


@pytest.mark.long
def test_one_difference_reached_through_several_branches_is_a_class_per_cause() -> None:
    """issue 40: a class's identity includes the model's branch, so that a known gap at an
    op and path (here any of them) cannot hide another at the same op and path; the report
    groups them under their (kind, op, path)."""
    from duespec.campaigns.run import run_campaign

    result = run_campaign(get_system("duebook"), ExpireSaysNope, examples=300, max_classes=5)
    causes = [finding.divergence_class.cause for finding in result.findings
              if finding.divergence_class is not None and finding.divergence_class.group == "response expire $.error"]
    assert len(causes) >= 2 and len(set(causes)) == len(causes), causes

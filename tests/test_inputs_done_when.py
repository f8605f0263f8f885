"""The checks issue 27 is done by: a campaign with a required tag against `duespec serve
--profile deployed` over HTTP reaches every deployed requirement it can and never sends a
promise or schedule without the tag; declared differences in a response field and in the
task timeouts take every run to its full length."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from duespec.cli import main
from duespec.systems.schedules import ImplTarget
from duespec.wire.http_target import HttpTarget
from wire_support import ROOT, Served

TAG, VALUE = "resonate:target", "poll://any@w"
#: Where a wire request carries the tags of what it creates, by (nested) kind.
TAGS_OF_KIND = {"schedule.create": "promiseTags", "promise.create": "tags"}


class WireRecording(HttpTarget):
    """The HTTP target, keeping every request body exactly as it goes on the wire."""

    url = ""
    bodies: list[str] = []

    def __init__(self) -> None:
        super().__init__(type(self).url, 30.0)

    def _exchange(self, body: str) -> tuple[int, Any, str]:
        type(self).bodies.append(body)
        return super()._exchange(body)


def creations(envelope: Any) -> list[tuple[str, Any]]:
    """(kind, tags value) of every promise.create and schedule.create in an envelope,
    the ones nested in task requests included."""
    found: list[tuple[str, Any]] = []
    if isinstance(envelope, list):
        for item in envelope:
            found += creations(item)
    elif isinstance(envelope, dict):
        kind, data = envelope.get("kind"), envelope.get("data")
        if kind in TAGS_OF_KIND and isinstance(data, dict) and "head" in envelope:
            found.append((kind, data.get(TAGS_OF_KIND[kind])))
        for value in envelope.values():
            found += creations(value)
    return found


@pytest.mark.long
def test_a_tagged_campaign_against_the_deployed_profile_over_http_reaches_every_requirement(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    coverage = tmp_path / "coverage.json"
    with Served("--profile", "deployed") as served:
        WireRecording.url, WireRecording.bodies = served.url, []
        code = main(["conform", "schedules", "--target", f"{__name__}:WireRecording", "--profile", "deployed",
                     "--require-tag", f"{TAG}={VALUE}", "--progress", "0", "--coverage-json", str(coverage),
                     "--trace-dir", str(tmp_path / "failures")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("HOLDS: schedules [deployed]") and "; 0 runs ended early" in out.splitlines()[0], out
    [report] = json.loads(coverage.read_text())
    assert report["missing_required_tags"] == [], report["missing_required_tags"]
    assert report["never_reached_without_reason"] == []
    assert report["reached_though_out_of_reach"] == []
    # DEP-01 (a schedule without a target is refused) is the one requirement the tag puts
    # out of reach, and the report says so
    assert "DEP-01" in report["never_reached_reasons"]
    assert "--require-tag" in report["never_reached_reasons"]["DEP-01"]
    assert {"DEP-02", "DEP-03", "DEP-04"} <= set(report["reached"])
    sent = [creation for body in WireRecording.bodies for creation in creations(json.loads(body))]
    kinds = {kind for kind, _ in sent}
    assert kinds == {"schedule.create", "promise.create"}, kinds
    untagged = [(kind, tags) for kind, tags in sent if isinstance(tags, dict) and tags.get(TAG) != VALUE]
    assert untagged == [], untagged[:5]
    # only a tags value that is no object (sent malformed on purpose) goes without the tag
    assert all(not isinstance(tags, dict) for kind, tags in sent if not isinstance(tags, dict) or TAG not in tags)


class TwoHarmlessDifferences(ImplTarget):
    """A tick that answers `fired: []` (as the deployed server's debug.tick does), and task
    timeouts a millisecond late in its observable state."""

    def step(self, op: str, args: Any, now: Any) -> dict[str, Any]:
        response = super().step(op, args, now)
        return {**response, "fired": []} if op == "tick" and "fired" in response else response

    def observe(self) -> dict[str, Any]:
        state = super().observe()
        return {**state, "taskTimeouts": [{**t, "timeout": t["timeout"] + 1} for t in state["taskTimeouts"]]}


@pytest.mark.long
def test_declared_differences_in_a_response_field_and_the_task_timeouts_end_no_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    declared = tmp_path / "declared.toml"
    declared.write_text(
        '[[difference]]\nreason = "debug.tick answers []"\nop = "tick"\nresponse = "$.fired"\n\n'
        '[[difference]]\nreason = "task timeouts are stored a millisecond late"\n'
        'state = "$.taskTimeouts[*].timeout"\n')
    code = main(["conform", "schedules", "--target", f"{__name__}:TwoHarmlessDifferences", "--examples", "40",
                 "--declared", str(declared), "--progress", "0", "--no-coverage",
                 "--trace-dir", str(tmp_path / "failures")])
    out = capsys.readouterr().out
    assert code == 0, out
    verdict = out.splitlines()[0]
    assert verdict.startswith("DIVERGES: schedules [lean]") or verdict.startswith("HOLDS"), verdict
    assert "2 divergence classes, 2 declared; 0 runs ended early" in verdict, verdict
    table = out[out.index("divergence classes:"):]
    assert "response tick $.fired" in table and "state" in table and "$.taskTimeouts[].timeout" in table
    assert "NOT DECLARED" not in table


class AnswersTickAsTheDeployedServer(ImplTarget):
    """`debug.tick` as the deployed server answers it: `[]`."""

    def step(self, op: str, args: Any, now: Any) -> dict[str, Any]:
        response = super().step(op, args, now)
        return {**response, "fired": []} if op == "tick" and "fired" in response else response


@pytest.mark.long
def test_the_deployed_example_declares_the_tick_answer_and_requires_the_target(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conform", "schedules", "--target", f"{__name__}:AnswersTickAsTheDeployedServer",
                 "--profile", "deployed", "--declared", str(ROOT / "examples/resonate-deployed/declared.toml"),
                 "--examples", "30", "--progress", "0", "--no-coverage", "--trace-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "1 divergence class, 1 declared; 0 runs ended early" in out.splitlines()[0], out
    assert "response tick $.fired" in out and "NOT DECLARED" not in out

"""A response-only campaign goes on past a known class in which the target refused what
the model took: the model's step is taken back (duespec.judge.StepJudge.step), so the run
is not ended at the class, and a bug later in the run is still met.

The server here is duespec's own schedules implementation, except that it refuses every
valid schedule under the id `édge` (a server that keeps ids to ASCII), which the
campaign's edge rules create at the start of many runs; with LATER_BUG, a run that went on
past such a refusal also meets a schedule.get that loses the promise timeout: resonate-pg's refusals of cron edges the spec
accepts have this shape (examples/resonate-pg/baseline.json)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from duespec.campaigns.classes import Masks
from duespec.campaigns.report import report_for
from duespec.campaigns.run import run_campaign
from duespec.judge import Difference, StepJudge
from duespec.systems import get_system
from duespec.systems.schedules.ops import EDGE_ID

SCHEDULES = get_system("schedules")

#: Whether Server also has a bug met only in a run that went on past the refusal.
LATER_BUG = {"on": False}
#: Whether Server also answers every schedule it takes with the promise timeout lost.
TAKEN_WRONG = {"on": False}
#: Whether Server refuses every cron written as an alias (`@hourly`), as resonate-pg does.
NO_ALIASES = {"on": False}


class Server:
    def __init__(self) -> None:
        self.inner = SCHEDULES.impl()
        self.refused = False

    def reset(self, config: dict[str, Any]) -> None:
        self.inner.reset(config)
        self.refused = False

    def observe(self) -> dict[str, Any]:
        return self.inner.observe()

    def step(self, op: str, args: Any, now: Any) -> dict[str, Any]:
        answer = self.inner.step(op, args, now)
        alias = (NO_ALIASES["on"] and op == "schedule.create" and isinstance(args, dict)
                 and str(args.get("cron")).strip().startswith("@"))
        if op == "schedule.create" and answer.get("status") == 200 and (args["id"] == EDGE_ID or alias):
            self.inner.step("schedule.delete", {"id": args["id"]}, now)  # taken back: never created
            self.refused = True
            return {"status": 400}
        if TAKEN_WRONG["on"] and op == "schedule.create" and answer.get("status") == 200:
            return {**answer, "schedule": {**answer["schedule"], "promiseTimeout": 0}}
        if LATER_BUG["on"] and self.refused and op == "schedule.get" and answer.get("status") == 200:
            return {**answer, "schedule": {**answer["schedule"], "promiseTimeout": 0}}
        return answer


def campaign(**settings: Any) -> Any:
    return run_campaign(SCHEDULES, Server, **{"examples": 10, "depth": 0, "observe": False, "max_classes": 5,
                                              **settings})


@pytest.fixture(scope="module")
def refusal() -> list[Any]:
    """The class of the refusal, found by a campaign with no baseline: it ends a run, as a
    class found for the first time does. The edges' crons take two more branches of the
    cron's meaning (a day-of-week 7, both day fields restricted): the same refusal in
    each is a class of its own, added as a longer campaign would find it."""
    first = campaign(max_classes=1)
    found = first.findings[0].divergence_class
    assert found is not None and found.op == "schedule.create" and found.paths == ("$.schedule", "$.status")
    return [found, *(replace(found, cause=tuple(sorted((*found.cause, branch))))
                     for branch in ("C-04.sunday_seven", "C-05.either_day"))]


def test_a_run_goes_on_past_a_known_refusal_of_what_the_model_took(refusal: Any) -> None:
    known = campaign(baseline=refusal)
    assert not known.findings
    assert known.masks is not None
    assert known.masks.skipped, "the refusals were met, and not compared"
    ended = [label for label in known.masks.runs_ended if "schedule.create" in label]
    assert not ended, f"runs ended at the known refusal: {known.masks.runs_ended}"


def test_a_bug_past_a_known_refusal_is_found(refusal: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(LATER_BUG, "on", True)
    result = campaign(baseline=refusal)
    groups = {f.divergence_class.group for f in result.findings if f.divergence_class is not None}
    assert "response schedule.get $.schedule.promiseTimeout" in groups, groups


def test_a_branch_reached_only_in_refused_steps_is_reported_as_not_reached(
        refusal: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that refuses every alias cron, under the known refusal's class: the model's
    steps that took one were taken back, so the regime (SR-01.alias, required) was not
    reached against it; the coverage report says so, and how often it was taken back,
    rather than counting it reached."""
    monkeypatch.setitem(NO_ALIASES, "on", True)
    report = report_for(SCHEDULES, campaign(baseline=refusal, max_classes=1))
    assert "SR-01.alias" in report.missing_required
    assert report.taken_back.get("SR-01.alias", 0) > 0, report.taken_back
    assert "SR-01.alias (taken " in report.render()
    assert "only in steps the target refused" in report.summary_line()


def test_a_known_refusal_does_not_hide_a_wrong_answer_to_what_the_target_took(
        refusal: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The refusal's class covers `$.schedule` of schedule.create in its cause; a schedule
    the target takes and answers wrongly, in the same cause, is another outcome: a class."""
    monkeypatch.setitem(TAKEN_WRONG, "on", True)
    result = campaign(baseline=refusal, max_classes=1)
    wrong = [f.divergence_class for f in result.findings if f.divergence_class is not None
             and f.divergence_class.op == "schedule.create" and not f.divergence_class.status_differs]
    causes = {known.cause for known in refusal}
    assert any(found.cause in causes for found in wrong), (causes, [f.label() for f in wrong])


#: 2025-01-01T00:00:00Z, and what the steps below create with.
T0, EMPTY, WORKERS = 1_735_689_600_000, {"headers": {}, "data": None}, {"resonate:target": "poll://any@w"}


class RefusesInternalAwaited:
    """duespec's implementation, except that task.suspend on a promise with no tags (an
    internal one) is 422 and changes nothing, as resonate-pg answers it."""

    def __init__(self) -> None:
        self.inner = SCHEDULES.impl()
        self.promises: dict[str, Any] = {}

    def reset(self, config: dict[str, Any]) -> None:
        self.inner.reset(config)

    def step(self, op: str, args: Any, now: Any) -> dict[str, Any]:
        if op == "promise.create":
            self.promises[args["id"]] = args["tags"]
        if op == "task.suspend" and any(not self.promises.get(a["awaited"]) for a in args["actions"]):
            return {"status": 422}
        return self.inner.step(op, args, now)


def test_a_300_the_target_refused_is_taken_back() -> None:
    """task.suspend's 300 takes effect (T-06: it clears the task's buffered resumes): where
    the target refused it, of a known class, the model's step is taken back like a 200's,
    and the task the model then reads is the target's (one resume still buffered)."""
    steps = [("task.create", {"pid": "w1", "ttl": 60_000, "action": {
                 "id": "t", "timeoutAt": T0 + 86_400_000, "param": EMPTY, "tags": WORKERS}}, T0),
             ("promise.create", {"id": "a", "timeoutAt": T0 + 60_000, "param": EMPTY, "tags": WORKERS}, T0),
             ("promise.register_callback", {"awaited": "a", "awaiter": "t"}, T0),
             ("promise.settle", {"id": "a", "state": "resolved", "value": EMPTY}, T0),  # t: one resume buffered
             ("promise.create", {"id": "due", "timeoutAt": T0 + 1, "param": EMPTY, "tags": {}}, T0),
             ("task.suspend", {"id": "t", "version": 1, "actions": [{"awaited": "due", "awaiter": "t"}]}, T0 + 1),
             ("task.get", {"id": "t"}, T0 + 1)]

    def judged(masks: Any) -> list[Any]:
        judge = StepJudge(SCHEDULES.model(), RefusesInternalAwaited(), masks=masks, observe=False,
                          refuses=SCHEDULES.refuses, accepts=SCHEDULES.accepts)
        assert judge.reset({"profile": "lean", "retry_timeout": 5000}) is None
        verdicts = []
        for op, args, now in steps:
            expected, verdict = judge.step(op, args, now)
            verdicts.append((op, expected, verdict, judge.taken_back))
        return verdicts

    first = judged(None)
    op, expected, refusal, _ = first[5]
    assert expected == {"status": 300} and isinstance(refusal, Difference), refusal
    known = judged(Masks("lean", known=[refusal.divergence_class]))
    assert [taken_back for *_, taken_back in known] == [False] * 5 + [True, False]
    op, expected, verdict, _ = known[6]
    assert verdict is None and expected["task"]["resumes"] == 1, (expected, verdict)

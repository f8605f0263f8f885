"""Response-only campaigns: a target that cannot show its state is still checked.

Each planted target below has no observe() (it raises, as a server without duespec's
snapshot answers an error), so `duespec conform` falls back to comparing every answer and
reading back, through the system's public reads, what each step touched. Each bug must be
caught, and the report must name the read (or the answer) that showed it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from duespec.cli import main
from duespec.systems import get_system

DUEBOOK, SCHEDULES = get_system("duebook"), get_system("schedules")


class _NoSnapshot:
    system = DUEBOOK

    def __init__(self) -> None:
        self.inner = self.system.impl()

    def reset(self, config: dict[str, Any]) -> None:
        self.inner.reset(config)

    def step(self, op: str, args: Any, now: Any) -> dict[str, Any]:
        return self.inner.step(op, args, now)

    def observe(self) -> dict[str, Any]:
        raise NotImplementedError("this server has no snapshot of its state")


class ListingLosesAnEntry(_NoSnapshot):
    """Right answers to `get`; a listing of two or more drops its last entry."""

    def step(self, op: str, args: Any, now: Any) -> dict[str, Any]:
        response = self.inner.step(op, args, now)
        if op == "claimable" and isinstance(response.get("ok"), list) and len(response["ok"]) >= 2:
            return {"ok": response["ok"][:-1]}
        return response


class CancelThatKeeps(_NoSnapshot):
    """Answers a cancel as done, and keeps the deferral: only a read shows it."""

    def step(self, op: str, args: Any, now: Any) -> dict[str, Any]:
        if op == "cancel" and isinstance(args, dict) and type(args.get("id")) is int:
            probe = self.inner.step("get", {"id": args["id"]}, now)
            if "ok" in probe and probe["ok"].get("owner") == args.get("caller"):
                return {"ok": probe["ok"]}
        return self.inner.step(op, args, now)


class SettleAnswersTheOldRecord(_NoSnapshot):
    """Settles as it should, and answers with the promise as it was before."""

    system = SCHEDULES

    def step(self, op: str, args: Any, now: Any) -> dict[str, Any]:
        if op == "promise.settle" and isinstance(args, dict) and isinstance(args.get("id"), str):
            before = self.inner.step("promise.get", {"id": args["id"]}, now)
            response = self.inner.step(op, args, now)
            if response.get("status") in (200, 201) and "promise" in before:
                return {**response, "promise": before["promise"]}
            return response
        return self.inner.step(op, args, now)


class FiresLate(_NoSnapshot):
    """Fires what is due a millisecond late: a tick sees the clock 1 ms behind."""

    system = SCHEDULES

    def step(self, op: str, args: Any, now: Any) -> dict[str, Any]:
        if op == "tick" and type(now) is int and now > 0:
            return self.inner.step(op, args, now - 1)
        return self.inner.step(op, args, now)


class AcceptsANegativeDelay(_NoSnapshot):
    """Takes a negative delay as 0 where the spec refuses it (as resonate-pg takes a
    task.create with a pid of 7): a difference its maintainers may declare, whose entry
    every later listing and claim then shows."""

    def step(self, op: str, args: Any, now: Any) -> dict[str, Any]:
        if op == "schedule" and isinstance(args, dict) and type(args.get("delay")) is int and args["delay"] < 0:
            return self.inner.step(op, {**args, "delay": 0}, now)
        return self.inner.step(op, args, now)


class RefusesBob(_NoSnapshot):
    """Refuses every schedule of the owner "bob" (as resonate-pg refuses a listener address
    the spec accepts): declared, and the model then holds an entry the target has not."""

    def step(self, op: str, args: Any, now: Any) -> dict[str, Any]:
        if op == "schedule" and isinstance(args, dict) and args.get("owner") == "bob":
            return {"error": "invalid", "message": "we do not schedule for bob"}
        return self.inner.step(op, args, now)


def declaring(reason: str, requirement: str | None) -> str:
    return "".join(f'''
[[difference]]
reason = "{reason}"
op = "schedule"
{f'requirement = "{requirement}"' if requirement else ""}
response = "{path}"
''' for path in ("$.error", "$.ok"))


@pytest.mark.parametrize(("target", "declared", "past_it"), [
    # refused by the spec: once its class is found, not sent again (the model alone answers)
    ("AcceptsANegativeDelay", declaring("a negative delay is taken as 0", "D-19"),
     r"[1-9][\d,]* requests the spec refuses, not sent \(--inputs valid, or of a class already found or known\)"),
    # taken by the spec: every run that meets it ends there
    ("RefusesBob", declaring("bob is refused, whatever else the book would say", None),
     r"[1-9][\d,]* runs ended early, the steps after it not taken \(declared: response schedule"),
])
def test_a_declared_request_one_side_took_hides_no_consequence_in_a_response_only_check(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str, declared: str, past_it: str) -> None:
    """The request one side took and the other did not is declared; its consequences (an
    entry one side holds, in every later read) are not new classes, and the campaign holds.
    Without System.accepts, `response claimable $.ok` or `response get $` was reported."""
    path = tmp_path / "declared.toml"
    path.write_text(declared)
    code = conform(tmp_path, "duebook", target, "--observe", "none", "--declared", str(path), "--examples", "60")
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.splitlines()[1].startswith("HOLDS"), out
    assert re.search(past_it, out), out


def conform(tmp_path: Path, system: str, target: str, *extra: str) -> int:
    return main(["conform", system, "--target", f"{__name__}:{target}", "--examples", "200",
                 "--progress", "0", "--no-coverage", "--max-classes", "1",
                 "--trace-dir", str(tmp_path / "failures"), *extra])


@pytest.mark.parametrize(("system", "target", "shown_by"), [
    ("duebook", "ListingLosesAnEntry", ("response claimable $.ok",)),
    # The cancel's own answer is right: a read of the book afterwards shows the keep.
    ("duebook", "CancelThatKeeps", ("response get $", "response claimable $.ok", "response expirable $.ok")),
    # Each takes 13-19 s: make test-long.
    pytest.param("schedules", "SettleAnswersTheOldRecord", ("response promise.settle $.promise",),
                 marks=pytest.mark.long),
    pytest.param("schedules", "FiresLate", ("response tick $.fired", "response promise.get", "response schedule.get"),
                 marks=pytest.mark.long),
])
def test_a_bug_only_answers_or_reads_show_is_caught_without_a_snapshot(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], system: str, target: str,
        shown_by: tuple[str, ...]) -> None:
    code = conform(tmp_path, system, target)
    out = capsys.readouterr().out
    assert code == 1, out
    assert out.startswith("response-only:"), out
    first = next(line for line in out.splitlines() if line.startswith("class 1 of"))
    assert any(read in first for read in shown_by), first


@pytest.mark.long
def test_the_correct_implementation_holds_response_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conform", "schedules", "--target", "impl", "--observe", "none", "--examples", "60",
                 "--progress", "0", "--no-coverage", "--trace-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and "HOLDS: schedules [lean]" in out, out


def test_state_is_required_when_asked_for(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert conform(tmp_path, "duebook", "CancelThatKeeps", "--observe", "state") == 2
    assert "target unusable" in capsys.readouterr().err


def test_after_a_timer_pass_the_reads_are_of_what_the_model_changed() -> None:
    """A tick reads back every object the model's rule added, changed or removed, and no
    other: the timed-out promise, its task and the schedule's new occurrence; not the
    promise still pending, nor the task no timer touched. A delivered timeout reads what
    it names too."""
    from duespec.systems.schedules.reads import reads

    pending = {"id": "p", "state": "pending", "timeoutAt": 9}
    timed_out = {"id": "q", "state": "pending", "timeoutAt": 1}
    before = {"promises": [pending, timed_out], "tasks": [{"id": "q", "state": "pending"}, {"id": "u"}],
              "schedules": [{"id": "s", "nextRunAt": 1}]}
    after = {"promises": [pending, {**timed_out, "state": "rejected_timedout"}, {"id": "s.1", "state": "pending"}],
             "tasks": [{"id": "q", "state": "fulfilled"}, {"id": "u"}], "schedules": [{"id": "s", "nextRunAt": 2}]}
    tick = {"op": "tick", "args": {}, "now": 1, "result": {"status": 200, "fired": []}}
    assert reads(tick, before, after) == [("promise.get", {"id": "q"}), ("promise.get", {"id": "s.1"}),
                                          ("task.get", {"id": "q"}), ("schedule.get", {"id": "s"})]
    assert reads(tick, after, after) == []
    # a timeout delivered to a promise already settled changes nothing in the model: the
    # promise is read all the same, where a server that rewrites it would show it
    delivered = {"op": "promise.timeout", "args": {"id": "p"}, "now": 1, "result": {"status": 200}}
    assert reads(delivered, after, after) == [("promise.get", {"id": "p"})]

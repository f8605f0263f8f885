"""What a worker sees: the Target hook `messages`, compared by the judge.

An answer and a read never show that a server sent a worker something it should not have
(an execute for a promise created already expired, say): only the messages do. These tests
check the comparison's rules (duespec.judge.messages_agree), the model's and `duespec
serve`'s messages, the HTTP and stdio hooks, and that `conform --observe none` finds a
planted dispatch bug in `duespec serve` by its messages alone, naming P-02.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from duespec.cli import main
from duespec.coverage import isolated
from duespec.impl.schedules import ScheduleServer
from duespec.judge import (
    Difference, DivergenceClass, FindingKind, Masked, StepJudge, messages_agree, messages_verdict,
)
from duespec.systems.schedules import ModelTarget
from duespec.targets.interface import TargetError
from duespec.targets.stdio import StdioTargetFactory
from duespec.wire.http_target import HttpTarget
from duespec.wire.serve import ServerThread, WireServer

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dispatch_bugs import DispatchesExpired  # noqa: E402

T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z
MINUTE = 60_000
LEAN = {"profile": "lean", "retry_timeout": 5000}
W = "poll://any@workers"
EMPTY = {"headers": {}, "data": None}
STDIO_TARGET = Path(__file__).resolve().parent / "stdio_messages_target.py"


def execute(task: str, version: int = 0, address: str = W) -> dict:
    return {"address": address, "message": {"kind": "execute", "taskId": task, "version": version}}


def create(id: str, timeout_at: int, target: str | None = W) -> tuple[str, dict]:
    tags = {"resonate:target": target} if target else {}
    return "promise.create", {"id": id, "timeoutAt": timeout_at, "param": EMPTY, "tags": tags}


# --- the comparison's rules ---------------------------------------------------------------

def test_the_order_within_one_group_at_one_address_is_compared() -> None:
    catch_up = [execute("p1"), execute("p2"), execute("p3")]
    assert messages_agree([catch_up], catch_up)
    assert not messages_agree([catch_up], [execute("p2"), execute("p1"), execute("p3")])


def test_the_order_between_groups_and_between_addresses_is_free() -> None:
    one, other = [execute("p1"), execute("p2")], [execute("r1")]
    assert messages_agree([one, other], [execute("r1"), execute("p1"), execute("p2")])
    two_workers = [execute("a", address="poll://a"), execute("b", address="poll://b")]
    assert messages_agree([two_workers], list(reversed(two_workers)))


def test_a_message_missing_extra_repeated_or_of_another_type_differs() -> None:
    sent = [execute("p1")]
    assert not messages_agree([sent], [])
    assert not messages_agree([[]], sent)
    assert not messages_agree([sent], sent + sent)
    assert not messages_agree([sent], [execute("p1", version=1)])
    assert not messages_agree([[execute("p1", version=1)]], [execute("p1", version=True)])  # strict JSON


def test_a_retry_sent_again_is_one_more_message_not_the_same_one() -> None:
    """Two timeouts re-dispatch one task in one tick: each message counts."""
    assert messages_agree([[execute("t")], [execute("t")]], [execute("t"), execute("t")])
    assert not messages_agree([[execute("t")], [execute("t")]], [execute("t")])


def test_a_difference_is_a_messages_class_named_by_the_step_requirements() -> None:
    step = {"i": 0, "op": "promise.create", "args": {}, "now": T0, "result": {}}
    verdict = messages_verdict(step, [[]], [execute("p")], ("P-02.expired_at_creation",))  # an extra: the step's
    assert isinstance(verdict, Difference)
    assert verdict.divergence_class.label() == "messages promise.create $ [P-02] via P-02.expired_at_creation"
    assert "expected messages: []" in verdict.describe()
    versions = messages_verdict(step, [[(execute("p"), ())]], [execute("p", version=3)], ("P-02",))
    assert isinstance(versions, Difference) and versions.path == "$[].message.version"


def test_a_missing_message_is_a_class_of_the_branch_that_sent_it_each_its_own() -> None:
    """In a tick that fires many timeouts, the class of a message the target did not send
    is the branch behind that message, not every branch the tick took; two such messages of
    two branches are two classes, and a masked one does not hide the other."""
    step = {"i": 0, "op": "tick", "args": {}, "now": T0, "result": {}}
    groups = [[(execute("a"), ("P-02.dispatched", "TO-01.task_fulfilled"))], [(execute("b"), ("TO-04.redispatched",))]]
    tick_cause = ("ENV-01.promise", "ENV-01.retry", "P-02.dispatched", "TO-01.task_fulfilled", "TO-04.redispatched")
    first = messages_verdict(step, groups, [execute("b")], tick_cause)
    assert isinstance(first, Difference)
    assert first.divergence_class.cause == ("P-02.dispatched", "TO-01.task_fulfilled")

    class KnowsTheWithdrawal:
        def classify(self, kind, op, cause, paths):
            if cause == ("P-02.dispatched", "TO-01.task_fulfilled"):
                return None, ["known: the withdrawal"]
            return DivergenceClass(kind, op, (), paths[0], tuple(paths), cause), []
    masks = KnowsTheWithdrawal()
    assert isinstance(messages_verdict(step, groups, [execute("b")], tick_cause, masks), Masked)
    second = messages_verdict(step, groups, [], tick_cause, masks)
    assert isinstance(second, Difference) and second.divergence_class.cause == ("TO-04.redispatched",)
    extra = messages_verdict(step, groups, [execute("a"), execute("b"), execute("c")], tick_cause, masks)
    assert isinstance(extra, Difference) and extra.divergence_class.cause == tick_cause


def test_a_message_moot_by_the_end_of_its_step_names_the_branch_that_made_it_so() -> None:
    """A catch-up dispatches an occurrence whose promise times out in the same tick: the
    execute's cause is its dispatch and the timeout that fulfilled its task (a server that
    withdraws it, resonate-pg's F-4, differs in that class, not in a dispatch's)."""
    model = ModelTarget()
    model.reset(LEAN)
    model.step("schedule.create", {"id": "s", "cron": "* * * * *", "promiseId": "p{{.timestamp}}",
                                   "promiseTimeout": 1, "promiseParam": EMPTY,
                                   "promiseTags": {"resonate:target": W}}, T0)
    model.step("tick", {}, T0 + 2 * MINUTE + 1)
    [catch_up] = model.message_groups()
    assert catch_up == [(execute(f"p{T0 + k * MINUTE}"), ("P-02.dispatched", "TO-01.task_fulfilled")) for k in (1, 2)]


def test_a_target_whose_workers_poll_a_keyed_outbox_gets_one_message_per_key() -> None:
    """A retry that re-dispatches a task its catch-up dispatched in the same tick writes the
    same key again: a worker polling after the tick reads it once, where it was first
    written; a server pushing each message sends it twice (TargetBase.messages_keyed)."""
    def catch_up_with_retries(keyed: bool) -> list:
        model = ModelTarget()
        model.reset(LEAN)
        model.step("schedule.create", {"id": "s", "cron": "* * * * *", "promiseId": "p{{.timestamp}}",
                                       "promiseTimeout": 3_600_000, "promiseParam": EMPTY,
                                       "promiseTags": {"resonate:target": W}}, T0)
        model.step("tick", {}, T0 + 3 * MINUTE)
        return [[message for message, _ in group] for group in model.message_groups(keyed=keyed)]
    occurrences = [execute(f"p{T0 + k * MINUTE}") for k in (1, 2, 3)]
    assert catch_up_with_retries(keyed=True) == [occurrences]
    assert catch_up_with_retries(keyed=False) == [occurrences, occurrences[:1], occurrences[1:2]]


def test_messages_that_are_not_a_list_of_objects_are_the_target_failure() -> None:
    step = {"i": 0, "op": "tick", "args": {}, "now": T0, "result": {}}
    verdict = messages_verdict(step, [[]], {"messages": []})
    assert isinstance(verdict, Difference) and verdict.kind == FindingKind.TARGET_RAISED


# --- the model ----------------------------------------------------------------------------

def test_the_model_sends_a_catch_up_oldest_first_as_one_group() -> None:
    model = ModelTarget()
    model.reset(LEAN)
    model.step("schedule.create", {"id": "s", "cron": "* * * * *", "promiseId": "p{{.timestamp}}",
                                   "promiseTimeout": 3_600_000, "promiseParam": EMPTY,
                                   "promiseTags": {"resonate:target": W}}, T0)
    assert model.messages() == []
    model.step("tick", {}, T0 + 3 * MINUTE)
    occurrences = [execute(f"p{T0 + k * MINUTE}") for k in (1, 2, 3)]
    # then the retries the catch-up armed at cronTime + 5 s that are due by now, one group each
    groups = model.message_groups()
    assert [[message for message, _ in group] for group in groups] == [occurrences, occurrences[:1], occurrences[1:2]]
    assert [[cause for _, cause in group] for group in groups] == [
        [("P-02.dispatched",)] * 3, [("TO-04.redispatched",)], [("TO-04.redispatched",)]]
    assert model.messages() == []  # each step's messages once


def test_the_model_sends_nothing_for_a_promise_created_already_expired() -> None:
    model = ModelTarget()
    model.reset(LEAN)
    model.step(*create("late", T0 - 1), T0)
    assert model.messages() == []
    model.step(*create("due", T0 + MINUTE), T0)
    assert model.messages() == [execute("due")]


# --- duespec serve, through debug.messages -----------------------------------------------

def test_serve_hands_over_what_it_sent_once_and_the_http_target_reads_it() -> None:
    with ServerThread(WireServer()) as served:
        target = HttpTarget(served.url, 10)
        target.reset(LEAN)
        target.step("schedule.create", {"id": "s", "cron": "* * * * *", "promiseId": "p{{.timestamp}}",
                                        "promiseTimeout": 3_600_000, "promiseParam": EMPTY,
                                        "promiseTags": {"resonate:target": W}}, T0)
        target.step("tick", {}, T0 + 3 * MINUTE)
        occurrences = [execute(f"p{T0 + k * MINUTE}") for k in (1, 2, 3)]
        assert target.messages() == [*occurrences, *occurrences[:2]]
        assert target.messages() == []
        target.step(*create("due", T0 + 10 * MINUTE), T0 + 3 * MINUTE)
        target.reset(LEAN)  # a reset forgets what was not handed over
        assert target.messages() == []
        target.close()


def test_serve_sends_a_catch_up_oldest_first_across_a_digit_of_the_timestamp() -> None:
    """Found by the long serve campaign below: the catch-up of a `0 0 31 * *` schedule from
    May to November 2001 crosses 10^12 ms, and impl/ created its occurrences in the text
    order of their ids ("tick-1004486400000" first), sending the October execute first."""
    months = [991_267_200_000, 996_537_600_000, 999_216_000_000, 1_004_486_400_000]  # the 31sts
    with ServerThread(WireServer()) as served:
        target = HttpTarget(served.url, 10)
        target.reset(LEAN)
        target.step("schedule.create", {"id": "s", "cron": "0 0 31 * *", "promiseId": "tick-{{.timestamp}}",
                                        "promiseTimeout": 60_000, "promiseParam": EMPTY,
                                        "promiseTags": {"resonate:target": W}}, 991_008_000_000)
        target.step("schedule.timeout", {"id": "s"}, 1_006_905_600_000)
        assert target.messages() == [execute(f"tick-{month}") for month in months]
        target.close()


def test_a_server_on_the_real_clock_does_not_offer_messages() -> None:
    with ServerThread(WireServer(clock_mode="real")) as served:
        target = HttpTarget(served.url, 10)
        with pytest.raises(TargetError) as refused:
            target.messages()
        assert refused.value.says_not_offered
        target.close()


def _judge_on(server_class: type[ScheduleServer], *steps: tuple[str, dict, int]):
    """The last verdict of `steps` judged as a response-only campaign judges them."""
    with ServerThread(WireServer(server_class=server_class)) as served, isolated() as tags:
        target = HttpTarget(served.url, 10)
        judge = StepJudge(ModelTarget(), target, observe=False, messages=True, tags=tags)
        assert judge.reset(LEAN) is None
        verdict = None
        for op, args, now in steps:
            _, verdict = judge.step(op, args, now)
        target.close()
        return verdict


#: The class of an execute sent for a promise created already expired: the model's branch
#: (its cause) is the expired creation, whose task is timed out at once.
EXPIRED_DISPATCH = ("messages promise.create $ [P-02] via P-02.expired_at_creation, "
                    "P-02.expired_at_creation_task")


def test_the_planted_dispatch_bug_shows_in_the_messages_alone() -> None:
    op, args = create("late", T0 - 1)
    verdict = _judge_on(DispatchesExpired, (op, args, T0))
    assert isinstance(verdict, Difference), verdict
    assert verdict.divergence_class.label() == EXPIRED_DISPATCH
    assert verdict.actual == [execute("late")] and verdict.expected == []
    assert _judge_on(ScheduleServer, (op, args, T0)) is None


def _conform_serve(server_class: type[ScheduleServer], tmp_path: Path, examples: str) -> int:
    with ServerThread(WireServer(server_class=server_class)) as served:
        return main(["conform", "schedules", "--target", served.url, "--observe", "none", "--examples", examples,
                     "--seed", "0", "--max-classes", "1", "--trace-dir", str(tmp_path), "--database", "none",
                     "--progress", "0", "--no-coverage"])


@pytest.mark.long
def test_conform_response_only_finds_the_planted_dispatch_bug_in_serve(tmp_path, capsys) -> None:
    """About 140 runs (two minutes on a loaded machine) before a run creates a promise
    already expired with a target."""
    code = _conform_serve(DispatchesExpired, tmp_path, "300")
    out = capsys.readouterr().out
    assert code == 1, out[-3000:]
    assert f"class 1 of 1: {EXPIRED_DISPATCH} (not declared)" in out, out[-3000:]
    # a trace has no messages: its replay would pass, which says nothing of the target's reset
    assert "replaying it cannot show this class" in out and "state survives reset" not in out, out[-3000:]


@pytest.mark.long
def test_conform_response_only_holds_against_serve_with_its_messages_compared(tmp_path, capsys) -> None:
    code = _conform_serve(ScheduleServer, tmp_path, "60")
    out = capsys.readouterr().out
    assert code == 0, out[-3000:]


# --- stdio targets ------------------------------------------------------------------------

def test_a_stdio_program_answers_messages_and_one_that_does_not_has_no_hook() -> None:
    factory = StdioTargetFactory([sys.executable, str(STDIO_TARGET)], "schedules")
    try:
        target = factory()
        judge = StepJudge(ModelTarget(), target, observe=False, messages=True)
        judge.reset(LEAN)
        assert judge.step(*create("due", T0 + MINUTE), T0)[1] is None
        assert judge.sent is not None  # compared, and agreed
        _, verdict = judge.step(*create("late", T0 - 1), T0)
        assert verdict is None
    finally:
        factory.close()
    silent = StdioTargetFactory([sys.executable, str(STDIO_TARGET), "--no-messages"], "schedules")
    try:
        target = silent()
        judge = StepJudge(ModelTarget(), target, observe=False, messages=True)
        judge.reset(LEAN)
        assert judge.step(*create("due", T0 + MINUTE), T0)[1] is None
        assert judge.sent is None  # the program said it has none: not asked again
        assert judge.step(*create("due2", T0 + MINUTE), T0)[1] is None
        with pytest.raises(TargetError) as refused:
            target.messages()  # asked directly: refused at once, and the program lives on
        assert refused.value.says_not_offered and silent._process is not None and silent._process.alive
    finally:
        silent.close()


def test_a_stdio_program_sending_a_wrong_message_is_caught() -> None:
    factory = StdioTargetFactory([sys.executable, str(STDIO_TARGET), "--dispatch-expired"], "schedules")
    try:
        with isolated() as tags:
            judge = StepJudge(ModelTarget(), factory(), observe=False, messages=True, tags=tags)
            judge.reset(LEAN)
            _, verdict = judge.step(*create("late", T0 - 1), T0)
        assert isinstance(verdict, Difference)
        assert verdict.divergence_class.label() == EXPIRED_DISPATCH
    finally:
        factory.close()


def test_the_stdio_program_speaks_the_documented_exchange() -> None:
    factory = StdioTargetFactory([sys.executable, str(STDIO_TARGET)], "schedules")
    try:
        process = factory()._process
        process.request({"type": "reset", "config": LEAN})
        op, args = create("due", T0 + MINUTE)
        process.request({"type": "step", "op": op, "args": args, "now": T0})
        reply = process.request({"type": "messages"})
        assert reply == {"type": "messages", "messages": [execute("due")]}, json.dumps(reply)
    finally:
        factory.close()


class AcceptsEverythingAndDispatches:
    """Answers every promise.create 200 and sends an execute for it: a server that accepts
    what the spec refuses (a known class) and dispatches what it accepted."""

    def __init__(self) -> None:
        self.sent: list[dict] = []

    def reset(self, config: dict) -> None:
        self.sent = []

    def step(self, op: str, args: dict, now: int) -> dict:
        self.sent.append(execute(args["id"]))
        return {"status": 200}

    def observe(self) -> dict:
        raise NotImplementedError

    def messages(self) -> list:
        sent, self.sent = self.sent, []
        return sent


def test_what_a_request_masked_by_a_found_class_sent_is_that_class_consequence() -> None:
    from duespec.campaigns.classes import Masks
    from duespec.judge import FOUND, Masked

    op, args = create("bad", T0 + MINUTE)
    args = {**args, "tags": {"resonate:target": W, "resonate:delay": "-5"}}  # the spec refuses it: 400
    masks = Masks("lean")
    with isolated() as tags:
        judge = StepJudge(ModelTarget(), AcceptsEverythingAndDispatches(), observe=False, messages=True,
                          tags=tags, masks=masks)
        judge.reset(LEAN)
        _, first = judge.step(op, args, T0)
        assert isinstance(first, Difference)
        assert first.divergence_class.label() == "response promise.create $.status [P-02] via P-02.invalid"
        masks.add(first.divergence_class)
        judge.reset(LEAN)
        _, again = judge.step(op, args, T0)
    assert isinstance(again, Masked) and again.ends_run, again
    assert again.labels[0] == FOUND + first.divergence_class.label()

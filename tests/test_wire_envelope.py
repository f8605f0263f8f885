"""The envelope mapping alone: operations.md records and answers of every kind survive the
trip to the wire and back, requests with nested actions reach the server as sent, the wire's
leniency fills what the SDK leaves out, and `duespec:strict` turns it off."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import pytest

from duespec.systems.schedules.ops import ODD_TASK_REQUESTS
from duespec.wire.envelope import (
    PROTOCOL_VERSION, STRICT, Request, WireError, op_envelope, op_response, parse_request, request_to_op,
    response_envelope,
)

text = st.text(max_size=8)
tags = st.dictionaries(text, text, max_size=3)
value = st.fixed_dictionaries({"headers": tags, "data": st.none() | text})
times = st.integers(0, 253_402_300_799_999)
promise = st.fixed_dictionaries({
    "id": text, "state": st.sampled_from(["pending", "resolved", "rejected_timedout"]), "param": value,
    "value": value, "tags": tags, "timeoutAt": times, "createdAt": times, "settledAt": st.none() | times})
task = st.fixed_dictionaries({
    "id": text, "state": st.sampled_from(["pending", "acquired", "suspended", "halted", "fulfilled"]),
    "version": st.integers(0, 9), "resumes": st.integers(0, 3), "ttl": st.none() | times,
    "pid": st.none() | text})
schedule = st.fixed_dictionaries({
    "id": text, "cron": text, "promiseId": text, "promiseTimeout": times, "promiseParam": value,
    "promiseTags": tags, "nextRunAt": times, "lastRunAt": st.none() | times, "createdAt": times})


@settings(max_examples=60, deadline=None)
@given(promise=promise, schedule=schedule, cursor=st.none() | text)
def test_responses_survive_the_round_trip(promise, schedule, cursor) -> None:
    for op, response in (("promise.get", {"status": 200, "promise": promise}),
                         ("schedule.create", {"status": 200, "schedule": schedule}),
                         ("schedule.search", {"status": 200, "schedules": [schedule], "cursor": cursor}),
                         ("tick", {"status": 200, "fired": [{"kind": "schedule", "id": schedule["id"]}]}),
                         ("schedule.get", {"status": 404})):
        answer = response_envelope("k", "c", op, response)
        assert answer["head"] == {"corrId": "c", "status": response["status"], "version": PROTOCOL_VERSION}
        back = op_response(op, answer["head"]["status"], answer["data"])
        assert back == ({**response, "message": "Not found"} if response["status"] == 404 else response)


@settings(max_examples=60, deadline=None)
@given(promise=promise, task=task, inner_status=st.sampled_from([200, 404]))
def test_task_and_promise_answers_survive_the_round_trip(promise, task, inner_status) -> None:
    inner = {"status": 200, "promise": promise} if inner_status == 200 else {"status": 404}
    for op, response in (("task.create", {"status": 200, "promise": promise, "task": task}),
                         ("task.acquire", {"status": 200, "promise": promise, "task": task}),
                         ("task.get", {"status": 200, "task": task}),
                         ("task.fence", {"status": 200, "action": {"kind": "create", **inner}}),
                         ("task.fence", {"status": 200, "action": {"kind": "settle", **inner}}),
                         ("task.suspend", {"status": 300}), ("task.suspend", {"status": 200}),
                         ("task.fulfill", {"status": 200, "promise": promise}),
                         ("promise.settle", {"status": 200, "promise": promise}),
                         ("promise.register_callback", {"status": 200, "promise": promise}),
                         ("task.heartbeat", {"status": 200}), ("task.release", {"status": 200}),
                         ("task.create", {"status": 409}), ("task.suspend", {"status": 422}),
                         ("promise.search", {"status": 501}), ("task.search", {"status": 501})):
        answer = response_envelope(op, "c", op, response)
        status = answer["head"]["status"]
        assert status == response["status"]
        if status >= 400:
            assert isinstance(answer["data"], str)            # the deployed server's error data
            assert op_response(op, status, answer["data"]) == {**response, "message": answer["data"]}
            continue
        # what the deployed server writes: preload beside task.create/acquire/fence and a 300
        assert ("preload" in answer["data"]) == (op in ("task.create", "task.acquire", "task.fence")
                                                 or status == 300)
        if "task" in answer["data"]:
            assert {k for k in ("ttl", "pid") if task[k] is None}.isdisjoint(answer["data"]["task"])
        if op == "task.fence":
            nested = answer["data"]["action"]
            assert nested["kind"] == f"promise.{response['action']['kind']}"
            assert nested["head"]["status"] == inner_status
        assert op_response(op, status, answer["data"]) == response


def test_an_empty_preload_is_the_lean_default_at_every_status_of_an_op_that_declares_one() -> None:
    """types.lean at 83d64c3: TaskSuspendRes is `{status, preload := []}` for its 200 as for its
    300, so a server writing `"preload": []` beside a 200 (resonate-pg does) answers what the
    Lean answers; reading it back as anything else was a divergence of duespec's own making."""
    assert op_response("task.suspend", 200, {"preload": []}) == {"status": 200}
    assert op_response("task.suspend", 300, {"preload": []}) == {"status": 300}
    assert op_response("task.suspend", 200, {"preload": [{"id": "p"}]}) == {"status": 200, "preload": [{"id": "p"}]}


def test_a_preload_the_model_never_sends_is_kept_so_it_diverges() -> None:
    assert op_response("task.acquire", 200, {"task": {"id": "t", "state": "acquired", "version": 1,
                                                      "resumes": 0}, "preload": [{"id": "p"}]})["preload"] == [{"id": "p"}]
    assert "preload" in op_response("task.get", 200, {"task": {"id": "t", "state": "pending", "version": 0,
                                                               "resumes": 0}, "preload": []})


@settings(max_examples=40, deadline=None)
@given(args=st.dictionaries(text, st.none() | text | times | tags, max_size=4), now=times)
def test_requests_reach_the_server_as_sent_when_strict(args, now) -> None:
    for op in ("schedule.create", "promise.create", "schedule.get", "tick"):
        if op == "tick":
            args = {k: v for k, v in args.items() if k != "time"}
        envelope = op_envelope(op, args, now, "c1")
        request = Request(envelope["kind"], "c1", envelope["data"], now, strict=True)
        assert request_to_op(request, clock_now=0) == (op, args, now)


nested_action = st.fixed_dictionaries({"id": text, "timeoutAt": times}) | st.none() | text | times | \
    st.dictionaries(text, text, max_size=3)
fence_action = st.one_of(
    st.builds(lambda kind, rest: {"kind": kind, **rest}, st.sampled_from(["create", "settle", "drop", "promise.create"]),
              st.dictionaries(st.sampled_from(["id", "state", "value", "data", "head"]), text | st.dictionaries(text, text),
                              max_size=3)),
    nested_action)


@settings(max_examples=80, deadline=None)
@given(action=nested_action, fence=fence_action, actions=st.lists(nested_action, max_size=3) | nested_action,
       version=times)
def test_task_requests_reach_the_server_as_sent_when_strict(action, fence, actions, version) -> None:
    """Every operations.md args of a task request, valid or not, reaches the server as the same
    args, or (a fence action the envelope cannot carry) as a request the server rejects, as the
    model does."""
    for op, args in (("task.create", {"pid": "w", "ttl": 5, "action": action}),
                     ("task.fulfill", {"id": "t", "version": version, "action": action}),
                     ("task.suspend", {"id": "t", "version": version, "actions": actions}),
                     ("task.fence", {"id": "t", "version": version, "action": fence})):
        envelope = op_envelope(op, args, 7, "c1")
        request = Request(envelope["kind"], "c1", envelope["data"], 7, strict=True)
        carried = isinstance(fence, dict) and fence.get("kind") in ("create", "settle")
        # a nested data that is no object: the wire refuses it itself, naming where (400, as the model)
        not_object = (op in ("task.create", "task.fulfill") and not isinstance(action, dict)) or (
            op == "task.suspend" and isinstance(actions, list) and not all(isinstance(a, dict) for a in actions))
        if (op == "task.fence" and not carried) or not_object:
            with pytest.raises(WireError) as rejected:
                request_to_op(request, clock_now=0)
            assert rejected.value.status == 400
        else:
            assert request_to_op(request, clock_now=0) == (op, args, 7)


def test_nested_actions_travel_as_request_envelopes() -> None:
    data = op_envelope("task.fence", {"id": "t", "version": 1, "action": {"kind": "settle", "id": "p",
                                                                          "state": "resolved", "value": {}}},
                       5, "c9")["data"]
    assert data["action"] == {"kind": "promise.settle", "head": {"corrId": "c9", "version": PROTOCOL_VERSION},
                              "data": {"id": "p", "state": "resolved", "value": {}}}
    data = op_envelope("task.suspend", {"id": "t", "version": 1, "actions": [{"awaited": "a", "awaiter": "t"}]},
                       5, "c9")["data"]
    assert [a["kind"] for a in data["actions"]] == ["promise.register_callback"]
    for op, args in ODD_TASK_REQUESTS:                 # the campaign's odd requests all get through
        envelope = op_envelope(op, args, 5, "c1")
        if isinstance(envelope["data"], dict):
            request = Request(envelope["kind"], "c1", envelope["data"], 5, strict=True)
            try:
                assert request_to_op(request, clock_now=0)[1] == args
            except WireError as error:
                assert error.status == 400 and op == "task.fence"


def test_wire_defaults_fill_what_the_sdk_leaves_out_unless_strict() -> None:
    body = b'{"kind": "promise.create", "head": {"corrId": "1", "version": "2026-04-01"}, ' \
           b'"data": {"id": "p", "timeoutAt": 5, "param": {"data": "eA=="}}}'
    op, args, now = request_to_op(parse_request(body), clock_now=42)
    assert (op, now) == ("promise.create", 42)
    assert args == {"id": "p", "timeoutAt": 5, "param": {"headers": {}, "data": "eA=="}, "tags": {}}
    strict = parse_request(body.replace(b'"version"', f'"{STRICT}": true, "version"'.encode()))
    assert request_to_op(strict, clock_now=42)[1] == {"id": "p", "timeoutAt": 5, "param": {"data": "eA=="}}


def test_the_sdk_s_task_requests_get_the_wire_defaults() -> None:
    """resonate-sdk leaves a Value's null fields out, also inside nested actions."""
    body = (b'{"kind": "task.create", "head": {"corrId": "1", "version": "2026-04-01"}, "data": {"pid": "w",'
            b' "ttl": 60000, "action": {"kind": "promise.create", "head": {"corrId": "2", "version": "2026-04-01"},'
            b' "data": {"id": "p", "timeoutAt": 9, "tags": {"resonate:target": "poll://any@w"}}}}}')
    assert request_to_op(parse_request(body), clock_now=1)[1]["action"] == {
        "id": "p", "timeoutAt": 9, "param": {"headers": {}, "data": None}, "tags": {"resonate:target": "poll://any@w"}}
    bad = body.replace(b'"kind": "promise.create"', b'"kind": "promise.settle"')
    with pytest.raises(WireError, match="promise.create request envelope"):
        request_to_op(parse_request(bad), clock_now=1)

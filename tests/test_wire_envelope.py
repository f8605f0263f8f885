"""The envelope mapping alone: operations.md records survive the trip to the wire and back,
the wire's leniency fills what the SDK leaves out, and `duespec:strict` turns it off."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from duespec.wire.envelope import (
    PROTOCOL_VERSION, STRICT, Request, op_envelope, op_response, parse_request, request_to_op,
    response_envelope,
)

text = st.text(max_size=8)
tags = st.dictionaries(text, text, max_size=3)
value = st.fixed_dictionaries({"headers": tags, "data": st.none() | text})
times = st.integers(0, 253_402_300_799_999)
promise = st.fixed_dictionaries({
    "id": text, "state": st.sampled_from(["pending", "resolved", "rejected_timedout"]), "param": value,
    "value": value, "tags": tags, "timeoutAt": times, "createdAt": times, "settledAt": st.none() | times})
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


@settings(max_examples=40, deadline=None)
@given(args=st.dictionaries(text, st.none() | text | times | tags, max_size=4), now=times)
def test_requests_reach_the_server_as_sent_when_strict(args, now) -> None:
    for op in ("schedule.create", "promise.create", "schedule.get", "tick"):
        if op == "tick":
            args = {k: v for k, v in args.items() if k != "time"}
        envelope = op_envelope(op, args, now, "c1")
        request = Request(envelope["kind"], "c1", envelope["data"], now, strict=True)
        assert request_to_op(request, clock_now=0) == (op, args, now)


def test_wire_defaults_fill_what_the_sdk_leaves_out_unless_strict() -> None:
    body = b'{"kind": "promise.create", "head": {"corrId": "1", "version": "2026-04-01"}, ' \
           b'"data": {"id": "p", "timeoutAt": 5, "param": {"data": "eA=="}}}'
    op, args, now = request_to_op(parse_request(body), clock_now=42)
    assert (op, now) == ("promise.create", 42)
    assert args == {"id": "p", "timeoutAt": 5, "param": {"headers": {}, "data": "eA=="}, "tags": {}}
    strict = parse_request(body.replace(b'"version"', f'"{STRICT}": true, "version"'.encode()))
    assert request_to_op(strict, clock_now=42)[1] == {"id": "p", "timeoutAt": 5, "param": {"data": "eA=="}}

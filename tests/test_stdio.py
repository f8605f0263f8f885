"""The stdio target: a program speaking docs/protocol.md, and every way it can misbehave."""

from __future__ import annotations

import shutil
import sys
import textwrap
import time
from pathlib import Path

import pytest

from duespec.targets.stdio import StdioTargetFactory
from duespec.systems.duebook import ModelTarget
from duespec.targets.interface import TargetError

ROOT = Path(__file__).resolve().parents[1]
NODE_DUEBOOK = ROOT / "examples" / "node-duebook" / "duebook.js"
INT64_MAX = 2**63 - 1

#: A target whose step misbehaves in the way argv[1] names; hello, reset, observe are fine.
FAKE_TARGET = textwrap.dedent('''
    import json, sys, time
    mode = sys.argv[1]
    hello = {"type": "hello", "protocol": 1, "systems": ["duebook"]}
    if mode == "old_protocol":
        hello["protocol"] = 0
    if mode == "other_system":
        hello["systems"] = ["schedules"]
    if mode == "banner":
        print("starting up...", flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        kind = request["type"]
        if kind == "hello":
            reply = hello
        elif kind == "reset":
            reply = {"type": "reset"}
        elif kind == "observe":
            reply = {"type": "observe", "state": {"max_open": 3, "next_id": 1, "open": []}}
        elif mode == "garbage":
            print("<html>" + "x" * 1000, flush=True); continue
        elif mode == "crash":
            sys.stderr.write("Traceback: something broke in step\\n"); sys.stderr.flush(); sys.exit(3)
        elif mode == "hang":
            time.sleep(60)
        elif mode == "endless_line":
            chunk = "a" * (1 << 20)
            while True:
                sys.stdout.write(chunk); sys.stdout.flush()
        elif mode == "wrong_type":
            reply = {"type": "observe", "state": {}}
        elif mode == "not_object":
            reply = [1, 2, 3]
        elif mode == "no_response":
            reply = {"type": "step", "response": "ok"}
        elif mode == "chatty":
            print(json.dumps({"type": "step", "response": {"error": "not_found"}}), flush=True)
            reply = {"type": "step", "response": {"error": "not_found"}}
        elif mode == "protocol_error":
            reply = {"type": "error", "message": "unknown op " + request["op"]}
        else:
            reply = {"type": "step", "response": {"error": "not_found"}}
        print(json.dumps(reply), flush=True)
''')


@pytest.fixture
def fake(tmp_path: Path):
    script = tmp_path / "fake_target.py"
    script.write_text(FAKE_TARGET)
    factories: list[StdioTargetFactory] = []

    def make(mode: str, timeout: float = 5.0) -> StdioTargetFactory:
        factory = StdioTargetFactory([sys.executable, str(script), mode], "duebook",
                                     timeout=timeout, start_timeout=timeout)
        factories.append(factory)
        return factory

    yield make
    for factory in factories:
        factory.close()


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    assert found, "node is required (docs/protocol.md's example target is JavaScript); install node 20+"
    return found


def step_fails(factory: StdioTargetFactory) -> str:
    target = factory()
    target.reset({"max_open": 3})
    with pytest.raises(TargetError) as caught:
        target.step("get", {"id": 1}, 0)
    return str(caught.value)


def test_a_well_behaved_program_answers_steps_and_state(fake) -> None:
    target = fake("fine")()
    target.reset({"max_open": 3})
    assert target.step("get", {"id": 1}, 0) == {"error": "not_found"}
    assert target.observe() == {"max_open": 3, "next_id": 1, "open": []}


def test_garbage_is_reported_with_the_line_truncated(fake) -> None:
    message = step_fails(fake("garbage"))
    assert "not JSON" in message and "<html>xxx" in message
    assert "(1006 chars)" in message and "x" * 400 not in message


def test_a_crash_is_reported_with_exit_code_and_stderr(fake) -> None:
    message = step_fails(fake("crash"))
    assert "exited with code 3" in message
    assert "something broke in step" in message
    assert '"op":"get"' in message  # the request it died on


def test_silence_past_the_timeout_is_reported(fake) -> None:
    message = step_fails(fake("hang", timeout=0.5))
    assert "did not answer within 0.5s" in message


def test_a_reply_line_that_never_ends_is_refused_at_the_line_limit(fake) -> None:
    """Unbounded, it filled 7.5 GB in the 10 s timeout and ended in a traceback."""
    import resource

    from duespec.limits import MAX_LINE_BYTES

    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    message = step_fails(fake("endless_line", timeout=30.0))
    assert f"longer than {MAX_LINE_BYTES:,} bytes" in message and "'aaaa" in message
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before
    assert grown_kb < 8 * MAX_LINE_BYTES // 1024, grown_kb


@pytest.mark.parametrize("mode, expected", [
    ("wrong_type", "answered a 'step' request with a reply of type 'observe'"),
    ("not_object", "JSON that is not an object"),
    ("no_response", "'response' is not a JSON object"),
    ("protocol_error", "reported a protocol error"),
])
def test_replies_of_the_wrong_shape_are_reported(fake, mode: str, expected: str) -> None:
    assert expected in step_fails(fake(mode))


@pytest.mark.parametrize("mode, expected", [
    ("old_protocol", "speaks protocol 0, duespec speaks 1"),
    ("other_system", "does not serve system 'duebook'"),
    ("banner", "answered hello with a line that is not JSON"),
])
def test_a_bad_handshake_is_reported(fake, mode: str, expected: str) -> None:
    with pytest.raises(TargetError, match=expected):
        fake(mode)()


def test_a_second_line_for_one_request_is_reported_at_the_next_request(fake) -> None:
    target = fake("chatty")()
    target.reset({"max_open": 3})
    assert target.step("get", {"id": 1}, 0) == {"error": "not_found"}
    time.sleep(0.2)  # let the extra line arrive
    with pytest.raises(TargetError, match="wrote output nobody asked for"):
        target.observe()


def test_a_program_that_cannot_start_is_reported() -> None:
    with pytest.raises(TargetError, match="cannot start target `no-such-program-duespec`"):
        StdioTargetFactory(["no-such-program-duespec"], "duebook")()


def test_after_a_failure_the_next_target_gets_a_fresh_process(fake) -> None:
    factory = fake("crash")
    step_fails(factory)
    target = factory()  # a new process: hello and reset work again
    target.reset({"max_open": 3})
    assert target.observe()["next_id"] == 1


def test_one_process_serves_many_targets_and_exits_on_stdin_eof(fake) -> None:
    factory = fake("fine")
    first, second = factory(), factory()
    process = factory._process
    assert first._process is second._process is process
    factory.close()
    assert process is not None and process._process.poll() == 0  # exited by itself on EOF


# --- the JavaScript example against the model, on the inputs JSON parsers get wrong ---

TRICKY_STEPS = [
    ("schedule", {"owner": "alice", "delay": INT64_MAX - 10, "ttl": 10}, 0),
    ("schedule", {"owner": "alice", "delay": INT64_MAX - 10, "ttl": 11}, 0),  # overflow
    ("schedule", {"owner": "bob", "delay": 0, "ttl": 0}, INT64_MAX),
    ("schedule", {"owner": "\u00e9\U0001F600", "delay": 1, "ttl": 2}, 5),
    ("schedule", {"owner": ["alice"], "delay": 1, "ttl": 2}, 5),
    ("get", {"id": 1}, -1),  # get ignores now
    ("get", {"id": 1.0}, 0),  # a float is not an integer
    ("get", {"id": True}, 0),
    ("get", {"id": INT64_MAX + 1}, 0),
    ("get", {"id": -(2**63)}, 0),
    ("claim", {"id": 2}, INT64_MAX + 1),
    ("claim", {"id": 2}, INT64_MAX),
    ("claimable", {"limit": INT64_MAX}, INT64_MAX),
    ("claimable", {"limit": 1e3}, 0),
    ("expirable", {"limit": 5}, INT64_MAX),
    ("cancel", {"id": 3, "caller": "\u00e9\U0001F600"}, 0),
    ("expire", {"id": 1}, INT64_MAX),
]


def test_the_node_duebook_agrees_with_the_model_at_the_int64_edges(node: str) -> None:
    factory = StdioTargetFactory([node, str(NODE_DUEBOOK)], "duebook")
    model = ModelTarget()
    try:
        target = factory()
        for subject in (target, model):
            subject.reset({"max_open": 3})
        for op, args, now in TRICKY_STEPS:
            assert target.step(op, args, now) == model.step(op, args, now), (op, args, now)
            assert target.observe() == model.observe()
    finally:
        factory.close()


def test_a_request_json_cannot_express_is_duespecs_error_not_the_targets(fake) -> None:
    target = fake("fine")()
    target.reset({"max_open": 3})
    with pytest.raises(ValueError, match="a step request has no JSON form") as caught:
        target.step("schedule", {"owner": b"alice", "delay": 0, "ttl": 0}, 0)
    assert not isinstance(caught.value, TargetError)
    assert target.step("get", {"id": 1}, 0) == {"error": "not_found"}  # the conversation goes on

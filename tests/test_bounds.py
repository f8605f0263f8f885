"""The numeric bounds of spec/schedules.md "Bounds", drawn across each documented range with
its edges (and past them on both sides): the model, the implementation (in memory and on a
store file) and `duespec serve` over HTTP give the same answer and reach the same state.

Each example builds a small story in which the drawn value is stored or used: a promise's
timeoutAt (then settled by its timeout when reachable), a `resonate:delay`, a task's ttl
(then the lease timeout), a schedule's promiseTimeout (then an occurrence), a version, a
`now`, the config's retry_timeout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from duespec.impl.schedules_records import MAX_DURATION as IMPL_MAX_DURATION, MAX_INSTANT as IMPL_MAX_INSTANT
from duespec.model.schedules.clock import MAX_DURATION, MAX_INSTANT, MAX_TIME
from duespec.systems import get_system
from duespec.targets.interface import comparable
from duespec.wire.http_target import HttpTarget
from duespec.wire.serve import ServerThread, WireServer

T0 = 1_767_225_600_000
HOUR = 3_600_000
EMPTY = {"headers": {}, "data": None}
TARGET = {"resonate:target": "poll://any@workers"}


def across(lower: int, upper: int) -> st.SearchStrategy[int]:
    """Values across [lower, upper], its edges, and just and far past either side."""
    edges = [lower - 1, lower, lower + 1, upper - 1, upper, upper + 1, 2**63 - 1, 2**63, 2**64]
    return st.one_of(st.sampled_from(edges), st.integers(lower, upper), st.integers(upper + 1, 2**80),
                     st.integers(-2**80, lower - 1))


def test_the_bounds_are_one_value_in_the_model_and_the_implementation() -> None:
    assert (MAX_INSTANT, MAX_DURATION) == (IMPL_MAX_INSTANT, IMPL_MAX_DURATION) == (2**63 - 1, 2**63 - 1 - MAX_TIME)


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Any:
    system = get_system("schedules")
    db = tmp_path_factory.mktemp("bounds") / "store.sqlite"
    from duespec.impl.schedules import ScheduleServer  # the impl on a file, as `serve --db` keeps it

    class FileImpl:
        def __init__(self) -> None:
            self.server: ScheduleServer | None = None

        def reset(self, config: dict[str, Any]) -> None:
            if self.server is None:
                self.server = ScheduleServer(str(db), profile=config.get("profile", "lean"),
                                             retry_timeout=config.get("retry_timeout", 5000))
            else:
                self.server.reset(config.get("profile", "lean"), config.get("retry_timeout", 5000))

        def step(self, op: str, args: Any, now: Any) -> dict[str, Any]:
            assert self.server is not None
            return self.server.handle(op, args, now)

        def observe(self) -> dict[str, Any]:
            assert self.server is not None
            return self.server.observe()

        def close(self) -> None:
            if self.server is not None:
                self.server.close()

    served = ServerThread(WireServer(str(Path(db).with_name("served.sqlite"))))
    named = {"model": system.model(), "impl": system.impl(), "impl on a file": FileImpl(),
             "serve": HttpTarget(served.url, timeout=30)}
    yield named
    for target in named.values():
        target.close()
    served.stop()


def agree(targets: dict[str, Any], config: dict[str, Any], story: list[tuple[str, dict[str, Any], Any]]) -> None:
    """Every target takes `story` from `config`; every answer and the final state agree."""
    answers: dict[str, list[Any]] = {}
    states: dict[str, Any] = {}
    for name, target in targets.items():
        target.reset(config)
        answers[name] = [comparable(target.step(op, args, now)) for op, args, now in story]
        states[name] = target.observe()
    model = answers["model"]
    for name in targets:
        assert answers[name] == model, (name, story, answers[name], model)
        assert states[name] == states["model"], (name, story)


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(timeout_at=across(0, MAX_INSTANT), timer=st.booleans())
def test_timeout_at(targets: dict[str, Any], timeout_at: int, timer: bool) -> None:
    tags = {"resonate:timer": "true"} if timer else TARGET
    agree(targets, {"profile": "lean"}, [
        ("promise.create", {"id": "p", "timeoutAt": timeout_at, "param": EMPTY, "tags": tags}, T0),
        ("promise.get", {"id": "p"}, MAX_TIME),
        ("promise.timeout", {"id": "p"}, MAX_TIME),
        ("task.create", {"pid": "w", "ttl": HOUR, "action": {
            "id": "t", "timeoutAt": timeout_at, "param": EMPTY, "tags": TARGET}}, T0)])


@SETTINGS
@given(delay=across(0, MAX_INSTANT), zeros=st.integers(0, 30))
def test_resonate_delay(targets: dict[str, Any], delay: int, zeros: int) -> None:
    text = ("0" * zeros + str(delay)) if delay >= 0 else str(delay)
    agree(targets, {"profile": "lean"}, [
        ("promise.create", {"id": "p", "timeoutAt": MAX_INSTANT, "param": EMPTY,
                            "tags": {**TARGET, "resonate:delay": text}}, T0),
        ("tick", {}, MAX_TIME)])


@SETTINGS
@given(ttl=across(0, MAX_DURATION), now=across(0, MAX_TIME))
def test_ttl_and_now(targets: dict[str, Any], ttl: int, now: int) -> None:
    agree(targets, {"profile": "lean"}, [
        ("task.create", {"pid": "w", "ttl": ttl, "action": {
            "id": "t", "timeoutAt": MAX_INSTANT, "param": EMPTY, "tags": TARGET}}, now),
        ("task.acquire", {"id": "t", "version": 1, "pid": "w", "ttl": ttl}, 0),
        ("tick", {}, MAX_TIME)])


@SETTINGS
@given(promise_timeout=across(0, MAX_DURATION), version=across(0, MAX_INSTANT))
def test_promise_timeout_and_version(targets: dict[str, Any], promise_timeout: int, version: int) -> None:
    agree(targets, {"profile": "lean"}, [
        ("schedule.create", {"id": "s", "cron": "0 0 31 12 *", "promiseId": "{{.id}}.{{.timestamp}}",
                             "promiseTimeout": promise_timeout, "promiseParam": EMPTY, "promiseTags": TARGET},
         MAX_TIME - 2 * 365 * 24 * HOUR),
        ("tick", {}, MAX_TIME),
        ("task.release", {"id": "s", "version": version}, MAX_TIME)])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(retry_timeout=st.one_of(st.sampled_from([1, 2, MAX_DURATION - 1, MAX_DURATION]),
                               st.integers(1, MAX_DURATION)))
def test_retry_timeout(targets: dict[str, Any], retry_timeout: int) -> None:
    agree(targets, {"profile": "lean", "retry_timeout": retry_timeout}, [
        ("promise.create", {"id": "p", "timeoutAt": MAX_INSTANT, "param": EMPTY, "tags": TARGET}, MAX_TIME),
        ("tick", {}, MAX_TIME)])


@pytest.mark.parametrize("retry_timeout", [0, -1, MAX_DURATION + 1, 2**64, 1.5, True, "5000"])
def test_a_retry_timeout_out_of_bounds_is_refused_alike(retry_timeout: Any) -> None:
    from duespec.impl.schedules import ScheduleServer
    from duespec.systems.schedules.adapter import config_of

    with pytest.raises(ValueError, match="retry_timeout"):
        config_of({"retry_timeout": retry_timeout})
    with pytest.raises(ValueError, match="retry_timeout"):
        ScheduleServer(retry_timeout=retry_timeout)
    wire = WireServer()
    status, answer = wire.answer(
        b'{"kind": "debug.reset", "head": {"corrId": "1", "version": "2026-04-01"}, "data": {"retry_timeout": '
        + (b"1.5" if retry_timeout == 1.5 else str(retry_timeout).lower().encode() if not isinstance(retry_timeout, str)
           else b'"5000"') + b"}}")
    assert status == 400 and "retry_timeout" in answer["data"]
    wire.close()

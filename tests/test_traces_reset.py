"""A reset line in the middle of a trace (docs/traces.md): read strictly, written by the
writer, replayed by resetting target, model and expected state, refused by ITF export;
a target that keeps state across reset diverges in the trace's second run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from duespec.campaigns.reset_leak import leak_trace
from duespec.cli import main
from duespec.systems.duebook import ImplTarget, ModelTarget
from duespec.targets.interface import Json
from duespec.traces.format import (FORMAT_VERSION, TraceError, TraceHeader, check_reset, is_reset, read_trace,
                                   record, write_trace)
from duespec.traces.replay import replay

CONFIG = {"max_open": 3}
HEADER = TraceHeader("duebook", "seed", CONFIG, producer="test")
#: Two schedules, a claim and a look at what is open: ids 1 and 2 on a fresh book.
SCRIPT = [("schedule", {"owner": "alice", "delay": 0, "ttl": 5}, 10),
          ("schedule", {"owner": "bob", "delay": 3, "ttl": 0}, 11),
          ("claim", {"id": 1}, 12),
          ("get", {"id": 2}, 12),
          ("claimable", {"limit": 10}, 20)]


def twice(tmp_path: Path, name: str = "twice.jsonl") -> Path:
    """The script, a reset with the same config, the script again: what conform writes for a leak."""
    return write_trace(tmp_path / name, HEADER, leak_trace(list(record("duebook", CONFIG, SCRIPT)), CONFIG))


def two_caps(tmp_path: Path) -> Path:
    """The script at a cap of 3, a reset to a cap of 4, the script again."""
    second = [{**step, "i": 5 + step["i"]} for step in record("duebook", {"max_open": 4}, SCRIPT)]
    return write_trace(tmp_path / "caps.jsonl", HEADER,
                       [*record("duebook", CONFIG, SCRIPT), {"reset": {"max_open": 4}}, *second])


def header_line(config: dict[str, Json] = CONFIG) -> str:
    return json.dumps({**HEADER.to_json(), "config": config})


class KeepsIdsOnItsInstance(ModelTarget):
    """Hands out ids from a counter of its own that reset does not clear."""

    def __init__(self) -> None:
        super().__init__()
        self.issued = 0

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        response = super().step(op, args, now)
        if op == "schedule" and "ok" in response:
            self.issued += 1
            response = {"ok": {**response["ok"], "id": self.issued}}
        return response


def test_a_reset_line_is_written_and_read_back_between_the_steps(tmp_path: Path) -> None:
    path = twice(tmp_path)
    text = path.read_text().splitlines()
    assert json.loads(text[6]) == {"reset": CONFIG} and len(text) == 1 + 5 + 1 + 5
    _, lines = read_trace(path)
    read = list(lines)
    assert [line.get("i") for line in read] == [0, 1, 2, 3, 4, None, 5, 6, 7, 8, 9]
    assert [is_reset(line) for line in read].count(True) == 1 and read[5] == {"reset": CONFIG}
    assert [line["result"] for line in read[:5]] == [line["result"] for line in read[6:]]


@pytest.mark.parametrize("line, number, problem", [
    ({"reset": 3}, 3, 'reset: "reset" must be the config to start again with, a JSON object, got the number 3'),
    ({"reset": None}, 3, '"reset" must be the config to start again with, a JSON object, got null'),
    ({"reset": CONFIG, "i": 1}, 3, 'a reset line has the one key "reset" (the config to start again with), '
                                   'but this one also has "i"'),
    ({"reset": CONFIG, "now": 5, "op": "get"}, 3, 'also has "now", "op"'),
])
def test_a_malformed_reset_line_names_file_line_and_problem(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], line: Json, number: int, problem: str) -> None:
    step = {"i": 0, "op": "get", "args": {"id": 1}, "now": 0, "result": {"error": "not_found"}}
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([header_line(), json.dumps(step), json.dumps(line), json.dumps({**step, "i": 1})])
                    + "\n")
    _, lines = read_trace(path)
    with pytest.raises(TraceError) as raised:
        list(lines)
    assert str(raised.value) == f"{path}:{number}: {problem}" or problem in str(raised.value)
    assert raised.value.line == number
    assert main(["replay", str(path)]) == 2
    captured = capsys.readouterr()
    assert f"MALFORMED: {path}:{number}: reset: " in captured.err and "Traceback" not in captured.err
    assert captured.out == ""


def test_line_numbers_count_reset_lines_and_steps_number_on_after_one(tmp_path: Path) -> None:
    step = {"i": 0, "op": "get", "args": {"id": 1}, "now": 0}
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([header_line(), json.dumps(step), json.dumps({"reset": CONFIG}),
                               json.dumps({**step, "i": 2})]) + "\n")
    with pytest.raises(TraceError, match=r"t\.jsonl:4: step: \"i\" is 2 where 1 was expected"):
        list(read_trace(path)[1])


def test_the_writer_refuses_a_malformed_reset_and_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match='"reset" must be the config'):
        write_trace(tmp_path / "t.jsonl", HEADER, [{"reset": [3]}])
    with pytest.raises(TraceError, match='one key "reset"'):
        check_reset({"reset": CONFIG, "result": {}}, "x", None)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("target", ["impl", "model"])
def test_a_correct_target_replays_both_runs(tmp_path: Path, target: str) -> None:
    """impl takes the fused path in each run (its checker is made again for the new book):
    a checker left on the first run's book would answer ids 3 and 4 in the second."""
    result = replay(twice(tmp_path), target)
    assert result.confirmed, result.report()
    assert result.steps == 10 and result.resets == 1 and result.responses_compared == 10
    assert "10 steps in 2 runs (1 reset in between)" in result.report()
    general = replay(twice(tmp_path, "again.jsonl"), "impl (general)", factory=ImplTarget)
    assert general.confirmed and general.states_compared == 2  # the end of each run


def test_a_target_that_keeps_its_counter_across_reset_diverges_in_the_second_run(tmp_path: Path) -> None:
    result = replay(twice(tmp_path), "leaky", factory=KeepsIdsOnItsInstance)
    assert not result.confirmed
    assert result.step is not None and result.step["i"] == 5  # the second run's first schedule
    report = result.report()
    assert "at step 5 (run 2 of the trace, which starts at the reset before step 5)" in report
    assert "expected response: {\"ok\": {\"due_at\": 10, \"expires_at\": 15, \"id\": 1," in report
    assert "actual response:   {\"ok\": {\"due_at\": 10, \"expires_at\": 15, \"id\": 3," in report


class WrongStateAtACapOfThree(ModelTarget):
    """Answers every step right, but observe() is wrong while the cap is 3."""

    def observe(self) -> dict[str, Json]:
        state = super().observe()
        return {**state, "next_id": state["next_id"] + 1} if state["max_open"] == 3 else state


class PhantomLateAtACapOfFour(ModelTarget):
    """observe() shows a wrong cap once a run at a cap of 4 has taken three steps."""

    taken = 0

    def reset(self, config: dict[str, Json]) -> None:
        self.taken = 0
        super().reset(config)

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        self.taken += 1
        return super().step(op, args, now)

    def observe(self) -> dict[str, Json]:
        state = super().observe()
        return {**state, "max_open": 99} if state["max_open"] == 4 and self.taken >= 3 else state


def test_the_state_a_run_reached_is_compared_before_the_reset_wipes_it(tmp_path: Path) -> None:
    """A cap of 3, then a reset to a cap of 4: the first run's wrong state is found (and
    traced back to its first step) although the second run ends right."""
    path = two_caps(tmp_path)
    result = replay(path, "t", factory=WrongStateAtACapOfThree)
    assert not result.confirmed and result.step is not None and result.step["i"] == 0, result.report()
    assert "$.next_id: expected 2, actual 3" in result.report() and "run 2" not in result.report()
    assert replay(path, "impl").confirmed


def test_a_state_difference_after_a_reset_is_traced_back_to_its_step(tmp_path: Path) -> None:
    result = replay(two_caps(tmp_path), "t", factory=PhantomLateAtACapOfFour)
    assert not result.confirmed and result.step is not None and result.step["i"] == 7, result.report()
    assert "run 2 of the trace" in result.report() and "$.max_open: expected 4, actual 99" in result.report()
    assert "not deterministic" not in result.report()


class ResetFailsTheSecondTime(ModelTarget):
    resets = 0

    def reset(self, config: dict[str, Json]) -> None:
        self.resets += 1
        if self.resets == 2:
            raise RuntimeError("the database is gone")
        super().reset(config)


def test_a_reset_that_raises_mid_trace_diverges_at_that_reset(tmp_path: Path) -> None:
    result = replay(twice(tmp_path), "t", factory=ResetFailsTheSecondTime)
    assert not result.confirmed and result.step is not None and "reset" in result.step
    report = result.report()
    assert "at the reset before step 5" in report and "RuntimeError: the database is gone" in report
    assert result.steps == 5


def test_a_reset_config_the_model_refuses_makes_the_trace_malformed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [*record("duebook", CONFIG, SCRIPT[:1]), {"reset": {"max_open": 0}}]
    path = write_trace(tmp_path / "t.jsonl", HEADER, lines)
    assert main(["replay", str(path)]) == 2
    err = capsys.readouterr().err
    assert "the reset before step 1: the model refuses config {\"max_open\": 0}" in err
    assert "Traceback" not in err


def test_steps_without_results_after_a_reset_are_judged_by_a_model_that_took_it(tmp_path: Path) -> None:
    """The oracle starts at the first step without a result, brought up to it through the
    reset line (a cap of 1 now): the second schedule of the new run is full."""
    bare = [{"i": 2 + index, "op": op, "args": args, "now": now} for index, (op, args, now) in
            enumerate([("schedule", {"owner": "a", "delay": 0, "ttl": 0}, 30),
                       ("schedule", {"owner": "b", "delay": 0, "ttl": 0}, 30)])]
    path = write_trace(tmp_path / "t.jsonl", HEADER,
                       [*record("duebook", CONFIG, SCRIPT[:2]), {"reset": {"max_open": 1}}, *bare])
    assert replay(path, "impl").confirmed

    class CapOfThree(ModelTarget):
        def reset(self, config: dict[str, Json]) -> None:
            super().reset(CONFIG)

    result = replay(path, "t", factory=CapOfThree)
    assert not result.confirmed and result.step is not None and result.step["i"] == 3, result.report()
    assert '"error": "full"' in result.report()


def test_itf_export_refuses_a_trace_of_several_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.itf.json"
    assert main(["itf", "export", str(twice(tmp_path)), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "the reset before step 5 has no ITF form" in err and "export each run as a trace of its own" in err
    assert "Traceback" not in err and not out.exists()
    starts_with_one = write_trace(tmp_path / "first.jsonl", HEADER, [{"reset": CONFIG}])
    assert main(["itf", "export", str(starts_with_one), "-o", str(out)]) == 2
    assert "the reset before step 0 has no ITF form" in capsys.readouterr().err and not out.exists()


def test_a_trace_without_reset_lines_reads_as_before(tmp_path: Path) -> None:
    """The format version stays 1: a trace of one run is byte for byte what it was."""
    path = write_trace(tmp_path / "one.jsonl", HEADER, record("duebook", CONFIG, SCRIPT))
    first = json.loads(path.read_text().splitlines()[0])
    assert first["duespec_trace"] == FORMAT_VERSION == 1
    assert all(not is_reset(line) for line in read_trace(path)[1])
    result: Any = replay(path, "impl")
    assert result.confirmed and result.resets == 0 and " in 2 runs" not in result.report()


def test_a_schedules_trace_of_two_runs_shows_a_server_that_keeps_its_store(tmp_path: Path) -> None:
    """Schedules: the model runs alongside as oracle and is reset with the target. A create,
    a reset, a get of what was created: not found, unless the store survived."""
    from duespec.bench.traces import schedules_churn
    from duespec.systems import get_system
    from duespec.systems.schedules import ImplTarget as SchedulesImpl

    system = get_system("schedules")
    profile = system.profiles[0]
    config = system.config(profile)
    create, get, _ = schedules_churn(3)
    second = [{**step, "i": 1} for step in record("schedules", config, [get])]
    path = write_trace(tmp_path / "s.jsonl", TraceHeader("schedules", profile, config, producer="test"),
                       [*record("schedules", config, [create]), {"reset": config}, *second])
    for target in ("impl", "model"):
        result = replay(path, target)
        assert result.confirmed and result.resets == 1, result.report()

    class KeepsItsStore(SchedulesImpl):
        def reset(self, config: dict[str, Json]) -> None:
            if getattr(self, "started", False):
                return  # the store of the first run stays
            self.started = True
            super().reset(config)

    result = replay(path, "t", factory=KeepsItsStore)
    assert not result.confirmed and result.step is not None and result.step["i"] == 1, result.report()
    assert "run 2 of the trace" in result.report()

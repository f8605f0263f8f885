"""ITF: duespec traces survive the trip through ITF, and a trace in the exact shape
`quint run --mbt` writes imports and replays."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from duespec.cli import main as cli_main
from duespec.traces.itf import (NONE, ImportRecipe, action_name, export_itf, from_itf, import_itf,
                                op_for_action, read_itf, to_itf)
from duespec.traces.replay import replay
from duespec.systems import get_system
from duespec.traces.format import TraceError, TraceHeader, read_trace, record, write_trace

ROOT = Path(__file__).resolve().parent.parent
QUINT_FIXTURE = ROOT / "traces" / "itf" / "duebook_quint_mbt.itf.json"
CORPUS = sorted((ROOT / "traces").rglob("*.jsonl"))


@pytest.mark.parametrize("op, action", [
    ("claim", "claim"), ("claimable", "claimable"), ("schedule.create", "scheduleCreate"),
    ("promise.timeout", "promiseTimeout"), ("tick", "tick")])
def test_operation_names_become_quint_action_names_and_back(op: str, action: str) -> None:
    assert action_name(op) == action
    system = "duebook" if op in get_system("duebook").operations else "schedules"
    assert op_for_action(system, action) == op


@pytest.mark.parametrize("system, action, op", [
    ("duebook", "Claim", "claim"), ("duebook", "claim_action", "claim"),
    ("duebook", "ClaimAction", "claim"), ("schedules", "schedule_create", "schedule.create"),
    ("schedules", "ScheduleDelete", "schedule.delete"), ("duebook", "claimAll", None),
    ("duebook", "init", None), ("duebook", "", None), ("duebook", "Action", None)])
def test_quint_spellings_of_an_action_resolve(system: str, action: str, op: str | None) -> None:
    assert op_for_action(system, action) == op


VALUES: list[Any] = [
    None, True, "text", 0, -5, 2**63 - 1, -(2**63), 10**40, [], [1, [2, None]],
    {"id": 1, "owner": "a", "due_at": 2, "expires_at": 0},
    {"headers": {"#weird": "x", "tag": "y"}, "data": None},
    {"tags": {"resonate:target": "poll://any"}, "state": "pending"},
    {"tag": "looks like a variant", "value": 1},
    {"#bigint": "not ours"},
    {"outbox": [{"address": "a", "message": {"kind": "execute", "taskId": "t", "version": 0}}]},
]


@pytest.mark.parametrize("value", VALUES, ids=[json.dumps(v)[:40] for v in VALUES])
def test_every_contract_value_survives_itf(value: Any) -> None:
    encoded = to_itf(value, "here")
    assert from_itf(json.loads(json.dumps(encoded)), "here") == value


def test_itf_encoding_follows_the_format() -> None:
    assert to_itf(5, "") == {"#bigint": "5"}
    assert to_itf(None, "") == NONE
    assert to_itf({"promiseTags": {"a": "b"}}, "") == {"promiseTags": {"#map": [["a", "b"]]}}
    assert from_itf({"#tup": [{"#bigint": "1"}, "x"]}, "") == [1, "x"]
    assert from_itf({"#set": [1, 2]}, "") == [1, 2]
    assert from_itf({"tag": "Some", "value": {"#bigint": "-3"}}, "") == -3
    assert from_itf({"tag": "Busy", "value": 2}, "") == {"tag": "Busy", "value": 2}
    # Quint's natural `int -> Deferral`: integer keys stay integers, for a mapping hook.
    assert from_itf({"#map": [[{"#bigint": "2"}, {"dueAt": {"#bigint": "5"}}]]}, "") == {2: {"dueAt": 5}}


@pytest.mark.parametrize("value, problem", [
    (1.5, "not an ITF value"),
    ({"#bigint": "12a"}, '"#bigint" must hold a string of digits'),
    ({"#bigint": 12}, '"#bigint" must hold a string of digits'),
    ({"#map": [[{"#tup": [1, 2]}, "x"]]}, "a map key must be a string or an integer"),
    ({"#map": [[True, "x"]]}, "a map key must be a string or an integer"),
    ({"#map": [["a"]]}, "[key, value] pairs"),
    ({"s": 1, "e": 15, "c": [90, 7199254740993]}, "--backend=typescript"),
    ({"#unserializable": "lambda"}, '"#unserializable" holds a value duespec cannot read back'),
    ({"#unserializable": "2"}, '"#unserializable" holds a value duespec cannot read back'),
    ({"#unserializable": "NaN"}, '"#unserializable" holds a value duespec cannot read back'),
    ({"#unserializable": 1.5}, '"#unserializable" holds a value duespec cannot read back'),
    ({"#other": 1}, "unsupported ITF form '#other'"),
])
def test_values_with_no_duespec_form_are_refused(value: Any, problem: str) -> None:
    with pytest.raises(TraceError, match=re.escape(problem)):
        from_itf(value, "somewhere")


def test_fractions_unknown_ops_and_args_no_picks_can_give_come_back_as_they_were(tmp_path: Path) -> None:
    """ITF has no fractional numbers: a fraction goes as `#unserializable` holding its JSON
    text; args named picks cannot give back (no object, a name the op does not take, a
    required one missing) and an op the system does not have go as duespec's own picks. Read
    back, each is what it was, 1.0 still no integer."""
    steps = [("claim", {"id": 1.5}, 0), ("claim", {"id": 1.0}, 0), ("claim", None, 0),
             ("claim", {"id": 1, "extra": True}, 0), ("claim", {}, 0), ("Claim", {"id": 1}, 0),
             ("warp", [1, "x"], 0)]
    trace = write_trace(tmp_path / "t.jsonl", TraceHeader("duebook", "seed", {"max_open": 1}),
                        record("duebook", {"max_open": 1}, steps))
    itf = json.loads(export_itf(trace, tmp_path / "t.itf.json").read_text())
    picks = [state["mbt::nondetPicks"] for state in itf["states"][1:]]
    assert picks[0]["id"] == {"tag": "Some", "value": {"#unserializable": "1.5"}}
    assert "duespec::args" not in picks[1] and "duespec::args" in picks[2] and "duespec::args" in picks[3]
    assert picks[5]["duespec::op"] == {"tag": "Some", "value": "Claim"}
    back = import_itf(tmp_path / "t.itf.json", tmp_path / "back.jsonl")
    _, original = read_trace(trace)
    _, imported = read_trace(back)
    assert [json.dumps({k: v for k, v in s.items() if k != "state"}, sort_keys=True) for s in imported] == \
        [json.dumps(s, sort_keys=True) for s in original]


@pytest.mark.parametrize("trace", CORPUS, ids=[p.name for p in CORPUS])
def test_corpus_round_trips_through_itf(tmp_path: Path, trace: Path) -> None:
    header, steps = read_trace(trace)
    original = list(steps)
    itf = export_itf(trace, tmp_path / "t.itf.json")
    back = import_itf(itf, tmp_path / "back.jsonl")
    back_header, back_steps = read_trace(back)
    imported = list(back_steps)
    assert (back_header.system, back_header.profile, back_header.config) == (header.system, header.profile,
                                                                             header.config)
    assert [json.dumps({k: v for k, v in s.items() if k != "state"}, sort_keys=True) for s in imported] == \
        [json.dumps(s, sort_keys=True) for s in original]  # 1.0 is no 1, True no 1
    # Every imported step carries the model's state after it, and the replay checks it.
    assert all("state" in s for s in imported)
    result = replay(back, "model")
    assert result.confirmed, result.report()
    assert result.states_compared == len(original)


def test_exported_itf_has_the_shape_quint_tools_read(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.jsonl", TraceHeader("duebook", "seed", {"max_open": 2}),
                        record("duebook", {"max_open": 2}, [("schedule", {"owner": "a", "delay": 3, "ttl": 0}, 10),
                                                            ("claim", {"id": 1}, 13)]))
    document = json.loads(export_itf(trace, tmp_path / "t.itf.json").read_text())
    assert document["#meta"]["format"] == "ITF"
    assert document["vars"] == ["now", "max_open", "next_id", "open", "duespec::result",
                                "mbt::actionTaken", "mbt::nondetPicks"]
    states = document["states"]
    assert [s["#meta"]["index"] for s in states] == [0, 1, 2]
    assert all(set(document["vars"]) <= set(s) for s in states)
    assert [s["mbt::actionTaken"] for s in states] == ["init", "schedule", "claim"]
    assert states[0]["mbt::nondetPicks"]["owner"] == NONE
    assert states[1]["mbt::nondetPicks"]["owner"] == {"tag": "Some", "value": "a"}
    assert states[1]["mbt::nondetPicks"]["id"] == NONE
    assert states[2]["now"] == {"#bigint": "13"}
    assert states[1]["open"] == [{"id": {"#bigint": "1"}, "owner": "a", "due_at": {"#bigint": "13"},
                                  "expires_at": {"#bigint": "0"}}]
    assert states[2]["open"] == []
    assert states[2]["duespec::result"]["tag"] == "Some"


# --- a trace exactly as `quint run --mbt` writes it ---------------------------------------

def test_quint_mbt_trace_imports_as_the_steps_it_took(tmp_path: Path) -> None:
    header, steps = read_itf(QUINT_FIXTURE, system="duebook", config={"max_open": 2})
    taken = [(s["op"], s["args"], s["now"]) for s in steps]
    assert header.config == {"max_open": 2}
    assert taken == [
        ("schedule", {"owner": "alice", "delay": 5, "ttl": 10}, 0),
        ("schedule", {"owner": "bob", "delay": 0, "ttl": 0}, 0),
        ("schedule", {"owner": "carol", "delay": 1, "ttl": 1}, 0),
        ("claim", {"id": 1}, 5),                     # advanceTime(5) became no step
        ("cancel", {"id": 2, "caller": "alice"}, 5),
        ("cancel", {"id": 2, "caller": "bob"}, 5),
        ("claim", {"id": 1}, 25),
        ("schedule", {"owner": "alice", "delay": 0, "ttl": 3}, 25),
        ("claim", {"id": 3}, 28),
        ("expire", {"id": 3}, 28),
    ]


def test_quint_mbt_trace_replays_against_the_model_as_oracle(tmp_path: Path) -> None:
    trace = import_itf(QUINT_FIXTURE, tmp_path / "q.jsonl", system="duebook", config={"max_open": 2})
    result = replay(trace, "impl")
    assert result.confirmed, result.report()
    # No results in the ITF: every response was judged by the model, and the state at
    # checkpoints and at the end (`replay --state-every 1`: after every step).
    assert (result.responses_compared, result.states_compared) == (10, 2)
    assert replay(trace, "impl", state_every=1).states_compared == 10
    # The spec's own verdicts (its lastError variable) agree with the model's.
    expected_errors = ["", "", "full", "", "not_owner", "", "not_found", "", "expired", ""]
    model = get_system("duebook").model()
    model.reset({"max_open": 2})
    _, steps = read_trace(trace)
    assert [model.step(s["op"], s["args"], s["now"]).get("error", "") for s in steps] == expected_errors


def _quint_trace(tmp_path: Path, states: list[dict[str, Any]]) -> Path:
    init = {"#meta": {"index": 0}, "now": {"#bigint": "0"}, "mbt::actionTaken": "init", "mbt::nondetPicks": {}}
    path = tmp_path / "q.itf.json"
    path.write_text(json.dumps({"vars": ["now"], "states": [init, *states]}))
    return path


@pytest.mark.parametrize("state, problem", [
    ({"now": 1, "mbt::actionTaken": "claimAll", "mbt::nondetPicks": {}},
     "ITF state 1: action 'claimAll' is not an operation of duebook (known: schedule, claim"),
    ({"now": 1, "mbt::actionTaken": "", "mbt::nondetPicks": {}}, "anonymous action: name it in the spec"),
    ({"now": 1}, 'no "mbt::actionTaken"; produce the trace with `quint run --mbt`'),
    ({"mbt::actionTaken": "get", "mbt::nondetPicks": {"id": {"tag": "Some", "value": 1}}},
     "ITF state 1: no time: tried the pick 'now', the variable 'now' after the step; say where"),
    ({"now": 1, "mbt::actionTaken": "get", "mbt::nondetPicks": []}, 'must be a record'),
])
def test_unusable_quint_trace_is_refused_with_the_state_and_the_problem(tmp_path: Path, state: dict[str, Any],
                                                                      problem: str) -> None:
    path = _quint_trace(tmp_path, [state])
    with pytest.raises(TraceError, match=re.escape(problem)):
        import_itf(path, tmp_path / "out.jsonl", system="duebook")
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("some", [{"tag": "Some"}, {"tag": "Some", "value": 1, "extra": 2}])
def test_an_option_some_without_exactly_a_value_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           some: dict[str, Any]) -> None:
    """Read as a record, `{"tag": "Some"}` passed as the argument {"tag": "Some"}: the pick's value lost."""
    path = _quint_trace(tmp_path, [{"now": 1, "mbt::actionTaken": "get", "mbt::nondetPicks": {"id": some}}])
    assert cli_main(["itf", "import", str(path), "-o", str(tmp_path / "out.jsonl"), "--system", "duebook"]) == 2
    err = capsys.readouterr().err
    assert 'ITF state 1: pick id: an Option "Some" must hold exactly a "value"' in err
    assert "Traceback" not in err and not (tmp_path / "out.jsonl").exists()


def test_time_can_come_from_a_pick_and_clock_actions_are_configurable(tmp_path: Path) -> None:
    path = _quint_trace(tmp_path, [
        {"now": 0, "mbt::actionTaken": "wait", "mbt::nondetPicks": {}},
        {"now": 0, "mbt::actionTaken": "get",
         "mbt::nondetPicks": {"id": {"tag": "Some", "value": {"#bigint": "4"}},
                              "at": {"tag": "Some", "value": {"#bigint": "9"}}}}])
    _, steps = read_itf(path, system="duebook",
                        recipe=ImportRecipe(time_actions=("wait",), time=("pick:at", "after:at")))
    assert list(steps) == [{"i": 0, "op": "get", "args": {"id": 4}, "now": 9}]


def test_picks_of_sibling_actions_are_dropped(tmp_path: Path) -> None:
    """A spec that picks every nondet up front leaves Some values the action never used."""
    some = lambda v: {"tag": "Some", "value": v}  # noqa: E731
    path = _quint_trace(tmp_path, [{"now": 3, "mbt::actionTaken": "claim",
                                    "mbt::nondetPicks": {"id": some(1), "owner": some("a"), "limit": some(2)}}])
    _, steps = read_itf(path, system="duebook")
    assert [s["args"] for s in steps] == [{"id": 1}]


def test_an_itf_without_a_system_asks_for_one(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="pass --system"):
        read_itf(_quint_trace(tmp_path, []))


def test_itf_command_imports_and_exports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "q.jsonl"
    assert cli_main(["itf", "import", str(QUINT_FIXTURE), "-o", str(out), "--system", "duebook",
                     "--config", '{"max_open": 2}']) == 0
    assert cli_main(["replay", str(out), "--target", "impl"]) == 0
    assert cli_main(["itf", "export", str(out), "-o", str(tmp_path / "q.itf.json")]) == 0
    assert json.loads((tmp_path / "q.itf.json").read_text())["states"][3]["duespec::result"] == \
        {"tag": "Some", "value": {"error": "full"}}
    assert cli_main(["itf", "import", str(QUINT_FIXTURE), "-o", str(out), "--config", "[2]",
                     "--system", "duebook"]) == 2
    assert cli_main(["itf", "import", str(QUINT_FIXTURE), "-o", str(tmp_path / "x.jsonl")]) == 2
    assert "pass --system" in capsys.readouterr().err


def test_quint_schedules_trace_imports_with_camel_case_actions_and_maps(tmp_path: Path) -> None:
    """A schedules spec: `scheduleCreate`, tags as a Quint map, the clock as a variable."""
    start = 1_767_225_600_000
    some = lambda v: {"tag": "Some", "value": v}  # noqa: E731
    picks = {"id": some("s"), "cron": some("* * * * *"), "promiseId": some("{{.id}}.{{.timestamp}}"),
             "promiseTimeout": some({"#bigint": "60000"}),
             "promiseParam": some({"headers": {"#map": []}, "data": NONE}),
             "promiseTags": some({"#map": [["resonate:target", "poll://any@workers"]]})}
    states = [
        {"#meta": {"index": 0}, "spec::now": {"#bigint": str(start)}, "mbt::actionTaken": "init",
         "mbt::nondetPicks": {name: NONE for name in picks}},
        {"#meta": {"index": 1}, "spec::now": {"#bigint": str(start)}, "mbt::actionTaken": "scheduleCreate",
         "mbt::nondetPicks": picks},
        {"#meta": {"index": 2}, "spec::now": {"#bigint": str(start + 150_000)}, "mbt::actionTaken": "advanceTime",
         "mbt::nondetPicks": {name: NONE for name in picks}},
        {"#meta": {"index": 3}, "spec::now": {"#bigint": str(start + 150_000)}, "mbt::actionTaken": "tick",
         "mbt::nondetPicks": {name: NONE for name in picks}},
        {"#meta": {"index": 4}, "spec::now": {"#bigint": str(start + 150_000)}, "mbt::actionTaken": "ScheduleGet",
         "mbt::nondetPicks": {**{name: NONE for name in picks}, "id": some("s")}},
    ]
    source = tmp_path / "schedules.itf.json"
    source.write_text(json.dumps({"vars": ["spec::now", "mbt::actionTaken", "mbt::nondetPicks"], "states": states}))
    trace = import_itf(source, tmp_path / "s.jsonl", system="schedules", profile="server")
    header, steps = read_trace(trace)
    steps = list(steps)
    assert header.config == {"profile": "server", "retry_timeout": 5000}
    assert [(s["op"], s["now"]) for s in steps] == [
        ("schedule.create", start), ("tick", start + 150_000), ("schedule.get", start + 150_000)]
    assert steps[0]["args"]["promiseTags"] == {"resonate:target": "poll://any@workers"}
    assert steps[0]["args"]["promiseParam"] == {"headers": {}, "data": None}
    result = replay(trace, "impl")
    assert result.confirmed, result.report()
    assert (result.responses_compared, result.states_compared) == (3, 1)


def test_metadata_under_meta_is_read_as_well(tmp_path: Path) -> None:
    """Some producers put the action and picks in each state's #meta instead."""
    path = _quint_trace(tmp_path, [{"#meta": {"index": 1, "actionTaken": "get",
                                              "nondetPicks": {"id": {"tag": "Some", "value": 2}}}, "now": 4}])
    _, steps = read_itf(path, system="duebook")
    assert list(steps) == [{"i": 0, "op": "get", "args": {"id": 2}, "now": 4}]

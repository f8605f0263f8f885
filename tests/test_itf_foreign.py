"""ITF import of a foreign spec: examples/quint-duebook's real `quint run --mbt` traces
import with its documented flags, carry the Quint model's own answers and states, and
replay against the model, the implementation and the JavaScript example; the planted
disagreement is reported at its step; an import that does not fit is refused."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from duespec.cli import main as cli_main
from duespec.traces.format import TraceError, read_trace
from duespec.traces.itf import ImportRecipe, RecipeError, import_itf, load_mapping, read_itf
from duespec.traces.replay import replay

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "quint-duebook"
QUINT_TRACES = sorted((EXAMPLE / "traces").glob("duebook_*.itf.json"))
OVERFULL = EXAMPLE / "traces" / "overfull.itf.json"
MAPPING = EXAMPLE / "import.toml"
#: The flags examples/quint-duebook/README.md gives as the equivalent of import.toml.
FLAGS = ["--system", "duebook", "--config", '{"max_open": 2}', "--arg", "schedule.who=owner",
         "--arg", "cancel.who=caller", "--ignore-pick", "dt", "--time", "before:clock",
         "--hook", str(EXAMPLE / "mapping.py") + ":to_duespec"]
#: duebook.qnt's Failure variants, read straight from the ITF (not through the hook).
FAILURES = {"BadInput": "invalid", "NotFound": "not_found", "NotDue": "not_due", "Expired": "expired",
            "NotExpired": "not_expired", "NotOwner": "not_owner", "Full": "full"}


def imported(tmp_path: Path, itf: Path, *flags: str) -> Path:
    out = tmp_path / (itf.name.removesuffix(".itf.json") + ".jsonl")
    assert cli_main(["itf", "import", str(itf), "-o", str(out), *flags]) == 0
    return out


def test_the_example_ships_real_quint_traces() -> None:
    assert len(QUINT_TRACES) == 3
    for path in [*QUINT_TRACES, OVERFULL]:
        document = json.loads(path.read_text())
        assert document["#meta"]["description"].startswith("Created by Quint")
        assert set(document["vars"]) >= {"clock", "book", "nextId", "answer", "mbt::actionTaken",
                                         "mbt::nondetPicks"}


@pytest.mark.parametrize("itf", QUINT_TRACES, ids=[p.name for p in QUINT_TRACES])
def test_steps_carry_the_quint_models_own_answers_and_states(tmp_path: Path, itf: Path) -> None:
    states = json.loads(itf.read_text())["states"]
    _, steps = read_trace(imported(tmp_path, itf, "--mapping", str(MAPPING)))
    steps = list(steps)
    assert len(steps) == len(states) - 1 == 20
    for step, before, after in zip(steps, states, states[1:]):
        answer = after["answer"]
        if answer["tag"] == "Done":
            assert step["result"]["ok"]["id"] == int(answer["value"]["id"]["#bigint"])
            assert step["result"]["ok"]["owner"] == answer["value"]["owner"]
        else:
            assert step["result"] == {"error": FAILURES[answer["value"]["tag"]]}
        assert [d["id"] for d in step["state"]["open"]] == sorted(int(k["#bigint"]) for k, _ in after["book"]["#map"])
        assert step["state"]["next_id"] == int(after["nextId"]["#bigint"])
        # The operation ran at the clock of the state it left.
        assert step["now"] == int(before["clock"]["#bigint"])
        picks = after["mbt::nondetPicks"]
        if step["op"] == "cancel":
            assert step["args"]["caller"] == picks["who"]["value"]


@pytest.mark.parametrize("target", ["model", "impl", "node example"])
def test_quint_traces_replay_with_every_answer_and_state_compared(tmp_path: Path, target: str) -> None:
    if target == "node example":
        node = shutil.which("node")
        assert node, "node is required (the JavaScript example target); install node 20+"
        target = f"stdio:{node} {ROOT / 'examples/node-duebook/duebook.js'}"
    for itf in QUINT_TRACES:
        result = replay(imported(tmp_path, itf, "--mapping", str(MAPPING)), target)
        assert result.confirmed, result.report()
        assert result.steps == result.responses_compared == result.states_compared == 20
        assert result.recorded_results == result.recorded_states == 20
        assert "20 responses and 20 states compared; the trace's own 20 results and 20 states" in result.report()


def test_the_documented_flags_import_exactly_as_the_mapping_file(tmp_path: Path) -> None:
    by_file = imported(tmp_path / "file", QUINT_TRACES[0], "--mapping", str(MAPPING))
    by_flags = imported(tmp_path / "flags", QUINT_TRACES[0], *FLAGS)
    assert list(read_trace(by_file)[1]) == list(read_trace(by_flags)[1])


def test_the_replay_command_prints_the_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = imported(tmp_path, QUINT_TRACES[1], "--mapping", str(MAPPING))
    capsys.readouterr()
    assert cli_main(["replay", str(trace), "--target", "impl"]) == 0
    assert re.search(r"CONFIRMED: .* 20 steps, 20 responses and 20 states compared; the trace's own "
                     r"20 results and 20 states among them", capsys.readouterr().out)


@pytest.mark.parametrize("target", ["model", "impl"])
def test_a_foreign_model_that_disagrees_is_a_divergence_at_its_step(tmp_path: Path, target: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """overfull.qnt lets a full book take a third deferral: ITF state 9, duespec step 8."""
    states = json.loads(OVERFULL.read_text())["states"]
    assert len(states[9]["book"]["#map"]) == 3 and len(states[8]["book"]["#map"]) == 2
    trace = imported(tmp_path, OVERFULL, "--mapping", str(MAPPING))
    capsys.readouterr()
    assert cli_main(["replay", str(trace), "--target", target]) == 1
    out = capsys.readouterr().out
    assert f"DIVERGES: {trace} [duebook/seed] against {target} at step 8" in out
    assert 'step 8: schedule {"delay": 0, "owner": "bob", "ttl": 3} at now=15' in out
    assert '"ok": {"due_at": 15, "expires_at": 18, "id": 3, "owner": "bob"}' in out
    assert '{"error": "full"}' in out
    if target == "impl":
        assert "the model does not give the recorded result" in out


# --- refusals: the ITF state, the pick, exit 2, nothing written ---------------------------

def refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], itf: Path, *flags: str) -> str:
    out = tmp_path / "refused.jsonl"
    assert cli_main(["itf", "import", str(itf), "-o", str(out), *flags]) == 2
    assert not out.exists()
    assert not list(tmp_path.glob("*.partial"))
    return capsys.readouterr().err


def without(flags: list[str], *names: str) -> list[str]:
    """FLAGS minus the option pairs named."""
    kept, skip = [], False
    for flag in flags:
        if skip:
            skip = False
        elif flag in names:
            skip = True
        else:
            kept.append(flag)
    return kept


def test_a_pick_no_operation_takes_is_refused_naming_the_state_and_the_pick(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(tmp_path, capsys, QUINT_TRACES[0], *without(FLAGS, "--arg"))
    assert "ITF state 1: pick 'who' of action 'expire' is no argument of expire (it takes id); rename it " \
           "with --arg expire.who=ARG or drop it with --ignore-pick who" in err


def test_an_argument_no_pick_gives_is_refused_naming_the_state(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    flags = [*without(FLAGS, "--arg"), "--arg", "schedule.who=owner"]
    err = refused(tmp_path, capsys, QUINT_TRACES[0], *flags)
    assert re.search(r"ITF state \d+: cancel needs caller, but no pick of action 'cancel' gives it \(its "
                     r"picks: delay, dt, id, ttl, who\); rename one with --arg cancel.PICK=caller", err)


def test_a_clock_pick_left_in_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(tmp_path, capsys, QUINT_TRACES[0], *without(FLAGS, "--ignore-pick"))
    assert "ITF state 1: pick 'dt' of action 'expire' is no argument of expire" in err
    assert "--ignore-pick dt" in err


@pytest.mark.parametrize("flag, problem", [
    (["--arg", "cancel.who=kaller"], "--arg cancel.who=kaller: cancel has no argument 'kaller' (it takes id, caller)"),
    (["--arg", "revoke.who=caller"], "'revoke' is no operation of duebook"),
    (["--arg", "who"], "--arg who: expected OP.PICK=ARG or PICK=ARG"),
    (["--arg", "who=nobody"], "no operation of duebook takes an argument 'nobody'"),
    (["--time", "during:clock"], "--time during:clock: expected pick:NAME, after:VAR or before:VAR"),
    (["--hook", "mapping.py"], "expected MODULE:FUNCTION or FILE.py:FUNCTION"),
    (["--hook", str(EXAMPLE / "mapping.py") + ":nothing"], "has no function 'nothing'"),
    (["--hook", "no_such_module_here:f"], "cannot load no_such_module_here: ModuleNotFoundError"),
    (["--hook", "missing.py:f"], "no such file missing.py"),
])
def test_a_recipe_that_cannot_work_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    flag: list[str], problem: str) -> None:
    assert problem in refused(tmp_path, capsys, QUINT_TRACES[0], "--mapping", str(MAPPING), *flag)


def test_a_wrong_time_source_is_refused_naming_what_was_tried(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(tmp_path, capsys, QUINT_TRACES[0], *without(FLAGS, "--time"), "--time", "pick:at",
                  "--time", "after:time")
    assert "ITF state 1: no time: tried the pick 'at', the variable 'time' after the step" in err


def write_hook(tmp_path: Path, body: str) -> str:
    (tmp_path / "hook.py").write_text(f"def to_duespec(step):\n    {body}\n")
    return f"{tmp_path / 'hook.py'}:to_duespec"


@pytest.mark.parametrize("body, problem", [
    ("raise KeyError('answer')", "ITF state 1: the mapping hook {hook} raised KeyError: 'answer'"),
    ("return [1]", "ITF state 1: the mapping hook {hook} must return a dict with the keys 'result' and/or 'state'"),
    ("return {'result': 'ok'}", "ITF state 1: the mapping hook's result must be a JSON object"),
    ("return {'state': {'open': []}}", "ITF state 1: the mapping hook's state has the keys open; duebook's "
                                       "observable state has max_open, next_id, open"),
    ("return {'state': {'max_open': 2, 'next_id': 2, 'open': step.after['book']}}",
     "ITF state 4: the step's state holds a map with int keys (1, ...), which a JSON object cannot have"),
])
def test_a_hook_that_misbehaves_is_refused_naming_the_state(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            body: str, problem: str) -> None:
    hook = write_hook(tmp_path, body)
    err = refused(tmp_path, capsys, QUINT_TRACES[0], *without(FLAGS, "--hook"), "--hook", hook)
    assert problem.format(hook=hook) in err


def test_an_int_keyed_map_without_a_hook_is_refused_with_the_way_out(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A spec whose variables carry duespec's state keys, but `open` as Quint's natural map."""
    some = lambda v: {"tag": "Some", "value": v}  # noqa: E731
    deferral = {"id": {"#bigint": "1"}, "owner": "a", "due_at": {"#bigint": "0"}, "expires_at": {"#bigint": "0"}}
    states = [{"now": {"#bigint": "0"}, "max_open": {"#bigint": "2"}, "next_id": {"#bigint": "1"},
               "open": {"#map": []}, "mbt::actionTaken": "init", "mbt::nondetPicks": {}},
              {"now": {"#bigint": "0"}, "max_open": {"#bigint": "2"}, "next_id": {"#bigint": "2"},
               "open": {"#map": [[{"#bigint": "1"}, deferral]]}, "mbt::actionTaken": "schedule",
               "mbt::nondetPicks": {"owner": some("a"), "delay": some({"#bigint": "0"}),
                                    "ttl": some({"#bigint": "0"})}}]
    itf = tmp_path / "natural.itf.json"
    itf.write_text(json.dumps({"vars": [], "states": states}))
    err = refused(tmp_path, capsys, itf, "--system", "duebook")
    assert "ITF state 1: the step's state holds a map with int keys (1, ...)" in err
    assert "--hook" in err and "--no-states" in err
    assert cli_main(["itf", "import", str(itf), "-o", str(tmp_path / "ok.jsonl"), "--system", "duebook",
                     "--no-states"]) == 0


def test_time_can_come_from_before_after_or_a_pick(tmp_path: Path) -> None:
    """`before` is the state the action left, clock-only actions included."""
    some = lambda v: {"tag": "Some", "value": v}  # noqa: E731
    get = {"id": some({"#bigint": "1"})}
    states = [{"t": {"#bigint": "1"}, "mbt::actionTaken": "init", "mbt::nondetPicks": {}},
              {"t": {"#bigint": "5"}, "mbt::actionTaken": "get", "mbt::nondetPicks": get},
              {"t": {"#bigint": "9"}, "mbt::actionTaken": "tock", "mbt::nondetPicks": {}},
              {"t": {"#bigint": "12"}, "mbt::actionTaken": "get",
               "mbt::nondetPicks": {**get, "at": some({"#bigint": "40"})}}]
    itf = tmp_path / "t.itf.json"
    itf.write_text(json.dumps({"vars": ["t"], "states": states}))

    def times(*sources: str) -> list[Any]:
        unused = frozenset() if "pick:at" in sources else frozenset({"at"})
        recipe = ImportRecipe(time=sources, time_actions=("tock",), ignore_picks=unused)
        return [s["now"] for s in read_itf(itf, system="duebook", recipe=recipe)[1]]

    assert times("before:t") == [1, 9]
    assert times("after:t") == [5, 12]
    assert times("pick:at", "before:t") == [1, 40]


def test_renaming_for_every_operation_and_the_mapping_file_checks(tmp_path: Path) -> None:
    some = lambda v: {"tag": "Some", "value": v}  # noqa: E731
    states = [{"now": {"#bigint": "0"}, "mbt::actionTaken": "init", "mbt::nondetPicks": {}},
              {"now": {"#bigint": "0"}, "mbt::actionTaken": "get", "mbt::nondetPicks": {"key": some(3)}},
              {"now": {"#bigint": "0"}, "mbt::actionTaken": "claim", "mbt::nondetPicks": {"key": some(4)}}]
    itf = tmp_path / "k.itf.json"
    itf.write_text(json.dumps({"vars": ["now"], "states": states}))
    steps = read_itf(itf, system="duebook", recipe=ImportRecipe(args={"key": "id"}))[1]
    assert [(s["op"], s["args"]) for s in steps] == [("get", {"id": 3}), ("claim", {"id": 4})]
    bad = tmp_path / "bad.toml"
    bad.write_text('sytem = "duebook"\n')
    with pytest.raises(RecipeError, match="unknown key 'sytem'; known: system, profile"):
        load_mapping(bad)
    bad.write_text("time = 'before:clock'\n")
    with pytest.raises(RecipeError, match="time must be a list"):
        load_mapping(bad)
    bad.write_text("[args\n")
    with pytest.raises(RecipeError, match="not TOML"):
        load_mapping(bad)


def test_the_import_recipe_is_kept_in_the_header(tmp_path: Path) -> None:
    header, _ = read_trace(imported(tmp_path, QUINT_TRACES[0], "--mapping", str(MAPPING)))
    assert header.extra["itf_import"] == {
        "args": {"schedule.who": "owner", "cancel.who": "caller"}, "ignore_picks": ["dt"],
        "time": ["before:clock"], "time_actions": ["advanceTime", "advance", "passTime"],
        "hook": "mapping.py:to_duespec", "states": True}
    assert header.config == {"max_open": 2}


def test_a_hook_module_is_found_from_the_working_directory(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "quint_answers.py").write_text(
        "from importlib import util\n"
        f"spec = util.spec_from_file_location('m', {str(EXAMPLE / 'mapping.py')!r})\n"
        "module = util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        "to_duespec = module.to_duespec\n")
    monkeypatch.chdir(tmp_path)
    recipe = ImportRecipe(args={"schedule.who": "owner", "cancel.who": "caller"}, ignore_picks=frozenset({"dt"}),
                          time=("before:clock",), hook="quint_answers:to_duespec")
    trace = import_itf(QUINT_TRACES[2], tmp_path / "q.jsonl", system="duebook", config={"max_open": 2},
                       recipe=recipe)
    assert all("result" in s and "state" in s for s in read_trace(trace)[1])


def test_errors_of_a_trace_are_trace_errors_not_recipe_errors(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="pass --system"):
        read_itf(QUINT_TRACES[0])


def test_now_var_is_a_pick_then_a_variable_after_the_step(tmp_path: Path) -> None:
    some = lambda v: {"tag": "Some", "value": v}  # noqa: E731
    states = [{"at": {"#bigint": "0"}, "mbt::actionTaken": "init", "mbt::nondetPicks": {}},
              {"at": {"#bigint": "3"}, "mbt::actionTaken": "get", "mbt::nondetPicks": {"id": some(1)}},
              {"at": {"#bigint": "3"}, "mbt::actionTaken": "get",
               "mbt::nondetPicks": {"id": some(1), "at": some({"#bigint": "8"})}}]
    itf = tmp_path / "n.itf.json"
    itf.write_text(json.dumps({"vars": ["at"], "states": states}))
    out = imported(tmp_path, itf, "--system", "duebook", "--now-var", "at")
    assert [s["now"] for s in read_trace(out)[1]] == [3, 8]

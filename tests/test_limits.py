"""The documented limits, safe output files, the target boundary and the one error path
(issue 9), one behaviour per test; tests/test_hostile.py drives the same through the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duespec import limits, outputs
from duespec.cli import main as cli
from duespec.impl.schedules import MAX_CATCH_UP_OCCURRENCES as IMPL_MAX_CATCH_UP
from duespec.impl.schedules import CatchUpTooLong
from duespec.limits import (ORJSON_SHAPE, MAX_CATCH_UP_OCCURRENCES, InputError, LimitExceeded, orjson_exact,
                            parse_json)
from duespec.systems.schedules import ImplTarget, ModelTarget
from duespec.systems.schedules.ops import MAX_OWED_PER_JUMP
from duespec.targets.interface import TargetError
from duespec.targets.deadline import deadline
from duespec.targets.resolve import WatchedTarget, guarded
from duespec.traces.format import TraceError, TraceHeader, read_trace, write_trace
from duespec.traces.itf import export_itf, import_itf

ROOT = Path(__file__).resolve().parent.parent
WINDOW = ROOT / "traces" / "duebook" / "window_edges.jsonl"
START = 1_767_225_600_000
MINUTE = 60_000


# --- reading --------------------------------------------------------------------------------

@pytest.mark.parametrize("text, problem", [
    ("1" * 101, "more than 100 digits"),
    ("[" + "9" * 4301 + "]", "more than 100 digits"),
    ("[" * 65 + "]" * 65, "nested deeper than 64"),
    ('{"a":' * 65 + "1" + "}" * 65, "nested deeper than 64"),
    ("[" * 100_000 + "]" * 100_000, "nested deeper than 64"),
    ("[NaN]", "NaN is not JSON"),
    ("[Infinity]", "Infinity is not JSON"),
    ("[1,", "not JSON"),
])
def test_json_past_a_limit_is_refused_by_name(text: str, problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        parse_json(text.encode())


def test_json_at_the_limits_is_read() -> None:
    assert parse_json(("[" * 64 + "]" * 64).encode()) is not None
    assert parse_json(("9" * 100).encode()) == int("9" * 100)
    assert parse_json(b'["[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["]')


def test_a_line_past_the_limit_is_refused_without_reading_on(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(limits, "MAX_LINE_BYTES", 1000)
    path = tmp_path / "long.jsonl"
    path.write_text(WINDOW.read_text().splitlines()[0] + "\n" + "[" + "1," * 5000 + "1]\n")
    _, steps = read_trace(path)
    with pytest.raises(TraceError, match=r":2: line longer than 1,000 bytes"):
        next(steps)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_special_files_are_refused_before_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(TraceError, match="not a regular file \\(a FIFO\\)"):
        read_trace(fifo)  # would block forever in open() if not refused
    with pytest.raises(TraceError, match="character device"):
        read_trace("/dev/zero")
    with pytest.raises(TraceError, match="a directory"):
        read_trace(tmp_path)


def test_an_itf_document_past_the_size_limit_is_refused_unread(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(limits, "MAX_DOCUMENT_BYTES", 100)
    path = tmp_path / "t.itf.json"
    path.write_text(json.dumps({"states": [{"now": {"#bigint": "1"}}] * 20}))
    with pytest.raises(TraceError, match="over the 100-byte limit"):
        import_itf(path, tmp_path / "t.jsonl", system="duebook")


def test_a_huge_bigint_is_refused_not_converted(tmp_path: Path) -> None:
    export_itf(WINDOW, tmp_path / "w.itf.json")
    document = json.loads((tmp_path / "w.itf.json").read_text())
    document["states"][1]["now"] = {"#bigint": "7" * 5000}
    (tmp_path / "w.itf.json").write_text(json.dumps(document))
    with pytest.raises(TraceError, match="5,000 digits, over the 100-digit limit"):
        import_itf(tmp_path / "w.itf.json", tmp_path / "w.jsonl")


# --- writing --------------------------------------------------------------------------------

def test_output_paths_are_refused_before_any_work(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    link = tmp_path / "link.xml"
    link.symlink_to(a_file)
    for path, problem in ((tmp_path, "not a regular file"), (link, "symbolic link"),
                          ("/dev/full", "not a regular file"), (a_file / "under.xml", "[Nn]ot a directory"),
                          ("x" * 300, "longer than"), ("a\x00b", "NUL byte")):
        with pytest.raises(outputs.OutputError, match=problem):
            outputs.check_output(path)
    with pytest.raises(outputs.OutputError, match="is the input"):
        outputs.check_output(a_file, inputs=[a_file])
    assert a_file.read_text() == "x" and link.resolve() == a_file


def test_a_failed_write_leaves_the_old_file_and_no_partial(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with outputs.AtomicFile(target) as out:
            out.write("new, half")
            raise RuntimeError("interrupted")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
    outputs.write_text(target, "new")
    assert target.read_text() == "new"


def test_a_symlink_swapped_in_before_the_rename_is_not_replaced(tmp_path: Path) -> None:
    target, victim = tmp_path / "out.txt", tmp_path / "victim"
    victim.write_text("precious")
    out = outputs.AtomicFile(target)
    out.write("data")
    target.symlink_to(victim)
    with pytest.raises(outputs.OutputError, match="symbolic link"):
        out.commit()
    assert victim.read_text() == "precious" and not list(tmp_path.glob("*.partial"))


def test_stale_partials_of_dead_writers_are_removed(tmp_path: Path) -> None:
    dead = 2**22 + 12345  # above the default pid_max: no such process
    stale = tmp_path / f"t.jsonl.{dead}.partial"
    stale.write_text("half a trace")
    other = tmp_path / f"other.jsonl.{dead}.partial"
    other.write_text("someone else's")
    write_trace(tmp_path / "t.jsonl", read_trace(WINDOW)[0], [])
    assert not stale.exists() and other.exists()


def test_a_partial_named_with_a_digit_int_refuses_is_left_alone(tmp_path: Path) -> None:
    """`x.jsonl.\u00b2.partial` in a --trace-dir (a superscript two: a digit to str.isdigit,
    not to int) ended every campaign writing there in an internal error."""
    odd = tmp_path / "x.jsonl.\u00b2.partial"
    odd.write_text("")
    assert outputs.remove_dead_partials(tmp_path, of=".jsonl") == [] and odd.exists()
    write_trace(tmp_path / "x.jsonl", read_trace(WINDOW)[0], [])
    assert odd.exists()


@pytest.mark.parametrize("argv", [
    ["bench", "--json=--"], ["suite", "--shard=--"], ["merge", "r.json", "--junit=--"],
    ["conform", "duebook", "--target", "impl", "--ops=--"], ["linearize", "h.ndjson", "--declared=--"]])
def test_an_option_whose_value_is_two_dashes_is_refused_as_argparse_refuses_none(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Before Python 3.13 argparse took `--json=--` for an empty list: internal errors
    (TypeError, IndexError) once a command used it (found by tests/test_argument_fuzz.py)."""
    with pytest.raises(SystemExit) as stop:
        cli(argv)
    flag = argv[-1].split("=")[0]
    assert stop.value.code == 2 and capsys.readouterr().err.splitlines()[-1].endswith(
        f"error: argument {flag}: expected one argument")


@pytest.mark.parametrize("argv, words", [
    (["itf", "export", ""], "'' names no file"), (["itf", "import", "/"], "'/' names no file"),
    (["record", "--listen", "127.0.0.1:\u00b2", "--upstream", "http://127.0.0.1:9", "-o", "o.ndjson"],
     "is not HOST:PORT with a port in [0, 65535]")])
def test_command_lines_the_argument_fuzz_found_are_refused_in_one_line(
        argv: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Each was an internal error (ValueError: an empty name; int("\u00b2"))."""
    assert cli(argv) == 2
    err = capsys.readouterr().err
    assert words in err and "internal error" not in err and len(err.splitlines()) == 1, err


def test_itf_import_never_writes_over_its_input(tmp_path: Path) -> None:
    source = tmp_path / "run.jsonl"
    source.write_bytes(WINDOW.read_bytes())
    assert cli(["itf", "import", str(source)]) == 2  # the default output is the input itself
    assert source.read_bytes() == WINDOW.read_bytes()


def test_no_output_is_written_over_a_file_the_command_reads_or_another_output(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The declared-differences file, an import's mapping file and its hook file are
    inputs too; and two reports into one file would leave only the second. Each is
    refused before any work, and every file stays as it was."""
    declared = tmp_path / "declared.toml"
    declared.write_text("# nothing declared\n")
    export_itf(WINDOW, tmp_path / "w.itf.json")
    mapping = tmp_path / "mapping.toml"
    mapping.write_text('hook = "hook.py:turn"\n')
    hook = tmp_path / "hook.py"
    hook.write_text("def turn(step):\n    return None\n")
    same = tmp_path / "report"
    link = tmp_path / "bench.json"
    link.symlink_to(declared)
    itf = str(tmp_path / "w.itf.json")
    for argv, problem in (
            (["check", "duebook", "--examples", "1", "--declared", str(declared), "--junit", str(declared)],
             "is the input"),
            (["check", "duebook", "--examples", "1", "--declared", str(declared), "--coverage-json",
              str(declared)], "is the input"),
            (["check", "duebook", "--examples", "1", "--junit", str(same), "--coverage-json", str(same)],
             "name the same file"),
            (["itf", "import", itf, "--mapping", str(mapping), "-o", str(mapping)], "is the input"),
            (["itf", "import", itf, "--mapping", str(mapping), "-o", str(hook)], "is the input"),
            (["itf", "import", itf, "--hook", f"{hook}:turn", "-o", str(hook)], "is the input"),
            (["bench", "--only", "no-such-section", "--json", str(link)], "symbolic link")):
        assert cli(argv) == 2, argv
        assert problem in capsys.readouterr().err, argv
    assert declared.read_text() == "# nothing declared\n" and not same.exists()
    assert mapping.read_text() == 'hook = "hook.py:turn"\n' and hook.read_text().startswith("def turn")


@pytest.mark.parametrize("seed", ["3", 1.5, True, [1]])
def test_itf_import_validates_the_recorded_seed(tmp_path: Path, seed: Any) -> None:
    export_itf(WINDOW, tmp_path / "w.itf.json")
    document = json.loads((tmp_path / "w.itf.json").read_text())
    document["#meta"]["duespec"]["seed"] = seed
    (tmp_path / "w.itf.json").write_text(json.dumps(document))
    with pytest.raises(TraceError, match='"seed" must be an integer or null'):
        import_itf(tmp_path / "w.itf.json", tmp_path / "w.jsonl")
    assert not (tmp_path / "w.jsonl").exists()


def test_the_writer_refuses_what_the_reader_would(tmp_path: Path) -> None:
    header = read_trace(WINDOW)[0]
    deep: Any = 1
    for _ in range(70):
        deep = [deep]
    with pytest.raises(TraceError, match="nested deeper than 64"):
        write_trace(tmp_path / "t.jsonl", header, [{"i": 0, "op": "get", "args": {"id": deep}, "now": 0}])
    with pytest.raises(TraceError, match="more than 100 digits"):
        write_trace(tmp_path / "t.jsonl", header, [{"i": 0, "op": "get", "args": {"id": 10**200}, "now": 0}])
    assert not list(tmp_path.iterdir())


# --- catch-up ------------------------------------------------------------------------------

def _minutely(target: Any) -> None:
    target.reset({"profile": "lean", "retry_timeout": 5000})
    target.step("schedule.create", {"id": "m", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}",
                                    "promiseTimeout": MINUTE, "promiseParam": {"headers": {}, "data": None},
                                    "promiseTags": {}}, START)


@pytest.mark.parametrize("op, args", [("tick", {}), ("schedule.timeout", {"id": "m"})])
def test_a_catch_up_past_the_bound_is_refused_and_changes_nothing(op: str, args: dict[str, Any]) -> None:
    year_9999 = 253_402_300_799_999
    for target, refusal in ((ModelTarget(), LimitExceeded), (ImplTarget(), CatchUpTooLong)):
        _minutely(target)
        before = target.observe()
        started = time.process_time()
        with pytest.raises(refusal, match="1,000,000"):
            target.step(op, args, year_9999)
        assert time.process_time() - started < 5
        assert target.observe() == before


def test_the_bound_is_one_number_and_the_machine_stays_below_it() -> None:
    assert IMPL_MAX_CATCH_UP == MAX_CATCH_UP_OCCURRENCES
    assert MAX_OWED_PER_JUMP < MAX_CATCH_UP_OCCURRENCES
    # A year of minutely ticks (the bench's outage) is well inside it.
    assert 525_600 < MAX_CATCH_UP_OCCURRENCES


def test_replay_of_a_catch_up_bomb_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    header = {"duespec_trace": 1, "system": "schedules", "profile": "lean",
              "config": {"profile": "lean", "retry_timeout": 5000}, "seed": None, "producer": "t",
              "created": "2026-01-01T00:00:00+00:00"}
    create = {"i": 0, "op": "schedule.create", "args": {
        "id": "m", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}", "promiseTimeout": 1,
        "promiseParam": {"headers": {}, "data": None}, "promiseTags": {}}, "now": START}
    tick = {"i": 1, "op": "tick", "args": {}, "now": START + 10 * 365 * 86_400_000}
    path = tmp_path / "bomb.jsonl"
    path.write_text("\n".join(map(json.dumps, (header, create, tick))) + "\n")
    assert cli(["replay", str(path), "--target", "impl"]) == 2
    assert "more than 1,000,000 schedule occurrences" in capsys.readouterr().err


# --- the target boundary and the error path --------------------------------------------------

@pytest.mark.parametrize("escape, words", [
    (SystemExit(0), "the target exited (SystemExit 0)"),
    (KeyboardInterrupt(), "the target raised KeyboardInterrupt"),
    (RuntimeError("boom"), "the target raised RuntimeError: boom"),
])
def test_anything_target_code_raises_becomes_a_target_error(escape: BaseException, words: str) -> None:
    def target_code() -> None:
        raise escape

    with pytest.raises(TargetError) as caught:
        guarded("step x", target_code)
    assert words in str(caught.value) and caught.value.exc_type == type(escape).__name__
    assert any("target_code" in frame for frame in caught.value.frames)


def test_close_is_optional_and_answers_must_be_json_objects() -> None:
    class NoClose:
        def reset(self, config: Any) -> None: ...
        def step(self, op: str, args: Any, now: int) -> Any: return {"ok": {1, 2}}
        def observe(self) -> Any: return [1]

    target = WatchedTarget(NoClose(), 5)  # type: ignore[arg-type]
    target.close()
    with pytest.raises(TargetError, match="holding a set") as step:
        target.step("x", {}, 0)
    with pytest.raises(TargetError, match="returned list, not a JSON object") as observed:
        target.observe()
    assert step.value.unusable and observed.value.unusable


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="POSIX timers")
def test_a_deadline_inside_another_keeps_the_outer_one() -> None:
    class Outer(BaseException):
        pass

    def outer_fired(signum: int, frame: object) -> None:
        raise Outer()

    previous = signal.signal(signal.SIGALRM, outer_fired)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(TargetError, match="did not return within 0.1s"):
            with deadline(0.1, "inner"):
                time.sleep(2)
        with pytest.raises(Outer):  # the outer deadline still fires, on time
            time.sleep(2)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="POSIX timers")
def test_a_deadline_due_before_its_block_starts_is_the_blocks_overrun() -> None:
    """--timeout 1e-9 passes the range check; its alarm fires inside __enter__, where
    Python calls no __exit__: it once left the handler armed and surfaced as an internal
    error. Now it is the block's TargetError, and no alarm is left behind."""
    before = signal.getsignal(signal.SIGALRM)
    for _ in range(20):
        try:
            with deadline(1e-9, "the model's reset"):
                time.sleep(0.01)
        except TargetError as error:
            assert "did not return within 1e-09s" in str(error)
        else:
            raise AssertionError("a deadline of a nanosecond let a 10 ms block finish")
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        assert signal.getsignal(signal.SIGALRM) == before
    assert cli(["replay", str(WINDOW), "--target", "model", "--timeout", "1e-9"]) == 2


@pytest.mark.parametrize("url, problem", [("http://[::1", "Invalid IPv6 URL"),
                                          ("http://a b", "space or control character"),
                                          ("http://a\tb:80", "space or control character")])
def test_a_url_duespec_cannot_parse_is_a_usage_error_naming_it(url: str, problem: str, capsys) -> None:  # type: ignore[no-untyped-def]
    """Not an internal error, and not the target's fault: nothing was reached."""
    for argv in (["conform", "schedules", "--target", url, "--examples", "1"],
                 ["replay", str(ROOT / "traces" / "schedules"), "--target", url]):
        assert cli(argv) == 2
        err = capsys.readouterr().err
        assert problem in err and "internal error" not in err and "target raised" not in err


ALARM_IN_A_DESTRUCTOR = """
import time
from duespec.targets.resolve import guarded
from duespec.targets.interface import TargetError

class SlowToDie:
    def __del__(self):  # the first alarm lands in here, where Python ignores what it raises
        time.sleep(0.5)

def endless():
    SlowToDie()
    while True:
        pass

try:
    guarded("step tick", endless, 0.3)
except TargetError as error:
    print("caught:", error)
"""


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="POSIX timers")
def test_a_deadline_swallowed_by_a_destructor_fires_again() -> None:
    """#91 of the schedules mutation run: an endless tick that allocates had its one alarm
    raised inside a gc callback, which Python ignores, and `duespec check` ran on forever."""
    done = subprocess.run([sys.executable, "-c", ALARM_IN_A_DESTRUCTOR], capture_output=True, text=True,
                          timeout=30)
    assert "Exception ignored" in done.stderr  # the first alarm was swallowed ...
    assert done.stdout.strip() == "caught: step tick did not return within 0.3s (--timeout)"  # ... not the next


def test_an_internal_error_is_one_paragraph_and_debug_shows_the_traceback(
        monkeypatch: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from duespec.traces import replay

    def broken(args: Any) -> int:
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(replay, "main", broken)
    assert cli(["replay", str(WINDOW)]) == 2
    err = capsys.readouterr().err
    assert "internal error: ZeroDivisionError: planted" in err and "--debug" in err and "Traceback" not in err
    with pytest.raises(ZeroDivisionError):
        cli(["--debug", "replay", str(WINDOW)])
    with pytest.raises(ZeroDivisionError):
        cli(["replay", str(WINDOW), "--debug"])


def test_timeouts_are_checked_before_any_work(capsys: pytest.CaptureFixture[str]) -> None:
    for value in ("nan", "inf", "0", "-1", "1e9"):
        with pytest.raises(SystemExit) as stop:
            cli(["replay", str(WINDOW), "--timeout", value])
        assert stop.value.code == 2
    assert "--timeout" in capsys.readouterr().err


def test_a_campaign_budget_past_the_limit_is_refused_before_its_plan_is_made(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`check --examples 99999999999999999999` planned its chunks for ever, past --budget,
    before a run: the plan of chunks is made whole first."""
    for command in (["check", "duebook", "--budget", "1"], ["suite"]):
        with pytest.raises(SystemExit) as stop:
            cli([*command, "--examples", str(limits.MAX_EXAMPLES + 1)])
        assert stop.value.code == 2
        assert f"--examples: must be at most {limits.MAX_EXAMPLES:,}" in capsys.readouterr().err


def test_a_target_header_that_is_not_json_safe_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="header"):
        write_trace(tmp_path / "t.jsonl", TraceHeader("duebook", "seed", {"max_open": 1}, seed="x"), [])  # type: ignore[arg-type]
    assert not list(tmp_path.iterdir())


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=16)


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES, ascii_only=st.booleans())
def test_the_fast_reader_reads_exactly_what_the_strict_one_does(value: Any, ascii_only: bool) -> None:
    """orjson takes the lines it can read exactly; what it reads must be what json reads,
    integers past 64 bits, -0.0 and lone surrogates (escaped or not) included."""
    text = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    try:
        expected: Any = repr(json.loads(text.decode("utf-8")))
    except UnicodeDecodeError:
        expected = InputError
    try:
        actual: Any = repr(parse_json(text))
    except InputError:
        actual = InputError
    assert actual == expected



@pytest.mark.parametrize("text, fast", [
    (b'{"call": 1735689600001307081, "corrId": "c0-1735689600001307081"}', True),  # a capture's ns instants
    (b"9999999999999999999", True), (b"[-999999999999999999]", True), (b"-9223372036854775808", False),
    (b"-9223372036854775809", False), (b"[-9999999999999999999]", False), (b'{"a":-9999999999999999999}', False),
    (b"18446744073709551616", False), (b"-99999999999999999999", False), (b"[1,-9999999999999999999]", False),
    (b'"x-9999999999999999999"', False),  # a string, sent to json all the same: slower, never wrong
])
def test_orjson_reads_integers_near_64_bits_as_json_does(text: bytes, fast: bool) -> None:
    """Integers of 19 digits go to orjson (a capture has nanosecond instants on every
    line), which reads them as json does; a minus before 19 digits, or 20 digits, may
    leave 64 bits, where orjson reads a float, so such text takes json's path."""
    assert orjson_exact(text.translate(ORJSON_SHAPE)) is fast
    assert repr(parse_json(text)) == repr(json.loads(text))
    if fast:
        assert repr(orjson.loads(text)) == repr(json.loads(text))

"""Input that was once let through, or refused the wrong way, now refused cleanly: one line
naming the problem and the documented exit code (2: bad usage or malformed input), never a
traceback, a wrong exit code or a silent reading."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from duespec.cli import main
from duespec.wire.serve import WireServer

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "quint-duebook"
ITF = sorted((EXAMPLE / "traces").glob("duebook_*.itf.json"))[0]
ITF_FLAGS = ["--system", "duebook", "--config", '{"max_open": 2}', "--arg", "schedule.who=owner",
             "--arg", "cancel.who=caller", "--ignore-pick", "dt", "--time", "before:clock"]
TRACE = ROOT / "traces" / "duebook" / "full_book.jsonl"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """(exit code, stderr) of a duespec command run in this process, argparse's exits included."""
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def hook(tmp_path: Path, body: str) -> str:
    (tmp_path / "hook.py").write_text(f"def to_duespec(step):\n    {body}\n")
    return f"{tmp_path / 'hook.py'}:to_duespec"


def test_a_hook_raising_keyboard_interrupt_is_the_hook_s_failure_not_a_ctrl_c(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(["itf", "import", str(ITF), "-o", str(tmp_path / "o.jsonl"), *ITF_FLAGS,
                     "--hook", hook(tmp_path, "raise KeyboardInterrupt()")], capsys)
    assert code == 2 and "the mapping hook" in err and "raised KeyboardInterrupt" in err
    (tmp_path / "exits.py").write_text("raise SystemExit(0)\n")
    code, err = run(["itf", "import", str(ITF), "-o", str(tmp_path / "o.jsonl"), *ITF_FLAGS,
                     "--hook", f"{tmp_path / 'exits.py'}:f"], capsys)
    assert code == 2 and "cannot load" in err and "SystemExit" in err


@pytest.mark.parametrize("value, problem", [
    ("10**5000", "returned what JSON cannot hold"),
    ("10**200", "returned a number of more than 100 digits"),
])
def test_a_hook_returning_a_huge_number_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 value: str, problem: str) -> None:
    spec = hook(tmp_path, f"return {{'result': {{'ok': {value}}}}}")
    code, err = run(["itf", "import", str(ITF), "-o", str(tmp_path / "o.jsonl"), *ITF_FLAGS, "--hook", spec], capsys)
    assert code == 2 and f"the mapping hook {spec} {problem}" in err


def test_a_100k_deep_stdio_reply_is_the_target_s_malformed_reply(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "deep.py"
    target.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    if json.loads(line)['type'] == 'hello':\n"
        "        print(json.dumps({'type': 'hello', 'protocol': 1, 'systems': ['duebook']}), flush=True)\n"
        "    else:\n"
        "        print('[' * 100000 + ']' * 100000, flush=True)\n")
    code, err = run(["conform", "duebook", "--target", f"stdio:{sys.executable} {target}", "--examples", "2",
                     "--steps", "2", "--progress", "0"], capsys)
    assert code == 2 and "not JSON within duespec's limits (nested deeper than 64 levels" in err
    assert "RecursionError" not in err


def test_duplicate_keys_are_refused_where_read_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a trace header
    lines = TRACE.read_text().splitlines(keepends=True)
    twice = tmp_path / "twice.jsonl"
    twice.write_text(lines[0].replace('{"duespec_trace": 1,', '{"duespec_trace": 1, "system": "schedules",', 1)
                     + "".join(lines[1:]))
    code, err = run(["replay", str(twice), "--target", "model"], capsys)
    assert code == 2 and "the key 'system' appears twice in one object" in err
    # an ITF document
    document = ITF.read_text()
    itf = tmp_path / "twice.itf.json"
    itf.write_text(document.replace('"#meta":', '"vars": [], "#meta":', 1))
    code, err = run(["itf", "import", str(itf), "-o", str(tmp_path / "o.jsonl"), *ITF_FLAGS], capsys)
    assert code == 2 and "appears twice" in err
    # a stdio target's reply
    target = tmp_path / "twice.py"
    target.write_text(
        "import sys\n"
        "for line in sys.stdin:\n"
        "    print('{\"type\": \"hello\", \"type\": \"hello\", \"protocol\": 1, \"systems\": [\"duebook\"]}', flush=True)\n")
    code, err = run(["conform", "duebook", "--target", f"stdio:{sys.executable} {target}", "--examples", "1",
                     "--steps", "1", "--progress", "0"], capsys)
    assert code == 2 and "the key 'type' appears twice" in err
    # a request to duespec serve
    status, answer = WireServer().answer(b'{"kind": "promise.get", "kind": "schedule.get", "head": '
                                         b'{"corrId": "1", "version": "2026-04-01"}, "data": {"id": "x"}}')
    assert status == 400 and "duplicate key 'kind'" in answer["data"]


@pytest.mark.parametrize("version", ["1.0", "true", '"1"'])
def test_a_trace_version_that_is_not_the_integer_1_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              version: str) -> None:
    lines = TRACE.read_text().splitlines(keepends=True)
    trace = tmp_path / "v.jsonl"
    trace.write_text(lines[0].replace('"duespec_trace": 1', f'"duespec_trace": {version}', 1) + "".join(lines[1:]))
    code, err = run(["replay", str(trace), "--target", "model"], capsys)
    assert code == 2 and f"unsupported format version {version}" in err


@pytest.mark.parametrize("ops", [",", "claim,", ",,claim", " , "])
def test_ops_naming_nothing_are_refused(ops: str, capsys: pytest.CaptureFixture[str]) -> None:
    for flag in ("--ops", "--skip-ops"):
        code, err = run(["conform", "duebook", "--target", "impl", flag, ops, "--examples", "1", "--progress", "0"],
                        capsys)
        assert code == 2 and "holds an empty op name" in err


def test_bench_only_matching_nothing_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(["bench", "--only", "nope"], capsys)
    assert code == 2 and "--only 'nope' matches no bench section; sections: " in err


@pytest.mark.parametrize("seconds", ["-1", "nan", "inf", "soon"])
def test_progress_must_be_seconds_of_zero_or_more(seconds: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(["conform", "duebook", "--target", "impl", "--progress", seconds], capsys)
    assert code == 2 and "--progress" in err


def test_suite_checks_its_trace_folder_before_any_work() -> None:
    """Before: the proofs and campaigns ran first (minutes), then the folder was found missing."""
    done = subprocess.run([sys.executable, "-m", "duespec", "suite", "--traces", "/nonexistent/traces"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 2
    assert "--traces '/nonexistent/traces': no such folder" in done.stderr and "== proofs" not in done.stdout


def test_serve_on_a_file_that_is_no_store_leaves_no_lock(tmp_path: Path) -> None:
    for bad in (tmp_path / "garbage.db", tmp_path / "a-folder"):
        if bad.name.endswith(".db"):
            bad.write_text("this is not a SQLite database, it is much longer than its header " * 4)
        else:
            bad.mkdir()
        done = subprocess.run([sys.executable, "-m", "duespec", "serve", "schedules", "--port", "0", "--db", str(bad)],
                              capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert done.returncode == 2 and "cannot open the store" in done.stderr
        assert not Path(f"{bad}.lock").exists()


def test_itf_some_without_a_value_is_refused() -> None:
    """Already fixed before these refusals: tests/test_itf.py
    test_an_option_some_without_exactly_a_value_is_refused covers the CLI; the reader itself here."""
    from duespec.traces.format import TraceError
    from duespec.traces.itf.values import from_itf

    with pytest.raises(TraceError, match='an Option "Some" must hold exactly a "value"'):
        from_itf({"tag": "Some"}, "here")
    assert json.loads('{"tag": "Some", "value": 1}')["value"] == from_itf({"tag": "Some", "value": 1}, "here")

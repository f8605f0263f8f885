"""One bounded reader for every file a user gives (issue 41, items 1 and 6): regular files
only, refused before a byte is read; bounded in size; and strict framing of JSON Lines, in
which a last line without its newline is whole when it parses."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from duespec import limits
from duespec.histories.format import Event, HistoryError, HistoryHeader, read_history
from duespec.histories.resonate_valid import read_any_history, resonate_valid_line
from duespec.limits import InputError, JsonLines

HEADER = HistoryHeader("schedules", "pinned", {"profile": "lean", "retry_timeout": 5000})
#: A read of a promise nobody created, answered 404: linearizable.
FIRST = Event("c0", "promise.get", {"id": "p"}, 1, 5, 1000, 1000, "ok", {"status": 404}, 1000)
#: The same read answered 200 afterwards: no order of the calls explains it.
VIOLATION = Event("c1", "promise.get", {"id": "p"}, 6, 9, 1000, 1000, "ok",
                  {"status": 200, "promise": {"id": "p"}}, 1000)


def duespec(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "duespec", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


def joined(path: Path, lines: list[dict]) -> str:
    """Lines as a writer using "\\n".join leaves them: the last one without its newline."""
    path.write_text("\n".join(json.dumps(line) for line in lines))
    return str(path)


# --- framing --------------------------------------------------------------------------------

def frames(data: bytes, **options: object) -> tuple[list[tuple[int, object]], int | None]:
    lines = JsonLines(io.BytesIO(data), **options)  # type: ignore[arg-type]
    return list(lines), lines.cut_short


def test_a_last_line_without_a_newline_is_whole_when_it_parses() -> None:
    assert frames(b'{"a":1}\n{"b":2}') == ([(1, {"a": 1}), (2, {"b": 2})], None)
    assert frames(b'{"a":1}\n{"b":2}\n') == ([(1, {"a": 1}), (2, {"b": 2})], None)


def test_only_an_unparseable_final_fragment_is_cut_short() -> None:
    assert frames(b'{"a":1}\n{"b":') == ([(1, {"a": 1})], 2)
    assert frames('{"a":1}\n{"b":"\u00e9'.encode()[:-1]) == ([(1, {"a": 1})], 2)  # mid-character


def test_a_broken_line_before_the_last_is_an_error_not_truncation() -> None:
    with pytest.raises(InputError, match="not JSON") as caught:
        frames(b'{"a":1}\n{"b":\n{"c":3}\n')
    assert caught.value.line == 2


def test_blank_lines_are_refused_unless_skipped() -> None:
    with pytest.raises(InputError, match="blank line"):
        frames(b'{"a":1}\n\n{"b":2}\n')
    assert frames(b'{"a":1}\n\n{"b":2}\n', skip_blank=True)[0] == [(1, {"a": 1}), (3, {"b": 2})]


def test_a_lines_file_past_its_size_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.ndjson"
    path.write_bytes(b'{"a":1}\n' * 100)
    with open(path, "rb") as handle, pytest.raises(InputError, match="over the 500-byte limit"):
        JsonLines(handle, limit=500)  # by its size, before a byte is read
    with pytest.raises(InputError, match="over the 500-byte limit"):
        list(JsonLines(io.BytesIO(b'{"a":1}\n' * 100), limit=500))  # and while reading


def test_a_document_past_its_size_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_bytes(b" " * 2000 + b"{}")
    with pytest.raises(InputError, match="2,002 bytes, over the 1,000-byte limit"):
        limits.read_file(path, 1000)
    with pytest.raises(InputError, match="cannot read: No such file"):
        limits.read_file(tmp_path / "missing.json")


# --- item 1: linearize keeps a complete unterminated last line -----------------------------

def test_history_readers_keep_a_whole_last_line_without_its_newline(tmp_path: Path) -> None:
    path = joined(tmp_path / "h.ndjson", [HEADER.to_json(), FIRST.to_json(), VIOLATION.to_json()])
    history = read_history(path)
    assert not history.truncated and [e.client for e in history.events] == ["c0", "c1"]
    valid = tmp_path / "v.ndjson"
    valid.write_text("\n".join(json.dumps(resonate_valid_line(e, 0)) for e in (FIRST, VIOLATION)))
    history = read_any_history(valid)
    assert not history.truncated and len(history.events) == 2


def test_a_violating_history_joined_with_newlines_is_not_linearizable_in_both_formats(tmp_path: Path) -> None:
    """Issue 41 item 1: the last call (the violation) was dropped as "cut short", exit 0."""
    path = joined(tmp_path / "h.ndjson", [HEADER.to_json(), FIRST.to_json(), VIOLATION.to_json()])
    run = duespec("linearize", path, "--budget", "20")
    assert run.returncode == 1 and run.stdout.startswith("NOT LINEARIZABLE"), run.stdout + run.stderr
    assert "CUT SHORT" not in run.stdout
    valid = tmp_path / "v.ndjson"
    valid.write_text("\n".join(json.dumps(resonate_valid_line(e, 0)) for e in (FIRST, VIOLATION)))
    run = duespec("linearize", str(valid), "--budget", "20")
    assert run.returncode == 1 and run.stdout.startswith("NOT LINEARIZABLE"), run.stdout + run.stderr


def test_a_verdict_over_a_cut_short_history_says_so_on_its_verdict_line(tmp_path: Path) -> None:
    path = tmp_path / "h.ndjson"
    path.write_text(json.dumps(HEADER.to_json()) + "\n" + json.dumps(FIRST.to_json()) + "\n"
                    + json.dumps(VIOLATION.to_json())[:30])
    history = read_history(path)
    assert history.truncated and len(history.events) == 1
    run = duespec("linearize", str(path), "--budget", "20", "--json", str(tmp_path / "v.json"))
    first = run.stdout.splitlines()[0]
    assert run.returncode == 0 and first.startswith("LINEARIZABLE") and "INPUT CUT SHORT" in first, run.stdout
    assert any("cut short" in note for note in json.loads((tmp_path / "v.json").read_text())["notes"])
    path.write_text(json.dumps(HEADER.to_json())[:20])
    with pytest.raises(HistoryError, match="header line is cut short"):
        read_history(path)


# --- item 6: no file a user gives is read without bound -------------------------------------

@pytest.mark.long
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_devices_fifos_and_sockets_are_refused_by_every_reader_before_a_byte_is_read(tmp_path: Path) -> None:
    """Issue 41 item 6: `merge /dev/zero`, a FIFO and `conform --declared /dev/zero` read
    without bound (a FIFO with no writer blocks forever in open)."""
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    (tmp_path / "zero.toml").symlink_to("/dev/zero")
    for argv, kind in (
            (["merge", "/dev/zero"], "character device"),
            (["merge", str(fifo)], "FIFO"),
            (["conform", "duebook", "--target", "impl", "--examples", "1", "--declared", "/dev/zero"],
             "character device"),
            (["check", "duebook", "--examples", "1", "--declared", str(tmp_path / "zero.toml")], "character device"),
            (["check", "duebook", "--examples", "1", "--declared", str(fifo)], "FIFO"),
            (["itf", "import", str(fifo), "--system", "duebook", "-o", str(tmp_path / "o.jsonl")], "FIFO"),
            (["itf", "import", str(tmp_path / "x.itf.json"), "--mapping", "/dev/zero"], "character device"),
            (["replay", str(fifo)], "FIFO"),
            (["linearize", "/dev/zero"], "character device"),
            (["linearize", str(fifo)], "FIFO"),
            (["export", str(fifo), "--format", "resonate-valid", "-o", str(tmp_path / "o.ndjson")], "FIFO")):
        run = duespec(*argv, cwd=tmp_path, timeout=60)
        assert run.returncode == 2, (argv, run.returncode, run.stderr)
        assert f"not a regular file (a {kind})" in run.stderr, (argv, run.stderr)
        assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1, (argv, run.stderr)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_a_baseline_is_read_by_the_bounded_reader_too(tmp_path: Path) -> None:
    """`conform --baseline /dev/zero` read 2.7 GB before it ended, and a FIFO blocked
    forever: the baseline bypassed the bounded reader. (Run under a 1 GB address-space
    limit, so that the unbounded read ends in MemoryError here, not in the machine's OOM.)"""
    import resource

    def one_gigabyte() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    fifo = tmp_path / "baseline.json"
    os.mkfifo(fifo)
    for path, kind in (("/dev/zero", "character device"), (str(fifo), "FIFO")):
        run = subprocess.run([sys.executable, "-m", "duespec", "conform", "duebook", "--target", "impl",
                              "--examples", "1", "--baseline", path], capture_output=True, text=True,
                             timeout=60, cwd=tmp_path, preexec_fn=one_gigabyte)
        assert run.returncode == 2, (path, run.returncode, run.stderr)
        assert run.stderr == (f"duespec conform: --baseline {path}: not a regular file (a {kind}); duespec reads "
                              f"its inputs only from regular files\n"), run.stderr


def test_sigterm_before_the_first_search_is_named_sigterm_not_ctrl_c() -> None:
    """A conform waiting for its target to start, sent SIGTERM (its watchdog sends it again
    8 s later), said "interrupted (Ctrl-C)"."""
    from duespec.campaigns.stopping import Stopper
    from duespec.cli import explain
    from duespec.targets.resolve import UserInterrupt

    stopper = Stopper()
    with pytest.raises(UserInterrupt) as caught, stopper.signals():
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)  # the handler runs at the next bytecode boundary in the main thread
    assert stopper.phase == "setup" and explain(caught.value) == "interrupted (SIGTERM); targets stopped"
    assert explain(UserInterrupt()) == "interrupted (Ctrl-C); targets stopped"


def test_the_pytest_plugin_refuses_a_declared_device_without_reading_it(tmp_path: Path) -> None:
    """Issue 41 item 6: `pytest --duespec-declared /dev/zero` was OOM-killed."""
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--duespec-target", "impl",
                          "--duespec-examples", "1", "--duespec-declared", "/dev/zero", "-k", "duespec"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert "not a regular file (a character device)" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]
    assert run.returncode == 1 and "Traceback" not in run.stdout


def test_a_report_too_big_to_merge_is_refused_by_its_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from duespec.cli import main as cli

    monkeypatch.setattr(limits, "MAX_REPORT_BYTES", 100)
    monkeypatch.setattr("duespec.campaigns.report_json.MAX_REPORT_BYTES", 100)
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"duespec_report": 1, "campaigns": [], "padding": "x" * 200}))
    assert cli(["merge", str(path)]) == 2
    assert "over the 100-byte limit" in capsys.readouterr().err


# --- item 7: a lone surrogate read from a file is escaped on the way out ---------------------

def test_a_lone_surrogate_in_a_client_name_still_gets_its_verdict_and_reports(tmp_path: Path) -> None:
    """Issue 41 item 7: "internal error: UnicodeEncodeError", exit 2, no HTML or JSON."""
    path = tmp_path / "h.ndjson"
    text = "".join(json.dumps(line) + "\n" for line in (HEADER.to_json(), FIRST.to_json(), VIOLATION.to_json()))
    path.write_text(text.replace('"client": "c1"', '"client": "c\\ud800"'))
    assert read_history(path).events[1].client == "c\ud800"
    html, verdict = tmp_path / "v.html", tmp_path / "v.json"
    run = duespec("linearize", str(path), "--budget", "20", "--html", str(html), "--json", str(verdict))
    assert run.returncode == 1 and run.stdout.startswith("NOT LINEARIZABLE"), run.stdout + run.stderr
    assert "internal error" not in run.stderr and "c\\ud800" in run.stdout
    assert json.loads(verdict.read_text())["counterexample"]["events"][0]["client"] == "c\ud800"
    assert "c\\ud800" in html.read_text(encoding="utf-8")
    exported = tmp_path / "v.ndjson"  # and the history in the other format says the same
    assert duespec("export", str(path), "--format", "resonate-valid", "-o", str(exported)).returncode == 0
    assert duespec("linearize", str(exported), "--budget", "20").returncode == 1

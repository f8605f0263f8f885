"""The stdio reader under load it was not built for: a reply line of megabytes arriving in
many pieces, a program that forgets to flush, and a person pressing Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from duespec.targets import stdio
from duespec.targets.interface import TargetError
from duespec.targets.stdio import StdioTargetFactory

#: A duebook-shaped program: observe answers an `open` list of argv[1] entries, written in
#: pieces of argv[2] bytes; step never flushes when argv[3] is "noflush"; it writes its pid
#: to argv[4] when given.
PROGRAM = textwrap.dedent('''
    import json, os, sys
    entries, piece, flushing = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] != "noflush"
    if len(sys.argv) > 4:
        open(sys.argv[4], "w").write(str(os.getpid()))
    out = os.fdopen(1, "wb", buffering=1 << 16)  # buffered even under PYTHONUNBUFFERED
    for line in sys.stdin:
        kind = json.loads(line)["type"]
        if kind == "hello":
            reply = {"type": "hello", "protocol": 1, "systems": ["duebook"]}
        elif kind == "reset":
            reply = {"type": "reset"}
        elif kind == "observe":
            reply = {"type": "observe", "state": {"max_open": 3, "next_id": 1, "open": [
                {"id": n, "owner": "o" * 40, "due_at": n, "expires_at": 0} for n in range(entries)]}}
        else:
            out.write(b'{"type": "step", "response": {"error": "not_found"}}\\n')
            if flushing:
                out.flush()
            continue
        data = (json.dumps(reply) + "\\n").encode()
        for start in range(0, len(data), piece):
            out.write(data[start:start + piece]); out.flush()
''')


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "program.py"
    path.write_text(PROGRAM)
    return path


class CountingBuffer(bytearray):
    """A read buffer that counts how many bytes `find` looks at."""

    searched = 0

    def find(self, sub: bytes, start: int = 0, *rest: int) -> int:  # type: ignore[override]
        CountingBuffer.searched += len(self) - start
        return super().find(sub, start, *rest)


def test_a_long_reply_in_small_pieces_is_read_whole_searching_each_byte_once(
        program: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stdio, "_READ_SIZE", 4096)  # many reads for one line
    factory = StdioTargetFactory([sys.executable, str(program), "60000", "1000", "flush"], "duebook")
    try:
        target = factory()
        process = factory._process
        assert process is not None
        process._buffer = CountingBuffer()
        CountingBuffer.searched = 0
        state = target.observe()
        line_length = len(json.dumps({"type": "observe", "state": state})) + 1
        assert len(state["open"]) == 60000 and state["open"][-1]["id"] == 59999
        assert line_length > 4_000_000
        # Linear: every byte searched for the newline about once, not once per chunk.
        assert CountingBuffer.searched <= line_length + 4096, (CountingBuffer.searched, line_length)
    finally:
        factory.close()


def test_a_program_that_does_not_flush_is_told_to(program: Path) -> None:
    factory = StdioTargetFactory([sys.executable, str(program), "0", "100", "noflush"], "duebook",
                                 timeout=1.0)
    try:
        target = factory()
        with pytest.raises(TargetError) as raised:
            target.step("get", {"id": 1}, 0)
        message = str(raised.value)
        assert "did not answer within 1s" in message
        assert "flush" in message and "docs/protocol.md" in message
    finally:
        factory.close()


@pytest.mark.long
def test_ctrl_c_cuts_conform_short_as_incomplete_after_stopping_the_target(
        program: Path, tmp_path: Path) -> None:
    """Ctrl-C in the middle of a step that never ends: the search is ended by the stop's
    hard deadline, the report says INCOMPLETE (exit 3, docs/campaigns.md), and the target is
    stopped."""
    pid_file = tmp_path / "pid"
    target = f"stdio:{sys.executable} {program} 0 100 noflush {pid_file}"
    conform = subprocess.Popen(
        [sys.executable, "-m", "duespec", "conform", "duebook", "--target", target, "--timeout", "60",
         "--progress", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline and conform.poll() is None, conform.communicate()
        time.sleep(0.1)
    time.sleep(1.0)  # the campaign is waiting on a step the program never flushes
    target_pid = int(pid_file.read_text())
    conform.send_signal(signal.SIGINT)
    out, err = conform.communicate(timeout=30)
    assert conform.returncode == 3, (out, err)
    assert out.startswith("INCOMPLETE: duebook [seed]") and "CUT SHORT by SIGINT" in out, out
    assert "Traceback" not in out + err
    with pytest.raises(ProcessLookupError):
        for _ in range(50):  # reaped by conform; give the kernel a moment
            os.kill(target_pid, 0)
            time.sleep(0.1)

"""A target that is any program, in any language, speaking JSON lines on stdin/stdout.

The protocol is written down in docs/protocol.md. One process serves a whole campaign:
every example starts with a `reset`, so the cost of starting an interpreter is paid once,
not once per Hypothesis example. Anything that is not a well-formed answer (a crash, a
garbage line, a reply of the wrong type, silence past the timeout) becomes a
`TargetError` that names the problem and shows the offending line, and the process is
discarded so the next example starts from a clean one.
"""

from __future__ import annotations

import json
import os
import selectors
import shlex
import subprocess
import threading
import time
import weakref
from collections import deque
from typing import IO, NoReturn

from duespec.limits import MAX_LINE_BYTES, InputError, parse_json
from duespec.targets.interface import Json, TargetError, TargetTooSlow

PROTOCOL_VERSION = 1
#: Seconds a target may take to answer one request.
DEFAULT_TIMEOUT = 10.0
#: Seconds a program may take to start and answer `hello` (interpreters start slowly on CI).
START_TIMEOUT = 30.0
#: Longest excerpt of an offending line or of stderr shown in an error.
SHOWN_CHARS = 300
_STDERR_LINES_KEPT = 20
#: Bytes asked of the pipe per read: a long reply arrives in few chunks.
_READ_SIZE = 1 << 20


def excerpt(text: str | bytes, limit: int = SHOWN_CHARS) -> str:
    """`text` as a quoted, truncated literal fit for an error message."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    shown = repr(text[:limit])
    return shown + (f" ... ({len(text)} chars)" if len(text) > limit else "")


class StdioProcess:
    """One running target program and the line-by-line conversation with it."""

    def __init__(self, command: list[str], system: str, *, timeout: float = DEFAULT_TIMEOUT,
                 start_timeout: float = START_TIMEOUT) -> None:
        self.command, self.system, self.timeout = command, system, timeout
        self.name = shlex.join(command)
        #: Whether the program answers `messages` (None: not asked yet).
        self.offers_messages: bool | None = None
        try:
            self._process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                bufsize=0)
        except OSError as error:
            raise TargetError(f"cannot start target `{self.name}`: {error}") from None
        assert self._process.stdin and self._process.stdout and self._process.stderr
        self._stdin: IO[bytes] = self._process.stdin
        self._stdout_fd = self._process.stdout.fileno()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._stdout_fd, selectors.EVENT_READ)
        #: Bytes read past the last reply; a bytearray, so appending a chunk is amortized O(1).
        self._buffer = bytearray()
        self._stderr_tail: deque[str] = deque(maxlen=_STDERR_LINES_KEPT)
        # Drained on a thread so a chatty target never blocks on a full stderr pipe.
        self._stderr_drain = threading.Thread(
            target=_drain, args=(self._process.stderr, self._stderr_tail), daemon=True)
        self._stderr_drain.start()
        self._finalizer = weakref.finalize(self, _terminate, self._process)
        hello = self.request({"type": "hello", "protocol": PROTOCOL_VERSION, "system": system},
                             timeout=start_timeout)
        if hello.get("protocol") != PROTOCOL_VERSION:
            self._fail(f"speaks protocol {hello.get('protocol')!r}, duespec speaks {PROTOCOL_VERSION}",
                       json.dumps(hello))
        systems = hello.get("systems")
        if not isinstance(systems, list) or system not in systems:
            self._fail(f"does not serve system {system!r} (its hello lists systems={systems!r})",
                       json.dumps(hello))

    @property
    def alive(self) -> bool:
        return self._finalizer.alive and self._process.poll() is None

    def request(self, message: dict[str, Json], *, timeout: float | None = None,
                optional: bool = False) -> dict[str, Json]:
        """Send one request line and return the reply of the same type, or raise TargetError.
        `optional`: a request the protocol lets a program not know (docs/protocol.md,
        "messages"); a protocol error in reply raises TargetError(not_offered=True) and the
        program is kept."""
        kind = message["type"]
        try:
            line = json.dumps(message, allow_nan=False, separators=(",", ":")) + "\n"
        except (TypeError, ValueError) as error:
            # The harness asked something JSON cannot say: duespec's bug, not the target's.
            raise ValueError(f"a {kind} request has no JSON form ({error}): {message!r:.300}") from None
        self._expect_silence(line)
        try:
            self._stdin.write(line.encode("utf-8"))
            self._stdin.flush()
        except (BrokenPipeError, OSError):
            self._fail(f"stopped reading its stdin (request: {excerpt(line.rstrip())})")
        raw = self._read_line(timeout or self.timeout, line)
        try:
            reply = parse_json(raw, unique_keys=True)
        except InputError as error:
            self._fail(f"answered {kind} with a line that is not JSON within duespec's limits "
                       f"({error.problem})", raw)
        if not isinstance(reply, dict):
            self._fail(f"answered {kind} with JSON that is not an object", raw)
        if reply.get("type") == "error" and optional:
            raise TargetError(f"target `{self.name}` does not answer {kind}: "
                              f"{reply.get('message', '(no message)')}", not_offered=True)
        if reply.get("type") == "error":
            self._fail(f"reported a protocol error for {excerpt(line.rstrip())}: "
                       f"{reply.get('message', '(no message)')}", raw)
        if reply.get("type") != kind:
            self._fail(f"answered a {kind!r} request with a reply of type {reply.get('type')!r}", raw)
        return reply

    def _expect_silence(self, request: str) -> None:
        """Between a reply and the next request the program has nothing to say; a line here
        (a second reply, a log line on stdout) would be misread as the next answer."""
        if not self._buffer and self._selector.select(0):
            chunk = os.read(self._stdout_fd, _READ_SIZE)
            if not chunk:
                self._fail(f"closed its stdout{self._exit_note()} (before request: "
                           f"{excerpt(request.rstrip())})")
            self._buffer += chunk
        if self._buffer:
            self._fail("wrote output nobody asked for (more than one line for one request, or "
                       f"logs on stdout instead of stderr) before request {excerpt(request.rstrip())}",
                       bytes(self._buffer.split(b"\n", 1)[0]))

    def _read_line(self, timeout: float, request: str) -> bytes:
        """The next line, in time linear in its length: each byte is searched for the
        newline once, however many chunks a long reply arrives in."""
        deadline = time.monotonic() + timeout
        searched = 0
        while (newline := self._buffer.find(b"\n", searched)) < 0:
            searched = len(self._buffer)
            if searched > MAX_LINE_BYTES:
                self._too_long(request)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._fail(f"did not answer within {timeout:g}s (request: {excerpt(request.rstrip())}); "
                           "if it did answer, it may not have flushed its stdout: flush after "
                           "every reply (docs/protocol.md, section 2)", bytes(self._buffer) or None,
                           overdue=timeout)
            if not self._selector.select(remaining):
                continue
            chunk = os.read(self._stdout_fd, _READ_SIZE)
            if not chunk:
                self._fail(f"closed its stdout{self._exit_note()} (request: {excerpt(request.rstrip())})",
                           bytes(self._buffer) or None)
            self._buffer += chunk
        if newline > MAX_LINE_BYTES:
            self._too_long(request)
        raw = bytes(self._buffer[:newline])
        del self._buffer[:newline + 1]
        return raw

    def _too_long(self, request: str) -> NoReturn:
        """A reply no trace line could record (README, Limits): refused as it arrives, so
        a program that never ends its line cannot fill memory."""
        start = bytes(self._buffer[:SHOWN_CHARS])
        self._buffer.clear()
        self._fail(f"wrote a reply line longer than {MAX_LINE_BYTES:,} bytes, the limit on a line "
                   f"(request: {excerpt(request.rstrip())}); its first bytes", start)

    def _exit_note(self) -> str:
        try:
            code = self._process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return ""
        return f" and exited with code {code}"

    def _fail(self, problem: str, line: bytes | str | None = None, *, overdue: float | None = None) -> NoReturn:
        """Discard the process (its conversation is out of step) and raise; TargetTooSlow
        when it is `overdue` (the seconds it was given)."""
        self.close(grace=0.0)
        text = f"target `{self.name}` {problem}"
        if line is not None:
            text += f"\n  offending line: {excerpt(line)}"
        self._stderr_drain.join(timeout=1.0)  # the target's last words, when it has exited
        if self._stderr_tail:
            text += "\n  last lines of its stderr:\n" + "\n".join(
                "    " + excerpt(entry, 200)[1:-1] for entry in self._stderr_tail)
        if overdue is not None:
            raise TargetTooSlow(text, seconds=overdue)
        raise TargetError(text)

    def close(self, grace: float = 2.0) -> None:
        """End the conversation: EOF on stdin asks the target to exit; after `grace` seconds
        it is killed."""
        if self._finalizer.alive:
            self._finalizer.detach()
            _terminate(self._process, grace)
            self._selector.close()


def _drain(stream: IO[bytes], tail: deque[str]) -> None:
    with stream:
        for raw in iter(stream.readline, b""):
            tail.append(raw.decode("utf-8", errors="replace").rstrip("\n"))


def _terminate(process: subprocess.Popen[bytes], grace: float = 2.0) -> None:
    try:
        if process.stdin:
            process.stdin.close()
    except OSError:
        pass
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stdout:
        process.stdout.close()


class StdioTarget:
    """A `Target` backed by a shared `StdioProcess`; `close` ends the instance, not the process."""

    def __init__(self, process: StdioProcess) -> None:
        self._process = process

    def reset(self, config: dict[str, Json]) -> None:
        self._process.request({"type": "reset", "config": config})

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        reply = self._process.request({"type": "step", "op": op, "args": args, "now": now})
        return self._field(reply, "response")

    def observe(self) -> dict[str, Json]:
        return self._field(self._process.request({"type": "observe"}), "state")

    def messages(self) -> list[Json]:
        """The Target hook: `{"type": "messages"}` (docs/protocol.md); a program that
        answers it with a protocol error does not offer it, and is not asked again."""
        process = self._process
        if process.offers_messages is False:
            raise TargetError(f"target `{process.name}` does not answer messages", not_offered=True)
        try:
            reply = process.request({"type": "messages"}, optional=True)
        except TargetError as error:
            if error.not_offered:
                process.offers_messages = False
            raise
        process.offers_messages = True
        sent = reply.get("messages")
        if not isinstance(sent, list):
            process._fail("sent a messages reply whose 'messages' is not a JSON list", json.dumps(reply))
        return sent

    def close(self) -> None:
        pass

    def _field(self, reply: dict[str, Json], key: str) -> dict[str, Json]:
        value = reply.get(key)
        if not isinstance(value, dict):
            self._process._fail(f"sent a {reply.get('type')} reply whose {key!r} is not a JSON object",
                                json.dumps(reply))
        return value


class StdioTargetFactory:
    """Hands out targets over one long-lived process, restarting it after it failed."""

    def __init__(self, command: list[str], system: str, *, timeout: float = DEFAULT_TIMEOUT,
                 start_timeout: float = START_TIMEOUT) -> None:
        if not command:
            raise ValueError("stdio target needs a command, e.g. stdio:node examples/node-duebook/duebook.js")
        self.command, self.system = command, system
        self.timeout, self.start_timeout = timeout, start_timeout
        self.name = "stdio:" + shlex.join(command)
        self._process: StdioProcess | None = None

    def __call__(self) -> StdioTarget:
        if self._process is None or not self._process.alive:
            self._process = StdioProcess(self.command, self.system, timeout=self.timeout,
                                         start_timeout=self.start_timeout)
        return StdioTarget(self._process)

    def close(self) -> None:
        if self._process is not None:
            self._process.close()
            self._process = None

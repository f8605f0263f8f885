"""`duespec record`: a recording proxy in front of `duespec serve`, driven by concurrent
clients, killed, and fed bad input; and the Resonate valid/ format read and written."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from duespec.histories.format import HistoryError, read_history
from duespec.histories.linearize import check_history
from duespec.histories.resonate_valid import read_any_history
from duespec.wire.serve import ServerThread, WireServer
from wire_support import ROOT

FAR = 10**14  # a timeoutAt no test reaches


class Recording:
    """`duespec record` in a child process on a free port; `url` once it listens."""

    def __init__(self, upstream: str, output: Path, *args: str) -> None:
        self.output = output
        self.process = subprocess.Popen(
            [sys.executable, "-m", "duespec", "record", "--listen", "127.0.0.1:0", "--upstream", upstream,
             "-o", str(output), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        line = self.process.stdout.readline()
        if "listening on " not in line:
            self.process.kill()
            raise AssertionError(f"duespec record did not start: {line!r} {self.process.stderr.read()!r}")
        self.host, self.port = line.split("listening on http://")[1].split(",")[0].rsplit(":", 1)
        self.port = int(self.port)

    def stop(self, signum: int = signal.SIGINT) -> tuple[int, str]:
        self.process.send_signal(signum)
        _, err = self.process.communicate(timeout=30)
        return self.process.returncode, err


def envelope(kind: str, corr: str, data: dict, debug_time: int | None = None) -> bytes:
    head = {"corrId": corr, "version": "2026-04-01"}
    if debug_time is not None:
        head["resonate:debug_time"] = debug_time
    return json.dumps({"kind": kind, "head": head, "data": data}).encode()


def post(conn: http.client.HTTPConnection, body: bytes) -> tuple[int, dict]:
    conn.request("POST", "/", body=body, headers={"Content-Type": "application/json"})
    answer = conn.getresponse()
    return answer.status, json.loads(answer.read())


def drive(recording: Recording, clients: int, seconds: float, stop_early: threading.Event | None = None,
          pinned: bool = False) -> list[list[str]]:
    """`clients` threads, one keep-alive connection each, creating and reading promises of a
    small shared pool until `seconds` pass; each thread's corrIds in the order answered."""
    sent: list[list[str]] = [[] for _ in range(clients)]
    clock, clock_lock = iter(range(1000, 10**9)), threading.Lock()

    def pin() -> int | None:
        if not pinned:
            return None
        with clock_lock:  # one shared clock that only advances, as `stress --clock pinned` stamps
            return next(clock)

    deadline = time.monotonic() + seconds

    def client(k: int) -> None:
        conn = http.client.HTTPConnection(recording.host, recording.port, timeout=30)
        n = 0
        try:
            while time.monotonic() < deadline and not (stop_early and stop_early.is_set()):
                corr = f"k{k}-{n}"
                pid = f"p{n % 5}"
                kind, data = (("promise.create", {"id": pid, "timeoutAt": FAR}) if n % 2 == 0
                              else ("promise.get", {"id": pid}))
                status, answer = post(conn, envelope(kind, corr, data, pin()))
                assert answer["head"]["corrId"] == corr
                sent[k].append(corr)
                n += 1
        except (OSError, http.client.HTTPException):
            pass  # the proxy was killed under us
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sent


def corr_ids_by_client(events) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for event in events:
        out.setdefault(event.client, []).append(event.wire["request"]["head"]["corrId"])
    return out


def check_recorded(sent: list[list[str]], events) -> None:
    """Every answered call is recorded once, and each connection's calls in its own order."""
    recorded = [event.wire["request"]["head"]["corrId"] for event in events]
    assert len(recorded) == len(set(recorded)), "a call recorded twice"
    by_client = corr_ids_by_client(events)
    for calls in sent:
        if not calls:
            continue
        owner = [c for c, ids in by_client.items() if calls[0] in ids]
        assert len(owner) == 1
        assert by_client[owner[0]][:len(calls)] == calls  # one connection, one client, in order


@pytest.fixture()
def served():
    with ServerThread(WireServer()) as server:
        yield server


def under_load(served, tmp_path, clients: int, seconds: float) -> None:
    recording = Recording(served.url, tmp_path / "traffic.ndjson")
    sent = drive(recording, clients, seconds)
    code, err = recording.stop()
    assert code == 0, err
    history = read_history(recording.output)
    assert not history.truncated
    assert sum(map(len, sent)) == len(history.events) > clients * 5
    assert all(event.outcome == "ok" for event in history.events)
    check_recorded(sent, history.events)
    assert f"{len(history.events)} calls recorded" in err
    assert check_history(history).status == "linearizable"


def test_sixteen_concurrent_clients_every_call_recorded_once_in_order(served, tmp_path):
    under_load(served, tmp_path, clients=16, seconds=3)


@pytest.mark.long
def test_sixteen_concurrent_clients_for_a_minute(served, tmp_path):
    under_load(served, tmp_path, clients=16, seconds=60)


def test_a_sigkill_mid_run_leaves_every_answered_call(served, tmp_path):
    recording = Recording(served.url, tmp_path / "traffic.ndjson")
    stop = threading.Event()
    killer = threading.Timer(1.5, lambda: (recording.process.kill(), stop.set()))
    killer.start()
    sent = drive(recording, 16, 10, stop_early=stop)
    recording.process.wait(10)
    history = read_history(recording.output)  # reads; a cut last line would be `truncated`
    check_recorded(sent, history.events)
    recorded = {event.wire["request"]["head"]["corrId"] for event in history.events}
    # a line is written before its answer leaves the proxy: what a client saw is in the file
    assert {corr for calls in sent for corr in calls} <= recorded
    assert len(history.events) > 16


def test_a_line_cut_by_the_kill_is_read_as_truncation(served, tmp_path):
    recording = Recording(served.url, tmp_path / "traffic.ndjson")
    drive(recording, 2, 0.5)
    recording.process.kill()
    recording.process.wait(10)
    whole = recording.output.read_bytes()
    recording.output.write_bytes(whole[:-40])  # what a kill inside write() leaves
    history = read_any_history(recording.output)
    assert history.truncated and len(history.events) == whole.count(b"\n") - 2


def test_pinned_recording_in_the_resonate_format_reads_back_as_the_same_calls(served, tmp_path):
    pinned = Recording(served.url, tmp_path / "a.ndjson", "--clock", "pinned")
    drive(pinned, 4, 1, pinned=True)
    assert pinned.stop()[0] == 0
    with ServerThread(WireServer()) as again:
        valid = Recording(again.url, tmp_path / "a.history", "--clock", "pinned", "--format", "resonate-valid")
        sent = drive(valid, 4, 1, pinned=True)
        assert valid.stop()[0] == 0
    lines = [json.loads(line) for line in (tmp_path / "a.history").read_text().splitlines()]
    assert lines and all(set(line) == {"kind", "now", "req", "res", "call", "return", "client"} for line in lines)
    history = read_any_history(tmp_path / "a.history")
    assert len(history.events) == sum(map(len, sent)) and history.header.clock == "pinned"
    assert check_history(history).status == "linearizable"
    assert check_history(read_history(tmp_path / "a.ndjson")).status == "linearizable"


def test_a_pin_in_a_real_clock_recording_stops_it(served, tmp_path):
    recording = Recording(served.url, tmp_path / "t.ndjson")
    conn = http.client.HTTPConnection(recording.host, recording.port, timeout=10)
    post(conn, envelope("promise.get", "a", {"id": "x"}))
    status, answer = post(conn, envelope("promise.get", "b", {"id": "x"}, debug_time=5))
    assert status == 404  # forwarded all the same
    recording.process.wait(10)
    err = recording.process.stderr.read()
    assert recording.process.returncode == 2 and "--clock pinned" in err and "Traceback" not in err
    assert len(read_history(tmp_path / "t.ndjson").events) == 1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def record_fails(capsys, *args: str) -> str:
    """The command as a user runs it (in this process, for speed): exit 2, one paragraph."""
    from duespec.cli import main

    assert main(["record", *args]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err


def test_bad_upstreams_and_listen_addresses_are_refused(served, tmp_path, capsys):
    out = str(tmp_path / "h.ndjson")
    assert "not an http:// URL" in record_fails(capsys, "--listen", "127.0.0.1:0", "--upstream", "ftp://x:1", "-o", out)
    assert "refuses connections" in record_fails(capsys, "--listen", "127.0.0.1:0", "--upstream",
                                                 f"http://127.0.0.1:{free_port()}", "-o", out)
    assert "loopback only" in record_fails(capsys, "--listen", "0.0.0.0:0", "--upstream", served.url, "-o", out)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert "cannot listen" in record_fails(capsys, "--listen", f"127.0.0.1:{port}", "--upstream", served.url, "-o", out)
    garbage = socket.socket()
    garbage.bind(("127.0.0.1", 0))
    garbage.listen()

    def answer_garbage() -> None:
        conn, _ = garbage.accept()
        conn.recv(1024)
        conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
        conn.close()

    threading.Thread(target=answer_garbage, daemon=True).start()
    stderr = record_fails(capsys, "--listen", "127.0.0.1:0", "--upstream", f"http://127.0.0.1:{garbage.getsockname()[1]}",
                          "-o", out)
    garbage.close()
    assert "does not speak HTTP" in stderr and "SSH-2.0" in stderr
    Path(out).write_text("keep me\n")
    assert "exists" in record_fails(capsys, "--listen", "127.0.0.1:0", "--upstream", served.url, "-o", out)
    assert Path(out).read_text() == "keep me\n"
    assert not os.path.exists(tmp_path / "never")


class AppThread:
    """An aiohttp app (a misbehaving upstream) served in a thread on a free port."""

    def __init__(self, handler) -> None:
        import asyncio

        from aiohttp import web

        from duespec.wire.serve import _serve, bind

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handler)
        self.sock = bind("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.stopping = asyncio.Event()
            self.loop.call_soon(ready.set)
            self.loop.run_until_complete(_serve(app, self.sock, self.stopping))

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        ready.wait()

    def __enter__(self) -> AppThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.stopping.set)
        self.thread.join(10)


def test_a_100_mib_answer_stops_the_recording_with_the_call_unknown(tmp_path):
    from aiohttp import web

    async def huge(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(status=200)
        await response.prepare(request)
        chunk = b" " * (1 << 20)
        try:
            for _ in range(100):
                await response.write(chunk)
        except (ConnectionError, RuntimeError):
            pass
        return response

    with AppThread(huge) as upstream:
        recording = Recording(upstream.url, tmp_path / "h.ndjson")
        conn = http.client.HTTPConnection(recording.host, recording.port, timeout=30)
        conn.request("POST", "/", body=envelope("promise.get", "big", {"id": "x"}))
        assert conn.getresponse().status == 502
        recording.process.wait(30)
        err = recording.process.stderr.read()
        assert recording.process.returncode == 2 and "body over" in err and "Traceback" not in err
        history = read_history(tmp_path / "h.ndjson")
        assert [event.outcome for event in history.events] == ["unknown"]


def test_requests_and_answers_pass_byte_for_byte(tmp_path):
    from aiohttp import web

    seen = []

    async def echo(request: web.Request) -> web.Response:
        body = await request.read()
        seen.append((request.method, request.raw_path, request.headers.get("X-Trace"), body))
        return web.Response(status=201, body=body[::-1], headers={"X-Upstream": "yes"})

    odd = b'{"kind":"promise.get" ,  "head":{"corrId":"z","version":"2026-04-01"},"data":{"id":"\\u00e9"}}'
    with AppThread(echo) as upstream:
        recording = Recording(upstream.url, tmp_path / "e.ndjson")
        conn = http.client.HTTPConnection(recording.host, recording.port, timeout=10)
        conn.request("POST", "/", body=odd, headers={"X-Trace": "t1"})
        answer = conn.getresponse()
        assert (answer.status, answer.read(), answer.getheader("X-Upstream")) == (201, odd[::-1], "yes")
        conn.request("GET", "/health?x=1%202")
        assert conn.getresponse().read() == b""
        code, err = recording.stop()
    assert seen[0][:2] == ("GET", "/")  # the probe at start: does the upstream speak HTTP
    assert seen[1:] == [("POST", "/", "t1", odd), ("GET", "/health?x=1%202", None, b"")]
    # the reversed body is no envelope: the call is kept as unknown, never as an answer
    assert [event.outcome for event in read_history(tmp_path / "e.ndjson").events] == ["unknown"]
    assert code == 0 and "1 GET /health" in err


# ---- the Resonate valid/ format ---------------------------------------------------------------

def valid_line(kind: str, now: int, req: dict, status: int, data, **timing) -> str:
    res = {"kind": kind, "head": {"corrId": "c", "status": status, "version": "2026-04-01"}, "data": data}
    return json.dumps({"kind": kind, "now": now, "req": req, "res": res, **timing}) + "\n"


def promise(pid: str, now: int, state: str = "pending") -> dict:
    return {"id": pid, "state": state, "param": {}, "value": {}, "tags": {}, "timeoutAt": FAR, "createdAt": now}


def test_a_valid_trace_is_read_sequential_and_checked(tmp_path):
    path = tmp_path / "t.ndjson"
    path.write_text(valid_line("promise.get", 1000, {"id": "a"}, 404, "Promise not found")
                    + valid_line("promise.create", 1000, {"id": "a", "timeoutAt": FAR}, 200,
                                 {"promise": promise("a", 1000)})
                    + valid_line("promise.get", 1001, {"id": "a"}, 200, {"promise": promise("a", 1000)}))
    history = read_any_history(path)
    assert [e.op for e in history.events] == ["promise.get", "promise.create", "promise.get"]
    assert {e.client for e in history.events} == {"c0"} and history.header.clock == "pinned"
    assert check_history(history).status == "linearizable"
    wrong = path.read_text().replace('"state": "pending"}}}\n', '"state": "resolved"}}}\n', 1)
    path.write_text(wrong.rsplit("\n", 2)[0] + "\n" + valid_line("promise.get", 1001, {"id": "a"}, 200,
                                                                  {"promise": promise("a", 1000, "resolved")}))
    assert check_history(read_any_history(path)).status == "not linearizable"


def test_a_capture_keeps_its_intervals_splits_overlapping_workers_and_reads_500_as_unknown(tmp_path):
    path = tmp_path / "c.history"
    path.write_text(valid_line("promise.create", 1000, {"id": "a", "timeoutAt": FAR}, 500, "store down",
                               call=10, **{"return": 50}, client=3)
                    + valid_line("promise.get", 1000, {"id": "a"}, 200, {"promise": promise("a", 1000)},
                                 call=20, **{"return": 30}, client=3))
    history = read_any_history(path)
    assert [(e.client, e.outcome, e.call_ns, e.return_ns) for e in history.events] == [
        ("c3.2", "ok", 20, 30), ("c3", "unknown", 10, 50)]
    assert check_history(history).status == "linearizable"  # the 500 may have applied


@pytest.mark.parametrize("text, words", [
    ("not json\n", "neither a duespec history"),
    ('{"duespec_trace": 1}\n', "duespec trace"),
    ('[1, 2]\n', "neither a duespec history"),
    (valid_line("debug.tick", 5, {"time": 5}, 200, 0), "not an external call"),
    (valid_line("promise.get", -1, {"id": "a"}, 404, "x"), "now must be"),
    (json.dumps({"kind": "promise.get", "now": 1, "req": {"id": "a"}, "res": {"data": 1}}) + "\n", "whole response"),
    (valid_line("promise.get", 1, {"id": "a"}, 404, "x", call=1), "return must be"),
])
def test_files_in_neither_format_are_refused_naming_the_problem(tmp_path, text, words):
    path = tmp_path / "x.ndjson"
    path.write_text(text)
    with pytest.raises(HistoryError, match=words):
        read_any_history(path)


def test_export_writes_a_trace_and_a_history_in_the_resonate_format(served, tmp_path):
    trace = ROOT / "traces" / "schedules" / "catch_up_after_outage.jsonl"
    out = tmp_path / "trace.history"
    run = subprocess.run([sys.executable, "-m", "duespec", "export", str(trace), "--format", "resonate-valid",
                          "-o", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert run.returncode == 0, run.stderr
    steps = [json.loads(line) for line in trace.read_text().splitlines()[1:]]
    external = [s for s in steps if s["op"] != "tick"]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["kind"] for line in lines] == [s["op"] for s in external]
    assert [line["now"] for line in lines] == [s["now"] for s in external]
    assert f"{len(steps) - len(external)} internal steps" in run.stderr
    back = read_any_history(out)
    # an error's message is prose on the wire (the default when the result had none)
    assert [{k: v for k, v in e.response.items() if k != "message"} for e in back.events] == [
        {k: v for k, v in s["result"].items() if k != "message"} for s in external]

    pinned = Recording(served.url, tmp_path / "h.ndjson", "--clock", "pinned")
    drive(pinned, 3, 0.5, pinned=True)
    assert pinned.stop()[0] == 0
    original = read_history(tmp_path / "h.ndjson")
    subprocess.run([sys.executable, "-m", "duespec", "export", str(tmp_path / "h.ndjson"), "--format",
                    "resonate-valid", "-o", str(tmp_path / "h.history")], check=True, cwd=ROOT, timeout=60)
    again = read_any_history(tmp_path / "h.history")
    assert [(e.op, e.args, e.now, e.response, e.call_ns) for e in again.events] == [
        (e.op, e.args, e.now, e.response, e.call_ns) for e in original.events]


def test_export_refuses_a_real_clock_history_and_a_bad_file(served, tmp_path):
    recording = Recording(served.url, tmp_path / "r.ndjson")
    drive(recording, 1, 0.2)
    recording.stop()
    for source, words in ((tmp_path / "r.ndjson", "real-clock"), (ROOT / "pyproject.toml", "neither")):
        run = subprocess.run([sys.executable, "-m", "duespec", "export", str(source), "--format", "resonate-valid",
                              "-o", str(tmp_path / "x.history")], capture_output=True, text=True, cwd=ROOT,
                             timeout=60)
        assert run.returncode == 2 and words in run.stderr and "Traceback" not in run.stderr, run.stderr
        assert not (tmp_path / "x.history").exists()


def test_a_client_gone_mid_body_and_an_absolute_form_request_are_no_internal_error(served, tmp_path):
    """Issue 41, item 9: a client that hangs up halfway through its body is logged as a
    client disconnect and recorded as nothing (the call never went upstream); a request
    line in absolute form (`POST http://host:port/`, what a client behind HTTP_PROXY
    sends) is forwarded to the upstream's path and recorded like any other call."""
    recording = Recording(served.url, tmp_path / "t.ndjson")
    try:
        answer = _half_a_body_then_an_absolute_form_request(recording)
    finally:
        code, err = recording.stop()
    assert answer.startswith(b"HTTP/1.1 404"), answer[:300]  # the upstream's own answer: no promise h
    assert code == 0, err
    assert "internal error" not in err and "client disconnected" in err, err
    events = read_history(tmp_path / "t.ndjson").events
    assert [(event.op, event.outcome, event.response["status"]) for event in events] == [("promise.get", "ok", 404)]


def _half_a_body_then_an_absolute_form_request(recording: Recording) -> bytes:
    body = envelope("promise.create", "half", {"id": "h", "timeoutAt": FAR, "param": {"headers": {}, "data": None},
                                               "tags": {}})
    with socket.create_connection((recording.host, recording.port), timeout=10) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body[: len(body) // 2])
    time.sleep(0.5)  # the proxy reads the half body, then the hang-up
    absolute = envelope("promise.get", "abs", {"id": "h"})
    with socket.create_connection((recording.host, recording.port), timeout=10) as sock:
        sock.sendall(f"POST http://{recording.host}:{recording.port}/ HTTP/1.1\r\nHost: {recording.host}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(absolute)}\r\n"
                     f"Connection: close\r\n\r\n".encode() + absolute)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer

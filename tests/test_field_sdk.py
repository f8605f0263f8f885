"""End to end in the field: a real Resonate application (resonate-sdk 0.8.1) talks to
`duespec serve` through `duespec record`, and the recorded history is checked.

The server's timeouts are fired by a background loop this test runs against the server
directly (a `debug.tick` at the wall clock every 100 ms, which the proxy never sees), as a
deployed server's own loop would; the checker places those firings itself. It waits for
a real minute boundary (the schedule's first occurrence), so it is a `long` test."""

from __future__ import annotations

import http.client
import json
import subprocess
import threading
import time

import pytest

from duespec.histories.format import read_history
from duespec.histories.linearize import check_history
from test_record import Recording
from test_resonate_sdk import sdk_python
from wire_support import ROOT, Served

APP = ROOT / "tests" / "resonate_sdk_app.py"


def background_ticks(url: str, stop: threading.Event) -> None:
    host, port = url[len("http://"):].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    while not stop.wait(0.1):
        now = time.time_ns() // 1_000_000
        body = json.dumps({"kind": "debug.tick", "head": {"corrId": f"tick-{now}", "version": "2026-04-01"},
                           "data": {"time": now}})
        conn.request("POST", "/", body=body)
        conn.getresponse().read()
    conn.close()


@pytest.mark.long
def test_a_resonate_application_through_the_recorder_is_linearizable(tmp_path):
    python = sdk_python()
    with Served("--profile", "deployed") as server:
        recording = Recording(server.url, tmp_path / "traffic.ndjson", "--profile", "deployed")
        stop = threading.Event()
        ticker = threading.Thread(target=background_ticks, args=(server.url, stop))
        ticker.start()
        try:
            run = subprocess.run([str(python), str(APP), f"http://{recording.host}:{recording.port}"],
                                 capture_output=True, text=True, timeout=180)
        finally:
            stop.set()
            ticker.join()
        code, err = recording.stop()
    assert run.returncode == 0, run.stderr[-3000:]
    assert code == 0, err
    seen = json.loads(run.stdout)
    assert seen["result"] == "ADA"
    occurrence = seen["occurrence"]
    assert (occurrence["id"], occurrence["createdAt"]) == (f"nightly-{occurrence['first']}", occurrence["first"])

    history = read_history(tmp_path / "traffic.ndjson")
    ops = {event.op for event in history.events}
    assert {"task.create", "task.fence", "task.fulfill", "schedule.create", "schedule.delete", "promise.get"} <= ops
    assert history.header.clock == "real" and all(event.outcome == "ok" for event in history.events)
    verdict = check_history(history, profile="deployed")
    assert verdict.status == "linearizable", verdict.describe()

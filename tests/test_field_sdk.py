"""End to end in the field: a real Resonate application (resonate-sdk 0.8.1) talks to
`duespec serve` through `duespec record`, and the recorded history is checked.

The server keeps its own time (`--clock real`) and fires its timeouts itself every 100 ms
(`--tick-ms 100`), as a deployed server's own loop would; the proxy never sees those
firings, and the checker places them itself. It waits for a real minute boundary (the
schedule's first occurrence), so it is a `long` test."""

from __future__ import annotations

import json
import subprocess

import pytest

from duespec.histories.format import read_history
from duespec.histories.linearize import check_history
from test_record import Recording
from test_resonate_sdk import sdk_python
from wire_support import ROOT, Served

APP = ROOT / "tests" / "resonate_sdk_app.py"


@pytest.mark.long
def test_a_resonate_application_through_the_recorder_is_linearizable(tmp_path):
    python = sdk_python()
    with Served("--profile", "deployed", "--clock", "real", "--tick-ms", "100") as server:
        recording = Recording(server.url, tmp_path / "traffic.ndjson", "--profile", "deployed")
        try:
            run = subprocess.run([str(python), str(APP), f"http://{recording.host}:{recording.port}"],
                                 capture_output=True, text=True, timeout=180)
        finally:
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

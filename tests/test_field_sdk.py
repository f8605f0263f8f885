"""End to end in the field: a real Resonate application (resonate-sdk 0.8.1) talks to a
server through `duespec record`, and the recorded history is checked: `duespec serve`,
and resonate-pg (a real PostgreSQL, examples/resonate-pg/http_front.py in front).

The server keeps its own time (`--clock real`) and fires its timeouts itself every 100 ms
(`--tick-ms 100`), as a deployed server's own loop would; the proxy never sees those
firings, and the checker places them itself. It waits for a real minute boundary (the
schedule's first occurrence), so it is a `long` test."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from duespec.histories.format import read_history
from duespec.histories.linearize import check_history
from needs import unavailable
from pg_support import PostgresServer, PostgresUnavailable
from test_record import Recording
from test_resonate_sdk import sdk_python
from wire_support import ROOT, Served

APP = ROOT / "tests" / "resonate_sdk_app.py"



def application_through_the_recorder(upstream: str, traffic: Path) -> dict:
    """Run the SDK application against `upstream` through `duespec record` writing
    `traffic`; check that it finished and read back its schedule's first occurrence, which
    it returns."""
    python = sdk_python()
    recording = Recording(upstream, traffic, "--profile", "deployed")
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
    return occurrence


@pytest.mark.long
def test_a_resonate_application_through_the_recorder_is_linearizable(tmp_path):
    with Served("--profile", "deployed", "--clock", "real", "--tick-ms", "100") as server:
        application_through_the_recorder(server.url, tmp_path / "traffic.ndjson")

    history = read_history(tmp_path / "traffic.ndjson")
    ops = {event.op for event in history.events}
    assert {"task.create", "task.fence", "task.fulfill", "schedule.create", "schedule.delete", "promise.get"} <= ops
    assert history.header.clock == "real" and all(event.outcome == "ok" for event in history.events)
    verdict = check_history(history, profile="deployed")
    assert verdict.status == "linearizable", verdict.describe()


#: DEP-03 (spec/schedules.md): the tags the deployed server adds to a schedule's occurrence.
LINEAGE = ("resonate:schedule", "resonate:origin", "resonate:branch", "resonate:parent", "resonate:prefix")
FRONT = ROOT / "examples" / "resonate-pg" / "http_front.py"


class Front:
    """examples/resonate-pg/http_front.py in a child process; `url` once it listens."""

    def __init__(self, dsn: str) -> None:
        self.process = subprocess.Popen([sys.executable, str(FRONT), "--dsn", dsn, "--listen", "127.0.0.1:0"],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        line = self.process.stdout.readline()
        if "listening on " not in line:
            self.process.kill()
            raise AssertionError(f"http_front did not start: {line!r} {self.process.stderr.read()!r}")
        self.url = line.split("listening on ")[1].strip()

    def __enter__(self) -> Front:
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()


def linearize(history: Path, profile: str) -> tuple[int, str]:
    run = subprocess.run([sys.executable, "-m", "duespec", "linearize", str(history), "--profile", profile],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    return run.returncode, run.stdout + run.stderr


@pytest.mark.long
def test_a_resonate_application_on_resonate_pg_through_the_recorder(tmp_path):
    """The same application on resonate-pg (examples/resonate-pg/http_front.py over a real
    PostgreSQL), recorded, and the history checked by `duespec linearize` as a user runs it."""
    try:
        postgres = PostgresServer().start()
    except PostgresUnavailable as error:
        unavailable("resonate-pg", str(error))
    try:
        with Front(postgres.create_database("field")) as front:
            occurrence = application_through_the_recorder(front.url, tmp_path / "traffic.ndjson")
    finally:
        postgres.stop()
    history = read_history(tmp_path / "traffic.ndjson")
    assert {"task.create", "schedule.create", "schedule.delete", "promise.get"} <= {e.op for e in history.events}
    # resonate-pg follows the Lean at 83d64c3 (profile lean): every answer is explained.
    status, out = linearize(tmp_path / "traffic.ndjson", "lean")
    assert status == 0 and out.startswith("LINEARIZABLE"), out
    # Under the deployed reading, the schedule's occurrence differs by DEP-03 alone: the
    # deployed server tags it with its lineage, resonate-pg (as the Lean) does not.
    status, out = linearize(tmp_path / "traffic.ndjson", "deployed")
    assert status == 1 and out.startswith("NOT LINEARIZABLE"), out
    assert "shrunk from" in out and "Counterexample: 2 calls" in out and "schedule.create" in out, out
    assert f'promise.get {{"id":"{occurrence["id"]}"}}' in out, out
    occurrences = [e for e in history.events if e.op == "promise.get" and e.args["id"] == occurrence["id"]]
    assert occurrences and all(set(LINEAGE).isdisjoint(e.response["promise"]["tags"]) for e in occurrences)
    for event in occurrences:
        event.response["promise"]["tags"].update({"resonate:schedule": "nightly",
                                                  **{tag: occurrence["id"] for tag in LINEAGE[1:]}})
    verdict = check_history(history, profile="deployed")
    assert verdict.status == "linearizable", verdict.describe()


def test_the_resonate_pg_front_refuses_a_database_it_cannot_reach():
    """Bad input to the example front: a clear error and exit 2, never a traceback."""
    run = subprocess.run([sys.executable, str(FRONT), "--dsn", "host=127.0.0.1 port=1 connect_timeout=2",
                          "--listen", "127.0.0.1:0"], capture_output=True, text=True, timeout=30)
    assert run.returncode == 2 and run.stderr.startswith("http_front: ") and "Traceback" not in run.stderr, run.stderr

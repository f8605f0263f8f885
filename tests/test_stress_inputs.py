"""`duespec stress` with a target that dies, and arguments that make no run (issue 41,
items 8 and 11): one clear line and exit 2, never "internal error", never a run that
goes on calling a dead server."""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path

import pytest

from duespec.cli import main
from duespec.histories.format import read_history


class AnswersOnlyTheReset(http.server.BaseHTTPRequestHandler):
    """Answers debug.reset, then the server stops listening: a target killed mid-run."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps({"kind": "debug.reset", "head": {"corrId": "reset", "status": 200}, "data": None}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        threading.Thread(target=self.server.shutdown).start()

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.long
def test_a_target_that_dies_mid_run_ends_it_as_unusable_with_the_history_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = http.server.HTTPServer(("127.0.0.1", 0), AnswersOnlyTheReset)
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    history = tmp_path / "h.ndjson"
    try:
        code = main(["stress", "schedules", "--target", f"http://127.0.0.1:{server.server_port}/",
                     "--ops", "20000", "--clients", "4", "-o", str(history)])
    finally:
        thread.join(timeout=30)
        server.server_close()
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("duespec stress: target unusable: ") and "stopped answering" in err, err
    assert f"the history up to there: {history}" in err and "internal error" not in err
    events = read_history(history).events
    assert 0 < len(events) < 200 and {event.outcome for event in events} == {"unknown"}


@pytest.mark.parametrize(("args", "words"), [
    (["--pin-step-ms", "-1"], "--pin-step-ms must lie in [0, 86400000], got -1"),
    (["--db", "/tmp"], "--db '/tmp': not a regular file"),
    (["--db", "/dev/zero"], "--db '/dev/zero': not a regular file"),
    (["--db", "NOT-A-DB"], "cannot open the store"),
])
def test_stress_arguments_that_make_no_run_are_one_line_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], words: str) -> None:
    args = [str(tmp_path / "garbage.db") if arg == "NOT-A-DB" else arg for arg in args]
    (tmp_path / "garbage.db").write_text("this is not SQLite\n")
    assert main(["stress", "schedules", "--target", "serve", "--ops", "5", *args]) == 2
    err = capsys.readouterr().err
    assert words in err and "internal error" not in err and err.count("\n") == 1, err


def test_a_negative_max_timer_lag_is_refused_as_linearize_refuses_it(capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["stress", "schedules", "--target", "serve"], ["linearize", "h.ndjson"]):
        with pytest.raises(SystemExit) as refused:
            main([*command, "--max-timer-lag", "-1"])
        assert refused.value.code == 2
        assert "--max-timer-lag: must not be negative, got -1" in capsys.readouterr().err

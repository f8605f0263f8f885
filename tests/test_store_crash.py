"""The file-backed schedules store under SIGKILL, and shared between processes (issue 9).

The crash run itself is tests/store_crash.py; `make crash-test` runs it with 1,000 kills.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from duespec.impl.schedules import ScheduleServer
from duespec.impl.schedules_sql import StoreError, StoreInUse
from duespec.systems.schedules import ModelTarget

sys.path.insert(0, str(Path(__file__).parent))
import store_crash  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.long
def test_a_hundred_sigkills_lose_nothing_and_half_apply_nothing(tmp_path: Path) -> None:
    report = store_crash.run(100, seed=0, directory=str(tmp_path))
    print(f"\n{report.kills} SIGKILLs, {report.in_flight} with an operation in flight "
          f"({report.in_flight_applied} committed), {report.operations_applied} operations applied")
    assert report.problems == []
    assert report.kills == 100
    # Most kills land inside an operation's handler (the parent aims at them), not between.
    assert report.in_flight >= 25, report
    assert report.operations_applied >= 50, report


def test_the_crash_check_sees_a_lost_write(tmp_path: Path) -> None:
    """Negative control: a store missing one acknowledged effect fails the comparison."""
    path = str(tmp_path / "s.db")
    ops = store_crash.operations(seed=1, count=40)
    server = ScheduleServer(path, profile="lean", retry_timeout=5000)
    for op in ops:
        server.handle(*op)
    server.close()
    with sqlite3.connect(path) as raw:
        raw.execute("DELETE FROM promises WHERE id = (SELECT min(id) FROM promises)")
    model = ModelTarget()
    model.reset(dict(store_crash.CONFIG))
    report = store_crash.CrashReport()
    store_crash._check(path, model, ops, 0, len(ops), None, report)
    assert report.problems and "lost or half-applied" in report.problems[0]


def _open_elsewhere(path: str, wait: float = 0.0) -> subprocess.CompletedProcess[str]:
    code = ("import sys\nfrom duespec.impl.schedules import ScheduleServer\n"
            "from duespec.impl.schedules_sql import StoreError\n"
            f"try:\n    ScheduleServer({path!r}, wait={wait}).close()\n"
            "except StoreError as error:\n    print(error)\n    sys.exit(3)\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_a_second_process_gets_a_clear_error_not_database_is_locked(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    owner = ScheduleServer(path)
    try:
        result = _open_elsewhere(path)
        assert result.returncode == 3, result.stderr
        assert f"is in use by another process (pid {os.getpid()})" in result.stdout
        assert "database is locked" not in result.stdout + result.stderr
        with pytest.raises(StoreInUse):  # the same process opening it twice, too
            ScheduleServer(path)
    finally:
        owner.close()
    assert _open_elsewhere(path).returncode == 0  # closed: free again


def test_a_second_process_may_wait_for_the_owner(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    owner = subprocess.Popen([sys.executable, "-c",
                              "import time\nfrom duespec.impl.schedules import ScheduleServer\n"
                              f"s = ScheduleServer({path!r})\nprint('open', flush=True)\ntime.sleep(1.0)\n"
                              "s.close()\n"],
                             stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert owner.stdout is not None and owner.stdout.readline().strip() == "open"
    started = time.monotonic()
    waited = ScheduleServer(path, wait=30)
    waited.close()
    owner.wait(timeout=30)
    assert time.monotonic() - started < 30


def test_the_owner_killed_frees_the_store(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    owner = subprocess.Popen([sys.executable, "-c",
                              "import time\nfrom duespec.impl.schedules import ScheduleServer\n"
                              f"s = ScheduleServer({path!r})\nprint('open', flush=True)\ntime.sleep(600)\n"],
                             stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert owner.stdout is not None and owner.stdout.readline().strip() == "open"
    owner.kill()
    owner.wait(timeout=30)
    ScheduleServer(path).close()


@pytest.mark.parametrize("content", [b"not a database at all" * 100, b"SQLite format 3\x00" + b"\xff" * 4000])
def test_a_file_that_is_no_store_is_a_clear_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "damaged.db"
    path.write_bytes(content)
    with pytest.raises(StoreError, match="cannot open store"):
        ScheduleServer(str(path))
    ScheduleServer(str(tmp_path / "fresh.db")).close()  # and the lock was released


def test_a_store_in_a_directory_that_does_not_exist_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot open store"):
        ScheduleServer(str(tmp_path / "no" / "such" / "dir" / "s.db"))

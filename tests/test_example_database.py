"""The example database says what it really did, and never mixes unrelated runs (issue 41,
item 10 and "the example database is shared")."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Iterable

import pytest
from hypothesis.database import ExampleDatabase

from duespec.campaigns.database import DATABASE_ENV, CampaignDatabase

ROOT = Path(__file__).resolve().parent.parent


def conform(target: str, cwd: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "duespec", "conform", "duebook", "--target", target, "--examples", "30",
         "--max-classes", "1", "--no-coverage", "--progress", "0", "--trace-dir", str(cwd / "traces"), *extra],
        cwd=cwd, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_directory_that_cannot_be_written_says_so_and_counts_nothing_saved(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    run = conform("tests.planted_targets:OnePlantedBug", tmp_path, "--database", str(blocker / "examples"))
    assert run.returncode == 1, run.stdout + run.stderr
    line = next(line for line in run.stdout.splitlines() if line.startswith("database "))
    assert "not used (cannot write" in line and "nothing saved" in line, line


def test_an_unreachable_redis_counts_nothing_saved(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    run = conform("tests.planted_targets:OnePlantedBug", tmp_path, "--database", url)
    assert run.returncode == 1, run.stdout + run.stderr
    line = next(line for line in run.stdout.splitlines() if line.startswith(f"database {url}"))
    assert "not used (unreachable" in line and "nothing saved" in line, line


class RefusesWrites(ExampleDatabase):
    """A store that reads but refuses every write (a read-only Redis replica, a full disk)."""

    def fetch(self, key: bytes) -> Iterable[bytes]:
        return []

    def save(self, key: bytes, value: bytes) -> None:
        raise OSError("read-only")

    def delete(self, key: bytes, value: bytes) -> None:
        raise OSError("read-only")

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        raise OSError("read-only")


def test_saves_a_store_refused_are_not_counted_as_saved() -> None:
    said: list[str] = []
    database = CampaignDatabase(RefusesWrites(), "replica", "identity", say=said.append)
    for value in (b"1", b"2", b"3"):
        database.save(b"key", value)
    assert database.stats.saved == 0
    assert database.stats.line() == "database replica: not used (saving failed (OSError: read-only)): nothing " \
                                    "replayed, nothing saved"
    assert said and "the campaign goes on without it" in said[0]


def test_the_test_suite_never_writes_into_the_clones_database(tmp_path: Path) -> None:
    """conftest.py points DUESPEC_DATABASE at the session's own folder: a campaign run with
    no --database (here, in the clone, as most tests run them) saves there."""
    where = Path(os.environ[DATABASE_ENV])
    assert ROOT not in where.parents
    clone = ROOT / ".duespec" / "examples"
    before = sorted(clone.rglob("*")) if clone.exists() else []
    run = conform("tests.planted_targets:OnePlantedBug", ROOT, "--trace-dir", str(tmp_path))
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"database {where}: " in run.stdout, run.stdout
    assert (sorted(clone.rglob("*")) if clone.exists() else []) == before
    assert any(where.rglob("*"))


@pytest.mark.long
def test_another_target_in_the_same_database_replays_nothing_of_the_first(tmp_path: Path) -> None:
    database = str(tmp_path / "examples")
    first = conform("tests.planted_targets:OnePlantedBug", tmp_path, "--database", database)
    assert first.returncode == 1 and ", 0 hits" in first.stdout, first.stdout
    other = conform("impl", tmp_path, "--database", database)
    assert other.returncode == 0, other.stdout + other.stderr
    assert f"database {database}: replayed 0 saved examples" in other.stdout
    assert "stale" not in other.stdout

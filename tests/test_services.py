"""tools/services.py and tests/needs.py: how `make test` finds the servers some tests start,
where resonate.sql is looked for and in what order, and what a missing one does to a test
(skip with the reason outside CI, fail under CI=true)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from needs import under_ci, unavailable
from pg_support import CLONE_DIR, PostgresUnavailable, resonate_sql

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import services  # noqa: E402


def sql_file(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("-- resonate.sql\n")
    return path


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A clone with nothing beside it: <tmp>/work/duespec."""
    root = tmp_path / "work" / "duespec"
    root.mkdir(parents=True)
    return root


def test_the_variable_comes_first_then_shared_beside_the_clone_then_the_pinned_clone(clone: Path) -> None:
    shared = sql_file(clone.parent / "shared" / "third_party" / "resonate-pg" / "resonate.sql")
    cloned = sql_file(clone / CLONE_DIR / "resonate.sql")
    named = sql_file(clone.parent / "elsewhere" / "resonate.sql")
    assert resonate_sql(clone, {"DUESPEC_RESONATE_PG_SQL": str(named)}) == named
    assert resonate_sql(clone, {}) == shared
    shared.unlink()
    assert resonate_sql(clone, {}) == cloned
    cloned.unlink()
    with pytest.raises(PostgresUnavailable, match=r"resonate.sql not found .*make resonate-pg"):
        resonate_sql(clone, {})


def test_a_variable_naming_a_missing_file_is_said_as_such_not_passed_over(clone: Path) -> None:
    sql_file(clone.parent / "shared" / "third_party" / "resonate-pg" / "resonate.sql")
    missing = clone / "typo.sql"
    with pytest.raises(PostgresUnavailable, match=f"DUESPEC_RESONATE_PG_SQL={missing}: no such file"):
        resonate_sql(clone, {"DUESPEC_RESONATE_PG_SQL": str(missing)})


def test_a_git_worktree_finds_shared_beside_its_main_checkout(tmp_path: Path) -> None:
    main = tmp_path / "work" / "main"
    gitdir = main / ".git" / "worktrees" / "wt"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    worktree = tmp_path / "elsewhere" / "wt"
    worktree.mkdir(parents=True)
    (worktree / ".git").write_text(f"gitdir: {gitdir}\n")
    shared = sql_file(tmp_path / "work" / "shared" / "third_party" / "resonate-pg" / "resonate.sql")
    assert resonate_sql(worktree, {}) == shared


def test_what_cannot_be_had_is_one_line_naming_the_tests_and_how_to_get_it(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    found = services.survey({"PATH": str(empty), "DUESPEC_PG_BIN": "/pg/bin"}, root=tmp_path)
    assert found.env == {"DUESPEC_PG_BIN": "/pg/bin"}
    assert found.not_run == [
        "not run: the shared Redis example database test (tests/test_scale.py): no redis-server (as root: "
        "apt-get install redis-server; or set DUESPEC_REDIS_SERVER)",
        "not run: the HTML report's browser check (tests/test_linearize.py): no chromium (as root: "
        "apt-get install chromium; or set DUESPEC_CHROMIUM)",
        f"not run: the resonate-pg tests (tests/test_resonate_pg.py): resonate.sql not found (looked in "
        f"{tmp_path.parent / 'shared/third_party/resonate-pg/resonate.sql'}, "
        f"{tmp_path / CLONE_DIR / 'resonate.sql'}): {services.HOW_TO_GET_SQL}",
    ]
    assert services.missing_packages({"PATH": str(empty), "DUESPEC_PG_BIN": "/pg/bin"}) == ["redis-server", "chromium"]


def test_run_gives_the_command_the_services_and_its_exit_code_then_says_what_did_not_run(tmp_path: Path) -> None:
    sql = sql_file(tmp_path / "resonate.sql")
    show = "import os, sys; print('sql', os.environ['DUESPEC_RESONATE_PG_SQL']); sys.exit(3)"
    env = {"PATH": "/usr/bin:/bin", "DUESPEC_NO_INSTALL": "1", "DUESPEC_RESONATE_PG_SQL": str(sql),
           "DUESPEC_REDIS_SERVER": "/r", "DUESPEC_CHROMIUM": "/c"}
    run = subprocess.run([sys.executable, "tools/services.py", "run", "--", sys.executable, "-c", show],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 3, run.stderr
    assert f"sql {sql}" in run.stdout.splitlines()
    missing = tmp_path / "missing.sql"
    run = subprocess.run([sys.executable, "tools/services.py", "run", "--", sys.executable, "-c", "print('ran')"],
                         cwd=ROOT, env={**env, "DUESPEC_RESONATE_PG_SQL": str(missing)},
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-2:] == [
        "ran", f"not run: the resonate-pg tests (tests/test_resonate_pg.py): DUESPEC_RESONATE_PG_SQL={missing}: "
               f"no such file"]


@pytest.mark.parametrize("value, ci", [("true", True), ("1", True), ("", False), ("false", False), ("0", False)])
def test_ci_is_recognised_as_ci_services_set_it(value: str, ci: bool) -> None:
    assert under_ci({"CI": value}) is ci


def test_a_missing_service_skips_outside_ci_and_fails_under_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="not run: resonate-pg: no resonate.sql"):
        unavailable("resonate-pg", "no resonate.sql")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"not run: resonate-pg: no resonate.sql \(CI=true"):
        unavailable("resonate-pg", "no resonate.sql")

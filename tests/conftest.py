"""What every test shares: campaigns never write into the clone's own `.duespec/`.

A campaign run without --database saves its failures in the default example database
(`.duespec/examples` of the working directory, where the tests run campaigns); a user's
first `duespec check` in the clone would then replay what the test suite saved. Every
test, and every duespec process a test starts (they inherit the environment), uses a
database of the session's own instead (DUESPEC_DATABASE, duespec.campaigns.database)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from duespec.campaigns.database import DATABASE_ENV


@pytest.fixture(autouse=True, scope="session")
def examples_database_outside_the_clone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    before = os.environ.get(DATABASE_ENV)
    os.environ[DATABASE_ENV] = str(tmp_path_factory.mktemp("examples-database"))
    yield os.environ[DATABASE_ENV]
    if before is None:
        del os.environ[DATABASE_ENV]
    else:
        os.environ[DATABASE_ENV] = before


@pytest.fixture(scope="session")
def postgres() -> Iterator[Any]:
    """A throwaway PostgreSQL for the resonate-pg tests, one per test process
    (tests/pg_support.py); "not run" with the reason where none can be had (tests/needs.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from needs import unavailable
    from pg_support import PostgresServer, PostgresUnavailable
    try:
        server = PostgresServer().start()
    except PostgresUnavailable as error:
        unavailable("resonate-pg", str(error))
    yield server
    server.stop()

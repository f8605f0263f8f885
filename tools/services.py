"""The services duespec's tests check against, found (or installed) before the tests run.

`make test` and `make stress-resonate-pg` run their command through this tool:

    python tools/services.py run -- COMMAND...   # find or install, then run COMMAND with them
    python tools/services.py env                 # the same, as `export` lines for your shell
    python tools/services.py fetch-resonate-pg   # `make resonate-pg`: resonate.sql, cloned at its pin

Some tests start real servers: PostgreSQL (resonate-pg, with its resonate.sql), redis-server
(the shared example database) and Chromium (the HTML report). For each this tool looks for
Debian's binary; run as root on a machine with apt-get, it installs the missing packages
first (`DUESPEC_NO_INSTALL=1` says not to). It then tells the tests where each one is
(DUESPEC_PG_BIN, DUESPEC_REDIS_SERVER, DUESPEC_CHROMIUM, DUESPEC_RESONATE_PG_SQL) and runs
COMMAND with its exit code. What cannot be had (not root, no network, no resonate.sql) is
never an error here: after COMMAND, one line per service names the tests that did not run
and how to get what they need. Those tests skip saying the same, except under CI (CI=true),
where they fail (tests/needs.py): a CI machine must check everything.

resonate.sql is looked for where tests/pg_support.py says (DUESPEC_RESONATE_PG_SQL, then
../shared/third_party/resonate-pg/, then the clone `make resonate-pg` makes); this tool
never downloads it.
"""

from __future__ import annotations

import argparse
import glob
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from pg_support import (  # noqa: E402
    CLONE_DIR, HOW_TO_GET_SQL, RESONATE_PG_COMMIT, RESONATE_PG_REPOSITORY, PostgresUnavailable, resonate_sql)


@dataclass(frozen=True)
class Service:
    """One binary some tests need: how to find it, the Debian package that has it, and
    which tests go without it."""

    name: str
    variable: str
    package: str
    tests: str
    find: Callable[[Mapping[str, str]], str | None]


def _which(*names: str) -> Callable[[Mapping[str, str]], str | None]:
    def find(environ: Mapping[str, str]) -> str | None:
        for name in names:
            found = shutil.which(name, path=environ.get("PATH"))
            if found:
                return found
        return None
    return find


def _pg_bin(environ: Mapping[str, str]) -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: [int(x) if x.isdigit() else x for x in Path(p).parts[-3].split(".")])
    return str(Path(found[-1]).parent) if found else None


SERVICES = (
    Service("PostgreSQL", "DUESPEC_PG_BIN", "postgresql", "the resonate-pg tests (tests/test_resonate_pg.py)",
            _pg_bin),
    Service("redis-server", "DUESPEC_REDIS_SERVER", "redis-server",
            "the shared Redis example database test (tests/test_scale.py)", _which("redis-server")),
    Service("chromium", "DUESPEC_CHROMIUM", "chromium",
            "the HTML report's browser check (tests/test_linearize.py)", _which("chromium", "chromium-browser")),
)


@dataclass
class Survey:
    """What was found: variables to set for the tests, and one line per thing that was not."""

    env: dict[str, str] = field(default_factory=dict)
    found: list[str] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)


def missing_packages(environ: Mapping[str, str]) -> list[str]:
    return [service.package for service in SERVICES if not environ.get(service.variable) and not service.find(environ)]


def can_install(environ: Mapping[str, str]) -> bool:
    """Whether this process may install Debian packages: root, apt-get, no DUESPEC_NO_INSTALL."""
    return (not environ.get("DUESPEC_NO_INSTALL") and os.geteuid() == 0
            and shutil.which("apt-get", path=environ.get("PATH")) is not None)


def install(packages: list[str], environ: Mapping[str, str]) -> str | None:
    """apt-get install `packages`; None when done, else the reason it could not."""
    print(f"services: installing {' '.join(packages)} from Debian (apt-get; a minute or two)", flush=True)
    env = {**environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]):
        done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
            return f"`{shlex.join(command[:2])}` failed ({last})"
    return None


def survey(environ: Mapping[str, str], root: Path = ROOT, install_problem: str | None = None) -> Survey:
    """Where each service is, from `environ` (a variable already set wins) and the machine."""
    result = Survey()
    for service in SERVICES:
        where = environ.get(service.variable) or service.find(environ)
        if where:
            result.env[service.variable] = where
            result.found.append(service.name)
            continue
        failed = f"installing it failed: {install_problem}; " if install_problem else ""
        result.not_run.append(f"not run: {service.tests}: no {service.name} ({failed}as root: apt-get install "
                              f"{service.package}; or set {service.variable})")
    try:
        sql = resonate_sql(root, dict(environ))
    except PostgresUnavailable as error:
        result.not_run.append(f"not run: the resonate-pg tests (tests/test_resonate_pg.py): {error}")
    else:
        result.env["DUESPEC_RESONATE_PG_SQL"] = str(sql)
        result.found.append(f"resonate.sql ({sql})")
    return result


def prepare(environ: Mapping[str, str]) -> Survey:
    """Install what is missing when this process may, then survey."""
    problem = None
    packages = missing_packages(environ)
    if packages and can_install(environ):
        problem = install(packages, environ)
    return survey(environ, install_problem=problem)


def fetch_resonate_pg(root: Path = ROOT, repository: str = RESONATE_PG_REPOSITORY) -> int:
    """Clone resonate-pg at RESONATE_PG_COMMIT into CLONE_DIR (a clone already there is
    checked out at the pin). The only place duespec downloads it; tests never do."""
    target = root / CLONE_DIR
    if not (target / ".git").is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        print(f"services: git clone {repository} {target}", flush=True)
        if subprocess.run(["git", "clone", "--quiet", repository, str(target)]).returncode != 0:
            print(f"services: git clone of {repository} failed", file=sys.stderr)
            return 2
    if subprocess.run(["git", "-C", str(target), "checkout", "--quiet", RESONATE_PG_COMMIT]).returncode != 0:
        print(f"services: {target} has no commit {RESONATE_PG_COMMIT}", file=sys.stderr)
        return 2
    print(f"services: resonate.sql at {RESONATE_PG_COMMIT[:7]} in {target / 'resonate.sql'}", flush=True)
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="action", required=True)
    run = commands.add_parser("run", help="run COMMAND with the services found (or installed)")
    run.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    commands.add_parser("env", help="print `export` lines for the services found (or installed)")
    commands.add_parser("fetch-resonate-pg", help=f"git clone resonate-pg at its pinned commit into {CLONE_DIR}")
    args = parser.parse_args(argv)
    if args.action == "fetch-resonate-pg":
        return fetch_resonate_pg()
    found = prepare(os.environ)
    if args.action == "env":
        for variable, value in found.env.items():
            print(f"export {variable}={shlex.quote(value)}")
        for line in found.not_run:
            print(f"# {line}")
        return 0
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("run: no command given (services.py run -- COMMAND...)")
    print(f"services: {', '.join(found.found) or 'none found'}", flush=True)
    try:
        code = subprocess.run(command, env={**os.environ, **found.env}).returncode
    except KeyboardInterrupt:
        code = 130
    for line in found.not_run:
        print(line, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

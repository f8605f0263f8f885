"""A throwaway PostgreSQL with resonate-pg loaded, for the tests and for trying the example.

`PostgresServer` runs initdb into a temporary directory, starts `postgres` on a free
loopback port (its unix socket in the same directory, so it never touches
/var/run/postgresql), creates a database, applies resonate.sql to it and, on `stop`, shuts
the server down and removes the directory. Nothing is mocked: it is Debian's server.

Where things come from:
- the binaries: $DUESPEC_PG_BIN, else the newest /usr/lib/postgresql/*/bin;
- resonate.sql (`resonate_sql`): $DUESPEC_RESONATE_PG_SQL, else
  `<repo>/../shared/third_party/resonate-pg/resonate.sql` (where CI keeps the pinned copy),
  else `<repo>/.duespec/third_party/resonate-pg/resonate.sql`, the clone `make resonate-pg`
  makes at the pinned commit. The project itself never contains it.

PostgreSQL refuses to run as root, and CI runs as root: then initdb and postgres run as the
`postgres` user the Debian package creates (else `nobody`), through setpriv, which execs
in place so the pid we hold is the server's own. As any other user they run as that user.

Run it by hand to get a database for `examples/resonate-pg/`:

    python tests/pg_support.py        # prints RESONATE_PG_DSN=...; Ctrl-C or kill stops and removes it
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: resonatehq/resonate-pg at the commit docs/findings.md was measured against; `make
#: resonate-pg` clones it into CLONE_DIR (tests never download anything).
RESONATE_PG_REPOSITORY = "https://github.com/resonatehq/resonate-pg"
RESONATE_PG_COMMIT = "54fe65150f42f39f415363d05cd54ff91a069b1c"
SHARED_SQL = Path("shared") / "third_party" / "resonate-pg" / "resonate.sql"
CLONE_DIR = Path(".duespec") / "third_party" / "resonate-pg"
#: How to get resonate.sql, said wherever it is missing.
HOW_TO_GET_SQL = ("run `make resonate-pg` (a git clone of resonatehq/resonate-pg at its pinned commit into "
                  ".duespec/third_party/resonate-pg), or set DUESPEC_RESONATE_PG_SQL to a resonate.sql")
DATABASE = "resonate"
SUPERUSER = "postgres"
#: Seconds to wait for the server to accept connections, and to shut down.
START_SECONDS = 60
STOP_SECONDS = 20


class PostgresUnavailable(RuntimeError):
    """The binaries or resonate.sql cannot be found, or the server would not start: one
    sentence saying which, and what to set."""


def pg_bin_dir() -> Path:
    """The directory holding initdb and postgres, or PostgresUnavailable saying how to get one."""
    configured = os.environ.get("DUESPEC_PG_BIN")
    if configured:
        path = Path(configured)
        if not (path / "initdb").is_file() or not (path / "postgres").is_file():
            raise PostgresUnavailable(f"DUESPEC_PG_BIN={configured} holds no initdb and postgres")
        return path
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: [int(x) if x.isdigit() else x for x in Path(p).parts[-3].split(".")])
    if not found:
        raise PostgresUnavailable("no PostgreSQL server binaries: install Debian's `postgresql` "
                                  "package or set DUESPEC_PG_BIN to the directory holding initdb")
    return Path(found[-1]).parent


def _main_checkout(root: Path) -> Path:
    """The repository's main checkout: `root` itself, or, in a `git worktree`, the checkout
    whose .git it shares (so that `<repo>/../shared` means the same place from both)."""
    dot_git = root / ".git"
    if dot_git.is_file():
        text = dot_git.read_text().strip()
        if text.startswith("gitdir:"):
            gitdir = (root / text.split(":", 1)[1].strip()).resolve()
            common = gitdir / "commondir"
            if common.is_file():
                return (gitdir / common.read_text().strip()).resolve().parent
    return root


def resonate_sql_candidates(root: Path = ROOT, environ: dict[str, str] | None = None) -> list[Path]:
    """Where resonate.sql is looked for, in order. A DUESPEC_RESONATE_PG_SQL that is set is
    the only place: a path the user named and got wrong is said as such, never passed over."""
    environ = os.environ if environ is None else environ
    configured = environ.get("DUESPEC_RESONATE_PG_SQL")
    if configured:
        return [Path(configured)]
    checkouts = list(dict.fromkeys([root, _main_checkout(root)]))
    return ([checkout.parent / SHARED_SQL for checkout in checkouts]
            + [checkout / CLONE_DIR / "resonate.sql" for checkout in checkouts])


def resonate_sql(root: Path = ROOT, environ: dict[str, str] | None = None) -> Path:
    """resonate-pg's one SQL file, or PostgresUnavailable naming where it was looked for
    and how to get it."""
    candidates = resonate_sql_candidates(root, environ)
    for path in candidates:
        if path.is_file():
            return path
    if len(candidates) == 1:
        raise PostgresUnavailable(f"DUESPEC_RESONATE_PG_SQL={candidates[0]}: no such file")
    raise PostgresUnavailable(f"resonate.sql not found (looked in {', '.join(map(str, candidates))}): "
                              f"{HOW_TO_GET_SQL}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server_user() -> pwd.struct_passwd | None:
    """The unprivileged account to run as when we are root; None when we are not root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise PostgresUnavailable("running as root, and neither a `postgres` nor a `nobody` account "
                              "exists to run PostgreSQL as (it refuses to run as root)")


class PostgresServer:
    """One PostgreSQL server with resonate-pg applied to database `resonate`; `dsn` once started."""

    def __init__(self) -> None:
        self.bin = pg_bin_dir()
        self.sql = resonate_sql()
        self.user = _server_user()
        self.dir: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.dsn = ""

    def _as_server_user(self, command: list[str]) -> list[str]:
        if self.user is None:
            return command
        return ["setpriv", f"--reuid={self.user.pw_uid}", f"--regid={self.user.pw_gid}", "--clear-groups",
                *command]

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(LC_ALL="C", LANG="C")
        if self.user is not None:
            env["HOME"] = str(self.dir)
        return env

    def start(self) -> PostgresServer:
        self.dir = Path(tempfile.mkdtemp(prefix="duespec-pg-"))
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        assert self.dir is not None
        if self.user is not None:
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        data = self.dir / "data"
        initdb = subprocess.run(
            self._as_server_user([str(self.bin / "initdb"), "-D", str(data), "-U", SUPERUSER,
                                  "--auth=trust", "-E", "UTF8", "--no-sync"]),
            env=self._env(), cwd=self.dir, capture_output=True, text=True)
        if initdb.returncode != 0:
            raise PostgresUnavailable(f"initdb failed ({initdb.returncode}): {initdb.stderr.strip()[-800:]}")
        log = self.dir / "postgres.log"
        for _attempt in range(5):  # a free port may be taken between the probe and the bind
            self.port = free_port()
            with open(log, "ab") as out:
                self.process = subprocess.Popen(
                    self._as_server_user([
                        str(self.bin / "postgres"), "-D", str(data), "-p", str(self.port),
                        "-k", str(self.dir), "-c", "listen_addresses=127.0.0.1",
                        # a disposable database: durability buys nothing and costs seconds
                        "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                        "-c", "shared_buffers=32MB"]),
                    env=self._env(), cwd=self.dir, stdout=out, stderr=subprocess.STDOUT)
            if self._wait_ready(log):
                break
        else:
            raise PostgresUnavailable(f"postgres did not start: {log.read_text(errors='replace')[-800:]}")
        self._create_database()

    def _wait_ready(self, log: Path) -> bool:
        import psycopg

        assert self.process is not None
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                psycopg.connect(self._dsn("postgres"), connect_timeout=2).close()
                return True
            except psycopg.OperationalError:
                time.sleep(0.05)
        self._kill()
        return False

    def _dsn(self, database: str) -> str:
        return f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname={database}"

    def _create_database(self) -> None:
        self.dsn = self.create_database(DATABASE)

    def create_database(self, name: str, sql: Path | None = None) -> str:
        """Another database on this server with resonate.sql applied (or `sql`, a variant
        of it a test wrote); its DSN. Each campaign needs its own: a target's reset
        truncates every table of its database."""
        import psycopg

        if not name.isidentifier():
            raise ValueError(f"database name {name!r} is not a plain identifier")
        with psycopg.connect(self._dsn("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        dsn = self._dsn(name)
        with psycopg.connect(dsn, autocommit=True) as conn:
            # resonate.sql warns that pg_cron is missing (timers then fire only when called);
            # its notices are for people applying it by hand.
            conn.add_notice_handler(lambda notice: None)
            conn.execute((sql or self.sql).read_text())
        return dsn

    def stop(self) -> None:
        """Shut the server down (fast shutdown, then SIGKILL) and remove its directory."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self._kill()
        self.process = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def _kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    # Started in the background (`&`), a process inherits SIGINT ignored; and `kill` sends
    # SIGTERM: both must stop the server and remove its files.
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        server = PostgresServer().start()
    except PostgresUnavailable as error:
        print(f"pg_support: {error}", file=sys.stderr)
        return 2
    try:
        print(f"RESONATE_PG_DSN={server.dsn!r}", flush=True)
        print("PostgreSQL with resonate-pg is running; Ctrl-C stops it and removes its files.",
              file=sys.stderr, flush=True)
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

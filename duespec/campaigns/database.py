"""The example database: campaigns remember the failures they found.

Every failing run Hypothesis finds, and every step of its shrinking, is saved in
Hypothesis's own example database; the next campaign against the same system, profile and
target replays the saved ones first (Hypothesis's reuse phase), before it generates
anything new. A failure found last night after half an hour is found again tonight in its
first run.

Where (`--database`):

- a directory (default `.duespec/examples`, or what the environment variable
  DUESPEC_DATABASE says): Hypothesis's DirectoryBasedExampleDatabase;
- `redis://HOST:PORT/N`: Hypothesis's RedisExampleDatabase, one database shared by every
  process, shard and machine that reaches the server;
- `none`: no memory (every campaign starts from nothing).

Keys. Hypothesis keys examples by test function, and every lockstep machine is run through
the same one, so the key is replaced by a hash of what makes an example meaningful: the
system, profile and target as given, the steps per run, the depth and the ops in scope,
and the classes already masked when the search runs (the search after class A is masked
has its own key, so replaying A's example, which now passes, never deletes it). Two
targets or profiles never replay each other's examples.

A database that cannot be reached or written (a Redis server that is killed, a directory
the user cannot write), at the start or mid-campaign, is reported in one line and the
campaign goes on without it; the report counts only the examples really saved. A saved example
that no longer fails (the target was fixed, the machine changed) is dropped by Hypothesis;
the report counts it in one line.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

#: The default database: a directory beside the failure traces.
DEFAULT_DATABASE = str(Path(".duespec") / "examples")
#: The environment variable that replaces DEFAULT_DATABASE (a directory, redis://... or
#: none): a CI job's shared database, or a test suite that must not write into the clone.
DATABASE_ENV = "DUESPEC_DATABASE"
#: Seconds a Redis call may take before the database is given up for the campaign.
REDIS_TIMEOUT = 5.0

_SUFFIXES = (b".secondary", b".pareto")


class DatabaseError(ValueError):
    """--database names something that is not a database."""


def default_database() -> str:
    """The database a campaign uses when --database is not given."""
    return os.environ.get(DATABASE_ENV) or DEFAULT_DATABASE


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class Stats:
    """What one campaign did with the database (summed over chunks and workers)."""

    where: str
    #: Saved examples replayed before generation.
    replayed: int = 0
    #: Searches whose failure was a replayed example, by search number (0 = the first).
    hit_searches: list[int] = field(default_factory=list)
    #: Saved examples dropped: they no longer fail, or could not be read.
    dropped: int = 0
    saved: int = 0
    #: Why the database was given up, if it was.
    problem: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"where": self.where, "replayed": self.replayed, "hits": len(self.hit_searches),
                "hit_searches": self.hit_searches, "dropped": self.dropped, "saved": self.saved,
                "problem": self.problem}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Stats":
        return cls(data["where"], data.get("replayed", 0), list(data.get("hit_searches", [])),
                   data.get("dropped", 0), data.get("saved", 0), data.get("problem"))

    def add(self, other: "Stats") -> None:
        self.replayed += other.replayed
        self.hit_searches += other.hit_searches
        self.dropped += other.dropped
        self.saved += other.saved
        self.problem = self.problem or other.problem

    def line(self) -> str:
        if self.problem and not self.replayed and not self.saved:
            return f"database {self.where}: not used ({self.problem}): nothing replayed, nothing saved"
        text = (f"database {self.where}: replayed {self.replayed} saved example"
                f"{'' if self.replayed == 1 else 's'}, {len(self.hit_searches)} hit"
                f"{'' if len(self.hit_searches) == 1 else 's'} (a class found by replay), "
                f"{self.saved} saved")
        if self.dropped:
            text += f", dropped {self.dropped} stale (no longer failing or unreadable)"
        if self.problem:
            text += f"; given up: {self.problem}"
        return text


class CampaignDatabase(ExampleDatabase):
    """A Hypothesis database under duespec's keys, which survives the loss of its store.

    `bind(masks)` (run_campaign's `database=`) gives the database of one campaign: its key
    follows the masks as classes are found."""

    def __init__(self, inner: ExampleDatabase | None, where: str, identity: str = "",
                 say: Callable[[str], None] = _say) -> None:
        super().__init__()
        self.inner, self.where, self.identity, self.say = inner, where, identity, say
        self.masks: Any = None
        self.stats = Stats(where)
        self._search = -1
        self._fetched: set[bytes] = set()
        self._hit_checked = True
        if inner is None:
            self.stats.problem = "unreachable"

    # -- what run_campaign calls --------------------------------------------------------

    def bind(self, masks: Any) -> "CampaignDatabase":
        self.masks = masks
        return self

    def for_campaign(self, identity: str) -> "CampaignDatabase":
        """The same store for another campaign, with fresh counts."""
        return CampaignDatabase(self.inner, self.where, identity, self.say) if self.stats.problem is None \
            else _given_up(self.where, identity, self.stats.problem, self.say)

    # -- keys ----------------------------------------------------------------------------

    def _key(self, key: bytes) -> tuple[bytes, bool]:
        suffix = next((s for s in _SUFFIXES if key.endswith(s)), b"")
        masked: list[str] = []
        if self.masks is not None:
            masked = sorted([found.label() for found in self.masks.found]
                            + [entry.describe() for entry in self.masks.active]
                            + [f"known {known.label()}" for known in self.masks.known])
        digest = hashlib.sha256("\0".join(["duespec-examples/1", self.identity, *masked]).encode(
            "utf-8", "surrogatepass")).hexdigest()
        return f"duespec:{digest}".encode() + suffix, suffix == b""

    # -- the store, guarded ----------------------------------------------------------------

    def _guard(self, what: str, call: Callable[[], Any], default: Any) -> Any:
        if self.inner is None or self.stats.problem is not None:
            return default
        try:
            return call()
        except Exception as error:  # a lost server, a full disk: the campaign goes on
            self.stats.problem = f"{what} failed ({type(error).__name__}: {str(error)[:200]})"
            self.say(f"database {self.where}: {self.stats.problem}; the campaign goes on without it")
            return default

    def fetch(self, key: bytes) -> Iterable[bytes]:
        mapped, primary = self._key(key)
        values = list(self._guard("reading", lambda: list(self.inner.fetch(mapped)), []))  # type: ignore[union-attr]
        if primary:
            self._search += 1
            self._fetched = set(values)
            self._hit_checked = False
            self.stats.replayed += len(values)
        return values

    def save(self, key: bytes, value: bytes) -> None:
        mapped, primary = self._key(key)
        if primary:
            # Hypothesis saves a failing run as soon as it finds it: the first save of a
            # search tells whether the failure was one of the replayed examples.
            if not self._hit_checked:
                self._hit_checked = True
                if value in self._fetched:
                    self.stats.hit_searches.append(self._search)
        saved = self._guard("saving", lambda: self.inner.save(mapped, value) or True, False)  # type: ignore[union-attr]
        if primary and saved:
            self.stats.saved += 1

    def delete(self, key: bytes, value: bytes) -> None:
        mapped, primary = self._key(key)
        if primary and value in self._fetched:
            self._fetched.discard(value)
            self.stats.dropped += 1
        self._guard("deleting", lambda: self.inner.delete(mapped, value), None)  # type: ignore[union-attr]

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        source, _ = self._key(src)
        target, _ = self._key(dest)
        self._guard("moving", lambda: self.inner.move(source, target, value), None)  # type: ignore[union-attr]

    def __repr__(self) -> str:
        return f"CampaignDatabase({self.where!r})"


def _given_up(where: str, identity: str, problem: str, say: Callable[[str], None]) -> CampaignDatabase:
    database = CampaignDatabase(None, where, identity, say)
    database.stats.problem = problem
    return database


def open_database(spec: str | None, say: Callable[[str], None] = _say) -> CampaignDatabase | None:
    """The database `--database SPEC` names; None for `none`. An unreachable Redis is one
    line and a database that is given up (the campaign runs without memory); a spec that
    is no database is a DatabaseError."""
    if spec is None:
        spec = default_database()
    spec = spec.strip()
    if spec.lower() in ("none", "off", ""):
        return None
    if spec.startswith(("redis://", "rediss://", "unix://")):
        return _open_redis(spec, say)
    if "://" in spec:
        raise DatabaseError(f"--database {spec!r}: not a directory, redis://HOST:PORT/N or none")
    path = Path(spec)
    if path.exists() and not path.is_dir():
        raise DatabaseError(f"--database {spec!r} is a file, not a directory")
    try:  # a directory that cannot be written would lose every example without a word
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as error:
        problem = f"cannot write ({error.strerror or type(error).__name__})"
        say(f"database {spec}: {problem}; the campaign runs without it")
        return _given_up(spec, "", problem, say)
    return CampaignDatabase(_CheckedDirectory(str(path)), spec, say=say)


class _CheckedDirectory(DirectoryBasedExampleDatabase):
    """Hypothesis's directory database, whose save says when it wrote nothing (Hypothesis's
    own passes over an OSError, a full disk, in silence)."""

    def save(self, key: bytes, value: bytes) -> None:
        super().save(key, value)
        if not self._value_path(key, value).exists():
            raise OSError(f"the example was not written under {self.path}")


def _open_redis(url: str, say: Callable[[str], None]) -> CampaignDatabase:
    try:
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase
    except ImportError as error:
        raise DatabaseError(f"--database {url!r} needs the redis client ({error})") from None
    try:
        client = redis.Redis.from_url(url, socket_timeout=REDIS_TIMEOUT, socket_connect_timeout=REDIS_TIMEOUT)
    except ValueError as error:
        raise DatabaseError(f"--database {url!r}: {error}") from None
    try:
        client.ping()
    except Exception as error:  # refused, timed out, wrong password: run without memory
        problem = f"unreachable ({type(error).__name__}: {str(error)[:200]})"
        say(f"database {url}: {problem}; the campaign runs without it")
        return _given_up(url, "", problem, say)
    return CampaignDatabase(RedisExampleDatabase(client), url, say=say)


def identity_of(system: str, profile: str, target: str, steps: int, depth: float,
                scope: Any = None) -> str:
    """What saved examples are meaningful for: the same machine, draws and target."""
    ops = sorted(scope.excluded_ops) if scope is not None else []
    return "\0".join([system, profile, target.strip(), str(steps), f"{depth:g}", ",".join(ops)])

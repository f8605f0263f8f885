"""duebook, production: a Book of deferrals that authorizes each action at most once.

Same behaviour and error precedence as the reference model (spec/duebook.md,
docs/operations.md); built for size and speed instead of obviousness:

- Open deferrals live in an open-addressing table of parallel int64 arrays (plus a list
  of owners) keyed by id. Ids are handed out one after another, so `id & mask` puts
  nearly every deferral in its own home bucket: a lookup is one array read, with a short
  bounded probe for the rare id whose bucket an older deferral still holds. The table
  grows and shrinks with the open count (D-06: storage follows the open deferrals).
- Two ordered indexes answer the keeper queries: (due_at, id, expires_at) for claimable and
  (expires_at, id) for expirable. Each is a list of short sorted runs of int64 arrays (the
  idea of a B-tree's leaves without a Python object per entry). Claim, Cancel and Expire
  leave the consumed row behind (checking the table is how a query tells it is gone):
  a query drops the stale rows it walks over, and the whole index is rebuilt once stale
  rows could outnumber the open ones, so consuming costs O(1) amortized and no more.
- Deferral values are tuples with named fields: the cheapest immutable value CPython makes.
- Owners are interned: a Book with many deferrals per owner stores each name once.

Per operation: O(1) expected lookups by id; schedule O(log n) plus a memmove of one run;
claimable/expirable O(k log n) for k results, plus O(1) per run of already-expired
deferrals that claimable steps over, plus each stale row once. `duespec bench --only
duebook` sets each operation against the model at 10, 1,000 and 1,000,000 open.
"""

from __future__ import annotations

import struct
import sys
import zlib
from array import array
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import FrozenInstanceError
from itertools import chain, compress
from operator import itemgetter

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

#: Longest run in an ordered index before it splits in two: long enough that the list of
#: runs stays short, short enough that inserting into a run is a small memmove.
_RUN_MAX = 1024
#: Stale index rows tolerated beyond the open count before the indexes are rebuilt, and
#: the table size below which it never shrinks (avoids churn at tiny sizes).
_COMPACT_FLOOR = 64
_MIN_CAPACITY = 8
#: A lookup probes at most this many buckets past its home before the table is rebuilt
#: larger (ids that collide are ones opened a whole table size apart).
_MAX_REACH = 16


class DuebookError(Exception):
    """Every failure; `code` is the stable error code of docs/operations.md."""

    code = "error"


class Invalid(DuebookError):
    code = "invalid"


class NotFound(DuebookError):
    code = "not_found"


class NotDue(DuebookError):
    code = "not_due"


class Expired(DuebookError):
    code = "expired"


class NotExpired(DuebookError):
    code = "not_expired"


class NotOwner(DuebookError):
    code = "not_owner"


class Full(DuebookError):
    code = "full"


class Deferral(tuple):  # type: ignore[type-arg]
    """A value, never a handle into the Book (D-16): immutable, and equal only to another
    Deferral with the same fields, as a frozen dataclass would be."""

    __slots__ = ()

    def __new__(cls, id: int, owner: str, due_at: int, expires_at: int) -> Deferral:
        return tuple.__new__(cls, (id, owner, due_at, expires_at))

    id: int = property(itemgetter(0))  # type: ignore[assignment]
    owner: str = property(itemgetter(1))  # type: ignore[assignment]
    due_at: int = property(itemgetter(2))  # type: ignore[assignment]
    #: 0 means the deferral never expires (D-11).
    expires_at: int = property(itemgetter(3))  # type: ignore[assignment]

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        return type(other) is Deferral and tuple.__eq__(self, other)  # type: ignore[arg-type]

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = tuple.__hash__

    def __lt__(self, other: object) -> bool:
        return NotImplemented

    __le__ = __gt__ = __ge__ = __lt__

    def __getnewargs__(self) -> tuple[int, str, int, int]:
        return tuple(self)  # type: ignore[return-value]

    def __repr__(self) -> str:
        return "Deferral(id={!r}, owner={!r}, due_at={!r}, expires_at={!r})".format(*self)


#: Deferral from a 4-tuple without a Python-level __new__: the hot paths' constructor.
_value: Callable[[type[Deferral], tuple[int, str, int, int]], Deferral] = tuple.__new__  # type: ignore[assignment]


# --- input checks (D-15, D-19) ----------------------------------------------------------


def _int64(name: str, value: object, minimum: int = INT64_MIN) -> int:
    """bool is an int to Python but not to Go or JSON, so it is rejected by type."""
    if type(value) is not int:
        raise Invalid(f"{name} must be an int64, got {type(value).__name__} {value!r}")
    if not minimum <= value <= INT64_MAX:
        bound = "an int64" if minimum == INT64_MIN else f"an int64 >= {minimum}"
        raise Invalid(f"{name} must be {bound}, got {value}")
    return value


def _time(name: str, value: object) -> int:
    return _int64(name, value, 0)


def _owner(name: str, value: object) -> str:
    if type(value) is not str or value == "":
        raise Invalid(f"{name} must be a non-empty string, got {value!r}")
    return sys.intern(value)


def _not_found(id: object) -> NotFound:
    """The error for an id that is no open deferral, once `id` passed as an int64."""
    _int64("id", id)
    return NotFound(f"no open deferral with id {id}")


# --- ordered index ----------------------------------------------------------------------


class _SortedRuns:
    """Rows of int64 columns sorted by (column 0, column 1), stored as short runs.

    Column 0 is the sort key and column 1 the id, which breaks ties and makes every row
    unique; further columns ride along. Rows are only ever inserted with a larger id than
    any before, so a new row goes after every row with the same key. Each run has a memo
    slot for a summary of its rows that a query may compute once and reuse; any change to
    the run clears it."""

    __slots__ = ("_runs", "_firsts", "_memos")

    def __init__(self) -> None:
        #: Each run is a list of parallel arrays of equal length, never empty.
        self._runs: list[list[array[int]]] = []
        #: The key of each run's first row, for the binary search over runs.
        self._firsts: list[int] = []
        self._memos: list[int | None] = []

    @classmethod
    def from_sorted(cls, columns: list[array[int]]) -> _SortedRuns:
        """An index over columns already in (key, id) order, in half-full runs."""
        index = cls()
        half = _RUN_MAX // 2
        for start in range(0, len(columns[0]), half):
            index._add_run(len(index._runs), [column[start:start + half] for column in columns])
        return index

    def _add_run(self, r: int, run: list[array[int]]) -> None:
        self._runs.insert(r, run)
        self._firsts.insert(r, run[0][0])
        self._memos.insert(r, None)

    def insert(self, key: int, id: int, extra: int | None = None) -> None:
        """Add the row (key, id) or (key, id, extra); `id` is larger than any before."""
        runs = self._runs
        if not runs:
            self._add_run(0, _new_run(key, id, extra))
            return
        r = len(runs) - 1
        if key < self._firsts[r]:
            r = max(bisect_right(self._firsts, key) - 1, 0)
        run = runs[r]
        keys = run[0]
        if key >= keys[-1]:
            if len(keys) >= _RUN_MAX and r == len(runs) - 1:
                # The end of the index: start a run rather than split a full one, so a
                # Book filled in key order keeps its runs full.
                self._add_run(r + 1, _new_run(key, id, extra))
                return
            keys.append(key)
            run[1].append(id)
            if extra is not None:
                run[2].append(extra)
        else:
            at = bisect_right(keys, key)
            keys.insert(at, key)
            run[1].insert(at, id)
            if extra is not None:
                run[2].insert(at, extra)
            if at == 0:
                self._firsts[r] = key
        self._memos[r] = None
        if len(keys) > _RUN_MAX:
            half = len(keys) // 2
            tail = [column[half:] for column in run]
            for column in run:
                del column[half:]
            self._add_run(r + 1, tail)

    def memo(self, r: int, summarize: Callable[[list[array[int]]], int]) -> int:
        """summarize(run r), computed at most once between changes to that run."""
        value = self._memos[r]
        if value is None:
            value = self._memos[r] = summarize(self._runs[r])
        return value

    def drop_rows(self, stale: list[tuple[int, list[int]]]) -> None:
        """Remove the given rows: (run index, positions in it), runs in increasing order."""
        for r, positions in reversed(stale):
            run = self._runs[r]
            for at in reversed(positions):
                for column in run:
                    del column[at]
            if not run[0]:
                del self._runs[r], self._firsts[r], self._memos[r]
                continue
            self._firsts[r] = run[0][0]
            self._memos[r] = None

    def clear(self) -> None:
        self._runs.clear()
        self._firsts.clear()
        self._memos.clear()

    def keep(self, is_live: Callable[[int], bool]) -> _SortedRuns:
        """The same index without the rows whose id is not live, in fresh runs."""
        runs = self._runs
        if not runs:
            return self
        width = len(runs[0])
        live = list(map(is_live, chain.from_iterable(run[1] for run in runs)))
        return _SortedRuns.from_sorted([
            array("q", compress(chain.from_iterable(run[c] for run in runs), live))
            for c in range(width)])


def _new_run(key: int, id: int, extra: int | None) -> list[array[int]]:
    run = [array("q", (key,)), array("q", (id,))]
    if extra is not None:
        run.append(array("q", (extra,)))
    return run


def _latest_expiry(expiries: array[int]) -> int:
    """The last instant any of these deferrals is still claimable, plus one; past
    INT64_MAX when one never expires."""
    return INT64_MAX + 1 if 0 in expiries else max(expiries)


def _run_latest_expiry(run: list[array[int]]) -> int:
    return _latest_expiry(run[2])  # the due index's third column is expires_at


# --- the Book ---------------------------------------------------------------------------

_SNAPSHOT_MAGIC = b"DUEBOOK\x00"
_SNAPSHOT_VERSION = 2
#: magic, version, max_open, next_id, open count, distinct owners
_HEADER = struct.Struct("<8sBqqqq")
_OWNER_LENGTH = struct.Struct("<I")
#: CRC-32 of everything before it, last in the snapshot: any single damaged bit (and any
#: burst up to 32 bits) changes it, so a damaged snapshot is refused rather than restored.
_CHECKSUM = struct.Struct("<I")


def _little_endian(column: array[int]) -> bytes:
    if sys.byteorder == "big":
        column = array(column.typecode, column)
        column.byteswap()
    return column.tobytes()


class Book:
    """An importing realm's book of deferrals. It reads no clock: every call that needs
    the time is given `now`, in whatever unit the realm uses consistently."""

    __slots__ = (
        "_max_open", "_next_id", "_open", "_stale",
        "_mask", "_reach", "_grow_at", "_ids", "_due", "_expires", "_owners",
        "_by_due", "_by_expiry",
    )

    def __init__(self, max_open: int) -> None:
        self._max_open = _int64("max_open", max_open, 1)
        self._next_id = 1
        self._open = 0
        #: Deferrals consumed since the indexes were last rebuilt: an upper bound on the
        #: stale rows they hold.
        self._stale = 0
        self._allocate(_MIN_CAPACITY)
        self._by_due = _SortedRuns()  # (due_at, id, expires_at)
        self._by_expiry = _SortedRuns()  # (expires_at, id), expiring deferrals only

    # -- observation --

    @property
    def max_open(self) -> int:
        return self._max_open

    @property
    def next_id(self) -> int:
        """The id the next successful schedule allocates (D-04)."""
        return self._next_id

    def __len__(self) -> int:
        return self._open

    def __repr__(self) -> str:
        return f"Book(max_open={self._max_open}, open={self._open}, next_id={self._next_id})"

    def open_deferrals(self) -> Iterator[Deferral]:
        """Every open deferral, by id. Like a dict, it refuses to go on after the Book
        changed under it: (next_id, open count) differs after any schedule or consume."""
        version = (self._next_id, self._open)
        for slot in self._slots_by_id():
            yield self._deferral_at(slot)
            if (self._next_id, self._open) != version:
                raise RuntimeError("Book changed during open_deferrals()")

    # -- operations (docs/operations.md) --

    def schedule(self, owner: str, delay: int, ttl: int, now: int) -> Deferral:
        """D-03: open a deferral due at now + delay, expiring ttl after that (never if 0)."""
        if type(owner) is not str or not owner:
            _owner("owner", owner)
        owner = sys.intern(owner)
        if not (type(now) is int and type(delay) is int and type(ttl) is int
                and 0 <= now <= INT64_MAX and 0 <= delay <= INT64_MAX and 0 <= ttl <= INT64_MAX):
            _time("now", now)
            _time("delay", delay)
            _time("ttl", ttl)
        due_at = now + delay
        if due_at > INT64_MAX:
            raise Invalid(f"due_at = now + delay = {now} + {delay} overflows int64")
        expires_at = due_at + ttl if ttl else 0
        if expires_at > INT64_MAX:
            # Wrapping would turn "expires" into 0, "never expires" (D-20).
            raise Invalid(f"expires_at = due_at + ttl = {due_at} + {ttl} overflows int64")
        open = self._open
        if open >= self._max_open:
            raise Full(f"the book already holds max_open = {self._max_open} open deferrals")
        id = self._next_id
        if id == INT64_MAX:
            # The counter must stay an int64 (D-04, D-25); 2^63 - 2 schedules come first.
            raise Full(f"the book has allocated every id below {INT64_MAX}")
        if open >= self._grow_at:
            self._rehash(2 * len(self._ids))
        self._put(id, owner, due_at, expires_at)
        if self._reach > _MAX_REACH and len(self._ids) < 8 * (open + 1):
            self._rehash(2 * len(self._ids), placing=1)
        self._by_due.insert(due_at, id, expires_at)
        if expires_at:
            self._by_expiry.insert(expires_at, id)
        self._open = open + 1
        self._next_id = id + 1
        return _value(Deferral, (id, owner, due_at, expires_at))

    def claim(self, id: int, now: int) -> Deferral:
        """D-08: the at-most-once authorization, on the half-open window [due_at, expires_at)."""
        if not (type(now) is int and 0 <= now <= INT64_MAX and type(id) is int and id > 0):
            _int64("id", id)
            _time("now", now)
            raise NotFound(f"no open deferral with id {id}")
        b = id & self._mask
        if self._ids[b] != id:
            b = self._probe(id)
            if b < 0:
                raise _not_found(id)
        due_at = self._due[b]
        if now < due_at:
            raise NotDue(f"deferral {id} is due at {due_at}, now is {now}")
        expires_at = self._expires[b]
        if expires_at and now >= expires_at:
            # Stays open: only expire or cancel may consume it now (D-10).
            raise Expired(f"deferral {id} expired at {expires_at}, now is {now}")
        # Consume (D-02): gone for good; the index rows stay until a query walks over
        # them or the indexes are rebuilt (D-06).
        owner = self._owners[b]
        self._ids[b] = 0
        self._owners[b] = None
        open = self._open - 1
        self._open = open
        stale = self._stale + 1
        self._stale = stale
        if stale > open + _COMPACT_FLOOR or not open:
            self._compact()
        return _value(Deferral, (id, owner, due_at, expires_at))  # type: ignore[arg-type]

    def cancel(self, id: int, caller: str) -> Deferral:
        """D-12: the owner withdraws an open deferral, at any time."""
        if not (type(id) is int and id > 0 and type(caller) is str and caller):
            _int64("id", id)
            _owner("caller", caller)
            raise NotFound(f"no open deferral with id {id}")
        b = id & self._mask
        if self._ids[b] != id:
            b = self._probe(id)
            if b < 0:
                raise _not_found(id)
        if self._owners[b] != caller:
            raise NotOwner(f"deferral {id} belongs to {self._owners[b]!r}, not {caller!r}")
        due_at, expires_at = self._due[b], self._expires[b]
        # Consume (D-02): gone for good; the index rows stay until a query walks over
        # them or the indexes are rebuilt (D-06).
        owner = self._owners[b]
        self._ids[b] = 0
        self._owners[b] = None
        open = self._open - 1
        self._open = open
        stale = self._stale + 1
        self._stale = stale
        if stale > open + _COMPACT_FLOOR or not open:
            self._compact()
        return _value(Deferral, (id, owner, due_at, expires_at))  # type: ignore[arg-type]

    def expire(self, id: int, now: int) -> Deferral:
        """D-13: anyone may clear a deferral whose window has closed."""
        if not (type(now) is int and 0 <= now <= INT64_MAX and type(id) is int and id > 0):
            _int64("id", id)
            _time("now", now)
            raise NotFound(f"no open deferral with id {id}")
        b = id & self._mask
        if self._ids[b] != id:
            b = self._probe(id)
            if b < 0:
                raise _not_found(id)
        expires_at = self._expires[b]
        if expires_at == 0:
            raise NotExpired(f"deferral {id} never expires (ttl 0)")
        if now < expires_at:
            raise NotExpired(f"deferral {id} expires at {expires_at}, now is {now}")
        due_at = self._due[b]
        # Consume (D-02): gone for good; the index rows stay until a query walks over
        # them or the indexes are rebuilt (D-06).
        owner = self._owners[b]
        self._ids[b] = 0
        self._owners[b] = None
        open = self._open - 1
        self._open = open
        stale = self._stale + 1
        self._stale = stale
        if stale > open + _COMPACT_FLOOR or not open:
            self._compact()
        return _value(Deferral, (id, owner, due_at, expires_at))  # type: ignore[arg-type]

    def get(self, id: int) -> Deferral:
        """D-14: one open deferral, read only."""
        if type(id) is not int or id <= 0:
            raise _not_found(id)
        b = id & self._mask
        if self._ids[b] != id:
            b = self._probe(id)
            if b < 0:
                raise _not_found(id)
        return _value(Deferral, (id, self._owners[b], self._due[b], self._expires[b]))

    def claimable(self, now: int, limit: int) -> list[Deferral]:
        """D-23: up to `limit` deferrals a claim at `now` would accept, by (due_at, id).

        A run whose every row has expired is skipped on its memoized latest expiry, so
        only runs that yield something are walked in Python."""
        if not (type(now) is int and type(limit) is int and 0 <= now <= INT64_MAX
                and 0 <= limit <= INT64_MAX):
            _time("now", now)
            _time("limit", limit)
        found: list[Deferral] = []
        if limit == 0:
            return found
        ids, owners, mask = self._ids, self._owners, self._mask
        index = self._by_due
        stale: list[tuple[int, list[int]]] = []
        for r, run in enumerate(index._runs):
            dues = run[0]
            end = bisect_right(dues, now)
            if end == 0:
                break
            if end == len(dues):
                expiries = run[2]
                if index.memo(r, _run_latest_expiry) <= now:
                    continue
            else:
                expiries = run[2][:end]
                if _latest_expiry(expiries) <= now:
                    break
            row_ids = run[1]
            gone: list[int] = []
            for at in range(end):
                expires_at = expiries[at]
                if expires_at == 0 or now < expires_at:
                    id = row_ids[at]
                    b = id & mask
                    if ids[b] != id:
                        b = self._probe(id)
                        if b < 0:
                            gone.append(at)
                            continue
                    found.append(_value(Deferral, (id, owners[b], dues[at], expires_at)))
                    if len(found) == limit:
                        break
            if gone:
                stale.append((r, gone))
            if len(found) == limit or end < len(dues):
                break
        if stale:
            index.drop_rows(stale)
        return found

    def expirable(self, now: int, limit: int) -> list[Deferral]:
        """D-24: up to `limit` deferrals an expire at `now` would accept, by (expires_at, id)."""
        if not (type(now) is int and type(limit) is int and 0 <= now <= INT64_MAX
                and 0 <= limit <= INT64_MAX):
            _time("now", now)
            _time("limit", limit)
        found: list[Deferral] = []
        if limit == 0:
            return found
        ids, owners, due, mask = self._ids, self._owners, self._due, self._mask
        index = self._by_expiry
        stale: list[tuple[int, list[int]]] = []
        for r, run in enumerate(index._runs):
            expiries = run[0]
            end = bisect_right(expiries, now)
            if end == 0:
                break
            row_ids = run[1]
            gone: list[int] = []
            for at in range(end):
                id = row_ids[at]
                b = id & mask
                if ids[b] != id:
                    b = self._probe(id)
                    if b < 0:
                        gone.append(at)
                        continue
                found.append(_value(Deferral, (id, owners[b], due[b], expiries[at])))
                if len(found) == limit:
                    break
            if gone:
                stale.append((r, gone))
            if len(found) == limit or end < len(expiries):
                break
        if stale:
            index.drop_rows(stale)
        return found

    # -- persistence (D-25) --

    def snapshot(self) -> bytes:
        """The whole Book as versioned, checksummed little-endian bytes; `restore` gives it back.

        Rows go in id order and owners in order of first use, so a Book has one snapshot."""
        slots = self._slots_by_id()
        owners = [self._owners[slot] for slot in slots]
        names = list(dict.fromkeys(owners))
        index = {name: n for n, name in enumerate(names)}
        parts = [_HEADER.pack(_SNAPSHOT_MAGIC, _SNAPSHOT_VERSION, self._max_open,
                              self._next_id, self._open, len(names))]
        for name in names:
            encoded = name.encode("utf-8", "surrogatepass")  # any str is an owner, lone surrogates too
            parts.append(_OWNER_LENGTH.pack(len(encoded)))
            parts.append(encoded)
        for column in (self._ids, self._due, self._expires):
            parts.append(_little_endian(array("q", map(column.__getitem__, slots))))
        parts.append(_little_endian(array("q", (index[owner] for owner in owners))))
        body = b"".join(parts)
        return body + _CHECKSUM.pack(zlib.crc32(body))

    @classmethod
    def restore(cls, data: bytes) -> Book:
        """Rebuild a Book from `snapshot` bytes, or raise Invalid naming what is wrong.

        The checksum comes first, so damage is refused as damage; then every field is
        checked against the range a live Book keeps, before the Book is built, so no
        half-built Book escapes and no restored Book fails later on a value it holds."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise Invalid(f"snapshot must be bytes, got {type(data).__name__}")
        data = bytes(data)
        if len(data) < _HEADER.size + _CHECKSUM.size:
            raise Invalid(f"snapshot truncated: {len(data)} bytes, the header and checksum alone "
                          f"are {_HEADER.size + _CHECKSUM.size}")
        if data[:len(_SNAPSHOT_MAGIC)] != _SNAPSHOT_MAGIC:
            raise Invalid("not a duebook snapshot (bad magic bytes)")
        body, (checksum,) = data[:-_CHECKSUM.size], _CHECKSUM.unpack_from(data, len(data) - _CHECKSUM.size)
        if zlib.crc32(body) != checksum:
            raise Invalid(f"snapshot damaged: its CRC-32 is {zlib.crc32(body):08x}, it records "
                          f"{checksum:08x} (truncated, extended or changed since it was written)")
        magic, version, max_open, next_id, count, owner_count = _HEADER.unpack_from(body)
        if version != _SNAPSHOT_VERSION:
            raise Invalid(f"snapshot version {version} is not supported (expected {_SNAPSHOT_VERSION})")
        if max_open < 1:
            raise Invalid(f"snapshot max_open must be >= 1, got {max_open}")
        if next_id < 1:
            raise Invalid(f"snapshot next_id must be >= 1, got {next_id}")
        if not 0 <= count <= max_open:
            raise Invalid(f"snapshot holds {count} open deferrals, outside [0, max_open = {max_open}]")
        if not 0 <= owner_count <= count:
            raise Invalid(f"snapshot lists {owner_count} owners for {count} deferrals")
        offset = _HEADER.size
        names: list[str] = []
        for n in range(owner_count):
            if offset + _OWNER_LENGTH.size > len(body):
                raise Invalid(f"snapshot truncated in owner {n}")
            (length,) = _OWNER_LENGTH.unpack_from(body, offset)
            offset += _OWNER_LENGTH.size
            if length == 0 or offset + length > len(body):
                raise Invalid(f"snapshot owner {n} has a bad length {length}")
            try:
                names.append(sys.intern(body[offset:offset + length].decode("utf-8", "surrogatepass")))
            except UnicodeDecodeError as error:
                raise Invalid(f"snapshot owner {n} is not UTF-8: {error}") from None
            offset += length
        if len(body) - offset != 4 * 8 * count:
            raise Invalid(f"snapshot body is {len(body) - offset} bytes, {count} deferrals need {32 * count}")
        columns: list[array[int]] = []
        for _ in range(4):
            column = array("q")
            column.frombytes(body[offset:offset + 8 * count])
            if sys.byteorder == "big":
                column.byteswap()
            columns.append(column)
            offset += 8 * count
        ids, due, expires, owner_index = columns
        _check_snapshot_rows(ids, due, expires, owner_index, next_id, owner_count)
        book = cls(max_open)
        book._next_id = next_id
        book._open = count
        book._rehash_rows(_capacity_for(count), ids, [names[n] for n in owner_index], due, expires)
        # Rows are in id order and sorted() is stable, so sorting rows by one key
        # orders them by (key, id).
        by_due = sorted(range(count), key=due.__getitem__)
        book._by_due = _SortedRuns.from_sorted(
            [array("q", map(column.__getitem__, by_due)) for column in (due, ids, expires)])
        by_expiry = [row for row in sorted(range(count), key=expires.__getitem__) if expires[row]]
        book._by_expiry = _SortedRuns.from_sorted(
            [array("q", map(column.__getitem__, by_expiry)) for column in (expires, ids)])
        return book

    # -- internals --

    def _allocate(self, capacity: int) -> None:
        """An empty table of `capacity` buckets (a power of two); id 0 marks an empty one."""
        self._ids: array[int] = array("q", bytes(8 * capacity))
        self._due: array[int] = array("q", bytes(8 * capacity))
        self._expires: array[int] = array("q", bytes(8 * capacity))
        self._owners: list[str | None] = [None] * capacity
        self._mask = capacity - 1
        self._reach = 0
        self._grow_at = capacity * 3 // 4

    def _put(self, id: int, owner: str, due_at: int, expires_at: int) -> None:
        """Store a deferral in the first free bucket from its home."""
        ids, mask = self._ids, self._mask
        b = id & mask
        if ids[b]:
            distance = 0
            while ids[b]:
                distance += 1
                b = (b + 1) & mask
            if distance > self._reach:
                self._reach = distance
        ids[b] = id
        self._owners[b] = owner
        self._due[b] = due_at
        self._expires[b] = expires_at

    def _probe(self, id: int) -> int:
        """The bucket holding `id` away from its home, or -1 when `id` is not open."""
        ids, mask = self._ids, self._mask
        for distance in range(1, self._reach + 1):
            b = (id + distance) & mask
            if ids[b] == id:
                return b
        return -1

    def _slot(self, id: int) -> int:
        """The bucket holding `id`, or NotFound: never allocated or already consumed (D-05)."""
        if type(id) is not int or id <= 0:
            raise _not_found(id)
        b = id & self._mask
        if self._ids[b] != id:
            b = self._probe(id)
            if b < 0:
                raise _not_found(id)
        return b

    def _slots_by_id(self) -> list[int]:
        ids = self._ids
        return sorted(compress(range(len(ids)), ids), key=ids.__getitem__)

    def _deferral_at(self, slot: int) -> Deferral:
        return _value(Deferral, (self._ids[slot], self._owners[slot], self._due[slot], self._expires[slot]))  # type: ignore[arg-type]

    def _compact(self) -> None:
        """Drop every stale index row and fit the table to the open count (D-06)."""
        if self._open:
            live = set(self._ids)
            self._by_due = self._by_due.keep(live.__contains__)
            self._by_expiry = self._by_expiry.keep(live.__contains__)
        else:
            self._by_due.clear()
            self._by_expiry.clear()
        self._stale = 0
        if len(self._ids) > _MIN_CAPACITY and 8 * self._open < len(self._ids):
            self._rehash(_capacity_for(self._open))

    def _rehash(self, capacity: int, placing: int = 0) -> None:
        live = list(compress(range(len(self._ids)), self._ids))
        self._rehash_rows(max(capacity, _capacity_for(self._open + placing)),
                          array("q", map(self._ids.__getitem__, live)),
                          [self._owners[slot] for slot in live],  # type: ignore[misc]
                          array("q", map(self._due.__getitem__, live)),
                          array("q", map(self._expires.__getitem__, live)))

    def _rehash_rows(self, capacity: int, ids: array[int], owners: list[str],
                     due: array[int], expires: array[int]) -> None:
        """A fresh table of `capacity` buckets holding these rows."""
        self._allocate(capacity)
        mask = self._mask
        homes = list(map(mask.__and__, ids))
        if len(set(homes)) == len(homes):
            # Every deferral in its home bucket (the usual case: ids are consecutive-ish
            # and fewer than the buckets): scatter each column in C.
            for column, values in ((self._ids, ids), (self._owners, owners),
                                   (self._due, due), (self._expires, expires)):
                deque(map(column.__setitem__, homes, values), maxlen=0)
            return
        table, table_owners, table_due, table_expires = self._ids, self._owners, self._due, self._expires
        reach = 0
        for id, owner, due_at, expires_at in zip(ids, owners, due, expires):
            b = id & mask
            if table[b]:
                distance = 0
                while table[b]:
                    distance += 1
                    b = (b + 1) & mask
                if distance > reach:
                    reach = distance
            table[b] = id
            table_owners[b] = owner
            table_due[b] = due_at
            table_expires[b] = expires_at
        self._reach = reach


def _capacity_for(count: int) -> int:
    """The smallest power-of-two table that holds `count` deferrals under 3/4 full."""
    capacity = _MIN_CAPACITY
    while capacity * 3 // 4 <= count:
        capacity *= 2
    return capacity


def _check_snapshot_rows(ids: array[int], due: array[int], expires: array[int],
                         owner_index: array[int], next_id: int, owner_count: int) -> None:
    """The invariants every live Book keeps (D-04, D-11, D-20), demanded of a snapshot,
    and its one canonical form: owners listed in order of first use, none unused."""
    previous = 0
    seen = 0
    for row, (id, due_at, expires_at, owner) in enumerate(zip(ids, due, expires, owner_index)):
        if not previous < id < next_id:
            raise Invalid(f"snapshot row {row}: id {id} is not increasing and below next_id {next_id}")
        if due_at < 0:
            raise Invalid(f"snapshot row {row}: due_at {due_at} is negative")
        if expires_at != 0 and expires_at <= due_at:
            raise Invalid(f"snapshot row {row}: expires_at {expires_at} is neither 0 "
                          f"nor after due_at {due_at}")
        if not 0 <= owner < owner_count:
            raise Invalid(f"snapshot row {row}: owner index {owner} is out of range")
        if owner > seen:
            raise Invalid(f"snapshot row {row}: owner index {owner} comes before owner {seen}")
        seen += owner == seen
        previous = id
    if seen != owner_count:
        raise Invalid(f"snapshot lists {owner_count} owners but its rows use {seen}")

"""duebook, production: a Book of deferrals that authorizes each action at most once.

Same behaviour and error precedence as the reference model (spec/duebook.md,
docs/operations.md); built for size and speed instead of obviousness:

- Deferral values are frozen objects of four slots, the smallest immutable value with
  named fields CPython makes (64 bytes). Being values (D-16), the Book stores them as
  they are and hands the stored one out: a read builds nothing.
- Ids are handed out one after another, so the open deferrals live in a list indexed by
  id - base over the window [base, next_id): a lookup is one subtraction and one list
  read. When consumed deferrals leave the window less than half full, the window moves
  up to the oldest deferral that keeps it half full and the few older ones go to a dict
  (D-06: storage follows the open deferrals).
- Two ordered indexes answer the keeper queries: by (due_at, id) for claimable and by
  (expires_at, id) for expirable. Each is a list of short sorted lists of the same
  Deferral values (the idea of a B-tree's leaves). Claim, Cancel and Expire leave the
  consumed row behind: a query drops the stale rows it walks over, and both indexes are
  rebuilt once stale rows could outnumber the open ones, so consuming costs O(1)
  amortized. While an index holds no stale row, a query takes its answer as a slice.
- Owners are interned: a Book with many deferrals per owner stores each name once.

Per operation: O(1) lookups by id; schedule O(log n) plus a memmove of one run;
claimable/expirable O(log n + k) for k results, plus O(1) per run of already-expired
deferrals that claimable steps over, plus each stale row once. `duespec bench --only
duebook` sets each operation against the model at 10, 1,000 and 1,000,000 open.
"""

from __future__ import annotations

import struct
import sys
import zlib
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import FrozenInstanceError
from itertools import chain, compress
from operator import attrgetter

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

#: Longest run in an ordered index before it splits in two: long enough that the list of
#: runs stays short, short enough that inserting into a run is a small memmove.
_RUN_MAX = 1024
#: Stale index rows tolerated beyond the open count before the indexes are rebuilt, and
#: the empty slots tolerated in the id window beyond twice the open count.
_COMPACT_FLOOR = 64


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


class _Fields:
    """A Deferral's four slots, still writable: schedule fills one in, then freezes it by
    making it a Deferral (one __class__ store costs less than four descriptor calls)."""

    __slots__ = ("id", "owner", "due_at", "expires_at")

    def __init__(self, id: int, owner: str, due_at: int, expires_at: int) -> None:
        self.id = id
        self.owner = owner
        self.due_at = due_at
        self.expires_at = expires_at


class Deferral(_Fields):
    """A value, never a handle into the Book (D-16): immutable, and equal only to another
    Deferral with the same fields, as a frozen dataclass would be. Four slots and no
    __dict__: the smallest object CPython makes with named fields (64 bytes, a tuple
    subclass takes 80)."""

    __slots__ = ()
    id: int
    owner: str
    due_at: int
    #: 0 means the deferral never expires (D-11).
    expires_at: int

    def __new__(cls, id: int, owner: str, due_at: int, expires_at: int) -> Deferral:
        fields = _Fields(id, owner, due_at, expires_at)
        fields.__class__ = Deferral  # frozen from here on
        return fields  # type: ignore[return-value]

    def __init__(self, id: int, owner: str, due_at: int, expires_at: int) -> None:
        """The fields were set before the value was frozen (__new__)."""

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def _fields(self) -> tuple[int, str, int, int]:
        return (self.id, self.owner, self.due_at, self.expires_at)

    def __iter__(self) -> Iterator[int | str]:
        return iter(self._fields())

    def __eq__(self, other: object) -> bool:
        return type(other) is Deferral and self._fields() == other._fields()  # type: ignore[attr-defined]

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self._fields())

    def __reduce__(self) -> tuple[type[Deferral], tuple[int, str, int, int]]:
        return Deferral, self._fields()

    def __repr__(self) -> str:
        return "Deferral(id={!r}, owner={!r}, due_at={!r}, expires_at={!r})".format(*self._fields())


#: What schedule builds a Deferral with, without a type call running _Fields.__init__.
_blank = object.__new__
_intern = sys.intern


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

#: Above every int64: the claimable end of a deferral that never expires.
_NEVER = INT64_MAX + 1
#: What `far` answers for an id it does not hold.
_NO_BOX: list[Deferral | None] = [None]
_ID = attrgetter("id")
_DUE = attrgetter("due_at")
_EXPIRY = attrgetter("expires_at")


class _SortedRuns:
    """Deferrals sorted by (key, id), stored as short sorted lists ("runs").

    Rows are only ever inserted with a larger id than any before, so a new row goes after
    every row with the same key. A consumed deferral's row stays until a query walks over
    it or the index is rebuilt; `dropped` counts the rows queries removed since then, so
    while it equals the Book's count of consumed deferrals since then, a query can
    take rows without asking the Book whether they are still open."""

    __slots__ = ("_runs", "_firsts", "_key", "dropped")

    def __init__(self, key: Callable[[Deferral], int]) -> None:
        self._runs: list[list[Deferral]] = []
        #: The key of each run's first row, for the binary search over runs.
        self._firsts: list[int] = []
        self._key = key
        self.dropped = 0

    def rebuild(self, rows: Iterable[Deferral]) -> None:
        """Replace every row with `rows`, already in (key, id) order, in full runs."""
        self._runs, self._firsts = [], []
        rows = list(rows)
        for start in range(0, len(rows), _RUN_MAX):
            self._add_run(len(self._runs), rows[start:start + _RUN_MAX])

    def _add_run(self, r: int, run: list[Deferral]) -> None:
        self._runs.insert(r, run)
        self._firsts.insert(r, self._key(run[0]))

    def add(self, rows: list[Deferral]) -> None:
        """Add rows in (key, id) order whose ids are larger than any before: one at a
        time when they are few, else by one merge of the whole index (a stable sort of
        two sorted runs, done in C)."""
        if 8 * len(rows) >= sum(map(len, self._runs)):
            self.rebuild(sorted(chain(self.rows(), rows), key=self._key))
        else:
            key = self._key
            for row in rows:
                self.insert(row, key(row))

    def insert(self, deferral: Deferral, key: int) -> int:
        """Add a row whose id is larger than any before; the index of its run."""
        runs = self._runs
        if runs:
            run = runs[-1]
            if len(run) < _RUN_MAX and key >= self._key(run[-1]):
                run.append(deferral)
                return len(runs) - 1
        return self._insert_inside(deferral, key)

    def _insert_inside(self, deferral: Deferral, key: int) -> int:
        runs = self._runs
        if not runs:
            self._add_run(0, [deferral])
            return 0
        last = len(runs) - 1
        r = last if key >= self._firsts[last] else max(bisect_right(self._firsts, key) - 1, 0)
        run = runs[r]
        if key >= self._key(run[-1]):
            if r == last:
                # The end of the index and its last run is full: start a run rather than
                # split, so a Book filled in key order keeps its runs full, and trim the
                # full one of the room a list keeps for growth (a copy has its exact size).
                runs[r] = run.copy()
                self._add_run(r + 1, [deferral])
                return r + 1
            run.append(deferral)
        else:
            at = bisect_right(run, key, key=self._key)
            run.insert(at, deferral)
            if at == 0:
                self._firsts[r] = key
        if len(run) > _RUN_MAX:
            half = len(run) // 2
            self._add_run(r + 1, run[half:])
            del run[half:]
            if key >= self._firsts[r + 1]:
                return r + 1
        return r

    def drop_rows(self, stale: list[tuple[int, list[int]]]) -> None:
        """Remove the given stale rows: (run index, positions in it), runs in increasing order."""
        for r, positions in reversed(stale):
            run = self._runs[r]
            for at in reversed(positions):
                del run[at]
            self.dropped += len(positions)
            if run:
                self._firsts[r] = self._key(run[0])
            else:
                self._remove_run(r)

    def _remove_run(self, r: int) -> None:
        del self._runs[r], self._firsts[r]

    def rows(self) -> Iterator[Deferral]:
        return chain.from_iterable(self._runs)


class _DueRuns(_SortedRuns):
    """The (due_at, id) index, with two bounds per run that let claimable take a run's
    rows without looking at each: a lower bound on the earliest non-zero expiry (no row
    has expired before it) and an upper bound on the latest end of a claim window
    (every row has expired from it on). Inserts keep them exact; removing rows leaves
    them loose but still bounds."""

    __slots__ = ("soonest", "latest")

    def __init__(self) -> None:
        super().__init__(_DUE)
        self.soonest: list[int] = []
        self.latest: list[int] = []

    def rebuild(self, rows: Iterable[Deferral]) -> None:
        self.soonest, self.latest = [], []
        super().rebuild(rows)

    def _add_run(self, r: int, run: list[Deferral]) -> None:
        super()._add_run(r, run)
        expiries = list(map(_EXPIRY, run))
        self.soonest.insert(r, min(filter(None, expiries), default=_NEVER))
        self.latest.insert(r, _NEVER if 0 in expiries else max(expiries))

    def _remove_run(self, r: int) -> None:
        super()._remove_run(r)
        del self.soonest[r], self.latest[r]

    def insert(self, deferral: Deferral, key: int) -> int:
        r = super().insert(deferral, key)
        expires_at = deferral.expires_at
        if not expires_at:
            self.latest[r] = _NEVER
        else:
            if expires_at < self.soonest[r]:
                self.soonest[r] = expires_at
            if expires_at > self.latest[r]:
                self.latest[r] = expires_at
        return r


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
        column.byteswap()
    return column.tobytes()


class Book:
    """An importing realm's book of deferrals. It reads no clock: every call that needs
    the time is given `now`, in whatever unit the realm uses consistently."""

    __slots__ = ("_max_open", "_next_id", "_open", "_settled", "_compact_below", "_compact_offset",
                 "_base", "_slots",
                 "_far", "_pending", "_by_due", "_by_expiry")

    def __init__(self, max_open: int) -> None:
        self._max_open = _int64("max_open", max_open, 1)
        self._next_id = 1
        self._open = 0
        #: next_id - open when the indexes were last rebuilt: deferrals consumed since
        #: then (the stale rows they may hold) are next_id - open - settled, so consuming
        #: only has to count down `open`.
        self._settled = 1
        #: slots[id - base] is the open deferral `id`, or None; it covers [base, next_id).
        self._base = 1
        self._slots: list[Deferral | None] = []
        #: Open deferrals below `base`, the few old ones left behind when the window
        #: moved, each in a one-item list: consuming stores None in it as in `slots`.
        self._far: dict[int, list[Deferral | None]] = {}
        #: Deferrals scheduled since the last query, not yet in the indexes: a query
        #: sorts them in one go (in C) instead of each schedule inserting one by one.
        self._pending: list[Deferral] = []
        self._by_due = _DueRuns()
        self._by_expiry = _SortedRuns(_EXPIRY)  # expiring deferrals only
        #: A consume that leaves fewer open than `_compact_below` compacts: stale rows
        #: (next_id - open - settled) would then outnumber the open ones by
        #: _COMPACT_FLOOR, i.e. 2 open < next_id - settled - _COMPACT_FLOOR. It is
        #: worked out when next_id or settled move, so a consume compares once:
        #: (next_id - 1 - offset) >> 1, with offset = settled + _COMPACT_FLOOR - 2 set
        #: when settled moves (_reset_stale).
        self._reset_stale()

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
        for deferral in self._by_id():
            yield deferral
            if (self._next_id, self._open) != version:
                raise RuntimeError("Book changed during open_deferrals()")

    # -- operations (docs/operations.md) --

    def schedule(self, owner: str, delay: int, ttl: int, now: int) -> Deferral:
        """D-03: open a deferral due at now + delay, expiring ttl after that (never if 0)."""
        if (type(owner) is not str or type(now) is not int or type(delay) is not int
                or type(ttl) is not int or not owner or now < 0 or delay < 0 or ttl < 0):
            _owner("owner", owner)
            _time("now", now)
            _time("delay", delay)
            _time("ttl", ttl)
        # Past int64 is caught by the sums, which check the summands first: the same
        # message as a check of each.
        # `| 0` gives each sum an int of its exact size: a sum of two-digit ints is
        # allocated with room for a carry it rarely needs (36 bytes, pymalloc's 48-byte
        # class, against 32), and a Book keeps two of them per deferral.
        due_at = (now + delay) | 0
        if due_at > INT64_MAX:
            _time("now", now)
            _time("delay", delay)
            raise Invalid(f"due_at = now + delay = {now} + {delay} overflows int64")
        expires_at = (due_at + ttl) | 0 if ttl else 0
        if expires_at > INT64_MAX:
            _time("ttl", ttl)
            # Wrapping would turn "expires" into 0, "never expires" (D-20).
            raise Invalid(f"expires_at = due_at + ttl = {due_at} + {ttl} overflows int64")
        if self._open >= self._max_open:
            raise Full(f"the book already holds max_open = {self._max_open} open deferrals")
        id = self._next_id
        if id == INT64_MAX:
            # The counter must stay an int64 (D-04, D-25); 2^63 - 2 schedules come first.
            raise Full(f"the book has allocated every id below {INT64_MAX}")
        # Filled in here and frozen by one __class__ store: cheaper than _Fields's
        # __init__, which a type call runs in a frame of its own.
        deferral = _blank(_Fields)
        deferral.id = id
        deferral.owner = _intern(owner)
        deferral.due_at = due_at
        deferral.expires_at = expires_at
        deferral.__class__ = Deferral
        # The window ends at next_id, so the new id is its next item. list.append grows
        # the list in place: a copy (slots + room) would touch every deferral in it.
        self._slots.append(deferral)
        self._pending.append(deferral)
        self._open += 1
        self._next_id = id + 1
        self._compact_below = (id - self._compact_offset) >> 1
        return deferral

    # claim, cancel and expire each inline the lookup and the consume: a helper call
    # would cost about as much as the rest of the operation. Each checks types first and
    # leaves a range check to the branch a value out of range must reach, so the error
    # precedence (D-21) holds with fewer comparisons on the way to success.

    def claim(self, id: int, now: int) -> Deferral:
        """D-08: the at-most-once authorization, on the half-open window [due_at, expires_at)."""
        if type(id) is not int or type(now) is not int:
            _int64("id", id)
            _time("now", now)
        i = id - self._base
        if i >= 0:
            slots = self._slots
        else:
            slots, i = self._far.get(id, _NO_BOX), 0
        try:
            deferral = slots[i]
        except IndexError:
            deferral = None
        if deferral is None:
            _int64("id", id)
            _time("now", now)
            raise NotFound(f"no open deferral with id {id}")
        due_at = deferral.due_at
        if now < due_at:
            _time("now", now)  # due_at >= 0, so a negative now ends here
            raise NotDue(f"deferral {id} is due at {due_at}, now is {now}")
        expires_at = deferral.expires_at
        if expires_at:
            if now >= expires_at:
                _time("now", now)  # and a now past int64 here, unless it never expires
                # Stays open: only expire or cancel may consume it now (D-10).
                raise Expired(f"deferral {id} expired at {expires_at}, now is {now}")
        elif now > INT64_MAX:
            _time("now", now)
        # Consume (D-02): gone for good; its index rows stay until a query walks over
        # them or the indexes are rebuilt (D-06).
        slots[i] = None
        open = self._open - 1
        self._open = open
        if open < self._compact_below:
            self._compact()
        return deferral

    def cancel(self, id: int, caller: str) -> Deferral:
        """D-12: the owner withdraws an open deferral, at any time."""
        if type(id) is not int or type(caller) is not str:
            _int64("id", id)
            _owner("caller", caller)
        i = id - self._base
        if i >= 0:
            slots = self._slots
        else:
            slots, i = self._far.get(id, _NO_BOX), 0
        try:
            deferral = slots[i]
        except IndexError:
            deferral = None
        if deferral is None:
            _int64("id", id)
            _owner("caller", caller)
            raise NotFound(f"no open deferral with id {id}")
        if deferral.owner != caller:
            _owner("caller", caller)  # owners are never empty, so an empty caller ends here
            raise NotOwner(f"deferral {id} belongs to {deferral.owner!r}, not {caller!r}")
        # Consume (D-02), as in claim.
        slots[i] = None
        open = self._open - 1
        self._open = open
        if open < self._compact_below:
            self._compact()
        return deferral

    def expire(self, id: int, now: int) -> Deferral:
        """D-13: anyone may clear a deferral whose window has closed."""
        if type(id) is not int or type(now) is not int:
            _int64("id", id)
            _time("now", now)
        i = id - self._base
        if i >= 0:
            slots = self._slots
        else:
            slots, i = self._far.get(id, _NO_BOX), 0
        try:
            deferral = slots[i]
        except IndexError:
            deferral = None
        if deferral is None:
            _int64("id", id)
            _time("now", now)
            raise NotFound(f"no open deferral with id {id}")
        expires_at = deferral.expires_at
        if now < expires_at or not expires_at or now > INT64_MAX:
            _time("now", now)  # a negative now is below every expiry
            if expires_at == 0:
                raise NotExpired(f"deferral {id} never expires (ttl 0)")
            raise NotExpired(f"deferral {id} expires at {expires_at}, now is {now}")
        # Consume (D-02), as in claim.
        slots[i] = None
        open = self._open - 1
        self._open = open
        if open < self._compact_below:
            self._compact()
        return deferral

    def get(self, id: int) -> Deferral:
        """D-14: one open deferral, read only. Deferrals are immutable values, so the
        stored one is handed out as it is."""
        if type(id) is int:
            i = id - self._base
            if i >= 0:
                try:
                    deferral = self._slots[i]
                except IndexError:
                    deferral = None
            else:
                deferral = self._far.get(id, _NO_BOX)[0]
            if deferral is not None:
                return deferral
        raise _not_found(id)

    def claimable(self, now: int, limit: int) -> list[Deferral]:
        """D-23: up to `limit` deferrals a claim at `now` would accept, by (due_at, id).

        Within a run whose bounds say no row due by `now` has expired, the rows are
        taken as one slice; a run whose every row has expired is skipped whole."""
        if not (type(now) is int and type(limit) is int and 0 <= now <= INT64_MAX
                and 0 <= limit <= INT64_MAX):
            _time("now", now)
            _time("limit", limit)
        found: list[Deferral] = []
        if limit == 0:
            return found
        if self._pending:
            self._flush()
        index = self._by_due
        checked = self._next_id - self._open - self._settled > index.dropped
        stale: list[tuple[int, list[int]]] = []
        for r, run in enumerate(index._runs):
            end = bisect_right(run, now, key=_DUE)
            if end == 0:
                break
            if index.latest[r] <= now:
                if end == len(run):
                    continue
                break
            if not checked and index.soonest[r] > now:
                found += run[:min(end, limit - len(found))]
            else:
                gone: list[int] = []
                for at in range(end):
                    deferral = run[at]
                    expires_at = deferral.expires_at
                    if expires_at and now >= expires_at:
                        continue
                    if checked and not self._is_open(deferral):
                        gone.append(at)
                        continue
                    found.append(deferral)
                    if len(found) == limit:
                        break
                if gone:
                    stale.append((r, gone))
            if len(found) == limit or end < len(run):
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
        if self._pending:
            self._flush()
        index = self._by_expiry
        checked = self._next_id - self._open - self._settled > index.dropped
        stale: list[tuple[int, list[int]]] = []
        for r, run in enumerate(index._runs):
            end = bisect_right(run, now, key=_EXPIRY)
            if end == 0:
                break
            if not checked:
                found += run[:min(end, limit - len(found))]
            else:
                gone: list[int] = []
                for at in range(end):
                    deferral = run[at]
                    if not self._is_open(deferral):
                        gone.append(at)
                        continue
                    found.append(deferral)
                    if len(found) == limit:
                        break
                if gone:
                    stale.append((r, gone))
            if len(found) == limit or end < len(run):
                break
        if stale:
            index.drop_rows(stale)
        return found

    # -- persistence (D-25) --

    def snapshot(self) -> bytes:
        """The whole Book as versioned, checksummed little-endian bytes; `restore` gives it back.

        Rows go in id order and owners in order of first use, so a Book has one snapshot."""
        rows = list(self._by_id())
        owners = list(map(attrgetter("owner"), rows))
        names = list(dict.fromkeys(owners))
        number = {name: n for n, name in enumerate(names)}
        parts = [_HEADER.pack(_SNAPSHOT_MAGIC, _SNAPSHOT_VERSION, self._max_open,
                              self._next_id, self._open, len(names))]
        for name in names:
            encoded = name.encode("utf-8", "surrogatepass")  # any str is an owner, lone surrogates too
            parts.append(_OWNER_LENGTH.pack(len(encoded)))
            parts.append(encoded)
        for field in (_ID, _DUE, _EXPIRY):
            parts.append(_little_endian(array("q", map(field, rows))))
        parts.append(_little_endian(array("q", map(number.__getitem__, owners))))
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
        rows = list(map(Deferral, ids, map(names.__getitem__, owner_index), due, expires))
        book._place(rows)
        book._index(rows)
        return book

    # -- internals --

    def _is_open(self, deferral: Deferral) -> bool:
        """Whether this very deferral is still open, not a consumed one with its id."""
        i = deferral.id - self._base
        return (self._slots[i] if i >= 0 else self._far.get(deferral.id, _NO_BOX)[0]) is deferral

    def _by_id(self) -> list[Deferral]:
        far = self._far
        return [far[id][0] for id in sorted(far) if far[id][0]] + list(filter(None, self._slots))

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        self._by_due.add(sorted(pending, key=_DUE))
        self._by_expiry.add(sorted(filter(_EXPIRY, pending), key=_EXPIRY))

    def _compact(self) -> None:
        """Drop every stale index row and fit the id window to the open count (D-06)."""
        rows = self._by_id()
        self._place(rows)
        if not rows:
            self._pending = []
            self._by_due.rebuild(())
            self._by_expiry.rebuild(())
        else:
            self._flush()
            live = set(map(id, rows))
            for index in (self._by_due, self._by_expiry):
                index.rebuild(list(compress(index.rows(), map(live.__contains__, map(id, index.rows())))))
        self._reset_stale()

    def _index(self, rows: list[Deferral]) -> None:
        """Both indexes over `rows`, given in id order: a stable sort by key orders them by (key, id)."""
        self._pending = []
        self._by_due.rebuild(sorted(rows, key=_DUE))
        self._by_expiry.rebuild(sorted(filter(_EXPIRY, rows), key=_EXPIRY))
        self._reset_stale()

    def _reset_stale(self) -> None:
        self._settled = self._next_id - self._open
        self._compact_offset = self._settled + _COMPACT_FLOOR - 2
        self._compact_below = (self._next_id - 1 - self._compact_offset) >> 1
        self._by_due.dropped = self._by_expiry.dropped = 0

    def _place(self, rows: list[Deferral]) -> None:
        """Lay out the open deferrals `rows` (in id order): the window [base, next_id)
        starts at the oldest row that keeps it at least half full (give or take
        _COMPACT_FLOOR); older rows go to `far`."""
        end = self._next_id
        count = len(rows)
        cut = 0
        while cut < count and end - rows[cut].id > 2 * (count - cut) + _COMPACT_FLOOR:
            cut += 1
        self._far = {row.id: [row] for row in rows[:cut]}
        self._base = rows[cut].id if cut < count else end
        slots: list[Deferral | None] = [None] * (end - self._base)
        base = self._base
        for row in rows[cut:]:
            slots[row.id - base] = row
        self._slots = slots


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

"""The production Book (duespec.impl.duebook) against spec/duebook.md, requirement by
requirement, plus what only it has: error classes and messages, run splitting and
compaction inside its storage, and snapshot/restore (D-25).

Agreement with the model on random operation sequences is the lockstep machine's job
(tests/test_duebook_machine.py); these tests pin each rule down by example."""

from __future__ import annotations

import dataclasses
import pickle
import random
import struct
import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duespec.impl import duebook as d
from duespec.impl.duebook import INT64_MAX, Book, Deferral

GARBAGE_INTS = [True, False, 1.0, "1", None, [1], 2**63, -(2**63) - 1]
GARBAGE_TIMES = GARBAGE_INTS + [-1, -(2**63)]
GARBAGE_OWNERS = ["", None, 7, b"alice"]


def state(book: Book) -> tuple[int, int, int, list[Deferral]]:
    return book.max_open, book.next_id, len(book), list(book.open_deferrals())


def fails(code: str, call: Any, *args: Any) -> d.DuebookError:
    with pytest.raises(d.DuebookError) as raised:
        call(*args)
    assert raised.value.code == code, str(raised.value)
    return raised.value


# --- errors ------------------------------------------------------------------------------------


def test_error_classes_carry_the_stable_codes() -> None:
    classes = (d.Invalid, d.NotFound, d.NotDue, d.Expired, d.NotExpired, d.NotOwner, d.Full)
    codes = {cls: cls.code for cls in classes}
    assert codes == {d.Invalid: "invalid", d.NotFound: "not_found", d.NotDue: "not_due",
                     d.Expired: "expired", d.NotExpired: "not_expired", d.NotOwner: "not_owner",
                     d.Full: "full"}
    assert all(issubclass(cls, d.DuebookError) for cls in codes)


def test_messages_name_the_problem() -> None:
    book = Book(1)
    assert str(fails("invalid", book.schedule, "alice", -1, 0, 0)) == "delay must be an int64 >= 0, got -1"
    assert "owner" in str(fails("invalid", book.schedule, "", 0, 0, 0))
    assert "bool" in str(fails("invalid", book.claim, True, 0))
    assert "overflows" in str(fails("invalid", book.schedule, "a", 0, 1, INT64_MAX))
    book.schedule("alice", 10, 5, 100)
    assert "due at 110" in str(fails("not_due", book.claim, 1, 109))
    assert "'alice'" in str(fails("not_owner", book.cancel, 1, "bob"))
    assert "max_open = 1" in str(fails("full", book.schedule, "a", 0, 0, 0))


# --- D-01 -------------------------------------------------------------------------------------


def test_a_new_book_is_empty_and_allocates_one_first() -> None:
    book = Book(3)
    assert (book.max_open, book.next_id, len(book), list(book.open_deferrals())) == (3, 1, 0, [])
    assert book.schedule("alice", 0, 0, 0).id == 1


@pytest.mark.parametrize("max_open", [0, -1, *GARBAGE_INTS])
def test_a_cap_below_one_or_not_an_int64_is_invalid(max_open: Any) -> None:
    fails("invalid", Book, max_open)


# --- D-03, D-04, D-05, D-11 --------------------------------------------------------------------


def test_schedule_computes_the_window() -> None:
    book = Book(5)
    assert book.schedule("alice", 10, 5, 100) == Deferral(1, "alice", 110, 115)
    assert book.schedule("bob", 0, 0, 7) == Deferral(2, "bob", 7, 0)
    assert book.next_id == 3


def test_ids_are_never_reused_after_any_consumer() -> None:
    book = Book(5)
    claimed, cancelled, expired = (book.schedule("alice", 10, 5, 100) for _ in range(3))
    book.claim(claimed.id, 110)
    book.cancel(cancelled.id, "alice")
    book.expire(expired.id, 115)
    for id in (claimed.id, cancelled.id, expired.id):
        fails("not_found", book.claim, id, 110)
        fails("not_found", book.cancel, id, "alice")
        fails("not_found", book.expire, id, INT64_MAX)
        fails("not_found", book.get, id)
    assert book.schedule("alice", 0, 0, 0).id == 4


@pytest.mark.parametrize("id", [0, -1, -(2**63), 99, INT64_MAX])
def test_ids_never_allocated_are_not_found(id: int) -> None:
    book = Book(2)
    book.schedule("alice", 0, 0, 0)
    fails("not_found", book.get, id)
    fails("not_found", book.claim, id, 5)


# --- D-07 -------------------------------------------------------------------------------------


def test_full_at_the_cap_and_free_again_after_a_consumer() -> None:
    book = Book(2)
    first = book.schedule("alice", 0, 0, 0)
    book.schedule("alice", 0, 0, 0)
    before = book.snapshot()
    fails("full", book.schedule, "alice", 0, 0, 0)
    assert book.snapshot() == before
    book.cancel(first.id, "alice")
    assert book.schedule("alice", 0, 0, 0).id == 3


# --- D-08..D-13 -------------------------------------------------------------------------------


def test_claim_window_edges() -> None:
    book = Book(5)
    d1 = book.schedule("alice", 10, 5, 100)  # [110, 115)
    fails("not_due", book.claim, d1.id, 109)
    fails("expired", book.claim, d1.id, 115)
    assert book.get(d1.id) == d1, "an expired claim leaves the deferral open"
    assert book.claim(d1.id, 110) == d1
    fails("not_found", book.claim, d1.id, 110)
    d2 = book.schedule("alice", 10, 5, 100)
    assert book.claim(d2.id, 114) == d2


def test_ttl_zero_never_expires() -> None:
    book = Book(1)
    d1 = book.schedule("alice", 5, 0, 0)
    assert d1.expires_at == 0
    fails("not_expired", book.expire, d1.id, INT64_MAX)
    fails("not_due", book.claim, d1.id, 4)
    assert book.claim(d1.id, INT64_MAX) == d1


def test_cancel_owner_only_any_time_and_expire_anyone_after_expiry() -> None:
    book = Book(3)
    d1 = book.schedule("alice", 0, 1, 0)
    fails("expired", book.claim, d1.id, 50)
    fails("not_owner", book.cancel, d1.id, "mallory")
    assert book.cancel(d1.id, "alice") == d1
    d2 = book.schedule("alice", 10, 5, 100)
    fails("not_expired", book.expire, d2.id, 114)
    assert book.expire(d2.id, 115) == d2


# --- D-15, D-19, D-20, D-17 inputs and failures -----------------------------------------------


@pytest.mark.parametrize("owner", GARBAGE_OWNERS)
def test_owner_and_caller_must_be_non_empty_strings(owner: Any) -> None:
    book = Book(2)
    d1 = book.schedule("alice", 0, 0, 0)
    fails("invalid", book.schedule, owner, 0, 0, 0)
    fails("invalid", book.cancel, d1.id, owner)


@pytest.mark.parametrize("bad", GARBAGE_TIMES)
def test_times_and_limits_must_be_non_negative_int64s(bad: Any) -> None:
    book = Book(2)
    d1 = book.schedule("alice", 0, 5, 0)
    before = book.snapshot()
    fails("invalid", book.schedule, "alice", bad, 0, 0)
    fails("invalid", book.schedule, "alice", 0, bad, 0)
    fails("invalid", book.schedule, "alice", 0, 0, bad)
    fails("invalid", book.claim, d1.id, bad)
    fails("invalid", book.expire, d1.id, bad)
    fails("invalid", book.claimable, bad, 1)
    fails("invalid", book.claimable, 0, bad)
    fails("invalid", book.expirable, bad, 1)
    fails("invalid", book.expirable, 0, bad)
    assert book.snapshot() == before


@pytest.mark.parametrize("bad", GARBAGE_INTS)
def test_ids_must_be_int64s(bad: Any) -> None:
    book = Book(1)
    book.schedule("alice", 0, 0, 0)
    fails("invalid", book.claim, bad, 0)
    fails("invalid", book.cancel, bad, "alice")
    fails("invalid", book.expire, bad, 0)
    fails("invalid", book.get, bad)


def test_int64_max_is_reachable_and_overflow_is_rejected() -> None:
    book = Book(5)
    assert book.schedule("a", 0, 0, INT64_MAX) == Deferral(1, "a", INT64_MAX, 0)
    assert book.schedule("a", 5, 5, INT64_MAX - 10) == Deferral(2, "a", INT64_MAX - 5, INT64_MAX)
    before = book.snapshot()
    fails("invalid", book.schedule, "a", 1, 0, INT64_MAX)
    fails("invalid", book.schedule, "a", 0, 1, INT64_MAX)
    fails("invalid", book.schedule, "a", 5, 6, INT64_MAX - 10)
    assert book.snapshot() == before
    assert book.expire(2, INT64_MAX).expires_at == INT64_MAX


def test_error_precedence() -> None:
    book = Book(1)
    d1 = book.schedule("alice", 10, 5, 100)
    fails("invalid", book.schedule, "", 0, 0, 0)  # before full
    fails("invalid", book.claim, 99, -1)  # before not_found
    fails("invalid", book.cancel, 99, "")
    fails("not_found", book.cancel, 99, "mallory")  # before not_owner
    fails("not_found", book.expire, 99, 0)  # before not_expired
    fails("not_found", book.claim, 99, 0)  # before not_due
    fails("not_due", book.claim, d1.id, 0)


@pytest.mark.parametrize("now", [-1, -(2**63), INT64_MAX + 1, 2**64])
def test_a_now_out_of_range_is_invalid_in_every_state_of_the_deferral(now: int) -> None:
    """claim and expire check the range of `now` only on the branch an out-of-range value
    must reach; every branch, success included, must still answer invalid."""
    book = Book(8)
    never = book.schedule("alice", 0, 0, 0)  # claimable forever from 0
    window = book.schedule("alice", 10, 5, 100)  # [110, 115)
    for id in (never.id, window.id, 99, 0, -5, 2**63):
        before = book.snapshot()
        fails("invalid", book.claim, id, now)
        fails("invalid", book.expire, id, now)
        assert book.snapshot() == before
    fails("invalid", book.claimable, now, 5)
    fails("invalid", book.expirable, now, 5)


def test_an_empty_caller_is_invalid_whoever_owns_the_deferral() -> None:
    book = Book(2)
    deferral = book.schedule("alice", 0, 0, 0)
    for id in (deferral.id, 99, -1):
        fails("invalid", book.cancel, id, "")
    assert book.get(deferral.id) == deferral


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["schedule", "claim", "cancel", "expire", "get"]),
                          st.integers(-1, 8), st.integers(0, 30), st.sampled_from(["alice", "bob"])),
                max_size=40))
def test_every_failure_leaves_the_book_unchanged(calls: list[tuple[str, int, int, str]]) -> None:
    """D-17: the snapshot is the whole state, counter included."""
    book = Book(3)
    for op, id, now, who in calls:
        before = book.snapshot()
        try:
            if op == "schedule":
                book.schedule(who, id % 4, id % 3 * 4, now)
            elif op == "cancel":
                book.cancel(id, who)
            elif op == "get":
                book.get(id)
            else:
                getattr(book, op)(id, now)
        except d.DuebookError:
            assert book.snapshot() == before


# --- D-16 values ------------------------------------------------------------------------------


def test_returned_deferrals_are_values() -> None:
    book = Book(3)
    d1 = book.schedule("alice", 10, 5, 100)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d1.due_at = 0  # type: ignore[misc]
    # The Book hands out the value it stores: no way back to a writable object either.
    for name in ("id", "owner", "expires_at", "__class__"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(d1, name, object)
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(d1, name)
    assert book.get(d1.id) == Deferral(1, "alice", 110, 115) and type(book.get(d1.id)) is Deferral
    assert pickle.loads(pickle.dumps(d1)) == d1 and hash(d1) == hash(Deferral(1, "alice", 110, 115))
    listed = book.claimable(110, 10)
    listed.clear()
    assert book.claimable(110, 10) == [d1]
    book.claim(d1.id, 110)
    assert d1 == Deferral(1, "alice", 110, 115)
    assert not hasattr(d1, "__dict__"), "slotted: no per-value dict to smuggle state through"


def test_deferrals_are_equal_exactly_when_every_field_is() -> None:
    """As a frozen dataclass would be: no JSON answer compares two Deferrals, so only this
    shows the Python API's equality."""
    one = Deferral(1, "alice", 110, 115)
    assert one == Deferral(1, "alice", 110, 115) and not one != Deferral(1, "alice", 110, 115)
    for other in (Deferral(2, "alice", 110, 115), Deferral(1, "bob", 110, 115),
                  Deferral(1, "alice", 111, 115), Deferral(1, "alice", 110, 0)):
        assert one != other and not one == other and other != one
    assert one != (1, "alice", 110, 115) and tuple(one) == (1, "alice", 110, 115)
    assert len({one, Deferral(1, "alice", 110, 115), Deferral(2, "alice", 110, 115)}) == 2


# --- D-23, D-24 queries -----------------------------------------------------------------------


def test_claimable_and_expirable_order_and_limit() -> None:
    book = Book(10)
    a = book.schedule("a", 5, 0, 0)  # due 5, never expires
    c = book.schedule("a", 3, 2, 0)  # [3, 5)
    e = book.schedule("a", 5, 1, 0)  # [5, 6)
    assert book.claimable(2, 10) == []
    assert book.claimable(4, 10) == [c]
    assert book.claimable(5, 10) == [a, e]
    assert book.claimable(5, 1) == [a]
    assert book.claimable(5, 0) == []
    assert book.expirable(4, 10) == []
    assert book.expirable(5, 10) == [c]
    assert book.expirable(INT64_MAX, 10) == [c, e]
    assert book.expirable(INT64_MAX, 1) == [c]


def reference_claimable(deferrals: list[Deferral], now: int) -> list[Deferral]:
    window = [x for x in deferrals if x.due_at <= now and (x.expires_at == 0 or now < x.expires_at)]
    return sorted(window, key=lambda x: (x.due_at, x.id))


def reference_expirable(deferrals: list[Deferral], now: int) -> list[Deferral]:
    late = [x for x in deferrals if x.expires_at != 0 and x.expires_at <= now]
    return sorted(late, key=lambda x: (x.expires_at, x.id))


def churned_book(seed: int, count: int) -> Book:
    """Many deferrals scheduled out of due order, a third of them consumed: enough to
    split index runs and compact the id columns."""
    rng = random.Random(seed)
    book = Book(count)
    for _ in range(count):
        book.schedule(rng.choice("abc"), rng.randrange(500), rng.choice((0, 1, 20, 300)), rng.randrange(100))
    for id in rng.sample(range(1, count + 1), count // 3):
        owner = book.get(id).owner
        book.cancel(id, owner)
    return book


def test_queries_stay_correct_across_split_runs_and_compaction() -> None:
    book = churned_book(1, 3 * d._RUN_MAX)
    deferrals = list(book.open_deferrals())
    assert [x.id for x in deferrals] == sorted(x.id for x in deferrals)
    for now in (0, 50, 99, 250, 400, 700, INT64_MAX):
        assert book.claimable(now, 10**6) == reference_claimable(deferrals, now)
        assert book.claimable(now, 7) == reference_claimable(deferrals, now)[:7]
        assert book.expirable(now, 10**6) == reference_expirable(deferrals, now)
        assert book.expirable(now, 3) == reference_expirable(deferrals, now)[:3]


def test_queries_stay_correct_as_the_book_changes_between_them() -> None:
    """The claimable index remembers each run's latest expiry; every change must forget it."""
    rng = random.Random(3)
    book = churned_book(4, 2 * d._RUN_MAX)
    for _ in range(100):
        now = rng.randrange(700)
        deferrals = list(book.open_deferrals())
        assert book.claimable(now, 10**6) == reference_claimable(deferrals, now)
        assert book.expirable(now, 10**6) == reference_expirable(deferrals, now)
        victim = rng.choice(deferrals)
        book.cancel(victim.id, victim.owner)
        book.schedule("d", rng.randrange(600), rng.choice((0, 1, 50)), rng.randrange(100))


def test_storage_stays_bounded_by_the_open_count_under_churn() -> None:
    """D-06: consumed deferrals leave nothing behind beyond the next compaction."""
    book = Book(4)
    for n in range(5_000):
        deferral = book.schedule("alice", 0, 3, n)
        book.claim(deferral.id, n)
    assert len(book) == 0 and book.next_id == 5_001
    assert len(book._slots) + len(book._far) <= 2 * d._COMPACT_FLOOR + 2
    assert book._by_due._runs == [] and book._by_expiry._runs == []


def test_one_old_deferral_does_not_hold_the_id_window_open() -> None:
    """The oldest deferral stays open while thousands after it come and go: the id window
    moves past it (it goes to the far dict) instead of growing with every id allocated."""
    book = Book(10)
    old = book.schedule("keeper", 0, 0, 0)
    for n in range(20_000):
        deferral = book.schedule("alice", 0, 3, n)
        book.claim(deferral.id, n)
    assert len(book._slots) <= 2 * d._COMPACT_FLOOR + 2
    assert book._far == {old.id: [old]}
    assert book.get(old.id) == old
    assert book.claimable(5, 10) == [old]
    assert book.cancel(old.id, "keeper") == old
    assert list(book.open_deferrals()) == []
    with pytest.raises(d.NotFound):
        book.claim(old.id, 5)  # consumed in the far dict: its box now holds None


# --- D-25 snapshot / restore ------------------------------------------------------------------


def test_snapshot_keeps_owners_that_are_not_valid_utf8() -> None:
    book = Book(2)
    book.schedule("\ud800", 0, 0, 0)
    assert Book.restore(book.snapshot()).get(1).owner == "\ud800"


def test_snapshot_round_trip_keeps_everything() -> None:
    book = churned_book(2, 2_500)
    restored = Book.restore(book.snapshot())
    assert state(restored) == state(book)
    for now in (0, 120, 600):
        assert restored.claimable(now, 50) == book.claimable(now, 50)
        assert restored.expirable(now, 50) == book.expirable(now, 50)
    assert restored.schedule("z", 0, 0, 0).id == book.next_id, "the counter survives: no id reissued"
    assert restored.snapshot() != book.snapshot()


#: Any non-empty str, lone surrogates included: Python lets a caller pass them.
ANY_OWNER = st.text(st.characters(exclude_categories=()), min_size=1, max_size=5)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.lists(st.tuples(ANY_OWNER, st.integers(0, INT64_MAX // 2),
                                             st.integers(0, 2**40), st.booleans()), max_size=8))
def test_snapshot_round_trip_property(max_open: int, rows: list[tuple[str, int, int, bool]]) -> None:
    book = Book(max_open)
    for owner, delay, ttl, consume in rows:
        try:
            deferral = book.schedule(owner, delay, ttl, 0)
        except d.Full:
            continue
        if consume:
            book.cancel(deferral.id, owner)
    restored = Book.restore(book.snapshot())
    assert state(restored) == state(book)
    assert restored.snapshot() == book.snapshot()


def valid_snapshot() -> bytes:
    book = Book(4)
    book.schedule("alice", 10, 5, 100)
    book.schedule("bob", 0, 0, 3)
    book.cancel(1, "alice")
    book.schedule("alice", 1, 1, 1)
    return book.snapshot()


def test_every_truncation_and_any_trailing_byte_is_invalid() -> None:
    data = valid_snapshot()
    for end in range(len(data)):
        fails("invalid", Book.restore, data[:end])
    fails("invalid", Book.restore, data + b"\x00")


def sealed(body: bytes) -> bytes:
    """A snapshot body with the CRC-32 trailer restore demands, as if written that way."""
    return body + struct.pack("<I", zlib.crc32(body))


def with_header(**fields: int) -> bytes:
    data = valid_snapshot()
    names = ("magic", "version", "max_open", "next_id", "count", "owners")
    header = dict(zip(names, d._HEADER.unpack_from(data)))
    header.update(fields)
    return sealed(d._HEADER.pack(*header.values()) + data[d._HEADER.size:-4])


@pytest.mark.parametrize("data, problem", [
    (b"garbage", "truncated"),
    ("not bytes", "bytes"),
    (b"X" * 8 + valid_snapshot()[8:], "magic"),
    (valid_snapshot()[:-1] + bytes([valid_snapshot()[-1] ^ 1]), "damaged"),
    (with_header(version=1), "version 1"),
    (with_header(max_open=0), "max_open"),
    (with_header(max_open=1), "outside"),
    (with_header(next_id=0), "next_id"),
    (with_header(next_id=-(2**63)), "next_id"),
    (with_header(next_id=3), "below next_id"),
    (with_header(owners=3), "owners"),
])
def test_corrupt_snapshots_are_invalid_and_say_why(data: Any, problem: str) -> None:
    assert problem in str(fails("invalid", Book.restore, data))


def rows_snapshot(ids: list[int], due: list[int], expires: list[int], owners: list[int],
                  names: tuple[bytes, ...] = (b"alice",)) -> bytes:
    header = d._HEADER.pack(d._SNAPSHOT_MAGIC, d._SNAPSHOT_VERSION, 10, 100, len(ids), len(names))
    body = b"".join(struct.pack("<I", len(n)) + n for n in names)
    for column in (ids, due, expires, owners):
        body += struct.pack(f"<{len(column)}q", *column)
    return sealed(header + body)


@pytest.mark.parametrize("ids, due, expires, owners, problem", [
    ([5, 5], [0, 0], [0, 0], [0, 0], "increasing"),
    ([0], [0], [0], [0], "increasing"),
    ([1], [-4], [0], [0], "negative"),
    ([1], [10], [10], [0], "neither 0 nor after"),
    ([1], [10], [9], [0], "neither 0 nor after"),
    ([1], [10], [0], [1], "owner index"),
    ([1], [10], [0], [-1], "owner index"),
])
def test_snapshots_breaking_a_book_invariant_are_invalid(
    ids: list[int], due: list[int], expires: list[int], owners: list[int], problem: str
) -> None:
    assert Book.restore(rows_snapshot([1], [10], [0], [0])).get(1) == Deferral(1, "alice", 10, 0)
    assert problem in str(fails("invalid", Book.restore, rows_snapshot(ids, due, expires, owners)))


def test_owners_must_be_listed_once_each_in_order_of_first_use() -> None:
    """One Book, one snapshot: a listed owner no row uses, or owners out of order, is refused."""
    two = (b"alice", b"bob")
    assert [x.owner for x in Book.restore(rows_snapshot([1, 2], [0, 0], [0, 0], [0, 1], two))
            .open_deferrals()] == ["alice", "bob"]
    assert "before owner 0" in str(fails("invalid", Book.restore,
                                         rows_snapshot([1, 2], [0, 0], [0, 0], [1, 0], two)))
    assert "use 1" in str(fails("invalid", Book.restore,
                                rows_snapshot([1, 2], [0, 0], [0, 0], [0, 0], two)))


def test_a_counter_at_int64_max_restores_into_a_book_that_keeps_working() -> None:
    """The counter's last value: the Book refuses a schedule (every id is spent) instead of
    handing out an id past int64 and failing later in its own snapshot."""
    header = dict(zip(("magic", "version", "max_open", "next_id", "count", "owners"),
                      d._HEADER.unpack_from(valid_snapshot())))
    book = Book.restore(with_header(next_id=INT64_MAX))
    assert book.next_id == INT64_MAX and len(book) == header["count"]
    assert "every id" in str(fails("full", book.schedule, "alice", 0, 0, 0))
    assert Book.restore(book.snapshot()).next_id == INT64_MAX
    last = Book.restore(with_header(next_id=INT64_MAX - 1))
    assert last.schedule("alice", 0, 0, 0).id == INT64_MAX - 1
    assert Book.restore(last.snapshot()).next_id == INT64_MAX


def test_bad_owner_bytes_are_invalid() -> None:
    body = valid_snapshot()[:-4]
    at = body.index(b"alice")
    assert "UTF-8" in str(fails("invalid", Book.restore,
                                sealed(body[:at] + b"\xff\xfe\xfd\xfc\xfb" + body[at + 5:])))
    length_at = at - 4
    assert "bad length" in str(fails("invalid", Book.restore,
                                     sealed(body[:length_at] + struct.pack("<I", 0) + body[at:])))


@settings(max_examples=80, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_never_restore_into_a_broken_book(data: bytes) -> None:
    try:
        book = Book.restore(data)
    except d.Invalid:
        return
    assert len(book) <= book.max_open


def test_every_damaged_snapshot_is_refused() -> None:
    """Every single-bit flip of a 40-deferral snapshot and every truncation of it (over
    12,000 damaged copies) is refused as invalid: none restores into some other Book."""
    rng = random.Random(5)
    book = Book(64)
    for n in range(40):
        book.schedule(rng.choice(("alice", "bob", "carol")), rng.randrange(100), rng.choice((0, 7)), n)
    data = book.snapshot()
    damaged = 0
    for bit in range(8 * len(data)):
        flipped = bytearray(data)
        flipped[bit // 8] ^= 1 << bit % 8
        fails("invalid", Book.restore, bytes(flipped))
        damaged += 1
    for end in range(len(data)):
        fails("invalid", Book.restore, data[:end])
        damaged += 1
    assert damaged >= 10_000
    assert Book.restore(data).snapshot() == data


def test_iterating_open_deferrals_refuses_a_changing_book() -> None:
    book = Book(3)
    for _ in range(3):
        book.schedule("alice", 0, 0, 0)
    with pytest.raises(RuntimeError):
        for deferral in book.open_deferrals():
            book.cancel(deferral.id, "alice")
    assert [x.id for x in book.open_deferrals()] == [2, 3]

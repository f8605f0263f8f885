"""The duebook reference model against spec/duebook.md, requirement by requirement, and
the invariant predicates of spec/duebook_invariants.py against hand-made violations."""

from __future__ import annotations

import copy
import dataclasses
import pathlib
import re
from typing import Any, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duespec.coverage import collecting
from duespec.model import duebook as m
from duespec.model.duebook import INT64_MAX, Book, Deferral
from duespec.spec import duebook_invariants as inv

GARBAGE_INTS = [True, False, 1.0, "1", None, [1], 2**63, -(2**63) - 1]
GARBAGE_TIMES = GARBAGE_INTS + [-1, -(2**63)]
GARBAGE_OWNERS = ["", None, 7, b"alice", ["alice"]]


def book(max_open: int = 10) -> Book:
    created, code = m.new_book(max_open)
    assert code is None and created is not None
    return created


def scheduled(b: Book, owner: str = "alice", delay: int = 10, ttl: int = 5, now: int = 100) -> Deferral:
    deferral, code = m.schedule(b, owner, delay, ttl, now)
    assert code is None and deferral is not None
    return deferral


def frozen(b: Book) -> dict[str, Any]:
    return m.observe(b)


# --- D-01 NewBook ---------------------------------------------------------------------------


def test_new_book_is_empty_and_allocates_one_first() -> None:
    b = book(3)
    assert m.observe(b) == {"max_open": 3, "next_id": 1, "open": []}
    assert scheduled(b).id == 1


@pytest.mark.parametrize("max_open", [0, -1, *GARBAGE_INTS])
def test_new_book_rejects_a_cap_below_one_or_not_an_int64(max_open: Any) -> None:
    assert m.new_book(max_open) == (None, m.INVALID)


# --- D-03, D-04, D-11 Schedule and the counter -------------------------------------------


def test_schedule_computes_the_window_from_now_delay_ttl() -> None:
    b = book()
    assert m.schedule(b, "alice", 10, 5, 100) == (Deferral(1, "alice", 110, 115), None)
    assert m.schedule(b, "bob", 0, 0, 7) == (Deferral(2, "bob", 7, 0), None)
    assert m.observe(b)["next_id"] == 3


def test_ids_are_never_reused_after_any_consumer() -> None:
    b = book()
    claimed, cancelled, expired = scheduled(b, ttl=5), scheduled(b), scheduled(b, ttl=1)
    assert m.claim(b, claimed.id, 110) == (claimed, None)
    assert m.cancel(b, cancelled.id, "alice") == (cancelled, None)
    assert m.expire(b, expired.id, 111) == (expired, None)
    for id in (claimed.id, cancelled.id, expired.id):
        assert m.claim(b, id, 110) == (None, m.NOT_FOUND)
        assert m.cancel(b, id, "alice") == (None, m.NOT_FOUND)
        assert m.expire(b, id, INT64_MAX) == (None, m.NOT_FOUND)
        assert m.get(b, id) == (None, m.NOT_FOUND)
    assert scheduled(b).id == 4


@pytest.mark.parametrize("id", [0, -1, -(2**63), 99, INT64_MAX])
def test_ids_never_allocated_are_not_found(id: int) -> None:
    b = book()
    scheduled(b)
    assert m.get(b, id) == (None, m.NOT_FOUND)
    assert m.claim(b, id, 200) == (None, m.NOT_FOUND)


# --- D-07 Cap ---------------------------------------------------------------------------------


def test_schedule_is_full_at_the_cap_and_free_again_after_a_consumer() -> None:
    b = book(2)
    first = scheduled(b)
    scheduled(b)
    before = frozen(b)
    assert m.schedule(b, "alice", 0, 0, 0) == (None, m.FULL)
    assert frozen(b) == before
    m.cancel(b, first.id, "alice")
    assert scheduled(b).id == 3


# --- D-08..D-11 the window --------------------------------------------------------------------


def test_claim_window_edges() -> None:
    b = book()
    d = scheduled(b, delay=10, ttl=5, now=100)  # [110, 115)
    assert m.claim(b, d.id, 109) == (None, m.NOT_DUE)
    assert m.claim(b, d.id, 115) == (None, m.EXPIRED)
    assert m.claim(b, d.id, 2**40) == (None, m.EXPIRED)
    assert m.get(b, d.id) == (d, None), "an expired claim leaves the deferral open"
    assert m.claim(b, d.id, 110) == (d, None)
    late = scheduled(b, delay=10, ttl=5, now=100)
    assert m.claim(b, late.id, 114) == (late, None)


def test_claim_consumes_before_returning_so_a_second_claim_fails() -> None:
    b = book()
    d = scheduled(b, delay=0, ttl=0)
    assert m.claim(b, d.id, 100) == (d, None)
    assert m.claim(b, d.id, 100) == (None, m.NOT_FOUND)


def test_ttl_zero_never_expires() -> None:
    b = book()
    d = scheduled(b, delay=5, ttl=0, now=0)
    assert d.expires_at == 0
    assert m.expire(b, d.id, INT64_MAX) == (None, m.NOT_EXPIRED)
    assert m.claim(b, d.id, 4) == (None, m.NOT_DUE)
    assert m.claim(b, d.id, INT64_MAX) == (d, None)


def test_expired_deferral_is_consumed_by_expire_or_cancel_only() -> None:
    b = book()
    d = scheduled(b, delay=0, ttl=1, now=0)
    assert m.claim(b, d.id, 1) == (None, m.EXPIRED)
    assert m.cancel(b, d.id, "alice") == (d, None)


# --- D-12 Cancel, D-13 Expire, D-14 Get -------------------------------------------------------


def test_cancel_is_for_the_owner_only_at_any_time() -> None:
    b = book()
    d = scheduled(b)
    assert m.cancel(b, d.id, "mallory") == (None, m.NOT_OWNER)
    assert m.get(b, d.id) == (d, None)
    assert m.cancel(b, d.id, "alice") == (d, None)


def test_expire_edges_and_anyone_may_expire() -> None:
    b = book()
    d = scheduled(b, delay=10, ttl=5, now=100)  # expires at 115
    assert m.expire(b, d.id, 114) == (None, m.NOT_EXPIRED)
    assert m.expire(b, d.id, 115) == (d, None)


def test_get_reads_without_changing() -> None:
    b = book()
    d = scheduled(b)
    before = frozen(b)
    assert m.get(b, d.id) == (d, None)
    assert frozen(b) == before


# --- D-15, D-19, D-20 inputs ------------------------------------------------------------------


@pytest.mark.parametrize("owner", GARBAGE_OWNERS)
def test_owner_and_caller_must_be_non_empty_strings(owner: Any) -> None:
    b = book()
    d = scheduled(b)
    assert m.schedule(b, owner, 0, 0, 0) == (None, m.INVALID)
    assert m.cancel(b, d.id, owner) == (None, m.INVALID)


@pytest.mark.parametrize("bad", GARBAGE_TIMES)
def test_times_must_be_non_negative_int64s(bad: Any) -> None:
    b = book()
    d = scheduled(b)
    before = frozen(b)
    assert m.schedule(b, "alice", bad, 0, 0) == (None, m.INVALID)
    assert m.schedule(b, "alice", 0, bad, 0) == (None, m.INVALID)
    assert m.schedule(b, "alice", 0, 0, bad) == (None, m.INVALID)
    assert m.claim(b, d.id, bad) == (None, m.INVALID)
    assert m.expire(b, d.id, bad) == (None, m.INVALID)
    assert m.claimable(b, bad, 1) == (None, m.INVALID)
    assert m.claimable(b, 0, bad) == (None, m.INVALID)
    assert m.expirable(b, bad, 1) == (None, m.INVALID)
    assert m.expirable(b, 0, bad) == (None, m.INVALID)
    assert frozen(b) == before


@pytest.mark.parametrize("bad", GARBAGE_INTS)
def test_ids_must_be_int64s(bad: Any) -> None:
    b = book()
    scheduled(b)
    for result in (m.claim(b, bad, 200), m.cancel(b, bad, "alice"), m.expire(b, bad, 200), m.get(b, bad)):
        assert result == (None, m.INVALID)


def test_int64_max_is_reachable_and_overflow_is_rejected() -> None:
    b = book()
    assert m.schedule(b, "a", 0, 0, INT64_MAX) == (Deferral(1, "a", INT64_MAX, 0), None)
    assert m.schedule(b, "a", 5, 5, INT64_MAX - 10) == (Deferral(2, "a", INT64_MAX - 5, INT64_MAX), None)
    before = frozen(b)
    assert m.schedule(b, "a", 1, 0, INT64_MAX) == (None, m.INVALID), "due_at overflow"
    assert m.schedule(b, "a", 0, 1, INT64_MAX) == (None, m.INVALID), "expires_at would wrap"
    assert m.schedule(b, "a", 5, 6, INT64_MAX - 10) == (None, m.INVALID)
    assert m.schedule(b, "a", INT64_MAX, INT64_MAX, INT64_MAX) == (None, m.INVALID)
    assert frozen(b) == before


# --- D-16 values, D-18 Must* -----------------------------------------------------------------


def test_returned_deferrals_are_values() -> None:
    b = book()
    d = scheduled(b)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.due_at = 0  # type: ignore[misc]
    m.claim(b, d.id, 110)
    assert d == Deferral(1, "alice", 110, 115), "a held value outlives its consumption unchanged"


def test_must_wrappers_return_the_value_or_panic_with_the_code() -> None:
    b = book(1)
    d = m.must_schedule(b, "alice", 10, 5, 100)
    assert m.must_get(b, d.id) == d
    with pytest.raises(m.Panic) as full:
        m.must_schedule(b, "bob", 0, 0, 0)
    assert full.value.code == m.FULL
    with pytest.raises(m.Panic) as not_due:
        m.must_claim(b, d.id, 109)
    assert not_due.value.code == m.NOT_DUE
    with pytest.raises(m.Panic) as not_owner:
        m.must_cancel(b, d.id, "bob")
    assert not_owner.value.code == m.NOT_OWNER
    with pytest.raises(m.Panic) as not_expired:
        m.must_expire(b, d.id, 114)
    assert not_expired.value.code == m.NOT_EXPIRED
    assert m.must_expire(b, d.id, 115) == d
    with pytest.raises(m.Panic) as gone:
        m.must_claim(b, d.id, 110)
    assert gone.value.code == m.NOT_FOUND
    e = m.must_schedule(b, "alice", 0, 0, 0)
    assert m.must_claim(b, e.id, 0) == e
    f = m.must_schedule(b, "alice", 0, 0, 0)
    assert m.must_cancel(b, f.id, "alice") == f


# --- D-21 precedence -------------------------------------------------------------------------


def test_error_precedence() -> None:
    b = book(1)
    d = scheduled(b, delay=10, ttl=5, now=100)
    assert m.schedule(b, "", 0, 0, 0) == (None, m.INVALID), "invalid before full"
    assert m.claim(b, 99, -1) == (None, m.INVALID), "invalid before not_found"
    assert m.cancel(b, 99, "") == (None, m.INVALID)
    assert m.expire(b, 99, True) == (None, m.INVALID)
    assert m.cancel(b, 99, "mallory") == (None, m.NOT_FOUND), "not_found before not_owner"
    assert m.expire(b, 99, 0) == (None, m.NOT_FOUND), "not_found before not_expired"
    assert m.claim(b, 99, 0) == (None, m.NOT_FOUND), "not_found before not_due"
    assert m.claim(b, d.id, 0) == (None, m.NOT_DUE)


# --- D-23, D-24 queries ----------------------------------------------------------------------


def test_claimable_lists_the_open_window_by_due_then_id_up_to_limit() -> None:
    b = book()
    a = scheduled(b, delay=5, ttl=0, now=0)  # due 5, never expires
    c = scheduled(b, delay=3, ttl=2, now=0)  # [3, 5)
    e = scheduled(b, delay=5, ttl=1, now=0)  # [5, 6)
    scheduled(b, delay=9, ttl=0, now=0)  # due 9
    assert m.claimable(b, 2, 10) == ([], None)
    assert m.claimable(b, 4, 10) == ([c], None)
    assert m.claimable(b, 5, 10) == ([a, e], None), "c expired at 5; ties by id"
    assert m.claimable(b, 5, 1) == ([a], None)
    assert m.claimable(b, 5, 0) == ([], None)
    assert m.claimable(b, 6, 10) == ([a], None)


def test_expirable_lists_the_late_by_expiry_then_id_up_to_limit() -> None:
    b = book()
    scheduled(b, delay=0, ttl=0, now=0)
    late = scheduled(b, delay=0, ttl=8, now=0)  # expires 8
    early = scheduled(b, delay=2, ttl=3, now=0)  # expires 5
    tie = scheduled(b, delay=4, ttl=1, now=0)  # expires 5
    assert m.expirable(b, 4, 10) == ([], None)
    assert m.expirable(b, 5, 10) == ([early, tie], None)
    assert m.expirable(b, INT64_MAX, 10) == ([early, tie, late], None)
    assert m.expirable(b, INT64_MAX, 2) == ([early, tie], None)


# --- D-26 observable state -------------------------------------------------------------------


def test_observe_lists_open_deferrals_by_id() -> None:
    b = book(5)
    scheduled(b, owner="a", delay=9)
    scheduled(b, owner="b", delay=1)
    m.cancel(b, 1, "a")
    scheduled(b, owner="c", delay=0, ttl=0)
    assert m.observe(b) == {
        "max_open": 5,
        "next_id": 4,
        "open": [
            {"id": 2, "owner": "b", "due_at": 101, "expires_at": 106},
            {"id": 3, "owner": "c", "due_at": 100, "expires_at": 0},
        ],
    }


# --- D-17, D-22 properties over random operation sequences ----------------------------------

times = st.integers(0, 40) | st.sampled_from([INT64_MAX, INT64_MAX - 1, -1])
ids = st.integers(-1, 12)
owners = st.sampled_from(["alice", "bob", ""])
operations = st.one_of(
    st.tuples(st.just("schedule"), st.fixed_dictionaries({"owner": owners, "delay": times, "ttl": times})),
    st.tuples(st.just("claim"), st.fixed_dictionaries({"id": ids})),
    st.tuples(st.just("cancel"), st.fixed_dictionaries({"id": ids, "caller": owners})),
    st.tuples(st.just("expire"), st.fixed_dictionaries({"id": ids})),
    st.tuples(st.just("get"), st.fixed_dictionaries({"id": ids})),
    st.tuples(st.just("claimable"), st.fixed_dictionaries({"limit": st.integers(-1, 5)})),
    st.tuples(st.just("expirable"), st.fixed_dictionaries({"limit": st.integers(-1, 5)})),
)


def apply(b: Book, op: str, args: dict[str, Any], now: int) -> dict[str, Any]:
    """One step in the JSON shape of docs/operations.md."""
    calls: dict[str, Callable[[], tuple[Any, str | None]]] = {
        "schedule": lambda: m.schedule(b, args["owner"], args["delay"], args["ttl"], now),
        "claim": lambda: m.claim(b, args["id"], now),
        "cancel": lambda: m.cancel(b, args["id"], args["caller"]),
        "expire": lambda: m.expire(b, args["id"], now),
        "get": lambda: m.get(b, args["id"]),
        "claimable": lambda: m.claimable(b, now, args["limit"]),
        "expirable": lambda: m.expirable(b, now, args["limit"]),
    }
    value, code = calls[op]()
    if code is not None:
        return {"error": code}
    if isinstance(value, list):
        return {"ok": [m.deferral_json(d) for d in value]}
    return {"ok": m.deferral_json(value)}


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4), st.lists(st.tuples(operations, times), max_size=30))
def test_every_invariant_holds_on_random_runs(max_open: int, steps: list[Any]) -> None:
    b = book(max_open)
    for (op, args), now in steps:
        before = m.observe(b)
        result = apply(b, op, args, now)
        after = m.observe(b)
        step = {"op": op, "args": args, "now": now, "result": result}
        for state_invariant in inv.STATE_INVARIANTS:
            assert state_invariant(after), state_invariant.__name__
        for transition_invariant in inv.TRANSITION_INVARIANTS:
            assert transition_invariant(before, step, after), (transition_invariant.__name__, step)


# --- the invariants themselves must be able to fail ------------------------------------------

D1 = {"id": 1, "owner": "alice", "due_at": 10, "expires_at": 15}
D2 = {"id": 2, "owner": "bob", "due_at": 3, "expires_at": 0}
S = {"max_open": 2, "next_id": 3, "open": [D1, D2]}


def with_open(*deferrals: dict[str, Any], next_id: int = 3, max_open: int = 2) -> dict[str, Any]:
    return {"max_open": max_open, "next_id": next_id, "open": list(deferrals)}


@pytest.mark.parametrize("predicate, bad_state", [
    (inv.open_count_within_cap, with_open(D1, D2, max_open=1)),
    (inv.cap_is_positive, with_open(max_open=0)),
    (inv.ids_below_counter, with_open(D1, D2, next_id=2)),
    (inv.open_listed_by_id, with_open(D2, D1)),
    (inv.owners_non_empty, with_open({**D1, "owner": ""})),
    (inv.times_within_int64, with_open({**D1, "expires_at": 2**63})),
    (inv.expiry_after_due, with_open({**D1, "expires_at": 10})),
])
def test_each_state_invariant_rejects_its_violation(predicate: Callable[[Any], bool], bad_state: Any) -> None:
    assert predicate(S)
    assert not predicate(bad_state)


def step(op: str, args: dict[str, Any], result: dict[str, Any], now: int = 12) -> dict[str, Any]:
    return {"op": op, "args": args, "now": now, "result": result}


NEW = {"id": 3, "owner": "carol", "due_at": 12, "expires_at": 0}
SCHEDULE_OK = step("schedule", {"owner": "carol", "delay": 0, "ttl": 0}, {"ok": NEW})
WITH_NEW = {"max_open": 3, "next_id": 4, "open": [D1, D2, NEW]}
BEFORE3 = {**S, "max_open": 3}


@pytest.mark.parametrize("predicate, before, bad_step, after", [
    (inv.failure_changes_nothing, S, step("claim", {"id": 9}, {"error": "not_found"}),
     with_open(D1, D2, next_id=4)),
    (inv.read_only_ops_change_nothing, S, step("get", {"id": 1}, {"ok": D1}), with_open(D2)),
    (inv.counter_monotonic, S, step("claim", {"id": 1}, {"ok": D1}), with_open(D2, next_id=2)),
    (inv.counter_advances_only_on_schedule, S, step("claim", {"id": 1}, {"ok": D1}),
     with_open(D2, next_id=4)),
    (inv.consumed_id_never_returns, with_open(D2), step("get", {"id": 2}, {"ok": D2}),
     with_open(D1, D2)),
    (inv.absent_id_is_not_found, with_open(D2), step("claim", {"id": 1}, {"error": "not_due"}),
     with_open(D2)),
    (inv.success_consumes_only_its_id, S, step("claim", {"id": 1}, {"ok": D1}), with_open()),
    (inv.schedule_adds_only_the_new_deferral, BEFORE3, SCHEDULE_OK, {**WITH_NEW, "open": [D1, NEW]}),
    (inv.schedule_computes_window, BEFORE3, {**SCHEDULE_OK, "now": 11}, WITH_NEW),
    (inv.schedule_full_only_at_cap, BEFORE3,
     step("schedule", {"owner": "c", "delay": 0, "ttl": 0}, {"error": "full"}), BEFORE3),
    (inv.claim_obeys_window, S, step("claim", {"id": 1}, {"ok": D1}, now=15), with_open(D2)),
    (inv.cancel_obeys_ownership, S, step("cancel", {"id": 1, "caller": "bob"}, {"ok": D1}), with_open(D2)),
    (inv.expire_obeys_expiry, S, step("expire", {"id": 2}, {"ok": D2}, now=99), with_open(D1)),
    (inv.claimable_lists_the_window, S, step("claimable", {"limit": 5}, {"ok": [D1, D2]}, now=15), S),
    (inv.expirable_lists_the_late, S, step("expirable", {"limit": 5}, {"ok": []}, now=15), S),
])
def test_each_transition_invariant_rejects_its_violation(
    predicate: Callable[..., bool], before: Any, bad_step: Any, after: Any
) -> None:
    assert not predicate(before, bad_step, after)


def test_transition_invariants_are_all_exercised_above() -> None:
    """The parametrization above names every exported predicate, so none is untested."""
    source = pathlib.Path(__file__).read_text()
    for predicate in inv.STATE_INVARIANTS + inv.TRANSITION_INVARIANTS:
        assert f"inv.{predicate.__name__}," in source, predicate.__name__


# --- D-27: the JSON face ---------------------------------------------------------------------


@pytest.mark.parametrize("op, args, problem", [
    ("reschedule", {"id": 1}, "no op 'reschedule'"),
    (None, {}, "no op None"),
    ("claim", None, "args must be an object"),
    ("get", [1], "args must be an object"),
    ("cancel", {"id": 1}, "missing: caller; unexpected: none"),
    ("claim", {"id": 1, "now": 3}, "missing: none; unexpected: now"),
])
def test_a_request_the_api_cannot_express_is_invalid_and_changes_nothing(op: Any, args: Any, problem: str) -> None:
    b = book(2)
    scheduled(b, delay=0, now=0)
    before = frozen(b)
    response = m.step(b, op, args, 0)
    assert response["error"] == m.INVALID and problem in response["message"]
    assert frozen(b) == before


@pytest.mark.parametrize("now", [-1, 2**63, 1.5, 5.0, "5", None, True, [5]])
def test_get_and_cancel_do_not_read_now_and_answer_as_usual_at_an_invalid_one(now: Any) -> None:
    b = book(2)
    scheduled(b, delay=0, now=0)
    deferral = m.step(b, "get", {"id": 1}, 0)["ok"]
    assert m.step(b, "get", {"id": 1}, now) == {"ok": deferral}
    assert m.step(b, "claim", {"id": 1}, now) == {"error": m.INVALID}
    assert m.step(b, "cancel", {"id": 1, "caller": deferral["owner"]}, now) == {"ok": deferral}
    assert m.step(b, "get", {"id": 1}, now) == {"error": m.NOT_FOUND}


def test_a_well_formed_request_reaches_its_operation() -> None:
    b = book(2)
    assert m.step(b, "schedule", {"owner": "a", "delay": 0, "ttl": 0}, 7) == {
        "ok": {"id": 1, "owner": "a", "due_at": 7, "expires_at": 0}}
    assert m.step(b, "claimable", {"limit": 1}, 7) == {"ok": [{"id": 1, "owner": "a", "due_at": 7, "expires_at": 0}]}
    assert m.step(b, "get", {"id": 2}, 7) == {"error": m.NOT_FOUND}


# --- coverage tags ---------------------------------------------------------------------------


def test_every_listed_tag_is_reachable_and_every_branch_is_listed() -> None:
    with collecting() as reached:
        for max_open in (0, 1):
            m.new_book(max_open)
        for example in (
            test_claim_window_edges,
            test_ttl_zero_never_expires,
            test_expire_edges_and_anyone_may_expire,
            test_cancel_is_for_the_owner_only_at_any_time,
            test_schedule_is_full_at_the_cap_and_free_again_after_a_consumer,
            test_int64_max_is_reachable_and_overflow_is_rejected,
            test_error_precedence,
            test_ids_are_never_reused_after_any_consumer,
            test_must_wrappers_return_the_value_or_panic_with_the_code,
            test_claimable_lists_the_open_window_by_due_then_id_up_to_limit,
            test_expirable_lists_the_late_by_expiry_then_id_up_to_limit,
            test_get_reads_without_changing,
        ):
            example()
        test_owner_and_caller_must_be_non_empty_strings("")
        test_times_must_be_non_negative_int64s(-1)
        test_ids_must_be_int64s(True)
        for op, args in (("x", {}), ("get", None), ("get", {})):
            test_a_request_the_api_cannot_express_is_invalid_and_changes_nothing(op, args, "")
        test_get_and_cancel_do_not_read_now_and_answer_as_usual_at_an_invalid_one(-1)
    assert set(reached) == m.OPERATION_TAGS | m.WRAPPER_TAGS
    model_dir = pathlib.Path(m.__file__).parent
    in_source = {tag for path in model_dir.glob("*.py")
                 for tag in re.findall(r'reached\("([^"]+)"\)', path.read_text())}
    assert in_source == m.OPERATION_TAGS | m.WRAPPER_TAGS


def test_every_tag_names_a_catalogue_requirement() -> None:
    catalogue = (pathlib.Path(inv.__file__).parent / "duebook.md").read_text()
    for tag in m.OPERATION_TAGS | m.WRAPPER_TAGS:
        assert f"**{tag.split('.')[0]} " in catalogue, tag
        assert f"`{tag}`" in catalogue, f"{tag} is not named in spec/duebook.md"


def test_a_failed_step_leaves_a_deep_copy_equal() -> None:
    """D-17 on the Book object itself, not only its JSON view."""
    b = book(1)
    scheduled(b)
    snapshot = copy.deepcopy(b)
    for result in (m.schedule(b, "x", 0, 0, 0), m.claim(b, 1, 0), m.cancel(b, 1, "x"), m.expire(b, 1, 0)):
        assert result[1] is not None
    assert b == snapshot

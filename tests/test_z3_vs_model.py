"""The Z3 transition relation and the reference model agree, step by step.

Hypothesis draws a small concrete Book and one call; the model runs it; then, with the
pre-state and the call pinned, Z3 must find the model's successor and reply admissible
(sat) and every other observable outcome impossible (unsat). The proofs in
spec/duebook_z3.py are about this relation, so this is what keeps them about the model."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from z3 import And, BoolVal, IntSort, IntVal, K, Not, Solver, Store, StringVal, sat, unsat

from duespec.model import duebook as model
from duespec.spec import duebook_z3 as z3book

MAX = z3book.INT64_MAX
OPS = ("schedule", "claim", "cancel", "expire", "get", "claimable", "expirable")
#: The arguments each op reads, with the JSON type it expects.
READS: dict[str, dict[str, type]] = {
    "schedule": {"owner": str, "delay": int, "ttl": int, "now": int},
    "claim": {"id": int, "now": int},
    "cancel": {"id": int, "caller": str},
    "expire": {"id": int, "now": int},
    "get": {"id": int},
    "claimable": {"now": int, "limit": int},
    "expirable": {"now": int, "limit": int},
}
CODES = {"ok": z3book.OK, model.INVALID: z3book.INVALID, model.NOT_FOUND: z3book.NOT_FOUND,
         model.NOT_DUE: z3book.NOT_DUE, model.EXPIRED: z3book.EXPIRED,
         model.NOT_EXPIRED: z3book.NOT_EXPIRED, model.NOT_OWNER: z3book.NOT_OWNER,
         model.FULL: z3book.FULL}


def mostly(usual: st.SearchStrategy[Any], edges: list[Any]) -> st.SearchStrategy[Any]:
    """The usual values nine times in ten, so most calls get past validation."""
    return st.integers(0, 9).flatmap(lambda n: st.sampled_from(edges) if n == 0 else usual)


times = mostly(st.integers(0, 10), [MAX - 1, MAX, -1, MAX + 1])
ids = mostly(st.integers(-1, 7), [z3book.INT64_MIN, MAX, MAX + 1])
owners = mostly(st.sampled_from(["a", "b"]), [""])
garbage = st.sampled_from([True, 1.5, "1", None])


@st.composite
def deferrals(draw: st.DrawFn, id: int) -> model.Deferral:
    due_at = draw(st.one_of(st.integers(0, 10), st.sampled_from([MAX - 2, MAX])))
    ttl = draw(st.sampled_from([0, 1, 2, 5]))
    expires_at = due_at + ttl if ttl and due_at + ttl <= MAX else 0
    return model.Deferral(id=id, owner=draw(st.sampled_from(["a", "b"])), due_at=due_at, expires_at=expires_at)


@st.composite
def books(draw: st.DrawFn) -> model.Book:
    """Any Book the invariant admits, not only those a short run reaches."""
    max_open = draw(st.integers(1, 3))
    next_id = draw(mostly(st.integers(2, 6), [1]))
    open_ids = draw(st.lists(st.integers(1, next_id - 1), unique=True, min_size=1,
                             max_size=max_open)) if next_id > 1 else []
    return model.Book(max_open=max_open, next_id=next_id,
                      open={id: draw(deferrals(id)) for id in sorted(open_ids)})


@st.composite
def calls(draw: st.DrawFn, book: model.Book) -> tuple[str, dict[str, Any]]:
    op = draw(st.sampled_from(OPS))
    id = draw(st.sampled_from(sorted(book.open))) if book.open and draw(st.booleans()) else draw(ids)
    args: dict[str, Any] = {"owner": draw(owners), "caller": draw(owners), "id": id,
                            "delay": draw(times), "ttl": draw(times), "now": draw(times),
                            "limit": draw(st.integers(-1, 3))}
    if draw(st.integers(0, 9)) == 0:
        args[draw(st.sampled_from(sorted(READS[op])))] = draw(garbage)
    return op, args


def run_model(book: model.Book, op: str, args: dict[str, Any]) -> tuple[Any, str | None]:
    a = args
    return {
        "schedule": lambda: model.schedule(book, a["owner"], a["delay"], a["ttl"], a["now"]),
        "claim": lambda: model.claim(book, a["id"], a["now"]),
        "cancel": lambda: model.cancel(book, a["id"], a["caller"]),
        "expire": lambda: model.expire(book, a["id"], a["now"]),
        "get": lambda: model.get(book, a["id"]),
        "claimable": lambda: model.claimable(book, a["now"], a["limit"]),
        "expirable": lambda: model.expirable(book, a["now"], a["limit"]),
    }[op]()


def typed(op: str, args: dict[str, Any]) -> bool:
    return all(type(args[name]) is kind for name, kind in READS[op].items())


def _int(value: Any) -> int:
    """A wrongly typed argument is pinned to 0: with typed = False its value is irrelevant."""
    return value if type(value) is int else 0


def _str(value: Any) -> str:
    return value if type(value) is str else ""


def open_array(book: model.Book) -> Any:
    array = K(IntSort(), BoolVal(False))
    for id in book.open:
        array = Store(array, id, True)
    return array


def pin_book(symbolic: z3book.Book, book: model.Book) -> Any:
    owner, due_at, expires_at = K(IntSort(), StringVal("")), K(IntSort(), IntVal(0)), K(IntSort(), IntVal(0))
    for d in book.open.values():
        owner, due_at = Store(owner, d.id, StringVal(d.owner)), Store(due_at, d.id, d.due_at)
        expires_at = Store(expires_at, d.id, d.expires_at)
    return And(symbolic.next_id == book.next_id, symbolic.max_open == book.max_open,
               symbolic.open == open_array(book), symbolic.owner == owner, symbolic.due_at == due_at,
               symbolic.expires_at == expires_at, symbolic.open_count == len(book.open),
               symbolic.consumed == K(IntSort(), BoolVal(False)))


def pin_call(call: z3book.Call, op: str, args: dict[str, Any]) -> Any:
    return And(call.op == z3book.OPS_BY_NAME[op], call.typed == typed(op, args),
               call.now == _int(args["now"]), call.id == _int(args["id"]),
               call.delay == _int(args["delay"]), call.ttl == _int(args["ttl"]),
               call.limit == _int(args["limit"]), call.owner == StringVal(_str(args["owner"])),
               call.caller == StringVal(_str(args["caller"])))


def observed_as(post: z3book.Book, reply: z3book.Reply, book: model.Book, value: Any, code: str | None) -> Any:
    """Everything observable agrees with the model: the Book as docs/operations.md shows it
    (open deferrals, counter, cap, count) and the reply (code, and the deferral returned)."""
    facts = [post.next_id == book.next_id, post.max_open == book.max_open,
             post.open == open_array(book), post.open_count == len(book.open),
             reply.code == CODES[code or "ok"]]
    for d in book.open.values():
        facts += [post.owner[d.id] == StringVal(d.owner), post.due_at[d.id] == d.due_at,
                  post.expires_at[d.id] == d.expires_at]
    if isinstance(value, model.Deferral):
        facts += [reply.id == value.id, reply.owner == StringVal(value.owner),
                  reply.due_at == value.due_at, reply.expires_at == value.expires_at]
    return And(*facts)


def assert_agree(book: model.Book, op: str, args: dict[str, Any]) -> None:
    after = copy.deepcopy(book)
    value, code = run_model(after, op, args)
    pre, call = z3book.Book.fresh("pre"), z3book.Call.fresh("call")
    post, reply = z3book.Book.fresh("post"), z3book.Reply.fresh("reply")
    solver = Solver()
    solver.add(pin_book(pre, book), pin_call(call, op, args), z3book.transition(pre, call, post, reply))
    agreed = observed_as(post, reply, after, value, code)
    solver.push()
    solver.add(agreed)
    assert solver.check() == sat, f"Z3 forbids the model's outcome {code or 'ok'} of {op} {args} on {book}"
    solver.pop()
    solver.add(Not(agreed))
    answer = solver.check()
    assert answer == unsat, (f"Z3 admits an outcome other than the model's {code or 'ok'} for {op} {args} "
                             f"on {book}:\n{solver.model() if answer == sat else answer}")


def _book(*deferrals: model.Deferral, max_open: int = 2, next_id: int = 4) -> model.Book:
    return model.Book(max_open=max_open, next_id=next_id, open={d.id: d for d in deferrals})


_D1 = model.Deferral(id=1, owner="a", due_at=3, expires_at=5)
#: A window that closes at the last int64 instant, held under the largest id.
_AT_END = model.Deferral(id=MAX, owner="a", due_at=MAX - 1, expires_at=MAX)
_END_BOOK = _book(_AT_END, next_id=MAX + 1)


def _args(**given: Any) -> dict[str, Any]:
    return {"id": 0, "now": 0, "owner": "a", "caller": "a", "delay": 0, "ttl": 0, "limit": 0, **given}


@settings(max_examples=250, deadline=None)
@given(books().flatmap(lambda book: st.tuples(st.just(book), calls(book))))
# The window's edges, the cap and the int64 edge, always checked whatever Hypothesis draws.
@example((_book(_D1), ("claim", {"id": 1, "now": 5, "owner": "a", "caller": "a", "delay": 0, "ttl": 0, "limit": 0})))
@example((_book(_D1), ("claim", {"id": 1, "now": 3, "owner": "a", "caller": "a", "delay": 0, "ttl": 0, "limit": 0})))
@example((_book(_D1), ("expire", {"id": 1, "now": 5, "owner": "a", "caller": "a", "delay": 0, "ttl": 0, "limit": 0})))
@example((_book(_D1, max_open=1), ("schedule", {"id": 0, "now": 0, "owner": "a", "caller": "a", "delay": 0, "ttl": 0, "limit": 0})))
@example((_book(), ("schedule", {"id": 0, "now": MAX, "owner": "a", "caller": "a", "delay": 0, "ttl": 1, "limit": 0})))
@example((_book(_D1), ("cancel", {"id": 1, "now": -1, "owner": "a", "caller": "b", "delay": 0, "ttl": 0, "limit": 0})))
# ExpiresAt == 2^63-1 and ids at the int64 edge: the last instant is outside the window,
# an expiry landing exactly on it is allowed, one past it is invalid; id 2^63-1 is the last
# an op accepts, allocated when next_id reaches it.
@pytest.mark.long
@example((_END_BOOK, ("claim", _args(id=MAX, now=MAX - 1))))
@example((_END_BOOK, ("claim", _args(id=MAX, now=MAX))))
@example((_END_BOOK, ("expire", _args(id=MAX, now=MAX - 1))))
@example((_END_BOOK, ("expire", _args(id=MAX, now=MAX))))
@example((_END_BOOK, ("cancel", _args(id=MAX, caller="a"))))
@example((_END_BOOK, ("get", _args(id=MAX + 1))))
@example((_END_BOOK, ("claimable", _args(now=MAX, limit=1))))
@example((_book(), ("schedule", _args(now=MAX - 3, delay=1, ttl=2))))
@example((_book(), ("schedule", _args(now=MAX - 3, delay=1, ttl=3))))
@example((_book(next_id=MAX), ("schedule", _args(now=MAX - 1, delay=0, ttl=1))))
@example((_book(next_id=MAX - 1), ("schedule", _args(now=0, delay=MAX - 1, ttl=1))))
def test_z3_transition_admits_exactly_the_models_outcome(
        drawn: tuple[model.Book, tuple[str, dict[str, Any]]]) -> None:
    book, (op, args) = drawn
    assert_agree(book, op, args)


def test_a_drifted_relation_is_caught() -> None:
    """The cross-check itself can fail: with Claim's window closed inclusively in Z3 only,
    the model's answer at ExpiresAt is no longer the only one Z3 admits."""
    book, args = _book(_D1), {"id": 1, "now": 5, "owner": "a", "caller": "a", "delay": 0, "ttl": 0, "limit": 0}
    after = copy.deepcopy(book)
    value, code = run_model(after, "claim", args)
    pre, call = z3book.Book.fresh("pre"), z3book.Call.fresh("call")
    post, reply = z3book.Book.fresh("post"), z3book.Reply.fresh("reply")
    solver = Solver()
    solver.add(pin_book(pre, book), pin_call(call, "claim", args),
               z3book.transition(pre, call, post, reply, bug="claim_window_closed_inclusive"),
               observed_as(post, reply, after, value, code))
    assert code == model.EXPIRED
    assert solver.check() == unsat

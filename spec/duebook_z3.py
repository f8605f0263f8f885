"""Z3 proofs for duebook, over unbounded ids and every state the invariant admits.

The Book is encoded as arrays indexed by every integer (open, owner, due_at, expires_at)
plus the id counter, the cap and an open-deferral count, so nothing is bounded: a proof
holds for every Book, not for the Books a depth-k search happens to reach. Properties
that need history are proved by one-step induction (Init => Inv, Inv and a step =>
Inv'), never by unrolling. A ghost array `consumed` records the ids a Claim, Cancel or
Expire has consumed, which is what "at most once, ever" is about.

Each operation is written once, as a function from (Book, Call) to (Book', Reply) that
follows docs/operations.md and the model's error precedence; `bug` names a deliberately
broken variant for the negative controls. tests/test_z3_vs_model.py pins concrete
states and checks this relation admits exactly the model's successor, so the two cannot
drift apart."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable, Sequence

from z3 import (
    And,
    Array,
    ArrayRef,
    ArithRef,
    Bool,
    BoolRef,
    BoolSort,
    BoolVal,
    Const,
    DatatypeRef,
    EnumSort,
    ExprRef,
    ForAll,
    If,
    Implies,
    Int,
    IntSort,
    IntVal,
    K,
    Length,
    ModelRef,
    Not,
    Or,
    SeqRef,
    Solver,
    Store,
    String,
    StringSort,
    StringVal,
    is_true,
    sat,
    unsat,
)

from duespec.model import duebook as model
from duespec.spec import duebook_invariants as inv
from duespec.spec.proofs import Outcome, Proof

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
#: Per query; every proof here answers in well under a second, so this only guards a regression.
SOLVER_TIMEOUT_MS = 60_000

Op, (SCHEDULE, CLAIM, CANCEL, EXPIRE, GET, CLAIMABLE, EXPIRABLE) = EnumSort(
    "Op", ["schedule", "claim", "cancel", "expire", "get", "claimable", "expirable"])
Code, (OK, INVALID, NOT_FOUND, NOT_DUE, EXPIRED, NOT_EXPIRED, NOT_OWNER, FULL) = EnumSort(
    "Code", ["ok", "invalid", "not_found", "not_due", "expired", "not_expired", "not_owner", "full"])

#: The ops that consume a deferral, and the ones that must only read.
CONSUMING = (CLAIM, CANCEL, EXPIRE)
READS = (GET, CLAIMABLE, EXPIRABLE)

#: The deliberately broken transitions the negative controls run, each a real-world bug shape.
BUGS = {
    "schedule_reuses_id": "Schedule does not advance the id counter, so an id comes back",
    "failed_schedule_bumps_counter": "a Schedule refused as full still advances the id counter",
    "claim_window_closed_inclusive": "Claim still succeeds at ExpiresAt (window [DueAt, ExpiresAt])",
    "cancel_touches_next_id": "Cancel also closes the deferral with the next id",
    "cap_off_by_one": "Schedule refuses only when open_count > maxOpen",
    "expire_keeps_count": "Expire forgets to decrement the open count",
    "expiry_wraps": "Schedule skips the overflow check; ExpiresAt wraps around int64",
    "get_expires_lazily": "Get consumes a deferral it finds past its ExpiresAt",
    "expiry_from_now": "Schedule counts ttl from now instead of from DueAt",
    "cancel_skips_owner_check": "Cancel lets any caller withdraw a deferral",
    "expire_zero_sentinel": "Expire reads ExpiresAt = 0 as 'expired long ago'",
    "claim_checks_window_first": "Claim checks the window before the id, reading a gone id's zero values",
}


@dataclass(frozen=True)
class Book:
    next_id: ArithRef
    max_open: ArithRef
    open: ArrayRef
    owner: ArrayRef
    due_at: ArrayRef
    expires_at: ArrayRef
    #: Tracks len(open); the `count_tracks_open` proof ties it to the array.
    open_count: ArithRef
    #: Ghost: ids consumed by a Claim, Cancel or Expire. Not observable, not in the model.
    consumed: ArrayRef

    @staticmethod
    def fresh(name: str) -> Book:
        return Book(
            next_id=Int(f"{name}.next_id"), max_open=Int(f"{name}.max_open"),
            open=Array(f"{name}.open", IntSort(), BoolSort()),
            owner=Array(f"{name}.owner", IntSort(), StringSort()),
            due_at=Array(f"{name}.due_at", IntSort(), IntSort()),
            expires_at=Array(f"{name}.expires_at", IntSort(), IntSort()),
            open_count=Int(f"{name}.open_count"),
            consumed=Array(f"{name}.consumed", IntSort(), BoolSort()))

    def parts(self) -> tuple[ExprRef, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))


@dataclass(frozen=True)
class Call:
    op: DatatypeRef
    now: ArithRef
    id: ArithRef
    #: Schedule's owner.
    owner: SeqRef
    #: Cancel's caller.
    caller: SeqRef
    delay: ArithRef
    ttl: ArithRef
    limit: ArithRef
    #: Every argument the op reads has its JSON type (an int is not a bool, float or str).
    #: Types are not Z3 values; ranges, emptiness and overflow are encoded exactly.
    typed: BoolRef

    @staticmethod
    def fresh(name: str) -> Call:
        return Call(op=Const(f"{name}.op", Op), now=Int(f"{name}.now"), id=Int(f"{name}.id"),
                    owner=String(f"{name}.owner"), caller=String(f"{name}.caller"),
                    delay=Int(f"{name}.delay"), ttl=Int(f"{name}.ttl"),
                    limit=Int(f"{name}.limit"), typed=Bool(f"{name}.typed"))


@dataclass(frozen=True)
class Reply:
    code: DatatypeRef
    #: The deferral returned on success by schedule, claim, cancel, expire and get.
    id: ArithRef
    owner: SeqRef
    due_at: ArithRef
    expires_at: ArithRef

    @staticmethod
    def fresh(name: str) -> Reply:
        return Reply(code=Const(f"{name}.code", Code), id=Int(f"{name}.id"),
                     owner=String(f"{name}.owner"), due_at=Int(f"{name}.due_at"),
                     expires_at=Int(f"{name}.expires_at"))

    def parts(self) -> tuple[ExprRef, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))


def is_int64(x: ArithRef) -> BoolRef:
    return And(INT64_MIN <= x, x <= INT64_MAX)


def is_time(x: ArithRef) -> BoolRef:
    return And(0 <= x, x <= INT64_MAX)


def _reply(code: ExprRef, deferral: tuple[ExprRef, ...] | None = None) -> Reply:
    id, owner, due_at, expires_at = deferral or (IntVal(0), StringVal(""), IntVal(0), IntVal(0))
    return Reply(code, id, owner, due_at, expires_at)  # type: ignore[arg-type]


def _first_error(checks: list[tuple[BoolRef, ExprRef]]) -> ExprRef:
    """The code of the first failing check, in precedence order; OK if none fails."""
    code: ExprRef = OK
    for failed, error in reversed(checks):
        code = If(failed, error, code)
    return code


def _stored(book: Book, id: ArithRef) -> tuple[ExprRef, ...]:
    return (id, book.owner[id], book.due_at[id], book.expires_at[id])


def _consume(book: Book, id: ArithRef, decrement: bool = True) -> Book:
    return Book(book.next_id, book.max_open, Store(book.open, id, False), book.owner,
                book.due_at, book.expires_at, book.open_count - (1 if decrement else 0),
                Store(book.consumed, id, True))


def _schedule(book: Book, call: Call, bug: str | None) -> tuple[Book, Reply]:
    due_at = call.now + call.delay
    expires_at = If(call.ttl > 0, due_at + call.ttl, 0)
    if bug == "expiry_from_now":
        expires_at = If(call.ttl > 0, call.now + call.ttl, 0)
    overflow = Or(due_at > INT64_MAX, And(call.ttl > 0, due_at + call.ttl > INT64_MAX))
    if bug == "expiry_wraps":
        expires_at = If(call.ttl > 0, If(due_at + call.ttl > INT64_MAX, due_at + call.ttl - 2**64,
                                          due_at + call.ttl), 0)
        overflow = due_at > INT64_MAX
    invalid = Or(Not(call.typed), Length(call.owner) == 0, Not(is_time(call.now)),
                 Not(is_time(call.delay)), Not(is_time(call.ttl)), overflow)
    full = book.open_count > book.max_open if bug == "cap_off_by_one" else book.open_count >= book.max_open
    code = _first_error([(invalid, INVALID), (full, FULL)])
    id = book.next_id
    opened = Book(book.next_id + (0 if bug == "schedule_reuses_id" else 1), book.max_open,
                  Store(book.open, id, True), Store(book.owner, id, call.owner),
                  Store(book.due_at, id, due_at), Store(book.expires_at, id, expires_at),
                  book.open_count + 1, book.consumed)
    refused = book
    if bug == "failed_schedule_bumps_counter":
        refused = _replace(book, next_id=If(And(Not(invalid), full), book.next_id + 1, book.next_id))
    after = _choose(code == OK, opened, refused)
    return after, _reply(code, (id, call.owner, due_at, expires_at))


def _claim(book: Book, call: Call, bug: str | None) -> tuple[Book, Reply]:
    id, now = call.id, call.now
    expires_at = book.expires_at[id]
    closed = now > expires_at if bug == "claim_window_closed_inclusive" else now >= expires_at
    checks = [
        (Or(Not(call.typed), Not(is_int64(id)), Not(is_time(now))), INVALID),
        (Not(book.open[id]), NOT_FOUND),
        (now < book.due_at[id], NOT_DUE),
        (And(expires_at != 0, closed), EXPIRED),
    ]
    if bug == "claim_checks_window_first":
        checks = [checks[0], checks[2], checks[3], checks[1]]
    code = _first_error(checks)
    return _choose(code == OK, _consume(book, id), book), _reply(code, _stored(book, id))


def _cancel(book: Book, call: Call, bug: str | None) -> tuple[Book, Reply]:
    id = call.id
    code = _first_error([
        (Or(Not(call.typed), Not(is_int64(id)), Length(call.caller) == 0), INVALID),
        (Not(book.open[id]), NOT_FOUND),
        (And(book.owner[id] != call.caller, bug != "cancel_skips_owner_check"), NOT_OWNER),
    ])
    cancelled = _consume(book, id)
    if bug == "cancel_touches_next_id":
        cancelled = _replace(cancelled, open=Store(cancelled.open, id + 1, False))
    return _choose(code == OK, cancelled, book), _reply(code, _stored(book, id))


def _expire(book: Book, call: Call, bug: str | None) -> tuple[Book, Reply]:
    id, now = call.id, call.now
    code = _first_error([
        (Or(Not(call.typed), Not(is_int64(id)), Not(is_time(now))), INVALID),
        (Not(book.open[id]), NOT_FOUND),
        (Or(And(book.expires_at[id] == 0, bug != "expire_zero_sentinel"), now < book.expires_at[id]),
         NOT_EXPIRED),
    ])
    expired = _consume(book, id, decrement=bug != "expire_keeps_count")
    return _choose(code == OK, expired, book), _reply(code, _stored(book, id))


def _get(book: Book, call: Call, bug: str | None) -> tuple[Book, Reply]:
    id = call.id
    code = _first_error([
        (Or(Not(call.typed), Not(is_int64(id))), INVALID),
        (Not(book.open[id]), NOT_FOUND),
    ])
    after = book
    if bug == "get_expires_lazily":
        late = And(code == OK, book.expires_at[id] != 0, call.now >= book.expires_at[id])
        after = _choose(late, _consume(book, id), book)
    return after, _reply(code, _stored(book, id))


def _query(book: Book, call: Call, bug: str | None) -> tuple[Book, Reply]:
    """claimable and expirable: only their error code is encoded; the listing is not."""
    invalid = Or(Not(call.typed), Not(is_time(call.now)), Not(is_time(call.limit)))
    return book, _reply(If(invalid, INVALID, OK))


_HANDLERS: dict[str, Callable[[Book, Call, str | None], tuple[Book, Reply]]] = {
    "schedule": _schedule, "claim": _claim, "cancel": _cancel, "expire": _expire,
    "get": _get, "claimable": _query, "expirable": _query,
}
OPS_BY_NAME = {"schedule": SCHEDULE, "claim": CLAIM, "cancel": CANCEL, "expire": EXPIRE, "get": GET,
        "claimable": CLAIMABLE, "expirable": EXPIRABLE}


def _choose(condition: BoolRef, then: Book, otherwise: Book) -> Book:
    return Book(*(If(condition, a, b) for a, b in zip(then.parts(), otherwise.parts())))


def _replace(book: Book, **changes: ExprRef) -> Book:
    return Book(**{f.name: changes.get(f.name, getattr(book, f.name)) for f in fields(book)})


def step(book: Book, call: Call, bug: str | None = None) -> tuple[Book, Reply]:
    """The successor Book and the reply, as functions of the pre-state and the call."""
    after, reply = _HANDLERS["schedule"](book, call, bug)
    for name in ("claim", "cancel", "expire", "get", "claimable", "expirable"):
        other_after, other_reply = _HANDLERS[name](book, call, bug)
        chosen = call.op == OPS_BY_NAME[name]
        after = _choose(chosen, other_after, after)
        reply = Reply(*(If(chosen, a, b) for a, b in zip(other_reply.parts(), reply.parts())))
    return after, reply


def transition(pre: Book, call: Call, post: Book, reply: Reply, bug: str | None = None) -> BoolRef:
    """T(pre, call, post, reply): the relation the proofs and the model cross-check use."""
    after, answer = step(pre, call, bug)
    return And(*(a == b for a, b in zip(post.parts(), after.parts())),
               *(a == b for a, b in zip(reply.parts(), answer.parts())))


def initial(book: Book) -> BoolRef:
    """NewBook(maxOpen): nothing open, nothing consumed, ids start at 1 (D-01). Every slot
    holds Go's zero values, which is what a lookup that skips the open check would read."""
    return And(book.next_id == 1, 1 <= book.max_open, book.max_open <= INT64_MAX,
               book.open == K(IntSort(), BoolVal(False)), book.open_count == 0,
               book.consumed == K(IntSort(), BoolVal(False)), book.owner == K(IntSort(), StringVal("")),
               book.due_at == K(IntSort(), IntVal(0)), book.expires_at == K(IntSort(), IntVal(0)))


def well_formed(book: Book, i: ArithRef) -> BoolRef:
    """What the invariant says about id i."""
    due_at, expires_at = book.due_at[i], book.expires_at[i]
    return And(
        Implies(book.open[i], And(1 <= i, i < book.next_id,
                                  is_time(due_at),
                                  Or(expires_at == 0, And(due_at < expires_at, expires_at <= INT64_MAX)))),
        Implies(book.consumed[i], And(Not(book.open[i]), 1 <= i, i < book.next_id)))


def invariant(book: Book) -> BoolRef:
    """The inductive invariant: open and consumed ids are below the counter, disjoint, and
    every open deferral is well formed; the open count respects the cap."""
    i = Int("i")
    return And(book.next_id >= 1, book.max_open >= 1, book.open_count <= book.max_open,
               ForAll([i], well_formed(book, i)))


# ---------------------------------------------------------------------------------------
# Checking and rendering (valid, as_check, as_control and all_of serve schedules_z3 too)

@dataclass(frozen=True)
class Step:
    """One symbolic step: a pre-state, a call, and what the (possibly broken) T makes of them."""
    pre: Book
    call: Call
    post: Book
    reply: Reply
    relation: BoolRef

    @staticmethod
    def of(bug: str | None) -> Step:
        pre, call, post, reply = Book.fresh("pre"), Call.fresh("call"), Book.fresh("post"), Reply.fresh("reply")
        return Step(pre, call, post, reply, transition(pre, call, post, reply, bug))

    def own_id(self) -> ArithRef:
        """The one id an operation may touch: the allocated one for Schedule, else its argument."""
        return If(self.call.op == SCHEDULE, self.pre.next_id, self.call.id)  # type: ignore[return-value]


class Undecided(Exception):
    """Z3 answered unknown: neither a proof nor a refutation."""


def valid(goal: BoolRef, render: Callable[[ModelRef], str], part: str) -> Outcome:
    """Holds when Not(goal) is unsatisfiable; otherwise Z3's model is the counterexample.

    "unknown" raises Undecided: it must count as a failed proof AND as an unrefuted
    control (see `as_check`, `as_control`), never silently as either verdict."""
    solver = Solver()
    solver.set(timeout=SOLVER_TIMEOUT_MS)
    solver.add(Not(goal))
    answer = solver.check()
    if answer == unsat:
        return Outcome(True)
    if answer == sat:
        return Outcome(False, f"{part} fails:\n{render(solver.model())}")
    raise Undecided(f"{part}: Z3 answered unknown ({solver.reason_unknown()})")


def as_check(run: Callable[[], Outcome]) -> Callable[[], Outcome]:
    def check() -> Outcome:
        try:
            return run()
        except Undecided as undecided:
            return Outcome(False, f"not proved: {undecided}")
    return check


def as_control(run: Callable[[], Outcome]) -> Callable[[], Outcome]:
    def control() -> Outcome:
        try:
            return run()
        except Undecided as undecided:
            return Outcome(True, f"not refuted: {undecided}")
    return control


def all_of(*checks: Callable[[], Outcome]) -> Outcome:
    """Several obligations: the first one that fails is the counterexample."""
    for check in checks:
        outcome = check()
        if not outcome.holds:
            return outcome
    return Outcome(True)


def _value(model: ModelRef, expr: ExprRef) -> str:
    value = model.eval(expr, model_completion=True)
    text = value.as_string() if hasattr(value, "as_string") and value.sort() == StringSort() else str(value)
    return repr(text) if value.sort() == StringSort() else text


def render_call(model: ModelRef, call: Call) -> str:
    v = lambda e: _value(model, e)  # noqa: E731
    op = v(call.op)
    args = {
        "schedule": f"owner={v(call.owner)}, delay={v(call.delay)}, ttl={v(call.ttl)}, now={v(call.now)}",
        "claim": f"id={v(call.id)}, now={v(call.now)}",
        "cancel": f"id={v(call.id)}, caller={v(call.caller)}",
        "expire": f"id={v(call.id)}, now={v(call.now)}",
        "get": f"id={v(call.id)}",
        "claimable": f"now={v(call.now)}, limit={v(call.limit)}",
        "expirable": f"now={v(call.now)}, limit={v(call.limit)}",
    }[op]
    typed = "" if v(call.typed) == "True" else "   (an argument has the wrong JSON type)"
    return f"{op}({args}){typed}"


def render_book(model: ModelRef, book: Book, ids: list[ArithRef]) -> str:
    v = lambda e: _value(model, e)  # noqa: E731
    lines = [f"next_id={v(book.next_id)} max_open={v(book.max_open)} open_count={v(book.open_count)}"]
    seen: set[str] = set()
    for id in ids:
        key = v(id)
        if key in seen:
            continue
        seen.add(key)
        state = "open" if v(book.open[id]) == "True" else "not open"
        consumed = ", consumed earlier" if v(book.consumed[id]) == "True" else ""
        lines.append(f"  id {key}: {state}{consumed}; owner={v(book.owner[id])} "
                     f"due_at={v(book.due_at[id])} expires_at={v(book.expires_at[id])}")
    return "\n".join(lines)


def render_step(step_: Step, extra_ids: tuple[ArithRef, ...] = ()) -> Callable[[ModelRef], str]:
    def render(model: ModelRef) -> str:
        ids = [step_.own_id(), *extra_ids]
        return "\n".join([
            f"call:  {render_call(model, step_.call)}",
            f"reply: {_value(model, step_.reply.code)}",
            "before: " + render_book(model, step_.pre, ids),
            "after:  " + render_book(model, step_.post, ids),
        ])
    return render


def invariant_is_inductive(bug: str | None = None) -> Outcome:
    """The one induction: NewBook satisfies the invariant and every step keeps it. Each
    property re-checks it, so a proof stands on its own."""
    book = Book.fresh("init")
    s = Step.of(bug)
    return all_of(
        lambda: valid(Implies(initial(book), invariant(book)),
                       lambda m: "initial: " + render_book(m, book, []), "Init => invariant"),
        lambda: valid(Implies(And(invariant(s.pre), s.relation), invariant(s.post)),
                       _render_invariant_break(s), "invariant preserved by every step"),
    )


def _induction(bug: str | None, goal: Callable[[Step], BoolRef], name: str,
               extra: Callable[[Step], tuple[ArithRef, ...]] = lambda s: ()) -> Outcome:
    """Inv and T => goal, with Inv inductive: the goal holds on every step of every run,
    because every reachable Book satisfies the invariant."""
    s = Step.of(bug)
    return all_of(
        lambda: invariant_is_inductive(bug),
        lambda: valid(Implies(And(invariant(s.pre), s.relation), goal(s)),
                       render_step(s, extra(s)), name),
    )


def _render_invariant_break(s: Step) -> Callable[[ModelRef], str]:
    """The post-state violates the invariant; name the id where it does, if any."""
    def render(model: ModelRef) -> str:
        bad = _offending_id(model, s)
        return render_step(s, (bad,) if bad is not None else ())(model)
    return render


def _offending_id(model: ModelRef, s: Step) -> ArithRef | None:
    """Ask Z3 again, with the step pinned to this model, for an id breaking `well_formed`."""
    i = Int("offending")
    solver = Solver()
    solver.set(timeout=SOLVER_TIMEOUT_MS)
    for expr in (*s.pre.parts(), *s.call.__dict__.values(), *s.post.parts(), *s.reply.parts()):
        solver.add(expr == model.eval(expr, model_completion=True))
    solver.add(Not(well_formed(s.post, i)))
    if solver.check() == sat:
        return solver.model().eval(i, model_completion=True)  # type: ignore[return-value]
    return None


# ---------------------------------------------------------------------------------------
# The properties

# ---------------------------------------------------------------------------------------
# Negative controls: a concrete broken run from NewBook that breaks the goal itself

#: One step of a concrete run, in the JSON of docs/operations.md (as spec/duebook_invariants.py
#: reads it): the Book before, {"op", "args", "now", "result"}, the Book after. Each Book
#: also carries "open_count", the counter the encoding keeps beside the open flags.
RunStep = tuple[dict[str, Any], dict[str, Any], dict[str, Any]]
#: A goal restated over concrete runs: why the run breaks it, or None.
Judge = Callable[[Sequence[RunStep]], "str | None"]

#: The arguments each op reads, as docs/operations.md names them.
ARGUMENTS = {"schedule": ("owner", "delay", "ttl"), "claim": ("id",), "cancel": ("id", "caller"),
             "expire": ("id",), "get": ("id",), "claimable": ("limit",), "expirable": ("limit",)}
#: Owners and callers the controls' runs use, so they read (and replay) as plain JSON.
_NAMES = ("", "a", "b")
_CONTROL_MAX_OPEN = 3


def each_step(*predicates: Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], bool]) -> Judge:
    """A judge from spec/duebook_invariants.py predicates: the first step one of them rejects."""
    def judge(run: Sequence[RunStep]) -> str | None:
        for n, (before, step, after) in enumerate(run, 1):
            for predicate in predicates:
                if not predicate(before, step, after):
                    summary = " ".join((predicate.__doc__ or "").split())
                    return f"step {n}, {_step_text(step)}, breaks {predicate.__name__} ({summary})"
        return None
    return judge


def _after(state_invariant: Callable[[dict[str, Any]], bool]) -> Callable[..., bool]:
    def holds_after(before: dict[str, Any], step: dict[str, Any], after: dict[str, Any]) -> bool:
        return state_invariant(after)
    holds_after.__name__, holds_after.__doc__ = state_invariant.__name__, state_invariant.__doc__
    return holds_after


def no_id_consumed_twice(run: Sequence[RunStep]) -> str | None:
    """D-02, D-05: no Claim, Cancel or Expire succeeds on an id a run already consumed."""
    consumed: set[int] = set()
    for n, (_, step, _) in enumerate(run, 1):
        if step["op"] in inv.CONSUMING_OPS and "ok" in step["result"]:
            id = step["args"]["id"]
            if id in consumed:
                return f"step {n}, {_step_text(step)}, consumes id {id} a second time"
            consumed.add(id)
    return None


def count_moves_with_open(before: dict[str, Any], step: dict[str, Any], after: dict[str, Any]) -> bool:
    """D-07, D-06: the open count changes exactly as the number of open deferrals does."""
    return after["open_count"] - before["open_count"] == len(after["open"]) - len(before["open"])


def _step_text(step: dict[str, Any]) -> str:
    args = ", ".join(f"{name}={step['args'][name]!r}" for name in ARGUMENTS[step["op"]])
    result = step["result"]
    answer = "ok" if "ok" in result else result["error"]
    return f"{step['op']}({args}) at now={step['now']} -> {answer}"


def _model_step(book: model.Book, step: dict[str, Any]) -> dict[str, Any]:
    a, now = step["args"], step["now"]
    value, code = {
        "schedule": lambda: model.schedule(book, a["owner"], a["delay"], a["ttl"], now),
        "claim": lambda: model.claim(book, a["id"], now),
        "cancel": lambda: model.cancel(book, a["id"], a["caller"]),
        "expire": lambda: model.expire(book, a["id"], now),
        "get": lambda: model.get(book, a["id"]),
        "claimable": lambda: model.claimable(book, now, a["limit"]),
        "expirable": lambda: model.expirable(book, now, a["limit"]),
    }[step["op"]]()
    if code is not None:
        return {"error": code}
    return {"ok": [model.deferral_json(d) for d in value] if isinstance(value, list) else model.deferral_json(value)}


def _model_state(book: model.Book) -> dict[str, Any]:
    return {**model.observe(book), "open_count": len(book.open)}


def model_run(max_open: int, calls: Sequence[dict[str, Any]]) -> list[RunStep]:
    """The model's own run of the same calls from NewBook(max_open)."""
    book, _ = model.new_book(max_open)
    assert book is not None
    run = []
    for call in calls:
        before = _model_state(book)
        step = {**call, "result": _model_step(book, call)}
        run.append((before, step, _model_state(book)))
    return run


def _concrete_run(m: ModelRef, steps: Sequence[Step]) -> list[RunStep]:
    """Read Z3's run off its model as docs/operations.md JSON."""
    n = lambda e: m.eval(e, model_completion=True).as_long()  # noqa: E731
    text = lambda e: m.eval(e, model_completion=True).as_string()  # noqa: E731
    ids = set(range(1, max(n(s.post.next_id) for s in steps) + 1))
    ids |= {n(s.call.id) + d for s in steps for d in (0, 1)}

    def book(b: Book) -> dict[str, Any]:
        open_ = [{"id": i, "owner": text(b.owner[i]), "due_at": n(b.due_at[i]), "expires_at": n(b.expires_at[i])}
                 for i in sorted(ids) if is_true(m.eval(b.open[i], model_completion=True))]
        return {"max_open": n(b.max_open), "next_id": n(b.next_id), "open": open_, "open_count": n(b.open_count)}

    run = []
    for s in steps:
        op = str(m.eval(s.call.op, model_completion=True))
        values = {"owner": text(s.call.owner), "caller": text(s.call.caller), "delay": n(s.call.delay),
                  "ttl": n(s.call.ttl), "id": n(s.call.id), "limit": n(s.call.limit)}
        code = str(m.eval(s.reply.code, model_completion=True))
        if code != "ok":
            result: dict[str, Any] = {"error": code}
        elif op in ("claimable", "expirable"):
            result = {"ok": None}  # the encoding keeps no listing
        else:
            result = {"ok": {"id": n(s.reply.id), "owner": text(s.reply.owner), "due_at": n(s.reply.due_at),
                             "expires_at": n(s.reply.expires_at)}}
        step = {"op": op, "args": {k: values[k] for k in ARGUMENTS[op]}, "now": n(s.call.now), "result": result}
        run.append((book(s.pre), step, book(s.post)))
    return run


def search_broken_run(bug: str, goal: Callable[[Step], BoolRef], max_steps: int = 4
                      ) -> tuple[ModelRef, list[Step]] | None:
    """The shortest run (up to max_steps) of the broken transition from NewBook whose last
    step breaks the goal; calls well typed, owners among a few names, a small cap."""
    book = Book.fresh("b0")
    solver = Solver()
    solver.set(timeout=SOLVER_TIMEOUT_MS)
    solver.add(initial(book), book.max_open <= _CONTROL_MAX_OPEN)
    steps: list[Step] = []
    for k in range(1, max_steps + 1):
        call, post, reply = Call.fresh(f"c{k}"), Book.fresh(f"b{k}"), Reply.fresh(f"r{k}")
        step_ = Step(book, call, post, reply, transition(book, call, post, reply, bug))
        steps.append(step_)
        solver.add(step_.relation, call.typed, Or(*(call.owner == StringVal(x) for x in _NAMES)),
                   Or(*(call.caller == StringVal(x) for x in _NAMES)))
        solver.push()
        solver.add(Not(goal(step_)))
        answer = solver.check()
        if answer == sat:
            return solver.model(), steps
        if answer != unsat:
            raise Undecided(f"the control's search: Z3 answered unknown ({solver.reason_unknown()})")
        solver.pop()
        book = post
    return None


@dataclass(frozen=True)
class Property:
    requirements: tuple[str, ...]
    title: str
    #: What must hold of every step from a Book satisfying the invariant.
    goal: Callable[[Step], BoolRef]
    goal_name: str
    #: The goal over concrete runs, which judges the control's run outside Z3.
    judge: Judge
    #: The broken transition (a key of BUGS) the negative control runs.
    bug: str
    #: Ids besides the op's own worth showing in a counterexample.
    extra_ids: Callable[[Step], tuple[ArithRef, ...]] = lambda s: ()

    def check(self, bug: str | None) -> Outcome:
        return _induction(bug, self.goal, self.goal_name, self.extra_ids)

    def control(self, bug: str | None = None) -> Outcome:
        """Refuted only by a concrete run from NewBook of the broken transition whose last
        step breaks this goal, confirmed by `judge` on the run's values, while the model's
        run of the same calls keeps it."""
        found = search_broken_run(bug or self.bug, self.goal)
        if found is None:
            return Outcome(True, f"no run of <= 4 steps from NewBook breaks '{self.goal_name}'")
        m, steps = found
        return self.confirm(_concrete_run(m, steps), render_step(steps[-1], self.extra_ids(steps[-1]))(m))

    def confirm(self, run: Sequence[RunStep], last_step: str = "") -> Outcome:
        max_open = run[0][0]["max_open"]
        calls = "\n".join(f"    {k}. {_step_text(step)}" for k, (_, step, _) in enumerate(run, 1))
        why = self.judge(run)
        if why is None:
            return Outcome(True, f"Z3's broken run does not break '{self.goal_name}' judged on its values:\n{calls}")
        replay = model_run(max_open, [{k: v for k, v in step.items() if k != "result"} for _, step, _ in run])
        kept = self.judge(replay)
        answers = ", ".join(f"{k}. {'ok' if 'ok' in step['result'] else step['result']['error']}"
                            for k, (_, step, _) in enumerate(replay, 1))
        if kept is not None:
            return Outcome(True, f"the model breaks '{self.goal_name}' too on these calls ({kept})")
        return Outcome(False, f"breaks '{self.goal_name}': {why}\n"
                              f"  the broken run from NewBook(maxOpen={max_open}):\n{calls}\n"
                              f"  the model answers the same calls {answers} (keeps it)\n"
                              + "\n".join("  " + line for line in last_step.splitlines()),
                       breaks=self.goal_name)

    def proof(self) -> Proof:
        return Proof(system="duebook", requirements=self.requirements, name=self.title, goal=self.goal_name,
                     check=as_check(lambda: self.check(None)), control=as_control(self.control),
                     control_name=f"{self.bug}: {BUGS[self.bug]}")


def _consuming_succeeds(s: Step) -> BoolRef:
    return And(Or(*(s.call.op == op for op in CONSUMING)), s.reply.code == OK)


def _unchanged(s: Step) -> BoolRef:
    return And(*(a == b for a, b in zip(s.post.parts(), s.pre.parts())))


def _claim_exactly_when_due(s: Step) -> BoolRef:
    pre, id, now = s.pre, s.call.id, s.call.now
    in_window = And(s.call.typed, is_int64(id), is_time(now), pre.open[id], pre.due_at[id] <= now,
                    Or(pre.expires_at[id] == 0, now < pre.expires_at[id]))
    consumed = And(Not(s.post.open[id]), s.reply.id == id, s.reply.owner == pre.owner[id],
                   s.reply.due_at == pre.due_at[id], s.reply.expires_at == pre.expires_at[id])
    return Implies(s.call.op == CLAIM, And((s.reply.code == OK) == in_window,
                                           Implies(s.reply.code == OK, consumed)))


#: A free id standing for "every other id": the goal must hold whatever Z3 picks.
_OTHER = Int("other")


def _touches_only_its_own_id(s: Step) -> BoolRef:
    arrays = ((s.post.open, s.pre.open), (s.post.owner, s.pre.owner), (s.post.due_at, s.pre.due_at),
              (s.post.expires_at, s.pre.expires_at), (s.post.consumed, s.pre.consumed))
    return Implies(_OTHER != s.own_id(), And(*(post[_OTHER] == pre[_OTHER] for post, pre in arrays)))


def _count_tracks_open(s: Step) -> BoolRef:
    own = s.own_id()
    flag = lambda book: If(book.open[own], 1, 0)  # noqa: E731
    return s.post.open_count - s.pre.open_count == flag(s.post) - flag(s.pre)


def _expiry_never_wraps(s: Step) -> BoolRef:
    scheduled = And(s.call.op == SCHEDULE, s.reply.code == OK)
    return Implies(scheduled, And((s.call.ttl == 0) == (s.reply.expires_at == 0),
                                  Or(s.reply.expires_at == 0, s.reply.expires_at > s.reply.due_at)))


def _schedule_allocates_and_computes(s: Step) -> BoolRef:
    due_at = s.call.now + s.call.delay
    opened = And(s.reply.id == s.pre.next_id, s.post.next_id == s.pre.next_id + 1,
                 s.post.open[s.pre.next_id], s.reply.owner == s.call.owner, s.reply.due_at == due_at,
                 s.reply.expires_at == If(s.call.ttl > 0, due_at + s.call.ttl, 0),
                 s.post.due_at[s.pre.next_id] == s.reply.due_at,
                 s.post.expires_at[s.pre.next_id] == s.reply.expires_at,
                 s.post.owner[s.pre.next_id] == s.reply.owner)
    scheduled = And(s.call.op == SCHEDULE, s.reply.code == OK)
    return And(Implies(scheduled, opened), Implies(Not(scheduled), s.post.next_id == s.pre.next_id))


def _cancel_exactly_when_owner(s: Step) -> BoolRef:
    pre, id = s.pre, s.call.id
    allowed = And(s.call.typed, is_int64(id), Length(s.call.caller) > 0, pre.open[id], pre.owner[id] == s.call.caller)
    return Implies(s.call.op == CANCEL, (s.reply.code == OK) == allowed)


def _expire_exactly_when_late(s: Step) -> BoolRef:
    pre, id, now = s.pre, s.call.id, s.call.now
    late = And(s.call.typed, is_int64(id), is_time(now), pre.open[id], pre.expires_at[id] != 0,
               now >= pre.expires_at[id])
    return Implies(s.call.op == EXPIRE, (s.reply.code == OK) == late)


def _absent_is_not_found(s: Step) -> BoolRef:
    by_id = Or(*(s.call.op == op for op in (CLAIM, CANCEL, EXPIRE, GET)))
    return Implies(And(by_id, Not(s.pre.open[s.call.id])), Or(s.reply.code == INVALID, s.reply.code == NOT_FOUND))


PROPERTIES: list[Property] = [
    # Ids are never reused and a consumed id never reopens (invariant), so the consuming
    # op that succeeds on an id (Claim, Cancel or Expire) is the only one that ever will.
    Property(("D-02", "D-04", "D-05"), "at most one successful Claim per id, ever (no id consumed twice)",
             lambda s: Implies(_consuming_succeeds(s), Not(s.pre.consumed[s.call.id])),
             "a consuming op succeeds only on an id never consumed before", no_id_consumed_twice,
             "schedule_reuses_id"),
    Property(("D-03", "D-04"), "Schedule opens next_id with [now+delay, +ttl); only it moves the counter",
             _schedule_allocates_and_computes, "Schedule allocates next_id and computes the window",
             each_step(inv.schedule_computes_window, inv.schedule_adds_only_the_new_deferral,
                       inv.counter_advances_only_on_schedule), "expiry_from_now"),
    Property(("D-05", "D-21"), "an id that is not open is not_found (or invalid) to every op by id",
             _absent_is_not_found, "an absent id answers not_found", each_step(inv.absent_id_is_not_found),
             "claim_checks_window_first"),
    Property(("D-12",), "Cancel succeeds exactly when open and the caller owns it, at any time",
             _cancel_exactly_when_owner, "Cancel succeeds exactly for the owner", each_step(inv.cancel_obeys_ownership),
             "cancel_skips_owner_check"),
    Property(("D-13", "D-11"), "Expire succeeds exactly when ExpiresAt != 0 and now >= ExpiresAt",
             _expire_exactly_when_late, "Expire succeeds exactly once the window closed",
             each_step(inv.expire_obeys_expiry), "expire_zero_sentinel"),
    Property(("D-17",), "every failing operation leaves the Book unchanged, counter included",
             lambda s: Implies(s.reply.code != OK, _unchanged(s)),
             "a failed operation changes nothing", each_step(inv.failure_changes_nothing), "failed_schedule_bumps_counter"),
    Property(("D-08", "D-09", "D-10"),
             "Claim succeeds exactly when open and DueAt <= now < ExpiresAt (or no expiry)",
             _claim_exactly_when_due, "Claim succeeds exactly inside [DueAt, ExpiresAt)", each_step(inv.claim_obeys_window),
             "claim_window_closed_inclusive"),
    Property(("D-22",), "an operation touches no id but its own", _touches_only_its_own_id,
             "no id but the operation's own changes",
             each_step(inv.success_consumes_only_its_id, inv.schedule_adds_only_the_new_deferral), "cancel_touches_next_id", lambda s: (_OTHER,)),
    # open_count <= maxOpen is a conjunct of the invariant; its preservation is the proof.
    Property(("D-07",), "open deferrals never exceed maxOpen (inductive)",
             lambda s: s.post.open_count <= s.post.max_open, "open_count <= maxOpen",
             each_step(_after(inv.open_count_within_cap)), "cap_off_by_one"),
    # With the frame proof (no other id changes) and Init (count 0, nothing open), induction
    # over any run gives open_count = number of open deferrals, so the cap bounds storage.
    Property(("D-07", "D-06"), "the open count moves exactly with the one open flag an op touches",
             _count_tracks_open, "open_count changes with the open flag of the touched id",
             each_step(count_moves_with_open), "expire_keeps_count"),
    # Every open deferral has ExpiresAt = 0 or DueAt < ExpiresAt <= 2^63-1 (invariant).
    Property(("D-11", "D-20"), "ExpiresAt never wraps: 0 exactly when ttl = 0, else after DueAt",
             _expiry_never_wraps, "Schedule returns ExpiresAt = 0 exactly when ttl = 0, else > DueAt",
             each_step(_after(inv.times_within_int64), _after(inv.expiry_after_due)), "expiry_wraps"),
    Property(("D-14", "D-23", "D-24"), "get, claimable and expirable never change the Book",
             lambda s: Implies(Or(*(s.call.op == op for op in READS)), _unchanged(s)),
             "get, claimable and expirable change nothing", each_step(inv.read_only_ops_change_nothing),
             "get_expires_lazily"),
]

PROOFS: list[Proof] = [p.proof() for p in PROPERTIES]

"""duebook's invariants as plain predicates over the JSON of docs/operations.md.

A state invariant takes one observable state `{"max_open", "next_id", "open": [...]}`; a
transition invariant takes the states before and after one step plus the step itself,
`{"op", "args", "now", "result"}`, where `result` is the response (`{"ok": ...}` or
`{"error": code}`). Each states one fact and cites its requirement in spec/duebook.md.
They hold for any correct target, so they can judge a target with no model at hand.

History-dependent facts ("a consumed id never comes back") are stated inductively over a
single step: nothing but the freshly allocated id may appear, and the counter never goes
back, so by induction a consumed id is absent forever.
"""

from __future__ import annotations

from typing import Any, Callable

INT64_MAX = 2**63 - 1
CONSUMING_OPS = frozenset({"claim", "cancel", "expire"})
READ_ONLY_OPS = frozenset({"get", "claimable", "expirable"})

State = dict[str, Any]
Step = dict[str, Any]


def _ids(state: State) -> list[int]:
    return [d["id"] for d in state["open"]]


def _by_id(state: State) -> dict[int, dict[str, Any]]:
    return {d["id"]: d for d in state["open"]}


def _is_int(value: object) -> bool:
    return type(value) is int


def _open_deferral(before: State, step: Step) -> dict[str, Any] | None:
    """The open deferral the step names, if its id is an int naming one."""
    id = step["args"].get("id")
    return _by_id(before).get(id) if _is_int(id) else None


def _succeeded(step: Step) -> bool:
    return "ok" in step["result"]


# --- state invariants -------------------------------------------------------------------


def open_count_within_cap(state: State) -> bool:
    """D-07: never more open deferrals than max_open."""
    return len(state["open"]) <= state["max_open"]


def cap_is_positive(state: State) -> bool:
    """D-01: a Book always has room for at least one open deferral."""
    return state["max_open"] >= 1


def ids_below_counter(state: State) -> bool:
    """D-04: every open id was allocated, so 1 <= id < next_id."""
    return all(1 <= id < state["next_id"] for id in _ids(state))


def open_listed_by_id(state: State) -> bool:
    """D-26: the open list is in strictly increasing id order (so ids are unique)."""
    ids = _ids(state)
    return all(a < b for a, b in zip(ids, ids[1:]))


def owners_non_empty(state: State) -> bool:
    """D-15: every open deferral has a non-empty string owner."""
    return all(type(d["owner"]) is str and d["owner"] != "" for d in state["open"])


def times_within_int64(state: State) -> bool:
    """D-19, D-20: due_at and expires_at are non-negative int64s (nothing wrapped)."""
    return all(
        0 <= d["due_at"] <= INT64_MAX and 0 <= d["expires_at"] <= INT64_MAX for d in state["open"]
    )


def expiry_after_due(state: State) -> bool:
    """D-03, D-11: a deferral either never expires (0) or expires strictly after it is due,
    so its claim window is never empty."""
    return all(d["expires_at"] == 0 or d["expires_at"] > d["due_at"] for d in state["open"])


STATE_INVARIANTS: tuple[Callable[[State], bool], ...] = (
    open_count_within_cap,
    cap_is_positive,
    ids_below_counter,
    open_listed_by_id,
    owners_non_empty,
    times_within_int64,
    expiry_after_due,
)


# --- transition invariants --------------------------------------------------------------


def failure_changes_nothing(before: State, step: Step, after: State) -> bool:
    """D-17: a failed operation leaves the Book exactly as it was, id counter included."""
    return _succeeded(step) or before == after


def read_only_ops_change_nothing(before: State, step: Step, after: State) -> bool:
    """D-14, D-23, D-24: get, claimable and expirable never change the Book."""
    return step["op"] not in READ_ONLY_OPS or before == after


def counter_monotonic(before: State, step: Step, after: State) -> bool:
    """D-04: the id counter never goes back and never skips."""
    return after["next_id"] in (before["next_id"], before["next_id"] + 1)


def counter_advances_only_on_schedule(before: State, step: Step, after: State) -> bool:
    """D-04, D-17: exactly the successful schedules advance the counter."""
    advanced = after["next_id"] != before["next_id"]
    return advanced == (step["op"] == "schedule" and _succeeded(step))


def consumed_id_never_returns(before: State, step: Step, after: State) -> bool:
    """D-02, D-05: the only id that may appear is the one just allocated; with
    counter_monotonic this means a consumed id is absent forever."""
    appeared = set(_ids(after)) - set(_ids(before))
    return appeared <= {before["next_id"]}


def absent_id_is_not_found(before: State, step: Step, after: State) -> bool:
    """D-05: any valid op on an id that is not open answers not_found, so a second
    Claim of an id fails however long after the first."""
    if step["op"] not in CONSUMING_OPS | {"get"}:
        return True
    id = step["args"].get("id")
    if not _is_int(id) or id in _by_id(before):
        return True
    return step["result"].get("error") in ("not_found", "invalid")


def success_consumes_only_its_id(before: State, step: Step, after: State) -> bool:
    """D-02, D-22: a successful claim, cancel or expire removes exactly its own deferral,
    returns it as it was, and touches nothing else."""
    if step["op"] not in CONSUMING_OPS or not _succeeded(step):
        return True
    id = step["args"]["id"]
    remaining = [d for d in before["open"] if d["id"] != id]
    return (
        _by_id(before).get(id) == step["result"]["ok"]
        and after["open"] == remaining
        and after["next_id"] == before["next_id"]
        and after["max_open"] == before["max_open"]
    )


def schedule_adds_only_the_new_deferral(before: State, step: Step, after: State) -> bool:
    """D-03, D-22: a successful schedule appends one deferral under the counter's id and
    leaves every other deferral alone."""
    if step["op"] != "schedule" or not _succeeded(step):
        return True
    new = step["result"]["ok"]
    return new["id"] == before["next_id"] and after["open"] == before["open"] + [new]


def schedule_computes_window(before: State, step: Step, after: State) -> bool:
    """D-03, D-11: due_at = now + delay; expires_at = due_at + ttl, or 0 when ttl = 0;
    the owner is recorded as given."""
    if step["op"] != "schedule" or not _succeeded(step):
        return True
    new, args = step["result"]["ok"], step["args"]
    due_at = step["now"] + args["delay"]
    expires_at = 0 if args["ttl"] == 0 else due_at + args["ttl"]
    return (new["owner"], new["due_at"], new["expires_at"]) == (args["owner"], due_at, expires_at)


def schedule_full_only_at_cap(before: State, step: Step, after: State) -> bool:
    """D-07: schedule answers full exactly when valid and the Book is at its cap."""
    if step["op"] != "schedule" or step["result"].get("error") == "invalid":
        return True
    at_cap = len(before["open"]) >= before["max_open"]
    return (step["result"].get("error") == "full") == at_cap


def claim_obeys_window(before: State, step: Step, after: State) -> bool:
    """D-08, D-09, D-10, D-11: a valid claim of an open deferral is not_due before
    due_at, expired at or after a non-zero expires_at, and succeeds in between."""
    if step["op"] != "claim" or step["result"].get("error") == "invalid":
        return True
    deferral = _open_deferral(before, step)
    if deferral is None:
        return True
    now = step["now"]
    if now < deferral["due_at"]:
        expected = {"error": "not_due"}
    elif deferral["expires_at"] != 0 and now >= deferral["expires_at"]:
        expected = {"error": "expired"}
    else:
        expected = {"ok": deferral}
    return {k: v for k, v in step["result"].items() if k != "message"} == expected


def cancel_obeys_ownership(before: State, step: Step, after: State) -> bool:
    """D-12: a valid cancel of an open deferral succeeds exactly for its owner, whatever
    the time."""
    if step["op"] != "cancel" or step["result"].get("error") == "invalid":
        return True
    deferral = _open_deferral(before, step)
    if deferral is None:
        return True
    return _succeeded(step) == (step["args"].get("caller") == deferral["owner"])


def expire_obeys_expiry(before: State, step: Step, after: State) -> bool:
    """D-11, D-13: a valid expire of an open deferral succeeds exactly when it has a
    non-zero expires_at <= now."""
    if step["op"] != "expire" or step["result"].get("error") == "invalid":
        return True
    deferral = _open_deferral(before, step)
    if deferral is None:
        return True
    due = deferral["expires_at"] != 0 and step["now"] >= deferral["expires_at"]
    return _succeeded(step) == due


def claimable_lists_the_window(before: State, step: Step, after: State) -> bool:
    """D-23: claimable returns the first `limit` deferrals claimable at now, by (due_at, id)."""
    if step["op"] != "claimable" or not _succeeded(step):
        return True
    now = step["now"]
    window = sorted(
        (d for d in before["open"] if d["due_at"] <= now and (d["expires_at"] == 0 or now < d["expires_at"])),
        key=lambda d: (d["due_at"], d["id"]),
    )
    return step["result"]["ok"] == window[: step["args"]["limit"]]


def expirable_lists_the_late(before: State, step: Step, after: State) -> bool:
    """D-24: expirable returns the first `limit` deferrals expirable at now, by (expires_at, id)."""
    if step["op"] != "expirable" or not _succeeded(step):
        return True
    now = step["now"]
    late = sorted(
        (d for d in before["open"] if d["expires_at"] != 0 and d["expires_at"] <= now),
        key=lambda d: (d["expires_at"], d["id"]),
    )
    return step["result"]["ok"] == late[: step["args"]["limit"]]


TRANSITION_INVARIANTS: tuple[Callable[[State, Step, State], bool], ...] = (
    failure_changes_nothing,
    read_only_ops_change_nothing,
    counter_monotonic,
    counter_advances_only_on_schedule,
    consumed_id_never_returns,
    absent_id_is_not_found,
    success_consumes_only_its_id,
    schedule_adds_only_the_new_deferral,
    schedule_computes_window,
    schedule_full_only_at_cap,
    claim_obeys_window,
    cancel_obeys_ownership,
    expire_obeys_expiry,
    claimable_lists_the_window,
    expirable_lists_the_late,
)

"""What a linearizability search needs of schedules (duespec/systems/concurrent.py)."""

from __future__ import annotations

import sys
from operator import attrgetter

from duespec.model import schedules as model
from duespec.systems.concurrent import Concurrency, template_pattern
from duespec.systems.schedules.adapter import ModelTarget
from duespec.targets.interface import Json, comparable


def fork_model(target: ModelTarget) -> ModelTarget:
    """A copy whose state moves on alone: the state's dicts copied, their values shared.
    Every value in them is a frozen dataclass, and every effect of model/schedules/state.py
    replaces an entry rather than editing it, so sharing the values is safe."""
    assert target.state is not None, "reset() first"
    s = target.state
    # Built without the dataclasses' __init__: a search forks at every step it tries.
    state = object.__new__(model.ServerState)
    fields = state.__dict__
    fields.update(s.__dict__)
    # Every collection copied, whatever fields the state grows; `sent` is a log of what was
    # dispatched (never read by a handler), so a fork starts a log of its own.
    for name in _collections(s):
        fields[name] = fields[name].copy()
    model.forget_sent(state)
    copy = object.__new__(ModelTarget)
    copy.__dict__.update(target.__dict__)
    copy.state = state
    return copy


#: The state's fields that hold a collection (a dict or list), found on the first state forked.
_COLLECTIONS: list[tuple[str, ...]] = []


def _collections(state: model.ServerState) -> tuple[str, ...]:
    """The names of the state's collection fields. Every state has the same (each is made by
    its dataclass default factory and only ever replaced by another of its kind), so they
    are found once rather than tested at every fork."""
    if not _COLLECTIONS:
        _COLLECTIONS.append(tuple(name for name, value in state.__dict__.items() if isinstance(value, (dict, list))))
    return _COLLECTIONS[0]


#: The fields of an entry that the ops move, as StateKey hashes them (read in C: a key is
#: made at every step of a search).
_PROMISE_MOVES = attrgetter("id", "state", "settled_at", "timeout_at", "callbacks", "listeners")
_TASK_MOVES = attrgetter("id", "state", "version", "pid", "ttl", "resumes")
_SCHEDULE_MOVES = attrgetter("id", "next_run_at", "last_run_at")


class StateKey:
    """A schedules state as a memo key: its collections, compared as they are.

    The dicts are the state's own (a search never steps a target whose key it kept: it
    steps forks), so a key costs no copy. Two keys are equal when the states are (dict
    equality, the entries frozen dataclasses compared field by field, shared entries by
    identity first); the hash takes the fields of each entry that are hashable and that
    the ops move (a promise's state and settledAt, a task's every field, every timeout),
    so unequal states seldom collide."""

    __slots__ = ("parts", "_hash")

    def __init__(self, s: model.ServerState):
        self.parts = (s.promises, s.tasks, s.schedules, s.promise_timeouts, s.task_timeouts,
                      s.schedule_timeouts, s.outbox)
        # The entries hashed as tuples of their hashable fields: the dataclasses' own
        # hash would reach their dict fields (tags, values), which cannot be hashed.
        self._hash = hash((
            frozenset(map(_PROMISE_MOVES, s.promises.values())), frozenset(map(_TASK_MOVES, s.tasks.values())),
            frozenset(map(_SCHEDULE_MOVES, s.schedules.values())),
            frozenset(s.promise_timeouts.items()), frozenset(s.task_timeouts.items()),
            frozenset(s.schedule_timeouts.items()), frozenset(s.outbox)))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (type(other) is StateKey and self._hash == other._hash
                                 and self.parts == other.parts)

    def __sizeof__(self) -> int:
        """The dicts this key keeps alive (their entries are shared between states, and
        each step makes a few new ones: counted by the search per configuration)."""
        return object.__sizeof__(self) + sum(sys.getsizeof(part) for part in self.parts)


def state_key(target: ModelTarget) -> StateKey:
    assert target.state is not None, "reset() first"
    return StateKey(target.state)


def _ids(value: Json, field: str) -> list[str]:
    if type(value) is not list:
        raise TypeError(field)
    out = []
    for item in value:
        if type(item) is not dict or type(item.get(field)) is not str:
            raise TypeError(field)
        out.append(item[field])
    return out


def concurrent_keys(op: str, args: Json) -> frozenset[str] | None:
    """The state a call may read or write, by key: a promise and its task share their id
    ("p:" + id), a schedule is "s:" + id. A promise's settlement reaches its awaiters'
    tasks and its listeners only through callbacks registered by calls that name both
    ids (promise.register_callback, task.suspend), so those calls join the two keys.
    `tick` and the searches read everything: None. A request whose ids cannot be read is
    None too, though the model would refuse it unread: being wrong here costs speed only."""
    try:
        if type(args) is not dict:
            return None
        if op in ("promise.create", "promise.get", "promise.settle", "promise.timeout", "task.get",
                  "task.acquire", "task.fulfill", "task.release", "task.halt", "task.continue"):
            ids = [args["id"]]
        elif op == "promise.register_callback":
            ids = [args["awaited"], args["awaiter"]]
        elif op == "promise.register_listener":
            ids = [args["awaited"]]
        elif op == "task.create":
            ids = [args["action"]["id"]]
        elif op == "task.fence":
            ids = [args["id"], args["action"]["id"]]
        elif op == "task.heartbeat":
            ids = _ids(args["tasks"], "id")
        elif op == "task.suspend":
            ids = [args["id"], *_ids(args["actions"], "awaited"), *_ids(args["actions"], "awaiter")]
        elif op in ("schedule.create", "schedule.get", "schedule.delete", "schedule.timeout"):
            if type(args["id"]) is not str:
                return None
            return frozenset({"s:" + args["id"]})
        else:
            return None
    except (KeyError, TypeError):
        return None
    if not all(type(id) is str for id in ids):
        return None
    return frozenset(["p:" + id for id in ids])  # a list: a generator costs more than the set


def concurrent_links(calls: list[tuple[str, Json]], extra: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """A schedule joins every promise id its template could expand to: its occurrences
    create (and so read) those promises (model/schedules/catch_up.py). `extra`: keys only
    a tick's `fired` names (an occurrence whose timeout fired, never read by a call)."""
    patterns = []
    for op, args in calls:
        if op == "schedule.create" and type(args) is dict:
            pattern = template_pattern(args.get("promiseId"), args.get("id"))
            if pattern is not None:
                patterns.append((pattern, "s:" + args["id"]))
    if not patterns:
        return []
    promise_keys = {key for op, args in calls for key in (concurrent_keys(op, args) or ())
                    if key.startswith("p:")} | {key for key in extra if key.startswith("p:")}
    return [(schedule, key) for pattern, schedule in patterns for key in promise_keys
            if pattern.fullmatch(key[2:])]


def next_timer(observed: dict[str, Json]) -> int | None:
    """The earliest timeout due in an observed state (promise, task and schedule timeouts)."""
    due = [t["timeout"] for key in ("promiseTimeouts", "taskTimeouts", "scheduleTimeouts")
           for t in observed[key]]
    return min(due) if due else None


def fired_key(entry: Json) -> str | None:
    """The key a `fired` entry of a tick changed: a schedule's, or a promise's (its task's
    retry and lease share it); None for an entry of no known shape."""
    if type(entry) is not dict or type(entry.get("id")) is not str:
        return None
    if entry.get("kind") == "schedule":
        return "s:" + entry["id"]
    return "p:" + entry["id"] if entry.get("kind") in ("promise", "retry", "lease") else None


#: The searches: they read every key, unless they answer without reading (lean answers
#: them 501 whatever the state).
SEARCHES = ("promise.search", "task.search", "schedule.search")


def project_answer(op: str, answer: Json, keys: frozenset[str] | None) -> Json:
    """A tick's answer as far as `keys` go: its status, and the entries of `fired` on those
    keys, sorted. Sorted, because the order within one timer pass is the dispatcher's:
    docs/operations.md fixes one so two sequential runs compare, resonate-pg's passes take
    promises, then tasks, then schedules (examples/resonate-pg/declared.toml frees it), and
    entries on different keys land in different parts. What fired, and how often, is
    still compared. A search answered with no list (an error, lean's 501) read nothing: its
    answer, whole, on any keys. None for an answer that does not say what it touched."""
    if op in SEARCHES and type(answer) is dict and answer.get("status") != 200:
        return comparable(answer)
    if op != "tick" or type(answer) is not dict or type(answer.get("fired")) is not list:
        return None
    entries = answer["fired"]
    if any(fired_key(entry) is None for entry in entries):
        return None
    kept = [entry for entry in entries if keys is None or fired_key(entry) in keys]
    return {**answer, "fired": sorted(kept, key=lambda entry: (entry["id"], str(entry.get("kind"))))}


def fired_keys(op: str, answer: Json) -> frozenset[str] | None:
    """The keys a recorded tick says it changed (those of what it fired; none for a search
    answered without a list), or None when its answer does not say (an error, an entry of
    no known shape, another op)."""
    projected = project_answer(op, answer, None)
    if projected is None:
        return None
    if op in SEARCHES:
        return frozenset()
    return frozenset(key for entry in projected["fired"] if (key := fired_key(entry)) is not None)


CONCURRENCY = Concurrency(fork=fork_model, keys=concurrent_keys, links=concurrent_links,
                          next_timer=next_timer, tick="tick", state_key=state_key,
                          project=project_answer, touched=fired_keys)

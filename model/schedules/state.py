"""ServerState and its effects (Lean `01-objects/state.lean`), one function per effect.

The Lean keeps each collection as a list that its `set*` effects keep free of duplicate
ids (prepend after filtering out the old entry). A dict keyed by that id is the same
value with O(1) effects: `set_*` replaces the entry with the same key, `del_*` removes it.
Task timeouts are keyed by (id, kind); the outbox by `outbox_key`, as in the Lean.

Effect names map 1:1 to the Lean: getSchedule -> get_schedule, setPromiseTimeout ->
set_promise_timeout, setMessage -> set_message, and so on.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal, Mapping

PromiseState = Literal["pending", "resolved", "rejected", "rejected_canceled", "rejected_timedout"]
TaskState = Literal["pending", "acquired", "suspended", "halted", "fulfilled"]
Profile = Literal["lean", "server", "deployed"]
#: How a timer pass catches up a schedule that owes several occurrences (spec/schedules.md
#: "Catch-up policies"); `all` is the Lean's and the seed's normative reading.
CatchUp = Literal["all", "one-per-pass", "once-skip", "never"]
CATCH_UP_POLICIES: tuple[CatchUp, ...] = ("all", "one-per-pass", "once-skip", "never")
Tags = Mapping[str, str]

#: Lean TaskTimeout.kind: 0 = pending retry, 1 = lease expiration.
RETRY, LEASE = 0, 1


@dataclass(frozen=True)
class Value:
    headers: Tags = field(default_factory=dict)
    data: str | None = None


@dataclass(frozen=True)
class PromiseObject:
    id: str
    state: PromiseState
    param: Value
    tags: Tags
    timeout_at: int
    created_at: int
    value: Value = field(default_factory=Value)
    settled_at: int | None = None
    callbacks: tuple[str, ...] = ()
    listeners: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskObject:
    id: str
    state: TaskState
    version: int
    ttl: int | None = None
    pid: str | None = None
    resumes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Schedule:
    id: str
    cron: str
    promise_id: str
    promise_timeout: int
    promise_param: Value
    promise_tags: Tags
    next_run_at: int
    created_at: int
    last_run_at: int | None = None


@dataclass(frozen=True)
class Execute:
    task_id: str
    version: int


@dataclass(frozen=True)
class Unblock:
    promise: PromiseObject


Message = Execute | Unblock


@dataclass(frozen=True)
class OutboxEntry:
    address: str
    message: Message


def outbox_key(entry: OutboxEntry) -> str:
    """Lean OutboxEntry.key: one execute per task, one unblock per (promise, address)."""
    if isinstance(entry.message, Execute):
        return entry.message.task_id
    return f"{entry.message.promise.id}:notify:{entry.address}"


@dataclass(frozen=True)
class SentMessage:
    """One setMessage as a worker receives it (not Lean state): the entry, the spec branch
    that sent it, and (filled in when the log is read: observe.drain_sent) the branch that
    fulfilled its task later in the same step, if one did. Then the message is moot when it
    arrives: a server may withdraw it (docs/findings.md F-4), and a difference in it names
    both branches as its cause."""

    entry: OutboxEntry
    branch: str
    fulfilled_by: str | None = None


@dataclass(frozen=True)
class Config:
    retry_timeout: int = 5000
    #: Which reading of the past-due ambiguity catch-up follows (spec/schedules.md X-05).
    profile: Profile = "lean"
    #: Which catch-up policy a schedule timeout follows (spec/schedules.md, "Catch-up policies");
    #: profiles lean and server only (deployed's own is DEP-02).
    catch_up: CatchUp = "all"


@dataclass
class ServerState:
    config: Config = field(default_factory=Config)
    promises: dict[str, PromiseObject] = field(default_factory=dict)
    tasks: dict[str, TaskObject] = field(default_factory=dict)
    schedules: dict[str, Schedule] = field(default_factory=dict)
    promise_timeouts: dict[str, int] = field(default_factory=dict)
    task_timeouts: dict[tuple[str, int], int] = field(default_factory=dict)
    schedule_timeouts: dict[str, int] = field(default_factory=dict)
    outbox: dict[str, OutboxEntry] = field(default_factory=dict)
    #: Every message setMessage sent, in order, grouped by the transition that sent it (one
    #: request, or one timeout the environment fired): what a worker receives, which the
    #: outbox (upserted by key, never drained) cannot show. Not Lean state; read and emptied
    #: by `observe.drain_sent`, and never read by a handler.
    sent: list[list[SentMessage]] = field(default_factory=list)
    #: For each awaiter id, the promises whose callbacks name it: not Lean state, an index
    #: set_promise keeps, so that the settlement scrub visits those promises instead of every
    #: promise (a catch-up that times out a million occurrences in one tick settles each).
    named_in_callbacks: dict[str, frozenset[str]] = field(default_factory=dict)
    #: The tasks fulfilled since the messages log was last read, by the branch that did
    #: (SentMessage.fulfilled_by). Not Lean state, never read by a handler.
    fulfilled: dict[str, str] = field(default_factory=dict)


def new_state(config: Config | None = None) -> ServerState:
    """Lean ServerState.init."""
    return ServerState(config=config or Config())


# ---- tags (Lean Tags.get?, Tags.has, Tags.isTimer, PromiseObject.external) ----------

def tags_get(tags: Tags, key: str) -> str | None:
    return tags.get(key)


def tags_has(tags: Tags, key: str) -> bool:
    return tags_get(tags, key) is not None


def is_timer(tags: Tags) -> bool:
    return tags_get(tags, "resonate:timer") == "true"


def is_external(p: PromiseObject) -> bool:
    return tags_has(p.tags, "resonate:target") or is_timer(p.tags)


def add_callback(p: PromiseObject, awaiter_id: str) -> PromiseObject:
    """Lean PromiseObject.addCallback: appended once, in registration order."""
    return p if awaiter_id in p.callbacks else replace(p, callbacks=p.callbacks + (awaiter_id,))


def add_listener(p: PromiseObject, address: str) -> PromiseObject:
    """Lean PromiseObject.addListener."""
    return p if address in p.listeners else replace(p, listeners=p.listeners + (address,))


# ---- effects --------------------------------------------------------------------------

def get_promise(state: ServerState, id: str) -> PromiseObject | None:
    return state.promises.get(id)


def set_promise(state: ServerState, p: PromiseObject) -> None:
    old = state.promises.get(p.id)
    index = state.named_in_callbacks
    for awaiter in old.callbacks if old is not None else ():
        index[awaiter] = index[awaiter] - {p.id}
    for awaiter in p.callbacks:
        index[awaiter] = index.get(awaiter, frozenset()) | {p.id}
    state.promises[p.id] = p


def promises_naming_in_callbacks(state: ServerState, awaiter: str) -> list[PromiseObject]:
    """Every promise whose callbacks name `awaiter`, by id."""
    return [state.promises[id] for id in sorted(state.named_in_callbacks.get(awaiter, ()))]


def get_task(state: ServerState, id: str) -> TaskObject | None:
    return state.tasks.get(id)


def set_task(state: ServerState, t: TaskObject) -> None:
    state.tasks[t.id] = t


def get_schedule(state: ServerState, id: str) -> Schedule | None:
    return state.schedules.get(id)


def set_schedule(state: ServerState, s: Schedule) -> None:
    state.schedules[s.id] = s


def del_schedule(state: ServerState, id: str) -> None:
    state.schedules.pop(id, None)


def set_promise_timeout(state: ServerState, id: str, timeout: int) -> None:
    state.promise_timeouts[id] = timeout


def del_promise_timeout(state: ServerState, id: str) -> None:
    state.promise_timeouts.pop(id, None)


def set_task_timeout(state: ServerState, id: str, kind: int, timeout: int) -> None:
    state.task_timeouts[(id, kind)] = timeout


def del_task_timeout(state: ServerState, id: str) -> None:
    """Every kind: the Lean filters on the id alone."""
    for kind in (RETRY, LEASE):
        state.task_timeouts.pop((id, kind), None)


def set_schedule_timeout(state: ServerState, id: str, timeout: int) -> None:
    state.schedule_timeouts[id] = timeout


def del_schedule_timeout(state: ServerState, id: str) -> None:
    state.schedule_timeouts.pop(id, None)


def set_message(state: ServerState, address: str, message: Message, branch: str) -> None:
    """Lean setMessage; `branch`, the coverage tag of the branch sending it, goes with it
    into the messages log (SentMessage)."""
    entry = OutboxEntry(address, message)
    state.outbox[outbox_key(entry)] = entry
    if not state.sent:
        state.sent.append([])
    state.sent[-1].append(SentMessage(entry, branch))


def note_fulfilled(state: ServerState, task_id: str, branch: str) -> None:
    """Not Lean state: `branch` fulfilled the task, so the executes this step sent for it
    are moot (SentMessage.fulfilled_by)."""
    state.fulfilled[task_id] = branch


def forget_sent(state: ServerState) -> None:
    """Empty the messages log (a step starts, a step is taken back, a search forks)."""
    state.sent = []
    state.fulfilled = {}


def begin_transition(state: ServerState) -> None:
    """The messages sent from here on come from another cause (a timeout the environment
    fires): their order relative to the earlier ones is not the spec's to fix."""
    if state.sent and state.sent[-1]:
        state.sent.append([])

"""Resonate schedules' model and implementation behind the JSON contract of
docs/operations.md: the config both read, the harness's bound on one step's catch-up, and
the implementation's store reopened as a restarted server would reopen it."""

from __future__ import annotations

import os
import pickle
from typing import TYPE_CHECKING

from duespec.limits import MAX_CATCH_UP_OCCURRENCES, LimitExceeded
from duespec.model import schedules as model
from duespec.model.schedules.clock import MAX_DURATION, MAX_TIME
from duespec.model.schedules.state import CATCH_UP_POLICIES
from duespec.targets.interface import Json

if TYPE_CHECKING:
    from duespec.impl.schedules import ScheduleServer

PROFILES = ("lean", "server", "deployed")
DEFAULT_RETRY_TIMEOUT = 5000

MINUTE, HOUR, DAY = 60_000, 3_600_000, 86_400_000


def config_of(config: dict[str, Json]) -> model.Config:
    """operations.md config: {"profile": "lean" | "server" | "deployed", "retry_timeout": int,
    "catch_up": "all" | "one-per-pass" | "once-skip" | "never"}."""
    unknown = set(config) - {"profile", "retry_timeout", "catch_up"}
    if unknown:
        raise ValueError(f"schedules config takes profile, retry_timeout and catch_up, not {sorted(unknown)}")
    profile = config.get("profile", "lean")
    retry_timeout = config.get("retry_timeout", DEFAULT_RETRY_TIMEOUT)
    catch_up = config.get("catch_up", "all")
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    if type(retry_timeout) is not int or not 1 <= retry_timeout <= MAX_DURATION:
        raise ValueError(f"retry_timeout must be an integer in [1, {MAX_DURATION}] (0 would re-arm a "
                         f"retry due at once, forever), got {retry_timeout!r}")
    problem = catch_up_problem(profile, catch_up)
    if problem:
        raise ValueError(problem)
    return model.Config(retry_timeout=retry_timeout, profile=profile, catch_up=catch_up)


def catch_up_problem(profile: object, catch_up: object) -> str | None:
    """Why a catch-up policy cannot go with a profile (spec/schedules.md, "Catch-up policies"), or None."""
    if catch_up not in CATCH_UP_POLICIES:
        return f"catch_up must be one of {', '.join(CATCH_UP_POLICIES)}, got {catch_up!r}"
    if profile == "deployed" and catch_up != "all":
        return ("catch_up applies to profiles lean and server: profile deployed fires one occurrence "
                "per pass, as the deployed server does (DEP-02)")
    return None


class ModelTarget:
    """The reference model behind the JSON contract."""

    def __init__(self) -> None:
        self.state: model.ServerState | None = None
        #: observe() of the current state: only step() and reset() change it.
        self.observed: dict[str, Json] | None = None

    def reset(self, config: dict[str, Json]) -> None:
        self.state, self.observed = model.new_state(config_of(config)), None

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        assert self.state is not None, "reset() first"
        if op in ("tick", "schedule.timeout"):
            refuse_long_catch_up(self.state, op, args, now)
        self.observed = None
        model.forget_sent(self.state)  # messages() tells one step's: the log never outgrows a step
        return model.step(self.state, op, args, now)

    def snapshot(self) -> bytes:
        """The Target hook (duespec.targets.interface.TargetBase.snapshot): the state,
        pickled (a fifth of a deep copy's cost, and only restore() pays the rest)."""
        assert self.state is not None, "reset() first"
        return pickle.dumps(self.state, pickle.HIGHEST_PROTOCOL)

    def restore(self, saved: bytes) -> None:
        """Back to `saved`, a snapshot(): what the steps since then did is taken back,
        their messages too (the step was never taken, so it sent nothing)."""
        self.state, self.observed = pickle.loads(saved), None
        model.forget_sent(self.state)

    def message_groups(self, keyed: bool = False) -> list[list[tuple[Json, tuple[str, ...]]]]:
        """The messages the latest step sent, grouped by the transition that sent them (a
        request, or one timeout a tick fired), each with its cause: the branch that sent
        it, and the one that fulfilled its task later in the step, if one did. The judge
        compares the order within a group and leaves the order between groups free
        (duespec.judge.messages_verdict). `keyed`: as a worker polling the outbox after
        the step receives them (TargetBase.messages_keyed): one per key, where the key was
        first written, as last written."""
        assert self.state is not None, "reset() first"
        groups = model.drain_sent(self.state)
        if keyed:
            groups = polled(groups)
        return [[(model.outbox_entry_json(sent.entry), tuple(sorted(filter(None, {sent.branch, sent.fulfilled_by}))))
                 for sent in group] for group in groups if group]

    def messages(self) -> list[Json]:
        """The Target hook (duespec.targets.interface.TargetBase.messages): the messages
        sent since the last call, in order."""
        return [message for group in self.message_groups() for message, _ in group]

    def observe(self) -> dict[str, Json]:
        assert self.state is not None, "reset() first"
        if self.observed is None:
            self.observed = model.observe(self.state)
        return self.observed

    def close(self) -> None:
        self.state = None


def polled(groups: list[list[model.SentMessage]]) -> list[list[model.SentMessage]]:
    """What a worker polling the outbox after the step receives: one message per key,
    where the key was first written (a keyed row keeps its place), as last written."""
    last = {model.outbox_key(sent.entry): sent for group in groups for sent in group}
    first: list[list[model.SentMessage]] = []
    for group in groups:
        first.append([])
        for sent in group:
            key = model.outbox_key(sent.entry)
            if key in last:
                first[-1].append(last.pop(key))
    return first


def refuse_long_catch_up(state: model.ServerState, op: str, args: Json, now: Json) -> None:
    """LimitExceeded, before the model starts, if this step would fire more than
    MAX_CATCH_UP_OCCURRENCES occurrences in all (the model runs ~10^4 a second, so a
    minutely schedule ticked at year 9999 would take days). The model itself has no bound:
    this is the harness's, documented in README.md ("Limits"); the machine stays far below."""
    if type(now) is not int or not isinstance(args, dict) or now > MAX_TIME:
        return  # the contract answers 400 and fires nothing
    if state.config.catch_up != "all":
        return  # every other policy fires at most one occurrence per schedule a step
    if op == "tick":
        owed = [state.schedules[id] for id, due in state.schedule_timeouts.items()
                if due <= now and id in state.schedules]
    else:
        found = state.schedules.get(args["id"]) if isinstance(args.get("id"), str) else None
        owed = [found] if found is not None else []
    owed = [s for s in owed if s.next_run_at <= now]
    if sum((now - s.next_run_at) // MINUTE + 1 for s in owed) <= MAX_CATCH_UP_OCCURRENCES:
        return  # a cron fires at most once a minute: no need to count
    from duespec.impl.schedules import occurrences_due  # here: the model's path never needs impl/ otherwise

    budget = MAX_CATCH_UP_OCCURRENCES
    for s in owed:
        budget -= occurrences_due(s.cron, s.next_run_at, now, budget)
        if budget < 0:
            raise LimitExceeded(f"{op} at now={now} would fire more than {MAX_CATCH_UP_OCCURRENCES:,} "
                                f"schedule occurrences (the limit on one step's catch-up)")


#: How often the `server` profile's store file is reopened, in steps (see ImplTarget).
RESTART_EVERY = 16
#: Where those store files live: in memory where the machine has a tmpfs (a file store
#: syncs every commit to disk), else the system's temporary directory.
STORE_DIR = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


class ImplTarget:
    """duespec.impl.schedules behind the JSON contract.

    The lean and deployed profiles run on an in-memory store. The server profile, the one
    that reads like a running server, runs on a store file that is reopened every
    RESTART_EVERY steps as a restarted server would reopen it: alternately naming its
    config and naming none (the file keeps its own). Before each reopen a second server
    must be refused the open file (StoreInUse, naming this process). The answers and the
    state after a reopen are compared like any others.

    `server` may be a subclass of ScheduleServer: the mutation tests plant bugs that way."""

    def __init__(self, server: type[ScheduleServer] | None = None) -> None:
        # impl/ imported here, not at the top: a model-only user (`duespec linearize`) never pays for it
        from duespec.impl.schedules import ScheduleServer

        self.server_class = server or ScheduleServer
        self.server: ScheduleServer | None = None
        self.scratch: str | None = None
        self.path, self.config, self.steps = ":memory:", model.Config(), 0

    def reset(self, config: dict[str, Json]) -> None:
        self.close()
        self.config, self.steps = config_of(config), 0
        if self.config.profile == "server":
            import tempfile  # the server profile's store only: the model's path never needs it

            self.scratch = tempfile.mkdtemp(prefix="duespec-store-", dir=STORE_DIR)
            self.path = os.path.join(self.scratch, "store.db")
        try:
            self.server = self.open(named=True)
        except BaseException:  # a server that cannot open leaves no store file behind
            self.close()
            raise

    def open(self, *, named: bool) -> ScheduleServer:
        if not named:
            return self.server_class(self.path)
        return self.server_class(self.path, profile=self.config.profile, retry_timeout=self.config.retry_timeout,
                                 catch_up=self.config.catch_up)

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        assert self.server is not None, "reset() first"
        self.steps += 1
        if self.scratch is not None and self.steps % RESTART_EVERY == 0:
            self.restart(named=self.steps % (2 * RESTART_EVERY) == 0)
        return self.server.handle(op, args, now)

    def restart(self, *, named: bool) -> None:
        from duespec.impl.schedules_sql import StoreInUse

        assert self.server is not None
        try:
            second = self.open(named=True)
        except StoreInUse as refused:
            if f"pid {os.getpid()}" not in str(refused):
                raise AssertionError(f"StoreInUse does not name the owner (pid {os.getpid()}): {refused}") from None
        else:
            second.close()
            raise AssertionError(f"a second server opened the store file {self.path} while it was open")
        self.server.close()
        self.server = None
        self.server = self.open(named=named)

    def observe(self) -> dict[str, Json]:
        assert self.server is not None, "reset() first"
        return self.server.observe()

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
        if self.scratch is not None:
            import shutil

            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch, self.path = None, ":memory:"

"""Recorded traces: a versioned JSON Lines format, a streaming writer and a strict reader.

A trace is the unit everything else exchanges: a failing campaign writes one, `duespec
replay` re-runs one against any target, ITF converts to and from one, and the files under
traces/ are regression tests. It is read line by line, so a trace of a million steps is
replayed in constant memory. The format is documented in docs/traces.md.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

from duespec.systems import NAMES, get_system

Json = Any

#: The version this code writes and the only one it reads.
FORMAT_VERSION = 1

_REQUIRED_STEP_KEYS = ("i", "op", "args", "now")
_OPTIONAL_STEP_KEYS = ("result", "state")
_HEADER_KEYS = ("duespec_trace", "system", "profile", "config", "seed", "producer", "created")


class TraceError(ValueError):
    """A trace that is not well formed; the message names the file, the line and the problem."""

    def __init__(self, where: str, line: int | None, problem: str):
        self.where, self.line, self.problem = where, line, problem
        place = f"{where}:{line}" if line is not None else where
        super().__init__(f"{place}: {problem}")


@dataclass(frozen=True)
class TraceHeader:
    """Line 1 of a trace: everything needed to start the same fresh instance again."""

    system: str
    profile: str
    config: dict[str, Json]
    seed: int | None = None
    #: Who wrote the trace, e.g. "duespec check 0.1.0" or "itf import of bank.itf.json".
    producer: str = "duespec"
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    #: Free-form metadata (a failure message, a description); kept, never interpreted.
    extra: dict[str, Json] = field(default_factory=dict)

    def to_json(self) -> dict[str, Json]:
        return {"duespec_trace": FORMAT_VERSION, "system": self.system, "profile": self.profile,
                "config": self.config, "seed": self.seed, "producer": self.producer,
                "created": self.created, **self.extra}

    @classmethod
    def from_json(cls, value: Json, where: str = "<header>", line: int | None = 1) -> TraceHeader:
        """Validate a header object; raise TraceError naming the first problem."""
        def fail(problem: str) -> TraceError:
            return TraceError(where, line, f"header: {problem}")

        if not isinstance(value, dict):
            raise fail(f"expected a JSON object, got {_kind(value)}")
        if "duespec_trace" not in value:
            raise fail('missing "duespec_trace" (the format version); is this a duespec trace?')
        version = value["duespec_trace"]
        if version != FORMAT_VERSION or isinstance(version, bool):
            raise fail(f"unsupported format version {json.dumps(version)}; this duespec reads version "
                       f"{FORMAT_VERSION}")
        for key in _HEADER_KEYS:
            if key not in value:
                raise fail(f'missing key "{key}"')
        system, profile, config = value["system"], value["profile"], value["config"]
        seed, producer, created = value["seed"], value["producer"], value["created"]
        if not isinstance(system, str) or system not in NAMES:
            raise fail(f"unknown system {json.dumps(system)}; known: {', '.join(NAMES)}")
        if not isinstance(profile, str) or not profile:
            raise fail(f'"profile" must be a non-empty string, got {_kind(profile)}')
        if not isinstance(config, dict):
            raise fail(f'"config" must be a JSON object, got {_kind(config)}')
        if seed is not None and not _is_int(seed):
            raise fail(f'"seed" must be an integer or null, got {_kind(seed)}')
        for key, text in (("producer", producer), ("created", created)):
            if not isinstance(text, str):
                raise fail(f'"{key}" must be a string, got {_kind(text)}')
        extra = {k: v for k, v in value.items() if k not in _HEADER_KEYS}
        return cls(system, profile, config, seed, producer, created, extra)


def check_step(step: Json, expected_i: int, where: str, line: int | None) -> dict[str, Json]:
    """Validate one step object against the format; return it unchanged."""
    def fail(problem: str) -> TraceError:
        return TraceError(where, line, f"step: {problem}")

    if not isinstance(step, dict):
        raise fail(f"expected a JSON object, got {_kind(step)}")
    for key in _REQUIRED_STEP_KEYS:
        if key not in step:
            raise fail(f'missing key "{key}"')
    unknown = sorted(set(step) - set(_REQUIRED_STEP_KEYS) - set(_OPTIONAL_STEP_KEYS))
    if unknown:
        raise fail(f"unknown key(s) {', '.join(map(json.dumps, unknown))}; a step has "
                   f"{', '.join(_REQUIRED_STEP_KEYS + _OPTIONAL_STEP_KEYS)}")
    i, op = step["i"], step["op"]
    if not _is_int(i):
        raise fail(f'"i" must be an integer, got {_kind(i)}')
    if i != expected_i:
        raise fail(f'"i" is {i} where {expected_i} was expected (steps are numbered 0, 1, 2, ... '
                   f"with no gaps)")
    if not isinstance(op, str):
        raise fail(f'"op" must be a string, got {_kind(op)}')
    # An unknown op, args that are not an object, a `now` that is not an integer: each is
    # a request the contract answers (400, invalid), so a trace carries it verbatim.
    for key in _OPTIONAL_STEP_KEYS:
        if key in step and not isinstance(step[key], dict):
            raise fail(f'"{key}" must be a JSON object, got {_kind(step[key])}')
    return step


def read_trace(path: str | os.PathLike[str]) -> tuple[TraceHeader, Iterator[dict[str, Json]]]:
    """The header now, and the steps lazily, one validated line at a time.

    The header is checked before this returns; a problem in a later line raises TraceError
    when iteration reaches it, so a replay reports every step before the broken one."""
    where = str(path)
    try:
        handle = open(path, "rb")
    except OSError as error:
        raise TraceError(where, None, f"cannot open: {error.strerror or error}") from None
    try:
        first = handle.readline()
        if not first:
            raise TraceError(where, 1, "empty file; a trace starts with a header line")
        header = TraceHeader.from_json(_parse(first, where, 1), where, 1)
    except BaseException:
        handle.close()
        raise
    return header, _steps(handle, where)


def _steps(handle: Any, where: str) -> Iterator[dict[str, Json]]:
    with handle:
        for index, text in enumerate(handle):
            line = index + 2
            yield check_step(_parse(text, where, line), index, where, line)


def _parse(text: bytes, where: str, line: int) -> Json:
    if not text.strip():
        raise TraceError(where, line, "blank line; every line of a trace is one JSON object")
    try:
        return json.loads(text.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise TraceError(where, line, f"not UTF-8: byte {error.object[error.start]:#04x} at column "
                                      f"{error.start + 1}") from None
    except json.JSONDecodeError as error:
        raise TraceError(where, line, f"not JSON: {error.msg} at column {error.colno}") from None
    except RecursionError:
        raise TraceError(where, line, "not JSON: nested too deeply") from None


class TraceWriter:
    """Streams a trace to disk, checking each step as it goes.

    The file appears under its final name only when the writer closes without error, so
    an interrupted run never leaves a half-written trace where the corpus would pick it up.
    """

    def __init__(self, path: str | os.PathLike[str], header: TraceHeader | dict[str, Json]):
        self.path = Path(path)
        self.header = header if isinstance(header, TraceHeader) else TraceHeader.from_json(header, str(path), None)
        self.count = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._partial = self.path.with_name(self.path.name + ".partial")
        self._handle = open(self._partial, "w", encoding="utf-8")
        self._handle.write(_dump(self.header.to_json(), str(path)) + "\n")

    def write(self, step: dict[str, Json]) -> None:
        check_step(step, self.count, str(self.path), None)
        self._handle.write(_dump(step, str(self.path)) + "\n")
        self.count += 1

    def close(self) -> None:
        if not self._handle.closed:
            self._handle.close()
            os.replace(self._partial, self.path)

    def abandon(self) -> None:
        if not self._handle.closed:
            self._handle.close()
        self._partial.unlink(missing_ok=True)

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.close()
        else:
            self.abandon()


def write_trace(path: str | os.PathLike[str], header: TraceHeader | dict[str, Json],
                steps: Iterable[dict[str, Json]]) -> Path:
    """Write a whole trace (steps may be a generator); return its path."""
    with TraceWriter(path, header) as writer:
        for step in steps:
            writer.write(step)
    return writer.path


def _dump(value: Json, where: str) -> str:
    try:
        return json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise TraceError(where, None, f"not representable as JSON: {error}") from None


def _is_int(value: Json) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _kind(value: Json) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {json.dumps(value)[:60]}"
    if isinstance(value, list):
        return "a list"
    return "an object"


# --- recording from the model, and the regression corpus ---------------------------------

#: One scripted step: operation, arguments, logical time.
Call = tuple[str, dict[str, Json], int]


def record(system: str, config: dict[str, Json], script: Iterable[Call]) -> Iterator[dict[str, Json]]:
    """Run `script` on a fresh model; yield each step with the model's response as its result."""
    model = get_system(system).model()
    model.reset(dict(config))
    try:
        for i, (op, args, now) in enumerate(script):
            yield {"i": i, "op": op, "args": args, "now": now, "result": model.step(op, args, now)}
    finally:
        model.close()


@dataclass(frozen=True)
class Scenario:
    """A corpus trace: a named, commented script recorded from the model."""

    system: str
    name: str
    why: str
    script: tuple[Call, ...]
    #: Profiles to record it under (one file each); the system's first when empty.
    profiles: tuple[str, ...] = ()
    config: dict[str, Json] | None = None


def _duebook_scenarios() -> list[Scenario]:
    owner = {"owner": "alice"}
    def schedule(delay: int, ttl: int, now: int, who: str = "alice") -> Call:
        return ("schedule", {"owner": who, "delay": delay, "ttl": ttl}, now)

    int64_max = 2**63 - 1
    return [
        Scenario("duebook", "window_edges",
                 "Claimable on [due_at, expires_at): one tick early is not_due, expires_at is "
                 "expired; expire is refused one tick early and allowed at expires_at.",
                 (schedule(10, 5, 100),                       # id 1: window [110, 115)
                  ("claim", {"id": 1}, 109), ("claim", {"id": 1}, 110),
                  schedule(10, 5, 100),                       # id 2
                  ("claim", {"id": 2}, 114),
                  schedule(10, 5, 100),                       # id 3
                  ("claim", {"id": 3}, 115), ("expire", {"id": 3}, 114), ("expire", {"id": 3}, 115),
                  ("get", {"id": 3}, 115))),
        Scenario("duebook", "never_expires",
                 "ttl 0 means expires_at 0 and no expiry at all, even at the end of time.",
                 (schedule(5, 0, 0), ("expire", {"id": 1}, int64_max),
                  ("expirable", {"limit": 10}, int64_max), ("claim", {"id": 1}, int64_max))),
        Scenario("duebook", "ids_never_reused",
                 "A consumed id is gone for good: a new schedule takes the next id, and every "
                 "later call on the old one is not_found; only the owner may cancel.",
                 (schedule(1, 0, 0), ("cancel", {"id": 1, "caller": "mallory"}, 0),
                  ("cancel", {"id": 1, "caller": "alice"}, 0), schedule(1, 0, 0),
                  ("claim", {"id": 1}, 5), ("get", {"id": 1}, 5), ("cancel", {"id": 1, "caller": "alice"}, 5),
                  ("claim", {"id": 2}, 5), ("claim", {"id": 2}, 5), ("get", {"id": 2}, 5))),
        Scenario("duebook", "full_book",
                 "The cap counts open deferrals: a refused schedule allocates no id, and "
                 "consuming one frees a place.",
                 (schedule(0, 0, 0), schedule(0, 0, 0), schedule(0, 0, 0, "bob"),
                  ("claimable", {"limit": 5}, 0), ("claim", {"id": 1}, 0),
                  schedule(0, 0, 0, "bob"), ("get", {"id": 3}, 0)),
                 config={"max_open": 2}),
        Scenario("duebook", "bad_input_changes_nothing",
                 "Every malformed request is invalid and leaves the book, id counter included, "
                 "exactly as it was.",
                 (("schedule", {**owner, "delay": -1, "ttl": 0}, 0),
                  ("schedule", {"owner": "", "delay": 0, "ttl": 0}, 0),
                  ("schedule", {**owner, "delay": int64_max, "ttl": 0}, 1),
                  ("schedule", {**owner, "delay": 0, "ttl": 0}, -1),
                  ("claim", {"id": True}, 0), ("claim", {"id": 1.0}, 0), ("get", {"id": "1"}, 0),
                  ("claimable", {"limit": -1}, 0), ("claim", {"id": 1}, "5"), ("claim", {"id": 1}, True),
                  ("expire", {"id": 1}, int64_max + 1), schedule(0, 0, 0))),
        Scenario("duebook", "listings_in_order",
                 "claimable is by (due_at, id) and expirable by (expires_at, id), both capped by limit.",
                 (schedule(30, 10, 0), schedule(10, 50, 0), schedule(10, 5, 0), schedule(20, 0, 0),
                  ("claimable", {"limit": 10}, 30), ("claimable", {"limit": 1}, 30),
                  ("expirable", {"limit": 10}, 100), ("expirable", {"limit": 1}, 100),
                  ("claimable", {"limit": 0}, 30)),
                 config={"max_open": 5}),
    ]


def _schedules_scenarios() -> list[Scenario]:
    start = 1_767_225_600_000  # 2026-01-01T00:00:00Z, on a minute
    minute = 60_000

    def create(id: str, cron: str, timeout: int, now: int, tags: dict[str, str] | None = None) -> Call:
        return ("schedule.create", {"id": id, "cron": cron, "promiseId": "{{.id}}.{{.timestamp}}",
                                    "promiseTimeout": timeout,
                                    "promiseParam": {"headers": {}, "data": None},
                                    "promiseTags": tags or {}}, now)

    both = ("lean", "server")
    return [
        Scenario("schedules", "crud",
                 "create is idempotent (the stored schedule comes back, the body is ignored); "
                 "delete removes the schedule and its timeout; search is 501.",
                 (create("s", "*/5 * * * *", minute, start), create("s", "0 0 * * *", 1, start + 1),
                  ("schedule.get", {"id": "s"}, start + 2), ("schedule.delete", {"id": "s"}, start + 3),
                  ("schedule.get", {"id": "s"}, start + 4), ("schedule.delete", {"id": "s"}, start + 5),
                  ("schedule.search", {}, start + 6))),
        Scenario("schedules", "catch_up_after_outage",
                 "After five minutes down, one tick fires each missed occurrence once, in order, "
                 "then the schedule waits for the next minute.",
                 (create("every-minute", "* * * * *", 10 * minute, start),
                  ("tick", {}, start + 5 * minute + 30_000),
                  ("promise.get", {"id": f"every-minute.{start + minute}"}, start + 5 * minute + 30_000),
                  ("promise.get", {"id": f"every-minute.{start + 5 * minute}"}, start + 5 * minute + 30_000),
                  ("promise.get", {"id": f"every-minute.{start + 6 * minute}"}, start + 5 * minute + 30_000),
                  ("schedule.get", {"id": "every-minute"}, start + 5 * minute + 30_000),
                  ("tick", {}, start + 5 * minute + 40_000))),
        Scenario("schedules", "expired_at_creation",
                 "A long outage with a short promiseTimeout: each late occurrence is past its "
                 "timeout when catch-up creates it. lean creates it pending at cronTime and then "
                 "times it out; server creates it already settled, with no task dispatched.",
                 (create("late", "* * * * *", 1000, start, {"resonate:target": "poll://any@workers"}),
                  ("tick", {}, start + 3 * minute + 5000),
                  ("promise.get", {"id": f"late.{start + minute}"}, start + 3 * minute + 5000)),
                 profiles=both),
        Scenario("schedules", "malformed_requests",
                 "An unknown op, args that are no object, extra keys, a `now` that is no integer "
                 "or out of range: each is 400 and changes nothing.",
                 (create("s", "* * * * *", minute, start),
                  ("warp", {}, start), ("schedule.get", None, start), ("schedule.get", {"id": "s", "extra": 1}, start),
                  ("schedule.get", {"id": "s"}, 1.5), ("tick", {}, True), ("tick", {}, -1),
                  ("tick", {}, 253_402_300_800_000), ("schedule.create", {"id": "a.b"}, start),
                  ("schedule.get", {"id": "s"}, start))),
        Scenario("schedules", "promise_timeouts",
                 "A pending promise times out at timeoutAt (rejected_timedout); a timer resolves.",
                 (("promise.create", {"id": "p", "timeoutAt": start + 100, "param": {"headers": {}, "data": None},
                                      "tags": {}}, start),
                  ("promise.create", {"id": "t", "timeoutAt": start + 200, "param": {"headers": {}, "data": "x"},
                                      "tags": {"resonate:timer": "true"}}, start),
                  ("promise.get", {"id": "p"}, start + 99), ("promise.get", {"id": "p"}, start + 100),
                  ("tick", {}, start + 300), ("promise.get", {"id": "t"}, start + 300))),
    ]


def corpus_scenarios() -> list[Scenario]:
    return _duebook_scenarios() + _schedules_scenarios()


def write_corpus(root: str | os.PathLike[str], systems: Iterable[str] = NAMES) -> list[Path]:
    """(Re)record every scenario of `systems` from the model into root/<system>/<name>.jsonl.

    A file whose header and steps would come out the same is left alone, so re-recording
    after a model change shows exactly the traces whose answers moved. Returns those written."""
    written = []
    wanted = set(systems)
    for scenario in corpus_scenarios():
        if scenario.system not in wanted:
            continue
        descriptor = get_system(scenario.system)
        profiles = scenario.profiles or descriptor.profiles[:1]
        for profile in profiles:
            config = scenario.config if scenario.config is not None else descriptor.config(profile)
            suffix = f"-{profile}" if len(profiles) > 1 else ""
            header = TraceHeader(scenario.system, profile, config, producer="duespec corpus (model)",
                                 extra={"scenario": scenario.name, "why": scenario.why})
            path = Path(root) / scenario.system / f"{scenario.name}{suffix}.jsonl"
            steps = list(record(scenario.system, config, scenario.script))
            if not _same_trace(path, header, steps):
                written.append(write_trace(path, header, steps))
    return written


def _same_trace(path: Path, header: TraceHeader, steps: list[dict[str, Json]]) -> bool:
    if not path.exists():
        return False
    try:
        old_header, old_steps = read_trace(path)
        same_header = {**old_header.to_json(), "created": None} == {**header.to_json(), "created": None}
        return same_header and list(old_steps) == steps
    except TraceError:
        return False


if __name__ == "__main__":  # python -m duespec.traces [ROOT] [SYSTEM...]: re-record the corpus
    import sys

    changed = write_corpus(sys.argv[1] if len(sys.argv) > 1 else "traces", sys.argv[2:] or NAMES)
    for written_path in changed:
        print(f"wrote {written_path}")
    print(f"{len(changed)} trace(s) written; the others are unchanged")

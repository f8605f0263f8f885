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
from typing import Any, Generator, Iterable, Iterator

import orjson

from duespec.limits import (MAX_DEPTH, MAX_LINE_BYTES, ORJSON_SHAPE, InputError, check_line_length,
                            open_regular, orjson_exact, parse_json, read_line, text_problem)
from duespec.outputs import AtomicFile
from duespec.systems import get_system, names

Json = Any

#: The version this code writes and the only one it reads.
FORMAT_VERSION = 1

_REQUIRED_STEP_KEYS = ("i", "op", "args", "now")
_OPTIONAL_STEP_KEYS = ("result", "state")
_STEP_KEYS = frozenset(_REQUIRED_STEP_KEYS + _OPTIONAL_STEP_KEYS)
_A_DICT: dict[str, Json] = {}
#: The keys every header has; any other is free-form metadata (TraceHeader.extra).
TRACE_HEADER_KEYS = ("duespec_trace", "system", "profile", "config", "seed", "producer", "created")
#: The one key of a reset line: `{"reset": CONFIG}` starts the instance again in the middle
#: of a trace, so one trace can show state that survives a reset.
RESET_KEY = "reset"


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
        if type(version) is not int or version != FORMAT_VERSION:  # 1.0 and true are no version
            raise fail(f"unsupported format version {json.dumps(version)}; this duespec reads version "
                       f"{FORMAT_VERSION}")
        for key in TRACE_HEADER_KEYS:
            if key not in value:
                raise fail(f'missing key "{key}"')
        system, profile, config = value["system"], value["profile"], value["config"]
        seed, producer, created = value["seed"], value["producer"], value["created"]
        if not isinstance(system, str) or system not in names():
            raise fail(f"unknown system {json.dumps(system)}; known: {', '.join(names())}")
        if not isinstance(profile, str) or not profile:
            raise fail(f'"profile" must be a non-empty string, got {_kind(profile)}')
        if not isinstance(config, dict):
            raise fail(f'"config" must be a JSON object, got {_kind(config)}')
        if "profile" in config and config["profile"] != profile:
            # The config's is the reading that runs; a report would name the header's.
            raise fail(f'"profile" {json.dumps(profile)[:100]} disagrees with the config\'s "profile" '
                       f'{json.dumps(config["profile"])[:100]}; make them the same')
        if seed is not None and not _is_int(seed):
            raise fail(f'"seed" must be an integer or null, got {_kind(seed)}')
        for key, text in (("producer", producer), ("created", created)):
            if not isinstance(text, str):
                raise fail(f'"{key}" must be a string, got {_kind(text)}')
        extra = {k: v for k, v in value.items() if k not in TRACE_HEADER_KEYS}
        return cls(system, profile, config, seed, producer, created, extra)


def check_step(step: Json, expected_i: int, where: str, line: int | None) -> dict[str, Json]:
    """Validate one step object against the format; return it unchanged."""
    if _well_formed(step, expected_i):
        return step  # the usual well-formed step, checked in a few C calls
    def fail(problem: str) -> TraceError:
        return TraceError(where, line, f"step: {problem}")

    if not isinstance(step, dict):
        raise fail(f"expected a JSON object, got {_kind(step)}")
    for key in _REQUIRED_STEP_KEYS:
        if key not in step:
            raise fail(f'missing key "{key}"')
    unknown = [] if _STEP_KEYS.issuperset(step) else sorted(set(step) - _STEP_KEYS)
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


def check_reset(line: Json, where: str, line_number: int | None) -> dict[str, Json]:
    """Validate a reset line, `{"reset": CONFIG}` and nothing else; return it unchanged."""
    def fail(problem: str) -> TraceError:
        return TraceError(where, line_number, f"reset: {problem}")

    if not isinstance(line, dict) or RESET_KEY not in line:
        raise fail(f'expected an object {{"reset": CONFIG}}, got {_kind(line)}')
    others = sorted(set(line) - {RESET_KEY})
    if others:
        raise fail(f'a reset line has the one key "reset" (the config to start again with), but this one '
                   f"also has {', '.join(map(json.dumps, others))}; a step and a reset are separate lines")
    if not isinstance(line[RESET_KEY], dict):
        raise fail(f'"reset" must be the config to start again with, a JSON object, got {_kind(line[RESET_KEY])}')
    return line


def is_reset(line: dict[str, Json]) -> bool:
    """Whether a line read_trace yielded is a reset line rather than a step (steps have "i")."""
    return "i" not in line


def read_trace(path: str | os.PathLike[str]) -> tuple[TraceHeader, Generator[dict[str, Json], None, None]]:
    """The header now, and the steps lazily, one validated line at a time (close() the
    generator to close the file before reading to its end).

    The iterator yields each step, and each reset line as read (`{"reset": CONFIG}`, the
    only line without "i"; is_reset tells). The header is checked before this returns; a
    problem in a later line raises TraceError when iteration reaches it, so a replay
    reports every step before the broken one."""
    where = str(path)
    try:
        handle = open_regular(path)
    except OSError as error:
        raise TraceError(where, None, f"cannot open: {error.strerror or error}") from None
    except InputError as error:
        raise TraceError(where, None, error.problem) from None
    try:
        first = _read(handle, where, 1)
        if not first:
            raise TraceError(where, 1, "empty file; a trace starts with a header line")
        header = TraceHeader.from_json(_parse(first, where, 1, unique_keys=True), where, 1)
    except BaseException:
        handle.close()
        raise
    return header, _steps(handle, where)


def _well_formed(step: Json, i: int) -> bool:
    """The usual step, checked in a few C calls: required keys there (i the expected int, op
    a string), optional ones objects, and no other key (the count says so)."""
    return (type(step) is dict and type(step.get("i")) is int and step["i"] == i
            and type(step.get("op")) is str and "args" in step and "now" in step
            and type(step.get("result", _A_DICT)) is dict and type(step.get("state", _A_DICT)) is dict
            and len(step) == 4 + ("result" in step) + ("state" in step))


def _steps(handle: Any, where: str) -> Generator[dict[str, Json], None, None]:
    """The steps after the header, each checked as it is read.

    The usual line (within the length limit, a shape orjson parses as json would, a
    well-formed step) is read, parsed and checked here in a handful of C calls, with no
    call per line into the helpers; any other line takes the careful path (_read,
    _parse, check_step), which accepts exactly the same and names what is wrong. A reset
    line takes the careful path too (check_reset); steps go on being numbered after it."""
    loads, decode_error, shape_of, exact = orjson.loads, orjson.JSONDecodeError, ORJSON_SHAPE, orjson_exact
    readline, too_long = handle.readline, MAX_LINE_BYTES + 1
    with handle:
        index = resets = 0
        while True:
            try:
                text = readline(too_long)
            except OSError as error:
                raise TraceError(where, index + resets + 2, f"cannot read: {error.strerror or error}") from None
            if not text:
                return
            step = None
            if len(text) < too_long:
                shape = text.translate(shape_of)
                if shape.count(b"[") <= MAX_DEPTH and exact(shape):
                    try:
                        step = loads(text)
                    except decode_error:
                        step = None
            # The usual step (a result, no state) checked inline; any other, by _well_formed.
            if not (type(step) is dict and type(i := step.get("i")) is int and i == index
                    and type(step.get("op")) is str and "args" in step and "now" in step
                    and (len(step) == 5 and type(step.get("result")) is dict or _well_formed(step, index))):
                line = index + resets + 2
                step = _parse(_within_limit(text, where, line), where, line)
                if type(step) is dict and RESET_KEY in step:
                    yield check_reset(step, where, line)
                    resets += 1
                    continue
                step = check_step(step, index, where, line)
            yield step
            index += 1


def _read(handle: Any, where: str, line: int) -> bytes:
    try:
        return read_line(handle, line)
    except InputError as error:
        raise TraceError(where, line, error.problem) from None
    except OSError as error:
        raise TraceError(where, line, f"cannot read: {error.strerror or error}") from None


def _within_limit(text: bytes, where: str, line: int) -> bytes:
    """`text` as read_line gave it: refused when longer than a line may be."""
    try:
        return check_line_length(text, line)
    except InputError as error:
        raise TraceError(where, line, error.problem) from None


def _parse(text: bytes, where: str, line: int, *, unique_keys: bool = False) -> Json:
    if not text.strip():
        raise TraceError(where, line, "blank line; every line of a trace is one JSON object")
    try:
        return parse_json(text, line, unique_keys=unique_keys)
    except InputError as error:
        raise TraceError(where, line, error.problem) from None


class TraceWriter:
    """Streams a trace to disk, checking each step as it goes.

    The file appears under its final name only when the writer closes without error, so
    an interrupted run never leaves a half-written trace where the corpus would pick it up.
    """

    def __init__(self, path: str | os.PathLike[str], header: TraceHeader | dict[str, Json], *,
                 inputs: Iterable[str | os.PathLike[str]] = ()):
        self.path = Path(path)
        # Validated even when given as a TraceHeader, so nothing is written that replay refuses.
        raw = header.to_json() if isinstance(header, TraceHeader) else header
        self.header = TraceHeader.from_json(raw, str(path), None)
        #: Steps written, and lines after the header (steps and resets).
        self.count = self.lines = 0
        line = _dump(self.header.to_json(), str(path))
        problem = text_problem(line.encode())
        if problem:
            raise TraceError(str(path), 1, f"header: {problem}")
        line += "\n"
        self._out = AtomicFile(self.path, inputs=inputs, what="trace")
        try:
            self._out.write(line)
        except BaseException:
            self._out.abandon()
            raise

    def write(self, step: dict[str, Json]) -> None:
        """Write a step, or a reset line (`{"reset": CONFIG}`, which takes no step number)."""
        reset = type(step) is dict and RESET_KEY in step
        if reset:
            check_reset(step, str(self.path), None)
        else:
            check_step(step, self.count, str(self.path), None)
        what = f"the reset before step {self.count}" if reset else f"step {self.count}"
        line = _dump(step, str(self.path))
        if len(line) >= MAX_LINE_BYTES:
            raise TraceError(str(self.path), self.lines + 2,
                             f"{what} would be a line longer than {MAX_LINE_BYTES:,} bytes")
        problem = text_problem(line.encode())
        if problem:
            raise TraceError(str(self.path), self.lines + 2, f"{what}: {problem}")
        self._out.write(line + "\n")
        self.lines += 1
        self.count += not reset

    def close(self) -> None:
        if not self._out.handle.closed:
            self._out.commit()

    def close_as(self, candidates: Iterable[str | os.PathLike[str]]) -> Path:
        """Close, giving the trace the first free name of `candidates` (never replacing a
        file, and never visible under that name before it is whole)."""
        self.path = self._out.commit_as(candidates)
        return self.path

    def abandon(self) -> None:
        self._out.abandon()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.close()
        else:
            self.abandon()


def write_trace(path: str | os.PathLike[str], header: TraceHeader | dict[str, Json],
                steps: Iterable[dict[str, Json]], *, inputs: Iterable[str | os.PathLike[str]] = ()) -> Path:
    """Write a whole trace (steps may be a generator); return its path. Never over `inputs`."""
    with TraceWriter(path, header, inputs=inputs) as writer:
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

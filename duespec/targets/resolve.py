"""Naming a target on the command line: `model`, `impl`, `module:factory`, `stdio:COMMAND`.

    model                 the reference model (checking it against itself is a smoke test)
    impl                  duespec's production implementation
    pkg.module:factory    a Python object; factory() returns a Target (a class works)
    stdio:COMMAND ARGS    any program speaking docs/protocol.md, e.g.
                          "stdio:node examples/node-duebook/duebook.js"
    http://HOST:PORT      a schedules server speaking Resonate's HTTP protocol (duespec serve)

The `stdio:` prefix is reserved, so a Python module named `stdio` is written with its
package path. COMMAND is split like a POSIX shell would (quotes group words) but never run
through a shell.
"""

from __future__ import annotations

import importlib
import os
import shlex
import sys
import traceback
from typing import Any, Callable, TypeVar

from duespec.targets import deadline as deadline_module
from duespec.targets.deadline import deadline
from duespec.targets.stdio import DEFAULT_TIMEOUT, START_TIMEOUT, StdioTargetFactory
from duespec.systems import System
from duespec.targets.interface import (Json, Target, TargetError, TargetFactory, UserInterrupt, fast_checks,
                                      messages_keyed, messages_of)

T = TypeVar("T")

STDIO_PREFIX = "stdio:"

SPEC_HELP = ('"model", "impl", "package.module:factory" (a Python callable returning a '
             'Target), "stdio:COMMAND ..." (a program speaking docs/protocol.md) or '
             '"http://HOST:PORT" (a schedules server speaking Resonate\'s HTTP protocol)')


class TargetSpecError(ValueError):
    """The target named on the command line cannot be resolved."""


def resolve(system: System, spec: str, *, timeout: float = DEFAULT_TIMEOUT,
            start_timeout: float = START_TIMEOUT) -> TargetFactory:
    """The factory of fresh targets that `spec` names, or TargetSpecError saying why not.

    `timeout` bounds every call into an in-process target, the import of its module and
    each call of its factory; `start_timeout` the start of a stdio program."""
    spec = spec.strip()
    if spec == "model":
        return system.model
    if spec == "impl":
        return WatchedFactory(system.impl, timeout, "impl")
    if spec.startswith(STDIO_PREFIX):
        try:
            command = shlex.split(spec[len(STDIO_PREFIX):])
        except ValueError as error:
            raise TargetSpecError(f"cannot split the command of {spec!r}: {error}") from None
        if not command:
            raise TargetSpecError(f"{spec!r} names no command; e.g. "
                                  f'"stdio:node examples/node-duebook/duebook.js"')
        return StdioTargetFactory(command, system.name, timeout=timeout, start_timeout=start_timeout)
    if spec.startswith(("http://", "https://")):
        return _http_factory(system, spec, timeout)
    if ":" in spec:
        return WatchedFactory(_import_factory(spec, timeout), timeout, spec)
    raise TargetSpecError(f"unknown target {spec!r}; a target is {SPEC_HELP}")


def _http_factory(system: System, spec: str, timeout: float) -> TargetFactory:
    from duespec.wire.http_target import HttpTargetFactory, check_url

    if not system.http_targets:
        raise TargetSpecError(f"{spec!r}: HTTP targets speak Resonate's protocol, so only for schedules")
    problem = check_url(spec)
    if problem:
        raise TargetSpecError(problem)
    return HttpTargetFactory(spec, timeout)


def _import_factory(spec: str, timeout: float) -> TargetFactory:
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise TargetSpecError(f"{spec!r} is not of the form package.module:factory")
    # As `python -m` does: a module in the working directory is importable.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found: Any = guarded(f"importing {module_name!r}", lambda: importlib.import_module(module_name),
                             timeout)
    except TargetError as error:
        raise TargetSpecError(f"cannot import {module_name!r} for target {spec!r}: {error}") from None
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise TargetSpecError(f"module {module_name!r} has no attribute {attribute!r} "
                                  f"(target {spec!r})") from None
        except BaseException as error:  # a module __getattr__ is target code too
            raise TargetSpecError(f"target {spec!r}: looking up {attribute!r} raised "
                                  f"{type(error).__name__}: {error}") from None
    if not callable(found):
        raise TargetSpecError(f"{spec!r} is a {type(found).__name__}, not a callable returning a Target")
    return found  # type: ignore[no-any-return]


# --- the boundary: nothing a target's code does escapes as anything but a TargetError --

#: Traceback frames a TargetError keeps from the target's own code.
SHOWN_FRAMES = 3


def guarded(what: str, call: Callable[[], T], seconds: float | None = None) -> T:
    """Run target code: any exception, SystemExit and KeyboardInterrupt included, becomes a
    TargetError naming `what`, the exception type, its message and the last frames."""
    try:
        with deadline(seconds, what):
            return call()
    except (TargetError, UserInterrupt):
        raise
    except BaseException as error:  # SystemExit(0) from a target must never end duespec with 0
        if isinstance(error, SystemExit):
            text = f"SystemExit {error.code!r}"
            problem = f"{what}: the target exited ({text})"
        else:
            text = str(error)[:500]
            problem = f"{what}: the target raised {type(error).__name__}" + (f": {text}" if text else "")
        theirs = [frame for frame in traceback.extract_tb(error.__traceback__)
                  if frame.filename not in (__file__, deadline_module.__file__)
                and "importlib" not in frame.filename]
        frames = tuple(f"{frame.filename}:{frame.lineno} in {frame.name}" for frame in theirs[-SHOWN_FRAMES:])
        raise TargetError(problem + "".join(f"\n    at {frame}" for frame in frames),
                          exc_type=type(error).__name__, exc_message=text, frames=frames) from None


def _json_object(what: str, value: Any, *, deep: bool = True) -> dict[str, Json]:
    """A target's answer must be a JSON object of JSON values; anything else is unusable.

    `deep=False` checks only the object and its keys: a whole state is large, and a
    non-JSON value inside it still fails the comparison with the model's state."""
    if not isinstance(value, dict):
        raise TargetError(f"{what} returned {type(value).__name__}, not a JSON object (dict)",
                          unusable=True)
    problem = non_json(value) if deep else next(
        (f"a {type(key).__name__} key {key!r:.60}" for key in value if type(key) is not str), None)
    if problem:
        raise TargetError(f"{what} returned a dict holding {problem}, which is not JSON", unusable=True)
    return value


def non_json(value: Any) -> str | None:
    """The first value in `value` JSON cannot hold (a set, a tuple, a float NaN...), or None."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            for key, child in item.items():
                if type(key) is not str:
                    return f"a {type(key).__name__} key {key!r:.60}"
                stack.append(child)
        elif kind is list:
            stack.extend(item)
        elif kind is float:
            if item != item or item in (float("inf"), float("-inf")):
                return f"the float {item}"
        elif kind not in (str, int, bool, type(None)):
            return f"a {kind.__name__}"
    return None


class WatchedTarget:
    """An in-process target behind the boundary: every call must return within `timeout`
    seconds, and whatever its code raises (or a sys.exit) comes out as a TargetError.

    A step that never returns (an endless catch-up, say) then fails the campaign as a
    TargetError, as a silent stdio program does, instead of hanging a CI gate. The deadline
    is SIGALRM, so it needs the main thread of a POSIX process; elsewhere calls run unwatched."""

    def __init__(self, inner: Target, timeout: float) -> None:
        self.inner, self.timeout = inner, timeout
        #: An adapter that builds every answer itself from plain fields (duespec's own duebook
        #: adapter) needs no walk through each answer: a field of another type makes the
        #: answer differ from the model's, which is reported as a divergence.
        self.deep = not getattr(inner, "builds_its_answers", False)

    def reset(self, config: dict[str, Json]) -> None:
        guarded("reset", lambda: self.inner.reset(config), self.timeout)

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        what = f"step {op}"
        return _json_object(what, guarded(what, lambda: self.inner.step(op, args, now), self.timeout),
                            deep=self.deep)

    def observe(self) -> dict[str, Json]:
        return _json_object("observe", guarded("observe", self.inner.observe, self.timeout), deep=False)

    # The wrapped target's own fast checks, passed through under the same deadline and
    # boundary. Whether they are believed is the judge's call (duespec.judge.trusts looks
    # through this wrapper to the wrapped target): without them every step of duespec's own
    # adapter behind the boundary paid for building and comparing a whole state.
    # Properties, so that an instance cannot be given checks of its own.

    @property
    def state_is(self) -> Callable[[Json], bool] | None:
        inner = fast_checks(self.inner)
        state_is = inner.state_is if inner is not None else None
        if state_is is None:
            return None
        timeout = self.timeout
        return lambda want: bool(guarded("observe", lambda: state_is(want), timeout))

    @property
    def recorded_step_checker(self) -> Callable[[Any], Callable[[dict[str, Json]], Json]] | None:
        inner = fast_checks(self.inner)
        if inner is None or inner.make_step_checker is None:
            return None
        timeout, deep = self.timeout, self.deep

        def make(implied: Any) -> Callable[[dict[str, Json]], Json]:
            check = guarded("reset", lambda: inner.step_checker(implied), timeout)
            assert check is not None

            def watched(step: dict[str, Json]) -> Json:
                what = f"step {step['op']}"
                answer = guarded(what, lambda: check(step), timeout)
                return None if answer is None else _json_object(what, answer, deep=deep)

            return watched

        return make

    @property
    def messages(self) -> Callable[[], list[Json]] | None:
        """The wrapped target's `messages` hook, under the same deadline and boundary."""
        messages = messages_of(self.inner)
        if messages is None:
            return None
        timeout = self.timeout
        return lambda: guarded("messages", messages, timeout)

    @property
    def messages_keyed(self) -> bool:
        """Whether the wrapped target's workers poll a keyed outbox."""
        return messages_keyed(self.inner)

    def close(self) -> None:
        close = getattr(self.inner, "close", None)  # optional (docs/operations.md)
        if callable(close):
            guarded("close", close, self.timeout)


def unwrapped(target: Target) -> Target:
    """The target inside duespec's own call boundary (a WatchedTarget, exactly: a subclass
    defined elsewhere is outside code), or `target` itself."""
    while type(target) is WatchedTarget:
        target = target.inner
    return target


class WatchedFactory:
    """Makes WatchedTargets; keeps the name reports use. A factory that raises, blocks or
    returns something without reset/step/observe is a TargetError that says so."""

    def __init__(self, factory: TargetFactory, timeout: float, name: str) -> None:
        self.factory, self.timeout, self.name = factory, timeout, name

    def __call__(self) -> WatchedTarget:
        made = guarded(f"the factory of {self.name}", self.factory, self.timeout)
        missing = [m for m in ("reset", "step", "observe") if not callable(getattr(made, m, None))]
        if missing:
            raise TargetError(f"the factory of {self.name} returned {type(made).__name__} "
                              f"{repr(made)[:80]}, which has no {', '.join(missing)}: not a Target",
                              unusable=True)
        return WatchedTarget(made, self.timeout)


#: A factory's optional declaration, read only by `declares_concurrent_clients`: set to
#: True, it says that each target it makes is a client of its own (its own connection),
#: safe beside the others while many threads drive them at once (`duespec stress`). A
#: Python target shares state its author never meant to share between threads, so
#: nothing else is taken to be.
CONCURRENT_CLIENTS = "concurrent_clients"


def declares_concurrent_clients(factory: TargetFactory) -> bool:
    """Whether `factory` (behind duespec's own WatchedFactory, if it is) declares
    `concurrent_clients = True`."""
    inner = factory.factory if type(factory) is WatchedFactory else factory
    return getattr(inner, CONCURRENT_CLIENTS, False) is True


def describe(factory: TargetFactory) -> str:
    """A short name for reports."""
    return getattr(factory, "name", None) or getattr(factory, "__qualname__", None) or repr(factory)


def close_factory(factory: TargetFactory) -> None:
    """Release what a factory keeps between targets (the stdio factory keeps a process)."""
    if isinstance(factory, type):  # a Target class: its `close` belongs to its instances
        return
    close = getattr(factory, "close", None)
    if callable(close):
        close()

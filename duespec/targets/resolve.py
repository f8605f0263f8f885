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
import signal
import sys
import threading
from typing import Any, Callable, TypeVar

from duespec.targets.stdio import DEFAULT_TIMEOUT, START_TIMEOUT, StdioTargetFactory
from duespec.systems import System
from duespec.targets.interface import Json, Target, TargetError, TargetFactory

T = TypeVar("T")

STDIO_PREFIX = "stdio:"

SPEC_HELP = ('"model", "impl", "package.module:factory" (a Python callable returning a '
             'Target), "stdio:COMMAND ..." (a program speaking docs/protocol.md) or '
             '"http://HOST:PORT" (a schedules server speaking Resonate\'s HTTP protocol)')


class TargetSpecError(ValueError):
    """The target named on the command line cannot be resolved."""


def resolve(system: System, spec: str, *, timeout: float = DEFAULT_TIMEOUT,
            start_timeout: float = START_TIMEOUT) -> TargetFactory:
    """The factory of fresh targets that `spec` names, or TargetSpecError saying why not."""
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
        return WatchedFactory(_import_factory(spec), timeout, spec)
    raise TargetSpecError(f"unknown target {spec!r}; a target is {SPEC_HELP}")


def _http_factory(system: System, spec: str, timeout: float) -> TargetFactory:
    from duespec.wire.http_target import HttpTargetFactory, check_url

    if system.name != "schedules":
        raise TargetSpecError(f"{spec!r}: HTTP targets speak Resonate's protocol, so only for schedules")
    problem = check_url(spec)
    if problem:
        raise TargetSpecError(problem)
    return HttpTargetFactory(spec, timeout)


def _import_factory(spec: str) -> TargetFactory:
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise TargetSpecError(f"{spec!r} is not of the form package.module:factory")
    # As `python -m` does: a module in the working directory is importable.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found: Any = importlib.import_module(module_name)
    except Exception as error:  # an import runs arbitrary code; report whatever it raised
        raise TargetSpecError(f"cannot import {module_name!r} for target {spec!r}: "
                              f"{type(error).__name__}: {error}") from None
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise TargetSpecError(f"module {module_name!r} has no attribute {attribute!r} "
                                  f"(target {spec!r})") from None
    if not callable(found):
        raise TargetSpecError(f"{spec!r} is a {type(found).__name__}, not a callable returning a Target")
    return found  # type: ignore[no-any-return]


class WatchedTarget:
    """An in-process target whose every call must return within `timeout` seconds.

    A step that never returns (an endless catch-up, say) then fails the campaign as a
    TargetError, as a silent stdio program does, instead of hanging a CI gate. The deadline
    is SIGALRM, so it needs the main thread of a POSIX process; elsewhere calls run unwatched.
    Code that catches every exception and carries on can swallow it."""

    def __init__(self, inner: Target, timeout: float) -> None:
        self.inner, self.timeout = inner, timeout

    def reset(self, config: dict[str, Json]) -> None:
        self._within("reset", lambda: self.inner.reset(config))

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        return self._within(f"step {op}", lambda: self.inner.step(op, args, now))

    def observe(self) -> dict[str, Json]:
        return self._within("observe", self.inner.observe)

    def close(self) -> None:
        close = getattr(self.inner, "close", None)  # close() is optional for a Python target
        if close is not None:
            self._within("close", close)

    def _within(self, what: str, call: Callable[[], T]) -> T:
        if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
            return call()

        def overdue(signum: int, frame: object) -> None:
            raise TargetError(f"{what} did not return within {self.timeout:g}s (--timeout)")

        previous = signal.signal(signal.SIGALRM, overdue)
        signal.setitimer(signal.ITIMER_REAL, self.timeout)
        try:
            return call()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


class WatchedFactory:
    """Makes WatchedTargets; keeps the name reports use."""

    def __init__(self, factory: TargetFactory, timeout: float, name: str) -> None:
        self.factory, self.timeout, self.name = factory, timeout, name

    def __call__(self) -> WatchedTarget:
        return WatchedTarget(self.factory(), self.timeout)


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

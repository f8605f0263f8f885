"""Naming a target on the command line: `model`, `impl`, `module:factory`, `stdio:COMMAND`.

    model                 the reference model (checking it against itself is a smoke test)
    impl                  duespec's production implementation
    pkg.module:factory    a Python object; factory() returns a Target (a class works)
    stdio:COMMAND ARGS    any program speaking docs/protocol.md, e.g.
                          "stdio:node examples/node-duebook/duebook.js"

The `stdio:` prefix is reserved, so a Python module named `stdio` is written with its
package path. COMMAND is split like a POSIX shell would (quotes group words) but never run
through a shell.
"""

from __future__ import annotations

import importlib
import os
import shlex
import sys
from typing import Any

from duespec.stdio import DEFAULT_TIMEOUT, START_TIMEOUT, StdioTargetFactory
from duespec.systems import System
from duespec.target import TargetFactory

STDIO_PREFIX = "stdio:"

SPEC_HELP = ('"model", "impl", "package.module:factory" (a Python callable returning a '
             'Target) or "stdio:COMMAND ..." (a program speaking docs/protocol.md)')


class TargetSpecError(ValueError):
    """The target named on the command line cannot be resolved."""


def resolve(system: System, spec: str, *, timeout: float = DEFAULT_TIMEOUT,
            start_timeout: float = START_TIMEOUT) -> TargetFactory:
    """The factory of fresh targets that `spec` names, or TargetSpecError saying why not."""
    spec = spec.strip()
    if spec == "model":
        return system.model
    if spec == "impl":
        return system.impl
    if spec.startswith(STDIO_PREFIX):
        try:
            command = shlex.split(spec[len(STDIO_PREFIX):])
        except ValueError as error:
            raise TargetSpecError(f"cannot split the command of {spec!r}: {error}") from None
        if not command:
            raise TargetSpecError(f"{spec!r} names no command; e.g. "
                                  f'"stdio:node examples/node-duebook/duebook.js"')
        return StdioTargetFactory(command, system.name, timeout=timeout, start_timeout=start_timeout)
    if ":" in spec:
        return _import_factory(spec)
    raise TargetSpecError(f"unknown target {spec!r}; a target is {SPEC_HELP}")


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

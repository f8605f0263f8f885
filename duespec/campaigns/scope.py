"""`--ops` / `--skip-ops`: narrow a campaign to some operations by steering its rules.

Which ops a rule may call is read from its source: the op names written in the rule (its
decorators included) and in the machine's methods it calls, transitively. A rule that may
call an excluded op is not drawn; an initializer that does cannot be left out (every run
opens with it), so its ops stay in the campaign and are reported. Whatever escapes the
reading is caught at run time: a step with an excluded op ends its run uncompared.

An opening that steers around excluded ops (ProtocolMachine.skippable_in_opening: the
ops its steps leave out when the campaign does) is not held to them. Ops a campaign sends
that the system does not have (System.unknown_ops, an unknown op answered as malformed) are
named like any other.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable

from hypothesis.stateful import INITIALIZE_RULE_MARKER, RULE_MARKER

from duespec.systems import System


class ScopeError(ValueError):
    """--ops / --skip-ops name something the system does not have, or leave nothing."""


@dataclass(frozen=True)
class Scope:
    #: Known ops no step may take.
    excluded_ops: frozenset[str]
    #: Rules not drawn, because they may call an excluded op.
    excluded_rules: frozenset[str]
    #: Excluded ops every run still takes, in its opening.
    kept_for_opening: tuple[str, ...]

    def left_out(self) -> frozenset[str]:
        """The ops no step of the campaign takes."""
        return self.excluded_ops

    def describe(self) -> str:
        left_out = sorted(self.excluded_ops | set(self.kept_for_opening))
        lines = [f"ops left out: {', '.join(left_out)} (rules not drawn: "
                 f"{', '.join(sorted(self.excluded_rules)) or 'none'})"]
        if self.kept_for_opening:
            lines.append(f"  still taken by every run's opening: {', '.join(self.kept_for_opening)}")
        return "\n".join(lines)


def scope_of(system: System, ops: Iterable[str] | None, skip_ops: Iterable[str] | None) -> Scope | None:
    """The campaign's scope, None for every op; ScopeError on an unknown op."""
    wanted, skipped = _names(ops), _names(skip_ops)
    if not wanted and not skipped:
        return None
    known = list(system.nameable_ops)
    unknown = [op for op in (*wanted, *skipped) if op not in known]
    if unknown:
        raise ScopeError(f"{system.name} has no op {', '.join(unknown)}; known: {', '.join(known)}")
    allowed = (set(wanted) if wanted else set(known)) - set(skipped)
    excluded = frozenset(known) - allowed
    rules, openers = rule_ops(system.machine, frozenset(known))
    excluded_rules = frozenset(name for name, called in rules.items() if called & excluded)
    if excluded_rules >= set(rules) or not allowed & set(system.operations):  # an unknown op alone is no campaign
        raise ScopeError(f"--ops/--skip-ops leave {system.name} no rule to draw (ops left: "
                         f"{', '.join(sorted(allowed)) or 'none'})")
    skippable = getattr(system.machine, "skippable_in_opening", frozenset())
    kept = tuple(sorted(set().union(*openers.values()) & excluded - skippable)) if openers else ()
    return Scope(excluded - set(kept), excluded_rules, kept)


def _names(values: Iterable[str] | None) -> list[str]:
    names = [name.strip() for value in values or () for name in value.split(",")]
    if "" in names:  # `--ops ,` named nothing, and must not narrow to (or widen to) everything
        raise ScopeError(f"--ops/--skip-ops {','.join(values or ())!r} holds an empty op name; "
                         "name ops separated by single commas")
    return names


@lru_cache(maxsize=None)
def rule_ops(machine: type, ops: frozenset[str]) -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    """(rule name -> ops it may call, initializer name -> ops it may call)."""
    rules: dict[str, frozenset[str]] = {}
    openers: dict[str, frozenset[str]] = {}
    for name, member in inspect.getmembers(machine):
        if getattr(member, RULE_MARKER, None) is not None:
            rules[name] = _calls(machine, name, ops, frozenset())
        elif getattr(member, INITIALIZE_RULE_MARKER, None) is not None:
            # what an opening calls only in a campaign that leaves out no op is not followed
            openers[name] = _calls(machine, name, ops, frozenset(getattr(machine, "opening_with_every_op", ())))
    return rules, openers


def _calls(machine: type, name: str, ops: frozenset[str], seen: frozenset[str]) -> frozenset[str]:
    member: Any = getattr(machine, name, None)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(member)))
    except (OSError, TypeError):
        return frozenset()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in ops:
            found.add(node.value)
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id == "self" and node.attr not in seen and callable(getattr(machine, node.attr, None))):
            found |= _calls(machine, node.attr, ops, seen | {name, node.attr})
    return frozenset(found)

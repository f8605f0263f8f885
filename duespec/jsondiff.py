"""Where two JSON values differ: the paths a difference is classified by, and the lines
people read. Plain functions of JSON, below every layer that compares (the judge, the
systems' own property checks)."""

from __future__ import annotations

import json
from typing import Any

from duespec.targets.interface import same_json

Json = Any


def differing_paths(expected: Json, actual: Json, path: str = "$") -> list[str]:
    """Every place where two JSON values differ, indices normalised to `[]`, in order."""
    found: list[str] = []
    _collect(expected, actual, path, found)
    return list(dict.fromkeys(found))


def _collect(expected: Json, actual: Json, path: str, found: list[str]) -> None:
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual), key=str):
            sub = f"{path}.{key}"
            if key in expected and key in actual:
                _collect(expected[key], actual[key], sub, found)
            else:
                found.append(sub)
    elif isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        for e, a in zip(expected, actual):
            _collect(e, a, f"{path}[]", found)
    elif not same_json(expected, actual):
        found.append(path)


def state_diff(expected: Json, actual: Json, path: str = "$") -> list[str]:
    """Human-sized list of the places where two JSON values differ."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        lines: list[str] = []
        for key in sorted(set(expected) | set(actual), key=str):
            sub = f"{path}.{key}"
            if key not in actual:
                lines.append(f"{sub}: missing from target (expected {dump(expected[key])})")
            elif key not in expected:
                lines.append(f"{sub}: unexpected in target ({dump(actual[key])})")
            else:
                lines.extend(state_diff(expected[key], actual[key], sub))
        return lines
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        lines = []
        for index, (e, a) in enumerate(zip(expected, actual)):
            lines.extend(state_diff(e, a, f"{path}[{index}]"))
        return lines
    if same_json(expected, actual):
        return []
    return [f"{path}: expected {dump(expected)}, actual {dump(actual)}"]


def dump(value: Json) -> str:
    try:
        text = json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):  # a target's non-JSON answer, shown as what it is
        text = repr(value)
    return text if len(text) <= 400 else text[:400] + "..."

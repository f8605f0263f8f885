"""Replay against the in-process impl takes a fused path (the Book called and its answer
compared field by field, the state compared without building it); every other target
takes the general one. Both must find the same first divergence and say the same about it.

`replay(trace, "impl")` takes the fused path; `replay(trace, "impl", factory=ImplTarget)`
builds the very same target but, as for any target given by a factory, the general path."""

from __future__ import annotations

import json
from builtins import id as builtins_id
from pathlib import Path
from typing import Any, Callable

import pytest

from duespec.bench.traces import write_mixed_duebook
from duespec.impl import duebook as impl
from duespec.systems.duebook import ImplTarget
from duespec.targets.interface import Json
from duespec.traces.format import read_trace, write_trace
from duespec.traces.replay import ReplayResult, replay


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A busy trace: every op, about 20 deferrals open, the clock moving."""
    return write_mixed_duebook(tmp_path_factory.mktemp("fast") / "mixed.jsonl", 1_500, 20, seed=3)


def both(path: Path, **options: Any) -> tuple[ReplayResult, ReplayResult]:
    fused = replay(path, "impl", **options)
    general = replay(path, "impl", factory=ImplTarget, **options)
    return fused, general


def edited(source: Path, target: Path, edit: Callable[[dict[str, Json]], bool]) -> int:
    """A copy of `source` with the first step `edit` changes (it returns True when it did);
    the index of that step."""
    header, steps = read_trace(source)
    changed: list[int] = []

    def steps_edited() -> Any:
        for step in steps:
            if not changed and edit(step):
                changed.append(step["i"])
            yield step

    write_trace(target, header, steps_edited())
    assert changed, "no step to edit"
    return changed[0]


def _ok(step: dict[str, Json], op: str) -> dict[str, Json] | None:
    ok = step.get("result", {}).get("ok")
    return ok if step["op"] == op and isinstance(ok, dict) else None


def owner_renamed(step: dict[str, Json]) -> bool:
    ok = _ok(step, "schedule")
    if ok and step["i"] > 200:
        ok["owner"] += "x"
        return True
    return False


def id_as_a_float(step: dict[str, Json]) -> bool:
    ok = _ok(step, "get")
    if ok and step["i"] > 200:
        ok["id"] = float(ok["id"])
        return True
    return False


def no_expiry_as_false(step: dict[str, Json]) -> bool:
    """expires_at 0 recorded as JSON false: equal in Python, another JSON value."""
    ok = _ok(step, "claim")
    if ok and ok["expires_at"] == 0:
        ok["expires_at"] = False
        return True
    return False


def an_extra_key(step: dict[str, Json]) -> bool:
    ok = _ok(step, "cancel")
    if ok:
        ok["note"] = 1
        return True
    return False


def rows_swapped(step: dict[str, Json]) -> bool:
    rows = step.get("result", {}).get("ok")
    if step["op"] == "claimable" and isinstance(rows, list) and len(rows) >= 2:
        rows[0], rows[1] = rows[1], rows[0]
        return True
    return False


def a_row_with_a_bool(step: dict[str, Json]) -> bool:
    rows = step.get("result", {}).get("ok")
    if step["op"] == "expirable" and isinstance(rows, list) and rows:
        rows[-1]["due_at"] = True
        return True
    return False


def an_error_instead(step: dict[str, Json]) -> bool:
    if _ok(step, "expire") and step["i"] > 300:
        step["result"] = {"error": "not_found"}
        return True
    return False


@pytest.mark.parametrize("edit", [owner_renamed, id_as_a_float, no_expiry_as_false, an_extra_key,
                                  rows_swapped, a_row_with_a_bool, an_error_instead])
def test_a_recorded_result_the_impl_does_not_give_is_found_alike(mixed: Path, tmp_path: Path,
                                                                 edit: Callable[[dict[str, Json]], bool]) -> None:
    at = edited(mixed, tmp_path / "edited.jsonl", edit)
    fused, general = both(tmp_path / "edited.jsonl")
    assert not fused.confirmed and fused.step is not None and fused.step["i"] == at, fused.report()
    assert general.step is not None and general.step["i"] == at
    assert fused.divergence == general.divergence
    assert fused.report() == general.report()
    assert (fused.responses_compared, fused.steps) == (general.responses_compared, general.steps)


def test_an_error_recorded_with_another_message_agrees_on_both_paths(mixed: Path, tmp_path: Path) -> None:
    """Only the error code is compared; the message is for people."""
    header, _ = read_trace(mixed)
    steps = [{"i": 0, "op": "claim", "args": {"id": 9}, "now": 5,
              "result": {"error": "not_found", "message": "someone else's words"}},
             {"i": 1, "op": "claim", "args": {"id": 9, "extra": 1}, "now": 5,
              "result": {"error": "invalid"}}]
    trace = write_trace(tmp_path / "errors.jsonl", header, steps)
    for result in both(trace):
        assert result.confirmed and result.responses_compared == 2, result.report()


def test_a_state_that_differs_is_traced_to_the_same_step(mixed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Right answers, a wrong state: the Book stops listing the oldest deferral that stays
    open to the end. Only a checkpoint can see it; both paths must trace it back to the
    step that scheduled it."""
    _, steps = read_trace(mixed)
    scheduled: dict[int, int] = {}
    for step in steps:
        ok = step["result"].get("ok")
        if step["op"] == "schedule" and isinstance(ok, dict):
            scheduled[ok["id"]] = step["i"]
        elif step["op"] in ("claim", "cancel", "expire") and isinstance(ok, dict):
            del scheduled[ok["id"]]
    hidden = min(scheduled)
    listed = impl.Book.open_deferrals

    def forgets_one(book: impl.Book) -> Any:
        return (d for d in listed(book) if d.id != hidden)

    monkeypatch.setattr(impl.Book, "open_deferrals", forgets_one)
    fused, general = both(mixed)
    assert not fused.confirmed and fused.step is not None and fused.step["i"] == scheduled[hidden], fused.report()
    assert "state differs after the step" in fused.report()
    assert fused.divergence == general.divergence and general.step == fused.step


def test_a_crash_in_the_book_is_a_finding_at_its_step_on_both_paths(mixed: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    real, real_init = impl.Book.claim, impl.Book.__init__
    claims: dict[int, int] = {}

    def counted_from_zero(book: impl.Book, max_open: int) -> None:
        real_init(book, max_open)
        claims[builtins_id(book)] = 0  # a new Book may reuse a freed one's address

    def crashes_on_the_tenth(book: impl.Book, id: int, now: int) -> impl.Deferral:
        claims[builtins_id(book)] += 1
        if claims[builtins_id(book)] == 10:
            raise ZeroDivisionError("inside the Book")
        return real(book, id, now)

    monkeypatch.setattr(impl.Book, "__init__", counted_from_zero)
    monkeypatch.setattr(impl.Book, "claim", crashes_on_the_tenth)
    fused, general = both(mixed)
    assert not fused.confirmed and "the target raised: ZeroDivisionError: inside the Book" in fused.report()
    assert fused.divergence == general.divergence and fused.step == general.step


def test_a_confirmed_replay_counts_the_same_on_both_paths(mixed: Path) -> None:
    fused, general = both(mixed)
    assert fused.confirmed and general.confirmed, fused.report()
    for name in ("steps", "responses_compared", "recorded_results", "states_compared"):
        assert getattr(fused, name) == getattr(general, name), name
    assert fused.states_compared > 2


def test_the_fused_path_is_the_one_taken(mixed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """So that the tests above compare two paths, not one path twice."""
    def refuse(*args: object) -> Json:
        raise AssertionError("the general path was taken")

    monkeypatch.setattr(ImplTarget, "step", refuse)
    monkeypatch.setattr(ImplTarget, "observe", refuse)
    result = replay(mixed, "impl")
    assert result.confirmed, result.report()
    assert json.dumps(result.steps) == "1500"

"""The lockstep comparison is JSON-strict: 1, 1.0 and true are three different answers."""

from __future__ import annotations

import enum
from typing import Any

import pytest

from duespec.jsondiff import state_diff
from duespec.campaigns.run import run_campaign
from duespec.impl import duebook as impl
from duespec.systems import get_system
from duespec.systems.duebook import ImplTarget
from duespec.targets.interface import same_json


@pytest.mark.parametrize("a, b", [(1, 1.0), (1, True), (0, False), ({"x": 1}, {"x": 1.0}),
                                  ([1, 2], [1, 2.0]), ({"x": 1}, {"x": 1, "y": None}),
                                  (None, 0), ("1", 1)])
def test_values_python_calls_equal_are_different_json(a: Any, b: Any) -> None:
    assert not same_json(a, b)
    assert not same_json(b, a)


@pytest.mark.parametrize("value", [0, -3, 2**63 - 1, 1.5, True, None, "s", [], {},
                                   {"a": [1, {"b": None}]}])
def test_a_value_is_the_same_json_as_itself(value: Any) -> None:
    assert same_json(value, value)


class Status(enum.IntEnum):
    OK = 200


def test_a_subclass_is_not_the_json_type_it_extends_even_where_bytes_would_agree() -> None:
    assert not same_json({"status": 200}, {"status": Status.OK})
    assert not same_json({"open": [{"id": 200}]}, {"open": [{"id": Status.OK}]})
    assert same_json({"a": 1, "b": [2**70, "\ud800"]}, {"b": [2**70, "\ud800"], "a": 1})


def test_state_diff_names_a_type_difference() -> None:
    assert state_diff({"next_id": 2}, {"next_id": 2.0}) == ["$.next_id: expected 2, actual 2.0"]


class FloatCounter:
    """A duebook whose state reports the id counter as a float, as a sloppy port might."""

    def __init__(self) -> None:
        self.inner = get_system("duebook").model()

    def reset(self, config: dict[str, Any]) -> None:
        self.inner.reset(config)

    def step(self, op: str, args: dict[str, Any], now: int) -> dict[str, Any]:
        return self.inner.step(op, args, now)

    def observe(self) -> dict[str, Any]:
        state = self.inner.observe()
        return {**state, "next_id": float(state["next_id"])}

    def close(self) -> None:
        self.inner.close()


def test_a_float_counter_is_caught_by_the_campaign() -> None:
    result = run_campaign(get_system("duebook"), FloatCounter, examples=20)
    assert not result.ok
    assert "next_id" in (result.failure or "")


class VouchingFloatCounter(FloatCounter):
    """Says its state is whatever is expected, as duespec's own ImplTarget may (state_is)."""

    def state_is(self, want: Any) -> bool:
        return True


class VouchingWrongGet(VouchingFloatCounter):
    """Says every answer is the expected one (recorded_step_checker, as ImplTarget may),
    and answers every get not_found."""

    def observe(self) -> dict[str, Any]:
        return self.inner.observe()

    def recorded_step_checker(self, implied: Any) -> Any:
        return lambda step: None

    def step(self, op: str, args: dict[str, Any], now: int) -> dict[str, Any]:
        return {"error": "not_found"} if op == "get" else self.inner.step(op, args, now)


def test_an_outside_target_cannot_vouch_for_its_own_state_or_answers() -> None:
    result = run_campaign(get_system("duebook"), VouchingFloatCounter, examples=20)
    assert not result.ok
    assert "next_id" in (result.failure or "")
    result = run_campaign(get_system("duebook"), VouchingWrongGet, examples=20)
    assert not result.ok
    assert result.counterexample[-1]["op"] == "get", result.failure


class GetThatCancels(impl.Book):
    """Answers every get rightly, and cancels what it read: only the state shows it."""

    def get(self, id: int) -> impl.Deferral:
        deferral = super().get(id)
        self.cancel(deferral.id, deferral.owner)
        return deferral


def test_a_change_only_the_state_shows_is_caught_through_the_impl_adapters_own_check() -> None:
    """ImplTarget tells the campaign its state agrees without building it (state_is); when it
    does not agree, the state is observed and the difference reported as ever."""
    result = run_campaign(get_system("duebook"), lambda: ImplTarget(GetThatCancels), examples=50)
    assert not result.ok
    assert result.counterexample[-1]["op"] == "get", result.failure
    assert "state" in (result.failure or "").lower() and "$.open" in (result.failure or ""), result.failure


class ListingOneShort(impl.Book):
    """Leaves the last row out of every non-empty listing: only the answer shows it."""

    def claimable(self, now: int, limit: int) -> list[impl.Deferral]:
        return super().claimable(now, limit)[:-1]


def test_a_wrong_answer_is_caught_through_the_impl_adapters_own_check() -> None:
    """ImplTarget checks its answer against the model's without building it (its
    recorded_step_checker, as replay uses); an answer it finds unequal is built and
    compared, and reported, as ever."""
    result = run_campaign(get_system("duebook"), lambda: ImplTarget(ListingOneShort), examples=50)
    assert not result.ok
    assert result.counterexample[-1]["op"] == "claimable", result.failure


class ReversedListing(FloatCounter):
    """Lists open deferrals newest first. As oracle and target both, the states agree, so
    only the spec's own invariant `open_listed_by_id` can notice."""

    def observe(self) -> dict[str, Any]:
        state = self.inner.observe()
        return {**state, "open": state["open"][::-1]}


def test_machines_register_one_invariant_and_a_failure_names_its_property() -> None:
    import inspect

    from hypothesis.stateful import INVARIANT_MARKER

    from duespec.campaigns.lockstep import lockstep

    for name in ("duebook", "schedules"):
        system = get_system(name)
        # The system's rules register none; the machine a campaign binds them to, one.
        assert not [n for n, f in inspect.getmembers(system.machine) if hasattr(f, INVARIANT_MARKER)]
        machine = lockstep(system.machine, system.model, system.impl, system.config(system.profiles[0]))
        registered = [n for n, f in inspect.getmembers(machine) if hasattr(f, INVARIANT_MARKER)]
        assert registered == ["invariants_hold"], (name, registered)
    result = run_campaign(get_system("duebook"), ReversedListing, oracle=ReversedListing, examples=50)
    assert not result.ok
    assert (result.failure_summary or "").startswith("AssertionError: open_listed_by_id broken"), result.failure

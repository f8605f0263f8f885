"""Every op receives every malformation the contract defines (DR-09, issue 31 item 6).

The targets here are written from docs/protocol.md and docs/operations.md alone and share
no code with duespec's model or implementation: a duebook that conforms, and copies of it
that each mishandle one malformed field in one op. Before the malformation matrix, a
default campaign never sent an invalid `now` to `get` or `cancel` (which must answer as
usual), nor an extra key to a listing: the first two planted targets held."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from duespec.campaigns.report import coverage_report
from duespec.campaigns.run import run_campaign
from duespec.campaigns.scope import scope_of
from duespec.cli import main
from duespec.systems.duebook import SYSTEM
from duespec.systems.schedules import SYSTEM as SCHEDULES
from duespec.systems.schedules import ImplTarget as SchedulesImpl
from duespec.systems.schedules import ModelTarget as SchedulesModel
from duespec.model.schedules.clock import MAX_TIME
from duespec.systems.schedules.ops import EPOCH_2025, TARGET, malformed, well_formed

Json = Any
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
ARGUMENTS = {"schedule": ("owner", "delay", "ttl"), "claim": ("id",), "cancel": ("id", "caller"),
             "expire": ("id",), "get": ("id",), "claimable": ("limit",), "expirable": ("limit",)}
#: Small and quick: no deep runs, and a few dozen runs reach every group of the matrix.
QUICK = ["--examples", "40", "--depth", "0", "--progress", "0", "--max-classes", "1", "--database", "none"]


def is_int64(value: Json) -> bool:
    return type(value) is int and INT64_MIN <= value <= INT64_MAX


def is_time(value: Json) -> bool:
    return is_int64(value) and value >= 0


def is_owner(value: Json) -> bool:
    return type(value) is str and value != ""


class IndependentBook:
    """A duebook as the two documents describe it: the Target interface in-process."""

    def reset(self, config: dict[str, Json]) -> None:
        cap = config.get("max_open")
        if not is_int64(cap) or cap < 1:
            raise ValueError(f"max_open must be an integer >= 1, got {cap!r}")
        self.max_open, self.next_id, self.open = cap, 1, {}

    def observe(self) -> dict[str, Json]:
        return {"max_open": self.max_open, "next_id": self.next_id,
                "open": [dict(self.open[id]) for id in sorted(self.open)]}

    def close(self) -> None:
        pass

    def step(self, op: Json, args: Json, now: Json) -> dict[str, Json]:
        if type(op) is not str or op not in ARGUMENTS:
            return {"error": "invalid"}
        if type(args) is not dict or set(args) != set(ARGUMENTS[op]):
            return {"error": "invalid"}
        if not self.now_is_valid(op, now):
            return {"error": "invalid"}
        return getattr(self, op)(now, **args)

    def now_is_valid(self, op: str, now: Json) -> bool:
        """cancel and get do not read `now` (protocol.md section 5)."""
        return op in ("cancel", "get") or is_time(now)

    def schedule(self, now: int, owner: Json, delay: Json, ttl: Json) -> dict[str, Json]:
        if not (is_owner(owner) and is_time(delay) and is_time(ttl)):
            return {"error": "invalid"}
        due = now + delay
        expires = due + ttl if ttl else 0
        if due > INT64_MAX or expires > INT64_MAX:
            return {"error": "invalid"}
        if len(self.open) >= self.max_open:
            return {"error": "full"}
        deferral = {"id": self.next_id, "owner": owner, "due_at": due, "expires_at": expires}
        self.open[self.next_id] = deferral
        self.next_id += 1
        return {"ok": dict(deferral)}

    def found(self, id: Json) -> dict[str, Json] | str:
        if not is_int64(id):
            return "invalid"
        return self.open.get(id) or "not_found"

    def claim(self, now: int, id: Json) -> dict[str, Json]:
        deferral = self.found(id)
        if isinstance(deferral, str):
            return {"error": deferral}
        if now < deferral["due_at"]:
            return {"error": "not_due"}
        if deferral["expires_at"] and now >= deferral["expires_at"]:
            return {"error": "expired"}
        return {"ok": self.open.pop(id)}

    def cancel(self, now: Json, id: Json, caller: Json) -> dict[str, Json]:
        if not is_int64(id) or not is_owner(caller):
            return {"error": "invalid"}
        deferral = self.found(id)
        if isinstance(deferral, str):
            return {"error": deferral}
        if caller != deferral["owner"]:
            return {"error": "not_owner"}
        return {"ok": self.open.pop(id)}

    def expire(self, now: int, id: Json) -> dict[str, Json]:
        deferral = self.found(id)
        if isinstance(deferral, str):
            return {"error": deferral}
        if not deferral["expires_at"] or now < deferral["expires_at"]:
            return {"error": "not_expired"}
        return {"ok": self.open.pop(id)}

    def get(self, now: Json, id: Json) -> dict[str, Json]:
        deferral = self.found(id)
        return {"error": deferral} if isinstance(deferral, str) else {"ok": dict(deferral)}

    def claimable(self, now: int, limit: Json) -> dict[str, Json]:
        if not is_time(limit):
            return {"error": "invalid"}
        due = [d for d in self.open.values()
               if d["due_at"] <= now and (not d["expires_at"] or now < d["expires_at"])]
        return {"ok": [dict(d) for d in sorted(due, key=lambda d: (d["due_at"], d["id"]))[:limit]]}

    def expirable(self, now: int, limit: Json) -> dict[str, Json]:
        if not is_time(limit):
            return {"error": "invalid"}
        late = [d for d in self.open.values() if d["expires_at"] and d["expires_at"] <= now]
        return {"ok": [dict(d) for d in sorted(late, key=lambda d: (d["expires_at"], d["id"]))[:limit]]}


class GetRefusesAnInvalidNow(IndependentBook):
    """get answers `invalid` for an invalid `now`, which it never reads."""

    def now_is_valid(self, op: str, now: Json) -> bool:
        return op == "cancel" or is_time(now)


class CancelRefusesAnInvalidNow(IndependentBook):
    """cancel answers `invalid` for an invalid `now`, which it never reads."""

    def now_is_valid(self, op: str, now: Json) -> bool:
        return op == "get" or is_time(now)


class ListingsReadAnInvalidNowAsZero(IndependentBook):
    """claimable and expirable list at 0 when `now` is invalid, where the contract refuses."""

    def now_is_valid(self, op: str, now: Json) -> bool:
        return op in ("cancel", "get", "claimable", "expirable") or is_time(now)

    def claimable(self, now: Json, limit: Json) -> dict[str, Json]:
        return super().claimable(now if is_time(now) else 0, limit)

    def expirable(self, now: Json, limit: Json) -> dict[str, Json]:
        return super().expirable(now if is_time(now) else 0, limit)


class ListingsIgnoreAnExtraKey(IndependentBook):
    """claimable and expirable ignore a key they do not take (a lenient decoder)."""

    def step(self, op: Json, args: Json, now: Json) -> dict[str, Json]:
        if op in ("claimable", "expirable") and type(args) is dict and "limit" in args:
            args = {"limit": args["limit"]}
        return super().step(op, args, now)


def conform(target: str, tmp_path: Path, *more: str) -> int:
    return main(["conform", "duebook", "--target", f"{__name__}:{target}", *QUICK,
                 "--trace-dir", str(tmp_path), *more])


def test_the_independent_book_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = conform("IndependentBook", tmp_path, "--coverage")
    out = capsys.readouterr().out
    assert code == 0, out
    assert "malformation matrix (DR-09): 220 of 220" in out


@pytest.mark.parametrize("target, op, requirement", [
    ("GetRefusesAnInvalidNow", "get", "D-27"),
    ("CancelRefusesAnInvalidNow", "cancel", "D-27"),
    ("ListingsReadAnInvalidNowAsZero", "claimable", "D-19"),
    pytest.param("ListingsIgnoreAnExtraKey", "claimable", "D-27", marks=pytest.mark.long),  # 10 s
])
def test_a_target_mishandling_one_malformed_field_is_caught(
        target: str, op: str, requirement: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = conform(target, tmp_path, "--no-coverage")
    out = capsys.readouterr().out
    assert code == 1, out
    found = next(line for line in out.splitlines() if line.startswith("class 1 of 1:"))
    assert f"response {op} " in found and requirement in found, found


@pytest.mark.long
def test_every_cell_is_reached_at_the_default_budget() -> None:
    """Seed 0, 200 runs, deep runs and all: every (op, field, form) cell, many times."""
    result = run_campaign(SYSTEM, SYSTEM.model)
    assert result.ok, result.failure
    matrix = coverage_report(SYSTEM, result.profile, result.coverage).matrix
    assert matrix is not None and matrix.unreached == {}
    assert min(matrix.hits.values()) >= 5, min(matrix.hits.items(), key=lambda item: item[1])


def test_the_matrix_names_what_a_narrowed_campaign_leaves_out() -> None:
    scope = scope_of(SYSTEM, ["claim,schedule"], None)
    assert scope is not None and "sends_every_malformation_of_one_field" not in scope.excluded_rules
    result = run_campaign(SYSTEM, SYSTEM.model, examples=30, depth=0, scope=scope)
    report = coverage_report(SYSTEM, result.profile, result.coverage, left_out=scope.left_out())
    assert report.matrix is not None
    unreached = report.matrix.unreached
    assert {op for op, _, _ in unreached} == {"cancel", "expire", "get", "claimable", "expirable"}
    assert all("left out" in why for why in unreached.values())
    assert report.matrix.hits[("claim", "now", "null")] > 0
    rendered = report.render()
    assert "cancel/now/null" in rendered or "cancel/id/below_int64" in rendered
    assert report.to_json()["malformation_matrix"]["reached"] == report.matrix.reached


# --- schedules: every op, every malformed now (SR-06) ---

class SearchesIgnoreAnInvalidNow(SchedulesModel):
    """The three searches answer as at a valid `now` when theirs is invalid, where X-03
    validates `now` first (400): schedule.search answers 501. (A copy of duespec's model with one difference:
    writing a second Resonate server for one test is out of proportion.)"""

    def step(self, op: str, args: Json, now: Json) -> dict[str, Json]:
        if op in ("schedule.search", "promise.search", "task.search") and not (
                type(now) is int and 0 <= now <= MAX_TIME):
            now = 0  # a search reads no time, so this one never looks at it
        return super().step(op, args, now)


def test_a_search_that_ignores_an_invalid_now_is_caught(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conform", "schedules", "--target", f"{__name__}:SearchesIgnoreAnInvalidNow", *QUICK,
                 "--trace-dir", str(tmp_path), "--no-coverage"])
    out = capsys.readouterr().out
    assert code == 1, out
    found = next(line for line in out.splitlines() if line.startswith("class 1 of 1:"))
    assert "response schedule.search " in found and "S-04" in found, found


# --- schedules: every argument of every op, in each malformed form (SR-06) ---
# Copies of duespec's implementation, each with one validation check of one op missing.
# Before the matrix had per-argument cells, no rule sent any of these requests: each held.

class ReleaseIgnoresAnExtraKey(SchedulesImpl):
    """task.release drops a key it does not take (a lenient decoder) instead of a 400."""

    def step(self, op: str, args: Json, now: Json) -> dict[str, Json]:
        if op == "task.release" and type(args) is dict:
            args = {key: value for key, value in args.items() if key in ("id", "version")}
        return super().step(op, args, now)


class HaltTakesAnEmptyId(SchedulesImpl):
    """task.halt looks an empty id up (404) instead of refusing it (400)."""

    def step(self, op: str, args: Json, now: Json) -> dict[str, Json]:
        if op == "task.halt" and type(args) is dict and args.get("id") == "" and set(args) == {"id"}:
            return {"status": 404}
        return super().step(op, args, now)


class AcquireTakesAWrongTypedTtl(SchedulesImpl):
    """task.acquire reads a ttl sent as a float or a numeric string as the integer."""

    def step(self, op: str, args: Json, now: Json) -> dict[str, Json]:
        if op == "task.acquire" and type(args) is dict and type(args.get("ttl")) in (float, str):
            try:
                args = {**args, "ttl": int(float(args["ttl"]))}
            except ValueError:
                pass
        return super().step(op, args, now)


@pytest.mark.parametrize("target, op, requirement", [
    ("ReleaseIgnoresAnExtraKey", "task.release", "T-08"),
    ("HaltTakesAnEmptyId", "task.halt", "T-09"),
    ("AcquireTakesAWrongTypedTtl", "task.acquire", "T-03"),
])
def test_a_schedules_server_mishandling_one_malformed_argument_is_caught(
        target: str, op: str, requirement: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the runs of a default campaign (it stops at its first class): which of the matrix's blocks
    # the first forty openings send moves with every change to the machine's draws
    code = main(["conform", "schedules", "--target", f"{__name__}:{target}", *QUICK, "--examples", "200",
                 "--trace-dir", str(tmp_path), "--no-coverage"])
    out = capsys.readouterr().out
    assert code == 1, out
    found = next(line for line in out.splitlines() if line.startswith("class 1 of 1:"))
    assert f"response {op} " in found and requirement in found, found


def test_every_op_gets_malformed_nows_in_a_short_campaign() -> None:
    """Every opening sends each op an invalid `now` (the form turning with the opening), so
    a short campaign reaches every op's `now` row; the whole grid at the default budget is
    a required part of tests/test_schedules_machine.py. The report lists what is not sent."""
    result = run_campaign(SCHEDULES, SCHEDULES.model, examples=30)
    assert result.ok, result.failure
    report = coverage_report(SCHEDULES, result.profile, result.coverage)
    assert report.matrix is not None
    reached_ops = {op for (op, field, _), count in report.matrix.hits.items() if count and field == "now"}
    assert reached_ops == set(SCHEDULES.operations)
    assert all("no run sent it" in why for why in report.matrix.unreached.values())
    assert "not sent: an unknown op" in report.render()


def test_the_grid_has_every_argument_of_every_op() -> None:
    """A row for each argument of the well-formed request of every op, `args` as a whole
    and its keys, besides `now`; each row's forms are the argument's."""
    rows = {(op, field) for op, field, _ in SCHEDULES.matrix.cells}
    for op in SCHEDULES.operations:
        assert {(op, name) for name in well_formed(op, EPOCH_2025)} | {(op, "now"), (op, "args"), (op, "keys")} \
            == {row for row in rows if row[0] == op}, op
    assert ("task.acquire", "ttl", "string") in SCHEDULES.matrix.cells
    assert ("task.release", "keys", "extra_now") in SCHEDULES.matrix.cells


def test_each_cell_is_refused_by_model_and_implementation_alike() -> None:
    """Every cell but `now`'s, at a state with a schedule, promises and a task: the model
    answers 400 (a search 501, or 400 for a string that is no Unicode text), nothing
    changes, and the implementation answers the same."""
    for profile in SCHEDULES.profiles:
        model, impl = SchedulesModel(), SchedulesImpl()
        for target in (model, impl):
            target.reset(SCHEDULES.config(profile))
            target.step("schedule.create", well_formed("schedule.create", EPOCH_2025), EPOCH_2025)
            target.step("task.create", well_formed("task.create", EPOCH_2025), EPOCH_2025)
            target.step("promise.create", {**well_formed("promise.create", EPOCH_2025), "tags": TARGET}, EPOCH_2025)
        before = model.observe()
        for op, field, form in SCHEDULES.matrix.cells:
            if field == "now":
                continue
            args = malformed(op, field, form, EPOCH_2025)
            expected, answered = model.step(op, args, EPOCH_2025), impl.step(op, args, EPOCH_2025)
            assert expected["status"] in ((400, 501) if op.endswith(".search") else (400,)), (profile, op, field, form)
            assert answered["status"] == expected["status"], (profile, op, field, form, answered)
        assert model.observe() == before == impl.observe()

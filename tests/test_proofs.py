"""Every Z3 proof holds, every negative control is refuted, and `duespec prove` says so."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest
from z3 import And, Solver, sat

from duespec.prove import all_proofs, render
from duespec.spec import duebook_z3, schedules_z3
from duespec.spec.proofs import Outcome, Proof, Verdict, decide

ROOT = Path(__file__).resolve().parents[1]
PROOFS = all_proofs()


@cache
def verdict(proof: Proof) -> Verdict:
    return decide(proof)


@pytest.mark.parametrize("proof", PROOFS, ids=lambda p: f"{p.system}:{p.name[:40]}")
def test_property_is_proved(proof: Proof) -> None:
    outcome = verdict(proof).outcome
    assert outcome.holds, outcome.counterexample


@pytest.mark.parametrize("proof", PROOFS, ids=lambda p: f"{p.system}:{p.control_name.split(':')[0]}")
def test_negative_control_is_refuted_on_its_own_goal(proof: Proof) -> None:
    """Refuted means: a concrete broken run breaks this proof's goal, judged on its values,
    and the model's run of the same inputs keeps it; no other failing step counts."""
    v = verdict(proof)
    control = v.control
    assert not control.holds, f"control {proof.control_name} was not refuted: {control.counterexample}"
    assert control.breaks == proof.goal and v.control_refuted
    text = control.counterexample or ""
    assert text.startswith(f"breaks '{proof.goal}': ") and "(keeps it)" in text, text


def test_a_failing_induction_step_is_no_refutation() -> None:
    """A broken transition that breaks the shared invariant, but never this goal, leaves
    the control unrefuted: the old 'any failing step' rule would have counted it."""
    run = schedules_z3.Run.of("lean", "advance_from_wall_clock")
    assert not schedules_z3.anchored_at_cron_time(run).holds
    assert schedules_z3.refute(schedules_z3.GOALS["timeouts"], "advance_from_wall_clock").holds
    cancel = next(p for p in duebook_z3.PROPERTIES if p.bug == "cancel_skips_owner_check")
    assert not cancel.check("schedule_reuses_id").holds
    assert cancel.control("schedule_reuses_id").holds


def test_the_check_outside_z3_can_veto_a_run() -> None:
    """Z3's run counts only if the goal restated over concrete values calls it broken and
    the model's own run of the same inputs keeps the goal."""
    goal = schedules_z3.GOALS["missed"]
    run = schedules_z3.Run.of("lean", "advance_from_wall_clock")
    firings = schedules_z3.search_broken_run(run, goal)
    assert firings is not None
    assert not schedules_z3.confirm(goal, "lean", firings).holds
    assert schedules_z3.confirm(replace(goal, judge=lambda cron, profile, f: None), "lean", firings).holds
    always = replace(goal, judge=lambda cron, profile, f: "always broken")
    vetoed = schedules_z3.confirm(always, "lean", firings)
    assert vetoed.holds and "the model breaks" in (vetoed.counterexample or "")
    claim = next(p for p in duebook_z3.PROPERTIES if p.bug == "claim_window_closed_inclusive")
    assert not claim.control().holds
    assert replace(claim, judge=lambda run: None).control().holds
    assert replace(claim, judge=lambda run: "always broken").control().holds


def test_a_control_refuted_on_another_goal_does_not_prove() -> None:
    proof = PROOFS[0]
    other = replace(proof, goal="some other goal")
    assert not decide(other).proved
    assert verdict(proof).proved


def test_every_control_is_a_different_bug() -> None:
    """A control shared by two proofs would hide that one of them has no control of its own."""
    for system in ("duebook", "schedules"):
        names = [p.control_name for p in PROOFS if p.system == system]
        assert len(names) == len(set(names)), names


def test_duebook_controls_show_a_run_from_a_fresh_book() -> None:
    """The control's run starts at NewBook, e.g. the same id consumed twice, and shows the
    model's answers to the same calls."""
    reuse = next(p for p in PROOFS if p.control_name.startswith("schedule_reuses_id"))
    text = verdict(reuse).control.counterexample or ""
    assert "the broken run from NewBook" in text and "the model answers the same calls" in text
    assert re.search(r"consumes id \d+ a second time", text)


def _catalogue_ids(name: str) -> set[str]:
    """IDs a catalogue defines: in bold where a requirement starts, or first in a table row."""
    text = (ROOT / "spec" / name).read_text()
    return set(re.findall(r"(?:\*\*|^\| )([A-Z]+-\d+)\b", text, flags=re.MULTILINE))


@pytest.mark.parametrize("system, catalogue", [("duebook", "duebook.md"), ("schedules", "schedules.md")])
def test_requirements_are_catalogue_ids(system: str, catalogue: str) -> None:
    known = _catalogue_ids(catalogue)
    for proof in PROOFS:
        if proof.system == system:
            assert proof.requirements and set(proof.requirements) <= known, (proof.name, proof.requirements)


def test_duebook_invariant_is_not_vacuous() -> None:
    """A fresh Book satisfies it, so the inductive proofs are about real Books."""
    book = duebook_z3.Book.fresh("b")
    solver = Solver()
    solver.add(And(duebook_z3.initial(book), duebook_z3.invariant(book)))
    assert solver.check() == sat


def test_control_cron_is_a_model_of_the_next_cron_contract() -> None:
    """The schedules proofs assume only the contract; the controls' concrete cron satisfies
    it (so the contract is consistent and the refutations are about a legal cron), and the
    off-by-one cron of the termination control does not."""
    def contract(strict: bool) -> Outcome:
        cron = schedules_z3.Cron.every(schedules_z3.CONTROL_PERIOD, strict=strict)
        return duebook_z3.valid(schedules_z3.next_cron_contract(cron.next_cron, cron.is_tick), str, "contract")
    assert contract(strict=True).holds
    assert not contract(strict=False).holds


def test_unknown_is_neither_a_proof_nor_a_refutation() -> None:
    def undecided() -> Outcome:
        raise duebook_z3.Undecided("timeout")
    assert not duebook_z3.as_check(undecided)().holds
    assert duebook_z3.as_control(undecided)().holds


def test_duespec_prove_lists_every_property_with_verdict_and_time() -> None:
    done = subprocess.run([sys.executable, "-m", "duespec", "prove", "--verbose"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for proof in PROOFS:
        line = next((line for line in lines if line.rstrip().endswith("s)") and proof.name in line), None)
        assert line is not None, f"{proof.name} missing from:\n{done.stdout}"
        assert re.match(rf"PROVED\s+{proof.system}\s", line) and re.search(r"\(\d+\.\d\ds\)$", line), line
    assert f"{len(PROOFS)} proved, 0 failed" in done.stdout
    for proof in PROOFS:
        bug = proof.control_name.split(":")[0]
        assert f"    control {bug} breaks '{proof.goal}': " in done.stdout, bug
    assert done.stdout.count("(keeps it)") == len(PROOFS)


def test_duespec_prove_one_system() -> None:
    done = subprocess.run([sys.executable, "-m", "duespec", "prove", "schedules"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "duebook" not in done.stdout and "schedules" in done.stdout
    for proof in PROOFS:
        if proof.system == "schedules":
            bug = proof.control_name.split(":")[0]
            assert f"    control {bug} breaks '{proof.goal}': " in done.stdout, bug


def test_a_control_not_refuted_on_its_goal_fails_the_proof_and_says_so() -> None:
    proof = PROOFS[0]
    unrefuted = Verdict(proof, Outcome(True), Outcome(True, "no run of <= 4 steps breaks it"), 0.0)
    elsewhere = Verdict(proof, Outcome(True), Outcome(False, "breaks 'another goal': ...", breaks="another goal"), 0.0)
    for v in (unrefuted, elsewhere):
        text = render(v, verbose=False)
        assert not v.proved and text.startswith("FAILED")
        assert f"NOT refuted on its goal '{proof.goal}'" in text

"""Every Z3 proof holds, every negative control is refuted, and `duespec prove` says so."""

from __future__ import annotations

import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from z3 import And, Solver, sat

from duespec.prove import all_proofs
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
def test_negative_control_is_refuted_with_a_counterexample(proof: Proof) -> None:
    control = verdict(proof).control
    assert not control.holds, f"control {proof.control_name} was not refuted: {control.counterexample}"
    assert control.counterexample and " fails:" in control.counterexample


def test_every_control_is_a_different_bug() -> None:
    """A control shared by two proofs would hide that one of them has no control of its own."""
    for system in ("duebook", "schedules"):
        names = [p.control_name for p in PROOFS if p.system == system]
        assert len(names) == len(set(names)), names


def test_duebook_controls_show_a_run_from_a_fresh_book() -> None:
    """The induction counterexample may start anywhere the invariant allows; the control
    also shows the bug reached from NewBook, e.g. the same id consumed twice."""
    reuse = next(p for p in PROOFS if p.control_name.startswith("schedule_reuses_id"))
    text = verdict(reuse).control.counterexample or ""
    assert "a run from NewBook" in text
    assert re.search(r"consumed earlier", text)


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
    assert done.stdout.count("refuted as it must be") == len(PROOFS)


def test_duespec_prove_one_system() -> None:
    done = subprocess.run([sys.executable, "-m", "duespec", "prove", "schedules"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "duebook" not in done.stdout and "schedules" in done.stdout

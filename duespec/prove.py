"""`duespec prove`: every Z3 proof in spec/, each with its negative control."""

from __future__ import annotations

import argparse
import importlib

from duespec.spec.proofs import Proof, Verdict, decide
from duespec.systems import get_system, names


def proof_modules() -> dict[str, str]:
    """System name -> the module in duespec.spec holding its proofs (System.proofs)."""
    return {name: module for name in names() if (module := get_system(name).proofs) is not None}


def all_proofs(systems: list[str] | None = None) -> list[Proof]:
    proofs: list[Proof] = []
    for system, module in proof_modules().items():
        if systems and system not in systems:
            continue
        proofs.extend(importlib.import_module(module).PROOFS)
    return proofs


def render(verdict: Verdict, verbose: bool) -> str:
    """One line per proof, then its control: the goal its concrete run breaks and why (the
    whole run and the model's answers with -v)."""
    proof = verdict.proof
    status = "PROVED " if verdict.proved else "FAILED "
    line = (f"{status} {proof.system:9} {','.join(proof.requirements):12} {proof.name}"
            f"  ({verdict.seconds:.2f}s)")
    details = []
    if not verdict.outcome.holds:
        details.append(f"    property refuted; counterexample:\n{_indent(verdict.outcome.counterexample)}")
    bug = proof.control_name.split(":")[0]
    if not verdict.control_refuted:
        details.append(f"    negative control {bug} was NOT refuted on its goal '{proof.goal}': "
                       f"the goal or the search is too weak\n{_indent(verdict.control.counterexample)}")
    else:
        first, *rest = (verdict.control.counterexample or "").splitlines()
        details.append(f"    control {bug} {first}")
        if verbose and rest:
            details.append(_indent("\n".join(rest)))
    return "\n".join([line, *details])


def _indent(text: str | None) -> str:
    return "\n".join("      " + part for part in (text or "(none)").splitlines())


def main(args: argparse.Namespace) -> int:
    verdicts = []
    for proof in all_proofs(args.system or None):
        verdict = decide(proof)
        verdicts.append(verdict)
        print(render(verdict, args.verbose), flush=True)
    failed = sum(not v.proved for v in verdicts)
    print(f"{len(verdicts) - failed} proved, {failed} failed")
    return 1 if failed else 0


def _system(name: str) -> str:
    known = proof_modules()
    if name not in known:
        raise argparse.ArgumentTypeError(f"unknown system {name!r} (choose from {', '.join(sorted(known))})")
    return name


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "prove", help="run every Z3 proof with its negative control",
        description="Prove each spec property for all states and inputs with Z3. Each proof "
                    "also runs a negative control: Z3 must find a concrete run of a broken "
                    "transition that breaks the proof's own goal, confirmed by judging the run "
                    "outside Z3 and replaying it in the model.")
    # Not `choices=`: Python 3.11 checks an empty nargs="*" list against choices and fails.
    parser.add_argument("system", nargs="*", type=_system, metavar="SYSTEM",
                        help="only these systems (duebook, schedules); default all")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also print each negative control's whole broken run and the model's run of it")
    parser.set_defaults(run=main)

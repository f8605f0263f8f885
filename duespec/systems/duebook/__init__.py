"""duebook for the harness, a room per idea:

- adapter.py: the model and the implementation behind the JSON contract, and the state a
  run's responses imply;
- ops.py: the op table and every value the campaign sends (docs/operations.md);
- machine.py: the lockstep machine's rules; deep.py: its deep runs (fills, drains, the tour
  of the implementation's index);
- requirements.py: what a default campaign must reach, and why it reaches no tag of some;
- long_run.py: the workload of `conform --long-run`;
- concurrency.py: what a linearizability search needs.

This module describes the system once (SYSTEM). `duespec.systems.duebook:ModelTarget` and
`:ImplTarget` name targets on the command line, so both stay importable from here."""

from __future__ import annotations

from duespec.systems import System
from duespec.systems.duebook.adapter import ImpliedState, ImplTarget, ModelTarget
from duespec.systems.duebook.concurrency import CONCURRENCY
from duespec.systems.duebook.long_run import LONG_RUN
from duespec.systems.duebook.machine import DuebookMachine
from duespec.systems.duebook.reads import BLIND_SPOTS, reads
from duespec.systems.duebook.ops import MATRIX, OPERATIONS, VALUE_SPACE
from duespec.systems.duebook.requirements import REQUIRED_TAGS, UNREACHED_REASONS

__all__ = ["CONCURRENCY", "SYSTEM", "VALUE_SPACE", "DuebookMachine", "ImplTarget", "ModelTarget"]

SYSTEM = System(
    name="duebook",
    profiles=("seed",),
    config=lambda profile: {"max_open": 3},
    model=ModelTarget,
    impl=ImplTarget,
    machine=DuebookMachine,
    catalogue="duebook.md",
    operations=OPERATIONS,
    state_keys=("max_open", "next_id", "open"),
    required_tags=REQUIRED_TAGS,
    implied_state=ImpliedState,
    unreached_reasons=UNREACHED_REASONS,
    # Draws a function of the seed and the machine alone: what a seed reaches must not
    # move with the modules a caller happens to have loaded.
    seeded_draws_only=True,
    long_run=LONG_RUN,
    proofs="duespec.spec.duebook_z3",
    probes=reads,
    blind_spots=BLIND_SPOTS,
    # the unknown op of the malformed requests every run's opening may send (D-27)
    unknown_ops=("reschedule",),
    # D-19, D-27: a malformed request, whatever its op, is answered `invalid` and changes nothing
    refuses=lambda answer: type(answer) is dict and answer.get("error") == "invalid",
    accepts=lambda answer: type(answer) is dict and "ok" in answer,
    matrix=MATRIX,
)

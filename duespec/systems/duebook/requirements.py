"""What a default duebook campaign must reach (REQUIRED_TAGS), and why it reaches no tag
of some requirements (UNREACHED_REASONS): read by the coverage report and checked by
tests/test_duebook_machine.py."""

from __future__ import annotations

from duespec.model import duebook as model
from duespec.systems.duebook.ops import DISGUISES, MATRIX, NEAR_MISSES, REFUSED_ARGUMENTS


REQUIRED_TAGS = (model.OPERATION_TAGS - {"D-01.invalid"}) | {
    "DR-01.cap_1", "DR-01.cap_small", "DR-01.cap_beyond_int32", "DR-02.hundreds_of_ids",
    "DR-03.dozens_open", "DR-04.index_run_split", "DR-04.inner_run_split", "DR-04.insert_after_dropped_rows",
    "DR-04.never_expiring_insert", "DR-04.after_a_full_run", "DR-04.run_end_limit", "DR-04.probed_runs",
    "DR-05.compaction",
    *(f"DR-06.{kind.replace(' ', '_')}" for kind in NEAR_MISSES),
    *(f"DR-07.{form}" for form in DISGUISES), *(f"DR-07.now_{form}" for form in DISGUISES),
    *(f"DR-08.{refused}" for refused in REFUSED_ARGUMENTS),
    *(MATRIX.tag(*cell) for cell in MATRIX.cells)}

#: Requirements that are properties of every step rather than branches a step takes: the
#: campaign checks them all the time, so no coverage tag marks them reached.
UNREACHED_REASONS = {
    "D-02": "a property, not a branch: consumed_id_never_returns and success_consumes_only_its_id "
            "(spec/duebook_invariants.py) are checked after every step",
    "D-04": "a property, not a branch: counter_monotonic, counter_advances_only_on_schedule and "
            "ids_below_counter are checked after every step",
    "D-06": "consumed deferrals leave the compared state (consumed_id_never_returns, every step); "
            "the implementation's storage bound is tests/test_duebook_impl.py (storage under churn, "
            "one old deferral) and its compaction regime DR-05",
    "D-16": "no branch: every returned deferral is edited as a careless caller would "
            "(edit_like_a_caller) and the next state comparison catches a handle into the Book",
    "D-17": "a property, not a branch: failure_changes_nothing is checked after every step",
    "D-18": "the Must* wrappers are the Go API's panics, outside the JSON contract: "
            "tests/test_duebook_model.py checks them",
    "D-21": "every error code is compared step by step, so a target's precedence shows there; the "
            "model takes the branches in the spec's order, proved in spec/duebook_z3.py, and "
            "test_error_precedence in tests/test_duebook_model.py and test_duebook_impl.py pin it",
    "D-22": "a property, not a branch: success_consumes_only_its_id and "
            "schedule_adds_only_the_new_deferral are checked after every step",
    "D-25": "snapshot and restore are the production Book's own API, outside the JSON contract: "
            "tests/test_duebook_impl.py checks them",
    "D-26": "the observable state itself: compared between model and target after every step",
}

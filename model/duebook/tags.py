"""Every coverage tag the model can reach, so a System can require them (and a test can
check that each one is reachable and that no branch goes untagged)."""

from __future__ import annotations

#: Branches of the operations in docs/operations.md, reachable through the JSON contract.
OPERATION_TAGS = frozenset({
    "D-27.unknown_op", "D-27.args_not_object", "D-27.wrong_keys", "D-27.now_not_read",
    "D-01.created", "D-01.invalid",
    "D-15.schedule_invalid_owner", "D-19.schedule_invalid", "D-20.due_overflow",
    "D-20.expiry_overflow", "D-07.full", "D-11.never_expires", "D-03.scheduled",
    "D-19.claim_invalid", "D-05.claim_not_found", "D-09.not_due", "D-10.expired", "D-08.claimed",
    "D-19.cancel_invalid", "D-15.cancel_invalid_caller", "D-05.cancel_not_found",
    "D-12.not_owner", "D-12.cancelled",
    "D-19.expire_invalid", "D-05.expire_not_found", "D-11.expire_refused",
    "D-13.not_expired", "D-13.expired",
    "D-19.get_invalid", "D-05.get_not_found", "D-14.found",
    "D-19.claimable_invalid", "D-23.listed",
    "D-19.expirable_invalid", "D-24.listed",
})

#: Branches of the Must* wrappers, which the JSON contract does not expose.
WRAPPER_TAGS = frozenset({"D-18.panicked", "D-18.returned"})

"""The stable error codes (spec/duebook.md, "Error codes") and the one exception.

Codes are plain strings because they travel as JSON (`{"error": "not_due"}`); the Go
seed's sentinel errors ErrNotFound, ErrNotDue... map one to one onto them."""

from __future__ import annotations

INVALID = "invalid"
NOT_FOUND = "not_found"
NOT_DUE = "not_due"
EXPIRED = "expired"
NOT_EXPIRED = "not_expired"
NOT_OWNER = "not_owner"
FULL = "full"


class Panic(Exception):
    """Raised by the Must* wrappers only (D-18); every other function returns its error."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code

"""How duebook.qnt's variables read as duespec's duebook (docs/operations.md).

duespec calls `to_duespec` once per operation of the Quint trace (`duespec itf import
--hook`, or `hook` in import.toml) with the Quint state the action left (`step.before`)
and reached (`step.after`), decoded: `book` is a dict with int keys, `answer` a variant
{"tag": ..., "value": ...}. It returns the Quint model's answer as a duespec response and
its book as duespec's observable state, so `duespec replay` compares both with duespec's
model and with the target.
"""

from __future__ import annotations

from typing import Any

from duespec.traces.itf import ForeignStep

#: duebook.qnt's Failure variants and duespec's error codes.
CODES = {"BadInput": "invalid", "NotFound": "not_found", "NotDue": "not_due", "Expired": "expired",
         "NotExpired": "not_expired", "NotOwner": "not_owner", "Full": "full"}


def deferral(id: int, fields: dict[str, Any]) -> dict[str, Any]:
    return {"id": id, "owner": fields["owner"], "due_at": fields["dueAt"], "expires_at": fields["expiresAt"]}


def to_duespec(step: ForeignStep) -> dict[str, Any]:
    answer = step.after["answer"]
    if answer["tag"] == "Done":
        result = {"ok": deferral(answer["value"]["id"], answer["value"])}
    elif answer["tag"] == "Failed":
        result = {"error": CODES[answer["value"]["tag"]]}
    else:
        raise ValueError(f"an operation left the answer {answer['tag']}")
    book = step.after["book"]
    state = {"max_open": step.config["max_open"], "next_id": step.after["nextId"],
             "open": [deferral(id, book[id]) for id in sorted(book)]}
    return {"result": result, "state": state}

"""The public reads that check a duebook with no observe() (`conform --observe none`).

After every rule, each deferral a step named (its `id` argument, or an id in its answer)
is read back with `get`, and the whole open book with `claimable` and `expirable` at the
step's instant, so a target whose answers are right but whose book is wrong still shows
it in an answer. `get` does not read the clock; the listings read it at the rule's last
instant, as a caller would."""

from __future__ import annotations

from typing import Any

from duespec.systems.duebook.ops import INT64_MAX

Json = Any

#: What the reads cannot show, for the coverage report.
BLIND_SPOTS = ("a closed deferral's row beyond `not_found`, and next_id until the next schedule answers "
               "it; max_open shows only as a full book's refusal")


def reads(step: dict[str, Json], before: dict[str, Json],
          state: dict[str, Json]) -> list[tuple[str, dict[str, Json]]]:
    """The reads after `step` (`before`, the state before its rule, is not needed: every
    listing is read whole)."""
    ids = set()
    args, result = step.get("args"), step.get("result")
    if isinstance(args, dict) and type(args.get("id")) is int:
        ids.add(args["id"])
    answer = result.get("ok") if isinstance(result, dict) else None
    for row in answer if isinstance(answer, list) else [answer]:
        if isinstance(row, dict) and type(row.get("id")) is int:
            ids.add(row["id"])
    found: list[tuple[str, dict[str, Json]]] = [("get", {"id": id}) for id in sorted(ids)]
    if type(step.get("now")) is int:
        found += [("claimable", {"limit": INT64_MAX}), ("expirable", {"limit": INT64_MAX})]
    return found

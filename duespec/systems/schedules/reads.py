"""The public reads that check a Resonate server with no observe() (`conform --observe
none`, a server without duespec's `debug.snap`).

After every rule, what each step named is read back: the promise of a `promise.*` step
(and both ends of a callback or listener), the task of a `task.*` step, the schedule of a
`schedule.*` step, and any promise or task id in its answer. A step of the environment
(`tick`, a timeout) can touch anything: after one, the promise or schedule a delivered
timeout names, and every promise, task and schedule the model's rule added, changed or
removed, are read back. What the target's pass did besides is in its answer (a tick's
`fired`, compared whole), and an object it changed behind that answer shows at the next
read of it. Every object after every tick would be most of a catch-up run's steps, each
a round trip to a real server, to read objects no step touched. Each read is an ordinary
step, its answer judged."""

from __future__ import annotations

from typing import Any

Json = Any

#: What the reads cannot show, for the coverage report.
BLIND_SPOTS = ("the outbox (messages sent to workers: compared only where the target gives them, its `messages` "
               "hook), timeouts armed but not yet due, callbacks and listeners "
               "beyond what promise.get projects, and objects the target holds under ids no step named")
#: Steps of the environment, which may change any object.
ENVIRONMENT = ("tick", "schedule.timeout", "promise.timeout")
GET = {"promise": "promise.get", "task": "task.get", "schedule": "schedule.get"}
KINDS = (("promise", "promises"), ("task", "tasks"), ("schedule", "schedules"))


def reads(step: dict[str, Json], before: dict[str, Json],
          state: dict[str, Json]) -> list[tuple[str, dict[str, Json]]]:
    op, args, result = step.get("op"), step.get("args"), step.get("result")
    if op in ENVIRONMENT:
        delivered = op != "tick" and isinstance(args, dict) and isinstance(args.get("id"), str)
        named = [(GET[op.split(".", 1)[0]], {"id": args["id"]})] if delivered else []
        return _unique([*named, *((GET[kind], {"id": id}) for kind, key in KINDS
                                  for id in _changed(before.get(key, []), state.get(key, [])))])
    if not isinstance(op, str) or not isinstance(args, dict):
        return []
    kind = op.split(".", 1)[0]
    named = [(kind, args.get("id"))] if kind in GET else []
    named += [("promise", args.get(key)) for key in ("awaited", "awaiter")]
    if isinstance(result, dict):
        for key, value in result.items():
            if key in GET and isinstance(value, dict):
                named.append((key, value.get("id")))
    return _unique((GET[kind], {"id": id}) for kind, id in named if isinstance(id, str))


def _unique(pairs: Any) -> list[tuple[str, dict[str, Json]]]:
    seen, found = set(), []
    for op, args in pairs:
        if (op, args["id"]) not in seen:
            seen.add((op, args["id"]))
            found.append((op, args))
    return found


def _changed(before: list[dict[str, Json]], after: list[dict[str, Json]]) -> list[str]:
    """The ids of the rows added, changed or removed between two lists of a state."""
    was = {row["id"]: row for row in before}
    now = {row["id"]: row for row in after}
    return [id for id, row in now.items() if was.get(id) != row] + [id for id in was if id not in now]

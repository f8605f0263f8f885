"""The regression corpus under traces/: named, commented scripts recorded from the model.

Re-record with `python -m duespec.traces.corpus [ROOT] [SYSTEM...]`; unchanged traces are
left alone so their `created` stamps do not churn.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from duespec.systems import BUILT_IN, get_system
from duespec.traces.format import Call, Json, TraceError, TraceHeader, read_trace, record, write_trace


@dataclass(frozen=True)
class Scenario:
    """A corpus trace: a named, commented script recorded from the model."""

    system: str
    name: str
    why: str
    script: tuple[Call, ...]
    #: Profiles to record it under (one file each); the system's first when empty.
    profiles: tuple[str, ...] = ()
    config: dict[str, Json] | None = None


def _duebook_scenarios() -> list[Scenario]:
    owner = {"owner": "alice"}
    def schedule(delay: int, ttl: int, now: int, who: str = "alice") -> Call:
        return ("schedule", {"owner": who, "delay": delay, "ttl": ttl}, now)

    int64_max = 2**63 - 1
    return [
        Scenario("duebook", "window_edges",
                 "Claimable on [due_at, expires_at): one tick early is not_due, expires_at is "
                 "expired; expire is refused one tick early and allowed at expires_at.",
                 (schedule(10, 5, 100),                       # id 1: window [110, 115)
                  ("claim", {"id": 1}, 109), ("claim", {"id": 1}, 110),
                  schedule(10, 5, 100),                       # id 2
                  ("claim", {"id": 2}, 114),
                  schedule(10, 5, 100),                       # id 3
                  ("claim", {"id": 3}, 115), ("expire", {"id": 3}, 114), ("expire", {"id": 3}, 115),
                  ("get", {"id": 3}, 115))),
        Scenario("duebook", "never_expires",
                 "ttl 0 means expires_at 0 and no expiry at all, even at the end of time.",
                 (schedule(5, 0, 0), ("expire", {"id": 1}, int64_max),
                  ("expirable", {"limit": 10}, int64_max), ("claim", {"id": 1}, int64_max))),
        Scenario("duebook", "ids_never_reused",
                 "A consumed id is gone for good: a new schedule takes the next id, and every "
                 "later call on the old one is not_found; only the owner may cancel.",
                 (schedule(1, 0, 0), ("cancel", {"id": 1, "caller": "mallory"}, 0),
                  ("cancel", {"id": 1, "caller": "alice"}, 0), schedule(1, 0, 0),
                  ("claim", {"id": 1}, 5), ("get", {"id": 1}, 5), ("cancel", {"id": 1, "caller": "alice"}, 5),
                  ("claim", {"id": 2}, 5), ("claim", {"id": 2}, 5), ("get", {"id": 2}, 5))),
        Scenario("duebook", "full_book",
                 "The cap counts open deferrals: a refused schedule allocates no id, and "
                 "consuming one frees a place.",
                 (schedule(0, 0, 0), schedule(0, 0, 0), schedule(0, 0, 0, "bob"),
                  ("claimable", {"limit": 5}, 0), ("claim", {"id": 1}, 0),
                  schedule(0, 0, 0, "bob"), ("get", {"id": 3}, 0)),
                 config={"max_open": 2}),
        Scenario("duebook", "bad_input_changes_nothing",
                 "Every malformed request is invalid and leaves the book, id counter included, "
                 "exactly as it was.",
                 (("schedule", {**owner, "delay": -1, "ttl": 0}, 0),
                  ("schedule", {"owner": "", "delay": 0, "ttl": 0}, 0),
                  ("schedule", {**owner, "delay": int64_max, "ttl": 0}, 1),
                  ("schedule", {**owner, "delay": 0, "ttl": 0}, -1),
                  ("claim", {"id": True}, 0), ("claim", {"id": 1.0}, 0), ("get", {"id": "1"}, 0),
                  ("claimable", {"limit": -1}, 0), ("claim", {"id": 1}, "5"), ("claim", {"id": 1}, True),
                  ("expire", {"id": 1}, int64_max + 1), schedule(0, 0, 0))),
        Scenario("duebook", "malformed_requests",
                 "Requests only JSON can send (D-27): an unknown op, args null or no object, a "
                 "missing or an extra argument, wrong-typed values, a now that is no integer. "
                 "Each is invalid and changes nothing (Get does not read now), so the last "
                 "claim still finds deferral 1.",
                 (schedule(0, 5, 0),
                  ("reschedule", {"id": 1}, 1), ("Claim", {"id": 1}, 1), ("claim", None, 1),
                  ("claim", [1], 1), ("expire", "1", 1), ("claim", {"id": 1, "now": 1}, 1),
                  ("cancel", {"id": 1}, 1), ("schedule", {}, 1), ("claim", {"id": "1"}, 1),
                  ("cancel", {"id": 1, "caller": None}, 1), ("claim", {"id": 1}, 1.5),
                  ("claim", {"id": 1}, None), ("get", {"id": 1}, 1.5), ("claim", {"id": 1}, 1))),
        Scenario("duebook", "listings_in_order",
                 "claimable is by (due_at, id) and expirable by (expires_at, id), both capped by limit.",
                 (schedule(30, 10, 0), schedule(10, 50, 0), schedule(10, 5, 0), schedule(20, 0, 0),
                  ("claimable", {"limit": 10}, 30), ("claimable", {"limit": 1}, 30),
                  ("expirable", {"limit": 10}, 100), ("expirable", {"limit": 1}, 100),
                  ("claimable", {"limit": 0}, 30)),
                 config={"max_open": 5}),
    ]


def _schedules_scenarios() -> list[Scenario]:
    start = 1_767_225_600_000  # 2026-01-01T00:00:00Z, on a minute
    minute = 60_000

    def create(id: str, cron: str, timeout: int, now: int, tags: dict[str, str] | None = None) -> Call:
        return ("schedule.create", {"id": id, "cron": cron, "promiseId": "{{.id}}.{{.timestamp}}",
                                    "promiseTimeout": timeout,
                                    "promiseParam": {"headers": {}, "data": None},
                                    "promiseTags": tags or {}}, now)

    both = ("lean", "server")
    return [
        Scenario("schedules", "crud",
                 "create is idempotent (the stored schedule comes back, the body is ignored); "
                 "delete removes the schedule and its timeout; search is 501.",
                 (create("s", "*/5 * * * *", minute, start), create("s", "0 0 * * *", 1, start + 1),
                  ("schedule.get", {"id": "s"}, start + 2), ("schedule.delete", {"id": "s"}, start + 3),
                  ("schedule.get", {"id": "s"}, start + 4), ("schedule.delete", {"id": "s"}, start + 5),
                  ("schedule.search", {}, start + 6))),
        Scenario("schedules", "catch_up_after_outage",
                 "After five minutes down, one tick fires each missed occurrence once, in order, "
                 "then the schedule waits for the next minute.",
                 (create("every-minute", "* * * * *", 10 * minute, start),
                  ("tick", {}, start + 5 * minute + 30_000),
                  ("promise.get", {"id": f"every-minute.{start + minute}"}, start + 5 * minute + 30_000),
                  ("promise.get", {"id": f"every-minute.{start + 5 * minute}"}, start + 5 * minute + 30_000),
                  ("promise.get", {"id": f"every-minute.{start + 6 * minute}"}, start + 5 * minute + 30_000),
                  ("schedule.get", {"id": "every-minute"}, start + 5 * minute + 30_000),
                  ("tick", {}, start + 5 * minute + 40_000))),
        Scenario("schedules", "expired_at_creation",
                 "A long outage with a short promiseTimeout: each late occurrence is past its "
                 "timeout when catch-up creates it. lean creates it pending at cronTime and then "
                 "times it out; server creates it already settled, with no task dispatched.",
                 (create("late", "* * * * *", 1000, start, {"resonate:target": "poll://any@workers"}),
                  ("tick", {}, start + 3 * minute + 5000),
                  ("promise.get", {"id": f"late.{start + minute}"}, start + 3 * minute + 5000)),
                 profiles=both),
        Scenario("schedules", "malformed_requests",
                 "An unknown op, args that are no object, extra keys, a `now` that is no integer "
                 "or out of range: each is 400 and changes nothing.",
                 (create("s", "* * * * *", minute, start),
                  ("warp", {}, start), ("schedule.get", None, start), ("schedule.get", {"id": "s", "extra": 1}, start),
                  ("schedule.get", {"id": "s"}, 1.5), ("tick", {}, True), ("tick", {}, -1),
                  ("tick", {}, 253_402_300_800_000), ("schedule.create", {"id": "a.b"}, start),
                  ("schedule.get", {"id": "s"}, start))),
        Scenario("schedules", "promise_timeouts",
                 "A pending promise times out at timeoutAt (rejected_timedout); a timer resolves.",
                 (("promise.create", {"id": "p", "timeoutAt": start + 100, "param": {"headers": {}, "data": None},
                                      "tags": {}}, start),
                  ("promise.create", {"id": "t", "timeoutAt": start + 200, "param": {"headers": {}, "data": "x"},
                                      "tags": {"resonate:timer": "true"}}, start),
                  ("promise.get", {"id": "p"}, start + 99), ("promise.get", {"id": "p"}, start + 100),
                  ("tick", {}, start + 300), ("promise.get", {"id": "t"}, start + 300))),
    ]


def corpus_scenarios() -> list[Scenario]:
    return _duebook_scenarios() + _schedules_scenarios()


def write_corpus(root: str | os.PathLike[str], systems: Iterable[str] = tuple(BUILT_IN)) -> list[Path]:
    """(Re)record every scenario of `systems` from the model into root/<system>/<name>.jsonl.

    A file whose header and steps would come out the same is left alone, so re-recording
    after a model change shows exactly the traces whose answers moved. Returns those written."""
    written = []
    wanted = set(systems)
    for scenario in corpus_scenarios():
        if scenario.system not in wanted:
            continue
        descriptor = get_system(scenario.system)
        profiles = scenario.profiles or descriptor.profiles[:1]
        for profile in profiles:
            config = scenario.config if scenario.config is not None else descriptor.config(profile)
            suffix = f"-{profile}" if len(profiles) > 1 else ""
            header = TraceHeader(scenario.system, profile, config, producer="duespec corpus (model)",
                                 extra={"scenario": scenario.name, "why": scenario.why})
            path = Path(root) / scenario.system / f"{scenario.name}{suffix}.jsonl"
            steps = list(record(scenario.system, config, scenario.script))
            if not _same_trace(path, header, steps):
                written.append(write_trace(path, header, steps))
    return written


def _same_trace(path: Path, header: TraceHeader, steps: list[dict[str, Json]]) -> bool:
    if not path.exists():
        return False
    try:
        old_header, old_steps = read_trace(path)
        same_header = {**old_header.to_json(), "created": None} == {**header.to_json(), "created": None}
        return same_header and list(old_steps) == steps
    except TraceError:
        return False


if __name__ == "__main__":  # python -m duespec.traces.corpus [ROOT] [SYSTEM...]: re-record the corpus
    import sys

    changed = write_corpus(sys.argv[1] if len(sys.argv) > 1 else "traces", sys.argv[2:] or tuple(BUILT_IN))
    for written_path in changed:
        print(f"wrote {written_path}")
    print(f"{len(changed)} trace(s) written; the others are unchanged")

"""`duespec catch-up`: which catch-up policy a Resonate server implements, from its answers.

Servers read a timer pass after several missed cron occurrences four ways (spec/schedules.md,
"Catch-up policies"). This command asks the server, not its documentation: on a pinned clock it
creates a minutely schedule, lets MISSED occurrences pass, ticks PASSES times at the same
instant and after each pass reads back the schedule and every promise an occurrence could
have made. It sends the same requests to the reference model under each policy and names
the policy whose model answers exactly as the server did; when none does, it says so and
shows what the server answered beside what each policy predicts. Nothing is expected but
what the models answer.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from duespec.exits import EXIT_FAILED, EXIT_HOLDS, UsageError
from duespec.model.schedules.expand import expand
from duespec.model.schedules.state import CATCH_UP_POLICIES
from duespec.systems import get_system
from duespec.systems.schedules.adapter import ModelTarget
from duespec.targets.interface import Json, Target, TargetError, close_target
from duespec.targets.resolve import SPEC_HELP, TargetSpecError, close_factory, resolve
from duespec.targets.stdio import DEFAULT_TIMEOUT, START_TIMEOUT

MINUTE = 60_000
#: The probe's instants: a schedule made on a minute's edge (2026-01-01T00:00Z), and the
#: timer passes half a minute after its MISSED-th occurrence.
CREATED_AT = 1_767_225_600_000
MISSED = 3
PASSES = 3
FIRING_AT = CREATED_AT + MISSED * MINUTE + MINUTE // 2
SCHEDULE_ID = "duespec-catch-up"
SCHEDULE = {"id": SCHEDULE_ID, "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}",
            # an hour: no occurrence times out while the probe reads it
            "promiseTimeout": 60 * MINUTE, "promiseParam": {"headers": {}, "data": None},
            # a target, which the deployed server requires of a schedule (DEP-01)
            "promiseTags": {"resonate:target": "poll://any@duespec-catch-up"}}
#: Where an occurrence's promise may be: each missed cronTime, and the firing instant
#: itself (a server that names its one occurrence after the firing time).
CANDIDATE_TIMES = tuple(CREATED_AT + k * MINUTE for k in range(1, MISSED + 1)) + (FIRING_AT,)


@dataclass(frozen=True)
class Pass:
    """What a server showed after one timer pass: which candidate occurrences exist, and
    the schedule's nextRunAt (None: the schedule could not be read)."""
    occurrences: tuple[int, ...]
    next_run_at: Json

    def describe(self) -> str:
        made = ", ".join(clock(t) for t in self.occurrences) or "none"
        return f"occurrences {made}; nextRunAt {clock(self.next_run_at)}"


def clock(instant: Json) -> str:
    """An instant of the probe as the time of day it names (UTC), or as it came."""
    if type(instant) is int and CREATED_AT <= instant < CREATED_AT + 24 * 60 * MINUTE:
        return datetime.fromtimestamp(instant / 1000, tz=timezone.utc).strftime("%H:%M:%S")
    return repr(instant)


def probe(target: Target, config: dict[str, Json]) -> list[Pass]:
    """The probe's requests, sent to one target reset with `config` (a server probed keeps
    its own: {}); what it showed after each pass.

    A refused create or tick means the target cannot be probed this way: TargetError."""
    target.reset(config)
    created = target.step("schedule.create", dict(SCHEDULE), CREATED_AT)
    if created.get("status") != 200:
        raise TargetError(f"schedule.create of a minutely schedule answered {created}", unusable=True)
    passes = []
    for _ in range(PASSES):
        ticked = target.step("tick", {}, FIRING_AT)
        if ticked.get("status") != 200:
            raise TargetError(f"tick at {FIRING_AT} answered {ticked}", unusable=True)
        found = tuple(t for t in CANDIDATE_TIMES
                      if target.step("promise.get", {"id": expand(SCHEDULE["promiseId"], SCHEDULE_ID, t)},
                                     FIRING_AT).get("status") == 200)
        read = target.step("schedule.get", {"id": SCHEDULE_ID}, FIRING_AT)
        record = read.get("schedule") if read.get("status") == 200 else None
        passes.append(Pass(found, record.get("nextRunAt") if isinstance(record, dict) else None))
    return passes


def predictions() -> dict[str, list[Pass]]:
    """What the reference model shows, under each catch-up policy, for the same requests."""
    predicted = {policy: probe(ModelTarget(), {"catch_up": policy}) for policy in CATCH_UP_POLICIES}
    distinct = {tuple(p) for p in predicted.values()}
    assert len(distinct) == len(predicted), "the probe does not tell the policies apart"
    return predicted


def verdict(answered: list[Pass], predicted: dict[str, list[Pass]]) -> tuple[str | None, list[str]]:
    """The policy whose predictions are exactly the answers (None: no policy), and the report."""
    matches = [policy for policy, passes in predicted.items() if passes == answered]
    lines = [f"  pass {i}: {p.describe()}" for i, p in enumerate(answered, 1)]
    if matches:
        return matches[0], lines
    lines.append("what each policy's model predicts for the same requests:")
    for policy, passes in predicted.items():
        same = [p.occurrences for p in passes] == [p.occurrences for p in answered]
        lines.append(f"  {policy}{' (the same occurrences; nextRunAt differs)' if same else ''}:")
        lines += [f"    pass {i}: {p.describe()}" for i, p in enumerate(passes, 1)]
    return None, lines


def main(args: argparse.Namespace) -> int:
    system = get_system("schedules")
    try:
        factory = resolve(system, args.target, timeout=args.timeout, start_timeout=max(args.timeout, START_TIMEOUT))
    except TargetSpecError as error:
        raise UsageError(str(error)) from None
    target: Any = None
    try:
        target = factory()
        answered = probe(target, {})
    finally:
        close_target(target)
        close_factory(factory)
    policy, lines = verdict(answered, predictions())
    where = (f"target={args.target}: a minutely schedule created at {clock(CREATED_AT)} UTC, "
             f"{MISSED} occurrences missed, {PASSES} timer passes at {clock(FIRING_AT)}")
    if policy is None:
        print(f"CATCH-UP: none of the four ({', '.join(CATCH_UP_POLICIES)}) {where}")
    else:
        print(f"CATCH-UP: {policy} {where}")
    print("\n".join(lines))
    return EXIT_HOLDS if policy is not None else EXIT_FAILED


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "catch-up", help="name the catch-up policy a Resonate server implements",
        description="Tell which of the catch-up policies of spec/schedules.md (all, one-per-pass, "
                    "once-skip, never) a Resonate server implements, from its answers alone: on a pinned "
                    "clock (resonate:debug_time, debug.tick) create a minutely schedule, miss "
                    f"{MISSED} occurrences, tick {PASSES} times, read back the promises and the "
                    "schedule, and name the policy whose model answers the same. Exit 0: a policy "
                    "named; 1: none of the four; 2: bad usage or an unusable target.",
        epilog="example: duespec catch-up --target http://127.0.0.1:8001")
    parser.add_argument("--target", required=True, metavar="TARGET", help=f"the server to probe: {SPEC_HELP}")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"longest wait for one answer (default {DEFAULT_TIMEOUT:g})")
    parser.set_defaults(run=main)

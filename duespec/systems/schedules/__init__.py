"""Resonate schedules for the harness, a room per idea:

- adapter.py: the model and the implementation behind the JSON contract (config_of, the
  store reopened as a restarted server would);
- ops.py: the op table and every value the campaign sends (docs/operations.md), the cron
  dialect's strategies among them;
- machine.py: the lockstep machine's schedule, clock and timeout rules; tasks.py: its
  promise and task rules;
- requirements.py: what a default campaign must reach in each profile, and why not;
- long_run.py: the workload of `conform --long-run`;
- concurrency.py: what a linearizability search needs;
- namespace.py: one run's ids on a server that cannot be reset.

This module describes the system once (SYSTEM, built on first use: what only a campaign
needs, Hypothesis and the implementation, is imported then, so that `duespec linearize`,
which needs the model, the ops and CONCURRENCY, loads none of it).
`duespec.systems.schedules:ModelTarget` and `:ImplTarget` name targets on the command line,
so both stay importable from here."""

from __future__ import annotations

from typing import Any

from duespec.systems.schedules.adapter import DEFAULT_RETRY_TIMEOUT, PROFILES, ImplTarget, ModelTarget
from duespec.systems.schedules.concurrency import CONCURRENCY
from duespec.systems.schedules.operations import OPERATIONS

__all__ = ["CONCURRENCY", "OPERATIONS", "SYSTEM", "VALUE_SPACE", "ImplTarget", "ModelTarget", "SchedulesMachine"]


def _system() -> Any:
    from duespec.systems import System
    from duespec.systems.schedules.long_run import LONG_RUN
    from duespec.systems.schedules.machine import SchedulesMachine
    from duespec.systems.schedules.namespace import NAMESPACE
    from duespec.systems.schedules.ops import MATRIX, with_required_tags
    from duespec.systems.schedules.reads import BLIND_SPOTS, reads
    from duespec.systems.schedules.requirements import OUT_OF_REACH, REQUIRED_TAGS, out_of_reach_with_tags

    return System(
        name="schedules",
        profiles=PROFILES,
        config=lambda profile: {"profile": profile, "retry_timeout": DEFAULT_RETRY_TIMEOUT},
        model=ModelTarget,
        impl=ImplTarget,
        machine=SchedulesMachine,
        catalogue="schedules.md",
        operations=OPERATIONS,
        state_keys=("promises", "tasks", "schedules", "promiseTimeouts", "taskTimeouts",
                    "scheduleTimeouts", "outbox"),
        required_tags=REQUIRED_TAGS,
        optional_args={"schedule.search": ("tags", "limit", "cursor")},
        out_of_reach=OUT_OF_REACH,
        tag_catalogues=("cron.md",),
        seeded_draws_only=True,
        long_run=LONG_RUN,
        # Resonate's ops: a Resonate server over HTTP (duespec serve, or the real one) is a target.
        http_targets=True,
        proofs="duespec.spec.schedules_z3",
        probes=reads,
        blind_spots=BLIND_SPOTS,
        # the unknown op the machine's `garbage` rule sends (400, X-03.unknown_op)
        unknown_ops=("warp",),
        # a request the spec refuses, whatever its op, is answered 400 and changes nothing
        refuses=lambda answer: type(answer) is dict and answer.get("status") == 400,
        # a 2xx takes effect, and so does task.suspend's 300 (it clears the task's buffered
        # resumes, T-06): a target that refuses what the model answered 300 holds another state
        accepts=lambda answer: (type(answer) is dict and type(answer.get("status")) is int
                                and 200 <= answer["status"] <= 300),
        matrix=MATRIX,
        tag_request=with_required_tags,
        out_of_reach_with_tags=out_of_reach_with_tags,
        # a server that cannot be reset: each run in a namespace of its own (namespace.py)
        namespace=NAMESPACE,
    )


def __getattr__(name: str) -> Any:
    """SYSTEM and the campaign's names, imported (and SYSTEM built, once) when first asked for."""
    if name == "SYSTEM":
        globals()["SYSTEM"] = system = _system()
        return system
    if name == "SchedulesMachine":
        from duespec.systems.schedules.machine import SchedulesMachine
        return SchedulesMachine
    if name == "VALUE_SPACE":
        from duespec.systems.schedules.ops import VALUE_SPACE
        return VALUE_SPACE
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

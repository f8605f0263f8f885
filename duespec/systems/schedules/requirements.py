"""What a default schedules campaign must reach in each profile (REQUIRED_TAGS), and why a
profile cannot reach some requirements or branches (OUT_OF_REACH): read by the coverage
report and checked by tests/test_schedules_machine.py."""

from __future__ import annotations

from typing import Mapping

from duespec.systems.schedules.dialect import DIALECT_TAGS
from duespec.systems.schedules.ops import FIELD_EDGES, MATRIX


#: Branches a default campaign reaches in every profile that can take them (checked by
#: tests/test_schedules_machine.py; OUT_OF_REACH says which a profile cannot take, and why).
REQUIRED_TAGS = frozenset({
    "S-01.absent", "S-01.found",
    "S-02.created", "S-02.exists", "S-02.invalid",
    "S-03.absent", "S-03.deleted",
    "S-04.answered",
    "P-01.absent", "P-01.pending", "P-01.projected", "P-01.settled", "P-01.invalid",
    "P-02.pending", "P-02.pending_external", "P-02.dispatched", "P-02.delayed", "P-02.delay_passed",
    "P-02.expired_at_creation", "P-02.expired_at_creation_task", "P-02.exists",
    "P-02.exists_projected", "P-02.invalid",
    "TO-01.absent", "TO-01.not_pending", "TO-01.settled", "TO-01.task_fulfilled",
    "TO-02.occurrence", "TO-02.caught_up",
    "TO-03.absent", "TO-03.fired",
    "ENV-01.promise", "ENV-01.schedule", "ENV-01.idle", "ENV-01.invalid",
    "X-01.first_after_now", "X-01.next_after_cron_time", "X-02.expanded", "X-03.unknown_op",
    "X-04.end_of_time",
    # the readings of the spec: each profile's own branches (the others' are out of its reach)
    "X-05.lean_now_is_cron_time", "X-05.server_now_is_firing_time", "S-04.not_implemented",
    "DEP-01.missing_target", "DEP-02.one_occurrence", "DEP-02.still_owed",
    "DEP-03.pending", "DEP-03.expired_at_firing", "DEP-03.exists",
    "DEP-04.page_with_more", "DEP-04.last_page",
    # every property checked on a step where it says something (not vacuously)
    "SP-01.fired", "SP-02.tick", "SP-03.duplicate", "SP-03.new", "SP-04.delete",
    "SP-05.missing_schedule_fired", "SP-06.fired", "SP-07.refired", "SP-08.expired_at_creation",
    "SP-09.rejected", "SP-10.read", "SP-11.state", "SP-12.state",
    # promises and tasks: every handler's main branch, the guard's refusals, and the paths
    # the brief names (a lease lapsing, a suspension resumed by a settle and by a timeout,
    # listeners unblocked). Not required: TO-04/TO-05's absent/not_* branches (unreachable
    # through tick: SP-17), T-01/T-03..T-08/T-10 `no_promise` and T-02 `no_task` (every
    # task is created with its promise and neither is ever deleted), and the rarer
    # refusals, which the unit tests cover.
    "R-00.resumed", "R-00.buffered", "R-00.fulfilled",
    "TO-01.early", "TO-01.resumed", "TO-01.unblocked",
    "P-03.absent", "P-03.already_settled", "P-03.projected", "P-03.settled", "P-03.resumed",
    "P-03.unblocked", "P-03.invalid",
    "P-04.absent", "P-04.no_awaiter", "P-04.already_settled", "P-04.registered", "P-04.awaiter_done",
    "P-05.absent", "P-05.already_settled", "P-05.registered",
    "P-06.not_implemented",
    "T-01.found", "T-01.projected",
    "T-02.created", "T-02.expired_at_creation", "T-02.no_target", "T-02.fulfilled", "T-02.acquired",
    "T-02.busy",
    # T-03.promise_done (acquire a pending task whose promise is already settled) is rare
    # here and reached by some seeds only: counted when reached, not required.
    "T-03.acquired", "T-03.stale_version", "T-03.wrong_state",
    "T-04.create", "T-04.settle", "T-04.wrong_state",
    "T-05.renewed", "T-05.not_held",
    "T-06.suspended", "T-06.awaits_nothing", "T-06.already_settled", "T-06.awaited_absent", "T-06.stale_version",
    "T-07.fulfilled", "T-07.resumed", "T-07.wrong_state",
    "T-08.released", "T-08.stale_version",
    "T-09.halted", "T-09.already_halted", "T-09.fulfilled",
    "T-10.continued", "T-10.not_halted",
    "T-11.not_implemented",
    "TO-04.redispatched", "TO-05.lapsed", "ENV-01.retry", "ENV-01.lease",
    "X-06.settle_state",
    "SP-13.settled_kept", "SP-14.acquired", "SP-14.fenced", "SP-15.fulfilled_kept", "SP-16.callback",
    "SP-16.listener", "SP-17.state",
    # the regimes of spec/schedules.md (SR-01..SR-05)
    "SR-01.alias", "SR-01.names", "SR-01.question_mark", "SR-01.range", "SR-01.step",
    "SR-01.list", "SR-01.both_day_fields", "SR-01.rare_date",
    "SR-02.leap_day", "SR-02.century_year", "SR-02.month_end", "SR-02.end_of_time",
    "SR-03.default_retry_timeout", "SR-03.retry_timeout_one", "SR-03.retry_timeout_set",
    "SR-04.odd_now",
    *(f"SR-05.{field.replace('-', '_')}" for field in FIELD_EDGES),
    *(MATRIX.tag(*cell) for cell in MATRIX.cells),
    *DIALECT_TAGS,  # SR-07, SR-08: every cron feature sent, catch-up at every hour
})

#: Why a profile's campaigns cannot reach a requirement (an ID) or one of its branches (a
#: tag): each a fact of the model, which the report prints beside the requirement and the
#: machine test checks against a default campaign (nothing listed here is ever reached).
_DEPLOYED_ONLY = ("the deployed server's reading (spec/schedules.md, the deployed reading), "
                  "which profile {profile} does not take: there {lean}; the deployed campaign "
                  "and tests/test_schedules_deployed.py check it")
_LEAN_AND_SERVER_READINGS = {
    "DEP-01": "any promiseTags are accepted (S-02)",
    "DEP-02": "tick and a schedule timeout create every owed occurrence at once (TO-02, ENV-01)",
    "DEP-03": "an occurrence is created by P-02 at the now of X-05",
    "DEP-04": "schedule.search is 501 (S-04)",
}
_DEPLOYED_TICK = ("profile deployed's tick is one pass of the due promise and schedule "
                  "timeouts (DEP-02) and fires no task timeout (docs/operations.md tick; "
                  "spec/schedules.md, deviations of deployed), and no op fires a single task "
                  "timeout, so {what} in this profile; the lean and server campaigns reach {it}")
OUT_OF_REACH: dict[str, dict[str, str]] = {
    **{profile: {
        **{id: _DEPLOYED_ONLY.format(profile=profile, lean=lean)
           for id, lean in _LEAN_AND_SERVER_READINGS.items()},
        other: f"profile {other_profile}'s reading of X-05; profile {profile} creates each "
               f"occurrence at {now} (spec/schedules.md X-05)",
    } for profile, other, other_profile, now in (
        ("lean", "X-05.server_now_is_firing_time", "server", "now = cronTime"),
        ("server", "X-05.lean_now_is_cron_time", "lean", "the firing time"))},
    "deployed": {
        "TO-04": _DEPLOYED_TICK.format(what="onTaskRetryTimeout never runs", it="it"),
        "TO-05": _DEPLOYED_TICK.format(what="onTaskLeaseTimeout never runs", it="it"),
        **dict.fromkeys(("ENV-01.retry", "ENV-01.lease"), _DEPLOYED_TICK.format(
            what="tick fires neither a retry nor a lease timeout", it="both")),
        "X-05": "profile deployed replaces both readings of X-05 by the deployed server's "
                "DEP-03 (created at cronTime, expiry judged at the firing time), so catch-up "
                "never takes X-05's branches; the lean and server campaigns reach them",
        "S-04.not_implemented": "profile deployed answers schedule.search as the deployed "
                                "server does (DEP-04), never 501",
    },
}


def out_of_reach_with_tags(tags: Mapping[str, str]) -> dict[str, str]:
    """Branches a campaign whose every promise and schedule carries `tags` (--require-tag)
    cannot take, and why: a `resonate:target` on every promise leaves none untargeted."""
    if "resonate:target" not in tags:
        return {}
    why = ("every promise and schedule this campaign creates carries the required "
           "resonate:target tag (--require-tag), so {what}")
    return {
        # DEP-01 has that one branch: the whole requirement is out of reach
        "DEP-01": why.format(what="no schedule.create lacks a target (DEP-01's only branch)"),
        "T-02.no_target": why.format(what="task.create never meets an untargeted promise"),
    }

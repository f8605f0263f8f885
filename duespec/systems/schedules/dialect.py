"""Every feature of the cron dialect, and catch-up at every hour of the day, each with a
draw of its own (spec/schedules.md SR-07, SR-08).

Both used to be left to chance: a cron feature was one value among many of the create
rule's pools, catch-up past 01:00 whatever the clock moves happened to do. Each time the
openings grew (a field's edges, a malformed `now` to every op, the malformation matrix),
the draws moved, and a default campaign stopped sending month names, `?`, garbage, or a
catch-up after the first hour, with nothing to say so: hand-written mutants that refuse
`apr` or `?` or split the day by 61 minutes then passed. Here two rules draw, one the
feature sent, the other the hour (and whether the catch-up crosses a month or a year end),
and each tags what it sent, so the coverage report counts every feature and hour, and
REQUIRED_TAGS holds a default campaign to all of them at any seed."""

from __future__ import annotations

import calendar
import datetime as dt
from typing import TYPE_CHECKING

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from duespec.coverage import reached
from duespec.systems.schedules.adapter import HOUR, MINUTE
from duespec.systems.schedules.ops import (
    EDGE_ID,
    PARAMS,
    SCHEDULE_IDS,
    TARGET,
    TEMPLATES,
)
from duespec.targets.interface import Json

WEEKDAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
ALIAS_NAMES = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
#: The cases a name or alias is written in (C-01, C-06: any case), turning from name to name.
CASES = {"lower": str.lower, "upper": str.upper, "capitalized": str.capitalize}


#: The case each cron of `_in_every_case` writes its name in (tagged `SR-07.<feature>_<case>`).
CASE_OF: dict[str, str] = {}


def _in_every_case(template: str, names: tuple[str, ...]) -> tuple[str, ...]:
    """One cron a name (its nextRunAt tells each name's value apart), the cases turning so
    that each case is sent with several names."""
    crons = []
    for n, name in enumerate(names):
        case = tuple(CASES)[n % len(CASES)]
        crons.append(template.format(CASES[case](name)))
        CASE_OF[crons[-1]] = case
    return tuple(crons)


#: Each feature of spec/cron.md (C-01..C-07), with crons that use it: the accepted ones
#: (each created, its first nextRunAt compared, and deleted again) and the forms the
#: dialect rejects (each a 400 that changes nothing).
ACCEPTED_FEATURES: dict[str, tuple[str, ...]] = {
    "month_names": _in_every_case("0 0 1 {} *", ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep",
                                                 "oct", "nov", "dec")),
    "weekday_names": _in_every_case("0 0 * * {}", WEEKDAY_NAMES),
    "aliases": _in_every_case("{}", ALIAS_NAMES),
    "question_mark_day_of_month": ("0 0 ? * mon", "0 12 ? 2 *", "30 6 ? * ?"),
    "question_mark_day_of_week": ("0 0 15 * ?", "0 0 31 * ?", "0 9 29 feb ?"),
    "ranges": ("10-20 * * * *", "0 9-17 * * *", "0 0 10-12 * *", "0 0 1 3-5 *", "0 0 * * 2-4",
               "0 0 1 jan-mar *", "0 0 * * mon-wed", "0 0 * * fri-7", "0 0 * * 5-7"),
    "steps": ("*/7 * * * *", "5/20 * * * *", "0 */5 * * *", "0 0 */10 * *", "0 0 1 */5 *",
              "0 0 * * */3", "10-40/10 * * * *", "0 0 1 2-12/4 *", "0 0 * * 1-7/2", "0 0 3/9 * *"),
    "lists": ("0,15,45 * * * *", "0 6,18 * * *", "0 0 1,15,31 * *", "0 0 1 feb,aug,11 *",
              "0 0 * * sun,wed,5", "5,10-12,*/20 * * * *", "0 0 * * 0,7"),
    "both_day_fields": ("0 0 13 * fri", "0 0 1,15 * mon", "0 0 31 * sat,sun"),
    "spaces_and_tabs": ("\t0 0 * * *", "0 0 * * * ", " \t0\t0 1 * *\t ", "0  0   *\t\t* *"),
}
REJECTED_FEATURES: dict[str, tuple[str, ...]] = {
    "trailing_garbage": ("5x * * * *", "0 5; * * *", "0 0 5x * *", "0 0 1 janx *", "0 0 * * monx",
                         "*x * * * *", "*/5x * * * *", "1-5x * * * *", "0 0 * * 1,", "@dailyx",
                         "0 0 * * * #", "0 0 1 jan *!"),
    "leading_garbage": ("x5 * * * *", "0 ;5 * * *", "0 0 x5 * *", "0 0 1 xjan *", "0 0 * * xmon",
                        ",0 0 * * *", "-5 * * * *", "/5 * * * *", "@ daily", "x@daily", "#0 0 * * *"),
    "names_out_of_place": ("0 0 1 mon *", "0 0 * * jan", "0 0 jan * *", "mon 0 * * *", "0 0 1 jan-3/feb *"),
}
CRON_FEATURES: dict[str, tuple[str, ...]] = {**ACCEPTED_FEATURES, **REJECTED_FEATURES}

#: The crons a catch-up runs on: every minute, a step that misses some, and hours' ends.
CATCH_UP_CRONS = ("* * * * *", "*/7 * * * *", "0,1,58,59 * * * *")
#: Where a catch-up happens: on coming days (every other hour, from an even or an odd one),
#: or across a month's or a year's end.
CATCH_UP_PLACES = ("a_day", "month_end", "year_end")
#: A schedule is created this long before an hour's end, and left unticked twice as long:
#: its catch-up starts late in the hour and crosses into the next, after at least one
#: occurrence past `nextRunAt` in the first hour (a catch-up that restarts the next hour's
#: minutes where the first hour's began skips them).
CATCH_UP_LEAD = 3 * MINUTE
_EPOCH = dt.datetime(1970, 1, 1)
_LAST_DAY = dt.date(9999, 12, 30)  # the last day with a day after it, where the end of time has its own story


class DialectAndCatchUp:
    """The two rules, mixed into SchedulesMachine (which provides act, schedules and
    move_clock)."""

    if TYPE_CHECKING:  # what SchedulesMachine provides, declared for the type checker alone
        now: int
        deleted: list[str]

        def act(self, op: str, args: dict[str, Json]) -> dict[str, Json]: ...
        def schedules(self) -> list[dict[str, Json]]: ...
        def move_clock(self, to: int) -> None: ...
        def invariants_hold(self) -> None: ...

    @rule(feature=st.sampled_from(tuple(CRON_FEATURES)))
    def sends_a_feature_of_the_dialect(self, feature: str) -> None:
        """SR-07: every cron of one feature, the other arguments valid: an accepted one is
        created under `edge` (its nextRunAt compared) and deleted, a rejected one is a 400."""
        create = {"promiseId": TEMPLATES[0], "promiseTimeout": MINUTE, "promiseParam": PARAMS[0],
                  "promiseTags": TARGET}
        for cron in CRON_FEATURES[feature]:
            reached(f"SR-07.{feature}")
            if cron in CASE_OF:
                reached(f"SR-07.{feature}_{CASE_OF[cron]}")
            if self.act("schedule.create", {"id": EDGE_ID, "cron": cron, **create})["status"] == 200:
                self.act("schedule.delete", {"id": EDGE_ID})

    def has_no_schedule(self) -> bool:
        return not self.schedules()

    @precondition(has_no_schedule)
    @rule(hour=st.sampled_from(range(2)), place=st.sampled_from(CATCH_UP_PLACES),
          cron=st.sampled_from(CATCH_UP_CRONS), pick=st.integers(0, 2))
    def catches_up_at_an_hour(self, hour: int, place: str, cron: str, pick: int) -> None:
        """SR-08: on a book with no schedule (so that the clock can jump there), catch-ups on
        the twelve coming days at every other hour (the even ones or the odd ones, both
        draws deciding which), or one at the end of this month or year: each a schedule
        created 3 minutes before the hour's end, left unticked for 6,
        over the hour's (the day's, the month's, the year's) end, caught up by one tick, and
        deleted."""
        today = (_EPOCH + dt.timedelta(milliseconds=self.now)).date()
        if today >= _LAST_DAY:
            return
        if place == "a_day":  # the coming days up to the last with a day after it (no date past 9999)
            days = [(today + dt.timedelta(days=1 + n), (hour + pick) % 2 + 2 * n)
                    for n in range(min(12, (_LAST_DAY - today).days))]
        else:
            month = 12 if place == "year_end" else today.month
            days = [(dt.date(today.year, month, calendar.monthrange(today.year, month)[1]), 23)]
        for day, at in days:
            if day >= _LAST_DAY or day <= today:
                return  # today is this month's (this year's) last day: the next catch-up will find one
            end_of_hour = (dt.datetime.combine(day, dt.time(at)) - _EPOCH) // dt.timedelta(milliseconds=1) + HOUR
            self.catches_up_once(end_of_hour - CATCH_UP_LEAD + pick, cron, SCHEDULE_IDS[pick],
                                 [f"SR-08.hour_{at:02}", *([] if place == "a_day" else [f"SR-08.{place}"])])

    def catches_up_once(self, start: int, cron: str, id: str, tags: list[str]) -> None:
        self.move_clock(start)
        if self.now != start:
            return
        if self.act("schedule.create", {
                "id": id, "cron": cron, "promiseId": TEMPLATES[0], "promiseTimeout": MINUTE,
                "promiseParam": PARAMS[0], "promiseTags": TARGET})["status"] != 200:
            return
        self.move_clock(start + 2 * CATCH_UP_LEAD)
        if self.now == start + 2 * CATCH_UP_LEAD:
            for tag in tags:
                reached(tag)
        self.act("tick", {})
        # the states compared after each catch-up, not only after the rule's last one: a
        # catch-up that goes wrong is then found (and its run shrunk) at its own tick, not
        # dozens of steps of later days on
        self.invariants_hold()
        if self.act("schedule.delete", {"id": id})["status"] == 200:
            self.deleted.append(id)


#: The coverage tags the two rules give (REQUIRED_TAGS holds a default campaign to each).
DIALECT_TAGS = frozenset({
    *(f"SR-07.{feature}" for feature in CRON_FEATURES),
    *(f"SR-07.{feature}_{case}" for feature, crons in CRON_FEATURES.items() for case in CASES
      if any(cron in CASE_OF for cron in crons)),
    *(f"SR-08.hour_{hour:02}" for hour in range(24)), "SR-08.month_end", "SR-08.year_end",
})

"""Lean `nextCron` (opaque in the spec): the next fire instant strictly after `after_ms`.

The model takes its meaning from croniter, the reference the dialect (spec/cron.md) is
defined to agree with; the dialect check comes first so croniter never sees an expression
it reads differently. Obviously right rather than fast: impl/cron.py is the fast one."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from duespec.coverage import reached
from duespec.spec.cron_dialect import ALIASES, HORIZON_MS, MINUTE_MS, parse

if TYPE_CHECKING:
    from croniter import croniter


def next_cron(cron: str, after_ms: int) -> int:
    """The smallest fire instant > after_ms, or HORIZON_MS if none lies before it (C-08)."""
    if type(after_ms) is not int:
        raise ValueError(f"after_ms must be an integer, got {after_ms!r}")
    if not 0 <= after_ms < HORIZON_MS:
        raise ValueError(f"after_ms must lie in [0, {HORIZON_MS}), got {after_ms}")
    day_or = _both_days_restricted(cron)
    for branch in _rules_read(cron):
        reached(branch)
    # Fire instants are whole minutes, so those after `after_ms` are exactly those after the
    # start of its minute: croniter then only ever sees an exact whole number of seconds.
    minute_start = after_ms - after_ms % MINUTE_MS
    if minute_start + MINUTE_MS >= HORIZON_MS:
        reached("C-08.horizon")
        return HORIZON_MS
    start = minute_start // 1000
    fire = _croniter_next(cron, start)
    if fire is None and day_or:
        reached("C-08.day_branches")
        # croniter's day_or search scans each day field on its own and gives up on both when
        # either runs past year 9999; asked separately each still finds its own next fire.
        words = cron.split()
        day_branch = " ".join(words[:4] + ["*"])
        weekday_branch = " ".join(words[:2] + ["*", words[3], words[4]])
        fires = [f for f in (_croniter_next(day_branch, start),
                             _croniter_next(weekday_branch, start)) if f is not None]
        fire = min(fires, default=None)
    if fire is None:
        reached("C-08.horizon")
        return HORIZON_MS
    reached("C-02.next_fire")
    return fire


@lru_cache(maxsize=4096)
def _both_days_restricted(cron: str) -> bool:
    """Validate once per expression; True when both day fields restrict (croniter ORs them)."""
    expression = parse(cron)
    return not (expression.any_day or expression.any_weekday)


@lru_cache(maxsize=4096)
def _rules_read(cron: str) -> tuple[str, ...]:
    """The dialect's rules that give this expression its meaning beyond one value per field,
    as branches: a day-of-week 7 read as Sunday (C-04), both day fields restricted and
    ORed (C-05). A server that reads one of them otherwise differs for that reason, which
    is then the difference's cause, apart from a next fire computed wrong for another."""
    rules = ["C-05.either_day"] if _both_days_restricted(cron) else []  # validates it first
    words = ALIASES.get(cron.strip(" \t").lower(), cron).split()
    for item in words[4].split(","):
        ends = item.partition("/")[0].split("-")
        if any(end.isdigit() and int(end) == 7 for end in ends):
            rules.append("C-04.sunday_seven")
            break
    return tuple(rules)


@lru_cache(maxsize=4096)
def _iterator(cron: str) -> croniter:
    """Parsing costs croniter ~200 us, so keep one object per expression and set its start.
    croniter is imported here, at the first schedule, not with the model: loading it costs
    more than a whole `duespec linearize` of a history without schedules."""
    from croniter import croniter

    return croniter(cron.strip(" \t"), 0)


def _croniter_next(cron: str, start_seconds: int) -> int | None:
    """croniter's next fire after start_seconds in ms, None when there is none before the
    year 10000 (croniter fails with 'date out of range', or after 50 years of nothing)."""
    iterator = _iterator(cron)
    try:
        fire_seconds = iterator.get_next(float, start_time=start_seconds)
    except (OverflowError, ValueError):
        return None
    return int(fire_seconds) * 1000

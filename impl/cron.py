"""Production nextCron: a compiled evaluator for the cron dialect of spec/cron.md.

An expression compiles once into lookup tables: for minute, hour and month the next allowed
value at or after each value, and for days one bitmask of firing days per (month length,
weekday of the 1st) pair, of which there are only 28. `next_after` then walks the civil calendar field by field,
jumping straight to the next allowed month, day, hour and minute instead of scanning
minutes, so a call costs a handful of table lookups whatever the gap to the next fire.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import Iterator

#: 10000-01-01T00:00:00Z: answered when no fire instant lies before it (spec/cron.md C-08).
HORIZON_MS = 253_402_300_800_000
MINUTE_MS = 60_000
HOUR_MS = 3_600_000
DAY_MS = 86_400_000
LAST_YEAR = 9999
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()

_ALIASES = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTH_LENGTHS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_LONGEST_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_ITEM = re.compile(r"(?:(\*)|([0-9]{1,2}|[a-z]{3})(?:-([0-9]{1,2}|[a-z]{3}))?)(?:/([0-9]{1,2}))?")
_FIELD_SEPARATOR = re.compile(r"[ \t]+")


class CronError(ValueError):
    """The expression is outside the dialect; the message names the field and the problem."""


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    #: Last value of the cycle (where `*/n` and `a/n` stop).
    high: int
    #: Largest writable value: day-of-week also takes 7 for Sunday.
    top: int
    names: dict[str, int]
    is_day: bool = False

    def full_mask(self) -> int:
        return ((1 << (self.high + 1)) - 1) & ~((1 << self.low) - 1)


_FIELDS = (
    _Field("minute", 0, 59, 59, {}),
    _Field("hour", 0, 23, 23, {}),
    _Field("day-of-month", 1, 31, 31, {}, is_day=True),
    _Field("month", 1, 12, 12, {name: number for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}),
    _Field("day-of-week", 0, 6, 7, {name: number for number, name in enumerate(
        ("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}, is_day=True),
)


def compile_cron(expr: str) -> Cron:
    """The compiled expression; raises CronError exactly where spec validate raises."""
    if not isinstance(expr, str):
        raise CronError(f"cron must be a string, got {type(expr).__name__}")
    return _compile(expr)


@lru_cache(maxsize=4096)
def _compile(expr: str) -> Cron:
    if not expr.isascii():  # else str.lower() maps e.g. the Kelvin sign onto 'k'
        raise CronError(f"{expr!r} has characters outside ASCII")
    text = expr.strip(" \t")
    if text[:1] == "@":
        if text.lower() not in _ALIASES:
            raise CronError(f"{text!r} is not one of the aliases {', '.join(_ALIASES)}")
        text = _ALIASES[text.lower()]
    words = _FIELD_SEPARATOR.split(text) if text else []
    if len(words) != 5:
        raise CronError(f"{len(words)} fields in {expr!r}; a cron has 5: "
                        "minute hour day-of-month month day-of-week")
    masks = [_field_mask(word.lower(), field) for word, field in zip(words, _FIELDS)]
    any_day, any_weekday = words[2] in ("*", "?"), words[4] in ("*", "?")
    for index, written_any in ((2, any_day), (4, any_weekday)):
        field = _FIELDS[index]
        if masks[index] == field.full_mask() and not written_any:
            raise CronError(f"{field.name} field {words[index]!r} covers every day: "
                            "only '*' may say so in this dialect")
    first_day = (masks[2] & -masks[2]).bit_length() - 1
    longest = max(_LONGEST_MONTH[month - 1] for month in _values(masks[3]))
    if any_weekday and first_day > longest:
        raise CronError(f"day-of-month field {words[2]!r} can never fall in month field "
                        f"{words[3]!r}, so the cron never fires")
    return Cron(expr, *masks, any_day=any_day, any_weekday=any_weekday)


def _field_mask(word: str, field: _Field) -> int:
    if word == "*" or (word == "?" and field.is_day):
        return field.full_mask()
    mask = 0
    for item in word.split(","):
        match = _ITEM.fullmatch(item)
        if match is None:
            raise CronError(f"{field.name} field: cannot read {item!r}")
        star, first_text, last_text, step_text = match.groups()
        step = 1
        if step_text is not None:
            step = int(step_text)
            if not 1 <= step <= field.high - field.low + 1:
                raise CronError(f"{field.name} field: step {step} must lie in "
                                f"1-{field.high - field.low + 1}")
        if star:
            if step_text is None:
                raise CronError(f"{field.name} field: '*' cannot be a list item")
            first, last = field.low, field.high
        else:
            first = _number(first_text, field)
            if last_text is not None:
                last = _number(last_text, field)
                if first >= last:
                    raise CronError(f"{field.name} field: range {first_text}-{last_text} "
                                    "must go from a smaller to a larger value")
            elif step_text is not None:
                if first > field.high:
                    raise CronError(f"{field.name} field: {first_text}/{step_text} starts "
                                    "past the end of the cycle")
                last = field.high
            else:
                last = first
        for value in range(first, last + 1, step):
            if value > field.high:  # day-of-week 7: Sunday again
                value = field.low
            mask |= 1 << value
    return mask


def _number(text: str, field: _Field) -> int:
    if text.isdigit():
        value = int(text)
    elif text in field.names:
        value = field.names[text]
    else:
        raise CronError(f"{field.name} field: unknown name {text!r}")
    if not field.low <= value <= field.top:
        raise CronError(f"{field.name} field: {value} is not in {field.low}-{field.top}")
    return value


def _values(mask: int) -> tuple[int, ...]:
    return tuple(value for value in range(mask.bit_length()) if mask >> value & 1)


def _next_allowed(mask: int, size: int) -> tuple[int, ...]:
    """Entry i: the smallest allowed value >= i, or -1; one spare entry past the end."""
    table, following = [-1] * (size + 1), -1
    for value in range(size - 1, -1, -1):
        if mask >> value & 1:
            following = value
        table[value] = following
    return tuple(table)


class Cron:
    """A compiled expression. Instants are epoch milliseconds (UTC)."""

    __slots__ = ("expression", "hours", "minutes", "_next_minute", "_next_hour",
                 "_next_month", "_first_month", "_day_masks")

    def __init__(self, expression: str, minutes: int, hours: int, days: int, months: int,
                 weekdays: int, *, any_day: bool, any_weekday: bool) -> None:
        self.expression = expression
        self.minutes = _values(minutes)
        self.hours = _values(hours)
        self._next_minute = _next_allowed(minutes, 60)
        self._next_hour = _next_allowed(hours, 24)
        self._next_month = _next_allowed(months, 14)
        self._first_month = self._next_month[1]
        either = not (any_day or any_weekday)
        # Bit d set when day d of a month starting on that weekday falls on one of weekdays:
        # the week's pattern rotated to start there, repeated for five weeks.
        on_weekdays = []
        for first_weekday in range(7):
            week = (weekdays >> first_weekday | weekdays << (7 - first_weekday)) & 0x7F
            on_weekdays.append(week * 0b1_0000001_0000001_0000001_0000001 << 1)
        masks = []
        for length in (28, 29, 30, 31):
            month_days = ((1 << length) - 1) << 1
            for first_weekday in range(7):
                weekday_days = on_weekdays[first_weekday]
                matching = (days | weekday_days) if either else (days & weekday_days)
                masks.append(matching & month_days)
        #: Index (length - 28) * 7 + weekday of the 1st: bit d set when day d fires.
        self._day_masks = tuple(masks)

    def __repr__(self) -> str:
        return f"compile_cron({self.expression!r})"

    def next_after(self, t_ms: int) -> int:
        """The smallest fire instant > t_ms, or HORIZON_MS if none lies before it."""
        _check_instant(t_ms, "t_ms")
        minute_index = t_ms // MINUTE_MS + 1
        if minute_index * MINUTE_MS >= HORIZON_MS:
            return HORIZON_MS
        day_index, minute_of_day = divmod(minute_index, 1440)
        hour, minute = divmod(minute_of_day, 60)
        year, month, day = _civil_from_days(day_index)
        first_of_month = day_index - day + 1
        next_minute, next_hour, next_month = self._next_minute, self._next_hour, self._next_month
        day_masks = self._day_masks
        while True:
            allowed_month = next_month[month]
            if allowed_month != month:
                if allowed_month < 0:
                    year += 1
                    if year > LAST_YEAR:
                        return HORIZON_MS
                    allowed_month = self._first_month
                month, day, hour, minute = allowed_month, 1, 0, 0
                first_of_month = _days_from_civil(year, month, 1)
            length = _MONTH_LENGTHS[month - 1] + (month == 2 and _is_leap(year))
            later_days = day_masks[(length - 28) * 7 + (first_of_month + 4) % 7] >> day << day
            if not later_days:
                first_of_month += length
                month, day, hour, minute = month + 1, 1, 0, 0
                continue
            allowed_day = (later_days & -later_days).bit_length() - 1
            if allowed_day != day:
                day, hour, minute = allowed_day, 0, 0
            allowed_hour = next_hour[hour]
            if allowed_hour < 0:
                day, hour, minute = day + 1, 0, 0
                continue
            if allowed_hour != hour:
                hour, minute = allowed_hour, 0
            allowed_minute = next_minute[minute]
            if allowed_minute < 0:
                hour, minute = hour + 1, 0
                continue
            return (((first_of_month + day - 1) * 24 + hour) * 60 + allowed_minute) * MINUTE_MS

    def occurrences(self, after_ms: int, until_ms: int) -> Iterator[int]:
        """Every fire instant in (after_ms, until_ms], in order: the catch-up sequence.
        A matching day's remaining hours and minutes are read off the tables directly."""
        _check_instant(after_ms, "after_ms")
        if type(until_ms) is not int:
            raise ValueError(f"until_ms must be an integer, got {until_ms!r}")
        return self._occurrences(after_ms, until_ms)

    def _occurrences(self, after_ms: int, until_ms: int) -> Iterator[int]:
        hours, minutes = self.hours, self.minutes
        fire = self.next_after(after_ms)
        while fire <= until_ms and fire < HORIZON_MS:
            day_start = fire - fire % DAY_MS
            first_hour, first_minute = divmod((fire - day_start) // MINUTE_MS, 60)
            for hour in hours[bisect_left(hours, first_hour):]:
                hour_start = day_start + hour * HOUR_MS
                start = bisect_left(minutes, first_minute) if hour == first_hour else 0
                for minute in minutes[start:]:
                    instant = hour_start + minute * MINUTE_MS
                    if instant > until_ms:
                        return
                    yield instant
            fire = self.next_after(day_start + DAY_MS - 1)


def _check_instant(value: int, name: str) -> None:
    if type(value) is not int:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not 0 <= value < HORIZON_MS:
        raise ValueError(f"{name} must lie in [0, {HORIZON_MS}), got {value}")


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a count of days since 1970-01-01 (the C calendar is fastest)."""
    civil = date.fromordinal(days + _EPOCH_ORDINAL)
    return civil.year, civil.month, civil.day


def _days_from_civil(year: int, month: int, day: int) -> int:
    return date(year, month, day).toordinal() - _EPOCH_ORDINAL

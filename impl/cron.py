"""Production nextCron: a compiled evaluator for the cron dialect of spec/cron.md.

The calendar is tabled once per import: each month's first day and its kind (month of
the year, length, weekday of the 1st; 336 kinds). An expression compiles once into a
bitmask of firing days per kind (zero for a month the cron leaves out), the months to the
next allowed month, and for every minute of a day the minutes to the day's next firing
one. `next_after` then costs a handful of integer operations and lookups whatever the gap
to the next fire: no datetime objects, no per-call parsing, no scan of minutes or days
(only months the cron allows but whose days never fire, such as February for `0 0 30 * *`,
are stepped over one at a time)."""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from typing import Iterator

#: 10000-01-01T00:00:00Z: answered when no fire instant lies before it (spec/cron.md C-08).
HORIZON_MS = 253_402_300_800_000
MINUTE_MS = 60_000
HOUR_MS = 3_600_000
DAY_MS = 86_400_000
LAST_YEAR = 9999

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


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _month_tables() -> tuple[list[int], list[int]]:
    """Per month from 1970-01 (index 0) to 9999-12: the day count since 1970-01-01 of its
    1st (with 10000-01 as a sentinel at the end), and its kind, the index of its firing
    days in `Cron._month_days`: (month - 1) * 28 + (length - 28) * 7 + weekday of the 1st.
    400 years are 4,800 months and 146,097 days, a whole number of weeks, so lengths and
    kinds repeat: one cycle is computed and repeated, not 96,000 months one by one."""
    cycle_lengths: list[int] = []
    for year in range(1970, 2370):
        cycle_lengths += _LONGEST_MONTH if _is_leap(year) else _MONTH_LENGTHS
    lengths = (cycle_lengths * 21)[:(LAST_YEAR + 1 - 1970) * 12]
    starts = list(accumulate(lengths, initial=0))
    cycle_kinds = [month % 12 * 28 + (length - 28) * 7 + (first + 4) % 7  # 1970-01-01: Thursday
                   for month, first, length in zip(range(4800), starts, cycle_lengths)]
    return starts, (cycle_kinds * 21)[:len(lengths)]


_MONTH_STARTS, _MONTH_KINDS = _month_tables()
_HORIZON_MONTH = len(_MONTH_KINDS)
_HORIZON_MINUTE = HORIZON_MS // MINUTE_MS
#: In `Cron._minutes_to_next`: no firing minute left that day.
_NO_MINUTE_LEFT = -1


class Cron:
    """A compiled expression. Instants are epoch milliseconds (UTC)."""

    __slots__ = ("expression", "hours", "minutes", "_minutes_to_next", "_month_days", "_months_ahead")

    def __init__(self, expression: str, minutes: int, hours: int, days: int, months: int,
                 weekdays: int, *, any_day: bool, any_weekday: bool) -> None:
        self.expression = expression
        self.minutes = _values(minutes)
        self.hours = _values(hours)
        self._minutes_to_next = _minutes_to_next(self.minutes, self.hours)
        either = not (any_day or any_weekday)
        # Bit d set when day d + 1 of a month starting on that weekday falls on one of
        # weekdays: the week's pattern rotated to start there, repeated for five weeks.
        on_weekdays = []
        for first_weekday in range(7):
            week = (weekdays >> first_weekday | weekdays << (7 - first_weekday)) & 0x7F
            on_weekdays.append(week * 0b1_0000001_0000001_0000001_0000001)
        days >>= 1
        masks = []
        for length in (28, 29, 30, 31):
            month_days = (1 << length) - 1
            for first_weekday in range(7):
                weekday_days = on_weekdays[first_weekday]
                matching = (days | weekday_days) if either else (days & weekday_days)
                masks.append(matching & month_days)
        no_days = [0] * 28
        month_days_by_kind: list[int] = []
        for month in range(1, 13):
            month_days_by_kind += masks if months >> month & 1 else no_days
        #: Indexed by a month's kind (`_MONTH_KINDS`): bit d set when day d + 1 fires.
        self._month_days = tuple(month_days_by_kind)
        months_ahead, ahead = [0] * 12, 12
        for month in range(23, -1, -1):  # two years, so that December looks into January
            months_ahead[month % 12] = ahead
            ahead = 1 if months >> month % 12 + 1 & 1 else ahead + 1
        #: Indexed by month - 1 (a month ordinal % 12): how many months on the next allowed one is.
        self._months_ahead = tuple(months_ahead)

    def __repr__(self) -> str:
        return f"compile_cron({self.expression!r})"

    def next_after(self, t_ms: int) -> int:
        """The smallest fire instant > t_ms, or HORIZON_MS if none lies before it.
        The day's month from an estimate and the table of month starts, its firing days as one
        bitmask, the day's next firing minute from a table: a few operations, no calendar."""
        if type(t_ms) is not int:
            _refuse_instant(t_ms, "t_ms")
        minute = t_ms // 60_000 + 1  # fires are whole minutes: the first one that may fire
        if not 0 < minute < _HORIZON_MINUTE:
            if minute == _HORIZON_MINUTE:
                return HORIZON_MS
            _refuse_instant(t_ms, "t_ms")
        day = minute // 1440
        # Days * months / days of a 400-year cycle, shifted: the day's month or one beside it.
        month = (day * 4800 + 1000) // 146_097
        month_start = _MONTH_STARTS[month]
        if month_start > day:
            month -= 1
            month_start = _MONTH_STARTS[month]
        elif _MONTH_STARTS[month + 1] <= day:
            month += 1
            month_start = _MONTH_STARTS[month]
        day_in_month = day - month_start
        month_days = self._month_days
        firing_days = month_days[_MONTH_KINDS[month]] >> day_in_month
        minutes_to_next = self._minutes_to_next
        if firing_days & 1:
            wait = minutes_to_next[minute - day * 1440]
            if wait >= 0:
                return (minute + wait) * 60_000
        firing_days >>= 1
        if firing_days:
            day += (firing_days & -firing_days).bit_length()
        else:
            months_ahead = self._months_ahead
            while True:
                month += months_ahead[month % 12]
                if month >= _HORIZON_MONTH:
                    return HORIZON_MS
                firing_days = month_days[_MONTH_KINDS[month]]
                if firing_days:
                    break
            day = _MONTH_STARTS[month] + (firing_days & -firing_days).bit_length() - 1
        return (day * 1440 + minutes_to_next[0]) * 60_000

    def occurrences(self, after_ms: int, until_ms: int) -> Iterator[int]:
        """Every fire instant in (after_ms, until_ms], in order: the catch-up sequence.
        A matching day's remaining hours and minutes are read off the tables directly."""
        if type(after_ms) is not int or not 0 <= after_ms < HORIZON_MS:
            _refuse_instant(after_ms, "after_ms")
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


def _minutes_to_next(minutes: tuple[int, ...], hours: tuple[int, ...]) -> tuple[int, ...]:
    """Entry m (0-1439): how many minutes after minute m of a firing day (counted from
    midnight) its first firing minute at or after m is, or -1 if none is left that day.
    Built from runs that count down, a firing hour at a time, with C-level list operations
    rather than 1,440 Python steps."""
    within_hour: list[int] = []  # entry m <= the last firing minute: m's wait within its hour
    for minute in minutes:
        within_hour += range(minute - len(within_hour), -1, -1)
    table: list[int] = []
    for hour in hours:
        hour_start = hour * 60
        first_fire = hour_start + minutes[0]
        table += range(first_fire - len(table), first_fire - hour_start, -1)  # since the last fire
        table += within_hour
    table += [_NO_MINUTE_LEFT] * (1440 - len(table))
    return tuple(table)


def _refuse_instant(value: object, name: str) -> None:
    if type(value) is not int:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    raise ValueError(f"{name} must lie in [0, {HORIZON_MS}), got {value}")

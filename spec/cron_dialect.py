"""The cron dialect of Resonate schedules (spec/cron.md): the reference grammar and meaning.

`validate` is the one definition of which strings are schedule crons. The model calls it
before it hands a string to croniter, so that croniter only ever sees expressions on which
its reading is the dialect's reading; impl/cron.py has its own parser and must accept and
reject exactly the same strings. `parse` also gives the meaning (`CronExpression.fires_at`)
so tests can check any evaluator against the definition itself, not only against croniter.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

#: 10000-01-01T00:00:00Z: the end of time. nextCron answers HORIZON_MS when no fire instant
#: lies strictly between its argument and the horizon (spec/cron.md C-08).
HORIZON_MS = 253_402_300_800_000
MINUTE_MS = 60_000

ALIASES: dict[str, str] = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
WEEKDAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
#: Longest length of each month over all years: February counts its leap day.
LONGEST_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


@dataclass(frozen=True)
class FieldRule:
    name: str
    low: int
    #: The last value of the cycle: where `*/n` and `a/n` stop.
    high: int
    #: The largest value that may be written: 7 (Sunday again) for day-of-week.
    top: int
    names: tuple[str, ...] = ()
    #: Value of names[0].
    first_name_value: int = 0

    @property
    def size(self) -> int:
        return self.high - self.low + 1


MINUTE = FieldRule("minute", 0, 59, 59)
HOUR = FieldRule("hour", 0, 23, 23)
DAY = FieldRule("day-of-month", 1, 31, 31)
MONTH = FieldRule("month", 1, 12, 12, MONTH_NAMES, 1)
WEEKDAY = FieldRule("day-of-week", 0, 6, 7, WEEKDAY_NAMES, 0)
FIELDS = (MINUTE, HOUR, DAY, MONTH, WEEKDAY)

_SEPARATOR = re.compile(r"[ \t]+")
_NUMBER = re.compile(r"[0-9]{1,2}")
_NAME = re.compile(r"[A-Za-z]{3}")


@dataclass(frozen=True)
class CronExpression:
    """The meaning of a valid expression: the fire instants are exactly the whole minutes
    (UTC) whose fields all match, with the day rule of `day_matches`."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    #: day-of-month written `*` or `?`.
    any_day: bool
    #: day-of-week written `*` or `?`.
    any_weekday: bool

    def day_matches(self, day: int, weekday: int) -> bool:
        """Both day fields restricted: either may match (croniter's day_or). Otherwise the
        restricted one alone decides (a field written `*` matches every day)."""
        if self.any_day or self.any_weekday:
            return day in self.days and weekday in self.weekdays
        return day in self.days or weekday in self.weekdays

    def fires_at(self, instant_ms: int) -> bool:
        if instant_ms % MINUTE_MS or not 0 <= instant_ms < HORIZON_MS:
            return False
        moment = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=instant_ms)
        return (moment.minute in self.minutes and moment.hour in self.hours
                and moment.month in self.months
                and self.day_matches(moment.day, moment.isoweekday() % 7))


def validate(cron: str) -> None:
    """Raise ValueError naming the field and the problem unless `cron` is in the dialect."""
    parse(cron)


def parse(cron: str) -> CronExpression:
    if not isinstance(cron, str):
        raise ValueError(f"cron must be a string, got {type(cron).__name__}")
    if not cron.isascii():
        raise ValueError(f"cron must be ASCII, got {cron!r}")
    text = cron.strip(" \t")
    if text.startswith("@"):
        if text.lower() not in ALIASES:
            raise ValueError(f"unknown alias {text!r}; known: {', '.join(ALIASES)}")
        text = ALIASES[text.lower()]
    words = _SEPARATOR.split(text) if text else []
    if len(words) != 5:
        raise ValueError("expected 5 fields (minute hour day-of-month month day-of-week) "
                         f"separated by spaces, got {len(words)} in {cron!r}")
    minutes, hours, days, months, weekdays = (
        _field_values(word, rule) for word, rule in zip(words, FIELDS))
    any_day, any_weekday = words[2] in ("*", "?"), words[4] in ("*", "?")
    for word, rule, values, written_any in ((words[2], DAY, days, any_day),
                                            (words[4], WEEKDAY, weekdays, any_weekday)):
        if len(values) == rule.size and not written_any:
            raise ValueError(f"{rule.name} field: {word!r} names every day; write '*' "
                             "(whether a spelled-out full day field restricts the other "
                             "day field differs between cron implementations)")
    if any_weekday and min(days) > max(LONGEST_MONTH[m - 1] for m in months):
        raise ValueError(f"day-of-month field: {words[2]!r} never occurs in month field "
                         f"{words[3]!r}: the expression never fires")
    return CronExpression(minutes, hours, days, months, weekdays, any_day, any_weekday)


def _field_values(word: str, rule: FieldRule) -> frozenset[int]:
    if word == "*" or (word == "?" and rule in (DAY, WEEKDAY)):
        return frozenset(range(rule.low, rule.high + 1))
    if word == "?":
        raise ValueError(f"{rule.name} field: '?' is only allowed in the day fields")
    values: set[int] = set()
    for item in word.split(","):
        values |= _item_values(item, rule)
    return frozenset(values)


def _item_values(item: str, rule: FieldRule) -> set[int]:
    """`*/n`, `v`, `a-b`, `a-b/n` or `a/n` (a to the end of the cycle by n)."""
    if not item:
        raise ValueError(f"{rule.name} field: empty list item")
    base, slash, step_text = item.partition("/")
    step = _step(step_text, rule) if slash else 1
    if base == "*":
        if not slash:
            raise ValueError(f"{rule.name} field: '*' must stand alone, not in a list")
        return _cycle(rule.low, rule.high, step, rule)
    first_text, dash, last_text = base.partition("-")
    first = _value(first_text, rule)
    if not dash:
        if not slash:
            return _cycle(first, first, 1, rule)
        if first > rule.high:
            raise ValueError(f"{rule.name} field: {first_text}/{step_text}: a step cannot "
                             f"start at {first}; start it at {rule.low}")
        return _cycle(first, rule.high, step, rule)
    last = _value(last_text, rule)
    if first == last:
        raise ValueError(f"{rule.name} field: range {base!r} has equal ends; write the "
                         "single value (croniter reads an equal range as the whole cycle)")
    if first > last:
        raise ValueError(f"{rule.name} field: range {base!r} is reversed; ranges do not "
                         "wrap around, write two ranges")
    return _cycle(first, last, step, rule)


def _cycle(first: int, last: int, step: int, rule: FieldRule) -> set[int]:
    """Values first, first+step, ... <= last; day-of-week 7 is Sunday (0)."""
    values = set(range(first, last + 1, step))
    return {0 if value == 7 else value for value in values} if rule is WEEKDAY else values


def _step(text: str, rule: FieldRule) -> int:
    if not _NUMBER.fullmatch(text):
        raise ValueError(f"{rule.name} field: step {text!r} is not a number of 1 or 2 digits")
    step = int(text)
    if not 1 <= step <= rule.size:
        raise ValueError(f"{rule.name} field: step {step} is outside 1-{rule.size}")
    return step


def _value(text: str, rule: FieldRule) -> int:
    if _NUMBER.fullmatch(text):
        value = int(text)
        if not rule.low <= value <= rule.top:
            raise ValueError(f"{rule.name} field: {value} is outside {rule.low}-{rule.top}")
        return value
    if _NAME.fullmatch(text) and text.lower() in rule.names:
        return rule.names.index(text.lower()) + rule.first_name_value
    if not text:
        raise ValueError(f"{rule.name} field: missing value")
    raise ValueError(f"{rule.name} field: {text!r} is not a value "
                     f"({'a number or a name' if rule.names else 'a number of 1 or 2 digits'})")

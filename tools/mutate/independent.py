"""Mutants nobody derived from the AST: realistic bugs of impl/cron.py and
impl/schedules_records.py, each written by hand as one text edit of the file (the kind a
person makes: a name mistyped in a table, a regex that matches a prefix, a bound off by
one in a calendar split, a rule that forgets a case). The test suite did not write them and
the campaign's rules do not name them: a default `duespec check schedules` must catch them
at any seed (docs/mutation.md, "Hand-written mutants").

Each is installed the way the AST mutants are (compiled in memory in a child process; the
file on disk never changes), so `--hand NAME` and `--hand all` run through the same
runner and verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mutate.operators import ROOT


@dataclass(frozen=True)
class HandMutant:
    name: str
    file: str
    #: The text replaced (it must occur exactly once in the file) and its replacement.
    old: str
    new: str
    #: What a user of the server would see.
    bug: str

    def source(self) -> str:
        text = (ROOT / self.file).read_text(encoding="utf-8")
        if text.count(self.old) != 1:
            raise ValueError(f"hand mutant {self.name}: its text occurs {text.count(self.old)} times "
                             f"in {self.file}, not once (the file changed: rewrite the mutant)")
        return text.replace(self.old, self.new)


_CRON, _RECORDS = "impl/cron.py", "impl/schedules_records.py"
HAND_MUTANTS: tuple[HandMutant, ...] = (
    HandMutant("month-apr-unknown", _CRON, '"mar", "apr", "may"', '"mar", "apl", "may"',
               "the month name apr is refused"),
    HandMutant("weekday-wed-unknown", _CRON, '"tue", "wed", "thu"', '"tue", "wen", "thu"',
               "the weekday name wed is refused"),
    HandMutant("weekday-thu-unknown", _CRON, '"wed", "thu", "fri"', '"wed", "thr", "fri"',
               "the weekday name thu is refused"),
    HandMutant("names-case-sensitive", _CRON, "_field_mask(word.lower(), field)", "_field_mask(word, field)",
               "JAN, Mon and every name not in lower case are refused"),
    HandMutant("alias-case-sensitive", _CRON,
               "if text.lower() not in _ALIASES:", "if text not in _ALIASES:",
               "@DAILY, @Hourly: an alias not in lower case is refused"),
    HandMutant("alias-annually-missing", _CRON, '"@annually": "0 0 1 1 *", ', "",
               "@annually is refused"),
    HandMutant("alias-weekly-monday", _CRON, '"@weekly": "0 0 * * 0"', '"@weekly": "0 0 * * 1"',
               "@weekly fires on Mondays"),
    HandMutant("question-mark-refused-in-day-of-month", _CRON,
               'word == "?" and field.is_day', 'word == "?" and field.name == "day-of-week"',
               "`?` is refused in the day-of-month field"),
    HandMutant("question-mark-refused-in-day-of-week", _CRON,
               'word == "?" and field.is_day', 'word == "?" and field.name == "day-of-month"',
               "`?` is refused in the day-of-week field"),
    HandMutant("trailing-garbage-accepted", _CRON, "match = _ITEM.fullmatch(item)", "match = _ITEM.match(item)",
               "`5x`, `monx`, `*/5;`: an item with trailing garbage is read as its prefix"),
    HandMutant("leading-garbage-accepted", _CRON, "match = _ITEM.fullmatch(item)",
               "match = _ITEM.search(item)\n        match = match if match and match.end() == len(item) else None",
               "`x5`, `;mon`: an item with leading garbage is read as its suffix"),
    HandMutant("three-digit-values", _CRON, "(?:(\\*)|([0-9]{1,2}|", "(?:(\\*)|([0-9]+|",
               "`005` is read as 5 (the dialect allows 1 or 2 digits)"),
    HandMutant("leading-space-refused", _CRON, 'text = expr.strip(" \\t")', 'text = expr.rstrip(" \\t")',
               "a cron with leading spaces or tabs is refused"),
    HandMutant("tab-not-a-separator", _CRON, 're.compile(r"[ \\t]+")', 're.compile(r" +")',
               "a tab between fields is refused"),
    HandMutant("step-of-the-whole-cycle-refused", _CRON,
               "if not 1 <= step <= field.high - field.low + 1:", "if not 1 <= step <= field.high - field.low:",
               "`*/60`, `*/24`, `*/7`: a step of the field's whole cycle is refused"),
    HandMutant("equal-range-accepted", _CRON, "if first >= last:", "if first > last:",
               "`5-5` is accepted as 5"),
    HandMutant("sunday-seven-is-saturday", _CRON, "value = field.low\n", "value = field.high\n",
               "7 and ranges ending at 7 fire on Saturday"),
    HandMutant("full-day-list-accepted", _CRON, "if masks[index] == field.full_mask() and not written_any:",
               "if False:", "`1-31` and `0-6`, a full day field not written `*`, are accepted"),
    HandMutant("no-400-year-leap-rule", _CRON,
               "return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)",
               "return year % 4 == 0 and year % 100 != 0", "2000 has no February 29"),
    HandMutant("catch-up-splits-the-day-by-61", _CRON, "divmod((fire - day_start) // MINUTE_MS, 60)",
               "divmod((fire - day_start) // MINUTE_MS, 61)",
               "catch-up past 01:00 creates occurrences for minutes before the schedule existed"),
    HandMutant("catch-up-skips-midnight", _CRON, "fire = self.next_after(day_start + DAY_MS - 1)",
               "fire = self.next_after(day_start + DAY_MS)",
               "a catch-up over midnight skips the occurrence at 00:00"),
    HandMutant("catch-up-later-hours-start-mid-hour", _CRON,
               "start = bisect_left(minutes, first_minute) if hour == first_hour else 0",
               "start = bisect_left(minutes, first_minute)",
               "a catch-up over an hour boundary skips the next hours' minutes before the first one's"),
    HandMutant("schedule-id-no-spaces", _RECORDS, 'if char in ".{}"})', 'if char in ".{} "})',
               "a schedule id holding a space is refused"),
    HandMutant("schedule-id-ascii-only", _RECORDS, "forbidden = sorted({char for char in schedule_id",
               "forbidden = sorted({char for char in schedule_id if not char.isascii()} | {char for char in schedule_id",
               "a schedule id outside ASCII (café) is refused"),
    HandMutant("occurrence-id-in-seconds", _RECORDS, "str(timestamp))", "str(timestamp // 1000))",
               "an occurrence's promise id carries its time in seconds"),
    HandMutant("delay-leading-zero-refused", _RECORDS, 'if not delay or any(',
               'if not delay or (len(delay) > 1 and delay[0] == "0") or any(',
               "a resonate:delay with a leading zero is refused"),
    HandMutant("promise-timeout-bounded-by-max-time", _RECORDS,
               "return check_time(value, name, MAX_DURATION)", "return check_time(value, name)",
               "a duration past MAX_TIME (up to MAX_DURATION) is refused"),
    HandMutant("template-any-placeholder", _RECORDS, "if TIMESTAMP_PLACEHOLDER not in template:",
               'if "{{" not in template:', "a promiseId template without {{.timestamp}} is accepted"),
    HandMutant("data-number-accepted", _RECORDS, "not isinstance(data, str):", "not isinstance(data, (str, int)):",
               "a Value whose data is a number is accepted"),
    HandMutant("cron-that-never-fires-accepted", _RECORDS, "if next_run(compiled, now) > MAX_TIME:",
               "if False:", "a cron with no occurrence left before the end of time is accepted"),
)


def hand_mutant(name: str) -> HandMutant:
    [mutant] = [m for m in HAND_MUTANTS if m.name == name]
    return mutant


def check_every_hand_mutant_applies() -> None:
    """Raises when a mutant's text no longer occurs once (the file changed under it)."""
    for mutant in HAND_MUTANTS:
        mutant.source()
    names = [m.name for m in HAND_MUTANTS]
    assert len(set(names)) == len(names), "two hand mutants share a name"
    assert all(Path(ROOT / m.file).exists() for m in HAND_MUTANTS)

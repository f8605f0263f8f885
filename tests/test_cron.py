"""nextCron: the dialect (spec/cron.md), the croniter model and the compiled impl agree.

Examples pin the edge cases of RESEARCH.md section 3; Hypothesis then checks the impl
against the model on random in-dialect expressions at random instants and at the
instants around their fire times, and checks that the two parsers accept the same strings.
"""

from __future__ import annotations

import calendar
import datetime as dt
import itertools
import subprocess
import sys

import pytest
from croniter import croniter
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from duespec.bench.cron import Mismatch, compared
from duespec.impl import cron as impl
from duespec.impl.cron import CronError, compile_cron
from duespec.model.schedules.next_cron import next_cron
from duespec.spec import cron_dialect
from duespec.spec.cron_dialect import FIELDS, HORIZON_MS, parse, validate

MINUTE = 60_000


def at(text: str) -> int:
    """Epoch ms of an ISO UTC time such as '2026-12-31T23:59'."""
    moment = dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc)
    return int(moment.timestamp()) * 1000


def both(cron: str, after: int) -> int:
    """The model's and the impl's answer, which must be the same."""
    expected = next_cron(cron, after)
    assert compile_cron(cron).next_after(after) == expected, (cron, after)
    return expected


# --- Examples ------------------------------------------------------------------------------

@pytest.mark.parametrize("cron, after, expected", [
    # Strictly after: on a fire time, 1 ms before it, 1 ms after it, mid-minute.
    ("*/15 * * * *", "2026-03-01T10:15", "2026-03-01T10:30"),
    ("*/15 * * * *", "2026-03-01T10:14:59.999", "2026-03-01T10:15"),
    ("*/15 * * * *", "2026-03-01T10:15:00.001", "2026-03-01T10:30"),
    ("*/15 * * * *", "2026-03-01T10:29:30.5", "2026-03-01T10:30"),
    # Year, month and day roll over together.
    ("* * * * *", "2026-12-31T23:59", "2027-01-01T00:00"),
    ("0 0 1 1 *", "2026-12-31T23:59", "2027-01-01T00:00"),
    ("@yearly", "2027-01-01T00:00", "2028-01-01T00:00"),
    # Leap days: 2100 is not a leap year, so from 2097 the next 29 February is in 2104.
    ("0 0 29 2 *", "2097-01-01T00:00", "2104-02-29T00:00"),
    ("0 0 29 2 *", "2024-02-29T00:00", "2028-02-29T00:00"),
    # The 31st skips the short months.
    ("0 0 31 * *", "2026-01-31T00:00", "2026-03-31T00:00"),
    ("0 0 31 * *", "2026-04-01T00:00", "2026-05-31T00:00"),
    ("0 0 31 * *", "2026-07-31T00:00", "2026-08-31T00:00"),
    # Steps: */60 is minute 0; 59/15 is minute 59 alone; 5/15 is 5, 20, 35, 50.
    ("*/60 * * * *", "2026-03-01T10:00", "2026-03-01T11:00"),
    ("59/15 * * * *", "2026-03-01T10:00", "2026-03-01T10:59"),
    ("59/15 * * * *", "2026-03-01T10:59", "2026-03-01T11:59"),
    ("5/15 * * * *", "2026-03-01T10:35", "2026-03-01T10:50"),
    ("5/15 * * * *", "2026-03-01T10:50", "2026-03-01T11:05"),
    # Both day fields restricted: either matches (day_or). 2026-11-30 is a Monday.
    ("0 0 */2 * 1", "2026-11-29T00:00", "2026-11-30T00:00"),
    ("0 0 */2 * 1", "2026-11-30T00:00", "2026-12-01T00:00"),
    ("0 0 13 * fri", "2026-11-01T00:00", "2026-11-06T00:00"),
    # One day field '*' or '?': the other alone decides.
    ("0 0 * * 1", "2026-11-29T00:00", "2026-11-30T00:00"),
    ("0 0 ? * 1", "2026-12-01T00:00", "2026-12-07T00:00"),
    ("0 0 13 * ?", "2026-11-01T00:00", "2026-11-13T00:00"),
    # 7 is Sunday, as is 0 and SUN; 5-7 is Friday to Sunday.
    ("0 0 * * 7", "2026-11-30T00:00", "2026-12-06T00:00"),
    ("0 0 * * SUN", "2026-11-30T00:00", "2026-12-06T00:00"),
    ("0 0 * * 5-7", "2026-12-04T00:00", "2026-12-05T00:00"),
    # A day-of-month that a month lacks does not stop the weekday side from firing.
    ("0 0 31 2 1", "2026-02-01T00:00", "2026-02-02T00:00"),
    # Names, case, aliases and extra whitespace.
    ("0 12 * jan-mar,Dec MON-fri", "2026-03-31T12:00", "2026-12-01T12:00"),
    ("  0\t12   * *  *  ", "2026-03-01T11:00", "2026-03-01T12:00"),
    (" @Weekly ", "2026-11-30T00:00", "2026-12-06T00:00"),
    ("@hourly", "2026-03-01T10:00", "2026-03-01T11:00"),
    # The horizon: no fire instant before 10000-01-01 answers HORIZON_MS.
    ("59 23 31 12 *", "9999-01-01T00:00", "9999-12-31T23:59"),
    ("0 0 31 2 1", "9990-01-01T00:00", "9990-02-05T00:00"),
])
def test_edge_cases(cron: str, after: str, expected: str) -> None:
    assert both(cron, at(after)) == at(expected)


@pytest.mark.parametrize("cron, after", [
    ("* * * * *", "9999-12-31T23:59"),
    ("* * * * *", "9999-12-31T23:59:59.999"),
    ("0 0 29 2 *", "9996-03-01T00:00"),
    ("0 0 * 2 1", "9999-03-01T00:00"),
])
def test_no_fire_before_the_horizon_answers_the_horizon(cron: str, after: str) -> None:
    assert both(cron, at(after)) == HORIZON_MS


@pytest.mark.parametrize("after", [-1, HORIZON_MS, 1.5, True, "0", None])
def test_instants_outside_the_domain_are_refused(after: object) -> None:
    with pytest.raises(ValueError, match="after_ms"):
        next_cron("* * * * *", after)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="t_ms"):
        compile_cron("* * * * *").next_after(after)  # type: ignore[arg-type]


REJECTED = [
    ("5-5 * * * *", "equal ends"),
    ("50-10 * * * *", "reversed"),
    ("* * * * sat-sun", "reversed"),
    ("* * * * 7-7", "equal ends"),
    ("* * * * 7/2", "cannot start"),
    ("0 0 30 2 *", "never"),
    ("0 0 31 4,6,9,11 *", "never"),
    ("0 0 30,31 feb ?", "never"),
    ("0 0 */1 * 1", "every day"),
    ("0 0 1-31 * mon", "every day"),
    ("0 0 1 * 0-6", "every day"),
    ("0 0 1 * 1-7", "every day"),
    ("*/0 * * * *", "step 0"),
    ("*/61 * * * *", "step 61"),
    ("* */25 * * *", "step 25"),
    ("60 * * * *", "60 is outside"),
    ("* 24 * * *", "24 is outside"),
    ("* * 0 * *", "0 is outside"),
    ("* * 32 * *", "32 is outside"),
    ("* * * 0 *", "0 is outside"),
    ("* * * 13 *", "13 is outside"),
    ("* * * * 8", "8 is outside"),
    ("005 * * * *", "not a value"),
    ("* * * * monday", "not a value"),
    ("* * * mon *", "not a value"),
    ("* * * * jan", "not a value"),
    ("? * * * *", "only allowed in the day fields"),
    ("*,5 * * * *", "stand alone"),
    ("1,,2 * * * *", "empty list item"),
    ("1, 2 * * * *", "expected 5 fields"),
    ("-5 * * * *", "missing value"),
    ("5- * * * *", "missing value"),
    ("*/ * * * *", "step ''"),
    ("1/2/3 * * * *", "step '2/3'"),
    ("* * * *", "got 4"),
    ("0 * * * * *", "got 6"),
    ("", "got 0"),
    (" \t ", "got 0"),
    ("@reboot", "unknown alias"),
    ("@every 5m", "unknown alias"),
    ("H * * * *", "not a value"),
    ("* * L * *", "not a value"),
    ("* * 15W * *", "not a value"),
    ("* * * * 1#2", "not a value"),
    ("0 0 * * *\n", "not a value"),
    ("0\u00a00 * * * *", "ASCII"),
    ("@wee\u212aly", "ASCII"),  # the Kelvin sign lower-cases to 'k'
    ("0 0 * * \uff11", "ASCII"),  # a full-width digit
]


@pytest.mark.parametrize("cron, problem", REJECTED)
def test_outside_the_dialect_both_refuse_naming_the_problem(cron: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace("*", r"\*")):
        validate(cron)
    with pytest.raises(CronError):
        compile_cron(cron)
    with pytest.raises(ValueError):
        next_cron(cron, 0)


@pytest.mark.parametrize("cron", [None, 5, b"* * * * *", ["* * * * *"]])
def test_a_cron_that_is_not_a_string_is_refused(cron: object) -> None:
    with pytest.raises(ValueError, match="string"):
        validate(cron)  # type: ignore[arg-type]
    with pytest.raises(CronError, match="string"):
        compile_cron(cron)  # type: ignore[arg-type]


def test_every_plain_item_means_what_croniter_reads() -> None:
    """Each value, range, `a/n` and `*/n` of every field, expanded by the dialect and by
    croniter (the step ranges `a-b/n` are sampled by the Hypothesis test below)."""
    for index, rule in enumerate(FIELDS):
        values = [str(v) for v in range(rule.low, rule.top + 1)] + list(rule.names)
        steps = range(1, rule.size + 1)
        items = values + [f"{a}-{b}" for a, b in itertools.product(values, repeat=2)]
        items += [f"{a}/{n}" for a in values for n in steps] + [f"*/{n}" for n in steps]
        for item in items:
            try:
                ours = cron_dialect._field_values(item, rule)
            except ValueError:
                continue
            assert croniter_values(index, item) == ours, (rule.name, item)


def croniter_values(index: int, item: str) -> frozenset[int]:
    words = ["*", "*", "*", "*", "?" if index == 2 else "*"]
    words[index] = item
    expanded = croniter.expand(" ".join(words))[0][index]
    rule = FIELDS[index]
    return frozenset(range(rule.low, rule.high + 1) if expanded == ["*"] else expanded)


# --- Hypothesis: impl against model -----------------------------------------------------------

def field_items(index: int) -> st.SearchStrategy[str]:
    rule = FIELDS[index]
    value = st.integers(rule.low, rule.top).map(str)
    if rule.names:
        value = value | st.sampled_from(rule.names).map(
            lambda name: name.upper() if len(name) % 2 else name.capitalize())
    step = st.integers(1, rule.size).map(str)
    return st.one_of(
        value,
        st.tuples(value, value).map("-".join),
        st.tuples(value, value, step).map(lambda t: f"{t[0]}-{t[1]}/{t[2]}"),
        st.tuples(value, step).map("/".join),
        step.map("*/".__add__))


def field(index: int) -> st.SearchStrategy[str]:
    stars = st.sampled_from(["*", "?"] if index in (2, 4) else ["*"])
    return stars | st.lists(field_items(index), min_size=1, max_size=3).map(",".join)


#: Expressions from the dialect's own grammar; the few that break a rule (equal or
#: reversed ranges, full day fields, never-firing days) exercise the refusal paths.
expressions = st.one_of(
    st.tuples(*(field(index) for index in range(5)),
              st.sampled_from([" ", "  ", "\t", " \t "])).map(lambda t: t[5].join(t[:5])),
    st.sampled_from(sorted(cron_dialect.ALIASES)).map(str.upper))

instants = st.one_of(
    st.integers(0, at("2200-01-01T00:00")),
    st.integers(0, HORIZON_MS - 1),
    st.integers(0, 200_000).map(lambda k: k * MINUTE))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions, instants, st.sampled_from([-1, 0, 1]))
def test_impl_agrees_with_croniter_around_fire_times(cron: str, after: int, shift: int) -> None:
    try:
        meaning = parse(cron)
    except ValueError:
        with pytest.raises(CronError):
            compile_cron(cron)
        return
    fire = both(cron, after)
    assert fire > after
    if fire < HORIZON_MS:
        assert meaning.fires_at(fire)
        # On the fire time, 1 ms before and 1 ms after it.
        both(cron, fire + shift)


@settings(max_examples=60, deadline=None)
@given(expressions, st.integers(0, at("2200-01-01T00:00")))
def test_no_fire_instant_is_skipped(cron: str, after: int) -> None:
    """Against the definition itself: every minute strictly between `after` and the
    answer does not fire (checked when the gap is at most two days of minutes)."""
    try:
        meaning = parse(cron)
    except ValueError:
        assume(False)
        return
    fire = compile_cron(cron).next_after(after)
    first = after - after % MINUTE + MINUTE
    if fire - first <= 2 * 1440 * MINUTE:
        assert not any(meaning.fires_at(t) for t in range(first, fire, MINUTE))


@settings(max_examples=60, deadline=None)
@given(expressions, st.integers(0, at("2200-01-01T00:00")), st.integers(0, 3 * 1440))
def test_occurrences_are_the_chain_of_next_fires(cron: str, after: int, minutes: int) -> None:
    """The catch-up iterator's day-at-a-time shortcut yields exactly the next_after chain."""
    assume(not_refused(cron))
    compiled = compile_cron(cron)
    until = after + minutes * MINUTE
    chain, t = [], after
    while (t := compiled.next_after(t)) <= until:
        chain.append(t)
    assert list(compiled.occurrences(after, until)) == chain


def not_refused(cron: str) -> bool:
    try:
        validate(cron)
    except ValueError:
        return False
    return True


ALPHABET = "0123456789*/-,? \t\n@LWH#\u212a\u00a0" + "JANFEBDECmonSUNsatyearlydailyhour"


@settings(max_examples=400, deadline=None)
@given(st.one_of(
    st.text(ALPHABET, max_size=24),
    st.tuples(expressions, st.integers(0, 40), st.text(ALPHABET, max_size=3)).map(
        lambda t: t[0][:t[1]] + t[2] + t[0][t[1] + len(t[2]):])))
def test_both_parsers_accept_the_same_strings(text: str) -> None:
    """Garbage and mutated expressions: validate and compile_cron refuse the same ones."""
    try:
        validate(text)
        accepted = True
    except ValueError:
        accepted = False
    try:
        compile_cron(text)
        assert accepted, f"impl accepts {text!r}, which the dialect refuses"
    except CronError:
        assert not accepted, f"impl refuses {text!r}, which the dialect accepts"


def test_horizon_is_shared_and_is_ten_thousand_ad() -> None:
    assert impl.HORIZON_MS == HORIZON_MS == at("9999-12-31T23:59") + MINUTE


def test_impl_stands_alone() -> None:
    """The production evaluator loads neither croniter nor the model."""
    code = ("import sys, duespec.impl.cron; "
            "print(sorted(m for m in sys.modules if m == 'croniter' or m.startswith('duespec.model')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_the_bench_fails_on_any_disagreement() -> None:
    cases = [("* * * * *", 0), ("0 0 * * *", 0)]
    compared("next fire", [60_000, 86_400_000], [60_000, 86_400_000], cases)
    with pytest.raises(Mismatch, match="0 0"):
        compared("next fire", [60_000, 86_400_000], [60_000, 86_460_000], cases)
    with pytest.raises(Mismatch, match="answers"):
        compared("next fire", [60_000], [60_000, 86_400_000], cases)


def test_the_impl_month_tables_are_the_calendar() -> None:
    """The impl reads months off tables built once per import from the leap rule (one
    400-year cycle, repeated); random instants reach few of the 96,000 months, so every
    month is compared here with the standard library's calendar."""
    epoch = dt.date(1970, 1, 1).toordinal()
    months = list(itertools.product(range(1970, 10_000), range(1, 13)))
    assert len(impl._MONTH_KINDS) == len(months) == len(impl._MONTH_STARTS) - 1
    assert impl._MONTH_STARTS[-1] == HORIZON_MS // 86_400_000
    for index, (year, month) in enumerate(months):
        first = dt.date(year, month, 1)
        length = calendar.monthrange(year, month)[1]
        assert impl._MONTH_STARTS[index] == first.toordinal() - epoch, (year, month)
        assert impl._MONTH_KINDS[index] == (month - 1) * 28 + (length - 28) * 7 + first.isoweekday() % 7, \
            (year, month)


@given(st.sets(st.integers(0, 59), min_size=1), st.sets(st.integers(0, 23), min_size=1))
@settings(max_examples=60, deadline=None)
def test_the_impl_minute_table_is_a_scan_of_the_day(minutes: set[int], hours: set[int]) -> None:
    fires = sorted(hour * 60 + minute for hour in hours for minute in minutes)
    table = impl._minutes_to_next(tuple(sorted(minutes)), tuple(sorted(hours)))
    assert len(table) == 1440
    for minute_of_day in range(1440):
        later = [fire for fire in fires if fire >= minute_of_day]
        assert table[minute_of_day] == (later[0] - minute_of_day if later else -1)


@pytest.mark.parametrize("cron, rules", [
    ("0 0 1 * 7", {"C-04.sunday_seven", "C-05.either_day"}),
    ("0 0 * * 6-7", {"C-04.sunday_seven"}),
    ("0 0 * * 1-7/2", {"C-04.sunday_seven"}),
    ("0 0 15 * mon", {"C-05.either_day"}),
    ("0 0 * * */7", set()),  # a step from `*`: Sunday as 0, no 7 written
    ("0 0 * * 0", set()),
    ("@weekly", set()),
])
def test_a_next_fire_names_the_cron_rules_it_reads(cron: str, rules: set[str]) -> None:
    """The cause of a difference at a next fire: a server that reads Sunday as 7 or the
    two day fields otherwise differs by that rule, a class apart from a fire computed
    wrong for another reason (examples/resonate-pg: F-1b)."""
    from duespec.coverage import isolated
    from duespec.model.schedules.next_cron import next_cron

    with isolated() as tags:
        next_cron(cron, 1735689600000)
    assert {tag for tag in tags if tag.startswith(("C-04", "C-05"))} == rules

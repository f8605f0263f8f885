"""SR-07 and SR-08 (duespec/systems/schedules/dialect.py): every feature of the cron
dialect and catch-up at every hour, each with a rule of its own. Each feature's crons are
what the dialect says they are, every name and case is among them, every tag is required of
a default campaign, and (long) a default campaign reaches every tag at seeds other than the
machine test's."""

from __future__ import annotations

import pytest

from duespec.campaigns.run import run_campaign
from duespec.impl.cron import CronError, compile_cron
from duespec.spec import cron_dialect
from duespec.systems.schedules import SYSTEM
from duespec.systems.schedules.dialect import (
    ACCEPTED_FEATURES,
    ALIAS_NAMES,
    CASE_OF,
    CASES,
    DIALECT_TAGS,
    REJECTED_FEATURES,
    WEEKDAY_NAMES,
)
from duespec.systems.schedules.ops import MONTH_NAMES
from duespec.systems.schedules.requirements import REQUIRED_TAGS


@pytest.mark.parametrize("feature", sorted(ACCEPTED_FEATURES))
def test_each_accepted_feature_is_in_the_dialect(feature: str) -> None:
    for cron in ACCEPTED_FEATURES[feature]:
        cron_dialect.validate(cron)
        compile_cron(cron)


@pytest.mark.parametrize("feature", sorted(REJECTED_FEATURES))
def test_each_rejected_feature_is_refused_by_the_spec_and_the_impl(feature: str) -> None:
    for cron in REJECTED_FEATURES[feature]:
        with pytest.raises(ValueError):
            cron_dialect.validate(cron)
        with pytest.raises(CronError):
            compile_cron(cron)


def test_every_name_and_alias_is_sent_and_every_case_with_each_kind() -> None:
    for feature, names in (("month_names", MONTH_NAMES), ("weekday_names", WEEKDAY_NAMES),
                           ("aliases", ALIAS_NAMES)):
        crons = ACCEPTED_FEATURES[feature]
        assert sorted(name for name in names) == sorted(
            next(word for word in cron.split() if word.lower() in names).lower() for cron in crons)
        assert {CASE_OF[cron] for cron in crons} == set(CASES)


def test_every_dialect_tag_is_required_of_a_default_campaign() -> None:
    assert DIALECT_TAGS <= REQUIRED_TAGS
    assert {f"SR-08.hour_{hour:02}" for hour in range(24)} <= DIALECT_TAGS


@pytest.mark.long
@pytest.mark.parametrize("seed", [1, 2])
def test_a_default_campaign_reaches_every_feature_and_hour_at_other_seeds(seed: int) -> None:
    """The machine test holds a default campaign to REQUIRED_TAGS at its seed; the dialect's
    tags must not depend on the seed (the regression of issue 45)."""
    result = run_campaign(SYSTEM, SYSTEM.impl, profile="lean", seed=seed)
    assert result.ok, result.failure
    assert sorted(DIALECT_TAGS - set(result.coverage)) == []


def test_catch_ups_on_the_coming_days_stop_at_the_last_day_of_9999() -> None:
    """Three days before the end of time the twelve coming days would reach a date past year
    9999, which Python cannot hold: the rule raised inside duespec (an `error` class of a
    campaign against resonate-pg, whose refused schedule left the clock there)."""
    import datetime as dt

    from duespec.campaigns.lockstep import lockstep

    machine = lockstep(SYSTEM.machine, SYSTEM.model, SYSTEM.impl, SYSTEM.config("lean"))()
    machine.start_run(start=1_735_689_600_000, retry_timeout=5000, work="none", ttl=0)
    machine.move_clock((dt.datetime(9999, 12, 28) - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1))
    machine.catches_up_at_an_hour(cron="* * * * *", hour=0, pick=0, place="a_day")
    assert dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=machine.now) > dt.datetime(9999, 12, 29, 1)  # caught up
    machine.teardown()

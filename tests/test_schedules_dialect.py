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

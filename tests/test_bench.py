"""The bench's own arithmetic: alternation, medians of per-repeat ratios, goals, JSON.

No time is asserted: the samples here are made up, so the figures are known exactly."""

from __future__ import annotations

import json

from duespec.bench import MIN_REPEATS, Figure, Goal, Sample, alternate, rate_figure, ratio_figure


def test_sides_alternate_and_repeat_at_least_the_minimum() -> None:
    order: list[str] = []

    def side(name: str):  # type: ignore[no-untyped-def]
        return lambda: order.append(name) or Sample(1.0, 1.0, 1)

    samples = alternate([side("A"), side("B")], repeats=2)
    assert [len(s) for s in samples] == [MIN_REPEATS, MIN_REPEATS]
    assert order[:6] == ["A", "B", "B", "A", "A", "B"]


def test_a_ratio_is_the_median_of_paired_repeats_with_its_range() -> None:
    a = [Sample(cpu, cpu * 2, 10) for cpu in (1.0, 2.0, 3.0, 4.0, 100.0)]
    b = [Sample(cpu, cpu, 10) for cpu in (2.0, 2.0, 2.0, 2.0, 2.0)]
    figure = ratio_figure("s", "a / b", a, b, goal=Goal("<=", 1.5))
    assert [round(x, 9) for x in (figure.value, figure.low, figure.high)] == [1.5, 0.5, 50.0]
    assert figure.repeats == 5 and round(figure.wall, 9) == 3.0 and figure.passed is True
    assert round(ratio_figure("s", "a / b", a, b, per="rate").value, 9) == round(1 / 1.5, 9)


def test_goals_fail_and_say_so_in_text_and_json() -> None:
    samples = [Sample(1.0, 2.0, count) for count in (90, 95, 99, 100, 120)]
    figure = rate_figure("s", "replay", samples, "steps/s", goal=Goal(">=", 100))
    assert figure.value == 99 and figure.passed is False
    assert "goal >= 100: FAIL" in figure.render()
    assert "[90.00-120]" in figure.render() and "wall 49.50" in figure.render()
    data = json.loads(json.dumps(figure.as_json()))
    assert data["goal"] == {"op": ">=", "value": 100} and data["passed"] is False
    assert Figure.single("s", "bytes", 79.0, "bytes", goal=Goal("<=", 193)).passed is True


def test_the_whole_surface_section_prints_its_steps_per_second(monkeypatch) -> None:
    """The section's figure renders (it once passed its baseline where the range goes)."""
    from duespec.bench import schedules_surface

    monkeypatch.setattr(schedules_surface, "campaign",
                        lambda target, examples: (1234.5, 1000, {"T-03": 40, "P-01": 9}))
    [figure] = schedules_surface.figures(quick=True)
    text = figure.render()
    assert "lockstep steps/s, model vs impl (CPU)" in text and "1,234 steps/s" in text
    assert "vs model vs model on the same seed: 1,234 steps/s" in text
    assert json.loads(json.dumps(figure.as_json()))["extra"] == {"model_vs_model": 1234.5}

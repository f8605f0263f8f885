"""The bench's own arithmetic: alternation, medians of per-repeat ratios, goals, JSON.

No time is asserted: the samples here are made up, so the figures are known exactly."""

from __future__ import annotations

import json

import pytest

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


def test_quick_leaves_out_full_only_sections_and_says_so(tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    import argparse
    import sys
    import types

    import duespec.bench as bench

    ran: list[str] = []
    for name in ("fake_bench_fast", "fake_bench_slow"):
        module = types.ModuleType(name)
        module.figures = (lambda n: lambda quick: ran.append(n) or [  # type: ignore[attr-defined]
            Figure("s", n, 1.0, "x", goal=Goal("<=", 2))])(name)
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(bench, "SECTIONS", ("fake_bench_fast", "fake_bench_slow"))
    monkeypatch.setattr(bench, "FULL_ONLY", ("fake_bench_slow",))
    out = tmp_path / "figures.json"
    assert bench.main(argparse.Namespace(quick=True, only=[], json=str(out), in_process=True)) == 0
    assert ran == ["fake_bench_fast"]
    assert "[fake_bench_slow] not in --quick" in capsys.readouterr().out
    assert json.loads(out.read_text())["left_out"] == ["fake_bench_slow"]
    ran.clear()
    assert bench.main(argparse.Namespace(quick=True, only=["slow"], json=None, in_process=True)) == 0
    assert ran == ["fake_bench_slow"]  # named with --only, it runs in its quick form anyway


def test_bulk_built_duebook_fixtures_are_the_books_their_schedule_calls_leave(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The 1,000,000-open books are built through Book.restore and the model's dict; this
    shows, on a small fixture, that both give exactly what scheduling each row gives."""
    from duespec.bench import duebook

    fixture = duebook.Books(300, 40, seed=3)
    monkeypatch.setattr(duebook, "BULK", 10**9)
    scheduled_impl, scheduled_model = fixture.impl_book(), fixture.model_book()
    monkeypatch.setattr(duebook, "BULK", 1)
    bulk_impl, bulk_model = fixture.impl_book(), fixture.model_book()
    assert len(bulk_impl) == 340 and bulk_impl.snapshot() == scheduled_impl.snapshot()
    assert bulk_model == scheduled_model
    some_id, owner = fixture.calls["cancel"][0]
    assert bulk_impl.cancel(some_id, owner) == scheduled_impl.cancel(some_id, owner)
    assert bulk_impl.claimable(duebook.T_CLAIM, 10) == scheduled_impl.claimable(duebook.T_CLAIM, 10)


def test_every_catch_up_sample_starts_with_the_models_next_cron_memo_cold() -> None:
    """A repeat of an outage shorter than the memo would otherwise find every tick there."""
    from duespec.bench.schedules import ModelTarget, catch_up, model_next_run

    measure = catch_up(ModelTarget, 60)
    assert measure().count == 60
    assert measure().count == 60
    # Only the second run's calls are counted: a memo left warm by the first would answer
    # all 60 ticks; cold, the run computes them (a hit or so is its own asking again).
    info = model_next_run.cache_info()
    assert info.misses >= 60 and info.hits < 60


def test_the_whole_surface_section_prints_its_steps_per_second(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The section's figure renders (it once passed its baseline where the range goes)."""
    from duespec.bench import Sample, schedules_surface

    def campaign(target, examples, handlers):  # type: ignore[no-untyped-def]
        handlers.update({"T-03": 40, "P-01": 9})
        return lambda: Sample(cpu=1.0, wall=1.0, count=1234)

    monkeypatch.setattr(schedules_surface, "campaign", campaign)
    [figure] = schedules_surface.figures(quick=True)
    text = figure.render()
    assert "lockstep steps/s, model vs impl" in text and "1,234 steps/s" in text
    assert "model vs model on the same seed: 1,234 steps/s" in text


@pytest.mark.long
def test_the_impl_only_baseline_runs_the_campaigns_runs() -> None:
    """The harness figure divides two rates, so both sides must take the same steps: at
    100 runs, a baseline drawing with Hypothesis's pool of local constants took 99,812
    against the campaign's 56,157."""
    from duespec.bench import duebook

    assert duebook.impl_only_steps(100, 1) == duebook.campaign_steps(100, 1)


def test_the_get_floor_reads_the_stored_deferrals_of_ids_the_list_holds() -> None:
    """The floor figure reads, by id - 1, the very Deferrals the impl Book hands out, and
    asks only ids the list holds: the model's Book also has the deferrals the schedule
    figure added after the list was taken (an IndexError once ended the section)."""
    from duespec.bench import duebook
    from duespec.model import duebook as model

    fixture = duebook.Books(300, 40, seed=3)
    impl_book, model_book = fixture.impl_book(), fixture.model_book()
    stored = [impl_book.get(id) for id in range(1, len(fixture.rows) + 1)]
    assert all(deferral is impl_book.get(deferral.id) for deferral in stored)
    model.schedule(model_book, "late", 0, 0, duebook.T0 + 1)  # an id past the list's end
    figure = duebook.floor_figure(300, stored, model_book, batch=200, repeats=MIN_REPEATS)
    assert figure.goal is None and figure.passed is None and figure.repeats == MIN_REPEATS
    assert figure.value > 0 and "no goal" in figure.render()


SECTION_REPORTING_ITS_PROCESS = """
import os
from duespec.bench import Figure

def figures(quick):
    return [Figure("where", "pid", float(os.getpid()), "")]
"""


def test_each_section_is_measured_in_a_fresh_process_of_its_own(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """No figure may depend on the sections before it (heap, caches, imports): by default
    every section runs in a spawned process, and one that raises is named, not fatal."""
    import os

    import duespec.bench as bench

    (tmp_path / "bench_where_a.py").write_text(SECTION_REPORTING_ITS_PROCESS)
    (tmp_path / "bench_where_b.py").write_text(SECTION_REPORTING_ITS_PROCESS)
    (tmp_path / "bench_broken.py").write_text("def figures(quick):\n    raise ValueError('no figures here')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    lines: list[str] = []
    broken: list[str] = []
    found = bench.run_sections(["bench_where_a", "bench_broken", "bench_where_b"], True, lines.append, broken)
    pids = {int(figure.value) for figure in found}
    assert len(found) == 2 and len(pids) == 2 and os.getpid() not in pids
    assert broken == ["bench_broken"]
    assert "[bench_broken] could not be measured: ValueError: no figures here" in lines
    [in_process] = bench.run_sections(["bench_where_a"], True, lines.append, in_process=True)
    assert int(in_process.value) == os.getpid()

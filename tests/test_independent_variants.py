"""The mutation benchmark: a duebook written from the docs alone
(duespec/bench/independent_duebook.py) passes the default campaign, and each of its
realistic single-bug variants is caught by `duespec conform duebook` with no flags, with a
trace whose printed `duespec replay` command exits 1.

`make test` runs one variant of each class of bug (two worker processes); the whole set
of 30 is `pytest -m variants` (and `duespec bench --only variants`, which also reports the
kill rate and the median time to the first failing run)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from duespec.bench import variants
from duespec.bench.independent_duebook import BUGS
from duespec.bench.variants import ONE_PER_CLASS, PROGRAM, RESET_LEAK, VariantVerdict, check_all, variant_names


def assert_caught(verdict: VariantVerdict) -> None:
    assert verdict.conform_exit == 1, f"{verdict.bug} was not caught:\n{verdict.output[-3000:]}"
    if verdict.bug == RESET_LEAK:
        # Its steps pass on a fresh target: conform names the leak and prints no replay.
        assert verdict.reported_as_leak and verdict.replay_exit is None, verdict.output[-3000:]
    else:
        assert verdict.replay_exit == 1, f"{verdict.bug}: the printed replay did not fail:\n{verdict.output[-3000:]}"
    assert verdict.caught


def test_the_program_lists_thirty_variants_over_every_class() -> None:
    assert variant_names() == list(BUGS)
    assert len(BUGS) >= 25
    classes = {what.split(":", 1)[0] for what in BUGS.values()}
    assert {"types", "config", "owners", "depth", "reset", "int64", "order"} <= classes
    assert set(ONE_PER_CLASS) <= set(BUGS)
    assert {BUGS[name].split(":", 1)[0] for name in ONE_PER_CLASS} >= classes - {"edges", "failures"}


def verdict(bug: str | None, conform_exit: int, replay_exit: int | None, first: float | None,
            output: str = "") -> VariantVerdict:
    return VariantVerdict(bug, conform_exit, replay_exit, first, 1000, 2.0, output, 3)


def test_the_bench_section_judges_kill_rate_and_time_against_their_goals(monkeypatch: pytest.MonkeyPatch) -> None:
    """--quick checks one variant per class; a leak counts only when reported as one, a
    variant only when its printed replay fails too."""
    checked: list[list[str | None]] = []

    def fake_check_all(bugs: list[str | None]) -> list[VariantVerdict]:
        checked.append(bugs)
        answers = {None: verdict(None, 0, None, None),
                   RESET_LEAK: verdict(RESET_LEAK, 1, None, 0.5, "TARGET FAILED ... state survives reset"),
                   "float-id-accepted": verdict("float-id-accepted", 1, 0, 1.0)}  # replay passed: not caught
        return [answers.get(bug, verdict(bug, 1, 1, 3.0)) for bug in bugs]

    monkeypatch.setattr(variants, "check_all", fake_check_all)
    kill, first, rate = variants.figures(quick=True)
    assert checked == [[None, *ONE_PER_CLASS]]
    assert kill.value == pytest.approx(100 * 6 / 7) and kill.passed is False and "float-id-accepted" in kill.note
    assert first.value == 3.0 and first.passed is False  # median of 1.0, 0.5 and five 3.0s
    assert rate.value == 500.0  # 1000 steps in 2 CPU seconds
    monkeypatch.setattr(variants, "check_all", lambda bugs: [
        verdict(bug, 0, None, None) if bug is None else verdict(bug, 1, 1, 1.5) for bug in bugs])
    monkeypatch.setattr(variants, "variant_names", lambda: [name for name in BUGS if name != RESET_LEAK])
    kill, first, _ = variants.figures(quick=False)
    assert kill.value == 100.0 and kill.passed and first.value == 1.5 and first.passed


def test_the_program_imports_nothing_of_duespec() -> None:
    source = PROGRAM.read_text()
    assert "duespec" not in "".join(line for line in source.splitlines()
                                    if line.startswith(("import ", "from ")))
    unknown = subprocess.run([sys.executable, str(PROGRAM), "--bug", "no-such-bug"], capture_output=True, text=True)
    assert unknown.returncode == 2 and "unknown bug" in unknown.stderr


def test_the_correct_program_holds_and_one_variant_of_each_class_is_caught() -> None:
    correct, *variants = check_all([None, *ONE_PER_CLASS])
    assert correct.conform_exit == 0, correct.output[-3000:]
    assert "ids allocated" in correct.output  # the depth line
    for verdict in variants:
        assert_caught(verdict)


@pytest.mark.variants
@pytest.mark.parametrize("chunk", range(3))
def test_every_variant_is_caught_by_the_default_campaign(chunk: int) -> None:
    names = [name for index, name in enumerate(BUGS) if index % 3 == chunk]
    for verdict in check_all(names):
        assert_caught(verdict)

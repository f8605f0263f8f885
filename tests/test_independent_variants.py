"""The mutation benchmark: a duebook written from the docs alone
(duespec/bench/independent_duebook.py) passes the default campaign, and each of its
realistic single-bug variants is caught by `duespec conform duebook` with no flags, with a
trace whose printed `duespec replay` command exits 1.

`make test` runs one variant of each class of bug (two worker processes); the whole set
of 30 is `pytest -m variants` (and `duespec bench --only variants`, which also reports the
kill rate and the median time to the first failing run)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from duespec.bench import Goal, variants
from duespec.bench.against import (
    LAYOUT,
    SOURCE_TREE,
    AgainstError,
    ChildRun,
    Comparison,
    compare,
    resolve_ref,
    summary,
)
from duespec.bench.independent_duebook import BUGS
from duespec.bench.variants import (ONE_PER_CLASS, PROGRAM, RESET_LEAK, VariantVerdict, check_all, check_variant,
                                    run_cli, target_of, variant_names)
from duespec.traces.format import is_reset, read_trace


def assert_caught(verdict: VariantVerdict) -> None:
    assert verdict.conform_exit == 1, f"{verdict.bug} was not caught:\n{verdict.output[-3000:]}"
    assert verdict.replay_exit == 1, f"{verdict.bug}: the printed replay did not fail:\n{verdict.output[-3000:]}"
    if verdict.bug == RESET_LEAK:
        # Named as the target's bug, and its trace (the steps, a reset, the same steps)
        # shows the leak in its second run on the fresh program the replay starts.
        assert verdict.reported_as_leak, verdict.output[-3000:]
        assert "(run 2 of the trace" in verdict.output.split("--- replay ---")[1], verdict.output[-3000:]
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
    """--quick checks one variant per class; a variant counts only when its printed replay
    fails too, a leak only when it is also reported as one."""
    checked: list[list[str | None]] = []

    def fake_check_all(bugs: list[str | None]) -> list[VariantVerdict]:
        checked.append(bugs)
        answers = {None: verdict(None, 0, None, None),
                   RESET_LEAK: verdict(RESET_LEAK, 1, 1, 0.5, "TARGET FAILED ... state survives reset"),
                   "float-id-accepted": verdict("float-id-accepted", 1, 0, 1.0)}  # replay passed: not caught
        return [answers.get(bug, verdict(bug, 1, 1, 3.0)) for bug in bugs]

    monkeypatch.setattr(variants, "check_all", fake_check_all)
    monkeypatch.setattr(variants, "compare", fake_compare)
    kill, first, rate, against = variants.figures(quick=True)
    assert checked == [[None, *ONE_PER_CLASS]]
    assert kill.value == pytest.approx(100 * 6 / 7) and kill.passed is False and "float-id-accepted" in kill.note
    assert first.value == 3.0 and first.passed is False  # median of 1.0, 0.5 and five 3.0s
    assert rate.value == 500.0  # 1000 steps in 2 CPU seconds
    assert not verdict(RESET_LEAK, 1, None, 0.5, "state survives reset").caught  # no replay printed
    assert not verdict(RESET_LEAK, 1, 0, 0.5, "state survives reset").caught  # the replay passed
    assert not verdict(RESET_LEAK, 1, 1, 0.5, "DIVERGES").caught  # not named a leak
    monkeypatch.setattr(variants, "check_all", lambda bugs: [
        verdict(bug, 0, None, None) if bug is None else verdict(bug, 1, 1, 1.5) for bug in bugs])
    monkeypatch.setattr(variants, "variant_names", lambda: [name for name in BUGS if name != RESET_LEAK])
    kill, first, _, against = variants.figures(quick=False, against="HEAD~1")
    assert kill.value == 100.0 and kill.passed and first.value == 1.5 and first.passed
    # Per repeat: 1000 steps in 1.0 s here over 1000 in 0.8 s at the ref (0.8), and 1000 in
    # 1.0 s over 1000 in 1.2 s (1.2): the median of the two is 1.0, and passes 0.85.
    assert against.value == pytest.approx(1.0) and (against.low, against.high) == pytest.approx((0.8, 1.2))
    assert against.passed and against.goal == Goal(">=", 0.85) and "HEAD~1" in against.what
    # All repeats pooled: 2000 steps in 2.0 s on each side.
    assert against.extra["steps_current"] == against.extra["steps_ref"] == 2000
    assert against.extra["pooled_ratio"] == pytest.approx(1.0) and "seeds 1-2" in against.note


def fake_compare(ref: str) -> Comparison:
    return Comparison(ref, "0" * 40, [ChildRun(1000, 10, 1.0, 1.5), ChildRun(1000, 10, 1.0, 1.5)],
                      [ChildRun(1000, 10, 0.8, 1.3), ChildRun(1000, 10, 1.2, 1.7)])


def test_no_main_to_measure_against_leaves_the_figure_out_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_ref(ref: str) -> Comparison:
        raise AgainstError(f"--against {ref}: no such commit")

    monkeypatch.setattr(variants, "compare", no_ref)
    figures, missing = variants.speed_against(None)
    assert figures == [] and missing is not None and "no such commit" in missing
    with pytest.raises(AgainstError):  # named with --against, it must not be left out silently
        variants.speed_against("no-such-ref")


def test_the_campaign_is_measured_against_a_commit_in_alternated_children(tmp_path: Path) -> None:
    """A git checkout whose HEAD is this tree: both sides run the same campaign, so each
    repeat (a seed of its own) takes the same steps on both; each child's own CPU and its
    whole CPU are both kept."""
    for folder in LAYOUT:
        shutil.copytree(SOURCE_TREE / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "tree"], check=True)
    comparison = compare("HEAD", repeats=2, examples=3, steps=10, repo=tmp_path, current=tmp_path)
    assert comparison.commit == subprocess.run(git[:3] + ["rev-parse", "HEAD"], capture_output=True,
                                               text=True).stdout.strip()
    assert len(comparison.current) == len(comparison.baseline) == 2
    assert all(here.steps == there.steps > 0 for here, there in zip(comparison.current, comparison.baseline))
    for run in comparison.current + comparison.baseline:
        assert run.runs >= 3 and 0 < run.cpu < run.process_cpu
    assert len(comparison.ratios) == 2 and all(ratio > 0 for ratio in comparison.ratios)
    assert set(summary(comparison)) >= {"steps_current", "steps_ref", "cpu_per_run_ratio"}


def test_against_a_ref_that_is_no_commit_or_outside_git_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from duespec.cli import main

    assert main(["bench", "--only", "variants", "--against", "no-such-ref-v8"]) == 2
    err = capsys.readouterr().err
    assert "no such commit" in err and "no-such-ref-v8" in err and "Traceback" not in err
    with pytest.raises(AgainstError, match="not a git checkout"):
        resolve_ref("HEAD", tmp_path)


def test_the_program_imports_nothing_of_duespec() -> None:
    source = PROGRAM.read_text()
    assert "duespec" not in "".join(line for line in source.splitlines()
                                    if line.startswith(("import ", "from ")))
    unknown = subprocess.run([sys.executable, str(PROGRAM), "--bug", "no-such-bug"], capture_output=True, text=True)
    assert unknown.returncode == 2 and "unknown bug" in unknown.stderr


@pytest.mark.long
def test_the_correct_program_holds_and_one_variant_of_each_class_is_caught() -> None:
    correct, *variants = check_all([None, *ONE_PER_CLASS])
    assert correct.conform_exit == 0, correct.output[-3000:]
    assert "ids allocated" in correct.output  # the depth line
    for verdict in variants:
        assert_caught(verdict)


def test_the_leak_trace_fails_on_the_leaking_program_and_replays_cleanly_on_the_correct_one(
        tmp_path: Path) -> None:
    """conform's printed replay command, run as printed, exits 1 on the leaking program; the
    same trace (the steps, a reset, the same steps) exits 0 on the correct program, each a
    fresh process speaking the protocol."""
    leaking = check_variant(RESET_LEAK, tmp_path)
    assert leaking.conform_exit == 1 and leaking.reported_as_leak and leaking.replay_exit == 1, leaking.output
    [trace] = tmp_path.glob("*.jsonl")
    header, read = read_trace(trace)
    evidence = header.extra["leak_evidence"]  # what the program answered in the probe's two passes
    assert evidence["first_run"]["response"] != evidence["after_one_more_reset"]["response"]
    assert evidence["model"]["response"]["ok"]["id"] == 1
    lines = list(read)
    assert sum(1 for line in lines if is_reset(line)) == 1
    steps = [line for line in lines if not is_reset(line)]
    half = len(steps) // 2
    assert [(s["op"], s["args"], s["now"], s["result"]) for s in steps[:half]] == \
           [(s["op"], s["args"], s["now"], s["result"]) for s in steps[half:]]
    assert f"duespec replay {trace}" in leaking.output
    code, said = run_cli(["replay", str(trace), "--target", target_of(None)])
    assert code == 0 and "CONFIRMED" in said and "in 2 runs (1 reset in between)" in said, said


@pytest.mark.variants
@pytest.mark.parametrize("chunk", range(3))
def test_every_variant_is_caught_by_the_default_campaign(chunk: int) -> None:
    names = [name for index, name in enumerate(BUGS) if index % 3 == chunk]
    for verdict in check_all(names):
        assert_caught(verdict)

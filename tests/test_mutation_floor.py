"""The mutation floor (tools/mutate/floor.py, tools/mutation-floor.txt) and the hand-written
mutants (tools/mutate/independent.py): every hand mutant still applies to today's impl/,
the floor file reads, one survivor more than the floor allows fails with the survivors
listed, and the quick floor holds (the one mutation measurement `make test` runs; the full
one is `make mutation-floor`, run by `make check`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))  # the tool is a script with its package beside it

from mutate import floor, independent, runner  # noqa: E402


def test_every_hand_mutant_applies_once_and_compiles() -> None:
    independent.check_every_hand_mutant_applies()
    for mutant in independent.HAND_MUTANTS:
        source = mutant.source()
        assert source != (ROOT / mutant.file).read_text(encoding="utf-8")
        compile(source, mutant.file, "exec")


def test_a_hand_mutant_whose_text_is_gone_is_refused() -> None:
    gone = independent.HandMutant("gone", "impl/cron.py", "no such text in the file", "x", "nothing")
    with pytest.raises(ValueError, match="occurs 0 times"):
        gone.source()


def test_the_committed_floor_file_names_every_floor() -> None:
    floors = floor.read_floors()
    assert set(floors) == {"quick", "full", "sql"}
    assert floors["quick"] <= len(floor.sample("quick"))
    assert floors["full"] <= len(floor.sample("full"))
    assert 0 < floors["sql"] <= 40  # make pg-mutation's sample (tools/pg_variants/mutate_sql.py)


def test_a_malformed_floor_line_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "floor.txt"
    path.write_text("# why\nquick killed >= 9\nfull killed at least 3\n", encoding="utf-8")
    with pytest.raises(ValueError, match=":3: expected"):
        floor.read_floors(path)
    path.write_text("# lowered: why\nquick killed >= 9  # reason beside it\n", encoding="utf-8")
    assert floor.read_floors(path) == {"quick": 9}


def test_the_samples_are_fixed() -> None:
    for name in ("quick", "full"):
        assert floor.sample(name) == floor.sample(name)
        assert {c.mutant.file for c in floor.sample(name)} == set(floor.FLOOR_FILES)
    full = floor.sample("full")
    assert {(c.mutant.name, c.seed) for c in full if isinstance(c.mutant, independent.HandMutant)} == {
        (m.name, seed) for m in independent.HAND_MUTANTS for seed in floor.HAND_SEEDS}


def _verdict(outcome: str, hand: str | None = None) -> runner.Verdict:
    return runner.Verdict("impl/cron.py", -1 if hand else 3, 0, "a bug", outcome, 0 if outcome == "survived" else 1,
                          1.0, "", None, 1 if hand else None, hand)


def test_one_survivor_more_than_the_floor_allows_fails_and_is_listed() -> None:
    verdicts = [_verdict("killed"), _verdict("killed"), _verdict("survived", hand="month-apr-unknown")]
    holds, said = floor.judge("quick", 2, verdicts)
    assert holds and "HOLDS" in said
    holds, said = floor.judge("quick", 3, verdicts)
    assert not holds
    assert "BROKEN, 1 more survived" in said
    assert "survived: hand month-apr-unknown at seed 1: a bug" in said


def test_the_quick_floor_holds(tmp_path: Path) -> None:
    """The quick sample through the default campaigns (about a minute of CPU)."""
    out = tmp_path / "quick.json"
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "mutate_impl.py"), "--floor", "quick",
                           "--workers", "1", "--out", str(out)], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mutation floor quick:" in done.stdout and "HOLDS" in done.stdout
    assert len(json.loads(out.read_text(encoding="utf-8"))) == len(floor.sample("quick"))


def test_the_figures_are_written_into_the_docs_block_only(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("intro\n<!-- mutation-floor full -->\nold\n<!-- /mutation-floor full -->\nafter\n", encoding="utf-8")
    floor.write_figures(doc, "full", "python tools/mutate_impl.py --floor full", "9 killed of 9")
    assert doc.read_text(encoding="utf-8") == (
        "intro\n<!-- mutation-floor full -->\n```\n$ python tools/mutate_impl.py --floor full\n9 killed of 9\n```\n"
        "<!-- /mutation-floor full -->\nafter\n")
    with pytest.raises(ValueError, match="no block"):
        floor.write_figures(doc, "quick", "x", "y")


def test_the_docs_figures_are_the_floor_commands_output() -> None:
    """docs/mutation.md's block is written by `--floor full --doc`, and names that command."""
    text = (ROOT / "docs" / "mutation.md").read_text(encoding="utf-8")
    block = text[text.index("<!-- mutation-floor full -->"):text.index("<!-- /mutation-floor full -->")]
    assert "$ python tools/mutate_impl.py --floor full" in block
    assert "mutation floor full:" in block


def test_checks_a_cut_run_never_finished_are_said_and_count_as_survivors() -> None:
    holds, said = floor.judge("full", 2, [_verdict("killed"), _verdict("killed")], unchecked=3)
    assert holds and "2 killed of 2 checked (3 of the sample not checked: counted as survivors)" in said


def test_a_mutant_check_saves_nothing_in_its_folders_example_database(tmp_path: Path) -> None:
    """A check ran with the default example database of its working folder (for
    `make mutation-floor`, the clone's `.duespec/examples`): each mutant's failures were
    saved there and replayed first by the next mutant's check."""
    env = {name: value for name, value in os.environ.items() if name != "DUESPEC_DATABASE"}
    done = subprocess.run([sys.executable, str(runner.COMMAND), "--child", "impl/cron.py", "hand:names-case-sensitive",
                           str(tmp_path / "traces"), "fast", "default"], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 1 and "DIVERGES" in done.stdout, done.stdout + done.stderr  # killed
    assert not (tmp_path / ".duespec").exists()


@pytest.mark.parametrize("option", ["--verdicts", "--doc"])
def test_verdicts_or_doc_without_floor_is_refused_not_a_new_run(option: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Without --floor, --verdicts F.json used to start a whole new mutation run (minutes of
    CPU) and never read F.json."""
    from mutate import cli
    with pytest.raises(SystemExit) as exit:
        cli.main([option, str(tmp_path / "F.json")])
    assert exit.value.code == 2
    assert "go with --floor" in capsys.readouterr().err

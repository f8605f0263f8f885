"""tools/mutate_impl.py (the package tools/mutate/), the impl/ mutator behind docs/mutation.md:
it must mutate every impl file, sample every file, name the same node on every parse, and
classify a mutant the campaign kills as killed. (The measurement itself is far too long for a test.)"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))  # the tool is a script with its package beside it

from mutate import operators, report, runner  # noqa: E402


def test_every_impl_file_is_mutated() -> None:
    on_disk = {f"impl/{path.name}" for path in (ROOT / "impl").glob("*.py") if path.name != "__init__.py"}
    assert set(operators.FILES) == on_disk
    for file in operators.FILES:
        assert operators.mutants_of(file), file


def test_a_mutant_changes_exactly_its_node_and_compiles() -> None:
    file = "impl/duebook_requests.py"
    original = ast.dump(ast.parse((ROOT / file).read_text(encoding="utf-8")))
    dumps = set()
    for mutant in operators.mutants_of(file):
        tree = operators.mutated_source_tree(file, mutant.index)
        compile(tree, file, "exec")
        dumps.add(ast.dump(tree))
    assert original not in dumps
    assert len(dumps) == len(operators.mutants_of(file))  # each index a different program


def test_contract_free_functions_are_left_alone() -> None:
    lines = (ROOT / "impl/duebook.py").read_text(encoding="utf-8").splitlines()
    tree = ast.parse("\n".join(lines))
    snapshot = next(node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "snapshot")
    inside = range(snapshot.lineno, snapshot.end_lineno + 1)
    assert not [m for m in operators.mutants_of("impl/duebook.py") if m.line in inside]


def test_the_sample_covers_every_file_in_proportion_and_repeats() -> None:
    everything = [m for file in operators.FILES for m in operators.mutants_of(file)]
    sample = runner.stratified_sample(everything, 150, seed=1)
    assert sample == runner.stratified_sample(everything, 150, seed=1)
    assert len(set(sample)) == len(sample)
    for file in operators.FILES:
        mine = sum(m.file == file for m in everything)
        drawn = sum(m.file == file for m in sample)
        assert drawn >= min(mine, runner.MIN_PER_FILE)
        assert drawn <= max(runner.MIN_PER_FILE, round(150 * mine / len(everything)))
    assert abs(len(sample) - 150) <= len(operators.FILES) * runner.MIN_PER_FILE


def test_wilson_interval() -> None:
    low, high = report.wilson(95, 100)
    assert 0.88 < low < 0.89 and 0.97 < high < 0.98
    assert report.wilson(10, 10)[1] == 1.0 and report.wilson(10, 10)[0] < 1.0
    assert report.wilson(0, 0) == (0.0, 1.0)


#: `if known is None:` in impl/duebook_requests.py, the request router's unknown-op test.
ROUTER_LINE = next(n for n, line in enumerate(
    (Path(__file__).parents[1] / "impl" / "duebook_requests.py").read_text().splitlines(), start=1)
    if line.strip() == "if known is None:")


def test_a_mutant_the_campaign_catches_is_killed() -> None:
    """`is None` -> `is not None` in the duebook request router: every known op is refused."""
    [mutant] = [m for m in operators.mutants_of("impl/duebook_requests.py")
                if m.description == "Is -> IsNot" and m.line == ROUTER_LINE]
    verdict = runner.check_mutant(mutant)
    assert verdict.outcome == "killed", verdict
    # Refusing every known op diverges; an unknown op now unpacks None and raises: either is a kill.
    assert verdict.first_lines.startswith(("DIVERGES: duebook", "TARGET FAILED: duebook")), verdict.first_lines


def test_the_summary_leaves_out_only_recorded_equivalents() -> None:
    [mutant] = [m for m in operators.mutants_of("impl/duebook_requests.py")
                if m.description == "Is -> IsNot" and m.line == ROUTER_LINE]
    survivor = runner.Verdict(mutant.file, mutant.index, mutant.line, mutant.description, "survived", 0, 1.0, "")
    text = report.summary([survivor])
    assert "0 killed of    1 non-equivalent" in text.splitlines()[-2]
    assert f"survived: {mutant.file}:{mutant.line}" in text


def test_the_command_runs_from_any_directory(tmp_path: Path) -> None:
    """The command finds its package beside it, not on the working directory's path."""
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "mutate_impl.py"), "--list"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    counts = [int(line.rsplit(" ", 2)[1]) for line in done.stdout.splitlines()[:-1]]
    assert len(counts) == len(operators.FILES) and all(counts)
    assert done.stdout.splitlines()[-1] == f"total: {sum(counts)}"

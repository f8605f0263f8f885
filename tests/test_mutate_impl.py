"""tools/mutate_impl.py, the impl/ mutator behind docs/mutation.md: it must mutate every
impl file, sample every file, name the same node on every parse, and classify a
mutant the campaign kills as killed. (The measurement itself is far too long for a test.)"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("mutate_impl", ROOT / "tools" / "mutate_impl.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutate_impl"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_every_impl_file_is_mutated(tool) -> None:
    on_disk = {f"impl/{path.name}" for path in (ROOT / "impl").glob("*.py") if path.name != "__init__.py"}
    assert set(tool.FILES) == on_disk
    for file in tool.FILES:
        assert tool.mutants_of(file), file


def test_a_mutant_changes_exactly_its_node_and_compiles(tool) -> None:
    file = "impl/duebook_requests.py"
    original = ast.dump(ast.parse((ROOT / file).read_text(encoding="utf-8")))
    dumps = set()
    for mutant in tool.mutants_of(file):
        tree = tool.mutated_source_tree(file, mutant.index)
        compile(tree, file, "exec")
        dumps.add(ast.dump(tree))
    assert original not in dumps
    assert len(dumps) == len(tool.mutants_of(file))  # each index a different program


def test_contract_free_functions_are_left_alone(tool) -> None:
    lines = (ROOT / "impl/duebook.py").read_text(encoding="utf-8").splitlines()
    tree = ast.parse("\n".join(lines))
    snapshot = next(node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "snapshot")
    inside = range(snapshot.lineno, snapshot.end_lineno + 1)
    assert not [m for m in tool.mutants_of("impl/duebook.py") if m.line in inside]


def test_the_sample_covers_every_file_in_proportion_and_repeats(tool) -> None:
    everything = [m for file in tool.FILES for m in tool.mutants_of(file)]
    sample = tool.stratified_sample(everything, 150, seed=1)
    assert sample == tool.stratified_sample(everything, 150, seed=1)
    assert len(set(sample)) == len(sample)
    for file in tool.FILES:
        mine = sum(m.file == file for m in everything)
        drawn = sum(m.file == file for m in sample)
        assert drawn >= min(mine, tool.MIN_PER_FILE)
        assert drawn <= max(tool.MIN_PER_FILE, round(150 * mine / len(everything)))
    assert abs(len(sample) - 150) <= len(tool.FILES) * tool.MIN_PER_FILE


def test_wilson_interval(tool) -> None:
    low, high = tool.wilson(95, 100)
    assert 0.88 < low < 0.89 and 0.97 < high < 0.98
    assert tool.wilson(10, 10)[1] == 1.0 and tool.wilson(10, 10)[0] < 1.0
    assert tool.wilson(0, 0) == (0.0, 1.0)


#: `if known is None:` in impl/duebook_requests.py, the request router's unknown-op test.
ROUTER_LINE = next(n for n, line in enumerate(
    (Path(__file__).parents[1] / "impl" / "duebook_requests.py").read_text().splitlines(), start=1)
    if line.strip() == "if known is None:")


def test_a_mutant_the_campaign_catches_is_killed(tool) -> None:
    """`is None` -> `is not None` in the duebook request router: every known op is refused."""
    [mutant] = [m for m in tool.mutants_of("impl/duebook_requests.py")
                if m.description == "Is -> IsNot" and m.line == ROUTER_LINE]
    verdict = tool.check_mutant(mutant)
    assert verdict.outcome == "killed", verdict
    assert verdict.first_lines.startswith("DIVERGES: duebook")


def test_the_summary_leaves_out_only_recorded_equivalents(tool) -> None:
    [mutant] = [m for m in tool.mutants_of("impl/duebook_requests.py")
                if m.description == "Is -> IsNot" and m.line == ROUTER_LINE]
    survivor = tool.Verdict(mutant.file, mutant.index, mutant.line, mutant.description, "survived", 0, 1.0, "")
    text = tool.summary([survivor])
    assert "0 killed of    1 non-equivalent" in text.splitlines()[-2]
    assert f"survived: {mutant.file}:{mutant.line}" in text

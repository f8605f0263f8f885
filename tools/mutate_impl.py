"""Automated mutation of impl/: does `duespec check SYSTEM --profile all` (default
settings) kill mutants nobody chose?

Each mutant changes one AST node of one impl file: a comparison operator (< <= > >= ==
!=, in, is), an arithmetic or boolean operator, an integer constant (n -> n+1, n -> n-1),
a `not` dropped, a True/False flipped, a `return x` of a bool... The mutated module is
compiled in memory in a fresh process (the files on disk never change), installed in
sys.modules before duespec imports it, and `duespec check` runs against it: exit 1 kills
the mutant, exit 0 lets it survive; a process that times out counts as killed (a hang is
what the per-call deadline reports), and so does a mutant that crashes duespec outright
(reported apart, as "broken"). Functions outside the JSON contract (snapshot and
restore, the on-disk store's opening, repr) are not mutated: no campaign calls them; their
unit tests do.

    .venv/bin/python tools/mutate_impl.py --list                # count the mutants per file
    .venv/bin/python tools/mutate_impl.py --sample 150 --seed 1 --workers 2 --out mutants.json
    .venv/bin/python tools/mutate_impl.py --run impl/duebook.py 17   # one mutant, verbose

docs/mutation.md has the last run's figures and the survivors judged equivalent.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Each impl file, the system whose campaign exercises it.
FILES = {
    "impl/duebook.py": "duebook",
    "impl/cron.py": "schedules",
    "impl/schedules.py": "schedules",
    "impl/schedules_records.py": "schedules",
    "impl/schedules_sql.py": "schedules",
}
#: Not reachable through the JSON contract (docs/operations.md): unit-tested instead.
OUT_OF_CONTRACT = frozenset({
    "snapshot", "restore", "_check_snapshot_rows", "_little_endian", "__repr__", "__len__",
    "from_sorted", "close", "transaction",
    # module constants only snapshot and restore read
    "_SNAPSHOT_MAGIC", "_SNAPSHOT_VERSION", "_HEADER", "_OWNER_LENGTH",
})
#: Seconds one check may take before the mutant counts as hanging (killed).
CHECK_TIMEOUT = 600

SWAPS: dict[type, tuple[type, ...]] = {
    ast.Lt: (ast.LtE, ast.Gt), ast.LtE: (ast.Lt, ast.GtE), ast.Gt: (ast.GtE, ast.Lt),
    ast.GtE: (ast.Gt, ast.LtE), ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,),
    ast.In: (ast.NotIn,), ast.NotIn: (ast.In,), ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,),
    ast.Add: (ast.Sub,), ast.Sub: (ast.Add,), ast.Mult: (ast.FloorDiv,), ast.FloorDiv: (ast.Mult,),
    ast.Mod: (ast.FloorDiv,), ast.And: (ast.Or,), ast.Or: (ast.And,),
}


@dataclass(frozen=True)
class Mutant:
    file: str
    index: int
    line: int
    description: str


def functions_out_of_contract(tree: ast.AST) -> set[int]:
    """Ids of the nodes inside functions no campaign calls."""
    excluded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in OUT_OF_CONTRACT:
            excluded.update(id(inner) for inner in ast.walk(node))
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in OUT_OF_CONTRACT
                                                for t in node.targets):
            excluded.update(id(inner) for inner in ast.walk(node))
    return excluded


def mutation_points(tree: ast.AST) -> list[tuple[ast.AST, str, object]]:
    """(node, description, replacement) for every mutation of the module, in walk order."""
    excluded = functions_out_of_contract(tree)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    points: list[tuple[ast.AST, str, object]] = []
    for node in ast.walk(tree):
        if id(node) in excluded or id(node) in docstrings:
            continue
        if isinstance(node, ast.Compare):
            for position, op in enumerate(node.ops):
                for other in SWAPS.get(type(op), ()):
                    points.append((node, f"{type(op).__name__} -> {other.__name__}", ("ops", position, other)))
        elif isinstance(node, ast.BinOp) and type(node.op) in SWAPS:
            for other in SWAPS[type(node.op)]:
                points.append((node, f"{type(node.op).__name__} -> {other.__name__}", ("op", None, other)))
        elif isinstance(node, ast.BoolOp):
            other = SWAPS[type(node.op)][0]
            points.append((node, f"{type(node.op).__name__} -> {other.__name__}", ("op", None, other)))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            points.append((node, "drop `not`", ("unwrap", None, None)))
        elif isinstance(node, ast.Constant) and type(node.value) is bool:
            points.append((node, f"{node.value} -> {not node.value}", ("value", None, not node.value)))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            for delta in (1, -1):
                points.append((node, f"{node.value} -> {node.value + delta}", ("value", None, node.value + delta)))
    return points


class _Apply(ast.NodeTransformer):
    def __init__(self, target: ast.AST, change: tuple[str, object, object]) -> None:
        self.target, self.change = target, change

    def generic_visit(self, node: ast.AST) -> ast.AST:
        node = super().generic_visit(node)
        if node is not self.target:
            return node
        kind, position, value = self.change
        if kind == "ops":
            node.ops[position] = value()  # type: ignore[attr-defined,index,operator]
        elif kind == "op":
            node.op = value()  # type: ignore[attr-defined,operator]
        elif kind == "unwrap":
            return node.operand  # type: ignore[attr-defined,no-any-return]
        else:
            node.value = value  # type: ignore[attr-defined]
        return node


def mutants_of(file: str) -> list[Mutant]:
    tree = ast.parse((ROOT / file).read_text(encoding="utf-8"))
    return [Mutant(file, index, getattr(node, "lineno", 0), description)
            for index, (node, description, _) in enumerate(mutation_points(tree))]


def mutated_source_tree(file: str, index: int) -> ast.Module:
    tree = ast.parse((ROOT / file).read_text(encoding="utf-8"))
    node, _, change = mutation_points(tree)[index]
    # The walk order is fixed by the tree, so the index names the same node on every parse.
    mutated = _Apply(node, change).visit(tree)
    return ast.fix_missing_locations(mutated)  # type: ignore[arg-type]


def run_in_this_process(file: str, index: int, trace_dir: str) -> int:
    """Install the mutated module, then run the check (the child side of `check_mutant`)."""
    module_name = "duespec.impl." + Path(file).stem
    importlib.import_module("duespec.impl")
    spec = importlib.util.find_spec(module_name)
    assert spec is not None and spec.origin is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    exec(compile(mutated_source_tree(file, index), spec.origin, "exec"), module.__dict__)
    from duespec.cli import main
    return main(["check", FILES[file], "--profile", "all", "--no-coverage", "--progress", "0",
                 "--trace-dir", trace_dir])


@dataclass(frozen=True)
class Verdict:
    file: str
    index: int
    line: int
    description: str
    #: "killed" (a campaign failed), "hung", "broken" (the mutated module crashed duespec
    #: outright, e.g. on import: what any caller would notice) or "survived".
    outcome: str
    exit_code: int | None
    seconds: float
    first_lines: str

    @property
    def killed(self) -> bool:
        return self.outcome != "survived"


def check_mutant(mutant: Mutant) -> Verdict:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="duespec-mutant-") as traces:
        try:
            done = subprocess.run([sys.executable, __file__, "--child", mutant.file, str(mutant.index), traces],
                                  capture_output=True, text=True, timeout=CHECK_TIMEOUT, cwd=ROOT)
            code: int | None = done.returncode
            output = done.stdout + done.stderr
        except subprocess.TimeoutExpired:
            code, output = None, f"timed out after {CHECK_TIMEOUT}s"
    failed = re.search(r"^(DIVERGES|TARGET FAILED|FAILED): ", output, re.MULTILINE)
    outcome = ("survived" if code == 0 else "hung" if code is None else
               "killed" if code == 1 and failed else "broken")
    return Verdict(mutant.file, mutant.index, mutant.line, mutant.description, outcome,
                   code, time.perf_counter() - started, "\n".join(output.splitlines()[:6]))


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        return run_in_this_process(argv[1], int(argv[2]), argv[3])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="count the mutants per file")
    parser.add_argument("--sample", type=int, default=0, help="check this many, drawn at random")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="mutants.json")
    parser.add_argument("--run", nargs=2, metavar=("FILE", "INDEX"), help="check one mutant")
    args = parser.parse_args(argv)
    everything = [m for file in FILES for m in mutants_of(file)]
    if args.list:
        for file in FILES:
            print(f"{file}: {sum(m.file == file for m in everything)} mutants")
        print(f"total: {len(everything)}")
        return 0
    if args.run:
        [mutant] = [m for m in everything if m.file == args.run[0] and m.index == int(args.run[1])]
        verdict = check_mutant(mutant)
        print(json.dumps(asdict(verdict), indent=2))
        return 0
    chosen = random.Random(args.seed).sample(everything, args.sample) if args.sample else everything
    verdicts: list[Verdict] = []
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        for future in as_completed([pool.submit(check_mutant, mutant) for mutant in chosen]):
            verdict = future.result()
            verdicts.append(verdict)
            print(f"{verdict.outcome:8} {verdict.file}:{verdict.line} "
                  f"#{verdict.index} {verdict.description} ({verdict.seconds:.0f}s)", flush=True)
            # Written as each verdict arrives: a run stopped early keeps what it measured.
            Path(args.out).write_text(json.dumps([asdict(v) for v in verdicts], indent=2) + "\n",
                                      encoding="utf-8")
    killed = sum(v.killed for v in verdicts)
    print(f"{killed} of {len(verdicts)} mutants killed ({100 * killed / max(1, len(verdicts)):.1f}%); "
          f"survivors: {len(verdicts) - killed}; details in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

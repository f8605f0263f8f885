"""What a mutant is: one AST node of one impl file changed (SWAPS, integer constants moved
by one, `not` dropped, booleans flipped), numbered in walk order, and named by a key that
stays stable while its line does.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Each impl file, the system whose campaign exercises it.
FILES = {
    "impl/duebook.py": "duebook",
    "impl/duebook_requests.py": "duebook",
    "impl/cron.py": "schedules",
    "impl/schedules.py": "schedules",
    "impl/schedules_records.py": "schedules",
    "impl/schedules_sql.py": "schedules",
    "impl/schedules_tasks.py": "schedules",
}
#: Not reachable through the JSON contract (docs/operations.md): unit-tested instead.
OUT_OF_CONTRACT = frozenset({
    "snapshot", "restore", "_check_snapshot_rows", "_little_endian", "__repr__", "__len__",
    "from_sorted", "close", "transaction",
    # module constants only snapshot and restore read
    "_SNAPSHOT_MAGIC", "_SNAPSHOT_VERSION", "_HEADER", "_OWNER_LENGTH",
})

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


@lru_cache(maxsize=None)
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


@lru_cache(maxsize=None)
def _lines(file: str) -> tuple[str, ...]:
    return tuple((ROOT / file).read_text(encoding="utf-8").splitlines())


@lru_cache(maxsize=None)
def _definitions(file: str) -> tuple[ast.AST, ...]:
    return tuple(node for node in ast.walk(ast.parse((ROOT / file).read_text(encoding="utf-8")))
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))


def source_line(file: str, line: int) -> str:
    return _lines(file)[line - 1].strip()


def enclosing_function(file: str, line: int) -> str:
    """The innermost def around `line` ("" at module level): the same text may recur."""
    name, best = "", 0
    for node in _definitions(file):
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and node.lineno <= line <= (node.end_lineno or node.lineno)):
            if node.lineno >= best:
                name, best = node.name, node.lineno
    return name


def mutant_key(file: str, index: int) -> tuple[str, str, str, str]:
    """(file, enclosing def, line text, mutation) naming a mutant in EQUIVALENT; when one
    line has the same mutation more than once, the mutation reads e.g. "LtE -> GtE #2"."""
    mutants = mutants_of(file)
    mutant = mutants[index]
    alike = [m for m in mutants if m.line == mutant.line and m.description == mutant.description]
    description = mutant.description + (f" #{alike.index(mutant) + 1}" if len(alike) > 1 else "")
    return (file, enclosing_function(file, mutant.line), source_line(file, mutant.line), description)


def mutated_expression(file: str, index: int) -> str:
    """The mutated node as source, for a reader: `0 <= delay >= INT64_MAX`."""
    tree = ast.parse((ROOT / file).read_text(encoding="utf-8"))
    node, _, change = mutation_points(tree)[index]
    if change[0] == "unwrap":
        return ast.unparse(node.operand)  # type: ignore[attr-defined]
    return ast.unparse(_Apply(node, change).visit(node))

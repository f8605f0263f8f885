"""The harness is layered, lowest first, and a lower layer never imports a higher one:

    0  duespec.limits, outputs, coverage, exits, jsondiff, targets   (and spec/, model/, impl/ below them)
    1  duespec.systems                                       (the only place that knows a system)
    2  duespec.judge                                         (the step comparison)
    3  duespec.campaigns, traces, histories, wire, prove     (commands and what they run)
    4  duespec.bench, duespec.cli, pytest_plugin             (what runs the commands)

Read from the source alone (ast, imports only; an import inside a function counts as much
as one at the top), so a violation fails here before it shows as an import cycle or a
module that cannot be loaded on its own. impl/, the production implementation, never
imports the reference model it is checked against (nor the harness), and no duespec
module imports itself back through others.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: Import name -> folder: spec/, model/ and impl/ install as duespec.spec, .model and .impl.
TREES = {"duespec": REPO / "duespec", "duespec.spec": REPO / "spec", "duespec.model": REPO / "model",
         "duespec.impl": REPO / "impl"}

LAYERS: tuple[tuple[str, ...], ...] = (
    ("duespec", "duespec.limits", "duespec.outputs", "duespec.coverage", "duespec.exits", "duespec.targets",
     "duespec.jsondiff",
     "duespec.spec", "duespec.model", "duespec.impl"),
    ("duespec.systems",),
    ("duespec.judge",),
    ("duespec.campaigns", "duespec.traces", "duespec.histories", "duespec.wire", "duespec.prove"),
    ("duespec.bench", "duespec.cli", "duespec.__main__", "duespec.pytest_plugin"),
)

#: The executable specification, the reference model and the production implementation
#: sit below the whole harness: they may import only each other (impl not even the others)
#: and the coverage tagger the model marks its branches with.
SPECIFICATION = ("duespec.spec", "duespec.model", "duespec.impl")
SPECIFICATION_MAY_IMPORT = ("duespec.spec", "duespec.model", "duespec.impl", "duespec.coverage")

#: Known upward imports, each with why it is still here; shrink this, never grow it.
#: (importer, imported): an importer's module or package, and the exact module it imports.
ALLOWED: dict[tuple[str, str], str] = {
    ("duespec.targets.resolve", "duespec.systems"):
        "resolve() turns a command-line name into a factory for a System (its model, impl "
        "and whether it takes HTTP targets): the naming half of resolve.py belongs a layer "
        "up, apart from the call boundary (guarded, WatchedTarget) it sits beside",
    ("duespec.targets.resolve", "duespec.wire.http_target"):
        "resolve() makes the HTTP target for `http://HOST:PORT` (imported lazily); moves up "
        "with the naming half of resolve.py (see above)",
}


def module_name(tree: str, path: Path) -> str:
    parts = list(path.relative_to(TREES[tree]).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([tree, *parts])


def all_modules() -> dict[str, Path]:
    return {module_name(tree, path): path for tree, root in TREES.items() for path in sorted(root.rglob("*.py"))}


MODULES = all_modules()


def imports_of(name: str, path: Path) -> set[str]:
    """The duespec modules (or packages) `name` imports anywhere in its source; `from P
    import m` where P.m is a module counts as importing P.m too."""
    found: set[str] = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in MODULES)
    return {module for module in found if module == "duespec" or module.startswith("duespec.")}


IMPORTS = {name: imports_of(name, path) for name, path in MODULES.items()}


def owner(name: str, prefixes: tuple[str, ...]) -> str | None:
    """The longest of `prefixes` that is `name` or a package holding it."""
    matches = [p for p in prefixes if name == p or name.startswith(p + ".")]
    return max(matches, key=len) if matches else None


def layer_of(name: str) -> int:
    prefixes = tuple(p for layer in LAYERS for p in layer)
    found = owner(name, prefixes)
    assert found is not None, f"{name} is in no layer of tests/test_layers.py: place it in LAYERS"
    return next(i for i, layer in enumerate(LAYERS) if found in layer)


def allowed(importer: str, imported: str) -> bool:
    return any((importer == who or importer.startswith(who + ".")) and imported == what
               for who, what in ALLOWED)


def test_the_parse_sees_the_whole_harness() -> None:
    # A guard on the reading itself: were the walk to miss files, every check below would pass.
    assert {"duespec.cli", "duespec.targets.resolve", "duespec.systems.duebook", "duespec.model.duebook",
            "duespec.impl.schedules", "duespec.spec.duebook_z3"} <= set(MODULES)
    assert "duespec.targets.interface" in IMPORTS["duespec.targets.resolve"]
    assert "duespec.systems.duebook.ops" in IMPORTS["duespec.systems.duebook.machine"]


def test_every_module_has_a_layer() -> None:
    for name in MODULES:
        layer_of(name)


def test_no_layer_imports_a_higher_one() -> None:
    upward = sorted(f"{importer} (layer {layer_of(importer)}) imports {imported} (layer {layer_of(imported)})"
                    for importer, imported_all in IMPORTS.items() for imported in imported_all
                    if layer_of(imported) > layer_of(importer) and not allowed(importer, imported))
    assert not upward, "lower layers import higher ones:\n" + "\n".join(upward)


def test_every_allowed_exception_is_still_needed() -> None:
    """An entry of ALLOWED that no import needs any more is taken out, so the list only shrinks."""
    used = {(who, what) for who, what in ALLOWED
            for importer, imported_all in IMPORTS.items() if what in imported_all
            and (importer == who or importer.startswith(who + "."))}
    assert set(ALLOWED) == used, f"no longer needed, remove from ALLOWED: {sorted(set(ALLOWED) - used)}"


@pytest.mark.parametrize("tree", SPECIFICATION)
def test_the_specification_model_and_implementation_import_no_harness(tree: str) -> None:
    bad = sorted(f"{importer} imports {imported}" for importer, imported_all in IMPORTS.items()
                 if owner(importer, SPECIFICATION) == tree for imported in imported_all
                 if owner(imported, SPECIFICATION_MAY_IMPORT) is None and imported != "duespec")
    assert not bad, "\n".join(bad)


def test_the_implementation_never_imports_the_model_or_the_spec() -> None:
    bad = sorted(f"{importer} imports {imported}" for importer, imported_all in IMPORTS.items()
                 if owner(importer, ("duespec.impl",)) for imported in imported_all
                 if not owner(imported, ("duespec.impl",)))
    assert not bad, "impl/ must stand alone (it is what the model checks):\n" + "\n".join(bad)


def test_no_import_cycle() -> None:
    """Tarjan's strongly connected components over module -> module imports."""
    graph = {name: sorted(imported & MODULES.keys()) for name, imported in IMPORTS.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(start: str) -> None:
        # Iterative: deep import chains must not meet Python's recursion limit.
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph[nxt])))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in graph[node]:
                        cycles.append(sorted(component))

    for name in graph:
        if name not in index:
            visit(name)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(cycle) for cycle in cycles)


def test_the_cycle_check_finds_a_cycle(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above would pass on any graph if it could not see a cycle at all."""
    planted = {**IMPORTS, "duespec.targets.interface": IMPORTS["duespec.targets.interface"] | {"duespec.targets.resolve"}}
    monkeypatch.setitem(globals(), "IMPORTS", planted)
    # both in one cycle (the modules between them, sorted, depend on what else imports interface)
    with pytest.raises(AssertionError, match="duespec.targets.interface <-> (.* <-> )?duespec.targets.resolve"):
        test_no_import_cycle()

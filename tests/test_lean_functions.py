"""spec/schedules.md's table lists every Lean function of resonatehq/resonate-specification at
83d64c3, each with a model file that defines what it names and implementation functions that
exist. The functions are those of tests/lean_83d64c3_functions.tsv, extracted from the Lean
files (every `def` and `opaque`; its header says how)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from duespec.campaigns.report import catalogue_text
from duespec.impl.schedules import ScheduleServer

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "model" / "schedules"
IMPL_MODULES = ("schedules", "schedules_tasks", "schedules_sql", "schedules_records", "cron")
SECTION = "## Every Lean function at 83d64c3"


def lean_functions() -> set[tuple[str, str]]:
    lines = (ROOT / "tests" / "lean_83d64c3_functions.tsv").read_text(encoding="utf-8").splitlines()
    return {tuple(line.split("\t")) for line in lines if line and not line.startswith("#")}  # type: ignore[misc]


def table() -> list[list[str]]:
    text = catalogue_text("schedules.md")
    section = text[text.index(SECTION):]
    section = section[:section.index("\n## ", 1)]
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in section.splitlines() if line.startswith("| ")]
    assert rows[0][:3] == ["Lean file", "function", "ID"]
    return rows[1:]


def names_of(cell: str) -> list[str]:
    """"promiseGet" -> ["promiseGet"]; "nextCron (opaque)" -> ["nextCron"]."""
    return [name.strip() for name in re.sub(r"\(.*?\)", "", cell).split(",") if name.strip()]


def lean_file_of(path: str) -> str:
    """spec/02-actions/P-01-promise.get.lean -> P-01; spec/01-objects/state.lean -> 01-objects/state;
    spec/02-actions/02-timeouts.lean -> 02-timeouts."""
    stem = path.removeprefix("spec/").removesuffix(".lean")
    folder, name = stem.split("/")
    match = re.match(r"([A-Z]-\d\d)-", name)
    if match:
        return match.group(1)
    return f"{folder}/{name}" if folder == "01-objects" else name


def resolves_in_impl(name: str) -> bool:
    owner, _, attribute = name.rpartition(".")
    for module_name in IMPL_MODULES:
        module = importlib.import_module(f"duespec.impl.{module_name}")
        if not owner and hasattr(module, attribute):
            return True
        if owner and hasattr(getattr(module, owner, None), attribute):
            return True
    return not owner and hasattr(ScheduleServer, attribute)


def test_the_table_lists_every_lean_function_once_and_no_other() -> None:
    listed = [(row[0], name) for row in table() for name in names_of(row[1])]
    wanted = {(lean_file_of(path), name) for path, name in lean_functions()}
    assert len(wanted) == 54  # 27 handlers of 02-actions, 27 functions of 01-objects/state
    assert sorted(set(listed) ^ wanted) == [], "the table and the Lean at 83d64c3 differ"
    assert len(listed) == len(set(listed)), "a function listed twice"


@pytest.mark.parametrize("row", table(), ids=lambda row: row[1])
def test_each_row_names_a_model_file_and_impl_functions_that_exist(row: list[str]) -> None:
    _, function, _, model, impl, checked = row
    files = re.findall(r"`([\w.]+\.py)`", model)
    assert files, f"{function}: no model file"
    sources = []
    for name in files:
        assert (MODEL / name).is_file(), f"{function}: model/schedules/{name} does not exist"
        sources.append((MODEL / name).read_text(encoding="utf-8"))
    for name in re.findall(r"`(\w+)`", model):  # functions named beside the files
        assert any(re.search(rf"^def {name}\(", source, re.MULTILINE) for source in sources), \
            f"{function}: {name} is not defined in {files}"
    named = re.findall(r"`([\w.]+)`", impl)
    assert named, f"{function}: no implementation function"
    for name in named:
        assert resolves_in_impl(name), f"{function}: impl has no {name}"
    assert checked, f"{function}: says nothing about how it is checked"

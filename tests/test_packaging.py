"""duespec installs under its own import names and never shadows a user's packages."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real (non-editable) `pip install .` of this checkout, into a folder of its own."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--target", str(target), str(REPO)], check=True, capture_output=True)
    return target


def run_outside_repo(tmp_path: Path, installed: Path, code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(installed)}
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                            text=True, check=True, env=env)
    return result.stdout.strip()


def test_the_installed_copy_is_the_one_imported(tmp_path: Path, installed: Path) -> None:
    location = run_outside_repo(tmp_path, installed, "import duespec; print(duespec.__file__)")
    assert Path(location).is_relative_to(installed)


def test_subpackages_import_from_outside_the_repo(tmp_path: Path, installed: Path) -> None:
    location = run_outside_repo(tmp_path, installed, (
        "import duespec.spec, duespec.model, duespec.impl, duespec.cli;"
        "print(duespec.spec.__name__, duespec.model.__name__, duespec.impl.__name__)"))
    assert location == "duespec.spec duespec.model duespec.impl"


def test_each_system_package_is_installed(tmp_path: Path, installed: Path) -> None:
    machines = run_outside_repo(tmp_path, installed, (
        "from duespec.systems import BUILT_IN, get_system;"
        "print(' '.join(get_system(name).machine.__module__ for name in BUILT_IN))"))
    assert machines == "duespec.systems.duebook.machine duespec.systems.schedules.machine"


def test_every_package_folder_is_listed_in_pyproject() -> None:
    """setuptools installs only the packages named in [tool.setuptools] packages: a folder
    left out works in an editable checkout and is missing from a real install."""
    import tomllib

    settings = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(settings["packages"])
    found = {".".join([name, *init.parent.relative_to(REPO / folder).parts])
             for name, folder in settings["package-dir"].items()
             for init in (REPO / folder).rglob("__init__.py")}
    assert "duespec.systems.duebook" in found
    assert found == listed, f"missing from pyproject: {sorted(found - listed)}; listed, no folder: {sorted(listed - found)}"


def test_no_top_level_spec_model_or_impl_is_installed(tmp_path: Path, installed: Path) -> None:
    top_level = {p.name for p in installed.iterdir() if not p.name.endswith(".dist-info")}
    assert top_level - {"bin"} == {"duespec"}
    found = run_outside_repo(tmp_path, installed, (
        "import importlib.util;"
        "print([n for n in ('spec', 'model', 'impl', 'harness') if importlib.util.find_spec(n)])"))
    assert found == "[]"


def test_a_users_own_model_package_wins(tmp_path: Path, installed: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "__init__.py").write_text("WHO = 'user'\n")
    who = run_outside_repo(tmp_path, installed, "import duespec.model, model; print(model.WHO)")
    assert who == "user"


@pytest.mark.long
def test_cli_help_for_every_subcommand() -> None:
    from duespec.cli import build_parser

    parser = build_parser()
    subcommands = parser._subparsers._group_actions[0].choices  # argparse keeps them here
    assert {"prove", "check", "bench"} <= set(subcommands)
    for name in subcommands:
        result = subprocess.run([sys.executable, "-m", "duespec", name, "--help"],
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        assert "usage: duespec " + name in result.stdout


@pytest.mark.parametrize("argv, complaint", [
    (["check", "no-such-system"], "unknown system 'no-such-system'; known: duebook, schedules"),
    (["check", "duebook", "--profile", "nope"], "no profile nope"),
    (["check", "duebook", "--examples", "-5"], "must be at least 1, got -5"),
    (["suite", "--steps", "x"], "expected a whole number, got 'x'"),
    (["conform", "duebook"], "--target"),
])
def test_bad_usage_exits_2_naming_the_problem(argv: list[str], complaint: str) -> None:
    result = subprocess.run([sys.executable, "-m", "duespec", *argv], capture_output=True, text=True)
    assert result.returncode == 2
    assert complaint in result.stderr

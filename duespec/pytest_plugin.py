"""duespec's pytest plugin (installed with duespec as the `pytest11` entry point `duespec`).

Two ways in:

- `pytest --duespec-target TARGET --duespec-system duebook` runs the conformance campaign
  of each profile at collection and turns it into test items: one passing item per
  profile that holds, one item per divergence class otherwise (a failure carrying the
  class, its shrunk counterexample, its trace and the commands that reproduce it; a
  declared class passes). With pytest-xdist (`-n N`) the campaign runs once, in whichever
  worker collects first, and every worker collects the same items from its result.
- the fixture `duespec_conform(system, target, **options)` runs a campaign from a test
  and returns a ConformOutcome to assert on. Options are `duespec conform`'s, with
  underscores: `examples=30, profile="all", max_classes=3, database="none", jobs=2`.

Without `--duespec-target` the plugin adds nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest


class DuespecUsageError(Exception):
    """The campaign could not run: bad options or an unusable target (the CLI's exit 2)."""


@dataclass
class ConformOutcome:
    """What `duespec conform` found, as data: the parsed --json report and the text."""

    exit_code: int
    report: dict[str, Any]
    output: str
    campaigns: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def classes(self) -> list[dict[str, Any]]:
        """Every divergence class found, declared ones included, over every profile."""
        return [{**finding, "profile": campaign["profile"]}
                for campaign in self.campaigns for finding in campaign["findings"]]

    @property
    def undeclared(self) -> list[dict[str, Any]]:
        return [finding for finding in self.classes if not finding["declared"]]

    @property
    def labels(self) -> list[str]:
        return [finding["label"] for finding in self.classes]


def _argv(system: str, target: str, options: dict[str, Any]) -> list[str]:
    argv = ["conform", system, "--target", target]
    options = {"progress": 0, "no_coverage": True, **options}
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, (list, tuple)):
            for item in value:
                argv += [flag, str(item)]
        else:
            argv += [flag, str(value)]
    return argv


def run_conform(system: str, target: str, **options: Any) -> ConformOutcome:
    """`duespec conform SYSTEM --target TARGET` with these options, in this process."""
    from duespec.cli import build_parser, explain

    with tempfile.TemporaryDirectory(prefix="duespec-pytest-") as folder:
        report_path = Path(folder) / "report.json"
        argv = _argv(system, target, {**options, "json": str(report_path)})
        output = io.StringIO()
        try:
            with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
                args = build_parser().parse_args(argv)
                code = int(args.run(args))
        except SystemExit:  # argparse: bad options
            raise DuespecUsageError(f"duespec {' '.join(argv)}: bad options\n{output.getvalue()}") from None
        except Exception as error:  # UsageError, an unusable target: the CLI's exit 2
            raise DuespecUsageError(f"duespec conform: {explain(error)}") from None
        report = json.loads(report_path.read_text(encoding="utf-8"))
    return ConformOutcome(code, report, output.getvalue(), report.get("campaigns", []))


# -- options --------------------------------------------------------------------------

def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("duespec", "duespec conformance campaigns")
    group.addoption("--duespec-target", metavar="TARGET",
                    help="run duespec's conformance campaign against TARGET (as `duespec conform "
                         "--target`), one test item per profile, or per divergence class found")
    group.addoption("--duespec-system", default="duebook", metavar="SYSTEM",
                    help="duebook or schedules (default duebook)")
    group.addoption("--duespec-profile", action="append", metavar="PROFILE",
                    help="profile to check; repeat, or 'all' (default: all)")
    group.addoption("--duespec-examples", type=int, default=50, metavar="N", help="runs per campaign (default 50)")
    group.addoption("--duespec-seed", type=int, default=0, metavar="SEED", help="seed (default 0)")
    group.addoption("--duespec-steps", type=int, default=50, metavar="N", help="steps per run (default 50)")
    group.addoption("--duespec-max-classes", type=int, default=10, metavar="N",
                    help="divergence classes to look for (default 10)")
    group.addoption("--duespec-declared", metavar="FILE", help="declared differences (docs/declared.md)")
    group.addoption("--duespec-database", metavar="WHERE",
                    help="example database: a directory, redis://HOST:PORT/N or none "
                         "(default .duespec/examples)")
    group.addoption("--duespec-jobs", type=int, default=1, metavar="N", help="worker processes for the campaign")


def _options(config: pytest.Config) -> dict[str, Any]:
    return {"profile": config.getoption("duespec_profile") or ["all"],
            "examples": config.getoption("duespec_examples"), "seed": config.getoption("duespec_seed"),
            "steps": config.getoption("duespec_steps"), "max_classes": config.getoption("duespec_max_classes"),
            "declared": config.getoption("duespec_declared"), "database": config.getoption("duespec_database"),
            "jobs": config.getoption("duespec_jobs")}


# -- the fixture ----------------------------------------------------------------------

@pytest.fixture
def duespec_conform(request: pytest.FixtureRequest) -> Callable[..., ConformOutcome]:
    """`duespec_conform(system, target, **options)` -> ConformOutcome. The database is
    `--duespec-database` unless the call names one."""
    database = request.config.getoption("duespec_database")

    def conform(system: str, target: str, **options: Any) -> ConformOutcome:
        if database is not None:
            options.setdefault("database", database)
        return run_conform(system, target, **options)

    return conform


# -- campaign items -------------------------------------------------------------------

class DuespecClassFailure(Exception):
    """A divergence class: the item's failure, shown as duespec's report of it."""


class DuespecItem(pytest.Item):
    def __init__(self, *, finding: dict[str, Any] | None, campaign: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.finding, self.campaign = finding, campaign
        self.user_properties.append(("profile", campaign["profile"]))

    def runtest(self) -> None:
        if self.finding is not None and not self.finding["declared"]:
            raise DuespecClassFailure(self.finding.get("details") or self.finding["summary"])

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, DuespecClassFailure):
            return f"duespec divergence class: {self.finding['label']}\n{excinfo.value}"  # type: ignore[index]
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[str, int | None, str]:
        return "duespec", None, self.name


class DuespecUnusable(pytest.Item):
    def __init__(self, *, problem: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problem = problem

    def runtest(self) -> None:
        raise DuespecClassFailure(self.problem)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        return str(excinfo.value)

    def reportinfo(self) -> tuple[str, int | None, str]:
        return "duespec", None, self.name


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _campaign(config: pytest.Config) -> dict[str, Any]:
    """The campaign's report, run once per pytest run: under xdist the first worker to get
    the lock runs it and the others read its result."""
    system, target = config.getoption("duespec_system"), config.getoption("duespec_target")

    def run() -> dict[str, Any]:
        try:
            outcome = run_conform(system, target, **_options(config))
        except DuespecUsageError as error:
            return {"problem": str(error)}
        return {"exit": outcome.exit_code, "report": outcome.report}

    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return run()
    shared = Path(tempfile.gettempdir()) / f"duespec-pytest-{workerinput['testrunuid']}.json"
    with _locked(shared.with_suffix(".lock")):
        if shared.exists():
            return json.loads(shared.read_text(encoding="utf-8"))  # type: ignore[no-any-return]
        result = run()
        shared.write_text(json.dumps(result), encoding="utf-8")
        return result


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("duespec_target"):
        return
    system = config.getoption("duespec_system")
    result = _campaign(config)
    if "problem" in result:
        items.append(DuespecUnusable.from_parent(session, name=f"duespec[{system}: unusable]",
                                                 problem=result["problem"]))
        return
    for campaign in result["report"]["campaigns"]:
        where = f"{campaign['system']}-{campaign['profile']}"
        if not campaign["findings"]:
            items.append(DuespecItem.from_parent(session, name=f"duespec[{where}]", finding=None, campaign=campaign))
        for number, finding in enumerate(campaign["findings"], 1):
            items.append(DuespecItem.from_parent(session, name=f"duespec[{where}: class {number}: {finding['label']}]",
                                                 finding=finding, campaign=campaign))

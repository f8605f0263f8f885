"""Campaigns on many cores and machines, with a memory: --jobs, --shard, `duespec merge`,
the example database (a directory, a real Redis), the pytest plugin and the CI recipe."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any, Iterator

import pytest
from needs import unavailable

from duespec.bench.parallel import remembered_failure
from duespec.campaigns import database as examples_db
from duespec.campaigns import parallel
from duespec.campaigns.merge import merge_campaigns
from duespec.campaigns.report_json import campaign_to_json
from duespec.cli import build_parser
from duespec.systems import get_system

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
sys.path.insert(0, str(TESTS))

import scale_targets  # noqa: E402


def duespec(*argv: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(TESTS), **(env or {})}
    return subprocess.run([sys.executable, "-m", "duespec", *argv], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=timeout)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RedisServer:
    def __init__(self, folder: Path) -> None:
        binary = os.environ.get("DUESPEC_REDIS_SERVER") or shutil.which("redis-server")
        if not binary:
            unavailable("the shared Redis example database", "no redis-server (as root: apt-get install "
                        "redis-server; or set DUESPEC_REDIS_SERVER)")
        self.port = free_port()
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as connection:
                    connection.sendall(b"PING\r\n")
                    if connection.recv(7).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    folder = tmp_path / "redis"
    folder.mkdir()
    server = RedisServer(folder)
    try:
        yield server
    finally:
        server.stop()


# -- chunks, shards ---------------------------------------------------------------------

def test_chunks_depend_on_seed_and_budget_only() -> None:
    chunks = parallel.chunks_of(7, 230)
    assert [c.examples for c in chunks] == [50, 50, 50, 50, 30]
    assert chunks[0].seed == 7 and len({c.seed for c in chunks}) == 5
    assert chunks == parallel.chunks_of(7, 230)
    assert parallel.chunks_of(8, 230)[1].seed != chunks[1].seed
    assert parallel.chunks_of(7, 40) == [parallel.Chunk(0, 7, 40)]  # one chunk: the seed itself
    for n in (1, 2, 3, 4, 7):
        shares = [[c.index for c in chunks if parallel.in_shard(c.index, (i, n))] for i in range(1, n + 1)]
        assert sorted(sum(shares, [])) == list(range(5))  # disjoint and complete


def test_bad_shard_and_database_are_usage_errors(tmp_path: Path) -> None:
    for shard in ("3/2", "0/2", "a/b", "2"):
        run = duespec("check", "duebook", "--shard", shard, cwd=tmp_path)
        assert run.returncode == 2 and "--shard" in run.stderr and "Traceback" not in run.stderr
    (tmp_path / "afile").write_text("x")
    run = duespec("check", "duebook", "--examples", "2", "--database", "afile", cwd=tmp_path)
    assert run.returncode == 2 and "is a file, not a directory" in run.stderr and "Traceback" not in run.stderr


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 10 runs, so that a campaign of a few chunks costs seconds (workers are
    forked, so they see it too)."""
    monkeypatch.setattr(parallel, "CHUNK_RUNS", 10)


def _run(target: Any, examples: int, *, jobs: int = 1, shard: tuple[int, int] | None = None,
         target_spec: str = "scale_targets:TwoBugs", max_classes: int = 3) -> Any:
    system = get_system("duebook")
    spec = parallel.CampaignSpec(system="duebook", target=target_spec, timeout=60.0, start_timeout=60.0,
                                 profile=system.profiles[0], steps=5, depth=0.0, max_classes=max_classes,
                                 database="none")
    return parallel.run_chunks(system, target, spec, seed=3, examples=examples, jobs=jobs, shard=shard)


def _summary(result: Any) -> dict[str, Any]:
    return {"runs": result.examples, "steps": result.steps, "depths": result.depths,
            "coverage": dict(result.coverage), "chunks": result.chunks,
            "classes": [(f.label, f.declared != [], len(f.counterexample), f.chunks) for f in result.findings],
            "skipped": dict(result.masks.skipped), "ok": result.ok}


@pytest.mark.long
def test_four_shards_merge_to_the_unsharded_campaign(small_chunks: None) -> None:
    """The shards run exactly the unsharded campaign's runs, and `merge` of their JSON
    reports gives its classes and counts."""
    whole = _run(scale_targets.TwoBugs, 40)
    assert whole.chunks == [0, 1, 2, 3] and not whole.ok
    assert sorted(f.divergence_class.op for f in whole.findings) == ["cancel", "claim"]
    shards = [_run(scale_targets.TwoBugs, 40, shard=(i, 4)) for i in range(1, 5)]
    assert [s.chunks for s in shards] == [[0], [1], [2], [3]]
    assert sum(s.examples for s in shards) == whole.examples
    assert [run for s in shards for run in s.depths] == whole.depths  # the same runs, in order
    reports = [("shard", campaign_to_json(s, target="scale_targets:TwoBugs", examples=40, steps=5, depth=0.0,
                                          max_classes=3)) for s in shards]
    [(_, merged)] = merge_campaigns(json.loads(json.dumps(reports)))
    assert _summary(merged) == _summary(whole)
    with pytest.raises(Exception, match="a shard is missing"):
        merge_campaigns(reports[:3])
    with pytest.raises(Exception, match="shards overlap"):
        merge_campaigns(reports + reports[:1])


@pytest.mark.long
def test_two_jobs_find_what_one_job_finds(small_chunks: None) -> None:
    one = _run(scale_targets.TwoBugs, 40)
    two = _run(scale_targets.TwoBugs, 40, jobs=2)
    assert two.jobs == 2 and _summary(two) == _summary(one)
    assert len(one.findings) == 2 and one.chunks == [0, 1, 2, 3]


@pytest.mark.long
def test_max_classes_ends_the_campaign_at_the_same_chunk_however_it_is_split(small_chunks: None) -> None:
    """--max-classes 1: the campaign is chunks 0..k, k the first chunk with a class, with
    one job, two jobs or four shards merged."""
    one = _run(scale_targets.TwoBugs, 40, max_classes=1)
    assert one.chunks == [0] and len(one.findings) == 1
    assert _summary(_run(scale_targets.TwoBugs, 40, max_classes=1, jobs=2)) == _summary(one)
    shards = [_run(scale_targets.TwoBugs, 40, max_classes=1, shard=(i, 4)) for i in range(1, 5)]
    reports = [("shard", campaign_to_json(s, target="scale_targets:TwoBugs", examples=40, steps=5, depth=0.0,
                                          max_classes=1)) for s in shards]
    [(_, merged)] = merge_campaigns(json.loads(json.dumps(reports)))
    assert _summary(merged) == _summary(one)
    [(_, alone)] = merge_campaigns(json.loads(json.dumps(reports[:1])))  # chunk 0 is all it needs
    assert _summary(alone) == _summary(one)


def test_a_target_that_cannot_run_copies_falls_back_to_one_job(tmp_path: Path) -> None:
    run = duespec("conform", "duebook", "--target", "scale_targets:SingleCopy", "--examples", "60", "--jobs", "2",
                  "--steps", "10", "--no-coverage", "--database", "none", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "cannot run 2 copies (its factory says max_copies = 1); running 1 job" in run.stderr
    assert "chunks 0, 1 of 2 (at most 50 runs each), 1 job" in run.stdout


@pytest.mark.long
def test_merge_command_gives_one_verdict_and_one_junit(tmp_path: Path) -> None:
    common = ["conform", "duebook", "--target", "scale_targets:TwoBugs", "--examples", "100", "--steps", "5",
              "--depth", "0", "--max-classes", "3", "--no-coverage", "--database", "none", "--progress", "0"]
    for shard in (1, 2):
        run = duespec(*common, "--shard", f"{shard}/2", "--json", f"s{shard}.json", cwd=tmp_path)
        assert run.returncode == 1, run.stderr
    merged = duespec("merge", "s1.json", "s2.json", "--junit", "all.xml", "--json", "all.json", cwd=tmp_path)
    assert merged.returncode == 1, merged.stderr
    assert "DIVERGES: duebook [seed] target=scale_targets:TwoBugs seed=0" in merged.stdout
    assert "merged 2 reports: FAILS" in merged.stdout
    cases = ElementTree.parse(tmp_path / "all.xml").getroot().iter("testcase")
    failing = sorted(case.get("name").split(" class ", 1)[1] for case in cases if case.find("failure") is not None)
    assert [label.split()[1] for label in failing] == ["cancel", "claim"]
    report = json.loads((tmp_path / "all.json").read_text())
    assert report["campaigns"][0]["chunks"] == [0, 1]
    alone = duespec("merge", "s1.json", cwd=tmp_path)
    assert alone.returncode == 2 and "chunks 1 of 2 are in no report" in alone.stderr


@pytest.mark.long
def test_replay_jobs_and_shards_give_the_same_reports(tmp_path: Path) -> None:
    corpus = str(ROOT / "traces")
    one = duespec("replay", corpus, cwd=tmp_path)
    two = duespec("replay", corpus, "--jobs", "2", cwd=tmp_path)
    assert one.returncode == two.returncode == 0
    strip = lambda text: re.sub(r"\([0-9.]+s, [0-9,]+ steps/s\)", "", text)  # noqa: E731
    assert strip(two.stdout) == strip(one.stdout)
    for shard in (1, 2, 3):
        assert duespec("replay", corpus, "--shard", f"{shard}/3", "--json", f"r{shard}.json", cwd=tmp_path).returncode == 0
    merged = duespec("merge", "r1.json", "r2.json", "r3.json", cwd=tmp_path)
    assert merged.returncode == 0
    count = one.stdout.count("CONFIRMED")
    assert f"traces: {count} of {count} confirmed" in merged.stdout
    missing = duespec("merge", "r1.json", "r2.json", cwd=tmp_path)
    assert missing.returncode == 2 and "a shard is missing" in missing.stderr


# -- the example database ---------------------------------------------------------------

def _conform(target: str, database: str, cwd: Path, *extra: str, env: dict[str, str] | None = None):
    return duespec("conform", "duebook", "--target", target, "--examples", "50", "--max-classes", "1",
                   "--no-coverage", "--progress", "0", "--database", database, *extra, cwd=cwd, env=env)


@pytest.mark.long
def test_shared_redis_database_replays_a_failure_in_another_process_and_directory(
        tmp_path: Path, redis_server: RedisServer) -> None:
    first_dir, second_dir = tmp_path / "night", tmp_path / "morning"
    first_dir.mkdir(), second_dir.mkdir()
    first = _conform("scale_targets:DeepBug", redis_server.url, first_dir)
    assert first.returncode == 1, first.stderr
    assert "class 1 of 1: response claimable $.ok [D-23]" in first.stdout
    assert "0 hits" in first.stdout and "database hit" not in first.stdout
    second = _conform("scale_targets:DeepBug", redis_server.url, second_dir)
    assert second.returncode == 1, second.stderr
    assert ("database hit: response claimable $.ok [D-23] via D-23.listed (found by replaying a saved example)"
            in second.stdout)
    assert "class 1 of 1: response claimable $.ok [D-23]" in second.stdout
    runs = int(re.search(r"runs=(\d+)", second.stdout).group(1))
    assert runs < int(re.search(r"runs=(\d+)", first.stdout).group(1))
    # another target, the same database: nothing of DeepBug's is replayed
    other = _conform("scale_targets:TwoBugs", redis_server.url, second_dir)
    assert "replayed 0 saved examples" in other.stdout


@pytest.mark.long
def test_a_failure_found_after_a_thousand_runs_is_found_by_replay_in_the_first(
        tmp_path: Path, redis_server: RedisServer) -> None:
    """The bench's memory figures, by run counts: a fresh campaign needs about a thousand runs
    to meet the planted bug; a second process in another directory, sharing the Redis
    database, fails in its first run, by replay, and its report says so."""
    fresh, replayed = remembered_failure(redis_server.url, str(tmp_path))
    assert fresh["first_failure_run"] >= 800, fresh["first_failure_run"]
    assert (fresh.get("database") or {}).get("hits") == 0
    assert "database hit" not in fresh["printed"]
    assert replayed["first_failure_run"] == 1
    assert replayed["database"]["hits"] == 1
    [label] = [finding["label"] for finding in replayed["findings"]]
    assert f"database hit: {label} (found by replaying a saved example)" in replayed["printed"]
    assert "first failing run (run 1) found after" in replayed["printed"]
    assert [finding["label"] for finding in fresh["findings"]] == [label]


def test_the_first_failing_run_is_counted_from_the_campaigns_start(small_chunks: None) -> None:
    """A class found in a later chunk: its first failing run is numbered after the runs
    of the chunks before it, as one long campaign would number it."""
    failing = _run(scale_targets.TwoBugs, 10, max_classes=1)
    passing = _run(scale_targets.SingleCopy, 10, target_spec="scale_targets:SingleCopy")
    assert failing.first_failure_run is not None and passing.first_failure_run is None and passing.examples
    parallel.mark_chunk(failing, 1, None)
    merged = parallel.combine([failing, passing], profile=failing.profile, system="duebook", seed=3)
    assert merged.first_failure_run == passing.examples + failing.first_failure_run


@pytest.mark.long
def test_a_stale_entry_is_dropped_in_one_line(tmp_path: Path) -> None:
    first = _conform("scale_targets:DeepBug", "db", tmp_path)
    assert first.returncode == 1
    fixed = _conform("scale_targets:DeepBug", "db", tmp_path, env={"DUESPEC_TEST_DEEP_BUG": "1000000"})
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert re.search(r"dropped [1-9]\d* stale \(no longer failing or unreadable\)", fixed.stdout)
    assert "Traceback" not in fixed.stderr


@pytest.mark.long
def test_killing_redis_mid_campaign_leaves_the_campaign_going(tmp_path: Path, redis_server: RedisServer) -> None:
    run = _conform("scale_targets:KillsRedis", redis_server.url, tmp_path,
                   env={"DUESPEC_TEST_KILL_PID": str(redis_server.process.pid)})
    assert redis_server.process.wait(timeout=10) is not None
    assert run.returncode == 1, run.stdout + run.stderr
    assert re.search(rf"database {re.escape(redis_server.url)}: \w+ failed \(ConnectionError", run.stderr)
    assert "the campaign goes on without it" in run.stderr and "Traceback" not in run.stderr
    assert "class 1 of 1: response claimable $.ok [D-23]" in run.stdout


def test_an_unreachable_redis_is_one_line(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    run = duespec("check", "duebook", "--examples", "3", "--no-coverage", "--database", url, cwd=tmp_path)
    assert run.returncode == 0
    assert f"database {url}: unreachable (ConnectionError" in run.stderr and "Traceback" not in run.stderr


def test_keys_separate_targets_profiles_and_masks() -> None:
    class Masked:
        def __init__(self, found: list[Any]) -> None:
            self.found, self.active, self.known = found, [], []

    db = examples_db.CampaignDatabase(None, "x")
    keys = set()
    for identity in (examples_db.identity_of("duebook", "seed", "a", 50, 1.0),
                     examples_db.identity_of("duebook", "seed", "b", 50, 1.0),
                     examples_db.identity_of("schedules", "lean", "a", 50, 1.0)):
        db.identity = identity
        keys.add(db._key(b"k")[0])
    db.bind(Masked([type("C", (), {"label": lambda self: "response claim $.error [D-09]"})()]))
    keys.add(db._key(b"k")[0])
    db.masks.known = [type("C", (), {"label": lambda self: "response claim $.error [D-10]"})()]
    keys.add(db._key(b"k")[0])  # a baseline's classes are masked too: another key
    assert len(keys) == 5
    assert db._key(b"k.secondary") == (db._key(b"k")[0] + b".secondary", False)


# -- the pytest plugin ----------------------------------------------------------------

def _plugin_run(folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-rA", "--duespec-target", "broken_duebook:BrokenDuebook",
                           "--duespec-system", "duebook", "--duespec-examples", "20", "--duespec-steps", "10",
                           "--duespec-database", "none",
                           "-k", "duespec", *extra], cwd=folder, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(folder)})


@pytest.mark.long
def test_pytest_plugin_makes_one_failing_item_per_class(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    shutil.copytree(TESTS / "plugin_project", folder)
    alone = _plugin_run(folder)
    assert alone.returncode == 1, alone.stdout + alone.stderr
    failed = sorted(re.findall(r"^FAILED (::duespec\[.*?\])", alone.stdout, re.MULTILINE))
    # both bugs, each as one class per cause (the cancel bug is reached through more than one branch)
    assert {re.search(r"class \d+: \w+ (\w+)", name).group(1) for name in failed} == {"cancel", "claim"}, \
        alone.stdout
    assert len(set(failed)) == len(failed), alone.stdout
    assert "shrunk counterexample (2 steps" in alone.stdout
    assert "  duespec replay .duespec/failures/" in alone.stdout
    xdist = _plugin_run(folder, "-n", "2")
    assert sorted(re.findall(r"^FAILED (::duespec\[.*?\])", xdist.stdout, re.MULTILINE)) == failed, xdist.stdout


@pytest.mark.long
def test_pytest_fixture_returns_the_campaign_as_data(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    shutil.copytree(TESTS / "plugin_project", folder)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "checks_fixture.py"], cwd=folder,
                         capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(folder)})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout


# -- the CI recipe ----------------------------------------------------------------------

WORKFLOW = ROOT / "examples" / "ci" / "github-actions.yml"


def _workflow() -> dict[str, Any]:
    import yaml  # PyYAML, in the dev extras

    return yaml.safe_load(WORKFLOW.read_text())  # type: ignore[no-any-return]


def _expand(command: str, values: dict[str, str]) -> str:
    return re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", lambda m: values[m.group(1)], command)


def test_ci_workflow_parses_and_names_real_commands() -> None:
    workflow = _workflow()
    jobs = workflow["jobs"]
    assert jobs["campaign"]["strategy"]["matrix"]["shard"] == [1, 2, 3, 4]
    assert "redis" in jobs["campaign"]["services"]
    assert jobs["verdict"]["needs"] == "campaign"
    assert any(step.get("uses", "").startswith("actions/cache") and step["with"]["path"] == ".duespec"
               for step in jobs["campaign"]["steps"])
    commands = [step["run"] for job in jobs.values() for step in job["steps"] if "run" in step]
    duespec_lines = [c for c in commands if c.startswith("duespec ")]
    assert len(duespec_lines) == 2
    env = {**workflow["env"], **jobs["campaign"]["env"]}
    for line in duespec_lines:
        argv = shlex.split(_substitute(line, env, "1"))
        args = build_parser().parse_args(argv[1:])  # exits 2 on anything duespec does not know
        assert args.command in ("conform", "merge")


def _substitute(line: str, env: dict[str, str], shard: str) -> str:
    line = _expand(line, {"matrix.shard": shard})
    return re.sub(r"\$(\w+)", lambda m: env.get(m.group(1), m.group(0)), line).replace("shard-*.json", "shard-1.json")


@pytest.mark.long
def test_ci_workflow_runs_locally_with_two_shards_and_one_redis(tmp_path: Path, redis_server: RedisServer) -> None:
    workflow = _workflow()
    env = {**{k: str(v) for k, v in workflow["env"].items()}, "SHARDS": "2", "DUESPEC_EXAMPLES": "100", "DUESPEC_STEPS": "5",
           "DUESPEC_TARGET": "scale_targets:TwoBugs", "DUESPEC_DATABASE": redis_server.url,
           "PYTHONPATH": str(TESTS), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    steps = {name: [step["run"] for step in job["steps"] if step.get("run", "").startswith("duespec ")]
             for name, job in workflow["jobs"].items()}
    for shard in ("1", "2"):  # the matrix, one after the other
        [line] = steps["campaign"]
        run = subprocess.run(["bash", "-c", _expand(line, {"matrix.shard": shard})], cwd=tmp_path,
                             env={**os.environ, **env}, capture_output=True, text=True, timeout=600)
        assert run.returncode == 1, run.stdout + run.stderr  # TwoBugs diverges
        assert f"shard {shard}/2: chunks {int(shard) - 1} of 2" in run.stdout
    [merge] = steps["verdict"]
    merged = subprocess.run(["bash", "-c", merge], cwd=tmp_path, env={**os.environ, **env},
                            capture_output=True, text=True, timeout=600)
    assert merged.returncode == 1 and "merged 2 reports: FAILS" in merged.stdout, merged.stdout + merged.stderr
    tree = ElementTree.parse(tmp_path / "duespec-junit.xml").getroot()
    # --max-classes is 1 by default: each shard stops at its first class; the merge lists each
    # class the shards found once
    found = {json.dumps(finding["class"], sort_keys=True) for shard in ("1", "2")
             for campaign in json.loads((tmp_path / f"shard-{shard}.json").read_text())["campaigns"]
             for finding in campaign["findings"]}
    assert found and int(tree.get("failures")) == len(found), found
    # the shards shared the Redis database: the second shard replayed what the first saved (its
    # own report: the merge keeps only the chunks up to the one that reached --max-classes)
    assert json.loads((tmp_path / "shard-2.json").read_text())["campaigns"][0]["database"]["replayed"] > 0

"""Catch-up policies (spec/schedules.md, "Catch-up policies") and `duespec catch-up`.

The policies: the model and the implementation under each, the config that names one
(`duespec serve --catch-up`, debug.reset, a store file, check/conform --catch-up). The
command: it names the policy of real servers started here (`duespec serve` under each
option, resonate-pg on a real PostgreSQL, the TypeScript SDK's in-memory server through
examples/ts-sdk-local) and says "none of the four" for a server with a fifth reading.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from needs import unavailable  # noqa: E402

from duespec.campaigns.conform import ReportSettings, reproduce_lines  # noqa: E402
from duespec.campaigns.run import CampaignResult  # noqa: E402
from duespec.cli import main  # noqa: E402
from duespec.impl.schedules import ScheduleServer  # noqa: E402
from duespec.systems.schedules.adapter import ImplTarget, ModelTarget, config_of  # noqa: E402
from duespec.wire.serve import WireServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
POLICIES = ("all", "one-per-pass", "once-skip", "never")
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
MINUTE = 60_000
SCHEDULE = {"id": "s", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}", "promiseTimeout": 60 * MINUTE,
            "promiseParam": {"headers": {}, "data": None}, "promiseTags": {}}
LISTENING = re.compile(r"listening on (http://[^\s,;()]+)")


# --- the policies, in the model and the implementation --------------------------------


def _passes(target, config: dict, passes: int = 3) -> list[tuple[list[int], int, int | None]]:
    """A minutely schedule made at T0, ticked `passes` times at T0 + 3.5 minutes: after each
    tick, the cronTimes of its promises, its nextRunAt and lastRunAt."""
    target.reset(config)
    assert target.step("schedule.create", SCHEDULE, T0)["status"] == 200
    seen = []
    for _ in range(passes):
        assert target.step("tick", {}, T0 + 3 * MINUTE + MINUTE // 2)["status"] == 200
        state = target.observe()
        [schedule] = state["schedules"]
        seen.append((sorted(int(p["id"].split(".")[1]) - T0 for p in state["promises"]),
                     schedule["nextRunAt"] - T0, schedule["lastRunAt"] and schedule["lastRunAt"] - T0))
    return seen


M1, M2, M3, M4 = (k * MINUTE for k in range(1, 5))
#: What spec/schedules.md, "Catch-up policies" say each policy does with three missed occurrences
#: and three timer passes: (occurrences, nextRunAt, lastRunAt) after each pass.
EXPECTED = {
    "all": [([M1, M2, M3], M4, M3)] * 3,
    "one-per-pass": [([M1], M2, M1), ([M1, M2], M3, M2), ([M1, M2, M3], M4, M3)],
    "once-skip": [([M1], M4, M1)] * 3,
    "never": [([], M1, None)] * 3,
}


@pytest.mark.parametrize("profile", ["lean", "server"])
@pytest.mark.parametrize("policy", POLICIES)
def test_each_policy_in_the_model_and_the_implementation(policy: str, profile: str) -> None:
    config = {"profile": profile, "catch_up": policy}
    assert _passes(ModelTarget(), config) == EXPECTED[policy]
    implementation = ImplTarget()
    try:
        assert _passes(implementation, config) == EXPECTED[policy]
    finally:
        implementation.close()


def test_a_single_schedule_timeout_fires_as_one_pass() -> None:
    """schedule.timeout, the Lean's handler alone, under one-per-pass fires one occurrence;
    under never it leaves the schedule and its timeout as they were (SP-11 holds)."""
    for policy, promises in (("one-per-pass", 1), ("never", 0)):
        model = ModelTarget()
        model.reset({"catch_up": policy})
        model.step("schedule.create", SCHEDULE, T0)
        assert model.step("schedule.timeout", {"id": "s"}, T0 + 3 * MINUTE)["status"] == 200
        state = model.observe()
        assert len(state["promises"]) == promises
        assert state["scheduleTimeouts"] == [{"id": "s", "timeout": state["schedules"][0]["nextRunAt"]}]


def test_a_policy_the_profile_cannot_take_is_refused() -> None:
    with pytest.raises(ValueError, match="catch_up must be one of"):
        config_of({"catch_up": "sometimes"})
    with pytest.raises(ValueError, match="DEP-02"):
        config_of({"profile": "deployed", "catch_up": "once-skip"})
    assert config_of({"profile": "deployed"}).catch_up == "all"
    with pytest.raises(ValueError, match="DEP-02"):
        ScheduleServer(profile="deployed", catch_up="never")


def test_a_store_file_keeps_its_policy(tmp_path: Path) -> None:
    path = str(tmp_path / "store.db")
    ScheduleServer(path, catch_up="once-skip").close()
    reopened = ScheduleServer(path)
    assert reopened.catch_up == "once-skip"
    reopened.close()
    with pytest.raises(ValueError, match="created with catch_up=once-skip, not never"):
        ScheduleServer(path, catch_up="never")


def test_debug_reset_names_a_policy() -> None:
    wire = WireServer(catch_up="never")
    try:
        def reset(data: dict) -> int:
            body = {"kind": "debug.reset", "head": {"corrId": "1", "version": "2026-04-01"}, "data": data}
            return wire.answer(json.dumps(body).encode())[0]

        assert wire.server.catch_up == "never"
        assert reset({}) == 200 and wire.server.catch_up == "never"  # left out: kept
        assert reset({"catch_up": "one-per-pass"}) == 200 and wire.server.catch_up == "one-per-pass"
        assert reset({"catch_up": "sometimes"}) == 400 and wire.server.catch_up == "one-per-pass"
        assert reset({"profile": "deployed"}) == 400  # one-per-pass is no policy of deployed's
        assert reset({"profile": "deployed", "catch_up": "all"}) == 200
    finally:
        wire.close()


# --- check and conform under a policy -------------------------------------------------


@pytest.mark.parametrize("policy", POLICIES[1:])
def test_check_holds_under_each_policy(policy: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "schedules", "--catch-up", policy, "--examples", "8", "--database", "none",
                 "--trace-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("HOLDS: schedules [lean]"), out


def test_conform_checks_a_server_under_the_policy_it_implements(tmp_path: Path) -> None:
    """A server that skips on purpose HOLDS under --catch-up once-skip: the model is reset
    with the policy too (were it not, the model's `all` would differ at the first missed
    occurrence)."""
    server, url = _started(_serve_command("--catch-up", "once-skip"))
    try:
        run = _duespec("conform", "schedules", "--target", url, "--catch-up", "once-skip", "--examples", "8",
                       "--database", "none", "--trace-dir", str(tmp_path), timeout=600)
    finally:
        _stop(server)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("HOLDS: schedules [lean]"), run.stdout


def test_the_reproduce_command_names_the_policy() -> None:
    settings = ReportSettings(system="schedules", target="http://127.0.0.1:8001", catch_up="one-per-pass")
    result = CampaignResult(system="schedules", profile="lean", seed=3, examples=1, steps=1, seconds=0.0,
                            coverage=Counter())
    assert "--catch-up one-per-pass" in " ".join(reproduce_lines(settings, result, None))


@pytest.mark.parametrize("argv, message", [
    (["check", "schedules", "--catch-up", "sometimes"], "catch_up must be one of"),
    (["check", "schedules", "--profile", "deployed", "--catch-up", "never"], "DEP-02"),
    (["check", "duebook", "--catch-up", "all"], "--catch-up under profile seed"),
    (["serve", "schedules", "--profile", "deployed", "--catch-up", "never"], "DEP-02"),
])
def test_a_refused_policy_is_one_line_and_exit_2(argv: list[str], message: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


# --- duespec catch-up, against real servers -------------------------------------------


def _duespec(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "duespec", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def _started(command: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """Start a server that prints `listening on URL` first; the process and the URL."""
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    line = server.stdout.readline() if server.stdout else ""
    found = LISTENING.search(line)
    if found is None:
        server.kill()
        _, err = server.communicate()
        raise AssertionError(f"{command} did not start: {line!r} {err}")
    return server, found.group(1)


def _serve_command(*options: str) -> list[str]:
    return [sys.executable, "-m", "duespec", "serve", "schedules", "--port", "0", *options]


def _catch_up_of(command: list[str]) -> tuple[subprocess.CompletedProcess[str], str]:
    """`duespec catch-up` against the server `command` starts (stopped after): the run, the URL."""
    server, url = _started(command)
    try:
        return _duespec("catch-up", "--target", url), url
    finally:
        _stop(server)


def _stop(server: subprocess.Popen[str]) -> None:
    server.terminate()
    try:
        server.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.communicate()


@pytest.mark.parametrize("options, policy", [
    *((("--catch-up", p), p) for p in POLICIES),
    ((), "all"),  # the default
    (("--profile", "server", "--catch-up", "once-skip"), "once-skip"),
    (("--profile", "deployed"), "one-per-pass"),  # DEP-02 reads as one-per-pass from outside
])
def test_the_command_names_the_policy_duespec_serve_runs(options: tuple[str, ...], policy: str) -> None:
    run, url = _catch_up_of(_serve_command(*options))
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith(f"CATCH-UP: {policy} target={url}:"), run.stdout


def test_a_fifth_reading_is_none_of_the_four_with_the_evidence(capsys: pytest.CaptureFixture[str]) -> None:
    """A server that fires only the latest missed occurrence (tests/catch_up_targets.py)."""
    assert main(["catch-up", "--target", "catch_up_targets:latest_only"]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("CATCH-UP: none of the four (all, one-per-pass, once-skip, never)")
    assert lines[1:4] == [f"  pass {k}: occurrences 00:03:00; nextRunAt 00:04:00" for k in (1, 2, 3)]
    assert "what each policy's model predicts for the same requests:" in lines
    for policy in POLICIES:
        assert f"  {policy}:" in lines


def test_a_target_it_cannot_probe_is_one_line_and_exit_2() -> None:
    for target, said in (("bogus", "unknown target 'bogus'"), ("http://127.0.0.1:9", "target unusable")):
        run = _duespec("catch-up", "--target", target)
        assert run.returncode == 2, run.stdout + run.stderr
        assert said in run.stderr and run.stderr.count("\n") == 1 and not run.stdout, run.stderr
    run = _duespec("catch-up")
    assert run.returncode == 2 and "--target" in run.stderr


def test_resonate_pg_catches_up_all(postgres, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("RESONATE_PG_DSN", postgres.create_database(f"catchup{os.getpid()}"))
    monkeypatch.syspath_prepend(str(ROOT / "examples" / "resonate-pg"))
    assert main(["catch-up", "--target", "target:make_target"]) == 0
    assert capsys.readouterr().out.startswith("CATCH-UP: all target=target:make_target:")


TS_SDK = ROOT / "examples" / "ts-sdk-local"


@pytest.mark.long  # needs npm's registry (`make ts-sdk-local`), which CI's machine is not promised
def test_the_typescript_sdk_local_server_catches_up_one_per_pass() -> None:
    """@resonatehq/sdk 0.11.5's in-memory Server (src/network/local.ts) behind
    examples/ts-sdk-local/server.mjs: its debug.tick fires each due schedule once."""
    node = shutil.which("node")
    if node is None:
        unavailable("the TypeScript SDK's local server", "no `node` on PATH (Node.js 20 or later)")
    if not (TS_SDK / "node_modules" / "@resonatehq" / "sdk" / "package.json").exists():
        unavailable("the TypeScript SDK's local server",
                    "@resonatehq/sdk is not installed: run `make ts-sdk-local` (npm ci in examples/ts-sdk-local)")
    run, url = _catch_up_of([node, str(TS_SDK / "server.mjs"), "0"])
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith(f"CATCH-UP: one-per-pass target={url}:"), run.stdout

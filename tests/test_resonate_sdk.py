"""The real client: the published Resonate Python SDK (resonate-sdk 0.8, from PyPI) drives
`duespec serve` over HTTP (schedules, promises, and a task's life through its task calls),
in its own Python 3.12 virtualenv (the SDK needs >= 3.12).

The virtualenv is built once under .duespec/py312-sdk (gitignored) and reused. Without a
Python 3.12 this test FAILS, saying so: on this project's machines one is installed
(pyenv), so a missing one is a broken machine, not a reason to skip."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from wire_support import ROOT, Served

SDK_REQUIREMENT = "resonate-sdk>=0.8,<0.9"
VENV = ROOT / ".duespec" / "py312-sdk"
CLIENT = ROOT / "tests" / "resonate_sdk_client.py"


def find_python312() -> str | None:
    """The first interpreter >= 3.12 that runs: python3.12 on PATH (a pyenv shim may not),
    else the newest under pyenv's versions."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = [shutil.which("python3.12"),
                  *sorted(glob.glob(str(pyenv / "versions" / "3.1[2-9]*" / "bin" / "python3")), reverse=True)]
    for candidate in filter(None, candidates):
        probe = subprocess.run([candidate, "-c", "import sys; assert sys.version_info >= (3, 12)"],
                               capture_output=True, timeout=60)
        if probe.returncode == 0:
            return candidate
    return None


def sdk_python() -> Path:
    """The virtualenv's interpreter, with the SDK installed (built on first use)."""
    python = VENV / "bin" / "python"
    stamp = VENV / ".sdk-installed"
    if stamp.exists() and stamp.read_text() == SDK_REQUIREMENT and python.exists():
        return python
    base = find_python312()
    if base is None:
        pytest.fail("resonate-sdk needs Python >= 3.12 and none was found (python3.12 on PATH, or "
                    "~/.pyenv/versions/3.12*): install one, e.g. `pyenv install 3.12`, and rerun")
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([base, "-m", "venv", str(VENV)], check=True, timeout=300)
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", SDK_REQUIREMENT],
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, f"pip install {SDK_REQUIREMENT} failed:\n{install.stderr[-3000:]}"
    stamp.write_text(SDK_REQUIREMENT)
    return python


@pytest.mark.parametrize("store", ["memory", "db"])
def test_the_resonate_sdk_drives_duespec_serve(store: str, tmp_path: Path) -> None:
    python = sdk_python()
    db = ("--db", str(tmp_path / "store.sqlite")) if store == "db" else ()
    with Served("--profile", "deployed", *db) as server:
        run = subprocess.run([str(python), str(CLIENT), server.url], capture_output=True, text=True,
                             timeout=120)
        assert run.returncode == 0, run.stderr[-3000:]
        seen = json.loads(run.stdout)
        assert server.alive()

    assert seen["schedule"]["cron"] == "* * * * *"
    assert seen["schedule"]["tags"] == {"resonate:target": "poll://any@workers"}
    assert seen["untargeted_status"] == 400           # DEP-01: the deployed reading needs a target
    assert seen["promise"] == {"state": "pending", "param": "hello", "tags": {"kind": "demo"}, "same": True}
    created_at = seen["schedule"]["createdAt"]
    first = (created_at // 60_000 + 1) * 60_000
    occurrences = seen["occurrences"]
    assert [o["id"] for o in occurrences] == [f"nightly.{first + k * 60_000}" for k in range(3)]
    for k, o in enumerate(occurrences):
        cron_time = first + k * 60_000
        assert o == {"id": f"nightly.{cron_time}", "state": "pending", "timeoutAt": cron_time + 3_600_000,
                     "createdAt": cron_time, "param": {"report": "daily"}, "schedule_tag": "nightly"}
    assert seen["beyond"] == 404       # no occurrence beyond the clock
    assert seen["after_delete"] == 404
    assert seen["tasks"] == {
        "created": ["acquired", 1, "w1", "pending", []],
        "fenced": ["job.child", "pending", []],
        "suspended": "suspended",
        "settled": ["resolved", "eQ=="],
        "acquired": ["acquired", 2, "w2"],
        "redirected": True,                      # task.suspend's 300, parsed by the SDK as a Redirect
        "listened": "pending",
        "fulfilled": ["resolved", "ZG9uZQ=="],
        "release_after_fulfil": 409,
    }
    # what real clients send for "never" (spec/schedules.md "Bounds"): all accepted, kept exactly
    assert seen["far"] == {"2^53-1": [200, "pending", 2**53 - 1, 2**53 - 1],
                           "2^63-1": [200, "pending", 2**63 - 1, 2**63 - 1],
                           "task": [200, "acquired", 1 << 50, 2**63 - 1]}


def test_without_python_312_the_test_fails_saying_why(tmp_path, monkeypatch) -> None:
    import test_resonate_sdk as me

    monkeypatch.setattr(me, "VENV", tmp_path / "venv")
    monkeypatch.setattr(me, "find_python312", lambda: None)
    with pytest.raises(pytest.fail.Exception, match="needs Python >= 3.12"):
        me.sdk_python()

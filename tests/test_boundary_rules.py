"""The rules for the boundaries a real server gets wrong find a bug at each, response-only:
a heartbeat that renews nothing (its first deadline passes and the task must still be
held), a create of an existing id that overwrites its param and a second settle that
overwrites the first (the answer must be the stored promise). Each planted in `duespec serve`'s server (tests/boundary_bugs.py), as
tools/pg_variants/variants.py plants them in resonate.sql (heartbeat_not_renewing,
create_existing_overwrites_param, settle_overwrites_settled). Long: the heartbeat's run is met
after about a minute, then shrunk for several."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from duespec.cli import main
from duespec.impl.schedules import ScheduleServer
from duespec.wire.serve import ServerThread, WireServer

sys.path.insert(0, str(Path(__file__).resolve().parent))

from boundary_bugs import CreateOverwritesParam, HeartbeatRenewsNothing, SettleOverwritesSettled  # noqa: E402


def conform_response_only(server_class: type[ScheduleServer], tmp_path: Path, examples: int) -> int:
    with ServerThread(WireServer(server_class=server_class)) as served:
        return main(["conform", "schedules", "--target", served.url, "--observe", "none", "--examples", str(examples),
                     "--seed", "0", "--max-classes", "1", "--trace-dir", str(tmp_path), "--database", "none",
                     "--progress", "0", "--no-coverage"])


@pytest.mark.long
@pytest.mark.parametrize(("server_class", "shows_at"), [
    (HeartbeatRenewsNothing, ("tick", "task.get", "task.heartbeat")),
    (CreateOverwritesParam, ("promise.create", "promise.get")),
    (SettleOverwritesSettled, ("promise.settle", "promise.get")),
])
def test_response_only_finds_a_bug_at_each_boundary(server_class, shows_at, tmp_path, capsys) -> None:
    code = conform_response_only(server_class, tmp_path, 100)
    out = capsys.readouterr().out
    assert code == 1, out[-3000:]
    line = next(line for line in out.splitlines() if line.startswith("class 1 of 1: "))
    assert line.split()[5] in shows_at, line

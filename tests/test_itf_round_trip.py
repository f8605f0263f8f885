"""Outputs never overwrite inputs (issue 41, item 5): `itf import T.itf.json` wrote `T.jsonl`
over the trace it was exported from, and the trace it wrote had lost the original's header
fields. Every trace of traces/ goes through an ITF round trip here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from duespec.cli import main as cli
from duespec.traces.format import read_trace

ROOT = Path(__file__).resolve().parent.parent
CORPUS = sorted((ROOT / "traces").rglob("*.jsonl"))


def test_the_corpus_is_there() -> None:
    assert len(CORPUS) >= 10


@pytest.mark.parametrize("trace", CORPUS, ids=[str(p.relative_to(ROOT / "traces")) for p in CORPUS])
def test_every_trace_survives_an_itf_round_trip_untouched(trace: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    original = tmp_path / "T.jsonl"
    shutil.copyfile(trace, original)
    before = original.read_bytes()
    code = cli(["itf", "export", str(original)])
    exported = tmp_path / "T.itf.json"
    assert code == 0 and exported.exists(), capsys.readouterr().err  # fractions and malformed requests too
    capsys.readouterr()
    # The default name of the import is the trace it came from: refused, not replaced.
    assert cli(["itf", "import", str(exported)]) == 2
    assert "exists; give --force" in capsys.readouterr().err
    assert original.read_bytes() == before
    back = tmp_path / "back.jsonl"
    assert cli(["itf", "import", str(exported), "-o", str(back)]) == 0
    assert original.read_bytes() == before
    header = json.loads(before.splitlines()[0])
    again = json.loads(back.read_bytes().splitlines()[0])
    lost = {key: value for key, value in header.items() if again.get(key) != value}
    assert not lost, f"header fields lost or changed: {lost}"
    _, steps = read_trace(original)
    _, imported = read_trace(back)
    assert [json.dumps({k: v for k, v in s.items() if k != "state"}, sort_keys=True) for s in imported] == \
        [json.dumps(s, sort_keys=True) for s in steps]  # 1.0 is no 1, True no 1


def test_force_replaces_an_existing_output_atomically(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    original = tmp_path / "T.jsonl"
    shutil.copyfile(ROOT / "traces" / "duebook" / "window_edges.jsonl", original)
    assert cli(["itf", "export", str(original)]) == 0
    stale = tmp_path / "T.itf.json"
    stale_bytes = stale.read_bytes()
    assert cli(["itf", "export", str(original)]) == 2  # an export over an existing file, too
    assert stale.read_bytes() == stale_bytes
    original.write_text("an older trace under the same name\n")
    assert cli(["itf", "import", str(stale), "--force"]) == 0
    header, steps = read_trace(original)
    assert header.producer == "duespec corpus (model)" and len(list(steps)) > 0
    assert not list(tmp_path.glob("*.partial"))

"""Every reader of a file a user gives, fuzzed (issue 41): traces, histories in both
formats, merge reports, `conform --baseline` reports, declared differences, ITF traces and
mapping files. Each is given hostile variants of a valid file (bytes cut, spliced and
replaced; JSON values swapped for hostile ones: lone surrogates, huge numbers, deep
nesting, wrong types) and must either read it or refuse it with its own documented error:
never another exception. Every seed is itself read (the report merges, exit 0), so that
the variants reach past the first check to the code that decides a verdict.

1,000 inputs per reader in `make test`; 10,000 under the `long` marker (`make test-long`),
each read within 256 MB of resident memory (tests/peak_rss.py). The readers are called in
this process (a subprocess per input would cost minutes); a few commands are run whole at
the end, for the one-line message and the exit code."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duespec.campaigns import baseline, declared, merge
from duespec.cli import main as cli
from duespec.exits import UsageError
from duespec.histories.format import HistoryError, HistoryWriter
from duespec.histories.generate import generate
from duespec.histories.resonate_valid import read_any_history, resonate_valid_line
from duespec.systems import get_system
from duespec.traces.format import TraceError, read_trace
from duespec.traces.itf import RecipeError, export_itf, load_mapping, read_itf
from peak_rss import MAX_RSS_BYTES, Reads

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "traces" / "schedules" / "crud.jsonl"
#: A report `duespec conform --json` wrote: of a campaign of two chunks against a target
#: with three planted bugs (tests/planted_targets.py), one class known from a baseline and
#: two found and declared, so that it HOLDS and merges with exit 0. Made by
#:   duespec conform duebook --target tests.planted_targets:ThreePlantedBugs --examples 60 --steps 3 \
#:       --max-classes 1 --database none --json known.json
#:   duespec conform duebook --target tests.planted_targets:ThreePlantedBugs --examples 60 --steps 3 \
#:       --max-classes 3 --database none --baseline known.json --declared D.toml --json REPORT \
#:       --trace-dir traces
#: with D.toml declaring `op = "claim"` and `op = "expire"` at `response = "$.error"`. When the
#: report schema changes, make it again: `seeds` below fails until then.
REPORT = ROOT / "tests" / "merge_seed_report.json"
#: Its campaign's target, which a baseline must name.
REPORT_TARGET = "tests.planted_targets:ThreePlantedBugs"

#: Byte strings that break readers: framing, encodings, JSON's corners, the limits.
HOSTILE_BYTES = [b"\n", b"\r\n", b"", b"\x00", b"\xff\xfe", b"\xc3", b'"\\ud800"', b'"\\udfff\\ud800"', b"1e999",
                 b"-0", b"9" * 120, b"[" * 70, b"]" * 70, b"{" * 70, b"NaN", b"Infinity", b'{"a":1,"a":2}', b"true",
                 b"null", b'""', b"[]", b"{}", b",", b":", b'"', b"\\", b"\t", b" " * 10, b"\xe2\x80\xa8",
                 b'{"duespec_trace":1}', b'{"duespec_history":1}', b'{"kind":"promise.get","req":{},"res":{}}']

#: JSON values that break the code after the parser: wrong types, edges of numbers and strings.
hostile_values = st.recursive(
    st.none() | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70) | st.sampled_from([-1, 0, 1, 2**63, -(2**63) - 1, 10**99])
    | st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([0.5, -0.0, 1e300])
    | st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=()), max_size=12)
    | st.sampled_from(["", "\ud800", "$", "$.status", "response", "state", "SIGTERM", "--budget 1s", "seed",
                       "lean", "duebook", "schedules", "promise.get", "claim", "ok", "unknown", "pinned", "real"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value: the keys and indices leading there."""
    places = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            places += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:50]):
            places += _paths(item, (*prefix, index))
    return places


def _replaced(value: Any, path: tuple[Any, ...], new: Any, delete: bool) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy = dict(value) if isinstance(value, dict) else list(value)
    if delete and not rest:
        del copy[head]
    else:
        copy[head] = _replaced(copy[head], rest, new, delete)
    return copy


def _dumps(value: Any) -> str:
    """JSON text, whatever the value: NaN and lone surrogates as JSON writes them."""
    return json.dumps(value, ensure_ascii=True, allow_nan=True)


@st.composite
def json_mutation(draw: st.DrawFn, document: Any) -> bytes:
    """The document with one value replaced by a hostile one, or one key deleted."""
    places = _paths(document)
    path = places[draw(st.integers(0, len(places) - 1))]
    delete = bool(path) and draw(st.booleans())
    return _dumps(_replaced(document, path, draw(hostile_values), delete)).encode()


@st.composite
def byte_mutation(draw: st.DrawFn, data: bytes) -> bytes:
    """The bytes cut, spliced with hostile bytes, or with a slice replaced."""
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        choice = draw(st.integers(0, 3))
        if choice == 0:
            data = data[:at]
        elif choice == 1:
            data = data[:at] + draw(st.sampled_from(HOSTILE_BYTES)) + data[at:]
        elif choice == 2:
            end = draw(st.integers(at, min(len(data), at + 40)))
            data = data[:at] + draw(st.sampled_from(HOSTILE_BYTES)) + data[end:]
        else:
            data = data[:at] + draw(st.binary(max_size=8)) + data[at:]
    return data


@st.composite
def lines_mutation(draw: st.DrawFn, lines: list[Any]) -> bytes:
    """A JSON Lines file with one line's value mutated, and sometimes its framing changed."""
    index = draw(st.integers(0, len(lines) - 1))
    texts = [_dumps(line).encode() for line in lines]
    texts[index] = draw(json_mutation(lines[index]))
    data = b"\n".join(texts) + draw(st.sampled_from([b"\n", b"", b"\n\n", b"\r\n"]))
    return draw(byte_mutation(data)) if draw(st.booleans()) else data


def mutated(document: Any = None, data: bytes | None = None, lines: list[Any] | None = None) -> st.SearchStrategy[bytes]:
    choices = []
    if lines is not None:
        choices.append(lines_mutation(lines))
        data = b"".join(_dumps(line).encode() + b"\n" for line in lines)
    if document is not None:
        choices.append(json_mutation(document))
        data = _dumps(document).encode()
    assert data is not None
    choices.append(byte_mutation(data))
    return st.one_of(*choices)


# -- the valid files everything starts from -------------------------------------------------

def _history_lines() -> list[Any]:
    history = generate(seed=4, clients=3, ops=8, unknown_rate=0.2)
    return [history.header.to_json(), *(event.to_json() for event in history.events)]


def _valid_lines() -> list[Any]:
    history = generate(seed=5, clients=2, ops=8, with_schedules=False)
    clients: dict[str, int] = {}
    lines = [resonate_valid_line(event, clients.setdefault(event.client, len(clients))) for event in history.events]
    return [line for line in lines if line is not None]


DECLARED_TOML = b'''[[difference]]
reason = "claims differ"
op = "claim"
response = "$.error"

[[difference]]
reason = "state"
state = "$.open"
profile = "seed"
'''


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("seeds")
    itf = export_itf(TRACE, folder / "crud.itf.json")
    report = json.loads(REPORT.read_text())
    # The seeds themselves read cleanly: the report merges to HOLDS, and is a baseline.
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert cli(["merge", str(REPORT)]) == 0, out.getvalue()
    assert out.getvalue().splitlines()[-1] == "merged 1 report: HOLDS", out.getvalue()
    assert _read_report(REPORT) == 0
    assert [known.divergence_class.op for known in _read_baseline(REPORT)["seed"]] == ["cancel"]
    return {"trace": [json.loads(line) for line in TRACE.read_text().splitlines()],
            "history": _history_lines(), "valid": _valid_lines(), "report": report,
            "itf": json.loads(itf.read_text()), "declared": tomllib.loads(DECLARED_TOML.decode())}


# -- the readers, each with the one error it may raise ---------------------------------------

def _read_trace(path: Path) -> None:
    header, steps = read_trace(path)
    for _ in steps:
        pass


def _read_history(path: Path) -> None:
    read_any_history(path)


def _read_report(path: Path) -> int:
    """`duespec merge PATH` as the command runs it, to its verdict: its exit code."""
    with contextlib.redirect_stdout(io.StringIO()):
        return merge.main(argparse.Namespace(reports=[str(path)], junit=None, json=None))


def _read_baseline(path: Path) -> dict[str, Any]:
    return baseline.read(path, "duebook", REPORT_TARGET, ["seed"])


def _read_declared_toml(path: Path) -> None:
    declared.read(path, get_system("duebook"))


def _read_declared_json(path: Path) -> None:
    declared.read(path, get_system("schedules"))


def _read_itf(path: Path) -> None:
    header, steps = read_itf(path)
    for _ in steps:
        pass


def _read_mapping(path: Path) -> None:
    load_mapping(path)


READERS: dict[str, tuple[Callable[[Path], object], tuple[type[BaseException], ...], str, str]] = {
    # name: (reader, the errors it documents, the seed it mutates, how the seed is mutated)
    "trace": (_read_trace, (TraceError,), "trace", "lines"),
    "history": (_read_history, (HistoryError,), "history", "lines"),
    "valid": (_read_history, (HistoryError,), "valid", "lines"),
    "report": (_read_report, (UsageError,), "report", "document"),
    "baseline": (_read_baseline, (baseline.BaselineError,), "report", "document"),
    "declared-toml": (_read_declared_toml, (declared.DeclaredError,), "declared", "toml"),
    "declared-json": (_read_declared_json, (declared.DeclaredError,), "declared", "document"),
    "itf": (_read_itf, (TraceError, RecipeError), "itf", "document"),
    "mapping": (_read_mapping, (RecipeError,), "declared", "toml"),
}


def _strategy(seeds: dict[str, Any], seed: str, how: str) -> st.SearchStrategy[bytes]:
    if how == "lines":
        return mutated(lines=seeds[seed])
    if how == "toml":
        return byte_mutation(DECLARED_TOML)
    return mutated(document=seeds[seed])


def _fuzz(name: str, examples: int, seeds: dict[str, Any], folder: Path) -> None:
    reader, errors, seed, how = READERS[name]
    suffix = ".json" if name in ("report", "baseline", "declared-json", "itf") else ".toml" if how == "toml" else ".jsonl"
    path = folder / f"input{suffix}"
    outcomes = {"read": 0, "refused": 0}
    reads = Reads()

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(_strategy(seeds, seed, how))
    def check(data: bytes) -> None:
        path.write_bytes(data)
        try:
            reads.measure(lambda: reader(path))
        except errors:
            outcomes["refused"] += 1
            return
        outcomes["read"] += 1

    check()
    # The fuzzing reached the readers' refusals, and past them (merge: to a verdict).
    assert outcomes["refused"] > 0 and outcomes["read"] > 0, outcomes
    assert reads.bytes is None or reads.bytes <= MAX_RSS_BYTES, f"a read needed {reads.bytes:,} bytes resident"


@pytest.mark.parametrize("name", READERS)
def test_every_reader_reads_or_refuses_a_thousand_hostile_inputs(name: str, seeds: dict[str, Any],
                                                                 tmp_path: Path) -> None:
    _fuzz(name, 1_000, seeds, tmp_path)


@pytest.mark.long
@pytest.mark.parametrize("name", READERS)
def test_every_reader_reads_or_refuses_ten_thousand_hostile_inputs(name: str, seeds: dict[str, Any],
                                                                   tmp_path: Path) -> None:
    _fuzz(name, 10_000, seeds, tmp_path)


def test_the_commands_over_hostile_inputs_exit_cleanly_in_one_line(seeds: dict[str, Any], tmp_path: Path) -> None:
    """A few inputs of each kind through the whole command: its exit code, one line on
    stderr when refused, never a traceback or "internal error"."""
    rng = random.Random(41)
    cases: list[tuple[list[str], bytes, str]] = []
    for _ in range(3):
        history = [dict(line) for line in seeds["history"]]
        history[rng.randrange(1, len(history))]["client"] = rng.choice(["\ud800", "", 7, None])
        cases.append((["linearize"], b"".join(_dumps(line).encode() + b"\n" for line in history), ".ndjson"))
        report = json.loads(json.dumps(seeds["report"]))
        report["campaigns"][0][rng.choice(["chunks", "ok", "findings", "seed", "cut_short"])] = rng.choice(
            [[-1], "x", None, [[1]], 2**70])
        cases.append((["merge"], _dumps(report).encode(), ".json"))
        cases.append((["replay"], TRACE.read_bytes()[:rng.randrange(10, 400)], ".jsonl"))
    for number, (command, data, suffix) in enumerate(cases):
        path = tmp_path / f"case{number}{suffix}"
        path.write_bytes(data)
        run = subprocess.run([sys.executable, "-m", "duespec", *command, str(path)], capture_output=True, text=True,
                             timeout=120, cwd=tmp_path)
        assert run.returncode in (0, 1, 2, 3), (command, run.returncode, run.stderr)
        assert "Traceback" not in run.stderr and "internal error" not in run.stderr, (command, run.stderr)
        if run.returncode == 2:
            assert len(run.stderr.strip().splitlines()) == 1, (command, run.stderr)

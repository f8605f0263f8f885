"""Every command's arguments, fuzzed (issue 41): for each command `duespec --help` lists,
command lines of its own flags with hostile values (negative, huge and fractional numbers,
NaN, empty text, lone surrogates as a terminal's undecodable bytes arrive, /dev/zero, a
FIFO, a directory, a missing file), unknown and repeated flags, a flag without its value.
Each must be refused with exit 2 and a message, or accepted: never an internal error or a
traceback, and each within 256 MB of resident memory (tests/peak_rss.py).

The command lines are run in this process, through `duespec.cli.main` as the `duespec`
command runs them (a subprocess each would cost minutes), with every check a command makes
of its arguments, up to the point where its work starts (STOPS): there the fuzz stops it,
so that a command line that passes every check is counted as accepted without running a
campaign, a server or a benchmark. `merge`, `export` and `itf` run whole: their work is a
small file read and written. The parser is built once per process (`build_parser` takes
15 ms, the rest of a command line about 1).

1,000 command lines per command in `make test`; 10,000 under the `long` marker."""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duespec import cli
from duespec.exits import UsageError
from peak_rss import MAX_RSS_BYTES, Reads

ROOT = Path(__file__).resolve().parent.parent

#: Where each command's work starts, once its arguments are all checked: what the fuzz stops
#: the command at (the module attribute is replaced by one that raises Reached). A command
#: not listed runs whole.
STOPS: dict[str, tuple[str, ...]] = {
    "prove": ("duespec.prove.all_proofs",),  # the proofs
    "check": ("duespec.campaigns.conform.preflight",),  # the first start of the target
    "conform": ("duespec.campaigns.conform.preflight",),
    "suite": ("duespec.campaigns.suite.prove_all", "duespec.campaigns.suite.campaign_all"),
    "bench": ("duespec.bench.run_sections",),
    # the import or start of the target, for the first trace (the trace names the system)
    "replay": ("duespec.targets.resolve.guarded", "duespec.campaigns.replay_jobs.ProcessPoolExecutor"),
    "serve": ("duespec.wire.serve.bind",),  # listening, once its store is open
    "record": ("duespec.histories.record.probe",),  # the first call to the upstream
    "stress": ("duespec.histories.stress.stress",),  # the server and the clients
    "linearize": ("duespec.histories.linearize_command.judge",),  # the search, once the history is read
    "merge": (), "export": (), "itf": (),
    "catch-up": ("duespec.campaigns.catch_up.probe",),  # the first request to the target
}

#: Numbers and text that break argument checks.
HOSTILE = ["", " ", "-1", "0", "-0", "1", "2", "0.5", "-0.5", "1e309", "-1e309", "nan", "NaN", "inf", "-inf",
           "9" * 25, "9" * 5000, "0x10", "1_000", "1e3", " 5", "\uff19", "\u00b2", "\u0663", "\udcff", "\udc80x",
           "\u202e", "\u00e9", "a" * 300, "-", "--", "-x", "--nope", ".", "~", "$HOME", "*",
           "127.0.0.1:0", "127.0.0.1:99999", "[::1]:0", "localhost:-1", "http://", "http://127.0.0.1:1",
           "http://[::1", "https://127.0.0.1:99999/x", "redis://127.0.0.1:1/0", "unix:///nonexistent",
           "stdio:", "stdio:true", "stdio:'", "x:y", ":", "model", "impl", "serve", "duebook", "schedules",
           "seed", "lean", "deployed", "all", "none", "1/2", "3/2", "0/0", "1/0", "k=v", "=v", "claim",
           "claim,,nope", "{}", "[]", "{", "null", "HEAD", "pinned", "real", "resonate-valid"]


def _paths(folder: Path) -> dict[str, str]:
    """Named files of every kind in `folder`, the working directory of the fuzz: the
    inputs each command reads (valid ones too) and the names outputs may take."""
    (folder / "dir").mkdir()
    os.mkfifo(folder / "fifo")
    trace = folder / "trace.jsonl"
    shutil.copy(ROOT / "traces" / "schedules" / "crud.jsonl", trace)
    (folder / "traces").mkdir()
    shutil.copy(ROOT / "traces" / "duebook" / "window_edges.jsonl", folder / "traces")
    shutil.copy(ROOT / "tests" / "stress_ticks_export.history", folder / "history.ndjson")
    shutil.copy(ROOT / "tests" / "merge_seed_report.json", folder / "report.json")
    (folder / "declared.toml").write_text('[[difference]]\nreason = "r"\nop = "claim"\nresponse = "$.error"\n')
    (folder / "empty.json").write_text("")
    (folder / "zero.json").symlink_to("/dev/zero")
    return {"trace": "trace.jsonl", "traces": "traces", "history": "history.ndjson", "report": "report.json",
            "declared": "declared.toml", "empty": "empty.json", "dir": "dir", "fifo": "fifo",
            "zero": "zero.json", "dev": "/dev/zero", "missing": "missing/x.json", "new": "out.json",
            "itf": "trace.itf.json", "surrogate": "\udcff.json"}


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    [subparsers] = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    return dict(subparsers.choices)


#: Values of each argument (by its dest) that pass its check, so that command lines reach
#: the checks made after parsing; the fuzz mixes them with HOSTILE ones and file names.
VALID: dict[str, list[str]] = {
    "system": ["duebook", "schedules"], "target": ["impl", "model", "planted_targets:ThreePlantedBugs"],
    "traces": ["trace.jsonl", "traces"], "history": ["history.ndjson"], "reports": ["report.json"],
    "source": ["trace.jsonl", "history.ndjson"], "declared": ["declared.toml"], "baseline": ["report.json"],
    "profile": ["seed", "lean", "deployed", "all"], "listen": ["127.0.0.1:0", "[::1]:0"],
    "upstream": ["http://127.0.0.1:9"], "database": ["none", "db"], "db": [":memory:", "store.sqlite"],
    "shard": ["1/2", "2/2"], "require_tag": ["k=v"], "ops": ["claim"], "skip_ops": ["claim"],
    "config": ["{}"], "only": ["cron"], "against": ["HEAD"], "output": ["out.jsonl"], "json": ["out.json"],
    "junit": ["out.xml"], "html": ["out.html"], "coverage_json": ["coverage.json"], "trace_dir": ["failures"],
    "mapping": ["declared.toml"], "hook": ["planted_targets:ThreePlantedBugs"], "clock": ["pinned", "real"],
    "catch_up": ["all", "once-skip"],
}

#: One command line each command accepts: the fuzz's stops are where its work starts.
ACCEPTED = {
    "prove": ["prove"], "check": ["check", "duebook"], "conform": ["conform", "duebook", "--target", "impl"],
    "suite": ["suite", "--traces", "traces"], "bench": ["bench"], "replay": ["replay", "trace.jsonl"],
    "serve": ["serve", "schedules"], "linearize": ["linearize", "history.ndjson"],
    "record": ["record", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9", "-o", "out.ndjson"],
    "stress": ["stress", "schedules", "--target", "serve"], "merge": ["merge", "report.json"],
    "export": ["export", "history.ndjson", "--format", "resonate-valid", "-o", "out.history"],
    "itf": ["itf", "export", "trace.jsonl", "-o", "trace.itf.json", "--force"],
    "catch-up": ["catch-up", "--target", "impl"],
}

#: What free text is made of: ASCII, the separators flags use, white space, and what a
#: terminal can send that is not ASCII (accents, a right-to-left mark, digits of other
#: scripts, an emoji, undecodable bytes as Python gives them: lone surrogates). No NUL: no
#: command line can hold one.
ALPHABET = ("abcxyzABC0123456789-_=:/.,;@%*~'\"\\ \t\n"
            "\u00e9\u202e\uff19\u00b2\u0663\U0001f600\udcff\udc80")


def _valid(action: argparse.Action) -> list[str]:
    if action.choices:
        return sorted(map(str, action.choices))
    if action.dest in VALID:
        return VALID[action.dest]
    return [str(action.default)] if action.default not in (None, False, True, []) else ["1", "2", "0.5"]


def _value(rng: random.Random, action: argparse.Action, paths: list[str]) -> str:
    """A value for `action`: one that passes its check, or one with a character put in or
    taken out, a file name, a hostile one, any text."""
    kind = rng.randrange(5)
    if kind == 0:
        return rng.choice(_valid(action))
    if kind == 1:
        valid = rng.choice(_valid(action))
        at = rng.randint(0, len(valid))
        return valid[:at] + rng.choice(["", rng.choice(ALPHABET)]) + valid[at + rng.randint(0, 1):]
    if kind == 2:
        return rng.choice(paths)
    if kind == 3:
        return rng.choice(HOSTILE)
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(13)))


def _values(rng: random.Random, action: argparse.Action, paths: list[str]) -> list[str]:
    nargs = action.nargs
    count = (1 if nargs is None else nargs if isinstance(nargs, int)
             else rng.randint(0 if nargs in ("*", "?") else 1, 3))
    return [_value(rng, action, paths) for _ in range(count)]


def command_line(rng: random.Random, name: str, parser: argparse.ArgumentParser, paths: list[str]) -> list[str]:
    """`name` and its positional arguments (half the time those of the command line in
    ACCEPTED, options and all), then 0 to 4 of its options (any may repeat, any spelling,
    `--flag=value` too), with now and then an unknown flag or a stray word, an option
    without its value, or --help."""
    options = [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]
    if rng.random() < 0.5:
        argv = list(ACCEPTED[name])
    else:
        argv = [name]
        for action in parser._actions:
            if not action.option_strings:
                argv += _values(rng, action, paths)
    for _ in range(rng.randint(0, 4)):
        action = rng.choice(options)
        flag = rng.choice(action.option_strings)
        values = _values(rng, action, paths) if action.nargs != 0 else []
        if len(values) == 1 and flag.startswith("--") and rng.random() < 0.3:
            argv.append(f"{flag}={values[0]}")
        else:
            argv += [flag, *values]
    odd = rng.randrange(10)
    if odd == 0:
        argv.insert(rng.randint(1, len(argv)), rng.choice(["--nope", "-Z", "--debu", "stray"]))
    elif odd == 1 and any(a.nargs != 0 for a in options):
        argv.append(rng.choice([spelling for a in options if a.nargs != 0 for spelling in a.option_strings]))
    elif odd == 2:
        argv.append(rng.choice(["-h", "--help"]))
    return argv


class Reached(UsageError):
    """Raised where a command's work would start (STOPS): every check of its arguments passed."""


MARK = "ARGUMENTS ACCEPTED, work not started:"


@pytest.fixture
def fuzzing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The fuzz's working directory, with its files, and the process state commands touch
    put back afterwards: sys.path (a module:factory target adds the working directory),
    the loggers `serve` quiets, the folder of temporary files (`stress`), the parser."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for name in ("aiohttp.server", "aiohttp.web", "aiohttp.access", "asyncio"):
        logger = logging.getLogger(name)
        monkeypatch.setattr(logger, "handlers", list(logger.handlers))
        monkeypatch.setattr(logger, "propagate", logger.propagate)
    parsers: dict[str | None, argparse.ArgumentParser] = {}
    build = cli.build_parser

    def built_once(command: str | None = None) -> argparse.ArgumentParser:
        key = command if command in cli.ALONE else None
        if key not in parsers:
            parsers[key] = build(command)
        return parsers[key]

    monkeypatch.setattr(cli, "build_parser", built_once)
    yield _paths(tmp_path)


def _stop_work(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for where in STOPS[name]:
        module, attribute = where.rsplit(".", 1)

        def reached(*args: Any, _what: str = where, **kwargs: Any) -> Any:
            raise Reached(f"{MARK} {_what}")

        monkeypatch.setattr(f"{module}.{attribute}", reached)


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as stop:  # argparse: --help, or a command line it refuses
            code = stop.code if isinstance(stop.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def _fuzz(name: str, examples: int, paths: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    parser = _commands()[name]
    _stop_work(name, monkeypatch)
    outcomes = {"accepted": 0, "refused": 0, "help": 0}
    reads = Reads()

    files = sorted(paths.values())

    # Hypothesis draws the seed of each command line's generator: its own draws, one per
    # token, cost three times what the command line itself does.
    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.randoms(use_true_random=True))
    def check(rng: random.Random) -> None:
        argv = command_line(rng, name, parser, files)
        code, out, err = reads.measure(lambda: run(argv))
        assert "Traceback" not in out + err and "internal error" not in out + err, (argv, out, err)
        assert code in (0, 2), (argv, code, out, err)
        if code == 0 and out.startswith("usage:"):
            outcomes["help"] += 1
        elif MARK in err or code == 0:
            outcomes["accepted"] += 1
        else:
            outcomes["refused"] += 1
            assert err.strip(), (argv, out)  # refused, saying why

    check()
    assert reads.bytes is None or reads.bytes <= MAX_RSS_BYTES, f"a command line needed {reads.bytes:,} bytes resident"
    return outcomes


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_every_command_is_fuzzed_and_stops_where_its_work_starts(fuzzing: dict[str, str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A command added to duespec is fuzzed only once it has a stop here; and each stop is
    where a command line that passes every check gets to."""
    assert set(_commands()) == set(STOPS) == set(ACCEPTED)
    for name, argv in ACCEPTED.items():
        with monkeypatch.context() as patched:
            _stop_work(name, patched)
            code, out, err = run(argv)
        assert (MARK in err) == bool(STOPS[name]) and code == (2 if STOPS[name] else 0), (argv, code, out, err)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
@pytest.mark.parametrize("lines", [1_000, pytest.param(10_000, marks=pytest.mark.long)])  # make test, make check
@pytest.mark.parametrize("name", sorted(STOPS))
def test_every_command_refuses_or_accepts_hostile_command_lines(
        name: str, lines: int, fuzzing: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes = _fuzz(name, lines, fuzzing, monkeypatch)
    assert outcomes["accepted"] > 0 and outcomes["refused"] > 0, (name, outcomes)

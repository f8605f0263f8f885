"""Hostile input, driven through the CLI: never a traceback, a hang, a false pass, a memory
blow-up or a half-written or overwritten file (issue 9).

A seeded generator builds a corpus of >= 2,000 cases: malformed and adversarial traces,
ITF documents, Python and stdio targets that misbehave, and command lines. They run in
one driver process (tests/hostile_driver.py, 1 GiB address-space cap, a watchdog per
case) calling duespec.cli.main in-process. Each case says which exit codes it may end
with; where the answer is known (a tampered result, a target that exits 0, a limit
crossed) that set excludes 0, so a false pass fails the test. The cases that need a real
process (a FIFO, a signal, a module import that blocks, the memory cap on big files) run
as true subprocesses in the tests at the end.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

from duespec.limits import MAX_DEPTH, MAX_DOCUMENT_BYTES, MAX_INT_DIGITS, MAX_LINE_BYTES
from duespec.traces.format import TraceError
from duespec.traces.itf import export_itf
from duespec.traces.replay import replay

ROOT = Path(__file__).resolve().parent.parent
CORPUS = sorted((ROOT / "traces").glob("*/*.jsonl"))
DRIVER = Path(__file__).with_name("hostile_driver.py")
SEED = 9
CASE_LIMIT = 20.0
#: A conform run that fails shrinks, minimises and replays its counterexample: up to 9 CPU
#: seconds on this machine, so a loaded CI runner needs more than CASE_LIMIT by the clock.
CONFORM_LIMIT = 60.0
#: Cases the generator must produce (the issue asks for at least 2,000).
AT_LEAST = 2000

OK, DIVERGES, USAGE = 0, 1, 2
ANY = (OK, DIVERGES, USAGE)
NOT_OK = (DIVERGES, USAGE)

HOSTILE_TARGETS = '''
import sys, time

class _Impl:
    def __init__(self):
        from duespec.systems.duebook import ImplTarget
        self.inner = ImplTarget()
    def reset(self, config): self.inner.reset(config)
    def step(self, op, args, now): return self.inner.step(op, args, now)
    def observe(self): return self.inner.observe()

class Fine(_Impl):
    def close(self): self.inner.close()

class NoClose(_Impl):
    pass

class ExitsInStep(_Impl):
    def step(self, op, args, now): sys.exit(0)

class ExitsInReset(_Impl):
    def reset(self, config): sys.exit(0)

class ExitsInObserve(_Impl):
    def observe(self): sys.exit(0)

class ExitsInClose(_Impl):
    def close(self): sys.exit(0)

class Exits3InStep(_Impl):
    def step(self, op, args, now): sys.exit(3)

class InterruptsInStep(_Impl):
    def step(self, op, args, now): raise KeyboardInterrupt

class RaisesInStep(_Impl):
    def step(self, op, args, now): raise RuntimeError("planted")

class RaisesInObserve(_Impl):
    def observe(self): raise ValueError("planted")

class StepReturnsList(_Impl):
    def step(self, op, args, now): return [1, 2]

class StepReturnsNone(_Impl):
    def step(self, op, args, now): return None

class StepReturnsSetInside(_Impl):
    def step(self, op, args, now): return {"ok": {1, 2}}

class StepReturnsNaN(_Impl):
    def step(self, op, args, now): return {"ok": float("nan")}

class ObserveReturnsSet(_Impl):
    def observe(self): return set()

class ObserveReturnsTupleKeys(_Impl):
    def observe(self): return {(1, 2): 3}

class ObserveHoldsASet(_Impl):
    def observe(self): return {**self.inner.observe(), "deferrals": {1, 2}}

class WrongAnswers(_Impl):
    def step(self, op, args, now): return {"error": "not_found"}

class WrongState(_Impl):
    def observe(self): return {"deferrals": [], "next_id": 99}

class SwallowsEverything(_Impl):
    def step(self, op, args, now):
        try:
            sys.exit(0)
        except SystemExit:
            return {"ok": None}

class SlowStep(_Impl):
    def step(self, op, args, now):
        time.sleep(5)
        return self.inner.step(op, args, now)

def exits_in_factory(): sys.exit(0)
def raises_in_factory(): raise OSError("planted")
def returns_none(): return None
def returns_number(): return 42
def interrupts_in_factory(): raise KeyboardInterrupt
NOT_CALLABLE = 3
'''

IMPORT_EXITS = "import sys\nsys.exit(0)\n"
IMPORT_RAISES = "raise ImportError('planted at import')\n"
IMPORT_SYNTAX = "def broken(:\n"


@dataclass
class Case:
    kind: str
    argv: list[str]
    expect: tuple[int, ...]
    cwd: str = ""
    limit: float = CASE_LIMIT
    #: Files that must be byte-identical after the case.
    unchanged: dict[str, str] = field(default_factory=dict)
    #: itf import: what it writes must pass replay's validation.
    check_written: str | None = None


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else f"<{path.is_symlink()}>"


class Generator:
    """Writes the inputs under `root` and yields the cases that use them."""

    def __init__(self, root: Path) -> None:
        self.root, self.random = root, random.Random(SEED)
        self.count = 0
        (root / "targets").mkdir()
        (root / "targets" / "hostile_targets.py").write_text(HOSTILE_TARGETS)
        (root / "targets" / "import_exits.py").write_text(IMPORT_EXITS)
        (root / "targets" / "import_raises.py").write_text(IMPORT_RAISES)
        (root / "targets" / "import_syntax.py").write_text(IMPORT_SYNTAX)
        self.base = {path: path.read_bytes() for path in CORPUS}
        self.itf_bases = []
        for path in CORPUS:
            out = root / f"base-{path.stem}.itf.json"
            try:
                export_itf(path, out)
            except TraceError:  # a trace of fractional arguments has no ITF form
                continue
            self.itf_bases.append(out.read_bytes())

    def file(self, content: bytes, suffix: str = ".jsonl") -> Path:
        self.count += 1
        path = self.root / f"c{self.count:05d}{suffix}"
        path.write_bytes(content)
        return path

    def case(self, kind: str, argv: list[str], expect: tuple[int, ...], **extra: Any) -> Case:
        return Case(kind, argv, expect, cwd=str(self.root / "targets"), **extra)

    # --- traces ------------------------------------------------------------------------

    def byte_mutations(self, n: int) -> Iterator[Case]:
        for _ in range(n):
            data = bytearray(self.random.choice(list(self.base.values())))
            how = self.random.choice(("flip", "delete", "insert", "truncate", "dup", "swap", "drop", "nul"))
            at = self.random.randrange(len(data))
            if how == "flip":
                data[at] ^= 1 << self.random.randrange(8)
            elif how == "delete":
                del data[at]
            elif how == "insert":
                data.insert(at, self.random.randrange(256))
            elif how == "truncate":
                del data[at:]
            elif how == "nul":
                data[at:at] = b"\x00"
            else:
                lines = bytes(data).split(b"\n")
                i, j = self.random.randrange(len(lines)), self.random.randrange(len(lines))
                if how == "dup":
                    lines.insert(i, lines[j])
                elif how == "swap":
                    lines[i], lines[j] = lines[j], lines[i]
                else:
                    del lines[i]
                data = bytearray(b"\n".join(lines))
            target = self.random.choice(("impl", "model"))
            yield self.case("trace-bytes", ["replay", str(self.file(bytes(data))), "--target", target], ANY)

    def value_mutations(self, n: int) -> Iterator[Case]:
        """A value in a step or header replaced by something hostile, as raw JSON text."""
        hostile = [
            "1" * (MAX_INT_DIGITS + 1), "-" + "9" * 5000, "9" * 4301, "[" * 100_000 + "]" * 100_000,
            "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "{\"a\":" * 500 + "1" + "}" * 500,
            "NaN", "Infinity", "-Infinity", "1e999", "-0", "1.5", "true", "null", "[]", "{}",
            '"\\ud800"', '"' + "x" * 100_000 + '"', str(2**63), str(2**64), "-1",
            '"\\u0000"', '{"__proto__": 1}', "[" + ",".join(["{}"] * 5000) + "]",
        ]
        for _ in range(n):
            path = self.random.choice(CORPUS)
            lines = self.base[path].decode().splitlines()
            i = self.random.randrange(len(lines))
            value = json.loads(lines[i])
            key = self.random.choice(sorted(value))
            token = "\u0001HOSTILE\u0001"
            value[key] = token
            text = json.dumps(value).replace(json.dumps(token), self.random.choice(hostile))
            lines[i] = text
            expect = NOT_OK if i == 0 and key == "duespec_trace" else ANY
            target = self.random.choice(("impl", "model"))
            yield self.case("trace-values", ["replay", str(self.file("\n".join(lines).encode() + b"\n")),
                                             "--target", target], expect)

    def tampered_results(self, n: int) -> Iterator[Case]:
        """A recorded result changed to another well-formed answer: must never pass."""
        answers = [{"status": 999}, {"ok": None, "extra": 1}, {"error": "tampered"}, {"status": 200, "x": []}]
        for _ in range(n):
            path = self.random.choice(CORPUS)
            lines = self.base[path].decode().splitlines()
            i = self.random.randrange(1, len(lines))
            step = json.loads(lines[i])
            step["result"] = self.random.choice(answers)
            lines[i] = json.dumps(step)
            target = self.random.choice(("impl", "model"))
            yield self.case("trace-tampered", ["replay", str(self.file("\n".join(lines).encode() + b"\n")),
                                               "--target", target], NOT_OK)

    def broken_syntax(self, n: int) -> Iterator[Case]:
        """A line that is not a JSON object (or not UTF-8) inside a trace: exit 2."""
        junk = [b"{", b"]", b"\xff\xfe", b"\xc3\x28", b"\x00", b"[]", b"1", b'"step"', b"{}}", b"\r",
                b"\xef\xbb\xbf{}", b"   ", b"{\"i\": 0,,}", b"nul", b"\x80abc"]
        for _ in range(n):
            path = self.random.choice(CORPUS)
            lines = self.base[path].splitlines()
            i = self.random.randrange(len(lines))
            lines.insert(i, self.random.choice(junk))
            yield self.case("trace-syntax", ["replay", str(self.file(b"\n".join(lines) + b"\n"))], (USAGE,))

    def catch_up_bombs(self) -> Iterator[Case]:
        """Valid schedules traces whose catch-up the model could not finish for hours."""
        create = {"i": 0, "op": "schedule.create", "args": {
            "id": "m", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}", "promiseTimeout": 60000,
            "promiseParam": {"headers": {}, "data": None}, "promiseTags": {}}, "now": 1767225600000}
        header = {"duespec_trace": 1, "system": "schedules", "profile": "lean",
                  "config": {"profile": "lean", "retry_timeout": 5000}, "seed": None, "producer": "hostile",
                  "created": "2026-01-01T00:00:00+00:00"}
        year = 365 * 86_400_000
        bombs = [(253_402_300_799_999, "* * * * *", "impl", []), (253_402_300_799_999, "* * * * *", "model", []),
                 (1767225600000 + 10 * year, "* * * * *", "model", []),
                 (1767225600000 + year, "*/5 * * * *", "model", ["--timeout", "1"])]
        for op, args in (("tick", {}), ("schedule.timeout", {"id": "m"})):
            for now, cron, target, extra in bombs:
                steps = [header, {**create, "args": {**create["args"], "cron": cron}},
                         {"i": 1, "op": op, "args": args, "now": now}]
                text = "\n".join(json.dumps(s) for s in steps) + "\n"
                yield self.case("catch-up", ["replay", str(self.file(text.encode())), "--target", target, *extra],
                                (USAGE,), limit=30)

    # --- ITF ---------------------------------------------------------------------------

    def itf_documents(self, n: int) -> Iterator[Case]:
        hostile = [{"#bigint": "9" * 5000}, {"#bigint": "1" * (MAX_INT_DIGITS + 1)}, {"#bigint": "12a"},
                   {"#bigint": 5}, {"#map": [[1]]}, {"#map": 3}, {"#set": {}}, {"#tup": None},
                   {"s": 1, "e": 20, "c": [1]}, {"#unserializable": "x"}, {"tag": "Some"}, [], None, 1.5,
                   {"tag": "Some", "value": {"#bigint": "-" + "1" * 200}}]
        for _ in range(n):
            document = json.loads(self.random.choice(self.itf_bases))
            how = self.random.choice(("value", "value", "meta", "drop", "action", "bytes", "deep", "seed"))
            if how == "value":
                state = self.random.choice(document["states"])
                key = self.random.choice(sorted(state))
                state[key] = self.random.choice(hostile)
            elif how == "meta":
                document["#meta"]["duespec"][self.random.choice(("system", "profile", "config"))] = \
                    self.random.choice(["nope", 3, None, {"x": 1}, [], "schedules", "duebook"])
            elif how == "seed":
                document["#meta"]["duespec"]["seed"] = self.random.choice(["3", 1.5, True, [1], {"a": 1}, -1,
                                                                             2**70, None])
            elif how == "drop":
                self.random.choice([lambda: document.pop("states"), lambda: document["states"].clear(),
                                    lambda: document.pop("#meta"), lambda: document.update(states=5)])()
            elif how == "action":
                state = self.random.choice(document["states"][1:] or document["states"])
                state["mbt::actionTaken"] = self.random.choice(["", "nope", 3, None, "advanceTime"])
            elif how == "deep":
                self.random.choice(document["states"])["now"] = "\u0001DEEP\u0001"
            depth = self.random.choice((200, 300, 2000, 100_000))
            text = json.dumps(document).replace(json.dumps("\u0001DEEP\u0001"),
                                                "[" * depth + "1" + "]" * depth).encode()
            if how == "bytes":
                data = bytearray(text)
                data[self.random.randrange(len(data))] = self.random.choice((0xFF, 0x00, 0x80, ord("{")))
                text = bytes(data)
            source = self.file(text, ".itf.json")
            out = self.root / f"imported-{self.count}.jsonl"
            yield self.case("itf-import", ["itf", "import", str(source), "-o", str(out)], (OK, USAGE),
                            check_written=str(out))

    def itf_exports(self, n: int) -> Iterator[Case]:
        """Export of hostile traces: an unknown op, a config the model refuses, deep args."""
        for _ in range(n):
            path = self.random.choice(CORPUS)
            lines = self.base[path].decode().splitlines()
            header = json.loads(lines[0])
            how = self.random.choice(("op", "config", "deep", "int", "args", "bytes"))
            if how == "config":
                header["config"] = self.random.choice([{"max_open": -1}, {"profile": "nope"}, {"x": 1},
                                                       {"max_open": "3"}])
                lines[0] = json.dumps(header)
            else:
                i = self.random.randrange(1, len(lines))
                step = json.loads(lines[i])
                if how == "op":
                    step["op"] = self.random.choice(["nope", "", "schedule.nope", "__init__"])
                elif how == "deep":
                    nested: Any = "x"
                    for _ in range(self.random.choice((30, 60, 63))):
                        nested = {"a": nested}
                    step["args"] = {"owner": nested, "id": nested}
                elif how == "int":
                    step["now"] = 10 ** self.random.choice((20, 99))
                elif how == "args":
                    step["args"] = self.random.choice([None, [], 3, "x", {"id": None}])
                lines[i] = json.dumps(step)
            text = ("\n".join(lines) + "\n").encode()
            if how == "bytes":
                text = text.replace(b'"', b"\xff", 1)
            source = self.file(text)
            yield self.case("itf-export", ["itf", "export", str(source), "-o",
                                           str(self.root / f"exported-{self.count}.itf.json")], (OK, USAGE))

    # --- targets -----------------------------------------------------------------------

    def targets(self) -> Iterator[Case]:
        trace = str(ROOT / "traces" / "duebook" / "window_edges.jsonl")
        must_fail = ["ExitsInStep", "ExitsInReset", "ExitsInObserve", "Exits3InStep", "InterruptsInStep",
                     "RaisesInStep", "RaisesInObserve", "StepReturnsList", "StepReturnsNone",
                     "StepReturnsSetInside", "StepReturnsNaN", "ObserveReturnsSet", "ObserveReturnsTupleKeys", "ObserveHoldsASet",
                     "WrongAnswers", "WrongState", "SwallowsEverything", "exits_in_factory",
                     "raises_in_factory", "returns_none", "returns_number", "interrupts_in_factory"]
        specs = [f"hostile_targets:{name}" for name in must_fail] + [
            "hostile_targets:NOT_CALLABLE", "hostile_targets:nothing", "import_exits:factory",
            "import_raises:factory", "import_syntax:factory", "no_such_module_h9:factory", "os:getcwd",
            "builtins:print", "builtins:dict", "stdio:no-such-program-h9", "stdio:false", "stdio:cat",
            f"stdio:{sys.executable} -c \"print('garbage')\"", "stdio:", ":", "a:", ":b", "nonsense",
            "hostile_targets:SlowStep"]
        for spec in specs:
            extra = ["--timeout", "1"] if "Slow" in spec else []
            yield self.case("target-replay", ["replay", trace, "--target", spec, *extra], NOT_OK)
        yield self.case("target-replay", ["replay", trace, "--target", "hostile_targets:Fine"], (OK,))
        yield self.case("target-replay", ["replay", trace, "--target", "hostile_targets:NoClose"], (OK,))
        for name in ("ExitsInStep", "exits_in_factory", "StepReturnsList", "ObserveReturnsSet", "ObserveHoldsASet",
                     "ExitsInObserve",
                     "InterruptsInStep", "WrongAnswers"):
            yield self.case("target-conform", ["conform", "duebook", "--target", f"hostile_targets:{name}",
                                               "--examples", "2", "--steps", "5", "--no-coverage",
                                               "--progress", "0", "--trace-dir", str(self.root / "failures")],
                            NOT_OK, limit=CONFORM_LIMIT)
        yield self.case("target-conform", ["conform", "duebook", "--target", "hostile_targets:NoClose",
                                           "--examples", "2", "--steps", "5", "--no-coverage", "--progress", "0"],
                        (OK,), limit=CONFORM_LIMIT)

    # --- command lines and output files ------------------------------------------------

    def command_lines(self, n: int) -> Iterator[Case]:
        trace = str(ROOT / "traces" / "duebook" / "window_edges.jsonl")
        a_file = self.file(b"not a directory\n", ".txt")
        protected = self.file(self.base[CORPUS[0]])
        link = self.root / "a-link.xml"
        link.symlink_to(protected)
        readonly = self.root / "readonly"
        readonly.mkdir()
        readonly.chmod(0o555)
        bad_paths = [str(self.root), "/dev/full", "/dev/null", str(a_file / "under.xml"), str(link),
                     "x" * 5000, "a/" * 3000 + "x", "", "\x00x"]
        if os.geteuid() != 0:  # root writes anywhere
            bad_paths.append(str(readonly / "x.xml"))
        values = ["nan", "inf", "-1", "0", "1e308", "abc", "", "9" * 5000, "-" * 10, "0x10", "1_0", " 3"]
        fixed: list[tuple[list[str], tuple[int, ...]]] = [
            ([], (USAGE,)), (["nope"], (USAGE,)), (["replay"], (USAGE,)), (["--help"], (OK,)),
            (["replay", "--help"], (OK,)), (["replay", "/nonexistent/x.jsonl"], (USAGE,)),
            (["replay", str(self.root / "empty-dir")], (USAGE,)), (["replay", "x" * 5000], (USAGE,)),
            (["replay", "\x00"], (USAGE,)), (["itf", "import", trace, "-o", trace], (USAGE,)),
            (["itf", "import", str(protected)], (USAGE,)), (["itf", "export", trace, "-o", trace], (USAGE,)),
            (["itf", "import", "/dev/zero"], (USAGE,)), (["replay", "/dev/null"], (USAGE,)),
            (["replay", "/dev/zero"], (USAGE,)), (["replay", "/proc/self/status"], (USAGE,)),
            (["itf", "import", trace, "--config", "[]"], (USAGE,)),
            (["itf", "import", trace, "--config", "{"], (USAGE,)),
        ]
        (self.root / "empty-dir").mkdir()
        for argv, expect in fixed:
            yield self.case("argv", argv, expect, unchanged={str(protected): digest(protected),
                                                              trace: digest(Path(trace))})
        for _ in range(n):
            shape = self.random.choice(("out", "out", "value", "junk"))
            if shape == "out":
                where = self.random.choice(bad_paths)
                argv = self.random.choice([
                    ["conform", "duebook", "--target", "impl", "--examples", "1", "--steps", "2",
                     "--progress", "0", "--junit", where],
                    ["check", "duebook", "--examples", "1", "--steps", "2", "--progress", "0",
                     "--coverage-json", where],
                    ["itf", "export", trace, "-o", where],
                    ["itf", "import", str(self.root / "base-window_edges.itf.json"), "--system", "duebook",
                     "-o", where]])
                yield self.case("argv-output", argv, (USAGE,),
                                unchanged={str(protected): digest(protected), str(link): digest(link)})
            elif shape == "value":
                flag = self.random.choice(["--timeout", "--examples", "--steps", "--seed"])
                command = self.random.choice([["replay", trace], ["itf", "export", trace, "--force", "-o",
                                                                  str(self.root / "v.itf.json")],
                                              ["conform", "duebook", "--target", "impl"], ["check", "duebook"]])
                if command[0] in ("replay", "itf"):
                    flag = "--timeout"
                value = self.random.choice(values)
                budget = [b for b in ("--examples", "--steps") if b != flag]
                argv = [*command, flag, value] + (
                    [budget[0], "1", *budget[1:2], *(["2"] if budget[1:] else []), "--progress", "0"]
                    if command[0] in ("conform", "check") else [])
                yield self.case("argv-value", argv, (OK, DIVERGES) if accepted(flag, value) else (USAGE,))
            else:
                words = ["replay", "itf", "conform", "check", "--target", "-o", "--junit", "import", "export",
                         "duebook", "schedules", "--", "-", "--debugx", "--profile", "all", "nope", trace,
                         "\udcff", "\x00", "--seed", "--timeout"]
                argv = [self.random.choice(words) for _ in range(self.random.randrange(1, 5))]
                if "conform" in argv or "check" in argv:
                    argv += ["--examples", "1", "--steps", "2", "--progress", "0"]
                yield self.case("argv-junk", argv, ANY,
                                unchanged={str(protected): digest(protected), trace: digest(Path(trace))})

    def all(self) -> list[Case]:
        cases: list[Case] = []
        for part in (self.byte_mutations(700), self.value_mutations(300), self.tampered_results(150),
                     self.broken_syntax(150), self.catch_up_bombs(), self.itf_documents(350),
                     self.itf_exports(150), self.targets(), self.command_lines(250)):
            cases.extend(part)
        return cases


def accepted(flag: str, value: str) -> bool:
    """Whether the option takes `value` (Python's own int/float syntax: " 3" and "1_0" too)."""
    try:
        number = float(value) if flag == "--timeout" else int(value)
    except ValueError:
        return False
    if flag == "--timeout":
        return 0 < number <= 86_400
    return flag == "--seed" or number >= 1


def run_driver(cases: list[Case], workdir: Path) -> tuple[dict[int, dict[str, Any]], list[int]]:
    """Outcomes by case index, and the indexes that hung (the driver restarts past them)."""
    case_file, results = workdir / "cases.jsonl", workdir / "results.jsonl"
    case_file.write_text("".join(json.dumps({"argv": c.argv, "cwd": c.cwd, "limit": c.limit}) + "\n"
                                 for c in cases))
    outcomes: dict[int, dict[str, Any]] = {}
    hung: list[int] = []
    start = 0
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "0"}
    while start < len(cases):
        subprocess.run([sys.executable, str(DRIVER), str(case_file), str(results), str(start)],
                       cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=900)
        last_start = None
        for line in results.read_text().splitlines():
            record = json.loads(line)
            if "start" in record:
                last_start = record["start"]
            else:
                outcomes[record["index"]] = record
        if last_start is None or last_start in outcomes:
            break
        hung.append(last_start)  # started, never finished: the watchdog (or a crash) ended it
        start = last_start + 1
    return outcomes, hung


@pytest.mark.long
def test_two_thousand_hostile_cases_end_cleanly(tmp_path: Path) -> None:
    started = time.monotonic()
    generator = Generator(tmp_path)
    cases = generator.all()
    assert len(cases) >= AT_LEAST
    outcomes, hung = run_driver(cases, tmp_path)
    problems = []
    for index, case in enumerate(cases):
        if index in hung:
            problems.append(f"HUNG or crashed: {case.kind} {case.argv[:6]}")
            continue
        outcome = outcomes.get(index)
        if outcome is None:
            problems.append(f"never ran: {case.kind} {case.argv[:6]}")
            continue
        text = outcome["stdout"] + outcome["stderr"]
        where = f"{case.kind} {[a[:80] for a in case.argv[:7]]} -> {outcome['code']}"
        if "Traceback" in text or outcome["code"] == "escaped":
            problems.append(f"traceback: {where}\n{text[-1500:]}")
        elif "internal error" in text or "out of memory" in text:
            problems.append(f"internal error: {where}\n{text[-600:]}")
        elif outcome["code"] not in case.expect:
            problems.append(f"exit {outcome['code']} not in {case.expect}: {where}\n{text[-600:]}")
        elif outcome["code"] == USAGE and not outcome["stderr"].strip():
            problems.append(f"exit 2 without a message: {where}")
        for path, before in case.unchanged.items():
            if digest(Path(path)) != before:
                problems.append(f"changed {path}: {where}")
        if case.check_written and outcome["code"] == OK:
            try:
                replay(case.check_written, "model")
            except TraceError as error:
                problems.append(f"itf import wrote a trace replay refuses: {where}: {error}")
    slowest = sorted(outcomes.values(), key=lambda o: -o["seconds"])[:12]
    print("\nslowest:", [(round(o["seconds"], 2), cases[o["index"]].kind, [a[:40] for a in cases[o["index"]].argv])
                          for o in slowest])
    by_kind: dict[str, float] = {}
    for index, outcome in outcomes.items():
        by_kind[cases[index].kind] = by_kind.get(cases[index].kind, 0.0) + outcome["seconds"]
    print("seconds by kind:", {k: round(v, 1) for k, v in by_kind.items()})
    partials = sorted(str(p) for p in tmp_path.rglob("*.partial"))
    assert not partials, f"half-written files left behind: {partials[:5]}"
    kinds: dict[str, int] = {}
    for case in cases:
        kinds[case.kind] = kinds.get(case.kind, 0) + 1
    codes: dict[str, int] = {}
    for outcome in outcomes.values():
        codes[str(outcome["code"])] = codes.get(str(outcome["code"]), 0) + 1
    print(f"\n{len(cases)} hostile cases ({kinds}) in {time.monotonic() - started:.1f}s; exit codes "
          f"{codes}; {len(hung)} hung, {len(problems)} problems")
    assert not problems, f"{len(problems)} of {len(cases)} cases:\n" + "\n\n".join(problems[:15])


# --- cases that need a process of their own -----------------------------------------------

def duespec(*argv: str, cwd: Path, timeout: float = 60, memory: int | None = 1 << 30,
            **popen: Any) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        if memory:
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "duespec", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, preexec_fn=limit, stdin=subprocess.DEVNULL, **popen)


def assert_clean(result: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert result.returncode == code, (result.returncode, result.stdout[-800:], result.stderr[-800:])
    assert "Traceback" not in result.stdout + result.stderr, result.stderr[-2000:]
    for word in words:
        assert word in result.stderr, (word, result.stderr[-800:])


def test_special_files_are_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    (tmp_path / "zero.jsonl").symlink_to("/dev/zero")
    folder = tmp_path / "folder"
    folder.mkdir()
    os.mkfifo(folder / "inside.jsonl")
    assert_clean(duespec("replay", str(fifo), cwd=tmp_path, timeout=30), 2, "not a regular file (a FIFO)")
    assert_clean(duespec("replay", str(tmp_path / "zero.jsonl"), cwd=tmp_path, timeout=30), 2, "character device")
    assert_clean(duespec("replay", str(folder), cwd=tmp_path, timeout=30), 2, "FIFO")
    assert_clean(duespec("itf", "import", str(fifo), "--system", "duebook", "-o", str(tmp_path / "o.jsonl"),
                         cwd=tmp_path, timeout=30), 2, "FIFO")


def test_a_blocking_import_is_bounded_by_timeout(tmp_path: Path) -> None:
    (tmp_path / "blocks_on_import.py").write_text("import time\ntime.sleep(600)\ndef factory(): pass\n")
    (tmp_path / "blocks_in_factory.py").write_text("import time\ndef factory():\n    time.sleep(600)\n")
    trace = str(ROOT / "traces" / "duebook" / "window_edges.jsonl")
    for spec in ("blocks_on_import:factory", "blocks_in_factory:factory"):
        started = time.monotonic()
        result = duespec("replay", trace, "--target", spec, "--timeout", "1", cwd=tmp_path, timeout=60)
        assert_clean(result, 2, "did not return within 1s")
        assert time.monotonic() - started < 30


def test_an_interrupted_replay_exits_130_and_leaves_no_partial_file(tmp_path: Path) -> None:
    (tmp_path / "slow.py").write_text(
        "import pathlib, time\nfrom duespec.systems.duebook import ImplTarget\n"
        "class Slow(ImplTarget):\n    def step(self, op, args, now):\n"
        "        pathlib.Path('stepping').touch()\n        time.sleep(0.5)\n"
        "        return super().step(op, args, now)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    trace = str(ROOT / "traces" / "duebook" / "window_edges.jsonl")
    process = subprocess.Popen([sys.executable, "-m", "duespec", "replay", trace, "--target", "slow:Slow"],
                               cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Interrupt mid-replay, not while a loaded machine is still importing duespec.
    waited = 0.0
    while not (tmp_path / "stepping").exists() and waited < 60 and process.poll() is None:
        time.sleep(0.1)
        waited += 0.1
    time.sleep(1)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, (out, err)
    assert "interrupted" in err and "DIVERGES" not in out, (out, err)
    assert "Traceback" not in out + err and "CONFIRMED" not in out, err
    assert not list(tmp_path.rglob("*.partial"))


def test_a_reader_that_stops_early_gets_no_verdict_and_no_traceback(tmp_path: Path) -> None:
    """`duespec check ... | head -1` under `set -o pipefail`: the campaign HOLDS, but its
    report could not be written whole, so the gate must not exit 0."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    reader, writer = os.pipe()
    os.close(reader)  # the reader is gone before duespec writes its first line
    try:
        result = subprocess.run([sys.executable, "-m", "duespec", "check", "duebook", "--examples", "5"],
                                cwd=tmp_path, env=env, stdout=writer, stderr=subprocess.PIPE, text=True,
                                timeout=120)
    finally:
        os.close(writer)
    assert result.returncode == 2, result.stderr
    assert "broken pipe" in result.stderr and "no verdict" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr


@pytest.mark.parametrize("shape", ["array-line", "itf-document", "deep-line", "itf-under-limit"])
def test_big_inputs_stay_under_one_gib(tmp_path: Path, shape: str) -> None:
    """50 MB inputs are refused by documented limit, and an ITF document just under its
    limit, of the smallest JSON values (the most memory per byte), is read: all under
    RLIMIT_AS = 1 GiB."""
    header = (ROOT / "traces" / "duebook" / "window_edges.jsonl").read_text().splitlines()[0]
    if shape == "array-line":
        path = tmp_path / "big.jsonl"
        with path.open("w") as out:
            out.write(header + "\n" + "[" + ",".join(["1"] * (25 * 1024 * 1024)) + "]\n")
        result = duespec("replay", str(path), cwd=tmp_path)
        words = [f"longer than {MAX_LINE_BYTES:,} bytes"]
    elif shape == "itf-under-limit":
        path = tmp_path / "under.itf.json"
        count = (MAX_DOCUMENT_BYTES - 400) // 3
        with path.open("w") as out:
            out.write('{"states": [{"now": {"#bigint": "1"}, "x": [' + ",".join(["[]"] * count) + "]}]}")
        result = duespec("itf", "import", str(path), "--system", "duebook", "-o", str(tmp_path / "o.jsonl"),
                         cwd=tmp_path)
        assert result.returncode in (0, 2), result.stderr[-800:]
        assert "Traceback" not in result.stderr and "out of memory" not in result.stderr, result.stderr[-800:]
        return
    elif shape == "deep-line":
        path = tmp_path / "deep.jsonl"
        path.write_text(header + "\n" + "[" * 5_000_000 + "]" * 5_000_000 + "\n")
        result = duespec("replay", str(path), cwd=tmp_path)
        words = ["nested deeper than"]
    else:
        path = tmp_path / "big.itf.json"
        with path.open("w") as out:
            out.write('{"states": [' + ",".join(['{"now": {"#bigint": "1"}}'] * (2 * 1024 * 1024)) + "]}")
        assert path.stat().st_size > 50 * 1024 * 1024
        result = duespec("itf", "import", str(path), "--system", "duebook", "-o", str(tmp_path / "o.jsonl"),
                         cwd=tmp_path)
        words = [f"over the {MAX_DOCUMENT_BYTES:,}-byte limit"]
    assert_clean(result, 2, *words)

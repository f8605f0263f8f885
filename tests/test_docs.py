"""Every command block of README.md and docs/ is checked against what its text claims.

A command block is a fence whose info string starts with `sh`; the words after it say how
it is checked:

- `sh`: run by `make test`, each command in turn in a scratch folder that links every
  entry of the repository but `.duespec/`, which is its own (so relative paths read as
  from its root, and files written by a relative name, failure traces too, land in the
  scratch folder; `.venv/bin` first on PATH, a `\\` joining lines). A command exits 0
  unless its comment says `exit N`; a word in capitals its comment names (HOLDS,
  DIVERGES, CONFIRMED, ...) is in its output.
  A command ending in `&` runs in the background until the block's `kill %1` (or the
  block's end); the next command waits until the address it serves answers.
- `sh long`: the same, by `make test-long` (seconds to minutes of CPU each).
- `sh placeholder`: not run, because it names what only the reader has (a DSN, an
  application of their own, a file they made) or takes hours (a mutation run). Its
  `duespec` commands must still parse, and every placeholder is listed in PLACEHOLDERS:
  a new one is a choice made in review.

A fence with info string `text output` shows lines of the output of the last command of the
command block before it: each must be in that output, in order, `...` standing for any text.
"""

from __future__ import annotations

import os
import fcntl
import re
import shlex
import tempfile
import signal
import socket
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from duespec.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
KINDS = ("", "long", "placeholder")
#: Each placeholder block, by file and first command, in order: never run (module docstring).
PLACEHOLDERS = [
    ("README.md", 'make check'),
    ("README.md", 'duespec record --listen 127.0.0.1:8002 --upstream http://127.0.0.1:8001 -o traffic.ndjson &'),
    ("docs/campaigns.md", 'duespec conform schedules --profile deployed --target http://127.0.0.1:8001 --require-tag resonate:target=poll://any@w'),
    ("docs/campaigns.md", 'PYTHONPATH=examples/resonate-pg duespec conform schedules --target target:make_target     --observe none --examples 100 --timeout 5 --declared examples/resonate-pg/declared.toml --database none --max-classes 200 --json examples/resonate-pg/baseline.json'),
    ("docs/campaigns.md", 'duespec check duebook --examples 400 --jobs 2'),
    ("docs/campaigns.md", 'pytest --duespec-target mypkg.adapter:make_target --duespec-system duebook'),
    ("docs/field.md", 'duespec serve schedules --port 8001 --profile deployed --clock real &'),
    ("docs/field.md", 'duespec record ... --clock pinned --format resonate-valid -o run.history'),
    ("docs/field.md", 'git -C resonate-specification checkout 34049e8'),
    ("docs/findings.md", 'export RESONATE_PG_DSN=...'),
    ("docs/findings.md", 'PYTHONPATH=examples/resonate-pg duespec conform schedules --target target:make_target     --observe none --examples 100 --timeout 5 --declared examples/resonate-pg/declared.toml --database none'),
    ("docs/linearize.md", 'PYTHONPATH=examples/resonate-pg RESONATE_PG_DSN=...     duespec stress schedules --target target:make_client --clients 16 --ops 2000 --declared examples/resonate-pg/stress-declared.toml'),
    ("docs/mutation-log.md", 'rm -rf /tmp/mut && mkdir /tmp/mut && git archive HEAD | tar -x -C /tmp/mut && cd /tmp/mut'),
    ("docs/mutation-log.md", 'tools/mutate_impl.py --sample 150 --seed 1 --system duebook --workers 3 --out duebook-final.json'),
    ("docs/mutation-log.md", 'nice -n 10 .venv/bin/python tools/mutate_impl.py --sample 40 --seed 1 --system schedules --workers 2 --out sched40.json'),
    ("docs/mutation-log.md", 'rm -rf /tmp/mut && mkdir /tmp/mut && git archive HEAD | tar -x -C /tmp/mut && cd /tmp/mut'),
    ("docs/mutation-log.md", 'nice -n 10 .venv/bin/python tools/mutate_impl.py --recheck open.json --workers 2 --out recheck.json'),
    ("docs/mutation-log.md", 'tools/mutate_impl.py --recheck changed.json --workers 2 --out changed-verdicts.json'),
    ("docs/mutation-log.md", 'nice -n 10 .venv/bin/python tools/mutate_impl.py --sample 350 --seed 7 --system duebook --workers 1 --out final.json'),
    ("docs/mutation-log.md", 'nice -n 10 .venv/bin/python tools/mutate_impl.py --sample 350 --seed 7 --system duebook --workers 1 --out final.json'),
    ("docs/mutation-log.md", 'nice -n 5 .venv/bin/python tools/mutate_impl.py --sample 0 --system duebook --workers 1 --out every.json'),
    ("docs/mutation-log.md", 'cd TREE && /usr/bin/time -f "%U %S" .venv/bin/duespec check schedules --profile lean --examples 100'),
    ("docs/mutation-log.md", 'rm -rf /tmp/m && mkdir /tmp/m && git archive 11c333e | tar -x -C /tmp/m && cd /tmp/m'),
    ("docs/mutation-log.md", '.venv/bin/python tools/mutate_impl.py --run impl/cron.py 431'),
    ("docs/mutation-log.md", 'rm -rf /tmp/m && mkdir /tmp/m && git archive 7407314 | tar -x -C /tmp/m && cd /tmp/m'),
    ("docs/mutation-log.md", 'nice -n 5 .venv/bin/python tools/mutate_impl.py --sample 0 --system duebook --workers 1 --out every3.json'),
    ("docs/mutation-log.md", 'nice -n 10 .venv/bin/python tools/mutate_impl.py --sample 0 --system schedules --workers 1 --out sched-all.json'),
    ("docs/mutation-log.md", 'duespec bench --only variants --quick --against eca7a23'),
    ("docs/mutation-log.md", 'nice -n 5 .venv/bin/python tools/mutate_impl.py --sample 0 --system schedules --workers 1 --out s-fwd.json'),
    ("docs/mutation-log.md", '.venv/bin/duespec bench --only variants'),
    ("docs/mutation-log.md", 'git worktree add /tmp/base feca91e && (cd /tmp/base && make install)'),
    ("docs/mutation.md", 'rm -rf /tmp/mut && mkdir /tmp/mut && git archive HEAD | tar -x -C /tmp/mut && cd /tmp/mut'),
    ("docs/mutation.md", 'nice -n 5 .venv/bin/python tools/mutate_impl.py --sample 0 --system schedules --workers 1 --out s-fwd.json'),
    ("docs/mutation.md", '.venv/bin/python tools/mutate_impl.py --hand all --campaign-seeds 0 1 2 --out hand.json'),
    ("docs/mutation.md", '.venv/bin/python tools/mutate_impl.py --floor full --workers 2 --doc docs/mutation.md'),
    ("docs/mutation.md", '.venv/bin/duespec bench --only variants'),
    ("docs/mutation.md", '.venv/bin/python tools/pg_variants/mutate_sql.py --list'),
    ("docs/performance.md", 'make bench'),
    ("docs/wire.md", 'duespec serve schedules'),
]
#: Words in capitals a comment may claim of a command's output.
CLAIMS = re.compile(r"\b(HOLDS|DIVERGES|CONFIRMED|LINEARIZABLE|NOT LINEARIZABLE|FAILED)\b")
#: Seconds a background server may take to answer on its address.
SERVER_START_SECONDS = 120


@dataclass
class Command:
    text: str
    comment: str
    line: int

    @property
    def exit_code(self) -> int:
        found = re.search(r"\bexit (\d+)\b", self.comment)
        return int(found.group(1)) if found else 0

    @property
    def background(self) -> bool:
        return self.text.endswith("&")


@dataclass
class Block:
    path: Path
    line: int
    kind: str
    commands: list[Command]
    output: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def split_comment(line: str) -> tuple[str, str]:
    """A line's command and its comment: the comment starts at a `#` after whitespace and
    outside quotes."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index].rstrip(), line[index + 1:].strip()
    return line.rstrip(), ""


def _open_quote(text: str) -> bool:
    try:
        shlex.split(text)
    except ValueError:
        return True
    return False


def commands_of(lines: list[str], first_line: int) -> list[Command]:
    commands: list[Command] = []
    pending, start = "", first_line
    for offset, raw in enumerate(lines):
        text, comment = split_comment(raw)
        if not pending:
            start = first_line + offset
        if text.endswith("\\"):
            pending += text[:-1].rstrip() + " "
            continue
        text = (pending + text.strip()).strip()
        if _open_quote(text):  # a quoted argument that goes on over the next line
            pending = text + "\n"
            continue
        pending = ""
        if text:
            commands.append(Command(text, comment, start))
    return commands


def blocks() -> list[Block]:
    found: list[Block] = []
    for path in DOCUMENTS:
        lines = path.read_text().splitlines()
        index = 0
        while index < len(lines):
            fence = re.match(r"^```(\S*)\s*(.*)$", lines[index])
            if not fence:
                index += 1
                continue
            end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
            body = lines[index + 1:end]
            if fence.group(1) == "sh":
                found.append(Block(path, index + 1, fence.group(2).strip(), commands_of(body, index + 2)))
            elif (fence.group(1), fence.group(2).strip()) == ("text", "output") and found and found[-1].path == path:
                found[-1].output = body
            index = end + 1
    return found


ALL = blocks()


def test_every_block_says_how_it_is_checked() -> None:
    unknown = [f"{block.name}: sh {block.kind}" for block in ALL if block.kind not in KINDS]
    assert not unknown, f"an sh block's info string is sh, sh long or sh placeholder: {unknown}"
    assert len(ALL) > 20  # the parser found the documents' blocks


def test_the_placeholders_are_the_ones_listed() -> None:
    placeholders = [(str(block.path.relative_to(ROOT)), block.commands[0].text)
                    for block in ALL if block.kind == "placeholder"]
    assert placeholders == PLACEHOLDERS


def duespec_argv(command: str) -> list[str] | None:
    """The arguments after `duespec` in a command, or None if it runs no duespec."""
    try:
        words = shlex.split(command.rstrip("&").strip())
    except ValueError:
        return None
    while words and re.match(r"^[A-Z_]+=", words[0]):
        words = words[1:]
    if words and words[0] in ("duespec", ".venv/bin/duespec"):
        return words[1:]
    return None


def test_every_duespec_command_in_the_docs_parses(capsys: pytest.CaptureFixture[str]) -> None:
    """Placeholders and long blocks included: a flag renamed in the code and not in the
    docs fails here, in seconds."""
    parser = build_parser()
    wrong = []
    for block in ALL:
        for command in block.commands:
            argv = duespec_argv(command.text)
            if argv is None or "[" in command.text or "..." in command.text:
                continue  # `[-v]` and `...` are notation, not arguments
            try:
                parser.parse_args(argv)
            except SystemExit:
                wrong.append(f"{block.name}: {command.text}: {capsys.readouterr().err.strip().splitlines()[-1]}")
    assert not wrong, "\n".join(wrong)


def _serves(command: str) -> tuple[str, int] | None:
    found = re.search(r"(?:--listen |--port |127\.0\.0\.1:)(?:127\.0\.0\.1:)?(\d{2,5})", command)
    if found:
        return "127.0.0.1", int(found.group(1))
    if re.search(r"duespec serve", command):
        return "127.0.0.1", 8001
    return None


def _wait_for(address: tuple[str, int], process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        try:
            socket.create_connection(address, timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"the background command never answered on {address[0]}:{address[1]}")


def scratch_checkout(folder: Path, block: Block) -> Path:
    """A folder where a block's commands run: every entry of the repository linked in but
    `.duespec`, which is the folder's own, so that the files a block writes by a relative
    name (its failure traces under `.duespec/failures/` too) land here, new each time,
    never in the checkout. A block that replays a failure trace (it names
    `.duespec/failures/`) replays the one the command block before it in its document
    wrote: that block runs here first (README.md's third step replays its second's trace)."""
    for entry in ROOT.iterdir():
        if entry.name not in (".git", ".venv", ".duespec"):
            (folder / entry.name).symlink_to(entry)
    (folder / ".duespec").mkdir()
    if any(".duespec/failures/" in command.text for command in block.commands):
        writers = [b for b in ALL if b.path == block.path and b.line < block.line and b.kind != "placeholder"]
        assert writers, f"{block.name} replays a failure trace, but no command block before it writes one"
        run_block(writers[-1], folder)
    return folder


def _hold_port(address: tuple[str, int], held: ExitStack, where: str) -> None:
    """Hold the address a block serves on until the block ends: the blocks are written with
    the ports a reader would type (8001), so two blocks run at once (`-n 2`, or two `make test`
    on one machine) would otherwise meet on one port, the second block's commands talking to
    the first block's server (a `--clock real` one answering a campaign that expects a pinned
    clock). A lock file per port orders them; a port some other program holds fails here, by
    name, instead of being checked by mistake."""
    lock = open(Path(tempfile.gettempdir()) / f"duespec-docs-port-{address[1]}.lock", "w")
    held.callback(lock.close)
    fcntl.flock(lock, fcntl.LOCK_EX)
    held.callback(fcntl.flock, lock, fcntl.LOCK_UN)
    with socket.socket() as probe:
        if probe.connect_ex(address) == 0:
            raise AssertionError(f"{where}: {address[0]}:{address[1]} is already served by another program")


def run_block(block: Block, cwd: Path = ROOT) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    background: list[subprocess.Popen[str]] = []
    last_output = ""
    held = ExitStack()
    try:
        for command in block.commands:
            where = f"{block.name} (line {command.line}): {command.text}"
            if re.fullmatch(r"kill (-\w+ )?%1", command.text):
                sig = signal.SIGINT if "-INT" in command.text else signal.SIGTERM
                background[0].send_signal(sig)
                background[0].wait(60)
                continue
            if command.background:
                address = _serves(command.text)
                if address is not None:
                    _hold_port(address, held, where)
                process = subprocess.Popen(["bash", "-c", "exec " + command.text.rstrip("&").strip()], cwd=cwd,
                                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
                                           start_new_session=True)
                background.append(process)
                if address is not None:
                    _wait_for(address, process)
                continue
            run = subprocess.run(["bash", "-c", command.text], cwd=cwd, env=env, capture_output=True, text=True,
                                 timeout=1800)
            last_output = run.stdout + run.stderr
            assert run.returncode == command.exit_code, f"{where}: exit {run.returncode}\n{last_output[-3000:]}"
            for claim in CLAIMS.findall(command.comment):
                assert claim in last_output, f"{where}: no {claim} in its output\n{last_output[-3000:]}"
        if block.output:
            _assert_lines_in(block, last_output)
    finally:
        for process in background:
            if process.poll() is None:
                process.terminate()
                process.wait(60)
        held.close()


def _assert_lines_in(block: Block, output: str) -> None:
    lines = output.splitlines()
    position = 0
    for expected in block.output:
        pattern = re.compile("^" + ".*".join(re.escape(part) for part in expected.split("...")) + "$")
        while position < len(lines) and not pattern.match(lines[position]):
            position += 1
        assert position < len(lines), f"{block.name}: the output shown has {expected!r}, the command's does not:\n{output[-3000:]}"
        position += 1


@pytest.mark.parametrize("block", [b for b in ALL if b.kind == ""], ids=lambda b: b.name)
def test_a_block_does_what_its_text_says(block: Block, tmp_path: Path) -> None:
    run_block(block, scratch_checkout(tmp_path, block))


@pytest.mark.long
@pytest.mark.parametrize("block", [b for b in ALL if b.kind == "long"], ids=lambda b: b.name)
def test_a_long_block_does_what_its_text_says(block: Block, tmp_path: Path) -> None:
    run_block(block, scratch_checkout(tmp_path, block))

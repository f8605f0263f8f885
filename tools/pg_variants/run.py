"""Run examples/resonate-pg/README.md's commands against single-bug variants of resonate.sql.

For each variant (tools/pg_variants/variants.py) a throwaway PostgreSQL is started with the
variant applied (tests/pg_support.py's server), and every duespec command of the README's
```sh blocks is run against it exactly as written (the DSN substituted, `duespec` this
checkout's), each under a wall limit. What a command reports is compared with what the same
command reports against the unmodified file, run first the same way: a variant is found by a
command when that command reports a finding the unmodified server did not (a conform class,
a replay divergence, a stress verdict), or fails where the unmodified server passed.

    python tools/pg_variants/run.py                       # every variant, every command
    python tools/pg_variants/run.py --only catchup_strict_bound --commands response-only
    python tools/pg_variants/run.py --list                # the variants and the commands

A limit: "the unmodified server did not show it" means within the unmodified run's wall (twice
the variant's). A campaign slowed by the machine's load reaches its later classes later, so a
known difference the unmodified run did not reach in time can read as new; check a detection by
replaying the trace its log names against the unmodified server (`duespec replay`) before
trusting it.

Exit 0 only when issue 40's Done-when holds: of the ten variants, at least 9 found, at least
8 by a `conform` command, each within 300 s of its command's start. 1 otherwise (a subset of
variants can never pass), 2 bad usage or no PostgreSQL / resonate.sql.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pg_support  # noqa: E402  (test infrastructure: the throwaway PostgreSQL)
import variants as variant_defs  # noqa: E402

README = ROOT / "examples" / "resonate-pg" / "README.md"
#: The Done-when's bounds: found within this many seconds, by this many of the ten variants.
DONE_WHEN_SECONDS = 300.0
DONE_WHEN_FOUND = 9
DONE_WHEN_FOUND_BY_CONFORM = 8
#: Seconds a command stopped at its wall limit (SIGTERM) has to report what it found before
#: SIGKILL: a campaign cut short prints its classes, shrinking each a little more.
GRACE_SECONDS = 60.0
#: The unmodified server's runs get this many times the wall limit: the campaigns are seeded,
#: so a longer run finds at least what a shorter one does, and a class the variant's run shows
#: is not counted as new merely because the unmodified run got less far under load.
BASELINE_WALL_FACTOR = 2.0
#: Entries of the checkout not linked into a command's working directory: its own example
#: database and failure traces start empty for each command, so no run replays another's.
PRIVATE = {".duespec", ".hypothesis", ".git", ".venv"}


@dataclass(frozen=True)
class Command:
    label: str
    env: dict[str, str]
    argv: list[str]
    text: str

    @property
    def is_conform(self) -> bool:
        return self.argv[:1] == ["conform"]


@dataclass
class Outcome:
    command: Command
    returncode: int | None  # None: stopped at the wall limit
    seconds: float
    wall: float = 0.0
    findings: dict[str, float] = field(default_factory=dict)  # finding -> seconds to it
    noise: list[str] = field(default_factory=list)


def readme_commands(readme: Path = README) -> list[Command]:
    """Every `duespec ...` command of the README's ```sh blocks, continuations joined.
    A block tagged otherwise (```sh refresh: the command that rewrites the shipped baseline)
    is no check and is left out: run here, it would write into the checkout."""
    text = readme.read_text()
    blocks = re.findall(r"^```sh\n(.*?)^```", text, flags=re.S | re.M)
    commands: list[Command] = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            if not line or line.startswith("#"):
                continue
            words = shlex.split(line)
            env: dict[str, str] = {}
            while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
                key, value = words.pop(0).split("=", 1)
                env[key] = value
            if not words or words[0] != "duespec":
                continue
            argv = words[1:]
            commands.append(Command(_label(argv), env, argv, line))
    if not commands:
        raise SystemExit(f"run.py: no duespec command in {readme}'s ```sh blocks")
    return commands


def _label(argv: list[str]) -> str:
    label = argv[0]
    if argv[0] == "conform":
        joined = " ".join(argv)
        label += " response-only" if "--observe none" in joined else " state"
        if "--profile" in argv:
            label += " " + argv[argv.index("--profile") + 1]
    return label


_CLASS = re.compile(r"class \d+ found: (?P<what>.*?)(?: \((?P<steps>\d+ steps?[^)]*)\))?(?:; (?:searching on|by replaying the baseline's witness))?\s*$")


def findings_of(command: Command, line: str) -> tuple[str | None, bool]:
    """The finding a line of output reports, if any, and whether it is noise (a call over the
    per-call timeout: it depends on the machine's load, not on the server's behaviour)."""
    if command.is_conform:
        match = _CLASS.search(line)
        if not match:
            return None, False
        if match.group("steps") and "declared" in match.group("steps"):
            return None, False
        what = match.group("what")
        return what, what.startswith("target too slow")
    if line.startswith("DIVERGES:"):
        return line.split(" (")[0].strip(), False
    if line.startswith("NOT LINEARIZABLE") or line.startswith("UNKNOWN"):
        return line.split(":")[0], False  # the verdict; the counts after it vary from run to run
    return None, False


def run_command(command: Command, dsn: str, wall: float, log: Path, program: str | None = None) -> Outcome:
    """Run one README command in a fresh working directory linked to this checkout
    (`program`: the duespec executable, by default the one beside this Python)."""
    with tempfile.TemporaryDirectory(prefix="pg-variants-cwd-") as cwd:
        for entry in ROOT.iterdir():
            if entry.name not in PRIVATE:
                os.symlink(entry, Path(cwd) / entry.name)
        env = {**os.environ, **command.env, "RESONATE_PG_DSN": dsn}
        duespec = program or str(Path(sys.executable).with_name("duespec"))
        argv = [_expand(word, env) for word in command.argv]
        outcome = Outcome(command, None, 0.0, wall)
        start = time.monotonic()
        with open(log, "w") as out:
            out.write(f"$ {command.text}\n")
            process = subprocess.Popen([duespec, *argv], cwd=cwd, env=env, text=True,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       start_new_session=True)
            stopped = threading.Event()
            timer = threading.Timer(wall, lambda: (stopped.set(), _stop(process)))
            timer.start()
            try:
                assert process.stdout is not None
                for line in process.stdout:
                    elapsed = time.monotonic() - start
                    out.write(f"[{elapsed:7.1f}] {line}")
                    if stopped.is_set():  # reported in reply to the stop: found within the limit
                        elapsed = min(elapsed, wall)
                    finding, noise = findings_of(command, line.rstrip("\n"))
                    if finding is None:
                        continue
                    if noise:
                        outcome.noise.append(finding)
                    else:
                        outcome.findings.setdefault(finding, elapsed)
                process.wait()
            finally:
                timer.cancel()
                if process.poll() is None:  # interrupted: never leave a campaign running
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
        outcome.seconds = time.monotonic() - start
        outcome.returncode = None if stopped.is_set() else process.returncode
        return outcome


def _expand(word: str, env: dict[str, str]) -> str:
    """Every $NAME and ${NAME} of a README word from the environment (the DSN above all); quoting
    is not tracked: the README quotes no dollar sign it means literally."""
    return re.sub(r"\$(?:\{(\w+)\}|(\w+))", lambda m: env.get(m.group(1) or m.group(2), ""), word)


def _stop(process: subprocess.Popen[str]) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + GRACE_SECONDS
        while process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_server(sql: Path, commands: list[Command], wall: float, logs: Path, name: str) -> list[Outcome]:
    """Start a throwaway PostgreSQL with `sql` applied and run every command against it in turn."""
    server = pg_support.PostgresServer()
    server.sql = sql
    outcomes = []
    with server:
        for index, command in enumerate(commands):
            log = logs / f"{name}.{index}.{command.label.replace(' ', '-')}.log"
            outcome = run_command(command, server.dsn, wall, log)
            stopped = "stopped at its wall limit" if outcome.returncode is None else f"exit {outcome.returncode}"
            print(f"  {name:34} {command.label:26} {stopped:26}"
                  f"{outcome.seconds:6.1f}s {len(outcome.findings)} findings", flush=True)
            outcomes.append(outcome)
    return outcomes


@dataclass
class Detection:
    command: Command
    seconds: float
    what: str


def detections(base: list[Outcome], variant: list[Outcome]) -> list[Detection]:
    """Per command, what the variant's run showed that the unmodified run did not."""
    found = []
    for before, after in zip(base, variant):
        new = {what: at for what, at in after.findings.items() if what not in before.findings}
        if new:
            what, at = min(new.items(), key=lambda item: item[1])
            found.append(Detection(after.command, at, what))
        elif before.returncode == 0 and after.returncode not in (0, None):
            found.append(Detection(after.command, after.seconds, f"exit {after.returncode} (unmodified: 0)"))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="run this variant only (repeatable)")
    parser.add_argument("--commands", action="append", default=[], metavar="LABEL",
                        help="run only the README command labelled LABEL, or those whose label contains it "
                             "(repeatable): conform, 'conform state', response-only, deployed, replay, stress")
    parser.add_argument("--wall", type=float, default=DONE_WHEN_SECONDS,
                        help="seconds each command may run (default 300)")
    parser.add_argument("--logs", type=Path, help="keep each command's output here (default: a temp dir)")
    parser.add_argument("--list", action="store_true", help="print the variants and the commands, run nothing")
    args = parser.parse_args(argv)

    commands = readme_commands()
    if args.commands:
        labels = {c.label for c in commands}
        commands = [c for c in commands
                    if any(c.label == sel if sel in labels else sel in c.label for sel in args.commands)]
        if not commands:
            print(f"run.py: no README command matches {args.commands}", file=sys.stderr)
            return 2
    names = {v.name for v in variant_defs.VARIANTS}
    unknown = [n for n in args.only if n not in names]
    if unknown:
        print(f"run.py: unknown variant {', '.join(unknown)} (see --list)", file=sys.stderr)
        return 2
    chosen = [v for v in variant_defs.VARIANTS if not args.only or v.name in args.only]
    if args.wall <= 0:
        print("run.py: --wall must be positive", file=sys.stderr)
        return 2
    if args.list:
        for v in variant_defs.VARIANTS:
            print(f"{v.name:34} [{v.area}] {v.why}")
        for c in commands:
            print(f"command {c.label:26} duespec {' '.join(c.argv)}")
        return 0

    if args.logs is not None and args.logs.exists() and (not args.logs.is_dir() or any(args.logs.iterdir())):
        print(f"run.py: --logs {args.logs} exists and is not an empty directory (its files are never "
              f"overwritten)", file=sys.stderr)
        return 2
    try:
        original = pg_support.resonate_sql()
        pg_support.pg_bin_dir()
    except pg_support.PostgresUnavailable as error:
        print(f"run.py: {error}", file=sys.stderr)
        return 2
    logs = args.logs or Path(tempfile.mkdtemp(prefix="pg-variants-logs-"))
    logs.mkdir(parents=True, exist_ok=True)
    print(f"logs: {logs}; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; wall {args.wall:.0f}s a command "
          f"({args.wall * BASELINE_WALL_FACTOR:.0f}s on the unmodified server)",
          flush=True)
    base = run_server(original, commands, args.wall * BASELINE_WALL_FACTOR, logs, "unmodified")
    rows = []
    with tempfile.TemporaryDirectory(prefix="pg-variants-sql-") as sql_dir:
        for variant in chosen:
            path = variant_defs.write_variant(variant, original, Path(sql_dir))
            try:
                outcomes = run_server(path, commands, args.wall, logs, variant.name)
            except pg_support.PostgresUnavailable as error:
                print(f"run.py: {error}", file=sys.stderr)
                return 2
            except Exception as error:  # psycopg raises its own errors when the file does not load
                print(f"run.py: variant {variant.name} did not load: {error}", file=sys.stderr)
                return 2
            rows.append((variant, detections(base, outcomes)))

    print(f"\n{'variant':34} {'found by (seconds to the first new finding)':60}")
    for variant, found in rows:
        cells = ", ".join(f"{d.command.label} ({d.seconds:.0f}s)" for d in found) or "NOT FOUND"
        print(f"{variant.name:34} {cells}")
        for d in found:
            print(f"{'':36}{d.command.label}: {d.what[:110]}")
    in_time = [(v, [d for d in found if d.seconds <= DONE_WHEN_SECONDS]) for v, found in rows]
    n_found = sum(1 for _, found in in_time if found)
    n_conform = sum(1 for _, found in in_time if any(d.command.is_conform for d in found))
    print(f"\nfound within {DONE_WHEN_SECONDS:.0f}s: {n_found} of {len(rows)}; by a conform command: "
          f"{n_conform} of {len(rows)} (commands run: {', '.join(c.label for c in commands)}); "
          f"load {os.getloadavg()[0]:.1f}")
    if len(rows) != len(variant_defs.VARIANTS):
        print(f"Done-when NOT CHECKED: {len(rows)} of {len(variant_defs.VARIANTS)} variants run")
        return 1
    holds = n_found >= DONE_WHEN_FOUND and n_conform >= DONE_WHEN_FOUND_BY_CONFORM
    print(f"Done-when ({DONE_WHEN_FOUND} of 10 found, {DONE_WHEN_FOUND_BY_CONFORM} by conform): "
          f"{'HOLDS' if holds else 'does NOT hold'}")
    return 0 if holds else 1


if __name__ == "__main__":
    raise SystemExit(main())

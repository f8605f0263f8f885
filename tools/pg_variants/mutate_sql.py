"""The SQL mutation benchmark: mutants of resonate.sql against two of examples/resonate-pg/README.md's commands.

Each chosen mutant (tools/pg_variants/sql_mutants.py: one mechanical edit of a function body)
is loaded into a throwaway PostgreSQL, and two commands of the README are run against it as
written, through run.py's own functions (`readme_commands`, `run_server`, `detections`):

- the response-only campaign at `--examples 20` (`conform ... --observe none --examples 20
  ... --database none --baseline examples/resonate-pg/baseline.json`);
- `stress ... --declared examples/resonate-pg/stress-declared.toml`, 16 clients at once.

The unmodified file is run first, the same way (twice the wall). A mutant is

- killed: a command reported a finding the unmodified server's run did not (a conform
  class, a stress verdict), or exited non-zero where the unmodified server's exited 0;
- hung: no finding, but a command ran into its wall where the unmodified server's finished
  (counted as killed, as tools/mutate counts a check that never ends);
- stillborn: resonate.sql with the edit does not load (reported apart, not counted);
- survived: otherwise. tools/pg_variants/sql_survivors.py judges each survivor by its id:
  EQUIVALENT (with the reason no client can tell) or GAP (with what would show it).

The kill rate is killed / (run - stillborn - survivors judged equivalent).

    python tools/pg_variants/mutate_sql.py --list                  # mutants per operator and function
    python tools/pg_variants/mutate_sql.py --sample 6 --seed 1     # a stratified sample, run
    python tools/pg_variants/mutate_sql.py --only 'lock _lock:382 ...'   # one mutant by its id
    python tools/pg_variants/mutate_sql.py --load                  # does each mutant load? (no commands)
    python tools/pg_variants/mutate_sql.py --summary out.json      # judge again what an --out file holds

Exit 0 only when the kill rate is at least 80% and every survivor is judged; 1 otherwise;
2 bad usage, or no PostgreSQL / resonate.sql.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run as runner  # noqa: E402  (puts tests/ on sys.path: pg_support)
import sql_mutants  # noqa: E402
from sql_survivors import EQUIVALENT, GAP, SURVIVORS  # noqa: E402

import pg_support  # noqa: E402
from needs import under_ci  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mutate.floor import read_floors  # noqa: E402

#: Issue 40's Done-when: at least this share of the non-equivalent mutants killed.
KILL_RATE = 0.80
#: Seconds each command may run against a mutant (the unmodified server gets
#: run.BASELINE_WALL_FACTOR times as long).
WALL_SECONDS = 120.0


@dataclass
class Result:
    id: str
    operator: str
    function: str
    outcome: str  # killed, hung, survived, stillborn
    seconds: float
    found: list[str] = field(default_factory=list)  # "<command>: <finding>" per detection
    error: str = ""


def benchmark_commands(commands: list[runner.Command], examples: int = 20) -> list[runner.Command]:
    """The README's response-only `--examples N` command (20, the quick one, by default; 100,
    the one the README gives first) and its `stress --declared` one."""
    conform = [c for c in commands if c.label == "conform response-only" and f"--examples {examples} " in c.text + " "]
    stress = [c for c in commands if c.label == "stress" and "--declared" in c.argv]
    if len(conform) != 1 or len(stress) != 1:
        raise SystemExit(f"mutate_sql.py: examples/resonate-pg/README.md has {len(conform)} response-only "
                         f"`--examples {examples}` commands and {len(stress)} `stress --declared` ones, not one each")
    return [conform[0], stress[0]]


def classify(base: list[runner.Outcome], outcomes: list[runner.Outcome]) -> tuple[str, list[str]]:
    found = runner.detections(base, outcomes)
    if found:
        return "killed", [f"{d.command.label}: {d.what}" for d in found]
    hung = [after.command.label for before, after in zip(base, outcomes)
            if after.returncode is None and before.returncode is not None]
    if hung:
        return "hung", [f"{label}: stopped at its wall limit (unmodified: finished)" for label in hung]
    return "survived", []


def judgment(result: Result) -> tuple[str, str] | None:
    """The survivor's recorded judgment: (EQUIVALENT or GAP, the reason), or None."""
    judged = SURVIVORS.get(result.id)
    return judged if judged is not None and judged[0] in (EQUIVALENT, GAP) and judged[1].strip() else None


def summary(results: list[Result]) -> tuple[str, bool]:
    """The figures and the survivors, and whether the Done-when holds."""
    run = [r for r in results if r.outcome != "stillborn"]
    stillborn = [r for r in results if r.outcome == "stillborn"]
    killed = [r for r in run if r.outcome in ("killed", "hung")]
    survivors = [r for r in run if r.outcome == "survived"]
    equivalent = [r for r in survivors if (judgment(r) or ("", ""))[0] == EQUIVALENT]
    counted = len(run) - len(equivalent)
    rate = len(killed) / counted if counted else 0.0
    lines = []
    for operator in sql_mutants.OPERATORS:
        mine = [r for r in run if r.operator == operator]
        if mine:
            k = sum(r.outcome in ("killed", "hung") for r in mine)
            e = sum(r in equivalent for r in mine)
            lines.append(f"  {operator:15} {k} killed of {len(mine) - e} non-equivalent ({len(mine)} run, {e} equivalent)")
    lines.insert(0, f"kill rate: {len(killed)} killed of {counted} non-equivalent = {100 * rate:.1f}% "
                    f"({len(run)} run, {sum(r.outcome == 'hung' for r in run)} of the killed hung, "
                    f"{len(equivalent)} survivors equivalent, {len(stillborn)} stillborn not counted)")
    unexplained = [r for r in survivors if judgment(r) is None]
    if survivors:
        lines.append("survivors:")
    for r in survivors:
        judged = judgment(r)
        lines.append(f"  {r.id}\n      {judged[0]}: {judged[1]}" if judged else f"  {r.id}\n      unexplained")
    for r in stillborn:
        lines.append(f"stillborn: {r.id}\n      {r.error}")
    holds = counted > 0 and rate >= KILL_RATE and not unexplained
    lines.append(f"Done-when (at least {100 * KILL_RATE:.0f}% of the non-equivalent mutants killed, every "
                 f"survivor judged): {'HOLDS' if holds else 'does NOT hold'}"
                 + (f" ({len(unexplained)} survivors unexplained)" if unexplained else ""))
    return "\n".join(lines), holds


def floor_verdict(results: list[Result], floor: int) -> tuple[str, bool]:
    """The regression gate `make pg-mutation` applies: at least `floor` mutants killed (the
    count committed in tools/mutation-floor.txt, `sql killed >= N`) and every survivor judged.
    The Done-when's 80% is printed beside it; the floor keeps the rate from falling unnoticed
    while the campaign climbs towards it."""
    killed = sum(r.outcome in ("killed", "hung") for r in results)
    unexplained = sum(r.outcome == "survived" and judgment(r) is None for r in results)
    holds = killed >= floor and not unexplained
    return (f"mutation floor sql: {killed} killed, floor {floor}"
            + (f", {unexplained} survivors unexplained" if unexplained else "")
            + f": {'HOLDS' if holds else 'BROKEN'}"), holds


def list_mutants(everything: list[sql_mutants.SqlMutant]) -> None:
    by_operator = Counter(m.operator for m in everything)
    print(f"{len(everything)} mutants of resonate.sql")
    for operator in sql_mutants.OPERATORS:
        print(f"  {operator:15} {by_operator[operator]}")
    print("per function:")
    by_function = Counter(m.function for m in everything)
    for name in dict.fromkeys(m.function for m in everything):
        operators = Counter(m.operator for m in everything if m.function == name)
        print(f"  {name:28} {by_function[name]:4}  " + ", ".join(f"{op} {n}" for op, n in operators.items()))
    print("not mutated (no README command reaches them): " + ", ".join(sql_mutants.NOT_MUTATED))


def load_only(chosen: list[sql_mutants.SqlMutant], original: Path) -> int:
    """Load each mutant into its own database of one server: the stillborn, without a command."""
    import psycopg

    stillborn = 0
    with pg_support.PostgresServer() as server, tempfile.TemporaryDirectory(prefix="pg-mutants-sql-") as sql_dir:
        for index, mutant in enumerate(chosen):
            path = sql_mutants.write_mutant(mutant, original, Path(sql_dir), f"m{index}")
            try:
                server.create_database(f"mutant_{index}", path)
            except psycopg.Error as error:
                stillborn += 1
                print(f"stillborn: {mutant.id}\n      {str(error).splitlines()[0]}", flush=True)
    print(f"{len(chosen) - stillborn} of {len(chosen)} mutants load; {stillborn} stillborn")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="count the mutants per operator and function, run nothing")
    parser.add_argument("--ids", action="store_true", help="print every mutant's id, run nothing")
    parser.add_argument("--sample", type=int, default=0, metavar="N",
                        help="run N mutants, a sample stratified by operator (0, the default: every mutant)")
    parser.add_argument("--seed", type=int, default=1, help="the sample's seed (default 1)")
    parser.add_argument("--only", action="append", default=[], metavar="ID", help="run this mutant (repeatable)")
    parser.add_argument("--wall", type=float, default=WALL_SECONDS,
                        help=f"seconds each command may run against a mutant (default {WALL_SECONDS:.0f})")
    parser.add_argument("--examples", type=int, choices=(20, 100), default=20,
                        help="which of the README's response-only commands runs: --examples 20 (default) or 100")
    parser.add_argument("--workers", type=int, default=1,
                        help="mutants checked at once, each on its own PostgreSQL (default 1)")
    parser.add_argument("--floor", action="store_true",
                        help="exit by the floor committed in tools/mutation-floor.txt (`sql killed >= N`, every "
                             "survivor judged) instead of the 80%% Done-when (make pg-mutation)")
    parser.add_argument("--not-run-outside-ci", action="store_true",
                        help="without PostgreSQL or resonate.sql, say 'not run' and exit 0 unless CI=true "
                             "(make check: the policy of the resonate-pg tests, tests/needs.py)")
    parser.add_argument("--load", action="store_true", help="only load each chosen mutant: list the stillborn")
    parser.add_argument("--logs", type=Path, help="keep each command's output here (default: a temp dir)")
    parser.add_argument("--out", type=Path, help="write each result as it comes, as JSON")
    parser.add_argument("--summary", type=Path, nargs="+", metavar="JSON",
                        help="the kill rate and the survivors of previous --out files, judged by today's "
                             "sql_survivors.py (merged by id, the last file's result kept), run nothing")
    args = parser.parse_args(argv)
    if args.summary:
        merged = {}
        for path in args.summary:
            try:
                merged.update({r["id"]: Result(**r) for r in json.loads(path.read_text())})
            except (OSError, ValueError, TypeError, KeyError) as error:
                print(f"mutate_sql.py: {path}: not an --out file ({error})", file=sys.stderr)
                return 2
        text, holds = summary(list(merged.values()))
        print(text)
        return _exit(list(merged.values()), holds, args.floor)

    if args.sample < 0 or args.wall <= 0 or args.workers < 1:
        print("mutate_sql.py: --sample must be >= 0, --wall positive and --workers at least 1", file=sys.stderr)
        return 2
    try:
        original = pg_support.resonate_sql()
        if not (args.list or args.ids):
            pg_support.pg_bin_dir()
    except pg_support.PostgresUnavailable as error:
        if args.not_run_outside_ci and not under_ci():
            print(f"not run: the SQL mutation benchmark: {error} (outside CI, as the resonate-pg tests)")
            return 0
        print(f"mutate_sql.py: {error}", file=sys.stderr)
        return 2
    everything = sql_mutants.mutants(original.read_text())
    if args.list:
        list_mutants(everything)
        return 0
    if args.ids:
        for mutant in everything:
            print(mutant.id)
        return 0
    by_id = {m.id: m for m in everything}
    unknown = [i for i in args.only if i not in by_id]
    if unknown:
        print(f"mutate_sql.py: no mutant {unknown[0]!r} (see --ids)", file=sys.stderr)
        return 2
    if args.only:
        chosen = [by_id[i] for i in args.only]
    elif args.sample:
        chosen = sql_mutants.stratified_sample(everything, args.sample, args.seed)
    else:
        chosen = everything
    if args.load:
        return load_only(chosen, original)

    if args.logs is not None and args.logs.exists() and (not args.logs.is_dir() or any(args.logs.iterdir())):
        print(f"mutate_sql.py: --logs {args.logs} exists and is not an empty directory", file=sys.stderr)
        return 2
    commands = benchmark_commands(runner.readme_commands(), args.examples)
    logs = args.logs or Path(tempfile.mkdtemp(prefix="pg-mutants-logs-"))
    logs.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    print(f"{len(chosen)} of {len(everything)} mutants; commands: "
          + "; ".join(f"duespec {' '.join(c.argv)}" for c in commands), flush=True)
    print(f"logs: {logs}; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; wall {args.wall:.0f}s a command "
          f"({args.wall * runner.BASELINE_WALL_FACTOR:.0f}s on the unmodified server)", flush=True)
    try:
        base = runner.run_server(original, commands, args.wall * runner.BASELINE_WALL_FACTOR, logs, "unmodified")
    except pg_support.PostgresUnavailable as error:
        print(f"mutate_sql.py: {error}", file=sys.stderr)
        return 2
    for outcome in base:
        if outcome.returncode != 0:
            print(f"note: the unmodified server's `{outcome.command.label}` did not exit 0 "
                  f"({'stopped at its wall' if outcome.returncode is None else f'exit {outcome.returncode}'}): "
                  f"only its new findings can kill a mutant", flush=True)
    results: dict[int, Result] = {}
    lock = threading.Lock()
    with tempfile.TemporaryDirectory(prefix="pg-mutants-sql-") as sql_dir:
        def check(index: int, mutant: sql_mutants.SqlMutant) -> None:
            import psycopg

            path = sql_mutants.write_mutant(mutant, original, Path(sql_dir), f"mutant-{index}")
            began = time.monotonic()
            try:
                outcomes = runner.run_server(path, commands, args.wall, logs, f"mutant-{index}")
            except psycopg.Error as error:  # the mutated file does not load
                result = Result(mutant.id, mutant.operator, mutant.function, "stillborn",
                                time.monotonic() - began, error=str(error).splitlines()[0])
            else:
                outcome, found = classify(base, outcomes)
                result = Result(mutant.id, mutant.operator, mutant.function, outcome,
                                time.monotonic() - began, found)
            with lock:
                results[index] = result
                print(f"[{index}/{len(chosen)}] {mutant.id}\n  -> {result.outcome} ({result.seconds:.0f}s)"
                      + "".join(f"\n     {what[:140]}" for what in result.found), flush=True)
                if args.out is not None:
                    args.out.write_text(json.dumps([results[i].__dict__ for i in sorted(results)], indent=2) + "\n")

        with concurrent.futures.ThreadPoolExecutor(args.workers) as pool:
            futures = [pool.submit(check, index, mutant) for index, mutant in enumerate(chosen, 1)]
            for future in futures:
                try:
                    future.result()
                except pg_support.PostgresUnavailable as error:
                    for other in futures:
                        other.cancel()
                    print(f"mutate_sql.py: {error}", file=sys.stderr)
                    return 2
    text, holds = summary([results[i] for i in sorted(results)])
    print(f"\n{text}\n(wall {time.monotonic() - started:.0f}s, load {os.getloadavg()[0]:.1f})")
    return _exit(list(results.values()), holds, args.floor)


def _exit(results: list[Result], holds: bool, floor: bool) -> int:
    if not floor:
        return 0 if holds else 1
    line, floor_holds = floor_verdict(results, read_floors()["sql"])
    print(line)
    return 0 if floor_holds else 1


if __name__ == "__main__":
    raise SystemExit(main())

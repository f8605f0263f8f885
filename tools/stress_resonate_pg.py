"""`make stress-resonate-pg` (which CI runs): `duespec stress` against resonate-pg on a real PostgreSQL.

Starts a throwaway PostgreSQL with resonate.sql applied (tests/pg_support.py: the
binaries from $DUESPEC_PG_BIN, resonate.sql where pg_support looks for it), runs

    duespec stress schedules --target target:make_client --clients 16 --ops 2000 --clock pinned \
        --declared examples/resonate-pg/stress-declared.toml

(examples/resonate-pg/target.py: one PostgreSQL session per client), prints the verdict
and exits with stress's code: 0 linearizable but for the races stress-declared.toml lists
(docs/findings.md F-8), 1 not, 3 unknown. If PostgreSQL or resonate.sql is unavailable it prints
"NOT CHECKED: ..." and exits 2: never 0 without a check.

    .venv/bin/python tools/stress_resonate_pg.py [--clients N] [--ops M] [--seed S]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "examples" / "resonate-pg"))

from pg_support import PostgresServer, PostgresUnavailable  # noqa: E402

from duespec.cli import main as duespec  # noqa: E402

NOT_CHECKED = 2


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        server = PostgresServer().start()
    except PostgresUnavailable as error:
        print(f"NOT CHECKED: resonate-pg stress needs PostgreSQL and resonate.sql: {error}", flush=True)
        return NOT_CHECKED
    try:
        os.environ["RESONATE_PG_DSN"] = server.dsn
        print(f"resonate-pg stress: {args.clients} clients, {args.ops:,} calls, pinned clock, seed {args.seed}",
              flush=True)
        code = duespec(["stress", "schedules", "--target", "target:make_client", "--clients", str(args.clients),
                        "--ops", str(args.ops), "--seed", str(args.seed), "--clock", "pinned",
                        "--declared", str(ROOT / "examples" / "resonate-pg" / "stress-declared.toml")])
    finally:
        server.stop()
    print(f"resonate-pg stress: exit {code}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

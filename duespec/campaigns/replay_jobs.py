"""`duespec replay` with `--jobs N`, `--shard I/N` and `--json FILE`.

The replay command itself is duespec.traces.replay; this module adds to its parser. The
traces (every *.jsonl under the directories given, in a stable order) are the unit of
work: shard I of N replays the traces whose place in that order is I - 1 modulo N, and N
jobs replay them in N worker processes, each against its own target. The reports are
printed in trace order whatever finished first, so the output is the same for any --jobs.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from duespec.campaigns.parallel import add_parallel_arguments, in_shard
from duespec.exits import EXIT_FAILED, EXIT_HOLDS, EXIT_USAGE
from duespec.traces import replay as replay_command


def _replay_one(path: str, target: str, state_every: int | None, timeout: float) -> dict[str, Any]:
    from duespec.traces.format import TraceError

    try:
        result = replay_command.replay(path, target, state_every=state_every, timeout=timeout)
    except TraceError as error:
        return {"path": path, "confirmed": False, "malformed": str(error), "report": f"MALFORMED: {error}"}
    warning = None
    if isinstance(result.recorded_target, str) and result.recorded_target.strip() != target.strip():
        warning = (f"warning: {path} was recorded against target {result.recorded_target!r}, "
                   f"replayed against {target!r}")
    return {"path": path, "confirmed": bool(result.confirmed), "malformed": None, "report": result.report(),
            "warning": warning, "steps": result.steps, "seconds": round(result.seconds, 3)}


def main(args: argparse.Namespace) -> int:
    if args.jobs == 1 and args.shard is None and args.json is None:
        return int(replay_command.main(args))  # the command as it always was
    every = replay_command.trace_files(args.traces)
    files = [str(path) for index, path in enumerate(every) if in_shard(index, args.shard)]
    jobs = min(args.jobs, max(1, len(files)))
    if jobs > 1 and args.target.strip().startswith(("http://", "https://")):
        print(f"--jobs {args.jobs}: target {args.target} cannot run {args.jobs} copies (it is one server at "
              f"a URL: copies would reset each other's state); running 1 job", file=sys.stderr, flush=True)
        jobs = 1
    call = (args.target, args.state_every, args.timeout)
    if jobs <= 1:
        results = [_replay_one(path, *call) for path in files]
    else:
        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            results = list(pool.map(_replay_one, files, *([value] * len(files) for value in call)))
    worst = EXIT_HOLDS
    for result in results:
        if result["malformed"]:
            print(result["report"], file=sys.stderr)
            worst = EXIT_USAGE
            continue
        if result.get("warning"):
            print(result["warning"], file=sys.stderr)
        print(result["report"], flush=True)
        if not result["confirmed"] and worst == EXIT_HOLDS:
            worst = EXIT_FAILED
    if args.shard is not None:
        print(f"shard {args.shard[0]}/{args.shard[1]}: {len(files)} trace{'' if len(files) == 1 else 's'}, "
              f"{jobs} job{'' if jobs == 1 else 's'}", flush=True)
    if args.json:
        from duespec.campaigns.report_json import write_report

        written = write_report(args.json, "replay", worst, [], results, shard=args.shard, target=args.target,
                               traces_total=len(every))
        print(f"json: {written}")
    return worst


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    replay_command.add_parser(subparsers)
    parser = subparsers.choices["replay"]
    add_parallel_arguments(parser, database=False)
    parser.set_defaults(run=main)

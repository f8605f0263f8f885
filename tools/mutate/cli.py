"""The command line of tools/mutate_impl.py: list, check a sample or one mutant, recheck
survivors, summarise previous runs."""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict
from pathlib import Path

import mutate
from mutate.operators import FILES, mutants_of
from mutate.report import summary
from mutate.runner import Verdict, check_mutant, run_in_this_process, stratified_sample


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        code = run_in_this_process(argv[1], int(argv[2]), argv[3], argv[4] == "exact")
        print(f"mutant check cpu seconds: {time.process_time():.1f}", flush=True)
        return code
    parser = argparse.ArgumentParser(description=mutate.__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="count the mutants per file")
    parser.add_argument("--sample", type=int, default=0,
                        help="check this many, a stratified random sample (every file, in proportion)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="mutants.json")
    parser.add_argument("--run", nargs=2, metavar=("FILE", "INDEX"), help="check one mutant")
    parser.add_argument("--recheck", metavar="JSON",
                        help="check again the mutants a previous --out file lists as survived or hung")
    parser.add_argument("--exact", action="store_true",
                        help="run the plain `duespec check SYSTEM --profile all` for each mutant "
                             "(slower for killed mutants; same verdict)")
    parser.add_argument("--reverse", action="store_true",
                        help="check the chosen mutants last to first: a second process can work "
                             "the same sample from the other end (--summary merges the outputs)")
    parser.add_argument("--skip", type=int, default=0, metavar="N",
                        help="leave out the first N chosen (a third process can start mid-sample)")
    parser.add_argument("--summary", metavar="JSON", nargs="+",
                        help="the kill rate over previous --out files")
    parser.add_argument("--system", choices=sorted(set(FILES.values())),
                        help="only this system's files (the sample is drawn over every file first, "
                             "so the runs for each system together make up the whole sample)")
    parser.add_argument("--file", choices=list(FILES), help="only this file's mutants (e.g. to finish a cut run)")
    args = parser.parse_args(argv)
    everything = [m for file in FILES for m in mutants_of(file)]
    if args.list:
        for file in FILES:
            print(f"{file}: {sum(m.file == file for m in everything)} mutants")
        print(f"total: {len(everything)}")
        return 0
    if args.summary:
        merged = {(v["file"], v["index"]): Verdict(**v) for out in args.summary
                  for v in json.loads(Path(out).read_text(encoding="utf-8"))}
        print(summary(list(merged.values())))
        return 0
    if args.run:
        [mutant] = [m for m in everything if m.file == args.run[0] and m.index == int(args.run[1])]
        verdict = check_mutant(mutant, args.exact)
        print(json.dumps(asdict(verdict), indent=2))
        return 0
    if args.recheck:
        survived = {(v["file"], v["index"]) for v in json.loads(Path(args.recheck).read_text(encoding="utf-8"))
                    if v["outcome"] in ("survived", "hung")}
        chosen = [m for m in everything if (m.file, m.index) in survived]
    else:
        chosen = stratified_sample(everything, args.sample, args.seed) if args.sample else everything
    if args.system:
        chosen = [m for m in chosen if FILES[m.file] == args.system]
    if args.file:
        chosen = [m for m in chosen if m.file == args.file]
    if args.reverse:
        chosen.reverse()
    chosen = chosen[args.skip:]
    verdicts: list[Verdict] = []
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        for future in as_completed([pool.submit(check_mutant, mutant, args.exact) for mutant in chosen]):
            verdict = future.result()
            verdicts.append(verdict)
            print(f"{verdict.outcome:8} {verdict.file}:{verdict.line} "
                  f"#{verdict.index} {verdict.description} ({verdict.seconds:.0f}s)", flush=True)
            # Written as each verdict arrives: a run stopped early keeps what it measured.
            Path(args.out).write_text(json.dumps([asdict(v) for v in verdicts], indent=2) + "\n",
                                      encoding="utf-8")
    print(summary(verdicts))
    print(f"details in {args.out}")
    return 0

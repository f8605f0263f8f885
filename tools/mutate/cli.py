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
from mutate.floor import FLOOR_FILE, judge, read_floors, sample, write_figures
from mutate.independent import HAND_MUTANTS, HandMutant, hand_mutant
from mutate.operators import FILES, Mutant, mutants_of
from mutate.report import summary
from mutate.runner import Verdict, check_mutant, run_in_this_process, stratified_sample


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        index = argv[2] if argv[2].startswith("hand:") else int(argv[2])
        code = run_in_this_process(argv[1], index, argv[3], argv[4] == "exact",
                                   None if argv[5] == "default" else int(argv[5]))
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
    parser.add_argument("--hand", metavar="NAME", nargs="+",
                        help="check hand-written mutants (tools/mutate/independent.py) by name, or `all`")
    parser.add_argument("--floor", choices=("quick", "full"),
                        help="check the floor's fixed sample (tools/mutate/floor.py) and compare its killed "
                             "count with tools/mutation-floor.txt: exit 1, the survivors listed, below it")
    parser.add_argument("--doc", metavar="MD",
                        help="with --floor: write the command and its output into MD's "
                             "`<!-- mutation-floor NAME -->` block (docs/mutation.md's figures)")
    parser.add_argument("--verdicts", metavar="JSON",
                        help="with --floor: judge the verdicts a previous --floor run wrote to --out "
                             "instead of checking again (a run cut short: the checks it did not "
                             "finish count as survivors)")
    parser.add_argument("--campaign-seeds", metavar="SEED", type=int, nargs="+",
                        help="check each mutant with `duespec check --seed SEED`, once per seed "
                             "(default: once, at the campaign's default seed)")
    args = parser.parse_args(argv)
    if (args.doc or args.verdicts) and not args.floor:
        parser.error("--doc and --verdicts go with --floor (quick or full): without it a whole new run would start")
    everything = [m for file in FILES for m in mutants_of(file)]
    if args.list:
        for file in FILES:
            print(f"{file}: {sum(m.file == file for m in everything)} mutants")
        print(f"total: {len(everything)}")
        return 0
    if args.summary:
        merged = {(v["file"], v["index"], v.get("seed"), v.get("hand")): Verdict(**v) for out in args.summary
                  for v in json.loads(Path(out).read_text(encoding="utf-8"))}
        print(summary(list(merged.values())))
        return 0
    if args.run:
        [mutant] = [m for m in everything if m.file == args.run[0] and m.index == int(args.run[1])]
        verdict = check_mutant(mutant, args.exact)
        print(json.dumps(asdict(verdict), indent=2))
        return 0
    if args.floor:
        return check_floor(args.floor, args.workers, args.out, args.doc, args.verdicts)
    chosen: list[Mutant | HandMutant]
    if args.hand:
        unknown = sorted(set(args.hand) - {m.name for m in HAND_MUTANTS} - {"all"})
        if unknown:
            print(f"no hand-written mutant named {', '.join(unknown)}; known: {', '.join(m.name for m in HAND_MUTANTS)}")
            return 2
        chosen = list(HAND_MUTANTS) if args.hand == ["all"] else [hand_mutant(name) for name in args.hand]
    elif args.recheck:
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
    seeds: list[int | None] = list(args.campaign_seeds or [None])
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        for future in as_completed([pool.submit(check_mutant, mutant, args.exact, seed)
                                    for mutant in chosen for seed in seeds]):
            verdict = future.result()
            verdicts.append(verdict)
            print(f"{verdict.outcome:8} {verdict.file}:{verdict.line} "
                  f"#{verdict.hand or verdict.index} {verdict.description} "
                  f"(seed {'default' if verdict.seed is None else verdict.seed}, {verdict.seconds:.0f}s)", flush=True)
            # Written as each verdict arrives: a run stopped early keeps what it measured.
            Path(args.out).write_text(json.dumps([asdict(v) for v in verdicts], indent=2) + "\n",
                                      encoding="utf-8")
    print(summary(verdicts))
    print(f"details in {args.out}")
    return 0


def check_floor(name: str, workers: int, out: str, doc: str | None = None, saved: str | None = None) -> int:
    """Exit 0 when the floor's sample kills at least the committed floor, 1 otherwise (the
    survivors listed), 2 when the floor file or the doc's block cannot be read."""
    try:
        floor = read_floors()[name]
    except (OSError, ValueError, KeyError) as error:
        print(f"mutation floor: cannot read the {name} floor from {FLOOR_FILE}: {error}")
        return 2
    if doc is not None and (not Path(doc).is_file()
                            or f"<!-- mutation-floor {name} -->" not in Path(doc).read_text(encoding="utf-8")):
        print(f"mutation floor: {doc} has no `<!-- mutation-floor {name} -->` block to write the figures into")
        return 2
    checks = sample(name)
    started = time.process_time()
    verdicts: list[Verdict] = []
    unchecked = 0
    if saved is not None:
        verdicts = [Verdict(**v) for v in json.loads(Path(saved).read_text(encoding="utf-8"))]
        wanted = {_check_key(c.mutant, c.seed) for c in checks}
        found = [(v.file, v.hand or str(v.index), v.seed) for v in verdicts]
        if len(set(found)) != len(found) or not set(found) <= wanted:
            print(f"mutation floor: {saved} holds checks that are not the {name} sample's, or one twice")
            return 2
        unchecked, checks = len(wanted) - len(found), []
    else:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for future in as_completed([pool.submit(check_mutant, c.mutant, False, c.seed) for c in checks]):
            verdicts.append(verdict := future.result())
            print(f"{verdict.outcome:8} {verdict.file} #{verdict.hand or verdict.index} "
                  f"(seed {'default' if verdict.seed is None else verdict.seed})", flush=True)
            Path(out).write_text(json.dumps([asdict(v) for v in verdicts], indent=2) + "\n", encoding="utf-8")
    holds, said = judge(name, floor, verdicts, unchecked)
    cpu = sum(v.cpu_seconds or 0 for v in verdicts) + time.process_time() - started
    said = f"{summary(verdicts)}\n{said}\n({len(verdicts)} checks, {cpu:.0f} CPU s)"
    print(said)
    if doc is not None:
        command = f"python tools/mutate_impl.py --floor {name}" + (f" --verdicts {saved}" if saved else "")
        write_figures(Path(doc), name, command, said)
        print(f"figures written into {doc}")
    return 0 if holds else 1


def _check_key(mutant: Mutant | HandMutant, seed: int | None) -> tuple[str, str, int | None]:
    return (mutant.file, mutant.name if isinstance(mutant, HandMutant) else str(mutant.index), seed)

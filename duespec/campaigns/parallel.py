"""A campaign as chunks: many cores (`--jobs N`), many machines (`--shard I/N`).

A campaign of `--examples E` and `--seed S` is a fixed list of chunks of at most
CHUNK_RUNS runs each: chunk 0 is a Hypothesis search seeded with S itself, chunk k > 0
one seeded with a number derived from S and k. The list depends on E and S alone, never
on the jobs or shards, so every way of running it runs the same runs:

- `--jobs N` hands the chunks to N worker processes (concurrent.futures), each with its
  own target instance; their results are merged in chunk order;
- `--shard I/N` runs the chunks k with k mod N = I - 1, and `duespec merge` combines the
  shards' `--json` reports into the report of the whole campaign.

Each chunk searches for divergence classes on its own (its masks are its own, so that no
chunk waits for another). `--max-classes M` ends the campaign at the first chunk k at
which chunks 0..k together found M classes: the chunks after k are not run (or, run by a
worker or shard that could not know, are left out of the result and of `merge`). The merged report lists each class once, with the shortest
counterexample any chunk shrank it to (the earliest chunk's on a tie), in the order the
chunks first found them; runs, steps, coverage and what masks kept from comparison are
summed. A campaign of at most CHUNK_RUNS examples is one chunk seeded S: exactly the
search `duespec check` ran before chunks existed.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import gc
import hashlib
import multiprocessing
import os
import signal
import sys
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable

from duespec.campaigns import database as examples_db
from duespec.campaigns.classes import Masks
from duespec.campaigns.run import CampaignResult, Finding, progress_printer, run_campaign
from duespec.campaigns.stopping import Stopper
from duespec.systems import System, get_system
from duespec.targets.interface import TargetFactory

#: Runs per chunk: small enough that two workers stay busy on a default campaign (200
#: runs, 4 chunks), large enough that a chunk's search is worth its start.
CHUNK_RUNS = 50


class ParallelError(ValueError):
    """--jobs or --shard cannot be honoured as given."""


@dataclass(frozen=True)
class Chunk:
    index: int
    seed: int
    examples: int


def chunk_seed(seed: int, index: int) -> int:
    if index == 0:
        return seed
    digest = hashlib.sha256(f"duespec-chunk\0{seed}\0{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def chunks_of(seed: int, examples: int) -> list[Chunk]:
    """The campaign's chunks: a function of its seed and budget only."""
    count = max(1, -(-examples // CHUNK_RUNS))
    return [Chunk(k, chunk_seed(seed, k), min(CHUNK_RUNS, examples - k * CHUNK_RUNS)) for k in range(count)]


def parse_shard(text: str) -> tuple[int, int]:
    """argparse type for --shard I/N: 1 <= I <= N."""
    index, slash, total = text.partition("/")
    try:
        i, n = int(index), int(total)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected I/N such as 2/4, got {text!r}") from None
    if not slash or n < 1 or not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"expected I/N with 1 <= I <= N, got {text!r}")
    return i, n


def in_shard(index: int, shard: tuple[int, int] | None) -> bool:
    return shard is None or index % shard[1] == shard[0] - 1


def add_parallel_arguments(parser: argparse.ArgumentParser, *, database: bool = True) -> None:
    from duespec.campaigns.run import positive_int

    parser.add_argument("--jobs", type=positive_int, default=1, metavar="N",
                        help="worker processes, each with its own target instance and its own "
                             "chunks of the campaign (default 1)")
    parser.add_argument("--shard", type=parse_shard, metavar="I/N",
                        help="run only shard I of N: a disjoint, deterministic share of the "
                             "campaign; `duespec merge` combines the shards' --json reports")
    parser.add_argument("--json", metavar="FILE", help="write the machine-readable report here "
                                                       "(what `duespec merge` reads)")
    if database:
        parser.add_argument("--database", metavar="WHERE", default=None,
                            help=f"example database: a directory (default {examples_db.DEFAULT_DATABASE}, or "
                                 f"${examples_db.DATABASE_ENV}), "
                                 f"redis://HOST:PORT/N (shared), or none; saved failures are "
                                 f"replayed before new runs")


def copies_allowed(target: str, factory: TargetFactory) -> tuple[int | None, str]:
    """How many instances of a target may run at once (None: any), and why not more.

    A server at a URL is one instance whatever the factory: copies would share its state.
    A Python factory (or class) may say so itself with an attribute `max_copies`."""
    if target.strip().startswith(("http://", "https://")):
        return 1, "it is one server at a URL: copies would reset each other's state"
    for candidate in (factory, getattr(factory, "factory", None)):
        limit = getattr(candidate, "max_copies", None)
        if isinstance(limit, int) and limit >= 1:
            return limit, f"its factory says max_copies = {limit}"
    return None, ""


def effective_jobs(jobs: int, target: str, factory: TargetFactory, say: Callable[[str], None]) -> int:
    limit, why = copies_allowed(target, factory)
    if limit is not None and jobs > limit:
        say(f"--jobs {jobs}: target {target} cannot run {jobs} copies ({why}); running {limit} job"
            f"{'' if limit == 1 else 's'}")
        return limit
    return jobs


@dataclass(frozen=True)
class CampaignSpec:
    """Everything a worker process needs to run chunks of one campaign (picklable)."""

    system: str
    target: str
    timeout: float
    start_timeout: float
    profile: str
    steps: int
    depth: float
    max_classes: int
    declared: str | None = None
    ops: tuple[str, ...] | None = None
    skip_ops: tuple[str, ...] | None = None
    database: str | None = "none"
    #: False: the target has no observe(); its state is read through the system's probes.
    observe: bool = True
    #: Tags every promise and schedule the campaign creates carries (--require-tag).
    request_tags: tuple[tuple[str, str], ...] = ()
    #: False: the target is never reset; each run gets a namespace of its own (--reset none).
    reset: bool = True
    #: The classes known before the campaign (--baseline), masked from its first step.
    baseline: tuple[Any, ...] = ()
    #: Send only requests the spec accepts (--inputs valid).
    valid_only: bool = False
    #: Config keys set over the profile's own for every run (--catch-up), as pairs.
    config: tuple[tuple[str, Any], ...] = ()


# -- one chunk ------------------------------------------------------------------------

def run_chunk(system: System, factory: TargetFactory, spec: CampaignSpec, chunk: Chunk,
              declared: list[Any], scope: Any, database: examples_db.CampaignDatabase | None,
              progress: Any = None, stopper: Any = None, on_finding: Any = None) -> CampaignResult:
    campaign_db = (database.for_campaign(examples_db.identity_of(
        spec.system, spec.profile, spec.target, spec.steps, spec.depth, scope)) if database is not None else None)
    started_at = time.time()  # a clock every process of the machine shares: chunks run in workers
    result = run_campaign(system, factory, profile=spec.profile, seed=chunk.seed, examples=chunk.examples,
                          step_count=spec.steps, declared=declared, max_classes=spec.max_classes,
                          scope=scope, depth=spec.depth, progress=progress, observe=spec.observe,
                          database=campaign_db.bind if campaign_db is not None else None,
                          request_tags=dict(spec.request_tags), stopper=stopper, on_finding=on_finding,
                          reset=spec.reset, baseline=spec.baseline, valid_only=spec.valid_only,
                          config=dict(spec.config))
    mark_chunk(result, chunk.index, campaign_db.stats if campaign_db is not None else None)
    result.started_at = started_at
    return result


def mark_chunk(result: CampaignResult, index: int, stats: examples_db.Stats | None) -> None:
    """Note where each finding came from, so that merging is the same however it is split."""
    result.chunks = [index]
    result.database_stats = stats
    hits = set(stats.hit_searches) if stats is not None else set()
    for position, finding in enumerate(result.findings):
        finding.chunks = [index]
        finding.position = position
        finding.from_database = position in hits


_WORKER: dict[str, Any] = {}


def _worker_chunk(spec: CampaignSpec, chunk: Chunk) -> CampaignResult:
    """In a worker process: resolve the target once per process, then run one chunk."""
    from multiprocessing import util

    from duespec.campaigns.declared import load
    from duespec.campaigns.scope import scope_of
    from duespec.targets.resolve import close_factory, resolve

    key = (spec.system, spec.target, spec.timeout, spec.start_timeout, spec.database)
    if _WORKER.get("key") != key:
        system = get_system(spec.system)
        factory = resolve(system, spec.target, timeout=spec.timeout, start_timeout=spec.start_timeout)
        util.Finalize(None, close_factory, args=(factory,), exitpriority=10)
        _WORKER.update(key=key, system=system, factory=factory,
                       database=examples_db.open_database(spec.database))
    if "stopper" not in _WORKER:
        # The worker's own: SIGTERM or SIGINT (from the parent, or a `timeout` that signals
        # the whole process group) ends its chunk with what it found, and starts no other.
        _WORKER["stopper"] = Stopper()
        _WORKER["signals"] = _WORKER["stopper"].signals()  # kept: the handlers last as long as it
        _WORKER["signals"].__enter__()
    system = _WORKER["system"]
    declared = load(spec.declared, system) if spec.declared else []
    scope = scope_of(system, list(spec.ops) if spec.ops else None, list(spec.skip_ops) if spec.skip_ops else None)
    return run_chunk(system, _WORKER["factory"], spec, chunk, declared, scope, _WORKER["database"],
                     stopper=_WORKER["stopper"])


# -- the campaign ---------------------------------------------------------------------

def run_chunks(system: System, factory: TargetFactory, spec: CampaignSpec, *, seed: int, examples: int,
               jobs: int = 1, shard: tuple[int, int] | None = None, declared: list[Any] = (),  # type: ignore[assignment]
               scope: Any = None, database: examples_db.CampaignDatabase | None = None,
               progress_every: float = 0.0, say: Callable[[str], None] | None = None,
               stopper: Any = None, on_finding: Any = None) -> CampaignResult:
    """Run the campaign's chunks (those of `shard`, if given) on `jobs` processes and merge
    them. With one job every chunk runs here, on `factory`; with more, each worker resolves
    `spec.target` itself. A `stopper` (duespec.campaigns.stopping) that is asked to stop
    cuts the chunk running here short and starts no further chunk; with several jobs, the
    chunks not started are cancelled and those running finish."""
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    every = chunks_of(seed, examples)
    mine = [chunk for chunk in every if in_shard(chunk.index, shard)]
    started, started_at = time.perf_counter(), time.time()
    if jobs > 1 and len(mine) < jobs:
        say(f"--jobs {jobs}: {len(mine)} chunk{'' if len(mine) == 1 else 's'} of at most {CHUNK_RUNS} runs "
            f"to run, so {max(1, len(mine))} worker{'' if len(mine) <= 1 else 's'} (more --examples make more chunks)")
        jobs = max(1, len(mine))
    results: list[CampaignResult] = []
    if jobs <= 1:
        for chunk in mine:
            # a line every progress_every seconds inside each chunk too: a chunk of slow runs
            # must not go minutes without one
            progress = (progress_printer(progress_every, label=f"chunk {chunk.index} ({len(results) + 1} of "
                                                               f"{len(mine)})" if len(mine) > 1 else "")
                        if progress_every > 0 else None)
            results.append(run_chunk(system, factory, spec, chunk, list(declared), scope, database, progress,
                                     stopper, on_finding))
            if progress_every > 0 and len(mine) > 1:
                _chunk_line(say, results[-1], len(results), len(mine), started)
            if cutoff(results, [c.index for c in mine], spec.max_classes) is not None:
                break
            if stopper is not None and stopper.requested:
                break
    else:
        if stopper is not None:
            # The workers search, each with its own stopper; here a signal is only noted and
            # passed on to them, and their chunks come back with what they found.
            stopper.phase = "report"
        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            # Forked workers share this process's objects; frozen, the workers' collections
            # leave them alone (Python's advice for fork without exec). Measured on duebook,
            # a forked worker otherwise spent about a tenth more CPU per step than one job.
            gc.freeze()
            try:
                pending = {pool.submit(_worker_chunk, spec, chunk): chunk for chunk in mine}
            finally:
                gc.unfreeze()
            done_count, told = 0, False
            try:
                while pending:
                    done, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                    if stopper is not None and stopper.requested and not told:
                        told = True
                        for future in pending:
                            future.cancel()
                        for worker in list(getattr(pool, "_processes", None) or {}):  # their chunks end, kept
                            with contextlib.suppress(OSError):
                                os.kill(worker, signal.SIGTERM)
                    for future in done:
                        pending.pop(future)
                        if future.cancelled():
                            continue
                        results.append(future.result())
                        done_count += 1
                        if progress_every > 0:
                            _chunk_line(say, results[-1], done_count, len(mine), started)
                    last = cutoff(results, [c.index for c in mine], spec.max_classes)
                    if last is not None:  # the chunks after it are not needed
                        for future, chunk in list(pending.items()):
                            if chunk.index > last:
                                future.cancel()
            except BaseException:
                for future in pending:
                    future.cancel()
                raise
    last = cutoff(results, [c.index for c in mine], spec.max_classes)
    if last is not None:
        results = [part for part in results if part.chunks[0] <= last]
    results.sort(key=lambda part: part.chunks[0])
    for part in results:  # a chunk's first failure, from the start of the campaign rather than the chunk's
        if part.first_failure_seconds is not None and part.started_at is not None:
            part.first_failure_seconds += max(0.0, part.started_at - started_at)
    merged = combine(results, profile=spec.profile, system=system.name, seed=seed, declared=list(declared),
                     scope=scope, seconds=time.perf_counter() - started)
    merged.total_chunks = len(every)
    merged.shard = shard
    merged.jobs = jobs
    merged.parts = results
    merged.request_tags = dict(spec.request_tags)
    merged.examples_asked = examples
    if stopper is not None and stopper.requested:
        merged.cut_short = stopper.reason
    return merged


def cutoff(parts: list[CampaignResult], order: list[int], max_classes: int) -> int | None:
    """The first chunk (in `order`) at which the chunks up to it, all present, have found
    `max_classes` classes that fail the campaign together (declared and known ones never
    count: a campaign that stopped at one would say HOLDS over chunks it never ran); None
    when there is none yet."""
    by_index = {part.chunks[0]: part for part in parts}
    classes: set[Any] = set()
    for index in order:
        if index not in by_index:
            return None
        classes.update(_class_key(finding) for finding in by_index[index].findings if finding.gates)
        if len(classes) >= max_classes:
            return index
    return None


def _chunk_line(say: Callable[[str], None], result: CampaignResult, done: int, total: int, started: float) -> None:
    say(f"  ... chunk {result.chunks[0]} done ({done} of {total}): {result.examples} runs, "
        f"{result.steps} steps, {len(result.findings)} class{'' if len(result.findings) == 1 else 'es'}, "
        f"{time.perf_counter() - started:.0f}s")


def _class_key(finding: Finding) -> Any:
    return finding.divergence_class if finding.divergence_class is not None else (finding.kind, finding.summary)


def combine(parts: list[CampaignResult], *, profile: str, system: str, seed: int, declared: list[Any] = (),  # type: ignore[assignment]
            scope: Any = None, seconds: float | None = None) -> CampaignResult:
    """One campaign's result from the results of disjoint sets of its chunks.

    Associative and independent of the order of `parts`: a class is listed once, in the
    order of (first chunk that found it, its place there), with the shortest counterexample
    (earliest chunk on a tie); counts are sums."""
    parts = sorted(parts, key=lambda part: min(part.chunks or [0]))
    groups: dict[Any, list[Finding]] = {}
    for part in parts:
        for finding in part.findings:
            groups.setdefault(_class_key(finding), []).append(finding)
    findings: list[Finding] = []
    for same in groups.values():
        first = min(same, key=lambda f: (min(f.chunks), f.position))
        best = min(same, key=lambda f: (len(f.counterexample), min(f.chunks)))
        chosen = copy.copy(best)  # the parts keep their own findings as they were
        chosen.chunks = sorted({c for f in same for c in f.chunks})
        chosen.position = first.position  # its place in chunks[0], the earliest chunk that found it
        chosen.from_database = any(f.from_database for f in same)
        findings.append(chosen)
    findings.sort(key=lambda f: (f.chunks[0], f.position))
    masks = Masks(profile, declared=list(declared))
    coverage: Counter[str] = Counter()
    depths: list[dict[str, int]] = []
    stats: examples_db.Stats | None = None
    stopped = None
    for part in parts:
        coverage.update(part.coverage)
        depths.extend(part.depths)
        if part.masks is not None:
            masks.skipped.update(part.masks.skipped)
            masks.runs_ended.update(part.masks.runs_ended)
            masks.not_sent += part.masks.not_sent
            masks.active.extend(entry for entry in part.masks.active if entry not in masks.active)
        if part.database_stats is not None:
            if stats is None:
                stats = examples_db.Stats(part.database_stats.where)
            stats.add(part.database_stats)
        if part.stopped and stopped is None:
            chunks = part.chunks
            stopped = (f"chunk {chunks[0]}: {part.stopped}" if len(chunks) == 1 and len(parts) > 1
                       else part.stopped)
    masks.found = [f.divergence_class for f in findings if f.divergence_class is not None]
    masks.known = list(parts[0].masks.known) if parts and parts[0].masks is not None else []
    first = next((f for f in findings if f.gates), None)
    firsts = [part.first_failure_seconds for part in parts if part.first_failure_seconds is not None]
    # The first failing run, counted over the chunks in order (the runs of every chunk before).
    earlier, first_run = 0, None
    for part in parts:
        if part.first_failure_run is not None:
            first_run = earlier + part.first_failure_run
            break
        earlier += part.examples
    config = first.config if first else (parts[0].config if parts else {})
    merged = CampaignResult(
        system=system, profile=profile, seed=seed, examples=sum(p.examples for p in parts),
        steps=sum(p.steps for p in parts),
        seconds=seconds if seconds is not None else max((p.seconds for p in parts), default=0.0),
        coverage=coverage, failure=first.failure if first else None,
        counterexample=first.counterexample if first else [], config=config,
        failure_kind=first.kind if first else None, failure_summary=first.summary if first else None,
        findings=findings, masks=masks, scope=scope if scope is not None else (parts[0].scope if parts else None),
        searches=sum(p.searches for p in parts), stopped=stopped, depths=depths,
        namespaced=any(p.namespaced for p in parts),
        first_failure_seconds=min(firsts) if firsts and first else None,
        first_failure_run=first_run if first else None)
    merged.chunks = sorted({c for p in parts for c in p.chunks})
    merged.database_stats = stats
    return merged


def spec_from_args(args: argparse.Namespace, profile: str, observe: bool = True,
                   request_tags: dict[str, str] | None = None, reset: bool = True,
                   baseline: tuple[Any, ...] = ()) -> CampaignSpec:
    from duespec.targets.stdio import START_TIMEOUT

    return CampaignSpec(
        system=args.system, target=args.target, timeout=args.timeout,
        start_timeout=max(args.timeout, START_TIMEOUT), profile=profile, steps=args.steps,
        depth=args.depth, max_classes=args.max_classes, declared=args.declared,
        ops=tuple(args.ops) if args.ops else None, skip_ops=tuple(args.skip_ops) if args.skip_ops else None,
        database=_database_spec(args), observe=observe, request_tags=tuple(sorted((request_tags or {}).items())),
        reset=reset, baseline=baseline, valid_only=getattr(args, "inputs", "all") == "valid",
        config=tuple(sorted(config_over_profile(args).items())))


def config_over_profile(args: argparse.Namespace) -> dict[str, Any]:
    """The config keys a campaign's options set over each profile's own: --catch-up."""
    catch_up = getattr(args, "catch_up", None)
    return {} if catch_up is None else {"catch_up": catch_up}


def _database_spec(args: argparse.Namespace) -> str:
    spec = getattr(args, "database", None)
    if spec is None:
        return examples_db.default_database()
    return spec if "://" in spec or spec.lower() in ("none", "off", "") else os.path.abspath(spec)


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def open_database_of(args: argparse.Namespace) -> examples_db.CampaignDatabase | None:
    """The campaign's example database, or a UsageError naming what is wrong with --database."""
    from duespec.exits import UsageError

    try:
        return examples_db.open_database(_database_spec(args))
    except examples_db.DatabaseError as error:
        raise UsageError(str(error)) from None


def share_lines(result: CampaignResult) -> list[str]:
    """The lines a chunked campaign adds to the report: which share ran, the database."""
    lines = []
    shard, total = result.shard, result.total_chunks
    if shard is not None or total > 1:
        where = f"shard {shard[0]}/{shard[1]}: " if shard is not None else ""
        lines.append(f"{where}chunks {', '.join(map(str, result.chunks)) or 'none'} of {total} "
                     f"(at most {CHUNK_RUNS} runs each), {result.jobs} job{'' if result.jobs == 1 else 's'}")
    if result.database_stats is not None:
        lines.append(result.database_stats.line())
    lines += [f"database hit: {finding.label} (found by replaying a saved example)"
              for finding in result.findings if finding.from_database]
    return lines

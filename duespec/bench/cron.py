"""Cron figures: the compiled evaluator (impl/cron.py) against croniter in the same run.

Every timed answer is also checked: the compiled evaluator and croniter must agree on
every case, or the bench fails rather than report a speed for wrong answers.
1. next fire after an instant, on random in-dialect (expression, instant) cases, against
   croniter's get_next on one reused croniter object per expression.
2. Catch-up: every occurrence over a long outage, `Cron.occurrences` against croniter
   iterating get_next.
3. Compiling an expression against building a croniter object."""

from __future__ import annotations

import random
from typing import Callable

from croniter import croniter

from duespec.bench import Figure, Goal, Sample, alternate, ratio_figure, timed
from duespec.impl import cron as impl
from duespec.spec.cron_dialect import FIELDS, validate

SECTION = "cron"
MINUTE_MS = 60_000
YEAR_2000_MS = 946_684_800_000
YEAR_2100_MS = 4_102_444_800_000
#: Cases of the next-fire figure the compiled evaluator answers a sample, in quick runs too.
FULL_CASES = 100_000
#: Crons people write, beside the random ones.
COMMON = ("* * * * *", "*/5 * * * *", "0 * * * *", "30 9 * * 1-5", "0 0 * * *", "@weekly",
          "0 0 1 * *", "0 0 29 2 *", "0 0 31 * *", "15 2 1,15 * *", "0 0 13 * fri",
          "0 8-18/2 * * mon-fri", "59/15 * * * *", "0 0 1 jan,jul *", "0 12 * * 7")


class Mismatch(AssertionError):
    """The compiled evaluator and croniter disagree on a case: the bench is void."""


def random_field(rng: random.Random, index: int) -> str:
    rule = FIELDS[index]
    if rng.random() < 0.45:
        return "*"
    items = []
    for _ in range(rng.randint(1, 3)):
        first, last = sorted(rng.sample(range(rule.low, rule.top + 1), 2))
        step = rng.randint(1, rule.size)
        items.append(rng.choice((str(first), f"{first}-{last}", f"{first}-{last}/{step}",
                                 f"*/{step}", f"{min(first, rule.high)}/{step}")))
    return ",".join(items)


def random_expressions(rng: random.Random, count: int) -> list[str]:
    """In-dialect expressions: COMMON plus random ones drawn field by field until valid."""
    expressions = list(COMMON)
    while len(expressions) < count:
        candidate = " ".join(random_field(rng, index) for index in range(5))
        try:
            validate(candidate)
        except ValueError:
            continue
        expressions.append(candidate)
    return expressions


def cases(size: int, seed: int = 0) -> list[tuple[str, int]]:
    """(expression, instant): instants uniform over 2000-2100, a third of them on, just
    before or just after a whole minute, where an off-by-one would show."""
    rng = random.Random(seed)
    expressions = random_expressions(rng, 400)
    chosen = []
    for _ in range(size):
        instant = rng.randrange(YEAR_2000_MS, YEAR_2100_MS)
        if rng.random() < 0.33:
            instant = instant - instant % MINUTE_MS + rng.choice((-1, 0, 1))
        chosen.append((rng.choice(expressions), instant))
    return chosen


def croniter_next(iterators: dict[str, croniter]) -> Callable[[str, int], int]:
    def next_fire(expression: str, instant: int) -> int:
        # Fires are whole minutes: strictly after the instant = strictly after its minute.
        start = (instant - instant % MINUTE_MS) // 1000
        return int(iterators[expression].get_next(float, start_time=start)) * 1000
    return next_fire


def compared(what: str, ours: list[int], theirs: list[int], inputs: list) -> None:
    for given, mine, reference in zip(inputs, ours, theirs):
        if mine != reference:
            raise Mismatch(f"{what}: {given!r}: compiled {mine}, croniter {reference}")
    if len(ours) != len(theirs):
        raise Mismatch(f"{what}: compiled gave {len(ours)} answers, croniter {len(theirs)}")


def _side(run: Callable[[], int]) -> Callable[[], Sample]:
    return lambda: timed(run)


def next_fire_figure(size: int) -> Figure:
    """croniter answers `size` cases a sample, the compiled evaluator all of FULL_CASES
    (the first `size` of which are croniter's): quick's 10,000 alone took it 10 ms, a
    sample a timer tick could move, and fit in the core's cache as 100,000 do not. So
    quick and full measure the same thing (0.017 each, in a process of their own)."""
    workload = cases(FULL_CASES)
    expressions = dict.fromkeys(expression for expression, _ in workload)  # each once, not once a case
    iterators = {expression: croniter(expression.strip(), 0) for expression in expressions}
    compiled = {expression: impl.compile_cron(expression) for expression in expressions}
    reference = croniter_next(iterators)
    answers: dict[str, list[int]] = {}

    def run_compiled() -> int:
        answers["compiled"] = [compiled[e].next_after(t) for e, t in workload]
        return len(workload)

    def run_croniter() -> int:
        answers["croniter"] = [reference(e, t) for e, t in workload[:size]]
        return size

    ours, theirs = alternate([_side(run_compiled), _side(run_croniter)])
    compared("next fire", answers["compiled"][:size], answers["croniter"], workload)
    return ratio_figure(SECTION, f"compiled next_after / croniter get_next time, {size:,} cases", ours, theirs,
                        goal=Goal("<=", 0.024), baseline="croniter get_next, one reused object per cron",
                        note=f"answers identical on all {size:,} cases ({len(compiled)} expressions); "
                             f"the compiled side answers {FULL_CASES:,} cases a sample")


def catch_up_figure(days: int) -> Figure:
    """A server down for `days` catches up every tick of a few common crons."""
    start = 1_767_225_600_000  # 2026-01-01T00:00Z
    until = start + days * 86_400_000
    crons = ("*/5 * * * *", "0 * * * *", "30 9 * * 1-5", "*/15 8-18 * * *")
    answers: dict[str, list[int]] = {}

    def run_compiled() -> int:
        answers["compiled"] = [t for cron in crons
                               for t in impl.compile_cron(cron).occurrences(start, until)]
        return len(answers["compiled"])

    def run_croniter() -> int:
        fired = []
        for cron in crons:
            iterator = croniter(cron, start / 1000)
            while (t := int(iterator.get_next(float)) * 1000) <= until:
                fired.append(t)
        answers["croniter"] = fired
        return len(fired)

    ours, theirs = alternate([_side(run_compiled), _side(run_croniter)])
    compared("catch-up", answers["compiled"], answers["croniter"], list(crons))
    return ratio_figure(SECTION, f"compiled occurrences / croniter loop time, {days}-day outage", ours, theirs,
                        baseline="croniter get_next looped over the same window",
                        note=f"{len(answers['compiled']):,} ticks of 4 crons, identical")


def compile_figure() -> Figure:
    expressions = random_expressions(random.Random(1), 300)

    def run_compiled() -> int:
        for expression in expressions:
            impl._compile.__wrapped__(expression)  # past the cache: the real parse
        return len(expressions)

    def run_croniter() -> int:
        for expression in expressions:
            croniter(expression.strip(), 0)
        return len(expressions)

    ours, theirs = alternate([_side(run_compiled), _side(run_croniter)])
    return ratio_figure(SECTION, "compile_cron (uncached) / croniter(expr) time", ours, theirs,
                        baseline="building a croniter object")


def figures(quick: bool) -> list[Figure]:
    return [next_fire_figure(10_000 if quick else FULL_CASES),
            catch_up_figure(7 if quick else 90),
            compile_figure()]

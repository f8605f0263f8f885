"""Is a concurrent history linearizable against the system's reference model?

(About 700 lines in one module: the search, its partitions and the shrinking of a
counterexample share the search's state and its budget.)

A history (docs/histories.md) is linearizable when some order of its calls, each taking
effect at one instant inside its [call, return] interval, makes the model answer every
call as the server did. The search is Wing and Gong's, as Lowe improved it: take, one at
a time, a call that may go next (one called before every pending call returned), step a
copy of the model, keep going if the answer agrees, and back up when none does. A
configuration seen before (the same calls placed, the same model state, the same clock)
is never explored twice: that memo is what makes the search finish on real histories.

Two clocks (docs/linearize.md, "How the search works"):

- `pinned`: each call carried its `now`; the model steps at it.
- `real`: the server read its own clock, at a hidden instant inside the call's
  [call_ms, return_ms]; the clock never goes back. The model's answer can only change at
  an instant some value in the state, the request or the recorded answer names (a
  timeoutAt, a nextRunAt, a createdAt, a lease), so those "critical instants" inside the
  interval, and its two ends, are the only ones tried. The server also fires timeouts in
  the background: the search places a `tick` as an internal step at each due timer, and
  a call may not take effect more than `max_timer_lag` ms after a timer was due while
  that timer is still unfired.

Under the pinned clock the server fires timeouts only when a `tick` is recorded, except
in a file whose format leaves internal steps out (a Resonate valid/ file): there the
search places the tick itself, once a timeout is due and a request pinned at or past
that instant was placed or runs beside it (the server's clock is what its requests
pinned); a call after the tick may still carry an earlier `now`, its request pinned
before the tick's and arriving after it.

A call whose outcome is unknown may have taken effect at any instant after its call, or
never; it is given an unbounded return, and the search is done when every call of known
outcome is placed (the rest never happened, as far as anything recorded can tell).

Partitions: calls whose keys (duespec/systems/concurrent.py) never meet are checked in
separate searches. Why that is sound: when the state is a product of per-key parts and a
call reads and writes only its keys' parts, the model's answer to a call depends on the
calls of its own part only, in their order. A linearization of each part, each call at
an instant inside its interval, then merges into one of the whole history by instant
(ties in recorder order): each call keeps its instant and its part's order, and a call
that returned before another was called gets an instant no later than the other's, so
real-time order holds. Conversely, any linearization of the whole restricts to one of
each part. Under the real clock the merge also keeps the one server clock monotone, since
instants are merged in order. tests/test_linearize.py checks partitioned against
unpartitioned verdicts on generated histories.

A recorded tick reads every key, but its answer says what it fired (Concurrency.touched):
on the pinned clock it goes in every part, compared there on what it fired of that
part's keys (Concurrency.project). Each part places its share of the tick at an instant
of its own inside the tick's interval: a tick is taken as one timeout pass that fires
each id's due timeouts under that id's own lock, as a server's pass does (resonate-pg's
process_timeouts), not as one atomic step across ids, which no client can tell apart.
A tick that fired an id no call (nor a schedule's template) names stays whole, in one part
with everything.
"""

from __future__ import annotations

import bisect
import itertools
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import orjson

from duespec.histories.format import Event, History, collector_paused
from duespec.systems import get_system, model_of
from duespec.systems.concurrent import Concurrency, concurrency_of
from duespec.coverage import isolated
from duespec.judge import FindingKind, answers_agree, cause_of, differs_only_at
from duespec.targets.interface import comparable, same_json

Json = Any

#: How late (ms after its due instant) a real-clock server may fire a timeout by default:
#: `duespec serve --clock real` fires every --tick-ms (default 100 there), and a loaded
#: machine runs late; a second covers both with room to spare.
DEFAULT_MAX_TIMER_LAG = 1000
#: Exit codes of a verdict: 0 linearizable, 1 not, 3 unknown (the budget ran out). 2 is
#: bad input, as for every duespec command.
EXIT_CODES = {"linearizable": 0, "not linearizable": 1, "unknown": 3}
#: Largest counterexample whose minimality is checked call by call (one search per call).
_MAX_PROVED = 24
#: Fewest states a shrinking candidate's quick check may explore (shrink_counterexample).
_QUICK_STATES = 1500
#: Most distinct model states kept for justifying answers (_Search.justification).
_MAX_REACHED = 2000
#: Calls tried as a counterexample's culprit, latest return first (shrink_counterexample).
_CULPRIT_TRIES = 8
#: How often (in search nodes) the budget's deadline is read.
_CLOCK_EVERY = 256
#: Default cap on the memory one search's memo may hold (bytes, as estimated below): past
#: it the verdict is unknown, whatever time is left (docs/linearize.md, "Memory").
DEFAULT_MAX_MEMORY = 512 * 2**20
#: Bytes a visited configuration costs beside its placed-set and its state key: the memo
#: entry (a tuple in a dict), the entries the step made (a promise or task and their
#: values), the model target and the frame that explored it. Measured with tracemalloc
#: (tests/test_linearize.py keeps the estimate above what is really held).
_ENTRY_BYTES = 800
_INF = float("inf")


@dataclass
class Placed:
    """One step of a linearization: a call (its index in the history) or an internal tick."""

    call: int | None
    now: int
    response: dict[str, Json] | None = None

    def to_json(self) -> dict[str, Json]:
        return {"call": self.call, "now": self.now, "tick": self.call is None,
                **({"fired": self.response.get("fired", [])} if self.call is None and self.response else {})}


@dataclass
class Attempt:
    """What the model answers a call that could go next at the stuck point."""

    call: int
    now: int | None
    answer: dict[str, Json] | None
    agrees: bool
    why: str = ""

    def to_json(self) -> dict[str, Json]:
        return {"call": self.call, "now": self.now, "model": self.answer, "agrees": self.agrees,
                **({"why": self.why} if self.why else {})}


@dataclass
class Stuck:
    """Where the deepest linearization found stopped, and why nothing could follow it."""

    prefix: list[Placed]
    #: The call that cannot be placed: of the calls left, the one that returned first.
    call: int
    state: dict[str, Json]
    attempts: list[Attempt]

    def to_json(self) -> dict[str, Json]:
        return {"prefix": [p.to_json() for p in self.prefix], "call": self.call, "state": self.state,
                "attempts": [a.to_json() for a in self.attempts]}


@dataclass
class Counterexample:
    """A smallest non-linearizable sub-history found by shrinking."""

    events: list[Event]
    #: Each event's index in the checked history.
    original: list[int]
    stuck: Stuck
    #: Removing any one call makes it linearizable: every such removal was checked and
    #: decided (False when a check ran out of budget, so minimality is not proved).
    minimal: bool
    checks: int
    #: Each call's role (history index -> why it cannot be removed), from the minimality check.
    roles: dict[int, str] = field(default_factory=dict)
    #: What fails, kept the same while shrinking (None when the shrink could not name it).
    violation: Violation | None = None

    def to_json(self) -> dict[str, Json]:
        return {"events": [e.to_json() for e in self.events], "original": self.original,
                "stuck": self.stuck.to_json(), "minimal": self.minimal, "checks": self.checks,
                "roles": {str(k): v for k, v in self.roles.items()},
                "violation": self.violation.to_json() if self.violation else None}


#: Violation kinds: the culprit's recorded answer is one the model gives at some state a
#: legal order of the other calls reaches, but in no order that also places it here; or
#: one the model gives at no reachable state at all.
NO_ORDER, NEVER_GIVEN = "no order gives it", "never given"


@dataclass(frozen=True)
class Violation:
    """Which failure a counterexample shows: its culprit, a call whose answer no order of
    the others explains (of the shortest failing prefix in return order, the call returned
    last without which the other calls linearize), and its kind.

    A sub-history shows the same violation when it keeps the culprit, the calls other than
    the culprit linearize, the culprit's answer is of the same kind, and every call's
    answer stays justified (shrink_counterexample). Removing a call that justifies
    others (the create before two acquires) makes one of those fail first, or unjustified:
    a different violation, so that call is not removable."""

    culprit: int
    kind: str

    def to_json(self) -> dict[str, Json]:
        return {"culprit": self.culprit, "kind": self.kind}


@dataclass
class Verdict:
    status: str
    system: str
    clock: str
    config: dict[str, Json]
    events: int
    partitions: int
    #: Partitions decided linearizable, of `partitions`.
    decided: int
    #: Search nodes visited (configurations of placed calls, model state and clock).
    states: int
    seconds: float
    max_timer_lag: int
    #: Under unknown: the most calls any search managed to place, and in how large a part.
    progress: tuple[int, int] | None = None
    #: Under unknown, what stopped the search: "budget" (time) or "memory" (--max-memory).
    limit: str | None = None
    #: The memory cap each search had (bytes).
    max_memory: int = DEFAULT_MAX_MEMORY
    counterexample: Counterexample | None = None
    history_events: list[Event] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def to_json(self) -> dict[str, Json]:
        return {"status": self.status, "exit_code": self.exit_code, "system": self.system,
                "clock": self.clock, "config": self.config, "events": self.events,
                "partitions": self.partitions, "decided": self.decided, "states": self.states,
                "seconds": round(self.seconds, 6), "max_timer_lag": self.max_timer_lag,
                "progress": list(self.progress) if self.progress else None, "limit": self.limit,
                "max_memory": self.max_memory,
                "counterexample": self.counterexample.to_json() if self.counterexample else None,
                "notes": self.notes}


def applies_to_answers(entry: Any) -> bool:
    """A declared difference a history's check applies: one of answers that masks its path
    (a history records no states nor messages; an `unordered` entry is not applied)."""
    return entry.where == FindingKind.RESPONSE and not entry.unordered


class _Budget:
    """Seconds for a run of searches, the memory cap each of them has (bytes), and what
    every one of them takes as given: whether the server fired timeouts by itself, and
    the declared differences."""

    def __init__(self, seconds: float | None, max_memory: float = DEFAULT_MAX_MEMORY, background: bool = False,
                 declared: Sequence[Any] = ()):
        self.deadline = _INF if seconds is None else time.monotonic() + seconds
        self.spent = seconds is not None and seconds <= 0
        self.max_memory = max_memory
        #: Whether the pinned-clock searches it runs place the server's own timeouts.
        self.background = background
        #: Declared differences (duespec.campaigns.declared.Declared) of answers: an answer
        #: that differs from the model's only at paths they name for its op is the model's.
        self.declared = tuple(entry for entry in declared if applies_to_answers(entry))

    def out(self) -> bool:
        if not self.spent and time.monotonic() >= self.deadline:
            self.spent = True
        return self.spent


@dataclass
class _Result:
    status: str
    states: int
    best: list[Placed]
    #: (state observed, model target) at the end of the best prefix
    best_target: Any = None


#: The last history `_pinned_clock` read, with its answer: every part of one history asks of
#: the same whole (a 50,000-call history cut in 1,000 parts sorted it 1,000 times: 90 s).
_CLOCK_OF: list[tuple[list[Event], list[int], list[int]]] = []


def _pinned_clock(events: list[Event]) -> tuple[list[int], list[int]]:
    """The calls' invocation instants in order, and the latest `now` any had pinned by each."""
    if _CLOCK_OF and _CLOCK_OF[0][0] is events:
        return _CLOCK_OF[0][1], _CLOCK_OF[0][2]
    pinned = sorted((e.call_ns, e.now) for e in events if type(e.now) is int)
    invoked = [call_ns for call_ns, _ in pinned]
    reached = list(itertools.accumulate((now for _, now in pinned), max))
    _CLOCK_OF[:] = [(events, invoked, reached)]
    return invoked, reached


class _Search:
    """One WGL search over one part of a history (its calls sorted by call instant)."""

    def __init__(self, events: list[Event], indices: list[int], system: str, config: dict[str, Json],
                 clock: str, max_timer_lag: int, budget: _Budget, max_memory: float = _INF,
                 background: bool = False, among: list[Event] | None = None):
        order = sorted(range(len(events)), key=[e.call_ns for e in events].__getitem__)  # stable: ties in order
        self.events = [events[i] for i in order]
        self.indices = [indices[i] for i in order]
        self.system, self.config, self.clock, self.lag, self.budget = system, config, clock, max_timer_lag, budget
        self.hooks: Concurrency = concurrency_of(system)
        #: Pinned clock: the server fired due timeouts by itself where the history does not
        #: say (a Resonate valid/ file leaves internal steps out), so the search places them.
        self.background = background and clock == "pinned" and self.hooks.tick is not None
        self.factory = model_of(system)
        if self.background:
            # The server's clock is what any request pinned, this part's or another's: the
            # whole history's calls by invocation, with the latest `now` invoked so far.
            self.invoked_ns, self.clock_reached = _pinned_clock(among or self.events)
            unknown = sorted((e.call_ns, e.now) for e in self.events if e.outcome != "ok" and type(e.now) is int)
            self.unknown_invoked_ns = [call_ns for call_ns, _ in unknown]
            self.unknown_nows = [now for _, now in unknown]
        n = len(self.events)
        self.call_ns = [e.call_ns for e in self.events]
        self.ret_ns = [e.return_ns if e.outcome == "ok" else _INF for e in self.events]
        self.lo_ms = [e.call_ms for e in self.events]
        self.hi_ms = [e.return_ms if e.outcome == "ok" else _INF for e in self.events]
        self.full = (1 << n) - 1
        # Unknown outcomes: never needed in a linearization (unplaced is "never happened").
        self.unknown = [i for i in range(n) if self.events[i].outcome != "ok"]
        self.is_unknown = [e.outcome != "ok" for e in self.events]
        self.first_ok = next((i for i in range(n) if not self.is_unknown[i]), n)
        # The smallest return (ms) of the calls from i on: bounds a real-clock step's instant.
        self.suffix_hi: list[float] = [_INF] * (n + 1)
        for i in range(n - 1, -1, -1):
            self.suffix_hi[i] = min(self.hi_ms[i], self.suffix_hi[i + 1])
        self.states = 0
        #: The memo's estimated size (bytes) and its cap; "memory" in `limit` when it stopped the search.
        self.memory, self.max_memory = 0, max_memory
        self.limit: str | None = None
        #: A cap on states explored (shrinking's quick checks); past it the search is unknown.
        self.max_states: float = _INF
        self._instants: dict[bytes, list[int]] = {}
        # Instants any call of this part names: one call's hidden `now` may show only in
        # another's answer (a stored createdAt, read back by a later get).
        self._named = sorted({t for e in self.events for v in (e.args, e.response) for t in _scalars(v, int)}
                             ) if clock == "real" else []
        # Recorded ticks: compared by what they fired on this part's keys (part_keys), each
        # projected once (projected_calls).
        projected = projected_calls(self.events, self.hooks, clock)
        self.part_keys = part_keys(self.events, self.hooks, projected, among)
        self.recorded_part = {i: self.hooks.project(self.events[i].op, self.events[i].response, self.part_keys)
                              for i in projected if self.hooks.project is not None}

    def fresh(self) -> Any:
        target = self.factory()
        target.reset(self.config)
        return target

    def key(self, target: Any) -> Any:
        if self.hooks.state_key is not None:
            return self.hooks.state_key(target)
        return orjson.dumps(target.observe())

    def internal_step(self, target: Any, now: int) -> tuple[Any, dict[str, Json]]:
        """A fork of `target` after the server's own step at `now` (a tick: every timeout
        due by then fires), and what it fired. The one place an internal step reaches
        the model, apart from the calls."""
        fork = self.hooks.fork(target)
        return fork, fork.step(self.hooks.tick, {}, now)

    def step(self, target: Any, i: int, now: int) -> tuple[Any, dict[str, Json] | None, bool]:
        """A fork of `target` after call i at `now`, the model's answer, and whether it agrees."""
        fork = self.hooks.fork(target)
        event = self.events[i]
        try:
            answer = fork.step(event.op, event.args, now)
        except Exception as error:  # a model limit (a catch-up too long): this order is refused
            return fork, {"error": f"{type(error).__name__}: {error}"}, False
        if i in self.recorded_part:  # a recorded tick: what it fired on this part's keys
            assert self.hooks.project is not None
            return fork, answer, same_json(self.hooks.project(event.op, answer, self.part_keys), self.recorded_part[i])
        # The judge's comparison, as every sequential check makes it.
        agrees = (event.outcome != "ok" or answers_agree(answer, event.response)
                  or bool(self.budget.declared) and self.declared_only(target, event, answer, now))
        return fork, answer, agrees

    def declared_only(self, target: Any, event: Event, answer: Json, now: int) -> bool:
        """Whether the recorded answer differs from the model's only where a declared
        difference says it may, as a campaign masks it: at the paths an entry names for
        this op, the step reaching its requirement (the model's branch, taken again on a
        fork of its own to read it), in the history's profile."""
        profile = str(self.config.get("profile", ""))
        entries = [entry for entry in self.budget.declared if entry.op in (None, event.op)]
        if not entries or type(answer) is not dict:
            return False
        with isolated() as tags:
            self.hooks.fork(target).step(event.op, event.args, now)
        cause = cause_of(tags)
        return differs_only_at(answer, event.response, lambda path: any(
            entry.matches(FindingKind.RESPONSE, event.op, cause, path, profile) for entry in entries))

    def frontier(self, placed: int) -> tuple[int, frozenset[int], int]:
        """The placed calls (bit i: call i) as the search keeps them: the first call of
        known outcome not placed (`lo`), the calls of known outcome placed after it (a
        few: at most those that overlap it), and the unknown outcomes placed (bit p: the
        p-th of them). Its size follows the history's concurrency, not its length, so a
        step and a memo entry cost the same at the 10th call and at the 10,000th."""
        n = len(self.events)
        lo = next((i for i in range(n) if not self.is_unknown[i] and not placed >> i & 1), n)
        extra = frozenset(i for i in range(lo + 1, n) if not self.is_unknown[i] and placed >> i & 1)
        return lo, extra, sum(1 << p for p, u in enumerate(self.unknown) if placed >> u & 1)

    def place(self, lo: int, extra: frozenset[int], i: int) -> tuple[int, frozenset[int]]:
        """The frontier after placing call i (of known outcome)."""
        if i != lo:
            return lo, extra | {i}
        lo += 1
        n, is_unknown = len(self.events), self.is_unknown
        while lo < n and (is_unknown[lo] or lo in extra):
            if lo in extra:
                extra = extra - {lo}
            lo += 1
        return lo, extra

    def window(self, placed: int) -> list[int]:
        """Calls that may go next: unplaced ones called before every unplaced call returned."""
        return self._window(*self.frontier(placed))[0]

    def _window(self, lo: int, extra: frozenset[int], unknowns: int) -> tuple[list[int], float]:
        """The window, and the smallest return (ms) of the calls left (a real-clock bound).

        The scan starts at the first unplaced call of known outcome (every call before it
        is placed or may never happen) and stops at the first call made after the window's
        bound: no call after that one can have been placed (it was never in a window), so
        the rest of the history bounds the return by its suffix minimum. Unknown outcomes
        never bound the window (they never returned) and join it once called."""
        call_ns, ret_ns, hi_ms, is_unknown, n = self.call_ns, self.ret_ns, self.hi_ms, self.is_unknown, len(self.events)
        out, bound, end, min_hi = [], _INF, n, _INF
        for i in range(lo, n):
            if call_ns[i] > bound:
                end = i
                break
            if is_unknown[i] or i in extra:
                continue
            out.append(i)
            if ret_ns[i] < bound:
                bound = ret_ns[i]
            if hi_ms[i] < min_hi:
                min_hi = hi_ms[i]
        window = [i for i in out if call_ns[i] <= bound] if len(out) > 1 else out
        for p, u in enumerate(self.unknown):
            if call_ns[u] > bound:
                break
            if not unknowns >> p & 1:
                window.append(u)
        return window, min(min_hi, self.suffix_hi[end])

    def instants(self, target: Any, key: bytes, i: int, clock: float, hi: float) -> list[int]:
        """Under the real clock, the instants worth trying for call i: its earliest possible
        one, its latest, and every value the state or any call of the part names in between."""
        lo = max(clock, self.lo_ms[i])
        if lo > hi:
            return []
        named = self._instants.get(key)
        if named is None:
            named = self._instants[key] = sorted(set(_scalars(target.observe(), int)))
        lo = int(lo)
        out = {lo}
        if hi != _INF:
            out.add(int(hi))
        out.update(t for t in named if lo < t <= hi)
        start = bisect.bisect_right(self._named, lo)
        end = len(self._named) if hi == _INF else bisect.bisect_right(self._named, hi)
        out.update(self._named[start:end])
        return sorted(out)

    def tick_instants(self, target: Any, key: bytes, window: list[int], first: int, last: float) -> list[int]:
        """The instants after `first`, up to `last`, worth a background tick: the ends of
        the intervals of the calls that may go next, and every instant the state or a
        call of the part names."""
        named = self._instants.get(key)
        if named is None:
            named = self._instants[key] = sorted(set(_scalars(target.observe(), int)))
        out = {t for i in window for t in (self.lo_ms[i], self.hi_ms[i]) if first < t <= last}
        out.update(t for t in named if first < t <= last)
        start = bisect.bisect_right(self._named, first)
        end = len(self._named) if last == _INF else bisect.bisect_right(self._named, last)
        out.update(self._named[start:end])
        return sorted(int(t) for t in out)

    def choices(self, placed: int, target: Any, key: Any, clock: float) -> Iterator[tuple[int | None, int]]:
        """What may go next after the calls of `placed` (bit i: call i), at `clock`."""
        return self._choices(self.frontier(placed), target, key, clock)

    def _choices(self, frontier: tuple[int, frozenset[int], int], target: Any, key: Any,
                 clock: float) -> Iterator[tuple[int | None, int]]:
        window, min_hi = self._window(*frontier)
        if self.clock == "pinned":
            # Each call steps at its own `now`; `clock` is the latest `now` placed so far,
            # the furthest the server's clock is known to have gone.
            for i in window:
                yield i, self.events[i].now
            if self.background:
                yield from self.background_steps(target, window, clock)
            return
        due = self.hooks.next_timer(target.observe()) if self.hooks.tick else None
        for i in window:
            for now in self.instants(target, key, i, clock, min(self.hi_ms[i], min_hi)):
                if due is not None and now > due + self.lag:
                    break  # a timer due that long ago has fired: a tick must come first
                yield i, now
        if due is not None:
            # The background tick, at any critical instant of [due, due + lag] that no
            # unplaced call's return has passed: when it is due (or the clock, if later),
            # and where a call's interval ends or a value names an instant, since the
            # tick's own `now` (a lease fired late re-arms its retry from then) matters
            # only relative to those.
            first, last = int(max(due, clock)), min(due + self.lag, min_hi)
            if first <= last:
                yield None, first
                yield from ((None, t) for t in self.tick_instants(target, key, window, first, last))

    def background_steps(self, target: Any, window: list[int], latest: float) -> Iterator[tuple[None, int]]:
        """Under the pinned clock, where a timeout is due and the server's clock may have
        reached it: the server's own tick at the instant it is due, and at each later
        `now` of a call placed or that may go next (a tick's own instant matters: a lease
        fired late re-arms its retry from then). A pinned server's clock is what its
        requests pinned, so a tick at `t` needs a request of a `now` at or past `t` placed
        before it or running beside it (`latest`, the window), or one of another part (or
        left out of the file, as an exported history leaves the ticks out) invoked before
        a call of the window returned: a firing a call observes before any request could
        have moved the clock there (a lease cut short) still fails. A call after the tick
        may still carry an earlier `now` (its request was pinned before the tick's and
        arrived after it), as in the recorded history."""
        due = self.hooks.next_timer(target.observe())
        if due is None:
            return
        instants = {self.events[i].now for i in window}
        instants.add(int(latest))
        last_return = max(self.ret_ns[i] for i in window) if window else None
        invoked = bisect.bisect_left(self.invoked_ns, last_return) if window else 0
        if invoked:
            instants.add(self.clock_reached[invoked - 1])
            # Each unknown outcome of the part invoked by then may have reached the server,
            # its `now` with it (the search's clock leaves them out: see run).
            instants.update(self.unknown_nows[:bisect.bisect_left(self.unknown_invoked_ns, last_return)])
        if max(instants) < due:
            return
        yield None, int(due)
        yield from ((None, t) for t in sorted(instants) if t > due)

    def run(self) -> _Result:
        root = self.fresh()
        clock0: float = -_INF if self.clock == "real" else 0
        # The memo: (calls of known outcome placed, state, clock) -> the sets of unknown
        # outcomes placed with it. A configuration is explored only when no earlier one
        # with the same calls, state and clock placed a subset of its unknown outcomes:
        # an unknown outcome left unplaced may still happen or never, so fewer placed is
        # at least as free (without it, n unknown settles that change nothing would make
        # 2^n configurations of one state).
        seen: dict[tuple[int, frozenset[int], Any, float], Any] = {}
        root_key = self.key(root)
        n, any_unknown, is_unknown = len(self.events), bool(self.unknown), self.is_unknown
        position = {u: p for p, u in enumerate(self.unknown)}
        root_frontier = (self.first_ok, frozenset(), 0)
        # (state, call or None for an internal step, now) -> (fork, answer, agrees, fork's key)
        steps: dict[tuple[Any, int | None, int], tuple[Any, Any, bool, Any]] = {}
        seen[(self.first_ok, frozenset(), root_key, clock0)] = [0] if any_unknown else None
        # frame: (frontier, target, key, clock, iterator of choices)
        stack = [(root_frontier, root, root_key, clock0, self._choices(root_frontier, root, root_key, clock0))]
        # (call's history index or None for an internal step, now, answer): made Placed
        # only for the prefixes a result keeps.
        path: list[tuple[int | None, int, Any]] = []
        # The deepest prefix (most calls placed): its length in `path`, copied out of
        # `path` only when the search backs up from it or stops (a copy at every new
        # depth would cost the history's length at every step).
        best: list[tuple[int | None, int, Any]] = []
        best_target = root
        best_length, best_copied = 0, True
        count_placed = 0
        best_count = -1
        key_bytes = sys.getsizeof(root_key) + sys.getsizeof(frozenset())
        tick_count = 0
        self.reached = reached = {root_key: (root, clock0)}
        # The methods every step calls, bound once (a lookup on self at every step adds up).
        step, key_of, choices_of, place, indices = self.step, self.key, self._choices, self.place, self.indices
        real_clock, background = self.clock == "real", self.background
        while stack:
            frontier, target, key, clock, choices = stack[-1]
            if frontier[0] == n:
                return _Result("linearizable", self.states, _placed(path), target)
            tick_count += 1
            if tick_count >= _CLOCK_EVERY:
                tick_count = 0
                stop = self.memory > self.max_memory or self.budget.out() or self.states > self.max_states
                if stop:
                    self.limit = "memory" if self.memory > self.max_memory else None
                    return _Result("unknown", self.states, _placed(best if best_copied else path[:best_length]),
                                   best_target)
            choice = next(choices, False)
            if choice is False:
                if not best_copied:
                    best, best_copied = path[:best_length], True
                stack.pop()
                if path:
                    gone = path.pop()
                    if gone[0] is not None:
                        count_placed -= 1
                continue
            i, now = choice
            lo, extra, unknowns = frontier
            # A call tried again at a state it was tried at (a read changes nothing, so
            # the calls beside it meet the same state again) gives what it gave then.
            step_key = (key, i, now)
            done = steps.get(step_key)
            if done is None:
                if i is None:
                    fork, answer = self.internal_step(target, now)
                    agrees = True
                else:
                    fork, answer, agrees = step(target, i, now)
                new_key = key_of(fork) if agrees else None
                steps[step_key] = (fork, answer, agrees, new_key) if agrees else (None, answer, False, None)
                self.memory += _ENTRY_BYTES
            else:
                fork, answer, agrees, new_key = done
            if not agrees:
                continue
            if i is not None:
                if is_unknown[i]:
                    unknowns |= 1 << position[i]
                else:
                    lo, extra = place(lo, extra, i)
            if real_clock:
                new_clock = now
            elif background:
                # The latest `now` of the calls of known outcome placed: when a tick may come.
                # An unknown outcome's `now` is offered to ticks by its invocation instead
                # (background_steps), so that configurations differing only in which unknown
                # outcomes were placed meet in the memo (40 unknown settles at 40 instants
                # would otherwise make 2^40 of them).
                new_clock = clock if i is None or now <= clock or is_unknown[i] else now
            else:  # pinned, every tick recorded: the clock plays no part
                new_clock = clock
            memo = (lo, extra, new_key, new_clock)
            if any_unknown:
                earlier = seen.get(memo)
                if earlier is not None and any(not u & ~unknowns for u in earlier):
                    continue
                if earlier is None:
                    seen[memo] = [unknowns]
                else:
                    earlier.append(unknowns)
            else:
                size = len(seen)
                seen[memo] = None  # (one hash of the key, not two: `in`, then the insert)
                if len(seen) == size:
                    continue  # seen before
            self.states += 1
            if not self.states & 63:
                # sampled: the states and frontiers of one search are alike in size
                key_bytes = sys.getsizeof(new_key) + sys.getsizeof(extra)
            self.memory += _ENTRY_BYTES + key_bytes
            if len(reached) < _MAX_REACHED:
                reached.setdefault(new_key, (fork, new_clock))
            path.append((None if i is None else indices[i], now, answer))
            if i is not None:
                count_placed += 1
                if count_placed > best_count:
                    best_count, best_length, best_copied, best_target = count_placed, len(path), False, fork
            new_frontier = (lo, extra, unknowns)
            stack.append((new_frontier, fork, new_key, new_clock, choices_of(new_frontier, fork, new_key, new_clock)))
        return _Result("not linearizable", self.states, _placed(best if best_copied else path[:best_length]),
                       best_target)

    def justification(self, need: dict[int, int] | None = None) -> dict[int, int] | None:
        """How well the model can give each call's recorded answer, at any model state the
        search reached (after run()), ignoring the order the history imposes on the call:
        FULL for the whole answer, else how many of its leaves (path and value) agree at
        best. A counterexample is faithful to the history it was shrunk from when no call's
        level drops (shrink_counterexample).

        With `need` (history index -> level), stop at the first call that cannot reach its
        level (None) and scan each call's states only until it reaches it: shrinking asks
        only "does any level drop", and most candidates fail at once."""
        levels: dict[int, int] = {}
        for i, event in enumerate(self.events):
            index = self.indices[i]
            if event.outcome != "ok":
                levels[index] = FULL
                continue
            goal = FULL if need is None else need.get(index, 0)
            recorded = _leaves(comparable(event.response))
            level = 0
            for key, (target, _) in self.reached.items():
                if level >= goal:
                    break
                if self.clock == "pinned":
                    instants = [event.now]
                else:
                    instants = self.instants(target, key, i, -_INF, self.hi_ms[i])
                for now in instants:
                    _, answer, agrees = self.step(target, i, now)
                    if agrees:
                        level = FULL
                        break
                    if isinstance(answer, dict):
                        got = _leaves(comparable(answer))
                        level = max(level, sum(1 for path, value in recorded.items()
                                               if path in got and same_json(got[path], value)))
            if need is not None and level < goal:
                return None
            levels[index] = level
        return levels

    def stuck(self, result: _Result) -> Stuck:
        """The deepest prefix, the call that returned first of those left, and what the
        model answers each call that could go next there (at its earliest instant)."""
        placed_idx = {p.call for p in result.best if p.call is not None}
        local = {g: l for l, g in enumerate(self.indices)}
        placed = 0
        for g in placed_idx:
            placed |= 1 << local[g]
        target = result.best_target if result.best_target is not None else self.fresh()
        left = [i for i in range(len(self.events)) if not placed >> i & 1]
        if not left:  # the search was stopped, not stuck; nothing is blocked
            return Stuck(result.best, -1, target.observe(), [])
        blocked = min(left, key=lambda i: (self.ret_ns[i], i))
        clock = max((p.now for p in result.best), default=-_INF) if self.clock == "real" else 0
        attempts = []
        for i in self.window(placed):
            if self.clock == "pinned":
                now: int | None = self.events[i].now
            else:
                lo = max(clock, self.lo_ms[i])
                now = int(lo) if lo <= self.hi_ms[i] else None
            if now is None:
                attempts.append(Attempt(self.indices[i], None, None, False,
                                        "its interval ended before the clock of the prefix"))
                continue
            _, answer, agrees = self.step(target, i, now)
            attempts.append(Attempt(self.indices[i], now, answer, agrees))
        return Stuck(result.best, self.indices[blocked], target.observe(), attempts)


def _placed(steps: list[tuple[int | None, int, Any]]) -> list[Placed]:
    return [Placed(call, now, answer) for call, now, answer in steps]


#: The justification level of an answer the model gives whole (more than any leaf count).
FULL = 1 << 30


def _leaves(value: Json, prefix: str = "") -> dict[str, Json]:
    """A JSON value as {path: leaf} (lists by position), to count how much of two answers agree."""
    if isinstance(value, dict) and value:
        out: dict[str, Json] = {}
        for key, item in value.items():
            out.update(_leaves(item, f"{prefix}.{key}"))
        return out
    if isinstance(value, list) and value:
        out = {}
        for n, item in enumerate(value):
            out.update(_leaves(item, f"{prefix}[{n}]"))
        return out
    return {prefix: value}


def _scalars(value: Json, kind: type) -> Iterator[Any]:
    """Every value of exactly `kind` in a JSON value (keys left out; `int` takes no bools)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if type(v) is kind:
            yield v
        elif type(v) is dict:
            stack.extend(v.values())
        elif type(v) is list:
            stack.extend(v)


def projected_calls(events: list[Event], hooks: Concurrency, clock: str) -> set[int]:
    """The calls that touch every key but whose recorded answer says which keys they
    changed (a tick and what it fired: Concurrency.project), on the pinned clock. In a
    partitioned check each is split: one call per part, each with its share of the
    answer, taking effect at its own instant inside the call's interval (docs/linearize.md,
    "Ticks"). Under the real clock only those that touched nothing (a search answered
    without reading): a recorded tick stays in one part with all."""
    if hooks.project is None or hooks.touched is None:
        return set()
    # `touched` first: it says None at once for any call but a tick or a search, and this
    # runs over the whole history for every part.
    return {i for i, e in enumerate(events)
            if e.outcome == "ok" and (touched := hooks.touched(e.op, e.response)) is not None
            and (clock == "pinned" or not touched) and hooks.keys(e.op, e.args) is None}


def part_keys(events: list[Event], hooks: Concurrency, projected: set[int],
              among: list[Event] | None = None) -> frozenset[str] | None:
    """The keys a part's recorded ticks are compared on: every key its other calls name,
    and the keys links join to them. `among`: the (sub)history partitions() cut this part
    from, when it cut it into several (a tick's other keys are other parts'); else, as for
    one part with everything, None (all of what fired) when a tick fired a key no call
    names."""
    if not projected:
        return None
    assert hooks.touched is not None
    calls = [(e.op, e.args) for i, e in enumerate(events) if i not in projected]
    touched = frozenset(k for i in projected for k in hooks.touched(events[i].op, events[i].response) or ())
    keys = {k for op, args in calls for k in (hooks.keys(op, args) or ())}
    keys.update(k for pair in hooks.links(calls, touched) for k in pair)
    if among is None and any(not (hooks.touched(events[i].op, events[i].response) or frozenset()) <= keys
                             for i in projected):
        return None
    return frozenset(keys)


def partitions(events: list[Event], hooks: Concurrency, clock: str = "real") -> list[list[int]]:
    """Indices of the events in each independent part (union of keys that meet), in
    history order; one part for all when some call may touch every key, except the
    projected calls of a pinned history (projected_calls), which go in every part."""
    everywhere = projected_calls(events, hooks, clock)
    parent: dict[str, str] = {}

    def find(k: str) -> str:
        while parent.setdefault(k, k) != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb

    keys = []
    for n, e in enumerate(events):
        if n in everywhere:
            keys.append(frozenset())
            continue
        k = hooks.keys(e.op, e.args)
        if k is None:
            return [list(range(len(events)))] if events else []
        keys.append(k)
    for i, k in enumerate(keys):
        if i in everywhere:
            continue
        if not k:
            k = keys[i] = frozenset({f"#call{i}"})  # refused unread: a part of its own
        first = next(iter(k))
        for other in k:
            union(first, other)
    touched = frozenset(k for i in everywhere for k in hooks.touched(events[i].op, events[i].response) or ()
                        ) if hooks.touched is not None else frozenset()
    for a, b in hooks.links([(e.op, e.args) for i, e in enumerate(events) if i not in everywhere], touched):
        union(a, b)
    groups: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        if i not in everywhere:
            groups.setdefault(find(next(iter(k))), []).append(i)
    if not everywhere:
        return sorted(groups.values(), key=lambda g: g[0])
    if any(k not in parent for k in touched):
        return [list(range(len(events)))]  # a tick changed a key no call names: no part to check it in
    assert hooks.touched is not None
    out = []
    for root, group in groups.items():
        # A tick that returned before the part's first call was made found the part as a
        # reset left it, with no timeout to fire: it fired none of its keys, or the part
        # is checked with it.
        first = min(events[i].call_ns for i in group)
        out.append(sorted(group + [i for i in everywhere if events[i].return_ns >= first or any(
            find(k) == root for k in hooks.touched(events[i].op, events[i].response) or ())]))
    return sorted(out, key=lambda g: g[0]) or [sorted(everywhere)]


def _decide(events: list[Event], indices: list[int], system: str, config: dict[str, Json], clock: str,
            lag: int, budget: _Budget, max_states: float = _INF,
            among: list[Event] | None = None) -> tuple[_Result, _Search]:
    """`among`: the history partitions() cut these events from, if it cut it in several."""
    search = _Search(events, indices, system, config, clock, lag, budget, budget.max_memory, budget.background,
                     among)
    search.max_states = max_states
    if budget.out():
        return _Result("unknown", 0, []), search
    with collector_paused():
        return search.run(), search


def _config_of(history: History, profile: str | None) -> dict[str, Json]:
    config = dict(history.header.config)
    if profile is not None:
        system = get_system(history.header.system)
        if profile not in system.profiles:
            raise ValueError(f"{history.header.system} has no profile {profile!r}; "
                             f"known: {', '.join(system.profiles)}")
        config.update(system.config(profile))
        config["profile"] = profile
    return config


#: The header's `meta.source_format` of a history read from a file whose format leaves the
#: server's internal steps out (duespec.histories.resonate_valid.FORMAT).
_FORMATS_WITHOUT_INTERNAL_STEPS = frozenset({"resonate-valid"})


def timers_left_out(history: History) -> bool:
    """Whether the server may have fired timeouts the history does not show, so that the
    search must place them: under the real clock always (the server's own loop), under
    the pinned clock when the file's format leaves internal steps out (a Resonate valid/
    trace: its ticks are the checker's to place). A duespec history under the pinned clock
    records every tick its server got, and a pinned duespec serve fires nothing else."""
    return history.header.clock == "real" or history.header.meta.get("source_format") in _FORMATS_WITHOUT_INTERNAL_STEPS


def check_history(history: History, *, profile: str | None = None, budget: float | None = None,
                  max_timer_lag: int = DEFAULT_MAX_TIMER_LAG, partition: bool = True,
                  shrink: bool = True, max_memory: int = DEFAULT_MAX_MEMORY,
                  declared: Sequence[Any] = ()) -> Verdict:
    """The verdict on a history: linearizable, not linearizable (with a shrunk
    counterexample), or unknown when `budget` seconds ran out first, or a search's memo
    grew past `max_memory` bytes (saying how far the search got). `partition=False`
    checks the whole history in one search (for tests). `declared`: differences the
    target's maintainers accept (duespec.campaigns.declared); an answer that differs
    from the model's only at a path one names for its op is taken as the model's."""
    started = time.monotonic()
    system, clock = history.header.system, history.header.clock
    config = _config_of(history, profile)
    fresh = model_of(system)()
    try:
        fresh.reset(config)  # a config the model refuses is bad input, said before any search
    finally:
        getattr(fresh, "close", lambda: None)()
    events = history.events
    background = timers_left_out(history)
    clock_budget = _Budget(budget, max_memory, background, declared)
    hooks = concurrency_of(system)
    # The collector paused over the partitioning and every part too, not only inside each
    # search: with a large history read, each of its passes walks the whole heap.
    with collector_paused():
        parts = partitions(events, hooks, clock) if partition else ([list(range(len(events)))] if events else [])
        parts.sort(key=len)
        states, decided, progress, failing, limit = 0, 0, None, None, None
        for part in parts:
            result, search = _decide([events[i] for i in part], part, system, config, clock, max_timer_lag,
                                     clock_budget, among=events if len(parts) > 1 else None)
            states += result.states
            if result.status == "linearizable":
                decided += 1
            elif result.status == "not linearizable":
                failing = (part, result, search)
                break
            else:
                placed = sum(1 for p in result.best if p.call is not None)
                if progress is None or placed > progress[0]:
                    progress = (placed, len(part))
                limit = limit if limit == "memory" else (search.limit or "budget")
    verdict = Verdict("linearizable", system, clock, config, len(events), len(parts), decided, states,
                      0.0, max_timer_lag, history_events=events, max_memory=max_memory)
    if failing is not None:
        verdict.status, verdict.progress = "not linearizable", None
        part, result, search = failing
        if shrink:
            verdict.counterexample = shrink_counterexample(
                history, part, system, config, clock, max_timer_lag,
                budget=budget, blocked=search.stuck(result).call, max_memory=max_memory, background=background,
                partitioned=len(parts) > 1, declared=declared)
        else:
            verdict.counterexample = Counterexample([events[i] for i in part], part,
                                                    search.stuck(result), False, 0)
    elif progress is not None or decided < len(parts):
        verdict.status, verdict.progress, verdict.limit = "unknown", progress or (0, 0), limit or "budget"
    verdict.notes.extend(f"declared, not compared: {entry.describe()}" if applies_to_answers(entry)
                         else f"declared but not applied (a history records answers only): {entry.describe()}"
                         for entry in declared)
    if history.truncated:
        verdict.notes.append("the history's last line was cut short; the calls before it were checked")
    verdict.seconds = time.monotonic() - started
    return verdict


def shrink_counterexample(history: History, part: list[int], system: str, config: dict[str, Json],
                          clock: str, lag: int, *, budget: float | None,
                          blocked: int | None = None, max_memory: int = DEFAULT_MAX_MEMORY,
                          background: bool = False, partitioned: bool = False,
                          declared: Sequence[Any] = ()) -> Counterexample:
    """Drop calls while what is left stays a faithful counterexample; then check that
    removing any one call of what is left does not (minimality).

    Faithful: not linearizable, and the model can still give every call's recorded answer
    at some state a linearizable prefix of what is left reaches, as well as it could in
    the history shrunk from (_Search.justification: the whole answer, or its status).
    Without that condition,
    dropping calls finds a meaningless counterexample: remove the promise.create before a
    settle and the settle alone is not linearizable from an empty server, which says
    nothing about the race that was recorded. So a call that only justifies another
    (a write a later read saw) stays, and each call of the result has a role: without it
    the rest is linearizable ("core"), or some call's answer is no longer justified
    ("context").

    Removal goes in halves, then quarters, down to single calls (delta debugging). Each
    check has the rest of `budget`; a check that runs out counts as "not shown", so the
    shrunk history is always a proved counterexample, and minimality is claimed only when
    every removal was decided.

    First the calls made after the blocked call (`blocked`, the one the full search could
    not place) returned are cut, if what is left still fails: the search never got past
    that call, so they cannot matter to why it failed."""
    events = history.events
    # `part` was cut from a history of several parts: a tick's keys outside it are others'.
    among = events if partitioned else None
    overall = _Budget(budget, max_memory, background, declared)
    checks = 0
    start = list(part)
    if blocked is not None and blocked >= 0 and events[blocked].outcome == "ok":
        cut = [i for i in part if events[i].call_ns <= events[blocked].return_ns]
        if len(cut) < len(part):
            result, _ = _decide([events[i] for i in cut], cut, system, config, clock, lag, overall, among=among)
            checks += 1
            if result.status == "not linearizable":
                start = cut
    # The shortest prefix (in return order) that is not linearizable: its last call is the
    # first answer no order explains. Found by bisection; a prefix that is linearizable is
    # decided fast (one order found), so this costs a few searches of the history's head.
    by_return = sorted(start, key=lambda i: (events[i].return_ns, i))
    # A prefix fails faithfully only when every answer in it stays as justified as in the
    # history it is cut from: a call still running at the cut may have answered with what
    # a call made after the cut wrote (a create seeing another client's create), and
    # without that call the prefix fails for a reason the history does not have.
    result, search = _decide([events[i] for i in start], start, system, config, clock, lag, overall, among=among)
    checks += 1
    whole = search.justification() if result.status == "not linearizable" else None

    def faithful(head: list[int], found: _Search) -> bool:
        return whole is None or found.justification({i: whole.get(i, 0) for i in head}) is not None

    def prefix(k: int) -> list[int]:
        """The calls returned by the k-th return, and those called before it (which may
        be what justifies its answer: a settle still running when a read saw it)."""
        cut = events[by_return[k - 1]].return_ns
        return sorted(set(by_return[:k]) | {i for i in start if events[i].call_ns <= cut})

    lo, hi = 1, len(by_return)
    while lo < hi and not overall.out():
        mid = (lo + hi) // 2
        head = prefix(mid)
        result, found = _decide([events[i] for i in head], head, system, config, clock, lag, overall, among=among)
        checks += 1
        if result.status == "not linearizable" and faithful(head, found):
            hi = mid
        elif result.status == "not linearizable":
            lo = mid + 1
        elif result.status == "linearizable":
            lo = mid + 1
        else:
            break
    if lo == hi and lo < len(by_return):
        start = prefix(lo)
    result, search = _decide([events[i] for i in start], start, system, config, clock, lag, overall, among=among)
    base = search.justification() if result.status == "not linearizable" else {}
    quick_states = max(_QUICK_STATES, result.states // 4)
    # The culprit: of the calls of that prefix, the one returned last without which the
    # others linearize (the prefix's cut call, or a call still running at the cut).
    violation, culprit = None, None
    if lo == hi and base:
        for candidate in sorted(start, key=lambda i: (events[i].return_ns, i), reverse=True)[:_CULPRIT_TRIES]:
            if events[candidate].outcome != "ok" or overall.out():
                continue
            rest = [i for i in start if i != candidate]
            checks += 1
            if _decide([events[i] for i in rest], rest, system, config, clock, lag,
                       overall, among=among)[0].status == "linearizable":
                culprit = candidate
                violation = Violation(candidate, NO_ORDER if base[candidate] == FULL else NEVER_GIVEN)
                break

    def judge(subset: list[int], name: bool = False, quick: bool = False) -> str:
        """"counterexample" (the same violation), "linearizable", "unjustified #i",
        "culprit" (the culprit is gone), "earlier" (a call other than the culprit
        fails), "other kind" or "unknown"."""
        nonlocal checks
        checks += 1
        cap = quick_states if quick else _INF
        if violation is not None and violation.culprit not in subset:
            return "culprit"
        sub = [events[i] for i in subset]
        hooks = concurrency_of(system)
        verdict = "linearizable"
        groups = partitions(sub, hooks, clock)
        for group in groups:
            result, found = _decide([sub[j] for j in group], [subset[j] for j in group], system, config, clock,
                                    lag, overall, cap, sub if len(groups) > 1 else among)
            if result.status == "not linearizable":
                group_need = {subset[j]: base.get(subset[j], 0) for j in group}
                if found.justification(group_need) is not None:
                    verdict = "counterexample"
                    if violation is not None and violation.kind == NEVER_GIVEN and violation.culprit in group_need:
                        levels = found.justification() or {}
                        if levels.get(violation.culprit) == FULL:
                            return "other kind"
                    break
                verdict = "unjustified"
                if name:
                    levels = found.justification() or {}
                    lost = [i for i in levels if levels[i] < group_need[i]]
                    verdict = f"unjustified #{lost[0]}" if lost else verdict
            elif result.status == "unknown":
                return "unknown"
        if verdict != "counterexample" or violation is None:
            return verdict
        # The same culprit: every other call of the subset linearizes without it.
        rest = [i for i in subset if i != violation.culprit]
        others = [events[i] for i in rest]
        groups = partitions(others, hooks, clock)
        for group in groups:
            result, _ = _decide([others[j] for j in group], [rest[j] for j in group], system, config, clock,
                                lag, overall, cap, others if len(groups) > 1 else among)
            if result.status == "not linearizable":
                return "earlier"
            if result.status == "unknown":
                return "unknown"
        return "counterexample"

    def fails(subset: list[int]) -> bool:
        """Quick: a candidate whose search needs many more states than the history it is
        cut from is passed over (a larger counterexample is still a proved one; the
        minimality check below decides every removal in full)."""
        return bool(subset) and judge(subset, quick=True) == "counterexample"

    current = list(start)
    # Then only the calls that share a key with the culprit (and so can have made its
    # answer wrong), first without the calls that touch every key (ticks), then with them.
    # A culprit that touches every key (a tick) is focused on the keys its answer names.
    hooks = concurrency_of(system)
    keys_of = {i: hooks.keys(events[i].op, events[i].args) for i in current}
    if culprit is None and lo == hi:
        culprit = by_return[lo - 1]  # no violation named: focus on the prefix's cut call
    focus = keys_of.get(culprit) if culprit is not None else None
    if culprit is not None and focus is None:
        named = set(_scalars(events[culprit].response, str))
        focus = frozenset(k for ks in keys_of.values() if ks for k in ks if k.partition(":")[2] in named)
    if focus:
        near = sorted({i for i in current if (keys_of[i] or frozenset()) & focus} | {culprit})
        every = [i for i in current if keys_of[i] is None and i not in near]
        for candidate in (near, sorted(near + every)):
            if len(candidate) < len(current) and candidate and judge(candidate) == "counterexample":
                current = candidate
                break
    chunk = max(len(current) // 2, 1)
    while chunk >= 1 and not overall.out():
        position, removed_any = 0, False
        while position < len(current) and not overall.out():
            candidate = current[:position] + current[position + chunk:]
            if fails(candidate):
                current, removed_any = candidate, True
            else:
                position += chunk
        if chunk == 1 and not removed_any:
            break
        chunk = max(chunk // 2, 1) if chunk > 1 else 1
    minimal = not overall.out() and len(current) <= _MAX_PROVED
    roles: dict[int, str] = {}
    for position, index in enumerate(current if minimal else []):
        candidate = current[:position] + current[position + 1:]
        outcome = judge(candidate, name=True) if candidate else "linearizable"
        if outcome == "linearizable":
            roles[index] = "core: without it the rest is linearizable"
        elif outcome == "culprit":
            roles[index] = "culprit: no order of the others explains its answer"
        elif outcome.startswith("unjustified"):
            whose = outcome.split()[1] if " " in outcome else "another call"
            roles[index] = f"context: without it the answer of {whose} has no justification"
        elif outcome == "earlier":
            roles[index] = "context: without it a call other than the culprit fails"
        elif outcome == "other kind":
            roles[index] = "context: without it the culprit's answer fails another way"
        else:
            roles[index] = "removable" if outcome == "counterexample" else "undecided"
            minimal = False
    # The counterexample's own report; a shrink cut short by its budget may leave many calls.
    final_budget = _Budget(None if budget is None else max(budget, 5.0), max_memory, background, declared)
    result, search = _decide([events[i] for i in current], current, system, config, clock, lag, final_budget,
                             among=among)
    return Counterexample([events[i] for i in current], current, search.stuck(result), minimal, checks, roles,
                          violation)

"""Cutting a campaign short and keeping what it found: SIGTERM, SIGINT or its --budget.

Hypothesis runs in the main thread, so a signal cannot end a run where it stands: the
handler only records the request, and the lockstep machine checks `should_stop` before
every step and every comparison (LockstepMachine.call, its invariant), raising
CampaignStopped there. A search that has not yet failed stops at once; one that has found
a failing run goes on shrinking it for GRACE_SECONDS more, then stops with the smallest
failing run seen so far. A second signal stops the search at once (StopNow), and so does
the first one if the search has not ended HARD_SECONDS after it (a target that does not
answer: a step cannot be cut, and replaying a slow failure from a reset may take minutes):
the campaign keeps the classes found, and the failure it was shrinking or replaying as it
stood, unreplayed. Once the search has ended, a signal only keeps later campaigns from
starting: the report and its files are written whatever arrives. Only before the first
search (a target that does not start) does a second signal end the command at once (130).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import AbstractContextManager, contextmanager
from types import TracebackType
from typing import Any, Callable, Iterator

from duespec.targets.resolve import UserInterrupt

#: Seconds a search that has found a failure may go on shrinking it once told to stop.
GRACE_SECONDS = 3.0
#: Seconds after a signal by which the search must have ended; then it is interrupted.
HARD_SECONDS = GRACE_SECONDS + 5.0


class StopNow(UserInterrupt):
    """A second signal, or the first one's HARD_SECONDS passed, while a search runs: the
    search ends where it stands (Stopper.searching keeps what it found)."""


class Stopper:
    """When a campaign must stop, and why."""

    def __init__(self, budget: float | None = None) -> None:
        self.budget = budget
        self.started = time.monotonic()
        #: Why the campaign was cut short ("SIGTERM", "--budget 30s"), None while it is not.
        self.reason: str | None = None
        self.grace_until: float | None = None
        self._watchdog: threading.Timer | None = None
        #: "setup" before the first search, "search" during one, "report" after one (or while
        #: worker processes search): a signal then is only noted.
        self.phase = "setup"

    def request(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason

    @property
    def requested(self) -> bool:
        if self.reason is None and self.budget is not None and time.monotonic() - self.started >= self.budget:
            self.request(f"--budget {self.budget:g}s")
        return self.reason is not None

    def should_stop(self, shrinking: bool) -> bool:
        """Whether the run in progress must end now: at once unless a failure found before
        the request is being shrunk, then once the grace period is over."""
        if not self.requested:
            return False
        if not shrinking:
            return True
        if self.grace_until is None:
            self.grace_until = time.monotonic() + GRACE_SECONDS
        return time.monotonic() >= self.grace_until

    def settle(self) -> None:
        """The search has ended: no watchdog needs to interrupt it any more."""
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None

    def searching(self, on_stop_now: Callable[[], None]) -> AbstractContextManager[None]:
        """`with stopper.searching(keep):` a search runs; a StopNow ends it there, `keep` is
        called (to keep what the search had), and the code after the block goes on."""
        return _Searching(self, on_stop_now)

    @contextmanager
    def signals(self) -> Iterator[None]:
        """SIGTERM and SIGINT request a stop while the campaign runs (main thread only);
        a second one raises at once."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        names = {signal.SIGTERM: "SIGTERM", signal.SIGINT: "SIGINT"}
        previous: dict[int, Any] = {}

        def asked(signum: int, frame: object) -> None:
            repeated = self.reason is not None and self.reason in names.values()
            self.request(names.get(signum, f"signal {signum}"))
            if self.phase == "report":
                return  # what was found is being reported: nothing is lost by finishing that
            if repeated:
                self.settle()
                # asked twice: stop now (named: a SIGTERM is no Ctrl-C)
                raise StopNow() if self.phase == "search" else UserInterrupt(names.get(signum, f"signal {signum}"))
            if self._watchdog is None:  # a step that never ends must not hold the stop forever
                self._watchdog = threading.Timer(HARD_SECONDS, os.kill, (os.getpid(), signum))
                self._watchdog.daemon = True
                self._watchdog.start()

        for number in names:
            previous[number] = signal.signal(number, asked)
        try:
            yield
        finally:
            self.settle()
            for number, handler in previous.items():
                signal.signal(number, handler)


class _Searching:
    """Stopper.searching: a class, so that it may swallow the StopNow it ends the search with."""

    def __init__(self, stopper: Stopper, on_stop_now: Callable[[], None]) -> None:
        self.stopper, self.on_stop_now = stopper, on_stop_now

    def __enter__(self) -> None:
        self.stopper.phase = "search"

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> bool:
        self.stopper.phase = "report"
        self.stopper.settle()
        if isinstance(error, StopNow):
            self.on_stop_now()
            return True
        return False

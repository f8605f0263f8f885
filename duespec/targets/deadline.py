"""`with deadline(seconds, what):` the bound on every call into a target and the model.

Below both the boundary that wraps in-process targets (duespec.targets.resolve) and the
HTTP target (duespec.wire.http_target), which both bracket their calls with it."""

from __future__ import annotations

import signal
import threading
import time

from duespec.targets.interface import TargetTooSlow


class _Overdue(BaseException):
    """Raised by SIGALRM inside target code; a BaseException so `except Exception` there
    cannot swallow it. Never leaves `deadline`."""


def _raise_overdue(signum: int, frame: object) -> None:
    raise _Overdue()


class deadline:
    """`with deadline(seconds, what):` raises TargetTooSlow (a TargetError) if the block runs past `seconds`,
    and keeps an outer deadline (SIGALRM timer) running. A class rather than a generator:
    it brackets every call into a target and the model, so it must cost microseconds.

    SIGALRM, so only in the main thread of a POSIX process; elsewhere it does nothing.
    Once due, the alarm repeats every OVERDUE_REPEAT seconds: Python ignores an exception
    raised inside a `__del__` or a gc callback, so a target that allocates as it loops
    could swallow a single alarm and run on forever."""

    __slots__ = ("seconds", "what", "previous", "outer", "outer_repeat", "started")

    def __init__(self, seconds: float | None, what: str) -> None:
        self.seconds, self.what = seconds, what
        if seconds and not (_HAS_TIMER and threading.current_thread() is _MAIN_THREAD):
            self.seconds = None

    def __enter__(self) -> None:
        if not self.seconds:
            return
        self.outer, self.outer_repeat = signal.getitimer(signal.ITIMER_REAL)
        if self.outer:
            self.started = time.monotonic()
        self.previous = _set_handler(signal.SIGALRM, _raise_overdue)
        try:
            signal.setitimer(signal.ITIMER_REAL, min(self.seconds, self.outer) if self.outer else self.seconds,
                             OVERDUE_REPEAT)
        except _Overdue:
            # A deadline of microseconds is due before the block starts, and Python would not
            # call __exit__ for it: close it here, as the block's own overrun.
            self.__exit__(_Overdue, None, None)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, _: object) -> None:
        if not self.seconds:
            return
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        except _Overdue:  # the alarm came as the block ended: it overran, and is disarmed here
            signal.setitimer(signal.ITIMER_REAL, 0)
            kind = _Overdue
        _set_handler(signal.SIGALRM, self.previous)
        outer_fired = bool(self.outer) and self.outer <= self.seconds and kind is _Overdue
        if self.outer and not outer_fired:
            signal.setitimer(signal.ITIMER_REAL, max(self.outer - (time.monotonic() - self.started), 1e-3),
                             self.outer_repeat)
        if kind is _Overdue:
            if outer_fired and callable(self.previous):
                self.previous(signal.SIGALRM, None)  # it was the outer deadline's turn: its handler
            raise TargetTooSlow(f"{self.what} did not return within {self.seconds:g}s (--timeout)",
                                seconds=self.seconds) from None


#: Seconds between repeats of a deadline's alarm once it is due (see `deadline`).
OVERDUE_REPEAT = 0.2
_HAS_TIMER = hasattr(signal, "setitimer")
_MAIN_THREAD = threading.main_thread()
try:  # CPython's C function: signal.signal adds ~5 us of enum conversion per call
    from _signal import signal as _set_handler
except ImportError:  # pragma: no cover
    _set_handler = signal.signal

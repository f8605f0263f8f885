"""The resident memory a read needs (issue 41: every read of a fuzzed input, every command
line, within 256 MB RSS).

A fuzz runs its reads in one process, beside the fuzzer, whose own memory grows with the
inputs it keeps (Hypothesis: tens of MB per thousand inputs of a 45 KB report), so the
process's peak over the whole fuzz says little about any one read. Instead each read is
measured alone: Linux keeps a high-water mark of the process's resident set (VmHWM) and
resets it to the current size on request (/proc/self/clear_refs, "5"), so the peak during
one read, less the size before it, is what that read added. `Reads.bytes` is the size of
the process when the fuzz began (the interpreter, pytest, Hypothesis and duespec: more
than a `duespec` process holds) plus the most any one read added. Where there is no such
mark (not Linux), `bytes` is None: not measured."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, TypeVar

#: The bound issue 41 sets on every read.
MAX_RSS_BYTES = 256 * 1024 * 1024

_RESET, _STATUS = Path("/proc/self/clear_refs"), Path("/proc/self/status")
T = TypeVar("T")


def _kilobytes(field: str) -> int:
    for line in _STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(f"no {field} in {_STATUS}")


class Reads:
    def __init__(self) -> None:
        self.measured = _RESET.exists()
        self.start = _kilobytes("VmRSS") if self.measured else 0
        self.most_added = 0

    def measure(self, read: Callable[[], T]) -> T:
        """`read()`, noting how much resident memory it added at its peak."""
        if not self.measured:
            return read()
        _RESET.write_text("5")
        before = _kilobytes("VmRSS")
        try:
            return read()
        finally:
            self.most_added = max(self.most_added, _kilobytes("VmHWM") - before)

    @property
    def bytes(self) -> int | None:
        return (self.start + self.most_added) * 1024 if self.measured else None

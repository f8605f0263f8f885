"""The resident memory a read needs (issue 41: every read of a fuzzed input, every command
line, within 256 MB RSS).

A fuzz runs its reads in one process, beside the fuzzer, whose own memory grows with the
inputs it keeps (Hypothesis: tens of MB per thousand inputs of a 45 KB report) and beside
every test that ran before it in the same process, so the process's size says little
about any one read. Instead each read is measured alone: Linux keeps a high-water mark of
the process's resident set (VmHWM) and resets it to the current size on request
(/proc/self/clear_refs, "5"), so the peak during one read, less the size before it, is
what that read added. `Reads.bytes` is that most, plus the size of a fresh process that
has imported every command of duespec (measured once, in a process of its own): what a
`duespec` process doing the read would hold at its peak. (Memory this process freed and
kept is reused before the resident set grows, so a read of many small objects may count
for less here than alone; a large buffer, what an unbounded read makes, counts in full.)
Where there is no such mark (not Linux), `bytes` is None: not measured."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path
from typing import Callable, TypeVar

#: The bound issue 41 sets on every read.
MAX_RSS_BYTES = 256 * 1024 * 1024

_RESET, _STATUS = Path("/proc/self/clear_refs"), Path("/proc/self/status")
T = TypeVar("T")


def _kilobytes(field: str, status: str | None = None) -> int:
    for line in (_STATUS.read_text() if status is None else status).splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(f"no {field} in {_STATUS}")


@functools.lru_cache(maxsize=None)
def fresh_duespec_kilobytes() -> int:
    """The resident size of a new process once every command of duespec is imported."""
    script = "import duespec.cli; duespec.cli.build_parser(); print(open('/proc/self/status').read())"
    status = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    return _kilobytes("VmRSS", status)


class Reads:
    def __init__(self) -> None:
        self.measured = _RESET.exists()
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
        return (fresh_duespec_kilobytes() + self.most_added) * 1024 if self.measured else None

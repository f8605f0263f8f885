"""The most resident memory this process held while a block ran (issue 41: every read of
a fuzzed input, every command line, within 256 MB RSS).

Linux keeps a high-water mark of each process's resident set (VmHWM) and resets it on
request (/proc/self/clear_refs, "5"), so the peak is the block's own, not that of a test
that ran before it in the same process (`make test` runs many files per process). Where
there is no such mark to reset (not Linux), `bytes` stays None: not measured."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

#: The bound issue 41 sets on every read: the whole test process, pytest included, stays under it.
MAX_RSS_BYTES = 256 * 1024 * 1024

_RESET, _STATUS = Path("/proc/self/clear_refs"), Path("/proc/self/status")


class Peak:
    bytes: int | None = None


@contextmanager
def peak_rss() -> Iterator[Peak]:
    peak = Peak()
    if not _RESET.exists():
        yield peak
        return
    _RESET.write_text("5")
    yield peak
    for line in _STATUS.read_text().splitlines():
        if line.startswith("VmHWM:"):
            peak.bytes = int(line.split()[1]) * 1024

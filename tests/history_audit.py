"""A pytest plugin that keeps a copy of every history the test suite writes, for the export audit.

`make export-audit` runs the suite with it (`-p tests.history_audit`, and the folder to copy
into in $DUESPEC_HISTORY_AUDIT), then tools/export_audit.py checks that every history copied
gets the same `duespec linearize` verdict as itself exported to the Resonate valid/ format
and read back (docs/linearize.md, "The export audit"). Without the variable the plugin does
nothing, so the suite runs as ever.

Histories are written three ways, and each is caught: through duespec's own writers in the
test's process (HistoryWriter, ResonateValidWriter: copied when the writer closes, so a file
a test later cuts short or deletes is still kept as written); by a `duespec` subprocess or by
hand into a test's tmp_path (the test's temporary folder is searched as it ends, before
pytest's teardown can remove it); and into a folder of a wider scope (the session's temporary
root is searched once more at the end). A history a test checks in memory without writing it
(generated, or planted) is written out as it is handed to check_history. A file is a history when its first line is a duespec
history header or a valid/ trace line; traces and everything else are passed over. Each copy
is named by its content's hash, so the same history written twice is checked once, and every
capture appends one line to an index (one per xdist worker, so workers never share a file)
saying which test wrote it and where.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any, Iterator

import pytest

#: The folder to copy histories into; the plugin is idle without it.
AUDIT_ENV = "DUESPEC_HISTORY_AUDIT"
#: A history larger than this is listed in the index as not copied (with its size), never
#: dropped without a word: the audit names it among what it could not compare.
MAX_COPY_BYTES = 256 * 2**20
#: How much of a file is read to tell what it is: a first line longer than this is no history
#: line the suite writes (a header or one call).
_SNIFF_BYTES = 1 << 20
#: (copy, test) pairs this process has indexed already.
_indexed: set[tuple[str, str]] = set()


def history_format(path: Path) -> str | None:
    """"duespec" or "resonate-valid" when the file's first line is a duespec history header or
    a valid/ trace line; None for anything else (a trace, a report, a file not JSON)."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(_SNIFF_BYTES).strip()
    except OSError:
        return None
    if not first.startswith(b"{"):
        return None
    try:
        value = json.loads(first)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    if "duespec_history" in value:
        return "duespec"
    if {"kind", "req", "res"} <= set(value):
        return "resonate-valid"
    return None


def capture(path: Path, audit_dir: Path, origin: str, via: str) -> str | None:
    """Copy `path` into `audit_dir` when it is a history, and index it; the copy's name, or None."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None  # a symlink, FIFO or device is never a history a test wrote
    fmt = history_format(path)
    if fmt is None:
        return None
    entry: dict[str, Any] = {"origin": origin, "source": str(path), "via": via, "format": fmt}
    if info.st_size > MAX_COPY_BYTES:
        entry.update(file=None, not_copied=f"{info.st_size:,} bytes, over the {MAX_COPY_BYTES:,}-byte copy limit")
        _index(audit_dir, entry)
        return None
    return _store(path.read_bytes(), audit_dir, entry)


def capture_checked(history: Any, audit_dir: Path, origin: str) -> str | None:
    """A history a test checks without writing it (made by duespec.histories.generate, or
    planted in memory), written out as duespec's writer would write it."""
    entry: dict[str, Any] = {"origin": origin, "source": None, "via": "check_history", "format": "duespec"}
    try:
        lines = [history.header.to_json(), *(event.to_json() for event in history.events)]
        data = "".join(json.dumps(line, allow_nan=False, separators=(",", ":")) + "\n" for line in lines).encode()
    except (TypeError, ValueError, AttributeError) as error:  # not a History of JSON values: said, not dropped
        entry.update(file=None, not_copied=f"not writable as a history: {error}")
        _index(audit_dir, entry)
        return None
    return _store(data, audit_dir, entry)


def _store(data: bytes, audit_dir: Path, entry: dict[str, Any]) -> str:
    name = hashlib.sha256(data).hexdigest()[:20] + (".ndjson" if entry["format"] == "duespec" else ".history")
    target = audit_dir / "histories" / name
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{name}.{os.getpid()}.part")
        partial.write_bytes(data)
        os.replace(partial, target)  # two workers copying one history both write the same bytes
    entry["file"] = name
    if (name, entry["origin"]) not in _indexed:  # a history a test's writer closed is found again in its tmp_path
        _indexed.add((name, entry["origin"]))
        _index(audit_dir, entry)
    return name


def _index(audit_dir: Path, entry: dict[str, Any]) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    audit_dir.mkdir(parents=True, exist_ok=True)
    with open(audit_dir / f"index-{worker}.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps(entry) + "\n")


def capture_tree(root: Path, audit_dir: Path, origin: str, via: str) -> None:
    """Every history under `root` (symlinked folders are not followed)."""
    for folder, _, files in os.walk(root):
        for name in files:
            capture(Path(folder) / name, audit_dir, origin, via)


def _current_test() -> str:
    return os.environ.get("PYTEST_CURRENT_TEST", "outside a test").rsplit(" (", 1)[0]


def _wrap_close(writer_class: type, audit_dir: Path) -> None:
    """The writer's close, then a copy of what it wrote."""
    close = writer_class.close

    def close_and_capture(self: Any) -> None:
        close(self)
        capture(Path(self.path), audit_dir, _current_test(), f"{writer_class.__name__}.close")

    writer_class.close = close_and_capture


def pytest_configure(config: pytest.Config) -> None:
    folder = os.environ.get(AUDIT_ENV)
    if not folder:
        return
    audit_dir = Path(folder).resolve()
    audit_dir.mkdir(parents=True, exist_ok=True)
    config.stash[_AUDIT_DIR] = audit_dir
    from duespec.histories.format import HistoryWriter
    from duespec.histories.resonate_valid import ResonateValidWriter

    for writer_class in (HistoryWriter, ResonateValidWriter):
        _wrap_close(writer_class, audit_dir)
    _wrap_check_history(audit_dir)


def _wrap_check_history(audit_dir: Path) -> None:
    """Every history the suite checks, before it is checked. Test modules import the
    function when they are collected, after this has run, so they import the wrapper."""
    from duespec.histories import linearize

    check = linearize.check_history

    def capture_and_check(history: Any, *args: Any, **kwargs: Any) -> Any:
        capture_checked(history, audit_dir, _current_test())
        return check(history, *args, **kwargs)

    linearize.check_history = capture_and_check


_AUDIT_DIR = pytest.StashKey[Path]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """The test's own temporary folder, searched before its fixtures are torn down."""
    audit_dir = item.config.stash.get(_AUDIT_DIR, None)
    funcargs = getattr(item, "funcargs", {})
    if audit_dir is not None:
        for name in ("tmp_path", "tmpdir"):
            folder = funcargs.get(name)
            if folder is not None:
                capture_tree(Path(str(folder)), audit_dir, item.nodeid, name)
    yield


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The session's temporary root once more: what fixtures of a wider scope wrote there.
    Under xdist each worker searches its own root, so the controller, whose root holds
    theirs, has nothing of its own to add."""
    audit_dir = session.config.stash.get(_AUDIT_DIR, None)
    if getattr(session.config.option, "numprocesses", None) and not hasattr(session.config, "workerinput"):
        return
    factory = getattr(session.config, "_tmp_path_factory", None)
    basetemp = getattr(factory, "_basetemp", None)
    if audit_dir is not None and basetemp is not None and Path(basetemp).is_dir():
        capture_tree(Path(basetemp), audit_dir, "session temporary folder", "basetemp")

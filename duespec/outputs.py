"""Output files that are checked before any work and appear whole or not at all.

A campaign can run for an hour; finding only afterwards that `--junit` names a directory
wastes it, so every output path is checked first (`check_output`). Writing goes to a
sibling `NAME.<pid>.partial`, is fsynced and then renamed over NAME (or, for a name that
must not replace anything, hard-linked to it: `commit_as`), so a reader (the corpus, a CI
step) never sees an empty or half file, and a crash leaves at most a `.partial` whose
writer is gone; the next write to NAME, or into its directory, removes those. Nothing is ever written over an
input of the same command, a symlink, a device or anything else that is not a regular file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO, Iterable

PARTIAL_SUFFIX = ".partial"
#: Longest output file name: 255 (the usual NAME_MAX) less room for `.<pid>.partial`.
MAX_NAME_BYTES = 255 - 32


#: How text that UTF-8 cannot hold is written: a lone surrogate (which JSON's "\ud800" escape,
#: read from a user's file, can put in a string) becomes that escape again, `\ud800`. Inside
#: a JSON string it reads back as the same string; in HTML, JUnit and the terminal it shows
#: what the input said. Never an error: a string a user gave must not cost the verdict.
UNENCODABLE = "backslashreplace"


def tolerate_unencodable(*streams: object) -> None:
    """Make standard output and error write what UTF-8 cannot hold as UNENCODABLE does."""
    for stream in streams:
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors=UNENCODABLE)
            except (ValueError, OSError):  # a stream that cannot change (closed, detached)
                pass


class OutputError(ValueError):
    """An output path that cannot or must not be written: exit 2, before any work."""


def check_output(path: str | os.PathLike[str], *, inputs: Iterable[str | os.PathLike[str]] = (),
                 what: str = "output") -> Path:
    """Refuse `path` unless a regular file can be created or replaced there; return it."""
    out = Path(path)
    name = f"{what} {str(path)[:200]!r}"
    if not str(path) or out.name in ("", ".", ".."):
        raise OutputError(f"{name} does not name a file")
    if "\x00" in str(path):
        raise OutputError(f"{name} contains a NUL byte, which no file name can hold")
    if len(os.fsencode(out.name)) > MAX_NAME_BYTES:
        raise OutputError(f"{name}: the file name is longer than {MAX_NAME_BYTES} bytes")
    try:
        existing = os.lstat(out)
    except FileNotFoundError:
        existing = None
    except OSError as error:
        raise OutputError(f"{name}: {error.strerror or error}") from None
    if existing is not None:
        if stat.S_ISLNK(existing.st_mode):
            raise OutputError(f"{name} is a symbolic link; duespec replaces only regular files")
        if not stat.S_ISREG(existing.st_mode):
            raise OutputError(f"{name} exists and is not a regular file")
        for source in inputs:
            try:
                if os.path.samefile(out, source):
                    raise OutputError(f"{name} is the input {str(source)!r}; choose another output")
            except OSError:
                continue
    ancestor = _existing_ancestor(out)
    if not ancestor.is_dir():
        raise OutputError(f"{name}: {str(ancestor)!r} is not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise OutputError(f"{name}: directory {str(ancestor)!r} is not writable")
    return out


def _existing_ancestor(path: Path) -> Path:
    parent = path.absolute().parent
    while not parent.exists() and parent != parent.parent:
        if parent.is_symlink():  # a dangling link: report it rather than walk past it
            return parent
        parent = parent.parent
    return parent


class AtomicFile:
    """A text file written under a temporary name and renamed into place on `commit`."""

    def __init__(self, path: str | os.PathLike[str], *, inputs: Iterable[str | os.PathLike[str]] = (),
                 what: str = "output") -> None:
        self.path = check_output(path, inputs=inputs, what=what)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_partials(self.path)
        self.partial = self.path.with_name(f"{self.path.name}.{os.getpid()}{PARTIAL_SUFFIX}")
        fd = os.open(self.partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        self.handle: IO[str] = os.fdopen(fd, "w", encoding="utf-8", errors=UNENCODABLE)

    def write(self, text: str) -> None:
        self.handle.write(text)

    def commit(self) -> Path:
        """Flush to disk, then replace the final name (only if it is still safe to)."""
        try:
            self.handle.flush()
            os.fsync(self.handle.fileno())
            self.handle.close()
            check_output(self.path)
            os.replace(self.partial, self.path)
        except BaseException:
            self.abandon()
            raise
        _fsync_directory(self.path.parent)
        return self.path

    def commit_as(self, candidates: Iterable[str | os.PathLike[str]]) -> Path:
        """Flush to disk, then give the file the first of `candidates` not yet taken, never
        replacing one: a hard link (which fails if the name exists) made only once the file
        is whole, so no reader ever sees the name empty or half written, and two writers
        racing for a name each get one of their own. Raises FileExistsError when all are
        taken (the partial is then removed)."""
        try:
            self.handle.flush()
            os.fsync(self.handle.fileno())
            self.handle.close()
            for candidate in candidates:
                final = Path(candidate)
                try:  # a link never replaces anything: a name taken in any form (a file, a
                    os.link(self.partial, final)  # symlink, a folder) is simply passed over
                except FileExistsError:
                    continue
                self.path = final
                break
            else:
                raise FileExistsError(f"every name offered for {self.path.name} is taken")
        finally:
            self.abandon()  # the partial: linked under its final name, or not wanted
        _fsync_directory(self.path.parent)
        return self.path

    def abandon(self) -> None:
        if not self.handle.closed:
            self.handle.close()
        self.partial.unlink(missing_ok=True)

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.commit()
        else:
            self.abandon()


def write_text(path: str | os.PathLike[str], text: str, *, what: str = "output") -> Path:
    with AtomicFile(path, what=what) as out:
        out.write(text)
    return out.path


def remove_stale_partials(path: Path) -> list[Path]:
    """Delete `NAME.<pid>.partial` siblings of `path` whose writing process is gone."""
    removed = []
    prefix = path.name + "."
    try:
        siblings = list(path.parent.iterdir())
    except OSError:
        return removed
    for sibling in siblings:
        middle = sibling.name[len(prefix):-len(PARTIAL_SUFFIX)]
        if not (sibling.name.startswith(prefix) and sibling.name.endswith(PARTIAL_SUFFIX)
                and middle.isascii() and middle.isdigit()):  # "²" is a digit int() refuses
            continue
        if _alive(int(middle)):
            continue
        try:
            sibling.unlink()
            removed.append(sibling)
        except OSError:
            pass
    return removed


def remove_dead_partials(directory: str | os.PathLike[str], *, of: str = "") -> list[Path]:
    """Delete every `NAME.<pid>.partial` in `directory` (NAME ending in `of`) whose writing
    process is gone: what a killed writer left. Called by each command that writes into a
    folder of its own (the failure traces') before it does."""
    removed = []
    try:
        entries = list(Path(directory).iterdir())
    except OSError:
        return removed
    for entry in entries:
        stem, dot, suffix = entry.name[:-len(PARTIAL_SUFFIX)].rpartition(".")
        if not (entry.name.endswith(PARTIAL_SUFFIX) and dot and stem.endswith(of) and stem and suffix.isascii()
                and suffix.isdigit()):
            continue
        if _alive(int(suffix)) or not entry.is_file() or entry.is_symlink():
            continue
        try:
            entry.unlink()
            removed.append(entry)
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # a partial of ours under this name is a leftover of an earlier writer
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)

"""Bounded reading: every input duespec parses is refused past a documented size.

Every file a user gives (a trace, a history, a report for `merge`, a declared-differences,
ITF or mapping file) is read here: `open_regular`, then `read_file` for a document read
whole, `JsonLines` for a history, or the trace reader's own loop over `read_line`. Such a
file may come from anywhere (a CI artifact, a foreign tool, an
attacker), so reading one must never hang, exhaust memory or end in a Python traceback.
Each limit is checked while reading, before the cost is paid: a line is read at most
MAX_LINE_BYTES + 1 bytes at a time, an ITF document is refused by its size before it is
parsed, integers are refused by their digit count before Python converts them (Python
itself refuses past 4,300 digits with a ValueError), and nesting is measured on the
parsed value. Special files (FIFOs, devices, directories, a symlink to /dev/zero) are
refused before a byte is read, since reading one can block forever or never end.
The figures are stated in docs/limits.md.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import stat
from typing import IO, Any, Iterator

import orjson

#: Longest line of a JSON Lines trace, newline included.
MAX_LINE_BYTES = 16 * 1024 * 1024
#: Largest document read whole: an ITF trace, a declared-differences or mapping file.
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
#: Largest `--json` report `duespec merge` reads (a long campaign's classes, each with its
#: counterexample and report text, once per chunk).
MAX_REPORT_BYTES = 64 * 1024 * 1024
#: Largest JSON Lines file read into memory whole (a history: every event is kept for the
#: search). A trace is streamed, so only its lines are bounded.
MAX_LINES_FILE_BYTES = 1024 * 1024 * 1024
#: Deepest nesting of arrays and objects in one JSON value.
MAX_DEPTH = 64
#: Deepest nesting in an ITF document: ITF wraps every map and option, so a value of
#: MAX_DEPTH levels exports to at most about three times as many.
MAX_ITF_DEPTH = 4 * MAX_DEPTH
#: Most digits in one integer (a sign aside): far above any int64 or time the contract has.
MAX_INT_DIGITS = 100
#: Most runs one campaign may be asked for (`--examples`; a report's `examples_budget` for
#: `merge`): 200,000 chunks of 50, weeks of CPU on one core. The plan of a campaign's chunks
#: is made whole before the first run, so a budget past this would take minutes and
#: gigabytes (2^70 never ends) before anything is checked.
MAX_EXAMPLES = 10_000_000
#: Most schedule occurrences one step may fire (a catch-up after an outage): two years of
#: minutely ticks. Past it the model would run for hours; duespec refuses the step instead.
MAX_CATCH_UP_OCCURRENCES = 1_000_000


class LimitExceeded(ValueError):
    """Input past a documented limit: refused with exit 2, never half processed."""


class InputError(ValueError):
    """An input that cannot be read as JSON within the limits; `line` is 1-based or None."""

    def __init__(self, problem: str, line: int | None = None) -> None:
        super().__init__(problem)
        self.problem, self.line = problem, line


def open_regular(path: str | os.PathLike[str]) -> IO[bytes]:
    """Open `path` for reading in binary, refusing anything but a regular file.

    O_NONBLOCK keeps the open of a FIFO from waiting for a writer; the check is made on
    the opened descriptor, so a symlink swapped in between cannot slip through."""
    if "\x00" in os.fspath(path):
        raise InputError("the path contains a NUL byte, which no file name can hold")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InputError(f"not a regular file ({_kind_of(mode)}); duespec reads its inputs "
                             f"only from regular files")
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def read_line(handle: IO[bytes], line: int) -> bytes:
    """The next line (b"" at the end), refused once it passes MAX_LINE_BYTES."""
    return check_line_length(handle.readline(MAX_LINE_BYTES + 1), line)


def check_line_length(text: bytes, line: int) -> bytes:
    """`text`, read MAX_LINE_BYTES + 1 bytes at most, unless it is longer than a line may be."""
    if len(text) > MAX_LINE_BYTES:
        raise InputError(f"line longer than {MAX_LINE_BYTES:,} bytes (the limit on a trace line)", line)
    return text


def read_document(handle: IO[bytes], limit: int | None = None) -> bytes:
    """The whole of a single-document file, refused past `limit` bytes (MAX_DOCUMENT_BYTES
    unless given): by its size before a byte is read, and again while reading (a file that
    grows meanwhile)."""
    limit = MAX_DOCUMENT_BYTES if limit is None else limit
    size = os.fstat(handle.fileno()).st_size
    if size > limit:
        raise InputError(f"{size:,} bytes, over the {limit:,}-byte limit on a document")
    data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"over the {limit:,}-byte limit on a document")
    return data


def read_file(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of a file a user named, whole: a regular file only, refused before a byte
    is read past `limit` (MAX_DOCUMENT_BYTES unless given). Every problem, a missing or
    unreadable file included, is an InputError, so a caller has one error to name."""
    try:
        with open_regular(path) as handle:
            return read_document(handle, limit)
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror or error}") from None


class JsonLines:
    """The JSON values of a JSON Lines file, one a line, read within the limits and framed
    strictly: what every reader of histories goes through.

    Every line ends with a newline but perhaps the last. A last line without one is
    complete if it parses (a writer that joined its lines with "\n" leaves one), and is
    yielded like any other; only a final fragment that does not parse is a line cut short
    (a writer killed mid-line): it is not yielded, and `cut_short` names its line. Any
    other line that does not parse is an InputError naming it. Blank lines are refused
    unless `skip_blank`. The file as a whole is refused past `limit` bytes (by its size
    before it is read, and again while reading). Yields (line number, value)."""

    def __init__(self, handle: IO[bytes], *, skip_blank: bool = False, limit: int | None = None) -> None:
        self.handle, self.skip_blank = handle, skip_blank
        self.limit = MAX_LINES_FILE_BYTES if limit is None else limit
        #: The number of the final line that was cut short, or None when every line was whole.
        self.cut_short: int | None = None
        try:
            size = os.fstat(handle.fileno()).st_size
        except (OSError, ValueError, AttributeError):
            size = 0
        if size > self.limit:
            raise InputError(f"{size:,} bytes, over the {self.limit:,}-byte limit on a JSON Lines file")

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        line, total = 0, 0
        while True:
            line += 1
            text = read_line(self.handle, line)
            if not text:
                return
            total += len(text)
            if total > self.limit:
                raise InputError(f"over the {self.limit:,}-byte limit on a JSON Lines file", line)
            complete = text.endswith(b"\n")
            if not text.strip():
                if self.skip_blank:
                    continue
                if complete:
                    raise InputError("blank line; every line is one JSON object", line)
                self.cut_short = line
                return
            try:
                value = parse_json(text, line)
            except InputError:
                if complete:
                    raise
                self.cut_short = line  # no newline and no JSON value: the writer stopped mid-line
                return
            yield line, value


def parse_json(data: bytes, line: int | None = None, max_depth: int = MAX_DEPTH, *,
               unique_keys: bool = False) -> Any:
    """Strict JSON (no NaN or Infinity) within the number and depth limits, or InputError.

    With `unique_keys`, an object that says a key twice is refused (the careful path only:
    used for headers, documents and replies, not for every step line of a trace).
    The limits are checked on the text, before the parser builds anything. Text that
    cannot reach them (no more brackets than the depth limit, no integer orjson would turn
    into a float: orjson_exact) goes to orjson first, several times faster than
    json; anything orjson refuses (lone surrogate escapes, which json accepts, among them)
    takes the strict path below, which accepts exactly what it always did and names the
    problem in its own words."""
    shape = data.translate(ORJSON_SHAPE)
    if not unique_keys and shape.count(b"[") <= max_depth and orjson_exact(shape):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"not UTF-8: byte {error.object[error.start]:#04x} at column "
                         f"{error.start + 1}", line) from None
    problem = text_problem(data, max_depth)
    if problem:
        raise InputError(problem, line)
    try:
        return json.loads(text, parse_constant=_no_constant,
                          object_pairs_hook=unique_object if unique_keys else None)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno} column {error.colno}" if line is None else f"column {error.colno}"
        raise InputError(f"not JSON: {error.msg} at {where}", line) from None
    except RecursionError:  # unbalanced text that slipped past the depth count
        raise InputError(f"not JSON within limits: nested deeper than {max_depth} levels", line) from None
    except _Refused as refused:
        raise InputError(str(refused), line) from None


class _Refused(ValueError):
    pass


def unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object_pairs_hook for text whose objects must not say a key twice: which of two
    values counts is nowhere specified, so such text is refused rather than read either way."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refused(f"the key {key[:80]!r} appears twice in one object")
            seen.add(key)
    return out


def _no_constant(name: str) -> Any:
    raise _Refused(f"{name} is not JSON")


_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"')
_BRACKETS = bytes(range(256)).translate(None, b"[]{}")
#: The text with every digit as 0, every opening bracket as [, every minus as - and all
#: else blank: what the fast path looks at (a bytes search, far cheaper than a regex). Text
#: whose shape has no more [ than the depth limit and passes orjson_exact is parsed by
#: orjson as json would.
ORJSON_SHAPE = bytes(ord("0") if chr(c).isdigit() and c < 128 else ord("[") if c in b"[{" else c if c == ord("-")
                     else ord(" ") for c in range(256))
#: A digit run long enough to reach 2^64, where orjson parses an integer as a float and
#: json does not. (Searched with find: `in` first tries the needle as a byte value and
#: formats a TypeError, which costs more than the search.)
ORJSON_UNSAFE = b"0" * 20
#: A minus and 19 digits: a negative integer that may lie below -2^63, read as a float too.
ORJSON_UNSAFE_NEGATIVE = b"-" + b"0" * 19


def orjson_exact(shape: bytes) -> bool:
    """Whether orjson reads every integer of the text whose ORJSON_SHAPE is `shape` as an
    integer: none of 20 digits or more (2^64 has 20), and no minus before 19 digits that
    could start a number (one after a digit is inside a string: a nanosecond instant in an
    id, "c0-1735689600001307081", which must not send every line of a capture to json).
    19 digits alone stay below 10^19 < 2^64, which orjson reads exactly."""
    if shape.find(ORJSON_UNSAFE) >= 0:
        return False
    at = shape.find(ORJSON_UNSAFE_NEGATIVE)
    while at >= 0:
        if at == 0 or shape[at - 1] != ord("0"):
            return False
        at = shape.find(ORJSON_UNSAFE_NEGATIVE, at + 1)
    return True
_LONG_NUMBER = re.compile(rb"[0-9]{%d}" % (MAX_INT_DIGITS + 1))


def text_problem(data: bytes, max_depth: int = MAX_DEPTH) -> str | None:
    """Why JSON text `data` is past the number or nesting limits, or None.

    Strings are cut out first (a bracket or digit inside one counts for nothing); then
    innermost pairs of brackets are removed, one level per pass, all in C. Text with no
    more brackets than the limit and no long digit run anywhere passes at once."""
    if data.count(b"[") + data.count(b"{") <= max_depth and not _LONG_NUMBER.search(data):
        return None
    outside = _STRING.sub(b'""', data)
    number = _LONG_NUMBER.search(outside)
    if number:
        return f"a number of more than {MAX_INT_DIGITS} digits (the limit on numbers)"
    if nested_deeper(outside, max_depth, strings_removed=True):
        return f"nested deeper than {max_depth} levels (the limit on JSON nesting)"
    return None


def nested_deeper(data: bytes, max_depth: int, *, strings_removed: bool = False) -> bool:
    """Whether JSON text `data` nests arrays and objects deeper than `max_depth` (brackets
    inside strings count for nothing), judged on the text before anything is parsed."""
    if data.count(b"[") + data.count(b"{") <= max_depth:
        return False
    brackets = (data if strings_removed else _STRING.sub(b'""', data)).translate(None, _BRACKETS)
    opened = re.compile(rb"[\[{]{%d}" % (max_depth + 1))
    for _ in range(max_depth + 1):
        if opened.search(brackets):
            return True  # that many consecutive openers: deeper than the limit at once
        shorter = brackets.replace(b"[]", b"").replace(b"{}", b"")
        if not shorter or shorter == brackets:
            return False  # all closed within the limit, or unbalanced (the parser says where)
        brackets = shorter
    return True


def check_int_text(digits: str) -> None:
    """For integers written as strings (ITF's #bigint): the same digit limit."""
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise LimitExceeded(f"an integer of {len(digits.lstrip('-')):,} digits, over the "
                            f"{MAX_INT_DIGITS}-digit limit")

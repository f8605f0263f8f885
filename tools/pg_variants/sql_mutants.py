"""Single textual mutants of resonate-pg's resonate.sql, by operator, inside function bodies only.

Where tools/pg_variants/variants.py holds ten bugs someone wrote, this enumerates every edit
of a few mechanical kinds nobody chose, the SQL counterpart of tools/mutate/'s AST operators:

- `cmp`: a comparison flipped at its boundary or negated: `<=` <-> `<`, `>=` <-> `>`, `=` <->
  `<>` (and `!=` -> `=`), wherever a condition compares (WHERE, IF, WHILE, CASE WHEN, a
  boolean SELECT); never `:=`, `=>`, nor the `=` of an `UPDATE ... SET` list;
- `for-update`: a `FOR UPDATE` row lock dropped; a `FOR UPDATE SKIP LOCKED` dropped whole,
  and its `SKIP LOCKED` alone;
- `lock`: a statement taking an advisory lock dropped (`PERFORM _lock(...)`, and the
  `pg_advisory_xact_lock` call inside `_lock` itself);
- `order-by`: one key of an `ORDER BY` reversed (`ASC` <-> `DESC`; a key with neither gets
  `DESC`);
- `off-by-one`: an integer literal moved by one (`version + 1` -> `version + 2`, a cron
  field's bound 59 -> 60, `LIMIT`s, loop bounds), HTTP statuses (every literal from 100 to
  599 in resonate.sql's functions is one) left out; and an integer sum or difference whose
  right operand is not a literal shifted by one (`p_now + p_ttl` -> `p_now + p_ttl + 1`, and
  `- 1`), interval arithmetic left out;
- `drop-statement`: an `UPDATE`, `INSERT`, `DELETE` or `PERFORM` statement removed (a
  `PERFORM _lock` is `lock`'s).

Only the bodies of `CREATE FUNCTION` are mutated (not the tables, the `DO` blocks nor the
grants), and not the functions of NOT_MUTATED, which nothing the README's commands run can
call. Strings, quoted identifiers and comments are never touched.

A mutant is named by `id`: operator, function, line, and the snippet before and after
(`cmp promise_settle:460 p.timeout_at > p_now -> p.timeout_at >= p_now`), with `#2` when
the same line has the same edit twice: stable while resonate.sql stays at its pinned
commit (tests/pg_support.py's RESONATE_PG_COMMIT). `apply` refuses a mutant whose text is
no longer where it was found, as variants.apply refuses a variant whose text moved.

    python tools/pg_variants/sql_mutants.py            # the mutants, one a line, with their ids
"""

from __future__ import annotations

import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path

OPERATORS = ("cmp", "for-update", "lock", "order-by", "off-by-one", "drop-statement")

#: Functions no command of examples/resonate-pg/README.md can call, left unmutated (as
#: tools/mutate/operators.py leaves out what no campaign calls): the adapter
#: (examples/resonate-pg/target.py) calls resonate_rpc, process_timeouts(now), the two
#: _on_*_timeout transitions, the two dequeues and _retry_timeout, and these are reached
#: from none of them. A name with `()` names its overload without arguments only.
NOT_MUTATED: dict[str, str] = {
    "get_schema_version": "a version string for people; nothing on the wire reads it",
    "invoke": "resonate.invoke, the SQL entry point for applications; resonate_rpc never calls it",
    "gc": "retention: nothing calls gc but an operator's cron job",
    "outbox_channel": "names the NOTIFY channel only; the adapter polls, it does not LISTEN",
    "_http_available": "pg_net is not installed on the test server; the http branch then asks "
                       "_http_sync_schema, which finds no http_post either",
    "_http_sync_schema": "finds no pgsql-http on the test server (no http_post function exists)",
    "_outbox_http_body": "called only when an http push extension exists, never on the test server",
    "process_timeouts()": "the overload without arguments, reading the clock, which pg_cron calls; the "
                          "test server has no pg_cron, and the adapter calls process_timeouts(now)",
}


@dataclass(frozen=True)
class Function:
    name: str
    arguments: str  # the signature's text between its parentheses
    line: int   # of CREATE
    start: int  # offset of the body's first character (after the opening $$)
    end: int    # offset of the closing $$


@dataclass(frozen=True)
class SqlMutant:
    operator: str
    function: str
    line: int
    old: str         # the snippet before, for a reader (one line, a word of context each side)
    new: str         # the snippet after
    start: int       # offset of the edited region in resonate.sql
    region: str      # the region's text in resonate.sql
    replacement: str
    occurrence: int = 1  # the same edit's rank on the same line (>1: `#n` in the id)

    @property
    def id(self) -> str:
        suffix = f" #{self.occurrence}" if self.occurrence > 1 else ""
        return f"{self.operator} {self.function}:{self.line} {self.old} -> {self.new}{suffix}"

    @property
    def end(self) -> int:
        return self.start + len(self.region)


class MutantError(ValueError):
    """A mutant that does not apply: its text is not where it was found."""


# --- a lexer good enough for resonate.sql --------------------------------------------------

_OP_CHARS = set("+-*/<>=~!@#%^&|`?")
_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>--[^\n]*|/\*.*?\*/)
  | (?P<estring>[eE]'(?:[^'\\]|\\.|'')*')
  | (?P<string>'(?:[^']|'')*')
  | (?P<quoted>"(?:[^"]|"")*")
  | (?P<dollar>\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$)
  | (?P<param>\$\d+)
  | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<op>[-+*/<>=~!@\#%^&|`?]+)
  | (?P<punct>.)
""", re.S | re.X)


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    start: int

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.upper() in words


def tokens(source: str, start: int = 0, end: int | None = None) -> list[Token]:
    """The tokens of source[start:end], whitespace and comments included (kinds `ws`,
    `comment`), each with its offset in `source`."""
    end = len(source) if end is None else end
    out = []
    position = start
    while position < end:
        match = _TOKEN.match(source, position, end)
        assert match is not None  # `punct` matches any character
        kind = match.lastgroup or "punct"
        text = match.group()
        if kind == "op" and "--" in text:  # a comment starts inside an operator-looking run
            text = text[:text.index("--")]
            if not text:
                match = re.compile(r"--[^\n]*").match(source, position, end)
                assert match is not None
                kind, text = "comment", match.group()
        out.append(Token(kind, text, position))
        position += len(text)
    return out


def _significant(toks: list[Token]) -> list[Token]:
    return [t for t in toks if t.kind not in ("ws", "comment")]


_CREATE = re.compile(r"\bCREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(?:\w+\.)?(\w+)\s*\(", re.I)


def functions(source: str) -> list[Function]:
    """Every CREATE FUNCTION of the file with the span of its dollar-quoted body."""
    found = []
    toks = tokens(source)
    index = 0
    while index < len(toks):
        token = toks[index]
        if token.is_word("CREATE"):
            match = _CREATE.match(source, token.start)
            if match:
                # the body: the first dollar quote after the signature, to its twin
                opening = next(t for t in toks[index:] if t.kind == "dollar")
                closing = source.index(opening.text, opening.end)
                signature = [t for t in toks[index:] if t.start >= match.end() - 1 and t.end <= opening.start]
                arguments = source[match.end():signature[_after_group(signature, 0) - 1].start]
                found.append(Function(match.group(1), " ".join(arguments.split()),
                                      source.count("\n", 0, token.start) + 1, opening.end, closing))
                while toks[index].start < closing + len(opening.text):
                    index += 1
                continue
        index += 1
    return found


# --- the operators ----------------------------------------------------------------------------

_CMP_FLIP = {"<=": "<", "<": "<=", ">=": ">", ">": ">=", "=": "<>", "<>": "=", "!=": "="}
#: Words after which a plpgsql statement starts.
_STATEMENT_AFTER = {"BEGIN", "THEN", "ELSE", "LOOP"}
#: Words ending an ORDER BY's list of keys.
_ORDER_END = {"LOOP", "LIMIT", "FOR", "ON", "OFFSET", "FETCH"}
#: Words ending an UPDATE's SET list.
_SET_END = {"WHERE", "FROM", "RETURNING"}
#: Tokens that may follow an integer operand we shift by one (not `interval '1 day'`, not a
#: product: `a + b * c` is left alone).
_AFTER_OPERAND = {";", ",", ")", "]"}
_AFTER_OPERAND_WORDS = {"THEN", "LOOP", "WHERE", "END", "AND", "OR", "FROM", "RETURNING", "ELSE",
                        "INTO", "WHEN", "ORDER", "LIMIT"}
_KEYWORDS_BEFORE_UNARY = {"SELECT", "RETURN", "THEN", "ELSE", "WHEN", "AND", "OR", "NOT", "IN", "BY",
                          "LIMIT", "IS", "LOOP"}


@dataclass(frozen=True)
class _Edit:
    operator: str
    start: int
    end: int
    replacement: str
    statement: bool = False  # a whole statement dropped (named by its first line)


def _edits(source: str, function: Function) -> list[_Edit]:
    toks = _significant(tokens(source, function.start, function.end))
    edits: list[_Edit] = []
    depth = 0
    set_depth: int | None = None  # inside an UPDATE's SET list at this paren depth
    expect_assignment = False
    for index, token in enumerate(toks):
        before = toks[index - 1] if index else None
        if token.text == "(":
            depth += 1
        elif token.text == ")":
            depth -= 1
            if set_depth is not None and depth < set_depth:
                set_depth = None
        elif token.text == ";":
            set_depth = None
        elif token.is_word("SET"):
            set_depth, expect_assignment = depth, True
        elif set_depth is not None and depth == set_depth and token.is_word(*_SET_END):
            set_depth = None
        elif set_depth is not None and depth == set_depth and token.text == ",":
            expect_assignment = True

        if token.kind == "op" and token.text in _CMP_FLIP:
            if set_depth is not None and depth == set_depth and expect_assignment and token.text == "=":
                expect_assignment = False
            elif not (token.text == "=" and before is not None and before.text == ":"
                      and before.end == token.start):
                edits.append(_Edit("cmp", token.start, token.end, _CMP_FLIP[token.text]))

        if token.is_word("FOR") and index + 1 < len(toks) and toks[index + 1].is_word("UPDATE"):
            update = toks[index + 1]
            skip = (index + 3 < len(toks) and toks[index + 2].is_word("SKIP") and toks[index + 3].is_word("LOCKED"))
            last = toks[index + 3] if skip else update
            assert before is not None
            edits.append(_Edit("for-update", before.end, last.end, ""))
            if skip:
                edits.append(_Edit("for-update", update.end, last.end, ""))

        if token.is_word("ORDER") and index + 1 < len(toks) and toks[index + 1].is_word("BY"):
            edits.extend(_order_by(toks, index + 2))

        if token.kind == "number" and re.fullmatch(r"\d+", token.text):
            value = int(token.text)
            if not 100 <= value <= 599:
                for other in (value + 1, value - 1):
                    edits.append(_Edit("off-by-one", token.start, token.end, str(other)))

        if token.kind == "op" and token.text in ("+", "-") and _binary(before):
            edits.extend(_shifted_operand(toks, index + 1))

        if depth == 0 and (before is None or before.text == ";" or before.is_word(*_STATEMENT_AFTER)) \
                and token.is_word("UPDATE", "INSERT", "DELETE", "PERFORM", "SELECT"):
            edit = _statement(source, toks, index, function)
            if edit is not None:
                edits.append(edit)
    return edits


def _binary(before: Token | None) -> bool:
    """Whether a + or - after `before` is a binary operator (not a sign)."""
    if before is None:
        return False
    if before.kind in ("number", "string", "estring", "quoted"):
        return True
    if before.kind == "word":
        return before.text.upper() not in _KEYWORDS_BEFORE_UNARY
    return before.text in (")", "]")


def _operand_end(toks: list[Token], index: int) -> int | None:
    """The index after one primary operand starting at toks[index] (a name, a call, a
    parenthesised group, each with casts and subscripts), or None."""
    if index >= len(toks):
        return None
    token = toks[index]
    if token.kind == "word":
        index += 1
        while index + 1 < len(toks) and toks[index].text == "." and toks[index + 1].kind == "word":
            index += 2
        if index < len(toks) and toks[index].text == "(":
            index = _after_group(toks, index)
    elif token.text == "(":
        index = _after_group(toks, index)
    else:
        return None
    while index < len(toks) and toks[index].text in ("[", ":"):
        if toks[index].text == "[":
            index = _after_group(toks, index, "[", "]")
        elif index + 2 < len(toks) and toks[index + 1].text == ":" and toks[index + 2].kind == "word":
            index += 3
        else:
            break
    return index


def _after_group(toks: list[Token], index: int, opening: str = "(", closing: str = ")") -> int:
    depth = 0
    while index < len(toks):
        depth += (toks[index].text == opening) - (toks[index].text == closing)
        index += 1
        if depth == 0:
            break
    return index


def _shifted_operand(toks: list[Token], index: int) -> list[_Edit]:
    """`a + b` -> `a + b + 1` and `a + b - 1`, when b is a name or a call and what follows
    ends the sum (integer arithmetic; a literal b is the literal operator's)."""
    end = _operand_end(toks, index)
    if end is None or end >= len(toks):
        return []
    after = toks[end]
    if not (after.text in _AFTER_OPERAND or after.is_word(*_AFTER_OPERAND_WORDS)
            or (after.kind == "op" and after.text in {*_CMP_FLIP, "+", "-"})):
        return []
    at = toks[end - 1].end
    return [_Edit("off-by-one", at, at, " + 1"), _Edit("off-by-one", at, at, " - 1")]


def _order_by(toks: list[Token], index: int) -> list[_Edit]:
    """One edit per key of the ORDER BY whose keys start at toks[index]."""
    edits = []
    depth = 0
    last: Token | None = None
    while index < len(toks):
        token = toks[index]
        if depth == 0 and (token.text in (",", ";", ")") or token.is_word(*_ORDER_END)):
            assert last is not None
            if last.is_word("ASC", "DESC"):
                edits.append(_Edit("order-by", last.start, last.end, "DESC" if last.is_word("ASC") else "ASC"))
            else:
                edits.append(_Edit("order-by", last.end, last.end, " DESC"))
            if token.text != ",":
                break
        else:
            depth += (token.text == "(") - (token.text == ")")
        last = token
        index += 1
    else:  # the body ends the key list (a SQL function without a final `;`)
        assert last is not None
        edits.append(_Edit("order-by", last.end, last.end, " DESC"))
    return edits


def _statement(source: str, toks: list[Token], index: int, function: Function) -> _Edit | None:
    """Dropping the statement starting at toks[index], if it is one of the kinds dropped: a
    `lock` edit for one that takes an advisory lock, `drop-statement` for a data change."""
    first = toks[index]
    depth = 0
    stop = index
    while stop < len(toks) and not (depth == 0 and toks[stop].text == ";"):
        depth += (toks[stop].text == "(") - (toks[stop].text == ")")
        stop += 1
    end = toks[stop].end if stop < len(toks) else toks[-1].end
    text = source[first.start:end]
    locks = re.match(r"(?:PERFORM\s+_lock\s*\(|SELECT\s+pg_advisory_xact_lock\s*\()", text, re.I)
    if locks:
        operator = "lock"
    elif first.is_word("SELECT"):
        return None
    else:
        operator = "drop-statement"
    # Take the statement's whole lines when nothing else shares them, else just its text.
    line_start = source.rfind("\n", 0, first.start) + 1
    line_end = source.find("\n", end)
    line_end = len(source) if line_end < 0 else line_end
    if (not source[line_start:first.start].strip() and not source[end:line_end].strip()
            and line_start >= function.start and line_end < function.end):
        return _Edit(operator, line_start, line_end + 1, "", statement=True)
    trailing = len(source[end:line_end]) - len(source[end:line_end].lstrip(" "))
    return _Edit(operator, first.start, end + trailing, "", statement=True)


# --- naming and applying --------------------------------------------------------------------

def _region_line(source: str, start: int, region: str) -> int:
    """The line of the region's first character that is not white space (its own line
    for a clause or statement that starts on a line of its own)."""
    leading = region[:len(region) - len(region.lstrip())]
    return source.count("\n", 0, start) + leading.count("\n") + 1


def _context(text: str, pattern: str, find) -> re.Match[str]:  # type: ignore[no-untyped-def]
    """A word of context on one side of an edit (two when that word is an operator: `id =
    p_id`, not `= p_id`), as far as the line has words."""
    for words in (1, 0):
        match = find(pattern % words, text)
        if match:
            break
    assert match is not None
    whole = match.group().split()
    if whole and re.fullmatch(r"[-+*/<>=~!@#%^&|`?]+", whole[0 if find is re.search else -1]):
        wider = find(pattern % 2, text)
        if wider:
            return wider  # type: ignore[no-any-return]
    return match  # type: ignore[no-any-return]


def _snippets(source: str, edit: _Edit) -> tuple[str, str]:
    if edit.statement:
        region = source[edit.start:edit.end].strip()
        first = region.splitlines()[0].strip()
        return first + (" ..." if "\n" in region else ""), "(dropped)"
    line_start = source.rfind("\n", 0, edit.start) + 1
    line_end = source.find("\n", edit.end)
    line_end = len(source) if line_end < 0 else line_end
    left = _context(source[line_start:edit.start], r"(?:\S+\s+){%d}\S*$", re.search)
    right = _context(source[edit.end:line_end], r"^\S*(?:\s+\S+){%d}", re.match)
    region = source[edit.start:edit.end]
    if "\n" in region:  # a clause on its own line dropped: name its text
        region_text = " ".join(region.split())
        return f"{left.group()} {region_text}".strip(), left.group().strip() or "(dropped)"
    old = (left.group() + region + right.group()).strip()
    new = (left.group() + edit.replacement + right.group()).strip()
    return old, new


def mutants(source: str) -> list[SqlMutant]:
    """Every mutant of `source` (resonate.sql's text), in file order, each with its id."""
    found: list[SqlMutant] = []
    seen: dict[tuple[str, str, int, str, str], int] = {}
    for function in functions(source):
        if function.name in NOT_MUTATED or (not function.arguments and f"{function.name}()" in NOT_MUTATED):
            continue
        for edit in sorted(_edits(source, function), key=lambda e: (e.start, e.end)):
            line = _region_line(source, edit.start, source[edit.start:edit.end])
            old, new = _snippets(source, edit)
            key = (edit.operator, function.name, line, old, new)
            seen[key] = seen.get(key, 0) + 1
            found.append(SqlMutant(edit.operator, function.name, line, old, new, edit.start,
                                   source[edit.start:edit.end], edit.replacement, seen[key]))
    ids = [m.id for m in found]
    assert len(ids) == len(set(ids)), "two mutants share an id"
    return found


def apply(mutant: SqlMutant, source: str) -> str:
    """`source` with the mutant's edit made, or MutantError if its text is not where it was
    found (resonate.sql moved: enumerate its mutants again)."""
    if (source[mutant.start:mutant.end] != mutant.region
            or _region_line(source, mutant.start, mutant.region) != mutant.line):
        raise MutantError(f"mutant {mutant.id}: its text is not at line {mutant.line} of this resonate.sql")
    return source[:mutant.start] + mutant.replacement + source[mutant.end:]


def write_mutant(mutant: SqlMutant, sql: Path, directory: Path, name: str) -> Path:
    """Write the mutant of `sql` into `directory` (a temporary one; never the original)."""
    out = Path(directory) / f"resonate-{name}.sql"
    if out.resolve() == Path(sql).resolve():
        raise MutantError("refusing to overwrite the original resonate.sql")
    out.write_text(apply(mutant, Path(sql).read_text()))
    return out


def stratified_sample(everything: list[SqlMutant], size: int, seed: int) -> list[SqlMutant]:
    """`size` mutants: each operator gets its share in proportion to its count (largest
    remainders; at least one each while `size` allows), drawn uniformly within the
    operator with `seed`; the whole shuffled, so a run cut short still covers every operator."""
    rng = random.Random(seed)
    by_operator = {op: [m for m in everything if m.operator == op] for op in OPERATORS}
    by_operator = {op: ms for op, ms in by_operator.items() if ms}
    size = min(size, len(everything))
    quotas = {op: 0 for op in by_operator}
    if size >= len(by_operator):
        quotas = {op: 1 for op in by_operator}
    left = size - sum(quotas.values())
    shares = {op: left * len(ms) / len(everything) for op, ms in by_operator.items()}
    for op in shares:
        quotas[op] += int(shares[op])
    rest = size - sum(quotas.values())
    for op in sorted(shares, key=lambda o: (-(shares[o] - int(shares[o])), OPERATORS.index(o)))[:rest]:
        quotas[op] += 1
    # an operator with fewer mutants than its quota gives the rest to those with most left
    quotas = {op: min(q, len(by_operator[op])) for op, q in quotas.items()}
    while sum(quotas.values()) < size:
        op = max(by_operator, key=lambda o: (len(by_operator[o]) - quotas[o], -OPERATORS.index(o)))
        quotas[op] += 1
    chosen = [m for op, ms in by_operator.items() for m in rng.sample(ms, quotas[op])]
    rng.shuffle(chosen)
    return chosen


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    import pg_support

    for mutant in mutants(pg_support.resonate_sql().read_text()):
        print(mutant.id)

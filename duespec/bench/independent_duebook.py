"""A duebook written from docs/operations.md, docs/protocol.md and spec/duebook.md alone,
as a stranger would: a stdio program that imports nothing from duespec (standard library
only), with realistic single bugs that `--bug NAME` switches on, one at a time.

It is the mutation benchmark's target: `duespec conform duebook` with default settings
must catch every variant (tests/test_independent_variants.py, `duespec bench --only
variants`). Run it as `stdio:python -m duespec.bench.independent_duebook [--bug NAME]`
or by its path. `--list` prints the variants, one `name: what the bug is` per line.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from typing import Any

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

#: Each realistic bug, by name, with the class it belongs to and what it does.
BUGS: dict[str, str] = {
    # types
    "float-id-accepted": "types: an integral float id (1.0) is taken as the integer 1",
    "numeric-string-now": "types: now given as a numeric string (\"5\") is parsed as 5",
    "range-not-type-now": "types: now is checked for range only, so 1.5 or true passes",
    "bool-is-int": "types: a boolean passes the integer check (True as id 1, limit 1)",
    "float-delay-accepted": "types: an integral float delay (5.0) is accepted as 5",
    "numeric-string-limit": "types: a numeric string limit (\"2\") is parsed as 2",
    # config
    "cap-wrong-key": "config: the cap is read from 'maxOpen', falling back to 3",
    "cap-one-is-two": "config: a cap of 1 is raised to 2 ('a book needs room to swap')",
    "cap-int32": "config: the cap is stored in an int32 and wraps for caps >= 2^31",
    # owners
    "cancel-case-folds": "owners: cancel compares caller and owner case-insensitively",
    "owner-nfc-stored": "owners: owners are NFC-normalized when scheduled",
    "cancel-nfc-compare": "owners: cancel compares NFC-normalized caller and owner",
    "owner-trimmed": "owners: owners are stripped of surrounding whitespace when scheduled",
    "cancel-trims-caller": "owners: cancel strips the caller before comparing",
    "cancel-prefix-match": "owners: cancel accepts a caller the owner starts with",
    "owner-truncated": "owners: owners are stored truncated to 255 characters",
    # depth
    "id-block-skip": "depth: ids come in blocks of 256 and the first id of each new block is skipped",
    "ties-reversed-past-40": "depth: past 40 open, the due index breaks due_at ties newest first",
    "page-boundary-lost": "depth: storage pages of 1024; listing skips each later page's first entry",
    "compaction-rewinds-counter": "depth: compacting after 64 removals recomputes next_id from open ids",
    # reset leak
    "counter-survives-reset": "reset: the id counter is not reset with the book",
    # int64 edges
    "due-at-max-rejected": "int64: a due_at of exactly 2^63-1 is rejected as overflow",
    "expiry-wraps": "int64: expires_at = due_at + ttl wraps around instead of being invalid",
    "times-as-doubles": "int64: times pass through a double, so 2^53+1 becomes 2^53",
    "limit-capped-int32": "int64: a limit above 2^31-1 is rejected as invalid",
    # listing order and edges
    "claimable-by-id": "order: claimable lists by id instead of (due_at, id)",
    "expirable-by-due": "order: expirable lists by (due_at, id) instead of (expires_at, id)",
    "claim-at-expiry": "edges: a claim at now = expires_at still succeeds (closed window)",
    "limit-zero-unlimited": "edges: a limit of 0 lists everything",
    "full-burns-id": "failures: a schedule refused as full still advances the id counter",
}


class Invalid(Exception):
    pass


class Book:
    def __init__(self, config: dict[str, Any], bug: str | None, first_id: int = 1) -> None:
        self.bug = bug
        cap = config.get("maxOpen", 3) if bug == "cap-wrong-key" else config.get("max_open")
        if type(cap) is not int or not 1 <= cap <= INT64_MAX:
            raise ValueError(f"max_open must be an int64 >= 1, got {cap!r}")
        if bug == "cap-one-is-two" and cap == 1:
            cap = 2
        if bug == "cap-int32":
            cap = (cap + 2**31) % 2**32 - 2**31
        self.max_open = cap
        self.next_id = first_id
        self.open: dict[int, dict[str, Any]] = {}
        self.removed_since_compaction = 0

    # --- input checks (operations.md: int64, booleans and floats are not integers) ---

    def id(self, value: Any) -> int:
        if self.bug == "float-id-accepted" and type(value) is float and value.is_integer():
            value = int(value)
        if self.bug == "bool-is-int" and type(value) is bool:
            value = int(value)
        return integer(value)

    def time(self, value: Any) -> int:
        bug = self.bug
        if bug == "numeric-string-now" and type(value) is str and value.isdigit():
            value = int(value)
        if bug == "range-not-type-now" and type(value) in (int, float, bool):
            if not 0 <= value <= INT64_MAX:
                raise Invalid()
            return value  # type: ignore[return-value]
        if bug == "times-as-doubles" and type(value) is int:
            value = int(float(value))
        return integer(value, 0)

    def duration(self, value: Any) -> int:
        if self.bug == "float-delay-accepted" and type(value) is float and value.is_integer():
            value = int(value)
        return integer(value, 0)

    def limit(self, value: Any) -> int:
        if self.bug == "numeric-string-limit" and type(value) is str and value.isdigit():
            value = int(value)
        if self.bug == "bool-is-int" and type(value) is bool:
            value = int(value)
        limit = integer(value, 0)
        if self.bug == "limit-capped-int32" and limit > 2**31 - 1:
            raise Invalid()
        return limit

    def owner(self, value: Any) -> str:
        if type(value) is not str or value == "":
            raise Invalid()
        return value

    # --- operations ---

    def schedule(self, owner: Any, delay: Any, ttl: Any, now: Any) -> Any:
        owner = self.owner(owner)
        now = self.time(now)
        delay, ttl = self.duration(delay), self.duration(ttl)
        due_at = now + delay
        if due_at > INT64_MAX or (self.bug == "due-at-max-rejected" and due_at == INT64_MAX):
            raise Invalid()
        expires_at = 0 if ttl == 0 else due_at + ttl
        if expires_at > INT64_MAX:
            if self.bug != "expiry-wraps":
                raise Invalid()
            expires_at -= 2**64
        if len(self.open) >= self.max_open:
            if self.bug == "full-burns-id":
                self.next_id += 1
            return "full"
        if self.bug == "owner-nfc-stored":
            owner = unicodedata.normalize("NFC", owner)
        if self.bug == "owner-trimmed":
            owner = owner.strip() or owner
        if self.bug == "owner-truncated":
            owner = owner[:255]
        if self.bug == "id-block-skip" and self.next_id > 1 and self.next_id % 256 == 0:
            self.next_id += 1
        deferral = {"id": self.next_id, "owner": owner, "due_at": due_at, "expires_at": expires_at}
        self.open[self.next_id] = deferral
        self.next_id += 1
        return deferral

    def claim(self, id: Any, now: Any) -> Any:
        id = self.id(id)
        now = self.time(now)
        deferral = self.open.get(id)
        if deferral is None:
            return "not_found"
        if now < deferral["due_at"]:
            return "not_due"
        closes = deferral["expires_at"]
        if closes and (now > closes if self.bug == "claim-at-expiry" else now >= closes):
            return "expired"
        return self.remove(id)

    def cancel(self, id: Any, caller: Any) -> Any:
        id = self.id(id)
        caller = self.owner(caller)
        deferral = self.open.get(id)
        if deferral is None:
            return "not_found"
        if not self.same_owner(deferral["owner"], caller):
            return "not_owner"
        return self.remove(id)

    def same_owner(self, owner: str, caller: str) -> bool:
        bug = self.bug
        if bug == "cancel-case-folds":
            return owner.casefold() == caller.casefold()
        if bug == "cancel-nfc-compare":
            return unicodedata.normalize("NFC", owner) == unicodedata.normalize("NFC", caller)
        if bug == "cancel-trims-caller":
            return owner == caller.strip()
        if bug == "cancel-prefix-match":
            return owner.startswith(caller)
        return owner == caller

    def expire(self, id: Any, now: Any) -> Any:
        id = self.id(id)
        now = self.time(now)
        deferral = self.open.get(id)
        if deferral is None:
            return "not_found"
        if deferral["expires_at"] == 0 or now < deferral["expires_at"]:
            return "not_expired"
        return self.remove(id)

    def get(self, id: Any) -> Any:
        deferral = self.open.get(self.id(id))
        return "not_found" if deferral is None else dict(deferral)

    def claimable(self, now: Any, limit: Any) -> Any:
        now, limit = self.time(now), self.limit(limit)
        ready = [d for d in self.stored() if d["due_at"] <= now
                 and (d["expires_at"] == 0 or now < d["expires_at"])]
        if self.bug == "claimable-by-id":
            ready.sort(key=lambda d: d["id"])
        elif self.bug == "ties-reversed-past-40" and len(self.open) > 40:
            ready.sort(key=lambda d: (d["due_at"], -d["id"]))
        else:
            ready.sort(key=lambda d: (d["due_at"], d["id"]))
        return self.first(ready, limit)

    def expirable(self, now: Any, limit: Any) -> Any:
        now, limit = self.time(now), self.limit(limit)
        late = [d for d in self.stored() if d["expires_at"] != 0 and d["expires_at"] <= now]
        key = "due_at" if self.bug == "expirable-by-due" else "expires_at"
        late.sort(key=lambda d: (d[key], d["id"]))
        return self.first(late, limit)

    def first(self, listed: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
        if limit == 0 and self.bug == "limit-zero-unlimited":
            return [dict(d) for d in listed]
        return [dict(d) for d in listed[:limit]]

    def stored(self) -> list[dict[str, Any]]:
        """Every open deferral by id, read page by page as a paged store would."""
        rows = sorted(self.open.values(), key=lambda d: d["id"])
        if self.bug == "page-boundary-lost":
            rows = [row for n, row in enumerate(rows) if n < 1024 or n % 1024]
        return rows

    def remove(self, id: int) -> dict[str, Any]:
        deferral = self.open.pop(id)
        self.removed_since_compaction += 1
        if self.removed_since_compaction > 64 and self.removed_since_compaction > len(self.open):
            self.removed_since_compaction = 0
            if self.bug == "compaction-rewinds-counter":
                self.next_id = max(self.open, default=0) + 1
        return deferral

    def observe(self) -> dict[str, Any]:
        return {"max_open": self.max_open, "next_id": self.next_id,
                "open": [dict(d) for d in self.stored()]}


def integer(value: Any, low: int = INT64_MIN) -> int:
    """operations.md: an int64 (at least `low`); booleans and floats are not integers."""
    if type(value) is not int or not low <= value <= INT64_MAX:
        raise Invalid()
    return value


#: spec/duebook.md D-27: each op's exact argument names.
ARGUMENTS = {"schedule": {"owner", "delay", "ttl"}, "claim": {"id"}, "cancel": {"id", "caller"},
             "expire": {"id"}, "get": {"id"}, "claimable": {"limit"}, "expirable": {"limit"}}


def step(book: Book, op: Any, args: Any, now: Any) -> dict[str, Any]:
    if not isinstance(op, str) or op not in ARGUMENTS:
        return {"error": "invalid", "message": f"unknown op {op!r}"}
    if not isinstance(args, dict) or set(args) != ARGUMENTS[op]:
        return {"error": "invalid", "message": f"{op} takes {sorted(ARGUMENTS[op])}"}
    try:
        if op == "schedule":
            value = book.schedule(args["owner"], args["delay"], args["ttl"], now)
        elif op == "claim":
            value = book.claim(args["id"], now)
        elif op == "cancel":
            value = book.cancel(args["id"], args["caller"])
        elif op == "expire":
            value = book.expire(args["id"], now)
        elif op == "get":
            value = book.get(args["id"])
        elif op == "claimable":
            value = book.claimable(now, args["limit"])
        elif op == "expirable":
            value = book.expirable(now, args["limit"])
    except Invalid:
        return {"error": "invalid"}
    if isinstance(value, str):
        return {"error": value}
    return {"ok": value}


def serve(bug: str | None) -> None:
    book: Book | None = None
    issued = 1
    for line in sys.stdin:
        request = json.loads(line)
        kind = request.get("type")
        try:
            if kind == "hello":
                reply = {"type": "hello", "protocol": 1, "systems": ["duebook"],
                         "name": f"independent duebook ({bug or 'no bug'})"}
            elif kind == "reset":
                if book is not None and bug == "counter-survives-reset":
                    issued = book.next_id
                book = Book(request.get("config") or {"max_open": 3}, bug,
                            issued if bug == "counter-survives-reset" else 1)
                reply = {"type": "reset"}
            elif kind == "step" and book is not None:
                reply = {"type": "step", "response": step(book, request["op"], request["args"], request["now"])}
            elif kind == "observe" and book is not None:
                reply = {"type": "observe", "state": book.observe()}
            else:
                reply = {"type": "error", "message": f"unexpected request {kind!r}"}
        except (KeyError, ValueError) as error:
            reply = {"type": "error", "message": f"{type(error).__name__}: {error}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def main(argv: list[str]) -> int:
    if argv == ["--list"]:
        for name, what in BUGS.items():
            print(f"{name}: {what}")
        return 0
    bug = None
    if argv[:1] == ["--bug"] and len(argv) == 2:
        bug = argv[1]
    elif argv:
        print("usage: independent_duebook.py [--bug NAME | --list]", file=sys.stderr)
        return 2
    if bug is not None and bug not in BUGS:
        print(f"unknown bug {bug!r}; --list shows them", file=sys.stderr)
        return 2
    serve(bug)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

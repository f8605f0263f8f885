"""duebook's model and implementation behind the JSON contract of docs/operations.md, and
the state a run's responses imply (replay checks a target's state with it, no model run)."""

from __future__ import annotations

import marshal
from operator import attrgetter, is_, itemgetter
from typing import Any, Callable

from duespec.impl import duebook as impl
from duespec.impl import duebook_requests as impl_requests
from duespec.model import duebook as model
from duespec.targets.interface import PROSE_KEYS, Json


def max_open_of(config: dict[str, Json]) -> Json:
    if set(config) != {"max_open"}:
        raise ValueError(f"duebook config is {{'max_open': N}}, got {config!r}")
    return config["max_open"]


class ModelTarget:
    """The reference model behind the JSON contract."""

    def __init__(self) -> None:
        self.book: model.Book | None = None
        #: The ids and the very Deferral objects (in the dict's order) the last observe()
        #: saw, and the rows it gave for them.
        self._seen: tuple[list[int], list[model.Deferral]] | None = None
        self._rows: list[dict[str, Json]] = []

    def reset(self, config: dict[str, Json]) -> None:
        book, code = model.new_book(max_open_of(config))
        if book is None:
            raise ValueError(f"duebook config {config!r} rejected by the model: {code}")
        self.book = book
        self._seen = None

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        assert self.book is not None, "reset() first"
        return model.step(self.book, op, args, now)

    def observe(self) -> dict[str, Json]:
        """model.observe, whose rows are reused while the book holds the very same
        Deferral objects under the same ids: a campaign observes after every rule, many
        rules leave a deep book as it was, and rebuilding its thousands of rows each time
        cost 6% of a campaign. Deferrals are frozen, so the same objects are the same
        values. Each call returns fresh containers, as model.observe does."""
        book = self.book
        assert book is not None, "reset() first"
        ids, deferrals, seen = list(book.open), list(book.open.values()), self._seen
        if seen is None or seen[0] != ids or not all(map(is_, seen[1], deferrals)):
            self._seen, self._rows = (ids, deferrals), model.observe(book)["open"]
        return {"max_open": book.max_open, "next_id": book.next_id, "open": list(self._rows)}

    def close(self) -> None:
        self.book = None


_by_id = itemgetter("id")


def impl_deferral_json(d: Any) -> dict[str, Json]:
    return {"id": d.id, "owner": d.owner, "due_at": d.due_at, "expires_at": d.expires_at}


#: What a careless caller does to a Deferral it was handed (seed, consumer contract 3).
CALLER_EDITS: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("id", lambda v: v + 1000),
    ("owner", lambda v: f"{v}~edited"),
    ("due_at", lambda v: v - 1),
    ("expires_at", lambda v: v - 1),
)


def edit_like_a_caller(value: Any) -> None:
    """Edit every returned Deferral (and a returned list) the plain way a caller could.

    The seed promises values, never pointers into the Book; if the implementation hands
    out a live handle, these edits reach its storage and the next observe() diverges
    from the model's. A frozen value refuses the edit, which is the correct answer."""
    deferrals = value if isinstance(value, list) else [value]
    for deferral in deferrals:
        if type(deferral) is impl.Deferral:
            continue  # frozen, with no __dict__: no edit can land
        for field, edit in CALLER_EDITS:
            try:
                setattr(deferral, field, edit(getattr(deferral, field)))
            except (AttributeError, TypeError):
                pass
    if isinstance(value, list):
        value.clear()


def _response(value: Any) -> dict[str, Json]:
    """A Book's answer as the JSON response, the caller's edits made after it is read."""
    if type(value) is impl.Deferral:
        # Frozen: no edit of a caller's can land (edit_like_a_caller).
        return {"ok": {"id": value.id, "owner": value.owner, "due_at": value.due_at,
                       "expires_at": value.expires_at}}
    if isinstance(value, list):
        response = {"ok": [impl_deferral_json(d) for d in value]}
    else:
        response = {"ok": impl_deferral_json(value)}
    edit_like_a_caller(value)
    return response


#: The ops whose success changes the state: True adds the deferral returned, False removes it.
_CHANGES = {"schedule": True, "claim": False, "cancel": False, "expire": False}


#: The keys an error response may have; only "error" is compared (PROSE_KEYS).
_ERROR_KEYS = frozenset({"error"} | PROSE_KEYS)


_deferral_fields = itemgetter("id", "owner", "due_at", "expires_at")
_impl_fields = attrgetter("id", "owner", "due_at", "expires_at")


def _rows_are(rows: Json, deferrals: list[Any]) -> bool:
    """Whether the JSON value `rows` is exactly the list `deferrals` as a response or a
    state shows it, checked a pass at a time in C: each row has the four fields and no
    other key, and the rows' fields marshal to the same bytes as the Deferrals' (marshal
    writes int, bool, float and str each its own way and refuses subclasses)."""
    if type(rows) is not list or len(rows) != len(deferrals):
        return False
    if not rows:
        return True
    try:
        recorded = list(map(_deferral_fields, rows))
    except (KeyError, TypeError):  # a row without one of the fields, or not an object
        return False
    if set(map(len, rows)) != {4} or set(map(type, deferrals)) != {impl.Deferral}:
        return False
    try:
        return marshal.dumps(recorded, 2) == marshal.dumps(list(map(_impl_fields, deferrals)), 2)
    except ValueError:  # a subclass of int or str among the fields: not a JSON value
        return False


class ImplTarget:
    """The production implementation behind the JSON contract, poked like a real caller.

    `book_class` may be any class with impl.Book's API (a variant, a subclass under test)."""

    #: Every answer is built here (`_response`), so the boundary need not walk it for
    #: values JSON cannot hold (duespec.targets.resolve.WatchedTarget): a listing of
    #: thousands of rows was walked row by row, a sixth of a campaign's CPU.
    builds_its_answers = True

    def __init__(self, book_class: type[impl.Book] = impl.Book) -> None:
        self.book_class = book_class
        self.book: impl.Book | None = None
        #: The rows state_is last found equal to the Book's deferrals, and those deferrals.
        self._vouched: tuple[tuple[Any, ...], tuple[Any, ...]] = ((), ())

    def reset(self, config: dict[str, Json]) -> None:
        self.book = self.book_class(max_open_of(config))
        self._vouched = ((), ())

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        assert self.book is not None, "reset() first"
        try:
            value = impl_requests.call(self.book, op, args, now)
        except impl.DuebookError as error:
            return {"error": error.code, "message": str(error)}
        return _response(value)

    def recorded_step_checker(self, implied: ImpliedState | None) -> Callable[[dict[str, Json]], Json]:
        """For replay: a function that takes a recorded step (one with a `result`) on this
        Book and returns None when the response is the recorded result exactly (as
        same_json has it, a message beside an error aside), having applied the step to
        `implied`; else the response, as step() gives it, for the general comparison
        (which applies it). The usual request calls the Book's method directly and the
        usual answer is compared field by field, with no response built."""
        book = self.book
        assert book is not None, "reset() first"
        opened = implied.open if implied is not None else None
        calls, call, failed, deferral = impl_requests.CALLS, impl_requests.call, impl.DuebookError, impl.Deferral

        def check(step: dict[str, Json]) -> Json:
            op, args, now, recorded = step["op"], step["args"], step["now"], step["result"]
            try:
                known = calls.get(op) if type(op) is str else None  # an op may be any JSON
                if known is not None and type(args) is dict and args.keys() == known[0]:
                    value = known[1](book, args, now)  # what call() does with the usual request
                else:
                    value = call(book, op, args, now)
            except failed as error:
                code = error.code
                if (type(code) is str and recorded.get("error") == code and type(recorded["error"]) is str
                        and recorded.keys() <= _ERROR_KEYS):
                    return None  # the same error; the message is for people
                return {"error": code, "message": str(error)}
            if type(value) is deferral:
                id, owner, due_at, expires_at = value.id, value.owner, value.due_at, value.expires_at
                try:  # the response's row exactly (same_json: a bool or a float equals an int in Python)
                    agrees = (len(recorded) == 1 and type(ok := recorded["ok"]) is dict and len(ok) == 4
                              and type(id) is int and type(field := ok["id"]) is int and field == id
                              and type(owner) is str and type(field := ok["owner"]) is str and field == owner
                              and type(due_at) is int and type(field := ok["due_at"]) is int
                              and field == due_at and type(expires_at) is int
                              and type(field := ok["expires_at"]) is int and field == expires_at)
                except KeyError:
                    agrees = False
                if agrees:
                    if opened is not None:  # ImpliedState.apply, inline
                        changes = _CHANGES.get(op)
                        if changes:
                            opened[id] = ok
                            implied.next_id = id + 1  # type: ignore[union-attr]
                        elif changes is not None:
                            opened.pop(id, None)
                    return None
            elif type(value) is list and len(recorded) == 1 and _rows_are(recorded.get("ok"), value):
                value.clear()  # what edit_like_a_caller does to a list of Deferrals
                return None
            return _response(value)

        return check

    def state_is(self, want: Json) -> bool:
        """Whether observe() would give `want` exactly (same_json), told without building
        it: replay's checkpoints and a campaign's every rule compare the whole state this
        way. True only if it would; False also where the Book lists its deferrals out of
        id order, which observe() would have sorted, so the caller observes and compares.

        Rows that are the very objects last found equal to the very same Deferrals agree
        again: Deferrals are frozen, and the rows of a state are never edited (the model's
        adapter reuses them too), so a deep book is not compared row by row after every
        rule that left it as it was."""
        book = self.book
        assert book is not None, "reset() first"
        max_open, next_id = book.max_open, book.next_id
        try:
            if not (type(want) is dict and len(want) == 3
                    and type(max_open) is int and type(value := want["max_open"]) is int and value == max_open
                    and type(next_id) is int and type(value := want["next_id"]) is int and value == next_id):
                return False
            rows = want["open"]
        except KeyError:
            return False
        deferrals = list(book.open_deferrals())
        rows_then, deferrals_then = self._vouched
        if (type(rows) is list and len(rows) == len(rows_then) == len(deferrals) == len(deferrals_then)
                and all(map(is_, rows, rows_then)) and all(map(is_, deferrals, deferrals_then))):
            return True
        if not _rows_are(rows, deferrals):
            return False
        self._vouched = (tuple(rows), tuple(deferrals))
        return True

    def observe(self) -> dict[str, Json]:
        book = self.book
        assert book is not None, "reset() first"
        deferrals = list(book.open_deferrals())
        rows = [{"id": d.id, "owner": d.owner, "due_at": d.due_at, "expires_at": d.expires_at}
                for d in deferrals]
        return {"max_open": book.max_open, "next_id": book.next_id, "open": sorted(rows, key=_by_id)}

    def close(self) -> None:
        self.book = None


class ImpliedState:
    """The observable state a duebook run's responses imply (D-26): a successful schedule
    returns the whole new deferral and takes the next id (D-03, D-04), a successful claim,
    cancel or expire returns the one it removed (D-02), anything else changes nothing
    (D-17). So a trace that records every result also pins down every state, and replay
    can check a target's state without running the model."""

    def __init__(self, config: dict[str, Json]) -> None:
        self.max_open = max_open_of(config)
        self.next_id = 1
        self.open: dict[int, Json] = {}

    def apply(self, op: str, args: dict[str, Json], response: dict[str, Json]) -> None:
        changes = _CHANGES.get(op)  # most steps are reads: one lookup settles them
        if changes is None:
            return
        deferral = response.get("ok")
        if not isinstance(deferral, dict) or type(id := deferral.get("id")) is not int:
            return
        if changes:
            self.open[id] = deferral
            self.next_id = id + 1
        else:
            self.open.pop(id, None)

    def state(self) -> dict[str, Json]:
        return {"max_open": self.max_open, "next_id": self.next_id,
                "open": [self.open[id] for id in sorted(self.open)]}


#: The model's branches reachable from a valid config: D-01.invalid is only reachable by
#: a bad config, which reset() refuses before any campaign starts.

"""The judge: the one place where a target's step is compared with what was expected of
it, and a difference is classified and named.

Every path that checks a target asks the judge: a campaign's lockstep runs, the
minimiser's replays, a long run, `duespec replay` and the reset-leak probe. So they
cannot disagree on what counts as a difference, which class it is, which requirement IDs
it names, where a target raised, or whether a target's own fast checks are trusted.

A step's verdict is one of:

- None: the answer (or the state after the step) agrees;
- a `Difference`: what differs, as a class (kind, op, requirement IDs, first differing
  path), both sides, and what went over the wire;
- a `Masked`: a difference the campaign no longer fails on (a class it already found, a
  declared difference), with the labels of what masked it and whether the run ends there.

A class is `(kind, op, path, cause)`:

- kind: a `FindingKind`: `response` (the step's answer differs), `state` (the whole
  observable state after the step differs), `target raised` (the target raised or could
  not answer at all), `target too slow` (a call past --timeout; its path is "took > Ns
  (--timeout)", one class per op), `state survives reset` (the target answers the same
  steps differently after a reset), `target not reproducible`;
- op: the operation of the step where it showed;
- path: the first differing JSON path, list indices written `[]` so that the same field
  of any element is one path (`$.status`, `$.ok[].expires_at`); a list of another
  length, a missing or an extra key is the path of the list or key;
- cause: the model's branch in that step, its coverage tags (`P-01.found`, `X-03.unknown_op`),
  sorted, and `refused` last when the spec refuses the request as malformed
  (System.refuses, on the model's answer). A server that answers a malformed
  `promise.get` 404 and one that loses a promise a catch-up created both differ at
  `promise.get $.status`, for two causes, and are two classes. The requirement IDs shown
  beside a class are its cause's (D-09.expired -> D-09).

A `target raised` class is where the target raised rather than where the model was: the
exception's type and the innermost frame of the target's code (`ZeroDivisionError at
book.py:56`; just the type for a program that died); it has no cause, and neither has a
`target too slow` class (one per op).

About 500 lines, on purpose in one module: every verdict and how it reads, in one place.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Callable, Iterable, Protocol

from duespec.coverage import taken_back
from duespec.jsondiff import differing_paths, dump, state_diff
from duespec.targets.interface import (
    PROSE_KEYS,
    Json,
    Target,
    TargetError,
    TargetTooSlow,
    comparable,
    exchange_of,
    fast_checks,
    messages_keyed,
    messages_of,
    responses_agree,
    same_json,
)

#: Innermost traceback frames shown when a target raises.
SHOWN_FRAMES = 4


class FindingKind(StrEnum):
    """Every kind of finding, in campaigns, reports, JUnit and trace headers alike."""

    RESPONSE = "response"
    STATE = "state"
    #: What workers were sent in the step differs (the Target hook `messages`).
    MESSAGES = "messages"
    TARGET_RAISED = "target raised"
    #: A call did not return within --timeout: one class per op, never a hang.
    TARGET_TOO_SLOW = "target too slow"
    STATE_SURVIVES_RESET = "state survives reset"
    NOT_REPRODUCIBLE = "target not reproducible"
    #: A class known from a baseline whose witness, the run that showed it, no longer
    #: replays: the target now answers otherwise where the baseline knew it differs.
    KNOWN_CHANGED = "known difference changed"
    #: Something inside duespec raised (a model invariant, a harness bug): no target's finding.
    HARNESS_ERROR = "error"

    @property
    def outcome(self) -> str:
        """How a campaign that found it failed, as reports and trace headers spell it:
        the target answered differently (`divergence`), could not answer or is not
        deterministic (`target_error`), answered after earlier runs
        (`state_survives_reset`), or duespec itself failed (`error`)."""
        return _OUTCOMES[self]

    @property
    def compared(self) -> bool:
        """A difference between two answers or states (what the minimiser can shorten)."""
        return self in (FindingKind.RESPONSE, FindingKind.STATE, FindingKind.MESSAGES)

    @property
    def minimised(self) -> bool:
        """What the trace minimiser shortens: a compared difference, or a raise (not a hang,
        each replay of which would wait the whole --timeout)."""
        return self.compared or self == FindingKind.TARGET_RAISED


_OUTCOMES = {
    FindingKind.RESPONSE: "divergence", FindingKind.STATE: "divergence", FindingKind.MESSAGES: "divergence",
    FindingKind.TARGET_RAISED: "target_error", FindingKind.NOT_REPRODUCIBLE: "target_error",
    FindingKind.TARGET_TOO_SLOW: "target_error",
    FindingKind.STATE_SURVIVES_RESET: "state_survives_reset", FindingKind.HARNESS_ERROR: "error",
    FindingKind.KNOWN_CHANGED: "divergence",
}


def requirement_of(tag: str) -> str:
    """"D-09.not_due" -> "D-09"."""
    return tag.split(".", 1)[0]


#: The last entry of a cause whose request the spec refuses as malformed.
REFUSED = "refused"

#: Where an answer's status is: a class whose answers differed there is one of another outcome.
STATUS = "$.status"


def requirements_of(tags: Iterable[str]) -> tuple[str, ...]:
    """The requirement IDs of coverage tags (or of a cause: its REFUSED is none)."""
    return tuple(sorted({requirement_of(tag) for tag in tags if tag != REFUSED}))

#: Whether the model's answer to a step refuses its request as malformed (System.refuses).
Refuses = Callable[[Json], bool]


def cause_of(tags: Iterable[str], refused: bool = False) -> tuple[str, ...]:
    """A step's coverage tags as a class's cause: each branch once, sorted, and REFUSED
    after them when the spec refuses the request."""
    return (*sorted(set(tags)), *((REFUSED,) if refused else ()))


@dataclass(frozen=True)
class DivergenceClass:
    """What makes two failures of a target "the same difference": one cause, one class.
    A campaign reports each class once, with its own shrunk counterexample. The same
    difference (kind, op, path) reached through another branch of the model is another
    class: the report groups them under their (kind, op, path)."""

    kind: FindingKind
    op: str
    #: The requirement IDs of the cause (of the step, for a raise): shown, not compared.
    requirements: tuple[str, ...] = field(compare=False)
    path: str
    #: Every path that differed at the class's step (masking covers them all).
    paths: tuple[str, ...] = field(default=(), compare=False)
    #: The model's branch in that step (cause_of its coverage tags); () for a raise.
    cause: tuple[str, ...] = ()

    @property
    def group(self) -> str:
        """(kind, op, path) as the report groups classes for reading."""
        if self.kind == FindingKind.TARGET_TOO_SLOW:  # its path says how slow: "took > 10s (--timeout)"
            return f"{self.kind}: {self.op} {self.path}"
        return f"{self.kind} {self.op} {self.path}"

    @property
    def refused(self) -> bool:
        """The spec refuses the class's request as malformed (its cause says so)."""
        return self.cause[-1:] == (REFUSED,)

    def cause_text(self) -> str:
        """The cause for people: its branches, and whether the spec accepts the request."""
        if not self.cause:
            return ""
        branches = ", ".join(tag for tag in self.cause if tag != REFUSED) or "no branch tagged"
        return f"{branches}; {'refused' if self.refused else 'valid'} input"

    def label(self) -> str:
        requirements = ", ".join(self.requirements) or "no requirement reached"
        text = f"{self.group} [{requirements}]"
        return f"{text} via {', '.join(self.cause)}" if self.cause else text

    @property
    def status_differs(self) -> bool:
        """The target answered with another status than the model (a refusal of a request
        the spec takes, or the other way round), not just other content."""
        return STATUS in (self.paths or (self.path,))

    def masks(self, kind: str, op: str, path: str, cause: tuple[str, ...] = (),
              status_differs: bool | None = None) -> bool:
        """Whether a later difference is this class again: a raise at the same site, or the
        same kind, op and cause at one of the paths that differed here (or under one), and,
        for an answer, the status differing in both or in neither: a server that refuses a
        valid request is not thereby known to answer it wrongly when it takes it."""
        if kind == FindingKind.TARGET_RAISED:
            return self.kind == FindingKind.TARGET_RAISED and path == self.path
        if kind == FindingKind.TARGET_TOO_SLOW:  # one class per op, however slow
            return self.kind == kind and op == self.op
        if status_differs is not None and kind == FindingKind.RESPONSE and status_differs != self.status_differs:
            return False
        return (kind == self.kind and op == self.op and cause == self.cause
                and any(covers(mine, path) for mine in self.paths or (self.path,)))

    def to_json(self) -> dict[str, Json]:
        return {"kind": str(self.kind), "op": self.op, "requirements": list(self.requirements),
                "path": self.path, "cause": list(self.cause)}


def covers(pattern: str, path: str) -> bool:
    """`$.schedules` covers `$.schedules[].nextRunAt`; `$` covers everything."""
    return (path == pattern or pattern == "$"
            or (path.startswith(pattern) and path[len(pattern)] in ".["))


# --- what a difference is, and how it reads ---

@dataclass
class Difference:
    """One step's difference: its class, both sides, and how it showed."""

    divergence_class: DivergenceClass
    #: The step as recorded ({"i", "op", "args", "now", "result"}); None for a reset.
    step: dict[str, Json] | None
    expected: Json = None
    actual: Json = None
    #: The model's and the target's prose (`message`), which comparisons leave out.
    messages: tuple[Json, Json] = (None, None)
    #: What the target says went over the wire for the step (an HTTP target's bodies).
    exchange: str | None = None
    #: For `target raised`: what was raised, and its innermost frames.
    raised: str | None = None
    frames: tuple[str, ...] = ()
    #: Set when the target's state had already differed at declared paths earlier in the
    #: run: this difference may follow from that one (what masked it, and since which step).
    after_declared: str | None = None

    @property
    def kind(self) -> FindingKind:
        return self.divergence_class.kind

    @property
    def requirements(self) -> tuple[str, ...]:
        return self.divergence_class.requirements

    @property
    def path(self) -> str:
        return self.divergence_class.path

    def describe(self, *, with_requirements: bool = True) -> str:
        """The difference for people: where, the requirements, both sides or what was raised."""
        if self.raised is not None:
            said = "target too slow:" if self.kind == FindingKind.TARGET_TOO_SLOW else "target raised"
            lines = [where_of(self.step), f"  {said} {self.raised}"]
            if self.frames:
                lines.append("  innermost frames:")
                lines.extend(f"    {frame}" for frame in self.frames)
            text = "\n".join(lines)
        else:
            text = describe_divergence(self.step, self.kind, self.expected, self.actual,
                                       self.requirements if with_requirements else None,
                                       self.messages, self.exchange,
                                       self.divergence_class.cause_text() if with_requirements else "")
        if self.after_declared is not None:
            text += (f"\n  (the target's state had already differed from the model's at declared "
                     f"paths, {self.after_declared}: this difference may follow from that one)")
        return text


class Divergence(AssertionError):
    """The target answered differently: a lockstep run fails with this."""

    def __init__(self, difference: Difference):
        self.difference = difference
        super().__init__(difference.describe())

    @property
    def divergence_class(self) -> DivergenceClass:
        return self.difference.divergence_class


class TargetRaised(TargetError):
    """A target call raised (an in-process target) or got no answer (a program): the
    target's failure, never duespec's, with the exception's type, message and frames."""

    def __init__(self, difference: Difference):
        super().__init__(difference.describe())
        self.difference = difference

    @property
    def divergence_class(self) -> DivergenceClass:
        return self.difference.divergence_class


#: How a mask's label starts: a declared difference, a class the campaign already found,
#: or a class of its baseline (--baseline: known before the campaign started).
DECLARED, FOUND, KNOWN = "declared: ", "found: ", "known: "


@dataclass(frozen=True)
class Masked:
    """A difference the campaign no longer fails on."""

    #: What masked each differing place (DECLARED ..., FOUND ...).
    labels: tuple[str, ...]
    #: Nothing after it can be compared: a found class's state difference (or the state
    #: after its response), a target that raised. A declared difference never ends a run:
    #: what it does not name is still compared, at this step and every later one.
    ends_run: bool
    #: The masks covered differing places, which count as not compared; False for a run
    #: ended by a masked difference's consequence or a masked raise.
    skipped: bool = True

    @property
    def declared(self) -> bool:
        """Every place it masked is a declared difference."""
        return all(label.startswith(DECLARED) for label in self.labels)


Verdict = Difference | Masked | None


class MaskPolicy(Protocol):
    """What a campaign no longer fails on (duespec.campaigns.classes.Masks)."""

    def classify(self, kind: FindingKind, op: str, cause: tuple[str, ...],
                 paths: list[str]) -> tuple[DivergenceClass | None, list[str]]:
        """The class of a difference at `paths` with this cause, None when every path is
        masked, and the labels of the masks that covered the others."""

    def mask_of(self, kind: FindingKind, op: str, cause: tuple[str, ...], path: str,
                status_differs: bool | None = None) -> str | None:
        """The label of what masks this one place (DECLARED ..., FOUND ...), or None;
        `status_differs`: whether the answer's status differed (a class masks only its own
        outcome), None where that does not apply."""

    def masks_op(self, op: str) -> bool:
        """Whether some class of this op is masked (found, known or declared)."""

    def refusal_masked(self, op: str, cause: tuple[str, ...]) -> bool:
        """Whether a request the spec refuses, with this cause, is of a class already
        masked (found, declared or known): sending it again could show nothing new."""


# --- the verdicts ---

def compared_verdict(kind: FindingKind, step: dict[str, Json], expected: Json, actual: Json,
                     cause: tuple[str, ...], masks: MaskPolicy | None = None, *,
                     after_masked_response: str | None = None,
                     messages: tuple[Json, Json] = (None, None), exchange: str | None = None) -> Verdict:
    """The verdict on two answers (kind RESPONSE, prose already left out) or two states
    (STATE) known to differ.

    Masks are exact: a declared difference masks the places it names and nothing else,
    so whatever else differs in the answer or the state is judged as ever, and the run
    goes on past it. A found class (the campaign already fails on it) ends the run at a
    state difference: nothing after it could be compared honestly. `after_masked_response`:
    the label of a found class that let this step's response go uncompared; a state that
    differs after it is that class's consequence, not a new class, and ends the run.
    `cause`: the model's coverage tags in the step (cause_of)."""
    reordered: list[str] = []
    in_declared_order = getattr(masks, "in_declared_order", None)  # lists declared unordered
    if in_declared_order is not None:
        actual, reordered = in_declared_order(kind, step["op"], cause, expected, actual)
        if reordered and same_json(expected, actual):
            return Masked(tuple(reordered), ends_run=False)
    paths = differing_paths(expected, actual) or ["$"]
    if masks is None:
        found: DivergenceClass | None = DivergenceClass(kind, step["op"], requirements_of(cause), paths[0],
                                                        tuple(paths), cause)
    else:
        found, labels = masks.classify(kind, step["op"], cause, paths)
        if found is None:
            masked = Masked(tuple(labels), ends_run=False)
            if kind == FindingKind.STATE and not masked.declared:
                return Masked(masked.labels, ends_run=True)
            return masked
        if kind == FindingKind.STATE and after_masked_response is not None:
            return Masked((after_masked_response,), ends_run=True, skipped=False)
    return Difference(found, step, expected, actual, messages, exchange)


def response_verdict(step: dict[str, Json], expected: dict[str, Json], actual: Json,
                     cause: Callable[[], tuple[str, ...]] | tuple[str, ...] = (),
                     masks: MaskPolicy | None = None, exchange: str | None = None) -> Verdict:
    """Does the target's answer agree with the expected one? Prose (`message`) is left out,
    numbers keep their JSON type; an answer that is no JSON object is the target's
    failure. `cause` (the model's tags in the step) may be a function, called only when
    the answers differ (the usual step pays nothing for it)."""
    if answers_agree(expected, actual):
        return None
    wanted = cause() if callable(cause) else cause
    wrong = not_an_answer(actual)
    if wrong is not None:
        return raised_verdict(step, step["op"], wrong, wanted, masks)
    return compared_verdict(FindingKind.RESPONSE, step, comparable(expected), comparable(actual), wanted, masks,
                            messages=(expected.get("message"), actual.get("message")), exchange=exchange)


def answers_agree(expected: dict[str, Json], actual: Json) -> bool:
    """Whether two answers agree, prose aside. The usual cases cost no copy: equal and of
    the same JSON types (same_json, in C), or the same error with a message beside it."""
    if same_json(expected, actual):
        return True
    if type(actual) is not dict:
        return False
    error = expected.get("error") if type(expected) is dict and len(expected) == 1 else None
    if (type(error) is str and type(actual.get("error")) is str and actual["error"] == error
            and actual.keys() <= _ERROR_KEYS):
        return True  # the same error, with a message for people beside it
    return responses_agree(expected, actual)


_ERROR_KEYS = frozenset({"error"} | PROSE_KEYS)


def differs_only_at(expected: dict[str, Json], actual: Json, masked: Callable[[str], bool]) -> bool:
    """Whether two answers that do not agree differ only at places `masked` accepts (the
    paths a declared difference names), prose aside: a history's check leaves those out
    as a campaign's judge does."""
    if type(actual) is not dict or not_an_answer(actual) is not None:
        return False
    paths = differing_paths(comparable(expected), comparable(actual))
    return bool(paths) and all(masked(path) for path in paths)


def state_verdict(step: dict[str, Json], expected: Json, actual: Json,
                  cause: Callable[[], tuple[str, ...]] | tuple[str, ...] = (),
                  masks: MaskPolicy | None = None, *, after_masked_response: str | None = None,
                  exchange: str | None = None) -> Verdict:
    """Does the target's whole observable state after `step` agree with the expected one?"""
    if same_json(expected, actual):
        return None
    return compared_verdict(FindingKind.STATE, step, expected, actual,
                            cause() if callable(cause) else cause, masks,
                            after_masked_response=after_masked_response, exchange=exchange)


def raised_verdict(step: dict[str, Json] | None, op: str, error: BaseException,
                   cause: tuple[str, ...] = (), masks: MaskPolicy | None = None) -> Difference | Masked:
    """The target raised, or could not answer: its failure, classified by where it raised
    (the step's `cause` gives the requirement IDs shown, not the class).
    A call past --timeout is a class of its own per op (`target too slow: tick took > 10s
    (--timeout)`). A masked one ends the run (what the target holds after it is unknown)."""
    requirements = requirements_of(cause)
    if isinstance(error, TargetTooSlow):
        slow = DivergenceClass(FindingKind.TARGET_TOO_SLOW, op, requirements if step else (),
                               too_slow_path(error.seconds))
        if masks is not None:
            label = masks.mask_of(FindingKind.TARGET_TOO_SLOW, op, (), slow.path)
            if label is not None:
                return Masked((label,), ends_run=True, skipped=False)
        return Difference(slow, step, raised=str(error))
    type_name, message, frames, site = exception_details(error)
    found = DivergenceClass(FindingKind.TARGET_RAISED, op, requirements if step else (), site, (site,))
    if masks is not None:
        label = masks.mask_of(FindingKind.TARGET_RAISED, op, cause if step else (), site)
        if label is not None:
            return Masked((label,), ends_run=True, skipped=False)
    return Difference(found, step, raised=f"{type_name}: {message}", frames=tuple(frames))


def too_slow_path(seconds: float) -> str:
    """The `path` of a too-slow class: how long the call was given."""
    return f"took > {seconds:g}s (--timeout)"


def not_an_answer(response: Json) -> TargetError | None:
    """Why a step's return value is no answer at all (not a JSON object), or None."""
    if type(response) is dict:
        return None
    return TargetError(f"step returned {type(response).__name__}, not a JSON object: {dump(repr(response))}")


def trusts(target: Target) -> bool:
    """The one rule for a target's own fast checks (`state_is`, `recorded_step_checker`):
    only duespec's own adapters, defined under duespec.systems, are trusted to say that
    their answer or state is the expected one without building it. Anything else is
    observed and compared, so no outside code can vouch for itself. duespec's own call
    boundary (the per-call deadline every resolved in-process target runs behind, which
    passes the fast checks through) is looked through: what counts is what it wraps."""
    # Here, not at the top: the target boundary (subprocess and all) is no part of a
    # history's check, which uses this module's comparisons alone.
    from duespec.targets.resolve import unwrapped

    return type(unwrapped(target)).__module__.startswith("duespec.systems.")


# --- what a worker sees: the messages a step sent ---

def messages_agree(expected_groups: list[list[Json]], actual: list[Json]) -> bool:
    """Whether a target sent the messages the model sent in one step, in an order a worker
    could tell from the model's.

    The model groups its messages by the transition that sent them (one request, or one
    timeout a tick fired, a schedule's whole catch-up among them). The same messages must
    be sent, each as often (content compared as strict JSON); within one group, the
    messages to one address must come in the model's order, since the worker polling that
    address receives them so (a catch-up's occurrences oldest first). The order between
    groups (independent timeouts, which the spec fires in no fixed order) and between
    addresses (different workers) is free. Equal messages are interchangeable: each sent
    one is matched to the earliest group still owed it."""
    owed: dict[str, list[int]] = {}
    for index, group in enumerate(expected_groups):
        for message in group:
            owed.setdefault(_message_key(message), []).append(index)
    received: dict[tuple[int, str], list[str]] = {}
    for message in actual:
        key = _message_key(message)
        groups = owed.get(key)
        if not groups:
            return False  # a message not sent, or sent once too often
        received.setdefault((groups.pop(0), _address_key(message)), []).append(key)
    if any(owed.values()):
        return False  # a message the model sent and the target did not
    wanted: dict[tuple[int, str], list[str]] = {}
    for index, group in enumerate(expected_groups):
        for message in group:
            wanted.setdefault((index, _address_key(message)), []).append(_message_key(message))
    return wanted == received


def _message_key(message: Json) -> str:
    """A message as strict JSON text: 1, 1.0 and true stay apart, key order does not count."""
    return json.dumps(message, sort_keys=True)


def _address_key(message: Json) -> str:
    return _message_key(message.get("address") if type(message) is dict else None)


#: A message the model sent in a step, with the branches behind it (SentMessage in
#: model/schedules/state.py: the branch that sent it, and the one that fulfilled its task
#: later in the step); () where the oracle cannot say, and the step's cause stands in.
SentWithCause = tuple[Json, tuple[str, ...]]


def messages_verdict(step: dict[str, Json], expected_groups: list[list[SentWithCause]], actual: Json,
                     cause: Callable[[], tuple[str, ...]] | tuple[str, ...] = (),
                     masks: MaskPolicy | None = None, exchange: str | None = None) -> Verdict:
    """Did the target send, in `step`, what workers should receive (messages_agree)? A
    difference is of kind MESSAGES, at the first differing path of the two lists, each
    side sorted when they hold different messages (so that the path names the field that
    differs: `$[].version`), else in the order sent (`$` for a message one side has and the
    other not). Its cause is the branch behind a message the target did not send, each
    such branch a class of its own (the first not masked is the verdict): in a tick that
    fires many timeouts, which other timeouts fired beside it is no part of a missing
    message's class. Where every model message arrived (the target sent more, or in
    another order) the step's cause is the class's. A reply that is no list of messages
    is the target's failure."""
    if type(actual) is not list or any(type(message) is not dict for message in actual):
        error = TargetError(f"messages() returned {dump(actual)[:300]}, not a list of JSON objects")
        return raised_verdict(step, step["op"], error, cause() if callable(cause) else cause, masks)
    plain = [[message for message, _ in group] for group in expected_groups]
    if messages_agree(plain, actual):
        return None
    step_cause = cause() if callable(cause) else cause
    expected = [message for group in plain for message in group]
    causes: list[tuple[str, ...]] = []
    if Counter(map(_message_key, expected)) != Counter(map(_message_key, actual)):
        received = Counter(map(_message_key, actual))
        for group in expected_groups:
            for message, why in group:
                key = _message_key(message)
                if received[key] > 0:
                    received[key] -= 1
                elif (why or step_cause) not in causes:
                    causes.append(why or step_cause)
        expected, actual = sorted(expected, key=_message_key), sorted(actual, key=_message_key)
    labels: list[str] = []
    ends_run = False
    for why in causes or [step_cause]:
        verdict = compared_verdict(FindingKind.MESSAGES, step, expected, actual, why, masks, exchange=exchange)
        if type(verdict) is not Masked:
            return verdict
        labels += verdict.labels
        ends_run = ends_run or verdict.ends_run
    return Masked(tuple(dict.fromkeys(labels)), ends_run=ends_run)


# --- one step on both sides ---

class StepJudge:
    """An oracle and a target taking the same steps, each step judged.

    The lockstep machine, the minimiser's replays and a long run drive this; `duespec
    replay` (whose expected answers are recorded) and the reset-leak probe call the
    verdict functions above directly. `tags` is a coverage counter the oracle's steps
    fill (duespec.coverage), from which a difference's requirement IDs come."""

    def __init__(self, oracle: Target, target: Target, *, masks: MaskPolicy | None = None,
                 tags: Counter[str] | None = None, observe: bool = True, messages: bool = False,
                 refuses: Refuses | None = None, valid_only: bool = False,
                 accepts: Refuses | None = None) -> None:
        if valid_only and refuses is None:
            raise ValueError("sending only valid requests needs the system's System.refuses")
        self.oracle, self.target, self.masks, self.tags = oracle, target, masks, tags
        #: Whether the model's answer refuses a request as malformed (a cause's REFUSED).
        self.refuses = refuses
        #: Whether an answer took effect (System.accepts): where one side's did and the
        #: other's did not, a response-only check ends the run at the masked difference.
        self.accepts = accepts
        #: Whether the target's whole state is compared (False: a response-only check of a
        #: target that has no observe(), whose state the campaign reads through public ops).
        self.observe = observe
        #: The two sides' `messages` hooks, when asked to compare what workers receive and
        #: both have one (the oracle's grouped: messages_agree); None: not compared.
        self.sent = _message_hooks(oracle, target) if messages else None
        #: Send the target only requests the spec accepts (--inputs valid): a request the
        #: oracle refuses as malformed (`refuses`) changes nothing on its side, so it is
        #: left out on both, and out of the record.
        self.valid_only = valid_only
        self.steps: list[dict[str, Json]] = []
        #: The latest step the oracle took, sent or not.
        self.latest_step: dict[str, Json] = {}
        #: Steps the oracle refused and the target was not sent (valid_only).
        self.not_sent = 0
        #: Whether the oracle's latest step was taken back (step): the target refused it,
        #: of a known class, so both sides hold what they held before it.
        self.taken_back = False
        #: The oracle's coverage tags in the latest step.
        self.latest_tags: tuple[str, ...] = ()
        #: (step index, label) of the latest response a found class kept from being compared.
        self.masked_response: tuple[int, str] = (-1, "")
        #: Since which step, and by what, the target's state has differed at declared paths.
        self.declared_state: str | None = None
        self._observed: dict[str, Json] = {}
        self._observed_at = -1
        self._fast = fast_checks(target) if trusts(target) else None
        #: The target's own fused step check, made at each reset (it holds the target's state).
        self.check: Callable[[dict[str, Json]], Json] | None = None

    def reset(self, config: dict[str, Json]) -> Difference | Masked | None:
        """Both sides start afresh from `config` (before the first step too); a target whose
        reset fails is judged."""
        self.oracle.reset(dict(config))
        self._observed_at = -1  # the oracle's state changed with no step taken
        self.declared_state = None
        try:
            self.target.reset(dict(config))
        except Exception as error:
            return raised_verdict(None, "reset", error, masks=self.masks)
        if self._fast is not None:  # it holds the target's state, which reset replaced
            self.check = self._fast.step_checker(None)
        return None

    def cause(self) -> tuple[str, ...]:
        """The latest step's cause: the model's branch in it (cause_of its tags), and
        whether it refused the request."""
        refuses = self.refuses
        return cause_of(self.latest_tags, refuses is not None and bool(self.latest_step)
                        and refuses(self.latest_step["result"]))

    def step(self, op: str, args: dict[str, Json], now: int) -> tuple[dict[str, Json], Verdict]:
        """Take one step on both sides; the oracle's response, and the verdict on the target's."""
        tags = self.tags
        if tags is not None:
            tags.clear()
        take_back, self.taken_back = self._taking_back(op), False
        expected = self.oracle.step(op, args, now)
        step = {"i": len(self.steps), "op": op, "args": args, "now": now, "result": expected}
        self.latest_step = step
        if tags is not None:
            self.latest_tags = tuple(tags)
        if self.refuses is not None and self.refuses(expected) and (
                self.valid_only or (self.masks is not None and self.masks.refusal_masked(op, self.cause()))):
            # A request the spec refuses changes nothing on the model's side: left out on
            # both (--inputs valid), or once its class is masked, so that a target known to
            # take what the spec refuses (a masked class that, in a response-only check,
            # ends the run) is explored past it rather than stopped at it in every run.
            self.not_sent += 1
            return expected, None
        self.steps.append(step)
        check = self.check
        try:
            actual = self.target.step(op, args, now) if check is None else check(step)
        except Exception as error:
            return expected, self._noted(raised_verdict(step, op, error, self.cause(), self.masks))
        if actual is None and check is not None:
            return expected, None  # the target's own adapter found its answer equal to this one
        verdict = response_verdict(step, expected, actual, self.cause, self.masks, exchange_of(self.target))
        if type(verdict) is Masked and self._took_effect_on_one_side(expected, actual):
            # response-only: a declared or known difference where one side took the request
            # and the other did not (a 400 accepted, a 200 refused) leaves the two holding
            # different things no read compared; what differs after it is its consequence
            # (an occurrence fired for a task the model never created), not a new class.
            # Where the model took it and the target refused it, the model's step is taken
            # back: both hold what they held before, and the run goes on past the class
            # (only what the target sent in the step is still compared: nothing is due).
            if take_back is not None and self.accepts is not None and self.accepts(expected):
                take_back()
                taken_back(self.latest_tags)
                self._observed_at, self.taken_back = -1, True
                if self.sent is not None:
                    return expected, self._noted(_with_messages(verdict, self._messages(step, taken_back=True)))
                return expected, self._noted(verdict)
            return expected, Masked(verdict.labels, ends_run=True)
        if type(verdict) is Masked and not verdict.declared:
            self.masked_response = (step["i"], verdict.labels[0])
        if self.sent is not None and (verdict is None or (type(verdict) is Masked and not verdict.ends_run)):
            messages = self._messages(step)
            if type(messages) is Difference and type(verdict) is Masked and not verdict.declared:
                # a found class let the answer go uncompared: what the step sent then is that
                # class's consequence (a request the spec refuses, accepted and dispatched),
                # not a new class, and the run ends, as at a state that differs after it
                messages = Masked((verdict.labels[0],), ends_run=True, skipped=False)
            verdict = _with_messages(verdict, messages)
        return expected, self._noted(verdict)

    def _taking_back(self, op: str) -> Callable[[], None] | None:
        """A way to take back the oracle's next step (step), where it may have to be: in
        a response-only check, where some class of the op is masked and the oracle offers
        snapshots (TargetBase.snapshot); None elsewhere, at no cost."""
        if self.observe or self.accepts is None or self.masks is None or not self.masks.masks_op(op):
            return None
        snapshot, restore = getattr(self.oracle, "snapshot", None), getattr(self.oracle, "restore", None)
        if snapshot is None or restore is None:
            return None
        saved = snapshot()
        return lambda: restore(saved)

    def _took_effect_on_one_side(self, expected: Json, actual: Json) -> bool:
        accepts = self.accepts
        return not self.observe and accepts is not None and accepts(expected) != accepts(actual)

    def _messages(self, step: dict[str, Json], *, taken_back: bool = False) -> Verdict:
        """The verdict on what the target sent in `step` (messages_verdict): nothing, if
        the oracle's step was taken back; a target that says it has no `messages` after
        all is not asked again."""
        assert self.sent is not None
        groups, sent = self.sent
        expected = [] if taken_back else groups()
        try:
            actual = sent()
        except Exception as error:
            if isinstance(error, TargetError) and error.says_not_offered:
                self.sent = None
                return None
            return raised_verdict(step, step["op"], error, self.cause(), self.masks)
        return messages_verdict(step, expected, actual, self.cause, self.masks, exchange_of(self.target))

    def oracle_state(self) -> dict[str, Json]:
        """The oracle's observable state after the latest step, observed once per step."""
        if self._observed_at != len(self.steps):
            self._observed, self._observed_at = self.oracle.observe(), len(self.steps)
        return self._observed

    def state(self) -> Verdict:
        """The verdict on the target's whole observable state after the latest step (None
        in a response-only check: nothing to compare)."""
        if not self.steps or not self.observe:
            return None
        step = self.steps[-1]
        expected = self.oracle_state()
        state_is = self._fast.state_is if self._fast else None
        try:
            if state_is is not None and state_is(expected):
                return None
            actual = self.target.observe()
        except Exception as error:
            return self._noted(raised_verdict(step, step["op"], error, self.cause(), self.masks))
        index, label = self.masked_response
        verdict = state_verdict(step, expected, actual, self.cause, self.masks,
                                after_masked_response=label if index == step["i"] else None,
                                exchange=exchange_of(self.target))
        if type(verdict) is Masked and verdict.declared and self.declared_state is None:
            self.declared_state = f"since step {step['i']} ({verdict.labels[0]})"
        return self._noted(verdict)

    def _noted(self, verdict: Verdict) -> Verdict:
        """A difference found after the target's state had differed at declared paths says so."""
        if type(verdict) is Difference and self.declared_state is not None:
            verdict.after_declared = self.declared_state
        return verdict


def _message_hooks(oracle: Target, target: Target) -> tuple[Callable[[], list[list[SentWithCause]]],
                                                            Callable[[], list[Json]]] | None:
    """(the oracle's messages by group, each with its cause, the target's messages), or
    None when either side has no `messages` hook. An oracle without `message_groups` sent
    its messages as one group, with no cause of their own. A target whose workers poll a
    keyed outbox (TargetBase.messages_keyed) is compared with the model's messages as its
    workers would poll them: one per key."""
    sent = messages_of(target)
    expected = messages_of(oracle)
    if sent is None or expected is None:
        return None
    grouped = getattr(oracle, "message_groups", None)
    if callable(grouped):
        keyed = messages_keyed(target)
        return (lambda: grouped(keyed=keyed)), sent
    return (lambda: [[(message, ()) for message in expected()]]), sent


def _with_messages(verdict: Verdict, messages: Verdict) -> Verdict:
    """A step's verdict once its messages are judged too: a difference in them stands; a
    masked one adds its labels to the answer's."""
    if messages is None or verdict is None or type(messages) is Difference:
        return messages if messages is not None else verdict
    assert type(verdict) is Masked
    if type(messages) is Masked:
        return Masked(verdict.labels + messages.labels, ends_run=messages.ends_run, skipped=verdict.skipped)
    return verdict


# --- how a difference reads ---

def describe_divergence(step: dict[str, Json] | None, kind: str, expected: Json, actual: Json,
                        requirements: tuple[str, ...] | None = None,
                        messages: tuple[Json, Json] = (None, None),
                        exchange: str | None = None, cause: str = "") -> str:
    """`exchange`: what the target says went over the wire for the step (an HTTP target's
    request and response bodies), shown under the difference; `cause`: the model's
    branch in the step (DivergenceClass.cause_text)."""
    lines = [where_of(step)]
    if requirements is not None:
        lines.append(f"  requirements of the step: {', '.join(requirements) or 'none reached'}")
    if cause:
        lines.append(f"  the model's branch: {cause}")
    if kind == FindingKind.RESPONSE:
        lines += [f"  expected response: {dump(expected)}", f"  actual response:   {dump(actual)}"]
    elif kind == FindingKind.MESSAGES:
        lines += [f"  expected messages: {dump(expected)}", f"  messages sent:     {dump(actual)}"]
    else:
        lines.append("  state differs after the step:")
        lines += ["    " + line for line in state_diff(expected, actual)]
    if messages != (None, None):
        lines.append(f"  model message:  {dump(messages[0])}")
        lines.append(f"  target message: {dump(messages[1])}")
    if exchange is not None:
        lines.append("  " + exchange.replace("\n", "\n  "))
    return "\n".join(lines)


def where_of(step: dict[str, Json] | None) -> str:
    if step is None:
        return "reset (before the first step)"
    return f"step {step['i']}: {step['op']} {dump(step['args'])} at now={step['now']}"


def exception_details(error: BaseException) -> tuple[str, str, list[str], str]:
    """Type name, message, innermost frames and raise site (type and innermost frame) of
    what a target raised; a TargetError that wraps a Python exception (the in-process
    boundary) is described by what it wraps."""
    if isinstance(error, TargetError) and error.exc_type:  # what the in-process boundary caught
        site = error.exc_type
        if error.frames:
            where, _, _ = error.frames[-1].rpartition(" in ")
            site += f" at {os.path.basename(where)}"
        return error.exc_type, error.exc_message, list(error.frames), site
    inner = error.__cause__ if isinstance(error, TargetError) and error.__cause__ is not None else error
    # A TargetError of duespec's own (a program that died, a deadline) has no frames worth showing.
    own = isinstance(inner, TargetError)
    import traceback  # here: only a target that raised needs it, and a history's check runs none

    frames = traceback.extract_tb(inner.__traceback__)[-SHOWN_FRAMES:] if inner.__traceback__ and not own else []
    shown = [f"{frame.filename}:{frame.lineno} in {frame.name}: {(frame.line or '').strip()}"
             for frame in frames]
    site = type(inner).__name__
    if frames:
        site += f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}"
    return type(inner).__name__, str(error), shown, site

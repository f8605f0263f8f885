"""One pass of `duespec replay` over a trace: the target, where the expected answers and
states come from (the recorded results, the state they imply, or the model alongside),
the checkpoints, and locating the first step after which two states differ. Every
comparison is the judge's (duespec.judge); this module decides only what is compared
with what, and when. duespec.traces.replay holds the command and its result.

Longer than the other rooms (about 550 lines) for one reason: the fast path, the
checkpoints, the reset lines and the second pass that locates a state difference all
move one pass's state (the expected state, the model alongside, the last agreement), and
split apart they would hand it back and forth.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterator

from duespec.targets import resolve as targets
from duespec.exits import UsageError
from duespec.limits import LimitExceeded
from duespec.systems import ImpliedState, System
from duespec.coverage import isolated
from duespec.jsondiff import state_diff
from duespec.judge import (
    Difference,
    answers_agree,
    cause_of,
    describe_divergence,
    raised_verdict,
    response_verdict,
    state_verdict,
)
from duespec.targets.interface import (
    Json,
    Target,
    TargetError,
    comparable,
    exchange_of,
    fast_checks,
    same_json,
)
from duespec.traces.format import RESET_KEY, TraceError, TraceHeader, is_reset, read_trace

#: Steps between state checkpoints: at least this many, and at least this many per item
#: of the expected state, so that comparing states costs O(1) per step on average.
CHECKPOINT_STEPS = 8
STEPS_PER_STATE_ITEM = 4
#: What a failure of the model's own step is called (it is no finding about the target).
MODEL_RAISED = "the model raised"


@dataclass
class ReplayResult:
    path: str
    system: str
    profile: str
    target: str
    #: Steps taken, the diverging one included.
    steps: int
    seconds: float
    #: Responses and whole states actually compared (a trace without results, replayed
    #: against the model, compares nothing, and says so).
    responses_compared: int = 0
    states_compared: int = 0
    #: How many of the trace's own results and states (a foreign model's answers, for an
    #: ITF import) were compared, with the model's or, against the model, with the target's.
    recorded_results: int = 0
    recorded_states: int = 0
    #: None when the trace is confirmed; otherwise what went wrong, for people.
    divergence: str | None = None
    #: The judge's difference at the diverging step (its class and requirement IDs), when
    #: the target diverged (not for a trace that drifted from the spec).
    difference: Difference | None = None
    #: The diverging step, as recorded.
    step: dict[str, Json] | None = None
    #: The target the trace's header says it was recorded against (a failure trace's).
    recorded_target: Json = None
    #: Index of the step being replayed (for messages about it).
    steps_seen: int = 0
    #: Reset lines taken (in the pass that diverged, if one did), and the step the run
    #: being replayed started at: a trace of several runs reports which one diverged.
    resets: int = 0
    run_started_at: int = 0

    @property
    def confirmed(self) -> bool:
        return self.divergence is None

    def report(self) -> str:
        rate = self.steps / self.seconds if self.seconds else 0.0
        where = f"{self.path} [{self.system}/{self.profile}] against {self.target}"
        if self.confirmed:
            recorded = (f"; the trace's own {self.recorded_results} results and {self.recorded_states} "
                        f"states among them" if self.recorded_results or self.recorded_states else "")
            runs = (f" in {self.resets + 1} runs ({self.resets} reset{'s' if self.resets > 1 else ''} in between)"
                    if self.resets else "")
            return (f"CONFIRMED: {where}: {self.steps} steps{runs}, {self.responses_compared} responses and "
                    f"{self.states_compared} states compared{recorded} ({self.seconds:.2f}s, "
                    f"{rate:,.0f} steps/s)")
        return f"DIVERGES: {where} at {self.diverged_at()}\n{self.divergence}"

    def diverged_at(self) -> str:
        """Where the replay diverged: a step, or a reset, and in a trace of several runs which."""
        if self.step and RESET_KEY in self.step:
            at = f"the reset before step {self.step['i']}"
        else:
            at = f"step {self.step['i']}" if self.step and self.step["i"] >= 0 else "the start"
        if self.resets:
            at += (f" (run {self.resets + 1} of the trace, which starts at the reset before step "
                   f"{self.run_started_at})")
        return at


class Diverged(Exception):
    def __init__(self, step: dict[str, Json], text: str, difference: Difference | None = None):
        super().__init__(text)
        self.step, self.text, self.difference = step, text, difference


class StateDiffers(Diverged):
    """A checkpoint found the states different; which step made them differ is not known yet."""


class BoundedModel:
    """The model under --timeout: a step it cannot finish in time makes the trace too
    costly to check (LimitExceeded, exit 2), which is no finding about the target.
    observe() is left unwatched: its cost is bounded by the state the steps built."""

    def __init__(self, model: Target, timeout: float | None) -> None:
        self.model, self.timeout = model, timeout

    def reset(self, config: dict[str, Json]) -> None:
        self._within("reset", lambda: self.model.reset(config))

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        return self._within(f"step {op}", lambda: self.model.step(op, args, now))

    def observe(self) -> dict[str, Json]:
        return self.model.observe()

    def close(self) -> None:
        self.model.close()

    def _within(self, what: str, call: Callable[[], Json]) -> Json:
        if self.timeout is None:
            return call()
        try:
            with targets.deadline(self.timeout, f"the model's {what}"):
                return call()
        except TargetError as error:
            raise LimitExceeded(str(error)) from None


class ReplayPass:
    """One pass over a trace: the target, and where the expected responses and states come from."""

    def __init__(self, where: str, header: TraceHeader, system: System, subject: Target,
                 model_is_subject: bool, counts: ReplayResult, every: int | None,
                 timeout: float | None = None, trusted: bool = False, observe: bool = True) -> None:
        self.where, self.header, self.system, self.subject = where, header, system, subject
        self.model_is_subject, self.counts, self.every = model_is_subject, counts, every
        self.timeout = timeout
        #: The model alongside, when expected answers or states need it.
        self.oracle: Target | None = None
        self.implied: ImpliedState | None = None
        #: The last step after which the states were compared and agreed (-1: the start).
        self.agreed_at = -1
        self.next_check = 0
        #: On a second pass that locates a state divergence: compare after every step from here.
        self.check_from: int | None = None
        #: Whether the judge trusts the target's own fast checks (duespec.judge.trusts).
        self.trusted = trusted
        #: Whether the target's state is compared at all (False: its answers alone).
        self.observe = observe
        #: Its recorded_step_checker, made for each pass once the target is reset.
        self.check: Callable[[dict[str, Json]], Json] | None = None
        #: Reset lines taken in this pass.
        self.resets = 0

    # --- the start ---

    def reset(self) -> None:
        """A config the model refuses makes the trace malformed; a target that cannot take a
        config the model accepts is a finding about the target."""
        config = self.header.config
        model = self.subject if self.model_is_subject else self.new_model()
        try:
            model.reset(dict(config))
        except Exception as error:  # the model's own words on what is wrong with the config
            if model is not self.subject:
                model.close()
            raise TraceError(self.where, 1, f"header: the model refuses config {json.dumps(config)}: "
                                            f"{error}") from None
        if self.system.implied_state is not None:
            self.implied = self.system.implied_state(dict(config))
        if model is not self.subject:
            if self.implied is None:
                self.oracle = model
            else:
                model.close()
            try:
                self.subject.reset(dict(config))
            except Exception as error:  # the first reset failing: the target cannot be used at all
                raise UsageError(f"target unusable: its reset with config {json.dumps(config)[:200]} "
                                 f"failed: {error if isinstance(error, TargetError) else _named(error)}") from None
        self.next_check = self.agreed_at + self._spacing()

    def new_model(self) -> Target:
        """A model under the replay's --timeout (it is duespec's code, but a trace can ask it
        for work without bound)."""
        return BoundedModel(self.system.model(), self.timeout) if self.timeout is not None else self.system.model()

    def close(self) -> None:
        if self.oracle is not None:
            self.oracle.close()
            self.oracle = None

    # --- the steps ---

    def take_all(self, steps: Iterator[dict[str, Json]], stop_after: int | None = None) -> int:
        """Take every step (up to `stop_after`); return how many were taken.

        A step with a recorded result goes, while no model runs alongside, to the
        target's recorded_step_checker when it has one (the in-process impl): the step, the
        comparison and the implied state's update in one call, no response built when it
        agrees. Every other step, and any disagreement, takes the general path, so what is
        reported is the same."""
        counts = self.counts
        check = self.check = self._recorded_step_checker()
        fast = check is not None and self.oracle is None
        check_at = self._check_at(stop_after)
        fast_taken = 0
        last: dict[str, Json] | None = None
        i = -1
        try:
            for step in steps:
                try:
                    i = step["i"]
                except KeyError:  # a reset line, the only line without "i" (no cost to a step)
                    self.restart(step[RESET_KEY], last)
                    check = self.check = self._recorded_step_checker()
                    fast = check is not None and self.oracle is None
                    check_at = self._check_at(stop_after)
                    continue
                if fast and "result" in step:
                    try:
                        actual = check(step)  # type: ignore[misc]
                    except Exception as error:
                        raise self._failure(error, step, "the target raised") from None
                    if actual is not None:
                        self.agree(step, step["result"], actual)
                    fast_taken += 1
                else:
                    counts.steps_seen = i
                    self.take(step)
                    fast = check is not None and self.oracle is None
                last = step
                if i < check_at and "state" not in step:
                    continue  # no state to compare after this step, and not the one to stop at
                if "state" in step:
                    self.check_recorded_state(step)
                elif i >= self.next_check or (self.check_from is not None and i >= self.check_from):
                    self.checkpoint(step)
                if i == stop_after:
                    break
                check_at = self._check_at(stop_after)
        finally:
            if i >= 0:
                counts.steps_seen = i
            counts.responses_compared += fast_taken
            counts.recorded_results += fast_taken
        if last is not None and self.agreed_at != last["i"]:
            self.checkpoint(last)
        return last["i"] + 1 if last is not None else 0

    def restart(self, config: dict[str, Json], last: dict[str, Json] | None) -> None:
        """A reset line: the state the run reached is compared first (a reset would wipe a
        difference), then the model, the expected state and the target start again from
        `config`. A config the model refuses makes the trace malformed; a target whose
        reset fails diverges there."""
        before = last["i"] + 1 if last is not None else 0
        if last is not None and self.agreed_at != last["i"]:
            self.checkpoint(last)
        self.resets += 1
        self.counts.resets, self.counts.run_started_at = self.resets, before
        model = self.subject if self.model_is_subject else self.oracle or self.new_model()
        try:
            model.reset(dict(config))
        except Exception as error:  # the model's own words on what is wrong with the config
            raise TraceError(self.where, None, f"the reset before step {before}: the model refuses config "
                                               f"{json.dumps(config)[:200]}: {error}") from None
        finally:
            if model is not self.subject and model is not self.oracle:
                model.close()
        if self.system.implied_state is not None:
            self.implied = self.system.implied_state(dict(config))
        if not self.model_is_subject:
            try:
                self.subject.reset(dict(config))
            except Exception as error:
                failure = self._failure(error, None, "the target's reset raised")
                if isinstance(failure, Diverged):
                    failure = Diverged({"i": before, RESET_KEY: config},
                                        f"the reset before step {before} with config "
                                        f"{json.dumps(config, sort_keys=True)[:200]}\n"
                                        + failure.text.split("\n", 1)[-1])
                raise failure from None

    def _recorded_step_checker(self) -> Callable[[dict[str, Json]], Json] | None:
        fast = fast_checks(self.subject) if self.trusted else None
        return fast.step_checker(self.implied) if fast is not None else None

    def _check_at(self, stop_after: int | None) -> int:
        """The next step after which something more than the step itself is due: a
        checkpoint, or the step to stop at."""
        at = self.next_check
        for limit in (self.check_from, stop_after):
            if limit is not None and limit < at:
                at = limit
        return at

    def take(self, step: dict[str, Json]) -> None:
        op, args, now = step["op"], step["args"], step["now"]
        recorded = step.get("result")
        if recorded is not None and self.oracle is None:
            # The usual step of a recorded trace: the target's answer against the record,
            # with no closure or model in between.
            try:
                actual = self.subject.step(op, args, now)
            except Exception as error:
                raise self._failure(error, step, "the target raised") from None
            self.agree(step, recorded, actual)
            counts = self.counts
            counts.responses_compared += 1
            counts.recorded_results += 1
            return
        if recorded is None and self.oracle is None and not self.model_is_subject:
            self.oracle = self.model_through(step["i"] - 1, then_resets=True)
        expected = recorded
        if self.oracle is not None:
            answer = self._attempt(lambda: self.oracle.step(op, args, now), step, MODEL_RAISED)  # type: ignore[union-attr]
            if recorded is not None and not answers_agree(recorded, answer):
                raise self.drift(step, answer)
            expected = answer
        actual = self._attempt(lambda: self.subject.step(op, args, now), step, "the target raised")
        if expected is None:  # the model itself, and no recorded result: nothing to compare
            self.implied = None
            return
        if not answers_agree(expected, actual):
            raise self.response_divergence(step, expected, actual)
        self.counts.responses_compared += 1
        self.counts.recorded_results += recorded is not None
        if self.implied is not None:
            self.implied.apply(op, args, expected)

    def agree(self, step: dict[str, Json], recorded: dict[str, Json], actual: Json) -> None:
        """The target's answer against the recorded result: a divergence unless they agree,
        else the implied state moves on."""
        if not answers_agree(recorded, actual):
            raise self.response_divergence(step, recorded, actual)
        if self.implied is not None:
            self.implied.apply(step["op"], step["args"], recorded)

    # --- states ---

    def expected_state(self) -> dict[str, Json] | None:
        if self.oracle is not None:
            return self.oracle.observe()
        return self.implied.state() if self.implied is not None else None

    def checkpoint(self, step: dict[str, Json]) -> None:
        want = self.expected_state() if self.observe else None
        if want is None:
            return
        fast = fast_checks(self.subject) if self.trusted else None
        state_is = fast.state_is if fast is not None else None
        if state_is is not None and self._attempt(lambda: state_is(want), step, "the target's observe() raised"):
            self._agreed(step, want)  # told without building the target's state
            return
        have = self._attempt(self.subject.observe, step, "the target's observe() raised")
        verdict = state_verdict(step, want, have, exchange=exchange_of(self.subject))
        if isinstance(verdict, Difference):
            # Which step made the states differ is located later; its requirements then.
            raise StateDiffers(step, verdict.describe(with_requirements=False), verdict)
        self._agreed(step, want)

    def check_recorded_state(self, step: dict[str, Json]) -> None:
        if not self.observe:
            return
        recorded, want = step["state"], self.expected_state()
        if want is not None and not same_json(recorded, want):
            source = "model's state" if self.oracle is not None else "state its results imply"
            raise Diverged(step, f"the {source} differs from the state recorded in the trace:\n"
                                  + _indent(describe_divergence(step, "state", recorded, want)))
        have = self._attempt(self.subject.observe, step, "the target's observe() raised")
        verdict = state_verdict(step, recorded, have, lambda: self.cause_at(step),
                                exchange=exchange_of(self.subject))
        if isinstance(verdict, Difference):
            raise Diverged(step, verdict.describe(), verdict)
        self.counts.recorded_states += 1
        self._agreed(step, recorded)

    def _agreed(self, step: dict[str, Json], state: Json) -> None:
        self.counts.states_compared += 1
        self.agreed_at = step["i"]
        self.next_check = step["i"] + self._spacing(state)

    def _spacing(self, state: Json = None) -> int:
        """Steps to the next checkpoint: comparing `state` again costs about its item count."""
        if self.every:
            return self.every
        items = sum(len(value) for value in state.values()
                    if isinstance(value, (list, dict))) if isinstance(state, dict) else 0
        return max(CHECKPOINT_STEPS, STEPS_PER_STATE_ITEM * items)

    def locate(self, differs: StateDiffers) -> None:
        """Replay from the start, comparing after every step since the last agreement, to find
        the first step after which the states differ; raise it as the divergence."""
        self.close()
        again = ReplayPass(self.where, self.header, self.system, self.subject, self.model_is_subject,
                        self.counts, every=None, timeout=self.timeout, trusted=self.trusted,
                        observe=self.observe)
        again.check_from = self.agreed_at + 1
        _, steps = read_trace(self.where)
        try:
            again.reset()
            again.take_all(steps, stop_after=differs.step["i"])
        except StateDiffers as first:
            located, at = first.difference, first.step
            if located is not None:  # now that the step is known, the requirements it reached
                located = state_verdict(at, located.expected, located.actual,
                                        lambda: self.cause_at(at),
                                        exchange=located.exchange)  # type: ignore[assignment]
            raise Diverged(first.step, located.describe() if located else first.text, located) from None
        finally:
            again.close()
            steps.close()
        raise Diverged(differs.step, differs.text + "\n  (a second replay did not reproduce it: "
                                                     "the target is not deterministic)", differs.difference)

    # --- diagnosis with the model ---

    def cause_at(self, step: dict[str, Json]) -> tuple[str, ...]:
        """The model's branch in `step` (its coverage tags), as a campaign names a
        difference's cause (the model taken through the trace up to it, its tags kept apart)."""
        with isolated() as tags:
            model = self.model_through(step["i"], tags=tags)
            model.close()
            refuses = self.system.refuses
            return cause_of(tags, refuses is not None and refuses(step.get("result")))

    def model_through(self, last: int, *, then_resets: bool = False, tags: Counter[str] | None = None) -> Target:
        """A fresh model that has taken every line up to step `last`, and with `then_resets`
        the reset lines after it too (the model about to take step last + 1); a recorded
        result it no longer gives is reported as drift from the spec. `tags`, when given, is
        left holding the coverage tags of step `last` alone."""
        model = self.new_model()
        model.reset(dict(self.header.config))
        if last < 0 and not (then_resets and self.resets):
            return model
        _, steps = read_trace(self.where)
        try:
            for step in steps:
                if is_reset(step):  # a config restart() has seen the model take
                    model.reset(dict(step[RESET_KEY]))
                    continue
                if step["i"] > last:
                    break
                if tags is not None:
                    tags.clear()
                answer = self._attempt(lambda: model.step(step["op"], step["args"], step["now"]),
                                       step, MODEL_RAISED)
                recorded = step.get("result")
                if recorded is not None and not answers_agree(recorded, answer):
                    raise self.drift(step, answer)
                if step["i"] >= last and not then_resets:
                    break
        except BaseException:
            model.close()
            raise
        finally:
            steps.close()
        return model

    def drift(self, step: dict[str, Json], answer: Json) -> Diverged:
        return Diverged(step, "the model does not give the recorded result, so the trace does "
                               "not follow the current spec (it moved since the trace was "
                               "recorded, or the trace's producer, a foreign model say, "
                               "disagrees with it):\n"
                         + _indent(describe_divergence(step, "response", comparable(step["result"]),
                                                       comparable(answer))))

    def response_divergence(self, step: dict[str, Json], expected: Json, actual: Json) -> Diverged:
        verdict = response_verdict(step, expected, actual, lambda: self.cause_at(step),
                                   exchange=exchange_of(self.subject))
        assert isinstance(verdict, Difference)
        text = verdict.describe()
        if self.model_is_subject or verdict.raised is not None or not self.observe:
            return Diverged(step, text, verdict)  # (a response-only replay shows no target state)
        model = self.oracle or self.model_through(step["i"])
        try:
            lines = state_diff(model.observe(), self._attempt(self.subject.observe, step, "observe raised"))
        finally:
            if model is not self.oracle:
                model.close()
        return Diverged(step, text + "\n  state after the step (model vs target):\n" + "\n".join(
            f"    {line}" for line in lines or ["(no difference)"]), verdict)

    def _attempt(self, action: Callable[[], Json], step: dict[str, Json] | None, what: str) -> Json:
        try:
            return action()
        except Exception as error:
            raise self._failure(error, step, what) from None

    @staticmethod
    def _failure(error: Exception, step: dict[str, Json] | None, what: str) -> Exception:
        """What a call that raised `error` means: a limit stays a limit, an unusable target
        is a usage error, and anything else (a crash too) is a finding at this step."""
        if isinstance(error, LimitExceeded):
            return error
        if isinstance(error, TargetError):
            if error.unusable:
                return UsageError(f"target unusable: {error}")
            where = (f"step {step['i']}: {step['op']}" if step else "before the first step")
            return Diverged(step or {"i": -1}, f"{where}\n  {error}", _raised(step, error, what))
        where = (f"step {step['i']}: {step['op']} {json.dumps(step['args'], sort_keys=True)[:300]} "
                 f"at now={step['now']}") if step else "before the first step"
        return Diverged(step or {"i": -1}, f"{where}\n  {what}: {type(error).__name__}: {error}",
                         _raised(step, error, what))


def _named(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _raised(step: dict[str, Json] | None, error: BaseException, what: str) -> Difference | None:
    """The judge's class of what the target raised at `step` (None: its reset); None when
    it was the model that raised (the replay's own failure, no finding about the target)."""
    if what == MODEL_RAISED:
        return None
    verdict = raised_verdict(step, step["op"] if step else "reset", error)
    assert isinstance(verdict, Difference)
    return verdict


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())



"""The forms of a declaration that say exactly what they mean (docs/declared.md).

`unordered` frees a list's order and nothing else; `order_within` keeps the order among
elements sharing a key; `messages` declares a path in what a step sent. And the case that
asked for them: examples/resonate-pg/declared.toml frees the order of one timer pass, so a
tick that fires nothing, or fires a retry too many, is still a difference.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from duespec.campaigns.classes import Masks
from duespec.campaigns.declared import DeclaredError, load
from duespec.cli import main
from duespec.judge import DECLARED, Difference, FindingKind, Masked, compared_verdict
from duespec.systems import get_system

SCHEDULES = get_system("schedules")
ROOT = Path(__file__).resolve().parents[1]
TICK = {"i": 3, "op": "tick", "args": {}, "now": 0, "result": {}}
UNORDERED_FIRED = '''
[[difference]]
reason = "our pass fires in another order"
op = "tick"
response = "$.fired"
unordered = true
'''


def declared(tmp_path: Path, text: str) -> list:
    path = tmp_path / "declared.toml"
    path.write_text(text)
    return load(path, SCHEDULES)


def fired(*entries: tuple[str, str]) -> dict:
    return {"status": 200, "fired": [{"kind": kind, "id": id} for kind, id in entries]}


def verdict(entries: list, expected, actual, kind=FindingKind.RESPONSE, step=TICK, requirements=("ENV-01",)):
    return compared_verdict(kind, step, expected, actual, requirements, Masks("lean", declared=entries))


def test_unordered_frees_the_order_and_counts_it_as_not_compared(tmp_path) -> None:
    entries = declared(tmp_path, UNORDERED_FIRED)
    got = verdict(entries, fired(("promise", "a"), ("schedule", "s")), fired(("schedule", "s"), ("promise", "a")))
    assert isinstance(got, Masked) and not got.ends_run
    assert got.labels == (DECLARED + entries[0].describe(),)
    assert "in any order" in got.labels[0]


@pytest.mark.parametrize("actual", [
    fired(),                                                            # fires nothing
    fired(("promise", "a")),                                            # fires one fewer
    fired(("promise", "a"), ("schedule", "s"), ("retry", "t")),         # fires one more
    fired(("promise", "a"), ("schedule", "s"), ("schedule", "s")),      # fires one twice
])
def test_unordered_still_compares_what_the_list_holds(tmp_path, actual) -> None:
    entries = declared(tmp_path, UNORDERED_FIRED)
    got = verdict(entries, fired(("promise", "a"), ("schedule", "s")), actual)
    assert isinstance(got, Difference), got
    assert got.path.startswith("$.fired")


def test_unordered_masks_no_path_and_leaves_the_rest_of_the_answer_compared(tmp_path) -> None:
    entries = declared(tmp_path, UNORDERED_FIRED)
    expected = fired(("promise", "a"), ("schedule", "s"))
    actual = {**fired(("schedule", "s"), ("promise", "a")), "status": 201}
    got = verdict(entries, expected, actual)
    assert isinstance(got, Difference) and got.path == "$.status"
    assert not entries[0].matches(FindingKind.RESPONSE, "tick", ("ENV-01.promise",), "$.fired", "lean")


def test_order_within_keeps_the_order_among_elements_of_one_kind(tmp_path) -> None:
    entries = declared(tmp_path, UNORDERED_FIRED + 'order_within = "kind"\n')
    expected = fired(("promise", "a"), ("schedule", "s"), ("promise", "b"))
    kinds_apart = fired(("schedule", "s"), ("promise", "a"), ("promise", "b"))
    assert isinstance(verdict(entries, expected, kinds_apart), Masked)
    one_kind_swapped = fired(("schedule", "s"), ("promise", "b"), ("promise", "a"))
    got = verdict(entries, expected, one_kind_swapped)
    assert isinstance(got, Difference) and got.path == "$.fired[].id"


def test_an_unordered_path_through_a_list_frees_each_element_list(tmp_path) -> None:
    entries = declared(tmp_path, '''
[[difference]]
reason = "our store keeps no order of registrations"
state = "$.promises[].callbacks"
unordered = true
''')
    step = {"i": 0, "op": "promise.register_callback", "args": {}, "now": 0, "result": {}}
    expected = {"promises": [{"id": "a", "callbacks": ["x", "y"]}, {"id": "b", "callbacks": ["z"]}]}
    reordered = {"promises": [{"id": "a", "callbacks": ["y", "x"]}, {"id": "b", "callbacks": ["z"]}]}
    assert isinstance(verdict(entries, expected, reordered, FindingKind.STATE, step, ("P-04",)), Masked)
    lost = {"promises": [{"id": "a", "callbacks": ["y"]}, {"id": "b", "callbacks": ["z"]}]}
    got = verdict(entries, expected, lost, FindingKind.STATE, step, ("P-04",))
    assert isinstance(got, Difference) and got.path == "$.promises[].callbacks"


def test_a_messages_declaration_masks_a_path_in_what_a_step_sent(tmp_path) -> None:
    entries = declared(tmp_path, '''
[[difference]]
reason = "we re-dispatch with the version bumped"
op = "tick"
messages = "$[].message.version"
''')
    masks = Masks("lean", declared=entries)
    execute = {"address": "w", "message": {"kind": "execute", "taskId": "t", "version": 0}}
    bumped = {"address": "w", "message": {"kind": "execute", "taskId": "t", "version": 1}}
    found = compared_verdict(FindingKind.MESSAGES, TICK, [execute], [bumped], ("TO-04",), masks)
    assert isinstance(found, Difference) and found.path == "$[].message.version"
    assert masks.add(found.divergence_class) == entries  # a declared class
    assert isinstance(compared_verdict(FindingKind.MESSAGES, TICK, [execute], [bumped], ("TO-04",), masks), Masked)
    extra = compared_verdict(FindingKind.MESSAGES, TICK, [execute], [bumped, bumped], ("TO-04",), masks)
    assert isinstance(extra, Difference) and extra.path == "$"


@pytest.mark.parametrize(("text", "problem"), [
    (UNORDERED_FIRED.replace("unordered = true", 'order_within = "kind"'), "order_within needs unordered = true"),
    (UNORDERED_FIRED.replace("unordered = true", 'unordered = "yes"'), "unordered must be true or false"),
    (UNORDERED_FIRED + "order_within = 3\n", "order_within must name a key"),
    (UNORDERED_FIRED.replace('response = "$.fired"', 'messages = "fired"'), "is not a path"),
    (UNORDERED_FIRED + 'branch = "early"\n', "is not a branch of the model like TO-01.early"),
    (UNORDERED_FIRED + 'requirement = "ENV-01"\nbranch = "TO-01.early"\n', "is not a branch of requirement ENV-01"),
])
def test_a_malformed_form_is_one_line_and_exit_2(tmp_path, capsys, text, problem) -> None:
    path = tmp_path / "declared.toml"
    path.write_text(text)
    with pytest.raises(DeclaredError, match=problem):
        load(path, SCHEDULES)
    code = main(["conform", "schedules", "--target", "impl", "--declared", str(path), "--examples", "1"])
    err = capsys.readouterr().err
    assert code == 2 and problem in err and "Traceback" not in err, err


# --- a branch: one way through a requirement, the others still compared ---------------------

EARLY_TIMEOUT = '''
[[difference]]
reason = "our timeout handler does not look at timeoutAt"
op = "promise.timeout"
requirement = "TO-01"
branch = "TO-01.early"
state = "$.promises[].state"
'''
TIMEOUT = {"i": 3, "op": "promise.timeout", "args": {"id": "p"}, "now": 0, "result": {}}


def test_a_branch_masks_that_branch_and_leaves_the_requirement_s_others_compared(tmp_path) -> None:
    """A timeout delivered early (TO-01.early) may settle, as the declaration says; one
    delivered to a promise already settled (TO-01.not_pending) that rewrites it is a bug
    (tools/pg_variants' timeout_overwrites_settle), still found."""
    entries = declared(tmp_path, EARLY_TIMEOUT)
    masks = Masks("lean", declared=entries)
    pending, timed_out = {"promises": [{"state": "pending"}]}, {"promises": [{"state": "rejected_timedout"}]}
    early = compared_verdict(FindingKind.STATE, TIMEOUT, pending, timed_out, ("TO-01.early",), masks)
    assert isinstance(early, Difference) and masks.add(early.divergence_class) == entries  # declared
    assert isinstance(compared_verdict(FindingKind.STATE, TIMEOUT, pending, timed_out, ("TO-01.early",), masks),
                      Masked)
    resolved = {"promises": [{"state": "resolved"}]}
    rewritten = compared_verdict(FindingKind.STATE, TIMEOUT, resolved, timed_out, ("TO-01.not_pending",), masks)
    assert isinstance(rewritten, Difference), rewritten
    assert masks.add(rewritten.divergence_class) == [], "the rewrite of a settled promise is declared"
    assert "branch TO-01.early" in entries[0].describe()


# --- resonate-pg's declarations, narrowed --------------------------------------------------

def test_resonate_pg_frees_only_the_order_of_one_timer_pass() -> None:
    entries = load(ROOT / "examples" / "resonate-pg" / "declared.toml", SCHEDULES)
    model = fired(("promise", "p"), ("schedule", "s"), ("retry", "t"))
    pass_order = fired(("promise", "p"), ("retry", "t"), ("schedule", "s"))   # promises, tasks, schedules
    assert isinstance(verdict(entries, model, pass_order), Masked)
    for wrong in (fired(), fired(("promise", "p"), ("retry", "t")),
                  fired(("promise", "p"), ("retry", "t"), ("retry", "t"), ("schedule", "s"))):
        masks = Masks("lean", declared=entries)
        got = compared_verdict(FindingKind.RESPONSE, TICK, model, wrong, ("ENV-01",), masks)
        assert isinstance(got, Difference), (wrong, got)
        assert got.divergence_class.label().startswith("response tick $.fired"), got.divergence_class.label()
        assert masks.add(got.divergence_class) == [], f"{wrong} is declared"  # reported, NOT DECLARED

"""The fixture: a campaign as data, asserted on like any other result."""


def test_good_duebook_conforms(duespec_conform):
    outcome = duespec_conform("duebook", "broken_duebook:GoodDuebook", examples=10, steps=10, database="none")
    assert outcome.ok, outcome.output
    assert outcome.classes == []
    assert outcome.campaigns[0]["runs"] >= 10


def test_broken_duebook_has_two_classes(duespec_conform):
    outcome = duespec_conform("duebook", "broken_duebook:BrokenDuebook", examples=30, steps=10, database="none")
    assert not outcome.ok
    ops = sorted(finding["class"]["op"] for finding in outcome.undeclared)
    assert ops == ["cancel", "claim"], outcome.labels
    assert all(finding["counterexample"] for finding in outcome.undeclared)

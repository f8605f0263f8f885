"""The fixture: a campaign as data, asserted on like any other result."""


def test_good_duebook_conforms(duespec_conform):
    outcome = duespec_conform("duebook", "broken_duebook:GoodDuebook", examples=10, steps=10, database="none")
    assert outcome.ok, outcome.output
    assert outcome.classes == []
    assert outcome.campaigns[0]["runs"] >= 10


def test_broken_duebook_shows_both_bugs(duespec_conform):
    # max_classes past the default of 1, to see both bugs; the cancel bug may show as more
    # than one class (one per branch of the model that reaches it)
    outcome = duespec_conform("duebook", "broken_duebook:BrokenDuebook", examples=30, steps=10, max_classes=10,
                              database="none")
    assert not outcome.ok
    ops = {finding["class"]["op"] for finding in outcome.undeclared}
    assert ops == {"cancel", "claim"}, outcome.labels
    assert len(set(outcome.labels)) == len(outcome.labels), outcome.labels
    assert all(finding["counterexample"] for finding in outcome.undeclared)

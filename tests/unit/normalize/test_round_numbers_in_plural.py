"""English "100s of people", "1,000s of fans": a round number with the plural s before "of"
is said as people say it ("hundreds of people"). A user's sweep (fourth session) heard "one
hundred seconds of people" (the s read as the unit) and "one thousands of fans"."""

from __future__ import annotations

import pytest

from pocketcli.normalize import normalize_text

CASES = [
    ("There were 100s of people.", "There were hundreds of people."),
    ("1000s of fans came.", "thousands of fans came."),
    ("1,000s of fans came.", "thousands of fans came."),
    ("We got 10,000s of emails.", "We got tens of thousands of emails."),
    ("Over 100,000s of them.", "Over hundreds of thousands of them."),
    ("It cost 1,000,000s of dollars.", "It cost millions of dollars."),
]


@pytest.mark.parametrize("text, said", CASES)
def test_a_round_number_in_plural(text, said) -> None:
    assert normalize_text(text, "english") == said


@pytest.mark.parametrize(
    "text, said",
    [
        ("A 100s sprint.", "A one hundred seconds sprint."),  # no "of": the unit
        ("Wait 200s of it.", "Wait two hundred seconds of it."),  # not a round number
        ("In the 1900s.", "In the nineteen hundreds."),  # a decade
        ("He is in his 20s.", "He is in his twenties."),
    ],
)
def test_other_plurals_are_as_before(text, said) -> None:
    assert normalize_text(text, "english") == said

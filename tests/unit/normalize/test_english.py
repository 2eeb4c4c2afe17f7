"""English readings, written from English usage (American number reading, no "and")."""

from __future__ import annotations

import pytest

from pocketcli.normalize import normalize_text

CASES = [
    # cardinals, decimals, negatives, separators
    ("I have 3 apples.", "I have three apples."),
    ("There were 21 of us.", "There were twenty-one of us."),
    ("It has 101 rooms.", "It has one hundred one rooms."),
    (
        "Population 1,234,567.",
        "Population one million two hundred thirty-four thousand five hundred sixty-seven.",
    ),
    ("Pi is 3.14.", "Pi is three point one four."),
    ("It is 0.5 now.", "It is zero point five now."),
    ("-42 is negative.", "minus forty-two is negative."),
    ("Agent 007.", "Agent zero zero seven."),
    # ordinals
    ("The 1st, 2nd, 3rd and 4th.", "The first, second, third and fourth."),
    ("The 21st century.", "The twenty-first century."),
    ("Her 100th birthday.", "Her one hundredth birthday."),
    # percentages
    ("A 50% discount.", "A fifty percent discount."),
    ("Up 12.5%.", "Up twelve point five percent."),
    # money
    ("It costs $5.", "It costs five dollars."),
    ("It costs $1.", "It costs one dollar."),
    (
        "It costs $1,234.56.",
        "It costs one thousand two hundred thirty-four dollars and fifty-six cents.",
    ),
    ("Only $0.99!", "Only ninety-nine cents!"),
    ("That is £3.50.", "That is three pounds and fifty pence."),
    ("It was 20€ or EUR 20.", "It was twenty euros or twenty euros."),
    ("Pay ¥500.", "Pay five hundred yen."),
    ("Pay 30 CHF.", "Pay thirty Swiss francs."),
    ("Raised $2 million.", "Raised two million dollars."),
    # dates and times
    ("On 2024-03-15 we met.", "On March fifteenth, twenty twenty-four we met."),
    ("On 03/15/2024 we met.", "On March fifteenth, twenty twenty-four we met."),
    ("It was March 15, 2024.", "It was March fifteenth, twenty twenty-four."),
    ("On 4 July 1776 it began.", "On July fourth, seventeen seventy-six it began."),
    ("Born in 1990.", "Born in nineteen ninety."),
    ("The 1990s were loud.", "The nineteen nineties were loud."),
    ("From 1990-2000.", "From nineteen ninety to two thousand."),
    ("Meet at 14:30.", "Meet at fourteen thirty."),
    ("Meet at 2:30 pm.", "Meet at two thirty P M."),
    ("Meet at 9:05 am.", "Meet at nine oh five A M."),
    ("Meet at 10:00.", "Meet at ten o'clock."),
    ("At 7 p.m. we eat.", "At seven P M we eat."),
    # ranges and units
    ("Lift 5-10 kg.", "Lift five to ten kilograms."),
    ("It is 3.5 km away.", "It is three point five kilometers away."),
    ("It weighs 1 kg.", "It weighs one kilogram."),
    ("Wait 1 h, 30 min or 45 s.", "Wait one hour, thirty minutes or forty-five seconds."),
    ("It was -5°C.", "It was minus five degrees Celsius."),
    (
        "A gap of 2 mm, 10 cm wide, 3 m long.",
        "A gap of two millimeters, ten centimeters wide, three meters long.",
    ),
    ("Set it to 350 °F.", "Set it to three hundred fifty degrees Fahrenheit."),
    # phones and long digit runs
    ("Call 555-123-4567 now.", "Call five five five, one two three, four five six seven now."),
    (
        "Call +44 20 7946 0958.",
        "Call plus four four, two zero, seven nine four six, zero nine five eight.",
    ),
    ("Code 12345678901.", "Code one two three, four five six, seven eight nine, zero one."),
    # abbreviations
    ("Dr. Smith lives on Main St.", "Doctor Smith lives on Main Street."),
    ("Mr. and Mrs. Jones.", "Mister and Missus Jones."),
    ("Apples, pears, etc. Then more.", "Apples, pears, et cetera. Then more."),
    ("Cats vs. dogs, e.g. Tom, i.e. him.", "Cats versus dogs, for example Tom, that is him."),
    ("Room No. 5.", "Room Number five."),
    # symbols
    ("Tom & Jerry.", "Tom and Jerry."),
    ("1+1=2", "one plus one equals two"),
    ("Item #3 is out.", "Item number three is out."),
    ("Use #python daily.", "Use hashtag python daily."),
    ("Either A/B.", "Either A slash B."),
    ("About 1/2 of them.", "About one half of them."),
    # web
    ("Mail jane.doe@example.org today.", "Mail jane dot doe at example dot org today."),
    (
        "See https://www.example.com/docs?page=2 now.",
        "See w w w dot example dot com slash docs now.",
    ),
    ("Visit example.com.", "Visit example dot com."),
    # characters the tokenizer cannot represent
    ("I love you ❤️!", "I love you heart!"),
    ("Nice 👍", "Nice thumbs up"),
    ("Rocket 🚀 launch.", "Rocket launch."),
    ("Bell\x07 rang.", "Bell rang."),
    # "ó" is a piece of the English tokenizer, "ł" and "ź" are not.
    ("Łódź is in Poland.", "Lódz is in Poland."),
]


@pytest.mark.parametrize("written, spoken", CASES)
def test_english(written: str, spoken: str) -> None:
    assert normalize_text(written, "english") == spoken


def test_model_variants_read_as_english() -> None:
    assert normalize_text("3 cats", "english_2026-04") == "three cats"


def test_urls_and_emails_can_be_dropped() -> None:
    text = "Visit https://example.com/x or mail a@b.org now."
    assert normalize_text(text, "english", urls="drop", emails="drop") == "Visit or mail now."

"""German readings, written from German usage (decimal comma, "am dritten", "Uhr")."""

from __future__ import annotations

import pytest

from pocketcli.normalize import normalize_text

CASES = [
    ("Ich habe 3 Äpfel.", "Ich habe drei Äpfel."),
    ("Es sind 21 Leute.", "Es sind einundzwanzig Leute."),
    (
        "Es sind 1.234.567 Einwohner.",
        "Es sind eine Million "
        "zweihundertvierunddreißigtausendfünfhundertsiebenundsechzig Einwohner.",
    ),
    ("Pi ist 3,14.", "Pi ist drei Komma eins vier."),
    ("Es sind 2,5 Liter.", "Es sind zwei Komma fünf Liter."),
    ("Es hat -7 Punkte.", "Es hat minus sieben Punkte."),
    ("Am 3. März 2024 war es kalt.", "Am dritten März zweitausendvierundzwanzig war es kalt."),
    ("Der 3. Platz ging an sie.", "Der dritte Platz ging an sie."),
    ("Die 1. Liga spielt.", "Die erste Liga spielt."),
    ("Er kam am 1. Mai.", "Er kam am ersten Mai."),
    ("Ich habe 3. Dann gehe ich.", "Ich habe drei. Dann gehe ich."),
    ("Im 21. Jahrhundert.", "Im einundzwanzigsten Jahrhundert."),
    ("Am 15.03.2024 regnete es.", "Am fünfzehnten März zweitausendvierundzwanzig regnete es."),
    ("Am 2024-03-15 regnete es.", "Am fünfzehnten März zweitausendvierundzwanzig regnete es."),
    ("Im Jahr 1990 fiel die Mauer.", "Im Jahr neunzehnhundertneunzig fiel die Mauer."),
    ("Seit 1990 ist das so.", "Seit neunzehnhundertneunzig ist das so."),
    ("Die 1990er Jahre.", "Die neunzehnhundertneunziger Jahre."),
    ("Von 1990-2000 wuchs es.", "Von neunzehnhundertneunzig bis zweitausend wuchs es."),
    ("Um 14:30 Uhr beginnt es.", "Um vierzehn Uhr dreißig beginnt es."),
    ("Um 14:00 Uhr beginnt es.", "Um vierzehn Uhr beginnt es."),
    ("Um 1:00 Uhr beginnt es.", "Um ein Uhr beginnt es."),
    (
        "Das kostet 1.234,56 €.",
        "Das kostet eintausendzweihundertvierunddreißig Euro und sechsundfünfzig Cent.",
    ),
    ("Das kostet 3,50 €.", "Das kostet drei Euro und fünfzig Cent."),
    ("Das kostet 1 €.", "Das kostet ein Euro."),
    ("Das kostet 0,99 €.", "Das kostet neunundneunzig Cent."),
    ("Das kostet $5.", "Das kostet fünf Dollar."),
    ("Das kostet 1 £.", "Das kostet ein Pfund."),
    ("Das sind 2 Mio. €.", "Das sind zwei Millionen Euro."),
    ("Das kostet 20 CHF.", "Das kostet zwanzig Franken."),
    ("50 % Rabatt.", "fünfzig Prozent Rabatt."),
    ("Es sind 5-10 km.", "Es sind fünf bis zehn Kilometer."),
    ("Er wiegt 1 kg.", "Er wiegt ein Kilogramm."),
    ("Warte 1 h oder 30 min.", "Warte eine Stunde oder dreißig Minuten."),
    ("Es dauert 1,5 h.", "Es dauert eins Komma fünf Stunden."),
    ("Es hat -5 °C.", "Es hat minus fünf Grad Celsius."),
    (
        "Rufen Sie 030 1234567 an.",
        "Rufen Sie null drei null, eins zwei drei vier fünf sechs sieben an.",
    ),
    ("Dr. Müller kommt.", "Doktor Müller kommt."),
    ("Äpfel, Birnen usw.", "Äpfel, Birnen und so weiter."),
    ("Obst, z. B. Äpfel.", "Obst, zum Beispiel Äpfel."),
    ("Obst, z.B. Äpfel.", "Obst, zum Beispiel Äpfel."),
    ("Er kam, d. h. sie ging.", "Er kam, das heißt sie ging."),
    ("Er kam bzw. ging.", "Er kam beziehungsweise ging."),
    ("Zimmer Nr. 5.", "Zimmer Nummer fünf."),
    ("Fr. Meier ist da.", "Frau Meier ist da."),
    ("Tom & Jerry.", "Tom und Jerry."),
    ("1+1=2", "eins plus eins gleich zwei"),
    ("Schreib an max@beispiel.de bitte.", "Schreib an max at beispiel Punkt de bitte."),
    ("Die Straße ist schön.", "Die Straße ist schön."),
    ("Ich ❤️ dich.", "Ich Herz dich."),
]


@pytest.mark.parametrize("written, spoken", CASES)
def test_german(written: str, spoken: str) -> None:
    assert normalize_text(written, "german") == spoken


def test_24_layer_model_reads_as_german() -> None:
    assert normalize_text("3 Katzen", "german_24l") == "drei Katzen"

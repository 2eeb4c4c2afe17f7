"""Dutch readings, written from Dutch usage ("veertien uur dertig", "1e", unit singular)."""

from __future__ import annotations

import pytest

from pocketcli.normalize import normalize_text

CASES = [
    ("Ik heb 3 appels.", "Ik heb drie appels."),
    ("Er zijn 21 leerlingen.", "Er zijn eenentwintig leerlingen."),
    ("Er zijn 101 mensen.", "Er zijn honderdeen mensen."),
    (
        "Er zijn 1.234.567 inwoners.",
        "Er zijn een miljoen tweehonderdvierendertigduizendvijfhonderdzevenenzestig inwoners.",
    ),
    ("Pi is 3,14.", "Pi is drie komma veertien."),
    ("Het is 2,5 liter.", "Het is twee komma vijf liter."),
    ("Het is -3 graden.", "Het is min drie graden."),
    ("De 1e keer.", "De eerste keer."),
    ("De 2de plaats.", "De tweede plaats."),
    ("De 8ste dag.", "De achtste dag."),
    ("De 21e eeuw.", "De eenentwintigste eeuw."),
    ("Op 15 maart 2024.", "Op vijftien maart tweeduizendvierentwintig."),
    ("Op 15-03-2024.", "Op vijftien maart tweeduizendvierentwintig."),
    ("Op 15/03/2024.", "Op vijftien maart tweeduizendvierentwintig."),
    ("Op 2024-03-15.", "Op vijftien maart tweeduizendvierentwintig."),
    ("In 1990 was het koud.", "In negentien honderd negentig was het koud."),
    ("Van 1990-2000.", "Van negentien honderd negentig tot tweeduizend."),
    ("Om 14:30 uur.", "Om veertien uur dertig."),
    ("Om 14:00.", "Om veertien uur."),
    ("Het kost € 1.234,56.", "Het kost duizendtweehonderdvierendertig euro en zesenvijftig cent."),
    ("Het kost 1 €.", "Het kost één euro."),
    ("Het kost € 0,99.", "Het kost negenennegentig cent."),
    ("Het kost $5.", "Het kost vijf dollar."),
    ("Het kost 2 £.", "Het kost twee pond."),
    ("Het kost 2 miljoen €.", "Het kost twee miljoen euro."),
    ("50% korting.", "vijftig procent korting."),
    ("Het is 5-10 km.", "Het is vijf tot tien kilometer."),
    ("Het weegt 1 kg.", "Het weegt één kilogram."),
    ("Het duurt 1 h of 30 min.", "Het duurt één uur of dertig minuten."),
    ("Nog 1 min.", "Nog één minuut."),
    ("Het is -5 °C.", "Het is min vijf graden Celsius."),
    ("Het is 1 °C.", "Het is één graad Celsius."),
    ("Bel 020 1234567.", "Bel nul twee nul, één twee drie vier vijf zes zeven."),
    ("Dhr. Jansen en mevr. de Vries.", "De heer Jansen en mevrouw de Vries."),
    ("Appels, peren, enz.", "Appels, peren, enzovoort."),
    ("Bijv. vandaag, d.w.z. nu.", "Bijvoorbeeld vandaag, dat wil zeggen nu."),
    ("Fruit, o.a. appels.", "Fruit, onder andere appels."),
    ("Kamer nr. 5.", "Kamer nummer vijf."),
    ("Tom & Jerry.", "Tom en Jerry."),
    ("2+2=4", "twee plus twee is gelijk aan vier"),
    (
        "Mail naar jan@voorbeeld.nl vandaag.",
        "Mail naar jan apenstaartje voorbeeld punt nl vandaag.",
    ),
    ("Een coöperatie en een reünie.", "Een coöperatie en een reünie."),
    ("Ik hou van je ❤️", "Ik hou van je hart"),
]


@pytest.mark.parametrize("written, spoken", CASES)
def test_dutch(written: str, spoken: str) -> None:
    assert normalize_text(written, "dutch") == spoken


def test_24_layer_model_reads_as_dutch() -> None:
    assert normalize_text("3 katten", "dutch_24l") == "drie katten"

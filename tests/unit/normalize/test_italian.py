"""Italian readings, written from Italian usage ("primo maggio", "1°" ordinals, "un'ora")."""

from __future__ import annotations

import pytest

from pocketcli.normalize import normalize_text

CASES = [
    ("Ho 3 mele.", "Ho tre mele."),
    ("Siamo in 21.", "Siamo in ventuno."),
    (
        "Sono 1.234.567 abitanti.",
        "Sono un milione e duecentotrentaquattromilacinquecentosessantasette abitanti.",
    ),
    ("Pi vale 3,14.", "Pi vale tre virgola quattordici."),
    ("Sono 2,5 litri.", "Sono due virgola cinque litri."),
    ("Fa -3 gradi.", "Fa meno tre gradi."),
    ("La 1ª volta.", "La prima volta."),
    ("Il 2° posto.", "Il secondo posto."),
    ("Il 3º classificato.", "Il terzo classificato."),
    ("Il 21° secolo.", "Il ventunesimo secolo."),
    ("Il 1° maggio 2024.", "Il primo maggio duemilaventiquattro."),
    ("Il 15 marzo 2024.", "Il quindici marzo duemilaventiquattro."),
    ("Il 15/03/2024.", "Il quindici marzo duemilaventiquattro."),
    ("Il 2024-03-15.", "Il quindici marzo duemilaventiquattro."),
    ("Nel 1990.", "Nel millenovecentonovanta."),
    ("Nel 1990-1995.", "Nel millenovecentonovanta a millenovecentonovantacinque."),
    ("Alle 14:30.", "Alle quattordici e trenta."),
    ("Alle 13:00.", "Alle tredici."),
    ("All'1:15.", "All'una e quindici."),
    ("Costa 1.234,56 €.", "Costa milleduecentotrentaquattro euro e cinquantasei centesimi."),
    ("Costa 1 €.", "Costa un euro."),
    ("Costa 0,99 €.", "Costa novantanove centesimi."),
    ("Costa 5 $.", "Costa cinque dollari."),
    ("Costa 1 £.", "Costa una sterlina."),
    ("Costa 2 £.", "Costa due sterline."),
    ("Costa 2 milioni €.", "Costa due milioni di euro."),
    ("Il 50% dei casi.", "Il cinquanta per cento dei casi."),
    ("Da 5 a 10 km.", "Da cinque a dieci chilometri."),
    ("Pesa 1 kg.", "Pesa un chilogrammo."),
    ("Dura 1 h o 21 h.", "Dura un'ora o ventuno ore."),
    ("Dura 30 min.", "Dura trenta minuti."),
    ("Ci sono -5 °C.", "Ci sono meno cinque gradi Celsius."),
    ("Ci sono 30°C.", "Ci sono trenta gradi Celsius."),
    ("Chiama 06 1234 5678.", "Chiama zero sei, uno due tre quattro, cinque sei sette otto."),
    ("Il Sig. Rossi e la Sig.ra Bianchi.", "Il Signor Rossi e la Signora Bianchi."),
    ("Il Dott. Verdi arriva.", "Il Dottor Verdi arriva."),
    ("Mele, pere, ecc.", "Mele, pere, eccetera."),
    ("Frutta, per es. mele.", "Frutta, per esempio mele."),
    ("Pagina n. 5.", "Pagina numero cinque."),
    ("Tom & Jerry.", "Tom e Jerry."),
    ("2+2=4", "due più due uguale quattro"),
    ("Scrivi a mario@esempio.it grazie.", "Scrivi a mario chiocciola esempio punto it grazie."),
    ("Ti voglio bene ❤️", "Ti voglio bene cuore"),
    ("Perché è così.", "Perché è così."),
]


@pytest.mark.parametrize("written, spoken", CASES)
def test_italian(written: str, spoken: str) -> None:
    assert normalize_text(written, "italian") == spoken


def test_24_layer_model_reads_as_italian() -> None:
    assert normalize_text("3 gatti", "italian_24l") == "tre gatti"

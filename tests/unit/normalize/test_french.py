"""French readings, written from French usage (comma decimals, space thousands, "premier")."""

from __future__ import annotations

import pytest

from pocketcli.normalize import normalize_text

CASES = [
    ("J'ai 3 pommes.", "J'ai trois pommes."),
    ("Il y a 21 élèves.", "Il y a vingt et un élèves."),
    ("Il y a 80 ans.", "Il y a quatre-vingts ans."),
    ("Il y a 71 pages.", "Il y a soixante et onze pages."),
    (
        "1 234 567 habitants.",
        "un million deux cent trente-quatre mille cinq cent soixante-sept habitants.",
    ),
    ("Pi vaut 3,14.", "Pi vaut trois virgule quatorze."),
    ("Il reste 3,05 litres.", "Il reste trois virgule zéro cinq litres."),
    ("Il fait -5 degrés.", "Il fait moins cinq degrés."),
    ("La 1re fois.", "La première fois."),
    ("Le 1er jour.", "Le premier jour."),
    ("Le 2e jour et le 3ème.", "Le deuxième jour et le troisième."),
    ("Le 21e siècle.", "Le vingt et unième siècle."),
    ("Une pente de 3,5 %.", "Une pente de trois virgule cinq pour cent."),
    ("50% de remise.", "cinquante pour cent de remise."),
    ("Il coûte 5 €.", "Il coûte cinq euros."),
    ("Il coûte 1 €.", "Il coûte un euro."),
    (
        "Il coûte 1 234,56 €.",
        "Il coûte mille deux cent trente-quatre euros et cinquante-six centimes.",
    ),
    ("Il coûte 0,99 €.", "Il coûte quatre-vingt-dix-neuf centimes."),
    ("Il coûte 10 $.", "Il coûte dix dollars."),
    ("Il coûte 1 £.", "Il coûte une livre sterling."),
    ("Il coûte 21 £.", "Il coûte vingt et une livres sterling."),
    ("Il a gagné 2 millions €.", "Il a gagné deux millions d'euros."),
    ("Le 1er mars 2024.", "Le premier mars deux mille vingt-quatre."),
    ("Le 15/03/2024.", "Le quinze mars deux mille vingt-quatre."),
    ("Le 2024-03-15.", "Le quinze mars deux mille vingt-quatre."),
    ("En 1990.", "En mille neuf cent quatre-vingt-dix."),
    ("De 1990-2000.", "De mille neuf cent quatre-vingt-dix à deux mille."),
    ("Rendez-vous à 14h30.", "Rendez-vous à quatorze heures trente."),
    ("Rendez-vous à 14:30.", "Rendez-vous à quatorze heures trente."),
    ("Il est 1:05.", "Il est une heure cinq."),
    ("Rendez-vous à 21 h.", "Rendez-vous à vingt et une heures."),
    ("Il pèse 1 kg.", "Il pèse un kilogramme."),
    ("Il a 1,5 km.", "Il a un virgule cinq kilomètre."),
    ("Attendez 1 h ou 30 min.", "Attendez une heure ou trente minutes."),
    ("Il fait -5 °C.", "Il fait moins cinq degrés Celsius."),
    ("De 5 à 10 km.", "De cinq à dix kilomètres."),
    (
        "Appelez le 06 12 34 56 78.",
        "Appelez le zéro six, douze, trente-quatre, cinquante-six, soixante-dix-huit.",
    ),
    ("M. Dupont et Mme Martin.", "Monsieur Dupont et Madame Martin."),
    ("Le Dr Martin arrive.", "Le Docteur Martin arrive."),
    ("Des pommes, etc.", "Des pommes, et cetera."),
    ("p. ex. ceci, c.-à-d. cela.", "par exemple ceci, c'est-à-dire cela."),
    ("Le n° 5.", "Le numéro cinq."),
    ("Tom & Jerry.", "Tom et Jerry."),
    ("1+1=2", "un plus un égale deux"),
    ("Écrivez à jean@exemple.fr.", "Écrivez à jean arobase exemple point fr."),
    ("J'adore ❤️ !", "J'adore cœur !"),
    ("Un œuf à 2 €.", "Un œuf à deux euros."),
]


@pytest.mark.parametrize("written, spoken", CASES)
def test_french(written: str, spoken: str) -> None:
    assert normalize_text(written, "french") == spoken


def test_24_layer_model_reads_as_french() -> None:
    assert normalize_text("3 chats", "french_24l") == "trois chats"

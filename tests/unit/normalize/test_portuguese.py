"""Portuguese readings (Brazilian number words), written from Portuguese usage."""

from __future__ import annotations

import pytest

from pocketcli.normalize import normalize_text

CASES = [
    ("Tenho 3 maçãs.", "Tenho três maçãs."),
    ("São 16 pessoas.", "São dezesseis pessoas."),
    ("São 21 alunos.", "São vinte e um alunos."),
    (
        "São 1.234.567 habitantes.",
        "São um milhão duzentos e trinta e quatro mil quinhentos e sessenta e sete habitantes.",
    ),
    ("Pi vale 3,14.", "Pi vale três vírgula catorze."),
    ("São 2,5 litros.", "São dois vírgula cinco litros."),
    ("Faz -3 graus.", "Faz menos três graus."),
    ("A 1ª vez.", "A primeira vez."),
    ("O 2º lugar.", "O segundo lugar."),
    ("O 3° lugar.", "O terceiro lugar."),
    ("O 21º andar.", "O vigésimo primeiro andar."),
    ("Dia 1º de maio de 2024.", "Dia primeiro de maio de dois mil e vinte e quatro."),
    ("Dia 15 de março de 2024.", "Dia quinze de março de dois mil e vinte e quatro."),
    ("Dia 15/03/2024.", "Dia quinze de março de dois mil e vinte e quatro."),
    ("Dia 2024-03-15.", "Dia quinze de março de dois mil e vinte e quatro."),
    ("Em 1990.", "Em mil novecentos e noventa."),
    ("De 1990-2000.", "De mil novecentos e noventa a dois mil."),
    ("Às 14:30.", "Às catorze e trinta."),
    ("Às 13:00.", "Às treze horas."),
    ("À 1:00.", "À uma hora."),
    (
        "Custa R$ 1.234,56.",
        "Custa mil duzentos e trinta e quatro reais e cinquenta e seis centavos.",
    ),
    ("Custa R$ 1,00.", "Custa um real."),
    ("Custa 1 €.", "Custa um euro."),
    ("Custa 0,99 €.", "Custa noventa e nove centavos."),
    ("Custa $5.", "Custa cinco dólares."),
    ("Custa 2 £.", "Custa duas libras."),
    ("Custa 200 £.", "Custa duzentas libras."),
    ("Custa 2 milhões €.", "Custa dois milhões de euros."),
    ("Os 50% restantes.", "Os cinquenta por cento restantes."),
    ("Pesa 1 kg.", "Pesa um quilograma."),
    ("Pesa 1,5 kg.", "Pesa um vírgula cinco quilograma."),
    ("São 10 km.", "São dez quilômetros."),
    ("Dura 1 h ou 2 h.", "Dura uma hora ou duas horas."),
    ("Dura 22 h.", "Dura vinte e duas horas."),
    ("Dura 30 min.", "Dura trinta minutos."),
    ("Faz -5 °C.", "Faz menos cinco graus Celsius."),
    ("De 5 a 10 km.", "De cinco a dez quilômetros."),
    (
        "Ligue 11 98765 4321 hoje.",
        "Ligue um um, nove oito sete seis cinco, quatro três dois um hoje.",
    ),
    ("O Sr. Silva e a Sra. Costa.", "O Senhor Silva e a Senhora Costa."),
    ("O Dr. Souza chegou.", "O Doutor Souza chegou."),
    ("Maçãs, peras, etc.", "Maçãs, peras, etcétera."),
    ("Fruta, p. ex. maçãs.", "Fruta, por exemplo maçãs."),
    ("O nº 5.", "O número cinco."),
    ("Tom & Jerry.", "Tom e Jerry."),
    ("2+2=4", "dois mais dois igual a quatro"),
    (
        "Escreva para ana@exemplo.com.br hoje.",
        "Escreva para ana arroba exemplo ponto com ponto br hoje.",
    ),
    ("Eu te amo ❤️", "Eu te amo coração"),
]


@pytest.mark.parametrize("written, spoken", CASES)
def test_portuguese(written: str, spoken: str) -> None:
    assert normalize_text(written, "portuguese") == spoken


def test_24_layer_model_reads_as_portuguese() -> None:
    assert normalize_text("3 gatos", "portuguese_24l") == "três gatos"

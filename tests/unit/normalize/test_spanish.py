"""Spanish readings, written from Spanish usage ("veintiún kilómetros", "una hora", "1.º")."""

from __future__ import annotations

import pytest

from pocketcli.normalize import normalize_text

CASES = [
    ("Tengo 3 manzanas.", "Tengo tres manzanas."),
    ("Somos 16.", "Somos dieciséis."),
    ("Hay 100 personas.", "Hay cien personas."),
    ("Es la página 101.", "Es la página ciento uno."),
    (
        "Son 1.234.567 habitantes.",
        "Son un millón doscientos treinta y cuatro mil quinientos sesenta y siete habitantes.",
    ),
    ("Pi vale 3,14.", "Pi vale tres coma catorce."),
    ("Son 2,5 litros.", "Son dos coma cinco litros."),
    ("Hace -3 grados.", "Hace menos tres grados."),
    ("El 1.º y la 2.ª.", "El primero y la segunda."),
    ("El 3er puesto.", "El tercer puesto."),
    ("El 1er día.", "El primer día."),
    ("La 5ª vez.", "La quinta vez."),
    ("El 15 de marzo de 2024.", "El quince de marzo de dos mil veinticuatro."),
    ("El 1 de enero.", "El uno de enero."),
    ("El 15/03/2024.", "El quince de marzo de dos mil veinticuatro."),
    ("El 2024-03-15.", "El quince de marzo de dos mil veinticuatro."),
    ("En 1990.", "En mil novecientos noventa."),
    ("De 1990-2000.", "De mil novecientos noventa a dos mil."),
    ("A las 14:30.", "A las catorce y treinta."),
    ("A las 13:00.", "A las trece horas."),
    ("A la 1:00.", "A la una."),
    (
        "Cuesta 1.234,56 €.",
        "Cuesta mil doscientos treinta y cuatro euros con cincuenta y seis céntimos.",
    ),
    ("Cuesta 1 €.", "Cuesta un euro."),
    ("Cuesta 21 €.", "Cuesta veintiún euros."),
    ("Cuesta 0,99 €.", "Cuesta noventa y nueve céntimos."),
    ("Cuesta $5.", "Cuesta cinco dólares."),
    ("Cuesta 1 £.", "Cuesta una libra."),
    ("Cuesta 200 £.", "Cuesta doscientas libras."),
    ("Cuesta 2 millones €.", "Cuesta dos millones de euros."),
    ("El 50% de los casos.", "El cincuenta por ciento de los casos."),
    ("Entre 5 y 10 km.", "Entre cinco y diez kilómetros."),
    ("Pesa 1 kg.", "Pesa un kilogramo."),
    ("Son 21 km.", "Son veintiún kilómetros."),
    ("Dura 1 h o 21 h.", "Dura una hora o veintiuna horas."),
    ("Dura 30 min.", "Dura treinta minutos."),
    ("Hace -5 °C.", "Hace menos cinco grados Celsius."),
    ("Llama al 912 345 678.", "Llama al nueve uno dos, tres cuatro cinco, seis siete ocho."),
    ("El Sr. García y la Sra. López.", "El Señor García y la Señora López."),
    ("El Dr. Pérez llega.", "El Doctor Pérez llega."),
    ("Manzanas, peras, etc.", "Manzanas, peras, etcétera."),
    ("Fruta, p. ej. manzanas.", "Fruta, por ejemplo manzanas."),
    ("Vive en EE. UU. y más.", "Vive en Estados Unidos y más."),
    ("El nº 5.", "El número cinco."),
    ("Tom & Jerry.", "Tom y Jerry."),
    ("2+2=4", "dos más dos igual a cuatro"),
    ("Escribe a ana@ejemplo.es hoy.", "Escribe a ana arroba ejemplo punto es hoy."),
    ("¿Qué tal? ¡Bien! 😊", "¿Qué tal? ¡Bien! sonrisa"),
]


@pytest.mark.parametrize("written, spoken", CASES)
def test_spanish(written: str, spoken: str) -> None:
    assert normalize_text(written, "spanish") == spoken


def test_24_layer_model_reads_as_spanish() -> None:
    assert normalize_text("3 gatos", "spanish_24l") == "tres gatos"

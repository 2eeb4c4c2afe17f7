"""`normalize_text`: the passes in the order that makes each one's job unambiguous.

Order matters and is the design: characters are cleaned first so every
pass sees the same small alphabet; addresses go before anything reads their
dots and digits; the specific number shapes (dates, times, phones, years,
money, units, ordinals) go before the plain-number pass that reads whatever
digits remain; symbols and the remaining abbreviations go last, on text
whose numbers are already words. Each pass only ever writes words, spaces
and the punctuation it consumed, so a second run normally changes nothing.
Where it still could (a digit glued to an address becomes a word and a space,
and the address is then recognised), the pipeline is simply run again until
the text stops changing, which makes `normalize_text` idempotent.
"""

from __future__ import annotations

from pocketcli import defaults
from pocketcli.normalize.abbreviations import expand_abbreviations
from pocketcli.normalize.cardinals import read_cardinals
from pocketcli.normalize.currency import read_currency
from pocketcli.normalize.dates import read_dates, read_times
from pocketcli.normalize.languages import Language, resolve
from pocketcli.normalize.ordinals import read_ordinals
from pocketcli.normalize.phones import read_phones
from pocketcli.normalize.rewrite import tidy_spaces
from pocketcli.normalize.symbols import number_signs, read_names, read_symbols
from pocketcli.normalize.unicode import clean
from pocketcli.normalize.units import read_units
from pocketcli.normalize.web import MODES, read_web
from pocketcli.normalize.years import read_years

__all__ = ["normalize_text"]

# A fixed point is reached after one or two runs in practice; the bound only
# guards against a pathological input cycling.
_MAX_RUNS = 4


def normalize_text(
    text: str,
    language: str,
    *,
    urls: str = defaults.WEB_ADDRESSES,
    emails: str = defaults.WEB_ADDRESSES,
) -> str:
    """What the model should be given to say for `text` in `language` (a pockettts id).

    Numbers, dates, times, money, units, abbreviations and symbols become
    words; characters the tokenizer cannot represent are said or removed;
    URLs and e-mail addresses are read ("read") or removed ("drop").
    The result holds no ASCII digit, and normalising it again changes nothing.
    Raises `UnknownLanguageError` (a `UserError`) for an unsupported language
    and `ValueError` for an unknown `urls`/`emails` mode.
    """
    lang = resolve(language)
    for name, mode in (("urls", urls), ("emails", emails)):
        if mode not in MODES:
            raise ValueError(f"{name} must be one of {', '.join(MODES)}, got {mode!r}")
    for _ in range(_MAX_RUNS):
        said = _run(text, lang, urls, emails)
        if said == text:
            break
        text = said
    return said


def _run(text: str, lang: Language, urls: str, emails: str) -> str:
    """Every pass once, in order."""
    text = clean(text, lang)
    text = read_web(text, lang, urls=urls, emails=emails)
    text = read_names(text, lang)
    text = expand_abbreviations(text, lang, before_digits=True)
    text = number_signs(text, lang)
    text = read_dates(text, lang)
    text = read_times(text, lang)
    text = read_phones(text, lang)
    text = read_years(text, lang)
    text = read_currency(text, lang)
    text = read_units(text, lang)
    text = read_ordinals(text, lang)
    text = read_cardinals(text, lang)
    text = read_symbols(text, lang)
    text = expand_abbreviations(text, lang, before_digits=False)
    return tidy_spaces(text)

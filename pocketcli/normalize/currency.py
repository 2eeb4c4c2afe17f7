"""Money: "$1,234.56", "5 €", "EUR 20", "£3.50", "¥500", "$2 million", ranges "$5-10".

The sign or ISO code may stand before or after the amount. Two decimals
are cents ("five dollars and fifty cents"; "ninety-nine cents" when there
is no whole unit); other decimals are read as a decimal number before the
plural name. The currency's grammatical gender makes the number agree
("una libra", "duas libras"). A code the language has no name for is left
alone, for the plain-number pass.
"""

from __future__ import annotations

import re

from pocketcli.normalize import amounts, numbers
from pocketcli.normalize.languages.base import Currency, Language, Noun
from pocketcli.normalize.rewrite import substitute

__all__ = ["SYMBOLS", "read_currency"]

SYMBOLS = {"$": "USD", "US$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "R$": "BRL"}
_SYMBOL = r"R\$|US\$|[$€£¥]"
_CODE = r"(?:USD|EUR|GBP|JPY|CHF|BRL)"
_compiled: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {}


def _patterns(lang: Language) -> tuple[re.Pattern[str], re.Pattern[str]]:
    if lang.name not in _compiled:
        amount = amounts.amount_pattern(lang)
        scales = "|".join(sorted(map(re.escape, lang.scales), key=len, reverse=True))
        scale = rf"(?:\s?(?P<scale>{scales})(?!\w))?"
        before = re.compile(
            rf"(?:(?<![\w.,-])(?P<neg>-))?(?<![\w])(?P<cur>{_SYMBOL}|{_CODE}(?=[\s\d]))\s?"
            rf"{amount}{scale}"
        )
        after = re.compile(rf"{amount}{scale}\s?(?P<cur>{_SYMBOL}|{_CODE}(?!\w))")
        _compiled[lang.name] = (before, after)
    return _compiled[lang.name]


def _count(words_for: str, n: int, noun: Noun, lang: Language) -> str:
    name = noun.singular if lang.grammar.singular(n) else noun.plural
    return lang.grammar.phrase(lang.grammar.agree(words_for, n, noun.gender), name)


def _with_cents(integer: str, cents: int, currency: Currency, lang: Language) -> str:
    assert currency.cents is not None
    main = int(integer)
    parts = []
    if main or not cents:
        parts.append(
            _count(
                numbers.decimal_words(integer, None, lang.code, lang.words.point),
                main,
                currency.main,
                lang,
            )
        )
    if cents:
        parts.append(_count(numbers.cardinal(cents, lang.code), cents, currency.cents, lang))
    return f" {lang.words.and_} ".join(parts)


def _say(match: re.Match[str], lang: Language) -> str | None:
    cur = match["cur"]
    currency = lang.currencies.get(SYMBOLS.get(cur, cur))
    if currency is None:
        return None
    noun = currency.main
    sign = match.groupdict().get("neg") or match["a_sign"]
    minus = f"{lang.words.minus} " if sign else ""
    if match["scale"]:
        scale = lang.scales[match["scale"]]
        number = amounts.say_amount(match, lang, scale.gender)
        of = scale.of_before_noun
        if of and scale.of_before_vowel and noun.plural[:1].lower() in "aeiouyéè":
            joined = f"{scale.of_before_vowel}{noun.plural}"
        else:
            joined = f"{of} {noun.plural}" if of else noun.plural
        return f"{minus}{number} {scale.spoken} {joined}"
    integer, frac = numbers.parse_amount(match["a"], lang.decimal_separator, lang.group_separators)
    if match["b"] is None and frac is not None and len(frac) == 2 and currency.cents:
        return minus + _with_cents(integer, int(frac), currency, lang)
    value = amounts.last_value(match, lang)
    name = noun.singular if lang.grammar.singular(value) else noun.plural
    number = amounts.say_amount(match, lang, noun.gender)
    if match.groupdict().get("neg"):
        number = f"{lang.words.minus} {number}"
    return lang.grammar.phrase(number, name)


def read_currency(text: str, lang: Language) -> str:
    """Say the amounts of money in `text` (see the module docstring)."""
    for pattern in _patterns(lang):
        text = substitute(pattern, text, lambda m: _say(m, lang))
    return text

"""Numbers as papers write them: "3 × 10^{-4}", "3e-4", "3·10−4", "10k", "1.5B", "25\\%", "1{,}000".

`VALUE` is the pattern the extractors scan plain text with (see `mathtext.to_plain`); `parse_value`
reads one whole value, and `evaluate` turns a `VALUE` match into a float.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from .mathtext import to_plain

_NUMBER = r"(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|\.\d+"
_SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
_EXPONENT = rf"\^\s*(?:\(\s*[-−+]?\s*\d+\s*\)|[-−+]?\s*\d+)|[⁻⁺]?[{_SUPERSCRIPTS}]+"
_MULTIPLY = r"\s*[×·*x]\s*"
# Order matters: the longest reading of a number first.
VALUE_BODY = (
    rf"(?:"
    rf"(?:(?:{_NUMBER}){_MULTIPLY})?10\s*(?:{_EXPONENT})"  # 3 × 10^-4, 10^{-5}, 3·10⁻⁴
    rf"|(?:{_NUMBER}){_MULTIPLY}10\s*[-−]\s*\d+"  # 3·10−4: a PDF's flattened superscript
    rf"|10−\d+"  # 10−4 with a unicode minus: also a flattened superscript, never a range
    rf"|(?:{_NUMBER})[eE][-−+]?\d+"  # 3e-4
    rf"|(?:{_NUMBER})[kKMBT](?![\w])"  # 10k, 1.5B
    rf"|\d+\s*/\s*[1-9]\d*(?![\d.])"  # 1/3
    rf"|(?:{_NUMBER})"
    rf")(?:\s?%)?(?![\w]|\.\d|/\d)"
)
# A value starts a number: not inside a word, a version, an exponent, a path or a range's end.
# The lookahead lets most positions fail at once.
VALUE = rf"(?<![\w.\-−^/\\])(?=[\d.]){VALUE_BODY}"
VALUE_RE = re.compile(VALUE)

_SCALE = {"k": 3, "K": 3, "M": 6, "B": 9, "T": 12}
_POWER_RE = re.compile(
    rf"(?:(?P<mantissa>{_NUMBER}){_MULTIPLY})?10\s*"
    rf"(?:\^\s*\(?\s*(?P<exponent>[-−+]?\s*\d+)\s*\)?|(?P<superscript>[⁻⁺]?[{_SUPERSCRIPTS}]+)|(?P<flat>[-−]\s*\d+))"
)
_SCIENTIFIC_RE = re.compile(rf"(?P<mantissa>{_NUMBER})[eE](?P<exponent>[-−+]?\d+)")
_SCALED_RE = re.compile(rf"(?P<mantissa>{_NUMBER})(?P<scale>[kKMBT])")
_FRACTION_RE = re.compile(r"(?P<numerator>\d+)\s*/\s*(?P<denominator>\d+)")
# Count nouns written right after a value ("4M tokens", "256 px"); they give its unit.
UNIT_RE = re.compile(
    r"\s*(?P<unit>epochs?|steps?|iterations?|updates?|tokens?|images?|samples?|examples?|sequences?|GPUs?|TPUs?"
    r"|layers?|heads?|pixels?|px)(?![\w])"
)
_UNIT_NAMES = {"px": "pixels"}
_SUPERSCRIPT_TABLE = str.maketrans(_SUPERSCRIPTS + "⁻⁺", "0123456789-+")


@dataclass(frozen=True, slots=True)
class ParsedValue:
    """A number as written: `value` is its float (25% → 0.25), `unit` what it counts ('%', 'epochs')."""

    value: float
    unit: str | None
    raw: str


def _decimal(text: str) -> Decimal:
    return Decimal(text.replace(",", ""))


def _exponent(text: str) -> int:
    return int(text.replace("−", "-").replace(" ", "").translate(_SUPERSCRIPT_TABLE))


def evaluate(plain: str) -> float | None:
    """The float a `VALUE` match stands for; a percentage is a fraction (25% → 0.25)."""
    text = plain.strip()
    percent = text.endswith("%")
    text = text.rstrip("% ")
    try:
        if match := _POWER_RE.fullmatch(text):
            exponent = match["exponent"] or match["superscript"] or match["flat"]
            number = _decimal(match["mantissa"] or "1").scaleb(_exponent(exponent))
        elif match := _SCIENTIFIC_RE.fullmatch(text):
            number = _decimal(match["mantissa"]).scaleb(_exponent(match["exponent"]))
        elif match := _SCALED_RE.fullmatch(text):
            number = _decimal(match["mantissa"]).scaleb(_SCALE[match["scale"]])
        elif match := _FRACTION_RE.fullmatch(text):
            number = Decimal(match["numerator"]) / Decimal(match["denominator"])
        else:
            number = _decimal(text)
    except (InvalidOperation, ArithmeticError, ValueError):
        return None
    if percent:
        number /= 100
    return float(number)


def parse_value(text: str) -> ParsedValue | None:
    """One whole value, LaTeX or unicode, optionally with a count noun ("100 epochs"); else None.

    Text around the value makes it no value: "Table 3", "[12]", "Eq. 2", "v1.2.3", "0.1-0.5"
    (a range) all give None. A bare "2020" is the number 2020: whether a number is a year is
    told by where it stands, which the extractors check.
    """
    plain = to_plain(text).text.strip()
    match = VALUE_RE.match(plain)
    if not match:
        return None
    unit_match = UNIT_RE.match(plain, match.end())
    end = unit_match.end() if unit_match else match.end()
    if plain[end:].strip():
        return None
    value = evaluate(match.group(0))
    if value is None:
        return None
    unit = "%" if match.group(0).endswith("%") else None
    if unit_match:
        unit = normalize_unit(unit_match["unit"])
    return ParsedValue(value=value, unit=unit, raw=text.strip())


def binary_reading(raw: str) -> float | None:
    """A value written with k/M/B/T read in powers of two, as counts of tokens often mean it: "4M" →
    4 × 2^20 = 4,194,304, "0.25M" → 262,144; None for a value written otherwise."""
    match = _SCALED_RE.fullmatch(to_plain(raw).text.strip())
    if match is None:
        return None
    try:
        return float(_decimal(match["mantissa"]) * (Decimal(1024) ** (_SCALE[match["scale"]] // 3)))
    except (InvalidOperation, ArithmeticError):
        return None


def normalize_unit(word: str) -> str:
    """'epoch' → 'epochs', 'GPU' → 'GPUs', 'px' → 'pixels': units are named in the plural."""
    word = _UNIT_NAMES.get(word, word)
    return word if word.endswith("s") else word + "s"

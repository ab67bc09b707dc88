"""The value, list or tuple of values that stands at a position of plain text.

A number is a setting only when the words after it leave it one: not an operand ("0.8 - 0.6 x"),
a multiplier ("0.1 times the base learning rate"), a case ("= 0 otherwise") or a count of
something else ("layers of 512 units"). A range ("1e-4-1e-3") and unequal dimensions
("256 × 128") are kept as their text, with their numbers as bounds; never as a negative number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .knowledge import HyperparameterEntry, hyperparameter_vocabulary
from .mathtext import PlainText
from .values import UNIT_RE, VALUE, VALUE_BODY, VALUE_RE, evaluate, normalize_unit

_LIST_SEPARATOR_RE = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")
_TUPLE_RE = re.compile(rf"\(\s*({VALUE}(?:\s*,\s*{VALUE})+)\s*\)")
_CLOSING_RE = re.compile(r"\s*\)")
_RANGE_RE = re.compile(rf"\s*(?:-|–|—|to)\s*(?P<end>(?=[\d.]){VALUE_BODY})")
_DIMENSIONS_RE = re.compile(rf"\s*[×x]\s*(?P<second>{VALUE})")
_NOT_A_SETTING_AFTER_RE = re.compile(
    r"\s*(?:[-−+*/^·×]\s*[\w\\(.]|x\s*\d)"  # an operand: "0.8 - 0.6 exp(...)", "256 × 256"
    r"|(?i:\s*(?:times\b|fold\b|of\s+(?:the|its|their|all|each|training|total)\b))"  # "0.1 times", "10% of the"
    r"|(?i:\s*,?\s*(?:if|otherwise|when|whenever|unless|for\s+all)\b)"  # a case: "δ_ij = 0 otherwise"
)
_PER_DEVICE_RE = re.compile(r"(?i)\s*per\s+(?:GPU|device|worker|core|node|replica|TPU|accelerator|card)s?\b")
_YEARS = range(1900, 2100)


@dataclass(slots=True)
class ReadValue:
    value: float | str
    unit: str | None
    start: int
    end: int  # past the unit and "per GPU", when written
    per_device: bool = False
    bounds: tuple[float, ...] = ()  # the numbers of a range or of dimensions kept as text


def read_values(
    text: str, position: int, entry: HyperparameterEntry | None, *, in_parentheses: bool
) -> list[ReadValue]:
    """The value, list or tuple at `position`; empty when what stands there states no setting.

    A tuple is taken only for a name that expands into as many ("β = (0.9, 0.95)"); a list goes
    on while its values share a unit; in parentheses ("dropout (0.2)") only one value is taken,
    since "context length (2K, 4K)" lists the variants compared.
    """
    if text.startswith("(", position) and not in_parentheses:
        inner = _TUPLE_RE.match(text, position)
        if inner is None or entry is None:
            return []
        reads = reads_in(text, inner.start(1), inner.end(1))
        return reads if len(reads) == len(entry.expand) else []
    first = read_one(text, position, entry)
    if first is None:
        return []
    reads = [first]
    while separator := _LIST_SEPARATOR_RE.match(text, reads[-1].end):
        following = read_one(text, separator.end(), entry)
        if following is None or following.unit != first.unit:
            break
        reads.append(following)
    if in_parentheses and (len(reads) > 1 or not _CLOSING_RE.match(text, reads[-1].end)):
        return []
    return reads


def read_one(text: str, position: int, entry: HyperparameterEntry | None, *, in_list: bool = False) -> ReadValue | None:
    """One value at `position`, with its unit; None when the words after it make it no setting."""
    match = VALUE_RE.match(text, position)
    number = evaluate(match.group(0)) if match else None
    if number is None:
        return None
    value: float | str = number
    bounds: tuple[float, ...] = ()
    end = match.end()
    if entry is not None and entry.dimensions and (dimensions := _DIMENSIONS_RE.match(text, end)):
        second = evaluate(dimensions["second"])
        if second is None:
            return None
        end = dimensions.end()
        if second != number:
            value, bounds = text[position:end], (number, second)
    elif not in_list and (range_match := _RANGE_RE.match(text, end)):
        upper = evaluate(range_match["end"])
        if upper is None or upper <= number:
            return None  # "10-4" is no range; a hyphen and a smaller number are something else
        end = range_match.end()
        value, bounds = text[position:end], (number, upper)
    if _NOT_A_SETTING_AFTER_RE.match(text, end):
        return None
    if hyperparameter_vocabulary().foreign_units.match(text, _skip_spaces(text, end)):
        return None
    unit = "%" if match.group(0).endswith("%") else None
    if unit_match := UNIT_RE.match(text, end):
        unit, end = normalize_unit(unit_match["unit"]), unit_match.end()
    per_device = _PER_DEVICE_RE.match(text, end)
    return ReadValue(value, unit, position, per_device.end() if per_device else end, bool(per_device), bounds)


def reads_in(text: str, start: int, end: int) -> list[ReadValue]:
    """The values of a list or tuple written in text[start:end] ("0.9, 0.95", "4,096 and 10,000")."""
    return [
        read
        for match in VALUE_RE.finditer(text, start, end)
        if (read := read_one(text, match.start(), None, in_list=True)) is not None
    ]


def value_end(text: str, read: ReadValue) -> int:
    """Where the value itself ends: its unit and "per GPU" are no part of raw_value."""
    if isinstance(read.value, str):
        unit = UNIT_RE.search(text, read.start, read.end)
        return unit.start() if unit else read.end
    match = VALUE_RE.match(text, read.start, read.end)  # bounded: "100" of the set "{100,200,500}"
    return match.end() if match else read.end


# The entry of a value that belongs to none (a warm-up without a unit, "per GPU" on a learning rate).
REJECTED = HyperparameterEntry(name="")


def resolve_entry(entry: HyperparameterEntry | None, read: ReadValue) -> HyperparameterEntry | None:
    """The entry a value belongs to once its unit and "per GPU" are known; REJECTED if none."""
    if entry is None:
        return None if not read.per_device and read.unit in (None, "%") else REJECTED
    entries = hyperparameter_vocabulary().entries
    if read.per_device:
        return entries[entry.per_device] if entry.per_device else REJECTED
    if entry.unit_names:
        return entries[entry.unit_names[read.unit]] if read.unit in entry.unit_names else REJECTED
    return entry


def acceptable(entry: HyperparameterEntry, read: ReadValue) -> bool:
    """Whether a value read in prose is plausible for its name (range, whole number)."""
    if entry.text_values:
        return False  # prose names an optimizer or schedule in words, never by a value to trust
    if isinstance(read.value, str):
        return all(entry.accepts(bound) for bound in read.bounds)
    return entry.accepts(read.value)


def ends_its_math(plain: PlainText, read: ReadValue) -> bool:
    """Whether a value in inline math ends it, or its list ("$\\beta=0.9,0.95$"), not a formula."""
    span = plain.math_span(read.start)
    if span is None:
        return True
    rest = plain.text[read.end : span[1]].strip()
    return not rest or rest[0] in ",;)"


def looks_like_year(read: ReadValue, text: str) -> bool:
    raw = text[read.start : read.end].strip()
    return raw.isdigit() and int(raw) in _YEARS


def _skip_spaces(text: str, position: int) -> int:
    while position < len(text) and text[position].isspace():
        position += 1
    return position

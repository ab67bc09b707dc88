"""Hyperparameter tables: a row per hyperparameter ("Learning rate | 1e-4"), or in tables captioned
as settings or whose rows are models, a column per hyperparameter ("Model | Layers | Hidden dim").

A table is read as a hyperparameter table when at least two rows start with a hyperparameter's
name, or one does and the caption speaks of hyperparameters or settings; a results table, whose
rows are methods and whose cells are scores, never is. In a hyperparameter table, a row whose name
ends with a symbol ("Mixing $\\alpha$") states that symbol's value, named as prose names it
("alpha"). Each value cell gives one entry; with several value columns the column header is noted
in the name ("Layers [ViT-B]").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...schemas import Component, Hyperparameter, Location, Table
from .components import Mention, find_mentions
from .hyperparameters import symbol_name, trailing_symbol
from .knowledge import HyperparameterEntry, hyperparameter_vocabulary, symbol_key
from .mathtext import to_plain
from .reading import REJECTED, ReadValue, resolve_entry
from .values import UNIT_RE, ParsedValue, normalize_unit, parse_value

_PER_RE = re.compile(r"\s+per\b")
# A unit a row's name or a column's header gives its values: "Batch size (tokens)", "Warmup in steps".
_NAME_UNIT_RE = re.compile(
    r"(?i)(?:\(\s*(?:in\s+|\#\s*)?|\s+in\s+)" + UNIT_RE.pattern.removeprefix(r"\s*") + r"\s*\)?\s*$"
)
_SETTINGS_CAPTION_RE = re.compile(r"(?i)hyper-?param|config|setting|recipe|implementation detail|training detail")
_EMPTY_CELLS = ("", "-", "–", "—")
# A cell listing the values a sweep tried: "[0.001, 0.003]", "{0.1, 0.5}", "4 / 8 / 16".
_SWEEP_CELL_RE = re.compile(r"[\[{]\s*([^\[\]{}]+?)\s*[\]}]|([^/]+(?:/[^/]+)+)")


@dataclass(slots=True)
class _Cell:
    raw: str
    plain: str


def from_table(table: Table) -> tuple[list[Hyperparameter], list[Component], dict[str, float | str]]:
    """A hyperparameter table's values, the components its hyperparameter rows name, and the value
    of each symbol a row's name ends with ("$\\lambda$ | 0.5", "Learning rate $\\eta$ | 1e-4")."""
    rows = [[_Cell(cell, to_plain(cell).text.strip()) for cell in row] for row in table.rows]
    # A row under a `\multirow` name has an empty first cell: the name above is its name too.
    for above, row in zip(rows, rows[1:]):
        if len(row) >= 2 and not row[0].plain and above and above[0].plain:
            row[0] = above[0]
    captioned = bool(_SETTINGS_CAPTION_RE.search(table.caption or ""))
    named = {i: entry for i, row in enumerate(rows) if len(row) >= 2 and (entry := cell_entry(row[0].plain))}
    hyperparameters: list[Hyperparameter] = []
    components: list[Component] = []
    symbol_values: dict[str, float | str] = {}
    if len(named) >= 2 or (named and captioned):
        header = rows[0] if 0 not in named else None
        # Rows that name a component as their value ("Optimizer | AdamW") lend it to the table's
        # other rows ("Learning rate | 1e-4").
        declared = [mention for i, entry in named.items() if entry.text_values for mention in _row_mentions(rows[i])]
        row_names = {i: (entry, None) for i, entry in named.items()}
        # Rows named by a symbol ("Mixing $\alpha$") only join a table the names made a hyperparameter
        # table: results tables have rows named by symbols too.
        for i in range(1 if header else 0, len(rows)):
            if i not in named and len(rows[i]) >= 2 and (symbol := trailing_symbol(to_plain(rows[i][0].raw))):
                row_names[i] = (hyperparameter_vocabulary().symbols.get(symbol_key(symbol)), symbol_name(symbol))
        for i, (entry, unnamed) in sorted(row_names.items()):
            values = _row_values(table, i, rows[i], entry, unnamed, header, declared + _row_mentions(rows[i]))
            hyperparameters += values
            if values and (symbol := _symbol_named(rows[i][0])):
                # Columns for several experiments with several values give no one value of the symbol.
                stated = list(dict.fromkeys(value.value for value in values))
                symbol_values.setdefault(symbol_key(symbol), stated[0] if len(stated) == 1 else " / ".join(map(str, stated)))
        # The table is one statement: a component's attributes are what any of its rows gives it.
        components = [component for i in named for component in _row_components(table, i, rows[i], hyperparameters)]
    elif rows and (captioned or _rows_name_models(rows)):
        hyperparameters = _column_values(table, rows)
    if rows and 0 not in named and (captioned or any(cell_entry(cell.plain) for cell in rows[0][1:])):
        for key, value in _column_symbols(rows).items():
            symbol_values.setdefault(key, value)
    return hyperparameters, components, symbol_values


def _column_symbols(rows: list[list[_Cell]]) -> dict[str, float | str]:
    """The values of each column a symbol heads in a settings table ("Dataset | $\\lambda$ | Learning
    rate"), one per row and experiment: several are joined ("0.5 / 1.0")."""
    found: dict[str, float | str] = {}
    for j, cell in enumerate(rows[0]):
        if j == 0 or (symbol := _symbol_named(cell)) is None:
            continue
        values = [parsed.value for row in rows[1:] if j < len(row) and (parsed := parse_value(row[j].plain)) is not None]
        stated = list(dict.fromkeys(values))
        if stated:
            found[symbol_key(symbol)] = stated[0] if len(stated) == 1 else " / ".join(map(str, stated))
    return found


# A model's name as a configuration table's row gives it: "LLaMA 7B", "ViT-B/16", "DiT-XL/2", "GPT-2 medium".
_MODEL_NAME_RE = re.compile(r"^[A-Za-z][\w.-]*[A-Z][\w.-]*(?:[\s/-]+\w[\w.]*)*$")
_MODEL_SIZE_RE = re.compile(r"\d+(?:\.\d+)?\s*[BMK]\b|[-/ ](?:XS|S|B|M|L|XL|XXL|H|G|Ti|tiny|small|base|medium|large|huge|giant)\b|\d")


# "Weight of $L_1$ relative to $\lambda$", "Learning rate for $\phi$": the symbol is what the setting
# is of or for, not the setting itself ("Loss weight $\lambda$", "$\lambda$").
_SYMBOL_OF_ANOTHER_RE = re.compile(r"\b(?:of|for|to|per|between|relative|on|with)\b", re.I)


def _symbol_named(name: _Cell) -> str | None:
    """The symbol a row's name gives its values to: "$\\lambda$", "Loss weight $\\lambda$"."""
    symbol = trailing_symbol(to_plain(name.raw))
    return symbol if symbol is not None and not _SYMBOL_OF_ANOTHER_RE.search(name.plain) else None


def _rows_name_models(rows: list[list[_Cell]]) -> bool:
    """Whether a table's rows are models ("LLaMA 7B | 4096 | 32"): a table of their configurations
    whatever its caption says. Every row of values below the header starts with a model's name and size."""
    body = [row for row in rows[1:] if row and row[0].plain and any(any(c.isdigit() for c in cell.plain) for cell in row[1:])]
    return len(body) >= 2 and all(_MODEL_NAME_RE.match(row[0].plain) and _MODEL_SIZE_RE.search(row[0].plain) for row in body)


def cell_entry(cell: str) -> HyperparameterEntry | None:
    """The hyperparameter a header cell names ("Peak learning rate", "#Layers", "warmup_steps")."""
    cell = cell.replace("_", " ")
    if not cell or len(cell.split()) > 8:
        return None
    matches = list(hyperparameter_vocabulary().table_names.finditer(cell))
    if any(_PER_RE.match(cell, match.end) for match in matches):
        return None  # "Updates per batch" is a rate of the name, not the name
    if not matches:
        return None
    # A name's head comes last: "Optimizer (Actor) Learning Rate" is a learning rate.
    return max(matches, key=lambda match: match.end).value


def _row_mentions(row: list[_Cell]) -> list[Mention]:
    return [mention for cell in row for mention in find_mentions(cell.plain)]


def _row_values(
    table: Table,
    index: int,
    row: list[_Cell],
    entry: HyperparameterEntry | None,
    unnamed: str | None,
    header: list[_Cell] | None,
    mentions: list[Mention],
) -> list[Hyperparameter]:
    """A row's values; `unnamed` is the normalized name of a row no entry names (its symbol's)."""
    value_columns = [j for j in range(1, len(row)) if row[j].plain not in _EMPTY_CELLS]
    found = []
    for j in value_columns:
        column = header[j].plain if header and j < len(header) and len(value_columns) > 1 else ""
        name = f"{row[0].plain} [{column}]" if column else row[0].plain
        for normalized, value, unit in _cell_values(entry, row[j].plain, unnamed, _name_unit(row[0].plain)):
            found.append(_table_hyperparameter(table, index, row, name, normalized, value, unit, row[j].raw, mentions))
    return found


def _column_values(table: Table, rows: list[list[_Cell]]) -> list[Hyperparameter]:
    header = rows[0]
    columns = [(j, entry) for j, cell in enumerate(header) if j > 0 and (entry := cell_entry(cell.plain))]
    if len(columns) < 2:
        return []
    found = []
    for index, row in enumerate(rows[1:], start=1):
        if not row or not row[0].plain or cell_entry(row[0].plain):
            continue
        for j, entry in columns:
            if j >= len(row):
                continue
            name = f"{header[j].plain} [{row[0].plain}]"
            for normalized, value, unit in _cell_values(entry, row[j].plain, named_unit=_name_unit(header[j].plain)):
                found.append(_table_hyperparameter(table, index, row, name, normalized, value, unit, row[j].raw, []))
    return found


def _name_unit(name: str) -> str | None:
    """The unit a row's name or a column's header writes for its values ("Batch size (tokens)")."""
    match = _NAME_UNIT_RE.search(name)
    return normalize_unit(match["unit"]) if match else None


def _cell_values(
    entry: HyperparameterEntry | None, cell: str, unnamed: str | None = None, named_unit: str | None = None
) -> list[tuple[str, float | str, str | None]]:
    """(normalized name, value, unit) of a value cell; a tuple cell only for names that expand.
    Without an entry, a plain number or percentage is taken under the name `unnamed`. `named_unit`
    is the unit the row's name or the column's header gives a named value written without one."""
    sweep = _SWEEP_CELL_RE.fullmatch(cell.strip()) if (entry is not None and not entry.expand) or (entry is None and unnamed) else None
    if sweep is not None:
        parts = re.split(r"\s*[,/]\s*", (sweep[1] or sweep[2]).strip())
        if len(parts) > 1 and all(parse_value(part) for part in parts):
            return [found for part in parts for found in _cell_values(entry, part, unnamed, named_unit)]
    parsed = parse_value(cell)
    if entry is None:
        if parsed is None or unnamed is None or resolve_entry(None, _read(parsed)) is REJECTED:
            return []
        return [(unnamed, parsed.value, parsed.unit)]
    if entry.expand:
        parts = [parse_value(part) for part in re.split(r"\s*,\s*", cell.strip("()[] "))]
        if len(parts) == len(entry.expand) and all(parts):
            return [(name, part.value, part.unit) for name, part in zip(entry.expand, parts, strict=True)]
    if parsed is not None and parsed.unit is None and named_unit is not None:
        parsed = ParsedValue(parsed.value, named_unit, parsed.raw)
    if parsed is None:
        if entry.text_values and cell and len(cell.split()) <= 4 and not any(c.isdigit() for c in cell):
            return [(entry.name, cell, None)]
        return []
    resolved = resolve_entry(entry, _read(parsed))
    if resolved is REJECTED or resolved is None or resolved.text_values or not resolved.accepts(parsed.value):
        return []
    return [(resolved.name, parsed.value, parsed.unit)]


def _read(parsed: ParsedValue) -> ReadValue:
    return ReadValue(parsed.value, parsed.unit, 0, 0)


def _table_hyperparameter(
    table: Table,
    index: int,
    row: list[_Cell],
    name: str,
    normalized: str,
    value: float | str,
    unit: str | None,
    raw: str,
    mentions: list[Mention],
) -> Hyperparameter:
    entry = hyperparameter_vocabulary().entries.get(normalized)
    kinds = entry.components if entry is not None else ()
    component = next((mention.name for kind in kinds for mention in mentions if mention.kind == kind), None)
    return Hyperparameter(
        name=name,
        normalized_name=normalized,
        value=value,
        raw_value=raw,
        unit=unit,
        component=component,
        text=" | ".join(cell.raw for cell in row),
        source="table",
        section_id=table.section_id,
        location=_row_location(table, index),
    )


def _row_components(
    table: Table, index: int, row: list[_Cell], hyperparameters: list[Hyperparameter]
) -> list[Component]:
    components = []
    for cell in row:
        for mention in find_mentions(cell.plain):
            attributes = {h.normalized_name: h.value for h in hyperparameters if h.component == mention.name}
            components.append(
                Component(
                    kind=mention.kind,
                    name=mention.name,
                    mention=cell.plain[mention.start : mention.end],
                    attributes=attributes,
                    text=" | ".join(c.raw for c in row),
                    section_id=table.section_id,
                    location=_row_location(table, index),
                )
            )
    return components


def _row_location(table: Table, index: int) -> Location:
    return table.row_locations[index] if index < len(table.row_locations) else table.location

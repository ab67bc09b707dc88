"""Extraction: a reader's PaperSpec → stated hyperparameters, components and equation symbols.

`enrich(spec)` fills `hyperparameters`, `components`, `symbols` and each equation's `symbols`;
the vocabularies it matches against live in pipeline/knowledge/*.yaml.
"""

from __future__ import annotations

import math
import re

from ...schemas import Component, Equation, Hyperparameter, PaperSpec
from .components import Mention, find_mentions
from .hyperparameters import from_equation, from_sentence, symbolic_counts
from .knowledge import symbol_key, symbol_vocabulary
from .sentences import Sentence, sentences_of
from .symbols import FoundSymbol, build_symbols, symbols_of_equation
from .tables import from_table
from .values import ParsedValue, parse_value

__all__ = ["ParsedValue", "enrich", "parse_value"]


def enrich(spec: PaperSpec) -> PaperSpec:
    """A copy of `spec` with what its prose, tables and equations state filled in."""
    sentences = [sentence for paragraph in spec.paragraphs for sentence in sentences_of(paragraph)]
    hyperparameters: list[Hyperparameter] = []
    components: list[Component] = []
    # Symbol → the value the paper states for it, first statement first.
    stated_values: dict[str, float | str] = {}
    through_symbols: list[tuple[Hyperparameter, str]] = []  # "$T/10$ steps": worked out once T's value is known

    for sentence in sentences:
        mentions = find_mentions(sentence.plain.text)
        found = from_sentence(sentence, mentions)
        by_component: dict[str | None, dict] = {}  # each component's settings, gathered once per sentence
        for h, _ in found:
            by_component.setdefault(h.component, {})[h.normalized_name] = h.value
        components += [_component(sentence, mention, by_component.get(mention.name, {})) for mention in mentions]
        for hyperparameter, symbol in found:
            hyperparameters.append(hyperparameter)
            if symbol:
                stated_values.setdefault(symbol_key(symbol), hyperparameter.value)
        through_symbols += symbolic_counts(sentence, mentions)

    for table in spec.tables:
        table_hyperparameters, table_components, table_symbols = from_table(table)
        hyperparameters += table_hyperparameters
        components += table_components
        for key, value in table_symbols.items():
            stated_values.setdefault(key, value)

    equations = []
    symbols_by_equation = []
    for equation in spec.equations:
        found_symbols = symbols_of_equation(equation)
        symbols_by_equation.append(found_symbols)
        equations.append(equation.model_copy(update={"symbols": [found.symbol for found in found_symbols]}))
        for hyperparameter, symbol in from_equation(equation):
            hyperparameters.append(hyperparameter)
            stated_values.setdefault(symbol_key(symbol), hyperparameter.value)

    _stated_through_roles(spec.equations, symbols_by_equation, hyperparameters, stated_values)
    for hyperparameter, symbol in through_symbols:
        value = stated_values.get(symbol_key(symbol))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            hyperparameters.append(hyperparameter.model_copy(update={"value": hyperparameter.value * value}))

    symbols = build_symbols(spec.equations, symbols_by_equation, sentences, stated_values)
    return spec.model_copy(
        update={
            "hyperparameters": _with_restated_units(hyperparameters),
            "components": components,
            "equations": equations,
            "symbols": symbols,
            "symbol_values": stated_values,
        }
    )


def _stated_through_roles(
    equations: list[Equation],
    symbols_by_equation: list[tuple[FoundSymbol, ...]],
    hyperparameters: list[Hyperparameter],
    stated_values: dict[str, float | str],
) -> None:
    """A symbol a formula makes a setting (symbols.yaml `roles`: the ε of clip(r; 1 − ε, 1 + ε) is
    the PPO clip range) has the value the paper states for that setting, though no sentence names
    the symbol ("PPO Clip Range | 0.1")."""
    first = {}
    for hyperparameter in hyperparameters:
        first.setdefault(hyperparameter.normalized_name, hyperparameter.value)
    for setting, pattern in symbol_vocabulary().roles:
        if setting not in first:
            continue
        for equation, found in zip(equations, symbols_by_equation, strict=True):
            for symbol in found:
                if equation.latex and re.search(pattern.replace("{symbol}", re.escape(symbol.latex)), equation.latex):
                    stated_values.setdefault(symbol_key(symbol.symbol), first[setting])


def _with_restated_units(hyperparameters: list[Hyperparameter]) -> list[Hyperparameter]:
    """A value stated without a unit takes the one unit the paper writes with the same value of the
    same setting elsewhere: a table's "Batch size | 4M" is the prose's "batch size is 4M tokens"."""
    units: dict[str, list[tuple[float, str]]] = {}
    for h in hyperparameters:
        if h.unit is not None and h.unit != "%" and isinstance(h.value, float):
            units.setdefault(h.normalized_name, []).append((h.value, h.unit))
    restated = []
    for h in hyperparameters:
        if h.unit is None and isinstance(h.value, float) and h.normalized_name in units:
            same = {unit for value, unit in units[h.normalized_name] if math.isclose(value, h.value, rel_tol=1e-9)}
            if len(same) == 1:
                h = h.model_copy(update={"unit": same.pop()})
        restated.append(h)
    return restated


def _component(sentence: Sentence, mention: Mention, attributes: dict) -> Component:
    return Component(
        kind=mention.kind,
        name=mention.name,
        mention=sentence.source(mention.start, mention.end),
        attributes=dict(attributes),
        text=sentence.text,
        section_id=sentence.paragraph.section_id,
        location=sentence.location(mention.start, mention.end),
    )

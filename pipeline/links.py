"""Links between the code and the paper: what an anchor names, what a value restates, which code
implements an equation, which equations a function might implement. No I/O; the editor asks."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..schemas import (
    Algorithm, Anchor, CodeIndex, CodeLocation, Equation, Evidence, FileIndex, FunctionSite, Gap, Location, PaperSpec, Section, Table,
    ValueSite,
)  # fmt: skip
from .check import PaperFacts, facts_for
from .extract.hyperparameters import symbol_name
from .text import shorten

SYMBOL_DETAIL_CHARS = 80  # a workspace symbol's detail

PaperItem = Equation | Section | Algorithm | Table


def anchor_target(spec: PaperSpec, anchor: Anchor) -> PaperItem | None:
    """The paper item an anchor names, by number or label."""
    kind, target = anchor.target_kind, anchor.target
    if kind in ("equation", "label"):
        found = next((e for e in spec.equations if target in (e.number, e.label)), None)
        if found is not None or kind == "equation":
            return found
    groups: dict[str, list] = {"section": spec.sections, "algorithm": spec.algorithms, "table": spec.tables}
    searched = [groups[kind]] if kind in groups else list(groups.values())
    return next((item for items in searched for item in items if target in (item.number, item.label)), None)


def item_name(item: PaperItem) -> str:
    """How a reader cites it: Eq. (3), §2.1, Algorithm 1, Table 2."""
    if isinstance(item, Equation):
        return f"Eq. ({item.number})" if item.number else "an unnumbered equation"
    if isinstance(item, Section):
        return f"§{item.number} {item.title}" if item.number else item.title
    if isinstance(item, Algorithm):
        return f"Algorithm {item.number} ({item.title})" if item.number else item.title
    return f"Table {item.number}" if item.number else (item.caption or "a table")


def section_of(spec: PaperSpec, item: PaperItem) -> Section | None:
    section_id = item.id if isinstance(item, Section) else item.section_id
    return next((s for s in spec.sections if s.id == section_id), None)


def _covers(location: CodeLocation, line: int, character: int) -> bool:
    end_line = location.end_line if location.end_line is not None else location.line
    if not location.line <= line <= end_line:
        return False
    if line == location.line and character < location.column:
        return False
    return not (line == end_line and location.end_column is not None and character > location.end_column)


def anchor_at(file: FileIndex, line: int, character: int) -> Anchor | None:
    return next((a for a in file.anchors if _covers(a.location, line, character)), None)


def items_at(spec: PaperSpec, file: FileIndex, line: int, character: int) -> list[PaperItem]:
    """Every item the anchor under the cursor names: `Eqs. (1)-(2)` is Eq. (1) and Eq. (2)."""
    found = [anchor_target(spec, a) for a in file.anchors if _covers(a.location, line, character)]
    return list({id(item): item for item in found if item is not None}.values())


def value_at(file: FileIndex, line: int, character: int) -> ValueSite | None:
    """The value site under the cursor: its value, or (on its line) its name."""
    on_line = [v for v in file.values if v.location.line == line]
    return next((v for v in on_line if _covers(v.location, line, character)), on_line[0] if on_line else None)


def function_defined_at(file: FileIndex, line: int) -> FunctionSite | None:
    """The function or class whose `def`/`class` line is `line`."""
    return next((f for f in file.functions if f.location.line == line), None)


def equations_of(spec: PaperSpec, file: FileIndex, function: FunctionSite) -> list[Equation]:
    """The equations a function's anchors name, in order, without repeats."""
    found: list[Equation] = []
    for anchor in file.anchors:
        if anchor.function == function.qualname:
            item = anchor_target(spec, anchor)
            if isinstance(item, Equation) and item not in found:
                found.append(item)
    return found


def statement_of(facts: PaperFacts, site: ValueSite) -> tuple[str, Evidence] | None:
    """The value the paper (or an answer) states for the setting a code value sets, as written, and where."""
    stated = facts_for(facts, site)
    if not stated:
        return None
    same_component = [f for f in stated if f.component and f.component == site.component]
    fact = (same_component or stated)[0]
    return fact.shown, fact.evidence


def implementations(spec: PaperSpec, index: CodeIndex, item: PaperItem) -> Iterator[CodeLocation]:
    """Every anchor in the workspace that names `item`, and the function it documents."""
    for file in index.files:
        functions = {f.qualname: f for f in file.functions}
        for anchor in file.anchors:
            if anchor_target(spec, anchor) is item:
                yield anchor.location
                if anchor.function in functions:
                    definition = functions[anchor.function].location
                    yield CodeLocation(file=file.file, line=definition.line, column=definition.column, end_line=definition.line)


def paper_item_at(spec: PaperSpec, file: str, line: int) -> PaperItem | None:
    """The equation, algorithm or table of the paper at a line of its source (then the section)."""
    def spans(location: Location) -> bool:
        end = location.end_line if location.end_line is not None else location.line
        return location.file == file and location.line is not None and location.line <= line <= end

    for items in (spec.equations, spec.algorithms, spec.tables, spec.sections):
        found = next((item for item in items if spans(item.location)), None)
        if found is not None:
            return found
    return None


def open_questions(spec: PaperSpec, gaps: list[Gap], facts: PaperFacts, equation: Equation) -> list[Gap]:
    """The gaps that bear on an equation: shown in it, or about a symbol it uses."""
    symbols = set(equation.symbols)
    symbol_of_setting = facts.symbols
    found = []
    for gap in gaps:
        shown_in_it = any(
            e.location.file == equation.location.file
            and e.location.line is not None
            and equation.location.line is not None
            and equation.location.line <= e.location.line <= (equation.location.end_line or equation.location.line)
            for e in gap.evidence
        )
        about_its_symbol = gap.setting is not None and symbol_of_setting.get(gap.setting) in symbols
        if shown_in_it or about_its_symbol:
            found.append(gap)
    return found


_WORD = re.compile(r"[A-Za-z]{2,}")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text.replace("_", " "))}


def likely_equations(spec: PaperSpec, function: FunctionSite, limit: int = 3) -> list[Equation]:
    """Numbered equations a function may implement, best first: its parameters that are the
    equation's symbols by name (tau for τ), and words its name shares with the equation's label.
    When nothing is shared: none (a section title's words are too broad to suggest anything)."""
    parameters = {p.lower() for p in function.parameters}
    name_words = _words(function.name)

    def score(equation: Equation) -> int:
        symbols = {symbol_name(s).lower() for s in equation.symbols}
        return len(parameters & symbols) + len(name_words & _words(equation.label or ""))

    scored = sorted(((score(e), i, e) for i, e in enumerate(spec.equations) if e.number), key=lambda s: (-s[0], s[1]))
    return [e for points, _, e in scored[:limit] if points > 0]


@dataclass(frozen=True, slots=True)
class PaperSymbol:
    """A named place of the paper, for a workspace-symbol search."""

    name: str
    kind: str  # equation | section | algorithm | table | setting
    detail: str
    location: Location


def paper_symbols(spec: PaperSpec) -> list[PaperSymbol]:
    found = [PaperSymbol(item_name(s), "section", "", s.location) for s in spec.sections]
    found += [PaperSymbol(item_name(e), "equation", shorten(e.latex or e.text, SYMBOL_DETAIL_CHARS), e.location) for e in spec.equations if e.number]
    found += [PaperSymbol(item_name(a), "algorithm", "", a.location) for a in spec.algorithms]
    found += [PaperSymbol(item_name(t), "table", shorten(t.caption, SYMBOL_DETAIL_CHARS), t.location) for t in spec.tables]
    found += [
        PaperSymbol(f"{h.normalized_name} = {h.raw_value}", "setting", shorten(h.text, SYMBOL_DETAIL_CHARS), h.location) for h in spec.hyperparameters
    ]
    return found


def matches_query(name: str, query: str) -> bool:
    """VS Code's rule for workspace symbols: the query's characters appear in order, any case."""
    rest = iter(name.lower())
    return all(ch in rest for ch in query.lower() if not ch.isspace())

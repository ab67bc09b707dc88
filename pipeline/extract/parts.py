"""Which part of a paper a section belongs to: the method and its experiments, or the framing around
them (introduction, related work, background, preliminaries, limitations, conclusion).

The framing describes other people's work and the paper's claims: LayerNorm's ε in a definition of
LayerNorm is not a setting of a paper that removes LayerNorm. Its values are not compared with code,
its wording is not a gap, its equations are not modules to write. The appendix is the method's
(experimental settings and hyperparameter tables live there), except for the checks that say so.
"""

from __future__ import annotations

import re

from ...schemas import Location, PaperSpec
from ..ingest.positions import span_location

FRAMING_TITLE = re.compile(
    r"\b(?:introduction|related\s+work|background|prior\s+work|literature|preliminar(?:y|ies)|"
    r"limitations?|conclusions?|concluding|broader\s+impacts?|societal\s+impacts?|future\s+work)\b",
    re.I,
)


def framing_sections(spec: PaperSpec) -> frozenset[str]:
    """The ids of framing sections and of every subsection under one."""
    framing: set[str] = set()
    under: int | None = None  # the level of the framing section whose subsections are being passed
    for section in spec.sections:
        if under is not None and section.level > under:
            framing.add(section.id)
            continue
        under = None
        if FRAMING_TITLE.search(section.title):
            framing.add(section.id)
            under = section.level
    return frozenset(framing)


def appendix_sections(spec: PaperSpec) -> frozenset[str]:
    return frozenset(section.id for section in spec.sections if section.appendix)


def top_section(spec: PaperSpec, section_id: str | None) -> str | None:
    """The level-1 section holding a section: "we follow Lipman et al." in 5.2 speaks for section 5."""
    return section_tops(spec).get(section_id or "")


def section_tops(spec: PaperSpec) -> dict[str, str | None]:
    """Every section's level-1 section (None before the first), read once for a paper's many lookups."""
    tops: dict[str, str | None] = {}
    top = None
    for section in spec.sections:
        top = section.id if section.level == 1 else top
        tops[section.id] = top
    return tops


INLINE_MATH_RE = re.compile(r"\$([^$]{1,300})\$")  # bounded: a hostile paper costs one scan


def method_formulas(spec: PaperSpec) -> list[tuple[str, Location]]:
    """The method's formulas: its display equations, and the inline math of its prose that states
    something equal to something (`L = L_1 + λ L_2`, `δ = α^{-β²}`), outside the framing and the
    appendix, each with where it stands."""
    aside = framing_sections(spec) | appendix_sections(spec)
    formulas = [(e.latex, e.location) for e in spec.equations if e.latex and e.section_id not in aside]
    for paragraph in spec.paragraphs:
        if paragraph.section_id not in aside:
            formulas += [
                (math[1], span_location(paragraph, math.start(1), math.end(1)))
                for math in INLINE_MATH_RE.finditer(paragraph.text)
                if "=" in math[1]
            ]
    return formulas

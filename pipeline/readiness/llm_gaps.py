"""Gaps an LLM proposes beyond the rules' ones, kept only where the span it quotes really is in the paper.

The model reads the method text and the titles of the gaps already found, and answers with
`GapCandidates`. Its answer is untrusted: a candidate whose quote is not a span of the paper is
dropped, and so is one that restates a known gap (same category, overlapping evidence).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from ...schemas import (
    TYPE_OF_CATEGORY,
    Evidence,
    Gap,
    GapCandidate,
    GapCandidates,
    GapKind,
    Location,
    PaperSpec,
    Paragraph,
)
from ...schemas.llm import MAX_GAP_CANDIDATES
from ..ingest.positions import span_location
from ..llm import LLMClient

log = logging.getLogger(__name__)

PURPOSE = "gap-candidates"
TEXT_BUDGET_CHARS = 12_000
MAX_KNOWN_TITLES = 40
# Shorter quotes ("the", "$m$") match almost anywhere and so locate nothing.
MIN_QUOTE_CHARS = 12

# The model is asked for what rules cannot judge, so its gaps take the kinds for judgement calls.
# The precise kinds (undefined-symbol, unstated-value, dangling-reference) stay with the rules,
# which locate exactly what they name.
KIND_OF_CATEGORY: dict[str, GapKind] = {
    "Ambiguous Definition": "ambiguous-wording",
    "Ambiguous Procedure": "ambiguous-wording",
    "Missing Method Procedure": "ambiguous-wording",
    "Missing Data Specification": "ambiguous-wording",
    "Missing Evaluation Specification": "ambiguous-wording",
    "Missing Model Structure": "unstated-setting",
    "Missing Configuration Protocol": "unstated-setting",
    "Conflicting Objective": "conflicting-values",
    "Conflicting Model Design": "conflicting-values",
    "Conflicting Formal Definition": "conflicting-values",
}

SYSTEM_PROMPT = f"""\
You review a machine-learning paper for what an engineer implementing it could not decide from the
text alone. Report only gaps that are not in the list of gaps already found. For each gap:
- quote: copy, character for character, the words of the paper text that show the gap (a phrase or
  one sentence, never more);
- category: one of
  Ambiguous Definition (a term or symbol with more than one reading),
  Ambiguous Procedure (a step that can be carried out in more than one way),
  Missing Method Procedure (a step of the method left out),
  Missing Model Structure (an architectural detail left out),
  Missing Data Specification (data, splits or preprocessing left out),
  Missing Configuration Protocol (a hyperparameter or training setting left out),
  Missing Evaluation Specification (how results are measured left out),
  Conflicting Objective, Conflicting Model Design, Conflicting Formal Definition (two places of the
  paper disagree about the loss, the architecture, or a formula or definition);
- title: one line; detail: why an implementer is stuck; question: a question for the authors;
- readings: the interpretations an implementer would choose between.
Report at most {MAX_GAP_CANDIDATES} gaps, the most consequential first, and none if there are none."""


def propose_gaps(spec: PaperSpec, known: list[Gap], client: LLMClient) -> list[Gap]:
    """New gaps from the LLM (source "llm", ids "llm:1", "llm:2", ... in the model's order).

    Raises LLMError (LLMUnavailable, LLMNotConfigured) when the model gives no usable answer:
    callers report it and keep the rules' gaps.
    """
    paragraphs = method_paragraphs(spec)
    answer = client.structured(_messages(spec, paragraphs, known), GapCandidates, purpose=PURPOSE)
    located = LocatedText(paragraphs)
    seen = [(gap.category, evidence.location) for gap in known for evidence in gap.evidence]
    gaps: list[Gap] = []
    dropped = duplicates = 0
    for candidate in answer.candidates:
        evidence = located.find(candidate.quote)
        if evidence is None or not candidate.title.strip() or not candidate.question.strip():
            dropped += 1
            continue
        if any(category == candidate.category and _overlaps(evidence.location, where) for category, where in seen):
            duplicates += 1
            continue
        seen.append((candidate.category, evidence.location))
        gaps.append(_gap(f"llm:{len(gaps) + 1}", candidate, evidence))
    log.info(
        "llm gaps: %d proposed, %d kept, %d dropped (quote not in the paper, or empty), %d duplicates",
        len(answer.candidates),
        len(gaps),
        dropped,
        duplicates,
    )
    return gaps


def method_paragraphs(spec: PaperSpec, budget: int = TEXT_BUDGET_CHARS) -> list[Paragraph]:
    """The prose outside the appendices, in reading order, up to `budget` characters."""
    appendix = {section.id for section in spec.sections if section.appendix}
    chosen: list[Paragraph] = []
    used = 0
    for paragraph in spec.paragraphs:
        if paragraph.section_id in appendix:
            continue
        used += len(paragraph.text)
        if used > budget:
            break
        chosen.append(paragraph)
    return chosen


def _messages(spec: PaperSpec, paragraphs: list[Paragraph], known: list[Gap]) -> list[dict[str, str]]:
    known_titles = "\n".join(f"- {gap.title}" for gap in known[:MAX_KNOWN_TITLES]) or "(none)"
    user = (
        f"Paper: {spec.title or spec.main_file}\n\n"
        f"Gaps already found:\n{known_titles}\n\n"
        f"Paper text:\n\n{render_paragraphs(spec, paragraphs)}"
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def render_paragraphs(spec: PaperSpec, paragraphs: Iterable[Paragraph]) -> str:
    """The paragraphs with a heading wherever the section changes, so the model knows where it is."""
    sections = {section.id: section for section in spec.sections}
    blocks: list[str] = []
    current: str | None = None
    for paragraph in paragraphs:
        if paragraph.section_id != current and (section := sections.get(paragraph.section_id or "")):
            blocks.append(" ".join(filter(None, ("##", section.number, section.title))))
        current = paragraph.section_id
        blocks.append(paragraph.text)
    return "\n\n".join(blocks)


class LocatedText:
    """Finds a quote in the paragraphs, whitespace runs counting as one space, and locates it."""

    def __init__(self, paragraphs: list[Paragraph]) -> None:
        self._collapsed = [(paragraph, *_collapse_whitespace(paragraph.text)) for paragraph in paragraphs]

    def find(self, quote: str) -> Evidence | None:
        found = self.span(quote)
        if found is None:
            return None
        paragraph, start, end = found
        return Evidence(quote=paragraph.text[start:end], location=span_location(paragraph, start, end))

    def span(self, quote: str) -> tuple[Paragraph, int, int] | None:
        """The paragraph holding the quote, and the quote's offsets in its text."""
        needle = " ".join(quote.split())
        if len(needle) < MIN_QUOTE_CHARS:
            return None
        for paragraph, text, origins in self._collapsed:
            at = text.find(needle)
            if at >= 0:
                return paragraph, origins[at], origins[at + len(needle) - 1] + 1
        return None


def _collapse_whitespace(text: str) -> tuple[str, list[int]]:
    """`text` with each whitespace run as one space, and the offset in `text` of every character kept."""
    pieces: list[str] = []
    origins: list[int] = []
    for match in re.finditer(r"\s+|\S+", text):
        if match.group().isspace():
            pieces.append(" ")
            origins.append(match.start())
        else:
            pieces.append(match.group())
            origins.extend(range(match.start(), match.end()))
    return "".join(pieces), origins


def _overlaps(a: Location, b: Location) -> bool:
    """Same file and overlapping lines; for PDFs, which locate by paragraph, the same page."""
    if a.file != b.file:
        return False
    if a.page is not None or b.page is not None:
        return a.page == b.page
    if a.line is None or b.line is None:
        return False
    return a.line <= (b.end_line if b.end_line is not None else b.line) and b.line <= (
        a.end_line if a.end_line is not None else a.line
    )


def _gap(gap_id: str, candidate: GapCandidate, evidence: Evidence) -> Gap:
    return Gap(
        id=gap_id,
        kind=KIND_OF_CATEGORY[candidate.category],
        type=TYPE_OF_CATEGORY[candidate.category],
        category=candidate.category,
        title=candidate.title.strip(),
        detail=candidate.detail.strip(),
        # A conflict leaves no faithful reading to implement; anything else has a reasonable default.
        blocking=False,  # an untrusted source never decides on its own that a paper is not ready
        evidence=[evidence],
        question=candidate.question.strip(),
        readings=[reading.strip() for reading in candidate.readings if reading.strip()],
        source="llm",
    )

"""Sentence boundaries in prose that holds abbreviations, decimals and inline `$...$` math."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from ...schemas import Location, Paragraph
from ..ingest.positions import span_location
from .mathtext import PlainText, to_plain

# Words that end with a period without ending the sentence ("e.g.", "et al.", "Fig. 3", "Eq. 2").
_ABBREVIATIONS = frozenset(
    "e.g eg i.e ie al fig figs eq eqs sec secs tab tabs cf vs resp approx appx app ref refs no nos viz w.r.t "
    "wrt ca thm lem prop def alg algo ch pp vol ed eds incl est avg std max min dept univ mr ms dr prof st "
    "sect".split()
)  # fmt: skip
_BOUNDARY_RE = re.compile(r"[.!?][\"'”’)\]]*(\s+)(?=[A-Z0-9$\\(\[\"“‘'])")
_MATH_RE = re.compile(r"\$[^$]*\$")
_LAST_WORD_RE = re.compile(r"([\w.]+)\.?[\"'”’)\]]*$")


MAX_SENTENCE_CHARS = 4000  # real sentences are under 1,000 characters


def split_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of each sentence of `text`, surrounding whitespace excluded."""
    math_spans = [match.span() for match in _MATH_RE.finditer(text)] if "$" in text else []
    spans = []
    start = 0
    for match in _BOUNDARY_RE.finditer(text):
        end = match.start(1)
        if _inside(math_spans, match.start()) or _is_abbreviation(text, start, match.start() + 1):
            continue
        spans.append((start, end))
        start = match.end(1)
    spans.append((start, len(text.rstrip())))
    return [piece for s, e in spans if e > s for piece in _pieces(text, s, e, math_spans)]


def _pieces(text: str, start: int, end: int, math_spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """A sentence as it is, or, past MAX_SENTENCE_CHARS (no paper writes one; a generated or hostile
    text does), cut at spaces outside math into pieces no longer: what is read per sentence stays
    bounded."""
    pieces = []
    while end - start > MAX_SENTENCE_CHARS:
        limit = start + MAX_SENTENCE_CHARS
        cut = text.rfind(" ", start + 1, limit)
        while cut > start and _inside(math_spans, cut):
            cut = text.rfind(" ", start + 1, cut)
        cut = cut if cut > start else limit
        pieces.append((start, cut))
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if end > start:
        pieces.append((start, end))
    return pieces


def _inside(spans: list[tuple[int, int]], offset: int) -> bool:
    """Whether `offset` is strictly inside one of `spans` (sorted, not overlapping)."""
    at = bisect.bisect_left(spans, offset, key=lambda span: span[0]) - 1  # the last starting before it
    return at >= 0 and offset < spans[at][1]


def _is_abbreviation(text: str, start: int, period_end: int) -> bool:
    if text[period_end - 1] != ".":
        return False
    word_match = _LAST_WORD_RE.search(text, max(start, period_end - 24), period_end)
    if not word_match:
        return False
    word = word_match.group(1).rstrip(".").lower()
    # A single letter is an initial ("J. Smith") or a list label, rarely a sentence's last word.
    return word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())


@dataclass(slots=True)
class Sentence:
    """One sentence of a paragraph, with its plain form (see `mathtext`) to match on."""

    paragraph: Paragraph
    start: int  # offsets in paragraph.text
    end: int
    plain: PlainText

    @property
    def text(self) -> str:
        return self.paragraph.text[self.start : self.end]

    def source(self, plain_start: int, plain_end: int) -> str:
        """The original text of a span of the plain form."""
        start, end = self.plain.source_span(plain_start, plain_end)
        return self.text[start:end]

    def location(self, plain_start: int | None = None, plain_end: int | None = None) -> Location:
        """Where a span of the plain form (by default the whole sentence) stands in the source."""
        if plain_start is None or plain_end is None:
            return span_location(self.paragraph, self.start, self.end)
        start, end = self.plain.source_span(plain_start, plain_end)
        return span_location(self.paragraph, self.start + start, self.start + end)


def sentences_of(paragraph: Paragraph) -> list[Sentence]:
    return [
        Sentence(paragraph, start, end, to_plain(paragraph.text[start:end]))
        for start, end in split_sentences(paragraph.text)
    ]

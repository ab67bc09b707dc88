"""Offsets in a text source ↔ line/column, and spans of extracted prose back to the source."""

from __future__ import annotations

import bisect

from ...schemas import Location, Paragraph


class LineIndex:
    """Maps character offsets of one source text to 0-based (line, column)."""

    def __init__(self, text: str) -> None:
        self.line_starts = [0]
        start = text.find("\n")
        while start != -1:
            self.line_starts.append(start + 1)
            start = text.find("\n", start + 1)

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.line_starts, offset) - 1
        return line, offset - self.line_starts[line]

    def location(self, file: str, start: int, end: int) -> Location:
        line, column = self.position(start)
        end_line, end_column = self.position(end)
        return Location(file=file, line=line, column=column, end_line=end_line, end_column=end_column)


def span_location(paragraph: Paragraph, start: int, end: int) -> Location:
    """Where `paragraph.text[start:end]` stands in the source.

    Text sources carry anchors (text offset, line, column); PDFs carry none, and a span of a PDF
    paragraph is located by the paragraph's own page and box.
    """
    anchors = paragraph.offsets
    if not anchors:
        return paragraph.location

    def at(offset: int) -> tuple[int, int]:
        i = bisect.bisect_right(anchors, (offset, float("inf"), float("inf"))) - 1
        if i < 0:
            i = 0
        text_offset, line, column = anchors[i]
        return line, column + max(0, offset - text_offset)

    line, column = at(start)
    end_line, end_column = at(max(start, end - 1))
    return Location(
        file=paragraph.location.file, line=line, column=column, end_line=end_line, end_column=end_column + 1
    )

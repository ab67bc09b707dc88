"""Markdown papers → PaperSpec: headings, display math, pipe tables, algorithms and prose, located.

Written for papers converted to Markdown (Mathpix, pandoc, marker), so it follows the converters'
habits rather than every corner of CommonMark: lines indented by four spaces are prose (converters
indent footnotes and continuation lines, never code), a `Table N:` / `Figure N:` line starts a
caption even in the middle of a paragraph, and `$$ … $$` or `\\[ … \\]` at the start of a line is
display math. Fenced code blocks and HTML comments are skipped; neither ever reaches the spec.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ...schemas import Algorithm, Equation, Location, PaperSpec, Paragraph, Problem, Section, Table
from ..errors import PaperError
from .sources import content_hash, read_source, relative_to_root, slug
from .positions import LineIndex

ParagraphKind = Literal["text", "caption", "footnote", "item"]

_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_DISPLAY_MATH_OPEN = re.compile(r"^[ \t]*(\$\$|\\\[)")
_THEMATIC_BREAK = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-+*]|\d{1,9}[.)])(?:[ \t]+|$)")
_FOOTNOTE_DEFINITION = re.compile(r"^ {0,3}\[\^[^\]\s]+\]:[ \t]*")
_FOOTNOTE_MARK_LINE = re.compile(r"^[ \t]*(?:\[\^[^\]\s]+\][ \t]*)+$")
_IMAGE_LINE = re.compile(r"^[ \t]*(?:!\[[^\]]*\]\([^)]*\)[ \t]*)+$")
_QUOTE_MARKER = re.compile(r"^[ \t]*(?:>[ \t]?)+")
_DELIMITER_ROW = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_PANDOC_LABEL = re.compile(r"[ \t]*\{#([^}\s]+)[^}]*\}[ \t]*$")
_BOLD_MARKERS = re.compile(r"\*\*|__")

_NUMBER = r"(?:[A-Z]\.)?\d+(?:\.\d+)*"
_CAPTION = re.compile(rf"^(Table|Figure|Fig\.|Algorithm)\s+({_NUMBER})\s*[:.]\s*")
_ALGORITHM_TITLE = re.compile(rf"^Algorithm\s+({_NUMBER})\s*([:.])?\s*(.*?)\s*$")

_NUMBERED_TITLE = re.compile(r"^(\d+(?:\.\d+)*)\.?[ \t]+(\S.*)$")
_LETTERED_SUBSECTION_TITLE = re.compile(r"^([A-Z](?:\.\d+)+)\.?[ \t]+(\S.*)$")
_LETTERED_TITLE = re.compile(r"^([A-Z])[.:]?[ \t]+(\S.*)$")
_APPENDIX_TITLE = re.compile(r"^(?i:appendix|appendices)\b(?:[ \t]+([A-Z](?:\.\d+)*)\b)?[\s:.\-–—]*(.*)$")
# Front and back matter sits at the top level however many `#` a converter gave it.
_TOP_LEVEL_NAMES = {"abstract", "acknowledgment", "acknowledgments", "acknowledgement", "acknowledgements",
                    "references", "bibliography", "appendix", "appendices"}  # fmt: skip
_NOT_A_TITLE = {"abstract", "introduction"}

_TAG = re.compile(r"\\tag\*?\{([^}]*)\}")
_LABEL = re.compile(r"\\label\{([^}]*)\}")
_NUMBERING_COMMANDS = re.compile(r"\\tag\*?\{[^}]*\}|\\label\{[^}]*\}|\\(?:nonumber|notag)\b")
_TRAILING_NUMBER = re.compile(rf"^\s*\(\s*({_NUMBER}[a-z]?)\s*\)\s*[.,;]?\s*$")

# Inline Markdown, tried left to right; math is matched whole so nothing inside it is touched.
# Each alternative's last group names what to do with the match (see _Prose._inline).
_INLINE = re.compile(
    r"(?P<code_fence>`+)(?P<code>.+?)(?P=code_fence)"
    r"|(?P<math>\$\$.+?\$\$|(?<!\\)\$(?=\S)(?:\\.|[^$\\])+?(?<=\S)\$(?!\d))"
    r"|\\\((?P<paren_math>.+?)\\\)"
    r"|(?P<image>!\[[^\]]*\]\([^)]*\))"
    r"|(?P<footnote_mark>\[\^[^\]\s]+\])"
    r"|\[(?P<link>[^\]]+)\]\([^)]*\)"
    r"|<(?P<url>https?://[^>\s]+)>"
    r"|(?P<line_break>[ \t]*<br\s*/?>[ \t]*)"
    r"|(?P<html_tag></?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>)"
    r"|\\(?P<escaped>[!-/:-@\[-`{-~])"
    r"|\*\*(?=\S)(?P<strong>.+?)(?<=\S)\*\*"
    r"|(?<!\w)__(?=\S)(?P<strong_underscore>.+?)(?<=\S)__(?!\w)"
    r"|(?<![\w*])\*(?=[^\s*])(?P<emphasis>.+?)(?<=[^\s*])\*(?![\w*])"
    r"|(?<![\w_])_(?=[^\s_])(?P<emphasis_underscore>.+?)(?<=[^\s_])_(?![\w_])"
    r"|(?P<spaces>[ \t]{2,}|\t)",
    re.S,
)
_KEPT_INLINE = ("code", "url", "escaped")
_NESTED_INLINE = ("link", "strong", "strong_underscore", "emphasis", "emphasis_underscore")


def read_markdown(path: Path, root: Path) -> PaperSpec:
    """Read a Markdown paper; locations are relative to `root`.

    Raises PaperError when the file is missing, outside `root`, or not UTF-8 text.
    """
    root = root.resolve()
    main_file = relative_to_root(path, root)
    data = read_source(path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise PaperError(f"{path}: not UTF-8 text (undecodable byte at offset {err.start})") from None
    spec = PaperSpec(
        source_format="markdown",
        root=str(root),
        main_file=main_file,
        files={main_file: content_hash(data)},
    )
    _MarkdownReader(text, main_file).fill(spec)
    return spec


class _TextBuilder:
    """Prose being assembled, with an anchor wherever its text stops following the source."""

    def __init__(self, index: LineIndex) -> None:
        self.index = index
        self.parts: list[str] = []
        self.length = 0
        self.anchors: list[tuple[int, int, int]] = []
        self._next_source: int | None = None  # where the source continues if the next copy is contiguous

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def copy(self, text: str, source: int) -> None:
        """Append text that stands verbatim in the source at offset `source`."""
        if not text:
            return
        if source != self._next_source:
            self._anchor(source)
        self._append(text)
        self._next_source = source + len(text)

    def replace(self, text: str, source: int) -> None:
        """Append text standing for the markup at `source`: `$` for `\\(`, one space for `<br>` or blanks."""
        self._anchor(source)
        self._append(text)
        self._next_source = None

    def insert(self, text: str) -> None:
        """Append text with no source of its own (the space joining two lines)."""
        self._append(text)
        self._next_source = None

    def _anchor(self, source: int) -> None:
        line, column = self.index.position(source)
        if self.anchors and self.anchors[-1][0] == self.length:
            self.anchors.pop()
        self.anchors.append((self.length, line, column))

    def _append(self, text: str) -> None:
        self.parts.append(text)
        self.length += len(text)


class _Prose:
    """Source segments (one per line) rendered into a builder as one run of plain text."""

    def __init__(self, source: str, segments: list[tuple[int, int]], builder: _TextBuilder) -> None:
        self.segments = segments
        self.builder = builder
        # The segments joined by "\n", so that inline markup (math, emphasis) may span lines.
        self.joined = "\n".join(source[start:end] for start, end in segments)
        self.joined_starts: list[int] = []
        position = 0
        for start, end in segments:
            self.joined_starts.append(position)
            position += end - start + 1

    def render(self) -> None:
        self._inline(0, len(self.joined))

    def _source(self, position: int) -> int:
        k = bisect.bisect_right(self.joined_starts, position) - 1
        return self.segments[k][0] + position - self.joined_starts[k]

    def _keep(self, start: int, end: int) -> None:
        for k, piece in enumerate(self.joined[start:end].split("\n")):
            if k:
                self.builder.insert(" ")
                start += 1
            self.builder.copy(piece, self._source(start))
            start += len(piece)

    def _inline(self, start: int, end: int) -> None:
        position = start
        while match := _INLINE.search(self.joined, position, end):
            self._keep(position, match.start())
            kind = match.lastgroup
            if kind == "math":
                self._keep(*match.span())
            elif kind in _KEPT_INLINE:
                self._keep(*match.span(kind))
            elif kind == "paren_math":
                self.builder.replace("$", self._source(match.start()))
                self._keep(*match.span(kind))
                self.builder.replace("$", self._source(match.end(kind)))
            elif kind in ("line_break", "spaces"):
                self.builder.replace(" ", self._source(match.start()))
            elif kind in _NESTED_INLINE:
                self._inline(*match.span(kind))
            # images, footnote marks and other HTML tags are dropped
            position = match.end()
        self._keep(position, end)


@dataclass
class _DisplayMath:
    start: int
    body_start: int
    body_end: int
    end: int
    last_line: int
    number: str | None
    closed: bool


class _MarkdownReader:
    def __init__(self, text: str, file: str) -> None:
        self.file = file
        self.problems: list[Problem] = []
        self.index = LineIndex(text)
        self.scan = self._blank_comments(text)
        self.lines: list[tuple[int, int]] = []  # (start, end) offsets, without the line break
        start = 0
        for raw in text.split("\n"):
            end = start + len(raw)
            self.lines.append((start, end - 1 if raw.endswith("\r") else end))
            start = end + 1
        self.title: str | None = None
        self.sections: list[Section] = []
        self.markdown_levels: list[int] = []  # heading level as written, parallel to `sections`
        self.equations: list[Equation] = []
        self.algorithms: list[Algorithm] = []
        self.tables: list[Table] = []
        self.paragraphs: list[Paragraph] = []
        self.block_number = 0
        # Tables and `Table N:` captions with the number of the block they are, to pair neighbours.
        self.floats: list[tuple[int, Table | Paragraph]] = []
        self.ids: set[str] = set()
        self.section_id: str | None = None
        self.in_appendix = False

    def fill(self, spec: PaperSpec) -> None:
        i = 0
        while i < len(self.lines):
            i = self._block(i)
        self._level_unnumbered_sections()
        self._caption_tables()
        spec.title = self.title
        spec.sections = self.sections
        spec.equations = self.equations
        spec.algorithms = self.algorithms
        spec.tables = self.tables
        spec.paragraphs = self.paragraphs
        spec.problems = self.problems

    # -- source helpers ----------------------------------------------------------------------

    def _blank_comments(self, text: str) -> str:
        """HTML comments turned into spaces: gone for every later step, while offsets stay valid."""
        pieces: list[str] = []
        last = 0
        while (start := text.find("<!--", last)) != -1:
            end = text.find("-->", start + 4)
            if end == -1:
                self.problems.append(
                    Problem(severity="warning", message="HTML comment is never closed; the rest of the file is ignored",
                            location=self._location(start, start + 4))
                )  # fmt: skip
                end = len(text)
            else:
                end += 3
            pieces.append(text[last:start])
            pieces.append(re.sub(r"[^\n]", " ", text[start:end]))
            last = end
        pieces.append(text[last:])
        return "".join(pieces)

    def _line(self, i: int) -> str:
        start, end = self.lines[i]
        return self.scan[start:end]

    def _blank(self, i: int) -> bool:
        return not self._line(i).strip()

    def _location(self, start: int, end: int) -> Location:
        return self.index.location(self.file, start, end)

    def _line_location(self, first: int, last: int) -> Location:
        """From the first non-blank character of line `first` to the end of line `last`."""
        first_line = self._line(first)
        start = self.lines[first][0] + len(first_line) - len(first_line.lstrip())
        return self._location(start, self.lines[last][0] + len(self._line(last).rstrip()))

    def _segment(self, i: int, skip: int = 0) -> tuple[int, int]:
        """Line `i` from column `skip`, without surrounding whitespace or quote markers."""
        start, end = self.lines[i]
        content = self.scan[start + skip : end]
        quote = _QUOTE_MARKER.match(content)
        lead = quote.end() if quote else 0
        lead += len(content[lead:]) - len(content[lead:].lstrip())
        return start + skip + lead, start + skip + len(content.rstrip())

    def _render(self, segments: list[tuple[int, int]]) -> _TextBuilder:
        builder = _TextBuilder(self.index)
        _Prose(self.scan, segments, builder).render()
        return builder

    def _plain(self, start: int, end: int) -> str:
        return self._render([(start, end)]).text.strip()

    def _unique(self, candidate: str) -> str:
        unique, n = candidate, 1
        while unique in self.ids:
            n += 1
            unique = f"{candidate}-{n}"
        self.ids.add(unique)
        return unique

    def _id_at(self, prefix: str, offset: int) -> str:
        return f"{prefix}@{self.file}:{self.index.position(offset)[0] + 1}"

    # -- blocks ------------------------------------------------------------------------------

    def _block(self, i: int) -> int:
        """Read the block starting at line `i`; return the line after it."""
        line = self._line(i)
        if not line.strip():
            return i + 1
        self.block_number += 1
        if fence := _FENCE.match(line):
            return self._skip_fence(i, fence.group(1))
        if (after_algorithm := self._algorithm(i)) is not None:
            return after_algorithm
        if heading := _ATX_HEADING.match(line):
            return self._atx_heading(i, heading)
        if math := self._display_math_at(i):
            return self._add_equation(math)
        if self._table_starts(i):
            return self._table(i)
        if _THEMATIC_BREAK.match(line) or _IMAGE_LINE.match(line) or _FOOTNOTE_MARK_LINE.match(line):
            return i + 1
        if item := _LIST_ITEM.match(line):
            return self._list_item(i, item.end())
        if footnote := _FOOTNOTE_DEFINITION.match(line):
            return self._footnote(i, footnote.end())
        return self._paragraph(i)

    def _interrupts(self, i: int) -> bool:
        """Whether line `i` ends the paragraph or list item before it."""
        line = self._line(i)
        return bool(
            not line.strip()
            or _FENCE.match(line)
            or _ATX_HEADING.match(line)
            or _THEMATIC_BREAK.match(line)
            or _LIST_ITEM.match(line)
            or _FOOTNOTE_DEFINITION.match(line)
            or _FOOTNOTE_MARK_LINE.match(line)
            or _IMAGE_LINE.match(line)
            or _CAPTION.match(_BOLD_MARKERS.sub("", line).strip())
            or self._table_starts(i)
            or self._display_math_at(i)
        )

    def _skip_fence(self, i: int, fence: str) -> int:
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        for j in range(i + 1, len(self.lines)):
            if closing.match(self._line(j)):
                return j + 1
        self.problems.append(
            Problem(severity="warning", message="code block is never closed; the rest of the file is read as code",
                    location=self._line_location(i, i))
        )  # fmt: skip
        return len(self.lines)

    def _paragraph(self, i: int) -> int:
        j = i + 1
        while j < len(self.lines):
            if underline := _SETEXT_UNDERLINE.match(self._line(j)):
                return self._setext_heading(i, j, 1 if underline.group(1)[0] == "=" else 2)
            if self._interrupts(j):
                break
            j += 1
        first = _BOLD_MARKERS.sub("", self._line(i)).strip()
        kind: ParagraphKind = "caption" if _CAPTION.match(first) else "text"
        self._add_paragraph([self._segment(k) for k in range(i, j)], kind)
        return j

    def _list_item(self, i: int, content_column: int) -> int:
        j = i + 1
        while j < len(self.lines) and not self._interrupts(j):
            j += 1
        self._add_paragraph([self._segment(i, content_column)] + [self._segment(k) for k in range(i + 1, j)], "item")
        return j

    def _footnote(self, i: int, content_column: int) -> int:
        # Continuation lines must be indented: converters put a footnote just before the rest of
        # the page's prose, with no blank line between.
        j = i + 1
        while j < len(self.lines) and self._line(j)[:1] in (" ", "\t") and not self._blank(j):
            j += 1
        self._add_paragraph(
            [self._segment(i, content_column)] + [self._segment(k) for k in range(i + 1, j)], "footnote"
        )
        return j

    def _add_paragraph(self, segments: list[tuple[int, int]], kind: ParagraphKind) -> None:
        segments = [(start, end) for start, end in segments if start < end]  # e.g. a marker alone on its line
        if not segments:
            return
        builder = self._render(segments)
        if not builder.text.strip():
            return
        paragraph = Paragraph(
            text=builder.text, section_id=self.section_id, kind=kind,
            location=self._location(segments[0][0], segments[-1][1]), offsets=builder.anchors,
        )  # fmt: skip
        self.paragraphs.append(paragraph)
        caption = _CAPTION.match(paragraph.text) if kind == "caption" else None
        if caption and caption.group(1) == "Table":
            self.floats.append((self.block_number, paragraph))

    # -- headings ----------------------------------------------------------------------------

    def _atx_heading(self, i: int, heading: re.Match[str]) -> int:
        if heading.group(2):
            line_start = self.lines[i][0]
            start, end = line_start + heading.start(2), line_start + heading.end(2)
            label = None
            if attributes := _PANDOC_LABEL.search(self.scan, start, end):
                label = attributes.group(1)
                end = attributes.start()
            self._add_heading(len(heading.group(1)), self._plain(start, end), label, self._line_location(i, i))
        return i + 1

    def _setext_heading(self, first: int, underline: int, level: int) -> int:
        title = self._render([self._segment(k) for k in range(first, underline)]).text.strip()
        self._add_heading(level, title, None, self._line_location(first, underline))
        return underline + 1

    def _add_heading(self, level: int, title: str, label: str | None, location: Location) -> None:
        if not title:
            return
        number, title, appendix = self._split_number(title)
        first_heading = not self.sections and self.title is None
        if first_heading and level == 1 and number is None and not appendix and title.lower() not in _NOT_A_TITLE:
            self.title = title
            return
        self.in_appendix = self.in_appendix or appendix
        candidate = label or (f"sec-{number}" if number else f"sec-{slug(title)}")
        section = Section(
            id=self._unique(candidate), number=number, title=title, level=number.count(".") + 1 if number else level,
            appendix=self.in_appendix, label=label, location=location,
        )  # fmt: skip
        self.sections.append(section)
        self.markdown_levels.append(level)
        self.section_id = section.id

    def _split_number(self, title: str) -> tuple[str | None, str, bool]:
        """(number, title without it, whether the heading is part of the appendix)."""
        if appendix := _APPENDIX_TITLE.match(title):
            number = appendix.group(1)
            return number, (appendix.group(2).strip() or title) if number else title, True
        if numbered := _NUMBERED_TITLE.match(title):
            return numbered.group(1), numbered.group(2).strip(), False
        if lettered := _LETTERED_SUBSECTION_TITLE.match(title):
            return lettered.group(1), lettered.group(2).strip(), True
        # A bare letter ("A Proofs") is a number only once the appendix has begun.
        if self.in_appendix and (lettered := _LETTERED_TITLE.match(title)):
            return lettered.group(1), lettered.group(2).strip(), True
        return None, title, False

    def _level_unnumbered_sections(self) -> None:
        """Unnumbered headings get levels relative to the shallowest heading of the document."""
        if not self.markdown_levels:
            return
        shallowest = min(self.markdown_levels)
        for section, level in zip(self.sections, self.markdown_levels):
            if section.number is None:
                top_level = section.title.lower().rstrip(".:") in _TOP_LEVEL_NAMES
                section.level = 1 if top_level else level - shallowest + 1

    # -- display math ------------------------------------------------------------------------

    def _display_math_at(self, i: int) -> _DisplayMath | None:
        """The display math opening at line `i`, if any.

        `$$x$$ and more` on one line is prose with inline math, and so is `\\[1\\] A. Author`.
        """
        opening = _DISPLAY_MATH_OPEN.match(self._line(i))
        if opening is None:
            return None
        line_start, line_end = self.lines[i]
        closer = "$$" if opening.group(1) == "$$" else "\\]"
        start, body_start = line_start + opening.start(1), line_start + opening.end(1)
        limit = self._end_of_block(i)
        body_end = self.scan.find(closer, body_start, limit)
        if body_end == -1:
            return _DisplayMath(start, body_start, limit, limit, self._line_of(limit), None, closed=False)
        end = body_end + len(closer)
        last_line = self._line_of(end)
        after = self.scan[end : self.lines[last_line][1]]
        trailing = _TRAILING_NUMBER.match(after)
        if after.strip() and not trailing and body_end < line_end:
            return None
        number = trailing.group(1) if trailing else None
        if trailing:
            end = self.lines[last_line][0] + len(self._line(last_line).rstrip())
        return _DisplayMath(start, body_start, body_end, end, last_line, number, closed=True)

    def _add_equation(self, math: _DisplayMath) -> int:
        if not math.closed:
            self.problems.append(
                Problem(severity="warning", message="display math is never closed before the next blank line",
                        location=self._location(math.start, math.body_start))
            )  # fmt: skip
        body = self.scan[math.body_start : math.body_end]
        number = math.number
        if tag := _TAG.search(body):
            number = tag.group(1).strip()
        label_match = _LABEL.search(body)
        label = label_match.group(1).strip() if label_match else None
        latex = _NUMBERING_COMMANDS.sub("", body).strip()
        candidate = label or (f"eq-{number}" if number else self._id_at("eq", math.start))
        self.equations.append(
            Equation(
                id=self._unique(candidate), number=number, label=label, latex=latex, text=latex,
                section_id=self.section_id, location=self._location(math.start, math.end),
            )
        )  # fmt: skip
        return math.last_line + 1

    def _end_of_block(self, i: int) -> int:
        """Offset of the end of the last line before the next blank line (or the file's end)."""
        j = i
        while j + 1 < len(self.lines) and not self._blank(j + 1):
            j += 1
        return self.lines[j][1]

    def _line_of(self, offset: int) -> int:
        return self.index.position(offset)[0]

    # -- tables ------------------------------------------------------------------------------

    def _table_starts(self, i: int) -> bool:
        if i + 1 >= len(self.lines) or "|" not in self._line(i):
            return False
        delimiter = self._line(i + 1)
        return "|" in delimiter and bool(_DELIMITER_ROW.match(delimiter))

    def _table(self, i: int) -> int:
        row_lines = [i]  # the header row; the delimiter row below it is no row of the table
        j = i + 2
        while j < len(self.lines) and not self._blank(j) and "|" in self._line(j):
            row_lines.append(j)
            j += 1
        table = Table(
            id=self._id_at("tab", self.lines[i][0]),
            rows=[[self._plain(start, end) for start, end in self._cells(k)] for k in row_lines],
            row_locations=[self._line_location(k, k) for k in row_lines],
            section_id=self.section_id,
            location=self._line_location(i, row_lines[-1]),
        )
        self.tables.append(table)
        self.floats.append((self.block_number, table))
        return j

    def _cells(self, i: int) -> list[tuple[int, int]]:
        """Source spans of the cells of row `i`; pipes inside math or code do not split cells."""
        start, end = self._segment(i)
        row = self.scan[start:end]
        pipes = _cell_separators(row, math_aware=True)
        if pipes is None:  # an unbalanced `$`: split at every pipe rather than lose the row
            pipes = _cell_separators(row, math_aware=False) or []
        bounds = [-1, *pipes, len(row)]
        cells = [(start + a + 1, start + b) for a, b in itertools.pairwise(bounds)]
        if pipes and pipes[-1] == len(row) - 1:
            cells.pop()
        if pipes and pipes[0] == 0:
            cells.pop(0)
        return cells

    def _caption_tables(self) -> None:
        """Pair each table with the `Table N:` caption just before it, else the one just after."""
        used: set[int] = set()
        for step in (-1, 1):
            for k, (block, item) in enumerate(self.floats):
                if not isinstance(item, Table) or item.caption:
                    continue
                neighbour = k + step
                if neighbour in used or not 0 <= neighbour < len(self.floats):
                    continue
                neighbour_block, caption = self.floats[neighbour]
                if isinstance(caption, Paragraph) and neighbour_block == block + step:
                    used.add(neighbour)
                    self._apply_caption(item, caption.text)

    def _apply_caption(self, table: Table, caption: str) -> None:
        match = _CAPTION.match(caption)
        assert match is not None  # only `Table N:` captions are floats
        table.number = match.group(2)
        table.caption = caption[match.end() :].strip()
        self.ids.discard(table.id)
        table.id = self._unique(f"tab-{table.number}")

    # -- algorithms --------------------------------------------------------------------------

    def _algorithm(self, i: int) -> int | None:
        """An `Algorithm N: title` line (heading, bold or plain) followed by a list or code block."""
        line = self._line(i)
        heading = _ATX_HEADING.match(line)
        text = (heading.group(2) or "") if heading else line
        decorated = bool(heading) or text.strip().startswith(("**", "__"))
        title = _ALGORITHM_TITLE.match(_BOLD_MARKERS.sub("", text).strip())
        # Plain lines need the colon: "Algorithm 2 converges faster" followed by a list is prose.
        if not title or not (decorated or title.group(2)):
            return None
        j = i + 2 if i + 1 < len(self.lines) and self._blank(i + 1) else i + 1
        if j >= len(self.lines):
            return None
        if fence := _FENCE.match(self._line(j)):
            after = self._skip_fence(j, fence.group(1))
            steps = [self._line(k).strip() for k in range(j + 1, after - 1) if not self._blank(k)]
            last = after - 1
        elif _LIST_ITEM.match(self._line(j)):
            steps, last = self._list_steps(j)
        else:
            return None
        number = title.group(1)
        self.algorithms.append(
            Algorithm(
                id=self._unique(f"alg-{number}"), number=number, title=_plain_text(title.group(3)),
                steps=steps, section_id=self.section_id, location=self._line_location(i, last),
            )
        )  # fmt: skip
        return last + 1

    def _list_steps(self, i: int) -> tuple[list[str], int]:
        """The items of the list at line `i` as steps (blank lines between items allowed)."""
        steps: list[str] = []
        j = last = i
        while j < len(self.lines) and (item := _LIST_ITEM.match(self._line(j))):
            k = j + 1
            while k < len(self.lines) and not self._interrupts(k):
                k += 1
            segments = [self._segment(j, item.end())] + [self._segment(n) for n in range(j + 1, k)]
            steps.append(self._render(segments).text.strip())
            last = k - 1
            between_items = k + 1 < len(self.lines) and self._blank(k) and _LIST_ITEM.match(self._line(k + 1))
            j = k + 1 if between_items else k
        return steps, last


def _plain_text(text: str) -> str:
    """Inline markup removed from a piece of text that needs no source positions."""
    builder = _TextBuilder(LineIndex(text))
    _Prose(text, [(0, len(text))], builder).render()
    return builder.text.strip()


def _cell_separators(row: str, math_aware: bool) -> list[int] | None:
    """Offsets of the pipes that separate cells; None when a `$` is left open."""
    pipes: list[int] = []
    in_math = in_code = False
    k = 0
    while k < len(row):
        char = row[k]
        if char == "\\":
            k += 2
            continue
        if char == "`" and not in_math:
            in_code = not in_code
        elif char == "$" and math_aware and not in_code:
            in_math = not in_math
        elif char == "|" and not in_math and not in_code:
            pipes.append(k)
        k += 1
    return None if in_math else pipes


"""Read a PDF into a PaperSpec: sections, numbered equations, algorithms, tables and prose.

Everything comes from one `page.get_text("dict")` per page. The fonts, sizes and boxes of each
line tell the parts apart: headings are short lines in a larger or bold font (usually numbered),
display equations are math-font lines set apart from prose with a "(N)" at the column's right edge,
algorithms are floats under a bold "Algorithm N", tables are the loose cells beside a "Table N."
caption, and prose is what is left in body-sized blocks of several words a line. Nothing is
rendered and there is no OCR, so reading costs little more than the text extraction itself.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pymupdf

from ...schemas import Algorithm, Equation, Location, PaperSpec, Paragraph, Problem, Section, Table
from ..errors import PaperError
from .sources import content_hash, read_source, relative_to_root, slug

# Without TEXT_PRESERVE_LIGATURES MuPDF spells "ﬁ" as "fi"; leaving out TEXT_PRESERVE_IMAGES
# keeps image bytes out of the dict, which is most of its cost on figure-heavy papers.
TEXT_FLAGS = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP

# TeX's math fonts (Computer Modern, AMS, Latin Modern, STIX, ...) and Symbol.
MATH_FONT = re.compile(
    r"cmmi|cmsy|cmex|cmbsy|msam|msbm|eufm|eusm|rsfs|math|symbol|stix|esint|^(mtmi|mtsy|mtex|txmi|txsy|txex|pxmi|pxsy|pxex)",
    re.IGNORECASE,
)
# Computer Modern roman sets digits and operators in math when the text is in another font.
MATH_ROMAN_FONT = re.compile(r"^(cmr\d|cmbx\d|lmroman\d+-regular)", re.IGNORECASE)
BOLD_FONT = re.compile(r"bold|black|heavy|semibold|demi|cmbx|sfbx", re.IGNORECASE)

CAPTION = re.compile(r"^(?P<kind>Figure|Fig\.|Table)\s*(?P<number>[A-Z]?\.?\d+)\s*[.:]", re.IGNORECASE)
ALGORITHM = re.compile(r"^Algorithm\s+(?P<number>[A-Z]?\.?\d+)[.:]?\s*(?P<title>.*)$")
EQUATION_NUMBER = re.compile(r"^\(\s*(?P<number>(?:[A-Z]\.)?\d+(?:\.\d+)?[a-z]?)\s*\)$")
SECTION_NUMBER = re.compile(r"^(?P<number>(?:\d{1,2}|[A-Z])(?:\.\d{1,2})*)\.?\s+(?P<title>.*[A-Za-z].*)$")
APPENDIX_HEADING = re.compile(r"^Appendi(?:x|ces)\b(?:\s+(?P<number>[A-Z](?:\.\d+)*)\b[.:]?)?\s*(?P<title>.*)$", re.IGNORECASE)
BULLET = re.compile(r"^[•◦▪‣∙–]\s+")
PAGE_NUMBER = re.compile(r"^(\d+|[ivxlc]+|page \d+( of \d+)?)$", re.IGNORECASE)
FOOTNOTE_MARK = re.compile(r"^[*†‡§¶]")
# Relations, operators, Greek and letter-like symbols: math set in text fonts still shows these.
MATH_SYMBOL = re.compile(r"[=<>≤≥≠≈∼∝∈∉⊂⊆∑∏∫√±×→←↦⇒⇔∂∇∞‖\u0391-\u03a9\u03b1-\u03c9\u2100-\u214f]")
COMPOUND = re.compile(r"\b[A-Za-z]+-[A-Za-z]+\b")
WORD = re.compile(r"(?<![\w(])[A-Za-z][a-z]+\b")
# Operator names that math set in text fonts spells out like words ("log softmax(z)").
OPERATOR_NAMES = frozenset({
    "arg", "argmax", "argmin", "cos", "det", "diag", "exp", "inf", "lim", "ln", "log", "max", "min",
    "sigmoid", "sin", "softmax", "sup", "tanh", "tr",
})

UNNUMBERED_SECTIONS = {
    "abstract", "introduction", "related work", "background", "method", "methods", "experiments",
    "results", "discussion", "conclusion", "conclusions", "limitations", "broader impact",
    "acknowledgments", "acknowledgements", "acknowledgment", "acknowledgement", "references",
    "bibliography", "appendix", "appendices", "supplementary material",
}

# Unicode hyphens and spaces become plain ones; some small-caps fonts borrow ſ, ı and ĸ for S, I and K.
CHAR_FIXES = str.maketrans({"\u2010": "-", "\u2011": "-", "\u00a0": " ", "\u2009": " ", "\u00ad": ""})
UNNAMED_GLYPH = "\ufffd"  # kept while reading (it still takes space on the page), dropped from the output
SMALL_CAPS_WORD = re.compile(r"\S*[ſıĸ]\S*")
SMALL_CAPS_FIXES = str.maketrans({"ſ": "S", "ı": "I", "ĸ": "K"})

MARGIN_SHARE = 0.12  # running headers and footers live in the top/bottom 12% of a page


@dataclass(slots=True)
class _Span:
    text: str
    font: str
    size: float
    bold: bool
    math: bool
    raised: bool  # MuPDF's superscript flag
    baseline: float
    bbox: tuple[float, float, float, float]


@dataclass(eq=False, slots=True)
class _Line:
    """One text line of a page, with what its fonts say about it."""

    page: int
    order: int  # position in the page's text stream (for TeX output, the reading order)
    block: int
    bbox: tuple[float, float, float, float]
    spans: list[_Span]
    text: str
    size: float  # dominant font size, by characters
    base_size: float  # the largest size: what scripts are small against
    baseline: float  # of the largest text
    bold_share: float
    math_share: float
    words: int  # prose words: two letters or more, outside math fonts and scripts, not operator names
    role: str = "loose"  # running|title|heading|caption|algorithm|prose|footnote|table|equation|loose

    @property
    def x0(self) -> float:
        return self.bbox[0]

    @property
    def y0(self) -> float:
        return self.bbox[1]

    @property
    def x1(self) -> float:
        return self.bbox[2]

    @property
    def y1(self) -> float:
        return self.bbox[3]

    @property
    def height(self) -> float:
        return self.bbox[3] - self.bbox[1]

    @property
    def centre_x(self) -> float:
        return (self.bbox[0] + self.bbox[2]) / 2

    @property
    def centre_y(self) -> float:
        return (self.bbox[1] + self.bbox[3]) / 2


@dataclass
class _Page:
    number: int  # from 1
    width: float
    height: float
    lines: list[_Line] = field(default_factory=list)  # in stream order
    blocks: list[list[_Line]] = field(default_factory=list)


@dataclass
class _HeadingCandidate:
    lines: list[_Line]
    text: str
    size: float
    bold: bool


@dataclass(order=True)
class _Emitted:
    """An item of the spec waiting to be put in reading order and given its section."""

    page: int
    order: float
    item: Section | Paragraph | Equation | Algorithm | Table = field(compare=False)


def read_pdf(path: Path, root: Path) -> PaperSpec:
    """Read the PDF at `path` (inside the paper folder `root`) into a PaperSpec.

    Raises PaperError, with one message naming the file, when the file cannot be read at all:
    missing, not a PDF, encrypted, damaged beyond repair, or without a text layer. Anything
    read only in part is reported in `problems`.
    """
    data = _read_bytes(path)
    relpath = relative_to_root(path, root)
    shown_errors = pymupdf.TOOLS.mupdf_display_errors()
    pymupdf.TOOLS.mupdf_display_errors(False)  # MuPDF's complaints become Problems, not stderr noise
    pymupdf.TOOLS.reset_mupdf_warnings()
    try:
        return _PdfReader(path, relpath, root, data).read()
    finally:
        pymupdf.TOOLS.mupdf_display_errors(shown_errors)
        pymupdf.TOOLS.reset_mupdf_warnings()


def _read_bytes(path: Path) -> bytes:
    data = read_source(path)
    if not data:
        raise PaperError(f"{path} is empty (0 bytes), not a PDF")
    if b"%PDF-" not in data[:1024]:
        raise PaperError(f"{path} is not a PDF (it has no %PDF header)")
    return data


class _PdfReader:
    def __init__(self, path: Path, relpath: str, root: Path, data: bytes) -> None:
        self.path = path
        self.relpath = relpath
        self.root = root
        self.data = data
        self.problems: list[Problem] = []
        self.body_size = 10.0
        self.body_font = ""
        self.compounds: frozenset[str] = frozenset()  # hyphenated words as the document spells them

    # ----------------------------------------------------------------- the whole document

    def read(self) -> PaperSpec:
        with self._open() as document:
            pages = self._extract(document)
        self._mark_running_lines(pages)
        title = self._mark_title(pages[0])
        candidates = [candidate for page in pages for candidate in self._classify_blocks(page)]
        self.compounds = frozenset(
            word.lower()
            for page in pages
            for line in page.lines
            if line.role == "prose"
            for word in COMPOUND.findall(line.text)
        )
        emitted = self._accept_headings(candidates)
        for page, next_page in zip(pages, pages[1:] + [None]):
            emitted += self._algorithms(page)
            emitted += self._tables(page, next_page)
            emitted += self._equations(page)
            emitted += self._paragraphs(page)
        spec = PaperSpec(
            source_format="pdf",
            root=str(self.root),
            main_file=self.relpath,
            files={self.relpath: content_hash(self.data)},
            title=title,
            page_count=len(pages),
            problems=self.problems,
        )
        _fill_in_reading_order(spec, sorted(emitted))
        return spec

    def _open(self) -> pymupdf.Document:
        try:
            document = pymupdf.open(stream=self.data, filetype="pdf")
        except Exception:  # MuPDF raises several types for unreadable files
            raise PaperError(f"{self.path} is damaged (truncated or corrupt) and cannot be read") from None
        if document.needs_pass:
            document.close()
            raise PaperError(f"{self.path} is encrypted and needs a password; paperlens cannot read it")
        try:
            pages = document.page_count  # MuPDF raises here for a page tree it cannot count
        except Exception:
            pages = 0
        if pages == 0:
            document.close()
            raise PaperError(f"{self.path} is damaged (truncated or corrupt): no page could be read")
        return document

    def _extract(self, document: pymupdf.Document) -> list[_Page]:
        read: list[tuple[int, pymupdf.Rect, list[list[list[_Span]]]]] = []  # page, size, blocks of lines of spans
        for index in range(document.page_count):
            number = index + 1
            try:  # loading a page walks the page tree, which may be malformed or loop
                page = document.load_page(index)
                blocks = page.get_text("dict", flags=TEXT_FLAGS)["blocks"]
                rect = page.rect
            except Exception as err:  # one unreadable page should not lose the others
                self._problem("error", f"page {number} could not be read: {err}", number)
                continue
            lines_of_blocks = [[_font_runs(line["spans"]) for line in block["lines"]] for block in blocks]
            read.append((number, rect, lines_of_blocks))
        repairs = pymupdf.TOOLS.mupdf_warnings()
        if document.is_repaired or repairs:
            first = repairs.splitlines()[0] if repairs else "broken cross-reference table"
            self._problem(
                "warning", f"the PDF is damaged and was repaired while reading ({first}); some content may be missing"
            )
        if not read:
            raise PaperError(f"{self.path} is damaged: none of its {document.page_count} page(s) could be read ({self.problems[0].message})")
        if not self._measure_typography(read):
            raise PaperError(f"{self.path} has no text layer (scanned?); paperlens does not do OCR")
        pages = [self._build_page(number, rect, blocks) for number, rect, blocks in read]
        guess = "lost to the damage?" if document.is_repaired else "a scanned image?"
        for page in pages:
            if not page.lines:
                self._problem("info", f"page {page.number} has no text layer ({guess})", page.number)
        return pages

    def _measure_typography(self, read: list[tuple[int, pymupdf.Rect, list[list[list[_Span]]]]]) -> bool:
        """Body size and font: the most common ones, counted in characters. False when there is no text."""
        sizes: Counter[float] = Counter()
        fonts: Counter[str] = Counter()
        for _number, _rect, blocks in read:
            for block in blocks:
                for spans in block:
                    for span in spans:
                        chars = len(span.text) - span.text.count(" ")
                        if chars:
                            sizes[round(span.size * 2) / 2] += chars
                            fonts[span.font] += chars
        if not sizes:
            return False
        self.body_size = sizes.most_common(1)[0][0]
        self.body_font = fonts.most_common(1)[0][0]
        return True

    def _build_page(self, number: int, rect: pymupdf.Rect, blocks: list[list[list[_Span]]]) -> _Page:
        page = _Page(number=number, width=rect.width, height=rect.height)
        for block_index, block in enumerate(blocks):
            block_lines = []
            for spans in block:
                for span in spans:
                    span.math = _is_math_font(span.font, self.body_font)
                for part in _split_off_equation_number(spans, self.body_size):
                    line = _line(number, len(page.lines), block_index, part)
                    if line is not None:
                        page.lines.append(line)
                        block_lines.append(line)
            if block_lines:
                page.blocks.append(block_lines)
        return page

    def _mark_running_lines(self, pages: list[_Page]) -> None:
        """Running headers/footers repeat at one height on many pages; page numbers sit in the margins."""
        in_margin: dict[str, list[_Line]] = defaultdict(list)
        for page in pages:
            for line in page.lines:
                if line.y1 <= MARGIN_SHARE * page.height or line.y0 >= (1 - MARGIN_SHARE) * page.height:
                    if PAGE_NUMBER.match(line.text):
                        line.role = "running"
                    else:
                        in_margin[re.sub(r"\d+", "#", line.text)].append(line)
        needed = max(2, math.ceil(len(pages) / 2))
        for lines in in_margin.values():
            heights = [line.y0 for line in lines]
            if len({line.page for line in lines}) >= needed and max(heights) - min(heights) <= 4:
                for line in lines:
                    line.role = "running"

    def _mark_title(self, first_page: _Page) -> str | None:
        """The title is the largest text on page 1, when it stands out from the body."""
        lines = [line for line in first_page.lines if line.role == "loose"]
        if not lines:
            return None
        largest = max(line.size for line in lines)
        if largest < self.body_size + 2:
            return None
        title_lines = [line for line in lines if line.size >= largest - 0.5]
        title_lines = [line for line in title_lines if line.block == title_lines[0].block]
        title = _clean(" ".join(line.text for line in title_lines))
        number, _ = _parse_heading(title)
        if number and number[0].isdigit():
            return None  # the largest text is a numbered heading: the title is not in the text layer
        _assign(title_lines, "title")
        return title

    # ----------------------------------------------------------------- blocks of one page

    def _classify_blocks(self, page: _Page) -> list[_HeadingCandidate]:
        """Give each line a role: caption, algorithm, heading (candidate), prose, footnote or loose."""
        candidates = []
        algorithm: list[_Line] | None = None
        for block in page.blocks:
            lines = [line for line in block if line.role == "loose"]
            if not lines:
                continue
            first = lines[0]
            if algorithm is not None and self._continues_algorithm(algorithm, lines):
                _assign(lines, "algorithm")
                algorithm += lines
                continue
            algorithm = None
            if CAPTION.match(first.text):
                _assign(lines, "caption")
                continue
            if self._is_algorithm_title(first):
                _assign(lines, "algorithm")
                algorithm = list(lines)
                continue
            heading_lines = self._leading_heading_lines(lines)
            if heading_lines:
                _assign(heading_lines, "heading")
                candidates.append(_HeadingCandidate(
                    lines=heading_lines,
                    text=_clean(" ".join(line.text for line in heading_lines)),
                    size=max(line.size for line in heading_lines),
                    bold=all(line.bold_share >= 0.8 for line in heading_lines),
                ))
                lines = lines[len(heading_lines):]
                if not lines:
                    continue
            _assign(lines, self._prose_role(page, lines))
        self._join_caption_continuations(page)
        return candidates

    def _is_algorithm_title(self, line: _Line) -> bool:
        if not ALGORITHM.match(line.text):
            return False
        first = line.spans[0]
        return first.bold or first.font != self.body_font

    def _continues_algorithm(self, algorithm: list[_Line], lines: list[_Line]) -> bool:
        """The next blocks of an algorithm float: right below it, in its column, not a new float."""
        title, first = algorithm[0], lines[0]
        return (
            first.y0 - max(line.y1 for line in algorithm) <= 1.5 * self.body_size
            and title.x0 - 15 <= first.x0 < title.x1
            and not CAPTION.match(first.text)
            and not self._is_algorithm_title(first)
            and max(line.size for line in lines) <= self.body_size + 0.5
        )

    def _leading_heading_lines(self, lines: list[_Line]) -> list[_Line]:
        """The lines a heading is made of at the top of a block: larger or bold, short, not math."""
        run = []
        for line in lines:
            larger = line.size >= self.body_size + 0.8
            if line.math_share > 0.3 or not (larger or line.bold_share >= 0.8):
                break
            run.append(line)
        text = " ".join(line.text for line in run)
        rows = {round(line.baseline) for line in run}
        if not run or len(rows) > 3 or len(text) > 150 or sum(c.isalpha() for c in text) < 3 or text.startswith("("):
            return []
        return run

    def _prose_role(self, page: _Page, lines: list[_Line]) -> str:
        """Prose is body-sized text with a line of several words; a footnote is small, marked, at the page foot."""
        size = Counter(line.size for line in lines).most_common(1)[0][0]
        wordy = max(line.words for line in lines) >= 5
        if size <= self.body_size - 0.8 and lines[0].y0 >= 0.7 * page.height and _starts_with_mark(lines[0]):
            return "footnote"
        if wordy and size >= 0.75 * self.body_size:
            return "prose"
        return "loose"

    def _join_caption_continuations(self, page: _Page) -> None:
        """A caption's last lines sometimes come as a separate block right under it."""
        previous: list[_Line] | None = None
        for block in page.blocks:
            if block[0].role == "caption":
                previous = block
                continue
            if previous is not None and all(line.role in ("prose", "footnote", "loose") for line in block):
                last = previous[-1]
                if 0 <= block[0].y0 - last.y1 <= 0.6 * last.height and abs(block[0].size - last.size) <= 0.3:
                    _assign(block, "caption")
                    previous = block
                    continue
            previous = None

    # ----------------------------------------------------------------- headings

    def _accept_headings(self, candidates: list[_HeadingCandidate]) -> list[_Emitted]:
        """Keep numbered headings, well-known unnumbered ones, and later unnumbered ones styled like them."""
        parsed = [(candidate, *_parse_heading(candidate.text)) for candidate in candidates]
        styles: dict[tuple[float, bool], int] = {}
        for candidate, number, _title in parsed:
            if number and number[0].isdigit():
                styles.setdefault(_style(candidate), number.count(".") + 1)
        emitted = []
        ids: Counter[str] = Counter()
        started = in_appendix = after_references = False
        for candidate, number, title in parsed:
            opens_appendix = bool(re.match(r"appendi(x|ces)\b", title, re.IGNORECASE))
            letters_expected = in_appendix or opens_appendix or after_references
            if number and number[0].isalpha() and "." not in number and not letters_expected:
                number, title = None, candidate.text  # "A Study of ..." is a title, not appendix A
            known = title.lower().rstrip(".:") in UNNUMBERED_SECTIONS
            after_references = after_references or title.lower() in ("references", "bibliography")
            style_level = _style_level(candidate, styles)
            if not (number or known or (started and style_level is not None)):
                _assign(candidate.lines, "loose")
                continue
            started = True
            in_appendix = in_appendix or opens_appendix or bool(number and number[0].isalpha())
            level = number.count(".") + 1 if number else style_level or 1
            base_id = f"sec-{number}" if number else f"sec-{slug(title)}"
            ids[base_id] += 1
            section_id = base_id if ids[base_id] == 1 else f"{base_id}-{ids[base_id]}"
            first = candidate.lines[0]
            section = Section(
                id=section_id, number=number, title=title, level=level, appendix=in_appendix,
                location=self._location(first.page, candidate.lines),
            )
            emitted.append(_Emitted(first.page, first.order, section))
        return emitted

    # ----------------------------------------------------------------- floats, displays and prose of one page

    def _algorithms(self, page: _Page) -> list[_Emitted]:
        """Each algorithm float starts at its title line; its other lines follow it in the stream."""
        floats: list[list[_Line]] = []
        for line in page.lines:
            if line.role == "algorithm":
                if self._is_algorithm_title(line):
                    floats.append([])
                floats[-1].append(line)
        return [self._algorithm(page, lines) for lines in floats]

    def _algorithm(self, page: _Page, lines: list[_Line]) -> _Emitted:
        title_line = lines[0]
        match = ALGORITHM.match(title_line.text)
        steps = [" ".join(_script_text(line) for line in row) for row in _rows(lines[1:])]
        algorithm = Algorithm(
            id=f"alg-{match['number']}",
            number=match["number"],
            title=_clean(match["title"]),
            steps=[step for step in steps if not re.fullmatch(r"\d+:?", step)],  # line numbers of blank lines
            location=self._location(page.number, lines),
        )
        return _Emitted(page.number, title_line.order, algorithm)

    def _tables(self, page: _Page, next_page: _Page | None) -> list[_Emitted]:
        emitted = []
        for caption in _caption_runs(page):
            match = CAPTION.match(caption[0].text)
            if not match["kind"].lower().startswith("table"):
                continue
            number = match["number"]
            rows = self._table_rows(page, next_page, caption)
            if not rows:
                self._problem("info", f"the cells of Table {number} could not be read from the text layer",
                              page.number, caption)
            on_this_page = [line for row_page, row in rows if row_page == page.number for line in row]
            table = Table(
                id=f"tab-{number}",
                number=number,
                caption=_join_lines([_prose_text(line) for line in caption], self.compounds),
                rows=_grid([row for _page, row in rows]),
                row_locations=[self._location(row_page, row) for row_page, row in rows],
                location=self._location(page.number, caption + on_this_page),
            )
            emitted.append(_Emitted(page.number, caption[0].order + 0.5, table))
        return emitted

    def _table_rows(self, page: _Page, next_page: _Page | None, caption: list[_Line]) -> list[tuple[int, list[_Line]]]:
        """The rows of loose lines right below the caption, or right above it for captions set under the table.

        Cells are gathered across the caption's text column (a table is often wider than its
        caption); only lines of another kind under the caption itself end the table, so prose
        wrapped beside a narrow table does not. A table that runs to the foot of its page goes on
        at the top of the next one when the lines there sit in the same columns.
        """
        cap_x0, cap_y0, cap_x1, cap_y1 = _union(caption)
        centre = (cap_x0 + cap_x1) / 2
        column = [line for line in page.lines if line.role == "prose" and line.x0 <= centre <= line.x1]
        left = min([cap_x0] + [line.x0 for line in column]) - 20
        right = max([cap_x1] + [line.x1 for line in column]) + 20
        candidates = [line for line in page.lines if left <= line.centre_x <= right and line.role != "caption"]
        cells, to_page_foot = self._contiguous(candidates, cap_y1, (cap_x0, cap_x1), downwards=True)
        if not cells:
            cells, to_page_foot = self._contiguous(candidates, cap_y0, (cap_x0, cap_x1), downwards=False)
        _assign(cells, "table")
        rows = [(page.number, row) for row in _rows(cells)]
        if cells and to_page_foot and next_page is not None and cells[0].y0 >= cap_y1:
            carried = self._carried_over(next_page, (left, right), cells)
            _assign(carried, "table")
            rows += [(next_page.number, row) for row in _rows(carried)]
        return rows

    def _carried_over(self, next_page: _Page, column: tuple[float, float], cells: list[_Line]) -> list[_Line]:
        """The top lines of the next page, when they are loose and line up with the table's cells."""
        left, right = column
        lines = sorted(
            (line for line in next_page.lines if line.role != "running" and left <= line.centre_x <= right),
            key=lambda line: line.y0,
        )
        if not lines or lines[0].role != "loose":
            return []
        carried, _ = self._contiguous(lines, lines[0].y0, column, downwards=True)

        def lines_up(line: _Line) -> bool:
            return any(abs(line.x0 - cell.x0) <= 3 or abs(line.x1 - cell.x1) <= 3 for cell in cells)

        return carried if all(lines_up(line) for line in carried) else []

    def _contiguous(
        self, lines: list[_Line], start: float, stops: tuple[float, float], downwards: bool
    ) -> tuple[list[_Line], bool]:
        """Loose lines following each other from `start`, and whether they ran to the end of the page.

        They end at a line of another kind overlapping `stops` (an x range) or at a gap much wider
        than the gaps between the rows taken so far: where a table ends and, say, a figure begins.
        """
        if downwards:
            ordered = sorted((line for line in lines if line.y0 >= start - 2), key=lambda line: line.y0)
        else:
            ordered = sorted((line for line in lines if line.y1 <= start + 2), key=lambda line: -line.y1)
        taken: list[_Line] = []
        row_gaps: list[float] = []
        edge = start
        for line in ordered:
            if line.role == "running":
                continue
            if line.role != "loose":
                if line.x0 < stops[1] and stops[0] < line.x1:
                    return taken, False
                continue
            gap = line.y0 - edge if downwards else edge - line.y1
            widest = 2.5 * self.body_size if not taken else max(1.2 * self.body_size, 2.5 * max(row_gaps, default=0))
            if gap > widest:
                return taken, False
            if taken and gap > 0:
                row_gaps.append(gap)
            taken.append(line)
            edge = max(edge, line.y1) if downwards else min(edge, line.y0)
        return taken, True

    def _equations(self, page: _Page) -> list[_Emitted]:
        """Display equations: clusters of math lines outside prose, numbered by a "(N)" to their right."""
        loose = [line for line in page.lines if line.role == "loose"]
        numbers = [line for line in loose if EQUATION_NUMBER.match(line.text)]
        emitted = []
        unnumbered = 0
        for region in self._display_regions([line for line in loose if line not in numbers]):
            own_numbers = [number for number in numbers if self._numbers_region(page, number, region)]
            for number in own_numbers:
                numbers.remove(number)
            if own_numbers:
                displays = self._stacked_displays(region, own_numbers) or _split_by_numbers(region, own_numbers)
            elif self._is_unnumbered_display(page, region):
                displays = [(None, region)]
            else:
                continue
            for number, lines in displays:
                if number is None:
                    unnumbered += 1
                    emitted.append(self._equation(page, lines, None, f"eq@p{page.number}.{unnumbered}"))
                else:
                    emitted.append(self._equation(page, lines, EQUATION_NUMBER.match(number.text)["number"]))
        return emitted

    def _equation(self, page: _Page, lines: list[_Line], number: str | None, anchor: str | None = None) -> _Emitted:
        _assign(lines, "equation")
        ordered = sorted(lines, key=lambda line: line.order)
        # Glyph boxes hug the ink; a little room keeps accents, rules and big operators inside a crop.
        x0, y0, x1, y1 = _union(ordered)
        pad = 0.2 * self.body_size
        bbox = (max(0.0, x0 - pad), max(0.0, y0 - pad), min(page.width, x1 + pad), min(page.height, y1 + pad))
        equation = Equation(
            id=f"eq-{number}" if number else anchor,
            number=number,
            text=_display_text(ordered),
            location=Location(file=self.relpath, page=page.number, bbox=tuple(round(value, 2) for value in bbox)),
        )
        return _Emitted(page.number, ordered[0].order, equation)

    def _display_regions(self, lines: list[_Line]) -> list[list[_Line]]:
        """Groups of touching lines around body-sized formula lines; smaller scripts and limits join them."""
        seeds = [line for line in lines if line.size >= 0.9 * self.body_size and _is_formula(line)]
        if not seeds:
            return []
        seed_ids = {id(line) for line in seeds}
        near = 2 * self.body_size  # only lines near a seed can belong to a display
        x0, y0, x1, y1 = _union(seeds)
        members = [
            line for line in lines
            if id(line) in seed_ids
            or (x0 - near <= line.x1 and line.x0 <= x1 + near and y0 - near <= line.y1 and line.y0 <= y1 + near)
        ]
        regions: list[list[_Line]] = []
        for line in members:
            touching = [region for region in regions if any(self._touch(line, other) for other in region)]
            regions = [region for region in regions if region not in touching]
            regions.append([line] + [other for region in touching for other in region])
        return [region for region in regions if any(id(line) in seed_ids for line in region)]

    def _touch(self, a: _Line, b: _Line) -> bool:
        reach_x, reach_y = 1.5 * self.body_size, 0.5 * self.body_size
        return a.x0 - reach_x <= b.x1 and b.x0 <= a.x1 + reach_x and a.y0 - reach_y <= b.y1 and b.y0 <= a.y1 + reach_y

    def _numbers_region(self, page: _Page, number: _Line, region: list[_Line]) -> bool:
        """An equation number sits level with its display, to its right, at the column's right edge."""
        top = min(line.y0 for line in region) - 0.5 * self.body_size
        bottom = max(line.y1 for line in region) + 0.5 * self.body_size
        if not (top <= number.centre_y <= bottom and number.x0 > max(line.x1 for line in region)):
            return False
        column = [line.x1 for line in page.lines if line.role == "prose" and line.x0 < number.x0 < line.x1 + 30]
        return number.x1 >= max(column, default=page.width) - 0.04 * page.width

    def _stacked_displays(
        self, region: list[_Line], numbers: list[_Line]
    ) -> list[tuple[_Line | None, list[_Line]]] | None:
        """Body-sized rows centred one above the other, each number on the baseline of its row.

        Such rows are displays of their own (a `gather`, or an `align` set line by line), so a row
        level with no number is an unnumbered display, not part of the nearest numbered one. None
        when the region is not such a stack, or when a number sits on no row's baseline (one number
        centred on a `split`): then the numbers take the lines nearest to them.
        """
        rows = _rows(region)
        if len(rows) < 2 or any(max(line.size for line in row) < 0.9 * self.body_size for row in rows):
            return None
        centres = [(min(line.x0 for line in row) + max(line.x1 for line in row)) / 2 for row in rows]
        if max(centres) - min(centres) > 0.3 * self.body_size:
            return None
        baselines = [max(row, key=lambda line: line.base_size).baseline for row in rows]
        numbered: dict[int, _Line] = {}
        for number in numbers:
            level = next((i for i, y in enumerate(baselines) if abs(number.baseline - y) <= 0.2 * self.body_size), None)
            if level is None:
                return None
            numbered[level] = number
        return [(numbered.get(i), row) for i, row in enumerate(rows)]

    def _is_unnumbered_display(self, page: _Page, region: list[_Line]) -> bool:
        """Only clear cases count: centred in a prose column, right under or above a line of prose."""
        x0, y0, x1, y1 = _union(region)
        near = [
            line for line in page.lines
            if line.role == "prose" and line.x0 <= x0 and line.x1 >= x1
            and (0 <= y0 - line.y1 <= 3 * self.body_size or 0 <= line.y0 - y1 <= 3 * self.body_size)
        ]
        if not near:
            return False
        column_x0 = min(line.x0 for line in near)
        column_x1 = max(line.x1 for line in near)
        width = column_x1 - column_x0
        centred = abs((x0 + x1) / 2 - (column_x0 + column_x1) / 2) <= 0.12 * width
        return centred and x0 >= column_x0 + 2 * self.body_size and x1 - x0 < 0.9 * width

    def _paragraphs(self, page: _Page) -> list[_Emitted]:
        emitted = []
        for role, lines in _prose_runs(page):
            pieces = [lines] if role == "caption" else _split_paragraphs(lines, self.body_size)
            for piece in pieces:
                texts = [_prose_text(line, keep_mark=(role == "footnote" and i == 0)) for i, line in enumerate(piece)]
                text = _join_lines(texts, self.compounds)
                kind = {"caption": "caption", "footnote": "footnote"}.get(role, "text")
                if kind == "text" and BULLET.match(text):
                    kind, text = "item", BULLET.sub("", text)
                paragraph = Paragraph(text=text, kind=kind, location=self._location(page.number, piece))
                emitted.append(_Emitted(page.number, piece[0].order, paragraph))
        return emitted

    # ----------------------------------------------------------------- output

    def _location(self, page: int, lines: list[_Line]) -> Location:
        return Location(file=self.relpath, page=page, bbox=tuple(round(value, 2) for value in _union(lines)))

    def _problem(self, severity: str, message: str, page: int | None = None, lines: list[_Line] | None = None) -> None:
        location = Location(file=self.relpath, page=page)
        if page is not None and lines:
            location = self._location(page, lines)
        self.problems.append(Problem(severity=severity, message=message, location=location))


def _fill_in_reading_order(spec: PaperSpec, emitted: list[_Emitted]) -> None:
    """Put items in reading order; each belongs to the section of the heading last seen before it."""
    section_id = None
    for entry in emitted:
        item = entry.item
        if isinstance(item, Section):
            section_id = item.id
            spec.sections.append(item)
            continue
        item.section_id = section_id
        if isinstance(item, Paragraph):
            spec.paragraphs.append(item)
        elif isinstance(item, Equation):
            spec.equations.append(item)
        elif isinstance(item, Algorithm):
            spec.algorithms.append(item)
        else:
            spec.tables.append(item)


# --------------------------------------------------------------------- lines


@lru_cache(maxsize=None)
def _is_bold_font(font: str) -> bool:
    return bool(BOLD_FONT.search(font))


@lru_cache(maxsize=None)
def _is_math_font(font: str, body_font: str) -> bool:
    return bool(MATH_FONT.search(font)) or (bool(MATH_ROMAN_FONT.match(font)) and not MATH_ROMAN_FONT.match(body_font))


def _font_runs(raw_spans: list[dict]) -> list[_Span]:
    """A line's spans, with neighbours in the same font, size and baseline merged into one.

    MuPDF often gives every word and every space a span of its own; merging them here keeps the
    Python side cheap. A space between two font runs goes with the run before it; a wide gap
    (between an equation and its number) always starts a new run.
    """
    runs: list[_Span] = []
    key = None
    for raw in raw_spans:
        text = raw["text"]
        if not text:
            continue
        x0, y0, x1, y1 = raw["bbox"]
        close = bool(runs) and x0 - runs[-1].bbox[2] <= raw["size"]
        if close and text.isspace():
            runs[-1].text += text
            continue
        raw_key = (raw["font"], raw["size"], raw["flags"], round(raw["origin"][1]))
        if close and raw_key == key:
            run = runs[-1]
            run.text += text
            run.bbox = (run.bbox[0], min(run.bbox[1], y0), x1, max(run.bbox[3], y1))
            continue
        font = raw["font"].split("+")[-1]  # subset fonts are named "ABCDEF+CMMI10"
        runs.append(_Span(
            text=text,
            font=font,
            size=round(raw["size"], 1),
            bold=bool(raw["flags"] & pymupdf.TEXT_FONT_BOLD) or _is_bold_font(font),
            math=False,  # known once the body font is
            raised=bool(raw["flags"] & pymupdf.TEXT_FONT_SUPERSCRIPT),
            baseline=raw["origin"][1],
            bbox=(x0, y0, x1, y1),
        ))
        key = raw_key
    for run in runs:
        run.text = run.text.translate(CHAR_FIXES)
    return runs


def _split_off_equation_number(spans: list[_Span], body_size: float) -> list[list[_Span]]:
    """MuPDF usually gives an equation number a line of its own; when not, cut it off at the gap."""
    if len(spans) >= 2 and EQUATION_NUMBER.match(spans[-1].text.strip()):
        if spans[-1].bbox[0] - spans[-2].bbox[2] >= 3 * body_size:
            return [spans[:-1], spans[-1:]]
    return [spans]


def _line(page: int, order: int, block: int, spans: list[_Span]) -> _Line | None:
    text = " ".join("".join(span.text for span in spans).split())
    if not text:
        return None
    inked = [span for span in spans if span.text.strip()]
    sizes: Counter[float] = Counter()
    bold = in_math = total = 0
    for span in inked:
        chars = len(span.text.replace(" ", ""))
        sizes[span.size] += chars
        total += chars
        bold += chars if span.bold else 0
        in_math += chars if span.math else 0
    size = sizes.most_common(1)[0][0]
    base = max(inked, key=lambda span: span.size)
    line = _Line(
        page=page, order=order, block=block, bbox=_union_boxes(span.bbox for span in inked), spans=spans, text=text,
        size=size, base_size=base.size, baseline=base.baseline, bold_share=bold / total, math_share=in_math / total,
        words=0,  # counted below: telling scripts needs the line's baseline
    )
    # Words in sub- and superscripts ("ℒ_mix") are labels in a formula, not prose.
    line.words = sum(
        word not in OPERATOR_NAMES
        for span in inked
        if not span.math and not _script_of(span, line)
        for word in WORD.findall(span.text)
    )
    return line


def _assign(lines: list[_Line], role: str) -> None:
    for line in lines:
        line.role = role


def _union_boxes(boxes) -> tuple[float, float, float, float]:
    x0s, y0s, x1s, y1s = zip(*boxes)
    return min(x0s), min(y0s), max(x1s), max(y1s)


def _union(lines: list[_Line]) -> tuple[float, float, float, float]:
    return _union_boxes(line.bbox for line in lines)


def _is_formula(line: _Line) -> bool:
    """Mostly math: set in math fonts, or math symbols with hardly a word (math in text fonts)."""
    return line.math_share >= 0.3 or (line.words <= 2 and bool(MATH_SYMBOL.search(line.text)))


def _starts_with_mark(line: _Line) -> bool:
    """A footnote starts with its mark: a raised or smaller number, or a dagger-like symbol."""
    first = next(span for span in line.spans if span.text.strip())
    small_number = first.text.strip().isdigit() and first.size <= 0.85 * line.base_size
    return small_number or _script_of(first, line) == "^" or bool(FOOTNOTE_MARK.match(line.text))


def _rows(lines: list[_Line]) -> list[list[_Line]]:
    """Lines grouped into rows by height on the page, top to bottom, each row left to right."""
    rows: list[list[_Line]] = []
    for line in sorted(lines, key=lambda line: line.centre_y):
        if rows:
            row = rows[-1]
            centre = sum(other.centre_y for other in row) / len(row)
            if abs(line.centre_y - centre) <= 0.4 * max(max(other.height for other in row), line.height):
                row.append(line)
                continue
        rows.append([line])
    return [sorted(row, key=lambda line: line.x0) for row in rows]


def _grid(rows: list[list[_Line]]) -> list[list[str]]:
    """Cells of each row put in the table's columns, read off the rows that have the most cells."""
    if not rows:
        return []
    width = max(len(row) for row in rows)
    full_rows = [row for row in rows if len(row) == width]
    columns = [(min(row[i].x0 for row in full_rows), max(row[i].x1 for row in full_rows)) for i in range(width)]

    def fit(line: _Line, column: tuple[float, float]) -> float:
        overlap = min(line.x1, column[1]) - max(line.x0, column[0])
        return overlap if overlap > 0 else overlap - 1000  # no overlap: the nearest column wins

    grid = []
    for row in rows:
        cells = [""] * width
        for line in row:
            best = max(range(width), key=lambda i: fit(line, columns[i]))
            cells[best] = _clean(f"{cells[best]} {_script_text(line)}")
        grid.append(cells)
    return grid


def _split_by_numbers(region: list[_Line], numbers: list[_Line]) -> list[tuple[_Line, list[_Line]]]:
    """One equation per number: each line of a multi-number display goes to the nearest number."""
    numbers = sorted(numbers, key=lambda line: line.centre_y)
    groups: dict[int, list[_Line]] = defaultdict(list)
    for line in region:
        nearest = min(range(len(numbers)), key=lambda i: abs(numbers[i].centre_y - line.centre_y))
        groups[nearest].append(line)
    return [(numbers[i], groups[i]) for i in range(len(numbers)) if groups[i]]


def _prose_runs(page: _Page) -> list[tuple[str, list[_Line]]]:
    """Runs of prose, footnote or caption lines in stream order.

    A caption runs on until the next "Figure N." / "Table N." block; prose runs on into the next
    block when that starts right under it (MuPDF splits paragraphs at superscripts and at
    single-line blocks); `_split_paragraphs` then cuts runs at paragraph ends.
    """
    runs: list[tuple[str, list[_Line]]] = []
    previous: _Line | None = None
    for line in page.lines:
        if line.role not in ("prose", "footnote", "caption"):
            previous = None
            continue
        if previous is not None and previous.role == line.role and _same_run(previous, line):
            runs[-1][1].append(line)
        else:
            runs.append((line.role, [line]))
        previous = line
    return runs


def _same_run(previous: _Line, line: _Line) -> bool:
    if line.block == previous.block:
        return True
    if line.role == "caption":
        return not CAPTION.match(line.text)
    gap = line.y0 - previous.y1
    return -2 <= gap <= 0.5 * previous.height and line.x0 < previous.x1 and previous.x0 < line.x1


def _caption_runs(page: _Page) -> list[list[_Line]]:
    return [lines for role, lines in _prose_runs(page) if role == "caption"]


def _split_paragraphs(lines: list[_Line], body_size: float) -> list[list[_Line]]:
    """Cut a run of prose where a visual row ends short of its neighbours (a paragraph's last line) or at a bullet."""
    rows: list[list[_Line]] = []
    for line in lines:  # MuPDF may cut one visual row into several lines, at wide spaces or scripts
        if rows and _side_by_side(rows[-1][-1], line):
            rows[-1].append(line)
        else:
            rows.append([line])
    right = [row[-1].x1 for row in rows]
    pieces: list[list[_Line]] = [list(rows[0])]
    for i in range(1, len(rows)):
        short = right[i - 1] < right[i] - 2 * body_size and (i < 2 or right[i - 1] < right[i - 2] - 2 * body_size)
        if short or BULLET.match(rows[i][0].text):
            pieces.append([])
        pieces[-1] += rows[i]
    return pieces


def _side_by_side(previous: _Line, line: _Line) -> bool:
    overlap = min(previous.y1, line.y1) - max(previous.y0, line.y0)
    return overlap >= 0.5 * min(previous.height, line.height) and line.x0 >= previous.x0 - 2


def _join_lines(texts: list[str], compounds: frozenset[str] = frozenset()) -> str:
    """Join lines with spaces, undoing end-of-line hyphenation ("regu-" + "larization").

    A hyphen stays when the document spells the word with it elsewhere ("fully-" + "connected").
    """
    joined = ""
    for text in texts:
        if not joined:
            joined = text
        elif joined.endswith("-") and joined[-2:-1].isalpha():
            head = joined.rsplit(None, 1)[-1]
            tail = text.split(None, 1)[0] if text else ""
            kept = not text[:1].islower() or f"{head}{tail}".lower().strip(".,;:)") in compounds
            joined = joined + text if kept else joined[:-1] + text
        else:
            joined = f"{joined} {text}"
    return _clean(joined)


# --------------------------------------------------------------------- text of lines


def _script_of(span: _Span, line: _Line) -> str:
    """ "^" for a superscript, "_" for a subscript, "" for text on the line's baseline."""
    if span.size > 0.85 * line.base_size:
        return ""
    shift = line.baseline - span.baseline
    if shift > 0.12 * line.base_size or (span.raised and shift >= 0):
        return "^"
    if shift < -0.12 * line.base_size:
        return "_"
    return ""


def _with_scripts(spans: list[_Span], line: _Line) -> str:
    """Spans as text, sub- and superscripts marked TeX-style: y^{LS}_k."""
    parts: list[tuple[str, str]] = []
    for span in spans:
        script = _script_of(span, line) if span.text.strip() else ""
        if parts and parts[-1][0] == script:
            parts[-1] = (script, parts[-1][1] + span.text)
        else:
            parts.append((script, span.text))
    out = []
    for script, text in parts:
        if script:
            core = text.strip()
            lead = " " if text[:1].isspace() else ""
            trail = " " if text[-1:].isspace() else ""
            out.append(lead + (f"{script}{core}" if len(core) == 1 else f"{script}{{{core}}}") + trail)
        else:
            out.append(text)
    return "".join(out)


def _script_text(line: _Line) -> str:
    return _clean(_with_scripts(line.spans, line))


def _prose_text(line: _Line, keep_mark: bool = False) -> str:
    """A line of prose: runs of math-font spans become `$...$`, footnote and citation marks are dropped."""
    out: list[str] = []
    math_run: list[_Span] = []

    def close_math_run() -> None:
        text = _with_scripts(math_run, line)
        if text.strip():
            lead = " " if text[:1].isspace() else ""
            trail = " " if text[-1:].isspace() else ""
            out.append(f"{lead}${text.strip()}${trail}")
        math_run.clear()

    for i, span in enumerate(line.spans):
        if span.math or (math_run and (not span.text.strip() or _script_of(span, line))):
            math_run.append(span)
            continue
        if math_run:
            close_math_run()
        if _script_of(span, line) == "^" and span.text.strip():
            if _is_exponent(span.text, "".join(out)):
                out.append(f"^{{{span.text.strip()}}}")
                continue
            if keep_mark and i == 0:
                out.append(span.text.strip() + " ")
            continue  # a footnote or citation mark
        out.append(span.text)
    if math_run:
        close_math_run()
    return _clean("".join(out))


POWER_OF_TEN = re.compile(r"\d\s*[×x·]\s*10$")


def _is_exponent(raised: str, before: str) -> bool:
    """A raised `−4` after `3 × 10` (set in text fonts) is an exponent, not a footnote mark."""
    raised = raised.strip()
    return raised[:1] in "−-" or (raised.isdigit() and POWER_OF_TEN.search(before.rstrip()) is not None)


def _display_text(lines: list[_Line]) -> str:
    """A display's lines in stream order; a small line tucked against the previous one is its script."""
    out: list[str] = []
    previous: _Line | None = None
    for line in lines:
        text = _script_text(line)
        tucked = (
            previous is not None
            and line.base_size <= 0.85 * previous.base_size
            and line.y0 < previous.y1 and previous.y0 < line.y1
            and previous.x0 <= line.x0 <= previous.x1 + 2
        )
        if tucked:
            script = "^" if line.baseline < previous.baseline - 0.15 * previous.base_size else "_"
            out[-1] += f"{script}{text}" if len(text) == 1 else f"{script}{{{text}}}"
            continue
        out.append(text)
        previous = line
    return _clean(" ".join(out))


def _clean(text: str) -> str:
    """Output text: single spaces, no unnamed glyphs, small caps spelled with plain capitals."""
    text = " ".join(text.replace(UNNAMED_GLYPH, "").split())
    if "ſ" in text or "ı" in text or "ĸ" in text:
        text = SMALL_CAPS_WORD.sub(_fix_small_caps, text)
    return text


def _fix_small_caps(match: re.Match) -> str:
    word = match[0]
    others = [char for char in word if char.isalpha() and char not in "ſıĸ"]
    return word.translate(SMALL_CAPS_FIXES) if all(char.isupper() for char in others) else word


# --------------------------------------------------------------------- headings


def _parse_heading(text: str) -> tuple[str | None, str]:
    """("3.2", "Title") from "3.2 Title"; ("A", "Proofs") from "Appendix A: Proofs"; (None, text) otherwise."""
    appendix = APPENDIX_HEADING.match(text)
    if appendix and appendix["number"]:
        return appendix["number"], appendix["title"] or "Appendix"
    numbered = SECTION_NUMBER.match(text)
    if numbered:
        return numbered["number"], numbered["title"].strip()
    return None, text


def _style(candidate: _HeadingCandidate) -> tuple[float, bool]:
    return round(candidate.size * 2) / 2, candidate.bold


def _style_level(candidate: _HeadingCandidate, styles: dict[tuple[float, bool], int]) -> int | None:
    """The level of numbered headings set in the same size and weight, if there are any."""
    size, bold = _style(candidate)
    return next((level for (s, b), level in styles.items() if b == bold and abs(s - size) <= 0.5), None)

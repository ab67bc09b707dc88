"""Typeset examples/paper/paper.pdf from the example paper's LaTeX.

There is no TeX installation to rely on, so the PDF is laid out with PyMuPDF's Story (HTML + CSS)
from what paperlens' LaTeX reader reads out of `examples/paper/main.tex`. The PDF and the LaTeX are
thus the same document by construction, which lets tests compare the PDF reading with the LaTeX
reading. The output is deterministic: rerunning on unchanged sources gives the same bytes.

    .venv/bin/python examples/make_pdf.py
"""

from __future__ import annotations

import html
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pymupdf

from paperlens.pipeline.ingest.latex import read_latex
from paperlens.pipeline.ingest.positions import LineIndex
from paperlens.schemas import Location, PaperSpec, Paragraph

PAPER = Path(__file__).resolve().parent / "paper"
OUTPUT = PAPER / "paper.pdf"

PAGE = pymupdf.paper_rect("letter")
MARGIN_X, MARGIN_TOP, MARGIN_BOTTOM = 90, 80, 90
BODY = pymupdf.Rect(MARGIN_X, MARGIN_TOP, PAGE.width - MARGIN_X, PAGE.height - MARGIN_BOTTOM)
PAGE_NUMBER_BOX = pymupdf.Rect(MARGIN_X, PAGE.height - 60, PAGE.width - MARGIN_X, PAGE.height - 40)
FOOTNOTE_GAP = 8  # points between the body text and the footnote rule
FOOTNOTE_SLACK = 2  # a box exactly as high as the measured footnotes does not take them
MAX_LAYOUTS = 6
MAX_PAGES = 50  # a Story that cannot place an element asks for pages forever

CSS = """
body { margin: 0; padding: 0; font-family: serif; font-size: 10pt; }
p { margin: 0 0 6pt 0; text-align: justify; }
h1.title { font-size: 17pt; font-weight: normal; text-align: center; margin: 0 0 18pt 0; }
h2 { font-size: 14pt; font-weight: bold; margin: 14pt 0 7pt 0; }
h3 { font-size: 12pt; font-weight: bold; margin: 10pt 0 5pt 0; }
p.abstract-label { font-weight: bold; text-align: center; margin: 0 0 4pt 0; }
p.abstract { margin: 0 2.5em 10pt 2.5em; }
p.equation { text-align: center; white-space: nowrap; margin: 5pt 0 7pt 0; }
p.equation-number { text-align: right; margin: 0; }
p.float-title { font-weight: bold; margin: 8pt 0 3pt 0; padding: 2pt 0; border-top: 1px solid black; border-bottom: 0.5px solid black; }
p.step { margin: 0 0 1.5pt 0; text-align: left; }
span.line-number { font-size: 8pt; }
p.caption { text-align: center; margin: 10pt 0 4pt 0; }
table.data { width: 100%; margin: 0 0 10pt 0; border-collapse: collapse; }
table.data td { padding: 1.5pt 6pt; }
td.rule-top { border-top: 1px solid black; }
td.rule-bottom { border-bottom: 1px solid black; }
td.rule-mid { border-bottom: 0.5px solid black; }
p.algorithm-end { margin: 3pt 0 10pt 0; border-top: 0.5px solid black; }
p.footnote { font-size: 8pt; margin: 0; border-top: 0.5px solid black; padding-top: 3pt; }
p.page-number { text-align: center; margin: 0; }
"""

# LaTeX math → Unicode. Anything not listed makes the script fail instead of printing garbage.
SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ϵ", "varepsilon": "ε", "zeta": "ζ",
    "eta": "η", "theta": "θ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ",
    "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "upsilon": "υ", "phi": "ϕ", "varphi": "φ", "chi": "χ",
    "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Pi": "Π",
    "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
    "partial": "∂", "nabla": "∇", "infty": "∞", "ell": "ℓ", "sum": "∑", "prod": "∏",
    "dots": "…", "ldots": "…", "cdots": "⋯", "{": "{", "}": "}", "%": "%",
    "lVert": "‖", "rVert": "‖", "|": "‖", "lvert": "|", "rvert": "|", "vert": "|",
    ",": "\u2009", ";": " ", ":": " ", "!": "", "quad": "\u2003", "qquad": "\u2003\u2003",
}  # fmt: skip
# Relations and binary operators: spaced on both sides, except in sub- and superscripts.
OPERATORS = {
    "sim": "∼", "times": "×", "cdot": "·", "gets": "←", "leftarrow": "←", "to": "→", "rightarrow": "→",
    "leq": "≤", "le": "≤", "geq": "≥", "ge": "≥", "neq": "≠", "approx": "≈", "in": "∈", "propto": "∝",
    "pm": "±", "mid": "|", "odot": "⊙", "otimes": "⊗",
}  # fmt: skip
FUNCTIONS = {"log", "exp", "max", "min", "sin", "cos", "arg", "lim", "sup", "inf", "det"}
ACCENTS = {"hat": "\u0302", "tilde": "\u0303", "bar": "\u0304", "dot": "\u0307", "vec": "\u20d7"}
SCRIPT_LETTERS = {"B": "ℬ", "E": "ℰ", "F": "ℱ", "H": "ℋ", "I": "ℐ", "L": "ℒ", "M": "ℳ", "R": "ℛ"}
BLACKBOARD_LETTERS = {"R": "ℝ", "N": "ℕ", "Z": "ℤ", "Q": "ℚ", "C": "ℂ", "E": "𝔼"}
SIZING = {"left", "right", "middle", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr"}
UPRIGHT = {"mathrm", "operatorname", "text", "textrm"}

_MATH_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|\s+|.", re.S)
_INLINE_MATH = re.compile(r"\$([^$]+)\$")
# algpseudocode's keywords, bold as it prints them, and the steps that open an indented block.
_KEYWORDS = re.compile(r"^(end for|end while|end if|for|while|if|else|repeat|until|return)\b|\b(do|then)$")
_BLOCK_OPENER = re.compile(r"(for|while|if)\b")


class MathToHtml:
    """One LaTeX math expression as HTML: italic letters, <sup>/<sub>, Unicode symbols."""

    def __init__(self, latex: str) -> None:
        self.tokens = _MATH_TOKEN.findall(latex)
        self.position = 0
        self.script_depth = 0

    def convert(self) -> str:
        return self._sequence(inside_braces=False).replace("</i><i>", "").strip()

    def _next(self) -> str | None:
        while self.position < len(self.tokens) and self.tokens[self.position].isspace():
            self.position += 1
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def _sequence(self, inside_braces: bool) -> str:
        out: list[str] = []
        while (token := self._next()) is not None:
            if token == "}":
                self.position += 1
                if inside_braces:
                    break
                continue
            out.append(self._atom("".join(out)))
        return "".join(out)

    def _argument(self) -> str:
        if self._next() == "{":
            self.position += 1
            return self._sequence(inside_braces=True)
        return self._atom("")

    def _raw_argument(self) -> str:
        """A braced argument as written (for \\text), spaces kept."""
        if self._next() != "{":
            return html.escape(self.tokens[self._advance()])
        self.position += 1
        depth, pieces = 1, []
        while self.position < len(self.tokens):
            token = self.tokens[self._advance()]
            depth += {"{": 1, "}": -1}.get(token, 0)
            if depth == 0:
                break
            pieces.append(token)
        return html.escape("".join(pieces))

    def _advance(self) -> int:
        self.position += 1
        return self.position - 1

    def _script(self, tag: str) -> str:
        self.script_depth += 1
        content = self._argument()
        self.script_depth -= 1
        return f"<{tag}>{content}</{tag}>"

    def _operator(self, symbol: str) -> str:
        return symbol if self.script_depth else f" {symbol} "

    def _atom(self, before: str) -> str:
        token = self.tokens[self._advance()]
        if token == "{":
            return self._sequence(inside_braces=True)
        if token in ("^", "_"):
            return self._script("sup" if token == "^" else "sub")
        if token == "&":
            return ""
        if token.startswith("\\"):
            return self._command(token[1:], before)
        if token.isalpha():
            return f"<i>{token}</i>"
        if token in "=<>+":
            return self._operator(html.escape(token))
        if token == "-":
            unary = not before.strip() or before.rstrip()[-1] in "([{=,∼←"
            return "−" if unary else self._operator("−")
        if token == ",":
            return ", "
        return html.escape(token)

    def _command(self, name: str, before: str) -> str:
        if name in SYMBOLS:
            return SYMBOLS[name]
        if name in OPERATORS:
            return self._operator(OPERATORS[name])
        if name in SIZING:
            if self._next() == ".":  # \left. and \right. draw nothing
                self.position += 1
            return ""
        if name in FUNCTIONS:  # upright, set off from its neighbours by thin spaces as TeX does
            following = self._next()
            space_before = "\u2009" if before and not before.endswith((" ", "(", "\u2009")) else ""
            space_after = "" if following in (None, "(", "^", "_", "\\left", "\\big", "\\Big") else "\u2009"
            return f"{space_before}{name}{space_after}"
        if name in ACCENTS:
            return self._argument() + ACCENTS[name]
        if name in UPRIGHT:
            return self._raw_argument() if name.startswith("text") else re.sub(r"</?i>", "", self._argument())
        if name == "mathbf":
            return "<b>" + re.sub(r"</?i>", "", self._argument()) + "</b>"
        if name in ("mathcal", "mathbb"):
            letters = SCRIPT_LETTERS if name == "mathcal" else BLACKBOARD_LETTERS
            return "".join(letters.get(c, c) for c in re.sub(r"<[^>]+>", "", self._argument()))
        if name in ("frac", "tfrac", "dfrac"):
            return f"{_grouped(self._argument())}/{_grouped(self._argument())}"
        raise ValueError(f"make_pdf.py has no rendering for \\{name}; add it to SYMBOLS or OPERATORS")


def _grouped(part: str) -> str:
    """A fraction's numerator or denominator, in parentheses when it is more than one term."""
    plain = re.sub(r"<[^>]+>", "", re.sub(r"<(su[bp])>.*?</\1>", "", part))
    return f"({part})" if re.search(r"[\s+−=/]", plain) else part


def math_html(latex: str) -> str:
    return MathToHtml(latex).convert()


def prose_html(text: str, citations: dict[str, int]) -> str:
    """Prose with `$...$` math typeset and `[key]` citations numbered like `\\bibitem` order."""
    pieces: list[str] = []
    last = 0
    for match in _INLINE_MATH.finditer(text):
        pieces.append(_cited(html.escape(text[last : match.start()]), citations))
        pieces.append(math_html(match.group(1)))
        last = match.end()
    pieces.append(_cited(html.escape(text[last:]), citations))
    return "".join(pieces)


def _cited(text: str, citations: dict[str, int]) -> str:
    def number(match: re.Match[str]) -> str:
        keys = [key.strip() for key in match.group(1).split(",")]
        if not all(key in citations for key in keys):
            return match.group(0)
        return "[" + ", ".join(str(citations[key]) for key in keys) + "]"

    return re.sub(r"\[([^\]]+)\]", number, text)


# -- the bibliography (the reader keeps no references, so they come from the source) --------------

_BIBLIOGRAPHY = re.compile(r"\\begin\{thebibliography\}\{[^}]*\}(.*?)\\end\{thebibliography\}", re.S)
_BIBITEM = re.compile(r"\\bibitem\{([^}]+)\}(.*?)(?=\\bibitem|$)", re.S)


@dataclass
class Bibliography:
    location: Location
    entries: list[tuple[str, str]]  # (key, entry as HTML) in \bibitem order


def bibliography(spec: PaperSpec) -> Bibliography | None:
    for rel in spec.files:
        source = (Path(spec.root) / rel).read_text(encoding="utf-8")
        if (environment := _BIBLIOGRAPHY.search(source)) is None:
            continue
        entries = []
        for key, body in _BIBITEM.findall(environment.group(1)):
            text = html.escape(body.replace("\\newblock", " ").replace("~", " "))
            text = re.sub(r"\\emph\{([^}]*)\}", r"<i>\1</i>", text)
            if "\\" in text:
                raise ValueError(f"bibliography entry {key} holds LaTeX that make_pdf.py cannot render: {text}")
            entries.append((key, " ".join(text.split())))
        line, column = LineIndex(source).position(environment.start())
        return Bibliography(Location(file=rel, line=line, column=column), entries)
    return None


# -- document order ---------------------------------------------------------------------------

_INPUT = re.compile(r"^[^%\n]*?\\(?:input|include)\{([^}]+)\}", re.M)


def input_positions(root: Path, rel: str, prefix: tuple[int, ...] = ()) -> dict[str, tuple[int, ...]]:
    """Each file's place in the flattened document: the (line, column)s of the \\inputs leading to it."""
    positions = {rel: prefix}
    source = (root / rel).read_text(encoding="utf-8")
    index = LineIndex(source)
    for match in _INPUT.finditer(source):
        name = match.group(1) if match.group(1).endswith(".tex") else match.group(1) + ".tex"
        positions.update(input_positions(root, name, (*prefix, *index.position(match.start(1)))))
    return positions


# -- blocks of the document ---------------------------------------------------------------------


@dataclass
class Footnote:
    mark_id: str
    html: str


def footnote_offset(paragraph: Paragraph, location: Location) -> int:
    """The offset in the paragraph's text of the source position `location` (where a footnote was)."""
    target = (location.line or 0, location.column or 0)
    offset = 0
    ends = [anchor[0] for anchor in paragraph.offsets[1:]] + [len(paragraph.text)]
    for (start, line, column), end in zip(paragraph.offsets, ends):
        if (line, column) > target:
            break
        offset = end if line < target[0] else start + min(end - start, target[1] - column)
    return offset


@dataclass
class Block:
    key: tuple[int, ...]  # place in the flattened source
    html: str
    float_id: str | None = None  # tables and algorithms: kept on one page, like LaTeX floats


class DocumentHtml:
    """The paper as one HTML flow, blocks sorted into source order, and its footnotes."""

    def __init__(self, spec: PaperSpec) -> None:
        self.spec = spec
        self.order = input_positions(Path(spec.root), spec.main_file)
        self.bibliography = bibliography(spec)
        entries = self.bibliography.entries if self.bibliography else []
        self.citations = {key: n for n, (key, _) in enumerate(entries, start=1)}
        self.footnotes: list[Footnote] = []
        self.equation_numbers: dict[str, str] = {}  # element id → "(N)"
        self.blocks = sorted(self._blocks(), key=lambda block: block.key)
        self.float_ids = [block.float_id for block in self.blocks if block.float_id]

    def html(self, break_before: set[str]) -> str:
        """The document, with a page break before each float in `break_before`."""
        title = f'<h1 class="title">{html.escape(self.spec.title)}</h1>' if self.spec.title else ""
        page_break = '<p style="page-break-before:always"></p>'
        return title + "".join(
            (page_break if block.float_id in break_before else "") + block.html for block in self.blocks
        )

    def key(self, location: Location) -> tuple[int, ...]:
        return (*self.order[location.file], location.line or 0, location.column or 0)

    def _blocks(self) -> list[Block]:
        spec = self.spec
        blocks = self._prose_blocks()
        for section in spec.sections:
            tag = "h2" if section.level == 1 else "h3"
            number = f"{section.number}\u2003" if section.number else ""
            blocks.append(Block(self.key(section.location), f"<{tag}>{number}{html.escape(section.title)}</{tag}>"))
        for n, equation in enumerate(spec.equations, start=1):
            # The number is drawn at the right margin once the layout says where the line landed.
            equation_id = f"equation-{n}"
            if equation.number:
                self.equation_numbers[equation_id] = f"({equation.number})"
            math = math_html(equation.latex or equation.text)
            blocks.append(Block(self.key(equation.location), f'<p class="equation" id="{equation_id}">{math}</p>'))
        for algorithm in spec.algorithms:
            float_id = f"algorithm-{algorithm.number}"
            algorithm_html = self._algorithm(float_id, algorithm.number, algorithm.title, algorithm.steps)
            blocks.append(Block(self.key(algorithm.location), algorithm_html, float_id))
        for table in spec.tables:
            float_id = f"table-{table.number}"
            table_html = self._table(float_id, table.number, table.caption, table.rows)
            blocks.append(Block(self.key(table.location), table_html, float_id))
        if self.bibliography:
            items = "".join(
                f'<p class="step">[{n}] {entry}</p>' for n, (_, entry) in enumerate(self.bibliography.entries, start=1)
            )
            blocks.append(Block(self.key(self.bibliography.location), f"<h2>References</h2>{items}"))
        return blocks

    def _prose_blocks(self) -> list[Block]:
        """Paragraphs with their footnote marks; caption paragraphs are drawn by their floats."""
        prose = [p for p in self.spec.paragraphs if p.kind in ("text", "item")]
        footnotes_of: dict[int, list[tuple[int, Paragraph]]] = {}
        for footnote in (p for p in self.spec.paragraphs if p.kind == "footnote"):
            host = max(
                (i for i, p in enumerate(prose) if self.key(p.location) <= self.key(footnote.location)),
                key=lambda i: self.key(prose[i].location),
            )
            footnotes_of.setdefault(host, []).append((footnote_offset(prose[host], footnote.location), footnote))
        blocks = []
        in_abstract = False
        for i, paragraph in enumerate(prose):
            pieces, last = [], 0
            for offset, footnote in sorted(footnotes_of.get(i, []), key=lambda item: item[0]):
                number = len(self.footnotes) + 1
                mark_id = f"footnote-mark-{number}"
                pieces.append(self._prose(paragraph.text[last:offset]))
                pieces.append(f'<sup id="{mark_id}">{number}</sup>')
                self.footnotes.append(Footnote(mark_id, f"<sup>{number}</sup> {self._prose(footnote.text)}"))
                last = offset
            pieces.append(self._prose(paragraph.text[last:]))
            text = "".join(pieces)
            if paragraph.section_id is None:  # prose before the first section: the abstract
                label = "" if in_abstract else '<p class="abstract-label">Abstract</p>'
                blocks.append(Block(self.key(paragraph.location), f'{label}<p class="abstract">{text}</p>'))
                in_abstract = True
            else:
                blocks.append(Block(self.key(paragraph.location), f"<p>{text}</p>"))
        return blocks

    def _prose(self, text: str) -> str:
        return prose_html(text, self.citations)

    def _algorithm(self, float_id: str, number: str | None, title: str, steps: list[str]) -> str:
        lines = [f'<p class="float-title" id="{float_id}-start">Algorithm {number}: {html.escape(title)}</p>']
        depth = 0
        for n, step in enumerate(steps, start=1):
            if step.startswith("end "):
                depth -= 1
            text = _KEYWORDS.sub(lambda m: f"<b>{m.group(0)}</b>", self._prose(step))
            indent = "\u2003" * depth  # after the line number, which stays at the margin
            lines.append(f'<p class="step"><span class="line-number">{n}:</span> {indent}{text}</p>')
            if _BLOCK_OPENER.match(step):
                depth += 1
        lines.append(f'<p class="algorithm-end" id="{float_id}-end"></p>')
        return "".join(lines)

    def _table(self, float_id: str, number: str | None, caption: str, rows: list[list[str]]) -> str:
        """A booktabs-style table, centred by empty side columns (Story cannot centre a table)."""
        width = max(len(row) for row in rows)
        side = 20
        cell_width = (100 - 2 * side) // width
        body = []
        for i, row in enumerate(rows):
            rule = "rule-top rule-mid" if i == 0 else "rule-bottom" if i == len(rows) - 1 else ""
            texts = [self._prose(cell) if i else f"<b>{self._prose(cell)}</b>" for cell in row]
            texts += [""] * (width - len(row))
            cells = "".join(f'<td class="{rule}" style="width:{cell_width}%">{text}</td>' for text in texts)
            end_id = f' id="{float_id}-end"' if i == len(rows) - 1 else ""
            body.append(f'<tr><td style="width:{side}%"{end_id}></td>{cells}<td style="width:{side}%"></td></tr>')
        caption_html = f'<p class="caption" id="{float_id}-start">Table {number}: {self._prose(caption)}</p>'
        return caption_html + f'<table class="data">{"".join(body)}</table>'


# -- layout -----------------------------------------------------------------------------------


def typeset(document: DocumentHtml) -> bytes:
    """Lay the document out: footnotes at the foot of their mark's page, floats never split.

    Room kept for footnotes can push a mark to the next page, and a page break before a split
    float moves what follows, so layout repeats until both settle.
    """
    placement: dict[str, int] = {}
    break_before: set[str] = set()
    for _ in range(MAX_LAYOUTS):
        layout = Layout(document, placement)
        pdf = layout.run(document.html(break_before))
        marks = {footnote.mark_id: layout.pages[footnote.mark_id] for footnote in document.footnotes}
        split = {f for f in document.float_ids if layout.pages[f"{f}-start"] != layout.pages[f"{f}-end"]}
        if marks == placement and split <= break_before:
            return pdf
        placement, break_before = marks, break_before | split
    raise RuntimeError(f"layout does not settle after {MAX_LAYOUTS} passes")


class Layout:
    """One layout pass. Records the page on which each element with an id begins."""

    def __init__(self, document: DocumentHtml, footnote_pages: dict[str, int]) -> None:
        self.document = document
        self.footnote_pages = footnote_pages
        self.pages: dict[str, int] = {}
        self.equations_on_page: list[tuple[str, pymupdf.Rect]] = []

    def run(self, body: str) -> bytes:
        story = pymupdf.Story(html=body, user_css=CSS)
        output = io.BytesIO()
        writer = pymupdf.DocumentWriter(output)
        page_number, more = 0, True
        while more:
            page_number += 1
            if page_number > MAX_PAGES:
                raise RuntimeError(f"the layout runs past {MAX_PAGES} pages; some element never fits on a page")
            on_page = [f for f in self.document.footnotes if self.footnote_pages.get(f.mark_id) == page_number]
            footnote_html = "".join(f'<p class="footnote">{f.html}</p>' for f in on_page)
            footnote_height = _height(footnote_html) + FOOTNOTE_SLACK if on_page else 0.0
            device = writer.begin_page(PAGE)
            self.equations_on_page = []
            more, _ = story.place(BODY + (0, 0, 0, -(footnote_height + FOOTNOTE_GAP) if on_page else 0))
            # PyMuPDF counts a bound method's `self` and wants a one-argument function.
            story.element_positions(lambda position: self._record(position), {"page_number": page_number})
            story.draw(device)
            for equation_id, rect in self.equations_on_page:
                number = self.document.equation_numbers[equation_id]
                _draw(
                    device, f'<p class="equation-number">{number}</p>', pymupdf.Rect(BODY.x0, rect.y0, BODY.x1, rect.y1)
                )
            if on_page:
                _draw(device, footnote_html, pymupdf.Rect(BODY.x0, BODY.y1 - footnote_height, BODY.x1, BODY.y1))
            _draw(device, f'<p class="page-number">{page_number}</p>', PAGE_NUMBER_BOX)
            writer.end_page()
        writer.close()
        return output.getvalue()

    def _record(self, position) -> None:
        if not position.id or not position.open_close & 1:
            return
        self.pages.setdefault(position.id, position.page_number)
        if position.id in self.document.equation_numbers:
            self.equations_on_page.append((position.id, pymupdf.Rect(position.rect)))


def _height(html_text: str) -> float:
    _, filled = pymupdf.Story(html=html_text, user_css=CSS).place(pymupdf.Rect(BODY.x0, 0, BODY.x1, BODY.height))
    return pymupdf.Rect(filled).height


def _draw(device: pymupdf.Device, html_text: str, rect: pymupdf.Rect) -> None:
    story = pymupdf.Story(html=html_text, user_css=CSS)
    story.place(rect)
    story.draw(device)


def main() -> None:
    spec = read_latex(PAPER / "main.tex", PAPER)
    document = pymupdf.open("pdf", typeset(DocumentHtml(spec)))
    # Fixed metadata and /ID: the file changes only when the paper does.
    document.set_metadata({"title": spec.title or "", "creator": "examples/make_pdf.py", "producer": "PyMuPDF Story"})
    document.save(OUTPUT, garbage=4, deflate=True, no_new_id=True)
    print(f"wrote {OUTPUT} ({document.page_count} pages)")


if __name__ == "__main__":
    main()

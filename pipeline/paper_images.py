"""Paper images for the editor: an equation as a small PNG for a hover, and a whole PDF page for the paper view.

PDF papers: the equation's box is cropped from its page with PyMuPDF, so it looks as in the paper.
LaTeX and Markdown papers: the source is rewritten into what matplotlib's mathtext understands and
typeset with it (no TeX installation needed). mathtext sets one line of math, so rows (`\\`) and
alignment columns (`&`) are laid out here: each cell is typeset on its own and the cells are placed on
a grid, aligned as `align`, `gather`, `cases` or a matrix would align them; `cases` and matrices
inside a row become a grid of their own between stretched delimiters.

Images are grayscale, dark ink on white (readable in light and dark editor themes, like a clip of
the paper), at SCALE device pixels per CSS pixel: a paper's 10 pt text comes out at 10 pt on a
96-dpi screen when shown at `width / SCALE`. An image bigger than MAX_BYTES is re-made smaller, and
dropped when even that does not fit. Nothing here raises on bad input: an equation that cannot be
rendered gives None (the caller then shows the LaTeX source), with the reason logged at debug level.

matplotlib and PyMuPDF are imported on the first image, not with this module. No pyplot, no
backend switch, no rcParams change: mathtext is driven through `MathTextParser("agg")` directly.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import logging
import math
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from ..schemas import Equation, Location, PaperSpec
from .errors import PaperError
from .ingest.sources import read_source

log = logging.getLogger(__name__)

SCALE = 2
"""Device pixels per CSS pixel: show an image at (width / SCALE, height / SCALE) CSS pixels."""
DPI = 96 * SCALE  # 192: a PDF point is 4/3 CSS pixel (96 px per 72 pt inch), times SCALE
FONT_SIZE = 10.0
"""Points; LaTeX papers are set at the size of a typical paper's body text."""
PDF_MARGIN = 2.0
"""Points of paper shown around a PDF equation's box, less where a neighbouring line's ink begins."""
INK = 235
"""A gray level below this is ink (255 is white paper)."""
MAX_BYTES = 48_000
"""Hard cap on one PNG (a data: URI is a third bigger); aim is well under 40 KB."""
MAX_WIDTH = 1800
MAX_HEIGHT = 900
"""Pixel caps: a bigger image is rendered at a smaller scale rather than cropped."""
SHRINK_STEPS = (1.0, 0.75, 0.55, 0.4)
"""Scales tried in turn until the image fits MAX_BYTES."""
MAX_LATEX_CHARS = 8000
"""Longer sources are not rendered (bounded time per hover)."""
CACHE_ENTRIES = 256
CACHE_BYTES = 16_000_000


@dataclass(frozen=True)
class EquationImage:
    """A rendered equation: PNG bytes and their size in device pixels."""

    png: bytes
    width: int
    height: int
    scale: int = SCALE

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


# ---------------------------------------------------------------------------------------------
# Public API


def equation_image(spec: PaperSpec, equation: Equation) -> EquationImage | None:
    """The equation as an image, or None when it cannot be rendered. Cached; never raises."""
    try:
        key = _cache_key(spec, equation)
    except Exception:
        log.debug("equation %r: no cache key", getattr(equation, "id", None), exc_info=True)
        return None
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    try:
        image, cacheable = _render_equation(spec, equation)
    except Exception:
        log.debug("equation %s: rendering failed", equation.id, exc_info=True)
        image, cacheable = None, True
    if cacheable:
        _remember(key, image)
    return image


def equation_png(spec: PaperSpec, equation: Equation) -> bytes | None:
    """PNG bytes of the equation, or None when it cannot be rendered."""
    image = equation_image(spec, equation)
    return image.png if image else None


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


# ---------------------------------------------------------------------------------------------
# Cache: by the content of every file the spec was read from and the equation itself.

_cache: OrderedDict[tuple, EquationImage | None] = OrderedDict()
_cache_lock = threading.Lock()


def _cache_key(spec: PaperSpec, equation: Equation) -> tuple:
    location = equation.location
    return (
        tuple(sorted(spec.files.items())),
        spec.source_format,
        spec.root,
        equation.id,
        equation.latex,
        location.file,
        location.page,
        location.bbox,
    )


def _remember(key: tuple, image: EquationImage | None) -> None:
    with _cache_lock:
        _cache[key] = image
        _cache.move_to_end(key)
        total = sum(len(value.png) for value in _cache.values() if value)
        while len(_cache) > CACHE_ENTRIES or (total > CACHE_BYTES and len(_cache) > 1):
            _, dropped = _cache.popitem(last=False)
            total -= len(dropped.png) if dropped else 0


def _render_equation(spec: PaperSpec, equation: Equation) -> tuple[EquationImage | None, bool]:
    """The image and whether the answer may be cached (not when a file could not be read)."""
    if spec.source_format == "pdf":
        return _render_pdf(spec, equation)
    if not equation.latex or not equation.latex.strip():
        log.debug("equation %s: no LaTeX source", equation.id)
        return None, True
    labels = {eq.label: eq.number for eq in spec.equations if eq.label and eq.number}
    return render_latex(equation.latex, labels=labels), True


# ---------------------------------------------------------------------------------------------
# PDF: crop the equation's box from its page.


def pdf_clip(page_rect: tuple[float, float, float, float], bbox: tuple[float, float, float, float]):
    """The region cropped for a box: the box plus PDF_MARGIN, within the page; None when empty."""
    x0, y0, x1, y1 = bbox
    px0, py0, px1, py1 = page_rect
    clip = (max(px0, x0 - PDF_MARGIN), max(py0, y0 - PDF_MARGIN), min(px1, x1 + PDF_MARGIN), min(py1, y1 + PDF_MARGIN))
    if not all(math.isfinite(value) for value in clip) or clip[2] - clip[0] < 1 or clip[3] - clip[1] < 1:
        return None
    return clip


def _clean_margins(pixmap, outer: tuple, bbox: tuple, dpi: int) -> tuple:
    """`outer` with each margin cut back to just before the first ink of a neighbouring line.

    The box itself hugs the equation with a little room; the margin around it is for looks, and
    must not show the bottom of the line above or the top of the line below.
    """
    scale = dpi / 72
    width, height, stride, samples = pixmap.width, pixmap.height, pixmap.stride, pixmap.samples

    def row_inked(y: int) -> bool:
        return min(samples[y * stride : y * stride + width]) < INK

    def column_inked(x: int, top: int, bottom: int) -> bool:
        return min(samples[y * stride + x] for y in range(top, bottom)) < INK

    def clean(edge: int, outwards: range, inked) -> int:
        """Pixels of margin that stay clean, from the box's edge outwards."""
        kept = 0
        for index in outwards:
            if inked(index):
                return max(0, kept - 1)  # one blank pixel short of the neighbour's ink
            kept += 1
        return kept

    x0, y0, x1, y1 = outer
    top_edge = max(0, min(height, math.floor((bbox[1] - y0) * scale)))
    bottom_edge = max(0, min(height, math.ceil((bbox[3] - y0) * scale)))
    left_edge = max(0, min(width, math.floor((bbox[0] - x0) * scale)))
    right_edge = max(0, min(width, math.ceil((bbox[2] - x0) * scale)))
    top = clean(top_edge, range(top_edge - 1, -1, -1), row_inked)
    bottom = clean(bottom_edge, range(bottom_edge, height), row_inked)
    rows = (top_edge - top, bottom_edge + bottom)
    left = clean(left_edge, range(left_edge - 1, -1, -1), lambda x: column_inked(x, *rows))
    right = clean(right_edge, range(right_edge, width), lambda x: column_inked(x, *rows))
    return (  # a side with a clean margin keeps it exactly (the pixmap was rounded outwards)
        x0 if left == left_edge else x0 + (left_edge - left) / scale,
        y0 if top == top_edge else y0 + (top_edge - top) / scale,
        x1 if right == width - right_edge else x0 + (right_edge + right) / scale,
        y1 if bottom == height - bottom_edge else y0 + (bottom_edge + bottom) / scale,
    )


def _render_pdf(spec: PaperSpec, equation: Equation) -> tuple[EquationImage | None, bool]:
    location = equation.location
    if location.page is None or location.bbox is None:
        log.debug("equation %s: no page or box", equation.id)
        return None, True
    root = Path(spec.root).resolve()
    path = (root / location.file).resolve()
    if not path.is_relative_to(root):
        log.debug("equation %s: %s is outside the paper folder", equation.id, location.file)
        return None, True
    try:
        data = read_source(path)
    except PaperError as err:
        log.debug("equation %s: %s", equation.id, err)
        return None, False
    expected = spec.files.get(location.file)
    if expected and hashlib.sha256(data).hexdigest() != expected:
        # The boxes were measured on another version of the file: a crop could show anything.
        log.debug("equation %s: %s changed since the paper was read", equation.id, location.file)
        return None, False

    import pymupdf

    try:
        with pymupdf.open(stream=data, filetype="pdf") as document:
            if not 1 <= location.page <= document.page_count:
                log.debug("equation %s: no page %s", equation.id, location.page)
                return None, True
            page = document[location.page - 1]
            outer = pdf_clip(tuple(page.rect), location.bbox)
            if outer is None:
                log.debug("equation %s: empty box %s", equation.id, location.bbox)
                return None, True
            width_pt, height_pt = outer[2] - outer[0], outer[3] - outer[1]
            fit = min(1.0, MAX_WIDTH / (width_pt * DPI / 72), MAX_HEIGHT / (height_pt * DPI / 72))
            for step in SHRINK_STEPS:
                dpi = max(24, round(DPI * fit * step))
                pixmap = page.get_pixmap(clip=pymupdf.Rect(outer), dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
                if pixmap.width < 2 or pixmap.height < 2:
                    return None, True
                if step == SHRINK_STEPS[0] and min(pixmap.samples) > 160:
                    log.debug("equation %s: the box on page %s is blank", equation.id, location.page)
                    return None, True
                clip = _clean_margins(pixmap, outer, location.bbox, dpi)
                if clip != outer:
                    pixmap = page.get_pixmap(clip=pymupdf.Rect(clip), dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
                png = pixmap.tobytes("png")
                if len(png) <= MAX_BYTES:
                    return EquationImage(png, pixmap.width, pixmap.height), True
    except (RuntimeError, ValueError) as err:  # PyMuPDF's errors on damaged files
        log.debug("equation %s: PyMuPDF: %s", equation.id, err)
        return None, True
    log.debug("equation %s: crop exceeds %d bytes even at scale %s", equation.id, MAX_BYTES, SHRINK_STEPS[-1])
    return None, True


# ---------------------------------------------------------------------------------------------
# LaTeX: rewrite into mathtext, typeset cell by cell, lay the cells out.


class Unsupported(Exception):
    """The source uses something this renderer cannot show faithfully."""


def render_latex(latex: str, *, labels: dict[str, str] | None = None) -> EquationImage | None:
    """Typeset display-math LaTeX (macros already expanded) as a PNG; None when it cannot be."""
    if len(latex) > MAX_LATEX_CHARS:
        log.debug("equation source too long (%d characters)", len(latex))
        return None
    if not _mathtext_usable():
        return None
    try:
        nodes = _parse(_tokens(latex))
    except Unsupported as err:
        log.debug("cannot read equation source: %s", err)
        return None
    with _mathtext_lock:
        for step in SHRINK_STEPS:
            try:
                box = _Typesetter(labels or {}, step).body(nodes, None)
            except Unsupported as err:
                log.debug("cannot render equation: %s", err)
                return None
            except Exception as err:  # noqa: BLE001 - mathtext's parse errors, font errors, ...
                log.debug("mathtext cannot render equation: %s", str(err).splitlines()[-1:] or err)
                return None
            if box.width == 0 or not box.ink.any():
                log.debug("equation renders to nothing")
                return None
            if box.width > MAX_WIDTH * 1.0001 or box.ink.shape[0] > MAX_HEIGHT:
                fit = min(MAX_WIDTH / box.width, MAX_HEIGHT / box.ink.shape[0])
                box = _Typesetter(labels or {}, step * fit).body(nodes, None)
            image = _encode(box)
            if len(image.png) <= MAX_BYTES:
                return image
    log.debug("equation image exceeds %d bytes even at scale %s", MAX_BYTES, SHRINK_STEPS[-1])
    return None


_mathtext_lock = threading.Lock()  # matplotlib is not thread-safe
MIN_MATPLOTLIB = (3, 11)
"""Older mathtext lacks \\phantom and draws tall \\left\\{ as a parenthesis: no images rather than wrong ones."""


@functools.cache
def _mathtext_usable() -> bool:
    try:
        import matplotlib
    except ImportError:
        log.info("matplotlib is not installed: LaTeX equations are shown as source")
        return False
    version = tuple(int(part) for part in re.findall(r"\d+", matplotlib.__version__)[:2])
    if version < MIN_MATPLOTLIB:
        log.info("matplotlib %s is older than 3.11: LaTeX equations are shown as source", matplotlib.__version__)
        return False
    return True

# --- tokens and tree --------------------------------------------------------------------------

_TOKEN = re.compile(r"\\[A-Za-z@]+\*?|\\.|%[^\n]*|\s+|.", re.DOTALL)
_STARRED = re.compile(r"\\(operatorname|tag|hspace|vspace|label)\*$")


def _tokens(latex: str) -> list[str]:
    tokens = []
    for match in _TOKEN.finditer(latex):
        token = match.group()
        if token.startswith("%"):
            continue
        if token[0] == "\\" and token.endswith("*") and len(token) > 2 and not _STARRED.match(token):
            tokens.extend((token[:-1], "*"))  # \foo* only for the few starred commands we know
        elif token.isspace():
            tokens.append(" ")
        else:
            tokens.append(token)
    return tokens


@dataclass
class _Group:
    nodes: list


@dataclass
class _Env:
    name: str
    arg: str | None
    nodes: list


_ENV_ARGS = {"array", "subarray", "alignat", "alignat*", "alignedat", "tabular"}
_MAX_DEPTH = 60


def _parse(tokens: list[str]) -> list:
    """Tokens into a tree of groups and environments; Unsupported on unbalanced source."""
    stack: list[tuple[str, object, list]] = [("top", None, [])]
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token in ("\\begin", "\\end"):
            j = i + 1
            while j < len(tokens) and tokens[j] == " ":
                j += 1
            if j >= len(tokens) or tokens[j] != "{":
                raise Unsupported(f"{token} without a name")
            close = tokens.index("}", j) if "}" in tokens[j:] else -1
            if close < 0:
                raise Unsupported(f"{token} without a name")
            name = "".join(tokens[j + 1 : close]).strip()
            i = close + 1
            if token == "\\begin":
                stack.append(("env", name, []))
            else:
                kind, open_name, nodes = stack.pop() if len(stack) > 1 else ("top", None, [])
                if kind != "env" or open_name != name:
                    raise Unsupported(f"\\end{{{name}}} does not close {open_name or 'anything'}")
                stack[-1][2].append(_make_env(name, nodes))
            if len(stack) > _MAX_DEPTH:
                raise Unsupported("nested too deeply")
            continue
        if token == "{":
            stack.append(("group", None, []))
            if len(stack) > _MAX_DEPTH:
                raise Unsupported("nested too deeply")
        elif token == "}":
            kind, _, nodes = stack.pop()
            if kind != "group" or not stack:
                raise Unsupported("unbalanced braces")
            stack[-1][2].append(_Group(nodes))
        elif token == "$":
            pass  # \scalebox{..}{$...$}: we are in math already
        else:
            stack[-1][2].append(token)
        i += 1
    if len(stack) != 1:
        raise Unsupported("unbalanced braces or environments")
    return stack[0][2]


def _make_env(name: str, nodes: list) -> _Env:
    arg = None
    rest = list(nodes)
    while rest and rest[0] == " ":
        rest.pop(0)
    if rest and rest[0] == "[":  # \begin{aligned}[t]
        end = rest.index("]") if "]" in rest else -1
        rest = rest[end + 1 :] if end >= 0 else rest
    while rest and rest[0] == " ":
        rest.pop(0)
    if name in _ENV_ARGS and rest and isinstance(rest[0], _Group):
        arg = _plain(rest.pop(0).nodes)
    return _Env(name, arg, rest)


def _plain(nodes: list) -> str:
    return "".join(_plain(node.nodes) if isinstance(node, _Group) else node if isinstance(node, str) else "" for node in nodes)


# --- rewriting into mathtext -----------------------------------------------------------------

_DROP = {
    "\\nonumber", "\\notag", "\\relax", "\\mathopen", "\\mathclose", "\\bgroup", "\\egroup", "\\aftergroup",
    "\\xspace", "\\addlinespace", "\\displaystyle", "\\textstyle", "\\scriptstyle", "\\scriptscriptstyle",
    "\\limits", "\\nolimits", "\\displaylimits", "\\allowbreak", "\\nobreak", "\\mathstrut", "\\strut",
    "\\protect", "\\centering", "\\noindent", "\\hfill", "\\hfil", "\\par", "\\medskip", "\\smallskip",
    "\\bigskip", "\\small", "\\normalsize", "\\large", "\\Large", "\\footnotesize", "\\scriptsize", "\\tiny",
    "\\/", "\\-", "\\nolinebreak", "\\linebreak", "\\pagebreak", "\\boldmath", "\\unboldmath", "\\middle",
    "\\mathversion",
}
_DROP_WITH_ARG = {
    "\\label", "\\label*", "\\tag", "\\tag*", "\\vphantom", "\\color", "\\vspace", "\\vspace*", "\\cite",
    "\\citep", "\\citet", "\\footnote", "\\intertext", "\\shortintertext", "\\index", "\\hypertarget",
}
_KEEP_ARG = {  # \cmd{X} → X
    "\\smash", "\\boxed", "\\cancel", "\\bcancel", "\\xcancel", "\\mathrel", "\\mathbin", "\\mathord",
    "\\mathpunct", "\\mathinner", "\\mathclap", "\\mathllap", "\\mathrlap", "\\clap", "\\llap", "\\rlap",
    "\\ensuremath", "\\fbox", "\\underbracket", "\\overbracket", "\\mathmakebox", "\\makebox",
}
_KEEP_LAST_OF = {"\\textcolor": 2, "\\colorbox": 2, "\\scalebox": 2, "\\resizebox": 3, "\\raisebox": 2,
                 "\\cancelto": 2, "\\hyperref": 1, "\\href": 2, "\\adjustbox": 2}
_STRUT = "\\phantom{|}\\!\\! "
_COLON_EQUALS = "{:}\\!\\!="  # mathtext spaces two relations apart; TeX sets := tight
_RENAME = {
    "\\le": "\\leq", "\\ge": "\\geq", "\\lnot": "\\neg", "\\land": "\\wedge", "\\lor": "\\vee",
    "\\gets": "\\leftarrow", "\\implies": "\\Rightarrow", "\\impliedby": "\\Leftarrow", "\\iff": "\\Leftrightarrow",
    "\\hdots": "\\ldots", "\\dotsc": "\\ldots", "\\dotso": "\\ldots", "\\dotsb": "\\cdots", "\\dotsm": "\\cdots",
    "\\dotsi": "\\cdots", "\\lVert": "\\Vert", "\\rVert": "\\Vert", "\\lvert": "|", "\\rvert": "|",
    "\\Tilde": "\\tilde", "\\Hat": "\\hat", "\\Bar": "\\bar", "\\Vec": "\\vec", "\\Dot": "\\dot",
    "\\Check": "\\check", "\\Acute": "\\acute", "\\Grave": "\\grave", "\\Breve": "\\breve",
    "\\cfrac": "\\dfrac", "\\tfrac": "\\frac", "\\dbinom": "\\binom", "\\tbinom": "\\binom",
    "\\coloneqq": _COLON_EQUALS, "\\coloneq": _COLON_EQUALS, "\\eqqcolon": "=\\!\\!{:}", "\\vcentcolon": ":",
    "\\mathbbm": "\\mathbb", "\\mathds": "\\mathbb", "\\mathbbold": "\\mathbb", "\\bm": "\\boldsymbol",
    "\\pmb": "\\boldsymbol", "\\mathbold": "\\boldsymbol", "\\bold": "\\boldsymbol", "\\mathbfit": "\\boldsymbol",
    "\\bmdefine": "\\boldsymbol", "\\texttt": "\\mathtt", "\\operatornamewithlimits": "\\operatorname",
    "\\thinspace": "\\,", "\\medspace": "\\:", "\\thickspace": "\\;", "\\negthinspace": "\\!",
    "\\negmedspace": "\\!", "\\negthickspace": "\\!", "\\nobreakspace": "~", "\\lbrack": "[", "\\rbrack": "]",
    "\\bigtimes": "\\times", "\\leqslant": "\\leq", "\\geqslant": "\\geq", "\\varGamma": "\\Gamma", "\\varDelta": "\\Delta", "\\varTheta": "\\Theta",
    "\\varLambda": "\\Lambda", "\\varXi": "\\Xi", "\\varPi": "\\Pi", "\\varSigma": "\\Sigma",
    "\\varUpsilon": "\\Upsilon", "\\varPhi": "\\Phi", "\\varPsi": "\\Psi", "\\varOmega": "\\Omega",
    "\\bmod": "\\mathrm{mod}", "\\mod": "\\quad\\mathrm{mod}\\;", "\\hphantom": "\\phantom",
    "\\argmin": "\\operatorname{arg\\,min}", "\\argmax": "\\operatorname{arg\\,max}",
    "\\mathpzc": "\\mathcal", "\\centerdot": "\\cdot", "\\textperiodcentered": "\\cdot",
    "\\colon": ":", "\\widebar": "\\overline",
}
_TEXT = {"\\text", "\\textrm", "\\textnormal", "\\textup", "\\textsf", "\\mbox", "\\hbox", "\\textmd",
         "\\textsc", "\\textit", "\\emph", "\\textsl", "\\textbf"}
_SIZED = re.compile(r"\\(big|Big|bigg|Bigg)([lrm]?)$")
_OPENERS = {"(", "[", "\\{", "\\lbrace", "\\langle", "\\lfloor", "\\lceil", "\\lVert", "\\lvert", "\\lbrack"}
_CLOSERS = {")", "]", "\\}", "\\rbrace", "\\rangle", "\\rfloor", "\\rceil", "\\rVert", "\\rvert", "\\rbrack"}
_DELIMITERS = {"\\lVert": "\\Vert", "\\rVert": "\\Vert", "\\lvert": "|", "\\rvert": "|", "\\|": "\\Vert",
               "\\lbrack": "[", "\\rbrack": "]", "\\vert": "|"}
_UNITS_EM = {"em": 1.0, "ex": 0.43, "pt": 0.1, "mu": 1 / 18, "mm": 0.28, "cm": 2.8, "in": 7.2, "bp": 0.1}


class _Typesetter:
    """Rewrites a cell into mathtext and lays out rows, cells and matrices as images."""

    def __init__(self, labels: dict[str, str], scale: float):
        self.labels = labels
        self.scale = scale
        self.em = FONT_SIZE * DPI / 72 * scale  # pixels per em
        self.display = True  # TeX's display style: full-size fractions; off in scripts, cases, matrices

    def styled(self, display: bool, function, *args):
        """`function(*args)` with display style set as given, restored afterwards."""
        saved, self.display = self.display, display and self.display
        try:
            return function(*args)
        finally:
            self.display = saved

    # -- layout ---------------------------------------------------------------------------------

    def body(self, nodes: list, env: str | None, colspec: str | None = None) -> _Box:
        """An environment's body (or the whole equation): rows of cells on a grid."""
        rows = _split_rows(nodes)
        display = (env or "").rstrip("*") not in _TEXT_STYLE_ENVIRONMENTS
        if len(rows) == 1 and len(rows[0]) == 1:
            return self.styled(display, self.cell, rows[0][0])
        grid = [[self.styled(display, self.cell, cell) for cell in row] for row in rows]
        return self.grid(grid, env, colspec)

    def cell(self, nodes: list) -> _Box:
        """One cell: math, with environments (cases, matrices, aligned) set as boxes of their own."""
        nodes = _unwrap(nodes)
        parts: list[_Box] = []
        text: list = []
        i = 0
        while i < len(nodes):
            node = nodes[i]
            if isinstance(node, _Env):
                left, text = _pop_delimiter(text, "\\left")
                right, i = _take_delimiter(nodes, i + 1, "\\right")
                parts.append(self.math(text))
                parts.append(self.environment(node, left, right))
                text = []
                continue
            text.append(node)
            i += 1
        parts.append(self.math(text))
        parts = [part for part in parts if part.width > 0]
        if not parts:
            return _Box.empty()
        return _hcat(parts, gap=round(0.17 * self.em))

    def environment(self, env: _Env, left: str | None, right: str | None) -> _Box:
        name = env.name.rstrip("*")
        delimiters = {
            "cases": ("\\{", None), "dcases": ("\\{", None), "rcases": (None, "\\}"),
            "pmatrix": ("(", ")"), "bmatrix": ("[", "]"), "Bmatrix": ("\\{", "\\}"),
            "vmatrix": ("|", "|"), "Vmatrix": ("\\Vert", "\\Vert"),
        }.get(name, (None, None))
        left = left or delimiters[0]
        right = right or delimiters[1]
        inner = self.body(env.nodes, env.name, env.arg)
        parts = []
        if left and left != ".":
            parts.append(self.delimiter(left, inner))
        parts.append(inner)
        if right and right != ".":
            parts.append(self.delimiter(right, inner))
        box = _hcat(parts, gap=round(0.12 * self.em)) if len(parts) > 1 else inner
        # Centre the box on the math axis, as TeX does with a vertically centred array.
        axis = 0.25 * self.em
        box.baseline = round(box.ink.shape[0] / 2 + axis)
        return box

    def delimiter(self, delimiter: str, inner: _Box) -> _Box:
        """A delimiter as tall as `inner`: mathtext's \\left around an invisible stack, then fitted."""
        import numpy as np

        target = inner.ink.shape[0] + round(0.2 * self.em)
        rows = max(1, round(target / (1.2 * self.em)))
        stack = "M"
        for _ in range(rows - 1):
            stack = "\\genfrac{}{}{0}{0}{M}{" + stack + "}"
        box = self._mathtext(f"\\left{_DELIMITERS.get(delimiter, delimiter)}\\phantom{{{stack}}}\\right.")
        ink = box.ink
        columns = np.nonzero(ink.max(axis=0) > 0)[0]
        lines = np.nonzero(ink.max(axis=1) > 0)[0]
        if not len(columns):
            return _Box.empty()
        ink = ink[lines[0] : lines[-1] + 1, columns[0] : columns[-1] + 1]
        if abs(ink.shape[0] - target) > 2:
            from PIL import Image

            ink = np.asarray(Image.fromarray(ink).resize((ink.shape[1], target), Image.Resampling.LANCZOS))
        return _Box(ink, baseline=round(ink.shape[0] / 2 + 0.25 * self.em))

    def grid(self, rows: list[list[_Box]], env: str | None, colspec: str | None = None) -> _Box:
        import numpy as np

        columns = max(len(row) for row in rows)
        name = (env or ("eqnarray" if _eqnarray_like(rows) else "gather" if columns == 1 else "aligned")).rstrip("*")
        aligns, gaps = _column_style(name, columns, self.em, colspec)
        widths = [max((row[c].width for row in rows if c < len(row)), default=0) for c in range(columns)]
        strut_up, strut_down = round(0.75 * self.em), round(0.3 * self.em)
        row_gap = round((0.2 if name in _MATRICES else 0.3) * self.em)
        heights = []
        for row in rows:
            up = max([strut_up] + [box.baseline for box in row])
            down = max([strut_down] + [box.ink.shape[0] - box.baseline for box in row])
            heights.append((up, down))
        total_width = sum(widths) + sum(gaps[: columns - 1])
        total_height = sum(up + down for up, down in heights) + row_gap * (len(rows) - 1)
        canvas = np.zeros((total_height, max(total_width, 1)), np.uint8)
        y = 0
        for row, (up, down) in zip(rows, heights):
            x = 0
            for c in range(columns):
                if c < len(row) and row[c].width:
                    box = row[c]
                    offset = {"l": 0, "c": (widths[c] - box.width) // 2, "r": widths[c] - box.width}[aligns[c]]
                    _blit(canvas, box.ink, y + up - box.baseline, x + offset)
                x += widths[c] + (gaps[c] if c < columns - 1 else 0)
            y += up + down + row_gap
        return _Box(canvas, baseline=round(total_height / 2 + 0.25 * self.em))

    def math(self, nodes: list) -> _Box:
        source = self.convert(nodes).strip()
        if not source:
            return _Box.empty()
        return self._mathtext(source)

    def _mathtext(self, source: str) -> _Box:
        from matplotlib.font_manager import FontProperties
        from matplotlib.mathtext import MathTextParser

        global _parser
        if _parser is None:
            _parser = MathTextParser("agg")
        prop = FontProperties(size=FONT_SIZE * self.scale, math_fontfamily="cm")
        import matplotlib

        key = (source, prop.get_size_in_points())
        if key in _complained:  # mathtext caches its results and warns only the first time
            raise Unsupported(_complained[key])
        complaints = _Complaints()
        logger = logging.getLogger("matplotlib.mathtext")
        logger.addFilter(complaints)
        try:
            # "normal": math italic letters, upright digits, as TeX sets them ("it" slants digits too).
            with matplotlib.rc_context({"mathtext.default": "normal", "text.antialiased": True}):
                result = _parser.parse(f"${source}$", dpi=DPI, prop=prop)
        finally:
            logger.removeFilter(complaints)
        if complaints.messages:  # a missing glyph is drawn as a dummy box: not the paper's formula
            _complained[key] = complaints.messages[0]
            while len(_complained) > 256:
                _complained.pop(next(iter(_complained)))
            raise Unsupported(complaints.messages[0])
        import numpy as np

        ink = np.asarray(result.image)  # an FT2Image before matplotlib 3.10
        return _Box(ink, baseline=max(0, ink.shape[0] - round(result.depth)))

    # -- rewriting -------------------------------------------------------------------------------

    def convert(self, nodes: list) -> str:
        """A node list as mathtext source."""
        nodes = _fractions(nodes)
        pairs = _pair_delimiters(nodes)
        out: list[str] = []
        i = 0
        script = False  # the node after _ or ^ is set in script style
        while i < len(nodes):
            node = nodes[i]
            i += 1
            if script and node != " ":
                script = False
                if isinstance(node, _Group):
                    out.append("{" + self.styled(False, self.convert, node.nodes) + "}")
                    continue
            if node in ("_", "^"):
                script = True
                out.append(node)
                continue
            if isinstance(node, _Group):
                out.append("{" + self.convert(node.nodes) + "}")
                continue
            if isinstance(node, _Env):
                out.append(self.inline_environment(node))
                continue
            token = node
            if token.startswith("\\original") and len(token) > 9:
                token = "\\" + token[9:]
            if token in ("\\left", "\\right") or _SIZED.match(token):
                delimiter, i = _next_token(nodes, i)
                delimiter = _DELIMITERS.get(delimiter, delimiter) if delimiter else ""
                kind = pairs.get(i - 1)
                if kind == "left":
                    # mathtext sizes \left to the content alone; TeX never goes below the normal size.
                    # A zero-width strut (a phantom bar, backed off) gives that minimum.
                    out.append(f"\\left{delimiter}{_STRUT}")
                elif kind == "right":
                    out.append(f"\\right{delimiter} ")
                elif delimiter and delimiter != ".":
                    out.append(f"{{{delimiter}}}")
                continue
            if token in _DROP:
                continue
            if token in _DROP_WITH_ARG:
                i = _skip_optional(nodes, i)
                _, i = _argument(nodes, i)
                continue
            if token in _KEEP_ARG:
                i = _skip_optional(nodes, i)
                arg, i = _argument(nodes, i)
                out.append("{" + self.convert(arg) + "}")
                continue
            if token in _KEEP_LAST_OF:
                for _ in range(_KEEP_LAST_OF[token] - 1):
                    i = _skip_optional(nodes, i)
                    _, i = _argument(nodes, i)
                arg, i = _argument(nodes, i)
                out.append("{" + self.convert(arg) + "}")
                continue
            if token in _TEXT:
                arg, i = _argument(nodes, i)
                out.append(self.text(arg, bold=token == "\\textbf"))
                continue
            if token in ("\\ref", "\\eqref", "\\autoref", "\\cref", "\\Cref"):
                arg, i = _argument(nodes, i)
                number = self.labels.get(_plain(arg).strip(), "?")
                out.append(f"({number})" if token == "\\eqref" else f"{{{number}}}")
                continue
            if token in ("\\operatorname", "\\operatorname*", "\\mathop"):
                limits = token != "\\operatorname"  # \operatorname* and \mathop take limits below
                if i < len(nodes) and nodes[i] == "*":
                    i, limits = i + 1, True
                arg, i = _argument(nodes, i)
                name = _operator_name(arg)
                if name is not None:
                    operator = f"\\operatorname{{{name}}}" if name else ""
                else:
                    operator = "{" + self.convert(arg) + "}"
                j = _skip_spaces(nodes, i)
                while j < len(nodes) and nodes[j] == "\\limits":
                    j = _skip_spaces(nodes, j + 1)
                if limits and operator and self.display and j < len(nodes) and nodes[j] == "_":
                    below, i = _argument(nodes, j + 1)
                    operator = f"\\underset{{{self.styled(False, self.convert, below)}}}{{{operator}}}"
                out.append(operator)
                continue
            if token in ("\\overbrace", "\\underbrace"):
                arg, i = _argument(nodes, i)
                mark = "^" if token == "\\overbrace" else "_"
                j = _skip_spaces(nodes, i)
                if j < len(nodes) and nodes[j] == mark:
                    label, i = _argument(nodes, j + 1)
                    where = "\\overset" if mark == "^" else "\\underset"
                    out.append(f"{where}{{{self.styled(False, self.convert, label)}}}{{{self.convert(arg)}}}")
                else:
                    out.append("{" + self.convert(arg) + "}")
                continue
            if token == "\\stackrel":
                top, i = _argument(nodes, i)
                base, i = _argument(nodes, i)
                out.append(f"\\overset{{{self.styled(False, self.convert, top)}}}{{{self.convert(base)}}}")
                continue
            if token in ("\\xrightarrow", "\\xleftarrow"):
                i = _skip_optional(nodes, i)
                top, i = _argument(nodes, i)
                arrow = "\\rightarrow" if token == "\\xrightarrow" else "\\leftarrow"
                out.append(f"\\overset{{{self.styled(False, self.convert, top)}}}{{{arrow}}}")
                continue
            if token in ("\\hspace", "\\hspace*", "\\hskip", "\\kern", "\\mkern", "\\mskip", "\\hspace@"):
                amount, i = (_argument(nodes, i) if token.startswith("\\hspace") else _dimension(nodes, i))
                ems = _ems(_plain(amount) if isinstance(amount, list) else amount)
                if ems and ems > 0.05:
                    out.append(f"\\hspace{{{min(ems, 4):.2f}}}")
                continue
            if token in ("\\nicefrac", "\\sfrac"):
                top, i = _argument(nodes, i)
                bottom, i = _argument(nodes, i)
                out.append(f"{{{self.convert(top)}}}/{{{self.convert(bottom)}}}")
                continue
            if token == "\\pmod":
                arg, i = _argument(nodes, i)
                out.append(f"\\quad(\\mathrm{{mod}}\\;{self.convert(arg)})")
                continue
            if token == "\\not":
                following, j = _next_token(nodes, i)
                if following in ("\\in",):
                    out.append("\\notin")
                    i = j
                    continue
            if token == "\\&":
                out.append("\\text{\\&}")
                continue
            if token == ":" and _next_token(nodes, i)[0] == "=":
                out.append(_COLON_EQUALS)
                i = _next_token(nodes, i)[1]
                continue
            if token == "*":
                out.append("*")
                continue
            if token == "\\\\":
                out.append("\\\\")  # only meaningful inside \substack, where mathtext takes it
                continue
            if token == "\\sp":
                out.append("^")
                continue
            if token == "\\sb":
                out.append("_")
                continue
            name = _RENAME.get(token, token)
            if name in _ONE_ARG or name in _TWO_ARGS:
                if name == "\\sqrt":
                    j = _skip_optional(nodes, i)
                    index = _plain(nodes[i:j]).strip()
                    name, i = (f"\\sqrt{index}", j)
                args = []
                for _ in range(2 if name in _TWO_ARGS else 1):
                    arg, i = _argument(nodes, i)
                    args.append(arg)
                if name == "\\boldsymbol":
                    name, args[0] = _bold(args[0])
                if name in ("\\frac", "\\dfrac", "\\binom"):
                    if self.display or name == "\\dfrac":
                        name = "\\genfrac{(}{)}{0}{0}" if name == "\\binom" else "\\dfrac"
                    converted = [self.styled(False, self.convert, arg) for arg in args]
                elif name in ("\\overset", "\\underset"):
                    converted = [self.styled(False, self.convert, args[0]), self.convert(args[1])]
                elif name == "\\substack":
                    converted = [self.styled(False, self.convert, args[0])]
                else:
                    converted = [self.convert(arg) for arg in args]
                out.append(name + "".join("{" + arg + "}" for arg in converted))
                continue
            out.append(name)
        return _join(out)

    def text(self, nodes: list, bold: bool = False) -> str:
        """\\text{...}: plain words in \\text{}, inline $math$ converted, nested text commands flattened."""
        parts: list[str] = []
        words: list[str] = []

        def flush():
            if words:
                content = "".join(words)
                parts.append(f"\\text{{{content}}}" if not bold else f"\\mathbf{{\\text{{{content}}}}}")
                words.clear()

        def walk(items: list):
            for item in items:
                if isinstance(item, _Group):
                    walk(item.nodes)
                elif isinstance(item, _Env):
                    flush()
                    parts.append(self.inline_environment(item))
                elif item in ("\\%", "\\#", "\\_", "\\$", "\\&"):
                    words.append(item)
                elif item in ("~", "\\ ", "\\,", "\\;", "\\quad", "\\qquad", " "):
                    words.append(" ")
                elif item in ("\\{", "\\}"):
                    words.append(item[1])
                elif item in ("\\ldots", "\\dots"):
                    words.append("...")
                elif item.startswith("\\"):
                    continue  # \textbf, \emph, \scriptsize inside text: keep the words only
                elif item in "{}^_":
                    continue
                else:
                    words.append(item)

        walk(nodes)
        flush()
        text = "".join(parts) or "{}"
        return text.replace("--", "–")

    def inline_environment(self, env: _Env) -> str:
        """An environment nested where no box can go (inside braces): its rows on one line."""
        rows = _split_rows(env.nodes)
        cells = ["\\;".join(self.convert(cell) for cell in row) for row in rows]
        inner = ",\\;".join(cells) if env.name.rstrip("*") in _MATRICES else "\\quad ".join(cells)
        left, right = {"pmatrix": ("(", ")"), "bmatrix": ("[", "]"), "Bmatrix": ("\\{", "\\}"),
                       "vmatrix": ("|", "|"), "cases": ("\\{", ".")}.get(env.name, (".", "."))
        if left == "." and right == ".":
            return "{" + inner + "}"
        return f"\\left{left} {inner} \\right{right}"


_ONE_ARG = {
    "\\mathcal", "\\mathbb", "\\mathrm", "\\mathbf", "\\mathit", "\\mathsf", "\\mathtt", "\\mathfrak",
    "\\mathscr", "\\boldsymbol", "\\hat", "\\tilde", "\\bar", "\\vec", "\\dot", "\\ddot", "\\check",
    "\\acute", "\\grave", "\\breve", "\\mathring", "\\overline", "\\underline", "\\widehat", "\\widetilde",
    "\\overrightarrow", "\\overleftarrow", "\\overleftrightarrow", "\\sqrt", "\\phantom",
    "\\substack", "\\mathnormal",
}
_TWO_ARGS = {"\\frac", "\\dfrac", "\\binom", "\\overset", "\\underset"}


def _bold(arg: list) -> tuple[str, list]:
    """\\bm{\\mathrm{A}} is bold upright: \\mathbf{A} (mathtext fails on the nested form)."""
    content = [node for node in arg if node != " "]
    if len(content) == 2 and content[0] in ("\\mathrm", "\\mathbf", "\\textbf", "\\rm") and isinstance(content[1], _Group):
        return "\\mathbf", content[1].nodes
    return "\\boldsymbol", arg


_parser = None
_complained: dict[tuple[str, float], str] = {}  # sources mathtext warned about (under _mathtext_lock)


class _Complaints(logging.Filter):
    """Keeps mathtext's warnings (missing glyphs) for us instead of the user's log."""

    def __init__(self):
        super().__init__()
        self.messages: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            self.messages.append(record.getMessage())
            return False
        return True


_TEXT_STYLE_ENVIRONMENTS = {"cases", "rcases", "matrix", "pmatrix", "bmatrix", "Bmatrix", "vmatrix", "Vmatrix",
                            "smallmatrix", "array", "subarray"}
_MATRICES = {"matrix", "pmatrix", "bmatrix", "Bmatrix", "vmatrix", "Vmatrix", "smallmatrix", "array", "subarray"}


def _column_style(name: str, columns: int, em: float, colspec: str | None) -> tuple[list[str], list[int]]:
    """Per-column alignment ('l', 'c', 'r') and the gap after each column, as LaTeX would set them."""
    if colspec:  # array{lcr}: p{..}, m{..}, b{..} columns are set left; @{..} and | are ignored
        letters = re.findall(r"[lcr]|[pmb](?=\{)", re.sub(r"@\{[^}]*\}", "", colspec))
        aligns = [{"p": "l", "m": "l", "b": "l"}.get(letter, letter) for letter in letters]
        if aligns:
            aligns = (aligns + ["c"] * columns)[:columns]
            return aligns, [round(1.0 * em)] * columns
    if name in ("cases", "dcases", "rcases"):
        return ["l"] * columns, [round(1.0 * em)] * columns
    if name in _MATRICES:
        return ["c"] * columns, [round(1.0 * em)] * columns
    if name in ("gather", "gathered", "multline", "equation", "displaymath"):
        return ["c"] * columns, [round(1.0 * em)] * columns
    if name == "eqnarray":
        return (["r", "c", "l"] * columns)[:columns], [round(0.3 * em)] * columns
    # align-like: pairs of right- and left-aligned columns; a wide gap between pairs
    aligns = ["r" if c % 2 == 0 else "l" for c in range(columns)]
    gaps = [0 if c % 2 == 0 else round(2 * em) for c in range(columns)]
    return aligns, gaps


def _eqnarray_like(rows: list[list[_Box]]) -> bool:
    """`a &=& b` rows (eqnarray, or an align written that way): a narrow middle column."""
    return all(len(row) == 3 for row in rows) and all(row[1].width and row[1].ink.shape[0] < 1.5 * row[1].width + 40 and row[1].width < 80 for row in rows)


def _split_rows(nodes: list) -> list[list[list]]:
    """Top-level `\\\\` rows and `&` cells; empty trailing rows dropped."""
    rows: list[list[list]] = [[[]]]
    i = 0
    while i < len(nodes):
        node = nodes[i]
        if node == "\\\\":
            rows.append([[]])
            i = _skip_optional(nodes, i + 1)  # \\[1em]
            continue
        if node in ("\\cr", "\\newline"):
            rows.append([[]])
        elif node == "&":
            rows[-1].append([])
        else:
            rows[-1][-1].append(node)
        i += 1
    while len(rows) > 1 and all(_blank(cell) for cell in rows[-1]):
        rows.pop()
    while len(rows) > 1 and all(_blank(cell) for cell in rows[0]):
        rows.pop(0)
    return rows


def _blank(nodes: list) -> bool:
    return all(node == " " or _is(node, _DROP) for node in nodes)


def _is(node, names) -> bool:
    return isinstance(node, str) and node in names


def _unwrap(nodes: list) -> list:
    """A cell that is one braced group or one \\scalebox around an environment: its content."""
    content = [node for node in nodes if node != " " and not _is(node, _DROP)]
    if len(content) == 1 and isinstance(content[0], _Group) and any(isinstance(n, _Env) for n in content[0].nodes):
        return _unwrap(content[0].nodes)
    if content and _is(content[0], _KEEP_LAST_OF) and all(isinstance(node, _Group) for node in content[1:]) \
            and len(content) == _KEEP_LAST_OF[content[0]] + 1:
        return _unwrap(content[-1].nodes)
    return nodes


def _pop_delimiter(text: list, command: str) -> tuple[str | None, list]:
    """`\\left(` just before an environment: the delimiter, and the text without it."""
    items = [item for item in text]
    while items and items[-1] == " ":
        items.pop()
    if not items or not isinstance(items[-1], str):
        return None, text
    delimiter = items.pop()
    while items and items[-1] == " ":
        items.pop()
    if items and items[-1] == command:
        return delimiter, items[:-1]
    return None, text


def _take_delimiter(nodes: list, i: int, command: str) -> tuple[str | None, int]:
    j = _skip_spaces(nodes, i)
    if j < len(nodes) and nodes[j] == command:
        delimiter, k = _next_token(nodes, j + 1)
        if delimiter is not None:
            return delimiter, k
    return None, i


def _skip_spaces(nodes: list, i: int) -> int:
    while i < len(nodes) and nodes[i] == " ":
        i += 1
    return i


def _next_token(nodes: list, i: int) -> tuple[str | None, int]:
    i = _skip_spaces(nodes, i)
    if i < len(nodes) and isinstance(nodes[i], str):
        return nodes[i], i + 1
    if i < len(nodes) and isinstance(nodes[i], _Group) and len(nodes[i].nodes) == 1 and isinstance(nodes[i].nodes[0], str):
        return nodes[i].nodes[0], i + 1  # \left{(}
    return None, i


def _argument(nodes: list, i: int) -> tuple[list, int]:
    """The next argument: a group's content or a single token."""
    i = _skip_spaces(nodes, i)
    if i >= len(nodes):
        raise Unsupported("a command lacks its argument")
    node = nodes[i]
    if isinstance(node, _Group):
        return node.nodes, i + 1
    taken = [node]
    i += 1
    for _ in range(_arity(node)):  # \hat\mathcal{P}: the argument is \mathcal{P}
        arg, i = _argument(nodes, i)
        taken.append(_Group(arg))
    return taken, i


def _arity(token) -> int:
    if not isinstance(token, str):
        return 0
    name = _RENAME.get(token, token)
    if name in _TWO_ARGS or token in ("\\nicefrac", "\\sfrac"):
        return 2
    return 1 if name in _ONE_ARG or name in _TEXT else 0


def _skip_optional(nodes: list, i: int) -> int:
    """Past an optional `[...]` argument, when there is one."""
    j = _skip_spaces(nodes, i)
    if j < len(nodes) and nodes[j] == "[":
        depth = 0
        for k in range(j, len(nodes)):
            if nodes[k] == "[":
                depth += 1
            elif nodes[k] == "]":
                depth -= 1
                if depth == 0:
                    return k + 1
    return i


def _dimension(nodes: list, i: int) -> tuple[str, int]:
    """A TeX dimension after \\kern or \\hskip: `1em`, `-3mu`, `.5ex`."""
    i = _skip_spaces(nodes, i)
    text = ""
    while i < len(nodes) and isinstance(nodes[i], str) and re.fullmatch(r"[-+.\d a-z]", nodes[i]):
        text += nodes[i]
        i += 1
        if re.search(r"\d\s*(em|ex|pt|mu|mm|cm|in|bp)$", text):
            break
    return text, i


def _ems(text: str) -> float | None:
    match = re.fullmatch(r"\s*([-+]?\d*\.?\d+)\s*([a-z]{2})\s*", text)
    if not match or match.group(2) not in _UNITS_EM:
        return None
    return float(match.group(1)) * _UNITS_EM[match.group(2)]


def _operator_name(nodes: list) -> str | None:
    """The letters of `\\operatorname{arg\\,min}` / `\\mathop{\\mathrm{diag}}`; '' when empty; None otherwise."""
    flat: list[str] = []

    def walk(items: list) -> bool:
        for item in items:
            if isinstance(item, _Group):
                if not walk(item.nodes):
                    return False
            elif isinstance(item, _Env):
                return False
            elif item in ("\\mathrm", "\\rm", "\\text", "\\textrm", "\\operatorname", " "):
                continue
            elif item in ("\\,", "\\;", "\\:", "\\!"):
                flat.append(item)
            elif item in ("\\arg", "\\min", "\\max", "\\log", "\\exp", "\\sup", "\\inf", "\\lim", "\\det"):
                if flat and flat[-1] not in ("\\,", "\\;", "\\:", "\\!"):
                    flat.append("\\,")  # \arg\min → arg min
                flat.append(item[1:])
            elif re.fullmatch(r"[A-Za-z0-9\-.']", item):
                flat.append(item)
            else:
                return False
        return True

    if not walk(nodes):
        return None
    return "".join(flat)


def _fractions(nodes: list) -> list:
    """`a \\over b` → `\\frac{a}{b}` (likewise \\choose, \\atop) at this level."""
    for command in ("\\over", "\\choose", "\\atop", "\\above"):
        if command in nodes:
            k = nodes.index(command)
            top, bottom = _Group(nodes[:k]), _Group(nodes[k + 1 :])
            head = {"\\over": "\\frac", "\\choose": "\\binom", "\\atop": "\\genfrac{}{}{0}{}", "\\above": "\\frac"}
            return [head[command], top, bottom]
    return nodes


def _pair_delimiters(nodes: list) -> dict[int, str]:
    """Index of each delimiter's token → 'left'/'right' when it has a partner at this level.

    The index is that of the delimiter itself (one past the command). Unpaired \\left / \\right
    (an align row that opens a bracket and closes it on the next row) become plain delimiters.
    """
    pairs: dict[int, str] = {}
    stack: list[int] = []
    i = 0
    while i < len(nodes):
        token = nodes[i]
        if isinstance(token, str):
            if token.startswith("\\original"):
                token = "\\" + token[9:]
            sized = _SIZED.match(token)
            if token in ("\\left", "\\right") or sized:
                delimiter, j = _next_token(nodes, i + 1)
                if token == "\\left" or (sized and (sized.group(2) == "l" or (not sized.group(2) and delimiter in _OPENERS))):
                    stack.append(j - 1)
                elif stack and (
                    token == "\\right" or (sized and (sized.group(2) == "r" or (not sized.group(2) and delimiter in _CLOSERS)))
                ):
                    pairs[stack.pop()] = "left"
                    pairs[j - 1] = "right"
                i = j
                continue
        i += 1
    return pairs


def _join(parts: list[str]) -> str:
    """Concatenate, keeping a control word apart from a letter that follows it."""
    out = ""
    for part in parts:
        if out and re.search(r"\\[A-Za-z]+$", out) and part[:1].isalpha():
            out += " "
        out += part
    return out


# --- boxes -------------------------------------------------------------------------------------


class _Box:
    """An ink image (0 = paper, 255 = ink) and its baseline, in pixels from the top."""

    def __init__(self, ink, baseline: int):
        self.ink = ink
        self.baseline = baseline

    @property
    def width(self) -> int:
        return self.ink.shape[1]

    @staticmethod
    def empty() -> _Box:
        import numpy as np

        return _Box(np.zeros((0, 0), np.uint8), 0)


def _hcat(parts: list[_Box], gap: int) -> _Box:
    import numpy as np

    up = max(part.baseline for part in parts)
    down = max(part.ink.shape[0] - part.baseline for part in parts)
    width = sum(part.width for part in parts) + gap * (len(parts) - 1)
    canvas = np.zeros((up + down, width), np.uint8)
    x = 0
    for part in parts:
        _blit(canvas, part.ink, up - part.baseline, x)
        x += part.width + gap
    return _Box(canvas, up)


def _blit(canvas, ink, y: int, x: int) -> None:
    import numpy as np

    height, width = ink.shape
    region = canvas[y : y + height, x : x + width]  # a view: drawing into it draws on the canvas
    np.maximum(region, ink[: region.shape[0], : region.shape[1]], out=region)


def _encode(box: _Box) -> EquationImage:
    """Trim to the ink, add a margin, write an 8-bit grayscale PNG (dark ink on white)."""
    import numpy as np
    from PIL import Image

    ink = box.ink
    rows = np.nonzero(ink.max(axis=1) > 0)[0]
    columns = np.nonzero(ink.max(axis=0) > 0)[0]
    ink = ink[rows[0] : rows[-1] + 1, columns[0] : columns[-1] + 1]
    margin = max(2, round(FONT_SIZE * DPI / 72 * 0.25))
    canvas = np.zeros((ink.shape[0] + 2 * margin, ink.shape[1] + 2 * margin), np.uint8)
    canvas[margin : margin + ink.shape[0], margin : margin + ink.shape[1]] = ink
    picture = Image.fromarray(255 - canvas, "L")
    buffer = io.BytesIO()
    picture.save(buffer, "PNG", optimize=True)
    return EquationImage(buffer.getvalue(), picture.width, picture.height)


# ---------------------------------------------------------------------------------------------
# A whole PDF page, for the editor's paper view.

PAGE_DPI = 110


@dataclass(frozen=True)
class PageImage:
    """A page as PNG, and a box on it (in image pixels) to highlight."""

    png: bytes
    width: int
    height: int
    highlight: tuple[int, int, int, int] | None

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


def page_image(spec: PaperSpec, location: Location, dpi: int = PAGE_DPI) -> PageImage | None:
    """The page `location` stands on, with its box highlighted; None when the PDF cannot show it
    (missing, changed since it was read, no such page)."""
    root = Path(spec.root).resolve()
    path = (root / location.file).resolve()
    if location.page is None or not path.is_relative_to(root):
        return None
    try:
        data = read_source(path)
    except PaperError:
        return None
    if (expected := spec.files.get(location.file)) and hashlib.sha256(data).hexdigest() != expected:
        return None
    import pymupdf

    try:
        with pymupdf.open(stream=data, filetype="pdf") as document:
            if not 1 <= location.page <= document.page_count:
                return None
            pixmap = document[location.page - 1].get_pixmap(dpi=dpi)
            png = pixmap.tobytes("png")
    except Exception:  # a damaged file: the caller says the page cannot be shown
        log.debug("page %s of %s cannot be rendered", location.page, location.file, exc_info=True)
        return None
    scale = dpi / 72
    box = None
    if location.bbox is not None:
        x0, y0, x1, y1 = location.bbox
        box = (math.floor(x0 * scale), math.floor(y0 * scale), math.ceil(x1 * scale), math.ceil(y1 * scale))
    return PageImage(png, pixmap.width, pixmap.height, box)

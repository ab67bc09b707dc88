"""The parameters a paper declares learnable and never says how to start.

"$\\lambda_{q_1}, \\dots \\in \\mathbb{R}^d$ are learnable vectors" with no word on how they start
leaves the start to the implementer: `paperlens check` compares the code's start against nothing
the paper says (a guess), `paperlens gaps` asks for it. A paper that says how a parameter starts
("we initialize $\\gamma$ to an all-one vector", "$\\alpha$ is a learnable scalar, initialized to
0.5", "It is initialized to 1." right after the declaration) states it.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterator

from ...schemas import Evidence, PaperSpec
from ..algebra import SKETCH
from ..ingest.positions import span_location
from .formula import Unreadable, read_formula
from .knowledge import symbol_key
from .parts import INLINE_MATH_RE, framing_sections
from .sentences import sentences_of, split_sentences
from .symbols import parse_latex_math

_LEARNABLE_RE = re.compile(r"\b(?:learnable|trainable)\b", re.I)
# A symbol the sentence declares learnable: "$\alpha$ is a learnable scalar", "with $\rho_i$ being a
# learnable parameter", "$A, B \in \mathbb{R}^d$ are learnable"; or "the learnable scale $\alpha$".
_DECLARED_AFTER_RE = re.compile(
    r"^(?:\s*(?:,|,?\s*and)\s*(?:(?!where\b|which\b|while\b|whereas\b|with\b)[A-Za-z-]+\s+){0,3}\$[^$]{1,300}\$){0,8}"  # "$\gamma$ and the shift $\beta$ are learnable": each
    r"\s*,?\s*(?:is|are|being|be)\s+(?:\w+\s+){0,3}?(?:learnable|trainable)(?:\s+[A-Za-z-]+)?\b",
    re.I,
)
# ("a learnable matrix of $K$ entries": $K$ is what the matrix is of, not declared)
_DECLARED_BEFORE_RE = re.compile(r"(?<![\w-])(?:learnable|trainable)(?:\s+(?!(?:of|with|for|in|to|from|by|over|on|at|per)\b)[A-Za-z-]+){0,2}\s*$", re.I)
# "is not learnable", "the non-trainable τ", "fixed rather than learnable": the opposite.
_DENIED_RE = re.compile(r"\b(?:not|never|no|non|un|rather\s+than|instead\s+of|unlike)\W*(?:\w+\W+){0,1}(?:learnable|trainable)\b", re.I)
# A layer's weights or bias, an embedding, a token, a query or a normalisation's affine parameters
# start as the framework starts them ("the mask token $m$ is a learnable vector", "$W^O$ is a
# learnable projection matrix", "the LayerNorm scale $\gamma$ and shift $\beta$ are learnable").
_LAYER_WORDS_RE = re.compile(
    r"\b(?:tokens?|embeddings?|quer(?:y|ies)|projections?|linear|layers?|weights?|bias(?:es)?|encoders?|decoders?|networks?|models?|modules?|mlps?"
    r"|\w+norms?|normali[sz]ations?|affine)\b",
    re.I,
)
_NEXT_WORDS_RE = re.compile(r"(?:\s*[\w-]+){0,2}")
# "$\gamma$ and shift $\beta$": one declaration goes on; "$g$, the margin $m$": a new one starts.
_BARE_COORDINATION_RE = re.compile(r"\s*(?:,|,?\s*and)\s*(?!(?:the|a|an)\b)(?:[A-Za-z-]+\s+)?", re.I)
_CLAUSE_START_RE = re.compile(r".*(?:[,;:]|\band\b|\bwhere\b|\bwith\b)", re.I | re.S)
# What follows a symbol in its own math span: its domain or value (`\in \mathbb{R}^d`, `= 0.5`), not symbols declared.
_DOMAIN_RE = re.compile(r"\\in\b|=|\\subset|>|<|\\geq|\\leq")
_INITIALISED_RE = re.compile(r"\binitiali[sz]\w*|\binit\b|\binitial(?:ly)?\b|\bdefault\s+value|\bstart(?:s|ed|ing)?\s+(?:at|from|with)\b|\bat\s+the\s+(?:start|beginning)\b", re.I)
# "All weights are initialized from N(0, 0.02)": a start stated for every parameter.
_EVERY_PARAMETER_RE = re.compile(r"\b(?:all|every)\s+(?:(?:the|other|model|network|learnable|trainable)\s+){0,2}(?:weights|parameters)\b", re.I)
# A few words between a symbol and "initialized" still say how it starts ("α is initialized to").
_SAID_BEFORE_RE = re.compile(r"^\s*(?:\S+\s+){0,3}(?:initiali[sz]|initial\b|starts?\s+(?:at|from|with)\b)", re.I)
# "It is initialized to 1.", "We set its initial value to 0.5": the start of what the sentence before declared.
_REFERS_BACK_RE = re.compile(r"\b(?:it|its|they|their|them|these|those|both|each)\b", re.I)


def learnable_symbols(spec: PaperSpec) -> dict[str, tuple[str, Evidence]]:
    """The symbols the method declares learnable and no sentence says how to start: each by the name
    the formula reader gives it → (its LaTeX, the words declaring it learnable)."""
    framing = framing_sections(spec)
    learnable: dict[str, tuple[str, Evidence]] = {}
    started: set[str] = set()
    # A table row that starts a symbol: "$\alpha$ initialization | 0.5".
    for table in spec.tables:
        for row in table.rows:
            if row and _INITIALISED_RE.search(row[0]):
                started |= {name for math in INLINE_MATH_RE.finditer(row[0]) for _, name in _symbols_named(math[1])}
    declared_last: tuple[int, set[str]] = (-1, set())  # the paragraph whose last sentence declared, and what
    for index, paragraph in enumerate(spec.paragraphs):
        if not _INITIALISED_RE.search(paragraph.text) and ("$" not in paragraph.text or not _LEARNABLE_RE.search(paragraph.text)):
            continue
        # What the sentence before declared: the paragraph's, or for its first sentence the end of the
        # paragraph just before ("... is a learnable scalar." then "We set its initial value to 0.5.").
        declared_before = declared_last[1] if declared_last[0] == index - 1 else set()
        for sentence in sentences_of(paragraph):
            text = sentence.text
            declares = paragraph.section_id not in framing and _LEARNABLE_RE.search(text)
            initialised = _INITIALISED_RE.search(text)
            if initialised and "$" not in text and _REFERS_BACK_RE.search(text):
                started |= declared_before
            declared_before = set()
            if not (declares or initialised):
                continue
            if initialised and _EVERY_PARAMETER_RE.search(text):
                return {}  # every parameter's start is stated
            maths = list(INLINE_MATH_RE.finditer(text))
            # A declaration excluded for all it coordinates ("the LayerNorm scale $\gamma$ and shift
            # $\beta$ are"), up to a symbol with a noun phrase of its own (", the margin $m$").
            excluded_until, excluded_end = -1, -1
            for index, math in enumerate(maths):
                named = _symbols_named(math[1])
                # Started: named after "initialized", a few words before it, or with no other formula
                # until it ("$\alpha$ is a learnable scalar parameter, initialized to 1").
                start_said = initialised and (
                    math.start() > initialised.start()
                    or _SAID_BEFORE_RE.match(text[math.end() :])
                    or _INITIALISED_RE.search(text, math.end(), maths[index + 1].start() if index + 1 < len(maths) else len(text))
                )
                if start_said:
                    started |= {name for _, name in named}
                after = declares and _DECLARED_AFTER_RE.match(text[math.end() :])
                before = declares and not after and _DECLARED_BEFORE_RE.search(text[: math.start()])
                said_words = text[math.end() : math.end() + after.end()] if after else text[max(0, before.start() - 30) : math.start()] if before else ""
                # the declaration's words with the few after them ("a learnable null-condition token")
                following = _NEXT_WORDS_RE.match(text, math.end() + len(said_words)).group()  # "token", not "of the model"
                around = _clause_before(text, math.start()) + " " + said_words + " " + following
                coordinated = math.start() < excluded_until and _BARE_COORDINATION_RE.fullmatch(text[excluded_end : math.start()])
                if _DENIED_RE.search(said_words) or _LAYER_WORDS_RE.search(around) or coordinated:
                    if after:
                        excluded_until, excluded_end = max(excluded_until, math.end() + len(said_words)), math.end()
                    after = before = None
                if named and (after or before):
                    # The quote: the symbol and the words declaring it ("$\rho_i$ being a learnable parameter").
                    start, end = (math.start(), math.end() + after.end()) if after else (before.start(), math.end())
                    said = Evidence(quote=" ".join(text[start:end].split()), location=span_location(paragraph, sentence.start + start, sentence.start + end))
                    for latex, name in named:
                        learnable.setdefault(name, (latex, said))
                    declared_before |= {name for _, name in named}
        declared_last = (index, declared_before)
    return {name: said for name, said in learnable.items() if name not in started}


def _clause_before(text: str, position: int) -> str:
    """The words of the clause before `position` (at most 60 characters): "the mask token " of
    "where the mask token $m$ is learnable"."""
    before = text[max(0, position - 60) : position]
    found = _CLAUSE_START_RE.match(before)
    return before[found.end() :] if found else before


def _symbols_named(math: str) -> list[tuple[str, str]]:
    r"""The symbols a math span names before its domain or value: `\mathbf{u}, \mathbf{v} \in
    \mathbb{R}^d` → u, v; `\alpha = 0.5` → alpha; a formula of several names (`y = x + b`) → y."""
    return [(piece, name) for piece in _pieces(math) if (name := _name_of(piece))]


def _pieces(math: str) -> list[str]:
    """The comma-separated parts of a math span before its domain or value."""
    head = _DOMAIN_RE.split(math, maxsplit=1)[0]
    pieces, depth, start = [], 0, 0
    for position, character in enumerate(head):
        depth += 1 if character == "{" else -1 if character == "}" else 0
        if character == "," and depth == 0:
            pieces.append(head[start:position])
            start = position + 1
    pieces.append(head[start:])
    return [piece.strip() for piece in pieces if piece.strip()]


@functools.lru_cache(maxsize=1024)
def _name_of(latex: str) -> str | None:
    r"""The one name the formula reader gives a symbol's LaTeX (`\mathbf{\lambda_{q_1}}` → lambda_q1)."""
    try:
        expression = read_formula(f"y = {latex}", SKETCH).expression
    except Unreadable:
        return None
    return next(iter(expression.names)) if len(expression.names) == 1 and not expression.operations else None


# -- a learnable matrix's shape ----------------------------------------------------------------------

# A declaration that calls its symbols a learnable matrix, the noun right after the adjective (one
# word apart): "$W$ is a learnable projection matrix", "$W_Q$, $W_K$, and $W_V$ are trainable
# matrices" (the other symbols of the list are group 1), "the learnable weight matrices $W_1$ and
# $W_2$" (the list after it, `_LIST_AFTER_RE`). Not "$x$ is multiplied by a learnable matrix", "a
# learnable matrix and $\sigma$ ...", "the learned attention matrix", which is computed, nor "Let $M$
# be a learnable matrix", which a proof supposes.
_MATRIX_AFTER_RE = re.compile(
    r"((?:\s*(?:,|,?\s*and)\s*\$[^$]{1,300}\$){0,8})\s*,?\s*(?:is|are|being)\s+(?:also\s+)?(?:an?\s+|the\s+|two\s+|three\s+)?(?:[A-Za-z-]+\s+)?"
    r"(?:learnable|trainable)\s+(?:[A-Za-z-]+\s+)?matri(?:x|ces)\b",
    re.I,
)
_MATRIX_BEFORE_RE = re.compile(r"(?<![\w-])(?:learnable|trainable)\s+(?:(?!(?:and|or|that|which|of|with|for|to|in|by)\b)[A-Za-z-]+\s+)?matri(?:x|ces)\s*$", re.I)
_LIST_AFTER_RE = re.compile(r"(?:\s*(?:,|,?\s*and)\s*\$[^$]{1,300}\$){1,8}")
# What gives a matrix's width by what it is: an embedding, a token, a query, a codebook or a
# positional encoding (the model's width), or a matrix of a network's layer.
_NOT_ASKED_RE = re.compile(r"\b(?:embeddings?|encodings?|tokens?|quer(?:y|ies)|codebooks?|prototypes?|layers?)\b", re.I)
_FONT_RE = re.compile(r"\\(?:mathbf|bm|boldsymbol|mathrm|mathit|bf|rm|mathsf|text|textbf|operatorname)\b|[\s{}]")
# one symbol, with its indices (`W^O`, `W_i^Q`, `\Theta_1`), not a formula
_ONE_SYMBOL_RE = re.compile(r"^(?:\\[A-Za-z]+|[A-Za-z])(?:[_^](?:\\[A-Za-z]+|[\w']+))*$")
# Words that give a shape or a domain, or make it follow from another's ("square", "diagonal",
# "of the same size as"): where the matrix stands with one of them, its shape is said.
_SHAPE_WORDS_RE = re.compile(
    r"(?=[\\∈×→sdorcl-])(?:"  # the first characters below: most positions fail at once (8× faster on 1 MB)
    r"\\in\b|∈|\\times|×|\\mathbb|\\to\b|→|\bshapes?\b|\bsizes?\b|\bdimension\w*|-dimensional|-by-|\blinear\s*\(|\bsquare\b|\bdiagonal\b|\bscalars?\b|\bof\s+rank\b|\brows?\b|\bcolumns?\b)",
    re.I,
)
# A size of the model given anywhere outside the framing ("a hidden size of 256", a row "Hidden
# units | 256" or "$d_{\text{model}}$ | 512", "256 hidden units", "300-dimensional", "$d = 256$"): an
# implementer takes a matrix's shape from it, and the question is not asked. Not an image's size, a
# count of parameters ("model sizes from 125M") or a point's coordinates ("3-dimensional").
_MODEL_SIZE_RE = re.compile(
    r"(?=[\w$])(?:\b(?:(?:hidden|model|embedding|latent|feature|projection|head|inner|intermediate|attention|key|query|value|state)\s+(?:dim(?:ension(?:ality)?)?|width)s?\b"
    r"|(?:hidden|embedding|latent|feature|projection|head|inner|intermediate|state)\s+sizes?\b|hidden[\s_\\]+(?:units|dim)\b|dimension\s+of\s+the\s+(?:hidden|latent|embedding|feature)"
    r"|hidden\s+layers?\s+of\s+(?:size|width)|widths?\s+(?:of\s+)?\$?\d{2,}|d_\{?\\?(?:text|mathrm)?\{?(?:model|hidden|ff)\b|d\s*=\s*\d{2,})"
    r"|(?<![\d.])(?:\d{2,}\$?|\$[^$]{1,20}\$)\s+(?:hidden\s+|output\s+|input\s+)?(?:units|neurons|channels|features)\b|(?<![\d.])\d{2,}\$?-(?:dimensional|d)\b)",
    re.I,
)
# a clause ends at a comma, a semicolon or a sentence's end outside math (a math span is skipped whole);
# one that opens with a preposition goes on the one before ("$W$ is a matrix, of size $d \times k$")
_CLAUSE_END_RE = re.compile(r"\$[^$]{1,300}\$|[,;]|\.(?=\s)")
_MATH_SPAN_RE = re.compile(r"\$[^$]{1,300}\$")
_PROSE_DOMAIN_RE = re.compile(r"((?<![\w\\])[A-Za-z][\w']{0,6}(?:\s*,\s*[A-Za-z][\w']{0,6}){0,8})\s*∈")
_CONTINUED_RE = re.compile(r"\s*(?:of|in|with|both|each|all|having|whose)\b", re.I)
_LEFT_SYMBOL_RE = re.compile(r"\\[A-Za-z]+|[A-Za-z]")
_MATRIX_WORD_RE = re.compile(r"\bmatri(?:x|ces)\b", re.I)
# "its shape", "the matrix" (not "the adjacency matrix $\hat A$": another one)
_REFERS_TO_MATRIX_RE = re.compile(r"\b(?:its|their)\s+(?:shapes?|sizes?|dimensions?)\b|\b(?:the|this|these|both|each|all)\s+(?:[\w-]+\s+)?(?:matrix|matrices|projections?)\b(?!\s*\$)", re.I)
_SENTENCES_AFTER = 3  # after a declaration, read for its shape
_MATRICES_READ = 100  # declared matrices checked per paper: a hostile paper declares thousands
_USES_READ = 1000  # a symbol's uses read in the formulas


def _plain(latex: str) -> str:
    r"""LaTeX without fonts, braces or spaces: `{\bm{W}}_{1}` and `\mathbf{W}_1` → `W_1`."""
    return _FONT_RE.sub("", latex)


def unshaped_matrices(spec: PaperSpec) -> list[tuple[list[str], Evidence]]:
    r"""The declarations of learnable matrices ("$W$ is a learnable projection matrix", "$W_Q$, $W_K$
    and $W_V$ are trainable matrices") whose shape the paper gives nowhere, each with its symbols
    (LaTeX) and its words: not in the declaration's math (`\in \mathbb{R}^{d \times k}`), in no
    clause, caption, table row or display equation naming the matrix (or a numbered one's family)
    with a shape, a domain or a size ("$A$ and $B$ are $d \times d$ square matrices"), in none of the
    sentences after it that names it or refers back ("The shape of the matrix is ..."), not fixed by
    a formula (applied to what the formula computes, so square; added to another term), and not in
    a paper that gives any size of its model ("a hidden size of 256"), from which an implementer
    would take it. Its output size is otherwise a choice the implementer makes alone; a vector's or
    an embedding's follows from what it is added to, and is not asked."""
    framing = framing_sections(spec)
    declarations: list[tuple[list[str], Evidence]] = []
    read: set[str] = set()  # a sentence said again declares nothing new
    for number, paragraph in enumerate(spec.paragraphs):
        if paragraph.kind != "text" or paragraph.section_id in framing or "$" not in paragraph.text or not _MATRIX_WORD_RE.search(paragraph.text):
            continue
        spans = split_sentences(paragraph.text)
        for index, (sentence_start, sentence_end) in enumerate(spans):
            text = paragraph.text[sentence_start:sentence_end]
            if text in read or sum(len(symbols) for symbols, _ in declarations) >= _MATRICES_READ or not _MATRIX_WORD_RE.search(text):
                continue
            read.add(text)
            declared_until = -1  # the end of the list a declaration has taken
            for math in INLINE_MATH_RE.finditer(text):
                if math.start() < declared_until:
                    continue
                after = _MATRIX_AFTER_RE.match(text, math.end())
                before = None if after else _MATRIX_BEFORE_RE.search(text, max(0, math.start() - 80), math.start())
                if not (after or before):
                    continue
                listed = after[1] if after else (more[0] if (more := _LIST_AFTER_RE.match(text, math.end())) else "")
                start, end = (math.start(), after.end()) if after else (before.start(), math.end() + len(listed))
                declared_until = end
                maths = [math[1], *(m[1] for m in INLINE_MATH_RE.finditer(listed))]
                if any(_SHAPE_WORDS_RE.search(m) for m in maths) or _DENIED_RE.search(text[max(0, start - 30) : end]):
                    continue
                if _NOT_ASKED_RE.search(_clause_before(text, math.start()) + " " + text[start:end]):
                    continue
                symbols = [piece for m in maths for piece in _pieces(m) if _ONE_SYMBOL_RE.match(_plain(piece))]
                if symbols and not _said_after(symbols, _sentences_after(spec, number, spans, index)):
                    quote = " ".join(text[start:end].split())
                    declarations.append((symbols, Evidence(quote=quote, location=span_location(paragraph, sentence_start + start, sentence_start + end))))
    if not declarations or _gives_a_model_size(spec):
        return []
    shaped = _shaped_symbols(spec)
    follows = _shape_follows(_formulas(spec), {_plain(symbol) for symbols, _ in declarations for symbol in symbols})
    return [(symbols, said) for symbols, said in declarations if not any(_plain(symbol) in follows or _shape_said(shaped, symbol) for symbol in symbols)]


def _shape_said(shaped: set[str], latex: str) -> bool:
    r"""Whether a symbol (its LaTeX) is among the symbols given a shape (`_shaped_symbols`), written
    as in math or as in a PDF's text (`W_q`, `Wq`), or, for a numbered one, as its family (`W_l \in
    \mathbb{R}^{d \times d}` for `W_1`)."""
    found = parse_latex_math(latex).symbols
    symbol = found[0].symbol if found else latex
    base, _, index = symbol.partition("_")
    return symbol_key(symbol) in shaped or index.isdigit() and any(symbol_key(f"{base}_{letter}") in shaped for letter in "ijklmn")


def _said_after(symbols: list[str], sentences: Iterator[str]) -> bool:
    """Whether one of the sentences after a declaration gives its shape: one with a shape word that
    refers back ("The shape of the matrix is $d \\times k$.") or names one of its symbols ("The matrix
    $W$ (see Sec. 3) is of size ...")."""
    for sentence in sentences:
        if _SHAPE_WORDS_RE.search(sentence) and (
            _REFERS_TO_MATRIX_RE.search(sentence) or any(_shape_said(_named_in(sentence), symbol) for symbol in symbols)
        ):
            return True
    return False


def _sentences_after(spec: PaperSpec, number: int, spans: list[tuple[int, int]], index: int) -> Iterator[str]:
    """The `_SENTENCES_AFTER` sentences after a paragraph's `index`-th, going on into the next
    paragraphs of its section (a display equation may stand between)."""
    paragraph = spec.paragraphs[number]
    told = [paragraph.text[start:end] for start, end in spans[index + 1 : index + 1 + _SENTENCES_AFTER]]
    for following in spec.paragraphs[number + 1 :]:
        if len(told) >= _SENTENCES_AFTER or following.section_id != paragraph.section_id:
            break
        if following.kind == "text":
            told += [following.text[start:end] for start, end in split_sentences(following.text)[: _SENTENCES_AFTER - len(told)]]
    yield from told


def _gives_a_model_size(spec: PaperSpec) -> bool:
    framing = framing_sections(spec)
    texts = [paragraph.text for paragraph in spec.paragraphs if paragraph.section_id not in framing]
    texts += [" ".join(row) for table in spec.tables if table.section_id not in framing for row in table.rows]
    return any(_MODEL_SIZE_RE.search(text) for text in texts)


def _shaped_symbols(spec: PaperSpec) -> set[str]:
    """The symbols (by `symbol_key`) that a clause of the paper's prose (sentences, captions,
    footnotes; table rows read with their table's first row) or a display equation names beside
    a shape, a domain or a size. A clause, not a sentence: "$\\lambda$ is a scalar, $W$ is a
    learnable matrix" gives W nothing."""
    prose = [paragraph.text for paragraph in spec.paragraphs]
    prose += [" ".join(table.rows[0] + row) for table in spec.tables for row in table.rows[1:]]
    shaped = {key for text in prose for clause in _shaping_clauses(text) for key in _named_in(clause)}
    return shaped | {symbol_key(symbol) for equation in spec.equations if _SHAPE_WORDS_RE.search(equation.latex or equation.text) for symbol in equation.symbols}


def _named_in(clause: str) -> set[str]:
    """The symbols (by `symbol_key`) a clause names: those of its math, and the names its prose
    gives a domain ("Wq, Wk ∈ Rd×d" in a PDF's text; not the article of "A 3×3 convolution")."""
    named = {symbol_key(found.symbol) for math in _MATH_SPAN_RE.finditer(clause) for found in parse_latex_math(math.group()[1:-1]).symbols}
    for names in _PROSE_DOMAIN_RE.finditer(_MATH_SPAN_RE.sub(" ", clause)):
        named |= {symbol_key(name.strip()) for name in names.group(1).split(",")}
    return named


def _shaping_clauses(text: str) -> list[str]:
    """The clauses of a text with a shape word, each with the clause before it when it opens with a
    preposition: one pass over the text."""
    ends = [cut.start() for cut in _CLAUSE_END_RE.finditer(text) if cut.group()[0] != "$"] + [len(text)]
    found = []
    for i in sorted({bisect.bisect_left(ends, shape.start()) for shape in _SHAPE_WORDS_RE.finditer(text)}):
        start = ends[i - 1] + 1 if i else 0
        if i and _CONTINUED_RE.match(text, start):
            start = ends[i - 2] + 1 if i > 1 else 0
        found.append(text[start : ends[i]])
    return found


def _formulas(spec: PaperSpec) -> list[str]:
    """The paper's inline and display math, without fonts, braces or spaces."""
    formulas = [_plain(math[1]) for paragraph in spec.paragraphs if "$" in paragraph.text for math in INLINE_MATH_RE.finditer(paragraph.text)]
    return formulas + [_plain(equation.latex) for equation in spec.equations if equation.latex]


def _shape_follows(formulas: list[str], symbols: set[str]) -> set[str]:
    r"""The symbols whose shape a formula fixes: applied to what its left side names ("$v_t = R(A
    v_{t-1} + b)$", so square) or added to another term ("$QK^\top/\sqrt{d} + B$", so of that
    term's shape). A symbol written more than `_USES_READ` times is taken as fixed (saying less)."""
    rights, starts, lefts = [], [], []
    offset = 0
    for formula in formulas:
        left, _, right = formula.partition("=")
        named = _LEFT_SYMBOL_RE.match(left)
        rights.append(right or left)
        starts.append(offset)
        lefts.append(named.group() if right and named else "")
        offset += len(rights[-1]) + 1
    joined = "\n".join(rights)
    follows = set()
    for symbol in symbols:
        for count, use in enumerate(_uses(joined, symbol)):
            left = lefts[bisect.bisect_right(starts, use.start()) - 1]
            whole = not joined[use.end() : use.end() + 1].isalnum()
            added = whole and (joined[use.end() : use.end() + 1] in ("+", "-") or joined[use.start() - 1 : use.start()] in ("+", "-"))
            after = use.end() + len(left)
            square = left and joined.startswith(left, use.end()) and not joined[after : after + 1].isalnum()
            if added or square or count >= _USES_READ:
                follows.add(symbol)
                break
    return follows


def _uses(text: str, symbol: str) -> Iterator[re.Match[str]]:
    """Each place the symbol starts in the text, with no letter or backslash before it (what follows
    may still go on: "Av")."""
    for use in _literal(symbol).finditer(text):
        before = text[use.start() - 1 : use.start()]
        if not (before.isalpha() or before == "\\"):
            yield use


@functools.lru_cache(maxsize=1024)
def _literal(symbol: str) -> re.Pattern[str]:
    return re.compile(re.escape(symbol))  # a literal: found by a fast scan, unlike a lookbehind's

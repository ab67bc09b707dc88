"""The symbols equations use, in one canonical form, and the sentences that define them.

Canonical form: Greek macros as unicode (\\lambda → λ); subscripts kept after "_" (β_1, W_q,
x_t, σ_min; a compound one in braces: x_{t-1}); a superscript kept only when it labels — a
capital other than T, maybe subscripted (W^Q, W^{K_1}) — while powers, transposes and indices
are dropped and their own symbols read on (e^{-λ t} gives λ, t); font wrappers dropped
(\\mathbf{W} → W); \\mathcal/\\mathscr letters as unicode script capitals (\\mathcal{L} → ℒ);
accents as combining marks, composed where unicode has the letter (\\hat{y} → ŷ).
Operators and function names (\\sum, \\log, \\mathrm{softmax}, any run of three or more
letters), \\text{...}, \\mathbb{...}, numbers, and the index letters a sum or product binds
(the i of \\sum_{i=1}^N) or an integral integrates over are not symbols. From PDF text (no
LaTeX): Greek letters and lone Latin letters, with the digits or subscript digits that follow
them as extracted (β1, x₁ → x_1).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field

from ...schemas import Equation, SymbolDefinition, SymbolInfo
from .knowledge import symbol_key, symbol_vocabulary
from .mathtext import ACCENTS, GREEK, GREEK_LETTERS, SCRIPT_LETTERS
from .sentences import Sentence

_TOKEN_RE = re.compile(r"\\[A-Za-z]+\*?|\\.|[A-Za-z]+|\d+(?:\.\d+)?|\s+|.", re.S)
_FONTS = {"mathbf", "boldsymbol", "bm", "mathit", "mathsf", "mathtt", "mathbfit", "pmb", "mathrm", "mathnormal",
          "textnormal", "mathbold", "bf", "rm", "it"}  # fmt: skip
_SCRIPTS = {"mathcal", "mathscr", "mathfrak"}
_TEXTS = {"text", "textrm", "textit", "textbf", "textsf", "texttt", "mbox", "hbox", "operatorname", "mathop",
          "mathbb", "textup", "emph"}  # fmt: skip
_ONE_ARGUMENT_SKIPPED = {"label", "tag", "hspace", "vspace", "phantom", "hphantom", "vphantom", "color", "kern",
                         "mkern", "eqref", "ref", "cite"}  # fmt: skip
_DELIMITER_SIZES = {"left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr", "biggl", "biggr",
                    "Biggl", "Biggr", "middle"}  # fmt: skip
# A superscript that labels rather than raises: W^Q, W^{K_1} (T is a transpose, \\top renders empty).
_SUPERSCRIPT_LABEL_RE = re.compile(r"[A-SU-Z](?:_?[A-Za-z0-9]+)?")
_INTEGRAL_RE = re.compile(r"\\(?:int|iint|iiint|oint)(?![A-Za-z])")
_BINDER_RE = re.compile(r"\s*([A-Za-z](?:\s*,\s*[A-Za-z])*)\s*(?:=|\\in\b|$)")
_SUBSCRIPT_DIGITS = "₀₁₂₃₄₅₆₇₈₉"
_PDF_SUBSCRIPTS = str.maketrans(_SUBSCRIPT_DIGITS, "0123456789")
_PDF_SYMBOL_RE = re.compile(
    rf"(?<![A-Za-z{GREEK_LETTERS}])(?P<base>[{GREEK_LETTERS}]|[A-Za-z])(?P<sub>\d+|[₀-₉]+|_\w+)?(?![A-Za-z{GREEK_LETTERS}])"
)


@dataclass(slots=True)
class _Node:
    text: str  # a token, or "{" for a group
    start: int
    end: int
    children: list[_Node] = field(default_factory=list)

    @property
    def is_group(self) -> bool:
        return self.text == "{"


@dataclass(slots=True)
class _Scripts:
    """The subscript and superscript after a base, and where each ends in the LaTeX."""

    next: int  # index of the node after them
    sub: list[_Node] | None = None
    sup: list[_Node] | None = None
    sub_end: int = 0
    sup_end: int = 0


@dataclass(frozen=True, slots=True)
class FoundSymbol:
    symbol: str  # canonical
    latex: str  # as written


@dataclass(frozen=True, slots=True)
class ParsedMath:
    symbols: tuple[FoundSymbol, ...]
    only_symbol: bool  # the math is one symbol and nothing else ("$\beta_1$")


@functools.lru_cache(maxsize=8192)
def parse_latex_math(latex: str) -> ParsedMath:
    """The symbols of a piece of LaTeX math, in order of first use."""
    walker = _Walker(latex)
    walker.walk(_tree(latex))
    symbols = tuple(found for found in walker.found if found.symbol not in walker.bound)
    return ParsedMath(symbols, len(walker.found) == 1 and len(symbols) == 1 and walker.others == 0)


def parse_text_math(text: str) -> tuple[FoundSymbol, ...]:
    """The symbols of an equation known only as PDF text."""
    seen: dict[str, FoundSymbol] = {}
    for match in _PDF_SYMBOL_RE.finditer(text):
        sub = match["sub"] or ""
        if sub and sub[0] in _SUBSCRIPT_DIGITS:
            sub = "_" + sub.translate(_PDF_SUBSCRIPTS)
        symbol = match["base"] + sub
        seen.setdefault(symbol, FoundSymbol(symbol, match.group(0)))
    return tuple(seen.values())


def _tree(latex: str) -> list[_Node]:
    """Tokens of `latex` with `{...}` groups nested; whitespace dropped (math ignores it)."""
    stack: list[_Node] = [_Node("{", 0, len(latex))]
    for match in _TOKEN_RE.finditer(latex):
        token = match.group(0)
        if token == "{":
            stack.append(_Node("{", match.start(), match.end()))
        elif token == "}":
            if len(stack) > 1:
                group = stack.pop()
                group.end = match.end()
                stack[-1].children.append(group)
        elif not token.isspace():
            stack[-1].children.append(_Node(token, match.start(), match.end()))
    while len(stack) > 1:  # unbalanced: close what is open
        group = stack.pop()
        stack[-1].children.append(group)
    return stack[0].children


class _Walker:
    """Walks a math tree once, collecting symbols, bound letters and a count of everything else."""

    def __init__(self, latex: str) -> None:
        self.latex = latex
        self.vocabulary = symbol_vocabulary()
        self.found: list[FoundSymbol] = []
        self.seen: set[str] = set()  # the symbols of `found`
        self.bound: set[str] = set()
        self.others = 0
        self.integral = bool(_INTEGRAL_RE.search(latex))
        self.bind_next = False

    def walk(self, nodes: list[_Node]) -> None:
        i = 0
        while i < len(nodes):
            i = self._step(nodes, i)

    def _step(self, nodes: list[_Node], i: int) -> int:
        node = nodes[i]
        if node.is_group:
            single = self._single_symbol(node.children)
            if single is not None:  # {\bm{x}}_t is x_t
                return self._symbol(nodes, i + 1, single, node.start)
            self.walk(node.children)
            return self._read_scripts_of_operator(nodes, i + 1)
        token = node.text
        if token.startswith("\\") and len(token) > 1 and token[1].isalpha():
            return self._command(nodes, i, token[1:].rstrip("*"))
        if token.isascii() and token.isalpha():
            return self._letters(nodes, i)
        if token in GREEK_LETTERS:
            return self._symbol(nodes, i + 1, token, node.start)
        if token == "'":
            return i + 1
        self.others += 1
        return self._read_scripts_of_operator(nodes, i + 1)

    # -- pieces --

    def _command(self, nodes: list[_Node], i: int, name: str) -> int:
        start = nodes[i].start
        if name in GREEK:
            return self._symbol(nodes, i + 1, GREEK[name], start)
        if name in _SCRIPTS:
            argument, j = self._argument(nodes, i + 1)
            letter = self._render(argument)
            return self._symbol(nodes, j, SCRIPT_LETTERS.get(letter, letter) if name != "mathfrak" else letter, start)
        if name in _FONTS:
            argument, j = self._argument(nodes, i + 1)
            inner = self._render(argument)
            if inner == "d":
                self.bind_next = self.integral  # \mathrm{d}x: a differential; in an integral x is bound
                return j
            if len(inner) >= 2 and inner.isalpha():
                self.others += 1  # \mathrm{softmax}: an operator's name
                return self._skip_scripts(nodes, j)
            single = self._single_symbol(argument)
            if single is not None:
                return self._symbol(nodes, j, single, start)
            self.walk(argument)
            return self._skip_scripts(nodes, j)
        if name in _TEXTS:
            _, j = self._argument(nodes, i + 1)
            self.others += 1
            return self._read_scripts_of_operator(nodes, j)
        if name in ACCENTS:
            argument, j = self._argument(nodes, i + 1)
            single = self._single_symbol(argument)
            if single is not None:  # NFC: x̂ as one character where unicode has it, as PDFs give it
                return self._symbol(nodes, j, unicodedata.normalize("NFC", single + ACCENTS[name]), start)
            self.walk(argument)
            return j
        if name in ("begin", "end"):
            argument, j = self._argument(nodes, i + 1)
            if name == "begin" and self._render(argument) in ("array", "tabular") and j < len(nodes):
                j += 1  # the column specification
            return j
        if name in _ONE_ARGUMENT_SKIPPED:
            return self._argument(nodes, i + 1)[1]
        if name in _DELIMITER_SIZES:
            following = i + 1
            if following < len(nodes) and not nodes[following].is_group:
                following += 1  # the delimiter itself: ( [ \{ .
            return following
        self.others += 1
        if name in self.vocabulary.binding_commands:
            return self._read_scripts_of_operator(nodes, i + 1, binds=True)
        return self._read_scripts_of_operator(nodes, i + 1)

    def _letters(self, nodes: list[_Node], i: int) -> int:
        node = nodes[i]
        word = node.text
        if len(word) == 1 or word in self.vocabulary.multi_letter_symbols:
            if word == "d" and self.integral and i + 1 < len(nodes) and nodes[i + 1].text not in "_^":
                self.bind_next = True  # d x: x is integrated over
                return i + 1
            return self._symbol(nodes, i + 1, word, node.start)
        if word in self.vocabulary.operator_words or len(word) >= 3:
            self.others += 1
            return self._read_scripts_of_operator(nodes, i + 1)
        if word[0] == "d" and self.integral:
            self.bound.add(word[1])  # dx
            self.others += 1
            return i + 1
        # Two letters are a product (QK): the first stands alone, the second takes the scripts.
        self._emit(word[0], word[0])
        nodes[i] = _Node(word[1], node.start + 1, node.end)
        return self._symbol(nodes, i + 1, word[1], node.start + 1)

    def _symbol(self, nodes: list[_Node], i: int, base: str, start: int) -> int:
        """A symbol whose base ends before nodes[i]: read its scripts and emit it."""
        scripts = self._scripts(nodes, i)
        sub, sup = scripts.sub, scripts.sup
        canonical, end = base, nodes[i - 1].end
        if sub is not None:
            canonical, end = canonical + "_" + self._subscript(sub), scripts.sub_end
        rendered_sup = self._render(sup) if sup is not None else ""
        labelled = bool(_SUPERSCRIPT_LABEL_RE.fullmatch(rendered_sup))
        if labelled:
            canonical, end = canonical + "^" + self._subscript(sup), max(end, scripts.sup_end)
        if not (base == "e" and sup is not None):  # e^{x}: Euler's number
            self._emit(canonical, self.latex[start:end])
        if sup is not None and not labelled and rendered_sup not in ("T", ""):
            self.walk(sup)  # a power or index: its own symbols count, it is no part of the name
        return scripts.next

    def _emit(self, symbol: str, latex: str) -> None:
        if self.bind_next:
            self.bound.add(symbol)
            self.bind_next = False
            return
        if symbol not in self.seen:  # a set: an equation may hold thousands of symbols
            self.seen.add(symbol)
            self.found.append(FoundSymbol(symbol, latex))

    # -- scripts and arguments --

    def _scripts(self, nodes: list[_Node], i: int) -> _Scripts:
        scripts = _Scripts(next=i)
        while i < len(nodes) and nodes[i].text in ("_", "^", "'"):
            mark = nodes[i].text
            if mark == "'":
                i += 1
                continue
            argument, i = self._argument(nodes, i + 1, script=True)
            end = nodes[i - 1].end
            if mark == "_":
                scripts.sub, scripts.sub_end = argument, end
            else:
                scripts.sup, scripts.sup_end = argument, end
        scripts.next = i
        return scripts

    def _read_scripts_of_operator(self, nodes: list[_Node], i: int, *, binds: bool = False) -> int:
        """Scripts of something that is no symbol (\\sum_{i=1}^{N}): their symbols count."""
        scripts = self._scripts(nodes, i)
        if scripts.sub is not None:
            if binds and (binder := _BINDER_RE.match(self._raw(scripts.sub))):
                self.bound.update(re.findall(r"[A-Za-z]", binder.group(1)))
            self.walk(scripts.sub)
        if scripts.sup is not None:
            self.walk(scripts.sup)
        return scripts.next

    def _skip_scripts(self, nodes: list[_Node], i: int) -> int:
        return self._scripts(nodes, i).next

    def _argument(self, nodes: list[_Node], i: int, *, script: bool = False) -> tuple[list[_Node], int]:
        """The argument at nodes[i]: a group's content, a command with its own argument, or one token."""
        if i >= len(nodes):
            return [], i
        node = nodes[i]
        if node.is_group:
            return node.children, i + 1
        name = node.text[1:].rstrip("*")
        if node.text.startswith("\\") and (name in _FONTS | _TEXTS | _SCRIPTS or name in ACCENTS):
            inner, j = self._argument(nodes, i + 1)
            return [node, _Node("{", nodes[i + 1].start if i + 1 < len(nodes) else node.end, node.end, inner)], j
        if script and len(node.text) > 1 and not node.text.startswith("\\"):
            # x_ij is x_i followed by j: a script takes one character.
            nodes.insert(i + 1, _Node(node.text[1:], node.start + 1, node.end))
            return [_Node(node.text[0], node.start, node.start + 1)], i + 1
        return [node], i + 1

    def _single_symbol(self, nodes: list[_Node]) -> str | None:
        inner = _Walker(self.latex)
        inner.walk(list(nodes))
        if len(inner.found) == 1 and inner.others == 0 and not inner.bound:
            return inner.found[0].symbol
        return None

    def _subscript(self, nodes: list[_Node]) -> str:
        rendered = self._render(nodes)
        return rendered if len(rendered) == 1 or rendered.isalnum() else "{" + rendered + "}"

    def _render(self, nodes: list[_Node]) -> str:
        """Script or argument content as text: Greek as unicode, wrappers dropped, spaces gone."""
        parts = []
        for node in nodes:
            if node.is_group:
                parts.append(self._render(node.children))
            elif node.text.startswith("\\"):
                name = node.text[1:].rstrip("*")
                parts.append(GREEK.get(name, ""))
            else:
                parts.append(node.text)
        return "".join(parts)

    def _raw(self, nodes: list[_Node]) -> str:
        return self.latex[nodes[0].start : nodes[-1].end] if nodes else ""


# --- the spec's symbols --------------------------------------------------------------------------


_DEFINES_AFTER_RE = re.compile(
    r"(?i)\s*,?\s*(?:(?:is|are)\s+(?:the|a|an|our|defined|called|referred|used\s+to|chosen\s+to)\b"
    r"|(?:denotes?|represents?|indicates?|refers?\s+to|stands?\s+for|controls?|weigh(?:t?s)?|balances?|scales?"
    r"|determines?|governs?|specifies|measures?|corresponds?\s+to)\b)"
)
_DEFINES_BEFORE_RE = re.compile(
    r"(?i)\b(?:weigh\w*|scal\w*|control\w*|parameteri[sz]\w*|govern\w*|balanc\w*|modulat\w*|determin\w*|"
    r"denot\w*|represent\w*|given|set)(?:\s+[\w-]+){0,4}\s+(?:by|as|with)\s*$"
)
# A clause that introduces a symbol: "where λ weighs ...", "where τ > 0 is ...", "let x be ...".
_INTRODUCING_BEFORE_RE = re.compile(r"(?i)\b(?:where|here|whereby)\s*,?\s*$")
_LET_BEFORE_RE = re.compile(r"(?i)\blet\s*$")
_BE_AFTER_RE = re.compile(r"(?i)\s+be\b")
_NOT_ONE_SYMBOL_RE = re.compile(r"[=<>+,;|]|\\(?:frac|sum|prod|int|cdot|times|in|sim|le|ge|approx)\b")
# A constraint on the symbol it follows, a number, an interval or a set: "$\tau > 0$",
# "$\lambda_{init} \in (0,1)$", "$x \in \mathbb{R}^d$"; in PDF prose "τ > 0", "x ∈ ℝd".
_LATEX_CONSTRAINT_RE = re.compile(
    r"\s*(?:[<>]|\\(?:geq?|leq?|in|neq?)(?![A-Za-z]))\s*"
    r"(?:[-+]?\s*[\d.]+|[(\[].*[)\]]|\\(?:mathbb|mathcal|R)(?![A-Za-z]).*)\s*$"
)
_PLAIN_CONSTRAINT_RE = re.compile(r"\s*[<>≤≥∈≠]\s*(?:[-+]?[\d.]+|[(\[][^()\[\]]*[)\]]|[ℝℕℤ]\S*)")
_WITH_BEFORE_RE = re.compile(r"(?i)\bwith\s*$")
_WITH_AFTER_RE = re.compile(r"(?i)\s*,?\s+(?:being\s+|denoting\s+|as\s+)?(?:the|a|an)\b")
_IS_AFTER_RE = re.compile(r"(?i)\s*(?:is|are)\b")
# A condition before "m is ...": the sentence uses the symbol ("compute w when m is close to 0").
_CONDITION_BEFORE_RE = re.compile(
    r"(?i)\b(?:when|whenever|if|unless|while|as|once|since|because|until|whether|than)\s*$"
)
_NOUN_PHRASE = r"(?:(?!(?:of|in|on|at|for|to|with|by|from|and|or|is|are)\b)[A-Za-z-]+\s+){1,3}$"
_INDEFINITE_APPOSITIVE_BEFORE_RE = re.compile(rf"(?i)\b(?:a|an)\s+{_NOUN_PHRASE}")
_DEFINITE_APPOSITIVE_BEFORE_RE = re.compile(rf"(?i)\b(?:the|our)\s+{_NOUN_PHRASE}")


def symbols_of_equation(equation: Equation) -> tuple[FoundSymbol, ...]:
    if equation.latex is not None:
        return parse_latex_math(equation.latex).symbols
    return parse_text_math(equation.text)


def build_symbols(
    equations: list[Equation],
    symbols_by_equation: list[tuple[FoundSymbol, ...]],
    sentences: list[Sentence],
    stated_values: dict[str, float | str],
) -> list[SymbolInfo]:
    """One SymbolInfo per symbol of the equations, with its defining sentence and stated value."""
    infos: dict[str, SymbolInfo] = {}
    for equation, found in zip(equations, symbols_by_equation, strict=True):
        for symbol in found:
            info = infos.get(symbol.symbol)
            if info is None:
                info = infos[symbol.symbol] = SymbolInfo(
                    symbol=symbol.symbol, latex=symbol.latex if equation.latex is not None else None
                )
            if equation.id not in info.equations:
                info.equations.append(equation.id)
    by_key = {symbol_key(symbol): info for symbol, info in infos.items()}
    for key, definition in symbol_definitions(sentences, set(by_key)).items():
        by_key[key].definition = definition
    for key, value in stated_values.items():
        if key in by_key:
            by_key[key].value_given = True
            by_key[key].value = value
    return list(infos.values())


# A paper defines a symbol at one of its first mentions; reading every mention of `$x$` in a paper
# that writes it a hundred thousand times would only cost time.
_MENTIONS_READ = 200


def symbol_definitions(sentences: list[Sentence], keys: set[str]) -> dict[str, SymbolDefinition]:
    """For each symbol key, the first of its most definite defining sentences."""
    best: dict[str, tuple[int, SymbolDefinition]] = {}
    prose_symbols = _prose_symbol_regex(keys)
    mentions_left = dict.fromkeys(keys, _MENTIONS_READ)
    for sentence in sentences:
        if not mentions_left:
            break
        for key, start, end in _symbol_mentions(sentence, keys, prose_symbols):
            if key not in mentions_left:
                continue
            rank = _definition_rank(sentence.plain.text, start, end)
            if rank is not None and (key not in best or rank < best[key][0]):
                best[key] = (rank, SymbolDefinition(text=sentence.text, location=sentence.location()))
            mentions_left[key] -= 1
            if mentions_left[key] == 0 or best.get(key, (1,))[0] == 0:
                del mentions_left[key]  # none plainer can follow, or it is defined, if ever, before
    return {key: definition for key, (_, definition) in best.items()}


def _symbol_mentions(
    sentence: Sentence, keys: set[str], prose_symbols: re.Pattern[str] | None
) -> Iterator[tuple[str, int, int]]:
    """(symbol key, plain start, plain end) of each mention of a known symbol: a `$...$` holding
    just the symbol, maybe constrained ("$\\tau > 0$"), in LaTeX prose; the symbol as a word in PDF prose."""
    plain = sentence.plain
    if plain.math:
        for start, end in plain.math:
            source_start, source_end = plain.source_span(start, end)
            content = _LATEX_CONSTRAINT_RE.sub("", sentence.text[source_start:source_end], count=1)
            if len(content) > 40 or _NOT_ONE_SYMBOL_RE.search(content):
                continue  # a formula, not a symbol: no need to parse it
            parsed = parse_latex_math(content)
            if parsed.only_symbol and (key := symbol_key(parsed.symbols[0].symbol)) in keys:
                yield key, start, end
    elif prose_symbols is not None and "$" not in sentence.text:
        for match in prose_symbols.finditer(plain.text):
            yield symbol_key(match.group(0)), match.start(), match.end()


_PROSE_SYMBOLS = 1_000  # a paper has a few hundred symbols; past this the regex only costs time


def _prose_symbol_regex(keys: set[str]) -> re.Pattern[str] | None:
    """Symbols as PDF prose writes them (λ, β1, β_1), Latin letters that are words left out."""
    words = symbol_vocabulary().words_in_prose
    keys = sorted(sorted(key for key in keys if key not in words)[:_PROSE_SYMBOLS], key=len, reverse=True)
    if not keys:
        return None
    spellings = [re.escape(key[0]) + "_?" + re.escape(key[1:]) if len(key) > 1 else re.escape(key) for key in keys]
    return re.compile(rf"(?<![\w\\])(?:{'|'.join(spellings)})(?![\w])")


def _definition_rank(text: str, start: int, end: int) -> int | None:
    """How plainly the sentence defines the symbol at text[start:end]; lower is plainer, None when
    it merely uses the symbol ("to compute w when m is close to 0").

    0: a clause that introduces it: "where λ weighs ...", "where τ > 0 is ...", "let x be ...";
    1: "λ denotes/is the ...", "weighted by λ", "with τ the temperature";
    2: an indefinite noun phrase that introduces it: "we draw a mixing coefficient m";
    3: "N is number of patches", but not after a condition ("when m is close to 0");
    4: a definite noun phrase that refers back to it: "the weight λ".
    """
    if text.startswith("-", end):
        return None  # "α-Precision", "β-VAE": a word, not the symbol
    before = text[max(0, start - 60) : start]
    if constraint := _PLAIN_CONSTRAINT_RE.match(text, end):
        end = constraint.end()  # PDF prose: "where τ > 0 is the temperature"
    defines_after = _DEFINES_AFTER_RE.match(text, end)
    if _INTRODUCING_BEFORE_RE.search(before) and (defines_after or _IS_AFTER_RE.match(text, end)):
        return 0
    if _LET_BEFORE_RE.search(before) and _BE_AFTER_RE.match(text, end):
        return 0
    if defines_after or _DEFINES_BEFORE_RE.search(before):
        return 1
    if _WITH_BEFORE_RE.search(before) and _WITH_AFTER_RE.match(text, end):
        return 1
    if _INDEFINITE_APPOSITIVE_BEFORE_RE.search(before):
        return 2
    if _IS_AFTER_RE.match(text, end) and not _CONDITION_BEFORE_RE.search(before):
        return 3
    if _DEFINITE_APPOSITIVE_BEFORE_RE.search(before):
        return 4
    return None

"""An equation's right-hand side as an expression, read from its LaTeX with ML notation, built by
an algebra of pipeline/algebra.py (a sketch of names and operations by default, SymPy to compare).

Off-the-shelf LaTeX parsers read few real equations and apply school conventions (γ as Euler's
constant, case folded: ../shared/recipes/latex-to-sympy.md). This reader is small and explicit:
symbols keep their case, Greek names, decorations and subscripts (`\\hat{x}_t` → `x_hat_t`); fonts
(`\\mathbf`, `\\boldsymbol`) are dropped; juxtaposition multiplies; `\\frac`, powers, roots,
`\\cdot`/`\\times`/`\\odot` (element-wise: a product here; two bold vectors dotted, an inner product), softmax, `\\tanh`/`\\exp`/`\\log`/`\\sigma(·)`
(the sigmoid, as ML papers write it)/`\\max(0, ·)`/`\\min`/absolute values; sums over an index
(`\\sum_i x_i` sums x), means (`\\frac{1}{N}\\sum_{i=1}^{N}`, `\\mathbb{E}[·]`). What it cannot read
(matrices and their products, operator names it does not know, several equations in one)
raises Unreadable: a comparison on half an equation would be wrong, so it is not made. Nesting and
length are bounded by explicit counts (MAX_FORMULA_DEPTH, MAX_FORMULA_CHARS), never by Python's
recursion limit."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..algebra import SKETCH, Unreadable

MAX_FORMULA_DEPTH = 60
MAX_FORMULA_CHARS = 2_000  # a longer right-hand side is a derivation, not a formula to compare

_TOKEN_RE = re.compile(r"\\[A-Za-z]+|\\.|\d+(?:\.\d+)?|[A-Za-z]|\S")
_DEFINING_RE = re.compile(r":=|\\triangleq|\\coloneqq|\\equiv|(?<![<>!])=")
# An alignment environment around one equation (`\\begin{aligned} ... \\end{aligned}`) only lays it out.
_LAYOUT_RE = re.compile(r"\\(?:begin|end)\{(?:aligned|split|gathered|alignedat)\*?\}(?:\{\d+\})?")
_IGNORED = {
    "\\left", "\\right", "\\big", "\\Big", "\\bigg", "\\Bigg", "\\bigl", "\\bigr", "\\Bigl", "\\Bigr",
    "\\,", "\\;", "\\:", "\\!", "\\quad", "\\qquad", "\\displaystyle", "\\textstyle", "\\nonumber", "\\notag", "&", "\\ ",
    "\\mathopen", "\\mathclose", "\\mathord", "\\bgroup", "\\egroup", "\\originalleft", "\\originalright", "\\relax",
}  # fmt: skip
_FONTS = {"\\mathbf", "\\boldsymbol", "\\bm", "\\mathit", "\\mathsf", "\\mathnormal", "\\pmb", "\\vec", "\\mathcal", "\\mathscr"}
_NAMES = {"\\mathrm", "\\text", "\\textrm", "\\operatorname"}  # a name, or an operator when applied
_DECORATIONS = {"\\hat": "hat", "\\widehat": "hat", "\\bar": "bar", "\\overline": "bar", "\\tilde": "tilde", "\\widetilde": "tilde", "\\dot": "dot"}
_GREEK = {
    "alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "pi", "rho", "varrho", "sigma", "tau", "upsilon", "phi", "varphi", "chi", "psi", "omega",
    "Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Upsilon", "Phi", "Psi", "Omega", "ell",
}  # fmt: skip
_FUNCTIONS = {"\\tanh": "tanh", "\\exp": "exp", "\\log": "log", "\\ln": "log", "\\sin": "sin", "\\cos": "cos"}
_PRODUCTS = {"\\cdot", "\\times", "\\odot", "*"}
_BOLD = {"\\mathbf", "\\boldsymbol", "\\bm", "\\pmb", "\\vec"}
# A norm's bars: `\\|x\\|`, `\\lVert x \\rVert`, `\\Vert x \\Vert` (`||x||`: two bars, read where it opens).
_NORM_OPENS = {"\\|": "\\|", "\\Vert": "\\Vert", "\\lVert": "\\rVert"}
_CLOSERS = {"+", "-", ")", "]", "}", ",", "|", "\\|", "\\Vert", "\\rVert", "\\rangle"}


@dataclass(frozen=True, slots=True)
class Formula:
    expression: Any  # the right-hand side, built by the algebra the reader was given


def read_formula(latex: str, algebra: Any = SKETCH) -> Formula:
    """The equation's right-hand side (its last, when it is a chain `a = b = c`) as an expression of
    `algebra` (pipeline/algebra.py); Unreadable saying why not."""
    text = _LAYOUT_RE.sub(" ", latex).strip().rstrip(".,;").strip()
    if len(text) > 2 * MAX_FORMULA_CHARS:
        raise Unreadable("too long to compare")
    signs = _top_level_signs(text)
    if len(signs) > 2 or any("," in text[start:end] or "\\\\" in text[start:end] for start, end in zip(signs, signs[1:])):
        raise Unreadable("several equations in one")  # `a = b, \quad c = d`
    right = text[signs[-1] :] if signs else text
    if len(right) > MAX_FORMULA_CHARS:
        raise Unreadable("too long to compare")
    tokens = [t for t in _TOKEN_RE.findall(right) if t not in _IGNORED]
    parser = _Parser(tokens, algebra)
    expression = parser.expression()
    if parser.position != len(tokens):
        raise Unreadable(f"cannot read {''.join(tokens[parser.position:parser.position + 4])!r}")
    return Formula(expression)


def defined_name(latex: str) -> str | None:
    """The one symbol an equation defines (`\\hat{x}_t = ...` → x_hat_t, `\\delta_{k} = ...` →
    delta_k), or None when its left side is not one symbol (`w(m) = ...`, `a + b = c`) or it has
    several defining signs."""
    text = _LAYOUT_RE.sub(" ", latex).strip()
    signs = _top_level_signs(text)
    if len(signs) != 1:
        return None
    sign = next((m for m in _DEFINING_RE.finditer(text) if m.end() == signs[0]), None)
    left = text[: sign.start()] if sign else ""
    tokens = [t for t in _TOKEN_RE.findall(left) if t not in _IGNORED]
    if not tokens or len(tokens) > 40:
        return None
    parser = _Parser(tokens, SKETCH)
    try:
        sketch = parser.atom()
    except (Unreadable, IndexError):
        return None
    if parser.position != len(tokens) or sketch.operations or len(sketch.names) != 1:
        return None
    return next(iter(sketch.names))


def _top_level_signs(text: str) -> list[int]:
    """Where each defining sign outside any brackets ends, in one pass."""
    ends, depth, position = [], 0, 0
    for match in _DEFINING_RE.finditer(text):
        for char in text[position : match.start()]:
            depth += 1 if char in "{([" else -1 if char in "})]" else 0
        position = match.start()
        if depth == 0:
            ends.append(match.end())
    return ends


class _Parser:
    def __init__(self, tokens: list[str], algebra: Any) -> None:
        self.tokens = tokens
        self.algebra = algebra
        self.indices: list[str | None] = []  # the indices of the sums being read
        self.open_norms = 0  # norms being read: a `\\|` then closes one rather than opening another
        self.position = 0
        self.depth = 0
        self.vector = False  # whether the last symbol read is a vector (bold and lowercase: `\\mathbf{u}`)

    # -- tokens
    def peek(self) -> str | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise Unreadable(f"expected {expected or 'more'}")
        self.position += 1
        return token

    def deeper(self) -> None:
        self.depth += 1
        if self.depth > MAX_FORMULA_DEPTH:
            raise Unreadable(f"nested more than {MAX_FORMULA_DEPTH} levels")

    # -- grammar
    def expression(self) -> Any:
        self.deeper()
        sign = -1 if self.peek() == "-" else 1
        if self.peek() in ("-", "+"):
            self.take()
        total = sign * self.term()
        while self.peek() in ("+", "-"):
            sign = -1 if self.take() == "-" else 1
            total = total + sign * self.term()
        self.depth -= 1
        return total

    def term(self) -> Any:
        # The factors before the last, and the last: `a \\mathbf{u} \\cdot \\mathbf{v}` dots u and v only.
        before, last = None, self.power()
        while (token := self.peek()) is not None and (token not in _CLOSERS or token in _NORM_OPENS and not self.open_norms):
            self.take() if token in _PRODUCTS or token == "/" else None
            left_is_vector = self.vector
            factor = self.power()
            if token == "\\cdot" and left_is_vector and self.vector:
                last = self.algebra.apply("sum", last * factor)  # two vectors dotted: their inner product
                continue
            before = last if before is None else before * last
            last = 1 / factor if token == "/" else factor  # a product, a quotient or juxtaposition
        return last if before is None else before * last

    def power(self) -> Any:
        negated = False
        while self.peek() == "-":  # `a \cdot -b`
            self.take()
            negated = not negated
        base = self.atom()
        if self.peek() == "^":
            self.take()
            base = self.algebra.power(base, self.argument())
        return -base if negated else base

    def argument(self) -> Any:
        """A script or a command's argument: a braced group or a single token."""
        if self.peek() == "{":
            return self.group()
        return self.atom()

    def group(self) -> Any:
        self.take("{")
        inner = self.expression()
        self.take("}")
        return inner

    def atom(self) -> Any:
        self.deeper()
        token = self.take()
        self.vector = False
        result = self._atom(token)
        self.depth -= 1
        return result

    def _atom(self, token: str) -> Any:
        if token[0].isdigit():
            return self.algebra.number(token)
        if token == "{" and self.peek() == "}":
            self.take()
            return self.algebra.number("1")  # `{}`, as after `\\mathopen`: nothing, in a product
        if token == "{":
            self.position -= 1
            start = self.position
            inner = self.group()
            letters = [t.lstrip("\\") for t in self.tokens[start + 1 : self.position - 1] if t not in _FONTS and t not in ("{", "}")]
            if self.peek() == "_" and len(letters) == 1 and (len(letters[0]) == 1 and letters[0].isalpha() or letters[0] in _GREEK):
                return self._symbol(letters[0], "")  # `{x}_t`, `{\\bm{x}}_t`: a braced letter with a subscript is one symbol
            return inner
        if token in ("(", "["):
            inner = self.expression()
            self.take(")" if token == "(" else "]")
            return inner
        if token in _NORM_OPENS or (token == "|" and self.peek() == "|"):
            return self._norm(token)
        if token == "|":
            inner = self.expression()
            self.take("|")
            return self.algebra.apply("abs", inner)
        if token == "\\langle":
            left = self.expression()
            self.take(",")
            right = self.expression()
            self.take("\\rangle")
            return self.algebra.apply("sum", left * right)  # an inner product: the sum of the products
        if token == "\\frac" or token == "\\tfrac" or token == "\\dfrac":
            if self.tokens[self.position : self.position + 3] == ["{", "1", "}"] and self.peek_after_group(3) == "\\sum":
                return self._average()
            numerator = self.argument()
            return numerator / self.argument()
        if token == "\\sqrt":
            if self.peek() == "[":
                self.take()
                order = self.expression()
                self.take("]")
                return self.algebra.power(self.argument(), 1 / order)
            return self.algebra.apply("sqrt", self.argument())
        if token == "\\sum":
            return self.algebra.apply("sum", self._reduction()[0])
        if token == "\\mathbb" and self.peek() == "{" and self.tokens[self.position + 1 : self.position + 3] == ["E", "}"]:
            self.position += 3
            return self._expectation()
        if token in _FUNCTIONS:
            return self.algebra.apply(_FUNCTIONS[token], self._call_argument())
        if token == "\\sigma" and self.peek() == "(":
            return 1 / (1 + self.algebra.apply("exp", -self._call_argument()))
        if token in ("\\max", "\\min"):
            self.take("(")
            first = self.expression()
            self.take(",")
            second = self.expression()
            self.take(")")
            return self.algebra.apply(token[1:], first, second)
        if token in _FONTS:
            name = self._name_in_group()
            symbol = self._symbol(name, "")
            self.vector = token in _BOLD and (name[0].islower() or name.partition("_")[0] in _GREEK)
            return symbol
        if token in _NAMES:
            name = self._name_in_group()
            if self.peek() == "(" and name.lower() == "softmax":  # over an index not tracked, as a sum is
                exponential = self.algebra.apply("exp", self._call_argument())
                return exponential / self.algebra.apply("sum", exponential)
            if self.peek() == "(":
                raise Unreadable(f"the operator {name}")
            return self._symbol(name, "")
        if token in _DECORATIONS:
            return self._symbol(self._name_in_group(), "_" + _DECORATIONS[token])
        if token.startswith("\\") and token[1:] in _GREEK:
            return self._symbol(token[1:], "")
        if len(token) == 1 and token.isalpha():
            return self._symbol(token, "")
        raise Unreadable(f"cannot read {token!r}")

    def _norm(self, opening: str) -> Any:
        """`\\|x\\|`, `\\|x\\|_2`, `\\|x\\|_1`: the square root of the sum of squares, or the sum of
        absolute values; its power, if any, is read after it."""
        if opening == "|":
            self.take("|")
        self.open_norms += 1
        inner = self.expression()
        self.open_norms -= 1
        if opening == "|":
            self.take("|")
            self.take("|")
        else:
            self.take(_NORM_OPENS[opening])
        order = "2"
        if self.peek() == "_":
            self.take()
            order = "".join(self._script_tokens())
        if order == "1":
            return self.algebra.apply("sum", self.algebra.apply("abs", inner))
        if order not in ("2", "F"):
            raise Unreadable(f"a norm of order {order}")
        return self.algebra.apply("sqrt", self.algebra.apply("sum", inner * inner))

    def peek_after_group(self, skip: int) -> str | None:
        """The token after `skip` tokens and the braced group that follows them."""
        position = self.position + skip
        if position >= len(self.tokens) or self.tokens[position] != "{":
            return None
        depth = 0
        while position < len(self.tokens):
            depth += 1 if self.tokens[position] == "{" else -1 if self.tokens[position] == "}" else 0
            position += 1
            if depth == 0:
                return self.tokens[position] if position < len(self.tokens) else None
        return None

    def _reduction(self) -> tuple[Any, str | None]:
        """After `\\sum`: its summand (the index dropped from the symbols it subscripts: `x_i` is x)
        and the name of its upper bound when that is one letter (`\\sum_{i=1}^{N}`)."""
        index = upper = None
        if self.peek() == "_":
            self.take()
            script = self._script_tokens()
            index = script[0].lstrip("\\") if script else None
        if self.peek() == "^":
            self.take()
            bound = self._script_tokens()
            upper = bound[0] if len(bound) == 1 else None
        self.indices.append(index)
        try:
            return self.term(), upper
        finally:
            self.indices.pop()

    def _average(self) -> Any:
        """`\\frac{1}{N} \\sum_{i=1}^{N} x_i`: a mean when N is the sum's own bound, else the sum over N."""
        self.position += 3  # {1}
        denominator = self._script_tokens()
        self.take("\\sum")
        summand, upper = self._reduction()
        if len(denominator) == 1 and denominator[0] == upper:
            return self.algebra.apply("mean", summand)
        if len(denominator) == 1 and denominator[0].isdigit():  # `\frac{1}{2} \sum`: half the sum
            return self.algebra.apply("sum", summand) / self.algebra.number(denominator[0])
        if len(denominator) != 1 or not (denominator[0].isalpha() or denominator[0].lstrip("\\") in _GREEK):
            raise Unreadable("a sum over what it does not name")
        return self.algebra.apply("sum", summand) / self.algebra.symbol(denominator[0].lstrip("\\"))

    def _expectation(self) -> Any:
        """`\\mathbb{E}_{x \\sim p}[f(x)]`: the mean of what the brackets hold (over what: not compared)."""
        if self.peek() == "_":
            self.take()
            self._script_tokens()
        self.take("[")
        inner = self.expression()
        self.take("]")
        return self.algebra.apply("mean", inner)

    def _script_tokens(self) -> list[str]:
        """A script's tokens as written: a braced group's, or the one token (with its argument when it
        is a font or a name: `_\\mathrm{KL}` is the subscript KL)."""
        if self.peek() != "{":
            token = self.take()
            if (token in _FONTS or token in _NAMES) and self.peek() == "{":
                return [token, "{", *self._script_tokens(), "}"]
            return [token]
        self.take("{")
        tokens, depth = [], 1
        while True:
            token = self.take()
            depth += 1 if token == "{" else -1 if token == "}" else 0
            if depth == 0:
                return tokens
            tokens.append(token)

    def _call_argument(self) -> Any:
        if self.peek() == "(":
            self.take()
            inner = self.expression()
            self.take(")")
            return inner
        return self.argument()  # `\exp x`, `\log{x}`

    def _name_in_group(self) -> str:
        """The name inside `\\mathbf{W}`, `\\hat{x}` or `\\mathbf{\\lambda_{q_1}}`: letters or a Greek
        letter, maybe with fonts and a subscript of its own."""
        tokens = self._script_tokens()
        letters = [t for t in tokens if t not in _FONTS and t not in _NAMES and t not in ("{", "}")]
        base, _, subscript = (letters[: letters.index("_")], "_", letters[letters.index("_") + 1 :]) if "_" in letters else (letters, "", [])
        subscript = [t for t in subscript if t != "_"]  # `\lambda_{q_1}`: one subscript, q1, as code spells it
        parts = [t.lstrip("\\") for t in (*base, *subscript)]
        if not base or not all(p.isalnum() and (not t.startswith("\\") or p in _GREEK) for p, t in zip(parts, (*base, *subscript))):
            raise Unreadable("a name that is not one symbol")
        name = "".join(parts[: len(base)])
        return name + ("_" + "".join(parts[len(base) :]) if subscript else "")

    def _symbol(self, name: str, decoration: str) -> Any:
        name += decoration
        if self.peek() == "_":
            self.take()
            subscript = self._subscript()
            if subscript not in self.indices:  # `x_i` inside `\\sum_i`: the summed x
                name += "_" + subscript
        if self.peek() == "^" and self.tokens[self.position + 1 : self.position + 3] == ["{", "("]:
            self.take()
            tag = self._subscript()  # `x^{(k)}`: the k-th x, a name, not a power
            name += "_" + tag.strip("()")
        if self.peek() == "'":
            self.take()
            name += "_prime"
        return self.algebra.symbol(name)

    def _subscript(self) -> str:
        """A subscript as part of the symbol's name: `x_t`, `W_{Q}`, `\\beta_1` (an index expression
        like `t-1` stays as written)."""
        # A subscript's own subscript joins it (`\\lambda_{q_1}` → lambda_q1), as inside a font group.
        return "".join(t.lstrip("\\") for t in self._script_tokens() if t not in _FONTS and t not in _NAMES and t not in ("{", "}", "_"))

"""Prose with inline LaTeX math → one plain unicode form, with a map back to the original offsets.

Readers keep inline math of LaTeX sources as `$...$` ("$3\\times10^{-4}$", "$\\beta_1=0.9$") while
PDFs give unicode ("3 × 10−4", "β1 = 0.9"). Every extractor works on this normalized form
("3×10^-4", "β_1=0.9"), so one set of patterns serves every format; `source_span` maps a match
back to the original text so locations and raw values stay exact.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

GREEK = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "zeta": "ζ",
    "eta": "η", "theta": "θ", "vartheta": "θ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν",
    "xi": "ξ", "pi": "π", "varpi": "π", "rho": "ρ", "varrho": "ρ", "sigma": "σ", "varsigma": "σ", "tau": "τ",
    "upsilon": "υ", "phi": "φ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ",
    "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ", "Pi": "Π", "Sigma": "Σ", "Upsilon": "Υ", "Phi": "Φ", "Psi": "Ψ",
    "Omega": "Ω",
}  # fmt: skip
GREEK_LETTERS = "".join(sorted(set(GREEK.values()))) + "ϵϑϕϱϖ"
# Greek spelled out, for a symbol's snake_case name (λ → "lambda").
GREEK_NAMES = {letter: name.lower() for name, letter in GREEK.items() if not name.startswith("var")}
GREEK_NAMES.update({"ϵ": "epsilon", "ϑ": "theta", "ϕ": "phi", "ϱ": "rho", "ϖ": "pi"})

SCRIPT_LETTERS = dict(zip("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "𝒜ℬ𝒞𝒟ℰℱ𝒢ℋℐ𝒥𝒦ℒℳ𝒩𝒪𝒫𝒬ℛ𝒮𝒯𝒰𝒱𝒲𝒳𝒴𝒵", strict=True))
ACCENTS = {"hat": "\u0302", "widehat": "\u0302", "tilde": "\u0303", "widetilde": "\u0303", "bar": "\u0304",
           "overline": "\u0304", "vec": "\u20d7", "dot": "\u0307", "ddot": "\u0308"}  # fmt: skip

# Commands that stand for a character of the plain form.
_SYMBOL_COMMANDS = {
    **GREEK, "times": "×", "texttimes": "×", "cdot": "·", "percent": "%", "le": "≤", "leq": "≤", "ge": "≥",
    "geq": "≥", "approx": "≈", "sim": "∼", "pm": "±", "infty": "∞", "to": "→", "rightarrow": "→", "in": "∈",
    "ldots": "…", "dots": "…", "cdots": "…", "textminus": "-", "quad": " ", "qquad": " ", "ell": "ℓ",
}  # fmt: skip
# Commands that only style their argument: dropped, the argument (braces removed) stays.
_WRAPPERS = {
    "text", "textrm", "textit", "textbf", "textsf", "texttt", "emph", "mathrm", "mathbf", "mathit", "mathsf",
    "mathtt", "boldsymbol", "bm", "pmb", "mathbfit", "operatorname", "mbox", "num", "SI", "si", "ensuremath",
    "displaystyle", "textstyle", "scriptstyle", "left", "right", "big", "Big", "bigl", "bigr", "Bigl", "Bigr",
}  # fmt: skip

_TOKEN_RE = re.compile(
    r"\\(?:mathcal|mathscr)\s*\{\s*([A-Z])\s*\}"  # 1: script capitals: \mathcal{L} → ℒ
    r"|\\([A-Za-z]+)\s*"  # 2: a command (LaTeX eats the spaces after it)
    r"|\\([,;:! >])"  # 3: spacing
    r"|\\([%$&_#{}])"  # 4: escaped characters
    r"|(\{,\})"  # 5: 1{,}000
    r"|([{}]+)"  # 6: grouping, dropped
    r"|(\$)"  # 7: math on/off
    r"|(~)"  # 8: unbreakable space
    r"|([₀₁₂₃₄₅₆₇₈₉]+)"  # 9: unicode subscript digits: β₁ → β_1
)
_NEEDS_WORK_RE = re.compile(r"[\\{}$~₀₁₂₃₄₅₆₇₈₉]")
_SUBSCRIPT_DIGITS = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")


@dataclass(slots=True)
class PlainText:
    """`text` is the plain form of `source`; `math` holds the plain spans that were `$...$`."""

    text: str
    source: str
    math: list[tuple[int, int]] = field(default_factory=list)
    # One piece per run of output: (plain start, source start, source end, copied verbatim?).
    _starts: list[int] = field(default_factory=list)
    _pieces: list[tuple[int, int, int, bool]] = field(default_factory=list)

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """The source offsets of `text[start:end]` (a replaced piece maps to all of its source)."""
        if not self._pieces:
            return start, end
        source_start, source_end = self._source_offset(start, at_end=False), self._source_offset(end, at_end=True)
        # Close the braces the span opened: "10^{-4" → "10^{-4}".
        unclosed = self.source.count("{", source_start, source_end) - self.source.count("}", source_start, source_end)
        while unclosed > 0 and self.source.startswith("}", source_end):
            source_end += 1
            unclosed -= 1
        return source_start, source_end

    def _source_offset(self, offset: int, *, at_end: bool) -> int:
        probe = offset - 1 if at_end and offset > 0 else offset
        i = max(0, bisect.bisect_right(self._starts, probe) - 1)
        plain_start, source_start, source_end, verbatim = self._pieces[i]
        if verbatim:
            return min(source_end, source_start + (offset - plain_start))
        return source_end if at_end else source_start

    def in_math(self, start: int, end: int) -> bool:
        span = self._last_math_from(start)
        return span is not None and end <= span[1]

    def math_span(self, offset: int) -> tuple[int, int] | None:
        """The `$...$` span (plain offsets) that holds `offset`, if any."""
        span = self._last_math_from(offset)
        return span if span is not None and offset < span[1] else None

    def _last_math_from(self, offset: int) -> tuple[int, int] | None:
        """The last math span starting at or before `offset` (the spans are in order, apart): a
        sentence with thousands of formulas costs each lookup a bisection, not a scan."""
        i = bisect.bisect_right(self.math, (offset, float("inf"))) - 1
        return self.math[i] if i >= 0 else None


def to_plain(source: str) -> PlainText:
    """The plain unicode form of prose that may hold LaTeX markup and inline math."""
    if not _NEEDS_WORK_RE.search(source):
        return PlainText(source, source)
    out: list[str] = []
    pieces: list[tuple[int, int, int, bool]] = []
    math: list[tuple[int, int]] = []
    length = position = 0
    math_start = -1
    for match in _TOKEN_RE.finditer(source):
        start, end = match.span()
        if start > position:
            pieces.append((length, position, start, True))
            out.append(source[position:start])
            length += start - position
        position = end
        group = match.lastindex
        if group == 7:
            if math_start < 0:
                math_start = length
            else:
                math.append((math_start, length))
                math_start = -1
            continue
        if group == 6:
            continue
        if group == 2:
            command = match.group(2)
            piece = _SYMBOL_COMMANDS.get(command, "" if command in _WRAPPERS else match.group(0))
        elif group == 1:
            piece = SCRIPT_LETTERS[match.group(1)]
        elif group == 3:
            piece = "" if match.group(3) == "!" else " "
        elif group == 4:
            piece = match.group(4)
        elif group == 5:
            piece = ","
        elif group == 8:
            piece = " "
        else:
            piece = "_" + match.group(9).translate(_SUBSCRIPT_DIGITS)
        if piece:
            pieces.append((length, start, end, False))
            out.append(piece)
            length += len(piece)
    if position < len(source):
        pieces.append((length, position, len(source), True))
        out.append(source[position:])
    return PlainText("".join(out), source, math, [piece[0] for piece in pieces], pieces)

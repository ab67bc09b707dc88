"""Text for people: a long quote or message cut to fit, the paper's LaTeX as it reads."""

from __future__ import annotations

import re

from .extract.mathtext import to_plain


def shorten(text: str, limit: int, *, flatten: bool = True) -> str:
    """`text` in at most `limit` characters, cut with an ellipsis; with `flatten`, each run of
    whitespace (line breaks included) first becomes one space."""
    if flatten:
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_NOT_READ_RE = re.compile(r"\\(?:cite[a-z]*|citep|citet|label|footnote|vspace|hspace)\*?(?:\[[^\]]*\])?\{[^{}]*\}")
_REFERENCE_RE = re.compile(r"\\(?:eq|auto|c|C|page)?ref\*?\{([^{}]*)\}")
_WRAPPER_RE = re.compile(r"\\(?:hat|bar|tilde|vec|mathbf|mathrm|mathit|mathcal|mathbb|boldsymbol|bm|text[a-z]*|emph|operatorname)\{([^{}]*)\}")
_LEFT_OVER_COMMAND_RE = re.compile(r"\\[A-Za-z]+\*?\s?")


def readable(latex: str) -> str:
    """A sentence or value of the paper's LaTeX as a person reads it: math as text (3×10^-4, α),
    citations and labels dropped, a reference as its label, no command names left."""
    text = _REFERENCE_RE.sub(r"(\1)", _NOT_READ_RE.sub("", latex))
    while (unwrapped := _WRAPPER_RE.sub(r"\1", text)) != text:  # \hat{\mathbf{h}} → h
        text = unwrapped
    text = text.replace("\\\\", " ").replace("&", "|")  # a table row's cells
    text = _LEFT_OVER_COMMAND_RE.sub("", to_plain(text).text)
    return re.sub(r"\s+([,.;:)])", r"\1", " ".join(text.split()))

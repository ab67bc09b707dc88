"""Functions an anchor ties to an equation the rules could not compare, read by the optional LLM.

The model gets the equation's LaTeX and the function's lines and answers with an `EquationVerdict`.
Its answer is untrusted: it is kept only when the line it quotes is one of the function's and the
span it quotes is in the equation, and it is shown as the model's suggestion (information, low
confidence), never as what paperlens showed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from ...schemas import CodeIndex, CodeLocation, Equation, EquationVerdict, Evidence, Finding, PaperSpec, Undecided
from ..llm import LLMClient, LLMError, LLMRefused, LLMUnavailable
from .equations import read_text

log = logging.getLogger(__name__)

PURPOSE = "equation-verdict"
MAX_FUNCTION_LINES = 80  # longer functions are not sent
MIN_CODE_QUOTE_CHARS = 8  # shorter quotes (`x`, `return`) match anywhere and so show nothing
MIN_PAPER_QUOTE_CHARS = 3

_SYSTEM = (
    "You check whether a Python function computes an equation of a research paper. Compare the "
    "function's result with the equation's right-hand side: the same terms, signs, constant factors "
    "and reductions (a sum is not a mean). Answer `unsure` unless the code shows it. Quote one line "
    "of the function exactly as written, and a span of the equation's LaTeX exactly as written."
)


@dataclass
class Judged:
    findings: list[Finding] = field(default_factory=list)  # the verdicts kept
    failures: list[str] = field(default_factory=list)  # "function vs Eq. (n): why the model gave no usable answer"


def judge_undecided(root: Path, spec: PaperSpec, index: CodeIndex, undecided: list[Undecided], client: LLMClient) -> Judged:
    """The model's verdicts on the pairs the rules left undecided, as findings marked as its own. An
    unusable answer costs its pair only; an endpoint that stops answering or refuses the request (a
    rejected key, an unknown model) ends the asking, keeping the verdicts already made. Raises when
    that happens before any answer."""
    equations = {e.number: e for e in spec.equations if e.number}
    functions = {(f.file, function.qualname): function for f in index.files for function in f.functions}
    judged, answered = Judged(), 0
    for pair in undecided:
        equation, function = equations.get(pair.equation), functions.get((pair.file, pair.function))
        if equation is None or function is None or function.location.end_line is None:
            continue
        lines = _function_lines(root, pair.file, function.location.line, function.location.end_line)
        if lines is None:
            continue
        try:
            verdict = client.structured(_messages(equation, lines), EquationVerdict, purpose=PURPOSE)
        except (LLMUnavailable, LLMRefused) as err:
            if not answered:
                raise
            judged.failures.append(f"{pair.function} vs Eq. ({pair.equation}) and the rest: {err}")
            break
        except LLMError as err:
            judged.failures.append(f"{pair.function} vs Eq. ({pair.equation}): {err}")
            continue
        answered += 1
        finding = _finding(pair, equation, lines, function.location.line, verdict, client.settings.model)
        log.info("llm equations: %s vs Eq. (%s): %s, %s", pair.function, pair.equation, verdict.outcome, "kept" if finding else "dropped")
        if finding is not None:
            judged.findings.append(finding)
    return judged


def _function_lines(root: Path, file: str, first: int, last: int) -> list[str] | None:
    if last - first >= MAX_FUNCTION_LINES:
        log.info("llm equations: %s:%d: longer than %d lines; not sent", file, first + 1, MAX_FUNCTION_LINES)
        return None
    text = read_text(root, file, {})
    return None if text is None else text.splitlines()[first : last + 1]


def _messages(equation: Equation, lines: list[str]) -> list[dict[str, str]]:
    code = "\n".join(lines)
    return [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": f"Equation ({equation.number}):\n{equation.latex or equation.text}\n\nFunction:\n{code}"},
    ]


def _finding(pair: Undecided, equation: Equation, lines: list[str], first: int, verdict: EquationVerdict, model: str) -> Finding | None:
    """A verdict whose quotes are found (the code's on one of the function's lines); else None."""
    if verdict.outcome == "unsure" or (verdict.outcome == "differs" and not verdict.difference.strip()):
        return None
    code_quote, paper_quote = verdict.code_quote.strip(), " ".join(verdict.paper_quote.split())
    line = next((n for n, text in enumerate(lines) if len(code_quote) >= MIN_CODE_QUOTE_CHARS and code_quote in text), None)
    if line is None or len(paper_quote) < MIN_PAPER_QUOTE_CHARS or paper_quote not in " ".join((equation.latex or equation.text).split()):
        return None
    where = CodeLocation(file=pair.file, line=first + line, column=lines[line].index(code_quote), end_line=first + line,
                         end_column=lines[line].index(code_quote) + len(code_quote))  # fmt: skip
    said = f"suggested by a model ({model}), not shown by paperlens; it quotes `{paper_quote}` of the equation"
    differs = verdict.outcome == "differs"
    return Finding(
        id=f"{'divergence' if differs else 'agreement'}:llm:eq{equation.number}:{pair.file}:{first + line + 1}",
        kind="divergence" if differs else "agreement",
        severity="info",
        confidence=0.3,
        confidence_note=said,
        message=f"{pair.function} may differ from Eq. ({equation.number}): {verdict.difference.strip()}"
        if differs
        else f"{pair.function} may compute Eq. ({equation.number}), a model says",
        setting="formula",
        code=where,
        code_value=code_quote,
        paper=[Evidence(quote=equation.latex or equation.text, location=equation.location)],
    )

"""Builders the extraction tests share: papers made of a few hand-written paragraphs (no tests here)."""

from __future__ import annotations

from paperlens.pipeline.extract import enrich
from paperlens.schemas import Equation, Location, PaperSpec, Paragraph, Table


def paragraph(text: str, line: int = 0, section_id: str | None = "sec-1") -> Paragraph:
    """A paragraph written on one source line, so text offset = column."""
    return Paragraph(
        text=text, section_id=section_id, location=Location(file="paper.tex", line=line), offsets=[(0, line, 0)]
    )


def spec_of(
    *texts: str, equations: list[Equation] = (), tables: list[Table] = (), source_format: str = "latex"
) -> PaperSpec:
    return PaperSpec(
        source_format=source_format,
        root=".",
        main_file="paper.tex",
        paragraphs=[paragraph(text, line) for line, text in enumerate(texts)],
        equations=list(equations),
        tables=list(tables),
    )


def enriched(*texts: str, **kwargs) -> PaperSpec:
    return enrich(spec_of(*texts, **kwargs))


def stated(*texts: str, **kwargs) -> dict[str, list[float | str]]:
    """normalized name → values, in order, of what the texts state."""
    found: dict[str, list[float | str]] = {}
    for hyperparameter in enriched(*texts, **kwargs).hyperparameters:
        found.setdefault(hyperparameter.normalized_name, []).append(hyperparameter.value)
    return found


def equation(latex: str | None, text: str | None = None, id: str = "eq-1", line: int = 100) -> Equation:
    return Equation(
        id=id,
        latex=latex,
        text=text if text is not None else latex or "",
        location=Location(file="paper.tex", line=line),
    )


def table(rows: list[list[str]], caption: str = "", id: str = "tab-1", line: int = 200) -> Table:
    return Table(
        id=id,
        caption=caption,
        rows=rows,
        row_locations=[Location(file="paper.tex", line=line + i) for i in range(len(rows))],
        location=Location(file="paper.tex", line=line),
    )

"""The PDF reading of a document agrees with the LaTeX reading of the same document."""

from __future__ import annotations

import pytest

from paperlens.pipeline.ingest import read_paper
from paperlens.pipeline.ingest.agreement import compare_readings

from .conftest import EXAMPLE_PAPER, PDF_PAPERS

SAME_DOCUMENT = {
    "label-smoothing-report": (PDF_PAPERS / "label-smoothing-report" / "article.tex", PDF_PAPERS / "label-smoothing-report" / "article.pdf"),
    "variational-sparse-coding-report": (
        PDF_PAPERS / "variational-sparse-coding-report" / "draft.tex",
        PDF_PAPERS / "variational-sparse-coding-report" / "draft.pdf",
    ),
    "example": (EXAMPLE_PAPER / "main.tex", EXAMPLE_PAPER / "paper.pdf"),
}


@pytest.mark.parametrize("name", SAME_DOCUMENT)
def test_pdf_and_latex_find_the_same_numbered_equations_and_values(name):
    tex, pdf = SAME_DOCUMENT[name]
    agreement = compare_readings(read_paper(tex), read_paper(pdf))
    assert agreement.other_equations == agreement.reference_equations
    assert agreement.value_recall >= 0.8, sorted(agreement.reference_values - agreement.other_values)
    assert agreement.value_precision >= 0.8, sorted(agreement.other_values - agreement.reference_values)


def test_the_comparison_counts_disagreement():
    tex, pdf = SAME_DOCUMENT["example"]
    latex_spec = read_paper(tex)
    missing_one = latex_spec.model_copy(update={"equations": latex_spec.equations[1:]})
    agreement = compare_readings(latex_spec, missing_one)
    numbered = len(agreement.reference_equations)
    assert agreement.equation_recall == pytest.approx((numbered - (1 if latex_spec.equations[0].number else 0)) / numbered)
    assert agreement.equation_precision == 1.0

"""Stated values read from named real papers: the value, its unit, its evidence and where it stands."""

from __future__ import annotations

from pathlib import Path

import pytest

from paperlens.pipeline.ingest import read_paper
from paperlens.schemas import Hyperparameter, PaperSpec

from .conftest import LATEX_PAPERS, PDF_PAPERS


@pytest.fixture(scope="module")
def papers() -> dict[str, PaperSpec]:
    return {}


def _spec(papers: dict[str, PaperSpec], path: Path) -> PaperSpec:
    if path not in papers:
        papers[path] = read_paper(path)
    return papers[path]


def _stated(spec: PaperSpec, name: str, value: float) -> Hyperparameter:
    matches = [h for h in spec.hyperparameters if h.normalized_name == name and h.value == pytest.approx(value)]
    assert matches, f"{name}={value} not found; found {[(h.normalized_name, h.value) for h in spec.hyperparameters]}"
    return matches[0]


def _source_line(spec: PaperSpec, hyperparameter: Hyperparameter) -> str:
    location = hyperparameter.location
    return (Path(spec.root) / location.file).read_text(encoding="utf-8").splitlines()[location.line]


# (paper, normalized name, value, unit, component, words of the evidence, words on the cited source line)
LATEX_CASES = [
    ("Diff-Transformer", "learning_rate", 3.2e-4, None, None, "The maximal learning rate is 3.2e-4", "3.2e-4"),
    ("Diff-Transformer", "warmup_steps", 1000, "steps", "warmup", "1000 warmup steps", "1000 warmup steps"),
    ("Diff-Transformer", "batch_size", 4e6, "tokens", None, "The batch size is 4M tokens", "4M tokens"),
    ("Diff-Transformer", "beta2", 0.95, None, "AdamW", "AdamW", "0.95"),
    ("DyT", "training_tokens", 200e9, "tokens", None, "200B tokens", "200B tokens"),
    ("DyT", "alpha_0", 0.5, None, None, "as the default value for all non-LLM models", "alpha_0 = 0.5"),
]


@pytest.mark.parametrize(("paper", "name", "value", "unit", "component", "evidence", "on_line"), LATEX_CASES)
def test_latex_paper_values(papers, paper, name, value, unit, component, evidence, on_line):
    spec = _spec(papers, LATEX_PAPERS / paper / "paper2code_paper.tex")
    stated = next(
        (h for h in spec.hyperparameters if h.normalized_name == name and h.value == pytest.approx(value) and evidence in h.text),
        None,
    )
    assert stated is not None, [(h.normalized_name, h.value, h.text[:60]) for h in spec.hyperparameters if h.normalized_name == name]
    assert (stated.unit, stated.component) == (unit, component)
    assert on_line in _source_line(spec, stated)


def test_label_smoothing_report_normalises_a_power_of_ten_and_follows_inputs(papers):
    spec = _spec(papers, PDF_PAPERS / "label-smoothing-report" / "article.tex")
    weight_decay = _stated(spec, "weight_decay", 0.04)  # written $4\cdot 10^{-2}$
    assert weight_decay.location.file == "content.tex"
    assert "4\\cdot 10^{-2}" in _source_line(spec, weight_decay)
    momentum = _stated(spec, "momentum", 0.9)
    assert momentum.component == "SGD" and "momentum" in momentum.text


def test_pdf_values_are_located_by_page_and_box(papers):
    spec = _spec(papers, PDF_PAPERS / "variational-sparse-coding-report" / "draft.pdf")
    learning_rate = _stated(spec, "learning_rate", 0.001)
    assert "We fixed a learning rate of" in learning_rate.text
    assert learning_rate.location.page == 4 and learning_rate.location.bbox is not None
    alpha_zero = _spec(papers, PDF_PAPERS / "alpha-zero-writeup" / "writeup.pdf")
    batch = _stated(alpha_zero, "batch_size", 64)
    assert "Adam" in batch.text and batch.location.page == 2


def test_markdown_paper_values(papers):
    spec = _spec(papers, LATEX_PAPERS / "GPS" / "paper2code_paper.md")
    delta = _stated(spec, "delta", 0.0)
    assert "simply set $\\delta=0$" in delta.text
    assert "\\delta=0" in _source_line(spec, delta)


EVERY_PAPER = sorted(p.parent for p in LATEX_PAPERS.glob("*/paper2code_paper.*")) + sorted(PDF_PAPERS.glob("*/*.pdf"))


@pytest.mark.parametrize("paper", EVERY_PAPER, ids=lambda p: p.name if p.suffix else p.name + "/")
def test_every_shared_paper_reads_whole_with_located_items(paper):
    spec = read_paper(paper)
    assert spec.sections and spec.paragraphs
    assert not [p for p in spec.problems if p.severity == "error"]
    items = [*spec.sections, *spec.equations, *spec.tables, *spec.hyperparameters, *spec.components]
    for item in items:
        assert item.location.file in spec.files
        assert item.location.page is not None or item.location.line is not None

"""enrich() as a whole: a copy of the spec, and what it finds in the real papers, fast."""

from __future__ import annotations

from pathlib import Path

import pytest

from paperlens.pipeline.ingest.latex import read_latex

from paperlens.pipeline.extract import enrich

from .conftest import LATEX_PAPERS
from .test_extract_helpers import equation, spec_of

REAL_PAPERS = sorted(LATEX_PAPERS.glob("*/paper2code_paper.tex"))


def test_returns_an_enriched_copy() -> None:
    spec = spec_of("We train for 100 epochs with AdamW.", equations=[equation(r"y = W x")])
    enriched = enrich(spec)
    assert spec.hyperparameters == [] and spec.components == [] and spec.equations[0].symbols == []
    assert [h.normalized_name for h in enriched.hyperparameters] == ["epochs"]
    assert [c.name for c in enriched.components] == ["AdamW"]
    assert enriched.equations[0].symbols == ["y", "W", "x"]
    assert [s.symbol for s in enriched.symbols] == ["y", "W", "x"]
    assert enriched.paragraphs == spec.paragraphs


def test_empty_spec() -> None:
    enriched = enrich(spec_of())
    assert (enriched.hyperparameters, enriched.components, enriched.symbols) == ([], [], [])


def _read(path: Path):
    return read_latex(path, path.parent)


@pytest.fixture(scope="module")
def real_specs():
    assert REAL_PAPERS, "no real papers found"
    return {path.parent.name: _read(path) for path in REAL_PAPERS}


def _values(spec, name: str) -> list[float | str]:
    return [h.value for h in spec.hyperparameters if h.normalized_name == name]


def test_real_papers_known_values(real_specs) -> None:
    diff = enrich(real_specs["Diff-Transformer"])
    assert 3.2e-4 in _values(diff, "learning_rate")
    assert 1000 in _values(diff, "warmup_steps")
    assert {0.9, 0.95} <= set(_values(diff, "beta1") + _values(diff, "beta2"))
    semanticist = enrich(real_specs["semanticist"])
    assert 2.5e-5 in _values(semanticist, "learning_rate")
    assert 0.999 in _values(semanticist, "ema_decay")
    assert 3.0 in _values(semanticist, "grad_clip_norm")
    gmflow = enrich(real_specs["GMFlow"])
    assert _values(gmflow, "learning_rate") == [0.0002]
    assert 200_000 in _values(gmflow, "training_steps")


def test_real_papers_no_metric_values(real_specs) -> None:
    """Reported results never come out as hyperparameters (precision first)."""
    fractalgen = enrich(real_specs["fractalgen"])
    stated = {h.value for h in fractalgen.hyperparameters}
    assert not stated & {6.15, 348.9, 1.29}  # FID, Inception Score, seconds per image
    for spec in real_specs.values():
        for hyperparameter in enrich(spec).hyperparameters:
            assert hyperparameter.normalized_name not in {"accuracy", "fid", "bleu"}
            assert not (isinstance(hyperparameter.value, float) and hyperparameter.value < 0), hyperparameter


def test_real_papers_symbols_and_locations(real_specs) -> None:
    spec = enrich(real_specs["Diff-Transformer"])
    infos = {info.symbol: info for info in spec.symbols}
    assert infos["λ"].definition is not None
    assert "λ_init" in infos
    for hyperparameter in spec.hyperparameters:
        location = hyperparameter.location
        assert location.file and location.line is not None

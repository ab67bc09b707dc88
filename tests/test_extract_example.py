"""The bundled example paper end to end: what its README lists as stated, and nothing it only supposes.

Read as LaTeX and as the PDF typeset from it; both must give the same values and definitions.
"""

from __future__ import annotations

import pytest

from paperlens.pipeline.ingest import read_paper
from paperlens.schemas import PaperSpec

from .conftest import EXAMPLE_PAPER


@pytest.fixture(scope="module", params=["main.tex", "paper.pdf"])
def spec(request) -> PaperSpec:
    return read_paper(EXAMPLE_PAPER / request.param, use_cache=False)


def _stated(spec: PaperSpec, source: str) -> set[tuple[str, float | str, str | None]]:
    return {(h.normalized_name, h.value, h.unit) for h in spec.hyperparameters if h.source == source}


def _symbols(spec: PaperSpec):
    return {info.symbol: info for info in spec.symbols}


def test_values_in_prose_and_footnotes(spec) -> None:
    assert {
        ("grad_clip_norm", 1.0, None),  # stated only in a footnote
        ("init_std", 1e-4, None),
        ("random_erasing_prob", 0.25, "%"),
        ("alpha", 0.4, None),
        ("lambda", 0.5, None),
        ("temperature", 0.5, None),
        ("batch_size", 128, None),
        ("learning_rate", 3e-4, None),  # in the PDF, 10 with a raised −4 set in a text font
    } <= _stated(spec, "text")


def test_table_rows_named_by_words_or_symbols(spec) -> None:
    table = _stated(spec, "table")
    assert {("alpha", 0.4, None), ("temperature", 0.5, None), ("batch_size", 256, None)} <= table
    assert len(table) == 10  # every row of Table 1


def test_supposed_and_compared_values_are_not_settings(spec) -> None:
    # "With τ = 1 TLM reduces to plain input mixing" (a case) and "raising the temperature to
    # τ = 1 ... costs 0.6 points" (a result) state no temperature of 1.
    assert [h for h in spec.hyperparameters if h.normalized_name == "temperature" and h.value != 0.5] == []
    assert [h.text for h in spec.hyperparameters if "reduces to" in h.text or "raising" in h.text] == []
    # The commented-out draft values are no part of the paper.
    stated = {(h.normalized_name, h.value) for h in spec.hyperparameters}
    assert not {("learning_rate", 1e-3), ("batch_size", 512)} & stated


def test_symbol_definitions_and_values(spec) -> None:
    symbols = _symbols(spec)
    tau, lam, m = symbols["τ"], symbols["λ"], symbols["m"]
    assert tau.definition.text.startswith("where")
    assert tau.definition.text.endswith("is the temperature of the label mixing.")
    assert (tau.value_given, tau.value) == (True, 0.5)  # the stated value, not the supposed τ = 1
    assert lam.definition.text.startswith("where") and "weighs the consistency term" in lam.definition.text
    assert (lam.value_given, lam.value) == (True, 0.5)
    assert "we draw a mixing coefficient" in m.definition.text


def test_the_undefined_symbol_stays_undefined(spec) -> None:
    rho = _symbols(spec)["ρ"]
    assert rho.equations  # used in Equation 4 ...
    assert (rho.definition, rho.value_given, rho.value) == (None, False, None)  # ... and never defined

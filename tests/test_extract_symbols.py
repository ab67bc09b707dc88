"""Equation symbols in canonical form, and the sentences that define them or give their values."""

from __future__ import annotations

import pytest

from paperlens.pipeline.extract.symbols import parse_latex_math, parse_text_math

from .test_extract_helpers import enriched, equation


def symbols(latex: str) -> list[str]:
    return [found.symbol for found in parse_latex_math(latex).symbols]


@pytest.mark.parametrize(
    ("latex", "expected"),
    [
        (r"\mathcal{L} = \lambda \mathcal{L}_{\text{KL}} + \beta_1 x", ["ℒ", "λ", "ℒ_KL", "β_1", "x"]),
        (r"Q = X W_q, \quad K = X W_k", ["Q", "X", "W_q", "K", "W_k"]),
        (
            r"\mathbf{x}_t = \sqrt{\bar\alpha_t} \mathbf{x}_0 + \sqrt{1-\bar\alpha_t}\,\boldsymbol{\epsilon}",
            ["x_t", "ᾱ_t", "x_0", "ε"],
        ),
        (r"\mathrm{softmax}\left(\frac{Q K^\top}{\sqrt{d}}\right) V", ["Q", "K", "d", "V"]),
        (r"\sum_{i=1}^{N} \log p_\theta(x_i)", ["N", "p_θ", "x_i"]),
        (r"\int_0^1 f(x)\, \mathrm{d}x", ["f"]),
        (r"\operatorname{Attn}(X) = X W^Q", ["X", "W^Q"]),
        (r"\hat{y} = \sigma(W h + b)", ["ŷ", "σ", "W", "h", "b"]),
        (r"x_{t-1} = \exp(-\tau) x_t", ["x_{t-1}", "τ", "x_t"]),
        (r"{\bm{x}}_t \sim \mathcal{N}(0, \sigma_t^2 \bm{I})", ["x_t", "𝒩", "σ_t", "I"]),
        (r"\text{loss} = \|y - \hat y\|^2_2", ["y", "ŷ"]),
        (r"e^{-\lambda t}", ["λ", "t"]),
    ],
)
def test_latex_symbols(latex: str, expected: list[str]) -> None:
    assert symbols(latex) == expected


def test_latex_spelling_is_kept() -> None:
    found = parse_latex_math(r"\sigma_t^2 + \boldsymbol{\mu}")
    assert [(f.symbol, f.latex) for f in found.symbols] == [("σ_t", r"\sigma_t"), ("μ", r"\boldsymbol{\mu}")]


def test_single_symbol_math() -> None:
    assert parse_latex_math(r"\beta_1").only_symbol
    assert parse_latex_math(r"d_{\text{model}}").only_symbol
    assert not parse_latex_math(r"\lambda = 0.5").only_symbol
    assert not parse_latex_math(r"x + y").only_symbol


def test_pdf_text_symbols() -> None:
    assert [f.symbol for f in parse_text_math("L = λ · KL(q ‖ p) + β1 x₁")] == ["L", "λ", "q", "p", "β1", "x_1"]


def test_spec_symbols_with_definitions_and_values() -> None:
    spec = enriched(
        r"The loss weighs the two terms by $\lambda$.",
        r"Here $\tau$ denotes the temperature and $x$ the input.",
        r"We set $\lambda = 0.5$ in all experiments.",
        r"The temperature $\tau$ is set to 0.07.",
        equations=[
            equation(r"\mathcal{L} = \mathcal{L}_{\text{rec}} + \lambda \mathcal{L}_{\text{KL}}", id="eq:loss"),
            equation(r"p_i = \frac{\exp(s_i / \tau)}{\sum_j \exp(s_j / \tau)}", id="eq:softmax"),
        ],
    )
    assert spec.equations[0].symbols == ["ℒ", "ℒ_rec", "λ", "ℒ_KL"]
    assert spec.equations[1].symbols == ["p_i", "s_i", "τ", "s_j"]
    infos = {info.symbol: info for info in spec.symbols}
    assert list(infos) == ["ℒ", "ℒ_rec", "λ", "ℒ_KL", "p_i", "s_i", "τ", "s_j"]
    lam = infos["λ"]
    assert lam.equations == ["eq:loss"]
    assert lam.latex == r"\lambda"
    assert lam.definition is not None and lam.definition.text == r"The loss weighs the two terms by $\lambda$."
    assert lam.definition.location.line == 0
    assert (lam.value_given, lam.value) == (True, 0.5)
    tau = infos["τ"]
    assert tau.definition.text.startswith(r"Here $\tau$ denotes")
    assert (tau.value_given, tau.value) == (True, 0.07)
    assert infos["ℒ"].definition is None
    assert not infos["ℒ"].value_given


def test_definitions_in_pdf_prose() -> None:
    spec = enriched(
        "where λ controls the strength of the KL term.",
        equations=[equation(None, "L = L_rec + λ KL")],
        source_format="pdf",
    )
    infos = {info.symbol: info for info in spec.symbols}
    assert infos["λ"].definition.text == "where λ controls the strength of the KL term."
    assert infos["λ"].latex is None


def definitions(*texts: str, latex: str | None = None, text: str | None = None, **kwargs) -> dict[str, str | None]:
    spec = enriched(*texts, equations=[equation(latex, text)], **kwargs)
    return {info.symbol: info.definition.text if info.definition else None for info in spec.symbols}


def test_a_constraint_may_stand_between_symbol_and_definition() -> None:
    assert definitions(r"where $\tau > 0$ is the temperature.", latex=r"p = \exp(s / \tau)")["τ"] is not None
    found = definitions(r"where $\lambda_{\text{init}} \in (0,1)$ is a constant.", latex=r"\lambda_{\text{init}} x")
    assert found["λ_init"] == r"where $\lambda_{\text{init}} \in (0,1)$ is a constant."
    pdf = definitions("where τ > 0 is the temperature.", text="p = exp(s / τ)", source_format="pdf")
    assert pdf["τ"] == "where τ > 0 is the temperature."


def test_a_where_clause_beats_an_earlier_passing_mention() -> None:
    found = definitions(
        r"The loss is robust to the weight $\lambda$ between 0.25 and 1.",
        r"where $\lambda$ weighs the KL term against the reconstruction.",
        latex=r"\mathcal{L} = A + \lambda B",
    )
    assert found["λ"] == r"where $\lambda$ weighs the KL term against the reconstruction."
    found = definitions(r"The image $x$ is large.", r"Let $x$ be an image.", latex="f(x)")
    assert found["x"] == r"Let $x$ be an image."


def test_a_noun_phrase_introducing_the_symbol_defines_it() -> None:
    found = definitions(
        r"The form is stable when $m$ is close to 0.", r"We draw a mixing coefficient $m$ and mix.", latex="m a"
    )
    assert found["m"] == r"We draw a mixing coefficient $m$ and mix."


@pytest.mark.parametrize(
    "text",
    [
        r"The form is stable when $m$ is close to 0.",  # a use under a condition
        r"We report the average $m$-Precision of every model.",  # a word, not the symbol
    ],
)
def test_a_sentence_that_uses_the_symbol_defines_nothing(text: str) -> None:
    assert definitions(text, latex="m a")["m"] is None

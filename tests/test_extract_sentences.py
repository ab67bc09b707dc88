"""Sentence splitting and the plain form of prose with inline math."""

from __future__ import annotations

import pytest

from paperlens.pipeline.extract.mathtext import to_plain
from paperlens.pipeline.extract.sentences import split_sentences


def sentences(text: str) -> list[str]:
    return [text[start:end] for start, end in split_sentences(text)]


def test_splits_on_sentence_ends() -> None:
    assert sentences("We train a model. It works well! Does it? Yes.") == [
        "We train a model.",
        "It works well!",
        "Does it?",
        "Yes.",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "We use augmentations, e.g. Mixup and CutMix, in training.",
        "We follow prior work, i.e. ViT, for the encoder.",
        "As shown by Smith et al. (2020) the loss converges.",
        "See Fig. 3 and Eq. 2 for the loss.",
        "The learning rate is 0.001 at the start.",
        "We set $\\lambda = 0.5. Then$ it holds.",  # a period inside math
        "See Tab. 4 and Sec. 5.1 for details.",
        "Results follow J. Smith and colleagues.",
    ],
)
def test_does_not_split_inside(text: str) -> None:
    assert sentences(text) == [text]


def test_offsets_skip_whitespace() -> None:
    text = "First one.   Second one.  "
    spans = split_sentences(text)
    assert [text[s:e] for s, e in spans] == ["First one.", "Second one."]
    assert spans[1][0] == text.index("Second")


def test_plain_form_of_latex_math() -> None:
    plain = to_plain(r"a rate of $3\times10^{-4}$ with $\beta_{1}=0.9$, 1{,}000 steps, 25\% and $\mathcal{L}$")
    assert plain.text == "a rate of 3×10^-4 with β_1=0.9, 1,000 steps, 25% and ℒ"
    assert len(plain.math) == 3


def test_plain_spans_map_back_to_the_source() -> None:
    source = r"rate $3\times10^{-4}$ here"
    plain = to_plain(source)
    start = plain.text.index("3")
    end = plain.text.index(" here")
    source_start, source_end = plain.source_span(start, end)
    assert source[source_start:source_end] == r"3\times10^{-4}"  # the closing brace comes along


def test_unicode_subscripts_become_underscores() -> None:
    assert to_plain("β₁ = 0.9").text == "β_1 = 0.9"

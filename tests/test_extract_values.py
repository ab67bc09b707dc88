"""parse_value: numbers as papers write them, and text that only looks like a number."""

from __future__ import annotations

import pytest

from paperlens.pipeline.extract.values import parse_value

PARSED = [
    ("3 × 10^{-4}", 3e-4, None),
    (r"3\times10^{-4}", 3e-4, None),
    (r"3 \cdot 10^{-4}", 3e-4, None),
    (r"$3\times 10^{-4}$", 3e-4, None),
    ("3e-4", 3e-4, None),
    ("3E-4", 3e-4, None),
    ("0.0003", 3e-4, None),
    ("3·10−4", 3e-4, None),  # PDF: superscript flattened, unicode minus
    ("3 × 10⁻⁴", 3e-4, None),
    ("10−4", 1e-4, None),
    ("10k", 1e4, None),
    ("10K", 1e4, None),
    ("1M", 1e6, None),
    ("1.5B", 1.5e9, None),
    ("0.25M", 250_000, None),
    ("25%", 0.25, "%"),
    (r"25\%", 0.25, "%"),
    ("12.5 %", 0.125, "%"),
    ("1{,}000", 1000, None),
    ("1,000", 1000, None),
    ("100,288", 100_288, None),
    (r"$10^{-5}$", 1e-5, None),
    ("10^(-5)", 1e-5, None),
    ("1/3", 1 / 3, None),
    (r"\num{3e-4}", 3e-4, None),
    (r"\SI{3e-4}{}", 3e-4, None),
    (r"\SI{25}{\percent}", 0.25, "%"),
    ("2048", 2048, None),
    ("100 epochs", 100, "epochs"),
    ("4M tokens", 4e6, "tokens"),
    ("1 epoch", 1, "epochs"),
]

NOT_VALUES = [
    "[12]",
    "Table 3",
    "Eq. 2",
    "Section 4.1",
    "v1.2.3",
    "1.2.3",
    "0.1-0.5",  # a range is no number, least of all -0.5
    "0.1–0.5",
    "Smith et al., 2020",
    "(2020)",
    "ResNet-50",
    "3D",
    "2x",
    "3 × 104",  # no exponent marker: a product, not 3e4
    "",
    "n/a",
]


@pytest.mark.parametrize(("text", "value", "unit"), PARSED)
def test_parses(text: str, value: float, unit: str | None) -> None:
    parsed = parse_value(text)
    assert parsed is not None, text
    assert parsed.value == pytest.approx(value, rel=1e-12)
    assert parsed.unit == unit
    assert parsed.raw == text.strip()


def test_exact_decimals() -> None:
    # 3 × 10^-4 is read in decimal, so it equals the float literal 0.0003 exactly.
    assert parse_value(r"3\times10^{-4}").value == 0.0003
    assert parse_value("1.5B").value == 1_500_000_000.0


@pytest.mark.parametrize("text", NOT_VALUES)
def test_does_not_parse(text: str) -> None:
    assert parse_value(text) is None

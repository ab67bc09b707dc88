"""How far two readings of the same document agree (a PDF and its LaTeX source)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...schemas import PaperSpec


def _numbered_equations(spec: PaperSpec) -> set[str]:
    return {e.number for e in spec.equations if e.number}


def _numeric_values(spec: PaperSpec) -> set[tuple[str, float]]:
    # Rounded to 6 significant digits: "3\times10^{-4}" and "3 · 10−4" must meet as one value.
    return {
        (h.normalized_name, float(f"{h.value:.6g}"))
        for h in spec.hyperparameters
        if isinstance(h.value, float) and math.isfinite(h.value)
    }


def _ratio(part: int, whole: int) -> float:
    return part / whole if whole else 1.0


@dataclass(frozen=True)
class ReadingAgreement:
    reference_equations: frozenset[str]
    other_equations: frozenset[str]
    reference_values: frozenset[tuple[str, float]]
    other_values: frozenset[tuple[str, float]]

    @property
    def equation_recall(self) -> float:
        """Share of the reference's numbered equations the other reading found."""
        return _ratio(len(self.reference_equations & self.other_equations), len(self.reference_equations))

    @property
    def equation_precision(self) -> float:
        """Share of the other reading's equation numbers that exist in the reference."""
        return _ratio(len(self.reference_equations & self.other_equations), len(self.other_equations))

    @property
    def value_recall(self) -> float:
        """Share of the reference's stated (setting, value) pairs the other reading found."""
        return _ratio(len(self.reference_values & self.other_values), len(self.reference_values))

    @property
    def value_precision(self) -> float:
        return _ratio(len(self.reference_values & self.other_values), len(self.other_values))


def compare_readings(reference: PaperSpec, other: PaperSpec) -> ReadingAgreement:
    """Compare `other` (e.g. the PDF reading) against `reference` (e.g. the LaTeX reading)."""
    return ReadingAgreement(
        frozenset(_numbered_equations(reference)),
        frozenset(_numbered_equations(other)),
        frozenset(_numeric_values(reference)),
        frozenset(_numeric_values(other)),
    )

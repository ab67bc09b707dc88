"""Codification readiness: the gaps a paper leaves, found with evidence and ranked."""

from __future__ import annotations

from collections.abc import Collection

from ...schemas import Gap, PaperSpec, ReadinessReport
from .finders import (
    Reading,
    ambiguous_wording,
    conflicting_values,
    dangling_references,
    located_within,
    delegations,
    left_to_convention,
    metric_protocols,
    open_steps,
    setting_statuses,
    text_against_equations,
    undefined_held_out_data,
    unexplained_symbols,
    unstated_inline_settings,
    uninitialised_parameters,
    unshaped_parameters,
    unstated_per_experiment,
    unstated_settings,
    unweighted_objectives,
)

# Within blocking and within routine gaps: contradictions first, then the method's steps and what its
# math leaves open (the core algorithm), then missing settings, then wording.
KIND_ORDER = {
    "conflicting-values": 0,
    "dangling-reference": 1,
    "open-step": 2,
    "undefined-symbol": 3,
    "unstated-value": 4,
    "unstated-setting": 5,
    "ambiguous-wording": 6,
}
NOT_READY_AT = 5  # blocking gaps from which a paper is "not ready" rather than "needs answers"


def assess(spec: PaperSpec, extra: list[Gap] | None = None, answered: Collection[str] = ()) -> ReadinessReport:
    """Find the paper's gaps (plus `extra` ones, e.g. from an LLM; less those whose ids are
    `answered`, where a model showed the paper says it), ranked, with setting statuses."""
    reading = Reading.of(spec)
    statuses = setting_statuses(reading)
    gaps = [
        *conflicting_values(reading),
        *text_against_equations(reading),
        *dangling_references(reading),
        *open_steps(reading),
        *metric_protocols(reading),
        *undefined_held_out_data(reading),
        *unexplained_symbols(reading),
        *unstated_inline_settings(reading),
        *uninitialised_parameters(reading),
        *unshaped_parameters(reading),
        *unweighted_objectives(reading),
        *unstated_settings(reading, statuses),
        *unstated_per_experiment(reading, statuses),
        *ambiguous_wording(reading),
        *(extra or []),
    ]
    ranked = rank(_without_restated([g for g in gaps if g.id not in answered]), spec)
    blocking = [g for g in ranked if g.blocking]
    if any(g.type == "Inconsistency" for g in blocking) or len(blocking) >= NOT_READY_AT:
        verdict = "not ready"
    elif blocking:
        verdict = "needs answers"
    else:
        verdict = "ready"
    return ReadinessReport(
        paper=spec.main_file,
        title=spec.title,
        verdict=verdict,
        gaps=ranked,
        settings=[status for status, _, _ in statuses],
        delegations=[evidence for evidence, _ in delegations(reading)],
        conventional=left_to_convention(reading, statuses),
    )


def _without_restated(gaps: list[Gap]) -> list[Gap]:
    """A symbol's missing value and "a small constant" in the same sentence are one question."""
    specific = [g.evidence[0].location for g in gaps if g.kind == "unstated-value"]
    return [
        g
        for g in gaps
        if not (
            g.kind == "ambiguous-wording"
            and g.category == "Missing Configuration Protocol"
            and any(located_within(g.evidence[0].location, where) for where in specific)
        )
    ]


# Within blocking and within routine gaps, by how much a faithful implementation needs the answer:
# the algorithm, its objective and its settings first, then the architecture, then data and evaluation.
CATEGORY_LAYER = {"Missing Model Structure": 1, "Missing Data Specification": 2, "Missing Evaluation Specification": 2}


def rank(gaps: list[Gap], spec: PaperSpec) -> list[Gap]:
    """Blocking gaps first; then by layer (CATEGORY_LAYER) and kind; then in the order the paper reads."""
    file_order = {name: i for i, name in enumerate(spec.files)}

    def position(gap: Gap) -> tuple[int, int, int]:
        location = gap.evidence[0].location
        return file_order.get(location.file, len(file_order)), location.page or 0, location.line or 0

    ordered = sorted(gaps, key=lambda g: (not g.blocking, CATEGORY_LAYER.get(g.category, 0), KIND_ORDER[g.kind], position(g)))
    return [g.model_copy(update={"rank": i}) for i, g in enumerate(ordered, start=1)]

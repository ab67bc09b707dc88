"""Codification readiness: what a paper leaves unstated, ambiguous or inconsistent."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Model
from .paper import Location

GapType = Literal["Ambiguity", "Incompleteness", "Inconsistency"]
GapCategory = Literal[
    "Ambiguous Definition",
    "Ambiguous Procedure",
    "Missing Method Procedure",
    "Missing Model Structure",
    "Missing Data Specification",
    "Missing Configuration Protocol",
    "Missing Evaluation Specification",
    "Conflicting Objective",
    "Conflicting Model Design",
    "Conflicting Formal Definition",
]
GapKind = Literal[
    "undefined-symbol",
    "unstated-value",
    "unstated-setting",
    "ambiguous-wording",
    "conflicting-values",
    "dangling-reference",
    "unstated-defaults",
    "open-step",
]

TYPE_OF_CATEGORY: dict[str, str] = {
    "Ambiguous Definition": "Ambiguity",
    "Ambiguous Procedure": "Ambiguity",
    "Missing Method Procedure": "Incompleteness",
    "Missing Model Structure": "Incompleteness",
    "Missing Data Specification": "Incompleteness",
    "Missing Configuration Protocol": "Incompleteness",
    "Missing Evaluation Specification": "Incompleteness",
    "Conflicting Objective": "Inconsistency",
    "Conflicting Model Design": "Inconsistency",
    "Conflicting Formal Definition": "Inconsistency",
}


class Evidence(Model):
    """A span of the paper, quoted, with where it stands."""

    quote: str
    location: Location


class Convention(Model):
    """A conventional answer: what implementations commonly do. Never the paper's own answer."""

    answer: str
    note: str | None = Field(default=None, description="Where the convention comes from, e.g. 'PyTorch default'.")


class Gap(Model):
    """One located gap in the paper."""

    id: str = Field(description="Stable within a paper: kind plus what it is about, e.g. 'unstated-setting:AdamW:beta2'.")
    kind: GapKind
    type: GapType = Field(description="Level-1 type.")
    category: GapCategory = Field(description="Level-2 category.")
    title: str = Field(description="One line: what is missing, ambiguous or in conflict.")
    detail: str = Field(description="Why an implementer is stuck, in a sentence or two.")
    blocking: bool = Field(description="True when a faithful implementation cannot proceed without an answer; false for routine gaps.")
    rank: int = Field(default=0, ge=0, description="1 for the gap to ask about first.")
    evidence: list[Evidence] = Field(min_length=1, description="The spans that show the gap; the first is its primary location.")
    question: str = Field(description="A clarifying question ready to send to the authors.")
    readings: list[str] = Field(default_factory=list, description="Candidate readings an implementer would choose between.")
    conventions: list[Convention] = Field(default_factory=list, description="Conventional answers, labelled as conventions.")
    setting: str | None = Field(default=None, description="The normalised setting concerned, when there is one.")
    grouped_settings: list[str] = Field(
        default_factory=list, description="For a gap that asks about several settings at once (conventional defaults): each of them."
    )
    component: str | None = Field(default=None, description="The component concerned, when there is one.")
    source: Literal["rules", "llm"] = "rules"


class SettingStatus(Model):
    """Whether a setting an implementation needs is stated, with the evidence when it is."""

    component: str = Field(description="The component that needs it, or 'training' for run-level settings.")
    setting: str
    stated: bool
    values: list[float | str] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    delegated: bool = Field(
        default=False,
        description="Not stated, but covered by a sentence that hands the settings to another recipe "
        "(\"same hyperparameters as ConvNeXt-B\"): not a gap, and not checked.",
    )


class ReadinessReport(Model):
    """The gaps of one paper, ranked, with the status of every setting it needs."""

    paper: str = Field(description="The paper's main file.")
    title: str | None = None
    verdict: Literal["ready", "needs answers", "not ready"]
    gaps: list[Gap] = Field(default_factory=list, description="Ranked: the most blocking first.")
    settings: list[SettingStatus] = Field(default_factory=list)
    delegations: list[Evidence] = Field(
        default_factory=list, description="Sentences that delegate settings to another paper's or codebase's recipe."
    )
    conventional: Gap | None = Field(
        default=None,
        description="The unstated settings nearly every implementation leaves at the library's default (an "
        "optimizer's ε, the seeds): left to convention, listed once after the gaps, not asked as a question.",
    )

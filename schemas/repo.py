"""From a paper to a runnable repository: the plan, the record of a reproduction, the alignment of
measured metrics with the paper's."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Model
from .gaps import Evidence
from .paper import Location
from .smoke import SmokeFailure

ProvenanceKind = Literal["paper", "clarification", "assumption"]
FileRole = Literal[
    "package", "config", "module", "data", "train", "evaluate", "reproduce", "test", "dockerfile", "requirements", "docs"
]


class Provenance(Model):
    """Where a configured value comes from. Every value in a planned config has one."""

    kind: ProvenanceKind = Field(description="paper: stated in it; clarification: an author's answer; assumption: chosen.")
    quote: str = Field(description="The paper's sentence or table row, the author's answer, or the assumption's reason.")
    location: Location = Field(description="In the paper; for a clarification or assumption, the decisions file.")
    decision_id: str | None = Field(default=None, description="The decisions file's entry, for a clarification or assumption.")


class ConfigValue(Model):
    """One value of the planned config file."""

    name: str = Field(description="The setting's normalised name, e.g. learning_rate.")
    value: float | str
    shown: str = Field(description="The value as the source writes it, e.g. 3e-4.")
    unit: str | None = None
    component: str | None = None
    provenance: Provenance


class OpenItem(Model):
    """What the paper leaves open and the plan does not fill: a gap, listed, never guessed."""

    id: str = Field(description="The gap's id in the readiness report.")
    setting: str | None = None
    question: str
    blocking: bool
    evidence: list[Evidence] = Field(min_length=1)


class PlannedFile(Model):
    """One file of the planned repository."""

    path: str = Field(description="Relative to the repository root, forward slashes.")
    role: FileRole
    purpose: str
    source: str | None = Field(default=None, description="The section or algorithm id a module is planned from.")
    equations: list[str] = Field(default_factory=list, description="Numbers of the equations it implements.")
    depends_on: list[str] = Field(default_factory=list, description="Planned files it imports or reads.")


class ReportedMetric(Model):
    """A result the paper reports, to compare a reproduction's runs with."""

    name: str = Field(description="As the runs' metrics name it, e.g. test_accuracy.")
    value: float
    unit: str | None = Field(default=None, description="'%' when the paper reports a percentage: runs report on the same scale.")
    higher_is_better: bool | None = None
    quote: str | None = Field(default=None, description="Where the paper reports it (table row or sentence).")
    location: Location | None = None
    tolerance: str | None = Field(
        default=None, description="Its own tolerance rule (`relative:0.02`, `absolute:0.5`, `interval:0.95`), as config.toml's [metrics] give it."
    )


class RepoPlan(Model):
    """A repository planned from the paper: deterministic, reviewable before anything is written."""

    paper_title: str
    paper_path: str = Field(description="The paper, relative to the repository's folder when it can be (forward slashes).")
    package: str = Field(description="The Python package the modules live in.")
    files: list[PlannedFile] = Field(description="In dependency order: a file comes after what it imports.")
    config: list[ConfigValue]
    open_items: list[OpenItem] = Field(description="The paper's gaps the plan leaves open, blocking ones first.")
    metrics: list[ReportedMetric] = Field(default_factory=list)


# -- the record of `paperlens reproduce` -----------------------------------------------------------

StepName = Literal["plan", "scaffold", "generate", "pin", "run"]


class StepRecord(Model):
    name: StepName
    status: Literal["pending", "done", "failed"] = "pending"
    message: str = ""
    seconds: float = 0.0


class GeneratedFile(Model):
    """What the generate step did with one planned module."""

    path: str
    status: Literal["generated", "kept-scaffold"] = Field(
        description="kept-scaffold: every answer failed its checks, so the scaffold's stub stays."
    )
    attempts: int = Field(ge=0)
    problems: list[str] = Field(default_factory=list, description="Why answers were refused (parse, imports, values).")
    findings: list[str] = Field(default_factory=list, description="Divergences from the paper in what was kept.")


class PinnedDistribution(Model):
    distribution: str
    version: str | None = Field(default=None, description="None: no version could be found; the lock says so.")
    modules: list[str] = Field(description="The imported modules it provides.")
    source: Literal["image", "environment", "unknown"] = Field(
        description="image: installed in the sandbox image the run used; environment: in paperlens' own."
    )


class PinRecord(Model):
    lock_file: str
    distributions: list[PinnedDistribution]
    base_image: str
    base_digest: str | None = Field(default=None, description="The base image's repository digest, when it has one.")
    message: str = ""


class RepairRound(Model):
    """One run of the smoke test and, when it failed, one repair attempt."""

    number: int = Field(ge=0, description="0: the first run, before any repair.")
    smoke_status: Literal["passed", "failed", "error"]
    failures: list[SmokeFailure] = Field(default_factory=list)
    passed_tests: list[str] = Field(default_factory=list)
    implicated: list[str] = Field(default_factory=list, description="The files the error implicates: the only ones a repair may change.")
    changed: list[str] = Field(default_factory=list)
    refused: list[str] = Field(default_factory=list, description="Files the model tried to change outside the implicated ones.")
    patch: str = Field(default="", description="Unified diff of what the round changed.")
    outcome: Literal["passed", "failed", "patched", "reverted", "no-patch", "error"] = Field(
        description="passed: nothing to repair; failed: a run with no repair before it failed (round 0, or the rerun of a "
        "resumed record); patched: changes kept for the next run; reverted: changes undone because they broke a passing "
        "test or the run could not be made; no-patch: the model proposed nothing usable; error: no run could be made."
    )
    message: str = ""
    seconds: float = 0.0


class TokenUsage(Model):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0


class ReproduceRecord(Model):
    """The whole record of one `paperlens reproduce`, kept in the output folder and resumed from."""

    version: Literal[1] = 1
    paper: str
    steps: list[StepRecord]
    plan: RepoPlan | None = None
    generated: list[GeneratedFile] = Field(default_factory=list)
    pin: PinRecord | None = None
    image: str | None = None
    rounds: list[RepairRound] = Field(default_factory=list)
    max_rounds: int = Field(ge=0)
    outcome: Literal["in-progress", "passed", "needs-human"] = "in-progress"
    reason: str = Field(default="", description="Why it needs a human, in one or two sentences.")
    still_open: list[str] = Field(default_factory=list, description="What a passing smoke run does not say: stubs left, blocking open items.")
    usage: TokenUsage = Field(default_factory=TokenUsage)


# -- alignment of measured metrics with the paper ---------------------------------------------------


class MetricRun(Model):
    """The metrics one run (one seed) measured."""

    seed: int | None = None
    metrics: dict[str, float]


class ToleranceRule(Model):
    kind: Literal["absolute", "relative", "interval"] = Field(
        description="absolute: |mean − paper| ≤ value; relative: ≤ value × |paper|; interval: the paper's value lies in "
        "the runs' prediction interval at confidence `value` (needs two runs or more)."
    )
    value: float = Field(gt=0)


class MetricAlignment(Model):
    name: str
    paper_value: float
    values: list[float] = Field(description="One per run.")
    mean: float | None
    std: float | None = Field(description="Sample standard deviation; None with fewer than two runs.")
    low: float | None = Field(description="The accepted range's lower end.")
    high: float | None
    verdict: Literal["aligned", "not-aligned", "undetermined"]
    reason: str
    reported: ReportedMetric
    rule: ToleranceRule | None = Field(default=None, description="The rule it was judged by, when its own (config.toml) and not the report's.")


class AlignmentReport(Model):
    rule: ToleranceRule
    runs: int
    metrics: list[MetricAlignment]
    verdict: Literal["aligned", "not-aligned", "undetermined"] = Field(
        description="aligned only when every metric is; not-aligned when any is not."
    )

"""The reproducibility checklist: eight points a repository meets or not, each with its evidence."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Model

ChecklistPointId = Literal["randomness", "dependencies", "data", "smoke-test", "seeds", "metrics", "review", "observability"]


class ChecklistEvidence(Model):
    """A place in the workspace that shows how the point is met (or why it is not)."""

    file: str = Field(description="Relative to the workspace, with forward slashes.")
    line: int | None = Field(default=None, ge=0, description="0-based, when the evidence is a line.")
    text: str = Field(description="What stands there, shortened: `torch.manual_seed(seed)`, `FROM python:3.11@sha256:…`.")


class ChecklistPoint(Model):
    id: ChecklistPointId
    title: str
    status: Literal["passed", "failed", "not applicable"]
    summary: str = Field(description="One line: what was found.")
    evidence: list[ChecklistEvidence] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list, description="For a failure: what to add, one item each.")
    fix_at: ChecklistEvidence | None = Field(
        default=None, description="For a failure: the file (and line) where what is missing belongs: the seeding code, the Dockerfile's `FROM`, the README."
    )


class ChecklistReport(Model):
    workspace: str
    framework: str | None = Field(default=None, description="The deep-learning framework the code imports: PyTorch, JAX, TensorFlow.")
    points: list[ChecklistPoint]

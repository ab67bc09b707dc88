"""A workspace's paperlens settings (`[tool.paperlens]` in pyproject.toml, or `.paperlens.toml`)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

from .base import Model
from .smoke import SandboxSettings


class WorkspaceSettings(Model):
    """Where the paper is and which files to check; every field optional."""

    paper: str | None = Field(default=None, description="The paper (file or folder), relative to the workspace.")
    include: list[str] | None = Field(default=None, description="Globs of files to check; default: Python and config files.")
    exclude: list[str] | None = Field(default=None, description="Globs to leave out, besides virtualenvs, build and VCS folders.")
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings, description="Smoke runs ([tool.paperlens.sandbox]).")


FindingKindSetting = Literal["divergence", "guess", "unimplemented", "agreement"]
SeveritySetting = Literal["error", "warning", "info", "hint", "off"]


class EditorLLMSettings(Model):
    """The LLM the editor may use for drafting questions; the key comes from the environment only."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)

    base_url: str | None = Field(default=None, description="An OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1.")
    model: str | None = Field(default=None, description="The model name the endpoint serves.")


class EditorSettings(Model):
    """The editor's `paperlens.*` settings (camelCase on the wire, as VS Code sends them).

    Each field is checked on its own: an invalid one is reported and falls back to its default."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)

    paper: str | None = Field(default=None, description="The paper (file or folder); relative paths are to the workspace. Wins over [tool.paperlens].")
    checks: list[FindingKindSetting] = Field(
        default=["divergence", "guess", "unimplemented", "agreement"], description="Which kinds of finding are shown."
    )
    severity: dict[FindingKindSetting, SeveritySetting] = Field(
        default_factory=dict, description="Severity per kind of finding, instead of the finding's own; `off` hides the kind."
    )
    paper_gaps: bool = Field(default=True, description="Show the paper's own gaps as diagnostics in its .tex/.md files.")
    checklist: bool = Field(
        default=True, description="Show each failed point of the reproducibility checklist as information in the file where its fix belongs."
    )
    debounce_ms: int = Field(default=300, ge=0, le=10_000, description="Wait after an edit before checking the file.")
    llm: EditorLLMSettings = Field(default_factory=EditorLLMSettings, description="Used to draft questions to the authors.")
    smoke_on_save: bool = Field(default=True, description="Run the smoke command in the sandbox when a Python file is saved.")
    sandbox: SandboxSettings | None = Field(default=None, description="Overrides [tool.paperlens.sandbox] for this editor.")

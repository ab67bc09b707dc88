"""A workspace's paperlens settings (`[tool.paperlens]` in pyproject.toml, or `.paperlens.toml`)."""

from __future__ import annotations

from pydantic import Field

from .base import Model


class WorkspaceSettings(Model):
    """Where the paper is and which files to check; every field optional."""

    paper: str | None = Field(default=None, description="The paper (file or folder), relative to the workspace.")
    include: list[str] | None = Field(default=None, description="Globs of files to check; default: Python and config files.")
    exclude: list[str] | None = Field(default=None, description="Globs to leave out, besides virtualenvs, build and VCS folders.")

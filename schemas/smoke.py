"""Smoke runs: the sandbox they run in, what they found, and the workspace's dependencies."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

from .base import Model
from .code import CodeLocation

DEFAULT_SANDBOX_IMAGE = "paperlens-sandbox:bookworm"

ErrorClass = Literal[
    "missing-dependency",  # ModuleNotFoundError / ImportError
    "shape-mismatch",  # tensor or array shapes that do not fit
    "oom",  # killed at the memory limit, MemoryError, CUDA out of memory
    "schema-mismatch",  # KeyError, missing/unexpected keys in a state dict or a config
    "label-range",  # a class index outside the number of classes
    "path",  # FileNotFoundError, a missing directory
    "timeout",  # killed at the wall-clock limit
    "syntax-error",  # SyntaxError, IndentationError
    "other",
]


class SandboxSettings(Model):
    """Where and how a smoke run executes. Safe by default: no network, read-only workspace,
    non-root, no capabilities, bounded memory, CPU, processes and time."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)

    mode: Literal["docker", "local"] = Field(
        default="docker", description="`local` runs a subprocess on this machine, unisolated: an explicit opt-in."
    )
    image: str | None = Field(
        default=None,
        description="The image to run in; empty: built from the workspace's Dockerfile when it has one, else "
        f"{DEFAULT_SANDBOX_IMAGE}.",
    )
    command: list[str] | None = Field(
        default=None,
        description="The smoke command; empty: the workspace's reproduce script with --smoke when it has one, "
        "else `python -m pytest -x -q`.",
    )
    memory: str = Field(default="1g", pattern=r"^\d+[kmg]?$", description="Memory limit, e.g. 512m or 2g.")
    cpus: float = Field(default=1.0, gt=0, le=64)
    pids: int = Field(default=256, ge=16, le=65536, description="Most processes and threads at once.")
    timeout_seconds: float = Field(default=120.0, gt=0, le=24 * 3600)
    scratch: str = Field(default="256m", pattern=r"^\d+[kmg]?$", description="Size of the writable /tmp.")
    network: bool = Field(default=False, description="Let the run reach the network (off by default).")
    build_network: bool = Field(default=False, description="Let the image build from the Dockerfile reach the network.")
    output_limit_bytes: int = Field(default=1_000_000, ge=10_000, description="Output kept beyond this is cut.")


class Frame(Model):
    """One stack frame of a failure, in workspace terms when it lies in the workspace."""

    file: str = Field(description="Workspace-relative when in the workspace, else as printed.")
    line: int = Field(ge=0, description="0-based.")
    function: str | None = None
    code: str | None = None
    in_workspace: bool


class SmokeFailure(Model):
    """One failure of a smoke run, classified, at the workspace line that matters."""

    error_class: ErrorClass
    exception: str | None = Field(default=None, description="The exception's type, e.g. ModuleNotFoundError.")
    message: str = Field(description="The exception's line, or what the run's end says.")
    location: CodeLocation | None = Field(default=None, description="The deepest frame in the workspace.")
    frames: list[Frame] = Field(default_factory=list, description="The few frames that matter, outermost first.")
    suggestion: str | None = Field(default=None, description="A known fix, e.g. the distribution to install.")
    test: str | None = Field(default=None, description="The pytest node id, when a test failed.")


class DependencyIssue(Model):
    """An import the requirements do not cover, or a requirement without a pinned version."""

    kind: Literal["missing-requirement", "unpinned"]
    module: str | None = None
    distribution: str
    message: str
    location: CodeLocation = Field(description="The import, or the requirement's line.")


class SmokeResult(Model):
    """What one smoke run did."""

    status: Literal["passed", "failed", "error"] = Field(description="error: the run could not be made at all.")
    command: list[str]
    mode: Literal["docker", "local"]
    isolated: bool
    image: str | None = None
    exit_code: int | None = None
    timed_out: bool = False
    oom_killed: bool = False
    duration_seconds: float = 0.0
    output: str = ""
    output_truncated: bool = False
    failures: list[SmokeFailure] = Field(default_factory=list)
    dependencies: list[DependencyIssue] = Field(
        default_factory=list, description="Imports the requirements do not cover and unpinned requirements (read from the files)."
    )
    message: str = Field(default="", description="One line for the user: the outcome, or why no run was made.")

"""Shared test fixtures: where the real papers are, and a cache directory per test."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from .local_llm import LocalLLM, serve_local_llm

REPO = Path(__file__).resolve().parents[1]
# Real papers live beside the project, never inside it (see ../shared/data/README.md).
SHARED_DATA = Path(os.environ.get("PAPERLENS_SHARED_DATA", REPO.parent / "shared" / "data"))
LATEX_PAPERS = SHARED_DATA / "papers-latex"
PDF_PAPERS = SHARED_DATA / "papers-pdf"
EXAMPLE_PAPER = REPO / "examples" / "paper"


def copy_example(folder: Path) -> Path:
    """The example's workspace and paper side by side under `folder`, the workspace pointing at the
    paper; the workspace's path."""
    workspace = folder / "workspace"
    shutil.copytree(EXAMPLE_PAPER.parent / "workspace", workspace)
    shutil.copytree(EXAMPLE_PAPER, folder / "paper")
    (workspace / "pyproject.toml").write_text('[tool.paperlens]\npaper = "../paper"\n')
    return workspace


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own paperlens cache, so no test sees another's results."""
    monkeypatch.setenv("PAPERLENS_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def local_llm() -> Iterator[LocalLLM]:
    """A real OpenAI-compatible server (llama.cpp serving SmolLM2-135M), one per test module."""
    with serve_local_llm() as server:
        yield server


@pytest.fixture(scope="session")
def docker_engine() -> None:
    """The README's test command sets the engine up (scripts/sandbox-engine.sh): fail, never skip."""
    from paperlens.pipeline.sandbox import docker_run
    from paperlens.schemas.smoke import DEFAULT_SANDBOX_IMAGE

    try:
        docker_run.client().api.inspect_image(DEFAULT_SANDBOX_IMAGE)
    except Exception as err:  # noqa: BLE001 - no engine, or no base image
        pytest.fail(f"no Docker engine or base image (run scripts/sandbox-engine.sh): {err}")


needs_docker = pytest.mark.usefixtures("docker_engine")


def my_containers() -> list[dict]:
    """Labelled sandbox containers this test process owns."""
    from paperlens.pipeline.sandbox import docker_run

    mine = [f"{docker_run.LABEL}=1", f"{docker_run.OWNER_LABEL}={docker_run.owner()}"]
    return docker_run.client().api.containers(all=True, filters={"label": mine})


def containers_left_behind() -> dict[str, str]:
    """This process's containers that are not parked for the next run: id -> the workspace they
    ran on (it names the test that left them)."""
    from paperlens.pipeline import sandbox
    from paperlens.pipeline.sandbox import docker_run

    sandbox.drain()
    parked = set(docker_run.pooled_ids())
    return {c["Id"][:12]: c["Labels"].get(docker_run.WORKSPACE_LABEL, "") for c in my_containers() if c["Id"] not in parked}


def pytest_sessionstart(session):
    if not LATEX_PAPERS.is_dir():
        raise pytest.UsageError(
            f"real papers not found at {SHARED_DATA}; set PAPERLENS_SHARED_DATA to the shared data folder"
        )


@pytest.fixture
def ctrl_c_raises():
    """Ctrl-C raises KeyboardInterrupt in the main thread, as in a terminal, even when the tests run
    in a background job (where the shell leaves SIGINT ignored and Python never installs its handler)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)

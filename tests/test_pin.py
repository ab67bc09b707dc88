"""The pin step against the real Docker engine and the real base image (scripts/sandbox-engine.sh):
versions as the image has them, else as paperlens' environment has them, a lock the dependency
check accepts, and a Dockerfile the sandbox builds offline."""

from __future__ import annotations

import contextlib
import textwrap
from importlib import metadata
from pathlib import Path

import docker.errors
import pytest
from paperlens.pipeline import sandbox
from paperlens.pipeline.repo.pin import dockerfile_text, pin
from paperlens.pipeline.sandbox import SandboxUnavailable, docker_run, images
from paperlens.pipeline.sandbox.deps import dependency_issues, normalize
from paperlens.schemas.repo import PinnedDistribution, PinRecord
from paperlens.schemas.smoke import DEFAULT_SANDBOX_IMAGE, SandboxSettings

PROBE_TIMEOUT = 60.0


@pytest.fixture(scope="module")
def docker_engine() -> None:
    """The README's test command sets the engine up; without it these tests fail, never skip."""
    try:
        with docker_run.engine_errors():
            docker_run.client().api.inspect_image(DEFAULT_SANDBOX_IMAGE)
    except (SandboxUnavailable, docker.errors.APIError) as err:  # no engine, or no base image
        pytest.fail(f"no Docker engine or base image (run scripts/sandbox-engine.sh): {err}")


def _repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir()
    root.chmod(0o755)  # the sandbox's user (nobody) reads it through the bind mount
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(textwrap.dedent(text))
    return root


def _by_name(record: PinRecord) -> dict[str, PinnedDistribution]:
    return {normalize(distribution.distribution): distribution for distribution in record.distributions}


A_PACKAGE = {
    "pkg/__init__.py": "",
    "pkg/helpers.py": "import os\n",
    "pkg/model.py": """\
        import json
        import collections.abc

        import numpy
        import yaml
        import pydantic
        import made_up_module_xyz

        from pkg import helpers
        import helpers as also_local
        """,
    "tests/test_model.py": "import pytest\nimport pkg.model\n",
    "requirements.txt": "# the user's own comment\nnumpy\nmore-itertools\n",  # required, not imported
    "requirements-dev.txt": "ruff\n",  # tooling, not imported
}


@pytest.fixture(scope="module")
def image_versions(docker_engine, tmp_path_factory) -> list[str]:
    """numpy's and pytest's versions in the base image, read by importing them there (not from metadata)."""
    workspace = _repo(tmp_path_factory.mktemp("probe") / "ws", {})
    command = ["python3", "-c", "import numpy, pytest; print(numpy.__version__, pytest.__version__)"]
    result = sandbox.run_smoke(workspace, SandboxSettings(command=command, image=DEFAULT_SANDBOX_IMAGE, timeout_seconds=PROBE_TIMEOUT))
    assert result.status == "passed", result.message
    return result.output.split()


@pytest.fixture(scope="module")
def pinned(docker_engine, tmp_path_factory) -> tuple[Path, PinRecord]:
    repo = _repo(tmp_path_factory.mktemp("pin") / "repo", A_PACKAGE)
    return repo, pin(repo, SandboxSettings(timeout_seconds=PROBE_TIMEOUT))


# --------------------------------------------------------------------------------------------
# The Dockerfile
# --------------------------------------------------------------------------------------------


def test_the_dockerfile_pins_by_digest_and_installs_the_lock():
    install = [PinnedDistribution(distribution="PyYAML", version="6.0.1", modules=["yaml"], source="environment")]
    text = dockerfile_text("python:3.11-slim", "sha256:" + "a" * 64, install)
    lines = text.splitlines()
    assert "FROM python:3.11-slim@sha256:" + "a" * 64 in lines
    assert "pinned by its registry digest" in text and "WORKDIR /workspace" in lines
    assert "COPY requirements.lock /tmp/requirements.lock" in lines
    assert any(line.startswith("RUN ") and "pip install --no-cache-dir --no-deps -r /tmp/requirements.lock" in line for line in lines)
    assert "PyYAML==6.0.1" in text
    assert images.copy_sources(text) == ["requirements.lock"]  # the sandbox rebuilds it when the lock changes


def test_a_dockerfile_with_nothing_to_install_names_a_local_image_by_tag():
    text = dockerfile_text(DEFAULT_SANDBOX_IMAGE, None, [])
    lines = text.splitlines()
    assert f"FROM {DEFAULT_SANDBOX_IMAGE}" in lines and "WORKDIR /workspace" in lines
    assert "without a registry digest, so it is referenced by tag" in text
    assert "already in the base image" in text
    assert not [line for line in lines if line.startswith(("COPY", "RUN"))]
    assert images.copy_sources(text) == []  # its image depends on the Dockerfile alone


# --------------------------------------------------------------------------------------------
# pin with the real image
# --------------------------------------------------------------------------------------------


def test_versions_come_from_the_image_then_the_environment(pinned, image_versions):
    _repo_path, record = pinned
    found = _by_name(record)
    numpy_version, pytest_version = image_versions
    assert (found["numpy"].version, found["numpy"].source, found["numpy"].modules) == (numpy_version, "image", ["numpy"])
    assert (found["pytest"].version, found["pytest"].source) == (pytest_version, "image")
    assert (found["pyyaml"].version, found["pyyaml"].source, found["pyyaml"].modules) == (
        metadata.version("PyYAML"),
        "environment",
        ["yaml"],
    )
    unknown = found["made-up-module-xyz"]
    assert (unknown.version, unknown.source, unknown.modules) == (None, "unknown", ["made_up_module_xyz"])
    # The workspace's own modules and the standard library need no distribution.
    assert not {"pkg", "helpers", "json", "collections", "os"} & set(found)
    # pydantic's dependencies are locked too (the lock is complete: pip installs it with --no-deps),
    # and the image's typing_extensions (older than pydantic needs) gives way to the environment's.
    assert (found["pydantic-core"].version, found["pydantic-core"].source, found["pydantic-core"].modules) == (
        metadata.version("pydantic-core"),
        "environment",
        [],
    )
    assert (found["typing-extensions"].version, found["typing-extensions"].source) == (metadata.version("typing-extensions"), "environment")
    assert (found["pluggy"].source, found["pluggy"].modules) == ("image", [])  # pytest's, from the image
    # A requirement is locked even when nothing imports it; a tooling one only when something does.
    assert (found["more-itertools"].source, found["more-itertools"].modules) == ("image", [])
    assert "ruff" not in found


def test_the_record_says_the_image_has_no_digest_and_no_pip(pinned):
    _repo_path, record = pinned
    image_id = docker_run.client().api.inspect_image(DEFAULT_SANDBOX_IMAGE)["Id"]
    assert record.lock_file == "requirements.lock"
    assert (record.base_image, record.base_digest) == (DEFAULT_SANDBOX_IMAGE, None)
    assert f"is a local image with no registry digest (image id {image_id})" in record.message
    assert "no version found for made_up_module_xyz" in record.message
    assert f"{DEFAULT_SANDBOX_IMAGE} has no pip" in record.message  # yet PyYAML must be installed
    assert "sandbox.build_network = true" in record.message


def test_the_lock_lists_one_exact_version_a_line_and_asks_for_a_hand_pin(pinned, image_versions):
    repo, record = pinned
    lines = (repo / "requirements.lock").read_text().splitlines()
    image_id = docker_run.client().api.inspect_image(DEFAULT_SANDBOX_IMAGE)["Id"]
    header = [line for line in lines if line.startswith("#") and "made_up_module_xyz" not in line]
    assert header == lines[: len(header)] and any(image_id in line for line in header)
    body = lines[len(header) :]
    assert f"numpy=={image_versions[0]}" in body
    assert f"PyYAML=={metadata.version('PyYAML')}" in body
    assert (
        "# made_up_module_xyz: no version found in the image or paperlens' environment; pin it by hand "
        "(made_up_module_xyz==<version>)"
    ) in body
    names = [line.lstrip("# ").split(":")[0].split("==")[0] for line in body]
    assert names == sorted(names, key=normalize) and len(body) == len(record.distributions)


def test_requirements_keep_the_users_lines_and_gain_every_import(pinned):
    repo, _record = pinned
    assert (repo / "requirements.txt").read_text() == (
        "# the user's own comment\nnumpy\nmore-itertools\n"
        "# Imported by the code; the exact versions are in requirements.lock (paperlens pin).\n"
        "made_up_module_xyz\npydantic\npytest\nPyYAML\n"
    )
    # Nothing is missing; only the module no environment has stays unpinned, at its requirement.
    issues = [(issue.kind, issue.distribution, issue.location.file) for issue in dependency_issues(repo)]
    assert issues == [("unpinned", "made_up_module_xyz", "requirements.txt")]


def test_the_dockerfile_installs_what_the_image_lacks(pinned):
    repo, record = pinned
    lines = (repo / "Dockerfile").read_text().splitlines()
    assert f"FROM {DEFAULT_SANDBOX_IMAGE}" in lines
    assert "COPY requirements.lock /tmp/requirements.lock" in lines
    installed = next(line for line in lines if line.startswith("# Not in the base image:"))
    from_environment = {f"{d.distribution}=={d.version}" for d in record.distributions if d.source == "environment"}
    assert set(installed.removeprefix("# Not in the base image: ").rstrip(".").split(", ")) == from_environment
    assert "numpy" not in installed


def test_a_repo_the_image_covers_builds_offline_and_runs(docker_engine, tmp_path, request):
    repo = _repo(
        tmp_path / "repo",
        {"model.py": "import sys\nimport numpy\nimport helpers\n", "helpers.py": "", "test_model.py": "import pytest\nimport model\n"},
    )
    record = pin(repo, SandboxSettings(timeout_seconds=PROBE_TIMEOUT))
    assert {d.source for d in record.distributions} == {"image"}
    assert (repo / "requirements.txt").read_text().splitlines()[1:] == ["numpy", "pytest"]
    assert dependency_issues(repo) == []
    assert "already in the base image" in (repo / "Dockerfile").read_text()

    tag = f"{images.WORKSPACE_IMAGE}:{images.workspace_image_hash(repo)[:16]}"
    _remove_image(tag)  # the same Dockerfile text as an earlier run's: build it afresh
    request.addfinalizer(lambda: _remove_image(tag))
    seen: list[str] = []
    settings = SandboxSettings(command=["python3", "-c", "import numpy; print(numpy.__version__)"], timeout_seconds=PROBE_TIMEOUT)
    result = sandbox.run_smoke(repo, settings, on_output=seen.append)
    assert result.status == "passed", result.message
    assert result.image == tag and f"building {tag}" in "".join(seen) and "(network: off)" in "".join(seen)
    assert result.output.strip() == _by_name(record)["numpy"].version


def _remove_image(tag: str) -> None:
    sandbox.drain()
    docker_run.discard_pool()  # a parked container would hold the image
    with contextlib.suppress(docker.errors.ImageNotFound):
        docker_run.client().api.remove_image(tag, force=True)


# --------------------------------------------------------------------------------------------
# pin without Docker
# --------------------------------------------------------------------------------------------


def test_without_docker_the_versions_come_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    repo = _repo(tmp_path / "repo", {"model.py": "import numpy\nimport yaml\n", "requirements.txt": "numpy\n"})
    record = pin(repo)
    assert record.message.startswith("Docker is unavailable, so the versions come from paperlens' environment")
    found = _by_name(record)
    assert (found["numpy"].version, found["numpy"].source) == (metadata.version("numpy"), "environment")
    assert (found["pyyaml"].version, found["pyyaml"].source) == (metadata.version("PyYAML"), "environment")
    assert record.base_digest is None
    lock = (repo / "requirements.lock").read_text()
    assert f"the image {DEFAULT_SANDBOX_IMAGE} could not be read" in lock and f"numpy=={metadata.version('numpy')}" in lock
    assert "COPY requirements.lock" in (repo / "Dockerfile").read_text()  # nothing is known to be in the image
    assert dependency_issues(repo) == []

    requirements = (repo / "requirements.txt").read_text()
    second = pin(repo)
    assert (repo / "requirements.txt").read_text() == requirements  # nothing added twice
    assert (repo / "requirements.lock").read_text() == lock and second.distributions == record.distributions


def test_a_declared_alternative_provides_the_import(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    repo = _repo(tmp_path / "repo", {"vision.py": "import cv2\n", "requirements.txt": "opencv-python-headless\n"})
    record = pin(repo)
    assert [(d.distribution, d.modules) for d in record.distributions] == [("opencv-python-headless", ["cv2"])]
    assert (repo / "requirements.txt").read_text() == "opencv-python-headless\n"  # not opencv-python beside it


def test_a_dockerfile_the_user_wrote_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    mine = "FROM python:3.11-slim\nRUN pip install numpy\n"
    repo = _repo(tmp_path / "repo", {"model.py": "import numpy\n", "requirements.txt": "numpy\n", "Dockerfile": mine})
    record = pin(repo)
    assert (repo / "Dockerfile").read_text() == mine
    assert "Dockerfile is not paperlens' and is kept as it is" in record.message
    (repo / "Dockerfile").unlink()
    pin(repo)
    assert (repo / "Dockerfile").read_text().startswith("# Written by paperlens pin")

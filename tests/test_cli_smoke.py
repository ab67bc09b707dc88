"""`paperlens smoke` from the command line, against the real Docker engine and base image."""

from __future__ import annotations

import json

from .test_cli import run
from .test_server_smoke import FAILING_TEST


def _workspace(tmp_path):
    """A folder the sandbox's user can read (pytest's own tmp_path is its owner's only)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir(mode=0o755)
    workspace.chmod(0o755)
    return workspace


def test_a_failing_smoke_run_is_sarif_at_the_failing_line_with_its_error_class(tmp_path):
    tmp_path = _workspace(tmp_path)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_head.py").write_text(FAILING_TEST)
    (tmp_path / "requirements.txt").write_text("numpy\n")
    done = run("smoke", str(tmp_path), "--format", "sarif")
    assert done.returncode == 1, done.stderr
    log = json.loads(done.stdout)
    results = log["runs"][0]["results"]
    [failure] = [r for r in results if r["ruleId"] == "paperlens.smoke"]
    region = failure["locations"][0]["physicalLocation"]
    assert region["artifactLocation"]["uri"] == "tests/test_head.py"
    assert region["region"]["startLine"] == 1 + FAILING_TEST.splitlines().index(next(l for l in FAILING_TEST.splitlines() if "<- here" in l))
    assert failure["properties"]["errorClass"] == "shape-mismatch"
    [unpinned] = [r for r in results if r["ruleId"] == "paperlens.dependency"]
    assert unpinned["properties"] == {"kind": "unpinned", "distribution": "numpy", "module": None}
    assert "test_head.py" in done.stderr  # the run's own output streamed while it ran


def test_a_passing_run_exits_0_and_a_missing_image_exits_2_saying_what_to_do(tmp_path):
    tmp_path = _workspace(tmp_path)
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    passed = run("smoke", str(tmp_path))
    assert passed.returncode == 0 and passed.stdout.startswith("smoke: passed"), passed.stdout + passed.stderr
    missing = run("smoke", str(tmp_path), "--image", "paperlens-no-such-image:0")
    assert missing.returncode == 2
    assert "paperlens-no-such-image:0" in missing.stderr and "local" in missing.stderr

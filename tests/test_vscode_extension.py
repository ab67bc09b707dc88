"""The VS Code extension (client-vscode/): its unit tests under node's test runner, then the built
.vsix in a real VS Code (code-server, driven by headless Chromium) on a copy of the example
workspace and paper.

`scripts/editor-test.sh` installs what this needs (chromium, the npm packages, code-server in a
cache folder) and builds the .vsix. A set-up that fails is a failure here, never a skip: CI runs
this. The screenshots of each step are kept in pytest's tmp_path (printed; see results.json there).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CLIENT = REPO / "client-vscode"
SHOTS = [
    "01-problems.png",
    "02-hover-value.png",
    "03-hover-equation.png",
    "04-quick-fix-menu.png",
    "05-quick-fix-applied.png",
    "06-paper-view-source.png",
    "07-paper-view-source-from-code-lens.png",
    "08-readiness-report.png",
    "09-open-questions.png",
    "10-smoke-run.png",
    "11-hover-pdf.png",
    "12-paper-view-page.png",
    "13-restricted-mode.png",
    "14-not-installed.png",
    "15-scaffold-preview.png",
    "16-scaffold-applied.png",
]


def _tail(text: str, chars: int = 6000) -> str:
    return text[-chars:]


@pytest.fixture(scope="module")
def editor() -> dict[str, str]:
    """What scripts/editor-test.sh set up: CODE_SERVER, VSIX and CHROMIUM."""
    done = subprocess.run(["bash", str(REPO / "scripts" / "editor-test.sh")], cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, f"scripts/editor-test.sh failed ({done.returncode}):\n{_tail(done.stderr)}\n{_tail(done.stdout, 2000)}"
    found = dict(line.split("=", 1) for line in done.stdout.splitlines() if re.match(r"^(CODE_SERVER|VSIX|CHROMIUM)=", line))
    assert set(found) == {"CODE_SERVER", "VSIX", "CHROMIUM"}, done.stdout
    assert Path(found["VSIX"]).stat().st_size > 10_000
    return found


def test_the_extensions_own_logic(editor: dict[str, str]) -> None:
    """Interpreter resolution, settings → initializationOptions (untrusted filtering included),
    the contributed settings against the server's schema, hover-link rewriting, the page view."""
    done = subprocess.run(["npm", "test"], cwd=CLIENT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, _tail(done.stdout) + _tail(done.stderr, 2000)
    passed = re.search(r"^# pass (\d+)$", done.stdout, re.M)
    assert passed and int(passed.group(1)) >= 15 and re.search(r"^# fail 0$", done.stdout, re.M), _tail(done.stdout)


def test_the_extension_in_a_real_vscode(editor: dict[str, str], tmp_path: Path) -> None:
    shots = tmp_path / "screenshots"
    print(f"\nscreenshots of the VS Code walk-through: {shots}")
    env = {
        **os.environ,
        "CODE_SERVER": editor["CODE_SERVER"],
        "VSIX": editor["VSIX"],
        "CHROMIUM": editor["CHROMIUM"],
        "PAPERLENS_PYTHON": sys.executable,  # the checkout's .venv under scripts/test.sh
        "SHOTS": str(shots),
        "WORK": str(tmp_path / "work"),
    }
    done = subprocess.run(["node", "e2e/run.js"], cwd=CLIENT, env=env, capture_output=True, text=True, timeout=600)
    results_file = shots / "results.json"
    results = json.loads(results_file.read_text()) if results_file.exists() else {"steps": []}
    log = shots / "paperlens-output.log"
    assert done.returncode == 0, (
        f"the walk-through failed (screenshots and logs in {shots}):\n{_tail(done.stdout)}\n{_tail(done.stderr, 3000)}\n"
        f"paperlens log:\n{_tail(log.read_text(), 3000) if log.exists() else '(none)'}"
    )
    steps = {step["name"]: step for step in results["steps"]}
    assert all(step["ok"] for step in steps.values()) and len(steps) == 12, results

    problems = steps["divergence-in-problems"]["detail"]
    assert "weight_decay = 5e-4" in problems["row"] and "0.05" in problems["row"] and "paperlens" in problems["row"]
    assert "Reproducibility checklist" in problems["checklist"] and "Add:" in problems["checklist"]

    hover = steps["hover-value-with-quote"]["detail"]["hover"]
    assert "paperlens — divergence" in hover and "a weight decay of 0.05" in hover  # the paper's quote

    [image] = steps["hover-equation-image"]["detail"]["images"]
    assert image["alt"] == "Eq. (3)" and image["src"].startswith("data:image/png") and image["naturalWidth"] > 0

    fix = steps["quick-fix-use-the-papers-value"]["detail"]
    assert "Use the paper's weight decay (0.05)" in fix["offered"]
    assert not any("weight_decay = 5e-4" in row for row in fix["problems_after"])

    source = steps["paper-view-source-from-palette-and-code-lens"]["detail"]
    assert source["tab"] == "method.tex" and source["lens"].startswith("Implements Eq. (3)")
    line = _equation_line(REPO / "examples" / "paper", "3")
    assert source["palette_cursor"].startswith(f"Ln {line + 1},") and source["lens_cursor"].startswith(f"Ln {line + 1},")

    palette = steps["palette-check-report-questions"]["detail"]
    assert re.search(r"paperlens: \d+ findings? in \d+ files?", palette["check"])
    assert palette["report_heading"].startswith("Readiness report")

    smoke = steps["smoke-run-in-status-bar"]["detail"]
    assert "smoke run passed" in smoke["message"] and "smoke" in smoke["status"]

    scaffold = steps["scaffold-repository-reviewed"]["detail"]
    assert {"reproduction/config.toml", "reproduction/reproduce.py", "reproduction/.paperlens/plan.json"} <= set(scaffold["preview"])
    assert scaffold["files_in_preview"] == scaffold["files_on_disk"] == len(scaffold["preview"]) >= 3, scaffold
    assert sorted(scaffold["on_disk"]) == sorted(f.removeprefix("reproduction/") for f in scaffold["preview"]), scaffold

    pdf = steps["paper-view-pdf-page"]["detail"]
    assert pdf["link"].startswith("command:paperlens.showPaper?") and "paper.pdf" in pdf["link"]
    assert pdf["hover_images"][0]["naturalWidth"] > 0 and pdf["page_image_width_from_hover"] > 0
    box = pdf["box"]
    assert box["image"] > 0 and box["width"] > 0 and 0 <= box["top"] < box["bottom"] <= box["viewport"]

    restricted = steps["restricted-mode"]["detail"]
    assert not any("smoke" in command for command in restricted["offered"]), restricted
    assert '"smokeOnSave":false' in restricted["server_settings"] and "llm" not in restricted["server_settings"]

    missing = steps["not-installed-message"]["detail"]["message"]
    assert "paperlens is not installed for" in missing and "python-without-paperlens -m pip install paperlens" in missing

    for name in SHOTS:
        assert (shots / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    print(f"walk-through: {results['timings']}")


def _equation_line(paper: Path, number: str) -> int:
    """Where paperlens places the equation (0-based line of its source)."""
    from paperlens.pipeline.ingest import read_paper

    spec = read_paper(paper)
    return next(e.location.line for e in spec.equations if e.number == number)

"""`paperlens index` as a user runs it: a real process, its output and its exit status."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pymupdf
import pytest

from .conftest import EXAMPLE_PAPER, PDF_PAPERS

PAPERLENS = Path(sys.executable).parent / "paperlens"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PAPERLENS), *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=dict(os.environ)
    )


def test_text_summary_of_the_example():
    result = run("index", str(EXAMPLE_PAPER))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Tempered Label Mixing" in out
    assert "(3) eq:tempered-weight" in out
    assert "Stated values" in out
    learning_rate = next(line for line in out.splitlines() if line.strip().startswith("learning_rate"))
    assert "0.0003" in learning_rate and "experiments.tex:" in learning_rate


def test_json_is_the_paper_spec():
    result = run("index", str(EXAMPLE_PAPER / "main.tex"), "--format", "json")
    assert result.returncode == 0, result.stderr
    spec = json.loads(result.stdout)
    assert spec["source_format"] == "latex"
    assert {e["number"] for e in spec["equations"] if e["number"]} == {"1", "2", "3", "4", "5", "6"}


def test_a_second_read_comes_from_the_cache(tmp_path):
    paper = tmp_path / "paper"
    paper.mkdir()
    (paper / "main.tex").write_text("\\begin{document}\\section{A}\nWe use a batch size of 64.\n\\end{document}\n")
    first = run("index", str(paper), "--format", "json")
    cache_files = list(Path(os.environ["PAPERLENS_CACHE_DIR"]).glob("spec-*.json"))
    assert first.returncode == 0 and len(cache_files) == 1
    # Corrupt the cache entry's content hash: a changed file must be re-read, not served stale.
    (paper / "main.tex").write_text("\\begin{document}\\section{B}\nWe use a batch size of 32.\n\\end{document}\n")
    second = json.loads(run("index", str(paper), "--format", "json").stdout)
    assert second["sections"][0]["title"] == "B"


def _broken_inputs(tmp: Path) -> dict[str, tuple[Path, str]]:
    real_pdf = PDF_PAPERS / "alpha-zero-writeup" / "writeup.pdf"
    not_pdf = tmp / "notes.pdf"
    not_pdf.write_text("this is plain text, not a PDF\n")
    truncated = tmp / "truncated.pdf"
    truncated.write_bytes(real_pdf.read_bytes()[:4000])
    encrypted = tmp / "encrypted.pdf"
    with pymupdf.open() as document:
        document.new_page().insert_text((72, 72), "secret paper")
        document.save(encrypted, encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner", user_pw="user")
    scanned = tmp / "scanned.pdf"
    with pymupdf.open() as document:
        document.new_page().draw_rect(pymupdf.Rect(50, 50, 300, 300), fill=(0.5, 0.5, 0.5))
        document.save(scanned)
    loop = tmp / "loop"
    loop.mkdir()
    (loop / "main.tex").write_text("\\begin{document}\\input{a}\\end{document}")
    (loop / "a.tex").write_text("\\input{main}")
    outside = tmp / "outside"
    outside.mkdir()
    (outside / "main.tex").write_text("\\begin{document}\\input{../secret}\\end{document}")
    braces = tmp / "braces.tex"
    braces.write_text("\\begin{document}\n\\section{Open\n\\end{document}\n")
    huge = tmp / "huge.tex"
    huge.write_text("\\begin{document}\n" + ("word " * 20 + "\n") * 110_000 + "\\end{document}\n")
    return {
        "missing": (tmp / "nowhere.pdf", "no such file"),
        "not a pdf": (not_pdf, "not a PDF"),
        "truncated": (truncated, "truncated.pdf"),
        "encrypted": (encrypted, "encrypted"),
        "no text layer": (scanned, "no text layer"),
        "input loop": (loop, "\\input loop"),
        "input outside": (outside, "outside the paper's folder"),
        "unbalanced braces": (braces, "unbalanced braces"),
        "10 MB tex": (huge, "larger than 4 MB"),
    }


@pytest.mark.parametrize("case", ["missing", "not a pdf", "truncated", "encrypted", "no text layer", "input loop", "input outside", "unbalanced braces", "10 MB tex"])
def test_bad_input_gives_one_clear_message_and_a_nonzero_exit(tmp_path, case):
    path, expected = _broken_inputs(tmp_path)[case]
    result = run("index", str(path))
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert expected in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""


def test_unknown_format_is_a_usage_error():
    result = run("index", str(EXAMPLE_PAPER), "--format", "yaml")
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_gaps_json_is_the_readiness_report():
    from paperlens.schemas import ReadinessReport

    result = run("gaps", str(EXAMPLE_PAPER), "--format", "json")
    assert result.returncode == 0, result.stderr
    report = ReadinessReport.model_validate_json(result.stdout)
    assert report.gaps[0].id == "conflicting-values:batch_size"


def test_gaps_sarif_for_latex_has_regions_in_rank_order():
    result = run("gaps", str(EXAMPLE_PAPER), "--format", "sarif")
    assert result.returncode == 0, result.stderr
    log = json.loads(result.stdout)
    assert log["version"] == "2.1.0"
    [sarif_run] = log["runs"]
    assert sarif_run["tool"]["driver"]["rules"][0]["id"] == "paperlens.paper-gap"
    results = sarif_run["results"]
    assert [r["properties"]["rank"] for r in results] == list(range(1, len(results) + 1))
    first = results[0]
    assert first["ruleId"] == "paperlens.paper-gap" and first["level"] == "error"
    assert first["properties"]["type"] == "Inconsistency" and first["properties"]["blocking"] is True
    assert first["properties"]["question"].endswith("?")
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "sections/experiments.tex"
    assert location["region"]["startLine"] == 8
    assert sarif_run["originalUriBaseIds"]["PAPERROOT"]["uri"].startswith("file://")


def test_gaps_sarif_for_pdf_puts_page_and_box_in_properties():
    result = run("gaps", str(EXAMPLE_PAPER / "paper.pdf"), "--format", "sarif")
    first = json.loads(result.stdout)["runs"][0]["results"][0]
    assert "region" not in first["locations"][0]["physicalLocation"]
    assert first["properties"]["page"] == 2 and len(first["properties"]["bbox"]) == 4


def test_gaps_markdown_is_a_report_to_send():
    result = run("gaps", str(EXAMPLE_PAPER), "--format", "markdown")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.startswith("# Readiness report: Tempered Label Mixing")
    assert "**Verdict: not ready**" in text
    blocking, routine = text.split("## Blocking gaps")[1].split("## Routine gaps")
    assert blocking.strip().startswith("1. **The paper gives batch size = 128")
    assert "Convention, not the paper's answer" in blocking  # "standard augmentation"'s
    assert "Left to convention (not asked): β1 and β2 (AdamW) and ε (numerical stability term) (AdamW) (usually: β1 = 0.9, β2 = 0.999" in text
    assert "| AdamW | betas | **no** | — |" in text


def test_gaps_on_a_broken_paper_is_one_clear_error(tmp_path):
    broken = tmp_path / "broken.pdf"
    broken.write_text("not a pdf")
    result = run("gaps", str(broken))
    assert result.returncode == 2 and "not a PDF" in result.stderr and "Traceback" not in result.stderr


def test_gaps_llm_with_a_malformed_setting_is_one_clear_message(monkeypatch):
    monkeypatch.setenv("PAPERLENS_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("PAPERLENS_LLM_MODEL", "m")
    monkeypatch.setenv("PAPERLENS_LLM_MAX_TOKENS", "lots")
    result = run("gaps", str(EXAMPLE_PAPER), "--llm")
    assert result.returncode == 0 and "PAPERLENS_LLM_MAX_TOKENS must be a positive whole number" in result.stderr


def test_gaps_llm_without_an_endpoint_says_so_and_keeps_the_rules_gaps(monkeypatch):
    monkeypatch.delenv("PAPERLENS_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("PAPERLENS_LLM_MODEL", raising=False)
    result = run("gaps", str(EXAMPLE_PAPER), "--llm", "--format", "json")
    assert result.returncode == 0
    assert "the model was not used: no LLM endpoint configured" in result.stderr
    assert json.loads(result.stdout)["gaps"][0]["id"] == "conflicting-values:batch_size"


def test_gaps_llm_against_a_real_local_server(local_llm, monkeypatch):
    monkeypatch.setenv("PAPERLENS_LLM_BASE_URL", local_llm.base_url)
    monkeypatch.setenv("PAPERLENS_LLM_MODEL", "smollm2-135m-instruct")
    monkeypatch.setenv("PAPERLENS_LLM_MAX_TOKENS", "128")  # the tiny model rambles; keep the test short
    monkeypatch.setenv("PAPERLENS_LLM_TIMEOUT", "20")  # at worst three 20 s tries, well inside run()'s limit
    result = run("gaps", str(EXAMPLE_PAPER), "--llm", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert f"asking smollm2-135m-instruct at {local_llm.base_url}" in result.stderr
    # The tiny model's answer may be cut off or empty; either way the rules' gaps stand, and any
    # gap the model adds quotes the paper and is marked as the model's.
    assert "the model found" in result.stderr or "the model was not used" in result.stderr
    gaps = json.loads(result.stdout)["gaps"]
    assert gaps[0]["id"] == "conflicting-values:batch_size"
    for gap in gaps:
        if gap["source"] == "llm":
            assert not gap["blocking"] and gap["evidence"][0]["quote"]


EXAMPLE_WORKSPACE = EXAMPLE_PAPER.parent / "workspace"


def test_check_the_example_workspace_finds_what_its_readme_lists():
    result = run("check", str(EXAMPLE_WORKSPACE), "--format", "json")
    assert result.returncode == 1, result.stderr  # divergences are errors, and --fail-on defaults to error
    findings = json.loads(result.stdout)["findings"]
    seen = {(f["kind"], f["setting"], f["code"]["file"] if f["code"] else None, f["code_value"]) for f in findings}
    assert ("divergence", "optimizer", "train.py", "Adam") in seen
    assert ("divergence", "weight_decay", "train.py", "5e-4") in seen
    assert ("divergence", "alpha", "train.py", "0.2") in seen
    assert ("guess", "rho", "tlm.py", "0.1") in seen
    assert any(kind == "guess" and setting in ("beta1", "beta2", "betas") for kind, setting, _, _ in seen)
    assert not [f for f in findings if f["kind"] == "unimplemented"]  # Eq. (6) is the appendix's derivation
    assert not [f for f in findings if f["setting"] == "epsilon"]  # a bare `eps` is nobody's for sure
    quiet = {"learning_rate", "temperature", "lambda", "epochs", "dropout", "label_smoothing", "grad_clip_norm", "batch_size", "warmup_steps"}
    assert not [f for f in findings if f["setting"] in quiet], [f["message"] for f in findings if f["setting"] in quiet]
    for finding in findings:
        assert finding["paper"], finding
        if finding["kind"] != "unimplemented":
            assert finding["code"]["line"] >= 0


def test_check_sarif_puts_code_first_and_the_paper_in_related_locations():
    result = run("check", str(EXAMPLE_WORKSPACE), "--format", "sarif", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    [sarif_run] = json.loads(result.stdout)["runs"]
    assert {r["id"] for r in sarif_run["tool"]["driver"]["rules"]} == {"paperlens.divergence", "paperlens.guess", "paperlens.unimplemented", "paperlens.agreement"}
    weight_decay = next(r for r in sarif_run["results"] if r["properties"].get("setting") == "weight_decay")
    location = weight_decay["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "train.py", "uriBaseId": "WORKSPACE"}
    assert location["region"]["startLine"] >= 1
    related = weight_decay["relatedLocations"][0]["physicalLocation"]
    assert related["artifactLocation"]["uriBaseId"] == "PAPERROOT" and related["region"]["startLine"] >= 1
    assert weight_decay["properties"]["codeValue"] == "5e-4" and weight_decay["properties"]["paperValue"] == "0.05"


def test_check_with_a_deviation_recorded_passes(tmp_path):
    import shutil

    workspace = tmp_path / "workspace"
    shutil.copytree(EXAMPLE_WORKSPACE, workspace)
    (workspace / "pyproject.toml").write_text(f'[tool.paperlens]\npaper = "{EXAMPLE_PAPER.as_posix()}"\n')
    (workspace / ".paperlens").mkdir()
    (workspace / ".paperlens" / "decisions.yaml").write_text(
        "deviations:\n"
        "  - {id: d1, setting: weight_decay, reason: baseline}\n"
        "  - {id: d2, setting: optimizer, reason: earlier codebase}\n"
        "  - {id: d3, setting: alpha, reason: tuned}\n"
    )
    result = run("check", str(workspace), "--format", "json")
    assert result.returncode == 0, result.stdout
    recorded = {f["decision"] for f in json.loads(result.stdout)["findings"] if f["status"] == "recorded"}
    assert recorded == {"d1", "d2", "d3"}


def test_check_with_a_malformed_decisions_file_is_one_clear_error(tmp_path):
    (tmp_path / ".paperlens").mkdir()
    (tmp_path / ".paperlens" / "decisions.yaml").write_text("deviations: [oops\n")
    result = run("check", str(tmp_path), "--paper", str(EXAMPLE_PAPER))
    assert result.returncode == 2 and "decisions.yaml" in result.stderr and "Traceback" not in result.stderr
    assert (tmp_path / ".paperlens" / "decisions.yaml").read_text() == "deviations: [oops\n"


def test_check_without_a_paper_says_how_to_give_one(tmp_path):
    result = run("check", str(tmp_path))
    assert result.returncode == 2 and "--paper" in result.stderr


def test_check_reads_around_a_syntax_error_and_says_so(tmp_path):
    import shutil

    workspace = tmp_path / "workspace"
    shutil.copytree(EXAMPLE_WORKSPACE, workspace)
    (workspace / "pyproject.toml").write_text(f'[tool.paperlens]\npaper = "{EXAMPLE_PAPER.as_posix()}"\n')
    (workspace / "broken.py").write_text("import torch\nopt = torch.optim.AdamW(params, lr=1e-2)\ndef oops(:\n    pass\n")
    result = run("check", str(workspace), "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    assert "note: broken.py:" in result.stdout and "syntax" in result.stdout.lower()
    assert "broken.py:2:" in result.stdout and "learning rate = 3e-4" in result.stdout  # read before the error
    assert "train.py:30:" in result.stdout  # the rest of the workspace is unaffected

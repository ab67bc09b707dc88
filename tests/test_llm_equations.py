"""The model's verdict on a function an anchor ties to an equation that the rules could not compare:
kept only when its quotes are in the function and in the equation, and shown as the model's.
Recorded answers test the rules; the real server tests the request end to end."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from paperlens.pipeline.check import check
from paperlens.pipeline.check.llm_equations import judge_undecided
from paperlens.pipeline.code import index_workspace
from paperlens.pipeline.ingest import read_paper
from paperlens.pipeline.llm import LLMClient, LLMError
from paperlens.schemas import DecisionsFile, LLMSettings

from .local_llm import MODEL_NAME, recorded, request_body

PAPER = r"""\documentclass{article}
\begin{document}
\section{Method}
\begin{equation}\label{eq:dyt}
y = \gamma \tanh(\alpha x) + \beta
\end{equation}
\end{document}
"""
CODE = '''
import torch


def dyt(x, alpha, gamma, beta):
    """Eq. (1)."""
    h = project(x)
    return gamma * torch.tanh(alpha * h)
'''


def _undecided(tmp_path, code: str):
    """PAPER and `code` (as norms.py) checked: (workspace, spec, index, the pairs left undecided)."""
    (tmp_path / "paper").mkdir()
    (tmp_path / "paper" / "main.tex").write_text(PAPER)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "norms.py").write_text(textwrap.dedent(code))
    spec = read_paper(tmp_path / "paper" / "main.tex", use_cache=False)
    index = index_workspace(workspace)
    return workspace, spec, index, check(workspace, spec, index, DecisionsFile()).undecided


@pytest.fixture
def undecided_pair(tmp_path):
    workspace, spec, index, undecided = _undecided(tmp_path, CODE)
    assert [p.reason for p in undecided] == ["the function cannot be read (the call project)"]
    return workspace, spec, index, undecided


def verdict(outcome: str, code_quote: str, paper_quote: str, difference: str = "") -> str:
    return json.dumps({"outcome": outcome, "difference": difference, "code_quote": code_quote, "paper_quote": paper_quote})


def client_answering(answer: str, sent: list | None = None) -> LLMClient:
    return LLMClient(LLMSettings(base_url="http://recorded.invalid/v1", model=MODEL_NAME, max_retries=0), http_client=recorded(answer, sent=sent))


def test_a_verdict_quoting_the_function_and_the_equation_is_kept_as_the_models(undecided_pair):
    workspace, spec, index, undecided = undecided_pair
    sent: list = []
    answer = verdict("differs", "return gamma * torch.tanh(alpha * h)", r"+ \beta", "the code leaves out the shift beta")
    [finding] = judge_undecided(workspace, spec, index, undecided, client_answering(answer, sent)).findings
    assert (finding.kind, finding.severity, finding.confidence) == ("divergence", "info", 0.3)
    assert finding.message == "dyt may differ from Eq. (1): the code leaves out the shift beta"
    assert (finding.code.file, finding.code.line, finding.code.column) == ("norms.py", 7, 4)  # the return, 0-based
    assert finding.confidence_note.startswith(f"suggested by a model ({MODEL_NAME}), not shown by paperlens")
    prompt = request_body(sent[0])["messages"][1]["content"]
    assert r"\gamma \tanh(\alpha x) + \beta" in prompt and "h = project(x)" in prompt


@pytest.mark.parametrize(
    "answer",
    [
        verdict("differs", "return gamma * x", r"+ \beta", "no beta"),  # a line the function does not have
        verdict("differs", "return gamma * torch.tanh(alpha * h)", r"- \delta", "no beta"),  # not in the equation
        verdict("differs", "return", r"+ \beta", "no beta"),  # too short to show anything
        verdict("differs", "return gamma * torch.tanh(alpha * h)", r"+ \beta", " "),  # no difference said
        verdict("unsure", "return gamma * torch.tanh(alpha * h)", r"+ \beta"),
    ],
)
def test_a_verdict_without_real_quotes_or_a_stated_difference_is_dropped(undecided_pair, answer):
    workspace, spec, index, undecided = undecided_pair
    assert judge_undecided(workspace, spec, index, undecided, client_answering(answer)).findings == []


TWO_PAIRS = CODE + '''

def dyt_again(x, alpha, gamma, beta):
    """Eq. (1)."""
    h = project(x)
    return gamma * torch.tanh(alpha * h) + beta
'''


def test_an_answer_that_fails_costs_its_pair_and_a_server_that_stops_keeps_what_was_judged(tmp_path):
    import httpx2

    workspace, spec, index, undecided = _undecided(tmp_path, TWO_PAIRS)
    assert [p.function for p in undecided] == ["dyt", "dyt_again"]
    kept = verdict("differs", "return gamma * torch.tanh(alpha * h)", r"+ \beta", "the code leaves out the shift beta")
    settings = LLMSettings(base_url="http://recorded.invalid/v1", model=MODEL_NAME, max_retries=0, cache=False)  # each client asks afresh
    # The first answer is usable, then the server fails: the first verdict stays, the failure is said.
    down = LLMClient(settings, http_client=recorded(kept, httpx2.Response(503, json={"error": "overloaded"})))
    judged = judge_undecided(workspace, spec, index, undecided, down)
    assert [f.message for f in judged.findings] == ["dyt may differ from Eq. (1): the code leaves out the shift beta"]
    assert len(judged.failures) == 1 and judged.failures[0].startswith("dyt_again vs Eq. (1) and the rest: ")
    # An answer that is no verdict costs its own pair only: the next one is still asked.
    garbled = LLMClient(settings, http_client=recorded("not json", kept))
    judged = judge_undecided(workspace, spec, index, undecided, garbled)
    assert [f.message for f in judged.findings] == ["dyt_again may differ from Eq. (1): the code leaves out the shift beta"]
    assert [failure.split(":")[0] for failure in judged.failures] == ["dyt vs Eq. (1)"]
    # A server that answers nothing at all: the caller says the model was not used.
    with pytest.raises(LLMError):
        judge_undecided(workspace, spec, index, undecided, LLMClient(settings, http_client=recorded(httpx2.Response(503, json={}))))
    # A rejected key is no answer that another pair would change: asked once, not once per pair.
    sent: list = []
    with pytest.raises(LLMError, match="rejected the API key"):
        judge_undecided(workspace, spec, index, undecided, LLMClient(settings, http_client=recorded(httpx2.Response(401, json={"error": "no"}), sent=sent)))
    assert len(sent) == 1


def test_end_to_end_against_the_real_server(local_llm, undecided_pair):
    """The real request (the EquationVerdict schema as the server's grammar) to llama.cpp. The tiny
    model's answer is often cut off (a clear LLMError) or unquoted (dropped); what is kept quotes both."""
    workspace, spec, index, undecided = undecided_pair
    client = LLMClient(local_llm.settings(max_output_tokens=160, max_retries=0))
    try:
        judged = judge_undecided(workspace, spec, index, undecided, client)
        findings = judged.findings
        assert all("cut off at 160 tokens" in failure for failure in judged.failures)
    except LLMError as err:
        assert "cut off at 160 tokens" in str(err)
        findings = []
    assert client.usage.requests == 1 and 0 < client.usage.completion_tokens <= 160
    source = (workspace / "norms.py").read_text().splitlines()
    for finding in findings:
        assert finding.code_value in source[finding.code.line] and finding.confidence == 0.3


def test_check_asks_the_model_only_with_llm_and_says_what_it_kept(local_llm, undecided_pair, tmp_path):
    import os
    import subprocess
    import sys

    workspace, spec, _, _ = undecided_pair
    command = [sys.executable, "-m", "paperlens.pipeline.cli", "check", str(workspace), "--paper", str(Path(spec.root) / spec.main_file), "--fail-on", "never"]
    environment = {**os.environ, "PAPERLENS_LLM_BASE_URL": local_llm.base_url, "PAPERLENS_LLM_MODEL": MODEL_NAME, "PAPERLENS_CACHE_DIR": str(tmp_path / "cache")}
    without = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=300)
    assert without.returncode == 0 and "asking" not in without.stderr and "dyt was not compared with Eq. (1)" in without.stdout
    asked = subprocess.run([*command, "--llm"], capture_output=True, text=True, env=environment, timeout=300)
    assert asked.returncode == 0, asked.stderr
    assert f"asking {MODEL_NAME}" in asked.stderr
    assert "the model's verdicts kept:" in asked.stderr or "the model was not used" in asked.stderr

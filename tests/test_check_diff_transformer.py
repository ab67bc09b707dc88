"""The checks against a real paper (the Differential Transformer) on code written the way an
implementation of it is: idioms that look like the paper's settings or equations but are not, and
beside each, the divergence that must still be found."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from paperlens.pipeline.check import check
from paperlens.pipeline.code import index_workspace
from paperlens.pipeline.ingest import read_paper
from paperlens.schemas import DecisionsFile

from .conftest import LATEX_PAPERS

PAPER = LATEX_PAPERS / "Diff-Transformer"


@pytest.fixture(scope="module")
def paper():
    return read_paper(PAPER)


def _findings(tmp_path: Path, paper, source: str) -> list[tuple[str, str, str | None, int]]:
    """(kind, setting, code value, 1-based line) of every finding on one file, unimplemented ones left out."""
    (tmp_path / "model.py").write_text(textwrap.dedent(source).lstrip())
    report = check(tmp_path, paper, index_workspace(tmp_path), DecisionsFile())
    return [(f.kind, f.setting, f.code_value, f.code.line + 1) for f in report.findings if f.kind != "unimplemented"]


def test_the_paper_states_what_these_tests_compare_with(paper, tmp_path):
    found = _findings(tmp_path, paper, "WEIGHT_DECAY = 0.06\nTRAINING_TOKENS = 2e11\n")
    assert [(kind, setting) for kind, setting, _, _ in found] == [("divergence", "weight_decay"), ("divergence", "training_tokens")]


def test_a_zero_weight_decay_group_keeps_biases_out_of_the_decay_and_is_no_divergence(paper, tmp_path):
    source = """
        import torch


        def parameter_groups(model, weight_decay):
            \"\"\"No weight decay on norms, biases and the lambda vectors.\"\"\"
            decay, no_decay = [], []
            for name, param in model.named_parameters():
                if param.ndim < 2 or "lambda_" in name or name.endswith(".bias"):
                    no_decay.append(param)
                else:
                    decay.append(param)
            return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


        optimizer = torch.optim.AdamW(parameter_groups(model, 0.05), lr=3.2e-4, betas=(0.9, 0.95))
        other = torch.optim.AdamW(
            [{"params": model.blocks.parameters(), "weight_decay": 0.06}, dict(params=model.norm.parameters(), weight_decay=0)],
            lr=3.2e-4,
            betas=(0.9, 0.95),
        )
        """
    # The 0.0 groups are silent; a non-zero group that differs from the paper is still a divergence.
    assert _findings(tmp_path, paper, source) == [("divergence", "weight_decay", "0.06", 17)]


def test_a_running_token_count_is_not_the_training_budget(paper, tmp_path):
    source = """
        import torch
        import torch.nn.functional as F

        __all__ = ["Throughput", "budget", "count", "evaluate"]  # used elsewhere, so live


        @torch.no_grad()
        def evaluate(model, loader):
            total_loss, total_tokens = 0.0, 0
            for batch in loader:
                logits = model(batch[:, :-1])
                total_loss += F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten(), reduction="sum").item()
                total_tokens += batch[:, 1:].numel()
            return total_loss / max(total_tokens, 1)


        class Throughput:
            def __init__(self):
                self.total_tokens = 0

            def update(self, n):
                self.total_tokens = self.total_tokens + n


        train_tokens = 0


        def count(batch):
            global train_tokens
            train_tokens += batch.numel()


        def budget(steps, tokens_per_step):
            total_tokens = 5e11  # what the run trains on: a setting, compared
            for _ in range(steps):
                total_tokens -= tokens_per_step
            return total_tokens
        """
    assert _findings(tmp_path, paper, source) == [("divergence", "training_tokens", "5e11", 34)]


FORWARD = """
    import torch
    from torch import nn


    class MultiheadDiffAttn(nn.Module):
        \"\"\"Multi-head differential attention.\"\"\"

        def forward(self, attn_weights, v, bsz, tgt_len):
            # Eq. (2): lambda = exp(lq1 . lk1) - exp(lq2 . lk2) + lambda_init
            lambda_1 = torch.exp(torch.sum(self.lambda_q1 * self.lambda_k1, dim=-1).float())
            lambda_2 = torch.exp(torch.sum(self.lambda_q2 * self.lambda_k2, dim=-1).float())
            lambda_full = lambda_1 - lambda_2 + self.lambda_init
            attn_weights = attn_weights.view(bsz, self.num_heads, 2, tgt_len, tgt_len)
            attn_weights = attn_weights[:, :, 0] - lambda_full * attn_weights[:, :, 1]
            attn = torch.matmul(attn_weights, v)
            attn = self.subln(attn) * (1 - self.lambda_init)
            return self.out_proj(attn)
    """


def test_an_equation_comment_on_an_inner_line_says_nothing_of_what_the_function_returns(paper, tmp_path):
    assert _findings(tmp_path, paper, FORWARD) == []


LAMBDA = """
    import torch


    class Lambda:
        def full(self):{def_line}
            {docstring}lambda_1 = torch.exp(torch.sum(self.lambda_q1 * self.lambda_k1, dim=-1)){inner}
            return lambda_1 + self.lambda_init{return_line}
    """


@pytest.mark.parametrize(
    ("where", "documents_the_result"),
    [
        ({"docstring": '"""λ of Eq. (2)."""\n            '}, True),
        ({"above": "# Eq. (2)"}, True),
        ({"def_line": "  # Eq. (2)"}, True),
        ({"return_line": "  # Eq. (2)"}, True),
        ({"top_of_body": "# Eq. (2)"}, False),
        ({"inner": "  # Eq. (2)"}, False),
    ],
    ids=lambda value: next(iter(value)) if isinstance(value, dict) else str(value),
)
def test_the_terms_are_compared_only_where_the_anchor_documents_the_result(paper, tmp_path, where, documents_the_result):
    """λ = exp(λ_q1·λ_k1) − exp(λ_q2·λ_k2) + λ_init; this λ drops the second exponential, which
    comparing the two as expressions names, at the return."""
    fields = {"def_line": "", "docstring": "", "inner": "", "return_line": ""} | {k: v for k, v in where.items() if k in ("def_line", "docstring", "inner", "return_line")}
    source = LAMBDA.format(**fields)
    if "above" in where:
        source = source.replace("        def full", f"        {where['above']}\n        def full")
    if "top_of_body" in where:
        source = source.replace("            lambda_1", f"            {where['top_of_body']}\n            lambda_1")
    returned = 7 + ("above" in where) + ("docstring" in where)
    expected = [("divergence", "formula", "lambda_init + exp(Σ(lambda_k1*lambda_q1))", returned)] if documents_the_result else []
    assert _findings(tmp_path, paper, source) == expected
    if documents_the_result:
        [finding] = [f for f in check(tmp_path, paper, index_workspace(tmp_path), DecisionsFile()).findings if f.setting == "formula"]
        assert finding.message == "Lambda.full differs from Eq. (2): a term is left out: the paper's -exp(Σ(lambda_k2*lambda_q2))"

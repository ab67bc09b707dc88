"""Units: a value the paper states in one measure (tokens, examples, steps, epochs) is compared only
with code that counts the same thing. "A batch size of 4M tokens" says nothing of `batch_size = 8`
sequences; `tokens_per_batch` is the batch size in tokens and is compared with it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from paperlens.pipeline.check import check
from paperlens.pipeline.check.units import MIXED, code_measure, comparable, paper_measure
from paperlens.pipeline.code import index_workspace
from paperlens.pipeline.ingest import read_paper
from paperlens.schemas import DecisionsFile

from .conftest import LATEX_PAPERS

TOKENS_PAPER = r"""\documentclass{article}
\begin{document}
\section{Experiments}
We train with AdamW and a learning rate of $3\times10^{-4}$. The batch size is 0.5M tokens, with a
sequence length of 2048. We train for 20K steps.
\begin{table}[h]
\begin{tabular}{lc}
Learning rate & $3\times10^{-4}$ \\
Batch size & 0.5M \\
Training steps & 20K \\
\end{tabular}
\caption{Hyperparameters.}
\end{table}
\end{document}
"""

SEQUENCES_PAPER = r"""\documentclass{article}
\begin{document}
\section{Experiments}
We train with AdamW, a learning rate of $3\times10^{-4}$ and a batch size of 256 sequences for
100 epochs.
\end{document}
"""

HEADER_UNIT_PAPER = r"""\documentclass{article}
\begin{document}
\section{Experiments}
\begin{table}[h]
\begin{tabular}{lc}
Learning rate & $3\times10^{-4}$ \\
Batch size (tokens) & 1M \\
\end{tabular}
\caption{Hyperparameters.}
\end{table}
\end{document}
"""


def _findings(tmp_path: Path, paper: str | Path, source: str) -> list[tuple[str, str | None, str | None]]:
    """(kind, setting, code value) of each finding of one file against a paper (its text or folder)."""
    if isinstance(paper, str):
        (tmp_path / "paper").mkdir(parents=True)
        (tmp_path / "paper" / "main.tex").write_text(paper)
        paper = tmp_path / "paper"
    workspace = tmp_path / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "train.py").write_text(textwrap.dedent(source).lstrip())
    report = check(workspace, read_paper(paper), index_workspace(workspace), DecisionsFile())
    return [(f.kind, f.setting, f.code_value) for f in report.findings if f.kind != "unimplemented"]


EVAL_CONFIG = textwrap.dedent("""
    from dataclasses import dataclass

    __all__ = ["EvalConfig"]  # used elsewhere, so live


    @dataclass
    class EvalConfig:
        batch_size: int = 8
        max_batches: int = 200
        seq_len: int = 2048
""")


def test_a_batch_size_in_tokens_is_not_compared_with_a_batch_of_sequences(tmp_path):
    assert _findings(tmp_path, TOKENS_PAPER, EVAL_CONFIG) == []


def test_a_batch_size_in_tokens_is_compared_with_a_code_name_that_says_tokens(tmp_path):
    source = "tokens_per_batch = 1_000_000\n"
    assert _findings(tmp_path, TOKENS_PAPER, source) == [("divergence", "batch_size", "1_000_000")]


@pytest.mark.parametrize("source", ["batch_size_tokens = 2048 * 256\n", "config = dict(batch_tokens=500_000)\n"])
def test_a_batch_in_tokens_as_the_paper_writes_it_is_silent(tmp_path, source):
    # "0.5M tokens": 2048 × 256 = 524,288 is 0.5 × 2^20, as token counts are often meant.
    assert _findings(tmp_path, TOKENS_PAPER, source) == []


def test_a_batch_of_sequences_is_still_compared_with_a_batch_of_sequences(tmp_path):
    source = "import torch\nloader = torch.utils.data.DataLoader(dataset, batch_size=128)\n"
    assert _findings(tmp_path, SEQUENCES_PAPER, source) == [("divergence", "batch_size", "128")]
    assert _findings(tmp_path / "tokens", SEQUENCES_PAPER, "tokens_per_batch = 262144\n") == []


def test_the_unit_a_table_header_writes_is_the_values(tmp_path):
    assert _findings(tmp_path, HEADER_UNIT_PAPER, "batch_size = 64\n") == []
    assert _findings(tmp_path / "tokens", HEADER_UNIT_PAPER, "tokens_per_batch = 2_000_000\n") == [
        ("divergence", "batch_size", "2_000_000")
    ]


def test_a_table_value_without_a_unit_takes_the_one_the_prose_writes_with_it(tmp_path):
    (tmp_path / "main.tex").write_text(TOKENS_PAPER)
    stated = read_paper(tmp_path).hyperparameters
    batch_sizes = {(h.source, h.unit) for h in stated if h.normalized_name == "batch_size"}
    assert batch_sizes == {("text", "tokens"), ("table", "tokens")}


def test_measures_of_code_names():
    assert code_measure("batch_size", "batch_size") == "examples"
    assert code_measure("cfg.data.tokensPerBatch", "batch_size") == "tokens"
    assert code_measure("BATCH_SIZE_TOKENS", "batch_size") == "tokens"
    assert code_measure("max_steps", "training_steps") == "steps"
    assert code_measure("num_train_epochs", "epochs") == "epochs"
    assert code_measure("steps_per_epoch", "training_steps") == "steps"  # what comes after `per` is a rate's
    assert code_measure("image_size", "image_resolution") is None  # no plural: no images counted
    assert code_measure("epochs_steps", "training_steps") == MIXED
    assert code_measure("lr", "learning_rate") is None
    assert paper_measure("batch_size", "sequences") == "examples"
    assert paper_measure("batch_size", "images") == "examples"
    assert paper_measure("training_steps", "epochs") == "epochs"
    assert paper_measure("batch_size", "%") == "examples"
    assert comparable("tokens", "tokens") and comparable(None, "tokens") and comparable("tokens", None)
    assert not comparable("tokens", "examples") and not comparable("steps", "epochs")
    assert not comparable("tokens", MIXED)


def test_a_training_length_in_epochs_is_not_compared_with_steps(tmp_path):
    paper = r"""\documentclass{article}
\begin{document}
\section{Experiments}
\begin{table}[h]
\begin{tabular}{lc}
Learning rate & $3\times10^{-4}$ \\
Training iterations & 90 epochs \\
\end{tabular}
\caption{Hyperparameters.}
\end{table}
\end{document}
"""
    assert _findings(tmp_path, paper, "max_steps = 300_000\n") == []


# --- the real paper ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def diff_transformer():
    return read_paper(LATEX_PAPERS / "Diff-Transformer")


def test_the_differential_transformer_states_its_batch_sizes_in_tokens(diff_transformer):
    units = {h.unit for h in diff_transformer.hyperparameters if h.normalized_name == "batch_size"}
    assert units == {"tokens"}  # the table's "Batch size | 4M" too


def test_an_evaluation_batch_of_the_differential_transformer_is_silent(tmp_path):
    source = EVAL_CONFIG + "\n\nWEIGHT_DECAY = 0.06\n"
    # The weight decay beside it is still a divergence.
    assert _findings(tmp_path, LATEX_PAPERS / "Diff-Transformer", source) == [("divergence", "weight_decay", "0.06")]


def test_a_batch_in_tokens_of_the_differential_transformer_is_compared(tmp_path):
    paper = LATEX_PAPERS / "Diff-Transformer"
    # 4M tokens as 2048 sequences of 2048 tokens: the paper's value.
    assert _findings(tmp_path, paper, "TOKENS_PER_BATCH = 2048 * 2048\n") == []
    assert _findings(tmp_path / "other", paper, "TOKENS_PER_BATCH = 2_000_000\n") == [
        ("divergence", "batch_size", "2_000_000")
    ]


def test_a_meter_starting_at_zero_tokens_is_no_batch_size(tmp_path):
    source = """
        __all__ = ["Meter"]


        class Meter:
            def __init__(self):
                self.tokens_per_batch = 0  # a placeholder until the first batch: outside any batch size's range

            def update(self, batch):
                self.tokens_per_batch = batch.numel()
        """
    assert _findings(tmp_path, LATEX_PAPERS / "Diff-Transformer", source) == []

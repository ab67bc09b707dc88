"""Fixture cases for `paperlens check`, written here, modelled on the kinds of paper-code
discrepancies users report: numeric, component, equation-level, unstated settings, and look-alikes
that must stay silent. Each case is a small workspace checked against one small paper; `expected` is
the exact set of (kind, setting) findings. Used by tests/test_check_cases.py and
bench/check_fixtures.py (precision and recall per kind)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

PAPER = r"""\documentclass{article}
\begin{document}
\section{Method}
The training loss sums the per-example losses and a regulariser:
\begin{equation}
\mathcal{L} = \sum_{i=1}^{N} \ell_i + \lambda R \label{eq:loss}
\end{equation}
where $\lambda$ weighs the regulariser; we set $\lambda = 0.1$. The per-example loss is
\begin{equation}
\ell_i = -\log p_i \label{eq:nll}
\end{equation}
Every block uses LayerNorm, and the logits are divided by a temperature $\tau = 0.07$.
\section{Experiments}
We train with AdamW, a learning rate of $3\times10^{-4}$, a weight decay of 0.05 and a batch size of
128 for 100 epochs. We use label smoothing of 10\%.
\end{document}
"""


@dataclass(frozen=True)
class Case:
    name: str
    files: dict[str, str]
    expected: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    known_miss: str | None = None  # why an expected finding is not found yet (it counts against recall)


def _case(name: str, expected: set[tuple[str, str]] | None = None, known_miss: str | None = None, **files: str) -> Case:
    renamed = {path.replace("__", "/").replace("_py", ".py").replace("_yaml", ".yaml"): text for path, text in files.items()}
    return Case(name, renamed, frozenset(expected or ()), known_miss)


CASES = [
    # numeric
    _case("learning rate differs", {("divergence", "learning_rate")}, train_py="import torch\nopt = torch.optim.AdamW(params, lr=1e-3)\n"),
    _case("learning rate written another way", train_py="import torch\nopt = torch.optim.AdamW(params, lr=0.0003, weight_decay=0.05)\n"),
    _case(
        "weight decay through a constant",
        {("divergence", "weight_decay")},
        train_py="import torch\nWD = 5e-4\nopt = torch.optim.AdamW(params, lr=3e-4, weight_decay=WD)\n",
    ),
    _case(
        "a no-decay parameter group",
        train_py=(
            "import torch\n\n\ndef parameter_groups(model, weight_decay):\n    decay, no_decay = [], []\n"
            "    for name, param in model.named_parameters():\n"
            "        (no_decay if param.ndim < 2 or name.endswith('.bias') else decay).append(param)\n"
            '    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]\n\n\n'
            "opt = torch.optim.AdamW(parameter_groups(model, 0.05), lr=3e-4)\n"
            'frozen = torch.optim.AdamW([dict(params=model.embed.parameters(), weight_decay=0)], lr=3e-4)\n'
        ),
    ),
    _case(
        "a parameter group's weight decay differs",
        {("divergence", "weight_decay")},
        train_py=(
            "import torch\n"
            'groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]\n'
            "opt = torch.optim.AdamW(groups, lr=3e-4)\n"
        ),
    ),
    _case(
        "default overridden to the paper's value",
        train_py="import torch\n\n\ndef build(params, weight_decay=5e-4):\n    return torch.optim.AdamW(params, lr=3e-4, weight_decay=weight_decay)\n\n\nopt = build(params, weight_decay=0.05)\n",
    ),
    _case("dead branch", train_py="import torch\nif False:\n    opt = torch.optim.AdamW(params, lr=1e-2)\n"),
    _case("percentage as a fraction", train_py="from torch import nn\nloss = nn.CrossEntropyLoss(label_smoothing=0.1)\n"),
    _case("label smoothing differs", {("divergence", "label_smoothing")}, train_py="from torch import nn\nloss = nn.CrossEntropyLoss(label_smoothing=0.2)\n"),
    _case("reciprocal named as such", train_py="inv_temperature = 1 / 0.07\n"),
    _case("temperature differs", {("divergence", "temperature")}, train_py="temperature = 0.1\n"),
    _case("batch size differs", {("divergence", "batch_size")}, train_py="batch_size = 256\n"),
    _case(
        "epochs in a config file",
        {("divergence", "epochs")},
        known_miss="the reader does not take '100 epochs' from '... a batch size of 128 for 100 epochs'",
        configs__train_yaml="training:\n  epochs: 300\n",
    ),
    # components
    _case("SGD for AdamW", {("divergence", "optimizer")}, train_py="import torch\nopt = torch.optim.SGD(params, lr=3e-4)\n"),
    _case("BatchNorm for LayerNorm", {("divergence", "normalization")}, model_py="from torch import nn\nnorm = nn.BatchNorm1d(64)\n"),
    _case("the paper's norm", model_py="from torch import nn\nnorm = nn.LayerNorm(64)\n"),
    # guesses
    _case(
        "betas the paper never gives",
        {("guess", "beta1"), ("guess", "beta2")},
        train_py="import torch\nopt = torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.95))\n",
    ),
    # equation level
    _case(
        "a sum written as a mean",
        {("divergence", "reduction")},
        loss_py='def loss(per_example, reg, lam=0.1):\n    """Eq. (1)."""\n    return per_example.mean() + lam * reg\n',
    ),
    _case("the sum kept", loss_py='def loss(per_example, reg, lam=0.1):\n    """Eq. (1)."""\n    return per_example.sum() + lam * reg\n'),
    _case(
        "a term dropped",
        {("divergence", "terms")},
        loss_py='def loss(per_example, reg):\n    """Eq. (1)."""\n    total = per_example.sum()\n    return total\n',
    ),
    _case(
        "a minus sign dropped",
        {("divergence", "formula")},  # the expressions compared: the sign is flipped (log p is real at p > 0 only)
        loss_py='import torch\n\n\ndef nll(p):\n    """Eq. (2)."""\n    return torch.log(p)\n',
    ),
    _case("the minus sign kept", {("agreement", "formula")}, loss_py='import torch\n\n\ndef nll(p):\n    """Eq. (2)."""\n    return -torch.log(p)\n'),
    _case(
        "the sign inside a library loss",
        loss_py='import torch.nn.functional as F\n\n\ndef nll(logits, y):\n    """Eq. (2)."""\n    return F.cross_entropy(logits, y)\n',
    ),
    _case(
        "a term dropped, the anchor on the return",
        {("divergence", "terms")},
        loss_py="def loss(per_example, reg):\n    total = per_example.sum()\n    return total  # Eq. (1)\n",
    ),
    _case(
        "an equation comment on one line of a training step",
        train_py=(
            "def train_step(model, optimizer, batch, reg, lam=0.1):\n    per_example = model(batch)\n"
            "    # Eq. (1): the per-example losses summed, plus the weighed regulariser\n"
            "    loss = per_example.sum() + lam * reg\n    loss.backward()\n    optimizer.step()\n    return loss.item()\n"
        ),
    ),
    _case(
        "a mean on the anchored line",
        {("divergence", "reduction")},
        loss_py="def loss(per_example, reg, lam=0.1):\n    data = per_example.mean()  # Eq. (1)\n    return data + lam * reg\n",
    ),
    _case(
        "a mean elsewhere than the anchored line",
        train_py=(
            "def train_step(model, criterion, batch, reg, lam=0.1):\n    logits = model(batch.x)\n"
            "    accuracy = (logits.argmax(-1) == batch.y).float().mean()  # logged only\n"
            "    loss = criterion(logits, batch.y) + lam * reg  # Eq. (1), criterion sums\n"
            "    return loss, accuracy\n"
        ),
    ),
    _case(
        "terms added up in a loop",
        loss_py='def loss(parts):\n    """Eq. (1)."""\n    total = 0\n    for part in parts:\n        total = total + part.sum()\n    return total\n',
    ),
    # look-alikes
    _case("a plotting alpha and the paper's λ", plot_py="import matplotlib.pyplot as plt\nplt.plot([1, 2], alpha=0.3)\nlam = 0.1\n"),
    _case("λ differs", {("divergence", "lambda")}, train_py="lam = 1.0\n"),
    _case("steps as epochs × iterations and a seed", train_py="import torch\ntorch.manual_seed(0)\nmax_steps = 100 * 390\n"),
]


def write_case(folder: Path, case: Case) -> Path:
    """The case's paper and workspace under `folder`; returns the workspace."""
    (folder / "paper").mkdir(parents=True)
    (folder / "paper" / "main.tex").write_text(PAPER)
    workspace = folder / "workspace"
    for name, text in case.files.items():
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (workspace / "pyproject.toml").write_text('[tool.paperlens]\npaper = "../paper"\n')
    return workspace

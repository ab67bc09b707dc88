"""`paperlens check` speed: a generated workspace of 500 files / 50k lines, side by side with plain
`ast.parse` of the same files in the same run (the floor for this kind of analysis in Python).

- full check: index every file and check it against the example paper (paper already read and its
  facts prepared, as the language server holds them). Target: within 3x of parsing alone.
- one-file re-check: edit one file, re-index the workspace incrementally (unchanged files reused by
  content hash) and re-check that file. Target: under 20 ms.

Usage: python bench/check.py [--files 500] [--repeat 5]
"""

from __future__ import annotations

import argparse
import ast
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from paperlens.pipeline.check import WorkspaceContext, check, check_file, paper_facts
from paperlens.pipeline.code import index_file, index_workspace
from paperlens.pipeline.ingest import read_paper
from paperlens.schemas import DecisionsFile

REPO = Path(__file__).resolve().parents[1]

# About 100 lines of ordinary training code: calls with hyperparameters, argparse, a dataclass
# config, constants, a few anchors, and plain numeric code that is none of these.
MODULE = '''"""Module {n}: part of a generated reproduction (Sec. 3.{k})."""

import argparse
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

LEARNING_RATE_{n} = 3e-4
WARMUP_{n} = 10_000


@dataclass
class Config{n}:
    lr: float = 3e-4
    weight_decay: float = 0.05
    batch_size: int = 256
    epochs: int = 200
    dropout: float = 0.1
    seed: int = {n}


class Block{n}(nn.Module):
    """A residual block; Eq. ({k}) of the paper."""

    def __init__(self, dim: int = 256, p: float = 0.1):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=1e-5)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        self.drop = nn.Dropout(p=p)

    def forward(self, x):
        h = self.fc1(self.norm(x))
        h = F.gelu(h)
        h = self.drop(self.fc2(h))
        return x + h


def schedule_{n}(step: int, total: int = 100_000, warmup: int = WARMUP_{n}) -> float:
    if step < warmup:
        return step / max(1, warmup)
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1 + math.cos(math.pi * progress))


def build_{n}(model: nn.Module, cfg: Config{n}):
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE_{n}, betas=(0.9, 0.999), weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule_{n})
    loss = nn.CrossEntropyLoss(label_smoothing=0.1)
    return optimizer, scheduler, loss


def parse_{n}():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--temperature", type=float, default=0.5)
    return parser.parse_args([])


def train_{n}(steps: int = 10):
    cfg = Config{n}()
    model = nn.Sequential(*[Block{n}() for _ in range(2)])
    optimizer, scheduler, loss_fn = build_{n}(model, cfg)
    for step in range(steps):
        x = torch.randn(cfg.batch_size, 256)
        y = torch.randint(0, 10, (cfg.batch_size,))
        logits = model(x)[:, :10]
        loss = loss_fn(logits, y)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
    return loss.item()


def metrics_{n}(values):
    total = 0.0
    count = 0
    for value in values:
        total += value
        count += 1
    mean = total / max(1, count)
    variance = sum((v - mean) ** 2 for v in values) / max(1, count)
    return {{"mean": mean, "std": math.sqrt(variance)}}


def describe_{n}(values) -> str:
    summary = metrics_{n}(values)
    low = summary["mean"] - summary["std"]
    high = summary["mean"] + summary["std"]
    return f"{{summary['mean']:.3f}} ± {{summary['std']:.3f}} ({{low:.3f}}..{{high:.3f}})"


if __name__ == "__main__":
    print(train_{n}())
'''


def generate(root: Path, files: int) -> int:
    lines = 0
    for n in range(files):
        text = MODULE.format(n=n, k=n % 6 + 1)
        folder = root / "src" / f"pkg{n // 50}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"module_{n}.py").write_text(text)
        lines += text.count("\n")
    return lines


def median_ms(action, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1e3)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    os.environ["PAPERLENS_CACHE_DIR"] = tempfile.mkdtemp(prefix="paperlens-bench-")
    root = Path(tempfile.mkdtemp(prefix="paperlens-workspace-"))
    lines = generate(root, args.files)
    sources = [(p, p.read_text()) for p in sorted(root.rglob("*.py"))]
    spec = read_paper(REPO / "examples" / "paper")
    decisions = DecisionsFile()
    facts = paper_facts(spec, decisions)
    print(f"machine: {platform.node()} · {platform.machine()} · {os.cpu_count()} cores · Python {platform.python_version()}")
    print(f"workspace: {args.files} files, {lines} lines; paper: examples/paper; median of {args.repeat} runs\n")

    parse_only = median_ms(lambda: [ast.parse(text) for _, text in sources], args.repeat)
    full = median_ms(lambda: check(root, spec, index_workspace(root), decisions, facts), args.repeat)
    index = index_workspace(root)
    report = check(root, spec, index, decisions, facts)
    print(f"  ast.parse of every file (baseline)   {parse_only:8.1f} ms")
    print(f"  paperlens full index + check         {full:8.1f} ms   ratio {full / parse_only:.2f}  [target <= 3]")
    print(f"  findings in the generated workspace: {len(report.findings)}")

    edited = sources[len(sources) // 2][0]
    relative = edited.relative_to(root).as_posix()
    original = edited.read_text()

    def recheck_one(counter=[0]) -> None:
        counter[0] += 1
        edited.write_text(original.replace("max_norm=1.0", f"max_norm={1 + counter[0] % 7}.0"))
        refreshed = index_workspace(root, previous=index)
        check_file(root, facts, next(f for f in refreshed.files if f.file == relative), WorkspaceContext.of(refreshed))

    def reparse_one() -> None:
        ast.parse(edited.read_text())

    def reindex_file_only() -> None:
        check_file(root, facts, index_file(root, relative))

    one = median_ms(recheck_one, max(args.repeat, 10))
    file_only = median_ms(reindex_file_only, max(args.repeat, 10))
    parse_one = median_ms(reparse_one, max(args.repeat, 10))
    print(f"\n  one edited file: ast.parse alone      {parse_one:8.2f} ms")
    print(f"  one edited file: index + check        {file_only:8.2f} ms   [target < 20 ms]")
    print(f"  one edited file: incremental workspace re-index (hash check of all {args.files} files) + check {one:8.2f} ms")
    edited.write_text(original)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Language server speed, as an editor sees it: the real server over stdio, driven by a real LSP
client, side by side with jedi-language-server (the Python language server most editors ship) on
the same file, the same positions, in the same run.

The workspace (generated in a temp folder): 500 Python files, one of them a 2,000-line
implementation of the Differential Transformer (shared/data/papers-latex/Diff-Transformer) that
sets the paper's settings, some as the paper states them and some not (beta2, dropout, weight
decay, ...), among ordinary model/data/training code; 499 other modules of varied sizes that import
each other. `[tool.paperlens] paper` points at the paper.

Measured (targets in brackets):
  1. edit → diagnostics: a one-character incremental edit of the weight decay (0.06 ⇄ 0.05, so the
     divergence comes and goes; every published version is checked), then the publishDiagnostics
     for that version. p50 / p95 / max.  [p95 < 30 ms]
  2. hover: on a line with a paperlens diagnostic (the linked site: BETA2), on an `Eq. (2)` anchor
     inside a function that a diagnostic ties to that equation (the hover shows the equation, as an
     image when the server makes one: the first such hover renders it), and on a plain line; ours
     and jedi's interleaved on the same positions. p50 / p95, ratio ours/jedi.  [p95 < 20 ms]
  3. peak memory (VmHWM of the server process, read just before shutdown), jedi's for reference.
     [< 200 MB]
  4. initialize → first diagnostics of the big file (reading the paper and indexing the workspace).
     Run 1 starts with an empty paperlens cache (the paper is read); later runs reuse it.
  5. start on the bundled example (examples/workspace beside examples/paper, train.py open from the
     start), from the server process's start: initialize answered, then the first diagnostics of
     train.py; jedi-language-server's on the same file, one server at a time. jedi publishes an
     opened file's diagnostics after a fixed 1 s debounce, so its first answer about the file (a
     documentSymbol request sent with the open) is shown too. Run 1 reads the paper; later runs
     reuse the cache.  [first diagnostics < 1.5 s]

The client asks for `{"paperlens": {"debounceMs": 0}}`. A server that does not honour it waits its
default 300 ms debounce before each analysis; nothing is subtracted: the output says which debounce
was in effect (edit latency below 300 ms or not).

Exit status: 0 whatever the targets (a benchmark, not a test); 1 when something did not work (no
diagnostics, an empty hover on the linked site, a published version that disagrees with the edit,
a server that died); 2 when jedi-language-server is not installed (or pass --no-jedi).

--profile: one more session of our server (not part of the figures above) under cProfile in every
thread (the analysis runs in worker threads), with the garbage collector timed apart (cProfile
charges a collection to whatever allocated), then where the time went: at start, and per edit.
The stats files are kept for `python -m pstats` ($TMPDIR/paperlens-server.prof and .start).

Usage: python bench/server.py [--runs 3] [--edits 50] [--hovers 100] [--files 500] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import pstats
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient
from machine import machine  # bench/machine.py (scripts here run with bench/ on the path)

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("PAPERLENS_SHARED_DATA", REPO.parent / "shared" / "data"))
PAPER = SHARED_DATA / "papers-latex" / "Diff-Transformer"
BIG_FILE = "difftx/models/diff_transformer.py"
TARGET_EDIT_P95_MS = 30.0
TARGET_HOVER_P95_MS = 20.0
TARGET_MEMORY_MB = 200.0
TARGET_EXAMPLE_START_MS = 1500.0
EXAMPLE = REPO / "examples"  # workspace/ and paper/, side by side
EXAMPLE_FILE = "train.py"
DEFAULT_DEBOUNCE_MS = 300.0
HOVER_WARMUP = 3  # hovers per server and site left out of the percentiles (the first is reported on its own)
JEDI_REQUIREMENT = "jedi-language-server==0.47.0"  # 0.46 is the first on pygls 2
OURS = [sys.executable, "-m", "paperlens.server"]
JEDI = [sys.executable, "-c", "import sys; from jedi_language_server.cli import cli; sys.argv[0] = 'jedi-language-server'; sys.exit(cli())"]

# --------------------------------------------------------------------------------------------
# The workspace
# --------------------------------------------------------------------------------------------

MODULE_HEADER = '''"""__DOC__"""

from __future__ import annotations

import json
import math
import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
'''

# Blocks of ordinary research code; __X__ makes every name unique. Each defines the names listed.
BLOCKS: list[tuple[str, str]] = [
    ("FeedForward__X__", '''

class FeedForward__X__(nn.Module):
    """Two-layer feed-forward block with a gated activation."""

    def __init__(self, dim: int, hidden: int, bias: bool = False):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=bias)
        self.w2 = nn.Linear(hidden, dim, bias=bias)
        self.w3 = nn.Linear(dim, hidden, bias=bias)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))
'''),
    ("collate__X__", '''

def collate__X__(batch, pad_id: int = 0, max_len: int | None = None):
    """Pad a list of token sequences to a rectangular batch."""
    longest = max(len(item["input_ids"]) for item in batch)
    if max_len is not None:
        longest = min(longest, max_len)
    input_ids = torch.full((len(batch), longest), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), longest), dtype=torch.bool)
    for row, item in enumerate(batch):
        ids = item["input_ids"][:longest]
        input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        mask[row, : len(ids)] = True
    return {"input_ids": input_ids, "attention_mask": mask}
'''),
    ("perplexity__X__", '''

def perplexity__X__(losses: list[float]) -> float:
    if not losses:
        return float("nan")
    mean = sum(losses) / len(losses)
    return math.exp(min(mean, 50.0))


def accuracy__X__(logits, targets, ignore_index: int = -100) -> float:
    predictions = logits.argmax(dim=-1)
    valid = targets != ignore_index
    correct = (predictions == targets) & valid
    return correct.sum().item() / max(1, valid.sum().item())
'''),
    ("save_json__X__", '''

def save_json__X__(obj, path: str | Path, indent: int = 2) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(obj, handle, indent=indent, sort_keys=True)
    os.replace(tmp, path)
    return path


def load_json__X__(path: str | Path, default=None):
    path = Path(path)
    if not path.exists():
        return default
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)
'''),
    ("cosine_schedule__X__", '''

def cosine_schedule__X__(step: int, total_steps: int, warmup: int, floor: float = 0.1) -> float:
    """Linear warmup, then cosine decay to `floor` of the peak."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total_steps - warmup))
    return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))
'''),
    ("evaluate__X__", '''

@torch.no_grad()
def evaluate__X__(model, loader, device: str = "cpu", max_batches: int | None = None) -> dict:
    model.eval()
    total_loss, total_tokens = 0.0, 0
    for index, batch in enumerate(loader):
        if max_batches is not None and index >= max_batches:
            break
        input_ids = batch["input_ids"].to(device)
        logits = model(input_ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), input_ids[:, 1:].reshape(-1), reduction="sum")
        total_loss += loss.item()
        total_tokens += input_ids[:, 1:].numel()
    model.train()
    return {"loss": total_loss / max(1, total_tokens), "tokens": total_tokens}
'''),
    ("Registry__X__", '''

class Registry__X__:
    """Name to constructor, so that configs can name components."""

    def __init__(self, name: str):
        self.name = name
        self._items: dict[str, Callable] = {}

    def register(self, key: str | None = None):
        def wrap(fn):
            self._items[key or fn.__name__] = fn
            return fn

        return wrap

    def build(self, key: str, *args, **kwargs):
        if key not in self._items:
            raise KeyError(f"{self.name}: unknown {key!r}; known: {sorted(self._items)}")
        return self._items[key](*args, **kwargs)

    def __contains__(self, key: str) -> bool:
        return key in self._items
'''),
    ("rotary_tables__X__", '''

def rotary_tables__X__(seq_len: int, dim: int, base: float = 10000.0, device=None):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, device=device).float() / dim))
    positions = torch.arange(seq_len, device=device).float()
    freqs = torch.outer(positions, inv_freq)
    return freqs.cos(), freqs.sin()


def apply_rotary__X__(x, cos, sin):
    x1, x2 = x[..., ::2], x[..., 1::2]
    rotated = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return rotated.flatten(-2)
'''),
    ("normalise_text__X__", '''

def normalise_text__X__(text: str, lower: bool = True, strip_accents: bool = True) -> str:
    text = unicodedata.normalize("NFKD", text) if strip_accents else text
    if strip_accents:
        text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = re.sub(r"\\s+", " ", text).strip()
    return text.lower() if lower else text
'''),
    ("AverageMeter__X__", '''

class AverageMeter__X__:
    def __init__(self, window: int = 100):
        self.window = window
        self.values: list[float] = []
        self.count = 0

    def update(self, value: float, n: int = 1) -> None:
        self.values.append(value)
        self.count += n
        if len(self.values) > self.window:
            self.values.pop(0)

    @property
    def average(self) -> float:
        return sum(self.values) / max(1, len(self.values))

    def __repr__(self) -> str:
        return f"AverageMeter__X__(avg={self.average:.4f}, count={self.count})"
'''),
    ("TokenDataset__X__", '''

class TokenDataset__X__(torch.utils.data.Dataset):
    def __init__(self, path: str, seq_len: int = 2048, stride: int | None = None):
        self.tokens = np.memmap(path, dtype=np.uint16, mode="r")
        self.seq_len = seq_len
        self.stride = stride or seq_len

    def __len__(self) -> int:
        return max(0, (len(self.tokens) - self.seq_len - 1) // self.stride)

    def __getitem__(self, index: int):
        start = index * self.stride
        chunk = torch.from_numpy(self.tokens[start : start + self.seq_len + 1].astype(np.int64))
        return {"input_ids": chunk}
'''),
]

# Only in the other modules: experiment configs with settings of their own.
CONFIG_BLOCK = ("EvalConfig__X__", '''

@dataclass
class EvalConfig__X__:
    batch_size: int = 8
    max_batches: int = 200
    seq_len: int = 2048
    num_shots: int = 5
    output_dir: str = "outputs/eval___X__"
    tasks: list[str] = field(default_factory=lambda: ["arc_easy", "hellaswag", "piqa"])
''')

PACKAGES = {
    "data": ["loader", "tokenize", "shards", "mixture"],
    "models": ["blocks", "embedding", "heads", "layers"],
    "ops": ["kernels", "rotary", "fused", "masks"],
    "train": ["loop", "optim", "checkpoint", "schedule"],
    "eval": ["harness", "tasks", "metrics", "retrieval"],
    "utils": ["io", "logging", "registry", "timing"],
    "tools": ["convert", "inspect", "export", "plot"],
}

# The big file's own code: what the paper describes (Sec. 2, Appendix), with its settings.
BIG_FILE_HEAD = '''"""Differential Transformer (Ye et al., ICLR 2025), reproduced from the paper.

Differential attention (Eq. (1)) takes the difference of two softmax attention maps, with the
re-parameterised scalar lambda of Eq. (2); each head is normalised with RMSNorm and scaled by
(1 - lambda_init) (Eq. (3)); a layer is multi-head differential attention followed by SwiGLU
(Sec. 2.2). Training follows the 3B setting of the Appendix.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import time
import unicodedata
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from difftx.train.optim import cosine_schedule
from difftx.utils.io import save_json

log = logging.getLogger(__name__)

# 3B model and training (Appendix, Table 5).
HIDDEN_SIZE = 3072
NUM_LAYERS = 28
HEAD_DIM = 128
FFN_SIZE = 8192
VOCAB_SIZE = 100288
SEQUENCE_LENGTH = 4096
LEARNING_RATE = 3.2e-4
WARMUP_STEPS = 1000
WEIGHT_DECAY = 0.06
BETA1 = 0.9
BETA2 = 0.999
DROPOUT = 0.1
RMS_NORM_EPS = 1e-5
LAMBDA_INIT = 0.8


@dataclass
class DiffTransformerConfig:
    hidden_size: int = HIDDEN_SIZE
    num_layers: int = NUM_LAYERS
    head_dim: int = HEAD_DIM
    ffn_size: int = FFN_SIZE
    vocab_size: int = VOCAB_SIZE
    max_seq_len: int = SEQUENCE_LENGTH
    dropout: float = DROPOUT
    rms_norm_eps: float = RMS_NORM_EPS
    tie_embeddings: bool = False

    @property
    def num_heads(self) -> int:
        # Differential attention splits each head in two, so half as many heads as a Transformer.
        return self.hidden_size // self.head_dim // 2


def lambda_init_fn(depth: int) -> float:
    """lambda_init = 0.8 - 0.6 * exp(-0.3 * (l - 1)) for layer l (Sec. 2.1)."""
    return LAMBDA_INIT - 0.6 * math.exp(-0.3 * depth)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = RMS_NORM_EPS, elementwise_affine: bool = True):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim)) if elementwise_affine else None

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float()).type_as(x)
        return output * self.weight if self.weight is not None else output


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


def precompute_rotary(seq_len: int, dim: int, base: float = 10000.0, device=None):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, device=device).float() / dim))
    positions = torch.arange(seq_len, device=device).float()
    freqs = torch.outer(positions, inv_freq)
    return freqs.cos(), freqs.sin()


def apply_rotary_emb(x, cos, sin):
    """Rotate pairs of channels by the position's angle (RoPE)."""
    x1, x2 = x[..., ::2], x[..., 1::2]
    rotated = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return rotated.flatten(-2)


class MultiheadDiffAttn(nn.Module):
    """Multi-head differential attention, Eq. (1)-(3)."""

    def __init__(self, config: DiffTransformerConfig, depth: int):
        super().__init__()
        self.embed_dim = config.hidden_size
        self.num_heads = config.num_heads
        self.head_dim = config.head_dim
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.k_proj = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.v_proj = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.out_proj = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.lambda_init = lambda_init_fn(depth)
        self.lambda_q1 = nn.Parameter(torch.zeros(self.head_dim).normal_(mean=0, std=0.1))
        self.lambda_k1 = nn.Parameter(torch.zeros(self.head_dim).normal_(mean=0, std=0.1))
        self.lambda_q2 = nn.Parameter(torch.zeros(self.head_dim).normal_(mean=0, std=0.1))
        self.lambda_k2 = nn.Parameter(torch.zeros(self.head_dim).normal_(mean=0, std=0.1))
        self.subln = RMSNorm(2 * self.head_dim, eps=config.rms_norm_eps)
        self.attn_dropout = nn.Dropout(config.dropout)

    def forward(self, x, cos, sin, attn_mask=None):
        bsz, tgt_len, _ = x.size()
        q = self.q_proj(x).view(bsz, tgt_len, 2 * self.num_heads, self.head_dim)
        k = self.k_proj(x).view(bsz, tgt_len, 2 * self.num_heads, self.head_dim)
        v = self.v_proj(x).view(bsz, tgt_len, self.num_heads, 2 * self.head_dim)
        q = apply_rotary_emb(q, cos, sin).transpose(1, 2) * self.scaling
        k = apply_rotary_emb(k, cos, sin).transpose(1, 2)
        v = v.transpose(1, 2)
        attn_weights = torch.matmul(q, k.transpose(-1, -2))
        if attn_mask is None:
            attn_mask = torch.triu(torch.full((tgt_len, tgt_len), float("-inf"), device=x.device), 1)
        attn_weights = torch.nan_to_num(attn_weights) + attn_mask
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).type_as(attn_weights)
        # Eq. (2): lambda = exp(lq1 . lk1) - exp(lq2 . lk2) + lambda_init
        lambda_1 = torch.exp(torch.sum(self.lambda_q1 * self.lambda_k1, dim=-1).float()).type_as(q)
        lambda_2 = torch.exp(torch.sum(self.lambda_q2 * self.lambda_k2, dim=-1).float()).type_as(q)
        lambda_full = lambda_1 - lambda_2 + self.lambda_init
        attn_weights = attn_weights.view(bsz, self.num_heads, 2, tgt_len, tgt_len)
        attn_weights = attn_weights[:, :, 0] - lambda_full * attn_weights[:, :, 1]
        attn_weights = self.attn_dropout(attn_weights)
        attn = torch.matmul(attn_weights, v)
        attn = self.subln(attn) * (1 - self.lambda_init)  # Eq. (3)
        attn = attn.transpose(1, 2).reshape(bsz, tgt_len, self.num_heads * 2 * self.head_dim)
        return self.out_proj(attn)


class DiffTransformerLayer(nn.Module):
    def __init__(self, config: DiffTransformerConfig, depth: int):
        super().__init__()
        self.attn_norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.attn = MultiheadDiffAttn(config, depth)
        self.ffn_norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.ffn = SwiGLU(config.hidden_size, config.ffn_size)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x, cos, sin):
        x = x + self.dropout(self.attn(self.attn_norm(x), cos, sin))
        return x + self.dropout(self.ffn(self.ffn_norm(x)))


class DiffTransformer(nn.Module):
    """A decoder-only language model of differential attention layers (Sec. 2.2)."""

    def __init__(self, config: DiffTransformerConfig):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([DiffTransformerLayer(config, depth) for depth in range(config.num_layers)])
        self.norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_embeddings:
            self.lm_head.weight = self.embed_tokens.weight
        cos, sin = precompute_rotary(config.max_seq_len, config.head_dim)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, input_ids):
        seq_len = input_ids.size(1)
        x = self.embed_tokens(input_ids)
        cos, sin = self.rope_cos[:seq_len], self.rope_sin[:seq_len]
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.norm(x))

    def num_parameters(self, exclude_embeddings: bool = True) -> int:
        total = sum(p.numel() for p in self.parameters())
        if exclude_embeddings:
            total -= self.embed_tokens.weight.numel()
        return total


def parameter_groups(model: nn.Module, weight_decay: float):
    """No weight decay on norms, biases and the lambda vectors."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim < 2 or "lambda_" in name or name.endswith(".bias"):
            no_decay.append(param)
        else:
            decay.append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def build_optimizer(model: nn.Module, total_steps: int):
    groups = parameter_groups(model, WEIGHT_DECAY)
    optimizer = torch.optim.AdamW(groups, lr=LEARNING_RATE, betas=(BETA1, BETA2))

    def schedule(step: int) -> float:
        # Linear warmup, then linear decay to 1.28e-5 (Appendix).
        if step < WARMUP_STEPS:
            return (step + 1) / WARMUP_STEPS
        progress = min(1.0, (step - WARMUP_STEPS) / max(1, total_steps - WARMUP_STEPS))
        return 1.0 - progress * (1.0 - 1.28e-5 / LEARNING_RATE)

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)


def parse_args(argv: list[str] | None = None):
    parser = argparse.ArgumentParser(description="Train a Differential Transformer.")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("runs/diff-3b"))
    parser.add_argument("--tokens-per-step", type=int, default=4_000_000)
    parser.add_argument("--total-tokens", type=float, default=1e12)
    parser.add_argument("--log-every", type=int, default=50)
    parser.add_argument("--save-every", type=int, default=2000)
    parser.add_argument("--compile", action="store_true")
    return parser.parse_args(argv)


def train(args) -> dict:
    config = DiffTransformerConfig()
    model = DiffTransformer(config)
    total_steps = int(args.total_tokens // args.tokens_per_step)
    optimizer, scheduler = build_optimizer(model, total_steps)
    meter = RunningLoss()
    started = time.time()
    for step, batch in enumerate(iterate_batches(args.data, config.max_seq_len)):
        if step >= total_steps:
            break
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        meter.update(loss.item())
        if step % args.log_every == 0:
            log.info("step %d loss %.4f lr %.2e %.1fs", step, meter.value, scheduler.get_last_lr()[0], time.time() - started)
        if step and step % args.save_every == 0:
            save_checkpoint(args.out, model, optimizer, step)
    return {"steps": step, "loss": meter.value}


class RunningLoss:
    def __init__(self, momentum: float = 0.98):
        self.momentum = momentum
        self.value = float("nan")

    def update(self, loss: float) -> None:
        self.value = loss if math.isnan(self.value) else self.momentum * self.value + (1 - self.momentum) * loss


def iterate_batches(path: Path, seq_len: int, micro_batch: int = 4) -> Iterator:
    tokens = np.memmap(path, dtype=np.uint32, mode="r")
    span = seq_len + 1
    for start in range(0, len(tokens) - micro_batch * span, micro_batch * span):
        chunk = tokens[start : start + micro_batch * span].astype(np.int64)
        yield torch.from_numpy(chunk).view(micro_batch, span)


def save_checkpoint(out: Path, model: nn.Module, optimizer, step: int) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"step_{step:08d}.pt"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, path)
    save_json({"step": step, "config": asdict(model.config)}, out / "latest.json")
    return path
'''

BIG_FILE_TAIL = '''

def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    summary = train(args)
    model = DiffTransformer(DiffTransformerConfig())
    log.info("done: %s, %d parameters", summary, model.num_parameters())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
'''


@dataclass
class Workspace:
    root: Path
    files: int
    lines: int
    big: Path
    big_text: str
    edit_line: int  # WEIGHT_DECAY = 0.06: the edited line; its last character toggles 6 <-> 5
    edit_column: int
    linked_line: int  # BETA2 = 0.999: a line with a paperlens diagnostic
    equation_line: int  # `# Eq. (2): lambda = ...`: an anchor, whose hover shows the paper's equation
    plain: lsp.Position  # `DiffTransformer` in main(): a plain line jedi can say something about


def _block(template: tuple[str, str], suffix: str) -> tuple[str, str]:
    name, text = template
    return name.replace("__X__", suffix), text.replace("__X__", suffix)


def build_workspace(root: Path, files: int, big_lines: int, paper: Path, seed: int = 7) -> Workspace:
    rng = random.Random(seed)
    (root / "pyproject.toml").write_text(f'[project]\nname = "difftx"\nversion = "0.1.0"\n\n[tool.paperlens]\npaper = "{paper}"\n')
    exported: list[tuple[str, str]] = []  # (module, name) of every module written so far
    total = 0
    names = [(package, stem) for package, stems in PACKAGES.items() for stem in stems]
    for package in PACKAGES:
        (root / "difftx" / package).mkdir(parents=True, exist_ok=True)
        (root / "difftx" / package / "__init__.py").write_text("")
    (root / "difftx" / "__init__.py").write_text('"""Differential Transformer reproduction."""\n')
    written = len(PACKAGES) + 1  # the __init__.py files count among the workspace's files
    # Two modules the big file imports from.
    for module, template in (("difftx.utils.io", BLOCKS[3]), ("difftx.train.optim", BLOCKS[4])):
        name, body = _block(template, "")
        text = MODULE_HEADER.replace("__DOC__", module) + body
        (root / Path(*module.split("."))).with_suffix(".py").write_text(text)
        total += text.count("\n")
        exported.append((module, name))
        written += 1
    index = 0
    while written < files - 1:
        package, stem = names[index % len(names)]
        module = f"difftx.{package}.{stem}_{index}"
        # Sizes vary from one block (~20 lines) to ~25 blocks (~450 lines), most of them small.
        count = max(1, min(25, int(rng.expovariate(1 / 5)) + 1))
        text = MODULE_HEADER.replace("__DOC__", f"{package}: {stem} helpers ({index}).")
        imports = rng.sample(exported, k=min(len(exported), rng.randint(0, 3)))
        text += "".join(f"from {m} import {n}\n" for m, n in imports)
        defined = []
        for j in range(count):
            template = CONFIG_BLOCK if rng.random() < 0.08 else rng.choice(BLOCKS)
            name, body = _block(template, f"_{index}_{j}")
            defined.append(name)
            text += body
        used = [n for _, n in imports]
        text += f"\n\n__all__ = {defined!r}\n"
        if used:
            text += f"\n\ndef _components_{index}():\n    return [{', '.join(used)}]\n"
        path = root / "difftx" / package / f"{stem}_{index}.py"
        path.write_text(text)
        total += text.count("\n")
        exported.append((module, defined[0]))
        written += 1
        index += 1
    big = root / BIG_FILE
    text = BIG_FILE_HEAD
    j = 0
    filler = [b for b in BLOCKS]
    while True:
        _, body = _block(filler[j % len(filler)], f"_big_{j}")
        if (text + body + BIG_FILE_TAIL).count("\n") > big_lines:
            break
        text += body
        j += 1
    text += "\n" * (big_lines - (text + BIG_FILE_TAIL).count("\n")) + BIG_FILE_TAIL
    big.write_text(text)
    total += text.count("\n")
    lines = text.split("\n")
    edit_line = lines.index("WEIGHT_DECAY = 0.06")
    linked_line = lines.index("BETA2 = 0.999")
    plain_line = next(i for i, line in enumerate(lines) if line.strip() == "model = DiffTransformer(DiffTransformerConfig())")
    plain = lsp.Position(line=plain_line, character=lines[plain_line].index("DiffTransformer(") + 4)
    equation_line = next(i for i, line in enumerate(lines) if line.strip().startswith("# Eq. (2): lambda"))
    count = sum(1 for _ in root.rglob("*.py"))
    return Workspace(root, count, total, big, text, edit_line, len("WEIGHT_DECAY = 0.0"), linked_line, equation_line, plain)


# --------------------------------------------------------------------------------------------
# A session with one server
# --------------------------------------------------------------------------------------------


def vm_kb(pid: int, key: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def capabilities() -> lsp.ClientCapabilities:
    """VS Code's (as pytest-lsp records them), else a minimal set."""
    try:
        from pytest_lsp import client_capabilities

        return client_capabilities("visual-studio-code")
    except (ImportError, ValueError, OSError):
        return lsp.ClientCapabilities(
            text_document=lsp.TextDocumentClientCapabilities(
                hover=lsp.HoverClientCapabilities(content_format=[lsp.MarkupKind.Markdown, lsp.MarkupKind.PlainText]),
                publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(version_support=True, related_information=True),
            )
        )


class Session:
    """One server process and a pygls LanguageClient talking to it over stdio."""

    def __init__(self, label: str, command: list[str], env: dict[str, str], cwd: Path):
        self.label, self.command, self.env, self.cwd = label, command, env, cwd
        self.client = LanguageClient("paperlens-bench", "0.1.0")
        self.published: list[tuple[float, lsp.PublishDiagnosticsParams]] = []
        self.messages: list[str] = []
        self.stderr = bytearray()
        self._waiters: list[tuple[object, asyncio.Future]] = []
        self._drain: asyncio.Task | None = None
        client = self.client
        client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(lambda params: self._on_diagnostics(params))
        client.feature(lsp.CLIENT_REGISTER_CAPABILITY)(lambda params: None)
        client.feature(lsp.CLIENT_UNREGISTER_CAPABILITY)(lambda params: None)
        client.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CREATE)(lambda params: None)
        client.feature(lsp.PROGRESS)(lambda params: None)
        client.feature(lsp.WINDOW_SHOW_MESSAGE)(lambda params: self.messages.append(params.message))
        client.feature(lsp.WINDOW_LOG_MESSAGE)(lambda params: None)
        client.feature(lsp.WORKSPACE_CONFIGURATION)(lambda params: [None for _ in params.items])
        client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)(lambda params: None)

    def _on_diagnostics(self, params: lsp.PublishDiagnosticsParams) -> None:
        now = time.perf_counter()
        self.published.append((now, params))
        for waiter in list(self._waiters):
            predicate, future = waiter
            if not future.done() and predicate(params):
                future.set_result((now, params))
                self._waiters.remove(waiter)

    def expect(self, predicate) -> asyncio.Future:
        """A future for the next publishDiagnostics that satisfies `predicate` (set up before sending)."""
        future = asyncio.get_running_loop().create_future()
        self._waiters.append((predicate, future))
        return future

    @property
    def pid(self) -> int:
        return self.client._server.pid  # the process the client started (pygls keeps it there)

    async def start(self) -> None:
        await self.client.start_io(*self.command, env=self.env, cwd=str(self.cwd))
        # pygls pipes the server's stderr and never reads it: read it, or a chatty server blocks.
        self._drain = asyncio.create_task(self._read_stderr(self.client._server.stderr))

    async def _read_stderr(self, stream) -> None:
        while chunk := await stream.read(65536):
            self.stderr += chunk
            del self.stderr[: max(0, len(self.stderr) - 200_000)]

    async def initialize(self, root: Path, options: dict | None) -> lsp.InitializeResult:
        result = await self.client.initialize_async(
            lsp.InitializeParams(
                process_id=os.getpid(),
                capabilities=capabilities(),
                root_uri=root.as_uri(),
                workspace_folders=[lsp.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
                initialization_options=options,
            )
        )
        self.client.initialized(lsp.InitializedParams())
        return result

    def open(self, path: Path, text: str) -> None:
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(uri=path.as_uri(), language_id="python", version=1, text=text))
        )

    async def hover(self, uri: str, position: lsp.Position) -> tuple[float, lsp.Hover | None]:
        started = time.perf_counter()
        result = await self.client.text_document_hover_async(
            lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=position)
        )
        return (time.perf_counter() - started) * 1e3, result

    def alive(self) -> bool:
        server = self.client._server
        return server is not None and server.returncode is None

    async def stop(self) -> None:
        server = self.client._server
        try:
            if self.alive():
                async with asyncio.timeout(15):
                    await self.client.shutdown_async(None)
                    self.client.exit(None)
                    await server.wait()
        except (TimeoutError, RuntimeError, OSError):
            if server is not None and server.returncode is None:
                server.kill()
                await server.wait()
        await self.client.stop()
        if self._drain is not None:
            self._drain.cancel()

    def stderr_tail(self, lines: int = 15) -> str:
        return "\n".join(self.stderr.decode(errors="replace").splitlines()[-lines:])


# --------------------------------------------------------------------------------------------
# One run: our server and jedi's on the same workspace
# --------------------------------------------------------------------------------------------


@dataclass
class RunResult:
    startup_ms: float = float("nan")
    initialize_ms: float = float("nan")
    example: dict[str, dict[str, float]] = field(default_factory=dict)  # 5.: server -> step -> ms from its process's start
    diagnostics: list[lsp.Diagnostic] = field(default_factory=list)
    edits_ms: list[float] = field(default_factory=list)
    hovers: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (server, site) -> ms
    first_hover: dict[tuple[str, str], float] = field(default_factory=dict)
    answered: dict[tuple[str, str], bool] = field(default_factory=dict)
    hover_text: dict[tuple[str, str], str] = field(default_factory=dict)
    memory_kb: dict[str, dict[str, int | None]] = field(default_factory=dict)  # server -> stage -> VmHWM
    rss_kb: dict[str, int | None] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


def _has_weight_decay(diagnostics, line: int) -> bool:
    return any(d.range.start.line == line and "weight_decay" in d.message.lower() for d in diagnostics)


async def run_once(ws: Workspace, args, cache_dir: Path, with_jedi: bool, command: list[str] = OURS, after_start=None) -> RunResult:
    result = RunResult()
    env = dict(os.environ, PAPERLENS_CACHE_DIR=str(cache_dir), PYTHONUNBUFFERED="1")
    uri = ws.big.as_uri()
    ours = Session("paperlens", command, env, ws.root)
    jedi = Session("jedi", JEDI, dict(os.environ), ws.root) if with_jedi else None
    sessions = [s for s in (ours, jedi) if s is not None]
    try:
        # 4. initialize -> the big file's first diagnostics (the editor has it open from the start).
        await ours.start()
        first = ours.expect(lambda p: p.uri == uri)
        started = time.perf_counter()
        try:
            await ours.initialize(ws.root, {"paperlens": {"debounceMs": 0}})
        except RuntimeError as err:  # the process died before answering
            result.failures.append(f"paperlens did not answer initialize: {err}")
            return result
        result.initialize_ms = (time.perf_counter() - started) * 1e3
        ours.open(ws.big, ws.big_text)
        try:
            async with asyncio.timeout(args.timeout):
                arrived, params = await first
        except TimeoutError:
            result.failures.append(f"no diagnostics for {BIG_FILE} within {args.timeout:.0f} s of initialize")
            return result
        result.startup_ms = (arrived - started) * 1e3
        result.diagnostics = list(params.diagnostics)
        if not result.diagnostics:
            result.failures.append(f"the first diagnostics of {BIG_FILE} are empty (expected divergences)")
        if not any(d.range.start.line == ws.linked_line for d in result.diagnostics):
            result.failures.append(f"no diagnostic on the linked site (line {ws.linked_line + 1}: BETA2 = 0.999)")
        result.memory_kb["paperlens"] = {"indexed": vm_kb(ours.pid, "VmHWM")}
        if after_start is not None:
            await after_start(ours)

        if jedi is not None:
            await jedi.start()
            try:
                await jedi.initialize(ws.root, None)
            except RuntimeError as err:
                result.failures.append(f"jedi-language-server did not answer initialize: {err}")
                return result
            jedi.open(ws.big, ws.big_text)
            result.memory_kb["jedi"] = {}

        # 2./3. hovers, ours and jedi's interleaved on the same positions.
        lines = ws.big_text.split("\n")
        linked = lsp.Position(line=ws.linked_line, character=lines[ws.linked_line].index("BETA2") + 2)
        equation = lsp.Position(line=ws.equation_line, character=lines[ws.equation_line].index("Eq. (2)") + 3)
        sites = {"linked": linked, "equation": equation, "plain": ws.plain}
        for index in range(HOVER_WARMUP + args.hovers):
            for site, position in sites.items():
                for session in sessions:
                    key = (session.label, site)
                    try:
                        async with asyncio.timeout(args.timeout):
                            ms, hover = await session.hover(uri, position)
                    except (TimeoutError, RuntimeError) as err:
                        result.failures.append(f"{session.label}: hover on the {site} line failed: {err or 'timed out'}")
                        return result
                    if index == 0:
                        result.first_hover[key] = ms
                        value = hover.contents.value if hover is not None and hasattr(hover.contents, "value") else str(hover.contents) if hover else ""
                        result.answered[key] = bool(value.strip())
                        result.hover_text[key] = value
                    elif index >= HOVER_WARMUP:
                        result.hovers.setdefault(key, []).append(ms)
        if not result.answered.get(("paperlens", "linked")):
            result.failures.append(f"our hover on the linked site (line {ws.linked_line + 1}) returned nothing")
        elif "0.95" not in result.hover_text[("paperlens", "linked")]:
            result.failures.append("our hover on the linked site does not quote the paper's beta2 (0.95)")
        for session in sessions:
            result.memory_kb[session.label]["hovered"] = vm_kb(session.pid, "VmHWM")

        # 1. edit -> diagnostics of that version, one character at a time: 0.06 -> 0.05 -> 0.06 ...
        version = 1
        for index in range(args.edits):
            version += 1
            digit = "5" if index % 2 == 0 else "6"
            future = ours.expect(lambda p, v=version: p.uri == uri and p.version == v)
            change = lsp.TextDocumentContentChangePartial(
                range=lsp.Range(
                    start=lsp.Position(line=ws.edit_line, character=ws.edit_column),
                    end=lsp.Position(line=ws.edit_line, character=ws.edit_column + 1),
                ),
                text=digit,
            )
            started = time.perf_counter()
            ours.client.text_document_did_change(
                lsp.DidChangeTextDocumentParams(
                    text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=[change]
                )
            )
            try:
                async with asyncio.timeout(args.timeout):
                    arrived, params = await future
            except TimeoutError:
                result.failures.append(f"no diagnostics for version {version} within {args.timeout:.0f} s of the edit")
                return result
            result.edits_ms.append((arrived - started) * 1e3)
            diverges = digit == "6"
            if _has_weight_decay(params.diagnostics, ws.edit_line) != diverges:
                result.failures.append(
                    f"version {version} (WEIGHT_DECAY = 0.0{digit}): the weight-decay divergence is "
                    f"{'missing' if diverges else 'still there'}"
                )
        # 4. peak memory, just before shutdown.
        for session in sessions:
            result.memory_kb[session.label]["final"] = vm_kb(session.pid, "VmHWM")
            result.rss_kb[session.label] = vm_kb(session.pid, "VmRSS")
        return result
    finally:
        for session in sessions:
            if session.client._server is not None and not session.alive() and not result.failures:
                result.failures.append(f"{session.label} exited early")
            await session.stop()
        if result.failures:
            await asyncio.sleep(0.2)  # the rest of stderr
            for session in sessions:
                if session.stderr:
                    result.failures.append(f"{session.label} stderr (last lines):\n{session.stderr_tail()}")


async def start_on_example(example: Path, args, cache_dir: Path, with_jedi: bool, result: RunResult) -> None:
    """5. Each server on the bundled example, one at a time: from its process's start to initialize
    answered and to the first diagnostics of train.py (jedi's: also its documentSymbol answer)."""
    workspace = example / "workspace"
    path = workspace / EXAMPLE_FILE
    text, uri = path.read_text(), path.as_uri()
    servers = [("paperlens", OURS, dict(os.environ, PAPERLENS_CACHE_DIR=str(cache_dir), PYTHONUNBUFFERED="1"), {"paperlens": {"debounceMs": 0}})]
    if with_jedi:
        servers.append(("jedi", JEDI, dict(os.environ), None))
    for label, command, env, options in servers:
        session = Session(label, command, env, workspace)
        times = result.example.setdefault(label, {})
        first = session.expect(lambda p: p.uri == uri)
        try:
            started = time.perf_counter()
            await session.start()
            try:
                await session.initialize(workspace, options)
            except RuntimeError as err:
                result.failures.append(f"{label} did not answer initialize on the example: {err}")
                return
            times["initialize"] = (time.perf_counter() - started) * 1e3
            session.open(path, text)
            async with asyncio.timeout(args.timeout):
                if label == "jedi":
                    await session.client.text_document_document_symbol_async(
                        lsp.DocumentSymbolParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
                    )
                    times["symbols"] = (time.perf_counter() - started) * 1e3
                arrived, params = await first
            times["diagnostics"] = (arrived - started) * 1e3
            if label == "paperlens" and not params.diagnostics:
                result.failures.append(f"the first diagnostics of the example's {EXAMPLE_FILE} are empty (expected divergences)")
        except TimeoutError:
            result.failures.append(f"{label}: no diagnostics for the example's {EXAMPLE_FILE} within {args.timeout:.0f} s of its start")
        finally:
            if session.client._server is not None and not session.alive() and not result.failures:
                result.failures.append(f"{label} exited early on the example")
            await session.stop()
            if result.failures and session.stderr:
                result.failures.append(f"{label} stderr (last lines):\n{session.stderr_tail()}")
        if result.failures:
            return


# --------------------------------------------------------------------------------------------
# Profile: our server under cProfile in every thread
# --------------------------------------------------------------------------------------------

# Runs the server as `python -m paperlens.server` does, with a profiler in the main thread and in
# every thread started after it (the analysis runs in asyncio.to_thread workers). SIGUSR1 writes what
# was profiled so far to argv[1] + ".start" and starts afresh; at exit the rest goes to argv[1].
PROFILED_SERVER = r"""
import atexit, cProfile, gc, json, pstats, signal, sys, threading, time
out = sys.argv[1]
profiles = []

def _start_in_thread(frame, event, arg):
    sys.setprofile(None)
    profile = cProfile.Profile()
    profiles.append(profile)
    profile.enable()

class _Snapshot:  # pstats takes it for a profile; snapshot_stats() leaves the profiler running
    def __init__(self, profile):
        self.profile = profile
    def create_stats(self):
        self.profile.snapshot_stats()
        self.stats = self.profile.stats

def _write(path):
    stats = None
    for profile in list(profiles):
        try:
            snapshot = _Snapshot(profile)
            stats = pstats.Stats(snapshot) if stats is None else stats.add(snapshot)
        except TypeError:  # a thread that has run nothing
            pass
    if stats is not None:
        stats.dump_stats(path)

def _phase(signum, frame):
    _write(out + ".start")
    for profile in list(profiles):
        profile.clear()

# cProfile does not see the garbage collector: its time lands on whatever allocated (often
# builtins.compile, i.e. ast.parse). Count it apart, per generation.
collections = {"count": [0, 0, 0], "seconds": [0.0, 0.0, 0.0]}
_gc_started = [0.0]

def _gc_timer(phase, info):
    if phase == "start":
        _gc_started[0] = time.perf_counter()
    else:
        collections["count"][info["generation"]] += 1
        collections["seconds"][info["generation"]] += time.perf_counter() - _gc_started[0]

def _write_gc(path):
    with open(path, "w") as handle:
        json.dump(collections, handle)
    collections["count"], collections["seconds"] = [0, 0, 0], [0.0, 0.0, 0.0]

gc.callbacks.append(_gc_timer)
_phase_profiles = _phase

def _phase(signum, frame):
    _phase_profiles(signum, frame)
    _write_gc(out + ".start.gc.json")

signal.signal(signal.SIGUSR1, _phase)
atexit.register(lambda: (_write(out), _write_gc(out + ".gc.json")))
# The server leaves through os._exit on `exit` (no atexit): write the stats first.
import os
_exit = os._exit
def _exit_writing(code):
    try:
        _write(out)
        _write_gc(out + ".gc.json")
    finally:
        _exit(code)
os._exit = _exit_writing
threading.setprofile(_start_in_thread)
main_profile = cProfile.Profile()
profiles.append(main_profile)
main_profile.enable()
import runpy
runpy.run_module("paperlens.server", run_name="__main__", alter_sys=True)
"""

# Time spent waiting, not working: left out of the self-time ranking.
IDLE = re.compile(r"acquire|select|poll|epoll|\bwait\b|sleep|readline|'read'|_worker|run_forever|_run_once|\bget\b|_bootstrap")
KEY_FUNCTIONS = [
    ("analysis of the edited file (thread)", "server/app.py", "analyse"),
    ("  index_source (parse + read the values)", "pipeline/code/__init__.py", "index_source"),
    ("    ast.parse", "ast.py", "parse"),
    ("  check_file (compare with the paper)", "pipeline/check/__init__.py", "check_file"),
    ("findings -> LSP diagnostics", "server/convert.py", "to_diagnostic"),
    ("publish diagnostics (serialise + write)", "pygls/lsp/_base_server.py", "text_document_publish_diagnostics"),
    ("incremental edit applied (pygls)", "pygls/workspace/text_document.py", "apply_change"),
    ("hover handler", "server/app.py", "hover"),
    ("hover text", "server/convert.py", "hover_markdown"),
    ("read the paper + assess it", "server/app.py", "load_paper"),
    ("index the workspace", "server/app.py", "load_workspace"),
    ("  index_workspace", "pipeline/code/__init__.py", "index_workspace"),
]


def _short(key) -> str:
    file, line, name = key
    file = file.replace(os.sep, "/")
    for marker in ("site-packages/", str(REPO) + "/", "/paperlens/"):
        if marker in file:
            file = file.split(marker, 1)[1]
            break
    return f"{file}:{line}({name})" if file != "~" else name


def _key_table(entries, per: int, unit: str) -> None:
    print(f"  {'where':44s} {'calls':>7s} {'cumulative':>11s} {'per ' + unit:>10s}")
    for label, file_part, name in KEY_FUNCTIONS:
        found = [(k, v) for k, v in entries.items() if k[2] == name and k[0].replace(os.sep, "/").endswith(file_part)]
        if not found:
            continue
        calls = sum(v[1] for _, v in found)
        cumulative = sum(v[3] for _, v in found)
        print(f"  {label:44s} {calls:7d} {cumulative * 1e3:9.1f}ms {cumulative * 1e3 / max(1, per):8.2f}ms")


def _tree(entries, root_name: str, root_file: str, per: int, unit: str) -> None:
    """What `root_name` calls, inclusive, per `unit`, callees above 3% of it, four levels down (pstats
    knows callers, not call paths: a function also called from elsewhere is scaled to its share)."""
    callees: dict[tuple, list[tuple[tuple, float]]] = {}
    for key, value in entries.items():
        for caller, caller_value in value[4].items():
            callees.setdefault(caller, []).append((key, caller_value[3]))

    def walk(key, share: float, depth: int, floor: float, seen: set) -> None:
        for child, spent in sorted(callees.get(key, []), key=lambda kv: -kv[1]):
            spent *= share
            if spent < floor or child in seen:
                continue
            print(f"    {'  ' * depth}{spent * 1e3 / max(1, per):8.2f}ms  {_short(child)}")
            if depth < 4:
                walk(child, min(1.0, spent / max(entries[child][3], 1e-12)), depth + 1, floor, seen | {child})

    for key in [k for k in entries if k[2] == root_name and k[0].replace(os.sep, "/").endswith(root_file)]:
        total = entries[key][3]
        print(f"\n  {root_name}(): {total * 1e3 / max(1, per):.2f} ms per {unit} under the profiler; its callees, inclusive:")
        walk(key, 1.0, 0, total * 0.03, {key})


def _self_ranking(entries, per: int, unit: str, count: int = 15) -> None:
    print(f"\n  most self time (waiting left out), per {unit}:")
    ranked = sorted(((k, v) for k, v in entries.items() if not IDLE.search(k[2])), key=lambda kv: -kv[1][2])
    for key, value in ranked[:count]:
        print(f"    {value[2] * 1e3 / max(1, per):8.2f}ms self {value[3] * 1e3 / max(1, per):8.2f}ms cum {value[1] / max(1, per):9.1f} calls  {_short(key)}")


def _collections(path: Path, per: int, unit: str) -> None:
    if not path.exists():
        return
    counted = json.loads(path.read_text())
    parts = [f"gen {g}: {n / max(1, per):.2f} x, {t * 1e3 / max(1, per):.1f} ms" for g, (n, t) in enumerate(zip(counted["count"], counted["seconds"], strict=True))]
    print(f"  garbage collection per {unit} (not in the cProfile figures' own right: it is counted inside whatever allocated, often builtins.compile): {'; '.join(parts)}")


def summarise_profile(path: Path, edits: int, hovers: int) -> None:
    print("\nprofile: cProfile in every thread of the server (its overhead inflates absolute times; read shares)")
    start = Path(str(path) + ".start")
    if start.exists():
        entries = pstats.Stats(str(start)).stats
        print(f"start (initialize -> first diagnostics): {start}")
        _key_table(entries, 1, "start")
        _collections(Path(str(start) + ".gc.json"), 1, "start")
        _tree(entries, "load_workspace", "server/app.py", 1, "start")
    entries = pstats.Stats(str(path)).stats
    print(f"\nafter the start: {HOVER_WARMUP + hovers} hovers x 3 sites, then {edits} edits: {path}")
    _key_table(entries, edits, "edit")
    _collections(Path(str(path) + ".gc.json"), edits, "edit")
    _tree(entries, "analyse", "server/app.py", edits, "edit")
    _self_ranking(entries, edits, "edit")


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]  # nearest rank


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = []
    for package in ("pygls", "jedi-language-server", "jedi"):
        try:
            parts.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            pass
    spec = find_spec("paperlens.server")  # where the server's process will import it from (same sys.path)
    where = Path(spec.origin).resolve().parents[1] if spec and spec.origin else None
    if where == REPO:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], check=False, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "server", "pipeline", "schemas"], check=False, capture_output=True, text=True).stdout.strip()
        server = f"paperlens {commit or '?'}{' + uncommitted changes' if dirty else ''}"
    else:
        server = f"paperlens from {where}"
    return " · ".join([server, *parts])


def verdict(value: float, target: float) -> str:
    return "n/a" if math.isnan(value) else ("pass" if value < target else "FAIL")


def report(ws: Workspace, runs: list[RunResult], args, with_jedi: bool) -> None:
    edits = [ms for r in runs for ms in r.edits_ms]
    hovers = {}
    for r in runs:
        for key, values in r.hovers.items():
            hovers.setdefault(key, []).extend(values)
    debounced = bool(edits) and min(edits) >= DEFAULT_DEBOUNCE_MS
    def mb(kb: int | None) -> float:
        return kb / 1024 if kb else float("nan")

    ours_peak = max((mb(r.memory_kb.get("paperlens", {}).get("final")) for r in runs), default=float("nan"))
    jedi_peak = max((mb(r.memory_kb.get("jedi", {}).get("final")) for r in runs), default=float("nan")) if with_jedi else float("nan")

    print(f"\n{'':38s} {'paperlens':>10s} {'jedi-ls':>10s} {'ours/jedi':>10s} {'target':>10s} {'':>5s}")

    def row(label, ours, jedi=float("nan"), target=None, unit="ms"):
        ratio = ours / jedi if not math.isnan(jedi) and jedi else float("nan")

        def fmt(v: float) -> str:
            return f"{'—':>10s}" if math.isnan(v) else f"{v:10.1f}"

        ratio_text = f"{'—':>10s}" if math.isnan(ratio) else f"{ratio:10.2f}"
        target_text = f"{'< ' + format(target, 'g') + ' ' + unit:>10s}" if target else f"{'':10s}"
        status = verdict(ours, target) if target else ""
        print(f"{label:38s} {fmt(ours)} {fmt(jedi)} {ratio_text} {target_text} {status:>5s}")

    n = len(edits)
    print(f"edit -> diagnostics ({n} edits)")
    row("  p50 (ms)", percentile(edits, 50))
    row("  p95 (ms)", percentile(edits, 95), target=TARGET_EDIT_P95_MS)
    row("  max (ms)", max(edits) if edits else float("nan"))
    for site, description in (
        ("linked", f"line {ws.linked_line + 1}, has a diagnostic"),
        ("equation", f"line {ws.equation_line + 1}, an `Eq. (2)` anchor: the paper's equation"),
        ("plain", f"line {ws.plain.line + 1}, no diagnostic"),
    ):
        ours_values, jedi_values = hovers.get(("paperlens", site), []), hovers.get(("jedi", site), [])
        print(f"hover, {site} site ({description}; {len(ours_values)} each)")
        row("  p50 (ms)", percentile(ours_values, 50), percentile(jedi_values, 50))
        row("  p95 (ms)", percentile(ours_values, 95), percentile(jedi_values, 95), target=TARGET_HOVER_P95_MS)
        firsts = [r.first_hover.get(("paperlens", site), float("nan")) for r in runs]
        jfirsts = [r.first_hover.get(("jedi", site), float("nan")) for r in runs]
        row("  first hover of a session (ms)", statistics.median(firsts), statistics.median(jfirsts) if with_jedi else float("nan"))
        answered = [r.answered.get(("paperlens", site)) for r in runs]
        janswered = [r.answered.get(("jedi", site)) for r in runs]
        print(f"  {'answered':36s} {'yes' if all(answered) else 'no' if not any(answered) else 'some':>10s} "
              f"{('yes' if all(janswered) else 'no' if not any(janswered) else 'some') if with_jedi else '—':>10s}")
    print("peak memory, VmHWM before shutdown (MB)")
    row("  peak", ours_peak, jedi_peak, target=TARGET_MEMORY_MB, unit="MB")
    for stage in ("indexed", "hovered"):
        row(f"  after {'indexing' if stage == 'indexed' else 'the hovers'}", max((mb(r.memory_kb.get("paperlens", {}).get(stage)) for r in runs), default=float("nan")),
            max((mb(r.memory_kb.get("jedi", {}).get(stage)) for r in runs), default=float("nan")) if with_jedi and stage == "hovered" else float("nan"))
    print("initialize -> first diagnostics of the big file (ms)")
    row("  run 1: empty cache, paper read", runs[0].startup_ms)
    later = "run 2" if len(runs) == 2 else f"runs 2-{len(runs)} (median)"
    if len(runs) > 1:
        row(f"  {later}: paper cached", statistics.median(r.startup_ms for r in runs[1:]))
    row("  of which process start + initialize", statistics.median(r.initialize_ms for r in runs))

    def example_ms(server: str, step: str, chosen: list[RunResult]) -> float:
        values = [r.example.get(server, {}).get(step, float("nan")) for r in chosen]
        return statistics.median(values) if values else float("nan")

    print(f"start on the bundled example ({EXAMPLE_FILE} open from the start), from the process's start (ms)")
    row("  initialize answered", example_ms("paperlens", "initialize", runs), example_ms("jedi", "initialize", runs))
    row("  run 1: first diagnostics, empty cache", example_ms("paperlens", "diagnostics", runs[:1]), example_ms("jedi", "diagnostics", runs[:1]), target=TARGET_EXAMPLE_START_MS)
    if len(runs) > 1:
        row(f"  {later}: first diagnostics", example_ms("paperlens", "diagnostics", runs[1:]), example_ms("jedi", "diagnostics", runs[1:]), target=TARGET_EXAMPLE_START_MS)
    if with_jedi:
        row("  jedi: first answer (documentSymbol)", float("nan"), example_ms("jedi", "symbols", runs))

    if with_jedi:
        print("\njedi-language-server publishes an opened file's diagnostics after a fixed 1 s debounce (jedi_utils.debounce(1)); its first answer about the file is the documentSymbol row")
    print(f"\ndebounce in effect: {'the default 300 ms (debounceMs: 0 not honoured yet): every edit waited >= 300 ms' if debounced else 'none (debounceMs: 0 honoured): edits answered below 300 ms'}; nothing subtracted")
    diagnostics = runs[0].diagnostics
    kinds = {}
    for d in diagnostics:
        kinds[d.severity.name.lower() if d.severity else "none"] = kinds.get(d.severity.name.lower() if d.severity else "none", 0) + 1
    print(f"diagnostics on {BIG_FILE} at start: {len(diagnostics)} ({', '.join(f'{v} {k}' for k, v in sorted(kinds.items()))})")
    for d in sorted(diagnostics, key=lambda d: d.range.start.line)[:12]:
        print(f"  {d.range.start.line + 1:5d}: {d.message.splitlines()[0][:110]}")
    if with_jedi:
        text = runs[0].hover_text.get(("jedi", "linked"), "").strip().replace("\n", " ")
        print(f"jedi's hover on the linked site: {text[:100] or '(empty)'}")
        text = runs[0].hover_text.get(("jedi", "plain"), "").strip().replace("\n", " ")
        print(f"jedi's hover on the plain site: {text[:100] or '(empty)'}")
    for site in ("linked", "equation"):
        text = runs[0].hover_text.get(("paperlens", site), "")
        image = "with an image of the equation, " if "data:image/" in text else ""
        flat = re.sub(r"\(data:image/[^)]*\)", "(data:image/...)", text).strip().replace("\n", " ")
        print(f"our hover on the {site} site ({image}{len(text):,} characters): {flat[:150] or '(empty)'}")


async def amain(args) -> int:
    with_jedi = not args.no_jedi
    if with_jedi and find_spec("jedi_language_server") is None:
        print(f"jedi-language-server is not installed: .venv/bin/pip install '{JEDI_REQUIREMENT}' (or pass --no-jedi)", file=sys.stderr)
        return 2
    if not args.paper.exists():
        print(f"the paper is not there: {args.paper} (set PAPERLENS_SHARED_DATA or --paper)", file=sys.stderr)
        return 1
    scratch = Path(tempfile.mkdtemp(prefix="paperlens-bench-server-"))
    try:
        root = scratch / "workspace"
        root.mkdir()
        ws = build_workspace(root, args.files, args.big_lines, args.paper.resolve())
        cache = scratch / "cache"
        cache.mkdir()
        print(f"machine: {machine()}")
        print(versions())
        load_before = os.getloadavg()[0]
        print(
            f"workspace: {ws.files} Python files, {ws.lines:,} lines; {BIG_FILE}: {ws.big_text.count(chr(10)):,} lines; "
            f"paper: {args.paper.name}; {args.runs} run(s) of {args.edits} edits and {args.hovers} hovers per site "
            f"(+{HOVER_WARMUP} warm-up, not counted), each run a fresh server pair"
        )
        example = scratch / "example"  # one copy for every run: the paper cache is keyed by its path
        for part in ("workspace", "paper"):
            shutil.copytree(EXAMPLE / part, example / part)
        runs = []
        for number in range(args.runs):
            started = time.perf_counter()
            result = await run_once(ws, args, cache, with_jedi)
            if not result.failures:
                await start_on_example(example, args, cache, with_jedi, result)
            print(f"  run {number + 1}: {time.perf_counter() - started:5.1f} s" + ("" if not result.failures else "  FAILED"))
            runs.append(result)
            if result.failures:
                print("\n".join("    " + line for f in result.failures for line in f.splitlines()), file=sys.stderr)
                break
        failed = any(r.failures for r in runs)
        if not failed or runs[0].edits_ms:
            report(ws, runs, args, with_jedi)
            print(
                f"load average (1 min) before / after: {load_before:.2f} / {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores "
                "(after: with this benchmark's own; other work on the machine skews the figures)"
            )
        if args.profile and not failed:
            stats = Path(args.profile_out or scratch / "server.prof").resolve()
            command = [sys.executable, "-c", PROFILED_SERVER, str(stats)]

            async def next_phase(session: Session) -> None:
                os.kill(session.pid, signal.SIGUSR1)
                for _ in range(100):
                    if Path(str(stats) + ".start.gc.json").exists():  # written last
                        break
                    await asyncio.sleep(0.05)
                await asyncio.sleep(0.2)

            started = time.perf_counter()
            result = await run_once(ws, args, cache, False, command=command, after_start=next_phase)
            for _ in range(50):  # the stats are written at exit
                if Path(str(stats) + ".gc.json").exists():
                    break
                await asyncio.sleep(0.1)
            print(f"\nprofiled session: {time.perf_counter() - started:.1f} s, edits p50 {percentile(result.edits_ms, 50):.1f} ms under the profiler")
            if stats.exists():
                if not args.profile_out:
                    kept = Path(tempfile.gettempdir()) / "paperlens-server.prof"
                    shutil.copy(stats, kept)
                    for suffix in (".start", ".start.gc.json", ".gc.json"):
                        if Path(str(stats) + suffix).exists():
                            shutil.copy(str(stats) + suffix, str(kept) + suffix)
                    stats = kept
                summarise_profile(stats, len(result.edits_ms), args.hovers)
            else:
                print("the profiled server wrote no stats", file=sys.stderr)
                failed = True
        return 1 if failed else 0
    finally:
        if args.keep:
            print(f"workspace kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="server sessions (each a fresh pair of processes)")
    parser.add_argument("--edits", type=int, default=50, help="edits per run")
    parser.add_argument("--hovers", type=int, default=100, help="hovers per run, per server and site")
    parser.add_argument("--files", type=int, default=500, help="Python files in the workspace")
    parser.add_argument("--big-lines", type=int, default=2000, help="lines of the file that implements the paper")
    parser.add_argument("--paper", type=Path, default=PAPER)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for any one answer")
    parser.add_argument("--no-jedi", action="store_true", help="leave out the jedi-language-server baseline")
    parser.add_argument("--profile", action="store_true", help="then one more session under cProfile, and where the time went")
    parser.add_argument("--profile-out", type=Path, help="where to keep the stats (default: $TMPDIR/paperlens-server.prof)")
    parser.add_argument("--keep", action="store_true", help="keep the generated workspace")
    args = parser.parse_args()
    if args.runs < 1 or args.edits < 1 or args.hovers < 1:
        parser.error("--runs, --edits and --hovers must be at least 1")
    return asyncio.run(amain(args))


if __name__ == "__main__":
    sys.exit(main())

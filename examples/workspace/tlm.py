"""Tempered Label Mixing: the method of Section 2."""

import torch
import torch.nn.functional as F
from torch import nn

LABEL_TEMPERATURE = 0.5


def tempered_weight(m: torch.Tensor, tau: float = 1.0) -> torch.Tensor:
    """The tempered label weight of Eq. (3)."""
    num = m ** (1.0 / tau)
    return num / (num + (1 - m) ** (1.0 / tau))


def mix_batch(x, y, alpha: float = 0.2, tau: float = LABEL_TEMPERATURE):
    """Mix images linearly and labels with the tempered weight (Eqs. (1)-(2))."""
    m = torch.distributions.Beta(alpha, alpha).sample((x.shape[0],)).to(x.device)
    perm = torch.randperm(x.shape[0], device=x.device)
    w = tempered_weight(m, tau=tau)
    shape = (-1,) + (1,) * (x.dim() - 1)
    x_mix = m.view(shape) * x + (1 - m.view(shape)) * x[perm]
    y_mix = w.view(-1, 1) * y + (1 - w.view(-1, 1)) * y[perm]
    return x_mix, y_mix, m, perm


class ConsistencyLoss(nn.Module):
    """The consistency term on normalised features, Eq. (4)."""

    def __init__(self, rho: float = 0.1, eps: float = 1e-6):
        super().__init__()
        self.rho = rho
        self.eps = eps

    def forward(self, h_mix, h, m, perm):
        norm = lambda t: t / (t.norm(dim=1, keepdim=True) + self.eps)  # noqa: E731
        target = m.view(-1, 1) * norm(h) + (1 - m.view(-1, 1)) * norm(h[perm])
        gap = (norm(h_mix) - target).pow(2).sum(dim=1)
        return torch.clamp(gap - self.rho, min=0).mean()


def total_loss(logits, y_mix, h_mix, h, m, perm, consistency: ConsistencyLoss, lam: float = 0.5):
    """L = L_mix + λ L_cons, Eq. (5)."""
    mix = torch.sum(-y_mix * F.log_softmax(logits, dim=1), dim=1).mean()
    return mix + lam * consistency(h_mix, h, m, perm)

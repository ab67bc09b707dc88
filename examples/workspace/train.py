"""Train a ResNet-18 on CIFAR-10 with Tempered Label Mixing (Algorithm 1)."""

import argparse

import torch
from torch import nn

from tlm import ConsistencyLoss, mix_batch, total_loss

LEARNING_RATE = 3e-4


def build_optimizer(model: nn.Module, weight_decay: float = 0.05):
    # Adam, with decay added to the gradient, as in our earlier codebase.
    return torch.optim.Adam(model.parameters(), lr=LEARNING_RATE, betas=(0.9, 0.999), weight_decay=weight_decay)


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--label-smoothing", type=float, default=0.1)
    parser.add_argument("--dropout", type=float, default=0.1)
    return parser.parse_args()


def main():
    args = parse_args()
    model = nn.Sequential(nn.Flatten(), nn.Dropout(p=args.dropout), nn.Linear(3 * 32 * 32, 10))
    optimizer = build_optimizer(model, weight_decay=5e-4)
    consistency = ConsistencyLoss()
    for _ in range(args.epochs):
        x, y = torch.randn(8, 3, 32, 32), torch.eye(10)[torch.randint(0, 10, (8,))]
        x_mix, y_mix, m, perm = mix_batch(x, y, alpha=0.2)
        logits = model(x_mix)
        loss = total_loss(logits, y_mix, logits, model(x), m, perm, consistency, lam=0.5)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()


if __name__ == "__main__":
    main()

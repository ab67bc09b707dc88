"""Mentions of method building blocks (optimizers, norms, losses, datasets, ...) in plain text."""

from __future__ import annotations

from dataclasses import dataclass

from .knowledge import component_vocabulary


@dataclass(frozen=True, slots=True)
class Mention:
    kind: str
    name: str  # canonical
    start: int  # offsets in the plain text searched
    end: int


def find_mentions(text: str) -> list[Mention]:
    """Every component named in `text`, the longest name where names overlap ("ImageNet-1k")."""
    return [
        Mention(
            found.value.kind,
            found.family.expand(found.value.name) if found.family else found.value.name,
            found.start,
            found.end,
        )
        for found in component_vocabulary().finditer(text)
    ]

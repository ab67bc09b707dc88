"""Text for people: a long quote or message cut to fit."""

from __future__ import annotations


def shorten(text: str, limit: int, *, flatten: bool = True) -> str:
    """`text` in at most `limit` characters, cut with an ellipsis; with `flatten`, each run of
    whitespace (line breaks included) first becomes one space."""
    if flatten:
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"

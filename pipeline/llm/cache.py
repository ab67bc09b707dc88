"""Validated LLM answers on disk, one file per request, so an unchanged request costs nothing."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

AnswerT = TypeVar("AnswerT", bound=BaseModel)


def request_key(request: dict[str, object]) -> str:
    """sha256 of the request in canonical JSON: the same question to the same model, the same key."""
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


class AnswerCache:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _entry(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def load(self, key: str, answer_model: type[AnswerT]) -> AnswerT | None:
        """The stored answer, or None when there is none or it no longer validates (a miss, not an error)."""
        try:
            return answer_model.model_validate_json(self._entry(key).read_bytes())
        except (OSError, ValidationError):
            return None

    def store(self, key: str, answer: BaseModel) -> None:
        """Write atomically; a cache that cannot be written only costs a request next time."""
        entry = self._entry(key)
        temporary: str | None = None
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("wb", dir=entry.parent, prefix=".answer-", delete=False) as handle:
                temporary = handle.name
                handle.write(answer.model_dump_json().encode())
            os.replace(temporary, entry)
        except OSError:
            if temporary is not None:
                Path(temporary).unlink(missing_ok=True)

"""Reading a paper's source files: one set of messages for missing, unreadable or stray files."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from ..errors import PaperError
from ..files import UnreadableFile, read_regular_file

MAX_PAPER_FILE_BYTES = 256_000_000  # one file of the paper (a PDF with its figures can be large)


def relative_to_root(path: Path, root: Path) -> str:
    """`path` relative to the paper's folder, as a posix path; a file outside it is refused."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise PaperError(f"{path} is not inside the paper folder {root}") from None


def read_source(path: Path, limit: int = MAX_PAPER_FILE_BYTES) -> bytes:
    """A file of the paper (see `read_regular_file`); PaperError naming it when it cannot be read."""
    try:
        return read_regular_file(path, limit=limit)
    except UnreadableFile as err:
        raise PaperError(f"{path}: {err}") from None


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def slug(text: str) -> str:
    """An id-safe form of a heading: `Related Work` → `related-work`."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48] or "untitled"

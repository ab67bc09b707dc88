"""PaperSpecs cached by the content hash of every file they were read from."""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from pathlib import Path

from pydantic import ValidationError

from ...schemas import PaperSpec
from ..files import UnreadableFile, read_regular_file
from .sources import MAX_PAPER_FILE_BYTES

_PACKAGE = Path(__file__).resolve().parents[1]  # paperlens.pipeline
_CODE_THAT_SHAPES_A_SPEC = ("ingest/*.py", "extract/*.py", "knowledge/*.yaml", "../schemas/*.py")


@functools.cache
def reader_fingerprint() -> str:
    """Hash of the code and vocabularies that produce a spec: any change to them invalidates the cache."""
    digest = hashlib.sha256()
    for pattern in _CODE_THAT_SHAPES_A_SPEC:
        for path in sorted(_PACKAGE.glob(pattern)):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_dir() -> Path:
    configured = os.environ.get("PAPERLENS_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "paperlens"


def file_sha256(path: Path) -> str:
    """Raises UnreadableFile (an OSError's kind of failure: the cache entry is not used)."""
    return hashlib.sha256(read_regular_file(path, limit=MAX_PAPER_FILE_BYTES)).hexdigest()


def _entry_path(main: Path) -> Path:
    key = hashlib.sha256(f"{reader_fingerprint()}\0{main.resolve()}".encode()).hexdigest()[:32]
    return cache_dir() / f"spec-{key}.json"


def load(main: Path) -> PaperSpec | None:
    """The cached spec of `main`, if every file it was read from is unchanged."""
    entry = _entry_path(main)
    try:
        spec = PaperSpec.model_validate_json(entry.read_bytes())
    except (OSError, ValidationError, ValueError):
        return None
    root = Path(spec.root)
    try:
        for rel, digest in spec.files.items():
            if file_sha256(root / rel) != digest:
                return None
    except UnreadableFile:
        return None
    return spec


def store(main: Path, spec: PaperSpec) -> None:
    """Write atomically; a cache that cannot be written only costs a re-read next time."""
    entry = _entry_path(main)
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=entry.parent, prefix=".spec-", delete=False) as handle:
            handle.write(spec.model_dump_json().encode())
        os.replace(handle.name, entry)
    except OSError:
        try:
            os.unlink(handle.name)
        except (OSError, UnboundLocalError):
            pass

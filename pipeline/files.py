"""Writing a user's file: whole or not at all."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

NEW_FILE_MODE = 0o644  # readable by others: the sandbox's user reads the workspace through a mount


def write_atomically(path: Path, data: str | bytes) -> None:
    """A reader (an editor, a test run) sees the old content or the new, never half of one: a
    temporary file beside `path`, then a rename. An existing file keeps its permissions; text is
    written as UTF-8 with `\\n` line ends."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = NEW_FILE_MODE
    descriptor, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    temporary = Path(name)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
        temporary.chmod(mode)  # mkstemp's file is private
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise

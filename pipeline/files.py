"""Files of the paper and the workspace: read only when they are regular files of a sane size, and
written whole or not at all."""

from __future__ import annotations

import errno
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


class UnreadableFile(Exception):
    """Why a file was not read, in words for the user (the caller names the file)."""


def read_regular_file(path: Path, *, limit: int, inside: Path | None = None) -> bytes:
    """The bytes of a regular file — the one way paperlens reads a file of the paper or the
    workspace. A FIFO, a device or a socket is refused before any read (its reading may never end),
    and so is a folder; a symbolic link is followed once (a loop is refused) and, with `inside`,
    never out of that folder; more than `limit` bytes is refused. Raises UnreadableFile."""
    resolved = resolved_path(path)
    if inside is not None and not resolved.is_relative_to(Path(inside).resolve()):
        raise UnreadableFile(f"a link out of {Path(inside).name or inside}")
    try:
        # Non-blocking: opening a FIFO with no writer would wait for ever; it is refused below.
        descriptor = os.open(resolved, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise UnreadableFile(_reason(err)) from None
    try:
        status = os.fstat(descriptor)
        if stat.S_ISDIR(status.st_mode):
            raise UnreadableFile("a folder, not a file")
        if not stat.S_ISREG(status.st_mode):
            raise UnreadableFile("not a regular file (a FIFO, a device or a socket)")
        if status.st_size > limit:
            raise UnreadableFile(f"larger than {limit / 1e6:g} MB ({status.st_size:,} bytes)")
        os.set_blocking(descriptor, True)
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    except OSError as err:
        raise UnreadableFile(_reason(err)) from None
    finally:
        os.close(descriptor)
    if len(data) > limit:  # it grew while read
        raise UnreadableFile(f"larger than {limit / 1e6:g} MB")
    return data


def resolved_path(path: Path) -> Path:
    """The real path of an existing file or folder; UnreadableFile saying why there is none (a
    link that loops, a NUL in the name, nothing there, no permission)."""
    try:
        return Path(path).resolve(strict=True)
    except RuntimeError:  # Python 3.11's word for a symbolic link loop
        raise UnreadableFile("a symbolic link that loops") from None
    except ValueError:
        raise UnreadableFile("a NUL character in its name") from None
    except OSError as err:
        raise UnreadableFile(_reason(err)) from None


def _reason(err: OSError) -> str:
    if err.errno == errno.ELOOP:
        return "a symbolic link that loops"
    if err.errno == errno.ENOENT:
        return "no such file"
    if err.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return f"cannot be read ({err.strerror or err})"

"""The workspace side: values, components and anchors read from code and configs.

`index_workspace` reads every Python and config file of a workspace, each on its own (`index_file`:
`python.index_python`, `configs.index_config`), reusing the FileIndex of any file whose content hash
is unchanged; `reindex` re-reads only the files an edit touched. Then one cheap pass over the
FileIndex data (`settle.settle_workspace`, no source read again) adds what files say about each other: calls
that override another file's defaults, definitions no file uses, config files the code names.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from fnmatch import fnmatchcase
from pathlib import Path

from ...schemas.code import CodeIndex, FileIndex
from ...schemas.paper import Problem
from ..files import UnreadableFile, read_regular_file
from .configs import index_config
from .incremental import index_document, index_edit
from .launchers import index_launcher
from .notebooks import index_notebook
from .python import index_python
from .settle import settle_workspace

__all__ = [
    "DEFAULT_INCLUDE",
    "LANGUAGES",
    "index_config",
    "index_document",
    "index_edit",
    "index_file",
    "index_python",
    "index_source",
    "index_workspace",
    "reindex",
    "workspace_files",
]

# Every file of a language paperlens reads (`language_of`): by extension, a Makefile, a script without
# an extension that names its interpreter (`#!/usr/bin/env bash`).
DEFAULT_INCLUDE = ("**/*",)
# Never the workspace's own code: tools' folders, environments, build output. Hidden folders neither.
EXCLUDED_DIRECTORIES = frozenset(
    {".git", ".venv", "venv", "node_modules", "__pycache__", "build", "dist", ".paperlens", "site-packages"}
)
MAX_FILE_BYTES = 2_000_000
LANGUAGES = {
    ".py": "python",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".json": "json",
    ".toml": "toml",
    ".ini": "ini",
    ".cfg": "ini",
    ".ipynb": "notebook",
    ".sh": "shell",
    ".bash": "shell",
    ".md": "markdown",
}


def index_workspace(
    root: Path,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    previous: CodeIndex | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> CodeIndex:
    """Every matching file under `root`; a file unchanged since `previous` keeps its FileIndex.
    `progress(done, total)` is called after each file (it may raise to stop the indexing)."""
    root = Path(root).resolve()
    reusable = (
        {file.file: file for file in previous.files} if previous is not None and previous.root == str(root) else {}
    )
    paths = workspace_files(root, include, exclude)
    files = []
    for done, path in enumerate(paths, 1):
        files.append(_read(root, path, reusable.get(path)))
        if progress is not None:
            progress(done, len(paths))
    return _link(CodeIndex(root=str(root), files=files))


def reindex(index: CodeIndex, paths: Iterable[str], sources: Mapping[str, str] | None = None) -> CodeIndex:
    """`index` after an edit: each of `paths` re-read — from `sources` when given there (an editor's
    unsaved text), else from disk, and dropped when gone — then the cross-file pass again."""
    root = Path(index.root)
    sources = sources or {}
    by_path = {file.file: file for file in index.files}
    for path in paths:
        if _language_on_disk(root, path) is None and path not in by_path:
            continue
        if path in sources:
            by_path[path] = index_source(path, sources[path])
        elif (root / path).is_file():
            by_path[path] = _read(root, path, by_path.get(path))
        else:
            by_path.pop(path, None)
    return _link(index.model_copy(update={"files": [by_path[path] for path in sorted(by_path)]}))


def index_file(root: Path, path: str) -> FileIndex:
    """One workspace file, read on its own (`path` relative to `root`, with forward slashes)."""
    return _read(Path(root).resolve(), path, None)


# Launchers known by their name, and the interpreters a script without an extension names in its `#!`.
MAKEFILES = frozenset({"Makefile", "makefile", "GNUmakefile"})
_SHEBANG_RE = re.compile(r"#!\s*(?:\S*/)?(?:env\s+(?:-\S+\s+)*)?(?P<interpreter>python[\d.]*|bash|sh|zsh|dash)\b")


def language_of(path: str, first_line: str = "") -> str | None:
    """How a workspace file is read: by its extension, by its name (a Makefile's recipes are shell
    commands), or, without an extension, by the interpreter its `#!` line names; None: not read."""
    name = posixpath.basename(path)
    suffix = posixpath.splitext(name)[1].lower()
    if suffix:
        return LANGUAGES.get(suffix)
    if name in MAKEFILES:
        return "shell"
    shebang = _SHEBANG_RE.match(first_line)
    if shebang is None:
        return None
    return "python" if shebang["interpreter"].startswith("python") else "shell"


def _language_on_disk(folder: Path, path: str) -> str | None:
    """`language_of` a file, its first line read only when its name has no extension (a `.png` never)."""
    has_suffix = bool(posixpath.splitext(posixpath.basename(path))[1])
    return language_of(path, "" if has_suffix else _first_line(folder / path))


def _first_line(path: Path) -> str:
    """The first line of a regular file (never a FIFO's or a device's, whose reading may not end)."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return ""
        with path.open("rb") as file:
            return file.readline(200).decode("utf-8", errors="replace")
    except OSError:
        return ""


def index_source(path: str, source: str) -> FileIndex:
    """A file's text, read as its extension (or name, or `#!` line) says."""
    language = language_of(path, source[:200].partition("\n")[0]) or "python"
    if language == "python":
        return index_python(path, source)
    if language == "notebook":
        return index_notebook(path, source)
    if language in ("shell", "markdown"):
        return index_launcher(path, source, language)
    return index_config(path, source, language)


def _link(index: CodeIndex) -> CodeIndex:
    """The cross-file pass: each file settled against what all the others say."""
    settled = settle_workspace(index.files)
    if all(new is old for new, old in zip(settled, index.files, strict=True)):
        return index
    return index.model_copy(update={"files": settled})


def workspace_files(root: Path, include: list[str] | None = None, exclude: list[str] | None = None) -> list[str]:
    """The workspace's files to read, relative to `root`, sorted."""
    include = list(include or DEFAULT_INCLUDE)
    exclude = list(exclude or ())
    found = []
    for directory, subdirectories, filenames in os.walk(root):
        relative = Path(directory).relative_to(root).as_posix()
        relative = "" if relative == "." else relative
        subdirectories[:] = [
            name
            for name in subdirectories
            if not name.startswith(".")
            and name not in EXCLUDED_DIRECTORIES
            and not _excluded(posixpath.join(relative, name), exclude, directory=True)
        ]
        for name in filenames:
            path = posixpath.join(relative, name)
            if (
                not name.startswith(".")
                and any(_matches(path, pattern) for pattern in include)
                and not _excluded(path, exclude)
                and _language_on_disk(Path(directory), name) is not None
            ):
                found.append(path)
    return sorted(found)


def _matches(path: str, pattern: str) -> bool:
    """Glob matching on workspace paths: `**/` also matches no folder; a pattern without a slash
    matches a file or folder name anywhere."""
    if fnmatchcase(path, pattern):
        return True
    if pattern.startswith("**/") and fnmatchcase(path, pattern[3:]):
        return True
    return "/" not in pattern and fnmatchcase(posixpath.basename(path), pattern)


def _excluded(path: str, exclude: list[str], *, directory: bool = False) -> bool:
    return any(_matches(path, pattern) or (directory and fnmatchcase(path + "/", pattern)) for pattern in exclude)


def _read(root: Path, path: str, previous: FileIndex | None) -> FileIndex:
    """A file's FileIndex: `previous` itself when the content is unchanged."""
    full = root / path
    language = _language_on_disk(root, path) or "python"
    try:
        status = full.stat()
        if previous is not None and stat.S_ISREG(status.st_mode) and _unchanged_since_read(full, status, previous.sha256):
            return previous
        data = read_regular_file(full, limit=MAX_FILE_BYTES, inside=root)
    except UnreadableFile as error:
        return _unread(path, "", language, f"{path}: {error}; not read", previous)
    except OSError as error:  # the stat: a link that loops, a file gone
        return _unread(path, "", language, f"{path}: cannot be read: {error.strerror or error}", previous)
    digest = hashlib.sha256(data).hexdigest()
    _last_read[str(full)] = (status.st_mtime_ns, status.st_size, digest, time.time_ns())
    if previous is not None and previous.sha256 == digest:
        return previous
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return _unread(path, digest, language, f"{path}: not UTF-8 ({error.reason} at byte {error.start}); not read")
    return index_source(path, source)


# Each file last read: its modification time and size then, its hash, and when it was read. A file
# whose time and size have not changed since is not read again to be hashed, unless it was modified
# so shortly before that read that a later edit could share its time (as git treats "racy" files).
_last_read: dict[str, tuple[int, int, str, int]] = {}
_RACY_NS = 2_000_000_000


def _unchanged_since_read(full: Path, status: os.stat_result, digest: str) -> bool:
    known = _last_read.get(str(full))
    if known is None:
        return False
    modified, size, known_digest, read_at = known
    return (modified, size, known_digest) == (
        status.st_mtime_ns,
        status.st_size,
        digest,
    ) and read_at - modified > _RACY_NS


def _unread(path: str, digest: str, language: str, message: str, previous: FileIndex | None = None) -> FileIndex:
    unread = FileIndex(
        file=path, sha256=digest, language=language, problems=[Problem(severity="warning", message=message)]
    )
    return previous if previous == unread else unread

"""Columns as the client counts them. paperlens counts a line's characters in code points (Python's
string indices); the client counts in the encoding negotiated at `initialize`: UTF-16 code units
unless it offered UTF-8 or UTF-32 first. Every position the server sends or receives is converted
here, against the text of the document it belongs to."""

from __future__ import annotations

import os
import re
from pathlib import Path

from lsprotocol import types as lsp
from pygls.uris import to_fs_path
from pygls.workspace import Workspace

# LSP ends lines at \r\n, \r and \n only (str.splitlines also splits at \f, \v, \x1c, \u2028, ...).
_LINE_BREAK_RE = re.compile(r"\r\n|\r|\n")
MAX_READ = 8 * 1024 * 1024  # a paper or code file larger than this is not read to convert its columns


def _units(text: str, encoding: str) -> int:
    if encoding == lsp.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8"))
    return len(text.encode("utf-16-le")) // 2


class Positions:
    """Converts code-point columns to the client's units and back. Lines come from the editor's
    buffer when the document is open, else from the file on disk (cached while it is unchanged)."""

    def __init__(self) -> None:
        self.workspace: Workspace | None = None
        self._open: dict[str, tuple[int | None, int, list[str]]] = {}  # uri → (version, source id, lines)
        self._saved: dict[str, tuple[tuple[int, int], list[str]]] = {}  # path → ((mtime, size), lines)

    @property
    def encoding(self) -> str:
        encoding = self.workspace.position_encoding if self.workspace is not None else None
        return str(encoding or lsp.PositionEncodingKind.Utf16)

    def _lines(self, uri: str) -> list[str]:
        documents = self.workspace.text_documents if self.workspace is not None else {}
        if (document := documents.get(uri)) is not None:
            source = document.source
            cached = self._open.get(uri)
            if cached is None or cached[0] != document.version or cached[1] != id(source):
                # An ASCII document counts the same in every encoding: no lines needed (most code).
                cached = (document.version, id(source), [] if source.isascii() else _LINE_BREAK_RE.split(source))
                self._open[uri] = cached
            return cached[2]
        self._open.pop(uri, None)
        return self._saved_lines(to_fs_path(uri) or "")

    def _saved_lines(self, path: str) -> list[str]:
        try:
            status = os.stat(path)
        except (OSError, ValueError):
            return []
        stamp = (status.st_mtime_ns, status.st_size)
        cached = self._saved.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        lines: list[str] = []
        if status.st_size <= MAX_READ:
            try:
                lines = _LINE_BREAK_RE.split(Path(path).read_text(encoding="utf-8", errors="replace"))
            except OSError:
                lines = []
        self._saved[path] = (stamp, lines)
        return lines

    def line_range(self, uri: str, line: int) -> lsp.Range:
        """A line's text without its indentation and trailing blanks (a line past the end: empty)."""
        documents = self.workspace.text_documents if self.workspace is not None else {}
        document = documents.get(uri)
        lines = _LINE_BREAK_RE.split(document.source) if document is not None else self._saved_lines(to_fs_path(uri) or "")
        text = lines[line] if 0 <= line < len(lines) else ""
        start, end = len(text) - len(text.lstrip()), len(text.rstrip())
        return self.range(uri, line, start, line, end)

    def forget(self, uri: str) -> None:
        self._open.pop(uri, None)

    def character(self, uri: str, line: int, column: int) -> int:
        """A code-point column of a line as the client counts it."""
        if column <= 0 or self.encoding == lsp.PositionEncodingKind.Utf32:
            return max(column, 0)
        lines = self._lines(uri)
        text = lines[line] if 0 <= line < len(lines) else ""
        if text.isascii():
            return column
        return _units(text[:column], self.encoding) + max(column - len(text), 0)

    def position(self, uri: str, line: int, column: int) -> lsp.Position:
        return lsp.Position(line=line, character=self.character(uri, line, column))

    def range(self, uri: str, line: int, column: int, end_line: int, end_column: int) -> lsp.Range:
        return lsp.Range(start=self.position(uri, line, column), end=self.position(uri, end_line, end_column))

    def column(self, uri: str, position: lsp.Position) -> int:
        """The code-point column of a position the client sent (in its units). A position inside a
        character (half a surrogate pair, a byte of a UTF-8 sequence) is that character's column."""
        if position.character <= 0 or self.encoding == lsp.PositionEncodingKind.Utf32:
            return max(position.character, 0)
        lines = self._lines(uri)
        text = lines[position.line] if 0 <= position.line < len(lines) else ""
        if text.isascii():
            return position.character
        counted = 0
        for index, char in enumerate(text):
            counted += _units(char, self.encoding)
            if counted > position.character:
                return index
        return len(text) + position.character - counted

"""Jupyter notebooks → a FileIndex: the code cells read as one Python file, located in the `.ipynb`.

The code cells, in order, are joined into one module (IPython magics and `!shell` lines blanked,
as they are no Python) and read by `index_python`; every location is then moved to where that
line of the cell is written in the notebook's JSON, so a finding opens at the cell's text. A
notebook that is no JSON, or whose cells cannot be found, is a Problem.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from ..nesting import TooDeep, load_json
from ...schemas.code import FileIndex
from ...schemas.paper import Problem
from .python import index_python

MAX_NOTEBOOK_CHARS = 2 * 1024 * 1024
_SOURCE_KEY_RE = re.compile(r'"source"\s*:\s*')
_MAGIC_RE = re.compile(r"^\s*[%!]")


def index_notebook(path_rel: str, source: str) -> FileIndex:
    digest = hashlib.sha256(source.encode("utf-8", errors="surrogatepass")).hexdigest()

    def unread(message: str) -> FileIndex:
        return FileIndex(file=path_rel, sha256=digest, language="notebook", problems=[Problem(severity="warning", message=message)])

    if len(source) > MAX_NOTEBOOK_CHARS:
        return unread(f"{path_rel}: notebook too large; not read")
    try:
        notebook = load_json(source)
        cells = notebook["cells"] if isinstance(notebook, dict) else None
    except TooDeep as err:
        return unread(f"{path_rel}: {err}; not read")
    except (ValueError, KeyError):
        cells = None
    if not isinstance(cells, list):
        return unread(f"{path_rel}: not a Jupyter notebook (no cells); not read")
    lines: list[str] = []
    places: list[tuple[int, int]] = []  # per module line: (notebook line, column of the line's text)
    keys = list(_SOURCE_KEY_RE.finditer(source))
    line_starts = [0] + [i + 1 for i, c in enumerate(source) if c == "\n"]
    for position, cell in enumerate(cells):
        if not isinstance(cell, dict) or position >= len(keys):
            continue
        if cell.get("cell_type") != "code":
            continue
        text = cell.get("source", "")
        parts = text if isinstance(text, list) else str(text).splitlines(keepends=True)
        offset = keys[position].end()
        for part in parts:
            if not isinstance(part, str):
                continue
            found = _find_string(source, part, offset)
            if found >= 0:
                offset = found
            notebook_line = _line_of(line_starts, offset)
            column = offset - line_starts[notebook_line] + 1
            for piece in part.splitlines() or [""]:
                lines.append("" if _MAGIC_RE.match(piece) else piece)
                places.append((notebook_line, column))
        lines.append("")  # cells end apart
        places.append(places[-1] if places else (0, 0))
    index = index_python(path_rel, "\n".join(lines) + "\n")
    moved = _moved(index.model_dump(), places)
    moved.update(sha256=digest, language="notebook")
    return FileIndex.model_validate(moved)


def _find_string(source: str, part: str, start: int) -> int:
    for encoded in (json.dumps(part, ensure_ascii=False), json.dumps(part)):
        found = source.find(encoded, start)
        if found >= 0:
            return found
    return -1


def _line_of(line_starts: list[int], offset: int) -> int:
    low, high = 0, len(line_starts) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if line_starts[middle] <= offset:
            low = middle
        else:
            high = middle - 1
    return low


def _moved(data: Any, places: list[tuple[int, int]]) -> Any:
    """Every location of the module's lines moved to the notebook's."""
    if isinstance(data, list):
        return [_moved(item, places) for item in data]
    if not isinstance(data, dict):
        return data
    out = {key: _moved(value, places) for key, value in data.items()}
    if "line" in out and "column" in out and isinstance(out.get("line"), int):
        line = min(out["line"], len(places) - 1) if places else 0
        notebook_line, column = places[line] if places else (0, 0)
        out["line"], out["column"] = notebook_line, column + (out["column"] or 0)
        if isinstance(out.get("end_line"), int):
            end = min(out["end_line"], len(places) - 1) if places else 0
            end_line, end_column = places[end] if places else (0, 0)
            out["end_line"] = end_line
            if isinstance(out.get("end_column"), int):
                out["end_column"] = end_column + out["end_column"]
    return out

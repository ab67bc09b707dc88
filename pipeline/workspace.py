"""A workspace's paperlens settings and its paper."""

from __future__ import annotations

import os
import reprlib
import tomllib
from pathlib import Path

from pydantic import ValidationError

from ..schemas import EditorSettings, WorkspaceSettings
from .errors import PaperError, WorkspaceError
from .files import UnreadableFile, read_regular_file, resolved_path
from .ingest import find_main_file
from .nesting import MAX_DATA_NESTING, TooDeep, load_toml

SETTINGS_FILES = ("pyproject.toml", ".paperlens.toml")
PAPER_FOLDERS = ("paper", "papers", "docs/paper")
MAX_SETTINGS_BYTES = 4_000_000


def load_settings(workspace: Path) -> WorkspaceSettings:
    """`.paperlens.toml` (top level or `[tool.paperlens]`) wins over `[tool.paperlens]` in pyproject.toml."""
    for name in reversed(SETTINGS_FILES):
        path = workspace / name
        if not os.path.lexists(path):
            continue
        try:
            data = load_toml(read_regular_file(path, limit=MAX_SETTINGS_BYTES).decode("utf-8"))
        except TooDeep as err:
            raise WorkspaceError(f"{name}:{err.line + 1}: nested more than {MAX_DATA_NESTING} levels deep; not read") from None
        except UnreadableFile as err:
            raise WorkspaceError(f"{name}: {err}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
            raise WorkspaceError(f"{name}: not valid TOML ({err})") from None
        tool = data.get("tool")
        section = tool.get("paperlens") if isinstance(tool, dict) else None
        if tool is not None and not isinstance(tool, dict):
            raise WorkspaceError(f"{name}: `tool` is {type(tool).__name__}, not a table; [tool.paperlens] cannot be read")
        if section is None and name == ".paperlens.toml":
            section = data
        if section is None:
            continue
        if not isinstance(section, dict):
            raise WorkspaceError(f"{name}: [tool.paperlens] is {type(section).__name__}, not a table")
        try:
            return WorkspaceSettings.model_validate(section)
        except ValidationError as err:
            first = err.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "settings"
            raise WorkspaceError(f"{name}: [tool.paperlens] {field}: {first['msg']}") from None
    return WorkspaceSettings()


def find_paper(workspace: Path, settings: WorkspaceSettings) -> Path:
    """The paper from the settings, else a `paper/` folder, else a paper at the workspace's root."""
    if settings.paper:
        try:
            return resolved_path(workspace / settings.paper)
        except UnreadableFile as err:
            raise WorkspaceError(f"the paper in the settings, {settings.paper}: {err}") from None
    for folder in PAPER_FOLDERS:
        if (workspace / folder).is_dir():
            return workspace / folder
    try:
        return find_main_file(workspace)
    except PaperError:  # no paper at the root either
        raise WorkspaceError(
            f"{workspace}: no paper found; pass --paper, or set `paper` under [tool.paperlens] in pyproject.toml"
        ) from None


# A value as a message shows it: a few levels and items of it (a client may send anything).
_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxstring, _SHOWN.maxother = 3, 80, 80


def editor_settings(raw: object) -> tuple[EditorSettings, list[str]]:
    """The editor's settings from what a client sent (`{"paperlens": {...}}` or the section itself).

    Each setting is checked on its own, so one bad value costs only itself: it is named in a message
    and falls back to its default. An unset setting (null) takes its default silently."""
    if raw is None:
        return EditorSettings(), []
    section = raw.get("paperlens", raw) if isinstance(raw, dict) else raw
    if not isinstance(section, dict):
        return EditorSettings(), [f"the paperlens settings must be an object, not {_SHOWN.repr(section)}; using the defaults"]
    fields = EditorSettings.model_fields
    known = {field.alias or name: name for name, field in fields.items()} | {name: name for name in fields}
    accepted: dict[str, object] = {}
    problems = []
    for key, value in section.items():
        if value is None:
            continue
        if key not in known:
            problems.append(f"unknown setting paperlens.{key}; ignored")
            continue
        try:
            EditorSettings.model_validate({key: value})
        except ValidationError as err:
            default = fields[known[key]].get_default(call_default_factory=True)
            shown = default.model_dump(by_alias=True) if hasattr(default, "model_dump") else default
            problems.append(f"paperlens.{key}: {err.errors()[0]['msg']} (got {_SHOWN.repr(value)}); using the default, {shown!r}")
            continue
        accepted[key] = value
    return EditorSettings.model_validate(accepted), problems

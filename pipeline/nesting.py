"""How deeply a data file nests, found before it is parsed. The parsers paperlens uses (json, tomllib,
PyYAML's composer, pydantic on what they give) recurse once per level; a file nested deeper than any
real configuration is reported as such, never left to Python's recursion limit to stop."""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

import yaml

MAX_DATA_NESTING = 100  # levels of lists and tables; real configurations nest fewer than 15
# libyaml where PyYAML was built with it; its scanner refuses flow nesting past 1000 levels with a
# YAMLError, so whoever parses after `yaml_too_deep` must parse with this loader too.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# A string's closing quote is optional: an unclosed one then costs one scan, not one per quote.
_JSON_TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')
# `[a.b]`, `a.b =`; possessive and greedy, so a long run of blanks costs one pass, not one per split.
_TOML_KEY_RE = re.compile(r"(?m)^[ \t]*+(\[\[?)?[ \t]*+([^\s=\[\]#](?:[^=\[\]#\n]*[^\s=\[\]#])?)[ \t]*+(?:\]\]?|=)")
_TOML_TOKEN_RE = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"?|\'[^\'\n]*\'?|#[^\n]*|[\[\]{}]')


class TooDeep(ValueError):
    """A file nested deeper than MAX_DATA_NESTING (a ValueError, as the parsers' own errors are)."""

    def __init__(self, line: int) -> None:
        super().__init__(f"line {line + 1}: nested more than {MAX_DATA_NESTING} levels deep")
        self.line = line  # 0-based


def load_json(text: str) -> Any:
    """json.loads, or TooDeep."""
    if (offset := json_too_deep(text)) is not None:
        raise TooDeep(line_of(text, offset))
    return json.loads(text)


def load_toml(text: str) -> dict[str, Any]:
    """tomllib.loads, or TooDeep."""
    if (offset := toml_too_deep(text)) is not None:
        raise TooDeep(line_of(text, offset))
    return tomllib.loads(text)


def load_yaml(text: str) -> Any:
    """One YAML document (PyYAML's safe loader), or TooDeep."""
    if (line := yaml_too_deep(text)) is not None:
        raise TooDeep(line)
    return yaml.load(text, Loader=YAML_LOADER)


def json_too_deep(text: str) -> int | None:
    """The offset where `text` (JSON) first nests deeper than MAX_DATA_NESTING, else None."""
    return _brackets_too_deep(text, _JSON_TOKEN_RE, depth=0)


def toml_too_deep(text: str) -> int | None:
    """The offset where `text` (TOML) first nests deeper than MAX_DATA_NESTING (the document, a
    table without brackets, is the first level; a table header's and a key's dots nest too), else None."""
    table = 0
    for match in _TOML_KEY_RE.finditer(text):
        parts = match.group(2).count(".") + 1  # a dot inside quotes counts too: only ever more
        if match.group(1):
            table = parts
        elif table + parts + 1 > MAX_DATA_NESTING:
            return match.start(2)
        if table + 1 > MAX_DATA_NESTING:
            return match.start(2)
    return _brackets_too_deep(text, _TOML_TOKEN_RE, depth=1)


def yaml_too_deep(text: str) -> int | None:
    """The line (0-based) where `text` (YAML, block or flow) first nests deeper than MAX_DATA_NESTING,
    else None; also None for text that does not parse (the parse that follows reports it). PyYAML's
    parser is iterative: its events give the depth exactly."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=YAML_LOADER):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DATA_NESTING:
                    return event.start_mark.line
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:
        return None
    return None


def line_of(text: str, offset: int) -> int:
    """The 0-based line of an offset."""
    return text.count("\n", 0, offset)


def _brackets_too_deep(text: str, tokens: re.Pattern[str], depth: int) -> int | None:
    for token in tokens.finditer(text):
        bracket = token.group()
        if bracket in ("[", "{"):
            depth += 1
            if depth > MAX_DATA_NESTING:
                return token.start()
        elif bracket in ("]", "}"):
            depth -= 1
    return None

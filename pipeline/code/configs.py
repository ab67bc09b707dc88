"""Config files → a FileIndex: every setting of a YAML, JSON, TOML or INI file, where it is written.

Nested keys are flattened with dots (`optimizer.lr`), list items with an index (`defaults[0]`); a list
of numbers is one value, as a tuple (`betas: [0.9, 0.95]` → "(0.9, 0.95)"). A key is normalized by
its last part through the code vocabulary, or by the signature of the callable a sibling `_target_`
(Hydra), `type` (mmcv), `class_path` (LightningCLI, with `init_args`) or `target` (latent diffusion,
with `params`) names. A Hydra interpolation `${optimizer.lr}` takes the value it points to. A
malformed file is a Problem, never an exception.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import yaml

from ..nesting import MAX_DATA_NESTING, YAML_LOADER, json_too_deep, line_of, toml_too_deep, yaml_too_deep
from ...schemas.code import CallArguments, CodeLocation, ComponentSite, FileIndex, ValueSite
from ...schemas.paper import Location, Problem
from .anchors import find_anchors
from .knowledge import Signature, code_vocabulary, for_evaluation, normalize_name, setting_of
from .sites import MAX_RAW, Element, SourceText, Value, component_site, text_component, value_sites

ConfigLanguage = Literal["yaml", "json", "toml", "ini"]

MAX_CONFIG_CHARS = 512_000  # a bigger file is data (annotations, a vocabulary), not a configuration
MAX_SETTINGS = 5_000
_MAX_DEPTH = 64

_NUMBER_RE = re.compile(r"[-+]?(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][-+]?\d+)?")
_BOOLEANS = {"true": True, "false": False, "yes": True, "no": False, "on": True, "off": False}
_INTERPOLATION_RE = re.compile(r"\$\{([\w.\[\]-]+)\}")
_JSON_TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"|[^\s{}\[\]:,"]+|[{}\[\]:,]')
_TOML_ERROR_POSITION_RE = re.compile(r"at line (\d+), column (\d+)")
_TOML_KEY_PART_RE = re.compile(r"""\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*(?:\.|$)""")
_TOML_ASSIGNMENT_RE = re.compile(r"""^\s*((?:"(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_.\- ])+?)\s*=\s*""")
_INI_SECTION_RE = re.compile(r"^\s*\[([^\]]+)\]")
_INI_ENTRY_RE = re.compile(r"^([^\s=:;#\[][^=:]*?)\s*[=:]\s*(.*?)\s*$")


def index_config(path_rel: str, source: str, language: ConfigLanguage) -> FileIndex:
    """Every setting a config file holds, located; a file that cannot be read gives a Problem."""
    text = SourceText(path_rel, source)
    problems: list[Problem] = []
    flattener = _Flattener(text)
    if len(source) > MAX_CONFIG_CHARS:
        problems.append(Problem(severity="info", message=f"{path_rel}: too large to be a configuration; not read"))
    else:
        documents = _READERS[language](text, problems)
        for document in documents:
            flattener.root(document)
        if flattener.truncated:
            problems.append(
                Problem(severity="info", message=f"{path_rel}: only the first {MAX_SETTINGS} settings are read")
            )
    markers, whole_line = ("#;", True) if language == "ini" else ("#", False)
    anchors = [] if language == "json" else find_anchors(text, comment_markers=markers, whole_line_comments=whole_line)
    return FileIndex(
        file=path_rel,
        sha256=hashlib.sha256(source.encode("utf-8", errors="surrogatepass")).hexdigest(),
        language=language,
        values=flattener.resolved_values(),
        components=flattener.components,
        anchors=anchors,
        problems=problems,
        calls=[
            CallArguments(callee=callee, keywords=sorted(keywords))
            for callee, keywords in sorted(flattener.calls.items())
        ],
        imported_names=sorted(flattener.imported),
    )


@dataclass(slots=True)
class _Node:
    """A config value as every format reads into: a mapping, a sequence or a scalar, located."""

    location: CodeLocation
    raw: str = ""
    value: Value = None
    entries: list[tuple[str, _Node]] | None = None
    items: list[_Node] | None = None


class _Flattener:
    def __init__(self, text: SourceText) -> None:
        self.text = text
        self.vocabulary = code_vocabulary()
        self.values: list[ValueSite] = []
        self.components: list[ComponentSite] = []
        self.imported: set[str] = set()
        self.calls: dict[str, set[str]] = {}
        self.truncated = False

    def root(self, node: _Node) -> None:
        if node.entries is not None:
            self._mapping(node, "", None, None, 0)
        elif node.items is not None:
            self._sequence(node, "", "", None, None, 0)

    def _mapping(self, node: _Node, prefix: str, signature: Signature | None, parent: str | None, depth: int) -> None:
        if depth > _MAX_DEPTH:
            return
        target = None
        for key, child in node.entries:
            if key in self.vocabulary.target_keys and type(child.value) is str and child.entries is None:
                target = child.value
                arguments = [k for k, _ in node.entries if k not in self.vocabulary.target_keys]
                # LightningCLI's `init_args:`, latent diffusion's `params:`: the call's arguments one level down
                for wrapper, inner in node.entries:
                    if wrapper in ("init_args", "params") and inner.entries is not None:
                        arguments = [a for a in arguments if a != wrapper] + [k for k, _ in inner.entries]
                signature = self._target(child, arguments, parent)
        for key, child in node.entries:
            name = f"{prefix}.{key}" if prefix else key
            if child.entries is not None:
                self._mapping(child, name, signature if key in ("init_args", "params") else None, key, depth + 1)
            elif child.items is not None:
                self._sequence(child, name, key, signature, target, depth + 1)
            elif not (target is not None and key in self.vocabulary.target_keys):
                self._leaf(name, key, child, signature, target, parent)

    def _sequence(
        self, node: _Node, name: str, key: str, signature: Signature | None, target: str | None, depth: int
    ) -> None:
        if depth > _MAX_DEPTH:
            return
        items = node.items
        if items and all(type(item.value) is float and item.entries is None and item.items is None for item in items):
            as_tuple = _Node(node.location, node.raw, tuple(item.value for item in items))
            elements = [Element(item.value, item.raw, item.location) for item in items]
            self._leaf(name, key, as_tuple, signature, target, None, elements)
            return
        for index, item in enumerate(items):
            item_name = f"{name}[{index}]"
            if item.entries is not None:
                self._mapping(item, item_name, None, key, depth + 1)
            elif item.items is not None:
                self._sequence(item, item_name, key, None, None, depth + 1)
            else:
                self._leaf(item_name, key, item, signature, target, None)

    def _target(self, node: _Node, arguments: list[str], parent: str | None) -> Signature | None:
        """`_target_: torch.optim.AdamW`: a component, and a call of AdamW with the sibling keys; else
        maybe a component named in the parent's kind (`scheduler: {type: cosine}`)."""
        callee = node.value.rsplit(".", 1)[-1]
        self.imported.add(callee)  # a Hydra target keeps the workspace's own class in use
        self.calls.setdefault(callee, set()).update(arguments)
        signature = self.vocabulary.signature(node.value)
        if signature is not None and signature.kind is not None:
            self.components.append(component_site(signature.kind, signature.component, node.value, node.location))
        elif parent and (found := text_component(normalize_name(parent), parent, node.value)):
            self.components.append(component_site(found[0], found[1], node.value, node.location))
        return signature

    def _leaf(
        self,
        name: str,
        key: str,
        node: _Node,
        signature: Signature | None,
        target: str | None,
        parent: str | None,
        elements: list[Element] | None = None,
    ) -> None:
        if len(self.values) >= MAX_SETTINGS:
            self.truncated = True
            return
        setting = setting_of(key, signature)
        if setting is not None and for_evaluation(setting, [name.rpartition(".")[0].rpartition(".")[2]]):
            setting = None  # eval.batch_size: the evaluation variant, not the paper's setting
        value = node.value
        if type(value) is str:
            found = text_component(setting, key, value, parent)
            if found is not None:
                self.components.append(component_site(found[0], found[1], value, node.location))
        elif setting in self.vocabulary.text_kinds:
            setting = None  # `optimizer: null` names no component
        self.values += value_sites(
            name=name,
            normalized=setting,
            value=value,
            raw=node.raw,
            kind="config-file",
            location=node.location,
            elements=elements,
            call=target,
            component=signature.component if signature is not None else None,
        )

    def resolved_values(self) -> list[ValueSite]:
        """Values with Hydra's `${a.b}` interpolations replaced by what they point to."""
        by_name = {site.name: site for site in self.values}
        resolved = []
        for site in self.values:
            if type(site.value) is str and (match := _INTERPOLATION_RE.fullmatch(site.value)):
                source = by_name.get(match[1])
                if source is not None and source is not site:
                    site = site.model_copy(update={"value": source.value, "resolved_from": source.location})
            resolved.append(site)
        return resolved


def _too_deep(text: SourceText, line: int) -> Problem:
    return Problem(
        severity="error",
        message=f"{text.file}:{line + 1}: nested more than {MAX_DATA_NESTING} levels deep; not read",
        location=Location(file=text.file, line=line, column=0),
    )


# --- YAML ----------------------------------------------------------------------------------------


def _read_yaml(text: SourceText, problems: list[Problem]) -> list[_Node]:
    if (line := yaml_too_deep(text.source)) is not None:
        problems.append(_too_deep(text, line))
        return []
    try:
        documents = list(yaml.compose_all(text.source, Loader=YAML_LOADER))
    except yaml.YAMLError as error:
        problems.append(_yaml_problem(text.file, error))
        return []
    budget = [MAX_SETTINGS * 4]  # aliases can make a small file expand without end
    return [_yaml_node(text, document, budget, 0) for document in documents if document is not None]


def _yaml_problem(file: str, error: yaml.YAMLError) -> Problem:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    what = getattr(error, "problem", None) or str(error).splitlines()[0]
    if mark is None:
        return Problem(severity="error", message=f"{file}: not valid YAML: {what}")
    return Problem(
        severity="error",
        message=f"{file}:{mark.line + 1}: not valid YAML: {what}",
        location=Location(file=file, line=mark.line, column=mark.column),
    )


def _yaml_node(text: SourceText, node: yaml.Node, budget: list[int], depth: int) -> _Node:
    location = _mark_span(text, node.start_mark, node.end_mark)
    budget[0] -= 1
    if budget[0] < 0 or depth > _MAX_DEPTH:
        return _Node(location)
    if isinstance(node, yaml.MappingNode):
        entries: list[tuple[str, _Node]] = []
        for key, value in node.value:
            child = _yaml_node(text, value, budget, depth + 1)
            if key.tag == "tag:yaml.org,2002:merge":  # `<<: *defaults` brings the aliased keys in
                merged = [child] if child.entries is not None else (child.items or [])
                entries += [entry for mapping in merged for entry in (mapping.entries or [])]
            elif isinstance(key, yaml.ScalarNode):
                entries.append((key.value, child))
        return _Node(location, entries=entries)
    if isinstance(node, yaml.SequenceNode):
        return _Node(
            location, raw=_raw(text, location), items=[_yaml_node(text, n, budget, depth + 1) for n in node.value]
        )
    return _Node(location, raw=_raw(text, location), value=_yaml_scalar(node))


def _yaml_scalar(node: yaml.ScalarNode) -> Value:
    text = node.value
    if node.style:  # quoted or a block: a string as written
        return text
    tag = node.tag.rsplit(":", 1)[-1]
    if tag == "null":
        return None
    if tag == "bool":
        return _BOOLEANS.get(text.lower(), False)
    if tag == "int":
        try:
            return float(int(text.replace("_", ""), 0))
        except ValueError:
            pass
    return _number_or_text(text)


def _mark_span(text: SourceText, start: yaml.Mark, end: yaml.Mark) -> CodeLocation:
    return CodeLocation.model_construct(
        file=text.file, line=start.line, column=start.column, end_line=end.line, end_column=end.column
    )


def _raw(text: SourceText, location: CodeLocation) -> str:
    lines = text.lines
    if location.end_line >= len(lines):  # a node that ends at the end of a file with no final newline
        lines = [*lines, ""]
    if location.line == location.end_line:
        return lines[location.line][location.column : location.end_column].strip()
    first = lines[location.line][location.column :]
    return "\n".join(
        [first, *lines[location.line + 1 : location.end_line], lines[location.end_line][: location.end_column]]
    )[:MAX_RAW].strip()


def _number_or_text(text: str) -> Value:
    """A number written any way YAML 1.2 and OmegaConf read one (3e-4 too, which PyYAML keeps as text)."""
    if _NUMBER_RE.fullmatch(text) and any(char.isdigit() for char in text):
        try:
            return float(text.replace("_", ""))
        except ValueError:
            return text
    return text


# --- JSON ----------------------------------------------------------------------------------------


def _read_json(text: SourceText, problems: list[Problem]) -> list[_Node]:
    if (offset := json_too_deep(text.source)) is not None:
        problems.append(_too_deep(text, line_of(text.source, offset)))
        return []
    try:
        json.loads(text.source)
    except json.JSONDecodeError as error:
        problems.append(
            Problem(
                severity="error",
                message=f"{text.file}:{error.lineno}: not valid JSON: {error.msg}",
                location=Location(file=text.file, line=error.lineno - 1, column=error.colno - 1),
            )
        )
        return []
    # Valid JSON: now read it again token by token, to know where each value stands.
    tokens = _JSON_TOKEN_RE.finditer(text.source)
    return [_json_value(text, next(tokens), tokens)]


def _json_value(text: SourceText, token: re.Match[str], tokens: Iterator[re.Match[str]]) -> _Node:
    word = token.group(0)
    if word == "{":
        start = token.start()
        entries = []
        token = next(tokens)
        while token.group(0) != "}":
            if token.group(0) == ",":
                token = next(tokens)
                continue
            key = json.loads(token.group(0))
            next(tokens)  # the colon
            child = _json_value(text, next(tokens), tokens)
            entries.append((key, child))
            token = next(tokens)
        return _Node(text.span(start, token.end()), entries=entries)
    if word == "[":
        start = token.start()
        items = []
        token = next(tokens)
        while token.group(0) != "]":
            if token.group(0) != ",":
                items.append(_json_value(text, token, tokens))
            token = next(tokens)
        location = text.span(start, token.end())
        return _Node(location, raw=text.source[start : token.end()][:200], items=items)
    location = text.span(token.start(), token.end())
    if word.startswith('"'):
        return _Node(location, raw=word, value=json.loads(word))
    literal = {"true": True, "false": False, "null": None}
    value = literal[word] if word in literal else _number_or_text(word)
    return _Node(location, raw=word, value=value)


# --- TOML ----------------------------------------------------------------------------------------


def _read_toml(text: SourceText, problems: list[Problem]) -> list[_Node]:
    if (offset := toml_too_deep(text.source)) is not None:
        problems.append(_too_deep(text, line_of(text.source, offset)))
        return []
    try:
        data = tomllib.loads(text.source)
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        position = _TOML_ERROR_POSITION_RE.search(message)
        line, column = (int(position[1]) - 1, int(position[2]) - 1) if position else (None, None)
        problems.append(
            Problem(
                severity="error",
                message=f"{text.file}:{(line or 0) + 1}: not valid TOML: {message}",
                location=Location(file=text.file, line=line, column=column) if line is not None else None,
            )
        )
        return []
    positions = _toml_positions(text)
    return [_toml_node(text, data, (), positions)]


def _toml_node(text: SourceText, value: object, path: tuple, positions: dict[tuple, CodeLocation]) -> _Node:
    location = _nearest(positions, path, text.file)
    if isinstance(value, dict):
        entries = [(str(key), _toml_node(text, child, (*path, key), positions)) for key, child in value.items()]
        return _Node(location, entries=entries)
    if isinstance(value, list):
        items = [_toml_node(text, child, (*path, index), positions) for index, child in enumerate(value)]
        return _Node(location, raw=_raw(text, location), items=items)
    raw = _raw(text, location) if path in positions else str(value)
    if isinstance(value, bool | str):
        return _Node(location, raw=raw, value=value)
    if isinstance(value, int | float):
        return _Node(location, raw=raw, value=float(value))
    return _Node(location, raw=raw, value=str(value))  # a date or time


def _nearest(positions: dict[tuple, CodeLocation], path: tuple, file: str) -> CodeLocation:
    """Where a key's value is written; failing that (an array's item), where its closest parent is."""
    for end in range(len(path), 0, -1):
        if path[:end] in positions:
            return positions[path[:end]]
    return CodeLocation.model_construct(file=file, line=0, column=0, end_line=0, end_column=0)


def _toml_positions(text: SourceText) -> dict[tuple, CodeLocation]:
    """Key path → where its value is written, by a line scan (tomllib gives values, not positions)."""
    positions: dict[tuple, CodeLocation] = {}
    table: tuple = ()
    array_tables: dict[tuple, int] = {}
    open_string: str | None = None
    open_brackets = 0
    for number, line in enumerate(text.lines):
        if open_string is not None:
            if open_string in line:
                open_string = None
            continue
        if open_brackets > 0:
            open_brackets += _bracket_balance(line)
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("["):
            array = stripped.startswith("[[")
            closing = stripped.find("]]" if array else "]")
            keys = _toml_key(stripped[2 if array else 1 : closing])
            if array:
                array_tables[keys] = array_tables.get(keys, -1) + 1
                table = (*keys, array_tables[keys])
            else:
                table = keys
            positions[table] = _line_span(text.file, number, line)
            continue
        match = _TOML_ASSIGNMENT_RE.match(line)
        if match is None:
            continue
        path = (*table, *_toml_key(match[1]))
        value_text = line[match.end() :]
        end = match.end() + len(_without_comment(value_text).rstrip())
        positions[path] = CodeLocation.model_construct(
            file=text.file, line=number, column=match.end(), end_line=number, end_column=end
        )
        for delimiter in ('"""', "'''"):
            if value_text.startswith(delimiter) and value_text.count(delimiter) == 1:
                open_string = delimiter
        if value_text.startswith("["):
            open_brackets = _bracket_balance(value_text)
    return positions


def _toml_key(key: str) -> tuple:
    parts = []
    for match in _TOML_KEY_PART_RE.finditer(key):
        part = match[1] if match[1] is not None else match[2] if match[2] is not None else match[3]
        if part is not None:
            parts.append(part)
    return tuple(parts)


def _bracket_balance(text: str) -> int:
    text = _without_comment(text)
    return text.count("[") - text.count("]")


def _without_comment(text: str) -> str:
    quote = None
    for index, char in enumerate(text):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#":
            return text[:index]
    return text


def _line_span(file: str, number: int, line: str) -> CodeLocation:
    start = len(line) - len(line.lstrip())
    return CodeLocation.model_construct(
        file=file, line=number, column=start, end_line=number, end_column=len(line.rstrip())
    )


# --- INI -----------------------------------------------------------------------------------------


def _read_ini(text: SourceText, problems: list[Problem]) -> list[_Node]:
    try:
        configparser.ConfigParser(interpolation=None, strict=False).read_string(text.source)
    except configparser.Error as error:
        line = getattr(error, "lineno", None) or next((n for n, _ in getattr(error, "errors", [])), None)
        problems.append(
            Problem(
                severity="error",
                message=f"{text.file}:{line or 1}: not a valid INI file: {error.message.splitlines()[0]}",
                location=Location(file=text.file, line=line - 1, column=0) if line else None,
            )
        )
    # Line by line all the same: what is well-formed is read.
    sections: list[tuple[str, _Node]] = []
    entries: list[tuple[str, _Node]] = []
    before_sections = entries
    for number, line in enumerate(text.lines):
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if section := _INI_SECTION_RE.match(line):
            entries = []
            sections.append((section[1].strip(), _Node(_line_span(text.file, number, line), entries=entries)))
            continue
        if line[0].isspace():
            continue  # a continuation line: the value it continues stays as its first line says
        if entry := _INI_ENTRY_RE.match(line):
            location = CodeLocation.model_construct(
                file=text.file, line=number, column=entry.start(2), end_line=number, end_column=entry.end(2)
            )
            raw = entry[2]
            entries.append((entry[1].strip(), _Node(location, raw=raw, value=_ini_value(raw))))
    start = CodeLocation.model_construct(file=text.file, line=0, column=0, end_line=0, end_column=0)
    return [_Node(start, entries=sections or before_sections)]


def _ini_value(raw: str) -> Value:
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    if raw.lower() in _BOOLEANS and not raw.isdigit():
        return _BOOLEANS[raw.lower()]
    return _number_or_text(raw) if raw else None


_READERS = {"yaml": _read_yaml, "json": _read_json, "toml": _read_toml, "ini": _read_ini}

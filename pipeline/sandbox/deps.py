"""The workspace's dependencies: what its Python files import, against what it declares.

`dependency_issues` reads every Python file's imports with `ast` and every place a workspace declares
what it needs, and reports

- `missing-requirement`: a third-party import whose distribution no declaration covers, once per
  distribution, at its first import site (files in path order, then lines);
- `unpinned`: a requirement with no exact version (`==`/`===`, a conda `=x.y.z`, a poetry `1.2.3`) that
  no lock file or other pin (`==` elsewhere, a `-c` constraints file) fixes either, at its line.

Not required, so never missing: the standard library (`sys.stdlib_module_names`), relative imports,
the workspace's own modules (any folder or file stem of its Python files, as a script's folder is on
`sys.path`) and its own distribution (pyproject's `name`), the build script setup.py, imports under `if TYPE_CHECKING:` or a `sys.version_info`/`sys.platform` test, and
imports in a `try` whose handlers catch ImportError (or in those handlers: one of the two suffices).

Declarations: `requirements*.txt`/`.in` at the root and in `requirements/` (with `-r` includes; `-c`
constraints and `==` pins count as locks), pyproject.toml (`[project]` dependencies and
optional-dependencies, `[dependency-groups]`, poetry's tables), setup.py/setup.cfg `install_requires`,
Pipfile, environment.yml (conda packages and its pip section) and lock files (uv.lock, poetry.lock,
pdm.lock, Pipfile.lock, requirements*.lock). A locked package counts as declared: it is installed.
A workspace that declares nothing gets every third-party import reported, once per distribution (a
run in a clean image would fail on each). Tooling requirements (groups or files named dev, test,
lint, docs, ...) count as declared but are never reported as unpinned: they do not change results.

Which distribution provides an import name is data: pipeline/knowledge/imports.yaml.
"""

from __future__ import annotations

import ast
import configparser
import functools
import json
import os
import posixpath
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml

from ...schemas.code import CodeLocation
from ...schemas.smoke import DependencyIssue
from ..code import workspace_files
from ..code.python import parse_module
from ..files import UnreadableFile, read_regular_file
from ..nesting import YAML_LOADER, TooDeep, load_json, load_toml, load_yaml
from ..extract.knowledge import KNOWLEDGE_DIR

__all__ = [
    "ImportSite",
    "Requirement",
    "covering_names",
    "declared_requirements",
    "dependency_issues",
    "distribution_for",
    "imports_of",
    "normalize",
    "third_party_imports",
]

_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_REQUIREMENT_RE = re.compile(rf"^({_NAME})\s*(\[[^\]]*\])?\s*(.*)$")
_SPECIFIER_RE = re.compile(r"^(===|==|!=|~=|>=|<=|>|<)\s*(\S+)$")
_EGG_RE = re.compile(r"#egg=(" + _NAME + ")")
_WHEEL_RE = re.compile(r"([A-Za-z0-9_.]+)-\d[^/-]*(?:-[^/]*)?\.(?:whl|tar\.gz|zip)$")
_TOOLING_RE = re.compile(
    r"(?:^|[-_.])(dev|develop|test|tests|testing|lint|linting|docs?|typing|types|style|ci|format)(?:$|[-_.])"
)
_MAX_BYTES = 2 * 1024 * 1024
_REQUIREMENT_GLOBS = ("requirements*.txt", "requirements*.in", "requirements/*.txt", "requirements/*.in")


def normalize(name: str) -> str:
    """A distribution's name as PEP 503 compares it: `Foo_Bar.baz` → `foo-bar-baz`."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class _Vocabulary:
    modules: dict[str, str]  # import name or dotted prefix → distribution
    alternatives: dict[str, frozenset[str]]  # normalised distribution → normalised names that also provide it
    conda: dict[str, str | None]  # conda package → distribution (None: not a Python distribution)
    longest: int


@functools.cache
def _vocabulary() -> _Vocabulary:
    with open(KNOWLEDGE_DIR / "imports.yaml", encoding="utf-8") as file:
        data = yaml.load(file, Loader=YAML_LOADER)
    modules = {str(key): str(value) for key, value in data["modules"].items()}
    return _Vocabulary(
        modules=modules,
        alternatives={
            normalize(name): frozenset(normalize(other) for other in others)
            for name, others in data.get("alternatives", {}).items()
        },
        conda={normalize(key): value for key, value in data.get("conda", {}).items()},
        longest=max(key.count(".") + 1 for key in modules),
    )


def _known_prefix(module: str) -> str | None:
    """The longest dotted prefix of `module` imports.yaml names."""
    vocabulary = _vocabulary()
    parts = module.split(".")
    for size in range(min(len(parts), vocabulary.longest), 0, -1):
        prefix = ".".join(parts[:size])
        if prefix in vocabulary.modules:
            return prefix
    return None


def distribution_for(module: str) -> str:
    """The distribution that provides `module` (dotted or not): imports.yaml's, else the top-level name."""
    prefix = _known_prefix(module)
    return _vocabulary().modules[prefix] if prefix is not None else module.split(".")[0]


# ---------------------------------------------------------------------------------------------- imports


@dataclass(frozen=True)
class ImportSite:
    module: (
        str  # the absolute module imported (`torch.nn`; `google.cloud.storage` for `from google.cloud import storage`)
    )
    location: CodeLocation
    required: bool  # False under TYPE_CHECKING, a version/platform test or an ImportError guard


def imports_of(file: str, source: str) -> list[ImportSite]:
    """Every absolute import of one Python file, in source order; [] when it does not parse."""
    try:
        tree = parse_module(source, file)
    except (SyntaxError, ValueError, MemoryError, RecursionError):  # incl. CPython's parser past its limits
        return []
    sites: list[ImportSite] = []
    _collect(tree.body, file, True, sites)
    return sorted(sites, key=lambda site: (site.location.line, site.location.column))


def _collect(statements: Iterable[ast.stmt], file: str, required: bool, sites: list[ImportSite]) -> None:
    for statement in statements:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                sites.append(ImportSite(alias.name, _location(file, statement), required))
        elif isinstance(statement, ast.ImportFrom):
            if statement.level or not statement.module:
                continue
            for alias in statement.names:
                full = statement.module if alias.name == "*" else f"{statement.module}.{alias.name}"
                # `from google.cloud import storage` is google-cloud-storage; `from torch import nn` is torch.
                prefix = _known_prefix(full)
                module = prefix if prefix is not None and len(prefix) > len(statement.module) else statement.module
                sites.append(ImportSite(module, _location(file, statement), required))
        elif isinstance(statement, ast.If):
            if _is_type_checking(statement.test):
                _collect(statement.body, file, False, sites)
                _collect(statement.orelse, file, required, sites)
            else:
                conditional = required and not _is_environment_test(statement.test)
                _collect(statement.body, file, conditional, sites)
                _collect(statement.orelse, file, conditional, sites)
        elif isinstance(statement, ast.Try | ast.TryStar):
            guarded = required and not any(_catches_import_error(handler) for handler in statement.handlers)
            _collect(statement.body, file, guarded, sites)
            for handler in statement.handlers:
                _collect(handler.body, file, guarded, sites)
            _collect(statement.orelse, file, required, sites)
            _collect(statement.finalbody, file, required, sites)
        else:
            # Functions, classes, loops, with-blocks: an import there is as required as its code.
            for name in ("body", "orelse", "finalbody"):
                block = getattr(statement, name, None)
                if isinstance(block, list):
                    _collect(block, file, required, sites)
            if isinstance(statement, ast.Match):
                for case in statement.cases:
                    _collect(case.body, file, required, sites)


def _location(file: str, node: ast.stmt) -> CodeLocation:
    return CodeLocation(
        file=file,
        line=node.lineno - 1,
        column=node.col_offset,
        end_line=node.end_lineno - 1,
        end_column=node.end_col_offset,
    )


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _is_type_checking(test: ast.expr) -> bool:
    return _dotted(test).split(".")[-1] == "TYPE_CHECKING"


def _is_environment_test(test: ast.expr) -> bool:
    """`sys.version_info >= (3, 11)`, `sys.platform == "win32"`, `os.name == "nt"`, `platform.system()`."""
    for node in ast.walk(test):
        name = _dotted(node) if isinstance(node, ast.Name | ast.Attribute) else ""
        if name in {"sys.version_info", "sys.platform", "os.name", "platform.system", "sys.implementation"}:
            return True
    return False


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(
        _dotted(kind).split(".")[-1] in {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
        for kind in types
    )


def _local_modules(paths: Iterable[str]) -> set[str]:
    """The names the workspace's own code is importable by: every folder and file stem of its Python files."""
    names: set[str] = set()
    for path in paths:
        parts = path.split("/")
        names.update(parts[:-1])
        names.add(posixpath.splitext(parts[-1])[0])
    return names


# ------------------------------------------------------------------------------------------ declarations


@dataclass(frozen=True)
class Requirement:
    name: str  # as written
    text: str  # the requirement as written, for messages
    pinned: bool
    location: CodeLocation
    tooling: bool = False  # a dev/test/lint/docs requirement: declared, never reported as unpinned
    # requirement: declared by the workspace; lock: a lock file's entry (installed, exact, never reported
    # itself); constraint: a `-c` file's entry (its pin counts, but it installs nothing)
    kind: Literal["requirement", "lock", "constraint"] = "requirement"


@dataclass
class _Declarations:
    requirements: list[Requirement]
    found: bool  # the workspace has any place that declares requirements (even an empty one)


def declared_requirements(workspace: Path) -> tuple[list[Requirement], bool]:
    """Every requirement the workspace declares, lock and constraints entries included (`kind`), and
    whether it has any declaration at all."""
    root = Path(workspace).resolve()
    declarations = _Declarations([], False)
    seen: set[Path] = set()
    for pattern in _REQUIREMENT_GLOBS:
        for path in sorted(root.glob(pattern)):
            _read_requirements_file(root, path, declarations, seen, kind="requirement", tooling=_is_tooling(path))
    for path in sorted(root.glob("requirements*.lock")):
        _read_requirements_file(root, path, declarations, seen, kind="lock", tooling=False)
    for path in sorted(root.glob("constraints*.txt")):
        _read_requirements_file(root, path, declarations, seen, kind="constraint", tooling=False)
    _read_pyproject(root, declarations)
    _read_setup(root, declarations)
    _read_pipfile(root, declarations)
    _read_environment(root, declarations)
    _read_locks(root, declarations)
    return declarations.requirements, declarations.found


def _is_tooling(path: Path) -> bool:
    stem = path.name.split(".")[0]
    return bool(_TOOLING_RE.search(stem.removeprefix("requirements")))


def _read_text(path: Path) -> str | None:
    if not os.path.lexists(path):
        return None
    try:
        return read_regular_file(path, limit=_MAX_BYTES).decode("utf-8", errors="replace")
    except UnreadableFile:
        return None


def _relative(root: Path, path: Path) -> str | None:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return None


def _logical_lines(text: str) -> Iterator[tuple[int, str, str]]:
    """(0-based first line, the logical line without comment, the first physical line) of a pip
    requirements file: backslash continuations joined, ` #` comments dropped."""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        start, first, parts = index, lines[index], []
        while True:
            line = lines[index]
            index += 1
            if line.rstrip().endswith("\\") and index < len(lines):
                parts.append(line.rstrip()[:-1])
                continue
            parts.append(line)
            break
        logical = " ".join(parts)
        logical = re.split(r"(?:^|\s)#", logical, maxsplit=1)[0].strip()
        if logical:
            yield start, logical, first


def _read_requirements_file(
    root: Path, path: Path, declarations: _Declarations, seen: set[Path], *, kind: str, tooling: bool
) -> None:
    resolved = path.resolve()
    if resolved in seen:
        return
    relative = _relative(root, resolved)
    text = _read_text(resolved)
    if relative is None or text is None:
        return
    seen.add(resolved)
    declarations.found = declarations.found or kind != "constraint"
    for line, logical, first in _logical_lines(text):
        option = re.match(r"^(-r|--requirement|-c|--constraint)(?:\s*=?\s*)(\S+)", logical)
        if option:
            include = resolved.parent / option.group(2)
            constraint = option.group(1) in ("-c", "--constraint")
            # An included file is tooling by its own name: requirements-dev.txt's `-r requirements.txt` is not.
            _read_requirements_file(
                root,
                include,
                declarations,
                seen,
                kind="constraint" if constraint else kind,
                tooling=_is_tooling(include),
            )
            continue
        location = CodeLocation(
            file=relative,
            line=line,
            column=len(first) - len(first.lstrip()),
            end_line=line,
            end_column=len(first.rstrip()),
        )
        requirement = _parse_requirement(logical, location, tooling=tooling, kind=kind)
        if requirement is not None:
            declarations.requirements.append(requirement)


def _parse_requirement(
    text: str, location: CodeLocation, *, tooling: bool = False, kind: str = "requirement"
) -> Requirement | None:
    """One pip requirement (`name[extras] specifiers ; marker`, `name @ url`, `-e url#egg=name`, a
    wheel's URL); None for options, local paths and what names no distribution."""
    text = text.strip()
    editable = re.match(r"^(-e|--editable)\s*=?\s*(\S+)", text)
    if editable:
        egg = _EGG_RE.search(editable.group(2))
        if egg is None:
            return None  # `-e .`: the workspace itself, or a local folder
        return Requirement(egg.group(1), text, _url_is_pinned(editable.group(2)), location, tooling, kind)
    if text.startswith("-"):
        return None  # --index-url, --find-links, --hash, --pre, ...
    text = re.split(r"\s+--?[a-z]", text, maxsplit=1)[0]  # per-requirement options: --hash=..., --config-settings
    if "://" in text.split("@")[0] or text.startswith(("git+", "hg+", "svn+", "bzr+")):
        egg = _EGG_RE.search(text)
        wheel = _WHEEL_RE.search(text.split("#")[0])
        name = egg.group(1) if egg else wheel.group(1) if wheel else None
        return Requirement(name, text, _url_is_pinned(text), location, tooling, kind) if name else None
    if text.startswith((".", "/", "~")) or text.endswith((".whl", ".tar.gz", ".zip")):
        return None  # a local path
    match = _REQUIREMENT_RE.match(text)
    if match is None:
        return None
    name, rest = match.group(1), match.group(3).split(";")[0].strip()
    if rest.startswith("@"):
        return Requirement(name, text, _url_is_pinned(rest[1:].strip()), location, tooling, kind)
    return Requirement(name, text, _specifier_is_pinned(rest), location, tooling, kind)


def _specifier_is_pinned(specifier: str) -> bool:
    """`==1.2.3` or `===1.2.3` (not `==1.*`) among the comma-separated specifiers."""
    for part in specifier.strip().strip("()").split(","):
        match = _SPECIFIER_RE.match(part.strip())
        if match and match.group(1) in ("==", "===") and not match.group(2).endswith("*"):
            return True
    return False


def _url_is_pinned(url: str) -> bool:
    """An archive is one fixed artifact; a VCS URL is fixed by an `@rev` (a commit or tag), not without."""
    url = url.split("#")[0]
    if re.match(r"^(git|hg|svn|bzr)\+", url):
        return bool(re.search(r"@[^/@]+$", url.split("://", 1)[-1]))
    return True


def _line_of(lines: list[str], needle: str, start: int = 0) -> int:
    for index in range(start, len(lines)):
        if needle in lines[index]:
            return index
    for index in range(min(start, len(lines))):
        if needle in lines[index]:
            return index
    return 0


def _header_line(lines: list[str], header: str) -> int:
    pattern = re.compile(r"^\s*\[+\s*" + re.escape(header) + r"\s*\]+\s*(#.*)?$")
    return next((index for index, line in enumerate(lines) if pattern.match(line)), 0)


def _text_location(relative: str, lines: list[str], line: int) -> CodeLocation:
    text = lines[line] if line < len(lines) else ""
    return CodeLocation(
        file=relative, line=line, column=len(text) - len(text.lstrip()), end_line=line, end_column=len(text.rstrip())
    )


def _read_toml(path: Path) -> tuple[dict, list[str]] | None:
    """A TOML file's data and its lines (to locate entries); None when missing or malformed."""
    text = _read_text(path)
    if text is None:
        return None
    try:
        return load_toml(text), text.splitlines()
    except ValueError:  # not TOML, or nested past reading
        return None


def _read_pyproject(root: Path, declarations: _Declarations) -> None:
    if (read := _read_toml(root / "pyproject.toml")) is None:
        return
    data, lines = read

    def add(entries: object, header: str, tooling: bool) -> None:
        if not isinstance(entries, list):
            return
        declarations.found = True
        start = _header_line(lines, header)
        for entry in entries:
            if not isinstance(entry, str):
                continue  # {include-group = ...}
            line = _line_of(lines, f'"{entry}"', start) or _line_of(lines, f"'{entry}'", start)
            requirement = _parse_requirement(entry, _text_location("pyproject.toml", lines, line), tooling=tooling)
            if requirement is not None:
                declarations.requirements.append(requirement)

    project = data.get("project")
    if isinstance(project, dict):
        add(project.get("dependencies"), "project", False)
        optional = project.get("optional-dependencies")
        if isinstance(optional, dict):
            for group, entries in optional.items():
                add(entries, "project.optional-dependencies", bool(_TOOLING_RE.search(group)))
    groups = data.get("dependency-groups")
    if isinstance(groups, dict):
        for group, entries in groups.items():
            add(entries, "dependency-groups", bool(_TOOLING_RE.search(group)))
    poetry = data.get("tool", {}).get("poetry") if isinstance(data.get("tool"), dict) else None
    if isinstance(poetry, dict):
        tables = [("tool.poetry.dependencies", poetry.get("dependencies"), False)]
        tables.append(("tool.poetry.dev-dependencies", poetry.get("dev-dependencies"), True))
        for group, table in (poetry.get("group") or {}).items():
            if isinstance(table, dict):
                tables.append(
                    (
                        f"tool.poetry.group.{group}.dependencies",
                        table.get("dependencies"),
                        bool(_TOOLING_RE.search(group)),
                    )
                )
        for header, table, tooling in tables:
            if isinstance(table, dict):
                _add_poetry_table(table, header, tooling, lines, "pyproject.toml", declarations)


def _add_poetry_table(
    table: dict, header: str, tooling: bool, lines: list[str], relative: str, declarations: _Declarations
) -> None:
    """poetry's `name = "^1.2"` / `{version = ...}` / `{git = ..., rev = ...}`; Pipfile's the same shape."""
    declarations.found = True
    start = _header_line(lines, header)
    for name, spec in table.items():
        if normalize(name) == "python":
            continue
        if isinstance(spec, dict):
            if "path" in spec:
                continue
            if "git" in spec:
                pinned = any(key in spec for key in ("rev", "tag"))
            else:
                pinned = _poetry_version_is_pinned(str(spec.get("version", "*")))
        elif isinstance(spec, list):
            pinned = False  # several constraints by marker
        else:
            pinned = _poetry_version_is_pinned(str(spec))
        line = _line_of_key(lines, name, start)
        declarations.requirements.append(
            Requirement(name, f"{name} = {json.dumps(spec)}", pinned, _text_location(relative, lines, line), tooling)
        )


def _line_of_key(lines: list[str], key: str, start: int) -> int:
    pattern = re.compile(r"^\s*[\"']?" + re.escape(key) + r"[\"']?\s*=")
    for index in list(range(start, len(lines))) + list(range(min(start, len(lines)))):
        if pattern.match(lines[index]):
            return index
    return start


def _poetry_version_is_pinned(version: str) -> bool:
    """poetry and Pipfile: a bare `1.2.3` is exact in poetry, `==1.2.3` in both; `^`, `~`, `*`, ranges are not."""
    version = version.strip()
    if re.fullmatch(r"\d+(\.\d+)*([a-z0-9.+-]*)", version):
        return True
    return _specifier_is_pinned(version)


def _read_setup(root: Path, declarations: _Declarations) -> None:
    """`install_requires` and `extras_require` as literal lists in setup.py (or a module-level name bound
    to one), and setup.cfg's `[options] install_requires`."""
    text = _read_text(root / "setup.py")
    if text is not None:
        try:
            tree = parse_module(text, "setup.py")
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            tree = None
        if tree is not None:
            lines = text.splitlines()
            names = {
                target.id: node.value
                for node in tree.body
                if isinstance(node, ast.Assign)
                for target in node.targets
                if isinstance(target, ast.Name)
            }
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Call) and _dotted(node.func).split(".")[-1] == "setup"):
                    continue
                for keyword in node.keywords:
                    value = (
                        names.get(keyword.value.id, keyword.value)
                        if isinstance(keyword.value, ast.Name)
                        else keyword.value
                    )
                    if keyword.arg == "install_requires":
                        lists = [(value, False)]
                    elif keyword.arg in ("extras_require", "tests_require") and isinstance(value, ast.Dict):
                        lists = [
                            (
                                item,
                                keyword.arg == "tests_require"
                                or bool(_TOOLING_RE.search(str(getattr(key, "value", "")))),
                            )
                            for key, item in zip(value.keys, value.values, strict=True)
                        ]
                    else:
                        continue
                    for items, tooling in lists:
                        if not isinstance(items, ast.List | ast.Tuple):
                            continue
                        declarations.found = True
                        for item in items.elts:
                            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                                location = _text_location("setup.py", lines, item.lineno - 1)
                                requirement = _parse_requirement(item.value, location, tooling=tooling)
                                if requirement is not None:
                                    declarations.requirements.append(requirement)
    text = _read_text(root / "setup.cfg")
    if text is not None:
        parser = configparser.ConfigParser()
        try:
            parser.read_string(text)
        except configparser.Error:
            return
        if parser.has_option("options", "install_requires"):
            declarations.found = True
            lines = text.splitlines()
            start = _header_line(lines, "options")
            for entry in parser.get("options", "install_requires").splitlines():
                entry = entry.split("#")[0].strip()
                if entry:
                    location = _text_location("setup.cfg", lines, _line_of(lines, entry, start))
                    requirement = _parse_requirement(entry, location)
                    if requirement is not None:
                        declarations.requirements.append(requirement)


def _read_pipfile(root: Path, declarations: _Declarations) -> None:
    if (read := _read_toml(root / "Pipfile")) is None:
        return
    data, lines = read
    for header, tooling in (("packages", False), ("dev-packages", True)):
        if isinstance(data.get(header), dict):
            _add_poetry_table(data[header], header, tooling, lines, "Pipfile", declarations)


def _read_environment(root: Path, declarations: _Declarations) -> None:
    """environment.yml: conda packages (mapped by imports.yaml's `conda`) and the `pip:` section."""
    for name in ("environment.yml", "environment.yaml"):
        text = _read_text(root / name)
        if text is None:
            continue
        try:
            data = load_yaml(text)
        except (yaml.YAMLError, TooDeep):
            continue
        dependencies = data.get("dependencies") if isinstance(data, dict) else None
        if not isinstance(dependencies, list):
            continue
        declarations.found = True
        lines = text.splitlines()
        conda = _vocabulary().conda
        for entry in dependencies:
            if isinstance(entry, dict) and isinstance(entry.get("pip"), list):
                start = _line_of(lines, "pip:")
                for pip_entry in entry["pip"]:
                    if not isinstance(pip_entry, str):
                        continue
                    location = _text_location(name, lines, _line_of(lines, pip_entry, start))
                    if pip_entry.startswith(("-r", "--requirement")):
                        include = root / pip_entry.split(None, 1)[-1].split("=", 1)[-1].strip()
                        _read_requirements_file(root, include, declarations, set(), kind="requirement", tooling=False)
                        continue
                    requirement = _parse_requirement(pip_entry, location)
                    if requirement is not None:
                        declarations.requirements.append(requirement)
            elif isinstance(entry, str):
                spec = entry.split("::")[-1].strip()
                match = re.match(rf"^({_NAME})\s*(.*)$", spec)
                if match is None:
                    continue
                package, version = match.group(1), match.group(2).strip()
                mapped = conda.get(normalize(package), package)
                if mapped is None:
                    continue
                location = _text_location(name, lines, _line_of(lines, entry))
                declarations.requirements.append(Requirement(mapped, entry, _conda_is_pinned(version), location))


def _conda_is_pinned(version: str) -> bool:
    """`==1.2.3`, `=1.2.3` (three parts or more), or `1.2.3 build` (a space-separated exact spec)."""
    if version.startswith("=="):
        return not version.endswith("*")
    exact = re.fullmatch(r"=?(\d+(?:\.\d+){2,}[^\s*,|<>]*)(?:\s+\S+)?", version)
    return exact is not None


def _read_locks(root: Path, declarations: _Declarations) -> None:
    """uv.lock, poetry.lock, pdm.lock (`[[package]] name`) and Pipfile.lock (JSON): every entry is
    installed at an exact version."""
    for name in ("uv.lock", "poetry.lock", "pdm.lock"):
        text = _read_text(root / name)
        if text is None:
            continue
        try:
            packages = load_toml(text).get("package", [])
        except ValueError:
            continue
        declarations.found = True
        lines = text.splitlines()
        for package in packages if isinstance(packages, list) else []:
            if isinstance(package, dict) and isinstance(package.get("name"), str):
                line = _line_of(lines, f'name = "{package["name"]}"')
                declarations.requirements.append(
                    Requirement(package["name"], package["name"], True, _text_location(name, lines, line), kind="lock")
                )
    text = _read_text(root / "Pipfile.lock")
    if text is not None:
        try:
            data = load_json(text)
        except ValueError:
            return
        declarations.found = True
        lines = text.splitlines()
        for section in ("default", "develop"):
            for package in data.get(section, {}) if isinstance(data, dict) else {}:
                line = _line_of(lines, f'"{package}"')
                declarations.requirements.append(
                    Requirement(package, package, True, _text_location("Pipfile.lock", lines, line), kind="lock")
                )


def _own_distributions(root: Path) -> set[str]:
    """The workspace's own distribution names (pyproject's `[project]` or poetry's `name`): importing
    itself needs no requirement."""
    text = _read_text(root / "pyproject.toml")
    try:
        data = load_toml(text) if text is not None else {}
    except ValueError:
        return set()
    tool = data.get("tool") if isinstance(data.get("tool"), dict) else {}
    names = [
        (data.get("project") or {}).get("name") if isinstance(data.get("project"), dict) else None,
        (tool.get("poetry") or {}).get("name") if isinstance(tool.get("poetry"), dict) else None,
    ]
    return {normalize(name) for name in names if isinstance(name, str)}


# ------------------------------------------------------------------------------------------------ issues


def third_party_imports(
    workspace: Path, include: list[str] | None = None, exclude: list[str] | None = None
) -> Iterator[tuple[ImportSite, str]]:
    """(import site, distribution) for every import a distribution must provide: required, not the
    standard library, not the workspace's own modules or distribution; files in path order, then lines."""
    root = Path(workspace).resolve()
    # setup.py is a build script: its imports (setuptools) are build requirements, not the code's.
    paths = [
        path
        for path in workspace_files(root, include or ["**/*.py"], exclude)
        if path.endswith(".py") and path != "setup.py"
    ]
    # Every Python file counts for what is the workspace's own, whatever `include`/`exclude` check.
    local = _local_modules(workspace_files(root, ["**/*.py"]))
    own = _own_distributions(root)
    for path in paths:
        source = _read_text(root / path)
        if source is None:
            continue
        for site in imports_of(path, source):
            top = site.module.split(".")[0]
            if not site.required or top in sys.stdlib_module_names or top in local or top == "__main__":
                continue
            distribution = distribution_for(site.module)
            if normalize(distribution) not in own:
                yield site, distribution


def covering_names(module: str, distribution: str) -> set[str]:
    """The normalised requirement names any of which, declared, covers an import of `module`."""
    key = normalize(distribution)
    names = {key} | _vocabulary().alternatives.get(key, frozenset())
    if _known_prefix(module) is None:
        # A module imports.yaml does not know: its distribution may be spelled around it.
        names |= {f"python-{key}", f"{key}-python", f"py{key}", f"{key}-py"}
    return names


def dependency_issues(
    workspace: Path, include: list[str] | None = None, exclude: list[str] | None = None
) -> list[DependencyIssue]:
    """Imports no declaration covers (once per distribution, at the first import site), then
    requirements without an exact version that nothing locks (at their line)."""
    root = Path(workspace).resolve()
    requirements, found = declared_requirements(root)
    declared = {normalize(requirement.name) for requirement in requirements if requirement.kind != "constraint"}
    pinned = {normalize(requirement.name) for requirement in requirements if requirement.pinned}

    issues: list[DependencyIssue] = []
    reported: set[str] = set()
    for site, distribution in third_party_imports(root, include, exclude):
        key = normalize(distribution)
        if key in reported or covering_names(site.module, distribution) & declared:
            continue
        reported.add(key)
        top = site.module.split(".")[0]
        where = (
            "the workspace declares no requirements" if not found else f"{distribution} is not in its requirements"
        )
        issues.append(
            DependencyIssue(
                kind="missing-requirement",
                module=top if _known_prefix(site.module) in (None, top) else site.module,
                distribution=distribution,
                message=f"`{site.module}` is imported but {where}: add `{distribution}` (with a pinned version).",
                location=site.location,
            )
        )
    for requirement in requirements:
        key = normalize(requirement.name)
        if requirement.kind != "requirement" or requirement.tooling or key in pinned:
            continue
        issues.append(
            DependencyIssue(
                kind="unpinned",
                distribution=requirement.name,
                message=f"`{requirement.text}` has no exact version and no lock file fixes it: pin it "
                f"(`{requirement.name}==<version>`) so a rerun installs what this run did.",
                location=requirement.location,
            )
        )
    return issues

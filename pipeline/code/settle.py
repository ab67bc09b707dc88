"""What a file's sites owe to the rest of the workspace: which defaults calls override, which code never
runs, which config files the code names.

Everything here is computed from FileIndex data alone (the calls, imports and definitions each file
records), never from sources, so a workspace settles in one cheap pass after any file changes, and
a file whose flags do not change keeps its very FileIndex object.
"""

from __future__ import annotations

import bisect
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ...schemas.code import CallArguments, ConfigReference, FileIndex, FunctionSite, ValueSite

# Defaults a call can replace, and those an attribute assignment can (cfg.lr = ..., args.lr = ...).
REPLACEABLE_KINDS = ("function-default", "config-default", "argparse-default")


@dataclass(slots=True)
class PassedArguments:
    """What every call of one callee passes, merged."""

    keywords: set[str] = field(default_factory=set)
    positional: int = 0
    unpacked: bool = False

    def add(self, call: CallArguments) -> None:
        self.keywords.update(call.keywords)
        self.positional = max(self.positional, call.positional)
        self.unpacked = self.unpacked or call.unpacked

    def sets(self, parameter: str, parameters: list[str]) -> bool:
        if self.unpacked or parameter in self.keywords:
            return True
        return parameter in parameters and parameters.index(parameter) < self.positional


@dataclass(frozen=True, slots=True)
class WorkspaceFacts:
    calls: dict[str, PassedArguments]
    # Names some file imports (or a config names as a target); None for a file read on its own,
    # where any public name may be imported by a file not read.
    imported: frozenset[str] | None = None
    assigned: frozenset[str] = frozenset()  # attributes some file sets on an object (cfg.lr = ...)
    counted: frozenset[str] = frozenset()  # attributes some file adds to on an object (trainer.step += 1)
    config_files: frozenset[str] = frozenset()
    # The flags launchers pass: per script file they run, and all of them (a script not found included).
    launched: Mapping[str, frozenset[str]] = field(default_factory=dict)
    passed: frozenset[str] = frozenset()

    def is_imported(self, name: str, module: str) -> bool:
        if self.imported is None:
            return not name.startswith("_")
        return name in self.imported or f"{module}.*" in self.imported

    def replaces(self, file: str, kind: str, name: str) -> bool:
        """Whether something replaces a config or command-line default `name` of `file`: an assignment
        (`cfg.lr = ...`), or a launcher's flag — for a script some command runs, only that script's
        commands' flags (`python eval.py --lr 0` leaves train.py's `--lr` default as it is)."""
        if name in self.assigned:
            return True
        if kind == "argparse-default" and file in self.launched:
            return name in self.launched[file]
        return name in self.passed  # a parser a launched script imports, a config's key, a dataclass field


def merge_calls(
    call_lists: Iterable[list[CallArguments]], wanted: set[str] | None = None
) -> dict[str, PassedArguments]:
    """What calls pass, per callee (only the `wanted` ones: those whose defaults someone reads)."""
    merged: dict[str, PassedArguments] = {}
    for calls in call_lists:
        for call in calls:
            if wanted is not None and call.callee not in wanted:
                continue
            passed = merged.get(call.callee)
            if passed is None:
                passed = merged[call.callee] = PassedArguments()
            passed.add(call)
    return merged


def _facts_of(files: list[FileIndex], wanted: set[str], paths: set[str] | None = None) -> WorkspaceFacts:
    launched, passed = _launched(files, paths if paths is not None else {file.file for file in files})
    return WorkspaceFacts(
        calls=merge_calls((file.calls for file in files), wanted),
        imported=frozenset(name for file in files for name in file.imported_names),
        assigned=frozenset(name for file in files for name in file.assigned_attributes),
        counted=frozenset(name for file in files for name in file.counted_attributes),
        config_files=frozenset(file.file for file in files if file.language != "python"),
        launched=launched,
        passed=passed,
    )


def _launched(files: list[FileIndex], paths: set[str]) -> tuple[dict[str, frozenset[str]], frozenset[str]]:
    """The flags launchers pass to each script file of the workspace (`paths`) they run (the script as
    written, beside the launcher or from the workspace's root), and every flag any of them passes."""
    launched: dict[str, set[str]] = {}
    passed: set[str] = set()
    for file in files:
        for launch in file.launches:
            passed.update(launch.flags)
            script = _script_file(file.file, launch.script, paths) if launch.script else None
            if script is not None:
                launched.setdefault(script, set()).update(launch.flags)
    return {script: frozenset(flags) for script, flags in launched.items()}, frozenset(passed)


def _script_file(launcher: str, script: str, paths: set[str]) -> str | None:
    for base in (posixpath.dirname(launcher), ""):
        for candidate in (f"{script}.py", f"{script}/__main__.py"):
            path = posixpath.normpath(posixpath.join(base, candidate))
            if path in paths:
                return path
    return None


@dataclass(frozen=True, slots=True)
class OtherFiles:
    """What the rest of the workspace says of one file, gathered once for a document edited many times."""

    calls: dict[str, tuple[CallArguments, ...]]  # callee → what the other files' calls pass it
    facts: WorkspaceFacts  # the rest, calls aside

    @classmethod
    def of(cls, files: list[FileIndex], document: str) -> OtherFiles:
        """What `files` say of the open `document` (a launcher's `python train.py` runs it)."""
        calls: dict[str, list[CallArguments]] = {}
        for file in files:
            for call in file.calls:
                calls.setdefault(call.callee, []).append(call)
        paths = {file.file for file in files} | {document}
        return cls({callee: tuple(c) for callee, c in calls.items()}, _facts_of(files, set(), paths))


def settle_one(file: FileIndex, others: OtherFiles) -> FileIndex:
    """One file (an editor's open document) settled against itself and the rest of the workspace,
    as `settle_workspace` settles it: what its callers override, what nothing imports. (A launcher
    being edited does not yet change what its flags replace elsewhere: that follows its save.)"""
    wanted = set(_Needs.of(file).callees)
    rest = others.facts
    facts = WorkspaceFacts(
        calls=merge_calls([[c for callee in wanted for c in others.calls.get(callee, ())], file.calls], wanted),
        imported=(rest.imported or frozenset()) | set(file.imported_names),
        assigned=rest.assigned | set(file.assigned_attributes),
        counted=rest.counted | set(file.counted_attributes),
        config_files=rest.config_files | ({file.file} if file.language != "python" else set()),
        launched=rest.launched,
        passed=rest.passed,
    )
    return settle(file, facts)


def settle_workspace(files: list[FileIndex]) -> list[FileIndex]:
    """Every file settled against what all the files say. A file settled before (the same object, or
    what settling it gave) against facts that say the same about it is not looked at again: one
    edit costs the edited file, not the workspace."""
    known = [_last_settled.get(id(file)) for file in files]
    needs = [
        entry.needs if entry is not None and entry.file is file else _Needs.of(file)
        for entry, file in zip(known, files, strict=True)
    ]
    facts = _facts_of(files, {callee for need in needs for callee in need.callees})
    memo: dict[int, _Settled] = {}
    settled = []
    for file, entry, need in zip(files, known, needs, strict=True):
        fingerprint = need.fingerprint(facts)
        if entry is not None and entry.file is file and fingerprint == entry.fingerprint:
            result = entry.result
        else:
            result = settle(file, facts)
        memo[id(file)] = _Settled(file, need, fingerprint, result)
        memo[id(result)] = _Settled(result, need, fingerprint, result)  # settling a result again gives it back
        settled.append(result)
    _last_settled.clear()
    _last_settled.update(memo)
    return settled


def settle(index: FileIndex, facts: WorkspaceFacts) -> FileIndex:
    """`index` with `overridden`, `live` and resolved config references recomputed from `facts`; the same
    object when none changes."""
    update: dict[str, list] = {}
    dead = _dead_spans(index, facts)
    values = _with_overrides(index, facts)
    values = _with_liveness(values, dead)
    if values is not index.values:
        update["values"] = values
    if (components := _with_liveness(index.components, dead)) is not index.components:
        update["components"] = components
    if (references := _resolved_references(index, facts.config_files)) is not None:
        update["config_references"] = references
    return index.model_copy(update=update) if update else index


@dataclass(frozen=True, slots=True)
class _Needs:
    """What settling one file looks up in the workspace's facts."""

    callees: tuple[str, ...]  # callers of its defaults
    assigned: tuple[tuple[str, str], ...]  # (kind, name) of its config and command-line defaults something may replace
    starts: tuple[str, ...]  # attributes its classes start (self.step = 0), which a count elsewhere makes counters
    unused: tuple[str, ...]  # its module-level definitions its own file never uses
    module: str
    references: bool  # whether it names config files
    file: str

    @classmethod
    def of(cls, index: FileIndex) -> _Needs:
        functions = {function.qualname: function for function in index.functions}
        callees = {_callee_name(functions[site.call]) for site in index.values if site.call in functions}
        assigned = {
            (site.kind, _replaced_name(site)) for site in index.values if site.kind in ("config-default", "argparse-default")
        }
        unused = [f.name for f in index.functions if not f.used_in_file and "." not in f.qualname]
        starts = {attribute for site in index.values if (attribute := _started_attribute(site))}
        return cls(
            tuple(callees),
            tuple(assigned),
            tuple(starts),
            tuple(unused),
            _module_name(index.file),
            bool(index.config_references),
            index.file,
        )

    def fingerprint(self, facts: WorkspaceFacts) -> tuple:
        return (
            tuple(facts.calls.get(callee) for callee in self.callees),
            tuple(facts.replaces(self.file, kind, name) for kind, name in self.assigned),
            tuple(name in facts.counted for name in self.starts),
            tuple(facts.is_imported(name, self.module) for name in self.unused),
            facts.config_files if self.references else None,
        )


@dataclass(frozen=True, slots=True)
class _Settled:
    file: FileIndex
    needs: _Needs
    fingerprint: tuple
    result: FileIndex


# The last settling, by id of the file settled: a memo like functools.cache, holding the files alive
# (so no id is reused) and only those of the latest call.
_last_settled: dict[int, _Settled] = {}


def _with_overrides(index: FileIndex, facts: WorkspaceFacts) -> list[ValueSite]:
    """The values with `overridden` recomputed for defaults, and for values that flowed from them."""
    values = index.values
    functions = None
    defaults: dict[tuple[int, int], bool] = {}
    changes: dict[int, bool] = {}
    for position, site in enumerate(values):
        if (attribute := _started_attribute(site)) is not None:
            if (attribute in facts.counted) != site.overridden:
                changes[position] = attribute in facts.counted  # another function counts with it
        elif site.kind in REPLACEABLE_KINDS:
            if functions is None:
                functions = {function.qualname: function for function in index.functions}
            overridden = _is_overridden(site, functions, facts)
            defaults[(site.location.line, site.location.column)] = overridden
            if overridden != site.overridden:
                changes[position] = overridden
    if defaults:
        for position, site in enumerate(values):
            origin = site.resolved_from
            if origin is not None and site.kind not in REPLACEABLE_KINDS and origin.file == index.file:
                overridden = defaults.get((origin.line, origin.column))  # overridden with the default it came from
                if overridden is not None and overridden != site.overridden:
                    changes[position] = overridden
    if not changes:
        return values
    return [
        site.model_copy(update={"overridden": changes[position]}) if position in changes else site
        for position, site in enumerate(values)
    ]


def _is_overridden(site: ValueSite, functions: dict[str, FunctionSite], facts: WorkspaceFacts) -> bool:
    if site.kind != "function-default" and facts.replaces(site.location.file, site.kind, _replaced_name(site)):
        return True
    function = functions.get(site.call or "")
    if function is None:
        return False
    passed = facts.calls.get(_callee_name(function))
    return passed is not None and passed.sets(site.name, function.parameters)


def _started_attribute(site: ValueSite) -> str | None:
    """`step` for `self.step = 0`: a class's attribute starting from zero (a count, when some code
    adds to it; `self.epochs = 100` stays a setting whatever adds to an `epochs` elsewhere)."""
    owner, _, attribute = site.name.partition(".")
    if site.kind != "assignment" or owner not in ("self", "cls") or "." in attribute or site.resolved_from is not None:
        return None
    return attribute if type(site.value) in (int, float) and site.value == 0 else None


def _replaced_name(site: ValueSite) -> str:
    """The attribute that replaces a default: `lr` for a field lr, `batch_size` for --batch-size."""
    return site.name.lstrip("-").replace("-", "_")


def _callee_name(function: FunctionSite) -> str:
    """What callers call: `Foo` for Foo.__init__ and a dataclass Foo, `bar` for Foo.bar."""
    parts = function.qualname.split(".")
    if parts[-1] == "__init__" and len(parts) > 1:
        return parts[-2]
    return parts[-1]


def _module_name(file: str) -> str:
    module = posixpath.splitext(posixpath.basename(file))[0]
    return posixpath.basename(posixpath.dirname(file)) if module == "__init__" else module


def _dead_spans(index: FileIndex, facts: WorkspaceFacts) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    module = _module_name(index.file)
    spans = [*index.dead_code]
    spans += [
        function.location
        for function in index.functions
        if not function.used_in_file and "." not in function.qualname and not facts.is_imported(function.name, module)
    ]
    return [((span.line, span.column), (span.end_line, span.end_column)) for span in spans]


def _with_liveness(sites: list, dead: list[tuple[tuple[int, int], tuple[int, int]]]) -> list:
    """The sites with `live` set from the dead spans; the same list when no site changes."""
    # The spans merged into disjoint ones, sorted, so each site is one bisection (spans nest and overlap).
    merged: list[list[tuple[int, int]]] = []
    for start, end in sorted(dead):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    starts = [start for start, _ in merged]
    changes = {}
    for position, site in enumerate(sites):
        point = (site.location.line, site.location.column)
        at = bisect.bisect_right(starts, point) - 1
        live = at < 0 or point > merged[at][1]
        if live != site.live:
            changes[position] = live
    if not changes:
        return sites
    return [
        site.model_copy(update={"live": changes[position]}) if position in changes else site
        for position, site in enumerate(sites)
    ]


def _resolved_references(index: FileIndex, config_files: frozenset[str]) -> list[ConfigReference] | None:
    if not index.config_references:
        return None
    changed = False
    references = []
    for reference in index.config_references:
        resolved = resolve_config_path(reference.path, index.file, config_files)
        if resolved != reference.resolved:
            reference = reference.model_copy(update={"resolved": resolved})
            changed = True
        references.append(reference)
    return references if changed else None


def resolve_config_path(path: str, referrer: str, config_files: frozenset[str]) -> str | None:
    """The workspace config file a path names: relative to the referring file, to the workspace root,
    or else the one file whose path ends with it (code often runs from another folder)."""
    path = path.replace("\\", "/")
    for candidate in (posixpath.join(posixpath.dirname(referrer), path), path):
        normalized = posixpath.normpath(candidate)
        if normalized in config_files:
            return normalized
    tail = "/" + posixpath.normpath(path).lstrip("/")
    matches = [file for file in config_files if ("/" + file).endswith(tail)]
    return matches[0] if len(matches) == 1 else None

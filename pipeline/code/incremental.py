"""Re-indexing a Python file after an edit, reading again only what the edit touched: the result is
`index_python` on the new text (tests/test_incremental_index.py checks it over random edits).

An editor keeps, per open document, the FileIndex of its last analysis and the text it was made from:
`index_document(path, text)` for the first analysis (a full read that keeps what the next edit
needs), then `index_edit(previous, previous_text, text)` for every edit. What is kept lives here
(the last few texts, by path and content hash), so any FileIndex of the previous text will do.

Segments. A file's top-level statements are cut into *segments*: runs of statements that share no line
with their neighbours, with only a comment after a segment's last statement on its line and only
blank or comment lines between segments. At the start of any line outside a segment the tokenizer
stands at a new logical line with no bracket open, so any run of whole segments and the lines
between them parses alone as it does inside the file (put after as many newlines as lines before
it, with the file's line numbers). The statements of a file whose segments cannot be told apart
(code outside any statement's span) are indexed in full every time.

The region. The lines an edit changed are those outside the texts' common prefix and suffix (whole
lines, line breaks included). The region runs from the end of the last segment before them to the
start of the first segment after them; its new text is parsed alone. When that fails, or the new
text leaves code outside its statements at its edges (an indented line that now belongs to the
block before, a decorator whose def is below), the region takes in one more segment on each side,
twice; then the whole file is indexed (also what reports a syntax error).

The walk. python.py's `_Indexer` reads the top-level statements in order, each against what the
statements before it left: the module scope's known values (`env`), the imports (`_aliases`,
`_library_star`), and what its pre-pass computed over the whole file (module constants, the
parameters of the file's own functions and classes). Each of those is read by a name the statement
writes (a Name, an import's alias, a callee), so a segment's walk depends on that state only
through the identifiers its text mentions (`_names`). Kept per segment: what walking it gave, and
what it changed in that state. After an edit, the pre-pass runs again on all statements (cheap),
the region's segments are walked, and any other segment is walked again only when the state, for a
name it mentions, differs from what it was when the segment was last walked (a changed constant:
the segments that read it); else what it gave is reused, with its lines moved by the lines the edit
inserted or deleted. The memo of looked-up callables is keyed by what a look-up reads
(`_Indexer._signature`), so it cannot carry one statement's look-up into another's.

What accumulates over the file (names used, imports, calls per callee, attributes assigned, the
module's running totals, definitions' header lines) is kept per segment and merged; then the end
of the walk (running totals, unused definitions, anchors, settling) is done on the merged result, as
`index_python` does it (`_file_index`).

Read in full instead: no kept state for the previous text (its first edit, or it did not parse,
held a null byte, a statement after which nothing runs at module level other than the last, or
code outside any statement); a region that does not parse; a walk that recursed too deep; a
python.py whose walk no longer has the shape this module knows (`incremental_enabled`: then every
edit is read in full, and the test says so).

`definitions_of(source, path)` serves the equation checks: the def or class on a line, from the
kept segments (parsing only that segment again when the edit moved it) rather than a parse of the
whole text.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import functools
import hashlib
import inspect
import posixpath
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ...schemas.code import CodeLocation, FileIndex
from . import python as _python
from .anchors import TextBlock
from .python import _Binding, _Definition, _file_index, _Indexer, _Scope, bounded_statements, index_python, parse_module, unread_lines
from .sites import SourceText

__all__ = ["definitions_of", "incremental_enabled", "index_document", "index_edit"]

_WIDENINGS = 2  # times a region that does not parse alone takes in one more segment on each side
_KEPT_PER_DOCUMENT = 2  # texts kept per path: its latest, and the one before (an analysis that ends late)
_KEPT_DOCUMENTS = 8  # paths with kept texts (the documents edited last)
_BLANK_OR_COMMENT = re.compile(r"[ \t\f]*(?:#.*)?")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORD = re.compile(r"\w+")
_CHUNK = 4096

_MODULE = object()  # the owner of a running-total start that is the module scope (one per walk)
_UNKNOWN_NAMES = object()  # a segment's names not yet read from its text


class _ReadInFull(Exception):
    """The edit cannot be read incrementally (or a walk found a case it does not handle)."""


# --- what is kept ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Walked:
    """What walking one segment gave, in the coordinates of the text it was walked in (or moved to)."""

    values: list
    components: list
    docstrings: list[TextBlock]
    dead: list[CodeLocation]
    config_references: list
    definitions: list[_Definition]
    starts: list[tuple]  # running-total starts: (owner scope or _MODULE, name, value, start, end) in `values`
    used: set[str]
    imported: set[str]
    assigned: set[str]
    counted: set[str]
    calls: dict[str, list]  # callee → [keywords, positional, unpacked], as _Indexer._calls
    headers: dict[int, str]
    accumulated: dict[str, set[str]]  # what it adds to the module scope's running totals
    env: dict[str, _Binding | None]  # module-scope names it rebinds (None: forgets)
    aliases: dict[str, str]  # imports it changes
    star: bool  # `_library_star` after it
    terminators: list[int]  # positions of its statements after which nothing runs
    first: bool  # walked as the module's first segment (whose docstring is the module's)
    far: int  # the last line a location it gave or bound points to (resolved_from may point anywhere)


@dataclass(slots=True)
class _Segment:
    start: int  # first and last line of its statements (0-based, inclusive)
    end: int
    text: str  # lines start..end of the source, with their line breaks
    # Its statements, and the line they are numbered as starting at (one tuple: read and replaced
    # at once, as another thread's equation check may parse a moved segment again).
    parsed: tuple[list[ast.stmt], int]
    walked: _Walked | None = None
    names: object = _UNKNOWN_NAMES  # frozenset of the identifiers its text mentions; None: any name

    def fresh_nodes(self) -> list[ast.stmt]:
        """Its statements numbered where it now stands (parsed again alone when the edit moved it)."""
        nodes, start = self.parsed
        if start != self.start:
            nodes = bounded_statements(ast.parse("\n" * self.start + self.text).body)[0]  # it was read: none is too deep
            self.parsed = (nodes, self.start)
        return nodes

    @property
    def nodes(self) -> list[ast.stmt]:
        """Its statements, wherever they are numbered (for what does not read their lines)."""
        return self.parsed[0]


@dataclass(slots=True)
class _State:
    """A text indexed by this module: what the next edit of it starts from."""

    path: str
    source: str
    text: SourceText
    segments: list[_Segment]
    module_env: dict[str, _Binding]
    local_parameters: dict[str, list[str]]
    index: FileIndex


# Per path, its kept texts, the latest last; the paths edited last, last. Few: what is kept holds the
# file's syntax tree, which the garbage collector walks at each full collection.
_states: OrderedDict[str, list[_State]] = OrderedDict()
_lock = threading.Lock()


def _keep(state: _State) -> None:
    with _lock:
        kept = [s for s in _states.pop(state.path, []) if s.index.sha256 != state.index.sha256]
        _states[state.path] = [*kept, state][-_KEPT_PER_DOCUMENT:]
        while len(_states) > _KEPT_DOCUMENTS:
            _states.popitem(last=False)


def _state_of(path: str, sha256: str | None, source: str) -> _State | None:
    with _lock:
        for state in reversed(_states.get(path, ())):
            if (sha256 is None or state.index.sha256 == sha256) and (state.source is source or state.source == source):
                return state
    return None


# --- the API -----------------------------------------------------------------------------------


def index_edit(previous: FileIndex, previous_source: str, source: str) -> FileIndex:
    """`previous.file` indexed from `source`, as `index_source` would, reading again only what changed
    since `previous_source` (the text `previous` was indexed from) when this module kept what it
    read there. Any FileIndex of that text will do (a settled one from the workspace index too).
    The first call for a document reads it in full and keeps what the next edit needs."""
    path = previous.file
    if posixpath.splitext(path)[1].lower() != ".py":
        return index_document(path, source)
    state = _state_of(path, previous.sha256, previous_source) if incremental_enabled() else None
    if state is not None:
        if source == state.source:
            return state.index
        try:
            return _edited(state, source)
        except _ReadInFull:
            pass
    return _read_in_full(path, source)


def index_document(path: str, source: str) -> FileIndex:
    """A document's text indexed as `index_source` does it, keeping what `index_edit` needs for the
    document's next edit (the first analysis of a document just opened)."""
    if posixpath.splitext(path)[1].lower() != ".py":
        from . import index_source  # here: the package imports this module

        return index_source(path, source)
    return _read_in_full(path, source)


class ModuleDefinitions:
    """The defs and classes of one text, found by the line of their `def`/`class` keyword."""

    def __init__(self, source: str, path: str) -> None:
        self._state = _state_of(path, None, source) if incremental_enabled() else None
        self._tree = parse_module(source, path) if self._state is None else None  # raises as a parse does

    def at(self, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
        """The def or class whose keyword is on `line` (0-based); at most one can be."""
        if self._state is not None:
            segments = self._state.segments
            position = bisect.bisect_right([s.start for s in segments], line) - 1
            if position < 0 or line > segments[position].end:
                return None
            roots: list[ast.AST] = segments[position].fresh_nodes()
        else:
            roots = [self._tree]
        for root in roots:
            for node in ast.walk(root):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.lineno == line + 1:
                    return node
        return None


def definitions_of(source: str, path: str) -> ModuleDefinitions:
    """What the equation checks read of a file: its definitions, without parsing the whole text again
    when `index_edit` kept its segments. Raises SyntaxError (or ValueError) when the text does not parse."""
    return ModuleDefinitions(source, path)


# --- reading in full ---------------------------------------------------------------------------


def _read_in_full(path: str, source: str) -> FileIndex:
    """`index_python`, walked segment by segment so that the next edit starts from here."""
    if not incremental_enabled() or "\0" in source:
        return index_python(path, source)
    try:
        tree = parse_module(source, path)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return index_python(path, source)  # with the syntax error, and what can still be read
    if unread_lines(tree):
        return index_python(path, source)  # with what it cannot read
    text = SourceText(path, source)
    groups = _segments_of(tree.body, text, 0, len(text.lines))
    if groups is None:
        return index_python(path, source)
    segments = [_Segment(start, end, _lines_text(text, start, end), (nodes, start)) for start, end, nodes in groups]
    try:
        return _walk(path, source, text, segments, old=None)
    except _ReadInFull:
        return index_python(path, source)


# --- reading an edit ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Edit:
    """Which lines of the old text the new one keeps: the first `prefix` as they were, the last
    `suffix` moved by `delta`; lines in between changed."""

    prefix: int
    changed_end: int  # the old line where the kept suffix starts
    delta: int

    def line(self, line: int) -> int | None:
        if line < self.prefix:
            return line
        if line >= self.changed_end:
            return line + self.delta
        return None

    def location(self, location: CodeLocation | None) -> CodeLocation | None:
        """Where a location of the old text is in the new one; None when it lies in changed lines."""
        if location is None or not self.delta:
            return location
        line = self.line(location.line)
        end_line = line if location.end_line is None else self.line(location.end_line)
        if line is None or end_line is None:
            return None
        if line == location.line and (location.end_line is None or end_line == location.end_line):
            return location
        if location.end_line is None:
            return _copied(location, line=line)
        return _copied(location, line=line, end_line=end_line)


def _edited(state: _State, source: str) -> FileIndex:
    if "\0" in source:
        raise _ReadInFull
    old_text = state.text
    text = SourceText(state.path, source)
    edit = _changed_lines(state.source, source, old_text, text)
    old_segments = state.segments
    ends = [segment.end for segment in old_segments]
    starts = [segment.start for segment in old_segments]
    low = bisect.bisect_left(ends, edit.prefix)  # segments before are kept as they are
    high = bisect.bisect_left(starts, edit.changed_end)  # segments from here on are kept, moved
    for _ in range(_WIDENINGS + 1):
        first = old_segments[low - 1].end + 1 if low else 0
        stop = old_segments[high].start if high < len(old_segments) else len(old_text.lines)
        region = _parse_region(text, first, stop + edit.delta)
        if region is not None:
            break
        if low == 0 and high == len(old_segments):
            raise _ReadInFull
        low, high = max(0, low - 1), min(len(old_segments), high + 1)
    else:
        raise _ReadInFull
    new_segments = [_Segment(start, end, _lines_text(text, start, end), (nodes, start)) for start, end, nodes in region]
    moved = [_moved(segment, edit) for segment in old_segments[high:]]
    segments = old_segments[:low] + new_segments + moved
    old = _Old(state, edit, old_segments[low:high], low, low + len(new_segments))
    return _walk(state.path, source, text, segments, old)


def _moved(segment: _Segment, edit: _Edit) -> _Segment:
    if not edit.delta:
        return segment
    return _Segment(
        segment.start + edit.delta,
        segment.end + edit.delta,
        segment.text,
        segment.parsed,
        segment.walked,  # moved when reused (_moved_walked)
        segment.names,
    )


def _changed_lines(old: str, new: str, old_text: SourceText, new_text: SourceText) -> _Edit:
    """The whole lines (line breaks included) both texts start and end with."""
    prefix = _common_prefix(old, new)
    suffix = _common_suffix(old, new, min(len(old), len(new)) - prefix)
    old_starts, new_starts = old_text.line_starts, new_text.line_starts
    old_lines, new_lines = len(old_text.lines), len(new_text.lines)
    # A line is kept when its text and its line break lie in the common part of both texts (a
    # line ends where the next starts; the last line, ending with the text, is never in a prefix).
    kept_prefix = min(bisect.bisect_right(old_starts, prefix), bisect.bisect_right(new_starts, prefix)) - 1
    # A line of the suffix starts after a line break of the suffix, in both texts.
    kept_suffix = min(
        old_lines - bisect.bisect_right(old_starts, len(old) - suffix),
        new_lines - bisect.bisect_right(new_starts, len(new) - suffix),
    )
    kept_suffix = max(0, min(kept_suffix, old_lines - kept_prefix, new_lines - kept_prefix))
    return _Edit(kept_prefix, old_lines - kept_suffix, new_lines - old_lines)


def _common_prefix(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    low, step = 0, _CHUNK
    while low < limit:
        high = min(limit, low + step)
        if a[low:high] != b[low:high]:
            while high - low > 1:  # a[:low] == b[:low], a[:high] != b[:high]
                middle = (low + high) // 2
                if a[low:middle] == b[low:middle]:
                    low = middle
                else:
                    high = middle
            return low
        low, step = high, step * 2
    return limit


def _common_suffix(a: str, b: str, limit: int) -> int:
    """The length of the longest common end of a and b, at most `limit`."""
    length_a, length_b = len(a), len(b)
    low, step = 0, _CHUNK
    while low < limit:
        high = min(limit, low + step)
        if a[length_a - high : length_a - low] != b[length_b - high : length_b - low]:
            while high - low > 1:
                middle = (low + high) // 2
                if a[length_a - middle : length_a - low] == b[length_b - middle : length_b - low]:
                    low = middle
                else:
                    high = middle
            return low
        low, step = high, step * 2
    return limit


def _parse_region(text: SourceText, first: int, stop: int) -> list[tuple[int, int, list[ast.stmt]]] | None:
    """Lines [first, stop) of the new text parsed alone, cut into segments; None when they do not
    parse, or leave code outside their statements at their edges."""
    if stop < first:
        return None
    region = text.source[text.offset(first, 0) : text.offset(stop, 0)]
    try:
        statements, unread = bounded_statements(ast.parse("\n" * first + region, filename=text.file).body)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if unread:
        raise _ReadInFull  # index_python reports what it cannot read
    return _segments_of(statements, text, first, stop)


# --- segments ----------------------------------------------------------------------------------


def _segments_of(
    statements: list[ast.stmt], text: SourceText, first: int, stop: int
) -> list[tuple[int, int, list[ast.stmt]]] | None:
    """Statements grouped into segments (start, end, statements); None when lines [first, stop) hold
    code outside every statement's span at their edges, where no segment may be cut."""
    lines = text.lines
    groups: list[list] = []
    for statement in statements:
        start = min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))]) - 1
        end = statement.end_lineno - 1
        if groups:
            group = groups[-1]
            if start <= group[1] or not _ends_cleanly(group[3], text) or not _blank(lines, group[1] + 1, start):
                group[1], group[3] = end, statement  # shares a line, or nothing may be cut between
                group[2].append(statement)
                continue
        elif not _blank(lines, first, start):
            return None
        groups.append([start, end, [statement], statement])
    if groups:
        if not _ends_cleanly(groups[-1][3], text) or not _blank(lines, groups[-1][1] + 1, stop):
            return None
    elif not _blank(lines, first, stop):
        return None
    return [(start, end, nodes) for start, end, nodes, _ in groups]


def _ends_cleanly(statement: ast.stmt, text: SourceText) -> bool:
    """Nothing but a comment after the statement on its last line (no `;`, no `\\`)."""
    line = statement.end_lineno - 1
    rest = text.lines[line][text.char_column(line, statement.end_col_offset) :]
    return _BLANK_OR_COMMENT.fullmatch(rest) is not None


def _blank(lines: list[str], first: int, stop: int) -> bool:
    return all(_BLANK_OR_COMMENT.fullmatch(lines[line]) for line in range(first, stop))


def _lines_text(text: SourceText, start: int, end: int) -> str:
    return text.source[text.offset(start, 0) : text.offset(end + 1, 0)]


def _names(segment: _Segment) -> frozenset[str] | None:
    """The identifiers a segment's text mentions: every name its walk can read of the module's state
    (None: any name)."""
    if segment.names is _UNKNOWN_NAMES:
        source = segment.text
        if source.isascii():
            segment.names = frozenset(_IDENTIFIER.findall(source))
        else:  # identifiers are read NFKC-normalized; take what the tree says too
            names = set(_WORD.findall(source)) | set(_WORD.findall(unicodedata.normalize("NFKC", source)))
            for root in segment.nodes:
                for node in ast.walk(root):
                    for _, value in ast.iter_fields(node):
                        for item in value if isinstance(value, list) else (value,):
                            if isinstance(item, str):
                                names.add(item)
                                names.update(item.split("."))
            segment.names = frozenset(names)
    return segment.names


# --- the walk ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Old:
    """The previous walk, for telling which kept segments read a state that changed."""

    state: _State
    edit: _Edit
    replaced: list[_Segment]  # its segments the region replaces
    region_start: int  # where the region's segments stand in the new list
    region_stop: int


class _ShiftedText(SourceText):
    """The new text, located for nodes numbered `shift` lines before where they now stand (the
    pre-pass reads the statements of moved segments without parsing them again)."""

    def __init__(self, text: SourceText) -> None:
        self.__dict__.update(text.__dict__)
        self.shift = 0

    def location_of_node(self, node) -> CodeLocation:
        return super().location_of_node(_Moved(node, self.shift) if self.shift else node)

    def segment_of_node(self, node) -> str:
        return super().segment_of_node(_Moved(node, self.shift) if self.shift else node)


@dataclass(frozen=True, slots=True)
class _Moved:
    node: ast.AST
    shift: int

    @property
    def lineno(self) -> int:
        return self.node.lineno + self.shift

    @property
    def end_lineno(self) -> int:
        return self.node.end_lineno + self.shift

    @property
    def col_offset(self) -> int:
        return self.node.col_offset

    @property
    def end_col_offset(self) -> int:
        return self.node.end_col_offset


class _ShiftingBody(list):
    """The statements of all segments, telling the text, as each is read, how far its segment moved."""

    def __init__(self, segments: list[_Segment], text: _ShiftedText) -> None:
        parsed = [(segment.start, *segment.parsed) for segment in segments]
        super().__init__(statement for _, nodes, _ in parsed for statement in nodes)
        self._shifts = [start - node_start for start, nodes, node_start in parsed for _ in nodes]
        self._text = text

    def __iter__(self) -> Iterator[ast.stmt]:
        for statement, shift in zip(list.__iter__(self), self._shifts, strict=True):
            self._text.shift = shift
            yield statement
        self._text.shift = 0


def _walk(path: str, source: str, text: SourceText, segments: list[_Segment], old: _Old | None) -> FileIndex:
    """Walk the segments (those the edit left alone only when the state they read changed), then the
    end of the walk on the merged result; keep the new state."""
    indexer = _Indexer(text)
    shifted = _ShiftedText(text)
    indexer.text = shifted
    try:
        module_env = indexer._module_constants(ast.Module(body=_ShiftingBody(segments, shifted), type_ignores=[]))
    finally:
        shifted.shift = 0
        indexer.text = text
    indexer._module_env = module_env
    scope = _Scope("module", None, dict(module_env))
    tracker = _Tracker(old, indexer, scope) if old is not None else None

    walked: list[_Segment] = []
    for position, segment in enumerate(segments):
        if tracker is not None and position == old.region_start:
            for replaced in old.replaced:  # the previous walk's state after the region
                tracker.replay(replaced.walked)
            tracker.dirty = True
        if tracker is None or old.region_start <= position < old.region_stop:
            walked.append(_walk_segment(indexer, scope, segment, segment.nodes, position == 0))
            continue
        previous = segment.walked
        if previous.first == (position == 0) and tracker.unchanged_for(segment):
            walked.append(tracker.reuse(segment, after_region=position >= old.region_stop))
        else:
            walked.append(_walk_segment(indexer, scope, segment, segment.fresh_nodes(), position == 0))
            tracker.dirty = True
        tracker.replay(previous)

    last = len(walked) - 1
    for position, segment in enumerate(walked):
        for terminator in segment.walked.terminators:
            if position != last or terminator != len(segment.nodes) - 1:
                raise _ReadInFull  # the rest of the module is dead code, marked as one span
    index = _assemble(path, source, text, indexer, walked)
    _keep(_State(path, source, text, walked, module_env, indexer._local_parameters, index))
    return index


def _walk_segment(indexer: _Indexer, scope: _Scope, segment: _Segment, nodes: list[ast.stmt], first: bool) -> _Segment:
    """Walk one segment with fresh containers for what it gives; the segment with what it gave."""
    indexer.values, indexer.components, indexer.docstrings, indexer.dead = [], [], [], []
    indexer.config_references, indexer.definitions, indexer._starts = [], [], []
    indexer._used, indexer.imported, indexer.assigned_attributes = set(), set(), set()
    indexer.counted_attributes = set()
    indexer._calls, indexer._headers = {}, {}
    scope.accumulated = {}
    env_before, aliases_before = dict(scope.env), dict(indexer._aliases)
    indexer._body(nodes, scope, docstring_owner=None if first else False)
    env = {name: binding for name, binding in scope.env.items() if env_before.get(name) is not binding}
    env.update((name, None) for name in env_before if name not in scope.env)
    aliases = {name: module for name, module in indexer._aliases.items() if aliases_before.get(name) != module}
    locations = [site.resolved_from for site in indexer.values if site.resolved_from is not None]
    locations += [binding.location for binding in env.values() if binding is not None]
    far = max((location.line if location.end_line is None else location.end_line for location in locations), default=-1)
    walked = _Walked(
        values=indexer.values,
        components=indexer.components,
        docstrings=indexer.docstrings,
        dead=indexer.dead,
        config_references=indexer.config_references,
        definitions=indexer.definitions,
        starts=[(_MODULE if owner is scope else owner, *rest) for owner, *rest in indexer._starts],
        used=indexer._used,
        imported=indexer.imported,
        assigned=indexer.assigned_attributes,
        counted=indexer.counted_attributes,
        calls=indexer._calls,
        headers=indexer._headers,
        accumulated=scope.accumulated,
        env=env,
        aliases=aliases,
        star=indexer._library_star,
        terminators=[i for i, statement in enumerate(nodes) if indexer._terminates(statement)],
        first=first,
        far=far,
    )
    result = _Segment(segment.start, segment.end, segment.text, (nodes, segment.start), walked, segment.names)
    if (env or aliases) and (names := _names(result)) is not None and not (env.keys() | aliases.keys()) <= names:
        result.names = None  # it changed a name its text does not show: let it read any
    return result


class _Tracker:
    """The module's state in the previous walk and in this one, segment by segment, and the names
    for which they differ (`changed`): a kept segment that mentions none of them reads what it read."""

    def __init__(self, old: _Old, indexer: _Indexer, scope: _Scope) -> None:
        self.edit = old.edit
        self.indexer = indexer
        self.scope = scope
        previous = old.state
        self.old_env = dict(previous.module_env)
        self.old_aliases: dict[str, str] = {}
        self.old_star = False
        # What the pre-pass says, for the whole walk: constants (functions read them) and parameters.
        self.fixed = self._differences(indexer._module_env, previous.module_env)
        new_parameters, old_parameters = indexer._local_parameters, previous.local_parameters
        names = new_parameters.keys() | old_parameters.keys()
        self.fixed |= {name for name in names if new_parameters.get(name) != old_parameters.get(name)}
        self.changed = set(self.fixed)
        self.star_differs = False
        self.dirty = False

    def replay(self, walked: _Walked) -> None:
        """The previous walk's state after the segment it walked."""
        for name, binding in walked.env.items():
            if binding is None:
                self.old_env.pop(name, None)
            else:
                self.old_env[name] = binding
        self.old_aliases.update(walked.aliases)
        self.old_star = walked.star

    def unchanged_for(self, segment: _Segment) -> bool:
        if self.dirty:
            indexer = self.indexer
            self.changed = self.fixed | self._differences(self.scope.env, self.old_env)
            aliases, old_aliases = indexer._aliases, self.old_aliases
            self.changed |= {n for n in aliases.keys() | old_aliases.keys() if aliases.get(n) != old_aliases.get(n)}
            self.star_differs = indexer._library_star != self.old_star
            self.dirty = False
        if self.star_differs:
            return False
        if not self.changed:
            return True
        names = _names(segment)
        return names is not None and names.isdisjoint(self.changed)

    def reuse(self, segment: _Segment, *, after_region: bool) -> _Segment:
        """The segment with what it gave before (moved with its lines, or pointing to lines the edit
        moved), and its changes applied to this walk's state."""
        walked = segment.walked
        edit = self.edit
        if edit.delta and (after_region or walked.far >= edit.changed_end):
            walked = _moved_walked(walked, edit)
            segment = _Segment(segment.start, segment.end, segment.text, segment.parsed, walked, segment.names)
        env = self.scope.env
        for name, binding in walked.env.items():
            if binding is None:
                env.pop(name, None)
            else:
                env[name] = binding
        self.indexer._aliases.update(walked.aliases)
        self.indexer._library_star = walked.star
        return segment

    def _differences(self, new: dict[str, _Binding], old: dict[str, _Binding]) -> set[str]:
        location = self.edit.location
        different = set()
        for name in new.keys() | old.keys():
            a, b = new.get(name), old.get(name)
            if a is not b and (
                a is None
                or b is None
                or a.from_default != b.from_default
                or not _same_value(a.value, b.value)
                or location(b.location) != a.location  # None (in changed lines) differs from any
            ):
                different.add(name)
        return different


def _same_value(a, b) -> bool:
    """Equal and of the same type (True is no 1.0; -0.0 is no 0.0)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return a == b and repr(a) == repr(b)
    if type(a) is tuple:
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _moved_walked(walked: _Walked, edit: _Edit) -> _Walked:
    """What a segment gave, with every location moved to where the edit put its line."""
    locate = edit.location

    def line(number: int) -> int:
        moved = edit.line(number)
        if moved is None:
            raise _ReadInFull  # a kept segment points into changed lines: cannot happen, be safe
        return moved

    def place(location: CodeLocation) -> CodeLocation:
        moved = locate(location)
        if moved is None:
            raise _ReadInFull
        return moved

    def site(value):
        if value.resolved_from is None:
            return _copied(value, location=place(value.location))
        return _copied(value, location=place(value.location), resolved_from=place(value.resolved_from))

    return dataclasses.replace(
        walked,
        values=[site(value) for value in walked.values],
        components=[_copied(c, location=place(c.location)) for c in walked.components],
        docstrings=[TextBlock(line(b.start), line(b.end), b.owner) for b in walked.docstrings],
        dead=[place(location) for location in walked.dead],
        config_references=[_copied(r, location=place(r.location)) for r in walked.config_references],
        definitions=[_moved_definition(d, place(d.location)) for d in walked.definitions],
        headers={line(number): qualname for number, qualname in walked.headers.items()},
        env={
            name: None if b is None else dataclasses.replace(b, location=place(b.location))
            for name, b in walked.env.items()
        },
        far=line(walked.far) if walked.far >= 0 else -1,
    )


_new = object.__new__
_set = object.__setattr__
_DEFINITION_FIELDS = tuple(f.name for f in dataclasses.fields(_Definition))


def _copied(model, **changes):
    """A pydantic model with some fields changed, as model_copy(update=...) makes it, three times as fast
    (every site after an inserted line is copied)."""
    copy = _new(type(model))
    _set(copy, "__dict__", {**model.__dict__, **changes})
    _set(copy, "__pydantic_fields_set__", set(model.__pydantic_fields_set__))
    _set(copy, "__pydantic_extra__", model.__pydantic_extra__)
    _set(copy, "__pydantic_private__", model.__pydantic_private__)
    return copy


def _moved_definition(definition: _Definition, location: CodeLocation) -> _Definition:
    """The definition at its new place; the site made of it at the old one is made again."""
    moved = {"location": location, "made": None}
    return _Definition(*(moved[name] if name in moved else getattr(definition, name) for name in _DEFINITION_FIELDS))


def _assemble(path: str, source: str, text: SourceText, indexer: _Indexer, segments: list[_Segment]) -> FileIndex:
    """The segments' results merged into one walker, then the end of the walk as index_python does it."""
    module = _Scope("module", None, {})
    values: list = []
    starts: list[tuple] = []
    calls: dict[str, list] = {}
    headers: dict[int, str] = {}
    indexer.components, indexer.docstrings, indexer.dead, indexer.config_references = [], [], [], []
    indexer.definitions = []
    indexer._used, indexer.imported, indexer.assigned_attributes = set(), set(), set()
    indexer.counted_attributes = set()
    for segment in segments:
        walked = segment.walked
        offset = len(values)
        values += walked.values
        starts += [
            (module if owner is _MODULE else owner, name, value, start + offset, end + offset)
            for owner, name, value, start, end in walked.starts
        ]
        indexer.components += walked.components
        indexer.docstrings += walked.docstrings
        indexer.dead += walked.dead
        indexer.config_references += walked.config_references
        indexer.definitions += walked.definitions
        indexer._used |= walked.used
        indexer.imported |= walked.imported
        indexer.assigned_attributes |= walked.assigned
        indexer.counted_attributes |= walked.counted
        headers.update(walked.headers)
        for name, signs in walked.accumulated.items():
            module.accumulated.setdefault(name, set()).update(signs)
        for callee, (keywords, positional, unpacked) in walked.calls.items():
            record = calls.get(callee)
            if record is None:
                calls[callee] = [set(keywords), positional, unpacked]
            else:
                record[0].update(keywords)
                record[1] = max(record[1], positional)
                record[2] = record[2] or unpacked
    indexer.values, indexer._starts, indexer._calls, indexer._headers = values, starts, calls, headers
    indexer._drop_running_totals()
    return _file_index(path, source, indexer, [])


# --- what this module assumes of python.py -----------------------------------------------------

# The walker's state, by role. Per segment and merged: values … _headers, _starts. Read by name:
# _module_env, _local_parameters, _aliases, _library_star (and the module scope's env). End only:
# _exported. A memo keyed by what it reads: _signatures. Constant: vocabulary, text.
_INDEXER_STATE = frozenset(
    {
        "vocabulary", "text", "values", "components", "docstrings", "dead", "config_references", "imported",
        "definitions", "_headers", "_used", "_exported", "_aliases", "_library_star", "_module_env",
        "_local_parameters", "_calls", "assigned_attributes", "counted_attributes", "_signatures", "_starts",
        "_loops",  # 0 between top-level statements: nothing to carry from one segment to the next
    }
)  # fmt: skip
_SCOPE_FIELDS = frozenset({"kind", "qualname", "env", "config_class", "parent", "accumulated", "declared"})
_BINDING_FIELDS = ("value", "location", "from_default")
# The walk's outline this module mirrors (sha256 of the functions' source).
_OUTLINE = {
    "walk": "20b3ab3c45fa8ad2",
    "_body": "d75890f2d5967ac1",
    "_signature": "aef17900c635136d",
    "index_python": "12dd5dce802acbe7",
}


def _fingerprint(function: Callable) -> str:
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()[:16]


def _outline() -> dict[str, str]:
    return {
        "walk": _fingerprint(_Indexer.walk),
        "_body": _fingerprint(_Indexer._body),
        "_signature": _fingerprint(_Indexer._signature),
        "index_python": _fingerprint(_python.index_python),
    }


@functools.cache
def incremental_enabled() -> bool:
    """Whether python.py's walk still has the shape this module knows; if not, every edit is read in full."""
    try:
        probe = _Indexer(SourceText("probe.py", ""))
        return (
            set(vars(probe)) == _INDEXER_STATE
            and {f.name for f in dataclasses.fields(_Scope)} == _SCOPE_FIELDS
            and tuple(f.name for f in dataclasses.fields(_Binding)) == _BINDING_FIELDS
            and _outline() == _OUTLINE
        )
    except (OSError, TypeError):  # no source to read (a frozen build): trust nothing
        return False

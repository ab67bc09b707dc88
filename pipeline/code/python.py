"""Python sources → a FileIndex: one `ast` walk for values, components, definitions and calls, and one
regex over the comments and docstrings for anchors (comments are found by their `#`, checked to
stand outside a string on their line: `tokenize` would cost more than the whole walk).

Sites: keyword and positional arguments of calls (a positional one named by the callee's signature:
a library's from pipeline/knowledge/code.yaml, or this file's own function's), assignments, function
defaults, argparse/click/absl defaults, dataclass/pydantic/attrs fields, dict entries. A site is kept
when its name is a setting of the paper's vocabulary, or when it is a number or flag where settings
live (module and class attributes, config fields, config dicts, a library call's argument that has a
default). Its location is the value's own span, so a fix can replace exactly it.

Values flow through simple constants: a name resolves to the last assignment of a literal before its
use in the same function, to a module-level name assigned once, or to its parameter's default —
`resolved_from` says where. Branches, loops and `try` forget what they assign (the value after them
is not known); `args.lr`, `self.lr` and `cfg.lr` are not followed.

Live: code after return/raise/continue/break/sys.exit() in the same block (or after an if/else that
ends so on every branch), the body of a condition that constants decide (`if False:`,
`if TYPE_CHECKING:`, `if USE_OLD:` with `USE_OLD = False`, the `else` of `while True:`) and a
module-level function or class its file never uses (no reference, no registering decorator, not in
`__all__`, no entry point such as `main` or `get_config`: code.yaml `entry_points`) is dead. Read
alone, a file can be imported by others, so only private (`_name`) definitions count as unused; the
workspace pass decides the public ones by what other files import.

Overridden: a default that a call passes explicitly (by name, by position, or through *args/**kwargs
or functools.partial), a field or command-line default an attribute assignment replaces
(`cfg.lr = ...`, `parser.set_defaults(lr=...)`), and any value that flowed from such a default.

Not settings, so no sites: what a reporting call is given (`wandb.log({"lr": 0.1})`,
`print(dict(lr=...))`: code.yaml `reporting_calls`), the start of a running total or extreme
(`low = min(low, x)`), a name its scope accumulates into
(`total_tokens += n`, `step = step + 1`; for `self.seen += n` in a method, the class is the scope),
when it counts up or starts at 0 (a countdown from another value, `budget = 1000; budget -= 1`,
starts from a setting); and a zero weight decay in an optimizer's parameter group (a dict with a
"params" key), the idiom that keeps biases and norms out of the decay, not the run's weight decay.

A syntax error is recorded as a Problem and the file is re-parsed with the offending lines blanked
out (a few times), else up to the error, so what can be read still is.
"""

from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import itertools
import math
import operator
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from ...schemas.code import (
    CallArguments,
    CodeLocation,
    ComponentSite,
    ConfigReference,
    FileIndex,
    FunctionSite,
    ValueSite,
)
from ...schemas.paper import Location, Problem
from .anchors import TextBlock, find_anchors
from .knowledge import Signature, code_vocabulary, for_evaluation, normalize_name, setting_of, technique_switched
from .settle import WorkspaceFacts, merge_calls, settle
from .sites import Element, SourceText, Value, component_site, text_component, value_sites

_MAX_REPAIRS = 8
_MAX_EVALUATION_DEPTH = 40
_MAX_SETTING_ITEMS = 64  # a setting's tuple (betas, milestones, channel widths) is short
# Levels of a statement's tree the readers follow (they walk trees recursively). The deepest statement
# in the 17 official repositories of ../shared/data is 22 levels; `1+1+…+1` with 150 terms is 150.
MAX_CODE_NESTING = 150
# CPython's parser takes about 0.5 KB per token (1.8 MB of `x = 1` lines: 0.74 GB); the largest file
# of the 17 official repositories has 12,000 tokens. Past this, a file is not parsed.
MAX_PYTHON_TOKENS = 250_000
_TOKEN_RE = re.compile(  # a string counts as one token; an unclosed one ends the line, in one scan
    r'[rRbBuUfF]{0,2}(?:"""[\s\S]*?"""|' r"'''[\s\S]*?'''" r'''|"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?)|\w+|[^\s\w]'''
)
_MAX_EXPONENT = 1000.0
_CONFIG_PATH_RE = re.compile(r"[\w./\\-]+\.(?:ya?ml|json|toml|ini|cfg)")
_LINE_SPLIT_RE = re.compile(r"(\r\n|\r|\n)")

_CONFIG_CLASS_DECORATORS = {"dataclass", "define", "frozen", "mutable", "attrs", "s", "dataclass_transform"}
_CONFIG_CLASS_BASES = {"BaseModel", "BaseSettings", "NamedTuple", "TypedDict", "Struct", "PyTreeNode"}
_CONFIG_MODULE_BASES = ("flax.", "equinox.", "eqx.")  # their Module subclasses are dataclasses
_FIELD_CALLS = {"field", "Field", "ib", "attrib"}
_FLAG_DEFINITIONS = {"DEFINE_float", "DEFINE_integer", "DEFINE_string", "DEFINE_bool", "DEFINE_boolean", "DEFINE_enum"}
_EXITS = {"exit", "quit", "sys.exit", "os._exit"}
_TERMINATORS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_BINARY_OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARISONS = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_SKIPPED_FIELDS = frozenset({"ctx", "op", "ops", "type_comment"})
_BUILTINS = frozenset(dir(builtins))
# Kinds reported only with a value: a call's argument is worth its call even when unknown (nn.Dropout(p=args.p)).
_KNOWN_VALUES_ONLY = ("assignment", "function-default", "config-default", "dict-entry")


@functools.lru_cache(maxsize=4)
def parse_module(source: str, path: str) -> ast.Module:
    """One parse per text: in an editor, the index and the equation checks read the same tree of
    the file just edited (the tree is shared, so nobody may change it). Statements nested too deeply
    to read are `pass` in it (`unread_lines` says where)."""
    return _bounded_parse(source, path)


def _bounded_parse(source: str, path: str) -> ast.Module:
    if len(source) > MAX_PYTHON_TOKENS:  # shorter, it cannot hold that many tokens
        tokens = sum(1 for _ in itertools.islice(_TOKEN_RE.finditer(source), MAX_PYTHON_TOKENS + 1))
        if tokens > MAX_PYTHON_TOKENS:
            raise TooManyTokens(f"more than {MAX_PYTHON_TOKENS:,} tokens (generated code or data?); not read")
    tree = ast.parse(source, filename=path)
    tree.body, tree.unread_lines = bounded_statements(tree.body)
    return tree


class TooManyTokens(ValueError):
    """A text CPython's parser would need more memory to read than paperlens allows one file."""


def unread_lines(tree: ast.Module) -> list[int]:
    """The lines (1-based) of the statements `parse_module` left unread as too deep."""
    return getattr(tree, "unread_lines", [])


def bounded_statements(statements: list[ast.stmt]) -> tuple[list[ast.stmt], list[int]]:
    """`statements` with each one nested deeper than MAX_CODE_NESTING replaced by `pass` at its place,
    and the lines of those replaced: no reader then meets a tree deeper than it can follow."""
    kept, unread = statements, []
    for position, statement in enumerate(statements):
        if _deeper_than(statement, MAX_CODE_NESTING):
            if kept is statements:
                kept = list(statements)
            kept[position] = ast.copy_location(ast.Pass(), statement)
            unread.append(statement.lineno)
    return kept, unread


def _deeper_than(root: ast.AST, limit: int) -> bool:
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        end = getattr(node, "end_col_offset", None)
        if end is not None and node.end_lineno == node.lineno and 2 * (end - node.col_offset) + depth + 4 < limit:
            continue  # a tree on one line has at most about two levels per character: not deep enough
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return False


def _unread_problems(path: str, lines: list[int]) -> list[Problem]:
    return [
        Problem(
            severity="warning",
            message=f"{path}:{line}: a statement nested more than {MAX_CODE_NESTING} levels deep; not read",
            location=Location(file=path, line=line - 1, column=0),
        )
        for line in lines
    ]


def index_python(path_rel: str, source: str) -> FileIndex:
    """Everything one Python file says, read on its own (`index_workspace` adds what other files say)."""
    problems: list[Problem] = []
    tree = _parse(path_rel, source, problems)
    indexer = _Indexer(SourceText(path_rel, source))
    if tree is not None:
        problems += _unread_problems(path_rel, unread_lines(tree))
        indexer.walk(tree)
    return _file_index(path_rel, source, indexer, problems)


def _file_index(path_rel: str, source: str, indexer: _Indexer, problems: list[Problem]) -> FileIndex:
    """The FileIndex of a walked file (also what incremental.py assembles its walk into)."""
    index = FileIndex(
        file=path_rel,
        sha256=hashlib.sha256(source.encode("utf-8", errors="surrogatepass")).hexdigest(),
        language="python",
        values=indexer.values,
        components=indexer.components,
        anchors=find_anchors(
            indexer.text,
            comment_markers="#",
            docstrings=indexer.docstrings,
            function_of_comment=indexer.function_of_comment,
        ),
        functions=indexer.function_sites(),
        problems=problems,
        calls=indexer.call_arguments(),
        imported_names=sorted(indexer.imported),
        imported_modules=list(_imported_modules(source)),
        assigned_attributes=sorted(indexer.assigned_attributes),
        counted_attributes=sorted(indexer.counted_attributes),
        dead_code=indexer.dead,
        config_references=indexer.config_references,
    )
    facts = WorkspaceFacts(
        calls=merge_calls([index.calls]),
        assigned=frozenset(index.assigned_attributes),
        counted=frozenset(index.counted_attributes),
    )
    return settle(index, facts)


# --- parsing, with recovery ----------------------------------------------------------------------


def _parse(path: str, source: str, problems: list[Problem]) -> ast.Module | None:
    if "\0" in source:
        line = source.count("\n", 0, source.index("\0"))
        problems.append(
            Problem(
                severity="error",
                message=f"{path}:{line + 1}: a null byte; read as a space",
                location=Location(file=path, line=line, column=0),
            )
        )
        source = source.replace("\0", " ")
    try:
        return parse_module(source, path)
    except SyntaxError as error:
        problems.append(_syntax_problem(path, error))
        return _recover(path, source, error)
    except (ValueError, MemoryError, RecursionError) as error:  # past CPython's own parser limits
        problems.append(Problem(severity="error", message=f"{path}: cannot be parsed: {error}"))
        return None


def _syntax_problem(path: str, error: SyntaxError) -> Problem:
    line = max((error.lineno or 1) - 1, 0)
    column = max((error.offset or 1) - 1, 0)
    return Problem(
        severity="error",
        message=f"{path}:{line + 1}: {error.msg}; the rest of the file is still read",
        location=Location(file=path, line=line, column=column),
    )


def _recover(path: str, source: str, error: SyntaxError) -> ast.Module | None:
    """Re-parse with the offending lines neutralized (line numbers kept), a few times; else the part
    before the first error."""
    pieces = _LINE_SPLIT_RE.split(source)
    lines, breaks = pieces[0::2], pieces[1::2]
    first_error = _error_lines(error, len(lines)).start
    neutralized: set[int] = set()
    for _ in range(_MAX_REPAIRS):
        for number in _error_lines(error, len(lines)):
            lines[number] = "" if number in neutralized else _neutralized(lines[number])
            neutralized.add(number)
        try:
            return _bounded_parse(_joined(lines, breaks), path)
        except SyntaxError as next_error:
            error = next_error
        except (ValueError, MemoryError, RecursionError):
            break
    original = _LINE_SPLIT_RE.split(source)[0::2]
    try:
        return _bounded_parse(_joined(original[:first_error], breaks), path)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _error_lines(error: SyntaxError, line_count: int) -> range:
    first = min(max((error.lineno or 1) - 1, 0), line_count - 1)
    last = min(max((error.end_lineno or error.lineno or 1) - 1, first), line_count - 1)
    return range(first, last + 1)


def _neutralized(line: str) -> str:
    """A block header keeps its block (`if True:`); any other line is blanked."""
    stripped = line.strip()
    if stripped.endswith(":") and not stripped.startswith("#"):
        return line[: len(line) - len(line.lstrip())] + "if True:"
    return ""


def _joined(lines: list[str], breaks: list[str]) -> str:
    return "".join(line + (breaks[i] if i < len(breaks) else "\n") for i, line in enumerate(lines))


# --- the walk ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Binding:
    """A name's known value, where that value is written, and whether it is a parameter's default."""

    value: Value
    location: CodeLocation
    from_default: bool = False


@dataclass(slots=True)
class _Scope:
    kind: str  # "module", "class" or "function"
    qualname: str | None
    env: dict[str, _Binding]
    config_class: bool = False  # a dataclass / pydantic / attrs / NamedTuple / flax Module body
    parent: _Scope | None = None
    # Names accumulated into in this scope (a class's: its attributes, through self/cls) → "+" and/or "-".
    accumulated: dict[str, set[str]] = field(default_factory=dict)
    declared: dict[str, _Scope] = field(default_factory=dict)  # `global`/`nonlocal` names → their scope

    def owner_of(self, name: str) -> _Scope:
        """The scope a bare name assigned here binds in."""
        return self.declared.get(name, self)

    def enclosing_class(self) -> _Scope | None:
        """The class whose attributes `self.x` names: from a method's body, or the class body itself."""
        if self.kind == "class":
            return self
        if self.kind == "function" and self.parent is not None and self.parent.kind == "class":
            return self.parent
        return None


@dataclass(slots=True)
class _Definition:
    """A def or class while the walk is on it; a FunctionSite once the file's uses are known."""

    name: str
    qualname: str
    kind: str
    parameters: list[str]
    location: CodeLocation
    module_level: bool
    registered: bool  # a decorator that may register it
    # The FunctionSite made of it last, and whether it was used then: an edit elsewhere in the file
    # re-reads the definitions of the segments it left alone, and reuses their sites.
    made: tuple[bool, FunctionSite] | None = None


@dataclass(frozen=True, slots=True)
class _Evaluation:
    value: Value
    origin: _Binding | None = None  # the binding a name resolved to
    element_nodes: list[ast.expr] | None = None  # a tuple's elements, where they are written


_UNKNOWN = _Evaluation(None)


class _Indexer:
    def __init__(self, text: SourceText) -> None:
        self.vocabulary = code_vocabulary()
        self.text = text
        self._loops = 0  # loops the statement being read stands in (a running extreme is updated in one)
        self.values: list[ValueSite] = []
        self.components: list[ComponentSite] = []
        self.docstrings: list[TextBlock] = []
        self.dead: list[CodeLocation] = []
        self.config_references: list[ConfigReference] = []
        self.imported: set[str] = set()
        self.definitions: list[_Definition] = []
        self._headers: dict[int, str] = {}  # first line of a definition (its decorators) → qualname
        self._used: set[str] = set()  # names this file reads
        self._exported: set[str] = set()  # __all__
        self._aliases: dict[str, str] = {}  # local name → the dotted path it was imported as
        self._library_star = False  # `from torch.nn import *`: bare names may be the library's
        self._module_env: dict[str, _Binding] = {}
        self._local_parameters: dict[str, list[str]] = {}  # a module-level def or class → its parameters
        self._calls: dict[str, list] = {}  # callee → [keywords, positional, unpacked]
        self.assigned_attributes: set[str] = set()
        self.counted_attributes: set[str] = set()
        self._signatures: dict[tuple[str, str | None, bool], tuple[Signature | None, bool]] = {}
        # Values assigned to a name, which is no setting if its scope turns out to accumulate into it:
        # (that scope, the name, the value, the range of self.values its sites take).
        self._starts: list[tuple[_Scope, str, Value, int, int]] = []

    # -- results ----------------------------------------------------------------------------------

    def function_sites(self) -> list[FunctionSite]:
        sites = []
        for definition in self.definitions:
            used = not definition.module_level or (
                definition.name in self._used
                or definition.registered
                or definition.name in self._exported
                or definition.name in self.vocabulary.entry_points
            )
            if definition.made is None or definition.made[0] != used:
                site = FunctionSite.model_construct(
                    name=definition.name,
                    qualname=definition.qualname,
                    kind=definition.kind,
                    parameters=definition.parameters,
                    used_in_file=used,
                    location=definition.location,
                )
                definition.made = (used, site)
            sites.append(definition.made[1])
        return sites

    def call_arguments(self) -> list[CallArguments]:
        return [
            CallArguments.model_construct(
                callee=callee, keywords=sorted(keywords), positional=positional, unpacked=unpacked
            )
            for callee, (keywords, positional, unpacked) in sorted(self._calls.items())
        ]

    def function_of_comment(self, line: int) -> str | None:
        """The definition a comment documents: the one on its line, or right below a comment of its own
        lines (only comments between), else the innermost one around it."""
        if line in self._headers:
            return self._headers[line]
        lines = self.text.lines
        if lines[line].lstrip().startswith("#"):
            following = line + 1
            while following < len(lines) and lines[following].lstrip().startswith("#"):
                following += 1
            if following in self._headers:
                return self._headers[following]
        around = [d for d in self.definitions if d.location.line <= line <= (d.location.end_line or d.location.line)]
        return max(around, key=lambda d: d.location.line).qualname if around else None

    # -- module -----------------------------------------------------------------------------------

    def walk(self, tree: ast.Module) -> None:
        self._module_env = self._module_constants(tree)
        scope = _Scope("module", None, dict(self._module_env))
        self._body(tree.body, scope, docstring_owner=None)
        self._drop_running_totals()

    def _drop_running_totals(self) -> None:
        """Drop the sites of what starts a running total: a name its scope accumulates into (known only
        once the whole scope is read: a method may count before another one resets)."""
        dropped: set[int] = set()
        for owner, name, value, start, end in self._starts:
            operators = owner.accumulated.get(name)
            if operators and ("+" in operators or "extreme" in operators or (type(value) is float and value == 0)):
                dropped.update(range(start, end))
        if dropped:
            self.values = [site for position, site in enumerate(self.values) if position not in dropped]

    def _start(self, owner: _Scope | None, name: str, value: Value, before: int) -> None:
        """Note the sites just recorded (from `before` on) as a value `name` starts from in `owner`."""
        if owner is not None and len(self.values) > before:
            self._starts.append((owner, name, value, before, len(self.values)))

    def _accumulate(self, target: ast.expr, operator_node: ast.operator | ast.Call, scope: _Scope) -> None:
        """`total += x`, `total = total - x`, `self.seen += n`: the target is a running total;
        `low = min(low, x)`: a running extreme (its start, `10.` or `inf`, is a sentinel)."""
        kind = type(operator_node)
        if kind is ast.Call:
            sign = "extreme"
        elif kind is ast.Add or kind is ast.Sub:
            sign = "+" if kind is ast.Add else "-"
        else:
            return  # `lr *= 0.1` decays a setting
        if type(target) is ast.Name:
            scope.owner_of(target.id).accumulated.setdefault(target.id, set()).add(sign)
        elif type(target) is ast.Attribute and _root_name(target) in ("self", "cls") and type(target.value) is ast.Name:
            owner = scope.enclosing_class()
            if owner is not None:
                owner.accumulated.setdefault(target.attr, set()).add(sign)
        elif type(target) is ast.Attribute and sign == "+":
            self.counted_attributes.add(target.attr)  # trainer.step += 1: Trainer's self.step = 0 starts a count

    def _module_constants(self, tree: ast.Module) -> dict[str, _Binding]:
        """Module-level names bound exactly once, to a value known from literals and earlier constants;
        also what the file defines and exports, for telling calls to its own functions apart."""
        counts: dict[str, int] = {}
        constants: dict[str, _Binding] = {}
        for statement in tree.body:
            for name in _bound_names(statement):
                counts[name] = counts.get(name, 0) + 1
            if type(statement) is ast.Assign and len(statement.targets) == 1:
                target = statement.targets[0]
                if type(target) is ast.Name:
                    if target.id == "__all__":
                        self._exported.update(_string_items(statement.value))
                    evaluation = self._evaluate(statement.value, constants)
                    if evaluation.value is not None:
                        constants[target.id] = _Binding(
                            evaluation.value, self._origin_location(statement.value, evaluation)
                        )
            elif type(statement) is ast.AugAssign and _target_name(statement.target) == "__all__":
                self._exported.update(_string_items(statement.value))
            elif type(statement) in (ast.FunctionDef, ast.AsyncFunctionDef):
                self._local_parameters[statement.name] = _positional_parameters(statement.args, method=False)
            elif type(statement) is ast.ClassDef:
                config_class = self._is_config_class(statement)
                self._local_parameters[statement.name] = _constructor_parameters(statement, config_class=config_class)
        return {name: binding for name, binding in constants.items() if counts.get(name) == 1}

    # -- statements -------------------------------------------------------------------------------

    def _body(self, statements: list[ast.stmt], scope: _Scope, docstring_owner: str | None | bool = False) -> None:
        """Walk a block in order. `docstring_owner` (a qualname, or None for the module) says the
        block may open with a docstring; False says it may not."""
        start = 0
        if docstring_owner is not False and statements and _is_docstring(statements[0]):
            first = statements[0]
            self.docstrings.append(TextBlock(first.lineno - 1, first.end_lineno - 1, docstring_owner))
            start = 1
        for position in range(start, len(statements)):
            statement = statements[position]
            self._statement(statement, scope)
            if position + 1 < len(statements) and self._terminates(statement):
                self._mark_dead(statements[position + 1], statements[-1])
                for unreachable in statements[position + 1 :]:
                    self._statement(unreachable, scope)
                return

    def _terminates(self, statement: ast.stmt) -> bool:
        """Whether nothing after the statement runs: a return, raise, continue, break or exit, or an
        if/else whose every branch ends so."""
        kind = type(statement)
        if isinstance(statement, _TERMINATORS):
            return True
        if kind is ast.If:
            return bool(statement.orelse) and all(
                self._terminates(block[-1]) for block in (statement.body, statement.orelse)
            )
        return kind is ast.Expr and type(statement.value) is ast.Call and _dotted(statement.value.func) in _EXITS

    def _mark_dead(self, first: ast.AST, last: ast.AST) -> None:
        start, end = self.text.location_of_node(first), self.text.location_of_node(last)
        self.dead.append(
            CodeLocation.model_construct(
                file=self.text.file,
                line=start.line,
                column=start.column,
                end_line=end.end_line,
                end_column=end.end_column,
            )
        )

    def _statement(self, node: ast.stmt, scope: _Scope) -> None:
        handler = _STATEMENT_HANDLERS.get(type(node))
        if handler is not None:
            handler(self, node, scope)
        else:
            self._children(node, scope)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope) -> None:
        qualname = f"{scope.qualname}.{node.name}" if scope.qualname else node.name
        self._decorators(node, scope)
        is_method = scope.kind == "class" and not any(_dotted(d) == "staticmethod" for d in node.decorator_list)
        self._define(node, qualname, "function", _positional_parameters(node.args, method=is_method), scope)

        arguments = node.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults = list(zip(positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True))
        defaults += [
            (arg, default)
            for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
            if default is not None
        ]
        for arg in [*positional, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]:
            if arg is not None and arg.annotation is not None:
                self._names_used(arg.annotation)
        if node.returns is not None:
            self._names_used(node.returns)

        env = dict(scope.env if scope.kind == "function" else self._module_env)
        for arg in [*positional, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]:
            if arg is not None:
                env.pop(arg.arg, None)
        for arg, default in defaults:
            evaluation = self._evaluate(default, scope.env)
            location = self.text.location_of_node(default)
            # A site whatever its name: a value flowing from it is overridden with it (`p=class_drop`).
            self._value(arg.arg, evaluation, default, "function-default", call=qualname, always=True)
            if evaluation.value is not None:
                env[arg.arg] = _Binding(evaluation.value, location, from_default=True)
            self._expression(default, scope)
        self._body(node.body, _Scope("function", qualname, env, parent=scope), docstring_owner=qualname)

    def _class(self, node: ast.ClassDef, scope: _Scope) -> None:
        qualname = f"{scope.qualname}.{node.name}" if scope.qualname else node.name
        self._decorators(node, scope)
        for base in node.bases:
            self._expression(base, scope)
        for keyword in node.keywords:
            self._expression(keyword.value, scope)
        config_class = self._is_config_class(node)
        self._define(node, qualname, "class", _constructor_parameters(node, config_class=config_class), scope)
        body_scope = _Scope("class", qualname, dict(scope.env), config_class=config_class, parent=scope)
        self._body(node.body, body_scope, docstring_owner=qualname)

    def _define(self, node, qualname: str, kind: str, parameters: list[str], scope: _Scope) -> None:
        header = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
        self._headers[header] = qualname
        self._headers.setdefault(node.lineno - 1, qualname)
        registered = any(
            (_dotted(_called(d)) or "").rsplit(".", 1)[-1] not in self.vocabulary.inert_decorators
            for d in node.decorator_list
        )
        self.definitions.append(
            _Definition(
                node.name,
                qualname,
                kind,
                parameters,
                self.text.location_of_node(node),
                scope.kind == "module",
                registered,
            )
        )

    def _decorators(self, node, scope: _Scope) -> None:
        for decorator in node.decorator_list:
            self._expression(decorator, scope)

    def _is_config_class(self, node: ast.ClassDef) -> bool:
        for decorator in node.decorator_list:
            if (_dotted(_called(decorator)) or "").rsplit(".", 1)[-1] in _CONFIG_CLASS_DECORATORS:
                return True
        for base in node.bases:
            dotted = _dotted(base) or ""
            if dotted.rsplit(".", 1)[-1] in _CONFIG_CLASS_BASES:
                return True
            if self._resolve(dotted).startswith(_CONFIG_MODULE_BASES) and dotted.endswith("Module"):
                return True
        return False

    def _assign(self, node: ast.Assign, scope: _Scope) -> None:
        container = _target_name(node.targets[0]) if len(node.targets) == 1 else None
        if scope.config_class and type(node.targets[0]) is ast.Name and _is_field_call(node.value):
            self._field(node.targets[0].id, node.value, scope)  # attrs: tau = attr.ib(default=0.07)
            return
        self._expression(node.value, scope, container=container)
        if self._loops > 1 and len(node.targets) == 1 and _is_learning_rate_item(node.targets[0]):
            # `for step ...: for g in opt.param_groups: g["lr"] = lr`: the training loop sets the rate itself.
            self.components.append(component_site("schedule", HAND_WRITTEN_SCHEDULE, self.text.segment_of_node(node.targets[0]), self.text.location_of_node(node.targets[0])))
        if container and _TIMESTEP_NAME_RE.fullmatch(container) and (first := _randint_low(node.value)) is not None:
            self._value(container, self._evaluate(first, scope.env), first, "positional", call="randint", setting="timestep_start", always=True)
        evaluation = self._evaluate(node.value, scope.env)
        for target in node.targets:
            self._bind(target, node.value, evaluation, scope)
        value = node.value
        if len(node.targets) == 1 and type(value) is ast.BinOp and _same_target(node.targets[0], value):
            self._accumulate(node.targets[0], value.op, scope)  # total = total + x
        elif len(node.targets) == 1 and self._loops and _running_extreme(node.targets[0], value):
            # `min_lr = min(min_lr, group["lr"])` in a loop; not a clamp (`lr = max(lr, 1e-6)`)
            self._accumulate(node.targets[0], value, scope)

    def _annotated_assign(self, node: ast.AnnAssign, scope: _Scope) -> None:
        self._names_used(node.annotation)
        if node.value is None:
            return
        value_node = node.value
        if scope.config_class and type(node.target) is ast.Name:
            if _is_class_var(node.annotation):
                self._bind(node.target, value_node, self._evaluate(value_node, scope.env), scope)
                return
            self._field(node.target.id, value_node, scope)
            return
        self._expression(value_node, scope, container=_target_name(node.target))
        self._bind(node.target, value_node, self._evaluate(value_node, scope.env), scope)

    def _field(self, name: str, value: ast.expr, scope: _Scope) -> None:
        """A config class's field: `lr: float = 3e-4`, field(default=3e-4), Field(3e-4), attr.ib(default=3e-4)."""
        self._expression(value, scope)
        default = _field_default(value)
        if default is not None:  # not a default_factory
            before = len(self.values)
            evaluation = self._evaluate(default, scope.env)
            self._value(name, evaluation, default, "config-default", call=scope.qualname, always=True)
            self._start(scope, name, evaluation.value, before)

    def _bind(self, target: ast.expr, value_node: ast.expr, evaluation: _Evaluation, scope: _Scope) -> None:
        kind = type(target)
        copied = type(value_node) is ast.Name  # `self.rho = rho` restates a value already reported
        if kind is ast.Name:
            # Module and class attributes are settings as written; a function's locals only when named so.
            if not copied:
                before = len(self.values)
                self._value(target.id, evaluation, value_node, "assignment", always=scope.kind != "function")
                self._start(scope.owner_of(target.id), target.id, evaluation.value, before)
            if evaluation.value is not None:
                scope.env[target.id] = _Binding(
                    evaluation.value,
                    self._origin_location(value_node, evaluation),
                    from_default=evaluation.origin is not None and evaluation.origin.from_default,
                )
            else:
                scope.env.pop(target.id, None)
        elif kind is ast.Attribute:
            self._expression(target.value, scope)
            if _root_name(target) not in ("self", "cls"):
                self.assigned_attributes.add(target.attr)
            if not copied:
                written = _dotted(target) or target.attr
                before = len(self.values)
                self._value(written, evaluation, value_node, "assignment", always=False, last_part=target.attr)
                if _root_name(target) in ("self", "cls") and type(target.value) is ast.Name:
                    self._start(scope.enclosing_class(), target.attr, evaluation.value, before)
        elif kind is ast.Subscript:
            self._expression(target.value, scope)
            key = target.slice
            if type(key) is ast.Constant and type(key.value) is str:
                if copied:
                    return
                written = f"{_dotted(target.value) or '…'}[{key.value!r}]"
                self._value(written, evaluation, value_node, "assignment", always=False, last_part=key.value)
            else:
                self._expression(key, scope)
        elif kind in (ast.Tuple, ast.List):
            values = value_node.elts if type(value_node) in (ast.Tuple, ast.List) else None
            if (
                values is not None
                and len(values) == len(target.elts)
                and not any(type(v) is ast.Starred for v in values)
            ):
                for element_target, element_value in zip(target.elts, values, strict=True):
                    self._bind(element_target, element_value, self._evaluate(element_value, scope.env), scope)
            else:
                for name in _names_in_target(target):
                    scope.env.pop(name, None)
        else:
            for name in _names_in_target(target):
                scope.env.pop(name, None)

    def _augmented_assign(self, node: ast.AugAssign, scope: _Scope) -> None:
        self._expression(node.value, scope)
        self._accumulate(node.target, node.op, scope)
        if type(node.target) is ast.Name:
            scope.env.pop(node.target.id, None)
        else:
            self._expression(node.target, scope)

    def _if(self, node: ast.If, scope: _Scope) -> None:
        self._expression(node.test, scope)
        self._branches(node.test, node.body, node.orelse, scope)

    def _while(self, node: ast.While, scope: _Scope) -> None:
        self._expression(node.test, scope)
        truth = self._truth(node.test, scope.env)
        if truth is True and node.orelse:  # `while True:` leaves only by break: its else never runs
            self._mark_dead(node.orelse[0], node.orelse[-1])
        elif truth is False:
            self._mark_dead(node.body[0], node.body[-1])
        self._loops += 1
        self._alternatives([node.body, node.orelse], scope)
        self._loops -= 1

    def _branches(self, test: ast.expr, body: list[ast.stmt], orelse: list[ast.stmt], scope: _Scope) -> None:
        truth = self._truth(test, scope.env)
        if truth is None:
            self._alternatives([body, orelse], scope, variants=[_variant_tested(test)])
            return
        live, dead = (body, orelse) if truth else (orelse, body)
        if dead:
            self._mark_dead(dead[0], dead[-1])
            self._alternatives([dead], scope)
        self._body(live, scope)

    def _alternatives(self, blocks: list[list[ast.stmt]], scope: _Scope, variants: list[tuple[str | None, str] | None] | None = None) -> None:
        """Blocks that may or may not run: a name keeps its value after them only if none rebinds it.
        `variants`: what each block is for, when a test says (`if model_variant == "llama2_70b":`,
        `case "llama2_70b":`)."""
        before = scope.env
        kept = dict(before)
        for position, block in enumerate(blocks):
            scope.env = dict(before)
            first = len(self.values)
            self._body(block, scope)
            variant = variants[position] if variants and position < len(variants) else None
            if variant is not None:
                tested, literal = variant
                self.values[first:] = [
                    site if site.variant else site.model_copy(update={"variant": literal, "variant_of": tested}) for site in self.values[first:]
                ]
            kept = {name: binding for name, binding in kept.items() if scope.env.get(name) is binding}
        scope.env = kept

    def _for(self, node: ast.For | ast.AsyncFor, scope: _Scope) -> None:
        self._expression(node.iter, scope)
        for name in _names_in_target(node.target):
            scope.env.pop(name, None)
        self._loops += 1
        self._alternatives([node.body, node.orelse], scope)
        self._loops -= 1

    def _with(self, node: ast.With | ast.AsyncWith, scope: _Scope) -> None:
        for item in node.items:
            self._expression(item.context_expr, scope)
            if item.optional_vars is not None:
                for name in _names_in_target(item.optional_vars):
                    scope.env.pop(name, None)
        self._body(node.body, scope)

    def _try(self, node: ast.Try, scope: _Scope) -> None:
        blocks = [node.body, *(handler.body for handler in node.handlers), node.orelse, node.finalbody]
        for handler in node.handlers:
            if handler.type is not None:
                self._expression(handler.type, scope)
        self._alternatives([block for block in blocks if block], scope)

    def _match(self, node: ast.Match, scope: _Scope) -> None:
        self._expression(node.subject, scope)
        for case in node.cases:
            if case.guard is not None:
                self._expression(case.guard, scope)
        tested = _dotted(node.subject)
        self._alternatives([case.body for case in node.cases], scope, variants=[_case_variant(tested, case.pattern) for case in node.cases])

    def _import(self, node: ast.Import, scope: _Scope) -> None:
        for alias in node.names:
            if alias.asname:
                self._aliases[alias.asname] = alias.name
            else:
                root = alias.name.split(".", 1)[0]
                self._aliases[root] = root
            scope.env.pop(alias.asname or alias.name.split(".", 1)[0], None)

    def _import_from(self, node: ast.ImportFrom, scope: _Scope) -> None:
        module = "." * node.level + (node.module or "")
        for alias in node.names:
            workspace_module = _is_workspace_module(module)
            if alias.name == "*":
                if workspace_module:
                    self.imported.add(f"{module.rsplit('.', 1)[-1]}.*")
                self._library_star = self._library_star or module.split(".", 1)[0] in self.vocabulary.libraries
                continue
            self._aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
            if workspace_module:
                self.imported.add(alias.name)
            scope.env.pop(alias.asname or alias.name, None)

    def _declare(self, node: ast.Global | ast.Nonlocal, scope: _Scope) -> None:
        """`global n` binds n in the module; `nonlocal n` in the nearest enclosing function."""
        owner = scope.parent
        if type(node) is ast.Global:
            while owner is not None and owner.parent is not None:
                owner = owner.parent
        else:
            while owner is not None and owner.kind != "function":
                owner = owner.parent
        if owner is not None:
            for name in node.names:
                scope.declared[name] = owner.owner_of(name)

    def _delete(self, node: ast.Delete, scope: _Scope) -> None:
        for target in node.targets:
            for name in _names_in_target(target):
                scope.env.pop(name, None)

    def _children(self, node: ast.AST, scope: _Scope) -> None:
        for name in node._fields:
            if name in _SKIPPED_FIELDS:
                continue
            child = getattr(node, name, None)
            if isinstance(child, list):
                for item in child:
                    if isinstance(item, ast.stmt):
                        self._statement(item, scope)
                    elif isinstance(item, ast.AST):
                        self._expression(item, scope)
            elif isinstance(child, ast.stmt):
                self._statement(child, scope)
            elif isinstance(child, ast.AST):
                self._expression(child, scope)

    # -- expressions ------------------------------------------------------------------------------

    def _expression(self, root: ast.AST, scope: _Scope, container: str | None = None) -> None:
        """Every call, dict, component reference and name use in an expression. Iterative: a chain
        of 5000 `+` is an ast 5000 deep."""
        stack = [root]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is ast.Name:
                self._used.add(node.id)
                if node.id in self._aliases:
                    self._component_reference(node, node.id)
            elif kind is ast.Call:
                stack += self._call(node, scope, container if node is root else None)
            elif kind is ast.Attribute:
                if node.attr in self.vocabulary.last_parts and (dotted := _dotted(node)):
                    self._component_reference(node, dotted)
                if self._from_workspace(_root_name(node)):
                    self.imported.add(node.attr)
                stack.append(node.value)
            elif kind is ast.Constant:
                continue
            elif kind is ast.Dict:
                stack += self._dict_entries(_dict_literal_entries(node), scope, container if node is root else None, "")
            elif kind is ast.NamedExpr:
                scope.env.pop(node.target.id, None)
                stack.append(node.value)
            else:
                for name in node._fields:
                    if name in _SKIPPED_FIELDS:
                        continue
                    child = getattr(node, name, None)
                    if isinstance(child, list):
                        stack += [item for item in child if isinstance(item, ast.AST)]
                    elif isinstance(child, ast.AST):
                        stack.append(child)

    def _names_used(self, node: ast.AST) -> None:
        """Names a type annotation or an isinstance() check mentions: uses of them, not components."""
        self._used.update(child.id for child in ast.walk(node) if type(child) is ast.Name)

    def _component_reference(self, node: ast.AST, dotted: str) -> None:
        """A known block named without being called: `act_layer=nn.GELU`, `self.act = F.gelu`."""
        signature, _ = self._signature(dotted)
        if signature is not None and signature.kind is not None:
            self.components.append(
                component_site(signature.kind, signature.component, dotted, self.text.location_of_node(node))
            )

    def _call(self, node: ast.Call, scope: _Scope, container: str | None) -> list[ast.AST]:
        """Record the call (its component, its arguments' values, what it passes); return the
        sub-expressions still to walk."""
        func = node.func
        dotted = _dotted(func)
        pending: list[ast.AST] = [func.value] if type(func) is ast.Attribute else ([] if dotted else [func])
        if type(func) is ast.Name:
            self._used.add(func.id)
        elif type(func) is ast.Attribute and self._from_workspace(_root_name(func)):
            self.imported.add(func.attr)
        last = dotted.rsplit(".", 1)[-1] if dotted else None
        self._config_paths(node, dotted)

        if last == "add_argument" or (last == "option" and self._resolve(dotted).startswith("click.")):
            self._command_line_option(node, scope)
            return pending + [keyword.value for keyword in node.keywords]
        if last in _FLAG_DEFINITIONS:
            self._flag_definition(node, scope)
            return pending + node.args + [keyword.value for keyword in node.keywords]
        if last == "dict" and type(func) is ast.Name and "dict" not in scope.env:
            return pending + self._dict_entries(_dict_call_entries(node), scope, container, "")
        if dotted and any(dotted == end or dotted.endswith("." + end) for end in self.vocabulary.reporting_calls):
            # `wandb.log({"lr": 0.1})` reports what it is given: its dicts set nothing (calls in it still run)
            reported = []
            for argument in [*node.args, *(keyword.value for keyword in node.keywords)]:
                if type(argument) is ast.Dict or (type(argument) is ast.Call and _dotted(argument.func) == "dict"):
                    self._names_used(argument)
                else:
                    reported.append(argument)
            return pending + reported
        if last in ("isinstance", "issubclass") and len(node.args) == 2:
            self._names_used(node.args[1])  # isinstance(m, nn.LayerNorm) uses no LayerNorm
            return [node.args[0]]

        signature, library = self._signature(dotted) if dotted else (None, False)
        if signature is not None and signature.kind is not None:
            self.components.append(
                component_site(signature.kind, signature.component, dotted, self.text.location_of_node(func))
            )
        if last == "set_defaults":
            self.assigned_attributes.update(k.arg for k in node.keywords if k.arg)
        elif last == "setattr" and len(node.args) > 1 and type(node.args[1]) is ast.Constant:
            self.assigned_attributes.add(str(node.args[1].value))
        self._record_call(node, last)

        written_call = dotted or self.text.segment_of_node(func)
        component = signature.component if signature is not None else None
        # What surrounds the call, nearest first: `val_loader = DataLoader(val_set, ...)` in `def evaluate()`.
        function = scope.qualname.rsplit(".", 1)[-1] if scope.kind == "function" and scope.qualname else None
        context = [container, _dotted(node.args[0]) if node.args else None, function]
        # A library's parameters, or those of this file's own function called by its bare name.
        local = self._local_parameters.get(func.id, []) if type(func) is ast.Name else []
        parameters = signature.params if library else local
        for position, argument in enumerate(node.args):
            if type(argument) is ast.Starred:
                break
            if position < len(parameters):
                parameter = parameters[position]
                setting = setting_of(parameter, signature if library else None)
                if setting is not None and for_evaluation(setting, [_dotted(argument), *context]):
                    setting = None
                evaluation = self._evaluate(argument, scope.env)
                if setting is not None or (
                    library and parameter in signature.defaults and evaluation.value is not None
                ):
                    self._value(
                        parameter,
                        evaluation,
                        argument,
                        "positional",
                        call=written_call,
                        component=component,
                        setting=setting,
                        always=True,
                    )
        for keyword in node.keywords:
            if keyword.arg is None:
                continue
            setting = setting_of(keyword.arg, signature if library else None)
            if setting is not None and for_evaluation(setting, [_dotted(keyword.value), *context]):
                setting = None
            evaluation = self._evaluate(keyword.value, scope.env)
            # A library's argument that has a default is kept, so a later check can tell it from the default.
            always = library and keyword.arg in signature.defaults and evaluation.value is not None
            self._value(
                keyword.arg,
                evaluation,
                keyword.value,
                "keyword",
                call=written_call,
                component=component,
                setting=setting,
                always=always,
            )
        return pending + node.args + [keyword.value for keyword in node.keywords]

    def _record_call(self, node: ast.Call, callee: str | None) -> None:
        """What the call passes, for telling which defaults of the workspace's own functions it overrides."""
        arguments = node.args
        function = node.func
        if callee == "partial" and arguments:  # functools.partial(build, lr=0.1) calls build
            function, arguments = arguments[0], arguments[1:]
            callee = (_dotted(function) or "").rsplit(".", 1)[-1] or None
        if not callee or callee == "__init__" or callee in _BUILTINS:
            return
        root = _root_name(function) if type(function) is ast.Attribute else None
        if root in self._aliases and not self._from_workspace(root):
            return  # torch.zeros(...), np.mean(...): never a workspace function
        record = self._calls.get(callee)
        if record is None:
            record = self._calls[callee] = [set(), 0, False]
        starred = any(type(argument) is ast.Starred for argument in arguments)
        record[0].update(k.arg for k in node.keywords if k.arg)
        record[1] = max(record[1], len(arguments))
        record[2] = record[2] or starred or any(k.arg is None for k in node.keywords)

    def _command_line_option(self, node: ast.Call, scope: _Scope) -> None:
        """parser.add_argument("--lr", type=float, default=3e-4); click.option("--lr", default=3e-4)."""
        options = [a.value for a in node.args if type(a) is ast.Constant and type(a.value) is str]
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        if not options or "default" not in keywords:
            return
        long_options = [option for option in options if option.startswith("--")]
        dest_node = keywords.get("dest")
        if type(dest_node) is ast.Constant and type(dest_node.value) is str:
            dest = dest_node.value
        else:
            dest = (long_options or options)[0].lstrip("-").replace("-", "_")
        default = keywords["default"]
        # Named by its dest, so that `args.lr = ...` elsewhere is seen to replace it.
        name = dest if "dest" in keywords else (long_options or options)[0]
        recorded = len(self.values)
        self._value(name, self._evaluate(default, scope.env), default, "argparse-default", setting=normalize_name(dest), always=True)
        help_node = keywords.get("help")
        if len(self.values) > recorded and type(help_node) is ast.Constant and type(help_node.value) is str:
            self.values[recorded] = self.values[recorded].model_copy(update={"help": " ".join(help_node.value.split())})

    def _flag_definition(self, node: ast.Call, scope: _Scope) -> None:
        """absl: flags.DEFINE_float("learning_rate", 3e-4, "help")."""
        arguments = list(node.args)
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        name_node = keywords.get("name", arguments[0] if arguments else None)
        default = keywords.get("default", arguments[1] if len(arguments) > 1 else None)
        if type(name_node) is ast.Constant and type(name_node.value) is str and default is not None:
            self._value(name_node.value, self._evaluate(default, scope.env), default, "argparse-default", always=True)

    def _config_paths(self, node: ast.Call, dotted: str | None) -> None:
        """String literals naming a config file, and Hydra's config_path/config_name."""
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        for argument in [*node.args, *keywords.values()]:
            if (
                type(argument) is ast.Constant
                and type(argument.value) is str
                and _CONFIG_PATH_RE.fullmatch(argument.value)
            ):
                self._config_reference(argument.value, argument)
        name = keywords.get("config_name")
        if (
            type(name) is ast.Constant
            and type(name.value) is str
            and dotted
            and dotted.rsplit(".", 1)[-1] in ("main", "compose")
        ):
            folder = keywords.get("config_path")
            prefix = (
                folder.value.rstrip("/") + "/" if type(folder) is ast.Constant and isinstance(folder.value, str) else ""
            )
            path = prefix + name.value
            if not _CONFIG_PATH_RE.fullmatch(name.value):
                path += ".yaml"
            self._config_reference(path, name)

    def _config_reference(self, path: str, node: ast.AST) -> None:
        self.config_references.append(
            ConfigReference.model_construct(path=path, resolved=None, location=self.text.location_of_node(node))
        )

    def _dict_entries(
        self, entries: list[tuple[str | None, ast.expr]], scope: _Scope, container: str | None, prefix: str
    ) -> list[ast.AST]:
        """{"lr": 3e-4} and dict(lr=3e-4): an entry is a setting when its key names one, or when the
        dict holds settings (a config dict); `type`/`_target_` names the callable the entries are for
        (mmcv's optimizer=dict(type="AdamW", lr=...)). Returns the values still to walk."""
        pending: list[ast.AST] = []
        signature = None
        for key, value in entries:
            if key in self.vocabulary.target_keys and type(value) is ast.Constant and type(value.value) is str:
                signature = self._named_target(value, container)
        known = signature is not None or any(key is not None and normalize_name(key) for key, _ in entries)
        param_group = any(key == "params" for key, _ in entries)  # torch.optim's [{"params": ..., ...}, ...]
        for key, value in entries:
            if key is None:
                pending.append(value)
                continue
            name = f"{prefix}.{key}" if prefix else key
            nested = _dict_literal_entries(value) if type(value) is ast.Dict else None
            if nested is None and type(value) is ast.Call and _dotted(value.func) == "dict":
                nested = _dict_call_entries(value)
                pending.append(value.func)
            if nested is not None:
                pending += self._dict_entries(nested, scope, key, name)
                continue
            pending.append(value)
            if key in self.vocabulary.target_keys:
                continue
            evaluation = self._evaluate(value, scope.env)
            setting = setting_of(key, signature)
            if param_group and setting == "weight_decay" and evaluation.value == 0 and type(evaluation.value) is float:
                continue  # {"params": no_decay, "weight_decay": 0.0} keeps biases and norms out of the decay
            self._value(
                name,
                evaluation,
                value,
                "dict-entry",
                setting=setting,
                always=known,
                last_part=key,
                component=signature.component if signature else None,
                parent=container,
            )
        return pending

    def _named_target(self, value: ast.Constant, container: str | None) -> Signature | None:
        """The callable a `type`/`_target_` string names, recorded as a component; else the component
        the string names in the container's kind (`scheduler = dict(type="cosine")`)."""
        signature = self.vocabulary.signature(value.value)
        location = self.text.location_of_node(value)
        if signature is not None and signature.kind is not None:
            self.components.append(component_site(signature.kind, signature.component, value.value, location))
            return signature
        found = text_component(normalize_name(container) if container else None, container or "", value.value)
        if found is not None:
            self.components.append(component_site(found[0], found[1], value.value, location))
        return signature

    # -- values -----------------------------------------------------------------------------------

    def _value(
        self,
        name: str,
        evaluation: _Evaluation,
        node: ast.expr,
        kind: str,
        *,
        always: bool,
        call: str | None = None,
        component: str | None = None,
        setting: str | None | bool = False,
        last_part: str | None = None,
        parent: str | None = None,
    ) -> None:
        """Record a value site when it may be a setting: its name is a known setting (`setting`, or what
        the name says when `setting` is False), or `always` and the value is a number or a flag.
        A string that names a component (optimizer="adamw") is also a component site."""
        if setting is False:
            setting = normalize_name(last_part or name)
        value = evaluation.value
        location = None
        if type(value) is str:
            found = text_component(setting, last_part or name, value, parent)
            if found is not None:
                location = self.text.location_of_node(node)
                self.components.append(component_site(found[0], found[1], value, location))
        if value is None and kind in _KNOWN_VALUES_ONLY:
            return  # `lr = get_lr()`, `def f(lr=None)`, {"lr": lr}: nothing to compare
        if setting is not None:
            if setting in self.vocabulary.text_kinds and type(value) is not str:
                return  # optimizer = torch.optim.AdamW(...): the component is the call, not a value
        elif not (always and value is not None and (type(value) is not str or kind != "assignment")):
            if not (type(value) is bool and technique_switched(last_part or name)):
                return  # a switch (`use_ema=True`) is kept: it turns a technique on or off
        if location is None:
            location = self.text.location_of_node(node)
        elements = None
        if type(value) is tuple and evaluation.element_nodes and setting in self.vocabulary.expand:
            elements = [
                Element(number, self.text.segment_of_node(element), self.text.location_of_node(element))
                for number, element in zip(value, evaluation.element_nodes, strict=True)
            ]
        self.values += value_sites(
            name=name,
            normalized=setting,
            value=value,
            raw=self.text.segment_of_node(node),
            kind=kind,
            location=location,
            elements=elements,
            call=call,
            component=component,
            resolved_from=evaluation.origin.location if evaluation.origin is not None else None,
        )

    def _origin_location(self, node: ast.expr, evaluation: _Evaluation) -> CodeLocation:
        """Where a bound value is written: the assignment's value, or further back where it came from."""
        if evaluation.origin is not None:
            return evaluation.origin.location
        return self.text.location_of_node(node)

    def _evaluate(self, node: ast.expr, env: dict[str, _Binding], depth: int = 0) -> _Evaluation:
        """The value of a literal expression: numbers (3e-4, 1/3, -x, 2**-4, 10_000), booleans, strings,
        tuples of numbers, and names bound to such values."""
        kind = type(node)
        if kind is ast.Constant:
            return _Evaluation(_constant(node.value))
        if depth > _MAX_EVALUATION_DEPTH:
            return _UNKNOWN
        if kind is ast.Name:
            binding = env.get(node.id)
            return _Evaluation(binding.value, binding) if binding is not None else _UNKNOWN
        if kind is ast.UnaryOp:
            operand = self._evaluate(node.operand, env, depth + 1)
            number = operand.value
            if type(number) is float:
                if type(node.op) is ast.USub:
                    return _Evaluation(-number, operand.origin)
                if type(node.op) is ast.UAdd:
                    return operand
            return _UNKNOWN
        if kind is ast.BinOp:
            return self._binary(node, env, depth)
        if kind in (ast.Tuple, ast.List):
            if len(node.elts) > _MAX_SETTING_ITEMS:
                return _UNKNOWN  # data written out, not a setting
            items = [self._evaluate(element, env, depth + 1) for element in node.elts]
            if items and all(type(item.value) is float for item in items):
                return _Evaluation(tuple(item.value for item in items), None, node.elts)
            return _UNKNOWN
        if (
            kind is ast.Call
            and type(node.func) is ast.Name
            and node.func.id in ("float", "int")
            and len(node.args) == 1
        ):
            inner = self._evaluate(node.args[0], env, depth + 1)
            number = _number_of(inner.value)
            if number is not None:
                return _Evaluation(float(int(number)) if node.func.id == "int" else number, inner.origin)
        return _UNKNOWN

    def _binary(self, node: ast.BinOp, env: dict[str, _Binding], depth: int) -> _Evaluation:
        apply = _BINARY_OPERATORS.get(type(node.op))
        if apply is None:
            return _UNKNOWN
        left = self._evaluate(node.left, env, depth + 1)
        right = self._evaluate(node.right, env, depth + 1)
        if type(left.value) is not float or type(right.value) is not float:
            return _UNKNOWN
        if apply is operator.pow and abs(right.value) > _MAX_EXPONENT:
            return _UNKNOWN
        try:
            result = apply(left.value, right.value)
        except (ArithmeticError, ValueError):
            return _UNKNOWN
        if type(result) is not float or not math.isfinite(result):
            return _UNKNOWN
        # A default among the operands matters most: if it is overridden, so is this value.
        origins = [o for o in (left.origin, right.origin) if o is not None]
        origin = next((o for o in origins if o.from_default), origins[0] if origins else None)
        return _Evaluation(result, origin)

    def _truth(self, test: ast.expr, env: dict[str, _Binding]) -> bool | None:
        """Whether a condition is decided by constants: True/False, or None when it depends on the run.
        A parameter's default decides nothing, since a caller may pass another value."""
        kind = type(test)
        if kind is ast.Constant:
            return bool(test.value)
        dotted = _dotted(test)
        if dotted is not None and dotted.rsplit(".", 1)[-1] == "TYPE_CHECKING":
            return False
        if kind is ast.Name:
            binding = env.get(test.id)
            if binding is None or binding.from_default or type(binding.value) is tuple:
                return None
            return bool(binding.value)
        if kind is ast.UnaryOp and type(test.op) is ast.Not:
            inner = self._truth(test.operand, env)
            return None if inner is None else not inner
        if kind is ast.BoolOp:
            truths = [self._truth(value, env) for value in test.values]
            decisive = type(test.op) is ast.Or
            if decisive in truths:
                return decisive
            return None if None in truths else not decisive
        if kind is ast.Compare and len(test.ops) == 1 and type(test.ops[0]) in _COMPARISONS:
            left = self._evaluate(test.left, env)
            right = self._evaluate(test.comparators[0], env)
            if any(e.origin is not None and e.origin.from_default for e in (left, right)):
                return None
            if left.value is None or right.value is None or type(left.value) is not type(right.value):
                return None
            try:
                return bool(_COMPARISONS[type(test.ops[0])](left.value, right.value))
            except TypeError:
                return None
        return None

    # -- symbols ----------------------------------------------------------------------------------

    def _from_workspace(self, name: str | None) -> bool:
        """Whether a name was imported from the workspace's own modules (not torch, not os)."""
        module = self._aliases.get(name or "")
        return module is not None and _is_workspace_module(module)

    def _resolve(self, dotted: str) -> str:
        """A dotted name through the file's imports (nn.GELU → torch.nn.GELU)."""
        root, _, rest = dotted.partition(".")
        module = self._aliases.get(root)
        if module is None and rest:
            module = self.vocabulary.module_aliases.get(root)
        if module is None:
            return dotted
        return f"{module}.{rest}" if rest else module

    def _signature(self, dotted: str) -> tuple[Signature | None, bool]:
        """The known callable a dotted name is, and whether it is the library's (so its parameters are
        the library's): `F.gelu`, `torch.optim.AdamW`, an imported `AdamW`; not `self.dropout` (a
        submodule), nor a lowercase bare name nobody imported (a variable)."""
        # Memoized by all the look-up reads of the walk's state (the root's import, a star import), so a
        # name looked up before an import that changes it is looked up again after it: what a
        # statement finds does not depend on what earlier statements looked up (incremental.py).
        key = (dotted, self._aliases.get(dotted.partition(".")[0]), self._library_star)
        cached = self._signatures.get(key)
        if cached is not None:
            return cached
        found = self._look_up(dotted)
        self._signatures[key] = found
        return found

    def _look_up(self, dotted: str) -> tuple[Signature | None, bool]:
        vocabulary = self.vocabulary
        parts = dotted.split(".")
        last, root = parts[-1], parts[0]
        if last not in vocabulary.last_parts:
            return None, False
        resolved = self._resolve(dotted)
        signature = vocabulary.signature(resolved)
        if signature is None:
            return None, False
        through_module = root in self._aliases or (len(parts) > 1 and root in vocabulary.module_aliases)
        in_library = resolved.split(".", 1)[0] in vocabulary.libraries
        distinctive = last.endswith("_")  # torch's in-place functions: clip_grad_norm_, trunc_normal_
        if len(parts) == 1:
            if through_module:
                return signature, in_library
            if root in self._local_parameters:  # the workspace's own GELU or LayerNorm
                return signature, False
            if last[0].isupper() or distinctive or self._library_star:
                return signature, self._library_star or distinctive
            return None, False
        if through_module and root not in ("self", "cls"):
            return signature, in_library
        if distinctive:
            return signature, True
        if root not in ("self", "cls") and (last in vocabulary.tensor_methods or last[0].isupper()):
            return signature, last in vocabulary.tensor_methods
        return None, False


_STATEMENT_HANDLERS: dict[type, Callable[[_Indexer, ast.stmt, _Scope], None]] = {
    ast.FunctionDef: _Indexer._function,
    ast.AsyncFunctionDef: _Indexer._function,
    ast.ClassDef: _Indexer._class,
    ast.Assign: _Indexer._assign,
    ast.AnnAssign: _Indexer._annotated_assign,
    ast.AugAssign: _Indexer._augmented_assign,
    ast.If: _Indexer._if,
    ast.While: _Indexer._while,
    ast.For: _Indexer._for,
    ast.AsyncFor: _Indexer._for,
    ast.With: _Indexer._with,
    ast.AsyncWith: _Indexer._with,
    ast.Try: _Indexer._try,
    ast.Match: _Indexer._match,
    ast.Import: _Indexer._import,
    ast.ImportFrom: _Indexer._import_from,
    ast.Delete: _Indexer._delete,
    ast.Global: _Indexer._declare,
    ast.Nonlocal: _Indexer._declare,
}
if hasattr(ast, "TryStar"):
    _STATEMENT_HANDLERS[ast.TryStar] = _Indexer._try


# --- ast helpers ---------------------------------------------------------------------------------


_IMPORT_LINE_RE = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+\(?([\w, \t]+)|import[ \t]+([\w., \t]+))", re.M)


@functools.lru_cache(maxsize=8)  # the editor re-indexes a file after each edit, most leave its imports be
def _imported_modules(source: str) -> tuple[str, ...]:
    """`import torch.distributed as dist`, `from accelerate import Accelerator` → torch.distributed,
    accelerate.Accelerator: what the file's import statements name, by absolute name."""
    found = set()
    for match in _IMPORT_LINE_RE.finditer(source):
        module, names, plain = match.groups()
        if plain:
            found |= {part.split()[0] for part in plain.split(",") if part.strip()}
        elif module and not module.startswith("."):
            found |= {f"{module}.{part.split()[0]}" for part in names.split(",") if part.strip()}
    return tuple(sorted(found))


def _is_workspace_module(module: str) -> bool:
    """Not a library the vocabulary knows, nor the standard library: the workspace's own (or unknown)."""
    root = module.split(".", 1)[0]
    if not root:
        return True  # a relative import
    return root not in code_vocabulary().libraries and root not in sys.stdlib_module_names


def _constant(value: object) -> Value:
    kind = type(value)
    if kind is bool or kind is str:
        return value
    if kind is int or kind is float:
        try:
            number = float(value)
        except OverflowError:
            return None
        return number if math.isfinite(number) else None
    return None


def _number_of(value: Value) -> float | None:
    if type(value) is float:
        return value
    if type(value) is str:
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _dotted(node: ast.AST) -> str | None:
    """`torch.optim.AdamW` for an attribute chain on a name; None for anything else (`f().x`)."""
    parts = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not ast.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _root_name(node: ast.Attribute) -> str | None:
    while type(node) is ast.Attribute:
        node = node.value
    return node.id if type(node) is ast.Name else None


def _called(node: ast.expr) -> ast.expr:
    """A decorator's callee: `dataclass` of @dataclass(frozen=True)."""
    return node.func if type(node) is ast.Call else node


# What a learning rate a loop writes into an optimizer's groups follows: a schedule written by hand.
HAND_WRITTEN_SCHEDULE = "hand-written schedule"


def _is_learning_rate_item(target: ast.expr) -> bool:
    """`param_group["lr"]`, `optimizer.param_groups[0]['lr']`."""
    return type(target) is ast.Subscript and type(target.slice) is ast.Constant and target.slice.value == "lr"


# `timesteps = torch.randint(999, T, (b,)).long()`: the first diffusion timestep a training step draws.
_TIMESTEP_NAME_RE = re.compile(r"(?i)t|ts|timesteps?|time_steps?")


def _randint_low(value: ast.expr) -> ast.expr | None:
    """The lower bound of a `randint(low, high, ...)` the value is (through `.long()`, `.to(device)`)."""
    while type(value) is ast.Call and type(value.func) is ast.Attribute and value.func.attr != "randint":
        value = value.func.value
    if type(value) is ast.Call and (_dotted(value.func) or "").rsplit(".", 1)[-1] == "randint" and len(value.args) >= 2:
        return value.args[0]
    return None


def _target_name(target: ast.expr) -> str | None:
    if type(target) is ast.Name:
        return target.id
    if type(target) is ast.Attribute:
        return target.attr
    return None


def _case_variant(tested: str | None, pattern: ast.pattern) -> tuple[str | None, str] | None:
    """`case "llama2_70b":`, `case "vit_b" | "vit_l":` under `match args.model:`: what the case is for."""
    patterns = pattern.patterns if type(pattern) is ast.MatchOr else [pattern]
    strings = [p.value.value for p in patterns if type(p) is ast.MatchValue and type(p.value) is ast.Constant and type(p.value.value) is str]
    if not strings or len(strings) != len(patterns):
        return None
    return (tested.rsplit(".", 1)[-1] if tested else None), " ".join(strings)


def _variant_tested(test: ast.expr) -> tuple[str | None, str] | None:
    """The name a test compares and the string(s) it compares it with: `args.variant == "llama2_70b"`,
    `name in ("vit_b", "vit_l")`, `"cifar" in dataset` — what the branch it opens is for."""
    if type(test) is not ast.Compare or len(test.ops) != 1:
        return None
    left, right, operator = test.left, test.comparators[0], test.ops[0]
    if type(operator) is ast.Eq:
        strings = [side.value for side in (left, right) if type(side) is ast.Constant and type(side.value) is str]
        tested = next((side for side in (left, right) if type(side) is not ast.Constant), None)
    elif type(operator) is ast.In:
        container = right.elts if type(right) in (ast.Tuple, ast.List, ast.Set) else [left]
        strings = [element.value for element in container if type(element) is ast.Constant and type(element.value) is str]
        tested = left if type(right) in (ast.Tuple, ast.List, ast.Set) else right
    else:
        return None
    if not strings:
        return None
    name = _dotted(tested) if tested is not None else None
    if name == "__name__":
        return None  # `if __name__ == "__main__":` is the script's entry, not a variant
    return (name.rsplit(".", 1)[-1] if name else None), " ".join(strings)


def _names_in_target(target: ast.expr) -> list[str]:
    if type(target) is ast.Name:
        return [target.id]
    if type(target) in (ast.Tuple, ast.List):
        return [name for element in target.elts for name in _names_in_target(element)]
    if type(target) is ast.Starred:
        return _names_in_target(target.value)
    return []


def _bound_names(statement: ast.stmt) -> list[str]:
    """Names a module-level statement (or any block inside it, not a def's body) binds."""
    kind = type(statement)
    if kind is ast.Assign:
        return [name for target in statement.targets for name in _names_in_target(target)]
    if kind in (ast.AugAssign, ast.AnnAssign):
        return _names_in_target(statement.target)
    if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        return [statement.name]
    if kind in (ast.Import, ast.ImportFrom):
        return [alias.asname or alias.name.split(".", 1)[0] for alias in statement.names]
    if kind in (ast.For, ast.AsyncFor):
        names = _names_in_target(statement.target)
    elif kind in (ast.With, ast.AsyncWith):
        names = [n for item in statement.items if item.optional_vars for n in _names_in_target(item.optional_vars)]
    else:
        names = []
    for block in ("body", "orelse", "finalbody", "handlers"):
        for inner in getattr(statement, block, ()):
            names += _bound_names(inner) if isinstance(inner, ast.stmt) else _bound_names_of_handler(inner)
    return names


def _bound_names_of_handler(handler: ast.AST) -> list[str]:
    names = [handler.name] if getattr(handler, "name", None) else []
    return names + [name for inner in getattr(handler, "body", ()) for name in _bound_names(inner)]


def _string_items(node: ast.expr) -> list[str]:
    if type(node) in (ast.List, ast.Tuple):
        return [e.value for e in node.elts if type(e) is ast.Constant and type(e.value) is str]
    return []


def _running_extreme(target: ast.expr, value: ast.expr) -> bool:
    """`low = min(low, x)`, `self.best = max(self.best, acc)`: a name kept as the extreme seen so far."""
    written = _dotted(target) if type(target) in (ast.Name, ast.Attribute) else None
    return (
        written is not None
        and type(value) is ast.Call
        and type(value.func) is ast.Name
        and value.func.id in ("min", "max")
        and any(_dotted(argument) == written for argument in value.args)
    )


def _same_target(target: ast.expr, value: ast.BinOp) -> bool:
    """`total = total + x` or `total = x + total`: a name (or self.attribute) updated from itself."""
    written = _dotted(target) if type(target) in (ast.Name, ast.Attribute) else None
    operands = (value.left, value.right) if type(value.op) is ast.Add else (value.left,)
    return written is not None and any(_dotted(operand) == written for operand in operands)


def _is_docstring(statement: ast.stmt) -> bool:
    return type(statement) is ast.Expr and type(statement.value) is ast.Constant and type(statement.value.value) is str


def _positional_parameters(arguments: ast.arguments, *, method: bool) -> list[str]:
    names = [arg.arg for arg in [*arguments.posonlyargs, *arguments.args]]
    return names[1:] if method and names else names


def _constructor_parameters(node: ast.ClassDef, *, config_class: bool) -> list[str]:
    """What a class's callers pass by position: its __init__'s parameters, else a config class's fields."""
    for statement in node.body:
        if type(statement) is ast.FunctionDef and statement.name == "__init__":
            return _positional_parameters(statement.args, method=True)
    if not config_class:
        return []
    fields = []
    for statement in node.body:
        if type(statement) is ast.AnnAssign and type(statement.target) is ast.Name:
            if not _is_class_var(statement.annotation):
                fields.append(statement.target.id)
        elif (
            type(statement) is ast.Assign and type(statement.targets[0]) is ast.Name and _is_field_call(statement.value)
        ):
            fields.append(statement.targets[0].id)  # attrs: tau = attr.ib(default=0.07)
    return fields


def _is_class_var(annotation: ast.expr) -> bool:
    head = annotation.value if type(annotation) is ast.Subscript else annotation
    return (_dotted(head) or "").rsplit(".", 1)[-1] == "ClassVar"


def _is_field_call(value: ast.expr) -> bool:
    return type(value) is ast.Call and (_dotted(value.func) or "").rsplit(".", 1)[-1] in _FIELD_CALLS


def _field_default(value: ast.expr) -> ast.expr | None:
    """The default of a field: `3e-4`, or field(default=3e-4) / Field(3e-4); None for default_factory."""
    if not _is_field_call(value):
        return value
    for keyword in value.keywords:
        if keyword.arg == "default":
            return keyword.value
    if value.args and (_dotted(value.func) or "").endswith("Field"):
        return value.args[0]  # pydantic's Field(3e-4)
    return None


def _dict_literal_entries(node: ast.Dict) -> list[tuple[str | None, ast.expr]]:
    """(key, value) for string keys; (None, expression) for everything else there is to walk."""
    entries: list[tuple[str | None, ast.expr]] = []
    for key, value in zip(node.keys, node.values, strict=True):
        if type(key) is ast.Constant and type(key.value) is str:
            entries.append((key.value, value))
        else:
            entries += [(None, key)] if key is not None else []
            entries.append((None, value))
    return entries


def _dict_call_entries(node: ast.Call) -> list[tuple[str | None, ast.expr]]:
    return [(keyword.arg, keyword.value) for keyword in node.keywords] + [(None, argument) for argument in node.args]

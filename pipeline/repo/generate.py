"""The generate step: an LLM writes each planned module's implementation over its scaffold.

`generate_file` asks for one module's whole new text and checks every answer before it is kept;
`generate_modules` runs it over the plan's modules in dependency order and writes what it accepts.

The model sees the module as it stands (the scaffold: a function per equation raising
NotImplementedError, docstrings quoting the equations with `Eq. (N)` anchors, stated constants,
TODO(paperlens) lines), the equations it implements, the public names of the planned files it
imports, and the rules. Its answer is untrusted input, kept only when

1. it parses;
2. its imports resolve within the plan: a local import names a planned file (and a name defined
   there), anything else is the standard library or a distribution the repository declares;
3. it keeps what the scaffold defined: every public module-level name (and every name the module's
   tests import), every parameter of its functions (tests pass them by name), every equation anchor
   (the checks link code to the paper through them), and it implements at least one stub;
4. its values agree with the paper: a divergence from a stated value refuses it, a guess (a value the
   paper never states) is kept and recorded.

A refused answer is asked again with what was wrong, up to `attempts` answers in all; when none
passes, the scaffold stays. An LLMError (no endpoint, no valid answer) propagates to the caller.

The prompt is bounded by the model's context (`context_tokens`, 4,096 by default, the local test
model's) less the answer's `max_output_tokens`: the answer restates the whole file. A file whose
answer could not fit the client's `max_output_tokens` is not asked for at all: the answer would be cut
off, and that is an LLMError that stops the step.
"""

from __future__ import annotations

import ast
import json
import logging
import sys
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ...schemas import DecisionsFile, FileIndex, PaperSpec
from ...schemas.repo import GeneratedFile, PlannedFile, RepoPlan
from ..check import PaperFacts, WorkspaceContext, check_file, paper_facts
from ..code import index_source
from ..files import write_atomically
from ..llm import CHARS_PER_TOKEN, LLMClient, prompt_budget_chars
from ..sandbox.deps import (
    covering_names,
    declared_requirements,
    distribution_for,
    normalize,
)
from ..text import shorten
from .answers import FileText, code_of

__all__ = ["generate_file", "generate_modules"]

log = logging.getLogger(__name__)

PURPOSE = "generate-module"
MAX_PROBLEMS_RESTATED = 6  # a re-ask names this many problems at most, each cut to MAX_PROBLEM_CHARS
MAX_PROBLEM_CHARS = 300
MAX_QUOTED_LINE_CHARS = 80

# The planned files whose stubs the model writes: the method's modules, then the training step and
# the evaluation that call them (plan order). Data loading stays the user's: it reads files.
GENERATED_ROLES = ("module", "train", "evaluate")

SYSTEM_PROMPT = """\
You implement one Python module of a repository that reproduces a research paper. You are given
the module's current text: functions that still raise NotImplementedError, with docstrings quoting
the paper's equations. Write their bodies so that each computes its equation, and answer with the
whole new text of the file.
Rules:
- Keep every public function and class, with its name and its parameters: tests import them and
  pass the parameters by name.
- Keep every docstring with its `Eq. (N)` anchor, and every constant the paper states, with its value.
- Do not invent a value the paper leaves open (a TODO(paperlens) line): take it as a parameter, or
  leave that function raising NotImplementedError.
- Import only the standard library, {distributions}, and the repository's own modules listed below
  (package `{package}`).
- No file or network I/O.
- Answer with the complete file, never an excerpt or a diff."""


def generate_file(
    repo: Path,
    planned: PlannedFile,
    plan: RepoPlan,
    spec: PaperSpec,
    client: LLMClient,
    facts: PaperFacts,
    *,
    attempts: int = 2,
) -> tuple[str | None, GeneratedFile]:
    """The implementation of the planned module `planned`, written by the model over the file's current
    text in `repo`, and the record of what happened. Writes nothing.

    Returns the accepted text, or None when every answer was refused (or the file is too long to ask
    for). Raises LLMError when the model gives no usable answer, OSError when the file cannot be read.
    """
    if attempts < 1:
        raise ValueError(f"attempts must be at least 1, not {attempts}")
    repo = Path(repo)
    current = (repo / planned.path).read_text(encoding="utf-8")
    context = _Context.of(repo, planned, plan, current)
    answer_tokens = len(json.dumps({"content": current}, ensure_ascii=False)) // CHARS_PER_TOKEN
    if answer_tokens > client.settings.max_output_tokens:
        problem = (
            f"not asked: an answer restating {planned.path} takes about {answer_tokens} tokens, more than the "
            f"model may write ({client.settings.max_output_tokens}, max_output_tokens); raise that bound"
        )
        return None, GeneratedFile(path=planned.path, status="kept-scaffold", attempts=0, problems=[problem])
    messages = _messages(planned, spec, current, context, prompt_budget_chars(client.settings))
    conversation = messages
    refused: list[str] = []
    for attempt in range(1, attempts + 1):
        text = code_of(client.structured(conversation, FileText, purpose=PURPOSE))
        problems, findings = _review(text, planned, context, facts)
        if not problems:
            log.info("generate %s: accepted answer %d of %d", planned.path, attempt, attempts)
            record = GeneratedFile(
                path=planned.path, status="generated", attempts=attempt, problems=refused, findings=findings
            )
            return text, record
        log.info("generate %s: answer %d refused: %s", planned.path, attempt, "; ".join(problems))
        refused += [f"answer {attempt}: {problem}" for problem in problems]
        # The refused answer itself is left out: restating it would not fit the context.
        conversation = [*messages, {"role": "user", "content": _reask(planned.path, problems)}]
    return None, GeneratedFile(path=planned.path, status="kept-scaffold", attempts=attempts, problems=refused)


def generate_modules(
    repo: Path,
    plan: RepoPlan,
    spec: PaperSpec,
    client: LLMClient,
    *,
    decisions: DecisionsFile | None = None,
    attempts: int = 2,
    only: Collection[str] | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> list[GeneratedFile]:
    """Generate the plan's modules, training step and evaluation (those in `only`, by path, when
    given) in plan order, so that a file is written after what it imports, and write each accepted
    text atomically.

    An LLMError stops the step and propagates; the files written before it stay."""
    repo = Path(repo)
    modules = [f for f in plan.files if f.role in GENERATED_ROLES and (only is None or f.path in only)]
    facts = paper_facts(spec, decisions or DecisionsFile())
    records = []
    for number, planned in enumerate(modules, 1):
        if on_progress is not None:
            on_progress(f"generate {number}/{len(modules)}: {planned.path}")
        before = (repo / planned.path).read_bytes()
        text, record = generate_file(repo, planned, plan, spec, client, facts, attempts=attempts)
        if text is not None and (repo / planned.path).read_bytes() != before:  # edited while the model wrote
            problem = "changed on disk while the LLM was writing: kept as it is now"
            record = record.model_copy(update={"status": "kept-scaffold", "problems": [*record.problems, problem]})
        elif text is not None:
            write_atomically(repo / planned.path, text)
        records.append(record)
    return records


# -- what the answers are checked against ------------------------------------------------------------


@dataclass(slots=True)
class _Kept:
    """What every answer must keep of the file as it stands."""

    names: dict[str, int]  # public module-level name → its line in the file (or 0: only the tests name it)
    parameters: dict[str, tuple[int, list[str]]]  # function or Class.method → (line, parameter names)
    anchors: dict[str, int]  # equation number an anchor cites → its line
    stubs: set[str]  # functions and methods whose body only raises NotImplementedError


@dataclass(slots=True)
class _Context:
    """What the checks and the prompt know of the repository around one planned module."""

    root: Path
    path: str
    package: str
    modules: dict[str, str]  # dotted module name of every planned Python file → its path
    top_level: frozenset[str]  # the first part of those names: an import under one is local
    declared: frozenset[str]  # normalised distributions the repository declares
    distributions: list[str]  # as the requirements write them, for the prompt
    dependencies: list[str]  # the dotted names of the planned modules it depends on
    kept: _Kept
    defined_in: dict[str, set[str] | None] = field(default_factory=dict)  # module → its names, read once

    @classmethod
    def of(cls, root: Path, planned: PlannedFile, plan: RepoPlan, current: str) -> _Context:
        modules = {name: f.path for f in plan.files if (name := _module_name(f.path)) is not None}
        requirements, _ = declared_requirements(root)
        declared = [r for r in requirements if r.kind != "constraint"]
        dependencies = [_module_name(path) for path in planned.depends_on]
        return cls(
            root=root,
            path=planned.path,
            package=plan.package,
            modules=modules,
            top_level=frozenset(name.split(".")[0] for name in modules),
            declared=frozenset(normalize(r.name) for r in declared),
            distributions=sorted({r.name for r in declared}, key=str.lower),
            dependencies=[name for name in dependencies if name in modules],
            kept=_kept(planned, plan, root, current),
        )

    def names_of(self, module: str) -> set[str] | None:
        """The module-level names a planned module defines, as on disk; None when it cannot be read."""
        if module not in self.defined_in:
            try:
                source = (self.root / self.modules[module]).read_text(encoding="utf-8")
                self.defined_in[module] = set(_defined(ast.parse(source).body))
            except (OSError, SyntaxError, ValueError):
                self.defined_in[module] = None
        return self.defined_in[module]


def _module_name(path: str) -> str | None:
    """`tlm/mixing.py` → `tlm.mixing`, `tlm/__init__.py` → `tlm`; None for what is not a Python module."""
    pure = PurePosixPath(path)
    if pure.suffix != ".py":
        return None
    parts = pure.with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or None


def _kept(planned: PlannedFile, plan: RepoPlan, root: Path, current: str) -> _Kept:
    try:
        tree = ast.parse(current)
    except (SyntaxError, ValueError):
        tree = ast.Module(body=[], type_ignores=[])  # nothing to keep of it then, but what its tests import
    names = {name: line for name, line in _defined(tree.body).items() if not name.startswith("_")}
    for name in _imported_by_tests(planned, plan, root):
        names.setdefault(name, 0)
    functions = _functions(tree)
    return _Kept(
        names=names,
        parameters={name: (node.lineno, _parameters(node)) for name, node in functions.items() if _is_public(name)},
        anchors=_equation_anchors(index_source(planned.path, current)),
        stubs={name for name, node in functions.items() if _is_stub(node)},
    )


def _imported_by_tests(planned: PlannedFile, plan: RepoPlan, root: Path) -> list[str]:
    """The names the module's planned tests import from it (`from tlm.mixing import ...`, or from
    `mixing` as a test beside the module would)."""
    module = _module_name(planned.path) or ""
    stem = module.rsplit(".", 1)[-1]
    names = []
    for test in plan.files:
        if test.role != "test" or planned.path not in test.depends_on:
            continue
        try:
            tree = ast.parse((root / test.path).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module in (module, stem):
                names += [alias.name for alias in node.names if alias.name != "*"]
    return names


def _defined(statements: Iterable[ast.stmt]) -> dict[str, int]:
    """The names module-level code binds (definitions, assignments, imports, also under `if` and
    `try`), each with the line of its first binding."""
    names: dict[str, int] = {}
    for statement in statements:
        bound: list[str] = []
        match statement:
            case ast.FunctionDef() | ast.AsyncFunctionDef() | ast.ClassDef():
                bound = [statement.name]
            case ast.Assign():
                bound = [name for target in statement.targets for name in _assigned(target)]
            case ast.AnnAssign(target=ast.Name(id=name)) | ast.AugAssign(target=ast.Name(id=name)):
                bound = [name]
            case ast.Import():
                bound = [alias.asname or alias.name.split(".")[0] for alias in statement.names]
            case ast.ImportFrom():
                bound = [alias.asname or alias.name for alias in statement.names if alias.name != "*"]
            case ast.If() | ast.Try() | ast.TryStar() | ast.With():
                nested = [*statement.body, *getattr(statement, "orelse", []), *getattr(statement, "finalbody", [])]
                nested += [s for handler in getattr(statement, "handlers", []) for s in handler.body]
                for name, line in _defined(nested).items():
                    names.setdefault(name, line)
        for name in bound:
            names.setdefault(name, statement.lineno)
    return names


def _assigned(target: ast.expr) -> list[str]:
    """The names an assignment target binds: `a`, `a, (b, *c)`; not `a[i]` or `a.b`, which bind nothing new."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [name for element in target.elts for name in _assigned(element)]
    return _assigned(target.value) if isinstance(target, ast.Starred) else []


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Module-level functions and the methods of module-level classes, by (qualified) name."""
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for method in node.body:
                if isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
                    functions[f"{node.name}.{method.name}"] = method
    return functions


def _is_public(qualified_name: str) -> bool:
    """`mix_input`, `DyT.__call__`: what callers outside the module may call (`_helper` is not)."""
    parts = qualified_name.split(".")
    return all(not part.startswith("_") or part.startswith("__") and part.endswith("__") for part in parts)


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    arguments = node.args
    return [a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]]


def _equation_anchors(index: FileIndex) -> dict[str, int]:
    """The equation numbers a file's anchors cite, each with the (1-based) line of its first anchor."""
    anchors: dict[str, int] = {}
    for anchor in index.anchors:
        if anchor.target_kind == "equation":
            anchors.setdefault(anchor.target, anchor.location.line + 1)
    return anchors


def _is_stub(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = node.body[1:] if ast.get_docstring(node, clean=False) is not None else node.body
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    raised = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"


# -- the checks --------------------------------------------------------------------------------------


def _review(text: str, planned: PlannedFile, context: _Context, facts: PaperFacts) -> tuple[list[str], list[str]]:
    """(why the answer is refused, the guesses it makes): no problems means it is accepted."""
    lines = text.splitlines()
    try:
        tree = ast.parse(text, filename=planned.path)
    except SyntaxError as err:
        line = err.lineno or 1
        return [f"{_at(lines, line)}: {err.msg}"], []
    except ValueError as err:  # a null byte
        return [f"{planned.path}: {err}"], []
    index = index_source(planned.path, text)
    problems = _import_problems(tree, lines, context) + _kept_problems(tree, lines, index, context.kept)
    value_problems, findings = _value_findings(index, lines, context, facts)
    return problems + value_problems, findings


def _at(lines: list[str], line: int) -> str:
    """`line 7 (`x = = 1`)`: a problem names its line and shows it, since a re-ask does not repeat the answer."""
    shown = shorten(lines[line - 1].strip(), MAX_QUOTED_LINE_CHARS) if 0 < line <= len(lines) else ""
    return f"line {line} (`{shown}`)" if shown else f"line {line}"


def _import_problems(tree: ast.Module, lines: list[str], context: _Context) -> list[str]:
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found = [_module_problem(alias.name, None, context) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, context.path)
            if module is None:
                found = [f"the relative import climbs above the package {context.package}"]
            else:
                found = [_module_problem(module, alias.name, context) for alias in node.names]
        else:
            continue
        problems += [f"{_at(lines, node.lineno)}: {problem}" for problem in dict.fromkeys(found) if problem]
    return problems


def _absolute(node: ast.ImportFrom, path: str) -> str | None:
    """The module a `from` import names, relative ones resolved against the importing file's package."""
    if not node.level:
        return node.module
    package = list(PurePosixPath(path).parent.parts)
    if node.level - 1 >= len(package):
        return None  # beyond the top-level package: Python refuses it
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])]) or None


def _module_problem(module: str, name: str | None, context: _Context) -> str | None:
    """What is wrong with importing `module` (or `name` from it), None when nothing is."""
    top = module.split(".")[0]
    if top in context.top_level:
        target = f"{module}.{name}" if name not in (None, "*") else None
        if target in context.modules:
            return None  # from tlm import mixing
        if module in context.modules:
            defined = context.names_of(module)
            if target is not None and defined is not None and name not in defined:
                return f"{module} ({context.modules[module]}) defines no `{name}`"
            return None
        if not any(planned.startswith(f"{module}.") for planned in context.modules):
            return f"{module} is not a file of the plan"
        return None if target is None else f"{target} is not a file of the plan"  # import tlm; from tlm import x
    if top in sys.stdlib_module_names:
        return None
    imported = module if name is None or name == "*" else f"{module}.{name}"
    distribution = distribution_for(imported)
    if covering_names(imported, distribution) & context.declared:
        return None
    allowed = ", ".join(context.distributions) or "none"
    problem = f"`{top}` is neither in the standard library nor a requirement of the repository ({allowed})"
    if normalize(distribution) != normalize(top):
        problem += f", and its distribution {distribution} is not one of them"
    return problem


def _kept_problems(tree: ast.Module, lines: list[str], index: FileIndex, kept: _Kept) -> list[str]:
    problems = []
    defined = _defined(tree.body)
    for name, line in kept.names.items():
        if name not in defined:
            where = f"line {line} of the current file" if line else "the tests import it"
            problems.append(f"`{name}` ({where}) is no longer defined at module level")
    functions = _functions(tree)
    for name, (line, parameters) in kept.parameters.items():
        node = functions.get(name)
        if node is None or node.args.kwarg is not None:
            continue  # a missing public function is reported above; **kwargs takes any name
        missing = [p for p in parameters if p not in _parameters(node)]
        if missing:
            problems.append(
                f"{_at(lines, node.lineno)}: `{name}` no longer takes {', '.join(missing)} (line {line} of the "
                f"current file; tests pass parameters by name)"
            )
    cited = _equation_anchors(index)
    for number, line in kept.anchors.items():
        if number not in cited:
            problems.append(f"the anchor Eq. ({number}) (line {line} of the current file) is gone: keep its docstring")
    still_stubs = {name for name in kept.stubs if name in functions and _is_stub(functions[name])}
    if kept.stubs and still_stubs == kept.stubs:
        first = min(functions[name].lineno for name in still_stubs)
        problems.append(f"{_at(lines, first)}: nothing is implemented, every function still raises NotImplementedError")
    return problems


def _value_findings(
    index: FileIndex, lines: list[str], context: _Context, facts: PaperFacts
) -> tuple[list[str], list[str]]:
    """(divergences from the paper, as problems; the other findings, kept)."""
    # A value passed to one of the repository's own functions is the paper's symbol, not a library's knob.
    functions = {f.name for f in index.functions}
    for module in context.dependencies:
        functions |= context.names_of(module) or set()
    findings = check_file(context.root, facts, index, WorkspaceContext(functions=frozenset(functions)))
    problems, kept = [], []
    for finding in findings:
        where = _at(lines, finding.code.line + 1) if finding.code is not None else context.path
        if finding.kind == "divergence" and finding.status == "open":
            problems.append(f"{where}: {finding.message}")
        else:
            kept.append(f"{where}: {finding.message}")
    return problems, kept


# -- the prompt --------------------------------------------------------------------------------------


def _messages(planned: PlannedFile, spec: PaperSpec, current: str, context: _Context, budget: int) -> list[dict[str, str]]:
    distributions = ", ".join(context.distributions) or "no other distribution"
    system = SYSTEM_PROMPT.format(distributions=distributions, package=context.package)
    head = f"File: {planned.path}" + (f" ({planned.purpose})" if planned.purpose else "")
    body = f"Current text of {planned.path}:\n```python\n{current}```"

    def user(equations: list[str], modules: list[str]) -> str:
        parts = [head]
        if equations:
            parts.append("Equations it implements:\n" + "\n".join(equations))
        parts.append("Modules of the repository it may import:\n" + ("\n".join(modules) or "(none)"))
        return "\n\n".join([*parts, body])

    room = budget - len(system) - len(user([""], ["(none)"]))
    # The equations are also quoted in the file's docstrings, so they give way first.
    modules = _within(_dependency_lines(context), room, "- … and {} more modules")
    room -= sum(len(line) + 1 for line in modules)
    equations = _within(_equation_lines(planned, spec), room, "… and {} more, quoted in the file's docstrings")
    return [{"role": "system", "content": system}, {"role": "user", "content": user(equations, modules)}]


def _equation_lines(planned: PlannedFile, spec: PaperSpec) -> list[str]:
    by_number = {e.number: e for e in spec.equations if e.number}
    return [
        f"Eq. ({number}): {' '.join((equation.latex or equation.text).split())}"
        for number in planned.equations
        if (equation := by_number.get(number)) is not None
    ]


def _dependency_lines(context: _Context) -> list[str]:
    """`- tlm.mixing: def mix_input(m, x_i, x_j); class DyT(alpha)` for each planned module it imports."""
    lines = []
    for module in context.dependencies:
        try:
            tree = ast.parse((context.root / context.modules[module]).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        shown = []
        for node in tree.body:
            if node_name := getattr(node, "name", ""):
                if node_name.startswith("_"):
                    continue
                if isinstance(node, ast.ClassDef):
                    init = next((m for m in node.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None)
                    parameters = _parameters(init)[1:] if init is not None else []
                    shown.append(f"class {node_name}({', '.join(parameters)})")
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    shown.append(f"def {node_name}({', '.join(_parameters(node))})")
        lines.append(f"- {module}: {'; '.join(shown) or 'no public functions or classes'}")
    return lines


def _within(lines: list[str], budget: int, more: str) -> list[str]:
    """The first of `lines` that fit in `budget` characters, and `more` with how many were left out."""
    kept: list[str] = []
    used = len(more) + 8  # room for the note itself
    for count, line in enumerate(lines):
        used += len(line) + 1
        if used > budget:
            return [*kept, more.format(len(lines) - count)]
        kept.append(line)
    return kept


def _reask(path: str, problems: list[str]) -> str:
    shown = [shorten(problem, MAX_PROBLEM_CHARS) for problem in problems[:MAX_PROBLEMS_RESTATED]]
    if len(problems) > MAX_PROBLEMS_RESTATED:
        shown.append(f"and {len(problems) - MAX_PROBLEMS_RESTATED} more")
    listed = "\n".join(f"- {problem}" for problem in shown)
    return f"Your answer was refused:\n{listed}\nAnswer again with the whole corrected text of {path}."



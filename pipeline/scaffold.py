"""Scaffold a module from a section or an algorithm of the paper, with a shape test beside it.

`scaffold_targets(spec)` lists what can be scaffolded: every section whose text (its subsections
included) holds a numbered equation, and every algorithm. `scaffold_module(spec, readiness,
target_id, workspace_root)` writes nothing: it returns the text of a new module and of its test,
each with a free path in the workspace, for the user to review (the language server offers it as a
code action that creates both files).

The module holds only what the paper says, each piece with where it says it:
- a docstring naming the section or algorithm and quoting its equations (and steps);
- one function per equation, its parameters the equation's inputs (the symbols it uses but does not
  define, in canonical form turned into identifiers: λ → lam, β_1 → beta_1, W^Q → w_q), its
  docstring citing the equation with an anchor the code index reads (`Eq. (3)`), its body
  `raise NotImplementedError`. An equation the paper itself calls a layer (`DyT(x) = ...`, "a DyT
  layer is defined as follows") becomes a class instead: what the layer holds is set at
  construction, its input is given at each call. Anything else stays a function, since nothing in
  an equation tells a learned weight from an input, and a function with the weights as arguments
  is correct in any framework;
- the section's stated values as constants, each under the sentence or table row that states it;
  what the paper needs but never states (the readiness gaps of the section, of its symbols and of
  the components it uses) as `# TODO(paperlens): <question>` lines, never as a guessed value; a
  setting stated with several values is a TODO too, quoting every value.

The test file calls each function with placeholders (`...`) for the inputs the user has to shape,
and the stated constants for the rest, and checks the shape of the result.
"""

from __future__ import annotations

import builtins
import keyword
import math
import re
import sys
import textwrap
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..schemas import (
    Algorithm,
    Equation,
    Gap,
    Hyperparameter,
    Location,
    PaperSpec,
    ReadinessReport,
    Section,
    SymbolInfo,
)
from .code.anchors import TextBlock, find_anchors
from .code.sites import SourceText
from .extract.components import find_mentions
from .extract.knowledge import symbol_key
from .extract.mathtext import GREEK_NAMES, to_plain
from .extract.symbols import parse_latex_math, parse_text_math
from .extract.parts import framing_sections
from .readiness.finders import EQUATION_NUMBER, EQUATION_REFERENCE, equation_name

__all__ = ["ScaffoldedModule", "module_outline", "scaffold_module", "scaffold_targets"]

TODO = "# TODO(paperlens): "
QUOTE_WIDTH = 96  # quotes in comments and docstrings are wrapped at this width
DEFINITION_CHARS = 200  # the longest definition quoted for a parameter
MAX_NAME_WORDS = 6  # a module name keeps at most this many words of the title
MAX_NAME_CHARS = 40

# The test of a stub is an expected failure, and only for NotImplementedError, strictly. Why:
# - skip would not even run it: a stub, a broken import and a forgotten test all look the same
#   ("skipped"), and nothing changes the day the function is written;
# - a plain failure turns the suite red the moment the scaffold is accepted, for a reason the user
#   already knows, and a real error in one test is lost among the stubs' failures;
# - xfail(raises=NotImplementedError) still runs the test and accepts that one exception only: an
#   import error, a TypeError of a half-written function or a wrong shape fails as usual, and every
#   run lists the test as "xfailed" with its reason, so the stub is not hidden;
# - strict=True fails the run once the test passes (XPASS), so the marker cannot outlive the stub.
XFAIL_ARGUMENTS = ["raises=NotImplementedError", "strict=True", 'reason="still a paperlens stub"']
LINE_LENGTH = 88  # code lines are laid out as black and `ruff format` would, at their default width

# A module name never shadows what a workspace imports or what pytest collects.
RESERVED_MODULE_NAMES = frozenset(
    {"setup", "conftest", "main", "test", "tests", "pytest", "torch", "numpy", "jax", "tensorflow", "scipy",
     "sklearn", "pandas", "transformers", "einops", "flax", "optax", "paperlens"}
)  # fmt: skip
STOP_WORDS = frozenset(
    {"a", "an", "the", "of", "for", "with", "on", "in", "to", "via", "by", "from", "its", "our",
     "pseudocode", "pseudo", "code", "algorithm", "procedure"}
)  # fmt: skip
_ACCENTS = {"\u0302": "hat", "\u0303": "tilde", "\u0304": "bar", "\u0305": "bar", "\u20d7": "vec", "\u0307": "dot",
            "\u0308": "ddot", "\u030c": "check", "\u0306": "breve"}  # fmt: skip
_SYMBOL_CHARACTERS = {"+": "_plus_", "-": "_minus_", "−": "_minus_", "'": "_prime", "′": "_prime", "*": "_star",
                      "∗": "_star", "⋆": "_star"}  # fmt: skip
_UNINFORMATIVE_LABEL = re.compile(r"(?:eq|eqn|equ|equation|eqs)?[_\-.]?\d+[a-z]?|", re.IGNORECASE)
_MATH_NOISE = re.compile(
    r"\\(?:begin|end)\s*\{[^{}]*\}(?:\{[^{}]*\}|\[[^\]]*\])?|\\(?:label|tag)\*?\s*\{[^{}]*\}"
    r"|\\(?:relax|nonumber|notag|displaystyle|textstyle|scriptstyle)(?![A-Za-z])|&"
)
# Signs that define the left side from the right one; `\sim` draws it, `\gets` assigns it.
_DEFINING = re.compile(
    r":=|\\coloneqq(?![A-Za-z])|\\triangleq(?![A-Za-z])|\\equiv(?![A-Za-z])|\\eqqcolon(?![A-Za-z])"
    r"|(?<![<>!:=\\])=(?!=)|\\sim(?![A-Za-z])|\\gets(?![A-Za-z])|\\leftarrow(?![A-Za-z])|[≔≜≡∼←]"
)
_STATEMENT_BREAK = re.compile(r"\\\\|\\q?quad(?![A-Za-z])")
_STYLE_COMMANDS = re.compile(r"\\(?:operatorname\*?|mathrm|text|textrm|texttt|textsf|textit|mathit|mathsf|mathtt|rm|it|bf|mathbf)(?![A-Za-z])")
_OPERATOR_NAME = re.compile(r"(?<![\\A-Za-z])[A-Za-z][A-Za-z0-9]+")
_INLINE_MATH = re.compile(r"\$([^$]+)\$")
_INDEX_BINDING = re.compile(r"_\{?\s*([a-z])\s*=")
_BARE_REFERENCE = re.compile(r"(?<![\w$)])\((\d+[a-z]?)\)")  # "(9)" in an algorithm step: an equation


@dataclass(frozen=True, slots=True)
class ScaffoldedModule:
    """A new module and its shape test, ready to be created in the workspace.

    Paths are relative to the workspace root, with forward slashes; neither file exists yet."""

    path: str
    text: str
    test_path: str
    test_text: str
    title: str
    implements: dict[str, str] = field(default_factory=dict)  # equation id → its function or class here


def scaffold_targets(spec: PaperSpec) -> list[tuple[str, str]]:
    """What can be scaffolded, as (target id, label): sections holding a numbered equation (their
    subsections included), then algorithms, in the order the paper reads."""
    targets = []
    for section in spec.sections:
        numbered = [e for e in _section_equations(spec, section) if e.number]
        if numbered:
            plain = [e.number for e in numbered if EQUATION_NUMBER.fullmatch(e.number)] or ["…"]
            shown = ", ".join(plain[:6]) + (", …" if len(plain) > 6 else "")
            targets.append((section.id, f"{_section_heading(section)} (Eq. {shown})"))
    targets += [(algorithm.id, _algorithm_heading(algorithm)) for algorithm in spec.algorithms]
    return targets


def scaffold_module(
    spec: PaperSpec,
    readiness: ReadinessReport,
    target_id: str,
    workspace_root: Path,
    *,
    package: str | None = None,
    name: str | None = None,
    provided: Mapping[str, tuple[str, str]] | None = None,
) -> ScaffoldedModule:
    """A module (and its shape test) for the section or algorithm `target_id` of the paper, at the
    workspace's top level or, given `package`, in that package (its test still in `tests/`); named
    `name` when given, else after the target's title (a free name).

    `provided` (with `package`) maps an equation id to (module name, function name) of a module of
    the package that already implements it: such an equation is imported from there, not stubbed a
    second time (an algorithm cites the equations its sections define).

    Raises ValueError when `target_id` names nothing that `scaffold_targets` lists."""
    scope = _scope(spec, target_id)
    root = Path(workspace_root)
    name = name or _free_module_name(root / package if package else root, _module_name(scope), tests=root / "tests")
    path, test_path = (f"{package}/{name}.py" if package else f"{name}.py"), f"tests/test_{name}.py"
    if provided and package is None:
        raise ValueError("provided names modules of a package: give the package")
    plan = _Plan.of(spec, readiness, scope, provided or {})
    text = _render_module(spec, scope, plan, test_path)
    test_text = _render_test(scope, plan, f"{package}.{name}" if package else name, name, path)
    for rendered, where in ((text, path), (test_text, test_path)):
        compile(rendered, where, "exec")  # a generator bug (even a duplicate argument) never reaches the user's files
    return ScaffoldedModule(
        path=path,
        text=text,
        test_path=test_path,
        test_text=test_text,
        title=f"Scaffold {path} from {scope.heading}",
        implements={unit.equation.id: unit.name for unit in plan.units if unit.equation is not None},
    )


def module_outline(spec: PaperSpec, target_id: str) -> tuple[str, list[str], list[str]]:
    """The module name `scaffold_module` would choose in an empty workspace, the numbers of the
    numbered equations the module quotes, and the ids of the equations it gives a function."""
    scope = _scope(spec, target_id)
    readings = {e.id: _read_equation(e) for e in scope.equations}
    implemented = [e.id for e in _implemented(scope, readings)]
    return _module_name(scope), [e.number for e in scope.equations if e.number], implemented


# -- what is scaffolded -----------------------------------------------------------------------------


@dataclass(slots=True)
class _Scope:
    """The part of the paper a module is scaffolded from."""

    heading: str  # Sec. 2.1 “Mixing Images and Labels”
    name_source: str  # the title a module name is made from
    name_prefix: str  # sec_2_1 / alg_1, when the title gives no usable name
    location: Location
    section_ids: list[str]
    equations: list[Equation]  # every equation quoted in the module docstring
    algorithm: Algorithm | None = None
    discussion: bool = False  # a related-work or background section: components named there are not used


def _scope(spec: PaperSpec, target_id: str) -> _Scope:
    section = next((s for s in spec.sections if s.id == target_id), None)
    if section is not None:
        equations = _section_equations(spec, section)
        if not any(e.number for e in equations):
            raise ValueError(
                f"{_section_heading(section)} ({target_id}) holds no numbered equation to scaffold; "
                f"scaffold_targets() lists what can be scaffolded"
            )
        ids = _section_ids(spec, section)
        number = section.number or ""
        return _Scope(
            heading=_section_heading(section),
            name_source=_name_source(section.title),
            name_prefix="sec_" + re.sub(r"\W+", "_", number).strip("_").lower() if number else "sec",
            location=section.location,
            section_ids=ids,
            equations=equations,
            discussion=bool(ids) and set(ids) <= framing_sections(spec),
        )
    algorithm = next((a for a in spec.algorithms if a.id == target_id), None)
    if algorithm is None:
        known = [target for target, _ in scaffold_targets(spec)]
        shown = ", ".join(known[:12]) + (", …" if len(known) > 12 else "")
        raise ValueError(
            f"unknown scaffold target {target_id!r}: not a section or algorithm id of this paper"
            + (f" (scaffoldable: {shown})" if known else " (it has no numbered equation or algorithm to scaffold)")
        )
    by_number = {e.number: e for e in spec.equations if e.number}
    cited = dict.fromkeys(number for step in algorithm.steps for number in _cited_equations(step))
    return _Scope(
        heading=_algorithm_heading(algorithm),
        name_source=_name_source(algorithm.title),
        name_prefix="alg_" + re.sub(r"\W+", "_", algorithm.number or "").strip("_").lower() if algorithm.number else "alg",
        location=algorithm.location,
        section_ids=[algorithm.section_id] if algorithm.section_id else [],
        equations=_with_sources(spec, [by_number[number] for number in cited if number in by_number]),
        algorithm=algorithm,
    )


def _cited_equations(step: str) -> list[str]:
    """The equations a step cites: "with Eq. (3)", or pseudo-code's bare "using (9)"."""
    cited = [match.group(1) for match in EQUATION_REFERENCE.finditer(_plain(step))]
    prose = _INLINE_MATH.sub(" ", step)
    return cited + _BARE_REFERENCE.findall(prose)


def _with_sources(spec: PaperSpec, equations: list[Equation]) -> list[Equation]:
    """The equations an algorithm cites and, transitively, those that define what they take
    (Eq. (5) adds ℒ_cons, so Eq. (4) comes too), in the paper's order. Of several equations that
    define a symbol, one in the same section is preferred, then a numbered one, then the first."""
    readings = {e.id: _read_equation(e) for e in spec.equations}
    position = {e.id: i for i, e in enumerate(spec.equations)}
    appendix = {s.id for s in spec.sections if s.appendix}
    chosen = {e.id: e for e in equations}
    pending = list(equations)
    while pending:
        equation = pending.pop()
        for symbol in readings[equation.id].inputs:
            sources = [e for e in spec.equations if symbol in readings[e.id].defined]
            if equation.section_id not in appendix:  # an appendix's derivations do not define the method
                sources = [e for e in sources if e.section_id not in appendix]
            if not sources or any(e.id in chosen for e in sources):
                continue
            source = min(sources, key=lambda e: (e.section_id != equation.section_id, e.number is None, position[e.id]))
            chosen[source.id] = source
            pending.append(source)
    return sorted(chosen.values(), key=lambda e: position[e.id])


def _section_ids(spec: PaperSpec, section: Section) -> list[str]:
    """The section and its subsections (the headings after it, deeper than it)."""
    index = spec.sections.index(section)
    ids = [section.id]
    for later in spec.sections[index + 1 :]:
        if later.level <= section.level:
            break
        ids.append(later.id)
    return ids


def _section_equations(spec: PaperSpec, section: Section) -> list[Equation]:
    ids = set(_section_ids(spec, section))
    return [e for e in spec.equations if e.section_id in ids]


def _section_heading(section: Section) -> str:
    title = _plain(section.title)
    if section.number is None:
        return f"Section “{title}”"
    return f"{'Appendix' if section.appendix and '.' not in section.number else 'Sec.'} {section.number} “{title}”"


def _algorithm_heading(algorithm: Algorithm) -> str:
    title = _plain(algorithm.title).rstrip(". ")
    return f"Algorithm {algorithm.number} “{title}”" if algorithm.number else f"Algorithm “{title}”"


def _plain(text: str) -> str:
    return " ".join(to_plain(text).text.split())


# -- equations: what they take and what they define ------------------------------------------------


@dataclass(slots=True)
class _Reading:
    """An equation read as statements: which symbols it takes and which it defines."""

    inputs: list[str]
    defined: list[str]  # symbols some statement of the equation defines (its left side)
    output: str | None  # what the last defining statement gives: a symbol, or `Name(x)`
    operator: str | None  # the name of a defined operator: `DyT` of `\mathrm{DyT}(x) = ...`
    operator_inputs: list[str]  # the operator's own arguments (`x`)
    drawn: bool  # the output is drawn (`m \sim Beta(α, α)`) rather than computed


def _symbols(piece: str, latex: bool) -> list[str]:
    found = parse_latex_math(piece).symbols if latex else parse_text_math(piece)  # tolerant of any fragment
    return [f.symbol for f in found]


def _split_top_level(text: str, pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    """`text` cut at each match of `pattern` outside braces, brackets and parentheses: (piece, the
    match that ended it); the last piece ends with ''."""
    pieces, depth, start, index = [], 0, 0, 0
    while index < len(text):
        char = text[index]
        if char == "\\" and text[index : index + 2] != "\\\\":
            if depth == 0 and (match := pattern.match(text, index)):
                pieces.append((text[start:index], match.group(0)))
                index = start = match.end()
                continue
            command = re.match(r"\\(?:[A-Za-z]+|.)", text[index:])
            index += len(command.group(0)) if command else 1
            continue
        if char in "{[(":
            depth += 1
        elif char in "}])":
            depth = max(0, depth - 1)
        elif depth == 0 and (match := pattern.match(text, index)):
            pieces.append((text[start:index], match.group(0)))
            index = start = match.end()
            continue
        index += 1
    pieces.append((text[start:], ""))
    return pieces


def _operator_of(left: str, latex: bool) -> tuple[str | None, str]:
    """`\\mathrm{DyT}(x)` → ("DyT", "x"): a named operator applied to arguments, else (None, '')."""
    text = left.strip().rstrip(",;")
    if not text.endswith(")"):
        return None, ""
    depth = 0
    for index in range(len(text) - 1, -1, -1):
        depth += text[index] == ")"
        depth -= text[index] == "("
        if depth == 0:
            break
    head, arguments = text[:index], text[index + 1 : -1]
    head = re.sub(r"\\(?:left|big|Big|bigl|Bigl)\s*$", "", head).strip()
    if not head or _symbols(head, latex):
        return None, ""  # f(x), φ(λ), L_A(θ): a symbol of the paper, not an operator's name
    words = _OPERATOR_NAME.findall(_STYLE_COMMANDS.sub(" ", head))
    return (words[0], arguments) if words else (None, "")


def _defined_by(left: str, latex: bool) -> tuple[list[str], list[str]]:
    """What a left side defines, and the arguments it takes: one symbol (`\\tilde{x}`, `Y^l`), one
    applied to arguments (`q(x_t | x_0)`: q, taking x_t and x_0), or a list (`[Q_1; Q_2]`). Any
    other left side (`(A + λI) h`, `∂w/∂m`) is an expression, which defines nothing."""
    text = left.strip().rstrip(",;").strip()
    listed = re.fullmatch(r"(?:\\left\s*)?[\[(](.*)(?:\\right\s*)?[\])]", text)
    if listed and re.search(r"[;,]", listed.group(1)):
        items = [piece for piece in re.split(r"[;,]", listed.group(1)) if piece.strip()]
        if all(len(_symbols(item, latex)) == 1 for item in items):
            return [_symbols(item, latex)[0] for item in items], []
    head, arguments = text, ""
    if text.endswith(")") and "(" in text:
        depth = 0
        for index in range(len(text) - 1, -1, -1):
            depth += text[index] == ")"
            depth -= text[index] == "("
            if depth == 0:
                head, arguments = text[:index], text[index + 1 : -1]
                break
    head = re.sub(r"\\(?:left|big|Big|bigl|Bigl)\s*$", "", head).strip()
    symbols = _symbols(head, latex)
    if len(symbols) == 1:
        return symbols, _symbols(arguments, latex)
    if not head and len(_symbols(arguments, latex)) == 1:  # (x) = ...
        return _symbols(arguments, latex), []
    return [], []


def _read_equation(equation: Equation) -> _Reading:
    latex = equation.latex is not None
    source = _MATH_NOISE.sub(" ", equation.latex) if latex else equation.text
    statements = [piece for piece, _ in _split_top_level(source, _STATEMENT_BREAK) if piece.strip()]
    defined: dict[str, None] = {}
    operator_inputs: dict[str, None] = {}
    output: str | None = None
    operator: str | None = None
    drawn = False
    for statement in statements:
        pieces = _split_top_level(statement, _DEFINING)
        if len(pieces) < 2:
            continue
        (left, sign), right = pieces[0], "".join(piece + sign for piece, sign in pieces[1:])
        right_symbols = set(_symbols(right, latex))
        name, arguments = _operator_of(left, latex)
        if name is not None:
            operator_inputs.update(dict.fromkeys(_symbols(arguments, latex)))
            output, operator = f"{name}({_plain(arguments) if latex else arguments})", name
        else:
            targets, arguments = _defined_by(left, latex)
            operator_inputs.update(dict.fromkeys(s for s in arguments if s not in targets))
            new = [s for s in targets if s not in right_symbols]
            defined.update(dict.fromkeys(new))
            output, operator = (new[0] if new else None), None
        drawn = sign.strip() in ("\\sim", "∼")
    if output is None and not latex and statements:
        # PDF text: "ℒ_{cons} = max(...)" names its output though ℒ is no symbol the text reader knows
        left = _split_top_level(statements[-1], _DEFINING)[0][0].strip()
        if re.fullmatch(r"[^\s=()+\-*/,;]{1,16}", left):
            output = left
    inputs = [s for s in equation.symbols if s not in defined or s in operator_inputs]
    return _Reading(inputs, list(defined), output, operator, list(operator_inputs), drawn)


# -- identifiers ------------------------------------------------------------------------------------


def _symbol_identifiers(symbol: str) -> tuple[str, str]:
    """(lower-case, case-kept) identifiers for a canonical symbol: x̃ → x_tilde, W^Q → w_q / W_Q."""
    cased: list[str] = []
    for char in unicodedata.normalize("NFD", symbol):
        if char in _ACCENTS:
            cased.append(f"_{_ACCENTS[char]}_")
        elif char in GREEK_NAMES:
            name = GREEK_NAMES[char]
            cased.append(f"_{name.capitalize() if char.isupper() else name}_")
        elif char in _SYMBOL_CHARACTERS:
            cased.append(_SYMBOL_CHARACTERS[char])
        elif char.isascii():
            cased.append(char if char.isalnum() else "_")
        else:
            # ℒ is SCRIPT CAPITAL L, 𝒩 MATHEMATICAL SCRIPT CAPITAL N, ℓ SCRIPT SMALL L
            words = unicodedata.name(char, "").split()
            letter = words[-1] if words and len(words[-1]) == 1 else ""
            cased.append(f"_{letter}_" if letter else "_")
    text = re.sub(r"_+", "_", "".join(cased)).strip("_") or "x"
    lower = text.lower()
    if lower == "l":  # an `l` reads as a 1 (E741)
        return "ell", "ell"
    return _safe(lower), _safe(text)


def _safe(name: str) -> str:
    name = re.sub(r"\W", "_", name)
    if not name or name[0].isdigit():
        name = f"s_{name}"
    if name == "lambda":
        return "lam"
    return f"{name}_" if keyword.iskeyword(name) or keyword.issoftkeyword(name) else name


def _snake(name: str) -> str:
    """DiffAttn → diff_attn, MultiHead → multi_head, DyT → dyt, SwiGLU → swiglu."""
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z][a-z])", "_", name)
    return re.sub(r"\W+", "_", name).strip("_").lower()


class _Names:
    """Identifiers handed out once each within one scope."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self.taken = set(taken)

    def claim(self, *candidates: str) -> str:
        for candidate in candidates:
            if candidate and candidate not in self.taken:
                self.taken.add(candidate)
                return candidate
        base, number = candidates[0], 2
        while f"{base}_{number}" in self.taken:
            number += 1
        self.taken.add(f"{base}_{number}")
        return f"{base}_{number}"


def _function_name(equation: Equation, reading: _Reading, names: _Names) -> str:
    candidates = []
    if reading.operator:
        candidates.append(_snake(reading.operator))
    label = (equation.label or "").rsplit(":", 1)[-1]
    if not _UNINFORMATIVE_LABEL.fullmatch(label):
        candidates.append(_snake(label))
    if reading.output and not reading.operator:
        candidates.append(("sample_" if reading.drawn else "") + _symbol_identifiers(reading.output)[0])
    number = equation.number or ""
    plain = re.sub(r"\W+", "_", number).strip("_").lower() if EQUATION_NUMBER.fullmatch(number) else ""
    candidates.append(f"equation_{plain}" if plain else "equation")
    candidates = [_function_safe(c) for c in candidates if c]
    return names.claim(*candidates)


def _function_safe(name: str) -> str:
    name = _safe(name)
    return f"compute_{name}" if hasattr(builtins, name) or name in ("pytest", "stub") else name


# -- the plan: units, constants, TODOs ---------------------------------------------------------------


@dataclass(slots=True)
class _Parameter:
    symbol: str | None
    name: str
    note: str = ""
    constant: str | None = None  # the stated value's constant, passed by the test


@dataclass(slots=True)
class _Unit:
    """One function (or class) of the module."""

    name: str
    kind: str  # "function", "class" or "algorithm"
    equation: Equation | None
    reading: _Reading | None
    parameters: list[_Parameter] = field(default_factory=list)  # a class: its constructor's
    call_parameters: list[_Parameter] = field(default_factory=list)  # a class: its __call__'s


@dataclass(slots=True)
class _Constant:
    name: str
    value: float | str
    statements: list[Hyperparameter]
    symbols: list[str]


@dataclass(slots=True)
class _Todo:
    question: str
    detail: str  # blocking or not, where the paper shows it
    gap: Gap | None = None


@dataclass(slots=True)
class _Plan:
    units: list[_Unit]
    constants: list[_Constant]
    todos: list[_Todo]
    imports: dict[str, list[str]] = field(default_factory=dict)  # sibling module → names taken from it

    @classmethod
    def of(cls, spec: PaperSpec, readiness: ReadinessReport, scope: _Scope, provided: Mapping[str, tuple[str, str]]) -> _Plan:
        readings = {e.id: _read_equation(e) for e in scope.equations}
        names = _Names()
        imports: dict[str, list[str]] = {}
        local, elsewhere = [], set()
        for equation in _implemented(scope, readings):
            module, name = provided.get(equation.id, ("", ""))
            if module and name not in names.taken:  # two siblings' same name: the second stays a stub here
                names.taken.add(name)
                imports.setdefault(module, []).append(name)
                elsewhere.add(equation.id)
            else:
                local.append(equation)
        units = []
        for equation in local:
            reading = readings[equation.id]
            operator = reading.operator or ""
            if operator.isidentifier() and not keyword.iskeyword(operator) and _called_a_layer(spec, scope, operator):
                class_name = operator if operator[0].isupper() else operator[0].upper() + operator[1:]
                units.append(_Unit(names.claim(_function_safe(class_name)), "class", equation, reading))
            else:
                units.append(_Unit(_function_name(equation, reading, names), "function", equation, reading))
        if scope.algorithm is not None:
            title_name = "_".join(_words(scope.name_source)) or scope.name_prefix
            units.append(_Unit(names.claim(_function_safe(title_name), scope.name_prefix), "algorithm", None, None))
        inputs = _unit_inputs(scope, units, readings)
        defined_here = {s for r in readings.values() for s in r.defined}
        symbols = {s for e in scope.equations if e.id not in elsewhere for s in e.symbols}
        symbols |= {s for symbols in inputs.values() for s in symbols}
        conflicting = {g.setting for g in readiness.gaps if g.kind == "conflicting-values" and g.setting}
        constants, several, in_conflict = _constants(spec, scope, inputs, defined_here, conflicting)
        gaps = _gaps_in_scope(spec, readiness, scope, symbols, in_conflict)
        todos = [_gap_todo(gap) for gap in gaps]
        todos += [_several_values_todo(name, statements) for name, statements in several]
        plan = cls(units, constants, todos, imports)
        plan._parameters(spec, inputs, gaps, several)
        return plan

    def _parameters(
        self, spec: PaperSpec, inputs: dict[str, list[str]], gaps: list[Gap], several: list[tuple[str, list[Hyperparameter]]]
    ) -> None:
        infos = {info.symbol: info for info in spec.symbols}
        constant_of = {symbol: c for c in self.constants for symbol in c.symbols}
        asked = {gap.id.split(":", 1)[1] for gap in gaps if gap.kind in ("undefined-symbol", "unstated-value")}
        several_symbols = {
            s for _, statements in several for h in statements for s in _statement_symbols(h, infos)
        }
        computed_by = _producers(self.units, inputs)
        for unit in self.units:
            taken = ["self"] if unit.kind == "class" else []
            names = _Names(taken)
            symbols = inputs[unit.name]
            call_symbols = unit.reading.operator_inputs if unit.kind == "class" and unit.reading else []
            parameters = []
            for symbol in symbols:
                lower, cased = _symbol_identifiers(symbol)
                parameter = _Parameter(symbol, names.claim(lower, cased))
                notes = []
                info = infos.get(symbol)
                if symbol in computed_by and computed_by[symbol] != unit.name:
                    notes.append(f"computed by {computed_by[symbol]}().")
                elif info is not None and info.definition is not None:
                    notes.append(_definition_note(info))
                if symbol in constant_of:
                    parameter.constant = constant_of[symbol].name
                    notes.append(f"Stated: {constant_of[symbol].name} above.")
                elif symbol in several_symbols:
                    notes.append("The paper states several values: see the TODO(paperlens) above.")
                elif symbol in asked:
                    notes.append("The paper does not say: see the TODO(paperlens) above.")
                parameter.note = " ".join(notes)
                parameters.append(parameter)
            if unit.kind == "class":
                unit.call_parameters = [p for p in parameters if p.symbol in call_symbols]
                unit.parameters = [p for p in parameters if p.symbol not in call_symbols]
            else:
                unit.parameters = parameters


def _producers(units: list[_Unit], inputs: dict[str, list[str]]) -> dict[str, str]:
    """Symbol → the function that computes it, for symbols that flow forward only: in a recurrence
    (X^{l+1} = FFN(Y^l), Y^l = Attn(X^l): both read as X and Y) the function is not "the" source."""
    producer = {s: unit.name for unit in units if unit.reading for s in unit.reading.defined}

    def upstream(name: str, seen: set[str]) -> set[str]:
        found: set[str] = set()
        for symbol in inputs.get(name, []):
            found.add(symbol)
            source = producer.get(symbol)
            if source is not None and source not in seen:
                seen.add(source)
                found |= upstream(source, seen)
        return found

    return {s: name for s, name in producer.items() if s not in upstream(name, {name})}


def _implemented(scope: _Scope, readings: dict[str, _Reading]) -> list[Equation]:
    """The equations that get a function: every numbered one, and an unnumbered one only when it
    defines a symbol that a numbered one takes (`m ~ Beta(α, α)` feeding Eq. (1))."""
    numbered = [e for e in scope.equations if e.number]
    needed = {s for e in numbered for s in readings[e.id].inputs}
    return [e for e in scope.equations if e.number or needed & set(readings[e.id].defined)]


def _called_a_layer(spec: PaperSpec, scope: _Scope, operator: str) -> bool:
    """The paper calls the operator a layer or module in the scope's prose or an algorithm's title."""
    pattern = re.compile(rf"(?<![\w-]){re.escape(operator)}\s+(?:layers?|modules?)\b")
    texts = [p.text for p in spec.paragraphs if p.section_id in scope.section_ids]
    texts += [a.title for a in spec.algorithms if a.section_id in scope.section_ids]
    return any(pattern.search(_plain(text)) for text in texts)


def _unit_inputs(scope: _Scope, units: list[_Unit], readings: dict[str, _Reading]) -> dict[str, list[str]]:
    inputs = {unit.name: list(unit.reading.inputs) for unit in units if unit.reading is not None}
    algorithm = scope.algorithm
    if algorithm is not None:
        produced_by_equations = {s for r in readings.values() for s in r.defined}
        inputs[units[-1].name] = _algorithm_inputs(algorithm, produced_by_equations)
    return inputs


def _algorithm_inputs(algorithm: Algorithm, produced_elsewhere: set[str]) -> list[str]:
    """The symbols an algorithm's steps use but neither assign, draw, loop over nor take from one of
    the equations it cites; a per-item symbol (x_i of a loop over i) stands for its batch (x)."""
    segments = [m.group(1) for step in algorithm.steps for m in _INLINE_MATH.finditer(step)]
    indices: set[str] = set()
    produced: set[str] = set()
    used: dict[str, None] = {}
    for segment in segments:
        indices.update(_INDEX_BINDING.findall(segment))
        pieces = _split_top_level(segment, _DEFINING)
        if len(pieces) > 1:
            left = _symbols(pieces[0][0], latex=True)
            produced.update(left)
            indices.update(s for s in left if len(s) == 1 and s.isascii() and s.islower() and pieces[0][1] == "=")
        used.update(dict.fromkeys(_symbols(segment, latex=True)))

    def batch(symbol: str) -> str:
        match = re.fullmatch(r"(.+?)_(.+)", symbol)
        if match and set(re.findall(r"[A-Za-z]+", match.group(2))) & indices:
            return match.group(1)
        return symbol

    produced = {batch(s) for s in produced} | produced_elsewhere
    ordered = dict.fromkeys(batch(s) for s in used)
    return [s for s in ordered if s not in produced and s not in indices]


def _definition_note(info: SymbolInfo) -> str:
    definition = info.definition
    quote = " ".join(definition.text.split())
    if len(quote) > DEFINITION_CHARS:
        quote = quote[: DEFINITION_CHARS - 1].rstrip() + "…"
    if _cites(quote):  # "… the constant scalar in Eq. 2": an anchor here would tie this function to Eq. 2
        return f"Defined at {definition.location.short()}."
    return f"“{quote}” ({definition.location.short()})"


def _cites(text: str) -> bool:
    """Whether the code index would read a reference to the paper in `text`."""
    lines = text.count("\n")
    return bool(find_anchors(SourceText("q.py", text), comment_markers="#", docstrings=[TextBlock(0, lines, None)]))


# -- stated values ---------------------------------------------------------------------------------


def _statement_symbols(statement: Hyperparameter, infos: dict[str, SymbolInfo]) -> list[str]:
    """The symbols a statement gives a value for: its name is the symbol ("λ", "Temperature τ"), or
    it names the symbol in math and gives the value the paper states for it ("head dimension $d$ is 128")."""
    name = _plain(statement.name).split()
    last = symbol_key(name[-1]) if name else ""
    segments = _INLINE_MATH.findall(statement.text)
    mentioned = {s for segment in segments for s in _symbols(segment, latex=True)} if segments else set(
        _symbols(statement.text, latex=False)
    )
    named = [symbol for symbol in infos if last and symbol_key(symbol) == last]
    if named or len(mentioned) != 1:
        return named  # in "we set λ = 0.5 and τ = 0.5", each value goes with the symbol it names
    (symbol,) = mentioned
    info = infos.get(symbol)
    return [symbol] if info is not None and info.value_given and _same(info.value, statement.value) else []


def _same(one: float | str | None, other: float | str | None) -> bool:
    if isinstance(one, float) and isinstance(other, float):
        return math.isclose(one, other, rel_tol=1e-9)
    return one == other


def _constants(
    spec: PaperSpec, scope: _Scope, inputs: dict[str, list[str]], defined_here: set[str], conflicting: set[str]
) -> tuple[list[_Constant], list[tuple[str, list[Hyperparameter]]], set[str]]:
    """The values the scope states, and the ones stated for the symbols its functions take; a
    setting stated with several values, or in conflict (returned last: its gap is asked), gets no constant."""
    infos = {info.symbol: info for info in spec.symbols}
    taken = {s for symbols in inputs.values() for s in symbols} - defined_here
    groups: dict[str, list[Hyperparameter]] = {}
    symbols_of: dict[str, list[str]] = {}
    for statement in spec.hyperparameters:
        linked = [s for s in _statement_symbols(statement, infos) if s in taken]
        if statement.section_id in scope.section_ids or linked:
            groups.setdefault(statement.normalized_name, []).append(statement)
            symbols_of.setdefault(statement.normalized_name, [])
            symbols_of[statement.normalized_name] += [s for s in linked if s not in symbols_of[statement.normalized_name]]
    constants, several, in_conflict = [], [], set()
    names = _Names()
    for setting, statements in groups.items():
        here = [h for h in statements if h.section_id in scope.section_ids]
        chosen = here or statements  # the scope's own statements speak for it
        values = []
        for h in chosen:
            if not any(_same(h.value, v) for v in values):
                values.append(h.value)
        if setting in conflicting:
            in_conflict.add(setting)  # the readiness gap asks which value
            continue
        if len(values) > 1:
            several.append((setting, chosen))
            continue
        if isinstance(values[0], float) and not math.isfinite(values[0]):
            continue
        name = names.claim(_constant_name(setting))
        constants.append(_Constant(name, values[0], chosen, symbols_of[setting]))
    return constants, several, in_conflict


def _constant_name(setting: str) -> str:
    if len(setting) == 1 and setting.isascii() and setting.isalpha():
        return f"SYMBOL_{setting}"  # M = 10 would read as the paper's M, not its m
    return _capitals(setting)


def _capitals(setting: str) -> str:
    """The setting's normalised name in capitals: learning_rate → LEARNING_RATE, lambda → LAMBDA."""
    spelled = setting if setting.isascii() else re.sub(r"_+", "_", "".join(
        f"_{GREEK_NAMES[c]}_" if c in GREEK_NAMES else c for c in unicodedata.normalize("NFKD", setting) if c.isascii() or c in GREEK_NAMES
    ))  # fmt: skip
    name = re.sub(r"\W+", "_", spelled).strip("_").upper() or "VALUE"
    return f"V_{name}" if name[0].isdigit() else name


def _literal(value: float | str, raw: str) -> str:
    if isinstance(value, str):
        return repr(value)
    integral = value.is_integer() and abs(value) < 1e15
    if integral and not re.search(r"[.eE%]|\\times|×", raw):
        return str(int(value))
    if 0 < abs(value) < 1e-3:
        mantissa, exponent = f"{value:e}".split("e")
        return f"{float(mantissa):g}e{int(exponent)}"
    return repr(value)


# -- gaps ------------------------------------------------------------------------------------------


class _SectionMap:
    """Which section a location of the paper stands in: the section of the last located item of the
    same file that starts at or before it."""

    def __init__(self, spec: PaperSpec) -> None:
        items: dict[str, list[tuple[tuple[int, float], str]]] = {}

        def add(location: Location, section_id: str | None) -> None:
            if section_id is not None:
                items.setdefault(location.file, []).append((self._key(location), section_id))

        for section in spec.sections:
            add(section.location, section.id)
        for item in [*spec.paragraphs, *spec.equations, *spec.algorithms, *spec.hyperparameters, *spec.components]:
            add(item.location, item.section_id)
        for table in spec.tables:
            for location in [table.location, *table.row_locations]:
                add(location, table.section_id)
        self.items = {file: sorted(entries) for file, entries in items.items()}

    @staticmethod
    def _key(location: Location) -> tuple[int, float]:
        if location.page is not None:
            return location.page, location.bbox[1] if location.bbox else 0.0
        return 0, (location.line or 0) + (location.column or 0) / 1e6

    def section_of(self, location: Location) -> str | None:
        key = self._key(location)
        found = None
        for start, section_id in self.items.get(location.file, []):
            if start > key:
                break
            found = section_id
        return found


def _gaps_in_scope(
    spec: PaperSpec, readiness: ReadinessReport, scope: _Scope, symbols: set[str], settings: set[str]
) -> list[Gap]:
    """The readiness gaps of the scope: shown there, about one of its symbols, about a component it
    uses, or a conflict over one of `settings`. In the report's order (blocking first)."""
    sections = _SectionMap(spec)
    in_scope = set(scope.section_ids)
    used = set()
    if not scope.discussion:
        used = {c.name for c in spec.components if c.section_id in in_scope and not _discussion(spec, c.section_id)}
    if scope.algorithm is not None:
        used |= {m.name for step in scope.algorithm.steps for m in find_mentions(_plain(step))}
    keys = {symbol_key(s) for s in symbols}
    found = []
    for gap in readiness.gaps:
        shown_here = any(sections.section_of(e.location) in in_scope for e in gap.evidence)
        about_symbol = gap.kind in ("undefined-symbol", "unstated-value") and symbol_key(gap.id.split(":", 1)[1]) in keys
        about_component = gap.component is not None and gap.component in used
        about_setting = gap.kind == "conflicting-values" and gap.setting in settings
        if shown_here or about_symbol or about_component or about_setting:
            found.append(gap)
    return found


def _discussion(spec: PaperSpec, section_id: str | None) -> bool:
    return section_id is not None and section_id in framing_sections(spec)


def _gap_todo(gap: Gap) -> _Todo:
    evidence = gap.evidence[0]
    quote = " ".join(evidence.quote.split())
    if len(quote) > 160:
        quote = quote[:159].rstrip() + "…"
    kind = "blocking" if gap.blocking else "routine"
    return _Todo(" ".join(gap.question.split()), f"{kind}, {gap.kind}: “{quote}” ({evidence.location.short()})", gap)


def _several_values_todo(setting: str, statements: list[Hyperparameter]) -> _Todo:
    shown = "; ".join(f"{h.raw_value} ({h.location.short()})" for h in statements)
    readable = setting.replace("_", " ")
    return _Todo(
        f"The paper states several values for {readable}: {shown}. Which one does this module use?",
        "several values: " + " | ".join(f"“{quote}”" for quote in dict.fromkeys(" ".join(h.text.split()) for h in statements)),
    )


# -- rendering -------------------------------------------------------------------------------------


def _docstring(lines: list[str], indent: str) -> str:
    """A raw triple-quoted docstring of `lines` at `indent`: LaTeX keeps its backslashes."""
    text = "\n".join(f"{indent}{line}" if line else "" for line in lines)
    text = text.replace('"""', '"" "')  # never close the docstring early
    text = "".join(c for c in text if c in "\n\t" or ord(c) >= 32)
    first, _, rest = text.lstrip().partition("\n")
    if not rest and not first.endswith(("\\", '"')) and len(f'{indent}r"""{first}"""') <= LINE_LENGTH:
        return f'{indent}r"""{first}"""'
    body = f"{first}\n{rest}\n{indent}" if rest else f"{first}\n{indent}"
    return f'{indent}r"""{body}"""'


def _wrap(text: str, width: int = QUOTE_WIDTH, indent: str = "") -> list[str]:
    return textwrap.wrap(
        " ".join(text.split()), width=width, initial_indent=indent, subsequent_indent=indent,
        break_long_words=False, break_on_hyphens=False,
    ) or [indent]  # fmt: skip


def _equation_lines(equation: Equation) -> list[str]:
    body = equation.latex if equation.latex is not None else equation.text
    return [f"    {line.rstrip()}" for line in body.strip().splitlines() if line.strip()]


def _equation_title(equation: Equation, section_heading: str | None = None) -> str:
    """How a docstring names an equation; a number the code index can read makes the anchor."""
    where = equation.location.short()
    if equation.number and EQUATION_NUMBER.fullmatch(equation.number):
        return f"Eq. ({equation.number}), {where}"
    label = f"\\eqref{{{equation.label}}}" if equation.label else None
    if equation.number and not re.search(r"[\\{}:]", equation.number):
        return f"Eq. “{equation.number}”" + (f", {label}" if label else "") + f", {where}"
    if equation.number:  # \tag{\ref{eq:x}}: a restatement, whose tag must not read as an anchor
        return "Equation with a tag of its own" + (f", {label}" if label else "") + f", {where}"
    if label:
        return f"Unnumbered equation {label}, {where}"
    return f"Unnumbered equation{' of ' + section_heading if section_heading else ''}, {where}"


def _render_module(spec: PaperSpec, scope: _Scope, plan: _Plan, test_path: str) -> str:
    lines = [f"{scope.heading}, scaffolded by paperlens.", ""]
    if spec.title:
        lines.append(f"Paper: “{_plain(spec.title)}”")
    lines.append(f"Where: {scope.location.short()}")
    if scope.algorithm is not None:
        section = next((s for s in spec.sections if s.id == scope.algorithm.section_id), None)
        if section is not None:
            lines[-1] += f", in {_section_heading(section)}"
        lines += ["", "Steps, as the paper gives them:", ""]
        lines += [f"    {i}. {' '.join(step.split())}" for i, step in enumerate(scope.algorithm.steps, start=1)]
    if scope.equations:
        lines += ["", "Equations it uses:" if scope.algorithm is not None else "Equations of this section:"]
        for equation in scope.equations:
            lines += ["", _equation_title(equation), *_equation_lines(equation)]
    lines += [
        "",
        *_wrap(
            f"Each function raises NotImplementedError until it is written; {test_path} checks the shape "
            "of its result. A value below is stated by the paper (quoted above it); what the paper leaves "
            "open is a TODO(paperlens) line, never a guessed value."
            + (" An equation another module implements is imported from it." if plan.imports else "")
        ),
    ]
    out = [_docstring(lines, ""), ""]
    if plan.imports:
        out += ["", "# Equations this module uses, implemented (and tested) where the paper defines them."]
        for module, names in sorted(plan.imports.items()):
            out += _import_lines(f".{module}", names)
    if plan.constants:
        out += ["", "# Values the paper states, each under the words that state it.", ""]
        for constant in plan.constants:
            first = constant.statements[0]
            out += _wrap(f"“{first.text}”", indent="# ")
            others = [h.location.short() for h in constant.statements[1:]]
            where = first.location.short() + (f"; also {', '.join(others)}" if others else "")
            out += [f"#   — {where}", f"{constant.name} = {_literal(constant.value, first.raw_value)}", ""]
    if plan.todos:
        if not plan.constants:
            out.append("")
        out += [
            "# What the paper needs but does not settle: ask the authors, or record an assumption,",
            "# then replace each TODO by the answer (paperlens quotes where the paper shows the gap).",
        ]
        for todo in plan.todos:
            out.append(f"{TODO}{todo.question}")
            out += _wrap(todo.detail, indent="#   ")
        out.append("")
    for unit in plan.units:
        out += ["", *_render_unit(spec, scope, unit), ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _parameter_lines(parameters: list[_Parameter]) -> list[str]:
    lines = []
    for parameter in parameters:
        head = f"{parameter.name}: {parameter.symbol}" + (f" — {parameter.note}" if parameter.note else "")
        wrapped = _wrap(head, width=QUOTE_WIDTH - 8)
        lines += [f"    {wrapped[0]}", *(f"        {line}" for line in wrapped[1:])]
    return lines


def _render_unit(spec: PaperSpec, scope: _Scope, unit: _Unit) -> list[str]:
    names = [p.name for p in unit.parameters]
    if unit.kind == "algorithm":
        algorithm = scope.algorithm
        where = f"Algorithm {algorithm.number}" if algorithm.number else "The algorithm"
        lines = [
            f"{where}, {algorithm.location.short()}: its steps are quoted in the module docstring.",
        ]
        if unit.parameters:
            lines += ["", "Args (the symbols its steps use but do not compute):", *_parameter_lines(unit.parameters)]
        message = f"{unit.name}: {where} of the paper is not implemented yet"
        return [*_bracketed(f"def {unit.name}", names, ":"), _docstring(lines, "    "), *_raise(message, "    ")]
    equation = unit.equation
    section = next((s for s in spec.sections if s.id == equation.section_id), None)
    title = _equation_title(equation, _section_heading(section) if section else None)
    quote = _equation_lines(equation)
    if _cites("\n".join(quote)):  # the equation itself cites another one: keep that off this function
        quote = ["    (quoted in the module docstring)"]
    returns = unit.reading.output
    if unit.kind == "class":
        lines = [f"The {unit.reading.operator} layer: {title}:", "", *quote, "",
                 "The paper calls it a layer: what it holds is set at construction, its input given at each call."]  # fmt: skip
        if unit.parameters:
            lines += ["", "Args:", *_parameter_lines(unit.parameters)]
        body = [f"class {unit.name}:", _docstring(lines, "    "), ""]
        body += _bracketed("def __init__", ["self", *names], ":", "    ")
        body += [f"        self.{p.name} = {p.name}" for p in unit.parameters] or ["        pass"]
        call_lines = [f"{returns or unit.name} for the input." if returns else "The layer's output."]
        if unit.call_parameters:
            call_lines += ["", "Args:", *_parameter_lines(unit.call_parameters)]
        message = f"{unit.name}: {equation_name(equation)} of the paper is not implemented yet"
        call_names = ["self", *(p.name for p in unit.call_parameters)]
        body += ["", *_bracketed("def __call__", call_names, ":", "    "), _docstring(call_lines, "        "),
                 *_raise(message, "        ")]  # fmt: skip
        return body
    lines = [f"{title}:", "", *quote]
    if unit.parameters:
        lines += ["", "Args:", *_parameter_lines(unit.parameters)]
    if returns:
        lines += ["", "Returns:", f"    {returns}" + (", drawn from the distribution above" if unit.reading.drawn else "")]
    message = f"{unit.name}: {equation_name(equation)} of the paper is not implemented yet"
    return [*_bracketed(f"def {unit.name}", names, ":"), _docstring(lines, "    "), *_raise(message, "    ")]


def _raise(message: str, indent: str) -> list[str]:
    return _bracketed("raise NotImplementedError", [_string(message)], "", indent)


def _bracketed(head: str, items: list[str], tail: str, indent: str = "") -> list[str]:
    """`head(items)tail` on one line, or split as black splits it: the items on one indented line,
    else one per line with a trailing comma."""
    one = f"{indent}{head}({', '.join(items)}){tail}"
    if len(one) <= LINE_LENGTH or not items:
        return [one]
    middle = f"{indent}    {', '.join(items)}"
    if len(middle) <= LINE_LENGTH:
        return [f"{indent}{head}(", middle, f"{indent}){tail}"]
    return [f"{indent}{head}(", *(f"{indent}    {item}," for item in items), f"{indent}){tail}"]


def _render_test(scope: _Scope, plan: _Plan, module: str, name: str, path: str) -> str:
    lines = [
        f"Shape tests for {path}, scaffolded by paperlens.",
        "",
        f"Run from the workspace root: python -m pytest tests/test_{name}.py",
        "",
        "Each test calls one function of the module and checks the shape of its result. While the",
        "function is a stub it raises NotImplementedError, and the test is an expected failure for that",
        "reason only (any other error, or a wrong shape, fails it). Once the function is written, replace",
        "each `...` by an input of the shape your implementation expects and by the shape the paper's",
        "equation gives for them. When the test passes, pytest fails it as XPASS(strict): then remove",
        "its @stub marker.",
    ]
    imported = list({u.name for u in plan.units} | {p.constant for u in plan.units
                                                    for p in [*u.parameters, *u.call_parameters] if p.constant})  # fmt: skip
    out = [_docstring(lines, ""), "", "import pytest", ""]
    out += _import_lines(module, imported)
    out += ["", "# Expected to fail only while the function under test still raises NotImplementedError."]
    out += _bracketed("stub = pytest.mark.xfail", XFAIL_ARGUMENTS, "")
    test_names = _Names()
    for unit in plan.units:
        test_name = test_names.claim(f"test_{unit.name.lower()}_shape")
        arguments = [f"{p.name}={p.constant or '...'}" for p in unit.parameters]
        if unit.kind == "class":  # DyT(gamma=..., alpha=ALPHA, beta=...)(x=...)
            constructed = f"{unit.name}({', '.join(arguments)})"
            call = _bracketed(f"out = {constructed}", [f"{p.name}=..." for p in unit.call_parameters], "", "    ")
        else:
            call = _bracketed(f"out = {unit.name}", arguments, "", "    ")
        out += [
            "",
            "",
            "@stub",
            f"def {test_name}():",
            "    # Replace each ... by an input of the shape your implementation expects.",
            *call,
            "    expected_shape = ...  # the shape the paper's equation gives for these inputs",
            "    assert out.shape == expected_shape",
        ]
    return "\n".join(out) + "\n"


def _import_lines(module: str, names: list[str]) -> list[str]:
    """One `from module import ...`, sorted and wrapped as isort (and ruff's I001) would have it:
    constants, then classes, then functions, each in natural order, within 88 columns."""

    def order(name: str) -> tuple:
        kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
        return kind, [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name.lower())]

    names = sorted(names, key=order)
    single = f"from {module} import {', '.join(names)}"
    if len(single) <= LINE_LENGTH:
        return [single]
    return [f"from {module} import (", *(f"    {name}," for name in names), ")"]


def _string(text: str) -> str:
    """A string literal in double quotes, as formatters write them."""
    return f'"{text}"' if '"' not in text and "\\" not in text else repr(text)


# -- module names ----------------------------------------------------------------------------------


def _name_source(title: str) -> str:
    """A title without its math when words remain: "LEN($z_0, T, m, M$)" names a module `len`."""
    without = re.sub(r"\$[^$]*\$", " ", title)
    return _plain(without) if _words(_plain(without)) else _plain(title)


def _words(title: str) -> list[str]:
    """The words of a title that make a module name: no stop words, at most MAX_NAME_WORDS words
    and MAX_NAME_CHARS characters, never ending on "and"."""
    spelled = "".join(f" {GREEK_NAMES[c]} " if c in GREEK_NAMES else c for c in title)
    ascii_text = unicodedata.normalize("NFKD", spelled).encode("ascii", "ignore").decode()
    words = []
    for word in re.findall(r"[a-z0-9]+", _snake_words(ascii_text)):
        if word in STOP_WORDS:
            continue
        if len(words) == MAX_NAME_WORDS or len("_".join([*words, word])) > MAX_NAME_CHARS and words:
            break
        words.append(word)
    while words and words[-1] == "and":
        words.pop()
    return words


def _snake_words(text: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z][a-z])", " ", text).lower()


def _module_name(scope: _Scope) -> str:
    name = "_".join(_words(scope.name_source))
    problematic = (
        not name
        or not name[0].isalpha()
        or name in RESERVED_MODULE_NAMES
        or name in sys.stdlib_module_names
        or keyword.iskeyword(name)
        or name.startswith("test")
        or name.endswith("_test")
    )
    if problematic:
        name = f"{scope.name_prefix}_{name}".strip("_") if name else scope.name_prefix
    return name


def _free_module_name(root: Path, name: str, *, tests: Path) -> str:
    """`name`, or `name_2`, `name_3`, ... : the first whose module, package (in `root`) and test file
    (in `tests`) are all free."""
    existing = {p.name.lower() for p in root.iterdir()} if root.is_dir() else set()
    existing_tests = {p.name.lower() for p in tests.iterdir()} if tests.is_dir() else set()
    candidate, number = name, 1
    while (
        f"{candidate}.py" in existing
        or candidate in existing
        or f"test_{candidate}.py" in existing_tests
    ):
        number += 1
        candidate = f"{name}_{number}"
    return candidate

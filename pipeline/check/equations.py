"""Equation-level checks. A function is tied to an equation by an anchor, or linked to one by what it
computes (its operations applied to names that all stand for the equation's symbols: `_may_compute`,
read from a sketch, without SymPy). A tied or linked pair is compared as expressions
(check/formulas.py): equivalent, a named difference (one divergence), or undecided (silence). For an
anchored function the expressions cannot decide, the older checks remain: a sum written as a mean (or
a mean as a sum), a term of the equation that the function's result leaves out, and a dropped minus.

What an anchor documents decides what is compared. One in the definition's header (a comment above
it or on its `def`/`class` line, or in its signature) or in its docstring documents the whole
definition: its reductions, and its result (the terms it returns, their sign). One on an inner line
documents one statement: the statement it trails, or the one right below a comment on its own line;
only that statement's reductions are compared, and the result only when that statement is the
function's `return` — `# Eq. (2)` above the first of three lines that build λ says nothing about what
the function returns."""

from __future__ import annotations

import ast
import bisect
import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...schemas import CodeIndex, CodeLocation, Equation, Evidence, Finding, Fix, FunctionSite, PaperSpec, SymbolBinding, TextEdit, Undecided
from ..algebra import SKETCH, sympy_algebra
from ..code.formula import Assigned, Computed, parameters_of, read_assignments, read_function
from ..code import MAX_FILE_BYTES
from ..code.incremental import ModuleDefinitions, definitions_of
from ..code.anchors import anchor_comment
from ..code.sites import line_starts, source_lines
from ..extract.formula import Formula, Unreadable, defined_name, read_formula
from ..extract.parts import framing_sections, method_formulas
from ..files import UnreadableFile, read_regular_file
from .binding import bind, binding_template, head_spellings, linkable

# Symbol → code name pairs the decisions file sets for one function and equation, sorted (a memo key).
Given = tuple[tuple[str, str], ...]
# An expectation or an explicit 1/N makes the equation an average.
MEAN_MARKERS = ("\\mathbb{E}", "\\mathop{\\mathbb{E}}", "\\frac{1}{", "\\tfrac{1}{", "\\dfrac{1}{", "\\operatorname{mean}", "\\mathrm{mean}", "\\text{mean}")
SUM_MARKERS = ("\\sum",)


def _reductions(node: ast.AST) -> tuple[list[ast.Call], list[ast.Call], bool]:
    """The mean calls, the sum calls, and whether the code divides, inside `node`."""
    means: list[ast.Call] = []
    sums: list[ast.Call] = []
    divides = False
    for child in ast.walk(node):
        if isinstance(child, ast.BinOp) and isinstance(child.op, ast.Div):
            divides = True
        if not isinstance(child, ast.Call):
            continue
        function = child.func
        name = function.attr if isinstance(function, ast.Attribute) else function.id if isinstance(function, ast.Name) else ""
        if name in ("mean", "nanmean", "average"):
            means.append(child)
        elif name in ("sum", "nansum"):
            sums.append(child)
        for keyword in child.keywords:  # F.cross_entropy(..., reduction="sum")
            if keyword.arg == "reduction" and isinstance(keyword.value, ast.Constant):
                (sums if keyword.value.value == "sum" else means if keyword.value.value == "mean" else []).append(child)
    return means, sums, divides


def definition_node(definitions: ModuleDefinitions, function: FunctionSite) -> ast.AST | None:
    return definitions.at(function.location.line)


def _divergence(
    function: FunctionSite, equation: Equation, check: str, location: CodeLocation, message: str,
    code_value: str, paper_value: str, note: str,
) -> Finding:  # fmt: skip
    """An equation-level divergence: the function's place, the equation as evidence, low confidence."""
    return Finding(
        id=f"divergence:{check}:eq{equation.number}:{location.file}:{location.line + 1}",
        kind="divergence",
        severity="warning",
        confidence=0.6 if check == "reduction" else 0.5,
        confidence_note=note,
        message=message,
        setting=check,
        code=location,
        code_value=code_value,
        paper_value=paper_value,
        paper=[Evidence(quote=equation.latex or equation.text, location=equation.location)],
        fixes=[Fix(kind="record-deviation", title=f"Record {function.name}'s {check} as a deliberate deviation from Eq. ({equation.number})")],
    )


def _finding(function: FunctionSite, equation: Equation, call: ast.Call, summed: bool) -> Finding:
    location = CodeLocation(
        file=function.location.file, line=call.lineno - 1, column=call.col_offset,
        end_line=(call.end_lineno or call.lineno) - 1, end_column=call.end_col_offset,
    )  # fmt: skip
    paper_form, code_form = ("a sum", "a mean") if summed else ("an average", "a sum")
    return _divergence(
        function, equation, "reduction", location,
        f"Eq. ({equation.number}) takes {paper_form}, but {function.qualname} takes {code_form}",
        "mean" if summed else "sum", "sum" if summed else "mean",
        "a reduction over the batch may be intended; a sum and a mean differ by the number of terms, "
        "which scales the loss and its gradient",
    )  # fmt: skip



# Delimiters without braces whose inside must not count: norms, absolute values, \left…\right.
_DELIMITED = re.compile(r"\\left.*?\\right\S?|\\lVert.*?\\rVert|\\\|.*?\\\||\\lvert.*?\\rvert|\|[^|]*\|")


def equation_terms(latex: str) -> int:
    """Top-level additive terms right of the defining `=`: `L = A + \\lambda B` has 2."""
    latex = _DELIMITED.sub("X", latex)
    depth = 0
    right = latex
    for i, char in enumerate(latex):
        depth += char in "{([" and 1 or 0
        depth -= char in "})]" and 1 or 0
        if char == "=" and depth == 0 and latex[i - 1 : i] not in ("<", ">", "!", ":"):
            right = latex[i + 1 :]
            break
    terms, depth, pending = 0, 0, True
    for char in right.strip().rstrip(".,;").strip():
        if char in "{([":
            depth += 1
        elif char in "})]":
            depth -= 1
        if depth == 0 and char in "+-":
            pending = True
        elif pending and not char.isspace():
            terms, pending = terms + 1, False
    return terms


def _code_terms(expression: ast.expr) -> int:
    if isinstance(expression, ast.BinOp) and isinstance(expression.op, (ast.Add, ast.Sub)):
        return _code_terms(expression.left) + _code_terms(expression.right)
    return 1


def _returned_terms(node: ast.AST) -> int | None:
    """Terms of what the function returns, following one local name; None when it cannot be told
    (several returns, a tuple, a loop or `+=` that accumulates)."""
    returns = [n for n in ast.walk(node) if isinstance(n, ast.Return) and n.value is not None]
    if len(returns) != 1 or isinstance(returns[0].value, ast.Tuple):
        return None
    if any(isinstance(n, (ast.For, ast.While, ast.AugAssign, ast.comprehension)) for n in ast.walk(node)):
        return None
    value = returns[0].value
    if isinstance(value, ast.Name):
        assigned = [n for n in ast.walk(node) if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == value.id for t in n.targets)]
        if len(assigned) != 1:
            return None
        value = assigned[0].value
    return _code_terms(value)


def _missing_term(function: FunctionSite, equation: Equation, node: ast.AST) -> Finding | None:
    paper_terms = equation_terms(equation.latex or "")
    code_terms = _returned_terms(node)
    if code_terms is None or paper_terms < 2 or code_terms >= paper_terms:
        return None
    return _divergence(
        function, equation, "terms", function.location,
        f"Eq. ({equation.number}) adds {paper_terms} terms, but {function.qualname} returns {code_terms}",
        str(code_terms), str(paper_terms),
        "terms are counted, not matched: a term may be computed elsewhere and added by the caller",
    )  # fmt: skip


# Calls that carry the minus sign of a log-likelihood themselves.
NEGATING_CALLS = {"cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "kl_div", "KLDivLoss", "softmax_cross_entropy", "sigmoid_binary_cross_entropy"}


def _negated_in_paper(latex: str) -> bool:
    """The right side of the defining `=` is one term that starts with a minus: `L = -\\sum ...`."""
    if equation_terms(latex) != 1:
        return False
    right = latex.split("=", 1)[1] if "=" in latex else latex
    return right.lstrip().startswith("-")


def _negates(node: ast.AST) -> bool:
    for child in ast.walk(node):
        if isinstance(child, ast.UnaryOp) and isinstance(child.op, ast.USub):
            return True
        if isinstance(child, ast.BinOp) and isinstance(child.op, ast.Sub):
            return True
        if isinstance(child, ast.Call):
            name = child.func.attr if isinstance(child.func, ast.Attribute) else getattr(child.func, "id", "")
            if name in NEGATING_CALLS:
                return True
    return False


def _missing_sign(function: FunctionSite, equation: Equation, node: ast.AST) -> Finding | None:
    if not _negated_in_paper(equation.latex or "") or _returned_terms(node) is None or _negates(node):
        return None
    return _divergence(
        function, equation, "sign", function.location,
        f"Eq. ({equation.number}) is negated, but {function.qualname} returns it without a minus sign",
        "+", "-", "no minus sign, negation or negative log-likelihood call is seen in the function",
    )  # fmt: skip


def _documented(node: ast.AST, line: int, lines: list[str]) -> ast.AST | None:
    """What an anchor on `line` (0-based) in or right above the definition `node` documents: the whole
    definition, one statement of its body, or nothing (a comment below its last statement)."""
    first = node.body[0]
    own_line = line < len(lines) and lines[line].lstrip().startswith("#")
    if line <= node.lineno - 1 or (line < first.lineno - 1 and not own_line):
        return node  # above the definition, on its decorators or its `def` line, trailing its signature
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    if docstring and first.lineno - 1 <= line <= first.end_lineno - 1:
        return node  # its docstring
    statements = [child for child in ast.walk(node) if isinstance(child, ast.stmt) and child is not node]
    if own_line:  # the statement below the comment (the outermost one starting there)
        below = [s for s in statements if s.lineno - 1 > line]
        if not below:
            return None
        start = min(s.lineno for s in below)
        return max((s for s in below if s.lineno == start), key=lambda s: s.end_lineno)
    around = [s for s in statements if s.lineno - 1 <= line <= s.end_lineno - 1]  # the statement it trails
    return min(around, key=lambda s: (s.end_lineno - s.lineno, -s.lineno)) if around else None


def _returns_of(node: ast.AST) -> list[ast.Return]:
    """The function's own `return` statements (not those of functions defined inside it)."""
    found: list[ast.Return] = []
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(child, ast.Return):
            found.append(child)
        stack += ast.iter_child_nodes(child)
    return found


class Memo:
    """A bounded, thread-safe memo (the editor's analyses run in several threads): what was computed
    for a key, the least recently used forgotten first."""

    def __init__(self, entries: int) -> None:
        self._items: OrderedDict[tuple, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._entries = entries

    def get(self, key: tuple, compute: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = compute()
        with self._lock:
            self._items[key] = value
            if len(self._items) > self._entries:
                self._items.popitem(last=False)
        return value


# What one anchored definition gives, by everything it depends on: an edit elsewhere in the file
# (the editor re-checks the whole file on each) reuses it instead of walking the definition again.
_COMPARED = Memo(1024)
# What a function and an equation gave, by the function's tree (with its lines) and the equation.
_DECIDED = Memo(1024)


def _compared(
    function: FunctionSite, equation: Equation, node: ast.AST, anchor_line: int, lines: list[str], given: Given = ()
) -> tuple[list[Finding], str | None, SymbolBinding | None]:
    """What one anchor (on `anchor_line`) finds between the definition `node` and `equation`; why
    their expressions were not compared, when they were not; and when a symbol could not be bound,
    the binding for the team to complete."""
    key = (
        function.location.file, function.qualname, function.location.line, function.location.column, node.lineno,
        anchor_line, lines[anchor_line] if anchor_line < len(lines) else "", equation.id, equation.number, equation.latex,
        "\n".join(lines[node.lineno - 1 : node.end_lineno]), given,
    )  # fmt: skip
    return _COMPARED.get(key, lambda: _compare(function, equation, node, anchor_line, lines, given))


def _compare(
    function: FunctionSite, equation: Equation, node: ast.AST, anchor_line: int, lines: list[str], given: Given
) -> tuple[list[Finding], str | None, SymbolBinding | None]:
    documented = _documented(node, anchor_line, lines)
    if documented is None:
        return [], None, None
    findings: list[Finding] = []
    undecided, to_complete = None, None
    latex = equation.latex or ""
    sums_in_paper = any(m in latex for m in SUM_MARKERS)
    averages_in_paper = any(m in latex for m in MEAN_MARKERS)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
        documented is node or any(documented is r for r in _returns_of(node))
    ):  # the anchor documents what the function returns
        header = lines[function.location.line] if function.location.line < len(lines) else ""
        decided = _formula_findings(function, equation, node, f"the anchor on line {anchor_line + 1}", anchored=True, header=header, given=given)
        if not isinstance(decided, str):
            return decided, None, None  # the expressions decided; the term and sign counts below would only guess
        undecided, to_complete = decided, _binding_to_complete(function, equation, node, given)
        findings += [f for f in (_missing_term(function, equation, node), _missing_sign(function, equation, node)) if f]
    # A reduction is reported where the anchor points, and only when nothing in the whole
    # definition offsets it (a sum of means, a sum divided by N on the next line).
    means, sums, divides = _reductions(node)
    means_here, sums_here, _ = (means, sums, divides) if documented is node else _reductions(documented)
    if sums_in_paper and not averages_in_paper and means_here and not sums:
        findings.append(_finding(function, equation, means_here[0], summed=True))
    elif averages_in_paper and sums_here and not means and not divides:  # 1/N Σ is an average
        findings.append(_finding(function, equation, sums_here[0], summed=False))
    return findings, undecided, to_complete


def _binding_to_complete(function: FunctionSite, equation: Equation, node: ast.AST, given: Given) -> SymbolBinding | None:
    """When both sides were read and only binding failed: the pairs paperlens can tell, an empty
    name for each symbol it cannot, for the decisions file."""
    formula, computed = _formula(equation.latex or ""), _computed(node)
    if isinstance(formula, str) or isinstance(computed, str):
        return None
    computed = _elements_computing(node, computed, equation.latex or "", given)
    paper_names = {s.name for s in formula.expression.free_symbols}
    code_names = {s.name for path in computed for s in path.expression.free_symbols}
    if not computed or not isinstance(bind(paper_names, code_names, dict(given)), str):
        return None  # bound: undecided for another reason
    symbols = binding_template(paper_names, code_names, dict(given))
    if "" not in symbols.values():
        return None  # every symbol has its name: the code's extra names are what stops it, not a binding
    return SymbolBinding(function=function.qualname, equation=equation.number or "", symbols=symbols, file=function.location.file)


@functools.lru_cache(maxsize=1024)
def _formula(latex: str, sketch: bool = False) -> Formula | str:
    """The equation read as SymPy (to compare), or as a sketch (to link: no SymPy); else why not."""
    try:
        return read_formula(latex, SKETCH if sketch else sympy_algebra())
    except Unreadable as unread:
        return str(unread)


def _computed(node: ast.FunctionDef | ast.AsyncFunctionDef, sketch: bool = False) -> list[Computed] | str:
    try:
        return read_function(node, SKETCH if sketch else sympy_algebra())
    except Unreadable as unread:
        return str(unread)


def _formula_findings(
    function: FunctionSite, equation: Equation, node: ast.AST, linked_by: str, *, anchored: bool, header: str, given: Given
) -> list[Finding] | str:
    """What comparing the equation's expression with the function's says: why not, when undecided; when
    a path of the function computes the equation (the others are variants), an agreement at the
    function's name (`header`: its `def` line); else one divergence naming the difference, at the
    `return` that makes it. A pair no anchor ties gets a fix writing the anchor; every one, the binding
    it used, for the team to correct in the decisions file (`given`: what they set there)."""
    decided = _decided(node, equation.latex or "", anchored, given)
    if isinstance(decided, str):
        return decided
    differs, line, code_value, paper_value, comparison, element = decided
    returned = "" if element is None else f" (the value it returns {_ORDINALS.get(element, f'at place {element + 1}')})"
    bound = ", ".join(f"{p} → {c}" for p, c in sorted(comparison.binding.items()) if p != c) or "by their names"
    note = f"linked by {linked_by}; symbols bound {bound}" + (" (as the decisions file says)" if given else "")
    binding = SymbolBinding(function=function.qualname, equation=equation.number or "", symbols=comparison.binding, file=function.location.file)
    fixes = [] if anchored else [_link_fix(function, equation, header)]
    fixes.append(Fix(kind="correct-binding", title=f"Record which name of `{function.name}` stands for which symbol of Eq. ({equation.number})"))
    if not differs:
        return [
            Finding(
                id=f"agreement:formula:eq{equation.number}:{function.location.file}:{function.location.line + 1}",
                kind="agreement", severity="info", confidence=0.9 if anchored else 0.7, confidence_note=note,
                message=f"{function.qualname}{returned} computes Eq. ({equation.number}): {comparison.detail}",
                setting="formula", code=_name_location(function, header), code_value=code_value, paper_value=paper_value,
                paper=[Evidence(quote=equation.latex or equation.text, location=equation.location)], fixes=fixes, binding=binding,
            )
        ]  # fmt: skip
    location = CodeLocation(file=function.location.file, line=line, column=0, end_line=line, end_column=None)
    finding = _divergence(
        function, equation, "formula", location,
        f"{function.qualname}{returned} differs from Eq. ({equation.number}): {comparison.detail}", code_value, paper_value, note,
    )  # fmt: skip
    finding.fixes += fixes
    finding.binding = binding
    return [finding]


_ORDINALS = {0: "first", 1: "second", 2: "third", 3: "fourth", 4: "fifth", 5: "sixth"}


def _name_location(function: FunctionSite, header: str) -> CodeLocation:
    """Where a definition's name stands on its `def` line (the whole line when it is not found)."""
    found = re.search(rf"\b(?:def|class)\s+({re.escape(function.name)})\b", header)
    start, end = found.span(1) if found else (0, len(header))
    line = function.location.line
    return CodeLocation(file=function.location.file, line=line, column=start, end_line=line, end_column=end)


def _link_fix(function: FunctionSite, equation: Equation, header: str) -> Fix:
    """Write the anchor a link by what the function computes suggests: a comment above its definition."""
    at = CodeLocation(file=function.location.file, line=function.location.line, column=0, end_line=function.location.line, end_column=0)
    return Fix(
        kind="link-equation",
        title=f"Link `{function.name}` to Eq. ({equation.number}) of the paper",
        edit=TextEdit(location=at, new_text=anchor_comment(header, f"Eq. ({equation.number})")),
    )


def _decided(node: ast.AST, latex: str, anchored: bool, given: Given) -> tuple | str:
    """A function against an equation: why not, when undecided, else (whether it differs, the line of the
    return compared, code, paper, the Comparison, the place in a returned tuple of the value compared
    or None): an agreement when a path of it computes the equation (the others are variants), else
    the first differing path."""
    # The same function in another file or place (a module copied into each task's folder) is decided
    # once: keyed by its shape and where its returns stand in it, its lines shifted to this copy's.
    returns = tuple(n.lineno - node.lineno for n in ast.walk(node) if type(n) is ast.Return)
    key = (ast.dump(node), returns, latex, anchored, given)
    first, decided = _DECIDED.get(key, lambda: (node.lineno, _decide(node, latex, anchored, given)))
    if isinstance(decided, str) or first == node.lineno:
        return decided
    differs, line, code, paper, comparison, element = decided
    return differs, line + node.lineno - first, code, paper, comparison, element


def _decide(node: ast.AST, latex: str, anchored: bool, given: Given) -> tuple | str:
    formula = _formula(latex)
    if isinstance(formula, str):
        return f"the equation cannot be read ({formula})"
    computed = _computed(node)
    if isinstance(computed, str):
        return f"the function cannot be read ({computed})"
    computed = _elements_computing(node, computed, latex, given)
    if not computed:
        return "no value of the tuple it returns applies the equation's operations to its symbols"
    from .formulas import compare, shown  # SymPy: imported once a pair is compared

    comparisons = [(path, compare(formula, path, anchored=anchored, given=dict(given))) for path in computed]
    equivalent = [(path, c) for path, c in comparisons if c.outcome == "equivalent"]
    decided = equivalent or [(path, c) for path, c in comparisons if c.outcome == "differs"]
    if not decided:
        return "; ".join(dict.fromkeys(c.detail for _, c in comparisons))
    path, comparison = decided[0]
    return comparison.outcome == "differs", path.line, shown(path.expression), shown(formula.expression), comparison, path.element


def _elements_computing(node: ast.FunctionDef | ast.AsyncFunctionDef, computed: list[Computed], latex: str, given: Given) -> list[Computed]:
    """The paths to compare: a whole returned value always; of a returned tuple, only the values that
    apply the equation's operations to names standing for its symbols (`return loss, weight`: the
    weight is no reading of the loss's equation, and no difference from it)."""
    if all(path.element is None for path in computed):
        return computed
    paper, sketches = _formula(latex, sketch=True), _computed(node, sketch=True)
    if isinstance(paper, str) or isinstance(sketches, str):
        return [path for path in computed if path.element is None]
    linked = {(s.line, s.element) for s in sketches if _may_compute(s.expression, paper.expression, given)}
    return [path for path in computed if path.element is None or (path.line, path.element) in linked]


def _inferred_findings(
    root: Path, spec: PaperSpec, index: CodeIndex, sources: Mapping[str, str], anchored: set[tuple[str, str]], bindings: Sequence[SymbolBinding]
) -> list[Finding]:
    """Functions no anchor ties to an equation, linked by what they compute: every name they use binds
    to one of a method equation's symbols, and they apply the same operations (tanh, exp, ...; an
    equation of bare arithmetic links nothing: too many functions would match it). Only a named
    difference is reported."""
    aside = framing_sections(spec) | {s.id for s in spec.sections if s.appendix}
    formulas = [
        (equation, sketch.expression)
        for equation in spec.equations
        if equation.number and equation.latex and equation.section_id not in aside
        and not isinstance(sketch := _formula(equation.latex, sketch=True), str) and sketch.expression.operations
    ]  # fmt: skip
    if not formulas:
        return []
    words = {word for _, sketch in formulas for operation in sketch.operations for word in _CODE_WORDS[operation]}
    findings: list[Finding] = []
    for file in index.files:
        if not file.file.endswith(".py") or not any(f.kind == "function" for f in file.functions):
            continue  # what the index could not read has no functions
        read = read_definitions(root, file.file, sources)
        if read is None or not any(word in read[0] for word in words):
            continue
        lines, tree = source_lines(read[0]), read[1]
        for function in file.functions:
            if function.kind != "function" or (file.file, function.qualname) in anchored:
                continue
            # The editor re-checks the whole file after each edit: a function's sketch is read once per text.
            source = "\n".join(lines[function.location.line : (function.location.end_line or function.location.line) + 1])
            sketches = _SKETCHED.get((file.file, function.location.line, source), lambda: _sketches(tree, function))
            for equation, sketch in formulas:
                given = _given(bindings, function, equation)
                if not isinstance(sketches, str) and any(_may_compute(path.expression, sketch, given) for path in sketches):
                    header = lines[function.location.line] if function.location.line < len(lines) else ""
                    node = definition_node(tree, function)
                    decided = _formula_findings(function, equation, node, "what it computes (no anchor)", anchored=False, header=header, given=given)
                    findings += [] if isinstance(decided, str) else decided  # no anchor: an undecided link says nothing
    return findings


def _sketches(tree: ModuleDefinitions, function: FunctionSite) -> list[Computed] | str:
    node = definition_node(tree, function)
    return _computed(node, sketch=True) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else []


_SKETCHED = Memo(4096)  # a function's sketches, by its file, line and text


def _definition_findings(root: Path, spec: PaperSpec, index: CodeIndex, sources: Mapping[str, str]) -> list[Finding]:
    """A name a statement assigns that stands for a symbol the paper defines (`delta = ...` and
    "$\\delta = \\alpha^{-\\beta^2}$", a display equation or the method's inline math), its value
    applying the definition's operations to names that all stand for its symbols: compared with the
    definition. Only an agreement or a named difference is reported; no anchor is needed."""
    definitions = _definitions(spec)
    if not definitions:
        return []
    # An assignment to a name spelled as a defined symbol: only the functions holding one are read,
    # each through the definitions the index kept (no parse of the whole file after an edit).
    heads = sorted({spelling for _, _, _, spellings in definitions for spelling in spellings}, key=len, reverse=True)
    assigns = re.compile(rf"(?im)^[ \t]*(?:self\.)?(?:{'|'.join(map(re.escape, heads))})\w*[ \t]*=(?!=)")
    findings: list[Finding] = []
    for file, text, tree, function in functions_holding(root, index, sources, assigns):
        lines = source_lines(text)
        # An edit elsewhere in the file (the editor re-checks it whole) reuses what this function gave.
        key = (file, function.qualname, function.location.line, "\n".join(lines[function.location.line : function.location.end_line + 1]), id(definitions))
        findings += _DEFINED.get(key, lambda: _function_definitions(file, tree, function, definitions))
    return findings


def functions_holding(
    root: Path, index: CodeIndex, sources: Mapping[str, str], pattern: re.Pattern[str]
) -> Iterator[tuple[str, str, ModuleDefinitions, FunctionSite]]:
    """(file, its text, its definitions, a function) for the innermost function holding each line
    `pattern` finds something in, once each: the editor asks after every edit, and reading
    only these functions keeps that from walking every function of a file."""
    for file in index.files:
        functions = [f for f in file.functions if f.kind == "function" and f.location.end_line is not None]
        if not file.file.endswith(".py") or not functions:
            continue
        read = read_definitions(root, file.file, sources)
        if read is None or not pattern.search(read[0]):
            continue
        text, tree = read
        starts = line_starts(text)
        matching = sorted({bisect.bisect_right(starts, found.start()) - 1 for found in pattern.finditer(text)})
        holders = {
            (holder.location.line, holder.qualname): holder
            for n in matching
            if (holder := min((f for f in functions if f.location.line < n <= f.location.end_line), key=lambda f: f.location.end_line - f.location.line, default=None))
        }  # fmt: skip
        for _, function in sorted(holders.items(), key=lambda item: item[0]):
            yield file.file, text, tree, function


def _function_definitions(file: str, tree: ModuleDefinitions, function: FunctionSite, definitions: list) -> list[Finding]:
    node = definition_node(tree, function)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    parameters = parameters_of(node)
    sketches = read_assignments(node.body, parameters)
    findings: list[Finding] = []
    for name, sketch, evidence, _ in definitions:
        linked = {(a.name, a.line): a for a in sketches if _defines(a, name, sketch)}  # one per statement
        for assigned in linked.values():
            findings += _definition_compared(file, node.body, parameters, function.qualname, assigned, name, evidence)
    return findings


_DEFINED = Memo(1024)  # by function text: what its statements gave against the paper's definitions


def _defines(assigned: Assigned, name: str, sketch: Any) -> bool:
    """Whether an assignment may compute a definition: its target stands for the defined symbol and
    its value applies the same operations to names that all stand for the definition's symbols."""
    target = assigned.name.removeprefix("self.")
    code, paper = assigned.expression, sketch
    return (
        len(code.names) >= 1 and code.operations == paper.operations and target not in code.names
        and bind({name}, {target}) == {name: target} and linkable(set(paper.names) | {name}, set(code.names) | {target})
    )  # fmt: skip


def _definition_compared(
    file: str, body: list[ast.stmt], parameters: list[str], owner: str, assigned: Assigned, name: str, evidence: Evidence
) -> list[Finding]:
    formula = _formula(evidence.quote)
    if isinstance(formula, str):
        return []
    values = [a for a in read_assignments(body, parameters, sympy_algebra()) if (a.name, a.line) == (assigned.name, assigned.line)]
    if not values:
        return []
    from .formulas import compare, shown  # SymPy: imported once a pair is compared

    # One value per path through the `if`s before the statement: it agrees when one of them does.
    comparisons = [(value, compare(formula, Computed(value.expression, assigned.line), anchored=False)) for value in values]
    decided = [c for c in comparisons if c[1].outcome == "equivalent"] or [c for c in comparisons if c[1].outcome == "differs"]
    if not decided:
        return []
    value, comparison = decided[0]
    agrees = comparison.outcome == "equivalent"
    location = CodeLocation(file=file, line=assigned.line, column=0, end_line=assigned.line, end_column=None)
    target = assigned.name
    bound = ", ".join(f"{p} → {c}" for p, c in sorted(comparison.binding.items()) if p != c) or "by their names"
    return [
        Finding(
            id=f"{'agreement' if agrees else 'divergence'}:definition:{name}:{file}:{assigned.line + 1}",
            kind="agreement" if agrees else "divergence", severity="info" if agrees else "warning",
            confidence=0.6 if agrees else 0.5,
            confidence_note=f"linked by the name it assigns ({target} for {name}) and what it computes; symbols bound {bound}",
            message=f"{target} in {owner} {'computes' if agrees else 'differs from'} the paper's definition of {name}: {comparison.detail}",
            setting="formula", code=location, code_value=shown(value.expression), paper_value=shown(formula.expression), paper=[evidence],
            fixes=[] if agrees else [Fix(kind="record-deviation", title=f"Record {target}'s formula as a deliberate deviation from the paper's {name}")],
        )
    ]  # fmt: skip


def _definitions(spec: PaperSpec) -> list[tuple[str, Any, Evidence, tuple[str, ...]]]:
    """The method's definitions of one symbol by a formula of others (displays and inline math):
    (the symbol, its formula's sketch, where, how code may spell it, to find files); read once per
    paper (the editor asks after every edit)."""
    held, found = _DEFINITIONS.get(id(spec), lambda: (spec, _read_definitions_of(spec)))
    return found if held is spec else _read_definitions_of(spec)  # an id reused by another spec


_DEFINITIONS = Memo(4)  # by the spec's identity: (the spec, its definitions)


def _read_definitions_of(spec: PaperSpec) -> list[tuple[str, Any, Evidence, tuple[str, ...]]]:
    found = []
    for latex, location in method_formulas(spec):
        evidence = Evidence(quote=latex, location=location)
        name = defined_name(latex)
        sketch = _formula(latex, sketch=True) if name else None
        # A one-letter symbol (x, h, D) is any code's variable: no evidence of computing the definition.
        if name and len(name.partition("_")[0]) > 1 and not isinstance(sketch, str) and sketch is not None and sketch.expression.names:
            found.append((name, sketch.expression, evidence, head_spellings(name)))
    return found


# Words in code that may spell each operation of a sketch (a sigmoid is an exp, a ReLU a max).
_CODE_WORDS = {
    "tanh": ("tanh",), "exp": ("exp", "sigmoid", "softplus", "softmax"), "log": ("log",), "sin": ("sin",), "cos": ("cos",),
    "abs": ("abs", "l1_loss"), "max": ("max", "relu", "clamp", "clip"), "min": ("min", "clamp", "clip"),
    "reduce": ("sum", "mean", "mse_loss", "l1_loss", "softmax"),
}  # fmt: skip


def read_text(root: Path, path: str, sources: Mapping[str, str]) -> str | None:
    """A workspace file's text: the editor's, else the disk's through the one reader."""
    text = sources.get(path)
    if text is None:
        try:
            text = read_regular_file(root / path, limit=MAX_FILE_BYTES, inside=root).decode("utf-8")
        except (UnreadableFile, UnicodeDecodeError):
            return None
    return text


def read_definitions(root: Path, path: str, sources: Mapping[str, str]) -> tuple[str, ModuleDefinitions] | None:
    """A workspace file's text and its definitions; None when it cannot be read or parsed (the index
    reports why)."""
    text = read_text(root, path, sources)
    if text is None:
        return None
    try:
        return text, definitions_of(text, path)  # the edited statement alone when index_edit read it
    except (SyntaxError, ValueError, MemoryError, RecursionError):  # CPython's parser, past its limits
        return None


def _may_compute(code: Any, paper: Any, given: Given) -> bool:
    """A function path may compute an equation when it applies the same operations to names that
    all stand for the equation's symbols."""
    return code.operations == paper.operations and linkable(set(paper.names), set(code.names), dict(given))


def _given(bindings: Sequence[SymbolBinding], function: FunctionSite, equation: Equation) -> Given:
    """The pairs the decisions file sets for this function and equation (by number or label)."""
    pairs: dict[str, str] = {}
    for binding in bindings:
        if binding.function == function.qualname and binding.equation in (equation.number, equation.label) and binding.file in (None, function.location.file):
            pairs.update(binding.symbols)
    return tuple(sorted(pairs.items()))


def equation_findings(
    root: Path,
    spec: PaperSpec,
    index: CodeIndex,
    sources: Mapping[str, str] | None = None,
    bindings: Sequence[SymbolBinding] = (),
    undecided: list[Undecided] | None = None,
) -> list[Finding]:
    """Functions an anchor ties to an equation or linked to one by what they compute, compared with
    it; `sources`: an editor's unsaved texts; `bindings`: the decisions file's; `undecided` gets,
    for each anchored pair whose expressions were not compared, why."""
    by_number = {e.number: e for e in spec.equations if e.number}
    by_label = {e.label: e for e in spec.equations if e.label and e.number}
    findings: list[Finding] = []
    for file in index.files:
        functions = {f.qualname: f for f in file.functions}
        anchored = [
            (a, functions[a.function], by_number.get(a.target) or by_label.get(a.target))
            for a in file.anchors
            if a.function in functions and a.target_kind in ("equation", "label")
        ]
        anchored = [(a, function, equation) for a, function, equation in anchored if equation is not None and equation.latex]
        if not anchored:
            continue
        read = read_definitions(root, file.file, sources or {})
        if read is None:
            continue  # the index already reports what it could not read
        text, tree = read
        lines = source_lines(text)  # as the index counts lines (not str.splitlines: \f, \v)
        for anchor, function, equation in anchored:
            node = definition_node(tree, function)
            if node is not None:
                found, reason, to_complete = _compared(function, equation, node, anchor.location.line, lines, _given(bindings, function, equation))
                findings += found
                if reason is not None and undecided is not None:
                    undecided.append(
                        Undecided(file=function.location.file, line=function.location.line, function=function.qualname, equation=equation.number or "", reason=reason, binding=to_complete)
                    )  # fmt: skip
    anchored_functions = {(file.file, a.function) for file in index.files for a in file.anchors if a.target_kind in ("equation", "label")}
    findings += _inferred_findings(root, spec, index, sources or {}, anchored_functions, bindings)
    findings += _definition_findings(root, spec, index, sources or {})
    return list({finding.id: finding for finding in findings}.values())  # several anchors, one finding

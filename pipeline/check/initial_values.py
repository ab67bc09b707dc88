"""The initial value of a parameter the paper declares learnable and never says how to start.

"$\\lambda_{q_1}, \\dots \\in \\mathbb{R}^d$ are learnable vectors" with no word on how they start:
the code's `self.lambda_q1 = nn.Parameter(torch.zeros(d).normal_(mean=0, std=0.1))` decides what the
paper left open, as a hyperparameter the paper never states does. A paper that says how a parameter
starts ("we initialize $\\gamma$ to an all-one vector", "$\\alpha$ is initialized to 0.5") states
it: its parameters are not reported here (their values are compared as any stated value).

The paper side is prepared once per paper (`extract.learnable.learnable_symbols`); the code side reads, in each
function holding `nn.Parameter(` or `init.<name>_(self.`, the assignments `self.<name> =
nn.Parameter(...)` and the in-place initialisers `nn.init.normal_(self.<name>, ...)` whose name
stands for one of those symbols (`lambda_q1` for λ_{q_1}; `rho_raw`, a raw value the code maps to ρ,
for ρ_i).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from pathlib import Path

from ...schemas import CodeIndex, CodeLocation, Evidence, Finding, Fix, FunctionSite
from ..code.formula import own_attribute
from ..code.incremental import ModuleDefinitions
from ..code.sites import source_lines
from ..text import readable, shorten
from .binding import spells
from .equations import Memo, definition_node, functions_holding

# Conventional starts (a bias at zero, a scale at one, an identity) decide nothing the paper left open.
_CONVENTIONAL_CALLS = frozenset({"zeros", "ones", "zeros_", "ones_", "zeros_like", "ones_like", "eye", "eye_", "dirac_"})
# Tensors made to be filled later (`torch.empty(d)`, then an `init.*_` call): no start of their own.
_UNFILLED_CALLS = frozenset({"empty", "empty_like", "Tensor", "FloatTensor"})
# Calls that keep the values of what they are called on.
_KEEPING_CALLS = frozenset({"to", "float", "double", "half", "cuda", "cpu", "view", "reshape", "unsqueeze", "squeeze", "expand", "repeat", "clone", "detach", "contiguous", "type"})
# Words code adds to a parameter's name for the raw value it maps to the symbol (`rho_raw` → ρ).
_RAW_SUFFIXES = ("raw", "param", "parameter", "logit", "unconstrained")
_RANDOM_CALLS = frozenset({"normal_", "normal", "randn", "rand", "uniform_", "uniform", "trunc_normal_", "truncated_normal", "randn_like", "rand_like", "randint"})
# In-place initialisers of `nn.init` that set fixed values; every other one draws at random (xavier_, kaiming_, orthogonal_).
_FIXED_INITIALISERS = frozenset({"constant_", "zeros_", "ones_", "eye_", "dirac_"})
_PREFILTER_RE = re.compile(r"Parameter\(|init\.\w+_\(\s*self\.")


def initial_value_findings(root: Path, index: CodeIndex, sources: Mapping[str, str], learnable: Mapping[str, tuple[str, Evidence]]) -> list[Finding]:
    """Each initialisation of a parameter whose name stands for a learnable symbol the paper never
    says how to start. Only the functions holding a line that may initialise one are read (the
    editor asks after every edit)."""
    if not learnable:
        return []
    findings: list[Finding] = []
    for file, text, tree, function in functions_holding(root, index, sources, _PREFILTER_RE):
        # An edit elsewhere in the file (the editor re-checks it whole) reuses what this function gave.
        held = "\n".join(source_lines(text)[function.location.line : function.location.end_line + 1])
        key = (file, function.qualname, function.location.line, held, tuple(learnable))
        findings += _STARTED.get(key, lambda: _function_starts(file, tree, function, learnable))
    return list({f.id: f for f in findings}.values())


def _function_starts(file: str, tree: ModuleDefinitions, function: FunctionSite, learnable: Mapping[str, tuple[str, Evidence]]) -> list[Finding]:
    found_here: list[Finding] = []
    node = definition_node(tree, function)
    for statement in ast.walk(node) if node is not None else ():
        found = _initialised(statement)
        if found is None:
            continue
        attribute, how, value = found
        symbol = _symbol_of(attribute, learnable)
        if symbol is not None:
            found_here.append(_finding(file, statement, attribute, how, value, *learnable[symbol]))
    return found_here


_STARTED = Memo(1024)  # by function text: the starts of learnable parameters it sets


def _initialised(statement: ast.AST) -> tuple[str, str, ast.expr] | None:
    """(the attribute, how it starts, the value) of `self.x = nn.Parameter(value)` or
    `nn.init.normal_(self.x, ...)`; None for a conventional start, a tensor filled later, a value
    passed in, or a parameter that is not trained (`requires_grad=False`)."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.value, ast.Call):
        target, call = statement.targets[0], statement.value
        if not (own_attribute(target) and _called(call) == "Parameter" and call.args):
            return None
        if any(k.arg == "requires_grad" and isinstance(k.value, ast.Constant) and k.value.value is False for k in call.keywords):
            return None
        value = _kept(call.args[0])
        if _random(value):
            return target.attr, "at random", call.args[0]
        if isinstance(value, ast.Call) and _called(value) not in _CONVENTIONAL_CALLS | _UNFILLED_CALLS and not _conventional(value):
            return target.attr, "from a fixed value", call.args[0]
        calls = [n for n in ast.walk(value) if isinstance(n, ast.Call)]
        if isinstance(value, ast.BinOp) and calls and not any(_called(n) in _UNFILLED_CALLS for n in calls):
            return target.attr, "from a fixed value", call.args[0]  # `torch.ones(1) * alpha_init`
        return None
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        name = _called(call)
        if name and name.endswith("_") and call.args and own_attribute(call.args[0]) and isinstance(call.func, ast.Attribute):
            if ast.unparse(call.func.value).endswith("init") and name not in _FIXED_INITIALISERS:
                return call.args[0].attr, "at random", call
            if ast.unparse(call.func.value).endswith("init") and name == "constant_" and not _conventional(call):
                return call.args[0].attr, "from a fixed value", call
    return None


def _kept(value: ast.expr) -> ast.expr:
    """What a chain of calls that keep values is called on: `torch.ones(d).to(device)` → `torch.ones(d)`."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _KEEPING_CALLS:
        value = value.func.value
    return value


def _conventional(call: ast.Call) -> bool:
    """A tensor of zeros or ones written out: `torch.tensor(1.0)`, `torch.full((d,), 0.)`, `constant_(w, 0)`."""
    numbers = [n.value for n in ast.walk(call) if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) and not isinstance(n.value, bool)]
    if _called(call) in ("tensor", "as_tensor"):
        return bool(numbers) and all(v in (0, 1) for v in numbers)
    if _called(call) in ("full", "constant_") and len(call.args) >= 2:
        fill = call.args[1]
        return isinstance(fill, ast.Constant) and fill.value in (0, 1)
    return False


def _symbol_of(attribute: str, learnable: Mapping[str, tuple[str, Evidence]]) -> str | None:
    """The learnable symbol a parameter's name stands for, without a raw value's suffix."""
    words = attribute.split("_")
    spelled = "_".join(words[:-1]) if len(words) > 1 and words[-1].lower() in _RAW_SUFFIXES else attribute
    for symbol in learnable:
        if spells(symbol, spelled) and (len(symbol) > 1 or spelled == symbol):
            return symbol
    return None


def _finding(file: str, statement: ast.AST, attribute: str, how: str, value: ast.expr, latex: str, evidence: Evidence) -> Finding:
    line = statement.lineno - 1
    written, symbol = shorten(ast.unparse(value), 80), readable(latex)
    return Finding(
        id=f"guess:initial-value:{attribute}:{file}:{line + 1}",
        kind="guess",
        severity="info",
        confidence=0.5,
        confidence_note=f"{attribute} stands for {symbol}, which the paper declares learnable; no sentence of it says how it starts",
        message=f"{attribute} starts {how} ({written}): the paper declares {symbol} learnable but never says how it is initialised",
        setting=f"initial {attribute}",
        code=CodeLocation(file=file, line=line, column=statement.col_offset, end_line=line, end_column=None),
        code_value=written,
        paper=[evidence],
        fixes=[
            Fix(kind="record-assumption", title=f"Record how {attribute} starts as an explicit assumption"),
            Fix(kind="ask-authors", title=f"Ask the authors how they initialise {symbol}"),
        ],
    )


def _called(call: ast.Call) -> str | None:
    function = call.func
    return function.attr if isinstance(function, ast.Attribute) else function.id if isinstance(function, ast.Name) else None


def _random(value: ast.expr) -> bool:
    return any(isinstance(n, ast.Call) and _called(n) in _RANDOM_CALLS for n in ast.walk(value))

"""An equation against the function that implements it: equivalent, a named difference, or
undecided (with the reason).

Both sides are SymPy expressions (read with pipeline/algebra.py's `sympy_algebra()`); the paper's
symbols are bound to the code's names by binding.py. Every symbol on both sides must be bound, one
to one, or the pair is undecided: a comparison with a free symbol proves nothing.

Bound, the two are compared numerically at random points (positive, so that logs and roots are
defined) and, when they agree, shown equal symbolically where SymPy can. When they disagree, the
difference is named by rewriting one side until they agree: a constant factor (a sign is the
factor -1), a term of the paper the code leaves out, a term the code adds. A difference that none
of these names stays undecided: precision first."""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass
from typing import Literal

import sympy

from ..code.formula import Computed
from ..extract.formula import Formula
from .binding import bind

POINTS = 6
MAX_OPERATIONS = 150  # larger expressions are left undecided: comparing them costs too much
_RELATIVE = 1e-7



@dataclass(frozen=True, slots=True)
class Comparison:
    outcome: Literal["equivalent", "differs", "undecided"]
    detail: str  # how it was shown, the difference named, or why undecided
    binding: dict[str, str]  # paper symbol → code name


def compare(formula: Formula, computed: Computed) -> Comparison:
    paper, code = formula.expression, computed.expression
    if sympy.count_ops(paper) > MAX_OPERATIONS or sympy.count_ops(code) > MAX_OPERATIONS:
        return Comparison("undecided", "too large to compare", {})
    binding = bind({s.name for s in paper.free_symbols}, {s.name for s in code.free_symbols})
    if isinstance(binding, str):
        return _left_out(paper, code) or Comparison("undecided", binding, {})
    return _compare_bound(paper, code, binding)


def _left_out(paper: sympy.Expr, code: sympy.Expr) -> Comparison | None:
    """A term of the paper whose symbols the code never names, and without which the two agree:
    `γ tanh(αx) + β` against `weight * tanh(alpha * x)` leaves out β."""
    terms = sympy.Add.make_args(sympy.expand(paper))
    for term in terms if len(terms) > 1 else ():
        rest = paper - term
        binding = bind({s.name for s in rest.free_symbols}, {s.name for s in code.free_symbols})
        if isinstance(binding, str) or not (term.free_symbols - rest.free_symbols):
            continue
        compared = _compare_bound(rest, code, binding)
        if compared.outcome == "equivalent":
            return Comparison("differs", f"a term is left out: the paper's {_shown(term)}", binding)
    return None


def _compare_bound(paper: sympy.Expr, code: sympy.Expr, binding: dict[str, str]) -> Comparison:
    symbols = {s.name: s for s in code.free_symbols}
    paper = paper.xreplace({s: symbols[binding[s.name]] for s in paper.free_symbols})
    points = _points(sorted(symbols.values(), key=lambda s: s.name))
    difference = _difference(code, paper, points)
    if difference is None:
        return Comparison("undecided", "cannot be evaluated at the points tried", binding)
    if difference == "equal":
        shown = "symbolically" if _simplifies_to_zero(code - paper) else f"numerically at {POINTS} random points"
        return Comparison("equivalent", f"shown {shown}", binding)
    named = _named_difference(code, paper, points)
    if named is None:
        return Comparison("undecided", "they differ in a way not named (not a factor or one term)", binding)
    return Comparison("differs", named, binding)


def _points(symbols: list[sympy.Symbol]) -> list[dict[sympy.Symbol, float]]:
    chooser = random.Random(16)  # the same points every run: a finding does not come and go
    return [{s: chooser.uniform(0.2, 1.8) for s in symbols} for _ in range(POINTS)]


def _value(expression: sympy.Expr, point: dict[sympy.Symbol, float]) -> float | None:
    symbols = tuple(point)
    try:
        function = _compiled(expression, symbols)
        value = complex(function(*point.values()))
    except (TypeError, ValueError, ZeroDivisionError, OverflowError, NameError):
        return None
    if abs(value.imag) > 1e-12 or not math.isfinite(value.real):
        return None
    return value.real


@functools.lru_cache(maxsize=256)
def _compiled(expression: sympy.Expr, symbols: tuple[sympy.Symbol, ...]):
    """The expression as a Python function of plain floats (SymPy's evalf is a thousand times slower)."""
    return sympy.lambdify(symbols, expression, modules=[_REDUCTIONS, "math"])


# A reduction over an index the comparison does not track, evaluated as over three equal elements:
# a sum and a mean of the same terms then differ (by 3), as they do.
_REDUCTIONS = {"reduce_sum": lambda value: 3 * value, "reduce_mean": lambda value: value}


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _RELATIVE * max(1.0, abs(a), abs(b))


def _difference(code: sympy.Expr, paper: sympy.Expr, points: list[dict]) -> str | None:
    """"equal", "different", or None when either side cannot be evaluated."""
    for point in points:
        left, right = _value(code, point), _value(paper, point)
        if left is None or right is None:
            return None
        if not _close(left, right):
            return "different"
    return "equal"


def _simplifies_to_zero(expression: sympy.Expr) -> bool:
    return sympy.expand(expression) == 0 or sympy.simplify(expression) == 0


def _named_difference(code: sympy.Expr, paper: sympy.Expr, points: list[dict]) -> str | None:
    sums, means = sympy.Function("reduce_sum"), sympy.Function("reduce_mean")
    if paper.has(means) and _difference(code, paper.replace(means, sums), points) == "equal":
        return "a sum where the paper averages"
    if paper.has(sums) and _difference(code, paper.replace(sums, means), points) == "equal":
        return "an average where the paper sums"
    ratios = [_ratio(code, paper, point) for point in points]
    if all(r is not None for r in ratios) and all(_close(r, ratios[0]) for r in ratios):
        factor = sympy.nsimplify(ratios[0], rational=True, tolerance=1e-9)
        if factor == -1:
            return "the sign is flipped: the code's result is the paper's × -1"
        return f"a constant factor: the code's result is the paper's × {factor}"
    for term in sympy.Add.make_args(sympy.expand(paper)) if isinstance(sympy.expand(paper), sympy.Add) else ():
        if _difference(code, paper - term, points) == "equal":
            return f"a term is left out: the paper's {_shown(term)}"
    for term in sympy.Add.make_args(sympy.expand(code)) if isinstance(sympy.expand(code), sympy.Add) else ():
        if _difference(code - term, paper, points) == "equal":
            return f"a term is added: {_shown(term)}, which the paper does not have"
    return None


def _ratio(code: sympy.Expr, paper: sympy.Expr, point: dict) -> float | None:
    left, right = _value(code, point), _value(paper, point)
    if left is None or right is None or abs(right) < 1e-12:
        return None
    return left / right


def _shown(term: sympy.Expr) -> str:
    return sympy.sstr(term)

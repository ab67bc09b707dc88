"""An equation against the function that implements it: equivalent, a named difference, or
undecided (with the reason).

Both sides are SymPy expressions (read with pipeline/algebra.py's `sympy_algebra()`); the paper's
symbols are bound to the code's names by binding.py. Every symbol on both sides must be bound, one
to one, or the pair is undecided: a comparison with a free symbol proves nothing.

Bound, the two are compared numerically at random points, each symbol a short vector of different
values (a sum runs over them, so Σx·y is not (Σx)·y and a softmax is not uniform): positive points,
where both must be defined (logs, roots) unless neither is, and points of either sign where both are
(a dropped ReLU or |·| shows only there); when they agree, shown equal symbolically where expanding
does it. When they disagree, the
difference is named by rewriting one side until they agree: a sum for a mean or the reverse, a
constant factor (a sign is the factor -1), two symbols swapped, an L1 norm for an L2 one or the
reverse, a different exponent of the same base, a term of the paper the code leaves out, a term the
code adds. A difference that none of these names stays
undecided: precision first. Without an anchor, a term left out is named only when it is one
symbol (a bias): a function computing one term of a loss is a helper, not a mistake."""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import sympy

from ..code.formula import Computed
from ..extract.formula import Formula
from .binding import bind

POINTS = 6
ELEMENTS = 3  # each symbol is a vector of this many different values at a point
MAX_NODES = 400  # larger expressions are left undecided: comparing them costs too much
MAX_SWAPPED_SYMBOLS = 8  # a swap is looked for among this many symbols at most (each pair is a comparison)
_RELATIVE = 1e-7
# A reduction over an index the comparison does not track runs over the vectors' elements (a value
# that does not vary is each element's): a sum and a mean differ by 3, Σx·y is not (Σx)·y, and a
# softmax of different values is not uniform.
_SUM, _MEAN = sympy.Function("reduce_sum"), sympy.Function("reduce_mean")


def _reductions(elements: int) -> dict:
    return {
        "reduce_sum": lambda value: np.sum(np.broadcast_to(value, (elements,))),
        "reduce_mean": lambda value: np.mean(np.broadcast_to(value, (elements,))),
    }


@dataclass(frozen=True, slots=True)
class Comparison:
    outcome: Literal["equivalent", "differs", "undecided"]
    detail: str  # how it was shown, the difference named, or why undecided
    binding: dict[str, str]  # paper symbol → code name


def compare(formula: Formula, computed: Computed, *, anchored: bool, given: Mapping[str, str] | None = None) -> Comparison:
    """`anchored`: the code says it implements the equation (else it was linked by what it computes);
    `given`: symbol → name pairs the team set in the decisions file."""
    paper, code = formula.expression, computed.expression
    if _larger_than(paper, MAX_NODES) or _larger_than(code, MAX_NODES):
        return Comparison("undecided", "too large to compare", {})
    binding = bind({s.name for s in paper.free_symbols}, {s.name for s in code.free_symbols}, given)
    if isinstance(binding, str):
        return _left_out(paper, code, anchored, given) or Comparison("undecided", binding, {})
    compared = _compare_bound(paper, code, binding)
    if compared.detail.startswith("two symbols are swapped") and set((given or {}).values()) & {s.name for s in code.free_symbols}:
        return Comparison(compared.outcome, compared.detail + " (or the decisions file's binding swaps them)", binding)
    return compared


def _larger_than(expression: sympy.Expr, nodes: int) -> bool:
    """Whether the expression, as a tree, has more nodes (counted only that far: shared parts make
    the tree exponentially larger than what holds it)."""
    return any(count > nodes for count, _ in enumerate(sympy.preorder_traversal(expression)))


def _left_out(paper: sympy.Expr, code: sympy.Expr, anchored: bool, given: Mapping[str, str] | None) -> Comparison | None:
    """A term of the paper whose symbols the code never names, and without which the two agree:
    `γ tanh(αx) + β` against `weight * tanh(alpha * x)` leaves out β."""
    terms = sympy.Add.make_args(sympy.expand(paper))
    for term in terms if len(terms) > 1 else ():
        if not anchored and not isinstance(term, sympy.Symbol):
            continue
        rest = paper - term
        binding = bind({s.name for s in rest.free_symbols}, {s.name for s in code.free_symbols}, given)
        if isinstance(binding, str) or not (term.free_symbols - rest.free_symbols):
            continue
        if _compare_bound(rest, code, binding).outcome == "equivalent":
            return Comparison("differs", f"a term is left out: the paper's {shown(term)}", binding)
    return None


def _compare_bound(paper: sympy.Expr, code: sympy.Expr, binding: dict[str, str]) -> Comparison:
    symbols = {s.name: s for s in code.free_symbols}
    paper = paper.xreplace({s: symbols[binding[s.name]] for s in paper.free_symbols})
    points = _points(sorted(symbols.values(), key=lambda s: s.name))
    difference = _difference(code, paper, points)
    if difference is None:
        return Comparison("undecided", "cannot be evaluated at the points tried", binding)
    if difference == "equal":
        shown = "symbolically" if sympy.expand(code - paper) == 0 else f"numerically at {2 * POINTS} random points"
        return Comparison("equivalent", f"shown {shown}", binding)
    named = _named_difference(code, paper, points)
    if named is None:
        return Comparison("undecided", "they differ in a way not named (not a factor or one term)", binding)
    return Comparison("differs", named, binding)


def _points(symbols: list[sympy.Symbol], elements: int = ELEMENTS) -> list[tuple[bool, dict[sympy.Symbol, np.ndarray]]]:
    """(must both sides be defined there, the point): positive points, then points of either sign;
    each symbol a vector of `elements` values."""
    chooser = random.Random(16 + elements)  # the same points every run: a finding does not come and go

    def vector(signed: bool) -> np.ndarray:
        return np.array([(chooser.choice((-1, 1)) if signed else 1) * chooser.uniform(0.2, 1.8) for _ in range(elements)])

    positive = [(True, {s: vector(False) for s in symbols}) for _ in range(POINTS)]
    either = [(False, {s: vector(True) for s in symbols}) for _ in range(POINTS)]
    return positive + either


def _value(expression: sympy.Expr, point: dict[sympy.Symbol, np.ndarray]) -> np.ndarray:
    """The expression's value at a point, element by element; NaN where it is not a real number."""
    elements = len(next(iter(point.values()))) if point else ELEMENTS
    undefined = np.full(elements, np.nan)
    try:
        with np.errstate(all="ignore"):
            value = np.asarray(_compiled(expression, tuple(point), elements)(*point.values()))
    except (TypeError, ValueError, ZeroDivisionError, OverflowError, NameError):
        return undefined
    if value.dtype.kind not in "fiubc" or value.size not in (1, elements):
        return undefined
    if value.dtype.kind == "c":
        value = np.where(np.abs(value.imag) > 1e-12, np.nan, value.real)
    value = np.broadcast_to(value.astype(float), (elements,))
    return np.where(np.isfinite(value), value, np.nan)


@functools.lru_cache(maxsize=256)
def _compiled(expression: sympy.Expr, symbols: tuple[sympy.Symbol, ...], elements: int):
    """The expression as a function of NumPy vectors (SymPy's evalf is a thousand times slower)."""
    return sympy.lambdify(symbols, expression, modules=[_reductions(elements), "numpy"])


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.all(np.abs(a - b) <= _RELATIVE * np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))))


def _difference(code: sympy.Expr, paper: sympy.Expr, points: list[tuple[bool, dict]]) -> str | None:
    """"equal", "different", or None when one side is defined where the other is not at a positive
    point, or when too few elements could be compared. Elements where neither side is defined (a
    root of a negative number on both) are passed over."""
    compared = 0
    for required, point in points:
        left, right = _value(code, point), _value(paper, point)
        both = ~np.isnan(left) & ~np.isnan(right)
        if required and np.any(np.isnan(left) != np.isnan(right)):
            return None
        if not _close(left[both], right[both]):
            return "different"
        compared += int(both.sum())
    return "equal" if compared >= POINTS else None


def _named_difference(code: sympy.Expr, paper: sympy.Expr, points: list[tuple[bool, dict]]) -> str | None:
    # Every reduction of the paper at once, then each alone (the code may average one of two sums).
    for this, that, said in ((_MEAN, _SUM, "a sum where the paper averages"), (_SUM, _MEAN, "an average where the paper sums")):
        reductions = paper.find(this)
        rewritten = [paper.replace(this, that)] + ([paper.xreplace({one: that(*one.args)}) for one in reductions] if len(reductions) > 1 else [])
        if reductions and any(_difference(code, candidate, points) == "equal" for candidate in rewritten):
            return said
    if paper.has(_SUM):
        if paper != (as_l1 := _l2_as_l1(paper)) and _difference(code, as_l1, points) == "equal":
            return "a different norm: the code takes the L1 norm where the paper takes the L2 norm"
        if paper != (as_l2 := _l1_as_l2(paper)) and _difference(code, as_l2, points) == "equal":
            return "a different norm: the code takes the L2 norm where the paper takes the L1 norm"
    # A constant factor: the same ratio at every point where both sides are defined (enough of them),
    # and, with a reduction on either side, over vectors of another length too (`Σx / 2` against a
    # mean is no constant factor: its ratio is the length over 2).
    if paper.has(_SUM, _MEAN) or code.has(_SUM, _MEAN):
        points = points + _points(sorted(code.free_symbols, key=lambda s: s.name), ELEMENTS + 2)
    ratios = np.concatenate([_ratios(code, paper, point) for _, point in points])
    if len(ratios) >= POINTS and np.allclose(ratios, ratios[0], rtol=_RELATIVE, atol=0):
        factor = sympy.nsimplify(float(ratios[0]), rational=True, tolerance=1e-9)
        if factor == -1:
            return "the sign is flipped: the code's result is the paper's × -1"
        return f"a constant factor: the code's result is the paper's × {factor}"
    symbols = sorted(code.free_symbols, key=str)
    for first, second in itertools.combinations(symbols if len(symbols) <= MAX_SWAPPED_SYMBOLS else (), 2):
        if _difference(code, paper.xreplace({first: second, second: first}), points) == "equal":
            return f"two symbols are swapped: the code has {first} where the paper has {second}, and {second} where it has {first}"
    if isinstance(code, sympy.Pow) and isinstance(paper, sympy.Pow) and code.base == paper.base:
        return f"the exponent differs: the code's is {shown(code.exp)}, the paper's {shown(paper.exp)}"
    paper_terms, code_terms = sympy.Add.make_args(sympy.expand(paper)), sympy.Add.make_args(sympy.expand(code))
    for term in paper_terms if len(paper_terms) > 1 else ():
        if _difference(code, paper - term, points) == "equal":
            return f"a term is left out: the paper's {shown(term)}"
    for term in code_terms if len(code_terms) > 1 else ():
        if _difference(code - term, paper, points) == "equal":
            return f"a term is added: {shown(term)}, which the paper does not have"
    return None


def _l2_as_l1(expression: sympy.Expr) -> sympy.Expr:
    """Each L2 norm sqrt(Σ e²) of the expression as the L1 norm Σ|e|."""
    return expression.replace(
        lambda e: isinstance(e, sympy.Pow) and e.exp == sympy.S.Half and getattr(e.base, "func", None) == _SUM
        and isinstance(e.base.args[0], sympy.Pow) and e.base.args[0].exp == 2,
        lambda e: _SUM(sympy.Abs(e.base.args[0].base)),
    )  # fmt: skip


def _l1_as_l2(expression: sympy.Expr) -> sympy.Expr:
    """Each L1 norm Σ|e| of the expression as the L2 norm sqrt(Σ e²)."""
    return expression.replace(
        lambda e: getattr(e, "func", None) == _SUM and isinstance(e.args[0], sympy.Abs),
        lambda e: sympy.sqrt(_SUM(e.args[0].args[0] ** 2)),
    )


def _ratios(code: sympy.Expr, paper: sympy.Expr, point: dict) -> np.ndarray:
    """The code's value over the paper's, at the elements where both are defined and the paper's is not 0."""
    left, right = _value(code, point), _value(paper, point)
    kept = ~np.isnan(left) & ~np.isnan(right) & (np.abs(right) >= 1e-12)
    return left[kept] / right[kept]


def shown(expression: Any) -> str:
    """An expression as a person reads it: a reduction over an index as Σ(·) or mean(·)."""
    return sympy.sstr(expression).replace("reduce_sum(", "Σ(").replace("reduce_mean(", "mean(")

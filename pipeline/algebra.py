"""The two ways the formula readers (extract/formula.py, code/formula.py) build what they read.

`SKETCH` keeps only the names an expression uses and the operations it applies: what linking an
equation to a function needs, at the cost of a few sets (no SymPy). `sympy_algebra()` builds SymPy
expressions: what proving the two equal, or naming their difference, needs; SymPy is imported
only then (it takes most of a second).

Both know the same primitive operations; readers compose the rest from them (a sigmoid is
1 / (1 + exp(-x)), a ReLU max(0, x), a mean squared error mean((a - b)^2)), so that both sides of a
comparison spell one thing one way."""

from __future__ import annotations

import functools
from typing import Any

MAX_EXPONENT = 64  # SymPy raises numbers to integer powers exactly: 9**(9**9) would take hours
# A sum and a mean are one kind of operation to link by (code that averages what the paper sums
# is the very difference to find); SymPy keeps them apart.
_LINKED_AS = {"sum": "reduce", "mean": "reduce", "sqrt": None}


class Unreadable(ValueError):
    """What a formula reader does not know: the pair is left undecided, with this as the reason."""


class Sketch:
    """Names and operations only; arithmetic merges them."""

    __slots__ = ("names", "operations")

    def __init__(self, names: frozenset[str] = frozenset(), operations: frozenset[str] = frozenset()) -> None:
        self.names, self.operations = names, operations

    def _merge(self, other: Any) -> Sketch:
        if not isinstance(other, Sketch):
            return self
        return Sketch(self.names | other.names, self.operations | other.operations)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _merge
    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = _merge

    def __neg__(self) -> Sketch:
        return self

    __pos__ = __neg__


class _SketchAlgebra:
    def number(self, text: str) -> Sketch:
        return Sketch()

    def symbol(self, name: str) -> Sketch:
        return Sketch(frozenset({name}))

    def power(self, base: Sketch, exponent: Sketch) -> Sketch:
        return base._merge(exponent)

    def apply(self, operation: str, *arguments: Sketch) -> Sketch:
        merged = Sketch()
        for argument in arguments:
            merged = merged._merge(argument)
        linked_as = _LINKED_AS.get(operation, operation)  # a square root is a power: no operation
        return merged if linked_as is None else Sketch(merged.names, merged.operations | {linked_as})


class _SympyAlgebra:
    def __init__(self) -> None:
        import sympy

        self.sympy = sympy
        self.operations = {
            "tanh": sympy.tanh, "exp": sympy.exp, "log": sympy.log, "sin": sympy.sin, "cos": sympy.cos,
            "abs": sympy.Abs, "max": sympy.Max, "min": sympy.Min, "sqrt": sympy.sqrt,
            # Reductions over an index the comparison does not track: opaque functions of the summand.
            "sum": sympy.Function("reduce_sum"), "mean": sympy.Function("reduce_mean"),
        }  # fmt: skip

    def number(self, text: str) -> Any:
        return self.sympy.Rational(text) if any(c in text for c in ".eE") else self.sympy.Integer(text)

    def symbol(self, name: str) -> Any:
        return self.sympy.Symbol(name, real=True)

    def power(self, base: Any, exponent: Any) -> Any:
        if exponent.is_Number and abs(exponent) > MAX_EXPONENT:
            raise Unreadable(f"a power of {exponent}")
        return base**exponent

    def apply(self, operation: str, *arguments: Any) -> Any:
        return self.operations[operation](*arguments)


SKETCH = _SketchAlgebra()


@functools.cache
def sympy_algebra() -> _SympyAlgebra:
    return _SympyAlgebra()

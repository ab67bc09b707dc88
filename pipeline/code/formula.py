"""What a Python function computes, as SymPy expressions: one per path to a `return`, read from its
AST by inlining its assignments. No user code runs.

Names are symbols: a parameter by its name, `self.alpha` by its attribute (`alpha`) as is an
accessor `self.alpha()`, a module constant by its name. A returned tuple is one value per element it
can read (`return None, loss, weight`). Arithmetic maps as written, a matrix product (`@`, `matmul`) as the products it sums over the
index it contracts (which index is not tracked, as for `sum`); torch/numpy/jax element-wise calls map to SymPy's (`torch.tanh(x)`,
`np.exp`, `x.pow(2)`, `F.relu`, `x.clamp(min=0)`, `torch.sigmoid`, `F.logsigmoid`, `softplus`, `softmax`, `sqrt`,
`abs`, `maximum`/`minimum`; `sum`/`mean` over any axis, `F.mse_loss`, `F.l1_loss`; `norm` of
order 1 or 2, `dot` and an `einsum` of operands indexed alike as the sums they are); indexing that only reshapes (`w[:, None, None]`, `x[..., None]`) is
the value itself. An `if` gives one expression per branch; a `with` block is read as its body; a
`raise` ends its path without a value. A statement it cannot read (a loop, a call made for its
effect, an assignment into an item, a value with an unknown call) makes every name it touches
unreadable from then on, with the names bound to one of them as such (`y = x.view(-1)`): a return
that uses one is Unreadable (half a value is not compared), a return that uses none is read."""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import Any

from ..algebra import SKETCH
from ..extract.formula import Unreadable

MAX_PATHS = 8  # branches read per function; past this it is left undecided
MAX_BLOCKS = 32  # blocks read through a function's `if`s (each reads the rest once per branch)
MAX_VALUE_NODES = 400  # a value's size as a tree; as formulas.MAX_NODES
MAX_CODE_FORMULA_DEPTH = 60

# Element-wise calls, by the primitive operations of pipeline/algebra.py they are made of.
_UNARY = {
    "tanh": lambda a, x: a.apply("tanh", x), "exp": lambda a, x: a.apply("exp", x), "log": lambda a, x: a.apply("log", x),
    "sqrt": lambda a, x: a.apply("sqrt", x), "abs": lambda a, x: a.apply("abs", x), "absolute": lambda a, x: a.apply("abs", x),
    "sin": lambda a, x: a.apply("sin", x), "cos": lambda a, x: a.apply("cos", x),
    "sigmoid": lambda a, x: 1 / (1 + a.apply("exp", -x)), "relu": lambda a, x: a.apply("max", 0, x),
    "logsigmoid": lambda a, x: -a.apply("log", 1 + a.apply("exp", -x)), "rsqrt": lambda a, x: 1 / a.apply("sqrt", x),
    "square": lambda a, x: x**2, "log1p": lambda a, x: a.apply("log", 1 + x), "expm1": lambda a, x: a.apply("exp", x) - 1,
    "neg": lambda a, x: -x, "negative": lambda a, x: -x, "softplus": lambda a, x: a.apply("log", 1 + a.apply("exp", x)),
}  # fmt: skip
_BINARY = {
    "maximum": lambda a, x, y: a.apply("max", x, y), "minimum": lambda a, x, y: a.apply("min", x, y),
    "pow": lambda a, x, y: a.power(x, y), "power": lambda a, x, y: a.power(x, y),
}  # fmt: skip
# Calls that change a tensor's type, device or shape but not the values it holds (nor how many).
_SAME_VALUE = {
    "float", "double", "half", "to", "type_as", "contiguous", "view_as", "clone", "detach",
    "view", "reshape", "flatten", "squeeze", "unsqueeze", "permute", "transpose",
}  # fmt: skip
# Methods that change what they are called on, though their names do not end in `_`.
_MUTATORS = {"append", "extend", "insert", "update", "pop", "remove", "clear", "setdefault", "add", "discard", "sort", "reverse"}
# Calls whose result shares its storage with the tensor they are called on.
_VIEWS = {"view", "view_as", "reshape", "transpose", "permute", "squeeze", "unsqueeze", "expand", "flatten", "detach", "t", "T", "narrow", "contiguous", "to"}
_MODULES = {"torch", "np", "numpy", "jnp", "jax", "F", "nn", "math", "functional", "tf", "special"}


@dataclass(frozen=True, slots=True)
class Computed:
    expression: Any  # built by the algebra the reader was given
    line: int  # 0-based line of the `return`
    element: int | None = None  # its place in a returned tuple (`return loss, weight`); None: the whole value


@dataclass(frozen=True, slots=True)
class Assigned:
    name: str  # the name assigned (`self.x` as such)
    expression: Any  # its value there, its names inlined
    line: int  # 0-based line of the assignment


def read_assignments(body: list[ast.stmt], parameters: list[str], algebra: Any = SKETCH) -> list[Assigned]:
    """What each name assignment in `body` (a function's, or a module's) assigns, its names inlined,
    up to the first statement the reader cannot go past: one per path through the `if`s before it."""
    reader = _Reader([], algebra)
    reader.assigned = []
    try:
        reader.block(body, {name: algebra.symbol(name) for name in parameters})
    except Unreadable:
        pass  # what was read before stands
    return reader.assigned


def parameters_of(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    return [a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs) if a.arg not in ("self", "cls")]


def read_function(node: ast.FunctionDef | ast.AsyncFunctionDef, algebra: Any = SKETCH) -> list[Computed]:
    """One Computed per path to a return, built by `algebra` (pipeline/algebra.py); Unreadable saying
    why it cannot be read."""
    env = {name: algebra.symbol(name) for name in parameters_of(node)}
    paths: list[Computed] = []
    _Reader(paths, algebra).block(node.body, env)
    if not paths:
        raise Unreadable("no value returned")
    return paths


class _Reader:
    def __init__(self, paths: list[Computed], algebra: Any) -> None:
        self.paths = paths
        self.algebra = algebra
        self.depth = 0
        self.blocks = 0  # blocks read: each `if` reads the rest of its block once per branch
        self.returns = 0  # paths read to a `return`
        self.nodes = 0  # the size, as a tree, of the value being read (inlined names count whole)
        self.sizes: dict[str, int] = {}  # of each name's value
        self.aliases: dict[str, str | None] = {}  # a name bound to another as such (`y = x`, `y = x.view(...)`)
        self.assigned: list[Assigned] | None = None  # each assignment read, when asked for (read_assignments)

    def block(self, statements: list[ast.stmt], env: dict[str, Any]) -> bool:
        """Read statements in order; True when every path through them returned (or raised)."""
        self.blocks += 1
        if self.blocks > MAX_BLOCKS:
            raise Unreadable(f"more than {MAX_BLOCKS} blocks to read through its branches")
        for position, statement in enumerate(statements):
            self.nodes = 0
            kind = type(statement)
            if kind is ast.Expr and isinstance(statement.value, ast.Constant):
                continue  # a docstring
            if kind is ast.Expr and _only_reports(statement.value):
                continue  # print(...), log.info(...), self.log(...): changes no value read here
            if kind is ast.Return:
                if statement.value is None:
                    raise Unreadable("returns nothing")
                self.paths += self._returned(statement.value, statement.lineno - 1, env)
                self.returns += 1  # a returned tuple's values are one path
                return True
            if kind is ast.Raise:
                return True  # this path gives no value
            if kind is ast.If:
                rest = statements[position + 1 :]
                aliases, sizes = dict(self.aliases), dict(self.sizes)
                for branch in (statement.body, statement.orelse):
                    branch_env = dict(env)
                    self.aliases, self.sizes = dict(aliases), dict(sizes)  # each branch from the state before the `if`
                    if not self.block(branch, branch_env):
                        self.block(rest, branch_env)
                    if self.returns > MAX_PATHS:
                        raise Unreadable(f"more than {MAX_PATHS} paths")
                return True
            if kind is ast.With and not any(isinstance(n, ast.Return) for n in _own_nodes(statement)):
                self.taint({key for item in statement.items if item.optional_vars for key in _changed(item.optional_vars)}, "a `with` target", env)
                if self.block(statement.body, env):
                    return True
                continue
            if kind in (ast.Pass, ast.Assert):
                continue
            self.statement(statement, env)
        return False

    def _returned(self, value: ast.expr, line: int, env: dict[str, Any]) -> list[Computed]:
        """What a `return` gives: its value, or each element of a tuple it returns that can be read
        (`return None, loss, weight`: each may compute an equation of its own)."""
        if type(value) is not ast.Tuple:
            return [Computed(self.value(value, env), line)]
        elements, reasons = [], []
        for place, element in enumerate(value.elts):
            if type(element) is ast.Constant and element.value is None:
                continue
            self.nodes = 0
            try:
                elements.append(Computed(self.value(element, env), line, place))
            except Unreadable as unread:
                reasons.append(str(unread))
        if not elements:
            raise Unreadable(reasons[0] if reasons else "returns a tuple of nothing to read")
        return elements

    def statement(self, statement: ast.stmt, env: dict[str, Any]) -> None:
        """An assignment binds its name to its value; a value it cannot read, or any other statement
        (a loop, a call made for its effect, an assignment into an item), makes every name it touches
        unreadable from then on: a value that uses none of them is still read."""
        kind = type(statement)
        if kind in (ast.Assign, ast.AnnAssign, ast.AugAssign) and statement.value is not None and (changed := _changed(statement.value)):
            self.taint(changed, "an in-place call", env)  # `y = x.add_(1)` changes x as well
        target = statement.targets[0] if kind is ast.Assign and len(statement.targets) == 1 else getattr(statement, "target", None)
        if kind in (ast.Assign, ast.AnnAssign) and getattr(statement, "value", None) is not None and target is not None:
            key = target.id if type(target) is ast.Name else "self." + target.attr if own_attribute(target) else None
            if key is not None:
                try:
                    value = self.value(statement.value, env)
                except Unreadable as unread:
                    self.bind(key, _Unread(str(unread)), env)
                    return
                self.bind(key, value, env)
                self.aliases[key] = _aliased(statement.value)
                if self.assigned is not None:
                    self.assigned.append(Assigned(key, value, statement.lineno - 1))
                return
        if kind is ast.AugAssign and type(statement.target) is ast.Name and statement.target.id in env:
            name = statement.target.id
            self.nodes += self.sizes.get(name, 1)
            try:
                current = env[name]
                if type(current) is _Unread:
                    raise Unreadable(current.reason)
                updated = self._binary(statement.op, current, self.value(statement.value, env))
            except Unreadable as unread:
                updated = _Unread(str(unread))
            for view in self._aliases_of({name}) - {name}:  # `x += 1` on a tensor changes its views in place
                self.bind(view, _Unread(f"an in-place update changes {view.removeprefix('self.')}"), env)
            self.bind(name, updated, env)
            return
        if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            self.bind(statement.name, _Unread(f"the local definition {statement.name}"), env)
            return
        if any(isinstance(node, ast.Return) for node in _own_nodes(statement)):
            raise Unreadable(f"a return inside a {kind.__name__} statement")
        self.taint(_changed(statement), f"a {kind.__name__} statement", env)

    def _aliases_of(self, names: set[str]) -> set[str]:
        """`names` and every name bound to one of them as such, through any chain (`z = y; y = x[:, None]`)."""
        found = set(names)
        while True:
            more = {n for n, source in self.aliases.items() if source in found} | {self.aliases[n] for n in found if self.aliases.get(n)}
            if more <= found:
                return found
            found |= more

    def taint(self, changed: set[str], reason: str, env: dict[str, Any]) -> None:
        """The names a statement may change (and the names bound to one of them as such) can no longer be read."""
        for key in self._aliases_of(changed):
            self.bind(key, _Unread(f"{reason} changes {key.removeprefix('self.')}"), env)

    def bind(self, name: str, value: Any, env: dict[str, Any]) -> None:
        env[name] = value
        self.sizes[name] = self.nodes
        self.aliases.pop(name, None)

    def value(self, node: ast.expr, env: dict[str, Any]) -> Any:
        self.nodes += 1
        if self.nodes > MAX_VALUE_NODES:
            raise Unreadable(f"a value of more than {MAX_VALUE_NODES} operations, its names inlined")
        self.depth += 1
        if self.depth > MAX_CODE_FORMULA_DEPTH:
            raise Unreadable(f"nested more than {MAX_CODE_FORMULA_DEPTH} levels")
        try:
            return self._value(node, env)
        finally:
            self.depth -= 1

    def _value(self, node: ast.expr, env: dict[str, Any]) -> Any:
        kind = type(node)
        if kind is ast.Constant and type(node.value) in (int, float):
            if not math.isfinite(node.value):
                raise Unreadable(f"the constant {node.value!r}")
            return self.algebra.number(repr(node.value))
        if kind is ast.Name or own_attribute(node):
            key = node.id if kind is ast.Name else "self." + node.attr
            self.nodes += self.sizes.get(key, 0)
            value = env.get(key)
            if type(value) is _Unread:
                raise Unreadable(value.reason)
            if value is None and kind is not ast.Name and type(env.get("self")) is _Unread:
                raise Unreadable(env["self"].reason)
            return value if value is not None else self.algebra.symbol(key.removeprefix("self."))
        if kind is ast.UnaryOp and type(node.op) in (ast.USub, ast.UAdd):
            operand = self.value(node.operand, env)
            return -operand if type(node.op) is ast.USub else operand
        if kind is ast.BinOp:
            return self._binary(node.op, self.value(node.left, env), self.value(node.right, env))
        if kind is ast.Subscript and _only_reshapes(node.slice):
            return self.value(node.value, env)
        if kind is ast.Call:
            return self._call(node, env)
        raise Unreadable(f"cannot read {ast.unparse(node)[:40]!r}")

    def _binary(self, operator: ast.operator, left: Any, right: Any) -> Any:
        kind = type(operator)
        if kind is ast.Add:
            return left + right
        if kind is ast.Sub:
            return left - right
        if kind is ast.Mult:
            return left * right
        if kind is ast.Div:
            return left / right
        if kind is ast.Pow:
            return self.algebra.power(left, right)
        if kind is ast.MatMult:
            return self.algebra.apply("sum", left * right)  # products summed over the index contracted (not tracked)
        raise Unreadable(f"the operator {kind.__name__}")

    def _call(self, node: ast.Call, env: dict[str, Any]) -> Any:
        function = node.func
        if type(function) is ast.Attribute and type(function.value) is ast.Name and function.value.id == "self" and not node.args and not node.keywords:
            # `self.rho()`: an accessor of the object's own, read as the quantity it names (as `self.rho`)
            if type(env.get("self")) is _Unread:
                raise Unreadable(env["self"].reason)
            return self.algebra.symbol(function.attr)
        if type(function) is ast.Attribute:
            name = function.attr
            owner = function.value
            module_call = type(owner) is ast.Name and owner.id in _MODULES or type(owner) is ast.Attribute and _root(owner) in _MODULES
            arguments = list(node.args) if module_call else [owner, *node.args]
        elif type(function) is ast.Name:
            name, arguments = function.id, list(node.args)
        else:
            raise Unreadable("a call of a computed function")
        keywords = {k.arg: k.value for k in node.keywords if k.arg is not None}
        if name in _SAME_VALUE and arguments:
            return self.value(arguments[0], env)
        if name in ("clamp", "clip", "clamp_min") and arguments:
            low = keywords.get("min") or (arguments[1] if len(arguments) > 1 else None)
            high = keywords.get("max") or (arguments[2] if len(arguments) > 2 else None)
            result = self.value(arguments[0], env)
            if low is not None:
                result = self.algebra.apply("max", result, self.value(low, env))
            if high is not None:
                result = self.algebra.apply("min", result, self.value(high, env))
            return result
        if name in ("sum", "mean", "nansum", "nanmean") and len(arguments) >= 1:
            if set(keywords) - {"dim", "axis", "keepdim", "keepdims"}:
                raise Unreadable(f"{name} with {', '.join(sorted(keywords))}")
            return self.algebra.apply(name.removeprefix("nan"), self.value(arguments[0], env))  # over its axis: not tracked
        if name in ("mse_loss", "l1_loss") and len(arguments) == 2 and set(keywords) <= {"reduction"}:
            reduction = keywords.get("reduction")
            kind = reduction.value if type(reduction) is ast.Constant else "mean" if reduction is None else None
            if kind not in ("mean", "sum"):
                raise Unreadable(f"{name} with reduction {ast.unparse(reduction)}")
            error = self.value(arguments[0], env) - self.value(arguments[1], env)
            return self.algebra.apply(kind, error**2 if name == "mse_loss" else self.algebra.apply("abs", error))
        if name in ("norm", "vector_norm") and arguments and set(keywords) <= {"p", "ord", "dim", "axis", "keepdim", "keepdims"}:
            order = keywords.get("p") or keywords.get("ord") or (arguments[1] if len(arguments) > 1 else None)
            order_value = order.value if type(order) is ast.Constant else "unknown" if order is not None else 2
            value = self.value(arguments[0], env)
            if order_value == 1:
                return self.algebra.apply("sum", self.algebra.apply("abs", value))
            if order_value not in (2, 2.0, "fro"):
                raise Unreadable(f"a norm of order {ast.unparse(order) if order is not None else order_value}")
            return self.algebra.apply("sqrt", self.algebra.apply("sum", value * value))
        if name == "einsum" and len(arguments) >= 2 and type(arguments[0]) is ast.Constant and isinstance(arguments[0].value, str) and not keywords:
            return self._einsum(arguments[0].value, arguments[1:], env)
        if name in ("softmax", "log_softmax") and arguments and set(keywords) <= {"dim", "axis", "dtype"}:
            value = self.value(arguments[0], env)  # over its axis (a keyword or the next argument): not tracked
            exponential = self.algebra.apply("exp", value)
            total = self.algebra.apply("sum", exponential)
            return exponential / total if name == "softmax" else value - self.algebra.apply("log", total)
        values = [self.value(a, env) for a in arguments]
        if name in ("dot", "inner", "vdot", "matmul", "mm", "bmm") and len(values) == 2 and not keywords:
            return self.algebra.apply("sum", values[0] * values[1])
        if set(keywords) - {"inplace", "out"}:
            raise Unreadable(f"{name} with {', '.join(sorted(keywords))}")
        if name in _UNARY and len(values) == 1:
            return _UNARY[name](self.algebra, values[0])
        if name in ("max", "min") and type(function) is ast.Name and len(values) == 2:  # Python's own: of two values
            return self.algebra.apply(name, values[0], values[1])  # (torch.max(x, 1) reduces along an axis)
        if name in _BINARY and len(values) == 2:
            return _BINARY[name](self.algebra, values[0], values[1])
        raise Unreadable(f"the call {name}")


    def _einsum(self, subscripts: str, operands: list[ast.expr], env: dict[str, Any]) -> Any:
        """The common case: operands indexed alike, multiplied element-wise and summed over the
        indices the output drops (`"bhd,bhd->bh"`: an inner product over d). Others (a matrix
        product) are not a product of numbers."""
        inputs, arrow, output = subscripts.replace(" ", "").partition("->")
        indices = inputs.split(",")
        if not arrow or len(indices) != len(operands) or len(set(indices)) != 1 or len(set(indices[0])) != len(indices[0]) or not set(output) <= set(indices[0]):
            raise Unreadable(f"einsum {subscripts!r}")
        product = self.value(operands[0], env)
        for operand in operands[1:]:
            product = product * self.value(operand, env)
        return product if sorted(output) == sorted(indices[0]) else self.algebra.apply("sum", product)


class _Unread:
    """A name's value that cannot be read (why): reading it makes the value Unreadable."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _own_nodes(statement: ast.AST):
    """The statement's nodes, not those of a function or class it defines."""
    pending = [statement]
    while pending:
        node = pending.pop()
        yield node
        pending += [c for c in ast.iter_child_nodes(node) if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))]


def _changed(statement: ast.AST) -> set[str]:
    """The names a statement may change: those it assigns (into an item or an attribute too: its
    root), a for loop's targets, what an in-place call (`x.add_(y)`, `losses.append(h)`,
    `nn.init.normal_(w)`) is made on, and, for a call made for its effect, its receiver and its
    arguments (`self.reset_parameters()`: all of `self`). Not what it only reads."""
    found: set[str] = set()
    effect = statement.value if type(statement) is ast.Expr and type(statement.value) is ast.Call else None
    for node in _own_nodes(statement):
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            found.add(_key_of(node))
        elif type(node) is ast.Call:
            function = node.func
            name = function.attr if type(function) is ast.Attribute else function.id if type(function) is ast.Name else ""
            in_place = name.endswith("_") and not name.startswith("_") or name in _MUTATORS
            if type(function) is ast.Attribute and (in_place or node is effect):
                owner = _key_of(function.value)
                found.add("self" if owner.startswith("self") and node is effect else owner)
            if node is effect or (in_place and type(function) is not ast.Attribute) or (in_place and _root(function) in _MODULES):
                found |= {_key_of(argument) for argument in node.args}
            for keyword in node.keywords:  # `F.relu(x, inplace=True)` changes x; `out=y` writes y
                if keyword.arg == "inplace" and not (type(keyword.value) is ast.Constant and keyword.value.value is False) and node.args:
                    found.add(_key_of(node.args[0]))
                elif keyword.arg == "out":
                    found.add(_key_of(keyword.value))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            found |= set(node.names)
    return {key for key in found if key and key not in _MODULES}


def _key_of(node: ast.expr) -> str:
    """The name a target or an argument is rooted at: `x[0]` → x, `self.cache[0]` → self.cache."""
    while type(node) in (ast.Subscript, ast.Starred) or (type(node) is ast.Attribute and not own_attribute(node)):
        node = node.value
    if own_attribute(node):
        return "self." + node.attr
    return node.id if type(node) is ast.Name else ""


def _aliased(value: ast.expr) -> str | None:
    """The name a value is that name itself as (`x`, `x.view(-1)`, `x[:, None]`), which changing
    one changes the other."""
    while True:
        if type(value) is ast.Name:
            return value.id
        if own_attribute(value):
            return "self." + value.attr
        if type(value) is ast.Subscript:
            value = value.value
        elif type(value) is ast.Call and type(value.func) is ast.Attribute and value.func.attr in _VIEWS:
            value = value.func.value
        else:
            return None


def own_attribute(node: ast.expr) -> bool:
    """`self.alpha` (or `cls.alpha`)."""
    return type(node) is ast.Attribute and type(node.value) is ast.Name and node.value.id in ("self", "cls")


# Calls made for what they say, not for a value: a statement of one of these changes nothing read.
_REPORTING = {"print", "log", "info", "debug", "warning", "warn", "error", "log_dict", "add_scalar", "write"}


def _only_reports(call: ast.expr) -> bool:
    if type(call) is not ast.Call:
        return False
    function = call.func
    name = function.attr if type(function) is ast.Attribute else function.id if type(function) is ast.Name else ""
    return name in _REPORTING


def _root(node: ast.expr) -> str | None:
    while type(node) is ast.Attribute:
        node = node.value
    return node.id if type(node) is ast.Name else None


def _only_reshapes(index: ast.expr) -> bool:
    """`w[:, None, None]`, `x[..., None]`: every item a full slice, `None` or `...`."""
    items = index.elts if type(index) is ast.Tuple else [index]
    return all(
        (type(item) is ast.Slice and item.lower is None and item.upper is None and item.step is None)
        or (type(item) is ast.Constant and (item.value is None or item.value is Ellipsis))
        for item in items
    )

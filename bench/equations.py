"""Equations against the code that implements them (issue 16), on the official code of real papers.

For every paper in ../shared/data/repos that has `.researchcodebench/` regions (each file the
authors' code of one part of the paper), every function of those files is linked to the paper's
method equations the way `paperlens check` links them (an equation's operations applied to names
that all stand for its symbols), and each linked pair compared. The authors' code is the paper's
own: any "differs" on it is a false alarm unless a label says otherwise. Then each function of a
pair shown equivalent is mutated (its returned expression negated, scaled by 1/2, a term dropped,
an exponent changed) and compared again: a mutant is caught when the comparison says "differs"
with the right difference named. Statements too: each name a region's code assigns that stands for
a symbol the paper defines by a formula (a display or inline math) is compared with the definition,
as `check` does; on the authors' code any "differs" among those is a false alarm as well.

Usage: python bench/equations.py [--data ../shared/data] [--verbose]
Reports: every region (`# <paper2code name=...>`) by what came of the function holding it (not
read and why, with --verbose; read but linked to no equation; linked, and the outcome), readable
equations and functions, linked pairs, outcomes on the originals (the "differs" listed), and
mutants caught by kind; plus the time per compared pair."""

from __future__ import annotations

import argparse
import ast
import copy
import itertools
import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine  # bench/machine.py

from paperlens.pipeline.algebra import SKETCH, sympy_algebra
from paperlens.pipeline.check.equations import _definition_findings as definition_findings  # as `check` compares statements
from paperlens.pipeline.check.equations import _may_compute as may_compute  # the rule `check` links by
from paperlens.pipeline.check.formulas import compare
from paperlens.pipeline.code.formula import read_function
from paperlens.pipeline.extract.formula import Unreadable, read_formula
from paperlens.pipeline.extract.parts import framing_sections
from paperlens.pipeline.code import index_workspace
from paperlens.pipeline.ingest import read_paper

REPO = Path(__file__).resolve().parents[1]
# Each kind, and the words the comparison must name it with (one of them).
MUTATIONS = {
    "sign": ("the sign is flipped",),
    "factor": ("× 1/2",),
    "drop a term": ("a term is left out",),
    "exponent": ("the exponent differs",),
    "swap": ("two symbols are swapped",),
    "sum <-> mean": ("a sum where the paper averages", "an average where the paper sums"),
    "norm": ("a different norm",),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    algebra = sympy_algebra()
    totals: Counter = Counter()
    caught: Counter = Counter()
    tried: Counter = Counter()
    differs_on_originals: list[str] = []
    seconds: list[float] = []
    region_outcomes: Counter = Counter()
    for regions in sorted(args.data.glob("repos/*/.researchcodebench")):
        paper_id = regions.parent.name
        paper = args.data / "papers-latex" / paper_id
        if not paper.is_dir():
            continue
        spec = read_paper(paper)
        aside = framing_sections(spec) | {s.id for s in spec.sections if s.appendix}
        equations = []
        for equation in spec.equations:
            if not (equation.number and equation.latex and equation.section_id not in aside):
                continue
            totals["method equations"] += 1
            try:
                equations.append((equation, read_formula(equation.latex, SKETCH), read_formula(equation.latex, algebra)))
            except Unreadable:
                continue
        totals["equations read"] += len(equations)
        for finding in definition_findings(regions, spec, index_workspace(regions), {}):
            totals[f"statements {finding.kind}"] += 1
            if finding.kind == "divergence":
                differs_on_originals.append(f"{paper_id}/{finding.code.file}:{finding.code.line + 1}: {finding.message}")
            if args.verbose:
                print(f"  {paper_id}/{finding.code.file}:{finding.code.line + 1}: {finding.message}")
        for file in sorted(regions.glob("*.py")):
            if file.name.endswith("_test.py"):
                continue
            try:
                text = file.read_text(encoding="utf-8")
                tree = ast.parse(text)
            except (SyntaxError, UnicodeDecodeError):
                continue
            said: dict[ast.AST, str] = {}  # each function: what came of it, for the regions inside it
            for node in ast.walk(tree):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                totals["functions"] += 1
                try:
                    sketches = read_function(node, SKETCH)
                except Unreadable as unread:
                    said[node] = f"not read ({unread})"
                    continue
                totals["functions read"] += 1
                said[node] = "read, linked to no equation"
                for equation, sketch, formula in equations:
                    if not any(may_compute(p.expression, sketch.expression, ()) for p in sketches):
                        continue
                    totals["linked pairs"] += 1
                    started = time.perf_counter()
                    outcomes = [compare(formula, path, anchored=False) for path in read_function(node, algebra)]
                    seconds.append(time.perf_counter() - started)
                    where = f"{paper_id}/{file.name}:{node.lineno} {node.name} vs Eq. ({equation.number})"
                    outcome = "equivalent" if any(o.outcome == "equivalent" for o in outcomes) else "differs" if any(o.outcome == "differs" for o in outcomes) else "undecided"
                    totals[f"originals {outcome}"] += 1
                    said[node] = f"linked to Eq. ({equation.number}): {outcome}"
                    if outcome == "differs":
                        differs_on_originals.append(f"{where}: {next(o.detail for o in outcomes if o.outcome == 'differs')}")
                    if args.verbose:
                        print(f"  {where}: {outcome} ({'; '.join(o.detail for o in outcomes)})")
                    if outcome == "equivalent":
                        for kind, mutant in _mutants(node):
                            tried[kind] += 1
                            expected = MUTATIONS[kind]
                            try:
                                results = [compare(formula, path, anchored=False) for path in read_function(mutant, algebra)]
                            except Unreadable:
                                continue
                            if all(r.outcome == "differs" and any(words in r.detail for words in expected) for r in results):
                                caught[kind] += 1
                            elif args.verbose:
                                print(f"    mutant {kind} not caught: {'; '.join(r.outcome + ': ' + r.detail for r in results)}")
            for line, name in _regions(text):
                holding = [n for n in said if n.lineno <= line <= (n.end_lineno or n.lineno)]
                innermost = max(holding, key=lambda n: n.lineno) if holding else None
                outcome = ("not read" if said[innermost].startswith("not read") else said[innermost]) if innermost else "outside any function"
                region_outcomes[outcome] += 1
                if args.verbose:
                    print(f"  region {paper_id}/{file.name}:{line} {name!r}: {said[innermost] if innermost else outcome}")
    print()
    print("regions (`# <paper2code name=...>`), by what came of the function holding each:")
    for outcome, count in region_outcomes.most_common():
        print(f"  {count:4}  {outcome}")
    print()
    for key in (
        "method equations", "equations read", "functions", "functions read", "linked pairs", "originals equivalent", "originals differs",
        "originals undecided", "statements agreement", "statements divergence",
    ):  # fmt: skip
        print(f"{key:24} {totals[key]}")
    decided = totals["originals equivalent"] + totals["originals differs"]
    if totals["linked pairs"]:
        print(f"{'decided':24} {decided}/{totals['linked pairs']} ({decided / totals['linked pairs']:.0%})   target >= 40%")
    print(f"{'false differs':24} {len(differs_on_originals)}   target 0")
    for line in differs_on_originals:
        print(f"  {line}")
    print("mutants of equivalent pairs, caught with the right difference named:")
    for kind in MUTATIONS:
        shown = f"{caught[kind]}/{tried[kind]} ({caught[kind] / tried[kind]:.0%})" if tried[kind] else "–  (no linked pair it applies to)"
        print(f"  {kind:14} {shown}")
    if tried:
        print(f"  {'all':14} {sum(caught.values())}/{sum(tried.values())} ({sum(caught.values()) / sum(tried.values()):.0%})   target >= 80%")
    if seconds:
        print(f"time per compared pair: median {sorted(seconds)[len(seconds) // 2] * 1e3:.0f} ms, max {max(seconds) * 1e3:.0f} ms")
    return 0


_REGION_RE = re.compile(r'#\s*<paper2code name="([^"]+)">')


def _regions(text: str) -> list[tuple[int, str]]:
    """Each region's first line (1-based) and name."""
    return [(number, found[1]) for number, line in enumerate(text.splitlines(), start=1) if (found := _REGION_RE.search(line))]


def _mutants(node: ast.FunctionDef | ast.AsyncFunctionDef):
    """(kind, mutated copy) for each mutation that applies: the sign, a factor, a dropped term and an
    exponent on the last return's value; two inputs swapped throughout, a sum for a mean (or the
    reverse) and a norm's order anywhere in what the function computes."""
    for kind in MUTATIONS:
        mutant = copy.deepcopy(node)
        returns = [n for n in ast.walk(mutant) if isinstance(n, ast.Return) and n.value is not None]
        if not returns:
            return
        last = returns[-1]
        if kind == "sign":
            last.value = ast.UnaryOp(op=ast.USub(), operand=last.value)
        elif kind == "factor":
            last.value = ast.BinOp(left=ast.Constant(0.5), op=ast.Mult(), right=last.value)
        elif kind == "drop a term":
            if not (isinstance(last.value, ast.BinOp) and isinstance(last.value.op, (ast.Add, ast.Sub))):
                continue
            last.value = last.value.left
        elif kind == "exponent":
            powers = [n for n in ast.walk(last.value) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow) and isinstance(n.right, ast.Constant)]
            if not powers:
                continue
            powers[0].right = ast.Constant(powers[0].right.value + 1)
        elif kind == "swap":
            if (mutant := _swapped(node)) is None:
                continue
        elif kind == "sum <-> mean" and not _rename_first_call(mutant, {"sum": "mean", "mean": "sum"}):
            continue
        elif kind == "norm" and not _change_norm_order(mutant):
            continue
        yield kind, ast.fix_missing_locations(mutant)


def _inputs(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The function's parameters and the own attributes it reads without assigning, in order."""
    assigned = {f"self.{n.attr}" for n in ast.walk(function) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)}
    called = {id(n.func) for n in ast.walk(function) if isinstance(n, ast.Call)}
    found = [a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs) if a.arg not in ("self", "cls")]
    for n in ast.walk(function):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" and id(n) not in called:
            key = f"self.{n.attr}"
            if key not in assigned and key not in found:
                found.append(key)
    return found


def _renamed(function: ast.FunctionDef | ast.AsyncFunctionDef, first: str, second: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    """A copy with two inputs swapped wherever the body uses them."""
    copied = copy.deepcopy(function)
    for statement in copied.body:
        for n in ast.walk(statement):
            if isinstance(n, ast.Name) and n.id in (first, second):
                n.id = second if n.id == first else first
            elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" and f"self.{n.attr}" in (first, second):
                n.attr = (second if f"self.{n.attr}" == first else first).removeprefix("self.")
    return copied


def _swapped(function: ast.FunctionDef | ast.AsyncFunctionDef):
    """Two of the function's inputs swapped throughout, the first pair whose swap changes what it
    computes (swapping the factors of a product would be no mutant at all); None when none does."""
    algebra = sympy_algebra()
    original = [str(p.expression) for p in read_function(function, algebra)]
    inputs = _inputs(function)
    for first, second in itertools.combinations(inputs, 2):
        mutant = _renamed(function, first, second)
        try:
            changed = [str(p.expression) for p in read_function(mutant, algebra)]
        except Unreadable:
            continue
        if len(changed) == len(original) and all(a != b for a, b in zip(original, changed)):
            return mutant
    return None


def _rename_first_call(function: ast.FunctionDef | ast.AsyncFunctionDef, renames: dict[str, str]) -> bool:
    for n in ast.walk(function):
        if isinstance(n, ast.Call):
            target = n.func
            if isinstance(target, ast.Attribute) and target.attr in renames:
                target.attr = renames[target.attr]
                return True
            if isinstance(target, ast.Name) and target.id in renames:
                target.id = renames[target.id]
                return True
    return False


def _change_norm_order(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """An L2 norm made L1 (or the reverse): `norm(x)` / `norm(x, p=2)` ⇄ `norm(x, p=1)`."""
    for n in ast.walk(function):
        if isinstance(n, ast.Call) and (getattr(n.func, "attr", None) or getattr(n.func, "id", None)) in ("norm", "vector_norm"):
            order = next((k for k in n.keywords if k.arg in ("p", "ord")), None)
            if order is None:
                n.keywords.append(ast.keyword(arg="p", value=ast.Constant(1)))
            elif isinstance(order.value, ast.Constant) and order.value.value in (1, 2):
                order.value = ast.Constant(3 - order.value.value)
            else:
                continue
            return True
    return False


if __name__ == "__main__":
    sys.exit(main())

"""Incremental re-indexing (pipeline/code/incremental.py): after any edit, `index_edit` gives exactly what
`index_python` gives on the new text. Real files (the bundled example, the project's own python.py,
the 2,000-line file of bench/server.py, a file of the walk's cross-statement cases) take hundreds of
random edits each: numbers, lines inserted, deleted, duplicated, indented; functions added and
removed; syntax broken and fixed; anchors and docstrings; module constants that later code reads;
imports, star imports, running totals."""

from __future__ import annotations

import ast
import importlib.util
import random
import re
import sys
from pathlib import Path

import pytest

from paperlens.pipeline.code import incremental, index_document, index_edit, index_source
from paperlens.pipeline.code.python import index_python, parse_module
from paperlens.schemas.code import FileIndex

REPO = Path(__file__).resolve().parents[1]

# The walk's cross-statement state, in one file: constants read before and after they are bound, a
# constant bound twice, defaults that calls override, imports after a use and inside functions, a
# library star import, `__all__`, running totals (module-level and through `global`), dead code,
# decorators, config classes, a docstring, Unicode identifiers, `;` and `\` and brackets across lines.
TRICKY = '''"""A model, Eq. (1), trained as in Sec. 3."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

import torch
from torch import nn

__all__ = ["build", "Config"]

LR = 3e-4
WARMUP = 1000
DECAY = 0.1 * 0.5
DROP = 0.1
USE_OLD = False
TOTAL = 0
λ_init = 0.8
BETAS = (0.9,
         0.95)
twice = 1; twice = 2
x = (
    1
)
y = 1 + \\
    2


def build(model, lr=LR, weight_decay=DECAY, dropout=0.1):
    """The optimizer of Eq. (3)."""
    global TOTAL
    TOTAL += 1
    head = nn.Dropout(dropout)
    return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay, betas=BETAS)


def _unused(p=DROP):  # Eq. (2)
    return p


@dataclass
class Config:
    lr: float = LR
    warmup_steps: int = WARMUP
    dropout: float = field(default=DROP)
    beta2: float = 0.999


def late():
    return AdamW(params, 1e-3)  # looked up before the import below (its lr: no library parameter)


from torch.optim import AdamW


def later():
    import torch.nn as tnn
    counter = 0
    for _ in range(3):
        counter += 1
    return AdamW(params, 2e-3), tnn.GELU()  # the library's AdamW: its second parameter is lr


if USE_OLD:
    opt = dict(lr=0.5, weight_decay=0.0)
else:
    opt = dict(lr=LR, weight_decay=DECAY)

for step in range(3):
    WARMUP_FACTOR = 0.5

while True:
    break
else:
    dead = dict(lr=0.9)

if (n := 3) > 2:
    dropout_rate = 0.2

groups = [{"params": [], "weight_decay": 0.0}, {"params": [], "weight_decay": DECAY}]
build(None, lr=0.01)
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=LR)
parser.add_argument("--batch-size", type=int, default=256)
config = Config()
config.warmup_steps = 500
TOTAL = TOTAL + 1
λ = λ_init * 2


class Trainer:
    """Sec. 4: the loop."""

    steps = 0

    def step(self):
        self.steps += 1  # Eq. (4)
        return self.steps


def main():
    args = parser.parse_args()
    return build(None, args.lr)
'''

# Lines the edits insert: statements at module level and in blocks, anchors, syntax errors.
SNIPPETS = [
    "",
    "# Eq. (3): the loss",
    "    # see Sec. 2.1 and Eqs. (4)-(6)",
    "LR = 1e-3",
    "WARMUP = 2000",
    "DROP = 0.3",
    "TOTAL += 1",
    "NEW_CONSTANT = 0.25",
    "lr = 0.5",
    "    lr = 0.5",
    "    return 1",
    "    raise ValueError()",
    "        weight_decay = 0.05",
    "import torch.nn as nn",
    "from torch.optim import *",
    "from torch.optim import SGD as AdamW",
    "    import numpy as torch",
    "optimizer = torch.optim.SGD(params, lr=0.1, momentum=0.9)",
    "    x = nn.Dropout(p=0.2)",
    "build(None, weight_decay=0.0)",
    "build(*args)",
    "config.lr = 0.01",
    "__all__ += ['late']",
    "@dataclass",
    "@staticmethod",
    "def extra(lr=LR, eps=1e-8):",
    "class Extra:",
    "    momentum: float = 0.9",
    "if False:",
    "else:",
    "    global TOTAL",
    "x = (",
    ")",
    "y = 1 + \\",
    '"""',
    "    '''Eq. (7) and Table 2.'''",
    "sys.exit(main())",
    "raise SystemExit(main())",
    "DROP = DROP * 2",
    "β = 0.5; γ = β",
    "λ_init = 0.7",
    "if USE_OLD: LR = 0.1",
    "for LR in (1, 2): pass",
    "del WARMUP",
    "x = 1  # Eq. (8)",
    "\tx = 1",
    "elif True:",
    "try:",
    "except Exception:",
    "with open('config.yaml') as f: pass",
    "match x:",
    "    case 1: lr = 0.1",
]

FUNCTION = '''

def added_{n}(model, lr={value}, betas=(0.9, 0.98)):
    """Eq. ({n})"""
    return torch.optim.Adam(model.parameters(), lr=lr, betas=betas)
'''

_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e-?\d+)?(?![\w.])")
_ANCHOR = re.compile(r"(Eqs?\.|Sec\.|Table|Algorithm) \(?(\d+)\)?")


def _big_file() -> str:
    """The 2,000-line file of bench/server.py (its generator, imported)."""
    bench = REPO / "bench"
    spec = importlib.util.spec_from_file_location("paperlens_bench_server", bench / "server.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    sys.path.insert(0, str(bench))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(bench))
    text, j = module.BIG_FILE_HEAD, 0
    while True:
        _, body = module._block(module.BLOCKS[j % len(module.BLOCKS)], f"_big_{j}")
        if (text + body + module.BIG_FILE_TAIL).count("\n") > 2000:
            break
        text += body
        j += 1
    return text + "\n" * (2000 - (text + module.BIG_FILE_TAIL).count("\n")) + module.BIG_FILE_TAIL


def _sources() -> dict[str, str]:
    sources = {f"examples/{path.name}": path.read_text() for path in sorted((REPO / "examples/workspace").glob("*.py"))}
    sources["pipeline/code/python.py"] = (REPO / "pipeline/code/python.py").read_text()
    sources["difftx/models/diff_transformer.py"] = _big_file()
    sources["tricky.py"] = TRICKY
    sources["tricky_crlf.py"] = TRICKY.replace("\n", "\r\n")
    # Identifiers and comments beyond ASCII (identifiers are read NFKC-normalized), tabs.
    sources["tricky_unicode.py"] = TRICKY.replace("LR", "ЛР").replace("# ", "# — λ → ").replace("    ", "\t")
    return sources


SOURCES = _sources()


def _mutate(source: str, rng: random.Random) -> str:
    """One random edit, as a person typing or pasting makes them."""
    lines = source.split("\n")
    line = rng.randrange(len(lines))
    kind = rng.choice(
        ["number", "number", "number", "insert", "insert", "delete", "duplicate", "indent", "function",
         "unfunction", "anchor", "constant", "character", "swap", "block"]
    )  # fmt: skip
    if kind == "number":
        numbers = list(_NUMBER.finditer(source))
        if numbers:
            match = rng.choice(numbers)
            value = rng.choice(["0", "1", "0.0", "0.05", "3e-4", "1000", "2", "-1", "1e-8", "True"])
            return source[: match.start()] + value + source[match.end() :]
    if kind == "insert":
        lines.insert(line, rng.choice(SNIPPETS))
    elif kind == "delete" and len(lines) > 1:
        del lines[line]
    elif kind == "duplicate":
        lines.insert(line, lines[line])
    elif kind == "indent":
        lines[line] = "    " + lines[line] if rng.random() < 0.5 else lines[line].removeprefix("    ")
    elif kind == "function":
        tops = [i for i, text in enumerate(lines) if text.startswith(("def ", "class ", "@"))] or [len(lines)]
        at = rng.choice(tops + [len(lines)])
        lines[at:at] = FUNCTION.format(n=rng.randrange(20), value=rng.choice(["1e-3", "LR", "0.1 * 2"])).split("\n")
    elif kind == "unfunction":
        tree = _parsed(source)
        if tree is not None:
            tops = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))]
            if tops:
                node = rng.choice(tops)
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
                del lines[first : node.end_lineno]
    elif kind == "anchor":
        anchors = list(_ANCHOR.finditer(source))
        if anchors and rng.random() < 0.7:
            match = rng.choice(anchors)
            return source[: match.start(2)] + str(rng.randrange(1, 9)) + source[match.end(2) :]
        lines[line] += rng.choice(["  # Eq. (2)", " Eq. (5)", "  # Sec. 3.2", "  # eq:loss"])
    elif kind == "constant":
        constants = [i for i, text in enumerate(lines) if re.match(r"[A-Z_]+ = ", text)]
        if constants:
            at = rng.choice(constants)
            name = lines[at].split(" = ")[0]
            value = rng.choice(["0.5", "1e-4", "7", "None", "True", "(1, 2)"])
            lines[at] = rng.choice([f"{name} = {value}", f"{name} = {name}", ""])
    elif kind == "character":
        offset = rng.randrange(len(source) + 1)
        if rng.random() < 0.5 and offset < len(source):
            return source[:offset] + source[offset + 1 :]
        return source[:offset] + rng.choice("()[]:,= \n#'\"x1.") + source[offset:]
    elif kind == "swap" and len(lines) > 2:
        other = rng.randrange(len(lines))
        lines[line], lines[other] = lines[other], lines[line]
    elif kind == "block":
        start = rng.randrange(len(lines))
        stop = min(len(lines), start + rng.randrange(1, 30))
        block = lines[start:stop]
        del lines[start:stop]
        where = rng.randrange(len(lines) + 1)
        lines[where:where] = block
    return "\n".join(lines)


def _parsed(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _explain(got: FileIndex, want: FileIndex) -> str:
    lines = []
    for field in FileIndex.model_fields:
        a, b = getattr(got, field), getattr(want, field)
        if a != b:
            if isinstance(a, list):
                extra = [x for x in a if x not in b][:3]
                missing = [x for x in b if x not in a][:3]
                lines.append(f"{field}: {len(a)} vs {len(b)}; only incremental: {extra}; only full: {missing}")
            else:
                lines.append(f"{field}: {a!r} vs {b!r}")
    return "\n".join(lines)


def _definitions_agree(source: str, path: str, index: FileIndex) -> None:
    """definitions_of() finds each definition where a whole parse does."""
    try:
        tree = parse_module(source, path)
    except (SyntaxError, ValueError):
        return
    definitions = incremental.definitions_of(source, path)
    expected = {
        node.lineno - 1: node
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    for function in index.functions[:: max(1, len(index.functions) // 8)]:
        line = function.location.line
        found = definitions.at(line)
        want = expected.get(line)
        assert (found is None) == (want is None), (path, line)
        if want is not None:
            assert ast.dump(found, include_attributes=True) == ast.dump(want, include_attributes=True), (path, line)
    assert definitions.at(len(source)) is None


def test_incremental_indexing_is_enabled():
    assert incremental.incremental_enabled(), (
        "python.py's walk changed shape (its state, _Scope, _Binding, or the source of walk/_body/_signature/"
        "index_python): review pipeline/code/incremental.py against it, then update _INDEXER_STATE/_OUTLINE"
    )


@pytest.mark.parametrize("path", sorted(SOURCES))
def test_random_edits_give_the_full_index(path, monkeypatch):
    source = SOURCES[path]
    rng = random.Random(f"{path}-7")
    edits = 60 if path.startswith("examples") else 200
    full_reads = []
    read_in_full = incremental._read_in_full
    monkeypatch.setattr(incremental, "_read_in_full", lambda p, s: full_reads.append(s) or read_in_full(p, s))
    index = index_edit(index_python(path, source), source, source)
    assert index == index_python(path, source)
    broken, kept = 0, source
    for step in range(edits):
        # A text read in full with nothing kept (broken, or dead code after a module-level `raise`) is
        # mostly undone by the next edit (back to the last text read incrementally), else edited on.
        new = kept if source is not kept and rng.random() < 0.7 else _mutate(source, rng)
        got = index_edit(index, source, new)
        want = index_python(path, new)
        assert got == want, f"{path}, edit {step}:\n{_explain(got, want)}"
        broken += bool(want.problems)
        if incremental._state_of(path, got.sha256, new) is not None:
            kept = new
            if step % 5 == 0:
                _definitions_agree(new, path, got)
        source, index = new, got
    assert broken < edits / 2  # most edits keep the file readable
    # Most edits are read incrementally (a text with nothing kept, and the one right after it, are not).
    assert len(full_reads) < edits * 0.6, f"{len(full_reads)} of {edits} edits read in full"


def test_typical_edits_are_incremental(monkeypatch):
    path = "difftx/models/diff_transformer.py"
    source = SOURCES[path]
    index = index_edit(index_python(path, source), source, source)
    full_reads = []
    monkeypatch.setattr(incremental, "_read_in_full", lambda p, s: full_reads.append(s))
    lines = source.split("\n")
    at = lines.index("WEIGHT_DECAY = 0.06")
    body = next(i for i, line in enumerate(lines) if "self.w1 = nn.Linear(dim, hidden, bias=bias)" in line)
    edits = [
        (at, "WEIGHT_DECAY = 0.05"),  # a constant that later code reads
        (body, lines[body].replace("bias=bias", "bias=True")),  # a line in a method
        (body, lines[body] + "\n        self.extra = nn.Dropout(0.2)"),  # a line inserted
        (body, lines[body]),  # and deleted again
        (1, lines[1] + " Eq. (4)"),  # the module docstring's anchor
    ]
    for line, text in edits:
        new = "\n".join([*lines[:line], text, *lines[line + 1 :]])
        got = index_edit(index, source, new)
        assert got == index_python(path, new)
        source, index, lines = new, got, new.split("\n")
    assert not full_reads


def test_syntax_errors_are_read_in_full_and_recovered_from():
    path = "tricky.py"
    source = TRICKY
    index = index_edit(index_python(path, source), source, source)
    broken = source.replace("def late():", "def late(:")
    got = index_edit(index, source, broken)
    assert got == index_python(path, broken)
    assert got.problems and "line" not in got.problems[0].message.split(":")[0]
    assert incremental._state_of(path, got.sha256, broken) is None  # nothing kept from a broken text
    fixed = index_edit(got, broken, source)
    assert fixed == index_python(path, source)
    again = source.replace("lr=1e-3", "lr=1e-2")
    assert index_edit(fixed, source, again) == index_python(path, again)


def test_config_files_are_indexed_as_before():
    previous = index_source("conf.yaml", "lr: 0.1\n")
    assert index_edit(previous, "lr: 0.1\n", "lr: 0.2\n") == index_source("conf.yaml", "lr: 0.2\n")
    assert index_document("conf.yaml", "lr: 0.3\n") == index_source("conf.yaml", "lr: 0.3\n")


def test_a_document_just_opened_is_read_in_full_and_its_next_edit_is_not(monkeypatch):
    path = "opened.py"
    index = index_document(path, TRICKY)
    assert index == index_python(path, TRICKY)
    monkeypatch.setattr(incremental, "_read_in_full", lambda p, s: pytest.fail("read in full"))
    edited = TRICKY.replace("DROP = 0.1", "DROP = 0.2")
    assert index_edit(index, TRICKY, edited) == index_python(path, edited)


def test_definitions_without_a_kept_state_parse_the_text():
    source = "def f():\n    return 1\n\n\nclass A:\n    def g(self):\n        pass\n"
    definitions = incremental.definitions_of(source, "never_indexed.py")
    assert definitions.at(0).name == "f"
    assert definitions.at(5).name == "g"
    assert definitions.at(2) is None
    with pytest.raises(SyntaxError):
        incremental.definitions_of("def f(:\n", "broken.py")


def test_what_one_statement_looks_up_does_not_change_what_a_later_one_finds():
    """`late()` names AdamW before it is imported; `later()` after. Removing `late()` must not change what
    `later()` finds (python.py's memo of look-ups is keyed by the imports a look-up reads)."""
    path = "lookups.py"
    index = index_edit(index_python(path, TRICKY), TRICKY, TRICKY)
    without = re.sub(r"\ndef late\(\):\n.*\n", "\n", TRICKY)
    assert without != TRICKY
    got = index_edit(index, TRICKY, without)
    assert got == index_python(path, without)
    assert [site.value for site in got.values if site.kind == "positional" and site.call == "AdamW"] == [0.002]
    back = index_edit(got, without, TRICKY)
    assert back == index_python(path, TRICKY)

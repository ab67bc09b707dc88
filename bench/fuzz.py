"""Broken and hostile input (issue 15): a mutation fuzzer that feeds the CLI (and, with --server,
the language server) mutated papers and workspaces, and counts what is not a clean answer.

Seeds: the bundled example (examples/paper, its PDF examples/paper/paper.pdf, examples/workspace
with a JSON config, a notebook and a decisions file added) and real material from
../shared/data chosen by --seed: a handful of LaTeX papers (papers-latex/*, the LaTeX of
papers-pdf/*), the PDFs (papers-pdf/*), official repositories beside their papers (repos/*).

Three kinds of case, each built in a fresh temp folder from one seed and one mutation:
  latex      a paper folder            `paperlens gaps --no-cache <folder>`
  pdf        one PDF                   `paperlens gaps --no-cache <file.pdf>`
  workspace  a workspace and its paper `paperlens check <workspace>` ([tool.paperlens] paper = "../paper")
(`gaps` reads the whole paper, then assesses it; the output format, text/json/sarif/markdown, is
drawn per case.) Two cases in three take the next of the kind's targeted mutations (the hostile
inputs issue 15 lists: FIFOs, /dev/zero, symlink loops, 10,000-deep nesting, 1 MB lines, 1e309,
NUL bytes, page-tree cycles, encryption, ...); the third stacks 1-4 random ones (byte flips,
truncation, duplicated regions, deleted brackets, hostile tokens, splices, zeroed regions, huge
lines). A case is rebuilt identically from (--seed, kind, index): `--only` reruns chosen cases.

Each case runs in a subprocess under a wall-clock limit (--timeout) and an address-space limit
(RLIMIT_AS, --memory-mb; core dumps off; output files capped at 256 MB). Its peak RSS comes from
wait4's rusage for that process. Classes:
  ok        exit 0, 1 or 2 (pipeline/cli.py: EXIT_OK, EXIT_FINDINGS, EXIT_INPUT) and no traceback
  internal  exit 3 (EXIT_INTERNAL), any other exit or signal, or a Python traceback on stderr
            (the CLI runs with PAPERLENS_DEBUG=1, so an internal error prints its traceback)
  hang      the wall-clock limit passed; the process's Python stacks are dumped three times,
            0.3 s apart (faulthandler on SIGUSR1), before it is killed, so a hang has a place too:
            the innermost paperlens frame common to the samples (a busy loop's innermost frame
            moves; what it runs under does not)
  memory    killed by the limit / MemoryError, or a peak RSS above --peak-mb (issue 15: 500 MB)
A case can show several failures (a server that hangs and logs a traceback); the first gives its
class, and each is listed. Failures are deduplicated by exception type + the innermost paperlens
frame (file:function:line) of the traceback; hangs by their place, a hang whose stack holds
another hang's place counting under it. With --keep DIR each failing input is kept as
DIR/<kind>-<index>/ (case.txt says what was done, the command, and stderr's end) with a one-line
reproducer.

--server: the same workspace inputs through `paperlens serve` over stdio (plain JSON-RPC, options
`debounceMs: 0, smokeOnSave: false`: no sandbox runs): every .py/.yaml (mutated files first, at
most 25) opened with didOpen, edited with a didChange, saved with a didSave (special files: only
the didSave); then a hover and shutdown must be answered within --timeout and the process must
exit within 5 s of `exit`. A server that dies, answers -32603, or logs a traceback or an internal
error is `internal` (every distinct one is listed); one that does not answer in time is `hang`.

Report: per kind, the counts per class, the slowest case and the largest peak memory; then every
distinct failure with its cases' mutations and a reproducer. Exit status: 0 when no case was
internal/hang/memory, 1 otherwise (a CI gate: tests/test_fuzz.py).

Usage: python bench/fuzz.py [--seed 15] [--cases 30] [--kinds latex,pdf,workspace] [--timeout 20]
       [--memory-mb 2048] [--peak-mb 500] [--jobs 2] [--keep DIR] [--server] [--only I ...] [--verbose]
       python bench/fuzz.py --replay-server DIR   (one server session on a kept workspace)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pymupdf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine  # bench/machine.py

from paperlens.pipeline.cli import EXIT_FINDINGS, EXIT_INPUT, EXIT_INTERNAL, EXIT_OK

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("PAPERLENS_SHARED_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
EXAMPLE = REPO / "examples"
KINDS = ("latex", "pdf", "workspace")
CLASSES = ("ok", "internal", "hang", "memory")
OK_EXITS = (EXIT_OK, EXIT_FINDINGS, EXIT_INPUT)
MB = 1 << 20
OUTPUT_LIMIT = 256 * MB  # RLIMIT_FSIZE: a runaway writer is stopped by SIGXFSZ
SERVER_FILES = 25
DUMP_SAMPLES = 3  # stack dumps of a hang before it is killed
# `paperlens` itself, with the stacks of every thread dumped on SIGUSR1 (what a hang was doing).
LAUNCHER = (
    "import faulthandler, signal, sys\n"
    "faulthandler.enable()\n"
    "faulthandler.register(signal.SIGUSR1, all_threads=True)\n"
    "from paperlens.pipeline.cli import main\n"
    "sys.exit(main())\n"
)
OUR_FOLDERS = tuple(str(REPO / name) + os.sep for name in ("pipeline", "server", "schemas"))


# ---------------------------------------------------------------------------------------- seeds


@dataclass
class Seeds:
    latex: list[Path]  # paper folders
    pdf: list[Path]  # PDF files
    workspace: list[tuple[str, Path, Path]]  # (name, workspace, paper folder)


def _has_tex(folder: Path) -> bool:
    return any(folder.glob("*.tex"))


def choose_seeds(rng: random.Random, data: Path) -> Seeds:
    """The example always; from the shared data, a handful chosen by the seed."""
    latex = [EXAMPLE / "paper"]
    pdf = [EXAMPLE / "paper" / "paper.pdf"]
    workspace: list[tuple[str, Path, Path]] = [("example", EXAMPLE / "workspace", EXAMPLE / "paper")]
    if data.is_dir():
        papers = sorted(p for p in (data / "papers-latex").glob("*") if p.is_dir() and _has_tex(p))
        reports = sorted(p for p in (data / "papers-pdf").glob("*") if p.is_dir() and _has_tex(p))
        latex += rng.sample(papers, min(4, len(papers))) + rng.sample(reports, min(1, len(reports)))
        pdfs = sorted((data / "papers-pdf").glob("*/*.pdf"))
        pdf += rng.sample(pdfs, min(3, len(pdfs)))
        repos = sorted(p for p in (data / "repos").glob("*") if p.is_dir() and (data / "papers-latex" / p.name).is_dir())
        workspace += [(f"repos/{p.name}", p, data / "papers-latex" / p.name) for p in rng.sample(repos, min(3, len(repos)))]
    return Seeds(latex, pdf, workspace)


def _seed_name(path: Path) -> str:
    for base in (REPO, SHARED_DATA):
        try:
            return str(path.relative_to(base))
        except ValueError:
            pass
    return str(path)


def _copy_paper(source: Path, dest: Path) -> None:
    shutil.copytree(source, dest, symlinks=True, ignore=shutil.ignore_patterns("*.pdf", "*.bib", "paper2code.yaml"))


EXAMPLE_EXTRAS = {
    "configs/model.json": json.dumps({"optimizer": {"lr": 0.0003, "weight_decay": 0.05}, "batch_size": 256, "dropout": 0.1}, indent=2) + "\n",
    "notebooks/explore.ipynb": json.dumps(
        {
            "cells": [
                {"cell_type": "markdown", "metadata": {}, "source": ["# Tempered Label Mixing, by hand\n"]},
                {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                 "source": ["learning_rate = 3e-4\n", "batch_size = 128\n", "alpha = 0.4\n"]},
            ],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
            "nbformat": 4,
            "nbformat_minor": 5,
        },
        indent=1,
    ) + "\n",
    ".paperlens/decisions.yaml": "deviations:\n  - {id: d1, setting: weight_decay, reason: baseline}\n"
    "assumptions:\n  - {id: a1, setting: warmup_steps, value: '10000', reason: unstated}\n"
    "clarifications:\n  - id: q1\n    question: Is the temperature annealed?\n    status: open\n",
}


def _copy_workspace(name: str, source: Path, dest: Path) -> None:
    shutil.copytree(source, dest, symlinks=True)
    pyproject = dest / "pyproject.toml"
    if name == "example":
        pyproject.write_text('# The example workspace, beside its paper.\n[tool.paperlens]\npaper = "../paper"\n')
        for relative, text in EXAMPLE_EXTRAS.items():
            (dest / relative).parent.mkdir(parents=True, exist_ok=True)
            (dest / relative).write_text(text)
    elif pyproject.is_file() and "[tool.paperlens]" not in pyproject.read_text(errors="replace"):
        pyproject.write_text(pyproject.read_text(errors="replace") + '\n[tool.paperlens]\npaper = "../paper"\n')
    elif not pyproject.exists():
        pyproject.write_text('[tool.paperlens]\npaper = "../paper"\n')


# ------------------------------------------------------------------------------ byte-level helpers


def _flip(rng: random.Random, data: bytes, most: int = 32) -> tuple[bytes, str]:
    if not data:
        return bytes([rng.randrange(256)]), "flip: 1 byte into an empty file"
    out = bytearray(data)
    n = rng.randint(1, most)
    for _ in range(n):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out), f"flip {n} random byte(s)"


def _truncate(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    at = rng.randrange(len(data)) if data else 0
    return data[:at], f"truncate at byte {at} of {len(data)}"


def _duplicate(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    if not data:
        return data, "duplicate: empty"
    a = rng.randrange(len(data))
    b = min(len(data), a + rng.choice([1, 16, 256, 4096, 65536]))
    times = rng.choice([1, 1, 2, 10, 50])
    times = max(1, min(times, (4 * MB) // max(1, b - a)))
    c = rng.randrange(len(data) + 1)
    return data[:c] + data[a:b] * times + data[c:], f"duplicate bytes {a}-{b} x{times} at {c}"


def _delete_brackets(rng: random.Random, data: bytes, brackets: bytes) -> tuple[bytes, str]:
    share = rng.choice([0.1, 0.5, 1.0])
    kept = bytes(ch for ch in data if ch not in brackets or rng.random() >= share)
    return kept, f"delete {share:.0%} of the {brackets.decode()!s} characters"


def _zero(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    if not data:
        return data, "zero: empty"
    a = rng.randrange(len(data))
    b = min(len(data), a + rng.choice([1, 64, 1024, 65536]))
    return data[:a] + bytes(b - a) + data[b:], f"zero bytes {a}-{b}"


def _insert_tokens(rng: random.Random, data: bytes, tokens: list[bytes]) -> tuple[bytes, str]:
    n = rng.randint(1, 8)
    out = data
    chosen = []
    for _ in range(n):
        token = rng.choice(tokens)
        at = rng.randrange(len(out) + 1)
        out = out[:at] + token + out[at:]
        chosen.append(token)
    return out, f"insert {n} token(s): {b' '.join(chosen)[:80]!r}"


def _replace_number(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    numbers = list(re.finditer(rb"(?<![\d.])\d+(?![\d.])", data[: 4 * MB]))
    if not numbers:
        return data, "number: none"
    m = rng.choice(numbers)
    value = rng.choice([b"0", b"-1", b"2147483648", b"99999999999999999999", b"1e309"])
    return data[: m.start()] + value + data[m.end() :], f"the number at byte {m.start()} replaced by {value.decode()}"


def _huge_line(rng: random.Random, data: bytes, units: list[bytes]) -> tuple[bytes, str]:
    unit = rng.choice(units)
    size = rng.choice([64 * 1024, 256 * 1024, MB])
    lines = data.split(b"\n")
    at = rng.randrange(len(lines) + 1)
    line = unit * (size // len(unit))
    return b"\n".join(lines[:at] + [line] + lines[at:]), f"insert a {size // 1024} KB line of {unit[:20]!r} at line {at + 1}"


def _splice(rng: random.Random, data: bytes, other: bytes) -> tuple[bytes, str]:
    if not other:
        return data, "splice: nothing"
    a = rng.randrange(len(other))
    b = min(len(other), a + rng.choice([16, 512, 8192]))
    at = rng.randrange(len(data) + 1)
    return data[:at] + other[a:b] + data[at:], f"splice {b - a} bytes of another file at {at}"


LATEX_TOKENS = [
    b"{", b"}", b"\\begin{", b"\\end{", b"$", b"$$", b"\\[", b"\\]", b"%", b"\\", b"\\input{", b"\\include{main}",
    b"\\def\\x{\\x}\\x", b"\\newcommand{\\y}[1]{\\y{#1}}\\y{1}", b"\x00", b"\xff\xfe", "\u2028".encode(), b"\r", b"\r\n",
    b"\\begin{equation}", b"\\end{document}", b"\\begin{document}", b"\\label{", b"\\ref{}", b"1e309", b"nan", b"-0",
    b"10^{10^{10}}", "\U0001F600".encode(), b"\\verb|", b"\\begin{verbatim}", b"\\iffalse", b"\\fi", b"&", b"\\\\",
    b"\\begin{tabular}{", b"\\csname", b"#1", b"^^@", b"\\catcode`\\{=12 ", b"\\section{", b"\\caption{", b"\\item",
    b"a learning rate of ", b"batch size of 1e400", b"\\num{", b"\\SI{3}{", b"\\\\ \\midrule", b"\\multicolumn{99999}{c}{",
]
CODE_TOKENS = [
    b"\x00", b"\t", b":", b"- ", b"[", b"]", b"{", b"}", b"&a ", b"*a", b"!!python/object:os.system", b"<<: *a", b"'''",
    b'"""', b"\\", b"\n  ", b"0x", b"1e309", b"NaN", b"Infinity", b"lambda: ", b"def ", b"=", b"#", "\U0001F600".encode(),
    "\u2028".encode(), b"\xff", b"---\n", b"...\n", b"%YAML 1.1\n", b"? ", b"|", b">", b"lr = ", b"weight_decay=",
    b"\r", b"\r\n", b"\"", b"'", b"\\u0000", b"[[", b"]]", b"= 5", b"@", b"async ", b"yield", b"**", b"(", b")",
]


# ---------------------------------------------------------------------------------------- cases


@dataclass
class Case:
    kind: str
    index: int
    seed: str = ""
    mutation: str = ""
    detail: str = ""
    args: list[str] = field(default_factory=list)  # the CLI's arguments, paths relative to the case folder
    target: str = ""  # the case folder's input the command reads (relative)
    touched: list[str] = field(default_factory=list)  # workspace-relative files the mutation made or changed

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.index:04d}"


@dataclass
class LatexContext:
    folder: Path
    main: Path
    tex: list[Path]


def _main_tex(folder: Path) -> Path:
    tex = sorted(folder.rglob("*.tex"))
    with_document = [p for p in tex if b"\\begin{document}" in p.read_bytes()]
    return (with_document or tex)[0]


def _insert_in_body(rng: random.Random, path: Path, snippet: bytes) -> None:
    data = path.read_bytes()
    start = data.find(b"\\begin{document}")
    start = start + len(b"\\begin{document}") if start >= 0 else 0
    end = data.rfind(b"\\end{document}")
    end = end if end > start else len(data)
    breaks = [m.end() for m in re.finditer(rb"\n[ \t]*\n", data[start:end])]
    at = start + (rng.choice(breaks) if breaks else 0)
    path.write_bytes(data[:at] + b"\n" + snippet + b"\n\n" + data[at:])


SETTING_PHRASES = [
    "a learning rate of {f}", "a batch size of {i}", "a weight decay of {f}", "a dropout rate of {f}", "{i} warmup steps",
    "a momentum of {f}", "{i} attention heads", "a hidden size of {i}", "{i} layers", "{i} epochs", "a label smoothing of {f}",
    "a gradient clipping norm of {f}", "$\\beta_1 = {f}$", "$\\beta_2={f}$", "an EMA decay of {f}", "a temperature of {f}",
    "{i} diffusion steps", "a sequence length of {i}", "a warmup ratio of {f}", "an $\\epsilon$ of {f}",
]


def _settings_sentence(rng: random.Random, size: int) -> str:
    parts, total = [], 0
    while total < size:
        phrase = rng.choice(SETTING_PHRASES).format(f=rng.choice(["0.1", "3e-4", "0.999", "1e-8", "0.05", "2.5"]), i=rng.choice(["32", "64", "256", "1000", "8", "12"]))
        parts.append(phrase)
        total += len(phrase) + 2
    return "We train with " + ", ".join(parts) + "."


def _latex_words(ctx: LatexContext) -> list[str]:
    words = re.findall(r"[A-Za-z]{3,}", ctx.main.read_text(errors="replace"))
    return words or ["the", "model", "is", "trained"]


def l_input_directory(rng, ctx):
    if rng.random() < 0.5:
        (ctx.folder / "appendix").mkdir()
        (ctx.folder / "appendix" / "a.tex").write_text("Appendix text.\n")
        _insert_in_body(rng, ctx.main, b"\\input{appendix}")
        return "\\input{appendix} where appendix/ is a folder"
    (ctx.folder / "extra.tex").mkdir()
    _insert_in_body(rng, ctx.main, b"\\input{extra}\n\\include{extra.tex}")
    return "\\input{extra} and \\include{extra.tex} where extra.tex is a folder"


def l_nested_braces(rng, ctx):
    n = 10_000
    variant = rng.choice(["balanced", "unclosed", "in math"])
    snippet = {"balanced": b"{" * n + b"deep" + b"}" * n, "unclosed": b"Text " + b"{" * n + b"deep",
               "in math": b"$" + b"{" * n + b"x" + b"}" * n + b"$"}[variant]
    _insert_in_body(rng, ctx.main, snippet)
    return f"10,000 nested braces ({variant})"


def l_symlink_loop(rng, ctx):
    os.symlink("loop.tex", ctx.folder / "loop.tex")
    os.symlink("b.tex", ctx.folder / "a.tex")
    os.symlink("a.tex", ctx.folder / "b.tex")
    os.symlink(".", ctx.folder / "self")
    sub = ctx.folder / "sections"
    sub.mkdir(exist_ok=True)
    os.symlink("..", sub / "up")
    if rng.random() < 0.5:
        _insert_in_body(rng, ctx.main, b"\\input{loop}\n\\input{a}\n\\input{self/self/self/main}")
        return "symlink loops (loop.tex -> itself, a.tex <-> b.tex, self -> ., sections/up -> ..), \\input of them"
    return "symlink loops (loop.tex -> itself, a.tex <-> b.tex, self -> ., sections/up -> ..), not \\input"


def l_long_math_line(rng, ctx):
    _insert_in_body(rng, ctx.main, b"$x$ " * (MB // 4))
    return "a 1 MB line of `$x$ `"


def l_long_prose_line(rng, ctx):
    words = _latex_words(ctx)
    line, size = [], 0
    while size < MB:
        word = rng.choice(words)
        line.append(word)
        size += len(word) + 1
    _insert_in_body(rng, ctx.main, " ".join(line).encode())
    return "a 1 MB line of prose (no full stop)"


def l_fifo(rng, ctx):
    name = rng.choice(["notes.tex", "zz.tex", "sections/fifo.tex", "refs.bib"])
    (ctx.folder / name).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(ctx.folder / name)
    if rng.random() < 0.5 and name.endswith(".tex"):
        _insert_in_body(rng, ctx.main, b"\\input{" + name[:-4].encode() + b"}")
        return f"a FIFO {name}, \\input of it"
    return f"a FIFO {name}, no \\input of it"


def l_dev_zero(rng, ctx):
    device = rng.choice(["/dev/zero", "/dev/zero", "/dev/urandom"])
    os.symlink(device, ctx.folder / "zero.tex")
    if rng.random() < 0.5:
        _insert_in_body(rng, ctx.main, b"\\input{zero}")
        return f"zero.tex -> {device}, \\input of it"
    return f"zero.tex -> {device}, no \\input of it"


def l_huge_number(rng, ctx):
    other = rng.choice(["1e-400", "10^{309}", "1\\times 10^{99999}", "9" * 400, "0x1p99999", "-1e309", "1e309\\%"])
    sentence = f"We train with a learning rate of 1e309 and a batch size of {other}, for 1e309 epochs."
    table = (
        "\\begin{table}\\centering\\begin{tabular}{lc}\\toprule Setting & Value \\\\ \\midrule\n"
        f"learning rate & 1e309 \\\\\nweight decay & {other} \\\\\nbatch size & $1e309$ \\\\\n"
        "\\bottomrule\\end{tabular}\\caption{Hyperparameters.}\\end{table}"
    )
    _insert_in_body(rng, ctx.main, f"{sentence}\n\n{table}".encode())
    return f"1e309 (and {other}) in a sentence and in table cells"


def l_nul_in_input(rng, ctx):
    name = rng.choice([b"sec\x00tion", b"\x00", b"sections/method\x00", b"main\x00.tex"])
    _insert_in_body(rng, ctx.main, b"\\input{" + name + b"}\n\\include{" + name + b"}")
    return f"a NUL byte in an \\input name ({name!r})"


def l_unreadable(rng, ctx):
    target = ctx.main if rng.random() < 0.6 or len(ctx.tex) < 2 else rng.choice([p for p in ctx.tex if p != ctx.main])
    target.chmod(0)
    note = " (as root: still readable)" if os.geteuid() == 0 and not _AS_A_USER else ""
    return f"chmod 000 {target.relative_to(ctx.folder)}{note}"


def l_settings_16k(rng, ctx):
    _insert_in_body(rng, ctx.main, _settings_sentence(rng, 16 * 1024).encode())
    return "one sentence stating many settings, 16 KB"


def l_settings_62k(rng, ctx):
    _insert_in_body(rng, ctx.main, _settings_sentence(rng, 62 * 1024).encode())
    return "one sentence stating many settings, 62 KB"


def l_digit_run(rng, ctx):
    digits = "1" * rng.choice([100_000, 300_000])
    sentence = rng.choice([
        f"We hold out {digits}\\% of the data for validation.",
        f"We warm up for ${digits} T$ steps with a learning rate of {digits}.",
    ])  # fmt: skip
    _insert_in_body(rng, ctx.main, sentence.encode())
    return f"a run of {len(digits):,} digits in a sentence"


def l_assignment_list(rng, ctx):
    count = rng.choice([5_000, 10_000])
    assignments = ", ".join(f"$a_{{{i}}} = 1$" for i in range(count))
    _insert_in_body(rng, ctx.main, f"We initialize {assignments}, and all are learnable parameters.".encode())
    return f"one sentence of {count:,} assignments"


def l_repeated_step(rng, ctx):
    count = rng.choice([1_000, 2_000])
    step = rng.choice([
        "We count word frequencies in Section 1.", "We randomly mask the tokens.", "We combine the two embeddings.",
        "For Set{name}, we split the records into train and test sets.",  # each for another experiment
        "We split the data into " + "train" * 40 + " sets.",  # glued part names: no backtracking
        "We keep the scores above the threshold $t_{{{name}}}$.",  # each its own symbol, whose value is looked up
    ])  # fmt: skip
    names = ("".join(chr(ord("a") + int(digit)) for digit in str(i)) for i in range(count))
    _insert_in_body(rng, ctx.main, " ".join(step.format(name=name) for name in names).encode())
    return f"one paragraph repeating a step of the method {count:,} times"


def l_inline_math_1mb(rng, ctx):
    terms, size, i = [], 0, 0
    while size < MB:
        term = f"\\alpha_{{{i}}}^{{{i % 7}}}"
        terms.append(term)
        size += len(term) + 3
        i += 1
    body = " + ".join(terms)
    if rng.random() < 0.5:
        _insert_in_body(rng, ctx.main, f"The loss is ${body}$ in all runs.".encode())
        return "1 MB of inline math (one $...$)"
    _insert_in_body(rng, ctx.main, f"\\begin{{equation}}\\label{{eq:huge}}\n{body}\n\\end{{equation}}".encode())
    return "1 MB of display math (one equation)"


def l_input_cycle(rng, ctx):
    if rng.random() < 0.5 or len(ctx.tex) < 2:
        stem = ctx.main.relative_to(ctx.folder).with_suffix("").as_posix()
        _insert_in_body(rng, ctx.main, f"\\input{{{stem}}}".encode())
        return f"\\input cycle: {ctx.main.name} inputs itself"
    section = rng.choice([p for p in ctx.tex if p != ctx.main])
    stem = ctx.main.relative_to(ctx.folder).with_suffix("").as_posix()
    section.write_bytes(section.read_bytes() + f"\n\\input{{{stem}}}\n".encode())
    return f"\\input cycle: {section.relative_to(ctx.folder)} inputs the main file"


def l_macro(rng, ctx):
    variant = rng.choice(["self", "mutual", "bomb"])
    snippet = {
        "self": b"\\newcommand{\\loopy}{\\loopy}\nWe use \\loopy{} here.",
        "mutual": b"\\def\\ping{\\pong}\\def\\pong{\\ping}\nA learning rate of \\ping.",
        "bomb": b"".join(b"\\def\\m%s{\\m%s\\m%s}" % (bytes([97 + k]), bytes([98 + k]), bytes([98 + k])) for k in range(25))
        + b"\\def\\mz{0.1}\nA learning rate of \\ma.",
    }[variant]
    _insert_in_body(rng, ctx.main, snippet)
    return {"self": "a macro that expands to itself", "mutual": "two macros that expand to each other",
            "bomb": "a macro whose expansion doubles 25 times (2^25 tokens)"}[variant]


LATEX_TARGETED = [
    ("input_directory", l_input_directory), ("nested_braces", l_nested_braces), ("symlink_loop", l_symlink_loop),
    ("long_math_line", l_long_math_line), ("long_prose_line", l_long_prose_line), ("fifo", l_fifo),
    ("dev_zero", l_dev_zero), ("huge_number", l_huge_number), ("nul_in_input", l_nul_in_input),
    ("unreadable", l_unreadable), ("settings_sentence_16k", l_settings_16k), ("settings_sentence_62k", l_settings_62k),
    ("inline_math_1mb", l_inline_math_1mb), ("input_cycle", l_input_cycle), ("macro_loop", l_macro),
    ("digit_run", l_digit_run), ("assignment_list", l_assignment_list), ("repeated_step", l_repeated_step),
]


def l_random(rng, ctx):
    details = []
    for _ in range(rng.randint(1, 4)):
        path = ctx.main if rng.random() < 0.6 or len(ctx.tex) < 2 else rng.choice(ctx.tex)
        data = path.read_bytes()
        data, what = rng.choice([
            lambda d: _flip(rng, d), lambda d: _truncate(rng, d), lambda d: _duplicate(rng, d),
            lambda d: _delete_brackets(rng, d, b"{}"), lambda d: _insert_tokens(rng, d, LATEX_TOKENS),
            lambda d: _insert_tokens(rng, d, LATEX_TOKENS), lambda d: _splice(rng, d, rng.choice(ctx.tex).read_bytes()),
            lambda d: _huge_line(rng, d, [b"$x$ ", b"word ", b"{", b"\\alpha", b"0.1, ", b"& ", b"\\\\"]),
            lambda d: _zero(rng, d),
        ])(data)  # fmt: skip
        path.write_bytes(data)
        details.append(f"{path.relative_to(ctx.folder)}: {what}")
    return "; ".join(details)


# ---- PDF


@lru_cache(maxsize=None)
def _pdf_bytes(path: Path) -> bytes:
    return path.read_bytes()


@lru_cache(maxsize=None)
def _pdf_uncompressed(path: Path) -> bytes:
    """The same PDF with plain dictionaries and a classic xref table: its structure in the raw bytes."""
    with pymupdf.open(path) as doc:
        return doc.tobytes(garbage=0, expand=255, use_objstms=0, deflate=0)


def _pages_xref(path: Path) -> int:
    with pymupdf.open(path) as doc:
        return int(doc.xref_get_key(doc.pdf_catalog(), "Pages")[1].split()[0])


def _object_span(data: bytes, number: int) -> tuple[int, int]:
    start = re.search(rb"(?<!\d)%d 0 obj" % number, data)
    if start is None:
        raise ValueError(f"object {number} not found")
    end = data.find(b"endobj", start.end())
    return start.end(), end


def p_truncate(rng, pdf: Path, out: Path):
    data = _pdf_bytes(pdf)
    variant = rng.choice(["random", "1 KB", "header only", "without the trailer", "half"])
    at = {"random": rng.randrange(len(data)), "1 KB": 1024, "header only": 9, "without the trailer": len(data) - 200,
          "half": len(data) // 2}[variant]
    out.write_bytes(data[:at])
    return f"truncated at byte {at} of {len(data)} ({variant})"


def p_flips(rng, pdf, out):
    data = _pdf_bytes(pdf) if rng.random() < 0.5 else _pdf_uncompressed(pdf)
    flipped, what = _flip(rng, data, most=200)
    out.write_bytes(flipped)
    return what


def p_page_tree_cycle(rng, pdf, out):
    pages = _pages_xref(pdf)
    variant = rng.choice(["root in its own Kids", "a page made a Pages node whose Kids is the root", "raw bytes"])
    if variant != "raw bytes":
        try:
            with pymupdf.open(pdf) as doc:
                kids = doc.xref_get_key(pages, "Kids")[1].strip("[]")
                if variant == "root in its own Kids":
                    doc.xref_set_key(pages, "Kids", f"[{pages} 0 R {kids}]")
                else:
                    first = int(kids.split()[0])
                    doc.xref_set_key(first, "Type", "/Pages")
                    doc.xref_set_key(first, "Kids", f"[{pages} 0 R]")
                    doc.xref_set_key(first, "Count", "1")
                out.write_bytes(doc.tobytes(garbage=0))
            return f"page-tree cycle: {variant}"
        except Exception:  # noqa: BLE001 - PyMuPDF will not save it: edit the raw bytes instead
            variant = "raw bytes"
    if variant == "raw bytes":
        data = _pdf_uncompressed(pdf)
        start, end = _object_span(data, pages)
        body = re.sub(rb"/Kids\s*\[", b"/Kids [%d 0 R " % pages, data[start:end], count=1)
        out.write_bytes(data[:start] + body + data[end:])
        return "page-tree cycle: the root Pages object lists itself in /Kids (raw bytes, xref offsets now stale)"


def p_invalid_count(rng, pdf, out):
    value = rng.choice([b"-1", b"0", b"abc", b"1.5", b"99999999999999999999", b"/Count"])
    data = _pdf_uncompressed(pdf)
    out.write_bytes(re.sub(rb"/Count\s+\d+", b"/Count " + value, data))
    return f"every /Count replaced by {value.decode()} (raw bytes)"


def p_huge_count(rng, pdf, out):
    value = rng.choice(["2147483647", "4294967296", "1000000000"])
    if rng.random() < 0.5:
        pages = _pages_xref(pdf)
        try:
            with pymupdf.open(pdf) as doc:
                doc.xref_set_key(pages, "Count", value)
                out.write_bytes(doc.tobytes(garbage=0))
            return f"the root /Count claims {value} pages"
        except Exception:  # noqa: BLE001 - PyMuPDF will not save it: edit the raw bytes instead
            pass
    data = _pdf_uncompressed(pdf)
    out.write_bytes(re.sub(rb"/Count\s+\d+", b"/Count " + value.encode(), data, count=1))
    return f"the first /Count claims {value} pages (raw bytes)"


def p_xref(rng, pdf, out):
    data = _pdf_uncompressed(pdf)
    variant = rng.choice(["startxref 0", "startxref past the end", "offsets scrambled", "xref size huge"])
    if variant == "startxref 0":
        data = re.sub(rb"startxref\s+\d+", b"startxref\n0", data)
    elif variant == "startxref past the end":
        data = re.sub(rb"startxref\s+\d+", b"startxref\n%d" % (len(data) * 10), data)
    elif variant == "offsets scrambled":
        data = re.sub(rb"(?m)^\d{10} (\d{5}) n", lambda m: b"%010d %s n" % (rng.randrange(len(data)), m.group(1)), data)
    else:
        data = re.sub(rb"/Size\s+\d+", b"/Size 2147483647", data)
        data = re.sub(rb"(?m)^xref\s+0 \d+", b"xref\n0 2147483647", data)
    out.write_bytes(data)
    return f"xref: {variant}"


def p_zeroed(rng, pdf, out):
    data = _pdf_bytes(pdf)
    details = []
    for _ in range(rng.randint(1, 5)):
        data, what = _zero(rng, data)
        details.append(what)
    out.write_bytes(data)
    return "; ".join(details)


def p_encrypted(rng, pdf, out):
    variant = rng.choice(["user password", "owner password only"])
    with pymupdf.open(pdf) as doc:
        user = "fuzz-user" if variant == "user password" else ""
        out.write_bytes(doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="fuzz-owner", user_pw=user, permissions=0))
    return f"encrypted, AES-256, {variant}"


def p_empty(rng, pdf, out):
    variant = rng.choice([b"", b"%PDF-1.7\n", b"%PDF-1.7\n%%EOF\n", b"\x00" * 4096])
    out.write_bytes(variant)
    return f"an empty or header-only file ({variant[:12]!r}, {len(variant)} bytes)"


def p_not_pdf(rng, pdf, out):
    variant = rng.choice(["latex", "random bytes", "html", "zip"])
    data = {
        "latex": (EXAMPLE / "paper" / "main.tex").read_bytes(),
        "random bytes": rng.randbytes(rng.choice([10, 10_000, 1_000_000])),
        "html": b"<html><body>not a paper</body></html>",
        "zip": b"PK\x03\x04" + rng.randbytes(2000),
    }[variant]
    out.write_bytes(data)
    return f"not a PDF: {variant} under a .pdf name"


def p_deep_tree(rng, pdf, out):
    depth = rng.choice([1000, 5000, 20000])
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    for level in range(depth):
        number = 2 + level
        parent = b" /Parent %d 0 R" % (number - 1) if level else b""
        objects.append(b"<< /Type /Pages /Kids [%d 0 R] /Count 1%s >>" % (number + 1, parent))
    objects.append(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] >>" % (depth + 1))
    data, offsets = bytearray(b"%PDF-1.7\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(data))
        data += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(data)
    data += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    data += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    data += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    out.write_bytes(bytes(data))
    return f"a page tree {depth} levels deep (hand-written PDF)"


@lru_cache(maxsize=None)
def _with_blank_pages(pdf: Path, n: int) -> bytes:
    with pymupdf.open(pdf) as doc:
        for _ in range(n):
            doc.new_page()
        return doc.tobytes(garbage=0)


def p_many_pages(rng, pdf, out):
    n = rng.choice([2000, 5000])
    out.write_bytes(_with_blank_pages(pdf, n))
    return f"{n} blank pages appended"


PDF_TARGETED = [
    ("truncate", p_truncate), ("byte_flips", p_flips), ("page_tree_cycle", p_page_tree_cycle),
    ("invalid_page_count", p_invalid_count), ("huge_page_count", p_huge_count), ("xref_broken", p_xref),
    ("zeroed_regions", p_zeroed), ("encrypted", p_encrypted), ("empty", p_empty), ("not_a_pdf", p_not_pdf),
    ("deep_page_tree", p_deep_tree), ("many_pages", p_many_pages),
]
PDF_TOKENS = [b"endobj", b"stream\n", b"endstream", b"<<", b">>", b"/Length 999999999", b"/Count 99999999", b"/Kids [1 0 R]",
              b"obj", b"R", b"[", b"]", b"(", b")", b"/Filter /FlateDecode", b"%%EOF", b"xref", b"trailer", b"\x00" * 64]


def p_random(rng, pdf, out):
    data = _pdf_bytes(pdf) if rng.random() < 0.5 else _pdf_uncompressed(pdf)
    details = []
    for _ in range(rng.randint(1, 4)):
        data, what = rng.choice([
            lambda d: _flip(rng, d, most=64), lambda d: _flip(rng, d, most=64), lambda d: _zero(rng, d),
            lambda d: _duplicate(rng, d), lambda d: _truncate(rng, d), lambda d: _insert_tokens(rng, d, PDF_TOKENS),
            lambda d: _replace_number(rng, d),
        ])(data)  # fmt: skip
        details.append(what)
    out.write_bytes(data)
    return "; ".join(details)


# ---- workspace


@dataclass
class WorkspaceContext:
    folder: Path  # the workspace
    paper: Path
    case: Path  # the case folder (holds workspace/ and paper/)

    def files(self, *suffixes: str) -> list[Path]:
        found = []
        for root, dirs, names in os.walk(self.folder):
            dirs[:] = sorted(d for d in dirs if d not in (".git", "__pycache__"))
            found += [Path(root) / n for n in sorted(names) if n.endswith(suffixes) and (Path(root) / n).is_file()]
        return found

    def rel(self, path: Path) -> str:
        return path.relative_to(self.folder).as_posix()


def _one(rng, ctx: WorkspaceContext, *suffixes: str) -> Path:
    files = ctx.files(*suffixes)
    return rng.choice(files) if files else ctx.folder / f"made{suffixes[0]}"


def w_fifo_py(rng, ctx, case):
    name = rng.choice(["fifo.py", "models/fifo.py"])
    (ctx.folder / name).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(ctx.folder / name)
    case.touched.append(name)
    return f"a FIFO {name}"


def w_fifo_yaml(rng, ctx, case):
    name = rng.choice(["configs/fifo.yaml", "fifo.yml", "configs/fifo.json", "fifo.toml"])
    (ctx.folder / name).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(ctx.folder / name)
    case.touched.append(name)
    return f"a FIFO {name}"


def w_fifo_decisions(rng, ctx, case):
    path = ctx.folder / ".paperlens" / "decisions.yaml"
    path.parent.mkdir(exist_ok=True)
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    case.touched.append(".paperlens/decisions.yaml")
    return "a FIFO .paperlens/decisions.yaml"


def w_device(rng, ctx, case):
    device, name = rng.choice([("/dev/zero", "x.py"), ("/dev/urandom", "x.py"), ("/dev/zero", "configs/zero.yaml"), ("/dev/urandom", "notes.ipynb")])
    (ctx.folder / name).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(device, ctx.folder / name)
    case.touched.append(name)
    return f"{name} -> {device}"


def w_symlink_loop(rng, ctx, case):
    os.symlink("loop.py", ctx.folder / "loop.py")
    os.symlink("b.py", ctx.folder / "a.py")
    os.symlink("a.py", ctx.folder / "b.py")
    os.symlink(".", ctx.folder / "self")
    (ctx.folder / "pkg").mkdir(exist_ok=True)
    os.symlink("..", ctx.folder / "pkg" / "up")
    os.symlink("loop.yaml", ctx.folder / "loop.yaml")
    case.touched += ["loop.py", "a.py", "loop.yaml"]
    return "symlink loops: loop.py -> itself, a.py <-> b.py, loop.yaml -> itself, self -> ., pkg/up -> .."


def w_unreadable(rng, ctx, case):
    variant = rng.choice(["a .py", "a folder", "pyproject.toml", "the decisions file"])
    if variant == "a .py":
        target = _one(rng, ctx, ".py")
    elif variant == "a folder":
        target = ctx.folder / "private"
        target.mkdir()
        (target / "secret.py").write_text("LEARNING_RATE = 0.1\n")
    elif variant == "pyproject.toml":
        target = ctx.folder / "pyproject.toml"
    else:
        target = ctx.folder / ".paperlens" / "decisions.yaml"
        target.parent.mkdir(exist_ok=True)
        if not target.exists():
            target.write_text("deviations: []\n")
    target.touch()
    target.chmod(0)
    case.touched.append(ctx.rel(target))
    note = " (as root: still readable)" if os.geteuid() == 0 and not _AS_A_USER else ""
    return f"chmod 000 {ctx.rel(target)} ({variant}){note}"


def w_nul_py(rng, ctx, case):
    target = _one(rng, ctx, ".py")
    data = target.read_bytes() if target.exists() else b"x = 1\n"
    if rng.random() < 0.3:
        data = b"\x00" * rng.choice([1, 4096, 100_000])
        what = "only NUL bytes"
    else:
        for _ in range(rng.randint(1, 10)):
            at = rng.randrange(len(data) + 1)
            data = data[:at] + b"\x00" + data[at:]
        what = "NUL bytes inserted"
    target.write_bytes(data)
    case.touched.append(ctx.rel(target))
    return f"{ctx.rel(target)}: {what}"


def w_tool_5(rng, ctx, case):
    variant = rng.choice(['tool = 5', 'tool = "paperlens"', "[tool]\npaperlens = 5", "[tool.paperlens]\npaper = 5",
                          '[tool.paperlens]\npaper = "../paper"\ninclude = "*.py"', "[tool.paperlens]\npaper = \"\"",
                          '[tool.paperlens]\npaper = "../paper"\nexclude = [1, 2]', "tool = [5]", "[[tool]]\npaperlens = 1"])
    (ctx.folder / "pyproject.toml").write_text(variant + "\n")
    case.touched.append("pyproject.toml")
    return f"pyproject.toml is {variant!r}"


def w_nested_settings(rng, ctx, case):
    n = 10_000
    variant = rng.choice(["include array", "inline table", "sandbox value"])
    value = {"include array": "include = " + "[" * n + "]" * n,
             "inline table": "extra = " + "{a = " * n + "1" + "}" * n,
             "sandbox value": "[tool.paperlens.sandbox]\nimage = " + "[" * n + "]" * n}[variant]
    (ctx.folder / "pyproject.toml").write_text(f'[tool.paperlens]\npaper = "../paper"\n{value}\n')
    case.touched.append("pyproject.toml")
    return f"[tool.paperlens] with a value nested 10,000 levels ({variant})"


def w_nested_decisions(rng, ctx, case):
    n = 10_000
    variant = rng.choice(["flow lists", "flow mappings", "block lists", "under deviations"])
    text = {"flow lists": "[" * n + "]" * n,
            "flow mappings": "{a: " * n + "1" + "}" * n,
            "block lists": "- " * n + "x",
            "under deviations": "deviations:\n  - id: d1\n    setting: lr\n    reason: " + "[" * n + "]" * n}[variant]
    path = ctx.folder / ".paperlens" / "decisions.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text + "\n")
    case.touched.append(".paperlens/decisions.yaml")
    return f"decisions.yaml nested 10,000 levels ({variant})"


def w_workspace_loop(rng, ctx, case):
    if rng.random() < 0.5:
        os.symlink("ws-loop", ctx.case / "ws-loop")
        target = "ws-loop"
        what = "the workspace path is a symlink to itself"
    else:
        os.symlink("ws-b", ctx.case / "ws-a")
        os.symlink("ws-a", ctx.case / "ws-b")
        target = "ws-a"
        what = "the workspace path is a symlink loop (ws-a <-> ws-b)"
    case.target = target
    return what


def w_big_py(rng, ctx, case):
    lines = ['"""Generated code, just under 2 MB."""', "import torch", ""]
    size, i = sum(len(line) + 1 for line in lines), 0
    limit = 2 * MB - 4096
    while True:
        block = (
            f"def block_{i}(x, lr={rng.choice(['3e-4', '0.1', '1e-3'])}, dropout=0.{i % 10}):\n"
            f"    optimizer = torch.optim.AdamW(x.parameters(), lr=lr, weight_decay=0.0{i % 10}, betas=(0.9, 0.99{i % 10}))\n"
            f"    batch_size = {32 * (1 + i % 8)}\n    return optimizer, batch_size, dropout\n\n"
        )
        if size + len(block) + 1 > limit:
            break
        lines.append(block)
        size += len(block) + 1
        i += 1
    (ctx.folder / "generated.py").write_text("\n".join(lines))
    case.touched.append("generated.py")
    return f"generated.py: {i} generated functions, {(ctx.folder / 'generated.py').stat().st_size} bytes (< 2 MB)"


def w_yaml_eof(rng, ctx, case):
    text = rng.choice(["a:\n  - b:\n    - c", "a:\n  - b:\n    - c:\n      - d:\n        - e", "- - - - - x", "a: [1, 2,", "a: {b: [c"])
    name = rng.choice(["configs/eof.yaml", ".paperlens/decisions.yaml", "eof.yml"])
    (ctx.folder / name).parent.mkdir(parents=True, exist_ok=True)
    (ctx.folder / name).write_text(text)
    case.touched.append(name)
    return f"{name}: {text!r} with no final newline"


def w_huge_line(rng, ctx, case):
    variant = rng.choice(["py string", "py list", "yaml value", "json array", "py comment"])
    size = MB
    name, text = {
        "py string": ("huge.py", 'PROMPT = "' + "a" * size + '"\nlr = 3e-4\n'),
        "py list": ("huge.py", "WEIGHTS = [" + "0.1, " * (size // 5) + "]\n"),
        "yaml value": ("configs/huge.yaml", "lr: 3e-4\nnote: " + "word " * (size // 5) + "\n"),
        "json array": ("configs/huge.json", '{"lr": [' + "0.1," * (size // 4) + "0.1]}\n"),
        "py comment": ("huge.py", "# " + "x" * size + "\nbatch_size = 64\n"),
    }[variant]
    (ctx.folder / name).parent.mkdir(parents=True, exist_ok=True)
    (ctx.folder / name).write_text(text)
    case.touched.append(name)
    return f"{name}: a 1 MB line ({variant})"


def w_yaml_aliases(rng, ctx, case):
    levels = rng.choice([9, 12])
    lines = ["a0: &a0 [lr, 0.1, lr, 0.1, lr, 0.1, lr, 0.1, lr, 0.1]"]
    lines += [f"a{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * 10) + "]" for k in range(1, levels)]
    lines.append(f"optimizer: {{lr: 3e-4, all: *a{levels - 1}}}")
    (ctx.folder / "configs").mkdir(exist_ok=True)
    (ctx.folder / "configs" / "bomb.yaml").write_text("\n".join(lines) + "\n")
    case.touched.append("configs/bomb.yaml")
    return f"configs/bomb.yaml: YAML aliases that expand to 10^{levels} values (small file)"


def w_nested_json(rng, ctx, case):
    n = 10_000
    variant = rng.choice(["json", "notebook cells", "notebook source"])
    if variant == "json":
        name, text = "configs/deep.json", "[" * n + "]" * n
    elif variant == "notebook cells":
        name, text = "deep.ipynb", '{"cells": ' + "[" * n + "]" * n + ', "nbformat": 4}'
    else:
        name, text = "deep.ipynb", '{"cells": [{"cell_type": "code", "source": ' + '{"a": ' * n + "1" + "}" * n + '}], "nbformat": 4}'
    (ctx.folder / name).parent.mkdir(parents=True, exist_ok=True)
    (ctx.folder / name).write_text(text)
    case.touched.append(name)
    return f"{name}: nested 10,000 levels ({variant})"


def w_deep_python(rng, ctx, case):
    variant = rng.choice(["parentheses", "lists", "binary chain", "indentation", "calls"])
    text = {
        "parentheses": "x = " + "(" * 10_000 + "1" + ")" * 10_000 + "\n",
        "lists": "x = " + "[" * 10_000 + "]" * 10_000 + "\n",
        "binary chain": "lr = " + " + ".join(["0.1"] * 100_000) + "\n",
        "indentation": "".join(" " * k + "if x:\n" for k in range(150)) + " " * 150 + "lr = 0.1\n",
        "calls": "lr = " + "f(" * 5000 + "0.1" + ")" * 5000 + "\n",
    }[variant]
    (ctx.folder / "deep.py").write_text(text)
    case.touched.append("deep.py")
    return f"deep.py: deeply nested Python ({variant})"


def w_paper_special(rng, ctx, case):
    variant = rng.choice(["a FIFO", "/dev/zero", "a symlink loop", "the workspace itself", "a FIFO .md"])
    if variant == "a FIFO":
        os.mkfifo(ctx.paper / "fifo.tex")
        paper = "../paper/fifo.tex"
    elif variant == "a FIFO .md":
        os.mkfifo(ctx.paper / "fifo.md")
        paper = "../paper/fifo.md"
    elif variant == "/dev/zero":
        os.symlink("/dev/zero", ctx.paper / "zero.pdf")
        paper = "../paper/zero.pdf"
    elif variant == "a symlink loop":
        os.symlink("loop.tex", ctx.paper / "loop.tex")
        paper = "../paper/loop.tex"
    else:
        paper = "."
    (ctx.folder / "pyproject.toml").write_text(f'[tool.paperlens]\npaper = "{paper}"\n')
    case.touched.append("pyproject.toml")
    return f"[tool.paperlens] paper is {variant} ({paper})"


WORKSPACE_TARGETED = [
    ("fifo_py", w_fifo_py), ("fifo_yaml", w_fifo_yaml), ("fifo_decisions", w_fifo_decisions), ("device_file", w_device),
    ("symlink_loop", w_symlink_loop), ("unreadable", w_unreadable), ("nul_py", w_nul_py), ("tool_5", w_tool_5),
    ("nested_settings", w_nested_settings), ("nested_decisions", w_nested_decisions), ("workspace_symlink_loop", w_workspace_loop),
    ("big_py", w_big_py), ("yaml_eof_nested", w_yaml_eof), ("huge_line", w_huge_line), ("yaml_alias_bomb", w_yaml_aliases),
    ("nested_json", w_nested_json), ("deep_python", w_deep_python), ("paper_special", w_paper_special),
]


def w_random(rng, ctx, case):
    files = ctx.files(".py", ".yaml", ".yml", ".json", ".toml", ".ipynb")
    if not files:
        return "random: no file to mutate"
    details = []
    for path in rng.sample(files, min(len(files), rng.randint(1, 2))):
        data = path.read_bytes()
        brackets = b"[]{}()" if path.suffix in (".py", ".json", ".ipynb", ".toml") else b"[]{}:-"
        for _ in range(rng.randint(1, 4)):
            data, what = rng.choice([
                lambda d: _flip(rng, d), lambda d: _truncate(rng, d), lambda d: _duplicate(rng, d),
                lambda d: _delete_brackets(rng, d, brackets), lambda d: _insert_tokens(rng, d, CODE_TOKENS),
                lambda d: _insert_tokens(rng, d, CODE_TOKENS),
                lambda d: _huge_line(rng, d, [b"x", b"0.1, ", b"[", b"- ", b"lr = 0.1; ", b" "]),
                lambda d: _splice(rng, d, rng.choice(files).read_bytes()),
            ])(data)  # fmt: skip
            details.append(f"{ctx.rel(path)}: {what}")
        path.write_bytes(data)
        case.touched.append(ctx.rel(path))
    return "; ".join(details)


TARGETED = {"latex": LATEX_TARGETED, "pdf": PDF_TARGETED, "workspace": WORKSPACE_TARGETED}
FORMATS = {"latex": ["text", "json", "sarif", "markdown"], "pdf": ["text", "json", "sarif", "markdown"], "workspace": ["text", "json", "sarif"]}


def plan(kind: str, index: int) -> str:
    """The mutation of case `index`: two in three are the next targeted one, the third random."""
    if index % 3 == 2:
        return "random"
    targeted = TARGETED[kind]
    return targeted[(2 * (index // 3) + index % 3) % len(targeted)][0]


def build(kind: str, index: int, seed: int, seeds: Seeds, folder: Path) -> Case:
    """Make case `index` of `kind` in `folder` (new). The same arguments make the same case."""
    rng = random.Random(f"{seed}:{kind}:{index}")
    case = Case(kind, index, mutation=plan(kind, index))
    folder.mkdir(parents=True)
    fmt = rng.choice(FORMATS[kind])
    if kind == "latex":
        source = rng.choice(seeds.latex)
        case.seed = _seed_name(source)
        _copy_paper(source, folder / "paper")
        main = _main_tex(folder / "paper")
        ctx = LatexContext(folder / "paper", main, sorted((folder / "paper").rglob("*.tex")))
        mutate = dict(LATEX_TARGETED).get(case.mutation, l_random)
        case.detail = mutate(rng, ctx)
        case.target = "paper"
        case.args = ["gaps", "--no-cache", "--format", fmt]
    elif kind == "pdf":
        source = rng.choice(seeds.pdf)
        case.seed = _seed_name(source)
        (folder / "paper").mkdir()
        mutate = dict(PDF_TARGETED).get(case.mutation, p_random)
        try:
            case.detail = mutate(rng, source, folder / "paper" / "paper.pdf")
        except Exception as err:  # noqa: BLE001 - PyMuPDF refused the edit: fall back to flips
            data, what = _flip(rng, _pdf_bytes(source), most=64)
            (folder / "paper" / "paper.pdf").write_bytes(data)
            case.detail = f"({case.mutation} failed to build: {type(err).__name__}: {err}; instead) {what}"
        case.target = "paper/paper.pdf"
        case.args = ["gaps", "--no-cache", "--format", fmt]
    else:
        name, workspace, paper = rng.choice(seeds.workspace)
        case.seed = name
        _copy_workspace(name, workspace, folder / "workspace")
        _copy_paper(paper, folder / "paper")
        ctx = WorkspaceContext(folder / "workspace", folder / "paper", folder)
        case.target = "workspace"
        mutate = dict(WORKSPACE_TARGETED).get(case.mutation, w_random)
        case.detail = mutate(rng, ctx, case)
        case.args = ["check", "--format", fmt]
    return case


# --------------------------------------------------------------------------------- running


def _limits(memory_mb: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb * MB, memory_mb * MB))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_LIMIT, OUTPUT_LIMIT))

    return apply


# As root, chmod 000 stops no read: each case then runs without the capabilities that let root
# read and search what its mode forbids (util-linux's setpriv), so `unreadable` tests something.
_AS_A_USER = (
    ["setpriv", "--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search"]
    if os.geteuid() == 0 and shutil.which("setpriv")
    else []
)


def _environment(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERLENS_LLM")}
    env.update(PAPERLENS_DEBUG="1", PAPERLENS_CACHE_DIR=str(cache), PYTHONUNBUFFERED="1")
    return env


def _fix_permissions(folder: Path) -> None:
    """chmod 000 files and folders back, so that the case can be removed or moved."""
    for root, dirs, names in os.walk(folder):
        for name in dirs + names:
            path = os.path.join(root, name)
            try:
                if not os.path.islink(path) and stat.S_IMODE(os.lstat(path).st_mode) == 0:
                    os.chmod(path, 0o700)
            except OSError:
                pass
    for root, dirs, _ in os.walk(folder):  # folders made readable above are walked now
        for name in dirs:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                try:
                    os.chmod(path, os.lstat(path).st_mode | 0o700)
                except OSError:
                    pass


def _remove(folder: Path) -> None:
    if folder.exists() or folder.is_symlink():
        _fix_permissions(folder)
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Outcome:
    case: Case
    exit: int | None = None
    seconds: float = 0.0
    peak_mb: float = 0.0
    # (class, (exception type, innermost paperlens frame), what it said): the first decides the class
    failures: list[tuple[str, tuple[str, str], str]] = field(default_factory=list)
    stderr_tail: str = ""
    reproducer: str = ""
    kept: Path | None = None
    name: str = ""  # the case folder's name: <kind>-<index>, server-<index> for a server session
    notes: str = ""
    hang_stack: list[str] = field(default_factory=list)  # a hang's paperlens frames, innermost first

    @property
    def cls(self) -> str:
        return self.failures[0][0] if self.failures else "ok"

    @property
    def key(self) -> tuple[str, str]:
        return self.failures[0][1] if self.failures else ("", "")

    @property
    def summary(self) -> str:
        return self.failures[0][2] if self.failures else ""


TRACEBACK_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)', re.M)
DUMP_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)', re.M)


def _ours(path: str) -> str | None:
    if path.startswith(OUR_FOLDERS):
        return os.path.relpath(path, REPO)
    if "/paperlens/" in path:
        return path.split("/paperlens/", 1)[1]
    return None


def _frame(match: re.Match) -> str:
    return f"{_ours(match['file'])}:{match['func']}:{match['line']}"


def parse_tracebacks(stderr: str) -> list[tuple[str, str, str]]:
    """(exception type, innermost paperlens frame, the exception line) of each traceback that was
    not the cause of the next one ("The above exception ..." / "During handling ...")."""
    found = []
    blocks = stderr.split("Traceback (most recent call last):")[1:]
    for block in blocks:
        frames = [m for m in TRACEBACK_FRAME.finditer(block) if _ours(m["file"])]
        lines = block.splitlines()
        exception, rest = "", ""
        for at, line in enumerate(lines[1:], 1):
            if line and not line.startswith((" ", "\t")) and not line.startswith("[Previous line"):
                exception, rest = line, "\n".join(lines[at + 1: at + 4])
                break
        if "The above exception was" in rest or "During handling of the above" in rest:
            continue
        kind = re.match(r"[\w.]+", exception)
        found.append(((kind.group(0) if kind else "?"), (_frame(frames[-1]) if frames else "(no paperlens frame)"), exception))
    return found


def parse_traceback(stderr: str) -> tuple[str, str, str] | None:
    """The last traceback's (exception type, innermost paperlens frame, exception line)."""
    found = parse_tracebacks(stderr)
    return found[-1] if found else None


def parse_dump(stderr: str) -> tuple[str, list[str], list[str]]:
    """Where a hang was, from faulthandler's dumps (DUMP_SAMPLES of them, a few tenths of a second
    apart). A busy loop's innermost frame moves from sample to sample, the frames it runs under do
    not: per thread, the stack common to all its samples; the thread doing paperlens work is the one
    with the most paperlens frames in it (not the server's idle loop). Returns the innermost of
    those frames, all of them (innermost first), and each sample's innermost paperlens function."""
    starts = [at for at in (stderr.find("Current thread 0x"), stderr.find("Thread 0x")) if at >= 0]
    if not starts:
        return "(no stack dump)", [], []
    by_thread: dict[str, list[list[tuple[str, str, str]]]] = {}
    for block in re.split(r"(?m)^(?=(?:Current thread|Thread) 0x)", stderr[min(starts):]):
        header = re.match(r"(?:Current thread|Thread) (0x[0-9a-f]+)", block)
        if header:
            frames = [(m["file"], m["func"], m["line"]) for m in DUMP_FRAME.finditer(block)]
            by_thread.setdefault(header[1], []).append(frames[::-1])  # outermost first
    best: tuple | None = None
    for samples in by_thread.values():
        common = samples[0]
        for other in samples[1:]:
            same = 0
            while same < min(len(common), len(other)) and common[same] == other[same]:
                same += 1
            common = common[:same]
        ours = [frame for frame in common if _ours(frame[0])]
        if not ours:
            continue
        score = (ours[-1][1] not in ("main", "start_io", "run_serve"), len(ours))
        if best is None or score > best[0]:
            sampled = [next((f[1] for f in reversed(sample) if _ours(f[0])), "?") for sample in samples]
            best = (score, ours, sampled)
    if best is None:
        return "(no paperlens frame)", [], []
    names = [f"{_ours(file)}:{func}:{line}" for file, func, line in reversed(best[1])]
    return names[0], names, best[2]


def classify(outcome: Outcome, stderr: str, status: int | None, timed_out: bool, peak_bound: float) -> None:
    """Every failure the run shows, the first one deciding the case's class."""
    failures: list[tuple[str, tuple[str, str], str]] = []
    traceback = parse_traceback(stderr)
    memory_words = ("MemoryError", "std::bad_alloc", "Cannot allocate memory", "out of memory")
    if timed_out:
        frame, stack, sampled = parse_dump(stderr)
        outcome.hang_stack = stack
        failures.append(("hang", ("hang", frame), f"no answer after {outcome.seconds:.0f} s; in " + " < ".join(f.split(":")[1] for f in stack[:6])
                         + (f" (innermost, per sample: {', '.join(sampled)})" if sampled else "")))
    if traceback and traceback[0] == "MemoryError":
        failures.append(("memory", traceback[:2], traceback[2]))
    elif status is not None and status < 0 and not timed_out:
        name = signal.Signals(-status).name if -status in signal.valid_signals() else str(-status)
        if any(word in stderr for word in memory_words):
            failures.append(("memory", (f"killed by {name}", "(memory limit)"), f"killed by {name}"))
        else:
            frame = parse_dump(stderr)[0] if "Fatal Python error" in stderr else "-"
            failures.append(("internal", (f"killed by {name}", frame), f"killed by {name}"))
    elif traceback:
        failures.append(("internal", traceback[:2], traceback[2]))
    elif not timed_out and status not in OK_EXITS:
        said = re.search(r"internal error in `[^`]+`: ([\w.]+)", stderr)
        last = (stderr.strip().splitlines() or [f"exit {status}"])[-1]
        code = f"exit {status}" + (" (EXIT_INTERNAL)" if status == EXIT_INTERNAL else "")
        failures.append(("internal", ((said.group(1) if said else code), "(no traceback)"), last))
    if outcome.peak_mb > peak_bound:
        failures.append(("memory", (f"peak > {peak_bound:.0f} MB", outcome.case.mutation), f"peak RSS {outcome.peak_mb:.0f} MB"))
    outcome.failures = failures
    outcome.stderr_tail = "\n".join(stderr.rstrip().splitlines()[-40:])


class Job:
    """One case: built when started, polled until done; never blocks for long."""

    def __init__(self, case_folder: Path, make, args: argparse.Namespace):
        self.folder = case_folder
        self.make = make  # () -> Case, builds the input in self.folder
        self.args = args
        self.proc: subprocess.Popen | None = None
        self.outcome: Outcome | None = None
        self.status: int | None = None
        self.rusage = None
        self.timed_out = False

    # -- process helpers
    def spawn(self, command: list[str], cwd: Path, stdin=subprocess.DEVNULL, stdout=None) -> None:
        log = self.folder / ".fuzz"
        log.mkdir(exist_ok=True)
        self.stderr_path = log / "stderr"
        self.started = time.monotonic()
        with open(self.stderr_path, "wb") as err:
            out = stdout if stdout is not None else open(log / "stdout", "wb")
            self.proc = subprocess.Popen(
                [*_AS_A_USER, *command], cwd=cwd, env=_environment(log / "cache"), stdin=stdin, stdout=out, stderr=err,
                preexec_fn=_limits(self.args.memory_mb), start_new_session=True,
            )
            if stdout is None:
                out.close()

    def reaped(self) -> bool:
        if self.status is not None:
            return True
        pid, status, rusage = os.wait4(self.proc.pid, os.WNOHANG)
        if pid == 0:
            return False
        self._done(status, rusage)
        return True

    def _done(self, status: int, rusage) -> None:
        self.elapsed = time.monotonic() - self.started
        self.status = os.waitstatus_to_exitcode(status)
        self.proc.returncode = self.status
        self.rusage = rusage

    def kill(self, dump: bool = True) -> None:
        """Dump the stacks (SIGUSR1, DUMP_SAMPLES times), then kill the process group and reap."""
        if self.status is not None:
            return
        if dump:  # a few samples of where it is
            for sample in range(DUMP_SAMPLES):
                try:
                    os.kill(self.proc.pid, signal.SIGUSR1)
                except ProcessLookupError:
                    break
                deadline = time.monotonic() + (0.3 if sample < DUMP_SAMPLES - 1 else 1.0)
                while time.monotonic() < deadline and not self.reaped():
                    time.sleep(0.05)
                if self.status is not None:
                    break
        if self.status is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _, status, rusage = os.wait4(self.proc.pid, 0)
            self._done(status, rusage)

    def finish(self, case: Case) -> Outcome:
        outcome = Outcome(case, exit=self.status, seconds=self.elapsed, peak_mb=self.rusage.ru_maxrss / 1024 if self.rusage else 0.0)
        stderr = self.stderr_path.read_bytes()[-200_000:].decode(errors="replace")
        classify(outcome, stderr, self.status, self.timed_out, self.args.peak_mb)
        return outcome


def _display(command: list[str]) -> str:
    return " ".join(shlex.quote(part) for part in command)


class CliJob(Job):
    def start(self) -> None:
        self.case = self.make()
        target = self.folder / self.case.target
        self.command = [sys.executable, "-c", LAUNCHER, *self.case.args, str(target)]
        self.spawn(self.command, cwd=self.folder)

    def poll(self) -> bool:
        if self.reaped():
            return True
        if time.monotonic() - self.started > self.args.timeout:
            self.timed_out = True
            self.kill()
            return True
        return False

    def result(self) -> Outcome:
        outcome = self.finish(self.case)
        outcome.reproducer = _display(["paperlens", *self.case.args, str(self.folder / self.case.target)])
        return outcome


# ---- the language server


class _Stuck(Exception):
    pass


class _Died(Exception):
    pass


def _uri(path: Path) -> str:
    return path.absolute().as_uri()


class ServerJob(Job):
    """`paperlens serve` on the case's workspace, driven over stdio by plain JSON-RPC."""

    def __init__(self, case_folder: Path, make, args: argparse.Namespace, workspace: Path | None = None):
        super().__init__(case_folder, make, args)
        self.workspace = workspace
        self.inbox = bytearray()
        self.outbox = bytearray()
        self.responses: dict[int, dict] = {}
        self.published: dict[str, int] = {}
        self.problems: list[str] = []
        self.problem_phase: dict[str, str] = {}
        self.next_id = 0
        self.broken = False
        self.phase = "start"

    def start(self) -> None:
        self.case = self.make()
        root = self.workspace or (self.folder / self.case.target)
        self.root = root
        self.spawn([sys.executable, "-c", LAUNCHER, "serve"], cwd=self.folder, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        for stream in (self.proc.stdin, self.proc.stdout):
            os.set_blocking(stream.fileno(), False)
        self.script = self._script()

    # -- the wire
    def send(self, method: str, params: object, request: bool = False) -> int | None:
        message: dict = {"jsonrpc": "2.0", "method": method, "params": params}
        ident = None
        if request:
            ident = self.next_id = self.next_id + 1
            message["id"] = ident
        body = json.dumps(message).encode()
        self.outbox += b"Content-Length: %d\r\n\r\n" % len(body) + body
        return ident

    def pump(self) -> None:
        if self.outbox and not self.broken:
            try:
                written = os.write(self.proc.stdin.fileno(), self.outbox[: 1 << 16])
                del self.outbox[:written]
            except BlockingIOError:
                pass
            except OSError:
                self.broken = True
        while True:
            try:
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            except BlockingIOError:
                break
            except OSError:
                break
            if not chunk:
                break
            self.inbox += chunk
        while True:
            head = self.inbox.find(b"\r\n\r\n")
            if head < 0:
                return
            length = re.search(rb"Content-Length:\s*(\d+)", bytes(self.inbox[:head]), re.I)
            if length is None:
                self.note(f"a frame without Content-Length: {bytes(self.inbox[:80])!r}")
                del self.inbox[: head + 4]
                continue
            end = head + 4 + int(length.group(1))
            if len(self.inbox) < end:
                return
            body = bytes(self.inbox[head + 4: end])
            del self.inbox[:end]
            try:
                self.receive(json.loads(body))
            except ValueError:
                self.note(f"a frame that is not JSON: {body[:80]!r}")

    def receive(self, message: dict) -> None:
        self.last_message = time.monotonic()
        if "id" in message and "method" in message:  # the server asks: an empty answer
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": None}).encode()
            self.outbox += b"Content-Length: %d\r\n\r\n" % len(body) + body
        elif "id" in message:
            self.responses[message["id"]] = message
            error = message.get("error")
            if error and error.get("code") == -32603:
                self.note(f"internal error answer: {error.get('message', '')[:200]}")
        elif message.get("method") == "textDocument/publishDiagnostics":
            uri = message["params"]["uri"]
            self.published[uri] = self.published.get(uri, 0) + 1
        elif message.get("method") in ("window/logMessage", "window/showMessage"):
            text = message["params"].get("message", "")
            if "internal error" in text.lower() or "Traceback" in text:
                self.note(f"{message['method']}: {text[:300]}")

    def note(self, problem: str) -> None:
        self.problems.append(problem)
        self.problem_phase[problem] = self.phase

    def wait(self, what: str, done, deadline: float):
        while not done():
            if self.status is not None:
                raise _Died(what)
            if time.monotonic() > deadline:
                raise _Stuck(what)
            yield

    # -- the session
    def _files(self) -> list[tuple[Path, str | None]]:
        """(path, text or None for what is not a regular file): mutated files first."""
        found: list[Path] = [self.root / name for name in self.case.touched if name.endswith((".py", ".yaml", ".yml"))]
        if self.root.is_dir():
            for folder, dirs, names in os.walk(self.root):
                dirs[:] = sorted(d for d in dirs if d not in (".git", "__pycache__"))
                found += [Path(folder) / n for n in sorted(names) if n.endswith((".py", ".yaml", ".yml"))]
        files, seen = [], set()
        for path in found:
            if path in seen or len(files) >= SERVER_FILES:
                continue
            seen.add(path)
            try:
                info = os.stat(path)
                regular = stat.S_ISREG(info.st_mode) and info.st_size <= 4 * MB and os.access(path, os.R_OK)
            except (OSError, ValueError):
                regular = False
            text = None
            if regular:
                try:
                    text = path.read_bytes().decode("utf-8", errors="replace")
                except OSError:
                    text = None
            files.append((path, text))
        return files

    def _script(self):
        budget = self.args.timeout
        deadline = time.monotonic() + budget
        self.phase = "initialize"
        ident = self.send("initialize", {
            "processId": os.getpid(), "rootUri": _uri(self.root), "capabilities": {"textDocument": {"publishDiagnostics": {}}},
            "initializationOptions": {"paperlens": {"debounceMs": 0, "smokeOnSave": False}},
        }, request=True)
        yield from self.wait("initialize", lambda: ident in self.responses, deadline)
        self.send("initialized", {})
        files = self._files()
        opened = []
        for path, text in files:
            if text is None:
                continue
            uri = _uri(path)
            language = "python" if path.suffix == ".py" else "yaml"
            self.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}})
            self.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                  "contentChanges": [{"text": text + "\n# paperlens fuzz: an edit\n"}]})
            opened.append((uri, text))
        self.opened = len(opened)
        for path, _ in files:
            self.send("textDocument/didSave", {"textDocument": {"uri": _uri(path)}})
        self.phase = "diagnostics"
        self.last_message = time.monotonic()
        uris = {uri for uri, _ in opened}
        settled = lambda: (uris <= set(self.published) and not self.outbox) or time.monotonic() - self.last_message > 1.0
        yield from self.wait("diagnostics", settled, deadline)
        self.phase = "hover"
        if opened:
            uri, text = opened[0]
            lines = text.splitlines() or [""]
            line = next((i for i, l in enumerate(lines[:200]) if re.search(r"\d", l)), 0)
            position = {"line": line, "character": min(len(lines[line]) if lines else 0, 4)}
        else:
            uri, position = _uri(self.root / "x.py"), {"line": 0, "character": 0}
        ident = self.send("textDocument/hover", {"textDocument": {"uri": uri}, "position": position}, request=True)
        yield from self.wait("a hover", lambda: ident in self.responses, deadline + 5)
        self.phase = "shutdown"
        ident = self.send("shutdown", None, request=True)
        yield from self.wait("shutdown", lambda: ident in self.responses, deadline + 10)
        self.send("exit", None)
        self.phase = "exit"
        end = time.monotonic() + 5
        while not self.reaped():
            if time.monotonic() > end:
                raise _Stuck("exit (still running 5 s after `exit`)")
            yield

    def poll(self) -> bool:
        self.pump()
        if self.status is None:
            self.reaped()
        try:
            if self.status is not None and self.phase != "exit":
                self.pump()
                raise _Died(self.phase)
            next(self.script)
            return False
        except StopIteration:
            return True
        except _Stuck as err:
            self.timed_out = True
            self.note(f"no answer to {err}")
            self.kill()
            return True
        except _Died as err:
            self.note(f"the server died during {err} (exit {self.status})")
            return True

    def result(self) -> Outcome:
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        outcome = self.finish(self.case)
        stderr = self.stderr_path.read_bytes()[-200_000:].decode(errors="replace")
        if outcome.cls == "hang":  # what it was asked and did not answer
            outcome.failures[0] = ("hang", outcome.key, "; ".join([*self.problems, outcome.summary]))
        seen = {f[1] for f in outcome.failures}

        def add(key: tuple[str, str], summary: str) -> None:
            if key not in seen:
                seen.add(key)
                outcome.failures.append(("internal", key, summary[:300]))

        for kind, frame, line in parse_tracebacks(stderr):
            add((kind, frame), line)
        logged = set()  # pygls passes the handler's exception on without its traceback: its type, at least
        for match in re.finditer(r"(?m)^.* ERROR [\w.]+: internal error \((\w+)\): (\w+)\((['\"])([\w.]+)(.*)$", stderr):
            logged.add(match[4])
            add((match[4], f"(no traceback: {match[1]})"), (match[4] + match[5]).rstrip("')\"")[:300])
        for problem in self.problems:
            if problem.startswith(("internal error answer", "window/", "the server died", "a frame")):
                inner = re.search(r"(\w+(?:Error|Exception)\b)", problem)
                if inner and inner.group(1) in logged:
                    continue
                add(((inner.group(1) if inner else re.sub(r"\d+", "N", problem)[:60]), f"(server, during {self.problem_phase.get(problem, '?')})"), problem)
        if self.status not in (0, None) and outcome.cls != "hang":
            add((f"exit {self.status}", "(server)"), f"the server exited with {self.status}")
        outcome.notes = (f"{getattr(self, 'opened', 0)} file(s) opened, diagnostics for {len(self.published)}, "
                         f"{len(self.responses)} answer(s)")
        workspace = self.workspace or (self.folder / self.case.target)
        outcome.reproducer = _display([sys.executable, str(Path(__file__).resolve()), "--replay-server", str(workspace)])
        return outcome


# --------------------------------------------------------------------------------- the run


def _keep(outcome: Outcome, job: Job, keep: Path, rebuild) -> None:
    """Move the failing case under `keep` (rebuilt there when it cannot be moved) with case.txt."""
    dest = keep / job.folder.name
    _remove(dest)
    keep.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(job.folder, dest)
    except OSError:
        rebuild(dest)
        shutil.copytree(job.folder / ".fuzz", dest / ".fuzz", ignore=shutil.ignore_patterns("cache"), dirs_exist_ok=True)
        _remove(job.folder)
    outcome.kept = dest
    shutil.rmtree(dest / ".fuzz" / "cache", ignore_errors=True)
    outcome.reproducer = outcome.reproducer.replace(str(job.folder), str(dest))
    case = outcome.case
    (dest / "case.txt").write_text(
        f"{job.folder.name}: {outcome.cls} ({outcome.summary})\n"
        f"seed {case.seed}; mutation {case.mutation}: {case.detail}\n"
        f"exit {outcome.exit}, {outcome.seconds:.1f} s, peak {outcome.peak_mb:.0f} MB\n"
        + "".join(f"failure: [{cls}] {key[0]} at {key[1]}: {said}\n" for cls, key, said in outcome.failures)
        + f"reproduce: PAPERLENS_DEBUG=1 {outcome.reproducer}\n\nstderr (end):\n{outcome.stderr_tail}\n"
    )


def run_jobs(jobs: list[Job], parallel: int, on_done) -> None:
    pending, running = list(jobs), []
    try:
        while pending or running:
            while pending and len(running) < parallel:
                job = pending.pop(0)
                job.start()
                running.append(job)
            for job in list(running):
                if job.poll():
                    running.remove(job)
                    on_done(job)
            time.sleep(0.005)
    finally:
        for job in running:
            job.kill(dump=False)


def _row(kind: str, outcomes: list[Outcome]) -> str:
    counts = Counter(o.cls for o in outcomes)
    exits = Counter(o.exit for o in outcomes if o.cls == "ok")
    slow = max(outcomes, key=lambda o: o.seconds)
    big = max(outcomes, key=lambda o: o.peak_mb)
    ok = f"{counts['ok']} ({'/'.join(str(exits[e]) for e in OK_EXITS)})"
    slowest = f"{slow.seconds:5.1f} s {slow.name} ({slow.case.mutation})"
    return (f"{kind:10} {len(outcomes):>5}  {ok:>14} {counts['internal']:>8} {counts['hang']:>5} {counts['memory']:>6}   "
            f"{slowest:48} {big.peak_mb:5.0f} MB {big.name} ({big.case.mutation})")


def report(outcomes: dict[str, list[Outcome]], seed: int) -> None:
    print(f"{'kind':10} {'cases':>5}  {'ok (0/1/2)':>14} {'internal':>8} {'hang':>5} {'memory':>6}   {'slowest':48} largest peak")
    for kind, done in outcomes.items():
        if done:
            print(_row(kind, done))
    # Hangs sampled at different depths of the same work are one: a hang whose stack holds another
    # hang's place counts under the outermost such place.
    where_of = lambda kind: "server" if kind == "server" else "cli"
    hang_places = {(where_of(kind), o.key[1]) for kind, done in outcomes.items() for o in done if o.cls == "hang"}

    def place(kind: str, outcome: Outcome, key: tuple[str, str]) -> tuple[str, str]:
        if key[0] != "hang":
            return key
        return ("hang", next((f for f in reversed(outcome.hang_stack) if (where_of(kind), f) in hang_places), key[1]))

    failures: dict[tuple[str, str, str, str], list[tuple[Outcome, str]]] = {}
    for kind, done in outcomes.items():
        for outcome in done:
            for cls, key, summary in outcome.failures:
                failures.setdefault((cls, where_of(kind), *place(kind, outcome, key)), []).append((outcome, summary))
    print(f"\ndistinct failures: {len(failures)}")
    ordered = sorted(failures.items(), key=lambda item: (CLASSES.index(item[0][0]), item[0][1], item[0][2:]))
    for number, ((cls, where, kind, frame), cases) in enumerate(ordered, 1):
        first, said = cases[0]
        mutations = Counter(f"{o.case.kind}:{o.case.mutation}" for o, _ in cases)
        print(f"\n{number}. [{cls}] {kind} at {frame}" + (" (language server)" if where == "server" else ""))
        print(f"   {len(cases)} case(s): " + ", ".join(f"{m} x{n}" for m, n in mutations.most_common()))
        print(f"   e.g. {first.name}: {first.case.mutation}: {first.case.detail[:200]} (seed {first.case.seed})")
        print(f"   says: {said[:300]}")
        print(f"   reproduce: {'PAPERLENS_DEBUG=1 ' if where == 'cli' else ''}{first.reproducer}")
        if first.kept is None:
            server = " --server" if where == "server" else ""
            print(f"   (not kept: rebuild with --seed {seed} --kinds {first.case.kind} --only {first.case.index}{server} --keep DIR)")


def replay_server(folder: Path, args: argparse.Namespace) -> int:
    """One server session on an existing workspace (a kept case's): what --server did to it."""
    scratch = Path(tempfile.mkdtemp(prefix="paperlens-fuzz-replay-"))
    case = Case("server", 0, seed=str(folder), mutation="replay", detail=str(folder))
    job = ServerJob(scratch, lambda: case, args, workspace=folder)
    done: list[Outcome] = []
    run_jobs([job], 1, lambda j: done.append(j.result()))
    outcome = done[0]
    print(f"{folder}: {outcome.cls} ({outcome.summary or outcome.notes}); {outcome.seconds:.1f} s, peak {outcome.peak_mb:.0f} MB")
    if outcome.cls != "ok":
        print(f"{outcome.key[0]} at {outcome.key[1]}\n\nserver log (end):\n{outcome.stderr_tail}")
    _remove(scratch)
    return 0 if outcome.cls == "ok" else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=15, help="picks the real seeds and every mutation (default 15)")
    parser.add_argument("--cases", type=int, default=30, help="cases per kind (default 30)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated, of latex,pdf,workspace")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per case before it is a hang (default 20)")
    parser.add_argument("--memory-mb", type=int, default=2048, help="the address-space limit per process (default 2048)")
    parser.add_argument("--peak-mb", type=float, default=500.0, help="a peak RSS above this is a memory failure (default 500)")
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2: this machine has 2 cores)")
    parser.add_argument("--keep", type=Path, help="keep each failing input under this folder")
    parser.add_argument("--server", action="store_true", help="also run the workspace inputs through `paperlens serve`")
    parser.add_argument("--only", type=int, nargs="*", help="run only these case indices")
    parser.add_argument("--data", type=Path, default=SHARED_DATA, help="the shared data (default ../shared/data)")
    parser.add_argument("--verbose", action="store_true", help="one line per case, not only per failing case")
    parser.add_argument("--replay-server", type=Path, metavar="DIR", help="one server session on DIR (a kept workspace), then stop")
    args = parser.parse_args()
    if args.replay_server:
        return replay_server(args.replay_server, args)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = set(kinds) - set(KINDS)
    if unknown:
        parser.error(f"unknown kind(s): {', '.join(sorted(unknown))}")
    seeds = choose_seeds(random.Random(args.seed), args.data)
    indices = args.only if args.only is not None else list(range(args.cases))
    print(f"machine: {machine()}")
    print(f"paperlens: {REPO} ({_display([sys.executable, '-m', 'paperlens.pipeline.cli'])})")
    print(f"seed {args.seed}; {len(indices)} case(s) per kind ({', '.join(kinds)}{', + server' if args.server else ''}); "
          f"timeout {args.timeout:g} s; memory limit {args.memory_mb} MB, peak bound {args.peak_mb:g} MB; {args.jobs} at once")
    print("seeds: " + "; ".join(f"{kind}: " + ", ".join(_seed_name(p) if isinstance(p, Path) else p[0] for p in getattr(seeds, kind)) for kind in KINDS))
    if os.geteuid() == 0:
        print("running as root: each case runs without root's read and search overrides (setpriv)" if _AS_A_USER
              else "running as root without setpriv: chmod 000 does not stop a read, so the `unreadable` mutations test nothing here")
    print()
    sys.stdout.flush()

    scratch = Path(tempfile.mkdtemp(prefix="paperlens-fuzz-"))
    outcomes: dict[str, list[Outcome]] = {kind: [] for kind in (*kinds, *(["server"] if args.server and "workspace" in kinds else []))}
    jobs: list[Job] = []

    def maker(kind: str, index: int, folder: Path):
        return lambda: build(kind, index, args.seed, seeds, folder)

    for index in indices:
        for kind in kinds:
            folder = scratch / f"{kind}-{index:04d}"
            jobs.append(CliJob(folder, maker(kind, index, folder), args))
            if kind == "workspace" and args.server:
                server_folder = scratch / f"server-{index:04d}"
                jobs.append(ServerJob(server_folder, maker(kind, index, server_folder), args))

    def done(job: Job) -> None:
        outcome = job.result()
        outcome.name = job.folder.name
        kind = "server" if isinstance(job, ServerJob) else outcome.case.kind
        outcomes[kind].append(outcome)
        if outcome.cls != "ok" and args.keep:
            _keep(outcome, job, args.keep, lambda dest: build(outcome.case.kind, outcome.case.index, args.seed, seeds, dest))
        else:
            _remove(job.folder)
        if outcome.cls != "ok" or args.verbose:
            print(f"  {job.folder.name} {outcome.case.mutation}: {outcome.cls} (exit {outcome.exit}, {outcome.seconds:.1f} s, "
                  f"{outcome.peak_mb:.0f} MB)" + "".join(f"; [{c}] {k[0]} at {k[1]}" for c, k, _ in outcome.failures), flush=True)

    started = time.monotonic()
    try:
        run_jobs(jobs, args.jobs, done)
    finally:
        _remove(scratch)
    elapsed = time.monotonic() - started
    print()
    report(outcomes, args.seed)
    failing = sum(o.cls != "ok" for done_ in outcomes.values() for o in done_)
    total = sum(len(done_) for done_ in outcomes.values())
    print(f"\n{total} case(s) in {elapsed:.0f} s; {failing} failing" + (f"; kept under {args.keep}" if args.keep and failing else ""))
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())

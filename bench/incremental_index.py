"""Re-indexing a file after an edit: the full read (`index_source`, as the server does it today) against
the incremental one (`index_edit`), each followed by the check the server runs (`check_open_file`,
with the equation checks), on the 2,000-line file of bench/server.py's workspace (500 files; the paper
is shared/data/papers-latex/Diff-Transformer).

Edits, each toggled back and forth (every text is new to the index, as in an editor):
  constant   one character of a module constant that later code reads (WEIGHT_DECAY = 0.06 ⇄ 0.05,
             the edit of bench/server.py)
  number     one character of a number in a function (`math.exp(-0.3 * depth)` ⇄ -0.4, lambda_init_fn)
  line       one line of a method replaced (same line count)
  insert     one line inserted in a method, then deleted (every later line moves)
  anchor     the `Eq. (2)` of a comment changed (2 ⇄ 3)

Like the server, the process freezes what it loaded (gc.freeze() after reading the paper and indexing
the workspace); the collector runs as usual during the edits, and its pauses count.

Figures: per edit, p50 / p95 / max in ms of the index alone and of index + check; each result of the
incremental read is compared with the full one (a mismatch is a failure, exit status 1).

Usage: python bench/incremental_index.py [--edits 200] [--files 500]
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from machine import machine

from paperlens.pipeline.check import WorkspaceContext, check_open_file, paper_facts
from paperlens.pipeline.code import index_document, index_edit, index_source, index_workspace
from paperlens.pipeline.code.incremental import incremental_enabled
from paperlens.pipeline.code.python import parse_module
from paperlens.pipeline.ingest import read_paper
from paperlens.schemas import CodeIndex, DecisionsFile

TARGET_P95_MS = 30.0


def _server_bench():
    """bench/server.py, for its workspace generator."""
    spec = importlib.util.spec_from_file_location("paperlens_bench_server", BENCH / "server.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _toggle(text: str, line: int, old: str, new: str) -> tuple[str, str]:
    lines = text.split("\n")
    assert old in lines[line], (line, old, lines[line])
    lines[line] = lines[line].replace(old, new, 1)
    return text, "\n".join(lines)


def _edits(text: str) -> dict[str, tuple[str, str]]:
    """Each edit as the two texts it toggles between."""
    lines = text.split("\n")
    constant = lines.index("WEIGHT_DECAY = 0.06")
    number = next(i for i, line in enumerate(lines) if "math.exp(-0.3 * depth)" in line)
    method = next(i for i, line in enumerate(lines) if "self.w1 = nn.Linear(dim, hidden, bias=bias)" in line)
    anchor = next(i for i, line in enumerate(lines) if line.strip().startswith("# Eq. (2)"))
    inserted = "\n".join([*lines[: method + 1], "        self.drop = nn.Dropout(0.1)", *lines[method + 1 :]])
    return {
        "constant": _toggle(text, constant, "0.06", "0.05"),
        "number": _toggle(text, number, "-0.3", "-0.4"),
        "line": _toggle(text, method, "nn.Linear(dim, hidden, bias=bias)", "nn.Linear(dim, 2 * hidden, bias=True)"),
        "insert": (text, inserted),
        "anchor": _toggle(text, anchor, "Eq. (2)", "Eq. (3)"),
    }


def _percentiles(times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{statistics.median(ordered):6.2f} {p95:6.2f} {ordered[-1]:6.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edits", type=int, default=200, help="edits per kind and reader")
    parser.add_argument("--files", type=int, default=500)
    args = parser.parse_args()
    server = _server_bench()
    if not server.PAPER.exists():
        print(f"the paper is missing: {server.PAPER}", file=sys.stderr)
        return 1
    print(f"machine: {machine()}")
    print(f"incremental reading enabled: {incremental_enabled()}")
    with tempfile.TemporaryDirectory(prefix="paperlens-incremental-") as folder:
        root = Path(folder)
        workspace = server.build_workspace(root, args.files, 2000, server.PAPER)
        path = server.BIG_FILE
        spec = read_paper(server.PAPER)
        facts = paper_facts(spec, DecisionsFile())
        index = index_workspace(root)
        context = WorkspaceContext.of(index)
        text = workspace.big_text
        print(f"workspace: {workspace.files} Python files, {workspace.lines} lines; edited: {path}")
        gc.collect()
        gc.freeze()  # as the server does once the workspace is read

        def check(file_index, source):
            return check_open_file(root, spec, facts, index or CodeIndex(root=str(root)), context, file_index, source)

        failures = 0
        collections = [0]  # full collections (generation 2) during the timed edits

        def count(phase: str, info: dict) -> None:
            collections[0] += phase == "start" and info["generation"] == 2

        gc.callbacks.append(count)
        header = f"{'index p50    p95    max':>24}   {'index+check p50    p95    max':>30}  full GCs"
        print(f"\n{'edit':9} {'reader':12} {header}")
        for kind, texts in _edits(text).items():
            for reader in ("full", "incremental"):
                # The document as opened: then every edit is read as its reader reads it.
                previous_index = index_source(path, texts[0]) if reader == "full" else index_document(path, texts[0])
                previous_source = texts[0]
                indexing, total = [], []
                collections[0] = 0
                for step in range(args.edits + 10):
                    source = texts[(step + 1) % 2]
                    parse_module.cache_clear()  # a text the editor just made: never parsed before
                    started = time.perf_counter()
                    if reader == "full":
                        file_index = index_source(path, source)
                    else:
                        file_index = index_edit(previous_index, previous_source, source)
                    indexed = time.perf_counter()
                    check(file_index, source)
                    done = time.perf_counter()
                    if step >= 10:  # warm-up left out
                        indexing.append((indexed - started) * 1000)
                        total.append((done - started) * 1000)
                    else:
                        collections[0] = 0
                    previous_index, previous_source = file_index, source
                figures = f"{_percentiles(indexing):>24}   {_percentiles(total):>30}  {collections[0]:8}"
                print(f"{kind:9} {reader:12} {figures}")
                if reader == "incremental":
                    for source in (texts[1], texts[0]):  # the last two, compared with a full read
                        file_index = index_edit(previous_index, previous_source, source)
                        if file_index != index_source(path, source):
                            failures += 1
                            print(f"  MISMATCH: the incremental index of the {kind} edit differs from the full one")
                        previous_index, previous_source = file_index, source
        print(f"\ntarget: index + check p95 < {TARGET_P95_MS:.0f} ms (incremental)")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())

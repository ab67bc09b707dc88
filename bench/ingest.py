"""Paper ingestion benchmark: paperlens against a baseline, side by side in one process.

- PDF: `read_paper` (reader + extraction, no cache) against bare PyMuPDF `page.get_text("dict")`
  over the same pages. Target: at most 2x.
- LaTeX: `read_paper` (no cache) per 100 KB of source, against pylatexenc 2.11 building its node
  tree of the same files. Target: under 300 ms per 100 KB.
- Re-open of a cached paper. Target: under 50 ms.
- Peak memory (tracemalloc) of one uncached read.
- Agreement of the PDF reading with the LaTeX reading of the same documents.

Usage: python bench/ingest.py [--repeat N] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pymupdf
from pylatexenc.latexwalker import LatexWalker

from paperlens.pipeline.ingest import read_paper
from paperlens.pipeline.ingest.agreement import compare_readings
from paperlens.pipeline.ingest.pdf import TEXT_FLAGS
from machine import machine  # bench/machine.py (scripts here run with bench/ on the path)

REPO = Path(__file__).resolve().parents[1]


def median_seconds(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bare_get_text_dict(path: Path, flags: int | None = None) -> None:
    with pymupdf.open(path) as document:
        for page in document:
            page.get_text("dict", flags=flags)


def pylatexenc_parse(files: list[Path]) -> None:
    for file in files:
        LatexWalker(file.read_text(encoding="utf-8", errors="replace"), tolerant_parsing=True).get_latex_nodes()


def peak_memory_mb(action: Callable[[], object]) -> float:
    tracemalloc.start()
    action()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1e6


_RSS_PROBE = """
import re, sys
from pathlib import Path
import pymupdf
from pylatexenc.latexwalker import LatexWalker
from paperlens.pipeline.ingest import read_paper
path, what = Path(sys.argv[1]), sys.argv[2]
if what == "paperlens":
    read_paper(path, use_cache=False)
elif path.suffix == ".pdf":
    with pymupdf.open(path) as document:
        for page in document:
            page.get_text("dict")
else:
    LatexWalker(path.read_text(encoding="utf-8", errors="replace"), tolerant_parsing=True).get_latex_nodes()
# VmHWM, not ru_maxrss: ru_maxrss survives exec and would report the parent's peak.
print(int(re.search(r"VmHWM:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1)) / 1024)
"""


def peak_rss_mb(path: Path, what: str) -> float:
    """Peak resident set of a fresh process (same imports either way) reading `path` once."""
    out = subprocess.run([sys.executable, "-c", _RSS_PROBE, str(path), what], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def machine_and_pymupdf() -> str:
    return f"{machine()} · PyMuPDF {pymupdf.__version__}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("PAPERLENS_SHARED_DATA", REPO.parent / "shared" / "data")))
    args = parser.parse_args()
    os.environ["PAPERLENS_CACHE_DIR"] = tempfile.mkdtemp(prefix="paperlens-bench-")
    pdfs = sorted((args.data / "papers-pdf").glob("*/*.pdf")) + [REPO / "examples" / "paper" / "paper.pdf"]
    latex_mains = sorted((args.data / "papers-latex").glob("*/paper2code_paper.tex")) + [
        args.data / "papers-pdf" / "label-smoothing-report" / "article.tex",
        args.data / "papers-pdf" / "variational-sparse-coding-report" / "draft.tex",
        REPO / "examples" / "paper" / "main.tex",
    ]
    print(f"machine: {machine_and_pymupdf()}")
    print(f"median of {args.repeat} runs each\n")

    print("PDF: paperlens read (uncached, with extraction) vs bare page.get_text('dict')  [target ratio <= 2.0]")
    print("  (base: default flags, images included; same-flags: the reader's own flags, images left out)")
    print(f"  {'document':42s} {'pages':>5s} {'ours ms/p':>10s} {'base ms/p':>10s} {'ratio':>6s} {'same-flags ms/p':>16s} {'ratio':>6s}")
    pdf_ratios, same_flag_ratios = [], []
    for pdf in pdfs:
        pages = pymupdf.open(pdf).page_count
        ours = median_seconds(lambda: read_paper(pdf, use_cache=False), args.repeat)
        base = median_seconds(lambda: bare_get_text_dict(pdf), args.repeat)
        same = median_seconds(lambda: bare_get_text_dict(pdf, TEXT_FLAGS), args.repeat)
        pdf_ratios.append(ours / base)
        same_flag_ratios.append(ours / same)
        print(
            f"  {pdf.parent.name + '/' + pdf.name:42s} {pages:5d} {ours / pages * 1e3:10.2f} {base / pages * 1e3:10.2f} "
            f"{ours / base:6.2f} {same / pages * 1e3:16.2f} {ours / same:6.2f}"
        )
    print(
        f"  overall: median ratio {statistics.median(pdf_ratios):.2f} (worst {max(pdf_ratios):.2f}); "
        f"against the same flags {statistics.median(same_flag_ratios):.2f} (worst {max(same_flag_ratios):.2f})\n"
    )

    print("LaTeX: paperlens read (uncached) vs pylatexenc node tree, per 100 KB  [target < 300 ms/100 KB]")
    print(f"  {'paper':34s} {'KB':>5s} {'ours ms/100KB':>14s} {'pylatexenc':>11s} {'ratio':>6s}")
    latex_rates = []
    for main_file in latex_mains:
        spec = read_paper(main_file, use_cache=False)
        files = [Path(spec.root) / rel for rel in spec.files]
        size = sum(f.stat().st_size for f in files)
        ours = median_seconds(lambda: read_paper(main_file, use_cache=False), args.repeat)
        base = median_seconds(lambda: pylatexenc_parse(files), max(1, args.repeat // 2))
        rate = ours / (size / 1e5) * 1e3
        latex_rates.append(rate)
        print(f"  {main_file.parent.name:34s} {size / 1e3:5.0f} {rate:14.1f} {base / (size / 1e5) * 1e3:11.1f} {ours / base:6.2f}")
    print(f"  overall: median {statistics.median(latex_rates):.1f} ms/100 KB, worst {max(latex_rates):.1f}\n")

    print("Cached re-open vs uncached read  [target < 50 ms]")
    for path in [latex_mains[0], *pdfs]:
        read_paper(path)  # warm the cache
        cached = median_seconds(lambda: read_paper(path), args.repeat)
        uncached = median_seconds(lambda: read_paper(path, use_cache=False), args.repeat)
        print(f"  {path.parent.name + '/' + path.name:50s} cached {cached * 1e3:6.1f} ms   uncached {uncached * 1e3:7.1f} ms")
    print()

    largest_pdf = max(pdfs, key=lambda p: p.stat().st_size)
    largest_tex = max(latex_mains, key=lambda p: p.stat().st_size)
    print("Peak memory of one uncached read (tracemalloc, Python allocations)")
    for path, label in ((largest_pdf, "paperlens"), (largest_tex, "paperlens")):
        print(f"  {label} {path.parent.name + '/' + path.name:50s} {peak_memory_mb(lambda: read_paper(path, use_cache=False)):7.1f} MB")
    print(f"  baseline get_text('dict') {largest_pdf.parent.name + '/' + largest_pdf.name:34s} {peak_memory_mb(lambda: bare_get_text_dict(largest_pdf)):7.1f} MB")
    print(f"  baseline pylatexenc {largest_tex.parent.name + '/' + largest_tex.name:40s} {peak_memory_mb(lambda: pylatexenc_parse([largest_tex])):7.1f} MB")
    print("Peak resident memory of a fresh process reading once (native allocations included; same imports)")
    for path in (largest_pdf, largest_tex):
        name = path.parent.name + "/" + path.name
        baseline = "get_text('dict')" if path.suffix == ".pdf" else "pylatexenc"
        print(f"  {name:50s} paperlens {peak_rss_mb(path, 'paperlens'):6.1f} MB   {baseline} {peak_rss_mb(path, 'baseline'):6.1f} MB")
    print()

    print("PDF reading vs LaTeX reading of the same document")
    pairs = [
        (args.data / "papers-pdf" / "label-smoothing-report" / "article.tex", args.data / "papers-pdf" / "label-smoothing-report" / "article.pdf"),
        (args.data / "papers-pdf" / "variational-sparse-coding-report" / "draft.tex", args.data / "papers-pdf" / "variational-sparse-coding-report" / "draft.pdf"),
        (REPO / "examples" / "paper" / "main.tex", REPO / "examples" / "paper" / "paper.pdf"),
    ]
    for tex, pdf in pairs:
        agreement = compare_readings(read_paper(tex), read_paper(pdf))
        print(
            f"  {tex.parent.name:34s} equations: LaTeX {len(agreement.reference_equations)}, PDF {len(agreement.other_equations)}, "
            f"recall {agreement.equation_recall:.0%}, precision {agreement.equation_precision:.0%} | "
            f"values: LaTeX {len(agreement.reference_values)}, PDF {len(agreement.other_values)}, "
            f"recall {agreement.value_recall:.0%}, precision {agreement.value_precision:.0%}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Precision and recall of `paperlens check` per finding kind over the fixture cases of
tests/check_cases.py (numeric, component, equation-level, unstated settings, look-alikes).

Usage: python bench/check_fixtures.py
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from paperlens.pipeline.check import check  # noqa: E402
from paperlens.pipeline.code import index_workspace  # noqa: E402
from paperlens.pipeline.ingest import read_paper  # noqa: E402
from paperlens.schemas import DecisionsFile  # noqa: E402
from tests.check_cases import CASES, write_case  # noqa: E402


def main() -> int:
    os.environ["PAPERLENS_CACHE_DIR"] = tempfile.mkdtemp(prefix="paperlens-bench-")
    true_positives, false_positives, false_negatives = Counter(), Counter(), Counter()
    for case in CASES:
        folder = Path(tempfile.mkdtemp(prefix="paperlens-case-"))
        workspace = write_case(folder, case)
        report = check(workspace, read_paper(folder / "paper"), index_workspace(workspace), DecisionsFile())
        found = {(f.kind, f.setting) for f in report.findings if f.kind != "unimplemented"}
        for kind, _ in found & case.expected:
            true_positives[kind] += 1
        for kind, setting in found - case.expected:
            false_positives[kind] += 1
            print(f"  false alarm in '{case.name}': {kind} {setting}")
        for kind, setting in case.expected - found:
            false_negatives[kind] += 1
            print(f"  missed in '{case.name}': {kind} {setting}" + (f" ({case.known_miss})" if case.known_miss else ""))
    silent = sum(1 for case in CASES if not case.expected)
    print(f"\n{len(CASES)} cases ({silent} look-alikes that must stay silent)")
    print(f"  {'kind':12s} {'expected':>8s} {'found':>6s} {'precision':>10s} {'recall':>7s}")
    for kind in ("divergence", "guess"):
        tp, fp, fn = true_positives[kind], false_positives[kind], false_negatives[kind]
        precision = tp / (tp + fp) if tp + fp else 1.0
        recall = tp / (tp + fn) if tp + fn else 1.0
        print(f"  {kind:12s} {tp + fn:8d} {tp + fp:6d} {precision:10.0%} {recall:7.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

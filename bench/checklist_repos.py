"""The reproducibility checklist on the official repository of each paper in ../shared/data/repos:
the table of points × repositories (✓ passed, ✗ failed, – not applicable) and the time per repository.

Usage: python bench/checklist_repos.py [--data ../shared/data] [--show REPO]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from paperlens.pipeline.checklist import checklist, render_text
from machine import machine  # bench/machine.py

REPO = Path(__file__).resolve().parents[1]
MARK = {"passed": "✓", "failed": "✗", "not applicable": "–"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("PAPERLENS_SHARED_DATA", REPO.parent / "shared" / "data")))
    parser.add_argument("--show", action="append", default=[], help="print the whole report of this repository")
    args = parser.parse_args()
    repositories = sorted(p for p in (args.data / "repos").iterdir() if p.is_dir())
    print(f"machine: {machine()}\n")
    header = None
    for repository in repositories:
        started = time.perf_counter()
        report = checklist(repository)
        seconds = time.perf_counter() - started
        if header is None:
            header = [point.id for point in report.points]
            print(f"{'repository':30s} {'framework':10s} " + " ".join(f"{h[:6]:>6s}" for h in header) + "  time s")
        marks = " ".join(f"{MARK[point.status]:>6s}" for point in report.points)
        print(f"{repository.name:30s} {(report.framework or '-'):10s} {marks}  {seconds:6.2f}")
        if repository.name in args.show:
            sys.stdout.write(render_text(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`paperlens check` on SciReplicate dev: each task's LaTeX method snippet as the paper, its reference
code as the workspace (ref.py), and the findings compared with the annotated *mismatched* details.

A divergence finding matches an annotated mismatch when
  (a) the mismatch text names the finding's setting (underscores as spaces) or contains its code or
      paper value as a whole token, or
  (b) the finding's message shares >= 2 content-word stems with the mismatch (stem = first 6
      letters; stop words and annotation boilerplate removed, as in readiness_eval.py).
Chance baseline: the same rule against the divergence findings of the next task (cyclically) of
another paper that has any.

Usage: python bench/check_scireplicate.py [--data ../shared/data] [--examples 8]
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import subprocess
import sys
import tempfile
import textwrap
from collections import Counter
from pathlib import Path

from paperlens.pipeline.check import check, paper_facts
from paperlens.pipeline.code import index_workspace
from paperlens.pipeline.errors import PaperError
from paperlens.pipeline.ingest import read_paper
from paperlens.schemas import DecisionsFile, Finding

sys.path.insert(0, str(Path(__file__).resolve().parent))
from readiness_eval import clean_detail, stems

REPO = Path(__file__).resolve().parents[1]
KINDS = ("divergence", "guess", "unimplemented")


def run_task(task: dict, workdir: Path) -> tuple[list[Finding], list[str], Counter]:
    """Findings of `check` for one task, the problems (paper unreadable, code only partly read) and
    what there was to compare: value sites and components in the code, settings stated in the paper."""
    for old in workdir.iterdir():
        old.unlink()
    latex = task["latex_code"]
    body = (
        latex
        if "\\begin{document}" in latex
        else f"\\documentclass{{article}}\n\\begin{{document}}\n{latex}\n\\end{{document}}\n"
    )
    paper = workdir / "paper.tex"
    paper.write_text(body, encoding="utf-8")
    (workdir / "ref.py").write_text(
        textwrap.dedent(task["ReferenceCode_With_Comments"]), encoding="utf-8"
    )
    try:
        spec = read_paper(paper, use_cache=False)
    except PaperError as error:
        return [], [f"paper: {error}"], Counter()
    index = index_workspace(workdir, include=["ref.py"])
    facts = paper_facts(spec, DecisionsFile())
    report = check(workdir, spec, index, DecisionsFile(), facts)
    sizes = Counter(
        code_values=sum(len(f.values) for f in index.files),
        code_components=sum(len(f.components) for f in index.files),
        paper_settings=len(facts.facts),
        paper_components=sum(len(v) for v in facts.used.values()),
    )
    return report.findings, report.problems, sizes


def matches(finding: Finding, mismatch: str) -> bool:
    text = mismatch.lower()
    if finding.setting and finding.setting.replace("_", " ").lower() in text:
        return True
    for value in (finding.code_value, finding.paper_value):
        if value and re.search(rf"(?<![\w.]){re.escape(value.lower())}(?![\w.])", text):
            return True
    return len(stems(finding.message) & stems(mismatch)) >= 2


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--examples", type=int, default=8)
    args = parser.parse_args()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    print(
        f"machine: {platform.node()} {platform.machine()} Python {platform.python_version()}; commit {commit}"
    )

    papers = json.loads(
        (args.data / "scireplicate-dev.json").read_text(encoding="utf-8")
    )
    tasks = []
    with tempfile.TemporaryDirectory(prefix="paperlens-checkscirep-") as tmp:
        for paper in papers:
            for task in paper["task_details"]:
                findings, problems, sizes = run_task(task, Path(tmp))
                mismatches = [
                    clean_detail(d)
                    for d in task["Missing_Mismatched_details"]["Mismatched_details"]
                ]
                mismatches = [m for m in mismatches if m and m.lower() != "none"]
                tasks.append(
                    {
                        "paper": paper["paper_id"],
                        "task": task["task_id"],
                        "findings": findings,
                        "problems": problems,
                        "mismatches": mismatches,
                        "sizes": sizes,
                    }
                )

    sizes = sum((t["sizes"] for t in tasks), Counter())
    print(
        "what there is to compare (all tasks): "
        + ", ".join(f"{k} {v}" for k, v in sizes.items())
        + f"; tasks with a paper setting and a code value both: {sum(bool(t['sizes']['paper_settings'] and t['sizes']['code_values']) for t in tasks)}"
    )
    kinds = Counter(f.kind for t in tasks for f in t["findings"])
    with_any = Counter(k for t in tasks for k in {f.kind for f in t["findings"]})
    print(
        f"tasks: {len(tasks)} (from {len(papers)} papers); with problems: {sum(bool(t['problems']) for t in tasks)}"
    )
    print(
        f"annotated mismatched details: {sum(len(t['mismatches']) for t in tasks)} in {sum(bool(t['mismatches']) for t in tasks)} tasks"
    )
    for kind in KINDS:
        per_task = [sum(f.kind == kind for f in t["findings"]) for t in tasks]
        print(
            f"  {kind:13s} findings: {kinds[kind]:3d} total, in {with_any[kind]:2d} tasks, max {max(per_task)} per task"
        )
    print(
        f"  open divergence findings by setting: {dict(Counter(f.setting or f.component or '-' for t in tasks for f in t['findings'] if f.kind == 'divergence'))}"
    )

    def divergences(t: dict) -> list[Finding]:
        return [f for f in t["findings"] if f.kind == "divergence"]

    def other_task(i: int) -> dict | None:
        for step in range(1, len(tasks)):
            other = tasks[(i + step) % len(tasks)]
            if other["paper"] != tasks[i]["paper"] and divergences(other):
                return other
        return None

    matched = chance = 0
    for i, t in enumerate(tasks):
        other = other_task(i)
        for m in t["mismatches"]:
            matched += any(matches(f, m) for f in divergences(t))
            chance += other is not None and any(
                matches(f, m) for f in divergences(other)
            )
    total = sum(len(t["mismatches"]) for t in tasks)
    print(
        f"annotated mismatches matched by a divergence finding of the same task: {matched}/{total}; chance (another paper's task): {chance}/{total}"
    )

    print(
        f"\nexamples of divergence findings (first {args.examples}):"
        + ("" if kinds["divergence"] else " none")
    )
    shown = 0
    for t in tasks:
        for f in divergences(t):
            if shown == args.examples:
                break
            shown += 1
            where = f"{f.code.file}:{f.code.line + 1}" if f.code else "-"
            quote = f.paper[0].quote if f.paper else ""
            print(
                f"- paper {t['paper']} task {t['task']} {where} [{f.setting or f.component}] code={f.code_value} paper={f.paper_value} conf={f.confidence:.2f}"
            )
            print(f"    message: {f.message}")
            print(f"    paper quote: {' '.join(quote.split())[:200]}")
            for m in t["mismatches"]:
                print(
                    f"    annotated mismatch{' (matched)' if matches(f, m) else ''}: {m[:200]}"
                )
    print("\nnon-divergence findings:")
    for t in tasks:
        for f in t["findings"]:
            if f.kind != "divergence":
                print(f"- paper {t['paper']} task {t['task']} {f.kind}: {f.message}")
    problems = [f"task {t['task']}: {p}" for t in tasks for p in t["problems"]]
    if problems:
        print(f"\nproblems ({len(problems)}):")
        for p in problems[:10]:
            print(f"  {p[:200]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`paperlens check` and `paperlens gaps` on the official repository of every paper in
`../shared/data/repos`, judged against the hand labels in `bench/labels/<id>.yaml`.

Per repository: files read, runs found (commands in shell scripts and READMEs), findings by kind and severity, the CLI's wall time (a fresh
process and a cold paper cache, as a user's first run), and how the findings and gaps compare with
the labels. Overall: precision (true findings / labelled findings), precision of errors, the share
of labelled real differences found (a true finding inside a difference's lines), the share of
useful gaps, and the share of the real differences of kind `unstated` (the code sets what the paper
never states) that a useful gap asks for (its label's `asks`). A finding or gap no label covers is
counted as unlabelled and listed, never as true.

Usage: python bench/real_repos.py [--data ../shared/data] [--only ID ...] [--paperlens CMD]
       [--show-unlabelled] [--show-false] [--show-true] [--show-missed]
`--paperlens` runs another build of the CLI (e.g. an older commit's) for a before/after table.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine

REPO = Path(__file__).resolve().parents[1]
LABELS = REPO / "bench" / "labels"


@dataclass
class Outcome:
    repository: str
    seconds: float = 0.0
    crashed: str | None = None
    files: int = 0
    runs: int = 0
    kinds: Counter = field(default_factory=Counter)
    severities: Counter = field(default_factory=Counter)
    true: int = 0
    false: int = 0
    unlabelled: list[str] = field(default_factory=list)
    errors_true: int = 0
    errors_false: int = 0
    differences: int = 0
    differences_found: int = 0
    gaps_useful: int = 0
    gaps_noise: int = 0
    gaps_unlabelled: list[str] = field(default_factory=list)
    # Labelled differences of kind `unstated` (the code sets what the paper never states): a gap of
    # the paper alone can ask for them; a useful gap's label names those it asks (`asks`).
    unstated: int = 0
    unstated_asked: int = 0
    false_alarms: list[str] = field(default_factory=list)
    true_findings: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    # "f computes Eq. (2)": claims of agreement, judged apart (they report no problem).
    agreements_true: int = 0
    agreements_false: int = 0


def _cli(command: list[str], args: list[str], cache: Path) -> tuple[dict | None, str, float]:
    # As a user's machine runs it: with the compiled sources Python keeps (a sandbox that sets
    # PYTHONDONTWRITEBYTECODE would add the compiling of every module to each run).
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PAPERLENS_CACHE_DIR": str(cache)}
    started = time.perf_counter()
    done = subprocess.run([*command, *args], capture_output=True, text=True, env=env, timeout=300)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        return None, done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}", elapsed
    return json.loads(done.stdout), "", elapsed


def _finding_label(finding: dict, labels: list[dict]) -> dict | None:
    # An unimplemented equation has no code side: it is labelled at its place in the paper.
    place = finding.get("code") or (finding.get("paper") or [{}])[0].get("location") or {}
    line = (place.get("line") or 0) + 1
    here = [label for label in labels if label.get("file") == place.get("file") and label.get("line") == line]
    if len(here) > 1:
        here = [label for label in here if label.get("setting") == finding.get("setting")] or here[:1]
    return here[0] if here else None


def _gap_label(gap: dict, labels: list[dict]) -> dict | None:
    same = [label for label in labels if label.get("title") == gap["title"]]
    if len(same) > 1:
        line = gap["evidence"][0]["location"]["line"] + 1 if gap.get("evidence") else None
        same = [label for label in same if label.get("line") == line] or same[:1]
    return same[0] if same else None


def _files_and_runs(root: Path) -> tuple[int, int]:
    """Files read, and runs found (the distinct commands of shell scripts and READMEs that start a
    Python script), by this checkout's reader (the CLI's JSON carries neither)."""
    from paperlens.pipeline.code import index_workspace
    from paperlens.pipeline.code.launchers import commands_of

    index = index_workspace(root)
    runs = {command for file in index.files if file.language in ("shell", "markdown") for command in commands_of(file)}
    return len(index.files), len(runs)


def measure(repository: str, data: Path, command: list[str]) -> Outcome:
    outcome = Outcome(repository)
    root = data / "repos" / repository
    paper = data / "papers-latex" / repository
    labels = yaml.safe_load((LABELS / f"{repository}.yaml").read_text()) if (LABELS / f"{repository}.yaml").exists() else {}
    finding_labels = labels.get("findings") or []
    with tempfile.TemporaryDirectory() as cache:
        report, crashed, outcome.seconds = _cli(command, ["check", str(root), "--paper", str(paper), "--format", "json", "--fail-on", "never"], Path(cache))
        gaps, gaps_crashed, _ = _cli(command, ["gaps", str(paper), "--format", "json"], Path(cache))
    outcome.crashed = crashed or gaps_crashed or None
    outcome.files, outcome.runs = _files_and_runs(root)
    true_lines: list[tuple[str, int]] = []
    for finding in (report or {}).get("findings", []):
        outcome.kinds[finding["kind"]] += 1
        outcome.severities[finding["severity"]] += 1
        label = _finding_label(finding, finding_labels)
        code = finding.get("code") or {}
        where = f"{code.get('file', '(paper)')}:{code.get('line', -1) + 1} {finding['severity']} {finding['kind']} {finding.get('setting')}: {finding['message']}"
        if label is None:
            outcome.unlabelled.append(where)
            continue
        if finding["kind"] == "agreement":
            outcome.agreements_true += label.get("verdict") is True
            outcome.agreements_false += label.get("verdict") is not True
            (outcome.true_findings if label.get("verdict") is True else outcome.false_alarms).append(f"{where}  [{label.get('reason', '')}]")
            continue
        if label.get("verdict") is True:
            outcome.true += 1
            outcome.errors_true += finding["severity"] == "error"
            outcome.true_findings.append(f"{where}  [{label.get('reason', '')}]")
            if code:
                true_lines.append((code["file"], code["line"] + 1))
        else:
            outcome.false += 1
            outcome.errors_false += finding["severity"] == "error"
            outcome.false_alarms.append(f"{where}  [{label.get('reason', '')}]")
    for difference in labels.get("differences") or []:
        outcome.differences += 1
        places = [difference, *(difference.get("also") or [])]  # `also`: other places giving the same difference
        if any(file == place.get("file") and place["lines"][0] <= line <= place["lines"][1] for place in places for file, line in true_lines):
            outcome.differences_found += 1
        else:
            outcome.missed.append(f"{difference['file']}:{difference['lines'][0]} {difference.get('kind')} {difference['setting']}: {difference['description'][:140]}")
    gap_labels = labels.get("gaps") or []
    asked: set[str] = set()  # the differences (by setting) a reported useful gap asks for
    for gap in (gaps or {}).get("gaps", []):
        label = _gap_label(gap, gap_labels)
        if label is None:
            outcome.gaps_unlabelled.append(gap["title"])
        elif label.get("verdict") == "useful":
            outcome.gaps_useful += 1
            asked.update(label.get("asks") or [])
        else:
            outcome.gaps_noise += 1
    for difference in labels.get("differences") or []:
        if difference.get("kind") == "unstated":
            outcome.unstated += 1
            outcome.unstated_asked += difference["setting"] in asked
    return outcome


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "–"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("PAPERLENS_SHARED_DATA", REPO.parent / "shared" / "data")))
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--paperlens", default=f"{shlex.quote(sys.executable)} -m paperlens.pipeline.cli", help="the CLI to run")
    parser.add_argument("--show-unlabelled", action="store_true")
    parser.add_argument("--show-false", action="store_true", help="list every false alarm with its label's reason")
    parser.add_argument("--show-true", action="store_true", help="list every true finding with its label's reason")
    parser.add_argument("--show-missed", action="store_true", help="list every labelled real difference no true finding reports")
    args = parser.parse_args()
    command = shlex.split(args.paperlens)
    repositories = sorted(p.name for p in (args.data / "repos").iterdir() if p.is_dir() and (args.data / "papers-latex" / p.name).is_dir())
    if args.only:
        repositories = [r for r in repositories if r in args.only]
    print(f"machine: {machine()}")
    print(f"paperlens: {args.paperlens}\n")
    header = f"{'repository':30} {'files':>5} {'runs':>4} {'div':>4} {'guess':>5} {'unimp':>5} {'agr':>4} {'err':>4} {'warn':>4} {'info':>4}  {'true':>4} {'false':>5} {'unlab':>5}  {'diffs':>5}  {'gaps u/n/?':>10} {'time s':>7}"
    print(header)
    outcomes = []
    for repository in repositories:
        outcome = measure(repository, args.data, command)
        outcomes.append(outcome)
        k, s = outcome.kinds, outcome.severities
        gaps = f"{outcome.gaps_useful}/{outcome.gaps_noise}/{len(outcome.gaps_unlabelled)}"
        print(
            f"{repository:30} {outcome.files:>5} {outcome.runs:>4} "
            f"{k['divergence']:>4} {k['guess']:>5} {k['unimplemented']:>5} {k['agreement']:>4} {s['error']:>4} {s['warning']:>4} {s['info'] + s['hint']:>4}  "
            f"{outcome.true:>4} {outcome.false:>5} {len(outcome.unlabelled):>5}  {outcome.differences_found:>2}/{outcome.differences:<2}  {gaps:>10} {outcome.seconds:>7.2f}"
            + (f"  CRASH: {outcome.crashed}" if outcome.crashed else "")
        )
    true, false = sum(o.true for o in outcomes), sum(o.false for o in outcomes)
    errors_true, errors_false = sum(o.errors_true for o in outcomes), sum(o.errors_false for o in outcomes)
    useful, noise = sum(o.gaps_useful for o in outcomes), sum(o.gaps_noise for o in outcomes)
    print()
    agreements = sum(o.agreements_true + o.agreements_false for o in outcomes)
    print(f"findings: {sum(sum(o.kinds.values()) for o in outcomes)}, labelled {true + false} (+ {agreements} agreements), unlabelled {sum(len(o.unlabelled) for o in outcomes)}")
    print(f"precision (labelled findings): {_share(true, true + false)}   target >= 90% (agreements apart)")
    print(f"precision of errors:           {_share(errors_true, errors_true + errors_false)}   target >= 97%")
    print(f"real differences found:        {_share(sum(o.differences_found for o in outcomes), sum(o.differences for o in outcomes))}   target >= 50%")
    print(f"agreements with an equation:   {sum(o.agreements_true for o in outcomes)} true, {sum(o.agreements_false for o in outcomes)} false")
    print(f"useful gaps (labelled):        {_share(useful, useful + noise)}   target >= 75%; unlabelled {sum(len(o.gaps_unlabelled) for o in outcomes)}")
    print(f"unstated details asked:        {_share(sum(o.unstated_asked for o in outcomes), sum(o.unstated for o in outcomes))}   "
          "(real differences of kind `unstated` a useful gap asks for)")  # fmt: skip
    print(f"slowest repository:            {max(outcomes, key=lambda o: o.seconds).repository} {max(o.seconds for o in outcomes):.2f} s   target < 2 s")
    print(f"crashes:                       {sum(1 for o in outcomes if o.crashed)}")
    for outcome in outcomes:
        if args.show_unlabelled and (outcome.unlabelled or outcome.gaps_unlabelled):
            print(f"\nunlabelled in {outcome.repository}:")
            for line in outcome.unlabelled:
                print(f"  {line}")
            for title in outcome.gaps_unlabelled:
                print(f"  gap: {title}")
        if args.show_true and outcome.true_findings:
            print(f"\ntrue findings in {outcome.repository}:")
            for line in outcome.true_findings:
                print(f"  {line}")
        if args.show_missed and outcome.missed:
            print(f"\nmissed in {outcome.repository}:")
            for line in outcome.missed:
                print(f"  {line}")
        if args.show_false and outcome.false_alarms:
            print(f"\nfalse alarms in {outcome.repository}:")
            for line in outcome.false_alarms:
                print(f"  {line}")
    return 1 if any(o.crashed for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())

"""What one `paperlens reproduce` of the bundled example costs: time per step, runs and repair
rounds, LLM requests and tokens — with the real local LLM (llama.cpp serving SmolLM2-135M on the
CPU, no answer cache) and, as the baseline in the same run, the same chain without an LLM (plan,
scaffold, pin, one smoke run). The tiny model writes poor code: the figures say what the loop costs,
not how good a large model's modules would be.

Usage: python bench/reproduce_cost.py [--max-rounds 3] [--max-tokens 1536]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from machine import machine  # bench/machine.py (scripts here run with bench/ on the path)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/local_llm.py starts the local server

from paperlens.pipeline.decisions import load_decisions
from paperlens.pipeline.ingest import read_paper
from paperlens.pipeline.llm import LLMClient
from paperlens.pipeline.readiness import assess
from paperlens.pipeline.repo.plan import Paper
from paperlens.pipeline.repo.repair import repairs_used
from paperlens.pipeline.repo.reproduce import reproduce
from paperlens.schemas import SandboxSettings
from tests.local_llm import serve_local_llm

EXAMPLE = ROOT / "examples" / "paper"


def run(label: str, out: Path, client: LLMClient | None, max_rounds: int) -> dict:
    spec = read_paper(EXAMPLE, use_cache=False)
    paper = Paper(spec=spec, readiness=assess(spec), decisions=load_decisions(out), path=str(EXAMPLE))
    started = time.monotonic()
    record = reproduce(paper, out, client=client, sandbox=SandboxSettings(), max_rounds=max_rounds,
                       on_progress=lambda line: print(f"  [{label}] {line}", file=sys.stderr))  # fmt: skip
    seconds = time.monotonic() - started
    generated = sum(g.status == "generated" for g in record.generated)
    return {
        "label": label,
        "seconds": seconds,
        "steps": {s.name: s.seconds for s in record.steps},
        "runs": len(record.rounds),
        "repairs": repairs_used(record.rounds),
        "kept_patches": sum(r.outcome == "patched" for r in record.rounds),
        "generated": f"{generated}/{len(record.generated)}" if record.generated else "-",
        "outcome": record.outcome,
        "reason": record.reason,
        "still_open": record.still_open,
        "files": [(g.path, g.status, g.attempts, (g.problems or [""])[-1][:110]) for g in record.generated],
        "requests": record.usage.requests,
        "tokens": record.usage.prompt_tokens + record.usage.completion_tokens,
        "prompt": record.usage.prompt_tokens,
        "completion": record.usage.completion_tokens,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=1536, help="the longest answer asked of the model")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    results = []
    with tempfile.TemporaryDirectory(prefix="paperlens-reproduce-") as scratch:
        os.environ["PAPERLENS_CACHE_DIR"] = str(Path(scratch) / "cache")  # no answer comes from a cache
        results.append(run("no LLM", Path(scratch) / "baseline", None, args.max_rounds))
        with serve_local_llm() as server:
            client = LLMClient(server.settings(max_output_tokens=args.max_tokens, timeout_seconds=300))
            results.append(run("local LLM", Path(scratch) / "llm", client, args.max_rounds))
    print()
    print(f"{'':12} {'total s':>8} {'plan':>6} {'scaffold':>8} {'generate':>8} {'pin':>6} {'run':>7}  runs  repairs  "
          f"kept  generated  requests  tokens (prompt+completion)  outcome")  # fmt: skip
    for r in results:
        s = r["steps"]
        print(f"{r['label']:12} {r['seconds']:8.1f} {s['plan']:6.2f} {s['scaffold']:8.2f} {s['generate']:8.1f} {s['pin']:6.2f} "
              f"{s['run']:7.1f}  {r['runs']:4}  {r['repairs']:7}  {r['kept_patches']:4}  {r['generated']:>9}  {r['requests']:8}  "
              f"{r['tokens']:6} ({r['prompt']}+{r['completion']})  {r['outcome']}")  # fmt: skip
    baseline, llm = results
    print(f"\nratio total time, local LLM / no LLM: {llm['seconds'] / baseline['seconds']:.1f}")
    for r in results:
        print(f"{r['label']}: {r['reason']}" + "".join(f"; {note}" for note in r["still_open"]))
        for path, status, attempts, problem in r["files"]:
            print(f"  {path}: {status} after {attempts} answer(s) {problem}".rstrip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

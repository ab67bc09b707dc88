"""Smoke-run overhead: the sandbox vs a bare subprocess of the same command, in the same run.

The command is `python3 -c pass`: in the container (the base image's Debian python3), and on the
host as a bare subprocess (/usr/bin/python3 when there is one, the same Debian build; else this
interpreter). Every sandboxed run is a fresh container, timed end to end as a caller sees it
(`run_smoke` called → result returned, including the image look-up and the failures' reading):

  fresh, no pool      the container is created and started when the run is asked for
  pool: created       the next container was created ahead of time, started by the run
  pool: parked        the next container was created and started ahead of time, parked at a gate
                      until the run (the default)

With a pool, the bench waits between runs until the next container is ready (`drain`), as the gap
between two saves does; the container's removal happens after the result, in the background, and
is reported apart. The modes run in alternating blocks so that a busy machine weighs on all alike.
Target: median overhead (sandbox median − bare median) under 100 ms with fresh containers.
Then where the time goes, per mode: the median of each phase (image look-up, taking the parked
container, create, attach, start or the gate's go, the command until its output ends, the wait
for the exit status, inspect, and the background remove).

Usage: python bench/sandbox.py [--runs 30] [--block 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import machine  # bench/machine.py (scripts here run with bench/ on the path)

from paperlens.pipeline import sandbox
from paperlens.pipeline.sandbox import docker_run
from paperlens.schemas.smoke import DEFAULT_SANDBOX_IMAGE, SandboxSettings

TARGET_OVERHEAD_MS = 100.0
COMMAND = ["python3", "-c", "pass"]
MODES = {"fresh, no pool": None, "pool: created": "created", "pool: parked": "started"}
PHASES = ["image", "take", "create", "attach", "start", "go", "run", "wait", "inspect", "remove"]


def host_python() -> str:
    return "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30, help="runs per mode")
    parser.add_argument("--block", type=int, default=5, help="runs of one mode before the next")
    args = parser.parse_args()

    print(f"machine: {machine()}")
    print(f"command: {' '.join(COMMAND)}; {args.runs} runs per mode, in blocks of {args.block}; image {DEFAULT_SANDBOX_IMAGE}\n")
    workspace = Path(tempfile.mkdtemp(prefix="paperlens-bench-sandbox-"))
    workspace.chmod(0o755)
    settings = SandboxSettings(command=COMMAND)
    bare_command = [host_python(), *COMMAND[1:]]
    times: dict[str, list[float]] = {"bare subprocess": [], **{mode: [] for mode in MODES}}
    phases: dict[str, dict[str, list[float]]] = {mode: {phase: [] for phase in PHASES} for mode in MODES}
    try:
        probe = sandbox.run_smoke(workspace, settings)
        if probe.status != "passed":
            print(f"the sandbox does not run: {probe.message}")
            return 1
        done = 0
        while done < args.runs:
            block = min(args.block, args.runs - done)
            for _ in range(block):
                began = time.perf_counter()
                subprocess.run(bare_command, check=True, capture_output=True)
                times["bare subprocess"].append(time.perf_counter() - began)
            for mode, prewarm in MODES.items():
                sandbox.set_prewarm(prewarm)
                sandbox.run_smoke(workspace, settings)  # not timed: fills the pool for this mode
                for _ in range(block):
                    sandbox.drain()
                    began = time.perf_counter()
                    result = sandbox.run_smoke(workspace, settings)
                    elapsed = time.perf_counter() - began
                    if result.status != "passed":
                        print(f"a run failed ({mode}): {result.message}")
                        return 1
                    timings = docker_run.last_timings
                    sandbox.drain()  # the background removal has filled in its time
                    times[mode].append(elapsed)
                    for phase in PHASES:
                        phases[mode][phase].append(timings.get(phase, 0.0))
            done += block
    finally:
        sandbox.set_prewarm("started")
        sandbox.drain()
        shutil.rmtree(workspace, ignore_errors=True)

    bare = statistics.median(times["bare subprocess"]) * 1000
    print(f"{'':24}{'median':>10}{'p95':>10}{'overhead':>11}{'ratio':>8}")
    for name, values in times.items():
        median = statistics.median(values) * 1000
        p95 = percentile(values, 0.95) * 1000
        overhead = "" if name == "bare subprocess" else f"{median - bare:8.1f} ms"
        ratio = "" if name == "bare subprocess" else f"{median / bare:7.1f}x"
        print(f"  {name:22}{median:7.1f} ms{p95:7.1f} ms{overhead:>11}{ratio:>8}")
    default = statistics.median(times["pool: parked"]) * 1000 - bare
    cold = statistics.median(times["fresh, no pool"]) * 1000 - bare
    verdict = "met" if default < TARGET_OVERHEAD_MS else "NOT met"
    print(f"\n  median overhead, fresh container per run: {default:.1f} ms with the parked container (default), "
          f"{cold:.1f} ms without a pool  [target < {TARGET_OVERHEAD_MS:.0f} ms: {verdict}]")

    print("\nwhere the time goes (median ms per phase; remove runs in the background, after the result)")
    print(f"  {'':22}" + "".join(f"{phase:>9}" for phase in PHASES))
    for mode in MODES:
        cells = "".join(f"{statistics.median(phases[mode][phase]) * 1000:9.1f}" for phase in PHASES)
        print(f"  {mode:22}{cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Time from a save in the editor to the smoke run's diagnostic at the failing line.

The real server over stdio (pygls client), the real Docker engine and base image
(scripts/sandbox-engine.sh), the bundled example workspace plus one failing shape test. Beside it,
in the same run, the same pytest command as a bare subprocess on the host: what a run costs with
no editor, no sandbox and no parsing of its output.

    .venv/bin/python bench/smoke_on_save.py [--saves 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp

from machine import machine  # bench/machine.py (scripts here run with bench/ on the path)
from server import Session  # bench/server.py: one server process and its client

REPO = Path(__file__).resolve().parents[1]
FAILING = "import numpy as np\n\n\ndef test_head():\n    assert (np.ones((8, 512)) @ np.ones((256, 10))).shape == (8, 10)\n"
SAVE_DEBOUNCE_SECONDS = 0.5  # server/smoke.py: a save waits this long for the next one


def _workspace(root: Path) -> Path:
    workspace = root / "workspace"
    shutil.copytree(REPO / "examples" / "workspace", workspace)
    shutil.copytree(REPO / "examples" / "paper", root / "paper")
    (workspace / "tests").mkdir()
    (workspace / "tests" / "test_head.py").write_text(FAILING)
    return workspace


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _saves(workspace: Path, count: int) -> list[float]:
    session = Session("paperlens", [sys.executable, "-m", "paperlens.server"], dict(os.environ), workspace)
    await session.start()
    try:
        await session.initialize(workspace, None)
        train = workspace / "train.py"
        session.open(train, train.read_text())
        failing_uri = (workspace / "tests" / "test_head.py").as_uri()
        await asyncio.sleep(3)  # the first indexing and the container started ahead
        seconds = []
        for _ in range(count):
            found = session.expect(lambda p: p.uri == failing_uri and any(d.code == "shape-mismatch" for d in p.diagnostics))
            started = time.perf_counter()
            session.client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=train.as_uri())))
            async with asyncio.timeout(60):
                at, _ = await found
            seconds.append(at - started)
            await asyncio.sleep(0.5)  # the next container is started ahead meanwhile, as between real saves
        return seconds
    finally:
        await session.stop()


def _bare(workspace: Path, count: int) -> list[float]:
    seconds = []
    for _ in range(count):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"], cwd=workspace, capture_output=True)
        seconds.append(time.perf_counter() - started)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--saves", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = _workspace(Path(tmp))
        editor = asyncio.run(_saves(workspace, args.saves))
        bare = _bare(workspace, args.saves)
    print(f"machine: {machine()}")
    print(f"{args.saves} saves of train.py; the failing test is tests/test_head.py (numpy shape mismatch)")
    print(f"{'':44}{'median':>10}{'p95':>10}")
    rows = [
        ("save -> smoke diagnostic (s)", editor),
        ("  of which the save debounce (s)", [SAVE_DEBOUNCE_SECONDS] * len(editor)),
        ("  after the debounce (s)", [s - SAVE_DEBOUNCE_SECONDS for s in editor]),
        ("bare `pytest -x -q` on the host (s)", bare),
    ]
    for label, values in rows:
        print(f"{label:44}{statistics.median(values):10.3f}{_percentile(values, 0.95):10.3f}")
    ratio = statistics.median([s - SAVE_DEBOUNCE_SECONDS for s in editor]) / statistics.median(bare)
    print(f"after the debounce / bare run: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

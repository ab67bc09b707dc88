"""Starting the language server imports none of the heavy libraries that only some requests use."""

from __future__ import annotations

import json
import os
import subprocess
import sys

# The LLM client (openai and its HTTP stack, over a second), the sandbox (docker, requests), image
# rendering (matplotlib, numpy, PIL) and the PDF library: each is imported where it is first used.
HEAVY = ("openai", "httpx2", "docker", "requests", "matplotlib", "numpy", "PIL", "fitz", "pymupdf")

# What `python -m paperlens.server` runs (the package, then its __main__), without serving stdio.
START_THE_SERVER = """
import json, runpy, sys
import paperlens.server.app
paperlens.server.app.main = lambda: None
runpy.run_module("paperlens.server", run_name="__main__", alter_sys=True)
print(json.dumps(sorted(name for name in sys.argv[1:] if name in sys.modules)))
"""


def test_starting_the_server_imports_no_heavy_library():
    result = subprocess.run(
        [sys.executable, "-c", START_THE_SERVER, *HEAVY], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


# What the server asks the sandbox at start: leftovers to reap, then the first container to ready.
START_THE_SANDBOX = """
import json, sys
from pathlib import Path
from paperlens.pipeline.sandbox import prepare, reap_leftovers
from paperlens.schemas import SandboxSettings
reaped, problem = reap_leftovers(), prepare(Path(sys.argv[1]), SandboxSettings())
print(json.dumps([reaped, problem, sorted(name for name in sys.argv[2:] if name in sys.modules)]))
"""


def test_with_no_engine_the_sandbox_at_start_imports_no_docker(tmp_path):
    environment = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}
    result = subprocess.run(
        [sys.executable, "-c", START_THE_SANDBOX, str(tmp_path), *HEAVY],
        capture_output=True, text=True, timeout=120, env=environment, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    reaped, problem, imported = json.loads(result.stdout)
    assert reaped == 0 and "not reachable" in problem and "start the Docker daemon" in problem
    assert imported == []

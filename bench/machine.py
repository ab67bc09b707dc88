"""The machine a benchmark ran on, as every bench script prints it."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{platform.node()} · {cpu} · {os.cpu_count()} cores · Python {platform.python_version()}"

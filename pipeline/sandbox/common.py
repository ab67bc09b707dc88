"""What both kinds of run share: the outcome, the environment, and the loop that watches a run."""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .output import CappedOutput

CANCEL_POLL = 0.05  # seconds between looks at the cancel event
KILL_GRACE = 10.0  # seconds a killed run may take to report its end before it is given up on
# Seconds a run stopped at the time limit has to print where it was (Python's faulthandler dumps its
# stack on SIGABRT) before it is killed: the timeout then points at a line.
DUMP_GRACE = 1.0


@dataclass
class Outcome:
    """What a run did, before its failures are read."""

    exit_code: int | None
    timed_out: bool
    oom_killed: bool
    cancelled: bool
    duration: float
    output: str
    truncated: bool
    image: str | None = None
    timings: dict[str, float] = field(default_factory=dict)  # phase -> seconds (docker runs)
    pooled: bool = False  # the container was made ahead of time


def smoke_env(cpus: float, scratch: str | None) -> dict[str, str]:
    """Variables every smoke run gets: no bytecode or pytest cache written, unbuffered output (so a
    killed run's last lines are not lost), BLAS/OpenMP threads matched to the CPUs allowed, and,
    in the container, home and temp in the scratch area."""
    threads = str(max(1, math.ceil(cpus)))
    env = {
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONFAULTHANDLER": "1",  # SIGABRT at the time limit: the stack of every thread, then the end
        "PYTEST_ADDOPTS": "-p no:cacheprovider",
        "OMP_NUM_THREADS": threads,
        "OPENBLAS_NUM_THREADS": threads,
        "MKL_NUM_THREADS": threads,
        "PAPERLENS_SMOKE": "1",
    }
    if scratch is not None:
        env |= {"HOME": scratch, "TMPDIR": scratch, "XDG_CACHE_HOME": f"{scratch}/.cache", "MPLCONFIGDIR": f"{scratch}/.matplotlib"}
    return env


@dataclass
class Watched:
    end: Any  # what the reader put last (the exit status), None when the run never reported its end
    killed_for: str | None  # "timeout" | "cancel" | None
    ended_at: float


def watch(
    chunks: queue.SimpleQueue,
    output: CappedOutput,
    *,
    deadline: float,
    cancel: threading.Event | None,
    kill: Callable[[], None],
    interrupt: Callable[[], None] | None = None,
) -> Watched:
    """Feeds output from `chunks` (bytes; anything else is the end) in the caller's thread, kills
    the run at the deadline or on cancel, and returns when the reader reports the end. At the
    deadline `interrupt` (when given) asks the run to show where it is, DUMP_GRACE before the kill."""
    killed_for: str | None = None
    kill_at = give_up = math.inf
    while True:
        now = time.monotonic()
        if killed_for is None:
            wait = deadline - now
            if cancel is not None:
                wait = min(wait, CANCEL_POLL)
        else:
            wait = min(CANCEL_POLL, max(0.0, min(kill_at, give_up) - now))
        try:
            item = chunks.get(timeout=max(0.0, wait))
        except queue.Empty:
            item = b""
        if isinstance(item, (bytes, bytearray)):
            output.feed(bytes(item))
        else:
            return Watched(item, killed_for, time.monotonic())
        now = time.monotonic()
        if killed_for is None:
            if cancel is not None and cancel.is_set():
                killed_for, kill_at = "cancel", now
            elif now >= deadline:
                killed_for, kill_at = "timeout", now
                if interrupt is not None:
                    interrupt()
                    kill_at = now + DUMP_GRACE
        if give_up == math.inf and now >= kill_at:
            give_up = now + KILL_GRACE
            kill()
        elif now >= give_up:
            return Watched(None, killed_for, now)

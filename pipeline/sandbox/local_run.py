"""Local mode: the smoke command as a subprocess on this machine, unisolated (an explicit opt-in).

The run gets its own session and process group, which is killed whole (SIGKILL) at the timeout, on
cancel, and after the command ends (so no background child outlives it). Limits, set in the child
before it executes the command:
- RLIMIT_AS = sandbox.memory: address space, not resident memory, so a library that reserves a
  large virtual range needs a larger setting; an allocation over it raises MemoryError.
- RLIMIT_CPU: the timeout times the machine's CPUs, a backstop should this process die and leave
  the group running.
- RLIMIT_NPROC ≈ sandbox.pids more than the user runs already (it counts all of the user's
  processes and threads, so an absolute value would fail at once on a busy desktop); not set for
  root, whom the kernel does not hold to it.
- RLIMIT_CORE = 0; CPU affinity to ceil(sandbox.cpus) CPUs.
The workspace is writable and the network open: nothing here isolates the run. The environment is
the caller's, less variables that look like secrets (…KEY…, …TOKEN…, …SECRET…, …PASSWORD…,
…CREDENTIAL…), plus the smoke variables (no bytecode, no pytest cache).
"""

from __future__ import annotations

import math
import os
import queue
import re
import resource
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ...schemas.smoke import SandboxSettings
from .common import Outcome, smoke_env, watch
from .output import CappedOutput

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)
READ_SIZE = 65536


def parse_size(text: str) -> int:
    """`512m`, `2g`, `1048576` → bytes."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower()
    if text and text[-1] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text)


def run_local(
    workspace: Path,
    command: list[str],
    settings: SandboxSettings,
    *,
    on_output: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
) -> Outcome:
    env = {name: value for name, value in os.environ.items() if not SECRET_NAME.search(name)}
    extra = smoke_env(settings.cpus, None)
    if env.get("PYTEST_ADDOPTS"):
        extra["PYTEST_ADDOPTS"] = env["PYTEST_ADDOPTS"] + " " + extra["PYTEST_ADDOPTS"]
    env |= extra
    output = CappedOutput(settings.output_limit_bytes, on_output)
    chunks: queue.SimpleQueue = queue.SimpleQueue()
    start = time.monotonic()
    try:
        process = subprocess.Popen(
            command,
            cwd=workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_limits(settings),
        )
    except OSError as err:
        text = f"paperlens: could not start {command[0]!r}: {err.strerror or err}\n"
        output.feed(text.encode())
        return Outcome(127, False, False, False, time.monotonic() - start, output.finish(), False)
    stop_reading = threading.Event()

    def read() -> None:
        fd = process.stdout.fileno()
        quiet_since_exit = 0
        try:
            while not stop_reading.is_set():
                ready, _, _ = select.select([fd], [], [], 0.1)
                if not ready:
                    if process.poll() is not None:
                        _kill_group(process.pid)  # the command ended: a child holding the pipe goes too
                        quiet_since_exit += 1
                        if quiet_since_exit >= 5:
                            break  # a process outside the group holds the pipe: stop waiting for it
                    continue
                data = os.read(fd, READ_SIZE)
                if not data:
                    break
                chunks.put(data)
        finally:
            chunks.put(("exit", process.wait()))

    reader = threading.Thread(target=read, name="paperlens-smoke-local", daemon=True)
    reader.start()
    watched = watch(
        chunks,
        output,
        deadline=start + settings.timeout_seconds,
        cancel=cancel,
        kill=lambda: _kill_group(process.pid),
        interrupt=lambda: _abort(process.pid),
    )
    _kill_group(process.pid)
    stop_reading.set()
    reader.join(timeout=2)
    process.stdout.close()
    returncode = watched.end[1] if watched.end is not None else process.poll()
    exit_code = None if returncode is None else (128 - returncode if returncode < 0 else returncode)
    return Outcome(
        exit_code=exit_code,
        timed_out=watched.killed_for == "timeout",
        oom_killed=False,
        cancelled=watched.killed_for == "cancel",
        duration=watched.ended_at - start,
        output=output.finish(),
        truncated=output.truncated,
    )


def _abort(pid: int) -> None:
    """SIGABRT to the run itself (not its workers): its faulthandler prints where it was."""
    try:
        os.kill(pid, signal.SIGABRT)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _limits(settings: SandboxSettings) -> Callable[[], None]:
    """The function the child runs before the command: everything it needs is computed here, so
    the child only makes system calls (it runs between fork and exec, in a threaded parent)."""
    memory = parse_size(settings.memory)
    cpu_seconds = math.ceil(settings.timeout_seconds * (os.cpu_count() or 1)) + 1
    nproc = None if os.getuid() == 0 else _user_tasks() + settings.pids
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        allowed = []
    cpus = set(allowed[: max(1, math.ceil(settings.cpus))]) if allowed else None
    setrlimit = resource.setrlimit
    limits = [(resource.RLIMIT_AS, memory), (resource.RLIMIT_CPU, cpu_seconds), (resource.RLIMIT_CORE, 0)]
    if nproc is not None:
        limits.append((resource.RLIMIT_NPROC, nproc))
    limits = [(which, _within_hard(which, value)) for which, value in limits]
    set_affinity = getattr(os, "sched_setaffinity", None)

    def apply() -> None:
        for which, value in limits:
            setrlimit(which, (value, value))
        if cpus is not None and set_affinity is not None:
            set_affinity(0, cpus)

    return apply


def _within_hard(which: int, value: int) -> int:
    """A limit may not rise above the hard limit this process already has."""
    _soft, hard = resource.getrlimit(which)
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


def _user_tasks() -> int:
    """Processes and threads of this user now (what RLIMIT_NPROC counts)."""
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid == uid:
                count += len(os.listdir(f"/proc/{entry.name}/task"))
        except OSError:
            continue
    return count


def local_command(command: list[str], discovered: bool) -> list[str]:
    """A discovered command's `python3` is this environment's interpreter (the one paperlens runs
    in, where the user's packages are); a configured command runs as written."""
    if discovered and command and command[0] == "python3":
        return [sys.executable, *command[1:]]
    return command

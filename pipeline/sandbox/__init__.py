"""Smoke runs in a sandbox: the run, its failures mapped to workspace lines, the dependency check.

`run_smoke(workspace, settings, on_output=..., cancel=...)` is the one entry point (the CLI and the
server call it from a thread). It never raises for an environment problem: no Docker, no
permission, no image, a failed image build, a cancel — each is a result with status `error` and a
message saying what to do.

The command, first that applies:
1. `sandbox.command`, run as written.
2. The workspace's one-step reproduction script: `reproduce.py`, `reproduce.sh`,
   `scripts/reproduce.py` or `scripts/reproduce.sh` whose text mentions `--smoke` (so it takes the
   flag), run with `--smoke` (`python3 SCRIPT --smoke`; a shell script with `bash` when its first
   line names bash, else `sh`). A script that never mentions the flag would run in full, or stop
   at an unknown argument, so it is not taken.
3. `python3 -m pytest -x -q` (the image's interpreter is `python3`). Its exit status 5 (no tests
   collected) is no pass: the result is an `error` saying that nothing ran and what to add.
Every run gets `PYTEST_ADDOPTS=-p no:cacheprovider` and `PYTHONDONTWRITEBYTECODE=1`. In local
mode a discovered command's `python3` is the interpreter paperlens runs in.

The output is streamed to `on_output` (from the calling thread) and capped at
`sandbox.output_limit_bytes`: the first quarter and the last three quarters are kept (see
`output.py`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from ...schemas.smoke import SandboxSettings, SmokeFailure, SmokeResult
from . import docker_run
from .common import Outcome
from .errors import Cancelled, SandboxUnavailable
from .local_run import local_command, run_local

log = logging.getLogger(__name__)

REPRODUCE_SCRIPTS = ("reproduce.py", "reproduce.sh", "scripts/reproduce.py", "scripts/reproduce.sh")
SMOKE_FLAG = "--smoke"
DEFAULT_COMMAND = ["python3", "-m", "pytest", "-x", "-q"]
PYTEST_NO_TESTS = 5

reap_leftovers = docker_run.reap_leftovers
drain = docker_run.drain
set_prewarm = docker_run.set_prewarm
without_prewarm = docker_run.without_prewarm

__all__ = ["run_smoke", "resolve_command", "prepare", "reap_leftovers", "drain", "set_prewarm", "without_prewarm", "SandboxUnavailable"]


def resolve_command(workspace: Path, settings: SandboxSettings) -> tuple[list[str], str]:
    """The smoke command and where it came from: `configured`, `reproduce` or `pytest`."""
    if settings.command:
        return list(settings.command), "configured"
    for name in REPRODUCE_SCRIPTS:
        path = workspace / name
        try:
            text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        except OSError:
            continue
        if SMOKE_FLAG not in text:
            continue
        if name.endswith(".py"):
            return ["python3", name, SMOKE_FLAG], "reproduce"
        first = text.splitlines()[0] if text else ""
        shell = "bash" if first.startswith("#!") and "bash" in first else "sh"
        return [shell, name, SMOKE_FLAG], "reproduce"
    return list(DEFAULT_COMMAND), "pytest"


def prepare(workspace: Path, settings: SandboxSettings) -> str | None:
    """Makes the image (building the workspace's Dockerfile when needed) and the first container
    ahead of time, so the first run after a save is as fast as the later ones. None when ready,
    else the message a run would give. Docker mode only; call it from a thread."""
    if settings.mode != "docker":
        return None
    workspace = Path(workspace).resolve()
    command, _source = resolve_command(workspace, settings)
    try:
        docker_run.prepare(workspace, command, settings)
    except SandboxUnavailable as err:
        return str(err)
    return None


def run_smoke(
    workspace: Path,
    settings: SandboxSettings,
    *,
    on_output: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
) -> SmokeResult:
    """Runs the workspace's smoke command in the sandbox (or locally, when `settings.mode` says so)."""
    workspace = Path(workspace).resolve()
    command, source = resolve_command(workspace, settings)
    local = settings.mode == "local"
    if local:
        command = local_command(command, discovered=source != "configured")
    base = {"command": command, "mode": settings.mode, "isolated": not local}
    if not workspace.is_dir():
        return SmokeResult(status="error", message=f"The workspace {workspace} is not a folder.", **base)
    if cancel is not None and cancel.is_set():
        return SmokeResult(status="error", message="cancelled", **base)
    try:
        if local:
            outcome = run_local(workspace, command, settings, on_output=on_output, cancel=cancel)
            workspace_in_run = str(workspace)
        else:
            outcome = docker_run.run_docker(workspace, command, settings, on_output=on_output, cancel=cancel)
            workspace_in_run = docker_run.WORKSPACE_IN_RUN
    except Cancelled:
        return SmokeResult(status="error", message="cancelled", **base)
    except SandboxUnavailable as err:
        return SmokeResult(status="error", message=str(err), **base)
    return _result(outcome, workspace, workspace_in_run, settings, source, base)


def _result(outcome: Outcome, workspace: Path, workspace_in_run: str, settings: SandboxSettings, source: str, base: dict) -> SmokeResult:
    fields = base | {
        "image": outcome.image,
        "exit_code": outcome.exit_code,
        "timed_out": outcome.timed_out,
        "oom_killed": outcome.oom_killed,
        "duration_seconds": round(outcome.duration, 3),
        "output": outcome.output,
        "output_truncated": outcome.truncated,
    }
    prefix = "" if base["isolated"] else "ran unisolated on this machine (sandbox.mode = local): "
    cut = f" (output cut to {settings.output_limit_bytes:,} bytes)" if outcome.truncated else ""
    if outcome.cancelled:
        return SmokeResult(status="error", message="cancelled", **fields)
    if outcome.exit_code is None and not outcome.timed_out:
        return SmokeResult(status="error", message=prefix + "the run's end was never reported; it was killed" + cut, **fields)
    if outcome.exit_code == 0 and not outcome.timed_out and not outcome.oom_killed:
        return SmokeResult(status="passed", message=prefix + f"passed in {outcome.duration:.1f} s" + cut, **fields)
    if source == "pytest" and outcome.exit_code == PYTEST_NO_TESTS and not outcome.timed_out:
        message = "no tests were collected, so nothing ran: add tests, a reproduce.py that takes --smoke, or set sandbox.command"
        return SmokeResult(status="error", message=prefix + message + cut, **fields)
    from .failures import failures_of

    failures: list[SmokeFailure] = failures_of(
        outcome.output,
        workspace,
        workspace_in_run,
        exit_code=outcome.exit_code,
        timed_out=outcome.timed_out,
        oom_killed=outcome.oom_killed,
        timeout_seconds=settings.timeout_seconds,
        memory=settings.memory,
    )
    return SmokeResult(status="failed", failures=failures, message=prefix + _failure_message(outcome, settings, failures, base) + cut, **fields)


def _failure_message(outcome: Outcome, settings: SandboxSettings, failures: list[SmokeFailure], base: dict) -> str:
    first = failures[0] if failures else None
    where = f" ({first.location.file}:{first.location.line + 1})" if first is not None and first.location is not None else ""
    more = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
    if outcome.timed_out:
        return f"timed out after {settings.timeout_seconds:g} s and was killed (sandbox.timeout_seconds){where}"
    if outcome.oom_killed:
        return f"killed at the memory limit of {settings.memory} (sandbox.memory){where}"
    if outcome.exit_code == 127 and "not found" in outcome.output[-2000:]:
        return f"the command {base['command'][0]!r} was not found" + (f" in {outcome.image}" if outcome.image else "")
    head = f"exit code {outcome.exit_code} after {outcome.duration:.1f} s"
    if first is None:
        return head
    what = f"{first.exception}: {first.message}" if first.exception and not first.message.startswith(first.exception) else first.message
    return f"{head}: {what}{where}{more}"

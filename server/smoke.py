"""Smoke runs from the editor: on save (debounced; a newer save cancels the running one) or by
command, in the sandbox, with progress, failures as diagnostics at their lines, the dependency
check beside them, a summary message and the run's output in the client's log."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path

from lsprotocol import types as lsp

from paperlens.pipeline.sandbox import prepare, reap_leftovers, run_smoke
from paperlens.pipeline.sandbox.deps import dependency_issues
from paperlens.schemas import DependencyIssue, SandboxSettings, SmokeFailure, SmokeResult

from .app import PaperlensServer, _progress, server
from .convert import to_range

log = logging.getLogger("paperlens.server")
RUN_SMOKE = "paperlens.runSmoke"
SMOKE = "smoke"  # the producer of these diagnostics
SAVE_DEBOUNCE_SECONDS = 0.5
LOG_TAIL_CHARS = 20_000


def sandbox_settings(ls: PaperlensServer) -> SandboxSettings:
    """[tool.paperlens.sandbox], with what the editor's settings set on top."""
    chosen = ls.workspace_settings.sandbox
    if ls.settings.sandbox is not None:
        chosen = chosen.model_copy(update=ls.settings.sandbox.model_dump(exclude_unset=True))
    return chosen


def smoke_after_save(ls: PaperlensServer, path: Path) -> None:
    """Saving workspace code schedules a run; a newer save cancels the waiting or running one."""
    if not ls.settings.smoke_on_save or path.suffix != ".py" or ls.relative(path) is None:
        return
    _cancel(ls)
    ls.smoke_task = asyncio.ensure_future(_run(ls, delay=SAVE_DEBOUNCE_SECONDS))


def _cancel(ls: PaperlensServer) -> None:
    if ls.smoke_cancel is not None:
        ls.smoke_cancel.set()  # the sandbox kills the container
    if ls.smoke_task is not None:
        ls.smoke_task.cancel()


async def _run(ls: PaperlensServer, delay: float = 0.0) -> SmokeResult | None:
    await asyncio.sleep(delay)
    assert ls.root is not None
    root, settings, cancel = ls.root, sandbox_settings(ls), threading.Event()
    ls.smoke_cancel = cancel
    async with _progress(ls, "paperlens: smoke run", cancellable=True) as (report, cancelled):
        lines: list[str] = []

        def on_output(text: str) -> None:
            lines.append(text)
            if cancelled():
                cancel.set()

        watcher = asyncio.ensure_future(_report_output(lines, report, cancel))
        try:
            result = await asyncio.to_thread(run_smoke, root, settings, on_output=on_output, cancel=cancel)
        finally:
            watcher.cancel()
    if cancel.is_set() and ls.smoke_cancel is not cancel:
        return None  # a newer run took over; it publishes
    dependencies = await asyncio.to_thread(dependency_issues, root)
    result = result.model_copy(update={"dependencies": dependencies})
    _publish(ls, result)
    _summarise(ls, result)
    return result


async def _report_output(lines: list[str], report, cancel: threading.Event) -> None:
    """The last line of output as the progress message, twice a second."""
    while not cancel.is_set():
        await asyncio.sleep(0.5)
        last = next((line.strip() for line in reversed("".join(lines[-20:]).splitlines()) if line.strip()), "")
        if last:
            report(last[:80], None)


def _failure_diagnostic(ls: PaperlensServer, failure: SmokeFailure) -> lsp.Diagnostic:
    assert ls.root is not None and failure.location is not None
    related = [
        lsp.DiagnosticRelatedInformation(
            location=lsp.Location(
                uri=(ls.root / frame.file).as_uri(),
                range=lsp.Range(start=lsp.Position(line=frame.line, character=0), end=lsp.Position(line=frame.line, character=0)),
            ),
            message=f"in {frame.function or '?'}: {frame.code or ''}".strip(),
        )
        for frame in failure.frames
        if frame.in_workspace
    ]
    message = f"smoke run: {failure.message}" + (f" — {failure.suggestion}" if failure.suggestion else "")
    return lsp.Diagnostic(
        range=ls.positions.line_range((ls.root / failure.location.file).as_uri(), failure.location.line),
        message=message,
        severity=lsp.DiagnosticSeverity.Error,
        code=failure.error_class,
        source="paperlens smoke",
        related_information=related or None,
    )


def _dependency_diagnostic(ls: PaperlensServer, uri: str, issue: DependencyIssue) -> lsp.Diagnostic:
    return lsp.Diagnostic(
        range=to_range(issue.location, uri, ls.positions),
        message=issue.message,
        severity=lsp.DiagnosticSeverity.Warning if issue.kind == "missing-requirement" else lsp.DiagnosticSeverity.Information,
        code=issue.kind,
        source="paperlens smoke",
    )


def _publish(ls: PaperlensServer, result: SmokeResult) -> None:
    """This run's diagnostics replace the last run's, file by file (other producers' stay)."""
    assert ls.root is not None
    by_uri: dict[str, list[lsp.Diagnostic]] = {}
    for failure in result.failures:
        if failure.location is not None:
            by_uri.setdefault((ls.root / failure.location.file).as_uri(), []).append(_failure_diagnostic(ls, failure))
    for issue in result.dependencies:
        uri = (ls.root / issue.location.file).as_uri()
        by_uri.setdefault(uri, []).append(_dependency_diagnostic(ls, uri, issue))
    stale = {uri for uri, producers in ls.diagnostics.items() if producers.get(SMOKE)} - by_uri.keys()
    for uri in stale:
        ls.publish(uri, SMOKE, [])
    for uri, diagnostics in by_uri.items():
        ls.publish(uri, SMOKE, diagnostics)


def _summarise(ls: PaperlensServer, result: SmokeResult) -> None:
    if result.output:
        tail = result.output[-LOG_TAIL_CHARS:]
        ls.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Log, message=f"paperlens smoke output ({' '.join(result.command)}):\n{tail}"))
    if result.status == "passed":
        kind, text = lsp.MessageType.Info, f"smoke run passed in {result.duration_seconds:.1f} s"
    elif result.status == "failed":
        first = result.failures[0] if result.failures else None
        where = f" at {first.location.short()}" if first and first.location else ""
        kind, text = lsp.MessageType.Warning, f"smoke run failed{where}: {first.error_class + ': ' + first.message if first else result.message}"
    else:
        kind, text = lsp.MessageType.Error, f"smoke run not made: {result.message}"
    if not result.isolated:
        text += " (ran unisolated, on this machine)"
    ls.window_show_message(lsp.ShowMessageParams(type=kind, message=f"paperlens: {text}"))


@server.command(RUN_SMOKE)
async def run_smoke_command(ls: PaperlensServer) -> dict | None:
    """Run the smoke command now; the result as JSON (status, failures...)."""
    _cancel(ls)
    ls.smoke_task = asyncio.ensure_future(_run(ls))
    result = await ls.smoke_task
    return result.model_dump(mode="json", exclude={"output"}) if result is not None else None


async def get_ready_at_start(ls: PaperlensServer) -> None:
    """Once the first diagnostics are out: containers a crashed server left behind are removed, then
    the image is built and the first container readied, so the first save is as quick as the next."""
    await ls.wait_until_idle()
    removed = await asyncio.to_thread(reap_leftovers)
    if removed:
        log.info("removed %d container(s) left by an earlier run", removed)
    if ls.settings.smoke_on_save and ls.root is not None:
        problem = await asyncio.to_thread(prepare, ls.root, sandbox_settings(ls))
        if problem:
            log.info("smoke runs: %s", problem)


server.start_hooks.append(get_ready_at_start)
server.save_hooks.append(smoke_after_save)

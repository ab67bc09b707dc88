"""The reproducibility checklist in the editor: each failed point as information in the file where
its fix belongs (the seeding code, the Dockerfile, the README), read again whenever the workspace
is, in a thread; off with the `checklist` setting."""

from __future__ import annotations

import asyncio
import logging

from lsprotocol import types as lsp

from paperlens.pipeline.checklist import checklist
from paperlens.schemas import ChecklistPoint, ChecklistReport

from .app import PaperlensServer, server

log = logging.getLogger("paperlens.server")
CHECKLIST = "checklist"  # the producer of these diagnostics


def check_after_load(ls: PaperlensServer) -> None:
    """A newer reading replaces one still on its way."""
    if ls.checklist_task is not None:
        ls.checklist_task.cancel()
    ls.checklist_task = asyncio.ensure_future(_publish(ls))


async def _publish(ls: PaperlensServer) -> None:
    report: ChecklistReport | None = None
    if ls.settings.checklist and ls.root is not None:
        try:
            report = await asyncio.to_thread(checklist, ls.root, ls.workspace_settings.include, ls.workspace_settings.exclude)
        except Exception:  # the checklist's bad luck must not stop the server
            log.exception("the reproducibility checklist could not be read")
            return
    by_uri: dict[str, list[lsp.Diagnostic]] = {}
    for point in report.points if report is not None else []:
        if point.fix_at is not None:
            uri = (ls.root / point.fix_at.file).as_uri()
            by_uri.setdefault(uri, []).append(_diagnostic(ls, uri, point))
    for uri in [uri for uri, producers in ls.diagnostics.items() if producers.get(CHECKLIST) and uri not in by_uri]:
        ls.publish(uri, CHECKLIST, [])
    for uri, diagnostics in by_uri.items():
        ls.publish(uri, CHECKLIST, diagnostics)


def _diagnostic(ls: PaperlensServer, uri: str, point: ChecklistPoint) -> lsp.Diagnostic:
    assert point.fix_at is not None
    start = ls.positions.position(uri, point.fix_at.line or 0, 0)
    return lsp.Diagnostic(
        range=lsp.Range(start=start, end=start),
        message=f"Reproducibility checklist, {point.title.lower()}: {point.summary}. Add: " + "; ".join(point.missing),
        severity=lsp.DiagnosticSeverity.Information,
        code=f"checklist.{point.id}",
        source="paperlens",
    )


server.load_hooks.append(check_after_load)

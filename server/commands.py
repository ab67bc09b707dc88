"""Commands for an editor's palette: check the whole workspace, the readiness report, the open
questions, and the paper view (a source place, or a PDF page with the item's box)."""

from __future__ import annotations

import asyncio

from lsprotocol import types as lsp

from paperlens.pipeline.check import check
from paperlens.pipeline.decisions import load_decisions
from paperlens.pipeline.errors import UserError
from paperlens.pipeline.paper_images import page_image
from paperlens.pipeline.questions import questions_markdown
from paperlens.pipeline.readiness.render import render_markdown
from paperlens.schemas import Location

from .app import CHECKS, PaperlensServer, server
from .convert import paper_location, to_diagnostic
from .navigation import workspace_view

CHECK_WORKSPACE = "paperlens.checkWorkspace"
READINESS_REPORT = "paperlens.readinessReport"
EXPORT_QUESTIONS = "paperlens.exportQuestions"
PAPER_VIEW = "paperlens.paperView"


@server.command(CHECK_WORKSPACE)
async def check_workspace(ls: PaperlensServer) -> dict:
    """Check every file, as `paperlens check` does, and show the findings of each file."""
    if ls.spec is None or ls.facts is None or ls.root is None:
        return {"findings": 0, "files": 0}
    root, spec, facts, view = ls.root, ls.spec, ls.facts, workspace_view(ls)
    sources = dict(ls.indexed_sources)  # the open files, as their indexes read them
    report = await asyncio.to_thread(check, root, spec, view, facts.decisions, facts, sources)
    shown = set(ls.settings.checks) - {kind for kind, severity in ls.settings.severity.items() if severity == "off"}
    by_uri: dict[str, list] = {}
    for finding in report.findings:
        if finding.code is not None and finding.kind in shown:
            by_uri.setdefault((root / finding.code.file).as_uri(), []).append(finding)
    for uri in {uri for uri, producers in ls.diagnostics.items() if producers.get(CHECKS)} - by_uri.keys():
        ls.findings.pop(uri, None)
        ls.publish(uri, CHECKS, [])
    for uri, findings in by_uri.items():
        ls.findings[uri] = findings
        ls.publish(uri, CHECKS, [to_diagnostic(f, uri, spec, ls.positions, ls.settings.severity) for f in findings])
    return {"findings": sum(len(f) for f in by_uri.values()), "files": len(by_uri)}


@server.command(READINESS_REPORT)
def readiness_report(ls: PaperlensServer) -> dict:
    return {"markdown": render_markdown(ls.readiness) if ls.readiness is not None else "The paper has not been read yet.\n"}


@server.command(EXPORT_QUESTIONS)
def export_questions(ls: PaperlensServer) -> dict:
    """The open questions: asked in the decisions file (as it is on disk now), then blocking gaps."""
    if ls.spec is None or ls.root is None:
        return {"markdown": "The paper has not been read yet.\n", "count": 0}
    try:
        decisions = load_decisions(ls.root)
    except UserError as err:
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"paperlens: {err}"))
        decisions = ls.decisions
    markdown, count = questions_markdown(ls.spec.title or ls.spec.main_file, decisions, ls.gaps)
    return {"markdown": markdown, "count": count}


@server.command(PAPER_VIEW)
async def paper_view(ls: PaperlensServer, where: dict) -> dict | None:
    """Where to show a place of the paper: a text source and position, or a PDF page as an image
    with the place's box (in image pixels)."""
    spec = ls.spec
    if spec is None:
        return None
    location = Location.model_validate(where)
    if (target := paper_location(spec, location, ls.positions)) is not None:
        start, end = target.range.start, target.range.end
        return {"kind": "source", "uri": target.uri, "line": start.line, "column": start.character, "endLine": end.line, "endColumn": end.character}
    image = await asyncio.to_thread(page_image, spec, location)
    if image is None:
        return None
    title = f"{spec.title or spec.main_file}, page {location.page}"
    return {"kind": "page", "image": image.data_uri, "width": image.width, "height": image.height, "highlight": image.highlight, "page": location.page, "title": title}

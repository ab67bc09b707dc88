"""pipeline results → LSP types. The only place that knows both."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from lsprotocol import types as lsp

from paperlens.schemas import CodeLocation, Finding, Gap, Location, PaperSpec

SEVERITY = {
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
    "info": lsp.DiagnosticSeverity.Information,
    "hint": lsp.DiagnosticSeverity.Hint,
}


def to_range(code: CodeLocation) -> lsp.Range:
    end_line = code.end_line if code.end_line is not None else code.line
    end_column = code.end_column if code.end_column is not None else code.column + 1
    return lsp.Range(start=lsp.Position(line=code.line, character=code.column), end=lsp.Position(line=end_line, character=end_column))


def to_diagnostic(finding: Finding, spec: PaperSpec | None, severity_of_kind: Mapping[str, str] | None = None) -> lsp.Diagnostic:
    """An open finding at its own severity (or the one the settings give its kind); a recorded one as a hint."""
    related = []
    if spec is not None:
        for evidence in finding.paper:
            location = evidence.location
            if location.line is None:
                continue  # a PDF page has no text range; the hover shows it
            uri = (Path(spec.root) / location.file).as_uri()
            start = lsp.Position(line=location.line, character=location.column or 0)
            related.append(
                lsp.DiagnosticRelatedInformation(
                    location=lsp.Location(uri=uri, range=lsp.Range(start=start, end=start)),
                    message=" ".join(evidence.quote.split())[:200],
                )
            )
    chosen = (severity_of_kind or {}).get(finding.kind, finding.severity)
    severity = SEVERITY[chosen] if finding.status == "open" else lsp.DiagnosticSeverity.Hint
    return lsp.Diagnostic(
        range=to_range(finding.code),
        message=finding.message + (f" (recorded: {finding.decision})" if finding.status == "recorded" else ""),
        severity=severity,
        code=finding.kind,
        source="paperlens",
        related_information=related or None,
        data={"id": finding.id},
    )


def paper_location(spec: PaperSpec, location: Location) -> lsp.Location | None:
    """A text source's line and column; a PDF page has no text range (the paper view opens it)."""
    if location.line is None:
        return None
    start = lsp.Position(line=location.line, character=location.column or 0)
    end_line = location.end_line if location.end_line is not None else location.line
    end = lsp.Position(line=end_line, character=location.end_column if location.end_column is not None else start.character)
    return lsp.Location(uri=(Path(spec.root) / location.file).as_uri(), range=lsp.Range(start=start, end=end))


def _paper_range(location: Location) -> lsp.Range:
    start = lsp.Position(line=location.line or 0, character=location.column or 0)
    end_line = location.end_line if location.end_line is not None else start.line
    end = lsp.Position(line=end_line, character=location.end_column if location.end_column is not None else start.character + 1)
    return lsp.Range(start=start, end=end)


def paper_diagnostic(finding: Finding, severity_of_kind: Mapping[str, str] | None = None) -> lsp.Diagnostic:
    """A finding with no code side (an equation no code cites), at its place in the paper."""
    return lsp.Diagnostic(
        range=_paper_range(finding.paper[0].location),
        message=finding.message,
        severity=SEVERITY[(severity_of_kind or {}).get(finding.kind, finding.severity)],
        code=finding.kind,
        source="paperlens",
        data={"id": finding.id},
    )


def gap_diagnostic(gap: Gap) -> lsp.Diagnostic:
    return lsp.Diagnostic(
        range=_paper_range(gap.evidence[0].location),
        message=f"{gap.title} — ask: {gap.question}",
        severity=lsp.DiagnosticSeverity.Warning if gap.blocking else lsp.DiagnosticSeverity.Information,
        code=gap.kind,
        source="paperlens",
        data={"id": gap.id, "category": gap.category},
    )

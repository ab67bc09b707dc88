"""pipeline results → LSP types. The only place that knows both. Every range goes through
`Positions`, which counts columns as the client does."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from lsprotocol import types as lsp

from paperlens.schemas import CodeLocation, Finding, Gap, Location, PaperSpec

from .positions import Positions

SEVERITY = {
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
    "info": lsp.DiagnosticSeverity.Information,
    "hint": lsp.DiagnosticSeverity.Hint,
}


def to_range(code: CodeLocation, uri: str, positions: Positions) -> lsp.Range:
    """A code location in the document `uri`; no end is one character."""
    end_line = code.end_line if code.end_line is not None else code.line
    end_column = code.end_column if code.end_column is not None else code.column + 1
    return positions.range(uri, code.line, code.column, end_line, end_column)


def to_diagnostic(
    finding: Finding, uri: str, spec: PaperSpec | None, positions: Positions, severity_of_kind: Mapping[str, str] | None = None
) -> lsp.Diagnostic:
    """An open finding (in the document `uri`) at its own severity (or the one the settings give its
    kind); a recorded one as a hint."""
    assert finding.code is not None
    related = []
    if spec is not None:
        for evidence in finding.paper:
            location = evidence.location
            if location.line is None:
                continue  # a PDF page has no text range; the hover shows it
            paper_uri = (Path(spec.root) / location.file).as_uri()
            start = positions.position(paper_uri, location.line, location.column or 0)
            related.append(
                lsp.DiagnosticRelatedInformation(
                    location=lsp.Location(uri=paper_uri, range=lsp.Range(start=start, end=start)),
                    message=" ".join(evidence.quote.split())[:200],
                )
            )
    chosen = (severity_of_kind or {}).get(finding.kind, finding.severity)
    severity = SEVERITY[chosen] if finding.status == "open" else lsp.DiagnosticSeverity.Hint
    return lsp.Diagnostic(
        range=to_range(finding.code, uri, positions),
        message=finding.message + (f" (recorded: {finding.decision})" if finding.status == "recorded" else ""),
        severity=severity,
        code=finding.kind,
        source="paperlens",
        related_information=related or None,
        data={"id": finding.id},
    )


def paper_location(spec: PaperSpec, location: Location, positions: Positions) -> lsp.Location | None:
    """A text source's line and column; a PDF page has no text range (the paper view opens it)."""
    if location.line is None:
        return None
    uri = (Path(spec.root) / location.file).as_uri()
    column = location.column or 0
    end_line = location.end_line if location.end_line is not None else location.line
    end_column = location.end_column if location.end_column is not None else column
    return lsp.Location(uri=uri, range=positions.range(uri, location.line, column, end_line, end_column))


def _paper_range(location: Location, uri: str, positions: Positions) -> lsp.Range:
    """A place in the paper's file `uri`; no end is one character."""
    line, column = location.line or 0, location.column or 0
    end_line = location.end_line if location.end_line is not None else line
    end_column = location.end_column if location.end_column is not None else column + 1
    return positions.range(uri, line, column, end_line, end_column)


def paper_diagnostic(finding: Finding, uri: str, positions: Positions, severity_of_kind: Mapping[str, str] | None = None) -> lsp.Diagnostic:
    """A finding with no code side (an equation no code cites), at its place in the paper's file `uri`."""
    return lsp.Diagnostic(
        range=_paper_range(finding.paper[0].location, uri, positions),
        message=finding.message,
        severity=SEVERITY[(severity_of_kind or {}).get(finding.kind, finding.severity)],
        code=finding.kind,
        source="paperlens",
        data={"id": finding.id},
    )


def gap_diagnostic(gap: Gap, uri: str, positions: Positions) -> lsp.Diagnostic:
    return lsp.Diagnostic(
        range=_paper_range(gap.evidence[0].location, uri, positions),
        message=f"{gap.title} — ask: {gap.question}",
        severity=lsp.DiagnosticSeverity.Warning if gap.blocking else lsp.DiagnosticSeverity.Information,
        code=gap.kind,
        source="paperlens",
        data={"id": gap.id, "category": gap.category},
    )

"""A readiness report as text for a terminal, Markdown for a person, SARIF for code-scanning tools."""

from __future__ import annotations

import json
from pathlib import Path

from ...schemas import Gap, ReadinessReport
from ..sarif import paper_location, sarif_log
from ..text import shorten

QUOTE_CHARS = 160  # a quote in a report's line

RULE_ID = "paperlens.paper-gap"
VERDICT_TEXT = {
    "ready": "no blocking gap found",
    "needs answers": "blocking gaps need the authors' answers before a faithful implementation",
    "not ready": "the paper contradicts itself or leaves many blocking gaps",
}


def render_text(report: ReadinessReport) -> str:
    blocking = [g for g in report.gaps if g.blocking]
    out = [
        f"{report.title or report.paper}: {report.verdict} — {VERDICT_TEXT[report.verdict]}",
        f"  {len(report.gaps)} gap{'' if len(report.gaps) == 1 else 's'}, {len(blocking)} blocking · "
        f"{sum(s.stated for s in report.settings)}/{len(report.settings)} needed settings stated",
        "",
    ]
    for gap in report.gaps:
        flag = "BLOCKING" if gap.blocking else "routine "
        out.append(f"{gap.rank:3d}. [{flag}] {gap.title}")
        out.append(f"       {gap.type} / {gap.category} · {gap.evidence[0].location.short()}")
        out.append(f"       “{shorten(gap.evidence[0].quote, 110)}”")
        out.append(f"       ask: {gap.question}")
        if gap.conventions:
            out.append("       convention (not the paper's): " + "; ".join(c.answer for c in gap.conventions))
    unstated = [s for s in report.settings if not s.stated and not s.delegated]
    if report.settings:
        out.append("")
        out.append("Needed settings: " + ", ".join(f"{s.setting}{_status_note(s)}" for s in report.settings))
    for evidence in report.delegations:
        out.append(f"Delegated (not checked): “{shorten(evidence.quote, 110)}” · {evidence.location.short()}")
    if report.conventional is not None:
        out.append(f"Left to convention (not asked): {_conventional_list(report.conventional)} · {report.conventional.evidence[0].location.short()}")
    if not report.gaps and not unstated:
        out.append("No gaps found.")
    out.append("")
    return "\n".join(out)


def _conventional_list(gap: Gap) -> str:
    """What is left to convention, and the conventions (not the paper's answers)."""
    listed = gap.title.removeprefix("conventional defaults not stated: ")
    usual = "; ".join(c.answer for c in gap.conventions)
    return listed + (f" (usually: {usual})" if usual else "")


def _status_note(status) -> str:
    return "" if status.stated else " (delegated)" if status.delegated else " (not stated)"


def render_markdown(report: ReadinessReport) -> str:
    blocking = [g for g in report.gaps if g.blocking]
    routine = [g for g in report.gaps if not g.blocking]
    out = [
        f"# Readiness report: {report.title or report.paper}",
        "",
        f"**Verdict: {report.verdict}** — {VERDICT_TEXT[report.verdict]}. "
        f"{len(blocking)} blocking and {len(routine)} routine gaps; "
        f"{sum(s.stated for s in report.settings)} of {len(report.settings)} needed settings are stated.",
        "",
    ]
    number = 0
    for heading, gaps in (("Blocking gaps", blocking), ("Routine gaps", routine)):
        if not gaps:
            continue
        out += [f"## {heading}", ""]
        for gap in gaps:
            number += 1
            out.append(f"{number}. **{gap.question}**")
            out.append(f"   - {gap.title} ({gap.type} / {gap.category}{'; suggested by a model' if gap.source == 'llm' else ''})")
            for evidence in gap.evidence:
                out.append(f"   - {evidence.location.short()}: “{shorten(evidence.quote, QUOTE_CHARS)}”")
            if gap.readings:
                out.append(f"   - Possible readings: {'; '.join(gap.readings)}")
            if gap.conventions:
                conventions = "; ".join(c.answer + (f" ({c.note})" if c.note else "") for c in gap.conventions)
                out.append(f"   - Convention, not the paper's answer: {conventions}")
        out.append("")
    if report.conventional is not None:
        out += [f"Left to convention (not asked): {_conventional_list(report.conventional)}.", ""]
    if report.settings:
        out += ["## Settings an implementation needs", "", "| component | setting | stated | evidence |", "|---|---|---|---|"]
        for status in report.settings:
            evidence = f"{status.evidence[0].location.short()}: “{shorten(status.evidence[0].quote, 80)}”" if status.evidence else "—"
            cell = evidence.replace("|", "\\|")  # a table row quoted as evidence has pipes of its own
            stated = "yes" if status.stated else "delegated" if status.delegated else "**no**"
            out.append(f"| {status.component} | {status.setting} | {stated} | {cell} |")
        out.append("")
    return "\n".join(out)


def _result(gap: Gap) -> dict:
    primary = gap.evidence[0].location
    properties: dict = {
        "type": gap.type,
        "category": gap.category,
        "kind": gap.kind,
        "blocking": gap.blocking,
        "rank": gap.rank,
        "question": gap.question,
        "source": gap.source,
    }
    if primary.page is not None:
        properties["page"] = primary.page
        properties["bbox"] = list(primary.bbox) if primary.bbox else None
    if gap.readings:
        properties["readings"] = gap.readings
    if gap.conventions:
        properties["conventions"] = [c.model_dump(exclude_none=True) for c in gap.conventions]
    return {
        "ruleId": RULE_ID,
        "ruleIndex": 0,
        "level": "error" if gap.blocking else "note",
        "message": {"text": f"{gap.title}. {gap.question}"},
        "locations": [{"physicalLocation": paper_location(primary)}],
        "relatedLocations": [
            {"id": i, "physicalLocation": paper_location(e.location), "message": {"text": shorten(e.quote, QUOTE_CHARS)}}
            for i, e in enumerate(gap.evidence[1:], start=1)
        ],
        "partialFingerprints": {"paperlensGap/v1": gap.id},
        "properties": properties,
    }


def render_sarif(report: ReadinessReport, root: str) -> str:
    """SARIF 2.1.0: one result per gap, in rank order; locations relative to the paper's folder."""
    rule = {
        "id": RULE_ID,
        "name": "PaperGap",
        "shortDescription": {"text": "The paper leaves a detail unstated, ambiguous or inconsistent."},
        "fullDescription": {"text": "A detail an implementation needs that the paper does not settle, with a question for its authors."},
        "defaultConfiguration": {"level": "warning"},
    }
    results = [_result(gap) for gap in sorted(report.gaps, key=lambda g: g.rank)]
    base_ids = {"PAPERROOT": Path(root).resolve().as_uri() + "/"}
    log = sarif_log([rule], results, base_ids, properties={"verdict": report.verdict})
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"

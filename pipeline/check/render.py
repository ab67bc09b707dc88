"""A check report as text for a terminal and SARIF 2.1.0 for code-scanning tools."""

from __future__ import annotations

import json
from pathlib import Path

from ...schemas import CheckReport, Finding, Undecided
from ..sarif import paper_location, sarif_log

RULES = {
    "divergence": "The code sets a value or uses a component that differs from what the paper states.",
    "guess": "The code sets a value for something the paper uses but never states.",
    "unimplemented": "A numbered equation or algorithm of the paper that no code refers to.",
    "agreement": "A function that computes an equation of the paper, shown by comparing their expressions.",
}


def counts(report: CheckReport) -> dict[str, int]:
    open_findings = [f for f in report.findings if f.status == "open"]
    return {kind: sum(f.kind == kind for f in open_findings) for kind in RULES} | {
        "recorded": sum(f.status == "recorded" for f in report.findings)
    }


def how_shown(agreement: Finding) -> str:
    """How an agreement was shown ("shown symbolically"): what its message says after the colon."""
    return agreement.message.split(": ", 1)[-1]


def undecided_message(pair: Undecided) -> str:
    return f"{pair.function} was not compared with Eq. ({pair.equation}): {pair.reason}"


def render_text(report: CheckReport) -> str:
    numbers = counts(report)
    out = [
        f"{report.workspace} against {report.paper}: {numbers['divergence']} divergence(s), {numbers['guess']} guess(es), "
        f"{numbers['unimplemented']} unimplemented, {numbers['agreement']} agreeing with an equation, "
        f"{numbers['recorded']} recorded in the decisions file",
        "",
    ]
    for finding in report.findings:
        where = finding.code.short() if finding.code else finding.paper[0].location.short()
        status = " (recorded: " + finding.decision + ")" if finding.status == "recorded" else ""
        out.append(f"{where}: {finding.severity}: {finding.kind}: {finding.message}{status}")
        if finding.confidence_note:
            out.append(f"    confidence {finding.confidence:.0%}: {finding.confidence_note}")
        if finding.compares:
            out.append(f"    compares {finding.compares}")
        for evidence in finding.paper[:2]:
            out.append(f"    paper {evidence.location.short()}: “{' '.join(evidence.quote.split())[:110]}”")
        for fix in finding.fixes:
            if fix.edit is not None:
                out.append(f"    fix: {fix.title}")
    for problem in report.problems:
        out.append(f"note: {problem}")
    for pair in report.undecided:
        out.append(f"note: {pair.file}:{pair.line + 1}: {undecided_message(pair)}")
    out.append("")
    return "\n".join(out)


def _code_location(finding: Finding) -> dict:
    code = finding.code
    region = {"startLine": code.line + 1, "startColumn": code.column + 1}
    if code.end_line is not None:
        region["endLine"] = code.end_line + 1
    if code.end_column is not None:
        region["endColumn"] = code.end_column + 1
    return {"artifactLocation": {"uri": code.file, "uriBaseId": "WORKSPACE"}, "region": region}


def _result(finding: Finding, rule_index: int) -> dict:
    # The code is the result's place; an unimplemented equation has none, so it stands at the paper.
    location = _code_location(finding) if finding.code else paper_location(finding.paper[0].location)
    properties = {
        "kind": finding.kind,
        "confidence": finding.confidence,
        "codeValue": finding.code_value,
        "paperValue": finding.paper_value,
        "setting": finding.setting,
        "component": finding.component,
        "status": finding.status,
    }
    if finding.confidence_note:
        properties["confidenceNote"] = finding.confidence_note
    if finding.compares:
        properties["compares"] = finding.compares
    if finding.decision:
        properties["decision"] = finding.decision
    result = {
        "ruleId": f"paperlens.{finding.kind}",
        "ruleIndex": rule_index,
        "level": {"error": "error", "warning": "warning", "info": "note"}[finding.severity],
        "message": {"text": finding.message},
        "locations": [{"physicalLocation": location}],
        "relatedLocations": [
            {"id": i, "physicalLocation": paper_location(e.location), "message": {"text": " ".join(e.quote.split())[:300]}}
            for i, e in enumerate(finding.paper if finding.code else finding.paper[1:], start=1)
        ],
        "partialFingerprints": {"paperlensFinding/v1": finding.id},
        "properties": {k: v for k, v in properties.items() if v is not None},
    }
    if finding.status == "recorded":
        result["suppressions"] = [{"kind": "external", "justification": f"recorded in the decisions file as {finding.decision}"}]
    return result


def render_sarif(report: CheckReport, paper_root: str) -> str:
    """SARIF 2.1.0: the code location is each result's place, the paper's quotes its related locations."""
    kinds = list(RULES)
    rules = [{"id": f"paperlens.{kind}", "name": kind.title(), "shortDescription": {"text": RULES[kind]}} for kind in kinds]
    results = [_result(f, kinds.index(f.kind)) for f in report.findings]
    base_ids = {
        "WORKSPACE": Path(report.workspace).resolve().as_uri() + "/",
        "PAPERROOT": Path(paper_root).resolve().as_uri() + "/",
    }
    return json.dumps(sarif_log(rules, results, base_ids), indent=2, ensure_ascii=False) + "\n"

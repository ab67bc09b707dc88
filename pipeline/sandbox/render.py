"""A smoke run for people (text) and for code scanning (SARIF: `paperlens.smoke` at the failing
workspace line, with the error class; `paperlens.dependency` for requirements)."""

from __future__ import annotations

import json
from pathlib import Path

from ...schemas import CodeLocation, DependencyIssue, SmokeFailure, SmokeResult
from ..sarif import sarif_log

RULES = [
    {
        "id": "paperlens.smoke",
        "shortDescription": {"text": "The smoke run failed here."},
        "fullDescription": {"text": "A short run of the workspace's code in the sandbox failed; the error is classified."},
    },
    {
        "id": "paperlens.dependency",
        "shortDescription": {"text": "An import the requirements do not cover, or an unpinned requirement."},
        "fullDescription": {"text": "Imports are mapped to distributions and compared with the requirements and lock files."},
    },
]


def render_text(result: SmokeResult) -> str:
    where = f"{result.mode}" + ("" if result.isolated else ", unisolated") + (f", {result.image}" if result.image else "")
    lines = [f"smoke: {result.status} in {result.duration_seconds:.1f} s ({where}): {' '.join(result.command)}"]
    if result.message:
        lines.append(f"  {result.message}")
    for failure in result.failures:
        at = failure.location.short() if failure.location else "(no workspace line)"
        lines.append(f"  {at}: [{failure.error_class}] {failure.message}")
        if failure.test:
            lines.append(f"      test: {failure.test}")
        if failure.suggestion:
            lines.append(f"      fix: {failure.suggestion}")
    for issue in result.dependencies:
        lines.append(f"  {issue.location.short()}: [{issue.kind}] {issue.message}")
    return "\n".join(lines) + "\n"


def _location(code: CodeLocation) -> dict:
    region = {"startLine": code.line + 1, "startColumn": code.column + 1}
    return {"physicalLocation": {"artifactLocation": {"uri": code.file, "uriBaseId": "WORKSPACE"}, "region": region}}


def _failure(failure: SmokeFailure) -> dict:
    result = {
        "ruleId": "paperlens.smoke",
        "ruleIndex": 0,
        "level": "error",
        "message": {"text": failure.message + (f" — {failure.suggestion}" if failure.suggestion else "")},
        "properties": {"errorClass": failure.error_class, "exception": failure.exception, "test": failure.test},
    }
    if failure.location is not None:
        result["locations"] = [_location(failure.location)]
    return result


def _dependency(issue: DependencyIssue) -> dict:
    return {
        "ruleId": "paperlens.dependency",
        "ruleIndex": 1,
        "level": "warning" if issue.kind == "missing-requirement" else "note",
        "message": {"text": issue.message},
        "locations": [_location(issue.location)],
        "properties": {"kind": issue.kind, "distribution": issue.distribution, "module": issue.module},
    }


def render_sarif(result: SmokeResult, workspace: str) -> str:
    results = [_failure(f) for f in result.failures] + [_dependency(d) for d in result.dependencies]
    properties = {"status": result.status, "command": result.command, "mode": result.mode, "isolated": result.isolated}
    base_ids = {"WORKSPACE": Path(workspace).resolve().as_uri() + "/"}
    return json.dumps(sarif_log(RULES, results, base_ids, properties), indent=2, ensure_ascii=False) + "\n"

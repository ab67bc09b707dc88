"""What every SARIF 2.1.0 log paperlens writes shares: the tool's version and paper locations."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from ..schemas import Location

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def tool_version() -> str:
    try:
        return version("paperlens")
    except PackageNotFoundError:
        return "0+unknown"


def paper_location(location: Location) -> dict:
    """A physical location in the paper's folder: a 1-based region for text, none for a PDF page
    (the page and box go in the result's properties)."""
    physical: dict = {"artifactLocation": {"uri": location.file, "uriBaseId": "PAPERROOT"}}
    if location.line is not None:
        region = {"startLine": location.line + 1, "startColumn": (location.column or 0) + 1}
        if location.end_line is not None:
            region["endLine"] = location.end_line + 1
        if location.end_column is not None:
            region["endColumn"] = location.end_column + 1
        physical["region"] = region
    return physical


def sarif_log(rules: list[dict], results: list[dict], base_ids: dict[str, str], properties: dict | None = None) -> dict:
    """One run of paperlens: its rules, its results, and the folders its relative URIs start from."""
    run: dict = {
        "tool": {"driver": {"name": "paperlens", "version": tool_version(), "rules": rules}},
        "originalUriBaseIds": {name: {"uri": uri} for name, uri in base_ids.items()},
        "results": results,
    }
    if properties:
        run["properties"] = properties
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}

"""Write the JSON Schema of every top-level model to schemas/json/ (`python -m paperlens.schemas.export`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from .checklist import ChecklistReport
from .code import CodeIndex
from .decisions import DecisionsFile
from .findings import CheckReport
from .gaps import ReadinessReport
from .llm import GapCandidates, LLMSettings
from .paper import PaperSpec
from .settings import EditorSettings
from .repo import AlignmentReport, RepoPlan, ReproduceRecord
from .smoke import SmokeResult

EXPORTED: dict[str, type[BaseModel]] = {
    "paper-spec": PaperSpec,
    "readiness-report": ReadinessReport,
    "llm-settings": LLMSettings,
    "gap-candidates": GapCandidates,
    "code-index": CodeIndex,
    "check-report": CheckReport,
    "decisions": DecisionsFile,
    "editor-settings": EditorSettings,
    "smoke-result": SmokeResult,
    "repo-plan": RepoPlan,
    "reproduce-record": ReproduceRecord,
    "alignment-report": AlignmentReport,
    "checklist-report": ChecklistReport,
}
SCHEMA_DIR = Path(__file__).parent / "json"


def render(model: type[BaseModel]) -> str:
    """The schema as committed: sorted keys, so the file diffs cleanly."""
    return json.dumps(model.model_json_schema(mode="serialization"), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def schema_files() -> dict[Path, str]:
    return {SCHEMA_DIR / f"{name}.schema.json": render(model) for name, model in EXPORTED.items()}


def main() -> int:
    SCHEMA_DIR.mkdir(exist_ok=True)
    for path, text in schema_files().items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

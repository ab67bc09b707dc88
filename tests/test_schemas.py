"""The committed JSON Schema files are exactly what the models export."""

from __future__ import annotations

import json

from paperlens.schemas import Location, PaperSpec
from paperlens.schemas.export import SCHEMA_DIR, schema_files


def test_exported_schema_files_match_the_models():
    expected = schema_files()
    committed = {p: p.read_text(encoding="utf-8") for p in SCHEMA_DIR.glob("*.json")}
    stale = [p.name for p, text in expected.items() if committed.get(p) != text]
    extra = [p.name for p in committed if p not in expected]
    assert not stale and not extra, (
        f"schemas/json is out of date (stale: {stale}, unexpected: {extra}); "
        "run `python -m paperlens.schemas.export` and commit the result"
    )


def test_schema_rejects_unknown_fields():
    schema = json.loads((SCHEMA_DIR / "paper-spec.schema.json").read_text())
    assert schema["additionalProperties"] is False
    spec = PaperSpec(source_format="latex", root=".", main_file="main.tex")
    assert PaperSpec.model_validate_json(spec.model_dump_json()) == spec


def test_location_short_forms():
    assert Location(file="a.tex", line=2, column=4).short() == "a.tex:3:5"
    assert Location(file="p.pdf", page=3, bbox=(1, 2, 3, 4)).short() == "p.pdf p.3"

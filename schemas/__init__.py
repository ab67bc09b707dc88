"""paperlens' shared vocabulary: pydantic models and their exported JSON Schema. No logic, no LSP."""

from .paper import (
    Algorithm,
    Component,
    ComponentKind,
    Equation,
    Hyperparameter,
    Location,
    PaperSpec,
    Paragraph,
    Problem,
    Section,
    SourceFormat,
    SymbolDefinition,
    SymbolInfo,
    Table,
)

__all__ = [
    "Algorithm",
    "Component",
    "ComponentKind",
    "Equation",
    "Hyperparameter",
    "Location",
    "PaperSpec",
    "Paragraph",
    "Problem",
    "Section",
    "SourceFormat",
    "SymbolDefinition",
    "SymbolInfo",
    "Table",
]

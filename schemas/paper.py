"""The PaperSpec: everything paperlens reads out of a paper, each item with where it stands."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Model

SourceFormat = Literal["latex", "pdf", "markdown"]

ComponentKind = Literal[
    "optimizer",
    "schedule",
    "normalization",
    "activation",
    "loss",
    "initialization",
    "regularizer",
    "architecture",
    "dataset",
    "metric",
]


class Location(Model):
    """Where an item stands in the paper.

    Text sources (LaTeX, Markdown) give a line/column range; lines and columns count from 0,
    columns in characters, as the Language Server Protocol does. PDFs give a page (from 1) and a
    bounding box in PDF points (x0, y0, x1, y1, origin top-left, as PyMuPDF reports it).
    """

    file: str = Field(description="Path of the source file, relative to the paper's root folder.")
    line: int | None = Field(default=None, ge=0, description="Start line (0-based).")
    column: int | None = Field(default=None, ge=0, description="Start column (0-based).")
    end_line: int | None = Field(default=None, ge=0, description="End line (0-based, inclusive).")
    end_column: int | None = Field(default=None, ge=0, description="End column (0-based, exclusive).")
    page: int | None = Field(default=None, ge=1, description="PDF page number, from 1.")
    bbox: tuple[float, float, float, float] | None = Field(
        default=None, description="PDF bounding box (x0, y0, x1, y1) in points."
    )

    def short(self) -> str:
        """Human-readable form: `file:line:col` (1-based) or `file p.N`."""
        if self.page is not None:
            return f"{self.file} p.{self.page}"
        if self.line is not None:
            return f"{self.file}:{self.line + 1}:{(self.column or 0) + 1}"
        return self.file


class Section(Model):
    """A heading of the paper."""

    id: str = Field(description="Stable id: `sec-<number>`, or a slug of the title when unnumbered.")
    number: str | None = Field(default=None, description='Number as printed, e.g. "3.2" or "A.1".')
    title: str
    level: int = Field(ge=1, description="1 for a section, 2 for a subsection, ...")
    appendix: bool = False
    label: str | None = None
    location: Location


class Equation(Model):
    """A display equation (one entry per numbered line of an align-like environment)."""

    id: str = Field(description="Stable id: the label when there is one, else `eq-<number>` or `eq@<file>:<line>`.")
    number: str | None = Field(default=None, description='Number as printed, e.g. "3" or "A.2"; none when unnumbered.')
    label: str | None = None
    latex: str | None = Field(default=None, description="LaTeX with the paper's own macros expanded; none when only text is known (PDF).")
    text: str = Field(description="The equation as plain text (for PDFs, as extracted).")
    symbols: list[str] = Field(default_factory=list, description="Symbols the equation uses, in canonical form (e.g. λ, β_1, W_q).")
    section_id: str | None = None
    location: Location


class Algorithm(Model):
    """An algorithm block (pseudo-code)."""

    id: str
    number: str | None = None
    label: str | None = None
    title: str
    steps: list[str] = Field(default_factory=list)
    section_id: str | None = None
    location: Location


class Table(Model):
    """A table with its cells as text, row by row."""

    id: str
    number: str | None = None
    label: str | None = None
    caption: str = ""
    rows: list[list[str]] = Field(default_factory=list, description="Cells as text, row by row.")
    row_locations: list[Location] = Field(default_factory=list, description="Where each row stands, parallel to `rows`.")
    section_id: str | None = None
    location: Location


class Paragraph(Model):
    """A run of prose (a paragraph, caption or footnote) as plain text, inline math kept as `$...$`."""

    text: str
    section_id: str | None = None
    kind: Literal["text", "caption", "footnote", "item"] = "text"
    location: Location
    offsets: list[tuple[int, int, int]] = Field(
        default_factory=list,
        description="Anchors mapping the text back to the source: (text offset, line, column); "
        "a position between anchors is counted forward from the previous one.",
    )


class Hyperparameter(Model):
    """One stated value."""

    name: str = Field(description="The name as written, e.g. 'learning rate' or 'λ'.")
    normalized_name: str = Field(description="Canonical name, e.g. 'learning_rate'.")
    value: float | str = Field(description="A number when numeric ('3e-4', '3 × 10^{-4}' → 0.0003), else the text.")
    raw_value: str = Field(description="The value as written.")
    unit: str | None = Field(default=None, description="Unit or the kind of quantity: '%', 'epochs', 'steps', ...")
    component: str | None = Field(default=None, description="The component it belongs to when it can be told, e.g. 'AdamW'.")
    text: str = Field(description="The sentence or table row it came from.")
    source: Literal["text", "table", "equation"] = "text"
    section_id: str | None = None
    location: Location


class Component(Model):
    """A mention of a method building block: optimizer, normalisation, loss, dataset, ..."""

    kind: ComponentKind
    name: str = Field(description="Canonical name, e.g. 'AdamW', 'LayerNorm'.")
    mention: str = Field(description="The words as written.")
    attributes: dict[str, float | str] = Field(default_factory=dict, description="Settings stated with it, by normalised name.")
    text: str = Field(description="The sentence it was found in.")
    section_id: str | None = None
    location: Location


class SymbolDefinition(Model):
    """Where a symbol is defined in the prose."""

    text: str = Field(description="The defining sentence, e.g. 'where λ weighs the KL term'.")
    location: Location


class SymbolInfo(Model):
    """A symbol used in the equations, and what the text says about it."""

    symbol: str = Field(description="Canonical form, e.g. λ or β_1.")
    latex: str | None = Field(default=None, description="One LaTeX spelling of it, when known.")
    equations: list[str] = Field(default_factory=list, description="Ids of the equations that use it.")
    definition: SymbolDefinition | None = None
    value_given: bool = Field(default=False, description="Whether the paper states a value for it.")
    value: float | str | None = None


class Problem(Model):
    """Something the reader could not read cleanly; the rest of the paper still is."""

    severity: Literal["error", "warning", "info"]
    message: str
    location: Location | None = None


class PaperSpec(Model):
    """The structured, located content of one paper."""

    schema_version: Literal[1] = 1
    source_format: SourceFormat
    root: str = Field(description="The paper's root folder (where locations' files are relative to).")
    main_file: str = Field(description="The main file, relative to root.")
    files: dict[str, str] = Field(default_factory=dict, description="Every file read, relative path → sha256.")
    title: str | None = None
    page_count: int | None = None
    sections: list[Section] = Field(default_factory=list)
    equations: list[Equation] = Field(default_factory=list)
    algorithms: list[Algorithm] = Field(default_factory=list)
    tables: list[Table] = Field(default_factory=list)
    paragraphs: list[Paragraph] = Field(default_factory=list)
    hyperparameters: list[Hyperparameter] = Field(default_factory=list)
    components: list[Component] = Field(default_factory=list)
    symbols: list[SymbolInfo] = Field(default_factory=list)
    symbol_values: dict[str, float | str] = Field(
        default_factory=dict,
        description="The value the paper states for each symbol, in a sentence, a table or an equation, "
        "keyed without subscript marks (β_{1} → 'β1'); several experiments' values joined ('0.5 / 1.0').",
    )
    problems: list[Problem] = Field(default_factory=list)

"""The decisions file (`.paperlens/decisions.yaml`): what the team decided where code and paper part ways."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Model


class Deviation(Model):
    """A deliberate difference from the paper, with its reason."""

    id: str
    setting: str = Field(description="The setting's normalised name (weight_decay) or a component kind (optimizer).")
    component: str | None = None
    paper_value: str | None = None
    code_value: str | None = Field(default=None, description="The value the code uses; empty: any value.")
    reason: str
    file: str | None = Field(default=None, description="Limit it to one workspace file.")


class Assumption(Model):
    """A value chosen where the paper is silent."""

    id: str
    setting: str
    component: str | None = None
    value: str | None = Field(default=None, description="The value assumed; empty: whatever the code sets.")
    reason: str


class Clarification(Model):
    """A question to the paper's authors, and their answer once it comes."""

    id: str
    question: str
    status: Literal["open", "answered", "withdrawn"] = "open"
    setting: str | None = Field(default=None, description="The setting it settles, when it is about one.")
    component: str | None = None
    answer: str | None = None
    value: float | str | None = Field(default=None, description="The answered value, when the answer gives one.")
    source: str | None = Field(default=None, description="Who answered, and where (an email, an issue URL).")


class SymbolBinding(Model):
    """Which code name stands for which of an equation's symbols in one function, as the team says:
    used instead of what the names' spellings suggest when that function and equation are compared."""

    function: str = Field(description="The function's qualified name (DynamicTanh.forward).")
    equation: str = Field(description="The equation's number (2) or its label.")
    symbols: dict[str, str] = Field(description="The paper's symbol as paperlens reads it (gamma, lambda_q1) → the code's name (scale).")
    file: str | None = Field(default=None, description="Limit it to one workspace file.")
    reason: str | None = None


class DecisionsFile(Model):
    """The whole file. Diffable YAML in the user's repository."""

    version: Literal[1] = 1
    deviations: list[Deviation] = Field(default_factory=list)
    assumptions: list[Assumption] = Field(default_factory=list)
    clarifications: list[Clarification] = Field(default_factory=list)
    bindings: list[SymbolBinding] = Field(default_factory=list)

"""Where the code and the paper part ways: findings, their evidence and their fixes."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Model
from .code import CodeLocation
from .decisions import SymbolBinding
from .gaps import Evidence

FindingKind = Literal["divergence", "guess", "unimplemented", "agreement"]


class TextEdit(Model):
    """Replace the text at `location` (one line, columns as in CodeLocation) with `new_text`."""

    location: CodeLocation
    new_text: str


class Fix(Model):
    """A way to resolve a finding; `edit` when it is a change to a workspace file."""

    kind: Literal["use-paper-value", "record-deviation", "record-assumption", "ask-authors", "link-equation", "correct-binding"]
    title: str
    edit: TextEdit | None = None


class Finding(Model):
    """One place where the code differs from the paper, guesses what the paper never says, or where
    the paper has something the code does not implement. Always with evidence on both sides."""

    id: str = Field(description="Stable while the code and paper do not change: kind, setting and code place.")
    kind: FindingKind
    severity: Literal["error", "warning", "info"]
    confidence: float = Field(ge=0, le=1)
    confidence_note: str | None = Field(default=None, description="Why the confidence is lowered, when it is.")
    message: str
    setting: str | None = None
    component: str | None = None
    code: CodeLocation | None = Field(default=None, description="None for an unimplemented equation or algorithm.")
    code_value: str | None = None
    paper_value: str | None = None
    paper: list[Evidence] = Field(default_factory=list, description="The paper's side: quotes with locations.")
    compares: str | None = Field(
        default=None,
        description="For a value: which experiment of the paper and which run of the code it compares "
        "(\"the paper's llama 70b experiment with the run of `torchrun main.py --model_variant=llama2_70b`\").",
    )
    fixes: list[Fix] = Field(default_factory=list)
    binding: SymbolBinding | None = Field(default=None, description="An equation compared with a function: which code name stood for which symbol.")
    status: Literal["open", "recorded"] = Field(default="open", description="Recorded: a decision in the decisions file covers it.")
    decision: str | None = Field(default=None, description="The id of the decision that covers it.")


class Undecided(Model):
    """A function an anchor ties to an equation whose expressions were not compared, and why."""

    file: str
    line: int = Field(description="0-based line of the definition.")
    function: str
    equation: str
    reason: str = Field(description="What could not be read or bound: a call, a symbol with no name in the code.")
    binding: SymbolBinding | None = Field(
        default=None,
        description="When a symbol could not be bound: the pairs paperlens could tell (an empty name where it could not), for the team to complete in the decisions file.",
    )


class CheckReport(Model):
    """The findings of one check of a workspace against a paper."""

    paper: str = Field(description="The paper's main file.")
    workspace: str
    findings: list[Finding] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list, description="Files that could be read only in part, and why.")
    undecided: list[Undecided] = Field(default_factory=list, description="Anchored functions not compared with their equation, and why.")

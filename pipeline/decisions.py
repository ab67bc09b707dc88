"""The decisions file: read strictly, written atomically, never overwritten when malformed."""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from pydantic import ValidationError

from ..schemas import Assumption, Clarification, DecisionsFile, Deviation, Finding, SymbolBinding
from .errors import DecisionsError
from .files import UnreadableFile, read_regular_file, write_atomically
from .nesting import MAX_DATA_NESTING, TooDeep, load_yaml

MAX_DECISIONS_BYTES = 16_000_000  # far more than any team's decisions

DECISIONS_PATH = Path(".paperlens") / "decisions.yaml"


def decisions_path(workspace: Path) -> Path:
    return workspace / DECISIONS_PATH


def load_decisions(workspace: Path) -> DecisionsFile:
    """The workspace's decisions; none when the file does not exist."""
    path = decisions_path(workspace)
    if not os.path.lexists(path):
        return DecisionsFile()
    try:
        text = read_regular_file(path, limit=MAX_DECISIONS_BYTES).decode("utf-8")
    except UnreadableFile as err:
        raise DecisionsError(f"{DECISIONS_PATH}: {err}; fix it (paperlens leaves it untouched)") from None
    except UnicodeDecodeError as err:
        raise DecisionsError(f"{DECISIONS_PATH}: not UTF-8 ({err.reason} at byte {err.start}); fix the file (paperlens leaves it untouched)") from None
    try:
        raw = load_yaml(text)
    except TooDeep as err:
        raise DecisionsError(f"{DECISIONS_PATH}:{err.line + 1}: nested more than {MAX_DATA_NESTING} levels deep; fix the file (paperlens leaves it untouched)") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or "not valid YAML"
        raise DecisionsError(f"{DECISIONS_PATH}{where}: {problem}; fix the file (paperlens leaves it untouched)") from None
    if raw is None:
        return DecisionsFile()
    try:
        return DecisionsFile.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise DecisionsError(
            f"{DECISIONS_PATH}: {field}: {first['msg']} ({len(err.errors())} problem(s)); fix the file (paperlens leaves it untouched)"
        ) from None


def render_decisions(decisions: DecisionsFile) -> str:
    """The file's text: stable key order and no empty fields, so it diffs cleanly."""
    data = decisions.model_dump(mode="json", exclude_none=True)
    return "# paperlens decisions: deliberate deviations, assumptions, and questions to the authors.\n" + yaml.safe_dump(
        data, sort_keys=False, allow_unicode=True, width=100
    )


def save_decisions(workspace: Path, decisions: DecisionsFile) -> Path:
    """Write atomically. A malformed existing file is an error: it is never overwritten."""
    load_decisions(workspace)
    path = decisions_path(workspace)
    write_atomically(path, render_decisions(decisions))
    return path


def record(decisions: DecisionsFile, finding: Finding, reason: str) -> DecisionsFile:
    """The decisions with `finding` recorded: a deviation for a divergence, an assumption for a guess."""
    if finding.setting is None:
        raise DecisionsError(f"{finding.id}: only findings about a setting can be recorded")
    if finding.kind == "guess":
        ids = {a.id for a in decisions.assumptions}
        entry = Assumption(id=_next_id("a", ids), setting=finding.setting, component=finding.component, value=finding.code_value, reason=reason)
        return decisions.model_copy(update={"assumptions": [*decisions.assumptions, entry]})
    ids = {d.id for d in decisions.deviations}
    entry = Deviation(
        id=_next_id("d", ids), setting=finding.setting, component=finding.component, paper_value=finding.paper_value,
        code_value=finding.code_value, reason=reason, file=finding.code.file if finding.code else None,
    )  # fmt: skip
    return decisions.model_copy(update={"deviations": [*decisions.deviations, entry]})


def ask(decisions: DecisionsFile, question: str, *, setting: str | None = None, component: str | None = None) -> DecisionsFile:
    """The decisions with `question` added as an open clarification; unchanged when it is already open."""
    if any(c.status == "open" and c.question == question for c in decisions.clarifications):
        return decisions
    entry = Clarification(id=_next_id("q", {c.id for c in decisions.clarifications}), question=question, setting=setting, component=component)
    return decisions.model_copy(update={"clarifications": [*decisions.clarifications, entry]})


def bind_symbols(decisions: DecisionsFile, binding: SymbolBinding, reason: str) -> DecisionsFile:
    """The decisions with `binding` as the one for its function, equation and file (replacing an
    earlier one): the team then corrects the names that stand for the wrong symbols."""
    kept = [b for b in decisions.bindings if (b.function, b.equation, b.file) != (binding.function, binding.equation, binding.file)]
    return decisions.model_copy(update={"bindings": [*kept, binding.model_copy(update={"reason": reason})]})


def _next_id(prefix: str, taken: set[str]) -> str:
    n = 1
    while f"{prefix}{n}" in taken:
        n += 1
    return f"{prefix}{n}"

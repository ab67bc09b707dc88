"""The repository plan: which files, which modules from which parts of the paper, and a config in
which every value says where it comes from. Deterministic: the same paper, gaps and decisions give
the same plan.

Module boundaries: one module per algorithm, and one per section (the deepest ones) holding
numbered equations; appendix derivations and background or related-work sections are left out (the
method cites what it uses from them). A setting goes into the config when an author's
answer settles it (clarification), when the paper states it with one value (paper: its first
statement, quoted and located), or when the team recorded an assumption with a value; a setting the
paper states with several different values is not chosen between, nor are disagreeing answers or
assumptions: the setting is an open item. Every gap the config does not settle is an open item,
blocking ones first, and so is a result the paper reports with different values (`results.py`).
"""

from __future__ import annotations

import keyword
import math
import os
import re
import sys
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from ...schemas import (
    DecisionsFile,
    Gap,
    Hyperparameter,
    Location,
    PaperSpec,
    ReadinessReport,
)
from ...schemas.gaps import Evidence
from ...schemas.repo import (
    ConfigValue,
    OpenItem,
    PlannedFile,
    Provenance,
    RepoPlan,
)
from ..decisions import DECISIONS_PATH
from ..extract.parts import framing_sections
from ..scaffold import module_outline, scaffold_targets
from .results import reported_results

PACKAGE_WORDS = 3  # a package name keeps this many words of the title
# What the skeleton itself names: no package or module of the paper's may take these.
RESERVED_NAMES = frozenset({"reproduce", "config", "data", "train", "evaluate", "tests", "test", "paperlens", "conftest"})


def path_from_repository(path: Path, out: Path) -> str:
    """A file (the paper, the decisions) as the repository's folder `out` reaches it: relative when it can be."""
    try:
        return Path(os.path.relpath(Path(path).resolve(), Path(out).resolve())).as_posix()
    except ValueError:  # another drive
        return Path(path).resolve().as_posix()


@dataclass
class Paper:
    """What the steps read once: the paper, its gaps and the team's decisions."""

    spec: PaperSpec
    readiness: ReadinessReport
    decisions: DecisionsFile = field(default_factory=DecisionsFile)
    path: str = ""
    decisions_path: str = DECISIONS_PATH.as_posix()  # as the repository reaches it: provenance cites it


def plan_repository(
    spec: PaperSpec,
    readiness: ReadinessReport,
    decisions: DecisionsFile,
    *,
    paper_path: str,
    decisions_path: str = DECISIONS_PATH.as_posix(),
) -> RepoPlan:
    package = package_name(spec.title or "paper")
    modules = _module_files(spec, package)
    config, contested = _config(spec, decisions, decisions_path)
    results = reported_results(spec)
    settled = {value.name for value in config if value.provenance.kind != "paper"}  # what the decisions settle
    files = [
        PlannedFile(path="pyproject.toml", role="config", purpose="Test settings and where the paper is, for `paperlens check`."),
        PlannedFile(path="config.toml", role="config", purpose="Every value the run uses, each with its provenance; the open items."),
        PlannedFile(path=f"{package}/__init__.py", role="package", purpose="The package."),
        PlannedFile(
            path=f"{package}/config.py",
            role="config",
            purpose="Reads config.toml; asking for an open item raises with its question.",
            depends_on=["config.toml"],
        ),
        *modules,
        PlannedFile(
            path=f"{package}/data.py",
            role="data",
            purpose="The datasets the paper names (to be written) and a small synthetic one for the smoke run.",
            depends_on=[f"{package}/config.py"],
        ),
        PlannedFile(
            path=f"{package}/train.py",
            role="train",
            purpose="Seeds, the training loop and its step (the step calls the method's modules).",
            depends_on=[f"{package}/config.py", f"{package}/data.py", *(m.path for m in modules)],
        ),
        PlannedFile(
            path=f"{package}/evaluate.py",
            role="evaluate",
            purpose="The metrics the paper reports, measured.",
            depends_on=[f"{package}/data.py", *(m.path for m in modules)],
        ),
        PlannedFile(
            path="reproduce.py",
            role="reproduce",
            purpose="One command: train and evaluate per seed, writing runs/seed-N/metrics.json; --smoke runs a few "
            "steps on synthetic data.",
            depends_on=[f"{package}/train.py", f"{package}/evaluate.py"],
        ),
        *(
            PlannedFile(path=_test_path(m.path), role="test", purpose=f"Shape tests of {m.path}.", depends_on=[m.path])
            for m in modules
        ),
        PlannedFile(
            path="tests/test_reproduce.py",
            role="test",
            purpose="The smoke path runs; the config's provenance is complete.",
            depends_on=["reproduce.py", "config.toml"],
        ),
        PlannedFile(path="requirements.txt", role="requirements", purpose="What the code imports."),
        PlannedFile(
            path="Dockerfile", role="dockerfile", purpose="The image the smoke run and the full run use.", depends_on=["requirements.txt"]
        ),
        PlannedFile(path="README.md", role="docs", purpose="How to run it, and what the paper leaves open."),
    ]
    return RepoPlan(
        paper_title=spec.title or spec.main_file,
        paper_path=paper_path,
        package=package,
        files=files,
        config=config,
        open_items=_open_items(readiness, settled, contested + results.contested),
        metrics=results.metrics,
    )


def provenance_counts(plan: RepoPlan) -> dict[str, int]:
    """How many config values come from the paper, from answers, from assumptions."""
    return {kind: sum(v.provenance.kind == kind for v in plan.config) for kind in ("paper", "clarification", "assumption")}


def package_name(title: str) -> str:
    """A Python package name from the paper's title: its first words, snake case."""
    ascii_title = unicodedata.normalize("NFKD", re.sub(r"\$[^$]*\$", " ", title)).encode("ascii", "ignore").decode()
    stop = {"a", "an", "the", "of", "for", "with", "on", "in", "to", "via", "by", "and", "is", "are", "we", "our"}
    words = [w for w in re.findall(r"[a-z0-9]+", ascii_title.lower()) if w not in stop][:PACKAGE_WORDS]
    name = "_".join(words)
    taken = name in sys.stdlib_module_names or name in RESERVED_NAMES or keyword.iskeyword(name)
    if not name or not name[0].isalpha() or taken:
        name = f"paper_{name}".rstrip("_")
    return name


def _module_files(spec: PaperSpec, package: str) -> list[PlannedFile]:
    labels = dict(scaffold_targets(spec))
    targets = list(labels)
    sections = {s.id: s for s in spec.sections}
    framing = framing_sections(spec)
    chosen = []
    for target in targets:
        section = sections.get(target)
        if section is None:
            chosen.append(target)  # an algorithm
            continue
        deeper = [t for t in targets if t in sections and t != target and _is_subsection(spec, sections[t], section)]
        if not section.appendix and not deeper and section.id not in framing:
            chosen.append(target)
    files, taken = [], set()
    owner: dict[str, str] = {}  # equation id → the first module implementing it; later ones import it
    for target in chosen:
        name, equations, implemented = module_outline(spec, target)
        unique, number = name, 1
        while unique in taken or unique in RESERVED_NAMES:
            number += 1
            unique = f"{name}_{number}"
        taken.add(unique)
        path = f"{package}/{unique}.py"
        files.append(
            PlannedFile(
                path=path,
                role="module",
                purpose=f"{labels[target]}: "
                + ("a function per equation" if target in sections else "its steps, calling the functions of what it cites")
                + ", raising NotImplementedError until written.",
                source=target,
                equations=equations,
                depends_on=list(dict.fromkeys(owner[e] for e in implemented if e in owner)),
            )
        )
        owner |= {e: path for e in implemented if e not in owner}
    return files


def _is_subsection(spec: PaperSpec, inner, outer) -> bool:
    """Whether section `inner` is a subsection of `outer` (it follows it, deeper, before the next
    heading at `outer`'s level)."""
    order = [s.id for s in spec.sections]
    start, position = order.index(outer.id), order.index(inner.id)
    if position <= start:
        return False
    return all(s.level > outer.level for s in spec.sections[start + 1 : position + 1])


def _test_path(module_path: str) -> str:
    return f"tests/test_{module_path.rsplit('/', 1)[-1]}"


# -- the config --------------------------------------------------------------------------------------


def _config(spec: PaperSpec, decisions: DecisionsFile, decisions_path: str) -> tuple[list[ConfigValue], list[OpenItem]]:
    """The config's values, and the settings left open because their sources disagree: answers
    that differ, assumptions that differ, or a paper stating several values."""
    decisions_location = Location(file=decisions_path)
    values: dict[str, ConfigValue] = {}
    contested: list[OpenItem] = []

    def disagree(setting: str, shown: list[str], evidence: list[Evidence], what: str) -> None:
        listed = ", ".join(shown[:-1]) + f" and {shown[-1]}"
        question = f"{what} {setting} = {listed}. Which one was used for the reported results?"
        contested.append(OpenItem(id=f"several-values:{setting}", setting=setting, question=question, blocking=True, evidence=evidence))

    answered: dict[str, list] = {}
    for clarification in decisions.clarifications:
        if clarification.status == "answered" and clarification.setting and clarification.value is not None:
            answered.setdefault(clarification.setting, []).append(clarification)
    for setting, answers in answered.items():
        quotes = [f"Answer to “{c.question}”: {c.answer or c.value}" + (f" ({c.source})" if c.source else "") for c in answers]
        if len({_key(c.value) for c in answers}) > 1:
            disagree(setting, [str(c.value) for c in answers], [Evidence(quote=q, location=decisions_location) for q in quotes],
                     "The recorded answers give")  # fmt: skip
            continue
        first = answers[0]
        values[setting] = ConfigValue(
            name=setting,
            value=first.value,
            shown=str(first.value),
            component=first.component,
            provenance=Provenance(kind="clarification", quote=quotes[0], location=decisions_location, decision_id=first.id),
        )
    statements: dict[str, list[Hyperparameter]] = {}
    for stated in spec.hyperparameters:
        if not isinstance(stated.value, float) or math.isfinite(stated.value):
            statements.setdefault(stated.normalized_name, []).append(stated)
    for name, stated in statements.items():
        if name in answered:
            continue  # an answer outranks the text, and disagreeing answers stay open
        if len({_key(s.value) for s in stated}) > 1:  # never chosen between
            shown = [f"{s.raw_value} ({s.location.short()})" for s in stated]
            disagree(name, shown, [Evidence(quote=s.text, location=s.location) for s in stated], "The paper gives")
            continue
        first = stated[0]
        values[name] = ConfigValue(
            name=name,
            value=first.value,
            shown=first.raw_value,
            unit=first.unit,
            component=first.component,
            provenance=Provenance(kind="paper", quote=first.text, location=first.location),
        )
    assumed: dict[str, list] = {}
    for assumption in decisions.assumptions:
        if assumption.value is not None and assumption.setting not in values and assumption.setting not in answered:
            assumed.setdefault(assumption.setting, []).append(assumption)
    for setting, assumptions in assumed.items():
        if setting in statements:
            continue  # the paper's several values: an assumption does not pick one
        reasons = [a.reason.strip() or f"assumed {a.value} (no reason recorded)" for a in assumptions]
        if len({_key(_number_or_text(a.value)) for a in assumptions}) > 1:
            disagree(setting, [a.value for a in assumptions], [Evidence(quote=r, location=decisions_location) for r in reasons],
                     "The recorded assumptions give")  # fmt: skip
            continue
        first = assumptions[0]
        values[setting] = ConfigValue(
            name=setting,
            value=_number_or_text(first.value),
            shown=first.value,
            component=first.component,
            provenance=Provenance(kind="assumption", quote=reasons[0], location=decisions_location, decision_id=first.id),
        )
    return sorted(values.values(), key=lambda v: v.name), contested


def _key(value: float | str) -> float | str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return round(float(value), 12)
    return str(value).strip().lower()


def _number_or_text(text: str) -> float | str:
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


def _open_items(readiness: ReadinessReport, settled: set[str], contested: list[OpenItem]) -> list[OpenItem]:
    """Every gap the decisions do not settle, in the report's order, and the settings whose sources
    disagree (unless a gap already asks about them); blocking first."""
    gaps = [*readiness.gaps, *([readiness.conventional] if readiness.conventional else [])]
    ranked = [(gap.rank or len(gaps), item) for gap in gaps for item in _open_items_of(gap) if not (item.setting and item.setting in settled)]
    asked = {item.setting for _, item in ranked if item.setting}
    ranked += [(len(readiness.gaps) + 1, item) for item in contested if item.setting not in asked]
    return [item for _, item in sorted(ranked, key=lambda pair: (not pair[1].blocking, pair[0]))]


def _open_items_of(gap: Gap) -> list[OpenItem]:
    """A gap's open items: the conventional defaults asked together are settled one by one (what a
    formula leaves to convention is a reading, not a setting to settle)."""
    if gap.kind == "unstated-defaults" or gap.grouped_settings:
        return [
            OpenItem(id=f"{gap.id}:{setting}", setting=setting, question=gap.question, blocking=gap.blocking, evidence=list(gap.evidence))
            for setting in gap.grouped_settings
        ]
    return [OpenItem(id=gap.id, setting=gap.setting, question=gap.question, blocking=gap.blocking, evidence=list(gap.evidence))]

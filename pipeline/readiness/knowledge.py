"""The readiness vocabularies (requirements.yaml, ambiguities.yaml, steps.yaml, metrics.yaml, formulas.yaml), loaded once."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..nesting import YAML_LOADER
from ...schemas import Convention

KNOWLEDGE = Path(__file__).resolve().parents[1] / "knowledge"


@dataclass(frozen=True, slots=True)
class Requirement:
    setting: str
    stated_by: tuple[str, ...]
    stated_by_components: tuple[str, ...]
    stated_by_text: re.Pattern[str] | None  # words that state it where no number is extracted
    label: str
    blocking: bool
    category: str
    conventions: tuple[Convention, ...]
    conventional: bool = False  # kept at the library's default by nearly everyone: asked once, together
    needs_training: bool = False  # needed only where the paper trains (CFG's condition dropout, not its sampling)


@dataclass(frozen=True, slots=True)
class StepSlot:
    id: str
    label: str
    filled: re.Pattern[str]
    question: str
    readings: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StepFrame:
    """A kind of step a method performs ("we combine ...") and what an implementer must know to write it."""

    id: str
    action: re.Pattern[str]
    restated: re.Pattern[str]  # words a sentence elsewhere uses when it speaks of the step again
    category: str
    blocking: bool
    slots: tuple[StepSlot, ...]
    said_anywhere: re.Pattern[str] | None = None  # words that say the open slot in any prose sentence of the method
    said_by_table: re.Pattern[str] | None = None  # a header cell that, twice or more in a table's first rows or column, says it
    said_by_name: re.Pattern[str] | None = None  # a name that, heading a table row or column of numbers or in a caption with one, says it
    per_experiment: bool = False  # a sentence opening with other named experiments says nothing of this step
    own_setting: bool = False  # the slot is the step's own setting (a threshold): sentences about what it acts on say nothing of it


@dataclass(frozen=True, slots=True)
class Metric:
    """A reported metric whose number depends on a protocol, and what the paper must say of it."""

    id: str
    names: re.Pattern[str]
    slots: tuple[StepSlot, ...]


@dataclass(frozen=True, slots=True)
class HeldOutData:
    """The validation or test data a number is measured on, and what says which data it is."""

    mentions: re.Pattern[str]
    measured: re.Pattern[str]  # a number measured there, not a value tuned there
    made: re.Pattern[str]  # a split the paper makes or sizes itself
    evaluation_suites: frozenset[str]
    without_official_splits: frozenset[str]
    question: str
    readings: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Metrics:
    followed: re.Pattern[str]  # a named setup followed: it says every slot
    near: re.Pattern[str]  # a paragraph about evaluation, which may say a slot without naming the metric
    metrics: tuple[Metric, ...]
    held_out: HeldOutData


@dataclass(frozen=True, slots=True)
class FormulaConvention:
    """What a formula leaves to convention when it does not write it (a norm's order), and the usual reading."""

    id: str
    label: str
    uses: re.Pattern[str]
    writes: re.Pattern[str]
    usually: str


@dataclass(frozen=True, slots=True)
class AmbiguousWording:
    id: str
    pattern: re.Pattern[str]
    category: str
    blocking: bool
    title: str
    question: str
    readings: tuple[str, ...]
    conventions: tuple[Convention, ...]
    unless: re.Pattern[str] | None
    context: re.Pattern[str] | None
    settled_by_formula: bool


@dataclass(frozen=True, slots=True)
class Requirements:
    by_component: dict[str, tuple[Requirement, ...]]  # canonical name, or "kind:<kind>"
    training: tuple[Requirement, ...]


def _conventions(raw: list[dict] | None) -> tuple[Convention, ...]:
    return tuple(Convention.model_validate(c) for c in raw or [])


def _requirement(raw: dict) -> Requirement:
    return Requirement(
        setting=raw["setting"],
        stated_by=tuple(raw.get("stated_by", [])),
        stated_by_components=tuple(raw.get("stated_by_components", [])),
        stated_by_text=re.compile(raw["stated_by_text"], re.IGNORECASE) if raw.get("stated_by_text") else None,
        label=raw["label"],
        conventional=bool(raw.get("conventional", False)),
        needs_training=bool(raw.get("needs_training", False)),
        blocking=bool(raw["blocking"]),
        category=raw["category"],
        conventions=_conventions(raw.get("conventions")),
    )


def _load_yaml(name: str) -> Any:
    # libyaml's loader where PyYAML has it: the pure-Python one takes ~10 ms a file, at every start.
    return yaml.load((KNOWLEDGE / name).read_text(encoding="utf-8"), Loader=YAML_LOADER)


@functools.cache
def requirements() -> Requirements:
    raw = _load_yaml("requirements.yaml")
    return Requirements(
        by_component={name: tuple(_requirement(r) for r in items) for name, items in raw["components"].items()},
        training=tuple(_requirement(r) for r in raw["training"]),
    )


@functools.cache
def ambiguous_wordings() -> tuple[AmbiguousWording, ...]:
    raw = _load_yaml("ambiguities.yaml")
    return tuple(
        AmbiguousWording(
            id=entry["id"],
            pattern=re.compile(entry["pattern"], re.IGNORECASE),
            category=entry["category"],
            blocking=bool(entry["blocking"]),
            title=entry["title"],
            question=entry["question"],
            readings=tuple(entry.get("readings", [])),
            conventions=_conventions(entry.get("conventions")),
            unless=re.compile(entry["unless"], re.IGNORECASE) if entry.get("unless") else None,
            context=re.compile(entry["context"], re.IGNORECASE) if entry.get("context") else None,
            settled_by_formula=bool(entry.get("settled_by_formula", False)),
        )
        for entry in raw
    )


@functools.cache
def step_frames() -> tuple[StepFrame, ...]:
    return tuple(
        StepFrame(
            id=entry["id"],
            action=re.compile(_with_parts(entry["action"], entry.get("define", {})), re.IGNORECASE),
            restated=re.compile(entry["restated"], re.IGNORECASE),
            category=entry["category"],
            blocking=bool(entry["blocking"]),
            slots=tuple(
                StepSlot(
                    id=slot["id"],
                    label=slot["label"],
                    filled=re.compile(slot["filled"], re.IGNORECASE),
                    question=slot["question"],
                    readings=tuple(slot.get("readings", [])),
                )
                for slot in entry["slots"]
            ),
            said_anywhere=re.compile(entry["said_anywhere"], re.IGNORECASE) if entry.get("said_anywhere") else None,
            said_by_table=re.compile(entry["said_by_table"], re.IGNORECASE) if entry.get("said_by_table") else None,
            said_by_name=re.compile(entry["said_by_name"], re.IGNORECASE) if entry.get("said_by_name") else None,
            per_experiment=bool(entry.get("per_experiment", False)),
            own_setting=bool(entry.get("own_setting", False)),
        )
        for entry in _load_yaml("steps.yaml")
    )


def _with_parts(pattern: str, parts: dict[str, str]) -> str:
    """A pattern with its named parts ({name}) written out, each part with the ones before it."""
    written: dict[str, str] = {}
    for name, part in parts.items():
        for known, text in written.items():
            part = part.replace("{" + known + "}", text)
        written[name] = part
    for name, text in written.items():
        pattern = pattern.replace("{" + name + "}", text)
    return pattern


@functools.cache
def metrics() -> Metrics:
    raw = _load_yaml("metrics.yaml")
    return Metrics(
        followed=re.compile(raw["followed"]),
        near=re.compile(raw["near"], re.IGNORECASE),
        metrics=tuple(
            Metric(
                id=entry["id"],
                names=re.compile(entry["names"]),  # case-sensitive: "IS" is not "is"
                slots=tuple(
                    StepSlot(
                        id=slot["id"],
                        label=slot["label"],
                        filled=re.compile(slot["filled"], re.IGNORECASE),
                        question=entry["question"].replace("{label}", slot["label"]),
                        readings=tuple(entry.get("readings", [])),
                    )
                    for slot in entry["slots"]
                ),
            )
            for entry in raw["metrics"]
        ),
        held_out=HeldOutData(
            mentions=re.compile(raw["held_out"]["mentions"], re.IGNORECASE),
            measured=re.compile(raw["held_out"]["measured"], re.IGNORECASE),
            made=re.compile(raw["held_out"]["made"], re.IGNORECASE),
            evaluation_suites=frozenset(raw["held_out"]["evaluation_suites"]),
            without_official_splits=frozenset(raw["held_out"]["without_official_splits"]),
            question=raw["held_out"]["question"],
            readings=tuple(raw["held_out"]["readings"]),
        ),
    )


@functools.cache
def formula_conventions() -> tuple[FormulaConvention, ...]:
    return tuple(
        FormulaConvention(
            id=entry["id"],
            label=entry["label"],
            uses=re.compile(entry["uses"]),
            writes=re.compile(entry["writes"]),
            usually=entry["usually"],
        )
        for entry in _load_yaml("formulas.yaml")
    )

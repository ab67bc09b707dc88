"""What a value counts (tokens, examples, steps, epochs), on either side, so that a setting's value in
one measure is never compared with a value in another: "a batch size of 4M tokens" says nothing of
`batch_size = 8` sequences, "300 epochs" nothing of `max_steps`.

The paper side: the unit written with the value ("4M tokens"), else its setting's measure
(hyperparameters.yaml: `unit_measures`, `measure`). The code side: the unit words of the name
(code.yaml: `unit_words`; `tokens_per_batch` counts tokens), else its setting's measure. When either
side's measure is unknown, nothing is said and the values are compared as before.
"""

from __future__ import annotations

import functools
import re

import yaml

from ..nesting import YAML_LOADER
from ..extract.knowledge import KNOWLEDGE_DIR, hyperparameter_vocabulary

# A name of several measures ("steps_epochs"): comparable with none.
MIXED = "mixed"
_CAMEL_BOUNDARY_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD_SPLIT_RE = re.compile(r"[^A-Za-z0-9]+")


@functools.cache
def _unit_words() -> dict[str, str]:
    """Word of a code name → the measure it says its value counts."""
    with open(KNOWLEDGE_DIR / "code.yaml", encoding="utf-8") as file:
        data = yaml.load(file, Loader=YAML_LOADER)
    measures = set(hyperparameter_vocabulary().unit_measures.values())
    words: dict[str, str] = {}
    for measure, spelled in data.get("unit_words", {}).items():
        if measure not in measures:
            raise ValueError(f"code.yaml: unit_words names {measure!r}, no unit measure of hyperparameters.yaml")
        for word in spelled:
            words[word.lower()] = measure
    return words


def _name_words(name: str) -> list[str]:
    """The words of a code name's last part, up to a `per`: `cfg.tokensPerBatch` → [tokens]."""
    last = name.rsplit(".", 1)[-1]
    if not last.isupper() and not last.islower():
        last = _CAMEL_BOUNDARY_RE.sub("_", last)
    words = [word for word in _WORD_SPLIT_RE.split(last.lower()) if word]
    return words[: words.index("per")] if "per" in words else words


@functools.lru_cache(maxsize=4096)
def code_measure(name: str, setting: str) -> str | None:
    """What a code value named `name` (as written) of `setting` counts; MIXED when its name says
    several things, None when neither its name nor its setting says."""
    words = _unit_words()
    said = {words[word] for word in _name_words(name) if word in words}
    if len(said) > 1:
        return MIXED
    if said:
        return said.pop()
    return hyperparameter_vocabulary().measure_of(setting, None)


def paper_measure(setting: str, unit: str | None) -> str | None:
    """What a value the paper states for `setting`, written in `unit`, counts; None when unknown."""
    return hyperparameter_vocabulary().measure_of(setting, unit)


def comparable(paper: str | None, code: str | None) -> bool:
    """Whether values of these measures may be compared: both known and different, they may not."""
    return paper is None or code is None or (paper == code and code != MIXED)

"""The knowledge files: every key is one the loader reads, every reference names an entry."""

from __future__ import annotations

import yaml

from paperlens.pipeline.extract.knowledge import (
    KNOWLEDGE_DIR,
    PhraseSet,
    component_vocabulary,
    hyperparameter_vocabulary,
    symbol_vocabulary,
)
from paperlens.pipeline.extract.values import parse_value

ENTRY_KEYS = {
    "aliases", "table_aliases", "symbols", "count_nouns", "unit_names", "range", "components", "exclude_prefixes",
    "expand", "text_values", "integer", "dimensions", "per_device", "renamed_with", "contextual_aliases",
    "share_actions", "measure", "off_when_negated", "named_when_used",
}  # fmt: skip
COMPONENT_KINDS = {
    "optimizer", "schedule", "normalization", "activation", "loss", "initialization", "regularizer", "architecture",
    "dataset", "metric",
}  # fmt: skip


def _load(name: str) -> dict:
    return yaml.safe_load((KNOWLEDGE_DIR / name).read_text(encoding="utf-8"))


def test_hyperparameter_entries_are_consistent() -> None:
    data = _load("hyperparameters.yaml")
    entries = data["hyperparameters"]
    components = _load("components.yaml")
    canonical_components = {name for names in components.values() for name in names}
    for name, spec in entries.items():
        assert set(spec) <= ENTRY_KEYS, (name, set(spec) - ENTRY_KEYS)
        assert name == name.lower() and " " not in name, name
        referenced = [
            *spec.get("expand", ()),
            *spec.get("unit_names", {}).values(),
            *spec.get("renamed_with", {}).values(),
        ]
        if "per_device" in spec:
            referenced.append(spec["per_device"])
        assert set(referenced) <= set(entries), (name, set(referenced) - set(entries))
        assert set(spec.get("components", ())) <= COMPONENT_KINDS, name
        assert set(spec.get("renamed_with", {})) <= canonical_components, name
        if "range" in spec:
            low, high = spec["range"]
            assert low <= high, name
        if "contextual_aliases" in spec:
            assert set(spec["contextual_aliases"]) == {"context", "aliases"}, name
        assert spec.get("measure", "tokens") in data["unit_measures"], name


def test_units_have_one_measure_and_code_names_them() -> None:
    measures = _load("hyperparameters.yaml")["unit_measures"]
    units = [unit for listed in measures.values() for unit in listed]
    assert len(units) == len(set(units))
    # Every unit is one values.py reads after a value, as it names it.
    for unit in units:
        parsed = parse_value(f"4 {unit}")
        assert parsed is not None and parsed.unit == unit, unit
    assert set(_load("code.yaml")["unit_words"]) <= set(measures)
    vocabulary = hyperparameter_vocabulary()
    assert vocabulary.measure_of("batch_size", "tokens") == "tokens"
    assert vocabulary.measure_of("batch_size", None) == "examples"
    assert vocabulary.measure_of("training_steps", None) == "steps"  # its count nouns' measure
    assert vocabulary.measure_of("num_layers", "layers") is None


def test_component_kinds_are_the_schema_kinds() -> None:
    assert set(_load("components.yaml")) == COMPONENT_KINDS


def test_vocabularies_load() -> None:
    vocabulary = hyperparameter_vocabulary()
    assert vocabulary.names.get("learning rate").entry.name == "learning_rate"
    assert vocabulary.names.get("LR") is not None  # all-lowercase aliases match in any case
    global_norm = vocabulary.names.get("global norm")
    assert global_norm.entry.name == "grad_clip_norm"
    assert global_norm.applies_in("Gradients are clipped to a global norm of 1.0.")
    assert not global_norm.applies_in("The features have a global norm of 1.0.")
    assert vocabulary.symbols["β1"].name == "beta1"
    assert component_vocabulary().get("adamw") is None  # "AdamW" only as written
    assert "sum" in symbol_vocabulary().binding_commands


def test_a_phrase_matched_in_another_case_hides_no_phrase_inside_it() -> None:
    """"PPO clip range" (written with capitals: matched as written) does not match "ppo Clip Range",
    and "clip range" (any case) inside it still does; a phrase in its own case is found once."""
    phrases = PhraseSet([("PPO clip range", "ppo"), ("clip range", "any")])
    assert [(m.value, m.start, m.end) for m in phrases.finditer("ppo Clip Range")] == [("any", 4, 14)]
    assert [(m.value, m.start) for m in phrases.finditer("PPO clip range and a clip range")] == [("ppo", 0), ("any", 21)]
    table_row = "PPO Clip Range"  # a table's first cell, as advantage-alignment writes it
    assert [m.value.name for m in hyperparameter_vocabulary().table_names.finditer(table_row)] == ["ppo_clip"]

"""Component mentions: canonical names, word boundaries, case, overlapping aliases, attributes."""

from __future__ import annotations

import pytest

from paperlens.pipeline.extract.components import find_mentions
from paperlens.pipeline.extract.knowledge import component_vocabulary

from .test_extract_helpers import enriched


def mentions(text: str) -> list[tuple[str, str, str]]:
    return [(m.kind, m.name, text[m.start : m.end]) for m in find_mentions(text)]


@pytest.mark.parametrize(
    ("text", "kind", "name"),
    [
        ("We optimize with AdamW.", "optimizer", "AdamW"),
        ("trained with stochastic gradient descent", "optimizer", "SGD"),
        ("with SGD with Nesterov momentum", "optimizer", "SGD"),
        ("a cosine learning rate schedule", "schedule", "cosine"),
        ("we use linear warm-up", "schedule", "linear warmup"),
        ("Layer Normalization is applied", "normalization", "LayerNorm"),
        ("replacing LN with DyT", "normalization", "LayerNorm"),
        ("with GELU activations", "activation", "GELU"),
        ("the cross entropy loss", "loss", "cross-entropy"),
        ("the InfoNCE objective", "loss", "contrastive"),
        ("with He initialization", "initialization", "Kaiming"),
        ("stochastic depth of 0.1", "regularizer", "Stochastic depth"),
        ("a ResNet-50 backbone", "architecture", "ResNet-50"),
        ("a ResNet50 backbone", "architecture", "ResNet-50"),
        ("a ViT-B/16 encoder", "architecture", "ViT-B"),
        ("a U-Net denoiser", "architecture", "U-Net"),
        ("trained on ImageNet-1k", "dataset", "ImageNet-1k"),
        ("on CIFAR10 and", "dataset", "CIFAR-10"),
        ("we report FID", "metric", "FID"),
        ("and the Inception Score", "metric", "IS"),
        ("the IS improves", "metric", "IS"),
        ("mIoU on ADE20K", "metric", "mIoU"),
    ],
)
def test_finds(text: str, kind: str, name: str) -> None:
    assert (kind, name) in [(k, n) for k, n, _ in mentions(text)]


def test_one_entry_per_mention_longest_alias_wins() -> None:
    assert mentions("pretrained on ImageNet-21k, then ImageNet") == [
        ("dataset", "ImageNet-21k", "ImageNet-21k"),
        ("dataset", "ImageNet", "ImageNet"),
    ]
    assert mentions("a cosine learning rate decay schedule") == [("schedule", "cosine", "cosine learning rate decay")]


@pytest.mark.parametrize(
    "text",
    [
        "This is what it is.",  # "IS" only in capitals
        "the pq norm",  # "PQ" only in capitals
        "An adamant lion sees the transformation.",  # no word-internal matches, no lowercase "Lion"
        "Adaptive methods",
    ],
)
def test_common_words_are_no_components(text: str) -> None:
    assert [name for _, name, _ in mentions(text) if name in {"IS", "PQ", "Adam", "Lion", "Transformer"}] == []


def test_component_entries_with_attributes() -> None:
    spec = enriched("We use AdamW with a learning rate of 1e-3 and $\\beta_2 = 0.95$ on ImageNet.")
    components = {c.name: c for c in spec.components}
    assert set(components) == {"AdamW", "ImageNet"}
    adamw = components["AdamW"]
    assert adamw.kind == "optimizer"
    assert adamw.mention == "AdamW"
    assert adamw.attributes == {"learning_rate": 1e-3, "beta2": 0.95}
    assert components["ImageNet"].attributes == {}
    assert adamw.text == spec.paragraphs[0].text
    assert (adamw.location.line, adamw.location.column, adamw.location.end_column) == (0, 7, 12)


def test_vocabulary_aliases_are_unambiguous() -> None:
    # Every alias names one component: the first one listed would silently win otherwise.
    import yaml

    from paperlens.pipeline.extract.knowledge import KNOWLEDGE_DIR

    seen: dict[str, str] = {}
    data = yaml.safe_load((KNOWLEDGE_DIR / "components.yaml").read_text())
    for names in data.values():
        for name, aliases in names.items():
            for alias in aliases:
                if isinstance(alias, str):
                    key = alias if alias != alias.lower() else alias.lower()
                    assert seen.setdefault(key, name) == name, f"{alias!r}: {seen[key]} and {name}"
    assert component_vocabulary().get("AdamW") is not None

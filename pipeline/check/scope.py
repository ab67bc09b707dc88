"""The experiment or part of the model a stated value is for, and whether a code site is about it.

A paper states values for something: "a patch size of 2" for "the decoder", "12 epochs on COCO",
"a 12-layer MLP as the prediction head". Those names, in the clause of the value (or the whole
sentence when it has one clause), are its scope. A code site is about a scope when its file path,
name or call names it (`configs/coco/...`, `decoder.patch_size`, `SimpleMLP(num_layers=...)`).
A scoped value says nothing about a site that names none of its scope: it is not compared there.
"""

from __future__ import annotations

import functools
import re

from ...schemas import ValueSite
from ..extract.components import find_mentions

# The parts of a model a sentence can give a setting of.
MODULE_NOUNS = frozenset(
    "encoder decoder head heads mlp backbone discriminator generator critic actor tokenizer teacher student "
    "classifier predictor projector adapter vae autoencoder".split()
)
# Names of a model or a dataset: ViT-B, DiT, ADE20K, ImageNet, CIFAR-10, LLaMA, 7B.
_NAME_RE = re.compile(r"(?<![\w\\-])(?:[A-Za-z]*[A-Z][a-z]*[A-Z0-9][\w.-]*|\d+(?:\.\d+)?[BM])(?![\w-])")
_MATH_OR_CITATION_RE = re.compile(r"\$[^$]*\$|\[[^\]]*\]|\([^()]*\)")
_CLAUSE_BREAK_RE = re.compile(r",|;|\band\b|\bwhile\b|\bwhereas\b")
_WORD_RE = re.compile(r"[A-Za-z]+")
# Components are what a value belongs to, not which experiment: "AdamW" scopes nothing.
_NOT_A_SCOPE_KINDS = ("optimizer", "schedule", "normalization", "activation", "loss", "initialization", "regularizer", "metric")


def fold(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


@functools.cache
def _is_component(name: str) -> bool:
    return any(mention.kind in _NOT_A_SCOPE_KINDS for mention in find_mentions(name))


def scope_of(sentence: str, raw_value: str) -> frozenset[str]:
    """The folded names of what the value is stated for, from its clause of the sentence."""
    text = _MATH_OR_CITATION_RE.sub(lambda m: " " * len(m.group()), sentence)
    at = sentence.find(raw_value)
    if at < 0:
        clause = text
    else:
        starts = [m.end() for m in _CLAUSE_BREAK_RE.finditer(text, 0, at)]
        ends = [m.start() for m in _CLAUSE_BREAK_RE.finditer(text, at + len(raw_value))]
        clause = text[starts[-1] if starts else 0 : ends[0] if ends else len(text)]
    scope = {word.lower() for word in _WORD_RE.findall(clause) if word.lower() in MODULE_NOUNS}
    scope |= {fold(name) for name in _NAME_RE.findall(clause) if not _is_component(name) and len(fold(name)) >= 2}
    return frozenset(scope)


def site_context(site: ValueSite) -> str:
    """What a site's own place says it is about: its file path, name and call, folded."""
    return fold(" ".join(part for part in (site.location.file, site.name, site.call or "") if part))


def fits(scope: frozenset[str], context: str) -> bool:
    return not scope or any(name in context for name in scope)

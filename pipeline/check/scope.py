"""The experiment or part of the model a stated value is for, and whether a code site is about it.

A paper states values for something: "a patch size of 2" for "the decoder", "12 epochs on COCO",
"a 12-layer MLP as the prediction head". Those names, in the clause of the value (or the whole
sentence when it has one clause), are its scope. A code site is about a scope when its file path,
name or call names it (`configs/coco/...`, `decoder.patch_size`, `SimpleMLP(num_layers=...)`).
A scoped value says nothing about a site that names none of its scope: it is not compared there.

The code side has its experiments too. A site's stage (`site_stage`): `euler_sampler(num_steps=50)`
sets a sampler's steps, not training's. Its variants (`variant_families`): `DiT_XL_2` and `DiT_XL_4`
call one constructor with patch sizes 2 and 4, `eomt_base_640.yaml` and `eomt_base_640_2x.yaml`
are one run at two schedules; a head's depth beside the backbone's; when one variant has the
paper's value the others are other experiments or other parts. Runs the paper never speaks of (`outside_the_paper`): `configs/dinov3/` beside the
`configs/dinov2/` of a paper that names DINOv2 only.
"""

from __future__ import annotations

import functools
import re
from pathlib import PurePosixPath

from ...schemas import ValueSite
from ..code.knowledge import is_part_setting, normalize_name, stage_named_by
from ..code.launchers import command_numbers, script_of, subcommand_of
from ..extract.components import find_mentions

# The parts of a model a sentence can give a setting of.
MODULE_NOUNS = frozenset(
    "encoder decoder head heads mlp backbone discriminator generator critic actor tokenizer teacher student "
    "classifier predictor projector adapter vae autoencoder".split()
)
# Names of a model or a dataset: ViT-B, DiT, ADE20K, ImageNet, CIFAR-10, LLaMA, 7B.
# A model's size names it ("LLaMA 7B"); a count of what it is trained on ("200B tokens") does not.
_NAME_RE = re.compile(
    r"(?<![\w\\-])(?:[A-Za-z]*[A-Z][a-z]*[A-Z0-9][\w.-]*|[A-Z][a-z]*-[A-Z][\w.-]*"
    r"|\d+(?:\.\d+)?[BM](?!\s*(?:tokens?|images?|samples?|examples?|steps?|iterations?|words?|sequences?|pairs?|frames?)\b))(?![\w-])"
)
_MATH_OR_CITATION_RE = re.compile(r"\$[^$]*\$|\[[^\]]*\]|\([^()]*\)")
_CLAUSE_BREAK_RE = re.compile(r",|;|\band\b|\bwhile\b|\bwhereas\b")
_WORD_RE = re.compile(r"[A-Za-z]+")
# Components are what a value belongs to, not which experiment: "AdamW" scopes nothing.
_NOT_A_SCOPE_KINDS = ("optimizer", "schedule", "normalization", "activation", "loss", "initialization", "regularizer", "metric")


def fold(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


@functools.cache
def _is_component(name: str) -> bool:
    return any(mention.kind in _NOT_A_SCOPE_KINDS for mention in find_mentions(name)) or bool(_HARDWARE_RE.fullmatch(name))


# The machine a run used ("on a single 2080 Ti GPU", "8 A100s") is no experiment of the paper.
_HARDWARE_RE = re.compile(r"(?:[GTCN]PU|TPUv\d|[AHVLPT]\d{2,3}|RTX\w*|GTX\w*)s?", re.I)


def _clause(sentence: str, raw_value: str) -> str:
    text = _MATH_OR_CITATION_RE.sub(lambda m: " " * len(m.group()), sentence)
    at = sentence.find(raw_value)
    if at < 0:
        return text
    starts = [m.end() for m in _CLAUSE_BREAK_RE.finditer(text, 0, at)]
    ends = [m.start() for m in _CLAUSE_BREAK_RE.finditer(text, at + len(raw_value))]
    return text[starts[-1] if starts else 0 : ends[0] if ends else len(text)]


_BASELINE_RE = re.compile(r"\bbaselines?\b|\bcompeting\s+methods?\b|\bprior\s+(?:work|methods?)\b", re.I)


def for_a_baseline(sentence: str, raw_value: str) -> bool:
    """Whether the value's clause states it for a baseline ("an exploiter baseline trained for 10^9
    steps"), not for the paper's method."""
    return bool(_BASELINE_RE.search(_clause(sentence, raw_value)))


def scope_of(sentence: str, raw_value: str, previous: str = "") -> frozenset[str]:
    """The folded names of what the value is stated for: from its clause of the sentence ("12 on
    COCO, 31 on ADE20K"), else from the whole sentence ("MNIST DDPMs were trained for 250 epochs
    with a learning rate of 1e-4"), else, for a "respectively", from the sentence before it ("We
    train three DiT models of sizes B, L and XL. The patch size is 4, 4 and 2, respectively.")."""
    for text in (_clause(sentence, raw_value), sentence, previous if "respectively" in sentence else ""):
        scope = _names_of(_MATH_OR_CITATION_RE.sub(lambda m: " " * len(m.group()), text))
        if scope:
            return scope
    return frozenset()


def paragraph_scope(lead: str) -> frozenset[str]:
    """What a paragraph's first sentence says the paragraph is about ("We follow [RCG] for training
    details of the tokenizer.", "The LlamaGen is trained for 400 epochs"): the scope of a value its
    own sentence gives none. (A lead naming datasets scopes too: its values are then compared only
    with runs named for them, which may say less, never more.)"""
    return _names_of(_MATH_OR_CITATION_RE.sub(lambda m: " " * len(m.group()), lead))


_COLUMN_RE = re.compile(r"\[([^\[\]]+)\]\s*$")


def table_scope(name: str, caption: str | None) -> frozenset[str]:
    """What a table's value is stated for: its column's header ("Layers [ViT-B]"), else the table's
    caption ("Hyperparameters for ImageNet")."""
    column = _COLUMN_RE.search(name)
    scope = _names_of(column[1]) if column else frozenset()
    return scope or _names_of(_MATH_OR_CITATION_RE.sub(" ", caption or ""))


def _names_of(text: str) -> frozenset[str]:
    scope = {word.lower() for word in _WORD_RE.findall(text) if word.lower() in MODULE_NOUNS}
    scope |= {fold(name) for name in _NAME_RE.findall(text) if not _is_component(name) and len(fold(name)) >= 2}
    return frozenset(scope)


def site_context(site: ValueSite) -> str:
    """What a site's own place says it is about: its file path, name, call and variant, folded."""
    return fold(" ".join(part for part in (site.location.file, site.name, site.call or "", site.variant or "") if part))


def abbreviates(word: str, name: str) -> bool:
    """Whether a word of a file's path is a short form of a folded name: `celeb` (`delete_celeb.yaml`)
    of CelebA-HQ. Five letters at least and most of the name, so `mask` is no Mask2Former."""
    return len(word) >= 5 and name.startswith(word) and len(name) - len(word) < len(word)


def named_in(name: str, folded: str, words: frozenset[str]) -> bool:
    """Whether a place (its folded text and its words) names a folded name, in full or in short."""
    return name in folded or _abbreviated(name, words)


@functools.lru_cache(maxsize=8192)  # the workspace's words are asked of every site's facts
def _abbreviated(name: str, words: frozenset[str]) -> bool:
    return any(abbreviates(word, name) for word in words)


def fits(scope: frozenset[str], context: str, words: frozenset[str] = frozenset()) -> bool:
    return not scope or any(named_in(name, context, words) for name in scope)


def place_words(site: ValueSite) -> frozenset[str]:
    """The folded words of a site's path, name, call and variant."""
    return _words_of_place(site.location.file, site.name, " ".join((site.call or "", site.variant or "")))


def names_another_experiment(site: ValueSite, scope: frozenset[str], paper_names: frozenset[str], *, partly: bool = False) -> bool:
    """Whether the site's path or name (or its command) names a model or dataset of the paper outside
    `scope`: `other_tasks/DINO/README.md` is DINO's run, not the LLaMA 7B's a value is stated for.
    With `partly`, only when it also misses one of the scope's names: `cnn-resnet18-mnist.ipynb` is the
    ResNet-18's MNIST run, not the "MNIST DDPMs'", while `cifar10_vitb.yaml` is a ViT-B run."""
    words = place_words(site)
    if partly and scope <= words:
        return False
    return bool((words & paper_names) - scope)


def for_a_variant(site: ValueSite, paper_names: frozenset[str]) -> frozenset[str] | None:
    """The words of the variant a site's branch is for (`if model_variant == "llama2_70b":`), when they
    name one of the paper's models or datasets (`llama2` is a LLaMA); None for other branches
    (`if split == "train":`)."""
    if not site.variant:
        return None
    words = frozenset(fold(word) for word in re.split(r"[^A-Za-z0-9.]+", site.variant) if word)
    named = any(word.startswith(name) for word in words for name in paper_names if len(name) >= 3)
    return words if named else None


def file_words(file: str) -> frozenset[str]:
    """The folded words of a file's path, without its suffix."""
    return _words_of_place(file, "", "")


@functools.lru_cache(maxsize=8192)
def _words_of_place(file: str, name: str, call: str) -> frozenset[str]:
    """The folded words of a site's path (without its suffix: `.yaml` names no experiment), name and call."""
    place = str(PurePosixPath(file).with_suffix(""))
    return frozenset(fold(word) for word in re.split(r"[^A-Za-z0-9]+", " ".join((place, name, call))))


def untold(scope: frozenset[str], folded_paths: str, path_words: frozenset[str]) -> frozenset[str]:
    """The models and datasets of a scope, when no file of the workspace (`folded_paths`) is named for
    any of them: no run can be told to be for them or not ("we train a GTrXL for 34k steps" and a
    repository whose files never say GTrXL). Empty when one is (a run whose files do not name
    ImageNet, beside `configs/gmflow_imagenet.py`, is not the ImageNet run)."""
    names = frozenset(name for name in scope if name not in MODULE_NOUNS)
    return names if not any(named_in(name, folded_paths, path_words) for name in names) else frozenset()


# Settings only a training run sets: a command passing one trains.
_OPTIMIZING = frozenset({"learning_rate", "initial_learning_rate", "weight_decay", "warmup_steps", "warmup_epochs"})


def site_stage(site: ValueSite) -> str | None:
    """The stage of the work a site's value is for, from its call, the containers of its name, its
    file and its folders, nearest first."""
    path = PurePosixPath(site.location.file)
    containers = site.name.split(".")[:-1]
    if site.kind == "command-line":  # its subcommand (`main.py validate`), then its script (generate.py)
        script = script_of(site.call or "")
        ran = PurePosixPath(script) if script else None
        names = [subcommand_of(site.call or ""), ran.name, *reversed(ran.parent.parts)] if ran else []
        stage = stage_named_by([*names, *reversed(containers)])
        if stage is None and any(normalize_name(flag) in _OPTIMIZING for flag in command_numbers(site.call or "")):
            return "training"  # a run that sets its learning rate trains, whatever `--online_eval` it adds
        return stage or stage_named_by([site.call])
    return stage_named_by([site.call, *reversed(containers), path.stem, *reversed(path.parent.parts)])


_TEST_FILE_RE = re.compile(r"(?:^|/)(?:tests?/|test_[^/]*$|[^/]*_test\.[^/]*$|conftest\.py$)")
# Folders that by convention hold other projects' code copied in (a vendored package, a submodule).
_VENDORED_RE = re.compile(r"(?:^|/)(?:third[_-]?party|3rd[_-]?party|vendor|vendored|_vendor|external|extern)/", re.I)


def holds_no_run(path: str) -> bool:
    """Tests and their fixtures (`tests/`, `test_*.py`, `*_test.py`, conftest) and vendored code
    (`third_party/`, `vendor/`, `external/`) set no setting of the paper's runs."""
    return bool(_TEST_FILE_RE.search(path) or _VENDORED_RE.search(path))


# Tokens of a file name that tell variants of one run apart: a size, a resolution, a schedule, a version.
_VARIANT_TOKEN_RE = re.compile(
    r"\d+[a-z]?|\d+x|x\d+|v\d+|[sbltgh]|xl|xxl|tiny|small|base|medium|large|huge|giant|long|short"
)
_TOKEN_SPLIT_RE = re.compile(r"[^a-z0-9]+")


def variant_families(site: ValueSite) -> list[tuple[str, ...]]:
    """What the site's alternatives share: one key of sibling config files whose names differ only in
    variant tokens; one argument of one callee in one file (a table of model variants); for a setting
    every part of a model has (its depth, its input size), the whole workspace's values of it."""
    if site.normalized_name is None:
        return []
    families = []
    if site.kind == "config-file":
        path = PurePosixPath(site.location.file)
        stem = tuple(t for t in _TOKEN_SPLIT_RE.split(path.stem.lower()) if t and not _VARIANT_TOKEN_RE.fullmatch(t))
        families.append((site.normalized_name, site.name, str(path.parent), *stem))
    elif site.call and site.kind in ("keyword", "positional"):
        families.append((site.normalized_name, site.name, site.location.file, site.call))
    if is_part_setting(site.normalized_name):
        families.append(("part", site.normalized_name))
    return families


def paper_names(texts: list[str]) -> frozenset[str]:
    """The folded names (of models, datasets: DINOv2, ADE20K, ViT-B) the paper's prose uses."""
    names = {name for text in texts for name in _NAME_RE.findall(text)}
    return frozenset(fold(name) for name in names if len(fold(name)) >= 3 and not _is_component(name))  # AdamW is no experiment


@functools.lru_cache(maxsize=4096)  # asked for every site of a file, and again after each edit
def outside_the_paper(file: str, directories: frozenset[str], names: frozenset[str], folded_prose: str) -> bool:
    """Whether a file stands in a folder named for something the paper never mentions while a sibling
    folder is named for something it does (`configs/dinov3/` beside `configs/dinov2/`)."""
    path = PurePosixPath(file)
    for folder in path.parents:
        if folder.name == "" or fold(folder.name) in folded_prose or len(fold(folder.name)) < 3:
            continue
        siblings = (PurePosixPath(d) for d in directories)
        if any(s.parent == folder.parent and s.name != folder.name and fold(s.name) in names for s in siblings):
            return True
    return False

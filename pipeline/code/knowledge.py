"""The code vocabulary (pipeline/knowledge/code.yaml), loaded once: names → settings, calls → components."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from ..nesting import YAML_LOADER
from ..extract.knowledge import KNOWLEDGE_DIR, hyperparameter_vocabulary

_CAMEL_BOUNDARY_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_GREEK_INDEX_RE = re.compile(r"([a-z]+?)_?(\d+)")
# A symbol's suffix short enough to be a subscript: λ_KL, σ_min, α_1 (not beta_schedule).
_MAX_SUBSCRIPT = 4
_COMPONENT_TEXT_RE = re.compile(r"[\s_\-]+")
# Words of the paper's that make a setting its evaluation variant ("evaluation batch size"), and
# the code words that say the same (val_loader, def evaluate, EVAL_BATCH_SIZE, cfg.test.batch_size).
_EVALUATION_PREFIXES = frozenset({"evaluation", "eval", "test", "testing", "inference", "validation"})
_EVALUATION_WORD_RE = re.compile(r"eval|evaluat\w*|test|testing|tests|val|valid|validat\w*|inference|infer|predict\w*")
_TRAINING_WORD_RE = re.compile(r"train\w*|fit|finetun\w*|pretrain\w*|optimi[sz]\w*")


@dataclass(frozen=True, slots=True)
class Signature:
    """What the knowledge file says about one callable: which component it is and its parameters."""

    kind: str | None  # None for a callable that is no component (DataLoader)
    component: str | None
    params: tuple[str, ...]  # positional order
    settings: dict[str, str | None]  # parameter → paper setting; a parameter not listed is none
    defaults: dict[str, Any]  # the library's defaults (a tuple as a list)


@dataclass(frozen=True, slots=True)
class CodeVocabulary:
    names: dict[str, str]  # code name (snake_case, lowercase) → canonical setting
    greek: dict[str, str]  # letter spelled out (and other spellings) → the paper side's name
    letters: dict[str, str]  # other spellings → the letter spelled out (lam → lambda)
    expand: dict[str, tuple[str, ...]]
    square: frozenset[str]
    text_kinds: dict[str, str]  # setting or code name → component kind its string value names
    text_values: dict[str, dict[str, str]]  # kind → folded string → canonical component
    target_keys: frozenset[str]
    module_aliases: dict[str, str]
    libraries: frozenset[str]
    tensor_methods: frozenset[str]
    inert_decorators: frozenset[str]
    callables: dict[str, Signature]  # dotted suffix → signature
    last_parts: frozenset[str]  # the last part of every suffix, to skip most names at once
    longest_suffix: int  # in dotted parts
    stage_words: dict[str, str]  # word → the stage of the work it names (training, sampling, ...)
    training_settings: frozenset[str]
    part_settings: frozenset[str]
    distributed_modules: tuple[str, ...]
    spawning_modules: tuple[str, ...]
    entry_points: frozenset[str]  # functions called by name from outside the code (main, get_config)
    prefixed_settings: frozenset[str]  # settings a name may prefix with its part (diffusion_grad_clip)
    reporting_calls: tuple[str, ...]  # dotted-name endings of calls that only print, log or track
    loss_terms: dict[str, str]  # a word of a loss weight's name → the term's name in the paper (discriminator → gan)
    # A code name's words in another order (`num_steps_train`), for names listed in one order only.
    unordered_names: dict[frozenset[str], str]

    def signature(self, dotted: str) -> Signature | None:
        """The signature whose longest symbol is a suffix of `dotted` (torch.nn.GELU → GELU)."""
        parts = dotted.split(".")
        if parts[-1] not in self.last_parts:
            return None
        for size in range(min(self.longest_suffix, len(parts)), 0, -1):
            found = self.callables.get(".".join(parts[-size:]))
            if found is not None:
                return found
        return None

    def text_component(self, kind: str, text: str) -> str | None:
        """The component a string names (optimizer "adamw_torch" → AdamW), if known."""
        return self.text_values.get(kind, {}).get(fold_component_text(text))


def fold_component_text(text: str) -> str:
    return _COMPONENT_TEXT_RE.sub("_", text.strip().lower())


@functools.cache
def code_vocabulary() -> CodeVocabulary:
    with open(KNOWLEDGE_DIR / "code.yaml", encoding="utf-8") as file:
        data = yaml.load(file, Loader=YAML_LOADER)
    names: dict[str, str] = {}
    for canonical, code_names in data["names"].items():
        for code_name in code_names:
            if names.setdefault(code_name, canonical) != canonical:
                raise ValueError(f"code.yaml: {code_name!r} names both {names[code_name]} and {canonical}")
    callables: dict[str, Signature] = {}
    for kind, components in data["callables"].items():
        for component, signatures in components.items():
            for spec in signatures:
                _add_signature(callables, spec, Signature(kind, component, *_signature_parts(spec)))
    for spec in data["signatures"]:
        _add_signature(callables, spec, Signature(None, None, *_signature_parts(spec)))
    text_values = {
        kind: {fold_component_text(text): canonical for canonical, texts in spellings.items() for text in texts}
        for kind, spellings in data["text_values"].items()
    }
    return CodeVocabulary(
        names=names,
        greek=dict(data["greek"]),
        letters=dict(data["greek_spellings"]),
        expand={name: tuple(parts) for name, parts in data["tuples"]["expand"].items()},
        square=frozenset(data["tuples"]["square"]),
        text_kinds=dict(data["text_settings"]),
        text_values=text_values,
        target_keys=frozenset(data["target_keys"]),
        module_aliases=dict(data["module_aliases"]),
        libraries=frozenset(data["libraries"]),
        tensor_methods=frozenset(data["tensor_methods"]),
        inert_decorators=frozenset(data["inert_decorators"]),
        callables=callables,
        last_parts=frozenset(symbol.rsplit(".", 1)[-1] for symbol in callables),
        longest_suffix=max(symbol.count(".") + 1 for symbol in callables),
        stage_words={word: stage for stage, listed in data["stage_words"].items() for word in listed},
        training_settings=frozenset(data["training_settings"]),
        part_settings=frozenset(data["part_settings"]),
        distributed_modules=tuple(data["distributed_modules"]),
        spawning_modules=tuple(data["spawning_modules"]),
        entry_points=frozenset(data["entry_points"]),
        prefixed_settings=frozenset(data["prefixed_settings"]),
        reporting_calls=tuple(data["reporting_calls"]),
        loss_terms={word: term for term, words in data["loss_terms"].items() for word in words},
        unordered_names=_unordered(names),
    )


def _unordered(names: dict[str, str]) -> dict[frozenset[str], str]:
    """Each listed name's set of words → its setting, where that set names one setting only."""
    settings: dict[frozenset[str], set[str]] = {}
    for name, canonical in names.items():
        if "_" in name:
            settings.setdefault(frozenset(name.split("_")), set()).add(canonical)
    return {words: next(iter(found)) for words, found in settings.items() if len(found) == 1}


def _signature_parts(spec: dict) -> tuple[tuple[str, ...], dict[str, str | None], dict[str, Any]]:
    return tuple(spec["params"]), dict(spec["settings"]), dict(spec["defaults"])


def _add_signature(callables: dict[str, Signature], spec: dict, signature: Signature) -> None:
    for symbol in spec["symbols"]:
        if symbol in callables:
            raise ValueError(f"code.yaml: the symbol {symbol!r} is listed twice")
        callables[symbol] = signature


def setting_of(parameter: str, signature: Signature | None) -> str | None:
    """A parameter's paper setting: its callable's word when the callable is known (exhaustively:
    BatchNorm's momentum is none), else what its name says."""
    if signature is not None and (
        parameter in signature.settings or parameter in signature.params or parameter in signature.defaults
    ):
        return signature.settings.get(parameter)
    return normalize_name(parameter)


def stage_named_by(names: Iterable[str | None]) -> str | None:
    """The stage of the work (training, sampling, evaluation, ...) the first of `names` that names
    one says, nearest first; training wins within one name (`train_and_evaluate`)."""
    words_of = code_vocabulary().stage_words
    for name in names:
        if not name:
            continue
        stages = {words_of.get(word) for word in re.split(r"[^a-z0-9]+", snake_case(name.replace(".", "_")))} - {None}
        if stages:
            return "training" if "training" in stages else sorted(stages)[0]
    return None


def is_training_setting(setting: str) -> bool:
    return setting in code_vocabulary().training_settings


def is_part_setting(setting: str) -> bool:
    """A setting each part of a model has its own of (depth, width, patch size, input size)."""
    return setting in code_vocabulary().part_settings


def launches_processes(module: str) -> bool:
    """Whether importing `module` makes a run several processes (torch.distributed, accelerate)."""
    return any(module == known or module.startswith(known + ".") for known in code_vocabulary().distributed_modules)


@functools.cache
def _switch_patterns() -> tuple[tuple[re.Pattern[str], str], ...]:
    first: dict[str, str] = {}
    for setting, entry in hyperparameter_vocabulary().entries.items():
        if entry.technique_switch:
            first.setdefault(entry.technique_switch, setting)
    return tuple(
        (re.compile(rf"(?:\w+_)?(?:use|enable|with|do|apply)_?{switch}|{switch}(?:_?(?:enabled|on))?"), setting)
        for switch, setting in first.items()
    )


def technique_switched(name: str) -> str | None:
    """The setting whose technique a switch of this name turns on or off: `use_ema`,
    `diffusion_use_ema`, `ema_enabled` → ema_decay (hyperparameters.yaml `named_when_used`)."""
    word = name.rsplit(".", 1)[-1].lstrip("-").replace("-", "_").lower()
    return next((setting for pattern, setting in _switch_patterns() if pattern.fullmatch(word)), None)


def spawns_processes(module: str) -> bool:
    """Whether importing `module` lets a script started by a plain `python` start several processes
    itself (Lightning, mp.spawn)."""
    return any(module == known or module.startswith(known + ".") for known in code_vocabulary().spawning_modules)


def for_evaluation(setting: str, names: Iterable[str | None]) -> bool:
    """Whether a value of `setting` is the evaluation variant the paper tells apart from the setting
    (an "evaluation batch size"): `val_loader = DataLoader(val_set, batch_size=512)` says nothing of
    the paper's training batch size. `names` surround the value, nearest first (the name it is read
    from, the variable it is assigned to, the data it goes with, the enclosing function); the first
    that names training or evaluation decides, and training wins within one name (train_and_evaluate)."""
    entry = hyperparameter_vocabulary().entries.get(setting)
    if entry is None or not entry.exclude_prefixes & _EVALUATION_PREFIXES:
        return False
    for name in names:
        words = re.split(r"[^a-z0-9]+", snake_case(name.replace(".", "_"))) if name else []
        if any(_TRAINING_WORD_RE.fullmatch(word) for word in words):
            return False
        if any(_EVALUATION_WORD_RE.fullmatch(word) for word in words):
            return True
    return False


@functools.lru_cache(maxsize=65536)
def normalize_name(name: str) -> str | None:
    """The paper's name for a setting as code names it: `lr`, `LR`, `learningRate`, `--learning-rate`
    → learning_rate; a Greek letter → the paper's name for its symbol (`lam` → lambda, `tau` →
    temperature, `lambda_kl` → lambda_kl, `alpha1` → alpha_1). `name` is one part: no dots."""
    vocabulary = code_vocabulary()
    key = snake_case(name)
    if key in vocabulary.names:
        return vocabulary.names[key]
    if (unordered := vocabulary.unordered_names.get(frozenset(key.split("_")))) is not None:
        return unordered
    words = key.split("_")
    for start in range(1, len(words) - 1):  # `diffusion_grad_clip`: the part, then the setting
        if vocabulary.names.get("_".join(words[start:])) in vocabulary.prefixed_settings:
            return vocabulary.names["_".join(words[start:])]
    letter = vocabulary.letters.get(key, key)
    if letter in vocabulary.greek:
        return vocabulary.greek[letter]
    if indexed := _GREEK_INDEX_RE.fullmatch(key):
        letter = vocabulary.letters.get(indexed[1], indexed[1])
        if letter in vocabulary.greek:
            return f"{letter}_{indexed[2]}"
    head, _, subscript = key.partition("_")
    letter = vocabulary.letters.get(head, head)
    if letter in vocabulary.greek and subscript.isalnum() and len(subscript) <= _MAX_SUBSCRIPT:
        return f"{letter}_{subscript}"
    return None


def snake_case(name: str) -> str:
    """`learningRate` → learning_rate, `LR` → lr, `--batch-size` → batch_size, `_lr` → lr."""
    name = name.strip("-_ ").replace("-", "_")
    if not name.isupper() and not name.islower():
        name = _CAMEL_BOUNDARY_RE.sub("_", name)
    return name.lower()


# A setting's name alone says whose it is only when one kind of component has it: `eps` is an
# optimizer's and a norm's, so a bare `eps = 1e-6` is neither until a call or its name says.
_KIND_WORDS = {
    "optimizer": ("opt", "optim", "optimizer", "adam", "adamw", "sgd", "lamb", "lion", "rmsprop"),
    "normalization": ("norm", "ln", "bn", "gn", "rms", "layernorm", "batchnorm", "groupnorm", "rmsnorm"),
}


@functools.cache
def settings_shared_across_kinds() -> frozenset[str]:
    vocabulary = code_vocabulary()
    kinds: dict[str, set[str]] = {}
    for signature in {id(s): s for s in vocabulary.callables.values()}.values():
        if signature.kind in (None, "schedule"):  # a schedule's rate and steps are its optimizer's
            continue
        for parameter in signature.params:
            setting = signature.settings.get(parameter) or vocabulary.names.get(parameter)
            if setting:
                kinds.setdefault(setting, set()).add(signature.kind)
    return frozenset(setting for setting, found in kinds.items() if len(found) > 1)


def kind_named_by(name: str) -> str | None:
    """The kind of component a setting's own name carries: `opt_eps` an optimizer's, `norm_eps` a norm's."""
    words = set(re.split(r"[^a-z0-9]+", name.lower()))
    found = {kind for kind, kind_words in _KIND_WORDS.items() if words & set(kind_words)}
    return found.pop() if len(found) == 1 else None

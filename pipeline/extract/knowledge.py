"""The vocabularies in pipeline/knowledge/*.yaml, loaded once and compiled into regexes.

Every vocabulary becomes one regex: its phrases folded into a character trie, so matching costs
one pass over the text whatever the number of phrases, and the longest phrase at a position wins.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

import yaml

from ..nesting import YAML_LOADER

KNOWLEDGE_DIR = Path(__file__).resolve().parent.parent / "knowledge"

T = TypeVar("T")


def phrase_variants(phrase: str) -> set[str]:
    """A phrase and its hyphen spellings: "warm-up" is also written "warm up" and "warmup"."""
    if "-" not in phrase:
        return {phrase}
    return {phrase, phrase.replace("-", " "), phrase.replace("-", "")}


def matching_key(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True, slots=True)
class PhraseMatch(Generic[T]):
    start: int
    end: int
    value: T
    family: re.Match[str] | None = None  # the match of a family regex, when one matched


class PhraseSet(Generic[T]):
    """Phrases → values, found in text on word boundaries, the longest phrase first.

    A phrase with a capital letter matches exactly as written, an all-lowercase one in any case.
    `regexes` are families ("ResNet-?\\d+"), each with its value, matched case-sensitively.
    """

    def __init__(self, phrases: Iterable[tuple[str, T]], regexes: Iterable[tuple[str, T]] = ()) -> None:
        self._exact: dict[str, T] = {}
        self._folded: dict[str, T] = {}
        trie: dict = {}
        for phrase, value in phrases:
            for variant in phrase_variants(phrase):
                key = matching_key(variant)
                if key.lower() == key:
                    self._folded.setdefault(key, value)
                else:
                    self._exact.setdefault(key, value)
                # A space of a phrase is any run of spaces, or a hyphen: "learning-rate schedule", "Batch-Norm".
                _insert(trie, [_WORD_BREAK if char == " " else re.escape(char) for char in key.lower()])
        self._trie_pattern = _emit(trie)
        # Longest phrase, with room for the extra spaces "\s+" lets a phrase hold.
        self._longest = 2 * max((len(key) for key in [*self._exact, *self._folded]), default=0) + 8
        self._families = [(re.compile(regex), value) for regex, value in regexes]

    # The trie is matched against the lowercased text: plain literals let the regex engine skip
    # most branches on their first character (several times faster than a case-insensitive
    # regex); `get` then keeps only the phrases matched in their own case.
    @functools.cached_property
    def _trie(self) -> re.Pattern[str]:
        return re.compile(rf"(?<![\w\\])(?:{self._trie_pattern})(?![\w])")

    @functools.cached_property
    def _folding_trie(self) -> re.Pattern[str]:
        """For the rare text whose lowercase is longer (İ → i̇), where offsets would shift."""
        return re.compile(rf"(?<![\w\\])(?i:{self._trie_pattern})(?![\w])")

    @functools.cached_property
    def _family_regex(self) -> re.Pattern[str] | None:
        if not self._families:
            return None
        branches = [f"(?P<r{i}>{_without_group_names(regex.pattern)})" for i, (regex, _) in enumerate(self._families)]
        return re.compile(rf"(?<![\w\\])(?:{'|'.join(branches)})(?![\w])")

    def finditer(self, text: str, start: int = 0, end: int | None = None) -> Iterator[PhraseMatch[T]]:
        """Every phrase in text[start:end], left to right, none overlapping another."""
        end = len(text) if end is None else end
        found = list(self._phrases(text, start, end))
        if self._family_regex is not None:
            for match in self._family_regex.finditer(text, start, end):
                regex, value = self._families[int(match.lastgroup[1:])]
                found.append(PhraseMatch(match.start(), match.end(), value, regex.fullmatch(match.group(0))))
            found.sort(key=lambda m: (m.start, m.start - m.end))
        position = start
        for match in found:
            if match.start >= position:
                position = match.end
                yield match

    def match(self, text: str, position: int) -> PhraseMatch[T] | None:
        """The phrase that starts exactly at `position`, if any."""
        # Only a window is lowercased: the character before (for the word boundary) to past the
        # longest phrase.
        window_start = max(0, position - 1)
        window = text[window_start : position + self._longest + 1]
        found = next(self._phrases(window, position - window_start, len(window), anchored=True), None)
        if found is None:
            return None
        return PhraseMatch(found.start + window_start, found.end + window_start, found.value)

    def search(self, text: str) -> bool:
        return next(self.finditer(text), None) is not None

    def _phrases(self, text: str, start: int, end: int, *, anchored: bool = False) -> Iterator[PhraseMatch[T]]:
        # Only text[start:end] is lowercased, with a character each side for the word boundaries:
        # a long sentence is searched many times, piece by piece.
        offset = max(0, start - 1)
        piece = text[offset : end + 1]
        lowered = piece.lower()
        regex = self._trie
        if len(lowered) != len(piece):
            regex, lowered = self._folding_trie, piece
        first, last = start - offset, end - offset
        if anchored:
            match = regex.match(lowered, first, last)
            if match is not None and (value := self.get(piece[match.start() : match.end()])) is not None:
                yield PhraseMatch(match.start() + offset, match.end() + offset, value)
            return
        position = first
        while (match := regex.search(lowered, position, last)) is not None:
            if (value := self.get(piece[match.start() : match.end()])) is not None:
                yield PhraseMatch(match.start() + offset, match.end() + offset, value)
                position = max(match.end(), match.start() + 1)
            else:  # matched in another case ("PPO clip range" in "ppo Clip Range"): a phrase may start
                position = match.start() + 1  # inside it (a shorter one at the same start is not tried)

    def get(self, text: str) -> T | None:
        for key in (matching_key(text), matching_key(text.replace("-", " "))):
            if key in self._exact:
                return self._exact[key]
            if (found := self._folded.get(key.lower())) is not None:
                return found
        return None


_WORD_BREAK = r"(?:\s+|-)"


def _insert(trie: dict, atoms: list[str]) -> None:
    node = trie
    for atom in atoms:
        node = node.setdefault(atom, {})
    node[""] = {}


def _emit(node: dict) -> str:
    """The regex of a trie; a phrase ending here is optional after its longer continuations."""
    branches = [atom + _emit(child) for atom, child in sorted(node.items()) if atom]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    if "" in node:
        return body + "?" if len(branches) == 1 and _is_single_atom(body) else f"(?:{body})?"
    return body


def _is_single_atom(regex: str) -> bool:
    return bool(re.fullmatch(r"\\?.", regex))


def _without_group_names(regex: str) -> str:
    return re.sub(r"\(\?P<\w+>", "(?:", regex)


def symbol_key(symbol: str) -> str:
    """What two spellings of one symbol share: β_1, β1, β_{1} → "β1"."""
    return re.sub(r"[\s_{}]", "", symbol)


# --- hyperparameters -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HyperparameterEntry:
    name: str
    range: tuple[float, float] | None = None
    components: tuple[str, ...] = ()
    exclude_prefixes: frozenset[str] = frozenset()
    expand: tuple[str, ...] = ()
    unit_names: dict[str, str] = field(default_factory=dict)
    per_device: str | None = None
    renamed_with: dict[str, str] = field(default_factory=dict)
    text_values: bool = False
    integer: bool = False
    dimensions: bool = False
    measure: str | None = None  # what a value counts when no unit is written (batch_size: examples)
    off_when_negated: bool = False  # "no weight decay is applied" states 0
    technique: str | None = None  # the technique it turns on, a paper names when used ("gradient clipping")
    technique_words: tuple[str, ...] = ()  # the words that name that technique
    technique_switch: str | None = None  # the word of a code switch turning it on or off (use_ema)

    def accepts(self, value: float) -> bool:
        if self.integer and value != int(value):
            return False
        return self.range is None or self.range[0] <= value <= self.range[1]


@dataclass(frozen=True, slots=True)
class ProseName:
    """A name prose gives a hyperparameter; with a `context`, only in a sentence holding one of its
    words ("a global norm of 1.0" is a clipping threshold only where gradients are clipped)."""

    entry: HyperparameterEntry
    context: PhraseSet[str] | None = None

    def applies_in(self, sentence: str) -> bool:
        return self.context is None or self.context.search(sentence)


@dataclass(frozen=True, slots=True)
class CountNoun:
    """A noun that states a hyperparameter after a value: "100 epochs"."""

    entry: HyperparameterEntry
    unit: str
    generic: bool


@dataclass(frozen=True, slots=True)
class HyperparameterVocabulary:
    entries: dict[str, HyperparameterEntry]
    names: PhraseSet[ProseName]  # prose
    table_names: PhraseSet[HyperparameterEntry]  # first cells and column headers
    symbols: dict[str, HyperparameterEntry]  # by symbol_key
    count_nouns: PhraseSet[CountNoun]
    share_actions: PhraseSet[HyperparameterEntry]  # "erase ... in 25% of the images"
    share_nouns: PhraseSet[str]
    measurement_words: PhraseSet[str]
    result_words: PhraseSet[str]
    hypothetical_consequences: PhraseSet[str]
    variant_verbs: frozenset[str]
    conditional_words: frozenset[str]
    symbol_conditional_words: frozenset[str]
    training_verbs: PhraseSet[str]
    blocked_before_name: frozenset[str]
    blocked_before_count: frozenset[str]
    setting_verbs: frozenset[str]
    foreign_units: PhraseSet[str]
    unit_measures: dict[str, str]  # unit ("sequences") → what it counts ("examples")

    def measure_of(self, setting: str, unit: str | None) -> str | None:
        """What a value of `setting` written in `unit` counts: the unit's measure ("4M tokens" →
        tokens), else the setting's (a bare batch size counts examples); None when nothing says."""
        if unit is not None and unit in self.unit_measures:
            return self.unit_measures[unit]
        entry = self.entries.get(setting)
        return entry.measure if entry is not None else None


@functools.cache
def hyperparameter_vocabulary() -> HyperparameterVocabulary:
    data = _load("hyperparameters.yaml")
    entries: dict[str, HyperparameterEntry] = {}
    prose: list[tuple[str, ProseName]] = []
    table: list[tuple[str, HyperparameterEntry]] = []
    symbols: dict[str, HyperparameterEntry] = {}
    nouns: list[tuple[str, CountNoun]] = []
    share_actions: list[tuple[str, HyperparameterEntry]] = []
    unit_measures = {unit: measure for measure, units in data["unit_measures"].items() for unit in units}
    for name, spec in data["hyperparameters"].items():
        noun_measures = {unit_measures.get(noun["unit"]) for noun in spec.get("count_nouns", ())}
        entry = HyperparameterEntry(
            name=name,
            range=tuple(float(bound) for bound in spec["range"]) if "range" in spec else None,
            components=tuple(spec.get("components", ())),
            exclude_prefixes=frozenset(word.lower() for word in spec.get("exclude_prefixes", ())),
            expand=tuple(spec.get("expand", ())),
            unit_names=dict(spec.get("unit_names", {})),
            per_device=spec.get("per_device"),
            renamed_with=dict(spec.get("renamed_with", {})),
            text_values=bool(spec.get("text_values")),
            integer=bool(spec.get("integer")),
            dimensions=bool(spec.get("dimensions")),
            measure=spec.get("measure", next(iter(noun_measures)) if len(noun_measures) == 1 else None),
            off_when_negated=bool(spec.get("off_when_negated")),
            technique=spec.get("named_when_used", {}).get("technique"),
            technique_words=tuple(spec.get("named_when_used", {}).get("words", ())),
            technique_switch=spec.get("named_when_used", {}).get("switch"),
        )
        if entry.measure is not None and entry.measure not in data["unit_measures"]:
            raise ValueError(f"hyperparameters.yaml: {name}'s measure {entry.measure!r} is no unit measure")
        entries[name] = entry
        prose += [(alias, ProseName(entry)) for alias in spec.get("aliases", ())]
        if contextual := spec.get("contextual_aliases"):
            context = _words(contextual["context"])
            prose += [(alias, ProseName(entry, context)) for alias in contextual["aliases"]]
        share_actions += [(action, entry) for action in spec.get("share_actions", ())]
        table += [(alias, entry) for alias in [*spec.get("aliases", ()), *spec.get("table_aliases", ())]]
        symbols.update({symbol_key(symbol): entry for symbol in spec.get("symbols", ())})
        nouns += [
            (noun["noun"], CountNoun(entry, noun["unit"], bool(noun.get("generic"))))
            for noun in spec.get("count_nouns", ())
        ]
    return HyperparameterVocabulary(
        entries=entries,
        names=PhraseSet(prose),
        table_names=PhraseSet(table),
        symbols=symbols,
        count_nouns=PhraseSet(nouns),
        share_actions=PhraseSet(share_actions),
        share_nouns=_words(data["share_nouns"]),
        measurement_words=_words(data["measurement_words"]),
        result_words=_words(data["result_words"]),
        hypothetical_consequences=_words(data["hypothetical_consequences"]),
        variant_verbs=frozenset(data["variant_verbs"]),
        conditional_words=frozenset(data["conditional_words"]),
        symbol_conditional_words=frozenset(data["symbol_conditional_words"]),
        training_verbs=_words(data["training_verbs"]),
        blocked_before_name=frozenset(data["blocked_before_name"]),
        blocked_before_count=frozenset(data["blocked_before_count"]),
        setting_verbs=frozenset(data["setting_verbs"]),
        foreign_units=_words(data["foreign_units"]),
        unit_measures=unit_measures,
    )


def _words(words: list[str]) -> PhraseSet[str]:
    return PhraseSet([(word, word) for word in words])


# --- components ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ComponentName:
    kind: str
    name: str  # canonical, or a template over a family regex's groups


@functools.cache
def component_vocabulary() -> PhraseSet[ComponentName]:
    data = _load("components.yaml")
    phrases: list[tuple[str, ComponentName]] = []
    families: list[tuple[str, ComponentName]] = []
    for kind, names in data.items():
        for name, aliases in names.items():
            for alias in aliases:
                if isinstance(alias, dict):
                    families.append((alias["regex"], ComponentName(kind, alias.get("name", name))))
                else:
                    phrases.append((alias, ComponentName(kind, name)))
    return PhraseSet(phrases, families)


# --- symbols -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SymbolVocabulary:
    binding_commands: frozenset[str]  # \sum, \prod: their subscript binds an index
    operator_words: frozenset[str]  # softmax, KL, ...: letters that spell a function
    multi_letter_symbols: frozenset[str]  # lr: letters that spell one variable
    words_in_prose: frozenset[str]  # letters that in prose are words ("a"), never taken as symbols there
    roles: tuple[tuple[str, str], ...]  # (setting, pattern with `{symbol}`): what a formula makes a symbol


@functools.cache
def symbol_vocabulary() -> SymbolVocabulary:
    data = _load("symbols.yaml")
    return SymbolVocabulary(
        binding_commands=frozenset(data["binding_commands"]),
        operator_words=frozenset(data["operator_words"]),
        multi_letter_symbols=frozenset(data["multi_letter_symbols"]),
        words_in_prose=frozenset(data["words_in_prose"]),
        roles=tuple((role["setting"], role["pattern"]) for role in data.get("roles", [])),
    )


def _load(filename: str) -> dict:
    with open(KNOWLEDGE_DIR / filename, encoding="utf-8") as file:
        # The C loader when PyYAML has it: these files are read on every start.
        return yaml.load(file, Loader=YAML_LOADER)

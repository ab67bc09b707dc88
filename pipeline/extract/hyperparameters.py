"""Stated hyperparameter values in sentences and display equations (tables: see `tables`).

Precision beats recall: every value found here may become a diagnostic in a user's editor, so a
value is taken only where the paper plainly states it as a setting:

- "<name> of/=/is/is set to/: <value>", "batch size 256", "dropout (0.2)", "λ = 0.1",
  "(β_1, β_2) = (0.9, 0.999)", "σ_min and σ_max are set to 0.002 and 80, respectively";
- "<value> <count noun>": "1000 warm-up steps", "trained for 300K iterations";
- a display equation that is nothing but assignments ("λ = 0.1, τ = 0.07");
- the share of data an augmentation applies to: "erase a random rectangle in 25% of the images".

A list of values ("learning rates of 1e-4, 3e-4 and 1e-3") gives one entry per value, all with
the same name. Not taken: values outside a name's plausible range, values the next words make
no setting (see `reading`), sentences that report measurements (throughput, FLOPs) or results
("X at 80 epochs surpasses Y"), cases of an argument ("if λ = 0", "with τ = 1 the loss reduces
to ..."), variants compared ("raising the temperature to τ = 1"), terms of formulas
("$M = 3\\rho m$") and years next to names.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

from ...schemas import Equation, Hyperparameter
from .components import Mention
from .knowledge import CountNoun, HyperparameterEntry, PhraseMatch, hyperparameter_vocabulary, symbol_key
from .mathtext import GREEK_LETTERS, GREEK_NAMES, PlainText, to_plain
from .reading import (
    REJECTED,
    ReadValue,
    acceptable,
    ends_its_math,
    looks_like_year,
    read_one,
    read_values,
    reads_in,
    resolve_entry,
    value_end,
)
from .sentences import Sentence
from .values import VALUE, VALUE_RE, evaluate

# Symbols as the plain form writes them: λ, β_1, β1, σ_min; Latin letters only inside math.
_GREEK_SYMBOL = rf"[{GREEK_LETTERS}](?:_[A-Za-z0-9]+|\d)?(?![\w])"
_LATIN_SYMBOL = r"[A-Za-z](?:_[A-Za-z0-9]+)?(?![\w])"
_SYMBOL = rf"(?:{_GREEK_SYMBOL}|{_LATIN_SYMBOL})"
_SYMBOL_RE = re.compile(rf"(?<![\w\\])(?:(?P<greek>{_GREEK_SYMBOL})|{_LATIN_SYMBOL})")
_TRAILING_SYMBOL_RE = re.compile(rf"(?:^|\s)\(?(?P<symbol>(?P<greek>{_GREEK_SYMBOL})|{_LATIN_SYMBOL})\)?\s*$")

# What follows a name when a value is stated for it: "= γ" (chained names), " η" or " of α" (its
# symbol), " (lr)", then the connector and the value: "learning rate η (lr) is set to 1e-4".
_CONNECTOR = (
    r"(?i:\s*[=:]\s*"
    r"|\s*\(\s*"
    r"|\s+(?:is|are|was|were)\s+(?:(?:set|fixed|kept|chosen|initiali[sz]ed|configured|clipped)\s+)?(?:(?:to|at|as)\s+)?"
    r"(?:equal\s+to\s+)?"
    r"|\s+(?:set\s+to|fixed\s+(?:to|at)|equal\s+to|of|at|to|as)\s+"
    r"|\s+)"
)
_FILLER = (
    r"(?i:(?:(?:about|around|approximately|roughly|the\s+default|a\s+constant|a\s+fixed|a\s+value\s+of)\s+|~\s*)?)"
)
_STATEMENT_TAIL_RE = re.compile(
    rf"(?P<chain>(?:\s*=\s*{_SYMBOL})*)(?:\s+(?:of\s+)?(?P<named_symbol>{_SYMBOL}))?"
    rf"(?:\s*\((?P<aside>[^()]{{1,24}})\))?(?P<connector>{_CONNECTOR}){_FILLER}(?=[\d.(])"
)

# Values paired with the names listed before them: "A and B are set to 1 and 2", "(A, B) = (1, 2)".
_RESPECTIVE_VALUES_RE = re.compile(
    rf"(?:\s+(?:of|for|in)\s+(?:the\s+)?[A-Za-z][\w-]*)?\s+(?:are|were)\s+(?:(?:set|fixed|chosen)\s+(?:to|as)\s+)?"
    rf"(?P<values>{VALUE}(?:\s*,\s*{VALUE})*,?\s+and\s+{VALUE})"
)
_TUPLE_RE = re.compile(
    rf"\((?P<names>[^()]{{1,80}})\)\s*(?:=|:|are|were|is|of|set\s+to)\s*"
    rf"\(\s*(?P<values>{VALUE}(?:\s*,\s*{VALUE})+)\s*\)"
)
_NAME_LIST_SEPARATOR_RE = re.compile(r"\s*,\s*(?:and\s+)?(?:the\s+)?|,?\s+and\s+(?:the\s+)?")

# "<value> <count noun>": the noun may follow past a hyphen ("100-epoch") and up to two capitalized
# words ("16 A100 GPUs"); a generic noun needs a lead ("trained for 300 epochs").
_COUNT_SEPARATOR_RE = re.compile(r"\s*-\s*|\s+")
_COUNT_QUALIFIER_RE = re.compile(r"(?:[A-Z][\w-]*|\d[\w-]*)\s+")
_COUNT_LEAD_RE = re.compile(
    r"(?i)\b(?:for|on|with|of|over|total\s+of|first)\s+"
    r"(?:(?:a\s+total\s+of|about|approximately|around|roughly|another|an?\s+additional|additional|only|up\s+to|"
    r"a|an|the|further|extra)\s+)*$"
)
_LIST_TAIL_RE = re.compile(rf"(?:{VALUE})(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+)$")
_WARMUP_RE = re.compile(r"(?i)\bwarm(?:-|\s)?(?:ed\s|ing\s|s\s)?\s*up\b|\bwarmup\b")
_WARMUP_AFTER_RE = re.compile(r"(?i)\s*(?:(?:linear|linearly|lr|learning\s+rate|of)\s+){0,3}warm(?:-|\s)?up")
_MODEL_NAME_RE = re.compile(r"\b[A-Z]{2,}\s+$")  # "RTX 3090 GPUs"

_PREVIOUS_WORD_RE = re.compile(r"([\w-]+)[\s(]*$")
_CLAUSE_BREAK_RE = re.compile(r"[;:]|,\s|\band\b|\bwhile\b|\bthen\b")
_LIST_CLAUSE_BREAK_RE = re.compile(r"[;:]|\bwhile\b|\bthen\b")
_DIGIT_RE = re.compile(r"\d")
_FOR_EXPERIMENT_RE = re.compile(r"\s+(?:for|on)\s+(?=\S)")
_EXPERIMENT_END_RE = re.compile(r"[,;.]|\s+and\s+")
_PER_EXPERIMENT_RE = re.compile(r"\s+(?:for|on)\s+[^,;.]{1,40}?(?:,\s*(?:and\s+)?|\s+and\s+)(?=\$?\d)")
_SHARE_OF_RE = re.compile(r"\s+of\s+(?:the\s+|all\s+)?")
_HYPOTHETICAL_GAP_WORDS = 5  # "if we set τ = 1, [the loss function] reduces to"
_RELATIVE_OR_PURPOSE_WORDS = frozenset({"which", "that", "who", "to", "so"})
_COORDINATED_ASSIGNMENT_RE = re.compile(
    rf"(?<![\w\\]){_SYMBOL}\s*=\s*{VALUE}\s*(?:,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+)$"
)


@dataclass(slots=True)
class Stated:
    """A value stated in a sentence, before it becomes a Hyperparameter."""

    name: str
    entry: HyperparameterEntry | None
    normalized_name: str
    read: ReadValue
    name_start: int
    symbol: str | None  # the symbol that names it, if any ("learning rate η" → η)
    statement: tuple[str, int]  # the statement it comes from: chained names share one ("λ = γ = 0.1")


@dataclass(frozen=True, slots=True)
class _Name:
    """A name in a sentence: a vocabulary word ("learning rate") or a symbol ("β_1", "K")."""

    start: int
    end: int
    text: str
    entry: HyperparameterEntry | None
    symbol: str | None  # canonical, for symbols
    latin: bool = False


# --- sentences -----------------------------------------------------------------------------------


def from_sentence(sentence: Sentence, mentions: list[Mention]) -> list[tuple[Hyperparameter, str | None]]:
    """The values a sentence states, each with the symbol naming it (for SymbolInfo.value)."""
    plain = sentence.plain
    vocabulary = hyperparameter_vocabulary()
    text = plain.text
    if vocabulary.measurement_words.search(text) or vocabulary.result_words.search(text):
        return []  # a measurement's or a result's numbers are not the paper's settings
    found = []
    statements = list(find_stated(plain)) if _DIGIT_RE.search(text) else []
    statements += [n for n in _negated(plain) if not any(_same_value(n, s) for s in statements)]
    for stated in statements:
        found.append((_hyperparameter(sentence, stated, mentions, value_end(text, stated.read)), stated.symbol))
    return found


def _hyperparameter(sentence: Sentence, stated: Stated, mentions: list[Mention], raw_end: int) -> Hyperparameter:
    """A statement of a sentence as the spec keeps it; `raw_end`: where the value as written ends."""
    normalized_name, component = _attributed(stated, mentions)
    return Hyperparameter(
        name=stated.name,
        normalized_name=normalized_name,
        value=stated.read.value,
        raw_value=sentence.source(stated.read.start, raw_end),
        unit=stated.read.unit,
        component=component,
        text=sentence.text,
        source="text",
        section_id=sentence.paragraph.section_id,
        location=sentence.location(stated.name_start, stated.read.end),
    )


# "No weight decay is applied", "we do not use dropout", "trained without label smoothing": a
# technique turned off is a value of 0. Not "no weight decay is applied to biases": that is a part.
_NEGATION_BEFORE_RE = re.compile(
    r"(?:^|[.;:]\s+|,\s+)no\s+$|\b(?:we|We)\s+(?:do|did)\s+not\s+(?:use|apply|employ|adopt)\s+(?:any\s+)?$"
    r"|\b(?:we|We)\s+(?:use|apply|employ)\s+no\s+$"
    r"|\b(?:train|trains|trained|training|fine-tuned|fine-tune|optimi[sz]ed)\s+(?:\w+\s+){0,3}without\s+(?:any\s+)?$",
    re.I,
)
_NO_SUBJECT_RE = re.compile(r"^\s*(?:is|was|are|were)\s+(?:used|applied|employed|adopted)\b", re.I)
_NOT_USED_RE = re.compile(r"^\s*(?:is|was|are|were)\s+(?:not\s+(?:used|applied|employed|adopted)|disabled|turned\s+off)\b", re.I)
# Said of a part or a phase only: "to the biases", "in the decoder", "during evaluation", "until step 1000".
_APPLIED_TO_A_PART_RE = re.compile(
    r"^[^,;.]*?\b(?:to|on|for|in|during|at|until|before|after|except|when|while)\s+(?:the\s+|all\s+|any\s+)?(?!training\b)\w", re.I
)
# A case, a trial or an ablation, not the setup: "If we do not use dropout, ...", "training without
# weight decay degrades the FID", "we also tried training without label smoothing".
_NOT_THE_SETUP_RE = re.compile(
    r"^\W*(?:if|when|whenever|unless)\b|\b(?:tried|try|ablat\w*|degrad\w*|hurts?|worse|better|drops?|improv\w*|increas\w*|decreas\w*|instead)\b",
    re.I,
)


def _negated(plain: PlainText) -> Iterator[Stated]:
    """Techniques the sentence says are off (hyperparameters.yaml `off_when_negated`), each as 0."""
    text = plain.text
    if _NOT_THE_SETUP_RE.search(text) or _is_hypothetical(text, len(text)):
        return
    for match in hyperparameter_vocabulary().names.finditer(text):
        entry = match.value.entry
        if not entry.off_when_negated or not match.value.applies_in(text):
            continue
        before, after = text[max(0, match.start - 60) : match.start], text[match.end :]
        negated_before = _NEGATION_BEFORE_RE.search(before)
        if negated_before and negated_before.group().strip().lower() == "no" and not _NO_SUBJECT_RE.match(after):
            continue  # "no weight decay" as a subject needs its verb: "No weight decay is applied"
        not_used = _NOT_USED_RE.match(after)
        if not (negated_before or not_used):
            continue
        if _APPLIED_TO_A_PART_RE.match(after):
            continue  # "no weight decay is applied to the biases": a part of the model, not all of it
        start = match.start
        if negated_before:  # the statement starts at its negation: "No weight decay", "do not use dropout"
            negation = negated_before.group()
            start = match.start - len(before) + negated_before.start() + len(negation) - len(negation.lstrip(" ,.;:"))
        read = ReadValue(0.0, None, start, match.end + (not_used.end() if not_used else 0))
        yield Stated(text[match.start : match.end], entry, entry.name, read, match.start, None, ("negated", match.start))


def find_stated(plain: PlainText) -> Iterator[Stated]:
    """Every value stated in one sentence's plain form, in order, none read twice."""
    text = plain.text
    names = sorted(_names_in(plain), key=lambda name: name.start)
    found = [*_paired(plain, names), *_named(plain, names), *_sets(plain, names), *_counted(plain), *_shares(plain)]
    found = [s for s in found if not _is_variant(text, s.name_start) and not _is_hypothetical(text, s.read.end)]
    # A value read by two statements ("λ = γ = 0.1" and "γ = 0.1") counts for the first only. The
    # values taken are kept by where their reading starts, so that each is checked against its
    # neighbours only (a sentence may state hundreds).
    taken: list[tuple[int, Stated]] = []
    for stated in sorted(found, key=lambda s: s.name_start):
        read = stated.read
        first = bisect.bisect_left(taken, read.start - _LONGEST_VALUE, key=lambda pair: pair[0])
        nearby = (other for start, other in taken[first:] if start < read.end)
        if not any(_same_value(stated, other) and stated.statement != other.statement for other in nearby):
            bisect.insort(taken, (read.start, stated), key=lambda pair: pair[0])
            yield stated


def _within_one_math(plain: PlainText, reads: list[ReadValue]) -> list[ReadValue]:
    """The leading values that stand where the first does: all in one `$...$`, all outside math, or
    each alone in its own `$...$` ("of $5e-6$ and $1e-5$")."""
    span = plain.math_span(reads[0].start)
    alone = _alone_in_math(plain, reads[0])
    count = 1
    while count < len(reads) and (
        plain.math_span(reads[count].start) == span or (alone and _alone_in_math(plain, reads[count]))
    ):
        count += 1
    return reads[:count]


def _alone_in_math(plain: PlainText, read: ReadValue) -> bool:
    span = plain.math_span(read.start)
    return span is not None and not plain.text[span[0] : read.start].strip() and not plain.text[read.end : span[1]].strip()


_LONGEST_VALUE = 200  # characters a value's reading spans at most ("3 \\times 10^{-4}", "1,000,000")


def _same_value(one: Stated, other: Stated) -> bool:
    return one.read.start < other.read.end and other.read.start < one.read.end


def _named(plain: PlainText, names: list[_Name]) -> Iterator[Stated]:
    """Statements "<name> <connector> <value(s)>": "the learning rate is 1e-4", "λ = 0.1"."""
    text = plain.text
    consumed = 0
    for name in names:
        if name.start < consumed or not (tail := _STATEMENT_TAIL_RE.match(text, name.end)):
            continue
        connector = tail["connector"].strip().lower()
        targets = _targets(plain, name, tail, connector)
        if not targets:
            continue
        if connector in ("to", "as") and not _has_setting_verb(text, name.start):
            continue
        reads = read_values(text, tail.end(), targets[0].entry, in_parentheses=connector == "(")
        if not reads or (connector in ("", "(") and looks_like_year(reads[0], text)):
            continue
        reads = _within_one_math(plain, reads)  # "$\beta=2$ and 1 NN" lists nothing
        reads += _per_experiment(text, reads[-1].end, targets[0].entry)
        if not all(ends_its_math(plain, read) for read in reads):
            continue  # "$M = 3 \rho m$": the value is a term of a formula
        if name.entry is None and reads[0].value in (0, 1) and not _has_setting_verb(text, name.start):
            continue  # "with μ = 0", "(η = 1)": 0 and 1 of an unknown symbol are mostly cases
        consumed = tail.end()
        symbol = _canonical_symbol(tail["named_symbol"]) if tail["named_symbol"] else None
        for target in targets:
            yield from _stated(
                target.text, target.entry, target.symbol or symbol, reads, name.start, ("named", name.start)
            )


# "n ∈ {100, 200, 500}", "the learning rate is chosen from {1e-3, 1e-4}": the values a sweep runs.
_SET_RE = re.compile(
    r"\s*(?:∈|(?:is\s+|are\s+|was\s+|were\s+)?(?:chosen\s+|selected\s+|tuned\s+|searched\s+|swept\s+)?(?:in|from|over|among)\s+)"
    r"\{(?P<elements>[^{}]{1,200})\}"
)
# Sets of these alone are a domain ("y ∈ {0, 1}", "s ∈ {-1, 1}"), not values a run sets.
_DOMAIN_VALUES = frozenset({-1.0, 0.0, 1.0})


def _sets(plain: PlainText, names: list[_Name]) -> Iterator[Stated]:
    """A name and the set of values it takes ("n ∈ {100, 200, 500}"): each value is stated, for one
    of the experiments the sweep makes. Only sets of numbers: "m ∈ {10, 100, d}" or "{1, …, K}"
    leaves a value open, and a set of -1, 0 and 1 is a domain."""
    text = plain.text
    for name in names:
        if (name.symbol is None and name.entry is None) or not (found := _SET_RE.match(text, name.end)):
            continue
        if name.symbol is not None and not plain.in_math(name.start, name.end):
            continue
        # "{100,200,500}" lists three values, "{1,000, 2,000}" two: commas without a space separate
        # only where no comma has one.
        start = found.start("elements")
        separator = ", " if ", " in found["elements"] else ","
        reads: list[ReadValue] = []
        for element in found["elements"].split(separator):
            written = element.strip()
            read = read_one(written, 0, name.entry, in_list=True)
            if read is None or read.end != len(written):
                break
            offset = start + element.index(written)
            reads.append(replace(read, start=read.start + offset, end=read.end + offset))
            start += len(element) + len(separator)
        else:
            if len(reads) > 1 and not {r.value for r in reads} <= _DOMAIN_VALUES:
                yield from _stated(name.text, name.entry, name.symbol, reads, name.start, ("set", name.start))


def _per_experiment(text: str, end: int, entry: HyperparameterEntry | None) -> list[ReadValue]:
    """The values after a first one that each name their experiment, as the first does: "a batch size
    of 2048 for ImageNet 64×64 and 1024 for ImageNet 256×256" states 1024 too."""
    found: list[ReadValue] = []
    while (between := _PER_EXPERIMENT_RE.match(text, end)) is not None:
        more = read_values(text, between.end(), entry, in_parentheses=False)
        if not more or not (named := _FOR_EXPERIMENT_RE.match(text, more[0].end)):
            break  # "2048 for ImageNet and 100 epochs": another setting's value
        stop = _EXPERIMENT_END_RE.search(text, named.end())
        if next(hyperparameter_vocabulary().names.finditer(text, named.end(), stop.start() if stop else len(text)), None):
            break  # "256 for ImageNet, and 2 for the patch size": another setting's value
        found.append(more[0])
        end = more[0].end
    return found


def _targets(plain: PlainText, name: _Name, tail: re.Match[str], connector: str) -> list[_Name]:
    """The names a statement gives its value to ("λ = γ = 1e-4" gives two), or none."""
    vocabulary = hyperparameter_vocabulary()
    text = plain.text
    previous = _previous_word(text, name.start)
    if previous in vocabulary.blocked_before_name or follows_condition(
        text, name.start, symbol=name.symbol is not None
    ):
        return []  # "if λ = 0, ...": a case of an argument
    if name.symbol is None:
        if name.entry is None or previous in name.entry.exclude_prefixes:
            return []
    elif connector in ("", "(", "at") or tail["aside"]:
        return []  # "u(x, 0) = 0" applies a function
    elif name.latin and (connector not in ("=", ":") or not _has_setting_verb(text, name.start)):
        return []  # a Latin letter names a value only where the sentence sets it ("we set $K=8$")
    chained = [_symbol(match) for match in _SYMBOL_RE.finditer(text, tail.start("chain"), tail.end("chain"))]
    return [name, *chained]


def _names_in(plain: PlainText) -> Iterator[_Name]:
    text = plain.text
    for match in hyperparameter_vocabulary().names.finditer(text):
        if match.value.applies_in(text):
            yield _Name(match.start, match.end, text[match.start : match.end], match.value.entry, None)
    for match in _SYMBOL_RE.finditer(text):
        # A Latin letter is a symbol only inside math ("we set $K=8$"), when the text has math.
        if match["greek"] or not plain.math or plain.in_math(match.start(), match.end()):
            yield _symbol(match)


def _symbol(match: re.Match[str]) -> _Name:
    canonical = _canonical_symbol(match.group(0))
    entry = hyperparameter_vocabulary().symbols.get(symbol_key(canonical))
    return _Name(match.start(), match.end(), canonical, entry, canonical, latin=not match["greek"])


def _paired(plain: PlainText, names: list[_Name]) -> Iterator[Stated]:
    """Names and values paired in order: "(β_1, β_2) = (0.9, 0.999)", "A and B are 1 and 2"."""
    text = plain.text
    for match in _TUPLE_RE.finditer(text):
        yield from _pair(text, _name_list(text, names, match.start("names"), match.end("names"), whole=True), match)
    if " and " in text:
        for match in _RESPECTIVE_VALUES_RE.finditer(text):
            start = _clause_start(text[: match.start()], keep_and=True)
            yield from _pair(text, _name_list(text, names, start, match.start(), whole=False), match)


def _name_list(text: str, names: list[_Name], start: int, end: int, *, whole: bool) -> list[_Name]:
    """The names listed in text[start:end] ("σ_min and σ_max"), ending at `end`.

    With `whole`, the list must fill the span; else it is the longest list the span ends with.
    """
    listed: list[_Name] = []
    position = end
    for name in reversed([name for name in names if start <= name.start and name.end <= end]):
        gap = text[name.end : position]
        if (_NAME_LIST_SEPARATOR_RE.fullmatch(gap) is None) if listed else bool(gap.strip()):
            break
        listed.insert(0, name)
        position = name.start
    if len(listed) < 2 or (whole and text[start:position].strip()):
        return []
    return listed


def _pair(text: str, names: list[_Name], match: re.Match[str]) -> Iterator[Stated]:
    reads = reads_in(text, match.start("values"), match.end("values"))
    if len(names) != len(reads):
        return
    for name, read in zip(names, reads, strict=True):
        yield from _stated(name.text, name.entry, name.symbol, [read], name.start, ("paired", match.start()))


def _stated(
    name: str,
    entry: HyperparameterEntry | None,
    symbol: str | None,
    reads: list[ReadValue],
    name_start: int,
    statement: tuple[str, int],
) -> Iterator[Stated]:
    """One Stated per value, after the name's own rules (unit, expansion, range) are applied."""
    vocabulary = hyperparameter_vocabulary()
    if entry is not None and entry.expand:
        if len(reads) == len(entry.expand):
            for expanded, read in zip(entry.expand, reads, strict=True):
                yield from _stated(name, vocabulary.entries[expanded], symbol, [read], name_start, statement)
            return
        if len(reads) != 1:
            return
    for read in reads:
        resolved = resolve_entry(entry, read)
        if resolved is REJECTED:
            continue
        if resolved is not None and not acceptable(resolved, read):
            continue
        normalized = resolved.name if resolved is not None else symbol_name(symbol or name)
        yield Stated(name, resolved, normalized, read, name_start, symbol, statement)


def _counted(plain: PlainText) -> Iterator[Stated]:
    """Counts "<value> <count noun>": "1000 warm-up steps", "trained for 300K iterations", also
    given a symbol in math ("for $T = 100000$ steps": the count is T's value)."""
    text = plain.text
    for value_match in VALUE_RE.finditer(text):
        value = evaluate(value_match.group(0))
        start = value_match.start()
        assigned = _ASSIGNED_SYMBOL_RE.search(text, max(0, start - 20), start)
        if assigned is not None and not plain.in_math(assigned.start(), start):
            assigned = None
        counted = _count_at(text, assigned.start() if assigned else start, value_match.end(), value)
        if counted is not None:
            entry, noun, noun_match = counted
            read = ReadValue(value, noun.unit, start, noun_match.end)
            symbol = _canonical_symbol(assigned["symbol"]) if assigned else None
            yield Stated(text[noun_match.start : noun_match.end], entry, entry.name, read, start, symbol, ("counted", start))


def _count_at(text: str, start: int, end: int, value: float | None) -> tuple[HyperparameterEntry, CountNoun, PhraseMatch[CountNoun]] | None:
    """The setting a count standing at text[start:end] states, with its noun: the noun after it, in
    a clause that trains (for a generic noun such as "steps") and not after "every" or "after"."""
    vocabulary = hyperparameter_vocabulary()
    noun_match = _count_noun_after(text, end)
    if noun_match is None or value is None:
        return None
    before = text[:start]
    clause = before[_clause_start(before) :]
    warmup = bool(_WARMUP_RE.search(clause) or _WARMUP_AFTER_RE.match(text, noun_match.end))
    previous = _previous_word(text, _list_start(text, start))
    if previous in vocabulary.blocked_before_count and not (warmup and previous == "first"):
        return None  # "every 2B tokens", "after 30 epochs"; but "warm up during the first 5 epochs"
    if _MODEL_NAME_RE.search(before):
        return None  # "RTX 3090 GPUs": a model number, not a count
    noun = noun_match.value
    entry = noun.entry
    if noun.generic:
        if not _COUNT_LEAD_RE.search(before) or not vocabulary.training_verbs.search(clause):
            return None
        if warmup:
            entry = vocabulary.entries.get(vocabulary.entries["warmup"].unit_names.get(noun.unit, ""), entry)
    return (entry, noun, noun_match) if entry.accepts(value) else None


# "for $T = 100000$ steps": the symbol a count is given to. "$T/10$ steps", "$0.1 \cdot T$ steps": a
# count written through another symbol's value (its numbers read atomically: a run of a million
# digits costs one pass).
_ASSIGNED_SYMBOL_RE = re.compile(r"(?<![\w\\])(?P<symbol>[A-Za-z](?:_\{?\w+\}?)?)\s*=\s*$")
_SYMBOLIC_COUNT_RE = re.compile(
    r"(?<![\w.\\])(?:(?P<symbol>[A-Za-z](?:_\{?\w+\}?)?)\s*/\s*(?P<divisor>\d++(?:\.\d++)?)"
    r"|(?P<factor>\d++(?:\.\d++)?|\.\d++)\s*(?:\\cdot|\\times|\*|×|·)?\s*(?P<of>[A-Za-z](?:_\{?\w+\}?)?))(?![\w.])"
)


def symbolic_counts(sentence: Sentence, mentions: list[Mention]) -> list[tuple[Hyperparameter, str]]:
    """Counts a sentence writes through another symbol ("warm up for $T/10$ steps"), each with the
    symbol and, as its value, the factor the symbol's value is multiplied by (1/10): the caller,
    which knows what the paper states each symbol to be, works the value out."""
    plain = sentence.plain
    text = plain.text
    found = []
    for match in _SYMBOLIC_COUNT_RE.finditer(text):
        if not plain.in_math(match.start(), match.end()):
            continue
        if match["factor"] and evaluate(match.group(0)) is not None:
            continue  # "$300K$ steps", "$0.1T$ tokens": a number with its magnitude, not a symbol's multiple
        symbol, factor = (match["symbol"], 1 / float(match["divisor"])) if match["symbol"] else (match["of"], float(match["factor"]))
        if factor <= 0 or not math.isfinite(factor):
            continue
        counted = _count_at(text, match.start(), match.end(), 1.0)
        if counted is None:
            continue
        entry, noun, noun_match = counted
        read = ReadValue(factor, noun.unit, match.start(), noun_match.end)
        stated = Stated(text[noun_match.start : noun_match.end], entry, entry.name, read, match.start(), None, ("symbolic", match.start()))
        found.append((_hyperparameter(sentence, stated, mentions, match.end()), _canonical_symbol(symbol)))
    return found


def _shares(plain: PlainText) -> Iterator[Stated]:
    """Shares "<action> ... in 25% of the images": a percentage of the data the action in its clause
    applies to is the probability of that augmentation."""
    vocabulary = hyperparameter_vocabulary()
    text = plain.text
    for value_match in VALUE_RE.finditer(text):
        start, end = value_match.span()
        share_of = _SHARE_OF_RE.match(text, end)
        if not (value_match.group(0).endswith("%") and share_of and vocabulary.share_nouns.match(text, share_of.end())):
            continue
        actions = list(vocabulary.share_actions.finditer(text, _clause_start(text[:start]), start))
        value = evaluate(value_match.group(0))
        if not actions or value is None or not actions[-1].value.accepts(value):
            continue
        action, entry = actions[-1], actions[-1].value
        read = ReadValue(value, "%", start, end)
        yield Stated(text[action.start : action.end], entry, entry.name, read, action.start, None, ("share", start))


def _count_noun_after(text: str, position: int) -> PhraseMatch[CountNoun] | None:
    """The count noun after a value, past at most two capitalized words ("16 A100 GPUs")."""
    separator = _COUNT_SEPARATOR_RE.match(text, position)
    if separator is None:
        return None
    start = separator.end()
    nouns = hyperparameter_vocabulary().count_nouns
    for _ in range(3):
        if (found := nouns.match(text, start)) is not None:
            return found
        qualifier = _COUNT_QUALIFIER_RE.match(text, start)
        if qualifier is None:
            return None
        start = qualifier.end()
    return None


# --- context -------------------------------------------------------------------------------------


def _list_start(text: str, position: int) -> int:
    """Where the list of values ending at `position` starts ("at 50K, 100K, and 400K iterations")."""
    while match := _LIST_TAIL_RE.search(text, max(0, position - 40), position):
        position = match.start()
    return position


def _previous_word(text: str, position: int) -> str:
    match = _PREVIOUS_WORD_RE.search(text, max(0, position - 40), position)
    return match.group(1).lower() if match else ""


_CLAUSE_LOOKBACK = 1000  # characters: no clause a value belongs to is longer; bounds the work per value


def _clause_start(before: str, *, keep_and: bool = False) -> int:
    """Where the clause that `before` ends begins (at most _CLAUSE_LOOKBACK characters back)."""
    offset = max(0, len(before) - _CLAUSE_LOOKBACK)
    breaks = list((_LIST_CLAUSE_BREAK_RE if keep_and else _CLAUSE_BREAK_RE).finditer(before, offset))
    return breaks[-1].end() if breaks else offset


def _has_setting_verb(text: str, position: int) -> bool:
    """Whether the words just before `position` (in its clause, at most six) set a value."""
    verbs = hyperparameter_vocabulary().setting_verbs
    return any(word in verbs for word in _words_before(text, position, 6))


def _is_variant(text: str, position: int) -> bool:
    """Whether a verb that changes a setting comes just before `position`, within four words of its
    clause: "raising the temperature to τ = 1" names a variant compared, not the setting."""
    variant_verbs = hyperparameter_vocabulary().variant_verbs
    return any(word in variant_verbs for word in _words_before(text, position, 4))


def _is_hypothetical(text: str, value_end: int) -> bool:
    """Whether a consequence follows the value within a few words ("with τ = 1 TLM reduces to ...",
    "setting λ = 0 recovers ..."): the value is a case of the method, not its setting. A relative
    clause or a purpose between them ("τ = 1, which reduces", "λ = 0.1 to recover") keeps it a setting."""
    end = text.find(";", value_end)
    window = text[value_end : end if end >= 0 else len(text)]
    consequence = next(hyperparameter_vocabulary().hypothetical_consequences.finditer(window), None)
    if consequence is None:
        return False
    gap = re.findall(r"[\w-]+", window[: consequence.start].lower())
    return len(gap) <= _HYPOTHETICAL_GAP_WORDS and not set(gap) & _RELATIVE_OR_PURPOSE_WORDS


_COORDINATED_READ = 16  # "for λ = 0, λ = 0.5 and λ = 1": assignments read back to their condition


def follows_condition(text: str, position: int, *, symbol: bool) -> bool:
    """Whether a condition word comes right before the name, or before the assignments it is
    coordinated with ("for λ = 0 and λ = 1")."""
    vocabulary = hyperparameter_vocabulary()
    conditions = vocabulary.conditional_words | (vocabulary.symbol_conditional_words if symbol else frozenset())
    # A list of assignments is a few long: walking back over thousands would cost each value the list.
    for _ in range(_COORDINATED_READ):
        match = _COORDINATED_ASSIGNMENT_RE.search(text, max(0, position - 60), position)
        if match is None:
            break
        position = match.start()
    return any(word in conditions for word in _words_before(text, position, 2))


def _words_before(text: str, position: int, count: int) -> list[str]:
    """The last `count` words of the clause that ends at `position`, lowercased."""
    before = text[max(0, position - _CLAUSE_LOOKBACK) : position]
    return re.findall(r"[\w-]+", before[_clause_start(before) :].lower())[-count:]


def _attributed(stated: Stated, mentions: list[Mention]) -> tuple[str, str | None]:
    """A value's normalized name and component, given the components its sentence names."""
    entry = stated.entry
    if entry is None:
        return stated.normalized_name, None
    component = _component_of(entry, stated, mentions)
    if component is None:
        for mention in mentions:
            if mention.name in entry.renamed_with:
                renamed = hyperparameter_vocabulary().entries[entry.renamed_with[mention.name]]
                return renamed.name, _component_of(renamed, stated, mentions)
    return stated.normalized_name, component


def _component_of(entry: HyperparameterEntry, stated: Stated, mentions: list[Mention]) -> str | None:
    """The component a value belongs to: one named with it, of a kind its name belongs to."""
    start, end = stated.name_start, stated.read.end
    for kind in entry.components:
        candidates = [mention for mention in mentions if mention.kind == kind]  # in the text's order
        if candidates:
            overlapping = next((m for m in candidates if m.start < end and start < m.end), None)
            if overlapping is not None:
                return overlapping.name
            candidates = sorted(candidates, key=lambda m: m.start)
            starts = [m.start for m in candidates]
            at = bisect.bisect_left(starts, start)
            around = candidates[max(0, at - 1) : at + 1]  # the nearest start is one of these two
            return min(around, key=lambda m: abs(m.start - start)).name
    return None


def trailing_symbol(plain: PlainText) -> str | None:
    """The symbol a name ends with, canonical: "Mixing α" → α, "Temperature (τ)" → τ, "$K$" → K.
    A Latin letter counts only as math, since "Model B" names no symbol."""
    match = _TRAILING_SYMBOL_RE.search(plain.text)
    if match is None or not (match["greek"] or plain.in_math(match.start("symbol"), match.end("symbol"))):
        return None
    return _canonical_symbol(match["symbol"])


def _canonical_symbol(symbol: str) -> str:
    """β1 → β_1 (digits after a Greek letter are its subscript); the rest as written."""
    symbol = symbol.strip()
    if len(symbol) > 1 and symbol[0] in GREEK_LETTERS and symbol[1].isdigit():
        return f"{symbol[0]}_{symbol[1:]}"
    return symbol


def symbol_name(symbol: str) -> str:
    """A symbol's snake_case name: λ → lambda, λ_KL → lambda_kl, K → k."""
    spelled = "".join(GREEK_NAMES.get(char, char) for char in symbol)
    return re.sub(r"\W+", "_", spelled).strip("_").lower() or symbol


# --- equations -----------------------------------------------------------------------------------


_EQUATION_ASSIGNMENT_RE = re.compile(rf"{_SYMBOL}\s*=\s*(?P<value>{VALUE})")
_ASSIGNMENTS_RE = re.compile(
    rf"\s*{_SYMBOL}\s*=\s*{VALUE}(?:\s*(?:,|;|\band\b)?\s*{_SYMBOL}\s*=\s*{VALUE})*\s*[.,;]?\s*"
)
_EQUATION_NOISE_RE = re.compile(r"\\(?:begin|end)\w*|\\relax|\\\\|&|\\nonumber|\\notag")


def from_equation(equation: Equation) -> list[tuple[Hyperparameter, str | None]]:
    """Values a display equation sets, when it sets nothing but values ("λ = 0.1, τ = 0.07")."""
    plain = to_plain(equation.latex or equation.text)
    text = _EQUATION_NOISE_RE.sub(" ", plain.text)
    if not _ASSIGNMENTS_RE.fullmatch(text):
        return []
    found = []
    for match in _EQUATION_ASSIGNMENT_RE.finditer(text):
        value = evaluate(match["value"])
        name = _symbol(_SYMBOL_RE.match(match.group(0)))
        if value is None or (name.entry is not None and not name.entry.accepts(value)):
            continue
        hyperparameter = Hyperparameter(
            name=name.text,
            normalized_name=name.entry.name if name.entry else symbol_name(name.text),
            value=value,
            raw_value=match["value"],
            unit="%" if match["value"].endswith("%") else None,
            text=equation.text,
            source="equation",
            section_id=equation.section_id,
            location=equation.location,
        )
        found.append((hyperparameter, name.symbol))
    return found

"""Readiness benchmark: how well `assess(spec)` finds gaps we plant, and how much it says otherwise.

(a) Controlled injection into the LaTeX papers of ../shared/data/papers-latex, one defect per
    modified copy (in a temp dir; the shared data is never written). Defects are made by rules from
    what the clean reading found — never picked by hand:

    remove-stated-value  a setting the requirements ask for (TARGET_SETTINGS), stated in prose: every
                         sentence and table row stating it is cut (its normalised names, and the
                         requirement's `stated_by_text` wording). A cut sentence that was where the
                         finder saw a component used becomes "We use <component>.", so only the value
                         goes missing, not the usage. Expected: unstated-setting for that setting.
    remove-table-row     the same for a setting stated only in table rows.
    remove-definition    a Greek-letter symbol with a prose definition, no value, used in a main-text
                         equation: the sentence read as its definition is cut, re-read, and cut again
                         while another sentence is read as its definition (at most 4). Expected:
                         undefined-symbol at the first main-text equation using it.
    corrupt-in-place     a setting with one value, stated in prose and again in the same section or in
                         a table: the prose value is changed (0.1 → 0.05, 0.9 → 0.8, 256 → 512).
    restate-copy         a setting with one value and no such second statement: its sentence, value
                         changed, is added as a new paragraph after its own (same section).
    restate-short        the same with a context-free sentence ("The learning rate is set to 5e-5.").
                         Expected for the three: conflicting-values for that setting.
    insert-ambiguity     SYNTHETIC: each fixed sentence of AMBIGUOUS_SENTENCES appended to the
                         paragraph holding the paper's first stated value. Expected: ambiguous-wording.

    Cuts keep every line break (as `%` line ends), so the rest of the paper keeps its lines.
    reported  = a gap the clean paper did not have, of the expected kind, category and setting/symbol.
    localised = reported, and at the right place:
      remove-*:          its primary evidence lies in a section a statement was cut from;
      remove-definition: its primary evidence lies within the first main-text equation using the symbol;
      corrupt/restate:   one of its evidence spans overlaps the changed or added statement;
      insert-ambiguity:  its primary evidence overlaps the inserted sentence.
    collateral = new gaps besides the expected one, other than gaps about settings or symbols the
    same edit also removed or changed. Noise: gaps of each clean paper per page, a page estimated as
    3000 characters of prose as read (paragraphs, captions, footnotes, items).

(b) ../shared/data/scireplicate-dev.json: each task's LaTeX method snippet is read and assessed, and
    each human-annotated missing detail is matched to that snippet's gaps by three rules:
      strict:  the detail names the gap's setting (the reader's hyperparameter vocabulary run over
               the detail) or its symbol (as the character, `\\name` or the spelled-out name);
      topical: strict, or the gap's title + question share ≥ 2 content-word stems with the detail
               (stem = first 6 letters; stop words and annotation/template boilerplate removed);
      loose:   topical, or ≥ 2 stems shared with title + question + the evidence quotes.
    Each rule is also run against the gaps of another paper's task (chance baseline), and strict
    against all gaps of the same paper's tasks (snippets of one paper overlap).

(c) Real method descriptions (each SciReplicate snippet; each method paragraph of the LaTeX papers
    with the next one of its section): in each, the first detail of each kind (DETAIL_KINDS: an
    aggregation, a distance, a weight, a dimension, a split's proportions, a metric's sample count),
    outside tables and figures, is made vague by a fixed rewrite ("the sum of" → "the aggregate of",
    "with a $8:1$ ratio" → "", "on 50K samples" → "on samples"), unless the description still says
    it elsewhere or the sentence does nothing. A detail reached from two overlapping descriptions
    counts once. Reported: the share whose changed sentence holds the gap ranked first (and in the
    top 3), with that kind's category, beside a random sentence's chance; and the blocking gaps of
    the intact descriptions.

Usage: python bench/readiness_eval.py [--limit N] [--out bench/results/readiness_eval.json]
                                      [--data ../shared/data] [--show-clean-gaps]
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from paperlens.pipeline.errors import PaperError
from paperlens.pipeline.extract.knowledge import hyperparameter_vocabulary
from paperlens.pipeline.extract.mathtext import GREEK, GREEK_NAMES
from paperlens.pipeline.extract.sentences import Sentence, sentences_of
from paperlens.pipeline.ingest import read_paper
from paperlens.pipeline.readiness import assess
from paperlens.pipeline.readiness.finders import NOT_A_SETTING, Reading, used_components
from paperlens.pipeline.readiness.knowledge import Requirement, requirements
from paperlens.schemas import Gap, Hyperparameter, Location, PaperSpec, ReadinessReport
from machine import machine  # bench/machine.py (scripts here run with bench/ on the path)

REPO = Path(__file__).resolve().parents[1]
CHARS_PER_PAGE = 3000
LATEX_OF_GREEK = {letter: name for name, letter in GREEK.items() if not name.startswith("var")}

# The settings of requirements.yaml whose absence is a missing value (not a missing component,
# schedule or seed count): the ones an injected removal targets.
TARGET_SETTINGS = (
    "learning_rate", "weight_decay", "batch_size", "training_length", "momentum", "betas", "dropout",
    "label_smoothing", "drop_path_rate", "ema_decay", "grad_clip_norm", "warmup",
)  # fmt: skip

# A numeric conflict between two statements of one setting: the taxonomy's closest category.
CONFLICT_CATEGORY = "Conflicting Model Design"

# Synthetic vague sentences, each with the category an annotator would give it. Written once,
# before any run: canonical phrasings and a few equally common ones the vocabulary may not know.
AMBIGUOUS_SENTENCES = (
    ("We apply standard data augmentation to the training images.", "Ambiguous Procedure"),
    ("We normalize the features before the final projection.", "Ambiguous Procedure"),
    ("The input features are normalized before being passed to the model.", "Ambiguous Procedure"),
    ("We rescale the inputs before training.", "Ambiguous Procedure"),
    ("Images are preprocessed following common practice.", "Ambiguous Procedure"),
    ("We use the standard train/test split.", "Missing Data Specification"),  # an unstated split is missing data detail
    ("The weight of the auxiliary loss is chosen empirically.", "Missing Configuration Protocol"),
    ("The temperature is tuned on the validation set.", "Missing Configuration Protocol"),
    ("All remaining hyperparameters use the default settings.", "Missing Configuration Protocol"),
    ("We add a small constant to the denominator for numerical stability.", "Missing Configuration Protocol"),
    ("Our architecture is similar to that of prior work.", "Ambiguous Definition"),
)

BALANCED_PAIRS = (("{", "}"), ("\\begin", "\\end"))


# -- source text: offsets, edits -------------------------------------------------------------------


class SourceText:
    """A LaTeX file's text with (line, column) ↔ offset conversion (0-based, as Locations are)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.line_starts = [0] + [i + 1 for i, char in enumerate(text) if char == "\n"]

    def offset(self, line: int, column: int) -> int:
        return min(self.line_starts[line] + column, len(self.text))

    def position(self, offset: int) -> tuple[int, int]:
        line = max(0, bisect.bisect_right(self.line_starts, offset) - 1)
        return line, offset - self.line_starts[line]

    def span(self, location: Location) -> tuple[int, int]:
        return self.offset(location.line, location.column or 0), self.offset(location.end_line, location.end_column or 0)


@dataclass(frozen=True, slots=True)
class Edit:
    start: int
    end: int
    replacement: str


def is_balanced(latex: str) -> bool:
    """Braces, environments and inline math that a cut through `latex` would leave open."""
    latex = re.sub(r"\\[{}$%]", "", latex)
    return all(latex.count(a) == latex.count(b) for a, b in BALANCED_PAIRS) and latex.count("$") % 2 == 0


def deletion(text: str, start: int, end: int, replacement: str = "") -> Edit:
    """Delete text[start:end] keeping its line breaks as `%` line ends (lines elsewhere do not move,
    no blank line — a paragraph break — appears where there was none)."""
    newlines = text.count("\n", start, end)
    line_end = text.find("\n", end)
    rest_of_line_blank = not text[end : len(text) if line_end < 0 else line_end].strip()
    body = replacement + "%\n" * newlines
    if rest_of_line_blank and not replacement:
        body += "%"
    return Edit(start, end, body)


def apply_edits(text: str, edits: list[Edit]) -> tuple[str, list[tuple[int, int]]]:
    """The edited text and, per edit (in the given order), the span its replacement occupies."""
    order = sorted(range(len(edits)), key=lambda i: edits[i].start)
    for a, b in itertools.pairwise(order):
        if edits[a].end > edits[b].start:
            raise ValueError("overlapping edits")
    pieces, spans, cursor, shift = [], [None] * len(edits), 0, 0
    for i in order:
        edit = edits[i]
        pieces += [text[cursor : edit.start], edit.replacement]
        new_start = edit.start + shift
        spans[i] = (new_start, new_start + len(edit.replacement))
        shift += len(edit.replacement) - (edit.end - edit.start)
        cursor = edit.end
    pieces.append(text[cursor:])
    return "".join(pieces), spans


# -- defects ----------------------------------------------------------------------------------------


@dataclass(slots=True)
class Defect:
    paper: str
    type: str
    target: str  # the setting, symbol or sentence concerned
    expected_kind: str
    expected_category: str
    edits: list[Edit]
    removed_sections: set[str | None] = field(default_factory=set)  # remove-*: where statements stood
    expected_span: Location | None = None  # remove-definition: the equation; set from the clean reading
    co_removed: set[str] = field(default_factory=set)  # other settings/symbols the same cut removed
    note: str = ""
    asked_in_clean: bool | None = None  # remove-*: the clean reading asks for the setting (has a status)
    modified_text: str | None = None  # when made by re-reading (remove-definition), instead of edits


@dataclass(slots=True)
class CleanReading:
    name: str
    path: Path
    source: SourceText
    spec: PaperSpec
    report: ReadinessReport
    sentences: list[Sentence]  # every sentence of every paragraph, method or not
    used: list  # the components the finder counts as used, each with its first usage evidence

    def sentence_at(self, location: Location) -> Sentence | None:
        """The sentence whose span holds `location`."""
        for sentence in self.sentences:
            where = sentence.location()
            if where.file == location.file and _position(where) <= _position(location) and _end(location) <= _end(where):
                return sentence
        return None


def _position(location: Location) -> tuple[int, int]:
    return location.line or 0, location.column or 0


def _end(location: Location) -> tuple[int, int]:
    return location.end_line if location.end_line is not None else (location.line or 0), location.end_column or 0


def overlaps(one: Location, other: Location) -> bool:
    return one.file == other.file and not (_end(one) < _position(other) or _end(other) < _position(one))


def requirements_by_setting() -> dict[str, list[Requirement]]:
    knowledge = requirements()
    out: dict[str, list[Requirement]] = defaultdict(list)
    for needed in [*knowledge.by_component.values(), knowledge.training]:
        for requirement in needed:
            out[requirement.setting].append(requirement)
    return out


def stating_names(reqs: list[Requirement]) -> set[str]:
    return {name for r in reqs for name in r.stated_by}


def _table_row_deletion(clean: CleanReading, row: Location) -> Edit:
    """The row and its `\\\\` terminator."""
    text = clean.source.text
    start, end = clean.source.span(row)
    terminator = re.compile(r"\s*\\\\(?:\s*\[[^\]]*\])?").match(text, end)
    return deletion(text, start, terminator.end() if terminator else end)


def _sentence_deletion(clean: CleanReading, sentence: Sentence) -> Edit | None:
    """Delete a sentence. When it is where the clean reading saw the paper use a component, leave
    "We use <component>." in its place, so that only the value goes missing, not the usage."""
    text = clean.source.text
    start, end = clean.source.span(sentence.location())
    if not is_balanced(text[start:end]):
        return None
    where = sentence.location()
    mentions = []
    for component in clean.used:
        if overlaps(component.evidence.location, where):
            a, b = clean.source.span(component.evidence.location)
            mention = text[a:b] if is_balanced(text[a:b]) and len(text[a:b]) < 60 else component.name
            mentions.append(mention)
    replacement = ""
    if mentions:
        listed = mentions[0] if len(mentions) == 1 else ", ".join(mentions[:-1]) + " and " + mentions[-1]
        replacement = f"We use {listed}."
    return deletion(text, start, end, replacement)


def _stated_within(clean: CleanReading, names: set[str], spans: list[tuple[int, int]]) -> bool:
    """Whether one of the spans holds a statement of one of the names."""
    starts = [clean.source.span(h.location)[0] for h in clean.spec.hyperparameters if h.normalized_name in names]
    return any(_inside(start, span) for start in starts for span in spans)


def value_removals(clean: CleanReading, workdir: Path) -> tuple[list[Defect], Counter]:
    """remove-stated-value and remove-table-row defects, and why some settings gave none."""
    by_setting = requirements_by_setting()
    reading = Reading.of(clean.spec)
    defects, skipped = [], Counter()
    for setting in TARGET_SETTINGS:
        reqs = by_setting[setting]
        names = stating_names(reqs)
        statements = [h for h in clean.spec.hyperparameters if h.normalized_name in names]
        worded = [s for s in reading.sentences for r in reqs if r.stated_by_text is not None and r.stated_by_text.search(s.plain.text)]
        if not statements and not worded:
            continue
        if any(h.source == "equation" for h in statements):
            skipped[f"{setting}: stated in a display equation"] += 1
            continue
        edits: dict[tuple[int, int], Edit] = {}
        sections: set[str | None] = set()
        failed = False
        for h in statements:
            if h.source == "table":
                edit = _table_row_deletion(clean, h.location)
                sections.add(h.section_id)
            else:
                sentence = clean.sentence_at(h.location)
                edit = _sentence_deletion(clean, sentence) if sentence else None
                if sentence is not None:
                    sections.add(sentence.paragraph.section_id)
            if edit is None:
                failed = True
                break
            edits[(edit.start, edit.end)] = edit
        for sentence in worded:
            edit = _sentence_deletion(clean, sentence)
            if edit is None:
                failed = True
                break
            edits[(edit.start, edit.end)] = edit
            sections.add(sentence.paragraph.section_id)
        if failed:
            skipped[f"{setting}: a stating sentence cannot be cut cleanly (braces/math span it)"] += 1
            continue
        ordered = sorted(edits.values(), key=lambda e: e.start)
        if any(a.end > b.start for a, b in itertools.pairwise(ordered)):
            skipped[f"{setting}: overlapping statements"] += 1
            continue
        cut = [(e.start, e.end) for e in ordered]
        co_removed = {
            other
            for other, other_reqs in by_setting.items()
            if other != setting and _stated_within(clean, stating_names(other_reqs), cut)
        }
        in_prose = bool(worded) or any(h.source == "text" for h in statements)
        defects.append(
            Defect(
                paper=clean.name,
                type="remove-stated-value" if in_prose else "remove-table-row",
                target=setting,
                expected_kind="unstated-setting",
                expected_category=reqs[0].category,
                edits=ordered,
                removed_sections=sections,
                co_removed=co_removed,
                note=f"{len(ordered)} cut(s)",
                asked_in_clean=any(status.setting == setting for status in clean.report.settings),
            )
        )
    return defects, skipped


def _is_greek(symbol: str) -> bool:
    return "\u0370" <= symbol[:1] <= "\u03ff"


MAX_DEFINITION_CUTS = 4


def definition_removals(clean: CleanReading, workdir: Path) -> tuple[list[Defect], Counter]:
    """Cut the sentence the reading takes as the symbol's definition, re-read, and repeat while
    another sentence is taken as its definition (a paper often defines a symbol twice)."""
    appendix = {s.id for s in clean.spec.sections if s.appendix}
    equations = {e.id: e for e in clean.spec.equations}
    defined_in_clean = {info.symbol for info in clean.spec.symbols if info.definition is not None}
    defects, skipped = [], Counter()
    for info in clean.spec.symbols:
        if not _is_greek(info.symbol) or info.definition is None or info.value_given:
            continue
        main_text = [equations[i] for i in info.equations if i in equations and equations[i].section_id not in appendix]
        if not main_text:
            skipped["used only in appendix equations"] += 1
            continue
        first = min(main_text, key=lambda e: _position(e.location))
        text, definition, cuts, spec, problem = clean.source.text, info.definition, 0, None, None
        while definition is not None:
            start, end = SourceText(text).span(definition.location)
            if cuts == MAX_DEFINITION_CUTS:
                problem = f"still defined after {MAX_DEFINITION_CUTS} cuts"
            elif not is_balanced(text[start:end]):
                problem = "a defining sentence cannot be cut cleanly"
            if problem:
                break
            text = apply_edits(text, [deletion(text, start, end)])[0]
            cuts += 1
            spec = _read_text(text, workdir / clean.path.name)
            if spec is None:
                problem = "unreadable after the cut"
                break
            now = next((s for s in spec.symbols if s.symbol == info.symbol), None)
            definition = now.definition if now is not None else None
        if problem:
            skipped[problem] += 1
            continue
        still_defined = {s.symbol for s in spec.symbols if s.definition is not None}
        defects.append(
            Defect(
                paper=clean.name,
                type="remove-definition",
                target=info.symbol,
                expected_kind="undefined-symbol",
                expected_category="Ambiguous Definition",
                edits=[],
                expected_span=first.location,
                co_removed=(defined_in_clean - still_defined) - {info.symbol},
                note=f"{cuts} defining sentence(s) cut",
                modified_text=text,
            )
        )
    return defects, skipped


def _read_text(text: str, path: Path) -> PaperSpec | None:
    path.write_text(text, encoding="utf-8")
    try:
        return read_paper(path, use_cache=False)
    except PaperError:
        return None


def changed_value(value: float) -> float:
    """A plausible other value: 0.1 → 0.05, 0.9 → 0.8, 0.999 → 0.998, 256 → 512."""
    if 0 < value <= 0.5:
        changed = value / 2
    elif 0.5 < value < 1:
        changed = 1 - 2 * (1 - value)
    elif value == 0:
        changed = 0.1
    else:
        changed = 2 * value
    return float(f"{changed:.10g}")


def formatted(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    if abs(value) < 1e-3:
        mantissa, exponent = f"{value:.6e}".split("e")
        return f"{float(mantissa):g}e{int(exponent)}"
    return f"{value:.10g}"


def _value_spans(clean: CleanReading, h: Hyperparameter) -> list[tuple[int, int]]:
    """Offsets of the value as written within its statement ("256 \\times 256" holds it twice)."""
    start, end = clean.source.span(h.location)
    if not h.raw_value:
        return []
    pattern = re.compile(rf"(?<![\w.]){re.escape(h.raw_value)}(?![\w.])")
    return [m.span() for m in pattern.finditer(clean.source.text, start, end)]


def _inside(offset: int, span: tuple[int, int]) -> bool:
    return span[0] <= offset < span[1]


def _short_restatement(h: Hyperparameter, value: str) -> str | None:
    """ "The learning rate is set to 5e-5." / "We set $\\sigma_{min} = 0.001$." — none for a count
    ("300 epochs"), whose noun alone would be read as another setting."""
    if h.unit is not None and h.unit != "%":
        return None
    symbol = re.fullmatch(r"(?P<base>[A-Za-z]|[^\x00-\x7f])(?:_(?P<sub>\w+))?", h.name)
    if symbol is None:
        return f"The {h.name} is set to {value}." if re.fullmatch(r"[A-Za-z][A-Za-z -]*", h.name) else None
    base = symbol["base"]
    if not base.isascii():
        if base not in LATEX_OF_GREEK:
            return None
        base = f"\\{LATEX_OF_GREEK[base]}"
    sub = f"_{{{symbol['sub']}}}" if symbol["sub"] else ""
    return f"We set ${base}{sub} = {value}$."


def value_corruptions(clean: CleanReading, workdir: Path) -> tuple[list[Defect], Counter]:
    """A setting given one value: change it where a second statement stands in the same section or
    a table; otherwise restate it with another value in a new paragraph after its own, once as a
    copy of the stating sentence and once as a short sentence without its context."""
    by_name: dict[str, list[Hyperparameter]] = defaultdict(list)
    for h in clean.spec.hyperparameters:
        by_name[h.normalized_name].append(h)
    defects, skipped = [], Counter()
    text = clean.source.text
    for name, statements in by_name.items():
        prose = [h for h in statements if h.source == "text" and isinstance(h.value, float)]
        if not prose:
            continue
        if len({h.value for h in statements}) != 1:
            skipped["stated with several values already"] += 1
            continue
        first = min(prose, key=lambda h: _position(h.location))
        new_value = formatted(changed_value(first.value))
        value_spans = _value_spans(clean, first)
        if not value_spans:
            skipped["value not found verbatim in the source"] += 1
            continue
        # "λ = γ = 1e-4": changing the value changes both settings.
        co_changed = {
            h.normalized_name for h in clean.spec.hyperparameters
            if h.normalized_name != name and any(_inside(a, clean.source.span(h.location)) for a, _ in value_spans)
        }  # fmt: skip
        variants: list[tuple[str, list[Edit], str]] = []
        second = [h for h in statements if h.text != first.text and (h.source == "table" or h.section_id == first.section_id)]
        if second:
            edits = [Edit(a, b, new_value) for a, b in value_spans]
            variants.append(("corrupt-in-place", edits, f"also stated at {second[0].location.short()}"))
        else:
            sentence = clean.sentence_at(first.location)
            if sentence is None or sentence.paragraph.kind != "text":
                skipped["stated only in a caption, footnote or item"] += 1
                continue
            s_start, s_end = clean.source.span(sentence.location())
            _, paragraph_end = clean.source.span(sentence.paragraph.location)
            copy = text[s_start:s_end]
            for a, b in reversed(value_spans):
                copy = copy[: a - s_start] + new_value + copy[b - s_start :]
            if is_balanced(copy) and "\\label" not in copy:
                variants.append(("restate-copy", [Edit(paragraph_end, paragraph_end, f"\n\n{copy}\n\n")], "sentence copied"))
            else:
                skipped["restate-copy: stating sentence cannot be copied cleanly"] += 1
            short = _short_restatement(first, new_value)
            if short:
                variants.append(("restate-short", [Edit(paragraph_end, paragraph_end, f"\n\n{short}\n\n")], short))
            else:
                skipped["restate-short: a count or a name not writable as a sentence"] += 1
        defects += [
            Defect(
                paper=clean.name,
                type=kind,
                target=name,
                expected_kind="conflicting-values",
                expected_category=CONFLICT_CATEGORY,
                edits=edits,
                co_removed=co_changed,
                note=f"{formatted(first.value)} → {new_value}; {how}",
            )
            for kind, edits, how in variants
        ]
    return defects, skipped


def ambiguity_insertions(clean: CleanReading, workdir: Path) -> tuple[list[Defect], Counter]:
    """SYNTHETIC: each fixed vague sentence appended to the paragraph of the first stated value."""
    appendix = {s.id for s in clean.spec.sections if s.appendix}
    stated = sorted((h for h in clean.spec.hyperparameters if h.source == "text" and h.section_id not in appendix), key=lambda h: _position(h.location))
    host = next((s.paragraph for h in stated if (s := clean.sentence_at(h.location)) and s.paragraph.kind == "text"), None)
    if host is None:
        host = next((p for p in clean.spec.paragraphs if p.kind == "text" and p.section_id not in appendix and len(p.text) > 200), None)
    if host is None:
        return [], Counter({"no host paragraph": 1})
    _, end = clean.source.span(host.location)
    return [
        Defect(
            paper=clean.name,
            type="insert-ambiguity",
            target=sentence,
            expected_kind="ambiguous-wording",
            expected_category=category,
            edits=[Edit(end, end, " " + sentence)],
        )
        for sentence, category in AMBIGUOUS_SENTENCES
    ], Counter()


# -- running a defect -------------------------------------------------------------------------------


def gap_key(gap: Gap) -> str:
    """What makes a gap the same before and after an edit (ambiguous-wording ids carry a counter)."""
    return f"{gap.kind}|{gap.title}" if gap.kind == "ambiguous-wording" else gap.id


def gap_symbol(gap: Gap) -> str | None:
    return gap.id.split(":", 1)[1] if gap.kind in ("undefined-symbol", "unstated-value") else None


def _section_at(spec: PaperSpec, location: Location) -> str | None:
    before = [s for s in spec.sections if _position(s.location) <= _position(location)]
    return max(before, key=lambda s: _position(s.location)).id if before else None


def _expected(defect: Defect, gap: Gap) -> bool:
    if gap.kind != defect.expected_kind:
        return False
    if defect.type == "remove-definition":
        return gap_symbol(gap) == defect.target
    if defect.type == "insert-ambiguity":
        return True  # which sentence is settled by location
    return gap.setting == defect.target


def run_defect(defect: Defect, clean: CleanReading, workdir: Path) -> dict:
    text, spans = (defect.modified_text, []) if defect.modified_text is not None else apply_edits(clean.source.text, defect.edits)
    modified_source = SourceText(text)
    path = workdir / clean.path.name
    path.write_text(text, encoding="utf-8")
    record = {
        "paper": defect.paper, "type": defect.type, "target": defect.target, "expected_kind": defect.expected_kind,
        "expected_category": defect.expected_category, "note": defect.note, "co_removed": sorted(defect.co_removed),
    }  # fmt: skip
    try:
        spec = read_paper(path, use_cache=False)
    except PaperError as error:
        return record | {"status": "unreadable", "error": str(error), "reported": False, "localised": False, "anchor": None}
    report = assess(spec)
    regions = [
        Location(file=clean.path.name, line=a_line, column=a_col, end_line=b_line, end_column=b_col)
        for a, b in spans
        for (a_line, a_col), (b_line, b_col) in [(modified_source.position(a), modified_source.position(b))]
    ]
    clean_keys = {gap_key(g) for g in clean.report.gaps}
    new = [g for g in report.gaps if gap_key(g) not in clean_keys]
    candidates = [g for g in new if _expected(defect, g)]
    if defect.type == "insert-ambiguity":
        candidates = [g for g in candidates if overlaps(g.evidence[0].location, regions[0])]
    right_category = [g for g in candidates if g.category == defect.expected_category]
    hit = right_category[0] if right_category else None

    localised = False
    if hit is not None:
        primary = hit.evidence[0].location
        if defect.type in ("remove-stated-value", "remove-table-row"):
            localised = _section_at(spec, primary) in defect.removed_sections
        elif defect.type == "remove-definition":
            localised = overlaps(primary, defect.expected_span)
        elif defect.expected_kind == "conflicting-values":
            localised = any(overlaps(e.location, region) for e in hit.evidence for region in regions)
        else:
            localised = True  # insert-ambiguity candidates are located at the insertion already

    anchor = None
    if defect.asked_in_clean is not None:
        if any(status.setting == defect.target for status in report.settings):
            anchor = "kept in the modified paper"
        else:
            anchor = "cut with the value" if defect.asked_in_clean else "none, even in the clean paper"

    def explained(gap: Gap) -> bool:
        return gap.setting in defect.co_removed or gap_symbol(gap) in defect.co_removed

    collateral = [g for g in new if g is not hit and not explained(g)]
    return record | {
        "status": "read",
        "anchor": anchor,
        "reported": hit is not None,
        "localised": localised,
        "right_kind_other_category": bool(candidates) and hit is None,
        "gap": _gap_summary(hit) if hit else None,
        "evidence_section": _section_at(spec, hit.evidence[0].location) if hit else None,
        "removed_sections": sorted(s or "-" for s in defect.removed_sections),
        "expected_span": defect.expected_span.short() if defect.expected_span else None,
        "regions": [r.short() for r in regions],
        "collateral": [_gap_summary(g) for g in collateral],
        "explained_new": len(new) - len(collateral) - (hit is not None),
        "miss_reason": None if hit else miss_reason(defect, spec, report, clean.report),
    }


def _gap_summary(gap: Gap) -> dict:
    return {"id": gap.id, "category": gap.category, "blocking": gap.blocking, "title": gap.title, "at": gap.evidence[0].location.short()}


def _left_of_equals(latex: str, symbol: str) -> bool:
    left = re.split(r"(?<![<>!])=|:=|\\triangleq|\\coloneqq|\\equiv|\\sim\b", latex, maxsplit=1)[0]
    return len(left) < len(latex) and symbol in left


def miss_reason(defect: Defect, spec: PaperSpec, report: ReadinessReport, clean_report: ReadinessReport) -> str:
    """A coarse diagnosis of a miss, from the modified reading (not from the finder's code)."""
    if defect.type in ("remove-stated-value", "remove-table-row"):
        status = next((s for s in report.settings if s.setting == defect.target), None)
        if status is None:
            return "setting not asked for: no used component or training sentence asks for it"
        if status.stated:
            return f"still counted as stated: {status.evidence[0].quote[:90]!r}" if status.evidence else "still counted as stated"
        return "asked for and unstated, yet not reported"
    if defect.type == "remove-definition":
        info = next((s for s in spec.symbols if s.symbol == defect.target), None)
        if info is None:
            return "symbol no longer read in the equations"
        if info.definition is not None:
            return "another sentence read as its definition"
        base = defect.target[:1]
        if base in NOT_A_SETTING:
            return "letter of a learned parameter/operator (θ, φ, σ, μ, ...): never reported"
        if info.latex and any(_left_of_equals(e.latex or "", info.latex) for e in spec.equations if e.id in info.equations):
            return "an equation has it left of '=' or '\\sim' (taken as defined by the formula)"
        prose = " ".join(p.text for p in spec.paragraphs)
        if base in prose or any(f"\\{name}" in prose for name, letter in GREEK.items() if letter == base):
            return "its letter still appears elsewhere in prose (e.g. with another subscript)"
        return "other"
    if defect.expected_kind == "conflicting-values":
        values = {h.value for h in spec.hyperparameters if h.normalized_name == defect.target}
        if len(values) < 2:
            return "changed value not read as a statement of the setting"
        if len(values) > 2:
            return "more than two values read (taken as per-experiment variants)"
        return "two values read, not judged comparable (context/section/paragraph rules)"
    asked_before = [
        quoted.group(1) for g in clean_report.gaps
        if g.kind == "ambiguous-wording" and (quoted := re.match(r'"([^"]+)"', g.title)) and quoted.group(1).lower() in defect.target.lower()
    ]  # fmt: skip
    if asked_before:
        return f"the same words ({asked_before[0]!r}) are already asked about elsewhere (one question per wording)"
    return "wording not matched by any ambiguities.yaml pattern"


# -- (a) report -------------------------------------------------------------------------------------


def rate(part: int, whole: int) -> str:
    return f"{part / whole:6.1%}" if whole else "     -"


def print_recall_table(records: list[dict], key: str, title: str, width: int = 34) -> None:
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        groups[r[key]].append(r)
    print(f"  {title:{width}s} {'n':>4s} {'reported':>9s} {'localised':>10s} {'kind ok, cat. off':>18s} {'collateral/defect':>18s}")
    for name, group in sorted(groups.items()) + [("overall", records)]:
        n = len(group)
        reported = sum(r["reported"] for r in group)
        localised = sum(r["localised"] for r in group)
        off = sum(r.get("right_kind_other_category", False) for r in group)
        collateral = sum(len(r.get("collateral", [])) for r in group) / n if n else 0
        print(f"  {name:{width}s} {n:4d} {rate(reported, n):>9s} {rate(localised, n):>10s} {off:18d} {collateral:18.2f}")


def read_clean(path: Path) -> CleanReading:
    spec = read_paper(path, use_cache=False)
    sentences = [s for p in spec.paragraphs for s in sentences_of(p)]
    used = used_components(Reading.of(spec))
    return CleanReading(path.parent.name, path, SourceText(path.read_text(encoding="utf-8")), spec, assess(spec), sentences, used)


def injection(papers: list[Path], show_clean: bool) -> dict:
    print("(a) Controlled injection into the LaTeX papers (one defect per modified copy)")
    records: list[dict] = []
    noise_rows = []
    skipped_all: Counter = Counter()
    with tempfile.TemporaryDirectory(prefix="paperlens-readiness-") as tmp:
        for path in papers:
            clean = read_clean(path)
            workdir = Path(tmp) / clean.name
            workdir.mkdir()
            prose_chars = sum(len(p.text) for p in clean.spec.paragraphs)
            pages = prose_chars / CHARS_PER_PAGE
            blocking = sum(g.blocking for g in clean.report.gaps)
            noise_rows.append((clean.name, pages, blocking, len(clean.report.gaps) - blocking, clean.report.verdict, clean.report.gaps))
            for build in (value_removals, definition_removals, value_corruptions, ambiguity_insertions):
                defects, skipped = build(clean, workdir)
                skipped_all.update({f"{build.__name__}: {reason}": count for reason, count in skipped.items()})
                records += [run_defect(defect, clean, workdir) for defect in defects]

    print(f"\n  Noise: gaps of the clean papers (a page = {CHARS_PER_PAGE} characters of prose as read)")
    print(f"  {'paper':30s} {'pages':>6s} {'blocking':>9s} {'routine':>8s} {'total':>6s} {'per page':>9s} {'blocking/p':>11s}  verdict")
    for name, pages, blocking, routine, verdict, _ in noise_rows:
        total = blocking + routine
        print(f"  {name:30s} {pages:6.1f} {blocking:9d} {routine:8d} {total:6d} {total / pages:9.2f} {blocking / pages:11.2f}  {verdict}")
    pages = sum(r[1] for r in noise_rows)
    blocking = sum(r[2] for r in noise_rows)
    routine = sum(r[3] for r in noise_rows)
    print(f"  {'all':30s} {pages:6.1f} {blocking:9d} {routine:8d} {blocking + routine:6d} {(blocking + routine) / pages:9.2f} {blocking / pages:11.2f}")
    if show_clean:
        print("\n  Clean gaps (rank, B = blocking / r = routine, title, primary location 1-based):")
        for name, *_, gaps in noise_rows:
            for g in gaps:
                print(f"    {name:28s} {g.rank:2d} {'B' if g.blocking else 'r'} {g.title[:70]:70s} {g.evidence[0].location.short()}")

    read = [r for r in records if r["status"] == "read"]
    print(f"\n  Defects: {len(records)} made, {len(records) - len(read)} unreadable after the edit (left out below)")
    real = [r for r in read if r["type"] != "insert-ambiguity"]
    synthetic = [r for r in read if r["type"] == "insert-ambiguity"]
    print("\n  Recall by defect type (real papers, real statements removed or changed):")
    print_recall_table(real, "type", "defect type")
    removals = [r for r in real if r["anchor"] is not None]
    print("\n  remove-stated-value and remove-table-row by what asks for the setting (a used component, or training):")
    print_recall_table(removals, "anchor", "anchor of the setting")
    print("\n  Recall by expected Level-2 category (all real defects):")
    print_recall_table(real, "expected_category", "category")
    print("\n  SYNTHETIC insert-ambiguity, by inserted sentence:")
    print_recall_table(synthetic, "target", "sentence", width=68)

    print("\n  Misses by reason:")
    reasons = Counter((r["type"], _reason_class(r["miss_reason"])) for r in read if not r["reported"])
    for (kind, reason), count in sorted(reasons.items()):
        print(f"    {kind:20s} {count:4d}  {reason}")
    removal_elsewhere = [r for r in real if r["reported"] and not r["localised"] and r["type"].startswith("remove-stated")]
    if removal_elsewhere:
        print(f"\n  remove-stated-value reported, but its evidence (the component's first usage or the first training"
              f" sentence) outside the sections the value was cut from: {len(removal_elsewhere)}")  # fmt: skip
        for r in removal_elsewhere:
            print(f"    {r['paper']:28s} {r['target']:16s} cut from {', '.join(r['removed_sections']):24s} evidence in {r['evidence_section']} ({r['gap']['at']})")
    if skipped_all:
        print("\n  Candidates left out by the rules (no defect made):")
        for reason, count in sorted(skipped_all.items()):
            print(f"    {count:4d}  {reason}")
    return {"defects": records, "noise": [{"paper": n, "pages": p, "blocking": b, "routine": r, "verdict": v} for n, p, b, r, v, _ in noise_rows]}


def _reason_class(reason: str | None) -> str:
    return "still counted as stated" if reason and reason.startswith("still counted as stated") else str(reason)


# -- (b) SciReplicate -------------------------------------------------------------------------------

STOPWORDS = frozenset(
    """about above after again against also although among another any anything are aren around because been
    before being below between both but can cannot could did does doing done down during each either else
    even every explicit explicitly few for from further given gives had has have having here how however
    into its itself just least less like made make makes many may might more most much must name names
    neither never none nor not now only other others otherwise our out over own per rather same should
    since some such than that the their them then there these they this those though through thus too
    under until upon used uses using very was were what when where whether which while who whom whose why
    will with within without would yet your""".split()
)  # fmt: skip
# Boilerplate of the annotations ("the LaTeX does not specify ... the reference code uses") and of
# the gap templates ("... not stated", "What ... did you use? The paper names it ... gives no value").
BOILERPLATE = frozenset(
    """latex code python reference implementation implemented implements implement function functions
    detail details described describe describes description mention mentions mentioned specify specifies
    specified specification specifically state states stated statement clearly clear paper text snippet
    provided provide provides defined define defines definition value values setting settings anywhere
    question ambiguous which wording implementer stuck answer equation equations""".split()
)  # fmt: skip
WORD = re.compile(r"[A-Za-z]{4,}")


def stems(text: str) -> set[str]:
    return {w.lower()[:6] for w in WORD.findall(text) if w.lower() not in STOPWORDS and w.lower() not in BOILERPLATE}


def named_settings(text: str) -> set[str]:
    """Normalised hyperparameter names the text names (the reader's own vocabulary)."""
    vocabulary = hyperparameter_vocabulary()
    return {m.value.entry.name for m in vocabulary.names.finditer(text)} | {m.value.name for m in vocabulary.table_names.finditer(text)}


def strict_match(gap: Gap, detail: str, detail_settings: set[str]) -> bool:
    """The detail names the gap's setting or its symbol."""
    if gap.setting:
        related = {gap.setting} | stating_names(requirements_by_setting().get(gap.setting, []))
        if related & detail_settings or gap.setting.replace("_", " ") in detail.lower():
            return True
    symbol = gap_symbol(gap)
    if symbol:
        base = symbol[:1]
        names = {n.lower() for n, letter in GREEK.items() if letter == base} | ({GREEK_NAMES[base]} if base in GREEK_NAMES else set())
        if base in detail or any(re.search(rf"\\{n}\b|\b{n}\b", detail, re.IGNORECASE) for n in names):
            return True
    return False


def topical_match(gap: Gap, detail: str, detail_settings: set[str]) -> bool:
    """Strict, or what the gap asks (title + question) shares ≥ 2 content stems with the detail."""
    return strict_match(gap, detail, detail_settings) or len(stems(f"{gap.title} {gap.question}") & stems(detail)) >= 2


def loose_match(gap: Gap, detail: str, detail_settings: set[str]) -> bool:
    """Topical, or ≥ 2 stems shared with the gap's evidence too (the quoted sentences of the paper)."""
    if topical_match(gap, detail, detail_settings):
        return True
    return len(stems(" ".join([gap.title, gap.question, *(e.quote for e in gap.evidence)])) & stems(detail)) >= 2


MATCH_RULES = {"strict": strict_match, "topical": topical_match, "loose": loose_match}


def clean_detail(detail: str) -> str:
    return " ".join(detail.strip().lstrip("-").split())


def assess_snippet(latex: str, workdir: Path) -> tuple[list[Gap], str | None]:
    body = latex if "\\begin{document}" in latex else f"\\documentclass{{article}}\n\\begin{{document}}\n{latex}\n\\end{{document}}\n"
    path = workdir / "main.tex"
    path.write_text(body, encoding="utf-8")
    try:
        return assess(read_paper(path, use_cache=False)).gaps, None
    except PaperError as error:
        return [], str(error)


def scireplicate(data_file: Path, limit: int | None) -> dict:
    print(f"\n(b) SciReplicate dev ({data_file.name}): annotated missing details of each method snippet vs reported gaps")
    papers = json.loads(data_file.read_text(encoding="utf-8"))[:limit]
    tasks = []
    with tempfile.TemporaryDirectory(prefix="paperlens-scirep-") as tmp:
        for paper in papers:
            for task in paper["task_details"]:
                gaps, error = assess_snippet(task["latex_code"], Path(tmp))
                details = [clean_detail(d) for d in task["Missing_Mismatched_details"]["Missing_details"]]
                tasks.append({"paper_id": paper["paper_id"], "task_id": task["task_id"], "gaps": gaps, "error": error, "details": details})

    def baseline_task(i: int) -> dict | None:
        """Chance: the next task, cyclically, of another paper that has gaps."""
        for step in range(1, len(tasks)):
            other = tasks[(i + step) % len(tasks)]
            if other["paper_id"] != tasks[i]["paper_id"] and other["gaps"]:
                return other
        return None

    paper_gaps: dict[int, list[Gap]] = defaultdict(list)
    for task in tasks:
        paper_gaps[task["paper_id"]] += task["gaps"]
    rows = []
    for i, task in enumerate(tasks):
        other = baseline_task(i)
        for detail in task["details"]:
            settings = named_settings(detail)
            row = {"paper_id": task["paper_id"], "task_id": task["task_id"], "detail": detail}
            for rule_name, rule in MATCH_RULES.items():
                row[rule_name] = [g.id for g in task["gaps"] if rule(g, detail, settings)]
                row[f"chance_{rule_name}"] = bool(other) and any(rule(g, detail, settings) for g in other["gaps"])
            row["strict_any_task_of_paper"] = [g.id for g in paper_gaps[task["paper_id"]] if strict_match(g, detail, settings)]
            row["categories"] = sorted({g.category for g in task["gaps"] if loose_match(g, detail, settings)})
            rows.append(row)

    n_gaps = [len(t["gaps"]) for t in tasks]
    dangling = sum(g.kind == "dangling-reference" for t in tasks for g in t["gaps"])
    print(f"  tasks {len(tasks)} ({sum(bool(t['error']) for t in tasks)} unreadable), annotated missing details {len(rows)}; "
          f"gaps per snippet: mean {sum(n_gaps) / max(1, len(tasks)):.2f}, max {max(n_gaps, default=0)}, "
          f"snippets with none {n_gaps.count(0)}; {dangling} of the gaps are dangling references (a snippet cites equations outside it)")  # fmt: skip
    print(f"  {'paper':46s} {'tasks':>5s} {'details':>7s} {'strict':>6s} {'topical':>7s} {'loose':>6s} {'strict, any task':>16s} {'gaps/snippet':>12s}")
    by_paper: dict[int, list[dict]] = defaultdict(list)
    for row in rows:
        by_paper[row["paper_id"]].append(row)

    def counts(group: list[dict]) -> str:
        return " ".join(f"{sum(bool(r[k]) for r in group):{w}d}" for k, w in (("strict", 6), ("topical", 7), ("loose", 6), ("strict_any_task_of_paper", 16)))

    for paper in papers:
        pid = paper["paper_id"]
        its_tasks = [t for t in tasks if t["paper_id"] == pid]
        gaps = sum(len(t["gaps"]) for t in its_tasks) / max(1, len(its_tasks))
        label = f"{pid} {paper['paper_details']['title'][:42]}"
        print(f"  {label:46s} {len(its_tasks):5d} {len(by_paper[pid]):7d} {counts(by_paper[pid])} {gaps:12.2f}")
    print(f"  {'overall':46s} {len(tasks):5d} {len(rows):7d} {counts(rows)} {sum(n_gaps) / max(1, len(tasks)):12.2f}")
    rates = ", ".join(f"{k} {rate(sum(bool(r[k]) for r in rows), len(rows)).strip()}" for k in [*MATCH_RULES, "strict_any_task_of_paper"])
    chance = ", ".join(f"{k} {rate(sum(r[f'chance_{k}'] for r in rows), len(rows)).strip()}" for k in MATCH_RULES)
    print(f"  rates: {rates}")
    print(f"  chance (same rule against the gaps of another paper's task): {chance}")
    print(f"  categories of the gaps matching a detail (loose): {dict(Counter(c for r in rows for c in r['categories'])) or 'none'}")
    print(f"  gap kinds over all snippets: {dict(Counter(g.kind for t in tasks for g in t['gaps']))}")

    gaps_of = {(t["paper_id"], t["task_id"]): t["gaps"] for t in tasks}

    def show(row: dict) -> None:
        titles = [g.title for g in gaps_of[(row["paper_id"], row["task_id"])]]
        matched = {k: row[k] for k in MATCH_RULES if row[k]}
        print(f"    [{row['paper_id']}/{row['task_id']}] {row['detail'][:160]}")
        print(f"        gaps: {titles[:3] or 'none'}{' ...' if len(titles) > 3 else ''}; matched: {matched or 'none'}")

    print("\n  Examples, matched by some rule:")
    for row in [r for r in rows if r["loose"] or r["strict_any_task_of_paper"]][:6]:
        show(row)
    print("  Examples, unmatched, from snippets with gaps:")
    for row in [r for r in rows if not r["loose"] and gaps_of[(r["paper_id"], r["task_id"])]][:4]:
        show(row)
    print("  Examples, unmatched, from snippets without gaps:")
    for row in [r for r in rows if not gaps_of[(r["paper_id"], r["task_id"])]][::25][:4]:
        show(row)
    return {"tasks": [t | {"gaps": [_gap_summary(g) for g in t["gaps"]]} for t in tasks], "details": rows}


# -- (c) a step's detail made vague in a real method description -------------------------------------

# The details papers write into a step's sentence, by kind, as the bench's own templates (not the
# finder's vocabulary): the detail, the vaguer words it is replaced with (the sentence stays a
# sentence, now ambiguous), words that say the same detail elsewhere (then no defect is made:
# nothing is left open), and the category of the gap the change should leave.
DETAIL_KINDS = {
    "aggregation": [
        # not a reported number ("by an average of 13.3%") nor a distribution's mean ("a mean of 1",
        # "used as the mean of a normal distribution")
        (re.compile(r"(?<!weighted\s)\b(?:the\s+)?(?:sum|average|mean|concatenation|element-?wise\s+(?:sum|addition|product))\s+of\b(?!\s*\$?-?\d)(?![^.;]{0,40}\b(?:distribution|gaussian)\b)", re.I), "the aggregate of"),
        (re.compile(r"\bby\s+(?:summing|averaging|concatenating|adding)\b", re.I), "by aggregating"),
        (re.compile(r"\b(?:summed|averaged|concatenated|added)\s+(?=(?:together|across|over|along)\b)", re.I), "aggregated "),
    ],
    "distance": [
        (re.compile(r"\b(?:cosine|euclidean|L2|L_2|inner[- ]product|dot[- ]product)\s+(similarity|similarities|distance|distances)\b", re.I), r"\1"),
    ],
    "weight": [
        (re.compile(r"\bweighted\s+by\s+[^,.;$]*", re.I), "weighted"),
        (re.compile(r"\b(weight\w*)\s+(?:by\s+a\s+factor\s+of|of|equal\s+to)\s+\$?\d[\d.]*\$?", re.I), r"\1"),
    ],
    # "mapping to a 64-dimensional latent space" → "mapping to a latent space"; "a model dimension
    # of 192" → "a model dimension"
    "dimension": [
        (re.compile(r"\b(an?)\s+\$?\d+\$?[- ]dimensional\s+", re.I), "a "),
        (re.compile(r"(?<![\w-])\$?\d+\$?[- ]dimensional\s+", re.I), ""),
        (re.compile(r"\b((?:model|hidden|feed-?forward|embedding|latent|token|output|input)\s+(?:dimension|dim|size|width)s?)\s+(?:of|is|=)\s+\$?\d+\$?", re.I), r"\1"),
    ],
    # "split into training and validation sets with a $8:1$ ratio", "with a ratio of 0.6/0.2/0.2",
    # "split ... (80%)"
    "split": [
        (re.compile(r"(\b(?:split|partition|divide)\w*\b[^.;%]{0,80}?)\s*,?\s*with\s+(?:an?\s+)?(?:ratio\s+of\s+)?\$?\d+(?:\.\d+)?\s*[:/]\s*\d+(?:\.\d+)?(?:\s*[:/]\s*\d+(?:\.\d+)?)*\$?(?:\s+ratio)?", re.I), r"\1"),
        (re.compile(r"(\b(?:split|partition|divide)\w*\b[^.;%]{0,60}?)\s*(?:\(\s*)?\$?\d+\s*\\?%[^.;]*", re.I), r"\1"),
    ],
    # "measured on 50K generated images" → "measured on generated images"
    "metric": [
        (re.compile(r"(\b(?:on|over|using|with|from)\s+)\$?\d+(?:\.\d+)?\s*[kK]\$?\s+((?:generated\s+|random\s+|real\s+)?(?:samples|images|examples|generations))\b"), r"\1\2"),
        (re.compile(r"(\b(?:on|over|using|with|from)\s+)\d{1,3},\d{3}\s+((?:generated\s+|random\s+|real\s+)?(?:samples|images|examples|generations))\b"), r"\1\2"),
    ],
}
DETAIL_ELSEWHERE = {
    "aggregation": re.compile(r"\b(?:sum|summ\w*|averag\w*|mean|concat\w*|addition|median|weighted)\b|\\sum|\\oplus|\\frac\{1\}", re.I),
    "distance": re.compile(r"\b(?:cosine|euclidean|L2|L_2|inner[- ]product|dot[- ]product)\b|\\ell_2|\\\|", re.I),
    "weight": re.compile(r"\bweight(?:s|ed)?\s+(?:by|of|=)|\\lambda|\\alpha", re.I),
    "dimension": re.compile(r"\d+\$?[- ]dimensional|\bd\d+\s*\$?\s*\\times|\b(?:dimension|dim|width|hidden\s+size|embedding\s+size)s?\s+(?:of|is|=)\s+\$?\d|\\mathbb\{R\}\^\{?\d", re.I),
    "split": re.compile(r"\d+\s*\\?%|\bratio\b|\bproportion|\d\s*:\s*\d|\d\s*/\s*\d", re.I),
    "metric": re.compile(r"\d+(?:\.\d+)?\s*[kK]\$?\s+(?:\w+\s+)?(?:samples|images|examples|generations)|\d{1,3},\d{3}\s+(?:\w+\s+)?(?:samples|images)|FID-\d", re.I),
}
# Words that make the sentence a step of the method, not a description ("shifting the mean of the GM").
DETAIL_STEP = {
    "aggregation": re.compile(r"\b(?:comput|obtain|combin|aggregat|tak|fus|merg|pool|construct|form|represent|defin|calculat|produc)\w*", re.I),
    "distance": re.compile(r"\b(?:comput|calculat|measur|find|assign|retriev|match|search)\w*", re.I),
    "weight": re.compile(r"\w"),
    "dimension": re.compile(r"\b(?:map|project|embed|encod|compress|reduc|use|consist|output|produc|represent)\w*", re.I),
    "split": re.compile(r"\w"),
    "metric": re.compile(r"\b(?:measur|comput|evaluat|calculat|report)\w*", re.I),
}
DETAIL_CATEGORY = {
    "aggregation": "Ambiguous Procedure",
    "distance": "Ambiguous Procedure",
    "weight": "Ambiguous Procedure",
    "dimension": "Missing Model Structure",
    "split": "Missing Data Specification",
    "metric": "Missing Evaluation Specification",
}
# A table or a figure reports results: a detail inside one is no step of the method to change.
FLOAT_RE = re.compile(r"\\begin\{((?:sub|wrap)?(?:table|figure|tabular)\*?)\}.*?(?:\\end\{\1\}|\Z)", re.S)
STEP_SENTENCE = re.compile(r"[^.]*?(?:\.(?=\s|$)|$)")


@dataclass
class Description:
    source: str  # "paper:line" or "scireplicate p/t"
    latex: str

    @property
    def paper(self) -> str:
        return self.source.split("/")[0].split(":")[0]


def method_descriptions(papers: list[Path], data_file: Path) -> list[Description]:
    """Real method descriptions of a paragraph or two: each SciReplicate task's snippet, and each
    method paragraph of the papers with the next one of its section (their LaTeX, display equations
    included)."""
    found = [
        Description(f"scireplicate {paper['paper_id']}/{task['task_id']}", task["latex_code"])
        for paper in json.loads(data_file.read_text(encoding="utf-8"))
        for task in paper["task_details"]
    ]
    for path in papers:
        spec = read_paper(path)
        reading = Reading.of(spec)
        method = {id(sentence.paragraph) for sentence in reading.sentences}
        lines = path.read_text(encoding="utf-8").splitlines()
        texts = [p for p in spec.paragraphs if p.kind == "text" and p.location.file == path.name]
        for paragraph, following, after in zip(texts, [*texts[1:], None], [*texts[2:], None, None]):
            if id(paragraph) not in method or paragraph.location.line is None:
                continue
            two = following is not None and following.section_id == paragraph.section_id
            closing = after if two else following
            end = closing.location.line if closing is not None and closing.location.line is not None else len(lines)
            found.append(Description(f"{path.parent.name}:{paragraph.location.line + 1}", "\n".join(lines[paragraph.location.line : end])))
    return found


def _sentence_around(text: str, start: int, end: int) -> tuple[int, int]:
    before = max(text.rfind(". ", 0, start), text.rfind("\n\n", 0, start))
    after = text.find(". ", end)
    return before + 1 if before >= 0 else 0, after + 1 if after >= 0 else len(text)


def step_removals(papers: list[Path], data_file: Path) -> dict:
    print(f"\n(c) A step's detail made vague in a real method description ({', '.join(DETAIL_KINDS)})")
    descriptions = method_descriptions(papers, data_file)
    records, intact_blocking, made = [], [], set()
    with tempfile.TemporaryDirectory(prefix="paperlens-steps-") as tmp:
        workdir = Path(tmp)
        for description in descriptions:
            gaps, error = assess_snippet(description.latex, workdir)
            if error:
                continue
            intact_blocking.append(sum(g.blocking for g in gaps))
            floats = [m.span() for m in FLOAT_RE.finditer(description.latex)]
            for kind, templates in DETAIL_KINDS.items():
                found = next((
                    (m, vaguer) for pattern, vaguer in templates for m in pattern.finditer(description.latex)
                    if not any(start <= m.start() < end for start, end in floats)
                ), None)  # fmt: skip
                if found is None:
                    continue
                match, vaguer = found
                replacement = match.expand(vaguer)
                cut = description.latex[: match.start()] + replacement + description.latex[match.end() :]
                if DETAIL_ELSEWHERE[kind].search(cut):
                    continue  # the description still says it: nothing left open
                category = DETAIL_CATEGORY[kind]
                sentence_start, sentence_end = _sentence_around(cut, match.start(), match.start() + len(replacement))
                if not DETAIL_STEP[kind].search(cut, sentence_start, sentence_end):
                    continue
                detail = (description.paper, re.split(r"\.\s|\n\s*\n", description.latex[match.start() : match.start() + 150])[0])
                if detail in made:
                    continue  # the same detail of the paper, reached from the paragraph before it
                made.add(detail)
                plain_sentences = [m.group() for m in STEP_SENTENCE.finditer(" ".join(cut.split())) if m.group().strip()]
                changed, error = assess_snippet(cut, workdir)
                if error:
                    continue
                header = 0 if "\\begin{document}" in cut else 2  # assess_snippet's preamble lines
                first_line = cut.count("\n", 0, sentence_start) + header
                last_line = cut.count("\n", 0, max(sentence_end, match.start() + len(replacement))) + header

                def at_sentence(gap: Gap) -> bool:
                    line = gap.evidence[0].location.line
                    return line is not None and first_line <= line <= last_line

                ranks = [g.rank for g in changed if at_sentence(g) and g.category == category]
                records.append({
                    "source": description.source, "kind": kind, "removed": " ".join(match.group().split()), "now": replacement,
                    "rank": min(ranks) if ranks else None, "sentences": max(1, len(plain_sentences)),
                    "gaps": [_gap_summary(g) for g in changed[:3]],
                })  # fmt: skip
    print(f"  descriptions {len(descriptions)}, details made vague {len(records)}")
    print(f"  {'kind':14s} {'changed':>7s} {'rank 1':>7s} {'rank <= 3':>9s} {'random rank 1':>13s} {'random rank <= 3':>16s}")
    for kind in [*DETAIL_KINDS, None]:
        group = [r for r in records if kind is None or r["kind"] == kind]
        if not group:
            print(f"  {kind or 'overall':14s} {0:7d}   (no real sentence of the descriptions states it in a form the bench can make vague)")
            continue
        first = sum(r["rank"] == 1 for r in group)
        top3 = sum(r["rank"] is not None and r["rank"] <= 3 for r in group)
        chance1 = sum(1 / r["sentences"] for r in group)
        chance3 = sum(min(1.0, 3 / r["sentences"]) for r in group)
        print(f"  {kind or 'overall':14s} {len(group):7d} {rate(first, len(group)):>7s} {rate(top3, len(group)):>9s} "
              f"{100 * chance1 / len(group):12.1f}% {100 * chance3 / len(group):15.1f}%")  # fmt: skip
    blocking = Counter(min(n, 3) for n in intact_blocking)
    print(f"  intact descriptions: {len(intact_blocking)}; blocking gaps per description: mean {sum(intact_blocking) / max(1, len(intact_blocking)):.2f}; "
          f"with 0 / 1 / 2 / 3+: {blocking[0]} / {blocking[1]} / {blocking[2]} / {blocking[3]}; target: at most one")  # fmt: skip
    for record in [r for r in records if r["rank"] != 1][:6]:
        print(f"    missed [{record['source']}] {record['kind']}: “{record['removed'][:50]}” → “{record['now']}”; first gaps: {[g['title'][:60] for g in record['gaps']] or 'none'}")
    return {"records": records, "intact_blocking": intact_blocking}


# -- main -------------------------------------------------------------------------------------------


def commit() -> str:
    """The commit, and whether the reading/readiness code differs from it (read-only git calls)."""
    def git(*args: str) -> str:
        out = subprocess.run(["git", "--no-optional-locks", *args], cwd=REPO, capture_output=True, text=True, check=False)
        return out.stdout.strip() if out.returncode == 0 else "?"
    dirty = git("status", "--porcelain", "--", "pipeline", "schemas")
    return git("rev-parse", "--short", "HEAD") + (f" + uncommitted changes under pipeline/ or schemas/ ({len(dirty.splitlines())} paths)" if dirty and dirty != "?" else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("PAPERLENS_SHARED_DATA", REPO.parent / "shared" / "data")))
    parser.add_argument("--limit", type=int, default=None, help="only the first N papers of (a) and of (b)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "readiness_eval.json")
    parser.add_argument("--show-clean-gaps", action="store_true", help="list every gap of the clean papers")
    args = parser.parse_args()
    os.environ["PAPERLENS_CACHE_DIR"] = tempfile.mkdtemp(prefix="paperlens-bench-")  # never touch the user's cache
    started = time.perf_counter()
    print(f"machine: {machine()}")
    print(f"commit: {commit()}")
    papers = sorted((args.data / "papers-latex").glob("*/paper2code_paper.tex"))[: args.limit]
    print(f"papers: {len(papers)} LaTeX papers from {args.data / 'papers-latex'}\n")
    results = {"commit": commit(), "injection": injection(papers, args.show_clean_gaps)}
    results["scireplicate"] = scireplicate(args.data / "scireplicate-dev.json", args.limit)
    results["step_removals"] = step_removals(papers, args.data / "scireplicate-dev.json")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1, ensure_ascii=False, default=_json_default), encoding="utf-8")
    print(f"\nper-defect records: {args.out}   ({time.perf_counter() - started:.0f} s)")
    return 0


def _json_default(value: object) -> object:
    if isinstance(value, set):
        return sorted(value)
    if isinstance(value, Iterable):
        return list(value)
    return asdict(value)


if __name__ == "__main__":
    sys.exit(main())

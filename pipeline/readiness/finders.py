"""The deterministic gap finders. Each takes the paper's reading and yields located gaps.

Precision first: a gap is a question sent to busy authors, so every finder stays silent when the
paper may well have answered (a value in the same sentence, a formula that settles the form, a
component only discussed as related work).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ...schemas import TYPE_OF_CATEGORY, Convention, Equation, Evidence, Gap, Hyperparameter, Location, PaperSpec, Paragraph, SettingStatus
from ..extract.components import find_mentions
from ..algebra import Unreadable, sympy_algebra
from ..extract.formula import defined_name, read_formula
from ..extract.hyperparameters import follows_condition, symbol_name
from ..extract.knowledge import hyperparameter_vocabulary, symbol_key
from ..extract.learnable import learnable_symbols, unshaped_matrices
from ..extract.mathtext import to_plain
from ..extract.parts import framing_sections, section_tops
from ..extract.sentences import Sentence, sentences_of
from ..extract.tables import cell_entry
from ..extract.symbols import parse_latex_math, symbol_definitions
from ..extract.values import VALUE_RE, evaluate
from .knowledge import FormulaConvention, Requirement, StepFrame, StepSlot, ambiguous_wordings, formula_conventions, metrics, requirements, step_frames

# Sections whose prose states no method: references, acknowledgements, checklists.
NON_METHOD_SECTION = re.compile(r"references|bibliography|acknowledg|checklist|broader impact|impact statement", re.I)
# A sentence in which the paper itself uses a component (not one it only discusses).
USAGE = re.compile(
    r"\b(?:we|our)\b[^.;]{0,100}?\b(?:use[sd]?|using|adopt(?:s|ed)?|employ(?:s|ed)?|appl(?:y|ies|ied)|train(?:s|ed)?|"
    r"optimi[sz]e[sd]?|fine-?tune[sd]?|set|choose|chose|replace[sd]?|add(?:s|ed)?|insert(?:s|ed)?)\b"
    r"|\b(?:is|are|was|were)\s+(?:trained|optimi[sz]ed|fine-?tuned|updated|learned|learnt)\b[^.;]{0,80}?\b(?:with|using|by)\b"
    r"|\b(?:is|are|was|were)\s+(?:set|fixed)\s+to\b"
    r"|\b(?:every|each|all)\s+(?:blocks?|layers?|models?|networks?|encoders?|decoders?)\s+uses?\b",
    re.I,
)
# A number right after a component's name is most likely its setting ("drop path with a
# probability of 0.1"), read or not: such a component is not reported as missing its value.
VALUE_AFTER_MENTION = re.compile(r"^[^.;]{0,40}?\d")
# Sections that discuss other work: a component named there is not one the paper uses.
TRAINING = re.compile(
    r"\bwe\s+(?:pre-?)?train|\bour\s+models?\s+(?:is|are)\s+trained|\bwe\s+(?:optimi[sz]e|fine-?tune)\b"
    r"|\b(?:models?|networks?)\s+(?:is|are|was|were)\s+trained\s+(?:for|with|using)\b"
    r"|\btraining\s+(?:details|setup|settings|hyper-?parameters)\b",
    re.I,
)
REQUIREMENT_KINDS = ("optimizer", "schedule", "regularizer", "normalization")
# Symbols that name learned parameters, operators or statistics rather than values to set.
NOT_A_SETTING = set("θΘφϕψΨπ∇∂ΣΠΔδμσωΩ")
LEARNED = re.compile(r"\b(?:learn(?:ed|able|t)|trainable|parameters? of|network|predicted|sampled|drawn|output|input|feature|embedding|noise|variable|index|matrix|vector|function)\b", re.I)
SETTING_WORDS = re.compile(r"\b(?:weigh(?:s|t|ts|ing)?|coefficient|temperature|margin|threshold|hyper-?parameter|constant|scal(?:e|es|ing)|rate|strength|balanc\w*|trade-?off|controls?)\b", re.I)
DEFINING_SIGN = re.compile(r"(?<![<>!])=|:=|\\triangleq|\\coloneqq|\\equiv|\\stackrel\{\\mathrm\{def\}\}\{=\}")
EQUATION_NUMBER = re.compile(r"(?:[A-Z]\.)?\d+(?:\.\d+)*[a-z]?")  # what an `Eq. (N)` can cite
EQUATION_REFERENCE = re.compile(r"\b(?:Eqs?\.|Eqn\.|Equations?)\s*~?\(?\s*(\?\?|[A-Z]?\.?\d+[a-z]?)\s*\)?")
ELSEWHERE = re.compile(r"^\s*(?:of|in|from)\s+(?:\[|[A-Z][a-z]+\s+et\s+al)")


@dataclass(slots=True)
class Reading:
    """What the finders share: the paper, its method sentences, and its stated values by name."""

    spec: PaperSpec
    sentences: list[Sentence]  # the method's
    stated: dict[str, list[Hyperparameter]]
    framing_sentences: list[Sentence]  # the introduction's, background's, ...
    citing: dict[str, list[Sentence]] = field(default_factory=dict)  # a citation key → the method's sentences citing it
    top_sections: dict[str, str | None] = field(default_factory=dict)  # a section → its level-1 section
    nouns_given_numbers: frozenset[str] = frozenset()  # "a mixing rate of 0.1" → "rate", "mixing rate" (lowercased)

    @classmethod
    def of(cls, spec: PaperSpec) -> Reading:
        skipped = {s.id for s in spec.sections if NON_METHOD_SECTION.search(s.title)}
        # The framing (introduction, background, ...) describes others' work: its wording is no gap,
        # but what it defines (the notation the method then uses) is defined.
        framing = framing_sections(spec)
        sentences, framing_sentences = [], []
        for paragraph in spec.paragraphs:
            if paragraph.section_id not in skipped:
                (framing_sentences if paragraph.section_id in framing else sentences).extend(sentences_of(paragraph))
        stated: dict[str, list[Hyperparameter]] = {}
        for hyperparameter in spec.hyperparameters:
            stated.setdefault(hyperparameter.normalized_name, []).append(hyperparameter)
        citing: dict[str, list[Sentence]] = {}
        for sentence in sentences:
            for key in _cited(sentence.plain.text):
                citing.setdefault(key, []).append(sentence)
        # The method's own values only: "prior work uses a margin of 1" in the introduction is another paper's.
        nouns = frozenset(
            name.lower()
            for sentence in sentences
            for m in _NOUN_GIVEN_A_NUMBER_RE.finditer(sentence.plain.text)
            for name in (m["head"], f"{m['modifier']} {m['head']}" if m["modifier"] else m["head"])
        )
        return cls(spec, sentences, stated, framing_sentences, citing, section_tops(spec), nouns)


def _gap(**fields) -> Gap:
    return Gap(type=TYPE_OF_CATEGORY[fields["category"]], **fields)


def located_within(inner: Location, outer: Location) -> bool:
    """Whether `inner` lies in `outer` (same file; by line and column, or for a PDF by page and box)."""
    if inner.file != outer.file:
        return False
    if inner.page is not None or outer.page is not None:
        if inner.page != outer.page:
            return False
        if inner.bbox is None or outer.bbox is None:
            return True
        (x0, y0, x1, y1), (left, top, right, bottom) = inner.bbox, outer.bbox
        return left <= x0 and top <= y0 and x1 <= right and y1 <= bottom
    if inner.line is None or outer.line is None:
        return False
    start, end = (inner.line, inner.column or 0), (inner.end_line or inner.line, inner.end_column or 0)
    return (outer.line, outer.column or 0) <= start and end <= (outer.end_line or outer.line, outer.end_column or 0)


def _sentence_evidence(sentence: Sentence, start: int | None = None, end: int | None = None) -> Evidence:
    return Evidence(quote=" ".join(sentence.text.split()), location=sentence.location(start, end))


# -- ambiguous wording ------------------------------------------------------------------------------


# A sentence that points to the paper's own place for the details: "similar to that in § 3.2".
_POINTS_INTO_PAPER = re.compile(
    r"§\s*[A-Z\d]|\b(?:Section|Sec\.|Appendix|App\.|Eqs?\.|Equations?|Table|Tab\.|Algorithm|Alg\.)\s*~?\(?[A-Z]?\d"
)
# Values that, stated in the sentence of a "standard practice", say which practice it is.
_PROTOCOL_SETTINGS = frozenset({"image_resolution", "num_runs", "sequence_length", "epochs", "training_steps", "batch_size"})
# A pointer to a section of the paper: "described in Section 3", "see § 4.2".
_SECTION_POINTER = re.compile(r"(?:§\s*|\b(?:Section|Sec\.)\s*~?)([A-Z]?\d+(?:\.\d+)*)\b")
_CITED_RIGHT_AFTER = re.compile(r"\s*(?:of\s+|in\s+|from\s+)?\[[^\]]+\]")
# A paragraph that lists this many stated values spells out what "we follow [X]" takes over.
_DETAILS_LISTED = 3


def _details_given(reading: Reading, sentence: Sentence, wording: str) -> bool:
    """Whether the paper gives what a comparison or a practice or reference followed leaves open: the
    sentence points to a section, equation, table or appendix of the paper, or introduces what
    follows (a formula or a list, after a colon); or the sentence names the protocol's values
    ("following the common practice, we experiment on ImageNet at 256×256"); or, for a reference
    followed, its paragraph states the settings one by one ("We follow [RCG]. Specifically, ..."),
    the paper comes back to what it takes from the same work, or a settings table gives it."""
    if wording not in ("follow-reference", "standard-setting", "similar-to"):
        return False  # "normalize the features (Eq. 2)": the formula fixes the form, not what it applies to
    plain = sentence.plain.text
    if _POINTS_INTO_PAPER.search(plain) or plain.rstrip().endswith(":"):
        return True
    stated = [h for h in reading.spec.hyperparameters if h.source == "text"]
    if any(h.text == sentence.text and h.normalized_name in _PROTOCOL_SETTINGS for h in stated):
        return True
    return wording == "follow-reference" and (
        sum(1 for h in stated if h.text in sentence.paragraph.text) >= _DETAILS_LISTED
        or _followed_again(reading, sentence)
        or _set_out_in_a_table(reading, plain)
    )


_WORD_RE = re.compile(r"[A-Za-z][\w-]*")
_NOT_A_TERM = frozenset(
    "the and with for from during using use used uses also our its their this that these those into onto over "
    "under each all both some such then than which while when where are was were been being has have had not "
    "following follow follows followed same similar standard common usual practice setup setting settings".split()
)


@functools.lru_cache(maxsize=8192)  # a sentence is compared with every other citing the same work
def _terms(plain: str) -> frozenset[str]:
    """Two adjacent words, neither a function word, with each component named by its canonical name
    ("CFG schedule" → "guidance schedule"); citations left out."""
    text = re.sub(r"\[[^\]]*\]", " ", plain)
    for mention in sorted(find_mentions(text), key=lambda m: m.start, reverse=True):
        text = text[: mention.start] + mention.name + text[mention.end :]
    words = [w.lower() for w in _WORD_RE.findall(text)]
    return frozenset(f"{a} {b}" for a, b in itertools.pairwise(words) if len(a) > 2 and len(b) > 2 and not {a, b} & _NOT_A_TERM)


def _followed_again(reading: Reading, sentence: Sentence) -> bool:
    """Whether the paper comes back, outside the sentence's paragraph, to what it takes from the same
    reference: a sentence citing one of its works that names the same thing ("we use a CFG schedule
    following [mar,muse]" and, in the appendix, "the same linear classifier-free guidance schedule as
    MAR [mar] and MUSE [muse]. The schedule tunes down ...")."""
    terms = _terms(sentence.plain.text)
    if not terms:
        return False
    others = {id(other): other for key in _cited(sentence.plain.text) for other in reading.citing.get(key, [])[:_CITING_READ]}
    return any(other.paragraph is not sentence.paragraph and terms & _terms(other.plain.text) for other in others.values())


_CITING_READ = 100  # a work cited a hundred times is cited, not followed: its first citations are enough


def _cited(plain: str) -> set[str]:
    """The citation keys of a sentence's `[key1,key2]`."""
    return {key.strip() for group in re.findall(r"\[([^\]]+)\]", plain) for key in group.split(",")}


_SETTINGS_TABLE_RE = re.compile(r"hyper-?parameter|setting|configuration|training\s+details|implementation\s+details", re.I)


def _set_out_in_a_table(reading: Reading, plain: str) -> bool:
    """Whether a table of settings gives values for what the sentence names ("we also use a replay
    buffer of agents, following [loqa]" beside "IPD Hyperparameters: Agent Replay Buffer Capacity |
    10000"): one of its terms in a row's first cell, a number in another. A results table's row
    ("Diffusion model | 3.2") gives no setting."""
    terms = _terms(plain)
    if not terms:
        return False
    for table in reading.spec.tables:
        if not _SETTINGS_TABLE_RE.search(" ".join([table.caption, *(table.rows[0] if table.rows else [])])):
            continue
        for label, *cells in (row for row in table.rows if row):
            label = " ".join(label.lower().split())
            if any(term in label for term in terms) and any(re.search(r"\d", cell) for cell in cells):
                return True
    return False


def ambiguous_wording(reading: Reading) -> Iterator[Gap]:
    seen: set[tuple[str, str]] = set()
    for sentence in reading.sentences:
        plain = sentence.plain.text
        for wording in ambiguous_wordings():
            match = wording.pattern.search(plain)
            if match is None or (wording.unless is not None and wording.unless.search(plain)):
                continue
            if wording.context is not None and not wording.context.search(plain):
                continue
            if _details_given(reading, sentence, wording.id):
                break  # the paper says it: no question for this sentence
            if wording.id == "standard-setting" and _CITED_RIGHT_AFTER.match(plain, match.end()):
                break  # "following the standard practice [dit]": the citation says which one
            key = (wording.id, " ".join(match.group().lower().split()))
            if key in seen:  # the same words again add no new question
                continue
            seen.add(key)
            # A PDF set in text fonts has no `$...$`: there an `=` after the words is the formula.
            formula_spans = sentence.plain.math or [(match.end(), len(plain))]
            settled = wording.settled_by_formula and any("=" in plain[a:b] for a, b in formula_spans)
            words = " ".join(match.group().split())
            yield _gap(
                id=f"ambiguous-wording:{wording.id}:{len(seen)}",
                kind="ambiguous-wording",
                category=wording.category,
                title=wording.title.format(match=words),
                detail=(
                    "A formula in the same sentence fixes its form; what it applies to is still open."
                    if settled
                    else "The wording admits several implementations that give different results."
                ),
                blocking=wording.blocking and not settled,
                evidence=[_sentence_evidence(sentence, match.start(), match.end())],
                question=wording.question.format(match=words),
                readings=list(wording.readings),
                conventions=list(wording.conventions),
            )
            break  # one question per sentence: the most specific wording that matched


# -- steps ------------------------------------------------------------------------------------------


def open_steps(reading: Reading) -> Iterator[Gap]:
    """The method's steps (steps.yaml: "we combine ...", "we sample ...") that leave open what an
    implementer must know to write them: a slot no word of the sentence, its paragraph or the
    paragraph's equations fills. One question per sentence, at the step's words; none for a
    sentence that points to the paper's own place for its details or reports a result, nor for a
    sentence the method has said word for word before (its question is asked once)."""
    steps = StepContext.of(reading)
    asked = 0
    read: set[str] = set()
    for sentence in reading.sentences:
        plain = sentence.plain.text
        if (said_before := " ".join(plain.split())) in read:
            continue
        for frame in step_frames():
            match = frame.action.search(plain)
            if match is None:
                continue
            if not steps.may_be_a_step(sentence, frame, match.start()):
                break
            read.add(said_before)
            if frame.own_setting and steps.names_a_valued_symbol(sentence, _end_of_last(frame.restated, plain, match)):
                break  # "above the threshold $t$", and "$t = 0.2$" elsewhere: the value says it
            step_words = _step_words(plain, match)
            slot = steps.open_slot(sentence, frame, step_object(sentence, frame, step_words))
            if slot is not None:
                asked += 1
                yield step_gap(f"open-step:{frame.id}:{slot.id}:{asked}", frame, slot, _sentence_evidence(sentence, match.start(), match.end()), step_words)
            break  # one frame per sentence: the first whose words it has


@dataclass(slots=True)
class StepContext:
    """What closes a step's slot: the sentences of its paragraph that speak of it, the paragraph's
    display equations, and the method's sentences elsewhere that speak of the same step again."""

    reading: Reading
    paragraph_sentences: dict[int, list[Sentence]]  # by id(paragraph): its method sentences
    equations: dict[int, str]  # by id(paragraph): its display equations' LaTeX
    numbered: frozenset[str]  # the paper's section numbers, which a pointer can lead to
    said: dict[tuple[str, str], bool] = field(default_factory=dict)  # (a place, words) → whether it says them, read once
    # (paragraph, frame, thing acted on, words) → whether its sentences naming no experiment, and those
    # naming each experiment, say them: read once however many experiments the paragraph names
    said_per_experiment: dict[tuple[int, str, str | None, str], tuple[bool, dict[str, bool]]] = field(default_factory=dict)
    restatements: dict[tuple[str, str], list[tuple[Paragraph, str]]] = field(default_factory=dict)  # (frame, thing acted on) → sentences
    valued_symbols: set[str] | None = None  # the symbols the paper gives a value or defines, read at the first step naming one
    values_in_words: dict[str, list[tuple[str, int]]] | None = None  # a symbol as written → where a sentence gives it a value
    tables_read: list[list[str]] | None = None  # the tables' rows and columns as plain text

    @classmethod
    def of(cls, reading: Reading) -> StepContext:
        paragraph_sentences: dict[int, list[Sentence]] = {}
        for sentence in reading.sentences:
            paragraph_sentences.setdefault(id(sentence.paragraph), []).append(sentence)
        equations = {key: " ".join(e.latex or e.text for e in found) for key, found in _paragraph_equations(reading.spec).items()}
        return cls(reading, paragraph_sentences, equations, frozenset(s.number for s in reading.spec.sections if s.number))

    def may_be_a_step(self, sentence: Sentence, frame: StepFrame, start: int) -> bool:
        """Not a step (its words from `start`) the sentence supposes ("If we keep the samples above the threshold, the
        estimator is unbiased"; "If available, we combine ..." is one), nor a sentence that points
        to the paper's own place for its details (other than a section of the paper, which `is_open`
        reads) or reports a result; a comparison with a step's own setting is none ("its activation
        probability surpasses the threshold")."""
        if (supposed := _SUPPOSED.match(sentence.plain.text)) and start < supposed.end():
            return False
        text = _THRESHOLD_COMPARISON.sub(" ", sentence.plain.text) if frame.own_setting else sentence.plain.text
        plain = _SECTION_POINTER.sub(lambda m: "" if m.group(1) in self.numbered else m.group(), text)
        vocabulary = hyperparameter_vocabulary()
        return not (
            sentence.paragraph.kind != "text"
            or _POINTS_INTO_PAPER.search(plain)
            or vocabulary.result_words.search(plain)
            or vocabulary.measurement_words.search(plain)
        )

    def names_a_valued_symbol(self, sentence: Sentence, end: int) -> bool:
        """Whether the step's words are followed by a symbol ("above the threshold $t$", "(t)" in a
        PDF's text) the paper gives a value or defines by a formula: "$t = 0.2$", "$t$ is set to
        10%", "we set $t$ to 0.2", a table row "$t$ | 0.2", a display equation "t = μ + 2σ"."""
        plain = sentence.plain
        after = _SYMBOL_AFTER_RE.match(plain.text, end)
        span = plain.math_span(after.start(1)) if after is not None else None
        written = plain.text[span[0] : span[1]].strip() if span is not None else after[1] if after is not None else ""
        if not written:
            return False
        latex = sentence.text[slice(*plain.source_span(*span))].strip("$ ") if span is not None else written
        parsed = parse_latex_math(latex)
        symbol = parsed.symbols[0].symbol if parsed.only_symbol else written
        if self.valued_symbols is None:
            # and what a display equation defines ("t = \\mu_u + 2\\sigma_u" says how it is
            # computed), and a table row named by the symbol alone ("$t$ | 0.2", "$\\tau$ (confidence
            # threshold) | 0.95"; not "$\\tau = 0$ (no filtering)", an ablation)
            defined = {_defining_parts(e.latex)[0].strip() for e in self.reading.spec.equations if e.latex}
            rows = {
                parsed.symbols[0].symbol
                for table in self.reading.spec.tables
                for name, *cells in (row for row in table.rows[:_TABLE_ROWS_READ] if row)
                if (math := _NAMED_BY_MATH_RE.match(name)) and any(re.search(r"\d", cell) for cell in cells) and (parsed := parse_latex_math(math[1])).only_symbol
            }
            self.valued_symbols = _given_a_value(self.reading) | rows | (defined - {""})
        if {symbol, written, latex} & self.valued_symbols or symbol_key(symbol) in self.reading.spec.symbol_values:
            return True
        return self._given_in_words(written)

    def _given_in_words(self, written: str) -> bool:
        """Whether a sentence gives the symbol, as the text writes it, a value in words ("$t$ is set
        to 10%", "we set $t$ to 0.2", "t = 0.2" in a PDF's text), not in a case it supposes ("if $t$
        is set to 0"). The sentences are read once, for every symbol a step names."""
        if self.values_in_words is None:
            self.values_in_words = {}
            for s in itertools.islice((s for s in [*self.reading.sentences, *self.reading.framing_sentences] if _VALUE_IN_WORDS_HINT.search(s.plain.text)), _SENTENCES_WITH_VALUES_READ):
                for m in itertools.islice(_VALUE_IN_WORDS_RE.finditer(s.plain.text), _VALUES_IN_WORDS_READ):
                    self.values_in_words.setdefault(m["name"] or m["set"], []).append((s.plain.text, m.start()))
        return any(not follows_condition(text, at, symbol=False) for text, at in self.values_in_words.get(written, []))

    def said_in_paragraph(self, paragraph: Paragraph, frame: StepFrame, slot: StepSlot, head: str | None, experiments: frozenset[str]) -> bool:
        """Whether a sentence of the paragraph that speaks of the step (the frame's words for it, or
        what it acts on: `head`) or the paragraph's equations say the slot; for a step of named
        `experiments`, not a sentence for other experiments only. Read once per paragraph and step:
        a paragraph can repeat a step thousands of times, each for another experiment."""
        key = (f"paragraph {id(paragraph)} {frame.id} {head}", slot.filled.pattern)
        if key not in self.said:
            about = self._about_the_step(paragraph, frame, head)
            self.said[key] = bool(slot.filled.search(" ".join([*about, self.equations.get(id(paragraph), "")])))
        if not experiments or not self.said[key]:
            return self.said[key]
        per_key = (id(paragraph), frame.id, head, slot.filled.pattern)
        if per_key not in self.said_per_experiment:
            unnamed = bool(slot.filled.search(self.equations.get(id(paragraph), "")))
            by_experiment: dict[str, bool] = {}
            for text in self._about_the_step(paragraph, frame, head):
                says = bool(slot.filled.search(text))
                named = _experiments_spoken_of(text)
                unnamed = unnamed or (says and not named)
                for name in named:
                    by_experiment[name] = by_experiment.get(name, False) or says
            self.said_per_experiment[per_key] = (unnamed, by_experiment)
        unnamed, by_experiment = self.said_per_experiment[per_key]
        return unnamed or any(by_experiment.get(name, False) for name in experiments)

    def _about_the_step(self, paragraph: Paragraph, frame: StepFrame, head: str | None) -> list[str]:
        """The paragraph's sentences that speak of a step: the frame's words for it, or what it acts on."""
        return [
            other.plain.text
            for other in self.paragraph_sentences.get(id(paragraph), [])
            if frame.restated.search(other.plain.text) or (head and re.search(rf"\b{re.escape(head)}", other.plain.text, re.I))
        ]

    def said_where_pointed(self, sentence: Sentence, slot: StepSlot) -> bool:
        """Whether a section the sentence points to ("the corpora described in Section 3") says the
        slot, in its text or its equations: the step is said there, or not at all."""
        return any(self._said_in_section(m.group(1), slot) for m in _SECTION_POINTER.finditer(sentence.plain.text) if m.group(1) in self.numbered)

    def _said_in_section(self, number: str, slot: StepSlot) -> bool:
        key = (f"section {number}", slot.filled.pattern)
        if key not in self.said:
            spec = self.reading.spec
            ids = {s.id for s in spec.sections if s.number and (s.number == number or s.number.startswith(number + "."))}
            text = [" ".join(s.plain.text for s in sentences_of(p)) for p in spec.paragraphs if p.section_id in ids]
            text += [e.latex or e.text for e in spec.equations if e.section_id in ids]
            self.said[key] = bool(slot.filled.search(" ".join(text)))
        return self.said[key]

    def said_anywhere(self, frame: StepFrame) -> bool:
        """Whether a prose sentence of the method (or a footnote's) says what the frame's
        `said_anywhere` words say ("we discard words seen fewer than 5 times", far from "we count
        word frequencies")."""
        if frame.said_anywhere is None:
            return False
        key = ("method", frame.said_anywhere.pattern)
        if key not in self.said:
            self.said[key] = any(s.paragraph.kind in ("text", "footnote") and frame.said_anywhere.search(s.plain.text) for s in self.reading.sentences)
        return self.said[key]

    def said_by_name(self, frame: StepFrame) -> bool:
        """Whether a table row or column is named by the frame's `said_by_name` words and gives a
        number ("Conf. threshold | 0.95", a "Threshold" column), or a caption sentence names it with
        one ("The verifier threshold is set to 0.8")."""
        if frame.said_by_name is None:
            return False
        key = ("named", frame.said_by_name.pattern)
        if key not in self.said:
            named = re.compile(rf"(?<!\bno\s)(?<!\bw/o\s)(?<!\bwithout\s)\b(?:{frame.said_by_name.pattern})", re.I)
            self.said[key] = any(
                len(name) <= _ROW_NAME_CHARS and named.search(name) and any(re.search(r"\d", cell) for cell in cells) for name, *cells in self.table_lines()
            ) or any(
                s.paragraph.kind == "caption" and (m := frame.said_by_name.search(s.plain.text)) and re.search(r"\d", s.plain.text[m.end() : m.end() + 60])
                for s in self.reading.sentences
            )
        return self.said[key]

    def table_lines(self) -> list[list[str]]:
        """Every table's rows and columns as plain text (of its first rows: a settings table is
        short), read once."""
        if self.tables_read is None:
            self.tables_read = [
                [to_plain(cell).text.strip() for cell in line]
                for table in self.reading.spec.tables
                for line in _rows_and_columns(table.rows[:_TABLE_ROWS_READ])
                if line
            ]
        return self.tables_read

    def said_by_table(self, frame: StepFrame) -> bool:
        """Whether a table of the paper is headed by the frame's `said_by_table` words at least twice
        in one of its first two rows ("Dataset | Train | Validation | Test", under "#Samples") or
        its first column."""
        if frame.said_by_table is None:
            return False
        key = ("tables", frame.said_by_table.pattern)
        if key not in self.said:
            self.said[key] = any(
                sum(bool(frame.said_by_table.search(to_plain(cell).text.strip())) for cell in header) >= 2
                for table in self.reading.spec.tables
                for header in (*table.rows[:2], [row[0] for row in table.rows if row])
            )
        return self.said[key]

    def is_open(self, sentence: Sentence, frame: StepFrame, slot: StepSlot, acted_on: str) -> bool:
        """Open unless the step's sentence, a sentence of its paragraph that speaks of the step (its
        words for it, or what it acts on), the paragraph's equations, the section the sentence points
        to, a sentence of the method the frame lets say it anywhere, a table headed by the frame's
        words, or a restating sentence elsewhere says it: a `+` in another sentence's formula says
        nothing of this step, nor, for a step of one experiment ("For Diabetes, we split ..."), a
        sentence for other experiments. A step that introduces a formula (its sentence ends with a
        colon) is said by it."""
        equations = self.equations.get(id(sentence.paragraph), "")
        if equations and sentence.plain.text.rstrip().endswith(":"):
            return False  # "we aggregate them using the scores, which can be formulated as:" the formula says how
        experiments = _experiments_opened(sentence.plain.text) if frame.per_experiment else frozenset()
        if slot.filled.search(sentence.plain.text) or self.said_in_paragraph(sentence.paragraph, frame, slot, head_noun(acted_on), experiments):
            return False
        if self.said_where_pointed(sentence, slot) or self.said_anywhere(frame) or self.said_by_table(frame) or self.said_by_name(frame):
            return False
        return not any(slot.filled.search(s) for s in self.restating(sentence, frame, acted_on) if not _for_other_experiments(experiments, s))

    def restating(self, step: Sentence, frame: StepFrame, acted_on: str) -> list[str]:
        """The method's sentences outside the step's paragraph that speak of the same step again: they
        use the frame's words for it and name what it acts on (`acted_on`, "the two embeddings"): "the
        two embeddings are combined by concatenation", in the implementation details. Read once per
        frame and thing acted on: a paper can repeat a step thousands of times."""
        head = head_noun(acted_on)
        if head is None:
            return []
        key = (frame.id, head)
        if key not in self.restatements:
            self.restatements[key] = [
                (other.paragraph, other.plain.text)
                for other in self.reading.sentences
                if frame.restated.search(other.plain.text) and re.search(rf"\b{re.escape(head)}", other.plain.text, re.I)
            ]
        return [text for paragraph, text in self.restatements[key] if paragraph is not step.paragraph]

    def open_slot(self, sentence: Sentence, frame: StepFrame, acted_on: str) -> StepSlot | None:
        """The first of the frame's slots the paper leaves open for this step (`acted_on`: what the
        step's words say it acts on, "the two embeddings")."""
        return next((slot for slot in frame.slots if self.is_open(sentence, frame, slot, acted_on)), None)


# "For Diabetes, we split it ...", "For DCR, Diabetes and Heart, the split ...", "For Heart, as for
# Diabetes, ...": the experiments a sentence opens with, by their names (capitalised words: "For a
# fair comparison," or "For the image branch," name none).
_OPENING_SCOPE = re.compile(
    r"^\s*(?:For|On)\s+((?:[^,.;]|,\s*+(?:(?:and|or|as\s+(?:for|on|with))\s+)?(?=[A-Z])){1,80}?),\s++(?![A-Z]|(?:and|or|as\s+(?:for|on|with))\s+[A-Z])"
)
_NAME = re.compile(r"(?<![\w\\-])[A-Z][\w-]*")
# "For all datasets", "For Heart and the remaining datasets", "For datasets other than Diabetes":
# not these experiments only
_BEYOND_THE_NAMED = re.compile(r"\b(?:all|each|every|both|any|remaining|rest|other\s+than|except|excluding|apart\s+from|besides|but)\b", re.I)


@functools.lru_cache(maxsize=4096)
def _experiments_opened(plain: str) -> frozenset[str]:
    """The names of the experiments a sentence opens with ("For Diabetes (DB), ..." → diabetes, db;
    "For Adult, Diabetes, and Heart, ..." → adult, diabetes, heart)."""
    match = _OPENING_SCOPE.match(plain)
    if match is None or _BEYOND_THE_NAMED.search(match.group(1)):
        return frozenset()
    return _names(match.group(1))


def _experiments_spoken_of(plain: str) -> frozenset[str]:
    """The experiments a sentence that opens with named ones speaks of: those, and every name it
    gives later ("For Heart, as well as Diabetes, ..."); none when it opens with no name or speaks
    beyond the named ones anywhere ("..., the same as for all datasets")."""
    opened = _experiments_opened(plain)
    if not opened or _BEYOND_THE_NAMED.search(plain):
        return frozenset()
    return opened | _names(plain)


def _names(text: str) -> frozenset[str]:
    """Capitalised words as names, with their word parts ("MS-COCO" is "COCO" too)."""
    names = {name.lower() for name in _NAME.findall(text)}
    return frozenset(names | {part for name in names for part in name.split("-") if len(part) >= 3 and part.isalpha()})


def _for_other_experiments(experiments: frozenset[str], other: str) -> bool:
    """Whether a sentence speaks of other experiments than a step's only: it opens with named
    experiments and names none of the step's. "For DCR, we apply an equal split" says nothing of the
    split "For Diabetes"; "For the Diabetes dataset, ..." and "For Heart, like Diabetes, ..." do."""
    theirs = _experiments_spoken_of(other)
    return bool(experiments and theirs) and not experiments & theirs


def _end_of_last(words: re.Pattern[str], text: str, within: re.Match[str]) -> int:
    """Where the last of `words` ends in a match ("... below the threshold $t$ are dropped": after
    "threshold"), or the match's end."""
    ends = [found.end() for found in words.finditer(text, within.start(), within.end())]
    return ends[-1] if ends else within.end()


_TABLE_ROWS_READ = 200  # a settings table is short: a hostile one costs a bounded read
_TABLE_COLUMNS_READ = 50
_ROW_NAME_CHARS = 80  # a row's name, not a sentence in a cell


def _rows_and_columns(rows: list[list[str]]) -> Iterator[list[str]]:
    """A table's rows, then its columns ("Threshold | 0.95 | 0.9" under a header cell)."""
    yield from rows
    for i in range(min(max((len(row) for row in rows), default=0), _TABLE_COLUMNS_READ)):
        yield [row[i] for row in rows if i < len(row)]


def step_object(sentence: Sentence, frame: StepFrame, step_words: str) -> str:
    """What a step acts on ("the two embeddings"): the words after the frame's action in the
    sentence; the words before it when nothing follows ("the two features are then combined", "the
    corpus, split into training and validation sets"); else the step's words themselves. Nothing
    for a step whose slot is its own setting (a threshold's value): what it acts on says nothing of it."""
    if frame.own_setting:
        return ""
    plain = sentence.plain.text
    match = frame.action.search(plain)
    if match is None:
        return step_words
    after = _step_words(plain, match)[len(match.group()) :]
    if after.strip():
        return after
    return _CLAUSE_START_RE.split(plain[max(0, match.start() - _STEP_OBJECT_CHARS) : match.start()])[-1]


def head_noun(words: str) -> str | None:
    """The last word of four letters or more, singular ("the two embeddings" → "embedding"):
    either number of it speaks of the same thing."""
    nouns = re.findall(r"[A-Za-z]{4,}", words)
    return nouns[-1].lower().rstrip("s") if nouns else None


def step_gap(gap_id: str, frame: StepFrame, slot: StepSlot, evidence: Evidence, step_words: str, source: str = "rules") -> Gap:
    """The question a step's open slot asks, at the step's words. A model's reading alone never blocks."""
    words = " ".join(step_words.split())
    return _gap(
        id=gap_id,
        kind="open-step",
        category=frame.category,
        title=f'"{words}": {slot.label} is not said',
        detail="The step is described, but not enough to write it: implementations would differ here.",
        blocking=frame.blocking and source == "rules",
        evidence=[evidence],
        question=slot.question.format(match=words),
        readings=list(slot.readings),
        source=source,
    )


_CLAUSE_END_RE = re.compile(r"[,.;:(]|\s(?:and|by|with|to|into|as|which|that|where|before|after)\s")
_STEP_OBJECT_CHARS = 40  # "We then combine the two embeddings": the step and what it acts on
_CLAUSE_START_RE = re.compile(r"[.;:(]|\s(?:and|on|in|of|with|from|which|that|where|while)\s")


def _step_words(plain: str, match: re.Match[str]) -> str:
    """The step's words and what it acts on, up to the clause's end: "We then combine the two embeddings"."""
    end = _CLAUSE_END_RE.search(plain, match.end(), match.end() + _STEP_OBJECT_CHARS)
    stop = end.start() if end else plain.rfind(" ", match.end(), match.end() + _STEP_OBJECT_CHARS)
    return plain[match.start() : stop if stop > match.end() else match.end()]


def _paragraph_equations(spec: PaperSpec) -> dict[int, list[Equation]]:
    """Each paragraph's display equations: those standing between it and the next paragraph of its
    file, the formulas that spell out its steps."""
    found: dict[int, list[Equation]] = {}
    paragraphs = [p for p in spec.paragraphs if p.kind == "text"]
    for paragraph, following in zip(paragraphs, [*paragraphs[1:], None]):
        start = paragraph.location.line or 0
        end = following.location.line if following is not None and following.location.file == paragraph.location.file else None
        found[id(paragraph)] = [
            equation
            for equation in spec.equations
            if equation.location.file == paragraph.location.file
            and (equation.location.line or 0) >= start
            and (end is None or (equation.location.line or 0) <= end)
        ]
    return found


# -- evaluation protocols ---------------------------------------------------------------------------


def metric_protocols(reading: Reading) -> Iterator[Gap]:
    """Reported metrics whose number depends on a protocol the paper never states (metrics.yaml: FID
    without its number of samples or its reference statistics): one question per metric, at the
    first sentence of the method or experiments naming it. Silent when anything near the metric
    says it, when the paper follows a named setup for it, or when "standard practice" for it is
    asked already."""
    knowledge = metrics()
    standard = next(w for w in ambiguous_wordings() if w.id == "standard-setting").pattern
    asked: set[int] = set()  # one question per sentence: "FID, IS and CLIP-IQA" ask one protocol
    # What the abstract or the introduction says near a metric ("models reproduce training data")
    # is no protocol.
    framing = {id(s.paragraph) for s in reading.framing_sentences}
    framing |= {id(p) for p in reading.spec.paragraphs if p.section_id is None and reading.spec.sections}
    for metric in knowledge.metrics:
        first = next((s for s in reading.sentences if s.paragraph.kind == "text" and metric.names.search(s.plain.text)), None)
        if first is None or id(first) in asked:
            continue
        naming = [p for p in reading.spec.paragraphs if id(p) not in framing and metric.names.search(p.text)]
        if any(standard.search(s.plain.text) and metric.names.search(s.plain.text) for s in reading.sentences):
            continue
        # Near it: where the method or the experiments speak of it, or of evaluation in a section
        # naming it (another experiment's evaluation is not this metric's).
        sections = {reading.top_sections.get(p.section_id or "") for p in naming} - {None}
        near = [p.text for p in naming] + [
            p.text
            for p in reading.spec.paragraphs
            if id(p) not in framing and reading.top_sections.get(p.section_id or "") in sections and knowledge.near.search(p.text)
        ]
        if any(knowledge.followed.search(text) for text in near):
            continue  # "for evaluation, we follow the ADM setup [adm]"
        near += [
            " ".join([table.caption, *(cell for row in table.rows for cell in row)])
            for table in reading.spec.tables
            if metric.names.search(table.caption) or any(metric.names.search(cell) for row in table.rows for cell in row)
        ]
        slot = next((slot for slot in metric.slots if not any(slot.filled.search(text) for text in near)), None)
        if slot is None:
            continue
        asked.add(id(first))
        match = metric.names.search(first.plain.text)
        name = match.group()
        yield _gap(
            id=f"metric-protocol:{metric.id}:{slot.id}",
            kind="open-step",
            category="Missing Evaluation Specification",
            title=f"{name}: {slot.label} is not said",
            detail="The reported number depends on how it is computed; another protocol gives another number.",
            blocking=False,  # the method can be written without it; its numbers cannot be compared
            evidence=[_sentence_evidence(first, match.start(), match.end())],
            question=slot.question.format(name=name),
            readings=list(slot.readings),
        )


# Training data said by name: "we train on AFHQ-Dog", "models trained on C4" (its held-out part is that data's).
_TRAINED_ON_NAMED_DATA = re.compile(
    r"\b(?i:we\s+(?:also\s+|first\s+|then\s+)?(?:pre-?)?train|(?:is|are|was|were)\s+(?:pre-?)?trained|we\s+fine-?tune)\b"
    r"[^.;]{0,60}?\bon\s+(?:the\s+)?(?:[A-Z][a-z]+[A-Z]|[A-Z]{2,}|[A-Z][a-z]*\d|[A-Z][\w]*-[A-Z\d])"
)
# A name the sentence gives its data by: "LongBench", "C4", "WikiText"; a citation is one too.
_DATA_NAME = re.compile(r"\[[^\]]{1,200}\]|\b(?:[A-Z][a-z]+[A-Z]|[A-Z]{2,}\d|[A-Z][a-z]*\d)\w*")


def undefined_held_out_data(reading: Reading) -> Iterator[Gap]:
    """Numbers measured on "the validation set" of data that has none the reader knows of (metrics.yaml
    `held_out`): asked once, at the first such sentence, unless a sentence speaking of it names its
    data or stands in a paragraph naming a dataset, the paper trains or evaluates on a dataset with
    official splits or says what it trains on by name ("we train on AFHQ-Dog"), or it makes or sizes
    a split itself."""
    knowledge = metrics().held_out
    mentions = [(s, m) for s in reading.sentences for m in [knowledge.mentions.search(s.plain.text)] if m]
    if not mentions:
        return
    if any(knowledge.made.search(s.plain.text) or _TRAINED_ON_NAMED_DATA.search(s.plain.text) for s in reading.sentences):
        return
    framing = {id(s.paragraph) for s in reading.framing_sentences}
    datasets_of: dict[int, set[str]] = {}  # a paragraph → the datasets it names that have held-out splits
    for paragraph in reading.spec.paragraphs:
        if id(paragraph) not in framing:
            datasets_of[id(paragraph)] = {m.name for m in find_mentions(paragraph.text) if m.kind == "dataset"} - knowledge.without_official_splits
    if any(named - knowledge.evaluation_suites for named in datasets_of.values()):
        return  # a dataset the paper trains or evaluates on, with its official splits
    if any(_DATA_NAME.search(sentence.plain.text) or datasets_of.get(id(sentence.paragraph)) for sentence, _ in mentions):
        return  # once its data is said where the paper speaks of it, "the validation set" is that data
    measured = next(((s, m) for s, m in mentions if knowledge.measured.search(s.plain.text)), None)
    if measured is None:
        return  # "tuned on the validation set" asks which value came out, not which data
    sentence, match = measured
    phrase = match.group().split(None, 1)[1]  # "the validation set", without "on"
    yield _gap(
        id="held-out-data",
        kind="open-step",
        category="Missing Data Specification",
        title=f'"{phrase}": the data it holds is not said',
        detail="Numbers measured on held-out data compare only on the same data; the paper never says which it is.",
        blocking=False,  # the method can be written without it; its numbers cannot be compared
        evidence=[_sentence_evidence(sentence, match.start(), match.end())],
        question=knowledge.question.format(match=phrase),
        readings=list(knowledge.readings),
    )


# -- unstated settings ------------------------------------------------------------------------------


@dataclass(slots=True)
class _UsedComponent:
    name: str
    kind: str
    evidence: Evidence
    value_nearby: bool  # some mention of it has a number or a stated value next to it
    section_id: str | None = None  # where the evidence stands


def used_components(reading: Reading) -> list[_UsedComponent]:
    """Components the paper itself uses, each with the first sentence that shows it."""
    used: dict[str, _UsedComponent] = {}
    table_values = {str(h.value) for h in reading.spec.hyperparameters if h.source == "table" and isinstance(h.value, str)}
    discussion = framing_sections(reading.spec)
    stated_in = {h.text for h in reading.spec.hyperparameters}
    optimizers = {c.name for c in reading.spec.components if c.kind == "optimizer" and c.section_id not in discussion}
    for component in reading.spec.components:
        if component.section_id in discussion:
            continue
        if component.mention.lower() in ("stochastic gradient descent", "gradient descent") and len(optimizers) > 1:
            continue  # "each step of gradient descent" and "updated by Adam": the method, not the optimizer
        after = component.text.split(component.mention, 1)[-1]
        value_nearby = bool(component.attributes) or component.text in stated_in or bool(VALUE_AFTER_MENTION.search(after))
        if component.name in used:
            used[component.name].value_nearby |= value_nearby
            continue
        in_settings_table = component.name in table_values or component.mention in table_values
        if component.attributes or in_settings_table or USAGE.search(component.text):
            quote = " ".join(component.text.split())
            evidence = Evidence(quote=quote, location=component.location)
            used[component.name] = _UsedComponent(component.name, component.kind, evidence, value_nearby, component.section_id)
    return list(used.values())


def _first_number(text: str) -> float | None:
    match = VALUE_RE.search(text)
    return evaluate(match.group()) if match else None


def _status(reading: Reading, component: str, requirement: Requirement, used: list[_UsedComponent]) -> SettingStatus:
    found = [h for name in requirement.stated_by for h in reading.stated.get(name, [])]
    by_component = [u for u in used if u.kind in requirement.stated_by_components]
    by_text = []
    if requirement.stated_by_text is not None:
        # As for values, a measurement's numbers ("throughput with a batch size of 32") and a number out
        # of the setting's range ("a batch size of 1, unless otherwise specified" when timing the
        # model) state nothing of the training.
        vocabulary = hyperparameter_vocabulary()
        entry = vocabulary.entries.get(requirement.setting)
        by_text = [
            (s, m)
            for s in reading.sentences
            if (m := requirement.stated_by_text.search(s.plain.text))
            and not vocabulary.measurement_words.search(s.plain.text)
            and not (entry is not None and (number := _first_number(m.group())) is not None and not entry.accepts(number))
        ][:3]
    return SettingStatus(
        component=component,
        setting=requirement.setting,
        stated=bool(found or by_component or by_text),
        values=[h.value for h in found] + [u.name for u in by_component] + [" ".join(m.group().split()) for _, m in by_text],
        evidence=[Evidence(quote=h.text, location=h.location) for h in found]
        + [u.evidence for u in by_component]
        + [_sentence_evidence(s, m.start(), m.end()) for s, m in by_text],
    )


# A sentence that hands the paper's settings to another recipe: "ViT-B uses the same hyperparameters
# as ConvNeXt-B", "we follow the same setup as in SiT and REPA unless otherwise specified", "the
# optimizer's default parameters". What it covers is stated by reference, not left open.
DELEGATION = re.compile(
    r"\b(?:follow(?:s|ed|ing)?|adopt(?:s|ed|ing)?|us(?:e|es|ed|ing)|keep(?:s|ing)?|kept|reus(?:e|es|ed|ing)|"
    r"borrow(?:s|ed|ing)?|inherit(?:s|ed|ing)?|identical\s+to|same\s+as|unchanged\s+from)\b"
    r"[^.;]{0,60}?\b(?:recipes?|hyper-?parameters?|set-?ups?|"
    r"(?:training|optimi[sz]ation|experimental)\s+(?:settings?|details|protocols?|procedures?|schemes?|configurations?))\b"
    r"[^.;]{0,30}?\b(?:of|as(?:\s+in)?|from|in|by)\s+(?:the\s+)?(?:official\s+)?"
    r"(?!(?:Table|Tab|Figure|Fig|Section|Sec|Appendix|App|Eq|Equation|Algorithm|Alg)\b)(?=[A-Z\[])"  # not its own tables
    r"|\bdefault\s+(?:hyper-?parameters|parameters|settings|values)\s+(?:of|from|in)\b"
    # To the paper's own code: "configuration files with all run settings can be found in the config/ directory".
    r"|\b(?:hyper-?parameters|settings|configurations?|config(?:uration)?\s+files)\b[^.;]{0,60}?"
    r"\b(?:can\s+be\s+found|are\s+(?:given|provided|available|listed|included)|(?:is|are)\s+released)\b"
    r"[^.;]{0,50}?\b(?:code(?:base)?|repository|repo|config|configs)\b"
    r"|\b(?:PyTorch|framework|library|optimizer)(?:'s)?\s+default\s+(?:hyper-?parameters|parameters|settings|values)\b",
)
# Whose settings it hands over: a baseline's or an evaluation's, not the method's training.
_OTHERS_SETTINGS = re.compile(
    r"\bbaselines?\b|\b(?:each|other|all|compared)\s+methods\b|\bprior\s+(?:methods|works?)\b|\bevaluation\b|\bpreprocessing\b",
    re.I,
)


def delegations(reading: Reading) -> list[tuple[Evidence, str | None]]:
    """The method's sentences that delegate its settings to another recipe, each with the top-level
    section it stands in (the experiments it speaks for), first one first."""
    found = []
    for sentence in reading.sentences:
        match = DELEGATION.search(sentence.plain.text)
        if match and not _OTHERS_SETTINGS.search(sentence.plain.text):
            found.append((_sentence_evidence(sentence, match.start(), match.end()), reading.top_sections.get(sentence.paragraph.section_id or "")))
    return found

def setting_statuses(reading: Reading) -> list[tuple[SettingStatus, Requirement, Evidence]]:
    """Every setting the paper's components and training need, stated or not, with what asks for it."""
    knowledge = requirements()
    used = used_components(reading)
    training = training_evidence(reading, used)
    out: list[tuple[SettingStatus, Requirement, Evidence]] = []
    for component in used:
        if component.kind not in REQUIREMENT_KINDS:
            continue
        needed = knowledge.by_component.get(f"kind:{component.kind}", ()) + knowledge.by_component.get(component.name, ())
        for requirement in needed:
            if requirement.needs_training and training is None:
                continue
            status = _status(reading, component.name, requirement, used)
            if not status.stated and len(needed) == 1 and component.value_nearby:
                continue  # its one setting is probably the number beside it: not sure enough to ask
            out.append((status, requirement, component.evidence))
    if training is not None:
        for requirement in knowledge.training:
            out.append((_status(reading, "training", requirement, used), requirement, training))
    # What the paper leaves unstated for the experiments of a section that hands them to a named
    # recipe is delegated: the section of the component's use (an optimizer's for training) decides.
    delegated_in = {}
    for evidence, section in delegations(reading):
        delegated_in.setdefault(section, evidence)
    if delegated_in:
        first = next(iter(delegated_in.values()))  # for a need whose section is not known: say less
        optimizer = next((u for u in used if u.kind == "optimizer"), None)
        section_of = {u.name: reading.top_sections.get(u.section_id or "") for u in used}
        section_of["training"] = section_of.get(optimizer.name) if optimizer else None
        out = [
            (
                status.model_copy(update={"delegated": True, "evidence": [delegated_in.get(section_of.get(status.component), first)]})
                if not status.stated and (section_of.get(status.component) in delegated_in or section_of.get(status.component) is None)
                else status,
                requirement,
                evidence,
            )
            for status, requirement, evidence in out
        ]
    return _unique(out)


def _unique(statuses: list[tuple[SettingStatus, Requirement, Evidence]]) -> list[tuple[SettingStatus, Requirement, Evidence]]:
    """One status per setting: weight decay asked by AdamW and by `Weight decay` is one question."""
    seen: set[str] = set()
    out = []
    for status, requirement, evidence in statuses:
        if status.setting not in seen:
            seen.add(status.setting)
            out.append((status, requirement, evidence))
    return out


def training_evidence(reading: Reading, used: list[_UsedComponent]) -> Evidence | None:
    optimizer = next((u for u in used if u.kind == "optimizer"), None)
    if optimizer is not None:
        return optimizer.evidence
    for sentence in reading.sentences:
        match = TRAINING.search(sentence.plain.text)
        if match:
            return _sentence_evidence(sentence, match.start(), match.end())
    return None


def unstated_settings(reading: Reading, statuses: list[tuple[SettingStatus, Requirement, Evidence]]) -> Iterator[Gap]:
    """The settings a used component or the training needs that the paper never states; the
    conventional ones are left to `left_to_convention`."""
    for status, requirement, evidence in statuses:
        if status.stated or status.delegated or requirement.conventional:
            continue
        subject = "The training" if status.component == "training" else f"The paper uses {status.component}, but"
        yield _gap(
            id=f"unstated-setting:{status.component}:{status.setting}",
            kind="unstated-setting",
            category=requirement.category,
            title=f"{requirement.label} not stated" + ("" if status.component == "training" else f" ({status.component})"),
            detail=f"{subject} {'is described, but its ' if status.component == 'training' else 'its '}{requirement.label} is not stated anywhere in the paper.",
            blocking=requirement.blocking,
            evidence=[evidence],
            question=(
                (
                    f"The training is described ({evidence.location.short()}) without its {requirement.label}: "
                    if status.component == "training"
                    else f"The paper uses {status.component} ({evidence.location.short()}) without stating its {requirement.label}: "
                )
                + f"what {requirement.label} did you use?"
            ),
            conventions=list(requirement.conventions),
            setting=status.setting,
            component=None if status.component == "training" else status.component,
        )


# A table row's hyperparameter for one of several columns: "batch_size [Fuzzy logic]".
_COLUMN_OF_ROW_RE = re.compile(r"^(?P<row>.*) \[(?P<column>[^\[\]]+)\]$")
_PER_EXPERIMENT_SETTINGS = ("training_length", "batch_size", "learning_rate")
_EXPERIMENT_COLUMNS_READ = 50  # a table of more columns is no list of experiments
# Columns that are not experiments: "Setting | Value | Notes".
_NOT_AN_EXPERIMENT = re.compile(r"^(?:values?|defaults?|notes?|descriptions?|settings?|ranges?|ours|baselines?)$", re.I)
# "All models are trained for 100 epochs", "for each dataset", "across tasks": every experiment.
_FOR_EVERY_EXPERIMENT = re.compile(
    r"\b(?:all|each|every|both)\s+(?:of\s+the\s+)?(?:[\w-]+\s+)?(?:models?|datasets?|experiments?|tasks?|runs?|settings?|benchmarks?|networks?|variants?|methods?)\b"
    r"|\bacross\s+(?:all\s+)?(?:datasets|tasks|experiments|benchmarks|models)\b|\b(?:for|in)\s+all\b",
    re.I,
)
# "For ImageNet we follow the training recipe of DeiT", "ImageNet uses the same schedule".
_SETTINGS_HANDED_OVER = re.compile(r"\b(?:follow\w*|same|identical|as\s+in|recipe|unchanged|(?:schedule|settings?|setup|protocol)\s+(?:of|from))\b", re.I)


def unstated_per_experiment(reading: Reading, statuses: list[tuple[SettingStatus, Requirement, Evidence]]) -> Iterator[Gap]:
    """A training setting the paper states for some of its experiments but not for another whose
    other settings a table gives column by column (hyla: "Fuzzy logic | sraven | Language
    modeling", with training lengths only for the language model, in its section, and for sraven,
    in its captions). A statement belongs to the experiments its sentence names, else its caption,
    else its section's or top section's title; one that names none, or speaks of all of them ("all
    models are trained for 100 epochs"), is for every experiment: then nothing is asked. An
    experiment handed to another recipe ("for ImageNet we follow DeiT") or a table with the
    setting's row or column says it. Routine: one question per setting, naming the experiments."""
    stated = {status.setting: requirement for status, requirement, _ in statuses if status.stated and status.setting in _PER_EXPERIMENT_SETTINGS}
    if not stated:
        return
    titles = {s.id: s.title for s in reading.spec.sections}
    table_of_row = {_place(where): i for i, table in enumerate(reading.spec.tables) for where in table.row_locations}
    columns_of: dict[int, dict[str, set[str]]] = {}  # a table → each experiment's column → the settings it gives
    for h in reading.spec.hyperparameters:
        if h.source == "table" and (i := table_of_row.get(_place(h.location))) is not None and (match := _COLUMN_OF_ROW_RE.match(h.name)):
            columns_of.setdefault(i, {}).setdefault(match["column"], set()).add(h.normalized_name)
    for i, table in enumerate(reading.spec.tables):
        columns = columns_of.get(i, {})
        if not 2 <= len(columns) <= _EXPERIMENT_COLUMNS_READ or any(len(c) < 2 or _NOT_AN_EXPERIMENT.match(c) for c in columns):
            continue
        naming = re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(c) for c in sorted(columns, key=len, reverse=True)) + r")(?![\w-])", re.I)
        by_name = {c.lower(): c for c in columns}
        for setting, requirement in stated.items():
            if any(set(requirement.stated_by) & given for given in columns.values()) or _heads_a_table(reading, requirement):
                continue  # a table has the setting's row or column: what it leaves empty is another question
            statements = _statements(reading, requirement)
            scopes = [_experiments_named(reading, statement, naming, by_name, titles) for statement in statements]
            if not scopes or any(not scope for scope in scopes):
                continue  # a statement for every experiment
            handed_over = {
                by_name[m.group().lower()]
                for sentence in reading.sentences
                if _SETTINGS_HANDED_OVER.search(sentence.plain.text)
                for m in naming.finditer(sentence.plain.text)
            }
            missing = [c for c in columns if not any(c in scope for scope in scopes) and c not in handed_over]
            if not missing:
                continue
            covered = [c for c in columns if any(c in scope for scope in scopes)]
            example = next(evidence for (_, _, _, evidence), scope in zip(statements, scopes) if covered[0] in scope)
            names, stated_for = _and_joined(missing), _and_joined(covered)
            table_name = f"Table {table.number}" if table.number else "A settings table"
            yield _gap(
                id=f"unstated-setting:per-experiment:{setting}:{','.join(missing)}",
                kind="unstated-setting",
                category=requirement.category,
                title=f"{requirement.label} not stated for {names}",
                detail=f"{table_name} gives the other settings of {names}, and the paper states the {requirement.label} of {stated_for}, but not of {names}.",
                blocking=False,  # the experiments may share it without saying so
                evidence=[Evidence(quote=table.caption or " | ".join(table.rows[0]), location=table.location), example],
                question=f"The paper gives the {requirement.label} of {stated_for} but not of {names}: which did you use for {names}?",
                conventions=list(requirement.conventions),
                setting=setting,
            )


def _place(where: Location) -> tuple:
    return where.file, where.line, where.column, where.end_line, where.end_column, where.page, where.bbox


def _and_joined(names: list[str]) -> str:
    return ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1]


def _heads_a_table(reading: Reading, requirement: Requirement) -> bool:
    """Whether a row or column of any table is named by the setting ("Dataset | Epochs"), read or not."""
    return any(
        (entry := cell_entry(to_plain(cell).text.strip())) is not None and entry.name in requirement.stated_by
        for table in reading.spec.tables
        for cell in [*(table.rows[0] if table.rows else []), *(row[0] for row in table.rows[1:] if row)]
    )


def _statements(reading: Reading, requirement: Requirement) -> list[tuple[str, str, str | None, Evidence]]:
    """Where the paper states a setting: (its sentence, its caption if a caption states it, its
    section, the evidence) for each stated value and each sentence whose words state it."""
    paragraphs = reading.spec.paragraphs
    found = []
    for name in requirement.stated_by:
        for h in reading.stated.get(name, []):
            index = _paragraph_index(reading, h)
            caption = paragraphs[index].text if index is not None and paragraphs[index].kind == "caption" else ""
            found.append((h.text, caption, h.section_id, Evidence(quote=" ".join(h.text.split()), location=h.location)))
    if requirement.stated_by_text is not None:
        measurement = hyperparameter_vocabulary().measurement_words
        for s in [*reading.sentences, *reading.framing_sentences]:
            if (match := requirement.stated_by_text.search(s.plain.text)) and not measurement.search(s.plain.text):
                caption = s.paragraph.text if s.paragraph.kind == "caption" else ""
                found.append((s.plain.text, caption, s.paragraph.section_id, _sentence_evidence(s, match.start(), match.end())))
    return found


def _experiments_named(
    reading: Reading, statement: tuple[str, str, str | None, Evidence], naming: re.Pattern[str], by_name: dict[str, str], titles: dict[str, str]
) -> set[str]:
    """The experiments a statement is for: those its sentence names, else its caption (a caption's
    title: "Language modeling. Performance of ... with 130B tokens"), else its section's or its top
    section's title; none (every experiment) for a sentence that speaks of all of them."""
    sentence, caption, section_id, _ = statement
    if _FOR_EVERY_EXPERIMENT.search(sentence):
        return set()
    for words in (sentence, caption, titles.get(section_id or "", ""), titles.get(reading.top_sections.get(section_id or "") or "", "")):
        named = {by_name[m.group().lower()] for m in naming.finditer(words)}
        if named:
            return named
    return set()


_EQUATIONS_NAMED = 2  # "a norm's order (Eq. (3), Eq. (5) and 2 more)"


def left_to_convention(reading: Reading, statuses: list[tuple[SettingStatus, Requirement, Evidence]]) -> Gap | None:
    """One routine item, never asked, for all the paper leaves to convention: the unstated settings
    nearly every implementation keeps at the library's default (an optimizer's ε, the seeds), and
    what the method's formulas do not write (formulas.yaml: a norm's order, a softmax's axis)."""
    settings = [(s, r, e) for s, r, e in statuses if r.conventional and not s.stated and not s.delegated]
    formulas = _formula_conventions(reading)
    if not settings and not formulas:
        return None
    labels = [requirement.label + ("" if status.component == "training" else f" ({status.component})") for status, requirement, _ in settings]
    for convention, equations in formulas:
        named = ", ".join(equation_name(e) for e in equations[:_EQUATIONS_NAMED])
        more = f" and {len(equations) - _EQUATIONS_NAMED} more" if len(equations) > _EQUATIONS_NAMED else ""
        labels.append(f"{convention.label} ({named}{more})")
    listed = _and_joined(labels)
    evidence = [e for _, _, e in settings] + [Evidence(quote=eqs[0].latex or eqs[0].text, location=eqs[0].location) for _, eqs in formulas]
    return _gap(
        id="unstated-defaults:" + ",".join([*(status.setting for status, _, _ in settings), *(c.id for c, _ in formulas)]),
        kind="unstated-defaults",
        category="Missing Configuration Protocol",
        title=f"conventional defaults not stated: {listed}",
        detail="The paper does not state these; implementations usually keep the library's defaults and the usual reading of a formula.",
        blocking=False,
        evidence=list({e.location.short(): e for e in evidence}.values()),
        question=f"Did you keep the usual defaults for {listed}?",
        conventions=[c for _, requirement, _ in settings for c in requirement.conventions] + [Convention(answer=c.usually) for c, _ in formulas],
        grouped_settings=[status.setting for status, _, _ in settings],
    )


def _formula_conventions(reading: Reading) -> list[tuple[FormulaConvention, list[Equation]]]:
    """Each kind of formulas.yaml with the method's main-text equations that leave it to convention."""
    aside = {s.id for s in reading.spec.sections if s.appendix} | framing_sections(reading.spec)
    method = [e for e in reading.spec.equations if e.section_id not in aside and e.latex]
    found = []
    for convention in formula_conventions():
        leaving = [
            e
            for e in method
            if any(_balanced(m.group()) and not convention.writes.match(e.latex, m.end()) for m in convention.uses.finditer(e.latex))
        ]
        if leaving:
            found.append((convention, leaving))
    return found


def _balanced(latex: str) -> bool:
    """Whether every bracket the span opens it also closes: `\\|x - y\\|` is one norm, `(q \\| p) + D(p \\|` is not."""
    depth = 0
    for char in latex:
        depth += 1 if char in "({[" else -1 if char in ")}]" else 0
        if depth < 0:
            return False
    return depth == 0


def equation_name(equation: Equation) -> str:
    """How a question or a scaffold names an equation: "Eq. (3)" when its number can be cited, else where it stands."""
    if equation.number and EQUATION_NUMBER.fullmatch(equation.number):
        return f"Eq. ({equation.number})"
    return f"the equation at {equation.location.short()}"


# -- symbols ----------------------------------------------------------------------------------------

_DRAWN_RE = re.compile(r"\\sim\b")
_DEFINED_CHARS = 60  # a defined symbol's side of the sign is short
_DRAWS_READ = 16  # `z \sim N(0, I)`: an equation draws a few variables, not thousands


def _defines(latex: str, symbol_latex: str) -> bool:
    """The equation defines the symbol: it stands on the left of `=`/`:=`/`\\triangleq`, or is drawn (`\\sim`)."""
    left, drawn = _defining_parts(latex)
    return symbol_latex in left or any(before.endswith(symbol_latex) for before in drawn)


@functools.lru_cache(maxsize=64)
def _defining_parts(latex: str) -> tuple[str, tuple[str, ...]]:
    """What an equation can define, read once for all its symbols: the left of its defining sign
    (when short) and what stands before each of its first `\\sim`s."""
    left = DEFINING_SIGN.split(latex, maxsplit=1)[0]
    drawn = tuple(
        latex[max(0, match.start() - _DEFINED_CHARS) : match.start()].rstrip()
        for match in itertools.islice(_DRAWN_RE.finditer(latex), _DRAWS_READ)
    )
    return (left if len(left) < len(latex) and len(left) <= _DEFINED_CHARS else ""), drawn


def unexplained_symbols(reading: Reading) -> Iterator[Gap]:
    equations = {e.id: e for e in reading.spec.equations}
    aside = {s.id for s in reading.spec.sections if s.appendix} | framing_sections(reading.spec)
    prose = " ".join(sentence.plain.text for sentence in [*reading.sentences, *reading.framing_sentences])
    defined_bases = {info.symbol[:1] for info in reading.spec.symbols if info.definition or info.value_given}
    asked_bases: set[str] = set()  # β_t and β_{t'} are one question
    valued_in_text = functools.cache(lambda: _valued_in_text([*reading.framing_sentences, *reading.sentences]))  # "λ ≈ 0.5"
    for info in reading.spec.symbols:
        base = info.symbol[:1]
        if not ("\u0370" <= base <= "\u03ff") or base in NOT_A_SETTING or info.value_given:
            continue
        used_in = [equations[i] for i in info.equations if i in equations]
        main_text = [e for e in used_in if e.section_id not in aside]
        if not main_text:
            continue  # notation local to an appendix proof, or to the background
        if info.latex and any(_defines(e.latex or "", info.latex) for e in used_in):
            continue
        first = main_text[0]
        where = equation_name(first)
        equation_evidence = Evidence(quote=first.latex or first.text, location=first.location)
        if info.definition is None:
            # Silence unless the prose never names it: a mention the definition finder could not
            # read as a definition may well be one (and λ_q is explained where λ is).
            if base in prose or base in defined_bases or base in asked_bases:
                continue
            asked_bases.add(base)
            yield _gap(
                id=f"undefined-symbol:{info.symbol}",
                kind="undefined-symbol",
                category="Ambiguous Definition",
                title=f"{info.symbol} in {where} is never defined",
                detail=f"{info.symbol} is used in {len(info.equations)} equation(s) but the text neither defines it nor gives its value.",
                blocking=True,
                evidence=[equation_evidence],
                question=f"What is {info.symbol} in {where}, and what value (or how is it computed) did you use?",
                component=None,
            )
        elif (
            SETTING_WORDS.search(info.definition.text)
            and not LEARNED.search(info.definition.text)
            and not _stated_through_its_name(reading, info.definition.text)
            and info.symbol not in valued_in_text()
        ):
            yield _gap(
                id=f"unstated-value:{info.symbol}",
                kind="unstated-value",
                category="Missing Configuration Protocol",
                title=f"value of {info.symbol} not stated",
                detail=f"{info.symbol} is defined as a setting of the method, but no value is given.",
                blocking=True,
                evidence=[Evidence(quote=info.definition.text, location=info.definition.location), equation_evidence],
                question=f"Which value of {info.symbol} did you use ({where})?",
            )


_INLINE_FORMULAS_READ = 2_000  # a paper writes a few hundred; a hostile one costs no more than this
_VALUE_SIGN = re.compile(r"=|\\approx\b|\\simeq\b|≈")  # "λ = 0.5", "λ \\approx 0.5"
_VALUE_START = re.compile(r"\s*(?:-\s*)?(?:\d|\.\d|\\frac\{\d)")


def _inline_formulas(sentences: list[Sentence]) -> Iterator[tuple[Sentence, int, int, str]]:
    """(sentence, plain start, plain end, LaTeX) of each formula written in the text with "=" (or "≈"), first ones first."""
    read = 0
    for sentence in sentences:
        for start, end in sentence.plain.math:
            source_start, source_end = sentence.plain.source_span(start, end)
            latex = sentence.text[source_start:source_end]
            if len(latex) <= 300 and _VALUE_SIGN.search(latex):
                yield sentence, start, end, latex
                read += 1
                if read == _INLINE_FORMULAS_READ:
                    return


# "its activation probability surpasses the threshold", "reaches a threshold": a comparison, no result
_THRESHOLD_COMPARISON = re.compile(r"\b(?:surpass|reach|match|exceed)\w*\s+(?:a|the)\s+(?:[\w-]+\s+)?thresholds?\b", re.I)
# "If we keep ... ,", "Suppose we discard ... ;", "Assume that ... then": the clause a text supposes
_SUPPOSED = re.compile(r"^\W*(?:if|suppose|supposing|assume|assuming|let\s+us\s+(?:assume|suppose))\b[^,;]*?(?=[,;]|\s+then\b|$)", re.I)


def _given_a_value(reading: Reading) -> set[str]:
    """The symbols, and the names, the paper gives a value: in a formula of its text, in a display
    equation, or in a table row or sentence named by them ("$\\alpha$ initialization | 0.5")."""
    valued = _valued_in_text([*reading.framing_sentences, *reading.sentences]) | {info.symbol for info in reading.spec.symbols if info.value_given}
    return valued | {word for h in reading.spec.hyperparameters for word in [h.name, h.normalized_name, *to_plain(h.name).text.split()]}


# "$t$ is set to 10%", "$t$ (the threshold) was fixed at 0.2", "we set $t$ to 0.2", "t = 0.2": a
# value in words for a symbol as the text writes it (at most a few characters: "t", "t_1", "τ_attn")
_VALUE_IN_WORDS_RE = re.compile(
    r"(?<![\w-])(?P<name>[^\s$(),;:=]{1,12}+)(?![\w-])\s*(?:\([^()]{0,40}\)\s*)?(?:(?:is|was|are|were)\s+(?:(?:set|fixed|chosen|kept)\s+)?(?:to|at|as)?|=)\s*\$?\s*-?\.?\d"
    r"|\bwe\s+(?:set|fix|choose)\s+(?P<set>[^\s$(),;:=]{1,12}+)\s+(?:to|at|as)\s*\$?\s*-?\.?\d",
    re.I,
)
_VALUE_IN_WORDS_HINT = re.compile(r"\b(?:is|was|are|were|set|fix|choose)\b|=")
_SENTENCES_WITH_VALUES_READ = 20_000  # a hostile paper costs the lookup a bounded read
_VALUES_IN_WORDS_READ = 100  # per sentence
# What follows a step's words: a symbol, in math or, in a PDF's text, a letter with its subscript ("(t)", "$\tau$")
_SYMBOL_AFTER_RE = re.compile(r"\s{0,3}\(?\s{0,3}((?<![\w-])[A-Za-z\u0370-\u03ff](?:_\w{1,8})?(?![\w-])|(?=\S))")
_NAMED_BY_MATH_RE = re.compile(r"^\s*\$([^$=]{1,100})\$\s*(?:\([^()=]{0,60}\)\s*)?$")


def _valued_in_text(sentences: list[Sentence]) -> set[str]:
    """The symbols a formula in the text gives a number: "$\\alpha_{cfg} = 4.0$", "$\\beta_1=0.9,\\beta_2=0.98$";
    not a case the text supposes ("we can assume $A = 1$", "if $\\lambda = 0$"), as the extractor reads them."""
    valued = set()
    for sentence, start, _, latex in _inline_formulas(sentences):
        if follows_condition(sentence.plain.text, start, symbol=False):
            continue
        for part in re.split(r",|;|\\quad|\\text\{\s*and\s*\}", latex):
            sign = _VALUE_SIGN.search(part)
            if sign and _VALUE_START.match(part, sign.end()) and (parsed := parse_latex_math(part[: sign.start()])).only_symbol:
                valued.add(parsed.symbols[0].symbol)
    # "The weight $\lambda$ (0.5 in all runs)": a number in parentheses right after the symbol.
    for sentence in sentences:
        for match in itertools.islice(_VALUE_IN_PARENTHESES_RE.finditer(sentence.plain.text), _INLINE_FORMULAS_READ):
            span = sentence.plain.math_span(match.start() - 1)
            if span is None or span[1] != match.start():
                continue
            source_start, source_end = sentence.plain.source_span(*span)
            if (parsed := parse_latex_math(sentence.text[source_start:source_end])).only_symbol:
                valued.add(parsed.symbols[0].symbol)
    return valued


# Not "(1)", an equation's number, nor "(0 < λ < 1)", a range.
_VALUE_IN_PARENTHESES_RE = re.compile(r"(?<=\S)\s*\(\s*(?!\d+\s*\))(?![^()]{0,80}[<>≤≥])-?\.?\d")


# "..., which we set to 0.5", "is 0.5", "of 0.5": a definition that gives its value.
_DEFINITION_VALUE = re.compile(r"\bset\s+(?:it\s+)?to\s+\$?-?\d|\b(?:is|of|equals?)\s+\$?-?\d|=\s*\$?-?\d")


def _stated_through_its_name(reading: Reading, definition: str) -> bool:
    """Whether a symbol's definition gives its value, or the setting it names is stated: "where
    $\\eta$ is the learning rate" beside "a learning rate of $10^{-4}$", "$\\gamma$ is a margin"
    beside "a margin of 0.2"."""
    plain = to_plain(definition).text
    if _DEFINITION_VALUE.search(plain):
        return True
    vocabulary = hyperparameter_vocabulary()
    named = [found.value.name for found in vocabulary.table_names.finditer(plain)]
    named += [found.value.entry.name for found in vocabulary.names.finditer(plain)]
    if any(name in reading.stated for name in named):
        return True
    # A name our vocabulary lacks: the definition's noun ("a margin"; with the word before it when the
    # noun alone names many settings: "a mixing rate"), given a number in the method ("a margin of 0.2").
    noun = _DEFINED_AS_RE.search(plain)
    if noun is None:
        return False
    head, modifier = noun["head"].lower(), (noun["modifier"] or "").lower()
    if head in _GENERIC_NOUNS:
        return bool(modifier) and f"{modifier} {head}" in reading.nouns_given_numbers
    return head in reading.nouns_given_numbers


# "a margin of 0.2", "the mixing rate is 0.1": a noun, with the word before it, given a number.
_NOUN_GIVEN_A_NUMBER_RE = re.compile(
    r"(?<![A-Za-z-])(?:(?P<modifier>[a-z][a-z-]*)\s+)?(?P<head>[a-z][a-z-]{3,})\s+(?:of|=|is|was|to|set\s+to|equal\s+to)\s+\$?-?\.?\d", re.I
)
# "where $\gamma$ is a margin", "$\alpha$ is a constant mixing rate": the noun a definition names the symbol by.
_DEFINED_AS_RE = re.compile(
    r"\b(?:is|are|denotes|as)\s+(?:a|an|the)\s+(?:[a-z-]+\s+)??(?:(?P<modifier>[a-z-]+)\s+)??(?P<head>[a-z-]{4,})\b"
    r"(?=\s*(?:$|[,.;)]|of\b|for\b|that\b|which\b|to\b|in\b|and\b|between\b|with\b))"
)
# Nouns that name many settings: "a weight of 0.1" may be any weight's.
_GENERIC_NOUNS = frozenset(
    {"weight", "rate", "coefficient", "factor", "constant", "parameter", "hyper-parameter", "hyperparameter", "value", "term", "scale", "number", "size", "ratio", "threshold"}
)


def unstated_inline_settings(reading: Reading) -> Iterator[Gap]:
    """A setting that only formulas written in the text use ("we minimize $L = L_1 + \\lambda L_2$"),
    which a sentence defines as a setting ("$\\lambda > 0$ is a hyper-parameter that balances L_1 and
    L_2") and for which the paper gives no value anywhere: not in its definition, a formula ("λ = 0.5",
    "λ ≈ 0.5"), a sentence naming it ("we set the loss weight $\\lambda$ to 0.5"), a table row named
    by it, or for the setting its definition names ("the learning rate"). Asked as a display
    equation's setting is (`unexplained_symbols`)."""
    in_display = {info.symbol for info in reading.spec.symbols}
    first_use: dict[str, tuple[Sentence, int, int, str]] = {}
    for sentence, start, end, latex in _inline_formulas(reading.sentences):
        for found in parse_latex_math(latex).symbols:
            symbol = found.symbol
            if "\u0370" <= symbol[:1] <= "\u03ff" and symbol[:1] not in NOT_A_SETTING and symbol not in in_display:
                first_use.setdefault(symbol, (sentence, start, end, latex))
    if not first_use:
        return
    everywhere = [*reading.framing_sentences, *reading.sentences]
    named = {h.name for h in reading.spec.hyperparameters} | {h.normalized_name for h in reading.spec.hyperparameters}
    valued = _valued_in_text(everywhere)
    definitions = symbol_definitions(everywhere, {symbol_key(symbol) for symbol in first_use})
    value_wordings = [w for w in ambiguous_wordings() if w.category == "Missing Configuration Protocol"]
    for symbol, (sentence, start, end, latex) in first_use.items():
        definition = definitions.get(symbol_key(symbol))
        if definition is None or not SETTING_WORDS.search(definition.text) or LEARNED.search(definition.text):
            continue
        if symbol in valued or symbol_key(symbol) in reading.spec.symbol_values or symbol in named or symbol_name(symbol) in named or _stated_through_its_name(reading, definition.text):
            continue
        if any(w.pattern.search(to_plain(definition.text).text) for w in value_wordings):
            continue  # "with a small constant $\\epsilon$": its wording is asked, as routine, with the conventions
        symbol_latex = next((f.latex for f in parse_latex_math(latex).symbols if f.symbol == symbol), None)
        if symbol_latex and any(h.source == "text" and symbol_latex in h.text for h in reading.spec.hyperparameters):
            continue  # "We set the loss weight $\\lambda$ to 0.5": the value is stated for the name beside it
        yield _gap(
            id=f"unstated-value:{symbol}",
            kind="unstated-value",
            category="Missing Configuration Protocol",
            title=f"value of {symbol} not stated",
            detail=f"{symbol} is defined as a setting of the method, but no value is given.",
            blocking=True,
            evidence=[Evidence(quote=definition.text, location=definition.location), _sentence_evidence(sentence, start, end)],
            question=f"Which value of {symbol} did you use (in “{' '.join(latex.split())}”)?",
        )


def uninitialised_parameters(reading: Reading) -> Iterator[Gap]:
    """Parameters the method declares learnable that the paper never says how to start
    (`extract.learnable`: "$\\rho_i$ being a learnable parameter for individual numerical features"),
    other than a network's parameters and a layer's weights (θ, W), and those given a value: one
    routine question per declaration."""
    declared = learnable_symbols(reading.spec)
    if not declared:
        return
    valued = _given_a_value(reading)
    by_declaration: dict[str, tuple[Evidence, list[str]]] = {}
    for name, (latex, evidence) in declared.items():
        symbol = _symbol_shown(latex)
        if symbol[:1] in NOT_A_SETTING or symbol[:1] == "W" or {symbol, name, symbol_name(symbol), f"{symbol}_0"} & valued or symbol_key(symbol) in reading.spec.symbol_values:
            continue
        by_declaration.setdefault(evidence.location.short(), (evidence, []))[1].append(symbol)
    for evidence, symbols in by_declaration.values():
        listed = ", ".join(symbols)
        one = len(symbols) == 1
        yield _gap(
            id=f"unstated-init:{','.join(symbols)}",
            kind="unstated-value",
            category="Missing Configuration Protocol",
            title=f"{listed}: how {'it is' if one else 'they are'} initialised is not said",
            detail="The paper declares learnable parameters of its own but not their initial values; training starts from them.",
            blocking=False,  # an implementation can start somewhere; the paper's runs started elsewhere, maybe
            evidence=[evidence],
            question=(
                f"The paper says {listed} {'is' if one else 'are'} learnable but not how {'it is' if one else 'they are'} initialised. "
                "With which values or distribution did training start?"
            ),
            readings=["zeros (ones for a scale)", "small random values (a normal or uniform draw)", "a value derived from another setting"],
        )


def _symbol_shown(latex: str) -> str:
    r"""A declared symbol as a question shows it: the formula reader's form (`\mathbf{U}_1` → U_1)."""
    found = parse_latex_math(latex).symbols
    return found[0].symbol if found and "{}" not in found[0].symbol else " ".join(latex.split())


def unshaped_parameters(reading: Reading) -> Iterator[Gap]:
    """Learnable matrices whose shape the paper gives nowhere (`extract.learnable.unshaped_matrices`):
    one routine question per declaration."""
    for declared, evidence in unshaped_matrices(reading.spec):
        symbols = [_symbol_shown(latex) for latex in declared]
        listed = ", ".join(symbols)
        one = len(symbols) == 1
        yield _gap(
            id=f"undefined-shape:{','.join(symbols)}",
            kind="undefined-symbol",
            category="Missing Model Structure",
            title=f"{listed}: {'its shape is' if one else 'their shapes are'} not given",
            detail="The paper declares a learnable matrix but gives its shape nowhere, nor any size of its model; the size it maps to is a choice of the model.",
            blocking=False,  # an implementation can choose a width; the paper's may differ
            evidence=[evidence],
            question=f"The paper says {listed} {'is a learnable matrix' if one else 'are learnable matrices'} but not {'its shape' if one else 'their shapes'}. Which shape ({'its' if one else 'their'} input and output sizes)?",
            readings=["the input's size in and out", "the input's size in, a smaller size out", "a size given by another setting"],
        )


# -- inconsistencies --------------------------------------------------------------------------------


def _context(reading: Reading, hyperparameter: Hyperparameter) -> dict[str, frozenset[str]]:
    """The datasets and models named where a value is stated, by kind."""
    text = hyperparameter.text
    if hyperparameter.source == "table":
        table = next((t for t in reading.spec.tables if hyperparameter.location in t.row_locations), None)
        text = f"{text} {table.caption}" if table is not None else text
    return {
        kind: frozenset(c.name for c in reading.spec.components if c.kind == kind and c.mention in text)
        for kind in ("dataset", "architecture")
    }


def _comparable(reading: Reading, one: Hyperparameter, other: Hyperparameter) -> bool:
    """Whether two statements speak of the same run: in one section with no dataset or model that
    tells them apart, or in two sections that name the same dataset. Elsewhere papers state
    settings per experiment, and two values are variants, not a contradiction."""
    first, second = _context(reading, one), _context(reading, other)
    if any(first[kind] and second[kind] and first[kind] != second[kind] for kind in first):
        return False
    # Two sentences, one naming a dataset the other does not, may well speak of two experiments;
    # a table's caption seldom names the model, so a table row only has to not contradict.
    if one.source == other.source == "text" and first != second:
        return False
    if one.section_id == other.section_id:
        return one.source != other.source or not _same_paragraph(reading, one, other)
    return bool(first["dataset"]) and first["dataset"] == second["dataset"]


def _paragraph_index(reading: Reading, hyperparameter: Hyperparameter) -> int | None:
    """The paragraph a statement stands in, by location (text alone can repeat across paragraphs)."""
    where = hyperparameter.location
    for i, paragraph in enumerate(reading.spec.paragraphs):
        around = paragraph.location
        if around.file != where.file:
            continue
        if where.page is not None:
            if around.page == where.page and around.bbox == where.bbox:
                return i
        elif around.line is not None and where.line is not None and around.line <= where.line <= (around.end_line or around.line):
            return i
    return None


def _same_paragraph(reading: Reading, one: Hyperparameter, other: Hyperparameter) -> bool:
    index = _paragraph_index(reading, one)
    return index is not None and index == _paragraph_index(reading, other)


def conflicting_values(reading: Reading) -> Iterator[Gap]:
    for name, values in reading.stated.items():
        numeric = [h for h in values if isinstance(h.value, float) and "[" not in h.name]
        distinct = {h.value for h in numeric}
        # Two values can be a contradiction; more are per-model or per-dataset variants.
        if len(distinct) != 2 or len({h.unit for h in numeric}) > 1:
            continue
        first_value = numeric[0].value
        one = numeric[0]
        other = next(h for h in numeric if h.value != first_value)
        if one.text == other.text or not _comparable(reading, one, other):
            continue
        shown = lambda h: f"{h.value:g}" + (f" {h.unit}" if h.unit else "")  # noqa: E731
        yield _gap(
            id=f"conflicting-values:{name}",
            kind="conflicting-values",
            category="Conflicting Model Design",
            title=f"{name.replace('_', ' ')}: {shown(one)} here, {shown(other)} there",
            detail="The paper states this setting twice with different values and says nothing that tells the two apart.",
            blocking=True,
            evidence=[Evidence(quote=one.text, location=one.location), Evidence(quote=other.text, location=other.location)],
            question=(
                f"The paper gives {name.replace('_', ' ')} = {shown(one)} ({one.location.short()}) and "
                f"{shown(other)} ({other.location.short()}). Which one was used for the reported results?"
            ),
            readings=[shown(one), shown(other)],
            setting=name,
        )


# "a weighted sum of the value vectors", "the weighted average of the two losses".
_WEIGHTED_RE = re.compile(r"\bweighted\s+(?:sum|average|mean|combination|mixture)\b", re.I)


def text_against_equations(reading: Reading) -> Iterator[Gap]:
    """A step the text calls weighted ("we take a weighted sum of the features:") whose formula, the
    display equation right after the sentence, weights nothing (`z = x_1 + x_2`, `\\sum_i x_i`, a plain
    mean): two statements of one step that disagree. Only where the sentence ends its paragraph, so
    the equation is the one it introduces; silent on a formula the reader cannot read."""
    equations = _paragraph_equations(reading.spec)
    last = {id(s.paragraph): s for s in reading.sentences}  # each paragraph's last sentence
    for sentence in reading.sentences:
        match = _WEIGHTED_RE.search(sentence.plain.text)
        following = equations.get(id(sentence.paragraph))
        if match is None or last[id(sentence.paragraph)] is not sentence or not following:
            continue
        equation = following[0]
        if not _weights_nothing(equation.latex or ""):
            continue
        where = equation_name(equation)
        yield _gap(
            id=f"text-vs-equation:{equation.id}",
            kind="conflicting-values",
            category="Conflicting Formal Definition",
            title=f'the text says "{match.group()}", {where} weights nothing',
            detail="The sentence and the formula it introduces describe the step differently; an implementation must pick one.",
            blocking=False,  # the terms may carry weights defined elsewhere: asked, not a verdict on the paper
            evidence=[_sentence_evidence(sentence, match.start(), match.end()), Evidence(quote=equation.latex or equation.text, location=equation.location)],
            question=f'The text says "{match.group()}" but {where} has no weights. Which is meant, and if weighted, with which weights?',
            readings=["the formula as written (equal weights)", "a weighted version with weights the paper does not give"],
        )


def _weights_nothing(latex: str) -> bool:
    """Whether the formula is a sum or a mean of terms that are each a bare symbol (`x_1 + x_2`,
    `(x_1 + x_2) / 2`, `\\sum_i x_i`, `\\frac{1}{N} \\sum_i x_i`): no term carries a factor that could
    weight it. SymPy is imported only for a paper that has such a sentence."""
    try:
        expression = read_formula(latex, sympy_algebra()).expression
    except Unreadable:
        return False
    sympy = sympy_algebra().sympy
    coefficient, rest = expression.as_coeff_Mul()
    if not coefficient.is_Number:
        return False
    bare = lambda term: term.is_Symbol or (  # noqa: E731
        isinstance(term, sympy.core.function.AppliedUndef) and len(term.args) == 1 and term.args[0].is_Symbol
    )
    if rest.is_Add:  # `(x_1 + x_2) / 2` is x_1/2 + x_2/2: one number for every term weights none
        split = [term.as_coeff_Mul() for term in rest.args]
        return len({number for number, _ in split}) == 1 and all(bare(term) for _, term in split)
    return isinstance(rest, sympy.core.function.AppliedUndef) and bare(rest)


# A loss's name: \\mathcal{L}_{...}, L_{...}, \\ell_{...}; three of them summed is an objective made of parts.
_LOSS_TERM_RE = re.compile(r"\\mathcal\s*\{L\}|(?<![A-Za-z\\])L_|\\ell_")
_OBJECTIVE_PARTS = 3  # `L = L_a + L_b` is often meant as written; four losses of different kinds rarely are


def unweighted_objectives(reading: Reading) -> Iterator[Gap]:
    """An objective written as a plain sum of three or more losses (`L_REG = L_KL + L_MSE + L_LPIPS +
    L_GAN`), in a display equation of the method or in a sentence's math, whose terms no sentence
    weights: the weights an implementation needs, or a confirmation that there are none."""
    aside = framing_sections(reading.spec)
    # Each formula with a way to its evidence, made only for the few that are such a sum: a paper
    # can hold a quarter of a million inline formulas.
    formulas: list[tuple[str, Callable[[], Evidence]]] = [
        (e.latex, functools.partial(Evidence, quote=e.latex, location=e.location))
        for e in reading.spec.equations
        if e.latex and e.section_id not in aside
    ]
    for sentence in reading.sentences:
        if not _may_sum_losses(sentence.text):
            continue
        for start, end in sentence.plain.math:
            where = functools.partial(_math_evidence, sentence, start, end)
            formulas.append((sentence.source(start, end).strip("$"), where))
    seen: set[str] = set()
    for latex, evidence_of in formulas:
        if not _may_sum_losses(latex):
            continue  # SymPy only for what may be such a sum
        terms = _unweighted_losses(latex)
        if len(terms) < _OBJECTIVE_PARTS or latex in seen or _weighted_elsewhere(reading, terms):
            continue
        seen.add(latex)
        defined = defined_name(latex) or "the objective"
        shown = " + ".join(terms)
        yield _gap(
            id=f"unweighted-objective:{defined}",
            kind="unstated-value",
            category="Missing Configuration Protocol",
            title=f"{defined} sums {len(terms)} losses without weights",
            detail="Losses of different kinds are rarely added with equal weights; the paper gives none.",
            blocking=False,
            evidence=[evidence_of()],
            question=f"The paper defines {defined} = {shown}. Are the terms weighted, and with which weights?",
            readings=["equal weights, as written", "weighted, with weights the paper does not give"],
        )


def _may_sum_losses(text: str) -> bool:
    """Cheap: whether the text has the pluses and the losses' names such a sum needs."""
    return text.count("+") >= _OBJECTIVE_PARTS - 1 and len(_LOSS_TERM_RE.findall(text)) >= _OBJECTIVE_PARTS + 1


def _math_evidence(sentence: Sentence, start: int, end: int) -> Evidence:
    return Evidence(quote=" ".join(sentence.text.split()), location=sentence.location(start, end))


def _unweighted_losses(latex: str) -> list[str]:
    """The loss terms of a formula that is a plain sum of them (each a loss's name, with no factor),
    else none."""
    try:
        expression = read_formula(latex, sympy_algebra()).expression
    except Unreadable:
        return []
    sympy = sympy_algebra().sympy
    if not expression.is_Add:
        return []
    names = []
    for term in expression.args:
        name = str(term.func) if isinstance(term, sympy.core.function.AppliedUndef) else str(term) if term.is_Symbol else ""
        if not re.match(r"(?:L|ell)(?:_|$)", name):
            return []
        names.append(name)
    return sorted(names, key=lambda name: latex.find(name.partition("_")[2] or name))  # as the paper writes them


def _weighted_elsewhere(reading: Reading, terms: list[str]) -> bool:
    """Whether a sentence of the method speaks of a weight of one of the terms ("a KL weight of 1e-6")."""
    for term in terms:
        part = re.escape(term.partition("_")[2])
        if part and any(
            re.search(rf"\b{part}\b[^.;]{{0,40}}\bweight|\bweight[^.;]{{0,40}}\b{part}\b", s.plain.text, re.I) for s in reading.sentences
        ):
            return True
    return False


def dangling_references(reading: Reading) -> Iterator[Gap]:
    numbers = {e.number for e in reading.spec.equations if e.number}
    largest = max((int(n) for n in numbers if n.isdigit()), default=0)
    # LaTeX numbers its equations exactly; a PDF's or a converted Markdown's numbers are read off the
    # page and may be missed, so there only a number past the last one found is surely dangling.
    numbering_is_exact = reading.spec.source_format == "latex"
    seen: set[str] = set()
    for sentence in reading.sentences:
        for match in EQUATION_REFERENCE.finditer(sentence.text):
            number = match.group(1)
            if number in numbers or number in seen or ELSEWHERE.match(sentence.text[match.end() :]):
                continue
            if not numbering_is_exact and not (number.isdigit() and largest and int(number) > largest):
                continue
            seen.add(number)
            shown = "an unresolved reference" if number == "??" else f"Eq. ({number})"
            yield _gap(
                id=f"dangling-reference:{number}",
                kind="dangling-reference",
                category="Conflicting Formal Definition",
                title=f"the text cites {shown}, which the paper does not contain",
                detail="The procedure points at an equation that is not in the paper (a stale number or a broken label).",
                blocking=True,
                evidence=[Evidence(quote=" ".join(sentence.text.split()), location=sentence.location())],
                question=f"The text refers to {shown} ({sentence.location().short()}); which equation is meant?",
            )

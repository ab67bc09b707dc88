"""Check a workspace's code against its paper: divergences, guesses, unimplemented equations.

Never cry wolf: only live values that are not overridden are compared; a value the paper states
several times, a setting matched only by a symbol's name, or a value read from a config file that no
code is known to read lowers the confidence, and says why.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ...schemas import (
    CheckReport,
    CodeIndex,
    CodeLocation,
    ComponentSite,
    DecisionsFile,
    Evidence,
    FileIndex,
    Finding,
    Fix,
    Location,
    PaperSpec,
    TextEdit,
    Undecided,
    ValueSite,
)
from ..decisions import DECISIONS_PATH
from ..text import readable, shorten
from ..code.knowledge import code_vocabulary, is_part_setting, snake_case, is_training_setting, kind_named_by, launches_processes, settings_shared_across_kinds, spawns_processes, technique_switched, stage_named_by
from ..code.launchers import command_numbers
from ..code.python import HAND_WRITTEN_SCHEDULE
from ..code.sites import SourceText
from ..extract.components import find_mentions
from ..extract.hyperparameters import symbol_name
from ..extract.knowledge import PhraseSet, hyperparameter_vocabulary
from ..extract.learnable import learnable_symbols
from ..extract.parts import appendix_sections, framing_sections, top_section
from ..extract.values import binary_reading
from ..extract.sentences import sentences_of
from ..readiness.finders import NOT_A_SETTING, Reading, delegations, setting_statuses, training_evidence, used_components
from ..readiness.knowledge import requirements
from .equations import equation_findings
from .initial_values import initial_value_findings
from .loss_terms import chosen_distance, distance_terms, objective_over_time, unweighted_terms, weighted_term
from .scope import file_words, fits, fold, for_a_baseline, for_a_variant, paragraph_scope, table_scope, holds_no_run, named_in, names_another_experiment, outside_the_paper, paper_names, scope_of, site_context, site_stage, untold, variant_families
from .units import code_measure, comparable, paper_measure

# Component kinds where a paper naming one and the code using another is a divergence. Activations
# and losses are left out: a backbone's ReLU beside the paper's GELU head is not a contradiction.
CHECKED_COMPONENT_KINDS = ("optimizer", "normalization")
SYMBOL_NAMES_CONFIDENCE = 0.6
UNIDENTIFIED_RUN_CONFIDENCE = 0.7  # a warning: the value is the paper's, the run is not seen to be its experiment
SEVERAL_VALUES_CONFIDENCE = 0.5
# Measures whose "4M" or "4k" often means 4 × 2^20 or 4096 (batches of tokens or of examples).
POWER_OF_TWO_MEASURES = ("tokens", "examples")


@dataclass(slots=True)
class _Fact:
    """A value the paper (or an author's answer) states for a setting."""

    value: float
    shown: str
    unit: str | None
    component: str | None
    evidence: Evidence
    from_answer: bool = False
    scope: frozenset[str] = frozenset()  # what it is stated for: {"decoder"}, {"coco"} (see scope.py)
    tolerance: float = 1e-6  # relative; wider for a value worked out from rounded ones ("200B tokens / 4M tokens")


# Words of a delegating sentence that say nothing of which experiment it speaks for.
_GENERIC_WORDS = frozenset(
    "following follow follows followed settings setting experimental experiments experiment training train recipe "
    "recipes same hyperparameters parameters setup model models default defaults using with from this that these "
    "their original official details configuration configurations configs config code codebase directory files "
    "found run runs used uses otherwise specified unless main".split()
)


@dataclass(slots=True)
class PaperFacts:
    """What the checks compare code with, prepared once per paper and decisions file."""

    decisions: DecisionsFile
    facts: dict[str, list[_Fact]] = field(default_factory=dict)
    symbols: dict[str, str] = field(default_factory=dict)  # settings named after a symbol: lambda → λ
    # Setting named after a symbol → the numbers and labels of the method's equations using it.
    symbol_equations: dict[str, frozenset[str]] = field(default_factory=dict)
    unstated: dict[str, Evidence] = field(default_factory=dict)  # setting → where the paper needs it
    unstated_for: dict[str, str] = field(default_factory=dict)  # setting → the component needing it
    # Techniques the paper never names (clipping, dropout, an EMA) → where it describes its training.
    unmentioned: dict[str, Evidence] = field(default_factory=dict)
    unweighted: dict[str, Evidence] = field(default_factory=dict)  # loss terms a sum adds with no weight (loss_terms.py)
    distances: dict[str, Evidence] = field(default_factory=dict)  # the distances (MSE, L1) the objective sums
    held_out: Evidence | None = None  # where the paper sets a validation split apart from the test set
    over_time: Evidence | None = None  # the objective's expectation over the diffusion time t
    library_defaults: Evidence | None = None  # "we use AdamW with PyTorch's default parameters"
    # Component kinds whose choice the paper needs and never states (its schedule) → what and where.
    unstated_kinds: dict[str, tuple[str, str, Evidence]] = field(default_factory=dict)
    used: dict[str, list[str]] = field(default_factory=dict)  # component kind → names the paper uses
    # The learning-rate decays the paper names (cosine, constant; not a warm-up), each with what it is
    # stated for ("MNIST T-Shirt DDPMs were trained ... with cosine decay") and where.
    schedules: list[tuple[str, frozenset[str], Evidence]] = field(default_factory=list)
    used_evidence: dict[str, Evidence] = field(default_factory=dict)  # component kind → the first use's sentence
    named_components: dict[str, Evidence] = field(default_factory=dict)  # component → the method's first sentence naming it
    names: frozenset[str] = frozenset()  # folded names of models and datasets the prose uses (scope.py)
    delegated_words: frozenset[str] = frozenset()  # what sentences handing settings to another recipe speak of
    # Symbols declared learnable whose start no sentence states → (their LaTeX, the declaring sentence).
    learnable: dict[str, tuple[str, Evidence]] = field(default_factory=dict)
    folded_prose: str = ""
    weighting_sentences: tuple[str, ...] = ()  # the prose's sentences that weight something, lowercased
    several_experiments: bool = False  # two stated values are scoped to experiments with no name in common


def _number(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e9:
        return str(int(value))
    if 0 < abs(value) < 1e-3:
        mantissa, exponent = f"{value:e}".split("e")
        return f"{float(mantissa):g}e{int(exponent)}"
    return f"{value:g}"


def paper_facts(spec: PaperSpec, decisions: DecisionsFile) -> PaperFacts:
    """The paper's stated values (answers first), the settings it needs but never states, and the
    components it uses."""
    side = PaperFacts(decisions)
    framing = framing_sections(spec)
    side.names = paper_names([p.text for p in spec.paragraphs])
    side.folded_prose = fold(" ".join(p.text for p in spec.paragraphs))
    side.weighting_sentences = tuple(
        sentence.lower() for p in spec.paragraphs for sentence in re.split(r"(?<=\.)\s+", p.text) if _WEIGHTING_RE.search(sentence)
    )
    previous = _previous_sentences(spec, {h.text for h in spec.hyperparameters if "respectively" in h.text})
    for stated in spec.hyperparameters:
        if stated.section_id in framing:
            continue  # a value of the work the paper frames itself against, not of its method
        if stated.source == "text" and for_a_baseline(stated.text, stated.raw_value):
            continue  # "an exploiter baseline trained for 10^9 steps": another method's setting
        if isinstance(stated.value, float) and math.isfinite(stated.value):
            evidence = Evidence(quote=stated.text, location=stated.location)
            if stated.source == "text":
                scope = scope_of(stated.text, stated.raw_value, previous.get(stated.text, "")) or paragraph_scope(
                    _lead_sentence(spec, stated.text)
                )
            else:
                scope = table_scope(stated.name, _caption_of(spec, stated.location))
            fact = _Fact(stated.value, stated.raw_value, stated.unit, stated.component, evidence, scope=scope)
            side.facts.setdefault(stated.normalized_name, []).append(fact)
    _derive(side.facts)
    scopes = {fact.scope for facts in side.facts.values() for fact in facts if fact.scope}
    side.several_experiments = any(not (one & other) for one in scopes for other in scopes)
    # An answered clarification is part of the paper from then on, and outranks what the text says.
    for clarification in decisions.clarifications:
        if clarification.status == "answered" and clarification.setting and isinstance(clarification.value, (int, float)):
            quote = f"Answer to “{clarification.question}”: {clarification.answer or clarification.value}"
            if clarification.source:
                quote += f" ({clarification.source})"
            evidence = Evidence(quote=quote, location=Location(file=DECISIONS_PATH.as_posix()))
            side.facts[clarification.setting] = [
                _Fact(float(clarification.value), str(clarification.value), None, clarification.component, evidence, from_answer=True)
            ]
    for info in spec.symbols:
        name = symbol_name(info.symbol)
        side.symbols.setdefault(name, info.symbol)
        side.symbol_equations[name] = side.symbol_equations.get(name, frozenset()) | {
            tag for e in spec.equations if e.id in info.equations and e.section_id not in framing for tag in (e.number, e.label) if tag
        }
        settable = "\u0370" <= info.symbol[:1] <= "\u03ff" and info.symbol[:1] not in NOT_A_SETTING
        if settable and not info.value_given and name not in side.facts:
            equation = next((e for e in spec.equations if e.id in info.equations and e.section_id not in framing), None)
            if equation is not None:
                side.unstated[name] = Evidence(quote=equation.latex or equation.text, location=equation.location)
    settings_of = {}
    knowledge = requirements()
    for requirement in [*knowledge.training, *(r for rs in knowledge.by_component.values() for r in rs)]:
        for name in (requirement.setting, *requirement.stated_by):
            settings_of.setdefault(name, requirement.setting)
    reading = Reading.of(spec)
    # What a delegating sentence speaks of, in words the paper seldom uses (the checkerboard, not GMFlow).
    delegating = delegations(reading)
    spoken = {word for evidence, _ in delegating for word in re.findall(r"[a-z0-9]{4,}", evidence.quote.lower())}
    paragraphs_with = {word: sum(word in p.text.lower() for p in spec.paragraphs) for word in spoken - _GENERIC_WORDS}
    seldom = max(1, len(spec.paragraphs) // 10)
    side.delegated_words = frozenset(word for word, count in paragraphs_with.items() if count <= seldom)
    # Needed and neither stated nor delegated to another recipe: where the paper needs it, and for what.
    unstated_settings = {
        status.setting: (status, requirement, evidence)
        for status, requirement, evidence in setting_statuses(reading)
        if not status.stated and not status.delegated
    }
    for status, requirement, evidence in unstated_settings.values():
        for kind in requirement.stated_by_components:  # a schedule, an optimizer: a component states it
            side.unstated_kinds.setdefault(kind, (requirement.label, status.component, evidence))
    for code_name, setting in settings_of.items():
        if setting in unstated_settings and code_name not in side.facts:
            status, _, evidence = unstated_settings[setting]
            side.unstated.setdefault(code_name, evidence)
            if status.component != "training":
                side.unstated_for.setdefault(code_name, status.component)
    used = used_components(reading)
    for component in used:
        side.used.setdefault(component.kind, []).append(component.name)
        side.used_evidence.setdefault(component.kind, component.evidence)
        if component.kind == "schedule" and "warmup" not in component.name:
            side.schedules.append((component.name, scope_of(component.evidence.quote, component.name), component.evidence))
    for mention in spec.components:
        if mention.section_id not in framing:
            side.named_components.setdefault(mention.name, Evidence(quote=" ".join(mention.text.split()), location=mention.location))
    side.unmentioned = _unmentioned_techniques(spec, reading, used, delegating)
    side.unweighted = unweighted_terms(spec)
    side.distances = distance_terms(spec)
    side.held_out = _held_out_validation(spec, framing)
    side.over_time = objective_over_time(spec)
    side.library_defaults = next((evidence for evidence, _ in delegating if _LIBRARY_DEFAULTS_RE.search(evidence.quote)), None)
    side.learnable = learnable_symbols(spec)
    return side


# A sentence that keeps a library's defaults: "PyTorch's default parameters", "the default settings of Adam".
_LIBRARY_DEFAULTS_RE = re.compile(r"\bdefault\s+(?:hyper-?parameters|parameters|settings|values)\b", re.I)


def _unmentioned_techniques(
    spec: PaperSpec, reading: Reading, used: list, delegating: list[tuple[Evidence, str | None]]
) -> dict[str, Evidence]:
    """The techniques (hyperparameters.yaml `named_when_used`) no word of the paper names, each with
    where the paper describes its training: the place a reader looks for them. None when the paper
    describes no training or hands the training of its method's section to another recipe (a toy
    experiment's delegation speaks for that experiment's runs only: `delegated_words`)."""
    training = training_evidence(reading, used)
    optimizer = next((u for u in used if u.kind == "optimizer"), None)
    training_section = top_section(spec, optimizer.section_id) if optimizer else None
    if training is None or any(section in (None, training_section) for _, section in delegating):
        return {}  # the training follows another recipe, which may well turn them on
    words = " ".join(
        [p.text for p in spec.paragraphs]
        + [t.caption for t in spec.tables]
        + [cell for t in spec.tables for row in t.rows for cell in row]
        + [e.latex or e.text for e in spec.equations]
    )
    return {
        entry.name: training
        for entry in hyperparameter_vocabulary().entries.values()
        if entry.technique and not PhraseSet([(w, w) for w in entry.technique_words]).search(words)
    }


# "scaled by batch size divided by 256", "lr = base_lr × batch size / 256": a linear scaling rule.
_SCALING_RULE_RE = re.compile(
    r"(?:scal\w*|multipl\w*|\blr\s*=)[^.;]{0,60}?batch[ -]?size\s*(?:/|÷|\\slash|divided\s+by|over)\s*\$?\s*(?P<base>\d+)"
    r"(?!\s*(?:GPUs?|devices|nodes|processes|workers|machines)\b)",
    re.I,
)


def _derive(facts: dict[str, list[_Fact]]) -> None:
    """Values the paper states through others: a learning rate scaled by the batch (the base rate ×
    each stated batch / the rule's base), a warm-up given as a share of training (× each stated
    length). Each cites the rule's statement, shows how it was worked out ("4e-4 = 5e-5 × 2048 /
    256") and is stated for what both statements are stated for."""

    def combine(rule: _Fact, other: _Fact, value: float, shown: str, tolerance: float = 1e-6) -> _Fact | None:
        if rule.scope and other.scope and not (rule.scope & other.scope):
            return None  # stated for different experiments
        return _Fact(value, shown, None, rule.component, rule.evidence, scope=rule.scope | other.scope, tolerance=tolerance)

    derived: dict[str, list[_Fact]] = {}
    for rate in facts.get("learning_rate", []):
        if (rule := _SCALING_RULE_RE.search(rate.evidence.quote)) is not None:
            base = float(rule["base"])
            for batch in facts.get("batch_size", []):
                value = rate.value * batch.value / base
                fact = combine(rate, batch, value, f"{_number(value)} = {rate.shown} × {batch.shown} / {rule['base']}")
                derived.setdefault("learning_rate", []).extend([fact] if fact else [])
    for share in facts.get("warmup_share", []):
        for length, into in (("training_steps", "warmup_steps"), ("epochs", "warmup_epochs")):
            for total in facts.get(length, []):
                value = share.value * total.value
                fact = combine(share, total, value, f"{_number(value)} = {share.shown} of {total.shown}")
                derived.setdefault(into, []).extend([fact] if fact else [])
    # "a batch of 4M tokens ... trained on 200B tokens": the steps, as exact as the rounded counts allow.
    for total in facts.get("training_tokens", []):
        for batch in facts.get("batch_size", []):
            if batch.unit == "tokens" and batch.value > 0:
                value = total.value / batch.value
                tolerance = _rounding(total.shown) + _rounding(batch.shown)
                fact = combine(total, batch, value, f"about {_number(round(value))} = {total.shown} tokens / {batch.shown} tokens per step", tolerance)
                derived.setdefault("training_steps", []).extend([fact] if fact else [])
    for name, more in derived.items():
        facts.setdefault(name, []).extend(more)


def _rounding(shown: str) -> float:
    """How far a value as written may be from the exact one, relatively: half its last significant
    digit ("4M": 12.5%, "200B": 25%, "4.19M": about 0.1%)."""
    digits = re.sub(r"[^0-9]", "", re.match(r"[\d.,]*", shown.strip())[0])
    significant = digits.lstrip("0").rstrip("0")
    if not significant:
        return 0.0
    return 0.5 / int(significant)


def _caption_of(spec: PaperSpec, location: Location) -> str | None:
    """The caption of the table a row stands in."""
    for table in spec.tables:
        if location == table.location or location in table.row_locations:  # where its rows are located
            return table.caption
    return None


def _lead_sentence(spec: PaperSpec, sentence: str) -> str:
    """The first sentence of the paragraph a sentence stands in, past a run-in heading ("Training.");
    none when it is that sentence."""
    paragraph = next((p.text for p in spec.paragraphs if sentence in p.text), "")
    lead = next((part for part in paragraph.split(". ") if len(part.split()) > 3), "")
    return "" if sentence.startswith(lead) else lead


def _previous_sentences(spec: PaperSpec, sentences: set[str]) -> dict[str, str]:
    """The text before each of `sentences` in its paragraph, back to the sentence before it."""
    found = {}
    for sentence in sentences:
        for paragraph in spec.paragraphs:
            at = paragraph.text.find(sentence)
            if at > 0:
                found[sentence] = paragraph.text[:at].rstrip().rsplit(". ", 1)[-1]
                break
    return found


@functools.cache
def _kind_of(component: str) -> str | None:
    mentions = find_mentions(component)
    return mentions[0].kind if mentions else None


def facts_for(side: PaperFacts, site: ValueSite) -> list[_Fact]:
    """What the paper states for the setting a code value sets, in the measure the code counts in: "a
    batch size of 4M tokens" says nothing of `batch_size = 8` sequences, but of `tokens_per_batch`."""
    name = site.normalized_name or ""
    measure = code_measure(site.name, name)
    return [fact for fact in side.facts.get(name, []) if comparable(paper_measure(name, fact.unit), measure)]


def _plausible(setting: str, value: float) -> bool:
    """Whether a code value lies in the range the paper vocabulary gives its setting, as a value the
    paper states must (hyperparameters.yaml `range`): a batch of 0 tokens is no batch size."""
    entry = hyperparameter_vocabulary().entries.get(setting)
    return entry is None or entry.range is None or entry.range[0] <= value <= entry.range[1]


def _equivalent(code: float, fact: _Fact, site: ValueSite) -> bool:
    if math.isclose(code, fact.value, rel_tol=fact.tolerance, abs_tol=1e-12):
        return True
    if fact.unit == "%" and math.isclose(code, fact.value * 100, rel_tol=1e-6):
        return True  # "25%" written as 25
    if paper_measure(site.normalized_name or "", fact.unit) in POWER_OF_TWO_MEASURES:
        binary = binary_reading(fact.shown)
        if binary is not None and math.isclose(code, binary, rel_tol=1e-9):
            return True  # "0.25M tokens" computed as 128 * 2048 = 262,144
    # A reciprocal used as such: `inv_tau = 2.0` or `1 / 0.5` where the paper says τ = 0.5.
    reciprocal = "inv" in site.name.lower() or site.raw.replace(" ", "").startswith(("1/", "1./", "1.0/"))
    return reciprocal and math.isclose(code * fact.value, 1.0, rel_tol=1e-6)


def _split_batch(code: float, paper: float, site: ValueSite, file: FileIndex, context: WorkspaceContext) -> bool:
    """Whether the code's batch is the paper's split over accumulation steps (given in the same file)
    or over the processes its run starts: as many as the documented runs say (a plain `python` is one
    process unless the code spawns its own), else a power of two up to 64 in a distributed workspace.
    The batch size of a DataLoader, a trainer or a config is per process and per step."""
    if code <= 0 or any(word in site.name.lower() for word in ("global", "total", "effective")):
        return False
    ratio = paper / code
    if not ratio.is_integer() or ratio < 2:
        return False
    steps = {float(s.value) for s in file.values if _ACCUMULATION_RE.search(s.name) and isinstance(s.value, (int, float)) and s.value >= 1}
    if site.kind == "command-line":
        steps |= {v for name, v in command_numbers(site.call or "").items() if _ACCUMULATION_RE.search(name) and v >= 1}
    runs = _run_processes(site, context)
    if runs is not None:  # torchrun --nnodes=8 --nproc_per_node=8: 64 processes
        return any(math.isclose(code * processes * a, paper) for processes in runs for a in steps | {1.0})
    devices = ratio / next((a for a in steps if (ratio / a).is_integer()), 1.0)
    if devices == 1:
        return True
    return context.several_processes and devices <= 64 and int(devices) & (int(devices) - 1) == 0


def _run_processes(site: ValueSite, context: WorkspaceContext) -> set[int] | None:
    """How many processes each documented run giving the site's value starts: its command's, or for a
    config file those of the commands that load it; None when one of them cannot be told."""
    if site.kind == "command-line":
        commands: tuple[str, ...] = (site.call or "",)
    elif site.kind == "config-file":
        commands = context.config_commands.get(site.location.file, ())
    else:
        return None
    counts = {_processes_of(command, context.spawns_processes) for command in commands}
    return None if not counts or None in counts else counts  # type: ignore[return-value]


_ACCUMULATION_RE = re.compile(r"accum|update_freq|update-freq")
_PROCESS_FLAGS = (
    "nnodes", "nproc_per_node", "nproc-per-node", "num_processes", "num-processes", "gpus", "ngpus", "num_gpus", "num-gpus",
    "devices", "trainer.devices", "trainer.num_nodes",  # Lightning
)  # fmt: skip


def _processes_of(command: str, spawning: bool = True) -> int | None:
    """How many processes a launcher command starts (nodes × processes per node), when it says; one
    for a plain `python script.py` when the code (`spawning`) starts none of its own."""
    counts = [int(v) for name, v in command_numbers(command).items() if name in _PROCESS_FLAGS and v >= 1 and v.is_integer()]
    if counts:
        return math.prod(counts)
    return 1 if not spawning and _PLAIN_PYTHON_RE.match(command) else None


# `python train.py`, `CUDA_VISIBLE_DEVICES=0 python3 -u train.py`: one process (not `python -m torch.distributed.run`).
_PLAIN_PYTHON_RE = re.compile(r"^\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*python[\d.]*\s+(?!-m\s+torch\.distributed)")


class _SourceLines:
    """A file's lines as the check reads them: the text it was indexed from when given (an editor's
    unsaved buffer), else the file as saved, read once and only when an edit needs it."""

    def __init__(self, root: Path, file: str, source: str | None) -> None:
        self._root, self._file, self._source = root, file, source
        self._lines: list[str] | None = None

    def line(self, file: str, number: int) -> str | None:
        if file != self._file:
            return None
        if self._lines is None:
            try:
                source = self._source if self._source is not None else (self._root / file).read_text(encoding="utf-8")
                self._lines = SourceText(file, source).lines
            except (OSError, UnicodeDecodeError):
                self._lines = []
        return self._lines[number] if number < len(self._lines) else None


def _value_edit(lines: _SourceLines, site: ValueSite, new_text: str) -> TextEdit | None:
    """The exact span of the value's source text, so "use the paper's value" replaces only it."""
    line = lines.line(site.location.file, site.location.line)
    if line is None:
        return None
    start = line.find(site.raw, site.location.column)
    if start < 0:
        start = line.find(site.raw)
    if start < 0:
        return None
    span = CodeLocation(file=site.location.file, line=site.location.line, column=start, end_line=site.location.line, end_column=start + len(site.raw))
    return TextEdit(location=span, new_text=new_text)


def _site_id(kind: str, setting: str, location: CodeLocation) -> str:
    return f"{kind}:{setting}:{location.file}:{location.line + 1}"


@dataclass(frozen=True, slots=True)
class WorkspaceContext:
    """What a one-file check needs to know of the rest of the workspace."""

    loaded_configs: frozenset[str] = frozenset()  # config files some code is seen to load
    functions: frozenset[str] = frozenset()  # names of functions and classes the workspace defines
    directories: frozenset[str] = frozenset()  # every folder holding a file read
    several_processes: bool = False  # the workspace launches distributed runs (torch.distributed, accelerate)
    spawns_processes: bool = False  # its code starts processes itself (Lightning, mp.spawn): `python x.py` may be several
    # Per config file, the documented commands that load it (a README's `python main.py --config-name=x`).
    config_commands: dict[str, tuple[str, ...]] = field(default_factory=dict, hash=False, compare=False)
    folded_paths: str = ""  # every file's path, folded: what the runs' files are named for (scope.py::untold)
    path_words: frozenset[str] = frozenset()  # the folded words of every file's path (`celeb`: scope.py::abbreviates)
    has_scripts: bool = False  # the workspace has Python files: its notebooks are demos, not its runs
    # Words of file paths that only some files' paths have (checkerboard, not the package's name).
    rare_path_words: frozenset[str] = frozenset()
    # Per Python file, the folded paths of the config files that instantiate its classes (a
    # `target:` naming them): `configs/tokenizer_xl.yaml` says what runs diffusion_trainer.py makes.
    run_configs: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    # The values of the settings each file sets, by variant family (scope.py::variant_families).
    variants: dict[str, dict[tuple[str, ...], tuple[float, ...]]] = field(default_factory=dict, hash=False, compare=False)
    # Per command-line option (`n`, `learning_rate`), the help texts the workspace's parsers give it.
    option_help: dict[str, frozenset[str]] = field(default_factory=dict, hash=False, compare=False)
    # Per command-line option, the values the documented runs pass it (`model_variant`: llama2_7b, ...).
    launched: dict[str, frozenset[str]] = field(default_factory=dict, hash=False, compare=False)

    @classmethod
    def of(cls, index: CodeIndex) -> WorkspaceContext:
        return cls(
            loaded_configs=frozenset(ref.resolved for file in index.files for ref in file.config_references if ref.resolved),
            functions=frozenset(function.name for file in index.files for function in file.functions),
            directories=frozenset(str(parent) for file in index.files for parent in Path(file.file).parents if str(parent) != "."),
            several_processes=any(launches_processes(module) for file in index.files for module in file.imported_modules),
            spawns_processes=any(spawns_processes(module) for file in index.files for module in file.imported_modules),
            config_commands=_config_commands(index),
            folded_paths=" ".join(fold(file.file) for file in index.files),
            path_words=frozenset(word for file in index.files for word in file_words(file.file)),
            has_scripts=any(file.language == "python" for file in index.files),
            rare_path_words=_rare_path_words([file.file for file in index.files]),
            variants={file.file: _variants_of(file) for file in index.files},
            run_configs=_run_configs(index),
            option_help=_option_help(index),
            launched=_launched_options(index),
        )

    def runs_no_variant(self, site: ValueSite) -> bool:
        """Whether the site's branch is for a variant no documented run makes, while the documented runs
        choose among variants by that option (`--model_variant=llama2_70b`, never `llama3_70b`)."""
        chosen = self.launched.get(site.variant_of or "")
        return bool(chosen and site.variant) and not any(literal in chosen for literal in (site.variant or "").split())

    def variant_values(self, family: tuple[str, ...], file: str, own: dict[tuple[str, ...], tuple[float, ...]]) -> list[float]:
        """The values the family's sites give: `own`, those of `file` as it is now, and the rest's as last read."""
        return [*own.get(family, ()), *(v for other, families in self.variants.items() if other != file for v in families.get(family, ()))]


def _launched_options(index: CodeIndex) -> dict[str, frozenset[str]]:
    chosen: dict[str, set[str]] = {}
    for file in index.files:
        for launch in file.launches:
            for option, value in launch.options.items():
                chosen.setdefault(option, set()).add(value)
    return {option: frozenset(values) for option, values in chosen.items()}


def _option_help(index: CodeIndex) -> dict[str, frozenset[str]]:
    helps: dict[str, set[str]] = {}
    for file in index.files:
        for site in file.values:
            if site.help:
                helps.setdefault(snake_case(site.name), set()).add(site.help)
    return {option: frozenset(texts) for option, texts in helps.items()}


# Words a help text and a sentence share without saying what a setting is.
_HELP_FILLER = frozenset({"the", "of", "for", "a", "an", "to", "in", "on", "with", "and", "or", "by", "is", "used", "use", "value"})


def _words(text: str) -> set[str]:
    return {word.removesuffix("s") for word in re.findall(r"[a-z]{3,}", text.lower()) if word not in _HELP_FILLER}


def _help_telling_symbol(site: ValueSite, side: PaperFacts, context: WorkspaceContext) -> str | None:
    """The help text by which a one-letter option (`--n`, help "size of problem") is the paper's
    symbol it spells: a sentence stating that symbol says what the help says ("on different sizes
    of problem: $n \\in \\{100, 200, 500\\}$"). A letter alone could be anything."""
    if site.kind not in ("argparse-default", "command-line"):
        return None
    option = snake_case(site.name)
    if len(option) != 1 or option not in side.facts:
        return None
    helps = {site.help} if site.help else context.option_help.get(option, frozenset())
    if len(helps) != 1:
        return None
    [help_text] = helps
    words = _words(help_text)
    if len(words) < 2 or not any(words <= _words(fact.evidence.quote) for fact in side.facts[option]):
        return None
    return help_text


def _config_commands(index: CodeIndex) -> dict[str, tuple[str, ...]]:
    commands: dict[str, list[str]] = {}
    for file in index.files:
        for reference in file.config_references:
            if reference.resolved and reference.command:
                commands.setdefault(reference.resolved, []).append(reference.command)
    return {config: tuple(dict.fromkeys(found)) for config, found in commands.items()}


def _run_configs(index: CodeIndex) -> dict[str, str]:
    """Per Python file, the folded paths of the config files whose targets name one of its classes
    (a class several files define names none of them)."""
    defined: dict[str, list[str]] = {}
    for file in index.files:
        if file.language == "python":
            for function in file.functions:
                if function.kind == "class" and "." not in function.qualname:
                    defined.setdefault(function.name, []).append(file.file)
    configs: dict[str, set[str]] = {}
    for file in index.files:
        if file.language not in ("python", "shell", "markdown", "notebook"):
            for name in file.imported_names:
                if len(defined.get(name, ())) == 1:
                    configs.setdefault(defined[name][0], set()).add(fold(file.file))
    return {python: " ".join(sorted(paths)) for python, paths in configs.items()}


def _path_words(path: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]{4,}", path.lower()))


def _rare_path_words(paths: list[str]) -> frozenset[str]:
    counts: dict[str, int] = {}
    for path in paths:
        for word in _path_words(path):
            counts[word] = counts.get(word, 0) + 1
    return frozenset(word for word, count in counts.items() if count * 4 < len(paths))


def _variants_of(file: FileIndex) -> dict[tuple[str, ...], tuple[float, ...]]:
    families: dict[tuple[str, ...], list[float]] = {}
    for site in file.values:
        if site.live and isinstance(site.value, (int, float)) and not isinstance(site.value, bool):
            for family in variant_families(site):
                families.setdefault(family, []).append(float(site.value))
    return {family: tuple(values) for family, values in families.items()}


def _run_of(site: ValueSite, file: FileIndex, context: WorkspaceContext) -> str:
    """Which run of the code a value is the value of, in words."""
    if site.kind == "command-line" and site.call:
        return f"the run of `{shorten(site.call, 120)}`"
    commands = context.config_commands.get(file.file, ())
    if commands:
        more = f" (and {len(commands) - 1} more)" if len(commands) > 1 else ""
        return f"the run of `{shorten(commands[0], 120)}`{more}, which loads {file.file}"
    where = f" under `{site.variant_of} == {site.variant}`" if site.variant and site.variant_of else ""
    return f"the value {file.file} gives{where}, no documented command changing it"


def _width_of_a_model(site: ValueSite, side: PaperFacts, own_variants: dict[tuple[str, ...], tuple[float, ...]]) -> bool:
    """`LLaMAConfig(emb_dim=8192, nlayers=80)`: an embedding dimension given to the callee that takes the
    model's depth is the model's width (its hidden size), when the paper states no embedding dimension.
    A `depth=0` is a layer's index (`MultiheadDiffAttn(embed_dim=1024, depth=0)`), not a model's depth."""
    if site.normalized_name != "embedding_dim" or "embedding_dim" in side.facts or "hidden_size" not in side.facts or not site.call:
        return False
    return any(
        family[0] == "num_layers" and family[2:] == (site.location.file, site.call) and max(depths) >= 2 for family, depths in own_variants.items()
    )


def _is_symbol_of_the_method(site: ValueSite, context: WorkspaceContext) -> bool:
    """`alpha` passed to the workspace's own mix_batch is the paper's α; `plt.plot(alpha=0.5)` is not."""
    if site.kind != "keyword" or site.component is not None:
        return True
    return site.call is not None and site.call.rsplit(".", 1)[-1] in context.functions


def _cites_equation_of(site: ValueSite, cited: dict[str, set[str]], equations: frozenset[str]) -> bool:
    """`rho=0.1` of `ConsistencyLoss.__init__` when the class's docstring cites Eq. (4), which uses ρ;
    a module's constant `RHO = 0.1` when the module cites it anywhere."""
    if site.call is None:
        return any(targets & equations for targets in cited.values())
    return any((site.call == owner or site.call.startswith(owner + ".")) and targets & equations for owner, targets in cited.items())


def _switched_off(setting: str, file: FileIndex) -> bool:
    """`use_ema: false` beside `ema_decay: 0.9999`: the technique's value is given, the technique off."""
    technique = hyperparameter_vocabulary().entries[setting].technique
    return any(
        site.value is False and (switched := technique_switched(site.name)) and hyperparameter_vocabulary().entries[switched].technique == technique
        for site in file.values
    )


def _delegated_run(site: ValueSite, side: PaperFacts, context: WorkspaceContext) -> bool:
    """A run of the experiment a sentence hands to another recipe (the checkerboard's)."""
    return bool(_path_words(site.location.file) & side.delegated_words & context.rare_path_words)


def _where_given(site: ValueSite, file: FileIndex, by_line: dict[tuple[str, int], list[ValueSite]]) -> ValueSite:
    """`AdamW(..., weight_decay=weight_decay)`, `${max_seq_len}`: a name passed through is checked as
    what it is passed to (AdamW's weight decay) but reported where its value is given, once."""
    origin = site.resolved_from
    if origin is None or origin.file != file.file:
        return site
    here = [o for o in by_line.get((file.file, origin.line), []) if o is not site]
    # The site the value is written at (`class_drop=0.1`, whatever its name says), else one of its setting on that line.
    given = next((o for o in here if o.location.column == origin.column), None) or next(
        (o for o in here if o.normalized_name == site.normalized_name), None
    )
    if given is None:
        return site
    if is_training_setting(site.normalized_name or "") and site_stage(given) not in (None, "training"):
        return given  # `def aug_prompt(..., lr=0.1)` of an inference pipeline, passed on to an optimizer there
    return site.model_copy(update={"name": given.name, "raw": given.raw, "location": given.location, "resolved_from": None, "kind": given.kind})


def _check_library_default(site: ValueSite, side: PaperFacts) -> Finding | None:
    """A value the code passes where the paper keeps the library's defaults ("AdamW with PyTorch's
    default parameters"): compared with that very call's default, where paperlens knows it."""
    if side.library_defaults is None or site.kind != "keyword" or not site.call or site.normalized_name in side.facts:
        return None
    signature = code_vocabulary().signature(site.call)
    parameter, _, element = site.name.partition("[")
    quote = side.library_defaults.quote.lower()
    if signature is None or signature.component is None or parameter not in signature.settings:
        return None  # not a known component's setting (a DataLoader's workers)
    if signature.component.lower() not in quote and not (signature.kind == "optimizer" and "optimizer" in quote):
        return None  # "AdamW with PyTorch's default parameters" keeps AdamW's, not a LayerNorm's
    default = signature.defaults.get(parameter)
    if element and isinstance(default, (list, tuple)):
        index = int(element.rstrip("]"))
        default = default[index] if index < len(default) else None
    numbers = (default, site.value)
    if any(isinstance(number, bool) or not isinstance(number, (int, float)) for number in numbers):
        return None
    if not site.live or site.overridden or math.isclose(site.value, default, rel_tol=1e-9, abs_tol=1e-15):
        return None
    return Finding(
        id=_site_id("divergence", site.normalized_name or parameter, site.location),
        kind="divergence",
        severity="warning",
        confidence=0.7,
        confidence_note=f"the paper keeps the library's defaults; {site.call}'s {parameter} defaults to {_number(float(default))}",
        message=f"{site.name} = {site.raw} here, but the paper keeps {signature.component}'s defaults ({parameter} {_number(float(default))})",
        setting=site.normalized_name or parameter,
        component=site.component,
        code=site.location,
        code_value=site.raw,
        paper_value=_number(float(default)),
        paper=[side.library_defaults],
        fixes=[Fix(kind="record-deviation", title=f"Record {site.name} = {site.raw} as a deliberate deviation")],
    )


def _check_loss_weight(site: ValueSite, side: PaperFacts) -> Finding | None:
    """A weight on a loss term the paper's objective adds with no weight (`kl_weight = 1e-6`)."""
    term = weighted_term(site) if side.unweighted else None
    if term not in side.unweighted or not site.live or site.overridden or site_stage(site) not in (None, "training"):
        return None
    if not isinstance(site.value, (int, float)) or isinstance(site.value, bool) or site.value == 1:
        return None  # 1 is the sum as written
    finding = _site_divergence(
        site, "loss_weight", f"{site.name} = {site.raw} weights the {term.upper()} loss, which the paper's objective adds with no weight",
        f"the term is matched by the weight's name (`{site.name}` → L_{term.upper()})", side.unweighted[term], "1", id_part=f"loss_weight:{term}",
    )  # fmt: skip
    finding.fixes.append(Fix(kind="ask-authors", title=f"Ask the authors which weight the {term.upper()} loss had"))
    return finding


def _site_divergence(
    site: ValueSite, setting: str, message: str, note: str, evidence: Evidence, paper_value: str | None = None, *, id_part: str | None = None
) -> Finding:
    """A warning that a site's value does what the paper's `evidence` says otherwise, to record if meant."""
    return Finding(
        id=_site_id("divergence", id_part or setting, site.location),
        kind="divergence",
        severity="warning",
        confidence=0.7,
        confidence_note=note,
        message=message,
        setting=setting,
        code=site.location,
        code_value=site.raw,
        paper_value=paper_value,
        paper=[evidence],
        fixes=[Fix(kind="record-deviation", title=f"Record {site.name} = {site.raw} as a deliberate deviation")],
    )


# A sentence that sets a validation split apart: "Fifteen percent of the dataset is allocated for
# validation", "we hold out 10% of the training set as a validation set".
_VALIDATION_RE = re.compile(r"\bvalidation\b|\bheld[- ]out\b|\bhold[- ]out\b", re.I)
# What sets it apart: a verb that allocates (a share alone, "76.1% on the validation set", does not).
_SET_APART_RE = re.compile(r"\b(?:allocat\w*|held out|hold\w* out|reserv\w*|set aside|split off|randomly (?:select|sampl|split|chos)\w*)", re.I)
# A name or key of test data: `x_test`, `test_loader`, `testset`, `ds["test"]`.
_TEST_DATA_RE = re.compile(r"(?:^|[^a-z])test(?:set|loader|data)?(?:[^a-z]|$)", re.I)


def _held_out_validation(spec: PaperSpec, framing: frozenset[str]) -> Evidence | None:
    for paragraph in spec.paragraphs:
        if paragraph.section_id in framing:
            continue
        for sentence in sentences_of(paragraph):
            text = sentence.plain.text
            if _VALIDATION_RE.search(text) and _SET_APART_RE.search(text) and not _TEST_DATA_RE.search(text):
                return Evidence(quote=" ".join(text.split()), location=sentence.location())
    return None


def _check_validation_data(site: ValueSite, side: PaperFacts) -> Finding | None:
    """A training run that validates on its test data (`validation_data=(x_test, y_test)`) where the
    paper sets a validation split apart: what it tunes or stops on is the data it reports."""
    if site.normalized_name != "validation_data" or side.held_out is None or not site.live or site.overridden:
        return None
    if site_stage(site) not in (None, "training") or not _TEST_DATA_RE.search(site.raw):
        return None  # an evaluation script's `Trainer(eval_dataset=test_ds)` evaluates, as it should
    message = f"{site.name} = {site.raw} validates on the test data, but the paper sets a validation split apart"
    return _site_divergence(site, "validation_data", message, "the data is told by its name", side.held_out)


def _check_timestep_start(site: ValueSite, side: PaperFacts) -> Finding | None:
    """`timesteps = torch.randint(999, T, ...)` in training: every step draws t from the schedule's
    end only, where the paper's objective averages over all of it (a range left from a test run)."""
    if site.normalized_name != "timestep_start" or side.over_time is None or not site.live:
        return None
    if not isinstance(site.value, (int, float)) or isinstance(site.value, bool) or site.value <= 1 or site_stage(site) not in (None, "training"):
        return None  # from 0 (or 1, counting from one): the whole schedule
    message = f"{site.name} = randint({site.raw}, …) draws only timesteps from {site.raw} on, but the paper's objective takes its expectation over every t"
    return _site_divergence(site, "timestep_start", message, "the timestep is told by its name and the randint it is drawn with", side.over_time, "0")


def _check_loss_choice(site: ValueSite, side: PaperFacts) -> Finding | None:
    """A setting choosing a distance (`reconstruction_loss: "l1"`) other than the one the paper's
    objective sums (L_MSE), when the objective sums one only."""
    if len(side.distances) != 1 or not site.live or site.overridden or site_stage(site) not in (None, "training"):
        return None
    chosen = chosen_distance(site)
    [(paper_term, evidence)] = side.distances.items()
    if chosen is None or chosen == paper_term:
        return None
    message = f"{site.name} = {site.raw} chooses an {chosen.upper()} loss, but the paper's objective has the {paper_term.upper()} term"
    note = f"the distance is read from the setting's value (`{site.raw}` → {chosen.upper()})"
    return _site_divergence(site, "loss", message, note, evidence, paper_term.upper())


def _check_value(
    lines: _SourceLines,
    site: ValueSite,
    side: PaperFacts,
    context: WorkspaceContext,
    file: FileIndex,
    cited: dict[str, set[str]],
    own_variants: dict[tuple[str, ...], tuple[float, ...]],
) -> Finding | None:
    if not site.live or site.overridden or not isinstance(site.value, (int, float)) or isinstance(site.value, bool):
        return None
    if context.runs_no_variant(site):
        return None
    help_told = _help_telling_symbol(site, side, context) if site.normalized_name is None else None
    if help_told is not None:
        site = site.model_copy(update={"normalized_name": snake_case(site.name)})
    if _width_of_a_model(site, side, own_variants):
        site = site.model_copy(update={"normalized_name": "hidden_size"})
    name = site.normalized_name
    if name is None:
        return None
    if name in side.symbols and not _is_symbol_of_the_method(site, context):
        return None
    if is_training_setting(name) and site_stage(site) not in (None, "training"):
        return None  # a sampler's steps, a metric's batch, a caching script's batch: other quantities
    if outside_the_paper(file.file, context.directories, side.names, side.folded_prose):
        return None  # a run of an experiment the paper never reports
    read_by_code = file.file in context.loaded_configs
    code_value = float(site.value)
    if not _plausible(name, code_value):
        return None  # `self.tokens_per_batch = 0` before the first batch: a placeholder, no setting
    if name in side.facts:
        facts = facts_for(side, site)
        if not facts:
            return None  # the paper states it only in another measure ("4M tokens"): another quantity
        variant = for_a_variant(site, side.names | {name for fact in facts for name in fact.scope})
        if variant is not None and any(fact.scope for fact in facts):
            # A branch for one variant (`if model_variant == "llama2_70b":`) is that variant's run: only
            # what the paper states for it applies, and nothing when the paper never reports it.
            facts = [f for f in facts if f.scope and all(named_in(n, fold(site.variant or ""), variant) for n in f.scope)]
            if not facts:
                return None
        # "The decoder is a DiT with a patch size of 2" says nothing of an encoder's patch size.
        here = site_context(site) + context.run_configs.get(file.file, "")
        here_words = file_words(site.location.file)  # a short form in its path (`delete_celeb.yaml`), not in a name
        told = [
            fact
            for fact in facts
            if fits(fact.scope, here, here_words) and not (fact.scope and names_another_experiment(site, fact.scope, side.names, partly=True))
        ]
        # Stated for a model or dataset no run's files are named for (a GTrXL, CIFAR-10 in a repository
        # of train.py and tlm.py): no run can be told apart by it, so it speaks for every run that
        # names none of the paper's other experiments.
        unknown = [
            fact
            for fact in facts
            if fact not in told
            and untold(fact.scope, context.folded_paths, context.path_words)
            and not names_another_experiment(site, fact.scope, side.names)
        ]
        # A run that names its experiment (configs/vit_l.yaml) does not agree with the values of the
        # experiments other runs' files are named for (ViT-B's); it agrees with any other value stated.
        identified = any(fact.scope for fact in told)
        agreeing = [
            f
            for f in facts
            if f in told or not identified or not f.scope or not any(named_in(n, context.folded_paths, context.path_words) for n in f.scope)
        ]
        if any(_equivalent(code_value, fact, site) for fact in agreeing):
            return None
        if is_part_setting(name) and site.name.rsplit(".", 1)[-1].lower().startswith("max") and all(code_value >= f.value for f in agreeing):
            return None  # `max_seq_len = 2048` bounds the paper's 256: a capacity, not the length
        if name == "batch_size" and any(_split_batch(code_value, fact.value, site, file, context) for fact in agreeing):
            return None  # 256 per process on 8 GPUs is the paper's 2048
        facts = [fact for fact in facts if fact in told or fact in unknown]  # in the paper's order
        if not facts:
            return None
        alternatives = [v for family in variant_families(site) for v in context.variant_values(family, file.file, own_variants)]
        if any(_equivalent(v, f, site) for v in alternatives for f in facts):
            return None  # a variant beside the one the paper reports (DiT-XL/4 beside DiT-XL/2, a head beside the backbone)
        notes: list[str] = []
        confidence = 0.9
        distinct = sorted({fact.value for fact in facts})
        # Which of the paper's experiments this run is cannot be told: information, not an error.
        experiment_unknown = len(distinct) > 1 and not facts[0].from_answer
        if experiment_unknown:
            confidence = min(confidence, SEVERAL_VALUES_CONFIDENCE)
            notes.append(f"the paper states several values ({', '.join(_number(v) for v in distinct)}); which experiment this code runs is not known")
        elif side.several_experiments and not any(fact in told for fact in facts):
            # Stated for one of the paper's experiments, which no file of this run names: an error
            # needs the run identified.
            confidence = min(confidence, UNIDENTIFIED_RUN_CONFIDENCE)
            notes.append(f"the paper states it for {' '.join(sorted(facts[0].scope))}; no file of this run names that experiment")
        if help_told is not None:
            confidence = min(confidence, SYMBOL_NAMES_CONFIDENCE)
            notes.append(f"matched by the symbol's name `{site.name}` and the option's help “{help_told}”")
        elif name in side.symbols and name not in ("temperature",):
            confidence = min(confidence, SYMBOL_NAMES_CONFIDENCE)
            notes.append(f"matched by the symbol's name `{site.name}` only")
        processes = _processes_of(site.call or "") if site.kind == "command-line" else None
        if name == "batch_size" and processes and processes > 1:
            notes.append(f"{site.raw} per process × {processes} processes = {_number(code_value * processes)} per step")
        if site.kind == "config-file" and not read_by_code:
            confidence = min(confidence, 0.8)
            notes.append("read from a config file that no code is seen to load")
        if site.component and facts[0].component and site.component != facts[0].component:
            confidence = min(confidence, 0.7)
            notes.append(f"the paper states it for {facts[0].component}, the code passes it to {site.component}")
        fact = facts[0]
        named = sorted(fact.scope, key=lambda name: (fold(fact.evidence.quote).find(name) % 10_000, name))  # as the paper orders them
        experiment = f"the paper's {' '.join(named)} experiment" if named else "the paper's statement (for every experiment)"
        shown = readable(fact.shown) if fact.shown else ""
        paper_value = _number(fact.value) + (f" ({shown})" if shown and shown != _number(fact.value) else "")
        source = "an author's answer" if fact.from_answer else "the paper"
        edit = _value_edit(lines, site, _number(fact.value))
        return Finding(
            id=_site_id("divergence", name, site.location),
            kind="divergence",
            severity="info" if experiment_unknown else "error" if confidence >= 0.75 else "warning",
            confidence=confidence,
            confidence_note="; ".join(notes) or None,
            message=f"{site.name} = {site.raw} here, but {source} says {name.replace('_', ' ')} = {paper_value}",
            setting=name,
            component=site.component,
            code=site.location,
            code_value=site.raw,
            paper_value=_number(fact.value),
            paper=list({(f.evidence.quote, f.evidence.location.file, f.evidence.location.line): f.evidence for f in facts}.values()),  # one sentence may state several
            compares=f"{experiment} with {_run_of(site, file, context)}",
            fixes=[
                Fix(kind="use-paper-value", title=f"Use the paper's {name.replace('_', ' ')} ({_number(fact.value)})", edit=edit),
                Fix(kind="record-deviation", title=f"Record {site.name} = {site.raw} as a deliberate deviation"),
            ],
        )
    if name in side.unstated:
        evidence = side.unstated[name]
        needed_by = side.unstated_for.get(name)
        if _delegated_run(site, side, context):
            return None
        if needed_by is None and name in side.symbols and not _cites_equation_of(site, cited, side.symbol_equations.get(name, frozenset())):
            return None  # a name that spells a symbol is no evidence of being it, unless its function cites the equation
        confidence, notes = 0.8, []
        if needed_by:
            # Whose setting this is: the call's component, else what the name carries (`opt_eps`).
            kind = _kind_of(site.component) if site.component else kind_named_by(site.name)
            if kind is None and name in settings_shared_across_kinds():
                return None  # a bare `eps`: an optimizer's, a norm's or a division's guard
            if kind is not None and kind != _kind_of(needed_by):
                return None  # the paper leaves AdamW's ε open; this ε belongs to a norm
            if kind is None:
                confidence = SYMBOL_NAMES_CONFIDENCE
                notes.append(f"the paper leaves it open for {needed_by}; this value may belong to something else")
        shown = side.symbols.get(name, name.replace("_", " "))
        processes = _processes_of(site.call or "") if site.kind == "command-line" and name == "batch_size" else None
        if processes and processes > 1:
            notes.append(f"{site.raw} per process × {processes} processes = {_number(code_value * processes)} per step")
        return Finding(
            id=_site_id("guess", name, site.location),
            kind="guess",
            severity="warning",
            confidence=confidence,
            confidence_note="; ".join(notes) or None,
            message=f"{site.name} = {site.raw} is a guess: the paper uses {shown} but never states its value",
            setting=name,
            component=site.component,
            code=site.location,
            code_value=site.raw,
            paper=[evidence],
            fixes=[
                Fix(kind="record-assumption", title=f"Record {site.name} = {site.raw} as an explicit assumption"),
                Fix(kind="ask-authors", title=f"Ask the authors which {name.replace('_', ' ')} they used"),
            ],
        )
    if name in side.unmentioned and site_stage(site) in (None, "training") and code_value != 0:
        if _switched_off(name, file):
            return None
        return _unmentioned_finding(site, name, side, context)
    return None


def _unmentioned_finding(site: ValueSite, setting: str, side: PaperFacts, context: WorkspaceContext) -> Finding | None:
    """A value or a switch that turns on a technique no word of the paper names (clipping, an EMA)."""
    if _delegated_run(site, side, context):
        return None
    technique = hyperparameter_vocabulary().entries[setting].technique
    return Finding(
        id=_site_id("guess", setting, site.location),
        kind="guess",
        severity="info",
        confidence=0.5,
        confidence_note=f"no word of the paper names {technique}; its training is described at {side.unmentioned[setting].location.short()}",
        message=f"{site.name} = {site.raw} turns on {technique}, which the paper never mentions",
        setting=setting,
        component=site.component,
        code=site.location,
        code_value=site.raw,
        paper=[side.unmentioned[setting]],
        fixes=[
            Fix(kind="record-assumption", title=f"Record {site.name} = {site.raw} as an explicit assumption"),
            Fix(kind="ask-authors", title=f"Ask the authors whether they used {technique}"),
        ],
    )


_WEIGHTING_RE = re.compile(r"\bweigh|\bcoefficient|λ|\\lambda", re.I)
# An option's help that says it weights a loss: "Loss weight on the red channel", "weight of the KL loss".
_LOSS_WEIGHT_HELP_RE = re.compile(r"\bloss\s+weight|\bweight\w*\s+(?:of|on|for)\s+(?:the\s+)?(?:[\w-]+\s+){0,3}?loss\b", re.I)
_HELP_FILLER = frozenset("loss losses weight weights weighting the for and term".split())


def _check_unmentioned_loss_weight(site: ValueSite, side: PaperFacts, context: WorkspaceContext) -> Finding | None:
    """`--r_weight 5.0`, help "Loss weight on the red channel": a weight on a loss the paper never
    mentions (no sentence weighting anything names what the help says it weights)."""
    if site.kind not in ("argparse-default", "command-line") or not site.live or site.overridden:
        return None
    if not isinstance(site.value, (int, float)) or isinstance(site.value, bool) or site.value in (0, 1):
        return None  # off, or the sum as written
    helps = {site.help} if site.help else context.option_help.get(snake_case(site.name), frozenset())
    if len(helps) != 1 or side.used_evidence.get("loss") is None:
        return None
    [help_text] = helps
    subject = {word for word in re.findall(r"[a-z]{3,}", help_text.lower()) if word not in _HELP_FILLER}
    if not _LOSS_WEIGHT_HELP_RE.search(help_text) or not subject:
        return None
    if any(re.search(rf"\b{word}", sentence) for sentence in side.weighting_sentences for word in subject):
        return None  # the paper weights what the option weights: a value to compare, not a guess
    return Finding(
        id=_site_id("guess", "loss_weight", site.location),
        kind="guess",
        severity="info",
        confidence=0.5,
        confidence_note=f"the option's help says it weights a loss (“{help_text}”); no sentence of the paper weighting anything names it",
        message=f"{site.name} = {site.raw} weights a loss (“{help_text}”), which the paper never mentions",
        setting="loss_weight",
        code=site.location,
        code_value=site.raw,
        paper=[side.used_evidence["loss"]],
        fixes=[
            Fix(kind="record-assumption", title=f"Record {site.name} = {site.raw} as an explicit assumption"),
            Fix(kind="ask-authors", title=f"Ask the authors whether they weighted the loss ({help_text})"),
        ],
    )


def _check_switch(site: ValueSite, side: PaperFacts, context: WorkspaceContext, file: FileIndex) -> Finding | None:
    """`use_ema = True`, `diffusion_use_ema=True`: a switch turning on a technique the paper never
    names, when no value of that technique in the file says so already."""
    if site.value is not True or not site.live or site.overridden or site_stage(site) not in (None, "training"):
        return None
    setting = technique_switched(site.name)
    if setting is None or setting not in side.unmentioned:
        return None
    technique = hyperparameter_vocabulary().entries[setting].technique
    valued = {name for name, entry in hyperparameter_vocabulary().entries.items() if entry.technique == technique}
    if any(other.normalized_name in valued and other.live and other.value for other in file.values):
        return None  # `ema_decay: 0.999` beside it is reported
    return _unmentioned_finding(site, setting, side, context)


# Kinds whose schemes a variable's name says in one word (`he_init`, `xavier_initializer`); a
# norm's or an activation's words (`layer`, `in`) say too many other things.
_NAMED_BY_A_WORD_KINDS = ("initialization",)


def _check_named_component(lines: _SourceLines, site: ComponentSite, side: PaperFacts, context: WorkspaceContext) -> Finding | None:
    """`He_initializer = GlorotNormal()`: a variable named for a scheme the paper uses, holding
    another. Whatever the name is passed to gets the call's scheme, not the one the name promises."""
    if site.kind not in _NAMED_BY_A_WORD_KINDS or not site.live or not _in_a_training_run(site.location.file, context):
        return None
    line = lines.line(site.location.file, site.location.line) or ""
    assigned = re.search(rf"(?<![\w.])(?P<target>[A-Za-z_]\w*)\s*=\s*{re.escape(site.symbol)}\s*\(", line)
    if assigned is None:
        return None
    target = assigned["target"]
    named = {found: word for word in snake_case(target).split("_") if (found := code_vocabulary().text_component(site.kind, word))}
    if len(named) != 1:
        return None
    [(promised, word)] = named.items()
    if promised == site.name or promised not in side.named_components:
        return None
    return Finding(
        id=_site_id("divergence", site.kind, site.location),
        kind="divergence",
        severity="warning",
        confidence=0.8,
        confidence_note=f"the scheme promised is read from the name `{target}`",
        message=f"{target} is {site.symbol}() ({site.name}), but its name says {promised} (`{word}`), which the paper names",
        setting=site.kind,
        component=site.name,
        code=site.location,
        code_value=site.name,
        paper_value=promised,
        paper=[side.named_components[promised]],
        fixes=[Fix(kind="record-deviation", title=f"Record {target} = {site.name} as a deliberate deviation")],
    )


def _decoupled_decay_unknown(site: ComponentSite, values: dict[tuple[str, int], list[ValueSite]]) -> bool:
    """AdamW with a weight decay of 0 is Adam: with the decay passed as a name whose value is not known
    here, or as 0, the code may well run the paper's Adam. Without one, AdamW decays by its default."""
    decays = [v for v in values.get((site.location.file, site.location.line), []) if v.normalized_name == "weight_decay"]
    return any(not isinstance(v.value, (int, float)) or v.value == 0 for v in decays)


def _makes_runs(path: str, context: WorkspaceContext) -> bool:
    """Not a test nor vendored code, and not a notebook beside the scripts that make the runs (there
    it is a demo or an analysis)."""
    return not holds_no_run(path) and not (path.endswith(".ipynb") and context.has_scripts)


def _in_a_training_run(path: str, context: WorkspaceContext) -> bool:
    """Whether a file's code is part of the training runs: it makes runs, and is no evaluation's or
    inference pipeline's file (a metric's classifier's Adam)."""
    where = PurePosixPath(path)
    return _makes_runs(path, context) and stage_named_by([where.stem, *reversed(where.parent.parts)]) in (None, "training")


def _check_components(
    sites: list[ComponentSite],
    side: PaperFacts,
    context: WorkspaceContext,
    values: dict[tuple[str, int], list[ValueSite]] | None = None,
) -> list[Finding]:
    """A component of a checked kind in the training runs that is not the one the paper names;
    `values` are the value sites by file and line, for what the call passes (AdamW's weight decay)."""
    findings = []
    for kind in CHECKED_COMPONENT_KINDS:
        paper_names = set(side.used.get(kind, []))
        live = [site for site in sites if site.kind == kind and site.live and _in_a_training_run(site.location.file, context)]
        # One named component of the kind, and the code never uses it: then the code's is a divergence.
        if len(paper_names) != 1 or any(site.name in paper_names for site in live):
            continue
        [paper_name] = paper_names
        reported: set[tuple[str, str]] = set()
        for site in live:
            if site.name == "AdamW" and paper_name == "Adam" and _decoupled_decay_unknown(site, values or {}):
                continue
            if (site.location.file, site.name) in reported:
                continue  # `AdamW8bit if use_8bit else AdamW`: one run's optimizer, said once per file
            reported.add((site.location.file, site.name))
            findings.append(
                Finding(
                    id=_site_id("divergence", kind, site.location),
                    kind="divergence",
                    severity="error",
                    confidence=0.9,
                    message=f"{site.symbol} is {site.name}, but the paper uses {paper_name}",
                    setting=kind,
                    component=site.name,
                    code=site.location,
                    code_value=site.name,
                    paper_value=paper_name,
                    paper=[side.used_evidence[kind]],
                    fixes=[Fix(kind="record-deviation", title=f"Record {site.name} as a deliberate deviation")],
                )
            )
    findings += _check_schedules(sites, side, context)
    for kind, (label, needed_by, evidence) in side.unstated_kinds.items():
        guessed_in: set[str] = set()  # once per file
        for site in sites:
            if site.kind != kind or not site.live or site.location.file in guessed_in or not _in_a_training_run(site.location.file, context):
                continue
            guessed_in.add(site.location.file)
            subject = "the training" if needed_by == "training" else needed_by
            findings.append(
                Finding(
                    id=_site_id("guess", kind, site.location),
                    kind="guess",
                    severity="warning",
                    confidence=0.8,
                    message=f"{site.symbol} ({site.name}) is a guess: the paper uses {subject} but never states its {label}",
                    setting=kind,
                    component=site.name,
                    code=site.location,
                    code_value=site.name,
                    paper=[evidence],
                    fixes=[
                        Fix(kind="record-assumption", title=f"Record {site.name} as an explicit assumption"),
                        Fix(kind="ask-authors", title=f"Ask the authors which {label} they used"),
                    ],
                )
            )
    return findings


def _same_decay(paper: str, code: str) -> bool:
    """A polynomial decay's power is 1 unless set (PyTorch's PolynomialLR, Hugging Face's): linear."""
    return paper == code or {paper, code} == {"linear decay", "polynomial decay"}


def _check_schedules(sites: list[ComponentSite], side: PaperFacts, context: WorkspaceContext) -> list[Finding]:
    """A learning-rate decay in a training run that is not the one the paper names for that run's
    experiment: a decay stated for an experiment ("MNIST T-Shirt DDPMs ... with cosine decay") is
    compared with the runs whose files name it; one stated for no experiment, when it is the only one,
    with every run, and only when no run uses it."""
    live = [
        site
        for site in sites
        if site.kind == "schedule" and "warmup" not in site.name and site.name != HAND_WRITTEN_SCHEDULE
        and site.live and _in_a_training_run(site.location.file, context)
        and "baseline" not in file_words(site.location.file)  # another method's run
    ]  # fmt: skip
    scoped = [(name, scope, evidence) for name, scope, evidence in side.schedules if scope]
    unscoped = {name for name, scope, _ in side.schedules if not scope}
    findings = []
    for site in live:
        here = fold(f"{site.location.file} {site.symbol}")
        words = file_words(site.location.file)
        stated = [(name, evidence) for name, scope, evidence in scoped if fits(scope, here, words)]
        if not stated and len(unscoped) == 1 and not any(other.name in unscoped for other in live):
            stated = [(name, evidence) for name, scope, evidence in side.schedules if not scope]
        if not stated or any(_same_decay(name, site.name) for name, _ in stated) or len({name for name, _ in stated}) != 1:
            continue
        same_file = [other.name for other in live if other.location.file == site.location.file]
        if stated[0][0] in same_file:
            continue  # `cosine if args.cosine else step`: the paper's is one of the file's choices
        paper_name, evidence = stated[0]
        findings.append(
            Finding(
                id=_site_id("divergence", "schedule", site.location),
                kind="divergence",
                severity="warning",
                confidence=0.7,
                message=f"the learning rate follows a {site.name} schedule here"
                + (f" ({site.symbol})" if site.symbol != site.name else "")
                + f", but the paper uses {paper_name}",
                setting="schedule",
                component=site.name,
                code=site.location,
                code_value=site.name,
                paper_value=paper_name,
                paper=[evidence],
                fixes=[Fix(kind="record-deviation", title=f"Record the {site.name} schedule as a deliberate deviation")],
            )
        )
    return findings


def _values_by_line(files: list[FileIndex]) -> dict[tuple[str, int], list[ValueSite]]:
    by_line: dict[tuple[str, int], list[ValueSite]] = {}
    for file in files:
        for site in file.values:
            by_line.setdefault((site.location.file, site.location.line), []).append(site)
    return by_line


def unimplemented(spec: PaperSpec, index: CodeIndex) -> list[Finding]:
    """The method's equations and algorithms no anchor cites, when the code cites the method's
    equations as a habit: one `Eq. (2)` comment in a repository says nothing of the other thirty."""
    anchors = [a for f in index.files for a in f.anchors]
    cited = {a.target for a in anchors if a.target_kind in ("equation", "label")}
    algorithms = {a.target for a in anchors if a.target_kind == "algorithm"}
    if {a.target for a in anchors if a.target_kind == "equation"} - {e.number for e in spec.equations if e.number}:
        return []  # the code cites equation numbers this paper does not have: another numbering
    aside = framing_sections(spec) | appendix_sections(spec)  # background and derivations
    method = [e for e in spec.equations if e.number and e.section_id not in aside]
    implemented = [e for e in method if e.number in cited or (e.label or "") in cited]
    if not method or len(implemented) * 2 < len(method):
        return []

    def unimplemented(what: str, id_: str, quote: str, location: Location, how: str) -> Finding:
        return Finding(
            id=f"unimplemented:{id_}",
            kind="unimplemented",
            severity="info",
            confidence=0.5,
            confidence_note=f"only anchors (`{how}` in comments and docstrings) link code to the paper",
            message=f"no code refers to {what}",
            paper=[Evidence(quote=quote, location=location)],
        )

    findings = [
        unimplemented(f"Eq. ({e.number})", f"equation:{e.number}", e.latex or e.text, e.location, "Eq. (N)")
        for e in method
        if e not in implemented
    ]
    findings += [
        unimplemented(f"Algorithm {a.number} ({a.title})", f"algorithm:{a.number}", a.title, a.location, "Algorithm N")
        for a in spec.algorithms
        if a.number and a.number not in algorithms and a.section_id not in aside
    ]
    return findings


def recorded(finding: Finding, decisions: DecisionsFile) -> Finding:
    if finding.kind == "divergence":
        for deviation in decisions.deviations:
            if (
                deviation.setting == finding.setting
                and deviation.component in (None, finding.component)
                and deviation.code_value in (None, finding.code_value)
                and deviation.file in (None, finding.code.file if finding.code else None)
            ):
                return finding.model_copy(update={"status": "recorded", "decision": deviation.id})
    if finding.kind == "guess":
        for assumption in decisions.assumptions:
            if assumption.setting == finding.setting and assumption.value in (None, finding.code_value):
                return finding.model_copy(update={"status": "recorded", "decision": assumption.id})
    return finding


def check_file(
    root: Path, facts: PaperFacts, file: FileIndex, context: WorkspaceContext = WorkspaceContext(), source: str | None = None
) -> list[Finding]:
    """The value findings of one file: what an editor re-checks when that file changes. `source` is
    the text `file` was indexed from, when it is not the file as saved (the edits' spans come from it)."""
    if not _makes_runs(file.file, context):
        return []
    cited: dict[str, set[str]] = {}  # function or class → the equations its anchors cite
    for anchor in file.anchors:
        if anchor.target_kind in ("equation", "label"):
            cited.setdefault(anchor.function or "", set()).add(anchor.target)
    found: dict[str, Finding] = {}
    own_variants, by_line = _variants_of(file), _values_by_line([file])
    lines = _SourceLines(root, file.file, source)
    for site in file.values:
        given = _where_given(site, file, by_line)
        checks = (
            _check_value(lines, given, facts, context, file, cited, own_variants),
            _check_loss_weight(given, facts),
            _check_loss_choice(given, facts),
            _check_validation_data(given, facts),
            _check_timestep_start(given, facts),
            _check_library_default(given, facts),
            _check_switch(given, facts, context, file),
            _check_unmentioned_loss_weight(given, facts, context),
        )
        for finding in checks:
            if finding is not None:
                found.setdefault(finding.id, finding)
    for component in file.components:
        if (finding := _check_named_component(lines, component, facts, context)) is not None:
            found.setdefault(finding.id, finding)
    return [recorded(f, facts.decisions) for f in found.values()]


def check_open_file(
    root: Path,
    spec: PaperSpec,
    facts: PaperFacts,
    index: CodeIndex,
    context: WorkspaceContext,
    file: FileIndex,
    source: str,
    undecided: list[Undecided] | None = None,
) -> list[Finding]:
    """What `check` reports for one file, as an editor holds it: `file` indexed from `source`, the
    rest of the workspace as `index` last saw it; `undecided` gets its anchored functions not
    compared with their equation, and why."""
    sites = [c for f in index.files if f.file != file.file for c in f.components] + file.components
    workspace_wide = [f for f in _check_components(sites, facts, context, _values_by_line([file])) if f.code is not None and f.code.file == file.file]
    workspace_wide += equation_findings(root, spec, CodeIndex(root=str(root), files=[file]), {file.file: source}, facts.decisions.bindings, undecided)
    workspace_wide += initial_value_findings(root, CodeIndex(root=str(root), files=[file]), {file.file: source}, facts.learnable)
    return check_file(root, facts, file, context, source) + [recorded(f, facts.decisions) for f in workspace_wide]


def check(
    root: Path,
    spec: PaperSpec,
    index: CodeIndex,
    decisions: DecisionsFile,
    facts: PaperFacts | None = None,
    sources: Mapping[str, str] | None = None,
) -> CheckReport:
    """Compare the workspace's code with the paper (and the answers recorded in `decisions`).
    `sources`: the text of files indexed from something other than the saved file (an editor's buffers)."""
    facts = facts or paper_facts(spec, decisions)
    sources = sources or {}
    context = WorkspaceContext.of(index)
    findings: list[Finding] = [f for file in index.files for f in check_file(root, facts, file, context, sources.get(file.file))]
    undecided: list[Undecided] = []
    workspace_wide = (
        _check_components([c for f in index.files for c in f.components], facts, context, _values_by_line(index.files))
        + equation_findings(root, spec, index, sources, decisions.bindings, undecided)
        + initial_value_findings(root, index, sources, facts.learnable)
        + unimplemented(spec, index)
    )
    findings += [recorded(f, decisions) for f in workspace_wide]
    order = {"divergence": 0, "guess": 1, "unimplemented": 2, "agreement": 3}
    findings.sort(key=lambda f: (order[f.kind], f.code.file if f.code else "~", f.code.line if f.code else 0))
    problems = [f"paper {p.location.short()}: {p.message}" if p.location else f"paper: {p.message}" for p in spec.problems]
    problems += [p.message if p.message.startswith(file.file) else f"{file.file}: {p.message}" for file in index.files for p in file.problems]
    return CheckReport(paper=spec.main_file, workspace=str(root), findings=findings, problems=problems, undecided=undecided)

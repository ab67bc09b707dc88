"""The method's steps read by the LLM against the rules' own frames (steps.yaml).

The rules recognise a step by its words ("we combine", "are fused"); a model recognises steps
however they are written. It is shown the kinds of step and what each must say, the open steps the
rules found, and the method text, and answers with `StepReadings`: where the paper says what a
listed step leaves open, and further steps that leave a slot open. Both are untrusted. An answer
closes a step only with a quote of one sentence of the method that names what the step acts on and
has words that fill the slot (more than the step's own words); a further step is kept only when its
quote stands in one sentence of the method and, by the rules' own test, none of the paper's words
around it fill the slot it names.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from ...schemas import Evidence, Gap, PaperSpec, StepReadings
from ...schemas.llm import MAX_GAP_CANDIDATES
from ..extract.sentences import Sentence
from ..ingest.positions import span_location
from ..llm import LLMClient
from .finders import Reading, StepContext, head_noun, located_within, step_gap, step_object
from .knowledge import StepFrame, step_frames
from .llm_gaps import LocatedText, method_paragraphs, render_paragraphs

log = logging.getLogger(__name__)

PURPOSE = "step-readings"

SYSTEM_PROMPT = """\
You read the method of a machine-learning paper as an engineer about to implement it, one step at a
time. Each kind of step below must say certain things (its slots) before it can be written.
1. For each numbered open step, if the paper text does say what is open, give the step's number and
   quote, character for character, the words of the paper that say it. Say nothing for a step the
   text leaves open.
2. List other steps of the method, of the kinds below, whose text leaves one of their slots open:
   quote the step's words exactly (a phrase or one sentence), give its kind and the open slot.
Never quote the introduction or related work. Answer with empty lists when there is nothing."""


@dataclass
class StepsRead:
    gaps: list[Gap] = field(default_factory=list)  # further open steps, the model's
    answered: dict[str, Evidence] = field(default_factory=dict)  # a rules' open step's id → where the paper says it


def read_steps(spec: PaperSpec, known: list[Gap], client: LLMClient) -> StepsRead:
    """The model's reading of the method's steps, kept where the paper's text bears it out.

    Raises LLMError (LLMUnavailable, LLMRefused) when the model gives no usable answer: callers
    report it and keep the rules' gaps.
    """
    reading = Reading.of(spec)
    listed = [gap for gap in known if gap.id.startswith("open-step:")][:MAX_GAP_CANDIDATES]  # the frames' steps
    paragraphs = method_paragraphs(spec)
    answer = client.structured(_messages(spec, paragraphs, listed), StepReadings, purpose=PURPOSE)
    located = LocatedText(paragraphs)
    frames = {frame.id: frame for frame in step_frames()}
    read = StepsRead()
    for item in answer.answered:
        if 1 <= item.step <= len(listed) and (step := listed[item.step - 1]).id not in read.answered:
            evidence = _answer(reading, located, step, frames, item.quote)
            if evidence is not None:
                read.answered[step.id] = evidence
    steps = StepContext.of(reading)
    asked = [gap.evidence[0].location for gap in known if gap.kind == "open-step"]
    for item in answer.steps:
        frame = frames.get(item.kind.strip().lower())
        slot = next((s for s in frame.slots if s.id == item.open.strip().lower()), None) if frame else None
        found = _in_one_method_sentence(reading, located, item.quote)
        if frame is None or slot is None or found is None:
            continue
        sentence, quote, evidence = found
        if not steps.may_be_a_step(sentence, frame, max(0, sentence.plain.text.find(quote))) or any(located_within(where, sentence.location()) for where in asked):
            continue  # a caption or a result; or one question per sentence
        if not steps.is_open(sentence, frame, slot, step_object(sentence, frame, quote)):
            continue  # the paper's own words say it
        read.gaps.append(step_gap(f"llm-step:{frame.id}:{slot.id}:{len(read.gaps) + 1}", frame, slot, evidence, quote, source="llm"))
        asked.append(evidence.location)
    log.info(
        "llm steps: %d answers (%d kept), %d further steps (%d kept)",
        len(answer.answered), len(read.answered), len(answer.steps), len(read.gaps),
    )  # fmt: skip
    return read


def _answer(reading: Reading, located: LocatedText, step: Gap, frames: dict[str, StepFrame], quote: str) -> Evidence | None:
    """Where the paper says what a rules' open step leaves open, if the model's quote shows it: a
    span of one sentence of the method that names what the step acts on and has words that fill
    the slot ("the image and caption embeddings are concatenated"), not the step's own words."""
    _, frame_id, slot_id, _ = step.id.split(":")
    frame = frames.get(frame_id)
    slot = next((s for s in frame.slots if s.id == slot_id), None) if frame else None
    found = _in_one_method_sentence(reading, located, quote)
    step_sentence = next((s for s in reading.sentences if located_within(step.evidence[0].location, s.location())), None)
    if slot is None or found is None or step_sentence is None:
        return None
    sentence, quote, evidence = found
    head = head_noun(step_object(step_sentence, frame, step.evidence[0].quote))
    if head is None or not re.search(rf"\b{re.escape(head)}", sentence.plain.text, re.I):
        return None  # about something else
    if not slot.filled.search(quote) or " ".join(quote.split()) in step.title:
        return None  # says nothing of the slot, or only repeats the step
    return evidence


def _in_one_method_sentence(reading: Reading, located: LocatedText, quote: str) -> tuple[Sentence, str, Evidence] | None:
    """The sentence of the method (not its framing) holding the quote whole, the quote as the
    paper writes it, and its evidence."""
    found = located.span(quote)
    if found is None:
        return None
    paragraph, start, end = found
    sentence = next((s for s in reading.sentences if s.paragraph is paragraph and s.start <= start < s.end), None)
    if sentence is None or end > sentence.end:
        return None
    text = paragraph.text[start:end]
    return sentence, text, Evidence(quote=text, location=span_location(paragraph, start, end))


def _kinds(frames: tuple[StepFrame, ...]) -> str:
    return "\n".join(f"- {frame.id}: " + "; ".join(f"{slot.id} ({slot.label})" for slot in frame.slots) for frame in frames)


def _messages(spec: PaperSpec, paragraphs: list, listed: list[Gap]) -> list[dict[str, str]]:
    steps = "\n".join(f"{i}. {gap.title} In: \"{' '.join(gap.evidence[0].quote.split())}\"" for i, gap in enumerate(listed, start=1)) or "(none)"
    user = (
        f"Paper: {spec.title or spec.main_file}\n\n"
        f"Kinds of step, and their slots:\n{_kinds(step_frames())}\n\n"
        f"Open steps found:\n{steps}\n\n"
        f"Paper text:\n\n{render_paragraphs(spec, paragraphs)}"
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

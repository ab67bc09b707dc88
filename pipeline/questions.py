"""Questions to the authors, drafted from a gap or a guessed value: by template, or by the LLM when
one is configured (`decisions.ask` then adds them to the decisions file)."""

from __future__ import annotations

import logging

from ..schemas import DecisionsFile, DraftedQuestion, Evidence, Finding, Gap
from .llm import LLMClient, LLMError

log = logging.getLogger(__name__)
PURPOSE = "draft a question to the authors"
MAX_QUESTION_CHARS = 600


def template_question(subject: Gap | Finding) -> str:
    """The question as paperlens words it without a model."""
    if isinstance(subject, Gap):
        return subject.question
    what = (subject.setting or "this setting").replace("_", " ")
    if subject.component:
        what += f" of {subject.component}"
    where = f" (near {subject.paper[0].location.short()})" if subject.paper else ""
    return f"The paper does not state the {what}{where}. Which value did you use in your experiments?"


def draft_question(subject: Gap | Finding, client: LLMClient | None) -> tuple[str, str]:
    """The question and who drafted it ("llm" or "template"). The model's draft is untrusted: an
    empty or overlong answer, or any LLM error, falls back to the template."""
    template = template_question(subject)
    if client is None:
        return template, "template"
    evidence = subject.evidence if isinstance(subject, Gap) else subject.paper
    messages = [
        {
            "role": "system",
            "content": "You help an engineer who implements a research paper write to its authors. Write one short, "
            "polite, specific question that the authors can answer with a value or a sentence.",
        },
        {"role": "user", "content": _prompt(template, evidence)},
    ]
    try:
        drafted = client.structured(messages, DraftedQuestion, purpose=PURPOSE).question.strip()
    except LLMError as err:
        log.warning("the LLM could not draft the question (%s); using the template", err)
        return template, "template"
    if not drafted or len(drafted) > MAX_QUESTION_CHARS:
        return template, "template"
    return drafted, "llm"


def _prompt(template: str, evidence: list[Evidence]) -> str:
    quotes = "\n".join(f"- “{' '.join(e.quote.split())[:400]}” ({e.location.short()})" for e in evidence[:3])
    return f"What is unclear: {template}\nWhere the paper says it:\n{quotes}\nAnswer as JSON: {{\"question\": \"...\"}}"



def questions_markdown(title: str, decisions: DecisionsFile, gaps: list[Gap]) -> tuple[str, int]:
    """The questions still open, ready to send: those asked in the decisions file, then the paper's
    blocking gaps not asked yet. Returns the Markdown and how many questions it holds."""
    asked = [c for c in decisions.clarifications if c.status == "open"]
    unasked = [g for g in gaps if g.blocking and all(c.question != g.question for c in decisions.clarifications)]
    lines = [f"# Questions for the authors of {title}", ""]
    number = 0
    for clarification in asked:
        number += 1
        about = f" (about {clarification.setting})" if clarification.setting else ""
        lines += [f"{number}. {clarification.question}{about}"]
    for gap in unasked:
        number += 1
        evidence = gap.evidence[0]
        lines += [f"{number}. {gap.question}", f"   - where: {evidence.location.short()}: “{' '.join(evidence.quote.split())[:200]}”"]
    if number == 0:
        lines.append("No open questions: every clarification is answered and no blocking gap is left.")
    return "\n".join(lines) + "\n", number

"""The optional LLM: where it is and how it is asked, and the answers it must give."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from .base import Model
from .gaps import GapCategory

MAX_GAP_CANDIDATES = 8
MIN_PROMPT_TOKENS = 1536  # what the context must leave beside the answer: a repair's prompt and one file


class LLMSettings(Model):
    """An OpenAI-compatible endpoint. Holds the *name* of the key's variable, never the key."""

    base_url: str | None = Field(default=None, description="e.g. http://127.0.0.1:8080/v1; from $PAPERLENS_LLM_BASE_URL.")
    model: str | None = Field(default=None, description="The model name the endpoint serves; from $PAPERLENS_LLM_MODEL.")
    api_key_env: str = Field(
        default="PAPERLENS_LLM_API_KEY",
        description="The variable holding the API key, read when a client is made; else $OPENAI_API_KEY.",
    )
    timeout_seconds: float = Field(default=60.0, gt=0, description="Per request.")
    max_retries: int = Field(
        default=2, ge=0, le=10, description="Retries after a failed connection, a server error or an invalid answer."
    )
    max_output_tokens: int = Field(default=2048, ge=1)
    context_tokens: int = Field(
        default=4096,
        ge=512,
        description="The model's context window (prompt and answer); prompts are cut to fit what the answer leaves. "
        "From $PAPERLENS_LLM_CONTEXT_TOKENS.",
    )
    temperature: float = Field(default=0.0, ge=0, le=2)
    cache: bool = Field(default=True, description="Keep answers on disk, keyed by endpoint, model and request.")

    @model_validator(mode="after")
    def _room_for_a_prompt(self) -> LLMSettings:
        if self.context_tokens - self.max_output_tokens < MIN_PROMPT_TOKENS:
            raise ValueError(
                f"an answer of up to {self.max_output_tokens} tokens (max_output_tokens) leaves less than "
                f"{MIN_PROMPT_TOKENS} tokens of the {self.context_tokens}-token context (context_tokens) for the "
                "prompt: lower the first or raise the second"
            )
        return self


class GapCandidate(Model):
    """A gap the model proposes. Untrusted: kept only when `quote` is found verbatim in the paper."""

    quote: str = Field(
        description="An exact span copied from the paper text that shows the gap (one sentence or less)."
    )
    category: GapCategory
    title: str = Field(description="One line: what is missing, ambiguous or in conflict.")
    detail: str = Field(description="Why an implementer is stuck, in a sentence or two.")
    question: str = Field(description="A clarifying question for the authors.")
    readings: list[str] = Field(max_length=4, description="Candidate readings an implementer would choose between.")


class GapCandidates(Model):
    """The model's answer when asked for gaps the rules did not find."""

    candidates: list[GapCandidate] = Field(max_length=MAX_GAP_CANDIDATES)


class SlotAnswer(Model):
    """Where the paper says what one of the listed open steps leaves open. Untrusted: it closes the
    step only when `quote` is found in the paper's text, beyond the step's own words."""

    step: int = Field(ge=1, description="The number of the open step in the list.")
    quote: str = Field(description="The exact words of the paper that say what the step leaves open.")


class MethodStep(Model):
    """A step of the method, of one of the kinds listed, that leaves one of its kind's slots open.
    Untrusted: kept only when `quote` is found in a sentence of the method and none of the paper's
    words around it fill that slot."""

    quote: str = Field(description="The step's words, copied exactly from the paper (a phrase or one sentence).")
    kind: str = Field(description="The kind of step, one of the kinds listed.")
    open: str = Field(description="The slot it leaves open, one of that kind's slots.")


class StepReadings(Model):
    """The model's reading of the method's steps against the frames of what each kind must say."""

    answered: list[SlotAnswer] = Field(max_length=MAX_GAP_CANDIDATES)
    steps: list[MethodStep] = Field(max_length=MAX_GAP_CANDIDATES)


class DraftedQuestion(Model):
    """A clarifying question for the authors, drafted by the model from one gap."""

    question: str = Field(description="One or two polite sentences to the authors, naming the exact place in the paper.")


class EquationVerdict(Model):
    """The model's reading of a function the rules could not compare with its equation. Untrusted:
    kept only when both quotes are found, in the function and in the equation."""

    outcome: Literal["equivalent", "differs", "unsure"]
    difference: str = Field(description="When it differs: what differs, in one sentence (a term, a sign, a factor, a reduction).")
    code_quote: str = Field(description="An exact line copied from the function that shows it.")
    paper_quote: str = Field(description="An exact span copied from the equation's LaTeX that shows it.")

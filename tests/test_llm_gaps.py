"""LLM-proposed gaps: kept only with a quote that is really in the paper, located there, marked as the
model's, and never a restatement of a known gap. Recorded answers test the rules; the real server
tests the request end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paperlens.pipeline.ingest import read_paper
from paperlens.pipeline.ingest.positions import span_location
from paperlens.pipeline.llm import LLMClient, LLMError
from paperlens.pipeline.readiness.llm_gaps import method_paragraphs, propose_gaps
from paperlens.schemas import Evidence, Gap, LLMSettings, Location, PaperSpec

from .conftest import EXAMPLE_PAPER
from .local_llm import MODEL_NAME, recorded, request_body

INVENTED = "we restart the cosine schedule every 5 epochs"
APPENDIX_ONLY = "the weight changes fastest around $m = 0.5$"


def candidate(quote: str, category: str, title: str = "A gap") -> dict:
    return {
        "quote": quote,
        "category": category,
        "title": title,
        "detail": "An implementer cannot tell.",
        "question": "What exactly is meant?",
        "readings": ["one reading", "another reading", "  "],
    }


def answer(*candidates: dict) -> str:
    return json.dumps({"candidates": list(candidates)})


def known_gap(spec: PaperSpec, phrase: str, category: str) -> Gap:
    """A rules-sourced gap whose evidence is `phrase`, located independently of the code under test."""
    paragraph = next(p for p in spec.paragraphs if phrase in p.text)
    start = paragraph.text.index(phrase)
    location = span_location(paragraph, start, start + len(phrase))
    return Gap(
        id=f"rules:{phrase}",
        kind="ambiguous-wording",
        type="Incompleteness",
        category=category,
        title=f"What is '{phrase}'?",
        detail="d",
        blocking=False,
        evidence=[Evidence(quote=phrase, location=location)],
        question="q",
    )


def client_answering(*answers: str, sent: list | None = None) -> LLMClient:
    settings = LLMSettings(base_url="http://recorded.invalid/v1", model=MODEL_NAME, max_retries=0)
    return LLMClient(settings, http_client=recorded(*answers, sent=sent))


def source_span(root: Path, location: Location) -> str:
    """The source text at a line/column location, whitespace runs as one space."""
    lines = (root / location.file).read_text(encoding="utf-8").splitlines()
    if location.line == location.end_line:
        text = lines[location.line][location.column : location.end_column]
    else:
        text = "\n".join(
            [lines[location.line][location.column :]]
            + lines[location.line + 1 : location.end_line]
            + [lines[location.end_line][: location.end_column]]
        )
    return " ".join(text.split())


@pytest.fixture(scope="module")
def example() -> PaperSpec:
    return read_paper(EXAMPLE_PAPER, use_cache=False)


def test_only_real_quotes_survive_located_in_the_source_and_marked_as_the_models(example):
    known = [known_gap(example, "We use standard augmentation", "Missing Data Specification")]
    reply = answer(
        candidate("We use standard augmentation", "Missing Data Specification"),  # restates the known gap
        candidate("The learning rate rises linearly over the first\n   10k steps", "Missing Configuration Protocol"),
        candidate(INVENTED, "Missing Configuration Protocol"),  # not in the paper
        candidate("and a batch size of 128", "Conflicting Model Design", title="Batch size 128 or 256"),
        candidate("We use standard augmentation", "Ambiguous Procedure"),  # same words, another question
        candidate(APPENDIX_ONLY, "Ambiguous Definition"),  # the model was never shown the appendix
        candidate("$m$", "Ambiguous Definition"),  # too short to locate anything
        candidate("rises linearly over the first 10k steps", "Missing Configuration Protocol"),  # repeats its own
    )

    gaps = propose_gaps(example, known, client_answering(reply))

    assert [(g.id, g.category) for g in gaps] == [
        ("llm:1", "Missing Configuration Protocol"),
        ("llm:2", "Conflicting Model Design"),
        ("llm:3", "Ambiguous Procedure"),
    ]
    assert all(g.source == "llm" and len(g.evidence) == 1 for g in gaps)
    schedule, batch, augmentation = gaps
    assert schedule.evidence[0].quote == "The learning rate rises linearly over the first 10k steps"
    assert schedule.evidence[0].location.model_dump(exclude_none=True) == {
        "file": "sections/experiments.tex", "line": 7, "column": 51, "end_line": 8, "end_column": 9,
    }  # fmt: skip
    assert (schedule.kind, schedule.type, schedule.blocking) == ("unstated-setting", "Incompleteness", False)
    assert (batch.kind, batch.type, batch.blocking, batch.title) == (
        "conflicting-values", "Inconsistency", False, "Batch size 128 or 256",  # the model alone never blocks
    )  # fmt: skip
    assert (augmentation.kind, augmentation.type) == ("ambiguous-wording", "Ambiguity")
    assert augmentation.readings == ["one reading", "another reading"]
    for gap in gaps:
        evidence = gap.evidence[0]
        assert source_span(EXAMPLE_PAPER, evidence.location) == " ".join(evidence.quote.split())


def test_the_prompt_holds_the_method_text_and_the_known_gaps_but_no_appendix(example):
    sent = []
    known = [known_gap(example, "We use standard augmentation", "Missing Data Specification")]
    propose_gaps(example, known, client_answering(answer(), sent=sent))

    [request] = sent
    system, user = request_body(request)["messages"]
    assert "quote" in system["content"] and "Conflicting Formal Definition" in system["content"]
    assert "- What is 'We use standard augmentation'?" in user["content"]
    assert "## 3.1 Setup" in user["content"] and "a batch size of 128" in user["content"]
    assert APPENDIX_ONLY not in user["content"]
    assert request_body(request)["response_format"]["json_schema"]["name"] == "GapCandidates"


def test_method_text_stops_at_the_budget_in_reading_order(example):
    everything = method_paragraphs(example)
    assert everything and not any(p.section_id == "sec-A" for p in everything)
    budget = sum(len(p.text) for p in everything[:3])
    assert method_paragraphs(example, budget=budget) == everything[:3]


def test_pdf_quotes_locate_to_their_page_and_duplicate_by_page():
    pdf = read_paper(EXAMPLE_PAPER / "paper.pdf", use_cache=False)
    known = [known_gap(pdf, "We use standard augmentation", "Missing Data Specification")]
    reply = answer(
        candidate("additionally erase a random rectangle", "Missing Data Specification"),  # same page, same category
        candidate("The learning rate rises linearly over the first 10k steps", "Missing Configuration Protocol"),
        candidate("averaged over three seeds", "Missing Evaluation Specification", title="  "),  # no title
    )
    [gap] = propose_gaps(pdf, known, client_answering(reply))
    assert gap.category == "Missing Configuration Protocol"
    assert (gap.evidence[0].location.file, gap.evidence[0].location.page) == ("paper.pdf", 2)


def test_an_unusable_answer_is_an_llm_error_for_the_caller_to_report(example):
    with pytest.raises(LLMError, match="no valid GapCandidates"):
        propose_gaps(example, [], client_answering('{"candidates": [{"quote": "x"}]}'))


def test_end_to_end_against_the_real_server(local_llm, example):
    """The real request (method text, the GapCandidates schema as the server's grammar) to llama.cpp.

    SmolLM2-135M rambles inside a string until the token bound, so its answer is usually cut off:
    that must come back quickly as a clear LLMError. Whatever it does return must quote the paper.
    """
    client = LLMClient(local_llm.settings(max_output_tokens=128, max_retries=0))
    try:
        gaps = propose_gaps(example, [], client)
    except LLMError as err:
        assert "cut off at 128 tokens" in str(err)
        gaps = []
    assert client.usage.requests == 1, "the server accepted the schema: no fallback request"
    assert 0 < client.usage.completion_tokens <= 128
    for gap in gaps:
        evidence = gap.evidence[0]
        assert gap.source == "llm"
        assert source_span(EXAMPLE_PAPER, evidence.location) == " ".join(evidence.quote.split())

"""The method's steps read by a model against the rules' frames: an answer closes a rules' open step
only with a quote of the paper beyond the step's words; a further step is kept only at a method
sentence whose slot, by the rules' own test, no word of the paper fills. Recorded answers test
those rules; the real server tests the request end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paperlens.pipeline.ingest import read_paper
from paperlens.pipeline.llm import LLMClient, LLMError
from paperlens.pipeline.readiness import assess
from paperlens.pipeline.readiness.llm_steps import read_steps
from paperlens.schemas import LLMSettings

from .local_llm import MODEL_NAME, recorded, request_body

PAPER = r"""\documentclass{article}
\begin{document}
\title{Two Streams}
\maketitle
\section{Introduction}
Earlier work fuses modalities late. Tokens are discarded by many prior methods at random.

\section{Method}
We encode the image and the caption separately. We then combine the two embeddings. The result goes to a linear classifier.

Image tokens are dropped at random before the encoder. Caption tokens are joined into one vector with a weighted sum of their states.

\section{Implementation details}
The image embedding and the caption embedding are concatenated before the classifier. We train for 10 epochs.
\end{document}
"""

STEP_WORDS = "We then combine the two embeddings"
ANSWER = "the caption embedding are concatenated"
DROPPED = "Image tokens are dropped at random before the encoder"


def line_of(words: str) -> int:
    """The 0-based line of the paper's source holding `words`."""
    return next(i for i, line in enumerate(PAPER.splitlines()) if words in line)


@pytest.fixture()
def paper(tmp_path: Path):
    (tmp_path / "paper.tex").write_text(PAPER, encoding="utf-8")
    return read_paper(tmp_path / "paper.tex", use_cache=False)


def client_answering(content: dict, sent: list | None = None) -> LLMClient:
    settings = LLMSettings(base_url="http://recorded.invalid/v1", model=MODEL_NAME, max_retries=0, cache=False)
    return LLMClient(settings, http_client=recorded(json.dumps(content), sent=sent))


def test_the_rules_leave_the_combination_open_and_cannot_read_the_other_steps(paper):
    gaps = assess(paper).gaps
    steps = [g for g in gaps if g.kind == "open-step"]
    assert [g.title for g in steps] == [f'"{STEP_WORDS}": how they are combined is not said']
    assert not any(DROPPED[:20] in e.quote for g in gaps for e in g.evidence)


def test_an_answer_closes_a_step_only_with_a_quote_beyond_the_steps_words(paper):
    known = assess(paper).gaps
    [step] = [g for g in known if g.kind == "open-step"]
    wrong = [
        {"step": 1, "quote": "the embeddings are concatenated"},  # not in the paper
        {"step": 1, "quote": STEP_WORDS},  # the step itself says nothing more
        {"step": 9, "quote": ANSWER},  # no such step was listed
        {"step": 1, "quote": "The result goes to a linear classifier"},  # not about the embeddings
        {"step": 1, "quote": "We train for 10 epochs"},  # nothing of the step
        {"step": 1, "quote": "Earlier work fuses modalities late"},  # the introduction
        {"step": 1, "quote": "We then combine the two embeddings. The result goes"},  # two sentences
        {"step": 1, "quote": "The image embedding and the caption embedding"},  # names them, says nothing of how
        {"step": 1, "quote": "joined into one vector with a weighted sum of their states"},  # how, of other things
    ]
    for some in (wrong[:5], wrong[5:]):  # an answer holds at most 8
        read = read_steps(paper, known, client_answering({"answered": some, "steps": []}))
        assert read.answered == {} and read.gaps == [], some

    read = read_steps(paper, known, client_answering({"answered": [{"step": 1, "quote": ANSWER}], "steps": []}))
    assert list(read.answered) == [step.id]
    evidence = read.answered[step.id]
    assert evidence.quote == ANSWER and evidence.location.file == "paper.tex" and evidence.location.line == line_of(ANSWER)
    assert step.id not in {g.id for g in assess(paper, answered=read.answered).gaps}


def test_a_further_step_is_kept_only_where_the_paper_leaves_its_slot_open(paper):
    known = assess(paper).gaps
    steps = [
        {"quote": "before the encoder. Caption tokens are joined", "kind": "mask", "open": "share"},  # two sentences
        {"quote": DROPPED, "kind": "mask", "open": "share"},  # kept: nothing says how many
        {"quote": "Tokens are discarded by many prior methods at random", "kind": "mask", "open": "share"},  # the introduction
        {"quote": "Caption tokens are joined into one vector", "kind": "combine", "open": "how"},  # "weighted sum" says how
        {"quote": STEP_WORDS, "kind": "combine", "open": "how"},  # the rules already ask at this sentence
        {"quote": "We encode the image and the caption separately", "kind": "encode", "open": "how"},  # no such kind
        {"quote": "We encode the image and the caption separately", "kind": "combine", "open": "weights"},  # no such slot
        {"quote": "Image tokens are dropped at random", "kind": "mask", "open": "value"},  # the same sentence again
    ]
    read = read_steps(paper, known, client_answering({"answered": [], "steps": steps}))
    [gap] = read.gaps
    assert (gap.id, gap.kind, gap.source, gap.blocking) == ("llm-step:mask:share:1", "open-step", "llm", False)
    assert gap.evidence[0].quote == DROPPED and gap.evidence[0].location.line == line_of(DROPPED)
    assert gap.title == f'"{DROPPED}": what share is masked is not said'
    report = assess(paper, extra=read.gaps)
    assert gap.id in {g.id for g in report.gaps}


def test_the_prompt_lists_the_kinds_of_step_and_the_open_steps(paper):
    sent = []
    read_steps(paper, assess(paper).gaps, client_answering({"answered": [], "steps": []}, sent=sent))
    [request] = sent
    system, user = request_body(request)["messages"]
    assert "quote" in system["content"]
    assert "- combine: how (how they are combined)" in user["content"]
    assert f'1. "{STEP_WORDS}": how they are combined is not said' in user["content"]
    assert ANSWER in user["content"]
    assert request_body(request)["response_format"]["json_schema"]["name"] == "StepReadings"


def test_end_to_end_against_the_real_server(local_llm, paper):
    """The real request (the StepReadings schema as the server's grammar) to llama.cpp; whatever the
    tiny model returns is kept only as the paper bears it out."""
    client = LLMClient(local_llm.settings(max_output_tokens=128, max_retries=0))
    known = assess(paper).gaps
    try:
        read = read_steps(paper, known, client)
    except LLMError as err:
        assert "cut off at 128 tokens" in str(err)
        return
    assert client.usage.requests == 1 and 0 < client.usage.completion_tokens <= 128
    assert set(read.answered) <= {g.id for g in known if g.kind == "open-step"}
    for gap in read.gaps:
        assert gap.source == "llm" and not gap.blocking and gap.evidence[0].quote in PAPER

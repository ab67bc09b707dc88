"""The pipeline logic behind the editor: settings checked one by one, questions to the authors,
and the links between code and paper."""

from __future__ import annotations

import pytest

from paperlens.pipeline.check import paper_facts
from paperlens.pipeline.code import index_source
from paperlens.pipeline.decisions import ask
from paperlens.pipeline.ingest import read_paper
from paperlens.pipeline.links import (
    anchor_target, equations_of, implementations, likely_equations, matches_query, open_questions, paper_item_at, paper_symbols,
)  # fmt: skip
from paperlens.pipeline.llm import LLMClient
from paperlens.pipeline.questions import draft_question, template_question
from paperlens.pipeline.readiness import assess
from paperlens.pipeline.workspace import editor_settings
from paperlens.schemas import CodeIndex, DecisionsFile, Equation, LLMSettings

from .conftest import EXAMPLE_PAPER

WORKSPACE = EXAMPLE_PAPER.parent / "workspace"


@pytest.fixture(scope="module")
def example():
    spec = read_paper(EXAMPLE_PAPER)
    readiness = assess(spec)
    return spec, readiness, paper_facts(spec, DecisionsFile())


def test_each_bad_setting_costs_only_itself():
    settings, problems = editor_settings(
        {"paperlens": {"paper": "p.tex", "debounceMs": -5, "checks": ["guess"], "severity": {"guess": "loud"}, "colour": "red", "llm": None}}
    )
    assert settings.paper == "p.tex" and settings.checks == ["guess"]
    assert settings.debounce_ms == 300 and settings.severity == {}
    assert len(problems) == 3
    assert any("paperlens.debounceMs" in p and "using the default, 300" in p for p in problems)
    assert any("paperlens.severity" in p for p in problems) and any("unknown setting paperlens.colour" in p for p in problems)


def test_settings_that_are_not_an_object_fall_back_whole():
    settings, problems = editor_settings(["paper.tex"])
    assert settings.model_dump() == editor_settings(None)[0].model_dump() and problems == [
        "the paperlens settings must be an object, not ['paper.tex']; using the defaults"
    ]


def test_a_question_is_asked_once_with_the_next_free_id():
    decisions = ask(DecisionsFile(), "Which β₂?", setting="beta2", component="AdamW")
    again = ask(decisions, "Which β₂?", setting="beta2")
    assert again == decisions and [c.id for c in decisions.clarifications] == ["q1"]
    other = ask(decisions, "Which warm-up?")
    assert [c.id for c in other.clarifications] == ["q1", "q2"] and other.clarifications[1].status == "open"


def test_the_template_asks_the_gaps_own_question_or_names_the_guessed_setting(example):
    spec, readiness, _ = example
    gap = readiness.gaps[0]
    assert template_question(gap) == gap.question
    assert draft_question(gap, None) == (gap.question, "template")


def test_an_unreachable_llm_falls_back_to_the_template(example):
    _, readiness, _ = example
    gap = readiness.gaps[0]
    client = LLMClient(LLMSettings(base_url="http://127.0.0.1:9/v1", model="none", timeout_seconds=2, max_retries=0, cache=False))
    assert draft_question(gap, client) == (gap.question, "template")


def test_the_local_llm_drafts_a_question_or_the_template_stands_in(local_llm, example):
    _, readiness, _ = example
    gap = readiness.gaps[0]
    client = LLMClient(local_llm.settings(max_output_tokens=96, max_retries=0))
    question, drafted_by = draft_question(gap, client)
    assert client.usage.requests == 1
    assert (drafted_by, question) == ("template", gap.question) or (drafted_by == "llm" and 0 < len(question) <= 600)


def test_anchors_resolve_and_lead_from_the_equation_back_to_the_code(example):
    spec, _, _ = example
    source = (WORKSPACE / "tlm.py").read_text()
    file = index_source("tlm.py", source)
    anchor = next(a for a in file.anchors if a.target == "3")
    equation = anchor_target(spec, anchor)
    assert isinstance(equation, Equation) and equation.label == "eq:tempered-weight"
    function = next(f for f in file.functions if f.name == "tempered_weight")
    assert equations_of(spec, file, function) == [equation]
    assert paper_item_at(spec, equation.location.file, equation.location.line) is equation
    lines = {location.line for location in implementations(spec, CodeIndex(root=str(WORKSPACE), files=[file]), equation)}
    assert lines == {anchor.location.line, function.location.line}


def test_likely_equations_share_words_with_the_function_or_there_are_none(example):
    spec, _, _ = example
    [weight] = index_source("w.py", "def label_weight(m, tau):\n    pass\n").functions
    assert likely_equations(spec, weight)[0].number == "3"
    [unrelated] = index_source("u.py", "def load_images(path):\n    pass\n").functions
    assert likely_equations(spec, unrelated) == []


def test_open_questions_of_an_equation_are_gaps_shown_in_it_or_about_its_symbols(example):
    spec, readiness, facts = example
    for equation in spec.equations:
        for gap in open_questions(spec, readiness.gaps, facts, equation):
            inside = any(e.location.file == equation.location.file and equation.location.line <= (e.location.line or -1) <= (equation.location.end_line or equation.location.line) for e in gap.evidence)
            assert inside or facts.symbols.get(gap.setting or "") in equation.symbols


def test_workspace_symbols_are_the_papers_places_found_as_vs_code_matches(example):
    spec, _, _ = example
    names = [s.name for s in paper_symbols(spec)]
    assert "Eq. (3)" in names and any(n.startswith("weight_decay = ") for n in names)
    assert matches_query("Eq. (3)", "eq3") and matches_query("weight_decay = 0.05", "wd")
    assert not matches_query("Eq. (3)", "eq4")

"""The LLM client against a real OpenAI-compatible server (llama.cpp + SmolLM2-135M) and against
recorded responses for what a real server will not do on demand (malformed answers, HTTP errors)."""

from __future__ import annotations

import logging
import time

import httpx2
import pytest
from pydantic import BaseModel

from paperlens.pipeline.llm import LLMClient, LLMError, LLMNotConfigured, LLMUnavailable, prompt_budget_chars, settings_from_env
from paperlens.schemas import LLMSettings

from .local_llm import (
    MODEL_NAME,
    chat_completion,
    closed_port_url,
    counting_http_client,
    recorded,
    request_body,
)

SECRET = "sk-test-0123456789abcdef-never-log-me"
QUESTION = [{"role": "user", "content": "What is 12 + 7? Give the total and one line of working."}]


class Sum(BaseModel):
    total: int
    working: str


def recorded_client(*answers, sent=None, **overrides) -> LLMClient:
    settings = LLMSettings(base_url="http://recorded.invalid/v1", model=MODEL_NAME, **overrides)
    return LLMClient(settings, http_client=recorded(*answers, sent=sent))


# --- against the real server -------------------------------------------------------------------


def test_structured_answer_validates_and_tokens_match_the_servers_count(local_llm):
    predicted_before = local_llm.metric("tokens_predicted_total")
    client = LLMClient(local_llm.settings(max_output_tokens=128))  # bounded: CI machines may be busy

    answer = client.structured(QUESTION, Sum, purpose="test")

    assert isinstance(answer, Sum)  # the tiny model's arithmetic may be wrong; the shape may not
    assert client.usage.requests == 1 and client.usage.cache_hits == 0
    assert client.usage.prompt_tokens > 0
    assert client.usage.completion_tokens == local_llm.metric("tokens_predicted_total") - predicted_before


def test_an_identical_request_is_answered_from_the_disk_cache_without_a_request(local_llm):
    sent = []
    first = LLMClient(local_llm.settings(), http_client=counting_http_client(sent))
    answer = first.structured(QUESTION, Sum, purpose="test")
    assert len(sent) == 1
    predicted = local_llm.metric("tokens_predicted_total")

    again = first.structured(QUESTION, Sum, purpose="test")
    fresh_client = LLMClient(local_llm.settings(), http_client=counting_http_client(sent))
    from_disk = fresh_client.structured(QUESTION, Sum, purpose="test")

    assert again == answer == from_disk
    assert len(sent) == 1, "a cached answer must not reach the server"
    assert local_llm.metric("tokens_predicted_total") == predicted
    assert (first.usage.cache_hits, first.usage.requests) == (1, 1)
    assert (fresh_client.usage.cache_hits, fresh_client.usage.requests) == (1, 0)


def test_a_different_request_or_a_disabled_cache_asks_the_server(local_llm):
    sent = []
    client = LLMClient(local_llm.settings(cache=False), http_client=counting_http_client(sent))
    client.structured(QUESTION, Sum, purpose="test")
    client.structured(QUESTION, Sum, purpose="test")
    assert len(sent) == 2 and client.usage.cache_hits == 0

    cached = LLMClient(local_llm.settings(), http_client=counting_http_client(sent))
    cached.structured(QUESTION, Sum, purpose="test")
    cached.structured([{"role": "user", "content": "What is 2 + 2?"}], Sum, purpose="test")
    assert len(sent) == 4


def test_a_timeout_raises_unavailable_quickly_naming_the_endpoint(local_llm):
    client = LLMClient(local_llm.settings(timeout_seconds=0.001, max_retries=1))
    started = time.monotonic()
    with pytest.raises(LLMUnavailable, match="did not answer within 0.001 s") as raised:
        client.structured(QUESTION, Sum, purpose="test")
    assert time.monotonic() - started < 5
    assert local_llm.base_url in str(raised.value)


def test_a_server_that_is_down_raises_unavailable_naming_the_endpoint():
    url = closed_port_url()
    client = LLMClient(LLMSettings(base_url=url, model=MODEL_NAME, max_retries=1))
    started = time.monotonic()
    with pytest.raises(LLMUnavailable, match="cannot reach") as raised:
        client.structured(QUESTION, Sum, purpose="test")
    assert time.monotonic() - started < 5
    assert url in str(raised.value) and "PAPERLENS_LLM_BASE_URL" in str(raised.value)


# --- configuration -----------------------------------------------------------------------------


def test_no_configuration_raises_not_configured_with_what_to_set():
    with pytest.raises(LLMNotConfigured) as raised:
        LLMClient(settings_from_env({}))
    message = str(raised.value)
    assert "PAPERLENS_LLM_BASE_URL" in message and "PAPERLENS_LLM_MODEL" in message
    assert isinstance(raised.value, LLMUnavailable)  # one `except LLMUnavailable` covers "no LLM now"

    with pytest.raises(LLMNotConfigured, match="PAPERLENS_LLM_MODEL") as raised:
        LLMClient(settings_from_env({"PAPERLENS_LLM_BASE_URL": "http://127.0.0.1:8080/v1"}))
    assert "PAPERLENS_LLM_BASE_URL" not in str(raised.value)


def test_settings_come_from_the_environment_and_never_hold_the_key(monkeypatch):
    monkeypatch.setenv("PAPERLENS_LLM_BASE_URL", "http://127.0.0.1:8080/v1")
    monkeypatch.setenv("PAPERLENS_LLM_MODEL", "some-model")
    monkeypatch.setenv("PAPERLENS_LLM_API_KEY", SECRET)
    settings = settings_from_env()
    assert (settings.base_url, settings.model) == ("http://127.0.0.1:8080/v1", "some-model")
    assert SECRET not in repr(settings) and SECRET not in settings.model_dump_json()


@pytest.mark.parametrize("key_env", ["PAPERLENS_LLM_API_KEY", "OPENAI_API_KEY"])
def test_the_key_is_sent_to_the_server_and_to_nothing_else(monkeypatch, caplog, local_llm, key_env):
    monkeypatch.delenv("PAPERLENS_LLM_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv(key_env, SECRET)
    caplog.set_level(logging.DEBUG)  # every logger, the openai client's and its transport's included
    sent = []
    errors = []

    LLMClient(local_llm.settings(), http_client=counting_http_client(sent)).structured(QUESTION, Sum, purpose="test")
    for failing in (
        LLMClient(LLMSettings(base_url=closed_port_url(), model=MODEL_NAME, max_retries=0)),
        recorded_client(httpx2.Response(401, json={"error": {"message": f"Incorrect API key provided: {SECRET}"}})),
        recorded_client("not json", max_retries=0),
    ):
        with pytest.raises(LLMError) as raised:
            failing.structured(QUESTION, Sum, purpose="test")
        errors.append(str(raised.value))

    assert sent[0].headers["authorization"] == f"Bearer {SECRET}"
    assert caplog.records, "the client logs what it does"
    for record in caplog.records:
        assert SECRET not in record.getMessage()
    for message in errors:
        assert SECRET not in message
    assert "PAPERLENS_LLM_API_KEY" in errors[1]  # the 401 says which variable to set


def test_credentials_in_the_base_url_are_refused_because_urls_reach_logs():
    with_credentials = f"http://user:{SECRET}@127.0.0.1:8080/v1"
    with pytest.raises(LLMNotConfigured, match="PAPERLENS_LLM_API_KEY") as raised:
        LLMClient(LLMSettings(base_url=with_credentials, model=MODEL_NAME))
    assert SECRET not in str(raised.value)


# --- recorded responses ------------------------------------------------------------------------


def test_a_malformed_answer_is_retried_within_the_bound_then_raises_llm_error():
    sent = []
    client = recorded_client("{'total': 19,", sent=sent, max_retries=2)
    with pytest.raises(LLMError, match="no valid Sum in 3 attempts") as raised:
        client.structured(QUESTION, Sum, purpose="test")
    assert not isinstance(raised.value, LLMUnavailable)
    assert len(sent) == 3 and client.usage.requests == 3


def test_a_retry_tells_the_model_what_was_wrong_and_a_valid_answer_is_kept():
    sent = []
    client = recorded_client('{"total": "nineteen"}', '{"total": 19, "working": "12 + 7"}', sent=sent)
    assert client.structured(QUESTION, Sum, purpose="test") == Sum(total=19, working="12 + 7")
    retry_messages = request_body(sent[1])["messages"]
    assert retry_messages[: len(QUESTION)] == QUESTION
    assert "total" in retry_messages[-1]["content"] and "working" in retry_messages[-1]["content"]


def test_the_request_carries_the_schema_the_temperature_and_the_output_bound():
    sent = []
    recorded_client('{"total": 19, "working": "w"}', sent=sent).structured(QUESTION, Sum, purpose="test")
    body = request_body(sent[0])
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "Sum"
    assert (body["temperature"], body["max_completion_tokens"], body["model"]) == (0.0, 2048, MODEL_NAME)


def test_a_server_without_json_schema_is_asked_for_a_json_object():
    sent = []
    client = recorded_client(
        httpx2.Response(400, json={"error": {"message": "response_format json_schema is not supported"}}),
        '{"total": 19, "working": "w"}',
        sent=sent,
    )
    assert client.structured(QUESTION, Sum, purpose="test").total == 19
    client.structured([{"role": "user", "content": "again"}], Sum, purpose="test")
    formats = [request_body(request)["response_format"]["type"] for request in sent]
    assert formats == ["json_schema", "json_object", "json_object"]  # asked once, then remembered
    assert '"total"' in request_body(sent[1])["messages"][0]["content"]  # the schema travels in the prompt


def test_http_errors_become_clear_messages():
    with pytest.raises(LLMError, match=r"refused the request \(HTTP 404\)") as raised:
        recorded_client(httpx2.Response(404, json={"error": {"message": "model not found"}})).structured(
            QUESTION, Sum, purpose="test"
        )
    assert not isinstance(raised.value, LLMUnavailable)
    sent = []
    with pytest.raises(LLMUnavailable, match=r"busy or failing \(HTTP 503"):
        recorded_client(httpx2.Response(503), sent=sent, max_retries=1).structured(QUESTION, Sum, purpose="test")
    assert len(sent) == 2  # the openai client's own bounded retry


def test_an_answer_cut_at_the_token_bound_is_an_llm_error():
    client = recorded_client(chat_completion('{"total": 1', finish_reason="length"), max_output_tokens=5)
    with pytest.raises(LLMError, match="cut off at 5 tokens"):
        client.structured(QUESTION, Sum, purpose="test")
    assert client.usage.completion_tokens == 7  # a cut answer still costs its tokens

    json_object_only = recorded_client(
        httpx2.Response(400, json={"error": {"message": "json_schema unsupported"}}),
        chat_completion('{"total": 1', finish_reason="length"),
        max_output_tokens=5,
    )
    with pytest.raises(LLMError, match="cut off at 5 tokens"):
        json_object_only.structured(QUESTION, Sum, purpose="test")


def test_the_prompt_budget_is_what_the_context_leaves_beside_the_answer():
    settings = settings_from_env({"PAPERLENS_LLM_CONTEXT_TOKENS": "32768", "PAPERLENS_LLM_MAX_TOKENS": "4096"})
    assert (settings.context_tokens, settings.max_output_tokens) == (32768, 4096)
    small, large = prompt_budget_chars(LLMSettings()), prompt_budget_chars(settings)
    assert small == (4096 - 2048) * 3 and large == (32768 - 4096) * 3  # about 3 characters a token
    with pytest.raises(LLMError, match=r"MAX_TOKENS and \$PAPERLENS_LLM_CONTEXT_TOKENS: an answer of up to 4000 tokens"):
        settings_from_env({"PAPERLENS_LLM_MAX_TOKENS": "4000"})  # the default context leaves too little for a prompt
    for bad in ("lots", "100", "-5"):
        with pytest.raises(LLMError, match="PAPERLENS_LLM_CONTEXT_TOKENS must be a whole number of tokens"):
            settings_from_env({"PAPERLENS_LLM_CONTEXT_TOKENS": bad})

"""Structured answers from any OpenAI-compatible endpoint: bounded in time and retries, cached on
disk, counted in tokens, and the API key never in a log line or an error message."""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, replace
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ValidationError

from ...schemas.llm import LLMSettings
from ..ingest.cache import cache_dir
from .cache import AnswerCache, request_key
from .errors import LLMError, LLMNotConfigured, LLMRefused, LLMUnavailable

# openai takes over a second to import and most sessions have no LLM: the methods that use it import it.
if TYPE_CHECKING:
    import httpx2
    import openai
    from openai.types import CompletionUsage

log = logging.getLogger(__name__)

AnswerT = TypeVar("AnswerT", bound=BaseModel)
Messages = list[dict[str, str]]

BASE_URL_ENV = "PAPERLENS_LLM_BASE_URL"
MODEL_ENV = "PAPERLENS_LLM_MODEL"
MAX_TOKENS_ENV = "PAPERLENS_LLM_MAX_TOKENS"
TIMEOUT_ENV = "PAPERLENS_LLM_TIMEOUT"
CONTEXT_ENV = "PAPERLENS_LLM_CONTEXT_TOKENS"
CHARS_PER_TOKEN = 3  # code, LaTeX and quotes measured 2.8-3.1 characters per token
FALLBACK_API_KEY_ENV = "OPENAI_API_KEY"

# Local servers ignore the key, but the openai client refuses to start without one.
_NO_KEY = "no-key"
_SERVER_MESSAGE_CHARS = 300


@dataclass
class Usage:
    """Totals over the life of one client."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    cache_hits: int = 0


def settings_from_env(environ: Mapping[str, str] | None = None) -> LLMSettings:
    """Settings from $PAPERLENS_LLM_BASE_URL, $PAPERLENS_LLM_MODEL and, optionally,
    $PAPERLENS_LLM_MAX_TOKENS, $PAPERLENS_LLM_CONTEXT_TOKENS and $PAPERLENS_LLM_TIMEOUT (seconds per
    request); unset ones keep their defaults. A malformed number is an LLMError."""
    environ = os.environ if environ is None else environ
    fields: dict[str, object] = {"base_url": environ.get(BASE_URL_ENV) or None, "model": environ.get(MODEL_ENV) or None}
    if max_tokens := environ.get(MAX_TOKENS_ENV):
        if not max_tokens.isdigit() or int(max_tokens) < 1:
            raise LLMError(f"${MAX_TOKENS_ENV} must be a positive whole number, not {max_tokens!r}")
        fields["max_output_tokens"] = int(max_tokens)
    if context := environ.get(CONTEXT_ENV):
        if not context.isdigit() or int(context) < 512:
            raise LLMError(f"${CONTEXT_ENV} must be a whole number of tokens, 512 or more, not {context!r}")
        fields["context_tokens"] = int(context)
    if timeout := environ.get(TIMEOUT_ENV):
        try:
            seconds = float(timeout)
        except ValueError:
            seconds = 0.0
        if not seconds > 0:
            raise LLMError(f"${TIMEOUT_ENV} must be a positive number of seconds, not {timeout!r}")
        fields["timeout_seconds"] = seconds
    try:
        return LLMSettings(**fields)
    except ValidationError as err:  # the answer's bound leaves no room for a prompt
        problem = err.errors()[0]["msg"].removeprefix("Value error, ")
        raise LLMError(f"${MAX_TOKENS_ENV} and ${CONTEXT_ENV}: {problem}") from None


def prompt_budget_chars(settings: LLMSettings) -> int:
    """How many characters a prompt may take: the context less the answer's tokens, in characters."""
    return (settings.context_tokens - settings.max_output_tokens) * CHARS_PER_TOKEN


def read_api_key(settings: LLMSettings) -> str | None:
    """The key from the environment, read when a client is made so that settings never hold it."""
    return os.environ.get(settings.api_key_env) or os.environ.get(FALLBACK_API_KEY_ENV) or None


class LLMClient:
    """Asks one model for answers that validate against a pydantic model.

    Raises LLMNotConfigured at construction when no endpoint is set; `structured` raises
    LLMUnavailable when the endpoint does not answer and LLMError when its answer is unusable.
    """

    def __init__(self, settings: LLMSettings, *, http_client: httpx2.Client | None = None) -> None:
        missing = [env for env, value in ((BASE_URL_ENV, settings.base_url), (MODEL_ENV, settings.model)) if not value]
        if missing:
            raise LLMNotConfigured(
                f"no LLM endpoint configured (set {' and '.join('$' + env for env in missing)}: an OpenAI-compatible "
                f"API such as http://127.0.0.1:8080/v1 and the model it serves; the key, if it needs one, in "
                f"${settings.api_key_env}). Everything else works without an LLM."
            )
        if "@" in urlsplit(settings.base_url).netloc:
            # The HTTP stack logs request URLs, so a password in one would reach the logs.
            raise LLMNotConfigured(
                f"${BASE_URL_ENV} holds credentials; take them out of the URL and put the key in "
                f"${settings.api_key_env}"
            )
        self.settings = settings
        self.usage = Usage()
        self._where = f"the LLM endpoint {settings.base_url}"
        self._cache = AnswerCache(cache_dir() / "llm") if settings.cache else None
        # Some servers (llama-cpp-python's, older vLLM) reject json_schema but honour json_object.
        self._json_schema_accepted = True
        import openai

        self._openai = openai.OpenAI(
            base_url=settings.base_url,
            api_key=read_api_key(settings) or _NO_KEY,
            timeout=settings.timeout_seconds,
            max_retries=settings.max_retries,
            http_client=http_client,
        )

    def structured(self, messages: Messages, response_model: type[AnswerT], *, purpose: str) -> AnswerT:
        """The model's answer to `messages` as a validated `response_model`, from the cache when asked before."""
        key = self._request_key(messages, response_model)
        if self._cache is not None and (cached := self._cache.load(key, response_model)) is not None:
            self.usage.cache_hits += 1
            log.info("llm %s: cached %s", purpose, response_model.__name__)
            return cached
        before = replace(self.usage)
        started = time.monotonic()
        answer = self._ask_until_valid(messages, response_model, purpose)
        log.info(
            "llm %s: %s from %s at %s in %.2f s, %d requests, %d prompt + %d completion tokens",
            purpose,
            response_model.__name__,
            self.settings.model,
            self.settings.base_url,
            time.monotonic() - started,
            self.usage.requests - before.requests,
            self.usage.prompt_tokens - before.prompt_tokens,
            self.usage.completion_tokens - before.completion_tokens,
        )
        if self._cache is not None:
            self._cache.store(key, answer)
        return answer

    def _request_key(self, messages: Messages, response_model: type[BaseModel]) -> str:
        return request_key(
            {
                "base_url": self.settings.base_url,
                "model": self.settings.model,
                "messages": messages,
                "schema": {"name": response_model.__name__, "json_schema": response_model.model_json_schema()},
                "temperature": self.settings.temperature,
                "max_output_tokens": self.settings.max_output_tokens,
            }
        )

    def _ask_until_valid(self, messages: Messages, response_model: type[AnswerT], purpose: str) -> AnswerT:
        import openai

        attempts = self.settings.max_retries + 1
        conversation = messages
        problem = ""
        for attempt in range(1, attempts + 1):
            try:
                return self._ask(conversation, response_model)
            except ValidationError as err:
                problem = _validation_summary(err)
                log.warning("llm %s: invalid answer (attempt %d of %d): %s", purpose, attempt, attempts, problem)
                # At temperature 0 the same request gets the same answer: say what was wrong instead.
                conversation = [
                    *messages,
                    {
                        "role": "user",
                        "content": f"Your previous answer was invalid ({problem}). "
                        "Answer again with only a JSON object that matches the schema.",
                    },
                ]
            except openai.OpenAIError as err:
                raise self._translate(err) from err
        raise LLMError(f"{self._where} gave no valid {response_model.__name__} in {attempts} attempts: {problem}")

    def _ask(self, messages: Messages, response_model: type[AnswerT]) -> AnswerT:
        """One answer; raises ValidationError when it is not JSON of the schema."""
        import openai

        if self._json_schema_accepted:
            try:
                return self._ask_json_schema(messages, response_model)
            except openai.BadRequestError as err:
                log.info("%s rejected json_schema (HTTP %s); asking for a JSON object", self._where, err.status_code)
                self._json_schema_accepted = False
        return self._ask_json_object(messages, response_model)

    def _ask_json_schema(self, messages: Messages, response_model: type[AnswerT]) -> AnswerT:
        import openai

        self.usage.requests += 1
        try:
            completion = self._openai.chat.completions.parse(
                model=self.settings.model,
                messages=messages,
                response_format=response_model,
                temperature=self.settings.temperature,
                max_completion_tokens=self.settings.max_output_tokens,
            )
        except openai.LengthFinishReasonError as err:
            self._count(err.completion.usage)
            raise
        self._count(completion.usage)
        message = completion.choices[0].message
        if message.refusal:
            raise LLMError(f"{self._where} refused: {message.refusal[:_SERVER_MESSAGE_CHARS]}")
        if message.parsed is None:  # an empty answer: validating it raises the ValidationError that retries
            return response_model.model_validate_json(message.content or "")
        return message.parsed

    def _ask_json_object(self, messages: Messages, response_model: type[AnswerT]) -> AnswerT:
        import openai

        schema = json.dumps(response_model.model_json_schema())
        schema_note = {
            "role": "system",
            "content": f"Answer with one JSON object that matches this JSON Schema: {schema}",
        }
        self.usage.requests += 1
        completion = self._openai.chat.completions.create(
            model=self.settings.model,
            messages=[schema_note, *messages],
            response_format={"type": "json_object"},
            temperature=self.settings.temperature,
            max_completion_tokens=self.settings.max_output_tokens,
        )
        self._count(completion.usage)
        choice = completion.choices[0]
        if choice.finish_reason == "length":
            raise openai.LengthFinishReasonError(completion=completion)
        return response_model.model_validate_json(choice.message.content or "")

    def _count(self, usage: CompletionUsage | None) -> None:
        if usage is not None:
            self.usage.prompt_tokens += usage.prompt_tokens
            self.usage.completion_tokens += usage.completion_tokens

    def _translate(self, err: openai.OpenAIError) -> LLMError:
        """A message that says what happened and what to do; server text only where it cannot echo the key."""
        import openai

        where = self._where
        retries = f"after {self.settings.max_retries} retries"
        match err:
            case openai.APITimeoutError():
                return LLMUnavailable(
                    f"{where} did not answer within {self.settings.timeout_seconds:g} s ({retries}); "
                    f"check that the server is up, or give it a longer timeout"
                )
            case openai.APIConnectionError():
                return LLMUnavailable(
                    f"cannot reach {where} ({retries}); start the server or point ${BASE_URL_ENV} at a running one"
                )
            case openai.AuthenticationError() | openai.PermissionDeniedError():
                return LLMRefused(
                    f"{where} rejected the API key (HTTP {err.status_code}); set ${self.settings.api_key_env}"
                )
            case openai.RateLimitError() | openai.InternalServerError():
                return LLMUnavailable(f"{where} is busy or failing (HTTP {err.status_code}, {retries})")
            case openai.APIStatusError():
                return LLMRefused(
                    f"{where} refused the request (HTTP {err.status_code}): {err.message[:_SERVER_MESSAGE_CHARS]}"
                )
            case openai.LengthFinishReasonError():
                return LLMError(
                    f"the answer from {where} was cut off at {self.settings.max_output_tokens} tokens "
                    f"(model {self.settings.model})"
                )
            case _:
                return LLMError(f"{where} gave no usable answer: {type(err).__name__}")


def _validation_summary(err: ValidationError, limit: int = 3) -> str:
    """Where and what, without echoing the answer itself."""
    problems = [f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in err.errors()[:limit]]
    more = err.error_count() - limit
    return "; ".join(problems) + (f"; and {more} more" if more > 0 else "")

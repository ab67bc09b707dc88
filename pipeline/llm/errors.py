"""Why the LLM gave no answer. `str(err)` is a message for the user; it never holds the API key."""

from __future__ import annotations


class LLMError(Exception):
    """The LLM gave no usable answer. Callers report it and carry on without the LLM."""


class LLMUnavailable(LLMError):
    """The endpoint did not answer: refused connection, timeout, rate limit or server error."""


class LLMNotConfigured(LLMUnavailable):
    """No endpoint is configured; the LLM is optional, so this is the normal state of a fresh install."""


class LLMRefused(LLMError):
    """The endpoint answered and refused the request itself (a rejected key, an unknown model): no
    other request would fare better."""

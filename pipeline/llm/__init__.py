"""The optional LLM: any OpenAI-compatible endpoint, asked for answers that validate against schemas.

Nothing else in paperlens needs it. Start at `client.py::LLMClient.structured`.
"""

from .client import CHARS_PER_TOKEN, LLMClient, Usage, prompt_budget_chars, settings_from_env
from .errors import LLMError, LLMNotConfigured, LLMRefused, LLMUnavailable

__all__ = [
    "CHARS_PER_TOKEN",
    "LLMClient",
    "LLMError",
    "LLMNotConfigured",
    "LLMRefused",
    "LLMUnavailable",
    "Usage",
    "prompt_budget_chars",
    "settings_from_env",
]

"""The optional LLM: any OpenAI-compatible endpoint, asked for answers that validate against schemas.

Nothing else in paperlens needs it. Start at `client.py::LLMClient.structured`.
"""

from .client import LLMClient, Usage, settings_from_env
from .errors import LLMError, LLMNotConfigured, LLMUnavailable

__all__ = ["LLMClient", "LLMError", "LLMNotConfigured", "LLMUnavailable", "Usage", "settings_from_env"]

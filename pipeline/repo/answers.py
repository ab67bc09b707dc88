"""What the LLM answers when it writes a file: the file's whole text, checked before it is kept."""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

_FENCE = re.compile(r"^\s*```[\w+-]*\n(?P<body>.*?)\n```\s*$", re.DOTALL)


class FileText(BaseModel):
    """The whole new text of one file."""

    content: str = Field(description="The complete Python source of the file, nothing else.")


def code_of(answer: FileText) -> str:
    """The answer's code without a Markdown fence around it, ending in one newline."""
    text = answer.content
    if match := _FENCE.match(text):
        text = match.group("body")
    return text.rstrip() + "\n"

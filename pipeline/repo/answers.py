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


class FileChange(BaseModel):
    """The whole new text of one file a repair changes."""

    path: str = Field(description="The file's path exactly as the prompt gives it, relative to the repository root.")
    content: str = Field(description="The complete new text of the file, nothing else.")


class RepairAnswer(BaseModel):
    """What the LLM answers when asked to repair a failure: the files it changes, each in full."""

    files: list[FileChange] = Field(description="Only the files that change; none when no change would help.")

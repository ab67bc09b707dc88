"""References to the paper that people write in comments and docstrings: `Eq. (3)`, `Sec. 3.2`, `eq:loss`.

One regex runs over the docstrings and the comments only (the caller says which lines are
docstrings, and which comment character its language uses).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ...schemas.code import Anchor
from .sites import SourceText

_NUMBER = r"(?:[A-Z]\.)?\d+(?:\.\d+)*[a-z]?"
_EQUATION_NUMBER = rf"(?:\(\s*{_NUMBER}\s*\)|{_NUMBER})"
_SEPARATOR = r"\s*(?:-|–|—|,|&|\bto\b|\band\b)\s*"
_LABEL_PREFIXES = (
    "eq|eqn|equation|sec|section|subsec|ssec|alg|algo|algorithm|tab|table|tbl|app|appendix|fig|figure|thm|lem|prop|def"
)
# The lookahead lets the engine skip every position that cannot start an anchor (four times faster).
_ANCHOR_RE = re.compile(
    rf"""
    (?=[EeSsAaTtFfLlPpDd§\\])
    (?:
    \\(?:eq|c|C|auto|name)?ref\*?\{{(?P<refs>[^{{}}\n]+)\}}
    | \b(?P<label>(?i:{_LABEL_PREFIXES}):[A-Za-z0-9_][\w:.\-]*)
    | \b(?i:equations?|eqns?\.?|eqs?\.?)\s*(?P<equations>{_EQUATION_NUMBER}(?:{_SEPARATOR}{_EQUATION_NUMBER})*)(?![\w])
    | (?:\b(?i:sections?|secs?\.?|appendix|appendices|app\.)\s*|§§?\s*)
      (?P<sections>(?:[A-Z]|\d+)(?:\.\d+)*(?:{_SEPARATOR}(?:[A-Z]|\d+)(?:\.\d+)*)*)(?![\w])
    | \b(?i:algorithms?|algs?\.?|algo\.?)\s*(?P<algorithms>\d+(?:{_SEPARATOR}\d+)*)(?![\w])
    | \b(?i:tables?|tabs?\.)\s*(?P<tables>(?:[A-Z]\.?)?\d+(?:{_SEPARATOR}(?:[A-Z]\.?)?\d+)*)(?![\w])
    )
    """,
    re.VERBOSE,
)
_TARGET_KINDS = {"equations": "equation", "sections": "section", "algorithms": "algorithm", "tables": "table"}
_NUMBER_RE = re.compile(rf"{_NUMBER}|[A-Z](?![\w])")
_RANGE_RE = re.compile(r"\s*(?:-|–|—|\bto\b)\s*")
_LONGEST_RANGE = 20  # "Eqs. 3-5" is 3, 4, 5; "Eqs. 3-500" is no range anyone wrote


def anchor_comment(header: str, item: str, section_title: str | None = None) -> str:
    """The comment line that links the definition on `header` to a paper item (`Eq. (3)`), indented
    as the definition; a section by its title only (a `§2.1` in it would be an anchor of its own)."""
    indent = header[: len(header) - len(header.lstrip())]
    return f"{indent}# Implements {item} of the paper" + (f" ({section_title})" if section_title else "") + "\n"


@dataclass(frozen=True, slots=True)
class TextBlock:
    """Lines [start, end] of a docstring, and the qualified name of what it documents."""

    start: int
    end: int
    owner: str | None


def find_anchors(
    text: SourceText,
    *,
    comment_markers: str,
    whole_line_comments: bool = False,
    docstrings: list[TextBlock] = (),
    function_of_comment: Callable[[int], str | None] = lambda line: None,
) -> list[Anchor]:
    """Every anchor in a docstring or a comment, each with the function or class it documents. A
    comment starts at one of `comment_markers` outside a string literal, or, with
    `whole_line_comments` (INI), only at the start of a line.

    Only docstrings and the text after a comment marker are searched, not the whole source."""
    found: list[tuple[int, re.Match[str], str | None]] = []
    for block in docstrings:
        start, end = text.offset(block.start, 0), text.offset(block.end + 1, 0)
        found += [(match.start(), match, block.owner) for match in _ANCHOR_RE.finditer(text.source, start, end)]
    in_docstrings = {line for block in docstrings for line in range(block.start, block.end + 1)}
    for comment in _comments(text.source, comment_markers, whole_line_comments):
        line, column = text.position(comment.start())
        if line in in_docstrings:
            continue
        matches = [
            match
            for match in _ANCHOR_RE.finditer(text.source, comment.start(), comment.end())
            if whole_line_comments
            or _in_comment(text.lines[line], column + match.start() - comment.start(), comment_markers)
        ]
        if matches:
            function = function_of_comment(line)
            found += [(match.start(), match, function) for match in matches]
    anchors = []
    for _, match, function in sorted(found, key=lambda item: item[0]):
        location = text.span(match.start(), match.end())
        anchors += [
            Anchor.model_construct(
                text=match.group(0), target_kind=target_kind, target=target, function=function, location=location
            )
            for target_kind, target in _targets(match)
        ]
    return anchors


def _comments(source: str, markers: str, whole_line: bool) -> Iterator[re.Match[str]]:
    """From each comment marker to the end of its line (whether it stands in a string is told later)."""
    marker = "[" + re.escape(markers) + "]"
    pattern = rf"^[ \t]*{marker}[^\r\n]*" if whole_line else rf"{marker}[^\r\n]*"
    return _comment_regex(pattern).finditer(source)


@functools.cache
def _comment_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.MULTILINE)


def _targets(match: re.Match[str]) -> Iterator[tuple[str, str]]:
    if match["refs"] is not None:
        for label in match["refs"].split(","):
            if label.strip():
                yield "label", label.strip()
        return
    if match["label"] is not None:
        yield "label", match["label"].rstrip(".-:")
        return
    group = match.lastgroup
    yield from ((_TARGET_KINDS[group], number) for number in _numbers(match[group]))


def _numbers(listed: str) -> list[str]:
    """ "3-5" → 3, 4, 5; "(1)-(2)" → 1, 2; "3.2 and 3.3" → 3.2, 3.3."""
    found = list(_NUMBER_RE.finditer(listed))
    numbers = [found[0].group(0)]
    for previous, current in itertools.pairwise(found):
        between = listed[previous.end() : current.start()].strip("() ")
        first, last = previous.group(0), current.group(0)
        is_range = _RANGE_RE.fullmatch(between) and first.isdigit() and last.isdigit()
        if is_range and 0 < int(last) - int(first) <= _LONGEST_RANGE:
            numbers += [str(number) for number in range(int(first) + 1, int(last))]
        numbers.append(last)
    return list(dict.fromkeys(numbers))


def _in_comment(line: str, column: int, markers: str) -> bool:
    """Whether `column` is past a comment marker that stands outside any string literal on the line."""
    quote = None
    index = 0
    while index < column:
        char = line[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char in markers:
            return True
        index += 1
    return False

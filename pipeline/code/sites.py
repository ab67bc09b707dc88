"""What the Python and config readers share: positions in a source, values as sites report them."""

from __future__ import annotations

import bisect
import functools
import math
import re
from dataclasses import dataclass

from ...schemas.code import CodeLocation, ComponentSite, ValueSite, ValueSiteKind
from .knowledge import code_vocabulary, normalize_name

# A value as read: a number, a boolean, a string, a tuple of numbers; None when it cannot be told.
Value = float | bool | str | tuple[float, ...] | None

# Python (and YAML) count \r\n, \r and \n as line ends; str.splitlines also splits on \f and \v.
_LINE_BREAK_RE = re.compile(r"\r\n|\r|\n")
MAX_RAW = 200  # the longest source text kept as a site's `raw`
NAMING_KEYS = ("name", "type", "_name_")  # optimizer: {name: adamw}: the value names its parent's component


@functools.lru_cache(maxsize=8)
def source_lines(source: str) -> tuple[str, ...]:
    """A source's lines as Python counts them; split once per text (an edit is read by the index,
    the settling pass and the equation checks, each asking for the same lines)."""
    return tuple(_LINE_BREAK_RE.split(source))


@functools.lru_cache(maxsize=8)
def line_starts(source: str) -> tuple[int, ...]:
    """The offset where each line of a source starts."""
    return (0, *(match.end() for match in _LINE_BREAK_RE.finditer(source)))


class SourceText:
    """A source's lines, for turning offsets (and ast's UTF-8 byte columns) into 0-based positions."""

    def __init__(self, file: str, source: str) -> None:
        self.file = file
        self.source = source
        self.lines = source_lines(source)

    def char_column(self, line: int, byte_column: int) -> int:
        """ast counts columns in UTF-8 bytes; positions here count characters."""
        text = self.lines[line] if line < len(self.lines) else ""
        if text.isascii():
            return byte_column
        return len(text.encode("utf-8")[:byte_column].decode("utf-8", errors="ignore"))

    def location_of_node(self, node) -> CodeLocation:
        """The span of an ast node (1-based lines and byte columns) as a CodeLocation."""
        line, end_line = node.lineno - 1, node.end_lineno - 1
        return CodeLocation.model_construct(
            file=self.file,
            line=line,
            column=self.char_column(line, node.col_offset),
            end_line=end_line,
            end_column=self.char_column(end_line, node.end_col_offset),
        )

    def segment_of_node(self, node) -> str:
        line, end_line = node.lineno - 1, node.end_lineno - 1
        start, end = self.char_column(line, node.col_offset), self.char_column(end_line, node.end_col_offset)
        if line == end_line:
            text = self.lines[line][start:end]
        else:
            text = "\n".join([self.lines[line][start:], *self.lines[line + 1 : end_line], self.lines[end_line][:end]])
        return text if len(text) <= MAX_RAW else text[: MAX_RAW - 1] + "…"

    @property
    def line_starts(self) -> tuple[int, ...]:
        return line_starts(self.source)

    def position(self, offset: int) -> tuple[int, int]:
        """(line, column) of a character offset into the source."""
        starts = self.line_starts
        line = bisect.bisect_right(starts, offset) - 1
        return line, offset - starts[line]

    def offset(self, line: int, column: int) -> int:
        """The character offset of a (line, column); the end of the source past its last line."""
        starts = self.line_starts
        return starts[line] + column if line < len(starts) else len(self.source)

    def span(self, start: int, end: int) -> CodeLocation:
        line, column = self.position(start)
        end_line, end_column = self.position(end)
        return CodeLocation.model_construct(
            file=self.file, line=line, column=column, end_line=end_line, end_column=end_column
        )


def format_number(number: float) -> str:
    if math.isfinite(number) and number == int(number) and abs(number) < 1e15:
        return str(int(number))
    return repr(number)


def format_tuple(numbers: tuple[float, ...]) -> str:
    """betas=(0.9, 0.95) is reported as the string "(0.9, 0.95)", whatever brackets it was written with."""
    inner = ", ".join(format_number(number) for number in numbers)
    return f"({inner},)" if len(numbers) == 1 else f"({inner})"


@dataclass(frozen=True, slots=True)
class Element:
    """One number of a tuple value, with where it is written."""

    value: Value
    raw: str
    location: CodeLocation


def value_sites(
    *,
    name: str,
    normalized: str | None,
    value: Value,
    raw: str,
    kind: ValueSiteKind,
    location: CodeLocation,
    elements: list[Element] | None = None,
    call: str | None = None,
    component: str | None = None,
    resolved_from: CodeLocation | None = None,
) -> list[ValueSite]:
    """The site of one value — and, for a tuple that stands for several settings (betas → beta1, beta2),
    one more site per element, named `betas[0]`, `betas[1]`, where that element is written."""
    vocabulary = code_vocabulary()
    expanded: list[ValueSite] = []
    if isinstance(value, tuple):
        if normalized in vocabulary.square and value and len(set(value)) == 1:
            reported: float | str | bool | None = value[0]  # image_size=(224, 224) is 224
        else:
            reported = format_tuple(value)
        parts = vocabulary.expand.get(normalized or "", ())
        if elements and len(parts) == len(value) == len(elements):
            for index, (part, element) in enumerate(zip(parts, elements, strict=True)):
                expanded.append(
                    _site(
                        f"{name}[{index}]",
                        part,
                        element.value,
                        element.raw,
                        kind,
                        element.location,
                        call,
                        component,
                        resolved_from,
                    )
                )
    else:
        reported = value
    return [_site(name, normalized, reported, raw, kind, location, call, component, resolved_from), *expanded]


def _site(name, normalized, value, raw, kind, location, call, component, resolved_from) -> ValueSite:
    # Built without validation: every field comes from this package, and sites are many.
    return ValueSite.model_construct(
        name=name,
        normalized_name=normalized,
        value=value,
        raw=raw,
        kind=kind,
        call=call,
        component=component,
        resolved_from=resolved_from,
        overridden=False,
        live=True,
        location=location,
    )


def component_site(kind: str, name: str, symbol: str, location: CodeLocation) -> ComponentSite:
    return ComponentSite.model_construct(kind=kind, name=name, symbol=symbol, live=True, location=location)


def text_component(setting: str | None, code_name: str, text: str, parent: str | None = None) -> tuple[str, str] | None:
    """(kind, component) when a string value names a component: optimizer="adamw" → (optimizer, AdamW);
    also under a naming key, for the component its parent names (optimizer: {name: adamw})."""
    vocabulary = code_vocabulary()
    kind = vocabulary.text_kinds.get(setting or "") or vocabulary.text_kinds.get(code_name.lower())
    if kind is None and parent and code_name in NAMING_KEYS:
        return text_component(normalize_name(parent), parent, text)
    if kind is None:
        return None
    component = vocabulary.text_component(kind, text)
    return (kind, component) if component else None

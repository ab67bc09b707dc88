"""The Markdown of a hover: the paper's equation as it looks there, its number and section, the
quoted sentence, and a link that opens the paper at that place."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote, unquote

from paperlens.pipeline.paper_images import EquationImage
from paperlens.pipeline.text import readable, shorten
from paperlens.pipeline.links import PaperItem, item_name, section_of
from paperlens.schemas import Algorithm, Equation, Evidence, Finding, Location, PaperSpec, Section, Table


QUOTE_CHARS = 400  # a quote in a hover


def paper_link(spec: PaperSpec, location: Location) -> str:
    """A file link to the place: `#L<line>,<column>` for a text source, `#page=<n>` for a PDF (with
    `&bbox=x0,y0,x1,y1` in PDF points when the item's box is known, for a viewer to highlight)."""
    uri = (Path(spec.root) / location.file).resolve().as_uri()
    if location.line is not None:
        return f"{uri}#L{location.line + 1},{(location.column or 0) + 1}"
    if not location.page:
        return uri
    box = f"&bbox={','.join(f'{v:.1f}' for v in location.bbox)}" if location.bbox else ""
    return f"{uri}#page={location.page}{box}"


def _open_link(spec: PaperSpec, location: Location) -> str:
    return f"[{location.short()}]({quote(paper_link(spec, location), safe=':/#,=%&')})"


def _quote(latex: str) -> str:
    return "> " + shorten(readable(latex), QUOTE_CHARS)


def equation_block(spec: PaperSpec, equation: Equation, image: EquationImage | None) -> list[str]:
    """The equation as an image when one could be made (standard Markdown; its title gives the
    width to show it at, the image being drawn larger for sharpness), and always its LaTeX (or
    text) as code, for a client that shows no images."""
    section = section_of(spec, equation)
    heading = f"**{item_name(equation)}**" + (f" · {item_name(section)}" if section else "")
    body = [f'![{item_name(equation)}]({image.data_uri} "{image.width // image.scale} px wide")', ""] if image is not None else []
    body += ["```latex", (equation.latex or equation.text).strip(), "```"]
    return [heading, "", *body, "", f"Open in the paper: {_open_link(spec, equation.location)}", ""]


def item_block(spec: PaperSpec, item: PaperItem, image: EquationImage | None) -> list[str]:
    if isinstance(item, Equation):
        return equation_block(spec, item, image)
    lines = [f"**{item_name(item)}**", ""]
    if isinstance(item, Algorithm):
        lines += [f"{n}. {' '.join(step.split())}" for n, step in enumerate(item.steps[:12], 1)] + [""]
    elif isinstance(item, Table) and item.caption:
        lines += [_quote(item.caption), ""]
    elif isinstance(item, Section):
        first = next((p for p in spec.paragraphs if p.section_id == item.id and p.kind == "text"), None)
        if first is not None:
            lines += [_quote(first.text), ""]
    return lines + [f"Open in the paper: {_open_link(spec, item.location)}", ""]


def evidence_lines(spec: PaperSpec, evidence: Evidence) -> list[str]:
    return [_quote(evidence.quote), "", f"— {_open_link(spec, evidence.location)}", ""]


def finding_markdown(spec: PaperSpec, finding: Finding, equations: list[tuple[Equation, EquationImage | None]]) -> str:
    lines = [f"**paperlens — {finding.kind}**: {finding.message}", ""]
    shown = {" ".join((e.latex or e.text).split()) for e, _ in equations}
    for evidence in finding.paper:
        if " ".join(evidence.quote.split()) not in shown:  # an equation shown below is not quoted too
            lines += evidence_lines(spec, evidence)
    for equation, image in equations:
        lines += equation_block(spec, equation, image)
    if finding.confidence_note:
        lines.append(f"_Confidence {finding.confidence:.0%}: {finding.confidence_note}_")
    if finding.compares:
        lines += ["", f"Compares {finding.compares}."]
    return "\n".join(lines).strip() + "\n"


def statement_markdown(spec: PaperSpec, setting: str, value: str, evidence: Evidence) -> str:
    lines = [f"**paperlens**: the paper states `{setting}` = `{readable(value)}`", "", *evidence_lines(spec, evidence)]
    return "\n".join(lines).strip() + "\n"


def items_markdown(spec: PaperSpec, blocks: list[tuple[PaperItem, EquationImage | None]], title: str | None = None) -> str:
    lines = [title, ""] if title else []
    for item, image in blocks:
        lines += item_block(spec, item, image)
    return "\n".join(lines).strip() + "\n"


_IMAGE_LINE_RE = re.compile(r"^!\[[^\]]*\]\([^)]*\)\n?", re.MULTILINE)
_LINK_RE = re.compile(r"\[([^\]]*)\]\(([^)\s]*)\)")
_FENCE_RE = re.compile(r"^```\w*\n?", re.MULTILINE)
_EMPHASIS_RE = re.compile(r"\*\*|(?<!\w)_(?=\S)|(?<=\S)_(?!\w)|`")


def plain_text(markdown: str) -> str:
    """A hover's Markdown for a client that shows plain text: no images, links as their text and
    target, code fences and emphasis marks dropped."""
    text = _IMAGE_LINE_RE.sub("", markdown)
    text = _LINK_RE.sub(lambda m: f"{m[1]} <{unquote(m[2])}>", text)
    text = _FENCE_RE.sub("", text)
    text = _EMPHASIS_RE.sub("", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"

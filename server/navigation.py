"""From code to the paper and back: hover, go to definition, references, document links,
workspace symbols, code lenses, and the command that opens the paper at a place."""

from __future__ import annotations

import asyncio

from lsprotocol import types as lsp
from pygls.capabilities import get_capability

from paperlens.pipeline.check.render import how_shown
from paperlens.pipeline.paper_images import EquationImage, equation_image
from paperlens.pipeline.links import (
    PaperItem, anchor_at, anchor_target, equations_of, implementations, item_name, items_at, matches_query, open_questions,
    paper_item_at, paper_symbols, statement_of, value_at,
)  # fmt: skip
from paperlens.schemas import CodeIndex, CodeLocation, Equation, FileIndex, Finding, FunctionSite, Location

from .app import PaperlensServer, server
from .convert import paper_location, to_range
from .hover import finding_markdown, items_markdown, paper_link, plain_text, statement_markdown

OPEN_PAPER = "paperlens.openPaper"
SYMBOL_KINDS = {
    "section": lsp.SymbolKind.Namespace,
    "equation": lsp.SymbolKind.Function,
    "algorithm": lsp.SymbolKind.Method,
    "table": lsp.SymbolKind.Struct,
    "setting": lsp.SymbolKind.Constant,
}


def _file_index(ls: PaperlensServer, uri: str) -> FileIndex | None:
    return ls.file_indexes.get(ls.relative(uri) or "")


async def _images(ls: PaperlensServer, equations: list[Equation]) -> list[tuple[Equation, EquationImage | None]]:
    """Each equation with its image (rendered off the event loop; cached after the first time)."""
    spec = ls.spec
    assert spec is not None
    images = await asyncio.to_thread(lambda: [equation_image(spec, e) for e in equations])
    return list(zip(equations, images, strict=True))


WARMED_EQUATIONS = 50


async def warm_images(ls: PaperlensServer) -> None:
    """Once the workspace is read, typeset the equations its anchors name (the first image also
    loads the renderer), so that no hover waits for them. One at a time, in pauses of the typing:
    a render holds the interpreter for tens of milliseconds, and the edits' diagnostics come first."""
    await ls.wait_until_idle()
    spec, index = ls.spec, ls.index
    if spec is None or index is None:
        return
    named = {id(item): item for file in index.files for anchor in file.anchors if isinstance(item := anchor_target(spec, anchor), Equation)}
    for equation in list(named.values())[:WARMED_EQUATIONS]:
        await ls.wait_until_idle()
        await asyncio.to_thread(equation_image, spec, equation)


server.start_hooks.append(warm_images)


def _hover(ls: PaperlensServer, markdown: str, where: lsp.Range | None = None) -> lsp.Hover:
    """Markdown, or plain text for a client that prefers it (`hover.contentFormat`, in its order)."""
    formats = get_capability(ls.client_capabilities, "text_document.hover.content_format", None) or [lsp.MarkupKind.PlainText]
    kind = next((f for f in formats if f in (lsp.MarkupKind.Markdown, lsp.MarkupKind.PlainText)), lsp.MarkupKind.PlainText)
    value = markdown if kind == lsp.MarkupKind.Markdown else plain_text(markdown)
    return lsp.Hover(contents=lsp.MarkupContent(kind=kind, value=value), range=where)


def _span_length(code: CodeLocation) -> tuple[int, int]:
    return ((code.end_line or code.line) - code.line, (code.end_column if code.end_column is not None else code.column + 1) - code.column)


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
async def hover(ls: PaperlensServer, params: lsp.HoverParams) -> lsp.Hover | None:
    """What is under the cursor: a finding with the paper's side; an anchor's equation; the equations
    a function implements; the paper's statement of a value. Else a finding of the line."""
    spec, uri = ls.spec, params.text_document.uri
    if spec is None:
        return None
    line, character = params.position.line, ls.positions.column(uri, params.position)
    findings = [f for f in ls.findings.get(uri, []) if f.code is not None]
    file = _file_index(ls, uri)
    function = next((f for f in file.functions if f.location.line == line), None) if file is not None else None
    equations = equations_of(spec, file, function) if file is not None and function is not None else []
    under = sorted((f for f in findings if _under(f.code, line, character)), key=lambda f: _span_length(f.code))
    under = [f for f in under if not (equations and f.kind == "agreement")]  # said with the equations below
    if under:
        return await _finding_hover(ls, uri, under[0])
    if file is not None:
        if items := items_at(spec, file, line, character):
            anchor = anchor_at(file, line, character)
            assert anchor is not None
            return _hover(ls, items_markdown(spec, await _item_images(ls, items)), to_range(anchor.location, uri, ls.positions))
        if function is not None and equations:
            agreed = _agreement(ls, uri, function)
            shown = f" (its result matches: {how_shown(agreed)})" if agreed else ""
            markdown = items_markdown(spec, await _item_images(ls, equations), title=f"`{function.name}` implements{shown}:")
            for pair in ls.undecided.get(uri, []):
                if pair.line == function.location.line:
                    markdown += f"\n\n_Not compared with Eq. ({pair.equation}) as expressions: {pair.reason}_"
                    if pair.binding is not None:
                        markdown += " (a code action on this line records which name stands for which symbol)"
            return _hover(ls, markdown)
        site = value_at(file, line, character)
        if site is not None and ls.facts is not None and (stated := statement_of(ls.facts, site)) is not None:
            return _hover(ls, statement_markdown(spec, site.normalized_name or site.name, *stated), to_range(site.location, uri, ls.positions))
    on_the_line = [f for f in findings if f.code.line <= line <= (f.code.end_line if f.code.end_line is not None else f.code.line)]
    return await _finding_hover(ls, uri, on_the_line[0]) if on_the_line else None


def _under(code: CodeLocation, line: int, character: int) -> bool:
    """Whether a span holds a position (its end too: the cursor just after a value is on it)."""
    end = (code.end_line if code.end_line is not None else code.line, code.end_column if code.end_column is not None else code.column + 1)
    return (code.line, code.column) <= (line, character) <= end


async def _finding_hover(ls: PaperlensServer, uri: str, finding: Finding) -> lsp.Hover:
    spec = ls.spec
    assert spec is not None and finding.code is not None
    shown = [paper_item_at(spec, e.location.file, e.location.line) for e in finding.paper if e.location.line is not None]
    equations = list({id(e): e for e in shown if isinstance(e, Equation)}.values())
    return _hover(ls, finding_markdown(spec, finding, await _images(ls, equations)), to_range(finding.code, uri, ls.positions))


async def _item_images(ls: PaperlensServer, items: list[PaperItem]) -> list[tuple[PaperItem, EquationImage | None]]:
    equations = [item for item in items if isinstance(item, Equation)]
    images = {id(e): image for e, image in await _images(ls, equations)}
    return [(item, images.get(id(item))) for item in items]


@server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
def definition(ls: PaperlensServer, params: lsp.DefinitionParams) -> lsp.Location | None:
    """From an anchor (`Eq. (3)`, `eq:loss`, `Sec. 2.1`, `Algorithm 1`), or a value the paper states,
    to that place in the paper's source. A PDF has no text place: its links and lenses open it."""
    file, spec = _file_index(ls, params.text_document.uri), ls.spec
    if file is None or spec is None:
        return None
    line, character = params.position.line, ls.positions.column(params.text_document.uri, params.position)
    if (anchor := anchor_at(file, line, character)) is not None:
        item = anchor_target(spec, anchor)
        return paper_location(spec, item.location, ls.positions) if item is not None else None
    site = value_at(file, line, character)
    if site is not None and ls.facts is not None and (stated := statement_of(ls.facts, site)) is not None:
        return paper_location(spec, stated[1].location, ls.positions)
    return None


def workspace_view(ls: PaperlensServer) -> CodeIndex:
    """The workspace as saved, with open files as the editor holds them."""
    assert ls.root is not None
    saved = ls.index.files if ls.index is not None else []
    open_files = {f.file: f for f in ls.file_indexes.values()}
    files = [open_files.pop(f.file, f) for f in saved] + list(open_files.values())
    return CodeIndex(root=str(ls.root), files=files)


@server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
def references(ls: PaperlensServer, params: lsp.ReferenceParams) -> list[lsp.Location] | None:
    """From an equation (or algorithm, section, table) in the paper's source, or from an anchor in
    code, to every place in the code that implements it."""
    spec, uri = ls.spec, params.text_document.uri
    if spec is None or ls.root is None:
        return None
    item: PaperItem | None = None
    if (paper_file := ls.paper_file(uri)) is not None:
        item = paper_item_at(spec, paper_file, params.position.line)
    elif (file := _file_index(ls, uri)) is not None and (anchor := anchor_at(file, params.position.line, ls.positions.column(uri, params.position))):
        item = anchor_target(spec, anchor)
    if item is None:
        return None
    places = {(c.file, c.line, c.column): c for c in implementations(spec, workspace_view(ls), item)}.values()
    return [lsp.Location(uri=(target := (ls.root / code.file).as_uri()), range=to_range(code, target, ls.positions)) for code in places]


@server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_LINK)
def document_links(ls: PaperlensServer, params: lsp.DocumentLinkParams) -> list[lsp.DocumentLink]:
    file, spec = _file_index(ls, params.text_document.uri), ls.spec
    if file is None or spec is None:
        return []
    links = []
    tooltips = get_capability(ls.client_capabilities, "text_document.document_link.tooltip_support", False)
    for anchor in file.anchors:
        item = anchor_target(spec, anchor)
        if item is not None:
            tooltip = f"Open {item_name(item)} in the paper" if tooltips else None
            where = to_range(anchor.location, params.text_document.uri, ls.positions)
            links.append(lsp.DocumentLink(range=where, target=paper_link(spec, item.location), tooltip=tooltip))
    return links


@server.feature(lsp.WORKSPACE_SYMBOL)
def workspace_symbols(ls: PaperlensServer, params: lsp.WorkspaceSymbolParams) -> list[lsp.WorkspaceSymbol]:
    """The paper's sections, equations, algorithms, tables and stated settings."""
    spec = ls.spec
    if spec is None:
        return []
    uri_only = get_capability(ls.client_capabilities, "workspace.symbol.resolve_support", None) is not None
    found = []
    for symbol in paper_symbols(spec):
        if not matches_query(f"{symbol.name} {symbol.detail}", params.query):
            continue
        location: lsp.Location | lsp.LocationUriOnly | None = paper_location(spec, symbol.location, ls.positions)
        if location is None and uri_only:
            location = lsp.LocationUriOnly(uri=paper_link(spec, symbol.location))
        if location is not None:
            found.append(lsp.WorkspaceSymbol(name=symbol.name, kind=SYMBOL_KINDS[symbol.kind], location=location, container_name=symbol.detail or None))
    return found


@server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
def code_lenses(ls: PaperlensServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
    """Over each function an anchor links to equations: "Implements Eq. (3) · 1 open question", and
    "· matches it: shown symbolically" once the analysis showed it computes it; over one no anchor
    links that the analysis showed computes an equation: "Computes Eq. (3): shown numerically"."""
    file, spec = _file_index(ls, params.text_document.uri), ls.spec
    if file is None or spec is None or ls.facts is None:
        return []
    lenses = []
    for function in file.functions:
        equations = equations_of(spec, file, function)
        agreed = _agreement(ls, params.text_document.uri, function)
        if equations:
            questions = {g.id for e in equations for g in open_questions(spec, ls.gaps, ls.facts, e)}
            title = "Implements " + ", ".join(item_name(e) for e in equations)
            if questions:
                title += f" · {len(questions)} open question" + ("s" if len(questions) > 1 else "")
            if agreed:
                title += " · matches it: " + how_shown(agreed)
            target = equations[0].location
        elif agreed:
            said = agreed.message.removeprefix(function.qualname + " ")
            title = said[:1].upper() + said[1:]
            target = agreed.paper[0].location
        else:
            continue
        where = ls.positions.position(params.text_document.uri, function.location.line, function.location.column)
        lenses.append(
            lsp.CodeLens(
                range=lsp.Range(start=where, end=where),
                command=lsp.Command(title=title, command=OPEN_PAPER, arguments=[_location_argument(target)]),
            )
        )
    return lenses


def _agreement(ls: PaperlensServer, uri: str, function: FunctionSite) -> Finding | None:
    """The analysis's agreement of a function with an equation: it stands at the function's name."""
    return next(
        (f for f in ls.findings.get(uri, []) if f.kind == "agreement" and f.status == "open" and f.code is not None and f.code.line == function.location.line),
        None,
    )


def _location_argument(location: Location) -> dict:
    return location.model_dump(mode="json", exclude_none=True)


@server.command(OPEN_PAPER)
async def open_paper(ls: PaperlensServer, where: dict) -> bool | dict:
    """Show the paper at a place: the source scrolled to the line, or the PDF (the client's viewer).
    A client that cannot be asked to show a document gets the place to open itself:
    `{"uri", "range"}` (no range for a PDF page)."""
    spec = ls.spec
    if spec is None:
        return False
    location = Location.model_validate(where)
    target = paper_location(spec, location, ls.positions)
    if not get_capability(ls.client_capabilities, "window.show_document.support", False):
        if target is not None:
            return {"uri": target.uri, "range": target.range}
        return {"uri": paper_link(spec, location)}
    if target is not None:
        params = lsp.ShowDocumentParams(uri=target.uri, selection=target.range, take_focus=True)
    else:
        params = lsp.ShowDocumentParams(uri=paper_link(spec, location).split("#")[0], external=True)
    result = await ls.window_show_document_async(params)
    return bool(result and result.success)

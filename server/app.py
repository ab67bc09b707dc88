"""The paperlens language server: the paper's checks, live in the editor.

Handlers stay thin: they find the document, call `paperlens.pipeline`, and convert the result to
LSP types (`convert.py`). Slow work (reading the paper, indexing the workspace) runs in a thread, and
analysis after an edit is debounced so a burst of edits gives one analysis of the last version.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
import sys
from pathlib import Path

from lsprotocol import types as lsp
from pygls.capabilities import get_capability
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from paperlens.pipeline.check import PaperFacts, WorkspaceContext, check_file, paper_facts
from paperlens.pipeline.code import index_source, index_workspace
from paperlens.pipeline.decisions import DECISIONS_PATH, decisions_path, load_decisions, record, render_decisions
from paperlens.pipeline.errors import UserError
from paperlens.pipeline.ingest import read_paper
from paperlens.pipeline.workspace import find_paper, load_settings
from paperlens.pipeline.readiness import assess
from paperlens.schemas import CodeIndex, DecisionsFile, FileIndex, Finding, Gap, PaperSpec, WorkspaceSettings

from .convert import gap_diagnostic, hover_markdown, paper_location, to_diagnostic, to_range

log = logging.getLogger("paperlens.server")
DEBOUNCE_SECONDS = 0.3
WATCHED = ("**/.paperlens/decisions.yaml", "**/*.tex", "**/*.md", "**/*.pdf")


class PaperlensServer(LanguageServer):
    """All state lives here: the paper, the workspace index, and pending analyses per document."""

    def __init__(self) -> None:
        super().__init__(name="paperlens", version="0.1.0")
        self.root: Path | None = None
        self.settings = WorkspaceSettings()
        self.paper_override: str | None = None
        self.settings_problem: str | None = None
        self.spec: PaperSpec | None = None
        self.facts: PaperFacts | None = None
        self.index: CodeIndex | None = None
        self.context = WorkspaceContext()
        self.decisions = DecisionsFile()
        self.gaps: list[Gap] = []
        self.ready = asyncio.Event()
        self.pending: dict[str, asyncio.Task] = {}
        self.findings: dict[str, list[Finding]] = {}
        self.file_indexes: dict[str, FileIndex] = {}

    # -- pipeline calls (run in a thread) -----------------------------------------------------

    def load(self) -> None:
        """Read the settings, the paper, the decisions and the workspace."""
        self.load_paper()
        self.load_workspace()

    def load_paper(self) -> None:
        assert self.root is not None
        self.settings = load_settings(self.root)
        paper = Path(self.paper_override).expanduser() if self.paper_override else find_paper(self.root, self.settings)
        if not paper.is_absolute():
            paper = self.root / paper
        self.spec = read_paper(paper)
        self.decisions = load_decisions(self.root)
        readiness = assess(self.spec)
        self.facts = paper_facts(self.spec, self.decisions, readiness)
        self.gaps = readiness.gaps

    def load_workspace(self) -> None:
        assert self.root is not None
        self.index = index_workspace(self.root, include=self.settings.include, exclude=self.settings.exclude)
        self.context = WorkspaceContext.of(self.index)

    def analyse(self, relative: str, source: str) -> list[Finding]:
        assert self.root is not None and self.facts is not None
        file_index = index_source(relative, source)
        self.file_indexes[relative] = file_index
        return check_file(self.root, self.facts, file_index, self.context)

    def paper_file(self, uri: str) -> str | None:
        """The paper's own name for a file of the paper (.tex or .md), else None."""
        path = to_fs_path(uri)
        if path is None or self.spec is None or self.spec.source_format == "pdf":
            return None
        try:
            name = Path(path).resolve().relative_to(Path(self.spec.root)).as_posix()
        except ValueError:
            return None
        return name if name in self.spec.files else None

    def relative(self, uri: str) -> str | None:
        path = to_fs_path(uri)
        if path is None or self.root is None:
            return None
        try:
            return Path(path).resolve().relative_to(self.root).as_posix()
        except ValueError:
            return None


server = PaperlensServer()


def _settings_from(options: object) -> tuple[str | None, str | None]:
    """The paper from `initializationOptions` ({"paperlens": {"paper": ...}} or {"paper": ...}), and
    a message when the value is malformed (it is then ignored)."""
    if not isinstance(options, dict):
        return None, None
    section = options.get("paperlens", options)
    paper = section.get("paper") if isinstance(section, dict) else None
    if paper is not None and not isinstance(paper, str):
        return None, f"paperlens: the setting paperlens.paper must be a path, not {paper!r}; using the default"
    return paper, None


@server.feature(lsp.INITIALIZE)
def on_initialize(ls: PaperlensServer, params: lsp.InitializeParams) -> None:
    folders = params.workspace_folders or []
    uri = folders[0].uri if folders else params.root_uri
    path = to_fs_path(uri) if uri else None
    ls.root = Path(path).resolve() if path else Path.cwd()
    ls.paper_override, ls.settings_problem = _settings_from(params.initialization_options)


@contextlib.asynccontextmanager
async def _progress(ls: PaperlensServer, title: str):
    """Work-done progress when the client shows it; a fresh token each time (pygls keeps them)."""
    if not get_capability(ls.client_capabilities, "window.work_done_progress", False):
        yield lambda message, percentage: None
        return
    token = str(uuid.uuid4())
    await ls.work_done_progress.create_async(token)
    ls.work_done_progress.begin(token, lsp.WorkDoneProgressBegin(title=title, percentage=0))

    def report(message: str, percentage: int) -> None:
        ls.work_done_progress.report(token, lsp.WorkDoneProgressReport(message=message, percentage=percentage))

    try:
        yield report
    finally:
        ls.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message="ready"))


async def _register(ls: PaperlensServer, watchers: list[lsp.FileSystemWatcher]) -> None:
    registration = lsp.Registration(
        id="paperlens-watch",
        method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=lsp.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
    )
    try:
        await ls.client_register_capability_async(lsp.RegistrationParams(registrations=[registration]))
    except Exception as err:  # a client that claims the capability but refuses: saves still reload
        log.warning("could not watch the paper and decisions files: %s", err)


@server.feature(lsp.INITIALIZED)
async def on_initialized(ls: PaperlensServer, params: lsp.InitializedParams) -> None:
    if ls.settings_problem:
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=ls.settings_problem))
    if get_capability(ls.client_capabilities, "workspace.did_change_watched_files.dynamic_registration", False):
        # The decisions file and the paper change on disk, outside the editor's buffers.
        watchers = [lsp.FileSystemWatcher(glob_pattern=pattern) for pattern in WATCHED]
        await _register(ls, watchers)
    try:
        async with _progress(ls, "paperlens: reading the paper") as report:
            await asyncio.to_thread(ls.load_paper)
            report("indexing the workspace", 50)
            await asyncio.to_thread(ls.load_workspace)
    except UserError as err:
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"paperlens: {err}"))
        return
    ls.ready.set()
    for document in list(ls.workspace.text_documents.values()):
        _schedule(ls, document.uri, delay=0)


async def _analyse_later(ls: PaperlensServer, uri: str, delay: float) -> None:
    await asyncio.sleep(delay)
    await ls.ready.wait()
    if uri not in ls.workspace.text_documents:
        return
    document = ls.workspace.get_text_document(uri)
    paper_file = ls.paper_file(uri)
    if paper_file is not None:
        # The paper's own gaps, in the paper (as saved: the reading is of the files on disk).
        gaps = [g for g in ls.gaps if g.evidence[0].location.file == paper_file]
        ls.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, version=document.version, diagnostics=[gap_diagnostic(g) for g in gaps])
        )
        return
    relative = ls.relative(uri)
    if relative is None or not relative.endswith(".py"):
        return
    version = document.version
    findings = await asyncio.to_thread(ls.analyse, relative, document.source)
    if ls.workspace.get_text_document(uri).version != version:
        return  # a newer edit is on its way
    ls.findings[uri] = findings
    ls.text_document_publish_diagnostics(
        lsp.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=[to_diagnostic(f, ls.spec) for f in findings])
    )


def _schedule(ls: PaperlensServer, uri: str, delay: float = DEBOUNCE_SECONDS) -> None:
    if (previous := ls.pending.pop(uri, None)) is not None:
        previous.cancel()
    ls.pending[uri] = asyncio.ensure_future(_analyse_later(ls, uri, delay))


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: PaperlensServer, params: lsp.DidOpenTextDocumentParams) -> None:
    _schedule(ls, params.text_document.uri, delay=0)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: PaperlensServer, params: lsp.DidChangeTextDocumentParams) -> None:
    _schedule(ls, params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: PaperlensServer, params: lsp.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    if (task := ls.pending.pop(uri, None)) is not None:
        task.cancel()
    ls.findings.pop(uri, None)
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


async def _reload(ls: PaperlensServer) -> None:
    """The paper or the decisions changed: read them again, then re-check every open file."""
    try:
        await asyncio.to_thread(ls.load)
    except UserError as err:
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"paperlens: {err}"))
        return
    for document in list(ls.workspace.text_documents.values()):
        _schedule(ls, document.uri, delay=0)


def _is_input_of_the_check(ls: PaperlensServer, uri: str) -> bool:
    """The decisions file, or one of the paper's own files."""
    if ls.relative(uri) == DECISIONS_PATH.as_posix():
        return True
    path = to_fs_path(uri)
    if not path or ls.spec is None:
        return False
    try:
        return Path(path).resolve().relative_to(Path(ls.spec.root)).as_posix() in ls.spec.files
    except ValueError:
        return False


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: PaperlensServer, params: lsp.DidSaveTextDocumentParams) -> None:
    if _is_input_of_the_check(ls, params.text_document.uri):
        await _reload(ls)


@server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
async def did_change_watched_files(ls: PaperlensServer, params: lsp.DidChangeWatchedFilesParams) -> None:
    if any(_is_input_of_the_check(ls, change.uri) for change in params.changes):
        await _reload(ls)


@server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]))
def code_actions(ls: PaperlensServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    """Use the paper's value (an exact edit); record a deviation or an assumption (an edit of the
    decisions file, which the user sees and can undo)."""
    uri = params.text_document.uri
    first, last = params.range.start.line, params.range.end.line
    actions = []
    for finding in ls.findings.get(uri, []):
        code = finding.code
        if code is None or finding.status != "open" or not (code.line <= last and (code.end_line or code.line) >= first):
            continue
        diagnostic = to_diagnostic(finding, ls.spec)
        for fix in finding.fixes:
            if fix.edit is not None:
                edit = lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(range=to_range(fix.edit.location), new_text=fix.edit.new_text)]})
            elif fix.kind in ("record-deviation", "record-assumption") and ls.root is not None:
                edit = _decisions_edit(ls, finding)
            else:
                continue
            actions.append(lsp.CodeAction(title=fix.title, kind=lsp.CodeActionKind.QuickFix, diagnostics=[diagnostic], edit=edit, is_preferred=fix.kind == "use-paper-value"))
    return actions


def _decisions_edit(ls: PaperlensServer, finding: Finding) -> lsp.WorkspaceEdit:
    assert ls.root is not None
    path = decisions_path(ls.root)
    reason = "TODO: say why" if finding.kind == "divergence" else "TODO: say why this value"
    text = render_decisions(record(ls.decisions, finding, reason))
    uri = path.as_uri()
    if not path.exists():
        return lsp.WorkspaceEdit(
            document_changes=[
                lsp.CreateFile(uri=uri, options=lsp.CreateFileOptions(ignore_if_exists=True)),
                lsp.TextDocumentEdit(
                    text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
                    edits=[lsp.TextEdit(range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0)), new_text=text)],
                ),
            ]
        )
    old = path.read_text(encoding="utf-8").split("\n")
    whole = lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=len(old), character=0))
    return lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(range=whole, new_text=text)]})


@server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
def definition(ls: PaperlensServer, params: lsp.DefinitionParams) -> lsp.Location | None:
    """From an anchor in code (`Eq. (3)`, `eq:loss`, `Sec. 2.1`, `Algorithm 1`) to that place in the paper."""
    relative = ls.relative(params.text_document.uri)
    file_index = ls.file_indexes.get(relative or "")
    if file_index is None or ls.spec is None:
        return None
    line, character = params.position.line, params.position.character
    for anchor in file_index.anchors:
        where = anchor.location
        if where.line == line and where.column <= character <= (where.end_column if where.end_column is not None else where.column + len(anchor.text)):
            target = _anchor_target(ls.spec, anchor.target_kind, anchor.target)
            return paper_location(ls.spec, target) if target is not None else None
    return None


def _anchor_target(spec: PaperSpec, kind: str, target: str):
    if kind in ("equation", "label"):
        return next((e.location for e in spec.equations if target in (e.number, e.label)), None)
    if kind == "section":
        return next((s.location for s in spec.sections if target in (s.number, s.label)), None)
    if kind == "algorithm":
        return next((a.location for a in spec.algorithms if target in (a.number, a.label)), None)
    if kind == "table":
        return next((t.location for t in spec.tables if target in (t.number, t.label)), None)
    return None


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
def hover(ls: PaperlensServer, params: lsp.HoverParams) -> lsp.Hover | None:
    """The finding under the cursor with the paper's quote, or what the paper states for the value."""
    line = params.position.line
    for finding in ls.findings.get(params.text_document.uri, []):
        code = finding.code
        if code is not None and code.line <= line <= (code.end_line if code.end_line is not None else code.line):
            return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=hover_markdown(finding)))
    return None


def main() -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO)  # stdout is the JSON-RPC channel
    logging.getLogger("pygls").setLevel(logging.WARNING)  # it logs every message it sends at INFO
    server.start_io()

"""The paperlens language server: the paper's checks, live in the editor.

This module holds the state (on `PaperlensServer`) and the document life cycle: settings, loading the
paper and the workspace, watching them on disk, and publishing diagnostics. `navigation.py` and
`actions.py` add the requests. Slow work runs in threads; analysis after an edit is debounced so a
burst of edits gives one analysis of the last version.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import re
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import attrs
import cattrs
from lsprotocol import types as lsp
from pygls.capabilities import get_capability
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest, JsonRpcMethodNotFound, JsonRpcParseError
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from paperlens.pipeline.check import PaperFacts, WorkspaceContext, check_open_file, paper_facts, unimplemented
from paperlens.pipeline.check.render import undecided_message
from paperlens.pipeline.code import MAX_FILE_BYTES, index_document, index_edit, index_workspace
from paperlens.pipeline.code.settle import OtherFiles, settle_one
from paperlens.pipeline.decisions import DECISIONS_PATH, load_decisions
from paperlens.pipeline.errors import UserError
from paperlens.pipeline.files import UnreadableFile, resolved_path
from paperlens.pipeline.ingest import read_paper
from paperlens.pipeline.readiness import assess
from paperlens.pipeline.workspace import SETTINGS_FILES, editor_settings, find_paper, load_settings
from paperlens.schemas import CodeIndex, DecisionsFile, EditorSettings, FileIndex, Finding, Gap, PaperSpec, Undecided, ReadinessReport, WorkspaceSettings
from paperlens.schemas.repo import RepoPlan

from .convert import gap_diagnostic, paper_diagnostic, to_diagnostic
from .positions import Positions
from .watch import DiskWatcher

log = logging.getLogger("paperlens.server")
REINDEX = "paperlens.reindex"
COALESCE_SECONDS = 0.2  # disk events closer than this are one change (a save writes several)
QUIET_SECONDS = 1.0  # no edit for this long: the user paused, and background work may run
IDLE_COLLECT_SECONDS = 2.0  # a full garbage collection waits for this long a pause in the edits
YOUNG_GARBAGE = 20_000  # objects allocated since the last collection that make one worth it at once
CHECKS, GAPS = "checks", "gaps"  # producers of diagnostics; each owns its own per document
WORKSPACE_GLOBS = ("**/*.py", "**/*.{yaml,yml,json,toml,ini,cfg}", "**/*.{md,sh,bash,ipynb}", "**/.paperlens/decisions.yaml")
PAPER_SUFFIXES = (".tex", ".md", ".pdf", ".bib", ".sty")
PAPER_GLOB = "**/*.{tex,md,pdf,bib,sty}"


class IndexingCancelled(Exception):
    """The user cancelled the indexing from the progress notification."""


@attrs.define
class UnreadableRequest:
    """A request whose params do not fit its method (no position, a line of -1, a range "nope")."""

    id: int | str
    method: str
    reason: str
    jsonrpc: str = "2.0"


# The client's mistakes: answered with their error, logged as a warning, never shown as the server's.
CLIENT_ERRORS = (JsonRpcInvalidParams, JsonRpcInvalidRequest, JsonRpcMethodNotFound)


class PaperlensProtocol(LanguageServerProtocol):
    """Every request gets an answer: one whose params cannot be read gets -32602 naming the request
    (the library would drop it, and the client would wait for ever)."""

    def structure_message(self, data: dict):
        if "jsonrpc" in data and "id" in data and "method" in data and "error" not in data:
            request_type = self.get_message_type(data["method"])
            if request_type is not None:
                try:
                    return self._converter.structure(data, request_type)
                except Exception as error:  # cattrs' validation errors, and what a validator raises
                    return UnreadableRequest(id=data["id"], method=str(data["method"]), reason=_first_line(error))
        return super().structure_message(data)

    def handle_message(self, message) -> None:
        if isinstance(message, UnreadableRequest):
            log.warning("invalid params for %s (request %s): %s", message.method, message.id, message.reason)
            error = lsp.ResponseError(code=JsonRpcInvalidParams.CODE, message=f"invalid params for {message.method}: {message.reason}")
            self._send_response(message.id, error=error)
            return
        super().handle_message(message)


def _unparsable(error: Exception) -> bool:
    """Whether pygls's read loop failed on the message's body itself (not JSON, not UTF-8, nested
    past the decoder), not on handling a message it could read."""
    return isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)) or (
        isinstance(error, RecursionError) and "decoding a JSON" in str(error)
    )


def _first_line(error: Exception) -> str:
    """What was wrong, in one line, with where: "required field missing @ $.params.position"."""
    if isinstance(error, cattrs.BaseValidationError):  # the path in the protocol's names (textDocument)
        return "; ".join(re.sub(r"_([a-z])", lambda m: m[1].upper(), line) for line in cattrs.transform_error(error, path="$"))
    return str(error).strip().split("\n", 1)[0] or type(error).__name__


class PaperlensServer(LanguageServer):
    """All state lives here: settings, the paper, the workspace index, and per-document work."""

    def __init__(self) -> None:
        super().__init__(name="paperlens", version="0.1.0", protocol_cls=PaperlensProtocol)
        self.root: Path | None = None
        self.initial_options: object = None
        self.settings = EditorSettings()
        self.spec: PaperSpec | None = None
        self.facts: PaperFacts | None = None
        self.decisions = DecisionsFile()
        self.readiness: ReadinessReport | None = None
        self.gaps: list[Gap] = []
        self.index: CodeIndex | None = None
        self.context = WorkspaceContext()
        self.ready = asyncio.Event()
        self.pending: dict[str, asyncio.Task] = {}
        self.findings: dict[str, list[Finding]] = {}
        self.undecided: dict[str, list[Undecided]] = {}  # per document: anchored functions not compared, and why
        self.analysed_versions: dict[str, int | None] = {}  # the document version each uri's findings are of
        self.positions = Positions()  # columns as the client counts them, once initialize negotiated it
        self.unimplemented: list[Finding] = []  # the paper's equations and algorithms no code cites
        self.file_indexes: dict[str, FileIndex] = {}
        self.relative_paths: dict[tuple[Path, str], str | None] = {}  # (root, path) → the path relative to root
        self.indexed_sources: dict[str, str] = {}  # the text each of file_indexes was read from
        # Per open document, the index it was gathered from and what the rest of that index says of it.
        self.other_files: dict[str, tuple[CodeIndex, OtherFiles]] = {}
        self.diagnostics: dict[str, dict[str, list[lsp.Diagnostic]]] = {}
        self.changed_on_disk: set[Path] = set()
        self.coalescing: asyncio.TimerHandle | None = None
        self.collecting: asyncio.TimerHandle | None = None
        self.last_edit = 0.0  # time.monotonic() of the last change to an open document
        self.shut_down = False  # the client asked for a shutdown (the exit code says so)
        self.watcher: DiskWatcher | None = None
        self.reporting_error = False
        self.workspace_settings = WorkspaceSettings()
        self.smoke_task: asyncio.Task | None = None
        self.smoke_cancel: threading.Event | None = None
        self.checklist_task: asyncio.Task | None = None
        # A scaffolded repository's plan.json → ((mtime_ns, size, inode), the plan or None when invalid).
        self.repo_plans: dict[Path, tuple[tuple[int, int, int], RepoPlan | None]] = {}
        # What other modules do when the session starts, when the workspace has been read (again) and
        # when a file is saved: the smoke runs, the checklist.
        self.start_hooks: list[Callable[[PaperlensServer], Awaitable[None]]] = []
        self.save_hooks: list[Callable[[PaperlensServer, Path], None]] = []
        self.load_hooks: list[Callable[[PaperlensServer], None]] = []

    # -- pipeline calls (run in a thread) -----------------------------------------------------

    def load_paper(self) -> None:
        """Read the paper, the decisions and what the checks compare code with."""
        assert self.root is not None
        self.workspace_settings = load_settings(self.root)
        paper = Path(self.settings.paper).expanduser() if self.settings.paper else find_paper(self.root, self.workspace_settings)
        self.spec = read_paper(paper if paper.is_absolute() else self.root / paper)
        self.decisions = load_decisions(self.root)
        self.readiness = assess(self.spec)
        self.facts = paper_facts(self.spec, self.decisions)
        self.gaps = self.readiness.gaps

    def load_workspace(self, progress: Callable[[int, int], None] | None = None) -> None:
        assert self.root is not None
        self.workspace_settings = load_settings(self.root)
        self.index = index_workspace(
            self.root, include=self.workspace_settings.include, exclude=self.workspace_settings.exclude, previous=self.index, progress=progress
        )
        self.context = WorkspaceContext.of(self.index)
        # What the paper has and no code cites: shown in the paper, where it has a place.
        self.unimplemented = unimplemented(self.spec, self.index) if self.spec else []
        # The index lives as long as the server: keep the collector from walking it after every edit.
        gc.collect()
        gc.freeze()

    def analyse(self, relative: str, source: str) -> tuple[list[Finding], list[Undecided]]:
        """The findings of a document as the editor holds it (the kinds the settings show), and its
        anchored functions not compared with their equation, with why."""
        assert self.root is not None and self.facts is not None and self.spec is not None
        previous, previous_source = self.file_indexes.get(relative), self.indexed_sources.get(relative)
        # After the first reading of a document, an edit re-reads only the statements it touched.
        if previous is not None and previous_source is not None:
            file_index = index_edit(previous, previous_source, source)
        else:
            file_index = index_document(relative, source)
        index = self.index or CodeIndex(root=str(self.root))
        # As `check` sees it: what the rest of the workspace's calls override, imports and launches.
        gathered_from, others = self.other_files.get(relative, (None, None))
        if gathered_from is not index or others is None:  # a reload replaces the index: gather again
            others = OtherFiles.of([f for f in index.files if f.file != relative], relative)
            self.other_files[relative] = (index, others)
        file_index = settle_one(file_index, others)
        self.file_indexes[relative], self.indexed_sources[relative] = file_index, source
        undecided: list[Undecided] = []
        findings = check_open_file(self.root, self.spec, self.facts, index, self.context, file_index, source, undecided)
        shown = set(self.settings.checks) - {kind for kind, severity in self.settings.severity.items() if severity == "off"}
        return [f for f in findings if f.kind in shown], undecided

    # -- where a document stands --------------------------------------------------------------

    def paper_file(self, uri: str) -> str | None:
        """The paper's own name for one of its text files (.tex or .md), else None."""
        if self.spec is None or self.spec.source_format == "pdf":
            return None
        name = self.in_paper(uri)
        return name if name in self.spec.files else None

    def in_paper(self, uri_or_path: str | Path) -> str | None:
        """The path relative to the paper's folder, when it lies there."""
        path = to_fs_path(uri_or_path) if isinstance(uri_or_path, str) else str(uri_or_path)
        if not path or self.spec is None:
            return None
        with contextlib.suppress(ValueError, OSError, RuntimeError):  # not there; a link that loops
            return Path(path).resolve().relative_to(Path(self.spec.root)).as_posix()
        return None

    def checks(self, relative: str) -> bool:
        """Whether `check` reads this workspace file: a Python file (also one not saved yet), or a
        config, launcher or notebook the workspace index holds."""
        return relative.endswith(".py") or any(file.file == relative for file in (self.index.files if self.index else ()))

    def relative(self, uri_or_path: str | Path) -> str | None:
        """The path relative to the workspace, when it lies there."""
        path = to_fs_path(uri_or_path) if isinstance(uri_or_path, str) else str(uri_or_path)
        if not path or self.root is None:
            return None
        # Every edit and hover asks for its document's path: resolve each path once per root.
        key = (self.root, path)
        if key not in self.relative_paths:
            if len(self.relative_paths) > 4096:
                self.relative_paths.clear()
            self.relative_paths[key] = None
            with contextlib.suppress(ValueError, OSError, RuntimeError):  # outside; a link that loops
                self.relative_paths[key] = Path(path).resolve().relative_to(self.root).as_posix()
        return self.relative_paths[key]

    async def wait_until_idle(self) -> None:
        """Until the editor waits for nothing: the workspace read, no analysis pending, no edit for
        QUIET_SECONDS. Background work (typesetting, the sandbox) starts then, never before."""
        await self.ready.wait()
        while (quiet := time.monotonic() - self.last_edit) < QUIET_SECONDS or any(not task.done() for task in self.pending.values()):
            await asyncio.sleep(max(QUIET_SECONDS - quiet, 0.1))

    def collect_garbage(self) -> None:
        """After an analysis is published, never during one: the young objects at once when many,
        everything once the user pauses (a full collection can take tens of milliseconds)."""
        if gc.get_count()[0] > YOUNG_GARBAGE:
            gc.collect(1)
        if self.collecting is not None:
            self.collecting.cancel()

        def when_idle() -> None:
            if any(not task.done() for task in self.pending.values()):
                self.collect_garbage()  # an analysis is on its way: later
            else:
                self.collecting = None
                gc.collect()

        self.collecting = asyncio.get_running_loop().call_later(IDLE_COLLECT_SECONDS, when_idle)

    def publish(self, uri: str, producer: str, diagnostics: list[lsp.Diagnostic], version: int | None = None) -> None:
        """Replace one producer's diagnostics for a document and send the union of all producers';
        without a version of its own (a smoke run, the checklist), the version the checks in the union
        were made for."""
        own = self.diagnostics.setdefault(uri, {})
        own[producer] = diagnostics
        everything = [d for produced in own.values() for d in produced]
        if version is None and CHECKS in own:
            version = self.analysed_versions.get(uri)
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=everything))

    def report_server_error(self, error: Exception, source) -> None:
        """Log an error once (stderr only): a client's mistake as a warning, anything else as an
        internal error, which the client is also told of once. An error while telling it (the
        channel is closing) is not reported again: that would loop."""
        if self.reporting_error:
            return
        self.reporting_error = True
        try:
            if source is JsonRpcException and _unparsable(error):
                # The message itself could not be parsed (not JSON, or nested past what the decoder
                # reads): JSON-RPC's answer is a parse error with no id, as the id was never read.
                log.warning("a message that cannot be parsed: %s", _first_line(error), extra={"to_client": False})
                error_message = {"code": JsonRpcParseError.CODE, "message": f"parse error: {_first_line(error)}"}
                self.protocol._send_data({"jsonrpc": "2.0", "id": None, "error": error_message})  # as written: the id must be null
                return
            cause = error.__cause__ if isinstance(error, JsonRpcException) and error.__cause__ is not None else error
            if isinstance(error, CLIENT_ERRORS) or isinstance(cause, CLIENT_ERRORS):
                log.warning("the client sent what cannot be handled (%s): %s", getattr(source, "__name__", source), error, extra={"to_client": False})
                return
            log.error("internal error (%s): %r", getattr(source, "__name__", source), error, exc_info=error, extra={"to_client": False})
            super().report_server_error(error, source)
        finally:
            self.reporting_error = False


server = PaperlensServer()


class _ClientLog(logging.Handler):
    """Warnings and errors also go to the client's log (window/logMessage), never to stdout."""

    LEVELS = {logging.ERROR: lsp.MessageType.Error, logging.WARNING: lsp.MessageType.Warning}

    def __init__(self, ls: PaperlensServer, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(level=logging.WARNING)
        self._ls, self._loop = ls, loop

    def emit(self, record: logging.LogRecord) -> None:
        if not getattr(record, "to_client", True):
            return
        params = lsp.LogMessageParams(type=self.LEVELS.get(record.levelno, lsp.MessageType.Error), message=f"paperlens: {record.getMessage()}")
        with contextlib.suppress(RuntimeError):  # the loop is closing: stderr has it
            self._loop.call_soon_threadsafe(self._ls.window_log_message, params)


def _show(ls: PaperlensServer, message: str, kind: lsp.MessageType = lsp.MessageType.Warning) -> None:
    ls.window_show_message(lsp.ShowMessageParams(type=kind, message=f"paperlens: {message}"))


def _apply_settings(ls: PaperlensServer, raw: object) -> None:
    settings, problems = editor_settings(raw)
    ls.settings = settings
    for problem in problems:
        log.warning("%s", problem)
        _show(ls, problem)


@server.feature(lsp.INITIALIZE)
def on_initialize(ls: PaperlensServer, params: lsp.InitializeParams) -> None:
    folders = params.workspace_folders or []
    uri = folders[0].uri if folders else params.root_uri
    path = to_fs_path(uri) if uri else None
    try:
        ls.root = resolved_path(Path(path)) if path else Path.cwd()
    except UnreadableFile as err:  # the load that follows says so in the editor
        log.warning("the workspace folder %s cannot be read: %s", path, err)
        ls.root = Path(path).absolute()
    ls.initial_options = params.initialization_options
    ls.positions.workspace = ls.workspace


async def _pull_settings(ls: PaperlensServer) -> object:
    """The `paperlens` section through workspace/configuration when the client offers it, else the
    initialization options."""
    if not get_capability(ls.client_capabilities, "workspace.configuration", False):
        return ls.initial_options
    assert ls.root is not None
    try:
        [section] = await ls.workspace_configuration_async(
            lsp.ConfigurationParams(items=[lsp.ConfigurationItem(scope_uri=ls.root.as_uri(), section="paperlens")])
        )
    except Exception as err:  # a client that claims the capability but fails it: the options still hold
        log.warning("could not read the settings from the client (%s); using the initialization options", err)
        return ls.initial_options
    return section if isinstance(section, dict) and section else ls.initial_options


@contextlib.asynccontextmanager
async def _progress(ls: PaperlensServer, title: str, cancellable: bool = False):
    """Work-done progress when the client shows it; yields `report(message, percentage)` and a
    function telling whether the user cancelled."""
    if not get_capability(ls.client_capabilities, "window.work_done_progress", False):
        yield (lambda message, percentage: None), (lambda: False)
        return
    token = str(uuid.uuid4())  # a fresh token each time: pygls keeps the old ones
    await ls.work_done_progress.create_async(token)
    ls.work_done_progress.begin(token, lsp.WorkDoneProgressBegin(title=title, percentage=0, cancellable=cancellable))
    cancelled = ls.work_done_progress.tokens[token].cancelled

    def report(message: str, percentage: int) -> None:
        ls.work_done_progress.report(token, lsp.WorkDoneProgressReport(message=message, percentage=percentage))

    try:
        yield report, cancelled
    finally:
        ls.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message="cancelled" if cancelled() else "ready"))


async def _register(ls: PaperlensServer, method: str, options: object) -> bool:
    registration = lsp.Registration(id=f"paperlens:{method}", method=method, register_options=options)
    try:
        await ls.client_register_capability_async(lsp.RegistrationParams(registrations=[registration]))
    except Exception as err:
        log.warning("the client refused to register %s: %s", method, err)
        return False
    return True


async def _watch(ls: PaperlensServer) -> None:
    """The paper, the decisions, configs and code change on disk outside the editor's buffers: have
    the client watch them when it can (also outside the workspace, with relative patterns), else
    watchdog. Before any paper could be read, the workspace alone."""
    assert ls.root is not None
    paper_root = Path(ls.spec.root) if ls.spec is not None else ls.root
    paper_outside = ls.relative(paper_root) is None
    watched_by_client = False
    folders: list[Path] = []
    if get_capability(ls.client_capabilities, "workspace.did_change_watched_files.dynamic_registration", False):
        watchers = [lsp.FileSystemWatcher(glob_pattern=glob) for glob in (*WORKSPACE_GLOBS, PAPER_GLOB, *SETTINGS_FILES)]
        relative_ok = get_capability(ls.client_capabilities, "workspace.did_change_watched_files.relative_pattern_support", False)
        if paper_outside and relative_ok:
            watchers.append(lsp.FileSystemWatcher(glob_pattern=lsp.RelativePattern(base_uri=paper_root.as_uri(), pattern=PAPER_GLOB)))
        options = lsp.DidChangeWatchedFilesRegistrationOptions(watchers=watchers)
        watched_by_client = await _register(ls, lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES, options)
        folders = [paper_root] if paper_outside and not relative_ok else []
    if not watched_by_client:
        folders = [ls.root, paper_root] if paper_outside else [ls.root]
    if folders and ls.watcher is None:
        ls.watcher = DiskWatcher(asyncio.get_running_loop(), lambda path: _changed_on_disk(ls, path))
        ls.watcher.start(folders)


@server.feature(lsp.INITIALIZED)
async def on_initialized(ls: PaperlensServer, params: lsp.InitializedParams) -> None:
    logging.getLogger("paperlens").addHandler(_ClientLog(ls, asyncio.get_running_loop()))
    _apply_settings(ls, await _pull_settings(ls))
    if get_capability(ls.client_capabilities, "workspace.did_change_configuration.dynamic_registration", False):
        await _register(ls, lsp.WORKSPACE_DID_CHANGE_CONFIGURATION, lsp.DidChangeConfigurationRegistrationOptions(section="paperlens"))
    for hook in ls.start_hooks:
        asyncio.ensure_future(hook(ls))
    await _load(ls, paper=True)
    await _watch(ls)  # also when the paper could not be read: fixing it on disk is seen


async def _load(ls: PaperlensServer, paper: bool) -> bool:
    """(Re)read the paper when `paper`, then (re)index the workspace, with progress the user can
    cancel; then re-check every open document. False when the paper could not be read (what was
    read before stays in use)."""
    try:
        async with _progress(ls, "paperlens: reading the paper", cancellable=True) as (report, cancelled):
            if paper:
                await asyncio.to_thread(ls.load_paper)

            def indexed(done: int, total: int) -> None:
                if cancelled():
                    raise IndexingCancelled
                if done % 50 == 0 or done == total:
                    report(f"indexing the workspace: {done}/{total} files", 50 + 50 * done // max(total, 1))

            report("indexing the workspace", 50)
            try:
                await asyncio.to_thread(ls.load_workspace, indexed)
            except IndexingCancelled:
                _show(ls, "indexing cancelled: open files are checked on their own; run “paperlens: re-index” to index again", lsp.MessageType.Info)
    except UserError as err:
        _show(ls, str(err), lsp.MessageType.Error)
        ls.ready.set()
        _after_load(ls)
        return False
    ls.ready.set()
    _after_load(ls)
    if paper:  # files that were the paper's may not be any more: their gaps go; open ones get theirs again
        for uri in [uri for uri, producers in ls.diagnostics.items() if producers.get(GAPS)]:
            ls.publish(uri, GAPS, [])
        if get_capability(ls.client_capabilities, "workspace.code_lens.refresh_support", False):
            ls.workspace_code_lens_refresh(None)
    for document in list(ls.workspace.text_documents.values()):
        _schedule(ls, document.uri, delay=0)
    return True


def _after_load(ls: PaperlensServer) -> None:
    for hook in ls.load_hooks:
        hook(ls)


@server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: PaperlensServer, params: lsp.DidChangeConfigurationParams) -> None:
    pushed = params.settings.get("paperlens") if isinstance(params.settings, dict) else None
    before = ls.settings
    _apply_settings(ls, pushed if pushed is not None else await _pull_settings(ls))
    if ls.settings.paper != before.paper:
        await _load(ls, paper=True)
    else:
        if ls.settings.checklist != before.checklist:
            _after_load(ls)
        for document in list(ls.workspace.text_documents.values()):
            _schedule(ls, document.uri, delay=0)


# -- documents --------------------------------------------------------------------------------


async def _analyse_later(ls: PaperlensServer, uri: str, delay: float) -> None:
    await asyncio.sleep(delay)
    await ls.ready.wait()
    if uri not in ls.workspace.text_documents:
        return
    document = ls.workspace.get_text_document(uri)
    if ls.paper_file(uri) is not None:
        _publish_gaps(ls, uri, document.version)
        return
    relative = ls.relative(uri)
    if relative is None or ls.facts is None or not ls.checks(relative):
        return
    source = document.source
    size = len(source) if source.isascii() else len(source.encode("utf-8", "surrogatepass"))
    if size > MAX_FILE_BYTES:  # as `check` does (in bytes, as on disk): no file this large is read
        log.warning("%s: larger than %g MB; not checked", relative, MAX_FILE_BYTES / 1e6)
        return
    version = document.version
    try:
        findings, undecided = await asyncio.to_thread(ls.analyse, relative, document.source)
    except Exception:  # one file's bad luck must not stop the server
        log.exception("checking %s failed", relative)
        return
    if ls.workspace.get_text_document(uri).version != version:
        return  # a newer edit is on its way
    ls.findings[uri], ls.analysed_versions[uri] = findings, version
    if undecided != ls.undecided.get(uri, []):
        for pair in undecided:
            log.info("%s:%d: %s", pair.file, pair.line + 1, undecided_message(pair))
    ls.undecided[uri] = undecided
    ls.publish(uri, CHECKS, [to_diagnostic(f, uri, ls.spec, ls.positions, ls.settings.severity) for f in findings], version)
    ls.collect_garbage()


def _publish_gaps(ls: PaperlensServer, uri: str, version: int | None) -> None:
    """The paper's own gaps, and what in it no code cites, in the paper (as saved: the reading is of
    the files on disk)."""
    paper_file = ls.paper_file(uri)
    gaps = [g for g in ls.gaps if g.evidence[0].location.file == paper_file] if ls.settings.paper_gaps else []
    diagnostics = [gap_diagnostic(g, uri, ls.positions) for g in gaps]
    if "unimplemented" in ls.settings.checks and ls.settings.severity.get("unimplemented") != "off":
        diagnostics += [paper_diagnostic(f, uri, ls.positions, ls.settings.severity) for f in ls.unimplemented if f.paper[0].location.file == paper_file]
    ls.publish(uri, GAPS, diagnostics, version)


def _schedule(ls: PaperlensServer, uri: str, delay: float | None = None) -> None:
    if (previous := ls.pending.pop(uri, None)) is not None:
        previous.cancel()
    ls.pending[uri] = asyncio.ensure_future(_analyse_later(ls, uri, ls.settings.debounce_ms / 1000 if delay is None else delay))


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: PaperlensServer, params: lsp.DidOpenTextDocumentParams) -> None:
    _schedule(ls, params.text_document.uri, delay=0)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: PaperlensServer, params: lsp.DidChangeTextDocumentParams) -> None:
    ls.last_edit = time.monotonic()
    _schedule(ls, params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: PaperlensServer, params: lsp.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    if (task := ls.pending.pop(uri, None)) is not None:
        task.cancel()
    ls.findings.pop(uri, None)
    ls.undecided.pop(uri, None)
    ls.analysed_versions.pop(uri, None)
    ls.positions.forget(uri)
    ls.file_indexes.pop(ls.relative(uri) or "", None)
    ls.indexed_sources.pop(ls.relative(uri) or "", None)
    ls.other_files.pop(ls.relative(uri) or "", None)
    # What the checks and gaps said follows the buffer; a smoke run's failure stays until the next run.
    ls.diagnostics.get(uri, {}).pop(GAPS, None)
    ls.publish(uri, CHECKS, [])


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: PaperlensServer, params: lsp.DidSaveTextDocumentParams) -> None:
    path = Path(to_fs_path(params.text_document.uri) or "")
    _changed_on_disk(ls, path)
    for hook in ls.save_hooks:
        hook(ls, path)


@server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: PaperlensServer, params: lsp.DidChangeWatchedFilesParams) -> None:
    for change in params.changes:
        _changed_on_disk(ls, Path(to_fs_path(change.uri) or ""))


def _changed_on_disk(ls: PaperlensServer, path: Path) -> None:
    """Note a change; a burst of them (a save, a `git checkout`) is handled once it settles."""
    ls.changed_on_disk.add(path)
    if ls.coalescing is not None:
        ls.coalescing.cancel()
    ls.coalescing = asyncio.get_running_loop().call_later(COALESCE_SECONDS, lambda: asyncio.ensure_future(_settle_changes(ls)))


async def _settle_changes(ls: PaperlensServer) -> None:
    changed, ls.changed_on_disk = ls.changed_on_disk, set()
    ls.coalescing = None
    if not ls.ready.is_set():
        return  # the first load is still running and reads everything
    paper_changed = any(_is_input_of_the_paper(ls, path) for path in changed)
    workspace_changed = any(ls.relative(path) is not None for path in changed)
    if paper_changed or workspace_changed:
        await _load(ls, paper=paper_changed or ls.spec is None)


def _is_input_of_the_paper(ls: PaperlensServer, path: Path) -> bool:
    """The paper's files, the decisions file, or the settings that say where the paper is."""
    relative = ls.relative(path)
    if relative == DECISIONS_PATH.as_posix() or relative in SETTINGS_FILES:
        return True
    if ls.spec is None:
        return path.suffix in PAPER_SUFFIXES
    inside = ls.in_paper(path)
    return inside is not None and (inside in ls.spec.files or path.suffix in PAPER_SUFFIXES)


@server.command(REINDEX)
async def reindex_command(ls: PaperlensServer) -> bool:
    """Read the paper again and index the whole workspace."""
    return await _load(ls, paper=True)


@server.feature(lsp.SHUTDOWN)
def on_shutdown(ls: PaperlensServer, params: None) -> None:
    ls.shut_down = True
    if ls.watcher is not None:
        ls.watcher.stop()


@server.feature(lsp.EXIT)
def on_exit(ls: PaperlensServer, params: None) -> None:
    """Exit at once (0 after a shutdown, 1 without, as LSP asks): an analysis still running in a
    thread (a huge file, a slow paper) must not keep the process alive after the editor left."""
    logging.shutdown()
    os._exit(0 if ls.shut_down else 1)


def main() -> None:
    # What the imports made lives as long as the server: frozen, so that no collection walks it. The
    # collector never pauses the work the editor waits for: it runs when a load or an analysis ends
    # (`load_workspace`, `collect_garbage`).
    gc.freeze()
    gc.disable()
    # stdout is the JSON-RPC channel. One line per event, with its time.
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # The library logs every message it sends at INFO, and each error it passes to
    # `report_server_error` once more (with the request's params): that one logs it, once.
    logging.getLogger("pygls").setLevel(logging.CRITICAL)
    server.start_io()

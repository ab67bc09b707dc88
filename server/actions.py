"""Code actions, each a workspace edit the user sees and can undo: use the paper's value, record a
deviation or an assumption, ask the authors, insert an anchor comment, scaffold a module."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from lsprotocol import types as lsp
from paperlens.pipeline.decisions import (
    DECISIONS_PATH,
    MAX_DECISIONS_BYTES,
    ask,
    bind_symbols,
    decisions_path,
    load_decisions,
    record,
    render_decisions,
    save_decisions,
)
from paperlens.pipeline.code.anchors import anchor_comment
from paperlens.pipeline.errors import DecisionsError
from paperlens.pipeline.files import UnreadableFile, read_regular_file
from paperlens.pipeline.links import (
    function_defined_at,
    item_name,
    likely_equations,
    paper_item_at,
    section_of,
)
from paperlens.pipeline.llm import LLMClient, LLMError, settings_from_env
from paperlens.pipeline.questions import draft_question
from paperlens.pipeline.scaffold import scaffold_module, scaffold_targets
from paperlens.schemas import (
    Algorithm,
    DecisionsFile,
    Equation,
    Finding,
    Gap,
    LLMSettings,
    Section,
    Undecided,
)
from pygls.capabilities import get_capability

from .app import PaperlensServer, _show, server
from .convert import gap_diagnostic, to_diagnostic, to_range

log = logging.getLogger("paperlens.server")
SCAFFOLD = "paperlens.scaffoldModule"
RECORD_DECISION = "paperlens.recordDecision"
REFACTOR_SCAFFOLD = lsp.CodeActionKind.Refactor + ".scaffold"
REFACTOR_GENERATE = lsp.CodeActionKind.RefactorRewrite + ".generate"

# Code actions other modules add (repo.py: generate a planned module). Each offer gives its actions on
# a document (a coroutine, so that what it reads from disk is read in a thread); an action whose data
# carries a resolver's key is resolved by that resolver.
action_offers: list[Callable[[PaperlensServer, str], Awaitable[list[lsp.CodeAction]]]] = []
action_resolvers: dict[str, Callable[[PaperlensServer, lsp.CodeAction], Awaitable[lsp.CodeAction]]] = {}


def _decisions_edit(path: Path, text: str) -> lsp.WorkspaceEdit | None:
    """Replace the decisions file's text; create it first when it does not exist (only for a client
    that creates files: see `creates_files`). None when it can no longer be read (it became a folder
    or a FIFO since it was loaded): no edit can replace it."""
    uri = path.as_uri()
    if not os.path.lexists(path):
        # No `ignoreIfExists`: a client may then skip making the file and its folder (Neovim does).
        return lsp.WorkspaceEdit(document_changes=[lsp.CreateFile(uri=uri), _insert(uri, text)])
    try:
        lines = read_regular_file(path, limit=MAX_DECISIONS_BYTES).count(b"\n") + 1
    except UnreadableFile:
        return None
    whole = lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=lines, character=0))
    return lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(range=whole, new_text=text)]})


def _insert(uri: str, text: str) -> lsp.TextDocumentEdit:
    start = lsp.Position(line=0, character=0)
    return lsp.TextDocumentEdit(
        text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
        edits=[lsp.TextEdit(range=lsp.Range(start=start, end=start), new_text=text)],
    )


def creates_files(ls: PaperlensServer) -> bool:
    """File creations travel only in `documentChanges`: the client must take both."""
    operations = get_capability(ls.client_capabilities, "workspace.workspace_edit.resource_operations", None) or []
    changes = get_capability(ls.client_capabilities, "workspace.workspace_edit.document_changes", False)
    return bool(changes) and lsp.ResourceOperationKind.Create in operations


def _current_decisions(ls: PaperlensServer) -> DecisionsFile:
    """The decisions file as it is on disk now; DecisionsError when it is malformed (it is then
    never rewritten, so nothing the user wrote is lost)."""
    assert ls.root is not None
    return load_decisions(ls.root)


def _decisions_action(ls: PaperlensServer, title: str, diagnostic: lsp.Diagnostic | None, changed: DecisionsFile, change: dict) -> lsp.CodeAction:
    """An action changing the decisions file: an edit the user sees and can undo when the client can
    make it, else a command with which the server writes the file itself once the action is chosen."""
    assert ls.root is not None
    action = lsp.CodeAction(title=title, kind=lsp.CodeActionKind.QuickFix, diagnostics=[diagnostic] if diagnostic else None)
    path = decisions_path(ls.root)
    if os.path.lexists(path) or creates_files(ls):
        action.edit = _decisions_edit(path, render_decisions(changed))
    if action.edit is None:
        action.command = lsp.Command(title=title, command=RECORD_DECISION, arguments=[change])
    return action


def _position(ls: PaperlensServer, uri: str, position: lsp.Position) -> tuple[int, int]:
    """A position the client sent, as (line, code-point column)."""
    return position.line, ls.positions.column(uri, position)


def _holds(first: tuple[int, int], last: tuple[int, int], line: int, column: int, end_line: int | None, end_column: int | None) -> bool:
    """Whether a span (its end inclusive: a cursor just after a value is on it) meets [first, last]."""
    end = (end_line if end_line is not None else line, end_column if end_column is not None else column + 1)
    return (line, column) <= last and end >= first


def _asked_first(findings: list[Finding], context: lsp.CodeActionContext) -> list[Finding]:
    """The findings of the request's diagnostics first, in the client's order, then the others."""
    order: dict[str, int] = {}
    for n, diagnostic in enumerate(context.diagnostics or []):
        if isinstance(diagnostic.data, dict) and isinstance(diagnostic.data.get("id"), str):
            order.setdefault(diagnostic.data["id"], n)
    return sorted(findings, key=lambda f: order.get(f.id, len(order)))


@server.feature(
    lsp.TEXT_DOCUMENT_CODE_ACTION,
    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix, REFACTOR_SCAFFOLD, REFACTOR_GENERATE], resolve_provider=True),
)
async def code_actions(ls: PaperlensServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    """The actions for what the request's range holds: the diagnostics the client names first."""
    uri = params.text_document.uri
    if ls.root is None or ls.spec is None:
        return []
    first, last = _position(ls, uri, params.range.start), _position(ls, uri, params.range.end)
    try:
        decisions: DecisionsFile | None = await asyncio.to_thread(_current_decisions, ls)  # parsing stays off the loop
    except DecisionsError as err:
        decisions, broken = None, f"{DECISIONS_PATH} is malformed: {err}"
    current = uri in ls.workspace.text_documents and ls.analysed_versions.get(uri) == ls.workspace.get_text_document(uri).version
    actions: list[lsp.CodeAction] = []
    held = [f for f in ls.findings.get(uri, []) if f.code is not None and f.status == "open" and _holds(first, last, f.code.line, f.code.column, f.code.end_line, f.code.end_column)]
    for finding in _asked_first(held, params.context):
        diagnostic = to_diagnostic(finding, uri, ls.spec, ls.positions, ls.settings.severity)
        for fix in finding.fixes:
            if fix.edit is not None:
                if current:  # an edit of a version the user has since changed would land on the wrong text
                    action = lsp.CodeAction(title=fix.title, kind=lsp.CodeActionKind.QuickFix, diagnostics=[diagnostic], is_preferred=fix.kind == "use-paper-value")
                    action.edit = _document_edit(ls, uri, to_range(fix.edit.location, uri, ls.positions), fix.edit.new_text)
                    actions.append(action)
            elif decisions is None:
                actions.append(lsp.CodeAction(title=fix.title, kind=lsp.CodeActionKind.QuickFix, diagnostics=[diagnostic], disabled=lsp.CodeActionDisabled(reason=broken)))
            elif fix.kind in ("record-deviation", "record-assumption") and finding.setting is not None:
                changed = record(decisions, finding, _reason(finding))
                actions.append(_decisions_action(ls, fix.title, diagnostic, changed, {"record": finding.id}))
            elif fix.kind == "ask-authors":
                actions.append(_ask_action(ls, decisions, finding, diagnostic, fix.title))
            elif fix.kind == "correct-binding" and finding.binding is not None:
                changed = bind_symbols(decisions, finding.binding, BINDING_REASON)
                actions.append(_decisions_action(ls, fix.title, diagnostic, changed, {"bind": finding.id}))
    if (paper_file := ls.paper_file(uri)) is not None:
        for gap in ls.gaps:
            where = gap.evidence[0].location
            if where.file == paper_file and where.line is not None and _holds(first, last, where.line, where.column or 0, where.end_line, where.end_column):
                title = f"Ask the authors: {gap.title}"
                if decisions is None:
                    actions.append(lsp.CodeAction(title=title, kind=lsp.CodeActionKind.QuickFix, disabled=lsp.CodeActionDisabled(reason=broken)))
                else:
                    actions.append(_ask_action(ls, decisions, gap, gap_diagnostic(gap, uri, ls.positions), title))
        actions += _scaffold_actions(ls, paper_file, first[0])
    offered = {action.title for action in actions}  # a link a comparison found is offered once
    actions += [action for action in _anchor_actions(ls, uri, first[0]) if action.title not in offered]
    if decisions is not None:
        for pair in _undecided_at(ls, uri, first[0], last[0]):
            changed = bind_symbols(decisions, pair.binding, UNBOUND_REASON)
            title = f"Record which name of `{pair.function}` stands for each symbol of Eq. ({pair.equation})"
            actions.append(_decisions_action(ls, title, None, changed, {"bind-undecided": _undecided_id(pair)}))
    for offer in action_offers:
        actions += await offer(ls, uri)
    return actions


# What a recorded binding asks of the team: it is the one paperlens used, to be corrected where wrong.
BINDING_REASON = "TODO: correct the names that stand for the wrong symbols, and say why"
# ... or, for a pair paperlens could not bind, the one it could tell, to be completed.
UNBOUND_REASON = "TODO: write the function's name for each symbol left empty, and say why"


def _undecided_at(ls: PaperlensServer, uri: str, first: int, last: int) -> list[Undecided]:
    """The anchored functions defined on lines [first, last] not compared because a symbol could not be bound."""
    return [pair for pair in ls.undecided.get(uri, []) if pair.binding is not None and first <= pair.line <= last]


def _undecided_id(pair: Undecided) -> str:
    return f"{pair.file}:{pair.line}:{pair.function}:{pair.equation}"


def _reason(finding: Finding) -> str:
    return "TODO: say why" if finding.kind == "divergence" else "TODO: say why this value"


def _document_edit(ls: PaperlensServer, uri: str, where: lsp.Range, new_text: str) -> lsp.WorkspaceEdit:
    """An edit of an open document, for the version its findings were made from when the client
    takes versioned edits (it then refuses the edit on any other version)."""
    edit = lsp.TextEdit(range=where, new_text=new_text)
    version = ls.analysed_versions.get(uri)
    if version is not None and get_capability(ls.client_capabilities, "workspace.workspace_edit.document_changes", False):
        document = lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(text_document=document, edits=[edit])])
    return lsp.WorkspaceEdit(changes={uri: [edit]})


# -- ask the authors ---------------------------------------------------------------------------


def _ask_action(ls: PaperlensServer, decisions: DecisionsFile, subject: Gap | Finding, diagnostic: lsp.Diagnostic, title: str) -> lsp.CodeAction:
    """With a client that resolves actions, the question is drafted (by the LLM when one is
    configured) only when the user picks the action; otherwise by template, at once."""
    if resolves_edits(ls) and (creates_files(ls) or decisions_path(ls.root).exists()):
        return lsp.CodeAction(title=title, kind=lsp.CodeActionKind.QuickFix, diagnostics=[diagnostic], data={"ask": subject.id})
    question, _ = draft_question(subject, None)
    changed = ask(decisions, question, setting=subject.setting, component=subject.component)
    return _decisions_action(ls, title, diagnostic, changed, {"ask": subject.id})


def _subject(ls: PaperlensServer, subject_id: str) -> Gap | Finding | None:
    found = next((g for g in ls.gaps if g.id == subject_id), None)
    return found or next((f for findings in ls.findings.values() for f in findings if f.id == subject_id), None)


def llm_settings(ls: PaperlensServer) -> LLMSettings:
    """The environment's LLM settings with the editor's endpoint and model over them; LLMError when
    the environment's are malformed."""
    chosen = ls.settings.llm
    return settings_from_env().model_copy(update={k: v for k, v in (("base_url", chosen.base_url), ("model", chosen.model)) if v})


def llm_client(ls: PaperlensServer) -> LLMClient | None:
    try:
        return LLMClient(llm_settings(ls))
    except LLMError:  # not configured (or misconfigured): the template drafts the question
        return None


@server.feature(lsp.CODE_ACTION_RESOLVE)
async def resolve_code_action(ls: PaperlensServer, action: lsp.CodeAction) -> lsp.CodeAction:
    data = action.data if isinstance(action.data, dict) else {}
    for key, resolve in action_resolvers.items():
        if key in data:
            return await resolve(ls, action)
    if "scaffold" in data and ls.spec is not None:
        action.edit, problem = await asyncio.to_thread(_scaffold_edit, ls, data["scaffold"])
        if problem:
            ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"paperlens: {problem}"))
        return action
    subject = _subject(ls, data.get("ask", ""))
    if subject is None or ls.root is None:
        return action
    try:
        decisions = await asyncio.to_thread(_current_decisions, ls)  # parsing stays off the loop
    except DecisionsError as err:
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"paperlens: {err}"))
        return action
    question, drafted_by = await asyncio.to_thread(lambda: draft_question(subject, llm_client(ls)))
    log.info("question drafted by %s", drafted_by)
    changed = ask(decisions, question, setting=subject.setting, component=subject.component)
    action.edit = await asyncio.to_thread(_decisions_edit, decisions_path(ls.root), render_decisions(changed))
    if action.edit is None:  # it became unreadable since: the server writes it, saying why if it cannot
        action.command = lsp.Command(title=action.title, command=RECORD_DECISION, arguments=[{"ask": subject.id}])
    return action


@server.command(RECORD_DECISION)
async def record_decision(ls: PaperlensServer, change: dict) -> dict | None:
    """For a client that cannot create the decisions file through an edit: the server records the
    deviation, assumption, question or symbol binding itself (atomically), says so, and returns the
    file's place."""
    if isinstance(change, dict) and "bind-undecided" in change:
        subject = next((p for pairs in ls.undecided.values() for p in pairs if p.binding is not None and _undecided_id(p) == change["bind-undecided"]), None)
    else:
        subject = _subject(ls, change.get("record") or change.get("ask") or change.get("bind") or "") if isinstance(change, dict) else None
    if subject is None or ls.root is None:
        _show(ls, "nothing to record: the finding is no longer there (the file changed); try again", lsp.MessageType.Warning)
        return None
    try:
        decisions = await asyncio.to_thread(_current_decisions, ls)
    except DecisionsError as err:
        _show(ls, str(err), lsp.MessageType.Error)
        return None
    if isinstance(subject, Undecided):
        changed = bind_symbols(decisions, subject.binding, UNBOUND_REASON)
    elif "record" in change and isinstance(subject, Finding):
        changed = record(decisions, subject, _reason(subject))
    elif "bind" in change and isinstance(subject, Finding) and subject.binding is not None:
        changed = bind_symbols(decisions, subject.binding, BINDING_REASON)
    else:
        question, _ = await asyncio.to_thread(lambda: draft_question(subject, llm_client(ls)))
        changed = ask(decisions, question, setting=subject.setting, component=subject.component)
    path = await asyncio.to_thread(save_decisions, ls.root, changed)
    _show(ls, f"recorded in {DECISIONS_PATH}: edit its reason there", lsp.MessageType.Info)
    return {"uri": path.as_uri()}


# -- anchors -----------------------------------------------------------------------------------


def _anchor_actions(ls: PaperlensServer, uri: str, line: int) -> list[lsp.CodeAction]:
    """On the `def`/`class` line of code that no anchor links yet: link it to a likely equation."""
    file = ls.file_indexes.get(ls.relative(uri) or "")
    if file is None or ls.spec is None:
        return []
    function = function_defined_at(file, line)
    if function is None or any(a.function == function.qualname for a in file.anchors):
        return []
    document = ls.workspace.get_text_document(uri)
    header = document.lines[line] if line < len(document.lines) else ""
    actions = []
    for equation in likely_equations(ls.spec, function):
        section = section_of(ls.spec, equation)
        comment = anchor_comment(header, item_name(equation), section.title if section else None)
        start = lsp.Position(line=line, character=0)
        edit = lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(range=lsp.Range(start=start, end=start), new_text=comment)]})
        actions.append(lsp.CodeAction(title=f"Link `{function.name}` to {item_name(equation)} of the paper", kind=lsp.CodeActionKind.QuickFix, edit=edit))
    return actions


# -- scaffold ------------------------------------------------------------------------------------


def _scaffold_target(ls: PaperlensServer, paper_file: str, line: int) -> str | None:
    assert ls.spec is not None
    item = paper_item_at(ls.spec, paper_file, line)
    if isinstance(item, Equation):
        item = section_of(ls.spec, item)
    targets = {target_id for target_id, _ in scaffold_targets(ls.spec)}
    return item.id if isinstance(item, (Section, Algorithm)) and item.id in targets else None


def _scaffold_actions(ls: PaperlensServer, paper_file: str, line: int) -> list[lsp.CodeAction]:
    """Offered wherever the cursor is in a section or algorithm; the module is written only when
    the user picks the action (at once for a client that cannot resolve actions)."""
    target = _scaffold_target(ls, paper_file, line)
    if target is None:
        return []
    action = lsp.CodeAction(title="paperlens: scaffold a module from this part of the paper", kind=REFACTOR_SCAFFOLD, data={"scaffold": target})
    if not resolves_edits(ls) or not creates_files(ls):
        action.edit, problem = _scaffold_edit(ls, target)
        if problem:
            action.disabled = lsp.CodeActionDisabled(reason=problem)
    return [action]


def resolves_edits(ls: PaperlensServer) -> bool:
    """Whether the client fills in a code action's edit once it is picked (codeAction/resolve)."""
    return "edit" in (get_capability(ls.client_capabilities, "text_document.code_action.resolve_support.properties", None) or [])


def _scaffold_edit(ls: PaperlensServer, target_id: str) -> tuple[lsp.WorkspaceEdit | None, str | None]:
    """The new module and its shape test as file creations; why not, when the client cannot create files."""
    assert ls.spec is not None and ls.root is not None and ls.readiness is not None
    if not creates_files(ls):
        return None, "the editor cannot create files through the language server"
    scaffold = scaffold_module(ls.spec, ls.readiness, target_id, ls.root)
    changes: list = []
    for relative, text in ((scaffold.path, scaffold.text), (scaffold.test_path, scaffold.test_text)):
        uri = (ls.root / relative).as_uri()
        changes += [lsp.CreateFile(uri=uri), _insert(uri, text)]  # fails rather than overwrite a file made meanwhile
    return lsp.WorkspaceEdit(document_changes=changes), None


@server.command(SCAFFOLD)
async def scaffold_command(ls: PaperlensServer, target_id: str) -> bool:
    """Scaffold a module from a section or algorithm by id (for a PDF paper, which has no source to act in)."""
    if ls.spec is None or target_id not in {t for t, _ in scaffold_targets(ls.spec)}:
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"paperlens: nothing to scaffold for {target_id!r}"))
        return False
    edit, problem = _scaffold_edit(ls, target_id)
    if edit is None:
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"paperlens: {problem}"))
        return False
    return await apply_edit(ls, edit, "paperlens: scaffold a module")


async def apply_edit(ls: PaperlensServer, edit: lsp.WorkspaceEdit, label: str) -> bool:
    """Ask the client to apply an edit, when it takes such requests (`workspace.applyEdit`);
    whether it was applied."""
    if not get_capability(ls.client_capabilities, "workspace.apply_edit", False):
        _show(ls, f"{label}: the editor does not apply edits a language server sends (workspace/applyEdit)", lsp.MessageType.Error)
        return False
    result = await ls.workspace_apply_edit_async(lsp.ApplyWorkspaceEditParams(edit=edit, label=label))
    if not result.applied:
        log.info("%s: not applied (%s)", label, result.failure_reason or "declined")
    return bool(result.applied)

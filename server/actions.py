"""Code actions, each a workspace edit the user sees and can undo: use the paper's value, record a
deviation or an assumption, ask the authors, insert an anchor comment, scaffold a module."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from lsprotocol import types as lsp
from paperlens.pipeline.decisions import (
    DECISIONS_PATH,
    ask,
    decisions_path,
    load_decisions,
    record,
    render_decisions,
)
from paperlens.pipeline.errors import DecisionsError
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
)
from pygls.capabilities import get_capability

from .app import PaperlensServer, server
from .convert import gap_diagnostic, to_diagnostic, to_range

log = logging.getLogger("paperlens.server")
SCAFFOLD = "paperlens.scaffoldModule"
REFACTOR_SCAFFOLD = lsp.CodeActionKind.Refactor + ".scaffold"
REFACTOR_GENERATE = lsp.CodeActionKind.RefactorRewrite + ".generate"

# Code actions other modules add (repo.py: generate a planned module). Each offer gives its actions on
# a document (a coroutine, so that what it reads from disk is read in a thread); an action whose data
# carries a resolver's key is resolved by that resolver.
action_offers: list[Callable[[PaperlensServer, str], Awaitable[list[lsp.CodeAction]]]] = []
action_resolvers: dict[str, Callable[[PaperlensServer, lsp.CodeAction], Awaitable[lsp.CodeAction]]] = {}


def _whole_file_edit(uri: str, path: Path, text: str) -> lsp.WorkspaceEdit:
    """Replace a file's text, creating the file when it does not exist."""
    if not path.exists():
        return lsp.WorkspaceEdit(document_changes=[lsp.CreateFile(uri=uri, options=lsp.CreateFileOptions(ignore_if_exists=True)), _insert(uri, text)])
    old = path.read_text(encoding="utf-8").split("\n")
    whole = lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=len(old), character=0))
    return lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(range=whole, new_text=text)]})


def _insert(uri: str, text: str) -> lsp.TextDocumentEdit:
    start = lsp.Position(line=0, character=0)
    return lsp.TextDocumentEdit(
        text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
        edits=[lsp.TextEdit(range=lsp.Range(start=start, end=start), new_text=text)],
    )


def _current_decisions(ls: PaperlensServer) -> DecisionsFile:
    """The decisions file as it is on disk now; DecisionsError when it is malformed (it is then
    never rewritten, so nothing the user wrote is lost)."""
    assert ls.root is not None
    return load_decisions(ls.root)


def _decisions_edit(ls: PaperlensServer, decisions: DecisionsFile) -> lsp.WorkspaceEdit:
    assert ls.root is not None
    path = decisions_path(ls.root)
    return _whole_file_edit(path.as_uri(), path, render_decisions(decisions))


def _overlaps(first: int, last: int, start: int, end: int | None) -> bool:
    return start <= last and (end if end is not None else start) >= first


@server.feature(
    lsp.TEXT_DOCUMENT_CODE_ACTION,
    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix, REFACTOR_SCAFFOLD, REFACTOR_GENERATE], resolve_provider=True),
)
async def code_actions(ls: PaperlensServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    uri = params.text_document.uri
    first, last = params.range.start.line, params.range.end.line
    if ls.root is None or ls.spec is None:
        return []
    try:
        decisions: DecisionsFile | None = await asyncio.to_thread(_current_decisions, ls)  # parsing stays off the loop
    except DecisionsError as err:
        decisions, broken = None, f"{DECISIONS_PATH} is malformed: {err}"
    actions: list[lsp.CodeAction] = []
    for finding in ls.findings.get(uri, []):
        code = finding.code
        if code is None or finding.status != "open" or not _overlaps(first, last, code.line, code.end_line):
            continue
        diagnostic = to_diagnostic(finding, ls.spec, ls.settings.severity)
        for fix in finding.fixes:
            action = lsp.CodeAction(title=fix.title, kind=lsp.CodeActionKind.QuickFix, diagnostics=[diagnostic], is_preferred=fix.kind == "use-paper-value")
            if fix.edit is not None:
                action.edit = lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(range=to_range(fix.edit.location), new_text=fix.edit.new_text)]})
            elif decisions is None:
                action.disabled = lsp.CodeActionDisabled(reason=broken)
            elif fix.kind in ("record-deviation", "record-assumption") and finding.setting is not None:
                reason = "TODO: say why" if finding.kind == "divergence" else "TODO: say why this value"
                action.edit = _decisions_edit(ls, record(decisions, finding, reason))
            elif fix.kind == "ask-authors":
                action = _ask_action(ls, decisions, finding, diagnostic)
            else:
                continue
            actions.append(action)
    if (paper_file := ls.paper_file(uri)) is not None:
        for gap in ls.gaps:
            where = gap.evidence[0].location
            if where.file == paper_file and where.line is not None and _overlaps(first, last, where.line, where.end_line):
                if decisions is None:
                    actions.append(lsp.CodeAction(title=f"Ask the authors: {gap.title}", kind=lsp.CodeActionKind.QuickFix, disabled=lsp.CodeActionDisabled(reason=broken)))
                else:
                    actions.append(_ask_action(ls, decisions, gap, gap_diagnostic(gap)))
        actions += _scaffold_actions(ls, paper_file, first)
    actions += _anchor_actions(ls, uri, first)
    for offer in action_offers:
        actions += await offer(ls, uri)
    return actions


# -- ask the authors ---------------------------------------------------------------------------


def _ask_action(ls: PaperlensServer, decisions: DecisionsFile, subject: Gap | Finding, diagnostic: lsp.Diagnostic) -> lsp.CodeAction:
    """With a client that resolves actions, the question is drafted (by the LLM when one is
    configured) only when the user picks the action; otherwise by template, at once."""
    title = f"Ask the authors: {subject.title}" if isinstance(subject, Gap) else "Ask the authors which value they used"
    action = lsp.CodeAction(title=title, kind=lsp.CodeActionKind.QuickFix, diagnostics=[diagnostic], data={"ask": subject.id})
    if not resolves_edits(ls):
        question, _ = draft_question(subject, None)
        action.edit = _decisions_edit(ls, ask(decisions, question, setting=subject.setting, component=subject.component))
    return action


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
        decisions = _current_decisions(ls)
    except DecisionsError as err:
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"paperlens: {err}"))
        return action
    question, drafted_by = await asyncio.to_thread(lambda: draft_question(subject, llm_client(ls)))
    log.info("question drafted by %s", drafted_by)
    action.edit = _decisions_edit(ls, ask(decisions, question, setting=subject.setting, component=subject.component))
    return action


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
    indent = header[: len(header) - len(header.lstrip())]
    actions = []
    for equation in likely_equations(ls.spec, function):
        section = section_of(ls.spec, equation)
        # The section by title only: a `§2.1` in the comment would be an anchor of its own.
        comment = f"{indent}# Implements {item_name(equation)} of the paper" + (f" ({section.title})" if section else "") + "\n"
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
    if not resolves_edits(ls):
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
    operations = get_capability(ls.client_capabilities, "workspace.workspace_edit.resource_operations", None) or []
    if lsp.ResourceOperationKind.Create not in operations:
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
    result = await ls.workspace_apply_edit_async(lsp.ApplyWorkspaceEditParams(edit=edit, label="paperlens: scaffold a module"))
    return bool(result.applied)

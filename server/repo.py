"""From the paper to a runnable repository, in the editor: scaffold the planned repository, and have
the LLM write one planned module. Both are workspace edits the user reviews; nothing is written
behind the editor's back."""

from __future__ import annotations

import asyncio
import logging
import re
import stat
from pathlib import Path

from lsprotocol import types as lsp
from paperlens.pipeline.decisions import DECISIONS_PATH, load_decisions
from paperlens.pipeline.errors import DecisionsError
from paperlens.pipeline.llm import LLMError
from paperlens.pipeline.repo.generate import GENERATED_ROLES, generate_file
from paperlens.pipeline.repo.plan import path_from_repository, plan_repository
from paperlens.pipeline.repo.skeleton import PLAN_PATH, skeleton_texts
from paperlens.schemas import PaperSpec, ReadinessReport
from paperlens.schemas.repo import PlannedFile, RepoPlan
from pydantic import ValidationError
from pygls.capabilities import get_capability

from .actions import (
    REFACTOR_GENERATE,
    action_offers,
    action_resolvers,
    apply_edit,
    creates_files,
    llm_client,
    llm_settings,
    resolves_edits,
)
from .app import PaperlensServer, _show, server

log = logging.getLogger("paperlens.server")
SCAFFOLD_REPOSITORY = "paperlens.scaffoldRepository"
GENERATE_MODULE = "paperlens.generateModule"
DEFAULT_FOLDER = "reproduction"
SCAFFOLD_ANNOTATION = "paperlens.scaffoldRepository"
SCAFFOLD_LABEL = "paperlens: scaffold repository from the paper"
GENERATE_TITLE = "paperlens: generate this module with the LLM"
GENERATE_KEY = "generate"  # what a generate action's data carries: the document's URI
NO_ENDPOINT = "no LLM endpoint configured (paperlens.llm.baseUrl / $PAPERLENS_LLM_BASE_URL)"
NO_MODEL = "no LLM model configured (paperlens.llm.model / $PAPERLENS_LLM_MODEL)"
STUB = re.compile(r"^\s*raise NotImplementedError\b", re.MULTILINE)
PlanStamp = tuple[int, int, int]  # a plan file's mtime (ns), size and inode: it changed when they did


# -- scaffold the repository -----------------------------------------------------------------------


@server.command(SCAFFOLD_REPOSITORY)
async def scaffold_repository(ls: PaperlensServer, *arguments: object) -> bool:
    """Plan the repository from the paper and create all its files under a folder of the workspace
    (the argument; `reproduction` by default) in one edit. Whether the edit was applied."""
    folder = arguments[0] if arguments else DEFAULT_FOLDER
    out = _folder_in_workspace(ls, folder)
    if ls.spec is None or ls.readiness is None or ls.root is None:
        problem = "no paper is loaded: there is nothing to plan a repository from"
    elif out is None:
        problem = f"cannot scaffold into {folder!r}: give a folder inside the workspace, relative to it"
    elif not creates_files(ls):
        problem = "the editor cannot create files through the language server"
    else:
        annotated = bool(get_capability(ls.client_capabilities, "workspace.workspace_edit.change_annotation_support", None))
        edit, problem = await asyncio.to_thread(_repository_edit, ls.root, ls.spec, ls.readiness, out, annotated)
    if problem is not None:
        _show(ls, problem, lsp.MessageType.Error)
        return False
    return await apply_edit(ls, edit, SCAFFOLD_LABEL)


def _folder_in_workspace(ls: PaperlensServer, folder: object) -> Path | None:
    if ls.root is None or not isinstance(folder, str) or Path(folder).is_absolute():
        return None
    out = (ls.root / folder).resolve()
    return out if out.is_relative_to(ls.root) else None


def _repository_edit(
    root: Path, spec: PaperSpec, readiness: ReadinessReport, out: Path, annotated: bool
) -> tuple[lsp.WorkspaceEdit | None, str | None]:
    """Every planned file created under `out`, in one edit that asks for the user's confirmation when
    the client can; why not, when the folder already holds one of them or the decisions are malformed."""
    try:
        decisions = load_decisions(root)
    except DecisionsError as err:
        return None, str(err)
    plan = plan_repository(
        spec,
        readiness,
        decisions,
        paper_path=path_from_repository(Path(spec.root) / spec.main_file, out),
        decisions_path=path_from_repository(root / DECISIONS_PATH, out),
    )
    texts = skeleton_texts(plan, spec, readiness, out)
    if existing := [path for path in texts if (out / path).exists()]:
        shown = ", ".join(existing[:5]) + (", …" if len(existing) > 5 else "")
        where = out.relative_to(root).as_posix() or "."
        return None, f"{where}/ already holds {shown}: scaffold the repository into an empty or new folder"
    annotation = SCAFFOLD_ANNOTATION if annotated else None
    changes: list[lsp.CreateFile | lsp.TextDocumentEdit] = []
    for path, text in texts.items():
        uri = (out / path).as_uri()
        start = lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0))
        insert = lsp.AnnotatedTextEdit(range=start, new_text=text, annotation_id=annotation) if annotation else lsp.TextEdit(range=start, new_text=text)
        document = lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None)
        # No overwrite option: the creation fails rather than overwrite a file made meanwhile.
        changes += [lsp.CreateFile(uri=uri, annotation_id=annotation), lsp.TextDocumentEdit(text_document=document, edits=[insert])]
    if annotation is None:
        return lsp.WorkspaceEdit(document_changes=changes), None
    # Asking for confirmation makes VS Code show the edit in its refactor preview first.
    confirm = lsp.ChangeAnnotation(label=SCAFFOLD_LABEL, needs_confirmation=True, description=f"{len(texts)} files planned from the paper")
    return lsp.WorkspaceEdit(document_changes=changes, change_annotations={annotation: confirm}), None


# -- generate a planned module -----------------------------------------------------------------------


async def _planned_module(ls: PaperlensServer, uri: str) -> tuple[Path, RepoPlan, PlannedFile] | None:
    """The repository folder, its plan and the planned module a workspace file is: the nearest
    `.paperlens/plan.json` above the file must plan it as a module. Finding it costs a `stat` per
    folder up to the workspace's root; a plan is read (in a thread) only when its file changed."""
    relative = ls.relative(uri)
    if ls.root is None or relative is None or not relative.endswith(".py"):
        return None
    path = ls.root / relative
    plans = ls.repo_plans
    for repository in path.parents[: len(Path(relative).parts)]:  # up to the workspace's root
        plan_file = repository / PLAN_PATH
        if (stamp := _stamp(plan_file)) is None:
            plans.pop(plan_file, None)
            continue
        cached = plans.get(plan_file)
        if cached is not None and cached[0] == stamp:
            plan = cached[1]
        else:  # stamped before reading: a change while it is read is seen by the next request
            plan, readable = await asyncio.to_thread(_read_plan, plan_file)
            if readable:
                plans[plan_file] = (stamp, plan)
        if plan is None:
            return None
        module = path.relative_to(repository).as_posix()
        planned = next((f for f in plan.files if f.role in GENERATED_ROLES and f.path == module), None)
        return (repository, plan, planned) if planned is not None else None
    return None


def _stamp(path: Path) -> PlanStamp | None:
    """What tells whether a plan file changed; None when there is no file there."""
    try:
        status = path.stat()
    except OSError:
        return None
    return (status.st_mtime_ns, status.st_size, status.st_ino) if stat.S_ISREG(status.st_mode) else None


def _read_plan(plan_file: Path) -> tuple[RepoPlan | None, bool]:
    """The plan, or None when the file is not one; and whether that answer holds until the file
    changes (not after an error reading it)."""
    try:
        return RepoPlan.model_validate_json(plan_file.read_bytes()), True
    except ValidationError as err:
        log.warning("%s cannot be read as a plan: %s", plan_file, err)
        return None, True
    except OSError as err:
        log.warning("%s cannot be read as a plan: %s", plan_file, err)
        return None, False


def _why_not_generate(ls: PaperlensServer, plan: RepoPlan) -> str | None:
    assert ls.spec is not None
    if plan.paper_title != (ls.spec.title or ls.spec.main_file):
        return f"this repository is planned from “{plan.paper_title}”, not from the paper loaded"
    try:
        settings = llm_settings(ls)
    except LLMError as err:
        return str(err)
    return NO_ENDPOINT if not settings.base_url else NO_MODEL if not settings.model else None


async def generate_actions(ls: PaperlensServer, uri: str) -> list[lsp.CodeAction]:
    """On a planned module that still has stubs. Shown disabled, with the reason, when the LLM cannot
    write it (so that users find it); the LLM is asked only when the user picks the action."""
    found = await _planned_module(ls, uri)
    if found is None or ls.spec is None or not STUB.search(ls.workspace.get_text_document(uri).source):
        return []
    action = lsp.CodeAction(title=GENERATE_TITLE, kind=REFACTOR_GENERATE, data={GENERATE_KEY: uri})
    if (reason := _why_not_generate(ls, found[1])) is not None:
        if not get_capability(ls.client_capabilities, "text_document.code_action.disabled_support", False):
            return []
        action.disabled = lsp.CodeActionDisabled(reason=reason)
    elif not resolves_edits(ls):
        # Answering at once would hold up every code action request for the LLM: the command asks it.
        action.command = lsp.Command(title=GENERATE_TITLE, command=GENERATE_MODULE, arguments=[uri])
    return [action]


async def resolve_generate(ls: PaperlensServer, action: lsp.CodeAction) -> lsp.CodeAction:
    assert isinstance(action.data, dict)
    action.edit = await _generated_edit(ls, action.data[GENERATE_KEY])
    return action


@server.command(GENERATE_MODULE)
async def generate_module(ls: PaperlensServer, uri: str) -> bool:
    """The generate action for a client that cannot resolve code actions: applies the edit itself."""
    edit = await _generated_edit(ls, uri)
    if edit is None:
        return False
    # Nothing is awaited between `_generated_edit`'s check that the document is still the one the LLM
    # was shown and sending the edit: an unversioned edit cannot overwrite what the user typed meanwhile.
    return await apply_edit(ls, edit, GENERATE_TITLE)


async def _generated_edit(ls: PaperlensServer, uri: str) -> lsp.WorkspaceEdit | None:
    """The module's whole text as the LLM writes it (checked by `generate_file`), replacing the
    document; None, with a message saying why, when there is none (also when the document changed
    while the LLM wrote: not every client can be sent an edit it refuses on a newer version)."""
    found = await _planned_module(ls, uri)
    if found is None or ls.spec is None or ls.facts is None:
        _show(ls, "this file is not a module of a repository planned from the loaded paper", lsp.MessageType.Error)
        return None
    repository, plan, planned = found
    if (reason := _why_not_generate(ls, plan)) is not None:
        _show(ls, f"cannot generate {planned.path}: {reason}", lsp.MessageType.Error)
        return None
    document = ls.workspace.get_text_document(uri)
    version, source = document.version, document.source
    saved = await asyncio.to_thread((repository / planned.path).read_text, encoding="utf-8")
    if source != saved:  # the LLM writes over the file as saved: unsaved edits would be lost
        _show(ls, f"cannot generate {planned.path}: save it first", lsp.MessageType.Error)
        return None
    client = await asyncio.to_thread(llm_client, ls)
    if client is None:
        _show(ls, f"cannot generate {planned.path}: the LLM endpoint's settings are not usable (see the log)", lsp.MessageType.Error)
        return None
    spec, facts = ls.spec, ls.facts
    try:
        text, record = await asyncio.to_thread(generate_file, repository, planned, plan, spec, client, facts)
    except LLMError as err:
        _show(ls, f"generating {planned.path} failed: {err}", lsp.MessageType.Error)
        return None
    if text is None:
        _show(ls, f"no answer of the LLM for {planned.path} was kept: {'; '.join(record.problems)}", lsp.MessageType.Warning)
        return None
    document = ls.workspace.get_text_document(uri)  # as it is now (a closed one is read from disk)
    if document.version != version or document.source != source:
        _show(ls, f"{planned.path} changed while the LLM was writing it: nothing was applied; generate it again", lsp.MessageType.Warning)
        return None
    whole = lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=len(document.lines), character=0))
    replace = lsp.TextEdit(range=whole, new_text=text)
    if get_capability(ls.client_capabilities, "workspace.workspace_edit.document_changes", False):
        # Versioned: the editor refuses the edit if the document changed while the LLM wrote.
        identifier = lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(text_document=identifier, edits=[replace])])
    return lsp.WorkspaceEdit(changes={uri: [replace]})


action_offers.append(generate_actions)
action_resolvers[GENERATE_KEY] = resolve_generate

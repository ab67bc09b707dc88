"""The language server over stdio, driven by a real LSP client (pytest-lsp)."""

from __future__ import annotations

import asyncio
import shutil
import sys

import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from .conftest import EXAMPLE_PAPER

WORKSPACE = EXAMPLE_PAPER.parent / "workspace"


@pytest_lsp.fixture(
    params=["visual-studio-code", "neovim"],
    config=ClientServerConfig(server_command=[sys.executable, "-m", "paperlens.server"]),
)
async def client(lsp_client: LanguageClient, request, tmp_path):
    workspace = tmp_path / "workspace"
    shutil.copytree(WORKSPACE, workspace)
    paper = tmp_path / "paper"
    shutil.copytree(EXAMPLE_PAPER, paper)
    (workspace / "pyproject.toml").write_text('[tool.paperlens]\npaper = "../paper"\n')
    lsp_client.workspace_path = workspace
    lsp_client.paper_path = paper
    lsp_client.registrations = []
    lsp_client.feature(lsp.CLIENT_REGISTER_CAPABILITY)(lambda params: lsp_client.registrations.append(params))
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities(request.param),
            workspace_folders=[lsp.WorkspaceFolder(uri=workspace.as_uri(), name="workspace")],
            initialization_options={"paperlens": {"paper": 42}},  # malformed: reported, then the default is used
        )
    )
    yield
    await lsp_client.shutdown_session()


async def _diagnostics(client: LanguageClient, uri: str) -> list[lsp.Diagnostic]:
    async with asyncio.timeout(30):
        while uri not in client.diagnostics:
            await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return client.diagnostics[uri]


def _open(client: LanguageClient, name: str) -> tuple[str, str]:
    path = client.workspace_path / name
    text = path.read_text()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(uri=path.as_uri(), language_id="python", version=1, text=text))
    )
    return path.as_uri(), text


async def test_divergences_appear_on_open_with_the_paper_beside_them(client: LanguageClient):
    uri, _ = _open(client, "train.py")
    diagnostics = await _diagnostics(client, uri)
    weight_decay = next(d for d in diagnostics if "weight_decay = 5e-4" in d.message)
    assert weight_decay.severity == lsp.DiagnosticSeverity.Error and weight_decay.source == "paperlens"
    assert weight_decay.range.start.line == 29
    related = weight_decay.related_information[0]
    assert related.location.uri.endswith("experiments.tex") and "weight decay of 0.05" in related.message


async def test_hover_quotes_the_paper(client: LanguageClient):
    uri, _ = _open(client, "train.py")
    diagnostics = await _diagnostics(client, uri)
    position = next(d for d in diagnostics if "weight_decay" in d.message).range.start
    hover = await client.text_document_hover_async(
        lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=position)
    )
    assert "weight decay of 0.05" in hover.contents.value and "experiments.tex" in hover.contents.value


async def test_an_edit_to_the_papers_value_clears_the_diagnostic(client: LanguageClient):
    uri, text = _open(client, "train.py")
    await _diagnostics(client, uri)
    fixed = text.replace("weight_decay=5e-4", "weight_decay=0.05")
    client.diagnostics.pop(uri)
    for version, content in enumerate([text, fixed.replace("0.05", "0.5"), fixed], start=2):  # a burst of edits
        client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=content)],
            )
        )
    diagnostics = await _diagnostics(client, uri)
    assert not [d for d in diagnostics if "weight_decay" in d.message]
    assert any("alpha = 0.2" in d.message for d in diagnostics)  # the rest of the file is still checked


def _apply(text: str, edits: list[lsp.TextEdit]) -> str:
    lines = text.split("\n")
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        start, end = edit.range.start, edit.range.end
        head = "\n".join(lines[: start.line] + [lines[start.line][: start.character]]) if start.line < len(lines) else text
        tail = "\n".join([lines[end.line][end.character :]] + lines[end.line + 1 :]) if end.line < len(lines) else ""
        text = head + edit.new_text + tail
        lines = text.split("\n")
    return text


async def _actions(client: LanguageClient, uri: str, diagnostic: lsp.Diagnostic) -> dict[str, lsp.CodeAction]:
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), range=diagnostic.range, context=lsp.CodeActionContext(diagnostics=[diagnostic])
        )
    )
    return {action.title: action for action in actions}


async def test_use_the_papers_value_removes_the_diagnostic(client: LanguageClient):
    uri, text = _open(client, "train.py")
    diagnostic = next(d for d in await _diagnostics(client, uri) if "weight_decay" in d.message)
    action = (await _actions(client, uri, diagnostic))["Use the paper's value (0.05)"]
    fixed = _apply(text, action.edit.changes[uri])
    assert "weight_decay=0.05)" in fixed and fixed.count("\n") == text.count("\n")
    client.diagnostics.pop(uri)
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=fixed)],
        )
    )
    assert not [d for d in await _diagnostics(client, uri) if "weight_decay" in d.message]


async def test_recording_a_deviation_turns_the_diagnostic_into_a_recorded_note(client: LanguageClient):
    uri, _ = _open(client, "train.py")
    diagnostic = next(d for d in await _diagnostics(client, uri) if "weight_decay" in d.message)
    action = (await _actions(client, uri, diagnostic))["Record this as a deliberate deviation"]
    create, write = action.edit.document_changes
    decisions = client.workspace_path / ".paperlens" / "decisions.yaml"
    assert create.uri == decisions.as_uri()
    decisions.parent.mkdir()
    decisions.write_text(write.edits[0].new_text)  # what the editor does when the user applies it
    assert "setting: weight_decay" in decisions.read_text()
    client.diagnostics.pop(uri)
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(changes=[lsp.FileEvent(uri=decisions.as_uri(), type=lsp.FileChangeType.Created)])
    )
    recorded = next(d for d in await _diagnostics(client, uri) if "weight_decay" in d.message)
    assert recorded.severity == lsp.DiagnosticSeverity.Hint and "(recorded: d1)" in recorded.message


async def test_a_malformed_setting_is_shown_and_the_default_used(client: LanguageClient):
    uri, _ = _open(client, "train.py")
    assert await _diagnostics(client, uri)
    assert any("paperlens.paper must be a path, not 42" in m.message for m in client.messages)
    watchers = [w for r in client.registrations for reg in r.registrations for w in reg.register_options["watchers"]]
    watch_capability = client.capabilities.workspace.did_change_watched_files
    if watch_capability is not None and watch_capability.dynamic_registration:
        assert {"globPattern": "**/.paperlens/decisions.yaml"} in watchers
    else:
        assert watchers == []  # a client that cannot watch is not asked to


async def test_editing_the_paper_on_disk_updates_the_diagnostics(client: LanguageClient):
    uri, _ = _open(client, "train.py")
    assert any("weight_decay" in d.message for d in await _diagnostics(client, uri))
    experiments = client.paper_path / "sections" / "experiments.tex"
    experiments.write_text(experiments.read_text().replace("weight decay of \\wdecay{}", "weight decay of 5e-4").replace("Weight decay & \\wdecay", "Weight decay & 5e-4"))
    client.diagnostics.pop(uri)
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(changes=[lsp.FileEvent(uri=experiments.as_uri(), type=lsp.FileChangeType.Changed)])
    )
    assert not [d for d in await _diagnostics(client, uri) if "weight_decay" in d.message]


async def test_an_open_paper_shows_its_own_gaps(client: LanguageClient):
    experiments = client.paper_path / "sections" / "experiments.tex"
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=experiments.as_uri(), language_id="latex", version=1, text=experiments.read_text())
        )
    )
    diagnostics = await _diagnostics(client, experiments.as_uri())
    conflict = next(d for d in diagnostics if d.code == "conflicting-values")
    assert conflict.severity == lsp.DiagnosticSeverity.Warning and conflict.range.start.line == 7
    assert "Which one was used" in conflict.message


async def test_go_to_definition_from_an_anchor_to_the_equation(client: LanguageClient):
    uri, text = _open(client, "tlm.py")
    await _diagnostics(client, uri)
    line = next(i for i, l in enumerate(text.splitlines()) if "Eq. (3)" in l)
    column = text.splitlines()[line].index("Eq. (3)") + 2
    target = await client.text_document_definition_async(
        lsp.DefinitionParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=line, character=column))
    )
    assert target.uri.endswith("sections/method.tex")
    method = (client.paper_path / "sections" / "method.tex").read_text().splitlines()
    assert "eq:tempered-weight" in "\n".join(method[target.range.start.line : target.range.end.line + 1])


async def test_reading_the_paper_reports_progress_where_the_client_shows_it(client: LanguageClient):
    uri, _ = _open(client, "train.py")
    await _diagnostics(client, uri)
    if not client.capabilities.window or not client.capabilities.window.work_done_progress:
        assert not client.progress_reports
        return
    [reports] = client.progress_reports.values()
    assert reports[0].kind == "begin" and reports[0].title == "paperlens: reading the paper"
    assert reports[1].message == "indexing the workspace" and reports[-1].kind == "end"

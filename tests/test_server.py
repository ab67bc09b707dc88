"""The language server over stdio, driven by a real LSP client (pytest-lsp)."""

from __future__ import annotations

import asyncio
import shutil
import sys

import pytest
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
    (workspace / "pyproject.toml").write_text(f'[tool.paperlens]\npaper = "{EXAMPLE_PAPER.as_posix()}"\n')
    lsp_client.workspace_path = workspace
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

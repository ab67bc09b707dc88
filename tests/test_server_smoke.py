"""Smoke runs from the editor, over stdio with a real Docker engine: save → progress → a diagnostic
at the failing line, beside the checks' own diagnostics."""

from __future__ import annotations

import asyncio
import sys

import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from .test_server import _diagnostics, _open, _start

FAILING_TEST = '''import numpy as np


def test_the_head_maps_features_to_classes():
    features = np.ones((8, 512))
    head = np.ones((256, 10))
    logits = features @ head  # <- here
    assert logits.shape == (8, 10)
'''


def _with_a_failing_test(workspace) -> None:
    (workspace / "tests").mkdir()
    (workspace / "tests" / "test_head.py").write_text(FAILING_TEST)


@pytest_lsp.fixture(params=["visual-studio-code", "neovim"], config=ClientServerConfig(server_command=[sys.executable, "-m", "paperlens.server"]))
async def client(lsp_client: LanguageClient, request, tmp_path):
    await _start(lsp_client, request.param, tmp_path, prepare=_with_a_failing_test)
    yield
    await lsp_client.shutdown_session()


async def test_saving_runs_the_smoke_test_and_marks_the_failing_line(client: LanguageClient):
    uri, _ = _open(client, "train.py")
    checks = await _diagnostics(client, uri)
    assert any(d.source == "paperlens" for d in checks)
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    failing = client.workspace_path / "tests" / "test_head.py"
    diagnostics = await _diagnostics(client, failing.as_uri())
    [shape] = [d for d in diagnostics if d.source == "paperlens smoke" and d.severity == lsp.DiagnosticSeverity.Error]
    assert shape.code == "shape-mismatch"
    assert shape.range.start.line == FAILING_TEST.splitlines().index(next(l for l in FAILING_TEST.splitlines() if "<- here" in l))
    titles = [r.title for reports in client.progress_reports.values() for r in reports if r.kind == "begin"]
    assert "paperlens: smoke run" in titles
    async with asyncio.timeout(10):
        while not any("smoke run failed at tests/test_head.py" in m.message for m in client.messages):
            await asyncio.sleep(0.05)
    # The smoke run's diagnostics do not wipe the checks' on train.py, and an edit there keeps the smoke ones.
    assert [d for d in client.diagnostics[uri] if d.source == "paperlens"]

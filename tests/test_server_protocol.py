"""The protocol as every client speaks it, over stdio with a real LSP client (pytest-lsp): columns in
the negotiated encoding, edits of the buffer the user sees, what is under the cursor, the formats and
requests a client supports, and an answer to every request."""

from __future__ import annotations

import ast
import asyncio
import json
import re
import subprocess
import sys

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from paperlens.server.positions import Positions

from .test_server import _actions, _apply, _diagnostics, _edits_of, _hover, _open, _record, _start, _where

# A line with a character of each width before the value: λ (2 UTF-8 bytes, 1 UTF-16 unit),
# 𝜆 and 😀 (4 bytes, 2 units: beyond the Basic Multilingual Plane).
WIDE_LINE = '    note = "λ 𝜆 😀"; optimizer = build_optimizer(model, weight_decay=5e-4)\n'
TWO_VALUES_LINE = '    probe = torch.optim.AdamW(model.parameters(), lr=0.1, weight_decay=0.3)  # λ\n'


RANGE_ANCHOR = 'def both_weights(m, tau):\n    """Eqs. (3)-(4) together."""\n    return m ** (1 / tau)\n'


def _wide_lines(workspace) -> None:
    train = workspace / "train.py"
    text = train.read_text()
    assert "    optimizer = build_optimizer(model, weight_decay=5e-4)\n" in text
    train.write_text(text.replace("    optimizer = build_optimizer(model, weight_decay=5e-4)\n", WIDE_LINE + TWO_VALUES_LINE))
    (workspace / "tlm.py").write_text((workspace / "tlm.py").read_text() + "\n\n" + RANGE_ANCHOR)


def _capabilities(preset: str, encodings=None, hover_formats=None, show_document=True, resource_operations=True) -> lsp.ClientCapabilities:
    capabilities = client_capabilities(preset)
    if encodings is not None:
        capabilities.general = lsp.GeneralClientCapabilities(position_encodings=encodings)
    if hover_formats is not None:
        capabilities.text_document.hover.content_format = hover_formats
    if not show_document:
        capabilities.window.show_document = None
    if not resource_operations:  # as Emacs eglot: edits, but no file operations
        capabilities.workspace.workspace_edit = lsp.WorkspaceEditClientCapabilities(document_changes=True)
    return capabilities


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "paperlens.server"]))
async def client(lsp_client: LanguageClient, request, tmp_path):
    """A session with the example and the wide lines, for the client `request.param` describes."""
    await _start(lsp_client, "visual-studio-code", tmp_path, prepare=_wide_lines, capabilities=_capabilities(**request.param))
    yield
    await lsp_client.shutdown_session()


def _units(text: str, encoding: str) -> bytes:
    return text.encode({"utf-8": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}[encoding])


def _slice(line: str, start: int, end: int, encoding: str) -> str:
    """The text between two columns counted in `encoding`'s units."""
    width = {"utf-8": 1, "utf-16": 2, "utf-32": 4}[encoding]
    return _units(line, encoding)[start * width : end * width].decode(_codec(encoding))


def _codec(encoding: str) -> str:
    return {"utf-8": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}[encoding]


def _column(line: str, needle: str, encoding: str) -> int:
    """Where `needle` starts in `line`, in `encoding`'s units."""
    width = {"utf-8": 1, "utf-16": 2, "utf-32": 4}[encoding]
    return len(_units(line[: line.index(needle)], encoding)) // width


@pytest.mark.parametrize(
    "client, encoding",
    [({"preset": "neovim", "encodings": [e]}, e) for e in ("utf-8", "utf-16", "utf-32")] + [({"preset": "visual-studio-code"}, "utf-16")],
    indirect=["client"],
    ids=["utf-8", "utf-16", "utf-32", "none-offered"],
)
async def test_every_range_counts_columns_in_the_negotiated_encoding(client: LanguageClient, encoding: str):
    assert client.server_offers.capabilities.position_encoding == encoding
    uri, text = _open(client, "train.py")
    lines = text.split("\n")
    diagnostics = await _diagnostics(client, uri)
    decay = next(d for d in diagnostics if "weight_decay = 5e-4" in d.message)
    line = lines[decay.range.start.line]
    assert line == WIDE_LINE.rstrip("\n")
    assert _slice(line, decay.range.start.character, decay.range.end.character, encoding) == "5e-4"
    # The hover and the actions at that place are the weight decay's; the fix replaces exactly the value.
    assert "weight_decay = 5e-4" in await _hover(client, uri, decay.range.start.line, decay.range.start.character + 1)
    fix = (await _actions(client, uri, decay))["Use the paper's weight decay (0.05)"]
    [edit] = _edits_of(fix.edit, uri)
    fixed_line = _apply(line, [lsp.TextEdit(range=_as_code_points(edit.range, line, encoding), new_text=edit.new_text)])
    assert fixed_line == WIDE_LINE.rstrip("\n").replace("5e-4", "0.05")
    # Anchors in a docstring after a λ: the link covers `Eq. (5)`, and hovering it shows Eq. (5).
    tlm, tlm_text = _open(client, "tlm.py")
    await _diagnostics(client, tlm)
    anchor_line, _ = _where(tlm_text, "λ L_cons, Eq. (5)")
    links = await client.text_document_document_link_async(lsp.DocumentLinkParams(text_document=lsp.TextDocumentIdentifier(uri=tlm)))
    link = next(link for link in links if link.range.start.line == anchor_line)
    docstring = tlm_text.split("\n")[anchor_line]
    assert _slice(docstring, link.range.start.character, link.range.end.character, encoding) == "Eq. (5)"
    column = _column(docstring, "(5)", encoding)
    assert "**Eq. (5)**" in await _hover(client, tlm, anchor_line, column)
    target = await client.text_document_definition_async(
        lsp.DefinitionParams(text_document=lsp.TextDocumentIdentifier(uri=tlm), position=lsp.Position(line=anchor_line, character=column))
    )
    assert target is not None and target.uri.endswith("method.tex")


def _as_code_points(where: lsp.Range, line: str, encoding: str) -> lsp.Range:
    """A one-line range in `encoding`'s units as code points, to apply it with str indices."""
    data = _units(line, encoding)
    width = {"utf-8": 1, "utf-16": 2, "utf-32": 4}[encoding]

    def convert(character: int) -> int:
        return len(data[: character * width].decode(_codec(encoding)))

    return lsp.Range(
        start=lsp.Position(line=0, character=convert(where.start.character)), end=lsp.Position(line=0, character=convert(where.end.character))
    )


@pytest.mark.parametrize("client", [{"preset": "visual-studio-code"}, {"preset": "neovim"}], indirect=True, ids=["vscode", "neovim"])
async def test_the_papers_value_is_written_into_the_unsaved_buffer_not_the_file_on_disk(client: LanguageClient):
    uri, saved = _open(client, "train.py")
    await _diagnostics(client, uri)
    # Unsaved: a comment line above and a λ before the value move it on the line and down by one.
    unsaved = saved.replace(WIDE_LINE, "    # λ: the decay below is the paper's?\n" + WIDE_LINE.replace('note = "', 'note = "λλ '))
    client.diagnostics.pop(uri)
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=unsaved)],
        )
    )
    decay = next(d for d in await _diagnostics(client, uri) if "weight_decay = 5e-4" in d.message)
    fix = (await _actions(client, uri, decay))["Use the paper's weight decay (0.05)"]
    if fix.edit.document_changes is not None:  # versioned: the editor refuses it on any other version
        assert fix.edit.document_changes[0].text_document.version == 2
    edits = _edits_of(fix.edit, uri)
    encoding = client.server_offers.capabilities.position_encoding or "utf-16"
    lines = unsaved.split("\n")
    line = lines[edits[0].range.start.line]
    edits = [lsp.TextEdit(range=_as_code_points(e.range, line, encoding), new_text=e.new_text) for e in edits]
    lines[decay.range.start.line] = _apply(line, edits)
    fixed = "\n".join(lines)
    ast.parse(fixed)
    assert fixed == unsaved.replace("weight_decay=5e-4", "weight_decay=0.05")
    # A newer version the server has not analysed yet gets no edit made for the old text.
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text="\n\n" + unsaved)],
        )
    )
    assert "Use the paper's weight decay (0.05)" not in await _actions(client, uri, decay)


@pytest.mark.parametrize("client", [{"preset": "visual-studio-code"}], indirect=True)
async def test_hover_and_actions_are_for_what_is_under_the_cursor(client: LanguageClient):
    uri, text = _open(client, "train.py")
    diagnostics = await _diagnostics(client, uri)
    line, _ = _where(text, "probe = ")
    on_line = {d.message.split(" here")[0]: d for d in diagnostics if d.range.start.line == line}
    assert {"lr = 0.1", "weight_decay = 0.3"} <= on_line.keys()
    row = text.split("\n")[line]
    assert "lr = 0.1 here" in await _hover(client, uri, line, row.index("0.1"))
    assert "weight_decay = 0.3 here" in await _hover(client, uri, line, row.index("0.3"))
    # The whole line selected, the weight decay's diagnostic named: its actions come first.
    whole = lsp.Range(start=lsp.Position(line=line, character=0), end=lsp.Position(line=line, character=len(row)))
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), range=whole, context=lsp.CodeActionContext(diagnostics=[on_line["weight_decay = 0.3"]])
        )
    )
    titles = [a.title for a in actions]
    assert titles[:2] == ["Use the paper's weight decay (0.05)", "Record weight_decay = 0.3 as a deliberate deviation"]
    assert "Use the paper's learning rate (3e-4)" in titles[2:]
    # A cursor on the learning rate offers its actions only.
    at_lr = lsp.Position(line=line, character=row.index("0.1"))
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), range=lsp.Range(start=at_lr, end=at_lr), context=lsp.CodeActionContext(diagnostics=[])
        )
    )
    assert [a.title for a in actions if "weight decay" in a.title or "weight_decay" in a.title] == []
    assert "Use the paper's learning rate (3e-4)" in [a.title for a in actions]
    # An anchor naming a range of equations: the hover shows each of them.
    tlm, tlm_text = _open(client, "tlm.py")
    await _diagnostics(client, tlm)
    line, column = _where(tlm_text, "Eqs. (3)-(4)")
    value = await _hover(client, tlm, line, column + len("Eqs. (3)"))
    assert "**Eq. (3)**" in value and "**Eq. (4)**" in value


@pytest.mark.parametrize("client", [{"preset": "visual-studio-code", "hover_formats": [lsp.MarkupKind.PlainText]}], indirect=True)
async def test_a_client_that_asks_for_plain_text_hovers_gets_plain_text(client: LanguageClient):
    uri, text = _open(client, "tlm.py")
    await _diagnostics(client, uri)
    line, column = _where(text, "Eq. (3)")
    hover = await client.text_document_hover_async(
        lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=line, character=column + 2))
    )
    assert hover.contents.kind == lsp.MarkupKind.PlainText
    value = hover.contents.value
    assert value.startswith("Eq. (3)") and "data:image" not in value and "**" not in value and "```" not in value
    assert "method.tex#L" in value  # where to open it, as text


@pytest.mark.parametrize("client", [{"preset": "neovim", "show_document": False, "resource_operations": False}], indirect=True)
async def test_a_client_without_show_document_or_file_operations_is_never_sent_them(client: LanguageClient):
    uri, text = _open(client, "tlm.py")
    await _diagnostics(client, uri)
    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    lens = next(lens for lens in lenses if lens.command.title.startswith("Implements Eq. (3)"))
    place = await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command=lens.command.command, arguments=lens.command.arguments))
    assert place["uri"].endswith("sections/method.tex") and place["range"]["start"]["line"] >= 0  # for the client to open
    assert client.shown_documents == []
    # Recording a decision with no file to create: the server writes it itself, and says so.
    train, _ = _open(client, "train.py")
    decay = next(d for d in await _diagnostics(client, train) if "weight_decay = 5e-4" in d.message)
    record = (await _actions(client, train, decay))["Record weight_decay = 5e-4 as a deliberate deviation"]
    assert "setting: weight_decay" in await _record(client, record)
    # Once the file exists, recording again is an edit of it any client can apply.
    again = (await _actions(client, train, decay))["Record weight_decay = 5e-4 as a deliberate deviation"]
    decisions = client.workspace_path / ".paperlens" / "decisions.yaml"
    assert again.edit is not None and list(again.edit.changes) == [decisions.as_uri()]


@pytest.mark.parametrize("client", [{"preset": "visual-studio-code"}], indirect=True)
@pytest.mark.parametrize(
    "method, params, wrong",
    [
        ("textDocument/hover", {"textDocument": {"uri": "file:///x.py"}}, "position"),
        ("textDocument/hover", {"position": {"line": 0, "character": 0}}, "textDocument"),
        ("textDocument/hover", {"textDocument": {"uri": "file:///x.py"}, "position": {"line": -1, "character": 0}}, "position"),
        ("textDocument/codeAction", {"textDocument": {"uri": "file:///x.py"}, "range": "nope", "context": {"diagnostics": []}}, "range"),
    ],
    ids=["no-position", "no-document", "line-minus-one", "range-nope"],
)
async def test_a_malformed_request_is_answered_with_invalid_params(client: LanguageClient, monkeypatch, method: str, params: dict, wrong: str):
    # Sent as plain JSON: the client library would refuse to build such a request of its own types.
    with monkeypatch.context() as patched:
        patched.setattr(client.protocol, "get_message_type", lambda method: None)
        answer = client.protocol.send_request(method, params)
    with pytest.raises(JsonRpcException) as raised:
        async with asyncio.timeout(10):
            await asyncio.wrap_future(answer)
    error = raised.value.to_response_error()
    assert error.code == -32602 and method in error.message and wrong in error.message
    # The server goes on: a well-formed request after it is answered.
    uri, _ = _open(client, "train.py")
    assert await _diagnostics(client, uri)


def test_columns_convert_both_ways_in_each_encoding(tmp_path):
    """The one converter: code points ↔ UTF-8 bytes, UTF-16 units, UTF-32; a position inside a
    character is that character; past the end stays past the end."""
    path = tmp_path / "wide.py"
    line = 'x = "λ𝜆😀" + y'
    path.write_text(f"# first\n{line}\n", encoding="utf-8")
    uri = path.as_uri()
    after_emoji = line.index("😀") + 1  # code points
    expected = {"utf-8": len(line[:after_emoji].encode()), "utf-16": len(line[:after_emoji].encode("utf-16-le")) // 2, "utf-32": after_emoji}
    for encoding, units in expected.items():
        positions = Positions()
        positions.workspace = type("Workspace", (), {"position_encoding": encoding, "text_documents": {}})()
        assert positions.character(uri, 1, after_emoji) == units
        assert positions.column(uri, lsp.Position(line=1, character=units)) == after_emoji
        assert positions.character(uri, 0, 3) == 3  # an ASCII line counts the same everywhere
        assert positions.character(uri, 1, len(line) + 2) == positions.character(uri, 1, len(line)) + 2
    inside = Positions()
    inside.workspace = type("Workspace", (), {"position_encoding": "utf-8", "text_documents": {}})()
    lambda_at = line.index("λ")
    assert inside.column(uri, lsp.Position(line=1, character=lambda_at + 1)) == lambda_at  # the middle of λ's two bytes


def test_a_client_mistake_is_one_timestamped_warning_not_an_internal_error(tmp_path):
    """Over plain stdio: the server's log (stderr) has one line for a malformed request, with its
    time, as a warning; no traceback, no "internal error"."""

    def frame(message: dict) -> bytes:
        body = json.dumps(message).encode()
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    messages = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}, "rootUri": tmp_path.as_uri()}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover", "params": {"textDocument": {"uri": (tmp_path / "x.py").as_uri()}}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    done = subprocess.run(
        [sys.executable, "-m", "paperlens.server"], input=b"".join(frame(m) for m in messages), capture_output=True, timeout=60, cwd=tmp_path
    )
    log = done.stderr.decode()
    about_it = [line for line in log.splitlines() if "textDocument/hover" in line]
    assert len(about_it) == 1, log
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} WARNING paperlens\.server: invalid params for textDocument/hover", about_it[0])
    assert "Traceback" not in log and "internal error" not in log
    assert b'"code": -32602' in done.stdout


@pytest.mark.parametrize(
    "body", [b"{not json", b'{"jsonrpc": "2.0", "id": 7, "method": "textDocument/hover", "params": ' + b"[" * 20000 + b"]" * 20000 + b"}"],
    ids=["not-json", "nested-20000-deep"],
)
def test_a_message_that_cannot_be_parsed_gets_a_parse_error_and_the_server_goes_on(tmp_path, body):
    """JSON-RPC's answer to a body that does not parse: error -32700 with a null id (the id was never
    read); one warning in the log, no traceback; the next request is answered."""

    def frame(message: dict | bytes) -> bytes:
        raw = message if isinstance(message, bytes) else json.dumps(message).encode()
        return b"Content-Length: %d\r\n\r\n" % len(raw) + raw

    messages = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}, "rootUri": tmp_path.as_uri()}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        body,
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    done = subprocess.run(
        [sys.executable, "-m", "paperlens.server"], input=b"".join(frame(m) for m in messages), capture_output=True, timeout=60, cwd=tmp_path
    )
    answers = [json.loads(part.split(b"\r\n\r\n", 1)[1]) for part in done.stdout.split(b"Content-Length: ")[1:]]
    parse_errors = [a for a in answers if "error" in a]
    assert len(parse_errors) == 1 and parse_errors[0]["id"] is None and parse_errors[0]["error"]["code"] == -32700
    assert {"jsonrpc": "2.0", "id": 2, "result": None} in answers and done.returncode == 0
    log = done.stderr.decode()
    assert log.count("a message that cannot be parsed") == 1 and "Traceback" not in log and "internal error" not in log

"""The language server over stdio, driven by a real LSP client (pytest-lsp)."""

from __future__ import annotations

import ast
import asyncio
import base64
import json
import re
import shutil
import sys

import pytest
import yaml

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
    # A malformed setting: reported, then the default is used.
    await _start(lsp_client, request.param, tmp_path, options={"paperlens": {"paper": 42}})
    yield
    await lsp_client.shutdown_session()


async def _start(
    lsp_client: LanguageClient, preset: str, tmp_path, *, paper: str = "../paper", options=None, prepare=None, capabilities=None
) -> None:
    """The example workspace and paper copied under tmp_path, and a session with a client preset
    (or `capabilities`, the preset changed by a test). The checklist is off unless `options` turn it
    on: its diagnostics would race the checks' to a test waiting for a document's first ones."""
    options = {**(options or {}), "paperlens": {"checklist": False, **(options or {}).get("paperlens", {})}}
    workspace = tmp_path / "workspace"
    shutil.copytree(WORKSPACE, workspace)
    shutil.copytree(EXAMPLE_PAPER, tmp_path / "paper")
    (workspace / "pyproject.toml").write_text(f'[tool.paperlens]\npaper = "{paper}"\n')
    if prepare is not None:
        prepare(workspace)
    lsp_client.workspace_path = workspace
    lsp_client.paper_path = tmp_path / "paper"
    lsp_client.registrations = []
    lsp_client.feature(lsp.CLIENT_REGISTER_CAPABILITY)(lambda params: lsp_client.registrations.append(params))
    lsp_client.lens_refreshes = 0

    @lsp_client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)
    def _lens_refresh(params) -> None:
        lsp_client.lens_refreshes += 1
    lsp_client.server_offers = await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=capabilities or client_capabilities(preset),
            workspace_folders=[lsp.WorkspaceFolder(uri=workspace.as_uri(), name="workspace")],
            initialization_options=options,
        )
    )


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


def _edits_of(edit: lsp.WorkspaceEdit, uri: str) -> list[lsp.TextEdit]:
    """A document's text edits, whether the edit carries them as `changes` or `documentChanges`."""
    if edit.changes is not None:
        return edit.changes[uri]
    return [e for c in edit.document_changes if isinstance(c, lsp.TextDocumentEdit) and c.text_document.uri == uri for e in c.edits]


async def _actions(client: LanguageClient, uri: str, diagnostic: lsp.Diagnostic) -> dict[str, lsp.CodeAction]:
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), range=diagnostic.range, context=lsp.CodeActionContext(diagnostics=[diagnostic])
        )
    )
    return {action.title: _as_code_action(action) for action in actions}


def _as_code_action(action: lsp.CodeAction | lsp.Command) -> lsp.CodeAction | lsp.Command:
    """The client library reads a code action that carries a command (and no edit) as a Command
    whose `command` is the nested command turned into a string: read it again as the CodeAction it is."""
    if isinstance(action, lsp.Command) and action.command.startswith("{"):
        return lsp.CodeAction(title=action.title, command=lsp.Command(**ast.literal_eval(action.command)))
    return action


async def test_use_the_papers_value_removes_the_diagnostic(client: LanguageClient):
    uri, text = _open(client, "train.py")
    diagnostic = next(d for d in await _diagnostics(client, uri) if "weight_decay" in d.message)
    action = (await _actions(client, uri, diagnostic))["Use the paper's weight decay (0.05)"]
    fixed = _apply(text, _edits_of(action.edit, uri))
    assert "weight_decay=0.05)" in fixed and fixed.count("\n") == text.count("\n")
    client.diagnostics.pop(uri)
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=fixed)],
        )
    )
    assert not [d for d in await _diagnostics(client, uri) if "weight_decay" in d.message]


async def _record(client: LanguageClient, action: lsp.CodeAction | lsp.Command) -> str:
    """Apply an action that writes the (missing) decisions file, as the client would: the edit
    creating it when the client takes file creations in `documentChanges`, else the server's command."""
    decisions = client.workspace_path / ".paperlens" / "decisions.yaml"
    assert not decisions.exists()
    command = action if isinstance(action, lsp.Command) else action.command
    if command is not None:
        assert isinstance(action, lsp.Command) or action.edit is None
        await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command=command.command, arguments=command.arguments))
        assert any("recorded in .paperlens/decisions.yaml" in m.message for m in client.messages)
    else:
        create, write = action.edit.document_changes
        assert create.uri == decisions.as_uri() and create.options is None  # no ignoreIfExists: the client makes the file
        decisions.parent.mkdir()
        decisions.write_text(write.edits[0].new_text)
    return decisions.read_text()


async def test_the_binding_of_an_equations_symbols_is_recorded_for_the_team_to_correct(client: LanguageClient):
    uri, _ = _open(client, "tlm.py")
    agreement = next(d for d in await _diagnostics(client, uri) if d.code == "agreement")
    assert agreement.severity == lsp.DiagnosticSeverity.Information and "computes Eq. (3)" in agreement.message
    action = (await _actions(client, uri, agreement))["Record which name of `tempered_weight` stands for which symbol of Eq. (3)"]
    written = yaml.safe_load(await _record(client, action))
    [binding] = written["bindings"]
    assert (binding["function"], binding["equation"], binding["symbols"]) == ("tempered_weight", "3", {"m": "m", "tau": "tau"})
    assert binding["reason"].startswith("TODO")


async def test_a_symbol_paperlens_cannot_bind_is_recorded_for_the_team_to_name_and_then_compared(client: LanguageClient):
    """`mask` spells no symbol of Eq. (3): the pair is not compared; an action on the `def` line
    writes the binding paperlens could tell (tau) with m left empty; once the team names it, the
    function is compared with the equation."""
    path = client.workspace_path / "unbound.py"
    path.write_text('def tempered(mask, tau):\n    """Eq. (3)."""\n    num = mask ** (1.0 / tau)\n    return num / (num + (1 - mask) ** (1.0 / tau))\n')
    uri, _ = _open(client, "unbound.py")
    assert not [d for d in await _diagnostics(client, uri) if "Eq. (3)" in d.message]
    hover = await client.text_document_hover_async(lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=0, character=5)))
    assert "the paper's m has no name in the code" in hover.contents.value and "a code action on this line records" in hover.contents.value
    [action] = [_as_code_action(a) for a in await _actions_at(client, uri, 0, 5) if "stands for each symbol" in a.title]
    assert action.title == "Record which name of `tempered` stands for each symbol of Eq. (3)"
    written = yaml.safe_load(await _record(client, action))
    [binding] = written["bindings"]
    assert (binding["function"], binding["equation"], binding["symbols"]) == ("tempered", "3", {"m": "", "tau": "tau"})
    binding["symbols"]["m"] = "mask"  # what the team writes
    decisions = client.workspace_path / ".paperlens" / "decisions.yaml"
    decisions.write_text(yaml.safe_dump(written))
    client.diagnostics.pop(uri)
    client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(changes=[lsp.FileEvent(uri=decisions.as_uri(), type=lsp.FileChangeType.Changed)]))
    [agreement] = [d for d in await _diagnostics(client, uri) if d.code == "agreement"]
    assert agreement.message.startswith("tempered computes Eq. (3)") and agreement.range.start.line == 0


async def test_recording_a_deviation_turns_the_diagnostic_into_a_recorded_note(client: LanguageClient):
    uri, _ = _open(client, "train.py")
    diagnostic = next(d for d in await _diagnostics(client, uri) if "weight_decay" in d.message)
    action = (await _actions(client, uri, diagnostic))["Record weight_decay = 5e-4 as a deliberate deviation"]
    assert "setting: weight_decay" in await _record(client, action)
    decisions = client.workspace_path / ".paperlens" / "decisions.yaml"
    client.diagnostics.pop(uri)
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(changes=[lsp.FileEvent(uri=decisions.as_uri(), type=lsp.FileChangeType.Created)])
    )
    recorded = next(d for d in await _diagnostics(client, uri) if "weight_decay" in d.message)
    assert recorded.severity == lsp.DiagnosticSeverity.Hint and "(recorded: d1)" in recorded.message


async def test_a_malformed_setting_is_shown_and_the_default_used(client: LanguageClient):
    uri, _ = _open(client, "train.py")
    assert await _diagnostics(client, uri)
    assert any("paperlens.paper: Input should be a valid string (got 42); using the default" in m.message for m in client.messages)
    watchers = [
        w for r in client.registrations for reg in r.registrations if reg.method == lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES for w in reg.register_options["watchers"]
    ]
    watch_capability = client.capabilities.workspace.did_change_watched_files
    if watch_capability is not None and watch_capability.dynamic_registration:
        assert {"globPattern": "**/.paperlens/decisions.yaml"} in watchers
    else:
        assert watchers == []  # a client that cannot watch is not asked to


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



async def _on_disk_change_is_seen(client: LanguageClient, path, text: str) -> None:
    path.write_text(text)
    if client.capabilities.workspace.did_change_watched_files.dynamic_registration:
        # This client watches files itself (the server registered its globs); tell the server, as it would.
        client.workspace_did_change_watched_files(
            lsp.DidChangeWatchedFilesParams(changes=[lsp.FileEvent(uri=path.as_uri(), type=lsp.FileChangeType.Changed)])
        )


async def test_a_paper_edited_on_disk_is_seen_by_a_client_that_watches_or_by_the_server(client: LanguageClient):
    uri, _ = _open(client, "train.py")
    assert any("weight_decay" in d.message for d in await _diagnostics(client, uri))
    experiments = client.paper_path / "sections" / "experiments.tex"
    client.diagnostics.pop(uri)
    edited = experiments.read_text().replace("weight decay of \\wdecay{}", "weight decay of 5e-4").replace("Weight decay & \\wdecay", "Weight decay & 5e-4")
    await _on_disk_change_is_seen(client, experiments, edited)
    assert not [d for d in await _diagnostics(client, uri) if "weight_decay" in d.message]


async def test_settings_from_the_client_choose_checks_and_severities(client: LanguageClient):
    uri, _ = _open(client, "train.py")
    before = await _diagnostics(client, uri)
    assert any(d.code == "guess" for d in before) and any(d.code == "divergence" for d in before)
    # (The checklist stays off, as `_start` set it: its diagnostics would race the re-check's.)
    client.set_configuration(
        {"checks": ["divergence"], "severity": {"divergence": "warning"}, "debounceMs": "soon", "checklist": False}, section="paperlens"
    )
    client.diagnostics.pop(uri)
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    after = await _diagnostics(client, uri)
    assert after and {d.code for d in after} == {"divergence"}
    assert {d.severity for d in after if "recorded" not in d.message} == {lsp.DiagnosticSeverity.Warning}
    assert any("paperlens.debounceMs" in m.message and "using the default, 300" in m.message for m in client.messages)


async def _hover(client: LanguageClient, uri: str, line: int, character: int) -> str:
    hover = await client.text_document_hover_async(
        lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=line, character=character))
    )
    assert hover is not None
    return hover.contents.value


def _image_of(hover: str) -> bytes:
    """The equation image of a hover, in standard Markdown (no editor's own syntax in the URL)."""
    match = re.search(r'!\[[^\]]*\]\(data:image/png;base64,([A-Za-z0-9+/=]+) "(\d+) px wide"\)', hover)
    assert match is not None and "|width=" not in hover, hover[:300]
    return base64.b64decode(match[1])


def _where(text: str, needle: str) -> tuple[int, int]:
    line = next(i for i, l in enumerate(text.splitlines()) if needle in l)
    return line, text.splitlines()[line].index(needle)


async def test_hover_on_an_anchor_shows_the_equation_as_an_image_with_a_link_to_the_paper(client: LanguageClient):
    uri, text = _open(client, "tlm.py")
    await _diagnostics(client, uri)
    line, column = _where(text, "Eq. (3)")
    value = await _hover(client, uri, line, column + 2)
    assert "**Eq. (3)** · §2.1" in value
    assert _image_of(value).startswith(b"\x89PNG")
    assert "```latex\n" in value  # for a client that shows no images
    assert "sections/method.tex#L" in value
    definition_line, _ = _where(text, "def tempered_weight")
    on_the_name = await _hover(client, uri, definition_line, 4)
    assert "`tempered_weight` implements (its result matches: shown symbolically):" in on_the_name and "**Eq. (3)**" in on_the_name


async def test_an_anchored_function_not_compared_says_why_on_hover(client: LanguageClient):
    path = client.workspace_path / "weights.py"
    text = 'def tempered(m, tau):\n    """Eq. (3)."""\n    return project(m) ** (1 / tau)\n'
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(uri=path.as_uri(), language_id="python", version=1, text=text))
    )
    await _diagnostics(client, path.as_uri())
    value = await _hover(client, path.as_uri(), 0, 5)
    assert "`tempered` implements" in value and "**Eq. (3)**" in value
    assert "Not compared with Eq. (3) as expressions: the function cannot be read (the call project)" in value


async def test_hover_on_a_value_the_paper_states_quotes_it(client: LanguageClient):
    uri, text = _open(client, "train.py")
    await _diagnostics(client, uri)
    line, column = _where(text, "LEARNING_RATE = 3e-4")
    value = await _hover(client, uri, line, column + len("LEARNING_RATE = "))
    # As it reads, not as it is typed: no LaTeX commands in the value or the quote.
    assert "the paper states `learning_rate` = `3×10^-4`" in value and "> We train a ResNet-18" in value
    assert "a learning rate of 3×10^-4" in value and "\\" not in value.split("experiments.tex")[0]
    assert "experiments.tex#L" in value


async def test_references_from_an_equation_in_the_paper_to_the_code(client: LanguageClient):
    uri, _ = _open(client, "tlm.py")
    await _diagnostics(client, uri)
    method = client.paper_path / "sections" / "method.tex"
    line, _ = _where(method.read_text(), "eq:tempered-weight")
    found = await client.text_document_references_async(
        lsp.ReferenceParams(
            text_document=lsp.TextDocumentIdentifier(uri=method.as_uri()),
            position=lsp.Position(line=line, character=0),
            context=lsp.ReferenceContext(include_declaration=False),
        )
    )
    text = (client.workspace_path / "tlm.py").read_text().splitlines()
    lines = {location.range.start.line for location in found if location.uri == uri}
    assert any("Eq. (3)" in text[n] for n in lines) and any(text[n].startswith("def tempered_weight") for n in lines)


async def test_document_links_code_lenses_and_workspace_symbols(client: LanguageClient):
    uri, text = _open(client, "tlm.py")
    await _diagnostics(client, uri)
    links = await client.text_document_document_link_async(lsp.DocumentLinkParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    eq3 = next(link for link in links if text.splitlines()[link.range.start.line][link.range.start.character :].startswith("Eq. (3)"))
    assert "sections/method.tex#L" in eq3.target
    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    tempered = next(lens for lens in lenses if text.splitlines()[lens.range.start.line].startswith("def tempered_weight"))
    assert tempered.command.title.startswith("Implements Eq. (3)") and tempered.command.command == "paperlens.openPaper"
    assert tempered.command.title.endswith(" · matches it: shown symbolically")  # the analysis compared them
    opened = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=tempered.command.command, arguments=tempered.command.arguments)
    )
    assert opened is True and client.shown_documents[-1].uri.endswith("sections/method.tex")
    symbols = await client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="Eq. (3)"))
    assert any(s.name == "Eq. (3)" and s.location.uri.endswith("method.tex") for s in symbols)
    settings = await client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="weight_decay"))
    assert any(s.name.startswith("weight_decay = ") for s in settings)


async def _actions_at(client: LanguageClient, uri: str, line: int, character: int) -> list[lsp.CodeAction]:
    """The actions offered at a cursor, with no diagnostic there."""
    here = lsp.Position(line=line, character=character)
    return await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), range=lsp.Range(start=here, end=here), context=lsp.CodeActionContext(diagnostics=[])
        )
    )


async def _resolved(client: LanguageClient, action: lsp.CodeAction) -> lsp.CodeAction:
    return action if action.edit is not None or action.command is not None else await client.code_action_resolve_async(action)


async def test_ask_the_authors_adds_an_open_question_to_the_decisions_file(client: LanguageClient):
    experiments = client.paper_path / "sections" / "experiments.tex"
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=experiments.as_uri(), language_id="latex", version=1, text=experiments.read_text())
        )
    )
    conflict = next(d for d in await _diagnostics(client, experiments.as_uri()) if d.code == "conflicting-values")
    actions = await _actions(client, experiments.as_uri(), conflict)
    ask = next(a for title, a in actions.items() if title.startswith("Ask the authors"))
    if isinstance(ask, lsp.CodeAction):
        ask = await _resolved(client, ask)
    decisions = yaml.safe_load(await _record(client, ask))
    [question] = decisions["clarifications"]
    assert question["status"] == "open" and "Which one was used" in question["question"]


async def test_a_malformed_decisions_file_is_never_overwritten_by_an_action(client: LanguageClient):
    uri, _ = _open(client, "train.py")
    diagnostic = next(d for d in await _diagnostics(client, uri) if "weight_decay" in d.message)
    decisions = client.workspace_path / ".paperlens" / "decisions.yaml"
    decisions.parent.mkdir()
    decisions.write_text("deviations: [unclosed\n")
    record = (await _actions(client, uri, diagnostic))["Record weight_decay = 5e-4 as a deliberate deviation"]
    assert record.edit is None and "malformed" in record.disabled.reason


async def test_insert_an_anchor_links_a_function_to_a_likely_equation(client: LanguageClient):
    path = client.workspace_path / "weights.py"
    path.write_text("def label_weight(m, tau):\n    return m ** (1 / tau)\n")
    uri, text = _open(client, "weights.py")
    await _diagnostics(client, uri)
    actions = await _actions_at(client, uri, 0, 4)
    link = next(a for a in actions if a.title.startswith("Link `label_weight` to Eq. (3)"))
    linked = _apply(text, link.edit.changes[uri])
    assert linked.startswith("# Implements Eq. (3)")
    from paperlens.pipeline.code import index_source

    assert [(a.target, a.function) for a in index_source("weights.py", linked).anchors] == [("3", "label_weight")]


async def test_scaffold_a_module_from_a_section_of_the_paper(client: LanguageClient):
    uri, _ = _open(client, "train.py")
    await _diagnostics(client, uri)
    method = client.paper_path / "sections" / "method.tex"
    line, _ = _where(method.read_text(), "eq:tempered-weight")
    actions = await _actions_at(client, method.as_uri(), line, 0)
    scaffold = await _resolved(client, next(a for a in actions if a.kind == "refactor.scaffold"))
    if not client.capabilities.workspace.workspace_edit.document_changes:  # file creations travel only there
        assert scaffold.edit is None and "cannot create files" in scaffold.disabled.reason
        return
    created = {c.uri.rsplit("/", 1)[-1]: c for c in scaffold.edit.document_changes if isinstance(c, lsp.CreateFile)}
    assert len(created) == 2 and any(name.startswith("test_") for name in created)
    module = next(c for c in scaffold.edit.document_changes if isinstance(c, lsp.TextDocumentEdit) and "/tests/" not in c.text_document.uri)
    text = module.edits[0].new_text
    ast.parse(text)
    assert "Eq. (3)" in text


async def test_a_malformed_request_gets_an_error_and_the_server_goes_on(client: LanguageClient):
    uri, _ = _open(client, "train.py")
    await _diagnostics(client, uri)
    # Sent as raw bytes: the client's own types would refuse to send it.
    body = json.dumps({"jsonrpc": "2.0", "id": "malformed-1", "method": lsp.TEXT_DOCUMENT_HOVER, "params": {"textDocument": {"uri": 42}}})
    client.protocol.writer.write(f"Content-Length: {len(body)}\r\n\r\n{body}".encode())
    nothing = await client.text_document_hover_async(
        lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri="file:///nowhere.py"), position=lsp.Position(line=0, character=0))
    )
    assert nothing is None
    assert await _diagnostics(client, uri)



async def test_a_burst_of_edits_gives_one_analysis_of_the_last_version(client: LanguageClient):
    uri, text = _open(client, "train.py")
    await _diagnostics(client, uri)
    for version in range(2, 7):
        client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text.replace("5e-4", f"{version}e-4"))],
            )
        )
    async with asyncio.timeout(30):
        published = await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert published.uri == uri and published.version == 6
    assert any("weight_decay = 6e-4" in d.message for d in published.diagnostics)
    with pytest.raises(TimeoutError):  # nothing else follows: the older versions were never analysed
        async with asyncio.timeout(1.5):
            await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)


async def test_a_burst_of_changes_on_disk_is_read_once(client: LanguageClient):
    uri, _ = _open(client, "train.py")
    await _diagnostics(client, uri)
    readings = len(client.progress_reports)
    experiments = client.paper_path / "sections" / "experiments.tex"
    for _ in range(5):  # an editor's save, a formatter, a sync tool: several writes in a row
        experiments.write_text(experiments.read_text() + "%\n")
        client.workspace_did_change_watched_files(
            lsp.DidChangeWatchedFilesParams(changes=[lsp.FileEvent(uri=experiments.as_uri(), type=lsp.FileChangeType.Changed)])
        )
    client.diagnostics.pop(uri)
    await _diagnostics(client, uri)
    await asyncio.sleep(1)
    assert len(client.progress_reports) == readings + 1


def _many_files(workspace, count: int) -> None:
    package = workspace / "generated"
    package.mkdir()
    for n in range(count):
        (package / f"module_{n}.py").write_text(f"def step_{n}(x, lr=0.1):\n    return x * lr\n")


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "paperlens.server"]))
async def large_workspace_client(lsp_client: LanguageClient, tmp_path):
    await _start(lsp_client, "visual-studio-code", tmp_path, prepare=lambda workspace: _many_files(workspace, 3000))
    yield
    await lsp_client.shutdown_session()


async def test_indexing_can_be_cancelled_and_open_files_are_still_checked(large_workspace_client: LanguageClient):
    client = large_workspace_client
    async with asyncio.timeout(60):
        while not any(getattr(r, "message", "") and r.message.startswith("indexing the workspace:") for rs in client.progress_reports.values() for r in rs):
            await asyncio.sleep(0.01)
    [(token, reports)] = client.progress_reports.items()
    assert reports[0].cancellable is True
    client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(token=token))
    uri, _ = _open(client, "train.py")
    assert any("weight_decay = 5e-4" in d.message for d in await _diagnostics(client, uri))
    assert any("indexing cancelled" in m.message for m in client.messages)
    assert reports[-1].kind == "end" and reports[-1].message == "cancelled"
    last = [r.message for r in reports if r.kind == "report" and r.message.startswith("indexing the workspace:")][-1]
    done, total = last.removeprefix("indexing the workspace: ").removesuffix(" files").split("/")
    assert int(done) < int(total)  # stopped before the end


@pytest_lsp.fixture(
    params=["visual-studio-code", "neovim"], config=ClientServerConfig(server_command=[sys.executable, "-m", "paperlens.server"])
)
async def broken_paper_client(lsp_client: LanguageClient, request, tmp_path):
    def unreadable_pdf(workspace):
        (workspace / "paper.pdf").write_bytes(b"%PDF-1.7\n" + b"\0garbage" * 100)

    await _start(lsp_client, request.param, tmp_path, paper="paper.pdf", prepare=unreadable_pdf)
    yield
    await lsp_client.shutdown_session()


async def test_an_unreadable_paper_is_reported_and_fixing_it_on_disk_recovers(broken_paper_client: LanguageClient):
    client = broken_paper_client
    async with asyncio.timeout(30):
        while not any(m.type == lsp.MessageType.Error for m in client.messages):
            await asyncio.sleep(0.05)
    assert any("paper.pdf" in m.message for m in client.messages if m.type == lsp.MessageType.Error)
    uri, _ = _open(client, "train.py")
    hover = await client.text_document_hover_async(
        lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=0, character=0))
    )
    assert hover is None and uri not in client.diagnostics  # nothing to compare with, and no crash
    pyproject = client.workspace_path / "pyproject.toml"
    await _on_disk_change_is_seen(client, pyproject, '[tool.paperlens]\npaper = "../paper"\n')
    assert any("weight_decay = 5e-4" in d.message for d in await _diagnostics(client, uri))


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "paperlens.server"]))
async def pdf_client(lsp_client: LanguageClient, tmp_path):
    await _start(lsp_client, "visual-studio-code", tmp_path, paper="../paper/paper.pdf")
    yield
    await lsp_client.shutdown_session()


async def test_with_a_pdf_paper_the_hover_shows_the_crop_of_the_page_and_links_to_it(pdf_client: LanguageClient):
    client = pdf_client
    uri, text = _open(client, "tlm.py")
    await _diagnostics(client, uri)
    line, column = _where(text, "Eq. (3)")
    value = await _hover(client, uri, line, column + 2)
    image = _image_of(value)
    assert image.startswith(b"\x89PNG") and "paper.pdf#page=" in value and "&bbox=" in value
    definition = await client.text_document_definition_async(
        lsp.DefinitionParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=line, character=column + 2))
    )
    assert definition is None  # a PDF page has no text range: the link and the lens open it
    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    lens = next(lens for lens in lenses if lens.command.title.startswith("Implements Eq. (3)"))
    assert await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command=lens.command.command, arguments=lens.command.arguments))
    shown = client.shown_documents[-1]
    assert shown.uri.endswith("paper.pdf") and shown.external is True


async def _command(client: LanguageClient, command: str, *arguments):
    return await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command=command, arguments=list(arguments)))


async def test_checking_the_whole_workspace_shows_findings_in_files_not_open(client: LanguageClient):
    uri, _ = _open(client, "tlm.py")
    await _diagnostics(client, uri)
    counts = await _command(client, "paperlens.checkWorkspace")
    train = (client.workspace_path / "train.py").as_uri()
    assert counts["files"] >= 2 and counts["findings"] >= 3
    assert any("weight_decay = 5e-4" in d.message for d in client.diagnostics[train])


async def test_the_readiness_report_and_the_open_questions_as_markdown(client: LanguageClient):
    uri, _ = _open(client, "train.py")
    await _diagnostics(client, uri)
    report = await _command(client, "paperlens.readinessReport")
    assert report["markdown"].startswith("# Readiness report") and "Blocking gaps" in report["markdown"]
    questions = await _command(client, "paperlens.exportQuestions")
    assert questions["count"] >= 1 and questions["markdown"].startswith("# Questions for the authors")
    assert "1. " in questions["markdown"] and "where: sections/" in questions["markdown"]
    view = await _command(client, "paperlens.paperView", {"file": "sections/method.tex", "line": 20, "column": 0})
    assert view == {"kind": "source", "uri": (client.paper_path / "sections" / "method.tex").as_uri(), "line": 20, "column": 0, "endLine": 20, "endColumn": 0}


async def test_the_paper_view_is_the_source_place_or_the_pdf_page_with_the_box(pdf_client: LanguageClient):
    client = pdf_client
    uri, _ = _open(client, "tlm.py")
    await _diagnostics(client, uri)
    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    where = next(lens for lens in lenses if lens.command.title.startswith("Implements Eq. (3)")).command.arguments[0]
    view = await _command(client, "paperlens.paperView", where)
    assert view["kind"] == "page" and view["page"] == where["page"]
    png = base64.b64decode(view["image"].split(",", 1)[1])
    assert png.startswith(b"\x89PNG")
    x0, y0, x1, y1 = view["highlight"]
    assert 0 <= x0 < x1 <= view["width"] and 0 <= y0 < y1 <= view["height"]


async def test_switching_the_paper_clears_the_old_papers_gaps_and_refreshes_lenses(client: LanguageClient):
    experiments = client.paper_path / "sections" / "experiments.tex"
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=experiments.as_uri(), language_id="latex", version=1, text=experiments.read_text())
        )
    )
    assert await _diagnostics(client, experiments.as_uri())
    refreshes = client.lens_refreshes
    client.diagnostics.pop(experiments.as_uri())
    client.set_configuration({"paper": str(client.paper_path / "paper.pdf"), "checklist": False}, section="paperlens")
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    assert len(await _diagnostics(client, experiments.as_uri())) == 0  # not the paper any more
    lenses_refresh = client.capabilities.workspace.code_lens is not None and client.capabilities.workspace.code_lens.refresh_support
    expected = refreshes + (1 if lenses_refresh else 0)
    async with asyncio.timeout(5):  # the refresh request follows the diagnostics
        while client.lens_refreshes < expected:
            await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)
    assert client.lens_refreshes == expected


@pytest_lsp.fixture(
    params=["visual-studio-code", "neovim"], config=ClientServerConfig(server_command=[sys.executable, "-m", "paperlens.server"])
)
async def launcher_client(lsp_client: LanguageClient, request, tmp_path):
    def launcher_and_one_uncited_equation(workspace):
        (workspace / "run.sh").write_text("#!/bin/sh\npython train.py --epochs 100\n")
        tlm = workspace / "tlm.py"
        tlm.write_text(tlm.read_text().replace("of Eq. (3).", "of the paper."))

    await _start(lsp_client, request.param, tmp_path, prepare=launcher_and_one_uncited_equation)
    yield
    await lsp_client.shutdown_session()


async def test_a_launcher_and_an_uncited_equation_show_in_the_editor_as_in_the_cli(launcher_client: LanguageClient):
    client = launcher_client
    uri, _ = _open(client, "run.sh")
    [epochs] = [d for d in await _diagnostics(client, uri) if "epochs" in d.message]
    assert epochs.code == "divergence" and (epochs.range.start.line, epochs.range.start.character) == (1, 25)
    method = client.paper_path / "sections" / "method.tex"
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(uri=method.as_uri(), language_id="latex", version=1, text=method.read_text()))
    )
    [uncited] = [d for d in await _diagnostics(client, method.as_uri()) if d.code == "unimplemented"]
    assert "Eq. (3)" in uncited.message and uncited.severity == lsp.DiagnosticSeverity.Information
    assert method.read_text().splitlines()[uncited.range.start.line].strip() != ""


async def test_a_file_past_the_size_cap_in_bytes_is_not_checked_and_the_server_goes_on(client: LanguageClient):
    """The cap is in bytes, as on disk and in `check`: 1.05 million λ are 2.1 MB in UTF-8."""
    from paperlens.pipeline.code import MAX_FILE_BYTES

    text = "weight_decay = 5e-4\n# " + "λ" * (MAX_FILE_BYTES // 2 + 50_000) + "\n"
    assert len(text) < MAX_FILE_BYTES < len(text.encode())
    big = client.workspace_path / "big.py"
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(uri=big.as_uri(), language_id="python", version=1, text=text))
    )
    async with asyncio.timeout(30):
        while not any("big.py: larger than 2 MB; not checked" in m.message for m in client.log_messages):
            await asyncio.sleep(0.05)
    uri, _ = _open(client, "train.py")
    assert any("weight_decay" in d.message for d in await _diagnostics(client, uri))
    assert not client.diagnostics.get(big.as_uri())


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "paperlens.server"]))
async def checklist_client(lsp_client: LanguageClient, tmp_path):
    await _start(lsp_client, "visual-studio-code", tmp_path, options={"paperlens": {"checklist": True}})
    yield
    await lsp_client.shutdown_session()


async def test_the_checklists_failed_points_show_as_information_where_each_fix_belongs(checklist_client: LanguageClient):
    client = checklist_client
    train, readme = ((client.workspace_path / name).as_uri() for name in ("train.py", "README.md"))
    async with asyncio.timeout(30):
        while not {train, readme} <= client.diagnostics.keys():
            await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    # Neither file is open: the seeding belongs in the training code, the documented runs' seeds in the README.
    codes = {uri: {d.code for d in client.diagnostics[uri]} for uri in (train, readme)}
    assert "checklist.randomness" in codes[train] and "checklist.seeds" in codes[readme]
    assert all(d.severity == lsp.DiagnosticSeverity.Information for uri in (train, readme) for d in client.diagnostics[uri])
    seeds = next(d for d in client.diagnostics[readme] if d.code == "checklist.seeds")
    assert "several seeds" in seeds.message and "at least three seeds" in seeds.message
    # An open document's checks and the checklist stand side by side.
    _open(client, "train.py")
    async with asyncio.timeout(30):
        while not any(d.code == "divergence" for d in client.diagnostics[train]):
            await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert "checklist.randomness" in {d.code for d in client.diagnostics[train]}
    # Off by the setting: every checklist diagnostic goes, the checks' stay.
    client.set_configuration({"checklist": False}, section="paperlens")
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    async with asyncio.timeout(30):
        while client.diagnostics[readme] or any(str(d.code).startswith("checklist.") for d in client.diagnostics[train]):
            await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert any(d.code == "divergence" for d in client.diagnostics[train])

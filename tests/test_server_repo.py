"""Paper → runnable repository in the editor, over stdio with a real LSP client (pytest-lsp): the
scaffold command's one reviewed edit, and the code action that has the LLM write a planned module
(against a recorded OpenAI-compatible server). How the server finds a module's plan is also tested
in-process."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TypeVar

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from paperlens.pipeline.ingest import read_paper
from paperlens.pipeline.readiness import assess
from paperlens.pipeline.repo.plan import plan_repository
from paperlens.pipeline.repo.skeleton import skeleton_texts, write_skeleton
from paperlens.schemas import DecisionsFile
from paperlens.server import repo
from paperlens.server.app import PaperlensServer
from pygls.uris import to_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from .conftest import EXAMPLE_PAPER
from .test_server import WORKSPACE, _actions_at, _command, _diagnostics, _open

T = TypeVar("T")
SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "paperlens.server"])
SCAFFOLD = "paperlens.scaffoldRepository"
GENERATE = "paperlens: generate this module with the LLM"
GENERATE_MODULE = "paperlens.generateModule"
PAPER_FROM_REPOSITORY = "../../paper/main.tex"  # workspace/reproduction → paper/main.tex
MODULE = "reproduction/tempered_label_mixing/mixing_images_and_labels.py"


@pytest.fixture(autouse=True)
def _no_llm_from_the_environment(monkeypatch):
    """Whether an LLM is configured is up to each test's settings, not the machine's environment."""
    for name in ("PAPERLENS_LLM_BASE_URL", "PAPERLENS_LLM_MODEL", "PAPERLENS_LLM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


# -- a recorded OpenAI-compatible endpoint -----------------------------------------------------------


class RecordedLLM(ThreadingHTTPServer):
    """Answers every chat completion with the same recorded file text, and keeps the requests. A test
    can hold the answers back (`answering.clear()`) and learn when a request came (`asked`)."""

    def __init__(self, content: str) -> None:
        super().__init__(("127.0.0.1", 0), _Completions)
        self.content = content
        self.requests: list[dict] = []
        self.asked = threading.Event()
        self.answering = threading.Event()
        self.answering.set()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Completions(BaseHTTPRequestHandler):
    server: RecordedLLM

    def do_POST(self) -> None:
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(request)
        self.server.asked.set()
        self.server.answering.wait(30)
        completion = {
            "id": "chatcmpl-recorded",
            "object": "chat.completion",
            "created": 1700000000,
            "model": request["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": json.dumps({"content": self.server.content})},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 900, "completion_tokens": 700, "total_tokens": 1600},
        }
        body = json.dumps(completion).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # quiet test output
        pass


# -- sessions ------------------------------------------------------------------------------------------


def _scaffolded(workspace: Path) -> None:
    """The repository written under workspace/reproduction, as `paperlens scaffold` would."""
    spec = read_paper(workspace.parent / "paper")
    readiness = assess(spec)
    plan = plan_repository(spec, readiness, DecisionsFile(), paper_path=PAPER_FROM_REPOSITORY)
    write_skeleton(plan, spec, readiness, workspace / "reproduction")


async def _start(
    lsp_client: LanguageClient,
    tmp_path: Path,
    capabilities: lsp.ClientCapabilities,
    *,
    llm: RecordedLLM | None = None,
    prepare: Callable[[Path], None] | None = None,
) -> None:
    """The example workspace and paper under tmp_path; a client that records (and applies to disk)
    every workspace/applyEdit."""
    workspace = tmp_path / "workspace"
    shutil.copytree(WORKSPACE, workspace)
    shutil.copytree(EXAMPLE_PAPER, tmp_path / "paper")
    (workspace / "pyproject.toml").write_text('[tool.paperlens]\npaper = "../paper"\n')
    if prepare is not None:
        prepare(workspace)
    lsp_client.workspace_path = workspace
    lsp_client.applied_edits = []
    lsp_client.feature(lsp.CLIENT_REGISTER_CAPABILITY)(lambda params: None)
    lsp_client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)(lambda params: None)

    @lsp_client.feature(lsp.WORKSPACE_APPLY_EDIT)
    def _apply_edit(params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
        lsp_client.applied_edits.append(params)
        _apply_to_disk(params.edit)
        return lsp.ApplyWorkspaceEditResult(applied=True)

    options = {"paperlens": {"llm": {"baseUrl": llm.base_url, "model": "recorded"}}} if llm is not None else None
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=capabilities,
            workspace_folders=[lsp.WorkspaceFolder(uri=workspace.as_uri(), name="workspace")],
            initialization_options=options,
        )
    )


def _apply_to_disk(edit: lsp.WorkspaceEdit) -> None:
    """What an editor does with file creations and inserts into new files; a whole-document
    replacement (versioned or not) writes the new text."""
    for change in edit.document_changes or []:
        if isinstance(change, lsp.CreateFile):
            path = Path(to_fs_path(change.uri))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(exist_ok=False)
        elif isinstance(change, lsp.TextDocumentEdit):
            path = Path(to_fs_path(change.text_document.uri))
            [only] = change.edits
            if only.range.end == only.range.start:
                path.write_text(path.read_text() + only.new_text)
            else:
                path.write_text(only.new_text)
    for uri, edits in (edit.changes or {}).items():
        [only] = edits
        Path(to_fs_path(uri)).write_text(only.new_text)


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, tmp_path):
    await _start(lsp_client, tmp_path, client_capabilities("visual-studio-code"))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER)
async def repository_client(lsp_client: LanguageClient, tmp_path):
    """VS Code, with a scaffolded repository in the workspace and no LLM configured."""
    await _start(lsp_client, tmp_path, client_capabilities("visual-studio-code"), prepare=_scaffolded)
    yield
    await lsp_client.shutdown_session()


async def _ready(client: LanguageClient, name: str = "train.py") -> tuple[str, str]:
    """Opens a file and waits for its first diagnostics: the paper has been read by then."""
    uri, text = _open(client, name)
    await _diagnostics(client, uri)
    return uri, text


# -- scaffold the repository -------------------------------------------------------------------------


async def test_scaffolding_creates_every_planned_file_in_one_edit_that_asks_for_confirmation(client: LanguageClient):
    await _ready(client)
    out = client.workspace_path / "reproduction"
    assert await _command(client, SCAFFOLD) is True
    [applied] = client.applied_edits
    edit = applied.edit
    assert applied.label == "paperlens: scaffold repository from the paper"
    [(annotation_id, annotation)] = edit.change_annotations.items()
    assert annotation.needs_confirmation is True and annotation.label == "paperlens: scaffold repository from the paper"
    assert all(change.annotation_id == annotation_id for change in edit.document_changes if isinstance(change, lsp.CreateFile))
    assert all(
        e.annotation_id == annotation_id for change in edit.document_changes if isinstance(change, lsp.TextDocumentEdit) for e in change.edits
    )
    spec = read_paper(client.workspace_path.parent / "paper")
    readiness = assess(spec)
    plan = plan_repository(spec, readiness, DecisionsFile(), paper_path=PAPER_FROM_REPOSITORY)
    expected = skeleton_texts(plan, spec, readiness, out)
    created = [Path(to_fs_path(c.uri)) for c in edit.document_changes if isinstance(c, lsp.CreateFile)]
    assert sorted(created) == sorted(out / path for path in expected)
    assert {path: (out / path).read_text() for path in expected} == expected
    assert json.loads((out / ".paperlens" / "plan.json").read_text())["paper_path"] == PAPER_FROM_REPOSITORY


async def test_scaffolding_is_refused_where_a_planned_file_exists_or_outside_the_workspace(client: LanguageClient):
    await _ready(client)
    readme = client.workspace_path / "elsewhere" / "README.md"
    readme.parent.mkdir()
    readme.write_text("my own notes\n")
    assert await _command(client, SCAFFOLD, "elsewhere") is False
    assert await _command(client, SCAFFOLD, "../outside") is False
    assert client.applied_edits == [] and readme.read_text() == "my own notes\n"
    errors = [m.message for m in client.messages if m.type == lsp.MessageType.Error]
    assert any("elsewhere/ already holds README.md" in m for m in errors)
    assert any("cannot scaffold into '../outside'" in m for m in errors)
    assert not (client.workspace_path / "elsewhere" / "reproduce.py").exists()


@pytest_lsp.fixture(config=SERVER)
async def neovim_client(lsp_client: LanguageClient, tmp_path):
    """Neovim's preset sends no documentChanges (so no file creations) and knows no disabled actions."""
    await _start(lsp_client, tmp_path, client_capabilities("neovim"), prepare=_scaffolded)
    yield
    await lsp_client.shutdown_session()


async def test_a_client_that_cannot_create_files_is_told_and_never_shown_a_disabled_action(neovim_client: LanguageClient):
    client = neovim_client
    await _ready(client)
    assert await _command(client, SCAFFOLD, "another") is False
    assert client.applied_edits == []
    assert any("cannot create files" in m.message for m in client.messages if m.type == lsp.MessageType.Error)
    uri, _ = await _ready(client, MODULE)
    assert GENERATE not in {a.title for a in await _actions_at(client, uri, 0, 0)}


# -- generate a planned module -----------------------------------------------------------------------


async def test_the_generate_action_is_offered_on_planned_modules_with_stubs_disabled_without_an_llm(repository_client: LanguageClient):
    client = repository_client
    uri, text = await _ready(client, MODULE)
    [generate] = [a for a in await _actions_at(client, uri, 3, 0) if a.title == GENERATE]
    assert generate.kind == "refactor.rewrite.generate" and generate.edit is None
    assert generate.disabled.reason == "no LLM endpoint configured (paperlens.llm.baseUrl / $PAPERLENS_LLM_BASE_URL)"
    for elsewhere in ("train.py", "reproduction/reproduce.py"):  # not in the plan; planned, but not a module
        other, _ = await _ready(client, elsewhere)
        assert GENERATE not in {a.title for a in await _actions_at(client, other, 0, 0)}
    client.text_document_did_change(  # once no stub is left, there is nothing to generate
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text.replace("raise NotImplementedError", "return None  #"))],
        )
    )
    assert GENERATE not in {a.title for a in await _actions_at(client, uri, 0, 0)}


def _implemented(workspace: Path) -> str:
    """The module with Eq. (1) written: an answer the generate step accepts."""
    text = (workspace / MODULE).read_text()
    stub = next(line for line in text.splitlines() if line.strip().startswith('raise NotImplementedError("mix_input'))
    return text.replace(stub, "    return m * x_i + (1 - m) * x_j")


@pytest.fixture
def recorded_llm() -> Iterator[RecordedLLM]:
    """The endpoint; its answer is set once the workspace is prepared."""
    llm = RecordedLLM("")
    threading.Thread(target=llm.serve_forever, daemon=True).start()
    yield llm
    llm.shutdown()
    llm.server_close()


REFUSED = "def mix_input(m, x_i, x_j:\n    return m\n"  # does not parse


async def _start_with_llm(
    lsp_client: LanguageClient, tmp_path: Path, llm: RecordedLLM, answer, editor: str, *, resolves: bool = True
) -> None:
    """A scaffolded repository and a recorded LLM giving `answer(workspace)`, as `editor`'s preset
    sends capabilities (less resolving code actions, when not `resolves`)."""
    capabilities = client_capabilities(editor)
    if not resolves:
        capabilities.text_document.code_action.resolve_support = None

    def prepare(workspace: Path) -> None:
        _scaffolded(workspace)
        llm.content = answer(workspace)

    await _start(lsp_client, tmp_path, capabilities, llm=llm, prepare=prepare)
    lsp_client.llm = llm


@pytest_lsp.fixture(config=SERVER)
async def llm_client(lsp_client: LanguageClient, tmp_path, recorded_llm):
    await _start_with_llm(lsp_client, tmp_path, recorded_llm, _implemented, "visual-studio-code")
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER)
async def refusing_llm_client(lsp_client: LanguageClient, tmp_path, recorded_llm):
    await _start_with_llm(lsp_client, tmp_path, recorded_llm, lambda _: REFUSED, "visual-studio-code")
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER)
async def unresolving_llm_client(lsp_client: LanguageClient, tmp_path, recorded_llm):
    """VS Code's capabilities but for resolving code actions."""
    await _start_with_llm(lsp_client, tmp_path, recorded_llm, _implemented, "visual-studio-code", resolves=False)
    yield
    await lsp_client.shutdown_session()


async def _generate_action(client: LanguageClient) -> tuple[str, lsp.CodeAction]:
    uri, _ = await _ready(client, MODULE)
    [generate] = [a for a in await _actions_at(client, uri, 3, 0) if a.title == GENERATE]
    assert generate.disabled is None and generate.edit is None  # the LLM is asked only once it is picked
    return uri, generate


async def test_resolving_the_generate_action_replaces_the_module_with_the_accepted_answer(llm_client: LanguageClient):
    client = llm_client
    uri, generate = await _generate_action(client)
    assert client.llm.requests == []
    resolved = await client.code_action_resolve_async(generate)
    [change] = resolved.edit.document_changes
    assert change.text_document.uri == uri and change.text_document.version == 1
    [replace] = change.edits
    scaffold = (client.workspace_path / MODULE).read_text()
    assert replace.new_text == _implemented(client.workspace_path) != scaffold
    assert replace.range.start == lsp.Position(line=0, character=0) and replace.range.end.line >= scaffold.count("\n")
    [asked] = client.llm.requests
    assert asked["model"] == "recorded" and scaffold in asked["messages"][-1]["content"]
    assert (client.workspace_path / MODULE).read_text() == scaffold  # nothing written behind the editor's back


async def test_when_every_answer_is_refused_there_is_no_edit_and_a_message_says_why(refusing_llm_client: LanguageClient):
    client = refusing_llm_client
    _, generate = await _generate_action(client)
    resolved = await client.code_action_resolve_async(generate)
    assert resolved.edit is None
    assert len(client.llm.requests) == 2  # the refused answer was asked again, with what was wrong
    [message] = [m for m in client.messages if "no answer of the LLM" in m.message]
    assert message.type == lsp.MessageType.Warning
    assert "mixing_images_and_labels.py" in message.message and "answer 1: line 1" in message.message and "answer 2:" in message.message


def _raw_code_actions(client: LanguageClient) -> list[list[dict]]:
    """The code action answers as sent: lsprotocol reads a code action that carries a command as a
    Command (it tries that type first), so the test reads their JSON."""
    answers: list[list[dict]] = []
    structure = client.protocol.structure_message

    def recording(data: dict):  # JSON objects come innermost first: `result` is still plain JSON here
        if "jsonrpc" in data and isinstance(data.get("result"), list):
            answers.append(data["result"])
        return structure(data)

    client.protocol.structure_message = recording
    return answers


async def test_a_client_that_cannot_resolve_actions_gets_a_command_that_applies_the_edit(unresolving_llm_client: LanguageClient):
    client = unresolving_llm_client
    uri, _ = await _ready(client, MODULE)
    answers = _raw_code_actions(client)
    await _actions_at(client, uri, 3, 0)
    [generate] = [a for a in answers[-1] if a["title"] == GENERATE]
    assert generate["command"] == {"title": GENERATE, "command": "paperlens.generateModule", "arguments": [uri]}
    assert "edit" not in generate and "disabled" not in generate and client.llm.requests == []  # offering it asked nothing
    assert await _command(client, "paperlens.generateModule", uri) is True
    assert len(client.applied_edits) == 1 and len(client.llm.requests) == 1
    assert (client.workspace_path / MODULE).read_text() == client.llm.content


async def test_the_generate_action_follows_the_plan_on_disk(repository_client: LanguageClient):
    """The server keeps the plans it read: one that appears, changes or goes is still seen at once."""
    client = repository_client
    plan_file = client.workspace_path / "reproduction" / ".paperlens" / "plan.json"
    planned = plan_file.read_text()
    plan_file.unlink()
    uri, _ = await _ready(client, MODULE)
    assert GENERATE not in {a.title for a in await _actions_at(client, uri, 3, 0)}
    plan_file.write_text(planned)
    assert GENERATE in {a.title for a in await _actions_at(client, uri, 3, 0)}
    plan = json.loads(planned)
    plan["files"] = [f for f in plan["files"] if f["path"] != "tempered_label_mixing/mixing_images_and_labels.py"]
    plan_file.write_text(json.dumps(plan))
    assert GENERATE not in {a.title for a in await _actions_at(client, uri, 3, 0)}
    plan_file.write_text(planned)
    assert GENERATE in {a.title for a in await _actions_at(client, uri, 3, 0)}


async def test_a_plan_is_read_in_a_thread_and_again_only_once_its_file_changed(tmp_path: Path, monkeypatch):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    shutil.copytree(EXAMPLE_PAPER, tmp_path / "paper")
    _scaffolded(workspace)
    ls = PaperlensServer()
    ls.root = workspace.resolve()
    loop_thread, reading_threads = threading.get_ident(), []
    read_plan = repo._read_plan

    def reading(plan_file: Path):
        reading_threads.append(threading.get_ident())
        return read_plan(plan_file)

    monkeypatch.setattr(repo, "_read_plan", reading)
    uri = (workspace / MODULE).as_uri()
    repository, plan, planned = await repo._planned_module(ls, uri)
    assert repository == ls.root / "reproduction" and planned.path == "tempered_label_mixing/mixing_images_and_labels.py"
    assert len(reading_threads) == 1 and loop_thread not in reading_threads  # never parsed on the event loop
    other = next(f for f in plan.files if f.role in repo.GENERATED_ROLES and f.path != planned.path)
    for again in (uri, (repository / other.path).as_uri()):
        assert (await repo._planned_module(ls, again))[1] is plan
    assert await repo._planned_module(ls, (workspace / "train.py").as_uri()) is None  # no plan above it
    assert len(reading_threads) == 1

    plan_file = repository / ".paperlens" / "plan.json"
    changed = json.loads(plan_file.read_text())
    changed["files"] = [f for f in changed["files"] if f["path"] != planned.path]
    plan_file.write_text(json.dumps(changed))
    assert await repo._planned_module(ls, uri) is None and len(reading_threads) == 2
    plan_file.write_text("{")
    for _ in range(2):  # not a plan: said once, until the file changes again
        assert await repo._planned_module(ls, uri) is None
    assert len(reading_threads) == 3
    plan_file.unlink()
    assert await repo._planned_module(ls, uri) is None and len(reading_threads) == 3
    assert ls.repo_plans == {}


@pytest_lsp.fixture(config=SERVER)
async def neovim_llm_client(lsp_client: LanguageClient, tmp_path, recorded_llm):
    """Neovim resolves a code action's edit but takes no documentChanges: its edits cannot be versioned."""
    await _start_with_llm(lsp_client, tmp_path, recorded_llm, _implemented, "neovim")
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER)
async def unresolving_neovim_llm_client(lsp_client: LanguageClient, tmp_path, recorded_llm):
    """Neovim's capabilities but for resolving code actions: the generate command applies the edit."""
    await _start_with_llm(lsp_client, tmp_path, recorded_llm, _implemented, "neovim", resolves=False)
    yield
    await lsp_client.shutdown_session()


def _edit_whole(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def _typing_while_the_llm_writes(client: LanguageClient, uri: str, text: str, generating: Awaitable[T]) -> T:
    """What `generating` gives when the user changes the module (to `text`) before the LLM answers."""
    client.llm.answering.clear()
    pending = asyncio.ensure_future(generating)
    assert await asyncio.to_thread(client.llm.asked.wait, 30)
    _edit_whole(client, uri, 2, text)
    await _actions_at(client, uri, 0, 0)  # answered after the change: the server has it
    client.llm.answering.set()
    return await pending


CHANGED = "changed while the LLM was writing it: nothing was applied"


async def test_the_command_applies_no_unversioned_edit_over_what_the_user_typed_meanwhile(unresolving_neovim_llm_client: LanguageClient):
    client = unresolving_neovim_llm_client
    uri, text = await _ready(client, MODULE)
    typed = text + "# typed while the LLM was writing\n"
    assert await _typing_while_the_llm_writes(client, uri, typed, _command(client, GENERATE_MODULE, uri)) is False
    assert client.applied_edits == [] and len(client.llm.requests) == 1
    [message] = [m for m in client.messages if CHANGED in m.message]
    assert message.type == lsp.MessageType.Warning and "mixing_images_and_labels.py" in message.message
    _edit_whole(client, uri, 3, text)  # back to the text the LLM is shown: the edit goes through
    assert await _command(client, GENERATE_MODULE, uri) is True
    [applied] = client.applied_edits
    assert applied.edit.document_changes is None and list(applied.edit.changes) == [uri]
    assert (client.workspace_path / MODULE).read_text() == client.llm.content


async def test_a_resolved_edit_is_withheld_when_the_module_changed_while_the_llm_wrote(neovim_llm_client: LanguageClient):
    client = neovim_llm_client
    uri, generate = await _generate_action(client)
    text = (client.workspace_path / MODULE).read_text()
    resolving = client.code_action_resolve_async(generate)
    resolved = await _typing_while_the_llm_writes(client, uri, text + "x = 1\n", resolving)
    assert resolved.edit is None
    assert any(CHANGED in m.message for m in client.messages if m.type == lsp.MessageType.Warning)
    _edit_whole(client, uri, 3, text)
    resolved = await client.code_action_resolve_async(generate)
    assert resolved.edit.document_changes is None and resolved.edit.changes[uri][0].new_text == client.llm.content

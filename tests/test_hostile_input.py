"""Hostile files in a paper folder or a workspace: each is a clear problem or message, never a crash,
a hang or a runaway read (the kinds issue 15's fuzzing found: FIFOs, devices, folders and link loops
where a file was expected, NULs in names, settings of the wrong shape or nesting)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

from paperlens.pipeline.code import index_workspace
from paperlens.pipeline.decisions import load_decisions
from paperlens.pipeline.errors import DecisionsError, WorkspaceError
from paperlens.pipeline.extract.sentences import MAX_SENTENCE_CHARS, split_sentences
from paperlens.pipeline.files import UnreadableFile, read_regular_file
from paperlens.pipeline.ingest import read_paper
from paperlens.pipeline.workspace import load_settings

from .conftest import copy_example

MAIN = r"""\documentclass{article}
\begin{document}
\section{Method}
We train with a learning rate of 0.1.
\input{sub}
\input{folder.tex}
\input{loop}
\input{fifo}
\end{document}
"""


@contextlib.contextmanager
def within(seconds: int):
    """A hang fails the test instead of stalling the suite."""

    def expired(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_the_one_reader_refuses_what_is_not_a_regular_file(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "zero").symlink_to("/dev/zero")
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "folder").mkdir()
    (tmp_path / "big").write_bytes(b"x" * 101)
    (tmp_path / "out").symlink_to("/etc/hostname" if os.path.exists("/etc/hostname") else "/etc/passwd")
    expected = {
        "fifo": "not a regular file",
        "zero": "not a regular file",
        "loop": "loops",
        "folder": "a folder",
        "big": "larger than",
        "missing": "no such file",
        "out": "a link out of",
    }
    with within(10):
        for name, reason in expected.items():
            with pytest.raises(UnreadableFile, match=reason):
                read_regular_file(tmp_path / name, limit=100, inside=None if name == "zero" else tmp_path)
        with pytest.raises(UnreadableFile, match="NUL"):
            read_regular_file(tmp_path / "a\x00b", limit=100)
    (tmp_path / "small").write_bytes(b"ok")
    assert read_regular_file(tmp_path / "small", limit=100, inside=tmp_path) == b"ok"


def test_a_paper_folder_with_a_fifo_a_device_a_folder_and_a_loop_is_read_with_problems(tmp_path, monkeypatch):
    monkeypatch.setenv("PAPERLENS_CACHE_DIR", str(tmp_path / "cache"))
    paper = tmp_path / "paper"
    paper.mkdir()
    (paper / "main.tex").write_text(MAIN)
    (paper / "sub.tex").write_text("Text.\n\\input{a\x00b}\n")
    (paper / "folder.tex").mkdir()
    (paper / "loop.tex").symlink_to("loop.tex")
    os.mkfifo(paper / "fifo.tex")
    (paper / "zero.tex").symlink_to("/dev/zero")  # never \input: only choosing the main file would read it
    with within(30):
        spec = read_paper(paper)
    assert spec.main_file == "main.tex"
    problems = "\n".join(p.message for p in spec.problems)
    for expected in ("\\input{folder.tex}: a folder", "\\input{loop}: not a file that can be read", "\\input{fifo}: not a regular file", "\\input{a\\x00b}"):
        assert expected in problems, problems
    assert any("learning rate" in p.text for p in spec.paragraphs)


def test_a_workspace_with_fifos_devices_and_loops_is_indexed_with_problems(tmp_path):
    (tmp_path / "train.py").write_text("lr = 0.1\n")
    os.mkfifo(tmp_path / "fifo.py")
    os.mkfifo(tmp_path / "config.yaml")
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    (tmp_path / "loop.py").symlink_to("loop.py")
    with within(30):
        index = index_workspace(tmp_path)
    files = {f.file: f for f in index.files}
    assert [v.name for v in files["train.py"].values] == ["lr"]
    for name in ("fifo.py", "config.yaml"):
        assert "not a regular file" in files[name].problems[0].message, files[name].problems
    assert "a link out of" in files["zero.py"].problems[0].message
    assert "loop" in files["loop.py"].problems[0].message


@pytest.mark.parametrize(
    "pyproject, says",
    [
        ("tool = 5\n", "`tool` is int, not a table"),
        ("[tool]\npaperlens = 3\n", "[tool.paperlens] is int, not a table"),
        ("[tool.paperlens]\npaper = " + "[" * 5000 + "]" * 5000 + "\n", "pyproject.toml:2: nested more than 100 levels deep"),
    ],
    ids=["tool-is-a-number", "section-is-a-number", "nested-5000-deep"],
)
def test_settings_of_any_shape_give_one_message_naming_the_file(tmp_path, pyproject, says):
    (tmp_path / "pyproject.toml").write_text(pyproject)
    with within(30), pytest.raises(WorkspaceError, match="pyproject.toml") as raised:
        load_settings(tmp_path)
    assert says in str(raised.value)


def test_a_decisions_file_that_is_a_fifo_or_nested_too_deeply_is_an_error_not_a_hang(tmp_path):
    decisions = tmp_path / ".paperlens" / "decisions.yaml"
    decisions.parent.mkdir()
    os.mkfifo(decisions)
    with within(10), pytest.raises(DecisionsError, match="not a regular file"):
        load_decisions(tmp_path)
    decisions.unlink()
    decisions.write_text("deviations: " + "[" * 20000 + "]" * 20000 + "\n")
    with within(30), pytest.raises(DecisionsError, match="decisions.yaml"):
        load_decisions(tmp_path)


def test_a_sentence_longer_than_any_paper_writes_is_read_in_bounded_pieces():
    text = "We use " + ", ".join(["a learning rate of 0.1, a batch size of 32"] * 600) + "."
    pieces = split_sentences(text)
    assert len(pieces) > 1 and all(end - start <= MAX_SENTENCE_CHARS for start, end in pieces)
    assert "".join(text[start:end] for start, end in pieces).replace(" ", "") == text.replace(" ", "")


def test_a_workspace_that_is_a_symlink_loop_is_a_clear_message(tmp_path):
    loop = tmp_path / "ws"
    loop.symlink_to("ws")
    done = subprocess.run([sys.executable, "-m", "paperlens.pipeline.cli", "check", str(loop)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "a symbolic link that loops" in done.stderr and "internal error" not in done.stderr


def test_the_server_on_a_workspace_that_is_a_symlink_loop_answers_and_exits(tmp_path):
    loop = tmp_path / "ws"
    loop.symlink_to("ws")
    messages = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}, "rootUri": loop.as_uri()}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": (loop / "a.py").as_uri(), "languageId": "python", "version": 1, "text": "lr = 0.1\n"}}},
        {"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover", "params": {"textDocument": {"uri": (loop / "a.py").as_uri()}, "position": {"line": 0, "character": 0}}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    body = b"".join(b"Content-Length: %d\r\n\r\n" % len(data) + data for data in (json.dumps(m).encode() for m in messages))
    done = subprocess.run([sys.executable, "-m", "paperlens.server"], input=body, capture_output=True, timeout=60, cwd=tmp_path)
    log = done.stderr.decode()
    assert done.returncode == 0, log
    assert b'"id": 1' in done.stdout and b'"id": 2' in done.stdout
    assert "internal error" not in log and "a symbolic link that loops" in log


def _nested(kind: str, depth: int) -> tuple[str, str]:
    """A file of `kind` whose value nests `depth` levels, after three lines of settings."""
    if kind == "yaml-block":
        body = "".join(f"{'  ' * level}k{level}:\n" for level in range(depth - 1)) + f"{'  ' * (depth - 1)}k: 1\n"
        return "config.yaml", "a: 1\nb: 2\nc: 3\n" + body
    if kind == "yaml-flow":
        return "config.yaml", "a: 1\nb: 2\nc: 3\nd: " + "[" * (depth - 1) + "1" + "]" * (depth - 1) + "\n"
    if kind == "json":
        return "config.json", '{"a": 1,\n"b": 2,\n"c": 3,\n"d": ' + "[" * (depth - 1) + "1" + "]" * (depth - 1) + "}\n"
    if kind == "toml":
        return "config.toml", 'a = 1\nb = "]]]"\nc = 3\nd = ' + "[" * (depth - 1) + "1" + "]" * (depth - 1) + "\n"
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["yaml-block", "yaml-flow", "json", "toml"])
def test_a_config_nested_past_the_bound_is_one_problem_at_its_line_and_one_within_it_is_read(tmp_path, kind):
    """The bound is an explicit count of levels found before parsing, not Python's recursion limit:
    one level past it is reported at the line where it starts; the bound itself is read."""
    from paperlens.pipeline.code import index_source
    from paperlens.pipeline.nesting import MAX_DATA_NESTING

    name, within_bound = _nested(kind, MAX_DATA_NESTING)
    index = index_source(name, within_bound)
    assert not [p for p in index.problems if "nested" in p.message], index.problems
    assert {"a", "c"} <= {v.name for v in index.values}
    name, past_bound = _nested(kind, MAX_DATA_NESTING + 1)
    problems = [p for p in index_source(name, past_bound).problems if "nested more than" in p.message]
    assert len(problems) == 1 and problems[0].location.file == name
    assert problems[0].location.line == (3 if kind != "yaml-block" else 3 + MAX_DATA_NESTING)


def test_settings_decisions_and_notebooks_nested_past_the_bound_name_the_file_and_line(tmp_path):
    from paperlens.pipeline.code.notebooks import index_notebook
    from paperlens.pipeline.nesting import MAX_DATA_NESTING

    deep = "[" * (MAX_DATA_NESTING + 1) + "]" * (MAX_DATA_NESTING + 1)
    (tmp_path / "pyproject.toml").write_text("[tool.paperlens]\nseed = 1\npaper = " + deep + "\n")
    with pytest.raises(WorkspaceError, match=rf"pyproject.toml:3: nested more than {MAX_DATA_NESTING} levels"):
        load_settings(tmp_path)
    decisions = tmp_path / ".paperlens" / "decisions.yaml"
    decisions.parent.mkdir()
    decisions.write_text("deviations: []\nassumptions: " + deep + "\n")
    with pytest.raises(DecisionsError, match=rf"decisions.yaml:2: nested more than {MAX_DATA_NESTING} levels"):
        load_decisions(tmp_path)
    assert decisions.read_text().endswith(deep + "\n")  # left untouched
    notebook = index_notebook("nb.ipynb", '{"cells": ' + deep + "}")
    assert "nested more than" in notebook.problems[0].message


def test_python_nested_past_the_bound_loses_that_statement_only():
    """A statement deeper than the readers follow is `pass` for them, with a problem at its line; the
    rest of the file is read, in full and after an edit."""
    from paperlens.pipeline.code.incremental import index_document, index_edit
    from paperlens.pipeline.code.python import MAX_CODE_NESTING, index_python

    fine = "y = " + "1+" * (MAX_CODE_NESTING - 10) + "1\n"
    deep = "x = " + "1+" * (MAX_CODE_NESTING + 10) + "1\n"
    source = "import torch\nlr = 0.1\n" + fine + deep + "def f(a):\n    return " + "a*" * (MAX_CODE_NESTING + 10) + "a\nweight_decay = 5e-4\n"
    for index in (index_python("m.py", source), index_edit(index_document("m.py", source), source, source.replace("0.1", "0.2"))):
        messages = [p.message for p in index.problems]
        assert messages == [f"m.py:{line}: a statement nested more than {MAX_CODE_NESTING} levels deep; not read" for line in (4, 5)]
        assert [v.name for v in index.values] == ["lr", "weight_decay"]


def _as_a_user() -> list[str]:
    """A command prefix under which chmod 000 stops a read: none for a user; for root, root without
    its read and search overrides (util-linux's setpriv, in every Debian)."""
    if os.geteuid() != 0:
        return []
    assert shutil.which("setpriv"), "as root, the unreadable-file tests need util-linux's setpriv"
    return ["setpriv", "--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search"]


def _paperlens(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*_as_a_user(), sys.executable, "-m", "paperlens.pipeline.cli", *args], capture_output=True, text=True, timeout=120)


def test_unreadable_files_are_named_and_the_rest_is_read(tmp_path):
    """Permission denied on a section, a .py, the main file or the settings: a message naming the
    file, the rest read; the main file is never silently replaced by another paper of the folder."""
    workspace = copy_example(tmp_path)
    paper = tmp_path / "paper"
    (paper / "sections" / "method.tex").chmod(0)
    (workspace / "tlm.py").chmod(0)
    try:
        done = _paperlens("check", str(workspace))
        assert done.returncode == 1, done.stderr
        assert "note: paper main.tex:54:1: \\input{sections/method}: permission denied; skipped" in done.stdout
        assert "note: tlm.py: permission denied; not read" in done.stdout
        assert "weight_decay = 5e-4 here, but the paper says weight decay = 0.05" in done.stdout  # the rest is checked
        (paper / "main.tex").chmod(0)
        done = _paperlens("gaps", "--no-cache", str(paper))
        assert done.returncode == 2 and "main.tex: permission denied; fix it, or name the paper's main file" in done.stderr
        assert done.stdout == ""  # not README.md or paper.pdf read in its place
        (workspace / "pyproject.toml").chmod(0)
        done = _paperlens("check", str(workspace))
        assert done.returncode == 2 and "pyproject.toml: permission denied" in done.stderr and "internal error" not in done.stderr
    finally:
        for path in (paper / "sections" / "method.tex", workspace / "tlm.py", paper / "main.tex", workspace / "pyproject.toml"):
            path.chmod(0o644)


def test_numbers_out_of_range_are_values_that_do_not_parse(tmp_path):
    """1e309 is no float; a sentence or a table stating it is read, the value left unparsed."""
    paper = tmp_path / "paper"
    paper.mkdir()
    (paper / "main.tex").write_text(
        "\\documentclass{article}\\begin{document}\\section{Experiments}\n"
        "We train with a learning rate of 1e309 and a weight decay of $10^{400}$ for 1e999 steps.\n\n"
        "\\begin{table}\\begin{tabular}{ll}Learning rate & 1e309 \\\\ Batch size & 256 \\\\\\end{tabular}\\end{table}\n"
        "\\end{document}\n"
    )
    spec = read_paper(paper, use_cache=False)
    values = {h.normalized_name: h.value for h in spec.hyperparameters}
    assert values.get("batch_size") == 256
    assert all(not isinstance(v, float) or v == v and abs(v) != float("inf") for v in values.values()), values
    done = _paperlens("gaps", "--no-cache", str(paper))
    assert done.returncode in (0, 1) and "internal error" not in done.stderr, done.stderr


def test_a_yaml_list_ending_the_file_without_a_newline_is_read():
    """Five real repositories end a config with a nested list and no final newline."""
    from paperlens.pipeline.code import index_source

    index = index_source("config.yaml", "optimizer:\n  lr: 0.001\n  betas:\n    - 0.9\n    - 0.95")
    assert not index.problems
    values = {v.name: v.value for v in index.values}
    assert values["optimizer.lr"] == 0.001 and values["optimizer.betas[1]"] == 0.95


def test_editor_settings_of_any_shape_give_one_short_message_per_setting():
    from paperlens.pipeline.workspace import editor_settings

    deep: dict = {}
    inner = deep
    for _ in range(5000):
        inner["a"] = {}
        inner = inner["a"]
    settings, problems = editor_settings({"paperlens": {"paper": deep, "checks": list(range(100_000)), "debounceMs": 200}})
    assert settings.debounce_ms == 200 and settings.paper is None
    assert [p.split(":")[0] for p in problems] == ["paperlens.paper", "paperlens.checks"]
    assert all(len(p) < 400 for p in problems), problems


def test_a_python_file_of_more_tokens_than_the_parser_can_hold_in_bounded_memory_is_not_parsed():
    """1.8 MB of `x = 1` lines took CPython's parser 0.74 GB; past MAX_PYTHON_TOKENS a file is a
    problem, never parsed, and a file just within it is read."""
    from paperlens.pipeline.code.python import MAX_PYTHON_TOKENS, index_python

    long_but_few = '"""' + "a long docstring is one token. " * (MAX_PYTHON_TOKENS // 10) + '"""\nlr = 0.1\n'
    assert len(long_but_few) > MAX_PYTHON_TOKENS  # counted, and within
    within = index_python("data.py", long_but_few)
    assert not within.problems and within.values[0].name == "lr"
    past = index_python("data.py", "lr = 0.1\n" + "x = 1\n" * (MAX_PYTHON_TOKENS // 3 + 10))  # `x = 1`: three tokens
    assert [p.message for p in past.problems] == [f"data.py: cannot be parsed: more than {MAX_PYTHON_TOKENS:,} tokens (generated code or data?); not read"]
    assert not past.values


def test_toml_nested_by_dotted_keys_or_table_headers_is_bounded_too():
    from paperlens.pipeline.code import index_source
    from paperlens.pipeline.nesting import toml_too_deep

    deep = ".".join(["a"] * 3000)
    for text in ("x = 1\n" + deep + " = 1\n", "x = 1\n[" + deep + "]\ny = 1\n"):
        problems = index_source("c.toml", text).problems
        assert [p.location.line for p in problems] == [1] and "nested more than" in problems[0].message
    assert toml_too_deep('[tool.paperlens]\npaper = "../paper"\n[tool.paperlens.sandbox]\nimage = "python:3.11"\n') is None


def test_a_long_run_of_blanks_in_toml_costs_one_scan():
    """Found by bench/fuzz.py: a 64 KB line of spaces in pyproject.toml hung `check` (each split of
    the run between two patterns of blanks was tried)."""
    from paperlens.pipeline.nesting import toml_too_deep

    with within(5):
        for text in ("[tool.paperlens]\n" + " " * 300_000 + '\npaper = "x"\n', "a" + " " * 300_000 + "\n", "key" + " b" * 150_000 + "\n"):
            assert toml_too_deep(text) is None
    assert toml_too_deep("x = 1\n" + "  " + ".".join(["a"] * 3000) + "   = 1\n") is not None  # still counted after blanks


def test_an_unclosed_string_costs_one_scan_not_one_per_quote():
    from paperlens.pipeline.code.python import MAX_PYTHON_TOKENS, index_python
    from paperlens.pipeline.nesting import json_too_deep, toml_too_deep

    hostile = '"' + '\\"' * 300_000  # 600 KB: a quadratic scan would take hours
    with within(20):
        assert json_too_deep(hostile) is None and toml_too_deep(hostile) is None
        assert "tokens" in index_python("q.py", hostile + "\n" + "x = 1\n" * (MAX_PYTHON_TOKENS // 3 + 10)).problems[0].message


def test_captions_nested_in_one_another_are_read_in_linear_time(tmp_path):
    body = "\\begin{figure}\\caption{A " * 25 + "deepest" + "}\\end{figure}" * 25
    (tmp_path / "main.tex").write_text("\\begin{document}\\section{Method}\n" + body + "\n\\end{document}\n")
    with within(20):
        spec = read_paper(tmp_path, use_cache=False)
    assert any("deepest" in p.text for p in spec.paragraphs)

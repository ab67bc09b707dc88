"""The editor and `paperlens check` say the same of the same files, on real repositories: an open
file is settled against the rest of the workspace (callers that override its defaults, launchers,
what nothing imports) exactly as the CLI settles it."""

from __future__ import annotations

import pytest

from paperlens.pipeline.check import check
from paperlens.server.app import PaperlensServer

from .conftest import LATEX_PAPERS, SHARED_DATA

# Repositories where a file read on its own loses what other files say of it.
REPOSITORIES = ["Diff-Transformer", "fractalgen", "GMFlow", "TabDiff"]


@pytest.mark.parametrize("repository", REPOSITORIES)
def test_every_file_analysed_as_an_editor_holds_it_gets_the_clis_findings(repository):
    server = PaperlensServer()
    server.root = (SHARED_DATA / "repos" / repository).resolve()
    server.settings = server.settings.model_copy(update={"paper": str((LATEX_PAPERS / repository).resolve())})
    server.load_paper()
    server.load_workspace()
    cli: dict[str, set[str]] = {}
    for finding in check(server.root, server.spec, server.index, server.decisions, server.facts).findings:
        if finding.code is not None:
            cli.setdefault(finding.code.file, set()).add(finding.id)
    assert cli, "the CLI finds something in these repositories, or the comparison proves nothing"
    differing = {}
    for file in server.index.files:
        source = (server.root / file.file).read_text(encoding="utf-8", errors="replace")
        editor = {finding.id for finding in server.analyse(file.file, source)[0]}
        if editor != cli.get(file.file, set()):
            differing[file.file] = (sorted(cli.get(file.file, set()) - editor), sorted(editor - cli.get(file.file, set())))
    assert differing == {}


def test_an_open_script_a_launcher_runs_keeps_only_its_own_commands_flags(tmp_path):
    (tmp_path / "paper").mkdir()
    (tmp_path / "paper" / "main.tex").write_text(
        "\\documentclass{article}\\begin{document}\\section{Method}\nWe train with AdamW and a learning rate of 3e-4 for 100 epochs.\n\\end{document}\n"
    )
    workspace = tmp_path / "code"
    workspace.mkdir()
    (workspace / "run.sh").write_text("python train.py --epochs 100\npython eval.py --lr 0.5\n")
    parser = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr', type=float, default=0.1)\np.add_argument('--epochs', type=int, default=1)\n"
    (workspace / "train.py").write_text(parser)
    (workspace / "eval.py").write_text(parser)
    server = PaperlensServer()
    server.root = workspace.resolve()
    server.settings = server.settings.model_copy(update={"paper": str(tmp_path / "paper" / "main.tex")})
    server.load_paper()
    server.load_workspace()
    cli = {f.id for f in check(server.root, server.spec, server.index, server.decisions, server.facts).findings if f.code and f.code.file == "train.py"}
    assert any(":learning_rate:train.py:" in finding for finding in cli)  # eval's --lr is eval's
    assert {f.id for f in server.analyse("train.py", parser)[0]} == cli

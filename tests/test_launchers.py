"""Runs as launchers make them: a README's or a shell script's commands, and notebooks' code cells."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

from paperlens.pipeline.check import check
from paperlens.pipeline.code import index_workspace
from paperlens.pipeline.code.launchers import index_launcher
from paperlens.pipeline.code.notebooks import index_notebook
from paperlens.pipeline.ingest import read_paper
from paperlens.schemas import DecisionsFile

PAPER = r"""\documentclass{article}\begin{document}
\section{Method}
We train ViT-B with AdamW and a learning rate of 4e-3, a drop path rate of 0.1 and a batch size of 4096 for 300 epochs.
\end{document}
"""
MAIN = """\
import argparse
import torch.distributed
parser = argparse.ArgumentParser()
parser.add_argument("--drop_path", type=float, default=0.0)
parser.add_argument("--lr", type=float, default=1e-3)
parser.add_argument("--epochs", type=int, default=300)
"""
README = """\
# Training

```
torchrun --nnodes=8 --nproc_per_node=8 main.py \\
    --model vit_base_patch16_224 \\
    --drop_path 0.1 \\
    --batch_size 64 \\
    --lr 4e-3
```

Sampling:

```bash
python sample.py --num-steps 250 --epochs 5
```
"""


def _check(tmp_path: Path, files: dict[str, str]):
    (tmp_path / "paper").mkdir(parents=True)
    (tmp_path / "paper" / "main.tex").write_text(PAPER)
    workspace = tmp_path / "code"
    for name, text in files.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
    spec = read_paper(tmp_path / "paper" / "main.tex", use_cache=False)
    return check(workspace, spec, index_workspace(workspace), DecisionsFile()).findings


def test_a_readme_command_is_a_run_whose_flags_replace_the_scripts_defaults(tmp_path):
    findings = _check(tmp_path, {"main.py": MAIN})
    assert {(f.setting, f.code_value) for f in findings} == {("drop_path_rate", "0.0"), ("learning_rate", "1e-3")}
    # With the README's command, the defaults are not the run's values; the command's are, and agree.
    assert _check(tmp_path / "documented", {"main.py": MAIN, "README.md": README}) == []


def test_a_commands_flag_that_differs_is_reported_at_the_command(tmp_path):
    readme = README.replace("--lr 4e-3", "--lr 8e-3")
    [finding] = _check(tmp_path, {"main.py": MAIN, "README.md": readme})
    assert (finding.setting, finding.code_value, finding.code.file, finding.code.line + 1) == ("learning_rate", "8e-3", "README.md", 8)
    assert finding.code.column == readme.splitlines()[7].index("8e-3")
    assert finding.compares.startswith("the paper's vitb experiment with the run of `torchrun --nnodes=8 --nproc_per_node=8 main.py")


def test_commands_are_read_from_shell_scripts_and_markdown_fences_only():
    index = index_launcher("run.sh", "#!/bin/bash\n# python train.py --lr 1\npython train.py --lr=3e-4 trainer.max_epochs=24\n", "shell")
    assert [(v.name, v.raw, v.normalized_name, v.location.line) for v in index.values] == [
        ("--lr", "3e-4", "learning_rate", 2),
        ("trainer.max_epochs", "24", "epochs", 2),
    ]
    assert [(launch.script, launch.flags) for launch in index.launches] == [("train", ["lr", "trainer.max_epochs"])]
    prose = index_launcher("README.md", "Run python train.py --lr 1e-4 to train.\n", "markdown")
    assert prose.values == []


def test_a_notebooks_code_cells_are_read_and_located_in_the_notebook():
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# lr = 5\n"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["%matplotlib inline\n", "import torch\n", "opt = torch.optim.Adam(params, lr=1e-5)\n"]},
    ]
    text = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)
    index = index_notebook("run.ipynb", text)
    [site] = [v for v in index.values if v.normalized_name == "learning_rate"]
    line = text.splitlines()[site.location.line]
    assert "lr=1e-5" in line and line[site.location.column :].startswith("1e-5")
    assert index.language == "notebook" and not index.problems


def test_a_file_that_is_no_notebook_is_a_problem():
    index = index_notebook("broken.ipynb", textwrap.dedent("{ not json"))
    assert index.values == [] and "not a Jupyter notebook" in index.problems[0].message


def test_a_commands_batch_is_per_process_times_the_processes_it_starts(tmp_path):
    # 64 per process × 8 nodes × 8 processes = 4096 (the documented run) agrees; on 4 nodes it is 2048.
    four_nodes = README.replace("--nnodes=8", "--nnodes=4")
    [finding] = _check(tmp_path, {"main.py": MAIN, "README.md": four_nodes})
    assert (finding.setting, finding.code_value, finding.code.file) == ("batch_size", "64", "README.md")
    assert "64 per process × 32 processes = 2048 per step" in finding.confidence_note


def test_makefile_recipes_and_scripts_without_an_extension_that_name_their_interpreter_are_launchers(tmp_path):
    (tmp_path / "main.py").write_text(MAIN)
    (tmp_path / "Makefile").write_text("train:\n\t@python main.py --lr 4e-3 \\\n\t\t--epochs 300\n")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "pretrain").write_text("#!/usr/bin/env bash\nset -e\ntorchrun --nproc_per_node=8 main.py --drop_path 0.2\n")
    (tmp_path / "scripts" / "tune").write_text("#!/usr/bin/python3\nLEARNING_RATE = 2e-3\n")
    (tmp_path / "LICENSE").write_text("MIT License\n\npython main.py --lr 9\n")
    index = index_workspace(tmp_path)
    languages = {file.file: file.language for file in index.files}
    assert languages == {"main.py": "python", "Makefile": "shell", "scripts/pretrain": "shell", "scripts/tune": "python"}
    flags = {(f.file, s.name, s.raw, s.location.line) for f in index.files if f.language == "shell" for s in f.values}
    assert flags == {
        ("Makefile", "--lr", "4e-3", 1), ("Makefile", "--epochs", "300", 2),
        ("scripts/pretrain", "--nproc_per_node", "8", 2), ("scripts/pretrain", "--drop_path", "0.2", 2),
    }  # fmt: skip
    assert [(s.name, s.raw) for f in index.files if f.file == "scripts/tune" for s in f.values] == [("LEARNING_RATE", "2e-3")]


def test_a_commands_flags_replace_the_defaults_of_the_script_it_runs_only(tmp_path):
    (tmp_path / "train.py").write_text(MAIN)
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "eval.py").write_text(MAIN)
    (tmp_path / "args.py").write_text("import argparse\np = argparse.ArgumentParser()\np.add_argument('--epochs', type=int, default=10)\n")
    (tmp_path / "tools" / "run_eval.sh").write_text("python eval.py --drop_path 0.5 --epochs 300\n")  # beside the launcher
    (tmp_path / "README.md").write_text("```\npython train.py --lr 4e-3\n```\n")
    index = index_workspace(tmp_path)
    overridden = {(f.file, s.name): s.overridden for f in index.files for s in f.values if s.kind == "argparse-default"}
    assert overridden[("train.py", "--lr")] and not overridden[("train.py", "--drop_path")]  # eval's flag is eval's
    assert overridden[("tools/eval.py", "--drop_path")] and not overridden[("tools/eval.py", "--lr")]
    assert overridden[("args.py", "--epochs")]  # a parser no command runs may be the one a run imports


def test_the_config_files_a_command_names_are_loaded_by_its_run():
    readme = "```\npython main.py --config-name=[delete_celeb, delete_sd]\npython3 main.py fit -c configs/coco/eomt.yaml --lr 1e-4\n```\n"
    index = index_launcher("README.md", readme, "markdown")
    assert [(r.path, r.location.line, readme.splitlines()[r.location.line][r.location.column : r.location.end_column]) for r in index.config_references] == [
        ("delete_celeb.yaml", 1, "delete_celeb"),
        ("delete_sd.yaml", 1, "delete_sd"),
        ("configs/coco/eomt.yaml", 2, "configs/coco/eomt.yaml"),
    ]


def test_a_fifo_or_an_undecodable_script_without_an_extension_never_stops_the_index(tmp_path):
    os.mkfifo(tmp_path / "train")  # opening it to read its `#!` line would wait forever
    (tmp_path / "run").write_bytes(b"#!/bin/bash\n\xff\xfe python main.py --lr 1\n")
    (tmp_path / "main.py").write_text(MAIN)
    index = index_workspace(tmp_path)
    assert sorted(file.file for file in index.files) == ["main.py", "run"]
    [problem] = [p.message for f in index.files if f.file == "run" for p in f.problems]
    assert "not UTF-8" in problem


def test_a_launchers_own_variables_are_expanded_into_its_commands():
    source = 'MODEL_ARGS="\\\n--model_variant=llama2_7b \\\n--learning_rate=3e-4\n"\nexport STEPS=100\nsrun torchrun main.py ${MODEL_ARGS} --steps $STEPS $UNKNOWN\n'
    index = index_launcher("run.sh", source, "shell")
    [launch] = index.launches
    assert launch.options == {"model_variant": "llama2_7b", "learning_rate": "3e-4", "steps": "100"}
    # Each value is located where it is written: the rate in ARGS's lines, the steps at STEPS=100.
    assert {(site.name, site.raw, site.location.line, site.location.column) for site in index.values} == {
        ("--learning_rate", "3e-4", 2, 16),
        ("--steps", "100", 4, 13),
    }


def test_an_apostrophe_in_a_command_or_a_comment_ends_no_command():
    readme = "```bash\necho it's time\npython train.py --lr 1e-3  # don't change it\npython eval.py --batch_size 64\n```\n"
    index = index_launcher("README.md", readme, "markdown")
    assert [(launch.script, launch.options) for launch in index.launches] == [("train", {"lr": "1e-3"}), ("eval", {"batch_size": "64"})]

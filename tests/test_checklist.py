"""The reproducibility checklist on small repositories written for each point: met, not met, and met
another way the check knows (a trainer that checkpoints by default, a seed helper, a lock file)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from paperlens.pipeline.checklist import checklist
from paperlens.pipeline.cli import main


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


def _points(tmp_path: Path, files: dict[str, str]) -> dict:
    report = checklist(_repo(tmp_path, files))
    return {point.id: point for point in report.points}


TORCH_TRAINING = """
    import random
    import numpy as np
    import torch
    from torch.utils.data import DataLoader

    train_set = ImageFolder("data/train")
    loader = DataLoader(train_set, batch_size=64, num_workers=4)
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
"""


@pytest.mark.parametrize(
    ("framework", "code", "missing"),
    [
        ("PyTorch", TORCH_TRAINING, ["seed Python's random", "seed PyTorch", "deterministic", "workers"]),  # NumPy draws nothing
        ("PyTorch", TORCH_TRAINING + "\nrandom.seed(0)\nnp.random.seed(0)\ntorch.manual_seed(0)\ntorch.use_deterministic_algorithms(True)\n"
         "loader = DataLoader(train_set, num_workers=4, worker_init_fn=seed_worker, generator=g)\n", []),
        ("PyTorch", TORCH_TRAINING + "\nfrom lightning import seed_everything\nseed_everything(0, workers=True)\ntorch.backends.cudnn.deterministic = True\n", []),
        ("JAX", "import jax\nkey = jax.random.PRNGKey(0)\n", []),
        ("JAX", "import jax\nimport numpy as np\nx = np.random.rand(3)\n", ["seed NumPy", "seed JAX"]),
        ("TensorFlow", "import tensorflow as tf\nmodel.fit(x, y)\n", ["seed TensorFlow", "deterministic"]),
        ("TensorFlow", "import tensorflow as tf\ntf.keras.utils.set_random_seed(1)\ntf.config.experimental.enable_op_determinism()\n", []),
    ],
)
def test_randomness_is_fixed_as_the_framework_requires(tmp_path, framework, code, missing):
    report = checklist(_repo(tmp_path, {"train.py": code}))
    [point] = [p for p in report.points if p.id == "randomness"]
    assert report.framework == framework
    assert point.status == ("failed" if missing else "passed")
    assert len(point.missing) == len(missing) and all(want in got for want, got in zip(missing, point.missing))
    if not missing:
        assert point.evidence and all(e.file == "train.py" and e.line is not None for e in point.evidence)


def test_a_notebook_beside_the_scripts_is_a_demo_and_seeds_no_run(tmp_path):
    notebook = json.dumps({"cells": [{"cell_type": "code", "source": ["import torch\n", "torch.manual_seed(0)\n"]}], "nbformat": 4}, indent=1)
    points = _points(tmp_path, {"train.py": "import torch\nloss.backward()\n", "demo.ipynb": notebook})
    assert points["randomness"].status == "failed" and "seed PyTorch" in points["randomness"].missing[0]
    alone = _points(tmp_path / "alone", {"demo.ipynb": notebook})
    assert alone["randomness"].evidence[0].file == "demo.ipynb"


def test_dependencies_are_locked_and_base_images_pinned_by_digest(tmp_path):
    unpinned = _points(tmp_path / "a", {"requirements.txt": "torch>=2.0\nnumpy\n", "Dockerfile": "FROM python:latest\nRUN pip install -r requirements.txt\n"})
    assert unpinned["dependencies"].status == "failed"
    assert any("lock file" in m for m in unpinned["dependencies"].missing)
    assert any("Dockerfile:1" in m and "never `latest`" in m for m in unpinned["dependencies"].missing)
    pinned = _points(tmp_path / "b", {
        "requirements.txt": "# pinned\ntorch==2.3.1\nnumpy==1.26.4\n",
        "Dockerfile": "FROM python:3.11-slim@sha256:" + "a" * 64 + "\n",
    })  # fmt: skip
    assert pinned["dependencies"].status == "passed"
    assert [e.file for e in pinned["dependencies"].evidence] == ["requirements.txt", "Dockerfile"]
    assert _points(tmp_path / "c", {"poetry.lock": "[[package]]\n"})["dependencies"].status == "passed"


def test_data_splits_are_named_unless_nothing_is_trained_and_reference_statistics_stand_for_a_held_out_split(tmp_path):
    assert _points(tmp_path / "a", {"train.py": TORCH_TRAINING})["data"].status == "failed"  # no held-out split
    split = TORCH_TRAINING + "\nval_set = ImageFolder(root, split='val')\n"
    assert _points(tmp_path / "b", {"train.py": split})["data"].status == "passed"
    generative = TORCH_TRAINING + "\nfrom torch_fidelity import calculate_metrics\n"
    assert _points(tmp_path / "c", {"train.py": generative})["data"].status == "passed"
    assert _points(tmp_path / "d", {"sample.py": "import torch\nx = model.sample(16)\n"})["data"].status == "not applicable"
    generated = "import torch\nx = torch.randn(64, 2)\nloss = model(x).mean()\nloss.backward()\n"  # simulated data: no split
    assert _points(tmp_path / "e", {"train.py": generated})["data"].summary.startswith("the data is generated")


def test_a_smoke_test_is_a_test_file_or_a_small_run_option(tmp_path):
    assert _points(tmp_path / "a", {"train.py": TORCH_TRAINING})["smoke-test"].status == "failed"
    assert _points(tmp_path / "b", {"train.py": TORCH_TRAINING, "tests/test_model.py": "def test_shape(): pass\n"})["smoke-test"].status == "passed"
    option = "import argparse\nparser.add_argument('--max-steps', type=int, default=None)\n"
    assert _points(tmp_path / "c", {"train.py": option})["smoke-test"].status == "passed"


def test_several_seeds_are_documented_runs_with_three_seeds_or_a_loop_over_seeds(tmp_path):
    one = _points(tmp_path / "a", {"README.md": "```\npython train.py --seed 0\n```\n"})["seeds"]
    assert one.status == "failed" and one.summary == "documented runs use 1 seed(s)"
    three = "```\npython train.py --seed 0\npython train.py --seed 1\npython train.py --seed 2\n```\n"
    assert _points(tmp_path / "b", {"README.md": three})["seeds"].status == "passed"
    assert _points(tmp_path / "c", {"run.sh": "for seed in 0 1 2; do python train.py --seed $seed; done\n"})["seeds"].status == "passed"


def test_metrics_need_their_tolerances_in_a_config_and_review_needs_recorded_decisions(tmp_path):
    points = _points(tmp_path / "a", {"config.yaml": "metrics:\n  fid: 2.1\n  target_col_idx: 3\n"})
    assert points["metrics"].status == "failed" and points["review"].status == "failed"
    points = _points(tmp_path / "b", {
        "config.toml": "[metrics.fid]\nvalue = 2.1\nrelative_tolerance = 0.02\n",
        ".paperlens/decisions.yaml": "version: 1\ndeviations:\n  - setting: learning_rate\n    reason: smaller batch\n",
    })  # fmt: skip
    assert points["metrics"].status == "passed" and points["review"].status == "passed"
    assert points["review"].evidence[0].file == ".paperlens/decisions.yaml"
    kept_open = _points(tmp_path / "c", {"config.toml": "[open.beta2]\nquestion = \"Which beta2?\"\n"})["review"]
    assert kept_open.status == "passed" and kept_open.summary == "1 review point(s) open in config.toml"


def test_a_run_is_observable_with_logs_and_checkpoints_or_a_trainer_keeping_both(tmp_path):
    assert _points(tmp_path / "a", {"train.py": TORCH_TRAINING})["observability"].status == "failed"
    kept = TORCH_TRAINING + "\nwriter = SummaryWriter(log_dir)\ntorch.save(model.state_dict(), path)\n"
    assert _points(tmp_path / "b", {"train.py": kept})["observability"].status == "passed"
    lightning = "import lightning as L\ntrainer = L.Trainer(max_epochs=10)\ntrainer.fit(model)\n"
    assert _points(tmp_path / "c", {"train.py": lightning})["observability"].status == "passed"


def test_the_cli_writes_text_json_and_markdown_and_fails_on_request(tmp_path, capsys):
    repo = _repo(tmp_path, {"train.py": TORCH_TRAINING})
    assert main(["checklist", str(repo)]) == 0
    text = capsys.readouterr().out
    assert "points of the reproducibility checklist passed (PyTorch)" in text
    assert "✗ Randomness fixed and recorded" in text and "add: seed PyTorch" in text
    assert main(["checklist", str(repo), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [p["id"] for p in report["points"]] == ["randomness", "dependencies", "data", "smoke-test", "seeds", "metrics", "review", "observability"]
    assert main(["checklist", str(repo), "--format", "markdown"]) == 0
    assert capsys.readouterr().out.startswith("# Reproducibility checklist")
    assert main(["checklist", str(repo), "--format", "sarif"]) == 0
    sarif = json.loads(capsys.readouterr().out)
    [run] = sarif["runs"]
    failed = [p["id"] for p in report["points"] if p["status"] == "failed"]
    assert [r["ruleId"] for r in run["results"]] == [f"paperlens.checklist.{point}" for point in failed]
    # Where the fix belongs: the seeding goes in the training code.
    assert run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "train.py", "uriBaseId": "WORKSPACE"}
    assert "Add: seed" in run["results"][0]["message"]["text"]
    assert main(["checklist", str(repo), "--fail-on-failed"]) == 1
    assert main(["checklist", str(tmp_path / "missing")]) == 2


def test_each_failed_point_says_where_its_fix_belongs(tmp_path):
    files = {
        "train.py": TORCH_TRAINING + "    np.random.seed(0)\n",
        "Dockerfile": "FROM python:3.11\nRUN pip install torch\n",
        "requirements.txt": "torch\n",
        "README.md": "# Training\n\n```\npython train.py --seed 0\n```\n",
        "pyproject.toml": "[project]\nname = 'x'\n",
    }
    points = _points(tmp_path, files)
    place = {name: (point.fix_at.file, point.fix_at.line) for name, point in points.items() if point.fix_at is not None}
    assert {name for name, point in points.items() if point.status == "failed"} == set(place)
    # Beside the seeding already there; at the base image's FROM; the documented run; the README;
    # the package manifest for what has no file of its own yet.
    seeding = (tmp_path / "train.py").read_text().splitlines().index("np.random.seed(0)")
    assert place["randomness"] == ("train.py", seeding)
    assert place["dependencies"] == ("Dockerfile", 0)
    assert place["seeds"] == ("README.md", 3)
    assert place["smoke-test"] == ("README.md", None)
    assert place["review"] == ("pyproject.toml", None)
    assert place["observability"] == ("train.py", None)
    assert all(point.fix_at is None for point in points.values() if point.status != "failed")


def test_a_workspace_that_cannot_be_listed_gives_a_checklist_of_what_it_can_read(tmp_path):
    (tmp_path / "ws-a").symlink_to(tmp_path / "ws-b")
    (tmp_path / "ws-b").symlink_to(tmp_path / "ws-a")
    report = checklist(tmp_path / "ws-a")
    assert {point.status for point in report.points} <= {"failed", "not applicable"} and report.framework is None

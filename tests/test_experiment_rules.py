"""The rules that keep findings true on real repositories, each on a paper and code written for it:
the paper's framing is not its method, a delegated setting is neither a gap nor a guess, a stated
value is compared only where the code names what it is stated for, conventional defaults are asked
once."""

from __future__ import annotations

import textwrap
from pathlib import Path

from paperlens.pipeline.check import check
from paperlens.pipeline.check.scope import scope_of
from paperlens.pipeline.code import index_workspace
from paperlens.pipeline.code.configs import index_config
from paperlens.pipeline.ingest import read_paper
from paperlens.pipeline.readiness import assess
from paperlens.schemas import DecisionsFile


def _paper(folder: Path, body: str):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "main.tex").write_text("\\documentclass{article}\\begin{document}\n" + textwrap.dedent(body) + "\n\\end{document}\n")
    return read_paper(folder / "main.tex", use_cache=False)


def _check(tmp_path: Path, body: str, files: dict[str, str]):
    spec = _paper(tmp_path / "paper", body)
    workspace = tmp_path / "code"
    for name, text in files.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(textwrap.dedent(text))
    return check(workspace, spec, index_workspace(workspace), DecisionsFile()).findings


TRAINING = r"""
\section{Method}
We train the model with AdamW and a learning rate of 3e-4 for 100 epochs with a batch size of 256.
"""


def test_a_delegating_sentence_makes_its_sections_unstated_settings_delegated(tmp_path):
    body = TRAINING + r"""
\section{Experiments}
\subsection{ImageNet}
We use AdamW for every model here and follow the same training recipe as ConvNeXt [liu2022].
"""
    report = assess(_paper(tmp_path / "paper", body.replace("We train the model with AdamW and a", "We train with a")))
    delegated = {s.setting for s in report.settings if s.delegated}
    assert {"weight_decay", "betas", "epsilon"} <= delegated
    assert not [g for g in report.gaps if g.setting in delegated or g.kind == "unstated-defaults"]
    assert "ConvNeXt" in report.delegations[0].quote
    findings = _check(tmp_path, body.replace("We train the model with AdamW and a", "We train with a"), {"train.py": "opt = torch.optim.AdamW(params, lr=3e-4, weight_decay=0.05)\n"})
    assert [f for f in findings if f.kind == "guess"] == []


def test_a_delegation_speaks_only_for_its_own_sections_experiments(tmp_path):
    body = TRAINING + r"""
\section{Toy experiment}
On a 2D checkerboard we follow the experimental settings of Lipman et al. [lipman2023].
"""
    report = assess(_paper(tmp_path / "paper", body))
    assert not [s for s in report.settings if s.delegated]  # AdamW is used in the Method section
    assert any(g.setting == "weight_decay" for g in report.gaps)
    [guess] = [f for f in _check(tmp_path, body, {"train.py": "opt = torch.optim.AdamW(params, lr=3e-4, weight_decay=0.05)\n"}) if f.kind == "guess"]
    assert guess.setting == "weight_decay"


def test_evaluation_protocols_baselines_and_its_own_tables_delegate_nothing_of_the_method(tmp_path):
    body = TRAINING + r"""
\section{Experiments}
We follow the evaluation protocol of LWM [lwm]. The baselines use the hyperparameters of MAE [mae].
We use the hyperparameters in Table 3 for every ablation.
"""
    report = assess(_paper(tmp_path / "paper", body))
    assert report.delegations == [] and any(g.setting == "weight_decay" for g in report.gaps)


def test_the_framing_of_a_paper_is_not_its_method(tmp_path):
    body = r"""
\section{Background}
LayerNorm normalises with $\epsilon$ and earlier work trains with a learning rate of 0.1.
\begin{equation} y = \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} \end{equation}
""" + TRAINING
    spec = _paper(tmp_path / "paper", body)
    assert not [g for g in assess(spec).gaps if "ε" in g.title and g.kind == "undefined-symbol"]
    findings = _check(tmp_path, body, {"train.py": "opt = torch.optim.AdamW(params, lr=3e-4)\n"})
    assert not [f for f in findings if f.setting == "learning_rate"]  # 0.1 is the background's


def test_a_scoped_value_is_compared_only_where_the_code_names_its_scope():
    assert scope_of("The decoder is a DiT [dit] with a patch size of 2.", "2") == {"decoder", "dit"}
    assert scope_of("The number of epochs is set to 12 on COCO, 31 on ADE20K.", "12") == {"coco"}
    assert scope_of("We train with AdamW and a learning rate of 3e-4.", "3e-4") == frozenset()


def test_a_patch_size_stated_for_the_decoder_says_nothing_of_an_encoder(tmp_path):
    body = TRAINING + "The decoder is a transformer with a patch size of 2.\n"
    findings = _check(
        tmp_path,
        body,
        {
            "models/encoder.py": "patch_size = 16\n",
            "models/decoder.py": "patch_size = 4\n",
        },
    )
    divergences = [(f.code.file, f.code_value) for f in findings if f.kind == "divergence"]
    assert divergences == [("models/decoder.py", "4")]


def test_epochs_stated_per_dataset_are_compared_with_that_datasets_config_only(tmp_path):
    body = TRAINING.replace(" for 100 epochs", "") + "The number of epochs is set to 12 on COCO.\n"
    findings = _check(
        tmp_path,
        body,
        {
            "train.py": "import yaml\ncfg = yaml.safe_load(open('configs/coco/base.yaml'))\n",
            "configs/coco/base.yaml": "trainer:\n  max_epochs: 24\n",
            "configs/ade20k/base.yaml": "trainer:\n  max_epochs: 31\n",
        },
    )
    assert [(f.code.file, f.code_value) for f in findings if f.kind == "divergence"] == [("configs/coco/base.yaml", "24")]


def test_several_values_for_one_setting_make_a_difference_information_only(tmp_path):
    body = TRAINING.replace("3e-4", "1e-4") + "For fine-tuning, we use a learning rate of 5e-6.\n"
    [finding] = [f for f in _check(tmp_path, body, {"train.py": "opt = torch.optim.AdamW(params, lr=2e-5)\n"}) if f.kind == "divergence"]
    assert finding.severity == "info" and "which experiment this code runs is not known" in finding.confidence_note


def test_a_yaml_list_ending_at_the_end_of_a_file_without_a_newline_is_read():
    index = index_config("configs/model.yaml", "model:\n  depths:\n    - 2\n    - 2", "yaml")
    assert not index.problems
    assert any(site.name.startswith("model.depths") for site in index.values)

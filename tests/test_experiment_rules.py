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


SAMPLING = r"""
\section{Method}
We train with AdamW and a learning rate of 1e-4 and a batch size of 256 for 100,000 training steps.
"""


def test_a_training_setting_given_to_a_sampler_a_metric_or_a_generation_script_is_another_quantity(tmp_path):
    files = {
        "train.py": "opt = torch.optim.AdamW(params, lr=1e-4)\nsamples = euler_sampler(model, x, num_steps=50)\nmax_steps = 400000\n",
        "metrics/classifier.py": "def compute_logits(images, batch_size=2048):\n    return images\n",
        "generate.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--num-steps', type=int, default=50)\n",
    }
    findings = _check(tmp_path, SAMPLING, files)
    # Only the training script's own length is compared: 400K steps against the paper's 100,000.
    assert [(f.code.file, f.setting, f.code_value) for f in findings] == [("train.py", "training_steps", "400000")]


def test_a_variant_beside_the_one_the_paper_reports_is_not_compared(tmp_path):
    body = r"""
\section{Method}
The model is a DiT with a patch size of 2. We train it with AdamW for 12 epochs with a batch size of 256.
"""
    table = "class DiT:\n    def __init__(self, depth, patch_size, **kw):\n        pass\n" + "".join(f"def DiT_XL_{p}(**kw):\n    return DiT(depth=28, patch_size={p}, **kw)\n" for p in (2, 4, 8))
    table += "DiT_models = {'DiT-XL/2': DiT_XL_2, 'DiT-XL/4': DiT_XL_4, 'DiT-XL/8': DiT_XL_8}\n"
    files = {
        "models.py": table,
        "configs/base_640.yaml": "trainer:\n  max_epochs: 12\n",
        "configs/base_640_2x.yaml": "trainer:\n  max_epochs: 24\n",
        "configs/other_task.yaml": "trainer:\n  max_epochs: 30\n",
    }
    findings = _check(tmp_path, body, files)
    # The 2x schedule is a variant of base_640; other_task is a run of its own.
    assert [(f.code.file, f.setting, f.code_value) for f in findings] == [("configs/other_task.yaml", "epochs", "30")]
    only_other_patches = {"models.py": table.replace("patch_size=2", "patch_size=16")}
    assert {f.code_value for f in _check(tmp_path / "again", body, only_other_patches) if f.setting == "patch_size"} == {"16", "4", "8"}


def test_a_run_in_a_folder_the_paper_never_names_beside_one_it_does_is_not_its_experiment(tmp_path):
    body = r"""
\section{Method}
We fine-tune DINOv2 with AdamW and a learning rate of 1e-4 and a batch size of 16 for 12 epochs.
"""
    files = {"configs/dinov2/coco.yaml": "model:\n  lr: 1e-4\n", "configs/dinov3/coco.yaml": "model:\n  lr: 2e-4\n"}
    assert _check(tmp_path / "a", body, files) == []
    # Folders named for nothing the paper names (nor their siblings): their runs are compared.
    files = {"configs/main/coco.yaml": "model:\n  lr: 1e-4\n", "configs/ablation/coco.yaml": "model:\n  lr: 2e-4\n"}
    assert [(f.code.file, f.code_value) for f in _check(tmp_path / "b", body, files)] == [("configs/ablation/coco.yaml", "2e-4")]


def test_a_name_passed_through_is_reported_once_where_its_value_is_given(tmp_path):
    body = TRAINING.replace("AdamW and", "AdamW (no other settings stated) and")
    files = {
        "model.py": """\
        class Module:
            def __init__(self, weight_decay=0.05):
                self.opt = torch.optim.AdamW(self.parameters(), lr=3e-4, weight_decay=weight_decay)

        module = Module()
        """,
        "config.yaml": "seq: 30\noptim:\n  lr: 1e-3\nscheduler:\n  lr: ${optim.lr}\n",
    }
    findings = _check(tmp_path, body, files)
    assert [(f.kind, f.code.file, f.code.line + 1) for f in findings if f.setting == "weight_decay"] == [("guess", "model.py", 2)]
    assert [(f.code.file, f.code.line + 1) for f in findings if f.setting == "learning_rate"] == [("config.yaml", 3)]


def test_a_batch_split_over_accumulation_steps_or_the_processes_of_a_distributed_run_is_the_papers(tmp_path):
    body = TRAINING.replace("256", "2048")
    accumulated = {"config.yaml": "train_batch_size: 128\ngradient_accumulation_steps: 16\n"}
    assert _check(tmp_path / "a", body, accumulated) == []
    one_process = {"config.yaml": "train_batch_size: 256\n"}
    assert [f.code_value for f in _check(tmp_path / "b", body, one_process)] == ["256"]
    distributed = {**one_process, "train.py": "import torch.distributed as dist\n"}
    assert _check(tmp_path / "c", body, distributed) == []
    not_a_power_of_two = {"config.yaml": "train_batch_size: 512\n", "train.py": "import torch.distributed as dist\n"}
    assert _check(tmp_path / "d", body.replace("2048", "1536"), not_a_power_of_two) != []


def test_settings_the_paper_hands_to_its_own_configuration_files_are_delegated(tmp_path):
    body = r"""
\section{Experimental setup}
All models were trained with the Adam optimizer with a learning rate of 1e-4 for 250 epochs and a batch size of 128.
YAML configuration files with all run settings can be found in the config/ directory of our codebase.
"""
    report = assess(_paper(tmp_path / "paper", body))
    assert {"betas", "epsilon"} <= {s.setting for s in report.settings if s.delegated}
    assert "config/ directory" in report.delegations[0].quote
    findings = _check(tmp_path, body, {"config/train.yaml": "optimizer:\n  lr: 1e-4\n  betas: [0.95, 0.999]\n  eps: 1e-8\n"})
    assert [f for f in findings if f.kind == "guess"] == []


def test_a_table_row_is_named_by_the_head_of_its_name_and_values_of_each_table_count(tmp_path):
    body = r"""
\section{Hyperparameters}
\begin{table}[h]\caption{Game A Hyperparameters}
\begin{tabular}{ll}
Actor Training Optimizer & Adam \\
Optimizer (Actor) Learning Rate & 0.001 \\
Gradient Clipping Norm & 1.0 \\
\end{tabular}\end{table}
\begin{table}[h]\caption{Game B Hyperparameters}
\begin{tabular}{ll}
Optimizer (Actor) Learning Rate & $1 \times 10^{-5}$ \\
Clip Gradient Norm & 10.0 \\
\end{tabular}\end{table}
"""
    spec = _paper(tmp_path / "paper", body)
    stated = {(h.normalized_name, h.value) for h in spec.hyperparameters}
    assert {("learning_rate", 0.001), ("learning_rate", 1e-5), ("grad_clip_norm", 1.0), ("grad_clip_norm", 10.0)} <= stated
    findings = _check(tmp_path, body, {"configs/game_b.yaml": "optimizer_actor:\n  lr: 0.00001\ntraining:\n  clip_grad_norm: 10\n"})
    assert findings == []


def test_values_listed_each_in_its_own_math_or_behind_a_qualifier_are_all_read(tmp_path):
    body = r"""
\section{Method}
For CelebA-HQ and Stable Diffusion we use a learning rate of $5e-6$ and $1e-5$, respectively.
No weight decay is applied, and $\beta_1$ and $\beta_2$ of AdamW are set to 0.9 and 0.95.
"""
    stated = {(h.normalized_name, h.value) for h in _paper(tmp_path / "paper", body).hyperparameters}
    assert {("learning_rate", 5e-6), ("learning_rate", 1e-5), ("beta1", 0.9), ("beta2", 0.95)} <= stated


def test_a_heads_depth_beside_the_backbones_and_a_maximum_that_bounds_the_papers_length_are_silent(tmp_path):
    body = r"""
\section{Method}
The transformer has 32 layers and a sequence length of 256, trained with AdamW and a learning rate of 1e-4.
"""
    files = {
        "model.py": """\
        class Block:
            def __init__(self, depth, max_seq_len=2048):
                pass

        backbone = Block(depth=32)
        head = Block(depth=3)
        """,
    }
    assert _check(tmp_path, body, files) == []
    # Without the backbone's 32, the head's 3 is a difference (the code's only depth).
    files["model.py"] = files["model.py"].replace("backbone = Block(depth=32)\n", "")
    assert [(f.setting, f.code_value) for f in _check(tmp_path / "again", body, files)] == [("num_layers", "3")]


def test_tests_and_vendored_code_set_no_setting(tmp_path):
    files = {
        "tests/test_train.py": "opt = torch.optim.AdamW(params, lr=1.0)\n",
        "test_model.py": "lr = 1.0\n",
        "third_party/timm/optim.py": "lr = 1.0\n",
        "src/external/dino/train.py": "lr = 1.0\n",
        "train.py": "lr = 1.0\n",
    }
    assert [f.code.file for f in _check(tmp_path, TRAINING, files)] == ["train.py"]


def test_a_value_stated_for_a_baseline_is_not_the_methods(tmp_path):
    body = TRAINING + "\nThe scores are normalized against an exploiter baseline trained for $10^9$ steps.\n"
    spec = _paper(tmp_path / "paper", body)
    assert any(h.normalized_name == "training_steps" for h in spec.hyperparameters)
    assert _check(tmp_path, body, {"config.yaml": "training:\n  total_steps: 5000\n"}) == []


def test_a_respectively_takes_its_experiment_from_the_sentence_before(tmp_path):
    body = r"""
\section{Method}
We train DiT models of sizes B and XL on ImageNet-1K. The patch size is 4 and 2, respectively.
We also fine-tune DINO with AdamW and a learning rate of 1e-4 for 100 epochs and a batch size of 256.
"""
    files = {"imagenet1k/dit.py": "class DiT:\n    def __init__(self, patch_size=8):\n        pass\n\nDiT()\n", "dino/train.py": "patch_size = 16\n"}
    assert [(f.code.file, f.code_value) for f in _check(tmp_path, body, files) if f.setting == "patch_size"] == [("imagenet1k/dit.py", "8")]


def test_a_delegating_sentence_speaks_for_the_runs_named_by_its_rare_words(tmp_path):
    body = TRAINING + r"""
\section{Toy experiment}
On a 2D checkerboard distribution we follow the experimental settings of Lipman et al. [lipman2023].
"""
    files = {
        "configs/imagenet.py": "opt = dict(type='AdamW', lr=3e-4, weight_decay=0.05)\n",
        "configs/checkerboard.py": "opt = dict(type='AdamW', lr=3e-4, weight_decay=0.0)\n",
        **{f"lib/module_{i}.py": "x = 1\n" for i in range(6)},
    }
    guesses = [(f.code.file, f.setting) for f in _check(tmp_path, body, files) if f.kind == "guess"]
    assert guesses == [("configs/imagenet.py", "weight_decay")]


def test_adamw_whose_weight_decay_is_zero_or_not_known_may_be_the_papers_adam(tmp_path):
    body = TRAINING.replace("AdamW", "Adam")
    def optimizer_findings(call: str) -> list[str]:
        files = {"train.py": f"def make(params, wd):\n    return {call}\n\nmake(None, 0.1)\n"}
        return [f.code_value for f in _check(tmp_path / str(abs(hash(call))), body, files) if f.setting == "optimizer"]
    assert optimizer_findings("torch.optim.AdamW(params, lr=3e-4, weight_decay=0.0)") == []
    assert optimizer_findings("torch.optim.AdamW(params, lr=3e-4, weight_decay=wd)") == []
    assert optimizer_findings("torch.optim.AdamW(params, lr=3e-4)") == ["AdamW"]  # decays by its default
    assert optimizer_findings("torch.optim.AdamW(params, lr=3e-4, weight_decay=0.05)") == ["AdamW"]


def test_a_comparison_or_a_followed_reference_the_paper_spells_out_is_no_question(tmp_path):
    body = r"""
\section{Method}
\label{sec:method}
We train with AdamW and a learning rate of 1e-4 for 100 epochs with a batch size of 256.
We adopt a reweighting scheme similar to that in Section~\ref{sec:method}.
The training minimizes this loss similar to the training of a conditional diffusion model:
\begin{equation} L = \lVert x - \hat{x} \rVert^2 \end{equation}
We follow [rcg] for training details of the tokenizer. Specifically, it uses a learning rate of 2e-4, 400 epochs and a batch size of 2048.
Following the setup of [study], we ask the participants to choose the closer image.
Following the common practice [mar], we experiment on ImageNet at a resolution of 256$\times$256.

\section{Schedule}
We follow [other] for the training schedule.

\section{Sampling}
During inference, guidance is applied to each token following the standard practice [dit].
We rescale each solver's noise schedule to the flow schedule. This approach is similar to how EDM [edm] rescales it.
We use a noise schedule similar to that of [iddpm].

\section{Agents}
We also use a replay buffer of agents collected during training, following [loqa].
We also keep an opponent pool of past policies during training, following [pool].

\section{Inference}
At inference time, we use a CFG schedule following [mar].

We train the tokenizer of the images following [vq].

We train the diffusion model following [ddpm].

\section{Hyperparameters}
\begin{table}[h]\caption{Settings}
\begin{tabular}{ll}
Agent Replay Buffer Capacity & 10000 \\
Opponent Pool Refresh & every epoch \\
\end{tabular}\end{table}

\begin{table}[h]\caption{Results on CIFAR-10}
\begin{tabular}{ll}
Diffusion model & 3.2 \\
\end{tabular}\end{table}

\section{Inference details}
We use the same linear classifier-free guidance schedule as MAR [mar]. The schedule lowers the guidance scale of the first tokens.
The tokenizer of [vq] is a convolutional autoencoder.
"""
    titles = [g.title for g in assess(_paper(tmp_path / "paper", body)).gaps if g.kind == "ambiguous-wording"]
    # The replay buffer's values are in a table; the opponent pool's row holds no value. The paper
    # comes back to the CFG schedule it takes from [mar]; of [vq] it says nothing of the training.
    assert titles == [
        '"We follow [other]": which details carry over?',
        '"schedule similar to": similar in what, different in what?',
        '"following [pool]": which details carry over?',
        '"following [vq]": which details carry over?',
        '"following [ddpm]": which details carry over?',  # a results row gives no setting
    ]


def test_conventional_defaults_are_left_to_convention_not_asked(tmp_path):
    report = assess(_paper(tmp_path / "paper", TRAINING))
    assert report.conventional is not None and {"betas", "epsilon"} <= set(report.conventional.grouped_settings)
    assert not [g for g in report.gaps if g.kind == "unstated-defaults"]


def test_a_constant_rate_said_in_words_states_the_schedule_and_a_sweep_cell_states_its_values(tmp_path):
    body = TRAINING + "\nNo experiment uses skip connections or learning rate decay; we train without learning rate decay.\n"
    assert "lr_schedule" not in {g.setting for g in assess(_paper(tmp_path / "paper", body)).gaps}
    table = r"""
\section{Hyperparameters}
\begin{table}[h]\caption{Hyperparameters}
\begin{tabular}{lll}
 & task A & task B \\
learning rate & $[0.001, 0.003]$ & $0.0003$ / $0.001$ \\
weight decay & $0.1$ & $0.3$ \\
\end{tabular}\end{table}
"""
    stated = {(h.normalized_name, h.value) for h in _paper(tmp_path / "table", table).hyperparameters}
    assert {("learning_rate", 0.001), ("learning_rate", 0.003), ("learning_rate", 0.0003)} <= stated


def test_stochastic_gradient_descent_as_the_method_beside_a_named_optimizer_asks_no_momentum(tmp_path):
    body = r"""
\section{Method}
We use stochastic gradient descent to minimize $L$ over minibatches of 128 examples for 100 epochs.
All the parameters are updated by Adam optimizer with a learning rate of 0.003.
"""
    settings = {g.setting for g in assess(_paper(tmp_path / "paper", body)).gaps}
    assert "momentum" not in settings


TWO_EXPERIMENT_TABLE = r"""
\newcommand{\shline}{\hline}
\section{Setup}
\begin{table}[t]
\caption{Training hyperparameters.}
\resizebox{\linewidth}{!}{
\begin{tabular}{l|cc}
\toprule
config & ViT-B & ViT-L \tabularnewline
\shline
learning rate & 1e-3 & \multicolumn{1}{c}{5e-4} \tabularnewline
\multirow{2}{*}{batch size} & 4096 & 2048 \\
\cline{2-3}
 & \begin{tabular}{c}1024\\(small)\end{tabular} & 512 \\
epochs & 300 & 200 \\
\bottomrule
\end{tabular}}
\end{table}
"""


def test_a_table_as_latex_writes_it_gives_one_row_per_line_and_no_spurious_table(tmp_path):
    spec = _paper(tmp_path / "paper", TWO_EXPERIMENT_TABLE)
    [table] = spec.tables  # the cell's own tabular is part of its cell
    assert [row[0] for row in table.rows] == ["config", "learning rate", "batch size", "", "epochs"]
    source = (tmp_path / "paper" / "main.tex").read_text().splitlines()
    starts = [source[location.line][location.column :] for location in table.row_locations]
    assert [start.split("&")[0].strip() for start in starts] == ["config", "learning rate", "\\multirow{2}{*}{batch size}", "", "epochs"]
    stated = {(h.normalized_name, h.value, h.name) for h in spec.hyperparameters}
    assert ("learning_rate", 0.0005, "learning rate [ViT-L]") in stated
    assert ("batch_size", 512.0, "batch size") in stated  # the row under \multirow takes its name


def test_a_two_experiment_table_compares_each_column_with_the_runs_that_name_it(tmp_path):
    files = {
        "configs/vit_b.yaml": "optimizer:\n  lr: 1e-3\ntrain:\n  epochs: 300\n",
        "configs/vit_l.yaml": "optimizer:\n  lr: 1e-3\ntrain:\n  epochs: 200\n",
    }
    findings = _check(tmp_path, TWO_EXPERIMENT_TABLE, files)
    # ViT-L's 1e-3 is ViT-B's value, not ViT-L's 5e-4; every other value agrees with its own column.
    assert [(f.code.file, f.setting, f.code_value, f.severity) for f in findings] == [("configs/vit_l.yaml", "learning_rate", "1e-3", "error")]


def test_a_technique_the_paper_never_names_is_information_where_the_code_turns_it_on(tmp_path):
    files = {
        "train.py": """
            import argparse
            p = argparse.ArgumentParser()
            p.add_argument('--grad_clip', type=float, default=3.0)
            p.add_argument('--dropout', type=float, default=0.0)
            p.add_argument('--lr', type=float, default=3e-4)
            """,
    }
    [finding] = [f for f in _check(tmp_path, TRAINING, files) if f.kind == "guess"]
    assert (finding.setting, finding.severity, finding.code.line + 1) == ("grad_clip_norm", "info", 4)
    assert "gradient clipping" in finding.message and "AdamW" in finding.paper[0].quote  # where training is described
    # Named anywhere in the paper, or a training handed to another recipe: the code does what it says.
    named = TRAINING + "\nGradients are clipped for stability.\n"
    assert not [f for f in _check(tmp_path, named, files) if f.kind == "guess"]
    delegated = TRAINING + "\nWe follow the training recipe of ConvNeXt [liu2022].\n"
    assert not [f for f in _check(tmp_path, delegated, files) if f.kind == "guess"]


def test_a_command_that_sets_a_learning_rate_is_a_training_run_whatever_else_it_evaluates(tmp_path):
    files = {
        "main.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--attn_dropout', type=float, default=0.0)\n",
        "README.md": "```\npython main.py --lr 3e-4 --attn_dropout 0.1 --online_eval\n```\n\n```\npython main.py --evaluate --attn_dropout 0.1\n```\n",
    }
    found = [(f.code.file, f.code.line + 1, f.setting) for f in _check(tmp_path, TRAINING, files) if f.kind == "guess"]
    assert found == [("README.md", 2, "attention_dropout")]  # the second command only evaluates


def test_values_each_stated_for_its_experiment_in_one_sentence_are_all_read(tmp_path):
    spec = _paper(tmp_path / "paper", r"""
\section{Method}
We use a batch size of 2048 for ImageNet 64$\times$64 and 1024 for ImageNet 256$\times$256, and train for 800 epochs on 8 GPUs.
""")
    assert sorted(h.value for h in spec.hyperparameters if h.normalized_name == "batch_size") == [1024, 2048]
    assert [h.value for h in spec.hyperparameters if h.normalized_name == "epochs"] == [800]


def test_a_technique_said_to_be_off_states_zero_but_not_when_said_of_a_part(tmp_path):
    spec = _paper(tmp_path / "paper", r"""
\section{Method}
No weight decay is applied, and we train without label smoothing. We do not use dropout.

No weight decay is applied to the biases and LayerNorm parameters.
""")
    stated = {(h.normalized_name, h.value, h.raw_value) for h in spec.hyperparameters}
    assert stated == {("weight_decay", 0.0, "No weight decay"), ("label_smoothing", 0.0, "train without label smoothing"), ("dropout", 0.0, "We do not use dropout")}
    findings = _check(tmp_path, TRAINING + "No weight decay is applied.\n", {"train.py": "opt = torch.optim.AdamW(params, lr=3e-4, weight_decay=0.05)\n"})
    [divergence] = [f for f in findings if f.kind == "divergence"]
    assert (divergence.setting, divergence.paper_value) == ("weight_decay", "0")


def test_entry_points_and_config_targets_keep_their_code_live_and_names_read_in_any_order(tmp_path):
    body = TRAINING + "All the models are trained for 200k iterations.\n"
    files = {
        # ml_collections: a config file loaded by its path, whose get_config nothing in the code calls
        "configs/small.py": "import ml_collections\ndef get_config():\n    config = ml_collections.ConfigDict()\n    config.num_steps_train = 20000\n    return config\n",
        # latent-diffusion style: `target` names the class, `params` its arguments
        "configs/run.yaml": "model:\n  target: engine.trainer.Trainer\n  params:\n    steps: 1\n",
        "engine/trainer.py": "class Trainer:\n    def __init__(self, steps):\n        self.opt = make_optimizer(weight_decay=0.05)\n",
    }
    findings = _check(tmp_path, body, files)
    [steps] = [f for f in findings if f.setting == "training_steps"]
    assert (steps.code.file, steps.code_value) == ("configs/small.py", "20000")
    assert [f.code.file for f in findings if f.setting == "weight_decay"] == ["engine/trainer.py"]  # AdamW's decay, guessed


def test_the_optimizer_is_checked_only_in_the_training_runs_once_per_file(tmp_path):
    body = TRAINING.replace("with AdamW", "with the Adam optimizer") + "\nEach step of gradient descent reduces the loss (Lemma 1).\n"
    files = {
        "train.py": "import torch\nopt = (bnb.optim.AdamW8bit if eight_bit else torch.optim.AdamW)(params, weight_decay=0.01)\nopt2 = torch.optim.AdamW(params, weight_decay=0.01)\n",
        "metrics/fid_classifier.py": "import torch\nopt = torch.optim.SGD(params, lr=0.1)\n",
        "tests/test_train.py": "import torch\nopt = torch.optim.SGD(params, lr=0.1)\n",
    }
    components = [(f.code.file, f.code.line + 1, f.paper_value) for f in _check(tmp_path, body, files) if f.setting == "optimizer"]
    assert components == [("train.py", 2, "Adam")]


def test_a_value_flowing_from_a_default_the_callers_override_is_overridden_even_when_its_name_says_nothing(tmp_path):
    files = {
        "model.py": """
            from torch import nn
            class Embed(nn.Module):
                def __init__(self, n, class_drop=0.1):
                    super().__init__()
                    self.drop = nn.Dropout(class_drop)
            embed = Embed(10, class_drop=0.0)
            """,
    }
    assert [f for f in _check(tmp_path, TRAINING, files) if f.kind == "guess"] == []
    files["model.py"] = files["model.py"].replace("Embed(10, class_drop=0.0)", "Embed(10)")
    [dropout] = [f for f in _check(tmp_path, TRAINING, files) if f.kind == "guess"]
    assert (dropout.setting, dropout.code_value, dropout.code.line + 1, dropout.severity) == ("dropout", "0.1", 4, "info")


def test_a_toy_experiments_delegation_leaves_the_methods_unnamed_techniques_reported(tmp_path):
    body = TRAINING + "\n\\section{Toy experiment}\nOn a 2D checkerboard we follow the experimental settings of Lipman et al. [lipman].\n"
    files = {"train.py": "import torch\ntorch.nn.utils.clip_grad_norm_(params, max_norm=1.0)\n"}
    [clipping] = [f for f in _check(tmp_path, body, files) if f.kind == "guess"]
    assert clipping.setting == "grad_clip_norm"


def test_a_component_whose_choice_the_paper_needs_and_never_states_is_a_guess_once_per_file(tmp_path):
    body = TRAINING.replace("with AdamW and", "with Adam and")
    files = {
        "train.py": "import torch\nopt = torch.optim.Adam(params, lr=3e-4)\nsched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, 100)\nsched2 = torch.optim.lr_scheduler.CosineAnnealingLR(opt, 50)\n",
        "eval/metrics.py": "import torch\nsched = torch.optim.lr_scheduler.StepLR(opt, 10)\n",
    }
    [schedule] = [f for f in _check(tmp_path, body, files) if f.setting == "schedule"]
    assert (schedule.code.file, schedule.code.line + 1, schedule.severity) == ("train.py", 3, "warning")
    assert "learning-rate schedule" in schedule.message and "Adam" in schedule.paper[0].quote
    stated = body.replace("for 100 epochs", "with a cosine schedule for 100 epochs")
    assert [f for f in _check(tmp_path, stated, files) if f.setting == "schedule"] == []


def test_values_the_paper_states_through_others_a_scaled_rate_and_a_share_of_training(tmp_path):
    body = r"""
\section{Method}
We train with AdamW and a batch size of 2048. All models are trained for 100k steps. The base learning rate is 5e-5, scaled by batch size divided by 256.
The learning rate is warmed up linearly over the first 5\% of the training steps.
"""
    def findings(code: str):
        return [(f.setting, f.paper_value) for f in _check(tmp_path / str(abs(hash(code))), body, {"train.py": code}) if f.kind == "divergence"]

    assert findings("lr = 4e-4\nwarmup_steps = 5000\n") == []  # 5e-5 × 2048 / 256, and 5% of 100k
    assert findings("blr = 5e-5\nwarmup_ratio = 0.05\n") == []  # the base rate and the share themselves
    assert findings("warmup_steps = 10000\n") == [("warmup_steps", "5000")]


def test_a_timing_batch_of_one_states_no_training_batch_and_a_subcommand_says_the_runs_stage(tmp_path):
    body = TRAINING.replace(" with a batch size of 256", "") + (
        "\nWe time the model on one GPU with a batch size of 1, unless otherwise specified."
        " Throughput is measured with a batch size of 32.\n"
    )
    report = assess(_paper(tmp_path / "paper", body))
    assert any(g.setting == "batch_size" for g in report.gaps)
    files = {
        "main.py": "from lightning.pytorch.cli import LightningCLI\n",
        "README.md": "```\npython main.py fit --trainer.devices 4 --data.batch_size 4\n```\n\n```\npython main.py validate --trainer.devices 4 --data.batch_size 8\n```\n",
    }
    [guess] = [f for f in _check(tmp_path, body, files) if f.setting == "batch_size"]
    assert (guess.code.line + 1, guess.kind) == (2, "guess")  # the `fit` run, not the `validate` one
    assert "4 per process × 4 processes = 16" in guess.confidence_note


def test_a_weight_on_a_loss_term_the_objective_adds_unweighted_is_a_divergence(tmp_path):
    body = TRAINING + r"""
The regularisation is $\mathcal{L}_\mathrm{REG} = \mathcal{L}_\mathrm{KL} + \mathcal{L}_\mathrm{LPIPS} + \mathcal{L}_\mathrm{GAN}$, and
\begin{equation} \mathcal{L} = \mathcal{L}_{\mathrm{DIFF}} + \lambda \mathcal{L}_{\mathrm{REPA}} \end{equation}
"""
    files = {"configs/vae.yaml": "losses:\n  kl_weight: 1e-6\n  discriminator_weight: 0.1\n  perceptual_weight: 1.0\n  repa_weight: 0.5\n  lecam_weight: 0.1\n"}
    found = sorted((f.code.line + 1, f.code_value, f.paper_value) for f in _check(tmp_path, body, files) if f.setting == "loss_weight")
    assert found == [(2, "1e-6", "1"), (3, "0.1", "1")]  # 1.0 is the sum as written; λ weighs REPA; LeCam is not in it


def test_a_paper_that_keeps_the_libraries_defaults_is_checked_against_that_calls_defaults(tmp_path):
    body = TRAINING.replace("with AdamW and", "with AdamW, with PyTorch's default parameters otherwise, and")
    code = "import torch\nopt = torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.95), eps=1e-8)\n"
    found = [(f.setting, f.code_value, f.paper_value) for f in _check(tmp_path, body, {"train.py": code}) if f.kind == "divergence"]
    assert found == [("beta2", "0.95", "0.999")]  # β1 and ε are torch's defaults; the learning rate is stated
    assert [f for f in _check(tmp_path, TRAINING, {"train.py": code}) if f.kind == "divergence"] == []


def test_the_start_of_a_running_minimum_is_no_setting(tmp_path):
    files = {
        "engine.py": """
            def log_lrs(groups):
                min_lr, max_lr = 10.0, 0.0
                min_lr = 10.
                for group in groups:
                    min_lr = min(min_lr, group["lr"])
                return min_lr
            print(log_lrs([]))
            """,
        "train.py": "lr = 1.0\nmin_lr = 1e-6\n",
    }
    body = TRAINING + "The learning rate follows a cosine schedule.\n"  # whose floor is never stated
    assert [(f.code.file, f.setting) for f in _check(tmp_path, body, files)] == [("train.py", "learning_rate"), ("train.py", "min_learning_rate")]


def test_a_value_only_logged_sets_nothing(tmp_path):
    files = {
        "train.py": """
            import wandb
            wandb.init(config={"learning_rate": 0.02})
            wandb.log({"lr": 0.1, "epoch": 3})
            print(dict(lr=0.7))
            opt = torch.optim.AdamW(params, lr=0.9)
            """,
    }
    assert [(f.code.line + 1, f.code_value) for f in _check(tmp_path, TRAINING, files) if f.setting == "learning_rate"] == [(6, "0.9")]


def test_a_part_may_prefix_a_clipping_or_ema_setting_but_not_a_rate_or_a_dropout():
    from paperlens.pipeline.code.knowledge import normalize_name

    assert [normalize_name(n) for n in ("diffusion_grad_clip", "generator_ema_decay", "disc_lr", "class_dropout_prob")] == [
        "grad_clip_norm", "ema_decay", None, "cond_drop_prob",
    ]  # fmt: skip  (a class's dropout is CFG's condition dropout, not the network's)


def test_a_paragraphs_lead_scopes_its_values_and_a_config_that_instantiates_a_class_names_its_runs(tmp_path):
    body = r"""
\section{Method}
\paragraph{Training.} We follow [rcg] for training details of the tokenizer. We use AdamW with a batch size of 2048. No weight decay is applied.

\paragraph{Training.} Our generator is trained for 400 epochs with AdamW. A weight decay of 0.05 is applied.
"""
    files = {
        "configs/tokenizer.yaml": "trainer:\n  target: engine.tok_trainer.TokTrainer\n  params:\n    blr: 2.5e-5\n",
        "configs/generator.yaml": "trainer:\n  target: engine.gen_trainer.GenTrainer\n",
        "engine/tok_trainer.py": "class TokTrainer:\n    def __init__(self, blr=1e-4):\n        self.opt = make_optimizer(lr=blr, weight_decay=0.05)\n",
        "engine/gen_trainer.py": "class GenTrainer:\n    def __init__(self):\n        self.opt = make_optimizer(weight_decay=0.05)\n",
    }
    found = [(f.code.file, f.setting, f.severity) for f in _check(tmp_path, body, files) if f.kind == "divergence"]
    assert found == [("engine/tok_trainer.py", "weight_decay", "error")]  # blr's default is the config's 2.5e-5


def test_what_a_second_reading_found_misread_stays_silent(tmp_path):
    spec = _paper(tmp_path / "paper", r"""
\section{Method}
If we do not use dropout, the model overfits quickly. Training without weight decay degrades the FID from 2.1 to 3.4.
Dropout is turned off during evaluation. We train with a batch size of 256 for ImageNet, and 2 for the patch size.
The base learning rate of 1.5e-4 is scaled linearly with the total batch size over 8 GPUs.
""")
    assert [(h.normalized_name, h.value) for h in spec.hyperparameters if h.normalized_name in ("dropout", "weight_decay", "batch_size")] == [("batch_size", 256)]
    from paperlens.pipeline.check import paper_facts

    assert [f.value for f in paper_facts(spec, DecisionsFile()).facts["learning_rate"]] == [1.5e-4]  # 8 GPUs is no rule's base
    clamped = index_workspace_of(tmp_path / "clamp", {"train.py": "batch_size = 64\nbatch_size = min(batch_size, len(data))\n"})
    assert [(s.name, s.raw) for f in clamped.files for s in f.values] == [("batch_size", "64")]  # a clamp keeps its setting
    body = TRAINING.replace("with AdamW and", "with AdamW, with PyTorch's default parameters otherwise, and")
    code = "import torch\nnorm = torch.nn.LayerNorm(768, eps=1e-6)\nloader = torch.utils.data.DataLoader(ds, num_workers=8)\n"
    assert [f for f in _check(tmp_path / "defaults", body, {"train.py": code}) if f.kind == "divergence"] == []
    adversarial = TRAINING + r"The loss is $\mathcal{L} = \mathcal{L}_{rec} + \mathcal{L}_{adv}$." + "\n"
    assert [f.code_value for f in _check(tmp_path / "adv", adversarial, {"c.yaml": "adv_weight: 0.1\n"}) if f.setting == "loss_weight"] == ["0.1"]


def index_workspace_of(folder: Path, files: dict[str, str]):
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return index_workspace(folder)


def test_a_technique_switched_off_beside_its_value_is_not_turned_on(tmp_path):
    files = {"configs/train.yaml": "model:\n  use_ema: false\n  ema_decay: 0.9999\n"}
    assert [f for f in _check(tmp_path, TRAINING, files) if f.kind == "guess"] == []
    files = {"configs/train.yaml": "model:\n  use_ema: true\n  ema_decay: 0.9999\n"}
    assert [f.setting for f in _check(tmp_path / "on", TRAINING, files) if f.kind == "guess"] == ["ema_decay"]


def test_a_switch_alone_turns_on_the_technique_it_names(tmp_path):
    files = {"configs/imagenet.py": "model = dict(type='Net', depth=12, diffusion_use_ema=True)\n"}
    [finding] = [f for f in _check(tmp_path, TRAINING, files) if f.kind == "guess"]
    assert (finding.setting, finding.severity, finding.code.line + 1, finding.code_value) == ("ema_decay", "info", 1, "True")
    off = {"configs/imagenet.py": "model = dict(type='Net', depth=12, diffusion_use_ema=False)\n"}
    assert [f for f in _check(tmp_path / "off", TRAINING, off) if f.kind == "guess"] == []
    named = TRAINING + "\nWe evaluate an EMA of the weights.\n"
    assert [f for f in _check(tmp_path / "named", named, files) if f.kind == "guess"] == []


TWO_EXPERIMENTS = r"""
\section{Experiments}
The MNIST T-Shirt DDPMs were trained with the Adam optimizer and a batch size of 128.
For CelebA-HQ we chose a batch size of 64.
"""


def test_a_config_a_plain_python_command_runs_is_one_process(tmp_path):
    files = {
        "config/tshirt.yaml": "train_batch_size: 64\n",
        "config/celeba_hq.yaml": "train_batch_size: 64\n",
        "main.py": "import hydra\nimport accelerate\n",
        "README.md": "```\npython main.py --config-name=tshirt\n```\n",
    }
    [finding] = _check(tmp_path / "python", TWO_EXPERIMENTS, files)
    assert (finding.kind, finding.code.file, finding.code_value, finding.paper_value) == ("divergence", "config/tshirt.yaml", "64", "128")
    # Started on two processes, or by code that may start its own, 64 per process may be the paper's 128.
    for name, readme, imports in (
        ("torchrun", "torchrun --nproc_per_node=2 main.py --config-name=tshirt", "import accelerate\n"),
        ("launch", "accelerate launch main.py --config-name=tshirt", "import accelerate\n"),
        ("spawns", "python main.py --config-name=tshirt", "import accelerate\nimport torch.multiprocessing as mp\n"),
    ):
        changed = {**files, "README.md": f"```\n{readme}\n```\n", "main.py": "import hydra\n" + imports}
        assert _check(tmp_path / name, TWO_EXPERIMENTS, changed) == [], name


def test_a_files_short_form_of_an_experiments_name_names_its_runs(tmp_path):
    files = {"config/delete_tshirt.yaml": "train_batch_size: 64\n", "config/delete_celeb.yaml": "train_batch_size: 64\n"}
    # `celeb` names CelebA-HQ: 64 is that experiment's, not the T-Shirt run's.
    [finding] = _check(tmp_path, TWO_EXPERIMENTS, files)
    assert (finding.code.file, finding.paper_value) == ("config/delete_tshirt.yaml", "128")


def test_a_schedule_stated_for_an_experiment_is_compared_with_that_experiments_runs(tmp_path):
    body = r"""
\section{Experiments}
The MNIST T-Shirt models were trained with Adam and a learning rate of 1e-4 with cosine decay.
For CelebA-HQ we chose a learning rate of 5e-6.
"""
    files = {
        "config/train_tshirt.yaml": "lr: 1e-4\nlr_scheduler: cosine\n",
        "config/delete_tshirt.yaml": "lr: 1e-4\nlr_scheduler: constant\n",
        "config/delete_celeb.yaml": "lr: 5e-6\nlr_scheduler: constant\n",  # no decay stated for CelebA-HQ
    }
    [finding] = _check(tmp_path, body, files)
    assert (finding.setting, finding.code.file, finding.code_value, finding.paper_value) == ("schedule", "config/delete_tshirt.yaml", "constant", "cosine")
    assert finding.severity == "warning" and "MNIST T-Shirt" in finding.paper[0].quote
    # Stated for no experiment, it speaks for every run, unless some run uses it.
    unscoped = body.replace("The MNIST T-Shirt models were", "Models were")
    assert _check(tmp_path / "unscoped", unscoped, files) == []
    only_constant = {name: text for name, text in files.items() if name != "config/train_tshirt.yaml"}
    assert {f.code.file for f in _check(tmp_path / "constant", unscoped, only_constant)} == {"config/delete_tshirt.yaml", "config/delete_celeb.yaml"}


def test_a_loss_setting_choosing_another_distance_than_the_objectives_is_a_divergence(tmp_path):
    body = TRAINING + r"""
The regularisation is $\mathcal{L}_\mathrm{REG} = \mathcal{L}_\mathrm{KL} + \mathcal{L}_\mathrm{MSE} + \mathcal{L}_\mathrm{LPIPS}$.
"""
    files = {"configs/vae.yaml": 'losses:\n  reconstruction_loss: "l1"\n  perceptual_loss: "lpips"\n'}
    [finding] = [f for f in _check(tmp_path, body, files) if f.setting == "loss"]
    assert (finding.code.line + 1, finding.code_value, finding.paper_value, finding.severity) == (2, '"l1"', "MSE", "warning")
    same = {"configs/vae.yaml": 'losses:\n  reconstruction_loss: "mse"\n'}
    assert [f for f in _check(tmp_path / "same", body, same) if f.setting == "loss"] == []
    # An objective summing two distances (or none) says nothing of which one a setting chooses.
    both = body.replace(r"\mathcal{L}_\mathrm{LPIPS}", r"\mathcal{L}_\mathrm{L1}")
    assert [f for f in _check(tmp_path / "both", both, files) if f.setting == "loss"] == []


def test_a_run_validating_on_its_test_data_where_the_paper_holds_a_split_out_is_a_divergence(tmp_path):
    body = TRAINING + "\nFifteen percent of the dataset is allocated for validation.\n"
    files = {
        "train.py": """
            history = model.fit(x_train, y_train, epochs=100, validation_data=(x_test, y_test))
            trainer.fit(model, train_dataloaders=train_dl, val_dataloaders=val_dl)
            Trainer(model, eval_dataset=ds["test"])
            """,
    }
    found = [(f.code.line + 1, f.code_value) for f in _check(tmp_path, body, files) if f.setting == "validation_data"]
    assert found == [(2, "(x_test, y_test)"), (4, 'ds["test"]')]  # val_dl is a validation split
    assert [f for f in _check(tmp_path / "silent", TRAINING, files) if f.setting == "validation_data"] == []  # no split said


def test_a_validation_split_the_paper_reports_on_is_not_one_it_sets_apart(tmp_path):
    body = TRAINING + "\nWe report top-1 accuracy on the ImageNet validation split.\n"
    files = {"train.py": "trainer.fit(model, train_dataloaders=train_dl, val_dataloaders=test_dl)\n"}
    assert [f for f in _check(tmp_path, body, files) if f.setting == "validation_data"] == []


def test_what_only_looks_like_a_validation_split_a_loss_choice_or_a_clipping_switch_is_silent(tmp_path):
    body = TRAINING + "\nWe reach 76.1% top-1 on the ImageNet validation set.\n" + r"""
The objective is $\mathcal{L} = \mathcal{L}_\mathrm{MSE} + \mathcal{L}_\mathrm{LPIPS}$.
"""
    files = {
        "train.py": "trainer.fit(model, train_dataloaders=train_dl, val_dataloaders=test_dl)\n",
        "configs/vae.yaml": 'losses:\n  perceptual_loss: "l1"\n  use_clip: true\n',  # another term's distance; a CLIP model
    }
    assert _check(tmp_path, body, files) == []
    held_out = body + "\nWe hold out 10% of the training images for validation.\n"
    files["evaluate.py"] = "evaluate(model, eval_dataset=test_ds)\n"  # an evaluation evaluates on its test data
    assert [(f.code.file, f.setting) for f in _check(tmp_path / "held", held_out, files)] == [("train.py", "validation_data")]


def test_a_learnable_parameter_the_paper_never_says_how_to_start_is_a_guess_where_the_code_starts_it(tmp_path):
    """Declared learnable and never said how to start: the code's start is reported where it is set.
    A start the paper states, a conventional zero or one, a symbol of the background, and a
    parameter standing for no declared symbol say nothing."""
    body = r"""
\section{Background}
In LayerNorm, $\boldsymbol{g}$ is a learnable gain.
\section{Method}
Each head mixes $y = \exp(\mathbf{u_{q}} \cdot \mathbf{u_{k}}) + \alpha x$, where $\mathbf{u_{q}}, \mathbf{u_{k}} \in \mathbb{R}^d$ are learnable vectors.
The scale $\alpha$ is a learnable scalar, and we initialize $\alpha$ to 0.5. The shift $\rho$ is a learnable parameter too.
The temperature $\tau$ is not learnable, unlike the non-trainable $\kappa$. The offset $\beta$ is a learnable parameter.
The gate $g_{out}$ is learnable. The matrix $\mathbf{W}$ and the scale $s$ are learnable.
"""
    code = """
        import torch
        from torch import nn


        class Mixer(nn.Module):
            def __init__(self, d, rho_init=3.0):
                super().__init__()
                self.u_q = nn.Parameter(torch.zeros(d).normal_(mean=0, std=0.1))
                self.u_k = nn.Parameter(torch.zeros(d))
                self.alpha = nn.Parameter(torch.ones(1) * 0.5)
                self.rho_raw = nn.Parameter(torch.tensor([rho_init]))
                self.g = nn.Parameter(torch.randn(d))
                self.other = nn.Parameter(torch.randn(d))
                nn.init.trunc_normal_(self.u_k, std=0.02)
                self.tau = nn.Parameter(torch.tensor(0.07), requires_grad=False)
                self.kappa = nn.Parameter(torch.randn(1))
                self.bias = nn.Parameter(torch.randn(d))  # a bias, not the paper's β
                self.g_out = nn.Parameter(torch.ones(d).to("cpu"))
                self.W = nn.Parameter(torch.empty(d, d))
                nn.init.xavier_uniform_(self.W)
                self.s = nn.Parameter(torch.tensor(1.0))
    """
    findings = [f for f in _check(tmp_path, body, {"mixer.py": code}) if f.setting and f.setting.startswith("initial ")]
    assert [(f.code.line, f.message) for f in findings] == [
        (8, "u_q starts at random (torch.zeros(d).normal_(mean=0, std=0.1)): the paper declares u_q learnable but never says how it is initialised"),
        (11, "rho_raw starts from a fixed value (torch.tensor([rho_init])): the paper declares ρ learnable but never says how it is initialised"),
        (14, "u_k starts at random (nn.init.trunc_normal_(self.u_k, std=0.02)): the paper declares u_k learnable but never says how it is initialised"),
        (20, "W starts at random (nn.init.xavier_uniform_(self.W)): the paper declares W learnable but never says how it is initialised"),
    ]  # not τ, said not learnable; not κ, said non-trainable; not a `bias` for β; not g_out's ones nor s's 1.0; not W's empty tensor
    assert all(f.kind == "guess" and f.severity == "info" and "learnable" in f.paper[0].quote for f in findings)
    # A start stated for every parameter at once says how these start too.
    everything = body + "\nAll weights are initialized from a normal distribution with standard deviation 0.02.\n"
    assert not [f for f in _check(tmp_path / "all", everything, {"mixer.py": code}) if f.setting and f.setting.startswith("initial ")]


def test_a_variable_named_for_one_initialization_holding_another_is_a_divergence(tmp_path):
    """`he_init = GlorotNormal()`: whatever gets the name runs Xavier, not the He scheme the paper
    compares. A name that says the scheme it holds, or a scheme the paper never names, is silent."""
    body = TRAINING + "\nWe compare tanh with Xavier initialization and ReLU with He initialization.\n"
    files = {
        "train.py": """
            import tensorflow as tf
            he_init = tf.keras.initializers.GlorotNormal()
            xavier_init = tf.keras.initializers.GlorotNormal()
            lecun_init = tf.keras.initializers.GlorotNormal()
            layer = tf.keras.layers.Dense(16, kernel_initializer=he_init)
            """,
    }
    found = [(f.code.line + 1, f.paper_value) for f in _check(tmp_path, body, files) if f.setting == "initialization"]
    assert found == [(3, "Kaiming")]  # LeCun: the paper never names it
    assert [f for f in _check(tmp_path / "plain", TRAINING, files) if f.setting == "initialization"] == []


def test_a_set_of_values_states_each_of_them_and_an_open_set_none():
    from paperlens.pipeline.extract.hyperparameters import find_stated
    from paperlens.pipeline.extract.mathtext import to_plain

    def stated(text):
        return [(s.normalized_name, s.read.value) for s in find_stated(to_plain(text))]

    assert stated(r"We compare on different sizes of problem: $n \in \{100,200,500 \}$.") == [("n", 100), ("n", 200), ("n", 500)]
    assert stated(r"The learning rate is chosen from $\{10^{-3}, 3 \times 10^{-4}\}$.") == [("learning_rate", 1e-3), ("learning_rate", 3e-4)]
    assert stated(r"The batch size is chosen from \{1,000, 2,000\}.") == [("batch_size", 1000), ("batch_size", 2000)]
    assert stated(r"For LEN, we tune $m$ in $\{10, 100, d \}$.") == []  # d leaves the value open
    assert stated(r"The labels are $y \in \{0, 1\}$.") == []  # a domain
    assert stated(r"For each $k \in \{1, \dots, K\}$ we sample.") == []


def test_training_timesteps_drawn_from_the_end_of_the_schedule_only_are_a_divergence(tmp_path):
    """`randint(999, T)` trains at t = 999 only, where the objective averages over every t; a draw
    from 0 or 1, a sampler's timesteps and a paper with no such objective say nothing."""
    objective = TRAINING + r"""
\begin{equation}
L(\theta) = \mathbb{E}_{x, \epsilon, t} \left\| \epsilon - \epsilon_\theta(x_t, t) \right\|_2^2
\end{equation}
"""
    files = {
        "train.py": """
            import torch
            timesteps = torch.randint(999, scheduler.config.num_train_timesteps, (bsz,), device=device).long()
            t = torch.randint(0, 1000, (bsz,))
            ts = torch.randint(1, T + 1, (bsz,))
            index = torch.randint(500, 1000, (bsz,))
            """,
        "sample.py": "import torch\ntimesteps = torch.randint(999, 1000, (1,))\n",
    }
    found = [(f.code.file, f.code.line + 1, f.code_value) for f in _check(tmp_path, objective, files) if f.setting == "timestep_start"]
    assert found == [("train.py", 3, "999")]
    assert [f for f in _check(tmp_path / "plain", TRAINING, files) if f.setting == "timestep_start"] == []


def test_a_one_letter_option_is_the_paper_symbol_its_help_describes_in_the_paper_words(tmp_path):
    """`--n` is the paper's n only where its help says what the sentence stating n says ("size of
    problem" / "sizes of problem: n ∈ {100, 200, 500}"); a run outside the sweep is information."""
    body = TRAINING + "\nWe run on different sizes of problem: $n \\in \\{100,200,500\\}$.\n"

    def files(help_text):
        return {
            "synthetic.py": f"""
                import argparse
                parser = argparse.ArgumentParser()
                parser.add_argument('--n', type=int, default=100, help='{help_text}')
                """,
            "README.md": "Run\n```\npython synthetic.py --n 10\npython synthetic.py --n 200\n```\n",
        }

    found = [(f.code.file, f.code.line + 1, f.severity, f.code_value) for f in _check(tmp_path, body, files("size of problem"))]
    assert found == [("README.md", 3, "info", "10")]
    assert _check(tmp_path / "gpus", body, files("number of GPUs")) == []


def test_classifier_free_guidance_trained_needs_its_condition_dropout_rate(tmp_path):
    """Training for CFG drops the condition some share of the time: a paper that trains with CFG and
    never says how often leaves a gap, and the code's rate is a guess; said in words, or a paper that
    only samples with CFG, asks nothing. A rate of 0 is the condition never dropped there."""
    cfg = TRAINING + "\nWe use classifier-free guidance to sample class-conditional images.\n"
    code = {"train.py": "model = DiT(class_dropout_prob=0.1)\nhead = LabelEmbedder(1000, 768, class_dropout_prob=0.0)\n"}
    report = assess(_paper(tmp_path / "paper", cfg))
    assert [g.setting for g in report.gaps if g.setting == "cond_drop_prob"] == ["cond_drop_prob"]
    assert [(f.kind, f.code.line + 1) for f in _check(tmp_path, cfg, code) if f.setting == "cond_drop_prob"] == [("guess", 1)]
    stated = cfg + "\nDuring training, the class label is replaced with a null token in 10\\% of the samples.\n"
    assert not [g for g in assess(_paper(tmp_path / "stated", stated)).gaps if g.setting == "cond_drop_prob"]
    sampling_only = "\\section{Method}\nWe sample from a pretrained DiT with classifier-free guidance at a scale of 1.5.\n"
    assert not [g for g in assess(_paper(tmp_path / "sampling", sampling_only)).gaps if g.setting == "cond_drop_prob"]


def test_a_training_loop_writing_its_own_learning_rate_is_a_schedule(tmp_path):
    """A rate the training loop writes into the optimizer's groups is a schedule written by hand: a
    guess where the paper never states one, never compared by name with one it states; a helper
    that sets the rate once (not in the loop) is not read as one."""
    files = {
        "train.py": """
            def set_lr(optimizer, lr):
                for group in optimizer.param_groups:
                    group["lr"] = lr

            for step in range(1, steps + 1):
                lr = base_lr * step / 3000 if step < 3000 else base_lr
                for group in optimizer.param_groups:
                    group["lr"] = lr
            """,
    }
    body = TRAINING.replace("AdamW and a learning rate", "AdamW with a learning rate")
    assert [(f.kind, f.code.line + 1) for f in _check(tmp_path, body, files) if f.setting == "schedule"] == [("guess", 9)]
    cosine = body + "\nWe use a cosine learning rate schedule.\n"
    assert [f for f in _check(tmp_path / "cosine", cosine, files) if f.setting == "schedule"] == []


def test_a_batch_norm_of_the_method_leaves_its_momentum_to_convention_and_the_codes_is_a_guess(tmp_path):
    """The momentum of a batch-norm layer the method introduces: left to convention in the gaps (no
    question), a guess where the code sets it, silent where the paper states it ("Batch-Norm" with a
    hyphen is the component too)."""
    body = TRAINING + "\nWe add a Batch-Norm layer that normalizes the latents before the decoder.\n"
    files = {"model.py": "import torch.nn as nn\nnorm = nn.BatchNorm2d(4, momentum=0.01, affine=False)\n"}
    report = assess(_paper(tmp_path / "paper", body))
    assert not [g for g in report.gaps if g.setting == "bn_momentum"]
    assert "bn_momentum" in {s.setting for s in report.settings if not s.stated}
    assert [(f.kind, f.code_value) for f in _check(tmp_path, body, files) if f.setting == "bn_momentum"] == [("guess", "0.01")]
    stated = body + "\nThe batch norm momentum is 0.01.\n"
    assert [f for f in _check(tmp_path / "stated", stated, files) if f.setting == "bn_momentum"] == []


def test_a_value_stated_for_an_experiment_no_file_names_is_a_warning_and_a_machine_is_no_experiment(tmp_path):
    """Severity is earned: in a paper of several experiments (a GTrXL, the IPD), a value stated for
    one that no file of the run names is a warning saying so; "on a single 2080 Ti GPU" names the
    machine, not an experiment."""
    files = {"configs/run.yaml": "training:\n  total_steps: 10000000\n  lr: 0.01\n"}
    body = (
        "\\section{Method}\nWe train a GTrXL transformer for 34k steps. On the IPD we use a batch size of 32.\n\n"
        "All the models were trained on a single 2080 Ti GPU with a learning rate of 0.003.\n"
    )
    found = {f.setting: (f.severity, f.confidence_note or "") for f in _check(tmp_path, body, files)}
    assert found["training_steps"][0] == "warning" and "states it for gtrxl" in found["training_steps"][1]
    assert found["learning_rate"][0] == "error", found["learning_rate"]


def test_a_table_whose_rows_are_models_states_their_configuration_whatever_its_caption(tmp_path):
    """"Optimal α for different LLaMA models" with columns width and depth: each row states its model's
    width and depth. A table of results, rows named by methods, states nothing."""
    body = r"""
\section{Method}
\begin{table}[h]
\begin{tabular}{lccc}
model & width & depth & optimal $\alpha_0$ \\
 &  &  & (attention/other) \\
LLaMA 7B & 4096 & 32 & 0.8/0.2 \\
LLaMA 13B & 5120 & 40 & 0.6/0.15 \\
\end{tabular}
\caption{Optimal $\alpha_0$ for different LLaMA models.}
\end{table}
\begin{table}[h]
\begin{tabular}{lcc}
method & width & depth \\
ours & 71.2 & 3.5 \\
baseline & 70.1 & 3.9 \\
\end{tabular}
\caption{Accuracy and its spread.}
\end{table}
"""
    spec = _paper(tmp_path, body)
    stated = sorted((h.name, h.value) for h in spec.hyperparameters if h.source == "table")
    assert stated == [("depth [LLaMA 13B]", 40), ("depth [LLaMA 7B]", 32), ("width [LLaMA 13B]", 5120), ("width [LLaMA 7B]", 4096)]


MODEL_SIZES_TABLE = r"""
\section{Experiments}
\begin{table}[h]
\begin{tabular}{lcc}
model & width & depth \\
LLaMA 7B & 4096 & 32 \\
LLaMA 70B & 8196 & 80 \\
\end{tabular}
\caption{Model sizes.}
\end{table}
"""
MODEL_VARIANTS = """\
def get_model_config(model_variant):
    if model_variant == "llama2_7b":
        config = LLaMAConfig(emb_dim=4096, nlayers=32)
    elif model_variant == "llama2_70b":
        config = LLaMAConfig(emb_dim=8192, nlayers=80)
    elif model_variant == "llama2_1.4b":
        config = LLaMAConfig(emb_dim=2048, nlayers=24)
    elif model_variant == "llama3_70b":
        config = LLaMAConfig(emb_dim=8192, nlayers=80)
    return config


model = LLaMA(get_model_config(sys.argv[1]))
"""


def test_a_branch_for_one_variant_is_compared_with_that_variants_values_only(tmp_path):
    findings = _check(tmp_path, MODEL_SIZES_TABLE, {"config_utils.py": MODEL_VARIANTS})
    # 70B's 8192 against the table's 8196; the 7B agrees; a 1.4B the paper never reports is silent, and the
    # embedding dimension of the callee that takes the depth is the model's width.
    reported = {(f.code.line + 1, f.setting, f.code_value, f.severity) for f in findings}
    assert (5, "hidden_size", "8192", "error") in reported
    # Each finding says which experiment of the paper and which run of the code it compares.
    [seventy] = [f for f in findings if f.code.line + 1 == 5]
    assert seventy.compares == "the paper's llama 70b experiment with the value config_utils.py gives under `model_variant == llama2_70b`, no documented command changing it"
    assert not any(line in (3, 7) for line, *_ in reported)


def test_a_variant_no_documented_run_makes_is_not_compared(tmp_path):
    readme = "```bash\nARGS=\"\\\n--model_variant=llama2_7b \\\n\"\ntorchrun main.py ${ARGS}\n\nARGS=\"--model_variant=llama2_70b\"\ntorchrun main.py $ARGS\n```\n"
    files = {"config_utils.py": MODEL_VARIANTS, "README.md": readme}
    lines = {f.code.line + 1 for f in _check(tmp_path, MODEL_SIZES_TABLE, files)}
    # The README runs llama2_7b and llama2_70b (through its ARGS variable): llama3_70b's branch is no run.
    assert 5 in lines and 9 not in lines
    without_runs = {f.code.line + 1 for f in _check(tmp_path / "undocumented", MODEL_SIZES_TABLE, {"config_utils.py": MODEL_VARIANTS})}
    assert 9 in without_runs


def test_a_layer_index_is_no_depth_and_a_dimension_beside_it_no_model_width(tmp_path):
    code = "attention = MultiheadDiffAttn(embed_dim=1024, depth=0, num_heads=8)\n"
    paper = "\\section{Method}\nOur model has a hidden size of 4096.\n"
    assert _check(tmp_path, paper, {"example.py": code}) == []
    assert [f.setting for f in _check(tmp_path / "model", paper, {"example.py": code.replace("depth=0", "depth=12")})] == ["hidden_size"]


def test_steps_are_worked_out_from_a_token_budget_and_a_batch_in_tokens_as_exactly_as_they_are_rounded(tmp_path):
    body = "\\section{Method}\nWe train LLaMA 7B. The batch size is set to 4M tokens and each model is trained on a total of 200B tokens.\n"
    [finding] = _check(tmp_path, body, {"train.py": "num_steps = 1000000\n"})
    assert (finding.setting, finding.paper_value) == ("training_steps", "50000")
    assert "200B tokens / 4M tokens per step" in finding.message
    # 200B / 4,194,304 tokens (2 x 4096 x 512) is 47,684 steps: the paper's rounded counts allow it.
    assert _check(tmp_path / "exact", body, {"train.py": "num_steps = 47684\n"}) == []


def test_a_count_of_tokens_names_no_model():
    assert scope_of("The models are trained with 200B tokens.", "200B") == frozenset()
    assert scope_of("We train LLaMA 7B with a batch of 4M tokens.", "4M") == frozenset({"llama", "7b"})


def test_a_loss_weight_option_the_paper_never_mentions_is_information(tmp_path):
    body = "\\section{Method}\nWe model the RGB channels of each pixel and apply a cross-entropy loss on the prediction.\n"
    option = "import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument('--r_weight', type=float, default={value}, help='{help}')\n"
    [finding] = _check(tmp_path, body, {"main.py": option.format(value=5.0, help="Loss weight on the red channel")})
    assert (finding.kind, finding.severity, finding.setting, finding.code_value) == ("guess", "info", "loss_weight", "5.0")
    assert "Loss weight on the red channel" in finding.message and "cross-entropy loss" in finding.paper[0].quote
    # The sum as written, a help that weights no loss, and a paper that weights the channels: silent.
    assert _check(tmp_path / "one", body, {"main.py": option.format(value=1.0, help="Loss weight on the red channel")}) == []
    assert _check(tmp_path / "other", body, {"main.py": option.format(value=5.0, help="Weight of the red channel in the mix")}) == []
    weighted = body + "The loss of the red channel is weighted more, as the eye is most sensitive to it.\n"
    assert _check(tmp_path / "said", weighted, {"main.py": option.format(value=5.0, help="Loss weight on the red channel")}) == []


def test_a_value_written_through_another_stated_symbol_is_worked_out(tmp_path):
    body = (
        "\\section{Method}\nWe train the model with AdamW for $T = 100000$ steps with a batch size of 256. "
        "The learning rate is warmed up linearly for $T/10$ steps.\n"
    )
    [finding] = _check(tmp_path, body, {"train.py": "warmup_steps = 5000\ntraining_steps = 100000\n"})
    assert (finding.setting, finding.code_value, finding.paper_value) == ("warmup_steps", "5000", "10000")
    assert "(T/10)" in finding.message
    assert _check(tmp_path / "same", body, {"train.py": "warmup_steps = 10000\ntraining_steps = 100000\n"}) == []
    # A symbol the paper gives no value: nothing to work out, nothing compared.
    unknown = body.replace("$T = 100000$", "$T$")
    assert _check(tmp_path / "unknown", unknown, {"train.py": "warmup_steps = 5000\n"}) == []


def test_a_case_for_one_variant_is_that_variants_run_as_a_branch_is(tmp_path):
    code = (
        "def get_model_config(model_variant):\n"
        "    match model_variant:\n"
        "        case \"llama2_7b\":\n"
        "            return LLaMAConfig(emb_dim=4096, nlayers=32)\n"
        "        case \"llama2_70b\" | \"llama2_70b_4k\":\n"
        "            return LLaMAConfig(emb_dim=8192, nlayers=80)\n"
        "        case \"llama2_1.4b\":\n"
        "            return LLaMAConfig(emb_dim=2048, nlayers=24)\n"
        "\n\nmodel = LLaMA(get_model_config(sys.argv[1]))\n"
    )
    findings = _check(tmp_path, MODEL_SIZES_TABLE, {"config_utils.py": code})
    assert [(f.code.line + 1, f.setting, f.code_value, f.severity) for f in findings] == [(6, "hidden_size", "8192", "error")]


def test_a_number_with_its_magnitude_in_math_is_no_multiple_of_a_symbol(tmp_path):
    body = (
        "\\section{Method}\nEach layer has $K = 8$ heads. We train the model with AdamW for $300K$ steps "
        "and warm up for $0.5 \\cdot K$ steps.\n"
    )
    stated = {(h.normalized_name, h.value) for h in _paper(tmp_path / "paper", body).hyperparameters}
    # 300K is 300,000 steps, not 300 × K; "0.5 · K" is half of K's 8.
    assert ("training_steps", 300000.0) in stated and ("training_steps", 2400.0) not in stated
    assert ("warmup_steps", 4.0) in stated

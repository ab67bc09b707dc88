"""Stated hyperparameters in prose, tables and equations — and the numbers that are none."""

from __future__ import annotations

import pytest

from .test_extract_helpers import enriched, equation, stated, table


def test_latex_prose_with_optimizer() -> None:
    spec = enriched(
        r"We use a learning rate of $3\times10^{-4}$ with AdamW ($\beta_1=0.9$, $\beta_2=0.95$)"
        " and a weight decay of 0.05."
    )
    by_name = {h.normalized_name: h for h in spec.hyperparameters}
    assert set(by_name) == {"learning_rate", "beta1", "beta2", "weight_decay"}
    learning_rate = by_name["learning_rate"]
    assert learning_rate.name == "learning rate"
    assert learning_rate.value == 0.0003
    assert learning_rate.raw_value == r"3\times10^{-4}"
    assert learning_rate.component == "AdamW"
    assert learning_rate.source == "text"
    assert learning_rate.section_id == "sec-1"
    assert learning_rate.text.startswith("We use a learning rate")
    # Located from the name to the value, on the paragraph's line.
    text = learning_rate.text
    assert (learning_rate.location.line, learning_rate.location.column) == (0, text.index("learning rate"))
    assert learning_rate.location.end_column == text.index("$ with")
    assert by_name["beta1"].name == "β_1"
    assert by_name["beta1"].value == 0.9
    assert by_name["beta2"].component == "AdamW"
    assert by_name["weight_decay"].component == "AdamW"


def test_pdf_unicode_prose() -> None:
    found = stated("We use Adam with β1 = 0.9 and β2 = 0.999, a learning rate of 3 × 10−4 and ε = 1e-8.")
    assert found == {"beta1": [0.9], "beta2": [0.999], "learning_rate": [pytest.approx(3e-4)], "epsilon": [1e-8]}
    assert stated("The learning rate is 3·10^-4.") == {"learning_rate": [pytest.approx(3e-4)]}


@pytest.mark.parametrize(
    ("text", "name", "value", "unit"),
    [
        ("We train for 100 epochs.", "epochs", 100, "epochs"),
        ("We use 10k warm-up steps.", "warmup_steps", 10_000, "steps"),
        ("The model was trained for 300K iterations on ImageNet.", "training_steps", 300_000, "iterations"),
        ("We use batch size 256.", "batch_size", 256, None),
        ("We use a batch size of 4096 images.", "batch_size", 4096, "images"),
        ("The batch size is 4M tokens.", "batch_size", 4e6, "tokens"),
        ("We use a batch size of 64 per GPU.", "per_device_batch_size", 64, None),
        ("Training runs on 8 A100 GPUs.", "num_gpus", 8, "GPUs"),
        ("We use a dropout of 10%.", "dropout", 0.1, "%"),
        ("We use dropout (0.2) in every block.", "dropout", 0.2, None),
        ("We train with a dropout (Srivastava et al. 2014) of 0.3.", "dropout", 0.3, None),
        ("We apply a 5-epoch linear warmup.", "warmup_epochs", 5, "epochs"),
        ("We linearly warm up the learning rate for 2000 iterations.", "warmup_steps", 2000, "iterations"),
        ("The model is trained with 40 epochs linear lr warmup.", "warmup_epochs", 40, "epochs"),
        ("A warm-up of 5 epochs is used.", "warmup_epochs", 5, "epochs"),
        ("The learning rate is warmed up during the first 5 epochs.", "warmup_epochs", 5, "epochs"),
        ("We set the temperature to 0.07.", "temperature", 0.07, None),
        ("Gradient clipping of 1.0 is applied.", "grad_clip_norm", 1.0, None),
        ("The number of layers is $28$.", "num_layers", 28, None),
        ("We use a 24-layer Transformer.", "num_layers", 24, "layers"),
        ("Images are resized to $256 \\times 256$ resolution.", "image_resolution", 256, "pixels"),
        ("The sequence length is 2048 and the label smoothing is 0.1.", "label_smoothing", 0.1, None),
        ("We report the mean over 5 random seeds.", "num_runs", 5, "runs"),
        ("For reducing memory we use a batch size of 16.", "batch_size", 16, None),  # changes no setting
        # Names too common to take alone, in a sentence that gives them their sense.
        ("Gradients are clipped to a global norm of 1.0 in all runs.", "grad_clip_norm", 1.0, None),
        ("We clip the gradient norm to 0.5.", "grad_clip_norm", 0.5, None),
        ("The gradient norm is clipped at 1.0.", "grad_clip_norm", 1.0, None),
        ("The last layer is initialised from a normal with standard deviation 1e-4.", "init_std", 1e-4, None),
        ("Weights are initialized with a truncated normal of std 0.02.", "init_std", 0.02, None),
        # The share of the data an augmentation applies to.
        (r"We additionally erase a random rectangle in 25\% of the images.", "random_erasing_prob", 0.25, "%"),
        (r"Random erasing is applied to 25\% of the training images.", "random_erasing_prob", 0.25, "%"),
    ],
)
def test_patterns(text: str, name: str, value: float, unit: str | None) -> None:
    matches = [h for h in enriched(text).hyperparameters if h.normalized_name == name]
    assert len(matches) == 1, enriched(text).hyperparameters
    assert matches[0].value == pytest.approx(value)
    assert matches[0].unit == unit


def test_symbols_named_by_the_vocabulary_or_spelled_out() -> None:
    spec = enriched(r"We set $\lambda = 0.1$ and $\tau=0.07$.", "We set λ_KL = 0.5.")
    names = [(h.name, h.normalized_name, h.value) for h in spec.hyperparameters]
    assert names == [("λ", "lambda", 0.1), ("τ", "temperature", 0.07), ("λ_KL", "lambda_kl", 0.5)]


def test_chained_and_latin_symbols() -> None:
    assert stated(r"We set $\lambda = \gamma = 10^{-4}$ and $\beta = 0.5$.") == {
        "lambda": [1e-4],
        "gamma": [1e-4],
        "beta": [0.5],
    }
    assert stated(r"In all experiments we set $K=8$.") == {"k": [8]}


def test_a_list_stays_inside_its_math() -> None:
    # "2" and "1" are no pair of Adam betas: the list ends with the math.
    assert stated(r"Results use $\beta=2$ and 1 NN only.") == {"beta": [2]}


def test_lists_give_one_entry_per_value() -> None:
    spec = enriched("We sweep learning rates of 1e-4, 3e-4 and 1e-3.")
    assert [h.value for h in spec.hyperparameters] == [1e-4, 3e-4, 1e-3]
    assert {h.name for h in spec.hyperparameters} == {"learning rates"}


def test_pairs_and_tuples() -> None:
    assert stated(r"Adam uses $(\beta_1, \beta_2) = (0.9, 0.999)$.") == {"beta1": [0.9], "beta2": [0.999]}
    assert stated(r"We use AdamW with $\beta=0.9,0.95$.") == {"beta1": [0.9], "beta2": [0.95]}
    assert stated("The AdamW momenta are (0.9, 0.95).") == {"beta1": [0.9], "beta2": [0.95]}
    assert stated(
        r"The values $\sigma_{\text{min}}$ and $\sigma_{\text{max}}$ are set to $0.002$ and $80$, respectively."
    ) == {"sigma_min": [0.002], "sigma_max": [80]}
    assert stated("The learning rate and weight decay are 1e-4 and 0.05.") == {
        "learning_rate": [1e-4],
        "weight_decay": [0.05],
    }


def test_ranges_are_text() -> None:
    spec = enriched("We use a learning rate of 1e-4-1e-3 for the probe.")
    assert [(h.value, h.raw_value) for h in spec.hyperparameters] == [("1e-4-1e-3", "1e-4-1e-3")]


def test_components_of_values() -> None:
    spec = enriched(
        "We use a dropout rate of 0.1.",
        "The model weights are averaged by an EMA with a momentum of 0.9999.",
        "SGD with a momentum of 0.9 is used.",
    )
    assert [(h.normalized_name, h.component) for h in spec.hyperparameters] == [
        ("dropout", "Dropout"),
        ("ema_decay", "EMA"),
        ("momentum", "SGD"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Our model reaches 81.2% top-1 accuracy and an FID of 2.3 [12].",
        "This follows Smith et al. (2020) and was improved in 2021.",
        "See Table 3, Eq. 2 and Section 4.1 for the learning rate.",
        "The learning rate in Table 3 is tuned.",
        "We use PyTorch 2.1 and CUDA 12.1.",
        "The cosine schedule decays the learning rate to 0.1 times the base learning rate.",
        "We use a linear warmup starting from a learning rate of 0.",
        "We evaluate the models every 2B tokens.",
        "Results after the first 5 epochs are noisy.",
        "The learning rate is decayed by 10 after 30 epochs.",
        "We use a batch size of 32 to measure the throughput.",
        "The inference time is 0.39 sec per step (batch size 125, A100 GPU).",
        "Two Nvidia RTX 3090 GPUs were used for development.",
        "If $\\lambda = 0$, the loss reduces to the original one.",
        "Let $M = 3\\rho m$ be the constant.",
        "With boundary conditions $u(-1, t) = 0$ the solution is unique.",
        "We evaluate the settings with different context length (2K, 4K).",
        "REPA-E at 80 epochs surpasses FasterDiT trained for 400 epochs.",
        "We use a sampling batch size of 10,000.",
        "The learning rate of the teacher is not given.",
        "Let $\\delta_{ij} = 1$ if $i=j$ and $\\delta_{ij} = 0$ otherwise.",
        "Weight decay is applied to 10% of the parameters.",
        "We regularize with dropout (2014) as in prior work.",  # a year, not a rate
        "For $\\lambda=0$ and $\\lambda=1$ the loss reduces to known ones.",
        "The input is normalized with $\\mu = 0$ and unit variance.",
        # Cases of the method: a consequence follows the value.
        "With $\\tau = 1$ the loss reduces to plain mixup.",
        "Setting $\\lambda = 0$ recovers the original objective.",
        "If we set $\\tau = 1$, the method is equivalent to mixup.",
        # Variants compared with the setting, and results.
        "Lowering the temperature to $\\tau = 0.01$ makes training unstable.",
        "Training with $\\tau = 0.2$ costs 0.3 points of accuracy.",
        # Common words without the context that makes them a hyperparameter's name.
        "The features have a global norm of 1.0.",
        "We clip the PPO ratio with a threshold of 0.2.",  # clips no gradient
        "We initialize from the pretrained model and the noise standard deviation is 0.5.",
        # A share of the data that no augmentation in its clause applies to.
        "We hold out 10\\% of the images for validation.",
        "We use random erasing, and crop 25\\% of the images.",
    ],
)
def test_states_nothing(text: str) -> None:
    assert enriched(text).hyperparameters == []


def test_a_consequence_after_a_relative_clause_or_purpose_keeps_the_setting() -> None:
    assert stated(r"We set $\tau = 0.5$, which reduces the entropy of the labels.") == {"temperature": [0.5]}
    assert stated(r"We set $\lambda = 0.1$ to recover fine details.") == {"lambda": [0.1]}


def test_hyperparameter_table() -> None:
    spec = enriched(
        tables=[
            table(
                [
                    ["Hyperparameter", "Value"],
                    ["Optimizer", "AdamW"],
                    ["Learning rate", r"$1 \times 10^{-4}$"],
                    ["Batch size", "256"],
                    ["Adam betas", "(0.9, 0.95)"],
                    ["Warmup steps", "1000"],
                    ["Notes", "-"],
                ],
                caption="Training hyperparameters.",
            )
        ]
    )
    found = [(h.name, h.normalized_name, h.value, h.component) for h in spec.hyperparameters]
    assert found == [
        ("Optimizer", "optimizer", "AdamW", "AdamW"),
        ("Learning rate", "learning_rate", pytest.approx(1e-4), "AdamW"),
        ("Batch size", "batch_size", 256, None),
        ("Adam betas", "beta1", 0.9, "AdamW"),
        ("Adam betas", "beta2", 0.95, "AdamW"),
        ("Warmup steps", "warmup_steps", 1000, "warmup"),
    ]
    learning_rate = spec.hyperparameters[1]
    assert learning_rate.source == "table"
    assert learning_rate.text == r"Learning rate | $1 \times 10^{-4}$"
    assert learning_rate.raw_value == r"$1 \times 10^{-4}$"
    assert learning_rate.location.line == 202  # the row's own line
    assert [c.name for c in spec.components] == ["AdamW", "Adam", "warmup"]
    assert spec.components[0].attributes == {
        "optimizer": "AdamW",
        "learning_rate": pytest.approx(1e-4),
        "beta1": 0.9,
        "beta2": 0.95,
    }
    assert spec.components[0].location.line == 201


def test_table_rows_named_by_a_symbol() -> None:
    spec = enriched(
        tables=[
            table(
                [
                    ["Hyperparameter", "Value"],
                    ["Learning rate", "1e-4"],
                    ["Mixing $\\alpha$", "0.4"],  # no vocabulary word: named by its symbol, as in prose
                    ["Temperature ($\\tau$)", "0.5"],
                    ["Adam $\\beta$", "(0.9, 0.95)"],  # a vocabulary symbol
                    ["$K$", "8"],
                    ["$\\gamma$", "yes"],
                    ["Model B", "7"],  # a Latin letter outside math is no symbol
                ],
                caption="Training hyperparameters.",
            )
        ]
    )
    found = [(h.name, h.normalized_name, h.value) for h in spec.hyperparameters]
    assert found == [
        ("Learning rate", "learning_rate", 1e-4),
        ("Mixing α", "alpha", 0.4),
        ("Temperature (τ)", "temperature", 0.5),
        ("Adam β", "beta1", 0.9),
        ("Adam β", "beta2", 0.95),
        ("K", "k", 8),
    ]


def test_symbol_rows_make_no_hyperparameter_table() -> None:
    ablation = table(
        [["$\\lambda$", "0.1", "0.5", "1.0"], ["FID", "2.3", "2.1", "2.5"]], caption="Ablation of the loss weight."
    )
    assert enriched(tables=[ablation]).hyperparameters == []


def test_table_with_configuration_columns() -> None:
    spec = enriched(
        tables=[
            table(
                [
                    ["Parameter", "ViT-B", "ViT-L"],
                    ["Layers", "12", "24"],
                    ["Hidden size", "768", "1024"],
                    ["num_heads", "12", "16"],
                ]
            )
        ]
    )
    found = [(h.name, h.normalized_name, h.value) for h in spec.hyperparameters]
    assert found == [
        ("Layers [ViT-B]", "num_layers", 12),
        ("Layers [ViT-L]", "num_layers", 24),
        ("Hidden size [ViT-B]", "hidden_size", 768),
        ("Hidden size [ViT-L]", "hidden_size", 1024),
        ("num_heads [ViT-B]", "num_heads", 12),
        ("num_heads [ViT-L]", "num_heads", 16),
    ]


def test_table_with_hyperparameter_columns() -> None:
    spec = enriched(
        tables=[
            table([["Model", "Layers", "Hidden dim", "Params"], ["Small", "12", "512", "40M"]], "Model configurations.")
        ]
    )
    assert [(h.name, h.value) for h in spec.hyperparameters] == [("Layers [Small]", 12), ("Hidden dim [Small]", 512)]


def test_results_tables_state_nothing() -> None:
    results = table(
        [["Method", "Epochs", "FID", "IS"], ["Ours", "300", "2.3", "250.1"], ["Baseline", "800", "3.1", "200.5"]],
        caption="Comparison with prior work on ImageNet.",
    )
    ablation = table(
        [["Model", "LN (original)", "DyT (tuned)"], ["ViT-B", "82.3% (4e-3)", "82.8% (6e-3)"]],
        caption="Tuned learning rates.",
    )
    assert enriched(tables=[results, ablation]).hyperparameters == []


def test_display_equation_of_assignments() -> None:
    spec = enriched(
        equations=[equation(r"\lambda = 0.1, \quad \tau = 0.07"), equation(r"\mathcal{L} = \lambda x + 1", id="eq-2")]
    )
    found = [(h.name, h.normalized_name, h.value, h.source) for h in spec.hyperparameters]
    assert found == [("λ", "lambda", 0.1, "equation"), ("τ", "temperature", 0.07, "equation")]
    assert spec.hyperparameters[0].location.line == 100

"""The code index: values, components, anchors and definitions read from Python and config files,
constant flow, overridden defaults, dead code, syntax errors, and incremental workspace indexing."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
import yaml

from paperlens.pipeline.code import index_file, index_source, index_workspace, reindex, workspace_files
from paperlens.pipeline.code.configs import index_config
from paperlens.pipeline.code.knowledge import KNOWLEDGE_DIR, code_vocabulary, normalize_name
from paperlens.pipeline.code.python import index_python
from paperlens.schemas.code import FileIndex, ValueSite


def _python(source: str, path: str = "train.py") -> FileIndex:
    return index_python(path, textwrap.dedent(source))


def _sites(index: FileIndex, name: str) -> list[ValueSite]:
    return [site for site in index.values if site.name == name]


def _site(index: FileIndex, name: str) -> ValueSite:
    [site] = _sites(index, name)
    return site


def _position(source: str, text: str) -> tuple[int, int]:
    """(line, column) of the first `text` in the dedented source."""
    source = textwrap.dedent(source)
    offset = source.index(text)
    return source.count("\n", 0, offset), offset - (source.rfind("\n", 0, offset) + 1)


# --- value sites ---------------------------------------------------------------------------------

VALUE_CASES = [
    # source, site name, (kind, normalized, value, raw, call, component), the text the location starts at
    (
        "import torch\nopt = torch.optim.AdamW(params, lr=3e-4, weight_decay=0.05)\n",
        "lr",
        ("keyword", "learning_rate", 3e-4, "3e-4", "torch.optim.AdamW", "AdamW"),
        "3e-4",
    ),
    (
        "from torch import nn\nlayer = nn.Dropout(0.1)\n",
        "p",
        ("positional", "dropout", 0.1, "0.1", "nn.Dropout", "Dropout"),
        "0.1",
    ),
    ("learning_rate = 1/3\n", "learning_rate", ("assignment", "learning_rate", 1 / 3, "1/3", None, None), "1/3"),
    ("wd = 2**-4\n", "wd", ("assignment", "weight_decay", 0.0625, "2**-4", None, None), "2**-4"),
    ("max_steps = 10_000\n", "max_steps", ("assignment", "training_steps", 10000.0, "10_000", None, None), "10_000"),
    (
        "class M:\n    def f(self):\n        self.temperature = -0.5\n",
        "self.temperature",
        ("assignment", "temperature", -0.5, "-0.5", None, None),
        "-0.5",
    ),
    ("cfg = {}\ncfg['epochs'] = 90\n", "cfg['epochs']", ("assignment", "epochs", 90.0, "90", None, None), "90"),
    (
        "def build(model, lr=1e-3):\n    return model\n",
        "lr",
        ("function-default", "learning_rate", 1e-3, "1e-3", "build", None),
        "1e-3",
    ),
    (
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--batch-size', type=int, default=256)\n",
        "--batch-size",
        ("argparse-default", "batch_size", 256.0, "256", None, None),
        "256",
    ),
    (
        "from dataclasses import dataclass\n@dataclass\nclass Config:\n    label_smoothing: float = 0.1\n",
        "label_smoothing",
        ("config-default", "label_smoothing", 0.1, "0.1", "Config", None),
        "0.1",
    ),
    (
        "from pydantic import BaseModel, Field\nclass Config(BaseModel):\n    momentum: float = Field(0.9)\n",
        "momentum",
        ("config-default", "momentum", 0.9, "0.9", "Config", None),
        "0.9",
    ),
    (
        "optim = {'lr': 3e-4, 'nesterov': True}\n",
        "lr",
        ("dict-entry", "learning_rate", 3e-4, "3e-4", None, None),
        "3e-4",
    ),
    ("optim = {'lr': 3e-4, 'nesterov': True}\n", "nesterov", ("dict-entry", None, True, "True", None, None), "True"),
    (
        "cfg = dict(optimizer=dict(eps=1e-8))\n",
        "optimizer.eps",
        ("dict-entry", "epsilon", 1e-8, "1e-8", None, None),
        "1e-8",
    ),
    (
        "import torch\nloss = torch.nn.CrossEntropyLoss(reduction='sum')\n",
        "reduction",
        ("keyword", None, "sum", "'sum'", "torch.nn.CrossEntropyLoss", "cross-entropy"),
        "'sum'",
    ),
    ("run(lam=0.5, tau=0.07)\n", "lam", ("keyword", "lambda", 0.5, "0.5", "run", None), "0.5"),
    ("run(lam=0.5, tau=0.07)\n", "tau", ("keyword", "temperature", 0.07, "0.07", "run", None), "0.07"),
    ("train(optimizer='adamw')\n", "optimizer", ("keyword", "optimizer", "adamw", "'adamw'", "train", None), "'adamw'"),
]


@pytest.mark.parametrize(("source", "name", "expected", "at"), VALUE_CASES)
def test_value_sites(source, name, expected, at):
    index = _python(source)
    site = _site(index, name)
    assert (site.kind, site.normalized_name, site.value, site.raw, site.call, site.component) == expected
    assert (site.location.line, site.location.column) == _position(source, at)
    assert site.location.end_column == site.location.column + len(at)
    assert site.live and not site.overridden
    assert site.location.file == "train.py"


def test_a_tuple_is_kept_whole_and_as_its_settings():
    source = "import torch\nopt = torch.optim.AdamW(p, betas=(0.9, 0.95))\n"
    index = _python(source)
    whole, first, second = _sites(index, "betas") + _sites(index, "betas[0]") + _sites(index, "betas[1]")
    assert (whole.normalized_name, whole.value, whole.raw) == ("beta", "(0.9, 0.95)", "(0.9, 0.95)")
    assert (first.normalized_name, first.value, first.raw) == ("beta1", 0.9, "0.9")
    assert (second.normalized_name, second.value, second.raw) == ("beta2", 0.95, "0.95")
    assert (first.location.line, first.location.column) == _position(source, "0.9")
    assert (second.location.line, second.location.column) == _position(source, "0.95")
    assert {first.component, second.component} == {"AdamW"}


def test_a_square_size_is_its_side():
    assert _site(_python("image_size = (224, 224)\n"), "image_size").value == 224
    assert _site(_python("image_size = (224, 160)\n"), "image_size").value == "(224, 160)"


@pytest.mark.parametrize(
    ("source", "name", "normalized"),
    [
        ("import torch\nbn = torch.nn.BatchNorm2d(64, momentum=0.01)\n", "momentum", "bn_momentum"),  # not the optimizer's
        ("import torch\ns = torch.optim.lr_scheduler.StepLR(o, 30, gamma=0.1)\n", "gamma", "lr_decay_factor"),
        ("import torch\no = torch.optim.RMSprop(p, alpha=0.9)\n", "alpha", None),  # a smoothing constant
        ("import torch\no = torch.optim.SGD(p, 0.1, 0.9)\n", "momentum", "momentum"),
        ("from torch import nn\nn_ = nn.LayerNorm(64, 1e-6)\n", "eps", "epsilon"),
    ],
)
def test_a_known_callable_says_which_setting_each_parameter_is(source, name, normalized):
    assert _site(_python(source), name).normalized_name == normalized


def test_a_workspace_class_named_like_a_library_one_keeps_its_own_parameters():
    source = """
    class MultiHeadAttention:
        def __init__(self, dim, num_heads=8):
            self.dim = dim

    attention = MultiHeadAttention(512, 16)
    """
    index = _python(source)
    assert [c.name for c in index.components] == ["multi-head attention"]
    [call_site] = [site for site in index.values if site.kind == "positional"]
    assert (call_site.name, call_site.normalized_name, call_site.value) == ("num_heads", "num_heads", 16.0)


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("lr", "learning_rate"),
        ("LR", "learning_rate"),
        ("learningRate", "learning_rate"),
        ("--batch-size", "batch_size"),
        ("per_device_train_batch_size", "per_device_batch_size"),
        ("num_epochs", "epochs"),
        ("total_steps", "training_steps"),
        ("max_grad_norm", "grad_clip_norm"),
        ("attn_drop", "attention_dropout"),
        ("tau", "temperature"),
        ("eps", "epsilon"),
        ("lam", "lambda"),
        ("lambda_", "lambda"),
        ("lmbda", "lambda"),
        ("alpha", "alpha"),
        ("lambda_kl", "lambda_kl"),
        ("alpha1", "alpha_1"),
        ("seed", "seed"),
        ("p", None),  # only as a Dropout parameter
        ("dim", None),
        ("beta_schedule", None),
    ],
)
def test_code_names_normalize_to_the_paper_vocabulary(written, canonical):
    assert normalize_name(written) == canonical


# --- constant flow -------------------------------------------------------------------------------


def test_a_module_constant_flows_into_a_call():
    source = """
    import torch
    LEARNING_RATE = 3e-4

    def build(model):
        return torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    """
    index = _python(source)
    [site] = [s for s in index.values if s.kind == "keyword"]
    assert (site.value, site.raw, site.component) == (3e-4, "LEARNING_RATE", "AdamW")
    assert (site.resolved_from.line, site.resolved_from.column) == _position(source, "3e-4")


def test_a_local_value_flows_until_a_branch_may_change_it():
    source = """
    def train(flag):
        decay = 0.05
        first = make(weight_decay=decay)
        if flag:
            decay = 0.1
        second = make(weight_decay=decay)
        decay = 0.2
        third = make(weight_decay=decay)
    """
    index = _python(source)
    first, second, third = [site for site in index.values if site.kind == "keyword"]
    assert (first.value, second.value, third.value) == (0.05, None, 0.2)
    assert (first.resolved_from.line, third.resolved_from.line) == (
        _position(source, "0.05")[0],
        _position(source, "0.2")[0],
    )


def test_a_parameter_shadows_a_module_constant():
    source = """
    lr = 0.1
    def build(lr):
        return make(lr=lr)
    """
    [keyword] = [site for site in _python(source).values if site.kind == "keyword"]
    assert keyword.value is None and keyword.resolved_from is None


def test_a_default_overridden_at_the_call_site_is_marked_and_so_is_what_flows_from_it():
    source = """
    import torch

    def build(model, weight_decay=0.05):
        return torch.optim.AdamW(model.parameters(), weight_decay=weight_decay)

    optimizer = build(model, weight_decay=5e-4)
    """
    index = _python(source)
    default, inner, call = _sites(index, "weight_decay")
    assert (default.kind, default.value, default.overridden) == ("function-default", 0.05, True)
    assert (inner.value, inner.resolved_from, inner.overridden) == (0.05, default.location, True)
    assert (call.kind, call.value, call.call, call.overridden) == ("keyword", 5e-4, "build", False)


@pytest.mark.parametrize(
    ("call", "overridden"),
    [
        ("build(model)", False),
        ("build(model, 0.1)", True),  # by position
        ("build(model, **options)", True),  # anything may be passed
        ("functools.partial(build, temperature=0.1)", True),
        ("other(temperature=0.1)", False),
    ],
)
def test_which_calls_override_a_default(call, overridden):
    index = _python(f"import functools\ndef build(model, temperature=1.0):\n    return model\n{call}\n")
    [default] = [site for site in index.values if site.kind == "function-default"]
    assert default.overridden is overridden


def test_config_fields_and_command_line_defaults_replaced_by_assignments_are_overridden():
    source = """
    import argparse
    from dataclasses import dataclass

    @dataclass
    class Config:
        lr: float = 1e-3
        epochs: int = 100
        dropout: float = 0.1

    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", default=64)
    parser.add_argument("--seed", default=0)
    parser.set_defaults(seed=1)
    args = parser.parse_args()
    args.batch_size = 256
    config = Config(epochs=300)
    config.lr = 3e-4
    """
    index = _python(source)
    overridden = {site.name: site.overridden for site in index.values if site.kind.endswith("default")}
    assert overridden == {"lr": True, "epochs": True, "dropout": False, "--batch-size": True, "--seed": True}


# --- dead code -----------------------------------------------------------------------------------


def test_code_that_never_runs_is_not_live():
    source = """
    import torch
    from typing import TYPE_CHECKING
    USE_OLD_OPTIMIZER = False

    if TYPE_CHECKING:
        dropout = 0.5

    def build(model):
        if USE_OLD_OPTIMIZER:
            return torch.optim.SGD(model.parameters(), lr=0.1)
        else:
            return torch.optim.AdamW(model.parameters(), lr=3e-4)
        weight_decay = 0.3

    def _unused_helper(temperature=0.5):
        return temperature

    for step in range(10):
        continue
        momentum = 0.8

    while True:
        break
    else:
        epochs = 7

    if False:
        label_smoothing = 0.2
    """
    index = _python(source)
    live = {(site.normalized_name, site.value): site.live for site in index.values if site.normalized_name}
    assert live == {
        ("dropout", 0.5): False,  # if TYPE_CHECKING
        ("learning_rate", 0.1): False,  # the branch a constant rules out
        ("learning_rate", 3e-4): True,
        ("weight_decay", 0.3): False,  # after return
        ("temperature", 0.5): False,  # a private function nothing uses
        ("momentum", 0.8): False,  # after continue
        ("epochs", 7.0): False,  # the else of `while True`
        ("label_smoothing", 0.2): False,  # if False
    }
    assert {c.name: c.live for c in index.components} == {"SGD": False, "AdamW": True}


def test_a_default_read_for_a_condition_decides_nothing():
    index = _python("def f(use_ema=False):\n    if use_ema:\n        ema_decay = 0.999\n    return 0\n")
    assert _site(index, "ema_decay").live


def test_used_functions_and_main_stay_live():
    source = """
    def main(lr=0.1):
        return lr

    def _used(momentum=0.9):
        return momentum

    @register
    def _registered(eps=1e-8):
        return eps

    @staticmethod
    def _never_used(temperature=0.1):
        return temperature

    REGISTRY = {"x": _used}
    """
    index = _python(source)
    assert {site.name: site.live for site in index.values if site.kind == "function-default"} == {
        "lr": True,
        "momentum": True,
        "eps": True,
        "temperature": False,
    }
    assert {f.name: f.used_in_file for f in index.functions} == {
        "main": True,
        "_used": True,
        "_registered": True,
        "_never_used": False,
    }


# --- components ----------------------------------------------------------------------------------

GELU_SPELLINGS = [
    "import torch.nn as nn\na = nn.GELU()\n",
    "import torch.nn.functional as F\na = F.gelu(x)\n",
    "import torch\na = torch.nn.functional.gelu(x)\n",
    "import jax\na = jax.nn.gelu(x)\n",
    "import flax.linen as nn\na = nn.gelu(x)\n",
    "import tensorflow as tf\na = tf.keras.activations.gelu(x)\n",
    "from torch.nn import GELU\nact_layer = GELU\n",
    "from torch import nn\nblock = Block(act_layer=nn.GELU)\n",
]


@pytest.mark.parametrize("source", GELU_SPELLINGS)
def test_every_spelling_of_gelu_is_gelu(source):
    [component] = _python(source).components
    assert (component.kind, component.name) == ("activation", "GELU")
    assert component.location.line == 1


@pytest.mark.parametrize(
    ("source", "kind", "name", "symbol"),
    [
        ("import torch\no = torch.optim.AdamW(p)\n", "optimizer", "AdamW", "torch.optim.AdamW"),
        ("from torch import optim\no = optim.AdamW(p)\n", "optimizer", "AdamW", "optim.AdamW"),
        ("from torch.optim import AdamW\no = AdamW(p)\n", "optimizer", "AdamW", "AdamW"),
        ("import optax\no = optax.adamw(1e-3)\n", "optimizer", "AdamW", "optax.adamw"),
        (
            "from tensorflow import keras\no = keras.optimizers.AdamW()\n",
            "optimizer",
            "AdamW",
            "keras.optimizers.AdamW",
        ),
        ("from torch import nn\nn_ = nn.LayerNorm(8)\n", "normalization", "LayerNorm", "nn.LayerNorm"),
        ("import torch.nn.functional as F\ny = F.layer_norm(x, (8,))\n", "normalization", "LayerNorm", "F.layer_norm"),
        ("from torch import nn\nn_ = nn.BatchNorm1d(8)\n", "normalization", "BatchNorm", "nn.BatchNorm1d"),
        ("from torch import nn\nn_ = nn.GroupNorm(8, 64)\n", "normalization", "GroupNorm", "nn.GroupNorm"),
        ("from torch import nn\nl = nn.CrossEntropyLoss()\n", "loss", "cross-entropy", "nn.CrossEntropyLoss"),
        ("import torch.nn.functional as F\nl = F.cross_entropy(y, t)\n", "loss", "cross-entropy", "F.cross_entropy"),
        (
            "import optax\nl = optax.softmax_cross_entropy(y, t)\n",
            "loss",
            "cross-entropy",
            "optax.softmax_cross_entropy",
        ),
        ("import torch.nn.functional as F\nl = F.mse_loss(y, t)\n", "loss", "MSE", "F.mse_loss"),
        ("from torch import nn\nl = nn.KLDivLoss()\n", "loss", "KL divergence", "nn.KLDivLoss"),
        ("from torch import nn\nl = nn.BCEWithLogitsLoss()\n", "loss", "binary cross-entropy", "nn.BCEWithLogitsLoss"),
        (
            "import torch\ns = torch.optim.lr_scheduler.CosineAnnealingLR(o, 10)\n",
            "schedule",
            "cosine",
            "torch.optim.lr_scheduler.CosineAnnealingLR",
        ),
        (
            "import optax\ns = optax.cosine_decay_schedule(1e-3, 100)\n",
            "schedule",
            "cosine",
            "optax.cosine_decay_schedule",
        ),
        ("from torch import nn\nnn.init.xavier_uniform_(w)\n", "initialization", "Xavier", "nn.init.xavier_uniform_"),
        ("from torch import nn\nnn.init.kaiming_normal_(w)\n", "initialization", "Kaiming", "nn.init.kaiming_normal_"),
        (
            "from timm.layers import trunc_normal_\ntrunc_normal_(w, std=0.02)\n",
            "initialization",
            "truncated normal",
            "trunc_normal_",
        ),
        (
            "from torch import nn\np = nn.AdaptiveAvgPool2d(1)\n",
            "architecture",
            "global average pooling",
            "nn.AdaptiveAvgPool2d",
        ),
        ("import torch\ny = x.softmax(-1)\n", "activation", "softmax", "x.softmax"),
        ("train(optimizer='adamw_torch')\n", "optimizer", "AdamW", "adamw_torch"),
        ("layer = Dense(64, activation='relu')\n", "activation", "ReLU", "relu"),
        ("optimizer = dict(type='SGD', lr=0.1)\n", "optimizer", "SGD", "SGD"),
    ],
)
def test_components_are_recognized_through_imports_and_aliases(source, kind, name, symbol):
    [component] = _python(source).components
    assert (component.kind, component.name, component.symbol) == (kind, name, symbol)


def test_attributes_and_variables_named_like_components_are_not_components():
    source = """
    import torch
    class Block(torch.nn.Module):
        def forward(self, x, dropout):
            x = self.dropout(x)
            x = self.softmax(x)
            return dropout(x)
    """
    assert _python(source).components == []


def test_type_checks_and_annotations_use_no_component():
    source = """
    from torch import nn

    def init_weights(module: nn.LayerNorm) -> nn.Module:
        if isinstance(module, (nn.BatchNorm2d, nn.GroupNorm)):
            return module
        return nn.GELU()
    """
    assert [c.name for c in _python(source).components] == ["GELU"]


def test_a_library_argument_left_at_a_value_is_reported_with_the_library_default_known():
    index = _python("import torch\nl = torch.nn.CrossEntropyLoss(label_smoothing=0.1)\n")
    site = _site(index, "label_smoothing")
    assert (site.normalized_name, site.value, site.component) == ("label_smoothing", 0.1, "cross-entropy")
    signature = code_vocabulary().signature("torch.nn.CrossEntropyLoss")
    assert signature.defaults["label_smoothing"] == 0.0
    assert code_vocabulary().signature("torch.optim.AdamW").defaults == {
        "lr": 1e-3,
        "betas": [0.9, 0.999],
        "eps": 1e-8,
        "weight_decay": 0.01,
        "amsgrad": False,
    }
    assert code_vocabulary().signature("torch.optim.Adam").defaults["weight_decay"] == 0


# --- anchors -------------------------------------------------------------------------------------

ANCHOR_CASES = [
    ("# the loss of Eq. (3)", [("equation", "3")], "Eq. (3)"),
    ("# Eqs. 3-5", [("equation", "3"), ("equation", "4"), ("equation", "5")], "Eqs. 3-5"),
    ("# Eqs. (1)-(2)", [("equation", "1"), ("equation", "2")], "Eqs. (1)-(2)"),
    ("# Equation 7", [("equation", "7")], "Equation 7"),
    ("# eq. A.2", [("equation", "A.2")], "eq. A.2"),
    ("# as in eq:loss", [("label", "eq:loss")], "eq:loss"),
    (r"# see \ref{eq:loss}", [("label", "eq:loss")], r"\ref{eq:loss}"),
    (r"# see \eqref{eq:kl}", [("label", "eq:kl")], r"\eqref{eq:kl}"),
    (
        r"# \cref{sec:method,alg:train}",
        [("label", "sec:method"), ("label", "alg:train")],
        r"\cref{sec:method,alg:train}",
    ),
    ("# Sec. 3.2", [("section", "3.2")], "Sec. 3.2"),
    ("# Section 4", [("section", "4")], "Section 4"),
    ("# §3.2", [("section", "3.2")], "§3.2"),
    ("# Appendix B.1", [("section", "B.1")], "Appendix B.1"),
    ("# Algorithm 1", [("algorithm", "1")], "Algorithm 1"),
    ("# Alg. 2", [("algorithm", "2")], "Alg. 2"),
    ("# Table 2", [("table", "2")], "Table 2"),
    ("# (see Eq. 4)", [("equation", "4")], "Eq. 4"),
    ("# a sequence of 3 steps, frequency 2, sec: 30", [], None),
]


@pytest.mark.parametrize(("comment", "expected", "text"), ANCHOR_CASES)
def test_anchors_in_comments(comment, expected, text):
    source = f"x = 1  {comment}\n"
    anchors = _python(source).anchors
    assert [(a.target_kind, a.target) for a in anchors] == expected
    for anchor in anchors:
        assert anchor.text == text
        assert (anchor.location.line, anchor.location.column) == (0, source.index(text))
        assert anchor.location.end_column == source.index(text) + len(text)


def test_anchors_name_the_definition_they_document():
    source = '''
    """Module: Section 2."""
    text = "Eq. 9 in a string is no anchor"  # but Table 1 in its comment is

    # Eq. (3), above the definition
    @decorate
    def tempered_weight(m, tau=1.0):
        """The weight of Eq. (4)."""
        # inside it: Algorithm 1
        return m

    class ConsistencyLoss:
        """Eq. (5)."""

        def forward(self, h):
            return h  # Eq. 6
    '''
    found = [(a.target_kind, a.target, a.function) for a in _python(source).anchors]
    assert found == [
        ("section", "2", None),
        ("table", "1", None),
        ("equation", "3", "tempered_weight"),
        ("equation", "4", "tempered_weight"),
        ("algorithm", "1", "tempered_weight"),
        ("equation", "5", "ConsistencyLoss"),
        ("equation", "6", "ConsistencyLoss.forward"),
    ]


def test_functions_are_located_with_their_parameters():
    source = """
    class Block:
        def __init__(self, dim, drop=0.0):
            pass

        @staticmethod
        def helper(x, y):
            return x
    """
    functions = {f.qualname: f for f in _python(source).functions}
    assert functions["Block"].parameters == ["dim", "drop"]
    assert functions["Block.__init__"].parameters == ["dim", "drop"]
    assert functions["Block.helper"].parameters == ["x", "y"]
    assert (functions["Block"].location.line, functions["Block"].location.end_line) == (1, 7)
    assert functions["Block.__init__"].kind == "function" and functions["Block"].kind == "class"


def test_columns_count_characters_not_bytes():
    source = "températures = {'é': 1, 'temperature': 0.07}\n"
    site = _site(_python(source), "temperature")
    assert (site.location.column, site.location.end_column) == (source.index("0.07"), source.index("0.07") + 4)


# --- syntax errors -------------------------------------------------------------------------------


def test_a_syntax_error_keeps_what_can_be_read_before_and_after_it():
    source = """
    LEARNING_RATE = 3e-4

    def broken(:
        dropout = 0.1
        return dropout
    x = = 1

    weight_decay = 0.05
    """
    index = _python(source)
    [problem] = index.problems
    assert problem.severity == "error"
    assert problem.message.startswith("train.py:4:")
    assert problem.location.line == 3
    values = {site.name: (site.value, site.location.line) for site in index.values}
    assert values == {"LEARNING_RATE": (3e-4, 1), "dropout": (0.1, 4), "weight_decay": (0.05, 8)}


def test_an_unreadable_file_gives_a_problem_not_an_exception():
    index = _python('lr = 1e-3\ns = """never closed\n')
    assert index.problems and index.problems[0].severity == "error"
    assert _site(index, "lr").value == 1e-3
    assert index_python("n.py", "lr = 0.1\n\0\n").problems[0].message.startswith("n.py:2:")


# --- config files --------------------------------------------------------------------------------


def test_yaml_settings_are_flattened_located_and_normalized():
    source = textwrap.dedent(
        """\
        # Table 3 settings
        optimizer:
          _target_: torch.optim.AdamW
          lr: 3e-4
          betas: [0.9, 0.95]
        model:
          dropout: 0.1
          act: gelu
        scheduler:
          name: cosine
          min_lr: ${optimizer.lr}
        """
    )
    index = index_config("conf/train.yaml", source, "yaml")
    lr = _site(index, "optimizer.lr")
    assert (lr.kind, lr.normalized_name, lr.value, lr.raw, lr.call, lr.component) == (
        "config-file",
        "learning_rate",
        3e-4,
        "3e-4",
        "torch.optim.AdamW",
        "AdamW",
    )
    assert (lr.location.line, lr.location.column) == (3, 6)
    assert _site(index, "optimizer.betas[1]").value == 0.95
    assert _site(index, "model.dropout").normalized_name == "dropout"
    min_lr = _site(index, "scheduler.min_lr")
    assert (min_lr.value, min_lr.resolved_from) == (3e-4, lr.location)
    assert {(c.kind, c.name) for c in index.components} == {
        ("optimizer", "AdamW"),
        ("activation", "GELU"),
        ("schedule", "cosine"),
    }
    assert [(a.target_kind, a.target) for a in index.anchors] == [("table", "3")]
    assert [(c.callee, c.keywords) for c in index.calls] == [("AdamW", ["betas", "lr"])]


@pytest.mark.parametrize(
    ("path", "language", "source", "name", "value", "line", "column"),
    [
        ("c.json", "json", '{\n  "train": {"epochs": 90,\n    "lr": 0.1}\n}\n', "train.lr", 0.1, 2, 10),
        ("c.toml", "toml", "seed = 1\n[optimizer]\nweight_decay = 0.05\n", "optimizer.weight_decay", 0.05, 2, 15),
        ("c.toml", "toml", "[[runs]]\nlr = 1\n[[runs]]\nlr = 2\n", "runs[1].lr", 2.0, 3, 5),
        ("c.ini", "ini", "[optim]\nmomentum: 0.9\nuse_ema = yes\n", "optim.momentum", 0.9, 1, 10),
        ("c.ini", "ini", "[optim]\nmomentum: 0.9\nuse_ema = yes\n", "optim.use_ema", True, 2, 10),
    ],
)
def test_json_toml_and_ini_settings_are_located(path, language, source, name, value, line, column):
    site = _site(index_config(path, source, language), name)
    assert (site.value, site.location.line, site.location.column) == (value, line, column)


@pytest.mark.parametrize(
    ("language", "source", "line"),
    [
        ("yaml", "optimizer:\n  lr: [1, 2\nepochs: 3\n", 3),  # where the parser found it out
        ("json", '{"a": 1,\n "b": }\n', 2),
        ("toml", "a = 1\nb = = 2\n", 2),
        ("ini", "lr = 0.1\n", 1),
    ],
)
def test_a_malformed_config_is_a_problem(language, source, line):
    index = index_config(f"bad.{language}", source, language)
    [problem] = index.problems
    assert problem.severity == "error"
    assert problem.message.startswith(f"bad.{language}:{line}:")


# --- the workspace -------------------------------------------------------------------------------


def _workspace(root: Path, files: dict[str, str | bytes]) -> Path:
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(textwrap.dedent(content), encoding="utf-8")
    return root


MODEL = """
import torch

def build_optimizer(model, weight_decay=0.05):
    return torch.optim.AdamW(model.parameters(), weight_decay=weight_decay)

def legacy_optimizer(model, momentum=0.9):
    return torch.optim.SGD(model.parameters(), lr=0.1, momentum=momentum)
"""
TRAIN = """
import yaml
from model import build_optimizer

config = yaml.safe_load(open("configs/train.yaml"))
optimizer = build_optimizer(net, weight_decay=5e-4)
"""


def test_the_workspace_settles_what_files_say_about_each_other(tmp_path):
    root = _workspace(
        tmp_path,
        {"model.py": MODEL, "train.py": TRAIN, "configs/train.yaml": "lr: 3.0e-4\n", "notes/broken.py": "def f(:\n"},
    )
    index = index_workspace(root)
    files = {file.file: file for file in index.files}
    assert list(files) == ["configs/train.yaml", "model.py", "notes/broken.py", "train.py"]
    model = files["model.py"]
    # Called from train.py with another value: overridden. Never used anywhere: dead.
    assert {(s.name, s.value): (s.overridden, s.live) for s in model.values if s.kind == "function-default"} == {
        ("weight_decay", 0.05): (True, True),
        ("momentum", 0.9): (False, False),
    }
    # Read alone, a public function may be imported by anyone: live, and not overridden.
    alone = index_file(root, "model.py")
    assert all(site.live and not site.overridden for site in alone.values if site.kind == "function-default")
    [reference] = files["train.py"].config_references
    assert (reference.path, reference.resolved) == ("configs/train.yaml", "configs/train.yaml")
    # A broken file is a problem of its own: every other file is read in full.
    assert files["notes/broken.py"].problems and not any(f.problems for p, f in files.items() if p != "notes/broken.py")


def test_calls_from_other_files_override_by_position_and_configs_keep_classes_in_use(tmp_path):
    root = _workspace(
        tmp_path,
        {
            "model.py": MODEL + "\nclass Head:\n    def __init__(self, dim, dropout=0.1):\n        self.dim = dim\n",
            "train.py": "from model import build_optimizer\nbuild_optimizer(net, 1e-4)\n",
            "conf/model.yaml": "head:\n  _target_: model.Head\n  dim: 64\n",
        },
    )
    model = next(file for file in index_workspace(root).files if file.file == "model.py")
    defaults = {s.name: (s.overridden, s.live) for s in model.values if s.kind == "function-default"}
    # weight_decay is build_optimizer's second parameter; Head is built by the config, never with dropout.
    assert defaults == {"weight_decay": (True, True), "momentum": (False, False), "dropout": (False, True)}


def test_a_file_rewritten_right_after_it_was_read_is_read_again(tmp_path):
    root = _workspace(tmp_path, {"a.py": "lr = 0.1\n"})
    first = index_workspace(root)
    status = (root / "a.py").stat()
    (root / "a.py").write_text("lr = 0.2\n", encoding="utf-8")  # same size, and the same time:
    os.utime(root / "a.py", ns=(status.st_atime_ns, status.st_mtime_ns))
    [file] = index_workspace(root, previous=first).files
    assert [site.value for site in file.values] == [0.2]


def test_re_indexing_reuses_every_untouched_file(tmp_path):
    root = _workspace(tmp_path, {"model.py": MODEL, "train.py": TRAIN, "other.py": "seed = 0\n"})
    first = index_workspace(root)
    (root / "train.py").write_text(TRAIN.replace("weight_decay=5e-4", "lr=1e-3"), encoding="utf-8")
    second = index_workspace(root, previous=first)
    before, after = ({f.file: f for f in index.files} for index in (first, second))
    assert after["other.py"] is before["other.py"]
    assert after["train.py"] is not before["train.py"]
    # The edit removed the call that overrode model.py's default: model.py is settled again.
    [default] = [s for s in after["model.py"].values if s.name == "weight_decay" and s.kind == "function-default"]
    assert not default.overridden
    # Nothing changed: every file the very same object.
    third = index_workspace(root, previous=second)
    assert all(new is old for new, old in zip(third.files, second.files, strict=True))


def test_reindex_takes_an_editors_unsaved_text(tmp_path):
    root = _workspace(tmp_path, {"model.py": MODEL, "train.py": TRAIN, "other.py": "seed = 0\n"})
    first = index_workspace(root)
    second = reindex(first, ["train.py"], {"train.py": "from model import build_optimizer\nbuild_optimizer(m)\n"})
    before, after = ({f.file: f for f in index.files} for index in (first, second))
    assert after["other.py"] is before["other.py"]
    assert [c.callee for c in after["train.py"].calls] == ["build_optimizer"]
    (root / "other.py").unlink()
    assert [f.file for f in reindex(second, ["other.py"]).files] == ["model.py", "train.py"]


def test_which_files_are_read(tmp_path):
    root = _workspace(
        tmp_path,
        {
            "src/a.py": "x = 1\n",
            "conf/b.yml": "a: 1\n",
            "c.cfg": "[a]\nb = 1\n",
            ".venv/lib/d.py": "x = 1\n",
            "node_modules/e.json": "{}\n",
            ".hidden/f.py": "x = 1\n",
            "build/g.py": "x = 1\n",
            "src/__pycache__/h.py": "x = 1\n",
            "data/big.json": "{}\n",
            "README.md": "# launchers' commands\n",
            "notes.txt": "not read\n",
        },
    )
    assert workspace_files(root) == ["README.md", "c.cfg", "conf/b.yml", "data/big.json", "src/a.py"]
    assert workspace_files(root, exclude=["data", "*.md"]) == ["c.cfg", "conf/b.yml", "src/a.py"]
    assert workspace_files(root, include=["**/*.py"]) == ["src/a.py"]
    assert workspace_files(root, include=["conf/*.yml"]) == ["conf/b.yml"]


def test_oversized_and_undecodable_files_are_problems(tmp_path):
    root = _workspace(tmp_path, {"latin.py": "lr = 0.1  # caf\xe9\n".encode("latin-1"), "ok.py": "lr = 0.1\n"})
    (root / "huge.json").write_bytes(b"[" + b"1," * (1024 * 1024) + b"1]")
    files = {f.file: f for f in index_workspace(root).files}
    assert "not UTF-8" in files["latin.py"].problems[0].message
    assert "larger than 2 MB" in files["huge.json"].problems[0].message
    assert files["huge.json"].values == [] and not files["ok.py"].problems


def test_a_language_is_told_by_the_extension():
    assert index_source("a.yml", "lr: 0.1\n").language == "yaml"
    assert index_source("setup.cfg", "[a]\nlr = 0.1\n").language == "ini"
    assert index_source("a.py", "lr = 0.1\n").language == "python"


# --- the knowledge file --------------------------------------------------------------------------


def _knowledge(name: str) -> dict:
    return yaml.safe_load((KNOWLEDGE_DIR / name).read_text(encoding="utf-8"))


def test_code_names_use_the_paper_vocabulary():
    code = _knowledge("code.yaml")
    settings = set(_knowledge("hyperparameters.yaml")["hyperparameters"])
    symbols = set(code["greek"].values())  # named as the paper side names a symbol (λ → lambda)
    known = settings | symbols | set(code["code_only_names"])
    assert set(code["names"]) - settings == set(code["code_only_names"])
    signatures = [s for components in code["callables"].values() for ss in components.values() for s in ss]
    for signature in signatures + code["signatures"]:
        assert {value for value in signature["settings"].values() if value} <= known, signature["symbols"]
    assert set(code["text_settings"]) - settings <= {"loss", "loss_fn", "loss_type", "criterion", "objective"}


def test_components_use_the_paper_vocabulary():
    code = _knowledge("code.yaml")
    paper = _knowledge("components.yaml")
    for kind, components in code["callables"].items():
        unknown = set(components) - set(paper[kind])
        assert unknown <= set(code["code_only_components"]), (kind, unknown)
    for kind, components in code["text_values"].items():
        assert set(components) <= set(paper[kind]), kind


def test_the_vocabulary_is_loaded_once():
    assert code_vocabulary() is code_vocabulary()

"""The checks' rules on hand-made code sites against the example paper, and the decisions file."""

from __future__ import annotations

from pathlib import Path

import pytest

from paperlens.pipeline.check import check
from paperlens.pipeline.decisions import DECISIONS_PATH, load_decisions, save_decisions
from paperlens.pipeline.errors import DecisionsError, WorkspaceError
from paperlens.pipeline.ingest import read_paper
from paperlens.pipeline.workspace import find_paper, load_settings
from paperlens.schemas import (
    Anchor,
    Assumption,
    Clarification,
    CodeIndex,
    CodeLocation,
    ComponentSite,
    DecisionsFile,
    Deviation,
    FileIndex,
    FunctionSite,
    ValueSite,
)

from .conftest import EXAMPLE_PAPER


@pytest.fixture(scope="module")
def paper():
    return read_paper(EXAMPLE_PAPER)


def _site(name: str, value, raw: str, *, line: int = 0, **fields) -> ValueSite:
    return ValueSite(name=name, value=value, raw=raw, kind=fields.pop("kind", "keyword"), location=CodeLocation(file="train.py", line=line, column=0), **fields)


def _run(tmp_path: Path, paper, values=(), components=(), anchors=(), decisions: DecisionsFile | None = None, source: str = ""):
    (tmp_path / "train.py").write_text(source)
    index = CodeIndex(
        root=str(tmp_path),
        files=[FileIndex(file="train.py", sha256="x", language="python", values=list(values), components=list(components), anchors=list(anchors))],
    )
    return check(tmp_path, paper, index, decisions or DecisionsFile())


def test_a_value_that_differs_is_a_divergence_with_both_sides_and_an_edit(tmp_path, paper):
    source = "opt = AdamW(params, weight_decay=5e-4)\n"
    site = _site("weight_decay", 5e-4, "5e-4", normalized_name="weight_decay", component="AdamW")
    [finding] = _run(tmp_path, paper, [site], source=source).findings
    assert (finding.kind, finding.severity, finding.code_value, finding.paper_value) == ("divergence", "error", "5e-4", "0.05")
    assert any("weight decay of 0.05" in e.quote for e in finding.paper)
    edit = finding.fixes[0].edit
    assert (edit.location.column, edit.location.end_column, edit.new_text) == (33, 37, "0.05")
    assert source.splitlines()[0][edit.location.column : edit.location.end_column] == "5e-4"


def test_matching_equivalent_overridden_and_dead_values_are_silent(tmp_path, paper):
    silent = [
        _site("lr", 3e-4, "3e-4", normalized_name="learning_rate"),
        _site("lr", 0.0003, "0.0003", normalized_name="learning_rate"),
        _site("label_smoothing", 10.0, "10", normalized_name="label_smoothing"),  # 10% written as 10
        _site("inv_tau", 2.0, "2.0", normalized_name="temperature"),  # the reciprocal, named as such
        _site("tau", 1.0, "1.0", normalized_name="temperature", kind="function-default", overridden=True),
        _site("weight_decay", 5e-4, "5e-4", normalized_name="weight_decay", live=False),
        _site("batch_size", 256, "256", normalized_name="batch_size"),
    ]
    assert _run(tmp_path, paper, silent).findings == []


def test_a_setting_the_paper_states_twice_is_information_and_says_why(tmp_path, paper):
    [finding] = _run(tmp_path, paper, [_site("batch_size", 64, "64", normalized_name="batch_size")]).findings
    assert finding.confidence == 0.5 and finding.severity == "info"
    assert "several values (128, 256); which experiment this code runs is not known" in finding.confidence_note


def test_guesses_cite_where_the_paper_needs_the_value(tmp_path, paper):
    sites = [
        _site("rho", 0.1, "0.1", normalized_name="rho", kind="function-default"),
        _site("beta2", 0.999, "0.999", normalized_name="beta2", component="AdamW"),
        _site("seed", 0, "0", normalized_name="seed"),  # the paper never mentions seeds: silence
    ]
    findings = {f.setting: f for f in _run(tmp_path, paper, sites).findings}
    # `rho` spells the paper's ρ, but a name is no evidence that the value is the equation's ρ (on
    # the official repositories every such guess was a guard, a tolerance or another ε): silence.
    assert set(findings) == {"beta2"}
    assert findings["beta2"].kind == "guess" and "AdamW" in findings["beta2"].paper[0].quote
    assert [fix.kind for fix in findings["beta2"].fixes] == ["record-assumption", "ask-authors"]
    # Unless its own function cites an equation that uses ρ.
    rho = _site("rho", 0.1, "0.1", normalized_name="rho", kind="function-default", call="ConsistencyLoss.__init__")
    cites = Anchor(text="Eq. (4)", target_kind="equation", target="4", function="ConsistencyLoss", location=CodeLocation(file="train.py", line=0))
    [guess] = _run(tmp_path, paper, [rho], anchors=[cites]).findings
    assert guess.kind == "guess" and "\\rho" in guess.paper[0].quote
    cites_another = cites.model_copy(update={"target": "1"})
    assert _run(tmp_path, paper, [rho], anchors=[cites_another]).findings == []


def test_a_bare_name_several_kinds_of_component_share_is_no_guess(tmp_path, paper):
    sites = [
        _site("eps", 1e-6, "1e-6", normalized_name="epsilon", kind="function-default"),  # a guard? a norm's?
        _site("norm_eps", 1e-5, "1e-5", normalized_name="epsilon"),  # a norm's, by its name
        _site("eps", 1e-6, "1e-6", normalized_name="epsilon", component="LayerNorm"),  # a norm's, by its call
    ]
    assert _run(tmp_path, paper, sites).findings == []
    [guess] = _run(tmp_path, paper, [_site("opt_eps", 1e-8, "1e-8", normalized_name="epsilon")]).findings
    assert guess.kind == "guess" and guess.setting == "epsilon"


def test_another_optimizer_than_the_papers_is_a_divergence(tmp_path, paper):
    adam = ComponentSite(kind="optimizer", name="Adam", symbol="torch.optim.Adam", location=CodeLocation(file="train.py", line=3))
    [finding] = _run(tmp_path, paper, components=[adam]).findings
    assert finding.message == "torch.optim.Adam is Adam, but the paper uses AdamW"
    adamw = adam.model_copy(update={"name": "AdamW", "symbol": "torch.optim.AdamW"})
    assert _run(tmp_path, paper, components=[adamw, adam]).findings == []  # the paper's one is used too


def _anchor(kind: str, target: str) -> Anchor:
    return Anchor(text=target, target_kind=kind, target=target, location=CodeLocation(file="train.py", line=0))


def test_unimplemented_method_equations_only_once_the_code_cites_equations_as_a_habit(tmp_path, paper):
    assert _run(tmp_path, paper).findings == []
    # One citation of five method equations says nothing of the other four.
    assert _run(tmp_path, paper, anchors=[_anchor("equation", "3")]).findings == []
    cited = [_anchor("equation", n) for n in ("1", "2", "3")] + [_anchor("algorithm", "2")]
    unimplemented = {f.id for f in _run(tmp_path, paper, anchors=cited).findings}
    # The method's uncited equations and algorithm; not the appendix's derivation (Eq. 6).
    assert unimplemented == {"unimplemented:equation:4", "unimplemented:equation:5", "unimplemented:algorithm:1"}


def test_decisions_record_findings_and_answers_become_the_paper(tmp_path, paper):
    sites = [
        _site("weight_decay", 5e-4, "5e-4", normalized_name="weight_decay"),
        _site("beta2", 0.95, "0.95", normalized_name="beta2", component="AdamW"),
        _site("eps", 1e-6, "1e-6", normalized_name="epsilon", line=2),
    ]
    decisions = DecisionsFile(
        deviations=[Deviation(id="d1", setting="weight_decay", code_value="5e-4", reason="matches our baseline")],
        assumptions=[Assumption(id="a1", setting="beta2", reason="no value in the paper")],
        clarifications=[
            Clarification(id="c1", question="Which ε?", status="answered", setting="epsilon", answer="1e-8", value=1e-8, source="email")
        ],
    )
    findings = {f.setting: f for f in _run(tmp_path, paper, sites, decisions=decisions).findings}
    assert (findings["weight_decay"].status, findings["weight_decay"].decision) == ("recorded", "d1")
    assert (findings["beta2"].status, findings["beta2"].decision) == ("recorded", "a1")
    answer = findings["epsilon"]
    assert answer.kind == "divergence" and answer.status == "open" and "an author's answer" in answer.message
    assert answer.paper[0].location.file == ".paperlens/decisions.yaml" and "(email)" in answer.paper[0].quote


# -- the decisions file ---------------------------------------------------------------------------


def test_decisions_round_trip_atomically(tmp_path):
    decisions = DecisionsFile(assumptions=[Assumption(id="a1", setting="rho", value="0.1", reason="paper silent")])
    path = save_decisions(tmp_path, decisions)
    assert path == tmp_path / DECISIONS_PATH
    assert load_decisions(tmp_path) == decisions
    assert "setting: rho" in path.read_text() and not list(path.parent.glob(".decisions-*"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("deviations: [\n  - id: d1\n", ".paperlens/decisions.yaml:2:3"),
        ("deviations:\n  - id: d1\n    setting: lr\n", "deviations.0.reason: Field required"),
        ("version: 2\n", "version"),
        ("surprise: true\n", "surprise: Extra inputs are not permitted"),
    ],
)
def test_a_malformed_decisions_file_is_a_clear_error_and_is_never_overwritten(tmp_path, text, message):
    path = tmp_path / DECISIONS_PATH
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(DecisionsError) as raised:
        load_decisions(tmp_path)
    assert message in str(raised.value)
    with pytest.raises(DecisionsError):
        save_decisions(tmp_path, DecisionsFile())
    assert path.read_text() == text


# -- workspace settings ---------------------------------------------------------------------------


def test_settings_from_pyproject_and_paperlens_toml(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.paperlens]\npaper = "docs/paper.tex"\ninclude = ["src/**/*.py"]\n')
    assert load_settings(tmp_path).paper == "docs/paper.tex"
    (tmp_path / ".paperlens.toml").write_text('paper = "other.pdf"\n')
    assert load_settings(tmp_path).paper == "other.pdf"


@pytest.mark.parametrize(
    ("text", "message"),
    [("[tool.paperlens\n", "not valid TOML"), ('[tool.paperlens]\npaper = 3\n', "paper: Input should be a valid string"), ('[tool.paperlens]\npapr = "x"\n', "papr")],
)
def test_malformed_settings_are_one_clear_error(tmp_path, text, message):
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(WorkspaceError, match=message):
        load_settings(tmp_path)


def test_the_paper_is_found_from_settings_or_a_paper_folder(tmp_path):
    configured = load_settings(tmp_path).model_copy(update={"paper": "paper"})
    assert find_paper(EXAMPLE_PAPER.parent, configured) == EXAMPLE_PAPER
    (tmp_path / "paper").mkdir()
    assert find_paper(tmp_path, load_settings(tmp_path)) == tmp_path / "paper"
    with pytest.raises(WorkspaceError, match="missing.tex: no such file"):
        find_paper(tmp_path, load_settings(tmp_path).model_copy(update={"paper": "missing.tex"}))


def test_a_config_value_is_trusted_more_when_code_loads_the_file(tmp_path, paper):
    from paperlens.schemas import ConfigReference

    site = ValueSite(
        name="optimizer.weight_decay", normalized_name="weight_decay", value=5e-4, raw="5e-4", kind="config-file",
        location=CodeLocation(file="conf.yaml", line=1, column=16),
    )  # fmt: skip
    config = FileIndex(file="conf.yaml", sha256="y", language="yaml", values=[site])
    loader = FileIndex(
        file="train.py", sha256="x", language="python",
        config_references=[ConfigReference(path="conf.yaml", resolved="conf.yaml", location=CodeLocation(file="train.py", line=3))],
    )  # fmt: skip
    (tmp_path / "conf.yaml").write_text("optimizer:\n  weight_decay: 5e-4\n")
    unread = check(tmp_path, paper, CodeIndex(root=str(tmp_path), files=[config]), DecisionsFile()).findings[0]
    read = check(tmp_path, paper, CodeIndex(root=str(tmp_path), files=[config, loader]), DecisionsFile()).findings[0]
    assert unread.confidence == 0.8 and "no code is seen to load" in unread.confidence_note
    assert read.confidence == 0.9 and read.confidence_note is None
    assert read.fixes[0].edit.new_text == "0.05"


def test_anchors_numbered_against_another_document_silence_unimplemented(tmp_path, paper):
    stray = Anchor(text="Eq. (12)", target_kind="equation", target="12", location=CodeLocation(file="train.py", line=0))
    assert not [f for f in _run(tmp_path, paper, anchors=[stray]).findings if f.kind == "unimplemented"]


def test_a_plotting_alpha_is_not_the_papers_alpha(tmp_path, paper):
    plotting = _site("alpha", 0.5, "0.5", normalized_name="alpha", call="plt.plot")
    method = _site("alpha", 0.2, "0.2", normalized_name="alpha", call="mix_batch", line=3)
    function = FunctionSite(name="mix_batch", qualname="mix_batch", kind="function", location=CodeLocation(file="train.py", line=5))
    (tmp_path / "train.py").write_text("")
    index = CodeIndex(root=str(tmp_path), files=[FileIndex(file="train.py", sha256="x", language="python", values=[plotting, method], functions=[function])])
    findings = check(tmp_path, paper, index, DecisionsFile()).findings
    assert [(f.setting, f.code_value) for f in findings] == [("alpha", "0.2")]


def test_recording_a_finding_adds_the_next_decision(tmp_path, paper):
    from paperlens.pipeline.decisions import record

    site = _site("weight_decay", 5e-4, "5e-4", normalized_name="weight_decay")
    [finding] = _run(tmp_path, paper, [site]).findings
    decisions = record(DecisionsFile(deviations=[Deviation(id="d1", setting="lr", reason="x")]), finding, "because")
    added = decisions.deviations[-1]
    assert (added.id, added.setting, added.code_value, added.paper_value, added.file) == ("d2", "weight_decay", "5e-4", "0.05", "train.py")


EVALUATION_PAPER = "# Small nets\n\n## 1 Setup\n\nWe train for 10 epochs with SGD, a learning rate of 0.1 and a batch size of 128.\n"
EVALUATION_CODE = """\
from torch.utils.data import DataLoader

EVAL_BATCH_SIZE = 1024


def evaluate(test_set):
    return DataLoader(test_set, batch_size=512)


def train_and_evaluate(data):
    return DataLoader(data, batch_size=32)  # training


class Predictor:
    def fit(self, data):
        return DataLoader(data, batch_size=48)  # training


val_loader = DataLoader(None, batch_size=EVAL_BATCH_SIZE)
test_loader = DataLoader(None, batch_size=2048)
held_out = DataLoader(valid_dataset, 96)
train_loader = DataLoader(train_set, batch_size=64, shuffle=True)  # training
split_loader = DataLoader(train_val_split, batch_size=80)  # training
evaluate(None)
train_and_evaluate(None)
Predictor().fit(None)
"""
EVALUATION_CONFIG = (
    "train:\n  batch_size: 16  # training\n"
    "eval:\n  batch_size: 512\n"
    "val:\n  batch_size: 256\n"
    "test_run:\n  training:\n    batch_size: 24  # training\n"
)


def test_a_batch_size_for_evaluation_is_not_the_papers_training_batch_size(tmp_path):
    """The paper tells the evaluation batch size from the batch size; so does the code's context,
    nearest first: the name the value is read from, the loader it builds, the data it goes with,
    the function it is in. A name that says training wins (train_and_evaluate, train_val_split)."""
    from paperlens.pipeline.code import index_workspace

    (tmp_path / "paper.md").write_text(EVALUATION_PAPER)
    (tmp_path / "pyproject.toml").write_text('[tool.paperlens]\npaper = "paper.md"\n')
    (tmp_path / "train.py").write_text(EVALUATION_CODE + "import yaml\ncfg = yaml.safe_load(open('config.yaml'))\n")
    (tmp_path / "config.yaml").write_text(EVALUATION_CONFIG)
    spec = read_paper(tmp_path / "paper.md", use_cache=False)
    report = check(tmp_path, spec, index_workspace(tmp_path), DecisionsFile())
    flagged = sorted((f.code.file, f.code.line) for f in report.findings if f.setting == "batch_size")
    expected = [
        (file, number)
        for file, text in (("config.yaml", EVALUATION_CONFIG), ("train.py", EVALUATION_CODE))
        for number, line in enumerate(text.splitlines())
        if line.endswith("# training")
    ]
    assert flagged == expected and len(expected) == 6  # the training ones, and only they


def test_an_attribute_another_function_counts_with_starts_a_count_not_a_setting(tmp_path):
    """`self.warmup_steps = 0` in a class is the paper's 500 warm-up steps only until some code, in
    another function or file, adds to it (`trainer.warmup_steps += 1`): then it is a counter."""
    from paperlens.pipeline.code import index_workspace

    (tmp_path / "paper.md").write_text(
        "# Small nets\n\n## 1 Setup\n\nWe train for 10 epochs with a learning rate of 0.1 and 500 warm-up steps.\n"
    )
    (tmp_path / "trainer.py").write_text(
        "class Trainer:\n    def __init__(self):\n        self.warmup_steps = 0\n        self.lr = 0.05\n        self.epochs = 100\n"
    )
    counting = "from trainer import Trainer\n\n\ndef bump(trainer):\n    trainer.warmup_steps += 1\n    trainer.epochs += 1\n\n\nbump(Trainer())\n"
    (tmp_path / "train.py").write_text(counting)
    spec = read_paper(tmp_path / "paper.md", use_cache=False)

    def flagged(index):
        findings = check(tmp_path, spec, index, DecisionsFile()).findings
        return sorted((f.code.file, f.setting) for f in findings if f.kind == "divergence")

    index = index_workspace(tmp_path)
    # The counter from zero is silent; 100 epochs is a setting whatever adds to an `epochs` elsewhere.
    assert flagged(index) == [("trainer.py", "epochs"), ("trainer.py", "learning_rate")]
    (tmp_path / "train.py").write_text(counting.replace("trainer.warmup_steps += 1", "print(trainer)"))
    index = index_workspace(tmp_path, previous=index)  # trainer.py unchanged: settled again all the same
    assert flagged(index) == [("trainer.py", "epochs"), ("trainer.py", "learning_rate"), ("trainer.py", "warmup_steps")]

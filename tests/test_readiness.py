"""Readiness: the gaps that must be found, with their evidence, and the stated settings that must not be."""

from __future__ import annotations

from pathlib import Path

import pytest

from paperlens.pipeline.ingest import read_paper
from paperlens.pipeline.readiness import assess
from paperlens.pipeline.repo.plan import plan_repository
from paperlens.schemas import DecisionsFile, Gap, ReadinessReport

from .conftest import EXAMPLE_PAPER, LATEX_PAPERS, PDF_PAPERS


def _gap(report: ReadinessReport, gap_id: str) -> Gap:
    found = [g for g in report.gaps if g.id == gap_id]
    assert found, f"{gap_id} not among {[g.id for g in report.gaps]}"
    return found[0]


def _settings_reported(report: ReadinessReport) -> set[str]:
    return {g.setting for g in report.gaps if g.kind == "unstated-setting"}


def _paper(tmp_path: Path, body: str) -> ReadinessReport:
    (tmp_path / "main.tex").write_text("\\documentclass{article}\\begin{document}\n" + body + "\n\\end{document}\n")
    return assess(read_paper(tmp_path / "main.tex", use_cache=False))


# -- the example paper: its README lists the deliberate gaps --------------------------------------


@pytest.fixture(scope="module", params=["main.tex", "paper.pdf"])
def example(request) -> ReadinessReport:
    return assess(read_paper(EXAMPLE_PAPER / request.param))


def test_example_conflicting_batch_size_cites_both_statements(example):
    conflict = _gap(example, "conflicting-values:batch_size")
    assert conflict.blocking and conflict.type == "Inconsistency"
    quotes = [e.quote for e in conflict.evidence]
    assert any("batch size of 128" in q for q in quotes) and any("256" in q and "Batch size" in q for q in quotes)
    assert conflict.rank == 1


def test_example_undefined_rho_points_at_equation_4(example):
    rho = _gap(example, "undefined-symbol:ρ")
    assert rho.blocking and rho.category == "Ambiguous Definition"
    assert "Eq. (4)" in rho.question


def test_example_ambiguous_wording_with_readings(example):
    augmentation = next(g for g in example.gaps if g.kind == "ambiguous-wording" and "standard augmentation" in g.title)
    assert augmentation.blocking and augmentation.readings and augmentation.conventions
    assert all(c.answer for c in augmentation.conventions)
    normalize = next(g for g in example.gaps if g.kind == "ambiguous-wording" and "normalize the features" in g.title)
    assert not normalize.blocking  # the formula in the same sentence fixes the form


def test_a_normalisation_to_unit_length_says_which(tmp_path):
    def asked(sentence: str) -> bool:
        gaps = _assess_text(tmp_path, "\\section{Method}\n" + sentence).gaps
        return any("which normalisation" in g.title for g in gaps)

    assert asked("We normalize the features before the classifier.")
    assert not asked("We normalize the features to unit length before the classifier.")
    assert not asked("We L2-normalize the features before the classifier.")


def test_example_routine_adamw_defaults_and_stated_settings_stay_quiet(example):
    reported = _settings_reported(example)
    assert not {"learning_rate", "weight_decay", "batch_size", "dropout", "label_smoothing", "num_runs", "betas", "epsilon"} & reported
    # AdamW's betas and ε are conventional defaults: left to convention, listed once, not asked.
    defaults = example.conventional
    assert defaults.id == "unstated-defaults:betas,epsilon" and defaults not in example.gaps  # its formulas write their axes and orders
    assert "β1 and β2 (AdamW)" in defaults.title and "ε" in defaults.title
    assert "β1 = 0.9, β2 = 0.999" in [c.answer for c in defaults.conventions]
    symbols = {g.id for g in example.gaps if g.kind in ("undefined-symbol", "unstated-value")}
    assert not symbols & {"undefined-symbol:λ", "undefined-symbol:τ", "undefined-symbol:α", "unstated-value:λ"}


def test_example_ranking_puts_blocking_gaps_first(example):
    assert [g.rank for g in example.gaps] == list(range(1, len(example.gaps) + 1))
    flags = [g.blocking for g in example.gaps]
    assert flags == sorted(flags, reverse=True)
    assert example.verdict == "not ready"


def test_example_setting_statuses_carry_evidence(example):
    statuses = {(s.component, s.setting): s for s in example.settings}
    learning_rate = statuses[("AdamW", "learning_rate")]
    assert learning_rate.stated and 3e-4 in learning_rate.values and learning_rate.evidence
    assert not statuses[("AdamW", "betas")].stated
    runs = statuses[("training", "num_runs")]
    assert runs.stated and "three seeds" in runs.values


# -- rules on small papers -------------------------------------------------------------------------


def test_values_for_different_datasets_do_not_conflict(tmp_path):
    report = _paper(
        tmp_path,
        "\\section{Setup}\nOn CIFAR-10 we use a batch size of 128.\n\nOn ImageNet we use a batch size of 1024.\n",
    )
    assert not [g for g in report.gaps if g.kind == "conflicting-values"]


def test_two_values_for_the_same_run_conflict(tmp_path):
    report = _paper(
        tmp_path,
        "\\section{Setup}\nWe train on CIFAR-10 with a batch size of 128 using SGD.\n\n"
        "All CIFAR-10 runs use a batch size of 64.\n",
    )
    conflict = _gap(report, "conflicting-values:batch_size")
    assert [e.location.line for e in conflict.evidence] == [2, 4]


def test_dangling_and_external_equation_references(tmp_path):
    report = _paper(
        tmp_path,
        "\\section{Method}\n\\begin{equation}a=b\\label{eq:a}\\end{equation}\n"
        "Eq.~\\eqref{eq:a} holds. Eq. (7) gives the update. Eq. 3 of [12] is different. See Eq.~\\eqref{eq:gone}.\n",
    )
    dangling = {g.id for g in report.gaps if g.kind == "dangling-reference"}
    assert dangling == {"dangling-reference:7", "dangling-reference:??"}


def test_a_stated_small_constant_is_not_a_gap(tmp_path):
    report = _paper(tmp_path, "\\section{Method}\nWe add a small constant $\\epsilon = 10^{-6}$ to the norm.\n")
    assert not [g for g in report.gaps if "small" in g.title]


def test_components_discussed_as_related_work_ask_nothing(tmp_path):
    report = _paper(
        tmp_path,
        "\\section{Related Work}\nWe use ideas from papers that train with SGD and dropout.\n"
        "\\section{Method}\nOur model is a linear map.\n",
    )
    assert not [g for g in report.gaps if g.component in ("SGD", "Dropout")]


def test_undefined_symbol_is_silent_once_the_text_names_it(tmp_path):
    equation = "\\begin{equation}L = A + \\gamma B\\end{equation}\n"
    silent = _paper(tmp_path, "\\section{Method}\n" + equation + "Here $\\gamma$ trades the two terms off against each other and is 0.3.\n")
    assert not [g for g in silent.gaps if g.kind in ("undefined-symbol", "unstated-value")]
    (tmp_path / "b").mkdir()
    loud = _paper(tmp_path / "b", "\\section{Method}\n" + equation + "We minimise L.\n")
    assert _gap(loud, "undefined-symbol:γ").evidence[0].location.line == 2


def test_a_setting_symbol_whose_value_a_hyperparameter_table_row_gives_is_stated(tmp_path):
    """"where λ balances the two terms" with a settings table's row "$\\lambda$ | 0.5" (or "Loss
    weight $\\lambda$ | 0.5") states λ: no question, and λ's value is what a check or a scaffold reads.
    A row with a value per experiment states λ but gives it no one value; a row of another setting
    that names λ ("Weight of $L_1$ relative to $\\mu$") and a results table's row state nothing."""
    method = "\\section{Method}\n\\begin{equation}L = A + \\lambda B\\end{equation}\nwhere $\\lambda$ balances the two terms.\n"

    def table(caption: str, row: str) -> str:
        return f"\\section{{Settings}}\n\\begin{{table}}[h]\\caption{{{caption}}}\n\\begin{{tabular}}{{ll}}\nSetting & Value \\\\\n{row} \\\\\nBatch size & 64 \\\\\n\\end{{tabular}}\\end{{table}}\n"

    for i, row in enumerate(["$\\lambda$ & 0.5", "Loss weight $\\lambda$ & 0.5"]):
        (tmp_path / str(i)).mkdir()
        report = _paper(tmp_path / str(i), method + table("Hyperparameters", row))
        assert [g.id for g in report.gaps if g.kind in ("undefined-symbol", "unstated-value")] == [], row
        [lam] = [info for info in read_paper(tmp_path / str(i) / "main.tex", use_cache=False).symbols if info.symbol == "λ"]
        assert (lam.value_given, lam.value) == (True, 0.5)
    # One value per experiment column is no one value; a row "of" or "for" a symbol does not state it.
    columns = method.replace("B\\end{equation}", "B + \\mu C\\end{equation}") + "\\section{Settings}\n\\begin{table}[h]\\caption{Hyperparameters}\n\\begin{tabular}{lll}\nSetting & CIFAR-10 & ImageNet \\\\\n$\\lambda$ & 0.5 & 1.0 \\\\\nWeight of $L_1$ relative to $\\mu$ & 2 & 2 \\\\\nBatch size & 64 & 256 \\\\\n\\end{tabular}\\end{table}\n"
    (tmp_path / "columns").mkdir()
    (tmp_path / "columns" / "main.tex").write_text("\\documentclass{article}\\begin{document}\n" + columns + "\n\\end{document}\n")
    symbols = {info.symbol: (info.value_given, info.value) for info in read_paper(tmp_path / "columns" / "main.tex", use_cache=False).symbols}
    assert symbols["λ"] == (True, "0.5 / 1.0") and symbols["μ"] == (False, None)
    results = method + "\\section{Results}\n\\begin{table}[h]\\caption{Accuracy for each weight.}\n\\begin{tabular}{ll}\nWeight & Accuracy \\\\\n$\\lambda$ & 0.5 \\\\\n\\end{tabular}\\end{table}\n"
    assert [g.id for g in _paper(tmp_path, results).gaps] == ["unstated-value:λ"]


def test_a_setting_only_an_inline_formula_uses_is_asked_when_no_value_is_given(tmp_path):
    """"We minimize $L = L_1 + \\lambda L_2$ ... $\\lambda > 0$ is a hyper-parameter that balances
    them" with no value anywhere is asked as a display equation's setting is, citing the definition
    and the formula. A value in a sentence, in a formula of the text, in parentheses after it, in a
    settings table's row or column, or in a sweep's cell answers it; a learned weight is no setting."""
    method = "\\section{Method}\nWe minimize $L = L_1 + \\lambda L_2$ over the embeddings. $\\lambda > 0$ is a hyper-parameter that balances $L_1$ and $L_2$.\n"

    def asked(body: str, folder: str) -> list[Gap]:
        (tmp_path / folder).mkdir()
        return [g for g in _paper(tmp_path / folder, body).gaps if g.kind in ("unstated-value", "undefined-symbol")]

    [gap] = asked(method, "bare")
    assert (gap.id, gap.blocking) == ("unstated-value:λ", True)
    assert gap.evidence[0].quote == "$\\lambda > 0$ is a hyper-parameter that balances $L_1$ and $L_2$."
    formula = gap.evidence[1].location  # the inline formula itself (0-based line)
    assert gap.evidence[1].quote.startswith("We minimize") and (formula.line, formula.column, formula.end_column) == (2, 13, 34)
    assert "L = L_1 + \\lambda L_2" in gap.question
    for i, answer in enumerate([
        "\\section{Training}\nWe set $\\lambda = 0.5$ in all runs.\n",
        "\\section{Training}\nWe set $\\lambda$ to 0.5 in all runs.\n",
        "\\section{Settings}\n\\begin{table}[h]\\caption{Hyperparameters}\\begin{tabular}{ll}\nSetting & Value \\\\\n$\\lambda$ & 0.5 \\\\\nBatch size & 64 \\\\\n\\end{tabular}\\end{table}\n",
        "\\section{Training}\nWe set the loss weight $\\lambda$ to 0.5.\n",  # the value given to the name beside it
        "\\section{Training}\nWe use $\\lambda \\approx 0.5$.\n",
        "\\section{Training}\nThe weight $\\lambda$ (0.5 in all runs) is fixed.\n",
        # a column a symbol heads, one value per dataset; a sweep's cell
        "\\section{Settings}\n\\begin{table}[h]\\caption{Hyperparameters per dataset.}\\begin{tabular}{lll}\nDataset & $\\lambda$ & Learning rate \\\\\nCIFAR-10 & 0.5 & 1e-3 \\\\\nImageNet & 1.0 & 1e-4 \\\\\n\\end{tabular}\\end{table}\n",
        "\\section{Settings}\n\\begin{table}[h]\\caption{Hyperparameters}\\begin{tabular}{ll}\nSetting & Value \\\\\n$\\lambda$ & $\\{0.1, 0.5\\}$ \\\\\nBatch size & 64 \\\\\n\\end{tabular}\\end{table}\n",
    ]):
        assert asked(method + answer, f"answered{i}") == [], answer
    # "where $\\gamma$ is a margin" is stated by "a margin of 0.2", though "margin" is no name we list.
    margin = "\\section{Method}\nThe loss is $L = \\max(0, d_p - d_n + \\gamma)$, where $\\gamma$ is a margin.\n"
    assert [g.id for g in asked(margin, "margin")] == ["unstated-value:γ"]
    assert asked(margin + "\\section{Training}\nWe use a margin of 0.2.\n", "margin-stated") == []
    # Another paper's margin, another weight, an equation's number state nothing.
    intro = "\\section{Introduction}\nPrior work uses a margin of 1.\n" + margin
    assert [g.id for g in asked(intro, "margin-intro")] == ["unstated-value:γ"]
    weight = "\\section{Method}\nWe minimize $L = L_1 + \\lambda L_2$, where $\\lambda$ is the weight of the adversarial loss. We also add a perceptual loss with a weight of 0.1.\n"
    assert [g.id for g in asked(weight, "other-weight")] == ["unstated-value:λ"]
    reference = "\\section{Method}\nWe minimize $L = L_1 + \\lambda L_2$ (1), where the weight $\\lambda$ (2) balances the two terms.\n"
    assert [g.id for g in asked(reference, "equation-number")] == ["unstated-value:λ"]
    # A symbol defined as a named setting ("the learning rate", "the EMA decay") is stated with it,
    # in a formula of the text or a display equation.
    for i, body in enumerate([
        "We update $\\theta \\leftarrow \\theta - \\eta g$, where $\\eta$ is the learning rate. We use a learning rate of $10^{-4}$.\n",
        "We keep $\\bar\\theta = \\beta \\bar\\theta + (1-\\beta)\\theta$, where $\\beta$ is the EMA decay rate. The EMA decay is 0.9999.\n",
        "\\begin{equation}\\theta' = \\theta - \\eta g\\end{equation}\nwhere $\\eta$ is the learning rate. We use a learning rate of $10^{-4}$.\n",
    ]):
        assert asked("\\section{Method}\n" + body, f"named{i}") == [], body
    assert asked(method.replace("is a hyper-parameter that balances", "is a learned weight that balances"), "learned") == []
    # "with a small constant $\\epsilon$" is asked as that wording, routine and with the conventions.
    small = "\\section{Method}\nWe normalize $\\hat{h} = h / (\\|h\\| + \\epsilon)$ with a small constant $\\epsilon$.\n"
    assert asked(small, "small") == []
    (tmp_path / "small-wording").mkdir()
    assert any(g.title.startswith('"a small constant"') and not g.blocking for g in _paper(tmp_path / "small-wording", small).gaps)


def test_learnable_parameters_of_the_method_without_a_start_are_asked_once(tmp_path):
    """"where $a, b \\in R^d$ are learnable vectors" with no word of how they start is one routine
    question at the declaration. A start said anywhere answers it: in a clause after the declaration
    with no other formula between, in the next sentence ("It is initialized to 1.", also when it
    opens the next paragraph), for every parameter, as a value, or in a table row ("$\\alpha$
    initialization | 0.5"); the initialization of another symbol in the same sentence does not. A
    parameter said not to be learnable, a layer's weights, a token, an embedding, a query or a
    normalisation's affine parameters are not asked. A value a proof only supposes ("we can assume $\\alpha = 1$") is no start."""
    declared = "\\section{Method}\nWe compute $z = W x$, where $\\mathbf{a}, \\mathbf{b} \\in \\mathbb{R}^d$ are learnable vectors, and $c \\in (0,1)$ is a constant used for the initialization of $\\lambda$.\n"

    def asked(body: str, folder: str) -> list[Gap]:
        (tmp_path / folder).mkdir()
        return [g for g in _paper(tmp_path / folder, body).gaps if g.id.startswith("unstated-init:")]

    [gap] = asked(declared, "bare")
    assert (gap.id, gap.kind, gap.blocking) == ("unstated-init:a,b", "unstated-value", False)
    assert gap.title == "a, b: how they are initialised is not said"
    assert gap.evidence[0].location.line == 2 and "are learnable vectors" in gap.evidence[0].quote  # 0-based
    scalar = "\\section{Method}\nHere $\\alpha$ is a learnable scalar parameter"
    for i, answered in enumerate([
        declared + "We initialize $\\mathbf{a}$ and $\\mathbf{b}$ to zero vectors.\n",
        scalar + ", initialized to 1.\n",
        scalar + ". It is initialized to 1.\n",
        scalar + ". All learnable parameters are initialized from a normal distribution.\n",
        scalar + ".\n\\section{Setup}\nWe use $\\alpha = 0.5$.\n",
        "\\section{Method}\nHere $\\tau$ is not a learnable parameter.\n",
        "\\section{Method}\nwhere $W^O \\in \\mathbb{R}^{d \\times d}$ is a learnable projection matrix.\n",
        "\\section{Method}\nThe mask token $m$ is a learnable vector.\n",
        "\\section{Method}\nThe positional embedding $P$ is a learnable matrix.\n",
        "\\section{Method}\nwhere $\\bm{z}_{\\emptyset}$ is a learnable \\textit{null-condition} token shared by all positions.\n",
        "\\section{Method}\nThe encoder $E$ and decoder $D$ are learnable parameters of the autoencoder.\n",
        "\\section{Method}\nThe LayerNorm scale $\\gamma$ and shift $\\beta$ are learnable vectors.\n",
        "\\section{Method}\nFollowing LayerNorm, $\\gamma$ and $\\beta$ are learnable affine parameters.\n",
        scalar + " whose initial value is 0.5.\n",
        scalar + ".\n\\section{Implementation}\n$\\alpha$ starts at 0.5.\n",
        scalar + ".\n\nWe set its initial value to 0.5.\n",  # the next paragraph refers back
        scalar + ".\n\\section{Settings}\n\\begin{table}[h]\\caption{Hyperparameters}\\begin{tabular}{ll}\nSetting & Value \\\\\n$\\alpha$ initialization & 0.5 \\\\\nBatch size & 64 \\\\\n\\end{tabular}\\end{table}\n",
    ]):
        assert asked(answered, f"answered{i}") == [], answered
    assert [g.id for g in asked(scalar + ".\n", "scalar")] == ["unstated-init:α"]
    # A temperature that scales to unit norm is no normalisation's; a new noun phrase ends a declaration the norm excluded.
    assert [g.id for g in asked("\\section{Method}\nEmbeddings are scaled to unit norm by a learnable temperature $\\tau$.\n", "unit-norm")] == ["unstated-init:τ"]
    coordinated = "\\section{Method}\nThe LayerNorm gain $g$, the margin $m$ and the temperature $\\tau$ are learnable.\n"
    assert [g.id for g in asked(coordinated, "coordinated")] == ["unstated-init:m", "unstated-init:τ"]
    # A case a proof supposes is no value of the setting: "we can assume $\alpha = 1$".
    assert [g.id for g in asked(scalar + ".\n\\section{Proof}\nWithout loss of generality, we can assume $\\alpha = 1$.\n", "assumed")] == ["unstated-init:α"]
    assert [g.id for g in asked(scalar + " of the model.\n", "of-the-model")] == ["unstated-init:α"]  # a parameter of a model is no model
    # "a learnable matrix of $K$ entries": K is what the matrix is of.
    assert [g.id for g in asked("\\section{Method}\nThe codebook $C$ is a learnable matrix of $K$ entries.\n", "codebook")] == ["unstated-init:C"]


def test_a_learnable_matrix_whose_shape_the_paper_never_gives_is_asked(tmp_path):
    """A matrix the method declares learnable needs a shape to be allocated: one routine question per
    declaration unless the paper gives the shape anywhere (in the declaration's math, in a clause
    naming the matrix, in a display equation, in a table row), gives any size of its model, from
    which an implementer takes it, or a formula makes the matrix square by applying it to what the
    formula computes. Only what a declaration calls a matrix is asked: not a vector, an embedding,
    a positional encoding, a capital letter that is learnable, or what is multiplied by one."""
    def asked(body: str, folder: str) -> list[Gap]:
        (tmp_path / folder).mkdir()
        return [g for g in _paper(tmp_path / folder, "\\section{Method}\n" + body + "\n").gaps if g.id.startswith("undefined-shape:")]

    [gap] = asked("We compute $h = \\tanh(W x)$, where $W$ is a learnable projection matrix and $\\sigma$ is the sigmoid.", "noun")
    assert (gap.id, gap.kind, gap.category, gap.blocking, gap.title) == ("undefined-shape:W", "undefined-symbol", "Missing Model Structure", False, "W: its shape is not given")
    assert gap.evidence[0].quote == "$W$ is a learnable projection matrix" and gap.evidence[0].location.line == 2  # 0-based
    # a list is one declaration, one question
    [gap] = asked("We compute $q = W_Q x$, where $W_Q$, $W_K$, and $W_V$ are learnable projection matrices.", "list")
    assert gap.id == "undefined-shape:W_Q,W_K,W_V" and gap.evidence[0].quote == "$W_Q$, $W_K$, and $W_V$ are learnable projection matrices"
    [gap] = asked("The output is $y = \\mathbf{U} h$ with the learnable weight matrix $\\mathbf{U}$.", "before")
    assert gap.id == "undefined-shape:U"
    [gap] = asked("We compute $y = W_2 \\sigma(W_1 x)$ with the learnable matrices $W_1$ and $W_2$.", "before-list")
    assert gap.id == "undefined-shape:W_1,W_2" and gap.evidence[0].quote == "learnable matrices $W_1$ and $W_2$"
    # what gives another symbol a shape or a size gives this one nothing: another clause, another
    # matrix named after "the ... matrix", an index that is a name, the article "A", an image's size
    for i, other in enumerate([
        "We compute $h = W x$, where $\\lambda$ is a scalar, $W$ is a learnable matrix.",
        "We compute $h = W x$, where $W$ is a learnable weight matrix. The adjacency matrix $\\hat A \\in \\mathbb{R}^{N \\times N}$ is normalised.",
        "We compute $q = W_q x$, where $W_q$ is a learnable matrix, and $k = W_k x$ with $W_k \\in \\mathbb{R}^{d \\times d}$.",
        "We compute $h = A x$, where $A$ is a learnable matrix. A 3$\\times$3 convolution follows.",
        "We compute $h = W x$, where $W$ is a learnable matrix. Images are resized to an input size of 224 $\\times$ 224.",
        "We compute $h = W x$, where $W$ is a learnable matrix. We train model sizes from 125M to 1.3B parameters.",
    ]):
        assert len(asked(other, f"other{i}")) == 1, other
    for i, said in enumerate([
        "We compute $h = W x$, where $W \\in \\mathbb{R}^{d \\times k}$ is a learnable matrix.",
        "where $W_Q$, $W_K$, $W_V \\in \\mathbb{R}^{d \\times d_k}$ are learnable projection matrices.",
        "We compute $h = W x$, where $W$ is a learnable matrix. Here $W$ and $V$ are $d \\times k$ matrices.",
        "We compute $h = W x$, where $W$ is a learnable matrix.\n\\begin{equation}\nW \\in \\mathbb{R}^{d \\times k}\n\\end{equation}",
        "We compute $h = W x$, where $W$ is a learnable weight matrix, of size $d \\times k$.",
        "where $A$ and $B$ are learnable matrices, both in $\\mathbb{R}^{d \\times d}$.",
        "The state is updated as $v_t = R(A v_{t-1} + b)$, where $A$ is a learnable matrix.",  # square
        "We compute $h = W x$, where $W$ is a learnable matrix. We use a hidden size of 256 throughout.",
        "We compute $h = W x$, where $W$ is a learnable matrix.\n\\section{Settings}\n\\begin{tabular}{ll}\nHidden units & 256 \\\\\n\\end{tabular}",
        "We compute $h = W x$, where $W$ is a learnable matrix. The shape of the matrix is $d \\times k$.",
        "Each layer computes $h^{l+1} = W_l h^l$ with $W_l \\in \\mathbb{R}^{d \\times d}$. Here $W_1$ and $W_2$ are learnable matrices.",
        "We compute $s = A v$, where $A$ is the learned attention matrix computed from $Q$ and $K$.",
        "We compute $h = W x$, where $W$ is a learnable matrix.\n\\section{Settings}\n\\begin{table}[h]\\caption{Sizes}\\begin{tabular}{ll}\nParameter & Shape \\\\\n$W$ & (512, 64) \\\\\n\\end{tabular}\\end{table}",
        "The gate is $g = \\sigma(\\mathbf{U}_1 [h; x])$, where $\\mathbf{U}_1$ is learnable.",
        "$p_i = \\frac{1}{T} \\exp(s_i)$, where $T$ is learnable.",
        "Here $x$ is multiplied by a learnable matrix.",
        "The mask token $m$ is a learnable vector.",
        "The positional encoding $P$ is a learnable matrix.",
        "Here $M$ is not a learnable matrix.",
    ]):
        assert asked(said, f"said{i}") == [], said


def test_a_term_added_to_the_objective_without_its_weight_is_asked(tmp_path):
    """"we apply REPA [repa] as a regularizer to the 8th layer" leaves open how much another work's
    term pulls: one routine question at the step; a weight said in the sentence, or in a sentence of
    its paragraph that speaks of the regularizer, answers it ("8th" is no weight). A regularisation
    technique with a setting of its own (dropout, label smoothing, stochastic depth) is no such term."""
    def asked(body: str, folder: str) -> list[Gap]:
        (tmp_path / folder).mkdir()
        return [g for g in _paper(tmp_path / folder, "\\section{Method}\n" + body + "\n").gaps if g.id.startswith("open-step:regularize:")]

    [gap] = asked("To stabilize training, we apply REPA [repa] with DINOv2-B as a regularizer to the 8th layer of the decoder.", "repa")
    assert (gap.category, gap.blocking) == ("Missing Configuration Protocol", False)
    assert gap.title == '"we apply REPA [repa] with DINOv2-B as a regularizer": its weight in the objective is not said'
    assert len(asked("We add the VICReg loss [vicreg] as an auxiliary loss.", "auxiliary")) == 1
    for i, said in enumerate([
        "We apply REPA [repa] as a regularizer with a weight of 0.5.",
        "We apply REPA [repa] as a regularizer. The regularizer's coefficient $\\lambda$ is 0.5.",
        "We add the VICReg loss [vicreg] as an auxiliary loss, multiplied by 0.1.",
        "We apply dropout [srivastava] as a regularizer after every attention layer.",
        "We use label smoothing [szegedy] as a regularization term.",
        "We employ stochastic depth [huang] as a regularizer.",
    ]):
        assert asked(said, f"said{i}") == [], said


def test_probabilities_counted_from_a_corpus_ask_how_rare_words_are_handled(tmp_path):
    """"we count word frequencies" to estimate probabilities leaves open what a word seen rarely, or
    never in one corpus, gets: 0 breaks the likelihood. A minimum count, smoothing or a restricted
    vocabulary, said in the paragraph or in the section the sentence points to, answers it; a
    pointer to a section that does not say it leaves it open."""
    estimator = (
        "\\section{Framework}\n\\label{sec:fw}\nThe occurrence probability of each word is estimated as its share of the documents:\n"
        "\\begin{equation}\\hat p_t = \\frac{1}{n}\\sum_{j=1}^{n}\\mathbb{1}\\{t \\in X_j\\}\\end{equation}\n"
    )

    def asked(body: str, folder: str, framework: str = estimator) -> list[Gap]:
        (tmp_path / folder).mkdir()
        return [g for g in _paper(tmp_path / folder, framework + "\\section{Model Fitting}\n" + body + "\n").gaps if g.id.startswith("open-step:count:")]

    [gap] = asked("For model training, we count word frequencies in the human and the generated corpora described in Section~\\ref{sec:fw}.", "open")
    assert (gap.category, gap.blocking) == ("Missing Method Procedure", False)
    assert gap.title.startswith('"we count word frequencies in the human": how rare or unseen words are handled')
    assert gap.evidence[0].quote.startswith("For model training, we count word frequencies")
    for i, said in enumerate([
        "We count word frequencies in both corpora and keep the words that occur at least 5 times.",
        "We count word frequencies in both corpora. Frequencies are smoothed with add-one smoothing.",
        "We count word frequencies, keeping only the 10,000 most common words.",
        # far from the counting, in the implementation details
        "We count word frequencies in both corpora.\n\\section{Implementation}\nWe discard words that appear fewer than 5 times.",
    ]):
        assert asked(said, f"said{i}") == [], said
    smoothing = estimator + "Each count is smoothed by adding a pseudo-count of one.\n"
    assert asked("We count word frequencies in the corpora described in Section~\\ref{sec:fw}.", "pointed", smoothing) == []
    # Counting for a statistic, a plot or features, not a probability the method estimates: no such step.
    for i, other in enumerate([
        "We count the tokens in each split to report dataset statistics.",
        "We count word frequencies and plot them on a log-log scale to verify Zipf's law.",
        "We count term frequencies to compute TF-IDF features for a logistic regression classifier.",
    ]):
        assert asked(other, f"other{i}") == [], other
    # "the Top P hyperparameter, which controls the cumulative probability threshold for token
    # selection" (decoding) says nothing of rare words.
    decoding = "For model training, we count word frequencies in both corpora.\n\\section{Generation}\nThe Top P hyperparameter, which controls the probability threshold for token selection, was set to 1.0.\n"
    assert len(asked(decoding, "decoding")) == 1


def test_a_training_setting_stated_for_some_experiments_only_is_asked_for_the_others(tmp_path):
    """A table gives two experiments' settings column by column, and the text gives the training
    length of one ("For CIFAR-10, we train for 100 epochs"): the other's is asked, once, routine, at
    the table. A length for every experiment (a sentence naming none, or "all models"), one in each
    experiment's own section, a recipe followed for the other, or a row or table of lengths asks nothing."""
    table = (
        "\\section{Settings}\n\\begin{table}[h]\\caption{Hyperparameters of each experiment.}\\begin{tabular}{lll}\n"
        "Setting & CIFAR-10 & ImageNet \\\\\nLearning rate & 1e-3 & 1e-4 \\\\\nBatch size & 128 & 256 \\\\\n{extra}\\end{{tabular}}\\end{{table}}\n"
    )
    method = "\\section{Method}\nWe train the model with AdamW.\n"

    def asked(body: str, folder: str, extra: str = "") -> list[Gap]:
        (tmp_path / folder).mkdir()
        paper = method + table.replace("{extra}", extra).replace("{{", "{").replace("}}", "}") + body
        return [g for g in _paper(tmp_path / folder, paper).gaps if g.id.startswith("unstated-setting:per-experiment:")]

    [gap] = asked("\\section{CIFAR-10}\nFor CIFAR-10, we train for 100 epochs.\n", "one")
    assert (gap.title, gap.blocking, gap.setting) == ("training length (epochs, steps or tokens) not stated for ImageNet", False, "training_length")
    assert [e.quote for e in gap.evidence] == ["Hyperparameters of each experiment.", "For CIFAR-10, we train for 100 epochs."]
    assert gap.question == "The paper gives the training length (epochs, steps or tokens) of CIFAR-10 but not of ImageNet: which did you use for ImageNet?"
    schedule = "\\section{Schedule}\n\\begin{table}[h]\\caption{Training schedule.}\\begin{tabular}{ll}\nDataset & Epochs \\\\\nCIFAR-10 & 100 \\\\\nImageNet & 300 \\\\\n\\end{tabular}\\end{table}\n"
    for i, (body, extra) in enumerate([
        ("\\section{Training}\nWe train all models for 100 epochs.\n", ""),
        ("\\section{CIFAR-10}\nWe train for 100 epochs.\n\\section{ImageNet}\nWe train for 300 epochs.\n", ""),
        ("\\section{CIFAR-10}\nFor CIFAR-10, we train for 100 epochs.\n", "Epochs & 100 & 300 \\\\\n"),
        # a sentence naming no experiment is for all, though its paragraph or section names one
        ("\\section{Training}\nAll models are trained for 100 epochs. Data augmentation on CIFAR-10 follows random cropping.\n", ""),
        ("\\section{Experiments on CIFAR-10}\nAll models are trained for 200 epochs.\n", ""),
        ("\\section{Training}\nWe train each model for 100 epochs, following standard practice on CIFAR-10.\n", ""),
        # handed to another recipe; a table of its own
        ("\\section{CIFAR-10}\nOn CIFAR-10 we train for 100 epochs. For ImageNet we follow the training recipe of DeiT.\n", ""),
        ("\\section{CIFAR-10}\nFor CIFAR-10, we train for 100 epochs.\n" + schedule, ""),
    ]):
        assert asked(body, f"said{i}", extra) == [], body


def test_a_where_clause_that_leaves_out_a_symbol_asks_for_it_only_if_the_paper_never_names_it(tmp_path):
    """"where α = 0.5 weighs B" explains α, not γ: γ is asked at the equation. A where clause is one place
    of many: γ explained in another section (on the 17 real papers, every symbol a where clause left
    out was) is no gap."""
    equation = "\\section{Method}\n\\begin{equation}L = A + \\alpha B + \\gamma C\\end{equation}\nwhere $\\alpha = 0.5$ weighs the reconstruction term B.\n"
    assert [g.id for g in _paper(tmp_path, equation).gaps if g.kind in ("undefined-symbol", "unstated-value")] == ["undefined-symbol:γ"]
    (tmp_path / "b").mkdir()
    elsewhere = equation + "\\section{Training}\nThe coefficient $\\gamma = 0.1$ keeps the entropy term C small.\n"
    assert [g for g in _paper(tmp_path / "b", elsewhere).gaps if g.kind in ("undefined-symbol", "unstated-value")] == []


# -- real papers: named gaps, named non-gaps, a short list ----------------------------------------


def _real(name: str) -> ReadinessReport:
    return assess(read_paper(LATEX_PAPERS / name / "paper2code_paper.tex"))


def test_repa_e_undefined_eta_and_delegated_adamw_weight_decay():
    report = _real("REPA-E")
    eta = _gap(report, "undefined-symbol:η")
    assert "\\eta" in eta.evidence[0].quote
    # "We follow the same setup as in SiT and REPA unless otherwise specified": delegated, no gap.
    [weight_decay] = [s for s in report.settings if s.setting == "weight_decay"]
    assert weight_decay.delegated and "same setup as in SiT" in weight_decay.evidence[0].quote
    assert "weight_decay" not in _settings_reported(report)
    assert "learning_rate" not in _settings_reported(report)  # "a constant learning rate of 1e-4"


def test_tabdiff_states_no_learning_rate_for_adam():
    report = _real("TabDiff")
    gap = _gap(report, "unstated-setting:Adam:learning_rate")
    assert "Adam optimizer" in gap.evidence[0].quote
    assert "training_length" not in _settings_reported(report)  # "8000 epochs"


def test_advantage_alignment_clip_epsilon_is_stated_by_its_tables_clip_range():
    report = _real("advantage-alignment")
    assert not [g for g in report.gaps if g.kind == "undefined-symbol"]  # ε of clip(·; 1-ε, 1+ε): "PPO Clip Range | 0.1"


def test_diff_transformer_states_its_training_settings():
    report = _real("Diff-Transformer")
    assert not {"learning_rate", "batch_size", "training_length", "betas", "weight_decay"} & _settings_reported(report)
    assert not [g for g in report.gaps if g.blocking]


def test_label_smoothing_report_states_optimizer_settings():
    report = assess(read_paper(PDF_PAPERS / "label-smoothing-report" / "article.tex"))
    statuses = {(s.component, s.setting): s for s in report.settings}
    assert statuses[("SGD", "momentum")].stated and statuses[("training", "batch_size")].stated


EVERY_PAPER = sorted(p.parent for p in LATEX_PAPERS.glob("*/paper2code_paper.*")) + sorted(PDF_PAPERS.glob("*/*.pdf"))


@pytest.mark.parametrize("paper", EVERY_PAPER, ids=lambda p: p.name)
def test_real_papers_give_short_located_ranked_lists(paper):
    report = assess(read_paper(paper))
    assert sum(g.blocking for g in report.gaps) <= 6
    assert len(report.gaps) <= 12
    for gap in report.gaps:
        assert gap.evidence and gap.question.endswith("?")
        location = gap.evidence[0].location
        assert location.line is not None or location.page is not None


def _assess_text(tmp_path, body):
    from paperlens.pipeline.ingest import read_paper
    from paperlens.pipeline.readiness import assess

    (tmp_path / "main.tex").write_text("\\documentclass{article}\\begin{document}\n" + body + "\n\\end{document}\n")
    return assess(read_paper(tmp_path / "main.tex", use_cache=False))


def test_a_step_that_leaves_open_what_an_implementer_must_know_is_a_gap_at_its_sentence(tmp_path):
    """'We combine the two embeddings.' does not say how: an open step, ranked first, at the step's
    words. Said in the sentence, in its paragraph or in the paragraph's equation, or pointed to in the
    paper, it is no gap; a sentence reporting a result is no step."""
    body = r"""
\section{Method}
We encode the image and the caption separately. We then combine the two embeddings and feed them to the decoder.
"""
    [gap] = [g for g in _assess_text(tmp_path, body).gaps if g.kind == "open-step"]
    assert gap.rank == 1 and gap.category == "Ambiguous Procedure" and gap.blocking
    # Another step elsewhere that says how it combines other things fills nothing here.
    other = body + "\n\\subsection{Heads}\nThe two heads are combined by concatenation.\n"
    assert [g.title for g in _assess_text(tmp_path, other).gaps if g.kind == "open-step"] == [gap.title]
    assert gap.title.startswith('"We then combine the two embeddings"') and "How exactly" in gap.question
    assert gap.evidence[0].location.line == 3  # 0-based: the sentence's line
    # A formula of another sentence of the paragraph says nothing of this step.
    unrelated = "We then combine the two embeddings. Each input is perturbed as $x + \\epsilon$ beforehand.\n"
    assert [g.title for g in _assess_text(tmp_path, "\\section{Method}\n" + unrelated).gaps if g.kind == "open-step"] == [
        '"We then combine the two embeddings": how they are combined is not said'
    ]
    for said in [
        "We then combine the two embeddings by concatenation and feed them to the decoder.",
        "We aggregate the two embeddings using the scores, which can be formulated as:\n\\begin{equation}\ns = a e\n\\end{equation}",
        "We then combine the two embeddings and feed them to the decoder. The combination is an element-wise sum.",
        "We then combine the two embeddings as in Eq. (3) and feed them to the decoder.",
        "We then combine the two embeddings:\n\\begin{equation}\nz = e_i + e_c\n\\end{equation}",
        "Compared with the baseline, we combine the two embeddings and improve accuracy.",
        # The rest of the method says it, where it speaks of the same step and names what it acts on.
        "We then combine the two embeddings and feed them to the decoder.\n\n"
        "\\subsection{Implementation details}\nThe two embeddings are combined by concatenation.",
    ]:
        report = _assess_text(tmp_path, "\\section{Method}\n" + said)
        assert [g for g in report.gaps if g.kind == "open-step"] == [], said


def test_a_reported_metric_without_its_protocol_is_asked_once_at_its_first_sentence(tmp_path):
    """FID's number depends on its reference statistics and its number of samples: a paper that
    reports it without them is asked, once per sentence, for the first the paper leaves open; a
    paper that says them near the metric, or follows a named setup for it, is not; one that follows
    "standard practice" for it is asked that instead; importance sampling's IS is no Inception Score."""
    intro = "\\section{Introduction}\nDiffusion models reproduce their training data.\n"
    reported = "\\section{Experiments}\nWe report FID and Inception Score of the generated images.\n\nOur model reaches an FID of 2.1.\n"
    fid_only = reported.replace(" and Inception Score", "")

    def protocol_gaps(body: str) -> list[Gap]:
        return [g for g in _paper(tmp_path, body).gaps if g.category == "Missing Evaluation Specification"]

    [gap] = protocol_gaps(intro + reported)
    assert gap.id == "metric-protocol:fid:reference" and gap.kind == "open-step" and not gap.blocking
    assert gap.title == "FID: the reference set or statistics it is computed against is not said"
    where = gap.evidence[0].location  # at "FID" of "We report FID ..." (0-based line)
    assert (where.line, where.column, where.end_column) == (4, 10, 13)
    assert "how many generated samples" in gap.question
    # The reference said, the number of samples is asked; both said (here or in a table), nothing.
    with_reference = reported + "FID is computed against the training set's statistics.\n"
    assert [g.id for g in protocol_gaps(with_reference)] == ["metric-protocol:fid:samples"]
    for said in [
        with_reference + "We evaluate on 50K generated images.\n",
        fid_only + "FID is computed against the training set's statistics.\n\\begin{table}\\caption{Results.}\\begin{tabular}{lc}Model & FID-50K \\\\ Ours & 2.1 \\\\\\end{tabular}\\end{table}\n",
        reported + "\nFor evaluation, we strictly follow the ADM setup [adm].\n",
    ]:
        assert protocol_gaps(said) == [], said
    standard = fid_only + "FID is computed according to standard practice.\n"
    assert [g.kind for g in protocol_gaps(standard)] == []
    assert any(g.title == '"standard practice": which one?' for g in _paper(tmp_path, standard).gaps)
    # A paper without sections (a PDF whose headings were not found) says it in its one paragraph.
    assert protocol_gaps("We report FID computed on 50K samples against the training set statistics.\n") == []
    importance = "\\section{Method}\nWe use importance sampling (IS) to merge the two terms.\n"
    assert protocol_gaps(importance) == []
    inception = "\\section{Experiments}\nWe report the Inception Score of the generated images.\n"
    assert [g.id for g in protocol_gaps(inception)] == ["metric-protocol:inception-score:samples"]


def test_numbers_on_a_validation_set_nobody_defines_ask_which_data_it_is(tmp_path):
    """"Loss on the validation set" of a model trained on an unnamed corpus says no data: asked once,
    as routine, at the first such sentence. Silent when the data is known: named in the sentence or
    its paragraph, a dataset with official splits the paper uses (an evaluation suite such as
    HellaSwag is not one), training data said by name, or a split the paper makes or sizes anywhere.
    "Divide the loss into two parts" or "65% of the parameters" make no split."""
    ablation = "\\section{Ablations}\nWe train 1.4B models and compare HellaSwag accuracy.\n\nWe report language modeling loss on the validation set.\n\nThe loss on the validation set drops.\n"

    def data_gaps(body: str) -> list[Gap]:
        return [g for g in _paper(tmp_path, body).gaps if g.id == "held-out-data"]

    [gap] = data_gaps(ablation)
    assert (gap.kind, gap.category, gap.blocking) == ("open-step", "Missing Data Specification", False)
    assert gap.title == '"the validation set": the data it holds is not said'
    assert gap.evidence[0].location.line == 4  # 0-based
    assert gap.evidence[0].quote.startswith("We report language modeling loss")
    assert "Held out from which data, how large" in gap.question
    for known in [
        ablation.replace("1.4B models", "1.4B models on ImageNet"),  # its section trains on data with splits
        ablation.replace("on the validation set.", "on the validation set of WikiText."),  # the sentence names it
        ablation.replace("on the validation set.", "on the validation set [pile]."),
        ablation + "We hold out 1% of the documents.\n",  # the paper makes the split
        ablation + "The validation set contains 5,000 documents.\n",
        ablation + "We split the corpus into training and validation sets.\n",
        ablation + "We use 3,000 papers from 2022 as the validation data.\n",
        ablation + "We randomly partition the corpus into 80\\%/10\\%/10\\% for training, validation and testing.\n",
        ablation + "The last 1,000 documents form the validation set.\n",
        ablation + "We use the corpus's official train/test split.\n",
        "\\section{Setup}\nWe train ResNet-18 on CIFAR-10.\n" + ablation,  # another section trains on data with splits
        "\\section{Setup}\nWe train on AFHQ-Dog.\n" + ablation,  # training data named, though unknown here
    ]:
        assert data_gaps(known) == [], known
    # A value tuned there is no number measured there ("tuned-on-validation" asks which value came out).
    assert data_gaps("\\section{Method}\nThe temperature is tuned on the validation set.\n") == []
    assert len(data_gaps(ablation + "We divide the loss into two parts. It needs 65\\% of the parameters.\n")) == 1
    # Data that comes with no held-out split of its own is no answer.
    assert len(data_gaps(ablation.replace("1.4B models", "1.4B models on FFHQ"))) == 1


def test_a_symbol_a_formula_makes_a_stated_setting_is_defined(tmp_path):
    """ε in clip(r; 1 − ε, 1 + ε) is the clip range: a table stating "PPO Clip Range" gives its
    value, though no sentence names ε; without that row ε is asked."""
    body = r"""
\section{Method}
We optimise the clipped objective
\begin{equation}
L = \min\left\{ r A, \text{clip}\left(r; 1-\epsilon, 1+\epsilon\right) A \right\}
\end{equation}
with the ratio $r$ of new to old policy and the advantage $A$.

\section{Hyperparameters}
\begin{table}[h]\caption{Settings}
\begin{tabular}{ll}
PPO Clip Range & 0.2 \\
Batch Size & 2048 \\
\end{tabular}\end{table}
"""
    report = _paper(tmp_path, body)
    assert not [g for g in report.gaps if g.kind == "undefined-symbol"]
    [epsilon] = [info for info in read_paper(tmp_path / "main.tex", use_cache=False).symbols if info.symbol == "ε"]
    assert (epsilon.value_given, epsilon.value) == (True, 0.2)  # the value a scaffold or a check reads for it
    without = body.replace("PPO Clip Range & 0.2 \\\\\n", "")
    assert [g.id for g in _paper(tmp_path, without).gaps if g.kind == "undefined-symbol"] == ["undefined-symbol:ε"]


def test_a_step_the_text_calls_weighted_and_its_formula_weights_nothing_disagree(tmp_path):
    """"A weighted sum" introducing `z = x_1 + x_2` (or a plain sum or mean over an index): the text
    and the formula disagree, a routine question citing both; a formula with weights, or a sentence
    that is not the one introducing the equation, or a formula the reader cannot read, is silent."""

    def conflicts(sentence: str, formula: str) -> list[Gap]:
        body = f"\\section{{Method}}\nWe encode both views. {sentence}\n\\begin{{equation}}\n{formula}\n\\end{{equation}}\n"
        return [g for g in _paper(tmp_path, body).gaps if g.category == "Conflicting Formal Definition"]

    [gap] = conflicts("The fused feature is a weighted sum of the two view features:", "z = x_1 + x_2")
    assert not gap.blocking and gap.type == "Inconsistency"  # its terms may be weighted elsewhere: asked, routine
    assert gap.title == 'the text says "weighted sum", Eq. (1) weights nothing'
    assert [e.quote for e in gap.evidence] == ["The fused feature is a weighted sum of the two view features:", "z = x_1 + x_2"]
    for formula in ["z = \\sum_{i=1}^{N} x_i", "z = \\frac{1}{N} \\sum_{i=1}^{N} x_i", "z = \\frac{x_1 + x_2}{2}"]:
        assert len(conflicts("We take the weighted average of the view features:", formula)) == 1, formula
    for sentence, formula in [
        ("The fused feature is a weighted sum of the two view features:", "z = \\alpha x_1 + (1 - \\alpha) x_2"),
        ("The fused feature is a weighted sum of the two view features:", "z = \\sum_i w_i x_i"),
        ("The fused feature is a weighted sum of the two view features:", "z = \\begin{bmatrix} x_1 & x_2 \\end{bmatrix}"),
        ("The fused feature is a weighted sum of the two view features. We then add them:", "z = x_1 + x_2"),
    ]:
        assert conflicts(sentence, formula) == [], (sentence, formula)


def test_what_the_methods_formulas_leave_to_convention_is_listed_once_never_asked(tmp_path):
    """A norm without its order, a softmax without its axis, an expectation without what it is over:
    listed with the conventional defaults, with the equations and the usual reading; a formula that
    writes it (`\\|x\\|_1`, `softmax(z)_c`, `\\mathbb{E}_{t}`), or one in the appendix, is not."""
    body = r"""
\section{Method}
The loss is
\begin{equation}
L = \mathbb{E}\left[ \| x - \hat{x} \|^2 \right] + \| w \|_1
\end{equation}
and the attention weights are
\begin{equation}
A = \mathrm{softmax}(Q K^\top)
\end{equation}
and the classifier's loss is
\begin{equation}
C = -\log \mathrm{softmax}(z)_c + \mathbb{E}_{t}\left[ \| v \|_2 \right]
\end{equation}
\appendix
\section{Proofs}
\begin{equation}
P = \| p \|
\end{equation}
"""
    report = _paper(tmp_path, body)
    conventional = report.conventional
    assert conventional is not None and conventional not in report.gaps and not conventional.blocking
    assert conventional.id == "unstated-defaults:norm-order,softmax-axis,expectation"
    assert conventional.title == (
        "conventional defaults not stated: a norm's order (Eq. (1)), a softmax's axis (Eq. (2)) and what an expectation is over (Eq. (1))"
    )
    assert [c.answer for c in conventional.conventions] == [
        "the Euclidean (L2) norm (Frobenius for a matrix)",
        "over the last axis",
        "the formula's random variables, drawn as the text describes",
    ]
    assert not [g for g in report.gaps if "norm" in g.title or "softmax" in g.title]
    # A reading is no setting: the repository plan has nothing of it to settle.
    plan = plan_repository(read_paper(tmp_path / "main.tex", use_cache=False), report, DecisionsFile(), paper_path="paper/main.tex")
    assert not [item for item in plan.open_items if item.id.startswith("unstated-defaults")]


@pytest.mark.parametrize(
    ("formula", "left"),
    [
        ("D_{KL}(q \\| p) + D_{KL}(p \\| r)", None),  # two divergences' bars, no norm
        ("\\|x\\|^2_2", None),
        ("\\|x - y\\|^2", "norm-order"),
        ("\\underset{x\\sim p}{\\mathbb{E}}[f(x)]", None),
        ("\\mathop{\\mathbb{E}}_{x}[f(x)]", None),
        ("\\mathbb{E}[f(x)]", "expectation"),
        ("\\sum^{N}_{i=1} x_i", None),
        ("\\sum\\nolimits_{i} x_i", None),
        ("\\sum x", "sum-range"),
        ("\\mathrm{softmax}_j(s_{ij})", None),
        ("-\\log \\mathrm{softmax}(z)_c", None),  # the class a cross-entropy reads
    ],
)
def test_a_formula_that_writes_what_an_operator_leaves_open_is_not_listed(tmp_path, formula, left):
    body = f"\\section{{Method}}\nThe loss is\n\\begin{{equation}}\nL = {formula}\n\\end{{equation}}\n"
    conventional = _paper(tmp_path, body).conventional
    assert (conventional.id.removeprefix("unstated-defaults:") if conventional else None) == left


def test_an_objective_summing_losses_without_weights_asks_for_the_weights(tmp_path):
    """"L_REG = L_KL + L_MSE + L_LPIPS + L_GAN" in a sentence or a display equation: one routine
    question at the formula, the terms in the paper's order; weights in the formula or in a sentence,
    or only two losses, ask nothing."""

    def objective_gaps(body: str) -> list[Gap]:
        return [g for g in _paper(tmp_path, "\\section{Method}\n" + body).gaps if g.id.startswith("unweighted-objective")]

    inline = "The regularization loss is $\\mathcal{L}_\\mathrm{REG} = \\mathcal{L}_\\mathrm{KL} + \\mathcal{L}_\\mathrm{MSE} + \\mathcal{L}_\\mathrm{GAN}$.\n"
    [gap] = objective_gaps(inline)
    assert (gap.title, gap.blocking) == ("L_REG sums 3 losses without weights", False)
    assert "L_REG = L_KL + L_MSE + L_GAN" in gap.question
    assert gap.evidence[0].location.line == 2 and gap.evidence[0].location.column == 28  # at the formula
    # Another sentence of the same line keeps its own question ("a small constant": which?).
    same_line = inline.rstrip("\n") + " We add a small constant to the denominator for numerical stability.\n"
    gaps = _paper(tmp_path, "\\section{Method}\n" + same_line).gaps
    assert {g.kind for g in gaps} >= {"unstated-value", "ambiguous-wording"}, [g.title for g in gaps]
    display = "The loss is\n\\begin{equation}\n\\mathcal{L} = \\mathcal{L}_{a} + \\mathcal{L}_{b} + \\mathcal{L}_{c}\n\\end{equation}\n"
    assert [g.title for g in objective_gaps(display)] == ["L sums 3 losses without weights"]
    for said in [
        inline + "We set the KL weight to $10^{-6}$.\n",
        "The loss is $\\mathcal{L} = \\mathcal{L}_{a} + \\lambda \\mathcal{L}_{b} + \\mathcal{L}_{c}$.\n",
        "The loss is $\\mathcal{L} = \\mathcal{L}_{a} + \\mathcal{L}_{b}$.\n",
    ]:
        assert objective_gaps(said) == [], said


def test_a_threshold_named_in_a_pdf_text_is_said_by_the_value_its_letter_gets(tmp_path):
    """A PDF's text has no `$...$`: "the threshold t" names it by its letter, "t is set to 0.2" gives it."""
    import pymupdf

    def threshold_gaps(experiments: str) -> list[str]:
        document = pymupdf.open()
        page = document.new_page()
        lines = ["3 Method", "We retain the neurons with scores above the threshold t, creating a coarse set.", "", "4 Experiments", experiments]
        for i, line in enumerate(lines):
            page.insert_text((72, 72 + 14 * i), line, fontname="helv", fontsize=10)
        document.save(tmp_path / "paper.pdf")
        return [g.title for g in assess(read_paper(tmp_path / "paper.pdf", use_cache=False)).gaps if g.id.startswith("open-step:threshold")]

    assert threshold_gaps("In all experiments, t is set to 0.2 and the batch size is 32.") == []
    assert threshold_gaps("In all experiments, the batch size is 32.") == ['"We retain the neurons with scores above the threshold t": the threshold\'s value is not said']


def test_a_step_said_again_word_for_word_is_asked_once(tmp_path):
    sentence = "We keep the samples above the threshold. "
    gaps = [g for g in _assess_text(tmp_path, "\\section{Method}\n" + sentence * 3 + "\n\nWe then combine the two embeddings.").gaps if g.kind == "open-step"]
    assert [g.id.split(":")[1] for g in gaps] == ["threshold", "combine"]


def test_step_frames_ask_for_the_slot_each_kind_of_step_needs(tmp_path):
    cases = {
        "We assign each observation to the nearest class in the feature space.": "distance or similarity",
        "The encoder outputs one feature per patch. We pool the patch features and feed them to a classifier.": "how they are pooled",
        "The patch features are pooled by averaging over the spatial positions.": None,
        "We pool the patch features with a learned attention query.": None,
        "We preprocess the images before training the encoder.": "how the data is preprocessed",
        "The records are preprocessed by imputing missing values with the column mean.": None,
        "We preprocess the images as in [dhariwal2021diffusion].": None,
        # a selection by a threshold needs its value: said by a number, how it is computed, or a value
        # the paper gives the symbol naming it (in a formula, a sentence or a table row)
        "We retain the neurons with scores above the threshold $t$, creating a coarse set.": "threshold's value",
        "We further impose a predefined threshold to exclude neurons: a neuron is kept if its probability surpasses the threshold.": "threshold's value",
        "We retain the neurons with scores above a threshold of 0.5.": None,
        "We retain the neurons with scores above the threshold $t$. In our experiments, $t$ is set to 10\\%.": None,
        "We retain the neurons with scores above the threshold $t$. We set $t = 0.2$.": None,
        "We retain the neurons with scores above the threshold $t$.\n\nWe set $t$ to 0.2 for all datasets.": None,
        "We retain the neurons with scores above the threshold $t$.\n\nWe set $s$ to 0.2 for all datasets.": "threshold's value",
        "We retain the neurons with scores above the threshold $t$.\n\nIn all experiments the threshold is set to 0.2.": None,
        "We retain the neurons with scores above the threshold $t$.\n\n\\begin{tabular}{ll} Setting & Value\\\\ $t$ & 0.2\\\\ \\end{tabular}": None,
        "We retain the neurons with scores above the threshold $t$.\n\n\\begin{tabular}{ll} Setting & Value\\\\ Threshold & 0.2\\\\ \\end{tabular}": None,
        "We keep the tokens whose probability exceeds the threshold $t$, the 90th percentile of the scores.": None,
        # what the step acts on is no threshold: another selection's share says nothing of it
        "We select neurons in the bottom 1\\% of the scores. We further impose a predefined threshold to exclude neurons.": "threshold's value",
        # a formula's fraction is no value
        "We keep only the steps with confidence below a threshold $t$. The ensemble is then:\n\\begin{equation} q = \\frac{1}{n} \\sum_i p_i \\text{ if } \\max p \\leq t \\end{equation}\nThe gate is the first model.": "threshold's value",
        "Samples whose loss exceeds the threshold are discarded before each epoch.": "threshold's value",
        "Tokens whose weight is below the threshold $\\tau_{\\text{attn}}$ are dropped.\n\nWe use $\\tau_{\\text{attn}} = 0.01$ throughout.": None,
        "We keep the proposals above the threshold $\\mathrm{thr}$. In all experiments, $\\mathrm{thr}=0.4$.": None,
        "We keep the neurons above the threshold $t$. Setting $t$ to 0 recovers the dense model.": "threshold's value",
        "We retain the neurons with scores above the threshold (t). We set $t = 0.2$.": None,
        "We retain the neurons with scores above the threshold $t$, computed as the mean plus three standard deviations of the scores.": None,
        "We retain the neurons above a threshold, following [ren2015faster].": None,
        "We retain the neurons above the threshold, which is selected on the validation set.": None,
        "We retain the neurons with scores above the threshold $t$.\n\nThe threshold adapts over training:\n\\begin{equation} t = \\mu_u + 2\\sigma_u \\end{equation}": None,
        "We retain the neurons above the threshold.\n\n\\begin{tabular}{lll} Dataset & Epochs & Threshold\\\\ CIFAR-10 & 200 & 0.95\\\\ \\end{tabular}": None,
        "We retain the neurons above the threshold.\\footnote{The threshold is 0.95 in all experiments.}": None,
        "We adopt the threshold of [sohn2020fixmatch] and keep the pseudo-labels above the threshold.": None,
        "We keep the pseudo-labels above the threshold.\n\n\\begin{tabular}{ll} Setting & Value\\\\ Conf. thr. & 0.95\\\\ \\end{tabular}": None,
        "We keep the pseudo-labels above the threshold.\n\n\\begin{table}\\caption{Settings. The confidence threshold is set to 0.8.}\\end{table}": None,
        "We keep the pseudo-labels above the threshold.\n\n\\begin{tabular}{ll} Method & Accuracy\\\\ Baseline (no threshold) & 81.2\\\\ \\end{tabular}": "threshold's value",
        # another work's threshold, a result, a theorem's condition, a metric's definition: no step of the method
        "We use a threshold-free metric, AUROC, to compare the detectors.": None,
        "If we combine the two embeddings, the model forgets the image.": None,
        "If available, we combine the text features with the image features.": "how they are combined",
        "We keep the pseudo-labels above a threshold.\n\n\\begin{tabular}{lc} Setting & Value\\\\ Pseudo label confidence threshold & 0.95\\\\ \\end{tabular}": None,
        "We keep the pseudo-labels above a threshold.\n\n\\begin{tabular}{lc} Setting & Value\\\\ $\\tau$ (confidence threshold) & 0.95\\\\ \\end{tabular}": None,
        "We keep the pseudo-labels above the threshold $\\tau$.\n\n\\begin{tabular}{lc} Setting & Accuracy\\\\ $\\tau = 0$ (no filtering) & 71.2\\\\ \\end{tabular}": "threshold's value",
        "We keep the tokens whose [CLS] attention is below a threshold.": "threshold's value",
        "We count word frequencies in the human-written corpus.\n\n\\begin{tabular}{lc} Setting & Value\\\\ Minimum count & 5\\\\ \\end{tabular}": None,
        "We retain the neurons above the threshold $\\eta$.\n\n\\begin{tabular}{lc} Hyperparameter & Value\\\\ Activation threshold $\\eta$ & 0.25\\\\ \\end{tabular}": None,
        "We keep the pseudo-labels above the threshold $\\tau$.\n\n\\begin{tabular}{lc} $\\tau$ (confidence threshold) & 0.95\\\\ \\end{tabular}": None,
        "We keep the pseudo-labels above a threshold.\n\nWe use a confidence cutoff of 0.9 for all datasets.": None,
        "We discard the frames below the threshold $\\beta$.\n\nWe set the blur threshold $\\beta$ to one hundred.": None,
        "If we keep the samples above the threshold, the estimator is unbiased.": None,
        "When we combine the two features, our model reaches the threshold of human performance.": None,
        "The match is usually decided by a manually set similarity threshold [rase].": None,
        "Prior methods [fixmatch] keep only the pseudo-labels above a fixed threshold. In contrast, we keep every label.": None,
        "Unlike FixMatch, which keeps the unlabeled samples above a fixed threshold, our method keeps them all.": None,
        "Its accuracy stays above the threshold of chance on every layer.": None,
        "A naive approach would discard every sample whose loss exceeds a threshold; we therefore reweight the samples.": None,
        "Our model surpasses the threshold set by human annotators on three of the five tasks.": None,
        # a step of another kind that selects by a threshold asks what that step needs
        "We randomly mask the patches whose attention exceeds the threshold, set at the 90th percentile.": "masked position holds",
        # between unit-length vectors every usual distance orders neighbours alike
        "To measure similarity, we embed each abstract with text-embedding-ada-002. We then calculate the distance between each vector and its nearest neighbor.": None,
        "We normalize the features to unit length. We then calculate the distance between each feature and its nearest neighbor.": None,
        "To measure similarity, we embed each abstract with a BERT encoder. We then calculate the distance between each vector and its nearest neighbor.": "distance or similarity",
        "Then we randomly mask the input tokens.": "what share is masked",
        "We split the dataset into a training and a test set.": "proportions",
        "We train the classifier on the real training set, split into training and validation sets.": "proportions",
        "The training set is further split into training and validation subsets.": "proportions",
        # no data split: an image into patches, a procedure into phases
        "Each image is split into non-overlapping patches.": None,
        "We split each image into patches.": None,
        "The procedure, split into training and inference phases, runs on a single GPU.": None,
        "The patches are split into visible and masked sets.": None,
        "We split each image into patches during training and use the full images at test time.": None,
        "We split words into subwords with a vocabulary learned on the training data.": None,
        "We split the data into ten folds.": None,
        "We split the nodes into training and test sets following [kipf].": None,
        # a table of the split's sizes says its proportions
        "We split the records into training and test sets.\n\n\\begin{tabular}{lrr}Dataset & Train & Test\\\\ Adult & 800 & 200\\\\ \\end{tabular}": None,
        "We split the records into training and test sets.\n\n\\begin{tabular}{lrr} & \\multicolumn{2}{c}{Samples}\\\\ Dataset & Train & Test\\\\ Adult & 800 & 200\\\\ \\end{tabular}": None,
        # a sentence for other experiments says nothing of this one's split; one naming it (however
        # written), or naming no experiment, does
        "For Diabetes, we split it into train and test sets. For DCR, we apply an equal split.": "proportions",
        "For Diabetes, we split the records into train and test sets. For Heart, we use the official split.": "proportions",
        "For Diabetes, we split it into train and test sets. For the Diabetes data, the split is equal.": None,
        "For Diabetes (DB), we split it into train and test sets. For DB, the split is equal.": None,
        "For Diabetes, we split it into train and test sets. For DCR, Diabetes and Heart, the split is equal.": None,
        "For Heart, we split it into train and test sets. For Adult, Diabetes, and Heart, the split is equal.": None,
        "For Heart, we split it into train and test sets. For Adult, as for Heart, the split is equal.": None,
        "For Heart, we split it into train and test sets. For Adult, like Heart, the split is equal.": None,
        "For Heart, we split it into train and test sets. For Adult and all other datasets, the split is equal.": None,
        "For MS-COCO, we split it into train and test sets. For COCO, the split is equal.": None,
        "For Diabetes, we split it into train and test sets. For reproducibility, the split is equal.": None,
        "For Diabetes, we split it into train and test sets. The split is equal for all datasets.": None,
        "For a fair comparison, we split it into train and test sets. For DCR, we apply an equal split.": None,
        "For the image modality, we randomly mask the input tokens. For images, the masking ratio is 75\\%.": None,
        "We project the features into a shared space with a linear layer.": None,  # "space": where to, said
        "We project the pooled features to the decoder.": "dimension",
        "The function $s(\\cdot, \\cdot)$ computes the patch-wise similarities between the two representations.": "distance or similarity",
        "The function $s(\\cdot, \\cdot)$ computes the cosine similarities between the two representations.": None,
    }
    for sentence, slot in cases.items():
        gaps = [g for g in _assess_text(tmp_path, "\\section{Method}\n" + sentence).gaps if g.kind == "open-step"]
        assert (slot in gaps[0].title if gaps else None) == (True if slot else None), (sentence, [g.title for g in gaps])

"""Equations read into expressions, functions read into expressions, and the two compared (issue 16):
equivalence shown, each kind of difference named, and what cannot be decided left silent."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from paperlens.pipeline.algebra import SKETCH, sympy_algebra
from paperlens.pipeline.check.binding import bind, linkable
from paperlens.pipeline.check.formulas import compare
from paperlens.pipeline.code.formula import read_function
from paperlens.pipeline.check import check
from paperlens.pipeline.code import index_workspace
from paperlens.pipeline.extract.formula import MAX_FORMULA_DEPTH, Unreadable, read_formula
from paperlens.pipeline.ingest import read_paper
from paperlens.schemas import DecisionsFile, PaperSpec, SymbolBinding

ALGEBRA = sympy_algebra()


def _function(code: str):
    return ast.parse(textwrap.dedent(code)).body[0]


def _compared(latex: str, code: str, anchored: bool = True):
    formula = read_formula(latex, ALGEBRA)
    return [compare(formula, computed, anchored=anchored) for computed in read_function(_function(code), ALGEBRA)]


@pytest.mark.parametrize(
    "latex, expected",
    [
        (r"\mathrm{DyT}(\boldsymbol{x}) = \boldsymbol{\gamma} * \tanh(\alpha \boldsymbol{x}) + \boldsymbol{\beta}", "beta + gamma*tanh(alpha*x)"),
        (r"w(m) = \frac{m^{1/\tau}}{m^{1/\tau}+(1-m)^{1/\tau}}", "m**(1/tau)/(m**(1/tau) + (1 - m)**(1/tau))"),
        (r"\mathcal{L} = \mathcal{L}_{\text{mix}} + \lambda \mathcal{L}_{cons}", "L_cons*lambda + L_mix"),
        (r"\hat{x}_t = \frac{x_t - \mu}{\sqrt{\sigma^2 + \epsilon}}", "(-mu + x_t)/sqrt(epsilon + sigma**2)"),
        (r"h = \max(0, \mathbf{W}_Q x + b) \cdot s", "s*Max(0, W_Q*x + b)"),
        (r"y = \sigma(z)", "1/(1 + exp(-z))"),
        # A font or a name without braces around it subscripts with its argument; a bracketed superscript tags.
        (r"\mathcal{L}_\mathrm{REG} = \mathcal{L}_\mathrm{KL} + \mathcal{L}_\text{MSE}", "L_KL + L_MSE"),
        (r"x^{(k+1)} = x^{(k)} - \eta g", "-eta*g + x_k"),
        # A symbol whose subscript has one of its own is one name, as code spells it; two bold
        # vectors dotted are their inner product (a scalar's `\cdot` stays a product).
        (r"y = \mathbf{\lambda_{q_1}} + \boldsymbol{\gamma} \cdot 2", "2*gamma + lambda_q1"),
        (r"\lambda = a \exp(\mathbf{\lambda_{q_1}} \cdot \mathbf{\lambda_{k_1}}) / b + \lambda_{\text{init}}", "a*exp(reduce_sum(lambda_k1*lambda_q1))/b + lambda_init"),
        # Norms and inner products are the sums they are (over an index the comparison does not track).
        (r"\mathcal{L} = \|x - y\|_2^2 + \lambda \lVert w \rVert_1", "lambda*reduce_sum(Abs(w)) + reduce_sum((x - y)**2)"),
        (r"s = \langle q, k \rangle / \left\| q \right\|", "reduce_sum(k*q)/sqrt(reduce_sum(q**2))"),
    ],
)
def test_equations_are_read_with_ml_notation(latex, expected):
    assert str(read_formula(latex, ALGEBRA).expression) == expected


@pytest.mark.parametrize(
    "latex, reason",
    [
        (r"L = \int_0^1 x \, dx", "\\int"),
        (r"y = \mathrm{LN}(x)", "the operator LN"),
        (r"y = " + "(" * (MAX_FORMULA_DEPTH + 5) + "x" + ")" * (MAX_FORMULA_DEPTH + 5), "nested more than"),
        (r"a = b, \quad c = d = e", "several equations"),
    ],
)
def test_what_the_reader_does_not_know_is_unreadable_with_the_reason(latex, reason):
    with pytest.raises(Unreadable, match=reason.replace("\\", "\\\\")):
        read_formula(latex)


def test_norms_and_dot_products_in_code_and_the_paper_compare_as_sums():
    paper = read_formula(r"\mathcal{L} = \|x - y\|^2", ALGEBRA)
    for code, outcome, detail in (
        ("def f(x, y):\n    return torch.norm(x - y, p=2) ** 2\n", "equivalent", "shown symbolically"),
        ("def f(x, y):\n    return ((x - y) ** 2).sum(dim=-1)\n", "equivalent", "shown symbolically"),
        ("def f(x, y):\n    return F.mse_loss(x, y)\n", "differs", "an average where the paper sums"),
        ("def f(x, y):\n    return torch.linalg.norm(x - y, ord=1)\n", "undecided", "they differ in a way not named (not a factor or one term)"),
    ):
        [path] = read_function(ast.parse(code).body[0], ALGEBRA)
        comparison = compare(paper, path, anchored=True)
        assert (comparison.outcome, comparison.detail) == (outcome, detail), code


def test_a_statement_it_cannot_read_costs_only_the_values_that_use_what_it_touches():
    paths = read_function(_function("""
        def forward(self, x, labels):
            losses = []
            for label in labels:
                losses.append(label)
            self.cache[0] = x
            if x is None:
                raise ValueError("no input")
            with torch.no_grad():
                h = torch.tanh(self.alpha * x)
            return self.weight * h + self.bias
    """), ALGEBRA)
    assert [str(p.expression) for p in paths] == ["bias + weight*tanh(alpha*x)"]  # the raise gives no path


def test_each_branch_of_a_function_is_one_expression_and_reshaping_is_the_value():
    paths = read_function(_function("""
        def forward(self, x):
            x = torch.tanh(self.alpha * x)
            if self.channels_last:
                x = x * self.weight + self.bias
            else:
                x = x * self.weight[:, None, None] + self.bias[:, None, None]
            return x
    """), ALGEBRA)
    assert [str(p.expression) for p in paths] == ["bias + weight*tanh(alpha*x)"] * 2 and paths[0].line == 7


@pytest.mark.parametrize(
    "code, reason",
    [
        ("def f(x):\n    for i in range(3):\n        x = x + i\n    return x\n", "For"),
        ("def f(x):\n    return x.cumsum(dim=1)\n", "cumsum with dim"),
        ("def f(x):\n    return mystery(x)\n", "the call mystery"),
        # What a statement it cannot read touches is unreadable from then on, and what is bound to it as such.
        ("def f(x):\n    y = x[:, None]\n    x.mul_(2)\n    return y\n", "Expr statement changes y"),
        ("def f(x):\n    y = x[:, None]\n    z = y\n    x.mul_(2)\n    return z\n", "Expr statement changes z"),  # through a chain
        ("def f(x):\n    y = x[:, None]\n    x += 1\n    return y\n", "an in-place update changes y"),  # a tensor's `+=` is in place
        ("def f(x):\n    h = x.add_(1)\n    return x\n", "an in-place call changes x"),
        ("def f(self, x):\n    self.reset_parameters()\n    return self.alpha * x\n", "Expr statement changes self"),
        ("def f(x):\n    h = self.proj(x)\n    return torch.tanh(h)\n", "the call proj"),
        ("def f(x):\n    for i in range(3):\n        if i:\n            return x\n    return x\n", "a return inside a For"),
        ("def f(a, b):\n    return torch.einsum('ij,jk->ik', a, b)\n", "einsum 'ij,jk->ik'"),  # a matrix product
    ],
)
def test_code_it_cannot_read_is_unreadable(code, reason):
    with pytest.raises(Unreadable, match=reason):
        read_function(_function(code))


LOSS = r"\mathcal{L} = \mathcal{L}_{mix} + \lambda \mathcal{L}_{cons}"


@pytest.mark.parametrize(
    "code, outcome, detail",
    [
        ("def f(l_mix, l_cons, lam):\n    loss = l_mix\n    loss += lam * l_cons\n    return loss\n", "equivalent", "shown symbolically"),
        ("def f(l_mix, l_cons, lam):\n    return -(l_mix + lam * l_cons)\n", "differs", "the sign is flipped"),
        ("def f(l_mix, l_cons, lmbda):\n    return 0.5 * (l_mix + lmbda * l_cons)\n", "differs", "the paper's × 1/2"),
        ("def f(l_mix, l_cons, lam):\n    return l_mix + lam * l_cons + l_cons\n", "differs", "a term is added: l_cons"),
        ("def f(l_mix, l_cons, lam):\n    return l_mix\n", "differs", "a term is left out: the paper's L_cons*lambda"),
        ("def f(l_mix, l_cons, lam, eps):\n    return l_mix + lam * l_cons + eps\n", "undecided", "the code uses eps"),
        ("def f(l_mix, l_cons, lam):\n    return l_mix * lam + l_cons ** 2\n", "undecided", "not named"),
        ("def f(l_mix, l_cons, lam):\n    return l_cons + lam * l_mix\n", "differs", "two symbols are swapped: the code has l_cons where the paper has l_mix"),
    ],
    ids=["equivalent", "sign", "factor", "extra-term", "missing-term", "unbound", "unnamed", "swapped"],
)
def test_a_loss_compared_with_code_names_the_difference_or_stays_undecided(code, outcome, detail):
    [comparison] = _compared(LOSS, code)
    assert comparison.outcome == outcome and detail in comparison.detail, comparison


@pytest.mark.parametrize(
    "latex, code, detail",
    [
        (r"\mathcal{L} = \|x - y\|_2 + \lambda r", "def f(x, y, lam, r):\n    return torch.norm(x - y, p=1) + lam * r\n", "the code takes the L1 norm where the paper takes the L2 norm"),
        (r"\mathcal{L} = \|x - y\|_1 + \lambda r", "def f(x, y, lam, r):\n    return (x - y).norm() + lam * r\n", "the code takes the L2 norm where the paper takes the L1 norm"),
    ],
)
def test_a_different_norm_is_named(latex, code, detail):
    [comparison] = _compared(latex, code)
    assert comparison.outcome == "differs" and comparison.detail == f"a different norm: {detail}", comparison


@pytest.mark.parametrize(
    "latex, code, outcome",
    [
        # A softmax on both sides, over an axis neither tracks; its temperature left out is a difference.
        (r"p = \mathrm{softmax}(s / \tau)", "def f(s, tau):\n    return torch.softmax(s / tau, dim=-1)\n", "equivalent"),
        (r"p = \operatorname{softmax}(s / \tau)", "def f(s, tau):\n    return (s * tau).softmax(-1)\n", "undecided"),
        # Reductions run over elements that differ: the sum of products is not the product of a sum.
        (r"\mathcal{L} = \sum_i x_i y_i", "def f(x, y):\n    return (x * y).sum()\n", "equivalent"),
        (r"\mathcal{L} = \sum_i x_i y_i", "def f(x, y):\n    return x.sum() * y\n", "undecided"),
        # An einsum of operands indexed alike: an inner product over the index the output drops.
        (r"s = \langle q, k \rangle / \tau", "def f(q, k, tau):\n    return torch.einsum('bhd,bhd->bh', q, k) / tau\n", "equivalent"),
        (r"s = \langle q, k \rangle / \tau", "def f(q, k, tau):\n    return torch.einsum('bhd,bhd->bhd', q, k) / tau\n", "undecided"),
        # A matrix product sums the products over the index it contracts, as the inner product does.
        (r"s = \langle q, k \rangle / \tau", "def f(q, k, tau):\n    return q @ k.transpose(-2, -1) / tau\n", "equivalent"),
        (r"s = \langle q, k \rangle / \tau", "def f(q, k, tau):\n    return torch.matmul(q, k) * tau\n", "undecided"),
        # With a reduction, a factor is constant only if it does not depend on how many elements are
        # reduced: 2·(Σx + λr) is the paper's × 2, Σx / 2 is no multiple of the mean.
        (r"\mathcal{L} = \sum_i x_i + \lambda r", "def f(x, lam, r):\n    return 2 * (x.sum() + lam * r)\n", "differs: a constant factor: the code's result is the paper's × 2"),
        (r"\mathcal{L} = \frac{1}{N}\sum_{i=1}^{N} x_i", "def f(x):\n    return x.sum() / 2\n", "undecided"),
        (r"p = \mathrm{softmax}(s / \tau)", "def f(s, tau):\n    return -(s / tau).softmax(-1)\n", "differs: the sign is flipped"),
        # One of two sums averaged.
        (r"y = \exp(\sum_i a_i b_i) - \exp(\sum_j c_j d_j)", "def f(a, b, c, d):\n    return torch.exp((a * b).mean()) - torch.exp((c * d).sum())\n", "differs: an average where the paper sums"),
    ],
)
def test_reductions_and_softmax_are_evaluated_over_elements_that_differ(latex, code, outcome):
    [comparison] = _compared(latex, code)
    assert f"{comparison.outcome}: {comparison.detail}".startswith(outcome), comparison


def test_dyt_without_its_shift_is_a_term_left_out_and_with_it_equivalent():
    """DyT's paper: γ * tanh(αx) + β; its LLaMA code returns weight * tanh(alpha * x)."""
    latex = r"\mathrm{DyT}(\boldsymbol{x}) = \boldsymbol{\gamma} * \tanh(\alpha \boldsymbol{x}) + \boldsymbol{\beta}"
    [without] = _compared(latex, "def forward(self, x):\n    return self.weight * torch.tanh(self.alpha * x)\n")
    assert without.outcome == "differs" and without.detail == "a term is left out: the paper's beta"
    [whole] = _compared(latex, "def forward(self, x):\n    return self.weight * torch.tanh(self.alpha * x) + self.bias\n")
    assert whole.outcome == "equivalent" and whole.binding == {"alpha": "alpha", "beta": "bias", "gamma": "weight", "x": "x"}
    [plain] = _compared(latex, "def forward(self, x):\n    return torch.tanh(self.alpha * x)\n")
    assert plain.outcome == "undecided"  # no scale either: another variant, not one term left out


def test_numpy_and_torch_spellings_are_the_same_operations():
    latex = r"y = \max(0, x) + \sigma(x) + \sqrt{x} + x^2"
    for code in (
        "def f(x):\n    return np.maximum(0, x) + 1 / (1 + np.exp(-x)) + np.sqrt(x) + np.square(x)\n",
        "def f(x):\n    return torch.relu(x) + torch.sigmoid(x) + x.sqrt() + x.pow(2)\n",
        "def f(x):\n    return x.clamp(min=0) + F.sigmoid(x) + x ** 0.5 + x * x\n",
        # Reshaping changes no value: the same operations on a view.
        "def f(x):\n    h = x.unsqueeze(0).view(-1)\n    return torch.relu(h) + torch.sigmoid(x.flatten()) + x.sqrt() + h.reshape(-1) ** 2\n",
    ):
        [comparison] = _compared(latex, code)
        assert comparison.outcome == "equivalent", (code, comparison)


def test_binding_follows_code_spellings_and_refuses_ambiguity():
    assert bind({"lambda_q", "beta_1", "x_hat", "W_Q"}, {"lam_q", "beta1", "x_hat", "w_q"}) == {
        "W_Q": "w_q", "beta_1": "beta1", "lambda_q": "lam_q", "x_hat": "x_hat",
    }  # fmt: skip
    assert "more than one" in bind({"w"}, {"w", "W"})
    assert "no name" in bind({"tau"}, {"temperature"})


def test_a_sketch_links_without_sympy_what_sympy_then_compares():
    """The sketch keeps names and operations (a sigmoid is its exp; a root is no operation), so a
    function that may compute an equation is found before SymPy is needed."""
    paper = read_formula(r"y = \gamma \tanh(\alpha x) + \beta + \sigma(x) + \sqrt{x}", SKETCH).expression
    assert paper.names == {"gamma", "alpha", "x", "beta"} and paper.operations == {"tanh", "exp"}
    [code] = read_function(_function("def f(self, x):\n    return self.weight * torch.tanh(self.alpha * x) + torch.sigmoid(x) + x.sqrt()\n"))
    assert code.expression.names == {"weight", "alpha", "x"} and code.expression.operations == {"tanh", "exp"}
    assert linkable(set(paper.names), set(code.expression.names))  # β left out: still a candidate
    assert not linkable({"alpha", "x"}, {"alpha", "x", "temperature"})  # a name the equation lacks
    assert not linkable({"x", "y"}, {"x"})  # one name links nothing


def test_each_value_of_a_returned_tuple_is_read_and_only_a_linked_one_is_compared(tmp_path):
    """`return None, out, weight`: each value is read on its own; the one applying the equation's
    operations to its symbols is compared (the weight beside it is neither agreement nor difference)."""
    code = "def forward(self, x):\n    out = self.weight * torch.tanh(self.alpha * x)\n    return None, out, torch.tanh(x)\n"
    values = read_function(_function(code), ALGEBRA)
    assert [(v.element, str(v.expression)) for v in values] == [(1, "weight*tanh(alpha*x)"), (2, "tanh(x)")]
    workspace, spec = _workspace(tmp_path, {"norms.py": "import torch\n\n\n" + code})
    report = check(workspace, spec, index_workspace(workspace), DecisionsFile())
    [finding] = [f for f in report.findings if f.setting == "formula"]
    assert finding.kind == "divergence" and finding.message == (
        "forward (the value it returns second) differs from Eq. (1): a term is left out: the paper's beta"
    )
    with pytest.raises(Unreadable, match="the call proj"):  # no value of the tuple can be read
        read_function(_function("def f(self, x):\n    return self.proj(x), None\n"))


def test_an_accessor_of_the_object_is_the_quantity_it_names_and_softplus_is_read():
    """`self.rho()` reads as `self.rho` does; softplus is log(1 + exp(x)); a fractional power of a
    negative number is not real, so a sign flip is named from the points where both sides are."""
    code = "def total_noise(self, t):\n    rho = self.rho()\n    return (self.sigma_min ** (1 / rho) + t * (self.sigma_max ** (1 / rho) - self.sigma_min ** (1 / rho))).pow(rho)\n"
    latex = r"\sigma(t) = \left(\sigma_{\min}^{\frac{1}{\rho}} + t (\sigma_{\max}^{\frac{1}{\rho}} - \sigma_{\min}^{\frac{1}{\rho}})\right)^{\rho}"
    [same] = _compared(latex, code)
    assert same.outcome == "equivalent", same
    [flipped] = _compared(latex, code.replace("return (", "return -("))
    assert flipped.outcome == "differs" and flipped.detail.startswith("the sign is flipped"), flipped
    [softplus] = read_function(_function("def f(self):\n    return F.softplus(self.raw) + self.offset\n"), ALGEBRA)
    assert str(softplus.expression) == "offset + log(exp(raw) + 1)"
    with pytest.raises(Unreadable, match="the call rho"):  # with arguments, a method is a call it cannot read
        read_function(_function("def f(self, t):\n    return self.rho(t) * t\n"))


PAPER = r"""\documentclass{article}
\begin{document}
\section{Method}
We replace every normalization layer with DyT:
\begin{equation}\label{eq:dyt}
\mathrm{DyT}(\boldsymbol{x}) = \boldsymbol{\gamma} * \tanh(\alpha \boldsymbol{x}) + \boldsymbol{\beta}
\end{equation}
\end{document}
"""


def _workspace(tmp_path: Path, files: dict[str, str]) -> tuple[Path, PaperSpec]:
    """PAPER in tmp_path/paper and `files` in the workspace tmp_path/ws."""
    (tmp_path / "paper").mkdir()
    (tmp_path / "paper" / "main.tex").write_text(PAPER)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for name, text in files.items():
        (workspace / name).write_text(textwrap.dedent(text))
    return workspace, read_paper(tmp_path / "paper" / "main.tex", use_cache=False)


def test_check_reports_a_linked_function_that_leaves_a_term_out_and_is_silent_on_one_that_matches(tmp_path):
    """Through `paperlens check`: no anchor needed; the finding names the difference and cites Eq. (1)."""
    import json
    import subprocess
    import sys

    workspace, _ = _workspace(tmp_path, {"pyproject.toml": '[tool.paperlens]\npaper = "../paper"\n', "norms.py": """
        import torch
        from torch import nn


        class DynamicTanh(nn.Module):
            def forward(self, x):
                return self.weight * torch.tanh(self.alpha * x) + self.bias


        class LayerNormParameterized(nn.Module):
            def forward(self, x):
                return self.weight * torch.tanh(self.alpha * x)


        def squash(x, alpha):
            return torch.tanh(alpha * x)
    """})

    def formula_findings():
        done = subprocess.run(
            [sys.executable, "-m", "paperlens.pipeline.cli", "check", str(workspace), "--format", "json", "--fail-on", "never"],
            capture_output=True, text=True, timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return [f for f in json.loads(done.stdout)["findings"] if f["setting"] == "formula"]

    formula = formula_findings()
    assert [(f["kind"], f["code"]["line"], f["message"]) for f in formula] == [
        ("divergence", 12, "LayerNormParameterized.forward differs from Eq. (1): a term is left out: the paper's beta"),
        ("agreement", 6, "DynamicTanh.forward computes Eq. (1): shown symbolically"),
    ]
    assert formula[0]["paper"][0]["location"]["line"] == 4 and "gamma → weight" in formula[0]["confidence_note"]
    # Linked by what they compute, each pair offers to write the anchor, indented as the definition.
    [link] = [fix for fix in formula[1]["fixes"] if fix["kind"] == "link-equation"]
    assert link["title"] == "Link `forward` to Eq. (1) of the paper" and link["edit"]["location"]["line"] == 6
    lines = (workspace / "norms.py").read_text().splitlines(keepends=True)
    lines.insert(6, link["edit"]["new_text"])
    (workspace / "norms.py").write_text("".join(lines))
    assert link["edit"]["new_text"] == "    # Implements Eq. (1) of the paper\n"
    anchored = [f for f in formula_findings() if f["kind"] == "agreement"]
    # The anchor now ties them: no link to offer, only the binding to correct.
    assert [(f["code"]["line"], f["confidence"], [fix["kind"] for fix in f["fixes"]]) for f in anchored] == [(7, 0.9, ["correct-binding"])]
    assert anchored[0]["binding"] == {"function": "DynamicTanh.forward", "equation": "1", "file": "norms.py", "reason": None,
                                      "symbols": {"alpha": "alpha", "beta": "bias", "gamma": "weight", "x": "x"}}  # fmt: skip


def test_a_binding_the_decisions_file_sets_is_used_where_the_names_say_nothing(tmp_path):
    workspace, spec = _workspace(tmp_path, {"norms.py": """
        import torch


        class Squash:
            def forward(self, x):
                return self.g * torch.tanh(self.alpha * x) + self.b
    """})

    def formula(decisions):
        return [f for f in check(workspace, spec, index_workspace(workspace), decisions).findings if f.setting == "formula"]

    assert formula(DecisionsFile()) == []  # g and b spell no symbol of Eq. (1): nothing links them
    binding = SymbolBinding(function="Squash.forward", equation="1", symbols={"gamma": "g", "beta": "b"})
    [agreement] = formula(DecisionsFile(bindings=[binding]))
    assert agreement.kind == "agreement" and "gamma → g" in agreement.confidence_note and "decisions file" in agreement.confidence_note
    swapped = binding.model_copy(update={"symbols": {"gamma": "b", "beta": "g"}})
    [differs] = formula(DecisionsFile(bindings=[swapped]))  # the code's g·tanh(αx) + b against b·tanh(αx) + g
    assert differs.kind == "divergence" and differs.message.endswith("two symbols are swapped: the code has b where the paper has g, and g where it has b (or the decisions file's binding swaps them)")
    elsewhere = binding.model_copy(update={"file": "other.py"})
    assert formula(DecisionsFile(bindings=[elsewhere])) == []  # limited to another file


def test_a_braced_letter_with_a_subscript_is_one_symbol():
    assert str(read_formula(r"y = {x}_t + {\alpha}_1 \cdot 2 + \mathopen{}(z)", ALGEBRA).expression) == "2*alpha_1 + x_t + z"


MSE = r"\mathcal{L} = \frac{1}{N} \sum_{i=1}^{N} (y_i - \hat{y}_i)^2"


@pytest.mark.parametrize(
    "latex, code, outcome, detail",
    [
        (MSE, "def loss(y, y_hat):\n    return ((y - y_hat) ** 2).mean()\n", "equivalent", ""),
        (MSE, "def loss(y, y_hat):\n    return F.mse_loss(y_hat, y)\n", "equivalent", ""),
        (MSE, "def loss(y, y_hat):\n    return torch.sum((y - y_hat) ** 2, dim=-1)\n", "differs", "a sum where the paper averages"),
        (MSE, "def loss(y, y_hat):\n    return F.mse_loss(y_hat, y, reduction='sum')\n", "differs", "a sum where the paper averages"),
        (r"L = \mathbb{E}_{x \sim p}\left[(y - \hat{y})^2\right]", "def loss(y, y_hat):\n    return (y - y_hat).pow(2).mean()\n", "equivalent", ""),
        (r"L = \sum_{t} \lambda_t \ell_t", "def loss(lam, ell):\n    return (lam * ell).mean(dim=0)\n", "differs", "an average where the paper sums"),
        (r"L = \frac{1}{B} \sum_{i} \ell_i", "def loss(ell):\n    return ell.mean()\n", "undecided", "B"),
    ],
    ids=["mean", "mse_loss", "sum-for-mean", "mse_loss-sum", "expectation", "mean-for-sum", "sum-over-B"],
)
def test_sums_and_means_over_an_index_are_told_apart(latex, code, outcome, detail):
    [comparison] = _compared(latex, code)
    assert comparison.outcome == outcome and detail in comparison.detail, comparison


def test_an_attribute_set_in_the_function_is_its_value_and_logging_changes_nothing():
    [path] = read_function(_function("""
        def forward(self, x):
            self.scale = 0
            self.log("scale", self.scale)
            print(x)
            return self.scale * x + self.shift
    """), ALGEBRA)
    assert str(path.expression) == "shift"


@pytest.mark.parametrize(
    "latex, reason",
    [
        (r"y = a \cdot " + "-" * 1900 + "b", None),  # read, without one call per sign
        (r"y = 9^{9^{9}}", "a power of"),
        ("=".join(["a"] * 8000), "too long"),
        (r"y = a, \quad z = b = c", "several equations"),
    ],
    ids=["1900-signs", "huge-power", "16k-of-a=", "two-equations"],
)
def test_hostile_equations_are_read_or_refused_quickly(latex, reason):
    if reason is None:
        assert read_formula(latex, ALGEBRA).expression is not None
    else:
        with pytest.raises(Unreadable, match=reason):
            read_formula(latex, ALGEBRA)


@pytest.mark.parametrize(
    "body, reason",
    [
        ("    if c:\n        x = x + 1\n" * 2000 + "    return x\n", "blocks"),
        ("    if c:\n        x = x + 1\n" * 30 + "    return x\n", "blocks"),
        ("    x = x * y + x * z\n" * 18 + "    return x\n", "more than 400 operations"),
        ("    return x ** 9 ** 9\n", "a power of"),
    ],
    ids=["2000-ifs", "30-ifs", "doubling", "huge-power"],
)
def test_hostile_functions_are_refused_with_the_reason_not_a_crash_or_a_hang(body, reason):
    with pytest.raises(Unreadable, match=reason):
        read_function(_function("def f(x, y, z, c):\n" + body), ALGEBRA)


def test_an_anchored_function_not_compared_is_a_note_saying_why(tmp_path):
    workspace, spec = _workspace(tmp_path, {"norms.py": 'def dyt(x, alpha, gamma, beta):\n    """Eq. (1)."""\n    return gamma * torch.tanh(alpha * project(x)) + beta\n'})
    report = check(workspace, spec, index_workspace(workspace), DecisionsFile())
    [pair] = report.undecided
    assert (pair.file, pair.line, pair.function, pair.equation) == ("norms.py", 0, "dyt", "1")
    assert pair.reason == "the function cannot be read (the call project)"
    from paperlens.pipeline.check.render import render_text

    assert "note: norms.py:1: dyt was not compared with Eq. (1): the function cannot be read (the call project)" in render_text(report)


DEFINING_PAPER = r"""\documentclass{article}
\begin{document}
\section{Method}
The distance shift is $\delta_{k,m} = (\alpha_{k,m})^{-\beta_{k,m}^{2}}$, and $h = \alpha d$.
\end{document}
"""


def test_a_name_a_statement_assigns_as_a_defined_symbol_is_compared_with_the_definition(tmp_path):
    (tmp_path / "paper").mkdir()
    (tmp_path / "paper" / "main.tex").write_text(DEFINING_PAPER)
    spec = read_paper(tmp_path / "paper" / "main.tex", use_cache=False)
    for name, code, expected in (
        ("differs", "def gps(d, alpha, beta):\n    delta = alpha ** (-1 / beta)\n    h = alpha * d * 2\n    return delta * h\n",
         [("divergence", 1, "delta in gps differs from the paper's definition of delta_k,m: the exponent differs: the code's is -1/beta, the paper's -beta**2")]),
        ("agrees", "def shift(alpha, beta):\n    delta = alpha ** (-beta ** 2)\n    return delta\n",
         [("agreement", 1, "delta in shift computes the paper's definition of delta_k,m: shown symbolically")]),
        ("other names", "def f(a, b):\n    delta = a ** (-1 / b)\n    return delta\n", []),
    ):  # fmt: skip
        workspace = tmp_path / name
        workspace.mkdir()
        (workspace / "loss.py").write_text(code)
        found = [f for f in check(workspace, spec, index_workspace(workspace), DecisionsFile()).findings if f.setting == "formula"]
        # `h = alpha * d * 2` is not compared: a one-letter symbol is any code's variable.
        assert [(f.kind, f.code.line, f.message) for f in found] == expected, name


def test_an_undecided_pair_carries_a_binding_to_complete_only_when_a_symbol_has_no_name(tmp_path):
    """`h` spells no symbol of Eq. (1): the binding to complete names what it can (α, γ, β) and leaves
    x empty; a function whose every symbol has its name but which uses one more (`eps`) gets none."""
    workspace, spec = _workspace(tmp_path, {"norms.py": """
        import torch


        def unnamed(h, alpha, gamma, beta):
            \"\"\"Eq. (1).\"\"\"
            return gamma * torch.tanh(alpha * h) + beta


        def extra(x, alpha, gamma, beta, eps):
            \"\"\"Eq. (1).\"\"\"
            return gamma * torch.tanh(alpha * x) + beta + eps
    """})
    undecided = {pair.function: pair for pair in check(workspace, spec, index_workspace(workspace), DecisionsFile()).undecided}
    assert undecided["unnamed"].binding.symbols == {"alpha": "alpha", "beta": "beta", "gamma": "gamma", "x": ""}
    assert "the code uses eps" in undecided["extra"].reason and undecided["extra"].binding is None

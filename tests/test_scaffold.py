"""Scaffolding a module (and its shape test) from a section or an algorithm of the paper.

Checked on the bundled example (LaTeX and PDF) and on real papers from ../shared/data: the generated
files parse and compile, the code index reads their anchors back to the right equations, stated
values come with their quote, every blocking gap of the section is a TODO, identifiers are valid
and unique, nothing existing is overwritten, and the generated tests, run by pytest in a workspace
of their own, fail for NotImplementedError and nothing else.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from paperlens.pipeline.code import index_source
from paperlens.pipeline.ingest import read_paper
from paperlens.pipeline.readiness import assess
from paperlens.pipeline.readiness.finders import EQUATION_REFERENCE
from paperlens.pipeline.scaffold import (
    ScaffoldedModule,
    scaffold_module,
    scaffold_targets,
)
from paperlens.schemas import Location, PaperSpec, ReadinessReport

from .conftest import EXAMPLE_PAPER, LATEX_PAPERS

TODO = "# TODO(paperlens): "
# Real papers and targets: an attention module (stated head dimension, a recurrence), a layer the
# paper defines by equation and as code (a class), a method section whose objective's clip ε only a
# table states (as the PPO clip range), and an appendix whose optimizer leaves a blocking setting
# unstated.
REAL_TARGETS = [
    ("Diff-Transformer", "sec-2.1"),
    ("Diff-Transformer", "sec-2"),
    ("DyT", "sec-4"),
    ("DyT", "alg-1"),
    ("advantage-alignment", "sec-4.1"),
    ("GMFlow", "sec-A.4"),
]
EXAMPLE_TARGETS = ["sec-2", "sec-2.1", "sec-2.2", "sec-A", "alg-1"]
CASES = [("example", target) for target in EXAMPLE_TARGETS] + REAL_TARGETS


@pytest.fixture(scope="module")
def papers():
    """(spec, readiness) per paper, read once for the module (without the on-disk cache)."""
    loaded: dict[str, tuple[PaperSpec, ReadinessReport]] = {}

    def load(name: str) -> tuple[PaperSpec, ReadinessReport]:
        if name not in loaded:
            path = {"example": EXAMPLE_PAPER, "example-pdf": EXAMPLE_PAPER / "paper.pdf"}.get(name, LATEX_PAPERS / name)
            spec = read_paper(path, use_cache=False)
            loaded[name] = (spec, assess(spec))
        return loaded[name]

    return load


def scaffold(papers, paper: str, target: str, root: Path) -> ScaffoldedModule:
    spec, readiness = papers(paper)
    return scaffold_module(spec, readiness, target, root)


# -- what the test knows of the paper, independently of the generator ---------------------------------


def scope_sections(spec: PaperSpec, target: str) -> set[str]:
    """The target section and its subsections; an algorithm's own section."""
    algorithm = next((a for a in spec.algorithms if a.id == target), None)
    if algorithm is not None:
        return {algorithm.section_id}
    index = next(i for i, s in enumerate(spec.sections) if s.id == target)
    level = spec.sections[index].level
    ids = {target}
    for section in spec.sections[index + 1 :]:
        if section.level <= level:
            break
        ids.add(section.id)
    return ids


# An algorithm's module implements the equations its steps cite and those they take their inputs
# from: Algorithm 1 of the example cites Eqs. (3) and (5); Eq. (5) adds ℒ_cons from Eq. (4), which
# takes x̃ from Eq. (1).
ALGORITHM_EQUATIONS = {("example", "alg-1"): {"1", "3", "4", "5"}, ("DyT", "alg-1"): set()}


def scope_equation_numbers(spec: PaperSpec, target: str, paper: str = "") -> set[str]:
    algorithm = next((a for a in spec.algorithms if a.id == target), None)
    if algorithm is not None:
        cited = {m.group(1) for step in algorithm.steps for m in EQUATION_REFERENCE.finditer(step)}
        assert cited <= ALGORITHM_EQUATIONS[paper, target]
        return ALGORITHM_EQUATIONS[paper, target]
    sections = scope_sections(spec, target)
    return {e.number for e in spec.equations if e.section_id in sections and e.number}


def section_at(spec: PaperSpec, location: Location) -> str | None:
    """The section whose heading comes last before `location` in the same file (LaTeX sources)."""
    before = [s for s in spec.sections if s.location.file == location.file and s.location.line <= location.line]
    return max(before, key=lambda s: s.location.line).id if before else None


def comment_block_above(lines: list[str], index: int) -> str:
    """The comment lines right above line `index`, joined as one text."""
    block = []
    while index > 0 and lines[index - 1].startswith("#"):
        index -= 1
        block.insert(0, lines[index].lstrip("#").strip())
    return " ".join(" ".join(block).split())


def constants(module: ast.Module) -> dict[str, tuple[object, int]]:
    """Module-level NAME = literal: value and line index."""
    found = {}
    for node in module.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = (node.value.value, node.lineno - 1)
    return found


def assert_names_used_and_defined(tree: ast.Module) -> None:
    """No unused import and no undefined global name (what pyflakes would report first)."""
    imported = {alias.asname or alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}  # fmt: skip
    defined = imported | {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    defined |= {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}
    loaded = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    loaded |= {node.value.id for node in ast.walk(tree) if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)}
    assert imported <= loaded, f"unused imports: {imported - loaded}"
    local = {a.arg for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) for a in node.args.args}
    local |= {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}
    undefined = loaded - defined - local - set(dir(builtins))
    assert not undefined, f"undefined names: {undefined}"


def run_pytest(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rxX", "-p", "no:cacheprovider", *args],
        check=False,
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
    )


def write(workspace: Path, module: ScaffoldedModule) -> None:
    for path, text in ((module.path, module.text), (module.test_path, module.test_text)):
        (workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (workspace / path).write_text(text, encoding="utf-8")


# -- targets and errors -------------------------------------------------------------------------------


def test_targets_are_sections_with_numbered_equations_and_algorithms(papers):
    spec, _ = papers("example")
    targets = dict(scaffold_targets(spec))
    assert list(targets) == EXAMPLE_TARGETS
    assert targets["sec-2.1"] == "Sec. 2.1 “Mixing Images and Labels” (Eq. 1, 2, 3)"
    assert targets["alg-1"] == "Algorithm 1 “One training step of Tempered Label Mixing”"
    assert "sec-3.1" not in targets  # the setup section states values but holds no equation


def test_unknown_target_is_a_clear_value_error(papers, tmp_path):
    with pytest.raises(ValueError, match=r"unknown scaffold target 'sec-9'.*scaffoldable: sec-2, sec-2.1"):
        scaffold(papers, "example", "sec-9", tmp_path)
    with pytest.raises(ValueError, match=r"Sec\. 3\.1 “Setup” \(sec-3\.1\) holds no numbered equation"):
        scaffold(papers, "example", "sec-3.1", tmp_path)


# -- the generated files -------------------------------------------------------------------------------


@pytest.mark.parametrize(("paper", "target"), CASES)
def test_generated_files_parse_compile_and_use_every_import(papers, tmp_path, paper, target):
    module = scaffold(papers, paper, target, tmp_path)
    for path, text in ((module.path, module.text), (module.test_path, module.test_text)):
        tree = ast.parse(text)
        compile(text, path, "exec")  # duplicate arguments are a compile error, not a parse error
        assert_names_used_and_defined(tree)
    assert not [node for node in ast.parse(module.text).body if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert module.path.endswith(".py") and module.test_path == f"tests/test_{module.path[:-3]}.py"
    assert module.title.startswith(f"Scaffold {module.path} from ")


@pytest.mark.parametrize(("paper", "target"), CASES)
def test_identifiers_are_valid_unique_and_no_keywords(papers, tmp_path, paper, target):
    module = scaffold(papers, paper, target, tmp_path)
    tree = ast.parse(module.text)
    top = [node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
    assert len(top) == len(set(top))
    assert not [name for name in top if keyword.iskeyword(name) or hasattr(builtins, name)]
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            names = [a.arg for a in node.args.args]
            assert len(names) == len(set(names)), node.name
            for name in names:
                assert name.isidentifier() and name.isascii() and not keyword.iskeyword(name), name
                assert name != "l"  # reads as a 1
    stem = module.path[:-3]
    assert stem.isidentifier() and stem not in sys.stdlib_module_names and not stem.startswith("test")


@pytest.mark.parametrize(("paper", "target"), CASES)
def test_anchors_resolve_to_the_equations_of_the_target(papers, tmp_path, paper, target):
    spec, _ = papers(paper)
    module = scaffold(papers, paper, target, tmp_path)
    index = index_source(module.path, module.text)
    assert not index.problems
    numbers = scope_equation_numbers(spec, target, paper)
    labels = {e.label: e.number for e in spec.equations if e.label}
    functions = {f.qualname for f in index.functions}
    lines = module.text.splitlines()
    cited_by: dict[str, set[str]] = {}
    for anchor in index.anchors:
        if anchor.target_kind not in ("equation", "label"):
            continue
        number = anchor.target if anchor.target_kind == "equation" else labels.get(anchor.target)
        assert number in {e.number for e in spec.equations}, f"{anchor.text}: no such equation"
        if anchor.function is not None:
            assert anchor.function in functions
            assert number in numbers, f"{anchor.text} ({anchor.function}) is not an equation of {target}"
            cited_by.setdefault(anchor.function, set()).add(number)
        elif number not in numbers:
            # only the paper's own words (a quoted equation or step, a gap's question) may cite others
            line = lines[anchor.location.line]
            assert line.startswith(("# TODO(paperlens): ", "#   ", "# “", "    ")), line
    # one equation per function, and every numbered equation of the target has its function
    assert all(len(cited) == 1 for cited in cited_by.values()), cited_by
    assert {n for cited in cited_by.values() for n in cited} == {n for n in numbers if re.fullmatch(r"[A-Z]?\.?\d+", n)}
    assert not index_source(module.test_path, module.test_text).anchors  # the tests cite nothing


def test_example_section_signatures(papers, tmp_path):
    module = scaffold(papers, "example", "sec-2.1", tmp_path)
    tree = ast.parse(module.text)
    signatures = {n.name: [a.arg for a in n.args.args] for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert signatures == {
        "mix_input": ["m", "x_i", "x_j"],  # Eq. (1): x̃ is what it computes
        "sample_m": ["alpha"],  # the unnumbered m ~ Beta(α, α) that Eq. (1) and (3) take m from
        "mix_label": ["w", "y_i", "y_j"],
        "tempered_weight": ["m", "tau"],
    }
    assert module.path == "mixing_images_and_labels.py"
    objective = ast.parse(scaffold(papers, "example", "sec-2.2", tmp_path).text)
    signatures = {n.name: [a.arg for a in n.args.args] for n in objective.body if isinstance(n, ast.FunctionDef)}
    assert signatures["total_loss"] == ["l_mix", "lam", "l_cons"]  # ℒ_mix, λ, ℒ_cons
    assert signatures["consistency"][-1] == "rho"


def test_module_quotes_the_section_and_its_equations(papers, tmp_path):
    spec, _ = papers("example")
    module = scaffold(papers, "example", "sec-2.1", tmp_path)
    docstring = ast.get_docstring(ast.parse(module.text), clean=False)
    section = next(s for s in spec.sections if s.id == "sec-2.1")
    assert docstring.startswith("Sec. 2.1 “Mixing Images and Labels”, scaffolded by paperlens.")
    assert f"Where: {section.location.short()}" in docstring
    for equation in [e for e in spec.equations if e.section_id == "sec-2.1"]:
        assert equation.latex in docstring
        assert equation.location.short() in docstring
    tempered = next(n for n in ast.parse(module.text).body if isinstance(n, ast.FunctionDef) and n.name == "tempered_weight")
    body = tempered.body[-1]
    assert isinstance(body, ast.Raise) and body.exc.func.id == "NotImplementedError"


def test_algorithm_module_quotes_its_steps_and_implements_the_equations_it_cites(papers, tmp_path):
    spec, _ = papers("example")
    module = scaffold(papers, "example", "alg-1", tmp_path)
    docstring = ast.get_docstring(ast.parse(module.text), clean=False)
    algorithm = spec.algorithms[0]
    for step in algorithm.steps:
        assert " ".join(step.split()) in docstring
    index = index_source(module.path, module.text)
    owners = {(a.function, a.target_kind, a.target) for a in index.anchors if a.function}
    assert owners == {
        ("mix_input", "equation", "1"),
        ("tempered_weight", "equation", "3"),
        ("consistency", "equation", "4"),
        ("total_loss", "equation", "5"),
        ("one_training_step_tempered_label_mixing", "algorithm", "1"),
        ("sample_m", "section", "2.1"),  # an unnumbered equation is cited by its section
        ("l_mix", "section", "2.2"),
    }
    functions = [n.name for n in ast.parse(module.text).body if isinstance(n, ast.FunctionDef)]
    # the unnumbered equations those take m and ℒ_mix from come along, each in the paper's order
    assert functions == ["mix_input", "sample_m", "tempered_weight", "l_mix", "consistency", "total_loss",
                         "one_training_step_tempered_label_mixing"]  # fmt: skip
    algorithm_function = next(n for n in ast.parse(module.text).body if isinstance(n, ast.FunctionDef) and n.name == functions[-1])
    assert [a.arg for a in algorithm_function.args.args] == ["x", "y", "b", "pi", "alpha", "theta"]


def test_pdf_equations_are_quoted_as_text(papers, tmp_path):
    spec, readiness = papers("example-pdf")
    module = scaffold_module(spec, readiness, "sec-2.2", tmp_path)
    ast.parse(module.text)
    for equation in [e for e in spec.equations if e.section_id == "sec-2.2"]:
        assert equation.latex is None and equation.text.strip() in module.text
    anchors = index_source(module.path, module.text).anchors
    # the text reader knows no ℒ symbol; the left side of "ℒ_{cons} = ..." still names the function
    assert {(a.function, a.target) for a in anchors if a.function} == {("l_cons", "4"), ("ell", "5")}
    assert f"{TODO}What is ρ in Eq. (4)" in module.text


# -- values and gaps ------------------------------------------------------------------------------


@pytest.mark.parametrize(("paper", "target"), CASES)
def test_stated_values_are_constants_under_their_quote(papers, tmp_path, paper, target):
    spec, readiness = papers(paper)
    module = scaffold(papers, paper, target, tmp_path)
    lines = module.text.splitlines()
    found = constants(ast.parse(module.text))
    sections = scope_sections(spec, target)
    conflicting = {g.setting for g in readiness.gaps if g.kind == "conflicting-values"}
    stated_here: dict[str, list] = {}
    for statement in spec.hyperparameters:
        if statement.section_id in sections:
            stated_here.setdefault(statement.normalized_name, []).append(statement)
    for setting, statements in stated_here.items():
        values = {s.value for s in statements}
        if setting in conflicting or len(values) > 1:
            # never a chosen value: a TODO quotes them all
            assert any(setting.replace("_", " ") in line or "conflicting" in line for line in lines if line.startswith(TODO) or "several values" in line)
            continue
        value = statements[0].value
        matching = [(name, line) for name, (v, line) in found.items()
                    if v == value or (isinstance(v, (int, float)) and isinstance(value, float) and math.isclose(v, value))]  # fmt: skip
        assert matching, f"{setting} = {value} of {target} is not a constant"
        quotes = [comment_block_above(lines, line) for _, line in matching]
        assert any(" ".join(statements[0].text.split()) in quote and statements[0].location.short() in quote
                   for quote in quotes), f"{setting}: quote or location missing"  # fmt: skip
    # and every constant has a quote and a location above it
    for name, (_, line) in found.items():
        block = comment_block_above(lines, line)
        assert block.startswith("“") and " — " in block, name


def test_known_values_of_real_papers(papers, tmp_path):
    dyt = scaffold(papers, "DyT", "sec-4", tmp_path)
    assert "\nALPHA = 0.5\n" in dyt.text
    assert "is initialized to 0.5 in our subsequent" in " ".join(dyt.text.split())
    attention = scaffold(papers, "Diff-Transformer", "sec-2.1", tmp_path)
    # stated in the experiments for the symbol d that Eq. (1) takes: the quote goes with it
    assert "# “The head dimension $d$ is $128$.”\n#   — paper2code_paper.tex:835:5" in attention.text
    assert "\nHEAD_DIM = 128\n" in attention.text
    assert "diff_attn(x=..., w_q=..., w_k=..., w_v=..., d=HEAD_DIM, lam=...)" in attention.test_text
    # λ_init: 0.8 and 0.5 in an ablation; no constant chosen, a TODO quoting both
    assert "LAMBDA_INIT =" not in attention.text
    assert f"{TODO}The paper states several values for lambda init: 0.8" in attention.text


@pytest.mark.parametrize(("paper", "target"), CASES)
def test_every_blocking_gap_of_the_target_is_a_todo(papers, tmp_path, paper, target):
    spec, readiness = papers(paper)
    module = scaffold(papers, paper, target, tmp_path)
    todos = [line.removeprefix(TODO) for line in module.text.splitlines() if line.startswith(TODO)]
    sections = scope_sections(spec, target)
    blocking = [g for g in readiness.gaps if g.blocking and any(section_at(spec, e.location) in sections for e in g.evidence)]
    for gap in blocking:
        assert " ".join(gap.question.split()) in todos, gap.id
    # each TODO comes with where the paper shows it
    for line_number, line in enumerate(module.text.splitlines()):
        if line.startswith(TODO):
            assert module.text.splitlines()[line_number + 1].startswith("#   ")


def test_blocking_gaps_found_in_real_papers(papers, tmp_path):
    """The targets above do hold blocking gaps (GMFlow's appendix, the example's objective), so the
    test above is not vacuous; advantage-alignment's ε, which only its table states, asks nothing."""
    alignment = scaffold(papers, "advantage-alignment", "sec-4.1", tmp_path)
    assert "epsilon: ε" in alignment.text  # the clip range, which the paper's table states: no question
    assert not [line for line in alignment.text.splitlines() if line.startswith(TODO) and "ε" in line]
    appendix = scaffold(papers, "GMFlow", "sec-A.4", tmp_path)
    assert re.search(rf"{re.escape(TODO)}The paper uses AdamW \(.*\) without stating its weight decay", appendix.text)
    objective = scaffold(papers, "example", "sec-2.2", tmp_path)
    assert f"{TODO}What is ρ in Eq. (4), and what value (or how is it computed) did you use?" in objective.text


def test_conflicting_values_get_a_todo_and_no_constant(papers, tmp_path):
    spec, _ = papers("example")
    alpha = next(h for h in spec.hyperparameters if h.normalized_name == "alpha" and h.section_id == "sec-2.1")
    other = alpha.model_copy(update={"value": 0.2, "raw_value": "0.2", "text": "Elsewhere we use $\\alpha = 0.2$.",
                                     "location": alpha.location.model_copy(update={"line": alpha.location.line + 1})})  # fmt: skip
    changed = spec.model_copy(update={"hyperparameters": [*spec.hyperparameters, other]})
    module = scaffold_module(changed, assess(changed), "sec-2.1", tmp_path)
    assert "ALPHA" not in constants(ast.parse(module.text))
    todo = next(line for line in module.text.splitlines() if line.startswith(TODO) and "alpha" in line.lower())
    assert "0.4" in todo and "0.2" in todo
    assert "sample_m(alpha=...)" in module.test_text  # no value handed to the test either


# -- the workspace ------------------------------------------------------------------------------


def test_existing_files_are_never_overwritten(papers, tmp_path):
    first = scaffold(papers, "example", "sec-2.1", tmp_path)
    assert first.path == "mixing_images_and_labels.py"
    (tmp_path / first.path).write_text("# mine\n")
    second = scaffold(papers, "example", "sec-2.1", tmp_path)
    assert (second.path, second.test_path) == (
        "mixing_images_and_labels_2.py",
        "tests/test_mixing_images_and_labels_2.py",
    )
    # a test file of that name, or a package, takes the name too
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_mixing_images_and_labels_2.py").write_text("")
    (tmp_path / "mixing_images_and_labels_3").mkdir()
    third = scaffold(papers, "example", "sec-2.1", tmp_path)
    assert third.path == "mixing_images_and_labels_4.py"
    assert (tmp_path / first.path).read_text() == "# mine\n"
    assert second.text == third.text.replace("_4.py", "_2.py")  # only the names differ


def test_module_names_never_shadow_what_a_workspace_imports(papers, tmp_path):
    spec, readiness = papers("example")
    for title, expected in [("Random", "sec_2_1_random"), ("Setup", "sec_2_1_setup"), ("Test-time training", "sec_2_1_test_time_training")]:
        sections = [s.model_copy(update={"title": title}) if s.id == "sec-2.1" else s for s in spec.sections]
        renamed = spec.model_copy(update={"sections": sections})
        assert scaffold_module(renamed, readiness, "sec-2.1", tmp_path).path == f"{expected}.py"


# -- running the generated tests ------------------------------------------------------------------------


@pytest.mark.parametrize(("paper", "target"), [("example", "sec-2.1"), ("example", "alg-1"), ("DyT", "sec-4"), ("Diff-Transformer", "sec-2.1")])
def test_generated_tests_fail_for_not_implemented_only(papers, tmp_path, paper, target):
    module = scaffold(papers, paper, target, tmp_path)
    write(tmp_path, module)
    count = len([n for n in ast.parse(module.test_text).body if isinstance(n, ast.FunctionDef)])
    # As designed: every test is an expected failure, because the stub raises NotImplementedError.
    result = run_pytest(tmp_path, module.test_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{count} xfailed" in result.stdout and "passed" not in result.stdout
    # Without the markers the same tests fail, and what fails them is the NotImplementedError.
    result = run_pytest(tmp_path, module.test_path, "--runxfail")
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{count} failed" in result.stdout
    assert result.stdout.count("NotImplementedError") >= count


def test_a_written_function_is_no_longer_excused(papers, tmp_path):
    """Once a function stops raising NotImplementedError, its test fails until it is filled in: the
    marker excuses the stub, nothing else."""
    module = scaffold(papers, "example", "sec-2.1", tmp_path)
    written = re.sub(r'raise NotImplementedError\(\s*"tempered_weight: [^"]*",?\s*\)', "return m", module.text)
    assert written != module.text
    write(tmp_path, module)
    (tmp_path / module.path).write_text(written, encoding="utf-8")
    result = run_pytest(tmp_path, module.test_path)
    assert result.returncode == 1
    assert "1 failed, 3 xfailed" in result.stdout
    assert "AttributeError" in result.stdout  # `...` has no shape: the placeholders must be filled

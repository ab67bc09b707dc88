"""The LaTeX reader on small sources written here and on the real papers."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from paperlens.pipeline.errors import PaperError
from paperlens.pipeline.ingest.latex import read_latex
from paperlens.pipeline.ingest.positions import span_location

from .conftest import LATEX_PAPERS, PDF_PAPERS

MAIN = r"""\documentclass{article}
\newcommand{\lr}{3\times10^{-4}}
\newcommand{\vx}{\mathbf{x}}
\newcommand{\norm}[1]{\lVert #1 \rVert}
\def\temp{\tau}
\DeclareMathOperator{\softmax}{softmax}
\title{A Small Test Paper}
\begin{document}
\maketitle
\section{Introduction}\label{sec:intro}
We train with a learning rate of $\lr$. % the learning rate was 1e-3 in a draft
See Eq.~\eqref{eq:loss} and Section~\ref{sec:method}.\footnote{Footnote text with 42 items.}
\input{method}
\appendix
\section{Extra}
\begin{equation}
  a = b \label{eq:extra}
\end{equation}
\end{document}
Text after the end is never read.
"""

METHOD = r"""\section{Method}\label{sec:method}
\subsection{Loss}
\begin{equation}
  \mathcal{L} = \norm{\vx - \hat{\vx}}^2 + \lambda \softmax(z / \temp) \label{eq:loss}
\end{equation}
\begin{align}
  u &= v + 1 \label{eq:u} \\
  w &= u \nonumber \\
  y &= \tanh(\alpha x) \tag{$\ast$}
\end{align}
\begin{equation*}
  \text{not numbered}
\end{equation*}
\begin{table}
  \caption{Hyperparameters.}\label{tab:hp}
  \begin{tabular}{lc}
    \toprule
    Setting & Value \\ \midrule
    Learning rate & $3\times10^{-4}$ \\[2pt]
    Batch size & 256 \\
    \bottomrule
  \end{tabular}
\end{table}
\begin{algorithm}
  \caption{Training step}\label{alg:train}
  \begin{algorithmic}
    \Require data $D$
    \For{$t = 1$ to $T$}
      \State $\theta \gets \theta - \eta g_t$
    \EndFor
  \end{algorithmic}
\end{algorithm}
"""


def write_paper(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder / next(iter(files))


@pytest.fixture()
def small_paper(tmp_path: Path):
    main = write_paper(tmp_path, {"main.tex": MAIN, "method.tex": METHOD})
    return read_latex(main, tmp_path)


def test_sections_are_numbered_as_latex_numbers_them(small_paper):
    sections = [(s.number, s.title, s.level, s.appendix) for s in small_paper.sections]
    assert sections == [
        ("1", "Introduction", 1, False),
        ("2", "Method", 1, False),
        ("2.1", "Loss", 2, False),
        ("A", "Extra", 1, True),
    ]
    method = small_paper.sections[1]
    assert method.label == "sec:method"
    assert (method.location.file, method.location.line, method.location.column) == ("method.tex", 0, 0)


def test_equations_keep_latex_numbering_and_expand_macros(small_paper):
    numbered = {e.number: e for e in small_paper.equations if e.number}
    assert sorted(numbered) == ["$\\ast$", "1", "2", "3"]
    loss = numbered["1"]
    assert loss.label == "eq:loss" and loss.id == "eq:loss"
    assert r"\lVert \mathbf{x} - \hat{\mathbf{x}} \rVert" in loss.latex
    assert r"\operatorname{softmax}(z / \tau)" in loss.latex
    assert loss.location.file == "method.tex" and loss.location.line == 2
    assert numbered["2"].label == "eq:u"
    # `w = u` is \nonumber'ed, the `equation*` unnumbered, and the appendix continues the count.
    unnumbered = [e.latex for e in small_paper.equations if e.number is None]
    assert unnumbered == ["w &= u", r"\text{not numbered}"]
    assert numbered["3"].label == "eq:extra" and numbered["3"].section_id == "sec-A"


def test_refs_citations_comments_and_footnotes_in_prose(small_paper):
    texts = [p.text for p in small_paper.paragraphs]
    intro = next(t for t in texts if t.startswith("We train"))
    assert intro == "We train with a learning rate of $3\\times10^{-4}$. See Eq. (1) and Section 2."
    assert "1e-3" not in " ".join(texts)  # a comment is not prose
    footnote = next(p for p in small_paper.paragraphs if p.kind == "footnote")
    assert footnote.text == "Footnote text with 42 items."
    assert "never read" not in " ".join(texts)


def test_spans_of_prose_map_back_to_exact_source_positions(small_paper, tmp_path):
    paragraph = next(p for p in small_paper.paragraphs if p.text.startswith("We train"))
    start = paragraph.text.index("learning rate")
    where = span_location(paragraph, start, start + len("learning rate"))
    source_line = (tmp_path / "main.tex").read_text().splitlines()[where.line]
    assert source_line[where.column : where.end_column] == "learning rate"
    see = paragraph.text.index("Section")
    where = span_location(paragraph, see, see + len("Section"))
    assert (tmp_path / "main.tex").read_text().splitlines()[where.line][where.column : where.end_column] == "Section"


def test_tables_and_algorithms(small_paper):
    [table] = small_paper.tables
    assert (table.number, table.label, table.caption) == ("1", "tab:hp", "Hyperparameters.")
    assert table.rows == [["Setting", "Value"], ["Learning rate", "$3\\times10^{-4}$"], ["Batch size", "256"]]
    assert (table.row_locations[2].line, table.row_locations[2].column) == (19, 4)  # "Batch size"
    [algorithm] = small_paper.algorithms
    assert algorithm.title == "Training step" and algorithm.number == "1"
    assert algorithm.steps == ["Require: data $D$", "for $t = 1$ to $T$ do", "$\\theta \\gets \\theta - \\eta g_t$", "end for"]


def test_title_and_files_read(small_paper):
    assert small_paper.title == "A Small Test Paper"
    assert sorted(small_paper.files) == ["main.tex", "method.tex"]
    assert small_paper.problems == []


def test_numberwithin_and_appendix_equation_format(tmp_path):
    main = write_paper(
        tmp_path,
        {
            "main.tex": r"""\documentclass{article}\numberwithin{equation}{section}
\begin{document}
\section{One}
\begin{equation}a\end{equation}
\begin{subequations}\begin{align}b\\c\end{align}\end{subequations}
\appendix
\section{Proofs}
\begin{equation}d\label{eq:d}\end{equation}
\end{document}"""
        },
    )
    spec = read_latex(main, tmp_path)
    assert [e.number for e in spec.equations] == ["1.1", "1.2a", "1.2b", "A.1"]


# -- bad input: one clear message, never a hang -------------------------------------------------


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"main.tex": "\\begin{document}\\input{a}\\end{document}", "a.tex": "\\input{b}", "b.tex": "\\input{a}"}, "\\input loop: a.tex → b.tex → a.tex"),
        ({"main.tex": "\\begin{document}\\input{main}\\end{document}"}, "\\input loop: main.tex → main.tex"),
        ({"main.tex": "\\begin{document}\\input{../../etc/passwd}\\end{document}"}, "points outside the paper's folder"),
        ({"main.tex": "\\begin{document}\n\\section{A\n\\end{document}"}, "main.tex:2:9: unbalanced braces: this '{' is never closed"),
        ({"main.tex": "\\begin{document}\ntext}\n\\end{document}"}, "main.tex:2:5: unbalanced braces: this '}' closes nothing"),
    ],
)
def test_bad_sources_give_one_clear_error(tmp_path, files, message):
    main = write_paper(tmp_path, files)
    with pytest.raises(PaperError) as raised:
        read_latex(main, tmp_path)
    assert message in str(raised.value)


def test_a_huge_source_is_refused_quickly(tmp_path):
    main = tmp_path / "main.tex"
    main.write_text("\\begin{document}\n" + ("x " * 50 + "\n") * 100_000 + "\\end{document}\n")
    assert main.stat().st_size > 10_000_000
    started = time.perf_counter()
    with pytest.raises(PaperError, match="larger than 4 MB"):
        read_latex(main, tmp_path)
    assert time.perf_counter() - started < 5


def test_macro_loops_end_with_a_warning(tmp_path):
    main = write_paper(tmp_path, {"main.tex": "\\def\\a{\\b}\\def\\b{\\a}\\begin{document}\nText \\a and $x=\\b$.\n\\end{document}"})
    spec = read_latex(main, tmp_path)
    assert any("keeps expanding" in p.message for p in spec.problems)
    assert spec.paragraphs[0].text.startswith("Text")


def test_missing_input_is_a_warning_not_a_failure(tmp_path):
    main = write_paper(tmp_path, {"main.tex": "\\begin{document}\\input{gone}\nStill read.\\end{document}"})
    spec = read_latex(main, tmp_path)
    assert [p.message for p in spec.problems] == ["\\input{gone}: file not found; skipped"]
    assert spec.paragraphs[0].text == "Still read."


# -- the real papers ----------------------------------------------------------------------------

REAL_MAIN_FILES = sorted(LATEX_PAPERS.glob("*/paper2code_paper.tex")) + [
    PDF_PAPERS / "label-smoothing-report" / "article.tex",
    PDF_PAPERS / "variational-sparse-coding-report" / "draft.tex",
]


@pytest.mark.parametrize("main", REAL_MAIN_FILES, ids=lambda p: p.parent.name)
def test_every_real_paper_reads_without_error(main):
    spec = read_latex(main, main.parent)
    assert spec.sections and spec.paragraphs
    assert not [p for p in spec.problems if p.severity == "error"]
    for paragraph in spec.paragraphs:
        assert paragraph.location.file in spec.files


def _equation(spec, number):
    return next(e for e in spec.equations if e.number == number)


def test_dyt_equations_sections_and_algorithm():
    main = LATEX_PAPERS / "DyT" / "paper2code_paper.tex"
    spec = read_latex(main, main.parent)
    assert r"\tanh(\alpha {\bm{x}})" in _equation(spec, "2").latex  # \vx expanded
    assert ("4", "Dynamic Tanh (DyT)") in [(s.number, s.title) for s in spec.sections]
    appendix = [s for s in spec.sections if s.appendix]
    assert appendix[0].number == "A" and appendix[0].title == "Experimental Settings"
    assert "class DyT(Module):" in spec.algorithms[0].steps


def test_diff_transformer_labelled_equations():
    main = LATEX_PAPERS / "Diff-Transformer" / "paper2code_paper.tex"
    spec = read_latex(main, main.parent)
    lam = _equation(spec, "2")
    assert lam.label == "eq:lambda" and r"\lambda = \exp(" in lam.latex
    assert _equation(spec, "5").label == "eq:ffn"


def test_label_smoothing_report_follows_inputs_and_operators():
    main = PDF_PAPERS / "label-smoothing-report" / "article.tex"
    spec = read_latex(main, main.parent)
    assert {"article.tex", "content.tex", "appendix.tex", "header.tex"} <= set(spec.files)
    assert r"(1-\beta) H(y,q^\tau)" in _equation(spec, "2").latex
    assert any(r"\operatorname{conf}(x)" in e.latex for e in spec.equations)  # \DeclareMathOperator
    section = next(s for s in spec.sections if s.number == "A.1")
    assert section.appendix and section.location.file == "appendix.tex"


def test_exponential_macros_and_deep_nesting_end_quickly(tmp_path):
    names = [f"\\m{chr(97 + i)}" for i in range(26)]  # each expands to two of the next: 2^25 tokens
    defs = "".join(f"\\def{a}{{{b}{b}}}" for a, b in zip(names, names[1:]))
    main = write_paper(tmp_path, {"main.tex": defs + "\\begin{document}\nA \\ma and $\\ma$ and $\\ma$.\n\\end{document}"})
    started = time.perf_counter()
    spec = read_latex(main, tmp_path)
    assert time.perf_counter() - started < 5
    assert any("keeps expanding" in p.message for p in spec.problems)
    body = "We use " + "\\footnote{" * 5000 + "the deepest words" + "}" * 5000 + " here."
    deep = write_paper(tmp_path / "deep", {"main.tex": "\\begin{document}" + body + "\\end{document}"})
    spec = read_latex(deep, deep.parent)  # an explicit bound, under any recursion limit
    assert any("nested more than 40 levels deep" in p.message and p.location.line == 0 for p in spec.problems)
    assert any("the deepest words" in p.text for p in spec.paragraphs)

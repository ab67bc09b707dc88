"""The Markdown reader: structure and exact source locations, on small documents and a real paper."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from paperlens.pipeline.errors import PaperError
from paperlens.pipeline.ingest.markdown import read_markdown
from paperlens.pipeline.ingest.positions import span_location
from paperlens.schemas import Location, PaperSpec

from .conftest import LATEX_PAPERS

GPS = LATEX_PAPERS / "GPS" / "paper2code_paper.md"


def read(tmp_path: Path, markdown: str, name: str = "paper.md") -> PaperSpec:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown, encoding="utf-8")
    return read_markdown(path, tmp_path)


def span(location: Location) -> tuple[int | None, int | None, int | None, int | None]:
    return location.line, location.column, location.end_line, location.end_column


def source_at(source_lines: list[str], location: Location) -> str:
    assert location.line == location.end_line, "expected a span on one line"
    return source_lines[location.line][location.column : location.end_column]


# -- small documents -----------------------------------------------------------------------------


def test_spec_records_format_root_main_file_and_hash(tmp_path):
    spec = read(tmp_path, "Some prose.\n", name="paper/draft.md")
    data = (tmp_path / "paper" / "draft.md").read_bytes()
    assert spec.source_format == "markdown"
    assert spec.root == str(tmp_path.resolve())
    assert spec.main_file == "paper/draft.md"
    assert spec.files == {"paper/draft.md": hashlib.sha256(data).hexdigest()}


def test_headings_give_title_sections_numbers_levels_and_appendix(tmp_path):
    spec = read(
        tmp_path,
        "# Tempered Mixing\n"
        "\n"
        "#### Abstract\n"
        "\n"
        "## 1 Introduction\n"
        "\n"
        "2 Method\n"
        "--------\n"
        "\n"
        "### 2.1. Details {#sec:details}\n"
        "\n"
        "## Related work ##\n"
        "\n"
        "## Appendix A: Proofs\n"
        "\n"
        "### A.1 First lemma\n"
        "\n"
        "## B Extra experiments\n",
    )
    assert spec.title == "Tempered Mixing"
    got = [(s.id, s.number, s.title, s.level, s.appendix, s.label) for s in spec.sections]
    assert got == [
        ("sec-abstract", None, "Abstract", 1, False, None),
        ("sec-1", "1", "Introduction", 1, False, None),
        ("sec-2", "2", "Method", 1, False, None),
        ("sec:details", "2.1", "Details", 2, False, "sec:details"),
        ("sec-related-work", None, "Related work", 1, False, None),
        ("sec-A", "A", "Proofs", 1, True, None),
        ("sec-A.1", "A.1", "First lemma", 2, True, None),
        ("sec-B", "B", "Extra experiments", 1, True, None),
    ]
    by_id = {s.id: s for s in spec.sections}
    assert span(by_id["sec-1"].location) == (4, 0, 4, 17)
    assert span(by_id["sec-2"].location) == (6, 0, 7, 8)  # setext: title line and underline
    assert span(by_id["sec:details"].location) == (9, 0, 9, 31)


def test_a_letter_is_no_section_number_before_the_appendix(tmp_path):
    spec = read(tmp_path, "# Title\n\n## A Note on Compute\n\n## Appendix\n\n## C Proofs\n")
    assert [(s.number, s.title, s.appendix) for s in spec.sections] == [
        (None, "A Note on Compute", False),
        (None, "Appendix", True),
        ("C", "Proofs", True),
    ]


def test_first_heading_is_no_title_when_it_is_a_section(tmp_path):
    spec = read(tmp_path, "# 1 Introduction\n\nText.\n")
    assert spec.title is None
    assert [s.id for s in spec.sections] == ["sec-1"]
    assert spec.paragraphs[0].section_id == "sec-1"


def test_paragraph_lines_are_joined_and_anchored_line_by_line(tmp_path):
    spec = read(tmp_path, "## 1 Setup\n\nWe train for 200 epochs\n   with a batch size of 128.\n")
    [paragraph] = spec.paragraphs
    assert paragraph.text == "We train for 200 epochs with a batch size of 128."
    assert paragraph.kind == "text"
    assert paragraph.section_id == "sec-1"
    assert span(paragraph.location) == (2, 0, 3, 28)
    assert paragraph.offsets == [(0, 2, 0), (24, 3, 3)]
    start = paragraph.text.index("128")
    assert span(span_location(paragraph, start, start + 3)) == (3, 24, 3, 27)
    start = paragraph.text.index("epochs")
    assert span(span_location(paragraph, start, start + 6)) == (2, 17, 2, 23)


def test_inline_markup_is_removed_and_math_kept_with_anchors_at_every_jump(tmp_path):
    source = "We use **AdamW** with $\\lambda_{\\text{wd}}=0.1$, see [the code](https://x.org) \\& 10\\% <br> of \\(\\tau\\).\n"
    spec = read(tmp_path, source)
    [paragraph] = spec.paragraphs
    assert paragraph.text == "We use AdamW with $\\lambda_{\\text{wd}}=0.1$, see the code & 10% of $\\tau$."
    lines = source.split("\n")
    for word in ("AdamW", "$\\lambda_{\\text{wd}}=0.1$", "the code", "&", "10", "%", "of", "\\tau"):
        start = paragraph.text.index(word)
        assert source_at(lines, span_location(paragraph, start, start + len(word))) == word


def test_inline_math_may_span_lines(tmp_path):
    spec = read(tmp_path, "The loss $a +\n b$ is used.\n")
    assert spec.paragraphs[0].text == "The loss $a + b$ is used."


def test_display_math_with_label_tag_and_trailing_number(tmp_path):
    spec = read(
        tmp_path,
        "## 2 Method\n"
        "\n"
        "$$\n"
        "\\mathcal{L} = \\mathcal{L}_{\\text{mix}} + \\lambda \\mathcal{L}_{\\text{cons}} \\label{eq:loss}\n"
        "$$ (3)\n"
        "\n"
        "\\[ w = m^{1/\\tau} \\tag{A.1} \\]\n"
        "\n"
        "$$x = y$$\n",
    )
    first, second, third = spec.equations
    assert (first.id, first.number, first.label) == ("eq:loss", "3", "eq:loss")
    assert (
        first.latex == first.text == "\\mathcal{L} = \\mathcal{L}_{\\text{mix}} + \\lambda \\mathcal{L}_{\\text{cons}}"
    )
    assert first.section_id == "sec-2"
    assert span(first.location) == (2, 0, 4, 6)
    assert (second.id, second.number, second.label, second.latex) == ("eq-A.1", "A.1", None, "w = m^{1/\\tau}")
    assert span(second.location) == (6, 0, 6, 30)
    assert (third.id, third.number, third.latex) == ("eq@paper.md:9", None, "x = y")
    assert spec.paragraphs == []


def test_dollars_followed_by_prose_on_the_same_line_are_inline_math(tmp_path):
    spec = read(tmp_path, "$$x$$ is the input and\n\\[1\\] A. Author, 2020.\n")
    assert spec.equations == []
    assert [p.text for p in spec.paragraphs] == ["$$x$$ is the input and [1] A. Author, 2020."]


def test_unclosed_display_math_is_reported_and_reading_goes_on(tmp_path):
    spec = read(tmp_path, "$$\na + b\n\nAfter the math.\n")
    [equation] = spec.equations
    assert equation.latex == "a + b"
    assert [p.severity for p in spec.problems] == ["warning"]
    assert spec.problems[0].location.line == 0
    assert [p.text for p in spec.paragraphs] == ["After the math."]


def test_pipe_table_with_caption_before_rows_and_math_cells(tmp_path):
    source = (
        "## 3 Experiments\n"
        "\n"
        "Table 2: **Hyperparameters** for CIFAR-10.\n"
        "\n"
        "| Setting | Value |\n"
        "| :-- | --: |\n"
        "| Learning rate | $3\\times10^{-4}$ |\n"
        "| Norm | $\\|w\\|_2$ |\n"
        "|  | 128 |\n"
        "\n"
        "After the table.\n"
    )
    spec = read(tmp_path, source)
    [table] = spec.tables
    assert (table.id, table.number, table.caption, table.section_id) == (
        "tab-2",
        "2",
        "Hyperparameters for CIFAR-10.",
        "sec-3",
    )
    assert table.rows == [
        ["Setting", "Value"],
        ["Learning rate", "$3\\times10^{-4}$"],
        ["Norm", "$\\|w\\|_2$"],
        ["", "128"],
    ]
    assert [span(loc) for loc in table.row_locations] == [(4, 0, 4, 19), (6, 0, 6, 36), (7, 0, 7, 20), (8, 0, 8, 10)]
    assert span(table.location) == (4, 0, 8, 10)
    caption, after = spec.paragraphs
    assert (caption.kind, caption.text) == ("caption", "Table 2: Hyperparameters for CIFAR-10.")
    assert after.text == "After the table."


def test_table_caption_after_the_table_and_a_table_without_caption(tmp_path):
    spec = read(
        tmp_path,
        "a | b\n--- | ---\n1 | 2\n\nTable 5: Below the rows.\n\nProse.\n\n| c |\n|---|\n| 3 |\n",
    )
    first, second = spec.tables
    assert (first.id, first.number, first.caption, first.rows) == (
        "tab-5",
        "5",
        "Below the rows.",
        [["a", "b"], ["1", "2"]],
    )
    assert (second.id, second.number, second.caption, second.rows) == ("tab@paper.md:9", None, "", [["c"], ["3"]])


def test_caption_line_inside_a_paragraph_starts_a_caption(tmp_path):
    spec = read(tmp_path, "so we do\nTable 1: Search results.\n\n| x | y |\n|---|---|\n| 1 | 2 |\n")
    assert [(p.kind, p.text) for p in spec.paragraphs] == [
        ("text", "so we do"),
        ("caption", "Table 1: Search results."),
    ]
    assert spec.tables[0].caption == "Search results."


def test_list_items_and_footnotes_are_paragraphs_of_their_kind(tmp_path):
    spec = read(
        tmp_path,
        "Settings:\n"
        "\n"
        "- dropout of 0.1\n"
        "  on every block\n"
        "2. warm-up of 10k steps\n"
        "\n"
        "[^1]:    Gradients are clipped\n"
        "    to norm 1.0.\n"
        "The next paragraph.\n",
    )
    got = [(p.kind, p.text, span(p.location)) for p in spec.paragraphs]
    assert got == [
        ("text", "Settings:", (0, 0, 0, 9)),
        ("item", "dropout of 0.1 on every block", (2, 2, 3, 16)),
        ("item", "warm-up of 10k steps", (4, 3, 4, 23)),
        ("footnote", "Gradients are clipped to norm 1.0.", (6, 9, 7, 16)),
        ("text", "The next paragraph.", (8, 0, 8, 19)),
    ]


def test_code_blocks_and_html_comments_never_reach_the_spec(tmp_path):
    spec = read(
        tmp_path,
        "Before <!-- lr 1e-3 --> after.\n"
        "\n"
        "<!--\n"
        "batch size 512\n"
        "-->\n"
        "```python\n"
        "lr = 0.1\n"
        "\n"
        "# not a heading\n"
        "```\n"
        "Closing words.\n",
    )
    assert spec.sections == []
    [before, closing] = spec.paragraphs
    assert before.text == "Before after."
    assert span(span_location(before, 7, 12)) == (
        0,
        24,
        0,
        29,
    )  # "after", behind the comment  # "after" comes after the comment
    assert (closing.text, closing.location.line) == ("Closing words.", 10)
    assert all("512" not in p.text and "0.1" not in p.text for p in spec.paragraphs)


def test_algorithms_from_a_bold_line_with_a_list_and_a_heading_with_code(tmp_path):
    spec = read(
        tmp_path,
        "## 2 Method\n"
        "\n"
        "**Algorithm 1:** One *training* step\n"
        "\n"
        "1. Draw $m \\sim \\mathrm{Beta}(\\alpha, \\alpha)$\n"
        "2. Mix the inputs\n"
        "\n"
        "3. Update $\\theta$\n"
        "\n"
        "### Algorithm 2: Sampling\n"
        "```\n"
        "for t in steps:\n"
        "    x = step(x)\n"
        "```\n"
        "\n"
        "Algorithm 3 converges faster than\n"
        "- the baseline\n",
    )
    first, second = spec.algorithms
    assert (first.id, first.number, first.title, first.section_id) == ("alg-1", "1", "One training step", "sec-2")
    assert first.steps == ["Draw $m \\sim \\mathrm{Beta}(\\alpha, \\alpha)$", "Mix the inputs", "Update $\\theta$"]
    assert span(first.location) == (2, 0, 7, 18)
    assert (second.id, second.title, second.steps) == ("alg-2", "Sampling", ["for t in steps:", "x = step(x)"])
    assert span(second.location) == (9, 0, 13, 3)
    assert [s.id for s in spec.sections] == ["sec-2"]  # an algorithm heading is no section
    assert [(p.kind, p.text) for p in spec.paragraphs] == [
        ("text", "Algorithm 3 converges faster than"),
        ("item", "the baseline"),
    ]


def test_crlf_and_byte_order_mark_keep_columns_right(tmp_path):
    path = tmp_path / "paper.md"
    path.write_bytes("\ufeff## 1 Intro\r\nA line\r\nand more.\r\n".encode())
    spec = read_markdown(path, tmp_path)
    assert span(spec.sections[0].location) == (0, 0, 0, 10)
    assert spec.paragraphs[0].text == "A line and more."
    assert span(spec.paragraphs[0].location) == (1, 0, 2, 9)


def test_missing_file_is_a_paper_error_naming_it(tmp_path):
    with pytest.raises(PaperError, match=r"missing\.md: no such file"):
        read_markdown(tmp_path / "missing.md", tmp_path)


def test_undecodable_bytes_are_a_paper_error_naming_the_file(tmp_path):
    path = tmp_path / "latin1.md"
    path.write_bytes("Caf\xe9 au lait\n".encode("latin-1"))
    with pytest.raises(PaperError, match=r"latin1\.md: not UTF-8 text \(undecodable byte at offset 3\)"):
        read_markdown(path, tmp_path)


def test_file_outside_the_root_is_a_paper_error(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    path = tmp_path / "paper.md"
    path.write_text("Text.\n")
    with pytest.raises(PaperError, match="not inside the paper folder"):
        read_markdown(path, tmp_path / "elsewhere")


# -- a real converted paper ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def gps() -> PaperSpec:
    return read_markdown(GPS, GPS.parent)


@pytest.fixture(scope="module")
def gps_lines() -> list[str]:
    return GPS.read_text(encoding="utf-8").split("\n")


def test_gps_title_and_sections(gps):
    assert gps.title == "GPS: A Probabilistic DistributiOnal Similarity WITH GUMBEL PRIORS FOR SET-TO-SET MATCHING"
    assert [(s.number, s.level) for s in gps.sections] == [
        (None, 1), ("1", 1), ("2", 1), ("3", 1), ("3.1", 2), ("3.2", 2), ("3.3", 2),
        ("4", 1), ("4.1", 2), ("4.2", 2), ("5", 1), (None, 1), (None, 1),
    ]  # fmt: skip
    by_id = {s.id: s for s in gps.sections}
    assert by_id["sec-3.2"].title == "GPS: Gumbel Prior Similarity for Set-to-Set Matching"
    assert by_id["sec-3.3"].title == "ANALYSIS"  # "# 3.3": the number, not the `#`, gives the level
    assert span(by_id["sec-3.3"].location) == (98, 0, 98, 14)
    assert [by_id[i].title for i in ("sec-abstract", "sec-acknowledgment", "sec-references")] == [
        "Abstract", "ACKNOWLEDGMENT", "REFERENCES",
    ]  # fmt: skip
    assert not any(s.appendix for s in gps.sections)


def test_gps_display_equations(gps, gps_lines):
    assert [(e.section_id, e.location.line, e.location.end_line) for e in gps.equations] == [
        ("sec-3.1", 57, 59), ("sec-3.2", 69, 74), ("sec-3.2", 89, 94), ("sec-4.1", 135, 137), ("sec-4.2", 182, 184),
    ]  # fmt: skip
    gumbel = gps.equations[0]
    assert gumbel.id == "eq@paper2code_paper.md:58"
    assert gumbel.number is None and gumbel.label is None
    assert (
        gumbel.latex
        == "p(x)=\\frac{1}{\\sigma} \\exp \\{-(y+\\exp \\{-y\\})\\}, \\text { where } y=\\frac{x-\\mu}{\\sigma}"
    )
    assert gps.equations[1].latex.startswith("\\begin{aligned}\np\\left(\\mathcal{P}_{1}=\\mathcal{P}_{2}")
    assert (
        gps.equations[4].latex
        == "\\max _{\\theta} \\sum_{u} \\kappa\\left(f\\left(\\mathcal{X}_{u} ; \\theta\\right), \\mathcal{Y}_{u}\\right)"
    )


def test_gps_tables_with_their_captions(gps):
    assert [t.number for t in gps.tables] == ["1", "2", "4", "5", "6", "9", "7", "8", "10", "11", "12"]
    cross_domain = next(t for t in gps.tables if t.id == "tab-4")
    assert (
        cross_domain.caption
        == "Cross-domain results (%) (miniImagenet $\\rightarrow$ CUB) on 1-shot 5-way and 5-shot 5-way tasks."
    )
    assert cross_domain.rows[0] == ["Model", "1-shot", "5-shot"]
    assert cross_domain.rows[1] == ["ProtoNet", "$50.01 \\pm 0.82$", "$72.02 \\pm 0.67$"]
    assert cross_domain.rows[-1] == [
        "Ours: GPS",
        "$\\mathbf{5 2 . 3 8} \\pm \\mathbf{0 . 4 7}$",
        "$\\mathbf{7 6 . 5 9} \\pm \\mathbf{0 . 5 2}$",
    ]
    assert len(cross_domain.rows) == len(cross_domain.row_locations) == 11
    assert cross_domain.row_locations[1].line == 160
    assert cross_domain.section_id == "sec-4.1"
    # Table 1's caption line closes a paragraph ("Therefore, we do") rather than standing alone.
    search = gps.tables[0]
    assert search.caption.startswith("$\\alpha$ and $\\beta$ search with 1st nearest neighbors")
    assert search.rows[2][:4] == ["Acc", "72.75", "72.51", "73.23"]
    assert len(search.rows[0]) == 17


def test_gps_prose_kinds_and_sections(gps):
    problem = next(p for p in gps.paragraphs if p.text.startswith("Problem. Set-to-set matching"))
    assert (problem.kind, problem.section_id, problem.location.line) == ("text", "sec-1", 12)
    footnotes = [p for p in gps.paragraphs if p.kind == "footnote"]
    assert [p.text for p in footnotes] == [
        (
            "*First co-author, project leader ${ }^{\\dagger}$ First co-author, responsible for experiments on point "
            "cloud completion ${ }^{\\ddagger}$ First co-author, responsible for experiments on few-shot classification"
        ),
        "${ }^{1}$ https://github.com/icoz69/DeepEMD",
    ]
    # The page's prose resumes right after the footnote, unindented: it is no part of it.
    resumed = next(p for p in gps.paragraphs if p.text.startswith("et al., 2019)), or both"))
    assert (resumed.kind, resumed.location.line) == ("text", 20)
    items = [p for p in gps.paragraphs if p.kind == "item"]
    assert len(items) == 8
    assert items[0].text.startswith("M Gumbels, K Nearest Neighbors, and Mixtures: Table 1, Table 2")
    captions = [p.text.split(":")[0] for p in gps.paragraphs if p.kind == "caption"]
    assert captions.count("Figure 7") == 1 and captions.count("Table 7") == 1
    assert not any(p.text.startswith("![") or p.text == "[^0]" for p in gps.paragraphs)


def test_gps_every_word_of_the_prose_maps_back_to_the_source(gps, gps_lines):
    checked = 0
    for paragraph in gps.paragraphs:
        for word in re.finditer(r"[A-Za-z]{3,}", paragraph.text):
            assert source_at(gps_lines, span_location(paragraph, word.start(), word.end())) == word.group()
            checked += 1
    assert checked > 5000

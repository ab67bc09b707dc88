"""The PDF reader on real papers (checked against their LaTeX and their PDF outline), on a
generated paper with known contents, and on broken input."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pymupdf
import pytest

from paperlens.pipeline.errors import PaperError
from paperlens.pipeline.ingest.pdf import read_pdf

from .conftest import EXAMPLE_PAPER, PDF_PAPERS

LABEL_SMOOTHING = PDF_PAPERS / "label-smoothing-report" / "article.pdf"
SPARSE_CODING = PDF_PAPERS / "variational-sparse-coding-report" / "draft.pdf"
ALPHA_ZERO = PDF_PAPERS / "alpha-zero-writeup" / "writeup.pdf"
REAL_PDFS = [LABEL_SMOOTHING, SPARSE_CODING, ALPHA_ZERO]


@pytest.fixture(scope="module")
def specs():
    return {path: read_pdf(path, path.parent) for path in REAL_PDFS}


def located_items(spec):
    yield from spec.sections
    yield from spec.equations
    yield from spec.algorithms
    yield from spec.tables
    yield from spec.paragraphs


# --------------------------------------------------------------------- real papers


@pytest.mark.parametrize("path", REAL_PDFS, ids=lambda path: path.parent.name)
def test_real_pdf_reads_with_every_item_located_on_its_page(specs, path):
    spec = specs[path]
    with pymupdf.open(path) as document:
        page_rects = [page.rect for page in document]
    assert spec.source_format == "pdf"
    assert spec.main_file == path.name
    assert spec.files == {path.name: hashlib.sha256(path.read_bytes()).hexdigest()}
    assert spec.page_count == len(page_rects)
    assert spec.sections and spec.paragraphs
    assert not (spec.hyperparameters or spec.components or spec.symbols)  # filled by a later stage
    for item in located_items(spec):
        location = item.location
        assert location.file == path.name
        x0, y0, x1, y1 = location.bbox
        page = page_rects[location.page - 1]
        assert 0 <= x0 < x1 <= page.width and 0 <= y0 < y1 <= page.height, item
    assert all(not paragraph.offsets for paragraph in spec.paragraphs)
    assert all(equation.latex is None and not equation.symbols for equation in spec.equations)
    assert not [problem for problem in spec.problems if problem.severity != "info"]


@pytest.mark.parametrize(
    ("path", "run_in"),
    [(LABEL_SMOOTHING, {"Results"}), (SPARSE_CODING, set()), (ALPHA_ZERO, set())],
    ids=["label-smoothing", "sparse-coding", "alpha-zero"],
)
def test_headings_match_the_pdf_outline(specs, path, run_in):
    """The PDF's own bookmarks are ground truth; run-in paragraph headings are not display headings."""
    with pymupdf.open(path) as document:
        outline = {(level, " ".join(title.split()), page) for level, title, page in document.get_toc() if level <= 2}
    found = {(section.level, section.title, section.location.page) for section in specs[path].sections}
    assert {title for _level, title, _page in outline - found} == run_in


def test_label_smoothing_sections_numbers_and_appendix(specs):
    sections = {section.id: section for section in specs[LABEL_SMOOTHING].sections}
    assert sections["sec-2.2"].title == "Neural Network Models and Training"
    assert sections["sec-2.2"].level == 2 and sections["sec-2.2"].location.page == 4
    assert sections["sec-references"].number is None
    assert [s.id for s in sections.values() if s.appendix] == ["sec-A", "sec-A.1", "sec-A.2", "sec-A.3"]
    assert sections["sec-A.1"].title == "Code for Penultimate Layer Representation"


def test_title_is_the_largest_text_on_page_one(specs):
    assert specs[LABEL_SMOOTHING].title == "[Re] When Does Label Smoothing Help?"
    assert specs[ALPHA_ZERO].title == "Learning to Play Othello Without Human Knowledge"


def numbered_equations_in_latex(folder: Path) -> int:
    """Numbered display lines in a paper's LaTeX: unstarred equation/align/... rows without \\nonumber."""
    count = 0
    for tex in folder.glob("*.tex"):
        source = re.sub(r"(?<!\\)%.*", "", tex.read_text(encoding="utf-8"))
        pattern = r"\\begin\{(equation|align|gather|multline|eqnarray)\}(.*?)\\end\{\1\}"
        for environment, body in re.findall(pattern, source, re.DOTALL):
            rows = body.split("\\\\") if environment in ("align", "gather", "eqnarray") else [body]
            count += sum(1 for row in rows if row.strip() and "\\nonumber" not in row and "\\notag" not in row)
    return count


@pytest.mark.parametrize("path", [LABEL_SMOOTHING, SPARSE_CODING], ids=["label-smoothing", "sparse-coding"])
def test_numbered_equations_agree_with_the_latex_source(specs, path):
    numbered = [equation.number for equation in specs[path].equations if equation.number]
    assert len(numbered) == numbered_equations_in_latex(path.parent)
    assert numbered == [str(n) for n in range(1, len(numbered) + 1)]


def test_label_smoothing_equations_text_page_and_section(specs):
    equations = {equation.id: equation for equation in specs[LABEL_SMOOTHING].equations}
    softmax = equations["eq-1"]  # p_k = exp(a^T w_k) / sum_l exp(a^T w_l)
    assert softmax.location.page == 6 and softmax.section_id == "sec-4"
    assert "p_k" in softmax.text and "exp" in softmax.text and "a^T w_k" in softmax.text
    distillation = equations["eq-2"]  # L(y, p^τ, q^τ) = (1 − β) H(y, q^τ) + β H(p^τ, q^τ)
    assert distillation.location.page == 11 and distillation.section_id == "sec-6"
    assert "H(y, q^τ)" in distillation.text and "β" in distillation.text
    assert "γ" in equations["eq-3"].text
    smoothing = next(equation for equation in equations.values() if "y^{LS}_k" in equation.text)
    assert smoothing.number is None and smoothing.location.page == 1  # the $$...$$ display of section 1.1


def test_alpha_zero_has_its_two_displays_and_no_equation_numbers(specs):
    equations = specs[ALPHA_ZERO].equations
    assert [equation.number for equation in equations] == [None, None]
    assert equations[0].text.startswith("l =") and equations[0].section_id == "sec-3.1"
    assert equations[1].text.startswith("U(s, a) = Q(s, a)") and equations[1].section_id == "sec-3.2"


@pytest.mark.parametrize("path", [LABEL_SMOOTHING, ALPHA_ZERO], ids=["label-smoothing", "alpha-zero"])
def test_cropping_an_equation_box_shows_the_whole_equation(specs, path):
    """A crop of the box has ink inside and none on its border: nothing of the formula is cut off."""
    with pymupdf.open(path) as document:
        for equation in specs[path].equations:
            page = document[equation.location.page - 1]
            pixmap = page.get_pixmap(clip=pymupdf.Rect(equation.location.bbox), dpi=144, colorspace=pymupdf.csGRAY)
            rows = [pixmap.samples[y * pixmap.stride : y * pixmap.stride + pixmap.width] for y in range(pixmap.height)]
            border = rows[0] + rows[-1] + bytes(row[0] for row in rows) + bytes(row[-1] for row in rows)
            assert min(border) == 255, equation.id
            assert min(min(row) for row in rows) < 128, equation.id


def test_label_smoothing_table_keeps_decimals_and_columns(specs):
    table = next(table for table in specs[LABEL_SMOOTHING].tables if table.number == "2")
    assert table.caption.startswith("Table 2. Top-1 classification accuracies")
    assert table.section_id == "sec-3" and table.location.page == 5
    header = next(row for row in table.rows if "DATASET" in row)
    mnist = next(row for row in table.rows if row[0] == "MNIST")
    assert mnist == ["MNIST", "FCN (OURS)", "99.06", "99.33", "99.31", "99.24", "99.13"]
    assert mnist[header.index("α = 0.0")] == "99.06"
    assert len(table.row_locations) == len(table.rows)


def test_table_with_caption_underneath_is_read_above_it(specs):
    [table] = specs[ALPHA_ZERO].tables
    assert table.caption == "Table 1: Number of games won against various baselines by our final models"
    assert table.rows[0] == ["Baseline", "6x6 board", "8x8 board"]
    assert ["Minimax", "30/30", "29/30"] in table.rows


def test_algorithms_have_titles_and_steps(specs):
    algorithms = {algorithm.id: algorithm for algorithm in specs[ALPHA_ZERO].algorithms}
    assert [algorithms[key].title for key in ("alg-1", "alg-2", "alg-3")] == [
        "Monte Carlo Tree Search", "Policy Iteration through Self-Play", "Execute Episode",
    ]
    assert algorithms["alg-2"].steps[0] == "1: procedure PolicyIterationSP"
    assert any("initNN()" in step for step in algorithms["alg-2"].steps)
    [listing] = specs[LABEL_SMOOTHING].algorithms
    assert listing.section_id == "sec-A.1" and "1 import numpy as np" in listing.steps


def test_paragraphs_belong_to_sections_and_read_cleanly(specs):
    spec = specs[SPARSE_CODING]
    section_ids = {section.id for section in spec.sections}
    after_first_heading = [p for p in spec.paragraphs if p.location.page > 1 or p.section_id]
    assert all(paragraph.section_id in section_ids for paragraph in after_first_heading)
    batch_size = next(p for p in spec.paragraphs if "batch size" in p.text and "$32$" in p.text)
    assert batch_size.kind == "item" and batch_size.section_id == "sec-4.2"
    texts = [paragraph.text for s in specs.values() for paragraph in s.paragraphs]
    assert not any("ﬁ" in text or "ReScience C 4.1" in text for text in texts)  # ligatures, running footers
    label_smoothing = specs[LABEL_SMOOTHING].paragraphs
    assert any("overconfidence in classification tasks" in p.text for p in label_smoothing)  # "overcon-" + "fidence"
    assert any("fully-connected" in p.text for p in label_smoothing)  # a real hyphen survives a line break


def test_captions_and_footnotes_are_told_apart_from_text(specs):
    paragraphs = specs[LABEL_SMOOTHING].paragraphs
    figure = next(p for p in paragraphs if p.text.startswith("Figure 1."))
    assert figure.kind == "caption" and figure.location.page == 2
    footnote = next(p for p in paragraphs if "tiny-imagenet-200.zip" in p.text)
    assert footnote.kind == "footnote" and footnote.text.startswith("1 http")
    continued = next(p for p in specs[SPARSE_CODING].paragraphs if p.text.startswith("Figure 6."))
    assert continued.kind == "caption" and continued.text.endswith("Fashion-MNIST (b) datasets.")


def test_main_file_is_relative_to_the_paper_root():
    spec = read_pdf(ALPHA_ZERO, PDF_PAPERS)
    assert spec.main_file == "alpha-zero-writeup/writeup.pdf"
    assert spec.sections[0].location.file == "alpha-zero-writeup/writeup.pdf"


# --------------------------------------------------------------------- the example paper (ground truth in its README)


@pytest.fixture(scope="module")
def example():
    return read_pdf(EXAMPLE_PAPER / "paper.pdf", EXAMPLE_PAPER)


def test_example_equations_in_text_fonts_are_found_with_their_numbers(example):
    """Its math is set in text fonts (Charis SIL, Noto), not TeX math fonts: found by layout and symbols."""
    numbered = {equation.number: equation for equation in example.equations if equation.number}
    assert list(numbered) == ["1", "2", "3", "4", "5", "6"]
    assert numbered["3"].text.startswith("w = m^{1/τ}/(m^{1/τ} + (1 − m)^{1/τ})") and numbered["3"].section_id == "sec-2.1"
    assert "ρ" in numbered["4"].text
    assert numbered["6"].section_id == "sec-A" and numbered["6"].location.page == 3
    unnumbered = [equation.text for equation in example.equations if not equation.number]
    assert len(unnumbered) == 2 and unnumbered[0] == "m ∼ Beta(α, α),"  # the \nonumber line of the align
    assert unnumbered[1].startswith("ℒ_{mix} = −∑_{c=1}^C") and "softmax" in unnumbered[1]  # the equation*


def test_example_sections_and_table(example):
    numbered = [(section.number, section.title) for section in example.sections if section.number]
    assert numbered[-1] == ("A", "Gradient of the Tempered Weight") and example.sections[-1].appendix
    assert [number for number, _title in numbered] == ["1", "2", "2.1", "2.2", "3", "3.1", "3.2", "4", "A"]
    [table] = example.tables
    assert table.rows[0] == ["Hyperparameter", "Value"] and ["Batch size", "256"] in table.rows
    assert table.rows[-1] == ["Temperature τ", "0.5"] and table.row_locations[-1].page == 2
    assert table.location.page == 2


# --------------------------------------------------------------------- a generated paper

PROSE = (
    "We train the model with a carefully tuned schedule and report the mean of several runs, "
    "using the same data split for every method that we compare against in this section."
)


def make_paper(path: Path) -> None:
    """Two pages in PyMuPDF's built-in fonts: Helvetica prose, Symbol math, bold headings."""
    document = pymupdf.open()
    left, right = 72, 523

    def prose(page, y, text=PROSE):
        line = ""
        for word in text.split():
            if pymupdf.get_text_length(f"{line} {word}", "helv", 10) > right - left:
                page.insert_text((left, y), line, fontname="helv", fontsize=10)
                y, line = y + 12, word
            else:
                line = f"{line} {word}".strip()
        page.insert_text((left, y), line, fontname="helv", fontsize=10)
        return y + 22

    def heading(page, y, text, size):
        page.insert_text((left, y), text, fontname="hebo", fontsize=size)
        return y + 1.8 * size

    def equation_number(page, y, number):
        page.insert_text((right - pymupdf.get_text_length(number, "helv", 10), y), number, fontname="helv", fontsize=10)

    def display(page, y, formula, number=None, centred=False):
        x = (left + right - pymupdf.get_text_length(formula, "symb", 10)) / 2 if centred else 230
        page.insert_text((x, y), formula, fontname="symb", fontsize=10)
        if number:
            equation_number(page, y, number)

    def text_font_line(page, y, pieces):
        """A centred line in Helvetica; pieces are (text, subscript) pairs."""
        sized = [(text, subscript, 7 if subscript else 10) for text, subscript in pieces]
        x = (left + right - sum(pymupdf.get_text_length(text, "helv", size) for text, _, size in sized)) / 2
        for text, subscript, size in sized:
            page.insert_text((x, y + 2 if subscript else y), text, fontname="helv", fontsize=size)
            x += pymupdf.get_text_length(text, "helv", size)

    def running_header_and_page_number(page, number):
        page.insert_text((left, 40), "Synthetic paper for paperlens tests", fontname="helv", fontsize=8)
        page.insert_text((297, 810), str(number), fontname="helv", fontsize=8)

    page = document.new_page()
    running_header_and_page_number(page, 1)
    page.insert_text((left, 90), "A Synthetic Paper on Schedules", fontname="hebo", fontsize=18)
    y = prose(page, heading(page, 130, "1 Introduction", 13))
    display(page, y, "L = a + b S g", "(1)")
    display(page, y + 16, "b = 0.9 d", "(2)")
    y = prose(page, y + 40, "where a weighs the first term and b the second one in the loss we minimise here.")
    y = prose(page, heading(page, y + 6, "2 Method", 13))
    y = prose(page, heading(page, y, "2.1 Optimiser Settings", 11))
    page.insert_text((left, y), "Table 1: Hyperparameters of both models.", fontname="helv", fontsize=9)
    for row, cells in enumerate([("Model", "Learning rate", "Epochs"), ("Small", "0.001", "10"), ("Large", "3e-4", "20")]):
        for x, cell in zip((150, 300, 420), cells):
            page.insert_text((x, y + 18 + 13 * row), cell, fontname="helv", fontsize=8)
    y += 80
    page.insert_text((left, y), "Algorithm 1", fontname="hebo", fontsize=10)
    page.insert_text((left + 62, y), "Training loop", fontname="helv", fontsize=10)
    for step, text in enumerate(["for each batch do", "update the weights", "end for"], start=1):
        page.insert_text((left + 4, y + 12 * step), f"{step}:", fontname="helv", fontsize=9)
        page.insert_text((left + 24, y + 12 * step), text, fontname="helv", fontsize=9)
    page.insert_text((left, 757), "1", fontname="helv", fontsize=5)
    page.insert_text((left + 4, 760), "Code and data are released with the paper.", fontname="helv", fontsize=8)

    page = document.new_page()
    running_header_and_page_number(page, 2)
    reference = "Someone. A paper about things we cite in this synthetic document. 2024."
    y = prose(page, heading(page, 80, "References", 13), reference)
    y = prose(page, heading(page, heading(page, y + 10, "A Proofs", 13), "A.1 A Lemma", 11))
    display(page, y, "r = a / (1 - b)")
    display(page, y + 13, "+ g d", "(A.1)")
    y = prose(page, y + 36)
    y = prose(page, y, "Three centred lines, an align typeset line by line, with the middle one left unnumbered:")
    display(page, y, "u = a x + (1 - a) z", "(A.2)", centred=True)
    display(page, y + 14, "a ~ B(g, g)", centred=True)
    display(page, y + 28, "v = b y + (1 - b) w", "(A.3)", centred=True)
    y = prose(page, y + 50, "A split: two centred lines with one number set level with the middle of them both:")
    display(page, y, "s = a + b + g + d", centred=True)
    display(page, y + 14, "+ x + z", centred=True)
    equation_number(page, y + 7, "(A.4)")
    y = prose(page, y + 36, "The mixing loss, in the text font with words in its subscripts and operator names:")
    loss = [("L", False), ("mix", True), (" = - y", False), ("c", True), (" log softmax(z)", False), ("c", True)]
    text_font_line(page, y, loss)
    y = prose(page, y + 22, "A short centred sentence with a symbol and a subscript follows; it is prose, not math:")
    text_font_line(page, y, [("Loss L", False), ("mix", True), (" over all steps = 0.3", False)])
    prose(page, y + 22)
    document.save(path)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("paper")
    make_paper(folder / "paper.pdf")
    return read_pdf(folder / "paper.pdf", folder)


def test_generated_paper_sections_with_appendix_after_references(generated):
    assert generated.title == "A Synthetic Paper on Schedules"
    assert [(s.number, s.title, s.level, s.appendix) for s in generated.sections] == [
        ("1", "Introduction", 1, False),
        ("2", "Method", 1, False),
        ("2.1", "Optimiser Settings", 2, False),
        (None, "References", 1, False),
        ("A", "Proofs", 1, True),
        ("A.1", "A Lemma", 2, True),
    ]


def test_generated_paper_numbered_equations_one_per_number(generated):
    equations = {equation.id: equation for equation in generated.equations}
    assert list(equations) == ["eq-1", "eq-2", "eq-A.1", "eq-A.2", "eq@p2.1", "eq-A.3", "eq-A.4", "eq@p2.2"]
    assert equations["eq-1"].text == "L = a + b S g" and equations["eq-2"].text == "b = 0.9 d"
    assert equations["eq-1"].location.bbox[3] <= equations["eq-2"].location.bbox[1] + 4  # stacked, not merged
    assert equations["eq-A.1"].text == "r = a / (1 - b) + g d"  # the number sits on the second line only
    assert equations["eq-A.1"].section_id == "sec-A.1"


def test_generated_paper_centred_lines_take_the_number_level_with_them(generated):
    """Lines centred one above the other are displays of their own: one level with no number is unnumbered."""
    equations = [(e.number, e.text) for e in generated.equations if e.section_id == "sec-A.1"]
    assert equations[1:4] == [("A.2", "u = a x + (1 - a) z"), (None, "a ~ B(g, g)"), ("A.3", "v = b y + (1 - b) w")]
    assert equations[4] == ("A.4", "s = a + b + g + d + x + z")  # a number level with the middle of a split


def test_generated_paper_display_in_text_font_with_words_in_scripts_and_operator_names(generated):
    texts = [equation.text for equation in generated.equations]
    assert "L_{mix} = - y_c log softmax(z)_c" in texts
    assert not any("steps" in text for text in texts)  # a short centred sentence with a symbol is not a display


def test_generated_paper_table_algorithm_and_footnote(generated):
    [table] = generated.tables
    assert table.rows == [["Model", "Learning rate", "Epochs"], ["Small", "0.001", "10"], ["Large", "3e-4", "20"]]
    assert table.section_id == "sec-2.1"
    [algorithm] = generated.algorithms
    assert algorithm.title == "Training loop"
    assert algorithm.steps == ["1: for each batch do", "2: update the weights", "3: end for"]
    footnote = next(p for p in generated.paragraphs if p.kind == "footnote")
    assert footnote.text == "1 Code and data are released with the paper."


def test_generated_paper_drops_running_header_and_page_numbers(generated):
    texts = [paragraph.text for paragraph in generated.paragraphs]
    assert not any("Synthetic paper for paperlens tests" in text for text in texts)
    assert "where a weighs the first term and b the second one in the loss we minimise here." in texts
    assert all(paragraph.section_id for paragraph in generated.paragraphs)


# --------------------------------------------------------------------- broken input


def expect_paper_error(path: Path, root: Path, *phrases: str) -> str:
    with pytest.raises(PaperError) as caught:
        read_pdf(path, root)
    message = str(caught.value)
    assert path.name in message and "\n" not in message
    for phrase in phrases:
        assert phrase in message
    return message


def test_missing_file(tmp_path):
    expect_paper_error(tmp_path / "absent.pdf", tmp_path, "no such file")


def test_empty_file(tmp_path):
    (tmp_path / "empty.pdf").write_bytes(b"")
    expect_paper_error(tmp_path / "empty.pdf", tmp_path, "empty")


def test_text_file_renamed_pdf(tmp_path):
    (tmp_path / "notes.pdf").write_text("These are my notes, not a PDF.\n")
    expect_paper_error(tmp_path / "notes.pdf", tmp_path, "is not a PDF")


def test_encrypted_pdf_needing_a_password(tmp_path):
    document = pymupdf.open()
    document.new_page().insert_text((72, 72), "Secret results", fontname="helv")
    document.save(tmp_path / "locked.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner", user_pw="user")
    expect_paper_error(tmp_path / "locked.pdf", tmp_path, "encrypted", "password")


def test_truncated_pdf_beyond_repair(tmp_path, capfd):
    data = ALPHA_ZERO.read_bytes()
    (tmp_path / "cut.pdf").write_bytes(data[: len(data) // 2])
    expect_paper_error(tmp_path / "cut.pdf", tmp_path, "damaged")
    assert capfd.readouterr().err == ""  # MuPDF's own complaints are silenced


def test_truncated_pdf_that_mupdf_repairs_reads_with_a_warning(tmp_path, capfd):
    data = SPARSE_CODING.read_bytes()
    (tmp_path / "cut.pdf").write_bytes(data[: len(data) * 6 // 10])
    spec = read_pdf(tmp_path / "cut.pdf", tmp_path)
    assert [s.number for s in spec.sections][:3] == ["1", "2", "3"]
    warnings = [problem.message for problem in spec.problems if problem.severity == "warning"]
    assert len(warnings) == 1 and "repaired" in warnings[0]
    assert any(problem.location.page == 9 for problem in spec.problems if "no text layer" in problem.message)
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("content", ["rectangle", "image"])
def test_pdf_without_text_layer(tmp_path, content):
    document = pymupdf.open()
    page = document.new_page()
    if content == "rectangle":
        page.draw_rect(pymupdf.Rect(72, 72, 300, 300), color=(0, 0, 0), fill=(0.5, 0.5, 0.5))
    else:
        pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 32, 32), False)
        pixmap.clear_with(128)
        page.insert_image(pymupdf.Rect(72, 72, 300, 300), pixmap=pixmap)
    document.save(tmp_path / "scan.pdf")
    expect_paper_error(tmp_path / "scan.pdf", tmp_path, "has no text layer (scanned?); paperlens does not do OCR")


def test_pdf_outside_the_paper_folder(tmp_path):
    expect_paper_error(ALPHA_ZERO, tmp_path, "not inside the paper folder")


def _with_page_tree(tmp_path: Path, change: str) -> Path:
    """The example's PDF with its page tree broken the ways MuPDF's own errors escaped before."""
    document = pymupdf.open(EXAMPLE_PAPER / "paper.pdf")
    pages = document.pdf_catalog() and int(document.xref_get_key(document.pdf_catalog(), "Pages")[1].split()[0])
    kids = document.xref_get_key(pages, "Kids")[1].strip("[]")
    first = int(kids.split()[0])
    if change == "root in its own Kids":
        document.xref_set_key(pages, "Kids", f"[{pages} 0 R {kids}]")
    elif change == "a page whose Kids is the root":
        document.xref_set_key(first, "Type", "/Pages")
        document.xref_set_key(first, "Kids", f"[{pages} 0 R]")
        document.xref_set_key(first, "Count", "1")
    path = tmp_path / "broken.pdf"
    document.save(path, expand=255)  # uncompressed: the page tree can be edited as bytes
    if change.startswith("/Count"):  # each /Count replaced: MuPDF cannot even save such a file
        path.write_bytes(re.sub(rb"/Count\s+\d+", change.encode(), path.read_bytes()))
    return path


@pytest.mark.parametrize(
    "change", ["root in its own Kids", "a page whose Kids is the root", "/Count -1", "/Count 0", "/Count 99999999999999999999", "/Count /Count"]
)
def test_a_broken_page_tree_is_a_clear_error_or_a_read_with_problems(tmp_path, change, capfd):
    path = _with_page_tree(tmp_path, change)
    try:
        spec = read_pdf(path, tmp_path)
    except PaperError as error:
        assert path.name in str(error) and "\n" not in str(error)
    else:
        assert spec.sections or spec.paragraphs  # what could be read was
    assert capfd.readouterr().err == ""

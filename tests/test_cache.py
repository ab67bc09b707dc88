"""An unchanged paper is read once; any change to any of its files is seen."""

from __future__ import annotations

from pathlib import Path

from paperlens.pipeline import ingest
from paperlens.pipeline.ingest import cache, read_paper


def _paper(folder: Path) -> Path:
    (folder / "main.tex").write_text("\\begin{document}\n\\section{Intro}\n\\input{body}\n\\end{document}\n")
    (folder / "body.tex").write_text("We use a batch size of 64.\n")
    return folder / "main.tex"


def _forbid_reading(monkeypatch):
    def fail(main):
        raise AssertionError(f"{main} was parsed again")

    monkeypatch.setattr(ingest, "_read_uncached", fail)


def test_an_unchanged_paper_is_not_parsed_twice(tmp_path, monkeypatch):
    main = _paper(tmp_path)
    first = read_paper(main)
    _forbid_reading(monkeypatch)
    assert read_paper(main) == first
    assert read_paper(tmp_path) == first  # the folder resolves to the same main file


def test_a_change_in_an_input_file_is_read_again(tmp_path):
    main = _paper(tmp_path)
    assert read_paper(main).paragraphs[0].text == "We use a batch size of 64."
    (tmp_path / "body.tex").write_text("We use a batch size of 32.\n")
    assert read_paper(main).paragraphs[0].text == "We use a batch size of 32."


def test_a_corrupt_cache_entry_is_ignored(tmp_path):
    main = _paper(tmp_path)
    read_paper(main)
    [entry] = cache.cache_dir().glob("spec-*.json")
    entry.write_text("{not json")
    assert read_paper(main).sections[0].title == "Intro"


def test_a_cache_dir_that_is_a_file_only_costs_time(tmp_path, monkeypatch):
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    monkeypatch.setenv("PAPERLENS_CACHE_DIR", str(blocker / "cache"))
    folder = tmp_path / "paper"
    folder.mkdir()
    assert read_paper(_paper(folder)).sections[0].title == "Intro"

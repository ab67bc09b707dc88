"""Read a paper (LaTeX, PDF or Markdown) into a located PaperSpec, cached by content."""

from __future__ import annotations

import re
from pathlib import Path

from ...schemas import PaperSpec
from ..errors import PaperError
from ..files import UnreadableFile, read_regular_file
from . import cache

LATEX_SUFFIXES = {".tex"}
PDF_SUFFIXES = {".pdf"}
MARKDOWN_SUFFIXES = {".md", ".markdown"}
PREFERRED_MAIN_NAMES = ("main", "paper", "ms", "article", "manuscript")
_DOCUMENT_RE = re.compile(rb"^[^%\n]*\\begin\{document\}", re.M)
MAX_MAIN_FILE_BYTES = 16_000_000  # a .tex larger than this is no paper's main file


def find_main_file(folder: Path) -> Path:
    """The paper in a folder: the .tex that holds \\begin{document}, else a lone .md or .pdf."""
    try:
        listed = sorted(folder.iterdir())
    except OSError as err:
        raise PaperError(f"{folder}: the folder cannot be read ({err.strerror or err})") from None
    tex_files, unreadable = [], []
    for path in (p for p in listed if p.suffix == ".tex"):
        try:  # the one holding \begin{document} is the main file
            tex_files.append((path, read_regular_file(path, limit=MAX_MAIN_FILE_BYTES)))
        except UnreadableFile as err:
            unreadable.append(f"{path.name}: {err}")
    with_document = [p for p, data in tex_files if _DOCUMENT_RE.search(data)]
    if unreadable and not with_document:  # the main file may be the one that cannot be read
        raise PaperError(f"{folder}: {'; '.join(unreadable)}; fix it, or name the paper's main file")
    candidates = with_document or [p for p, _ in tex_files]
    if len(candidates) > 1:
        preferred = [p for p in candidates if p.stem.lower() in PREFERRED_MAIN_NAMES]
        candidates = preferred or sorted(candidates, key=lambda p: p.stat().st_size, reverse=True)
    if candidates:
        return candidates[0]
    for suffixes in (MARKDOWN_SUFFIXES, PDF_SUFFIXES):
        found = [p for p in listed if p.suffix.lower() in suffixes]
        if found:
            return found[0]
    skipped = f"; not read: {'; '.join(unreadable)}" if unreadable else ""
    raise PaperError(f"{folder}: no paper found (looked for .tex with \\begin{{document}}, .md and .pdf files){skipped}")


def resolve_paper(path: Path) -> Path:
    """The paper's main file, given the file itself or its folder."""
    if not path.exists():
        raise PaperError(f"{path}: no such file or folder")
    main = find_main_file(path) if path.is_dir() else path
    if main.suffix.lower() not in LATEX_SUFFIXES | PDF_SUFFIXES | MARKDOWN_SUFFIXES:
        raise PaperError(f"{main}: not a paper paperlens can read (expected .tex, .pdf or .md)")
    return main


def read_paper(path: Path | str, *, use_cache: bool = True) -> PaperSpec:
    """Read the paper at `path` (a file, or a folder holding one) into a PaperSpec.

    Raises PaperError with a message for the user when the paper cannot be read.
    """
    main = resolve_paper(Path(path)).resolve()
    if use_cache and (cached := cache.load(main)) is not None:
        return cached
    spec = _read_uncached(main)
    if use_cache:
        cache.store(main, spec)
    return spec


def _read_uncached(main: Path) -> PaperSpec:
    from ..extract import enrich

    root = main.parent
    suffix = main.suffix.lower()
    if suffix in LATEX_SUFFIXES:
        from .latex import read_latex

        spec = read_latex(main, root)
    elif suffix in PDF_SUFFIXES:
        from .pdf import read_pdf

        spec = read_pdf(main, root)
    else:
        from .markdown import read_markdown

        spec = read_markdown(main, root)
    return enrich(spec)

"""LaTeX reader: a paper's sources (main file and everything it inputs) → located PaperSpec.

Walks the token stream once, the way LaTeX would typeset it: follows `\\input`/`\\include`,
expands the paper's own macros, counts sections, equations, tables and algorithms as LaTeX
numbers them, and keeps prose as plain text whose every span maps back to its file, line and
column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ...schemas import Algorithm, Equation, Location, PaperSpec, Paragraph, Problem, Section, Table
from ..errors import PaperError
from .latex_tokens import (
    ExpansionBudget,
    Macro,
    MacroLoop,
    Token,
    TokenStream,
    VerbatimBlock,
    blank_verbatim,
    expand_all,
    find_unbalanced_brace,
    join_tokens,
    read_macro_args,
    substitute,
    tokenize,
)
from .positions import LineIndex
from .sources import content_hash, read_source, relative_to_root, slug

MAX_SOURCE_BYTES = 4_000_000  # all files together; real papers are well under 1 MB
MAX_INPUT_DEPTH = 16
# Footnotes in footnotes, captions in cells: each is a walk inside a walk. Real papers nest a few;
# deeper than this the inner text is kept as plain words, never walked (and never recursed into).
MAX_NESTED_WALKS = 40

SECTION_LEVELS = {"part": 0, "chapter": 0, "section": 1, "subsection": 2, "subsubsection": 3}
MATH_ENVIRONMENTS = {
    "equation", "align", "gather", "multline", "flalign", "alignat", "eqnarray", "displaymath", "math",
}  # fmt: skip
NUMBERED_MATH = {"equation", "align", "gather", "multline", "flalign", "alignat", "eqnarray"}
TABULAR_ENVIRONMENTS = {"tabular": 1, "tabular*": 2, "tabularx": 2, "tabulary": 2, "longtable": 1, "tblr": 1, "array": 1}
ALGORITHMIC_ENVIRONMENTS = {"algorithmic", "algorithmic*", "algorithm2e"}
FLOAT_KINDS = {"table": "table", "wraptable": "table", "figure": "figure", "wrapfigure": "figure", "algorithm": "algorithm"}
SKIPPED_ENVIRONMENTS = {"tikzpicture", "picture", "thebibliography", "axis", "pgfpicture", "filecontents"}
LIST_ENVIRONMENTS = {"itemize", "enumerate", "description"}
# Arguments an environment takes after \begin{name} that are layout, not content.
ENVIRONMENT_ARGS = {"minipage": 1, "wrapfigure": 2, "wraptable": 2, "subfigure": 1, "subtable": 1, "multicols": 1, "adjustbox": 1, "tcolorbox": 0}

# Commands whose arguments are layout or metadata: consumed, never shown as prose.
DROPPED_ARGS: dict[str, int] = {
    "vspace": 1, "hspace": 1, "includegraphics": 1, "setlength": 2, "addtolength": 2, "bibliographystyle": 1,
    "bibliography": 1, "usepackage": 1, "RequirePackage": 1, "documentclass": 1, "definecolor": 3, "color": 1,
    "hypersetup": 1, "newlength": 1, "setcounter": 2, "addtocounter": 2, "addcontentsline": 3, "author": 1,
    "date": 1, "thanks": 1, "newcolumntype": 2, "lstdefinestyle": 2, "lstset": 1, "captionsetup": 1,
    "pagestyle": 1, "thispagestyle": 1, "newtheorem": 2, "theoremstyle": 1, "graphicspath": 1, "colorlet": 2,
    "usetikzlibrary": 1, "pgfplotsset": 1, "tikzset": 1, "input@path": 1, "newcounter": 1, "crefname": 3,
    "Crefname": 3, "affiliation": 1, "email": 1, "icmlauthor": 2, "icmlaffiliation": 2, "icmlcorrespondingauthor": 2,
    "icmlkeywords": 1, "icmltitlerunning": 1, "runningtitle": 1, "keywords": 1, "fontsize": 2, "linespread": 1,
    "cline": 1, "cmidrule": 1, "textcolor": 1, "colorbox": 1, "arrayrulecolor": 1, "rowcolor": 1, "cellcolor": 1, "columncolor": 1,
    "bibitem": 1, "newif": 0, "raisebox": 1, "vskip": 0, "pdfinfo": 1, "numberwithin": 2, "let": 0,
    "multicolumn": 2, "multirow": 2, "resizebox": 2, "scalebox": 1, "rotatebox": 1, "makebox": 0, "titlespacing": 4,
    "newenvironment": 3, "renewenvironment": 3, "url": 1, "nolinkurl": 1, "hyperref": 0, "label": 1,
}  # fmt: skip
CITE_COMMANDS = {"cite", "citep", "citet", "citealp", "citealt", "citeauthor", "citeyear", "parencite", "textcite", "autocite", "nocite"}
REF_COMMANDS = {"ref", "eqref", "autoref", "cref", "Cref", "pageref", "nameref", "Autoref"}
MACRO_DEFINERS = {"newcommand", "renewcommand", "providecommand", "DeclareRobustCommand"}
TEXT_SYMBOLS = {"\\%": "%", "\\$": "$", "\\&": "&", "\\_": "_", "\\#": "#", "\\{": "{", "\\}": "}", "\\,": " ", "\\ ": " ", "\\\\": " ", "\\-": ""}  # fmt: skip
TEXT_WORDS = {"ldots": "…", "dots": "…", "textendash": "–", "textemdash": "—", "LaTeX": "LaTeX", "TeX": "TeX", "S": "§", "textasciitilde": "~", "times": "×", "texttimes": "×", "textbackslash": "\\", "textpm": "±", "textdegree": "°", "textperthousand": "‰", "ie": "i.e.", "eg": "e.g.", "etal": "et al.", "vs": "vs."}  # fmt: skip
ALGORITHM_STEP_WORDS = {
    "State": "", "STATE": "", "Statex": "", "If": "if {} then", "IF": "if {} then", "ElsIf": "else if {} then",
    "ELSIF": "else if {} then", "Else": "else", "ELSE": "else", "EndIf": "end if", "ENDIF": "end if",
    "For": "for {} do", "FOR": "for {} do", "ForAll": "for all {} do", "FORALL": "for all {} do", "EndFor": "end for",
    "ENDFOR": "end for", "While": "while {} do", "WHILE": "while {} do", "EndWhile": "end while",
    "ENDWHILE": "end while", "Repeat": "repeat", "REPEAT": "repeat", "Until": "until {}", "UNTIL": "until {}",
    "Require": "Require:", "REQUIRE": "Require:", "Ensure": "Ensure:", "ENSURE": "Ensure:", "Return": "return",
    "RETURN": "return", "Procedure": "procedure {}({})", "EndProcedure": "end procedure", "Function": "function {}({})",
    "EndFunction": "end function", "Input": "Input:", "Output": "Output:", "KwIn": "Input: {}", "KwOut": "Output: {}",
    "KwData": "Data: {}", "KwResult": "Result: {}", "KwRet": "return {}", "Loop": "loop", "EndLoop": "end loop",
}  # fmt: skip
_STEP_ARGS = {name: words.count("{}") for name, words in ALGORITHM_STEP_WORDS.items()}
APPENDIX_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
APPENDIX_TITLE = re.compile(r"(?:supplementary\s+material|appendi(?:x|ces))\b", re.I)
# Papers redefine these for looks (e.g. \paragraph as a bold run-in); the reader keeps their meaning.
STRUCTURAL_COMMANDS = {*SECTION_LEVELS, "begin", "end", "label", "caption", "input", "include", "item", "footnote", "appendix", "ref", "eqref", "cite"}


@dataclass
class _RefPiece:
    command: str
    label: str


class _TextBuilder:
    """Prose being assembled: text pieces with the source offsets they came from."""

    def __init__(self, file: str, index: LineIndex) -> None:
        self.file = file
        self.index = index
        self.pieces: list[tuple[str | _RefPiece, int | None]] = []
        self.start: int | None = None
        self.end = 0
        self.has_text = False

    def add(self, text: str | _RefPiece, pos: int | None, end: int | None = None) -> None:
        if not text:
            return
        if pos is not None:
            if self.start is None:
                self.start = pos
            self.end = max(self.end, end if end is not None else pos + (len(text) if isinstance(text, str) else 1))
        if isinstance(text, _RefPiece) or text.strip():
            self.has_text = True
        self.pieces.append((text, pos))

    def space(self) -> None:
        if self.pieces and not (isinstance(self.pieces[-1][0], str) and self.pieces[-1][0].endswith(" ")):
            self.pieces.append((" ", None))


@dataclass
class _Float:
    kind: str  # table, figure, algorithm
    pos: int
    caption: str = ""
    label: str | None = None
    tables: list[Table] = field(default_factory=list)
    algorithm_steps: list[str] | None = None
    section_id: str | None = None


@dataclass
class _PendingParagraph:
    builder: _TextBuilder
    kind: str
    section_id: str | None


class _FileContext:
    def __init__(self, rel: str, source: str, verbatim: list[VerbatimBlock]) -> None:
        self.rel = rel
        self.source = source
        self.index = LineIndex(source)
        self.verbatim = verbatim


class LatexReader:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.files: dict[str, str] = {}
        self.total_bytes = 0
        self.macros: dict[str, Macro] = {}
        self.sections: list[Section] = []
        self.equations: list[Equation] = []
        self.algorithms: list[Algorithm] = []
        self.tables: list[Table] = []
        self.pending_paragraphs: list[_PendingParagraph] = []
        self.problems: list[Problem] = []
        self.labels: dict[str, tuple[str, str | None]] = {}  # label → (kind, number)
        self.title: str | None = None
        self.section_counters = [0, 0, 0, 0]
        self.appendix = False  # after \appendix: sections are lettered
        self.appendix_part = False  # after a `\section*{Appendix}` heading
        self.equation_counter = 0
        self.equation_within_section = False
        self.equation_format: list[Token] | None = None  # \renewcommand{\theequation}{...}
        self.counters = {"table": 0, "figure": 0, "algorithm": 0}
        self.section_id: str | None = None
        self.last_labelable: Section | None = None
        self.float_stack: list[_Float] = []
        self.input_stack: list[str] = []
        self.in_document = False
        self.done = False
        self.file: _FileContext | None = None
        self.builder: _TextBuilder | None = None
        self.paragraph_kind = "text"
        self.subequation_parent: str | None = None
        self.subequation_count = 0
        self.expansion_budget = ExpansionBudget()
        self.reported_loops: set[str] = set()
        self.walk_depth = 0
        self.reported_too_deep = False

    # -- files -------------------------------------------------------------------------------

    def read(self, main: Path) -> PaperSpec:
        main_rel = self._relative(main.resolve())
        source = self._load(main.resolve(), main_rel)
        # A main file without \begin{document} (a fragment, or a paper pasted whole) is all prose.
        self.in_document = "\\begin{document}" not in source
        self._walk_file(main_rel, source)
        paragraphs = [self._finish_paragraph(p) for p in self.pending_paragraphs]
        for table in self.tables:
            if table.label:
                self.labels.setdefault(table.label, ("table", table.number))
        return PaperSpec(
            source_format="latex",
            root=str(self.root),
            main_file=main_rel,
            files=self.files,
            title=self.title,
            sections=self.sections,
            equations=self.equations,
            algorithms=self.algorithms,
            tables=self.tables,
            paragraphs=[p for p in paragraphs if p.text],
            problems=self.problems,
        )

    def _relative(self, path: Path) -> str:
        return relative_to_root(path, self.root)

    def _load(self, path: Path, rel: str) -> str:
        data = read_source(path, limit=MAX_SOURCE_BYTES)
        self.total_bytes += len(data)
        if self.total_bytes > MAX_SOURCE_BYTES:
            raise PaperError(
                f"{rel}: the LaTeX sources exceed {MAX_SOURCE_BYTES // 1_000_000} MB "
                f"({self.total_bytes / 1e6:.1f} MB read so far); a paper's sources are far smaller — "
                "is this a generated or data file?"
            )
        self.files[rel] = content_hash(data)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            self.problems.append(
                Problem(severity="warning", message=f"{rel} is not UTF-8; read as Latin-1", location=Location(file=rel))
            )
            return data.decode("latin-1")

    def _walk_file(self, rel: str, source: str) -> None:
        blanked, verbatim = blank_verbatim(source)
        tokens = tokenize(blanked)
        unbalanced = find_unbalanced_brace(tokens)
        context = _FileContext(rel, source, verbatim)
        if unbalanced is not None:
            brace, offset = unbalanced
            line, column = context.index.position(offset)
            what = "is never closed" if brace == "{" else "closes nothing"
            raise PaperError(f"{rel}:{line + 1}:{column + 1}: unbalanced braces: this '{brace}' {what}")
        outer_file = self.file
        self.file = context
        self.input_stack.append(rel)
        self._end_paragraph()
        self._walk(TokenStream(tokens))
        self._end_paragraph()
        self.input_stack.pop()
        self.file = outer_file
        self.builder = self._new_builder() if outer_file is not None else None

    def _input(self, token: Token, name: str) -> None:
        name = name.strip()
        if not name:
            return
        assert self.file is not None
        here = self._location(token.pos, token.pos + len(token.text))
        try:
            candidate = (self.root / name).resolve()
            if candidate.suffix != ".tex" and not candidate.is_file():
                candidate = (self.root / f"{name}.tex").resolve()
        except (RuntimeError, ValueError, OSError):  # a link that loops (3.11: RuntimeError), a NUL in the name
            self.problems.append(Problem(severity="warning", message=f"\\input{{{_shown(name)}}}: not a file that can be read; skipped", location=here))
            return
        if not candidate.is_relative_to(self.root):
            raise PaperError(f"{here.short()}: \\input{{{name}}} points outside the paper's folder; paperlens does not follow it")
        rel = self._relative(candidate)
        if rel in self.input_stack:
            chain = " → ".join([*self.input_stack[self.input_stack.index(rel) :], rel])
            raise PaperError(f"{here.short()}: \\input loop: {chain}")
        if len(self.input_stack) >= MAX_INPUT_DEPTH:
            raise PaperError(f"{here.short()}: \\input nested deeper than {MAX_INPUT_DEPTH} files")
        if not candidate.exists():
            self.problems.append(Problem(severity="warning", message=f"\\input{{{name}}}: file not found; skipped", location=here))
            return
        try:
            source = self._load(candidate, rel)
        except PaperError as err:  # a folder, a FIFO, a device, unreadable: this input only
            self.problems.append(Problem(severity="warning", message=f"\\input{{{name}}}: {str(err).removeprefix(str(candidate) + ': ')}; skipped", location=here))
            return
        self._walk_file(rel, source)

    # -- locations and prose -----------------------------------------------------------------

    def _location(self, start: int, end: int) -> Location:
        assert self.file is not None
        return self.file.index.location(self.file.rel, start, end)

    def _new_builder(self) -> _TextBuilder:
        assert self.file is not None
        return _TextBuilder(self.file.rel, self.file.index)

    def _end_paragraph(self, next_kind: str = "text") -> None:
        if self.builder is not None and self.builder.has_text and self.in_document:
            self.pending_paragraphs.append(_PendingParagraph(self.builder, self.paragraph_kind, self.section_id))
            self.last_labelable = None  # a \label after prose no longer names the heading
        self.builder = self._new_builder() if self.file is not None else None
        self.paragraph_kind = next_kind

    def _finish_paragraph(self, pending: _PendingParagraph) -> Paragraph:
        builder = pending.builder
        text_parts: list[str] = []
        offsets: list[tuple[int, int, int]] = []
        length = 0
        for piece, pos in builder.pieces:
            text = self._ref_text(piece) if isinstance(piece, _RefPiece) else piece
            skipped = 0
            if length == 0 or text_parts[-1].endswith(" "):
                skipped = len(text) - len(text.lstrip())
                text = text[skipped:]
            if not text:
                continue
            if pos is not None:
                line, column = builder.index.position(pos)
                offsets.append((length, line, column + (skipped if isinstance(piece, str) else 0)))
            text_parts.append(text)
            length += len(text)
        full = "".join(text_parts).rstrip()
        start = builder.start or 0
        location = builder.index.location(builder.file, start, max(start, builder.end))
        return Paragraph(text=full, section_id=pending.section_id, kind=pending.kind, location=location, offsets=offsets)

    def _ref_text(self, piece: _RefPiece) -> str:
        kind, number = self.labels.get(piece.label, ("?", None))
        shown = number or "??"
        if piece.command == "eqref":
            return f"({shown})"
        if piece.command in ("autoref", "cref", "Cref", "Autoref"):
            prefix = {"equation": "Eq.", "section": "Section", "table": "Table", "figure": "Figure", "algorithm": "Algorithm"}.get(kind, "")
            return f"{prefix} {shown}".strip()
        return shown

    def _render(self, tokens: list[Token]) -> str:
        """Prose of a title, caption or cell: walked like text, returned as a plain string."""
        outer_builder, outer_kind = self.builder, self.paragraph_kind
        self.builder = self._new_builder()
        self._walk(TokenStream(tokens), inline=True)
        rendered = self._finish_paragraph(_PendingParagraph(self.builder, "text", None)).text
        self.builder, self.paragraph_kind = outer_builder, outer_kind
        return " ".join(rendered.split())

    # -- the walk ----------------------------------------------------------------------------

    def _walk(self, stream: TokenStream, inline: bool = False) -> None:
        if self.walk_depth >= MAX_NESTED_WALKS:
            self._words_only(stream)
            return
        self.walk_depth += 1
        try:
            self._walk_tokens(stream, inline)
        finally:
            self.walk_depth -= 1

    def _words_only(self, stream: TokenStream) -> None:
        first = stream.peek()
        if not self.reported_too_deep and first is not None:
            self.reported_too_deep = True
            message = f"text nested more than {MAX_NESTED_WALKS} levels deep (footnotes, captions, cells in one another); the inner text is read as plain words"
            self.problems.append(Problem(severity="warning", message=message, location=self._location(first.pos, first.pos)))
        while (token := stream.next()) is not None:
            if token.kind == "text":
                self.builder.add(token.text, token.pos)
            elif token.kind in ("nl", "par"):
                self.builder.space()

    def _walk_tokens(self, stream: TokenStream, inline: bool) -> None:
        while not self.done and (token := stream.next()) is not None:
            kind = token.kind
            if kind == "text":
                self.builder.add(token.text, token.pos)
            elif kind == "nl":
                self.builder.space()
            elif kind == "par":
                if inline:
                    self.builder.space()
                else:
                    self._end_paragraph()
            elif kind == "cs":
                self._command(token, stream, inline)
            elif kind == "sym":
                self._symbol(token, stream, inline)
            elif kind == "math":
                if token.text == "$$":
                    self._display_math(token, stream, closing=("math", "$$"))
                else:
                    self._inline_math(token, stream, closing=("math", "$"))
            elif kind == "char" and token.text == "~":
                self.builder.add(" ", token.pos)
            elif kind == "char" and token.text in "&[]":
                self.builder.add(" " if token.text == "&" else token.text, token.pos)

    def _symbol(self, token: Token, stream: TokenStream, inline: bool) -> None:
        text = token.text
        if text == "\\(":
            self._inline_math(token, stream, closing=("sym", "\\)"))
        elif text == "\\[":
            self._display_math(token, stream, closing=("sym", "\\]"))
        elif text in TEXT_SYMBOLS:
            self.builder.add(TEXT_SYMBOLS[text], token.pos, token.pos + 2)

    def _collect_until(self, stream: TokenStream, closing: tuple[str, str]) -> tuple[list[Token], Token | None]:
        collected: list[Token] = []
        while (token := stream.next()) is not None:
            if token.kind == closing[0] and token.text == closing[1]:
                return collected, token
            if token.kind == "par" and closing[1] in ("$", "\\)"):
                # Inline math never spans a paragraph: the `$` was unbalanced.
                self.problems.append(Problem(severity="warning", message="inline math not closed before the paragraph ends", location=self._location(token.pos, token.pos)))
                return collected, token
            collected.append(token)
        return collected, None

    def _expand(self, tokens: list[Token]) -> list[Token]:
        try:
            return expand_all(tokens, self.macros, self.expansion_budget)
        except MacroLoop as loop:
            self._report_loop(str(loop), tokens[0].pos if tokens else 0)
            return tokens

    def _report_loop(self, name: str, pos: int) -> None:
        if name not in self.reported_loops:
            self.reported_loops.add(name)
            message = f"macro {name} keeps expanding (a definition loop?); left unexpanded"
            self.problems.append(Problem(severity="warning", message=message, location=self._location(pos, pos)))

    def _inline_math(self, opening: Token, stream: TokenStream, closing: tuple[str, str]) -> None:
        body, end = self._collect_until(stream, closing)
        latex = join_tokens(self._expand(body))
        end_pos = end.pos + len(end.text) if end is not None else opening.pos + 1
        self.builder.add(f"${latex}$", opening.pos, end_pos)

    def _display_math(self, opening: Token, stream: TokenStream, closing: tuple[str, str]) -> None:
        body, end = self._collect_until(stream, closing)
        end_pos = end.pos + len(end.text) if end is not None else opening.pos
        self._add_equation_lines([(body, opening.pos, end_pos)], numbered=False)

    def _command(self, token: Token, stream: TokenStream, inline: bool) -> None:
        name = token.text[1:]
        macro = self.macros.get(token.text)
        if macro is not None:
            self._expand_in_text(token, macro, stream)
            return
        if name in SECTION_LEVELS or name == "paragraph" or name == "subparagraph":
            self._section(token, name, stream)
        elif name == "begin":
            self._begin(token, stream)
        elif name == "end":
            self._end(token, stream)
        elif name in ("input", "include", "subfile", "import"):
            if name == "import":
                stream.read_arg()
            group = stream.read_group()
            if group is None:  # \input file (no braces)
                following = stream.next()
                target = following.text.split()[0] if following is not None and following.kind == "text" else ""
            else:
                target = join_tokens(group)
            self._input(token, target)
        elif name in MACRO_DEFINERS:
            self._define_command(stream)
        elif name in ("def", "gdef", "edef", "xdef"):
            self._define_def(stream)
        elif name == "DeclareMathOperator":
            star = stream.read_star()
            target = stream.read_arg()
            body = stream.read_arg()
            if target and target[0].kind == "cs":
                op = "operatorname*" if star else "operatorname"
                self.macros[target[0].text] = Macro(0, None, [Token("cs", f"\\{op}", 0), Token("char", "{", 0), *body, Token("char", "}", 0)])
        elif name == "appendix":
            self._start_appendix()
        elif name == "title":
            stream.read_optional()
            self.title = self._render(stream.read_arg())
        elif name == "label":
            self._label(token, join_tokens(stream.read_arg()))
        elif name == "caption":
            self._caption(token, stream)
        elif name == "footnote":
            stream.read_optional()
            self._footnote(stream.read_arg())
        elif name == "item":
            self._end_paragraph("item")
            optional = stream.read_optional()
            if optional:
                self._walk(TokenStream(optional), inline=True)
                self.builder.space()
        elif name in CITE_COMMANDS:
            stream.read_star()
            stream.read_optional()
            stream.read_optional()
            keys = join_tokens(stream.read_arg())
            self.builder.add(f"[{keys}]", token.pos)
        elif name in REF_COMMANDS:
            stream.read_star()
            label = join_tokens(stream.read_arg())
            self.builder.add(_RefPiece(name, label), token.pos)
        elif name == "href":
            stream.read_arg()
        elif name == "numberwithin":
            counter = join_tokens(stream.read_arg())
            within = join_tokens(stream.read_arg())
            if counter == "equation" and within == "section":
                self.equation_within_section = True
        elif name == "setcounter":
            counter = join_tokens(stream.read_arg())
            value = join_tokens(stream.read_arg())
            if counter == "equation" and value.isdigit():
                self.equation_counter = int(value)
        elif name == "verb":
            pass  # its content was blanked before tokenizing
        elif name in DROPPED_ARGS:
            if name == "cmidrule":  # \cmidrule[w](lr){2-3}: the trim spec is in parentheses
                stream.read_optional()
                following = stream.peek()
                if following is not None and following.kind == "text" and following.text.startswith("(") and ")" in following.text:
                    stream.next()
                    rest = following.text.split(")", 1)[1]
                    if rest:
                        stream.push([Token("text", rest, following.pos + len(following.text) - len(rest))])
            stream.read_star()
            stream.read_optional()
            for _ in range(DROPPED_ARGS[name]):
                stream.read_arg()
        elif name in TEXT_WORDS:
            self.builder.add(TEXT_WORDS[name], token.pos, token.pos + len(token.text))
        # Any other command is formatting: dropped, and its braced argument reads as prose.

    def _expand_in_text(self, token: Token, macro: Macro, stream: TokenStream) -> None:
        expansion = substitute(token.text, macro, read_macro_args(stream, macro), token.pos)
        try:
            self.expansion_budget.spend(token.text, 1 + len(expansion))
        except MacroLoop:
            self._report_loop(token.text, token.pos)
            return
        stream.push(expansion)

    def _define_command(self, stream: TokenStream) -> None:
        stream.read_star()
        target = stream.read_arg()
        nargs_tokens = stream.read_optional()
        default = stream.read_optional()
        body = stream.read_arg()
        name = join_tokens(target).strip()
        if name == "\\theequation":
            self.equation_format = body
            return
        if not name.startswith("\\") or name[1:] in STRUCTURAL_COMMANDS:
            return
        nargs = int(join_tokens(nargs_tokens)) if nargs_tokens and join_tokens(nargs_tokens).isdigit() else 0
        self.macros[name] = Macro(nargs, default, body)

    def _define_def(self, stream: TokenStream) -> None:
        target = stream.next()
        if target is None or target.kind != "cs" or target.text[1:] in STRUCTURAL_COMMANDS:
            return
        nargs = 0
        while (token := stream.peek()) is not None and not (token.kind == "char" and token.text == "{"):
            stream.next()
            if token.kind == "char" and token.text == "#":
                nargs += 1
        body = stream.read_group() or []
        self.macros[target.text] = Macro(nargs, None, body)

    # -- structure ---------------------------------------------------------------------------

    def _section(self, token: Token, name: str, stream: TokenStream) -> None:
        star = stream.read_star()
        stream.read_optional()
        title_tokens = stream.read_arg()
        if name in ("paragraph", "subparagraph"):
            # Run-in headings: part of the prose that follows, not a section of their own.
            self._end_paragraph()
            self.builder.add(self._render(title_tokens) + " ", token.pos)
            return
        self._end_paragraph()
        if not self.in_document:
            return
        level = max(1, SECTION_LEVELS[name])
        number = None
        if not star:
            self.section_counters[level - 1] += 1
            for deeper in range(level, len(self.section_counters)):
                self.section_counters[deeper] = 0
            parts = self.section_counters[:level]
            first = APPENDIX_LETTERS[(parts[0] - 1) % 26] if self.appendix else str(parts[0])
            number = ".".join([first, *(str(p) for p in parts[1:])])
            if level == 1 and self.equation_within_section:
                self.equation_counter = 0
        title = self._render(title_tokens)
        if star and level == 1 and APPENDIX_TITLE.match(title):
            # `\section*{Appendix}` without `\appendix`: the numbers stay arabic, the part is still an appendix.
            self.appendix_part = True
        section_id = f"sec-{number}" if number else f"sec-{slug(title)}"
        if any(s.id == section_id for s in self.sections):
            section_id = f"{section_id}-{len(self.sections)}"
        end = title_tokens[-1].pos + len(title_tokens[-1].text) + 1 if title_tokens else token.pos + len(token.text)
        section = Section(id=section_id, number=number, title=title, level=level, appendix=self.appendix or self.appendix_part, location=self._location(token.pos, end))
        self.sections.append(section)
        self.section_id = section_id
        self.last_labelable = section

    def _start_appendix(self) -> None:
        self._end_paragraph()
        self.appendix = True
        self.section_counters = [0, 0, 0, 0]

    def _label(self, token: Token, label: str) -> None:
        if self.float_stack:
            self.float_stack[-1].label = self.float_stack[-1].label or label
        elif self.last_labelable is not None and self.last_labelable.label is None:
            self.last_labelable.label = label
            self.labels[label] = ("section", self.last_labelable.number)

    def _caption(self, token: Token, stream: TokenStream) -> None:
        stream.read_optional()
        tokens = stream.read_arg()
        current = self.float_stack[-1] if self.float_stack else None
        self._end_paragraph("caption")
        self._walk(TokenStream(tokens), inline=True)
        # The caption's text from the walk just made (walking it again would double the work at
        # every caption nested in it).
        caption_text = " ".join(self._finish_paragraph(_PendingParagraph(self.builder, "caption", None)).text.split())
        self._end_paragraph()
        if current is not None and not current.caption:
            current.caption = caption_text

    def _footnote(self, tokens: list[Token]) -> None:
        outer_builder, outer_kind = self.builder, self.paragraph_kind
        self.builder, self.paragraph_kind = self._new_builder(), "footnote"
        self._walk(TokenStream(tokens), inline=True)
        self._end_paragraph()
        self.builder, self.paragraph_kind = outer_builder, outer_kind

    def _begin(self, token: Token, stream: TokenStream) -> None:
        name = join_tokens(stream.read_arg())
        base = name.rstrip("*")
        if name == "document":
            self.in_document = True
            return
        if name == "appendices":
            self._start_appendix()
            return
        if base in MATH_ENVIRONMENTS:
            self._math_environment(token, name, stream)
        elif name in TABULAR_ENVIRONMENTS:
            self._tabular(token, name, stream)
        elif name in ALGORITHMIC_ENVIRONMENTS:
            self._algorithmic(token, name, stream)
        elif base in SKIPPED_ENVIRONMENTS:
            self._raw_environment(name, stream)
        elif base in FLOAT_KINDS:
            for _ in range(ENVIRONMENT_ARGS.get(base, 0)):
                stream.read_arg()
            stream.read_optional()
            self._end_paragraph()
            self.float_stack.append(_Float(FLOAT_KINDS[base], token.pos, section_id=self.section_id))
        elif base == "subequations":
            self._subequations(token, stream)
        else:
            stream.read_optional()
            for _ in range(ENVIRONMENT_ARGS.get(base, 0)):
                stream.read_arg()
            if base in LIST_ENVIRONMENTS or base == "abstract":
                self._end_paragraph()

    def _end(self, token: Token, stream: TokenStream) -> None:
        name = join_tokens(stream.read_arg())
        base = name.rstrip("*")
        if name == "document":
            self._end_paragraph()
            self.done = True
        elif base in FLOAT_KINDS and self.float_stack:
            self._end_paragraph()
            self._finish_float(self.float_stack.pop(), token.pos + len("\\end{}") + len(name))
        elif base in LIST_ENVIRONMENTS or base == "abstract":
            self._end_paragraph()

    def _raw_environment(self, name: str, stream: TokenStream) -> tuple[list[Token], Token | None]:
        """Tokens up to the matching \\end{name}, nested environments included."""
        depth = 0
        collected: list[Token] = []
        while (token := stream.next()) is not None:
            if token.kind == "cs" and token.text in ("\\begin", "\\end"):
                arg = stream.read_group()
                arg_name = join_tokens(arg or [])
                if arg_name == name:
                    if token.text == "\\end" and depth == 0:
                        return collected, token
                    depth += 1 if token.text == "\\begin" else -1
                collected.extend([token, Token("char", "{", token.pos), *(arg or []), Token("char", "}", token.pos)])
                continue
            collected.append(token)
        self.problems.append(Problem(severity="warning", message=f"\\begin{{{name}}} is never ended", location=None))
        return collected, None

    def _finish_float(self, float_: _Float, end: int) -> None:
        self.counters[float_.kind] += 1
        number = str(self.counters[float_.kind])
        if float_.label:
            self.labels[float_.label] = (float_.kind, number)
        if float_.kind == "table":
            for i, table in enumerate(float_.tables):
                table.number = number
                table.caption = float_.caption
                table.label = float_.label if i == 0 else None
                table.id = f"tab-{number}" if len(float_.tables) == 1 else f"tab-{number}-{i + 1}"
        elif float_.kind == "algorithm":
            self.algorithms.append(
                Algorithm(
                    id=f"alg-{number}", number=number, label=float_.label, title=float_.caption,
                    steps=float_.algorithm_steps or self._verbatim_steps(float_.pos, end),
                    section_id=float_.section_id, location=self._location(float_.pos, end),
                )
            )  # fmt: skip

    def _verbatim_steps(self, start: int, end: int) -> list[str]:
        """Algorithms written as a code listing: its non-empty lines are the steps."""
        steps: list[str] = []
        for block in self.file.verbatim:
            if start <= block.start < end:
                steps.extend(line.rstrip() for line in block.body.splitlines() if line.strip())
        return steps

    # -- equations ---------------------------------------------------------------------------

    def _math_environment(self, token: Token, name: str, stream: TokenStream) -> None:
        base = name.rstrip("*")
        if base == "alignat":
            stream.read_arg()
        body, end = self._raw_environment(name, stream)
        end_pos = end.pos + len(f"\\end{{{name}}}") if end is not None else token.pos
        numbered = base in NUMBERED_MATH and not name.endswith("*")
        if base in ("equation", "multline", "displaymath", "math"):
            lines = [(body, token.pos, end_pos)]
        else:
            lines = _split_rows(body, token.pos, end_pos)
        self._end_paragraph()
        self._add_equation_lines(lines, numbered=numbered)

    def _subequations(self, token: Token, stream: TokenStream) -> None:
        body, _ = self._raw_environment("subequations", stream)
        self.equation_counter += 1
        self.subequation_parent, self.subequation_count = self._format_equation_number(), 0
        self._walk(TokenStream(body))
        self.subequation_parent = None

    def _format_equation_number(self) -> str:
        n = self.equation_counter
        if self.equation_format is not None:
            out = []
            stream = TokenStream(list(self.equation_format))
            while (token := stream.next()) is not None:
                if token.kind == "cs" and token.text in ("\\arabic", "\\alph", "\\Alph", "\\roman"):
                    counter = join_tokens(stream.read_arg())
                    value = n if counter == "equation" else self.section_counters[0]
                    out.append(_format_counter(token.text, value))
                elif token.kind == "cs" and token.text == "\\thesection":
                    out.append(self._section_number())
                elif token.kind == "text":
                    out.append(token.text)
            return "".join(out).strip() or str(n)
        if self.equation_within_section:
            return f"{self._section_number()}.{n}"
        return str(n)

    def _section_number(self) -> str:
        first = self.section_counters[0]
        return APPENDIX_LETTERS[(first - 1) % 26] if self.appendix and first else str(first)

    def _add_equation_lines(self, lines: list[tuple[list[Token], int, int]], numbered: bool) -> None:
        for body, start, end in lines:
            label = None
            tag = None
            line_numbered = numbered
            kept: list[Token] = []
            stream = TokenStream(body)
            while (token := stream.next()) is not None:
                if token.kind == "cs" and token.text in ("\\nonumber", "\\notag"):
                    line_numbered = False
                elif token.kind == "cs" and token.text == "\\label":
                    label = join_tokens(stream.read_arg())
                elif token.kind == "cs" and token.text == "\\tag":
                    stream.read_star()
                    tag = join_tokens(stream.read_arg())
                else:
                    kept.append(token)
            latex = join_tokens(self._expand(kept))
            if not latex:
                continue
            number = None
            if tag is not None:
                number = tag
            elif line_numbered and self.subequation_parent is not None:
                self.subequation_count += 1
                number = self.subequation_parent + _format_counter("\\alph", self.subequation_count)
            elif line_numbered:
                self.equation_counter += 1
                number = self._format_equation_number()
            equation_id = label or (f"eq-{number}" if number else f"eq@{self.file.rel}:{self.file.index.position(start)[0] + 1}")
            if any(e.id == equation_id for e in self.equations):
                equation_id = f"{equation_id}#{len(self.equations)}"
            if label:
                self.labels[label] = ("equation", number)
            self.equations.append(
                Equation(id=equation_id, number=number, label=label, latex=latex, text=latex, section_id=self.section_id, location=self._location(start, end))
            )

    # -- tables and algorithms ---------------------------------------------------------------

    def _tabular(self, token: Token, name: str, stream: TokenStream) -> None:
        for _ in range(TABULAR_ENVIRONMENTS[name]):
            stream.read_optional()
            stream.read_arg()
        body, end = self._raw_environment(name, stream)
        end_pos = end.pos + len(f"\\end{{{name}}}") if end is not None else token.pos
        rows: list[list[str]] = []
        row_locations: list[Location] = []
        nested = len(self.tables)
        for row_tokens, row_start, row_end in _split_rows(body, token.pos, end_pos):
            cells = [self._render(cell) for cell in _split_cells(row_tokens)]
            # A tabular inside a cell (a two-line header) is part of that cell, not a table of its own.
            for inner in self.tables[nested:]:
                for owner in self.float_stack:
                    if inner in owner.tables:
                        owner.tables.remove(inner)
            del self.tables[nested:]
            if any(cells):
                rows.append(cells)
                row_locations.append(self._location(row_start, row_end))
        current = next((f for f in reversed(self.float_stack) if f.kind == "table"), None)
        table = Table(id=f"tab@{self.file.rel}:{self.file.index.position(token.pos)[0] + 1}", rows=rows, row_locations=row_locations, section_id=self.section_id, location=self._location(token.pos, end_pos))
        if current is not None:
            current.tables.append(table)
        self.tables.append(table)

    def _algorithmic(self, token: Token, name: str, stream: TokenStream) -> None:
        stream.read_optional()
        body, _ = self._raw_environment(name, stream)
        steps: list[str] = []
        current: list[Token] = []

        def flush() -> None:
            text = self._render(current)
            if text:
                steps.append(text)
            current.clear()

        inner = TokenStream(body)
        while (tok := inner.next()) is not None:
            if tok.kind == "cs" and tok.text[1:] in ALGORITHM_STEP_WORDS:
                flush()
                word = tok.text[1:]
                args = [self._render(inner.read_arg()) for _ in range(_STEP_ARGS[word])]
                if word in ("State", "STATE", "Statex"):
                    continue
                current.append(Token("text", ALGORITHM_STEP_WORDS[word].format(*args) + " ", tok.pos))
            elif tok.kind == "sym" and tok.text in ("\\;", "\\\\"):
                flush()
            elif tok.kind == "cs" and tok.text == "\\Comment":
                current.append(Token("text", " ▷ ", tok.pos))
            else:
                current.append(tok)
        flush()
        owner = next((f for f in reversed(self.float_stack) if f.kind == "algorithm"), None)
        if owner is not None:
            owner.algorithm_steps = (owner.algorithm_steps or []) + steps


def _split_rows(tokens: list[Token], start: int, end: int) -> list[tuple[list[Token], int, int]]:
    """Split at top-level `\\\\` (rows of a tabular, lines of an align)."""
    rows: list[tuple[list[Token], int, int]] = []
    current: list[Token] = []
    depth = 0
    row_start = start
    environment_depth = 0
    in_spacing = False
    skip_spacing = False  # `\\[6pt]`: the bracket after a row break is spacing, not content
    for token in tokens:
        if skip_spacing:
            if token.kind == "char" and token.text == "[":
                skip_spacing = False
                in_spacing = True
                continue
            skip_spacing = False
        if in_spacing:
            if token.kind == "char" and token.text == "]":
                in_spacing = False
            continue
        if token.kind == "char" and token.text == "{":
            depth += 1
        elif token.kind == "char" and token.text == "}":
            depth -= 1
        elif token.kind == "cs" and token.text == "\\begin":
            environment_depth += 1
        elif token.kind == "cs" and token.text == "\\end":
            environment_depth -= 1
        row_break = (token.kind == "sym" and token.text == "\\\\") or (token.kind == "cs" and token.text == "\\tabularnewline")
        if row_break and depth == 0 and environment_depth == 0:
            rows.append((current, _content_start(current, row_start), token.pos))
            current = []
            row_start = token.pos + 2
            skip_spacing = True
            continue
        current.append(token)
    if any(t.kind not in ("nl", "comment", "par") and t.text.strip() for t in current):
        rows.append((current, _content_start(current, row_start), end))
    return rows


RULE_COMMANDS = {"\\hline", "\\toprule", "\\midrule", "\\bottomrule", "\\specialrule", "\\addlinespace"}


_RULE_LIKE_RE = re.compile(r"\\[A-Za-z]*(?:line|rule)")  # a paper's own rules too: \shline, \midline, \cline{2-3}


def _content_start(tokens: list[Token], default: int) -> int:
    """Offset of a row's first content: not spacing, comments or horizontal rules (with their
    arguments: `\\cline{2-3}`, `\\cmidrule(lr){1-2}`)."""
    depth = 0
    after_rule = False
    for token in tokens:
        if token.kind in ("nl", "par", "comment"):
            after_rule = False
            continue
        if token.text in RULE_COMMANDS or (token.kind == "cs" and _RULE_LIKE_RE.fullmatch(token.text)):
            after_rule = True  # its argument, if any, follows on the same line
            continue
        if token.kind == "text" and not token.text.strip():
            continue
        if after_rule and token.kind == "char" and token.text in "{(":
            depth += 1
            continue
        if depth:
            if token.kind == "char" and token.text in "})":
                depth -= 1
            continue
        return token.pos + (len(token.text) - len(token.text.lstrip()) if token.kind == "text" else 0)
    return default


def _split_cells(tokens: list[Token]) -> list[list[Token]]:
    cells: list[list[Token]] = [[]]
    depth = 0
    for token in tokens:
        if token.kind == "char" and token.text == "{":
            depth += 1
        elif token.kind == "char" and token.text == "}":
            depth -= 1
        if token.kind == "char" and token.text == "&" and depth == 0:
            cells.append([])
            continue
        cells[-1].append(token)
    return cells


def _format_counter(command: str, value: int) -> str:
    if command == "\\alph":
        return "abcdefghijklmnopqrstuvwxyz"[(value - 1) % 26]
    if command == "\\Alph":
        return APPENDIX_LETTERS[(value - 1) % 26]
    if command == "\\roman":
        return ["i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x"][(value - 1) % 10]
    return str(value)


def read_latex(main: Path, root: Path) -> PaperSpec:
    """Read a LaTeX paper from its main file; `root` bounds which files `\\input` may reach."""
    return LatexReader(root).read(main)


def _shown(name: str) -> str:
    """A file name as a message can show it (a NUL or a control character as its escape)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)

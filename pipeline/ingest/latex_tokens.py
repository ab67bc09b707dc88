"""LaTeX tokens, a token stream with TeX-style pushback, and user-macro expansion.

A tokenizer plus a small structural parser instead of a general LaTeX parser: paperlens needs
sections, numbered environments, tables and prose with exact source positions, and it must stay
under 300 ms per 100 KB (pylatexenc 2.11 alone takes about 230 ms per 100 KB to build its tree,
measured on the bundled papers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Order matters: a control symbol (`\%`, `\\`, `\{`) wins over the characters it escapes.
_TOKEN_RE = re.compile(
    r"(?P<cs>\\[A-Za-z@]+)"
    r"|(?P<sym>\\.)"
    r"|(?P<comment>%[^\n]*)"
    r"|(?P<par>\n[ \t]*(?:\n[ \t]*)+)"
    r"|(?P<nl>\n)"
    r"|(?P<math>\$\$?)"
    r"|(?P<char>[{}\[\]&~#^_])"
    r"|(?P<text>[^\\%\n${}\[\]&~#^_]+)",
    re.S,
)

VERBATIM_ENVIRONMENTS = ("verbatim", "verbatim*", "lstlisting", "minted", "comment", "filecontents", "Verbatim")
_VERBATIM_RE = re.compile(
    r"\\begin\{(" + "|".join(re.escape(name) for name in VERBATIM_ENVIRONMENTS) + r")\}(.*?)\\end\{\1\}"
    r"|\\verb\*?([^A-Za-z\s])(.*?)\3",
    re.S,
)
_LISTING_OPTIONS_RE = re.compile(r"(?:\[[^\]\n]*\])?(?:\{[^}\n]*\})?")


@dataclass(slots=True)
class Token:
    kind: str  # cs, sym, comment, par, nl, math, char, text
    text: str
    pos: int  # offset in the file it came from; an expansion keeps its macro's offset


@dataclass(slots=True)
class VerbatimBlock:
    start: int
    end: int
    body: str
    body_start: int


def blank_verbatim(source: str) -> tuple[str, list[VerbatimBlock]]:
    """Replace verbatim-like content by spaces (newlines kept, so offsets and lines stay valid).

    Code listings hold braces and percent signs that are not LaTeX; the blocks are returned so an
    algorithm written as a listing still yields its lines.
    """
    blocks: list[VerbatimBlock] = []
    pieces: list[str] = []
    last = 0
    for match in _VERBATIM_RE.finditer(source):
        if match.group(1):
            body, body_start = match.group(2), match.start(2)
            options = _LISTING_OPTIONS_RE.match(body)  # [style=...] or {python}: options, not code
            if options:
                body, body_start = body[options.end() :], body_start + options.end()
        else:
            body, body_start = match.group(4), match.start(4)
        blocks.append(VerbatimBlock(match.start(), match.end(), body, body_start))
        pieces.append(source[last : match.start()])
        pieces.append(re.sub(r"[^\n]", " ", match.group(0)))
        last = match.end()
    if not blocks:
        return source, blocks
    pieces.append(source[last:])
    return "".join(pieces), blocks


def tokenize(source: str, pos: int | None = None) -> list[Token]:
    """Tokens of `source`; with `pos`, every token claims that offset (used for macro bodies)."""
    if pos is None:
        return [Token(m.lastgroup, m.group(), m.start()) for m in _TOKEN_RE.finditer(source)]
    return [Token(m.lastgroup, m.group(), pos) for m in _TOKEN_RE.finditer(source)]


def find_unbalanced_brace(tokens: list[Token]) -> tuple[str, int] | None:
    """The first brace without a partner: ("{", offset) never closed or ("}", offset) never opened."""
    open_offsets: list[int] = []
    for token in tokens:
        if token.kind != "char":
            continue
        if token.text == "{":
            open_offsets.append(token.pos)
        elif token.text == "}":
            if not open_offsets:
                return "}", token.pos
            open_offsets.pop()
    if open_offsets:
        return "{", open_offsets[-1]
    return None


class TokenStream:
    """Tokens read one at a time, with expansions pushed in front (as TeX's input stack does)."""

    def __init__(self, tokens: list[Token]) -> None:
        self._tokens = tokens
        self._index = 0
        self._pushed: list[Token] = []  # reversed: the next token is the last element

    def next(self) -> Token | None:
        if self._pushed:
            return self._pushed.pop()
        if self._index < len(self._tokens):
            self._index += 1
            return self._tokens[self._index - 1]
        return None

    def peek(self) -> Token | None:
        if self._pushed:
            return self._pushed[-1]
        if self._index < len(self._tokens):
            return self._tokens[self._index]
        return None

    def push(self, tokens: list[Token]) -> None:
        self._pushed.extend(reversed(tokens))

    def skip_space(self) -> None:
        while (token := self.peek()) is not None and (
            token.kind in ("nl", "comment") or (token.kind == "text" and not token.text.strip())
        ):
            self.next()

    def read_group(self) -> list[Token] | None:
        """The tokens inside a `{...}` group that comes next, else None (nothing consumed)."""
        self.skip_space()
        token = self.peek()
        if token is None or token.kind != "char" or token.text != "{":
            return None
        self.next()
        return self._read_until_close("{", "}")

    def read_arg(self) -> list[Token]:
        """A mandatory argument: a group, or the single next token as TeX reads one."""
        group = self.read_group()
        if group is not None:
            return group
        token = self.next()
        if token is None:
            return []
        if token.kind == "text" and len(token.text) > 1:
            # TeX takes one character; push the rest back.
            self.push([Token("text", token.text[1:], token.pos + 1)])
            return [Token("text", token.text[0], token.pos)]
        return [token]

    def read_optional(self) -> list[Token] | None:
        """The tokens inside a `[...]` optional argument that comes next, else None."""
        token = self.peek()
        if token is None or token.kind != "char" or token.text != "[":
            return None
        self.next()
        return self._read_until_close("[", "]")

    def read_star(self) -> bool:
        token = self.peek()
        if token is not None and token.kind == "text" and token.text.startswith("*"):
            self.next()
            if len(token.text) > 1:
                self.push([Token("text", token.text[1:], token.pos + 1)])
            return True
        return False

    def _read_until_close(self, opening: str, closing: str) -> list[Token]:
        depth = 0
        out: list[Token] = []
        while (token := self.next()) is not None:
            if token.kind == "char":
                if token.text == "{":
                    depth += 1
                elif token.text == "}":
                    if depth == 0 and closing == "}":
                        return out
                    depth -= 1
                elif token.text == closing and depth == 0:
                    return out
            out.append(token)
        return out


@dataclass(slots=True)
class Macro:
    nargs: int
    default: list[Token] | None  # default of an optional first argument (\newcommand{\x}[2][d])
    body: list[Token]


class MacroLoop(Exception):
    """A user macro kept expanding past the budget (e.g. `\\def\\a{\\a}`)."""


def substitute(name: str, macro: Macro, args: list[list[Token]], pos: int) -> list[Token]:
    """The body of macro `name` with #1..#9 replaced by the arguments, every token placed at `pos`."""
    out: list[Token] = []
    body = macro.body
    i = 0
    while i < len(body):
        token = body[i]
        if token.kind == "char" and token.text == "#" and i + 1 < len(body):
            following = body[i + 1]
            if following.kind == "text" and following.text[0].isdigit():
                n = int(following.text[0])
                if 1 <= n <= len(args):
                    out.extend(Token(t.kind, t.text, pos) for t in args[n - 1])
                if len(following.text) > 1:
                    out.append(Token("text", following.text[1:], pos))
                i += 2
                continue
        # A macro's own name inside its body is not re-expanded: `\newcommand\x{\setfont\x}` is
        # a font switch naming itself, not a loop to run.
        kind = "selfref" if token.kind == "cs" and token.text == name else token.kind
        out.append(Token(kind, token.text, pos))
        i += 1
    return out


def read_macro_args(stream: TokenStream, macro: Macro) -> list[list[Token]]:
    args: list[list[Token]] = []
    count = macro.nargs
    if macro.default is not None and count:
        optional = stream.read_optional()
        args.append(optional if optional is not None else list(macro.default))
        count -= 1
    for _ in range(count):
        args.append(stream.read_arg())
    return args


class ExpansionBudget:
    """How many tokens macro expansions may still produce in one read: no definition loop, however
    mutual or exponential, can hang the reader."""

    def __init__(self, tokens: int = 300_000) -> None:
        self.left = tokens

    def spend(self, name: str, count: int) -> None:
        self.left -= count
        if self.left < 0:
            raise MacroLoop(name)


def expand_all(tokens: list[Token], macros: dict[str, Macro], budget: ExpansionBudget, per_call: int = 20_000) -> list[Token]:
    """Expand user macros fully (for math: equations and inline formulas).

    Raises MacroLoop when this call's or the read's budget runs out.
    """
    if not macros:
        return tokens
    stream = TokenStream(tokens)
    out: list[Token] = []
    while (token := stream.next()) is not None:
        macro = macros.get(token.text) if token.kind == "cs" else None
        if macro is None:
            out.append(token)
            continue
        per_call -= 1 + len(macro.body)
        if per_call < 0:
            raise MacroLoop(token.text)
        budget.spend(token.text, 1 + len(macro.body))
        stream.push(substitute(token.text, macro, read_macro_args(stream, macro), token.pos))
    return out


def join_tokens(tokens: list[Token]) -> str:
    """LaTeX source of tokens, comments dropped and whitespace collapsed."""
    text = "".join(" " if t.kind in ("nl", "par") else t.text for t in tokens if t.kind != "comment")
    return " ".join(text.split())

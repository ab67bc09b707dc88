"""Launchers → a FileIndex: the runs a shell script (also one without an extension that names its
interpreter), a Makefile's recipes or a README's commands make.

A run is a command that starts a Python script: `python train.py --lr 4e-3`, `torchrun
--nproc_per_node=8 main.py ...`, `accelerate launch train.py ...`, `python -m pkg.train ...`, with
`\\` continuations joined. In Markdown only fenced code blocks hold commands. Each numeric flag
(`--drop_path 0.1`, `--lr=4e-3`) and each dotted override (`trainer.max_epochs=24`, Hydra) is a
value site of kind `command-line`, located where it is written; its `call` is the whole command, so
what the command names (`--model vit_base_patch16_224`, `--eval`) tells the run's experiment and
stage. Each command is also a `Launch` (its script and flags): a flag replaces the command-line
default of that name in the script the command runs (in every script when the script is not a
workspace file, or the parser lives in a module it imports) and any config default of that name, as
`args.lr = ...` does, so `parser.add_argument("--drop_path", default=0.0)` is not the value the
documented run uses.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from typing import Literal

from ...schemas.code import CodeLocation, ConfigReference, FileIndex, Launch, ValueSite
from ...schemas.paper import Problem
from .knowledge import normalize_name

LauncherLanguage = Literal["shell", "markdown"]

MAX_LAUNCHER_CHARS = 256_000
MAX_COMMAND_CHARS = 8_000
_FENCE_RE = re.compile(r"^\s*(```|~~~)")
# What starts a Python script, up to the script (or module) it runs.
_STARTER_RE = re.compile(
    r"(?:^|[\s;&|(])(?:python[\d.]*|torchrun|accelerate\s+launch|deepspeed|(?:python[\d.]*\s+-m\s+)?torch\.distributed\.(?:launch|run))\b"
)
_NUMBER_RE = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_FLAG_RE = re.compile(r"--?[A-Za-z][\w.-]*")
_OVERRIDE_RE = re.compile(r"\+{0,2}([A-Za-z_][\w-]*(?:\.[\w-]+)+)=(.+)")


def index_launcher(path_rel: str, source: str, language: LauncherLanguage) -> FileIndex:
    """Every run a launcher file documents, as value sites of its flags."""
    problems: list[Problem] = []
    values: list[ValueSite] = []
    launches: list[Launch] = []
    references: list[ConfigReference] = []
    if len(source) > MAX_LAUNCHER_CHARS:
        problems.append(Problem(severity="info", message=f"{path_rel}: too large to be a launcher; not read"))
    else:
        for command, pieces, numbers in _commands(source, markdown=language == "markdown"):
            sites = _flag_sites(path_rel, command, pieces, numbers)
            values += sites
            references += _config_references(path_rel, command, pieces)
            launches.append(
                Launch(script=script_of(command), flags=sorted({site.name.lstrip("-").replace("-", "_") for site in sites}), options=command_options(command))
            )
    return FileIndex(
        file=path_rel,
        sha256=hashlib.sha256(source.encode("utf-8", errors="surrogatepass")).hexdigest(),
        language=language,
        values=values,
        problems=problems,
        launches=launches,
        config_references=references,
    )


def commands_of(index: FileIndex) -> list[str]:
    """The distinct commands (runs) a launcher's index holds, in order."""
    return list(dict.fromkeys(site.call for site in index.values if site.kind == "command-line" and site.call))


_ASSIGNMENT_RE = re.compile(r"(?:export\s+)?([A-Za-z_]\w*)=(.*)", re.S)
_VARIABLE_RE = re.compile(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))")


def _open_assignment(text: str) -> bool:
    """Whether a variable's value goes on past this line: `ARGS="` up to the line closing its quote.
    Only an assignment does: an apostrophe in a command or a comment ("don't") ends nothing."""
    if not _ASSIGNMENT_RE.match(text) or _STARTER_RE.search(text):
        return False
    try:
        shlex.split(text, comments=True, posix=True)
    except ValueError:
        return True
    return False


_Piece = tuple[int, int, str]  # (line, column, text) of a physical line of a command
_Number = tuple[str, int, int]  # a variable's number as written, and its line and column


def _commands(source: str, *, markdown: bool) -> list[tuple[str, list[_Piece], dict[str, _Number]]]:
    """Each command that starts a Python script: its text (continuations joined, the launcher's own
    variables expanded: `ARGS="--lr 3e-4"` ... `torchrun train.py ${ARGS}`), its pieces (the
    variables' lines included) and the numbers the launcher's variables hold by then (`LR=3e-4`
    for `--lr $LR`), each where it is written."""
    commands = []
    variables: dict[str, tuple[str, list[_Piece]]] = {}
    numbers: dict[str, _Number] = {}
    pending: list[tuple[int, int, str]] = []
    in_fence = not markdown
    for number, line in enumerate(source.splitlines()):
        if markdown and _FENCE_RE.match(line):
            in_fence, pending = not in_fence, []
            continue
        if not in_fence:
            continue
        stripped = line.rstrip()
        body = stripped.lstrip()
        if not pending and (not body or body.startswith("#")):
            continue
        column = len(line) - len(line.lstrip())
        if body.startswith("$ "):
            body, column = body[2:], column + 2
        elif not pending and line.startswith("\t") and body[:1] in ("@", "-", "+"):
            quiet = len(body) - len(body.lstrip("@-+"))  # a Makefile recipe's `@-python train.py`: not the command
            body, column = body[quiet:], column + quiet
        continued = body.endswith("\\")
        pending.append((number, column, body[:-1] if continued else body))
        text = " ".join(piece for _, _, piece in pending)
        if continued or (len(text) <= MAX_COMMAND_CHARS and _open_assignment(text)):
            continue
        assignment = _ASSIGNMENT_RE.fullmatch(text)
        if assignment and not _STARTER_RE.search(text):
            value = _tokens(text)
            variables[assignment[1]] = (value[0].partition("=")[2] if len(value) == 1 else assignment[2], pending)
            written = variables[assignment[1]][0]
            if len(pending) == 1 and _NUMBER_RE.fullmatch(written):
                line, column, piece = pending[0]
                numbers[assignment[1]] = (written, line, column + max(piece.find(written, piece.find("=")), 0))
            else:
                numbers.pop(assignment[1], None)
        else:
            pieces = list(pending)
            for match in _VARIABLE_RE.finditer(text):
                if (match[1] or match[2]) in variables:
                    pieces += variables[match[1] or match[2]][1]
            text = _VARIABLE_RE.sub(lambda m: variables[m[1] or m[2]][0] if (m[1] or m[2]) in variables else m[0], text)
            if len(text) <= MAX_COMMAND_CHARS and _STARTER_RE.search(text) and (".py" in text or " -m " in text):
                commands.append((text, pieces, dict(numbers)))
        pending = []
    return commands


def _tokens(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=True, posix=True)
    except ValueError:  # an unclosed quote: words as written
        return text.split()


def command_options(command: str) -> dict[str, str]:
    """A command's flags with the values written for them, dashes dropped and `-` as `_`:
    `--model-variant=llama2_70b --lr 4e-3` → {"model_variant": "llama2_70b", "lr": "4e-3"}."""
    tokens = _tokens(command)
    options = {}
    for index, token in enumerate(tokens):
        name, raw = _flag_value(token, tokens[index + 1] if index + 1 < len(tokens) else None)
        if name is not None and raw is not None:
            options[name.lstrip("-").replace("-", "_")] = raw
    return options


def command_numbers(command: str) -> dict[str, float]:
    """A command's numeric flags by name, dashes dropped: `--nproc_per_node=8 --lr 4e-3` →
    {"nproc_per_node": 8.0, "lr": 0.004}."""
    tokens = _tokens(command)
    numbers = {}
    for index, token in enumerate(tokens):
        name, raw = _flag_value(token, tokens[index + 1] if index + 1 < len(tokens) else None)
        if name is not None and raw is not None and _NUMBER_RE.fullmatch(raw):
            numbers[name.lstrip("-")] = float(raw)
    return numbers


_SCRIPT_RE = re.compile(r"([\w./-]+)\.py\b|\s-m\s+([\w.]+)")


def script_of(command: str) -> str | None:
    """The script (`tools/train.py`, without `.py`) or module (`pkg.train`) a command runs."""
    found = _SCRIPT_RE.search(command)
    return (found[1] or found[2].replace(".", "/")) if found else None


def subcommand_of(command: str) -> str | None:
    """The word right after the script, before any flag: LightningCLI's `main.py fit` or
    `main.py validate`, a CLI's `run.py train`."""
    found = _SCRIPT_RE.search(command)
    if found is None:
        return None
    rest = _tokens(command[found.end() :])
    return rest[0] if rest and re.fullmatch(r"[A-Za-z][\w-]*", rest[0]) else None


_CONFIG_FILE_RE = re.compile(r"(?:^|=)(?P<path>[\w./-]+\.(?:ya?ml|json|toml|ini|cfg))$")
_CONFIG_NAME_FLAGS = ("--config-name", "--config_name", "-cn")  # Hydra: a name in its config folder
_OUTPUT_FLAG_RE = re.compile(r"^-.*(?:out|save|log|dump|result|write|export)", re.I)
_CONFIG_NAME_LIST_RE = re.compile(r"(?:--config[-_]name|-cn)[= ]\[(?P<names>[^\]]+)\]")


def _config_references(path_rel: str, command: str, pieces: list[tuple[int, int, str]]) -> list[ConfigReference]:
    """The config files a command names (`-c configs/coco.yaml`, `--config-name=delete_tshirt`): the
    run loads them (settle resolves each to a workspace file)."""
    references = []
    for line, column, piece in pieces:
        # `--config-name=[delete_celeb, delete_sd]`: a README's way of writing one run per name
        for listed in _CONFIG_NAME_LIST_RE.finditer(piece):
            for name in re.finditer(r"[\w./-]+", listed["names"]):
                at = listed.start("names") + name.start()
                location = CodeLocation(file=path_rel, line=line, column=column + at, end_line=line, end_column=column + at + len(name[0]))
                references.append(ConfigReference(path=f"{name[0]}.yaml", location=location, command=command))
        tokens = _tokens(piece)
        for index, token in enumerate(tokens):
            flag = token.split("=", 1)[0] if token.startswith("-") and "=" in token else (tokens[index - 1] if index else "")
            if (found := _CONFIG_FILE_RE.search(token)) is not None:
                if _OUTPUT_FLAG_RE.search(flag):
                    continue  # `--save results.json`: what the run writes, not what it loads
                path = found["path"]
            elif token.split("=", 1)[0] in _CONFIG_NAME_FLAGS:
                name = token.split("=", 1)[1] if "=" in token else (tokens[index + 1] if index + 1 < len(tokens) else "")
                if not re.fullmatch(r"[\w./-]+", name):
                    continue
                path = name if name.endswith((".yaml", ".yml")) else f"{name}.yaml"
            else:
                continue
            at = max(piece.find(token), 0)
            location = CodeLocation(file=path_rel, line=line, column=column + at, end_line=line, end_column=column + at + len(token))
            references.append(ConfigReference(path=path, location=location, command=command))
    return references


def _flag_sites(path_rel: str, command: str, pieces: list[_Piece], numbers: dict[str, _Number]) -> list[ValueSite]:
    sites = []
    for line, column, piece in pieces:
        tokens = _tokens(piece)
        position = 0
        for index, token in enumerate(tokens):
            at = piece.find(token, position)
            position = at + len(token) if at >= 0 else position
            name, raw = _flag_value(token, tokens[index + 1] if index + 1 < len(tokens) else None)
            if name is None or raw is None:
                continue
            variable = _VARIABLE_RE.fullmatch(raw)
            if variable is not None and (variable[1] or variable[2]) in numbers:
                raw, at_line, at_column = numbers[variable[1] or variable[2]]  # `--lr $LR`: where LR's number is written
            elif _NUMBER_RE.fullmatch(raw):
                at_line, at_column = line, column + max(piece.find(raw, max(at, 0)), 0)
            else:
                continue
            value = float(raw)
            location = CodeLocation(file=path_rel, line=at_line, column=at_column, end_line=at_line, end_column=at_column + len(raw))
            last = name.lstrip("-").replace("-", "_").rsplit(".", 1)[-1]
            sites.append(
                ValueSite(
                    name=name,
                    normalized_name=normalize_name(last),
                    value=int(value) if value.is_integer() and "." not in raw and "e" not in raw.lower() else value,
                    raw=raw,
                    kind="command-line",
                    call=command,
                    location=location,
                )
            )
    return sites


def _flag_value(token: str, following: str | None) -> tuple[str | None, str | None]:
    """`--lr 4e-3`, `--lr=4e-3` → ("--lr", "4e-3"); `trainer.max_epochs=24` → ("trainer.max_epochs", "24")."""
    if token.startswith("-"):
        name, equals, raw = token.partition("=")
        if not _FLAG_RE.fullmatch(name):
            return None, None
        if equals:
            return name, raw
        if following is not None and not following.startswith("--"):
            return name, following
        return None, None
    override = _OVERRIDE_RE.fullmatch(token)
    return (override[1], override[2]) if override else (None, None)

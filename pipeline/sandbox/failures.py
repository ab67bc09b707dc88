"""What a smoke run's output says went wrong: failures at workspace lines, classified.

`failures_of` reads the combined output of one run (a Python script, or `python3 -m pytest -x -q`),
possibly cut in the middle by the output cap, and returns its failures:

- a script: the last Python traceback (a chain prints the final exception last; a DataLoader
  worker's "Original Traceback" nested in the message is taken as the final one), or a SyntaxError
  report (`File "...", line N` with no function). A traceback whose header was cut is still read
  from its frames; one whose end was cut keeps its frames and is classified from the output's end.
- pytest: one failure per section of its FAILURES/ERRORS report (long, short or native traceback
  style; collection errors; errors at setup/teardown; a conftest that does not import), with the
  test's node id from the short summary; a summary line whose section was cut gives a failure at
  the test function's `def` line.

Paths map to the workspace: a path under `workspace_in_run` (`/workspace` in a container, the host
folder in local mode) or relative (as pytest prints them) becomes workspace-relative with forward
slashes; other frames (site-packages, the standard library, `<frozen ...>`, an environment inside
the workspace) are kept with `in_workspace` False. A failure's `location` is its deepest workspace
frame (0-based line; the columns of the failing expression where Python's carets show them, else of
the statement's line); `frames` are the raising frame and the workspace frames nearest it, at most
five, outermost first.

`classify(exception, message, code)` names the class (see ErrorClass) and a suggested fix where one
is known; the rules are in its docstring. The flags decide first: `timed_out` is one timeout failure
(at the frame being executed when the output shows one), `oom_killed` one oom failure. A passing
run (exit 0) has no failures; a failed run with nothing readable has one `other` failure whose
message is the output's last lines.
"""

from __future__ import annotations

import ast
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...schemas.code import CodeLocation
from ...schemas.smoke import ErrorClass, Frame, SmokeFailure
from ..code import EXCLUDED_DIRECTORIES, MAX_FILE_BYTES
from ..code.python import parse_module
from ..files import UnreadableFile, read_regular_file
from .deps import distribution_for

__all__ = ["classify", "failures_of"]

MAX_FRAMES = 5
MAX_MESSAGE_LINES = 30
MAX_MESSAGE_CHARS = 2000
TAIL_LINES = 6
SIGKILL_EXITS = (137, -9)
SCRATCH = "/tmp"

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_TRACEBACK_RE = re.compile(r"Traceback \(most recent call last\):\s*$")
_STACK_DUMP_RE = re.compile(r"\(most recent call first\):\s*$")  # faulthandler
_CHAIN_RE = re.compile(
    r"^(During handling of the above exception, another exception occurred|"
    r"The above exception was the direct cause of the following exception):\s*$"
)
_FRAME_RE = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:,? in (?P<function>.+?))?\s*$')
_CARETS_RE = re.compile(r"^\s*[~^]*\^[~^]*\s*$|^\s*~+\s*$")
_EXCEPTION_RE = re.compile(r"^(?P<name>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?P<colon>:(?:\s.*)?)?$")
# pytest
_SECTION_RE = re.compile(r"^_{3,} (?P<title>.+?) _{3,}$")
_BANNER_RE = re.compile(r"^={3,}(?: (?P<title>.+?) )?={3,}$")
_SUBSECTION_RE = re.compile(r"^-{3,} .+ -{3,}$")
_SEPARATOR_RE = re.compile(r"^(?:_ ){3,}_?\s*$")
_LOCATION_RE = re.compile(
    r"^(?P<path>\S.*?(?:\.pyw?|>)):(?P<line>\d+): ?(?:in (?P<function>\S.*)|(?P<kind>[A-Za-z_][\w.]*))?\s*$"
)
# A node id starts with a path to a .py file: `FAILED tests/test_x.py::test_y[a b] - KeyError: 'k'`.
_SUMMARY_RE = re.compile(r"^(?P<outcome>FAILED|ERROR) (?P<node>[^\s:]+\.py(?:::.+?)?)(?: - (?P<message>.*))?$")
_CONFTEST_RE = re.compile(r"^ImportError while loading conftest '(?P<path>.+)'\.$")
_DEF_RE = re.compile(r"^\s*(?:async\s+)?def (\w+)\(")
_PYTEST_MARKERS = (_SUMMARY_RE, _CONFTEST_RE)


# ---------------------------------------------------------------------------------------------- entry


def failures_of(
    output: str,
    workspace: Path,
    workspace_in_run: str,
    *,
    exit_code: int | None,
    timed_out: bool,
    oom_killed: bool,
    timeout_seconds: float | None = None,
    memory: str | None = None,
) -> list[SmokeFailure]:
    """The failures one run's output shows, each classified, at workspace lines. `timeout_seconds`
    and `memory` (the limits) only make the timeout and oom messages more precise."""
    context = _Context(Path(workspace), workspace_in_run)
    lines = _ANSI_RE.sub("", output).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if timed_out:
        return [_timeout(lines, context, timeout_seconds)]
    if oom_killed:
        return [_oom(lines, context, memory, certain=True)]
    if exit_code == 0:
        return []
    failures = _pytest_failures(lines, context) if _looks_like_pytest(lines) else []
    if not failures:
        failures = _script_failures(lines, context)
    if failures:
        return failures
    if exit_code in SIGKILL_EXITS:
        # cgroup v2 may kill a child at the memory limit without marking the container OOMKilled.
        return [_oom(lines, context, memory, certain=False)]
    if exit_code is None:
        return []
    message = _tail(lines)
    error_class, suggestion = classify(None, message)
    return [SmokeFailure(error_class=error_class, message=message or f"exit code {exit_code}", suggestion=suggestion)]


def _tail(lines: list[str], count: int = TAIL_LINES) -> str:
    kept = [line.rstrip() for line in lines if line.strip()]
    return "\n".join(kept[-count:])


def _timeout(lines: list[str], context: _Context, limit: float | None) -> SmokeFailure:
    """One failure at the frame being executed, when the output ends with a stack (faulthandler, a
    KeyboardInterrupt, pytest-timeout); none taken from an exception the run had already handled."""
    frames: list[_RawFrame] = []
    blocks = _tracebacks(lines)
    if blocks:
        last = blocks[-1]
        if last.most_recent_first:
            # faulthandler dumps every thread: the interrupted one is "Current thread".
            dumps = []
            for block in reversed(blocks):
                if not block.most_recent_first:
                    break
                dumps.append(block)
            last = next((block for block in dumps if block.current_thread), last)
        # A dump has no exception of its own (a shell may follow it with "Aborted"): it is where the run was.
        ended = last.exception is None or last.exception.split(".")[-1] in {"KeyboardInterrupt", "SystemExit", "Timeout"}
        if last.most_recent_first or ended:
            frames = last.frames
    limit_text = f" of {limit:g} s" if limit else ""
    return _failure(
        frames,
        None,
        [f"The run was stopped at the time limit{limit_text}."],
        context,
        forced=(
            "timeout",
            (
                "Make the smoke run shorter (one step on a tiny subset, e.g. behind a --smoke flag) or raise "
                "the sandbox's timeout."
            ),
        ),
    )


def _oom(lines: list[str], context: _Context, memory: str | None, *, certain: bool) -> SmokeFailure:
    blocks = _tracebacks(lines)
    frames = blocks[-1].frames if blocks and blocks[-1].exception is None else []
    limit = f" of {memory}" if memory else ""
    message = (
        f"The run was killed at the memory limit{limit}."
        if certain
        else f"The run was killed (SIGKILL), most likely at the memory limit{limit}."
    )
    return _failure(
        frames,
        None,
        [message],
        context,
        forced=(
            "oom",
            "Make the smoke run smaller (batch size, model width, a data subset) or raise the sandbox's memory limit.",
        ),
    )


# ------------------------------------------------------------------------------------------ workspace


class _Context:
    """Where the workspace was in the run, and its files' lines (read once)."""

    def __init__(self, workspace: Path, workspace_in_run: str) -> None:
        self.workspace = workspace
        roots = [workspace_in_run, str(workspace)]
        try:
            roots.append(str(workspace.resolve()))
        except OSError:
            pass
        self.roots = sorted({root.rstrip("/") for root in roots if root and root != "/"}, key=len, reverse=True)
        self.run_root = workspace_in_run.rstrip("/")
        try:
            self.local = Path(workspace_in_run).resolve() == workspace.resolve()
        except OSError:
            self.local = False
        self._lines: dict[str, list[str] | None] = {}

    def map_path(self, printed: str) -> tuple[str, bool]:
        """(workspace-relative path, True) for a file in the workspace, else (as printed, False)."""
        path = printed.strip()
        if not path or path.startswith("<"):
            return path, False
        for root in self.roots:
            if path.startswith(root + "/"):
                relative = posixpath.normpath(path[len(root) + 1 :])
                return relative, _is_workspace_code(relative)
        if path.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", path):
            return path, False
        relative = posixpath.normpath(path)
        if relative == ".." or relative.startswith("../"):
            return path, False
        return relative, _is_workspace_code(relative)

    def source_line(self, file: str, line: int) -> str | None:
        """Line `line` (0-based) of a workspace file, or None."""
        if file not in self._lines:
            try:
                self._lines[file] = (self.workspace / file).read_text(encoding="utf-8", errors="replace").splitlines()
            except (OSError, ValueError):
                self._lines[file] = None
        lines = self._lines[file]
        return lines[line] if lines is not None and 0 <= line < len(lines) else None

    def in_run(self, path: str) -> str | None:
        """A path as the run saw it, as workspace-relative when it lies in the workspace."""
        if path.startswith(self.run_root + "/"):
            return posixpath.normpath(path[len(self.run_root) + 1 :])
        return None


def _is_workspace_code(relative: str) -> bool:
    parts = relative.split("/")
    return not any(
        part in EXCLUDED_DIRECTORIES or part.startswith(".") or part in ("site-packages", "dist-packages")
        for part in parts[:-1]
    )


# ---------------------------------------------------------------------------------------- tracebacks


@dataclass
class _RawFrame:
    path: str  # as printed
    line: int  # 1-based, as printed
    function: str | None
    code: str | None = None  # stripped
    printed_code: str | None = None  # as printed, for the carets under it
    carets: str | None = None


@dataclass
class _Traceback:
    frames: list[_RawFrame] = field(default_factory=list)
    exception: str | None = None  # as printed (dotted)
    message: list[str] = field(default_factory=list)
    linked: bool = False  # chained to the one before it (cause, context, or the original of a re-raise)
    most_recent_first: bool = False  # a faulthandler dump
    current_thread: bool = False  # the dump of the thread that was interrupted


def _tracebacks(lines: list[str]) -> list[_Traceback]:
    """Every Python traceback (or SyntaxError report, or faulthandler stack) in the lines, in order;
    frames outermost first."""
    blocks: list[_Traceback] = []
    current: _Traceback | None = None
    collecting: _Traceback | None = None
    linked_next = False
    for line in lines:
        stripped = line.strip()
        if _TRACEBACK_RE.search(line):
            current = _Traceback(linked=linked_next or stripped.startswith("Original Traceback"))
            blocks.append(current)
            collecting, linked_next = None, False
            continue
        if _STACK_DUMP_RE.search(line):
            current = _Traceback(
                most_recent_first=True, current_thread=stripped.startswith(("Current thread", "Stack"))
            )
            blocks.append(current)
            collecting = None
            continue
        if _CHAIN_RE.match(stripped):
            current, collecting, linked_next = None, None, True
            continue
        match = _FRAME_RE.match(line)
        if match:
            if current is None or current.exception is not None:
                current = _Traceback(linked=linked_next)  # the header was cut, or a SyntaxError report
                blocks.append(current)
                linked_next = False
            current.frames.append(_RawFrame(match["path"], int(match["line"]), match["function"]))
            collecting = None
            continue
        if current is not None and current.frames and current.exception is None:
            if not stripped:
                continue
            if line[:1] in (" ", "\t"):
                frame = current.frames[-1]
                if stripped.startswith("[Previous line repeated") or current.most_recent_first:
                    continue
                if frame.code is not None and frame.carets is None and _CARETS_RE.match(line):
                    frame.carets = line
                elif frame.code is None:
                    frame.code, frame.printed_code = stripped, line
                continue
            if _is_exception_line(stripped):
                current.exception = _EXCEPTION_RE.match(stripped)["name"]
                current.message = [stripped]
                collecting = current
            continue  # anything else: output interleaved with the traceback
        if collecting is not None:
            if not stripped or len(collecting.message) >= MAX_MESSAGE_LINES:
                collecting = None
            else:
                collecting.message.append(line.rstrip())
    for block in blocks:
        if block.most_recent_first:
            block.frames.reverse()
    return [block for block in blocks if block.frames or block.exception]


def _is_exception_line(text: str) -> bool:
    match = _EXCEPTION_RE.match(text)
    if match is None:
        return False
    name = match["name"].split(".")[-1]
    return name[:1].isupper() or "Error" in name or "Exception" in name


def _script_failures(lines: list[str], context: _Context) -> list[SmokeFailure]:
    blocks = _tracebacks(lines)
    if not blocks:
        return []
    chain = [blocks[-1]]
    while chain[-1].linked and len(chain) < len(blocks):
        chain.append(blocks[len(blocks) - len(chain) - 1])
    final = chain[0]
    if not any(context.map_path(frame.path)[1] for frame in final.frames):
        # A re-raise outside the workspace (a DataLoader's worker): the workspace frames are earlier.
        for block in chain[1:]:
            if any(context.map_path(frame.path)[1] for frame in block.frames):
                final = _Traceback(block.frames + final.frames, final.exception, final.message)
                break
    message = final.message if final.exception else [_tail(lines)]
    causes = [(block.exception, "\n".join(block.message)) for block in chain[1:] if block.exception]
    return [_failure(final.frames, final.exception, message, context, causes=causes)]


# ---------------------------------------------------------------------------------------------- pytest


def _looks_like_pytest(lines: list[str]) -> bool:
    for line in lines:
        if any(pattern.match(line) for pattern in _PYTEST_MARKERS):
            return True
        banner = _BANNER_RE.match(line)
        if banner and banner["title"] in ("FAILURES", "ERRORS", "short test summary info"):
            return True
    return False


@dataclass
class _Section:
    title: str
    lines: list[str]


def _sections(lines: list[str]) -> list[_Section]:
    """pytest's report sections (`____ title ____` under FAILURES/ERRORS), without their captured
    output; a conftest that failed to import is one too."""
    sections: list[_Section] = []
    current: _Section | None = None
    capturing = False
    in_report = False
    for line in lines:
        banner = _BANNER_RE.match(line)
        if banner:
            in_report = banner["title"] in ("FAILURES", "ERRORS")
            current = None
            continue
        conftest = _CONFTEST_RE.match(line)
        if conftest:
            current = _Section(f"conftest {conftest['path']}", [])
            sections.append(current)
            capturing = True
            continue
        header = _SECTION_RE.match(line)
        if header and in_report:
            current = _Section(header["title"], [])
            sections.append(current)
            capturing = True
            continue
        if current is None:
            continue
        if _SUBSECTION_RE.match(line):
            capturing = False  # ---- Captured stdout call ----
            continue
        if _SUMMARY_RE.match(line) or line.startswith("!!!!"):
            current = None
            continue
        if capturing:
            current.lines.append(line)
    return sections


def _pytest_failures(lines: list[str], context: _Context) -> list[SmokeFailure]:
    summary = [match for line in lines if (match := _SUMMARY_RE.match(line))]
    unmatched = list(summary)
    failures: list[SmokeFailure] = []
    for section in _sections(lines):
        node = _node_of(section.title, unmatched)
        if node is not None:
            unmatched.remove(node)
        failure = _section_failure(section, context, node["node"] if node is not None else None)
        if failure is not None:
            failures.append(failure)
    for entry in unmatched:  # the section was cut from the output
        failures.append(_summary_failure(entry, context))
    return failures


def _node_of(title: str, summary: list[re.Match]) -> re.Match | None:
    """The summary entry of a section: `TestX.test_y[1]` ↔ `tests/t.py::TestX::test_y[1]`,
    `ERROR collecting tests/t.py` ↔ `tests/t.py`, `ERROR at setup of test_y` ↔ `...::test_y`."""
    if title.startswith("ERROR collecting "):
        wanted = title.removeprefix("ERROR collecting ")
        return next((entry for entry in summary if entry["node"] == wanted), None)
    title = re.sub(r"^ERROR at (?:setup|teardown|call) of ", "", title)
    for entry in summary:
        node = entry["node"]
        if "::" in node and node.split("::", 1)[1].replace("::", ".") == title:
            return entry
    return None


def _section_failure(section: _Section, context: _Context, node: str | None) -> SmokeFailure | None:
    body = section.lines
    has_python_frames = any(_FRAME_RE.match(line) for line in body if not line.startswith("E "))
    has_pytest_frames = any(_LOCATION_RE.match(line) for line in body)
    if has_python_frames and not has_pytest_frames:  # --tb=native
        blocks = _tracebacks(body)
        if not blocks:
            return None
        final = blocks[-1]
        frames, exception, message = final.frames, final.exception, final.message
    else:
        frames, exception, message = _pytest_entries(body)
    if not frames and exception is None:
        return None
    test = node or _guess_node(section.title, frames, context)
    return _failure(frames, exception, message or [section.title], context, test=test)


def _pytest_entries(body: list[str]) -> tuple[list[_RawFrame], str | None, list[str]]:
    """Frames, exception type and message of one pytest report in long/short style:
    `path:N: in function` + code (short entries), source with a `>` line then `path:N: [Type]` (long
    entries), `E   ...` lines for the exception (with a SyntaxError's `File "...", line N` inside)."""
    frames: list[_RawFrame] = []
    errors: list[str] = []
    raw_errors: list[str] = []  # without the `E`, aligned as Python printed them
    kind: str | None = None
    pending_code: str | None = None
    last_def: str | None = None
    expect_code = False
    for line in body:
        if line.startswith("E ") or line == "E":
            errors.append(line[1:].strip())
            raw_errors.append(line[1:])
            expect_code = False
            continue
        if line.startswith(">"):
            pending_code = line[1:].strip()
            continue
        location = _LOCATION_RE.match(line)
        if location:
            if location["function"] is not None:
                frames.append(_RawFrame(location["path"], int(location["line"]), location["function"].strip()))
                expect_code = True
            else:
                frames.append(_RawFrame(location["path"], int(location["line"]), last_def, code=pending_code))
                kind = location["kind"] or kind
                expect_code = False
            pending_code, last_def = None, None
            continue
        if _SEPARATOR_RE.match(line):
            pending_code, last_def, expect_code = None, None, False
            continue
        if expect_code and line.startswith("    ") and line.strip() and not _CARETS_RE.match(line):
            frames[-1].code = line.strip()
            expect_code = False
            continue
        definition = _DEF_RE.match(line)
        if definition:
            last_def = definition.group(1)
    # A SyntaxError inside the E lines: its `File "...", line N` is the deepest frame.
    for index, text in enumerate(errors):
        match = _FRAME_RE.match(text)
        if match:
            frame = _RawFrame(match["path"], int(match["line"]), match["function"])
            if index + 1 < len(errors) and not _is_exception_line(errors[index + 1]):
                frame.code, frame.printed_code = errors[index + 1], raw_errors[index + 1]
                if index + 2 < len(errors) and _CARETS_RE.match(raw_errors[index + 2]):
                    frame.carets = raw_errors[index + 2]
            frames.append(frame)
    start = next((index for index, text in enumerate(errors) if _is_exception_line(text)), None)
    exception = kind
    if start is not None:
        exception = exception or _EXCEPTION_RE.match(errors[start])["name"]
        message = errors[start:]
    else:
        message = errors
        if exception is None and errors and errors[0].startswith("assert"):
            exception = "AssertionError"
    short = _short(exception)
    qualified = re.match(rf"[\w.]+\.{re.escape(short)}(?=:|$)", message[0]) if short and message else None
    if qualified:  # `E   pkg.config.OpenSetting: ...` under a `path:N: OpenSetting` line
        message = [short + message[0][qualified.end() :], *message[1:]]
    elif short and message and not message[0].startswith(short):
        message = [f"{short}: {message[0]}", *message[1:]]  # `E   assert 1 == 2` under an AssertionError
    return frames, exception, message[:MAX_MESSAGE_LINES]


def _guess_node(title: str, frames: list[_RawFrame], context: _Context) -> str | None:
    """A node id when the summary line was cut: the first workspace test file + the title."""
    if title.startswith("ERROR collecting "):
        return title.removeprefix("ERROR collecting ")
    if title.startswith("conftest "):
        return None
    name = re.sub(r"^ERROR at (?:setup|teardown|call) of ", "", title)
    for frame in frames:
        file, inside = context.map_path(frame.path)
        if inside and posixpath.basename(file).startswith("test"):
            return f"{file}::{name.replace('.', '::')}"
    return None


def _summary_failure(entry: re.Match, context: _Context) -> SmokeFailure:
    """A failure from its summary line alone: at the test function's `def` line when it can be found."""
    node = entry["node"]
    text = entry["message"] or f"{entry['outcome']} {node}"
    head = text.split(":", 1)[0] if ":" in text else text
    exception = head if _is_exception_line(head) else "AssertionError" if text.startswith("assert") else None
    path, *names = node.split("::")
    file, inside = context.map_path(path)
    location = None
    if inside:
        line = _definition_line(context, file, [re.sub(r"\[.*$", "", name) for name in names])
        if line is not None:
            location = _location(context, file, line, None)
    error_class, suggestion = classify(exception, text)
    return SmokeFailure(
        error_class=error_class,
        exception=_short(exception),
        message=text,
        location=location,
        suggestion=suggestion,
        test=node,
    )


def _definition_line(context: _Context, file: str, names: list[str]) -> int | None:
    """The 0-based line of `Class.function` in a workspace file; 0 for the module itself."""
    try:
        data = read_regular_file(context.workspace / file, limit=MAX_FILE_BYTES, inside=context.workspace)
        tree = parse_module(data.decode("utf-8", errors="replace"), file)
    except (UnreadableFile, SyntaxError, ValueError, MemoryError, RecursionError):
        return 0 if not names else None
    scope: list[ast.stmt] = tree.body
    line = 0
    for name in names:
        found = next(
            (
                node
                for node in scope
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name
            ),
            None,
        )
        if found is None:
            return None
        scope, line = found.body, found.lineno - 1
    return line


# ---------------------------------------------------------------------------------------------- building


def _failure(
    raw_frames: list[_RawFrame],
    exception: str | None,
    message_lines: list[str],
    context: _Context,
    *,
    test: str | None = None,
    causes: list[tuple[str | None, str]] | None = None,
    forced: tuple[ErrorClass, str | None] | None = None,
) -> SmokeFailure:
    mapped = [(raw, *context.map_path(raw.path)) for raw in raw_frames]
    frames = [
        Frame(file=file, line=max(0, raw.line - 1), function=raw.function, code=raw.code, in_workspace=inside)
        for raw, file, inside in mapped
    ]
    deepest = next(((raw, file) for raw, file, inside in reversed(mapped) if inside), None)
    location = _location(context, deepest[1], deepest[0].line - 1, deepest[0]) if deepest else None
    message = "\n".join(message_lines).strip()
    if exception and "." in exception and message.startswith(exception + ":"):
        message = _short(exception) + message[len(exception) :]  # torch.OutOfMemoryError: → OutOfMemoryError:
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 1] + "…"
    if forced is not None:
        error_class, suggestion = forced
    else:
        codes = [frame.code for frame in (frames[-1:] + [f for f in frames if f.in_workspace][-1:]) if frame.code]
        error_class, suggestion = classify(exception, message, " \n".join(codes), context=context, location=location)
        for cause, cause_message in causes or []:
            if error_class != "other":
                break
            cause_class, cause_suggestion = classify(cause, cause_message, context=context, location=location)
            if cause_class != "other":
                error_class, suggestion = cause_class, cause_suggestion or suggestion
    return SmokeFailure(
        error_class=error_class,
        exception=_short(exception),
        message=message or (exception or ""),
        location=location,
        frames=_select(frames),
        suggestion=suggestion,
        test=test,
    )


def _short(exception: str | None) -> str | None:
    return exception.split(".")[-1] if exception else None


def _select(frames: list[Frame]) -> list[Frame]:
    """The raising frame and the workspace frames nearest it (at most MAX_FRAMES, outermost first);
    with no workspace frame, the last three."""
    if not frames:
        return []
    chosen = {len(frames) - 1}
    for index in range(len(frames) - 2, -1, -1):
        if len(chosen) >= MAX_FRAMES:
            break
        if frames[index].in_workspace:
            chosen.add(index)
    if not any(frames[index].in_workspace for index in chosen):
        chosen |= set(range(max(0, len(frames) - 3), len(frames)))
    return [frames[index] for index in sorted(chosen)]


def _location(context: _Context, file: str, line: int, raw: _RawFrame | None) -> CodeLocation:
    """The statement's line (from its indentation to its end), narrowed to the expression Python's
    carets mark when they are shown and the file still has that line."""
    line = max(0, line)
    source = context.source_line(file, line)
    if source is None:
        return CodeLocation(file=file, line=line)
    indent = len(source) - len(source.lstrip())
    column, end = indent, len(source.rstrip())
    if raw is not None and raw.carets and raw.printed_code and raw.code == source.strip():
        shift = len(raw.printed_code) - len(raw.printed_code.lstrip())
        marks = [index for index, char in enumerate(raw.carets) if char in "^~"]
        if marks:
            start, stop = indent + marks[0] - shift, indent + marks[-1] + 1 - shift
            if indent <= start < stop <= len(source) + 1:
                column, end = start, min(stop, max(len(source), start + 1))
    return CodeLocation(file=file, line=line, column=column, end_line=line, end_column=max(end, column))


# ------------------------------------------------------------------------------------------- classify

_SYNTAX = {"SyntaxError", "IndentationError", "TabError"}
_IMPORT = {"ModuleNotFoundError", "ImportError"}
_OOM_EXCEPTIONS = {"MemoryError", "OutOfMemoryError", "_ArrayMemoryError", "ResourceExhaustedError"}
_OOM_RE = re.compile(
    r"out of memory|can't allocate memory|Cannot allocate memory|Unable to allocate [\d.]+ ?\w+ for an array|"
    r"std::bad_alloc|OOM when allocating|RESOURCE_EXHAUSTED|DefaultCPUAllocator",
    re.IGNORECASE,
)
_STATE_DICT_RE = re.compile(r"(Missing|Unexpected) key\(s\) in state_dict")
_LABEL_RE = re.compile(
    r"Target -?\d+ is out of bounds|index out of range in self|device-side assert triggered|"
    r"t >= 0 && t < n_classes|cur_target >= 0 && cur_target < n_classes|"
    r"Class values must be smaller than num_classes|contains previously unseen labels|"
    r"Expected floating point type for target|[Tt]arget \d+ is out of bounds"
)
_INDEX_RE = re.compile(r"index (-?\d+) is out of bounds for (?:axis|dimension) (\d+) with size (\d+)")
_LABEL_WORDS_RE = re.compile(
    r"\b(?:np|numpy|torch|jnp|tf)\.(?:eye|identity)\(|\bone_?hot\b|\blabels?\b|\btargets?\b|\bclass(?:es)?\b|"
    r"\bn(?:um)?_classes\b|\by_(?:true|train|test|batch)\b",
    re.IGNORECASE,
)
_SHAPE_PATTERNS = (
    r"operands could not be broadcast together",
    r"shapes \([^)]*\) and \([^)]*\) not aligned",
    r"matmul: Input operand \d+ has a mismatch in its core dimension",
    r"mat1 and mat2 shapes cannot be multiplied",
    r"size mismatch",
    r"The size of tensor a \(\d+\) must match the size of tensor b",
    r"Expected input batch_size \(\d+\) to match target batch_size",
    r"cannot reshape (?:array|tensor) of size \d+ into shape",
    r"shape '\[[^\]]*\]' is invalid for input of size",
    r"view size is not compatible with input tensor's size and stride",
    r"Sizes of tensors must match except in dimension",
    r"input array dimensions except for the concatenation axis must match",
    r"all the input arrays must have same number of dimensions",
    r"Expected \d+D(?: \(unbatched\))? or \d+D \(batched\) input",
    r"to have \d+ channels, but got \d+ channels",
    r"Dimension out of range \(expected to be in range of",
    r"axis -?\d+ is out of bounds for array of dimension",
    r"too many indices for (?:array|tensor)",
    r"target size \(.*\) that is different to the input size",
    r"Found input variables with inconsistent numbers of samples",
    r"Expected 2D array, got (?:1D|scalar) array instead",
    r"[Ii]ncompatible shapes",
    r"[Ss]hapes? mismatch|[Ss]hapes? (?:do not|don't) match|dimension mismatch|inconsistent tensor size",
    r"rearrange-reduction pattern|Shape mismatch, can't divide axis|[Ee]xpected \d+ dimensions?, got \d+",
    r"non-broadcastable output operand with shape|could not broadcast input array from shape",
    r"requested array has an inhomogeneous shape",
    r"contracting dimensions to have the same shape",
    r"number of dims don't match in permute",
)
_SHAPE_RE = re.compile("|".join(_SHAPE_PATTERNS))
_UNPACK_RE = re.compile(r"(?:not enough|too many) values to unpack")
_KEYWORD_RE = re.compile(r"(?P<function>[\w.<>]+)\(\) got an unexpected keyword argument '(?P<name>\w+)'")
_POSITIONAL_RE = re.compile(
    r"(?P<function>[\w.<>]+)\(\) missing \d+ required (?:positional |keyword-only )?arguments?: (?P<names>.+)"
)
_CONFIG_RE = re.compile(
    r"Key '(?P<key>[^']+)' is not in struct|Missing mandatory value: ?(?P<missing>[\w.]+)|"
    r"Key '(?P<other>[^']+)' not in '|Could not override '(?P<override>[^']+)'"
)
_CONFIG_EXCEPTIONS = {"ConfigAttributeError", "ConfigKeyError", "MissingMandatoryValue", "ConfigCompositionException"}
_CONFIG_ATTRIBUTE_RE = re.compile(
    r"'(?:Namespace|SimpleNamespace|DictConfig|EasyDict|ConfigDict|FrozenConfigDict|Config|AttrDict|CfgNode|Munch|"
    r"Box|dict|Dict)' object has no attribute '(?P<name>\w+)'"
)
_PATH_EXCEPTIONS = {
    "FileNotFoundError",
    "NotADirectoryError",
    "IsADirectoryError",
    "PermissionError",
    "FileExistsError",
}
_PATH_RE = re.compile(
    r"No such file or directory|Read-only file system|\[Errno (?:2|13|17|20|21|30)\]|Permission denied"
)
_MISSING_PATH_RE = re.compile(
    r"No such file or directory: '(?P<path>[^']+)'|^(?:\w+Error: )?(?P<found>\S+) not found\.$|"
    r"\[Errno 2\] [^:]*: '(?P<errno>[^']+)'",
    re.MULTILINE,
)
_DENIED_PATH_RE = re.compile(r"(?:Read-only file system|Permission denied): '(?P<path>[^']+)'")
_WRITE_CODE_RE = re.compile(
    r"open\([^)]*['\"][wax]b?\+?['\"]|\.(?:mkdir|makedirs|save|savefig|to_csv|to_json|to_parquet|write_text|"
    r"write_bytes|dump|touch)\b|\bmakedirs\(|\bsave\(|SummaryWriter\(|\bcopy(?:file|tree)?\("
)
_NETWORK_RE = re.compile(
    r"Temporary failure in name resolution|Name or service not known|Network is unreachable|"
    r"nodename nor servname|Failed to establish a new connection|Max retries exceeded|urlopen error|"
    r"couldn't connect to|Connection refused|getaddrinfo failed|outgoing traffic has been disabled|"
    r"We couldn't connect",
)
_NETWORK_EXCEPTIONS = {
    "ConnectionError",
    "URLError",
    "gaierror",
    "MaxRetryError",
    "NewConnectionError",
    "ConnectTimeout",
}
_GPU_RE = re.compile(
    r"Torch not compiled with CUDA enabled|Found no NVIDIA driver|no CUDA GPUs are available|"
    r"CUDA driver initialization failed|torch\.cuda\.is_available\(\) is False|NVIDIA driver on your system is too old"
)
_DEVICE_RE = re.compile(
    r"Expected all tensors to be on the same device|expected scalar type \w+ but found \w+|"
    r"must have the same dtype|Input type \(.*\) and weight type \(.*\) should be the same|"
    r"result type \w+ can't be cast to the desired output type"
)
_NO_MODULE_RE = re.compile(r"No module named '?(?P<module>[\w.]+)'?")
_CANNOT_IMPORT_RE = re.compile(r"cannot import name '(?P<name>[\w.]+)' from '(?P<module>[\w.]+)'")
_SHARED_LIBRARY_RE = re.compile(r"(?P<library>lib[\w.+-]+\.so[\d.]*): cannot open shared object file")


def classify(
    exception: str | None,
    message: str,
    code: str | None = None,
    *,
    context: _Context | None = None,
    location: CodeLocation | None = None,
) -> tuple[ErrorClass, str | None]:
    """The class of one failure and a suggested fix (None when none is known), from the exception's
    type, its message and the code of the failing lines. Rules, first that applies:

    - syntax-error: SyntaxError, IndentationError, TabError.
    - missing-dependency: ModuleNotFoundError/ImportError, or "No module named 'x'" in any message
      (fix: the distribution imports.yaml names for it; the workspace's own module; a missing
      shared library; a name the installed version lacks).
    - oom: MemoryError, OutOfMemoryError (CUDA), "out of memory", "can't allocate memory", numpy's
      "Unable to allocate", std::bad_alloc, RESOURCE_EXHAUSTED.
    - schema-mismatch (state dict): "Missing/Unexpected key(s) in state_dict".
    - label-range: "Target N is out of bounds", "index out of range in self", "device-side assert",
      one_hot's "Class values must be smaller than num_classes", unseen labels; an IndexError ("index
      N is out of bounds for axis A with size S") when the failing code indexes an `eye(...)` /
      one-hot or names labels/targets/classes, or the message does.
    - shape-mismatch: broadcasting, matmul/`not aligned`, "mat1 and mat2 shapes", "size mismatch",
      "The size of tensor a", batch sizes, reshape/view, concatenation, channels, conv input
      dimensionality, einops, sklearn's sample counts; "not enough values to unpack" when the line
      unpacks a `.shape`/`.size()`.
    - schema-mismatch: KeyError, "got an unexpected keyword argument", "missing N required
      argument", omegaconf/Hydra key errors, an AttributeError on a config object (Namespace,
      DictConfig, EasyDict, ...).
    - other (with a fix): no network in the sandbox, no GPU, dtype/device mismatches, an argument
      the script does not take.
    - path: FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError,
      "No such file or directory", "Read-only file system" (fix: /tmp is the scratch area).
    - timeout: pytest-timeout's "Failed: Timeout".
    - other.
    """
    name = (exception or "").split(".")[-1]
    text = message or ""
    code = code or ""
    if name in _SYNTAX:
        return "syntax-error", None
    no_module = _NO_MODULE_RE.search(text)
    if name in _IMPORT or no_module:
        return "missing-dependency", _import_fix(text, context)
    if name in _OOM_EXCEPTIONS or _OOM_RE.search(text):
        return (
            "oom",
            "Make the smoke run smaller (batch size, model width, a data subset) or raise the sandbox's memory limit.",
        )
    if _STATE_DICT_RE.search(text):
        if re.search(r"[\"']module\.", text):
            return (
                "schema-mismatch",
                "The checkpoint was saved from a DataParallel/DDP model: strip the `module.` prefix from its keys before load_state_dict.",
            )
        return (
            "schema-mismatch",
            "The checkpoint's keys differ from the model's: load the checkpoint this model was written for, or map the renamed keys.",
        )
    label = _label_fix(name, text, code)
    if label is not None:
        return "label-range", label
    if (
        _SHAPE_RE.search(text)
        or name == "EinopsError"
        or (_UNPACK_RE.search(text) and re.search(r"\.shape\b|\.size\(", code))
    ):
        return "shape-mismatch", _shape_fix(text)
    schema = _schema_fix(name, text, code)
    if schema is not None:
        return "schema-mismatch", schema or None
    if name in _NETWORK_EXCEPTIONS or _NETWORK_RE.search(text):
        return "other", (
            "The sandbox has no network: put the data or weights in the workspace (or the image) before the run, "
            "or allow the network in the sandbox settings."
        )
    if _GPU_RE.search(text):
        return (
            "other",
            "The sandbox has no GPU: choose the device with torch.cuda.is_available() (and map_location='cpu' when loading).",
        )
    if _DEVICE_RE.search(text):
        return (
            "other",
            "The tensors' dtypes or devices differ: cast one (.float(), .long()) or move both to the same device.",
        )
    if name in _PATH_EXCEPTIONS or _PATH_RE.search(text):
        return "path", _path_fix(name, text, code, context, location)
    if name == "Failed" and re.search(r"\bTimeout\b", text) or re.match(r"Failed: Timeout", text):
        return "timeout", "Make the test faster (a tiny subset, one step) or raise its timeout."
    if re.search(r"error: unrecognized arguments: .*--smoke", text):
        return (
            "other",
            "The script does not take --smoke: add the flag (a one-step run on a tiny subset) or set the smoke command.",
        )
    return "other", None


def _import_fix(text: str, context: _Context | None) -> str | None:
    library = _SHARED_LIBRARY_RE.search(text)
    if library:
        if library["library"].startswith("libGL"):
            return "OpenCV needs libGL, which the image lacks: depend on opencv-python-headless instead (or install libgl1 in the image)."
        return f"The image lacks the system library {library['library']}: install the package that provides it in the image."
    cannot = _CANNOT_IMPORT_RE.search(text)
    if cannot:
        module = cannot["module"]
        if "circular import" in text:
            return f"`{module}` and the module importing it import each other (a circular import): move the import into the function that needs it."
        if context is not None and _is_local_module(context, module.split(".")[0]):
            return f"The workspace's `{module}` defines no `{cannot['name']}`: check the name or add it."
        return (
            f"The installed {distribution_for(module)} has no `{cannot['name']}`: pin the version the code was "
            "written for in the requirements."
        )
    missing = _NO_MODULE_RE.search(text)
    if missing is None:
        return None
    module = missing["module"]
    top = module.split(".")[0]
    if context is not None and _is_local_module(context, top):
        return (
            f"`{top}` is the workspace's own code but is not importable from where the run starts: run from the "
            "workspace root, or make it a package (pyproject.toml) or add its folder to PYTHONPATH."
        )
    distribution = distribution_for(module)
    via = f" (it provides `{top}`)" if distribution.lower() != top.lower() else ""
    return f"Add `{distribution}`{via} to the workspace's requirements and rebuild the sandbox image."


def _is_local_module(context: _Context, name: str) -> bool:
    workspace = context.workspace
    return (
        any(
            candidate.exists()
            for candidate in (workspace / f"{name}.py", workspace / name / "__init__.py", workspace / "src" / name)
        )
        or (workspace / name).is_dir()
        and any((workspace / name).glob("*.py"))
    )


def _label_fix(name: str, text: str, code: str) -> str | None:
    target = re.search(r"Target (-?\d+) is out of bounds", text)
    if target:
        return (
            f"A label is {target.group(1)}, outside [0, num_classes): check num_classes against the data and "
            "whether its labels start at 1."
        )
    if "index out of range in self" in text:
        return "An index is at least the embedding's num_embeddings: check the vocabulary size or number of classes against the largest id."
    if "device-side assert" in text or "n_classes" in text:
        return (
            "Usually a label outside [0, num_classes): run on CPU (or with CUDA_LAUNCH_BLOCKING=1) for the exact line."
        )
    if _LABEL_RE.search(text):
        return "A label lies outside [0, num_classes): check num_classes against the labels in the data."
    index = _INDEX_RE.search(text)
    if (name == "IndexError" or index) and (
        _LABEL_WORDS_RE.search(code) or re.search(r"\b(?:label|target|class)", text)
    ):
        if index:
            return (
                f"Label {index.group(1)} is not below the {index.group(3)} classes indexed here: labels must lie in "
                "[0, num_classes) (do they start at 1, or is num_classes too small?)."
            )
        return "A label lies outside [0, num_classes): check num_classes against the labels in the data."
    return None


def _shape_fix(text: str) -> str:
    linear = re.search(r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)", text)
    if linear:
        return (
            f"The layer takes {linear.group(3)} input features but gets {linear.group(2)}: set its in_features to "
            f"{linear.group(2)}, or fix the flatten/pooling before it."
        )
    channels = re.search(r"to have (\d+) channels, but got (\d+) channels", text)
    if channels:
        return (
            f"The layer expects {channels.group(1)} input channels but gets {channels.group(2)}: check in_channels "
            "and the layout (NCHW vs NHWC)."
        )
    if _UNPACK_RE.search(text):
        return "The array has another number of dimensions than this line unpacks: check the input's layout (a squeezed or missing axis)."
    if "batch_size" in text:
        return "Inputs and targets have different batch sizes: check what the loss receives and any flatten/reshape before it."
    if "reshape" in text or "is invalid for input of size" in text:
        return "The element count does not fit the target shape: derive the shape from the input (e.g. -1 for one dimension)."
    return "Print the operands' shapes at this line: a missing transpose/unsqueeze, a wrong axis or a wrong layer size is the usual cause."


def _schema_fix(name: str, text: str, code: str) -> str | None:
    """'' for a schema mismatch with no specific fix; None when it is not one."""
    if name == "KeyError":
        key = re.match(r"(?:\w+Error: )?(.+)", text.split("\n")[0])
        shown = key.group(1).strip() if key else "the key"
        return (
            f"{shown} is not a key of what this line reads: check it against the config or data it comes from "
            "(or give a default with .get())."
        )
    keyword = _KEYWORD_RE.search(text)
    if keyword:
        return (
            f"`{keyword['function']}` takes no `{keyword['name']}`: the installed version's API, or the config key, "
            "differs from what the code expects."
        )
    positional = _POSITIONAL_RE.search(text)
    if positional:
        return f"`{positional['function']}` needs {positional['names']}: the call (or the config feeding it) does not pass it."
    config = _CONFIG_RE.search(text)
    if config or name in _CONFIG_EXCEPTIONS:
        key = next((value for value in (config.groupdict().values() if config else ()) if value), None)
        what = f"`{key}`" if key else "the key"
        return f"The config has no {what}: add it to the config file (or its schema), or fix its name."
    attribute = _CONFIG_ATTRIBUTE_RE.search(text)
    if attribute:
        return f"The config has no `{attribute['name']}`: add it (an argparse argument, a config key) or fix its name."
    return None


def _path_fix(name: str, text: str, code: str, context: _Context | None, location: CodeLocation | None) -> str | None:
    denied = _DENIED_PATH_RE.search(text)
    read_only = "Read-only file system" in text or "[Errno 30]" in text
    if (
        read_only
        or (name == "PermissionError" or "Permission denied" in text)
        and context is not None
        and not context.local
    ):
        path = denied["path"] if denied else None
        if read_only or _WRITE_CODE_RE.search(code):
            return (
                f"The workspace is read-only in the sandbox: write outputs under {SCRATCH} (the scratch area), "
                "e.g. from an --output-dir flag or an environment variable."
            )
        # A write into the read-only workspace fails with EROFS (above); EACCES there is a read.
        if path and context is not None and (context.in_run(path) or not path.startswith("/")):
            return (
                "The sandbox's user cannot read this workspace file (when paperlens runs as root, runs use the "
                "user nobody): make the workspace readable by others, e.g. chmod -R o+rX on it."
            )
        return "Permission denied: the sandbox runs as a non-root user with no capabilities."
    if name == "FileExistsError":
        return "The path exists already: pass exist_ok=True, or write into a fresh folder under /tmp."
    missing = _MISSING_PATH_RE.search(text)
    if missing is None or context is None:
        return None
    path = missing["path"] or missing["found"] or missing["errno"]
    if (
        "/" not in path
        and "." not in path
        and re.search(r"subprocess|Popen|check_output|check_call|os\.exec|\brun\(", code)
    ):
        return f"The program `{path}` is not installed in the image."
    inside = context.in_run(path) if path.startswith("/") else posixpath.normpath(path)
    if inside is None:
        if context.local:
            return (
                f"`{path}` does not exist on this machine: point the smoke run at a small sample inside the workspace."
            )
        return (
            f"`{path}` is outside the workspace, and only the workspace is mounted in the sandbox: point the smoke "
            "run at a small sample inside the workspace."
        )
    if not path.startswith("/") and location is not None:
        beside = posixpath.normpath(posixpath.join(posixpath.dirname(location.file), path))
        if beside != inside and (context.workspace / beside).exists():
            return (
                f"`{path}` is relative to {location.file}'s folder, but the run starts at the workspace root: "
                "build the path from Path(__file__).parent."
            )
    if (context.workspace / inside).exists():
        return None
    return (
        f"`{inside}` is not in the workspace: add a small sample for the smoke run, or skip it when absent "
        "(the sandbox has no network to download it)."
    )

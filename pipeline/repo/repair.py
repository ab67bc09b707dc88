"""Run and repair: run the repository's tests in the sandbox and, while they fail, let the LLM
repair the files the failure points at, a bounded number of times.

`run_and_repair` works in rounds (`RepairRound`, numbered from 0), each appended to `rounds` as it
ends (so a caller can save the record from `on_progress`):

- A run alone opens the loop: round 0, or, when earlier rounds are given (a resumed record), a
  rerun numbered after them, since the files may have changed since the last recorded run. Its
  outcome is "passed", "failed" or "error".
- After each run, first that applies:
  - it passed: done, "passed";
  - it could not be made (no Docker, a cancel): "needs-human" with its message, nothing to repair;
  - any of its failures is one no repair may fix: "needs-human" before the model is asked, the
    reason saying what a human must do:
    - its exception is `OpenSetting` (a scaffolded repository's `config.py` raises it when code
      reads a setting the paper leaves open): the model would invent a value the paper never gives;
      the reason quotes the message, which holds the question to settle;
    - a `missing-dependency` whose module is not the repository's own: the image is built offline
      from the lock file, so no edit within the loop installs anything; the reason names the
      distribution to add (the failure's suggestion) and that the image must then be rebuilt
      (`paperlens reproduce` pins again on its next run). An import of the repository's own
      module (a name it lacks, a misspelt module) is code, and repaired as any failure;
  - no LLM client: "needs-human";
  - the rounds that asked the model (`repairs_used`, recorded ones included) reached `max_rounds`:
    "needs-human", the reason naming the bound and the last failure;
  - the failure points at no file the model may change that can be shown to it: "needs-human";
  - else a repair round.
- Tests are the specification: a repair never changes one. Files under a `tests/` folder,
  `test_*.py`, `*_test.py` and `conftest.py` are never changeable.
- A repair round gives the model the failures (class, message, the few frames that matter, the
  suggested fix; capped) and the whole texts of the implicated files, the only ones it may change:
  the workspace files of the failures' locations and frames, raising site first, tests left out;
  for a failure whose frames name only tests, the repository's modules each failing test file
  imports (`pkg.mod`, `from pkg import mod`, `from pkg.mod import name`: `pkg/mod.py` or
  `pkg/mod/__init__.py`, also under `src/`, when the repository has it). The tests in the frames
  follow, marked read-only, as context. As many files as fit the prompt the model's context
  leaves beside its answer (`prompt_budget_chars`), the changeable ones first. The model answers with the whole new texts of the
  files it changes (`RepairAnswer`). Its answer is untrusted:
  - a path outside the implicated files (so any test), or leaving the repository, is refused
    (`refused`), never written; a Python text that does not parse is skipped: it cannot repair
    anything; given the paper's facts, so is a Python text in which `paperlens check` finds a
    divergence from a stated value that the old text did not have (a repair never moves the paper's
    values to make a test pass);
  - nothing usable left: "no-patch", and no run (the files did not change, so the last run stands);
  - a cancel while the model answered: nothing is written, the round is recorded ("error") and the
    loop ends with "needs-human", "cancelled";
  - else the old texts are kept, the new ones written atomically, and the tests run again. When a
    test that passed before no longer passes, or the run could not be made, the old texts are
    restored byte for byte: "reverted" (the next round repairs the last kept state again; a run
    that could not be made ends the loop). Otherwise "patched": the new run is what the next round
    repairs. An interruption (KeyboardInterrupt, any exception, a caller's `on_progress` raising)
    after the new texts are written and before the round is recorded restores the old texts byte
    for byte, then propagates.
  - the LLM gives no answer (`LLMError`): the round is recorded ("error") and the loop ends with
    "needs-human" and the error's message.
  Answers reverted or unusable since the files last changed are named in the next prompt: the same
  prompt would get the same answer (temperature 0, and the client's cache).
- `cancel` is checked before each repair, again before a repair is written, and passed to every
  run; a run cancelled after a repair was written is reverted like any run that could not be made.

A round's smoke fields are its own run's; a round that made no run carries the last run's (the
files are as that run saw them). Every run is `SMOKE_COMMAND`: every test runs, so what passed is
known.
"""

from __future__ import annotations

import ast
import difflib
import posixpath
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ...schemas.repo import RepairRound
from ...schemas.smoke import SandboxSettings, SmokeFailure, SmokeResult
from ..check import PaperFacts, check_file
from ..code import index_source
from ..files import write_atomically
from ..llm import LLMClient, prompt_budget_chars
from ..llm.errors import LLMError
from ..sandbox import run_smoke
from ..text import shorten
from .answers import FileText, RepairAnswer, code_of

__all__ = ["SMOKE_COMMAND", "RepairOutcome", "repairs_used", "run_and_repair"]

# No -x: every test runs, so the tests that passed are known; -rA lists them (`PASSED <node id>`).
SMOKE_COMMAND = ["python3", "-m", "pytest", "-q", "-rA"]
PURPOSE = "repair"
# What a scaffolded repository's config.py raises when code reads a setting the paper leaves open.
OPEN_SETTING = "OpenSetting"

# The prompt fits the model's context with room for the answer, which repeats whole files: the
# error (structured, cut to ERROR_BUDGET_CHARS), the instructions and the earlier attempts first,
# the files (each between two marker lines) in what is left.
ERROR_BUDGET_CHARS = 1_500
HEADINGS_CHARS = 300
FAILURES_SHOWN = 3
ATTEMPTS_SHOWN = 2
ATTEMPT_CHARS = 300
MESSAGE_CHARS = 500
CODE_CHARS = 200
# What the record keeps of the model's own words (a refused path) and of a failure in a reason.
ANSWER_PATH_CHARS = 200
REASON_MESSAGE_CHARS = 300
OPEN_SETTING_CHARS = 1_000  # the question to settle is quoted whole

READ_ONLY_HEADING = "The tests involved, read-only (the tests are the specification: never change them; fix the code)"

_PASSED_RE = re.compile(r"^PASSED (?P<node>\S+\.py::.*\S)\s*$", re.MULTILINE)
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# The exception's name before the message (`OpenSetting: `, or qualified: `pkg.config.OpenSetting: `).
_OPEN_SETTING_PREFIX_RE = re.compile(r"^(?:(?:[\w.]*\.)?OpenSetting:\s*)+")
# The module an import failed on: `No module named 'a.b'`, `cannot import name 'x' from 'a.b'`.
_IMPORTED_RE = re.compile(r"No module named '(?P<missing>[\w.]+)'|cannot import name '\w+' from '(?P<from>[\w.]+)'")

SYSTEM_PROMPT = """\
You repair a Python repository whose tests fail. You are given the failure (error class, message,
the stack frames that matter, a suggested fix), the whole text of each file you may change, and
the tests involved, to read only. Answer with the complete new text of every file you change,
under its path exactly as given, and leave out the files you do not change. Change as little as
fixes the failure and keep the passing tests passing. Never change a test: the tests are the
specification, so fix the code."""


@dataclass
class RepairOutcome:
    """Where the loop ended: the reason says why (the bound, the failure, a run or the LLM that
    failed); `image` is the image the runs used."""

    outcome: Literal["passed", "needs-human"]
    reason: str
    rounds: list[RepairRound]
    image: str | None = None


@dataclass
class _Run:
    """The last run of the files as they are on disk: what the next repair starts from."""

    result: SmokeResult
    passed: list[str]


def run_and_repair(
    repo: Path,
    client: LLMClient | None,
    settings: SandboxSettings,
    *,
    max_rounds: int,
    rounds: list[RepairRound] | None = None,
    on_progress: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
    facts: PaperFacts | None = None,
) -> RepairOutcome:
    """Runs the repository's tests (with `settings`, the command replaced by SMOKE_COMMAND) and
    repairs them with `client` for at most `max_rounds` rounds, counting those in `rounds` (a
    resumed record, appended to in place). Given the paper's `facts`, a repaired Python file that
    diverges from a value the paper states is refused. See the module's docstring for the rules."""
    loop = _Loop(
        repo=Path(repo).resolve(),
        client=client,
        settings=settings.model_copy(update={"command": list(SMOKE_COMMAND)}),
        rounds=[] if rounds is None else rounds,
        say=on_progress or (lambda _line: None),
        cancel=cancel,
        facts=facts,
    )
    return loop.run(max_rounds)


@dataclass
class _Loop:
    repo: Path
    client: LLMClient | None
    settings: SandboxSettings
    rounds: list[RepairRound]
    say: Callable[[str], None]
    cancel: threading.Event | None
    facts: PaperFacts | None = None
    image: str | None = None
    # Answers reverted or unusable since the files last changed, for the next prompt.
    attempts: list[str] = field(default_factory=list)

    def run(self, max_rounds: int) -> RepairOutcome:
        number = self.rounds[-1].number + 1 if self.rounds else 0
        current = self._run_alone(number, rerun=bool(self.rounds))
        while True:
            result = current.result
            if result.status == "error":
                return self._needs_human(result.message or "the smoke run could not be made")
            if result.status == "passed":
                used = repairs_used(self.rounds)
                after = f" after {_count(used, 'repair round')}" if used else " with no repair"
                return RepairOutcome("passed", "the smoke test passed" + after, self.rounds, self.image)
            if (why := _unrepairable(self.repo, result.failures)) is not None:
                return self._needs_human(why)
            if self.client is None:
                fails = _last_failure(result)
                return self._needs_human(f"no LLM is configured to repair it; the smoke test fails: {fails}")
            used = repairs_used(self.rounds)
            if used >= max_rounds:
                return self._needs_human(
                    f"the repair bound of {_count(max_rounds, 'round')} (max_rounds) is reached ({used} used) "
                    f"and the smoke test still fails: {_last_failure(result)}"
                )
            if self.cancel is not None and self.cancel.is_set():
                return self._needs_human("cancelled")
            failures = result.failures[:FAILURES_SHOWN]
            implicated, tests = _implicated(self.repo, failures)
            files_budget = prompt_budget_chars(self.client.settings) - _OVERHEAD_CHARS
            shown = _shown_files(self.repo, implicated, files_budget)
            if not shown:
                if implicated:
                    what = f"only files too long to show the model ({', '.join(implicated)})"
                elif tests:
                    what = (
                        f"only tests ({', '.join(tests)}), which a repair never changes, "
                        "and they import none of the repository's modules"
                    )
                else:
                    what = "no file"
                fails = _last_failure(result)
                return self._needs_human(f"the failure points at {what}, so nothing can be repaired: {fails}")
            number += 1
            left_out = [name for name in implicated if name not in shown]
            context = _shown_files(self.repo, tests, files_budget - sum(_block_size(n, t) for n, t in shown.items()))
            current, stop = self._repair(self.client, number, current, failures, shown, context, left_out)
            if stop is not None:
                return self._needs_human(stop)

    def _needs_human(self, reason: str) -> RepairOutcome:
        return RepairOutcome("needs-human", reason, self.rounds, self.image)

    def _smoke(self, number: int) -> _Run:
        result = run_smoke(self.repo, self.settings, cancel=self.cancel)
        self.image = result.image or self.image
        run = _Run(result, _passed_tests(result.output))
        self.say(f"run {number}: {_summary(run)}")
        return run

    def _run_alone(self, number: int, *, rerun: bool) -> _Run:
        started = time.monotonic()
        run = self._smoke(number)
        what = "a rerun of the files as they are, before repairing again" if rerun else "the first run"
        self.rounds.append(_round(number, run, started, outcome=run.result.status, message=f"{what}: {run.result.message}"))
        return run

    def _repair(
        self,
        client: LLMClient,
        number: int,
        current: _Run,
        failures: list[SmokeFailure],
        shown: dict[str, str],
        context: dict[str, str],
        left_out: list[str],
    ) -> tuple[_Run, str | None]:
        """One repair round, recorded: the run the next round starts from, and why the loop must
        stop (None to go on). `shown` holds the files the model may change, `context` the tests it
        may only read."""
        started = time.monotonic()
        implicated = list(shown)
        notes = [f"left out of the prompt, too long: {', '.join(left_out)}"] if left_out else []
        self.say(f"repair {number}: asking the model about {', '.join(implicated)}")
        try:
            messages = _messages(failures, shown, context, self.attempts[-ATTEMPTS_SHOWN:])
            answer = client.structured(messages, RepairAnswer, purpose=PURPOSE)
        except LLMError as err:
            self.say(f"repair {number}: no answer ({err})")
            record = _round(number, current, started, outcome="error", message=str(err), implicated=implicated)
            self.rounds.append(record)
            return current, str(err)
        changes, refused, skipped = _usable_changes(self.repo, answer, shown, self.facts)
        unusable = ([f"refused (not implicated): {', '.join(refused)}"] if refused else []) + skipped
        notes += unusable
        tried = {"implicated": implicated, "refused": refused}
        if not changes:
            self.say(f"repair {number}: no usable change")
            self.attempts.append("an answer with no usable change" + (f" ({'; '.join(unusable)})" if unusable else ""))
            message = "; ".join(["no usable change, so no run", *notes])
            self.rounds.append(_round(number, current, started, outcome="no-patch", message=message, **tried))
            return current, None

        if self.cancel is not None and self.cancel.is_set():  # while the model answered: write nothing
            self.say(f"repair {number}: cancelled, nothing written")
            message = "; ".join(["cancelled before the changes were written, so nothing was written", *notes])
            self.rounds.append(_round(number, current, started, outcome="error", message=message, **tried))
            return current, "cancelled"

        old = {name: _bytes_of(self.repo / name) for name in changes}
        tried |= {"changed": list(changes), "patch": _unified_diff(shown, old, changes)}
        try:
            return self._write_and_run(number, current, started, changes, old, notes, tried)
        except BaseException:  # an interrupt, a failing callback: the old texts back, then on up
            _restore(self.repo, old)
            raise

    def _write_and_run(
        self,
        number: int,
        current: _Run,
        started: float,
        changes: dict[str, str],
        old: dict[str, bytes | None],
        notes: list[str],
        tried: dict,
    ) -> tuple[_Run, str | None]:
        """Writes the changes, runs the tests and keeps or reverts them; the round is recorded
        before it returns. Whoever calls it restores `old` when it raises."""
        try:
            for name, text in changes.items():
                write_atomically(self.repo / name, text)
        except OSError as err:
            _restore(self.repo, old)
            message = f"the changes could not be written ({err.strerror or err}); the files are as they were"
            self.rounds.append(_round(number, current, started, outcome="error", message=message, **tried))
            return current, message

        run = self._smoke(number)
        still_passing = set(run.passed)
        lost = [test for test in current.passed if test not in still_passing]
        if run.result.status == "error" or lost:
            _restore(self.repo, old)
            if run.result.status == "error":
                why = f"the run could not be made ({run.result.message})"
            else:
                why = f"{lost[0]} passed before and no longer does{_more(lost)}"
            self.say(f"repair {number}: reverted, {why}")
            self.attempts.append(f"a change to {', '.join(changes)}, undone: {why}")
            message = "; ".join([f"reverted: {why}", *notes])
            self.rounds.append(_round(number, run, started, outcome="reverted", message=message, **tried))
            return current, run.result.message if run.result.status == "error" else None
        self.say(f"repair {number}: patched {', '.join(changes)}")
        self.attempts.clear()
        message = "; ".join([run.result.message, *notes])
        self.rounds.append(_round(number, run, started, outcome="patched", message=message, **tried))
        return run, None


def _round(number: int, run: _Run, started: float, *, outcome: str, message: str, **tried) -> RepairRound:
    """A round's record; its smoke fields are `run`'s, and `tried` is what its repair did."""
    return RepairRound(
        number=number,
        smoke_status=run.result.status,
        failures=run.result.failures,
        passed_tests=run.passed,
        outcome=outcome,
        message=message,
        seconds=round(time.monotonic() - started, 3),
        **tried,
    )


def repairs_used(rounds: list[RepairRound]) -> int:
    """The repair rounds in `rounds`, as the loop counts them against `max_rounds`: the rounds that
    asked the model (whatever came of it). Only they have implicated files: the model is never
    asked about a failure that implicates none, and a run alone implicates nothing."""
    return sum(1 for round_ in rounds if round_.number > 0 and round_.implicated)


# -- what a run says -------------------------------------------------------------------------------


def _passed_tests(output: str) -> list[str]:
    return [match["node"] for match in _PASSED_RE.finditer(_ANSI_RE.sub("", output))]


def _summary(run: _Run) -> str:
    result = run.result
    if result.status == "passed":
        return f"passed ({len(run.passed)} tests)"
    if result.status == "error":
        return f"could not be made: {result.message}"
    first = f" ({_where_and_class(result.failures[0])})" if result.failures else ""
    return f"{len(result.failures)} failed{first}, {len(run.passed)} passed"


def _where_and_class(failure: SmokeFailure) -> str:
    return f"{failure.error_class} at {_where(failure)}"


def _where(failure: SmokeFailure) -> str:
    if failure.location is not None:
        return f"{failure.location.file}:{failure.location.line + 1}"
    return failure.test or "no line of the repository"


def _last_failure(result: SmokeResult) -> str:
    """One line for a reason: the first failure's class, message and file:line."""
    if not result.failures:
        return result.message
    first = result.failures[0]
    message = shorten(first.message, REASON_MESSAGE_CHARS)  # one line, however many it had
    if first.exception and not message.startswith(first.exception):
        message = f"{first.exception}: {message}"
    return f"{_where_and_class(first)}: {message}{_more(result.failures)}"


def _more(items: list) -> str:
    return f" (+{len(items) - 1} more)" if len(items) > 1 else ""


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


# -- what no repair may fix -------------------------------------------------------------------------


def _unrepairable(repo: Path, failures: list[SmokeFailure]) -> str | None:
    """Why a human must act before any repair, when a failure is one no edit within the loop may
    fix (a setting the paper leaves open first, then a missing dependency); None otherwise."""
    for failure in failures:
        if (failure.exception or "").split(".")[-1] == OPEN_SETTING:
            message = _OPEN_SETTING_PREFIX_RE.sub("", " ".join(failure.message.split()), count=1)
            message = shorten(message, OPEN_SETTING_CHARS)
            return (
                "the paper leaves a setting open, which no repair may invent: "
                f"{OPEN_SETTING} at {_where(failure)}: {message}"
            )
    for failure in failures:
        if failure.error_class == "missing-dependency" and not _imports_own_module(repo, failure):
            message = shorten(failure.message, REASON_MESSAGE_CHARS).rstrip(".")
            if failure.exception and not message.startswith(failure.exception):
                message = f"{failure.exception}: {message}"
            fix = failure.suggestion or "Add the distribution that provides it to the workspace's requirements."
            return (
                "the sandbox image lacks a dependency, which no repair can add (the image is built offline from "
                f"the lock file): {failure.error_class} at {_where(failure)}: {message}. {fix} The image must then "
                "be rebuilt from a new lock: `paperlens reproduce` pins again on its next run."
            )
    return None


def _imports_own_module(repo: Path, failure: SmokeFailure) -> bool:
    """Whether the import that failed is of the repository's own code (a name its module lacks, a
    misspelt submodule): code to repair, not a dependency to install."""
    match = _IMPORTED_RE.search(failure.message)
    if match is None:
        return False
    top = (match["missing"] or match["from"]).split(".")[0]
    return any(
        candidate.exists() for candidate in (repo / f"{top}.py", repo / top / "__init__.py", repo / "src" / top)
    ) or ((repo / top).is_dir() and any((repo / top).glob("*.py")))


# -- what the model is shown ------------------------------------------------------------------------


def _implicated(repo: Path, failures: list[SmokeFailure]) -> tuple[list[str], list[str]]:
    """(the files a repair may change, the tests involved). The first are the repository's files the
    failures point at, each raising site first, then the frames outward, tests left out; when a
    failure's frames name only tests, the repository's modules those tests import. The second are
    the tests the failures point at, shown read-only."""
    files: list[str] = []
    tests: list[str] = []
    for failure in failures:
        named = [failure.location.file] if failure.location is not None else []
        named += [frame.file for frame in reversed(failure.frames) if frame.in_workspace]
        inside = list(dict.fromkeys(path for name in named if (path := _inside(repo, name)) is not None))
        code = [path for path in inside if not _is_test(path)]
        failing_tests = [path for path in inside if _is_test(path)]
        if not code:
            code = [module for test in failing_tests for module in _imported_modules(repo, test)]
        files += [path for path in code if path not in files]
        tests += [path for path in failing_tests if path not in tests]
    return files, tests


def _is_test(path: str) -> bool:
    """A test file or a test's support (`tests/`, `test_*.py`, `*_test.py`, `conftest.py`): the
    specification, never changed by a repair."""
    *folders, name = path.split("/")
    return (
        "tests" in folders
        or name == "conftest.py"
        or (name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")))
    )


def _imported_modules(repo: Path, test: str) -> list[str]:
    """The repository's modules (never tests) that the test file `test` imports, in its order."""
    try:
        tree = ast.parse((repo / test).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return []
    package = test.split("/")[:-1]  # where a relative import starts
    modules: list[str] = []
    imports = [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
    for node in sorted(imports, key=lambda node: (node.lineno, node.col_offset)):
        if isinstance(node, ast.Import):
            found = [_module_file(repo, alias.name.split(".")) for alias in node.names]
        else:
            if node.level:
                if node.level - 1 > len(package):
                    continue
                base = package[: len(package) - (node.level - 1)] + (node.module.split(".") if node.module else [])
            else:
                base = node.module.split(".") if node.module else []
            # `from pkg import mod` names a module; `from pkg.mod import name` a name in one.
            found = [
                _module_file(repo, [*base, alias.name]) or _module_file(repo, base)
                for alias in node.names
                if alias.name != "*"
            ] or [_module_file(repo, base)]
        for path in found:
            if path is not None and not _is_test(path) and path not in modules:
                modules.append(path)
    return modules


def _module_file(repo: Path, parts: list[str]) -> str | None:
    """The repository's file of the module `parts` (`pkg/mod.py`, `pkg/mod/__init__.py`, either
    also under `src/`), as a path relative to the repository; None when it has none."""
    if not parts or not all(part.isidentifier() for part in parts):
        return None
    stem = "/".join(parts)
    for root in ("", "src/"):
        for name in (f"{root}{stem}.py", f"{root}{stem}/__init__.py"):
            inside = _inside(repo, name)
            if inside is not None and (repo / inside).is_file():
                return inside
    return None


def _shown_files(repo: Path, names: list[str], budget: int) -> dict[str, str]:
    """The files' texts that fit `budget` characters, in order. A file longer than what is left
    is left out rather than cut: the model must answer with whole texts (and reads tests whole)."""
    shown: dict[str, str] = {}
    used = 0
    for name in names:
        path = repo / name
        try:
            if not path.is_file():
                continue
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        size = _block_size(name, text)
        if used + size > budget:
            continue
        shown[name] = text
        used += size
    return shown


# What a repair prompt holds besides the files.
_OVERHEAD_CHARS = len(SYSTEM_PROMPT) + ERROR_BUDGET_CHARS + HEADINGS_CHARS + ATTEMPTS_SHOWN * (ATTEMPT_CHARS + 3)


def _messages(
    failures: list[SmokeFailure], shown: dict[str, str], context: dict[str, str], attempts: list[str]
) -> list[dict[str, str]]:
    error = shorten(_error_text(failures), ERROR_BUDGET_CHARS, flatten=False)
    content = f"The tests (python3 -m pytest) fail:\n\n{error}\n\n"
    if attempts:
        tried = "\n".join(f"- {shorten(attempt, ATTEMPT_CHARS)}" for attempt in attempts)
        content += f"Earlier answers to this failure that did not help (do not repeat them):\n{tried}\n\n"
    content += f"The files you may change:\n\n{_file_blocks(shown)}"
    if context:
        content += f"\n\n{READ_ONLY_HEADING}:\n\n{_file_blocks(context)}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": content}]


def _block_size(name: str, text: str) -> int:
    return len(text) + len(_file_blocks({name: ""}))


def _file_blocks(files: dict[str, str]) -> str:
    return "\n\n".join(f"=== {name} ===\n{text.rstrip()}\n=== end of {name} ===" for name, text in files.items())


def _error_text(failures: list[SmokeFailure]) -> str:
    """The structured error: never the whole log, only what the failures say."""
    blocks = []
    for index, failure in enumerate(failures, 1):
        lines = [f"{index}. {failure.error_class}" + (f" in {failure.test}" if failure.test else "")]
        message = shorten(failure.message.strip(), MESSAGE_CHARS, flatten=False)
        if failure.exception and not message.startswith(failure.exception):
            message = f"{failure.exception}: {message}"
        lines.append(f"   {message}")
        for frame in failure.frames:
            code = f": {shorten(frame.code.strip(), CODE_CHARS)}" if frame.code else ""
            function = f" in {frame.function}" if frame.function else ""
            lines.append(f"   at {frame.file}:{frame.line + 1}{function}{code}")
        if failure.suggestion:
            lines.append(f"   suggested fix: {failure.suggestion}")
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


# -- what the model answers -------------------------------------------------------------------------


def _usable_changes(
    repo: Path, answer: RepairAnswer, shown: dict[str, str], facts: PaperFacts | None = None
) -> tuple[dict[str, str], list[str], list[str]]:
    """(the new texts to write by path, the refused paths as answered, why other texts were skipped)."""
    changes: dict[str, str] = {}
    refused: list[str] = []
    skipped: list[str] = []
    for change in answer.files:
        path = _inside(repo, change.path.strip().replace("\\", "/"))
        if path is None or path not in shown or _is_test(path):
            answered = shorten(change.path, ANSWER_PATH_CHARS)
            if answered not in refused:
                refused.append(answered)
            continue
        if path in changes:  # the first text given for a file counts
            continue
        text = code_of(FileText(content=change.content))
        if text.rstrip() == shown[path].rstrip():
            continue
        if path.endswith(".py") and (problem := _syntax_problem(text)) is not None:
            skipped.append(f"{path}: the new text does not parse ({problem})")
            continue
        if path.endswith(".py") and facts is not None and (divergence := _new_divergence(repo, path, shown[path], text, facts)):
            skipped.append(f"{path}: the new text diverges from the paper ({divergence})")
            continue
        changes[path] = text
    return changes, refused, skipped


def _new_divergence(repo: Path, path: str, old: str, new: str, facts: PaperFacts) -> str | None:
    """A divergence from the paper's stated values that `new` has and `old` did not (the checks of
    `paperlens check`); None when there is none."""

    def divergences(text: str) -> dict[str, str]:
        found = check_file(repo, facts, index_source(path, text))
        return {f"{f.setting}={f.code_value}": f.message for f in found if f.kind == "divergence" and f.status == "open"}

    before = divergences(old)
    added = [message for key, message in divergences(new).items() if key not in before]
    return shorten(added[0], MESSAGE_CHARS) if added else None


def _inside(repo: Path, name: str) -> str | None:
    """`name` as a normalised path relative to the repository, or None when it leaves it (absolute,
    `..`, or a symbolic link out)."""
    if not name or name.startswith("/"):
        return None
    normal = posixpath.normpath(name)
    if normal in (".", "..") or normal.startswith("../"):
        return None
    try:
        resolved = (repo / normal).resolve()
    except (OSError, RuntimeError, ValueError):  # a symbolic link loop, a null byte
        return None
    return normal if resolved.is_relative_to(repo) else None


def _syntax_problem(text: str) -> str | None:
    try:
        ast.parse(text)
    except SyntaxError as err:
        return f"line {err.lineno}: {err.msg}"
    except ValueError as err:  # e.g. a null byte
        return str(err)
    return None


# -- writing and undoing ----------------------------------------------------------------------------


def _bytes_of(path: Path) -> bytes | None:
    """The file's bytes, kept to restore it; None when it does not exist yet."""
    return path.read_bytes() if path.exists() else None


def _restore(repo: Path, old: dict[str, bytes | None]) -> None:
    """The kept bytes back, byte for byte; a file the repair created is removed."""
    for name, data in old.items():
        if data is None:
            (repo / name).unlink(missing_ok=True)
        else:
            write_atomically(repo / name, data)


def _unified_diff(shown: dict[str, str], old: dict[str, bytes | None], changes: dict[str, str]) -> str:
    lines: list[str] = []
    for name, text in changes.items():
        before = "/dev/null" if old[name] is None else f"a/{name}"
        diff = difflib.unified_diff(
            shown[name].splitlines(keepends=True), text.splitlines(keepends=True), fromfile=before, tofile=f"b/{name}"
        )
        lines.extend(line if line.endswith("\n") else line + "\n" for line in diff)
    return "".join(lines)

"""`paperlens reproduce PAPER --out DIR`: plan → scaffold → generate → pin → run and repair, with
progress and a record (`DIR/.paperlens/reproduce.json`) saved after every step and every generated
file, so an interrupted run goes on where it stopped: a step recorded as done is not redone.

Without an LLM endpoint the chain still runs: the modules stay the scaffold's stubs, and a failing
smoke run is handed to a human at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from ...schemas import SandboxSettings
from ...schemas.repo import (
    GeneratedFile,
    ReproduceRecord,
    StepName,
    StepRecord,
    TokenUsage,
)
from ..check import paper_facts
from ..errors import UserError
from ..files import write_atomically
from ..llm import LLMClient, LLMError, LLMUnavailable
from . import DEFAULT_MAX_ROUNDS
from .generate import GENERATED_ROLES, generate_modules
from .pin import pin
from .plan import Paper, plan_repository
from .repair import run_and_repair
from .skeleton import write_skeleton

RECORD_PATH = Path(".paperlens") / "reproduce.json"
STEPS: tuple[StepName, ...] = ("plan", "scaffold", "generate", "pin", "run")

Progress = Callable[[str], None]


def load_record(out: Path) -> ReproduceRecord | None:
    path = Path(out) / RECORD_PATH
    try:
        return ReproduceRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, ValidationError) as err:
        raise UserError(f"{path}: not a reproduce record paperlens can resume ({str(err).splitlines()[0]}); "
                        "move it away to start over") from None  # fmt: skip


def save_record(out: Path, record: ReproduceRecord) -> None:
    write_atomically(Path(out) / RECORD_PATH, record.model_dump_json(indent=2) + "\n")


def reproduce(
    paper: Paper,
    out: Path,
    *,
    client: LLMClient | None,
    sandbox: SandboxSettings,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    on_progress: Progress | None = None,
) -> ReproduceRecord:
    """Runs every step not yet done; returns (and has saved) the record. A step that runs makes the
    steps after it pending again (their input changed); a step that cannot run yet (generate with no
    LLM) stays pending and the chain goes on without it."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: not a folder")
    say = on_progress or (lambda _line: None)
    record = load_record(out) or ReproduceRecord(
        paper=paper.path, steps=[StepRecord(name=name) for name in STEPS], max_rounds=max_rounds
    )
    if record.paper != paper.path:
        raise UserError(f"{out} holds the reproduction of {record.paper}, not of {paper.path}: give another --out")
    record.max_rounds = max_rounds
    steps = {step.name: step for step in record.steps}
    if record.outcome == "needs-human":  # a human's turn is over: pin (requirements may have changed) and run again
        for name in ("pin", "run"):  # the repairs left are what the bound leaves
            steps[name].status = "pending" if steps[name].status == "done" else steps[name].status
        record.outcome, record.reason = "in-progress", ""
    usage_before = record.usage.model_copy()

    def account() -> None:
        if client is not None:
            record.usage = TokenUsage(
                prompt_tokens=usage_before.prompt_tokens + client.usage.prompt_tokens,
                completion_tokens=usage_before.completion_tokens + client.usage.completion_tokens,
                requests=usage_before.requests + client.usage.requests,
            )

    def save(line: str | None = None) -> None:
        account()
        save_record(out, record)
        if line is not None:
            say(line)

    def run_step(name: StepName, action: Callable[[], str]) -> bool:
        step = steps[name]
        if step.status == "done":
            say(f"{name}: done before, skipped")
            return True
        say(f"{name}…")
        started = time.monotonic()
        try:
            step.message, step.status = action(), "done"
            for later in STEPS[STEPS.index(name) + 1 :]:
                steps[later].status = "pending"
        except _NotNow as skipped:
            step.message, step.status = str(skipped), "pending"
        except (LLMError, UserError) as err:
            step.message, step.status = str(err), "failed"
            record.outcome, record.reason = "needs-human", f"the {name} step failed: {err}"
        step.seconds = round(step.seconds + time.monotonic() - started, 2)
        save(f"{name}: {step.message}")
        return step.status != "failed"

    def plan_step() -> str:
        record.plan = plan_repository(
            paper.spec, paper.readiness, paper.decisions, paper_path=paper.path, decisions_path=paper.decisions_path
        )
        blocking = sum(item.blocking for item in record.plan.open_items)
        return (f"{len(record.plan.files)} files, {len(record.plan.config)} config values with provenance, "
                f"{len(record.plan.open_items)} open items ({blocking} blocking)")  # fmt: skip

    def scaffold_step() -> str:
        written = write_skeleton(record.plan, paper.spec, paper.readiness, out, on_progress=say, keep_existing=True)
        return f"{len(written)} files written; files already there are kept as they are"

    def generate_step() -> str:
        if client is None:
            raise _NotNow("not yet: no LLM endpoint configured, the stubs stay (run again with one to generate)")
        done = {generated.path for generated in record.generated}
        files = [f.path for f in record.plan.files if f.role in GENERATED_ROLES]
        for number, path in enumerate(files, 1):
            if path in done:
                continue
            say(f"generate {number}/{len(files)}: {path}")
            try:
                record.generated += generate_modules(out, record.plan, paper.spec, client, decisions=paper.decisions, only=[path])
            except LLMUnavailable:
                raise  # nothing more can be asked now: the step fails and a rerun resumes here
            except LLMError as err:  # this file's answers were unusable (cut off, never valid): its stub stays
                record.generated.append(GeneratedFile(path=path, status="kept-scaffold", attempts=0, problems=[str(err)]))
            save()
        kept = sum(g.status == "generated" for g in record.generated)
        return f"{kept} of {len(files)} files generated, the others kept as stubs"

    def pin_step() -> str:
        record.pin = pin(out, sandbox)
        return record.pin.message or f"{len(record.pin.distributions)} distributions locked in {record.pin.lock_file}"

    def run_step_action() -> str:
        # Each round is saved as it ends (the loop appends to record.rounds and reports it).
        facts = paper_facts(paper.spec, paper.decisions)  # a repair never moves a stated value
        result = run_and_repair(out, client, sandbox, max_rounds=max_rounds, rounds=record.rounds, on_progress=save, facts=facts)
        record.rounds, record.image = result.rounds, result.image
        record.outcome, record.reason = result.outcome, result.reason
        return f"{result.outcome} after {len(result.rounds)} round(s)" + (f": {result.reason}" if result.reason else "")

    for name, action in (("plan", plan_step), ("scaffold", scaffold_step), ("generate", generate_step),
                         ("pin", pin_step), ("run", run_step_action)):  # fmt: skip
        if not run_step(name, action):
            return record
    record.still_open = _still_open(record)
    save_record(out, record)
    return record


class _NotNow(Exception):
    """A step that cannot run yet; it stays pending and the chain goes on."""


def _still_open(record: ReproduceRecord) -> list[str]:
    """What a passing smoke run does not say: stubs left and blocking open items."""
    notes = []
    stubs = [g.path for g in record.generated if g.status == "kept-scaffold"]
    if not record.generated and record.plan:
        stubs = [f.path for f in record.plan.files if f.role in GENERATED_ROLES]
    if stubs:
        notes.append(f"{len(stubs)} file(s) are still stubs: {', '.join(stubs)}")
    if record.plan and (blocking := [i for i in record.plan.open_items if i.blocking]):
        notes.append(f"{len(blocking)} blocking open item(s) must be settled before a faithful full run (see config.toml)")
    return notes

"""`paperlens reproduce`: the whole chain (plan → scaffold → generate → pin → run and repair) on the
bundled example, in the real sandbox — without an LLM, with an unreachable one (then resumed), with
recorded answers, and against the real local LLM (a tiny model: the chain must stay correct, bounded
and honest, whatever it writes)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from paperlens.pipeline.cli import main
from paperlens.pipeline.ingest import read_paper
from paperlens.pipeline.llm import LLMClient
from paperlens.pipeline.readiness import assess
from paperlens.pipeline.repo.generate import GENERATED_ROLES
from paperlens.pipeline.repo.plan import Paper, path_from_repository
from paperlens.pipeline.repo.repair import repairs_used
from paperlens.pipeline.sandbox import docker_run
from paperlens.pipeline.repo.reproduce import RECORD_PATH, load_record, reproduce
from paperlens.schemas import LLMSettings, SandboxSettings

from .conftest import EXAMPLE_PAPER, needs_docker
from .local_llm import closed_port_url, recorded

pytestmark = needs_docker


def _paper(out: Path) -> Paper:
    spec = read_paper(EXAMPLE_PAPER)
    return Paper(spec=spec, readiness=assess(spec), path=path_from_repository(EXAMPLE_PAPER, out))


def _module_texts(out: Path, record) -> dict[str, str]:
    return {f.path: (out / f.path).read_text() for f in record.plan.files if f.role in GENERATED_ROLES}


def test_without_an_llm_the_chain_scaffolds_pins_and_passes_and_says_what_is_left(tmp_path, capsys):
    out = tmp_path / "repro"
    prewarm = docker_run.PREWARM
    assert main(["reproduce", str(EXAMPLE_PAPER), "--out", str(out), "--no-llm"]) == 0
    assert docker_run.PREWARM == prewarm  # the command leaves the process's sandbox as it found it
    captured = capsys.readouterr()
    record = load_record(out)
    # Generate waits for an LLM (pending, and a later run with one does it); the rest is done.
    statuses = {s.name: s.status for s in record.steps}
    assert statuses == {"plan": "done", "scaffold": "done", "generate": "pending", "pin": "done", "run": "done"}
    assert record.outcome == "passed" and len(record.rounds) == 1 and record.rounds[0].smoke_status == "passed"
    assert record.still_open[0].startswith("5 file(s) are still stubs") and "3 blocking open item(s)" in record.still_open[1]
    assert record.pin is not None and (out / record.pin.lock_file).read_text().count("==") >= 2  # numpy, pytest
    assert record.image and record.usage.requests == 0
    for line in ("plan…", "scaffold 1/", "pin:", "run 0:"):
        assert line in captured.err, line
    assert "passed" in captured.out.splitlines()[0]
    # Run again: every step is done, nothing is redone or rewritten.
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file() and p.name != "reproduce.json"}
    assert main(["reproduce", str(EXAMPLE_PAPER), "--out", str(out), "--no-llm"]) == 0
    assert "plan: done before, skipped" in capsys.readouterr().err
    assert {p: p.stat().st_mtime_ns for p in before} == before
    assert load_record(out).rounds == record.rounds


def test_an_unreachable_llm_stops_at_generate_and_a_rerun_resumes_there(tmp_path):
    out = tmp_path / "repro"
    unreachable = LLMClient(LLMSettings(base_url=closed_port_url(), model="m", max_retries=0, timeout_seconds=5))
    first = reproduce(_paper(out), out, client=unreachable, sandbox=SandboxSettings(), max_rounds=1)
    statuses = {s.name: s.status for s in first.steps}
    assert statuses == {"plan": "done", "scaffold": "done", "generate": "failed", "pin": "pending", "run": "pending"}
    assert first.outcome == "needs-human" and "generate step failed" in first.reason and "cannot reach" in first.reason
    assert json.loads((out / RECORD_PATH).read_text())["outcome"] == "needs-human"  # saved as it stopped
    scaffolded = _module_texts(out, first)

    resumed = reproduce(_paper(out), out, client=None, sandbox=SandboxSettings(), max_rounds=1)
    assert [s.status for s in resumed.steps] == ["done", "done", "pending", "done", "done"]
    assert resumed.outcome == "passed" and _module_texts(out, resumed) == scaffolded


def test_recorded_answers_are_checked_and_refused_modules_stay_stubs(tmp_path):
    """Every answer is a file that does not parse: each module is asked twice, refused, and its
    stub stays; the chain still runs, counts the tokens and passes the smoke test."""
    out = tmp_path / "repro"
    sent: list = []
    client = LLMClient(
        LLMSettings(base_url="http://recorded.invalid/v1", model="recorded", cache=False),
        http_client=recorded(json.dumps({"content": "def broken(:\n"}), sent=sent),
    )
    record = reproduce(_paper(out), out, client=client, sandbox=SandboxSettings(), max_rounds=2)
    modules = [f.path for f in record.plan.files if f.role in GENERATED_ROLES]
    assert [g.path for g in record.generated] == modules
    asked = [g for g in record.generated if g.attempts]
    assert asked and all(g.status == "kept-scaffold" and g.attempts == 2 for g in asked)
    assert all(any("line 1" in problem for problem in g.problems) for g in asked)
    for path in modules:
        ast.parse((out / path).read_text())  # never left broken on disk
    assert record.usage.requests == len(sent) == 2 * len(asked)
    assert record.usage.prompt_tokens == 11 * len(sent)  # the recorded completions' own counts
    assert record.outcome == "passed" and record.rounds[-1].smoke_status == "passed"


@pytest.mark.usefixtures("local_llm")
def test_the_chain_against_the_real_local_llm_is_bounded_and_honest(tmp_path, local_llm):
    out = tmp_path / "repro"
    # 1536 tokens: room to restate the example's shorter modules (the longest is not asked: it would not fit).
    client = LLMClient(local_llm.settings(max_output_tokens=1536, timeout_seconds=300, cache=False))
    record = reproduce(_paper(out), out, client=client, sandbox=SandboxSettings(), max_rounds=1)
    assert all(s.status in ("done", "failed") for s in record.steps)
    modules = [f.path for f in record.plan.files if f.role in GENERATED_ROLES]
    if record.steps[2].status == "done":
        assert [g.path for g in record.generated] == modules
        assert all(g.status == "generated" or g.problems for g in record.generated)  # a stub kept says why
    assert record.usage.requests > 0  # the model was really asked
    for path in modules:
        ast.parse((out / path).read_text())  # what is on disk parses, generated or not
    assert record.usage.requests == client.usage.requests and record.usage.completion_tokens == client.usage.completion_tokens
    assert repairs_used(record.rounds) <= record.max_rounds
    if record.outcome == "passed":
        assert record.rounds[-1].smoke_status == "passed"
    else:
        assert record.outcome == "needs-human" and record.reason
    saved = load_record(out)
    assert saved.rounds == record.rounds and saved.generated == record.generated and saved.outcome == record.outcome


def test_a_later_run_with_an_llm_generates_and_runs_again_keeping_the_users_edits(tmp_path):
    out = tmp_path / "repro"
    assert main(["scaffold", str(EXAMPLE_PAPER), "--out", str(out)]) == 0
    config = out / "config.toml"
    config.write_text(config.read_text() + "\n# settled by hand\n")  # as the scaffold's README invites
    first = reproduce(_paper(out), out, client=None, sandbox=SandboxSettings(), max_rounds=1)
    assert config.read_text().endswith("# settled by hand\n")  # the user's file is kept, never overwritten
    assert {s.name: s.status for s in first.steps}["generate"] == "pending"
    client = LLMClient(
        LLMSettings(base_url="http://recorded.invalid/v1", model="recorded", cache=False),
        http_client=recorded(json.dumps({"content": "def broken(:\n"})),
    )
    second = reproduce(_paper(out), out, client=client, sandbox=SandboxSettings(), max_rounds=1)
    assert [s.status for s in second.steps] == ["done"] * 5
    assert second.generated and second.usage.requests > 0
    assert len(second.rounds) == 2 and second.rounds[1].number == 1  # the run after generating, numbered on


def test_another_paper_into_the_same_folder_is_refused(tmp_path, capsys):
    out = tmp_path / "repro"
    assert main(["reproduce", str(EXAMPLE_PAPER), "--out", str(out), "--no-llm"]) == 0
    other = tmp_path / "other.md"
    other.write_text("# Other\n\n## 1 Method\n\nWe use a learning rate of 0.1.\n")
    assert main(["reproduce", str(other), "--out", str(out), "--no-llm"]) == 2
    assert "holds the reproduction of" in capsys.readouterr().err


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["reproduce", "{paper}", "--out", "{file}", "--no-llm"], "not a folder"),
        (["scaffold", "{paper}", "--out", "{file}/sub"], "not a folder"),
        (["reproduce", "{paper}", "--out", "{tmp}/r", "--no-llm", "--timeout", "-5"], "--timeout"),
        (["reproduce", "{paper}", "--out", "{tmp}/r", "--max-rounds", "-1"], "--max-rounds"),
        (["align", "{tmp}/runs", "--reported", "{tmp}/reported.yaml", "--out", "{file}"], "not a folder"),
        (["align", "{tmp}/runs", "--reported", "{tmp}/reported.yaml", "--rule", "within:2"], "absolute:"),
    ],
)
def test_bad_input_is_a_clear_message_and_exit_status_2(tmp_path, capsys, arguments, message):
    (tmp_path / "afile").write_text("not a folder\n")
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "metrics.json").write_text(json.dumps({"seed": 0, "metrics": {"acc": 0.9}}))
    (tmp_path / "reported.yaml").write_text("metrics:\n  - {name: acc, value: 0.9}\n")
    filled = [a.format(paper=EXAMPLE_PAPER, file=tmp_path / "afile", tmp=tmp_path) for a in arguments]
    assert main(filled) == 2
    err = capsys.readouterr().err
    assert message in err and "internal error" not in err
    assert (tmp_path / "afile").read_text() == "not a folder\n"

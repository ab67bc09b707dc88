"""Run and repair against the real Docker engine and sandbox image: a tiny package whose `forward`
multiplies by weights stored (outputs, inputs) without transposing them. The LLM's answers are
recorded (a fake server replays them), except in the last test, which asks the real local model."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import httpx2
import pytest

from paperlens.pipeline.llm import LLMClient
from paperlens.pipeline.repo.repair import run_and_repair
from paperlens.pipeline.sandbox import docker_run
from paperlens.schemas import LLMSettings
from paperlens.schemas.smoke import DEFAULT_SANDBOX_IMAGE, SandboxSettings

from .local_llm import MODEL_NAME, recorded, request_body

MODEL_PY = '''\
"""A linear layer whose weights are stored (outputs, inputs)."""

import numpy as np


def init_weights(n_in, n_out):
    return np.ones((n_out, n_in))


def forward(x, w):
    return x @ w
'''
FIXED_MODEL_PY = MODEL_PY.replace("return x @ w\n", "return x @ w.T\n")
# Still the shape bug, written another way: answers that change the file but never fix it.
DOT_MODEL_PY = MODEL_PY.replace("return x @ w\n", "return np.dot(x, w)\n")
MATMUL_MODEL_PY = MODEL_PY.replace("return x @ w\n", "return np.matmul(x, w)\n")
# Makes `forward` pass by storing the weights (inputs, outputs), which breaks the passing weights test.
TRANSPOSED_WEIGHTS_MODEL_PY = MODEL_PY.replace("np.ones((n_out, n_in))", "np.ones((n_in, n_out))")

TEST_MODEL_PY = """\
import numpy as np

from pkg.model import forward, init_weights


def test_weights_are_stored_outputs_by_inputs():
    assert init_weights(3, 2).shape == (2, 3)


def test_forward_maps_inputs_to_outputs():
    assert forward(np.ones((4, 3)), init_weights(3, 2)).shape == (4, 2)
"""
UTIL_PY = """\
def scale(values, factor):
    return [v * factor for v in values]
"""
TEST_UTIL_PY = """\
from pkg.util import scale


def test_scale():
    assert scale([1, 2], 3) == [3, 6]
"""

WEIGHTS_TEST = "tests/test_model.py::test_weights_are_stored_outputs_by_inputs"
FORWARD_TEST = "tests/test_model.py::test_forward_maps_inputs_to_outputs"
UTIL_TEST = "tests/test_util.py::test_scale"
SETTINGS = SandboxSettings(timeout_seconds=60)


def _engine_problem() -> str | None:
    try:
        docker_run.client().api.inspect_image(DEFAULT_SANDBOX_IMAGE)
    except Exception as err:  # noqa: BLE001 - no engine, or no base image
        return str(err)
    return None


@pytest.fixture(scope="module")
def docker_engine() -> None:
    """The README's test command sets the engine up; without it these tests fail, never skip."""
    if (problem := _engine_problem()) is not None:
        pytest.fail(f"no Docker engine or base image (run scripts/sandbox-engine.sh): {problem}")


pytestmark = pytest.mark.usefixtures("docker_engine")


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    files = {
        "pkg/__init__.py": "",
        "pkg/model.py": MODEL_PY,
        "pkg/util.py": UTIL_PY,
        "tests/test_model.py": TEST_MODEL_PY,
        "tests/test_util.py": TEST_UTIL_PY,
        "pytest.ini": "[pytest]\npythonpath = .\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _readable_by_others(root)
    return root


def _readable_by_others(root: Path) -> None:
    """The sandbox's user (nobody) reads the repository through the bind mount."""
    root.chmod(0o755)
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def _answer(*files: tuple[str, str]) -> str:
    return json.dumps({"files": [{"path": path, "content": content} for path, content in files]})


def _client(*answers: str | httpx2.Response, sent: list | None = None) -> LLMClient:
    settings = LLMSettings(base_url="http://recorded.invalid/v1", model=MODEL_NAME, max_retries=0)
    return LLMClient(settings, http_client=recorded(*answers, sent=sent))


def _repair(repo: Path, client: LLMClient | None, *, max_rounds: int, settings: SandboxSettings = SETTINGS, **kwargs):
    progress: list[str] = []
    outcome = run_and_repair(repo, client, settings, max_rounds=max_rounds, on_progress=progress.append, **kwargs)
    return outcome, progress


def _runs(progress: list[str]) -> int:
    return sum(line.startswith("run ") for line in progress)


# --------------------------------------------------------------------------------------------------


def test_a_repair_of_the_failing_line_passes_and_changes_only_that_file(repo):
    before = _snapshot(repo)
    sent: list = []
    # A configured command is replaced: this one would fail every run with no test run at all.
    settings = SETTINGS.model_copy(update={"command": ["python3", "-c", "raise SystemExit(3)"]})

    outcome, progress = _repair(
        repo, _client(_answer(("pkg/model.py", FIXED_MODEL_PY)), sent=sent), max_rounds=3, settings=settings
    )

    assert outcome.outcome == "passed", outcome.reason
    assert outcome.reason == "the smoke test passed after 1 repair round"
    assert outcome.image == DEFAULT_SANDBOX_IMAGE
    first, repair = outcome.rounds
    assert (first.number, first.smoke_status, first.outcome) == (0, "failed", "failed")
    [failure] = first.failures
    assert (failure.error_class, failure.location.file) == ("shape-mismatch", "pkg/model.py")
    assert failure.test == FORWARD_TEST
    assert first.passed_tests == [WEIGHTS_TEST, UTIL_TEST]
    assert (repair.number, repair.outcome, repair.smoke_status) == (1, "patched", "passed")
    assert repair.implicated == ["pkg/model.py", "tests/test_model.py"]
    assert repair.changed == ["pkg/model.py"] and repair.refused == []
    assert "-    return x @ w\n+    return x @ w.T\n" in repair.patch
    assert repair.patch.startswith("--- a/pkg/model.py\n+++ b/pkg/model.py\n")
    assert sorted(repair.passed_tests) == sorted([WEIGHTS_TEST, FORWARD_TEST, UTIL_TEST])
    assert all(round_.seconds > 0 for round_ in outcome.rounds)

    after = _snapshot(repo)
    assert after.pop("pkg/model.py") == FIXED_MODEL_PY.encode()
    assert after == {name: data for name, data in before.items() if name != "pkg/model.py"}
    assert (repo / "pkg/model.py").stat().st_mode & 0o777 == 0o644  # still readable by the sandbox's user

    assert progress == [
        "run 0: 1 failed (shape-mismatch at pkg/model.py:11), 2 passed",
        "repair 1: asking the model about pkg/model.py, tests/test_model.py",
        "run 1: passed (3 tests)",
        "repair 1: patched pkg/model.py",
    ]
    [request] = sent
    prompt = request_body(request)["messages"][-1]["content"]
    assert "shape-mismatch in " + FORWARD_TEST in prompt
    assert "at pkg/model.py:11 in forward: return x @ w" in prompt
    assert MODEL_PY.strip() in prompt and TEST_MODEL_PY.strip() in prompt
    assert UTIL_PY.strip() not in prompt  # not implicated
    assert "short test summary info" not in prompt and "PASSED" not in prompt  # not the log


def test_files_outside_the_implicated_ones_are_refused_and_never_written(repo, tmp_path):
    before = _snapshot(repo)
    answer = _answer(
        ("pkg/model.py", FIXED_MODEL_PY),
        ("pkg/util.py", "def scale(values, factor):\n    return []\n"),
        ("../outside.py", "print('escaped')\n"),
        (str(tmp_path / "absolute.py"), "print('escaped')\n"),
    )

    outcome, _progress = _repair(repo, _client(answer), max_rounds=1)

    assert outcome.outcome == "passed", outcome.reason
    repair = outcome.rounds[1]
    assert repair.changed == ["pkg/model.py"]
    assert repair.refused == ["pkg/util.py", "../outside.py", str(tmp_path / "absolute.py")]
    assert "pkg/util.py" not in repair.patch
    assert "refused (not implicated): pkg/util.py" in repair.message
    assert (repo / "pkg/util.py").read_bytes() == before["pkg/util.py"]
    assert not (tmp_path / "outside.py").exists() and not (tmp_path / "absolute.py").exists()
    assert set(_snapshot(repo)) == set(before)


def test_a_change_that_breaks_a_passing_test_is_reverted_byte_for_byte(repo):
    (repo / "pkg/model.py").write_bytes(MODEL_PY.replace("\n", "\r\n").encode())  # restored exactly, line ends too
    before = _snapshot(repo)
    after_the_revert: list[dict[str, bytes]] = []

    def progress(line: str) -> None:
        if line.startswith("repair 1: reverted"):
            after_the_revert.append(_snapshot(repo))

    sent: list = []
    client = _client(
        _answer(("pkg/model.py", TRANSPOSED_WEIGHTS_MODEL_PY)), _answer(("pkg/model.py", FIXED_MODEL_PY)), sent=sent
    )

    outcome = run_and_repair(repo, client, SETTINGS, max_rounds=2, on_progress=progress)

    assert after_the_revert == [before]
    reverted, patched = outcome.rounds[1:]
    assert (reverted.outcome, reverted.smoke_status, reverted.changed) == ("reverted", "failed", ["pkg/model.py"])
    assert "+    return np.ones((n_in, n_out))" in reverted.patch  # what was tried stays on record
    assert [failure.test for failure in reverted.failures] == [WEIGHTS_TEST]
    assert FORWARD_TEST in reverted.passed_tests and WEIGHTS_TEST not in reverted.passed_tests
    why = f"{WEIGHTS_TEST} passed before and no longer does"
    assert reverted.message.startswith(f"reverted: {why}")
    # The next round repairs the restored files, told what was undone (the same prompt would get the same answer).
    second_prompt = request_body(sent[1])["messages"][-1]["content"]
    assert f"- a change to pkg/model.py, undone: {why}" in second_prompt
    assert "return np.ones((n_out, n_in))" in second_prompt
    assert (patched.outcome, patched.smoke_status) == ("patched", "passed")
    assert outcome.outcome == "passed"


def test_the_bound_stops_the_loop_and_names_the_last_failure(repo):
    sent: list = []
    client = _client(_answer(("pkg/model.py", DOT_MODEL_PY)), _answer(("pkg/model.py", MATMUL_MODEL_PY)), sent=sent)

    outcome, progress = _repair(repo, client, max_rounds=2)

    assert outcome.outcome == "needs-human"
    assert _runs(progress) == 3 and len(sent) == 2
    assert [round_.number for round_ in outcome.rounds] == [0, 1, 2]
    assert [round_.outcome for round_ in outcome.rounds] == ["failed", "patched", "patched"]
    for round_ in outcome.rounds:
        assert round_.smoke_status == "failed"
        assert [failure.error_class for failure in round_.failures] == ["shape-mismatch"]
    assert "np.matmul(x, w)" in outcome.rounds[2].patch
    assert outcome.reason.startswith("the repair bound of 2 rounds (max_rounds) is reached (2 used)")
    assert "shape-mismatch at pkg/model.py:11: ValueError: matmul:" in outcome.reason
    assert (repo / "pkg/model.py").read_text() == MATMUL_MODEL_PY  # a patch that broke nothing stays


def test_without_an_llm_one_run_and_a_human_is_needed(repo):
    before = _snapshot(repo)

    outcome, progress = _repair(repo, None, max_rounds=3)

    assert outcome.outcome == "needs-human"
    assert outcome.reason.startswith(
        "no LLM is configured to repair it; the smoke test fails: shape-mismatch at pkg/model.py:11: ValueError: matmul"
    )
    assert _runs(progress) == 1 and len(outcome.rounds) == 1
    assert _snapshot(repo) == before


def test_a_resumed_loop_numbers_on_and_counts_the_recorded_repairs(repo):
    first, _ = _repair(repo, _client(_answer(("pkg/model.py", DOT_MODEL_PY))), max_rounds=1)
    assert [round_.number for round_ in first.rounds] == [0, 1] and first.outcome == "needs-human"
    rounds = list(first.rounds)
    sent: list = []

    resumed, progress = _repair(
        repo, _client(_answer(("pkg/model.py", MATMUL_MODEL_PY)), sent=sent), max_rounds=2, rounds=rounds
    )

    assert resumed.rounds is rounds  # appended in place, so a caller may save it as it grows
    assert [round_.number for round_ in rounds] == [0, 1, 2, 3]
    rerun, repair = rounds[2:]
    assert (rerun.outcome, rerun.implicated, rerun.smoke_status) == ("failed", [], "failed")
    assert rerun.message.startswith("a rerun of the files as they are")
    assert repair.outcome == "patched" and "np.matmul(x, w)" in repair.patch
    assert len(sent) == 1 and _runs(progress) == 2  # one repair left of the two
    assert resumed.reason.startswith("the repair bound of 2 rounds (max_rounds) is reached (2 used)")


def test_a_resumed_loop_reruns_first_and_sees_a_fix_made_by_hand(repo):
    first, _ = _repair(repo, None, max_rounds=2)
    (repo / "pkg/model.py").write_text(FIXED_MODEL_PY)
    sent: list = []

    resumed, progress = _repair(repo, _client(_answer(), sent=sent), max_rounds=2, rounds=first.rounds)

    assert resumed.outcome == "passed" and resumed.reason == "the smoke test passed with no repair"
    assert [(round_.number, round_.outcome) for round_ in resumed.rounds] == [(0, "failed"), (1, "passed")]
    assert sent == [] and _runs(progress) == 1


def test_an_llm_error_ends_the_loop_with_its_message_and_the_round_recorded(repo):
    before = _snapshot(repo)
    client = _client(httpx2.Response(401, json={"error": {"message": "bad key"}}))

    outcome, _progress = _repair(repo, client, max_rounds=3)

    assert outcome.outcome == "needs-human"
    assert "rejected the API key (HTTP 401)" in outcome.reason
    repair = outcome.rounds[-1]
    assert (repair.number, repair.outcome, repair.message) == (1, "error", outcome.reason)
    assert repair.implicated == ["pkg/model.py", "tests/test_model.py"] and repair.changed == []
    assert repair.smoke_status == "failed" and repair.failures == outcome.rounds[0].failures  # the last run stands
    assert _snapshot(repo) == before


def test_a_run_that_cannot_be_made_needs_a_human_and_asks_no_model(repo):
    sent: list = []
    settings = SETTINGS.model_copy(update={"image": "paperlens-sandbox:no-such-tag"})

    outcome, _progress = _repair(repo, _client(_answer(), sent=sent), max_rounds=3, settings=settings)

    assert outcome.outcome == "needs-human" and outcome.image is None
    assert "paperlens-sandbox:no-such-tag" in outcome.reason and "is not on this machine" in outcome.reason
    [only] = outcome.rounds
    assert (only.smoke_status, only.outcome) == ("error", "error")
    assert sent == []


def test_a_failure_that_points_at_no_file_is_left_to_a_human(repo):
    (repo / "pytest.ini").write_text("[pytest]\npythonpath = .\naddopts = --no-such-option\n")
    sent: list = []

    outcome, _progress = _repair(repo, _client(_answer(), sent=sent), max_rounds=3)

    assert outcome.outcome == "needs-human" and sent == []
    assert outcome.reason.startswith("the failure points at no file, so nothing can be repaired: other at ")
    assert "--no-such-option" in outcome.reason
    assert len(outcome.rounds) == 1

def test_a_missing_dependency_implicates_the_requirements_which_a_repair_may_create(repo):
    (repo / "pkg/util.py").write_text("import yaml\n\n" + UTIL_PY)
    answer = _answer(("requirements.txt", "PyYAML==6.0.1\n"))

    outcome, _progress = _repair(repo, _client(answer), max_rounds=1)

    first, repair = outcome.rounds
    assert first.failures[0].error_class == "missing-dependency"
    assert "requirements.txt" in repair.implicated and "pkg/util.py" in repair.implicated
    assert repair.changed == ["requirements.txt"]
    assert repair.patch.startswith("--- /dev/null\n+++ b/requirements.txt\n")
    assert (repo / "requirements.txt").read_text() == "PyYAML==6.0.1\n"
    assert (repo / "requirements.txt").stat().st_mode & 0o777 == 0o644
    assert outcome.outcome == "needs-human"  # the image still lacks it: requirements alone install nothing here


def test_files_too_long_for_the_prompt_are_left_out_and_unparsable_texts_skipped(repo):
    padding = "".join(f"# padding line {index:04d}, so that the file is too long to show\n" for index in range(120))
    long_model = MODEL_PY + padding
    (repo / "pkg/model.py").write_text(long_model)
    before = _snapshot(repo)
    sent: list = []
    answer = _answer(("pkg/model.py", FIXED_MODEL_PY), ("tests/test_model.py", "def test_(:\n"))

    outcome, progress = _repair(repo, _client(answer, sent=sent), max_rounds=1)

    repair = outcome.rounds[1]
    assert repair.implicated == ["tests/test_model.py"]
    assert (repair.outcome, repair.refused, repair.changed, repair.patch) == ("no-patch", ["pkg/model.py"], [], "")
    assert "left out of the prompt, too long: pkg/model.py" in repair.message
    assert "tests/test_model.py: the new text does not parse (line 1" in repair.message
    assert _runs(progress) == 1  # nothing changed, so nothing to run
    assert "padding line" not in request_body(sent[0])["messages"][-1]["content"]
    assert _snapshot(repo) == before


def test_a_cancel_while_the_model_answers_undoes_the_written_changes(repo):
    before = _snapshot(repo)
    cancel = threading.Event()

    def progress(line: str) -> None:
        if line.startswith("repair 1: asking"):
            cancel.set()  # as a user would, while the model is being asked

    client = _client(_answer(("pkg/model.py", FIXED_MODEL_PY)))

    outcome = run_and_repair(repo, client, SETTINGS, max_rounds=3, on_progress=progress, cancel=cancel)

    assert (outcome.outcome, outcome.reason) == ("needs-human", "cancelled")
    repair = outcome.rounds[-1]
    assert (repair.number, repair.outcome, repair.smoke_status) == (1, "reverted", "error")
    assert repair.changed == ["pkg/model.py"] and "return x @ w.T" in repair.patch
    assert _snapshot(repo) == before

def test_against_the_real_local_model_the_loop_stays_bounded_and_in_bounds(repo, local_llm):
    """SmolLM2-135M writes poor code, or none (it tends to ramble inside a string until the token
    bound, which ends the loop with a clear LLMError): only the loop's rules are checked."""
    before = _snapshot(repo)
    max_output = 128  # bounded: CI machines have two CPUs, often busy
    # A busy machine makes the tiny model slow: a generous timeout, and a timeout is tolerated below.
    client = LLMClient(local_llm.settings(max_output_tokens=max_output, max_retries=0, timeout_seconds=300))

    outcome, progress = _repair(repo, client, max_rounds=2)

    rounds = outcome.rounds
    assert 2 <= len(rounds) <= 3 and [round_.number for round_ in rounds] == list(range(len(rounds)))
    assert _runs(progress) <= 3
    assert rounds[0].smoke_status == "failed" and rounds[0].failures[0].error_class == "shape-mismatch"
    assert rounds[1].implicated == ["pkg/model.py", "tests/test_model.py"]
    for round_ in rounds:
        assert set(round_.changed) <= set(round_.implicated)
        assert round_.smoke_status != "failed" or round_.failures
        assert "refused the request" not in round_.message  # the prompt fit the 4096-token context
    after = _snapshot(repo)
    touched = {name for name in set(before) | set(after) if before.get(name) != after.get(name)}
    assert touched <= {name for round_ in rounds for name in round_.implicated}
    usage = client.usage
    assert 1 <= usage.requests <= 2 and usage.completion_tokens <= max_output * usage.requests
    if usage.prompt_tokens:  # the server took every prompt within its context
        assert usage.prompt_tokens / usage.requests <= 4096 - max_output
    else:
        assert rounds[-1].outcome == "error" and "did not answer within" in rounds[-1].message
    if outcome.outcome == "passed":
        assert rounds[-1].smoke_status == "passed"
    else:
        assert outcome.outcome == "needs-human" and outcome.reason
        assert rounds[-1].smoke_status != "passed"



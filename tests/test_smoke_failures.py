"""Smoke-run failures: real failing programs (tests/smoke_cases) run here and their output read back
to the workspace file and line, classified; torch-only messages on recorded outputs."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from paperlens.pipeline.sandbox.failures import classify, failures_of
from paperlens.schemas.smoke import SmokeFailure

CASES_DIR = Path(__file__).parent / "smoke_cases"
CASES = sorted(path.name for path in CASES_DIR.iterdir() if (path / "case.toml").is_file())
MARKER = "# <- here"
CONTAINER = "/workspace"


def _marker(workspace: Path) -> tuple[str, int] | None:
    """(file, 0-based line) of the one `# <- here` of a case."""
    found = [
        (path.relative_to(workspace).as_posix(), number)
        for path in sorted(workspace.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines())
        if MARKER in line
    ]
    assert len(found) <= 1, found
    return found[0] if found else None


class Run:
    def __init__(self, name: str, workspace: Path, spec: dict, output: str, exit_code: int, timed_out: bool):
        self.name, self.workspace, self.spec = name, workspace, spec
        self.output, self.exit_code, self.timed_out = output, exit_code, timed_out

    def failures(self, output: str | None = None, workspace_in_run: str | None = None) -> list[SmokeFailure]:
        return failures_of(
            self.output if output is None else output,
            self.workspace,
            str(self.workspace) if workspace_in_run is None else workspace_in_run,
            exit_code=self.exit_code,
            timed_out=self.timed_out,
            oom_killed=False,
        )


_RUNS: dict[str, Run] = {}


def _run(name: str, tmp_path_factory) -> Run:
    """Runs a case once per session, in a fresh copy, as the sandbox would: combined output,
    no bytecode or pytest cache, stopped at the case's time limit (SIGABRT, so that Python's
    faulthandler shows where the run was, then SIGKILL)."""
    if name in _RUNS:
        return _RUNS[name]
    workspace = tmp_path_factory.mktemp(name) / "workspace"
    shutil.copytree(CASES_DIR / name, workspace, ignore=shutil.ignore_patterns("case.toml", "__pycache__"))
    spec = tomllib.loads((CASES_DIR / name / "case.toml").read_text(encoding="utf-8"))
    command = [sys.executable if part == "python" else part for part in spec["command"]]
    env = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_ADDOPTS": "-p no:cacheprovider",
        "PYTHONFAULTHANDLER": "1",
    }
    env.pop("PYTHONPATH", None)
    process = subprocess.Popen(
        command, cwd=workspace, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    timed_out = False
    try:
        output, _ = process.communicate(timeout=spec.get("timeout", 60))
    except subprocess.TimeoutExpired:
        timed_out = True
        process.send_signal(signal.SIGABRT)
        try:
            output, _ = process.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
    _RUNS[name] = Run(name, workspace, spec, output, process.returncode, timed_out)
    return _RUNS[name]


def test_the_corpus_covers_every_class():
    classes = {tomllib.loads((CASES_DIR / name / "case.toml").read_text())["error_class"] for name in CASES}
    assert classes == {
        "missing-dependency",
        "shape-mismatch",
        "oom",
        "schema-mismatch",
        "label-range",
        "path",
        "timeout",
        "syntax-error",
        "other",
    }
    assert any((CASES_DIR / name / "tests").is_dir() for name in CASES)  # one pytest run


@pytest.mark.parametrize("name", CASES)
def test_a_real_failure_is_classified_at_its_line(name, tmp_path_factory):
    run = _run(name, tmp_path_factory)
    assert run.exit_code != 0, run.output
    assert run.timed_out == ("timeout" in run.spec), run.output
    [failure] = run.failures()
    assert failure.error_class == run.spec["error_class"], run.output
    assert failure.exception == run.spec.get("exception"), run.output
    expected = _marker(run.workspace)
    assert expected is not None
    assert failure.location is not None, run.output
    assert (failure.location.file, failure.location.line) == expected, run.output
    if "suggestion" in run.spec:
        assert failure.suggestion is not None and run.spec["suggestion"] in failure.suggestion
    assert failure.test == run.spec.get("test")
    # The frames that matter: few, outermost first, the failing line among them.
    assert 1 <= len(failure.frames) <= 5
    assert any((frame.file, frame.line) == expected and frame.in_workspace for frame in failure.frames)
    if run.spec["error_class"] != "timeout":
        assert failure.message.strip(), run.output


@pytest.mark.parametrize("name", CASES)
def test_container_paths_map_to_the_same_workspace_lines(name, tmp_path_factory):
    """The same output as a container prints it (the workspace at /workspace) maps to the same lines."""
    run = _run(name, tmp_path_factory)
    host = str(run.workspace)
    in_container = run.output.replace(host, CONTAINER)
    assert host not in in_container
    [local] = run.failures()
    [mapped] = run.failures(in_container, CONTAINER)
    assert mapped.location == local.location
    assert mapped.error_class == local.error_class
    assert [(f.file, f.line, f.in_workspace) for f in mapped.frames if f.in_workspace] == [
        (f.file, f.line, f.in_workspace) for f in local.frames if f.in_workspace
    ]
    assert all(not frame.file.startswith(CONTAINER) for frame in mapped.frames if frame.in_workspace)


def test_library_frames_are_kept_but_not_in_the_workspace(tmp_path_factory):
    run = _run("path_missing_data", tmp_path_factory)
    [failure] = run.failures()
    raising = failure.frames[-1]
    assert not raising.in_workspace and "numpy" in raising.file  # np.loadtxt raised it
    assert [frame.file for frame in failure.frames if frame.in_workspace] == ["main.py", "main.py"]
    assert failure.frames[0].function == "<module>" and failure.frames[1].function == "load"


def test_the_pytest_case_reports_the_test_and_its_frames(tmp_path_factory):
    run = _run("pytest_label_range", tmp_path_factory)
    [failure] = run.failures()
    assert failure.frames[0].file == "tests/test_targets.py" and failure.frames[0].function == "test_one_hot_targets"
    assert failure.message.startswith("IndexError: index 3 is out of bounds")
    # -x stopped at the first failure: the third test never ran.
    assert "test_never_reached" not in run.output


def test_a_workspace_exception_is_named_once_in_its_message(tmp_path):
    """pytest prints `E   pkg.config.OpenSetting: ...` under `pkg/config.py:5: OpenSetting`."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "config.py").write_text("class OpenSetting(LookupError):\n    pass\n\n\ndef get():\n    raise OpenSetting('lr')\n")
    output = (
        "=================================== FAILURES ===================================\n"
        "____________________________________ test_a ____________________________________\n\n"
        "    def get():\n>       raise OpenSetting(\"lr is left open\")\n"
        "E       pkg.config.OpenSetting: lr is left open\n\n"
        "pkg/config.py:6: OpenSetting\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/test_a.py::test_a - pkg.config.OpenSetting: lr is left open\n"
        "1 failed in 0.05s\n"
    )
    [failure] = failures_of(output, tmp_path, CONTAINER, exit_code=1, timed_out=False, oom_killed=False)
    assert (failure.exception, failure.message) == ("OpenSetting", "OpenSetting: lr is left open")


def test_a_timeout_without_a_stack_has_no_line():
    [failure] = failures_of(
        "step 1\nstep 2\n", Path("/nowhere"), CONTAINER, exit_code=None, timed_out=True, oom_killed=False
    )
    assert failure.error_class == "timeout" and failure.location is None
    assert "time limit" in failure.message and failure.suggestion


def test_a_timeout_ignores_an_exception_the_run_had_handled(tmp_path):
    (tmp_path / "train.py").write_text("x = 1\n")
    output = 'Traceback (most recent call last):\n  File "/workspace/train.py", line 1, in <module>\n    x = 1\nValueError: retried\nepoch 1\n'
    [failure] = failures_of(
        output, tmp_path, CONTAINER, exit_code=137, timed_out=True, oom_killed=False, timeout_seconds=120
    )
    assert failure.error_class == "timeout" and failure.location is None
    assert "120 s" in failure.message


# ------------------------------------------------------------------------------ recorded outputs

TORCH = "/usr/local/lib/python3.11/site-packages/torch"


def _workspace(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def _one(output: str, workspace: Path, **flags) -> SmokeFailure:
    flags = {"exit_code": 1, "timed_out": False, "oom_killed": False} | flags
    [failure] = failures_of(output, workspace, CONTAINER, **flags)
    return failure


MODEL_PY = """import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Linear(64, 2048)
        self.head = nn.Linear(512, 10)

    def forward(self, x):
        x = self.features(x)
        return self.head(x)
"""

LINEAR_OUTPUT = f"""epoch 0
Traceback (most recent call last):
  File "/workspace/train.py", line 9, in <module>
    logits = model(images)
             ^^^^^^^^^^^^^
  File "{TORCH}/nn/modules/module.py", line 1739, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "{TORCH}/nn/modules/module.py", line 1750, in _call_impl
    return forward_call(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/workspace/model.py", line 13, in forward
    return self.head(x)
           ^^^^^^^^^^^^
  File "{TORCH}/nn/modules/module.py", line 1739, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "{TORCH}/nn/modules/module.py", line 1750, in _call_impl
    return forward_call(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "{TORCH}/nn/modules/linear.py", line 125, in forward
    return F.linear(input, self.weight, self.bias)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
RuntimeError: mat1 and mat2 shapes cannot be multiplied (32x2048 and 512x10)
"""


def test_torch_linear_shape_mismatch_recorded(tmp_path):
    """torch 2.6's output (recorded: torch is not installed here)."""
    workspace = _workspace(tmp_path, {"model.py": MODEL_PY, "train.py": "\n" * 8 + "logits = model(images)\n"})
    failure = _one(LINEAR_OUTPUT, workspace)
    assert failure.error_class == "shape-mismatch" and failure.exception == "RuntimeError"
    assert (failure.location.file, failure.location.line) == ("model.py", 12)
    # The carets mark `self.head(x)`: the location's columns are that expression's.
    line = MODEL_PY.splitlines()[12]
    assert line[failure.location.column : failure.location.end_column] == "self.head(x)"
    assert "512" in failure.suggestion and "2048" in failure.suggestion
    assert [(f.file, f.in_workspace) for f in failure.frames] == [
        ("train.py", True),
        ("model.py", True),
        (f"{TORCH}/nn/modules/linear.py", False),
    ]


def test_output_cut_in_the_middle_still_maps_the_failure(tmp_path):
    workspace = _workspace(tmp_path, {"model.py": MODEL_PY, "train.py": "\n" * 8 + "logits = model(images)\n"})
    lines = LINEAR_OUTPUT.splitlines()
    cut = "\n".join(
        lines[:2] + ["[... 51,234 bytes of output cut by paperlens (output limit 1,000,000 bytes) ...]"] + lines[9:]
    )
    failure = _one(cut, workspace)
    assert failure.error_class == "shape-mismatch"
    assert (failure.location.file, failure.location.line) == ("model.py", 12)


def test_output_cut_before_the_exception_keeps_the_frames(tmp_path):
    workspace = _workspace(tmp_path, {"model.py": MODEL_PY})
    cut = "\n".join(LINEAR_OUTPUT.splitlines()[:14])
    failure = _one(cut, workspace)
    assert failure.error_class == "other" and failure.exception is None
    assert (failure.location.file, failure.location.line) == ("model.py", 12)


def _traceback(exception_lines: str, file: str = "train.py", line: int = 3, code: str = "loss = step(batch)") -> str:
    return f'Traceback (most recent call last):\n  File "/workspace/{file}", line {line}, in <module>\n    {code}\n{exception_lines}\n'


@pytest.mark.parametrize(
    ("exception_lines", "error_class", "fix"),
    [
        ("IndexError: Target 10 is out of bounds.", "label-range", "num_classes"),
        ("IndexError: index out of range in self", "label-range", "num_embeddings"),
        (
            "RuntimeError: CUDA error: device-side assert triggered\nCUDA kernel errors might be asynchronously reported",
            "label-range",
            "CUDA_LAUNCH_BLOCKING",
        ),
        ("RuntimeError: Class values must be smaller than num_classes.", "label-range", "num_classes"),
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 15.77 GiB",
            "oom",
            "memory limit",
        ),
        (
            "RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate memory: you tried to allocate 1099511627776 bytes.",
            "oom",
            "memory",
        ),
        ("MemoryError", "oom", "memory"),
        (
            "RuntimeError: The size of tensor a (64) must match the size of tensor b (32) at non-singleton dimension 1",
            "shape-mismatch",
            "shapes",
        ),
        (
            "ValueError: Expected input batch_size (64) to match target batch_size (32).",
            "shape-mismatch",
            "batch sizes",
        ),
        ("RuntimeError: shape '[32, -1, 8]' is invalid for input of size 1000", "shape-mismatch", "target shape"),
        (
            "RuntimeError: Given groups=1, weight of size [64, 3, 7, 7], expected input[8, 1, 224, 224] to have 3 channels, but got 1 channels instead",
            "shape-mismatch",
            "NCHW",
        ),
        (
            "RuntimeError: Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [224, 224]",
            "shape-mismatch",
            None,
        ),
        (
            (
                'einops.EinopsError:  Error while processing rearrange-reduction pattern "b c (h p1) (w p2) -> b (h w) (p1 p2 c)".\n'
                " Input tensor shape: torch.Size([2, 3, 30, 30]). Additional info: {'p1': 16, 'p2': 16}.\n"
                " Shape mismatch, can't divide axis of length 30 in chunks of 16"
            ),
            "shape-mismatch",
            None,
        ),
        ("ValueError: shapes (4,5) and (3,2) not aligned: 5 (dim 1) != 3 (dim 0)", "shape-mismatch", None),
        (
            (
                "RuntimeError: Error(s) in loading state_dict for ResNet:\n"
                '\tMissing key(s) in state_dict: "fc.weight", "fc.bias". \n'
                '\tUnexpected key(s) in state_dict: "module.fc.weight", "module.fc.bias". '
            ),
            "schema-mismatch",
            "module.",
        ),
        (
            (
                "RuntimeError: Error(s) in loading state_dict for Net:\n"
                "\tsize mismatch for fc.weight: copying a param with shape torch.Size([10, 512]) from checkpoint, "
                "the shape in current model is torch.Size([100, 512])."
            ),
            "shape-mismatch",
            None,
        ),
        (
            "omegaconf.errors.ConfigAttributeError: Key 'lr' is not in struct\n    full_key: optimizer.lr\n    object_type=dict",
            "schema-mismatch",
            "`lr`",
        ),
        ("omegaconf.errors.MissingMandatoryValue: Missing mandatory value: data.root", "schema-mismatch", "data.root"),
        ("AttributeError: 'Namespace' object has no attribute 'warmup_steps'", "schema-mismatch", "warmup_steps"),
        (
            "TypeError: Net.__init__() missing 1 required positional argument: 'num_classes'",
            "schema-mismatch",
            "num_classes",
        ),
        ("AttributeError: 'Tensor' object has no attribute 'numpyy'", "other", None),
        ("OSError: [Errno 30] Read-only file system: '/workspace/checkpoints'", "path", "/tmp"),
        # A write into the read-only mount fails with Errno 30 (test_sandbox.py); Errno 13 there is a read.
        ("PermissionError: [Errno 13] Permission denied: '/workspace/results.csv'", "path", "readable by others"),
        (
            "FileNotFoundError: [Errno 2] No such file or directory: '/data/imagenet/train'",
            "path",
            "only the workspace is mounted",
        ),
        ("NotADirectoryError: [Errno 20] Not a directory: 'config.yaml/train'", "path", None),
        (
            "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>",
            "other",
            "no network",
        ),
        (
            "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it in the cached files",
            "other",
            "no network",
        ),
        ("AssertionError: Torch not compiled with CUDA enabled", "other", "no GPU"),
        ("RuntimeError: expected scalar type Long but found Float", "other", "dtypes"),
        (
            "ImportError: libGL.so.1: cannot open shared object file: No such file or directory",
            "missing-dependency",
            "opencv-python-headless",
        ),
        (
            "ImportError: cannot import name 'CosineLRScheduler' from 'timm.scheduler' (/usr/lib/python3/dist-packages/timm/scheduler/__init__.py)",
            "missing-dependency",
            "timm",
        ),
        ("ModuleNotFoundError: No module named 'sklearn'", "missing-dependency", "scikit-learn"),
        ("ModuleNotFoundError: No module named 'PIL'", "missing-dependency", "Pillow"),
        ("ModuleNotFoundError: No module named 'yaml'", "missing-dependency", "PyYAML"),
        ("ModuleNotFoundError: No module named 'skimage.transform'", "missing-dependency", "scikit-image"),
        ("ModuleNotFoundError: No module named 'bs4'", "missing-dependency", "beautifulsoup4"),
        ("ModuleNotFoundError: No module named 'google.protobuf'", "missing-dependency", "protobuf"),
        ("ModuleNotFoundError: No module named 'some_unknown_lib'", "missing-dependency", "some_unknown_lib"),
        ("KeyboardInterrupt", "other", None),
    ],
)
def test_recorded_messages_are_classified(tmp_path, exception_lines, error_class, fix):
    workspace = _workspace(tmp_path, {"train.py": "import torch\n\nloss = step(batch)\n"})
    failure = _one(_traceback(exception_lines), workspace)
    assert failure.error_class == error_class
    assert (failure.location.file, failure.location.line) == ("train.py", 2)
    if fix is None:
        assert error_class != "other" or failure.suggestion is None
    else:
        assert failure.suggestion is not None and fix in failure.suggestion, failure.suggestion
    first = exception_lines.split("\n")[0]
    assert failure.message.startswith(first.split(":")[0].split(".")[-1] + first[len(first.split(":")[0]) :])


def test_a_write_into_the_workspace_in_local_mode_is_no_sandbox_issue(tmp_path):
    workspace = _workspace(tmp_path, {"train.py": "\n\nopen('results.csv', 'w')\n"})
    output = (
        f'Traceback (most recent call last):\n  File "{workspace}/train.py", line 3, in <module>\n'
        "    open('results.csv', 'w')\nPermissionError: [Errno 13] Permission denied: 'results.csv'\n"
    )
    [failure] = failures_of(output, workspace, str(workspace), exit_code=1, timed_out=False, oom_killed=False)
    assert failure.error_class == "path"
    assert failure.suggestion is None or "read-only" not in failure.suggestion


def test_a_relative_path_beside_the_script_gets_the_file_based_fix(tmp_path):
    workspace = _workspace(tmp_path, {"src/train.py": "\n\nopen('labels.txt')\n", "src/labels.txt": "cat\n"})
    output = _traceback(
        "FileNotFoundError: [Errno 2] No such file or directory: 'labels.txt'", "src/train.py", 3, "open('labels.txt')"
    )
    failure = _one(output, workspace)
    assert failure.error_class == "path" and "Path(__file__).parent" in failure.suggestion


def test_a_missing_workspace_module_is_not_a_distribution(tmp_path):
    workspace = _workspace(tmp_path, {"models/__init__.py": "", "scripts/train.py": "\n\nimport models\n"})
    failure = _one(
        _traceback("ModuleNotFoundError: No module named 'models'", "scripts/train.py", 3, "import models"), workspace
    )
    assert failure.error_class == "missing-dependency"
    assert "workspace's own code" in failure.suggestion


def test_a_dataloader_worker_error_is_located_in_the_dataset(tmp_path):
    """A KeyError in a DataLoader worker, re-raised in the main process with the original traceback
    in its message (torch 2.x, recorded)."""
    workspace = _workspace(
        tmp_path,
        {
            "train.py": "\n" * 19 + "for batch in loader:\n",
            "data.py": "\n" * 13 + "        return self.items[index]['label']\n",
        },
    )
    output = f"""Traceback (most recent call last):
  File "/workspace/train.py", line 20, in <module>
    for batch in loader:
  File "{TORCH}/utils/data/dataloader.py", line 708, in __next__
    data = self._next_data()
  File "{TORCH}/utils/data/dataloader.py", line 1480, in _next_data
    return self._process_data(data)
  File "{TORCH}/_utils.py", line 733, in reraise
    raise exception
KeyError: Caught KeyError in DataLoader worker process 0.
Original Traceback (most recent call last):
  File "{TORCH}/utils/data/_utils/worker.py", line 349, in _worker_loop
    data = fetcher.fetch(index)  # type: ignore[possibly-undefined]
  File "{TORCH}/utils/data/_utils/fetch.py", line 52, in fetch
    data = [self.dataset[idx] for idx in possibly_batched_index]
  File "/workspace/data.py", line 14, in __getitem__
    return self.items[index]['label']
KeyError: 'label'

"""
    failure = _one(output, workspace)
    assert failure.error_class == "schema-mismatch"
    assert failure.message == "KeyError: 'label'"
    assert (failure.location.file, failure.location.line) == ("data.py", 13)


def test_a_chain_is_classified_by_its_cause_when_the_last_says_nothing(tmp_path):
    workspace = _workspace(
        tmp_path, {"train.py": "import torch\n\nloss = step(batch)\n", "model.py": "\n\nx = a @ b\n"}
    )
    output = (
        _traceback(
            "ValueError: operands could not be broadcast together with shapes (4,3) (4,)", "model.py", 3, "x = a @ b"
        )
        + "\nThe above exception was the direct cause of the following exception:\n\n"
        + _traceback("RuntimeError: training step failed")
    )
    failure = _one(output, workspace)
    assert failure.error_class == "shape-mismatch" and failure.exception == "RuntimeError"
    assert (failure.location.file, failure.location.line) == ("train.py", 2)  # the last traceback's


def test_an_unrelated_earlier_traceback_does_not_classify_the_last(tmp_path):
    workspace = _workspace(tmp_path, {"train.py": "import torch\n\nloss = step(batch)\n"})
    output = _traceback("KeyError: 'warmup'") + "retrying without warmup\n" + _traceback("AssertionError: loss is nan")
    failure = _one(output, workspace)
    assert failure.error_class == "other" and failure.exception == "AssertionError"


def test_frames_of_an_environment_inside_the_workspace_are_not_workspace_frames(tmp_path):
    workspace = _workspace(tmp_path, {"train.py": "import torch\n\nloss = step(batch)\n"})
    output = (
        'Traceback (most recent call last):\n  File "/workspace/train.py", line 3, in <module>\n    loss = step(batch)\n'
        '  File "/workspace/.venv/lib/python3.11/site-packages/numpy/core/fromnumeric.py", line 57, in _wrapfunc\n'
        "    return bound(*args, **kwds)\nValueError: cannot reshape array of size 10 into shape (3,4)\n"
    )
    failure = _one(output, workspace)
    assert failure.location.file == "train.py"
    assert failure.frames[-1].file == ".venv/lib/python3.11/site-packages/numpy/core/fromnumeric.py"
    assert not failure.frames[-1].in_workspace


def test_at_most_five_frames_nearest_the_error(tmp_path):
    workspace = _workspace(tmp_path, {"deep.py": "def f(n):\n    return f(n - 1) if n else {}['k']\n"})
    frames = '  File "/workspace/deep.py", line 2, in f\n    return f(n - 1) if n else {}["k"]\n' * 12
    output = f"Traceback (most recent call last):\n{frames}  [Previous line repeated 3 more times]\nKeyError: 'k'\n"
    failure = _one(output, workspace)
    assert len(failure.frames) == 5 and all(frame.in_workspace for frame in failure.frames)


PYTEST_SUMMARY_ONLY = """..F
[... 2,345,678 bytes of output cut by paperlens (output limit 1,000,000 bytes) ...]
=========================== short test summary info ============================
FAILED tests/test_model.py::TestNet::test_forward[cpu] - RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x8 and 16x2)
!!!!!!!!!!!!!!!!!!!!!!!!!! stopping after 1 failures !!!!!!!!!!!!!!!!!!!!!!!!!!!
1 failed, 2 passed in 3.21s
"""


def test_a_pytest_failure_whose_report_was_cut_is_at_the_test(tmp_path):
    test_file = "import pytest\n\n\nclass TestNet:\n    @pytest.mark.parametrize('device', ['cpu'])\n    def test_forward(self, device):\n        pass\n"
    workspace = _workspace(tmp_path, {"tests/test_model.py": test_file})
    failure = _one(PYTEST_SUMMARY_ONLY, workspace)
    assert failure.error_class == "shape-mismatch" and failure.exception == "RuntimeError"
    assert failure.test == "tests/test_model.py::TestNet::test_forward[cpu]"
    assert (failure.location.file, failure.location.line) == ("tests/test_model.py", 5)


def test_pytest_collection_errors_in_a_container(tmp_path):
    """Recorded from pytest 8 in the sandbox: two collection errors (without -x)."""
    workspace = _workspace(
        tmp_path, {"tests/test_data.py": "import cv2\n", "tests/test_loss.py": "def test_x(:\n    pass\n"}
    )
    output = """
==================================== ERRORS ====================================
____________________ ERROR collecting tests/test_data.py _____________________
ImportError while importing test module '/workspace/tests/test_data.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
/usr/lib/python3.11/importlib/__init__.py:126: in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
tests/test_data.py:1: in <module>
    import cv2
E   ModuleNotFoundError: No module named 'cv2'
____________________ ERROR collecting tests/test_loss.py _____________________
/usr/lib/python3/dist-packages/_pytest/python.py:617: in _importtestmodule
    mod = import_path(self.path, mode=importmode, root=self.config.rootpath)
<frozen importlib._bootstrap>:1204: in _gcd_import
    ???
/usr/lib/python3/dist-packages/_pytest/assertion/rewrite.py:339: in _rewrite_test
    tree = ast.parse(source, filename=strfn)
E     File "/workspace/tests/test_loss.py", line 1
E       def test_x(:
E                  ^
E   SyntaxError: invalid syntax
=========================== short test summary info ============================
ERROR tests/test_data.py
ERROR tests/test_loss.py
!!!!!!!!!!!!!!!!!!! Interrupted: 2 errors during collection !!!!!!!!!!!!!!!!!!!!
2 errors in 0.31s
"""
    first, second = failures_of(output, workspace, CONTAINER, exit_code=2, timed_out=False, oom_killed=False)
    assert (first.error_class, first.test, first.location.file, first.location.line) == (
        "missing-dependency",
        "tests/test_data.py",
        "tests/test_data.py",
        0,
    )
    assert "opencv-python" in first.suggestion
    assert (second.error_class, second.test, second.location.file, second.location.line) == (
        "syntax-error",
        "tests/test_loss.py",
        "tests/test_loss.py",
        0,
    )
    assert second.location.column == len("def test_x(")
    assert [frame.in_workspace for frame in second.frames][-1] is True


def test_captured_output_of_a_pytest_failure_is_not_its_traceback(tmp_path):
    workspace = _workspace(tmp_path, {"tests/test_a.py": "def test_a():\n    assert load() == 1\n"})
    output = """F
=================================== FAILURES ===================================
____________________________________ test_a ____________________________________

    def test_a():
>       assert load() == 1
E       assert 0 == 1
E        +  where 0 = load()

tests/test_a.py:2: AssertionError
----------------------------- Captured stderr call -----------------------------
Traceback (most recent call last):
  File "/workspace/tests/helper.py", line 1, in <module>
KeyError: 'retried'
=========================== short test summary info ============================
FAILED tests/test_a.py::test_a - assert 0 == 1
1 failed in 0.02s
"""
    failure = _one(output, workspace)
    assert (failure.error_class, failure.exception, failure.test) == (
        "other",
        "AssertionError",
        "tests/test_a.py::test_a",
    )
    assert failure.message.startswith("AssertionError: assert 0 == 1")
    assert (failure.location.file, failure.location.line) == ("tests/test_a.py", 1)


def test_a_pytest_timeout_failure_is_a_timeout(tmp_path):
    workspace = _workspace(tmp_path, {"tests/test_slow.py": "def test_slow():\n    while True:\n        pass\n"})
    output = """F
=================================== FAILURES ===================================
__________________________________ test_slow ___________________________________

    def test_slow():
        while True:
>           pass
E           Failed: Timeout >1.0s

tests/test_slow.py:3: Failed
=========================== short test summary info ============================
FAILED tests/test_slow.py::test_slow - Failed: Timeout >1.0s
1 failed in 1.02s
"""
    failure = _one(output, workspace)
    assert failure.error_class == "timeout" and failure.location.line == 2


def test_flags_decide_first(tmp_path):
    workspace = _workspace(tmp_path, {"train.py": "import torch\n\nloss = step(batch)\n"})
    [oom] = failures_of("epoch 1\n", workspace, CONTAINER, exit_code=137, timed_out=False, oom_killed=True, memory="1g")
    assert oom.error_class == "oom" and "1g" in oom.message and oom.suggestion
    [killed] = failures_of("epoch 1\nKilled\n", workspace, CONTAINER, exit_code=137, timed_out=False, oom_killed=False)
    assert killed.error_class == "oom" and "most likely" in killed.message
    [timeout] = failures_of(
        _traceback("MemoryError"), workspace, CONTAINER, exit_code=137, timed_out=True, oom_killed=True
    )
    assert timeout.error_class == "timeout"


def test_a_passing_run_has_no_failures(tmp_path):
    handled = _traceback("KeyError: 'x'") + "recovered\n"
    assert failures_of(handled, tmp_path, CONTAINER, exit_code=0, timed_out=False, oom_killed=False) == []
    assert failures_of("", tmp_path, CONTAINER, exit_code=0, timed_out=False, oom_killed=False) == []


def test_a_failure_with_nothing_readable_keeps_the_last_lines(tmp_path):
    output = "\n".join(f"step {i}" for i in range(20)) + "\nerror: the loss diverged\n"
    [failure] = failures_of(output, tmp_path, CONTAINER, exit_code=3, timed_out=False, oom_killed=False)
    assert failure.error_class == "other" and failure.location is None
    assert failure.message.splitlines()[-1] == "error: the loss diverged" and "step 19" in failure.message
    assert "step 0" not in failure.message


def test_no_pytest_in_the_image_is_a_missing_dependency(tmp_path):
    [failure] = failures_of(
        "/usr/bin/python3: No module named pytest\n",
        tmp_path,
        CONTAINER,
        exit_code=1,
        timed_out=False,
        oom_killed=False,
    )
    assert failure.error_class == "missing-dependency" and "`pytest`" in failure.suggestion


def test_a_script_that_does_not_take_the_smoke_flag(tmp_path):
    output = "usage: reproduce.py [-h] [--epochs EPOCHS]\nreproduce.py: error: unrecognized arguments: --smoke\n"
    [failure] = failures_of(output, tmp_path, CONTAINER, exit_code=2, timed_out=False, oom_killed=False)
    assert failure.error_class == "other" and "--smoke" in failure.suggestion


def test_ansi_colours_and_windows_line_ends_are_read(tmp_path):
    workspace = _workspace(tmp_path, {"train.py": "import torch\n\nloss = step(batch)\n"})
    output = _traceback("\x1b[35mKeyError\x1b[0m: \x1b[35m'lr'\x1b[0m").replace("\n", "\r\n")
    failure = _one(output, workspace)
    assert failure.error_class == "schema-mismatch" and failure.message == "KeyError: 'lr'"


def test_classify_alone():
    assert classify("IndexError", "index 7 is out of bounds for axis 0 with size 5", "row = table[i]") == (
        "other",
        None,
    )
    assert (
        classify("IndexError", "index 7 is out of bounds for axis 0 with size 5", "y = one_hot[labels]")[0]
        == "label-range"
    )
    assert classify("ValueError", "not enough values to unpack (expected 2, got 1)", "a, b = pair")[0] == "other"
    assert (
        classify("ValueError", "not enough values to unpack (expected 4, got 3)", "b, c, h, w = x.shape")[0]
        == "shape-mismatch"
    )
    assert classify("SyntaxError", "SyntaxError: invalid syntax") == ("syntax-error", None)


def test_a_script_logging_error_lines_is_no_pytest_run(tmp_path):
    workspace = _workspace(tmp_path, {"train.py": "import torch\n\nloss = step(batch)\n"})
    output = "ERROR loading the cache, rebuilding\nFAILED to reach the tracker\n" + _traceback("KeyError: 'lr'")
    failure = _one(output, workspace)
    assert (failure.error_class, failure.location.line, failure.test) == ("schema-mismatch", 2, None)


def test_a_timeout_dump_of_several_threads_is_read_at_the_interrupted_one(tmp_path):
    workspace = _workspace(tmp_path, {"train.py": "\n" * 30})
    output = """epoch 1
Fatal Python error: Aborted

Thread 0x00007f0d4a1ff6c0 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 324 in wait
  File "/workspace/train.py", line 12 in prefetch

Current thread 0x00007f0d5305fb80 (most recent call first):
  File "/workspace/train.py", line 25 in step
  File "/workspace/train.py", line 30 in <module>

Thread 0x00007f0d4b2ff6c0 (most recent call first):
  File "/usr/lib/python3.11/selectors.py", line 415 in select
"""
    failure = _one(output, workspace, exit_code=-6, timed_out=True)
    assert failure.error_class == "timeout"
    assert (failure.location.file, failure.location.line) == ("train.py", 24)
    assert [frame.function for frame in failure.frames] == ["<module>", "step"]


# ------------------------------------------------------------------------------ the real sandbox


@pytest.mark.usefixtures("docker_engine")
@pytest.mark.parametrize("name", CASES)
def test_the_corpus_in_the_real_sandbox(name, tmp_path):
    """Each case through `run_smoke` in a container (the image's python3 and numpy; /workspace):
    the same class, file and line. At the time limit the container is killed outright, so a
    timeout has a line only when the output showed a stack."""
    from paperlens.pipeline.sandbox import run_smoke
    from paperlens.schemas.smoke import SandboxSettings

    workspace = tmp_path / "workspace"
    shutil.copytree(CASES_DIR / name, workspace, ignore=shutil.ignore_patterns("case.toml", "__pycache__"))
    workspace.chmod(0o755)  # the container's user reads it through the bind mount
    spec = tomllib.loads((CASES_DIR / name / "case.toml").read_text(encoding="utf-8"))
    command = ["python3" if part == "python" else part for part in spec["command"]]
    settings = SandboxSettings(command=command, timeout_seconds=spec.get("timeout", 60))
    result = run_smoke(workspace, settings)
    assert result.status == "failed", result.message
    [failure] = result.failures
    assert failure.error_class == spec["error_class"], result.output
    assert failure.exception == spec.get("exception"), result.output
    expected = _marker(workspace)
    if spec["error_class"] == "timeout" and failure.location is None:
        assert result.timed_out
        return
    assert (failure.location.file, failure.location.line) == expected, result.output
    if "suggestion" in spec:
        assert spec["suggestion"] in failure.suggestion
    assert failure.test == spec.get("test")

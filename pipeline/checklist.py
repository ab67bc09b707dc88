"""The reproducibility checklist: whether a repository meets the eight points practitioners reproduce
papers by, each with the evidence (file and line) and, for a failure, what to add.

It reads what the repository's files say as text (code, notebooks, launchers, configs, the README, lock
files, Dockerfiles): a seed is set where a seeding call stands, not where a run may end up calling
it. The framework the code imports decides what "seeded" and "deterministic" mean. No code runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..schemas import ChecklistEvidence, ChecklistPoint, ChecklistReport
from .check.scope import holds_no_run
from .code import MAX_FILE_BYTES, workspace_files
from .decisions import DECISIONS_PATH
from .files import UnreadableFile, read_regular_file
from .sarif import sarif_log
from .text import shorten

# Files the code index does not read that say how a run is reproduced.
_LOCK_FILES = ("poetry.lock", "uv.lock", "Pipfile.lock", "pdm.lock", "conda-lock.yml", "requirements.lock")
_REQUIREMENTS_RE = re.compile(r"^(?:requirements[\w.-]*\.txt|environment[\w.-]*\.ya?ml|Dockerfile[\w.-]*|[\w.-]+\.dockerfile)$", re.I)
_EVIDENCE_CHARS = 100


@dataclass(frozen=True, slots=True)
class _Line:
    file: str
    number: int
    text: str


class _Workspace:
    """The repository's text files, read once, line by line."""

    def __init__(self, root: Path, include: list[str] | None, exclude: list[str] | None) -> None:
        self.root = root
        paths = workspace_files(root, include, exclude)
        self.top = _top_files(root)
        extra = [name for name in self.top if name in _LOCK_FILES or _REQUIREMENTS_RE.match(name)]
        self.texts: dict[str, str] = {}
        for path in [*paths, *extra]:
            try:
                self.texts[path] = read_regular_file(root / path, limit=MAX_FILE_BYTES, inside=root).decode("utf-8", errors="replace")
            except UnreadableFile:
                continue

        # A notebook beside the scripts that make the runs is a demo or an analysis, not a run.
        has_scripts = any(path.endswith(".py") and not holds_no_run(path) for path in self.texts)
        self.code = lambda path: (path.endswith(".py") or (path.endswith(".ipynb") and not has_scripts)) and not holds_no_run(path)
        # The runs' own code: not a metric's or an evaluation's (a classifier trained to score samples).
        self.run_code = lambda path: self.code(path) and not _EVALUATION_PATH_RE.search(path)

    def files(self, wanted: Callable[[str], bool] = lambda _: True) -> Iterable[tuple[str, str]]:
        return ((path, text) for path, text in self.texts.items() if wanted(path))

    def find(self, pattern: re.Pattern[str], wanted: Callable[[str], bool] = lambda _: True, limit: int = 3) -> list[_Line]:
        """The first lines matching `pattern`, at most `limit`, in the files `wanted` keeps."""
        found: list[_Line] = []
        for path, text in self.files(wanted):
            lines: list[str] | None = None  # split once, and only for a file with a match
            for match in pattern.finditer(text):
                number = text.count("\n", 0, match.start())
                lines = lines if lines is not None else text.split("\n")
                line = lines[number]
                if line.lstrip().lstrip('"').startswith("#"):
                    continue  # `# np.random.seed(0)`: commented out
                found.append(_Line(path, number, line.strip().strip(",").strip('"').removesuffix("\\n").strip()))
                if len(found) >= limit:
                    return found
        return found


def _top_files(root: Path) -> list[str]:
    """The names of the files at the workspace's root; none when it cannot be listed (a link that loops)."""
    try:
        return sorted(path.name for path in root.iterdir() if path.is_file())
    except OSError:
        return []


_EVALUATION_PATH_RE = re.compile(r"(?:^|/)(?:metrics?|eval\w*)(?:/|_|\.py$)")


def _runs(path: str) -> bool:
    """Files that document or make runs: launchers, Markdown, configs, notebooks and scripts."""
    return not holds_no_run(path)


def _evidence(lines: Iterable[_Line]) -> list[ChecklistEvidence]:
    return [ChecklistEvidence(file=line.file, line=line.number, text=shorten(line.text, _EVIDENCE_CHARS)) for line in lines]


# -- 1. randomness --------------------------------------------------------------------------------

# A line starts a statement at its start, or after a notebook's JSON quote (`"import torch\n",`).
_STATEMENT = r"^\s*\"?"
_FRAMEWORK_IMPORTS = {
    "PyTorch": re.compile(_STATEMENT + r"(?:import|from)\s+torch\b", re.M),
    "JAX": re.compile(_STATEMENT + r"(?:import|from)\s+(?:jax|flax)\b", re.M),
    "TensorFlow": re.compile(_STATEMENT + r"(?:import|from)\s+(?:tensorflow|keras)\b", re.M),
}
# A call that seeds everything the framework draws from (Lightning, transformers, accelerate, Keras).
_SEED_ALL_RE = re.compile(r"\b(?:seed_everything|set_seed|set_random_seed|enable_full_determinism)\s*\(|^\s*seed_everything\s*:\s*\d|--seed_everything[= ]+\d|\bseed_everything_default\s*=\s*\d", re.M)
_SEEDS = {
    "Python's random": re.compile(r"(?<![\w.])random\.seed\s*\("),
    "NumPy": re.compile(r"\b(?:np|numpy)\.random\.(?:seed\s*\(|default_rng\s*\(\s*[\w.])"),
    "PyTorch": re.compile(r"\btorch\.(?:cuda\.)?manual_seed(?:_all)?\s*\("),
    "JAX": re.compile(r"\bjax\.random\.(?:PRNGKey|key)\s*\("),
    "TensorFlow": re.compile(r"\btf\.random\.set_seed\s*\(|\bkeras\.utils\.set_random_seed\s*\("),
}
_USES = {
    "Python's random": re.compile(_STATEMENT + r"import\s+random\b|" + _STATEMENT + r"from\s+random\s+import\b", re.M),
    "NumPy": re.compile(r"\b(?:np|numpy)\.random\.\w+\s*\("),
}
_DETERMINISTIC = {
    "PyTorch": re.compile(r"\btorch\.use_deterministic_algorithms\s*\(\s*True|\bcudnn\.deterministic\s*=\s*True|\benable_full_determinism\s*\(|\bTrainer\s*\([^)]*deterministic\s*=\s*True"),
    "TensorFlow": re.compile(r"\benable_op_determinism\s*\(|TF_DETERMINISTIC_OPS"),
}
_WORKERS_RE = re.compile(r"\bnum_workers\s*=\s*(?!0\b)")
_WORKER_SEEDING_RE = re.compile(r"\bworker_init_fn\s*=|\bgenerator\s*=|\bseed_everything\s*\([^)]*workers\s*=\s*True")


def _framework(workspace: _Workspace) -> str | None:
    counts = {name: sum(bool(pattern.search(text)) for _, text in workspace.files(workspace.code)) for name, pattern in _FRAMEWORK_IMPORTS.items()}
    name, count = max(counts.items(), key=lambda item: item[1])
    return name if count else None


def _randomness(workspace: _Workspace, framework: str | None) -> ChecklistPoint:
    evidence: list[_Line] = []
    missing: list[str] = []
    seed_all = workspace.find(_SEED_ALL_RE, workspace.run_code, limit=1)
    evidence += seed_all
    needed = [name for name in ("Python's random", "NumPy") if workspace.find(_USES[name], workspace.run_code, limit=1)]
    if framework is not None:
        needed.append(framework)
    if not needed:
        return ChecklistPoint(id="randomness", title="Randomness fixed and recorded", status="not applicable",
                              summary="the code draws no random numbers paperlens can see")  # fmt: skip
    for name in needed:
        found = workspace.find(_SEEDS[name], workspace.run_code, limit=1)
        evidence += found
        if not found and not seed_all:
            missing.append(f"seed {name} ({_SEED_HINT[name]})")
    if framework in _DETERMINISTIC:
        found = workspace.find(_DETERMINISTIC[framework], workspace.run_code, limit=1)
        evidence += found
        if not found:
            missing.append(f"turn on deterministic operators ({_DETERMINISTIC_HINT[framework]})")
    if framework == "PyTorch" and workspace.find(_WORKERS_RE, workspace.run_code, limit=1) and not workspace.find(_WORKER_SEEDING_RE, workspace.run_code, limit=1):
        missing.append("seed the data loader's workers (`worker_init_fn=` and a seeded `generator=`)")
    seeded = sorted({name for name in needed if any(_SEEDS[name].search(line.text) for line in evidence)} | ({"all"} if seed_all else set()))
    summary = ("seeded: " + ", ".join(seeded)) if seeded else "no seed is set"
    return ChecklistPoint(id="randomness", title="Randomness fixed and recorded", status="failed" if missing else "passed",
                          summary=summary, evidence=_evidence(evidence), missing=missing)  # fmt: skip


_SEED_HINT = {
    "Python's random": "`random.seed(seed)`",
    "NumPy": "`np.random.seed(seed)`",
    "PyTorch": "`torch.manual_seed(seed)` and `torch.cuda.manual_seed_all(seed)`",
    "JAX": "`jax.random.PRNGKey(seed)` passed down explicitly",
    "TensorFlow": "`tf.keras.utils.set_random_seed(seed)`",
}
_DETERMINISTIC_HINT = {
    "PyTorch": "`torch.use_deterministic_algorithms(True)` and `torch.backends.cudnn.benchmark = False`",
    "TensorFlow": "`tf.config.experimental.enable_op_determinism()`",
}


# -- 2. dependencies ------------------------------------------------------------------------------

_PINNED_RE = re.compile(r"^\s*[A-Za-z0-9_.\[\],-]+\s*===?\s*[\w.*+!-]+|^\s*(?:-e\s+)?(?:git\+|https?://)\S+@[0-9a-f]{7,}", re.I)
_REQUIREMENT_LINE_RE = re.compile(r"^\s*[A-Za-z0-9_.-]+")
_FROM_RE = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(?P<image>\S+)", re.I | re.M)


def _dependencies(workspace: _Workspace) -> ChecklistPoint:
    evidence: list[ChecklistEvidence] = []
    missing: list[str] = []
    locks = [path for path, _ in workspace.files(lambda p: Path(p).name in _LOCK_FILES)]
    for path, text in workspace.files(lambda p: bool(re.match(r"requirements[\w.-]*\.txt$", Path(p).name, re.I))):
        lines = [line for line in text.splitlines() if _REQUIREMENT_LINE_RE.match(line) and not line.lstrip().startswith(("#", "-r", "--"))]
        if lines and all(_PINNED_RE.match(line) for line in lines):
            locks.append(path)
    evidence += [ChecklistEvidence(file=path, text="every dependency pinned") for path in locks]
    if not locks:
        missing.append("a lock file with exact versions (`pip freeze > requirements.lock`, poetry.lock, uv.lock)")
    for path, text in workspace.files(lambda p: bool(re.match(r"Dockerfile|[\w.-]+\.dockerfile$", Path(p).name, re.I))):
        for match in _FROM_RE.finditer(text):
            image = match["image"]
            line = text.count("\n", 0, match.start())
            evidence.append(ChecklistEvidence(file=path, line=line, text=shorten(match.group().strip(), _EVIDENCE_CHARS)))
            if "@sha256:" not in image:
                tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else None
                missing.append(f"{path}:{line + 1}: base image `{image}` by digest (`@sha256:…`){', never `latest`' if tag in (None, 'latest') else ''}")
    summary = f"lock: {', '.join(locks)}" if locks else "no lock file"
    return ChecklistPoint(id="dependencies", title="Dependencies locked", status="failed" if missing else "passed",
                          summary=summary, evidence=evidence, missing=missing)  # fmt: skip


# -- 3. data ----------------------------------------------------------------------------------------

_TRAIN_SPLIT_RE = re.compile(r"""split\s*[=:]\s*['"]train|['"]train['"]|\btrain_test_split\s*\(|\brandom_split\s*\(|\b(?:train_set|train_dataset|trainset|train_data|train_loader|train_dl|[xXy]_train)\b""")
_HELD_OUT_RE = re.compile(r"""split\s*[=:]\s*['"](?:val|valid|validation|test|dev)|['"](?:val|valid|validation|test|dev)['"]|\btrain_test_split\s*\(|\brandom_split\s*\(|\b(?:val|valid|test|eval)_(?:set|dataset|data|loader|dl)\b|\b(?:valset|testset|[xXy]_(?:test|val))\b|\bvalidation_(?:data|split)\s*=""")


# Code that trains something: a gradient step, an optimizer, a `fit`.
_TRAINS_RE = re.compile(r"\.backward\s*\(|\boptim\.\w+\s*\(|\boptax\.\w+\s*\(|\.fit\s*\(|\bvalue_and_grad\b|\bGradientTape\b|\bcompile\s*\(\s*optimizer")
# A generative model evaluated against reference statistics (FID, IS) has no held-out split to name.
_REFERENCE_STATISTICS_RE = re.compile(r"\bfid\b|inception_score|torch_fidelity|cleanfid|pytorch_fid", re.I)


# Data read from storage (a checkpoint's `torch.load` is no data): without any, the data is generated.
_READS_DATA_RE = re.compile(
    r"\b(?:np\.load(?:txt)?|pd\.read_\w+|load_dataset|load_from_disk|ImageFolder|tfds\.load|h5py\.File|pickle\.load|imread|Image\.open|"
    r"read_csv|datasets\.\w+\s*\(|Dataset\s*\(|\.load_data\s*\("
    r"|open\s*\((?=[^)]*(?:data|\.csv|\.jsonl?|\.npy|\.pkl|\.parquet))(?![^)]*['\"][wa]b?\+?['\"]))"
)


def _data(workspace: _Workspace) -> ChecklistPoint:
    if not workspace.find(_TRAINS_RE, workspace.code, limit=1):
        return ChecklistPoint(id="data", title="Data splits written down", status="not applicable", summary="the code trains nothing paperlens can see")
    if not workspace.find(_READS_DATA_RE, workspace.run_code, limit=1):
        return ChecklistPoint(id="data", title="Data splits written down", status="not applicable", summary="the data is generated, not read: no split to write down")
    training = workspace.find(_TRAIN_SPLIT_RE, _runs, limit=1)
    held_out = workspace.find(_HELD_OUT_RE, _runs, limit=1) or workspace.find(_REFERENCE_STATISTICS_RE, workspace.code, limit=1)
    missing = []
    if not training:
        missing.append("where the training split comes from (a file, a split name, a seeded split)")
    if not held_out:
        missing.append("the validation or test split, and whether the validation split is used for tuning")
    return ChecklistPoint(id="data", title="Data splits written down", status="failed" if missing else "passed",
                          summary="training and held-out splits named in the code" if not missing else "a split is not named",
                          evidence=_evidence(training + held_out), missing=missing)  # fmt: skip


# -- 4. smoke test ----------------------------------------------------------------------------------

_TEST_FILE_RE = re.compile(r"(?:^|/)(?:test_[^/]*|[^/]*_test)\.py$")
_SMOKE_OPTION_RE = re.compile(r"--(?:smoke|debug|dry[-_]run|fast[-_]dev[-_]run|max[-_]steps|limit|subset|overfit)\w*\b|\bfast_dev_run\s*=|\boverfit_batches\s*=")


def _smoke_test(workspace: _Workspace) -> ChecklistPoint:
    tests = [path for path, _ in workspace.files(lambda p: bool(_TEST_FILE_RE.search(p)))]
    options = workspace.find(_SMOKE_OPTION_RE, limit=2)
    evidence = [ChecklistEvidence(file=path, text="a test file") for path in tests[:3]] + _evidence(options)
    passed = bool(tests or options)
    return ChecklistPoint(id="smoke-test", title="Smoke test before the full run", status="passed" if passed else "failed",
                          summary=f"{len(tests)} test file(s)" + (", a small-run option" if options else "") if passed else "no test and no small-run option",
                          evidence=evidence,
                          missing=[] if passed else ["a one-step run on a tiny subset (a test, or a `--smoke`/`--max-steps` option)"])  # fmt: skip


# -- 5. several seeds -------------------------------------------------------------------------------

_SEED_FLAG_RE = re.compile(r"--seed[= ]+(?P<value>\d+)")
_SEED_LOOP_RE = re.compile(r"\bfor\s+\w*seed\w*\s+in\b|\bseeds?\s*[:=]\s*[\[(]\s*\d+\s*,\s*\d+\s*,\s*\d+|--seeds?\b[= ]+\d+[ ,]+\d+[ ,]+\d+")


def _seeds(workspace: _Workspace) -> ChecklistPoint:
    launchers = lambda p: p.endswith((".sh", ".bash", ".md", ".yaml", ".yml", ".toml", ".json")) or workspace.code(p)  # noqa: E731
    values: dict[str, _Line] = {}
    for line in workspace.find(_SEED_FLAG_RE, launchers, limit=50):
        for match in _SEED_FLAG_RE.finditer(line.text):
            values.setdefault(match["value"], line)
    loops = workspace.find(_SEED_LOOP_RE, launchers, limit=1)
    passed = len(values) >= 3 or bool(loops)
    evidence = loops + list(values.values())[:3]
    summary = "runs over several seeds" if loops else f"documented runs use {len(values)} seed(s)" if values else "no documented run sets a seed"
    return ChecklistPoint(id="seeds", title="Several seeds reported", status="passed" if passed else "failed", summary=summary,
                          evidence=_evidence(evidence),
                          missing=[] if passed else ["at least three seeds per reported number, with mean ± std in the report"])  # fmt: skip


# -- 6. metrics and tolerances ----------------------------------------------------------------------

_TOLERANCE_RE = re.compile(r"^\s*[\"']?(?:\w+_)?(?:tolerance|atol|rtol|rel_tol|abs_tol)(?:_\w+)?[\"']?\s*[:=]", re.M | re.I)


def _metrics(workspace: _Workspace) -> ChecklistPoint:
    configs = lambda p: p.endswith((".yaml", ".yml", ".toml", ".json", ".ini", ".cfg")) and not holds_no_run(p)  # noqa: E731
    found = workspace.find(_TOLERANCE_RE, configs, limit=3)
    return ChecklistPoint(id="metrics", title="Metrics and their tolerances in the configuration", status="passed" if found else "failed",
                          summary="tolerances configured" if found else "no metric target with a tolerance in any configuration",
                          evidence=_evidence(found),
                          missing=[] if found else ["the primary and secondary metrics, their paper values and tolerances, in a config file"])  # fmt: skip


# -- 7. human review ------------------------------------------------------------------------------

_RECORDED_RE = re.compile(r"^\s*-\s+(?:setting|question|symbol|function)\s*:", re.M)
# A review point kept open in the configuration: what the paper leaves open, to settle and record.
_OPEN_ITEM_RE = re.compile(r"^\[open\.[^\]]+\]", re.M)


def _review(workspace: _Workspace) -> ChecklistPoint:
    path = DECISIONS_PATH.as_posix()
    try:
        text = read_regular_file(workspace.root / path, limit=MAX_FILE_BYTES, inside=workspace.root).decode("utf-8", errors="replace")
    except UnreadableFile:
        text = ""
    recorded = [_Line(path, text.count("\n", 0, m.start()), m.group().strip()) for m in _RECORDED_RE.finditer(text)]
    open_items = workspace.find(_OPEN_ITEM_RE, lambda p: p.endswith(".toml"), limit=100)
    summary = ", ".join(part for part in (
        f"{len(recorded)} decision(s) recorded in {path}" if recorded else "",
        f"{len(open_items)} review point(s) open in {open_items[0].file}" if open_items else "",
    ) if part) or f"no decision recorded ({path})"  # fmt: skip
    return ChecklistPoint(id="review", title="Human review points kept", status="passed" if recorded or open_items else "failed",
                          summary=summary, evidence=_evidence(recorded[:3] + open_items[:3]),
                          missing=[] if recorded or open_items else ["review the formula translations and key hyperparameters once; record what changed and why (`paperlens check`'s record actions write " + path + ")"])  # fmt: skip


# -- 8. observability -----------------------------------------------------------------------------

# A trainer that logs and checkpoints by default (Lightning's, Hugging Face's) keeps both.
_TRAINER = r"|\bTrainer\s*\(|\bLightningCLI\s*\("
_LOGGING_RE = re.compile(
    r"\bwandb\.(?:init|log)\s*\(|\bSummaryWriter\s*\(|\bmlflow\.\w+\s*\(|\bFileHandler\s*\(|\b(?:CSV|TensorBoard|Wandb)Logger\b|\binit_trackers\s*\("
    r"|\blogging\.basicConfig\s*\([^)]*filename|\b(?:Text|Tensorboard|Wandb)LoggerHook\b|\blog_config\s*=|\bmetric_writers\.\w+\s*\(" + _TRAINER
)
_ARTIFACTS_RE = re.compile(
    r"\btorch\.save\s*\(|\bsave_checkpoint\s*\(|\bModelCheckpoint\b|\bsave_pretrained\s*\(|\bcheckpoints?\.save\s*\(|\.save_weights\s*\("
    r"|\bsave_model\s*\(|\borbax\b|\bsave_state\s*\(|\bcheckpoint_config\s*=|\bpickle\.dump\s*\(" + _TRAINER
)


def _observability(workspace: _Workspace) -> ChecklistPoint:
    logging = workspace.find(_LOGGING_RE, workspace.code, limit=1)
    artifacts = workspace.find(_ARTIFACTS_RE, workspace.code, limit=1)
    missing = []
    if not logging:
        missing.append("logs written to files or a tracker (TensorBoard, W&B, MLflow), kept with the run")
    if not artifacts:
        missing.append("checkpoints and outputs saved with the run")
    return ChecklistPoint(id="observability", title="The run observable and archived", status="failed" if missing else "passed",
                          summary="logs and checkpoints kept" if not missing else "a run leaves no " + " and no ".join(
                              word for word, found in (("log", logging), ("checkpoint", artifacts)) if not found),
                          evidence=_evidence(logging + artifacts), missing=missing)  # fmt: skip


def checklist(root: Path, include: list[str] | None = None, exclude: list[str] | None = None) -> ChecklistReport:
    """The eight points for the workspace at `root`."""
    workspace = _Workspace(Path(root), include, exclude)
    framework = _framework(workspace)
    points = [
        _randomness(workspace, framework),
        _dependencies(workspace),
        _data(workspace),
        _smoke_test(workspace),
        _seeds(workspace),
        _metrics(workspace),
        _review(workspace),
        _observability(workspace),
    ]
    points = [point.model_copy(update={"fix_at": _fix_place(point, workspace)}) if point.status == "failed" else point for point in points]
    return ChecklistReport(workspace=str(root), framework=framework, points=points)


_README_RE = re.compile(r"readme(?:\.md|\.rst|\.txt)?$", re.I)
_MANIFESTS = ("pyproject.toml", "setup.py", "setup.cfg")
_CONFIG_RE = re.compile(r"(?:^|/)(?:configs?/[^/]+|config)\.(?:ya?ml|toml|json)$")


def _fix_place(point: ChecklistPoint, workspace: _Workspace) -> ChecklistEvidence | None:
    """Where a failed point's fix belongs: beside the code that already does part of it, else in the
    file the fix goes to (the training script, the README, the package manifest)."""
    top = workspace.top  # also those [tool.paperlens] include leaves out
    readme = [ChecklistEvidence(file=path, text="the README") for path in top if _README_RE.match(path)]
    manifest = [ChecklistEvidence(file=path, text="the package manifest") for path in top if path in _MANIFESTS]
    training = [ChecklistEvidence(file=line.file, text="the training code") for line in workspace.find(_TRAINS_RE, workspace.run_code, limit=1)]
    places = {
        "randomness": point.evidence[:1] + training,
        "dependencies": [e for e in point.evidence if e.line is not None and "@sha256:" not in e.text]
        + [ChecklistEvidence(file=path, text="the requirements") for path in top if _REQUIREMENTS_RE.match(path) and path.endswith(".txt")]
        + manifest,
        "data": point.evidence[:1] + training,
        "smoke-test": readme + training,
        "seeds": point.evidence[:1] + readme + training,
        "metrics": [ChecklistEvidence(file=path, text="a configuration") for path in workspace.texts if _CONFIG_RE.search(path)][:1] + manifest,
        "review": manifest,
        "observability": training,
    }[point.id]
    return next(iter(places + readme + manifest), None)


def render_text(report: ChecklistReport) -> str:
    mark = {"passed": "✓", "failed": "✗", "not applicable": "–"}
    passed = sum(point.status == "passed" for point in report.points)
    lines = [f"{report.workspace}: {passed}/{len(report.points)} points of the reproducibility checklist passed"
             + (f" ({report.framework})" if report.framework else ""), ""]  # fmt: skip
    for point in report.points:
        lines.append(f"{mark[point.status]} {point.title}: {point.summary}")
        lines += [f"    {e.file}{f':{e.line + 1}' if e.line is not None else ''}: {e.text}" for e in point.evidence]
        lines += [f"    add: {item}" for item in point.missing]
    return "\n".join(lines) + "\n"


def render_markdown(report: ChecklistReport) -> str:
    lines = [f"# Reproducibility checklist: `{report.workspace}`", "", "| point | status | evidence | to add |", "|---|---|---|---|"]
    for point in report.points:
        evidence = "<br>".join(f"`{e.file}{f':{e.line + 1}' if e.line is not None else ''}` {e.text}".replace("|", "\\|") for e in point.evidence)
        lines.append(f"| {point.title} | {point.status} | {evidence or point.summary} | {'<br>'.join(point.missing).replace('|', chr(92) + '|')} |")
    return "\n".join(lines) + "\n"


def render_sarif(report: ChecklistReport) -> str:
    """SARIF 2.1.0: one result per failed point (a warning), where its fix belongs, else the workspace;
    what to add is its message."""
    rules = [{"id": f"paperlens.checklist.{point.id}", "name": point.title, "shortDescription": {"text": point.title}} for point in report.points]
    results = []
    for index, point in enumerate(report.points):
        if point.status != "failed":
            continue
        where = point.fix_at
        physical: dict = {"artifactLocation": {"uri": where.file if where else ".", "uriBaseId": "WORKSPACE"}}
        if where is not None and where.line is not None:
            physical["region"] = {"startLine": where.line + 1}
        results.append({
            "ruleId": rules[index]["id"],
            "ruleIndex": index,
            "level": "warning",
            "message": {"text": f"{point.title}: {point.summary}. Add: " + "; ".join(point.missing)},
            "locations": [{"physicalLocation": physical}],
        })  # fmt: skip
    base_ids = {"WORKSPACE": Path(report.workspace).resolve().as_uri() + "/"}
    return json.dumps(sarif_log(rules, results, base_ids), indent=2, ensure_ascii=False) + "\n"

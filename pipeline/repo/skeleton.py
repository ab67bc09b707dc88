"""The plan written out as a runnable skeleton (no LLM): `paperlens scaffold PAPER --out DIR`.

Nothing in it guesses. The modules are `scaffold_module`'s (equations quoted, stated constants,
TODOs for gaps, xfail shape tests); `config.toml` holds each planned value with its provenance and
lists the open items, and reading an open setting raises with its question; seeds are fixed;
`python reproduce.py --smoke` runs the whole path on synthetic data and stops cleanly at the first
stub, so the skeleton's tests pass in the sandbox from the start. Files are written atomically, and
an existing file is never overwritten.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Callable
from pathlib import Path

from ...schemas import DEFAULT_SANDBOX_IMAGE, PaperSpec, ReadinessReport
from ...schemas.repo import ConfigValue, PlannedFile, RepoPlan
from ..errors import UserError
from ..files import write_atomically
from ..scaffold import scaffold_module
from .align import DEFAULT_RULE
from .pin import dockerfile_text
from .plan import provenance_counts

PLAN_PATH = Path(".paperlens") / "plan.json"
REQUIREMENTS = ("numpy", "pytest")  # what the skeleton itself imports


def write_skeleton(
    plan: RepoPlan,
    spec: PaperSpec,
    readiness: ReadinessReport,
    out: Path,
    *,
    on_progress: Callable[[str], None] | None = None,
    keep_existing: bool = False,
) -> list[str]:
    """Writes the planned files under `out` and the plan itself (`.paperlens/plan.json`); returns
    the paths written. A file that already holds its planned text is left as it is (an interrupted
    scaffold goes on). Any other existing file is kept as the user's with `keep_existing`; without
    it, UserError before anything is written."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: not a folder")
    texts = {path: text for path, text in skeleton_texts(plan, spec, readiness, out).items() if not _holds(out / path, text)}
    existing = [path for path in texts if (out / path).exists()]
    if keep_existing:
        texts = {path: text for path, text in texts.items() if path not in existing}
    elif existing:
        shown = ", ".join(existing[:5]) + (", …" if len(existing) > 5 else "")
        raise UserError(f"{out}: would overwrite {shown}; scaffold into an empty or new folder")
    for number, (path, text) in enumerate(texts.items(), 1):
        if on_progress:
            on_progress(f"scaffold {number}/{len(texts)}: {path}")
        try:
            write_atomically(out / path, text)
        except OSError as err:
            raise UserError(f"{out / path}: cannot be written ({err.strerror or err})") from None
    return list(texts)


def skeleton_texts(plan: RepoPlan, spec: PaperSpec, readiness: ReadinessReport, out: Path) -> dict[str, str]:
    """Every file of the skeleton by relative path, in the plan's order, the plan last."""
    texts: dict[str, str] = {}
    modules = [f for f in plan.files if f.role == "module"]
    implemented: dict[str, tuple[str, str]] = {}  # equation id → (module, name): stubbed once, imported after
    for planned in plan.files:
        if planned.role == "module":
            stem = Path(planned.path).stem
            module = scaffold_module(
                spec, readiness, planned.source or "", out, package=plan.package, name=stem, provided=implemented
            )
            implemented |= {equation: (stem, name) for equation, name in module.implements.items() if equation not in implemented}
            texts[module.path] = module.text
            texts[module.test_path] = module.test_text
        elif planned.role != "test" or planned.path == "tests/test_reproduce.py":
            texts[planned.path] = _RENDERERS[planned.role](plan, planned, modules, out, spec)
    # A generator bug never reaches the user's folder.
    for path, text in texts.items():
        if path.endswith(".py"):
            compile(text, path, "exec")
        elif path.endswith(".toml"):
            tomllib.loads(text)
    texts[PLAN_PATH.as_posix()] = plan.model_dump_json(indent=2) + "\n"
    return texts


def _holds(path: Path, text: str) -> bool:
    try:
        return path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        return False


# -- one renderer per role ------------------------------------------------------------------------------


def _toml(value: object) -> str:
    """A TOML value: TOML's basic strings take JSON's escapes."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False).replace("\x7f", "\\u007f")  # TOML forbids a raw DEL


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml(key)


def _config_toml(plan: RepoPlan, planned: PlannedFile, modules, out, spec) -> str:
    lines = [
        f"# The settings for reproducing “{plan.paper_title}”, planned by paperlens.",
        "#",
        "# Every value says where it comes from: provenance = \"paper\" (quoted, with its place in the paper),",
        "# \"clarification\" (an author's answer, see .paperlens/decisions.yaml) or \"assumption\" (chosen,",
        "# with the reason). What the paper leaves open is listed under [open.*] and has no value: reading",
        "# it raises with its question. Settle one (ask the authors, or record an assumption), then move it",
        "# under [settings] with its provenance. [metrics.*] are the results the paper reports, each with",
        "# the tolerance a reproduction is held to.",
        "",
    ]
    for value in plan.config:
        lines += _setting_lines(value)
    lines += [
        "[metrics]",
        f"tolerance = {_toml(DEFAULT_RULE)}  # `paperlens align --reported config.toml` holds each metric to its own, else to this",
        "",
    ]
    for metric in plan.metrics:
        lines += [
            f"[metrics.{_toml_key(metric.name)}]",
            f"value = {_toml(metric.value)}",
            *([f"unit = {_toml(metric.unit)}"] if metric.unit else []),
            f"tolerance = {_toml(DEFAULT_RULE)}",
            *([f"quote = {_toml(metric.quote)}"] if metric.quote else []),
            *([f"where = {_toml(metric.location.short())}"] if metric.location else []),
            "",
        ]
    for item in plan.open_items:
        evidence = item.evidence[0]
        lines += [
            f"[open.{_toml_key(item.id)}]",
            *([f"setting = {_toml(item.setting)}"] if item.setting else []),
            f"blocking = {_toml(item.blocking)}",
            f"question = {_toml(item.question)}",
            f"quote = {_toml(evidence.quote)}",
            f"where = {_toml(evidence.location.short())}",
            "",
        ]
    return "\n".join(lines)


def _setting_lines(value: ConfigValue) -> list[str]:
    provenance = value.provenance
    shown = value.value if not isinstance(value.value, float) or math.isfinite(value.value) else value.shown
    return [
        f"[settings.{_toml_key(value.name)}]",
        f"value = {_toml(shown)}",
        *([f"as_written = {_toml(value.shown)}"] if value.unit == "%" else []),
        *([f"unit = {_toml(value.unit)}"] if value.unit else []),
        *([f"component = {_toml(value.component)}"] if value.component else []),
        f"provenance = {_toml(provenance.kind)}",
        f"quote = {_toml(provenance.quote)}",
        f"where = {_toml(provenance.location.short())}",
        *([f"decision = {_toml(provenance.decision_id)}"] if provenance.decision_id else []),
        "",
    ]


def _pyproject(plan: RepoPlan, planned, modules, out: Path, spec) -> str:
    return (
        "[tool.pytest.ini_options]\n"
        'pythonpath = ["."]\n'
        'testpaths = ["tests"]\n'
        "\n"
        "# `paperlens check` compares the code with this paper; `paperlens smoke` runs reproduce.py --smoke.\n"
        "[tool.paperlens]\n"
        f"paper = {_toml(plan.paper_path)}\n"
    )


def _package_init(plan: RepoPlan, planned, modules, out, spec) -> str:
    return f'"""“{plan.paper_title}”, reproduced. Scaffolded by paperlens: see README.md."""\n'


_CONFIG_MODULE = '''"""The run's settings, read from config.toml, each with its provenance.

`load()["learning_rate"]` is a value the paper (or an author, or a recorded assumption) gives;
reading a setting the paper leaves open raises OpenSetting with the question to settle it. There
are no defaults here on purpose: a default would be a guess nobody recorded.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

CONFIG_PATH = Path(__file__).resolve().parent.parent / "config.toml"
PROVENANCES = ("paper", "clarification", "assumption")


class ConfigError(ValueError):
    """config.toml is malformed."""


class OpenSetting(LookupError):
    """The paper leaves this setting open; the message says what to ask."""


@dataclass(frozen=True)
class Setting:
    value: object
    provenance: str
    quote: str
    where: str


@dataclass(frozen=True)
class OpenItem:
    id: str
    setting: str | None
    blocking: bool
    question: str
    where: str


class Config:
    def __init__(self, settings: dict[str, Setting], open_items: list[OpenItem]) -> None:
        self.settings = settings
        self.open_items = open_items

    def __getitem__(self, name: str) -> object:
        if name in self.settings:
            return self.settings[name].value
        for item in self.open_items:
            if item.setting == name:
                raise OpenSetting(
                    f"{name} is left open by the paper ({item.where}): {item.question} "
                    "Settle it, then add it under [settings] in config.toml with its provenance."
                )
        raise KeyError(f"{name} is not in config.toml: add it with its provenance")

    def __contains__(self, name: str) -> bool:
        return name in self.settings


def load(path: Path = CONFIG_PATH) -> Config:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise ConfigError(f"{path}: {err}") from None
    settings = {}
    for name, entry in document.get("settings", {}).items():
        missing = [key for key in ("value", "provenance", "quote", "where") if key not in entry]
        if missing:
            raise ConfigError(f"{path}: [settings.{name}] lacks {', '.join(missing)}")
        if entry["provenance"] not in PROVENANCES:
            raise ConfigError(f"{path}: [settings.{name}] provenance must be one of {', '.join(PROVENANCES)}")
        settings[name] = Setting(entry["value"], entry["provenance"], entry["quote"], entry["where"])
    open_items = [
        OpenItem(key, entry.get("setting"), bool(entry.get("blocking")), entry.get("question", ""), entry.get("where", ""))
        for key, entry in document.get("open", {}).items()
    ]
    return Config(settings, open_items)
'''


def _config_module(plan, planned, modules, out, spec) -> str:
    return _CONFIG_MODULE


def _data_module(plan: RepoPlan, planned, modules, out, spec: PaperSpec) -> str:
    datasets = list(dict.fromkeys(c.name for c in spec.components if c.kind == "dataset"))
    named = ", ".join(datasets) if datasets else "the paper's dataset"
    return f'''"""The data: {named} for the full run (to be written), synthetic arrays for the smoke run."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The smoke run's synthetic data: small enough to run in seconds anywhere.
SMOKE_EXAMPLES = 16
SMOKE_FEATURES = 8
SMOKE_CLASSES = 4


@dataclass
class Split:
    inputs: np.ndarray
    labels: np.ndarray

    def batches(self, batch_size: int):
        for start in range(0, len(self.inputs), batch_size):
            yield self.inputs[start : start + batch_size], self.labels[start : start + batch_size]


@dataclass
class Data:
    train: Split
    test: Split
    classes: int


def synthetic(seed: int) -> Data:
    rng = np.random.default_rng(seed)

    def split() -> Split:
        inputs = rng.standard_normal((SMOKE_EXAMPLES, SMOKE_FEATURES)).astype(np.float32)
        return Split(inputs, rng.integers(0, SMOKE_CLASSES, SMOKE_EXAMPLES))

    return Data(split(), split(), SMOKE_CLASSES)


def load_data(config, *, smoke: bool, seed: int) -> Data:
    if smoke:
        return synthetic(seed)
    raise NotImplementedError({json.dumps(f"load_data: loading {named} is not written yet")})
'''


def _train_module(plan: RepoPlan, planned, modules: list[PlannedFile], out, spec: PaperSpec) -> str:
    algorithm = next((a for a in spec.algorithms if any(m.source == a.id for m in modules)), None)
    uses = ", ".join(f"{plan.package}.{Path(m.path).stem}" for m in modules) or "the method's modules"
    steps = ""
    if algorithm is not None:
        quoted = "\n".join(f"        {n}. {step}" for n, step in enumerate(algorithm.steps, 1))
        steps = f"\n\n    Algorithm {algorithm.number or ''} of the paper ({algorithm.location.short()}):\n\n{quoted}"
    return f'''r"""Training: seeds, the loop, and one step of the method (built from {uses})."""

from __future__ import annotations

import os
import random
from importlib.util import find_spec

import numpy as np

SMOKE_STEPS = 2
SMOKE_BATCH_SIZE = 4
rng_key = None  # with JAX, the run's key: code that draws splits it (JAX has no global seed)


def set_seed(seed: int) -> None:
    """Every source of randomness the run may use, fixed: Python's, NumPy's and each installed
    framework's, with its deterministic operators (PyTorch, TensorFlow; JAX's through XLA_FLAGS,
    set before its first computation)."""
    global rng_key
    random.seed(seed)
    np.random.seed(seed)
    if find_spec("torch") is not None:
        import torch

        torch.manual_seed(seed)
        torch.cuda.manual_seed_all(seed)
        torch.use_deterministic_algorithms(True, warn_only=True)
    if find_spec("tensorflow") is not None:
        import tensorflow as tf

        tf.keras.utils.set_random_seed(seed)
        tf.config.experimental.enable_op_determinism()
    if find_spec("jax") is not None:
        if "--xla_gpu_deterministic_ops" not in os.environ.get("XLA_FLAGS", ""):  # once, whatever the seeds run
            os.environ["XLA_FLAGS"] = " ".join((os.environ.get("XLA_FLAGS", ""), "--xla_gpu_deterministic_ops=true")).strip()
        import jax

        rng_key = jax.random.PRNGKey(seed)


def init_state(config, data) -> dict:
    return {{"step": 0}}


def training_step(state: dict, batch, config) -> dict:
    r"""One optimisation step of the paper's method.{steps}
    """
    raise NotImplementedError("training_step: the paper's training step is not written yet")


def train(config, data, *, smoke: bool) -> dict:
    """The training loop: a few steps on the smoke data, else the paper's schedule."""
    batch_size = SMOKE_BATCH_SIZE if smoke else config["batch_size"]
    steps = SMOKE_STEPS if smoke else None
    state = init_state(config, data)
    for number, batch in enumerate(data.train.batches(batch_size)):
        if steps is not None and number == steps:
            break
        state = training_step(state, batch, config)
        state["step"] += 1
    return state
'''


def _evaluate_module(plan: RepoPlan, planned, modules, out, spec) -> str:
    reported = "\n".join(
        f"    - {m.name}: {m.value:g}{m.unit or ''}" + (f" ({m.location.short()})" if m.location else "") for m in plan.metrics
    )
    names = ", ".join(m.name for m in plan.metrics) or "the paper's metrics"
    listed = f"\n\n    What the paper reports (runs report on the same scale):\n\n{reported}" if reported else ""
    return f'''"""Evaluation: the metrics the paper reports, measured on the test split."""

from __future__ import annotations


def evaluate(state: dict, data, config) -> dict[str, float]:
    """{names}, by name, as `paperlens align` compares them with the paper.{listed}
    """
    raise NotImplementedError("evaluate: measuring {names} is not written yet")
'''


def _reproduce_script(plan: RepoPlan, planned, modules, out, spec) -> str:
    package = plan.package
    return f'''"""Reproduce “{plan.paper_title}”, scaffolded by paperlens.

    python reproduce.py --smoke              # a few steps on synthetic data: the whole path runs
    python reproduce.py                      # the full run, seeds 0 1 2, into runs/seed-N/
    paperlens align --reported config.toml runs   # compare with the paper's results, each within its tolerance

Each run writes metrics.json (its seed, the metrics measured, and its status: "complete", or the
stub it stopped at in a smoke run; a full run never hides a stub), its log (run.log), its final
state (state.pkl) and the environment it ran in (environment.json: Python, platform, packages, the
image's digest when the sandbox gives it); summary.json gives each metric's mean ± std over seeds.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import pickle
import platform
import statistics
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from {package}.config import load
from {package}.data import load_data
from {package}.evaluate import evaluate
from {package}.train import set_seed, train


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a few steps on synthetic data")
    parser.add_argument("--seeds", type=int, nargs="+", help="default: 0 1 2 (0 with --smoke)")
    parser.add_argument("--out", type=Path, help="default: runs/, or a temporary folder with --smoke")
    args = parser.parse_args(argv)
    config = load()
    out = args.out or (Path(tempfile.mkdtemp(prefix="smoke-")) if args.smoke else Path("runs"))
    seeds = args.seeds or ([0] if args.smoke else [0, 1, 2])
    measured: list[dict] = []
    for seed in seeds:
        run = out / f"seed-{{seed}}"
        run.mkdir(parents=True, exist_ok=True)
        log = logging.FileHandler(run / "run.log", encoding="utf-8")
        logging.basicConfig(level=logging.INFO, handlers=[log], force=True)
        logging.info("seed %d, smoke %s", seed, args.smoke)
        set_seed(seed)
        try:
            data = load_data(config, smoke=args.smoke, seed=seed)
            state = train(config, data, smoke=args.smoke)
            metrics, status = evaluate(state, data, config), "complete"
            with open(run / "state.pkl", "wb") as file:
                pickle.dump(state, file)
        except NotImplementedError as stub:
            if not args.smoke:
                raise
            metrics, status = {{}}, f"stopped at a stub: {{stub}}"
        logging.info("%s: %s", status, metrics)
        log.close()
        record = {{"seed": seed, "smoke": args.smoke, "status": status, "metrics": metrics}}
        (run / "metrics.json").write_text(json.dumps(record, indent=2) + "\\n", encoding="utf-8")
        (run / "environment.json").write_text(json.dumps(_environment(), indent=2) + "\\n", encoding="utf-8")
        measured.append(metrics)
        print(f"seed {{seed}}: {{status}} -> {{run / 'metrics.json'}}")
    summary = {{
        name: {{"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0, "runs": len(values)}}
        for name in sorted({{name for metrics in measured for name in metrics}})
        if (values := [float(metrics[name]) for metrics in measured if name in metrics])
    }}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\\n", encoding="utf-8")
    return 0


def _environment() -> dict:
    """What the run ran in: enough to run it again the same way."""
    return {{
        "python": sys.version,
        "platform": platform.platform(),
        "image_digest": os.environ.get("PAPERLENS_IMAGE_DIGEST"),
        "packages": sorted(f"{{d.metadata['Name']}}=={{d.version}}" for d in metadata.distributions() if d.metadata["Name"]),
    }}


if __name__ == "__main__":
    sys.exit(main())
'''


def _reproduce_test(plan: RepoPlan, planned, modules, out, spec) -> str:
    package = plan.package
    return f'''"""The smoke path runs end to end, and config.toml keeps its promises."""

import json

import pytest

import reproduce
from {package}.config import PROVENANCES, OpenSetting, load


def test_the_smoke_run_writes_metrics_for_each_seed(tmp_path):
    assert reproduce.main(["--smoke", "--seeds", "0", "1", "--out", str(tmp_path)]) == 0
    for seed in (0, 1):
        record = json.loads((tmp_path / f"seed-{{seed}}" / "metrics.json").read_text())
        assert record["seed"] == seed and record["smoke"] is True
        assert record["status"] == "complete" or record["status"].startswith("stopped at a stub")


def test_every_setting_has_its_provenance():
    config = load()
    for name, setting in config.settings.items():
        assert setting.provenance in PROVENANCES, name
        assert setting.quote.strip() and setting.where.strip(), name


def test_an_open_setting_is_never_given_a_value():
    config = load()
    for item in config.open_items:
        if item.setting:
            assert item.setting not in config, f"{{item.setting}} is open ({{item.id}}) and also has a value"
            with pytest.raises(OpenSetting, match=item.setting):
                config[item.setting]
'''


def _requirements(plan, planned, modules, out, spec) -> str:
    return "".join(f"{name}\n" for name in REQUIREMENTS)


def _dockerfile(plan, planned, modules, out, spec) -> str:
    return dockerfile_text(DEFAULT_SANDBOX_IMAGE, None, [])


def _readme(plan: RepoPlan, planned, modules: list[PlannedFile], out, spec) -> str:
    kinds = provenance_counts(plan)
    blocking = [item for item in plan.open_items if item.blocking]
    lines = [
        f"# {plan.paper_title}: a reproduction",
        "",
        f"Scaffolded by paperlens from `{plan.paper_path}`. The modules quote the equations they implement",
        "and raise `NotImplementedError` until written; nothing the paper leaves open is filled in.",
        "",
        "```sh",
        "python reproduce.py --smoke         # the whole path on synthetic data (stops cleanly at a stub)",
        "python -m pytest                    # shape tests (expected failures while stubs) and the smoke test",
        "paperlens check .                   # the code against the paper",
        "paperlens reproduce PAPER --out .   # generate, pin, run and repair (needs an LLM endpoint)",
        "python reproduce.py --seeds 0 1 2   # the full run, once every open item is settled",
        "paperlens align --reported config.toml runs   # measured vs reported metrics, each within its tolerance",
        "```",
        "",
        "## Modules",
        "",
        *(f"- `{m.path}`: {m.purpose}" for m in modules),
        "",
        "## Settings",
        "",
        (f"`config.toml` holds {len(plan.config)} values: {kinds['paper']} stated by the paper, "
         f"{kinds['clarification']} from the authors' answers, {kinds['assumption']} recorded assumptions — each "
         "with its quote and place."),
        "",
        f"## Open items ({len(plan.open_items)}, {len(blocking)} blocking)",
        "",
        "What the paper leaves open. Ask the authors (`paperlens gaps PAPER --format markdown`), or record an",
        "assumption, then settle it in `config.toml`.",
        "",
    ]
    for item in plan.open_items:
        evidence = item.evidence[0]
        quote = evidence.quote if len(evidence.quote) <= 160 else evidence.quote[:159] + "…"
        lines += [
            f"- **{'blocking' if item.blocking else 'routine'}** — {item.question}",
            f"  > “{quote}” ({evidence.location.short()})",
        ]
    if plan.metrics:
        lines += ["", "## Reported results", ""]
        lines += [f"- {m.name}: {m.value:g}{m.unit or ''} — “{m.quote}”" for m in plan.metrics]
    return "\n".join(lines) + "\n"


# By role; the config role's three files by name.
_CONFIG_RENDERERS = {"config.toml": _config_toml, "pyproject.toml": _pyproject}
_RENDERERS = {
    "config": lambda plan, planned, *rest: _CONFIG_RENDERERS.get(planned.path, _config_module)(plan, planned, *rest),
    "package": _package_init,
    "data": _data_module,
    "train": _train_module,
    "evaluate": _evaluate_module,
    "reproduce": _reproduce_script,
    "test": _reproduce_test,
    "requirements": _requirements,
    "dockerfile": _dockerfile,
    "docs": _readme,
}

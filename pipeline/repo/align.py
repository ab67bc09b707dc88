"""Align: do a reproduction's runs (one per seed) measure what the paper reports?

Per metric the paper reports, the runs that measured it give values, their mean and their sample
standard deviation (none under two runs). A tolerance rule turns these into an accepted range and
a verdict:

- `absolute:v`: aligned when |mean − paper| ≤ v; the range is paper ± v.
- `relative:v` (or `relative:p%`): aligned when |mean − paper| ≤ v·|paper|; the range is paper ± v·|paper|.
- `interval:c` (0 < c < 1): the range is the prediction interval for one new run,
  mean ± t_{n−1,(1+c)/2} · s · sqrt(1 + 1/n), and the metric is aligned when the paper's value lies
  in it. It needs two runs or more, else the verdict is "undetermined"; s = 0 gives the degenerate
  interval [mean, mean].

A metric no run measured is "undetermined"; a non-finite value (NaN, ±inf) is ignored and the
reason says so. Range ends are inclusive (up to floating-point rounding). Overall: "not-aligned"
when any metric is, "aligned" when every metric is (and there is one), else "undetermined".

The Student-t quantile is computed here (no SciPy): the t distribution's tail is a regularized
incomplete beta function, evaluated by its continued fraction and inverted by bisection.

`read_runs` and `read_reported` read the inputs strictly (a `UserError` names the file and what is
wrong); `alignment_markdown` renders a report; `write_alignment` writes it as `alignment.md` with
the plot `alignment.png`, each atomically.
"""

from __future__ import annotations

import io
import json
import math
import tomllib
from pathlib import Path
from statistics import fmean, stdev
from typing import Any

import yaml
from pydantic import TypeAdapter, ValidationError

from ...schemas.repo import (
    AlignmentReport,
    MetricAlignment,
    MetricRun,
    RepoPlan,
    ReportedMetric,
    ToleranceRule,
)
from ..errors import UserError
from ..files import write_atomically
from ..nesting import TooDeep, load_json, load_yaml

RULE_FORMS = (
    'accepted forms: "absolute:0.5" (|mean − paper| ≤ 0.5), "relative:0.05" or "relative:5%" '
    '(within 5% of the paper\'s value), "interval:0.95" (the paper\'s value inside the runs\' 95% prediction interval)'
)
DEFAULT_RULE = "relative:0.02"
RUN_SHAPE = '{"seed": 1, "metrics": {"accuracy": 0.9}}'
REPORTED_SHAPES = '{"metrics": [{"name": ..., "value": ...}, ...]}, a list of such metrics, or a repository plan'

# Bounds computed in floating point (76.1 + 0.5) can miss a value the rule accepts exactly by one
# rounding step; a relative slack far below any metric's precision keeps the range ends inclusive.
_ROUNDING_SLACK = 1e-9


# -- the tolerance rule --------------------------------------------------------------------------


def parse_rule(text: str) -> ToleranceRule:
    """`absolute:0.5`, `relative:0.05` / `relative:5%`, or `interval:0.95` as a rule."""
    kind, colon, number = text.strip().partition(":")
    kind = kind.strip().lower()
    if not colon or kind not in ("absolute", "relative", "interval"):
        raise UserError(f"tolerance rule {text!r} is not understood; {RULE_FORMS}")
    number = number.strip()
    percent = number.endswith("%")
    if percent:
        if kind == "absolute":
            raise UserError(f"tolerance rule {text!r}: an absolute tolerance is in the metric's units, not a percentage; {RULE_FORMS}")
        number = number[:-1].strip()
    try:
        value = float(number)
    except ValueError:
        raise UserError(f"tolerance rule {text!r}: {number!r} is not a number; {RULE_FORMS}") from None
    if percent:
        value /= 100
    if not math.isfinite(value) or value <= 0:
        raise UserError(f"tolerance rule {text!r}: the tolerance must be a positive number; {RULE_FORMS}")
    rule = ToleranceRule(kind=kind, value=value)
    _check_rule(rule)
    return rule


def _check_rule(rule: ToleranceRule) -> None:
    # The schema only knows value > 0; a confidence of 1 or more has no finite interval.
    if rule.kind == "interval" and rule.value >= 1:
        raise UserError(f"tolerance rule interval:{rule.value:g}: the confidence must be below 1, e.g. interval:0.95")


def _rule_in_words(rule: ToleranceRule) -> str:
    if rule.kind == "absolute":
        return f"the runs' mean must be within ±{_number(rule.value)} of the paper's value (absolute tolerance)."
    if rule.kind == "relative":
        return f"the runs' mean must be within ±{_percent(rule.value)} of the paper's value (relative tolerance)."
    return (
        f"the paper's value must lie inside the {_percent(rule.value)} prediction interval for one new run, "
        "mean ± t·s·√(1 + 1/n) from the runs' mean and sample standard deviation (needs two runs or more)."
    )


# -- Student's t quantile ------------------------------------------------------------------------


def student_t_quantile(probability: float, degrees_of_freedom: float) -> float:
    """The t with P(T ≤ t) = `probability` for Student's t distribution with `degrees_of_freedom`."""
    if not 0 < probability < 1:
        raise ValueError(f"probability must be strictly between 0 and 1, not {probability}")
    if not degrees_of_freedom > 0:
        raise ValueError(f"degrees of freedom must be positive, not {degrees_of_freedom}")
    if probability < 0.5:
        return -student_t_quantile(1 - probability, degrees_of_freedom)
    # For t ≥ 0, P(T > t) = I_x(ν/2, 1/2) / 2 with x = ν / (ν + t²), increasing in x: bisect on
    # x in (0, 1], a bounded interval, until it no longer shrinks, then map x back to t.
    upper_tail = 1 - probability
    half_nu = degrees_of_freedom / 2
    low, high = 0.0, 1.0
    while (middle := (low + high) / 2) not in (low, high):
        if _regularized_incomplete_beta(half_nu, 0.5, middle) / 2 > upper_tail:
            high = middle
        else:
            low = middle
    x = (low + high) / 2
    return math.sqrt(degrees_of_freedom * (1 - x) / x)


def _regularized_incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b). Its continued fraction converges fast for x < (a + 1) / (a + b + 2); the symmetry
    I_x(a, b) = 1 − I_{1−x}(b, a) covers the other side."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    if x > (a + 1) / (a + b + 2):
        return 1 - _regularized_incomplete_beta(b, a, 1 - x)
    log_front = a * math.log(x) + b * math.log1p(-x) + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    return math.exp(log_front) / (a * _beta_continued_fraction(a, b, x))


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """1 + d1/(1 + d2/(1 + …)) with d_{2m+1} = −(a+m)(a+b+m)x / ((a+2m)(a+2m+1)) and
    d_{2m} = m(b−m)x / ((a+2m−1)(a+2m)), evaluated by the modified Lentz method."""
    tiny = 1e-300  # stands in for a zero denominator, as the Lentz method prescribes
    value, numerator_ratio, denominator_ratio = 1.0, 1.0, 0.0
    for step in range(1, 10_000):
        m = step // 2
        if step % 2:
            coefficient = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        else:
            coefficient = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        denominator_ratio = 1 + coefficient * denominator_ratio
        denominator_ratio = 1 / (denominator_ratio if abs(denominator_ratio) > tiny else tiny)
        numerator_ratio = 1 + coefficient / numerator_ratio
        numerator_ratio = numerator_ratio if abs(numerator_ratio) > tiny else tiny
        change = numerator_ratio * denominator_ratio
        value *= change
        if abs(change - 1) < 1e-15:
            return value
    raise ArithmeticError(f"the incomplete beta continued fraction did not converge for a={a}, b={b}, x={x}")


# -- alignment -----------------------------------------------------------------------------------


def align_metrics(reported: list[ReportedMetric], runs: list[MetricRun], rule: ToleranceRule) -> AlignmentReport:
    """Each reported metric compared with the runs under its own tolerance rule, else `rule`, and the
    overall verdict."""
    _check_rule(rule)
    alignments = [_align_metric(metric, runs, rule) for metric in reported]
    verdicts = {alignment.verdict for alignment in alignments}
    if "not-aligned" in verdicts:
        overall = "not-aligned"
    elif verdicts == {"aligned"}:
        overall = "aligned"
    else:  # some undetermined, or nothing reported at all
        overall = "undetermined"
    return AlignmentReport(rule=rule, runs=len(runs), metrics=alignments, verdict=overall)


def _align_metric(metric: ReportedMetric, runs: list[MetricRun], default: ToleranceRule) -> MetricAlignment:
    own = parse_rule(metric.tolerance) if metric.tolerance else None
    rule = own or default
    values: list[float] = []
    ignored: list[str] = []
    for index, run in enumerate(runs):
        if metric.name not in run.metrics:
            continue
        value = run.metrics[metric.name]
        if math.isfinite(value):
            values.append(value)
        else:
            ignored.append(f"{_run_name(run, index)} ({value})")
    mean = fmean(values) if values else None
    std = stdev(values) if len(values) >= 2 else None
    low, high, verdict, reason = _judge(metric, values, mean, std, rule)
    if ignored:
        reason += f"; ignored the non-finite {'value' if len(ignored) == 1 else 'values'} of {', '.join(ignored)}"
    return MetricAlignment(
        name=metric.name, paper_value=metric.value, values=values, mean=mean, std=std, low=low, high=high,
        verdict=verdict, reason=reason + ".", reported=metric, rule=own if own != default else None,
    )  # fmt: skip


def _judge(
    metric: ReportedMetric, values: list[float], mean: float | None, std: float | None, rule: ToleranceRule
) -> tuple[float | None, float | None, str, str]:
    """(low, high, verdict, reason without its final period)."""
    paper = metric.value
    if not math.isfinite(paper):
        return None, None, "undetermined", f"the paper's value {paper} is not a finite number"
    if rule.kind == "interval":
        return _judge_interval(paper, values, mean, std, rule.value)
    allowed = rule.value if rule.kind == "absolute" else rule.value * abs(paper)
    low, high = paper - allowed, paper + allowed
    if mean is None:
        return low, high, "undetermined", f"no run measured {metric.name}"
    allowed_words = _number(allowed) if rule.kind == "absolute" else f"{_percent(rule.value)} ({_number(allowed)})"
    measured = f"the mean of {_runs(len(values))}, {_number(mean)},"
    if _inside(mean, low, high):
        difference = f"{mean - paper:+.6g}"
        return low, high, "aligned", f"{measured} is within {allowed_words} of the paper's {_number(paper)} (difference {difference})"
    side = "above" if mean > paper else "below"
    return low, high, "not-aligned", (
        f"{measured} is {_number(abs(mean - paper))} {side} the paper's {_number(paper)}, "
        f"more than the {allowed_words} allowed"
    )


def _judge_interval(
    paper: float, values: list[float], mean: float | None, std: float | None, confidence: float
) -> tuple[float | None, float | None, str, str]:
    if mean is None or std is None:
        measured = "no run measured it" if mean is None else f"only one run measured it ({_number(mean)})"
        return None, None, "undetermined", f"a prediction interval needs two runs or more and {measured}"
    n = len(values)
    half_width = student_t_quantile((1 + confidence) / 2, n - 1) * std * math.sqrt(1 + 1 / n)
    low, high = mean - half_width, mean + half_width
    interval = (
        f"the {_percent(confidence)} prediction interval [{_number(low)}, {_number(high)}] of {_runs(n)} "
        f"(mean {_number(mean)}, std {_number(std)})"
    )
    if _inside(paper, low, high):
        return low, high, "aligned", f"the paper's {_number(paper)} lies inside {interval}"
    side = "above" if paper > high else "below"
    return low, high, "not-aligned", f"the paper's {_number(paper)} lies {side} {interval}"


def _inside(value: float, low: float, high: float) -> bool:
    slack = _ROUNDING_SLACK * max(abs(low), abs(high))
    return low - slack <= value <= high + slack


def _run_name(run: MetricRun, index: int) -> str:
    return f"seed {run.seed}" if run.seed is not None else f"run {index + 1}"


def _runs(count: int) -> str:
    return f"{count} run" if count == 1 else f"{count} runs"


def _number(value: float) -> str:
    return f"{value:.6g}"


def _percent(fraction: float) -> str:
    return f"{fraction * 100:.6g}%"


# -- reading the inputs --------------------------------------------------------------------------


def read_runs(paths: list[Path]) -> list[MetricRun]:
    """The runs in `paths`: JSON files holding a run (or a list of runs), or folders searched
    recursively for `metrics.json` files."""
    runs: list[MetricRun] = []
    for path in paths:
        if path.is_dir():
            files = sorted(found for found in path.rglob("metrics.json") if found.is_file())
            if not files:
                raise UserError(f"{path}: no metrics.json file in this folder or below")
        elif path.is_file():
            files = [path]
        else:
            raise UserError(f"{path}: no such file or folder")
        for file in files:
            runs.extend(_runs_in_file(file))
    if not runs:
        raise UserError("no runs found: give run files or folders" if not paths else
                        f"no complete full runs found in {', '.join(map(str, paths))} (smoke runs and runs stopped "
                        "at a stub measure nothing)")  # fmt: skip
    return runs


def _runs_in_file(path: Path) -> list[MetricRun]:
    data = _load_json(path)
    if isinstance(data, dict):
        items = [data]
    elif isinstance(data, list):
        items = data
    else:
        raise UserError(f"{path}: expected a run such as {RUN_SHAPE} or a list of them, found {_shape_of(data)}")
    runs = []
    for index, item in enumerate(items):
        if isinstance(item, dict) and ("smoke" in item or "status" in item):
            # Written by a scaffolded reproduce.py: only a complete, full run measured anything.
            if item.get("smoke") or item.get("status") != "complete":
                continue
            item = {key: value for key, value in item.items() if key not in ("smoke", "status")}
        try:
            # Strict: a metric written as true or "0.9" is a producer's bug, not a number to guess.
            runs.append(MetricRun.model_validate(item, strict=True))
        except ValidationError as err:
            where = f" (run {index + 1} of the list)" if isinstance(data, list) else ""
            raise UserError(f"{path}{where}: not a run ({_errors_in_words(err)}); expected {RUN_SHAPE}") from None
    return runs


def read_reported(path: Path) -> list[ReportedMetric]:
    """The metrics the paper reports, from a YAML or JSON file: `{"metrics": [...]}`, a list of
    metrics, or a repository plan (its `metrics`); or from a scaffold's config.toml, each metric with
    the tolerance its [metrics] table gives (its own, else the table's)."""
    if path.is_dir():
        raise UserError(f"{path}: is a folder; expected a YAML or JSON file with {REPORTED_SHAPES}")
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    if path.suffix.lower() == ".toml":
        return _reported_in_config(path)
    data = _load_json(path) if path.suffix.lower() == ".json" else _load_yaml(path)
    if isinstance(data, dict) and ("paper_title" in data or "files" in data):
        try:
            metrics = RepoPlan.model_validate(data).metrics
        except ValidationError as err:
            raise UserError(f"{path}: not a valid repository plan ({_errors_in_words(err)})") from None
        if not metrics:
            raise UserError(f"{path}: the repository plan lists no reported metrics")
        return metrics
    if isinstance(data, dict) and set(data) == {"metrics"}:
        items = data["metrics"]
    elif isinstance(data, list):
        items = data
    else:
        raise UserError(f"{path}: expected {REPORTED_SHAPES}; found {_shape_of(data)}")
    try:
        # Lax: PyYAML reads 1e-3 (no dot) as a string, which pydantic turns into the number it is.
        metrics = TypeAdapter(list[ReportedMetric]).validate_python(items)
    except ValidationError as err:
        raise UserError(f"{path}: not a list of reported metrics ({_errors_in_words(err)}); expected {REPORTED_SHAPES}") from None
    if not metrics:
        raise UserError(f"{path}: lists no reported metrics")
    return metrics


def _reported_in_config(path: Path) -> list[ReportedMetric]:
    try:
        table = tomllib.loads(_read_text(path)).get("metrics")
    except tomllib.TOMLDecodeError as err:
        raise UserError(f"{path}: not valid TOML ({err})") from None
    except RecursionError:
        raise UserError(f"{path}: nested too deeply to be a configuration") from None
    if not isinstance(table, dict):
        raise UserError(f"{path}: no [metrics] table (each reported metric as [metrics.NAME] with its value and tolerance)")
    default = table.get("tolerance")
    items = [{"tolerance": default, "name": name, **entry} for name, entry in table.items() if isinstance(entry, dict)]
    try:
        metrics = TypeAdapter(list[ReportedMetric]).validate_python([{k: v for k, v in item.items() if k != "where"} for item in items])
    except ValidationError as err:
        raise UserError(f"{path}: [metrics] is not a list of reported metrics ({_errors_in_words(err)})") from None
    for metric in metrics:
        if metric.tolerance is not None:
            try:
                parse_rule(metric.tolerance)
            except UserError as err:
                raise UserError(f"{path}: [metrics.{metric.name}] {err}") from None
    if not metrics:
        raise UserError(f"{path}: [metrics] lists no reported metric")
    return metrics


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UserError(f"{path}: cannot be read ({err})") from None


def _load_json(path: Path) -> Any:
    try:
        return load_json(_read_text(path))
    except TooDeep as err:
        raise UserError(f"{path}: {err}") from None
    except json.JSONDecodeError as err:
        raise UserError(f"{path}: not valid JSON ({err.msg} at line {err.lineno}, column {err.colno})") from None


def _load_yaml(path: Path) -> Any:
    try:
        return load_yaml(_read_text(path))
    except TooDeep as err:
        raise UserError(f"{path}: {err}") from None
    except yaml.YAMLError as err:
        raise UserError(f"{path}: not valid YAML ({' '.join(str(err).split())})") from None


def _shape_of(data: Any) -> str:
    if data is None:
        return "an empty document"
    if isinstance(data, dict):
        return f"an object with keys {', '.join(map(str, data))}" if data else "an empty object"
    return f"a {type(data).__name__} ({str(data)[:40]!r})"


def _errors_in_words(err: ValidationError, shown: int = 3) -> str:
    errors = err.errors()
    words = []
    for error in errors[:shown]:
        where = ", ".join(f"item {part + 1}" if isinstance(part, int) else str(part) for part in error["loc"])
        words.append(f"{where}: {error['msg']}" if where else error["msg"])
    more = f"; and {len(errors) - shown} more" if len(errors) > shown else ""
    return "; ".join(words) + more


# -- the report ----------------------------------------------------------------------------------

MARKDOWN_NAME = "alignment.md"
PLOT_NAME = "alignment.png"

_VERDICT_COLOURS = {"aligned": "#1a7f37", "not-aligned": "#c62828", "undetermined": "#6e6e6e"}
_LABEL_BOX = {"facecolor": "white", "alpha": 0.85, "edgecolor": "none", "pad": 1}  # text stays legible over the lines


def write_alignment(report: AlignmentReport, out_dir: Path) -> Path:
    """Writes `alignment.md` and `alignment.png` into `out_dir`; returns the Markdown's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    # The image first: the Markdown never links to a plot that is not there yet.
    write_atomically(out_dir / PLOT_NAME, _plot_png(report))
    markdown_path = out_dir / MARKDOWN_NAME
    write_atomically(markdown_path, alignment_markdown(report).encode("utf-8"))
    return markdown_path


def alignment_markdown(report: AlignmentReport) -> str:
    """The report in Markdown: the overall verdict first, the rule, a table, a reason per metric and
    the plot, linked as `alignment.png` beside it."""
    counts = {verdict: sum(m.verdict == verdict for m in report.metrics) for verdict in _VERDICT_COLOURS}
    lines = [
        f"# Alignment with the paper: {report.verdict}",
        "",
        (
            f"**Overall: {report.verdict}** — {counts['aligned']} aligned, {counts['not-aligned']} not aligned, "
            f"{counts['undetermined']} undetermined, of {len(report.metrics)} reported "
            f"{'metric' if len(report.metrics) == 1 else 'metrics'}."
        ),
        "",
        f"Rule (`{report.rule.kind}:{report.rule.value:g}`): {_rule_in_words(report.rule)}",
        "",
        f"Runs: {report.runs}.",
        "",
        "| Metric | Paper | Mean ± std | n | Accepted range | Verdict |",
        "|---|---:|---:|---:|---|---|",
    ]
    for metric in report.metrics:
        lines.append(
            f"| {_cell(_name_with_unit(metric))} | {_number(metric.paper_value)} | {_mean_and_std(metric)} | {len(metric.values)} "
            f"| {_accepted_range(metric)} | {metric.verdict} |"
        )
    lines += ["", "## Reasons", ""]
    lines += [
        f"- **{_cell(metric.name)}** ({metric.verdict}{f', its own rule `{metric.rule.kind}:{metric.rule.value:g}`' if metric.rule else ''}): {metric.reason}"
        for metric in report.metrics
    ]
    lines += ["", f"![Each run's value, the mean ± std, the paper's value and the accepted range, per metric]({PLOT_NAME})", ""]
    return "\n".join(lines)


def _name_with_unit(metric: MetricAlignment) -> str:
    unit = metric.reported.unit
    return f"{metric.name} ({unit})" if unit else metric.name


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _mean_and_std(metric: MetricAlignment) -> str:
    if metric.mean is None:
        return "—"
    return _number(metric.mean) if metric.std is None else f"{_number(metric.mean)} ± {_number(metric.std)}"


def _accepted_range(metric: MetricAlignment) -> str:
    return "—" if metric.low is None or metric.high is None else f"[{_number(metric.low)}, {_number(metric.high)}]"


def _plot_png(report: AlignmentReport) -> bytes:
    """One row per metric on its own scale: runs as points, mean ± std, the paper's value as a line,
    the accepted range shaded."""
    # Imported here: matplotlib takes long to import and only this function needs it.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    rows = max(len(report.metrics), 1)
    figure = Figure(figsize=(9, 0.9 + 1.5 * rows), dpi=110, layout="constrained")
    FigureCanvasAgg(figure)
    axes_list = figure.subplots(rows, 1, squeeze=False)[:, 0]
    if not report.metrics:
        axes_list[0].set_axis_off()
        axes_list[0].text(0.5, 0.5, "No reported metrics", ha="center", va="center", fontsize=12)
    for axes, metric in zip(axes_list, report.metrics):
        _plot_metric(axes, metric)
    figure.legend(
        handles=[
            Line2D([], [], marker="o", linestyle="none", color="#1f77b4", alpha=0.75, label="run"),
            Line2D([], [], marker="s", color="black", label="mean ± std"),
            Line2D([], [], color="#e07000", linestyle="--", linewidth=2, label="paper"),
            Patch(facecolor="#9ecae1", alpha=0.5, label="accepted range"),
        ],
        loc="outside upper center", ncols=4, frameon=False, fontsize=10,
    )  # fmt: skip
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _plot_metric(axes: Any, metric: MetricAlignment) -> None:
    colour = _VERDICT_COLOURS[metric.verdict]
    axes.set_title(f"{metric.name}: {metric.verdict}", loc="left", fontsize=11, color=colour, fontweight="bold")
    axes.set_yticks([])
    axes.set_ylim(-1, 1)
    left, right = _x_limits(metric)
    axes.set_xlim(left, right)
    axes.tick_params(axis="x", labelsize=9)
    axes.grid(axis="x", alpha=0.3)
    if metric.low is not None and metric.high is not None:
        axes.axvspan(metric.low, metric.high, color="#9ecae1", alpha=0.5, linewidth=0)
    if math.isfinite(metric.paper_value):
        axes.axvline(metric.paper_value, color="#e07000", linestyle="--", linewidth=2)
        # The label goes on the side of the line with more room, so it never leaves the panel.
        on_right = metric.paper_value < (left + right) / 2
        axes.annotate(
            f"paper {_number(metric.paper_value)}", (metric.paper_value, 1), xytext=(4 if on_right else -4, -4),
            textcoords="offset points", ha="left" if on_right else "right", va="top", fontsize=9, color="#e07000",
        )  # fmt: skip
    if metric.values:
        # Spread the runs vertically so equal values stay visible as separate points.
        heights = [0.1 + 0.4 * i / max(len(metric.values) - 1, 1) for i in range(len(metric.values))]
        axes.scatter(metric.values, heights, color="#1f77b4", alpha=0.75, s=36, zorder=3)
    if metric.mean is not None:
        axes.errorbar(metric.mean, -0.4, xerr=metric.std, fmt="s", color="black", capsize=5, markersize=6, zorder=3)
        axes.annotate(
            _mean_and_std(metric), (metric.mean, -0.4), xytext=(0, -9), textcoords="offset points",
            ha="center", va="top", fontsize=9, bbox=_LABEL_BOX,
        )  # fmt: skip
    else:
        axes.text(
            0.5, -0.4, "no run measured it", transform=axes.get_yaxis_transform(), ha="center", fontsize=9, color=colour,
            bbox=_LABEL_BOX,
        )  # fmt: skip


def _x_limits(metric: MetricAlignment) -> tuple[float, float]:
    shown = [v for v in (metric.paper_value, metric.low, metric.high) if v is not None and math.isfinite(v)]
    shown += metric.values
    if metric.mean is not None:
        shown += [metric.mean - (metric.std or 0), metric.mean + (metric.std or 0)]
    if not shown:
        return 0.0, 1.0
    low, high = min(shown), max(shown)
    margin = (high - low) * 0.12 or max(abs(low) * 0.05, 1e-3)  # a single point still gets some room
    return low - margin, high + margin

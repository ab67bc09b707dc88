"""The align step: runs (one per seed) compared with the metrics the paper reports.

Expected numbers come from outside the code under test: a published t table, the closed forms of
the t quantile for one and two degrees of freedom, and means, deviations and intervals worked out
by hand in the comments.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from paperlens.pipeline.cli import main
from paperlens.pipeline.errors import UserError
from paperlens.pipeline.repo.align import (
    align_metrics,
    alignment_markdown,
    parse_rule,
    read_reported,
    read_runs,
    student_t_quantile,
    write_alignment,
)
from paperlens.schemas.repo import MetricRun, RepoPlan, ReportedMetric, ToleranceRule

from .conftest import EXAMPLE_PAPER


def runs_measuring(name: str, *values: float) -> list[MetricRun]:
    """One run per value, seeds 1, 2, …"""
    return [MetricRun(seed=seed, metrics={name: value}) for seed, value in enumerate(values, start=1)]


def align_one(paper: float, values: tuple[float, ...], rule: str):
    """The alignment of a single metric `m` reported as `paper` and measured as `values`."""
    report = align_metrics([ReportedMetric(name="m", value=paper)], runs_measuring("m", *values), parse_rule(rule))
    return report.metrics[0]


# -- Student's t quantile -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("probability", "degrees_of_freedom", "table_value"),
    [(0.975, 1, 12.7062), (0.975, 4, 2.7764), (0.975, 9, 2.2622), (0.95, 30, 1.6973)],
)
def test_t_quantile_matches_the_published_table(probability, degrees_of_freedom, table_value):
    # The table rounds to four decimals.
    assert student_t_quantile(probability, degrees_of_freedom) == pytest.approx(table_value, abs=5e-5)


@pytest.mark.parametrize("probability", [0.55, 0.8, 0.9, 0.975, 0.995, 0.9999])
def test_t_quantile_matches_the_closed_forms_for_one_and_two_degrees_of_freedom(probability):
    cauchy = math.tan(math.pi * (probability - 0.5))
    two_degrees = (2 * probability - 1) / math.sqrt(2 * probability * (1 - probability))
    assert student_t_quantile(probability, 1) == pytest.approx(cauchy, rel=1e-9)
    assert student_t_quantile(probability, 2) == pytest.approx(two_degrees, rel=1e-9)


def test_t_quantile_is_symmetric_about_the_median():
    assert student_t_quantile(0.1, 5) == pytest.approx(-student_t_quantile(0.9, 5), rel=1e-12)
    assert student_t_quantile(0.5, 5) == pytest.approx(0, abs=1e-6)
    assert student_t_quantile(0.975, 5) > student_t_quantile(0.975, 50) > 1.959964  # heavier tails, tending to the normal


@pytest.mark.parametrize(("probability", "degrees_of_freedom"), [(0, 3), (1, 3), (0.9, 0), (0.9, -1)])
def test_t_quantile_refuses_what_has_no_quantile(probability, degrees_of_freedom):
    with pytest.raises(ValueError):
        student_t_quantile(probability, degrees_of_freedom)


# -- the rule ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("absolute:0.5", "absolute", 0.5),
        ("relative:0.05", "relative", 0.05),
        ("relative:5%", "relative", 0.05),
        (" Interval : 0.95 ", "interval", 0.95),
        ("interval:90%", "interval", 0.9),
    ],
)
def test_parse_rule_reads_each_accepted_form(text, kind, value):
    rule = parse_rule(text)
    assert rule.kind == kind
    assert rule.value == pytest.approx(value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is not understood"),
        ("absolute", "is not understood"),
        ("tolerance:0.5", "is not understood"),
        ("absolute:abc", "'abc' is not a number"),
        ("absolute:5%", "not a percentage"),
        ("absolute:0", "must be a positive number"),
        ("relative:-0.1", "must be a positive number"),
        ("relative:nan", "must be a positive number"),
        ("interval:1", "confidence must be below 1"),
        ("interval:1.5", "confidence must be below 1"),
    ],
)
def test_parse_rule_refuses_anything_else_and_says_what_it_accepts(text, message):
    with pytest.raises(UserError) as caught:
        parse_rule(text)
    assert message in str(caught.value)
    if "confidence" not in message:
        for form in ("absolute:0.5", "relative:0.05", "relative:5%", "interval:0.95"):
            assert form in str(caught.value)


def test_align_refuses_an_interval_rule_with_confidence_of_one_or_more():
    with pytest.raises(UserError, match="below 1"):
        align_metrics([ReportedMetric(name="m", value=1.0)], runs_measuring("m", 1.0, 2.0), ToleranceRule(kind="interval", value=1.5))


# -- absolute and relative rules ---------------------------------------------------------------------


def test_absolute_rule_inside_tolerance():
    # Mean (76.0 + 76.4 + 75.8) / 3 = 76.0667; deviations −0.0667, +0.3333, −0.2667, squares sum to
    # 0.18667, / 2 = 0.09333, std 0.3055.
    metric = align_one(76.1, (76.0, 76.4, 75.8), "absolute:0.5")
    assert metric.verdict == "aligned"
    assert metric.values == [76.0, 76.4, 75.8]
    assert metric.mean == pytest.approx(76.0667, abs=1e-4)
    assert metric.std == pytest.approx(0.3055, abs=1e-4)
    assert (metric.low, metric.high) == (pytest.approx(75.6), pytest.approx(76.6))
    assert "76.1" in metric.reason and "76.0667" in metric.reason and "within 0.5" in metric.reason


def test_absolute_rule_outside_tolerance_says_by_how_much_and_which_side():
    metric = align_one(76.1, (75.0, 75.2), "absolute:0.5")  # mean 75.1, one below the paper
    assert metric.verdict == "not-aligned"
    assert "75.1" in metric.reason and "76.1" in metric.reason
    assert "is 1 below" in metric.reason and "0.5 allowed" in metric.reason


def test_absolute_rule_includes_the_ends_of_the_range():
    assert align_one(76.1, (76.6,), "absolute:0.5").verdict == "aligned"
    assert align_one(76.1, (75.6,), "absolute:0.5").verdict == "aligned"
    assert align_one(76.1, (76.61,), "absolute:0.5").verdict == "not-aligned"


def test_relative_rule_scales_with_the_paper_value():
    # 5% of 80 is 4: accepted [76, 84].
    inside = align_one(80.0, (77.0, 78.0), "relative:5%")
    assert inside.verdict == "aligned"
    assert (inside.low, inside.high) == (pytest.approx(76.0), pytest.approx(84.0))
    outside = align_one(80.0, (75.0, 75.5), "relative:5%")
    assert outside.verdict == "not-aligned"
    assert "5%" in outside.reason and "(4)" in outside.reason and "below" in outside.reason


def test_relative_rule_uses_the_magnitude_of_a_negative_paper_value():
    # 10% of |−2| is 0.2: accepted [−2.2, −1.8].
    metric = align_one(-2.0, (-1.85,), "relative:0.1")
    assert metric.verdict == "aligned"
    assert (metric.low, metric.high) == (pytest.approx(-2.2), pytest.approx(-1.8))
    assert align_one(-2.0, (-1.75,), "relative:0.1").verdict == "not-aligned"


@pytest.mark.parametrize(("rule", "inside", "outside"), [("absolute:0.5", 76.3, 77.0), ("relative:0.01", 76.5, 77.0)])
def test_one_seed_is_enough_for_absolute_and_relative_rules(rule, inside, outside):
    aligned = align_one(76.1, (inside,), rule)
    assert aligned.verdict == "aligned"
    assert aligned.mean == inside and aligned.std is None
    assert "1 run" in aligned.reason
    assert align_one(76.1, (outside,), rule).verdict == "not-aligned"


# -- the interval rule -------------------------------------------------------------------------------


def test_interval_rule_with_one_seed_is_undetermined():
    metric = align_one(76.1, (76.1,), "interval:0.95")
    assert metric.verdict == "undetermined"
    assert metric.mean == 76.1 and metric.std is None
    assert metric.low is None and metric.high is None
    assert "two runs" in metric.reason and "only one run" in metric.reason


def test_interval_rule_with_three_runs_matches_the_hand_computed_interval():
    # Runs 1, 2, 3: mean 2, s = 1; t_{0.975, 2} = 0.95 / √(2·0.975·0.025) = 4.3027;
    # half width 4.3027 · 1 · √(1 + 1/3) = 4.9683, so [−2.9683, 6.9683].
    half_width = 0.95 / math.sqrt(2 * 0.975 * 0.025) * math.sqrt(4 / 3)
    inside = align_one(6.9, (1.0, 2.0, 3.0), "interval:0.95")
    assert inside.verdict == "aligned"
    assert inside.low == pytest.approx(2 - half_width, rel=1e-9)
    assert inside.high == pytest.approx(2 + half_width, rel=1e-9)
    assert inside.high == pytest.approx(6.9683, abs=1e-4)
    assert "inside" in inside.reason and "95%" in inside.reason and "6.96828" in inside.reason
    above = align_one(7.0, (1.0, 2.0, 3.0), "interval:0.95")
    assert above.verdict == "not-aligned" and "above" in above.reason
    below = align_one(-3.0, (1.0, 2.0, 3.0), "interval:0.95")
    assert below.verdict == "not-aligned" and "below" in below.reason


@pytest.mark.parametrize(
    ("values", "confidence", "table_t", "mean", "std"),
    [
        # 10..14: mean 12, s = √(10/4) = 1.5811.
        ((10.0, 11.0, 12.0, 13.0, 14.0), 0.95, 2.7764, 12.0, math.sqrt(2.5)),
        # 1..10: mean 5.5, s = √(82.5/9) = 3.0277.
        (tuple(float(v) for v in range(1, 11)), 0.95, 2.2622, 5.5, math.sqrt(82.5 / 9)),
        # 0..30: mean 15, s = √(2480/30) = 9.0921; 90% uses t_{0.95, 30}.
        (tuple(float(v) for v in range(31)), 0.90, 1.6973, 15.0, math.sqrt(2480 / 30)),
    ],
)
def test_interval_rule_matches_the_table_based_interval(values, confidence, table_t, mean, std):
    widening = std * math.sqrt(1 + 1 / len(values))
    metric = align_one(mean, values, f"interval:{confidence}")
    assert metric.verdict == "aligned"
    assert metric.std == pytest.approx(std, rel=1e-9)
    # The table's t is rounded to four decimals, so the ends are known to within 5e-5 · widening.
    assert metric.low == pytest.approx(mean - table_t * widening, abs=5e-5 * widening)
    assert metric.high == pytest.approx(mean + table_t * widening, abs=5e-5 * widening)


def test_interval_rule_with_identical_runs_is_the_mean_alone():
    same = align_one(0.3, (0.3, 0.3, 0.3), "interval:0.95")
    assert same.verdict == "aligned"
    assert same.std == 0 and same.low == pytest.approx(0.3) and same.high == pytest.approx(0.3)
    assert align_one(0.31, (0.3, 0.3, 0.3), "interval:0.95").verdict == "not-aligned"


# -- missing and non-finite values, the overall verdict --------------------------------------------


@pytest.mark.parametrize("rule", ["absolute:0.5", "relative:0.05", "interval:0.95"])
def test_a_metric_no_run_measured_is_undetermined(rule):
    report = align_metrics(
        [ReportedMetric(name="acc", value=0.9), ReportedMetric(name="f1", value=0.8)],
        runs_measuring("acc", 0.9, 0.9),
        parse_rule(rule),
    )
    f1 = report.metrics[1]
    assert f1.verdict == "undetermined"
    assert f1.values == [] and f1.mean is None and f1.std is None
    assert "no run measured" in f1.reason
    assert report.metrics[0].verdict == "aligned"
    assert report.verdict == "undetermined"


def test_non_finite_values_are_ignored_and_named_in_the_reason():
    runs = [
        MetricRun(seed=1, metrics={"acc": 0.90}),
        MetricRun(seed=2, metrics={"acc": math.nan}),
        MetricRun(seed=3, metrics={"acc": 0.92}),
        MetricRun(metrics={"acc": math.inf}),
    ]
    metric = align_metrics([ReportedMetric(name="acc", value=0.91)], runs, parse_rule("absolute:0.02")).metrics[0]
    assert metric.values == [0.90, 0.92]
    assert metric.mean == pytest.approx(0.91)
    assert metric.verdict == "aligned"
    assert "non-finite" in metric.reason
    assert "seed 2 (nan)" in metric.reason and "run 4 (inf)" in metric.reason


def test_a_non_finite_paper_value_is_undetermined():
    metric = align_one(math.nan, (1.0, 2.0), "absolute:0.5")
    assert metric.verdict == "undetermined"
    assert "not a finite number" in metric.reason


def test_mixed_verdicts_give_not_aligned_overall():
    runs = [MetricRun(seed=seed, metrics={"acc": acc, "loss": 0.5}) for seed, acc in [(1, 0.90), (2, 0.91)]]
    reported = [
        ReportedMetric(name="acc", value=0.905),  # aligned
        ReportedMetric(name="loss", value=0.2),  # 0.3 off
        ReportedMetric(name="bleu", value=30.0),  # never measured
    ]
    report = align_metrics(reported, runs, parse_rule("absolute:0.05"))
    assert [m.verdict for m in report.metrics] == ["aligned", "not-aligned", "undetermined"]
    assert report.verdict == "not-aligned"
    assert report.runs == 2


def test_overall_verdict_is_aligned_only_when_every_metric_is():
    runs = [MetricRun(seed=1, metrics={"acc": 0.9, "f1": 0.8})]
    reported = [ReportedMetric(name="acc", value=0.9), ReportedMetric(name="f1", value=0.81)]
    assert align_metrics(reported, runs, parse_rule("absolute:0.05")).verdict == "aligned"
    assert align_metrics([], runs, parse_rule("absolute:0.05")).verdict == "undetermined"


# -- reading runs ------------------------------------------------------------------------------------


def write_json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_read_runs_from_files_lists_and_folders(tmp_path):
    single = write_json(tmp_path / "one.json", {"seed": 1, "metrics": {"acc": 0.9}})
    listed = write_json(tmp_path / "many.json", [{"seed": 2, "metrics": {"acc": 0.8}}, {"metrics": {"acc": 0.7, "f1": 0.5}}])
    folder = tmp_path / "outputs"
    write_json(folder / "seed4" / "metrics.json", {"seed": 4, "metrics": {"acc": 0.6}})
    write_json(folder / "seed3" / "deep" / "metrics.json", {"seed": 3, "metrics": {"acc": 0.65}})
    write_json(folder / "seed3" / "config.json", {"not": "a run"})  # only metrics.json files are runs
    (folder / "seed5").mkdir()
    (folder / "seed5" / "metrics.json").write_text('{"seed": 5, "metrics": {"acc": NaN}}', encoding="utf-8")

    runs = read_runs([single, listed, folder])
    assert [run.seed for run in runs] == [1, 2, None, 3, 4, 5]
    assert runs[2].metrics == {"acc": 0.7, "f1": 0.5}
    assert runs[3].metrics == {"acc": 0.65}
    assert math.isnan(runs[5].metrics["acc"])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"seed": 1, "metrics": {"acc": 0.9}', "not valid JSON"),
        ("42", "expected a run such as"),
        ('{"seed": 1, "acc": 0.9}', "not a run (metrics: Field required"),
        ('{"metrics": {"acc": "high"}}', "not a run (metrics, acc:"),
        ('{"metrics": {"acc": true}}', "not a run (metrics, acc:"),
        ('[{"metrics": {"acc": 0.9}}, {"metrics": [0.9]}]', "(run 2 of the list): not a run"),
        ("[]", "no complete full runs found"),
        ('{"seed": 0, "smoke": true, "status": "complete", "metrics": {}}', "smoke runs and runs stopped at a stub"),
    ],
)
def test_read_runs_names_the_file_and_what_is_wrong(tmp_path, content, message):
    path = tmp_path / "runs.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(UserError) as caught:
        read_runs([path])
    assert message in str(caught.value)
    assert "runs.json" in str(caught.value)


def test_read_runs_refuses_missing_paths_and_folders_without_runs(tmp_path):
    with pytest.raises(UserError, match="absent.json: no such file or folder"):
        read_runs([tmp_path / "absent.json"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="empty: no metrics.json file"):
        read_runs([tmp_path / "empty"])
    with pytest.raises(UserError, match="no runs found"):
        read_runs([])


def test_read_runs_takes_only_complete_full_runs_of_a_scaffolded_reproduce_script(tmp_path):
    def run(seed: int, **fields) -> None:
        folder = tmp_path / f"seed-{seed}"
        folder.mkdir()
        (folder / "metrics.json").write_text(json.dumps({"seed": seed, **fields}), encoding="utf-8")

    run(0, smoke=False, status="complete", metrics={"test_accuracy": 95.0})
    run(1, smoke=True, status="complete", metrics={"test_accuracy": 10.0})
    run(2, smoke=False, status="stopped at a stub: training_step", metrics={})
    assert read_runs([tmp_path]) == [MetricRun(seed=0, metrics={"test_accuracy": 95.0})]


# -- reading the reported metrics --------------------------------------------------------------------


def test_read_reported_from_yaml_json_and_a_repository_plan(tmp_path):
    wrapped = tmp_path / "reported.yaml"
    wrapped.write_text(
        "metrics:\n  - name: top1_accuracy\n    value: 76.1\n    higher_is_better: true\n    quote: Table 2\n"
        "  - name: error\n    value: 1e-3\n",  # PyYAML reads 1e-3 as a string; it is still a number
        encoding="utf-8",
    )
    listed = write_json(tmp_path / "reported.json", [{"name": "bleu", "value": 27.3}])
    plan = RepoPlan(
        paper_title="A paper", paper_path="paper.tex", package="model", files=[], config=[], open_items=[],
        metrics=[ReportedMetric(name="f1", value=0.8)],
    )  # fmt: skip
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(plan.model_dump_json(), encoding="utf-8")

    from_yaml = read_reported(wrapped)
    assert [(m.name, m.value) for m in from_yaml] == [("top1_accuracy", 76.1), ("error", 0.001)]
    assert from_yaml[0].higher_is_better is True and from_yaml[0].quote == "Table 2"
    assert [(m.name, m.value) for m in read_reported(listed)] == [("bleu", 27.3)]
    assert [(m.name, m.value) for m in read_reported(plan_path)] == [("f1", 0.8)]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("bad.yaml", "metrics: [name: acc\n", "not valid YAML"),
        ("bad.json", '[{"name": "acc", "value": 0.9}', "not valid JSON"),
        ("empty.yaml", "", "found an empty document"),
        ("other.yaml", "results:\n  acc: 0.9\n", "found an object with keys results"),
        ("scalar.yaml", "0.9\n", "found a float"),
        ("novalue.yaml", "metrics:\n  - name: acc\n", "item 1, value: Field required"),
        ("typo.json", '[{"name": "acc", "value": 0.9, "valeu": 1}]', "item 1, valeu: Extra inputs are not permitted"),
        ("none.yaml", "metrics: []\n", "lists no reported metrics"),
        ("config.toml", "[metrics\n", "not valid TOML"),
        ("config.toml", "[settings]\nlr = 0.1\n", "no [metrics] table"),
        ("config.toml", "metrics = " + "{a = " * 2000 + "1" + "}" * 2000 + "\n", "nested too deeply"),
        ("config.toml", "[metrics]\ntolerance = \"relative:0.02\"\n", "[metrics] lists no reported metric"),
        ("plan.json", '{"paper_title": "A paper"}', "not a valid repository plan (paper_path: Field required"),
        (
            "plan.json",
            '{"paper_title": "T", "paper_path": "p.tex", "package": "m", "files": [], "config": [], "open_items": []}',
            "the repository plan lists no reported metrics",
        ),
    ],
)
def test_read_reported_names_the_file_and_what_is_wrong(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(UserError) as caught:
        read_reported(path)
    assert message in str(caught.value)
    assert str(caught.value).startswith(str(path))


def test_read_reported_refuses_missing_files_and_folders(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        read_reported(tmp_path / "absent.yaml")
    with pytest.raises(UserError, match="is a folder"):
        read_reported(tmp_path)


# -- the written report ------------------------------------------------------------------------------


def mixed_report():
    runs = [
        MetricRun(seed=1, metrics={"top1_accuracy": 76.0, "loss": 0.95, "a|b": 1.0}),
        MetricRun(seed=2, metrics={"top1_accuracy": 76.4, "loss": 0.97, "a|b": 1.1}),
        MetricRun(seed=3, metrics={"top1_accuracy": 75.8, "loss": 0.99, "a|b": 1.2}),
    ]
    reported = [
        ReportedMetric(name="top1_accuracy", value=76.1, unit="%"),
        ReportedMetric(name="loss", value=0.5),
        ReportedMetric(name="bleu", value=27.3),
        ReportedMetric(name="a|b", value=1.1),
    ]
    return align_metrics(reported, runs, parse_rule("interval:0.95"))


def test_write_alignment_writes_markdown_naming_every_metric_and_its_verdict(tmp_path):
    report = mixed_report()
    out_dir = tmp_path / "nested" / "alignment"
    markdown_path = write_alignment(report, out_dir)
    assert markdown_path == out_dir / "alignment.md"
    text = markdown_path.read_text(encoding="utf-8")
    assert text == alignment_markdown(report)
    lines = text.splitlines()

    assert "not-aligned" in lines[0]  # the overall verdict comes first
    assert "95% prediction interval" in text and "Runs: 3" in text
    rows = {line.split("|")[1].strip(): line for line in lines if line.startswith("| ") and "Metric" not in line}
    assert rows["top1_accuracy (%)"].rstrip(" |").endswith("aligned") and "not-aligned" not in rows["top1_accuracy (%)"]
    assert rows["loss"].rstrip(" |").endswith("not-aligned")
    assert rows["bleu"].rstrip(" |").endswith("undetermined")
    assert any("a\\|b" in line and line.rstrip(" |").endswith("aligned") for line in lines)  # escaped, the table stays whole
    for metric in report.metrics:
        assert metric.reason in text
    assert "](alignment.png)" in text
    assert sorted(path.name for path in out_dir.iterdir()) == ["alignment.md", "alignment.png"]  # no temp files left


def test_write_alignment_plots_a_real_image_with_a_row_per_metric(tmp_path):
    import matplotlib.image

    one_metric = align_metrics([ReportedMetric(name="acc", value=0.9)], runs_measuring("acc", 0.9, 0.91), parse_rule("absolute:0.05"))
    write_alignment(one_metric, tmp_path / "one")
    write_alignment(mixed_report(), tmp_path / "four")

    images = {}
    for name in ("one", "four"):
        png = tmp_path / name / "alignment.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        images[name] = matplotlib.image.imread(png)
        height, width = images[name].shape[:2]
        assert width >= 600 and height >= 200
        assert images[name].std() > 0.05  # drawn on, not a blank canvas
    assert images["four"].shape[0] > 2 * images["one"].shape[0]


def test_write_alignment_replaces_an_earlier_report(tmp_path):
    write_alignment(mixed_report(), tmp_path)
    aligned = align_metrics([ReportedMetric(name="acc", value=0.9)], runs_measuring("acc", 0.9), parse_rule("absolute:0.05"))
    text = write_alignment(aligned, tmp_path).read_text(encoding="utf-8")
    assert text.splitlines()[0].endswith(": aligned")
    assert "top1_accuracy" not in text


def test_a_failed_write_leaves_the_earlier_report_whole(tmp_path, monkeypatch):
    markdown_path = write_alignment(mixed_report(), tmp_path)
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}

    def interrupted(source, target):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", interrupted)
    aligned = align_metrics([ReportedMetric(name="acc", value=0.9)], runs_measuring("acc", 0.9), parse_rule("absolute:0.05"))
    with pytest.raises(OSError, match="disk full"):
        write_alignment(aligned, tmp_path)
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before  # no half-written file, no temporary
    assert "top1_accuracy" in markdown_path.read_text(encoding="utf-8")


def test_importing_align_loads_neither_matplotlib_nor_the_language_server():
    code = (
        "import sys, paperlens.pipeline.repo.align\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'pygls', 'lsprotocol')))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"


def test_reported_yaml_written_by_hand_aligns_end_to_end(tmp_path):
    reported_path = tmp_path / "reported.yaml"
    reported_path.write_text(yaml.safe_dump({"metrics": [{"name": "acc", "value": 0.9}]}), encoding="utf-8")
    write_json(tmp_path / "runs" / "s1" / "metrics.json", {"seed": 1, "metrics": {"acc": 0.89}})
    write_json(tmp_path / "runs" / "s2" / "metrics.json", {"seed": 2, "metrics": {"acc": 0.91}})
    report = align_metrics(read_reported(reported_path), read_runs([tmp_path / "runs"]), parse_rule("relative:5%"))
    assert report.verdict == "aligned"
    assert report.metrics[0].values == [0.89, 0.91]


def test_a_scaffolds_config_gives_each_metric_with_its_own_tolerance_and_the_command_line_rule_wins(tmp_path, capsys):
    out = tmp_path / "repo"
    assert main(["scaffold", str(EXAMPLE_PAPER), "--out", str(out)]) == 0
    capsys.readouterr()
    config = out / "config.toml"
    [metric] = read_reported(config)
    assert (metric.name, metric.value, metric.unit, metric.tolerance) == ("test_accuracy", 95.1, "%", "relative:0.02")
    # The team loosens this metric's tolerance in the configuration; the table's default stays strict.
    config.write_text(config.read_text().replace('tolerance = "relative:0.02"\nquote', 'tolerance = "absolute:0.5"\nquote'))
    runs = write_json(tmp_path / "runs.json", [{"seed": s, "metrics": {"test_accuracy": v}} for s, v in ((0, 94.8), (1, 94.9), (2, 94.7))])
    assert main(["align", str(runs), "--reported", str(config), "--format", "json"]) == 0
    [judged] = json.loads(capsys.readouterr().out)["metrics"]
    assert judged["verdict"] == "aligned" and judged["rule"] == {"kind": "absolute", "value": 0.5}
    assert main(["align", str(runs), "--reported", str(config), "--rule", "relative:0.001"]) == 1
    assert "not-aligned" in capsys.readouterr().out
    config.write_text(config.read_text().replace('tolerance = "absolute:0.5"', 'tolerance = "closeish"'))
    with pytest.raises(UserError, match=r"\[metrics.test_accuracy\] tolerance rule 'closeish' is not understood"):
        read_reported(config)

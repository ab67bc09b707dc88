"""The results the paper reports for its own method, to align a reproduction's runs with.

Two places state them: the results sections' prose ("TLM reaches 95.1% test accuracy") and the
results tables, in the row the paper marks as its own ("REPA-E (Ours) | 16.3 | 5.69 | 75.0"). A
table is read only when it leaves no doubt: exactly one row of the method's, as many cells as the
header, and a column whose header names a metric (or carries ↑/↓) holding one plain number. A
baseline's number is never taken, and a metric the paper reports with different values (another
scale, another dataset) is never chosen between: it is an open item asking which one to compare with.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ...schemas import Location, PaperSpec, Table
from ...schemas.gaps import Evidence
from ...schemas.repo import OpenItem, ReportedMetric
from ..extract.mathtext import to_plain
from ..extract.sentences import split_sentences
from ..ingest.positions import span_location

RESULTS_SECTION = re.compile(r"result|experiment|evaluation|benchmark", re.IGNORECASE)
# "reaches 95.1% test accuracy", "achieves a top-1 accuracy of 76.3%": the method's own result, not
# the baselines it is compared with (those follow "against", "than", "for").
_METRIC_WORDS = r"(?:top-[15]\s+|test\s+|validation\s+|mean\s+)?(?:accuracy|error(?:\s+rate)?|f1(?:\s+score)?|bleu|perplexity|miou|auc|map)"
_REPORTED = re.compile(
    r"\b(?:reach(?:es)?|achieves?|obtains?|attains?|gets?)\s+(?:an?\s+|the\s+)?"
    rf"(?:(?P<value>\d+(?:\.\d+)?)\s*(?P<percent>\\?%)?\s+(?P<metric>{_METRIC_WORDS})"
    rf"|(?P<metric2>{_METRIC_WORDS})\s+of\s+(?P<value2>\d+(?:\.\d+)?)\s*(?P<percent2>\\?%)?)",
    re.IGNORECASE,
)
# "achieves a 1.2% accuracy improvement", "until it reaches 90% validation accuracy": a difference,
# or a threshold the run waits for, not a result.
_NOT_A_RESULT_AFTER = re.compile(
    r"\s*(?:improvements?|gains?|increases?|reductions?|drops?|decreases?|points?|higher|lower|better|worse|more|less|cases?)\b",
    re.IGNORECASE,
)
_NOT_A_RESULT_BEFORE = re.compile(r"\b(?:until|once|when|whenever|if|unless|before|after)\b[^,;:]*$", re.IGNORECASE)
OTHER_METHOD = re.compile(r"\bbaselines?\b|\bprior\b|\bprevious(?:ly)?\b|\bexisting\b|\bstate[- ]of[- ]the[- ]art\b|\bsota\b", re.IGNORECASE)
# A table header that names a quality metric; cost columns (parameters, FLOPs, speed) are not results to reproduce.
_METRIC_HEADER = re.compile(
    r"^(?:top-?[15]\s*)?(?:acc(?:uracy)?\.?|error(?: rate)?|f1(?: score)?|bleu(?:-?\d)?|rouge(?:-?\w+)?|perplexity|ppl|"
    r"m?iou|map@?[\d.]+|ap[sml]?|pq|auc|auroc|auprc|[grs]?fid(?:-?\d+k)?|psnr|ssim|lpips|r2|mse|mae|rmse|nll|bpd|wer|cer|"
    r"prec(?:ision|\.)?|rec(?:all|\.)?|exact match)\b"
    r"|^(?:is|em|map)$",  # short words that begin other headers ("Is pretrained", "Map size"): only alone
    re.IGNORECASE,
)
_DIFFERENCE_HEADER = re.compile(r"^(?:Δ|\\Delta|delta\b|diff)", re.IGNORECASE)
_COST_HEADER = re.compile(r"param|flop|fps|throughput|latency|speed|memory|time|epoch|step|batch|#", re.IGNORECASE)
_HIGHER = re.compile(r"\\uparrow|↑|higher is better", re.IGNORECASE)
_LOWER = re.compile(r"\\downarrow|↓|lower is better", re.IGNORECASE)
LOWER_IS_BETTER = ("error", "perplexity", "ppl", "fid", "lpips", "mse", "mae", "rmse", "nll", "bpd", "wer", "cer", "loss")
_OURS = re.compile(r"\bours\b", re.IGNORECASE)
_PLAIN_NUMBER = re.compile(r"(?P<value>\d+(?:\.\d+)?)\s*(?P<percent>%)?(?:\s*±\s*\d+(?:\.\d+)?)?")


@dataclass(frozen=True, slots=True)
class ReportedResults:
    metrics: list[ReportedMetric]  # one value per metric
    contested: list[OpenItem]  # metrics reported with different values: asked, not chosen


def reported_results(spec: PaperSpec) -> ReportedResults:
    """The method's own results, from the results prose and its rows of the tables, one per metric;
    a metric with different values is an open item instead."""
    found: dict[str, list[ReportedMetric]] = {}
    for metric in [*_from_prose(spec), *_from_tables(spec)]:
        found.setdefault(metric.name, []).append(metric)
    metrics, contested = [], []
    for name, reports in found.items():
        values: list[ReportedMetric] = []
        for report in reports:
            if not any(_same_result(report, other) for other in values):
                values.append(report)
        if len(values) == 1:
            metrics.append(reports[0])
            continue
        shown = [f"{_shown(r)} ({r.location.short()})" for r in reports if r.location]
        listed = ", ".join(shown[:-1]) + f" and {shown[-1]}"
        contested.append(
            OpenItem(
                id=f"several-results:{name}",
                question=f"The paper reports {name} as {listed}. Which result is the reproduction to be compared with?",
                blocking=False,
                evidence=[Evidence(quote=r.quote or "", location=r.location) for r in reports if r.location],
            )
        )
    return ReportedResults(metrics, contested)


def _same_result(one: ReportedMetric, other: ReportedMetric) -> bool:
    """The same number, also as a percentage and as a fraction (95.1% and 0.951)."""
    if (one.unit == "%") == (other.unit == "%"):
        return math.isclose(one.value, other.value, rel_tol=1e-9)
    percent, fraction = (one, other) if one.unit == "%" else (other, one)
    return math.isclose(percent.value, fraction.value * 100, rel_tol=1e-6)


def _shown(metric: ReportedMetric) -> str:
    return f"{metric.value:g}{metric.unit or ''}"


def _higher_is_better(name: str, header: str = "") -> bool:
    if _HIGHER.search(header):
        return True
    if _LOWER.search(header):
        return False
    return not any(word in name for word in LOWER_IS_BETTER)


def _from_prose(spec: PaperSpec) -> list[ReportedMetric]:
    """Results a results section states ("TLM reaches 95.1% test accuracy"). A number in a clause
    about a baseline or earlier work ("the baseline reaches 93.2%") is not the method's and is not
    taken, nor a difference ("a 1.2% accuracy improvement") or a threshold ("until it reaches 90%")."""
    results_sections = {s.id for s in spec.sections if RESULTS_SECTION.search(s.title)}
    found = []
    for paragraph in spec.paragraphs:
        if paragraph.section_id not in results_sections:
            continue
        for start, end in split_sentences(paragraph.text):
            sentence = paragraph.text[start:end]
            for match in _REPORTED.finditer(sentence):
                clause = re.split(r"[,;:]|\b(?:while|whereas|but|against|than)\b", sentence[: match.start()])[-1]
                if OTHER_METHOD.search(clause) or _NOT_A_RESULT_BEFORE.search(clause):
                    continue
                if _NOT_A_RESULT_AFTER.match(sentence, match.end()):
                    continue
                name = _metric_name(match.group("metric") or match.group("metric2"))
                found.append(
                    ReportedMetric(
                        name=name,
                        value=float(match.group("value") or match.group("value2")),
                        unit="%" if match.group("percent") or match.group("percent2") else None,
                        higher_is_better=_higher_is_better(name),
                        quote=sentence,
                        location=span_location(paragraph, start, end),
                    )
                )
    return found


def _from_tables(spec: PaperSpec) -> list[ReportedMetric]:
    found = []
    for table in spec.tables:
        if len(table.rows) < 2:
            continue
        header, body = table.rows[0], table.rows[1:]
        ours = [i for i, row in enumerate(body, start=1) if row and _is_ours(row[0], spec)]
        if len(ours) != 1 or len(table.rows[ours[0]]) != len(header):
            continue  # several rows of the method's (scales, datasets), or cells that do not line up
        row = table.rows[ours[0]]
        location = table.row_locations[ours[0]] if len(table.row_locations) > ours[0] else table.location
        for column, raw_header in enumerate(header[1:], start=1):
            metric = _table_metric(table, raw_header, row, column, location)
            if metric is not None:
                found.append(metric)
    return found


def _is_ours(cell: str, spec: PaperSpec) -> bool:
    plain = _plain(cell)
    if _OURS.search(plain):
        return True
    name = (spec.title or "").split(":", 1)[0].strip() if ":" in (spec.title or "") else ""
    return bool(name) and len(name) <= 20 and plain.casefold() == name.casefold()  # "REPA-E: Unlocking ..." → REPA-E


def _table_metric(table: Table, raw_header: str, row: list[str], column: int, location: Location) -> ReportedMetric | None:
    header = _plain(re.sub(r"\\(?:up|down)arrow|[↑↓]", " ", raw_header))
    header = re.sub(r"\((?:%|lower is better|higher is better)\)", " ", header, flags=re.IGNORECASE).strip()
    arrow = bool(_HIGHER.search(raw_header) or _LOWER.search(raw_header))
    if not header or _COST_HEADER.search(header) or _DIFFERENCE_HEADER.match(_plain(raw_header)):
        return None
    if not (_METRIC_HEADER.match(header) or arrow):
        return None
    value = _PLAIN_NUMBER.fullmatch(_plain(row[column]).strip())
    if value is None:
        return None
    name = _metric_name(header)
    percent = value.group("percent") or "%" in _plain(raw_header)
    shown = f"Table {table.number}" if table.number else "The table"
    return ReportedMetric(
        name=name,
        value=float(value.group("value")),
        unit="%" if percent else None,
        higher_is_better=_higher_is_better(name, raw_header),
        quote=f"{shown}: " + " | ".join(_plain(cell) for cell in row) + f" (column “{header}”)",
        location=location,
    )


def _plain(text: str) -> str:
    text = re.sub(r"\\text(?:sub|super)script\{([^{}]*)\}", r" \1", text)  # AUPRC\textsubscript{OOD}: AUPRC OOD
    plain = re.sub(r"\\[A-Za-z]+", " ", to_plain(text).text)  # what to_plain leaves of a command
    return " ".join(plain.split())


_SPELLED_OUT = {"acc": "accuracy", "prec": "precision", "rec": "recall", "ppl": "perplexity"}


def _metric_name(words: str) -> str:
    """As the runs' metrics.json names it: test accuracy → test_accuracy, Top-1 Acc. → top_1_accuracy, gFID → gfid."""
    return "_".join(_SPELLED_OUT.get(word, word) for word in re.findall(r"[a-z0-9]+", words.lower()))

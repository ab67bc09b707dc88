"""The `paperlens` command line."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from ..schemas import Gap, PaperSpec
from .errors import UserError, WorkspaceError
from .ingest import read_paper
from .readiness import assess
from .readiness.render import render_markdown, render_sarif, render_text
from .repo import DEFAULT_MAX_ROUNDS
from .text import shorten

# 1: findings at or above --fail-on (check); 2: unusable input, as argparse's usage errors; 3: a bug.
EXIT_OK, EXIT_FINDINGS, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="paperlens", description="Read a research paper beside the code that implements it.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    index = commands.add_parser("index", help="read a paper and show what paperlens found in it")
    index.add_argument("paper", type=Path, help="the paper: a .tex/.pdf/.md file, or the folder holding it")
    index.add_argument("--format", choices=("text", "json"), default="text", help="text: a readable summary; json: the PaperSpec")
    index.add_argument("--no-cache", action="store_true", help="read the paper again even if it is unchanged")
    index.set_defaults(run=run_index)
    gaps = commands.add_parser("gaps", help="find what the paper leaves unstated, ambiguous or inconsistent")
    gaps.add_argument("paper", type=Path, help="the paper: a .tex/.pdf/.md file, or the folder holding it")
    gaps.add_argument(
        "--format",
        choices=("text", "json", "sarif", "markdown"),
        default="text",
        help="text: a summary; json: the ReadinessReport; sarif: SARIF 2.1.0 for code scanning; markdown: a report to send",
    )
    gaps.add_argument("--no-cache", action="store_true", help="read the paper again even if it is unchanged")
    gaps.add_argument(
        "--llm",
        action="store_true",
        help="also ask the model at $PAPERLENS_LLM_BASE_URL ($PAPERLENS_LLM_MODEL) to read the method's steps and for "
        "gaps the rules miss; its readings are kept only when they quote the paper, and marked as the model's",
    )
    gaps.set_defaults(run=run_gaps)
    check = commands.add_parser("check", help="check a workspace's code against its paper")
    check.add_argument("workspace", type=Path, nargs="?", default=Path("."), help="the workspace (default: the current folder)")
    check.add_argument("--paper", type=Path, help="the paper (default: [tool.paperlens] paper, else paper/ or a paper at the root)")
    check.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    check.add_argument(
        "--fail-on",
        choices=("error", "warning", "info", "never"),
        default="error",
        help="exit 1 when an open finding is at least this severe (default: error)",
    )
    check.add_argument(
        "--llm",
        action="store_true",
        help="ask the model at $PAPERLENS_LLM_BASE_URL ($PAPERLENS_LLM_MODEL) about the functions an anchor ties to an "
        "equation that paperlens could not compare; an answer is kept only when it quotes the function and the "
        "equation, and is shown as the model's",
    )
    check.set_defaults(run=run_check)
    smoke = commands.add_parser("smoke", help="run the workspace's smoke command in the sandbox and classify what fails")
    smoke.add_argument("workspace", type=Path, nargs="?", default=Path("."), help="the workspace (default: the current folder)")
    smoke.add_argument("--image", help="the image to run in (default: [tool.paperlens.sandbox] image, else the workspace's Dockerfile, else the base image)")
    smoke.add_argument("--command", help="the command, as one string (default: a reproduce script with --smoke, else pytest -x -q)")
    smoke.add_argument("--local", action="store_true", help="run as a subprocess on this machine, unisolated (no Docker)")
    smoke.add_argument("--timeout", type=float, help="seconds before the run is killed (default: 120)")
    smoke.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    smoke.set_defaults(run=run_smoke)
    scaffold = commands.add_parser("scaffold", help="write a runnable repository skeleton planned from the paper (no LLM)")
    scaffold.add_argument("paper", type=Path, help="the paper: a .tex/.pdf/.md file, or the folder holding it")
    scaffold.add_argument("--out", type=Path, required=True, help="the folder to write (new, or without the planned files)")
    _decisions_argument(scaffold)
    scaffold.add_argument("--format", choices=("text", "json"), default="text", help="json: the repository plan")
    scaffold.set_defaults(run=run_scaffold)
    reproduce = commands.add_parser(
        "reproduce", help="plan, scaffold, generate (LLM), pin, then run and repair in the sandbox; resumable"
    )
    reproduce.add_argument("paper", type=Path, help="the paper: a .tex/.pdf/.md file, or the folder holding it")
    reproduce.add_argument("--out", type=Path, required=True, help="the repository folder; run again to resume")
    _decisions_argument(reproduce)
    reproduce.add_argument("--max-rounds", type=int, default=DEFAULT_MAX_ROUNDS,
                           help=f"repair rounds before handing over to a human (default: {DEFAULT_MAX_ROUNDS})")  # fmt: skip
    reproduce.add_argument("--no-llm", action="store_true", help="no generation or repair, even with an endpoint configured")
    reproduce.add_argument("--image", help="the sandbox's image (default: the repository's Dockerfile, built offline)")
    reproduce.add_argument("--timeout", type=float, help="seconds before a smoke run is killed (default: 120)")
    reproduce.add_argument("--local", action="store_true", help="run smoke tests as subprocesses here, unisolated (no Docker)")
    reproduce.add_argument("--format", choices=("text", "json"), default="text", help="json: the whole record")
    reproduce.set_defaults(run=run_reproduce)
    align = commands.add_parser("align", help="compare measured metrics (one file or folder per run) with the paper's")
    align.add_argument("runs", type=Path, nargs="+", help="metrics.json files, or folders holding them (one per seed)")
    align.add_argument("--reported", type=Path, required=True,
                       help="the paper's results: a scaffold's config.toml (with each metric's tolerance), a YAML/JSON list of metrics, or a plan (.paperlens/plan.json)")  # fmt: skip
    align.add_argument("--rule",
                       help="absolute:D, relative:F (or F%%), or interval:C (prediction interval, needs 2+ runs), for every metric; "
                            "default: each metric's tolerance in config.toml, else relative:0.02")  # fmt: skip
    align.add_argument("--out", type=Path, help="write alignment.md and alignment.png into this folder")
    align.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    align.set_defaults(run=run_align)
    checklist = commands.add_parser("checklist", help="the reproducibility checklist: seeds, locked dependencies, splits, smoke test, ...")
    checklist.add_argument("workspace", type=Path, nargs="?", default=Path("."), help="the repository (default: the current folder)")
    checklist.add_argument("--format", choices=("text", "json", "markdown", "sarif"), default="text")
    checklist.add_argument("--fail-on-failed", action="store_true", help="exit 1 when a point fails (for CI)")
    checklist.set_defaults(run=run_checklist)
    serve = commands.add_parser("serve", help="run the language server over stdio (what the editor starts)")
    serve.set_defaults(run=run_serve)
    return parser


def run_serve(args: argparse.Namespace) -> int:
    # Imported here: the pipeline never imports the server (only `paperlens serve` starts it).
    from importlib import import_module

    import_module("paperlens.server.app").main()
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except UserError as err:
        print(f"paperlens: {err}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # a bug of ours must still not greet the user with a traceback
        if os.environ.get("PAPERLENS_DEBUG"):
            traceback.print_exc()
        print(f"paperlens: internal error in `paperlens {args.command}`: {type(err).__name__}: {err} "
              "(set PAPERLENS_DEBUG=1 for details)", file=sys.stderr)  # fmt: skip
        return EXIT_INTERNAL


def _report_problems(spec: PaperSpec) -> int:
    for problem in spec.problems:
        where = f"{problem.location.short()}: " if problem.location else ""
        print(f"paperlens: {problem.severity}: {where}{problem.message}", file=sys.stderr)
    return EXIT_INPUT if any(p.severity == "error" for p in spec.problems) else EXIT_OK


def _model_gaps(spec: PaperSpec, known: list[Gap]) -> tuple[list[Gap], set[str]]:
    """The model's further gaps and the rules' open steps it showed the paper answers; when it
    cannot help, say why and go on with the rules' gaps."""
    # Imported here: the openai client costs every other command its import time.
    from .llm import LLMClient, LLMError, LLMRefused, LLMUnavailable, settings_from_env
    from .readiness.llm_gaps import propose_gaps
    from .readiness.llm_steps import StepsRead, read_steps

    try:
        client = LLMClient(settings_from_env())
    except LLMError as err:
        print(f"paperlens: the model was not used: {str(err).rstrip('.')}. Showing the rules' gaps only.", file=sys.stderr)
        return [], set()
    print(f"paperlens: asking {client.settings.model} at {client.settings.base_url} to read the method's steps and for more gaps…", file=sys.stderr)
    steps = StepsRead()
    try:
        steps = read_steps(spec, known, client)
    except (LLMUnavailable, LLMRefused) as err:  # no other request would fare better
        print(f"paperlens: the model was not used: {str(err).rstrip('.')}. Showing the rules' gaps only.", file=sys.stderr)
        return [], set()
    except LLMError as err:
        print(f"paperlens: no usable reading of the method's steps: {str(err).rstrip('.')}.", file=sys.stderr)
    for gap_id, evidence in steps.answered.items():
        title = next(g.title for g in known if g.id == gap_id)
        print(f"paperlens: the model shows the paper answers {title.split(':')[0]}: “{' '.join(evidence.quote.split())}” ({evidence.location.short()})", file=sys.stderr)
    remaining = [g for g in known if g.id not in steps.answered] + steps.gaps
    try:
        proposed = propose_gaps(spec, remaining, client)
    except LLMError as err:
        print(f"paperlens: no usable gaps from the model: {str(err).rstrip('.')}.", file=sys.stderr)
        proposed = []
    usage = client.usage
    print(
        f"paperlens: the model found {len(steps.gaps)} open step(s) and suggested {len(proposed)} gap(s) that quote the paper "
        f"({usage.requests} request(s), {usage.cache_hits} from cache, {usage.prompt_tokens + usage.completion_tokens} tokens)",
        file=sys.stderr,
    )
    return steps.gaps + proposed, set(steps.answered)


def _model_equation_findings(workspace: Path, spec: PaperSpec, index, undecided: list, decisions) -> list:
    """The model's verdicts on the anchored pairs paperlens left undecided (a deviation the decisions
    file records marks them as it does paperlens' own); when it cannot help, say why and go on."""
    if not undecided:
        return []
    from .check import recorded
    from .check.llm_equations import judge_undecided
    from .llm import LLMClient, LLMError, settings_from_env

    try:
        client = LLMClient(settings_from_env())
        print(f"paperlens: asking {client.settings.model} at {client.settings.base_url} about {len(undecided)} function(s) not compared…", file=sys.stderr)
        judged = judge_undecided(workspace, spec, index, undecided, client)
    except LLMError as err:
        print(f"paperlens: the model was not used: {str(err).rstrip('.')}. Showing paperlens' own findings only.", file=sys.stderr)
        return []
    for failure in judged.failures:
        print(f"paperlens: no usable answer for {failure}", file=sys.stderr)
    print(f"paperlens: the model's verdicts kept: {len(judged.findings)} of {len(undecided)} (each must quote the function and the equation)", file=sys.stderr)
    return [recorded(f, decisions) for f in judged.findings]


def workspace_folder(path: Path) -> Path:
    """The workspace's real path; WorkspaceError when it is no folder that can be read."""
    from .files import UnreadableFile, resolved_path

    try:
        folder = resolved_path(path)
    except UnreadableFile as err:
        raise WorkspaceError(f"{path}: {err}") from None
    if not folder.is_dir():
        raise WorkspaceError(f"{path}: not a folder")
    return folder


def run_check(args: argparse.Namespace) -> int:
    from .check import check
    from .check.render import render_sarif
    from .check.render import render_text as render_check_text
    from .code import index_workspace
    from .decisions import load_decisions
    from .workspace import find_paper, load_settings

    workspace = workspace_folder(args.workspace)
    settings = load_settings(workspace)
    paper = args.paper if args.paper else find_paper(workspace, settings)
    spec = read_paper(paper)
    decisions = load_decisions(workspace)
    index = index_workspace(workspace, include=settings.include, exclude=settings.exclude)
    report = check(workspace, spec, index, decisions)
    if args.llm:
        report.findings += _model_equation_findings(workspace, spec, index, report.undecided, decisions)
    if args.format == "json":
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    elif args.format == "sarif":
        sys.stdout.write(render_sarif(report, spec.root))
    else:
        sys.stdout.write(render_check_text(report))
    if args.fail_on == "never":
        return EXIT_OK
    threshold = SEVERITY_RANK[args.fail_on]
    failing = [f for f in report.findings if f.status == "open" and SEVERITY_RANK[f.severity] >= threshold]
    return EXIT_FINDINGS if failing else EXIT_OK


def run_checklist(args: argparse.Namespace) -> int:
    from .checklist import checklist, render_markdown
    from .checklist import render_sarif as render_checklist_sarif
    from .checklist import render_text as render_checklist_text
    from .workspace import load_settings

    workspace = workspace_folder(args.workspace)
    settings = load_settings(workspace)
    report = checklist(workspace, include=settings.include, exclude=settings.exclude)
    if args.format == "json":
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    elif args.format == "markdown":
        sys.stdout.write(render_markdown(report))
    elif args.format == "sarif":
        sys.stdout.write(render_checklist_sarif(report))
    else:
        sys.stdout.write(render_checklist_text(report))
    return EXIT_FINDINGS if args.fail_on_failed and any(p.status == "failed" for p in report.points) else EXIT_OK


def run_smoke(args: argparse.Namespace) -> int:
    import shlex

    from .sandbox import run_smoke as run
    from .sandbox import without_prewarm
    from .sandbox.deps import dependency_issues
    from .sandbox.render import render_sarif as render_smoke_sarif
    from .sandbox.render import render_text as render_smoke_text
    from .workspace import load_settings

    workspace = workspace_folder(args.workspace)
    sandbox = _sandbox_settings(load_settings(workspace).sandbox, args)
    if args.command is not None:
        sandbox = sandbox.model_copy(update={"command": shlex.split(args.command)})
    # One run: a container started ahead for a next run would only cost time at exit. The run's own
    # output goes to stderr as it comes: progress for a human, while stdout stays the report.
    with without_prewarm():
        result = run(workspace, sandbox, on_output=lambda text: print(text, end="", file=sys.stderr, flush=True))
    result = result.model_copy(update={"dependencies": dependency_issues(workspace)})
    if args.format == "json":
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
    elif args.format == "sarif":
        sys.stdout.write(render_smoke_sarif(result, str(workspace)))
    else:
        sys.stdout.write(render_smoke_text(result))
    if result.status == "error":
        print(f"paperlens: {result.message}", file=sys.stderr)
        return EXIT_INPUT
    return EXIT_FINDINGS if result.status == "failed" else EXIT_OK


def _decisions_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--decisions", type=Path,
                        help="a folder whose .paperlens/decisions.yaml settles gaps (default: --out's)")  # fmt: skip


def _paper_for_repository(args: argparse.Namespace):
    from .decisions import DECISIONS_PATH, load_decisions
    from .repo.plan import Paper, path_from_repository

    _output_folder(args.out)
    if args.decisions is not None and not args.decisions.is_dir():
        raise UserError(f"{args.decisions}: not a folder (--decisions names the folder holding .paperlens/decisions.yaml)")
    spec = read_paper(args.paper)
    if any(p.severity == "error" for p in spec.problems):
        _report_problems(spec)
        raise UserError(f"{args.paper}: the paper could not be read well enough to plan a repository from it")
    decisions_folder = (args.decisions or args.out).resolve()
    return Paper(
        spec=spec,
        readiness=assess(spec),
        decisions=load_decisions(decisions_folder),
        path=path_from_repository(args.paper, args.out),
        decisions_path=path_from_repository(decisions_folder / DECISIONS_PATH, args.out),
    )


def _progress(line: str) -> None:
    print(f"paperlens: {line}", file=sys.stderr, flush=True)


def run_scaffold(args: argparse.Namespace) -> int:
    from .repo.plan import plan_repository, provenance_counts
    from .repo.skeleton import write_skeleton

    paper = _paper_for_repository(args)
    plan = plan_repository(paper.spec, paper.readiness, paper.decisions, paper_path=paper.path, decisions_path=paper.decisions_path)
    written = write_skeleton(plan, paper.spec, paper.readiness, args.out)
    if args.format == "json":
        sys.stdout.write(plan.model_dump_json(indent=2) + "\n")
        return EXIT_OK
    provenance = provenance_counts(plan)
    blocking = sum(item.blocking for item in plan.open_items)
    lines = [
        f"{args.out}: {len(written)} files scaffolded from “{plan.paper_title}” (package {plan.package})",
        f"  modules: {', '.join(f.path for f in plan.files if f.role == 'module') or 'none (no numbered equation or algorithm)'}",
        (f"  config.toml: {len(plan.config)} values — {provenance['paper']} from the paper, "
         f"{provenance['clarification']} from answers, {provenance['assumption']} assumed"),
        f"  open items: {len(plan.open_items)} ({blocking} blocking), listed in config.toml and README.md",
        f"  next: cd {args.out} && python reproduce.py --smoke && python -m pytest",
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK


def run_reproduce(args: argparse.Namespace) -> int:
    from ..schemas import SandboxSettings
    from .llm import LLMClient, LLMNotConfigured, settings_from_env
    from .repo.reproduce import reproduce
    from .sandbox import without_prewarm
    from .workspace import load_settings

    if args.max_rounds < 0:
        raise UserError("--max-rounds must be 0 or more")
    paper = _paper_for_repository(args)
    client = None
    if not args.no_llm:
        try:
            client = LLMClient(settings_from_env())
        except LLMNotConfigured as err:
            _progress(f"no LLM: {err}")
    # A resumed repository's own [tool.paperlens.sandbox] settings apply; a new one gets the defaults.
    sandbox = load_settings(args.out.resolve()).sandbox if (args.out / "pyproject.toml").is_file() else SandboxSettings()
    sandbox = _sandbox_settings(sandbox, args)
    with without_prewarm():  # runs are minutes apart (the LLM answers between them): no container waits for them
        record = reproduce(paper, args.out, client=client, sandbox=sandbox, max_rounds=args.max_rounds, on_progress=_progress)
    if args.format == "json":
        sys.stdout.write(record.model_dump_json(indent=2) + "\n")
    else:
        usage = record.usage
        lines = [f"{args.out}: {record.outcome}" + (f" — {record.reason}" if record.reason else "")]
        lines += [f"  still open: {note}" for note in record.still_open]
        lines += [f"  {s.name}: {s.status} ({s.seconds:g} s) {s.message}".rstrip() for s in record.steps]
        lines.append(f"  LLM: {usage.requests} request(s), {usage.prompt_tokens} prompt + {usage.completion_tokens} completion tokens")
        lines.append(f"  record: {args.out / '.paperlens' / 'reproduce.json'}")
        sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK if record.outcome == "passed" else EXIT_FINDINGS


def run_align(args: argparse.Namespace) -> int:
    from .repo.align import (
        DEFAULT_RULE,
        align_metrics,
        alignment_markdown,
        parse_rule,
        read_reported,
        read_runs,
        write_alignment,
    )

    rule = parse_rule(args.rule or DEFAULT_RULE)
    reported = read_reported(args.reported)
    if args.rule:  # the command line's rule for every metric
        reported = [metric.model_copy(update={"tolerance": None}) for metric in reported]
    report = align_metrics(reported, read_runs(args.runs), rule)
    if args.out:
        try:
            written = write_alignment(report, _output_folder(args.out))
        except OSError as err:
            raise UserError(f"{args.out}: cannot write the report ({err.strerror or err})") from None
        _progress(f"wrote {written}")
    if args.format == "json":
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    elif args.format == "markdown":
        sys.stdout.write(alignment_markdown(report))
    else:
        lines = [f"{report.verdict} ({report.runs} run(s), rule {rule.kind} {rule.value:g})"]
        for metric in report.metrics:
            spread = f" ± {metric.std:.4g}" if metric.std is not None else ""
            mean = f"{metric.mean:.4g}{spread}" if metric.mean is not None else "not measured"
            own = f" (rule {metric.rule.kind} {metric.rule.value:g})" if metric.rule else ""
            lines.append(f"  {metric.name}: {metric.verdict}{own} — paper {metric.paper_value:g}, runs {mean} (n={len(metric.values)}): {metric.reason}")
        sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK if report.verdict == "aligned" else EXIT_FINDINGS


def _sandbox_settings(settings, args: argparse.Namespace):
    """The settings with the command line's --image, --timeout and --local on top, validated."""
    from pydantic import ValidationError

    overrides = {"image": args.image, "timeout_seconds": args.timeout, "mode": "local" if args.local else None}
    try:
        return type(settings).model_validate({**settings.model_dump(), **{k: v for k, v in overrides.items() if v is not None}})
    except ValidationError as err:
        raise UserError(f"--timeout: {err.errors()[0]['msg']}") from None  # the only override with a range


def _output_folder(path: Path) -> Path:
    """`path`, when it is a folder or can become one."""
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        raise UserError(f"{existing}: not a folder (--out names a folder, new or existing)")
    return path


def run_index(args: argparse.Namespace) -> int:
    spec = read_paper(args.paper, use_cache=not args.no_cache)
    if args.format == "json":
        sys.stdout.write(spec.model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write(render_summary(spec))
    return _report_problems(spec)


def run_gaps(args: argparse.Namespace) -> int:
    spec = read_paper(args.paper, use_cache=not args.no_cache)
    report = assess(spec)
    if args.llm:
        extra, answered = _model_gaps(spec, report.gaps)
        report = assess(spec, extra=extra, answered=answered)
    if args.format == "json":
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    elif args.format == "sarif":
        sys.stdout.write(render_sarif(report, spec.root))
    elif args.format == "markdown":
        sys.stdout.write(render_markdown(report))
    else:
        sys.stdout.write(render_text(report))
    return _report_problems(spec)


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def render_summary(spec: PaperSpec) -> str:
    out: list[str] = []
    title = spec.title or spec.main_file
    pages = f", {spec.page_count} pages" if spec.page_count else ""
    out.append(f"{title}")
    out.append(f"  {spec.source_format} · {spec.main_file}{pages} · {len(spec.files)} file(s) read")
    out.append(
        f"  {len(spec.sections)} sections · {len(spec.equations)} equations "
        f"({sum(1 for e in spec.equations if e.number)} numbered) · {len(spec.algorithms)} algorithms · "
        f"{len(spec.tables)} tables · {len(spec.hyperparameters)} stated values · {len(spec.components)} component mentions"
    )
    out.append("")
    out.append("Sections")
    for section in spec.sections:
        number = f"{section.number} " if section.number else ""
        appendix = " (appendix)" if section.appendix and not section.number else ""
        out.append(f"  {'  ' * (section.level - 1)}{number}{section.title}{appendix}  [{section.location.short()}]")
    numbered = [e for e in spec.equations if e.number]
    if numbered:
        out.append("")
        out.append("Numbered equations")
        for equation in numbered:
            label = f" {equation.label}" if equation.label else ""
            out.append(f"  ({equation.number}){label}  {shorten(equation.latex or equation.text, 90)}  [{equation.location.short()}]")
    if spec.algorithms:
        out.append("")
        out.append("Algorithms")
        for algorithm in spec.algorithms:
            out.append(f"  {algorithm.number or '-'}: {shorten(algorithm.title, 70)} ({len(algorithm.steps)} steps)  [{algorithm.location.short()}]")
    if spec.tables:
        out.append("")
        out.append("Tables")
        for table in spec.tables:
            out.append(f"  {table.number or '-'}: {shorten(table.caption or '(no caption)', 70)} ({len(table.rows)} rows)  [{table.location.short()}]")
    if spec.hyperparameters:
        out.append("")
        out.append("Stated values")
        rows = [
            [h.normalized_name, f"{h.value:g}" if isinstance(h.value, float) else shorten(str(h.value), 20), h.unit or "",
             h.component or "", shorten(h.text, 60), h.location.short()]
            for h in spec.hyperparameters
        ]  # fmt: skip
        out.extend("  " + line for line in _table(["setting", "value", "unit", "component", "evidence", "where"], rows))
    if spec.symbols:
        undefined = [s.symbol for s in spec.symbols if s.definition is None]
        out.append("")
        out.append(f"Symbols: {len(spec.symbols)} used in equations, {len(undefined)} without a definition in the text")
        for symbol in spec.symbols:
            value = f" = {symbol.value:g}" if isinstance(symbol.value, float) else ""
            where = f"defined at {symbol.definition.location.short()}" if symbol.definition else "not defined in the text"
            out.append(f"  {symbol.symbol}{value}  ({len(symbol.equations)} equation(s); {where})")
    out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())

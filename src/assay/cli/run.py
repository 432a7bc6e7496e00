"""``assay run``: run a suite against its target, judge it, store it, gate on it."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import Any

import typer
from pydantic import ValidationError
from rich.markup import escape

from assay.cli.app import EXIT_GATE_FAILED, EXIT_USAGE, app, console, err_console, friendly_errors
from assay.errors import ConfigError
from assay.llm.config import EngineConfig, RetryPolicy
from assay.llm.engine import JudgeEngine
from assay.model import Case, Execution
from assay.report.files import RowWriter, write_junit
from assay.report.terminal import ProgressBar, summary_lines
from assay.run_config import Gates, RunConfig, Thresholds
from assay.runner import Runner, RunResult, snapshot
from assay.store.runs import DEFAULT_URL, RunStore, StoreError
from assay.suites.model import Suite
from assay.targets.base import Target


def store_url(option: str | None) -> str:
    return option or os.environ.get("ASSAY_STORE_URL") or DEFAULT_URL


def load_any_suite(path: Path, targets_file: Path | None = None) -> Suite:
    """EVAL.yaml / JSONL suites, or a UiPath project (a directory or an eval-set JSON)."""
    if not path.exists():
        raise ConfigError(f"{path}: no such file or directory", code="missing_suite")
    if path.is_dir() or path.suffix == ".json":
        from assay.suites.uipath import load_uipath

        return load_uipath(path)
    from assay.suites.evalyaml import load_suite

    return load_suite(path, targets_file)


class TargetRegistry:
    """Resolves target names for the runner, building each target once."""

    def __init__(self, suite: Suite, engine: JudgeEngine, targets_file: Path | None,
                 override: str | None) -> None:
        from assay.targets.config import load_targets_for

        self.engine = engine
        self.override = override
        base = suite.source.parent if suite.source else Path.cwd()
        self.config = load_targets_for(base, targets_file)
        self.base_dir = self.config.base_dir if self.config else base
        self._built: dict[str | None, Target] = {}

    def redacted(self) -> dict[str, Any]:
        return self.config.redacted() if self.config else {}

    def __call__(self, name: str | None) -> Target:
        from assay.targets.base import RecordedOutput
        from assay.targets.config import build_target

        name = self.override or name
        if name not in self._built:
            if name is None:
                self._built[name] = RecordedOutput()
            else:
                spec: Any = self.config.get(name) if self.config else None
                if spec is None:
                    if ":" in name or name.startswith(("http://", "https://")):
                        spec = {"name": name, "provider": name}
                    else:
                        known = ", ".join(self.config.names()) if self.config else "none"
                        raise ConfigError(
                            f"unknown target {name!r}; targets defined: {known} (in "
                            ".assay/targets.yaml), or give a model string such as "
                            "openai:gpt-4o-mini", code="unknown_target")
                self._built[name] = build_target(spec, self.base_dir, self.engine)
        return self._built[name]

    async def aclose(self) -> None:
        for target in self._built.values():
            await target.aclose()


@app.command()
@friendly_errors
def run(
    suite_path: Path | None = typer.Argument(None, metavar="SUITE",
                                             help="EVAL.yaml, JSONL, or a UiPath project."),
    target: str | None = typer.Option(None, "--target", help="Target name (or model string)."),
    targets_file: Path | None = typer.Option(None, "--targets", help="A targets.yaml file."),
    judge_model: str | None = typer.Option(None, "--judge-model",
                                           help="Judge model for every LLM evaluator."),
    concurrency: int | None = typer.Option(
        None, "--concurrency", "-c", min=1,
        help="Cases (and judge calls) in flight at once [default: 8, or the resumed run's]."),
    filter_glob: str | None = typer.Option(None, "--filter", help="Only case ids matching."),
    repeat: int = typer.Option(1, "--repeat", min=1, help="Run every case N times."),
    output: Path | None = typer.Option(None, "--output", "-o",
                                       help="Write result rows (JSONL) as cases complete."),
    uipath_output: Path | None = typer.Option(None, "--uipath-output",
                                              help="Also write UiPath's output-file shape."),
    junit: Path | None = typer.Option(None, "--junit", help="Write a JUnit XML report."),
    dry_run: bool = typer.Option(False, "--dry-run",
                                 help="Estimate judge calls and tokens; call nothing."),
    resume: str | None = typer.Option(None, "--resume", help="Resume a stopped run by id."),
    store: str | None = typer.Option(None, "--store", help="Run store URL ($ASSAY_STORE_URL)."),
    cache: str = typer.Option("use", "--cache", help="Judge response cache: use|refresh|off."),
    max_attempts: int = typer.Option(6, "--max-attempts", min=1,
                                     help="Attempts per judge call (1 = no retries)."),
    call_timeout: float = typer.Option(120.0, "--call-timeout", min=0.001,
                                       help="Seconds one judge call may take."),
    total_timeout: float = typer.Option(300.0, "--total-timeout", min=0.001,
                                        help="Seconds one judge call may take, retries included."),
    min_score: float | None = typer.Option(None, "--min-score", min=0.0, max=1.0,
                                           help="Gate: mean case score at least this."),
    max_failed: int | None = typer.Option(0, "--max-failed", min=0,
                                          help="Gate: at most this many failing cases."),
    max_errors: int | None = typer.Option(0, "--max-errors", min=0,
                                          help="Gate: at most this many evaluator errors."),
    retry_errors: bool = typer.Option(False, "--retry-errors",
                                      help="With --resume: compute error scores again."),
    pass_at: float = typer.Option(0.8, "--pass-at", min=0.0, max=1.0,
                                  help="Case passes at this score."),
    borderline_at: float = typer.Option(0.6, "--borderline-at", min=0.0, max=1.0,
                                        help="Borderline from here."),
) -> None:
    """Run a suite: every case through its target and evaluators, stored as it completes."""
    if cache not in ("use", "refresh", "off"):
        raise ConfigError(f"--cache {cache!r}: expected use, refresh or off")
    runs = RunStore(store_url(store))
    stored: dict[str, Any] | None = None
    if resume:
        stored = runs.run(resume)
        if suite_path is None:
            path = stored["config"].get("suite_path")
            if not path:
                raise ConfigError(f"run {resume} has no suite path; give SUITE")
            suite_path = Path(path)
        config = RunConfig.model_validate(stored["config"]["run"])
        if retry_errors:
            forgotten = runs.forget_errors(stored["id"])
            console.print(f"{forgotten} error score(s) will be computed again", highlight=False)
        config.concurrency = concurrency or config.concurrency
    else:
        if retry_errors:
            raise ConfigError("--retry-errors goes with --resume RUN_ID")
        if suite_path is None:
            raise ConfigError("give a SUITE file, or --resume RUN_ID")
        try:
            config = RunConfig(
                concurrency=concurrency or RunConfig().concurrency, judge_model=judge_model,
                repeat=repeat,
                filter=filter_glob, dry_run=dry_run,
                thresholds=Thresholds(pass_at=pass_at, borderline_at=borderline_at),
                gates=Gates(min_mean_score=min_score, max_failed=max_failed,
                            max_errors=max_errors))
        except ValidationError as exc:
            raise ConfigError("; ".join(e["msg"] for e in exc.errors())) from None
    suite = load_any_suite(suite_path, targets_file)
    if stored is not None and stored["config"].get("suite_hash") != suite.fingerprint():
        err_console.print("[yellow]warning[/]: the suite changed since this run started; "
                          "finished results are kept, the rest use the new suite")
    retry = RetryPolicy(max_attempts=max_attempts, call_timeout_s=call_timeout,
                        total_timeout_s=total_timeout)
    engine = JudgeEngine(EngineConfig(concurrency=max(config.concurrency, 1), retry=retry,
                                      cache_mode=cache, dry_run=config.dry_run))  # type: ignore[arg-type]
    if config.judge_model:
        engine.config.default_model = config.judge_model
    targets = TargetRegistry(suite, engine, targets_file, target)
    if dry_run:
        _dry_run(suite, engine, runs, config)
        return
    writer = RowWriter(output) if output else None
    try:
        result = _execute(suite, targets, engine, runs, config, stored, resume, writer,
                          keep_results=uipath_output is not None)
    finally:
        if writer is not None:
            writer.close()
    if junit:
        write_junit(junit, suite.name, [r["row"] for r in runs.case_rows(result.run_id)],
                    result.run_id)
    if uipath_output:
        from assay.report.uipath_output import render_for_suite, write_uipath_output

        write_uipath_output(uipath_output, render_for_suite(
            suite, [(r.case_id, r.scores) for r in result.results]))
    for line in summary_lines(result.summary):
        console.print(line, highlight=False)
    console.print(f"run [bold]{result.run_id}[/] stored in {escape(runs.display_url)}",
                  highlight=False)
    if not result.summary.passed:
        for failure in result.summary.gate_failures:
            console.print(f"[red]gate failed[/]: {failure}", highlight=False)
        raise typer.Exit(EXIT_GATE_FAILED)
    console.print("[green]all gates passed[/]")


def _execute(suite: Suite, targets: TargetRegistry, engine: JudgeEngine, runs: RunStore,
             config: RunConfig, stored: dict[str, Any] | None,
             resume: str | None, writer: RowWriter | None,
             keep_results: bool = False) -> RunResult:
    runner_holder: dict[str, str] = {}

    async def go() -> RunResult:
        with ProgressBar(console, suite.name) as bar:
            runner = Runner(suite, targets, engine, runs, config, bar,
                            on_result=writer.write if writer else None)
            try:
                await runner.preflight()
                run_id = stored["id"] if stored else runs.create_run(
                    suite.name, snapshot(suite, config, engine, targets.redacted()))
                runner_holder["id"] = run_id
                if stored:
                    runs.set_status(run_id, "running")
                result = await runner.run(run_id, keep_results=keep_results)
                runs.set_status(run_id, "completed", result.summary.as_dict())
                return result
            finally:
                await targets.aclose()
                await engine.aclose()

    try:
        return asyncio.run(go())
    except KeyboardInterrupt:
        run_id = runner_holder.get("id")
        if run_id:
            with contextlib.suppress(StoreError):
                runs.set_status(run_id, "interrupted")
            err_console.print(
                f"\n[yellow]stopped[/]: finished results of run {run_id} are stored. "
                f"Resume with: assay run --resume {run_id}", highlight=False, soft_wrap=True)
        raise typer.Exit(130) from None
    except StoreError as exc:
        run_id = runner_holder.get("id", "?")
        err_console.print(f"[bold red]error[/] \\[store_error]: {escape(exc.message)}\nrun {run_id}: "
                          f"resume with 'assay run --resume {run_id}' once the store is "
                          "writable again", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_USAGE) from None


class _BlankOutput(Target):
    """Stands in for the agent in a dry run: the agent is not run either."""

    name = "dry-run"

    async def run(self, case: Case) -> Execution:
        return Execution(input=case.input, output="")


def _dry_run(suite: Suite, engine: JudgeEngine, runs: RunStore, config: RunConfig) -> None:
    """Judge blank executions with the engine in dry-run mode: counts calls, calls nothing,
    stores nothing."""
    blank = _BlankOutput()

    async def go() -> None:
        try:
            await Runner(suite, lambda _name: blank, engine, runs, config).run("dry-run")
        finally:
            await engine.aclose()

    asyncio.run(go())
    est = engine.estimate
    cost = "unknown" if est.cost is None else f"${est.cost:.4f}"
    cases = suite.count() * config.repeat
    console.print(f"dry run: {cases} case(s); {est.calls} judge call(s) at most (cached ones "
                  f"excluded); about {est.prompt_tokens} prompt + {est.completion_tokens} "
                  f"completion tokens; cost {cost}", highlight=False)
    for model, n in sorted(est.by_model.items()):
        console.print(f"  {model}: {n} call(s)", highlight=False)

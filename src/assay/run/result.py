"""What :func:`assay.evaluate` returns: a stored run with its records, in the forms people use.

The result is a view over the run store: its :class:`RunRecord` (config snapshot, summary and
gates), its :class:`CaseRecord` list (kept from the run, or read back from the store on first
use), a flat ``metrics`` dict, a pandas DataFrame, JSONL, and an HTML table for notebooks.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay._util.user_paths import user_path
from assay.run.display import (
    RunDisplay,
    executions_named,
    repeats_shown,
    run_display,
    scale_for,
)
from assay.types import numbers
from assay.types.config import RecordedRunConfig
from assay.types.json import dump_json
from assay.types.records import (
    CaseRecord,
    RunRecord,
    RunSnapshot,
    RunStatus,
    RunSummary,
    Verdict,
    conversation_columns,
)
from assay.types.score import Score

if TYPE_CHECKING:
    from assay.llm.engine import DryRunEstimate
    from assay.run.batch import BatchProgress
    from assay.store.runs import RunStore
    from assay.suites.model import Suite
    from assay.types.config import RunConfig


class EvaluationResult:
    """A finished run: ``run_id``, ``summary``, ``passed``, ``records``, ``metrics``."""

    def __init__(self, store: RunStore | None, run: RunRecord,
                 records: list[CaseRecord] | None = None,
                 estimate: DryRunEstimate | None = None, suite: Suite | None = None) -> None:
        self.store = store
        self.run = run
        self._records = records
        self.estimate = estimate
        """For a dry run: the judge calls and tokens the run would take."""
        self.suite = suite
        """The suite that was run, when this process loaded it."""
        self.batch: BatchProgress | None = None
        """For a run left waiting for its batches (``batch``): where they are."""

    @classmethod
    def dry(cls, suite: Suite, summary: RunSummary, config: RunConfig,
            estimate: DryRunEstimate) -> EvaluationResult:
        """A dry run's result (see :mod:`assay.run.dry_run`): its summary and estimate, no
        stored run."""
        from assay.run.dry_run import DRY_RUN_ID

        run = RunRecord(id=DRY_RUN_ID, suite=suite.name, status=RunStatus.COMPLETED,
                        created_at=0.0, config=RunSnapshot(
                            suite_name=suite.name,
                            run=RecordedRunConfig.model_validate(config.model_dump())),
                        summary=summary)
        return cls(None, run, [], estimate, suite)

    @property
    def run_id(self) -> str:
        return self.run.id

    @property
    def waiting(self) -> bool:
        """True while the run waits for its judge calls' batches (``batch=True``): it has no
        verdict yet; :func:`assay.resume` collects the answers and completes it."""
        return self.run.status is RunStatus.WAITING

    @property
    def in_memory(self) -> bool:
        """True when the run was kept in memory (``store=":memory:"``): it lives as long as
        this result, and only a function given this result (not its id) can read it."""
        return self.store is not None and self.store.in_memory

    @property
    def summary(self) -> RunSummary:
        return self.run.summary or RunSummary()

    @property
    def passed(self) -> bool:
        """True when the run met every gate (a run with no scored case never does). With a
        naming (agent judges): every answer passes and no score is an error, or, with quality
        criteria, they are met and no score is an error."""
        return self.summary.passed

    @property
    def reason(self) -> str:
        """Why the run did not pass (the failed gates), or ``"passed"``. With a naming, in
        MLflow's words: ``"N assertions failed:"`` and one line per failure."""
        failures = self.summary.gate_failures
        if not failures:
            return "passed"
        found = self.summary.assessments
        if found is not None:
            from assay.run.policies.databricks import reason

            return reason(found, failures)
        return f"{len(failures)} gate(s) failed: " + "; ".join(failures)

    @property
    def naming(self) -> str | None:
        """The run's naming mode (``databricks``, ``mlflow``), or None for assay's own."""
        found = self.summary.assessments
        if found is not None and found.naming is not None:
            return found.naming
        return self.run.config.run.naming

    @property
    def criteria_failures(self) -> list[str]:
        """The quality criteria the run did not meet, as ``"<metric> <op> <x> (got <v>)"``."""
        found = self.summary.assessments
        return list(found.criteria_failures) if found is not None else []

    @property
    def aggregates(self) -> list[Any]:
        """The named aggregates (:class:`~assay.types.records.AggregateRow`: key, value and the
        counts of values, errors and skips behind it); [] without a naming."""
        found = self.summary.assessments
        return list(found.metrics) if found is not None else []

    @property
    def records(self) -> list[CaseRecord]:
        """Every case record, in suite order when the run kept them, else as stored."""
        if self._records is None:
            self._records = self.store.case_records(self.run_id) if self.store else []
        return self._records

    @property
    def metrics(self) -> dict[str, float | int | None]:
        """Aggregate figures as one flat dict. With a naming, the aggregates in its names
        (``response/llm_judged/correctness/rating/percentage``, ``correctness/mean``...; a key
        with no value is left out, as Databricks and MLflow do). Otherwise assay's: counts,
        mean score, pass rate, usage (``cost_usd``: the run's whole cost, None when a part of
        it is unknown, as :attr:`RunSummary.cost_unknown` names), and per evaluator ``<name>/mean``, ``/scored``,
        ``/errors``, ``/skipped``, ``/pass_rate``, and for one that measures
        ``<name>/measured/count``, ``/measured/mean``, ``/measured/min`` and ``/measured/max``
        (on the measurements' own scale: never mixed into the 0-1 figures) (also
        :attr:`assay_metrics`). These are numbers for code (a rate is a 0-1 fraction, as
        Databricks and MLflow hold theirs); people read them shown, as
        :attr:`display` has them."""
        found = self.summary.assessments
        if found is not None and found.naming is not None:
            return {row.key: row.value for row in found.metrics if row.value is not None}
        return self.assay_metrics

    @property
    def assay_metrics(self) -> dict[str, float | int | None]:
        """assay's own aggregate figures, whatever the naming (see :attr:`metrics`)."""
        s = self.summary
        out: dict[str, float | int | None] = {
            "cases": s.cases, "scored": s.scored, "mean_score": s.mean_score,
            "pass_rate": s.pass_rate,
            **{f"verdict/{v.value}": s.count(v) for v in Verdict},
            "evaluator_errors": s.evaluator_errors, "evaluator_skips": s.evaluator_skips,
            "measurements": s.measurements,
            "target_errors": s.target_errors, "judge_calls": s.usage.calls,
            "judge_cached_calls": s.usage.cached_calls,
            "judge_tokens": s.usage.total_tokens, "judge_cost": s.usage.cost,
            "agent_tokens": s.agent_usage.total_tokens,
            "simulator_tokens": s.simulator_usage.total_tokens,
            # the run's whole cost, or None when a part of it is unknown: a partial sum
            # read as the whole is the figure the run's display refuses to show alone
            "cost_usd": None if s.cost_unknown else s.estimated_cost_usd,
            "latency_p50_ms": s.latency_p50_ms, "latency_p95_ms": s.latency_p95_ms,
        }
        for name, e in s.evaluators.items():
            out[f"{name}/mean"] = e.mean
            out[f"{name}/scored"] = e.scored
            out[f"{name}/errors"] = e.errors
            out[f"{name}/skipped"] = e.skipped
            out[f"{name}/pass_rate"] = e.passed / e.scored if e.scored else None
            if e.measured:
                out[f"{name}/measured/count"] = e.measured
                out[f"{name}/measured/mean"] = e.measured_mean
                out[f"{name}/measured/min"] = e.measured_min
                out[f"{name}/measured/max"] = e.measured_max
        for name, metric in s.dataset_metrics.items():
            out[f"{name}/dataset"] = metric.value
        return out

    def rows(self) -> list[dict[str, Any]]:
        """One flat dict per (case, repeat). With a naming, the columns of that naming
        (see :mod:`assay.run.policies.databricks.naming`). Otherwise: id, repeat, input, expected, output,
        score, verdict, target error, latency, for a multi-turn case what stopped it, its
        agent turns and the agent's latency over them (as ``assay show --json`` and the
        output files have them), then ``<evaluator>/value|raw|label|passed|rationale|
        error|skipped`` columns."""
        naming = self.naming
        if naming is not None:
            from assay.run.policies.databricks import Catalog, named_row

            catalog = Catalog(self.run.config.evaluators)
            chunk_errors = self.run.config.run.chunk_errors
            return [named_row(r, catalog, naming, chunk_errors) for r in self.records]
        target = self.run.config.target_name
        return [_row(r, target) for r in self.records]

    def to_pandas(self) -> Any:
        """:meth:`rows` as a pandas DataFrame (needs pandas: ``pip install 'assay[pandas]'``)."""
        try:
            import pandas as pd
        except ImportError:
            from assay.errors import ConfigError

            raise ConfigError("to_pandas() needs pandas: pip install 'assay[pandas]'",
                              code="missing_dependency") from None
        return pd.DataFrame(self.rows())

    @property
    def result_df(self) -> Any:
        """The per-row results as a DataFrame (MLflow's name for :meth:`to_pandas`)."""
        return self.to_pandas()

    @property
    def tables(self) -> dict[str, Any]:
        """``{"eval_results": result_df}``, as Databricks' legacy results are read."""
        return {"eval_results": self.result_df}

    def to_jsonl(self, path: str | Path | None = None) -> str | None:
        """The records as JSONL (one :class:`CaseRecord` a line), known secrets hidden (see
        :mod:`assay._util.redact`): returned as text, or written to ``path`` (through a temporary
        file renamed into place)."""
        from assay._util.redact import scrub_json

        text = "".join(scrub_json(r.model_dump_json()) + "\n" for r in self.records)
        if path is None:
            return text
        target = user_path(path)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(target)
        return None

    @property
    def display(self) -> RunDisplay:
        """The run's figures as every surface shows them (``85.0%``, ``0.850``, ``243 ms``;
        see :mod:`assay.run.display`)."""
        return run_display(self.summary)

    @property
    def notes(self) -> list[str]:
        """What a reader of this result must be told (see :func:`verdict_notes`). Every display
        of the result (``repr``, ``print``, the notebook table) shows them."""
        return verdict_notes(self.run)

    def __repr__(self) -> str:
        """The result in one line; a run with repeats adds its repeats figure
        (:attr:`RunDisplay.repeats`), a run without leaves it out."""
        s = self.summary
        shown = run_display(s)
        kept = ", in_memory=True" if self.in_memory else ""
        repeats = "" if shown.repeats == numbers.MISSING else f", repeats={shown.repeats!r}"
        notes = f", notes={self.notes!r}" if self.notes else ""
        return (f"EvaluationResult(run_id={self.run_id!r}, {executions_named(s)}={s.cases}, "
                f"mean_score={shown.mean_score}, passed={s.passed}{kept}{repeats}{notes})")

    def __str__(self) -> str:
        """The result as ``print`` shows it: one line for the run, its repeats (a run with
        repeats: :func:`~assay.run.display.repeats_shown`), then each note."""
        s = self.summary
        shown = run_display(s)
        lines = [f"run {self.run_id} ({self.run.suite}): {s.cases} {executions_named(s)}, pass rate "
                 f"{shown.pass_rate}, mean score {shown.mean_score}, cost {shown.cost}, "
                 + ("passed" if s.passed else f"failed: {self.reason}")]
        lines += [f"{label}: {text}" for label, text in repeats_shown(shown)]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """A readable table for notebooks; every value is HTML-escaped."""
        s = self.summary
        esc = html.escape
        shown = run_display(s)
        gate = ("<span style=color:green>passed</span>" if s.passed else
                f"<span style=color:#b00>failed: {esc('; '.join(s.gate_failures))}</span>")
        kept = " (in memory: not stored)" if self.in_memory else ""
        head = (f"<p><b>run {esc(self.run_id)}</b>{kept} · {esc(self.run.suite)} · "
                f"{s.cases} {executions_named(s)} · pass rate {shown.pass_rate} · mean score "
                f"{esc(shown.mean_score)} · cost {esc(shown.cost)} · {gate}</p>")
        head += "".join(f"<p><b>{label}</b>: {esc(text)}</p>"
                        for label, text in repeats_shown(shown))
        head += "".join(f"<p style=color:#a60><b>note</b>: {esc(note)}</p>"
                        for note in self.notes)
        names = list(s.evaluators)
        cells = "".join(f"<th>{esc(n)}</th>" for n in ["case", "verdict", "score", *names,
                                                         "output"])
        body = []
        scale = scale_for(s)
        for r in self.records[:200]:
            by_name = {sc.name: sc for sc in r.scores}
            evs = "".join(f"<td>{esc(_cell(by_name.get(n)))}</td>" for n in names)
            body.append(f"<tr><td>{esc(r.case_id)}</td><td>{esc(r.verdict.value)}</td>"
                        f"<td>{esc(scale.shown(r.score))}</td>{evs}"
                        f"<td>{esc(_short(r.execution.output_text()))}</td></tr>")
        more = "" if len(self.records) <= 200 else \
            f"<p>… {len(self.records) - 200} more; use .to_pandas()</p>"
        return f"{head}<table><tr>{cells}</tr>{''.join(body)}</table>{more}"


def verdict_notes(run: RunRecord) -> list[str]:
    """What a reader of a run's verdict must be told, each once: first that its judge is no
    real judge (the embedded demo model, a ``fake:`` model), from the judge models the run
    recorded (:func:`assay.llm.models.judge_notes`; so a run stored before a note existed
    shows it too), then the notes of its summary. Every surface that shows a run's verdict
    shows these."""
    from assay.llm.models import judge_notes

    stored = run.summary.notes if run.summary is not None else []
    return list(dict.fromkeys([*judge_notes(run.config.judge_models), *stored]))


def _row(record: CaseRecord, run_target: str | None) -> dict[str, Any]:
    """A case's row of :meth:`EvaluationResult.rows`; its target is its own, else the run's
    (:attr:`~assay.types.records.RunSnapshot.target_name`: a Python function by name)."""
    row: dict[str, Any] = {
        "case_id": record.case_id, "repeat": record.repeat, "input": record.input,
        "expected_output": record.expected_output, "output": record.output,
        "score": record.score, "verdict": record.verdict.value,
        "target": record.target or run_target,
        "target_error": record.execution.error, "latency_ms": record.execution.latency_ms,
        **conversation_columns(record),
    }
    for s in record.scores:
        row[f"{s.name}/value"] = s.value
        row[f"{s.name}/raw"] = s.raw if isinstance(s.raw, str | int | float | bool) or \
            s.raw is None else dump_json(s.raw)
        row[f"{s.name}/label"] = s.label
        row[f"{s.name}/passed"] = s.passed
        row[f"{s.name}/rationale"] = s.rationale
        row[f"{s.name}/error"] = None if s.error is None else \
            f"{s.error.code}: {s.error.message}"
        row[f"{s.name}/skipped"] = s.skipped
    return row


def _cell(score: Score | None) -> str:
    return "" if score is None else score.shown


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


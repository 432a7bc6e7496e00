"""The comparison the API and the compare page show, behind one function: :func:`compare`.

It answers with Connexity's parameters and responses (``max_pass_rate_drop`` as a fraction of
the pass rate, ``max_avg_score_drop`` in points of the 0-100 score, ``max_latency_increase_pct``
as a fraction; 404 for an unknown run, 400 for one that did not complete) and reads the
per-case outcomes from :func:`assay.compare.compare_runs`. Only this module knows how the
library computes a comparison; the routes and the page know only :class:`RunComparison`.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select

from assay.compare import CaseDelta, ComparisonRefused, compare_runs
from assay.records import RunRecord, RunStatus
from assay.store import schema
from assay.store.baselines import baseline_ids
from assay.store.queries import RunItem, find_run, run_target
from assay.store.runs import RunStore

CASES_SHOWN = 1000
"""Per-case rows in a response (regressions, errors and improvements first); totals always
count every case."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Thresholds(_Model):
    max_pass_rate_drop: float = Field(
        default=0.0, description="the largest allowed drop of the pass rate, a fraction (0.05 "
        "is five percentage points)")
    max_avg_score_drop: float = Field(
        default=5.0, description="the largest allowed drop of the mean score, in points of "
        "the 0-100 scale")
    max_latency_increase_pct: float = Field(
        default=0.2, description="the largest allowed rise of the mean agent latency, a "
        "fraction (0.2 is 20%)")


class CompareVerdict(_Model):
    regression_detected: bool
    reasons: list[str]
    thresholds_used: Thresholds


class CaseComparison(_Model):
    case_id: str
    repeat: int
    status: str = Field(description="regression, improvement, unchanged or error")
    baseline_score: float | None
    candidate_score: float | None
    score_delta: float | None
    baseline_verdict: str
    candidate_verdict: str


class MetricComparison(_Model):
    name: str
    baseline_mean: float | None
    candidate_mean: float | None
    delta: float | None
    status: str


class ConfigChange(_Model):
    field: str
    old_value: Any = None
    new_value: Any = None


class Totals(_Model):
    regressions: int = 0
    improvements: int = 0
    unchanged: int = 0
    errors: int = 0


class RunComparison(_Model):
    baseline: RunItem
    candidate: RunItem
    verdict: CompareVerdict
    pass_rate_delta: float | None
    avg_score_delta: float | None = Field(description="in points of the 0-100 scale")
    latency_avg_delta_ms: float | None
    latency_p95_delta_ms: float | None
    cost_delta_usd: float | None
    totals: Totals
    cases: list[CaseComparison]
    cases_truncated: bool = False
    metrics: list[MetricComparison]
    baseline_only: list[str]
    candidate_only: list[str]
    warnings: list[str]
    config_diff: list[ConfigChange]
    significance: dict[str, Any] | None = Field(
        default=None, description="how likely the difference is chance, when computed")


class RunNotFound(LookupError):
    def __init__(self, role: str) -> None:
        super().__init__(f"{role.capitalize()} run not found")


class RunNotCompleted(ValueError):
    def __init__(self, role: str, status: str) -> None:
        super().__init__(f"{role.capitalize()} run is not completed (status: {status})")


class NotComparable(ValueError):
    """Two runs that share no case."""


def _item(run: RunRecord, baselines: set[str]) -> RunItem:
    summary = run.summary
    return RunItem(id=run.id, suite=run.suite, status=run.status, created_at=run.created_at,
                   finished_at=run.finished_at, target=run_target(run), summary=summary,
                   pass_rate=None if summary is None else summary.pass_rate,
                   is_baseline=run.id in baselines)


def _case_rows(store: RunStore, run_id: str) -> list[dict[str, Any]]:
    cr = schema.case_results
    with store._begin() as conn:
        return [dict(r._mapping) for r in conn.execute(
            select(cr.c.case_id, cr.c.repeat, cr.c.score, cr.c.verdict).where(
                cr.c.run_id == run_id))]


def _delta(after: float | None, before: float | None, digits: int = 4) -> float | None:
    return None if after is None or before is None else round(after - before, digits)


def _status(delta: CaseDelta) -> str:
    if delta.outcome == "error":
        return "error"
    if delta.regressed:
        return "regression"
    if delta.outcome == "win" or (delta.verdict_before != "pass" and delta.verdict_after == "pass"):
        return "improvement"
    return "unchanged"


def verdict(base: RunRecord, cand: RunRecord, thresholds: Thresholds) -> CompareVerdict:
    """Connexity's regression reasons from the runs' whole-run aggregates; all comparisons
    strict."""
    b, c = base.summary, cand.summary
    reasons = []
    if b is not None and c is not None:
        if b.pass_rate is not None and c.pass_rate is not None \
                and -(c.pass_rate - b.pass_rate) > thresholds.max_pass_rate_drop:
            reasons.append(f"pass_rate dropped {b.pass_rate - c.pass_rate:.0%} "
                           f"({b.pass_rate:.2f} → {c.pass_rate:.2f})")
        if b.mean_score is not None and c.mean_score is not None:
            drop = (b.mean_score - c.mean_score) * 100
            if drop > 0 and drop > thresholds.max_avg_score_drop:
                reasons.append(f"avg_score dropped {drop:.1f}pt ({b.mean_score * 100:.1f} → "
                               f"{c.mean_score * 100:.1f})")
        bl, cl = b.latency.mean_ms, c.latency.mean_ms
        if bl and cl is not None and bl > 0 and (cl - bl) / bl > \
                thresholds.max_latency_increase_pct:
            reasons.append(f"avg_latency increased {(cl - bl) / bl:.0%} ({bl:.0f}ms → "
                           f"{cl:.0f}ms)")
    return CompareVerdict(regression_detected=bool(reasons), reasons=reasons,
                          thresholds_used=thresholds)


def config_diff(base: RunRecord, cand: RunRecord) -> list[ConfigChange]:
    """Every leaf of the two runs' config snapshots that differs, by dotted path."""
    def flat(value: Any, prefix: str = "") -> dict[str, Any]:
        if isinstance(value, dict) and value:
            out: dict[str, Any] = {}
            for k, v in value.items():
                out.update(flat(v, f"{prefix}.{k}" if prefix else str(k)))
            return out
        return {prefix: value}

    a = flat(base.config.model_dump(mode="json"))
    b = flat(cand.config.model_dump(mode="json"))
    return [ConfigChange(field=k, old_value=a.get(k), new_value=b.get(k))
            for k in sorted(a.keys() | b.keys())
            if json.dumps(a.get(k), sort_keys=True) != json.dumps(b.get(k), sort_keys=True)]


def compare(store: RunStore, baseline_id: str, candidate_id: str,
            thresholds: Thresholds | None = None, cases_shown: int = CASES_SHOWN) \
        -> RunComparison:
    """Compare two completed runs. Raises :class:`RunNotFound`, :class:`RunNotCompleted`
    (baseline checked first) or :class:`NotComparable`."""
    thresholds = thresholds or Thresholds()
    base, cand = find_run(store, baseline_id), find_run(store, candidate_id)
    if base is None:
        raise RunNotFound("baseline")
    if cand is None:
        raise RunNotFound("candidate")
    for role, run in (("baseline", base), ("candidate", cand)):
        if run.status is not RunStatus.COMPLETED:
            raise RunNotCompleted(role, run.status.value)
    before, after = _case_rows(store, base.id), _case_rows(store, cand.id)
    try:
        result = compare_runs({"id": base.id, "status": base.status.value},
                              {"id": cand.id, "status": cand.status.value}, before, after,
                              allow_incomplete=True)
    except ComparisonRefused as exc:
        raise NotComparable(exc.message) from None
    cases = [CaseComparison(
        case_id=d.case_id, repeat=d.repeat, status=_status(d), baseline_score=d.before,
        candidate_score=d.after, score_delta=None if d.delta is None else round(d.delta, 4),
        baseline_verdict=d.verdict_before, candidate_verdict=d.verdict_after)
        for d in result.cases]
    totals = Totals(
        regressions=sum(c.status == "regression" for c in cases),
        improvements=sum(c.status == "improvement" for c in cases),
        unchanged=sum(c.status == "unchanged" for c in cases),
        errors=sum(c.status == "error" for c in cases))
    rank = {"regression": 0, "error": 1, "improvement": 2, "unchanged": 3}
    cases.sort(key=lambda c: (rank[c.status], c.score_delta if c.score_delta is not None
                              else 0.0, c.case_id, c.repeat))
    b, c = base.summary, cand.summary
    metrics = []
    for name in sorted(set(b.evaluators if b else {}) | set(c.evaluators if c else {})):
        bm = b.evaluators[name].mean if b and name in b.evaluators else None
        cm = c.evaluators[name].mean if c and name in c.evaluators else None
        d = _delta(cm, bm)
        metrics.append(MetricComparison(
            name=name, baseline_mean=bm, candidate_mean=cm, delta=d,
            status="unchanged" if not d else "regression" if d < 0 else "improvement"))
    metrics.sort(key=lambda m: (m.delta is None, m.delta or 0.0, m.name))
    baselines = baseline_ids(store)
    return RunComparison(
        baseline=_item(base, baselines), candidate=_item(cand, baselines),
        verdict=verdict(base, cand, thresholds),
        pass_rate_delta=_delta(c.pass_rate if c else None, b.pass_rate if b else None),
        avg_score_delta=_delta(None if c is None or c.mean_score is None else c.mean_score * 100,
                               None if b is None or b.mean_score is None else b.mean_score * 100),
        latency_avg_delta_ms=_delta(c.latency.mean_ms if c else None,
                                    b.latency.mean_ms if b else None),
        latency_p95_delta_ms=_delta(c.latency.p95_ms if c else None,
                                    b.latency.p95_ms if b else None),
        cost_delta_usd=_delta(c.usage.cost if c else None, b.usage.cost if b else None, 6),
        totals=totals, cases=cases[:cases_shown], cases_truncated=len(cases) > cases_shown,
        metrics=metrics, baseline_only=result.only_before, candidate_only=result.only_after,
        warnings=[f"comparing the cases both runs hold: {r}" for r in result.incomplete],
        config_diff=config_diff(base, cand))

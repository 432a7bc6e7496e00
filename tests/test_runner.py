"""The runner and the run store: results written as they complete, resume without duplicates."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import func, select

from assay.judges import Contains, ExactMatch, SemanticSimilarity
from assay.llm.engine import JudgeEngine
from assay.report.rows import agentv_row
from assay.run.runner import Runner, case_verdict
from assay.store import schema
from assay.store.runs import RunStore, StoreError
from assay.suites import Suite, SuiteCase
from assay.targets import Target
from assay.types.case import Case
from assay.types.config import Gates, RunConfig
from assay.types.execution import Execution
from assay.types.score import Score


class EchoTarget(Target):
    """Answers with the case input, counting calls; can fail or stall chosen cases."""

    name = "echo"

    def __init__(self, fail: set[str] | None = None, stall: set[str] | None = None) -> None:
        self.calls: list[str] = []
        self.fail = fail or set()
        self.stall = stall or set()

    async def run(self, case: Case) -> Execution:
        self.calls.append(case.id)
        if case.id in self.stall:
            await asyncio.sleep(3600)
        if case.id in self.fail:
            raise RuntimeError("agent crashed")
        return Execution(input=case.input, output=str(case.input))


def _suite(n: int = 6) -> Suite:
    cases = [SuiteCase(case=Case(id=f"case-{i}", input=f"answer {i}",
                                 expected_output=f"answer {i}" if i % 3 else "something else"))
             for i in range(n)]
    return Suite(name="demo", evaluators=[ExactMatch(), Contains(search_text="answer"),
                                          SemanticSimilarity()], cases=cases)


def _count(store: RunStore, table, run_id: str) -> int:  # type: ignore[no-untyped-def]
    with store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table).where(
            table.c.run_id == run_id)).scalar_one())


async def test_run_stores_every_result_and_computes_verdicts(store_url, engine_factory):
    store = RunStore(store_url)
    target = EchoTarget()
    runner = Runner(_suite(), lambda _n: target, engine_factory(), store, RunConfig())
    run_id = store.create_run("demo", {"run": RunConfig().model_dump()})
    result = await runner.run(run_id)
    assert _count(store, schema.scores, run_id) == 18
    assert _count(store, schema.case_results, run_id) == 6
    assert _count(store, schema.executions, run_id) == 6
    by_id = {r.case_id: r for r in result.records}
    assert by_id["case-1"].verdict == "pass" and by_id["case-1"].score == pytest.approx(1.0)
    # case-0: exact 0, contains 1, similarity F1("something else", "answer 0") = 0
    assert by_id["case-0"].score == pytest.approx(1 / 3)
    assert by_id["case-0"].verdict == "fail"
    assert result.summary.verdicts == {"pass": 4, "fail": 2}
    assert result.summary.gate_failures  # two failing cases, none allowed
    row = agentv_row(by_id["case-1"])
    assert row["eval_id"] == "case-1" and row["candidate_answer"] == "answer 1"
    assert {e["name"] for e in row["evaluator_results"]} == {
        "exact_match", "contains", "semantic_similarity"}


async def test_target_failure_becomes_error_scores_not_zero(store_url, engine_factory):
    store = RunStore(store_url)
    runner = Runner(_suite(3), lambda _n: EchoTarget(fail={"case-1"}), engine_factory(),
                    store, RunConfig(gates=Gates(max_failed=None)))
    run_id = store.create_run("demo", {})
    result = await runner.run(run_id)
    failed = next(r for r in result.records if r.case_id == "case-1")
    assert failed.verdict == "error" and failed.score is None
    assert all(s.error and s.error.code == "target_failed" for s in failed.scores)
    assert "agent crashed" in failed.execution.error
    assert result.summary.scored == 2
    assert result.summary.gate_failures == [
        "3 evaluator score(s) could not be computed, 1 case(s) left with no score "
        "(allowed 0 errors)"]


async def test_interrupted_run_resumes_each_pair_exactly_once(store_url, engine_factory):
    store = RunStore(store_url)
    suite = _suite(8)
    stalled = EchoTarget(stall={"case-5", "case-6"})
    runner = Runner(suite, lambda _n: stalled, engine_factory(), store,
                    RunConfig(concurrency=3))
    run_id = store.create_run("demo", {})
    task = asyncio.ensure_future(runner.run(run_id))
    for _ in range(200):
        await asyncio.sleep(0.02)
        if _count(store, schema.case_results, run_id) >= 5:
            break
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    finished_before = _count(store, schema.case_results, run_id)
    assert 5 <= finished_before < 8
    resumed_target = EchoTarget()
    resumed = Runner(suite, lambda _n: resumed_target, engine_factory(), store, RunConfig())
    result = await resumed.run(run_id)
    assert len(result.records) == 8
    assert _count(store, schema.scores, run_id) == 8 * 3
    assert _count(store, schema.case_results, run_id) == 8
    # Cases finished before the interruption were not run again.
    assert set(resumed_target.calls) <= {"case-5", "case-6", "case-7"}
    assert {"case-5", "case-6"} <= set(resumed_target.calls)


async def test_resume_reuses_a_stored_execution_and_runs_only_missing_evaluators(
        store_url, engine_factory, mock_server):
    store = RunStore(store_url)
    suite = _suite(1)
    run_id = store.create_run("demo", {})
    store.record_execution(run_id, "case-0", 0, Execution(output="answer 0"))
    target = EchoTarget()
    await Runner(suite, lambda _n: target, engine_factory(), store, RunConfig()).run(run_id)
    assert target.calls == []
    assert _count(store, schema.scores, run_id) == 3
    assert mock_server.stats.requests == 1


def test_case_verdict_weights_and_errors():
    a, b = ExactMatch(name="a", weight=3), Contains(name="b", search_text="x", weight=1)
    from assay.types.score import Score

    ok = [Score(name="a", value=1.0), Score(name="b", value=0.0)]
    assert case_verdict([a, b], ok, RunConfig()) == (0.75, "borderline")
    err = [Score.failed("a", "x", "boom"), Score(name="b", value=1.0)]
    assert case_verdict([a, b], err, RunConfig()) == (1.0, "pass")
    both = [Score.failed("a", "x", "boom"), Score.failed("b", "x", "boom")]
    assert case_verdict([a, b], both, RunConfig()) == (None, "error")
    required = [Score(name="a", value=1.0, blocking=True), Score(name="b", value=1.0)]
    assert case_verdict([a, b], required, RunConfig()) == (1.0, "fail")


def test_store_migrations_apply_once_and_inserts_are_idempotent(store_url):
    store = RunStore(store_url)
    run_id = store.create_run("s", {})
    from assay.types.score import Score

    for _ in range(3):
        store.record_score(run_id, "c", 0, Score(name="e", value=0.5))
    assert store.score_count(run_id) == 1
    again = RunStore(store_url)
    from assay.store import migrations

    with again.engine.connect() as conn:
        assert migrations.recorded_revisions(conn) == (migrations.revisions()[-1],)
    assert migrations.ensure_schema(again.engine) == []
    assert again.run_record(run_id[:12]).id == run_id


def _fill_disk(store: RunStore) -> None:
    """Make the database full from now on, as a full disk would (works even for root)."""
    from sqlalchemy import event

    def cap(dbapi_conn, _record):  # type: ignore[no-untyped-def]
        cursor = dbapi_conn.cursor()
        pages = cursor.execute("PRAGMA page_count").fetchone()[0]
        cursor.execute(f"PRAGMA max_page_count={pages}")
        cursor.close()

    store.engine.dispose()
    event.listen(store.engine, "connect", cap)


async def test_store_full_mid_run_is_a_clear_error_and_keeps_what_was_written(
        tmp_path: Path, engine_factory):
    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    suite = _suite(40)
    run_id = store.create_run("demo", {})
    first = Suite(name="demo", evaluators=suite.evaluators, cases=suite.cases[:5])
    await Runner(first, lambda _n: EchoTarget(), engine_factory(), store, RunConfig()).run(run_id)
    _fill_disk(store)
    with pytest.raises(StoreError) as info:
        await Runner(suite, lambda _n: EchoTarget(), engine_factory(), store,
                     RunConfig(concurrency=2)).run(run_id)
    assert "full" in info.value.message and "kept" in info.value.message
    reader = RunStore(f"sqlite:///{tmp_path}/runs.db")
    rows = reader.case_records(run_id)
    assert len(rows) >= 5
    scores = reader.scores(run_id)
    for row in rows:  # every stored case row has all of its scores, readable
        assert len(scores[(row.case_id, row.repeat)]) == 3


def test_unknown_run_id_names_the_store(store_url):
    store = RunStore(store_url)
    with pytest.raises(StoreError, match="assay runs"):
        store.run_record("nope")


async def test_dataset_level_classification_metric_lands_in_the_summary(store_url,
                                                                        engine_factory):
    from assay.judges.deterministic.classification import BinaryClassification

    labels = [("yes", "yes"), ("yes", "no"), ("no", "yes"), ("yes", "yes"), ("no", "no")]
    cases = [SuiteCase(case=Case(id=f"c{i}", input=predicted, expected_output=expected))
             for i, (predicted, expected) in enumerate(labels)]
    judge = BinaryClassification(positive_class="yes", metric_type="precision",
                                 expected_class=None)  # type: ignore[call-arg]
    suite = Suite(name="cls", evaluators=[judge], cases=cases)
    store = RunStore(store_url)
    result = await Runner(suite, lambda _n: EchoTarget(), engine_factory(), store,
                          RunConfig(gates=Gates(max_failed=None))).run(
        store.create_run("cls", {}), keep=False)
    metric = result.summary.dataset_metrics["binary_classification"]
    # predicted yes: c0 (tp), c1 (fp), c3 (tp) -> precision 2/3
    assert metric.value == pytest.approx(2 / 3)
    assert metric.details["tp"] == 2 and metric.details["fp"] == 1
    assert result.records == []  # not kept, yet summarised


def test_whether_an_evaluator_is_a_dataset_metric_is_asked_once_per_class(monkeypatch):
    """A runtime protocol check costs some 20 us: asked for every evaluator of every case, it
    was a few percent of a cached re-run. It is asked once per evaluator class."""
    import assay
    from assay.judges.base import DatasetMetric

    checks = []
    meta = type(DatasetMetric)
    original = meta.__instancecheck__

    def counted(cls, instance):  # type: ignore[no-untyped-def]
        if cls is DatasetMetric:
            checks.append(type(instance))
        return original(cls, instance)

    monkeypatch.setattr(meta, "__instancecheck__", counted)
    monkeypatch.setattr("assay.judges.base._METRIC_CLASSES", {})
    rows = [{"id": f"c{i}", "input": "q", "expected_output": "a"} for i in range(200)]
    result = assay.evaluate(rows, target=lambda question: "a",
                            evaluators=["exact_match", "contains"], store=":memory:")
    assert result.summary.cases == 200
    assert len(checks) <= 2, f"{len(checks)} protocol checks for 200 cases"



class GrowingExecutor:
    """A CaseExecutor in this process whose capacity grows to ``grown`` once ``grow_after``
    cases are done (a cluster a node joined), counting the cases in flight at once. A case
    ``plan`` names stalls (``stall``) or raises (``fail``)."""

    def __init__(self, first: int, grown: int, grow_after: int,
                 plan: dict[str, str] | None = None) -> None:
        self.slots, self.grown, self.grow_after = first, grown, grow_after
        self.plan = plan or {}
        self.done = self.in_flight = self.peak = 0
        self.tasks: set[asyncio.Task[object]] = set()

    def capacity(self) -> int:
        return self.slots

    async def run_case(self, item: SuiteCase, repeat: int, execution: Execution | None,
                       have: dict[str, Score]) -> tuple[Execution, dict[str, Score]]:
        self.tasks.add(asyncio.current_task())  # type: ignore[arg-type]
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            if self.plan.get(item.case.id) == "fail":
                raise RuntimeError("the cluster broke")
            await asyncio.sleep(3600 if self.plan.get(item.case.id) == "stall" else 0.01)
        finally:
            self.in_flight -= 1
        self.done += 1
        if self.done == self.grow_after:
            self.slots = self.grown
        return (Execution(input=item.case.input, output=str(item.case.input)),
                {"exact_match": Score(name="exact_match", value=1.0)})


def _elsewhere(executor: GrowingExecutor, store: RunStore, engine: JudgeEngine,
               cases: int = 30) -> Runner:
    suite = Suite(name="demo", evaluators=[ExactMatch()], cases=[
        SuiteCase(case=Case(id=f"case-{i}", input=f"answer {i}", expected_output=f"answer {i}"))
        for i in range(cases)])
    return Runner(suite, lambda _n: EchoTarget(), engine, store, RunConfig(),
                  executor=executor)


async def test_a_run_keeps_more_cases_in_flight_when_its_executor_grows(tmp_path: Path,
                                                                        engine_factory):
    """A cluster that a node joined runs more cases at once: the runner adds slots when its
    executor's capacity grows (it never removes one), and every case is stored once."""
    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    executor = GrowingExecutor(first=2, grown=5, grow_after=4)
    run_id = store.create_run("demo", {})
    result = await _elsewhere(executor, store, engine_factory()).run(run_id)
    assert result.summary.cases == 30 and result.summary.verdicts == {"pass": 30}
    assert executor.peak == 5
    assert _count(store, schema.case_results, run_id) == 30


@pytest.mark.parametrize("ending", ["error", "cancel"])
async def test_slots_added_as_the_executor_grows_end_as_the_first_ones_do(
        tmp_path: Path, engine_factory, ending):
    """One slot; its first case done, the capacity grows to three. The first slot's next
    case waits for ever; a slot added later raises (or the run is cancelled): the run raises
    that at once, not when the first slot ends, and no slot is left running."""
    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    later = "fail" if ending == "error" else "stall"
    executor = GrowingExecutor(first=1, grown=3, grow_after=1, plan={
        "case-1": "stall", "case-2": later, "case-3": later})
    run = asyncio.ensure_future(_elsewhere(executor, store, engine_factory(), cases=4).run(
        store.create_run("demo", {})))
    if ending == "error":
        with pytest.raises(RuntimeError, match="the cluster broke"):
            await asyncio.wait_for(run, 10)
    else:
        for _ in range(500):
            await asyncio.sleep(0.01)
            if executor.in_flight == 3:
                break
        assert executor.in_flight == 3  # the first slot and the two added
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
    assert len(executor.tasks) == 3 and all(task.done() for task in executor.tasks)


class LongAnswers(Target):
    """Answers each case with ``kb`` KB of text, counting calls."""

    name = "long"

    def __init__(self, kb: int) -> None:
        self.calls = 0
        self.kb = kb

    async def run(self, case: Case) -> Execution:
        self.calls += 1
        return Execution(input=case.input, output=f"{case.id} " + "a" * (self.kb * 1024))


async def _peak_of_resume(store_url: str, n: int, kb: int, engine: JudgeEngine
                          ) -> int:
    """A run of ``n`` cases answered in ``kb`` KB each, stored whole, then resumed by a store
    opened anew (pages of 100 cases) with nothing left to run: the resume's traced peak in
    bytes."""
    import tracemalloc

    suite = Suite(name="long", evaluators=[Contains(search_text="case")], cases=[
        SuiteCase(case=Case(id=f"case-{i:05d}", input=f"q{i}")) for i in range(n)])
    first = RunStore(store_url)
    run_id = first.create_run("long", {})
    await Runner(suite, lambda _n: LongAnswers(kb), engine, first, RunConfig(concurrency=20)
                 ).run(run_id, keep=False)
    first.close()
    store = RunStore(store_url)
    store.read_page = 100
    target = LongAnswers(kb)
    seen: list[str] = []
    runner = Runner(suite, lambda _n: target, engine, store, RunConfig(concurrency=20),
                    on_record=lambda r: seen.append(r.case_id))
    tracemalloc.start()
    try:
        outcome = await runner.run(run_id, keep=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert target.calls == 0 and outcome.summary.cases == n  # every case was stored
    assert seen == [f"case-{i:05d}" for i in range(n)]  # in the suite's order, as before
    store.close()
    return peak


async def test_a_resume_holds_a_page_of_stored_answers_not_all_of_them(store_url,
                                                                       engine_factory):
    """2,000 stored answers of 20 KB (40 MB of text): the resume reads them 100 at a time
    (about 2 MB), not all at once."""
    peak = await _peak_of_resume(store_url, 2000, 20, engine_factory())
    assert peak < 15 * 2**20, f"a resume peaked at {peak / 2**20:.0f} MiB"


def test_case_records_read_in_pages_are_every_record_in_order(store_url):
    """Read 20 at a time, a run's records are those read whole, in the same order (finished
    order, ties by case id and repeat), and the read holds a page of answers, not them all."""
    import tracemalloc

    from assay.types.records import CaseRecord

    store = RunStore(store_url)
    run_id = store.create_run("s", {})
    for i in range(200):
        case = Case(id=f"c{i % 13}-{i}", input="q")
        for repeat in range(2):
            execution = Execution(output=f"{i} " + "b" * 20_000)
            score = Score(name="e", value=i / 200)
            store.record_execution(run_id, case.id, repeat, execution)
            store.record_score(run_id, case.id, repeat, score)
            store.record_case(CaseRecord(run_id=run_id, case_id=case.id, case=case,
                                         repeat=repeat, execution=execution, scores=[score],
                                         score=score.value, verdict="fail"))
    store.flush()
    store.read_page = 20
    paged = []
    tracemalloc.start()
    try:
        for record in store.iter_case_records(run_id):
            paged.append((record.case_id, record.repeat, hash(record.execution.output),
                          [s.value for s in record.scores]))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2**20, f"400 answers of 20 KB read in pages peaked at {peak / 2**20:.1f} MiB"
    whole = [(r.case_id, r.repeat, hash(r.execution.output), [s.value for s in r.scores])
             for r in store.case_records(run_id)]
    assert paged == whole and len(paged) == 400
    store.close()

"""Traces from MLflow's real tracking store (SQLite), judged, and written back as
assessments through MLflow's own client."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import assay
from assay.run.sources import SourceError, TraceQuery, open_source
from assay.run.sources.suite import read_traces
from assay.run.sources.writeback import write_back
from assay.store.runs import RunStore
from tests.server_support import free_port
from tests.trace_support import ROOT, trace_part

pytestmark = pytest.mark.traces


@pytest.fixture(scope="module", autouse=True)
def mlflow() -> ModuleType:
    """MLflow, imported when a test here runs: imported with the module, it cost every test
    process 0.75 s, the fast pass's too, which runs none of these tests."""
    return trace_part("mlflow")


@pytest.fixture
def tracking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mlflow: ModuleType) -> str:
    """A tracking store with three traces of an agent made by ``@mlflow.trace`` and
    ``mlflow.start_span``: two answered, one failed."""
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    experiment = mlflow.set_experiment("agent")

    @mlflow.trace(span_type="TOOL")
    def lookup(city: str) -> str:
        return {"France": "Paris", "Italy": "Rome"}[city]

    @mlflow.trace
    def agent(question: str) -> str:
        with mlflow.start_span("retrieve", span_type="RETRIEVER") as span:
            span.set_inputs({"query": question})
            span.set_outputs([{"page_content": "Paris is the capital of France.",
                               "metadata": {"doc_uri": "wiki/France"}}])
        city = "France" if "France" in question else "Italy" if "Italy" in question else "?"
        return f"The capital is {lookup(city)}."

    agent("What is the capital of France?")
    agent("What is the capital of Italy?")
    with pytest.raises(KeyError):
        agent("What is the capital of Atlantis?")
    mlflow.set_tracking_uri(previous)
    assert experiment.experiment_id
    return uri


def test_mlflow_traces_become_executions_with_their_filter(tracking: str) -> None:
    source = open_source(f"mlflow:{tracking}#agent")
    cases = read_traces(source, TraceQuery())
    assert len(cases) == 3
    by_input = {str(c.reading.execution.input): c for c in cases}
    france = by_input[str({"question": "What is the capital of France?"})].reading
    assert france.execution.output == "The capital is Paris."
    assert france.execution.latency_ms is not None and france.execution.latency_ms > 0
    assert any("no token counts" in n for n in france.notes)
    from assay.traces.retrieval import retrieved_context

    assert [c.doc_uri for c in retrieved_context(france.execution).chunks] == ["wiki/France"]
    from assay.traces.tools import tool_calls

    (call,) = tool_calls(france.execution)
    assert (call.name, call.args, call.output) == ("lookup", {"city": "France"}, "Paris")
    failed = [c for c in cases if c.reading.failed]
    assert len(failed) == 1 and failed[0].reading.execution.error
    only_ok = read_traces(source, TraceQuery(filter="attributes.status = 'OK'"))
    assert len(only_ok) == 2
    assert read_traces(source, TraceQuery(since=4_000_000_000)) == []


def test_a_run_of_mlflow_traces_is_written_back_once(tracking: str, tmp_path: Path,
                                                    mlflow: ModuleType) -> None:
    store = f"sqlite:///{tmp_path}/runs.db"
    result = assay.evaluate(traces=f"mlflow:{tracking}#agent",
                            trace_filter="attributes.status = 'OK'", store=store,
                            evaluators=[{"type": "contains", "search_text": "capital",
                                         "name": "mentions_capital"}])
    assert result.summary.cases == 2
    assert all(r.case_id.startswith("tr-") for r in result.records)
    runs = RunStore(store)
    first = write_back(runs, result.run_id, f"mlflow:{tracking}")
    assert not isinstance(first, dict)
    assert (first.written, first.already, first.problems) == (4, 0, [])
    second = write_back(runs, result.run_id, f"mlflow:{tracking}")
    assert not isinstance(second, dict)
    assert (second.written, second.already) == (0, 4)
    client = mlflow.MlflowClient(tracking_uri=tracking)
    for record in result.records:
        assessments = client.get_trace(record.case_id).info.assessments
        names = sorted(a.name for a in assessments)
        assert names == ["assay.mentions_capital", "assay.verdict"]
        score = next(a for a in assessments if a.name == "assay.mentions_capital")
        assert score.value == 1.0
        assert score.source.source_id == f"assay:{result.run_id}"


def test_an_unreachable_server_and_a_store_of_another_version_are_clear_errors(
        tracking: str, tmp_path: Path) -> None:
    down = open_source(f"mlflow:http://127.0.0.1:{free_port()}")
    with pytest.raises(SourceError) as unreachable:
        read_traces(down, TraceQuery())
    assert "mlflow:http://127.0.0.1" in unreachable.value.message
    assert "failed" in unreachable.value.message
    path = tracking.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE alembic_version SET version_num = 'ffffffffffff'")
    done = subprocess.run(  # a new process: MLflow keeps a store it opened once
        [sys.executable, "-m", "assay", "run", "--traces", f"mlflow:{tracking}",
         "--judges", "safety", "--store", f"sqlite:///{tmp_path}/runs.db"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert f"mlflow:{tracking}: opening the tracking store failed" in done.stdout + done.stderr
    with pytest.raises(SourceError, match="no experiment is named 'nope'"):
        read_traces(open_source(f"mlflow:{tracking}#nope"), TraceQuery())


def test_a_sqlite_tracking_store_that_is_not_there_is_an_error_and_not_made(
        tmp_path: Path) -> None:
    """``mlflow:sqlite:///typo.db`` made that store (MLflow's client creates it, and its
    folders) and found no traces in it; written back to, it took assessments for traces it
    does not hold."""
    missing = tmp_path / "no-such-dir" / "typo.db"
    with pytest.raises(SourceError, match=f"no MLflow tracking store at {missing}: the file "
                       "does not exist"):
        read_traces(open_source(f"mlflow:sqlite:///{missing}"), TraceQuery())
    assert not missing.parent.exists()



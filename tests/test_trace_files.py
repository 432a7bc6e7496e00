"""Traces from files: Langfuse exports made by the Langfuse SDK's own models, OTLP JSON
exports, and what a file that is neither says."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import orjson
import pytest

import assay
from assay.errors import ConfigError
from assay.run.sources import SourceError, TraceQuery, open_source
from assay.run.sources.suite import parse_time, read_traces
from assay.traces.tools import tool_calls
from tests.trace_support import agent_trace, export, span, trace_part

T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)


def _langfuse_export(path: Path) -> None:
    """Two traces as Langfuse's SDK models write them: an agent with a tool call and a model
    call, and one whose root failed."""
    from langfuse.api import ObservationV2

    def observation(**fields: object) -> dict[str, object]:
        made = ObservationV2(project_id="p", **fields)  # type: ignore[arg-type]
        return made.model_dump(mode="json", by_alias=True, exclude_none=True)

    second = dt.timedelta(seconds=1)
    items = [
        observation(id="00000000000000a1", trace_id="lf-trace-1", type="AGENT", name="agent",
                    start_time=T0, end_time=T0 + 3 * second,
                    input={"question": "Weather in Paris?"}, output="Sunny, 21C"),
        observation(id="00000000000000a2", trace_id="lf-trace-1", type="TOOL",
                    name="get_weather", parent_observation_id="00000000000000a1",
                    start_time=T0 + second, end_time=T0 + 2 * second,
                    input={"city": "Paris"}, output="sunny 21"),
        observation(id="00000000000000a3", trace_id="lf-trace-1", type="GENERATION",
                    name="llm", parent_observation_id="00000000000000a1", model="gpt-4o",
                    start_time=T0 + 2 * second, end_time=T0 + 3 * second,
                    usage_details={"input": 40, "output": 7}),
        observation(id="00000000000000b1", trace_id="lf-trace-2", type="AGENT", name="agent",
                    start_time=T0 + 60 * second, end_time=T0 + 61 * second,
                    input="Weather on Mars?", level="ERROR", status_message="no station"),
    ]
    path.write_text(json.dumps({"data": items}))


@pytest.mark.traces
def test_a_langfuse_export_is_read_by_the_one_reader(tmp_path: Path) -> None:
    trace_part("langfuse")
    path = tmp_path / "langfuse.json"
    _langfuse_export(path)
    cases = {c.trace.trace_id: c.reading for c in
             read_traces(open_source(f"langfuse:{path}"), TraceQuery())}
    assert set(cases) == {"lf-trace-1", "lf-trace-2"}
    first = cases["lf-trace-1"].execution
    assert first.input == {"question": "Weather in Paris?"}
    assert first.output == "Sunny, 21C"
    assert first.latency_ms == pytest.approx(3000)
    assert first.usage is not None and (first.usage.prompt_tokens,
                                        first.usage.completion_tokens) == (40, 7)
    (call,) = tool_calls(first)
    assert (call.name, call.args, call.output) == ("get_weather", {"city": "Paris"}, "sunny 21")
    failed = cases["lf-trace-2"]
    assert failed.failed and "no station" in (failed.execution.error or "")
    assert any("no output" in n for n in failed.notes)
    result = assay.evaluate(traces=f"langfuse:{path}", store=":memory:", since=T0 + 30 *
                            dt.timedelta(seconds=1), evaluators=[
                                {"type": "contains", "search_text": "Sunny", "name": "s"}])
    assert [r.case_id for r in result.records] == ["lf-trace-2"]


def test_an_otlp_file_is_grouped_by_trace_and_filtered(tmp_path: Path) -> None:
    first, spans_a = agent_trace("q1", "a1", start=1_790_000_000, **{"user.tier": "paid"})
    second, spans_b = agent_trace("q2", "a2", start=1_790_000_100, error=True)
    path = tmp_path / "export.json"
    path.write_bytes(orjson.dumps(export(*spans_a, *spans_b)))
    source = open_source(str(path))
    assert {c.trace.trace_id for c in read_traces(source, TraceQuery())} == {first, second}
    paid = read_traces(source, TraceQuery(filter="user.tier=paid"))
    assert [c.trace.trace_id for c in paid] == [first]
    failed = read_traces(source, TraceQuery(filter="status=error"))
    assert [c.trace.trace_id for c in failed] == [second]
    assert read_traces(source, TraceQuery(since=1_790_000_050)) == read_traces(
        source, TraceQuery(filter="status!=ok"))
    result = assay.evaluate(traces=str(path), store=":memory:", trace_filter="name=agent",
                            evaluators=[{"type": "contains", "search_text": "a1",
                                         "name": "a1"}])
    by_id = {r.case_id: r for r in result.records}
    assert by_id[first].verdict.value == "pass"
    assert by_id[first].case.metadata["trace"]["spans"] == 3
    assert by_id[second].execution.error  # the failed trace is judged as failed


def test_what_a_file_lacks_is_said_and_bad_files_are_clear_errors(tmp_path: Path) -> None:
    orphan = tmp_path / "spans.json"
    orphan.write_bytes(orjson.dumps([{"name": "agent", "attributes": {"input.value": "q"}}]))
    (case,) = read_traces(open_source(str(orphan)), TraceQuery())
    assert case.trace.trace_id == "spans"
    notes = case.reading.notes
    assert any("no trace id" in n for n in notes)
    assert any("no output" in n for n in notes)
    assert any("no latency" in n for n in notes)
    broken = tmp_path / "broken.json"
    broken.write_text("{nope")
    with pytest.raises(SourceError, match=r"broken\.json: is neither JSON"):
        read_traces(open_source(str(broken)), TraceQuery())
    with pytest.raises(SourceError, match="cannot be read"):
        read_traces(open_source(str(tmp_path / "missing.json")), TraceQuery())
    number = tmp_path / "number.json"
    number.write_text("3")
    with pytest.raises(SourceError, match="not a Langfuse export"):
        read_traces(open_source(f"langfuse:{number}"), TraceQuery())
    with pytest.raises(ConfigError, match="not one assay reads"):
        open_source("zipkin:http://x")
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        read_traces(open_source(str(orphan)), TraceQuery(filter="nonsense"))
    with pytest.raises(ConfigError, match="a time ago"):
        parse_time("yesterday")
    assert parse_time("2h", now=10_000) == 10_000 - 7200
    for never in (float("nan"), float("inf"), 10**400, "99999999w"):  # a suite's .nan too
        with pytest.raises(ConfigError, match="not a time a date can hold"):
            parse_time(never, "since")


def test_since_takes_seconds_since_1970_as_a_command_line_writes_them(tmp_path: Path) -> None:
    """``--since 1790000001`` (seconds since 1970, as the option's help and its error say)
    was refused: a command line gives text, and text was read only as a date or a time
    ago."""
    from typer.testing import CliRunner

    from assay.cli.app import app
    from assay.store.runs import RunStore

    assert parse_time("1790000001") == 1_790_000_001.0
    assert parse_time(" 1790000001.5 ") == 1_790_000_001.5
    assert parse_time("20261101") == dt.datetime(2026, 11, 1, tzinfo=dt.UTC).timestamp()
    path = tmp_path / "traces.json"
    path.write_bytes(orjson.dumps(export(*[
        s for i in range(3) for s in agent_trace(f"q{i}", f"a{i}", start=1_790_000_000 + i)[1]])))
    (tmp_path / "EVAL.yaml").write_text("execution:\n  evaluators:\n    - {name: a, type: "
                                        "contains, search_text: a}\ncases:\n  - {id: x, "
                                        "input: q}\n")
    store = tmp_path / "runs.db"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "EVAL.yaml"), "--traces",
                                      f"otlp:{path}", "--since", "1790000001", "--store",
                                      f"sqlite:///{store}"])
    assert result.exit_code == 0, result.output
    (run,) = RunStore(f"sqlite:///{store}").run_records()
    assert run.summary is not None and run.summary.cases == 2


def test_a_skewed_span_and_a_long_trace_are_said_per_trace(tmp_path: Path) -> None:
    skewed = span("ab" * 16, "agent", start=1_790_000_010, end=1_790_000_000,
                  **{"input.value": "q", "output.value": "a"})
    path = tmp_path / "skewed.json"
    path.write_bytes(orjson.dumps(export(skewed)))
    (case,) = read_traces(open_source(str(path)), TraceQuery())
    assert case.reading.execution.latency_ms is None
    assert any("clock skew" in n for n in case.reading.notes)


def test_a_missing_trace_part_fails_under_ci_and_skips_elsewhere(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="trace tests must run in CI"):
        trace_part("assay_no_such_part")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match=r"scripts/setup\.sh installs it"):
        trace_part("assay_no_such_part")
    assert trace_part("json").dumps([]) == "[]"


def test_runs_of_traces_are_compared_and_shown_as_any_run(tmp_path: Path) -> None:
    """Two runs of the same traces, the second after the agent's answers changed: the one
    comparison sees the regression trace by trace (a case is a trace), and the case page
    shows the trace's id and its tool calls."""
    store = f"sqlite:///{tmp_path}/runs.db"
    ids = ("0" * 31 + "1", "0" * 31 + "2")
    runs = []
    for answers in (("answer 1", "answer 2"), ("answer 1", "no idea")):
        path = tmp_path / "export.json"
        spans = [s for i, (trace_id, answer) in enumerate(zip(ids, answers, strict=True))
                 for s in agent_trace(f"q{i}", answer, trace_id=trace_id,
                                      start=1_790_000_000 + i)[1]]
        path.write_bytes(orjson.dumps(export(*spans)))
        runs.append(assay.evaluate(traces=str(path), store=store, evaluators=[
            {"type": "contains", "search_text": "answer", "name": "answers"}]))
    found = assay.compare(runs[0].run_id, runs[1].run_id, store=store)
    assert found.verdict.regression_detected and found.exit_code() == 1
    regressed = [c.test_case_id for c in found.test_case_comparisons if c.status == "regression"]
    assert regressed == [ids[1]]
    from assay.report.views import case_detail

    record = next(r for r in runs[1].records if r.case_id == ids[1])
    page = case_detail(record)
    assert page.record.case.metadata["trace"]["id"] == ids[1]
    assert [(c.name, c.args) for c in page.tool_calls] == [("lookup", {"q": "capital"})]

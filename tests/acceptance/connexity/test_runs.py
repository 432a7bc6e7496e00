"""Acceptance tests C-11 to C-15, B-02 and B-04: run aggregates, the two dimensions, the
threshold snapshot, repetitions and latency."""

from __future__ import annotations

import asyncio
import json
import shutil
import textwrap
from pathlib import Path

import pytest

import assay
from assay.store.runs import RunStore
from assay.targets.callable import load_function
from assay.types.records import case_latency
from tests.acceptance.connexity.harness import HERE, cli, has, judge_record, run, summary
from tests.acceptance.connexity.stub_tables import answer, same

AGGREGATES = HERE / "aggregates.yaml"
TARGETS = HERE / ".assay" / "targets.yaml"


def test_c11_run_aggregates(stub, store):
    code, out, run_id = run(store, AGGREGATES)
    assert code == 1, out
    s = summary(store, run_id)
    assert (s["total_executions"], s["unique_test_case_count"], s["passed_count"],
            s["failed_count"], s["error_count"]) == (5, 5, 2, 1, 2)
    assert s["pass_rate"] == 0.4 and s["cases_pass_rate_pct"] == 40.0
    assert abs(s["weighted_metrics_score_pct"] - 230 / 3) <= 1e-9
    assert s["metrics_passed"] is False and s["cases_passed"] is False
    assert has(out, "metrics dimension", "cases dimension")


def test_c11_connexity_compat_numbers(stub, store):
    _code, _out, run_id = run(store, AGGREGATES, "--connexity-compat")
    s = summary(store, run_id)
    assert (s["error_count"], s["failed_count"], s["passed_count"]) == (1, 2, 2)
    assert s["weighted_metrics_score_pct"] == 57.5  # (90 + 80 + 60 + 0) / 4


def test_b04_error_rates_reported_both_ways(stub, store):
    code, out, run_id = run(store, AGGREGATES)
    code, out = cli("show", run_id, "--store", store, "--summary", "--json")
    assert code == 0, out
    shown = json.loads(out)
    assert shown["pass_rate_incl_errors"] == 0.4
    assert abs(shown["pass_rate_excl_errors"] - 2 / 3) <= 1e-9
    assert shown["error_rate"] == 0.4


def _suite(tmp_path: Path, cases: list[tuple[str, str]], extra: str = "") -> Path:
    """A suite of one-shot cases (id, stub marker) judged by the stub."""
    lines = "\n".join(f'  - {{id: {cid}, input: "{marker} q", metadata: {{output: "a"}}}}'
                      for cid, marker in cases)
    path = tmp_path / "suite.yaml"
    path.write_text(f"name: dims\nscoring: connexity\n{extra}execution:\n  evaluators:\n"
                    f'    - {{type: connexity_judge, model: "custom:stub"}}\n'
                    f"evalcases:\n{lines}\n", encoding="utf-8")
    return path


def test_c12_dimension_thresholds(stub, store, tmp_path):
    stub.table.update({"⟦S80⟧": answer(same(4)), "⟦S90⟧": answer([5, 5, 5, 5, 5, 0, 5, 5]),
                       "⟦S60⟧": answer(same(3))})
    two = _suite(tmp_path, [("a", "⟦S80⟧"), ("b", "⟦S90⟧")])
    code, out, run_id = run(store, two, "--metrics-pass-threshold", "80")
    s = summary(store, run_id)
    assert s["weighted_metrics_score_pct"] == 85.0 and s["metrics_passed"] is True
    assert s["cases_pass_rate_pct"] == 100.0 and s["cases_passed"] is True
    assert code == 0, out
    code, out, run_id = run(store, two, "--metrics-pass-threshold", "90")
    assert summary(store, run_id)["metrics_passed"] is False and code == 1
    three = _suite(tmp_path, [("a", "⟦S80⟧"), ("b", "⟦S90⟧"), ("c", "⟦S60⟧")])
    code, out, run_id = run(store, three, "--metrics-pass-threshold", "0",
                            "--cases-pass-threshold", "100")
    s = summary(store, run_id)
    assert abs(s["cases_pass_rate_pct"] - 200 / 3) <= 1e-9 and s["cases_passed"] is False
    assert code == 1
    code, out, run_id = run(store, three, "--metrics-pass-threshold", "0",
                            "--cases-pass-threshold", "50")
    assert summary(store, run_id)["cases_passed"] is True and code == 0
    exact = _suite(tmp_path, [("a", "⟦S80⟧"), ("b", "⟦S80⟧")])
    code, out, run_id = run(store, exact)
    s = summary(store, run_id)
    assert s["weighted_metrics_score_pct"] == 80.0 and s["metrics_pass_threshold"] == 80.0
    assert s["metrics_passed"] is True  # inclusive


def test_c12_either_dimension_fails_the_run_alone(stub, store, tmp_path):
    stub.table.update({"⟦S60⟧": answer(same(3)), "⟦S100⟧": answer(same(5))})
    low_scores = _suite(tmp_path, [("a", "⟦S60⟧")], "thresholds: {cases_pass_threshold: 0}\n")
    code, _out, run_id = run(store, low_scores)
    s = summary(store, run_id)
    assert (s["metrics_passed"], s["cases_passed"], code) == (False, True, 1)
    assert s["passed"] is False


def _interrupt_after_first_case(path: Path, store: str) -> str:
    """Start a run of ``path`` and cancel it (as Ctrl-C does) once one case is stored."""
    async def go() -> None:
        task = asyncio.current_task()
        assert task is not None

        def stop(record: object) -> None:
            task.cancel()

        try:
            await assay.evaluate_async(path, store=store, cache="off", concurrency=1,
                                       on_record=stop)
        except asyncio.CancelledError:
            return
        raise AssertionError("the run was not interrupted")

    asyncio.run(go())
    runs = RunStore(store).run_records(1)
    assert runs[0].status.value == "interrupted"
    return runs[0].id


def test_c13_thresholds_are_snapshotted_when_a_run_starts(stub, store, tmp_path):
    path = tmp_path / "aggregates.yaml"
    text = AGGREGATES.read_text(encoding="utf-8")
    path.write_text(text.replace("cases_pass_threshold: 100", "cases_pass_threshold: 50"),
                    encoding="utf-8")
    stub.delay = 0.05
    run_id = _interrupt_after_first_case(path, store)
    stub.delay = 0.0
    assert 1 <= len(RunStore(store).case_records(run_id)) < 5
    path.write_text(text, encoding="utf-8")  # the file now says 100
    _code, out = cli("run", "--resume", run_id, "--store", store)
    assert has(out, "the suite changed since this run started"), out
    s = summary(store, run_id)
    assert s["total_executions"] == 5
    assert s["cases_pass_threshold"] == 50.0 and s["metrics_pass_threshold"] == 80.0
    snapshot = RunStore(store).run_record(run_id).config.run
    assert snapshot.run_thresholds.cases_pass_threshold == 50.0


def test_c13_a_cli_threshold_wins_over_the_file(stub, store, tmp_path):
    path = tmp_path / "aggregates.yaml"
    path.write_text(AGGREGATES.read_text(encoding="utf-8").replace(
        "cases_pass_threshold: 100", "cases_pass_threshold: 50"), encoding="utf-8")
    _code, _out, run_id = run(store, path, "--cases-pass-threshold", "90")
    assert summary(store, run_id)["cases_pass_threshold"] == 90.0
    assert RunStore(store).run_record(run_id).config.run.run_thresholds.cases_pass_threshold \
        == 90.0


def test_c14_repetitions(stub, store, tmp_path):
    stub.table.update({"⟦X-r0⟧": answer(same(5)), "⟦X-r1⟧": answer(same(5)),
                       "⟦X-r2⟧": answer(same(5)), "⟦Y-r0⟧": answer(same(3)),
                       "⟦Y-r1⟧": answer(same(5)), "⟦Y-r2⟧": answer(same(3))})
    path = tmp_path / "repeats.yaml"
    path.write_text(textwrap.dedent("""\
        scoring: connexity
        execution:
          evaluators:
            - {type: connexity_judge, model: "custom:stub"}
        evalcases:
          - {id: X, input: "⟦X⟧ q"}
          - {id: Y, input: "⟦Y⟧ q"}
        """), encoding="utf-8")
    agent = load_function("agents.py:repeat_marker", HERE.parent)
    result = assay.evaluate(path, target=agent, repeat=3, store=store, cache="off")
    s = summary(store, result.run_id)
    assert (s["total_executions"], s["unique_test_case_count"], s["passed_count"]) == (6, 2, 4)
    assert abs(s["pass_rate"] - 4 / 6) <= 1e-9
    assert abs(s["cases_pass_rate_pct"] - 400 / 6) <= 1e-9
    x, y = s["case_summary"]["X"], s["case_summary"]["Y"]
    assert (x["pass_fraction"], x["pass_all"]) == (1.0, True)
    assert abs(y["pass_fraction"] - 1 / 3) <= 1e-9 and y["pass_all"] is False


def test_b02_a_flaky_case(stub, store, tmp_path):
    stub.table.update({"⟦Z-r0⟧": answer(same(5), [True]), "⟦Z-r1⟧": answer(same(5), [False]),
                       "⟦Z-r2⟧": answer(same(5), [True])})
    path = tmp_path / "flaky.yaml"
    path.write_text(textwrap.dedent("""\
        scoring: connexity
        execution:
          target: repeat_marker
          evaluators:
            - {type: connexity_judge, model: "custom:stub"}
        evalcases:
          - {id: Z, input: "⟦Z⟧ q", expected_outcomes: [The agent answers]}
        """), encoding="utf-8")
    run_id = run(store, path, "--repeat", "3", "--targets", str(TARGETS))[2]
    _code, out = cli("show", run_id, "--store", store, "--summary", "--json")
    shown = json.loads(out)
    z = shown["case_summary"]["Z"]
    assert abs(z["pass_fraction"] - 2 / 3) <= 1e-9
    assert z["pass_all"] is False and z["flaky"] is True
    assert shown["passed_count"] == 2 and shown["total_executions"] == 3


def _latency_suite(tmp_path: Path, count: int) -> Path:
    lines = "\n".join(f'  - {{id: L{i:02d}, input: "⟦LAT⟧ q{i}", metadata: '
                      f'{{output: "a", latency_ms: {i * 100}}}}}' for i in range(1, count + 1))
    path = tmp_path / f"latency{count}.yaml"
    path.write_text("scoring: connexity\nexecution:\n  evaluators:\n"
                    '    - {type: connexity_judge, model: "custom:stub"}\n'
                    f"evalcases:\n{lines}\n", encoding="utf-8")
    return path


def test_c15_latency_over_a_run(stub, store, tmp_path):
    stub.table["⟦LAT⟧"] = answer(same(4))
    run_id = run(store, _latency_suite(tmp_path, 20))[2]
    s = summary(store, run_id)
    assert (s["latency_p50_ms"], s["latency_p95_ms"], s["latency_avg_ms"],
            s["latency_max_ms"]) == (1050.0, 1995.0, 1050.0, 2000)
    _code, _out, run_id = run(store, _latency_suite(tmp_path, 19))
    s = summary(store, run_id)
    assert s["latency_p95_ms"] is None  # fewer than 20 values
    assert (s["latency_p50_ms"], s["latency_avg_ms"], s["latency_max_ms"]) == \
        (1000.0, 1000.0, 1900)


def test_c15_latency_of_a_conversation(stub, store, tmp_path):
    run_id = run(store, HERE / "conversation.yaml", "--filter", "C15c")[2]
    record, _ = judge_record(store, run_id, "C15c")
    assert record.execution.conversation.turn_latencies_ms == [300, 100, 200]
    latency = case_latency(record.execution)
    assert (latency.p50_ms, latency.p95_ms, latency.max_ms) == (200, 300, 300)
    _code, out = cli("show", run_id, "--store", store, "--json")
    row = json.loads(out.splitlines()[0])
    assert (row["agent_latency_p50_ms"], row["agent_latency_p95_ms"],
            row["agent_latency_max_ms"]) == (200, 300, 300)


@pytest.fixture(autouse=True)
def _fresh_targets_dir(tmp_path: Path) -> None:
    """Suites written to tmp_path find no targets file above them but the one given."""
    shutil.rmtree(tmp_path / ".assay", ignore_errors=True)


COSTS = """\
    scoring: connexity
    execution:
      evaluators:
        - {type: connexity_judge, model: "custom:stub"}
    evalcases:
      - {id: a, input: "⟦C02b⟧ a"}
      - {id: b, input: "⟦C02b⟧ b"}
    """


def _agent_reporting(cost: float | None) -> object:
    """An agent that reports its tokens, and its cost when it knows it."""
    def agent(question: str) -> assay.Execution:
        return assay.Execution(output="It shipped.", usage={
            "prompt_tokens": 100, "completion_tokens": 20, "cost": cost})
    return agent


@pytest.mark.parametrize("cost, agent_cost, estimated", [
    (None, None, None),    # no cost is known anywhere: unknown, never $0.00
    (0.25, 0.5, 0.5),      # the costs that are known, summed (the judge's is not)
])
def test_the_estimated_cost_is_unknown_when_no_cost_is_known(stub, store, tmp_path, cost,
                                                             agent_cost, estimated):
    suite = tmp_path / "costs.yaml"
    suite.write_text(textwrap.dedent(COSTS), encoding="utf-8")
    result = assay.evaluate(suite, target=_agent_reporting(cost), store=store, cache="off")
    found = summary(store, result.run_id)
    assert found["usage"]["cost"] is None  # the stub judge's price is unknown
    assert found["agent_usage"]["prompt_tokens"] == 200
    assert found["agent_usage"]["cost"] == agent_cost
    assert found["estimated_cost_usd"] == estimated


def test_the_progress_stream_has_case_starts_and_overall_scores_on_0_100(stub, tmp_path,
                                                                        monkeypatch):
    from tests.server_support import events, serve

    monkeypatch.chdir(tmp_path)
    (tmp_path / "stream.yaml").write_text(textwrap.dedent("""\
        scoring: connexity
        execution:
          evaluators:
            - {type: connexity_judge, model: "custom:stub"}
        evalcases:
          - {id: c01, input: "⟦C01⟧", metadata: {output: answer}}
          - {id: c02b, input: "⟦C02b⟧", metadata: {output: answer}}
        """), encoding="utf-8")
    with serve(f"sqlite:///{tmp_path}/runs.db", suite_roots=[tmp_path]) as served, \
            served.client() as api:
        started = api.post("/runs", json={"suite": "stream.yaml", "concurrency": 1})
        assert started.status_code == 202, started.text
        streamed = events(api, started.json()["stream"])
    def position(name: str, case: str) -> int:
        return next(i for i, (n, d) in enumerate(streamed)
                    if n == name and d.get("case_id") == case)

    for case in ("c01", "c02b"):  # each case's start comes before its completion
        assert position("test_case_started", case) < position("test_case_completed", case)
    completed = {d["case_id"]: d for n, d in streamed if n == "test_case_completed"}
    assert completed["c01"]["overall_score"] == 77.5    # Connexity's 0-100, as C-01
    assert completed["c01"]["score"] == pytest.approx(0.775)
    assert completed["c02b"]["overall_score"] == 100.0

"""assay.evaluate(): data in, a stored and gated run out, the same records as `assay run`."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import textwrap
from collections.abc import Callable

import pytest

import assay
from assay import Case, ExactMatch, SemanticSimilarity
from assay.errors import ConfigError, EvaluationError
from assay.store.runs import RunStore
from assay.types.config import Gates
from assay.types.engine_config import RetryPolicy
from assay.types.records import Verdict
from tests.assay_process import run_assay

ROWS = [
    {"id": "fr", "input": "capital of France?", "expected_output": "the capital is Paris"},
    {"id": "es", "input": "capital of Spain?", "expected_output": "the capital is Madrid"},
    {"id": "de", "input": "capital of Germany?", "expected_output": "Berlin"},
]
ANSWERS = {"capital of France?": "the capital is Paris", "capital of Spain?": "the capital is Rome",
           "capital of Germany?": "Berlin"}


def agent(question: str) -> str:
    return ANSWERS[question]


def test_evaluate_rows_with_a_callable_target_against_the_mock(mock_model, mock_server):
    calls: list[str] = []

    async def async_agent(question: str) -> str:
        calls.append(question)
        return ANSWERS[question]

    result = assay.evaluate(ROWS, target=async_agent,
                            evaluators=[SemanticSimilarity(), ExactMatch()],
                            judge_model=mock_model, gates=Gates(max_failed=None))
    # semantic similarity on the mock is token F1: 1.0, 0.75 (3 of 4 words), 1.0
    by_id = {r.case_id: r for r in result.records}
    assert by_id["es"].score_named("semantic_similarity").value == pytest.approx(0.75)
    assert by_id["es"].score_named("exact_match").value == 0.0
    assert by_id["es"].score == pytest.approx(0.375)
    assert by_id["es"].verdict is Verdict.FAIL
    assert by_id["fr"].score == 1.0 and by_id["de"].score == 1.0
    m = result.metrics
    assert m["cases"] == 3 and m["scored"] == 3
    assert m["mean_score"] == pytest.approx((1 + 0.375 + 1) / 3)
    assert m["semantic_similarity/mean"] == pytest.approx((1 + 0.75 + 1) / 3)
    assert m["exact_match/mean"] == pytest.approx(2 / 3)
    assert m["verdict/pass"] == 2 and m["verdict/fail"] == 1
    assert m["judge_calls"] == 3 and mock_server.stats.requests == 3
    assert sorted(calls) == sorted(ANSWERS)
    assert result.passed is True
    assert result.records[0].case_id == "fr"  # suite order kept
    assert by_id["es"].input == "capital of Spain?"
    assert by_id["es"].expected_output == "the capital is Madrid"


def test_evaluate_a_dataframe_with_recorded_outputs_and_round_trip(mock_model, mock_server):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame([{**r, "output": ANSWERS[r["input"]]} for r in ROWS])
    result = assay.evaluate(frame, evaluators=["exact_match"], gates=Gates(max_failed=None))
    assert result.metrics["exact_match/mean"] == pytest.approx(2 / 3)
    assert mock_server.stats.requests == 0  # deterministic only: no judge call, no preflight
    table = result.to_pandas()
    assert list(table["case_id"]) == ["fr", "es", "de"]
    assert list(table["exact_match/value"]) == [1.0, 0.0, 1.0]
    assert list(table["output"]) == [ANSWERS[r["input"]] for r in ROWS]
    # round trip: the result table, mapped back, evaluates to the same figures
    again = assay.evaluate(table[["case_id", "input", "expected_output", "output"]],
                           evaluators=["exact_match"], gates=Gates(max_failed=None))
    assert [r.score for r in again.records] == [r.score for r in result.records]
    assert [r.case_id for r in again.records] == ["fr", "es", "de"]


def test_a_python_function_target_is_named_in_the_table_and_the_list_of_runs(tmp_path):
    """``to_pandas()`` gave ``target`` None for a run whose target was a Python function,
    which its record names (``python_target``, as the resume command does): the table, the
    list of runs and its target filter name it by that one rule."""
    pytest.importorskip("pandas")
    from assay.store.queries import RunFilter, list_runs

    store = f"sqlite:///{tmp_path / 'runs.db'}"
    result = assay.evaluate(ROWS, target=agent, evaluators=["exact_match"], store=store,
                            gates=Gates(max_failed=None))
    assert list(result.to_pandas()["target"]) == ["agent"] * 3
    assert {row["target"] for row in result.rows()} == {"agent"}
    runs = RunStore(store)
    (listed,), total = list_runs(runs, RunFilter(target="agent"))
    assert (listed.id, listed.target, total) == (result.run_id, "agent", 1)
    assert list_runs(runs, RunFilter(target="other"))[1] == 0


def test_evaluate_works_inside_a_running_event_loop(mock_model, mock_server):
    async def notebook_cell() -> assay.EvaluationResult:
        # a notebook cell runs inside a loop: the sync call must still work
        return assay.evaluate([{**ROWS[0], "output": "the capital is Paris"}],
                              evaluators=["exact_match"])

    result = asyncio.run(notebook_cell())
    assert result.passed and result.records[0].score == 1.0
    html = result._repr_html_()
    assert "exact_match" in html and "fr" in html


def test_evaluate_async_and_records_in_a_store_file(tmp_path, mock_model, mock_server):
    store = tmp_path / "runs.db"

    async def go() -> assay.EvaluationResult:
        return await assay.evaluate_async(ROWS, target=agent, evaluators=[ExactMatch()],
                                          store=store, gates=Gates(max_failed=None))

    result = asyncio.run(go())
    reread = RunStore(f"sqlite:///{store}")
    run = reread.run_record(result.run_id)
    assert run.status.value == "completed" and run.summary is not None
    assert run.summary.cases == 3
    assert [e.type for e in run.config.evaluators] == ["exact_match"]
    records = reread.case_records(result.run_id)
    assert {r.case_id: r.score for r in records} == {"fr": 1.0, "es": 0.0, "de": 1.0}
    assert all(r.case.expected_output for r in records)


def test_rescore_judges_stored_executions_without_running_the_agent(mock_model, mock_server):
    calls: list[str] = []

    def counting(question: str) -> str:
        calls.append(question)
        return ANSWERS[question]

    first = assay.evaluate(ROWS, target=counting, evaluators=[ExactMatch()],
                           gates=Gates(max_failed=None))
    assert len(calls) == 3
    again = assay.rescore(first.run_id, store=first.store,
                          evaluators=[SemanticSimilarity()], judge_model=mock_model,
                          gates=Gates(max_failed=None))
    assert len(calls) == 3  # the agent was not run again
    assert again.run_id != first.run_id
    assert again.run.config.rescored_from == first.run_id  # type: ignore[attr-defined]
    scores = {r.case_id: r.scores[0].value for r in again.records}
    assert scores == pytest.approx({"fr": 1.0, "es": 0.75, "de": 1.0})
    # the run's own evaluators when none are given
    same = assay.rescore(first.run_id, store=first.store, gates=Gates(max_failed=None))
    assert [r.score for r in same.records] == [r.score for r in first.records]


def _flaky(seen: list[str], france_fails: int = 1) -> Callable[[str], str]:
    """The agent: Spain fails in both repeats, France the ``france_fails``-th time it is
    asked; ``seen`` the questions it was asked."""
    def flaky(question: str) -> str:
        seen.append(question)
        if question == "capital of France?" and seen.count(question) == france_fails:
            return "Lyon"
        return ANSWERS[question]

    return flaky


def test_a_rescore_of_a_repeated_run_counts_and_compares_as_its_source(tmp_path):
    """A rescore judged each repeat as a case of its own ('es#1'): its --max-failed gate
    counted a case failing in both repeats twice, and compare refused it beside its source
    (cases only in the rescore). It keeps the repeats, and so the source's figures."""
    seen: list[str] = []
    flaky = _flaky(seen)
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    first = assay.evaluate(ROWS, target=flaky, evaluators=["exact_match"], store=store,
                           repeat=2, concurrency=1, gates=Gates(max_failed=2))
    again = assay.rescore(first.run_id, store=store)
    assert len(seen) == 6  # the agent was not run again
    assert again.summary.cases == first.summary.cases
    assert again.summary.failed_cases() == first.summary.failed_cases()
    assert again.summary.passed is first.summary.passed is True
    assert {(r.case_id, r.repeat, r.verdict) for r in again.records} == \
        {(r.case_id, r.repeat, r.verdict) for r in first.records}
    assert assay.compare(first.run_id, again.run_id, store=store).comparable


def test_a_rescore_of_an_interrupted_repeated_run_keeps_its_repeats(tmp_path):
    """A run with repeats that stopped before every repeat of every case was stored was
    rescored with each repeat a case of its own ('es#1'): its --max-failed gate counted a
    case failing in both repeats twice, and compare refused it beside its source. It keeps
    the repeats, judges only the executions stored (a repeat never run is not made up from
    another's answer), and so counts and compares as its source."""
    seen: list[str] = []
    flaky = _flaky(seen)
    path = tmp_path / "runs.db"
    store = f"sqlite:///{path}"
    first = assay.evaluate(ROWS, target=flaky, evaluators=["exact_match"], store=store,
                           repeat=2, concurrency=1, gates=Gates(max_failed=2))
    db = sqlite3.connect(path)  # stopped before Germany's second repeat was stored
    for table in ("case_results", "scores", "executions"):
        db.execute(f"DELETE FROM {table} WHERE case_id = 'de' AND repeat = 1")
    db.execute("UPDATE runs SET status = 'interrupted'")
    db.commit()
    db.close()
    source = RunStore(store).case_records(first.run_id)
    again = assay.rescore(first.run_id, store=store)
    assert len(seen) == 6  # the agent was not run again
    assert {(r.case_id, r.repeat, r.verdict) for r in again.records} == \
        {(r.case_id, r.repeat, r.verdict) for r in source}
    assert again.summary.cases == 5 and again.summary.failed_cases().cases == 2
    assert again.summary.passed is first.summary.passed is True
    compared = assay.compare(first.run_id, again.run_id, store=store, allow_incomplete=True)
    assert compared.warnings == [f"the baseline {first.run_id} is interrupted, not completed "
                                 "(allowed)"]  # the same cases, the same repeats
    db = sqlite3.connect(path)  # the rescore stopped too: its resume judges the same pairs
    for table in ("case_results", "scores"):
        db.execute(f"DELETE FROM {table} WHERE run_id = ? AND case_id = 'es' AND repeat = 1",
                   (again.run_id,))
    db.execute("UPDATE runs SET status = 'interrupted' WHERE id = ?", (again.run_id,))
    db.commit()
    db.close()
    resumed = assay.resume(again.run_id, store=store)
    assert {(r.case_id, r.repeat, r.verdict) for r in resumed.records} == \
        {(r.case_id, r.repeat, r.verdict) for r in source}
    assert resumed.summary.failed_cases().cases == 2 and len(seen) == 6


def test_a_rerun_of_a_repeated_rescores_failures_judges_each_repeats_own_answer(tmp_path):
    """Re-running the failures of a rescore with repeats judged a failed repeat on its case's
    first stored answer: France, wrong ('Lyon') only in its second repeat, passed on the
    first repeat's 'Paris'. Each failed repeat is judged on its own stored answer."""
    seen: list[str] = []
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    first = assay.evaluate(ROWS, target=_flaky(seen, france_fails=2),
                           evaluators=["exact_match"], store=store, repeat=2, concurrency=1,
                           gates=Gates(max_failed=None))
    rescored = assay.rescore(first.run_id, store=store)
    again = assay.rerun_failed(rescored.run_id, store=store)
    assert {(r.case_id, r.repeat, r.output, r.verdict) for r in again.records} == \
        {(r.case_id, r.repeat, r.output, r.verdict) for r in first.records}
    assert len(seen) == 6


def test_a_resume_retries_judge_calls_as_it_is_told(tmp_path, mock_model, mock_server):
    """``assay.resume(retry=...)`` judges the rest of the run with its own retry policy (a
    mapping changes the recorded one's fields, a RetryPolicy replaces it): a run a slow
    judge left in error finishes with a longer call timeout, recorded as that resume's."""
    mock_server.configure(latency_ms=400)
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    short = RetryPolicy(call_timeout_s=0.05, total_timeout_s=0.1, max_attempts=1)
    first = assay.evaluate(ROWS, target=agent, evaluators=[SemanticSimilarity()],
                           judge_model=mock_model, store=store, retry=short, cache="off",
                           gates=Gates(max_failed=None))
    assert first.summary.evaluator_errors == 3 and not first.passed
    with pytest.raises(ConfigError, match="timeout"):
        assay.resume(first.run_id, store=store, data=ROWS, target=agent, retry_errors=True,
                     retry={"timeout": 5})
    done = assay.resume(first.run_id, store=store, data=ROWS, target=agent,
                        retry_errors=True, retry={"call_timeout_s": 5, "total_timeout_s": 10})
    assert done.summary.evaluator_errors == 0 and done.passed
    resumes = done.run.config.model_extra["resumes"]  # type: ignore[index]
    assert [r["retry"]["call_timeout_s"] for r in resumes] == [5.0]
    assert resumes[0]["retry"]["max_attempts"] == 1  # the recorded one's, not given
    assert done.run.config.run.retry == short


def test_cli_and_evaluate_give_identical_stored_records(tmp_path, mock_model, mock_server):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "agent.py").write_text(textwrap.dedent('''
        ANSWERS = {"capital of France?": "the capital is Paris",
                   "capital of Spain?": "the capital is Rome", "capital of Germany?": "Berlin"}
        def answer(question):
            return ANSWERS[question]
    '''))
    (suite / ".assay").mkdir()
    (suite / ".assay" / "targets.yaml").write_text(
        "targets:\n  - name: agent\n    provider: python\n    function: agent:answer\n")
    cases = "\n".join(f"  - id: {r['id']}\n    input: {r['input']}\n    expected_output: "
                      f"{r['expected_output']}" for r in ROWS)
    (suite / "EVAL.yaml").write_text(
        "execution:\n  target: agent\n  evaluators:\n    - type: exact_match\n"
        f"    - type: semantic_similarity\nevalcases:\n{cases}\n")
    store = tmp_path / "runs.db"
    cli = run_assay(["run", str(suite / "EVAL.yaml"), "--store", f"sqlite:///{store}",
                     "--judge-model", mock_model, "--max-failed", "5"],
                    cwd=tmp_path, timeout=120)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    lib = assay.evaluate(suite / "EVAL.yaml", store=store, judge_model=mock_model,
                         gates=Gates(max_failed=5), cache="off")
    runs = RunStore(f"sqlite:///{store}").run_records()
    assert len(runs) == 2
    cli_run = next(r for r in runs if r.id != lib.run_id)

    def comparable(run_id: str) -> list[dict[str, object]]:
        out = []
        for r in RunStore(f"sqlite:///{store}").case_records(run_id):
            data = r.model_dump(mode="json", exclude={"run_id", "finished_at"})
            data["execution"].pop("latency_ms")
            for s in data["scores"]:
                s.pop("latency_ms")
            out.append(data)
        return sorted(out, key=lambda d: str(d["case_id"]))

    for a, b in zip(comparable(cli_run.id), comparable(lib.run_id), strict=True):
        assert {k: v for k, v in a.items() if k != "scores"} == \
            {k: v for k, v in b.items() if k != "scores"}
        for x, y in zip(a["scores"], b["scores"], strict=True):  # type: ignore[call-overload]
            assert x == y
    assert cli_run.config.suite_hash == lib.run.config.suite_hash
    assert cli_run.config.evaluators == lib.run.config.evaluators
    assert cli_run.summary is not None and lib.run.summary is not None
    assert cli_run.summary.mean_score == pytest.approx(lib.run.summary.mean_score)


def test_a_target_that_raises_or_returns_non_data_is_that_cases_error(mock_model, mock_server):
    class Opaque:
        pass

    def flaky(question: str) -> object:
        if "France" in question:
            raise ValueError("agent crashed")
        if "Spain" in question:
            return {"result": Opaque()}
        if "Germany" in question:
            return {"big": 2 ** 80, "nan": float("nan")}
        return "ok"

    result = assay.evaluate(ROWS, target=flaky, evaluators=[ExactMatch()],
                            gates=Gates(max_failed=None, max_errors=None))
    by_id = {r.case_id: r for r in result.records}
    assert by_id["fr"].scores[0].error.code == "target_failed"  # type: ignore[union-attr]
    assert "agent crashed" in by_id["fr"].scores[0].error.message  # type: ignore[union-attr]
    assert by_id["es"].scores[0].error.code == "invalid_output"  # type: ignore[union-attr]
    assert "Opaque" in by_id["es"].execution.error  # type: ignore[operator]
    # a huge int is data: stored and read back exactly; NaN becomes null
    assert by_id["de"].output == {"big": 2 ** 80, "nan": None}
    reread = result.store.case_records(result.run_id)  # type: ignore[union-attr]
    assert next(r for r in reread if r.case_id == "de").output == {"big": 2 ** 80, "nan": None}
    assert result.summary.cases == 3 and result.summary.evaluator_errors == 2


@pytest.mark.parametrize(("rows", "message"), [
    ([{"id": "a", "question_text": "x"}], "unknown column(s) 'question_text'"),
    ([{"id": "a", "input": 42}], "row 0, column input: int is not accepted"),
    ([{"id": "a\x00b", "input": "x"}], "row 0, column id: the id holds a NUL character"),
    # a blank id was kept: a case no table, report or --case-id could name (EVAL.yaml refuses it)
    ([{"id": "", "input": "x"}], "row 0, column id: the id is blank (expected a unique name"),
    ([{"id": "a", "input": "x"}, {"id": "  ", "input": "y"}], "row 1, column id: the id is blank"),
    ([{"id": "a", "input": "x"}, {"id": "a", "input": "y"}], "row 1: duplicate id 'a'"),
    ([], "the data has no rows"),
    (["not a dict"], "row 0: a str, not a dict"),
    # a recorded latency that is no duration stopped the run in its summary with a traceback
    ([{"id": "a", "input": "x", "output": "y", "latency_ms": float("nan")}],
     "row 0: latency_ms: Input should be a finite number"),
    ([{"id": "a", "input": "x", "output": "y", "latency_ms": float("inf")}],
     "row 0: latency_ms: Input should be a finite number"),
    ([{"id": "a", "input": "x", "output": "y", "latency_ms": -5}],
     "row 0: latency_ms: Input should be greater than or equal to 0"),
])
def test_bad_rows_name_the_row_and_column(rows, message):
    with pytest.raises(ConfigError) as info:
        assay.evaluate(rows, evaluators=["exact_match"])
    assert message in info.value.message


def test_bad_evaluators_and_options_are_clear_errors():
    with pytest.raises(EvaluationError, match="unknown evaluator type 'nope'"):
        assay.evaluate(ROWS, evaluators=["nope"])
    with pytest.raises(ConfigError, match="unknown option"):
        assay.evaluate(ROWS, evaluators=["exact_match"], concurency=3)
    with pytest.raises(ConfigError, match=r"no column 'missing_col' \(mapped to input\)"):
        assay.evaluate(ROWS, evaluators=["exact_match"], columns={"input": "missing_col"})
    with pytest.raises(ConfigError, match="outputs and a target"):
        assay.evaluate([{**ROWS[0], "output": "x"}], target=agent, evaluators=["exact_match"])


def test_an_unknown_key_of_an_evaluator_dict_is_named_with_the_keys_it_takes():
    """As a suite file's problem says it: the key, the type and the keys there are, not
    pydantic's "Extra inputs are not permitted"."""
    with pytest.raises(EvaluationError) as info:
        assay.evaluate(ROWS, evaluators=[{"type": "contains", "value": "Paris"}],
                       store=":memory:")
    assert info.value.code == "invalid_evaluator_config"
    assert "evaluators[0] (contains): unknown key 'value' for evaluator type 'contains' " \
        "(expected: one of type, name, weight" in info.value.message, info.value.message
    assert "search_text" in info.value.message and "Extra inputs" not in info.value.message


def test_evaluate_a_jsonl_file_of_rows_and_a_csv(tmp_path):
    jsonl = tmp_path / "data.jsonl"
    jsonl.write_text("".join(json.dumps({**r, "output": ANSWERS[r["input"]]}) + "\n"
                             for r in ROWS))
    result = assay.evaluate(jsonl, evaluators=["exact_match"], gates=Gates(max_failed=None))
    assert [r.score for r in result.records] == [1.0, 0.0, 1.0]
    assert result.records[1].source is not None and result.records[1].source.line == 2
    csv = tmp_path / "data.csv"
    csv.write_text("id,input,expected_output,output\nfr,q,\"a, b\",\"a, b\"\n")
    one = assay.evaluate(csv, evaluators=["exact_match"])
    assert one.records[0].score == 1.0 and one.records[0].source.line == 2  # type: ignore[union-attr]


def test_python_scorer_functions_choose_their_arguments():
    seen: dict[str, object] = {}

    @assay.scorer
    def mentions_city(outputs, expectations) -> bool:
        seen["expectations"] = expectations
        return str(expectations["expected_output"]).split()[-1] in outputs

    @assay.scorer(name="length_ok")
    async def short(inputs, outputs) -> float:
        return 1.0 if len(outputs) < 40 else 0.0

    def verdict(outputs):  # an undecorated function is a scorer too
        return "yes" if outputs else "no"

    rows = [{**r, "output": ANSWERS[r["input"]]} for r in ROWS]
    result = assay.evaluate(rows, evaluators=[mentions_city, short, verdict],
                            gates=Gates(max_failed=None))
    by_id = {r.case_id: r for r in result.records}
    assert by_id["es"].score_named("mentions_city").value == 0.0
    assert by_id["fr"].score_named("mentions_city").value == 1.0
    assert by_id["fr"].score_named("length_ok").value == 1.0
    assert by_id["fr"].score_named("verdict").label == "yes"
    # the expected output under the name the rows gave it, and no other
    assert seen["expectations"] == {"expected_output": "Berlin"}
    assert mentions_city("Paris", {"expected_output": "Paris"}) is True  # still a function
    spec = next(e for e in result.run.config.evaluators if e.name == "mentions_city")
    assert spec.type == "python" and spec.params["function"].endswith("mentions_city")


def test_python_scorer_errors_and_bad_values_are_errors_not_zeros():
    @assay.scorer
    def broken(outputs):
        raise RuntimeError("scorer bug")

    @assay.scorer
    def out_of_range(outputs):
        return 5

    result = assay.evaluate([{"id": "a", "input": "q", "output": "x"}],
                            evaluators=[broken, out_of_range],
                            gates=Gates(max_failed=None, max_errors=None))
    scores = {s.name: s for s in result.records[0].scores}
    assert scores["broken"].error.code == "scorer_error"  # type: ignore[union-attr]
    assert "scorer bug" in scores["broken"].error.message  # type: ignore[union-attr]
    # a number off the 0-1 scale from a scorer that declared no scale is an error naming
    # the value and the range, never a made-up score and never a skip
    error = scores["out_of_range"].error
    assert error is not None and error.code == "scorer_error"
    assert error.message.startswith("returned 5, outside [0, 1], the range of a score")
    assert result.records[0].verdict is Verdict.ERROR
    with pytest.raises(ConfigError, match="parameter 'foo'"):
        assay.scorer(lambda foo: True)


def test_zero_cases_never_pass():
    result = assay.evaluate([Case(id="a", input="q")], evaluators=["exact_match"],
                            filter="nothing*")
    assert result.passed is False
    assert "no case was run" in result.reason


def test_rescore_command_makes_no_agent_calls(tmp_path, mock_model, mock_server):
    marker = tmp_path / "calls.txt"
    project = tmp_path / "p"
    project.mkdir()
    (project / "agent.py").write_text(
        f"def answer(q):\n    open({str(marker)!r}, 'a').write(q + '\\n')\n    return 'Paris'\n")
    (project / ".assay").mkdir()
    (project / ".assay" / "targets.yaml").write_text(
        "targets:\n  - name: agent\n    provider: python\n    function: agent:answer\n")
    (project / "EVAL.yaml").write_text(
        "execution:\n  target: agent\n  evaluators:\n    - type: exact_match\n"
        "evalcases:\n  - id: a\n    input: q1\n    expected_output: Paris\n"
        "  - id: b\n    input: q2\n    expected_output: Rome\n")
    store = f"sqlite:///{tmp_path}/runs.db"

    def assay_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return run_assay([*args, "--store", store], cwd=project, timeout=120)

    first = assay_cli("run", "EVAL.yaml")
    assert first.returncode == 1  # case b fails
    run_id = RunStore(store).run_records()[0].id
    assert sorted(marker.read_text().splitlines()) == ["q1", "q2"]  # run concurrently
    again = assay_cli("rescore", run_id, "-e", "semantic_similarity", "--judge-model",
                      mock_model)
    assert "rescored run" in again.stdout, again.stdout + again.stderr
    assert sorted(marker.read_text().splitlines()) == ["q1", "q2"]  # no agent call
    assert mock_server.stats.requests == 2
    runs = RunStore(store).run_records()
    assert len(runs) == 2
    new = next(r for r in runs if r.id != run_id)
    assert [e.type for e in new.config.evaluators] == ["semantic_similarity"]


@pytest.mark.parametrize("streamed", [False, True], ids=["loaded", "streamed"])
def test_given_evaluators_replace_a_cases_own(tmp_path, streamed):
    """A case with evaluators of its own is judged by the ones given to evaluate() alone;
    a case without is passed through as it is."""
    path = tmp_path / "EVAL.yaml"
    path.write_text(textwrap.dedent('''
        execution:
          evaluators:
            - {name: suite_own, type: contains, search_text: nowhere}
        evalcases:
          - id: own
            input: capital of France?
            expected_output: Paris
            execution:
              evaluators:
                - {name: case_own, type: contains, search_text: nowhere}
          - id: plain
            input: capital of Spain?
            expected_output: Madrid
    '''))
    from assay.run.evaluate import load_data, with_evaluators

    suite = load_data(path)
    if streamed:
        cases = list(suite.cases)
        suite = suite.model_copy(update={"cases": [], "case_source": lambda: iter(cases)})
    judged = with_evaluators(suite, [ExactMatch(name="given")])
    items = {i.case.id: i for i in (judged.case_source() if streamed else judged.cases)}
    assert items["own"].evaluators is None and items["plain"].evaluators is None
    assert [e.name for e in judged.evaluators_for(items["own"])] == ["given"]
    originals = {i.case.id: i for i in (cases if streamed else suite.cases)}
    assert items["plain"] is originals["plain"]  # nothing to take away: not copied
    assert originals["own"].evaluators is not None  # the loaded suite is left as it was
    result = assay.evaluate(path, target=lambda q: "Paris" if "France" in q else "Rome",
                            evaluators=[ExactMatch(name="given")],
                            gates=Gates(max_failed=None))
    assert {r.case_id: [s.name for s in r.scores] for r in result.records} == {
        "own": ["given"], "plain": ["given"]}


def test_a_rescore_keeps_the_judge_its_run_had_from_its_suite(tmp_path):
    """A suite's own judge (a targets file's judge_target) is recorded with the run; judging
    the executions again keeps it, so the rescore is comparable with its run."""
    from assay.suites.model import Suite, SuiteCase
    from assay.types.case import Case
    from assay.types.execution import Execution

    suite = Suite(name="s", judge_target="fake:suites-judge",
                  evaluators=[assay.LLMJudge(prompt="Rate {{candidate_answer}} against "
                                                 "{{reference_answer}}")],
                  cases=[SuiteCase(case=Case(id="a", input="q", expected_output="x"),
                                   execution=Execution(output="x"))])
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    first = assay.evaluate(suite, store=store)
    again = assay.rescore(first.run_id, store=store)
    assert again.run.config.judge_models == first.run.config.judge_models == \
        ["fake:suites-judge"]
    assert assay.compare(first.run_id, again.run_id, store=store).comparable


def test_the_latency_metrics_are_the_figures_every_surface_shows():
    """``result.metrics`` gave the p95 of a five-case run as its slowest case (the rule of a
    case's turns) while the summary, the terminal and the reports show none under 20
    executions, and its p50 from a second computation: one run, two answers."""
    import time

    from assay.run.display import run_display

    def timed(question: str) -> str:
        time.sleep(0.002 * (1 + len(question) % 5))
        return ANSWERS[question]

    rows = [dict(row, id=f"{row['id']}{i}") for i in range(2) for row in ROWS]
    result = assay.evaluate(rows, target=timed, evaluators=[ExactMatch()],
                            gates=Gates(max_failed=None))
    s, m = result.summary, result.metrics
    assert (m["latency_p50_ms"], m["latency_p95_ms"]) == (s.latency_p50_ms, s.latency_p95_ms)
    assert m["latency_p95_ms"] is None and run_display(s).latency_p95 == "-"
    assert s.latency.p95_ms is None  # the run's one rule for a p95: none under 20 values


@pytest.mark.parametrize(("text", "columns", "message"), [
    ("id,question\na,x\n", None, "unknown column(s) 'question_text'"),
    ("id,input\na,x\n", {"input": "q"}, "no column 'q' (mapped to input); columns: id, input"),
    ("id,input\na,x\na,y\n", None, "duplicate id 'a'"),
])
def test_a_bad_row_of_a_file_names_the_file_and_line(tmp_path, text, columns, message):
    """A CSV's row is found where it is: the file and line, as every other problem of a row
    says it; the line the reader notes down is no column the user has."""
    data = tmp_path / "rows.csv"
    data.write_text(text.replace("question", "question_text"))
    with pytest.raises(ConfigError) as info:
        assay.evaluate(data, evaluators=["exact_match"], columns=columns, store=":memory:")
    line = text.count("\n")
    assert f"({data.resolve()}:{line})" in info.value.message, info.value.message
    assert message in info.value.message and "__line__" not in info.value.message


@assay.scorer
def _says_paris(outputs) -> bool:
    return "Paris" in outputs


@pytest.mark.parametrize("one", ["exact_match", ExactMatch(), {"type": "exact_match"},
                                 _says_paris], ids=["name", "instance", "dict", "scorer"])
def test_one_evaluator_alone_is_a_list_of_one(one):
    """evaluators="exact_match" was iterated into its letters ('unknown evaluator type
    'e''), ExactMatch() into its fields ('a tuple is not an evaluator'), a dict into its keys,
    and a scorer function raised a TypeError traceback: one alone is that one, in a run, a
    rescore and a resume alike."""
    rows = [{"id": "fr", "input": "Capital of France?", "output": "Paris",
             "expected_output": "Paris"}]
    result = assay.evaluate(rows, evaluators=one)
    assert result.passed and len(result.records[0].scores) == 1
    again = assay.rescore(result.run_id, evaluators=one)
    assert again.passed and len(again.records[0].scores) == 1
    assert assay.evaluate(rows, scorers=one).passed
    with pytest.raises(ConfigError, match="evaluators: a int is not an evaluator or a list"):
        assay.evaluate(rows, evaluators=3)


def test_an_empty_output_cell_is_no_recorded_output_not_an_empty_answer():
    """A DataFrame's NaN (or None) in the output column was an answer of nothing: judged, a
    0 that failed the case. It records nothing, as a row without the column does: the case
    is a target error, and no judge is asked about an empty answer."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"id": ["a", "b"], "input": ["q", "q"],
                          "output": ["Paris", float("nan")],
                          "expected_output": ["Paris", "Paris"]})
    result = assay.evaluate(frame, evaluators=["exact_match"], store=":memory:")
    by_id = {r.case_id: r for r in result.records}
    assert by_id["a"].scores[0].value == 1.0
    assert by_id["b"].verdict is Verdict.ERROR and by_id["b"].scores[0].value is None
    assert by_id["b"].execution is not None
    assert by_id["b"].execution.error == "no recorded output for case 'b'"
    assert result.metrics["exact_match/mean"] == 1.0  # over the one answer, not 0.5


def test_ids_to_run_that_the_suite_lacks_are_refused_before_any_call():
    """``--eval-ids "['once','nope']"`` (``case_ids=``) ran 'once' alone and passed: a
    mistyped id silently ran less. It is refused, naming the ids, as input overrides for
    unknown cases are."""
    rows = [{"id": "a", "input": "q", "output": "x", "expected_output": "x"},
            {"id": "b", "input": "q", "output": "x", "expected_output": "x"}]
    with pytest.raises(ConfigError, match=r"does not have: 'c', 'd'"):
        assay.evaluate(rows, evaluators=["exact_match"], case_ids=["a", "c", "d"],
                       store=":memory:")
    chosen = assay.evaluate(rows, evaluators=["exact_match"], case_ids=["b"], store=":memory:")
    assert [r.case_id for r in chosen.records] == ["b"]

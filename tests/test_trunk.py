"""Every entry point goes through the trunk: ``assay.score``, ``assay judge``, the pytest
plugin and the UiPath evaluators are sessions of the run's own code path; one function builds
every judge engine; a stored run's config is typed; the store hands out records and a public
transaction."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import assay
from assay.cli.app import app
from assay.errors import ConfigError
from assay.integrations.pytest_plugin import JudgeError, SuiteItem, assert_case, assert_passes
from assay.integrations.uipath.evaluators import (
    ContainsEvaluator,
    ExactMatchEvaluator,
    JsonSimilarityEvaluator,
    LLMJudgeOutputEvaluator,
)
from assay.integrations.uipath.models import AgentExecution
from assay.judges.registry import build
from assay.store.errors import StoreError
from assay.store.runs import RunStore
from assay.suites.model import Suite, SuiteCase
from assay.testing.mock_server import MockConfig
from assay.types.case import AgentInfo, ConversationSettings, ConversationSpec
from assay.types.config import RunConfig, RunThresholds
from assay.types.execution import Execution
from assay.types.records import RunSnapshot
from assay.types.verdict import Verdict
from tests.conftest import fast_retry

SRC = Path(__file__).resolve().parent.parent / "src" / "assay"

OUTPUTS = [(1, 2), np.array([1, 2]), [np.int64(1), np.float64(2.0)]]
"""Outputs Python agents return that are not plain JSON data: each is the list [1, 2]."""


# -- assay.score is a one-case run ------------------------------------------------------------


@pytest.mark.parametrize("output", OUTPUTS, ids=["tuple", "ndarray", "numpy-scalars"])
def test_score_normalises_an_output_as_evaluate_does(output: Any) -> None:
    case = assay.Case(id="a", input="q", expected_output=[1, 2])
    run = assay.evaluate([{"id": "a", "input": "q", "output": output, "expected_output": [1, 2]}],
                         evaluators=["exact_match"], store=":memory:")
    record = run.records[0]
    found = assay.score(build({"type": "exact_match"}), case,
                        Execution(input="q", output=output))
    assert record.execution.output == [1, 2] and record.scores[0].value == 1.0
    assert (found.value, found.verdict, found.case_score) == \
        (record.scores[0].value, record.verdict, record.score) == (1.0, Verdict.PASS, 1.0)
    assert found.details == {"expected": [1, 2], "actual": [1, 2]}


def test_an_output_that_is_not_data_is_that_cases_error_in_score_and_evaluate() -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    case = assay.Case(id="a", input="q", expected_output="x")
    found = assay.score(build({"type": "exact_match"}), case, Execution(output=cyclic))
    run = assay.evaluate([{"id": "a", "input": "q", "output": cyclic, "expected_output": "x"}],
                         evaluators=["exact_match"], store=":memory:", gates={"max_errors": 1})
    assert found.error is not None and found.error.code == "invalid_output"
    assert run.records[0].scores[0].error == found.error
    assert found.verdict is Verdict.ERROR is run.records[0].verdict


def _graded(value: float, threshold: float) -> Any:
    @assay.scorer(name=f"graded_{int(value * 100)}", threshold=threshold)
    def graded() -> float:
        return value
    return graded.evaluator


def test_score_gives_the_verdict_of_the_runs_scoring_policy() -> None:
    """0.7 passes its own threshold (0.5): the default policy bands the case borderline (under
    0.8), the Connexity policy passes it (every evaluator passed)."""
    case = assay.Case(id="a", input="q")
    execution = Execution(output="anything")
    default = assay.score(_graded(0.7, 0.5), case, execution)
    connexity = assay.score(_graded(0.7, 0.5), case, execution,
                            config=RunConfig(scoring="connexity"))
    assert default.passed is True and connexity.passed is True
    assert default.verdict is Verdict.BORDERLINE and connexity.verdict is Verdict.PASS
    run = assay.evaluate([{"id": "a", "input": "q", "output": "anything"}],
                         evaluators=[_graded(0.7, 0.5)], store=":memory:")
    assert run.records[0].verdict is default.verdict


def test_score_raises_the_errors_a_run_raises_before_any_call() -> None:
    judge = assay.SemanticSimilarity(model="openai:gpt-4o-mini")
    case, execution = assay.Case(id="a", expected_output="x"), Execution(output="x")
    with pytest.raises(ConfigError) as from_score:
        assay.score(judge, case, execution)
    with pytest.raises(ConfigError) as from_run:
        assay.evaluate([{"id": "a", "output": "x", "expected_output": "x"}],
                       evaluators=[judge], store=":memory:")
    assert from_score.value.code == from_run.value.code == "missing_api_key"


def test_assay_judge_prints_the_cases_verdict() -> None:
    done = CliRunner().invoke(app, ["judge", "-e", "Paris", "-a", "Paris", "-t",
                                    "exact_match"])
    assert done.exit_code == 0, done.output
    assert "verdict   pass (case score 1.000)" in done.output
    as_json = CliRunner().invoke(app, ["judge", "-e", "[1, 2]", "-a", "[1, 2]", "-t",
                                       "exact_match", "--json"])
    assert '"verdict": "pass"' in as_json.output and '"case_score": 1.0' in as_json.output


@pytest.mark.parametrize("output", OUTPUTS, ids=["tuple", "ndarray", "numpy-scalars"])
def test_assert_passes_judges_an_output_as_a_run_does(output: Any) -> None:
    found = assert_passes(build({"type": "exact_match"}),
                          assay.Case(id="a", input="q", expected_output=[1, 2]), output)
    assert found.details == {"expected": [1, 2], "actual": [1, 2]}
    assert found.verdict is Verdict.PASS


def test_assert_passes_fails_on_an_output_that_is_not_data_saying_why() -> None:
    """The case's error is the agent's (its output cannot be judged): a failed test, not
    a judge's ERROR."""
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(AssertionError, match=r"the agent failed \[invalid_output\]"):
        assert_passes(build({"type": "exact_match"}), assay.Case(id="a", expected_output="x"),
                      cyclic)


# -- assert_case runs its case through its suite ---------------------------------------------


def _item(suite: Suite) -> SuiteItem:
    return SuiteItem(suite, suite.cases[0])


def test_assert_case_keeps_the_suites_scoring_policy() -> None:
    """A mean of 0.825 passes by the default policy; by the suite's Connexity policy the case
    fails, since one of its evaluators did not pass."""
    evaluators = [_graded(1.0, 0.5), _graded(0.65, 0.7)]
    case = SuiteCase(case=assay.Case(id="a", input="q"), execution=Execution(output="x"))
    default = Suite(name="s", evaluators=evaluators, cases=[case])
    assert assert_case(_item(default), store=":memory:").verdict is Verdict.PASS
    connexity = default.model_copy(update={"scoring": "connexity"})
    with pytest.raises(AssertionError, match=r"(?s)case a fail .*graded_65 scored 0\.650"):
        assert_case(_item(connexity), store=":memory:")


def test_assert_case_keeps_the_suites_run_thresholds() -> None:
    case = SuiteCase(case=assay.Case(id="a", input="q"), execution=Execution(output="x"))
    suite = Suite(name="s", evaluators=[_graded(0.85, 0.5)], cases=[case], scoring="connexity",
                  run_thresholds=RunThresholds(metrics_pass_threshold=90))
    with pytest.raises(AssertionError, match=r"gate failed: .*90"):
        assert_case(_item(suite), store=":memory:")
    easier = suite.model_copy(update={"run_thresholds": RunThresholds(
        metrics_pass_threshold=80)})
    assert assert_case(_item(easier), store=":memory:").verdict is Verdict.PASS


def test_assert_case_keeps_the_suites_agent_timeout() -> None:
    async def slow(question: str) -> str:
        await asyncio.sleep(2)
        return "x"

    suite = Suite(name="s", evaluators=[build({"type": "contains", "search_text": "x"})],
                  cases=[SuiteCase(case=assay.Case(id="a", input="q"))], agent_timeout_s=0.1)
    with pytest.raises(AssertionError, match=r"the agent failed .*agent timeout of 0\.1s"):
        assert_case(_item(suite), store=":memory:", target=slow)


def test_assert_case_keeps_the_suites_conversation_settings() -> None:
    """The suite caps its conversations at two agent rounds (the default is ten)."""
    asked: list[str] = []

    def agent(question: str) -> str:
        asked.append(question)
        return "x"

    case = assay.Case(id="a", input="m0", conversation=ConversationSpec(
        first_message="m0", scripted_messages=[f"m{i}" for i in range(1, 6)]))
    suite = Suite(name="s", evaluators=[build({"type": "contains", "search_text": "x"})],
                  cases=[SuiteCase(case=case)], conversation=ConversationSettings(max_turns=2))
    record = assert_case(_item(suite), store=":memory:", target=agent)
    assert len(asked) == 2 and record.execution.conversation.stop_reason == "max_turns"


def test_assert_case_keeps_the_suites_agent(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    case = SuiteCase(case=assay.Case(id="a", input="q"), execution=Execution(output="x"))
    suite = Suite(name="s", evaluators=[_graded(1.0, 0.5)], cases=[case],
                  agent=AgentInfo(name="bot", version="2"))
    assert_case(_item(suite), store=url)
    (run,) = RunStore(url).run_records()
    assert (run.config.model_extra or {}).get("agent") == {"name": "bot", "version": "2"}


def test_assert_case_keeps_the_suites_evaluator_selection() -> None:
    """The suite judges its case by the first of its evaluators alone."""
    case = SuiteCase(case=assay.Case(id="a", input="q"), execution=Execution(output="x"))
    suite = Suite(name="s", evaluators=[_graded(1.0, 0.5), _graded(0.1, 0.5)], cases=[case],
                  select=lambda _item, _execution, evaluators: evaluators[:1])
    record = assert_case(_item(suite), store=":memory:")
    assert [s.name for s in record.scores] == ["graded_100"]


def test_assert_case_keeps_the_suites_calibration_gate(tmp_path, mock_model) -> None:
    case = SuiteCase(case=assay.Case(id="a", input="q", expected_output="Paris"),
                     execution=Execution(output="Paris"))
    suite = Suite(name="s", evaluators=[assay.SemanticSimilarity(model=mock_model)],
                  cases=[case], metadata={"calibration_gate": {"min_kappa": 0.5}})
    with pytest.raises(AssertionError, match=r"gate failed: .*calibrat"):
        assert_case(_item(suite), store=f"sqlite:///{tmp_path / 'runs.db'}")


def test_assert_case_keeps_the_run_options_of_the_datas_sidecar() -> None:
    """A sidecar's quality criteria are the run's: one no run can meet fails the case."""
    case = SuiteCase(case=assay.Case(id="a", input="q"), execution=Execution(output="x"))
    suite = Suite(name="s", evaluators=[_graded(1.0, 0.5)], cases=[case],
                  metadata={"run_options": {"quality_criteria": "graded_100 >= 2"}})
    with pytest.raises(AssertionError, match=r"gate failed: .*graded_100"):
        assert_case(_item(suite), store=":memory:")


def test_assert_case_keeps_the_suites_judge(mock_model, mock_server, monkeypatch) -> None:
    monkeypatch.delenv("ASSAY_JUDGE_MODEL", raising=False)
    case = SuiteCase(case=assay.Case(id="a", input="q", expected_output="Paris"),
                     execution=Execution(output="Paris"))
    suite = Suite(name="s", evaluators=[assay.SemanticSimilarity()], cases=[case],
                  judge_target=mock_model)
    with contextlib.suppress(AssertionError):  # the verdict is the mock's; the judge is asked
        assert_case(_item(suite), store=":memory:", cache="off")
    assert mock_server.stats.requests == 1


def test_assert_case_asserts_every_repeat() -> None:
    """The second of two runs of the case fails: the case fails, naming that repeat, even
    with no limit on failed cases."""
    answers = iter(["x", "y"])
    suite = Suite(name="s", evaluators=[build({"type": "contains", "search_text": "x"})],
                  cases=[SuiteCase(case=assay.Case(id="a", input="q"))])
    with pytest.raises(AssertionError, match=r"case a#1 \(of 2 repeats\) fail \(score 0\.000\)"):
        assert_case(_item(suite), store=":memory:", target=lambda _q: next(answers),
                    repeat=2, concurrency=1, gates={"max_failed": None})


def test_assert_case_keeps_the_runs_agent_retries() -> None:
    calls: list[str] = []

    def flaky(question: str) -> str:
        calls.append(question)
        if len(calls) == 1:
            raise RuntimeError("flaky")
        return "x"

    suite = Suite(name="s", evaluators=[build({"type": "contains", "search_text": "x"})],
                  cases=[SuiteCase(case=assay.Case(id="a", input="q"))])
    with pytest.raises(AssertionError,
                       match=r"the agent failed .*agent function raised RuntimeError: flaky"):
        assert_case(_item(suite), store=":memory:", target=flaky)
    calls.clear()
    assert assert_case(_item(suite), store=":memory:", target=flaky,
                       agent_retries=1).verdict is Verdict.PASS
    assert len(calls) == 2


@pytest.mark.parametrize(("fault", "retry", "passes"), [
    ("500", {"max_attempts": 1}, False), ("500", {"max_attempts": 2}, True),
    ("hang", {"max_attempts": 1, "call_timeout_s": 0.2}, False)],
    ids=["no-retry", "retried", "call-timeout"])
def test_assert_case_keeps_the_runs_judge_retries_and_timeouts(
        fault: str, retry: dict[str, float], passes: bool, mock_model, mock_server) -> None:
    mock_server.server.configure(MockConfig(faults={fault: 1.0}, max_faults_per_request=1))
    case = SuiteCase(case=assay.Case(id="a", input="q", expected_output="Paris"),
                     execution=Execution(output="Paris"))
    suite = Suite(name="s", evaluators=[assay.SemanticSimilarity(model=mock_model)],
                  cases=[case])
    options = {"store": ":memory:", "cache": "off", "retry": fast_retry(**retry),
               "gates": {"max_failed": None}}
    if passes:
        with contextlib.suppress(AssertionError):  # the verdict is the mock's
            assert_case(_item(suite), **options)
        assert mock_server.stats.requests == 2
    else:
        with pytest.raises(JudgeError, match="could not judge"):
            assert_case(_item(suite), **options)
        assert mock_server.stats.requests == 1


# -- the UiPath evaluators are one-case runs --------------------------------------------------


UIPATH = [
    (ExactMatchEvaluator, {}, "exact_match", {}, {"expected_output": {"a": [1, 2]}},
     {"a": np.array([1, 2])}),
    (ExactMatchEvaluator, {}, "exact_match", {}, {"expected_output": {"a": [1, 2]}},
     {"a": (1, 2)}),
    (ContainsEvaluator, {}, "contains", {}, {"search_text": "Paris"}, "Paris, France"),
    (JsonSimilarityEvaluator, {}, "json_similarity", {},
     {"expected_output": {"a": 1.0, "b": "x"}}, {"a": np.float64(1.0), "b": "y"}),
]


@pytest.mark.parametrize(("cls", "config", "kind", "params", "criteria", "output"), UIPATH,
                         ids=["exact-ndarray", "exact-tuple", "contains", "json-numpy"])
async def test_the_uipath_evaluators_score_as_evaluate_does(
        cls: Any, config: dict[str, Any], kind: str, params: dict[str, Any],
        criteria: dict[str, Any], output: Any) -> None:
    evaluator = cls(id="e", config=config)
    result = await evaluator.validate_and_evaluate_criteria(
        agent_execution=AgentExecution(agent_input={}, agent_output=output, agent_trace=[]),
        evaluation_criteria=criteria)
    expected = criteria.get("expected_output")
    own = {**params, **{k: v for k, v in criteria.items() if k != "expected_output"}}
    run = await assay.evaluate_async(
        [{"id": "e", "input": {}, "output": output, "expected_output": expected}],
        evaluators=[{"type": kind, "name": "e", **own}], store=":memory:",
        gates={"max_failed": None})
    score = run.records[0].scores[0]
    assert score.value is not None and result.score == pytest.approx(score.value, abs=0.005)


async def test_a_uipath_llm_judge_scores_as_evaluate_does(mock_model, monkeypatch) -> None:
    monkeypatch.setenv("ASSAY_JUDGE_MODEL", mock_model)
    evaluator = LLMJudgeOutputEvaluator(id="sim", config={})
    result = await evaluator.validate_and_evaluate_criteria(
        agent_execution=AgentExecution(agent_input={}, agent_output=("the capital", "Paris"),
                                       agent_trace=[]),
        evaluation_criteria={"expected_output": ["the capital", "is Paris"]})
    run = await assay.evaluate_async(
        [{"id": "sim", "input": {}, "output": ("the capital", "Paris"),
          "expected_output": ["the capital", "is Paris"]}],
        evaluators=[{"type": "semantic_similarity", "name": "sim"}], store=":memory:",
        gates={"max_failed": None})
    score = run.records[0].scores[0]
    assert score.value is not None and result.score == round(score.value, 2)


# -- one engine builder -----------------------------------------------------------------------


def test_only_the_builder_constructs_a_judge_engine() -> None:
    """``JudgeEngine(...)`` appears in llm/build.py alone (the engine's own module defines
    it; a dry-run recorder of calibration keys subclasses it)."""
    found = [f"{path.relative_to(SRC)}:{n}" for path in SRC.rglob("*.py")
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if re.search(r"\bJudgeEngine\(", line) and "class " not in line
             and path.relative_to(SRC).as_posix() not in ("llm/build.py", "llm/engine.py")]
    assert found == [], found


ENTRIES = {
    "score": lambda m: assay.score(assay.SemanticSimilarity(), assay.Case(
        id="a", expected_output="Paris"), Execution(output="Paris"), judge_model=m),
    "evaluate": lambda m: assay.evaluate(
        [{"id": "a", "output": "Paris", "expected_output": "Paris"}],
        evaluators=["semantic_similarity"], judge_model=m, store=":memory:"),
    "judge": lambda m: CliRunner().invoke(app, ["judge", "-e", "Paris", "-a", "Paris",
                                                "-m", m]),
    "uipath": lambda m: asyncio.run(LLMJudgeOutputEvaluator(
        id="u", config={"model": m}).validate_and_evaluate_criteria(
        agent_execution=AgentExecution(agent_output="Paris"),
        evaluation_criteria={"expected_output": "Paris"})),
    "chat_model": lambda m: asyncio.run(_chat(m)),
}


async def _chat(model: str) -> Any:
    from assay.targets.chat_model import ChatModelTarget

    target = ChatModelTarget(model)
    try:
        return await target.run(assay.Case(id="a", input="Capital of France?"))
    finally:
        await target.aclose()


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_every_entry_honours_assay_cache(entry, mock_model, mock_server, monkeypatch,
                                         tmp_path) -> None:
    """With ``ASSAY_CACHE=off`` the second call asks the model again and no cache file is
    made; with the default mode it is answered from the cache."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(cache))
    monkeypatch.setenv("ASSAY_CACHE", "off")
    for _ in range(2):
        ENTRIES[entry](mock_model)
    assert mock_server.stats.requests == 2 and not (cache / "responses.sqlite").exists()
    monkeypatch.delenv("ASSAY_CACHE")
    for _ in range(2):
        ENTRIES[entry](mock_model)
    assert mock_server.stats.requests == 3


def test_calibrate_and_drafting_rubrics_honour_assay_cache(mock_model, mock_server,
                                                           monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ASSAY_CACHE", "off")
    for _ in range(2):  # two items, each asked twice (both orders)
        assay.calibrate("llmbar-natural", limit=2, judge_model=mock_model, resamples=0,
                        store=f"sqlite:///{tmp_path / 'runs.db'}")
    calls = mock_server.stats.requests
    assert calls == 8 and not (tmp_path / "cache" / "responses.sqlite").exists()
    suite = tmp_path / "EVAL.yaml"
    suite.write_text(textwrap.dedent("""
        evalcases:
          - {id: a, input: Capital of France?, expected_outcome: names Paris}
    """))
    asked: list[Any] = []

    async def drafter(**request: Any) -> dict[str, Any]:
        asked.append(request)
        answer = json.dumps({"rubrics": [{"id": "paris", "expected_outcome": "names Paris"}]})
        return {"choices": [{"message": {"role": "assistant", "content": answer}}]}

    model = assay.register_service("rubric-drafter", drafter)
    for mode in ("off", "off", "use", "use"):
        monkeypatch.setenv("ASSAY_CACHE", mode)
        done = CliRunner().invoke(app, ["generate", "rubrics", str(suite), "--judge-model",
                                        model])
        assert done.exit_code == 0, done.output
    assert len(asked) == 3  # the last one answered from the cache


# -- a stored run's config is typed, and tolerant of what it does not know --------------------


def test_a_stored_run_config_reads_old_and_unknown_keys_and_names_what_it_cannot_read(
        tmp_path) -> None:
    from assay.types.config import RecordedRunConfig

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = RunStore(url)
    old = store.create_run("s", {"run": {"concurrency": 4, "filter": "a*",
                                         "a_key_of_another_version": [1]}})
    plugin = store.create_run("s", {"run": {"scoring": "a-plugin-not-installed",
                                            "concurrency": 5000}})
    runs = {r.id: r for r in RunStore(url).run_records()}
    config = runs[old].config.run
    assert isinstance(config, RecordedRunConfig) and not runs[old].unreadable
    assert (config.concurrency, config.filter) == (4, "a*")
    assert config.model_extra == {"a_key_of_another_version": [1]}
    assert config.runnable(old).concurrency == 4
    unread = runs[plugin].config.run
    assert not runs[plugin].unreadable and unread.scoring is None
    assert set(unread.unread) == {"scoring", "concurrency"}
    dumped = runs[plugin].model_dump(mode="json")["config"]["run"]
    assert (dumped["scoring"], dumped["concurrency"]) == ("a-plugin-not-installed", 5000)
    with pytest.raises(ConfigError, match=f"run {plugin}: its recorded config cannot be "
                       "read: .*a-plugin-not-installed"):
        assay.resume(plugin, store=url)


def test_runs_json_prints_the_typed_records(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    RunStore(url).create_run("s", {"run": {"concurrency": 4, "old": True}})
    done = CliRunner().invoke(app, ["runs", "--store", url, "--json"])
    assert done.exit_code == 0, done.output
    (run,) = json.loads(done.output)
    # the record, and what every list of runs says of its cases (as GET /runs does)
    assert set(run) == {"id", "suite", "status", "created_at", "finished_at", "config",
                        "summary", "unreadable", "abandoned", "name", "tags", "notes",
                        "stored_cases", "cases"}
    assert (run["stored_cases"], run["cases"]) == (0, "0 stored")
    assert run["config"]["run"]["concurrency"] == 4 and run["config"]["run"]["old"] is True
    assert RunSnapshot.model_validate(run["config"]).run.concurrency == 4


def test_the_store_has_a_public_transaction_and_no_dict_readers(tmp_path) -> None:
    from sqlalchemy import text

    store = RunStore(f"sqlite:///{tmp_path / 'runs.db'}")
    run_id = store.create_run("s", {})
    with store.transaction() as conn:
        assert conn.execute(text("select count(*) from runs")).scalar() == 1
    with pytest.raises(StoreError, match="failed: no such table"), \
            store.transaction() as conn:
        conn.execute(text("select * from no_such_table"))
    assert not any(hasattr(store, name) for name in ("run", "runs", "case_rows", "_begin"))
    assert store.run_record(run_id).suite == "s"


# -- one dry-run mechanism, the same in every command -----------------------------------------

RECORDED = textwrap.dedent("""
    execution:
      evaluators: [{name: similar, type: semantic_similarity}]
    evalcases:
      - {id: fr, input: Capital of France?, expected_output: Paris, metadata: {output: Paris.}}
      - {id: jp, input: Capital of Japan?, expected_output: Tokyo, metadata: {output: Tokyo.}}
""")


def test_rescore_has_the_dry_run_every_command_has(tmp_path, mock_model, mock_server) -> None:
    """A dry rescore counts the calls the real one would make (the cache's answers apart),
    makes none and stores nothing, as a dry ``assay run`` does."""
    (tmp_path / "EVAL.yaml").write_text(RECORDED)
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    cli = CliRunner()
    real = cli.invoke(app, ["run", str(tmp_path / "EVAL.yaml"), "--judge-model", mock_model,
                            "--store", store, "--max-failed", "5"])
    assert real.exit_code == 0 and mock_server.stats.requests == 2, real.output
    (run,) = RunStore(store).run_records()
    for cache, counted in (("use", "0 judge call(s) at most (+2 answered from the cache"),
                           ("off", "2 judge call(s) at most (+0 answered from the cache")):
        dry = cli.invoke(app, ["rescore", run.id, "--dry-run", "--store", store,
                               "--cache", cache])
        assert dry.exit_code == 0, dry.output
        assert f"dry run: 2 case(s); {counted}" in dry.output and "nothing stored" in dry.output
    assert mock_server.stats.requests == 2 and len(RunStore(store).run_records()) == 1


def test_a_dry_eval_writes_no_results_and_says_none(tmp_path, mock_model, mock_server) -> None:
    (tmp_path / "EVAL.yaml").write_text(RECORDED)
    out = tmp_path / "out.jsonl"
    dry = CliRunner().invoke(app, ["eval", str(tmp_path / "EVAL.yaml"), "--dry-run", "--out",
                                   str(out), "--judge-model", mock_model, "--store",
                                   f"sqlite:///{tmp_path / 'runs.db'}"])
    assert dry.exit_code == 0, dry.output
    assert "dry run: 2 case(s); 2 judge call(s) at most" in dry.output
    assert "results written" not in dry.output and not out.exists()
    assert mock_server.stats.requests == 0

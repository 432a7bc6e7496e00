"""One number formatter: a run's figures read the same on every surface.

The same stored run (under the default policy and under Connexity's, whose 0-100 scale is
labelled) is read from the terminal (``assay show --summary``), Markdown (``assay report
--markdown -``), JUnit (the ``junit`` reporter), the static HTML report (``assay report
--html``, the data its page shows) and the REST API's display fields; each surface's pass
rate, mean score, latency, cost and dimensions must be the very same text, and the one the
rules of :mod:`assay.types.numbers` give (written out here, not computed by assay). A case
score is on its run's policy's scale everywhere. ``test_browser`` checks what the web UI
shows of the same run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree as ET

import httpx
import pytest
from typer.testing import CliRunner

from assay.cli import app as cli_app
from assay.report.markdown import md_text
from assay.report.reporters import write_report
from assay.run.result import EvaluationResult
from assay.store.runs import RunStore
from assay.testing.runs import write_scored_run
from assay.types import numbers
from assay.types.execution import Execution
from assay.types.score import Score
from tests.server_support import serve

FIGURES = {
    "pass_rate": "85.0%",
    "latency_p50": "195 ms",
    "latency_p95": "290 ms",
    "judge_cost": "$0.0020",
}
"""What every surface shows of :func:`write_scored_run`'s run, whatever its policy."""
MEAN = {"default": "0.855", "connexity": "85.5 /100"}
DIMENSIONS = {"metrics_dimension": "85.5 /100", "metrics_threshold": "80.0 /100",
              "cases_dimension": "85.0%", "cases_threshold": "100.0%"}
"""Connexity's run dimensions (the default policy's run has none to show)."""
FAILED_CASE = {"default": "0.600", "connexity": "60.0 /100"}
PASSED_CASE = {"default": "0.900", "connexity": "90.0 /100"}
"""The scores of a case that did not pass and of one that did, on the run's policy's scale."""


def expected(policy: str) -> dict[str, str]:
    return {**FIGURES, "mean_score": MEAN[policy],
            **(DIMENSIONS if policy == "connexity" else {})}


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('one-number') / 'runs.db'}"
    store = RunStore(url)
    runs = {policy: write_scored_run(store, policy, suite=f"figures-{policy}")
            for policy in MEAN}
    store.close()
    yield url, runs


@pytest.fixture(scope="module")
def api(stored: tuple[str, dict[str, str]]) -> Iterator[httpx.Client]:
    with serve(stored[0]) as served, served.client() as client:
        yield client


def _cli(*args: str) -> str:
    done = CliRunner().invoke(cli_app, list(args))
    assert done.exit_code == 0, done.output
    return done.output


def _match(pattern: str, text: str) -> str:
    found = re.search(pattern, text, re.M)
    assert found is not None, f"{pattern!r} not in:\n{text}"
    return found.group(1)


def terminal(url: str, run_id: str, policy: str) -> dict[str, str]:
    """The figures ``assay show RUN --summary`` prints."""
    text = _cli("show", run_id, "--summary", "--store", url)
    found = {
        "pass_rate": _match(r"^\d+ cases: .*; pass rate (\S+);", text),
        "mean_score": _match(r"; mean score (.+?) over \d+ scored", text),
        "latency_p50": _match(r"^agent turn latency p50 (.+?), p95", text),
        "latency_p95": _match(r"^agent turn latency p50 .+?, p95 (.+?), mean", text),
        "judge_cost": _match(r"^judge calls .*; cost (\S+)$", text),
    }
    if policy == "connexity":
        found.update(_dimensions(text, "metrics dimension", "cases dimension"))
    return found


def _dimensions(text: str, metrics: str, cases: str) -> dict[str, str]:
    """The two dimensions and their thresholds, after the words that introduce each."""
    found = {}
    for name, words in (("metrics", metrics), ("cases", cases)):
        found[f"{name}_dimension"] = _match(rf"{words} (.+?) \(threshold", text)
        found[f"{name}_threshold"] = _match(rf"{words} .+? \(threshold (.+?)\)", text)
    return found


def _table(lines: list[str], header: str) -> list[dict[str, str]]:
    """The rows of the Markdown table whose header line starts with ``header``."""
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    names = [cell.strip() for cell in lines[start].strip("|").split("|")]
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(names, (c.strip() for c in line.strip("|").split("|")),
                             strict=True)))
    return rows


def markdown(url: str, run_id: str, policy: str) -> tuple[dict[str, str], list[str]]:
    """The figures ``assay report RUN --markdown -`` writes, and its problem cases' scores."""
    text = _cli("report", run_id, "--markdown", "-", "--store", url)
    lines = text.splitlines()
    row = _table(lines, "| cases |")[0]
    found = {"pass_rate": row["pass rate"], "mean_score": row["mean score"],
             "latency_p50": row["turn latency p50"], "latency_p95": row["turn latency p95"],
             "judge_cost": row["judge cost"]}
    if policy == "connexity":
        found.update(_dimensions(text, "^Dimensions: metrics", ", cases"))
    return found, [r["score"] for r in _table(lines, "| case | verdict |")]


def junit(url: str, run_id: str, tmp_path: Path
          ) -> tuple[dict[str, str], list[str], dict[str, str]]:
    """The suite's properties the ``junit`` reporter writes, and the cases' scores; and
    every property, by its whole name."""
    store = RunStore(url)
    try:
        path = tmp_path / f"{run_id}.xml"
        write_report("junit", EvaluationResult(store, store.run_record(run_id)), path)
    finally:
        store.close()
    root = ET.parse(path).getroot()
    properties = {p.get("name", ""): p.get("value", "")
                  for p in root.iter("property")}
    found = {key.removeprefix("assay."): value for key, value in properties.items()
             if key.startswith("assay.") and not key.startswith("assay.evaluator.")}
    scores = [_match(r"score (.+?)$", out.text or "") for out in root.iter("system-out")]
    return found, scores, properties


def html_report(url: str, run_id: str, tmp_path: Path) -> tuple[dict[str, str], list[str]]:
    """The figures the static HTML report's page shows (the data embedded in it)."""
    path = tmp_path / f"{run_id}.html"
    _cli("report", run_id, "--html", str(path), "--store", url)
    page = path.read_text(encoding="utf-8")
    data = json.loads(_match(r'<script type="application/json" id="assay-data">(.*?)</script>',
                             page))
    return data["run"]["display"], [row["display"]["score"] for row in data["cases"]]


def _same(found: dict[str, str], want: dict[str, str], surface: str) -> None:
    shown = {key: found.get(key) for key in want}
    assert shown == want, f"{surface} shows {shown}, every surface shows {want}"


@pytest.mark.parametrize("policy", list(MEAN))
def test_a_runs_figures_read_the_same_on_every_surface(stored, api, policy, tmp_path):
    url, runs = stored
    run_id = runs[policy]
    want = expected(policy)
    _same(terminal(url, run_id, policy), want, "the terminal")
    found, problems = markdown(url, run_id, policy)
    _same(found, want, "Markdown")
    assert problems == [FAILED_CASE[policy]] * 3
    found, scores, _ = junit(url, run_id, tmp_path)
    _same(found, want, "JUnit")
    assert sorted(scores) == sorted([FAILED_CASE[policy]] * 3 + [PASSED_CASE[policy]] * 17)
    found, scores = html_report(url, run_id, tmp_path)
    _same(found, want, "the HTML report")
    assert scores.count(FAILED_CASE[policy]) == 3
    detail = api.get(f"/runs/{run_id}").json()
    _same(detail["display"], want, "GET /runs/{id}")
    listed = next(r for r in api.get("/runs").json()["items"] if r["id"] == run_id)
    _same(listed["display"], want, "GET /runs")
    cases = api.get(f"/runs/{run_id}/cases").json()["items"]
    assert [c["display"]["score"] for c in cases[:3]] == [FAILED_CASE[policy]] * 3
    case = api.get(f"/runs/{run_id}/case", params={"case_id": cases[0]["case_id"]}).json()
    assert case["display"]["score"] == FAILED_CASE[policy]
    assert case["display"]["scores"][0]["value"] == "0.600"  # an evaluator's value is 0-1


def test_a_rate_is_a_percent_and_a_missing_value_a_dash():
    assert numbers.percent(0.85) == "85.0%" and numbers.percent(None) == "-"
    assert numbers.percent(float("nan")) == "-" and numbers.score(0.85) == "0.850"
    assert numbers.points(85.5) == "85.5 /100" and numbers.points(3.4, 5) == "3.4 /5"
    assert numbers.milliseconds(243.4) == "243 ms" and numbers.milliseconds(12_400) == "12.4 s"
    assert numbers.latency_change(13.2) == "+13 ms (slower)"
    assert numbers.milliseconds_delta(-1200) == "-1200 ms"
    assert numbers.usd(0.01234) == "$0.0123" and numbers.usd(12.5) == "$12.50"
    assert numbers.usd(0.000045) == "$0.000045"  # one cheap call is not free
    assert numbers.p_value(0.00001) == "< 0.0001" and numbers.p_value(0.03123) == "0.0312"
    assert numbers.plain(0.833333333) == "0.833333" and numbers.plain(3) == "3"
    assert numbers.count(12345) == "12,345"
    # a zero has no sign, whichever way arithmetic made it
    assert numbers.score(-0.0) == numbers.score(0.0) == "0.000"
    assert numbers.percent(-0.0) == "0.0%" and numbers.points(-0.0) == "0.0 /100"
    assert numbers.score_delta(-0.0001) == numbers.score_delta(0.0) == "+0.000"
    assert numbers.usd(-0.0) == "$0.0000" and numbers.plain(-0.0) == "0"


OUTCOMES = {"judge": "error judge_output_invalid", "context": "n/a", "exact": "1.000",
            "length": "measured 12"}
"""An evaluator that erred, one that did not apply, one that scored and one that measured,
as every surface says them: an error is never shown as a missing figure, and a measurement
(counted apart from the skips by every summary) never as not applicable."""


def _outcomes_run(url: str) -> str:
    """A completed run of one case with the four kinds of score of :data:`OUTCOMES`."""
    from assay.judges.feedback import measured
    from assay.testing.runs import store_case
    from assay.types.execution import Execution
    from assay.types.records import Case, CaseRecord
    from assay.types.score import Score
    from assay.types.verdict import Verdict

    store = RunStore(url)
    try:
        run_id = store.create_run("outcomes", {"suite_name": "outcomes"})
        scores = [Score.failed("judge", "judge_output_invalid", "the answer was not JSON"),
                  Score.not_applicable("context", "the case has no context"),
                  Score(name="exact", value=1.0, passed=True),
                  measured("length", 12, "number")]
        store_case(store, CaseRecord(run_id=run_id, case_id="c1", case=Case(id="c1", input="q"),
                                     execution=Execution(output="a"), scores=scores, score=1.0,
                                     verdict=Verdict.ERROR))
        store.flush()
        store.set_status(run_id, "completed", None)
    finally:
        store.close()
    return run_id


def _uipath_cells(url: str, run_id: str) -> dict[str, str]:
    """The cells of the case's row in the results table ``assay eval`` (UiPath's) prints."""
    from rich.console import Console

    from assay.report.uipath_console import results_table
    from assay.types.records import RunSummary

    store = RunStore(url)
    try:
        records = store.case_records(run_id)
    finally:
        store.close()
    console = Console(width=200, record=True, color_system=None)
    console.print(results_table(records, RunSummary()))
    lines = console.export_text().splitlines()
    header = next(line for line in lines if line.startswith("┃ Evaluation"))
    row = next(line for line in lines if line.lstrip("│ ").startswith("c1"))
    names = [cell.strip() for cell in header.strip("│┃ ").split("┃")][1:]
    cells = [cell.strip() for cell in row.strip("│ ").split("│")][1:]
    return dict(zip(names, cells, strict=True))


def test_an_evaluators_error_and_skip_read_the_same_on_every_surface(tmp_path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = _outcomes_run(url)
    text = _cli("show", run_id, "--store", url)
    for name, shown in OUTCOMES.items():
        assert f"{name}: {shown}" in text, text
    _cli("report", run_id, "--html", str(tmp_path / "report.html"), "--store", url)
    data = json.loads(_match(r'<script type="application/json" id="assay-data">(.*?)</script>',
                             (tmp_path / "report.html").read_text(encoding="utf-8")))
    assert data["cases"][0]["display"]["scores"] == OUTCOMES
    assert _uipath_cells(url, run_id) == OUTCOMES
    with serve(url) as served, served.client() as client:
        row = client.get(f"/runs/{run_id}/cases").json()["items"][0]
        assert row["display"]["scores"] == OUTCOMES
        skipped = {name: client.get(f"/runs/{run_id}/cases", params={
            "evaluator": name, "evaluator_state": "skipped"}).json()["total"]
            for name in ("context", "length")}
        assert skipped == {"context": 1, "length": 0}  # as the histograms count them
        histograms = client.get(f"/runs/{run_id}/histograms").json()
        assert (histograms["evaluator_skips"], histograms["evaluator_measurements"]) == \
            ({"context": 1, "length": 0, "judge": 0}, {"length": 1})
        case = client.get(f"/runs/{run_id}/case", params={"case_id": "c1"}).json()
        names = [s["name"] for s in case["record"]["scores"]]
        shown = [s["value"] for s in case["display"]["scores"]]
        assert dict(zip(names, shown, strict=True)) == OUTCOMES


def test_a_score_of_negative_zero_reads_as_zero_on_every_surface(tmp_path):
    """A scorer may return -0.0 (``0 * -1``): its score is 0, and a database keeps no sign of
    zero, so the API's page of cases said ``0.000`` while ``assay show`` and the API's case
    page, which read the score as recorded, said ``-0.000``."""
    import assay

    @assay.scorer(name="signed")
    def signed_zero(outputs: str) -> float:
        return -0.0

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    result = assay.evaluate([{"id": "c1", "input": "q", "output": "a"}],
                            evaluators=[signed_zero], store=url)
    assert str(result.records[0].scores[0].value) == "-0.0"  # the premise
    text = _cli("show", result.run_id, "--store", url)
    assert "signed: 0.000" in text and "-0.000" not in text, text
    with serve(url) as served, served.client() as client:
        row = client.get(f"/runs/{result.run_id}/cases").json()["items"][0]
        case = client.get(f"/runs/{result.run_id}/case", params={"case_id": "c1"}).json()
    assert row["display"]["scores"] == {"signed": "0.000"}
    assert [s["value"] for s in case["display"]["scores"]] == ["0.000"]


def _passed_run(url: str, suite: str, scores: dict[str, list[Score]],
                dataset_metrics: dict[str, Score] | None = None,
                execution: Execution | None = None, naming: str | None = None) -> str:
    """A completed, passed run of the cases ``scores`` names (each passed with a case score
    of 1.0, judged by its scores, the agent's ``execution`` its own), with its summary as
    the runner builds it and the ``dataset_metrics`` the runner adds to it."""
    from assay.testing.runs import store_case
    from assay.types.records import Case, CaseRecord, SummaryBuilder
    from assay.types.verdict import Verdict

    store = RunStore(url)
    try:
        config: dict[str, object] = {"suite_name": suite}
        if naming is not None:
            config["run"] = {"naming": naming}
        run_id = store.create_run(suite, config)
        builder = SummaryBuilder()
        for case_id, judged in scores.items():
            record = CaseRecord(
                run_id=run_id, case_id=case_id, case=Case(id=case_id, input="q"),
                execution=execution or Execution(output="a"), score=1.0,
                verdict=Verdict.PASS, scores=judged)
            store_case(store, record)
            builder.add(record)
        summary = builder.build()
        summary.passed = True
        summary.dataset_metrics = dataset_metrics or {}
        store.flush()
        store.set_status(run_id, "completed", summary.model_dump(mode="json"))
    finally:
        store.close()
    return run_id


def _measured_run(url: str) -> str:
    """A run of two cases, each scored by ``exact`` and measured by ``length`` (5, 15)."""
    from assay.judges.feedback import measured

    return _passed_run(url, "measured", {
        case_id: [Score(name="exact", value=1.0, passed=True),
                  measured("length", length, "number")]
        for case_id, length in (("c1", 5), ("c2", 15))})


def test_an_evaluators_measurements_read_the_same_on_every_surface(tmp_path):
    """The count and figures of what an evaluator measured: the terminal said them, while
    Markdown's evaluator table and the web UI's showed such an evaluator as nothing counted
    (0 scored, 0 skipped) and JUnit's properties left it out."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = _measured_run(url)
    want = "2 value(s): mean 10, min 5, max 15"
    text = _cli("show", run_id, "--summary", "--store", url)
    assert f"length: measured {want}; a measurement counts in no verdict" in text, text
    lines = _cli("report", run_id, "--markdown", "-", "--store", url).splitlines()
    rows = {row["evaluator"]: row for row in _table(lines, "| evaluator |")}
    assert (rows["length"]["measured"], rows["length"]["values"], rows["exact"]["measured"]) \
        == (want, "0", "0 value(s)")
    properties = junit(url, run_id, tmp_path)[2]
    assert properties["assay.evaluator.length.measured"] == want
    assert "assay.evaluator.exact.measured" not in properties
    assert html_report(url, run_id, tmp_path)[0]["measured"] == {"length": want}
    with serve(url) as served, served.client() as client:
        assert client.get(f"/runs/{run_id}").json()["display"]["measured"] == {"length": want}


DATASET = {"precision": "0.667 (2 of 3 predicted yes were yes)",
           "recall": "error no_positive: no case expected yes"}
"""A run's dataset-level metrics as every surface says them: an error is never left out."""


def _dataset_run(url: str) -> str:
    """A run of one case with a dataset-level metric that has a value and one that erred."""
    return _passed_run(url, "dataset", {"c1": [Score(name="exact", value=1.0, passed=True)]},
                       {"precision": Score(name="precision", value=2 / 3,
                                           rationale="2 of 3 predicted yes were yes"),
                        "recall": Score.failed("recall", "no_positive",
                                               "no case expected yes")})


def test_a_runs_dataset_metrics_read_the_same_on_every_surface(tmp_path):
    """The terminal said a run's dataset-level metrics (and their errors); Markdown, JUnit's
    properties and the web UI (the REST API's display, the HTML report) left them out."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = _dataset_run(url)
    text = _cli("show", run_id, "--summary", "--store", url)
    for name, shown in DATASET.items():
        assert f"dataset metric {name}: {shown}" in text, text
    lines = _cli("report", run_id, "--markdown", "-", "--store", url).splitlines()
    assert {row["dataset metric"]: row["value"] for row in _table(lines, "| dataset metric |")} \
        == {name: md_text(shown, 400) for name, shown in DATASET.items()}  # Markdown-escaped
    properties = junit(url, run_id, tmp_path)[2]
    assert {name: properties[f"assay.dataset_metric.{name}"] for name in DATASET} == DATASET
    assert html_report(url, run_id, tmp_path)[0]["dataset_metrics"] == DATASET
    with serve(url) as served, served.client() as client:
        assert client.get(f"/runs/{run_id}").json()["display"]["dataset_metrics"] == DATASET


def test_a_conversations_columns_read_the_same_in_every_row_of_it(tmp_path):
    """What stopped a multi-turn case, its agent turns and the agent's latency over them:
    ``assay show --json`` (and the output files) had them, ``result.rows()`` (and so
    ``to_pandas``) left them out."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = _conversation_run(url)
    shown = json.loads(_cli("show", run_id, "--json", "--store", url).splitlines()[0])
    assert {key: shown.get(key) for key in CONVERSATION} == CONVERSATION
    store = RunStore(url)
    try:
        row = EvaluationResult(store, store.run_record(run_id)).rows()[0]
    finally:
        store.close()
    assert {key: row.get(key) for key in CONVERSATION} == CONVERSATION


CONVERSATION = {"stop_reason": "user_ended", "agent_turns": 3, "agent_latency_p50_ms": 300,
                "agent_latency_p95_ms": 480.0, "agent_latency_max_ms": 480.0}
"""The conversation columns of :func:`_conversation_run`'s case, in every row of it."""


def _conversation_run(url: str, naming: str | None = None) -> str:
    """A run of one three-turn conversation (agent turns of 120, 480 and 300 ms), its rows
    in ``naming``."""
    from assay.types.execution import ConversationInfo
    from assay.types.messages import Message

    conversation = ConversationInfo(stop_reason="user_ended", agent_turns=3, user_turns=3,
                                    turn_latencies_ms=[120.0, 480.0, 300.0])
    return _passed_run(url, f"chat-{naming}", {"c1": [Score(name="exact", value=1.0,
                                                             passed=True)]},
                       execution=Execution(output="bye", latency_ms=900.0,
                                           conversation=conversation,
                                           messages=[Message(role="user", content="hi"),
                                                     Message(role="assistant", content="bye")]),
                       naming=naming)


@pytest.mark.parametrize("naming", ["databricks", "mlflow"])
def test_a_conversations_columns_are_in_its_rows_in_either_naming(tmp_path, naming):
    """``rows()`` (and ``to_pandas``, ``result_df``) of a run reported in Databricks' or
    MLflow's names left out what stopped a conversation, its agent turns and the agent's
    latency over them, which its rows in assay's names have. Neither family names these
    columns: they keep assay's names, after the naming's own (whose latency columns, the
    whole execution's, are unchanged)."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = _conversation_run(url, naming)
    store = RunStore(url)
    try:
        result = EvaluationResult(store, store.run_record(run_id))
        assert result.naming == naming
        row = result.rows()[0]
    finally:
        store.close()
    assert {key: row.get(key) for key in CONVERSATION} == CONVERSATION
    assert list(row)[-len(CONVERSATION):] == list(CONVERSATION)
    whole = {"databricks": ("agent/latency_seconds", 0.9),
             "mlflow": ("execution_duration", 900)}[naming]
    assert row[whole[0]] == whole[1]


def test_an_evaluators_outcome_on_a_case_reads_the_same_on_the_case_and_compare_pages(
        tmp_path):
    """The compare page's case view showed a measurement as 'not applicable' with '-', and
    an error as its bare code, where the case page shows 'measured 15' and 'error CODE';
    and the case page's badge was decided by the web UI itself. One rule, Score.outcome and
    Score.shown, for both."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    first, second = _measured_run(url), _measured_run(url)
    with serve(url) as served, served.client() as client:
        page = client.get(f"/runs/{second}/case", params={"case_id": "c2"}).json()
        compared = client.get("/runs/compare/case", params={
            "baseline_run_id": first, "candidate_run_id": second, "case_id": "c2"}).json()
    shown = {s["name"]: s for s in compared["candidate"]["scores"]}
    cards = dict(zip([s["name"] for s in page["record"]["scores"]],
                     page["display"]["scores"], strict=True))
    for name, state, value in (("length", "measured", "measured 15"),
                               ("exact", "passed", "1.000")):
        assert (shown[name]["state"], shown[name]["value"]) == (state, value)
        assert (cards[name]["state"], cards[name]["value"]) == (state, value)


REPEATS = "5 cases x 3 repeats: 3 passed every repeat (pass^3 60.0%), 1 flaky, 1 never passed"
"""What every surface says of :func:`_repeats_run`'s run: 10 of 15 executions passed (66.7%),
but only 3 of its 5 cases passed every time."""


FLAKY = "flaky [bold]1"
"""The flaky case of :func:`_repeats_run`'s run, as every surface names it."""


def _repeats_run(url: str, repeat: int = 3) -> str:
    """A run of five cases, ``repeat`` repeats each, by an agent that answers ``a``, ``b``
    and ``c`` right every time, ``flaky [bold]1`` right only on its first call and ``never``
    never (with one repeat, a run of the same cases without repeats)."""
    import assay

    calls: dict[str, int] = {}

    def agent(question: str) -> str:
        calls[question] = calls.get(question, 0) + 1
        if question == "never" or (question == "flaky [bold]1" and calls[question] > 1):
            return "wrong"
        return "right"

    rows = [{"id": question, "input": question, "expected_output": "right"}
            for question in ("a", "b", "c", "flaky [bold]1", "never")]
    result = assay.evaluate(rows, target=agent, evaluators=["exact_match"], repeat=repeat,
                            concurrency=1, store=url)
    assert result.summary.passed_count == (10 if repeat == 3 else 4)
    return result.run_id


def test_a_runs_repeats_read_the_same_on_every_surface(tmp_path):
    """A run with repeats kept each case's summary over its repeats, but no surface showed
    it: a pass rate of 66.7% hid that one case in five passes only sometimes. Every surface
    now says pass^k and how many cases are flaky, and the terminal names the flaky ones."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = _repeats_run(url)
    text = _cli("show", run_id, "--summary", "--store", url)
    assert f"repeats: {REPEATS}\n  flaky: {FLAKY}\n" in text, text
    markdown_text = _cli("report", run_id, "--markdown", "-", "--store", url)
    assert f"Repeats: {md_text(REPEATS, 400)}\n\nFlaky: {md_text(FLAKY, 400)}\n" \
        in markdown_text, markdown_text
    properties = junit(url, run_id, tmp_path)[2]
    assert (properties["assay.repeats"], properties["assay.flaky"]) == (REPEATS, FLAKY)
    assert html_report(url, run_id, tmp_path)[0]["repeats"] == REPEATS
    with serve(url) as served, served.client() as client:
        display = client.get(f"/runs/{run_id}").json()["display"]
        assert (display["repeats"], display["flaky"]) == (REPEATS, FLAKY)
        listed = next(r for r in client.get("/runs").json()["items"] if r["id"] == run_id)
        assert listed["display"]["repeats"] == REPEATS


def test_a_run_without_repeats_says_none_and_the_terminal_names_five_flaky_cases():
    """A run without repeats keeps no case summaries: its figure is missing (``-``), which
    the terminal and Markdown leave out and JUnit writes no property for. A run stopped
    part-way repeated its cases unevenly: its repeats are a range. The terminal names the
    first five flaky cases and counts the rest."""
    from assay.report.terminal import repeats_lines
    from assay.run.display import flaky_figure, repeats_figure, run_display
    from assay.types.records import CaseSummary, RunSummary

    assert repeats_figure({}) == numbers.MISSING
    assert flaky_figure({}) == numbers.MISSING
    assert repeats_lines(run_display(RunSummary())) == []
    flaky = {f"c{i}": CaseSummary(executions=3, passed=1, pass_fraction=1 / 3, flaky=True)
             for i in range(7)}
    cases = {**flaky, "short": CaseSummary(executions=2, passed=2, pass_fraction=1.0,
                                           pass_all=True)}
    summary = RunSummary(case_summary=cases)
    want = "8 cases x 2 to 3 repeats: 1 passed every repeat (pass^k 12.5%), 7 flaky, " \
           "0 never passed"
    assert run_display(summary).flaky == "c0, c1, c2, c3, c4 and 2 more"
    assert repeats_lines(run_display(summary)) == [
        f"repeats: {want}", "  flaky: c0, c1, c2, c3, c4 and 2 more"]


def test_a_runs_repeats_show_under_its_cases_and_nothing_without_repeats(tmp_path):
    """``assay show RUN`` (its cases, then its figures) said the pass rate of a run with
    repeats but not pass^k nor which case is flaky, which ``--summary`` said. It says both
    now; a run without repeats shows no repeats line at all (no ``-``)."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id, once = _repeats_run(url), _repeats_run(url, repeat=1)
    text = _cli("show", run_id, "--store", url)
    assert f"\nrepeats: {REPEATS}\n  flaky: {FLAKY}\n" in text, text
    plain = _cli("show", once, "--store", url)
    assert "pass rate 80.0%" in plain
    assert "repeats" not in plain and "  flaky:" not in plain, plain


def test_a_results_repr_print_and_notebook_table_say_its_repeats(tmp_path):
    """A result's ``repr``, ``print`` and notebook table gave the pass rate of a run with
    repeats, not pass^k nor its flaky cases, which the terminal summary and the reports
    gave. They say both now, escaped in the notebook's HTML; a result without repeats says
    nothing of them."""
    import html

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id, once = _repeats_run(url), _repeats_run(url, repeat=1)
    store = RunStore(url)
    try:
        result = EvaluationResult(store, store.run_record(run_id))
        plain = EvaluationResult(store, store.run_record(once))
        assert f", repeats={REPEATS!r}" in repr(result)
        assert f"\nrepeats: {REPEATS}\nflaky: {FLAKY}" in str(result)
        table = result._repr_html_()
        # what they count is executions, as the terminal says (it said "N cases")
        executions = result.summary.cases
        assert f", executions={executions}, " in repr(result)
        assert f"): {executions} executions, pass rate" in str(result)
        assert f" · {executions} executions · pass rate" in table
        assert f"): {plain.summary.cases} cases, pass rate" in str(plain)
        assert f"<p><b>repeats</b>: {html.escape(REPEATS)}</p>" in table
        assert f"<p><b>flaky</b>: {html.escape(FLAKY)}</p>" in table
        for shown in (repr(plain), str(plain), plain._repr_html_()):
            assert "repeats" not in shown and "flaky</b>" not in shown, shown
    finally:
        store.close()


def test_a_failed_case_run_with_repeats_says_whether_it_is_flaky_under_pytest(tmp_path):
    """``assert_case`` with repeats named each failing repeat, but not that the case passed
    in others: a flaky case read as a failing one. Its failure now ends with the case's
    repeats as a run's summary says them."""
    from assay.integrations.pytest_plugin import assert_case, suite_cases

    suite = tmp_path / "EVAL.yaml"
    suite.write_text("evalcases:\n  - id: flaky\n    input: q\n    expected_output: right\n"
                     "execution:\n  evaluators:\n    - name: exact\n      type: exact_match\n",
                     encoding="utf-8")
    calls: list[str] = []

    def agent(question: str) -> str:
        calls.append(question)
        return "right" if len(calls) == 1 else "wrong"

    item = suite_cases(suite)[0].values[0]
    with pytest.raises(AssertionError) as failed:
        assert_case(item, store=":memory:", target=agent, repeat=3, concurrency=1)
    message = str(failed.value)
    assert message.endswith(
        "\nrepeats: 1 cases x 3 repeats: 0 passed every repeat (pass^3 0.0%), 1 flaky, "
        "0 never passed\nflaky: flaky"), message


def test_the_two_latencies_are_named_apart_on_every_surface(tmp_path):
    """A run keeps two latencies: ``latency`` (each execution's whole time, a conversation's
    turns together) and ``latency_*_ms`` (each execution's median turn), and both were
    called latency: the terminal's 'agent latency', Markdown's 'latency p50', the
    comparison's 'latency, mean' and the REST schema (no description) gave a reader of a
    conversation's 300 ms no way to tell it from its 900 ms. Every surface now calls the
    run's figures agent turn latency, and the REST schema says which is which; the stored
    names and the API's fields are unchanged."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id, again = _conversation_run(url), _conversation_run(url)
    text = _cli("show", run_id, "--summary", "--store", url)
    assert "\nagent turn latency p50 300 ms, p95 -, mean 300 ms, max 300 ms\n" in text, text
    row = _table(_cli("report", run_id, "--markdown", "-", "--store", url).splitlines(),
                 "| cases |")[0]
    assert (row["turn latency p50"], row["turn latency p95"]) == ("300 ms", "-")
    with serve(url) as served, served.client() as client:
        summary = client.get(f"/runs/{run_id}").json()["summary"]
        assert (summary["latency"]["p50_ms"], summary["latency_p50_ms"]) == (900.0, 300.0)
        schema = client.get("/openapi.json").json()["components"]["schemas"]["RunSummary"]
        compared = client.get("/runs/compare", params={"baseline_run_id": run_id,
                                                       "candidate_run_id": again}).json()
    fields = schema["properties"]
    assert fields["latency"]["description"].startswith("execution time, not the run's latency")
    for name in ("latency_p50_ms", "latency_p95_ms", "latency_avg_ms", "latency_max_ms"):
        assert fields[name]["description"].startswith("agent turn latency: "), name
    labels = {f["label"]: f["baseline"] for f in compared["figures"]}
    assert labels["agent turn latency, mean"] == "300 ms"
    assert "agent turn latency (Wilcoxon)" in \
        {r["label"] for r in compared["significance_rows"]}


def test_a_comparison_says_each_runs_repeats_in_the_terminal_and_markdown(tmp_path):
    """``assay compare`` (terminal and Markdown, the step summary's too) and ``assay report
    --compare`` showed each run's pass rate but not its repeats: a candidate with a flaky
    case read as a lower pass rate. Each run with repeats now says pass^k and its flaky
    cases, as its own summary and the compare page do; a run without repeats says nothing."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    once, run_id = _repeats_run(url, repeat=1), _repeats_run(url)
    compared = CliRunner().invoke(cli_app, ["compare", once, run_id, "--store", url])
    assert compared.exit_code == 1, compared.output
    assert f"\ncandidate repeats: {REPEATS}\ncandidate flaky: {FLAKY}\n" in compared.output, \
        compared.output
    assert "baseline repeats" not in compared.output
    want = f"\n- candidate repeats: {md_text(REPEATS, 400)}\n- candidate flaky: " \
           f"{md_text(FLAKY, 400)}\n"
    markdown_text = CliRunner().invoke(cli_app, ["compare", once, run_id, "--markdown",
                                                 "--store", url]).output
    assert want in markdown_text and "baseline repeats" not in markdown_text, markdown_text
    report = _cli("report", run_id, "--compare", once, "--markdown", "-", "--store", url)
    assert want in report, report


def test_a_runs_judge_tokens_read_the_same_on_both_lines_of_its_summary():
    """The judge's tokens are counts on every line of the terminal summary: its judge line
    said ``4018 prompt + 232 completion`` beside ``judge 4,250`` on the run's cost line."""
    from rich.text import Text

    from assay.report.terminal import summary_lines
    from assay.types.records import RunSummary
    from assay.types.usage import Usage

    summary = RunSummary(usage=Usage(calls=10, prompt_tokens=4018, completion_tokens=232))
    text = "\n".join(Text.from_markup(line).plain for line in summary_lines(summary))
    assert "tokens 4,018 prompt + 232 completion;" in text, text
    assert "judge 4,250" in text, text

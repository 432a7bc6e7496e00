"""What the viewer asks the API for beyond the records: a comparison a page of cases at a time,
one case of two runs side by side with the diff of its outputs, exports of a run's and a
comparison's cases (CSV that a spreadsheet cannot run as formulas), a histogram bin as a
filter, and the columns that say why a case failed."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Iterator

import httpx
import pytest

from assay.report.export import csv_cell
from assay.store import queries
from assay.store.runs import RunStore
from assay.testing.runs import HOSTILE, write_run
from tests.server_support import serve

pytest.importorskip("fastapi")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, dict]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('viewer')}/runs.db"
    store = RunStore(url)
    now = time.time()
    ids = {"base": write_run(store, 120, seed=1, quality=0.8, created_at=now - 2 * 86400),
           "cand": write_run(store, 120, seed=2, quality=0.7, created_at=now - 86400,
                             hostile_at=[4])}
    store.close()
    with serve(url) as server, server.client() as client:
        yield client, ids


def _compare(api: httpx.Client, ids: dict, **params: object) -> dict:
    response = api.get("/runs/compare", params={
        "baseline_run_id": ids["base"], "candidate_run_id": ids["cand"], **params})
    assert response.status_code == 200, response.text
    return response.json()


def test_a_comparison_comes_a_page_of_cases_at_a_time(served):
    api, ids = served
    whole = _compare(api, ids)
    assert whole["case_total"] == 120 and len(whole["case_rows"]) == 120
    first = _compare(api, ids, case_limit=25)
    second = _compare(api, ids, case_limit=25, case_offset=25)
    assert first["case_total"] == 120 and first["cases_truncated"] is True
    assert [r["case_id"] for r in first["case_rows"] + second["case_rows"]] == \
        [r["case_id"] for r in whole["case_rows"][:50]]
    assert [c["test_case_id"] for c in first["test_case_comparisons"]] == \
        [r["case_id"] for r in first["case_rows"]]
    assert first["aggregate"] == whole["aggregate"]  # the counts cover every case
    regressions = _compare(api, ids, case_status="regression,error")
    assert regressions["case_total"] == whole["aggregate"]["total_regressions"] + \
        whole["aggregate"]["total_errors"]
    assert {r["status"] for r in regressions["case_rows"]} <= {"regression", "error"}
    one = _compare(api, ids, case_q="CASE-000007")
    assert [r["case_id"] for r in one["case_rows"]] == ["case-000007"]
    by_drop = _compare(api, ids, case_sort="delta")["test_case_comparisons"]
    deltas = [c["score_delta"] for c in by_drop if c["score_delta"] is not None]
    assert deltas == sorted(deltas)
    assert api.get("/runs/compare", params={"baseline_run_id": ids["base"],
                                            "candidate_run_id": ids["cand"],
                                            "case_status": "worse"}).status_code == 400


def test_the_compare_page_rows_are_shown_as_every_surface_shows_numbers(served):
    api, ids = served
    body = _compare(api, ids, case_limit=5)
    tests = {row["name"]: row for row in body["significance_rows"]}
    assert set(tests) == {"cases", "score", "latency"}
    assert tests["cases"]["difference"].endswith(" pt")  # a pass-rate change, in points
    assert tests["latency"]["difference"] in ("0 ms", "-") or "ms" in \
        tests["latency"]["difference"]
    evaluators = {row["name"]: row for row in body["evaluator_rows"]}
    assert set(evaluators) == {"correctness", "relevance", "tool_order"}
    row = evaluators["correctness"]
    assert row["baseline"].count(".") == 1 and len(row["baseline"]) == 5  # 0.xyz
    assert row["change"][0] in "+-"
    assert row["direction"] == ("worse" if row["change"].startswith("-") else "better")
    for case in body["case_rows"]:
        assert case["direction"] in ("worse", "better", "same", "unknown")


def test_a_case_of_two_runs_side_by_side_with_the_diff_of_its_outputs(served):
    api, ids = served
    sides = api.get("/runs/compare/case", params={
        "baseline_run_id": ids["base"], "candidate_run_id": ids["cand"],
        "case_id": "case-000004"}).json()
    assert sides["candidate"]["output"] == HOSTILE  # text, as stored
    assert sides["baseline"]["output"] == "The answer is 8."
    assert {"op": "removed", "text": "The answer is 8."} in sides["diff"]
    assert {"op": "added", "text": HOSTILE} in sides["diff"]
    assert sides["expected"] == "8"
    assert {s["name"] for s in sides["candidate"]["scores"]} == {
        "correctness", "relevance", "tool_order"}
    structured = api.get("/runs/compare/case", params={
        "baseline_run_id": ids["base"], "candidate_run_id": ids["cand"],
        "case_id": "case-000003"}).json()
    assert structured["baseline"]["output"].startswith("{\n")  # JSON, indented, to diff
    assert all(line["op"] == "same" for line in structured["diff"])
    missing = api.get("/runs/compare/case", params={
        "baseline_run_id": ids["base"], "candidate_run_id": ids["cand"], "case_id": "nope"})
    assert missing.status_code == 404


def test_a_runs_cases_export_as_csv_and_json_with_the_pages_filters(served):
    api, ids = served
    response = api.get(f"/runs/{ids['cand']}/export", params={"verdict": "fail"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    assert "attachment" in response.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(response.text)))
    page = api.get(f"/runs/{ids['cand']}/cases", params={"verdict": "fail",
                                                         "limit": 500}).json()
    assert [r["case_id"] for r in rows] == [c["case_id"] for c in page["items"]]
    assert {r["verdict"] for r in rows} == {"fail"}
    assert all(r["failing_evaluator"] for r in rows)
    assert "correctness state" in rows[0]
    whole = api.get(f"/runs/{ids['cand']}/export", params={"format": "json"}).json()
    assert len(whole) == 120
    hostile = next(r for r in whole if r["case_id"] == "case-000004")
    assert hostile["output"] == HOSTILE
    compared = api.get("/runs/compare/export", params={
        "baseline_run_id": ids["base"], "candidate_run_id": ids["cand"],
        "case_status": "regression"})
    assert compared.status_code == 200, compared.text
    lines = list(csv.DictReader(io.StringIO(compared.text)))
    assert lines and {r["status"] for r in lines} == {"regression"}
    assert float(lines[0]["score_delta"]) < 0


@pytest.mark.parametrize(("value", "cell"), [
    ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"), ("+1", "'+1"), ("-2+3", "'-2+3"),
    ("@SUM(A1)", "'@SUM(A1)"), ("\tx", "'\tx"), ("plain", "plain"), (-2.5, -2.5), (None, ""),
    (True, "true"), ({"a": 1}, '{"a":1}')])
def test_an_exported_cell_is_never_a_formula(value, cell):
    assert csv_cell(value) == cell


def test_a_histogram_bin_is_a_filter_that_keeps_what_the_bin_counts(served):
    api, ids = served
    hist = api.get(f"/runs/{ids['base']}/histograms").json()
    for index, count in enumerate(hist["cases"]):
        got = api.get(f"/runs/{ids['base']}/cases", params={"score_bin": index, "limit": 1})
        assert got.json()["total"] == count, index
    for name, bins in hist["evaluators"].items():
        busiest = max(range(len(bins)), key=bins.__getitem__)
        got = api.get(f"/runs/{ids['base']}/cases", params={
            "score_bin": busiest, "evaluator": name, "limit": 1})
        assert got.json()["total"] == bins[busiest], name
    assert api.get(f"/runs/{ids['base']}/cases", params={"score_bin": 10}).status_code == 400


def test_a_page_of_cases_says_why_each_failed(served):
    api, ids = served
    items = api.get(f"/runs/{ids['cand']}/cases", params={"limit": 200}).json()["items"]
    for item in items:
        if item["verdict"] == "pass":
            assert item["failing_evaluator"] is None
            continue
        failing = item["failing_evaluator"]
        assert failing in item["scores"], item
        cell = item["scores"][failing]
        errors = [n for n, c in item["scores"].items() if c["state"] == "error"]
        if errors:
            assert failing == min(errors) and item["rationale_preview"]
        else:
            assert cell["value"] == min(c["value"] for c in item["scores"].values()
                                        if c["value"] is not None and c["passed"] is False) \
                or not any(c["passed"] is False for c in item["scores"].values())
        assert item["expected_preview"] == str(2 * int(item["case_id"][-6:]))
    by_latency = api.get(f"/runs/{ids['cand']}/cases", params={
        "sort": "-latency", "limit": 200}).json()["items"]
    latencies = [i["latency_ms"] for i in by_latency if i["latency_ms"] is not None]
    assert latencies == sorted(latencies, reverse=True) and len(latencies) == 120


def test_the_failing_evaluator_rule():
    cell = queries.ScoreCell
    assert queries.failing_evaluator({}) is None
    assert queries.failing_evaluator({
        "b": cell(state="error", error_code="x"), "a": cell(state="value", value=0.1,
                                                             passed=False)}) == "b"
    assert queries.failing_evaluator({
        "a": cell(state="value", value=0.2, passed=True),
        "b": cell(state="value", value=0.6, passed=False),
        "c": cell(state="value", value=0.7, passed=False)}) == "b"
    assert queries.failing_evaluator({
        "a": cell(state="value", value=0.4, passed=None),
        "b": cell(state="value", value=0.3, passed=None)}) == "b"


def test_a_light_read_of_runs_compares_exactly_as_a_whole_read(tmp_path):
    """Comparisons read runs without their transcripts, traces and outputs: the answer is
    the one the whole records give."""
    from assay.analysis.compare import CompareOptions, compare_records, compare_stored

    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    base = write_run(store, 40, seed=1, quality=0.8)
    cand = write_run(store, 40, seed=2, quality=0.7, hostile_at=[4])
    light = compare_stored(store, base, cand)
    whole = compare_records(store.run_record(base), store.run_record(cand),
                            store.case_records(base), store.case_records(cand),
                            CompareOptions())
    assert light.model_dump() == whole.model_dump()
    record = store.case_records(cand, light=True)[4]
    assert record.output is None and record.execution.messages == []
    assert all(s.rationale is None and "judge_request" not in s.details
               for s in record.scores)

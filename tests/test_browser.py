"""The web UI and the static report in a real browser (Debian's Chromium through Playwright):
each page opens, links lead from runs to cases to a comparison, filters work, and agent text
that is markup shows as text and never runs."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from sqlalchemy import text

from assay.store.runs import RunStore
from assay.testing.runs import HOSTILE, write_run
from assay.types.records import RunStatus
from tests.browser_support import launch, playwright_or_skip, screenshot_dir
from tests.server_support import HUGE_OUTPUT, Served, serve, write_huge_case

pytestmark = pytest.mark.browser
expect: Any = None
VIEWPORT = {"width": 1200, "height": 820}
HOSTILE_CASE = "case-000004"


@pytest.fixture(autouse=True)
def _close_http_session() -> None:
    """Replaces the shared async fixture: these tests make no judge calls, and Playwright's
    synchronous API holds the thread's event loop while the browser is open."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    global expect
    sync_playwright = playwright_or_skip()
    from playwright.sync_api import expect as playwright_expect

    expect = playwright_expect
    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, list[str]]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('ui')}/runs.db"
    store = RunStore(url)
    now = time.time()
    ids = [write_run(store, 150, seed=k, quality=q, hostile_at=[4], created_at=now - (6 - k) * 86400,
                     judge_model="openai:gpt-4o" if k == 4 else "openai:gpt-4o-mini",
                     prompt="You are a careful calculator." if k < 4 else
                     "You are a fast calculator.")
           for k, q in enumerate([0.72, 0.76, 0.83, 0.8, 0.86])]
    write_run(store, 20, seed=9, status=RunStatus.INTERRUPTED, created_at=now - 3600)
    store.close()
    with serve(url) as served:
        yield served, ids


class Watch:
    """What a page did that it must not: dialogs (alert), script errors, requests elsewhere."""

    def __init__(self, page: Any, allowed_origin: str | None) -> None:
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("request", lambda r: self.requests.append(r.url)
                if not (allowed_origin and r.url.startswith(allowed_origin)) else None)

    def clean(self) -> None:
        assert self.dialogs == [], self.dialogs
        assert self.errors == [], self.errors
        assert self.requests == [], self.requests


def _rendered(page: Any, fragment: str, present: bool = True) -> None:
    """Wait until the page shows the route whose hash holds (or lacks) ``fragment``."""
    pattern = re.compile(re.escape(fragment) if present else
                         rf"^(?!.*{re.escape(fragment)})")
    expect(page.locator("#app")).to_have_attribute("data-rendered", pattern)


def _page(browser: Any, **options: Any) -> Any:
    context = browser.new_context(viewport=VIEWPORT, **options)
    return context.new_page()


@contextmanager
def _one_run(browser: Any, tmp_path: Path, write: Any) -> Iterator[tuple[str, Any, str]]:
    """A store holding the run ``write(store)`` makes, served, and a page watched for what
    it must not do: (the server's URL, the page, the run's id)."""
    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    run_id = write(store)
    store.close()
    with serve(url) as served:
        page = _page(browser)
        watch = Watch(page, served.url)
        yield served.url, page, run_id
        watch.clean()


def _shot(page: Any, tmp_path: Path, name: str) -> None:
    page.wait_for_timeout(150)
    page.screenshot(path=str(screenshot_dir(tmp_path) / f"{name}.png"))


def _assert_hostile_text_is_inert(page: Any) -> None:
    output = page.locator("#agent-output pre")
    assert output.inner_text() == HOSTILE
    assert page.locator("#app script").count() == 0
    assert page.locator("#app img").count() == 0
    assert page.evaluate("document.querySelectorAll('[onerror]').length") == 0
    rationale = page.locator(".score-card pre.rationale").first
    assert rationale.inner_text() == HOSTILE


def test_runs_to_run_to_case_to_compare(browser, demo, tmp_path):
    served, ids = demo
    page = _page(browser)
    watch = Watch(page, served.url)
    page.goto(served.url + "/#/runs")
    page.wait_for_selector("#runs tbody tr")
    assert page.locator("#runs tbody tr").count() == 6
    page.wait_for_selector("#runs-chart canvas")
    assert page.evaluate("document.querySelector('#runs-chart').uplot.series.length") == 2
    _shot(page, tmp_path, "runs")

    page.click(f"#runs a:text-is('{ids[4]}')")
    page.wait_for_selector("#cases tbody tr")
    assert page.locator("h1").inner_text() == ids[4]
    assert page.locator("#evaluators tbody tr").count() == 3
    first = page.locator("#cases tbody tr").first.locator(".badge").first.inner_text()
    assert first == "error"  # problems first
    errors = page.locator("#cases tbody td.num .b-error").all_inner_texts()
    assert errors and all(re.fullmatch(r"error [a-z_]+", e) for e in errors), errors
    _shot(page, tmp_path, "run")

    page.fill("#case-search", HOSTILE_CASE)
    page.press("#case-search", "Enter")
    _rendered(page, f"q={HOSTILE_CASE}")
    expect(page.locator("#cases tbody tr")).to_have_count(1)
    page.click(f"#cases a:text-is('{HOSTILE_CASE}')")
    page.wait_for_selector("#case-title")
    assert page.locator("#case-title").inner_text() == HOSTILE_CASE
    _assert_hostile_text_is_inert(page)
    assert page.locator("#tool-calls li").count() == 1
    assert page.locator("#chunks li").count() == 1
    assert page.locator("#turns .turn").count() == 4
    page.click(".score-card summary:text('Judge request and answer')")
    _shot(page, tmp_path, "case")

    page.goto(served.url + "/#/runs")
    page.wait_for_selector("#runs tbody tr")
    page.check(f"input[aria-label='select {ids[3]}']")
    assert page.is_disabled("#compare-selected")
    page.check(f"input[aria-label='select {ids[4]}']")
    page.click("#compare-selected")
    page.wait_for_selector("#not-comparable")  # another judge: refused, as the CLI's exit 2
    assert "judge model changed" in page.locator("#not-comparable").inner_text()
    watch.errors.clear()  # the browser logs the refused request itself
    _shot(page, tmp_path, "compare-refused")
    page.check("input[name='allow_different_judge']")
    page.click("#compare-go")
    page.wait_for_selector("#verdict")
    assert ids[3] in page.locator("#verdict").inner_text()
    assert page.locator("#case-deltas tbody tr[data-case]").count() == 100  # a page
    assert "1\u2013100 of 150" in page.locator(".pager").last.inner_text()
    diff = page.locator("#config-diff").inner_text()
    assert "judge.model" in diff and "openai:gpt-4o" in diff and "fast calculator" in diff
    significance = page.locator("#significance tbody tr")
    assert significance.count() == 3  # pass flags, scores, latencies
    cases_row = page.locator("#significance tbody tr[data-test='cases']")
    assert "mcnemar" in cases_row.inner_text() and "150" in cases_row.inner_text()
    assert re.search(r"\d\.\d{4}|< 0\.0001", cases_row.locator("td").nth(5).inner_text())
    assert "differences allowed" in page.locator("#verdict").inner_text()
    _shot(page, tmp_path, "compare")
    swapped = page.url.replace(ids[3], "<b>").replace(ids[4], ids[3]).replace("<b>", ids[4])
    page.click("a.chip[data-status='regression']")
    _rendered(page, "status=regression")
    statuses = page.locator("#case-deltas tbody tr[data-case] td:first-child").all_inner_texts()
    assert statuses and set(statuses) == {"regression"}
    page.locator("#case-deltas tbody a.side-link:text-is('candidate')").first.click()
    page.wait_for_selector("#case-title")
    assert page.url.startswith(served.url + "/#/case/" + ids[4])
    page.goto(swapped)  # the other way round, it regressed: its reasons say what the test found
    page.wait_for_selector("#verdict .reason-significance")
    tested = page.locator("#verdict .reason-significance").all_inner_texts()
    assert tested and all(re.fullmatch(  # the server's one string, as the terminal's
        r" · p=(\d\.\d{4}|< 0\.0001), (not )?significant at 0\.05(: it may be noise)?", t)
        for t in tested), page.locator("#verdict").inner_text()
    watch.clean()


def test_run_page_filters(browser, demo):
    served, ids = demo
    page = _page(browser)
    watch = Watch(page, served.url)
    page.goto(f"{served.url}/#/run/{ids[0]}")
    page.wait_for_selector("#cases tbody tr")
    page.click("a.chip[data-verdict='fail']")
    _rendered(page, "verdict=fail")
    verdicts = page.locator("#cases tbody tr td:nth-child(2)").all_inner_texts()
    assert verdicts and set(verdicts) == {"fail"}
    page.click("a.chip[data-verdict='fail']")  # off again
    _rendered(page, "verdict=fail", present=False)
    page.select_option("#evaluator-filter", "tool_order")
    _rendered(page, "evaluator=tool_order")
    page.select_option("#state-filter", "skipped")
    _rendered(page, "evaluator_state=skipped")
    cells = page.locator("#cases tbody tr td:nth-child(6)").all_inner_texts()
    assert cells and set(cells) == {"n/a"}
    page.select_option("#sort", "-score")
    _rendered(page, "sort=-score")
    page.goto(f"{served.url}/#/run/{ids[0]}?offset=50")
    _rendered(page, "offset=50")
    assert "51\u2013100 of 150" in page.locator(".pager").last.inner_text()
    page.click("a[rel='next']")
    _rendered(page, "offset=100")
    watch.clean()


def test_marking_a_baseline_offers_the_comparison_with_it(browser, demo):
    served, ids = demo
    page = _page(browser)
    watch = Watch(page, served.url)
    page.goto(f"{served.url}/#/run/{ids[2]}")
    page.wait_for_selector("#baseline-toggle")
    page.click("#baseline-toggle")
    page.wait_for_selector("#baseline-toggle:text('Unmark baseline')")
    page.goto(f"{served.url}/#/run/{ids[4]}")
    page.wait_for_selector("#compare-baseline")
    page.click("#compare-baseline")
    page.wait_for_selector("#verdict, #not-comparable")
    assert ids[2] in page.url
    watch.errors.clear()  # runs of different judges: the refused request is logged
    page.goto(f"{served.url}/#/run/{ids[2]}")
    page.click("#baseline-toggle")
    page.wait_for_selector("#baseline-toggle:text('Mark as baseline')")
    watch.clean()


def test_a_missing_run_shows_the_servers_message_as_text(browser, demo):
    served, _ = demo
    page = _page(browser)
    Watch(page, served.url)
    page.goto(served.url + "/#/run/%3Cimg%20src%3Dx%20onerror%3Dalert(3)%3E")
    page.wait_for_selector("[role=alert]")
    assert "Run not found" in page.locator("[role=alert]").inner_text()
    assert page.locator("img[src='x']").count() == 0


def test_a_server_with_a_token_asks_for_it_once(browser, tmp_path):
    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    write_run(store, 3)
    store.close()
    token = "ui-token-" + "k" * 24
    with serve(url, token=token) as served:
        page = _page(browser)
        watch = Watch(page, served.url)
        page.on("console", lambda m: None)
        page.goto(served.url + "/#/runs")
        page.wait_for_selector("#token")
        watch.errors.clear()  # the browser logs the refused request itself
        page.fill("#token", token)
        page.press("#token", "Enter")
        page.wait_for_selector("#runs tbody tr")
        page.reload()
        page.wait_for_selector("#runs tbody tr")
        assert watch.dialogs == []


def test_the_static_report_works_from_disk_offline(browser, demo, tmp_path):
    from assay.report.html import write_html

    served, ids = demo
    store = RunStore(served.settings.store_url)
    report = tmp_path / "report.html"
    write_html(store, store.run_record(ids[4]), report)
    store.close()
    page = _page(browser, offline=True)
    watch = Watch(page, report.as_uri())
    page.goto(report.as_uri())
    page.wait_for_selector("#cases tbody tr")
    assert page.locator("h1").inner_text() == ids[4]
    assert page.locator("#cases tbody tr").count() == 50
    assert page.locator(".hist-grid svg").count() == 4
    # the vendored libraries run from the file too, inlined and allowed by their hashes
    assert page.evaluate("[typeof Diff.diffWordsWithSpace, typeof uPlot]") == ["function"] * 2
    _shot(page, tmp_path, "report")
    page.fill("#case-search", HOSTILE_CASE)
    page.press("#case-search", "Enter")
    _rendered(page, f"q={HOSTILE_CASE}")
    expect(page.locator("#cases tbody tr")).to_have_count(1)
    page.click(f"#cases a:text-is('{HOSTILE_CASE}')")
    page.wait_for_selector("#case-title")
    _assert_hostile_text_is_inert(page)
    page.go_back()
    page.wait_for_selector("#cases tbody tr")
    watch.clean()


@pytest.mark.parametrize(("query", "found"), [
    ("STRASSE", {"Stra\u00dfe-3", "STRASSE-4"}), ("stra\u00dfe", {"Stra\u00dfe-3", "STRASSE-4"}),
    ("plain", {"plain-6", "\uff30\uff2c\uff21\uff29\uff2e-7"}), ("FILE", {"\ufb01le-8"}),
    ("\u03c3\u03bf\u03c6\u03af\u03b1", {"\u03a3\u039f\u03a6\u038a\u0391-5"}),
])
def test_the_static_reports_search_folds_text_as_the_servers(browser, tmp_path, query, found):
    """The static report searches its cases in the browser as the server's search does
    (NFKC and Unicode's case folding): ``STRASSE`` finds ``Stra\u00dfe``."""
    from assay.report.html import write_html
    from tests.test_server_api import _write_lettered

    url = f"sqlite:///{tmp_path}/runs.db"
    _write_lettered(url)
    store = RunStore(url)
    report = tmp_path / "report.html"
    write_html(store, store.run_record("run-0"), report)
    store.close()
    page = _page(browser, offline=True)
    page.goto(report.as_uri())
    page.wait_for_selector("#cases tbody tr")
    page.fill("#case-search", query)
    page.press("#case-search", "Enter")
    expect(page.locator("#cases tbody tr")).to_have_count(len(found))
    assert set(page.locator("#cases tbody tr a").all_inner_texts()) == found


def _conversation_run(url: str, cause: Any = None,
                      conversation: Any = None) -> tuple[str, str]:
    """A stored run of one conversation case scored by the multi-metric (Connexity) judge,
    whose answer cites turns 1 and 3: the score the judge's own code builds from a validated
    answer, as a run stores it (with a cause analysis and a conversation record, when
    given)."""
    from assay.judges.llm.connexity import ConnexityJudge, answer_model
    from assay.types.case import Case
    from assay.types.execution import Execution
    from assay.types.messages import Message
    from assay.types.records import CaseRecord, Verdict

    judge = ConnexityJudge(name="conversation", metrics=["tool_routing",
                                                         "response_delivery"])
    selected = judge.selected()
    answer = answer_model(tuple((m.name, False) for m in selected), 0).model_validate({
        "tool_routing": {"score": 1, "justification": "booked without checking the date",
                         "failure_code": "wrong_tool", "turns": [1]},
        "response_delivery": {"score": 2, "justification": "confirmed a booking it did "
                              "not make", "failure_code": "false_claim", "turns": [3]}})
    turns = [Message(role="user", content="Book a table for two tomorrow."),
             Message.model_validate({"role": "assistant", "content": "Booked for today at 7pm.",
                                     "timestamp": "2026-11-26T10:00:01.250000Z",
                                     "latency_ms": 1250.0, "token_count": 321}),
             Message(role="user", content="I said tomorrow."),
             Message(role="assistant", content="Done, you are booked.")]
    case = Case(id="conv-1", input=[turns[0].model_dump(mode="json")])
    score = judge.judgement(case, selected, answer, len(turns))
    store = RunStore(url)
    run_id = store.create_run("chat", {"suite_name": "chat"}, run_id="run-conversation")
    record = CaseRecord(run_id=run_id, case_id=case.id, case=case,
                        execution=Execution(input=case.input, output=turns[-1].content,
                                            messages=turns, conversation=conversation),
                        scores=[score], score=score.value, verdict=Verdict.FAIL,
                        cause_analysis=cause)
    store.record_execution(run_id, case.id, 0, record.execution)
    store.record_score(run_id, case.id, 0, score)
    store.record_case(record)
    store.flush()
    store.set_status(run_id, "completed", {"cases": 1})
    store.close()
    return run_id, case.id


def test_the_turns_a_conversation_judge_blamed_are_highlighted(browser, tmp_path):
    url = f"sqlite:///{tmp_path}/runs.db"
    run_id, case_id = _conversation_run(url)
    with serve(url) as served:
        page = _page(browser)
        watch = Watch(page, served.url)
        page.goto(f"{served.url}/#/case/{run_id}?case_id={case_id}")
        page.wait_for_selector("#turns .turn")
        turns = page.locator("#turns .turn")
        assert turns.count() == 4
        blamed = [i for i in range(4) if "blamed" in (turns.nth(i).get_attribute("class")
                                                       or "").split()]
        assert blamed == [1, 3]
        assert "tool_routing" in turns.nth(1).inner_text()
        assert "response_delivery" in turns.nth(3).inner_text()
        assert "response_delivery" not in turns.nth(1).inner_text()
        watch.clean()


def test_a_failed_cases_cause_analysis_and_turn_records_are_shown(browser, tmp_path):
    from assay.types.execution import ConversationInfo
    from assay.types.records import CauseAnalysis
    from assay.types.usage import Usage

    cause = CauseAnalysis(turn=3, turn_role="assistant", turn_text="Done, you are booked.",
                          behaviour="It confirmed a booking it never made.",
                          cause="response_delivery scored 2: a false claim.",
                          suggested_fix="Only confirm after the booking tool succeeds.",
                          confidence="high", model="custom:judge",
                          usage=Usage(calls=1, prompt_tokens=900, completion_tokens=80,
                                      cost=0.0123))
    stopped = ConversationInfo(stop_reason="timeout", agent_turns=2, user_turns=2, cut_turn=3,
                               detail="the agent's turn 3 was still running at the "
                               "conversation's time limit (300 ms) and was stopped")
    url = f"sqlite:///{tmp_path}/runs.db"
    run_id, case_id = _conversation_run(url, cause, stopped)
    with serve(url) as served:
        page = _page(browser)
        watch = Watch(page, served.url)
        page.goto(f"{served.url}/#/case/{run_id}?case_id={case_id}")
        page.wait_for_selector("#cause-analysis")
        panel = page.locator("#cause-analysis").inner_text()
        for text in ("Why it failed", "turn 3 · assistant", "Done, you are booked.",
                     "It confirmed a booking it never made.",
                     "Only confirm after the booking tool succeeds.", "high",
                     "it changes no verdict", "cost $0.0123"):
            assert text in panel, text
        turns = page.locator("#turns .turn")
        assert "blamed by response_delivery, cause analysis" in turns.nth(3).inner_text()
        assert "2026-11-26 10:00:01 UTC · 1250 ms · 321 tokens" in turns.nth(1).inner_text()
        assert "stopped: timeout — the agent's turn 3 was still running" in \
            page.locator("#stop-reason").inner_text()
        watch.clean()


def test_a_huge_case_shows_in_part_and_reads_whole_on_demand(browser, tmp_path):
    url = f"sqlite:///{tmp_path}/runs.db"
    run = write_huge_case(url)
    with serve(url) as served:
        page = _page(browser)
        watch = Watch(page, served.url)
        page.goto(f"{served.url}/#/case/{run}?case_id=huge")
        page.wait_for_selector("#cuts")
        output = page.locator("#agent-output pre").inner_text()
        assert output.endswith("[cut: 3,000,000 characters in all]") and len(output) < 60_000
        item = page.locator('#cuts li[data-pointer="/record/execution/output"]')
        item.locator("button").click()
        expect(item.locator("pre")).to_have_count(1, timeout=60_000)  # a 60 MB case is read
        assert item.locator("pre").evaluate("e => e.textContent.length") == len(HUGE_OUTPUT)
        watch.clean()


def test_the_compare_page_says_what_every_other_surface_says(browser, tmp_path):
    """The one-answer pairs (tests/test_one_answer.py) on the compare page: its headline and
    exit status are the CLI's, and a pair the CLI refuses is refused on the page."""
    import json

    from typer.testing import CliRunner

    from assay.cli import app as cli_app
    from tests.test_one_answer import CASES, POLICIES, _store_run

    url = f"sqlite:///{tmp_path / 'pairs.db'}"
    store = RunStore(url)
    half = set(CASES[:6])
    for policy in POLICIES:
        _store_run(store, f"{policy}-base", policy, half)
        _store_run(store, f"{policy}-worse", policy, set(CASES[:3]))
        _store_run(store, f"{policy}-better", policy, half | set(CASES[6:9]))
        _store_run(store, f"{policy}-incomparable", policy, half, evaluator="other_judge")
    store.close()
    with serve(url) as served:
        page = _page(browser)
        watch = Watch(page, served.url)
        for policy in POLICIES:
            for pair in ("worse", "better", "incomparable"):
                cand = f"{policy}-{pair}"
                done = CliRunner().invoke(cli_app, ["compare", f"{policy}-base", cand,
                                                    "--store", url, "--json"])
                page.goto("about:blank")
                page.goto(f"{served.url}/#/compare?baseline={policy}-base&candidate={cand}")
                page.wait_for_selector("#verdict, #not-comparable")
                if done.exit_code == 2:
                    assert page.locator("#not-comparable").count() == 1, (policy, pair)
                    watch.errors.clear()  # the browser logs the refused request itself
                    continue
                printed = json.loads(done.output)
                assert page.locator("#headline").inner_text() == printed["headline"]
                regressed = "regression detected" in page.locator("#verdict").inner_text()
                assert regressed == (done.exit_code == 1), (policy, pair)
        watch.clean()


def _run_page_figures(page: Any) -> dict[str, str]:
    """What a run page shows of its figures: its cards, its evaluator's mean, its first
    (worst) case's score."""
    cards = {page.locator(".card .label").nth(i).text_content():
             (page.locator(".card .value").nth(i).text_content(),
              page.locator(".card").nth(i).locator(".sub").text_content())
             for i in range(page.locator(".card").count())}
    return {"pass_rate": cards["Pass rate"][0], "mean_score": cards["Mean score"][0],
            "latency_p50": cards["Turn latency"][0],
            "latency_p95": cards["Turn latency"][1].split("p95 ")[-1].strip(),
            "judge_cost": cards["Judge"][1].split("· ")[-1].strip(),
            "evaluator": page.locator("#evaluators tbody tr td").nth(1).inner_text().strip(),
            "worst_case": page.locator("#cases tbody tr").first.locator("td").nth(2)
            .inner_text()}


def test_the_pages_show_a_runs_figures_as_the_api_sends_them(browser, tmp_path):
    """A run's figures in the web UI and the static report are the API's display fields
    (which tests/test_one_number.py finds on every other surface): Connexity's scores on its
    labelled 0-100 scale, and nothing formatted by the page itself."""
    from assay.report.html import write_html
    from assay.testing.runs import write_scored_run
    from tests.test_one_number import FAILED_CASE, expected

    url = f"sqlite:///{tmp_path / 'figures.db'}"
    store = RunStore(url)
    run_id = write_scored_run(store, "connexity")
    report = tmp_path / "report.html"
    write_html(store, store.run_record(run_id), report)
    store.close()
    want = expected("connexity")
    with serve(url) as served, served.client() as client:
        sent = client.get(f"/runs/{run_id}").json()["display"]
        worst = client.get(f"/runs/{run_id}/cases").json()["items"][0]
        case = client.get(f"/runs/{run_id}/case", params={"case_id": worst["case_id"]}).json()
        assert {key: sent[key] for key in want} == want
        shown = {key: sent[key] for key in FIGURES_SHOWN} | {
            "evaluator": sent["evaluators"]["judge"], "worst_case": FAILED_CASE["connexity"]}
        page = _page(browser)
        watch = Watch(page, served.url)
        page.goto(served.url + "/#/runs")
        page.wait_for_selector("#runs tbody tr")
        cells = page.locator("#runs tbody tr").first.locator("td").all_inner_texts()
        assert (cells[7].strip(), cells[8]) == (want["pass_rate"], want["mean_score"])
        page.goto(f"{served.url}/#/run/{run_id}")
        page.wait_for_selector("#cases tbody tr")
        assert _run_page_figures(page) == shown
        gates = page.locator("#gate-failures").inner_text()
        assert f"{want['cases_dimension']} of 20" in gates and want["cases_threshold"] in gates
        page.click(f"#cases a:text-is('{worst['case_id']}')")
        page.wait_for_selector("#case-title")
        meta = page.locator("#app .meta").inner_text()
        assert f"score {case['display']['score']}" in meta
        assert f"latency {case['display']['latency']}" in meta
        assert page.locator(".score-card .big").inner_text() == "0.600"
        watch.clean()
    page = _page(browser, offline=True)
    watch = Watch(page, report.as_uri())
    page.goto(report.as_uri())
    page.wait_for_selector("#cases tbody tr")
    assert _run_page_figures(page) == shown
    watch.clean()


FIGURES_SHOWN = ("pass_rate", "mean_score", "latency_p50", "latency_p95", "judge_cost")
"""The figures a run page's cards show."""


# -- the viewer's questions: why a case failed, what changed, who is looking -----------------


def test_the_run_page_says_why_each_case_failed_and_sorts_pages_and_filters(browser, demo,
                                                                            tmp_path):
    served, ids = demo
    page = _page(browser)
    watch = Watch(page, served.url)
    page.goto(f"{served.url}/#/run/{ids[4]}")
    page.wait_for_selector("#cases tbody tr[data-case]")
    headers = page.locator("#cases thead th").all_inner_texts()
    for column in ("INPUT", "EXPECTED", "OUTPUT", "FAILING EVALUATOR", "RATIONALE"):
        assert any(column in h.upper() for h in headers), column
    first = page.locator("#cases tbody tr[data-case]").first
    assert first.locator("td.failing").inner_text() != ""  # a problem, and its evaluator
    _shot(page, tmp_path, "run-why")
    page.click("#cases thead th a:text('Latency')")
    _rendered(page, "sort=latency")
    page.click("#cases thead th a:text('Latency')")
    _rendered(page, "sort=-latency")
    latencies = page.locator("#cases tbody tr[data-case] td:last-child").all_inner_texts()
    values = [float(t.split()[0]) * (1000 if t.endswith(" s") else 1) for t in latencies]
    assert values == sorted(values, reverse=True)
    page.select_option("select.page-size", "25")
    _rendered(page, "limit=25")
    expect(page.locator("#cases tbody tr[data-case]")).to_have_count(25)
    bar = page.locator(".hist-grid figure").first.locator("g.bin[role=link]").last
    bar.click()
    _rendered(page, "score_bin=")
    assert page.locator("#bin-filter").count() == 1
    scores = page.locator("#cases tbody tr[data-case] td:nth-child(3)").all_inner_texts()
    assert scores and all(float(s) >= 0.8 for s in scores)  # the high bins
    page.keyboard.press("j")
    page.keyboard.press("j")
    current = page.locator("#cases tbody tr.current")
    expect(current).to_have_count(1)
    case_id = current.get_attribute("data-case")
    page.keyboard.press("Enter")
    page.wait_for_selector("#case-title")
    assert page.locator("#case-title").inner_text() == case_id
    watch.clean()


def test_a_run_is_named_and_tagged_on_its_page_and_found_by_its_tag(browser, tmp_path):
    with _one_run(browser, tmp_path, lambda store: write_run(store, 5)) as (served, page,
                                                                           run_id):
        page.goto(f"{served}/#/run/{run_id}")
        page.click("details.edit-identity summary")
        page.fill("#edit-name", "<b>first</b> try")
        page.fill("#edit-tags", "prod, nightly")
        page.fill("#edit-notes", "after the prompt change")
        page.click("#edit-save")
        expect(page.locator("#run-title")).to_have_text("<b>first</b> try")
        assert page.locator("#run-tags a.tag").all_inner_texts() == ["nightly", "prod"]
        assert page.locator("#run-notes").inner_text() == "after the prompt change"
        page.click("#run-tags a.tag:text-is('prod')")
        _rendered(page, "tag=prod")
        assert page.locator("#runs tbody tr").count() == 1
        assert page.locator("#runs .run-name").inner_text() == "<b>first</b> try"


def test_an_empty_store_says_how_to_make_a_first_run(browser, tmp_path):
    url = f"sqlite:///{tmp_path}/runs.db"
    RunStore(url).close()
    with serve(url) as served:
        page = _page(browser)
        watch = Watch(page, served.url)
        page.goto(served.url + "/#/runs")
        page.wait_for_selector("#onboarding")
        assert "assay run" in page.locator("#onboarding").inner_text()
        _shot(page, tmp_path, "empty")
        page.goto(served.url + "/#/compare")
        page.wait_for_selector("#compare-empty")
        watch.clean()


def test_the_compare_page_shows_a_case_side_by_side_and_exports(browser, demo, tmp_path):
    served, ids = demo
    page = _page(browser, accept_downloads=True)
    watch = Watch(page, served.url)
    page.goto(f"{served.url}/#/compare?baseline={ids[2]}&candidate={ids[3]}&status=regression")
    page.wait_for_selector("#case-deltas tbody tr[data-case]")
    row = page.locator("#case-deltas tbody tr[data-case]").first
    case_id = row.get_attribute("data-case")
    row.locator("button:text('diff')").click()
    sides = page.locator("#case-deltas tr.sides-row:visible")
    expect(sides.locator(".side-by-side .side")).to_have_count(2)
    assert sides.locator(".side").first.locator("h3 a").get_attribute("href").startswith(
        f"#/case/{ids[2]}")
    assert sides.locator(".side").last.locator("h3 a").get_attribute("href").startswith(
        f"#/case/{ids[3]}")
    _shot(page, tmp_path, "compare-case")
    with page.expect_download() as download:
        page.click(".export button[data-export='csv']")
    text = Path(download.value.path()).read_text()
    assert text.splitlines()[0].startswith("case_id,status")
    assert case_id in text and all(
        line.split(",")[1] == "regression" for line in text.splitlines()[1:])
    page.goto(f"{served.url}/#/compare?candidate={ids[3]}")
    page.wait_for_selector("#compare-empty")
    assert page.locator("#run-choices option").count() >= 6  # the picker knows the runs
    page.fill("input[name='baseline']", ids[1])
    page.click("#compare-go")
    _rendered(page, f"baseline={ids[1]}")
    page.wait_for_selector("#verdict, #not-comparable")
    watch.clean()


def test_dark_mode_follows_the_system(browser, demo, tmp_path):
    served, ids = demo
    page = _page(browser, color_scheme="dark")
    watch = Watch(page, served.url)
    page.goto(f"{served.url}/#/run/{ids[4]}")
    page.wait_for_selector("#cases tbody tr")
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(17, 20, 24)"
    panel = page.evaluate("getComputedStyle(document.querySelector('#evaluators')"
                          ".closest('.panel')).backgroundColor")
    assert panel == "rgb(26, 31, 38)"
    _shot(page, tmp_path, "run-dark")
    watch.clean()


def test_a_narrow_window_scrolls_tables_instead_of_clipping_them(browser, demo, tmp_path):
    served, ids = demo
    page = browser.new_context(viewport={"width": 800, "height": 900}).new_page()
    page.goto(f"{served.url}/#/run/{ids[4]}")
    page.wait_for_selector("#cases tbody tr")
    wrap = page.locator("#cases").locator("xpath=..")
    assert wrap.evaluate("e => getComputedStyle(e).overflowX") == "auto"
    assert wrap.evaluate("e => e.scrollWidth > e.clientWidth")  # scrolls: nothing is cut
    assert page.evaluate("document.documentElement.scrollWidth <= 800")
    _shot(page, tmp_path, "run-narrow")


COMPARE_CASES = 10_000
FIRST_PAGE_BUDGET_S = 90.0
NEXT_PAGE_BUDGET_S = 5.0
"""The compare page of two 10,000-case runs: its first page (the comparison computed) and a
page after it (the comparison kept) within these, on the 2-core CI machine (see
benchmarks/README.md for what they measured)."""


def test_a_10000_case_comparison_opens_within_its_budget_a_page_at_a_time(browser, tmp_path):
    url = f"sqlite:///{tmp_path}/big.db"
    store = RunStore(url)
    base = write_run(store, COMPARE_CASES, seed=1, quality=0.8)
    cand = write_run(store, COMPARE_CASES, seed=2, quality=0.78)
    store.close()
    with serve(url) as served:
        page = _page(browser)
        watch = Watch(page, served.url)
        started = time.monotonic()
        page.goto(f"{served.url}/#/compare?baseline={base}&candidate={cand}")
        page.wait_for_selector("#case-deltas tbody tr[data-case]",
                               timeout=FIRST_PAGE_BUDGET_S * 1000)
        first = time.monotonic() - started
        assert page.locator("#case-deltas tbody tr[data-case]").count() == 100
        assert f"of {COMPARE_CASES:,}" in page.locator(".pager").last.inner_text()
        height = page.evaluate("document.documentElement.scrollHeight")
        assert height < 12_000  # a page of rows, not 10,000 of them
        started = time.monotonic()
        page.click("a[rel='next']")
        _rendered(page, "offset=100")
        page.wait_for_selector("#case-deltas tbody tr[data-case]")
        following = time.monotonic() - started
        print(f"10,000-case compare: first page {first:.1f} s, next page {following:.2f} s")
        assert first < FIRST_PAGE_BUDGET_S and following < NEXT_PAGE_BUDGET_S
        watch.clean()


# -- families, traces and people ---------------------------------------------------------------


def test_a_connexity_run_shows_its_metrics_outcomes_and_dimensions(browser, tmp_path):
    from assay.testing.runs import write_connexity_run

    with _one_run(browser, tmp_path, write_connexity_run) as (served, page, run_id):
        page.goto(f"{served}/#/run/{run_id}")
        page.wait_for_selector("#run-family")
        dimensions = page.locator("#dimensions tbody tr").all_inner_texts()
        assert any("57.5 /100" in d and "80.0 /100" in d and "not met" in d
                   for d in dimensions)
        assert any("160 ms" in d for d in dimensions)  # the terminal's agent latency
        assert page.locator("#metric-means tbody tr").count() == 8  # all on one 0-5 scale
        assert all("/5" in m for m in page.locator("#metric-means tbody tr").all_inner_texts())
        assert page.locator("#cases tbody tr td:nth-child(3)").inner_text() == "57.5 /100"
        _shot(page, tmp_path, "run-connexity")
        page.goto(f"{served}/#/case/{run_id}?case_id=conv-1")
        page.wait_for_selector(".family.connexity")
        assert page.locator(".family.connexity table.metrics tbody tr").count() == 8
        outcomes = page.locator("#outcomes li")
        assert outcomes.count() == 2
        assert "not met" in outcomes.nth(1).inner_text()
        assert "The booking is for tomorrow" in outcomes.nth(1).inner_text()
        _shot(page, tmp_path, "case-connexity")


def test_a_databricks_run_shows_the_seeds_names_and_each_rows_assessment(browser, tmp_path,
                                                                          mock_model):
    import assay

    def verdict(result: str) -> str:
        return "<<mock:" + json.dumps({"rationale": f"said {result}", "result": result}) + ">>"

    rows = [{"request_id": "r1", "request": "What is MLflow?",
             "response": "A platform for the ML lifecycle. " + verdict("yes"),
             "expected_facts": ["MLflow is open source", "It tracks experiments"],
             "guidelines": {"tone": ["Be concise"]},
             "retrieved_context": [{"content": "MLflow is an open source platform.",
                                    "doc_uri": "docs/mlflow.md"}]},
            {"request_id": "r2", "request": "What is Spark?",
             "response": "A database. " + verdict("no"),
             "expected_facts": ["Spark is an engine"]}]
    url = f"sqlite:///{tmp_path}/runs.db"
    result = assay.evaluate(rows, judges=["correctness", "groundedness"], naming="databricks",
                            judge_model=mock_model, cache="off", store=url)
    with serve(url) as served:
        page = _page(browser)
        watch = Watch(page, served.url)
        page.goto(f"{served.url}/#/run/{result.run_id}")
        page.wait_for_selector("#named-aggregates")
        keys = page.locator("#named-aggregates tbody td.id").all_inner_texts()
        assert any(k.startswith("response/overall_assessment") for k in keys)
        assert "Databricks view" in page.locator("#run-family h2").inner_text()
        page.goto(f"{served.url}/#/case/{result.run_id}?case_id=r2")
        page.wait_for_selector("#named-row")
        assert "no" in page.locator("#named-row p .badge").inner_text()
        named = page.locator("#named-row td.id").all_inner_texts()
        assert "response/llm_judged/correctness/rating" in named
        assert page.locator("#expected-facts li").all_inner_texts() == ["Spark is an engine"]
        page.goto(f"{served.url}/#/case/{result.run_id}?case_id=r1")
        _rendered(page, "case_id=r1")
        assert "Guidelines: tone" in page.locator("#ground-truth").inner_text()
        _shot(page, tmp_path, "case-databricks")
        watch.clean()


def test_a_trace_shows_its_span_tree_and_a_wrong_tool_argument(browser, tmp_path):
    from assay.testing.runs import write_traced_run

    with _one_run(browser, tmp_path, write_traced_run) as (served, page, run_id):
        page.goto(f"{served}/#/case/{run_id}?case_id=wrong-order")
        page.wait_for_selector("#spans tbody tr.span")
        kinds = page.locator("#spans tbody tr.span").evaluate_all(
            "rows => rows.map(r => r.dataset.kind)")
        assert kinds == ["AGENT", "LLM", "TOOL", "LLM"]
        llm = page.locator("#spans tbody tr.span").nth(1).inner_text()
        assert "120 in · 30 out" in llm and "$0.0001" in llm and "400 ms" in llm
        widths = page.locator("#spans .bar-span").evaluate_all(
            "bars => bars.map(b => parseFloat(b.style.width))")
        assert widths[0] == 100.0 and widths[2] < widths[1]  # the waterfall's proportions
        missed = page.locator("#tool-matches tr.unmatched")
        assert missed.count() == 1
        assert missed.locator("pre.expected").inner_text() == '{"order_id": "A1"}'
        assert missed.locator("pre.actual").inner_text() == '{"order_id": "B2"}'
        page.locator("#spans tbody tr.span").nth(2).click()
        assert '"status": "shipped"' in page.locator("#spans tr.span-io:visible").inner_text()
        _shot(page, tmp_path, "case-trace")
        # a case judged from a trace says which, and links to its spans on the page
        origin = page.locator("#trace-origin")
        assert "trace-wrong-order" in origin.inner_text() and "otlp-file" in origin.inner_text()
        assert "no retriever span" in origin.inner_text()
        page.evaluate("window.scrollTo(0, 0)")
        page.set_viewport_size({"width": 1240, "height": 500})
        origin.get_by_text("its spans").click()
        page.wait_for_function("Math.abs(document.getElementById('trace')"
                               ".getBoundingClientRect().top) < 5")
        assert "#/case/" in page.url  # the link scrolls; the page stays where it was


def test_labels_given_on_case_pages_calibrate_the_judge(browser, tmp_path, mock_model):
    import assay
    from tests.assay_process import run_assay

    url = f"sqlite:///{tmp_path}/runs.db"
    judge = {"type": "llm_judge", "name": "graded", "prompt": "{{candidate_answer}}"}
    run = assay.evaluate([{"id": f"c{i}", "input": f"q{i}", "output": f"answer {i}"}
                          for i in range(4)], evaluators=[judge], judge_model=mock_model,
                         store=url)
    with serve(url) as served:
        page = _page(browser)
        watch = Watch(page, served.url)
        for i in range(4):
            page.goto(f"{served.url}/#/case/{run.run_id}?case_id=c{i}")
            page.wait_for_selector(".label-box")
            box = page.locator(".score-card[data-evaluator='graded'] .label-box")
            # the page routes by its hash: until case c{i} is drawn, the box found may be the
            # last case's, which already holds its one label
            expect(box.locator("ul.labels li")).to_have_count(0)
            if i == 0:
                box.locator(".label-agree").click()
                expect(box.locator("[role=status]")).to_contain_text("name")
                box.locator(".label-author").fill("alice")
            box.locator(".label-comment").fill(f"checked <b>{i}</b>")
            box.locator(".label-agree" if i < 3 else ".label-disagree").click()
            expect(box.locator("ul.labels li")).to_have_count(1)
            expect(box.locator("ul.labels li")).to_contain_text(f"checked <b>{i}</b>")
            assert "alice" in box.locator("ul.labels li").inner_text()
            if i == 3:  # the correct verdict, in the words every surface uses
                assert "should be pass" in box.locator("ul.labels li").inner_text()
        page.goto(f"{served.url}/#/run/{run.run_id}")
        page.wait_for_selector("#agreement")
        row = page.locator("#agreement tr[data-evaluator='graded']").inner_text()
        assert "75.0%" in row and f"assay calibrate --run {run.run_id}" in row
        api = httpx.get(f"{served.url}/runs/{run.run_id}/agreement").json()
        shown = page.locator("#agreement tr[data-evaluator='graded'] td.no-verdict")
        assert shown.inner_text() == str(next(a["without_verdict"] for a in api
                                              if a["evaluator"] == "graded"))
        _shot(page, tmp_path, "run-agreement")
        watch.clean()
    done = run_assay(["calibrate", "--run", run.run_id, "--store", url, "--json",
                      "--resamples", "0"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["counts"]["scored"] == 4
    assert report["statistics"]["accuracy"]["value"] == 0.75


def test_the_static_compare_report_opens_on_the_comparison_offline(browser, demo, tmp_path):
    from assay.report.html import write_html

    served, ids = demo
    store = RunStore(served.settings.store_url)
    report = tmp_path / "compare.html"
    write_html(store, store.run_record(ids[3]), report, baseline=store.run_record(ids[2]))
    store.close()
    page = _page(browser, offline=True)
    watch = Watch(page, report.as_uri())
    page.goto(report.as_uri())
    page.wait_for_selector("#verdict")
    assert ids[2] in page.locator("#verdict").inner_text()
    page.click("a.chip[data-status='regression']")
    _rendered(page, "status=regression")
    statuses = page.locator("#case-deltas tbody tr[data-case] td:first-child").all_inner_texts()
    assert statuses and set(statuses) == {"regression"}
    row = page.locator("#case-deltas tbody tr[data-case]").first
    row.locator("button:text('diff')").click()
    expect(page.locator("#case-deltas tr.sides-row:visible .side")).to_have_count(2)
    _shot(page, tmp_path, "report-compare")
    page.click(".top nav a:text('Run')")
    page.wait_for_selector("#cases tbody tr")
    watch.clean()


def test_a_running_run_shows_its_progress_live_and_can_be_cancelled(browser, tmp_path,
                                                                      monkeypatch):
    from tests.server_support import echo_suite

    monkeypatch.chdir(tmp_path)
    echo_suite(tmp_path, 30, sleep=0.4)
    url = f"sqlite:///{tmp_path}/runs.db"
    with serve(url, suite_roots=[tmp_path]) as served, served.client() as api:
        started = api.post("/runs", json={"suite": "echo/EVAL.yaml", "concurrency": 1})
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        page = _page(browser)
        watch = Watch(page, served.url)
        page.goto(f"{served.url}/#/run/{run_id}")
        page.wait_for_selector("#live")
        expect(page.locator("#live-progress")).to_contain_text(" of 30 cases", timeout=30_000)
        expect(page.locator("#live-progress")).to_contain_text("left", timeout=30_000)
        expect(page.locator("#live-cases tbody tr").first).to_be_visible(timeout=30_000)
        _shot(page, tmp_path, "run-live")
        page.click("#cancel-run")
        page.wait_for_selector("#live", state="detached", timeout=30_000)
        expect(page.locator(".meta .badge").first).to_have_text("interrupted")
        watch.clean()


# -- vendored libraries: the trend chart (uPlot) and word diffs (jsdiff) ---------------------

CSP_WATCH = ("window.__csp = []; document.addEventListener('securitypolicyviolation', "
             "(e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));")
"""Every Content-Security-Policy violation on a page, kept for the test to read."""


def _no_csp_violations(page: Any) -> None:
    assert page.evaluate("window.__csp") == []


def _in_each_scheme(browser: Any, url: str) -> Iterator[tuple[str, Any, Any]]:
    """The store at ``url`` served, and a page in the light scheme, then another in the dark
    one, each watched for what it must not do and for CSP violations, checked once the loop's
    body is done with it: (the scheme, the server, the page)."""
    for scheme in ("light", "dark"):
        with serve(url) as served:
            page = _page(browser, color_scheme=scheme)
            page.add_init_script(CSP_WATCH)
            watch = Watch(page, served.url)
            yield scheme, served, page
            _no_csp_violations(page)
            watch.clean()


def _output_runs(store: RunStore, outputs: dict[str, tuple[Any, str, str]]) -> tuple[str, str]:
    """A baseline and a candidate run of the cases ``outputs`` names, each case with its
    expected output and the two runs' outputs; their ids."""
    from assay.types.case import Case
    from assay.types.execution import Execution
    from assay.types.records import (
        CaseRecord,
        EvaluatorSpec,
        RunSnapshot,
        SummaryBuilder,
        Verdict,
    )
    from assay.types.score import Score

    ids = []
    for side, run_id in ((1, "words-base"), (2, "words-cand")):
        snapshot = RunSnapshot(suite_name="words", judge_models=["fake:judge"],
                               evaluators=[EvaluatorSpec(name="judge", type="judge")])
        store.create_run("words", snapshot.model_dump(mode="json"), run_id=run_id)
        builder = SummaryBuilder()
        for case_id, texts in outputs.items():
            good = side == 1
            score = Score(name="judge", value=0.9 if good else 0.4)
            record = CaseRecord(
                run_id=run_id, case_id=case_id,
                case=Case(id=case_id, input="q", expected_output=texts[0]),
                execution=Execution(output=texts[side], latency_ms=100.0), scores=[score],
                score=score.value, verdict=Verdict.PASS if good else Verdict.FAIL)
            store.record_execution(run_id, case_id, 0, record.execution)
            store.record_score(run_id, case_id, 0, score)
            store.record_case(record)
            builder.add(record)
        store.flush()
        store.set_status(run_id, "completed", builder.build().model_dump(mode="json"))
        ids.append(run_id)
    return ids[0], ids[1]


def _open_sides(page: Any, url: str, base: str, cand: str, case_id: str) -> Any:
    page.goto(f"{url}/#/compare?baseline={base}&candidate={cand}&q={case_id}&open={case_id}")
    sides = page.locator(f"#case-deltas tr[data-case='{case_id}'] + tr.sides-row")
    sides.locator("pre.diff").wait_for(timeout=NEXT_PAGE_BUDGET_S * 1000)
    return sides


def test_a_changed_word_is_marked_within_its_line_and_unchanged_text_is_not(browser,
                                                                             tmp_path):
    expected = "Dear customer,\nThe total is 42 apples and 7 pears.\nRegards"
    changed = "Dear customer,\nThe total is 45 apples and 7 pears.\nRegards"
    lines = [f"row {i}: value {i * 3} ok" for i in range(4)]
    outputs = {"one-word": (expected, expected, changed),
               "short": ("0.81", "0.81", "0.75"),
               "rows": (None, "\n".join(lines), "\n".join(lines).replace("value 6 ", "value 7 "))}
    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    base, cand = _output_runs(store, outputs)
    store.close()
    for scheme, served, page in _in_each_scheme(browser, url):
        diff = _open_sides(page, served.url, base, cand, "one-word").locator("pre.diff")
        assert diff.locator(".d-removed del").all_inner_texts() == ["42"]
        assert diff.locator(".d-added ins").all_inner_texts() == ["45"]
        assert diff.locator(".d-same del, .d-same ins").count() == 0
        assert diff.locator(".d-removed").inner_text().strip() == "\u2212 The total is 42 apples and 7 pears."
        assert diff.get_attribute("data-word-diff") == "complete"
        diff.scroll_into_view_if_needed()
        _shot(page, tmp_path, "compare-word-diff" + ("-dark" if scheme == "dark" else ""))

        diff = _open_sides(page, served.url, base, cand, "short").locator("pre.diff")
        assert diff.locator(".d-removed del").all_inner_texts() == ["81"]  # characters
        assert diff.locator(".d-added ins").all_inner_texts() == ["75"]
        diff = _open_sides(page, served.url, base, cand, "rows").locator("pre.diff")
        assert [t.strip() for t in diff.locator(".d-removed").all_inner_texts()] == ["\u2212 row 2: value 6 ok"]
        assert diff.locator("del, ins").all_inner_texts() == ["6", "7"]

        page.goto(f"{served.url}/#/case/{cand}?case_id=one-word")
        page.wait_for_selector("#expected-diff pre.diff")
        against = page.locator("#expected-diff pre.diff")
        assert against.locator(".d-removed del").all_inner_texts() == ["42"]  # expected
        assert against.locator(".d-added ins").all_inner_texts() == ["45"]  # the agent's
        assert against.locator(".d-same").count() == 2
        page.locator("#expected-diff").scroll_into_view_if_needed()
        _shot(page, tmp_path, "case-expected-diff" + ("-dark" if scheme == "dark" else ""))
        page.goto(f"{served.url}/#/case/{base}?case_id=one-word")
        expect(page.locator("#expected-diff")).to_contain_text(
            "The output is the expected output.")
        page.goto(f"{served.url}/#/case/{base}?case_id=rows")
        _rendered(page, "case_id=rows")
        assert page.locator("#expected-diff").count() == 0  # the case expects nothing


HUGE_DIFF_LINES = 5_000
WORD_DIFF_LONGEST_TASK_MS = 1_000
"""The longest the page may be busy at once while it shows the diff of two megabyte outputs
(parsing the answer, building its lines and marking words within the time budget)."""


def test_a_megabyte_output_diff_stays_responsive(browser, tmp_path):
    """Two 1 MB outputs of 5,000 lines, every line changed in many words (the server's diff
    cuts them at 4,000), and two 1 MB outputs of one line: the side-by-side view opens within the page
    budget, never blocks the page for long, and marks words only as far as its budget goes."""
    def lines(changed: bool) -> str:  # every other word of every line changed
        return "\n".join(f"line {i:05d} " + " ".join(("b" if changed and j % 2 else "a") + str(j)
                                                     for j in range(46)) + f" value {i}"
                         for i in range(HUGE_DIFF_LINES))

    one = "word " * 200_000
    outputs = {"many-lines": (None, lines(False), lines(True)),
               "one-line": (None, one, one[:500_000] + "changed " + one[500_000:])}
    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    base, cand = _output_runs(store, outputs)
    store.close()
    with serve(url) as served:
        page = _page(browser)
        page.add_init_script(CSP_WATCH + " window.__longest = 0; new PerformanceObserver("
                             "(list) => list.getEntries().forEach((e) => { window.__longest = "
                             "Math.max(window.__longest, e.duration); })).observe("
                             "{ type: 'longtask', buffered: true });")
        watch = Watch(page, served.url)
        for case_id in outputs:
            started = time.monotonic()
            sides = _open_sides(page, served.url, base, cand, case_id)
            took = time.monotonic() - started
            diff = sides.locator("pre.diff")
            longest = page.evaluate("window.__longest")
            print(f"{case_id}: side by side in {took:.2f} s, longest task {longest:.0f} ms, "
                  f"{diff.locator('.d-added:has(ins)').count()} lines marked")
            assert took < NEXT_PAGE_BUDGET_S
            assert longest < WORD_DIFF_LONGEST_TASK_MS
            assert diff.get_attribute("data-word-diff") == "partial"
            assert sides.locator(".word-diff-note").count() == 1
            if case_id == "many-lines":
                assert diff.locator(".d-removed").count() == 4_000
                assert "the diff covers their first lines" in sides.inner_text()
                marked = diff.locator(".d-added:has(ins)").count()
                assert 0 < marked < 4_000  # the first lines, within the time budget
                added = diff.locator(".d-added")
                assert added.first.locator("ins").count() and not added.last.locator("ins").count()
            else:
                assert diff.locator("ins, del").count() == 0  # one block over the size bound
            page.evaluate("window.__longest = 0")
        _no_csp_violations(page)
        watch.clean()


def test_the_trend_chart_draws_a_line_per_suite_and_a_click_opens_its_run(browser, tmp_path):
    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    now = time.time()
    runs = {suite: [write_run(store, 12, suite=suite, seed=k, quality=q,
                              created_at=now - (10 - 2 * k - offset) * 86400)
                    for k, q in enumerate(qualities)]
            for suite, offset, qualities in (("math", 0, [0.6, 0.7, 0.9]),
                                             ("chat", 1, [0.9, 0.5, 0.8, 0.7]))}
    store.close()
    for scheme, served, page in _in_each_scheme(browser, url):
        page.goto(served.url + "/#/runs")
        page.wait_for_selector("#runs-chart canvas")
        series = page.evaluate("(() => { const u = document.querySelector('#runs-chart')"
                               ".uplot; return u.series.slice(1).map((s, k) => [s.label, "
                               "u.data[k + 1].filter((v) => v !== null).length]); })()")
        assert sorted(series) == [["chat", 4], ["math", 3]]  # one line per suite
        assert page.locator(".legend a[data-suite]").all_inner_texts() == ["chat", "math"]
        target = runs["chat"][2]
        point = page.evaluate(
            "(id) => { const box = document.querySelector('#runs-chart'), u = box.uplot;"
            " const i = u.data[0].findIndex((_, k) => box.uplotRuns[k].id === id);"
            " const r = u.over.getBoundingClientRect();"
            " return [r.left + u.valToPos(u.data[0][i], 'x'),"
            " r.top + u.valToPos(box.uplotRuns[i].pass_rate, 'y')]; }", target)
        page.mouse.move(*point)
        tip = page.locator("#runs-chart .chart-tip")
        expect(tip).to_be_visible()
        row = page.locator(f"#runs tr[data-run='{target}']")
        assert target in tip.inner_text() and "chat" in tip.inner_text()
        assert row.locator("td.num").nth(1).inner_text().strip() in tip.inner_text()
        assert row.locator("td.num").last.inner_text()[:16] in tip.inner_text()
        _shot(page, tmp_path, "runs-chart" + ("-dark" if scheme == "dark" else ""))
        page.mouse.click(*point)
        _rendered(page, f"#/run/{target}")
        assert page.locator("#run-title").inner_text() == target
        page.go_back()
        page.wait_for_selector("#runs-chart canvas")
        page.focus("#runs-chart")
        page.keyboard.press("ArrowLeft")  # the latest run
        page.keyboard.press("Enter")
        _rendered(page, f"#/run/{runs['chat'][3]}")


def test_the_trend_chart_leaves_out_a_run_whose_start_cannot_be_read(browser, tmp_path):
    """Such a run came as started at 0 and was drawn at 1970, squeezing the other runs into
    the chart's right edge; it is listed, named unreadable, and has no place in time."""
    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    now = time.time()
    bad, *good = [write_run(store, 12, seed=k, created_at=now - (3 - k) * 86400)
                  for k in range(3)]
    with store.transaction() as conn:
        conn.execute(text("UPDATE runs SET created_at = 'yesterday' WHERE id = :id"),
                     {"id": bad})
    store.close()
    for _, served, page in _in_each_scheme(browser, url):
        page.goto(served.url + "/#/runs")
        page.wait_for_selector("#runs-chart canvas")
        drawn = page.evaluate("(() => { const box = document.querySelector('#runs-chart');"
                              " return [box.uplotRuns.map((r) => r.id),"
                              " Math.min(...box.uplot.data[0])]; })()")
        assert sorted(drawn[0]) == sorted(good) and drawn[1] > now - 4 * 86400, drawn
        assert page.locator(f"#runs tr[data-run='{bad}']").count() == 1


def test_the_trend_charts_time_ticks_never_repeat_a_label(browser, tmp_path):
    """Runs made a few seconds apart put ticks under a minute apart: each tick names its
    second, so no two ticks read the same clock time."""
    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    now = time.time()
    for k in range(4):
        write_run(store, 3, suite="quick", seed=k, created_at=now - 90 + 30 * k)
    store.close()
    with serve(url) as served:
        page = browser.new_page()
        page.goto(served.url + "/#/runs")
        page.wait_for_selector("#runs-chart canvas")
        ticks = [t for t in page.evaluate(
            "document.querySelector('#runs-chart').uplot.axes[0]._values") if t]
        page.close()
    assert len(ticks) > 2 and len(set(ticks)) == len(ticks), ticks


def test_ids_that_hide_or_reorder_text_read_as_the_terminal_shows_them(browser, tmp_path):
    """A case id holding a bidirectional override or a zero-width space is shown with the
    character escaped, on the run's page and the case's, as ``assay show`` prints it."""
    from assay.report.safe_text import printable
    from assay.types.case import Case
    from assay.types.execution import Execution
    from assay.types.records import CaseRecord, Verdict
    from assay.types.score import Score

    hostile = ["x\u202ey.txt", "a\u200bb"]

    def write(store: RunStore) -> str:
        run = write_run(store, 1, seed=1)
        for case_id in hostile:
            record = CaseRecord(run_id=run, case_id=case_id, case=Case(id=case_id, input="q"),
                                execution=Execution(input="q", output="a\u2066b"),
                                scores=[Score(name="s", value=1.0)], score=1.0,
                                verdict=Verdict.PASS)
            store.record_execution(run, case_id, 0, record.execution)
            store.record_score(run, case_id, 0, record.scores[0])
            store.record_case(record)
        return run

    with _one_run(browser, tmp_path, write) as (served, page, run_id):
        page.goto(f"{served}/#/run/{run_id}")
        page.wait_for_selector("#cases tbody tr")
        shown = page.locator("#cases").inner_text()
        for case_id in hostile:
            assert printable(case_id) in shown and case_id not in shown, shown
        page.goto(f"{served}/#/case/{run_id}?case_id={quote(hostile[0])}")
        expect(page.locator("h1")).to_have_text(printable(hostile[0]))
        assert "a\\u2066b" in page.locator("#agent-output").inner_text()


def test_a_score_with_no_pass_or_fail_of_its_own_is_not_shown_as_passed(browser, tmp_path):
    from assay.types.case import Case
    from assay.types.execution import Execution
    from assay.types.records import CaseRecord, Verdict
    from assay.types.score import Score

    def write(store: RunStore) -> str:
        run = write_run(store, 2, seed=1)
        scores = [Score(name="tone", value=0.4), Score(name="correct", value=0.0, passed=False)]
        record = CaseRecord(run_id=run, case_id="mixed", case=Case(id="mixed", input="q"),
                            execution=Execution(input="q", output="a"), scores=scores,
                            score=0.2, verdict=Verdict.FAIL)
        store.record_execution(run, "mixed", 0, record.execution)
        for score in scores:
            store.record_score(run, "mixed", 0, score)
        store.record_case(record)
        return run

    with _one_run(browser, tmp_path, write) as (served, page, run_id):
        page.goto(f"{served}/#/case/{run_id}?case_id=mixed")
        tone = page.locator('.score-card[data-evaluator="tone"]')
        expect(tone.locator(".head .badge")).to_have_text("scored")
        assert "b-pass" not in (tone.locator(".head .badge").get_attribute("class") or "")
        assert "s-pass" not in (tone.get_attribute("class") or "")
        correct = page.locator('.score-card[data-evaluator="correct"] .head .badge')
        assert "b-fail" in (correct.get_attribute("class") or "")


def test_an_evaluators_measurements_show_as_the_api_sends_them(browser, tmp_path):
    """The run page's evaluator table says what an evaluator measured, and a case's cell its
    measured value, as every other surface does (not an evaluator with nothing counted, nor
    a cell that reads not applicable)."""
    from tests.test_one_number import _measured_run

    with _one_run(browser, tmp_path, lambda _store: _measured_run(
            f"sqlite:///{tmp_path}/runs.db")) as (served, page, run_id):
        page.goto(f"{served}/#/run/{run_id}")
        row = page.locator("#evaluators tbody tr", has_text="length")
        expect(row.locator("td.measured")).to_have_text("2 value(s): mean 10, min 5, max 15")
        expect(page.locator("#cases tbody tr", has_text="c2")).to_contain_text("measured 15")
        # the case page's card says measured, as the server names its state: it was badged
        # "not applicable", which the page decided itself from the score's skip reason
        page.goto(f"{served}/#/case/{run_id}?case_id=c2")
        card = page.locator('.score-card[data-evaluator="length"]')
        expect(card.locator(".head .badge").first).to_have_text("measured")
        expect(card.locator(".big")).to_have_text("measured 15")


def test_a_runs_dataset_metrics_show_as_the_api_sends_them(browser, tmp_path):
    """The run page lists the run's dataset-level metrics, an error among them, as every
    other surface says them."""
    from tests.test_one_number import DATASET, _dataset_run

    with _one_run(browser, tmp_path, lambda _store: _dataset_run(
            f"sqlite:///{tmp_path}/runs.db")) as (served, page, run_id):
        page.goto(f"{served}/#/run/{run_id}")
        rows = page.locator("#dataset-metrics tbody tr")
        expect(rows).to_have_count(len(DATASET))
        assert {rows.nth(i).locator("td").nth(0).inner_text():
                rows.nth(i).locator("td").nth(1).inner_text()
                for i in range(len(DATASET))} == DATASET


def test_a_runs_repeats_show_as_the_api_sends_them(browser, tmp_path):
    """The run page of a run with repeats says pass^k and how many cases are flaky, as
    every other surface says it; a run without repeats shows no such line."""
    from tests.test_one_number import REPEATS, _passed_run, _repeats_run

    url = f"sqlite:///{tmp_path}/runs.db"
    with _one_run(browser, tmp_path, lambda _store: _repeats_run(url)) as (served, page,
                                                                          run_id):
        once = _passed_run(url, "once", {"c1": []})
        page.goto(f"{served}/#/run/{run_id}")
        expect(page.locator("#repeats .figure")).to_have_text(REPEATS)
        _shot(page, tmp_path, "run-repeats")
        page.goto(f"{served}/#/run/{once}")
        expect(page.locator("#run-title")).to_have_text(once)
        expect(page.locator("#repeats")).to_have_count(0)


def test_a_runs_cost_tokens_and_stop_reasons_show_as_the_api_sends_them(
        browser, tmp_path, mock_server, mock_model, monkeypatch):
    """The run page showed the judge's cost alone: not the run's cost (which names a part
    whose cost is unknown), the agent's and the simulated user's tokens, nor what stopped
    its conversations. It shows them as the API's display fields say them."""
    from tests.test_run_cost import SIMULATOR_UNKNOWN, conversation_run

    monkeypatch.setenv("OPENAI_BASE_URL", mock_server.url)  # the judge, priced
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    url = f"sqlite:///{tmp_path}/runs.db"
    with _one_run(browser, tmp_path, lambda _store: conversation_run(
            url, tmp_path, mock_model).run_id) as (served, page, run_id):
        shown = httpx.get(f"{served}/runs/{run_id}").json()["display"]
        assert SIMULATOR_UNKNOWN.fullmatch(shown["cost"]), shown["cost"]
        page.goto(f"{served}/#/run/{run_id}")
        expect(page.locator("#cost-card .value")).to_have_text(shown["cost"])
        expect(page.locator("#cost-card .sub")).to_have_text(
            f"agent {shown['agent_tokens']} tokens · simulated user "
            f"{shown['simulator_tokens']} tokens")
        assert shown["agent_tokens"] == "50" and shown["simulator_tokens"] != "-"
        expect(page.locator("#judge-card .sub")).to_have_text(
            f"{shown['judge_tokens']} tokens · {shown['judge_cost']}")
        expect(page.locator("#stop-reasons .figure")).to_have_text("user_ended 1")
        _shot(page, tmp_path, "run-cost")


def test_the_compare_page_shows_each_runs_repeats(browser, tmp_path):
    """The compare page showed neither run's repeats: a candidate with one flaky case in
    five read as its pass rate alone. Each run with repeats now shows its cases over their
    repeats and its flaky cases, as its run page does; a run without repeats shows no such
    line, and a pair of runs without repeats no panel."""
    from tests.test_one_number import FLAKY, REPEATS, _repeats_run

    url = f"sqlite:///{tmp_path}/runs.db"
    with _one_run(browser, tmp_path, lambda _store: _repeats_run(url)) as (served, page,
                                                                          run_id):
        once, again = _repeats_run(url, repeat=1), _repeats_run(url, repeat=1)
        page.goto(f"{served}/#/compare?baseline={once}&candidate={run_id}")
        side = page.locator("#compare-repeats li[data-side=candidate]")
        expect(side.locator(".figure")).to_have_text(REPEATS)
        expect(side.locator(".flaky-cases")).to_have_text(FLAKY)
        expect(page.locator("#compare-repeats li")).to_have_count(1)
        _shot(page, tmp_path, "compare-repeats")
        page.goto(f"{served}/#/compare?baseline={run_id}&candidate={once}")
        expect(page.locator("#compare-repeats li[data-side=baseline] .figure")).to_have_text(
            REPEATS)
        page.goto(f"{served}/#/compare?baseline={once}&candidate={again}")
        expect(page.locator(".runs-compared")).to_contain_text(again)
        expect(page.locator("#compare-repeats")).to_have_count(0)


def test_a_runs_counts_show_in_their_units_as_the_api_sends_them(browser, tmp_path):
    """A run with repeats: its card counts executions (it said "Cases"), with the verdicts
    as every surface counts them; the evaluator scores that did not apply are "not
    applicable" (they were "skipped", the word of an execution's verdict), counted as
    evaluator scores."""
    import assay
    from tests.test_one_run_everywhere import ROWS, SCORES, VERDICTS, echo, extra, judge

    url = f"sqlite:///{tmp_path}/runs.db"

    def write(_store: RunStore) -> str:
        return assay.evaluate(ROWS, target=echo, evaluators=[judge, extra], store=url,
                              repeat=2, cache="off").run_id

    with _one_run(browser, tmp_path, write) as (served, page, run_id):
        page.goto(f"{served}/#/run/{run_id}")
        card = page.locator(".card").filter(has_text="Executions")
        expect(card.locator(".sub")).to_have_text(VERDICTS)
        expect(page.locator("#errors-card .sub")).to_contain_text(SCORES)
        expect(page.locator("#evaluators thead")).to_contain_text("Not applicable")
        expect(page.locator("#evaluators thead")).not_to_contain_text("Skipped")
        expect(page.locator("#evaluators thead")).to_contain_text("Values")
        expect(page.locator("figcaption").first).to_have_text(
            "case score (4 executions without a score)")
        _shot(page, tmp_path, "run-counts")

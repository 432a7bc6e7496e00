"""``assay show --failed --limit N``: a long run's problems without its 200 passing cases, and
shell completion offered by the command line."""

from __future__ import annotations

import json
from pathlib import Path

from assay.report.terminal import chosen_cases, not_passed
from assay.store.runs import RunStore
from assay.testing.runs import write_run
from tests.assay_process import run_assay


def test_show_lists_only_the_cases_that_did_not_pass_and_at_most_limit(tmp_path):
    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    run_id = write_run(store, 40, quality=0.9, seed=11)
    records = store.case_records(run_id)
    store.close()
    problems = [r.case_id for r in records if not_passed(r)]
    assert 3 < len(problems) < len(records)
    env = {"COLUMNS": "250"}
    shown = run_assay(["show", run_id, "--store", url, "--failed", "--limit", "3"],
                      cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    listed = [c for c in {r.case_id for r in records} if f" {c} " in shown.stdout]
    assert sorted(listed) == sorted(problems[:3])
    assert f"3 of {len(problems)} cases that did not pass shown (40 in the run)" in shown.stdout
    rows = run_assay(["show", run_id, "--store", url, "--failed", "--json"], cwd=tmp_path,
                     env=env)
    listed_rows = [json.loads(line) for line in rows.stdout.splitlines()]
    assert sorted(r["eval_id"] for r in listed_rows) == sorted(problems)
    for row in listed_rows:  # a pass is listed only for an evaluator that could not score it
        assert row["verdict"] != "pass" or any(e["error"] for e in row["evaluator_results"])
    first = run_assay(["show", run_id, "--store", url, "--json", "--limit", "5"],
                      cwd=tmp_path, env=env)
    assert [json.loads(x)["eval_id"] for x in first.stdout.splitlines()] == \
        [r.case_id for r in records[:5]]
    assert "5 of 40 cases shown" in first.stderr  # JSON alone on standard output
    zero = run_assay(["show", run_id, "--store", url, "--limit", "0"], cwd=tmp_path, env=env)
    assert zero.returncode == 2 and "Traceback" not in zero.stderr


def test_chosen_cases_says_nothing_when_nothing_is_left_out(tmp_path):
    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    records = store.case_records(write_run(store, 4, quality=1.0, seed=1))
    store.close()
    assert chosen_cases(records) == (records, None)
    assert chosen_cases(records, limit=10) == (records, None)


def test_the_command_line_offers_shell_completion(tmp_path):
    helped = run_assay(["--help"], cwd=tmp_path, env={"COLUMNS": "200"})
    assert "--install-completion" in helped.stdout
    # typer picks the shell from the processes above the command: run it from bash, as a user
    # does, whatever started the tests (`; true` keeps bash from exec-ing it in its place)
    import shlex
    import subprocess
    import sys

    command = f"{shlex.quote(str(Path(sys.executable).parent / 'assay'))} --show-completion; true"
    script = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60)
    assert "complete -o" in script.stdout and "_ASSAY_COMPLETE" in script.stdout, script.stderr


def test_a_command_that_reads_runs_from_a_missing_store_says_so_and_creates_nothing(tmp_path):
    import pytest

    import assay
    from assay.store.errors import StoreError

    typo = tmp_path / "typo" / "runs.db"
    url = f"sqlite:///{typo}"
    for argv in (["runs"], ["show", "r1"], ["compare", "r1", "r2"], ["report", "r1", "--markdown", "-"],
                 ["baseline", "show"], ["delete", "r1"], ["annotate", "r1", "--name", "x"]):
        done = run_assay([*argv, "--store", url], cwd=tmp_path)
        assert done.returncode == 2, (argv, done.stdout, done.stderr)
        assert f"no run store at {typo}: the file does not exist" in done.stderr, argv
        assert "Traceback" not in done.stderr
    with pytest.raises(StoreError, match="no run store at"):
        assay.compare("r1", "r2", store=url)
    assert not typo.parent.exists()  # no directory, no empty store left behind


def test_a_look_alike_run_id_is_shown_escaped_by_every_command(tmp_path):
    """A Cyrillic letter for a Latin one made ``assay show`` say "no run '...'" as if it had
    asked for the id that exists; every command that names a missing run escapes it as the
    REST API and ``assay compare`` do (``_util.control_chars.quoted``)."""
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    s = RunStore(store)
    real = write_run(s, 2, seed=1)
    s.close()
    look_alike = real[:-1] + "\u0430"  # CYRILLIC SMALL LETTER A
    for command in (["show", look_alike], ["delete", look_alike],
                    ["annotate", look_alike, "--name", "x"]):
        done = run_assay([*command, "--store", store], timeout=120)
        assert done.returncode != 0, done.stdout
        assert "\\u0430" in done.stderr and "\u0430" not in done.stderr, (command, done.stderr)


def test_a_case_an_evaluator_could_not_score_is_one_of_the_runs_failures_everywhere(tmp_path):
    """A case that passed on one evaluator while another could not score it fails the run
    (the default gate ``max_errors`` is 0), so every surface that picks a run's failures
    picks it: ``assay show --failed`` (which listed no case beside "gate fail" with no
    reason), ``--rerun-failed`` (which kept the error, so the re-run failed its gate again)
    and the GitHub annotations."""
    import assay
    from assay.report.github import failure_annotations

    broken = {"now": True}

    def flaky_check(outputs: str) -> bool:
        if broken["now"]:
            raise RuntimeError("the checker could not reach its service")
        return True

    rows = [{"id": "a", "input": "Paris", "expected_output": "Paris"},
            {"id": "b", "input": "Lyon", "expected_output": "Lyon"},
            {"id": "c", "input": "Rome", "expected_output": "Roma"}]
    url = f"sqlite:///{tmp_path}/runs.db"
    first = assay.evaluate(rows, target=echo, evaluators=["exact_match", flaky_check],
                           store=url)
    assert not first.passed and "could not be computed" in (first.reason or "")
    assert {r.case_id: r.verdict.value for r in first.records} == {
        "a": "pass", "b": "pass", "c": "fail"}
    assert [r.case_id for r in first.records if r.failed_or_errored] == ["a", "b", "c"]

    shown = run_assay(["show", first.run_id, "--store", url, "--failed"], cwd=tmp_path,
                      env={"COLUMNS": "250"})
    assert shown.returncode == 0, shown.stderr
    for case_id in ("a", "b", "c"):
        assert f"│ {case_id} " in shown.stdout
    assert "gate failed: 3 evaluator score(s) could not be computed" in shown.stdout

    annotations = failure_annotations(first.records)
    assert len(annotations) == 3
    assert "title=case a pass (an evaluator error)" in annotations[0]
    assert "flaky_check: error" in annotations[0]

    broken["now"] = False
    again = assay.rerun_failed(first.run_id, store=url, target=echo, data=rows,
                               evaluators=["exact_match", flaky_check])
    assert sorted(r.case_id for r in again.records) == ["a", "b", "c"]
    assert all(not s.error for r in again.records for s in r.scores)
    assert again.summary.evaluator_errors == 0


def test_show_failed_of_a_run_with_no_failure_says_so_rather_than_an_empty_table(tmp_path):
    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    run_id = write_run(store, 4, quality=1.0, seed=1)
    store.close()
    shown = run_assay(["show", run_id, "--store", url, "--failed"], cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "no failed, borderline or errored case" in shown.stdout
    assert "┏" not in shown.stdout


def echo(question: str) -> str:
    return question


def test_runs_limit_is_at_least_one_as_show_limit_is(tmp_path):
    """``assay runs -n 0`` printed an empty table of a store that holds runs, and ``-n -1``
    every run (SQLite's LIMIT -1): the limit is bounded as ``assay show --limit`` is."""
    from typer.testing import CliRunner

    from assay.cli import app

    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    newest = [write_run(store, 2, quality=0.9, seed=s) for s in (1, 2)][-1]
    store.close()
    for bad in ("0", "-1"):
        refused = CliRunner().invoke(app, ["runs", "--store", url, "-n", bad])
        assert refused.exit_code == 2, refused.output
        assert "--limit" in refused.output and "greater than or equal to 1" in refused.output, \
            refused.output
    one = CliRunner().invoke(app, ["runs", "--store", url, "-n", "1", "--json"])
    assert [r["id"] for r in json.loads(one.output)] == [newest]


def _stopped_and_finished(tmp_path: Path, finished_cases: int) -> tuple[str, str, str]:
    """A store of two runs: one interrupted after storing 12 case results, before its
    summary, and one finished with ``finished_cases``; the store's URL and the runs' ids."""
    from assay.types.records import RunStatus

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = RunStore(url)
    stopped = write_run(store, 12, status=RunStatus.RUNNING, seed=1)
    store.set_status(stopped, RunStatus.INTERRUPTED.value)
    finished = write_run(store, finished_cases, seed=2)
    store.close()
    return url, stopped, finished


def test_an_interrupted_run_lists_the_cases_it_stored_on_every_surface(tmp_path):
    """A run stopped before its summary was written listed blank cases in ``assay runs``
    although its results were stored: the command line, ``GET /runs`` and the web UI (which
    renders the run list's ``cases``) show the same count, by one rule."""
    from typer.testing import CliRunner

    from assay.cli import app as cli_app
    from assay.store.queries import RunFilter, list_runs
    from tests.server_support import serve

    url, stopped, finished = _stopped_and_finished(tmp_path, 5)
    shown = CliRunner().invoke(cli_app, ["runs", "--store", url], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    row = next(line for line in shown.output.splitlines() if stopped in line)
    assert "12 stored" in row, shown.output
    assert "stored" not in next(line for line in shown.output.splitlines() if finished in line)
    items, _ = list_runs(RunStore(url), RunFilter())
    assert {item.id: item.cases for item in items} == {stopped: "12 stored", finished: "5"}
    with serve(url) as served, served.client() as client:
        listed = client.get("/runs").json()["items"]
    assert {item["id"]: item["cases"] for item in listed} == {stopped: "12 stored",
                                                              finished: "5"}


def _header(table) -> list[str]:
    return [str(column.header) for column in table.columns]


def test_the_cases_table_shows_hits_and_misses_only_when_an_evaluator_gave_some(tmp_path):
    from assay.report.terminal import cases_table

    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    records = store.case_records(write_run(store, 3, quality=1.0, seed=2))
    store.close()
    for record in records:
        for score in record.scores:
            score.hits, score.misses = [], []
    assert _header(cases_table(records)) == ["case", "score", "verdict", "evaluators",
                                             "reasoning"]
    records[1].scores[0].misses = ["no refund policy named"]
    table = cases_table(records)
    assert "hits / misses" in _header(table)
    cells = table.columns[_header(table).index("hits / misses")]._cells
    assert cells[0] == "" and "no refund policy named" in cells[1]
def test_every_list_of_runs_gives_the_stored_count_and_says_why_the_mean_is_missing(tmp_path):
    """``assay runs --json`` lacked the stored case count its table showed; the table left an
    interrupted run's mean and gate blank, and counted a summary's cases as ``1000`` where
    every other count reads ``1,000``. Every list now gives the count as a field
    (``stored_cases``, ``cases``), shows ``-`` for a mean and gate no summary holds, and says
    why below the table."""
    from typer.testing import CliRunner

    from assay.cli import app as cli_app
    from tests.server_support import serve

    url, stopped, finished = _stopped_and_finished(tmp_path, 1200)
    shown = CliRunner().invoke(cli_app, ["runs", "--store", url], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    cells = {run_id: [c.strip() for c in next(x for x in lines if run_id in x).split("│")]
             for run_id in (stopped, finished)}
    assert cells[stopped][5:8] == ["12 stored", "-", "-"], shown.output
    assert cells[finished][5] == "1,200", shown.output
    assert f"interrupted {stopped} (no summary yet, so no mean or gate): resume with " \
        in shown.output
    as_json = CliRunner().invoke(cli_app, ["runs", "--store", url, "--json"])
    listed = {r["id"]: (r["stored_cases"], r["cases"]) for r in json.loads(as_json.output)}
    want = {stopped: (12, "12 stored"), finished: (None, "1,200")}
    assert listed == want
    with serve(url) as served, served.client() as client:
        items = client.get("/runs").json()["items"]
    assert {i["id"]: (i["stored_cases"], i["cases"]) for i in items} == want
    assert {i["id"]: i["display"] is None for i in items} == {stopped: True, finished: False}

"""Files a person hands assay outside a run's suite: labelled CSV for ``assay calibrate``,
files ``assay convert`` reads, the folder ``assay init`` writes into. Each is read by the real
command in a real process; bad input is one line naming the file and the line, exit 2, and
never a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from assay.calibration.files import load_labelled
from assay.calibration.items import CalibrationDataError
from assay.suites.dataset import DatasetError, suite_from_file
from tests.assay_process import run_assay


def assay(cwd: Path, *args: str):
    env = {**os.environ, "ASSAY_CACHE_DIR": str(cwd / "cache")}
    env.pop("ASSAY_JUDGE_MODEL", None)
    return run_assay(args, cwd=cwd, env=env, timeout=240)


def one_line_error(done, *expected: str) -> None:
    """The command failed as bad input does: exit 2, no traceback, the expected words."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    for words in expected:
        assert words in done.stderr, done.stderr


# -- CSV ---------------------------------------------------------------------------------------

LABELS_CSV = "id,input,output,reference,label\r\n1,q,Paris,Paris,pass\r\n2,q,Rome,Paris,fail\r\n"


def test_a_csv_saved_by_excel_with_a_byte_order_mark_calibrates(tmp_path):
    """Excel's "CSV UTF-8" starts with a byte-order mark (and ends lines with CRLF): its
    first column is 'id', not '\\ufeffid' refused as an unknown column."""
    labels = tmp_path / "labels.csv"
    labels.write_bytes(b"\xef\xbb\xbf" + LABELS_CSV.encode())
    done = assay(tmp_path, "calibrate", str(labels), "--judge", "exact_match", "--store",
                 f"sqlite:///{tmp_path}/runs.db", "--resamples", "0", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["counts"]["scored"] == 2
    assert report["statistics"]["accuracy"]["value"] == 1.0


def test_a_dataset_csv_with_a_byte_order_mark_keeps_its_first_column(tmp_path):
    data = tmp_path / "rows.csv"
    data.write_bytes(b"\xef\xbb\xbfid,input,output\r\nfirst,q,a\r\n")
    assert [c.case.id for c in suite_from_file(data).cases] == ["first"]


@pytest.mark.parametrize(("text", "line", "words"), [
    ('id,input,output,label\n1,q,a,pass\n2,"q,b,fail\n3,q,c,pass\n', 3, "never closed"),
    ('id,input,output,label\n1,"q"x,a,pass\n', 2, "',' expected after '\"'"),
    ('id,"input\n', 1, "never closed"),
])
def test_a_quote_never_closed_is_named_at_its_row_not_read_as_the_rest_of_the_file(
        tmp_path, text, line, words):
    """A stray quote once swallowed every later row into one cell, and the error blamed a
    missing label at the end of the file."""
    labels = tmp_path / "labels.csv"
    labels.write_text(text, encoding="utf-8")
    with pytest.raises(CalibrationDataError) as found:
        load_labelled(labels)
    assert f"{labels} line {line}: not a CSV row" in found.value.message
    assert words in found.value.message
    with pytest.raises(DatasetError, match=f"line {line}: not a CSV row"):
        suite_from_file(labels)
    done = assay(tmp_path, "calibrate", str(labels), "--judge", "exact_match", "--store",
                 f"sqlite:///{tmp_path}/runs.db")
    one_line_error(done, f"labels.csv line {line}: not a CSV row")


def test_a_csv_column_named_twice_is_an_error_not_a_cell_dropped(tmp_path):
    """A row is read as a mapping, so of two columns of one name the last was kept and the
    other dropped without a word: ``label,label`` with ``pass,fail`` was a 'fail' label."""
    labels = tmp_path / "labels.csv"
    labels.write_text("id,input,output,label,label\n1,q,a,pass,fail\n", encoding="utf-8")
    expected = f"{labels} line 1: the column 'label' is named twice; expected each column once"
    with pytest.raises(CalibrationDataError) as found:
        load_labelled(labels)
    assert found.value.message == expected
    with pytest.raises(DatasetError) as refused:
        suite_from_file(labels)
    assert expected in str(refused.value)
    done = assay(tmp_path, "calibrate", str(labels), "--judge", "exact_match", "--store",
                 f"sqlite:///{tmp_path}/runs.db")
    one_line_error(done, "labels.csv line 1: the column 'label' is named twice")


# -- assay convert -----------------------------------------------------------------------------


def test_a_jsonl_suite_with_a_line_separator_in_a_string_converts_back_to_yaml(tmp_path):
    """JSON leaves U+2028 unescaped (assay convert writes it so); cutting lines with
    str.splitlines broke the case in two and the command died with a traceback."""
    suite = tmp_path / "suite.yaml"
    suite.write_text('description: d\nevalcases:\n  - id: a\n    input: "one\\u2028two"\n'
                     '    expected_output: x\n    evaluators:\n      - name: c\n'
                     '        type: contains\n        search_text: x\n', encoding="utf-8")
    done = assay(tmp_path, "convert", str(suite))
    assert done.returncode == 0, done.stderr
    assert "\u2028" in (tmp_path / "suite-cases.jsonl").read_text(encoding="utf-8")
    back = tmp_path / "back.yaml"
    done = assay(tmp_path, "convert", str(tmp_path / "suite-cases.jsonl"), "--out", str(back))
    assert done.returncode == 0, done.stderr
    import yaml

    assert yaml.safe_load(back.read_text(encoding="utf-8"))["evalcases"][0]["input"] == \
        "one\u2028two"


@pytest.mark.parametrize(("lines", "expected"), [
    (b'{"eval_id": "a", "score": 1}\nnot json\n', "results.jsonl line 2: not JSON"),
    (b'{"eval_id": "a", "score": 1}\n[1, 2]\n',
     "results.jsonl line 2: expected a JSON object, not list"),
    (b'{"eval_id": "a", "score": 1}\n\xff\xfe\n', "results.jsonl: not UTF-8 text"),
])
def test_a_results_file_with_a_bad_line_is_refused_naming_it(tmp_path, lines, expected):
    results = tmp_path / "results.jsonl"
    results.write_bytes(lines)
    done = assay(tmp_path, "convert", str(results))
    one_line_error(done, expected)
    assert not (tmp_path / "results.eval.yaml").exists()


def test_a_results_row_with_a_line_separator_converts(tmp_path):
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"eval_id": "a", "score": 1, "output": "x\u2028y"},
                                  ensure_ascii=False) + "\n", encoding="utf-8")
    done = assay(tmp_path, "convert", str(results))
    assert done.returncode == 0, done.stderr
    import yaml

    assert yaml.safe_load((tmp_path / "results.eval.yaml").read_text(encoding="utf-8"))[
        "output"] == "x\u2028y"


# -- assay init --------------------------------------------------------------------------------


def test_init_never_writes_through_a_link_to_nothing(tmp_path):
    """A link to nothing does not 'exist': it passed the check, and the suite was written
    wherever the link pointed."""
    folder = tmp_path / "project"
    folder.mkdir()
    elsewhere = tmp_path / "elsewhere.yaml"
    (folder / "EVAL.yaml").symlink_to(elsewhere)
    done = assay(tmp_path, "init", str(folder))
    one_line_error(done, "EVAL.yaml", "never overwrites")
    assert not elsewhere.exists()
    assert sorted(p.name for p in folder.iterdir()) == ["EVAL.yaml"]


def test_init_refuses_a_folder_of_its_files_that_is_a_link_out(tmp_path):
    folder, outside = tmp_path / "project", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (folder / "prompts").symlink_to(outside)
    done = assay(tmp_path, "init", str(folder))
    one_line_error(done, "prompts is a link")
    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in folder.iterdir()) == ["prompts"]


def test_init_into_a_path_under_a_file_is_an_error_not_a_traceback(tmp_path):
    (tmp_path / "afile").write_text("x")
    done = assay(tmp_path, "init", str(tmp_path / "afile" / "sub"))
    one_line_error(done, "Not a directory")


# -- assay calibrate --judge FILE ----------------------------------------------------------------


def alias_bomb(levels: int) -> str:
    """An exact_match judge whose 'expected' is ten lists of ten... ``levels`` deep: a few
    lines that expand to 10**levels values."""
    doc = 'type: exact_match\nexpected:\n  - &a0 [' + ", ".join(['"lol"'] * 10) + "]\n"
    for i in range(1, levels):
        doc += f"  - &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n"
    return doc


LABELS_JSONL = ('{"output": "a", "reference": "a", "label": "pass"}\n'
                '{"output": "b", "reference": "a", "label": "fail"}\n')


@pytest.mark.parametrize(("judge", "expected"), [
    # Nine levels filled gigabytes and never ended; six (a million values) is enough to show
    # the file is read without the bound.
    (alias_bomb(6), "aliases expand the document"),
    ("type: exact_match\ntype: contains\n", "duplicate key 'type'"),
])
def test_a_judge_file_is_read_as_a_suite_file_is(tmp_path, judge, expected):
    (tmp_path / "labels.jsonl").write_text(LABELS_JSONL)
    (tmp_path / "judge.yaml").write_text(judge)
    done = assay(tmp_path, "calibrate", "labels.jsonl", "--judge", "judge.yaml", "--store",
                 f"sqlite:///{tmp_path}/runs.db", "--resamples", "0")
    one_line_error(done, "--judge judge.yaml:", expected)


def test_inline_judge_json_nested_past_the_bound_is_an_error_not_a_traceback(tmp_path):
    (tmp_path / "labels.jsonl").write_text(LABELS_JSONL)
    deep = '{"type": "exact_match", "expected": ' + "[" * 3000 + "]" * 3000 + "}"
    done = assay(tmp_path, "calibrate", "labels.jsonl", "--judge", deep, "--store",
                 f"sqlite:///{tmp_path}/runs.db", "--resamples", "0")
    one_line_error(done, "--judge: values nest more than")


# -- assay generate rubrics ----------------------------------------------------------------------

HOSTILE_DRAFT = {"rubrics": [{
    "id": "names-paris", "expected_outcome": "Names \u001b]0;owned\u0007Paris", "weight": 2,
    "required": True, "type": "script", "command": ["touch", "owned"]}]}
"""A judge's answer with a terminal escape in its text and keys that would make the item a
script if they were kept."""


def drafted_suite(tmp_path: Path) -> Path:
    suite = tmp_path / "EVAL.yaml"
    forced = json.dumps(HOSTILE_DRAFT)
    suite.write_text(
        "execution:\n  evaluators: [contains]\nevalcases:\n"
        '  - id: "evil\\e]0;PWNED\\a"\n'
        f"    expected_outcome: 'Names Paris. <<mock:{forced}>>'\n    input: Capital?\n"
        "  - id:\n      on-its-own-line\n"
        f"    expected_outcome: 'Names Paris. <<mock:{forced}>>'\n    input: Capital?\n")
    return suite


def test_generate_rubrics_prints_no_terminal_escape_of_a_case_id_or_a_draft(
        tmp_path, mock_server):
    from tests.test_cli_run import assay as assay_in

    drafted_suite(tmp_path)
    printed = assay_in(tmp_path, "generate", "rubrics", "EVAL.yaml", "--judge-model",
                       f"{mock_server.url}#judge")
    assert printed.returncode == 0, printed.stderr
    assert "\x1b" not in printed.stdout and "\x07" not in printed.stdout
    assert "# evil\\x1b]0;PWNED\\x07" in printed.stdout


def test_generate_rubrics_writes_a_suite_that_loads_whatever_the_id_layout(
        tmp_path, mock_server):
    """An id whose value is on the next line had the rubrics inserted between the key and
    its value: the written suite did not load, and the command said it wrote it."""
    from assay.suites.evalyaml import load_suite
    from tests.test_cli_run import assay as assay_in

    drafted_suite(tmp_path)
    written = assay_in(tmp_path, "generate", "rubrics", "EVAL.yaml", "--judge-model",
                       f"{mock_server.url}#judge", "-o", "drafted.yaml")
    assert written.returncode == 0, written.stderr
    loaded = load_suite(tmp_path / "drafted.yaml", False)
    assert [c.case.id for c in loaded.cases] == ["evil\x1b]0;PWNED\x07", "on-its-own-line"]
    for case in loaded.cases:
        rubric = next(e for e in case.evaluators or [] if e.type == "rubric")
        assert [r.model_dump(exclude_none=True) for r in rubric.rubrics] == [  # type: ignore[attr-defined]
            {"id": "names-paris", "expected_outcome": "Names \x1b]0;owned\x07Paris",
             "weight": 2.0, "required": True}]
    assert not (tmp_path / "owned").exists()


# -- human labels over the REST API ----------------------------------------------------------


def test_a_label_of_an_error_score_never_counts_as_agreement(tmp_path):
    """The viewer offers no label box on an error; the API took ``agrees: true`` on one and
    counted it as the judge agreeing with a person."""
    pytest.importorskip("fastapi")
    from assay.store.runs import RunStore
    from assay.testing.runs import write_run
    from tests.server_support import serve

    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    run = write_run(store, 14)  # case 13's agent failed: every score of it is an error
    store.close()
    errored = {"case_id": "case-000013", "evaluator": "correctness", "author": "alice"}
    with serve(url) as served, served.client() as api:
        for body in ({"agrees": True}, {"agrees": False}):
            refused = api.post(f"/runs/{run}/labels", json={**errored, **body})
            assert refused.status_code == 400, refused.text
            assert refused.json()["code"] == "invalid_label"
            assert "an error (target_failed)" in refused.text
        given = api.post(f"/runs/{run}/labels", json={**errored, "agrees": False,
                                                      "value": True})
        assert given.status_code == 201, given.text
        scored = api.post(f"/runs/{run}/labels", json={
            "case_id": "case-000001", "evaluator": "correctness", "agrees": True,
            "author": "alice"})
        assert scored.status_code == 201, scored.text
        agreement = api.get(f"/runs/{run}/agreement").json()
    assert [(a["labelled"], a["agreed"], a["without_verdict"], a["agreement_text"])
            for a in agreement] == [(1, 1, 1, "100.0%")]


# -- calibration statistics on degenerate judgements ------------------------------------------


@pytest.mark.parametrize("raw", [float("nan"), float("inf"), float("-inf")])
def test_an_ordinal_judge_rating_that_is_no_number_is_an_error_counted_not_a_crash(raw):
    """Rounding a NaN rating raised, and the whole report of a finished judge run was lost."""
    from assay.calibration.analysis import analyse
    from assay.calibration.items import LabelledItem, LabelledSet
    from assay.calibration.key import JudgeIdentity
    from assay.types.score import Score

    items = [LabelledItem(id=str(i), label=label) for i, label in enumerate([1, 3, 5, 2])]
    labelled = LabelledSet(name="x", kind="ordinal", items=items, scale=(1, 5))
    scores = [Score(name="j", value=0.5, raw=raw), Score(name="j", value=0.5, raw=3),
              Score(name="j", value=1.0, raw=5), Score.failed("j", "judge_output_invalid", "x")]
    report = analyse(labelled, list(zip(items, scores, strict=True)),
                     JudgeIdentity(key="k", name="j", type="rating"),
                     passes=lambda s: bool(s.passed), report_id="r", resamples=50)
    assert (report.counts.scored, report.counts.errors, report.counts.skipped) == (2, 2, 0)
    assert report.counts.error_codes == {"no_rating": 1, "judge_output_invalid": 1}
    assert report.statistics["accuracy"].value == 1.0


# -- --limit -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "text", "bad"), [
    ("labels.csv", LABELS_CSV + '3,"never closed,x,x,pass\n', 4),
    ("labels.jsonl", '{"id": 1, "output": "a", "reference": "a", "label": "pass"}\n'
                     '{"id": 2, "output": "b", "reference": "a", "label": "fail"}\n'
                     "not JSON: the file goes on for millions of lines\n", 3),
])
def test_limit_reads_the_labelled_file_no_further_than_it_needs(tmp_path, name, text, bad):
    """``--limit 2`` of a file of millions of rows read and held every row before keeping
    two (minutes and gigabytes); a row past the limit is now never read at all."""
    labels = tmp_path / name
    labels.write_text(text, encoding="utf-8")
    assert [i.id for i in load_labelled(labels, limit=2).items] == ["1", "2"]
    done = assay(tmp_path, "calibrate", name, "--judge", "exact_match", "--limit", "2",
                 "--store", f"sqlite:///{tmp_path}/runs.db", "--resamples", "0", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["counts"]["scored"] == 2
    with pytest.raises(CalibrationDataError, match=f"line {bad}"):
        load_labelled(labels)


# -- secrets in what align writes --------------------------------------------------------------

SECRET = "sk-proj-Secret0123456789abcdefXYZ"


def test_align_never_writes_a_known_secret_its_labelled_items_quote(tmp_path):
    """The aligned judge's examples and the report's disagreements quote labelled items; an
    agent output holding the environment's key was written into --output, --report and the
    --json print as it was."""
    rows = [{"id": str(i), "input": f"q{i}", "output": f"key is {SECRET} number {i}",
             "label": "pass" if i % 2 else "fail", "rationale": f"it printed {SECRET}"}
            for i in range(10)]
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "judge.yaml").write_text('type: llm_judge\nprompt: "{{candidate_answer}}"\n')
    env = {**os.environ, "ASSAY_CACHE_DIR": str(tmp_path / "cache"), "OPENAI_API_KEY": SECRET}
    env.pop("ASSAY_JUDGE_MODEL", None)
    common = ("align", "labels.jsonl", "--judge", "judge.yaml", "--judge-model", "fake:judge",
              "--store", f"sqlite:///{tmp_path}/runs.db", "--resamples", "0")
    written = run_assay([*common, "-o", "aligned.yaml", "--report", "report.json"],
                        cwd=tmp_path, env=env, timeout=240)
    assert written.returncode == 0, written.stderr
    printed = run_assay([*common, "--json"], cwd=tmp_path, env=env, timeout=240)
    assert printed.returncode == 0, printed.stderr
    aligned = (tmp_path / "aligned.yaml").read_text()
    assert "key is ${{ OPENAI_API_KEY }}" in aligned  # the examples are there, the key is not
    for text in (aligned, (tmp_path / "report.json").read_text(), printed.stdout,
                 written.stdout, written.stderr):
        assert SECRET not in text
    json.loads(printed.stdout)


def test_compare_reads_results_files_whose_outputs_hold_a_line_separator(tmp_path):
    """assay writes results JSONL with U+2028 unescaped in an output; ``assay compare`` of
    two such files cut the row there and refused the file as invalid JSON."""
    for name, score in (("a.jsonl", 1.0), ("b.jsonl", 0.9)):
        (tmp_path / name).write_text("".join(
            json.dumps({"eval_id": f"c{i}", "score": score, "verdict": "pass",
                        "output": "one\u2028two\u0085three"}, ensure_ascii=False) + "\n"
            for i in range(3)), encoding="utf-8")
    done = assay(tmp_path, "compare", "a.jsonl", "b.jsonl")
    assert "invalid JSON" not in done.stderr, done.stderr
    assert "average score dropped 10.0 pt" in done.stdout, (done.stdout, done.stderr)

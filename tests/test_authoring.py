"""``assay convert`` (EVAL.yaml <-> JSONL), ``assay init`` (a suite that runs as it is) and
``assay generate rubrics`` (draft rubric items from expected outcomes with the judge)."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import yaml

from assay.suites.evalyaml import load_suite
from tests.test_cli_run import assay

MATH = Path(__file__).parent / "data" / "suites" / "math"


# -- assay init --------------------------------------------------------------------------


def test_init_makes_a_suite_that_runs(tmp_path):
    made = assay(tmp_path, "init", "first")
    assert made.returncode == 0, made.stderr
    project = tmp_path / "first"
    for name in ("EVAL.yaml", "prompts/quality.md", "agent.py", ".assay/targets.yaml"):
        assert (project / name).is_file(), name
    run = assay(project, "run", "EVAL.yaml")
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [json.loads(line) for f in (project / ".assay" / "results").glob("*.jsonl")
            for line in f.read_text().splitlines()]
    assert {r["eval_id"] for r in rows} == {"capital-of-france", "river-through-paris"}
    for row in rows:  # the agent answers the reference: the stand-in judge scores 1.0
        assert {e["name"]: e["score"] for e in row["evaluator_results"]} == {
            "mentions_answer": 1.0, "quality": 1.0}
    again = assay(tmp_path, "init", "first")
    assert again.returncode == 2 and "never overwrites" in again.stderr


def test_init_says_the_next_command_as_a_shell_runs_it(tmp_path):
    """The folder is quoted for the shell (a name with a space, quote or ``;`` is one
    argument), and no ``cd .`` when the folder is the current one."""
    import shlex
    import subprocess

    named = "my suite; echo x's"
    made = assay(tmp_path, "init", named)
    assert made.returncode == 0, made.stderr
    line = made.stdout.strip().splitlines()[-1]
    assert line == f"next: cd {shlex.quote(named)} && assay run EVAL.yaml"
    went = subprocess.run(["bash", "-c", line.removeprefix("next: ").replace(
        "assay run EVAL.yaml", "pwd")], cwd=tmp_path, capture_output=True, text=True)
    assert went.stdout.strip() == str(tmp_path / named)
    (tmp_path / "here").mkdir()
    made = assay(tmp_path / "here", "init")
    assert made.stdout.strip().splitlines()[-1] == "next: assay run EVAL.yaml"


# -- assay convert ----------------------------------------------------------------------------


def _same_cases(a: Path, b: Path) -> None:
    first, second = load_suite(a, False), load_suite(b, False)
    assert [c.case.model_dump() for c in first.cases] == [c.case.model_dump()
                                                           for c in second.cases]
    assert [e.model_dump() for e in first.evaluators] == [e.model_dump()
                                                           for e in second.evaluators]


def test_convert_yaml_to_jsonl_and_back(tmp_path):
    suite = tmp_path / "EVAL.yaml"
    shutil.copytree(MATH, tmp_path, dirs_exist_ok=True)
    out = assay(tmp_path, "convert", "EVAL.yaml")
    assert out.returncode == 0, out.stderr
    cases, sidecar = tmp_path / "EVAL-cases.jsonl", tmp_path / "EVAL-cases.yaml"
    assert len(cases.read_text().splitlines()) == 3  # one case per line
    assert "evalcases" not in yaml.safe_load(sidecar.read_text())
    _same_cases(suite, cases)
    back = assay(tmp_path, "convert", "EVAL-cases.jsonl", "-o", "again.yaml")
    assert back.returncode == 0, back.stderr
    assert yaml.safe_load((tmp_path / "again.yaml").read_text()) == \
        yaml.safe_load(suite.read_text())
    _same_cases(suite, tmp_path / "again.yaml")


def test_convert_refuses_to_destroy_or_break(tmp_path):
    shutil.copytree(MATH, tmp_path, dirs_exist_ok=True)
    onto = assay(tmp_path, "convert", "EVAL.yaml", "-o", "EVAL.jsonl")  # sidecar EVAL.yaml
    assert onto.returncode == 2 and "EVAL.yaml" in onto.stderr
    (tmp_path / "elsewhere").mkdir()
    moved = assay(tmp_path, "convert", "EVAL.yaml", "-o", "elsewhere/cases.jsonl")
    assert moved.returncode == 2 and "prompt file ./prompts/quality.md not found" in moved.stderr
    assert not (tmp_path / "elsewhere" / "cases.jsonl").exists()
    (tmp_path / "bad.yaml").write_text("evalcases:\n  - {id: a}\n")
    bad = assay(tmp_path, "convert", "bad.yaml")
    assert bad.returncode == 2 and "bad.yaml:2:5" in bad.stderr


def test_convert_results_to_yaml(tmp_path):
    rows = [{"eval_id": "a", "score": 1.0, "hits": ["x"]}, {"eval_id": "b", "score": 0.5}]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = assay(tmp_path, "convert", "results.jsonl", "-o", "results.yaml")
    assert out.returncode == 0, out.stderr
    assert list(yaml.safe_load_all((tmp_path / "results.yaml").read_text())) == rows


HOSTILE_TEXT = ["a: b # c", "*anchor", "&a x", "!!python/object/apply:os.system ['x']",
                "- x", "? x", "'q\"", "null", "yes", "1e3", "--- x\n...\n", " lead\nline",
                "tab\tx\n", "a\x85b", "first\x85\nsecond\n", "a\u2028b", "\ufeffx"]
"""Text a YAML writer could turn into a tag, an anchor, another type or other text; NEL
(U+0085) was read back as a line break (``a b``)."""


def test_convert_writes_every_text_as_itself(tmp_path):
    from assay.authoring.convert import convert
    from assay.report.files import row_yaml

    rows = [{"id": f"c{i}{text}", "input": text, "expected_outcome": text}
            for i, text in enumerate(HOSTILE_TEXT)]
    source = tmp_path / "hostile.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    written = convert(source)  # refused, nothing kept, while NEL came back as a space
    assert yaml.safe_load(written[0].read_text(encoding="utf-8"))["evalcases"] == rows
    results = [{"eval_id": text, "score": 0.5, "answer": text} for text in HOSTILE_TEXT]
    text = b"".join(row_yaml(row, i == 0) for i, row in enumerate(results))
    assert list(yaml.safe_load_all(text.decode())) == results
    from assay.authoring.rubrics import with_rubrics

    drafted = [{"id": "r", "expected_outcome": text} for text in HOSTILE_TEXT]
    for suite in ("evalcases:\n  - id: a\n    input: q\n",  # the rubrics inserted
                  "evalcases:\n  - {id: a, input: q}\n"):  # the file written anew
        (tmp_path / "EVAL.yaml").write_text(suite)
        made = yaml.safe_load(with_rubrics(tmp_path / "EVAL.yaml", {"a": drafted}))
        assert made["evalcases"][0]["rubrics"] == drafted
    from assay.cli.align import _config_text

    aligned = {"type": "llm_judge", "examples": HOSTILE_TEXT}  # an aligned judge's file
    assert yaml.safe_load(_config_text(aligned, tmp_path / "judge.yaml")) == aligned


# -- assay generate rubrics --------------------------------------------------------------------


DRAFT = {"rubrics": [
    {"id": "names-paris", "expected_outcome": "Names Paris", "weight": 2, "required": True},
    {"id": "one-sentence", "expected_outcome": "Answers in one sentence", "weight": 1,
     "required": False}]}


def test_generate_rubrics(tmp_path, mock_server):
    suite = tmp_path / "EVAL.yaml"
    bad = {"rubrics": [DRAFT["rubrics"][0], DRAFT["rubrics"][0]]}  # a repeated id: re-asked
    suite.write_text(textwrap.dedent(f"""
        # keep this comment
        execution:
          evaluators: [contains]
        evalcases:
          - id: capital
            expected_outcome: 'Names Paris. <<mock-seq:{json.dumps([bad, DRAFT])}>>'
            input: What is the capital of France?
          - id: done
            expected_outcome: x
            input: y
            rubrics: [Already has rubrics]
          - id: no-outcome
            input: z
        """))
    printed = assay(tmp_path, "generate", "rubrics", "EVAL.yaml", "--judge-model",
                    f"{mock_server.url}#judge")
    assert printed.returncode == 0, printed.stderr
    assert "# capital" in printed.stdout and "# done" not in printed.stdout
    assert "id: names-paris" in printed.stdout
    written = assay(tmp_path, "generate", "rubrics", "EVAL.yaml", "--judge-model",
                    f"{mock_server.url}#judge", "-o", "drafted.yaml")
    assert written.returncode == 0, written.stderr
    text = (tmp_path / "drafted.yaml").read_text()
    assert text.startswith("\n# keep this comment") and suite.read_text() != text
    drafted = load_suite(tmp_path / "drafted.yaml", False)
    rubric = next(e for e in drafted.cases[0].evaluators or [] if e.type == "rubric")
    assert [(r.id, r.weight, r.required) for r in rubric.rubrics] == [  # type: ignore[attr-defined]
        ("names-paris", 2.0, True), ("one-sentence", 1.0, False)]
    unknown = assay(tmp_path, "generate", "rubrics", "EVAL.yaml", "--case", "nope")
    assert unknown.returncode == 2 and "--case nope: not a case" in unknown.stderr


def test_generate_rubrics_keeps_the_drafts_when_one_case_fails(tmp_path, mock_server):
    suite = tmp_path / "EVAL.yaml"
    suite.write_text(textwrap.dedent(f"""
        evalcases:
          - id: capital
            expected_outcome: 'Names Paris. <<mock:{json.dumps(DRAFT)}>>'
            input: What is the capital of France?
          - id: nonsense
            expected_outcome: 'Anything. <<mock-raw:no rubrics here, only prose>>'
            input: y
          - id: river
            expected_outcome: 'Names the Seine. <<mock:{json.dumps(DRAFT)}>>'
            input: Which river runs through Paris?
        """))
    model = f"{mock_server.url}#judge"
    printed = assay(tmp_path, "generate", "rubrics", "EVAL.yaml", "--judge-model", model)
    assert printed.returncode == 1, printed.stderr
    assert "# capital" in printed.stdout and "# river" in printed.stdout
    assert "# nonsense" not in printed.stdout
    assert "case 'nonsense': the judge gave no usable rubrics" in printed.stderr
    written = assay(tmp_path, "generate", "rubrics", "EVAL.yaml", "--judge-model", model,
                    "-o", "drafted.yaml")
    assert written.returncode == 1, written.stderr
    assert "case 'nonsense'" in written.stderr and "1 case(s) have no rubrics" in written.stderr
    drafted = load_suite(tmp_path / "drafted.yaml", False)
    rubrics = {c.case.id: [e for e in c.evaluators or [] if e.type == "rubric"]
               for c in drafted.cases}
    assert [len(r) for r in rubrics.values()] == [1, 0, 1]
    assert [i.id for i in rubrics["river"][0].rubrics] == [  # type: ignore[attr-defined]
        "names-paris", "one-sentence"]


def test_generate_rubrics_writes_nothing_when_every_case_fails(tmp_path, mock_server):
    (tmp_path / "EVAL.yaml").write_text(textwrap.dedent("""
        evalcases:
          - id: nonsense
            expected_outcome: 'Anything. <<mock-raw:prose>>'
            input: y
        """))
    out = assay(tmp_path, "generate", "rubrics", "EVAL.yaml", "--judge-model",
                f"{mock_server.url}#judge", "-o", "drafted.yaml")
    assert out.returncode == 1 and "case 'nonsense'" in out.stderr
    assert not (tmp_path / "drafted.yaml").exists()

"""The pytest plugin, used by a small test project of its own (run with pytester)."""

from __future__ import annotations

import textwrap

import pytest

# Each test starts fresh interpreters: what only a new process shows.
pytestmark = pytest.mark.process

pytest_plugins = ["pytester"]

ONE = "1 evaluator score: 1 value, 0 errors, 0 not applicable;"
"""A test's one evaluator score with a value, counted as a run's scores are."""


def test_assertions_failures_and_judge_errors(pytester: pytest.Pytester, mock_model: str):
    pytester.makepyfile(test_agent=textwrap.dedent(f'''
        from assay import Case, ExactMatch, SemanticSimilarity
        from assay.integrations.pytest_plugin import assert_passes

        MODEL = {mock_model!r}

        def test_exact():
            assert_passes(ExactMatch(), Case(id="a", expected_output="Paris"), "Paris")

        def test_wrong_answer():
            assert_passes(ExactMatch(), Case(id="b", expected_output="Paris"), "Rome")

        def test_similar_enough():
            assert_passes(SemanticSimilarity(threshold=0.5),
                          Case(id="c", expected_output="the capital is Paris"),
                          "the capital is Rome", judge_model=MODEL)

        def test_judge_unusable():
            assert_passes(SemanticSimilarity(), Case(id="d", expected_output="Paris"),
                          "<<mock-raw:this is not JSON>>", judge_model=MODEL)
    '''))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1, errors=1)
    text = result.stdout.str()
    assert "exact_match scored 0.000 (threshold 0.800)" in text
    assert "ERROR (judge)" in text or "ERROR" in text
    assert "semantic_similarity could not judge: [judge_output_invalid]" in text
    assert "AssertionError" not in text.split("semantic_similarity could not judge")[1][:200]
    assert "assay judgements" in text
    assert f"test_agent.py::test_similar_enough: {ONE} 1 call(s)" in text
    # a judge that could not answer is counted as an error, never as a judgement like the
    # others ("1 judgement(s)"): the counts of a run's scores, in its words
    assert "test_agent.py::test_judge_unusable: 1 evaluator score: 0 values, 1 error, 0 not " \
        "applicable;" in text
    # a second run is served from the cache
    again = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    again.assert_outcomes(passed=2, failed=1, errors=1)
    assert f"test_agent.py::test_similar_enough: {ONE} 0 call(s) (+1 cached)" in \
        again.stdout.str()


def test_the_summary_is_whole_under_xdist(pytester: pytest.Pytester, mock_model: str):
    """Tests judged on two pytest-xdist workers: the figures come back with their reports, so
    the summary printed by the controlling process lists every test (it printed nothing)."""
    pytester.makepyfile(**{f"test_agent_{n}": textwrap.dedent(f'''
        from assay import Case, SemanticSimilarity
        from assay.integrations.pytest_plugin import assert_passes

        def test_similar():
            assert_passes(SemanticSimilarity(threshold=0.5),
                          Case(id="{n}", expected_output="the capital is Paris"),
                          "the capital is Paris, {n}", judge_model={mock_model!r})
    ''') for n in ("one", "two")})
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(passed=2)
    text = result.stdout.str()
    assert "assay judgements" in text
    for n in ("one", "two"):
        assert f"test_agent_{n}.py::test_similar: {ONE} 1 call(s) (+0 cached)" in text
    assert "total: 2 judge call(s) (+0 from the cache)" in text


CONTAINS_PARIS = """
execution:
  evaluators:
    - type: contains
      search_text: Paris
"""
"""The head of a suite judged by one check; cases (and a target line) follow."""


def test_a_parametrised_eval_yaml(pytester: pytest.Pytester):
    pytester.makefile(".yaml", EVAL=CONTAINS_PARIS + textwrap.dedent('''
          target: agent
        evalcases:
          - id: france
            input: capital of France?
          - id: spain
            input: capital of Spain?
    '''))
    pytester.makepyfile(agent="def answer(q):\n    return 'Paris' if 'France' in q else 'Madrid'\n")
    (pytester.path / ".assay").mkdir()
    (pytester.path / ".assay" / "targets.yaml").write_text(
        "targets:\n  - name: agent\n    provider: python\n    function: agent:answer\n")
    pytester.makepyfile(test_suite=textwrap.dedent('''
        import pytest
        from assay.integrations.pytest_plugin import assert_case, suite_cases

        @pytest.mark.parametrize("item", suite_cases("EVAL.yaml"))
        def test_case(item):
            assert_case(item)
    '''))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=1, failed=1)
    text = result.stdout.str()
    assert "test_case[france] PASSED" in text and "test_case[spain] FAILED" in text
    assert "case spain fail" in text and "contains scored 0.000" in text


def test_an_unreachable_judge_is_an_error_not_a_failure(pytester: pytest.Pytester):
    """A judge that cannot be reached fails before any call, with assay's own error: that
    says nothing about the agent, so pytest reports the test as an ERROR."""
    pytester.makepyfile(test_agent=textwrap.dedent('''
        from assay import Case, SemanticSimilarity
        from assay.integrations.pytest_plugin import assert_passes

        def test_similar():
            assert_passes(SemanticSimilarity(), Case(id="a", expected_output="Paris"),
                          "Paris", judge_model="http://127.0.0.1:9/v1#judge")
    '''))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(errors=1)
    text = result.stdout.str()
    assert "ERROR (judge)" in text or "ERROR" in text
    assert "could not judge: [" in text and "127.0.0.1:9" in text


def test_suite_paths_are_read_beside_the_test_file(pytester: pytest.Pytester):
    """``pytest tests/agent`` from the project root collects the same cases as ``pytest``
    run inside tests/agent: a relative suite path is the test file's, not the directory's."""
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "EVAL.yaml").write_text(CONTAINS_PARIS + textwrap.dedent('''
        evalcases:
          - id: france
            input: capital of France?
            metadata: {output: Paris}
    '''))
    (pytester.path / "tests" / "agent").mkdir(parents=True)
    (pytester.path / "tests" / "agent" / "test_suite.py").write_text(textwrap.dedent('''
        import pytest
        from assay.integrations.pytest_plugin import assert_case, suite_cases

        @pytest.mark.parametrize("item", suite_cases("../../suites/EVAL.yaml"))
        def test_case(item):
            assert_case(item)
    '''))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "tests/agent", "-v")
    result.assert_outcomes(passed=1)
    assert "test_case[france] PASSED" in result.stdout.str()


def test_failures_show_data_with_its_escapes_made_visible_and_any_evaluator_form(
        pytester: pytest.Pytester):
    """A case id, an evaluator's name and its rationale come from the suite and the agent:
    their terminal escapes reached pytest's output raw (a screen cleared, a window titled).
    An evaluator given by its type name failed with AttributeError after judging."""
    pytester.makefile(".yaml", EVAL=textwrap.dedent('''
        evalcases:
          - id: "red\\x1b[31mcase"
            input: q
            expected_output: a
            execution:
              evaluators:
                - name: "has\\x1b]0;title\\x07"
                  type: contains
                  search_text: "zz\\x1b[2J"
    '''))
    pytester.makepyfile(test_suite=textwrap.dedent('''
        import pytest
        from assay import Case
        from assay.integrations.pytest_plugin import assert_case, assert_passes, suite_cases

        @pytest.mark.parametrize("item", suite_cases("EVAL.yaml"))
        def test_case(item):
            assert_case(item, store=":memory:", target=lambda q: "out")

        def test_by_name():
            assert_passes("exact_match", Case(id="c", expected_output="Paris"), "Paris")

        def test_by_name_failing():
            assert_passes({"type": "contains", "search_text": "Paris\\x1b[2J"},
                          Case(id="d"), "Rome")
    '''))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=1, failed=2)
    text = result.stdout.str()
    assert "\x1b" not in text
    assert "case red\\x1b[31mcase fail (score 0.000)" in text
    assert "has\\x1b]0;title\\x07 scored 0.000" in text
    assert "'zz\\x1b[2J' not found" in text
    assert "'Paris\\x1b[2J' not found" in text
    assert "AttributeError" not in text


def test_an_agent_that_fails_fails_its_test_and_a_judge_that_fails_is_an_error(
        pytester: pytest.Pytester):
    """An agent that raised, or answered what cannot be judged, was reported as an
    'ERROR (judge) ... could not judge': an error that says nothing about the agent, when it
    said everything. It is a failed test, with why."""
    pytester.makefile(".yaml", EVAL=CONTAINS_PARIS + textwrap.dedent('''
        evalcases:
          - id: france
            input: capital of France?
    '''))
    pytester.makepyfile(test_agent=textwrap.dedent('''
        import pytest
        from assay import Case, ExactMatch
        from assay.integrations.pytest_plugin import assert_case, assert_passes, suite_cases

        def crash(question):
            raise RuntimeError("the agent crashed")

        class Unprintable:
            def __str__(self):
                raise RuntimeError("no text")

        @pytest.mark.parametrize("item", suite_cases("EVAL.yaml"))
        def test_crashing_agent(item):
            assert_case(item, store=":memory:", target=crash)

        @pytest.mark.parametrize("item", suite_cases("EVAL.yaml"))
        def test_unjudgeable_answer(item):
            assert_case(item, store=":memory:", target=lambda q: Unprintable())

        def test_unjudgeable_output():
            assert_passes(ExactMatch(), Case(id="a", expected_output="Paris"), Unprintable())

        def test_judge_unreachable():
            assert_passes({"type": "semantic_similarity"}, Case(id="b", expected_output="x"),
                          "x", judge_model="http://127.0.0.1:9/v1#judge")
    '''))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(failed=3, errors=1)
    text = result.stdout.str()
    assert "case france: the agent failed [target_failed]: agent function raised " \
        "RuntimeError: the agent crashed" in text
    assert "case france: the agent failed [invalid_output]: agent output is not JSON data: " \
        "a Unprintable object" in text
    assert "case a: the agent failed [invalid_output]" in text
    assert "ERROR (judge) test_agent.py::test_judge_unreachable" in text
    assert "ERROR (judge) test_agent.py::test_crashing" not in text


def test_a_data_file_suite_cases_cannot_read_is_one_line_at_collection(
        pytester: pytest.Pytester):
    """docs/how-to/pytest.md's ``suite_cases("rows.csv", columns={"input": "q"})`` with a
    column the file lacks: the collection error was a traceback through assay's loaders,
    the reason at its end; it is the reason, naming the file, the row and the column."""
    pytester.makefile(".csv", rows="id,q,expected_output\na,hello,Paris\n")
    pytester.makepyfile(test_rows=textwrap.dedent('''
        import pytest
        from assay.integrations.pytest_plugin import suite_cases

        @pytest.mark.parametrize("item", suite_cases("rows.csv", columns={"input": "qq"}))
        def test_row(item):
            assert item.item.case.input
    '''))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    text = result.stdout.str()
    assert "suite_cases('rows.csv'): row 0 (" in text and "rows.csv:2): no column 'qq'" in text
    assert "dataset.py" not in text and "Traceback" not in text, text

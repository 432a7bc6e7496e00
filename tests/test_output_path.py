"""target_output_key resolution, number normalisation, line-by-line mode, exact/contains."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from assay.errors import EvaluationError
from assay.judges import Contains, EvalContext, ExactMatch, build
from assay.judges.output_path import (
    Comparison,
    line_by_line,
    pair_lines,
    path_tokens,
    resolve_output,
    resolve_path,
    select,
    split_lines,
)
from assay.llm import EngineConfig, JudgeEngine
from assay.types.case import Case
from assay.types.execution import Execution

OUTPUT = {"answer": "Paris", "items": [{"name": "a", "n": 1}, {"name": "b", "n": 2}],
          "meta": {"lang": "en", "score": 3}}


@pytest.fixture
def ctx() -> Iterator[EvalContext]:
    yield EvalContext(JudgeEngine(EngineConfig(cache_mode="off")))


async def run(evaluator: Any, ctx: EvalContext, output: Any, expected: Any = None) -> Any:
    case = Case(id="c1", expected_output=expected)
    return await evaluator.evaluate(case, Execution(output=output), ctx)


# -- paths ---------------------------------------------------------------------------------


def test_tokens_split_names_and_indices() -> None:
    assert path_tokens("items[0].name") == ["items", 0, "name"]
    assert path_tokens("a.b.c") == ["a", "b", "c"]
    assert path_tokens("grid[1][2]") == ["grid", 1, 2]


def test_resolve_nested_paths() -> None:
    assert resolve_path(OUTPUT, "answer") == "Paris"
    assert resolve_path(OUTPUT, "items[1].name") == "b"
    assert resolve_path(OUTPUT, "meta.lang") == "en"
    assert resolve_path({"grid": [[1, 2], [3, 4]]}, "grid[1][0]") == 3


def test_missing_key_names_path_and_existing_keys() -> None:
    with pytest.raises(EvaluationError) as info:
        resolve_path(OUTPUT, "meta.language")
    assert info.value.code == "target_output_key_not_found"
    message = info.value.message
    assert "'meta.language'" in message
    assert "available keys: lang, score" in message
    assert "at meta" in message


def test_missing_top_level_key_lists_top_level_keys() -> None:
    with pytest.raises(EvaluationError) as info:
        resolve_path(OUTPUT, "result")
    assert "at the top level" in info.value.message
    assert "answer, items, meta" in info.value.message


def test_index_out_of_range_says_how_many_items() -> None:
    with pytest.raises(EvaluationError) as info:
        resolve_path(OUTPUT, "items[5].name")
    assert info.value.code == "target_output_key_not_found"
    assert "2 item(s), indices 0-1" in info.value.message


def test_name_on_list_and_index_on_dict_are_not_found() -> None:
    with pytest.raises(EvaluationError, match=r"target_output_key 'items\.0'"):
        resolve_path(OUTPUT, "items.0")
    with pytest.raises(EvaluationError, match="available keys"):
        resolve_path({"0": "x"}, "[0]")
    with pytest.raises(EvaluationError, match="it is a str"):
        resolve_path(OUTPUT, "answer.text")


def test_whole_output_and_list_of_keys() -> None:
    assert select(OUTPUT, "*") is OUTPUT
    assert select(OUTPUT, ["answer", "meta.lang"]) == {"answer": "Paris", "meta.lang": "en"}
    with pytest.raises(EvaluationError) as info:
        select(["not", "an", "object"], ["a", "b"])
    assert info.value.code == "invalid_actual_output"


def test_expected_json_string_is_parsed_only_with_a_key() -> None:
    text = '{"answer": "Paris", "n": 1}'
    assert select(text, "*", "expected") == text
    assert select(text, "answer", "expected") == "Paris"
    with pytest.raises(EvaluationError) as info:
        select("not json", "answer", "expected")
    assert info.value.code == "invalid_expected_output"


def test_resolved_numbers_keep_their_type() -> None:
    # an integer stays an integer: a float would lose 10**16 + 1, and print 5 as "5.0"
    assert type(resolve_output({"n": 2}, "n")) is int
    assert resolve_output({"n": 10**16 + 1}, "n") == 10**16 + 1
    assert resolve_output({"a": [1, 2.5, True]}, "*") == {"a": [1, 2.5, True]}


# -- line by line --------------------------------------------------------------------------


def test_split_drops_blank_lines() -> None:
    assert split_lines("a\n\n  \nb\n") == ["a", "b"]
    assert split_lines("a|b||c", "|") == ["a", "b", "c"]


def test_pairs_are_padded_with_empty_text() -> None:
    assert pair_lines("a\nb\nc", "a\nB") == [("a", "a"), ("b", "B"), ("c", "")]
    assert pair_lines("x", "x\ny") == [("x", "x"), ("", "y")]
    assert pair_lines("", "\n") == [("", "")]


def test_line_by_line_averages_and_keeps_each_line() -> None:
    def equal(want: Any, got: Any) -> Comparison:
        return Comparison(value=1.0 if want == got else 0.0, details={"why": "eq"})

    result = line_by_line("a\nb\nc\nd", "a\nx\nc", "\n", equal)
    assert result.value == 0.5
    lines = result.details["lines"]
    assert [line["value"] for line in lines] == [1.0, 0.0, 1.0, 0.0]
    assert lines[3] == {"line": 4, "expected": "d", "actual": "", "value": 0.0, "why": "eq"}


async def test_exact_match_line_by_line(ctx: EvalContext) -> None:
    judge = ExactMatch(line_by_line=True)
    score = await run(judge, ctx, "Alpha\nbeta\n\ngamma", "alpha\nBETA\ndelta\nepsilon")
    assert score.value == 0.5
    assert [line["value"] for line in score.details["lines"]] == [1.0, 1.0, 0.0, 0.0]
    assert score.passed is False


async def test_line_by_line_after_selecting_a_key(ctx: EvalContext) -> None:
    judge = ExactMatch(line_by_line=True, target_output_key="text", line_delimiter=";")
    score = await run(judge, ctx, {"text": "a;b;c"}, {"text": "a;b;x"})
    assert score.value == pytest.approx(2 / 3)


async def test_list_of_keys_turns_line_mode_off(ctx: EvalContext) -> None:
    judge = ExactMatch(line_by_line=True, target_output_key=["a", "b"])
    score = await run(judge, ctx, {"a": "x\ny", "b": 1, "c": 9}, {"a": "x\ny", "b": 1.0})
    assert score.value == 1.0 and "lines" not in score.details


# -- exact match ---------------------------------------------------------------------------


async def test_exact_match_strings_fold_case_unless_case_sensitive(ctx: EvalContext) -> None:
    assert (await run(ExactMatch(), ctx, "Paris", "paris")).value == 1.0
    assert (await run(ExactMatch(case_sensitive=True), ctx, "Paris", "paris")).value == 0.0
    assert (await run(ExactMatch(), ctx, "Paris ", "paris")).value == 0.0


async def test_exact_match_structures_compare_as_data(ctx: EvalContext) -> None:
    score = await run(ExactMatch(), ctx, {"n": 1, "xs": [1, 2]}, {"n": 1.0, "xs": [1.0, 2]})
    assert score.value == 1.0 and score.raw is True and score.scale == "bool"
    assert (await run(ExactMatch(), ctx, {"n": "1"}, {"n": 1})).value == 0.0
    # a boolean is not a number, at the top level or nested
    assert (await run(ExactMatch(), ctx, {"n": True}, {"n": 1})).value == 0.0
    assert (await run(ExactMatch(), ctx, True, 1)).value == 0.0
    assert (await run(ExactMatch(), ctx, [True], [True])).value == 1.0


async def test_exact_match_compares_integers_exactly(ctx: EvalContext) -> None:
    # a float cannot tell these apart; an exact comparison can
    assert (await run(ExactMatch(), ctx, 10**16 + 1, 10**16)).value == 0.0
    assert (await run(ExactMatch(), ctx, {"id": 10**16 + 1}, {"id": 10**16})).value == 0.0
    assert (await run(ExactMatch(), ctx, 10**16 + 1, 10**16 + 1)).value == 1.0
    assert (await run(ExactMatch(), ctx, 5, 5.0)).value == 1.0


async def test_exact_match_a_string_on_either_side_compares_as_text(ctx: EvalContext) -> None:
    assert (await run(ExactMatch(), ctx, "4", 4)).value == 1.0
    assert (await run(ExactMatch(), ctx, 4, "4")).value == 1.0
    assert (await run(ExactMatch(), ctx, "10000000000000001", 10**16 + 1)).value == 1.0
    assert (await run(ExactMatch(), ctx, "10000000000000000", 10**16 + 1)).value == 0.0
    assert (await run(ExactMatch(), ctx, 4, "4.0")).value == 0.0  # 4's text is "4"
    judge = ExactMatch(target_output_key="n")
    assert (await run(judge, ctx, {"n": 7}, {"n": "7"})).value == 1.0


async def test_contains_and_regex_read_an_integer_as_its_own_text(ctx: EvalContext) -> None:
    assert (await run(Contains(search_text="10000000000000001"), ctx, 10**16 + 1)).value == 1.0
    assert (await run(Contains(search_text=".0"), ctx, 1234)).value == 0.0
    regex = build({"type": "regex", "pattern": "^5$"})
    assert (await run(regex, ctx, 5)).value == 1.0


async def test_exact_match_negated_and_target_key(ctx: EvalContext) -> None:
    judge = ExactMatch(negated=True, target_output_key="answer")
    assert (await run(judge, ctx, OUTPUT, {"answer": "Paris"})).value == 0.0
    assert (await run(judge, ctx, OUTPUT, {"answer": "Rome"})).value == 1.0


async def test_exact_match_expected_json_text_with_key(ctx: EvalContext) -> None:
    judge = ExactMatch(target_output_key="items[0]")
    score = await run(judge, ctx, OUTPUT, '{"items": [{"name": "a", "n": 1}]}')
    assert score.value == 1.0


async def test_missing_key_is_an_error_score_not_zero(ctx: EvalContext) -> None:
    score = await run(ExactMatch(target_output_key="meta.language"), ctx, OUTPUT,
                      {"meta": {"language": "en"}})
    assert score.value is None and score.error is not None
    assert score.error.code == "target_output_key_not_found"
    assert "lang, score" in score.error.message


async def test_actual_json_text_is_parsed_for_a_key(ctx: EvalContext) -> None:
    judge = ExactMatch(target_output_key="answer")
    assert (await run(judge, ctx, '{"answer": "Paris"}', {"answer": "paris"})).value == 1.0
    bad = await run(judge, ctx, "Paris", {"answer": "Paris"})
    assert bad.error is not None and bad.error.code == "invalid_actual_output"


async def test_missing_expected_output_is_an_error(ctx: EvalContext) -> None:
    score = await run(ExactMatch(), ctx, "x", None)
    assert score.error is not None and score.error.code == "missing_expected_output"
    assert (await run(ExactMatch(expected="x"), ctx, "X", None)).value == 1.0


# -- contains ------------------------------------------------------------------------------


async def test_contains_variants(ctx: EvalContext) -> None:
    assert (await run(Contains(search_text="PAR"), ctx, "Paris")).value == 1.0
    assert (await run(Contains(search_text="PAR", case_sensitive=True), ctx, "Paris")
            ).value == 0.0
    assert (await run(Contains(search_text="rome", negated=True), ctx, "Paris")).value == 1.0
    assert (await run(Contains(search_text="paris", negated=True), ctx, "Paris")).value == 0.0
    nested = Contains(search_text="en", target_output_key="meta.lang")
    assert (await run(nested, ctx, OUTPUT)).value == 1.0


async def test_contains_uses_python_str_of_structures(ctx: EvalContext) -> None:
    # str() of a dict, each number written as itself
    assert (await run(Contains(search_text="'n': 1}"), ctx, {"n": 1})).value == 1.0
    assert (await run(Contains(search_text="'n': 1.0"), ctx, {"n": 1})).value == 0.0
    assert (await run(Contains(search_text="x"), ctx, None)).value == 0.0


async def test_contains_line_by_line_scores_each_actual_line(ctx: EvalContext) -> None:
    score = await run(Contains(search_text="ok", line_by_line=True), ctx, "ok 1\nfail\nok 2\n")
    assert score.value == pytest.approx(2 / 3)


# -- config --------------------------------------------------------------------------------


def test_camel_case_config_and_bad_keys_fail_at_build() -> None:
    judge = build({"type": "exact_match", "targetOutputKey": "a.b", "caseSensitive": True,
                   "lineByLineEvaluator": True, "expectedOutput": "x"})
    assert judge.target_output_key == "a.b" and judge.case_sensitive and judge.line_by_line
    assert judge.expected == "x"
    for bad in ("", "..", ["*", "a"], []):
        with pytest.raises(EvaluationError) as info:
            build({"type": "exact_match", "target_output_key": bad})
        assert info.value.code == "invalid_evaluator_config"
    with pytest.raises(EvaluationError, match="line_delimiter"):
        build({"type": "contains", "search_text": "x", "line_delimiter": ""})


async def test_contains_takes_its_search_text_from_case_metadata():
    from assay.judges import Contains, EvalContext
    from assay.llm import EngineConfig, JudgeEngine
    from assay.types.case import Case
    from assay.types.execution import Execution

    ctx = EvalContext(JudgeEngine(EngineConfig(cache_mode="off")))
    judge = Contains()
    hit = await judge.evaluate(Case(id="a", metadata={"search_text": "Paris"}),
                               Execution(output="It is Paris."), ctx)
    miss = await judge.evaluate(Case(id="b", metadata={"search_text": "Rome"}),
                                Execution(output="It is Paris."), ctx)
    none = await judge.evaluate(Case(id="c"), Execution(output="It is Paris."), ctx)
    assert hit.value == 1.0 and miss.value == 0.0
    assert none.error is not None and none.error.code == "missing_search_text"
    assert judge.search_text is None  # the shared evaluator was not changed

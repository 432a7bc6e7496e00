"""JSON similarity: each leaf rule against hand-computed values, and the worked example."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from assay.judges import EvalContext, build
from assay.judges.deterministic.json_similarity import (
    JsonSimilarity,
    compare,
    count_leaves,
    levenshtein,
    similarity,
    string_similarity,
)
from assay.llm import EngineConfig, JudgeEngine
from assay.types.case import Case
from assay.types.execution import Execution

EXPECTED = {"a": 10, "b": "hallo", "c": [1, 2, 3], "x": True, "missing": {"k": 1, "j": 2}}
ACTUAL = {"a": 8, "b": "hello", "c": [1, 2], "x": True}


@pytest.fixture
def ctx() -> Iterator[EvalContext]:
    yield EvalContext(JudgeEngine(EngineConfig(cache_mode="off")))


async def run(judge: Any, ctx: EvalContext, output: Any, expected: Any) -> Any:
    return await judge.evaluate(Case(id="c", expected_output=expected),
                                Execution(output=output), ctx)


async def test_worked_example_scores_exactly_0_575(ctx: EvalContext) -> None:
    # 0.8 (a: 1 - 2/10) + 0.8 (b: 1 - 1/5) + 2 of 3 (c) + 1 (x) + 0 of 2 (missing) = 4.6 / 8
    score = await run(JsonSimilarity(), ctx, ACTUAL, EXPECTED)
    assert score.value == 0.575
    assert score.details["matched_leaves"] == pytest.approx(4.6)
    assert score.details["total_leaves"] == 8
    assert score.raw == 0.575 and score.passed is False
    assert score.details["expected"]["a"] == 10.0


@pytest.mark.parametrize(("left", "right", "distance"), [
    ("", "", 0), ("abc", "", 3), ("", "ab", 2), ("kitten", "sitting", 3),
    ("flaw", "lawn", 2), ("hallo", "hello", 1), ("same", "same", 0), ("ab", "ba", 2),
])
def test_levenshtein(left: str, right: str, distance: int) -> None:
    assert levenshtein(left, right) == distance
    assert levenshtein(right, left) == distance


def test_string_similarity() -> None:
    assert string_similarity("", "") == 1.0
    assert string_similarity("kitten", "sitting") == pytest.approx(1 - 3 / 7)
    assert string_similarity("abc", "") == 0.0
    assert compare("", "x") == (0.0, 1)


def test_numbers_by_relative_error() -> None:
    assert compare(10, 8) == (pytest.approx(0.8), 1)
    assert compare(10, 12.5) == (pytest.approx(0.75), 1)
    assert compare(-4, -5) == (pytest.approx(0.75), 1)
    assert compare(10, 25) == (0.0, 1)       # error of 150% clamps to 0
    assert compare(10, -10) == (0.0, 1)
    assert compare(3, 3.0) == (1.0, 1)



def test_integers_are_compared_exactly() -> None:
    # a float cannot tell 10**16 + 1 from 10**16: different integers never earn the point
    earned, _ = compare(10**16 + 1, 10**16)
    assert earned < 1.0
    assert compare(10**16 + 1, 10**16 + 1) == (1.0, 1)
    assert compare(10**400, 10**400 + 1)[0] < 1.0
    assert compare(10**400, 2.5) == (0.0, 1)  # beyond any float, and no overflow
    assert compare(5, float("nan")) == (0.0, 1)
    assert similarity({"id": 10**16 + 1}, {"id": 10**16})[0] < 1.0


def test_expected_zero_needs_actual_zero() -> None:
    assert compare(0, 0.0) == (1.0, 1)
    assert compare(0, 1e-13) == (1.0, 1)
    assert compare(0.0, 0.001) == (0.0, 1)
    assert compare(1e-13, 5) == (0.0, 1)     # expected counts as zero too


def test_type_mismatch_forfeits_all_leaves_below() -> None:
    assert compare({"a": 1, "b": [1, 2]}, "text") == (0.0, 3)
    assert compare("1", 1) == (0.0, 1)
    assert compare(True, 1) == (0.0, 1)      # a bool is not a number here
    assert compare([1, 2], {"0": 1}) == (0.0, 2)


def test_dicts_count_only_expected_keys() -> None:
    assert compare({"a": "x"}, {"a": "x", "extra": 1, "more": [1, 2]}) == (1.0, 1)
    assert compare({"a": "x", "b": {"c": 1, "d": 2}}, {"a": "x"}) == (1.0, 3)


def test_lists_pair_by_position() -> None:
    assert compare([1, 2, 3], [1, 2]) == (2.0, 3)
    assert compare([1, 2], [1, 2, 3, 4]) == (2.0, 2)          # extra actual items are free
    assert compare(["a", "b"], ["b", "a"]) == (0.0, 2)
    assert compare([[1, 2], {"k": "v"}], [[1]]) == (1.0, 3)   # missing tail keeps its leaves


def test_bools_and_other_values() -> None:
    assert compare(True, True) == (1.0, 1)
    assert compare(True, False) == (0.0, 1)
    assert compare(None, None) == (1.0, 1)
    assert compare({"a": None}, {"a": "None"}) == (0.0, 1)     # types differ first


def test_empty_containers_count_no_leaves() -> None:
    assert count_leaves({}) == 0 and count_leaves([]) == 0
    assert count_leaves({"a": [], "b": {}, "c": [1, [2, {"d": 3}]]}) == 3
    assert similarity({}, {"anything": 1}) == (1.0, 0.0, 0)
    assert similarity([], []) == (1.0, 0.0, 0)
    assert similarity({"a": {}}, {"a": "x"}) == (1.0, 0.0, 0)   # mismatch over zero leaves


async def test_evaluator_with_target_key_and_json_text(ctx: EvalContext) -> None:
    judge = build({"type": "json_similarity", "targetOutputKey": "result"})
    score = await run(judge, ctx, {"result": {"a": 8}, "noise": 1}, '{"result": {"a": 10}}')
    assert score.value == pytest.approx(0.8)


async def test_evaluator_expected_from_config_and_threshold(ctx: EvalContext) -> None:
    judge = JsonSimilarity(expected={"a": 10, "b": "x"}, threshold=0.9)
    score = await run(judge, ctx, {"a": 9, "b": "x"}, None)
    assert score.value == pytest.approx(0.95) and score.passed is True


async def test_evaluator_line_by_line_compares_lines_as_strings(ctx: EvalContext) -> None:
    judge = JsonSimilarity(line_by_line=True)
    score = await run(judge, ctx, "hello\nworld", "hallo\nworld\nextra")
    # lines: 0.8, 1.0, and "extra" vs "" = 0
    assert score.value == pytest.approx((0.8 + 1.0 + 0.0) / 3)
    assert score.details["lines"][0]["total_leaves"] == 1

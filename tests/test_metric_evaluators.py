"""Metric evaluators: field accuracy by path with exact, numeric and date matching; latency,
cost and token budgets; and missing measurements as error scores, never silent zeros."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from assay.errors import EvaluationError
from assay.judges import EvalContext, build
from assay.judges.deterministic.metrics import lookup, parse_date, strptime_format
from assay.types.case import Case
from assay.types.execution import Execution, TokenUsage

EXPECTED = {"invoice": {"number": "INV-7", "total": 100.0, "date": "2024-03-05",
                        "paid": True},
            "lines": [{"sku": "A1", "qty": 2}], "note": "thanks"}


async def _score(config: dict[str, Any], output: Any, engine_factory,  # type: ignore[no-untyped-def]
                 expected: Any = EXPECTED, **execution: Any):
    evaluator = build(config)
    return await evaluator.evaluate(Case(id="m", expected_output=expected),
                                    Execution(output=output, **execution),
                                    EvalContext(engine_factory()))


def test_lookup_dot_and_bracket_paths():
    assert lookup(EXPECTED, "invoice.number") == "INV-7"
    assert lookup(EXPECTED, "lines.0.sku") == "A1"
    assert lookup(EXPECTED, "lines[0].qty") == 2
    assert lookup(EXPECTED, "lines.1.sku") is not None  # the missing marker
    assert lookup(EXPECTED, "lines.1.sku") == lookup(EXPECTED, "invoice.nope")


def test_date_parsing_formats():
    want = date(2024, 3, 5)
    for text in ("2024-03-05", "2024-03-05T10:00:00Z", "03/05/2024", "5 Mar 2024",
                 "March 5, 2024", "20240305"):
        assert parse_date(text, ["%Y-%m-%d", "%m/%d/%Y", "%d %b %Y", "%B %d, %Y",
                                 "%Y%m%d"]) == want, text
    assert parse_date("05/03/2024", ["DD/MM/YYYY"]) == want
    assert strptime_format("DD-MMM-YYYY") == "%d-%b-%Y"
    assert parse_date("not a date", ["%Y"]) is None


async def test_weighted_field_accuracy_hand_computed(engine_factory):
    config = {"type": "field_accuracy", "fields": [
        {"path": "invoice.number", "weight": 2},                        # match
        {"path": "invoice.total", "match": "numeric_tolerance", "tolerance": 0.5},  # 100.4
        {"path": "invoice.date", "match": "date", "weight": 3},         # "03/05/2024" matches
        {"path": "invoice.paid"},                                       # 1 is not True
        {"path": "lines.0.qty", "weight": 4},                           # missing: required miss
        {"path": "note", "required": False, "weight": 10},              # absent: skipped
    ]}
    output = {"invoice": {"number": "INV-7", "total": "100.4", "date": "03/05/2024",
                          "paid": 1}, "lines": [{"sku": "A1"}]}
    score = await _score(config, output, engine_factory)
    # matched 2 + 1 + 3 = 6 of 2 + 1 + 3 + 1 + 4 = 11
    assert score.value == pytest.approx(6 / 11)
    assert score.passed is False
    statuses = {f["path"]: f["status"] for f in score.details["fields"]}  # type: ignore[index]
    assert statuses == {"invoice.number": "match", "invoice.total": "match",
                        "invoice.date": "match", "invoice.paid": "mismatch",
                        "lines.0.qty": "mismatch", "note": "skipped"}
    assert "lines.0.qty: missing from the output" in score.misses
    assert score.rationale == "3 of 5 fields match"


async def test_all_or_nothing_and_json_text_output(engine_factory):
    config = {"type": "field_accuracy", "aggregation": "all_or_nothing",
              "fields": [{"path": "invoice.number"}, {"path": "lines.0.sku"}]}
    good = await _score(config, '{"invoice": {"number": "INV-7"}, "lines": [{"sku": "A1"}]}',
                        engine_factory)
    assert good.value == 1.0 and good.passed is True
    one_off = await _score(config, {"invoice": {"number": "INV-8"}, "lines": [{"sku": "A1"}]},
                           engine_factory)
    assert one_off.value == 0.0 and one_off.passed is False


async def test_relative_and_absolute_tolerance(engine_factory):
    relative = {"type": "field_accuracy", "fields": [
        {"path": "invoice.total", "match": "numeric_tolerance", "tolerance": 0.05,
         "relative": True}]}
    assert (await _score(relative, {"invoice": {"total": 104.9}}, engine_factory)).value == 1.0
    assert (await _score(relative, {"invoice": {"total": 95.1}}, engine_factory)).value == 1.0
    assert (await _score(relative, {"invoice": {"total": 105.1}}, engine_factory)).value == 0.0
    absolute = {"type": "field_accuracy", "fields": [
        {"path": "invoice.total", "match": "numeric_tolerance", "tolerance": 1}]}
    assert (await _score(absolute, {"invoice": {"total": "$101"}}, engine_factory)).value == 1.0
    not_number = await _score(absolute, {"invoice": {"total": "lots"}}, engine_factory)
    assert not_number.value == 0.0 and not_number.misses == ['invoice.total: "lots" is not a '
                                                             'number']


async def test_fields_compare_integers_exactly_and_booleans_apart(engine_factory):
    expected = {"id": 10**16 + 1, "flags": {"paid": True}, "n": "10000000000000001"}
    exact = {"type": "field_accuracy", "fields": [{"path": "id"}, {"path": "flags"}]}
    score = await _score(exact, {"id": 10**16, "flags": {"paid": 1}}, engine_factory,
                         expected=expected)
    assert score.value == 0.0  # neither 10**16 nor a nested 1 is what was expected
    assert (await _score(exact, {"id": 10**16 + 1, "flags": {"paid": True}}, engine_factory,
                         expected=expected)).value == 1.0
    zero = {"type": "field_accuracy", "fields": [
        {"path": "n", "match": "numeric_tolerance", "tolerance": 0}]}
    assert (await _score(zero, {"n": 10**16}, engine_factory, expected=expected)).value == 0.0
    assert (await _score(zero, {"n": "10,000,000,000,000,001"}, engine_factory,
                         expected=expected)).value == 1.0


@pytest.mark.parametrize(("output", "expected", "code"), [
    ("plain prose", EXPECTED, "output_not_structured"),
    ({"invoice": {}}, None, "missing_expected_output"),
    ({"invoice": {}}, "not json", "expected_output_not_structured"),
    ({"x": 1}, {"other": 1}, "missing_expected_field"),
    ({"invoice": {"total": 1}}, {"invoice": {"total": "n/a"}}, "bad_expected_output"),
])
async def test_field_accuracy_data_problems_are_errors(engine_factory, output, expected, code):
    config = {"type": "field_accuracy", "fields": [
        {"path": "invoice.total", "match": "numeric_tolerance", "tolerance": 1}]}
    score = await _score(config, output, engine_factory, expected=expected)
    assert score.value is None and score.error is not None and score.error.code == code


async def test_only_absent_optional_fields_is_an_error(engine_factory):
    config = {"type": "field_accuracy", "fields": [{"path": "note", "required": False}]}
    score = await _score(config, {"other": 1}, engine_factory)
    assert score.error is not None and score.error.code == "no_fields_compared"


async def test_latency(engine_factory):
    config = {"type": "latency", "threshold_ms": 2000}
    fast = await _score(config, "x", engine_factory, latency_ms=1999.5)
    assert fast.value == 1.0 and fast.passed is True and fast.raw == 1999.5
    edge = await _score(config, "x", engine_factory, latency_ms=2000)
    assert edge.value == 1.0
    slow = await _score(config, "x", engine_factory, latency_ms=2000.1)
    assert slow.value == 0.0 and slow.passed is False
    assert slow.misses == ["took 2000.1 ms (over 2000 ms)"]
    missing = await _score(config, "x", engine_factory)
    assert missing.value is None and missing.error is not None
    assert missing.error.code == "missing_latency"


async def test_cost(engine_factory):
    config = {"type": "cost", "budget": 0.05}
    within = await _score(config, "x", engine_factory, usage=TokenUsage(cost=0.05))
    assert within.value == 1.0 and within.passed is True
    over = await _score(config, "x", engine_factory, usage=TokenUsage(cost=0.051))
    assert over.value == 0.0 and over.passed is False
    for usage in (None, TokenUsage(prompt_tokens=10)):
        missing = await _score(config, "x", engine_factory, usage=usage)
        assert missing.error is not None and missing.error.code == "missing_cost"


async def test_token_usage(engine_factory):
    usage = TokenUsage(prompt_tokens=800, completion_tokens=300)
    within = await _score({"type": "token_usage", "max_total": 1100, "max_input": 800},
                          "x", engine_factory, usage=usage)
    assert within.value == 1.0 and within.passed is True
    assert within.raw == {"input": 800, "output": 300, "total": 1100}
    over = await _score({"type": "token_usage", "max_total": 2000, "max_output": 299},
                        "x", engine_factory, usage=usage)
    assert over.value == 0.0 and over.passed is False
    assert over.misses == ["output tokens 300 > 299"]
    assert over.hits == ["total tokens 1100 <= 2000"]
    missing = await _score({"type": "token_usage", "max_total": 5}, "x", engine_factory)
    assert missing.error is not None and missing.error.code == "missing_token_usage"


@pytest.mark.parametrize(("config", "message"), [
    ({"type": "field_accuracy"}, "fields"),
    ({"type": "field_accuracy", "fields": []}, "fields"),
    ({"type": "field_accuracy", "fields": [{"path": "a", "match": "fuzzy"}]},
     "fields.0.match"),
    ({"type": "field_accuracy", "fields": [{"path": "a", "match": "numeric_tolerance"}]},
     "needs 'tolerance'"),
    ({"type": "field_accuracy", "fields": [{"path": "a", "tolerance": 1}]},
     "'tolerance' only applies"),
    ({"type": "field_accuracy", "fields": [{"path": "a", "weight": 0}]}, "add up to 0"),
    ({"type": "field_accuracy", "fields": [{"path": "a"}], "aggregation": "median"},
     "aggregation"),
    ({"type": "latency"}, "threshold_ms"),
    ({"type": "latency", "threshold_ms": -1}, "threshold_ms"),
    ({"type": "cost"}, "budget"),
    ({"type": "cost", "budget": -0.1}, "budget"),
    ({"type": "token_usage"}, "at least one of max_total, max_input, max_output"),
    ({"type": "token_usage", "max_total": -1}, "max_total"),
])
def test_bad_config_fails_at_build(config, message):
    with pytest.raises(EvaluationError) as err:
        build(config)
    assert message in err.value.message


def test_every_metric_has_a_weight():
    for config in ({"type": "latency", "threshold_ms": 1, "weight": 2},
                   {"type": "cost", "budget": 1, "weight": 2},
                   {"type": "token_usage", "max_total": 1, "weight": 2},
                   {"type": "field_accuracy", "fields": [{"path": "a"}], "weight": 2}):
        assert build(config).weight == 2

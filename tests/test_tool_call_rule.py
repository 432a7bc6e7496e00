"""One tool call, one rule: every tool evaluator (UiPath's tool_call_order, tool_call_count
and tool_call_args, AgentV's tool_trajectory in its three modes, Connexity's
expected_tool_calls) says the same of the same call, on a table of names (spaces, case, ids)
and arguments (nested partial, lists, ``any``, subset and strict)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from assay.judges import EvalContext, build
from assay.llm import EngineConfig, JudgeEngine
from assay.types.case import Case, ToolExpectation
from assay.types.execution import Execution

ARGS = {"filter": {"city": "Paris", "limit": 5}, "page": 1, "ids": [1, 2]}


@pytest.fixture
def ctx() -> Iterator[EvalContext]:
    yield EvalContext(JudgeEngine(EngineConfig(cache_mode="off")))


def called(name: str, tool_id: str | None = None) -> Execution:
    attributes: dict[str, Any] = {"tool.name": name, "input.value": json.dumps(ARGS)}
    if tool_id is not None:
        attributes["tool.id"] = tool_id
    return Execution(output="done", trace=[{"name": "agent"},
                                           {"name": name, "attributes": attributes}])


NAMES = [  # (the call's name, its tool id, the expected name, matched?)
    ("search web", None, "search_web", True),
    ("search_web", None, "search web", True),
    ("search  web!", None, "search_web", True),
    ("Search_Web", None, "search_web", False),   # case is kept: another tool
    ("search_web", "t-1", "search_web", False),  # a call with an id is named by its id
    ("search_web", "t-1", "t-1", True),
    ("fetch", None, "search_web", False),
]


def name_verdicts(expected: str) -> dict[str, dict[str, Any]]:
    """Each evaluator, configured to expect one call of ``expected`` with any arguments."""
    return {
        "tool_call_order": {"type": "tool_call_order", "tool_calls_order": [expected]},
        "tool_call_count": {"type": "tool_call_count",
                            "tool_calls_count": {expected: [">=", 1]}},
        "tool_call_args": {"type": "tool_call_args", "subset": True,
                           "tool_calls": [{"name": expected, "id": expected, "args": {}}]},
        "tool_trajectory in_order": {"type": "tool_trajectory", "mode": "in_order",
                                     "expected": [{"tool": expected}]},
        "tool_trajectory exact": {"type": "tool_trajectory", "mode": "exact",
                                  "expected": [{"tool": expected}]},
        "tool_trajectory any_order": {"type": "tool_trajectory", "mode": "any_order",
                                      "minimums": {expected: 1}},
    }


async def _value(spec: dict[str, Any], case: Case, execution: Execution,
                 ctx: EvalContext) -> float | None:
    result = await build(spec).evaluate(case, execution, ctx)
    assert result.error is None, result.error
    return result.value


@pytest.mark.parametrize(("name", "tool_id", "expected", "matched"), NAMES)
async def test_every_evaluator_names_a_call_the_same_way(ctx, name, tool_id, expected,
                                                         matched):
    execution = called(name, tool_id)
    case = Case(id="c", expected_tool_calls=[ToolExpectation(tool=expected)])
    values = {label: await _value(spec, case, execution, ctx)
              for label, spec in name_verdicts(expected).items()}
    values["expected_tool_calls"] = await _value({"type": "expected_tool_calls"}, case,
                                                 execution, ctx)
    assert values == dict.fromkeys(values, 1.0 if matched else 0.0), values


ARGUMENTS = [  # (expected arguments, subset (partial)?, matched?)
    ({"filter": {"city": "Paris"}}, True, True),          # nested, partially
    ({"filter": {"city": "Paris"}}, False, False),        # strict: all and only these
    ({"filter": {"city": "Lyon"}}, True, False),
    ({"page": 1.0}, True, True),                          # 1 == 1.0
    ({"ids": [1]}, True, False),                          # lists are equal or not
    ({"ids": [1, 2]}, True, True),
    (ARGS, False, True),
    ({"missing": None}, True, False),
    ({}, True, True),
]


@pytest.mark.parametrize(("args", "subset", "matched"), ARGUMENTS)
async def test_every_evaluator_matches_arguments_the_same_way(ctx, args, subset, matched):
    execution = called("search web")
    case = Case(id="c", expected_tool_calls=[
        ToolExpectation(tool="search_web", expected_params=args)])
    specs = {
        "tool_call_args": {"type": "tool_call_args", "subset": subset,
                           "tool_calls": [{"name": "search_web", "args": args}]},
        "expected_tool_calls": {"type": "expected_tool_calls", "subset": subset},
    }
    if subset:  # AgentV's trajectory matches arguments partially, always
        specs["tool_trajectory"] = {"type": "tool_trajectory", "mode": "in_order",
                                    "expected": [{"tool": "search_web", "args": args}]}
    values = {label: await _value(spec, case, execution, ctx) for label, spec in specs.items()}
    assert values == dict.fromkeys(values, 1.0 if matched else 0.0), values


async def test_any_arguments_match_any_call(ctx):
    spec = {"type": "tool_trajectory", "mode": "in_order",
            "expected": [{"tool": "search_web", "args": "any"}]}
    assert await _value(spec, Case(id="c"), called("search web"), ctx) == 1.0

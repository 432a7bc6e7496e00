"""A judge builds only the template variables its prompt uses, and the prompt is unchanged."""

from __future__ import annotations

import pytest

from assay.judges import build
from assay.judges.llm.llm_judge import DEFAULT_PROMPT, VARIABLES, template_values
from assay.judges.llm.templates import render, used_variables
from assay.types.case import Case
from assay.types.execution import Execution

CASE = Case(
    id="c1",
    input=[{"role": "system", "content": "be brief"},
           {"role": "user", "content": "What is the capital of France?"}],
    expected_output={"city": "Paris"},
    expected_outcomes=["names Paris", "is short"],
    guidelines=["no hedging"],
    reference_context=["Paris is the capital of France."],
    metadata={"note": "geography", "expected_messages": [{"role": "assistant",
                                                          "content": "Paris"}]},
)
EXECUTION = Execution(input=CASE.input, output="Paris, on the Seine.",
                      messages=[{"role": "assistant", "content": "Paris, on the Seine."}],
                      retrieved_context=["France's capital is Paris."])
EVERY_VARIABLE = "\n".join(f"[{name}] {{{{{name}}}}}" for name in VARIABLES)


def test_each_variable_alone_is_what_the_full_set_holds() -> None:
    full = template_values(CASE, EXECUTION)
    assert set(full) == set(VARIABLES)
    for name in VARIABLES:
        assert template_values(CASE, EXECUTION, [name]) == {name: full[name]}
    assert template_values(CASE, EXECUTION, ["not_a_variable"]) == {}


@pytest.mark.parametrize("prompt", [DEFAULT_PROMPT, EVERY_VARIABLE])
def test_a_prompt_from_its_own_variables_is_the_prompt_from_all(prompt: str) -> None:
    assert set(used_variables(prompt)) <= set(VARIABLES)
    wanted = template_values(CASE, EXECUTION, used_variables(prompt))
    assert set(wanted) == set(used_variables(prompt))
    assert render(prompt, wanted) == render(prompt, template_values(CASE, EXECUTION))


async def test_the_judges_user_prompt_builds_only_what_it_uses(monkeypatch) -> None:
    """The default prompt asks for four variables; the messages are not dumped at all."""
    from assay.judges.llm import llm_judge

    asked: list[str] = []
    real = dict(llm_judge._RAW_VALUES)
    for name, read in real.items():
        def noted(case, execution, name=name, read=read):
            asked.append(name)
            return read(case, execution)
        monkeypatch.setitem(llm_judge._RAW_VALUES, name, noted)
    judge = build({"name": "j", "type": "llm_judge"})
    prompt = await judge.user_prompt(CASE, EXECUTION)  # type: ignore[attr-defined]
    assert sorted(asked) == sorted(used_variables(DEFAULT_PROMPT))
    assert len(asked) == 4
    monkeypatch.undo()
    assert prompt == render(DEFAULT_PROMPT, template_values(CASE, EXECUTION))

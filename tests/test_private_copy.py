"""What user code is handed is its own: a copy all the way down, whatever it changes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, PrivateAttr

import assay
from assay._util.jsondata import private_copy
from assay.types.case import Case


class Inner(BaseModel):
    tags: list[str]


class Outer(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    inner: Inner
    data: dict[str, list[int]]


class WithPrivate(BaseModel):
    items: list[int]
    _seen: list[int] = PrivateAttr(default_factory=list)


def test_a_model_is_copied_all_the_way_down() -> None:
    original = Outer(name="a", inner=Inner(tags=["x"]), data={"k": [1]}, more={"z": [2]})
    copied = private_copy(original)
    assert copied == original and copied is not original
    assert copied.model_fields_set == original.model_fields_set
    copied.inner.tags.append("y")
    copied.data["k"].append(2)
    copied.__pydantic_extra__["more"]["z"].append(3)  # type: ignore[index]
    assert original.inner.tags == ["x"] and original.data == {"k": [1]}
    assert original.model_extra == {"more": {"z": [2]}}
    private = WithPrivate(items=[1])
    private._seen.append(1)
    other = private_copy(private)
    other._seen.append(2)
    other.items.append(2)
    assert private._seen == [1] and private.items == [1]


def test_an_agent_that_changes_its_case_changes_no_other_call() -> None:
    seen: list[tuple[str, list[str], dict[str, object]]] = []

    def agent(case: Case) -> str:
        seen.append((case.id, list(case.guidelines), dict(case.metadata)))
        case.guidelines.append("added by the agent")
        case.metadata["touched"] = True
        return "ok"

    rows = [{"id": "a", "input": "q", "expected_output": "ok", "guidelines": ["be brief"],
             "metadata": {"n": 1}}]
    result = assay.evaluate(rows, target=agent, evaluators=["exact_match"], repeat=3,
                            store=":memory:")
    assert result.summary.cases == 3
    assert seen == [("a", ["be brief"], {"n": 1})] * 3

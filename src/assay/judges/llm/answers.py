"""What judges answer: pydantic models with strict types.

A judge's answer comes from a model (or a script) and may be wrong in any way. Lax validation
would read ``"score": true`` as 1.0 and ``"score": "0.8"`` as 0.8, recording a score the judge
never gave; strict validation makes such an answer invalid, so it is re-asked and, if it stays
invalid, becomes an error rather than a number. Every answer model derives from
:class:`JudgeAnswer`: booleans are not numbers, strings are neither numbers nor booleans, and
NaN and the infinities (which JSON has no words for, but a lenient reader or a service's own
Python answer can hand over) are no numbers either: ``"result": Infinity`` met every
``>=`` threshold, and NaN none. Strictness changes nothing in the JSON schema the judge is
shown.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict


class JudgeAnswer(BaseModel):
    """Base of every judge answer schema: validated strictly."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False,
                              defer_build=True)  # built by its judge's first use


def _whole(value: Any) -> Any:
    # JSON Schema counts 7.0 as an integer, and so may a judge; 7.5, true and "7" stay errors.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


WholeNumber = Annotated[int, BeforeValidator(_whole)]
"""An integer in a judge's answer: whole numbers written as ``7.0`` are accepted."""

"""AgentV 4's deterministic assertions on the answer's text: one evaluator, ``text_assertion``.

AgentV 4 writes each as its own grader type (``contains``, ``icontains``, ``starts-with``,
``equals``, ``regex``, ``is-json`` and the ``-any``/``-all`` forms); the AgentV 4 suite loader
builds every one of them as this evaluator with ``check`` set to the type, so they share one
reading of the answer and one rule each, as AgentV's ``assertions.ts`` has them:

- the answer is the output as text (JSON when it is structured), as AgentV's candidate answer;
- ``contains`` and its ``-any``/``-all`` forms are case-sensitive substring tests, the ``i``
  forms lower-case both sides; ``starts-with``, ``ends-with`` and ``equals`` compare the
  trimmed texts; ``regex`` searches (``flags``: ``i``, ``m``, ``s``; ``g``, ``u`` and ``y``
  change nothing a single test sees); ``is-json`` parses the whole answer;
- the score is 1 or 0, ``negate`` turns a pass into a fail and back.

A pattern Python cannot compile is a problem of the suite, reported where it is written.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import Field, model_validator

from assay._util import jsondata
from assay.judges.base import EvalContext, Evaluator
from assay.judges.registry import register
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score

Check = Literal["contains", "contains-any", "contains-all", "icontains", "icontains-any",
                "icontains-all", "starts-with", "ends-with", "equals", "regex", "is-json"]
CHECKS: tuple[str, ...] = Check.__args__  # type: ignore[attr-defined]
"""AgentV 4's deterministic grader types, as its files spell them."""

LISTS = ("contains-any", "contains-all", "icontains-any", "icontains-all")
"""The checks whose ``value`` is a list of texts."""

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "g": 0, "u": 0, "y": 0}
"""JavaScript's regex flags as Python's; ``g``, ``u`` and ``y`` change nothing one test sees."""


@register
class TextAssertion(Evaluator):
    """1 when the answer's text passes ``check`` against ``value`` (0 when it does not; the
    other way round with ``negate``)."""

    type = "text_assertion"
    check: Check = Field(description="the AgentV 4 assertion: " + ", ".join(CHECKS))
    value: str | list[str] | None = Field(
        default=None, description="the text (a list of texts for the -any and -all checks; "
        "none for is-json)")
    flags: str | None = Field(default=None, description="regex flags: i, m, s (g, u, y "
                              "accepted and without effect)")
    negate: bool = Field(default=False, description="pass when the check fails")

    @model_validator(mode="after")
    def _value_fits(self) -> TextAssertion:
        if self.check == "is-json":
            if self.value is not None:
                raise ValueError("is-json takes no value")
        elif self.check in LISTS:
            if not isinstance(self.value, list) or not self.value or \
                    not all(isinstance(v, str) and v for v in self.value):
                raise ValueError(f"{self.check} needs value: a non-empty list of texts")
        elif not isinstance(self.value, str) or not self.value:
            raise ValueError(f"{self.check} needs value: a non-empty text")
        if self.flags is not None and self.check != "regex":
            raise ValueError("flags go with regex only")
        if self.check == "regex":
            self.pattern()  # a pattern that does not compile is refused here, located
        return self

    def pattern(self) -> re.Pattern[str]:
        """The compiled ``regex`` pattern with its flags."""
        flags = 0
        for flag in self.flags or "":
            if flag not in _FLAGS:
                raise ValueError(f"unknown regex flag {flag!r} (expected some of "
                                 f"{''.join(_FLAGS)})")
            flags |= _FLAGS[flag]
        try:
            return re.compile(str(self.value), flags)
        except re.error as exc:
            raise ValueError(f"regex {self.value!r} does not compile: {exc}") from None

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        found, said = self.test(execution.output_text())
        passed = found != self.negate
        if self.negate:
            said = f"not ({said})"
        return Score(name=self.name, value=1.0 if passed else 0.0, raw=found, scale="bool",
                     passed=passed, rationale=said, hits=[said] if passed else [],
                     misses=[] if passed else [said],
                     details={"check": self.check, "value": self.value, "negate": self.negate})

    def test(self, answer: str) -> tuple[bool, str]:
        """Whether ``answer`` passes the check (before ``negate``), and what was found, in
        AgentV's words."""
        check, value = self.check, self.value
        if check == "is-json":
            try:  # JSON.parse's JSON: NaN and Infinity are not
                jsondata.loads(answer, parse_constant=_not_json)
            except ValueError:
                return False, "Output is not valid JSON"
            return True, "Output is valid JSON"
        if check == "regex":
            found = self.pattern().search(answer) is not None
            return found, f"Output {'matches' if found else 'does not match'} pattern " \
                          f"/{value}/{self.flags or ''}"
        if check in LISTS:
            return _any_all(check, answer, [str(v) for v in value or []])
        text = str(value)
        if check in ("contains", "icontains"):
            fold = check == "icontains"
            found = (text.lower() in answer.lower()) if fold else (text in answer)
            tail = " (case-insensitive)" if fold else ""
            return found, f"Output {'contains' if found else 'does not contain'} " \
                          f"{json.dumps(text)}{tail}"
        answer, text = answer.strip(), text.strip()
        if check == "starts-with":
            found = answer.startswith(text)
            return found, f"Output {'starts' if found else 'does not start'} with " \
                          f"{json.dumps(text)}"
        if check == "ends-with":
            found = answer.endswith(text)
            return found, f"Output {'ends' if found else 'does not end'} with " \
                          f"{json.dumps(text)}"
        found = answer == text
        return found, f"Output {'equals' if found else 'does not equal'} {json.dumps(text)}"


def _not_json(word: str) -> Any:
    raise ValueError(f"{word} is not JSON")


def _any_all(check: str, answer: str, values: list[str]) -> tuple[bool, str]:
    fold = check.startswith("i")
    haystack = answer.lower() if fold else answer
    present = [v for v in values if (v.lower() if fold else v) in haystack]
    tail = " (case-insensitive)" if fold else ""
    if check.endswith("-any"):
        if present:
            return True, f"Output contains {json.dumps(present[0])}{tail}"
        return False, "Output does not contain any of: " + ", ".join(
            json.dumps(v) for v in values) + tail
    missing = [v for v in values if v not in present]
    if not missing:
        return True, f"Output contains all {len(values)} expected strings{tail}"
    return False, f"Output missing{tail}: " + ", ".join(json.dumps(v) for v in missing)


def assertion_name(check: str, value: Any) -> str:
    """The name AgentV 4 gives an unnamed assertion (``contains-Paris``, ``is-json``)."""
    if check in LISTS:
        return f"{check}-{len(value)}" if isinstance(value, list) else check
    if check == "regex" and isinstance(value, str):
        return f"regex-{value[:30]}"
    if isinstance(value, str) and value:
        return f"{check}-{value}"
    return check

"""UiPath-style strict JSON similarity, with the arithmetic done in code.

The judge model only *classifies*: for every top-level key of the expected output it says
whether the actual output has it ``identical``, ``similar``, ``different`` or ``missing``, and it
lists the extra keys. The score comes from those classifications with the penalty formula
(N = number of expected keys): missing or different costs 100/N, similar 50/N, each extra key
10/N, identical nothing; the 0-100 score is ``100 - penalty`` floored at 0, kept as ``raw``,
and ``value = raw / 100`` rounded to two places, as UiPath reports it. Models are unreliable at arithmetic; classifications are not, and
the same classifications always give the same score.

What needs no model is decided in code, and code wins over the judge:

* a key absent from the actual output is ``missing`` whatever the judge says;
* a key the judge calls ``missing`` that *is* present counts as ``different`` (the same
  penalty, so the score does not depend on which of the two mistakes it made);
* extra keys are the actual output's top-level keys that are not expected; the judge's list
  is kept in ``details`` but never scored;
* a key whose actual value equals the expected one (as data: integers exactly, ``1`` and
  ``1.0`` alike, see :func:`assay._util.jsondata.same_data`) is ``identical``
  whatever the judge says, and when every present key is equal no call is made at all: the
  rule in UiPath's documentation that identical inputs give identical outputs, kept by code.

Every disagreement is recorded in ``details["overrides"]``. When no expected key is present
at all (the output is not an object, or shares no key) every classification is known, so no
call is made. An answer that leaves a key out, classifies one twice or invents one is invalid
and goes back to the judge through the engine's bounded re-asks, then becomes an error score.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import AliasChoices, Field, field_validator, model_validator

from assay._util import jsondata
from assay._util.jsondata import same_data
from assay.errors import EvaluationError
from assay.judges.base import EvalContext
from assay.judges.llm.answers import JudgeAnswer
from assay.judges.llm.base import DATA_NOT_INSTRUCTIONS, LLMEvaluator, uipath_value
from assay.judges.llm.prompt_check import check_prompt
from assay.judges.llm.semantic_similarity import with_placeholders
from assay.judges.llm.templates import delimit, render
from assay.judges.output_path import TargetedEvaluator, require_expected
from assay.judges.registry import register
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.json import dump_json
from assay.types.score import Score

VARIABLES = ("ActualOutput", "ExpectedOutput")

Status = Literal["identical", "similar", "different", "missing"]

PENALTY: Mapping[str, int] = {"identical": 0, "similar": 50, "different": 100, "missing": 100}
"""Penalty points per expected key, divided by N when scored."""

EXTRA_PENALTY = 10
"""Penalty points per extra key, divided by N when scored."""

DEFAULT_PROMPT = """Classify every top-level key of the expected output against the actual \
output.

Expected output (ground truth):
{{ExpectedOutput}}

Actual output (the agent's answer):
{{ActualOutput}}"""

SYSTEM = """You are an impartial grader comparing two JSON objects key by key. {data}

Work through these steps:
1. Key inventory: take every top-level key of the expected output. Each one must appear \
exactly once in your answer, spelled exactly as in the expected output.
2. Key matching: an expected key is present only if the actual output has a top-level key \
with exactly the same name, character for character. If not, its status is "missing".
3. Extra keys: list the top-level keys of the actual output that the expected output lacks.
4. Content: for each key present in both, compare the two values.
   - "identical": the same value; differences of whitespace or number notation do not count.
   - "similar": the same meaning with minor differences (wording, synonyms, a small omission).
   - "different": a significantly different, wrong, contradictory or empty value.
5. Do not compute a score: it is computed from your classifications. Identical inputs must \
always receive identical classifications.

Respond with a single JSON object:
{{"keys": [{{"key": "<expected key>", "reasoning": "<one sentence>", \
"status": "identical|similar|different|missing"}}], "extra_keys": ["<key>"], \
"justification": "<brief overall summary>"}}"""


class KeyClassification(JudgeAnswer):
    """One expected key's verdict; reasoning comes before the status it justifies."""

    key: str
    reasoning: str
    status: Status


class StrictJsonVerdict(JudgeAnswer):
    """The judge's answer. Subclassed per evaluation with the keys it must classify."""

    expected_keys: ClassVar[tuple[str, ...]] = ()

    keys: list[KeyClassification]
    extra_keys: list[str] = Field(default_factory=list)
    justification: str

    @model_validator(mode="after")
    def _every_expected_key_once(self) -> StrictJsonVerdict:
        if not self.expected_keys:
            return self
        counts = Counter(k.key for k in self.keys)
        problems = []
        left_out = [k for k in self.expected_keys if k not in counts]
        if left_out:
            problems.append(f"keys not classified: {json.dumps(left_out)}")
        twice = [k for k, n in counts.items() if n > 1]
        if twice:
            problems.append(f"keys classified more than once: {json.dumps(twice)}")
        unknown = [k for k in counts if k not in self.expected_keys]
        if unknown:
            problems.append(f"not expected keys (list them in extra_keys instead): "
                            f"{json.dumps(unknown)}")
        if problems:
            raise ValueError("classify every expected key exactly once; " + "; ".join(problems)
                             + f"; the expected keys are {json.dumps(list(self.expected_keys))}")
        return self

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The schema, narrowed to this evaluation's keys so the judge cannot invent one."""
        schema = super().model_json_schema(*args, **kwargs)
        if cls.expected_keys:
            item = schema.get("$defs", {}).get(KeyClassification.__name__, {})
            if "key" in item.get("properties", {}):
                item["properties"]["key"]["enum"] = list(cls.expected_keys)
            keys = schema["properties"]["keys"]
            keys["minItems"] = keys["maxItems"] = len(cls.expected_keys)
        return schema


def verdict_for(expected_keys: Sequence[str]) -> type[StrictJsonVerdict]:
    """A verdict model that only accepts answers classifying exactly ``expected_keys``."""
    return _verdict_for(tuple(expected_keys))


@functools.lru_cache(maxsize=256)
def _verdict_for(expected_keys: tuple[str, ...]) -> type[StrictJsonVerdict]:
    # One class per key set, so its JSON schema is built once, not per call.
    return type(StrictJsonVerdict.__name__, (StrictJsonVerdict,),
                {"expected_keys": expected_keys})


def penalty(statuses: Sequence[str], extra_keys: int) -> float:
    """The total penalty (uncapped) for per-key statuses and a count of extra keys.

    Points are summed before the single division by N, so the result is as exact as floats
    allow and independent of key order.
    """
    n = len(statuses)
    if n == 0:
        raise ValueError("the penalty formula needs at least one expected key")
    return (sum(PENALTY[s] for s in statuses) + EXTRA_PENALTY * extra_keys) / n


def penalty_score(statuses: Sequence[str], extra_keys: int) -> float:
    """The 0-100 score: ``100 - penalty``, floored at 0."""
    return max(0.0, 100.0 - penalty(statuses, extra_keys))


def _decided(keys: list[str], equal: set[str], extra: list[str]) -> str:
    missing = [k for k in keys if k not in equal]
    text = f"{len(equal)} of {len(keys)} expected key(s) have equal values"
    if missing:
        text += f"; missing: {', '.join(missing)}"
    if extra:
        text += f"; extra: {', '.join(extra)}"
    return text


def as_object(value: Any) -> dict[str, Any] | None:
    """A JSON object from a dict or a string holding one; None for anything else."""
    if isinstance(value, str):
        try:
            value = jsondata.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


@register
class StrictJsonSimilarity(LLMEvaluator, TargetedEvaluator):
    """Per-key classification by the judge, scored in code with the strict penalty formula.

    ``target_output_key`` narrows both outputs first, with UiPath's rules; the keys compared
    are the top-level keys of what it selects.
    """

    type = "strict_json_similarity"
    response_name = "evaluation_response"
    tool_name = "submit_evaluation"
    prompt: str = DEFAULT_PROMPT
    expected: Any = Field(default=None,
                          validation_alias=AliasChoices("expected", "expectedOutput"))

    @field_validator("prompt")
    @classmethod
    def _placeholders(cls, prompt: str) -> str:
        check_prompt(prompt, VARIABLES, "strict_json_similarity prompt")
        return with_placeholders(prompt)

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        raw_expected = require_expected(self.name, case, self.expected)
        expected = as_object(self.expected_value(raw_expected))
        if not expected:
            raise EvaluationError(
                "invalid_expected_output",
                f"{self.name}: strict JSON similarity needs an expected output that is a JSON "
                f"object with at least one key; got {dump_json(raw_expected)[:200]}")
        actual = as_object(self.actual_value(execution)) or {}
        keys = list(expected)
        present = [k for k in keys if k in actual]
        extra = [k for k in actual if k not in expected]
        if not present:
            return self._scored(keys, extra, {}, None,
                                "no expected key is present in the actual output", None)
        equal = {k for k in present if same_data(actual[k], expected[k])}
        if len(equal) == len(present):  # nothing left for a judge to decide
            decided = {k: KeyClassification(key=k, reasoning="the values are equal",
                                            status="identical") for k in equal}
            return self._scored(keys, extra, decided, None, _decided(keys, equal, extra),
                                actual, equal=equal)
        user = render(self.prompt, {
            "ExpectedOutput": delimit("expected_output", expected),
            "ActualOutput": delimit("actual_output", actual),
        })
        result = await self.ask(ctx, SYSTEM.format(data=DATA_NOT_INSTRUCTIONS), user,
                                verdict_for(keys))
        if result.value is None:
            return self.failed(result)
        verdict = result.value
        return self._scored(keys, extra, {k.key: k for k in verdict.keys}, verdict.extra_keys,
                            verdict.justification, actual, equal=equal, usage=result.usage,
                            latency_ms=result.latency_ms, judge_model=result.model)

    def _scored(self, keys: list[str], extra: list[str],
                judged: Mapping[str, KeyClassification], judged_extra: list[str] | None,
                justification: str, actual: Mapping[str, Any] | None,
                equal: set[str] | frozenset[str] = frozenset(), **call: Any) -> Score:
        """The score for per-key verdicts, code's facts applied (``equal``: keys whose values
        are equal); ``call`` is the judge call's usage, latency and model (none when no call
        was needed)."""
        rows: list[dict[str, Any]] = []
        overrides: list[str] = []
        for key in keys:
            verdict = judged.get(key)
            status: str = verdict.status if verdict else "missing"
            reasoning = verdict.reasoning if verdict else ""
            if actual is None or key not in actual:
                if verdict and verdict.status != "missing":
                    overrides.append(f"{key}: judged {verdict.status}, absent from the output")
                status, reasoning = "missing", "absent from the actual output"
            elif key in equal:
                if status != "identical":
                    overrides.append(f"{key}: judged {status}, the values are equal; "
                                     "counted as identical")
                status = "identical"
            elif status == "missing":
                overrides.append(f"{key}: judged missing, present in the output; "
                                 "counted as different")
                status = "different"
            rows.append({"key": key, "status": status, "reasoning": reasoning})
        if judged_extra is not None and sorted(set(judged_extra)) != sorted(extra):
            overrides.append(f"extra keys: judged {json.dumps(judged_extra)}, "
                             f"computed {json.dumps(extra)}")
        statuses = [r["status"] for r in rows]
        raw = penalty_score(statuses, len(extra))
        value = uipath_value(raw)
        details: dict[str, Any] = {
            "keys": rows, "extra_keys": extra, "n": len(keys),
            "penalty": penalty(statuses, len(extra)), "overrides": overrides,
        }
        if judged_extra is not None:
            details["judged_extra_keys"] = judged_extra
        return Score(
            name=self.name, value=value, raw=raw, scale="0-100", passed=self.verdict(value),
            rationale=justification,
            hits=[r["key"] for r in rows if r["status"] == "identical"],
            misses=[f"{r['key']}: {r['status']}" for r in rows if r["status"] != "identical"]
            + [f"{k}: extra" for k in extra],
            details=details, **call)

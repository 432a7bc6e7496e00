"""UiPath-style semantic similarity: a 0-100 judgement of actual vs expected output.

The prompt uses ``{{ActualOutput}}`` and ``{{ExpectedOutput}}``; a custom prompt that lacks one
gets it appended under a heading, as UiPath does. ``target_output_key`` narrows both the output
and the expected output first, with UiPath's rules (``"answer"``, ``"a.b[0]"``, a list of keys;
see :mod:`assay.judges.output_path`), so the judge sees only the part that matters. Values are
substituted as JSON (UiPath substitutes Python ``str()``), inside delimiters the system prompt
declares to be data. The 0-100 answer is kept as ``raw``; the value is ``raw / 100`` rounded
to two places, as UiPath reports it (87.4 -> 0.87).
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field, field_validator

from assay.judges.base import EvalContext
from assay.judges.llm.answers import JudgeAnswer
from assay.judges.llm.base import DATA_NOT_INSTRUCTIONS, LLMEvaluator
from assay.judges.llm.prompt_check import check_prompt
from assay.judges.llm.templates import delimit, render
from assay.judges.output_path import TargetedEvaluator, require_expected
from assay.judges.registry import register
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score

VARIABLES = ("ActualOutput", "ExpectedOutput")

DEFAULT_PROMPT = """As an expert evaluator, analyze the semantic similarity of these JSON contents \
to determine a score from 0-100. Focus on comparing the meaning and contextual equivalence of \
corresponding fields, accounting for alternative valid expressions, synonyms, and reasonable \
variations in language while maintaining high standards for accuracy and completeness. Provide \
your score with a justification, explaining briefly and concisely why you gave that score.
----
ExpectedOutput:
{{ExpectedOutput}}
----
ActualOutput:
{{ActualOutput}}"""

SYSTEM = """You are an expert evaluator tasked with assessing text based on specific criteria. \
Respond with a numerical score from 0 to 100: 0 means the actual output does not meet the \
criterion at all, 100 means it fully meets it. {data}

Respond with a JSON object with two fields: "justification", one or two sentences on how the \
meanings agree or differ, then "score", a number from 0 to 100."""


class SimilarityVerdict(JudgeAnswer):
    """Reasoning first, then the score, so the model thinks before it commits."""

    justification: str
    score: float = Field(ge=0.0, le=100.0)


def with_placeholders(prompt: str, actual: str = "ActualOutput",
                      expected: str = "ExpectedOutput") -> str:
    """Append whichever of the two placeholders the prompt lacks, each in its own tagged
    section, as UiPath 2.14's LLM judges do (so a prompt that works there reads the same
    here): ``## Actual Output`` / ``<ActualOutput>`` ... ``</ActualOutput>``."""
    compact = prompt.replace(" ", "")
    if "{{" + actual + "}}" not in compact:
        prompt += f"\n\n## Actual Output\n<ActualOutput>\n{{{{{actual}}}}}\n</ActualOutput>"
    if "{{" + expected + "}}" not in compact:
        prompt += (f"\n\n## Expected Output\n<ExpectedOutput>\n{{{{{expected}}}}}\n"
                   "</ExpectedOutput>")
    return prompt


@register
class SemanticSimilarity(LLMEvaluator, TargetedEvaluator):
    """0-100 semantic similarity of the (selected part of the) output to the expected output,
    normalised to 0-1."""

    type = "semantic_similarity"
    response_name = "evaluation_response"
    tool_name = "submit_evaluation"
    prompt: str = DEFAULT_PROMPT
    expected: Any = Field(default=None,
                          validation_alias=AliasChoices("expected", "expectedOutput"))

    @field_validator("prompt")
    @classmethod
    def _placeholders(cls, prompt: str) -> str:
        check_prompt(prompt, VARIABLES, "semantic_similarity prompt")
        return with_placeholders(prompt)

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        expected = self.expected_value(require_expected(self.name, case, self.expected))
        user = render(self.prompt, {
            "ActualOutput": delimit("actual_output", self.actual_value(execution)),
            "ExpectedOutput": delimit("expected_output", expected),
        })
        result = await self.ask(ctx, SYSTEM.format(data=DATA_NOT_INSTRUCTIONS), user,
                                SimilarityVerdict)
        if result.value is None:
            return self.failed(result)
        return self.on_100_point_scale(result, result.value.score, result.value.justification)

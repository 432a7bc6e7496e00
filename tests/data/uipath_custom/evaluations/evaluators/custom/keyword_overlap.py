"""A custom UiPath evaluator written as UiPath's documentation shows (criteria, config and
evaluator classes), with its imports changed from ``uipath.eval`` to ``assay.integrations.uipath``:
the Jaccard overlap of the expected keywords and the words of the agent's answer."""

from pydantic import Field

from assay.integrations.uipath.evaluators import (
    BaseEvaluationCriteria,
    BaseEvaluator,
    BaseEvaluatorConfig,
)
from assay.integrations.uipath.evaluators.base_evaluator import BaseEvaluatorJustification
from assay.integrations.uipath.models import NumericEvaluationResult, WorkloadExecution


class KeywordCriteria(BaseEvaluationCriteria):
    """Criteria: the keywords a good answer uses."""

    expected_values: list[str] = Field(default_factory=list)


class KeywordConfig(BaseEvaluatorConfig[KeywordCriteria]):
    """Configuration: which output field to read, and whether case matters."""

    name: str = "KeywordOverlapEvaluator"
    field: str = "answer"
    case_sensitive: bool = False


class KeywordOverlapEvaluator(
    BaseEvaluator[KeywordCriteria, KeywordConfig, BaseEvaluatorJustification]
):
    """Jaccard similarity of the expected keywords and the answer's words."""

    async def evaluate(
        self, workload_execution: WorkloadExecution, evaluation_criteria: KeywordCriteria
    ) -> NumericEvaluationResult:
        output = workload_execution.workload_output
        text = output.get(self.evaluator_config.field, "") if isinstance(output, dict) else str(output)
        actual = {w.strip(".,!?") for w in str(text).split()}
        expected = set(evaluation_criteria.expected_values)
        if not self.evaluator_config.case_sensitive:
            actual = {w.lower() for w in actual}
            expected = {w.lower() for w in expected}
        union = actual | expected
        score = len(actual & expected) / len(union) if union else 1.0
        return NumericEvaluationResult(
            score=score,
            details=self.validate_justification(
                {"expected": str(sorted(expected)), "actual": str(sorted(actual))}),
        )

    @classmethod
    def get_evaluator_id(cls) -> str:
        return "KeywordOverlapEvaluator"

"""Which built-in judges run on a case when none are named: Databricks' default selection.

It depends on the case and what the agent did, so it is decided once the execution is known
(a predict function's trace may hold the retrieved context):

- with ground truth (``expected_response`` or ``expected_facts``): ``correctness`` and, with
  retrieved context, ``context_sufficiency``; without it: ``relevance_to_query`` and, with
  context, ``chunk_relevance``;
- with retrieved context: ``groundedness``; always: ``safety``;
- ``guideline_adherence`` when the case has guidelines, ``global_guideline_adherence`` when
  the run has global guidelines, ``document_recall`` when both document lists exist;
- no request: no built-in judge; no response: none of those that judge the response.

Judges that are not selected are absent from the case's record: no value, no error, no skip.
Evaluators that are not built-in agent judges always run.
"""

from __future__ import annotations

from assay.judges.agent.builtin import BUILT_IN
from assay.judges.agent.inputs import ground_truth, request_text, response_text
from assay.judges.base import Evaluator
from assay.suites.model import SuiteCase
from assay.traces.retrieval import retrieved_context
from assay.types.execution import Execution


def selected_types(item: SuiteCase, execution: Execution) -> set[str]:
    """The built-in judge types that apply to a case (see the module docstring)."""
    case = item.case
    if request_text(case) is None:
        return set()
    failed = execution.error is not None  # the target failed: every judge reports it
    response = failed or response_text(execution) is not None
    truth = ground_truth(case) is not None
    context = retrieved_context(execution)
    has_context = bool(context.chunks)
    chosen: set[str] = set()
    if response:
        chosen |= {"safety", "global_guideline_adherence"}
        chosen.add("correctness" if truth else "relevance_to_query")
        if has_context:
            chosen.add("groundedness")
        if case.guidelines or case.named_guidelines:
            chosen.add("guideline_adherence")
    if has_context:
        chosen.add("context_sufficiency" if truth else "chunk_relevance")
    if case.expected_retrieved_context and context.doc_uris:
        chosen.add("document_recall")
    return chosen


def default_selection(item: SuiteCase, execution: Execution,
                      evaluators: list[Evaluator]) -> list[Evaluator]:
    """``evaluators`` without the built-in agent judges that do not apply to this case."""
    chosen = selected_types(item, execution)
    return [e for e in evaluators if e.type not in BUILT_IN or e.type in chosen]

"""Which module defines each built-in evaluator type: the registry imports only the module
of a name a suite asks for, not every evaluator (about 0.1 s of start-up).

Pure data, with no imports, so reading it costs nothing. ``tests/test_registry.py`` checks it
against what importing every module registers: a new evaluator must be added here.
"""

MODULES: dict[str, str] = {
    "binary_classification": "assay.judges.classification",
    "chunk_relevance": "assay.judges.agent_judges",
    "code_judge": "assay.judges.code_judge",
    "composite": "assay.judges.composite",
    "connexity_judge": "assay.judges.connexity",
    "contains": "assay.judges.deterministic",
    "context_precision": "assay.judges.uipath_rag",
    "context_sufficiency": "assay.judges.agent_judges",
    "correctness": "assay.judges.agent_judges",
    "cost": "assay.judges.metrics",
    "csv_exact_match": "assay.judges.uipath_legacy",
    "custom_judge": "assay.judges.custom_judges",
    "document_recall": "assay.judges.agent_judges",
    "exact_match": "assay.judges.deterministic",
    "expected_tool_calls": "assay.judges.expected_tool_calls",
    "faithfulness": "assay.judges.uipath_rag",
    "field_accuracy": "assay.judges.metrics",
    "global_guideline_adherence": "assay.judges.agent_judges",
    "groundedness": "assay.judges.agent_judges",
    "guideline_adherence": "assay.judges.agent_judges",
    "json_similarity": "assay.judges.json_similarity",
    "jury": "assay.judges.jury",
    "latency": "assay.judges.metrics",
    "llm_judge": "assay.judges.llm_judge",
    "llm_judge_trajectory": "assay.judges.trajectory_judges",
    "llm_judge_trajectory_simulation": "assay.judges.trajectory_judges",
    "make_judge": "assay.judges.custom_judges",
    "multiclass_classification": "assay.judges.classification",
    "pairwise": "assay.judges.pairwise",
    "python": "assay.judges.python_scorer",
    "rating": "assay.judges.rating",
    "regex": "assay.judges.uipath_legacy",
    "relevance_to_query": "assay.judges.agent_judges",
    "rubric": "assay.judges.rubric",
    "safety": "assay.judges.agent_judges",
    "semantic_similarity": "assay.judges.semantic_similarity",
    "strict_json_similarity": "assay.judges.strict_json_similarity",
    "token_usage": "assay.judges.metrics",
    "tool_call_args": "assay.judges.tool_calls",
    "tool_call_count": "assay.judges.tool_calls",
    "tool_call_order": "assay.judges.tool_calls",
    "tool_call_output": "assay.judges.tool_calls",
    "tool_trajectory": "assay.judges.trajectory",
    "uipath_custom": "assay.compat.uipath.custom",
}
"""Evaluator type name -> the module whose import registers it."""

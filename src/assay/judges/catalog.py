"""Which module defines each built-in evaluator type: the registry imports only the module
of a name a suite asks for, not every evaluator (about 0.1 s of start-up).

Pure data, with no imports, so reading it costs nothing. ``tests/test_registry.py`` checks it
against what importing every module registers: a new evaluator must be added here.
"""

MODULES: dict[str, str] = {
    "binary_classification": "assay.judges.deterministic.classification",
    "chunk_relevance": "assay.judges.agent.builtin",
    "code_judge": "assay.judges.code.script",
    "composite": "assay.judges.combinators.composite",
    "connexity_judge": "assay.judges.llm.connexity",
    "contains": "assay.judges.deterministic.match",
    "context_precision": "assay.judges.llm.uipath_rag",
    "context_sufficiency": "assay.judges.agent.builtin",
    "correctness": "assay.judges.agent.builtin",
    "cost": "assay.judges.deterministic.metrics",
    "csv_exact_match": "assay.judges.deterministic.uipath_legacy",
    "custom_judge": "assay.judges.agent.custom",
    "document_recall": "assay.judges.agent.builtin",
    "exact_match": "assay.judges.deterministic.match",
    "expected_tool_calls": "assay.judges.deterministic.expected_tool_calls",
    "faithfulness": "assay.judges.llm.uipath_rag",
    "field_accuracy": "assay.judges.deterministic.metrics",
    "global_guideline_adherence": "assay.judges.agent.builtin",
    "groundedness": "assay.judges.agent.builtin",
    "guideline_adherence": "assay.judges.agent.builtin",
    "json_similarity": "assay.judges.deterministic.json_similarity",
    "jury": "assay.judges.combinators.jury",
    "latency": "assay.judges.deterministic.metrics",
    "llm_judge": "assay.judges.llm.llm_judge",
    "llm_judge_trajectory": "assay.judges.llm.trajectory",
    "llm_judge_trajectory_simulation": "assay.judges.llm.trajectory",
    "make_judge": "assay.judges.agent.custom",
    "multiclass_classification": "assay.judges.deterministic.classification",
    "pairwise": "assay.judges.llm.pairwise",
    "python": "assay.judges.code.python_scorer",
    "rating": "assay.judges.llm.rating",
    "regex": "assay.judges.deterministic.uipath_legacy",
    "relevance_to_query": "assay.judges.agent.builtin",
    "rubric": "assay.judges.llm.rubric",
    "safety": "assay.judges.agent.builtin",
    "semantic_similarity": "assay.judges.llm.semantic_similarity",
    "strict_json_similarity": "assay.judges.llm.strict_json_similarity",
    "token_usage": "assay.judges.deterministic.metrics",
    "tool_call_args": "assay.judges.deterministic.tool_calls",
    "tool_call_count": "assay.judges.deterministic.tool_calls",
    "tool_call_order": "assay.judges.deterministic.tool_calls",
    "tool_call_output": "assay.judges.deterministic.tool_calls",
    "tool_trajectory": "assay.judges.deterministic.trajectory",
    "uipath_custom": "assay.integrations.uipath.custom",
}
"""Evaluator type name -> the module whose import registers it."""

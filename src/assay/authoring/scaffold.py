"""``assay init``: a new folder with a suite that runs as it is.

It holds an EVAL.yaml (two cases, a deterministic check and an LLM judge with a prompt file), the
prompt, a small Python agent and ``.assay/targets.yaml`` naming the agent and its judge. The
judge is ``fake:judge``, assay's deterministic stand-in, so ``assay run EVAL.yaml`` works at
once without a key; the targets file says how to use a real model instead. Existing files are
never overwritten: a folder that already holds any of them is refused.
"""

from __future__ import annotations

from pathlib import Path

from assay.errors import ConfigError

FILES: dict[str, str] = {
    "EVAL.yaml": """\
# A suite in AgentV's EVAL.yaml format: run it with `assay run EVAL.yaml`.
description: A first assay suite
execution:
  target: agent                      # defined in .assay/targets.yaml
  evaluators:
    - name: mentions_answer          # deterministic: no model, no cost
      type: contains
      search_text: Paris
      weight: 1
    - name: quality                  # an LLM judge with a prompt file
      type: llm_judge
      prompt: ./prompts/quality.md
      weight: 2
evalcases:
  - id: capital-of-france
    expected_outcome: Names Paris as the capital of France
    input: What is the capital of France?
    expected_output: Paris is the capital of France.
  - id: river-through-paris
    expected_outcome: Names the Seine and that it flows through Paris
    input: Which river flows through Paris?
    expected_output: The Seine flows through Paris.
""",
    "prompts/quality.md": """\
Evaluate how well the candidate answer achieves the expected outcome for the question.
Use the reference answer as a gold standard: the candidate need not match it word for word.

## Question
{{question}}

## Reference answer
{{reference_answer}}

## Expected outcome
{{expected_outcome}}

## Candidate answer
{{candidate_answer}}

Return a score from 0.0 to 1.0, the hits, the misses and a short reasoning.
""",
    "agent.py": '''\
"""The agent under test: replace it with a call to your own agent."""

ANSWERS = {
    "What is the capital of France?": "Paris is the capital of France.",
    "Which river flows through Paris?": "The Seine flows through Paris.",
}


def run(question: str) -> str:
    return ANSWERS.get(question, "I do not know.")
''',
    ".assay/targets.yaml": """\
# Targets: how the agent runs, and which model judges it.
targets:
  - name: agent
    provider: python
    function: agent:run
    judge_target: judge
  # fake:judge is assay's deterministic stand-in judge, so the suite runs without a key.
  # For real judgements use a model, for example:
  #   provider: openai:gpt-4o-mini          (OPENAI_API_KEY in the environment or .env)
  #   provider: azure, endpoint: ..., api_key: ${{ AZURE_OPENAI_API_KEY }}, model: gpt-4o
  - name: judge
    provider: fake:judge
""",
    ".gitignore": ".assay/runs.db*\n.assay/results/\n",
}


def init(directory: Path) -> list[Path]:
    """Write the starter files into ``directory`` (created if needed); returns them."""
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"{directory} exists and is not a directory", code="invalid_output")
    taken = [directory / name for name in FILES if (directory / name).exists()]
    if taken:
        raise ConfigError(f"{directory} already holds {', '.join(str(p) for p in taken)}; "
                          "assay init never overwrites files (use a new folder)",
                          code="invalid_output")
    written = []
    for name, text in FILES.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written

"""``assay init``: a new folder with a suite that runs as it is.

It holds an EVAL.yaml (two cases, a deterministic check and an LLM judge with a prompt file), the
prompt, a small Python agent and ``.assay/targets.yaml`` naming the agent and its judge. The
judge is ``fake:judge``, assay's deterministic stand-in, so ``assay run EVAL.yaml`` works at
once without a key; the targets file says how to use a real model instead. Existing files are
never overwritten: a folder that already holds any of them is refused.
"""

from __future__ import annotations

import os
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
    """Write the starter files into ``directory`` (created if needed); returns them.

    Nothing is written unless every file can be: a folder that holds any of them (a symbolic
    link among them, even one to nothing, which writing would follow out of the folder), or
    whose ``prompts`` or ``.assay`` is a link or no folder, is refused first. Each file is
    created new (never through a link, never over a file that appeared meanwhile); if one
    cannot be, those already made are removed and the error names the file.
    """
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"{directory} exists and is not a directory", code="invalid_output")
    _refuse_taken(directory)
    written: list[Path] = []
    try:
        for name, text in FILES.items():
            path = directory / name
            path.parent.mkdir(parents=True, exist_ok=True)
            _create(path, text)
            written.append(path)
    except OSError as exc:
        for path in written:
            path.unlink(missing_ok=True)
        where = exc.filename if exc.filename is not None else directory
        raise ConfigError(f"cannot write {where}: {exc.strerror or exc}; none of the files "
                          "was kept", code="invalid_output") from None
    return written


def _refuse_taken(directory: Path) -> None:
    """Refuse a folder where a starter file, or a folder one goes in, is already taken."""
    taken = [directory / name for name in FILES if os.path.lexists(directory / name)]
    if taken:
        raise ConfigError(f"{directory} already holds {', '.join(str(p) for p in taken)}; "
                          "assay init never overwrites files (use a new folder)",
                          code="invalid_output")
    for folder in sorted({Path(name).parent for name in FILES} - {Path(".")}):
        path = directory / folder
        if path.is_symlink() or (os.path.lexists(path) and not path.is_dir()):
            raise ConfigError(f"{path} is {'a link' if path.is_symlink() else 'a file'}; "
                              "assay init writes only into folders of its own (use a new "
                              "folder)", code="invalid_output")


def _create(path: Path, text: str) -> None:
    """A new file holding ``text``: never a link followed, never an existing file replaced."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                 0o666)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)

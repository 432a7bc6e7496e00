"""The one way a judge engine is built from a run's options.

Every entry point that needs an engine builds it here: the runs (``assay run``,
``assay.evaluate``, ``rescore``, ``resume``), the one-case sessions (``assay.score``,
``assay judge``, the pytest plugin, the UiPath evaluators), ``assay calibrate``, the drafting
of rubrics and a chat-model target made without an engine. So each option means the same
wherever it is given:

- the cache mode: the run's ``cache`` (``--cache``), else ``$ASSAY_CACHE``, else ``use``
  (:func:`assay.types.engine_config.cache_mode`, applied by :class:`EngineConfig`);
- retries and timeouts: the run's ``retry``;
- concurrency: the run's ``llm_concurrency`` (``--max-llm-concurrency``), else its
  ``concurrency``, so a run never has more judge calls in flight than cases unless asked;
- the default model: the run's ``judge_model``, else ``$ASSAY_JUDGE_MODEL``, else the demo
  model;
- a dry run: the engine counts its calls instead of making them (the rest of a dry run is
  :mod:`assay.run.dry_run`'s).

A caller that holds an engine already (one shared by several runs, a test's) passes it on
instead; nothing else constructs :class:`JudgeEngine`.
"""

from __future__ import annotations

from typing import Any

from assay.llm.engine import JudgeEngine
from assay.types.config import RunConfig
from assay.types.engine_config import EngineConfig


def engine_config(options: RunConfig | None = None) -> EngineConfig:
    """The engine configuration ``options`` (None: every default) give."""
    options = options or RunConfig()
    fields: dict[str, Any] = {"concurrency": max(options.llm_concurrency or options.concurrency,
                                                 1),
                              "retry": options.retry, "cache_mode": options.cache,
                              "dry_run": options.dry_run}
    if options.judge_model:
        fields["default_model"] = options.judge_model
    return EngineConfig(**fields)


def build_engine(options: RunConfig | None = None) -> JudgeEngine:
    """A new engine configured by ``options`` (see the module docstring); the caller closes
    it (:meth:`JudgeEngine.aclose`)."""
    return JudgeEngine(engine_config(options))


__all__ = ["build_engine", "engine_config"]

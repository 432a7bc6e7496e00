"""A dry run: a run checked and walked through as it would go, every judge call counted
instead of made, and nothing kept.

It is asked for one way, ``RunConfig.dry_run`` (``--dry-run`` on ``assay run``, ``assay eval``
and ``assay rescore``; ``dry_run=True`` to :func:`assay.evaluate` and :func:`assay.rescore`),
and the session of the run (:class:`assay.run.evaluate._Session`) is the only code that looks
at it. Its parts, each in one place:

- **the checks** are a real run's (the data, the targets file, the evaluators, the judge
  models known, their keys present and their servers reachable, the response cache usable),
  except the targets' own preflight: no agent runs;
- **the judge engine** is built with ``EngineConfig.dry_run`` (by
  :func:`assay.llm.build.build_engine`): a request whose answer the response cache holds is
  counted as cached, since a real run would not call for it; any other is counted (calls,
  estimated tokens and cost, :class:`assay.llm.engine.DryRunEstimate`) and not made, and the
  judge reports it as not applicable (:data:`assay.llm.types.DRY_RUN`), never as an error;
- **the agents** are :func:`dry_targets`: outputs recorded beforehand (in the data, or a
  recorded target's file) are replayed as a real run replays them, so the judge requests,
  and the answers the cache holds for them, are the real run's; an agent that would have to
  run is stood in for by a blank output;
- **nothing is kept**: no run is created in the store, no output file is opened (the
  command's ``on_inputs`` is not called: nothing will be written), and the result
  (:meth:`assay.run.result.EvaluationResult.dry`) holds the run's summary and the estimate
  (``result.estimate``) under the run id :data:`DRY_RUN_ID`.
"""

from __future__ import annotations

from collections.abc import Callable

from assay.targets.base import Target
from assay.targets.resolve import TargetResolver
from assay.types.case import Case
from assay.types.execution import Execution

DRY_RUN_ID = "dry-run"
"""The run id of a dry run's records and result: no run is stored."""


class BlankOutput(Target):
    """Stands in for an agent in a dry run: the agent is not run."""

    name = "dry-run"

    async def run(self, case: Case) -> Execution:
        return Execution(input=case.input, output="")


def dry_targets(targets: TargetResolver,
                conversations: bool) -> Callable[[str | None], Target]:
    """What a dry run's runner asks for targets: the recorded outputs ``targets`` replays,
    else a blank output; a blank for everything when the suite has conversations (each turn
    would need the agent)."""
    if conversations:
        return lambda _name: BlankOutput()
    return lambda name: targets.replaying(name) or BlankOutput()


__all__ = ["DRY_RUN_ID", "BlankOutput", "dry_targets"]

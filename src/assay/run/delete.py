"""Deleting a run: the batches it left running at its providers cancelled first.

A run waiting for batch (``assay run --batch``) has judge requests at OpenAI's Batch API or
Anthropic's Message Batches, and the run store holds the only record of their ids. Deleting
the run cancels those batches first (:func:`assay.run.batch.cancel_batches`: the requests a
provider has not run yet are not billed) and deletes the files their requests were uploaded
in, then deletes what the store holds (:func:`assay.store.queries.delete_run`). ``assay
delete`` and the REST API's ``DELETE /runs/{id}`` both come here. The provider is asked as the
run's own retry policy says; a run without such batches is deleted without building a judge
engine (nothing of the environment's judge settings is needed).

A batch that cannot be cancelled (the provider is down, the key is missing) **stops the
delete**, with :class:`BatchesNotCancelled` naming each such batch by its id: deleting the run
would throw away the last record of those ids, and with it the way to cancel them, while they
run on and are billed. ``force`` deletes anyway (the batches then run to their end, at most
24 hours, each request billed once), so a provider that stays down never blocks a delete for
good; the result still names them. A file that cannot be deleted does not stop the delete:
it is named (:attr:`Deleted.files_left`). No key is ever part of what is said: the ids, the
judge model and the provider's error, with every secret the engine knows hidden.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from assay.errors import EvaluationError
from assay.llm.build import build_engine
from assay.run.batch import Cancelled, cancel_batches
from assay.run.sync import run_sync
from assay.store import queries
from assay.store.batches import run_batches
from assay.store.runs import RunStore
from assay.types.config import RunConfig
from assay.types.records import RunRecord


@dataclass
class Deleted:
    """What deleting a run did."""

    run_id: str
    deleted: bool
    """False when there was no such run (or it could not be deleted)."""
    cancelled: list[str] = field(default_factory=list)
    """The batches cancelled at their providers."""
    not_cancelled: dict[str, str] = field(default_factory=dict)
    """Batch id (a submission's token when its id is not known) -> why it could not be
    cancelled: left running at its provider (only with ``force``)."""
    files_left: dict[str, str] = field(default_factory=dict)
    """File id -> why it could not be deleted at the provider (an uploaded input file)."""

    def lines(self) -> list[str]:
        """What to tell a person: the batches cancelled, those left running and the files
        left at the provider."""
        found = [f"cancelled batch {b}" for b in self.cancelled]
        found += [f"batch {b} could not be cancelled ({why}); it runs to its end at the "
                  "provider" for b, why in self.not_cancelled.items()]
        found += [f"file {f} could not be deleted at the provider ({why}); delete it there "
                  "if it should not be kept" for f, why in self.files_left.items()]
        return found


class BatchesNotCancelled(EvaluationError):
    """The run was not deleted: some of its batches could not be cancelled."""

    def __init__(self, run_id: str, failed: dict[str, str]) -> None:
        named = "; ".join(f"{b} ({why})" for b, why in failed.items())
        super().__init__("batches_not_cancelled", (
            f"run {run_id} was not deleted: its batch(es) {named} could not be cancelled at "
            "the provider, and deleting the run would lose their ids; try again when the "
            "provider answers, or delete anyway with --force (REST: ?force=true), leaving "
            "them to run to their end and be billed"))
        self.failed = failed


async def delete_run_async(store: RunStore, run_id: str, *, force: bool = False) -> Deleted:
    """Delete the run ``run_id`` (its exact id) and everything stored for it, its unfinished
    batches cancelled at their providers first (see the module docstring for why a batch that
    cannot be cancelled stops the delete unless ``force``). Raises
    :class:`assay.store.queries.RunInUse` while the run runs, :class:`BatchesNotCancelled`."""
    run = await asyncio.to_thread(queries.deletable, store, run_id)
    if run is None:
        return Deleted(run_id, False)
    done = await _cancel(store, run)
    if done.failed and not force:
        raise BatchesNotCancelled(run_id, done.failed)
    gone = await asyncio.to_thread(queries.delete_run, store, run_id)
    return Deleted(run_id, gone, done.cancelled, done.failed, done.files_left)


async def _cancel(store: RunStore, run: RunRecord) -> Cancelled:
    """Cancel the run's unfinished batches (:func:`cancel_batches`), with an engine built
    only when it has some: a batch names its judge model, the keys are the environment's,
    the retries the run's own; no response cache is opened."""
    if not await asyncio.to_thread(run_batches, store, run.id, open_only=True):
        return Cancelled()
    engine = build_engine(RunConfig(retry=run.config.run.retry, cache="off"))
    try:
        return await cancel_batches(store, engine, run.id)
    finally:
        await engine.aclose()


def delete_run(store: RunStore, run_id: str, *, force: bool = False) -> Deleted:
    """:func:`delete_run_async` from synchronous code (the CLI, the REST API's handler)."""
    return run_sync(delete_run_async(store, run_id, force=force))


__all__ = ["BatchesNotCancelled", "Deleted", "delete_run", "delete_run_async"]

"""Runs on a Ray cluster (``executor: ray``): workers run the agents and the judges, this
process keeps the one store.

Users who outgrow one machine already run Ray (a ``ray start`` on a few hosts, KubeRay,
Anyscale); assay runs on it rather than on a scheduler of its own:

- **Workers** are Ray actors (:class:`CaseWorker`), one per CPU of the cluster by default,
  placed by Ray (a target's ``resources: {GPU: 1}`` asks for what its cases need). A pool
  grows onto nodes that join while the run runs (an autoscaler's, or a ``ray start
  --address``), looked for at most every :data:`LOOK_EVERY_S`, and never shrinks. Each
  builds, once, the same runner a local run has (:func:`assay.run.evaluate.case_runner`:
  the run's targets, judges, engine and response cache, and no store) and runs the cases it
  is sent in batches, concurrently.
- **This process** sends the cases, gets back each case's execution and scores, and stores
  and decides them exactly as a local run does (:meth:`assay.run.runner.Runner._elsewhere`):
  a case is stored once, by one writer, whatever Ray retried. A worker or node that dies
  has its batches run again on another (``max_restarts``/``max_task_retries``); a driver
  killed with ``kill -9`` is resumed with ``--resume`` like a local run, redoing only what
  was not stored.
- **Limits hold across the cluster**: one actor (:class:`ClusterLimits`) admits every call of
  a judge model, with the run's rate limits, a cluster-wide number of calls in flight
  (``ray.judge_concurrency``) and the same slowing down on 429 as a local run (it holds a
  :class:`~assay.llm.rate_limits.ModelLimiter` per model), and every run of a target
  (``ray.target_concurrency``). Ten workers never send ten times a provider's limit.

Ray is imported only here, and only when a run asks for it (``pip install 'assay[ray]'``).
The cluster's address is ``ray.address``, else ``$RAY_ADDRESS`` as Ray's own tools take it
(``ray://`` is Ray Client, a different protocol, and is refused: it is not tested).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from assay.errors import ConfigError
from assay.llm.rate_limits import Admission, ModelLimiter
from assay.run.runner import CaseExecutor
from assay.suites.model import Suite, SuiteCase
from assay.targets.base import Target, WrappedTarget
from assay.types.config import RunConfig
from assay.types.engine_config import RateLimit
from assay.types.execution import Execution
from assay.types.score import Score

TARGET_PREFIX = "target:"
"""How the limits actor names a target's runs, beside judge model names."""
BATCH_WAIT_S = 0.005
"""How long a batch waits for more cases before it is sent (cases arrive together)."""
LOOK_EVERY_S = 5.0
"""How long the live nodes the executor knows stay its answer before it reads them again
(when a batch is sent), to grow its pools onto nodes that joined. Reading them is a round
trip to Ray's GCS that grows with the cluster, too dear for every batch; a node an
autoscaler adds takes tens of seconds to come up, so noticing it a few seconds late costs
nothing."""


def ray_module() -> Any:
    """Ray, or a ConfigError that says how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError("executor: ray needs Ray: pip install 'assay[ray]'",
                          code="missing_extra") from None
    return ray


@dataclass
class Recipe:
    """What a worker needs to build the run's runner: picklable, no engine or store."""

    suite: Suite
    config: RunConfig
    given: Target | None = None
    owns_given: bool = False
    limits: Any = None
    """The cluster's :class:`ClusterLimits` actor."""
    environment: dict[str, str] = field(default_factory=dict)
    """The driver's environment variables that configure judges and agents (keys, base
    URLs, $ASSAY_*), for workers on other hosts; never stored."""


FORWARDED = ("ASSAY_", "OPENAI_", "ANTHROPIC_", "AZURE_OPENAI_", "OLLAMA_", "VLLM_",
             "LMSTUDIO_", "LLAMACPP_", "LITELLM_", "GEMINI_", "MISTRAL_", "HF_")
"""Environment variables that configure judges and agents: a worker on another host needs
them as this process has them."""


def forwarded_environment() -> dict[str, str]:
    """This process's variables that a worker needs (keys, base URLs, assay's settings).
    They travel in the workers' recipe (to Ray's object store, in memory), never to a file
    or the run store."""
    return {k: v for k, v in os.environ.items() if k.startswith(FORWARDED)}


class ClusterLimits:
    """Admission for the whole cluster: a :class:`ModelLimiter` per judge model (and per
    target), living in one Ray actor that every worker's engine asks."""

    def __init__(self, judge_concurrency: int, rate_limits: dict[str, RateLimit],
                 target_concurrency: int | None) -> None:
        self.judge_concurrency = judge_concurrency
        self.rate_limits = rate_limits
        self.target_concurrency = target_concurrency
        self.limiters: dict[str, ModelLimiter] = {}
        self.peaks: dict[str, int] = {}

    def _limiter(self, key: str) -> ModelLimiter:
        limiter = self.limiters.get(key)
        if limiter is None:
            if key.startswith(TARGET_PREFIX):
                limiter = ModelLimiter(None, self.target_concurrency or 1_000_000)
            else:
                limit = self.rate_limits.get(key) or self.rate_limits.get(key.split(":", 1)[-1])
                limiter = ModelLimiter(limit, self.judge_concurrency)
            self.limiters[key] = limiter
        return limiter

    async def acquire(self, key: str, tokens: int, timeout: float | None) -> None:
        limiter = self._limiter(key)
        await limiter.acquire(tokens, timeout)
        self.peaks[key] = max(self.peaks.get(key, 0), limiter.in_flight)

    async def release(self, key: str, throttled: bool, retry_after: float | None) -> None:
        await self._limiter(key).release(throttled=throttled, retry_after=retry_after)

    def peak(self) -> dict[str, int]:
        """The most calls (or target runs) each key had in flight at once."""
        return dict(self.peaks)


class _SharedAdmission:
    """One model's admission, asked of the cluster's limits actor (an :class:`Admission`)."""

    def __init__(self, limits: Any, key: str) -> None:
        self.limits = limits
        self.key = key

    async def acquire(self, tokens: int, timeout: float | None = None) -> None:
        await self.limits.acquire.remote(self.key, tokens, timeout)

    async def release(self, *, throttled: bool = False,
                      retry_after: float | None = None) -> None:
        await self.limits.release.remote(self.key, throttled, retry_after)


class _LimitedTarget(WrappedTarget):
    """A target whose runs the cluster admits (``ray.target_concurrency``)."""

    def __init__(self, inner: Target, admission: Admission) -> None:
        super().__init__(inner)
        self.admission = admission

    async def run(self, case: Any) -> Execution:
        await self.admission.acquire(0)
        try:
            return await self.inner.run(case)
        finally:
            await self.admission.release()

    async def run_turn(self, case: Any, messages: Any, turn: int) -> Execution:
        await self.admission.acquire(0)
        try:
            return await self.inner.run_turn(case, messages, turn)
        finally:
            await self.admission.release()

class CaseWorker:
    """A Ray actor that runs cases: the run's own runner, built once from the recipe that
    comes with every batch (a few kilobytes), so an actor Ray restarts on another node needs
    nothing else to go on."""

    def __init__(self) -> None:
        self.runner: Any = None
        self.close: Callable[[], Any] | None = None

    async def _built(self, recipe: Recipe) -> Any:
        if self.runner is None:
            from assay.run.evaluate import case_runner

            os.environ.update(recipe.environment)
            limits = recipe.limits

            def admission(name: str) -> Admission:
                return _SharedAdmission(limits, name)

            wrap: Callable[[Target], Target] | None = None
            if recipe.config.ray.target_concurrency is not None:
                def wrap(target: Target) -> Target:
                    return _LimitedTarget(target, _SharedAdmission(
                        limits, TARGET_PREFIX + target.name))

            self.runner, self.close = case_runner(recipe.suite, recipe.config, recipe.given,
                                                  recipe.owns_given, admission=admission,
                                                  wrap_target=wrap)
        return self.runner

    async def run_batch(self, recipe: Recipe,
                        batch: list[tuple[SuiteCase, int, Execution | None, dict[str, Score]]]
                        ) -> list[tuple[Execution, dict[str, Score]]]:
        """Each case's execution and scores (nothing stored: the driver stores them)."""
        runner = await self._built(recipe)

        async def one(item: SuiteCase, repeat: int, execution: Execution | None,
                      have: dict[str, Score]) -> tuple[Execution, dict[str, Score]]:
            evaluators = runner.suite.evaluators_for(item)
            if execution is not None:
                evaluators = runner.suite.evaluators_after(item, execution)
            record = await runner._run_case("ray", item, repeat, execution, evaluators, have)
            return record.execution, {s.name: s for s in record.scores}

        return list(await asyncio.gather(*(one(*job) for job in batch)))

    def where(self) -> dict[str, Any]:
        """This worker's node and process (for tests and the benchmark)."""
        ray = ray_module()
        return {"node": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}

    async def shutdown(self) -> None:
        if self.close is not None:
            await self.close()


@dataclass
class _Pool:
    """The workers of one resource request, and where the next batch goes."""

    actor: Any
    """Ray's actor class of these workers, with their options: it makes more of them."""
    workers: list[Any] = field(default_factory=list)
    next: int = 0

    def pick(self) -> Any:
        worker = self.workers[self.next % len(self.workers)]
        self.next += 1
        return worker

    def grow(self, count: int) -> None:
        """Start workers until the pool has ``count`` (it never loses one: a worker whose
        node died is Ray's to restart)."""
        while len(self.workers) < count:
            self.workers.append(self.actor.remote())


class RayExecutor(CaseExecutor):
    """Sends cases to worker actors in batches and hands each back its result."""

    def __init__(self, recipe: Recipe,
                 target_resources: Callable[[SuiteCase], dict[str, float] | None],
                 rate_limits: dict[str, RateLimit] | None = None) -> None:
        self.recipe = recipe
        self.rate_limits = dict(rate_limits or {})
        self.options = recipe.config.ray
        self.target_resources = target_resources
        self.ray: Any = None
        self.pools: dict[tuple[tuple[str, float], ...], _Pool] = {}
        self.pending: dict[tuple[tuple[str, float], ...], list[Any]] = {}
        self.flushers: dict[tuple[tuple[str, float], ...], asyncio.Task[None]] = {}
        self.deliveries: set[asyncio.Task[None]] = set()
        self.started_ray = False
        self.nodes: list[dict[str, float]] = []
        """The resources of each live node, as last read (see :data:`LOOK_EVERY_S`)."""
        self.looked = -math.inf
        """When (by :attr:`clock`) the live nodes were last read."""
        self.clock: Callable[[], float] = time.monotonic
        """Seconds, for when to read the live nodes again."""
        self.slots = 0
        """Cases in flight the default pool runs: it only grows (:meth:`capacity`)."""

    # -- the cluster ---------------------------------------------------------------------

    def start(self) -> None:
        """Join the cluster (or start a local Ray) and start the limits actor."""
        address = self.options.address or os.environ.get("RAY_ADDRESS")
        if address and address.startswith("ray://"):
            raise ConfigError(f"ray address {address!r} is Ray Client (ray://), which assay "
                              "does not support: give the cluster's GCS address (host:port), "
                              "or run assay on a node of the cluster", code="invalid_ray")
        ray = self.ray = ray_module()
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"log_to_driver": False, "include_dashboard": False,
                                      "logging_level": logging.WARNING}
            if address:
                kwargs["address"] = address
                if address.split(":", 1)[0] in ("127.0.0.1", "localhost"):
                    # A cluster on loopback: this driver joins it on loopback too (Ray
                    # would advertise the host's own address).
                    kwargs["_node_ip_address"] = "127.0.0.1"
            if self.options.runtime_env:
                kwargs["runtime_env"] = self.options.runtime_env
            try:
                ray.init(**kwargs)
            except Exception as exc:  # a cluster that is not there: one clear line
                raise ConfigError(f"cannot join the Ray cluster{f' at {address}' if address else ''}"
                                  f": {type(exc).__name__}: {exc}", code="ray_unreachable") \
                    from None
            self.started_ray = True
        self._look(now=True)
        config = self.recipe.config
        limits_cls = ray.remote(num_cpus=0)(ClusterLimits)
        self.recipe.limits = limits_cls.remote(
            self.options.judge_concurrency or config.concurrency,
            dict(self.rate_limits),
            self.options.target_concurrency)

    def capacity(self) -> int:
        """Cases in flight: each worker of the default pool runs the run's ``concurrency``.
        It grows when the pool does (nodes joined) and never shrinks; the runner asks after
        every case, so it is a number kept, not a look at the cluster."""
        return max(1, self.slots)

    def _look(self, *, now: bool = False) -> list[dict[str, float]]:
        """The live nodes' resources, read again when the last reading is older than
        :data:`LOOK_EVERY_S` (or ``now``); a new reading grows every pool (and the run's
        capacity) to what the nodes hold now."""
        if not now and self.clock() - self.looked < LOOK_EVERY_S:
            return self.nodes
        # a node that died may linger in Ray's list
        self.nodes = [n.get("Resources", {}) for n in self.ray.nodes() if n.get("Alive")]
        self.looked = self.clock()
        for key, pool in self.pools.items():
            pool.grow(self._workers(dict(key)))
        default = self._default_resources()
        pooled = self.pools.get(_key(default))
        workers = len(pooled.workers) if pooled is not None else self._workers(default)
        self.slots = max(self.slots, workers * max(1, self.recipe.config.concurrency))
        return self.nodes

    def _default_resources(self) -> dict[str, float]:
        """What a worker asks for when its case's target asks nothing (one CPU unless
        ``ray.resources`` says)."""
        return dict(self.options.resources) or {"CPU": 1.0}

    def _workers(self, resources: dict[str, float]) -> int:
        """Workers of a pool whose each asks ``resources``: ``ray.workers``, else one per CPU
        the live nodes hold; never more than the live nodes can host at once. A worker Ray
        cannot place stays pending, and the batches sent to it would wait for ever (two
        workers asking for a node's only ``agent_box`` leave one of them pending)."""
        nodes = self.nodes
        placeable = max(1, workers_that_fit(nodes, resources))
        if self.options.workers:
            return min(self.options.workers, placeable)
        return max(1, min(placeable, workers_that_fit(nodes, resources, whole_cpus=True)))

    def _unplaceable(self, resources: dict[str, float]) -> str | None:
        """Why no live node of the cluster can run a worker asking ``resources`` (None when
        one can): Ray would keep such an actor pending, and the run would wait for ever. The
        nodes last read answer; a no is checked on a fresh reading (a node may have joined)."""
        if workers_that_fit(self._look(), resources) > 0:
            return None
        nodes = self._look(now=True)
        if workers_that_fit(nodes, resources) > 0:
            return None
        asked = ", ".join(f"{k}: {v:g}" for k, v in sorted(_asked(resources).items()))
        return (f"no live node of the Ray cluster offers {{{asked}}} ({len(nodes)} live "
                "node(s)): start a node with those resources (ray start --resources ...), or "
                "change the target's resources")

    def _pool(self, resources: dict[str, float]) -> _Pool:
        key = _key(resources)
        pool = self.pools.get(key)
        if pool is None:
            ray = self.ray
            cpus = resources.get("CPU", 1.0)
            asked = {k: v for k, v in resources.items() if k not in ("CPU", "GPU", "memory")}
            actor = ray.remote(CaseWorker).options(
                num_cpus=cpus, num_gpus=resources.get("GPU", 0),
                memory=resources.get("memory"), resources=asked or None,
                max_restarts=-1, max_task_retries=-1,
                max_concurrency=max(1, self.recipe.config.concurrency))
            pool = self.pools[key] = _Pool(actor)
            pool.grow(self._workers(resources))
        return pool

    # -- cases -----------------------------------------------------------------------------

    async def run_case(self, item: SuiteCase, repeat: int, execution: Execution | None,
                       have: dict[str, Score]) -> tuple[Execution, dict[str, Score]]:
        resources = self.target_resources(item) or self._default_resources()
        key = _key(resources)
        done: asyncio.Future[tuple[Execution, dict[str, Score]]] = \
            asyncio.get_running_loop().create_future()
        batch = self.pending.setdefault(key, [])
        batch.append((item, repeat, execution, have, done))
        # a batch no bigger than what a worker runs at once, so batches spread over workers
        if len(batch) >= min(self.options.batch_size, max(1, self.recipe.config.concurrency)):
            self._send(key, resources)
        elif key not in self.flushers or self.flushers[key].done():
            self.flushers[key] = asyncio.ensure_future(self._later(key, resources))
        return await done

    async def _later(self, key: tuple[tuple[str, float], ...],
                     resources: dict[str, float]) -> None:
        await asyncio.sleep(BATCH_WAIT_S)
        self._send(key, resources)

    def _send(self, key: tuple[tuple[str, float], ...], resources: dict[str, float]) -> None:
        batch = self.pending.pop(key, [])
        if not batch:
            return
        missing = self._unplaceable(resources)
        if missing is not None:  # its actors would wait for a node for ever: each case says why
            for job in batch:
                if not job[4].done():
                    job[4].set_exception(ConfigError(missing, code="ray_resources"))
            return
        worker = self._pool(resources).pick()
        ref = worker.run_batch.remote(self.recipe, [job[:4] for job in batch])
        delivery = asyncio.ensure_future(self._deliver(ref, [job[4] for job in batch]))
        self.deliveries.add(delivery)  # kept until done: a task only weakly held may vanish
        delivery.add_done_callback(self.deliveries.discard)

    async def _deliver(self, ref: Any, futures: list[asyncio.Future[Any]]) -> None:
        try:
            results = await ref
        except BaseException as exc:  # the batch failed for good: each case says why
            for future in futures:
                if not future.done():
                    future.set_exception(_batch_failed(exc))
            return
        for future, result in zip(futures, results, strict=True):
            if not future.done():
                future.set_result(result)

    async def where(self) -> list[dict[str, Any]]:
        """Every worker's node and process."""
        return [await worker.where.remote() for pool in self.pools.values()
                for worker in pool.workers]

    async def limits_peak(self) -> dict[str, int]:
        """The most calls each judge model (and target) had in flight across the cluster."""
        peak: dict[str, int] = await self.recipe.limits.peak.remote()
        return peak

    async def close(self) -> None:
        """Stop the workers (and a Ray this process started)."""
        for flusher in self.flushers.values():
            flusher.cancel()
        ray = self.ray
        if ray is None:
            return
        for pool in self.pools.values():
            for worker in pool.workers:
                with contextlib.suppress(Exception):  # a worker that never started: killed
                    await asyncio.wait_for(worker.shutdown.remote(), SHUTDOWN_WAIT_S)
                with contextlib.suppress(Exception):
                    ray.kill(worker)
        if self.recipe.limits is not None:
            with contextlib.suppress(Exception):
                ray.kill(self.recipe.limits)
        if self.started_ray:
            ray.shutdown()


def _key(resources: dict[str, float]) -> tuple[tuple[str, float], ...]:
    """A pool's key: the resources its workers ask for, in order."""
    return tuple(sorted(resources.items()))


def _asked(resources: dict[str, float]) -> dict[str, float]:
    """What a worker asking ``resources`` takes from a node: one CPU unless it says."""
    asked = {"CPU": 1.0, **resources}
    return {k: v for k, v in asked.items() if v}


def workers_that_fit(nodes: list[dict[str, float]], resources: dict[str, float], *,
                     whole_cpus: bool = False) -> int:
    """How many workers asking ``resources`` the ``nodes`` (their total resources) host at
    once, each node holding as many as its scarcest asked resource allows. ``whole_cpus``
    counts a fractional CPU as a whole one, for the default size of a pool: a worker runs
    many cases at once, so more workers than CPUs would only compete for them."""
    asked = _asked(resources)
    if whole_cpus:
        asked["CPU"] = max(asked.get("CPU", 0.0), 1.0)
    if not asked:  # a worker that asks for nothing fits anywhere, any number of times
        return UNBOUNDED
    return sum(min(int(node.get(k, 0.0) / v + 1e-9) for k, v in asked.items())
               for node in nodes)


UNBOUNDED = 1 << 30
"""What ``workers_that_fit`` says of workers that ask for no resource at all."""

SHUTDOWN_WAIT_S = 10.0
"""How long closing waits for a worker to stop on its own before it is killed: one whose
node died (or was never found) would never answer."""


def _batch_failed(exc: BaseException) -> Exception:
    from assay.errors import EvaluationError

    return EvaluationError("ray_failed", f"the Ray worker failed: {type(exc).__name__}: {exc}")


__all__ = ["CaseWorker", "ClusterLimits", "RayExecutor", "Recipe", "forwarded_environment",
           "ray_module", "workers_that_fit"]

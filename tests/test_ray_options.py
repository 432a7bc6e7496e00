"""executor: ray's refusals, before any Ray process starts: Ray Client addresses, a missing
Ray, bad options and bad target resources are one clear error each."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

import pytest

import assay
from assay.errors import ConfigError
from assay.types.config import RayOptions, RunConfig
from assay.types.execution import Execution

ROWS = [{"id": "a", "input": "q", "expected_output": "q"}]


def echo(question: str) -> str:
    return question


def test_ray_client_addresses_are_refused_with_the_reason(tmp_path):
    with pytest.raises(ConfigError, match=r"Ray Client \(ray://\), which assay does not "
                                          "support"):
        assay.evaluate(ROWS, target=echo, evaluators=["exact_match"], executor="ray",
                       ray=RayOptions(address="ray://head:10001"),
                       store=f"sqlite:///{tmp_path / 'runs.db'}")


def test_a_missing_ray_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(ConfigError, match=r"pip install 'assay\[ray\]'"):
        assay.evaluate(ROWS, target=echo, evaluators=["exact_match"], executor="ray",
                       store=f"sqlite:///{tmp_path / 'runs.db'}")


@pytest.mark.parametrize(("options", "field"), [
    ({"executor": "slurm"}, "executor"),
    ({"ray": {"workers": 0}}, "workers"),
    ({"ray": {"batch_size": 10**9}}, "batch_size"),
    ({"ray": {"judge_concurrency": -1}}, "judge_concurrency"),
    ({"ray": {"surprise": 1}}, "surprise"),
])
def test_bad_options_are_refused_naming_the_field(options, field):
    with pytest.raises(ValueError, match=field):
        RunConfig.model_validate(options)


def test_a_target_with_bad_resources_is_located(tmp_path):
    (tmp_path / "targets.yaml").write_text(
        "targets:\n  - name: boxed\n    provider: python\n    function: x.py:f\n"
        "    resources: {GPU: -1}\n")
    with pytest.raises(ConfigError, match=r"targets.yaml:5:\d+: resources .* is not "
                                          "accepted"):
        assay.evaluate(ROWS, target="boxed", evaluators=["exact_match"],
                       targets_file=str(tmp_path / "targets.yaml"),
                       store=f"sqlite:///{tmp_path / 'runs.db'}")


def test_where_cases_run_does_not_make_runs_incomparable(tmp_path):
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    local = assay.evaluate(ROWS, target=echo, evaluators=["exact_match"], store=store)
    config = local.run.config.model_copy(deep=True)
    config.run = config.run.model_copy(update={
        "executor": "ray", "ray": config.run.ray.model_copy(update={"workers": 4})})
    from assay.analysis.diff import config_diff

    assert config_diff(local.run.config, config, {"a"}, {"a"}).run_config_changes == []


HEAD = {"CPU": 1.0, "memory": 8e9}
BOXED = {"CPU": 1.0, "memory": 8e9, "agent_box": 1.0}


@pytest.mark.parametrize(("resources", "whole_cpus", "fit"), [
    ({"CPU": 1.0}, True, 2),  # one a CPU
    ({"CPU": 0.5}, False, 4),  # half a CPU each: two a node
    ({"CPU": 0.5}, True, 2),  # a pool's default size counts whole CPUs
    # the only agent_box holds one worker, whatever the CPUs: a second one would wait for
    # ever, and so would the batches sent to it (this hung a run)
    ({"agent_box": 1.0, "CPU": 0.5}, False, 1),
    ({"agent_box": 1.0, "CPU": 0.5}, True, 1),
    ({"GPU": 1.0}, False, 0),
    ({"memory": 5e9}, False, 2),
    ({"memory": 5e9, "CPU": 0.25}, False, 2),
    ({"CPU": 0.0}, True, 2),
])
def test_a_pool_never_has_more_workers_than_the_live_nodes_host(resources, whole_cpus, fit):
    from assay.run.ray_executor import UNBOUNDED, workers_that_fit

    assert workers_that_fit([HEAD, BOXED], resources, whole_cpus=whole_cpus) == fit
    assert workers_that_fit([HEAD, BOXED], {"CPU": 0.0}) == UNBOUNDED
    assert workers_that_fit([], {"CPU": 1.0}) == 0


class _Call:
    """An actor's method: ``.remote(...)`` gives an awaitable, as Ray's ObjectRef is."""

    def __init__(self, answer: Callable[..., Any]) -> None:
        self.answer = answer

    def remote(self, *args: Any) -> Any:
        async def answered() -> Any:
            return self.answer(*args)
        return answered()


class _StandInWorker:
    """A worker actor that answers each case of a batch at once, counting its batches."""

    def __init__(self, index: int) -> None:
        self.batches = 0
        self.run_batch = _Call(self._run)
        self.where = _Call(lambda: {"node": f"node-{index}", "pid": index})
        self.shutdown = _Call(lambda: None)

    def _run(self, _recipe: Any, jobs: list[Any]) -> list[Any]:
        self.batches += 1
        return [(Execution(input=job[0].case.input, output="ok"), {}) for job in jobs]


class _StandInRay:
    """What :class:`RayExecutor` asks of Ray, answered in this process: the live nodes (the
    test adds and removes them) and workers that answer at once. It counts the reads of the
    node list, the round trip to the cluster a run must not make per case."""

    def __init__(self, nodes: list[dict[str, float]]) -> None:
        self.live = nodes
        self.reads = 0
        self.workers: list[_StandInWorker] = []

    def is_initialized(self) -> bool:
        return True

    def nodes(self) -> list[dict[str, Any]]:
        self.reads += 1
        return [{"Alive": True, "Resources": dict(r)} for r in self.live]

    def remote(self, cls: Any = None, **_options: Any) -> Any:
        if cls is None:  # ray.remote(num_cpus=0)(ClusterLimits): the limits actor
            return lambda _cls: _Limits()
        return self  # ray.remote(CaseWorker).options(...).remote(): a worker

    def options(self, **_options: Any) -> _WorkerClass:
        return _WorkerClass(self)

    def kill(self, _actor: Any) -> None:
        pass


class _Limits:
    """The limits actor (its class, and the actor it starts): never asked here."""

    def remote(self, *_args: Any) -> _Limits:
        return self


class _WorkerClass:
    """``ray.remote(CaseWorker).options(...)``: each ``.remote()`` starts a worker."""

    def __init__(self, ray: _StandInRay) -> None:
        self.ray = ray

    def remote(self) -> _StandInWorker:
        self.ray.workers.append(_StandInWorker(len(self.ray.workers)))
        return self.ray.workers[-1]


def _stand_in(monkeypatch: pytest.MonkeyPatch, nodes: list[dict[str, float]]) -> _StandInRay:
    from assay.run import ray_executor

    ray = _StandInRay(nodes)
    monkeypatch.setattr(ray_executor, "ray_module", lambda: ray)
    return ray


def _executor(ray_options: RayOptions, resources: dict[str, float] | None = None
              ) -> tuple[Any, list[float]]:
    """A started executor whose clock the test moves (``clock[0]``, seconds)."""
    from assay.run.ray_executor import RayExecutor, Recipe
    from assay.suites import Suite

    config = RunConfig(concurrency=2, ray=ray_options)
    executor = RayExecutor(Recipe(Suite(name="s"), config), lambda _item: resources)
    clock = [0.0]
    executor.clock = lambda: clock[0]
    executor.start()
    return executor, clock


async def _cases(executor: Any, count: int) -> None:
    """``count`` cases run at once through ``executor``."""
    from assay.suites import SuiteCase
    from assay.types.case import Case

    await asyncio.gather(*(executor.run_case(SuiteCase(case=Case(id=f"c{i}", input="q")), 0,
                                             None, {}) for i in range(count)))


@pytest.mark.parametrize(("workers", "grown"), [(None, 3), (2, 2), (8, 3)])
async def test_a_pool_grows_onto_nodes_that_join_and_never_shrinks(monkeypatch, workers,
                                                                   grown):
    """A node that joins mid-run gets workers (one per CPU, or up to ``ray.workers``) and the
    run's capacity grows with them; the nodes are read at most every LOOK_EVERY_S, never per
    case; a node that leaves takes no worker away."""
    from assay.run.ray_executor import LOOK_EVERY_S

    ray = _stand_in(monkeypatch, [{"CPU": 1.0}])
    executor, clock = _executor(RayOptions(workers=workers, batch_size=1))
    await _cases(executor, 4)
    assert len(await executor.where()) == 1 and executor.capacity() == 2
    reads = ray.reads
    ray.live.append({"CPU": 2.0})  # a node joins
    clock[0] = LOOK_EVERY_S - 0.5
    await _cases(executor, 20)  # sooner than LOOK_EVERY_S: the nodes are not read again
    assert ray.reads == reads and len(await executor.where()) == 1
    clock[0] = LOOK_EVERY_S + 0.5
    await _cases(executor, 20)
    assert ray.reads == reads + 1  # one read for 20 cases
    assert len(await executor.where()) == grown and executor.capacity() == 2 * grown
    assert all(worker.batches > 0 for worker in ray.workers)  # the new workers got cases
    ray.live.pop()  # the node leaves: nothing shrinks
    clock[0] = 2 * LOOK_EVERY_S + 1
    await _cases(executor, 4)
    assert len(await executor.where()) == grown and executor.capacity() == 2 * grown
    await executor.close()


async def test_a_node_with_what_a_target_asks_is_seen_when_it_joins(monkeypatch):
    """A target's resources no node had are looked for again at once when asked: a node
    that joined a moment ago runs its cases, not LOOK_EVERY_S later."""
    from assay.errors import ConfigError

    ray = _stand_in(monkeypatch, [{"CPU": 1.0}])
    executor, _clock = _executor(RayOptions(), {"agent_box": 1.0})
    with pytest.raises(ConfigError, match="no live node of the Ray cluster offers"):
        await _cases(executor, 1)
    ray.live.append({"CPU": 1.0, "agent_box": 1.0})
    await _cases(executor, 3)
    assert len(await executor.where()) == 1
    await executor.close()

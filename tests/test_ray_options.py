"""executor: ray's refusals, before any Ray process starts: Ray Client addresses, a missing
Ray, bad options and bad target resources are one clear error each."""

from __future__ import annotations

import sys

import pytest

import assay
from assay.errors import ConfigError
from assay.types.config import RayOptions, RunConfig

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

"""The collector and assay's bulk jobs: runs collect less often while in flight, loads of
cases that are all kept pause it, and each leaves the collector as it found it."""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import assay
from assay._util.gc_pause import RUN_THRESHOLD

T = TypeVar("T")


def _rows(n: int) -> list[dict[str, str]]:
    return [{"id": f"c{i}", "input": f"q{i}", "expected_output": f"a{i}"} for i in range(n)]


def test_a_run_raises_the_young_threshold_and_puts_it_back() -> None:
    before = gc.get_threshold()
    seen: list[int] = []

    def agent(question: str) -> str:
        seen.append(gc.get_threshold()[0])
        return "a" + question[1:]

    result = assay.evaluate(_rows(5), target=agent, evaluators=["exact_match"])
    assert result.summary.passed_count == 5
    assert seen and min(seen) >= RUN_THRESHOLD
    assert gc.get_threshold() == before
    assert gc.isenabled()


async def test_overlapping_runs_restore_the_threshold_only_when_the_last_ends() -> None:
    before = gc.get_threshold()
    release = asyncio.Event()
    during: list[int] = []

    async def slow(question: str) -> str:
        await release.wait()
        return "a" + question[1:]

    async def fast(question: str) -> str:
        return "a" + question[1:]

    first = asyncio.ensure_future(assay.evaluate_async(_rows(2), target=slow,
                                                       evaluators=["exact_match"]))
    second = await assay.evaluate_async(_rows(2), target=fast, evaluators=["exact_match"])
    assert second.summary.passed_count == 2
    during.append(gc.get_threshold()[0])  # the first run is still waiting on its agent
    release.set()
    assert (await first).summary.passed_count == 2
    assert during[0] >= RUN_THRESHOLD
    assert gc.get_threshold() == before


async def test_a_stopped_run_puts_the_threshold_back() -> None:
    before = gc.get_threshold()
    started = asyncio.Event()

    async def stuck(question: str) -> str:
        started.set()
        await asyncio.sleep(3600)
        return question

    run = asyncio.ensure_future(assay.evaluate_async(_rows(3), target=stuck,
                                                     evaluators=["exact_match"]))
    await asyncio.wait_for(started.wait(), 30)
    assert gc.get_threshold()[0] >= RUN_THRESHOLD
    run.cancel()
    await asyncio.gather(run, return_exceptions=True)
    assert gc.get_threshold() == before


def test_importing_pauses_and_freezes_only_in_the_command_process(monkeypatch) -> None:
    """The ``assay`` command freezes what its imports built (no collection walks it again);
    a command run inside a longer-lived process (this test, a notebook) only pauses, since a
    freeze would keep whatever garbage is pending there for ever."""
    import subprocess
    import sys

    from assay._util import gc_pause

    monkeypatch.setattr(gc_pause, "_command_process", False)
    frozen = gc.get_freeze_count()
    with gc_pause.importing():
        assert not gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == frozen

    script = ("import gc\n"
              "from assay._util.gc_pause import command_process, importing\n"
              "command_process()\n"
              "before = gc.get_freeze_count()\n"
              "with importing():\n"
              "    import json, decimal\n"
              "print(gc.isenabled(), gc.get_freeze_count() > before, gc.get_count()[0] < 700)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.split() == ["True", "True", "True"], done.stderr


def collections_during(load: Callable[[], T]) -> tuple[T, list[int]]:
    """What ``load`` returned, and the generation of every collection that ran meanwhile
    (the tests of YAML loading use it too)."""
    started: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.collect()
    gc.callbacks.append(count)
    try:
        return load(), started
    finally:
        gc.callbacks.remove(count)


def test_rows_given_in_memory_load_without_the_collector_walking_them() -> None:
    """Every case built from a list of rows is kept: on 2,000 rows the collector's passes
    over them took up to two thirds of the load."""
    from assay.suites.dataset import suite_from_rows

    rows = _rows(3000)
    suite, collections = collections_during(lambda: suite_from_rows(rows))
    assert suite.count() == 3000
    assert len(collections) <= 1, collections  # one young pass as the collector comes back
    assert gc.isenabled()


def _jsonl_suite(folder: Path, cases: int) -> Path:
    path = folder / "cases.jsonl"
    path.write_text("".join(json.dumps({"id": f"c{i}", "input": f"question {i}",
                                        "expected_output": f"a{i}"}) + "\n"
                            for i in range(cases)))
    (folder / "cases.yaml").write_text("execution:\n  evaluators:\n"
                                       "    - {name: same, type: exact_match}\n")
    return path


def test_a_small_jsonl_suite_is_checked_without_the_collector_walking_it(tmp_path) -> None:
    from assay.suites.evalyaml import check_suite

    path = _jsonl_suite(tmp_path, 3000)
    (suite, problems), collections = collections_during(lambda: check_suite(path))
    assert problems == [] and suite is not None and suite.count() == 3000
    assert len(collections) <= 1, collections
    assert gc.isenabled()


def test_a_jsonl_suite_too_large_to_keep_is_streamed_with_the_collector_on(tmp_path,
                                                                           monkeypatch) -> None:
    """A large file's chunks are let go as it is read; pausing the collector there would let
    any cycle among them pile up for the whole file."""
    from assay.suites import evalyaml

    monkeypatch.setattr(evalyaml, "KEEP_BYTES", 1000)  # this file is "large"
    path = _jsonl_suite(tmp_path, 3000)
    (suite, problems), collections = collections_during(
        lambda: evalyaml.check_suite(path))
    assert problems == [] and suite is not None and suite.count() == 3000
    assert len(collections) > 1, collections

"""The trace commands as a user runs them: ``assay run --traces``, ``assay watch``,
``assay writeback``; their errors are one line, never a traceback; and a watcher killed
outright goes on where it stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from assay.store.runs import RunStore
from assay.store.traces import decision_counts
from tests.assay_process import run_assay
from tests.trace_support import ROOT, agent_trace, export, trace_part

EVAL = """\
description: answers
execution:
  evaluators:
    - {name: mentions_answer, type: contains, search_text: answer}
cases:
  - {id: example, input: "a question", expected_output: "an answer"}
"""
"""A suite whose evaluators judge the traces; its own cases are not run."""


def _export_file(folder: Path, count: int) -> Path:
    spans = [s for i in range(count)
             for s in agent_trace(f"q{i}", f"answer {i}", start=1_790_000_000 + i)[1]]
    path = folder / "traces.json"
    path.write_bytes(orjson.dumps(export(*spans)))
    return path


def test_assay_run_judges_traces_and_writes_the_verdicts_back(tmp_path: Path) -> None:
    path = _export_file(tmp_path, 3)
    (tmp_path / "EVAL.yaml").write_text(EVAL)
    store = f"sqlite:///{tmp_path}/runs.db"
    done = run_assay(["run", "EVAL.yaml", "--traces", str(path), "--store", store,
                      "--since", "2026-09-21T00:00:00Z"], cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    (run,) = RunStore(store).run_records()
    assert run.summary is not None and run.summary.cases == 3
    out = tmp_path / "verdicts.json"
    done = run_assay(["writeback", run.id, "--to", f"otlp:{out}", "--store", store],
                     cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "6 evaluation span(s)" in done.stdout
    again = run_assay(["writeback", run.id, "--to", f"otlp:{out}", "--store", store],
                      cwd=tmp_path, timeout=60)
    first = out.read_bytes()
    assert again.returncode == 0 and out.read_bytes() == first
    refused = run_assay(["writeback", run.id, "--to", f"otlp:{tmp_path / 'runs.db'}",
                         "--store", store], cwd=tmp_path, timeout=60)
    assert refused.returncode == 2 and "run store" in refused.stdout + refused.stderr


@pytest.mark.parametrize(("args", "expected"), [
    (["run", "--traces", "zipkin:x", "--judges", "safety"], "is not one assay reads"),
    (["run", "--traces", "missing.json", "--judges", "safety"], "missing.json: cannot be read"),
    (["run", "--traces", "store", "--since", "yesterday", "--judges", "safety"],
     "a time ago"),
    (["run", "EVAL.yaml", "--since", "1h"], "--since and --until select traces"),
    pytest.param(["run", "--traces", "phoenix:http://127.0.0.1:9", "--judges", "safety"],
                 "reading spans failed", marks=pytest.mark.traces),  # Phoenix's real client
    (["run", "--traces", "store", "--judges", "safety"], "no traces to judge"),
    (["run", "--traces", "store", "--judges", "safety", "--filter", "status=eror"],
     "--filter 'status=eror': a trace's status is ok or error"),  # was: no traces to judge
    (["watch", "store", "--judges", "safety", "--filter", "name=agent,status!=failed",
      "--once"], "not 'failed'"),
    (["watch", "store", "--judges", "safety", "--since", "9" * 400 + "d", "--once"],
     "not a time a date can hold"),  # -inf, judging every trace ever received
    pytest.param(["watch", "phoenix:http://127.0.0.1:9", "--judges", "safety", "--since",
                  "1000000w", "--once"], "--since '1000000w': not a time a date can hold",
                 marks=pytest.mark.traces),  # year -17139: a traceback from the source
    (["watch", "store", "--once"], "needs evaluators"),
    (["watch", "store", "--judges", "safety", "--period", "month", "--once"], "period"),
])
def test_bad_trace_commands_are_one_clear_line(tmp_path: Path, args: list[str],
                                               expected: str) -> None:
    (tmp_path / "EVAL.yaml").write_text(EVAL)
    if "phoenix:http://127.0.0.1:9" in args:
        trace_part("phoenix.client")
    done = run_assay([*args, "--store", f"sqlite:///{tmp_path}/runs.db"], cwd=tmp_path,
                     timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert expected in output
    assert "Traceback" not in output


def test_assay_watch_once_judges_new_traces_once(tmp_path: Path) -> None:
    (tmp_path / "EVAL.yaml").write_text(EVAL)
    store = f"sqlite:///{tmp_path}/runs.db"
    from assay.store.traces import ReceivedSpan, append_spans
    from assay.types.spans import from_dict

    def add(count: int) -> None:
        spans = [s for i in range(count) for s in agent_trace(f"q{i}", f"answer {i}")[1]]
        append_spans(RunStore(store), [ReceivedSpan(s["traceId"], from_dict(s))
                                       for s in spans])

    add(4)
    args = ["watch", "store", "EVAL.yaml", "--store", store, "--once", "--settle", "0",
            "--name", "prod"]
    first = run_assay(args, cwd=tmp_path, timeout=120)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "watch prod: 4 judged, 0 sampled out" in first.stdout
    add(2)
    second = run_assay(args, cwd=tmp_path, timeout=120)
    assert "watch prod: 2 judged" in second.stdout
    (run,) = RunStore(store).run_records()
    assert run.suite == "watch prod" and run.summary is not None and run.summary.cases == 6


@pytest.mark.drill
def test_a_watcher_killed_outright_judges_nothing_twice_and_skips_nothing(
        tmp_path: Path, mock_server: Any) -> None:
    mock_server.configure(latency_ms=150)
    store_url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(store_url)
    from assay.store.traces import ReceivedSpan, append_spans
    from assay.types.spans import from_dict

    spans = [s for i in range(40) for s in agent_trace(f"q{i}", f"answer {i}")[1]]
    append_spans(store, [ReceivedSpan(s["traceId"], from_dict(s)) for s in spans])
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "ASSAY_CACHE": "off"}
    args = [sys.executable, "-m", "assay", "watch", "store", "--judges", "safety",
            "--judge-model", f"{mock_server.url}#judge-model", "--store", store_url,
            "--settle", "0", "--name", "prod", "--interval", "0.2"]
    process = subprocess.Popen(args, env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while mock_server.stats.requests < 10:  # killed while it judges
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the watcher judged nothing"
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    done = subprocess.run([*args, "--once"], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    runs = RunStore(store_url).run_records()
    judged = [r.case_id for run in runs for r in RunStore(store_url).case_records(run.id)]
    assert sorted(judged) == sorted({s["traceId"] for s in spans})  # each once, none left
    key = f"prod@{_version(store_url)}"
    assert decision_counts(RunStore(store_url), key) == {"judged": 40}
    scores = [s for run in runs for r in RunStore(store_url).case_records(run.id)
              for s in r.scores]
    assert len(scores) == 40 and all(s.error is None for s in scores)


def _version(store_url: str) -> str:
    from sqlalchemy import create_engine, text

    with create_engine(store_url).connect() as conn:
        (watcher,) = conn.execute(text("SELECT DISTINCT watcher FROM trace_decisions")
                                  ).scalars().all()
    return str(watcher).split("@", 1)[1]


def test_a_status_filter_reads_its_value_in_any_case() -> None:
    """``status=OK`` (OTLP's spelling of the code) is the trace status ``ok``: it matched no
    trace, since the status compared is lower case, and the run said only that none was
    found."""
    from assay.run.sources.base import parse_filters

    assert [(f.key, f.value, f.negated) for f in parse_filters("status=OK, name=agent")] == [
        ("status", "ok", False), ("name", "agent", False)]
    assert parse_filters("status!=Error")[0].value == "error"

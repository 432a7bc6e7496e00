"""Helpers of the Connexity acceptance tests: the CLI in-process, runs and what they stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from assay.cli import app
from assay.store.runs import RunStore
from assay.targets.callable import load_function

HERE = Path(__file__).resolve().parent
runner = CliRunner()


def cli(*args: str) -> tuple[int, str]:
    """The assay CLI in-process: its exit code and everything it printed."""
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


def run(store: str, suite: Path | str, *args: str) -> tuple[int, str, str]:
    """``assay run SUITE`` (cache off) into ``store``: exit code, output and the run's id."""
    code, out = cli("run", str(suite), "--store", store, "--cache", "off", *args)
    runs = RunStore(store).run_records(1)
    assert runs, out
    return code, out, runs[0].id


def summary(store: str, run_id: str) -> dict[str, Any]:
    found = RunStore(store).run_record(run_id).summary
    assert found is not None, run_id
    return found.model_dump(mode="json")


def judge_record(store: str, run_id: str, case_id: str) -> tuple[Any, Any]:
    """A case's record and its multi-metric judge score."""
    record = next(r for r in RunStore(store).case_records(run_id) if r.case_id == case_id)
    return record, record.scores[0]


def agent_calls() -> Any:
    """The Counter of calls per case id of the agents in ../agents.py, as runs load them."""
    return load_function("agents.py:echo", HERE.parent).__globals__["CALLS"]


def has(out: str, *texts: str) -> bool:
    """Whether every text is in the output, however the terminal wrapped its lines."""
    flat = "".join(out.split())
    return all("".join(text.split()) in flat for text in texts)

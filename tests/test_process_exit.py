"""How the ``assay`` command leaves: without the interpreter's teardown of every object (about
0.2 s of each command), but with everything a normal exit guarantees done first."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.python_agent import exact_match_suite, run_python_agent

# Each test starts fresh interpreters: what only a new process shows.
pytestmark = pytest.mark.process

AGENT = '''
import threading
import time
from pathlib import Path

LOG = open("agent.log", "w")  # never closed: the exit must flush it


class Goodbye:
    def __del__(self):
        Path("torn-down").write_text("the interpreter tore this module down")


KEEP = Goodbye()


def answer(question):
    LOG.write(f"asked {question}\\n")
    if question == "late":
        def later():
            time.sleep(0.5)
            Path("late.txt").write_text("written after the run")
        # Not a daemon (a thread started on assay's daemon threads would be one by default):
        # a normal exit waits for it.
        threading.Thread(target=later, daemon=False).start()
    return question
'''

SUITE = exact_match_suite(("one", "one", "one"), ("two", "two", '"not two"'))


def _run(tmp_path: Path, suite: str = SUITE, *extra: str,
         python: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return run_python_agent(tmp_path, AGENT, suite, *extra, python=python)


def test_the_command_skips_the_teardown_but_flushes_files_and_closes_the_store(
        tmp_path: Path) -> None:
    done = _run(tmp_path, SUITE, "--max-failed", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stored in" in done.stdout
    # A file the agent never closed is complete.
    assert (tmp_path / "agent.log").read_text().splitlines() == ["asked one", "asked two"]
    # The store's connections were closed: its write-ahead log is folded back into the
    # database file, so the file alone holds the run (copying it loses nothing).
    assert not (tmp_path / "runs.db-wal").exists()
    alone = tmp_path / "copy.db"
    alone.write_bytes((tmp_path / "runs.db").read_bytes())
    with sqlite3.connect(alone) as db:
        assert db.execute("select count(*) from case_results").fetchone() == (2,)
    # Objects were not torn down one by one: that is the time saved.
    assert not (tmp_path / "torn-down").exists()


def test_exit_codes_are_those_of_the_command(tmp_path: Path) -> None:
    failed = _run(tmp_path)  # one case fails and the default gate allows none
    assert failed.returncode == 1, failed.stdout + failed.stderr
    usage = subprocess.run([sys.executable, "-m", "assay", "run", "--no-such-option"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert usage.returncode == 2
    assert "No such option" in usage.stderr


def test_a_thread_the_agent_left_running_is_waited_for(tmp_path: Path) -> None:
    suite = exact_match_suite(("one", "late", "late"), ("two", "two", '"not two"'))
    done = _run(tmp_path, suite, "--max-failed", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "late.txt").read_text() == "written after the run"


def test_a_profiler_still_gets_to_write_its_results(tmp_path: Path) -> None:
    # ``python -m cProfile -m assay ...`` writes its file after the program returns; leaving
    # straight away would lose it.
    done = _run(tmp_path, SUITE, "--max-failed", "1", python=("-m", "cProfile", "-o", "run.prof"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "run.prof").stat().st_size > 0

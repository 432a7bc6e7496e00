"""Output files: never an input, never two at one path, written whole or not at all, with
clear errors for an unwritable path and for a disk that fills up while writing."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from assay.errors import ConfigError
from assay.report.files import RowWriter, row_line, write_jsonl, write_junit
from assay.report.outputs import AtomicOutput, OutputWriteError, check_outputs, check_writable
from assay.report.uipath_output import write_uipath_output
from tests.python_agent import exact_match_suite, run_python_agent

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    path = tmp_path / "suite.jsonl"
    path.write_text('{"id": "a", "input": "x"}\n')
    return path


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# -- an output is never an input ----------------------------------------------------------


def test_an_output_that_is_the_suite_file_is_refused_naming_both(suite, tmp_path):
    with pytest.raises(ConfigError) as info:
        check_outputs({"--output": suite}, {suite: "the suite file"})
    assert info.value.code == "output_is_input"
    assert info.value.message.startswith(
        f"--output {suite} is the suite file; write the output to another path")
    assert suite.read_text() == '{"id": "a", "input": "x"}\n'


def test_the_same_file_by_another_spelling_is_refused(suite, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    for spelling in (Path("suite.jsonl"), Path("sub/../suite.jsonl"), Path("./suite.jsonl")):
        with pytest.raises(ConfigError, match="is an input file"):
            check_outputs({"--junit": spelling}, [suite])


def test_a_symbolic_link_to_an_input_is_refused(suite, tmp_path):
    link = tmp_path / "results.jsonl"
    link.symlink_to(suite)
    with pytest.raises(ConfigError, match=r"--output .*results\.jsonl is an input file \("):
        check_outputs({"--output": link}, [suite])
    # and the other way round: the input read through a link to the output
    out = tmp_path / "out.jsonl"
    out.write_text("old\n")
    via = tmp_path / "via-link.jsonl"
    via.symlink_to(out)
    with pytest.raises(ConfigError, match="is an input file"):
        check_outputs({"--output": out}, [via])


def test_a_hard_link_to_an_input_is_refused(suite, tmp_path):
    twin = tmp_path / "twin.jsonl"
    os.link(suite, twin)
    with pytest.raises(ConfigError, match="is an input file"):
        check_outputs({"--uipath-output": twin}, [suite])


def test_two_outputs_at_one_path_are_refused(tmp_path):
    out = tmp_path / "report.xml"
    with pytest.raises(ConfigError) as info:
        check_outputs({"--output": out, "--junit": tmp_path / "." / "report.xml"}, [])
    assert info.value.code == "output_collision"
    assert "--junit" in info.value.message and "--output" in info.value.message


def test_distinct_outputs_pass_and_leave_nothing_behind(suite, tmp_path):
    outputs = {"--output": tmp_path / "out" / "results.jsonl", "--junit": tmp_path / "j.xml",
               "--uipath-output": None}
    check_outputs(outputs, [suite])
    assert not (tmp_path / "j.xml").exists()
    assert _leftovers(tmp_path) == [] and _leftovers(tmp_path / "out") == []


# -- unwritable outputs are found before the run --------------------------------------------


def test_an_output_under_a_file_is_a_clear_config_error(suite, tmp_path):
    with pytest.raises(ConfigError) as info:
        check_outputs({"--output": suite / "results.jsonl"}, [])
    assert info.value.code == "unwritable_output"
    assert info.value.message.startswith(f"cannot write --output {suite}/results.jsonl: ")


def test_an_output_that_is_a_directory_is_a_clear_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"--junit .* is a directory"):
        check_writable(tmp_path, "--junit")


@pytest.mark.skipif(not Path("/sys").is_dir(), reason="needs a directory nobody may write")
def test_a_directory_nobody_may_write_is_a_clear_config_error_even_for_root():
    with pytest.raises(ConfigError, match=r"cannot write --output /sys/results\.jsonl: "
                                          r"Permission denied"):
        RowWriter(Path("/sys/results.jsonl"))


# -- written whole, renamed into place -------------------------------------------------------


def test_row_writer_keeps_the_previous_file_until_it_closes(tmp_path):
    out = tmp_path / "results.jsonl"
    out.write_text('{"old": true}\n')
    writer = RowWriter(out)
    writer.write({"eval_id": "a"})
    assert out.read_text() == '{"old": true}\n'  # a crash now leaves the old file
    (tmp,) = _leftovers(tmp_path)
    assert tmp.startswith("results.jsonl.")  # beside it, so the rename is atomic
    writer.write({"eval_id": "b"})
    writer.close()
    assert [json.loads(x)["eval_id"] for x in out.read_text().splitlines()] == ["a", "b"]
    assert _leftovers(tmp_path) == []


def test_an_interrupted_run_keeps_the_rows_it_finished(tmp_path):
    out = tmp_path / "results.jsonl"
    with pytest.raises(KeyboardInterrupt), RowWriter(out) as writer:
        writer.write({"eval_id": "done"})
        raise KeyboardInterrupt
    assert json.loads(out.read_text()) == {"eval_id": "done"}


def test_a_killed_process_leaves_the_previous_file_intact(tmp_path):
    out = tmp_path / "results.jsonl"
    out.write_text('{"previous": 1}\n')
    script = ("import os, signal, sys\nfrom pathlib import Path\n"
              "from assay.report.files import RowWriter\n"
              "w = RowWriter(Path(sys.argv[1]))\n"
              "w.write({'eval_id': 'a'})\n"
              "os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", script, str(out)], capture_output=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert out.read_text() == '{"previous": 1}\n'


def test_closing_without_keeping_leaves_the_previous_file(tmp_path):
    out = tmp_path / "results.jsonl"
    out.write_text("previous\n")
    writer = RowWriter(out)
    writer.write({"eval_id": "a"})
    writer.close(keep=False)
    assert out.read_text() == "previous\n" and _leftovers(tmp_path) == []


def test_a_replaced_file_keeps_its_permissions_and_a_link_stays_a_link(tmp_path):
    real = tmp_path / "real.jsonl"
    real.write_text("old\n")
    real.chmod(0o640)
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    write_jsonl(link, [{"eval_id": "a"}])
    assert link.is_symlink() and json.loads(real.read_text()) == {"eval_id": "a"}
    assert real.stat().st_mode & 0o777 == 0o640


def test_every_writer_replaces_its_file_whole(tmp_path):
    row = {"eval_id": "a", "repeat": 0, "score": 1.0, "verdict": "pass",
           "evaluator_results": []}
    for name, write in (
            ("r.jsonl", lambda p: write_jsonl(p, [row])),
            ("j.xml", lambda p: write_junit(p, "suite", [row], "run-1")),
            ("u.json", lambda p: write_uipath_output(p, {"evaluationSetName": "s"}))):
        path = tmp_path / name
        path.write_text("previous")
        write(path)
        assert path.read_text() != "previous"
    assert _leftovers(tmp_path) == []


# -- a disk that fills up -------------------------------------------------------------------

# The file size limit makes writes past 300 bytes fail (EFBIG) the way a full disk does
# (ENOSPC): part of a write lands, then the rest is refused.
NO_BYTECODE = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
"""The environment of a process whose files are limited in size: byte-code it wrote for the
project's modules would be cut short at the limit, and break every later import of them."""


FULL_DISK = """
import json, resource, signal, sys
from pathlib import Path
from assay.report.files import RowWriter, write_jsonl
from assay.report.outputs import OutputWriteError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))
rows = [{"eval_id": f"case-{i}", "text": "x" * 40} for i in range(20)]
kind, path = sys.argv[1], Path(sys.argv[2])
if kind == "rows-unbuffered":  # each row written as it comes: the failure is met mid-run
    import assay.report.outputs
    assay.report.outputs.BUFFER_BYTES = 1
try:
    if kind.startswith("rows"):
        writer = RowWriter(path)
        try:
            for row in rows:
                writer.write(row)
        finally:
            writer.close()
    else:
        write_jsonl(path, rows)
except OutputWriteError as exc:
    print(json.dumps({"code": exc.code, "message": exc.message}))
"""


def _fill_disk(kind: str, path: Path) -> dict[str, str]:
    proc = subprocess.run([sys.executable, "-c", FULL_DISK, kind, str(path)],
                          capture_output=True, text=True, timeout=60,
                          env={**NO_BYTECODE, "PYTHONPATH": str(ROOT / "src")})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("kind", ["rows", "rows-unbuffered"])
def test_a_full_disk_while_writing_rows_is_a_clear_error_and_keeps_whole_lines(tmp_path, kind):
    # "rows": the rows are gathered and the disk fills when they are written at the end;
    # "rows-unbuffered": a row that does not fit fails as it is written.
    out = tmp_path / "results.jsonl"
    error = _fill_disk(kind, out)
    assert error["code"] == "output_write_failed"
    assert error["message"].startswith(f"writing --output {out} failed: File too large")
    lines = out.read_bytes().split(b"\n")
    assert lines[-1] == b""  # ends with a whole line
    assert [json.loads(x)["eval_id"] for x in lines[:-1]] == [
        f"case-{i}" for i in range(len(lines) - 1)]
    assert 0 < len(lines) - 1 < 20
    assert _leftovers(tmp_path) == []


RESULTS_LIMIT = 4000
"""Bytes a file may grow to in the command below: the results file's first rows, no more."""


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # stays ignored across exec
    resource.setrlimit(resource.RLIMIT_FSIZE, (RESULTS_LIMIT, RESULTS_LIMIT))


def test_a_results_file_that_fills_the_disk_fails_the_command_once_every_case_ran(tmp_path):
    # The rows are gathered and written in blocks, the last when the run ends: the disk
    # fills there, after every case ran. The command says so (exit 2) and keeps whole lines.
    agent = ("from pathlib import Path\n"
             "def answer(question):\n"
             "    with Path('calls.txt').open('a') as fh:\n"
             "        fh.write('.')\n"
             "    return 'yes'\n")
    suite = exact_match_suite(*((f"c{i}", f"q{i}", "yes") for i in range(20)))
    done = run_python_agent(tmp_path, agent, suite, "--store", "sqlite://", "--cache", "off",
                            "-o", "out.jsonl", preexec=_limit_file_size, env=NO_BYTECODE)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "error [output_write_failed]: writing --output out.jsonl failed" in done.stderr
    assert "Traceback" not in done.stderr
    assert (tmp_path / "calls.txt").read_text() == "." * 20  # the run was not cut short
    lines = (tmp_path / "out.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b"" and 0 < len(lines) - 1 < 20  # whole lines only
    assert {json.loads(line)["eval_id"] for line in lines[:-1]} <= {f"c{i}" for i in range(20)}
    assert _leftovers(tmp_path) == []


def test_a_full_disk_while_writing_a_whole_file_keeps_the_previous_one(tmp_path):
    out = tmp_path / "results.jsonl"
    out.write_text("previous\n")
    error = _fill_disk("file", out)
    assert error["code"] == "output_write_failed"
    assert out.read_text() == "previous\n" and _leftovers(tmp_path) == []


def test_rows_reach_a_pipe_as_they_are_written_and_a_file_when_it_is_committed(tmp_path):
    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        out = AtomicOutput(fifo, "--output", gather=True)
        out.write(b'{"eval_id": "a"}\n')
        assert os.read(reader, 100) == b'{"eval_id": "a"}\n'  # someone may be reading live
        out.commit()
    finally:
        os.close(reader)
    path = tmp_path / "results.jsonl"
    out = AtomicOutput(path, "--output", gather=True)
    for i in range(3):
        out.write(f'{{"eval_id": "c{i}"}}\n'.encode())
    assert out.tmp is not None and out.tmp.stat().st_size == 0  # gathered, not yet written
    out.commit()
    assert path.read_text().splitlines() == [f'{{"eval_id": "c{i}"}}' for i in range(3)]
    assert _leftovers(tmp_path) == []


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_device_is_written_in_place_and_its_errors_are_clear():
    out = AtomicOutput(Path("/dev/full"), "--output")
    with pytest.raises(OutputWriteError, match="writing --output /dev/full failed: No space"):
        out.write(b"x\n")
    with pytest.raises(OutputWriteError):  # a failed output stays failed
        out.write(b"y\n")
    out.commit()
    assert Path("/dev/full").exists() and not Path("/dev/full").is_file()


# -- the lines themselves --------------------------------------------------------------------


def test_rows_are_strict_json_even_for_nan_and_lone_surrogates():
    row: dict[str, object] = {"score": float("nan"), "bounds": [float("-inf")],
                              "text": "a\ud800b", "big": 2**70, (1, 2): "tuple key"}
    row["self"] = row
    line = row_line(row)
    assert line.endswith(b"\n") and b"NaN" not in line and b"Infinity" not in line
    line.decode("utf-8")  # valid UTF-8
    back = json.loads(line)
    assert back["score"] is None and back["bounds"] == [None]
    assert back["text"] == "a\ud800b" and back["big"] == 2**70
    assert back["self"] == "<circular reference>" and back["(1, 2)"] == "tuple key"


class _Number(float):
    """A float subclass, as a NumPy scalar is."""


def test_rows_write_numbers_dates_and_objects_as_the_standard_library_does():
    import dataclasses
    import datetime

    @dataclasses.dataclass
    class Point:
        x: int

    row = {"value": _Number(0.25), "when": datetime.datetime(2026, 1, 2, 3, 4, 5),
           "point": Point(1), "tags": {"a"}, "pair": (1, 2), "text": "é\u2028",
           "tiny": 1e-05, "none": None}
    expected = json.loads(json.dumps(row, ensure_ascii=False, default=str))
    assert json.loads(row_line(row)) == expected
    assert isinstance(json.loads(row_line(row))["value"], float)

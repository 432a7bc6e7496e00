"""Files a person hands assay outside a run's suite: labelled CSV for ``assay calibrate``,
files ``assay convert`` reads, the folder ``assay init`` writes into. Each is read by the real
command in a real process; bad input is one line naming the file and the line, exit 2, and
never a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from assay.calibration.files import load_labelled
from assay.calibration.items import CalibrationDataError
from assay.suites.dataset import DatasetError, suite_from_file
from tests.assay_process import run_assay


def assay(cwd: Path, *args: str):
    env = {**os.environ, "ASSAY_CACHE_DIR": str(cwd / "cache")}
    env.pop("ASSAY_JUDGE_MODEL", None)
    return run_assay(args, cwd=cwd, env=env, timeout=240)


def one_line_error(done, *expected: str) -> None:
    """The command failed as bad input does: exit 2, no traceback, the expected words."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    for words in expected:
        assert words in done.stderr, done.stderr


# -- CSV ---------------------------------------------------------------------------------------

LABELS_CSV = "id,input,output,reference,label\r\n1,q,Paris,Paris,pass\r\n2,q,Rome,Paris,fail\r\n"


def test_a_csv_saved_by_excel_with_a_byte_order_mark_calibrates(tmp_path):
    """Excel's "CSV UTF-8" starts with a byte-order mark (and ends lines with CRLF): its
    first column is 'id', not '\\ufeffid' refused as an unknown column."""
    labels = tmp_path / "labels.csv"
    labels.write_bytes(b"\xef\xbb\xbf" + LABELS_CSV.encode())
    done = assay(tmp_path, "calibrate", str(labels), "--judge", "exact_match", "--store",
                 f"sqlite:///{tmp_path}/runs.db", "--resamples", "0", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["counts"]["scored"] == 2
    assert report["statistics"]["accuracy"]["value"] == 1.0


def test_a_dataset_csv_with_a_byte_order_mark_keeps_its_first_column(tmp_path):
    data = tmp_path / "rows.csv"
    data.write_bytes(b"\xef\xbb\xbfid,input,output\r\nfirst,q,a\r\n")
    assert [c.case.id for c in suite_from_file(data).cases] == ["first"]


@pytest.mark.parametrize(("text", "line", "words"), [
    ('id,input,output,label\n1,q,a,pass\n2,"q,b,fail\n3,q,c,pass\n', 3, "never closed"),
    ('id,input,output,label\n1,"q"x,a,pass\n', 2, "',' expected after '\"'"),
    ('id,"input\n', 1, "never closed"),
])
def test_a_quote_never_closed_is_named_at_its_row_not_read_as_the_rest_of_the_file(
        tmp_path, text, line, words):
    """A stray quote once swallowed every later row into one cell, and the error blamed a
    missing label at the end of the file."""
    labels = tmp_path / "labels.csv"
    labels.write_text(text, encoding="utf-8")
    with pytest.raises(CalibrationDataError) as found:
        load_labelled(labels)
    assert f"{labels} line {line}: not a CSV row" in found.value.message
    assert words in found.value.message
    with pytest.raises(DatasetError, match=f"line {line}: not a CSV row"):
        suite_from_file(labels)
    done = assay(tmp_path, "calibrate", str(labels), "--judge", "exact_match", "--store",
                 f"sqlite:///{tmp_path}/runs.db")
    one_line_error(done, f"labels.csv line {line}: not a CSV row")

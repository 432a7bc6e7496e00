"""A user's labelled files, and bad input: unknown label values, records lacking a field the
judge needs, a judge whose scale does not match the labels. Each is a clear error naming the
file, the record and the field, raised before any judge is called."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.calibration.files import load_labelled
from assay.calibration.fit import check_fit
from assay.calibration.items import CalibrationDataError
from assay.calibration.sets import load_set
from assay.judges import build
from assay.run.calibrate import calibrate_async


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


PAIRS = [{"id": f"p{i}", "input": f"Say {i}", "output_1": f"{i}", "output_2": "no",
          "label": 1 + i % 2} for i in range(6)]
VERDICTS = [{"question": f"q{i}", "response": f"answer {i}", "label": "pass" if i % 3 else
             "fail"} for i in range(6)]


def test_jsonl_csv_and_dataframe_load_with_kinds_read_from_the_data(tmp_path):
    pairs = load_labelled(write_jsonl(tmp_path / "pairs.jsonl", PAIRS))
    assert pairs.kind == "pairwise" and [i.label for i in pairs.items][:2] == ["1", "2"]
    assert pairs.items[0].line == 1 and pairs.items[0].output_2 == "no"
    import pandas as pd  # here, not with the module: 0.4 s in every process that collects it

    frame = pd.DataFrame(VERDICTS)
    verdicts = load_labelled(frame)
    assert verdicts.kind == "binary" and verdicts.items[0].label == "fail"
    csv_path = tmp_path / "scores.csv"
    csv_path.write_text("id,input,output,label,ratings\na,q,x,3.5,\"[3, 4]\"\nb,q,y,1.5,\n")
    scores = load_labelled(csv_path)
    assert scores.kind == "score" and scores.items[0].ratings == [3.0, 4.0]
    ordinal = load_labelled([{"output": "x", "label": 4}, {"output": "y", "label": "2"}],
                            kind="ordinal", scale="1-5")
    assert [i.label for i in ordinal.items] == [4, 2]


def test_an_unknown_label_names_file_line_and_field(tmp_path):
    rows = [*VERDICTS[:3], {"question": "q", "response": "r", "label": "maybe"}]
    path = write_jsonl(tmp_path / "verdicts.jsonl", rows)
    with pytest.raises(CalibrationDataError) as caught:
        load_labelled(path, kind="binary")
    message = caught.value.message
    assert f"{path} line 4, field 'label'" in message
    assert "unknown label 'maybe'" in message and "pass" in message and "fail" in message
    pairs = write_jsonl(tmp_path / "pairs.jsonl", [{**PAIRS[0], "label": 3}])
    with pytest.raises(CalibrationDataError, match=r"line 1, field 'label': unknown label 3; "
                       r"a pairwise label is 1 or A"):
        load_labelled(pairs)
    with pytest.raises(CalibrationDataError, match=r"record 2, field 'label': unknown label "
                       r"7; expected a whole number from 1 to 5"):
        load_labelled([{"output": "a", "label": 2}, {"output": "b", "label": 7}],
                      kind="ordinal", scale="1-5")


def test_missing_label_unknown_column_and_duplicate_ids(tmp_path):
    with pytest.raises(CalibrationDataError, match=r"line 2, field 'verdict': missing"):
        load_labelled(write_jsonl(tmp_path / "a.jsonl", [{"output": "x", "verdict": "pass"},
                                                         {"output": "y"}]), label="verdict")
    with pytest.raises(CalibrationDataError, match=r"unknown column\(s\) 'refrence'"):
        load_labelled([{"output": "x", "refrence": "y", "label": "pass"}])
    with pytest.raises(CalibrationDataError, match=r"rows, field 'id': duplicate id 'a' "
                       r"given 3 times \(record 1, record 2, record 4\); each id must be "
                       r"given once"):
        load_labelled([{"id": "a", "output": "x", "label": 1},
                       {"id": "a", "output": "y", "label": 0},
                       {"id": "b", "output": "y", "label": 0},
                       {"id": "a", "output": "z", "label": 1}])
    mapped = load_labelled([{"my_answer": "x", "label": "pass"}],
                           columns={"output": "my_answer"})
    assert mapped.items[0].output == "x"
    with pytest.raises(CalibrationDataError, match="kind 'ordinal' needs the labels' scale"):
        load_labelled([{"output": "x", "label": 1}], kind="ordinal")
    with pytest.raises(CalibrationDataError, match=r"unsupported labelled file '\.txt'"):
        load_labelled(tmp_path / "labels.txt")


def test_a_judge_whose_scale_does_not_match_the_labels_is_refused():
    natural = load_set("llmbar-natural")
    with pytest.raises(CalibrationDataError) as caught:
        check_fit(natural, build({"type": "rating"}))
    assert "record 1, field 'label'" in caught.value.message
    assert "which of two outputs is better" in caught.value.message
    assert "use a pairwise judge" in caught.value.message
    with pytest.raises(CalibrationDataError, match="compares two outputs"):
        check_fit(load_set("halueval", limit=5), build({"type": "pairwise"}))
    roscoe = load_set("roscoe", limit=5)
    with pytest.raises(CalibrationDataError, match=r"field 'annotations.Overall Quality."
                       r"mean_human': the labels are whole numbers from 1 to 5, but the judge "
                       r"'llm_judge' \(llm_judge\) answers on 0-1"):
        check_fit(roscoe, build({"type": "llm_judge", "prompt": "{{candidate_answer}}"}))
    with pytest.raises(CalibrationDataError, match=r"labels are on 1-5, but the judge "
                       r"'rating' \(rating\) rates on 1-10"):
        check_fit(roscoe, build({"type": "rating", "scale": [1, 10]}))
    check_fit(roscoe, build({"type": "rating", "scale": [1, 5]}))
    pandalm = load_set("pandalm")
    with pytest.raises(CalibrationDataError, match=r"record \d+, field 'annotator1, "
                       r"annotator2, annotator3 \(majority\)': 105 label\(s\) are ties, but "
                       r"the judge 'pairwise' \(pairwise\) may not answer tie"):
        check_fit(pandalm, build({"type": "pairwise", "ties": "forbid"}))


def test_records_lacking_a_field_the_judge_needs_are_refused(tmp_path):
    path = write_jsonl(tmp_path / "v.jsonl", [
        {"question": "q1", "response": "a", "reference": "r", "label": "pass"},
        {"question": "q2", "response": "b", "label": "fail"}])
    labelled = load_labelled(path)
    judge = build({"type": "llm_judge",
                   "prompt": "{{question}} {{reference_answer}} {{candidate_answer}}"})
    with pytest.raises(CalibrationDataError) as caught:
        check_fit(labelled, judge)
    assert f"{path} line 2, field 'reference': missing or empty" in caught.value.message
    assert "{{reference_answer}}" in caught.value.message and "1 of 2" in caught.value.message
    with pytest.raises(CalibrationDataError, match="compares the output with a reference"):
        check_fit(labelled, build({"type": "semantic_similarity"}))
    with pytest.raises(CalibrationDataError, match=r"uses \{\{expected_outcome\}\}"):
        check_fit(labelled, build({"type": "llm_judge"}))  # its default prompt grades on it
    no_output = load_labelled([{"question": "q", "label": "pass"}])
    with pytest.raises(CalibrationDataError, match=r"field 'output': missing or empty"):
        check_fit(no_output, build({"type": "rating"}))


async def test_bad_input_fails_before_any_judge_call(tmp_path, mock_server, mock_model):
    path = write_jsonl(tmp_path / "v.jsonl", [{"response": "a", "label": "pass"},
                                              {"response": "b", "label": "perhaps"}])
    store = f"sqlite:///{tmp_path}/runs.db"
    with pytest.raises(CalibrationDataError, match="line 2, field 'label'"):
        await calibrate_async(path, judge={"type": "rating"}, judge_model=mock_model,
                              store=store)
    with pytest.raises(CalibrationDataError, match="which of two outputs"):
        await calibrate_async("llmbar-natural", judge={"type": "rating"},
                              judge_model=mock_model, store=store)
    with pytest.raises(CalibrationDataError, match="unknown calibration set 'llmbar-nat'"):
        await calibrate_async("llmbar-nat", judge_model=mock_model, store=store)
    assert mock_server.stats.requests == 0

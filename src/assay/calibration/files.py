"""A user's own labelled data: JSONL, JSON, CSV, a list of dicts or a pandas DataFrame.

One row per item. Columns are recognised by their usual names (:data:`COLUMNS`) or mapped with
``columns={"output": "my_answer"}``; the human label is the ``label`` column unless
``label=`` names another. A column that is none of these is an error naming it (a typo must
not silently drop the reference a judge needs), as are a missing label and a label that is not
one of its kind's values, each with the file, the line and the column.

The kind is given (``kind=``) or read from the data: rows with a second output are
``pairwise``; numbers other than 0 and 1 are ``score``s; anything else is ``binary`` (pass/fail).
``ordinal`` labels need ``kind="ordinal"`` and their ``scale`` (such as ``"1-5"``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from itertools import islice
from pathlib import Path
from typing import Any

from assay.calibration.items import (
    KINDS,
    CalibrationDataError,
    Kind,
    LabelledItem,
    LabelledSet,
    Where,
    infer_kind,
    normal_label,
    refuse_duplicate_ids,
)
from assay.calibration.sets import read_json, read_json_lines
from assay.suites.dataset import csv_records

COLUMNS: dict[str, tuple[str, ...]] = {
    "id": ("id", "case_id", "item_id"),
    "input": ("input", "question", "instruction", "prompt", "query"),
    "output": ("output", "response", "answer", "output_1", "response1", "response_1"),
    "output_2": ("output_2", "response2", "response_2", "baseline"),
    "reference": ("reference", "expected_output", "reference_answer", "expected"),
    "context": ("context", "contexts", "reference_context", "source"),
    "guidelines": ("guidelines", "criteria", "rubric"),
    "group": ("group", "subset", "category"),
    "ratings": ("ratings",),
    "rationale": ("rationale", "comment", "reason", "explanation"),
}
"""Each item field and the column names that mean it, first match wins."""


def parse_scale(value: Any) -> tuple[float, float] | None:
    """``"1-5"``, ``[1, 5]`` or ``(1, 5)`` as a (low, high) pair; None for None."""
    if value is None:
        return None
    if isinstance(value, str):
        low, sep, high = value.strip().partition("-")
        if not sep:
            raise CalibrationDataError(f"scale {value!r}: expected LOW-HIGH, such as 1-5")
        value = (low, high)
    try:
        low_f, high_f = (float(v) for v in value)
    except (TypeError, ValueError):
        raise CalibrationDataError(f"scale {value!r}: expected two numbers, such as 1-5") \
            from None
    if not low_f < high_f:
        raise CalibrationDataError(f"scale {value!r}: the low end must be below the high end")
    return low_f, high_f


def rows_of(data: Any, limit: int | None = None
            ) -> tuple[str, list[tuple[Where, dict[str, Any]]]]:
    """(name of the source, rows each with where it comes from) for any accepted data; the
    first ``limit`` rows when given, a file read no further than they are (``--limit 10`` of
    a file of millions of rows neither waits for nor holds the rest)."""
    if limit is not None and limit < 1:
        raise CalibrationDataError(f"limit {limit}: expected at least 1 item")
    if isinstance(data, str | Path):
        path = Path(data)
        suffix = "".join(path.suffixes[-2:]) if path.suffix == ".gz" else path.suffix
        suffix = suffix.lower()
        if suffix in (".jsonl", ".jsonl.gz"):
            rows = [(Where(str(path), line=n), r) for n, r in read_json_lines(path, limit)]
        elif suffix in (".json", ".json.gz"):
            found = read_json(path)
            if not isinstance(found, list):
                raise CalibrationDataError(f"{path}: expected a JSON list of rows")
            rows = [(Where(str(path), record=i), r)
                    for i, r in enumerate(found[:limit], 1)]
        elif suffix == ".csv":
            rows = [(Where(str(path), line=line), row) for line, row in
                    islice(csv_records(path, CalibrationDataError), limit)]
        else:
            raise CalibrationDataError(f"{path}: unsupported labelled file {suffix or path.name!r};"
                                       " expected .jsonl, .json or .csv")
        return str(path), rows
    if type(data).__name__ == "DataFrame" and hasattr(data, "to_dict"):
        records = (data if limit is None else data.head(limit)).to_dict(orient="records")
        return "dataframe", [(Where("dataframe", record=i), _unmissing(r))
                             for i, r in enumerate(records, 1)]
    if isinstance(data, Iterable) and not isinstance(data, bytes | Mapping):
        return "rows", [(Where("rows", record=i), r)
                        for i, r in enumerate(islice(data, limit), 1)]
    raise CalibrationDataError(f"labelled data of type {type(data).__name__} is not accepted: "
                               "give a set name, a .jsonl/.json/.csv file, a list of dicts or "
                               "a pandas DataFrame")


def load_labelled(data: Any, *, kind: Kind | None = None, label: str = "label",
                  scale: Any = None, columns: Mapping[str, str] | None = None,
                  name: str | None = None, limit: int | None = None) -> LabelledSet:
    """A labelled set from a user's rows (see the module's description)."""
    if kind is not None and kind not in KINDS:
        raise CalibrationDataError(f"kind {kind!r}: expected one of {', '.join(KINDS)}")
    bounds = parse_scale(scale)
    if kind == "ordinal" and bounds is None:
        raise CalibrationDataError("kind 'ordinal' needs the labels' scale, such as 1-5")
    source, rows = rows_of(data, limit)
    if not rows:
        raise CalibrationDataError(f"{source}: no rows")
    mapping = _mapping(columns)
    fields = [_fields(row, where, mapping, label) for where, row in rows]
    chosen: Kind = kind or _infer(fields)
    ids = [(_item_id(values, where), where) for (where, _row), values in zip(rows, fields,
                                                                            strict=True)]
    refuse_duplicate_ids(ids, "id")
    items = []
    for (where, _row), values, (item_id, _) in zip(rows, fields, ids, strict=True):
        value = normal_label(chosen, values["label"], where, label, bounds)
        ratings = values.get("ratings")
        if ratings is not None:
            if not isinstance(ratings, list):
                raise CalibrationDataError(f"{where.at('ratings')}: expected a list of each "
                                           "human's label")
            ratings = [normal_label(chosen, r, where, "ratings", bounds) for r in ratings]
        items.append(LabelledItem(
            id=item_id, input=_input(values.get("input"), where),
            output=values.get("output"), output_2=values.get("output_2"),
            reference=values.get("reference"),
            context=_texts(values.get("context"), where, "context"),
            guidelines=_texts(values.get("guidelines"), where, "guidelines"),
            label=value, ratings=ratings,
            group=str(values["group"]) if values.get("group") is not None else None,
            rationale=str(values["rationale"]) if values.get("rationale") not in (None, "")
            else None,
            file=where.file, record=where.record, line=where.line))
    level = {"pairwise": "nominal", "binary": "nominal", "ordinal": "ordinal",
             "score": "interval"}[chosen]
    return LabelledSet(
        name=name or (Path(source).stem if source not in ("rows", "dataframe") else source),
        kind=chosen, items=items, title=source, scale=bounds,
        files=[source] if source not in ("rows", "dataframe") else [],
        ratings_level=level if any(i.ratings for i in items) else None,  # type: ignore[arg-type]
        label_field=label)


def _item_id(values: dict[str, Any], where: Where) -> str:
    """A row's id, or one made from its content where the data gives none."""
    item_id = values.get("id")
    if item_id is None:
        return "item-" + hashlib.sha1(json.dumps(
            [values.get("input"), values.get("output"), values.get("output_2")],
            default=str, sort_keys=True).encode()).hexdigest()[:10]
    if isinstance(item_id, bool) or not isinstance(item_id, str | int):
        raise CalibrationDataError(f"{where.at('id')}: expected text or a whole number")
    return str(item_id)


def _mapping(columns: Mapping[str, str] | None) -> dict[str, str]:
    found: dict[str, str] = {}
    for field_name, column in (columns or {}).items():
        if field_name not in COLUMNS:
            raise CalibrationDataError(f"columns: unknown field {field_name!r}; map columns "
                                       f"onto {', '.join(COLUMNS)}")
        found[field_name] = column
    return found


def _fields(row: Any, where: Where, mapping: dict[str, str], label: str) -> dict[str, Any]:
    if not isinstance(row, Mapping):
        raise CalibrationDataError(f"{where.at()}: a row must be an object of column -> value")
    if label not in row or row[label] is None:
        raise CalibrationDataError(f"{where.at(label)}: missing: every row needs the human "
                                   f"label (the column is {label!r}; name another with label=)")
    values: dict[str, Any] = {"label": row[label]}
    used = {label}
    for field_name, names in COLUMNS.items():
        candidates = (mapping[field_name],) if field_name in mapping else names
        for column in candidates:
            if column in row and column not in used:
                used.add(column)
                values[field_name] = row[column]
                break
    unknown = [str(k) for k in row if k not in used]
    if unknown:
        accepted = "; ".join(f"{f}: {', '.join(n)}" for f, n in COLUMNS.items())
        raise CalibrationDataError(
            f"{where.at()}: unknown column(s) {', '.join(repr(u) for u in unknown)}. "
            f"Recognised columns, by field: {accepted}; the label column is {label!r}. Map "
            "others with columns={'output': 'my_column'}")
    return values


def _infer(fields: list[dict[str, Any]]) -> Kind:
    return infer_kind([v["label"] for v in fields],
                      pairs=any(v.get("output_2") not in (None, "") for v in fields))


def _input(value: Any, where: Where) -> str | dict[str, Any]:
    if value is None:
        return ""
    if isinstance(value, str | dict):
        return value
    raise CalibrationDataError(f"{where.at('input')}: expected text or an object")


def _texts(value: Any, where: Where, field_name: str) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise CalibrationDataError(f"{where.at(field_name)}: expected text or a list of texts")


def _unmissing(row: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in row.items():
        if isinstance(value, float) and value != value:
            value = None
        tolist = getattr(value, "tolist", None)
        if callable(tolist) and type(value).__module__.startswith("numpy"):
            value = tolist()
        out[str(key)] = value
    return out

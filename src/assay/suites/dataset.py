"""Rows of data -> a :class:`Suite`: lists of dicts, DataFrames, CSV, Parquet and plain JSONL.

This is how :func:`assay.evaluate` takes data the way MLflow, DeepEval and Ragas users hold it:
one row per case, with columns for the input, the expected output, and (when the agent is not
run) the output it gave. Column names are recognised by their usual spellings
(:data:`COLUMN_NAMES`), or mapped explicitly (``columns={"input": "question"}``). A column that
is neither is an error naming it and what is accepted, before any call: a typo must not
silently drop the expected output from every judgement.

A row with an output becomes a case with a recorded execution: it is judged as given, and no
target runs unless one is passed.
"""

from __future__ import annotations

import csv
import hashlib
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay._util import jsondata
from assay._util.control_chars import quoted
from assay._util.gc_pause import gc_paused
from assay._util.limits import json_surrogate_problem
from assay._util.validation import field_problems
from assay.errors import ConfigError
from assay.suites.model import Suite, SuiteCase, id_problem
from assay.types.case import Case
from assay.types.config import DATA_FILE_OPTIONS
from assay.types.execution import Execution
from assay.types.json import dump_json
from assay.types.messages import Message
from assay.types.records import SourceLocation

FIELDS = ("id", "input", "expected_output", "output", "expected_outcomes", "guidelines",
          "retrieved_context", "reference_context", "trace", "messages", "metadata",
          "latency_ms", "expected_facts", "expected_retrieved_context", "guidelines_context",
          "expectations", "custom_expected", "custom_inputs", "custom_outputs", "tool_calls")
"""The typed fields a row maps onto."""

COLUMN_NAMES: dict[str, tuple[str, ...]] = {
    "id": ("id", "case_id", "eval_id", "request_id"),
    "input": ("input", "inputs", "request", "question", "query", "prompt"),
    "expected_output": ("expected_output", "expected", "expected_response", "reference",
                        "ground_truth", "reference_answer"),
    "output": ("output", "outputs", "response", "actual_output", "prediction"),
    "expected_outcomes": ("expected_outcomes", "expected_outcome", "outcomes"),
    "guidelines": ("guidelines",),
    "retrieved_context": ("retrieved_context", "context", "contexts"),
    "reference_context": ("reference_context",),
    "trace": ("trace", "spans"),
    "messages": ("messages", "output_messages"),
    "metadata": ("metadata", "tags"),
    "latency_ms": ("latency_ms",),
    "expected_facts": ("expected_facts",),
    "expected_retrieved_context": ("expected_retrieved_context",),
    "guidelines_context": ("guidelines_context",),
    "expectations": ("expectations",),
    "custom_expected": ("custom_expected",),
    "custom_inputs": ("custom_inputs",),
    "custom_outputs": ("custom_outputs",),
    "tool_calls": ("tool_calls",),
}
"""Each field and the column names that mean it, first match wins. Databricks' legacy columns
(``request``, ``response``, ``expected_response``, ``retrieved_context``...) and MLflow 3's
(``inputs``, ``outputs``, ``expectations``, ``tags``) are among them."""

EXPECTATION_KEYS: dict[str, str] = {
    "expected_response": "expected_output",
    "expected_facts": "expected_facts",
    "guidelines": "guidelines",
    "expected_retrieved_context": "expected_retrieved_context",
}
"""MLflow's reserved ``expectations`` keys and the typed field each one fills; any other key
(``expected_tool_calls`` included) stays in ``Case.expectations`` for scorers."""

EXECUTION_FIELDS = ("output", "messages", "trace", "retrieved_context", "custom_outputs",
                    "tool_calls")
"""Fields that record what the agent did: a row with a value in any of them is judged as given."""

DATA_SUFFIXES = (".csv", ".parquet", ".pq")


class DatasetError(ConfigError):
    """Data that cannot become cases; the message names the row and column."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="invalid_data")


def suite_from_rows(rows: Iterable[Any], *, name: str = "dataset",
                    columns: Mapping[str, str] | None = None,
                    source: Path | None = None) -> Suite:
    """A suite of one case per row. Rows are dicts, :class:`Case` or :class:`SuiteCase`.

    Every case is kept, so the collector is paused while they are built (see
    :mod:`assay._util.gc_pause`): on 2,000 rows its passes over the growing list took up to two
    thirds of the time.
    """
    with gc_paused():
        return _suite_from_rows(rows, name, _mapping(columns), source)


def _suite_from_rows(rows: Iterable[Any], name: str, mapping: Mapping[str, str | None],
                     source: Path | None) -> Suite:
    cases: list[SuiteCase] = []
    seen: dict[str, int] = {}
    for index, row in enumerate(rows):
        if isinstance(row, SuiteCase):
            item = row
        elif isinstance(row, Case):
            item = SuiteCase(case=row)
        elif isinstance(row, Mapping):
            item = _row_case(dict(row), index, mapping, source)
        else:
            raise DatasetError(f"row {index}: a {type(row).__name__}, not a dict or a Case "
                               "(rows are dicts of column -> value)")
        case_id = item.case.id
        if case_id in seen:
            if mapping.get("id") is not None or _explicit_id(row):
                line = item.source.line if item.source is not None else None
                raise DatasetError(f"{_where(index, source, line)}: duplicate id {case_id!r} "
                                   f"(first in row {seen[case_id]}); ids must be unique")
            item.case.id = _unique(case_id, seen)
        seen[item.case.id] = index
        cases.append(item)
    if not cases:
        raise DatasetError("the data has no rows")
    return Suite(name=name, source=source, cases=cases)


def suite_from_dataframe(frame: Any, *, name: str = "dataframe",
                         columns: Mapping[str, str] | None = None) -> Suite:
    """A pandas DataFrame as a suite (missing cells, NaN, become None)."""
    records = frame.to_dict(orient="records")
    return suite_from_rows(({k: _unmissing(v) for k, v in r.items()} for r in records),
                           name=name, columns=columns)


def suite_from_file(path: Path, *, columns: Mapping[str, str] | None = None) -> Suite:
    """A CSV, Parquet or plain JSONL file of rows as a suite, each case located by line."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        rows = list(_csv_rows(path))
    elif suffix in (".parquet", ".pq"):
        rows = _parquet_rows(path)
    elif suffix == ".jsonl":
        rows = list(_jsonl_rows(path))
    else:
        raise DatasetError(f"{path}: unsupported data file {suffix!r}; expected .csv, "
                           ".parquet or .jsonl")
    suite = suite_from_rows(rows, name=path.stem, columns=columns, source=path.resolve())
    _refuse_a_sidecar_not_read(path)
    sidecar = data_sidecar(path)
    if sidecar is not None:
        suite = _with_sidecar(suite, sidecar)
    return suite


def _refuse_a_sidecar_not_read(path: Path) -> None:
    """A ``<name>.yaml`` beside a CSV or Parquet file that is not its run options is an
    error, never ignored: its evaluators (or a typo in one key) would silently not judge."""
    from assay.suites.evaljsonl import sidecar_of

    sidecar = sidecar_of(path)
    if sidecar is None or (path.suffix.lower() == ".jsonl" and not _meant_as_run_options(sidecar)):
        return  # a JSONL file's other sidecar makes it AgentV's suite (never read here)
    reason = _not_run_options(sidecar)
    if reason is not None:
        raise DatasetError(f"{reason} (it sits beside {path.name}, whose run options it "
                           "would hold)")


SIDECAR_OPTIONS = DATA_FILE_OPTIONS
"""Run options a data file's sidecar may set (CLI flags and Python arguments win)."""
SIDECAR_KEYS = (*SIDECAR_OPTIONS, "evaluators", "name", "description")


def data_sidecar(path: Path) -> Path | None:
    """The ``<name>.yaml`` (or ``.yml``) beside a data file that holds run options for it:
    a mapping with only :data:`SIDECAR_KEYS`, at least one of them a run option or
    ``evaluators`` (an AgentV sidecar has ``execution`` and other keys instead)."""
    from assay.suites.evaljsonl import sidecar_of

    sidecar = sidecar_of(path)
    return sidecar if sidecar is not None and _not_run_options(sidecar) is None else None


def _not_run_options(sidecar: Path) -> str | None:
    """Why ``sidecar`` is not a data file's run options, or None when it is."""
    from assay._util.yaml_source import load_yaml_file
    from assay.errors import EvaluationError

    try:  # the bounded loader: a hostile sidecar cannot blow up memory
        loaded = load_yaml_file(sidecar)
    except EvaluationError as exc:
        return exc.message
    data = loaded.data
    if not isinstance(data, dict):
        return f"{sidecar}: expected a mapping of run options, not {type(data).__name__}"
    unknown = [str(k) for k in data if k not in SIDECAR_KEYS]
    if unknown:
        hint = " (a data file's evaluators go at the top level, not under execution:)" \
            if "execution" in data else ""
        return (f"{loaded.source.locate((unknown[0],))}: unknown key(s) "
                f"{', '.join(map(repr, unknown))} for a data "
                f"file's sidecar; expected: {', '.join(SIDECAR_KEYS)}{hint}")
    if not any(k in data for k in (*SIDECAR_OPTIONS, "evaluators")):
        return (f"{sidecar}: sets no run option; expected evaluators or one of "
                f"{', '.join(SIDECAR_OPTIONS)}")
    return None


def _meant_as_run_options(sidecar: Path) -> bool:
    """Whether ``sidecar`` sets a run option or ``evaluators``, keys AgentV's suite files do
    not have: it is then a data file's run options, and a typo in another of its keys is that
    file's error (naming the key), not a reason to read the data as AgentV's cases."""
    from assay._util.yaml_source import load_yaml_file
    from assay.errors import EvaluationError

    try:
        data = load_yaml_file(sidecar).data
    except EvaluationError:
        return False
    return isinstance(data, dict) and any(k in data for k in (*SIDECAR_OPTIONS, "evaluators"))


def _with_sidecar(suite: Suite, sidecar: Path) -> Suite:
    """The suite with the sidecar's evaluators and run options (validated with locations)."""
    from assay._util.yaml_source import load_yaml_file
    from assay.judges.registry import build

    loaded = load_yaml_file(sidecar)
    data = loaded.data if isinstance(loaded.data, dict) else {}
    update: dict[str, Any] = {"metadata": {**suite.metadata, "run_options_file": str(sidecar),
                                           "run_options": {k: v for k, v in data.items()
                                                           if k in SIDECAR_OPTIONS}}}
    if isinstance(data.get("name"), str):
        update["name"] = data["name"]
    if isinstance(data.get("description"), str):
        update["description"] = data["description"]
    raw = data.get("evaluators")
    if raw is not None:
        if not isinstance(raw, list) or not all(isinstance(e, dict) for e in raw):
            mark = loaded.source.locate(("evaluators",))
            raise DatasetError(f"{mark}: evaluators must be a list of evaluator mappings "
                               "({type: ..., ...})")
        update["evaluators"] = [build(dict(e), f"{loaded.source.locate(('evaluators', i))}")
                                for i, e in enumerate(raw)]
    return suite.model_copy(update=update)


def looks_like_rows(path: Path) -> bool:
    """True for a JSONL file of data rows rather than an AgentV suite: a sidecar of run
    options (:func:`data_sidecar`), or no sidecar and a first row with a key AgentV cases do
    not have (``output``, ``response``, ``request``...)."""
    from assay.suites.evaljsonl import sidecar_of
    from assay.suites.evalyaml import CASE_KEYS

    sidecar = sidecar_of(path)
    if sidecar is not None:  # run options (or a typo in them) make it data; else AgentV's
        return _meant_as_run_options(sidecar)
    try:
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    first = jsondata.loads(line)
                    return isinstance(first, dict) and any(k not in CASE_KEYS for k in first)
    except (OSError, ValueError):
        return False
    return False


# -- rows ----------------------------------------------------------------------------------


def _mapping(columns: Mapping[str, str] | None) -> dict[str, str | None]:
    mapping: dict[str, str | None] = {}
    for field, column in (columns or {}).items():
        if field not in FIELDS:
            raise DatasetError(f"columns: unknown field {field!r}; map columns onto "
                               f"{', '.join(FIELDS)}")
        mapping[field] = column
    return mapping


def _explicit_id(row: Any) -> bool:
    return isinstance(row, Mapping) and any(k in row for k in COLUMN_NAMES["id"])


def _row_case(row: dict[str, Any], index: int, mapping: Mapping[str, str | None],
              source: Path | None) -> SuiteCase:
    values: dict[str, Any] = {}
    used: set[str] = set()
    line = row.get("__line__") if isinstance(row.get("__line__"), int) else None
    where = _where(index, source, line)
    for field in FIELDS:
        column = mapping.get(field)
        if column is not None:
            if column not in row:
                names = [str(k) for k in row if k != "__line__"]
                raise DatasetError(f"{where}: no column {column!r} (mapped to {field}); "
                                   f"columns: {', '.join(names) or 'none'}")
            candidates: tuple[str, ...] = (column,)
        else:
            candidates = COLUMN_NAMES[field]
        for candidate in candidates:
            if candidate in row and candidate not in used:
                used.add(candidate)
                values[field] = row[candidate]
                if candidate == "expected_response":
                    values["expected_output_key"] = "expected_response"
                break
    unknown = [str(k) for k in row if k not in used and k != "__line__"]
    if unknown:
        accepted = "; ".join(f"{f}: {', '.join(n)}" for f, n in COLUMN_NAMES.items())
        raise DatasetError(
            f"{where}: unknown column(s) {', '.join(repr(u) for u in unknown)}. "
            f"Recognised columns, by field: {accepted}. Map others with "
            "columns={'input': 'my_column'}, or put extra values in a 'metadata' dict")
    return _case(values, where, source, line)


def _where(index: int, source: Path | None, line: int | None) -> str:
    """A row as every error about it names it: its index, and the file and line it came
    from, so a mistake in a CSV or JSONL file is found where it is."""
    return f"row {index}" + (f" ({source}:{line})" if source and line else "")


def _case(values: dict[str, Any], where: str, source: Path | None,
          line: int | None) -> SuiteCase:
    raw_input = values.get("input", "")
    if isinstance(raw_input, list):
        raw_input = _messages(raw_input, where, "input")
    elif raw_input is not None and not isinstance(raw_input, str | dict):
        raise DatasetError(f"{where}, column input: {type(raw_input).__name__} is not "
                           "accepted (expected text, a dict of inputs, or chat messages)")
    _split_expectations(values, where)
    case_id = values.get("id")
    if case_id is None:
        case_id = "row-" + hashlib.sha1(dump_json(raw_input).encode()).hexdigest()[:10]
    elif not isinstance(case_id, str | int) or isinstance(case_id, bool):
        raise DatasetError(f"{where}, column id: {type(case_id).__name__} is not accepted "
                           "(expected text or a whole number)")
    elif isinstance(case_id, str) and (problem := id_problem(case_id)) is not None:
        raise DatasetError(f"{where}, column id: the id {problem} (expected a unique name, "
                           "or no id for one made from the input)")
    try:
        case = Case.model_validate({
            "id": str(case_id), "input": raw_input if raw_input is not None else "",
            "expected_output": values.get("expected_output"),
            "expected_outcomes": values.get("expected_outcomes"),
            "guidelines": values.get("guidelines"),
            "reference_context": values.get("reference_context"),
            "metadata": values.get("metadata") or {},
            "expected_facts": values.get("expected_facts"),
            "expected_retrieved_context": values.get("expected_retrieved_context"),
            "guidelines_context": values.get("guidelines_context"),
            "expectations": values.get("expectations"),
            "custom_expected": values.get("custom_expected"),
            "custom_inputs": values.get("custom_inputs"),
            "expected_output_key": values.get("expected_output_key", "expected_output")})
    except ValidationError as exc:
        raise DatasetError(f"{where}: {field_problems(exc)}") from None
    execution = None
    # a cell left empty (None, a DataFrame's NaN) records nothing: a row whose output cell is
    # empty has no recorded output, as one without the column has, never the answer ""
    if any(values.get(k) is not None for k in EXECUTION_FIELDS):
        try:
            messages = _messages(values.get("messages") or [], where, "messages")
            messages += tool_call_messages(values.get("tool_calls"), where)
            execution = Execution(
                input=case.input, output=values.get("output"), messages=messages,
                trace=values.get("trace") or [],
                retrieved_context=values.get("retrieved_context") or [],
                latency_ms=values.get("latency_ms"),
                custom_outputs=values.get("custom_outputs"))
        except (ValidationError, ValueError) as exc:
            detail = field_problems(exc) if isinstance(exc, ValidationError) else str(exc)
            raise DatasetError(f"{where}: {detail}") from None
    return SuiteCase(case=case, execution=execution,
                     source=SourceLocation(file=str(source), line=line) if source else None)


def _split_expectations(values: dict[str, Any], where: str) -> None:
    """MLflow's ``expectations`` dict: its reserved keys fill typed fields, the rest stays."""
    raw = values.get("expectations")
    if raw is None:
        return
    if not isinstance(raw, Mapping):
        raise DatasetError(f"{where}, column expectations: a {type(raw).__name__}, expected a "
                           "dict of name -> expected value")
    rest: dict[str, Any] = {}
    for key, value in raw.items():
        field = EXPECTATION_KEYS.get(str(key))
        if field is None:
            rest[str(key)] = value
            continue
        if values.get(field) is not None:
            raise DatasetError(f"{where}: expectations.{key} and the {field} column are both "
                               "given; give it once")
        values[field] = value
        if key == "expected_response":
            values["expected_output_key"] = "expected_response"
    values["expectations"] = rest


def tool_call_messages(raw: Any, where: str) -> list[Message]:
    """Databricks' ``tool_calls`` column as chat messages: an assistant turn calling the tools
    and a ``tool`` reply for each result, so every tool-call evaluator reads them as usual.

    Calls are OpenAI tool calls or Databricks' ``{tool_name, tool_call_args, tool_call_id,
    tool_call_result}``.
    """
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise DatasetError(f"{where}, column tool_calls: expected a list of tool calls")
    calls: list[dict[str, Any]] = []
    replies: list[Message] = []
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise DatasetError(f"{where}, column tool_calls[{index}]: a {type(item).__name__}, "
                               "expected a tool call object")
        if "function" in item:
            calls.append(dict(item))
            continue
        name = item.get("tool_name") or item.get("name")
        if not isinstance(name, str) or not name:
            raise DatasetError(f"{where}, column tool_calls[{index}]: no tool_name (expected "
                               "{tool_name, tool_call_args, tool_call_id, tool_call_result} "
                               "or an OpenAI tool call)")
        call_id = str(item.get("tool_call_id") or f"call_{index}")
        args = item.get("tool_call_args", item.get("arguments", {}))
        calls.append({"id": call_id, "type": "function", "function": {
            "name": name, "arguments": args if isinstance(args, str) else dump_json(args)}})
        if item.get("tool_call_result") is not None:
            result = item["tool_call_result"]
            replies.append(Message(role="tool", tool_call_id=call_id,
                                   content=result if isinstance(result, str)
                                   else dump_json(result)))
    try:
        call_message = Message.model_validate({"role": "assistant", "content": None,
                                               "tool_calls": calls})
    except ValidationError as exc:
        raise DatasetError(f"{where}, column tool_calls: {field_problems(exc)}") from None
    return [call_message, *replies] if calls else replies


def _messages(raw: Any, where: str, column: str) -> list[Message]:
    if not isinstance(raw, list):
        raise DatasetError(f"{where}, column {column}: expected a list of chat messages")
    try:
        return [m if isinstance(m, Message) else Message.model_validate(m) for m in raw]
    except ValidationError as exc:
        raise DatasetError(f"{where}, column {column}: not chat messages "
                           f"({{role, content}}): {field_problems(exc)}") from None


def _unique(case_id: str, seen: dict[str, int]) -> str:
    n = 2
    while f"{case_id}-{n}" in seen:
        n += 1
    return f"{case_id}-{n}"


def _unmissing(value: Any) -> Any:
    """pandas' missing values (NaN, None, NaT) as None; numpy scalars and arrays as Python."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and type(value).__module__.startswith("numpy"):
        value = tolist()
    # Parquet nests: a column of dicts (MLflow's expectations, chunks) holds arrays inside.
    if isinstance(value, dict):
        return {k: _unmissing(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unmissing(v) for v in value]
    return value


# -- files ---------------------------------------------------------------------------------


def _csv_rows(path: Path) -> Iterator[dict[str, Any]]:
    """CSV rows, each with its line (see :func:`csv_records`)."""
    for line, row in csv_records(path, DatasetError):
        yield {"__line__": line, **row}


def csv_records(path: Path, error: Callable[[str], Exception]
                ) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, row) for each row of a CSV file: the one way assay reads a CSV a person gives
    it (a dataset suite, a labelled set, a run's labels). Cells are read by :func:`csv_cell`.

    A byte-order mark (Excel's "CSV UTF-8" starts with one) is not part of the first
    column's name. A quote never closed is an error at the line where its row starts, not the
    rest of the file swallowed into one cell; so is a row with more cells than the header.
    Every problem is raised as ``error(message)``, the message naming the file and the line.
    """
    start = 1  # the line where the row being read starts
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle, strict=True)
            _refuse_repeated_columns(path, reader.fieldnames or [], error)  # read first
            while True:
                start = reader.line_num + 1
                row = next(reader, None)
                if row is None:
                    return
                if None in row:
                    raise error(f"{path} line {reader.line_num}: more cells than header "
                                "columns")
                yield reader.line_num, {key: csv_cell(cell) for key, cell in row.items()}
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: a directory, not a CSV file") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text ({exc.reason})") from None
    except csv.Error as exc:
        unclosed = "unexpected end of data" in str(exc)
        raise error(f"{path} line {start}: not a CSV row: "
                    + ("a quoted cell is never closed (a \" with no closing \")" if unclosed
                       else str(exc))) from None


def _refuse_repeated_columns(path: Path, names: Sequence[str],
                             error: Callable[[str], Exception]) -> None:
    """A header that names a column twice is an error: a row is read as a mapping, so the
    last of the two cells would be kept and the other dropped without a word (``label,
    label`` with ``pass,fail`` read as ``fail``)."""
    seen: set[str] = set()
    for name in names:
        if name and name in seen:
            raise error(f"{path} line 1: the column {quoted(name)} is named twice; expected "
                        "each column once")
        seen.add(name)


def csv_cell(cell: str | None) -> Any:
    """A CSV cell as data: empty is missing, a JSON list or object is parsed, else text."""
    if cell is None or cell == "":
        return None
    stripped = cell.strip()
    if stripped[:1] in ("[", "{"):
        try:
            return jsondata.loads(stripped)
        except ValueError:
            return cell
    return cell


def _jsonl_rows(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = jsondata.loads_unique(line)
            except ValueError as exc:
                raise DatasetError(f"{path}:{number}: {jsondata.not_json(exc)}") from None
            if not isinstance(row, dict):
                raise DatasetError(f"{path}:{number}: a row must be a JSON object")
            unpaired = json_surrogate_problem(line, row)
            if unpaired is not None:
                raise DatasetError(f"{path}:{number}: {unpaired[0]}")
            yield {**row, "__line__": number}


def _parquet_rows(path: Path) -> list[dict[str, Any]]:
    try:
        import pandas as pd
    except ImportError:
        raise DatasetError(f"{path}: reading Parquet needs pandas and pyarrow: "
                           "pip install 'assay[pandas]'") from None
    try:
        frame = pd.read_parquet(path)
    except ImportError as exc:
        raise DatasetError(f"{path}: reading Parquet needs pyarrow: {exc}") from None
    except Exception as exc:
        raise DatasetError(f"{path}: not a readable Parquet file: {exc}") from None
    return [{k: _unmissing(v) for k, v in r.items()} for r in frame.to_dict(orient="records")]


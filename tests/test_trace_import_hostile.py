"""A trace file whose parts are not the shapes OTLP says is an error naming the file and the
part, from the library and from ``assay run --traces``: never a traceback."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli.app import app
from assay.run.sources import SourceError, TraceQuery, open_source
from assay.run.sources.suite import read_traces
from tests.test_trace_commands import EVAL

SPAN = {"traceId": "0123456789abcdef0123456789abcdef", "spanId": "0123456789abcdef",
        "name": "agent", "startTimeUnixNano": "1790000000000000000",
        "endTimeUnixNano": "1790000001000000000",
        "attributes": [{"key": "output.value", "value": {"stringValue": "a"}}]}


@pytest.mark.parametrize(("export", "said"), [
    ({"resourceSpans": [5]}, "resourceSpans[0] is not an object"),
    ({"resourceSpans": "abc"}, "resourceSpans is not a list"),
    ({"resourceSpans": [{"scopeSpans": [5]}]}, "resourceSpans[0].scopeSpans[0] is not an "
     "object"),
    ({"resourceSpans": [{"scopeSpans": {"spans": []}}]},
     "resourceSpans[0].scopeSpans is not a list"),
    ({"resourceSpans": [{"scopeSpans": [{"spans": [SPAN]}]}, {"scopeSpans": [{"spans": 7}]}]},
     "resourceSpans[1].scopeSpans[0].spans is not a list"),
])
def test_an_otlp_file_of_the_wrong_shape_is_an_error_naming_the_part(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, export: object, said: str) -> None:
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    with pytest.raises(SourceError) as raised:
        read_traces(open_source(f"otlp:{path}"), TraceQuery())
    assert said in str(raised.value) and str(path) in str(raised.value)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "EVAL.yaml").write_text(EVAL)
    result = CliRunner().invoke(app, ["run", "EVAL.yaml", "--traces", f"otlp:{path}",
                                      "--store", f"sqlite:///{tmp_path / 'runs.db'}"])
    assert result.exit_code == 2, result.output
    assert said in " ".join(result.output.split()), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_an_otlp_file_with_missing_parts_is_read_as_having_none(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"resourceSpans": [None, {"scopeSpans": None},
                                                  {"scopeSpans": [{"spans": [SPAN]}]}]}))
    (case,) = read_traces(open_source(f"otlp:{path}"), TraceQuery())
    assert case.trace.trace_id == SPAN["traceId"]


def _said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: Path) -> str:
    """What reading the trace file at ``path`` says, from the library and from ``assay run
    --traces`` alike (exit code 2, no traceback)."""
    with pytest.raises(SourceError) as raised:
        read_traces(open_source(f"otlp:{path}"), TraceQuery())
    said = str(raised.value)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "EVAL.yaml").write_text(EVAL)
    result = CliRunner().invoke(app, ["run", "EVAL.yaml", "--traces", f"otlp:{path}",
                                      "--store", f"sqlite:///{tmp_path / 'runs.db'}"])
    assert result.exit_code == 2, result.output
    assert "".join(said.split()) in "".join(result.output.split()), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return said


def test_an_otlp_file_naming_a_key_twice_is_an_error_naming_the_file_and_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A span naming its traceId twice says two things (which a reader keeps is its own
    choice): the file is not read, and the error names it, the line, the column and the
    key."""
    path = tmp_path / "export.json"
    spans = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [SPAN]}]}]}, indent=1)
    path.write_text(spans.replace('"traceId": ', f'"traceId": "{"f" * 32}",\n  "traceId": '))
    said = _said(tmp_path, monkeypatch, path)
    assert f"otlp:{path}: line 9 column 3: duplicate key 'traceId'" in said, said


def test_a_jsonl_trace_file_naming_a_key_twice_is_an_error_naming_the_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "export.jsonl"
    line = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [SPAN]}]}]})
    path.write_text(line + "\n\n" + line.replace('"name": "agent"',
                                                  '"name": "agent", "name": "other"') + "\n")
    said = _said(tmp_path, monkeypatch, path)
    assert f"otlp:{path}: line 3 column " in said and "duplicate key 'name'" in said, said


def _export(*spans: object) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]})


@pytest.mark.parametrize(("ids", "said"), [
    ({"traceId": "../../etc/passwd"}, "traceId '../../etc/passwd' is not an id: expected 32 "
     "hex digits (16 bytes), not all zero"),
    ({"traceId": "a\x00b\n\x1b[31m"}, "traceId 'a\\x00b\\n\\x1b[31m' is not an id"),
    ({"traceId": "0" * 32}, f"traceId '{'0' * 32}' is not an id"),
    ({"traceId": "ab" * 17}, f"traceId '{'ab' * 17}' is not an id"),
    ({"spanId": "zz" * 8}, "spanId 'zzzzzzzzzzzzzzzz' is not an id: expected 16 hex digits"),
    ({"spanId": None}, "spanId '' is not an id"),
    ({"parentSpanId": "../x"}, "parentSpanId '../x' is not an id"),
    ({"traceId": "../x", "startTimeUnixNano": "soon"}, "traceId '../x' is not an id"),
])
def test_an_otlp_file_span_whose_ids_are_not_otlp_ids_is_an_error_naming_the_field(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ids: dict[str, object],
        said: str) -> None:
    """A trace id from a file becomes a case id as one the receiver stores does: the file is
    held to the receiver's rule (hex, 32 digits for a trace, 16 for a span, not all zero),
    the error naming the file, the record (a JSON Lines file's line) and the field."""
    bad = {**SPAN, **ids}
    path = tmp_path / "export.json"
    path.write_text(_export(SPAN, bad))
    where = "resourceSpans[0].scopeSpans[0].spans[1]"
    assert f"otlp:{path}: {where}: {said}" in _said(tmp_path, monkeypatch, path)
    lines = tmp_path / "export.jsonl"
    lines.write_text(f"{_export(SPAN)}\n\n{_export(bad)}\n")
    assert f"otlp:{lines}: line 3: resourceSpans[0].scopeSpans[0].spans[0]: {said}" \
        in _said(tmp_path, monkeypatch, lines)


def test_otlp_ids_as_the_receiver_takes_them_are_read_from_a_file(tmp_path: Path) -> None:
    """Upper-case hex, ``0x`` hex and base64 ids are OTLP ids, as the receiver reads them."""
    path = tmp_path / "export.json"
    upper = {**SPAN, "traceId": SPAN["traceId"].upper(), "spanId": "0x" + "AB" * 8,
             "parentSpanId": base64.b64encode(bytes(range(1, 9))).decode()}
    path.write_text(_export(upper))
    (case,) = read_traces(open_source(f"otlp:{path}"), TraceQuery())
    assert case.trace.trace_id == SPAN["traceId"]


@pytest.mark.traces  # Phoenix's real client (no server: no span is annotated)
def test_writeback_shows_a_trace_id_holding_escapes_without_obeying_them(tmp_path: Path) -> None:
    """A trace id is the source's text: ``assay writeback`` printed it raw in its problems,
    so an id holding a terminal escape retitled or cleared the terminal. (A Langfuse export's
    ids are Langfuse's text; an OTLP file's are held to OTLP's rule.)"""
    import assay

    path = tmp_path / "export.json"
    evil = "evil\x1b]0;pwned\x07\x1b[2J"
    path.write_text(json.dumps([{"traceId": evil, "type": "SPAN", "name": "agent",
                                 "output": "a"}]))  # no span id: its root span is not known
    store = tmp_path / "runs.db"
    run = assay.evaluate(traces=f"langfuse:{path}", store=store, evaluators=[
        {"type": "contains", "search_text": "a", "name": "a"}])
    result = CliRunner().invoke(app, ["writeback", run.run_id, "--to",
                                      "phoenix:http://127.0.0.1:9", "--store",
                                      f"sqlite:///{store}"])
    assert result.exit_code == 0, result.output
    assert "trace evil\\x1b]0;pwned\\x07\\x1b[2J: its root span is not known" in result.output
    assert "\x1b" not in result.output and "\x07" not in result.output


def _judged_file(tmp_path: Path) -> tuple[Path, Path, bytes]:
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [SPAN]}]}]}))
    (tmp_path / "EVAL.yaml").write_text(EVAL)
    return path, tmp_path / "runs.db", path.read_bytes()


@pytest.mark.parametrize("option", ["--output", "--junit", "--report"])
def test_a_run_never_writes_an_output_over_the_trace_file_it_judges(
        tmp_path: Path, option: str) -> None:
    """``assay run --traces otlp:FILE --output FILE`` judged the traces, then replaced them
    with its result rows: the trace file was not among the files a run uses."""
    path, store, before = _judged_file(tmp_path)
    given = f"html:{path}" if option == "--report" else str(path)
    result = CliRunner().invoke(app, ["run", str(tmp_path / "EVAL.yaml"), "--traces",
                                      f"otlp:{path}", "--store", f"sqlite:///{store}",
                                      option, given])
    assert result.exit_code == 2, result.output
    assert f"is the trace file of otlp:{path}" in result.output
    assert path.read_bytes() == before


def test_writeback_never_writes_the_verdicts_over_the_trace_file_judged(
        tmp_path: Path) -> None:
    """``assay writeback RUN --to otlp:FILE`` with the file the run's traces came from
    replaced those traces with the verdict spans alone."""
    import assay

    path, store, before = _judged_file(tmp_path)
    run = assay.evaluate(traces=f"otlp:{path}", store=store, evaluators=[
        {"type": "contains", "search_text": "a", "name": "a"}])
    result = CliRunner().invoke(app, ["writeback", run.run_id, "--to", f"otlp:{path}",
                                      "--store", f"sqlite:///{store}"])
    assert result.exit_code == 2, result.output
    assert f"is the trace file run {run.run_id} judged (otlp:{path})" in result.output
    assert path.read_bytes() == before
    out = tmp_path / "verdicts.json"
    result = CliRunner().invoke(app, ["writeback", run.run_id, "--to", f"otlp:{out}",
                                      "--store", f"sqlite:///{store}"])
    assert result.exit_code == 0, result.output
    assert "gen_ai.evaluation" in out.read_text()


def test_a_store_named_to_read_traces_from_must_be_there(tmp_path: Path) -> None:
    """``--traces store:sqlite:///typo.db`` created that store (and its directories) and
    judged its no traces: 'no traces to judge', and a new empty file left behind."""
    from assay.store.errors import StoreError

    missing = tmp_path / "no-such-dir" / "typo.db"
    with pytest.raises(StoreError, match=f"no run store at {missing}: the file does not exist"):
        open_source(f"store:sqlite:///{missing}")
    assert not missing.parent.exists()
    made = tmp_path / "runs.db"
    assert open_source("store", store=f"sqlite:///{made}").name.startswith("store:")
    assert made.is_file()  # the run's own store, made as a run makes it


@pytest.mark.parametrize(("trace_id", "said"), [
    ({"a": 1}, """item 0 traceId is '{"a": 1}': expected the trace's id as text"""),
    ("a\x00b", r"item 0 traceId 'a\x00b' holds a NUL character"),
    ("   ", "item 0 traceId '   ' is blank"),
])
def test_a_langfuse_trace_id_no_case_can_have_is_an_error_naming_its_place(
        tmp_path: Path, trace_id: object, said: str) -> None:
    """A Langfuse trace id becomes the case's id: an object was read as its Python spelling
    ("{'a': 1}"), and an id holding a NUL was kept, one PostgreSQL cannot store and the API
    refuses to look up."""
    path = tmp_path / "export.json"
    path.write_text(json.dumps([{"traceId": trace_id, "type": "SPAN", "name": "agent",
                                 "output": "a"}]))
    with pytest.raises(SourceError) as caught:
        read_traces(open_source(f"langfuse:{path}"), TraceQuery())
    assert said in str(caught.value)
    nested = tmp_path / "traces.json"
    nested.write_text(json.dumps([{"id": trace_id, "observations": [
        {"type": "SPAN", "name": "agent", "output": "a"}]}]))
    with pytest.raises(SourceError, match="item 0 id"):
        read_traces(open_source(f"langfuse:{nested}"), TraceQuery())


def test_a_status_filter_is_ok_or_error_and_any_other_value_is_refused(tmp_path: Path) -> None:
    """``--filter status=failed`` (or ``status=ERROR``, as Langfuse writes a level) matched
    no trace: nothing was judged, and ``status!=failed`` judged every trace, both unsaid."""
    from assay.errors import ConfigError

    path, _, _ = _judged_file(tmp_path)
    source = open_source(f"otlp:{path}")
    for said in ("status=failed", "status!=failed", "status=erorr"):
        with pytest.raises(ConfigError, match=r"a trace's status is ok or error \(error when "
                                              r"a span failed\), not"):
            read_traces(source, TraceQuery(filter=said))
    assert len(read_traces(source, TraceQuery(filter="status=OK"))) == 1
    assert read_traces(source, TraceQuery(filter="status=ERROR")) == []

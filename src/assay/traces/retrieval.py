"""Retrieved documents read from a trace's retriever spans."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay._util import jsondata
from assay.traces.tools import _text
from assay.types.execution import Execution, RetrievedDocument
from assay.types.spans import Span, span_type

DOCUMENT_ATTRIBUTE = re.compile(r"retrieval\.documents\.(\d+)\.document\.(.+)")


# -- retrievals --------------------------------------------------------------------------

TEXT_KEYS = ("page_content", "content", "text")
"""Where a document's text is, in order of preference (LangChain, MLflow, LlamaIndex)."""
URI_KEYS = ("doc_uri", "uri", "url", "source")


class Retrieval(BaseModel):
    """One retrieval step: the query, and the documents that came back, in rank order.

    ``documents`` holds the documents that have text. A document with no recognised text field
    is not turned into text (its JSON would be judged as if it were the document); its
    position among the span's documents is listed in ``unparsable`` instead, so a judge can
    report it as an error rather than judge an empty or made-up context.
    """

    model_config = ConfigDict(extra="forbid")

    query: str | None = None
    documents: list[RetrievedDocument] = Field(default_factory=list)
    span_id: str | None = None
    unparsable: list[int] = Field(default_factory=list)
    unparsable_uris: list[str | None] = Field(
        default_factory=list, description="the address of each unparsable document, if any")


def is_retriever_span(span: Span) -> bool:
    return span_type(span) == "RETRIEVER"


def top_level_retrievers(spans: Iterable[Span]) -> list[Span]:
    """Retriever spans with no retriever among their ancestors, in trace order.

    A retriever that calls another retriever (a reranker over a search, a multi-query
    retriever) reports the documents that came out of the whole step once: the inner spans'
    documents would count twice. Parents are followed by ``span_id``; a loop is cut.
    """
    spans = list(spans)
    by_id = {s.span_id: s for s in spans if s.span_id}
    found = []
    for span in spans:
        if not is_retriever_span(span):
            continue
        parent_id, seen, nested = span.parent_id, {span.span_id}, False
        while parent_id and parent_id not in seen:
            seen.add(parent_id)
            parent = by_id.get(parent_id)
            if parent is None:
                break
            if is_retriever_span(parent):
                nested = True
                break
            parent_id = parent.parent_id
        if not nested:
            found.append(span)
    return found


def retrievals(execution: Execution | Iterable[Span], *,
               top_level: bool = False) -> list[Retrieval]:
    """Every retriever span's query and documents, in trace order (only the top-level
    retrievers with ``top_level``: see :func:`top_level_retrievers`)."""
    spans = list(execution.trace if isinstance(execution, Execution) else execution)
    chosen = top_level_retrievers(spans) if top_level else \
        [s for s in spans if is_retriever_span(s)]
    return [_retrieval(s) for s in chosen]


def _retrieval(span: Span) -> Retrieval:
    attributes = span.attributes
    query = attributes.get("input.value", attributes.get("mlflow.spanInputs"))
    return _read_documents(_raw_documents(span), _query(query), span.span_id)


def _read_documents(raw: list[Any], query: str | None, span_id: str | None) -> Retrieval:
    """Documents as given -> a Retrieval: those with text, and the places of those without."""
    documents: list[RetrievedDocument] = []
    unparsable: list[int] = []
    uris: list[str | None] = []
    for index, item in enumerate(raw):
        document = _document(item)
        if document is None:
            unparsable.append(index)
            uris.append(_uri_of(item))
        else:
            documents.append(document)
    return Retrieval(query=query, documents=documents, span_id=span_id,
                     unparsable=unparsable, unparsable_uris=uris)


def _query(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            parsed = jsondata.loads(value)
        except ValueError:
            return value
        if isinstance(parsed, dict):
            for key in ("query", "input", "question"):
                if isinstance(parsed.get(key), str):
                    return str(parsed[key])
        if isinstance(parsed, str):
            return parsed
        return value
    if isinstance(value, Mapping):
        for key in ("query", "input", "question"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return _text(value)


def _raw_documents(span: Span) -> list[Any]:
    """The span's documents as given: flattened OpenInference attributes, an attribute list,
    or the span's output (``output.value`` or MLflow's ``mlflow.spanOutputs``): a list of
    documents, or an object with a ``documents`` list; JSON text is parsed first."""
    attributes = span.attributes
    flat: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        found = DOCUMENT_ATTRIBUTE.fullmatch(key)
        if found:
            flat.setdefault(int(found.group(1)), {})[found.group(2)] = value
    if flat:
        return [flat[i] for i in sorted(flat)]
    listed = attributes.get("retrieval.documents")
    if isinstance(listed, list):
        return [_strip_prefix(d) for d in listed]
    for key in ("output.value", "mlflow.spanOutputs"):
        output = attributes.get(key)
        if isinstance(output, str):
            try:
                output = jsondata.loads(output)
            except ValueError:
                continue
        if isinstance(output, Mapping) and isinstance(output.get("documents"), list):
            return list(output["documents"])
        if isinstance(output, list):
            return output
    return []


def _strip_prefix(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return value
    return {str(k).removeprefix("document."): v for k, v in value.items()}


def _metadata(raw: Mapping[str, Any]) -> dict[str, Any]:
    metadata = raw.get("metadata")
    if isinstance(metadata, str):
        try:
            metadata = jsondata.loads(metadata)
        except ValueError:
            metadata = {"metadata": metadata}
    return dict(metadata) if isinstance(metadata, Mapping) else {}


def _uri_of(raw: Any) -> str | None:
    if not isinstance(raw, Mapping):
        return None
    extra = {**_metadata(raw), **{k: v for k, v in raw.items() if k != "metadata"}}
    uri = next((extra[k] for k in URI_KEYS if extra.get(k) not in (None, "")), None)
    return str(uri) if uri is not None else None


def _document(raw: Any) -> RetrievedDocument | None:
    """One document: ``page_content``/``content``/``text`` is its text, the rest metadata
    (``doc_uri`` from ``doc_uri``, ``uri``, ``url`` or ``source``); plain text is a document
    of its own; anything without text is None."""
    if isinstance(raw, str):
        return RetrievedDocument(content=raw)
    if not isinstance(raw, Mapping):
        return None
    data = dict(raw)
    content = next((data.pop(k) for k in TEXT_KEYS if data.get(k) is not None), None)
    if content is None or isinstance(content, Mapping | list):
        return None
    extra = _metadata(data)
    data.pop("metadata", None)
    extra.update({k: v for k, v in data.items() if k not in TEXT_KEYS})
    uri = _uri_of(raw)
    return RetrievedDocument(content=_text(content) or "", doc_uri=uri, metadata=extra)


# -- retrieved context, as judges read it ------------------------------------------------


class Chunk(BaseModel):
    """One retrieved chunk as a judge sees it: its text, or why it has none."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = None
    doc_uri: str | None = None
    span_id: str | None = None
    problem: str | None = Field(default=None, description="why the chunk has no text to "
                                "judge (a retriever span's document with no text field)")


class RetrievedContext(BaseModel):
    """The retrieved context of an execution: the chunks, where they came from, and whether
    any part could not be read.

    ``source`` is ``"data"`` (``retrieved_context`` given with the execution), ``"output"``
    (the agent's answer is a dict with a ``retrieved_context`` list, as Databricks' agents
    return it), ``"trace"`` (top-level retriever spans) or None (nothing retrieved). ``problem`` is set when a
    retriever span returned documents with no text: judging the rest as if it were the
    whole context could turn a missing document into a "not supported", so whole-context
    judges report the error instead.
    """

    model_config = ConfigDict(extra="forbid")

    chunks: list[Chunk] = Field(default_factory=list)
    source: Literal["data", "output", "trace"] | None = None
    problem: str | None = None

    @property
    def texts(self) -> list[str]:
        """The chunks' texts, empty ones left out."""
        return [c.content for c in self.chunks if c.content]

    @property
    def doc_uris(self) -> list[str]:
        """Every retrieved document's address, unreadable documents' included."""
        return [c.doc_uri for c in self.chunks if c.doc_uri]


UNPARSABLE = "unparsable_retrieval_context"


def retrieved_context(execution: Execution) -> RetrievedContext:
    """The context an execution retrieved: ``retrieved_context`` as given, else the
    ``retrieved_context`` list of the agent's answer when it is a dict (a ``predict_fn``
    returning ``{"response": ..., "retrieved_context": [...]}``), else the documents of the
    trace's top-level retriever spans (see :func:`top_level_retrievers`).

    This is the one rule every retrieval judge, ``document_recall``, the default judge
    selection and the result columns use.
    """
    if execution.retrieved_context:
        # The documents are validated already; a chunk is built per document per judge.
        return RetrievedContext(source="data", chunks=[
            Chunk.model_construct(content=d.content, doc_uri=d.doc_uri)
            for d in execution.retrieved_context])
    answered = _answer_documents(execution.output)
    if answered is not None:
        return _context("output", [answered])
    found = retrievals(execution, top_level=True)
    if not found:
        return RetrievedContext()
    return _context("trace", found)


ANSWER = "answer"
"""Where the chunks of an answer's own ``retrieved_context`` come from (no span)."""


def _answer_documents(output: Any) -> Retrieval | None:
    """The documents of an answer dict's ``retrieved_context`` list, read as a retriever
    span's are (a document without text is unparsable, never made-up text); None when the
    answer has none."""
    if not isinstance(output, Mapping):
        return None
    raw = output.get("retrieved_context")
    if not isinstance(raw, list) or not raw:
        return None
    return _read_documents(raw, None, ANSWER)


def _context(source: Literal["output", "trace"], found: list[Retrieval]) -> RetrievedContext:
    chunks: list[Chunk] = []
    problems: list[str] = []
    for retrieval in found:
        documents = iter(retrieval.documents)
        bad = dict(zip(retrieval.unparsable, retrieval.unparsable_uris, strict=False))
        for index in range(len(retrieval.documents) + len(retrieval.unparsable)):
            if index in bad:
                where = "the answer's retrieved_context" if retrieval.span_id == ANSWER \
                    else f"retriever span {retrieval.span_id or '?'}"
                message = f"{where} document {index} has no text (none of " \
                          f"{', '.join(TEXT_KEYS)})"
                problems.append(message)
                chunks.append(Chunk(span_id=retrieval.span_id, problem=message,
                                    doc_uri=bad[index]))
            else:
                doc = next(documents)
                chunks.append(Chunk(content=doc.content, doc_uri=doc.doc_uri,
                                    span_id=retrieval.span_id))
    problem = None
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        problem = problems[0] + more
    return RetrievedContext(source=source, chunks=chunks, problem=problem)

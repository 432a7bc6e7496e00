"""Traces from an MLflow tracking store, through MLflow's own client (``assay[mlflow]``).

``MlflowClient(tracking_uri).search_traces`` with MLflow's own ``filter_string`` (the query's
filter, with its time window added as ``timestamp_ms`` conditions), a page at a time, oldest
first. A trace's id is MLflow's (``tr-...``), so that scores written back
(:mod:`assay.run.sources.writeback`) land on the trace they judged.

MLflow retries an unreachable server for minutes by default: unless the environment says
otherwise, assay asks it for :data:`RETRIES` tries of :data:`TIMEOUT_S` seconds each, and any
failure of the client (a server down, a store whose schema this MLflow cannot read) is a
:class:`SourceError` naming the tracking URI.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from assay._util.redact import redact_url
from assay.errors import ConfigError
from assay.run.sources.base import SourcedTrace, SourceError, TraceQuery
from assay.types.spans import TraceFormatError, from_dict

RETRIES = "1"
TIMEOUT_S = "10"
PAGE = 100
T = TypeVar("T")


def import_mlflow() -> Any:
    try:
        import mlflow
    except ImportError:
        raise ConfigError("reading MLflow traces needs MLflow: pip install 'assay[mlflow]'",
                          code="missing_dependency") from None
    return mlflow


@contextlib.contextmanager
def bounded_retries() -> Iterator[None]:
    """MLflow's HTTP retries bounded while assay calls it, unless the environment sets them."""
    given = {k: os.environ.get(k) for k in ("MLFLOW_HTTP_REQUEST_MAX_RETRIES",
                                            "MLFLOW_HTTP_REQUEST_TIMEOUT")}
    for key, default in zip(given, (RETRIES, TIMEOUT_S), strict=True):
        if given[key] is None:
            os.environ[key] = default
    try:
        yield
    finally:
        for key, value in given.items():
            if value is None:
                os.environ.pop(key, None)


class MlflowSource:
    """``mlflow:TRACKING_URI[#EXPERIMENT]``: every experiment's traces, or one's."""

    def __init__(self, tracking_uri: str, experiment: str | None = None) -> None:
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.name = f"mlflow:{redact_url(tracking_uri)}" + (f"#{experiment}" if experiment
                                                             else "")

    def filters_itself(self) -> bool:
        return True

    def call(self, what: str, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``function`` of MLflow's client; its failure a SourceError saying ``what`` failed."""
        try:
            with bounded_retries():
                return function(*args, **kwargs)
        except (ConfigError, SourceError):
            raise
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:500]
            raise SourceError(self.name, f"{what} failed: {first}") from None

    def client(self) -> Any:
        """MLflow's client of the tracking store; a SQLite store that is not there is an
        error: MLflow would create it (and its directories), empty, and a mistyped path
        read as a store without traces, or written back to as one."""
        if self.tracking_uri.startswith("sqlite:///") and \
                self.tracking_uri != "sqlite:///:memory:":
            path = Path(self.tracking_uri.removeprefix("sqlite:///"))
            if not path.is_file():
                raise SourceError(self.name, f"no MLflow tracking store at {path}: the file "
                                  "does not exist")
        mlflow = import_mlflow()
        return self.call("opening the tracking store", mlflow.MlflowClient,
                         tracking_uri=self.tracking_uri)

    def experiment_ids(self, client: Any) -> list[str]:
        if self.experiment is None:
            found = self.call("listing experiments", client.search_experiments)
            return [e.experiment_id for e in found]
        if self.experiment.isdigit():
            return [self.experiment]
        experiment = self.call("finding the experiment", client.get_experiment_by_name,
                               self.experiment)
        if experiment is None:
            raise SourceError(self.name, f"no experiment is named {self.experiment!r}")
        return [experiment.experiment_id]

    def traces(self, query: TraceQuery, **_: Any) -> Iterator[SourcedTrace]:
        client = self.client()
        ids = self.experiment_ids(client)
        if not ids:
            return
        conditions = [query.filter] if query.filter else []
        if query.since is not None:
            conditions.append(f"attributes.timestamp_ms >= {int(query.since * 1000)}")
        if query.until is not None:
            conditions.append(f"attributes.timestamp_ms < {int(query.until * 1000)}")
        # newer MLflow names the experiments "locations" and deprecates experiment_ids
        accepts = inspect.signature(client.search_traces).parameters
        where = {"locations" if "locations" in accepts else "experiment_ids": ids}
        token: str | None = None
        count = 0
        while True:
            size = PAGE if query.limit is None else min(PAGE, query.limit - count)
            if size <= 0:
                return
            page = self.call("searching traces", client.search_traces,
                             **where, filter_string=" AND ".join(conditions) or None,
                             max_results=size, order_by=["timestamp_ms ASC"],
                             page_token=token, flush=True)
            for trace in page:
                count += 1
                yield self.sourced(trace)
            token = getattr(page, "token", None)
            if not token:
                return

    def sourced(self, trace: Any) -> SourcedTrace:
        """An MLflow ``Trace`` as a sourced trace: every span read by the span reader, a
        span it cannot read named in a note."""
        trace_id = str(trace.info.trace_id)
        spans, notes = [], []
        for span in trace.data.spans:
            try:
                spans.append(from_dict(span.to_dict(), f"span {span.name!r}"))
            except TraceFormatError as exc:
                notes.append(f"a span cannot be read: {exc.message}")
        state = str(getattr(trace.info, "state", "") or "")
        if state.endswith("IN_PROGRESS"):
            notes.append("MLflow says the trace is still in progress: it may be incomplete")
        return SourcedTrace(trace_id, spans, self.name, notes)

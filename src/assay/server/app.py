"""The FastAPI application: the REST API over a run store, and the web UI's files.

Every route reads the store through :mod:`assay.store.queries` (a page at a time) and answers
with the library's typed records or views built from them, so the OpenAPI document describes
exactly what the library stores. Every error is JSON, ``{"detail": ..., "code": ...}``:
400 for a malformed parameter (naming it), 401 without the token, 404 for an unknown run or
case, 409 for a change a run's state forbids, 413 for a body over the limit, 503 when the
store cannot be read (naming it with its password hidden), and 500 without a stack trace for
anything else.

Every JSON answer leaves through :class:`~assay.server.security.ScrubbingMiddleware` and every
server-sent event through :func:`~assay.server.launches.sse`: both hide the secrets the process
knows (:mod:`assay._util.redact`), so a run stored before its texts were scrubbed, or a key of this
server's environment quoted in a judge's answer, is never served.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeVar

import orjson
from fastapi import Body, Depends, FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.exceptions import HTTPException as StarletteHTTPException

from assay._util import jsondata
from assay._util.control_chars import quoted
from assay._util.redact import (
    register,
    register_environment,
    scrub_json,
    scrubbed_logger,
    url_secrets,
)
from assay._version import __version__
from assay.analysis.compare import (
    CompareOptions,
    CompareThresholds,
    IncomparableRuns,
    RunNotCompleted,
    RunNotFound,
)
from assay.errors import ConfigError
from assay.report import export
from assay.report.comparison import CaseSides, case_sides
from assay.report.comparison_page import (
    CASES_SHOWN,
    CaseOrder,
    CaseSelection,
    ComparisonCache,
    ServedComparison,
    compare,
)
from assay.report.family import RunFamily, run_family
from assay.report.views import (
    CaseDetail,
    RunDetail,
    RunListItem,
    ShownCaseRow,
    bounded_case,
    case_detail,
    has_metric_judge,
    list_item,
    run_detail,
    shown_rows,
    value_at,
)
from assay.run.display import scale_for
from assay.server import STATIC_DIR, otlp
from assay.server.launches import (
    NO_CONTROL_CHARACTERS,
    Launch,
    Launcher,
    LaunchPolicy,
    LaunchRefused,
    RunRequest,
    WholeNumber,
    json_number,
    progress_text,
    sse,
    stream,
)
from assay.server.security import ScrubbingMiddleware, SecurityMiddleware, document_nul_rule
from assay.server.settings import ServerSettings
from assay.store import baselines, labels, queries
from assay.store.errors import StoreError
from assay.store.runs import RecordRejected, RunStore, Unreadable
from assay.types.config import Tag
from assay.types.records import RunRecord, RunStatus, Verdict, resume_command

log = scrubbed_logger("assay.server")

MAX_PAGE = 500
SERVER_LOGGERS = ("uvicorn.error", "uvicorn.access")
"""The loggers of the HTTP server that runs the app: they hide known secrets too."""
OTLP_PATH = "/v1/traces"
RunId = Annotated[str, PathParam(min_length=1, max_length=200)]
MAX_TEXT = 500
MAX_VALUE_CHARS = 5_000_000
"""The most of a cut value one request reads (a client pages on with ``offset``)."""


class ErrorBody(BaseModel):
    detail: str
    code: str


class DeletedBody(BaseModel):
    """What deleting a run did (``assay delete`` prints the same ``lines``)."""

    run_id: str
    cancelled: list[str] = Field(description="batches cancelled at their providers")
    not_cancelled: dict[str, str] = Field(
        description="batch id -> why it could not be cancelled: left running at its provider "
        "and billed (only with force)")
    files_left: dict[str, str] = Field(
        description="file id -> why it could not be deleted at the provider")
    lines: list[str] = Field(description="all of the above, as a person is told it")


class ApiError(Exception):
    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail


class Page(BaseModel):
    total: int = Field(description="how many match the filters")
    limit: int
    offset: int


class RunPage(Page):
    items: list[RunListItem]


class CasePage(Page):
    items: list[ShownCaseRow]


def _fields_never_null(schema: dict[str, Any]) -> None:
    """The document of a body whose fields may be left out but never sent as null: each
    property without its ``null`` branch (the validator refuses null with a 400)."""
    for prop in schema.get("properties", {}).values():
        branches = prop.get("anyOf")
        if isinstance(branches, list):
            kept = [b for b in branches if b.get("type") != "null"]
            if len(kept) == 1:
                prop.pop("anyOf")
                prop.update(kept[0])
            else:
                prop["anyOf"] = kept
        prop.pop("default", None)


class RunPatch(BaseModel):
    """What may change of a run after it ran: whether it is its suite's baseline, and what
    people call it and write of it. Strict, as every request body is: ``"yes"`` and ``1`` are
    not ``true``. An empty name or notes clears it; ``tags`` replaces them all."""

    model_config = ConfigDict(extra="forbid", strict=True,
                              json_schema_extra=_fields_never_null)

    is_baseline: bool | None = None
    name: Annotated[str, Field(max_length=200, pattern=r"^[^\x00-\x1f\x7f]*$")] | None = None
    tags: list[Tag] | None = Field(default=None, max_length=50)
    notes: Annotated[str, Field(max_length=20_000)] | None = None

    @field_validator("is_baseline", "name", "tags", "notes", mode="before")
    @classmethod
    def _given(cls, value: Any) -> Any:
        """A field left out keeps its value; one sent as null is a mistake, not a change."""
        if value is None:
            raise ValueError("null is not a value: leave the field out to keep it ('' or [] "
                             "clears it)")
        return value


class LabelRequest(BaseModel):
    """A reviewer's label of a judge's score on a case: agreeing with its verdict, or
    giving what it should have been (``value``: true for pass, false for fail, a 0-1 score or
    a label), with a comment. Strict, as every request body is."""

    model_config = ConfigDict(extra="forbid", strict=True)

    case_id: Annotated[str, Field(min_length=1, max_length=1000)]
    repeat: WholeNumber = Field(default=0, ge=0, le=10**6)
    evaluator: Annotated[str, Field(min_length=1, max_length=200)]
    agrees: bool
    value: bool | float | Annotated[str, Field(max_length=200)] | None = None
    comment: Annotated[str, Field(max_length=labels.MAX_COMMENT)] = ""
    author: Annotated[str, Field(min_length=1, max_length=labels.MAX_AUTHOR,
                                 pattern=r"^[^\x00-\x1f\x7f]+$")]

    _numbers = field_validator("repeat", mode="before")(json_number)


class CaseValue(BaseModel):
    """A part of a value that a case page cut."""

    pointer: str
    length: int = Field(description="characters of the whole text")
    offset: int
    text: str = Field(description="the text from offset, at most 'limit' characters")


class Launched(BaseModel):
    run_id: str
    status: RunStatus
    stream: str


class Health(BaseModel):
    status: str
    version: str


ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody} for code in (400, 401, 404, 413, 503)}


class StoreHolder:
    """The server's reading store, opened on first use and again after a failure to open (a
    database that was down, or mid-upgrade, answers 503 until it is back)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._store: RunStore | None = None
        self._lock = threading.Lock()

    def get(self) -> RunStore:
        with self._lock:
            if self._store is None:
                self._store = RunStore(self.url)
            return self._store

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None


def _bad_value(name: str, value: str, expected: str) -> ApiError:
    return ApiError(400, "invalid_parameter",
                    f"query parameter {name!r}: {quoted(value)} is not {expected}")


def _time(value: datetime | None) -> float | None:
    """A time given as an ISO 8601 date or date-time (UTC unless it says otherwise), or as
    seconds since 1970 (which pydantic reads as a date-time too)."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


ExportFormat = Literal["csv", "json"]
ScoreBin = Annotated[int | None, Query(ge=0, lt=queries.BINS, description=(
    "a bin of GET /runs/{id}/histograms (0 to 9): the cases whose score, or whose value from "
    "'evaluator', falls in it"))]
EXPORT_PAGE = 500
EXPORT_CHARS = 10_000
"""The most of each text an exported row holds."""


def _file_name(text: str) -> str:
    """A download's name: the characters a file name may safely hold."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:150]


Filter = TypeVar("Filter", queries.RunFilter, queries.CaseFilter, CaseSelection)


def _case_filter(verdict: list[str], evaluator: str | None,
                 evaluator_state: queries.EvaluatorState | None, q: str | None,
                 score_bin: int | None) -> queries.CaseFilter:
    verdicts = _verdicts(verdict)
    return _searching(lambda: queries.CaseFilter(
        verdicts=verdicts, evaluator=evaluator, evaluator_state=evaluator_state,
        text=q or None, score_bin=score_bin))


def _searching(build: Callable[[], Filter], name: str = "q") -> Filter:
    """A filter with a search (the query parameter ``name``); the filter's refusal of the
    search (a control character) as the 400 naming it."""
    try:
        return build()
    except ConfigError as exc:
        raise ApiError(400, "invalid_parameter", f"query parameter {name!r}: {exc.message}") \
            from None


def _statuses(values: list[str]) -> list[str]:
    found = []
    for value in values:
        for part in value.split(","):
            if part and part not in STATUS_NAMES:
                raise _bad_value("case_status", part, "one of " + ", ".join(STATUS_NAMES))
            if part:
                found.append(part)
    return found


STATUS_NAMES = ("regression", "error", "improvement", "unchanged")


def _verdicts(values: list[str]) -> list[Verdict]:
    found = []
    for value in values:
        for part in value.split(","):
            if not part:
                continue
            try:
                found.append(Verdict(part))
            except ValueError:
                raise _bad_value("verdict", part, "one of " + ", ".join(
                    v.value for v in Verdict)) from None
    return found


def _documented(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document, built once, with the rules the middleware enforces and the
    status codes the server sends."""
    app.openapi_schema = document_nul_rule(_document_choices(_as_sent(get_openapi(
        title=app.title, version=app.version, description=app.description,
        routes=app.routes))))
    return app.openapi_schema


def _choices() -> dict[str, tuple[str, ...]]:
    """The list parameters that take names from a fixed set (repeated, or separated by
    commas): what :func:`_statuses` and :func:`_verdicts` accept, and the document says."""
    return {"case_status": STATUS_NAMES, "verdict": tuple(v.value for v in Verdict)}


def _document_choices(openapi: dict[str, Any]) -> dict[str, Any]:
    """Each such parameter's items documented as the comma-separated names it takes, so a
    client (and a fuzzer) knows that any other text is refused with a 400."""
    choices = _choices()
    for item in openapi.get("paths", {}).values():
        for operation in item.values():
            for parameter in operation.get("parameters", []) if isinstance(
                    operation, dict) else []:
                names = choices.get(parameter.get("name"))
                items = parameter.get("schema", {}).get("items")
                if names is not None and isinstance(items, dict):
                    one = "(" + "|".join(re.escape(n) for n in names) + ")?"
                    items["pattern"] = f"^{one}(,{one})*$"
    return openapi


def watcher_of(settings: ServerSettings) -> Callable[[], Awaitable[None]] | None:
    """The online evaluation ``--watch`` asks for, as a coroutine function that runs it
    until cancelled (each pass logged; a pass that fails is logged and tried again)."""
    watch = settings.watch
    if watch is None:
        return None
    from assay.run.evaluate import load_data
    from assay.run.sources.received import StoreSource
    from assay.run.sources.watch import SamplingRules, Watcher
    from assay.suites.model import Suite
    from assay.types.config import RunConfig

    config = RunConfig.model_validate({"judge_model": settings.default_judge,
                                       **({"judges": watch.judges} if watch.judges else {})})
    suite = load_data(watch.suite, config=config) if watch.suite else Suite(name="watch")
    source = StoreSource(settings.store_url)
    watcher = Watcher(source, suite, source.store, name=watch.name, config=config,
                      rules=SamplingRules(rate=watch.rate,
                                          max_cost_per_hour=watch.max_cost_per_hour),
                      period=watch.period, settle_s=watch.settle_s)

    async def run() -> None:
        await watcher.forever(
            watch.interval_s,
            on_tick=lambda r: log.info("online evaluation %s: %s", watcher.key, r.line()),
            on_error=lambda e: log.error("online evaluation %s: %s", watcher.key, e.message))

    return run


def _as_sent(openapi: dict[str, Any]) -> dict[str, Any]:
    """The document without FastAPI's 422: a request that fails validation is answered 400
    with an :class:`ErrorBody` (see the handler of RequestValidationError), which every
    operation that takes input documents already."""
    for item in openapi.get("paths", {}).values():
        for operation in item.values():
            if isinstance(operation, dict):
                operation.get("responses", {}).pop("422", None)
    schemas = openapi.get("components", {}).get("schemas", {})
    if "HTTPValidationError" not in json.dumps(openapi.get("paths", {})):
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
    return openapi


BODY_EXPECTED = "a JSON object, sent with 'Content-Type: application/json'"


class _UniqueKeysRequest(Request):
    """A request whose JSON body may not name a key twice: ``{"suite": "a", "suite": "b"}``
    says two things, and the decoder would keep the last without a word. The refusal is a
    JSONDecodeError, so it is answered as every body that is not JSON is (:func:`_problem`),
    naming the key."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = json.loads(await self.body(), cls=jsondata.UniqueDecoder)
        return self._json


class _UniqueKeysRoute(APIRoute):
    """Every route of the API reads its JSON body as :class:`_UniqueKeysRequest`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def unique_keys(request: Request) -> Response:
            return await handler(_UniqueKeysRequest(request.scope, request.receive))
        return unique_keys


def _unread_body(exc: Exception) -> str | None:
    """What was wrong with a JSON body the decoder stopped on without a JSONDecodeError (the
    framework's 400 says only "There was an error parsing the body"): nesting past the
    decoder's recursion, a number of more digits than Python converts; None for any other
    error. Said as every body that is not JSON is (:func:`_problem`)."""
    cause = exc.__cause__
    if not isinstance(exc, StarletteHTTPException) or exc.status_code != 400:
        return None
    if isinstance(cause, RecursionError):
        why = "nested deeper than the decoder can read"
    elif isinstance(cause, ValueError):  # the advice after ';' is Python's, not the sender's
        why = str(cause).split(";")[0]
    else:
        return None
    return f"the request body is not JSON ({why}): expected {BODY_EXPECTED}"


def _problem(error: Any) -> str:
    """One validation error as a person is told it: the parameter or body field by name,
    what was wrong and what was given. A body that is not JSON, or not an object, is named as
    the request body (with the character where its JSON breaks), not as a field."""
    loc = [str(p) for p in error.get("loc", ())]
    given = error.get("input")
    if loc[:1] == ["body"]:
        if error.get("type") == "json_invalid":
            why = (error.get("ctx") or {}).get("error", "invalid JSON")
            at = f" at character {loc[1]}" if len(loc) > 1 else ""
            if why.startswith("duplicate key "):  # jsondata.DuplicateKey's own words
                said = why.split(": expected")[0]
                return f"the request body names a key twice ({said}{at}): expected " \
                    f"{BODY_EXPECTED}, each key once"
            return f"the request body is not JSON ({why}{at}): expected {BODY_EXPECTED}"
        if len(loc) == 1:
            what = "is empty" if error.get("type") == "missing" else \
                "was not sent as JSON" if isinstance(given, bytes) else \
                f"is a JSON {_json_kind(given)}"
            return f"the request body {what}: expected {BODY_EXPECTED}"
    where = {"query": "query parameter", "path": "path parameter",
             "body": "body field"}.get(loc[0] if loc else "", "parameter")
    name = ".".join(loc[1:]) or "body"
    shown = "" if isinstance(given, dict | list) or given is None else \
        f" (got {quoted(str(given))})"
    return f"{where} {quoted(name)}: {error.get('msg', 'invalid')}{shown}"


def _json_kind(value: Any) -> str:
    """What a JSON value is, in JSON's words."""
    if isinstance(value, bool):
        return "boolean"
    return {list: "array", str: "string", int: "number", float: "number",
            type(None): "null"}.get(type(value), "value")


PROBE_PATHS = frozenset({"/health"})
"""Paths a load balancer or orchestrator probes, often with a query string of its own (a
cache buster): they take no parameter, and refuse none."""


def _not_over_http() -> bool:
    """A handler's option that only assay's own calls set (the export's every row of a
    comparison): over HTTP it is always False, so a client cannot lift a page's limit, and
    the query parameter is unknown (400)."""
    return False


def _known_parameters(request: Request) -> None:
    """A query parameter the operation does not take is a 400 naming it and those it takes:
    a misspelt filter (``suit=chat``) would otherwise be ignored, and the answer read as
    filtered when it is not."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or not route.include_in_schema or \
            route.path in PROBE_PATHS:
        return
    taken = _taken(route.dependant)
    unknown = [name for name in request.query_params if name not in taken]
    if unknown:
        shown = sorted(name for name, documented in taken.items() if documented)
        raise ApiError(400, "invalid_parameter", (
            f"query parameter {quoted(unknown[0])}: not a parameter of "
            f"{route.name}; it takes " + (", ".join(shown) or "none")))


def _taken(dependant: Dependant) -> dict[str, bool]:
    """The query parameters a handler and what it depends on take, by the names a request
    gives them -> whether the API's document shows it."""
    found = {p.alias: bool(getattr(p.field_info, "include_in_schema", True))
             for p in dependant.query_params}
    for inner in dependant.dependencies:
        found.update(_taken(inner))
    return found


def _operation_id(route: APIRoute) -> str:
    """An operation's id: its handler's name (``list_runs``, ``compare_runs``)."""
    return route.name


def create_app(settings: ServerSettings) -> FastAPI:
    """The application for ``settings`` (see :class:`ServerSettings`)."""
    settings.check()
    register_environment()  # the keys this server's environment holds are never served
    register(url_secrets(settings.store_url))
    for name in SERVER_LOGGERS:  # the server logs an error's traceback again, as raised
        scrubbed_logger(name)
    holder = StoreHolder(settings.store_url)
    launcher = Launcher(settings.store_url, settings.suite_roots,
                        LaunchPolicy(settings.judge_models, settings.targets_file))

    watching = watcher_of(settings)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        task = None if watching is None else asyncio.ensure_future(watching())
        yield
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await launcher.aclose()
        holder.close()

    app = FastAPI(title="assay", version=__version__, docs_url=None, redoc_url=None,
                  lifespan=lifespan, generate_unique_id_function=_operation_id,
                  dependencies=[Depends(_known_parameters)], description=(
                      "Runs, cases, comparisons and baselines of an assay run store. Every "
                      "error is JSON with 'detail' and 'code' (an OTLP export sent as protobuf "
                      "is answered a protobuf google.rpc.Status). Send 'Authorization: Bearer "
                      "TOKEN' when the server has a token (ASSAY_SERVER_TOKEN)."))
    app.router.route_class = _UniqueKeysRoute
    app.openapi = lambda: app.openapi_schema or _documented(app)  # type: ignore[method-assign]
    app.state.settings = settings
    app.state.launcher = launcher
    app.add_middleware(ScrubbingMiddleware)
    app.add_middleware(SecurityMiddleware, token=settings.token,
                       max_body_bytes=settings.max_body_bytes,
                       allowed_hosts=settings.allowed_hosts,
                       body_limits={OTLP_PATH: settings.max_trace_bytes},
                       body_idle_s=settings.body_idle_s)
    app.add_middleware(otlp.ProtobufErrors, path=OTLP_PATH)  # outermost: every refusal

    histogram_cache: dict[tuple[str, float | None], queries.Histograms] = {}
    comparison_cache = ComparisonCache()
    metric_cache: dict[tuple[str, float | None], list[list[dict[str, Any]]]] = {}
    count_cache: queries.CountCache = {}  # of finished runs only: their cases never change

    def store() -> RunStore:
        return holder.get()

    def require_run(run_id: str) -> RunRecord:
        run = queries.find_run(store(), run_id)
        if run is None:
            raise ApiError(404, "run_not_found", f"Run not found: {quoted(run_id)}")
        return run

    # -- errors -----------------------------------------------------------------------------

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse({"detail": exc.detail, "code": exc.code}, status_code=exc.status)

    @app.exception_handler(StoreError)
    async def _store_error(_request: Request, exc: StoreError) -> JSONResponse:
        return JSONResponse({"detail": exc.message, "code": "store_unavailable"},
                            status_code=503)

    @app.exception_handler(Unreadable)
    async def _unreadable(_request: Request, exc: Unreadable) -> JSONResponse:
        return JSONResponse({"detail": exc.message, "code": exc.code}, status_code=409)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [_problem(error) for error in exc.errors()[:5]]
        return JSONResponse({"detail": "; ".join(problems) or "invalid request",
                             "code": "invalid_parameter"}, status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        unread = _unread_body(exc)
        if unread is not None:
            return JSONResponse({"detail": unread, "code": "invalid_parameter"},
                                status_code=400)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        detail = exc.detail if isinstance(exc.detail, str) else "request refused"
        return JSONResponse({"detail": detail, "code": code}, status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _internal(_request: Request, exc: Exception) -> JSONResponse:
        log.error("internal error: %s", type(exc).__name__, exc_info=exc)
        return JSONResponse({"detail": "internal error; the server's log has the details",
                             "code": "internal_error"}, status_code=500)

    # -- the UI -----------------------------------------------------------------------------

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html",
                            headers={"cache-control": "no-store"})

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.api_route("/docs", methods=["GET", "HEAD"], include_in_schema=False)
    def docs() -> FileResponse:
        """The API's reference, read from /openapi.json by a page bundled with assay (no CDN,
        the same strict CSP as the viewer)."""
        return FileResponse(STATIC_DIR / "docs.html", media_type="text/html",
                            headers={"cache-control": "no-store"})

    @app.get("/health", response_model=Health, responses={503: {"model": ErrorBody}},
             tags=["server"])
    def health() -> Health:
        """Whether the store can be read."""
        queries.list_runs(store(), queries.RunFilter(), limit=1)
        return Health(status="ok", version=__version__)

    # -- runs -------------------------------------------------------------------------------

    @app.get("/runs", response_model=RunPage, responses=ERRORS, tags=["runs"])
    def list_runs(
            suite: Annotated[str | None, Query(max_length=MAX_TEXT)] = None,
            target: Annotated[str | None, Query(max_length=MAX_TEXT)] = None,
            status: RunStatus | None = None,
            since: Annotated[datetime | None, Query(description=(
                "runs created at or after: an ISO 8601 date or date-time, or seconds since "
                "1970"))] = None,
            until: Annotated[datetime | None, Query(description=(
                "runs created before: an ISO 8601 date or date-time, or seconds since "
                "1970"))] = None,
            tag: Annotated[str | None, Query(max_length=MAX_TEXT)] = None,
            branch: Annotated[str | None, Query(max_length=MAX_TEXT, description=(
                "the git branch the runs were made on"))] = None,
            q: Annotated[str | None, Query(max_length=MAX_TEXT, description=(
                "text in the run's id, name, suite or notes (in any case); plain text on one "
                "line (a control character is refused)"),
                json_schema_extra={"pattern": NO_CONTROL_CHARACTERS})] = None,
            limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
            offset: Annotated[int, Query(ge=0, le=10**9)] = 0) -> RunPage:
        """Runs, newest first."""
        where = _searching(lambda: queries.RunFilter(
            suite=suite, target=target, status=status, since=_time(since), until=_time(until),
            tag=tag, branch=branch, text=q or None))
        items, total = queries.list_runs(store(), where, limit, offset)
        return RunPage(items=[list_item(item) for item in items], total=total, limit=limit,
                       offset=offset)

    @app.get("/runs/compare", response_model=ServedComparison, responses=ERRORS,
             tags=["compare"])
    def compare_runs(
            baseline_run_id: Annotated[str, Query(min_length=1, max_length=200)],
            candidate_run_id: Annotated[str, Query(min_length=1, max_length=200)],
            max_pass_rate_drop: Annotated[float | None, Query(
                ge=0, le=1, allow_inf_nan=False, description="a fraction; default 0.0")] = None,
            max_avg_score_drop: Annotated[float | None, Query(
                ge=0, le=100, allow_inf_nan=False, description="points of the 0-100 score; "
                "default 5.0")] = None,
            max_latency_increase_pct: Annotated[float | None, Query(
                ge=0, allow_inf_nan=False, description="a fraction (0.2 is 20%); default 0.2")]
            = None,
            require_significance: Annotated[float | None, Query(
                gt=0, lt=1, allow_inf_nan=False, description=(
                    "a significance level (0.05): a reason whose paired test is not "
                    "significant at it is reported but does not count"))] = None,
            matched_only: Annotated[bool, Query(description="the runs' figures over the "
                                                "cases both hold")] = False,
            allow_incomplete: bool = False, allow_different_cases: bool = False,
            allow_different_evaluators: bool = False, allow_different_judge: bool = False,
            allow_different_scoring: bool = False,
            case_status: Annotated[list[str], Query(description=(
                "per-case statuses to keep: regression, error, improvement, unchanged "
                "(repeat the parameter, or separate with commas)"))] = [],  # noqa: B006
            case_q: Annotated[str | None, Query(max_length=MAX_TEXT, description=(
                "keep the cases whose id holds this text (in any case, as the search of a "
                "run's cases finds it); plain text on one line (a control character is "
                "refused)"), json_schema_extra={"pattern": NO_CONTROL_CHARACTERS})] = None,
            case_sort: CaseOrder = CaseOrder.STATUS,
            case_limit: Annotated[int, Query(ge=1, le=CASES_SHOWN)] = CASES_SHOWN,
            case_offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
            every_case: Annotated[bool, Depends(_not_over_http)] = False) \
            -> ServedComparison:
        """Compare a candidate run with a baseline: the candidate's policy's verdict with
        each reason's paired test, the significance of the paired differences (McNemar on
        pass flags, Wilcoxon on scores and latencies), aggregate and per-metric deltas,
        per-case statuses (regressions first), the config diff, and the figures and cases as
        every surface shows them. Runs that are not like for like are refused (400, every
        difference listed) unless each difference is allowed; thresholds not given keep their
        defaults. The same pair gives the same verdict and counts as ``assay compare``. The
        per-case rows come a page at a time (``case_limit`` from ``case_offset``, filtered by
        ``case_status`` and ``case_q``); a comparison of finished runs is computed once and
        kept for the pages that follow."""
        statuses = tuple(_statuses(case_status))
        page = _searching(lambda: CaseSelection(
            statuses=statuses, text=case_q or "", order=case_sort,
            limit=10**9 if every_case else case_limit, offset=case_offset), "case_q")
        given = {k: v for k, v in {
            "max_pass_rate_drop": max_pass_rate_drop, "max_avg_score_drop": max_avg_score_drop,
            "max_latency_increase_pct": max_latency_increase_pct}.items() if v is not None}
        try:
            options = CompareOptions(
                thresholds=CompareThresholds(**given),
                require_significance=require_significance, matched_only=matched_only,
                allow_incomplete=allow_incomplete, allow_different_cases=allow_different_cases,
                allow_different_evaluators=allow_different_evaluators,
                allow_different_judge=allow_different_judge,
                allow_different_scoring=allow_different_scoring)
            return compare(store(), baseline_run_id, candidate_run_id, options, page,
                           comparison_cache)
        except RunNotFound as exc:
            raise ApiError(404, "run_not_found", exc.detail) from None
        except RunNotCompleted as exc:
            raise ApiError(400, "not_comparable", exc.detail) from None
        except IncomparableRuns as exc:
            raise ApiError(400, "incomparable_runs",
                           exc.said(lambda allow: f"{allow}=true")) from None
        except (ConfigError, ValueError) as exc:
            raise ApiError(400, "invalid_parameter", str(exc)) from None

    @app.get("/runs/compare/export", responses={**ERRORS, 200: {"content": {
        "text/csv": {}, "application/json": {}}, "description": "the rows, as a file"}},
        response_class=StreamingResponse, tags=["compare"])
    def export_comparison(
            baseline_run_id: Annotated[str, Query(min_length=1, max_length=200)],
            candidate_run_id: Annotated[str, Query(min_length=1, max_length=200)],
            format: ExportFormat = "csv",
            max_pass_rate_drop: Annotated[float | None, Query(
                ge=0, le=1, allow_inf_nan=False)] = None,
            max_avg_score_drop: Annotated[float | None, Query(
                ge=0, le=100, allow_inf_nan=False)] = None,
            max_latency_increase_pct: Annotated[float | None, Query(
                ge=0, allow_inf_nan=False)] = None,
            require_significance: Annotated[float | None, Query(
                gt=0, lt=1, allow_inf_nan=False)] = None,
            matched_only: bool = False,
            allow_incomplete: bool = False, allow_different_cases: bool = False,
            allow_different_evaluators: bool = False, allow_different_judge: bool = False,
            allow_different_scoring: bool = False,
            case_status: Annotated[list[str], Query()] = [],  # noqa: B006
            case_q: Annotated[str | None, Query(max_length=MAX_TEXT, json_schema_extra={
                "pattern": NO_CONTROL_CHARACTERS})] = None,
            case_sort: CaseOrder = CaseOrder.STATUS) -> StreamingResponse:
        """The per-case rows of ``GET /runs/compare`` (the same parameters, every page), as
        CSV or JSON: each case's status and both runs' pass, score (0-100) and latency."""
        served = compare_runs(
            baseline_run_id, candidate_run_id, max_pass_rate_drop, max_avg_score_drop,
            max_latency_increase_pct, require_significance, matched_only, allow_incomplete,
            allow_different_cases, allow_different_evaluators, allow_different_judge,
            allow_different_scoring, case_status, case_q, case_sort, CASES_SHOWN, 0,
            every_case=True)
        rows = (export.comparison_row(case) for case in served.test_case_comparisons)
        return _file(format, list(export.COMPARISON_COLUMNS), rows,
                     f"{served.baseline_run_id}-vs-{served.candidate_run_id}")

    @app.get("/runs/compare/case", response_model=CaseSides, responses=ERRORS,
             tags=["compare"])
    def compare_case(
            baseline_run_id: Annotated[str, Query(min_length=1, max_length=200)],
            candidate_run_id: Annotated[str, Query(min_length=1, max_length=200)],
            case_id: Annotated[str, Query(min_length=1, max_length=1000)],
            repeat: Annotated[int, Query(ge=0, le=10**6)] = 0) -> CaseSides:
        """One case in two runs side by side: its input and expected output, each run's
        output, verdict and scores, and the line diff of the two outputs. 404 when neither
        run holds the case."""
        found = [queries.case_record(store(), require_run(run_id).id, case_id, repeat)
                 for run_id in (baseline_run_id, candidate_run_id)]
        if found[0] is None and found[1] is None:
            raise ApiError(404, "case_not_found", f"Case not found: {quoted(case_id)} (repeat "
                           f"{repeat}) in neither run")
        return case_sides(case_id, found[0], found[1])

    @app.get("/runs/baseline", response_model=RunDetail, responses=ERRORS, tags=["baselines"])
    def get_baseline(suite: Annotated[str, Query(min_length=1, max_length=MAX_TEXT)],
                     target: Annotated[str | None, Query(max_length=MAX_TEXT)] = None) \
            -> RunDetail:
        """The baseline run of a suite (and target: none means runs without one)."""
        found = baselines.get_baseline(store(), suite, target)
        if found is None:
            raise ApiError(404, "no_baseline", "Baseline run not found for this suite and "
                           "target; mark one with PATCH /runs/{id} {\"is_baseline\": true}")
        return _detail(require_run(found.run_id))

    def _detail(run: RunRecord) -> RunDetail:
        found = baselines.get_baseline(store(), *baselines.scope_of(run))
        return run_detail(run, queries.run_target(run), found.run_id if found else None,
                          launcher.running(run.id), resume_command(run, store().display_url),
                          _family(run))

    def _family(run: RunRecord) -> RunFamily | None:
        """A run's family panels; a finished run's per-metric means are read once."""
        if not has_metric_judge(run):
            return run_family(run)
        key = (run.id, run.finished_at)
        rows = metric_cache.get(key) if run.status is RunStatus.COMPLETED else None
        if rows is None:
            rows = queries.metric_score_rows(store(), run.id)
            if run.status is RunStatus.COMPLETED:
                metric_cache[key] = rows
                while len(metric_cache) > 64:
                    metric_cache.pop(next(iter(metric_cache)))
        return run_family(run, rows)

    @app.get("/runs/{run_id}", response_model=RunDetail, responses=ERRORS, tags=["runs"])
    def get_run(run_id: RunId) -> RunDetail:
        """A run: status, summary, gates and config snapshot."""
        return _detail(require_run(run_id))

    @app.patch("/runs/{run_id}", response_model=RunDetail, responses=ERRORS,
               tags=["runs"])
    def patch_run(run_id: RunId,
                  patch: Annotated[RunPatch, Body()]) -> RunDetail:
        """Mark a completed run as the baseline of its suite and target (replacing any other)
        or unmark it; name it, set its tags or its notes."""
        run = require_run(run_id)
        if patch.is_baseline and run.status is not RunStatus.COMPLETED:
            raise ApiError(400, "not_completed", "Only completed runs can be marked as "
                           f"baseline (status={run.status.value})")
        if patch.is_baseline:
            baselines.set_baseline(store(), run.id)
        elif patch.is_baseline is False:
            baselines.unmark(store(), run.id)
        if (patch.name, patch.tags, patch.notes) != (None, None, None):
            run = store().annotate_run(run.id, name=patch.name, tags=patch.tags,
                                       notes=patch.notes)
        return _detail(require_run(run.id))

    @app.delete("/runs/{run_id}", response_model=DeletedBody, responses={**ERRORS, 409: {
        "model": ErrorBody}}, tags=["runs"])
    def delete_run(run_id: RunId, force: Annotated[bool, Query(description=(
            "delete even when a batch of the run could not be cancelled at its provider "
            "(it then runs to its end)"))] = False) -> DeletedBody:
        """Delete a run and all it stored, its unfinished batches (a run waiting for batch)
        cancelled at their providers first. Refused while it is running (a run whose process
        died reads as interrupted, and can be deleted), while an unfinished rescore of it
        needs its executions, and, unless ``force``, when a batch could not be cancelled
        (409 ``batches_not_cancelled``, naming the batches by id). The answer says what was
        done at the providers, as ``assay delete`` prints it: the batches cancelled, any
        left running (``force``) and any uploaded file that could not be deleted."""
        from assay.run.delete import BatchesNotCancelled
        from assay.run.delete import delete_run as delete

        run = require_run(run_id)
        try:
            done = delete(store(), run.id, force=force)
        except (queries.RunInUse, BatchesNotCancelled) as exc:
            raise ApiError(409, exc.code, exc.message) from None
        if not done.deleted:  # another request deleted it since it was found
            raise ApiError(404, "run_not_found", f"Run not found: {quoted(run_id)} (deleted by "
                           "another request)")
        if done.not_cancelled:
            log.warning("run %s deleted; batch(es) %s could not be cancelled and run to their "
                        "end", run.id, ", ".join(done.not_cancelled))
        return DeletedBody(run_id=run.id, cancelled=done.cancelled,
                           not_cancelled=done.not_cancelled, files_left=done.files_left,
                           lines=done.lines())

    @app.get("/runs/{run_id}/cases", response_model=CasePage, responses=ERRORS,
             tags=["cases"])
    def list_cases(
            run_id: RunId,
            verdict: Annotated[list[str], Query(description=(
                "verdicts to keep (repeat the parameter, or separate with commas)"))] = [],  # noqa: B006
            evaluator: Annotated[str | None, Query(max_length=MAX_TEXT)] = None,
            evaluator_state: Annotated[queries.EvaluatorState | None, Query(description=(
                "keep cases whose score from the evaluator (or, without one, from any "
                "evaluator) is in this state"))] = None,
            q: Annotated[str | None, Query(max_length=MAX_TEXT, description=(
                "text to find, in any case, in the case id, input, expected output, or the "
                "agent's output or error (the first 500 characters of each); plain text on "
                "one line (a control character is refused)"),
                json_schema_extra={"pattern": NO_CONTROL_CHARACTERS})] = None,
            score_bin: ScoreBin = None,
            sort: queries.CaseSort = queries.CaseSort.PROBLEMS,
            limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
            offset: Annotated[int, Query(ge=0, le=10**9)] = 0) -> CasePage:
        """A page of a run's cases. ``problems`` (the default) puts errors, then failures,
        then borderline cases first, lowest score first."""
        run = require_run(run_id)
        where = _case_filter(verdict, evaluator, evaluator_state, q, score_bin)
        items, total = queries.case_page(
            store(), run.id, where, sort, limit, offset,
            count_cache if run.status is RunStatus.COMPLETED else None)
        return CasePage(items=shown_rows(items, scale_for(run)), total=total, limit=limit,
                        offset=offset)

    @app.get("/runs/{run_id}/export", responses={**ERRORS, 200: {"content": {
        "text/csv": {}, "application/json": {}}, "description": "the rows, as a file"}},
        response_class=StreamingResponse, tags=["cases"])
    def export_cases(
            run_id: RunId, format: ExportFormat = "csv",
            verdict: Annotated[list[str], Query(description=(
                "verdicts to keep (repeat the parameter, or separate with commas)"))] = [],  # noqa: B006
            evaluator: Annotated[str | None, Query(max_length=MAX_TEXT)] = None,
            evaluator_state: queries.EvaluatorState | None = None,
            q: Annotated[str | None, Query(max_length=MAX_TEXT, json_schema_extra={
                "pattern": NO_CONTROL_CHARACTERS})] = None,
            score_bin: ScoreBin = None,
            sort: queries.CaseSort = queries.CaseSort.PROBLEMS) -> StreamingResponse:
        """Every case that the same filters as ``GET /runs/{id}/cases`` keep, in its order,
        as CSV or JSON: the case, its verdict, score, latency, input, expected and actual
        output (their first 10,000 characters), the evaluator that failed it with its
        rationale, and each evaluator's value and state."""
        run = require_run(run_id)
        where = _case_filter(verdict, evaluator, evaluator_state, q, score_bin)
        names = sorted(run.summary.evaluators) if run.summary else []
        # Before the answer starts, the rows the file would hold are checked (a row that is
        # not JSON, a number that is not one) and the first page is read (a database gone):
        # each is then the error it is, with its status, instead of a file that ends early.
        queries.check_cases(store(), run.id, where)
        pages = queries.case_pages(store(), run.id, where, sort, EXPORT_PAGE,
                                   preview=EXPORT_CHARS)
        first = next(pages, [])

        def rows() -> Iterator[dict[str, Any]]:
            for items in itertools.chain([first], pages):
                yield from (export.case_row(item, names) for item in items)

        return _file(format, export.case_columns(names), rows(), f"{run.id}-cases")

    def _file(format: str, columns: list[str], rows: Iterator[dict[str, Any]],
              name: str) -> StreamingResponse:
        return StreamingResponse(
            export.chunks(format, columns, rows),  # type: ignore[arg-type]
            media_type=export.MEDIA_TYPES[format], headers={
                "content-disposition": f'attachment; filename="{_file_name(name)}.{format}"',
                "cache-control": "no-store"})

    @app.get("/runs/{run_id}/case", response_model=CaseDetail, responses=ERRORS,
             tags=["cases"])
    def get_case(run_id: RunId,
                 case_id: Annotated[str, Query(min_length=1, max_length=1000)],
                 repeat: Annotated[int, Query(ge=0, le=10**6)] = 0) -> Response:
        """One case: the case, what the agent did, every score (judge transcripts included),
        and its tool calls and retrievals. The case id is a query parameter, so that any id
        (slashes, dots, spaces) names its case. The page holds about a megabyte at most: a
        longer text is cut, with a marker saying how long it is, and a longer list keeps its
        first items; ``cuts`` lists each, and ``GET /runs/{id}/case/value`` has the whole."""
        return Response(orjson.dumps(bounded_case(_case(run_id, case_id, repeat))),
                        media_type="application/json")

    def _case(run_id: str, case_id: str, repeat: int) -> CaseDetail:
        """A case's detail with known secrets hidden before it is cut to a page or a slice
        (a cut could leave part of a secret that the scrub of the answer would not know)."""
        run = require_run(run_id)
        record = queries.case_record(store(), run.id, case_id, repeat)
        if record is None:
            raise ApiError(404, "case_not_found",
                           f"Case not found: {quoted(case_id)} (repeat {repeat}) in run "
                           f"{quoted(run.id)}")
        detail = case_detail(record, run)
        text = detail.model_dump_json()
        scrubbed = scrub_json(text)
        return detail if scrubbed is text else CaseDetail.model_validate_json(scrubbed)

    @app.get("/runs/{run_id}/case/value", response_model=CaseValue, responses=ERRORS,
             tags=["cases"])
    def get_case_value(
            run_id: RunId,
            case_id: Annotated[str, Query(min_length=1, max_length=1000)],
            pointer: Annotated[str, Query(max_length=2000, description=(
                "where the value is in the case page: a cut's 'pointer'"))],
            repeat: Annotated[int, Query(ge=0, le=10**6)] = 0,
            offset: Annotated[int, Query(ge=0, le=10**10)] = 0,
            limit: Annotated[int, Query(ge=1, le=MAX_VALUE_CHARS)] = MAX_VALUE_CHARS) \
            -> CaseValue:
        """The whole of a value the case page cut (a text, or the JSON text of a list or
        mapping), ``limit`` characters from ``offset`` at a time."""
        data = orjson.loads(_case(run_id, case_id, repeat).model_dump_json(exclude={"cuts"}))
        try:
            found = value_at(data, pointer)
        except KeyError:
            raise ApiError(404, "value_not_found", f"the case page has no value at pointer "
                           f"{quoted(pointer, 200)}") from None
        text = found if isinstance(found, str) else orjson.dumps(
            found, option=orjson.OPT_INDENT_2).decode()
        return CaseValue(pointer=pointer, length=len(text), offset=offset,
                         text=text[offset:offset + limit])

    @app.get("/runs/{run_id}/labels", response_model=list[labels.HumanLabel],
             responses=ERRORS, tags=["labels"])
    def get_labels(run_id: RunId,
                   case_id: Annotated[str | None, Query(max_length=1000)] = None,
                   repeat: Annotated[int | None, Query(ge=0, le=10**6)] = None) \
            -> list[labels.HumanLabel]:
        """The labels people gave a run's scores (or one case's), oldest first: the latest
        of each score is the one that counts."""
        return labels.labels(store(), require_run(run_id).id, case_id, repeat)

    @app.post("/runs/{run_id}/labels", response_model=labels.HumanLabel, status_code=201,
              responses=ERRORS, tags=["labels"])
    def post_label(run_id: RunId,
                   request: Annotated[LabelRequest, Body()]) -> labels.HumanLabel:
        """Label a judge's score on a case: agree with it, or say what it should have been.
        Labels are only ever added, with who gave them and when; ``assay calibrate --run``
        calibrates the judge against them."""
        run = require_run(run_id)
        try:
            return labels.add_label(store(), run.id, request.case_id, request.repeat,
                                    request.evaluator, agrees=request.agrees,
                                    value=request.value, comment=request.comment,
                                    author=request.author)
        except ConfigError as exc:
            status = 404 if exc.code in ("case_not_found", "score_not_found") else 400
            raise ApiError(status, exc.code, exc.message) from None

    @app.get("/runs/{run_id}/agreement", response_model=list[labels.LabelAgreement],
             responses=ERRORS, tags=["labels"])
    def get_agreement(run_id: RunId) -> list[labels.LabelAgreement]:
        """Per evaluator, how many of its scores people labelled and the share they agreed
        with (the latest label of each score)."""
        return labels.agreement(store(), require_run(run_id).id)

    @app.get("/runs/{run_id}/histograms", response_model=queries.Histograms, responses=ERRORS,
             tags=["runs"])
    def get_histograms(run_id: RunId) -> queries.Histograms:
        """The run's case scores and each evaluator's values in ten bins."""
        run = require_run(run_id)
        if run.status is not RunStatus.COMPLETED:
            return queries.histograms(store(), run.id)
        key = (run.id, run.finished_at)  # a finished run's scores no longer change
        found = histogram_cache.get(key)
        if found is None:
            found = histogram_cache[key] = queries.histograms(store(), run.id)
            while len(histogram_cache) > 256:
                histogram_cache.pop(next(iter(histogram_cache)))
        return found

    # -- traces ---------------------------------------------------------------------------

    @app.post(OTLP_PATH, tags=["traces"], responses={
        **{code: {"model": ErrorBody, "content": {otlp.PROTOBUF: {}}, "description":
                  "the error in the request's encoding: JSON, or a protobuf google.rpc.Status"}
           for code in (*ERRORS, 408, 415, 421)},
        200: {"content": {otlp.PROTOBUF: {}, otlp.JSON: {}},
              "description": "an ExportTraceServiceResponse, in the request's encoding"}})
    async def receive_traces(request: Request) -> Response:
        """The OTLP/HTTP trace receiver: an ``ExportTraceServiceRequest`` as protobuf or
        JSON, gzip-compressed or not, as any OpenTelemetry exporter sends it (point
        ``OTEL_EXPORTER_OTLP_ENDPOINT`` at this server). Spans are stored grouped by trace; a
        span that cannot be (no trace id; a different span stored under its ids) is counted in
        ``partialSuccess``, the others kept. An error answer is in the request's encoding too:
        JSON, or a protobuf ``google.rpc.Status`` (:class:`otlp.ProtobufErrors`)."""
        try:
            kind = otlp.media_type(request.headers.get("content-type"))
            body = otlp.decompressed(await request.body(),
                                     request.headers.get("content-encoding"),
                                     settings.max_trace_bytes)
            decoded = await asyncio.to_thread(otlp.decode, body, kind)
        except otlp.OtlpRefused as exc:
            raise ApiError(exc.status, exc.code, exc.detail) from None
        try:
            await asyncio.to_thread(otlp.store_spans, store(), decoded)
        except RecordRejected as exc:
            raise ApiError(400, "invalid_otlp", f"the spans cannot be stored: {exc}") \
                from None
        content, media = otlp.answer(decoded, kind)
        return Response(content, media_type=media)

    # -- starting runs ----------------------------------------------------------------------

    def _runs_allowed() -> None:
        if not settings.allow_runs:
            raise ApiError(403, "runs_disabled", "this server does not start runs "
                           "(assay serve --no-runs)")

    async def _launched(start: Awaitable[Launch]) -> Launched:
        """A launch's answer: where to follow it; a refusal as its HTTP error."""
        try:
            launch = await start
        except LaunchRefused as exc:
            raise ApiError(exc.status, exc.code, exc.message) from None
        return Launched(run_id=launch.run_id, status=RunStatus.RUNNING,
                        stream=f"/runs/{launch.run_id}/stream")

    @app.post("/runs", response_model=Launched, status_code=202,
              responses={**ERRORS, 403: {"model": ErrorBody}}, tags=["launch"])
    async def post_run(request: Annotated[RunRequest, Body()]) -> Launched:
        """Start a run of a suite under the server's suite roots; follow it at ``stream``.
        With ``batch`` (or the suite's ``execution.batch``) the run is left waiting for its
        batches (its stream ends with ``run_waiting``): ``POST /runs/{run_id}/resume``
        collects them."""
        _runs_allowed()
        return await _launched(launcher.start(request))

    @app.post("/runs/{run_id}/resume", response_model=Launched, status_code=202,
              responses={**ERRORS, 403: {"model": ErrorBody}, 409: {"model": ErrorBody}},
              tags=["launch"])
    async def resume_run(run_id: RunId) -> Launched:
        """Resume a run that stopped or waits for its batches, as ``assay run --resume``
        does: what the store has is kept, the rest runs with the run's recorded settings; a
        batch run's batches are checked and, once done, collected and the run completed
        (its stream ends with ``run_waiting`` while they are not). Only a run this server
        could have started: its suite under the suite roots, its judge, target and targets
        file the server's."""
        _runs_allowed()
        run = await asyncio.to_thread(require_run, run_id)
        if launcher.running(run_id) or resume_command(run) is None:
            raise ApiError(409, "not_resumable", f"run {run.id} is "
                           f"{'running here' if launcher.running(run_id) else run.status.value}"
                           ": nothing to resume")
        return await _launched(launcher.resume(run))

    @app.post("/runs/{run_id}/cancel", response_model=RunDetail,
              responses={**ERRORS, 409: {"model": ErrorBody}}, tags=["launch"])
    async def cancel_run(run_id: RunId) -> RunDetail:
        """Cancel a run this server started: it stops and is marked interrupted."""
        if not await launcher.cancel(run_id):
            detail = await asyncio.to_thread(lambda: _not_cancellable(require_run(run_id)))
            raise ApiError(409, "not_running_here", detail)
        return await asyncio.to_thread(lambda: _detail(require_run(run_id)))

    def _not_cancellable(run: RunRecord) -> str:
        """Why a run this server is not running cannot be cancelled here, and what to do."""
        if run.status is RunStatus.RUNNING:
            return (f"run {run.id} is running in another process, not in this server; stop "
                    "it there")
        found = resume_command(run, store().display_url)
        return (f"run {run.id} is not running (it is {run.status.value}"
                + (", its process having stopped" if run.abandoned else "") + ")"
                + (f"; resume it with: {found}" if found else ""))

    @app.get("/runs/{run_id}/stream", responses={**ERRORS, 200: {
        "content": {"text/event-stream": {}}, "description": "server-sent events"}},
        response_class=StreamingResponse, tags=["launch"])
    async def stream_run(run_id: RunId) -> StreamingResponse:
        """A run's progress as server-sent events: ``run_started``, ``test_case_started``
        (case_id, repeat), ``test_case_completed`` (completed_count, total_count, passed,
        overall_score on 0-100, score on 0-1, error_message), then one of
        ``run_completed``, ``run_cancelled``, ``run_failed``, ``run_waiting`` (a batch run
        left waiting for its batches, with where they are). A run this server did not start
        is followed through the store (``run_progress`` once a second)."""
        launch = launcher.launches.get(run_id)
        if launch is not None:
            events = stream(launch)
        else:
            run = await asyncio.to_thread(require_run, run_id)
            events = _follow(run)
        return StreamingResponse(events, media_type="text/event-stream",
                                 headers={"cache-control": "no-store",
                                          "x-accel-buffering": "no"})

    def _stored_cases(run_id: str) -> int:
        return queries.case_page(store(), run_id, queries.CaseFilter(), limit=1)[1]

    async def _follow(run: RunRecord, every_s: float = 1.0) -> AsyncIterator[bytes]:
        terminal = {RunStatus.COMPLETED: "run_completed", RunStatus.INTERRUPTED: "run_cancelled",
                    RunStatus.FAILED: "run_failed", RunStatus.WAITING: "run_waiting"}
        while True:
            if run.status in terminal:
                yield sse(terminal[run.status], {"run_id": run.id, "status": run.status.value})
                return
            count = await asyncio.to_thread(_stored_cases, run.id)
            yield sse("run_progress", {"run_id": run.id, "completed_count": count,
                                       "progress_text": progress_text(count, None, None)})
            await asyncio.sleep(every_s)
            found = await asyncio.to_thread(queries.find_run, store(), run.id)
            if found is None:
                yield sse("run_failed", {"run_id": run.id, "status": "deleted"})
                return
            run = found

    return app

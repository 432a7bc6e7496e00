"""Property-based fuzzing of the REST API from its own OpenAPI document (schemathesis) against
a running server over a real store: no 500, every answer documented and shaped as its schema
says, malformed input refused with a 4xx."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from assay.store.runs import RunStore
from assay.testing.runs import write_run
from assay.types.records import RunStatus
from tests.server_support import serve

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    # Imported here, not with the module: every test process collects this module, and
    # importing schemathesis cost each 0.3 s.
    schemathesis = pytest.importorskip("schemathesis")
    root = tmp_path_factory.mktemp("fuzz")
    url = f"sqlite:///{root}/runs.db"
    store = RunStore(url)
    write_run(store, 30, seed=1)
    write_run(store, 30, seed=2)
    write_run(store, 5, seed=3, status=RunStatus.INTERRUPTED)
    store.close()
    with serve(url, suite_roots=[Path(root)]) as served:
        yield schemathesis.openapi.from_url(served.url + "/openapi.json")


@pytest.fixture(autouse=True)
def _close_http_session() -> None:
    """The fuzzed calls are synchronous HTTP; no judge session to close."""


def test_the_api_answers_every_generated_request_as_documented(api_schema: Any) -> None:
    failures: dict[str, str] = {}
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 10
    for operation in operations:
        @given(case=operation.as_strategy())
        @settings(max_examples=25, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def fuzz(case: Any) -> None:
            case.call_and_validate()

        try:
            fuzz()
        except Exception as exc:  # every operation is fuzzed; all failures are reported
            failures[operation.label] = f"{type(exc).__name__}: {str(exc)[:2000]}"
    assert not failures, "\n\n".join(f"{k}\n{v}" for k, v in failures.items())

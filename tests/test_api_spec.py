"""The API's OpenAPI document says what the server does: the status codes it sends (400 for a
request it refuses, never FastAPI's 422), readable operation ids, and bodies shaped as their
schemas say, checked against real answers of a running server; /docs reads it from assets
bundled with assay."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from assay.store.runs import RunStore
from assay.testing.runs import write_run
from tests.server_support import Served, serve

pytest.importorskip("fastapi")

TOKEN = "a-token-of-thirty-two-characters"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, list[str]]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('spec')}/runs.db"
    store = RunStore(url)
    ids = [write_run(store, 12, seed=1), write_run(store, 12, seed=2, quality=0.5)]
    store.close()
    with serve(url, token=TOKEN) as running:
        yield running, ids


@pytest.fixture(scope="module")
def spec(served: tuple[Served, list[str]]) -> dict[str, Any]:
    with served[0].client() as client:  # the document is public
        return client.get("/openapi.json").json()


def _conforms(spec: dict[str, Any], path: str, method: str, response: httpx.Response) -> None:
    """``response`` is documented for the operation, and its JSON body fits the schema."""
    documented = spec["paths"][path][method]["responses"]
    assert str(response.status_code) in documented, (path, response.status_code)
    content = documented[str(response.status_code)].get("content", {})
    schema = content.get("application/json", {}).get("schema")
    assert schema is not None, (path, response.status_code)
    jsonschema.validate(response.json(), {**schema, "components": spec["components"]})


def test_no_operation_documents_a_status_the_server_never_sends(spec: dict[str, Any]) -> None:
    text = str(spec)
    assert "'422'" not in text and "HTTPValidationError" not in text
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            takes_input = operation.get("parameters") or operation.get("requestBody")
            if takes_input:
                refused = operation["responses"].get("400", {})
                assert "ErrorBody" in str(refused), (method, path)


def test_operation_ids_are_the_handlers_names(spec: dict[str, Any]) -> None:
    ids = {f"{m.upper()} {p}": op["operationId"] for p, item in spec["paths"].items()
           for m, op in item.items()}
    assert ids["GET /runs"] == "list_runs" and ids["GET /runs/compare"] == "compare_runs"
    assert ids["GET /runs/{run_id}/cases"] == "list_cases"
    assert len(set(ids.values())) == len(ids)
    assert not [i for i in ids.values() if i.endswith(("_get", "_post", "_patch", "_delete"))]


REFUSED = [
    ("/runs", "get", {"limit": "0"}),
    ("/runs", "get", {"since": "yesterday"}),
    ("/runs/compare", "get", {"baseline_run_id": "x"}),
    ("/runs/{run_id}/cases", "get", {"offset": "-1"}),
    ("/runs/{run_id}/histograms", "get", {}),
]


@pytest.mark.parametrize(("path", "method", "query"), REFUSED)
def test_a_refused_request_is_answered_400_as_documented(served, spec, path, method, query):
    running, ids = served
    address = path.replace("{run_id}", ids[0] if "histograms" not in path else "")
    with running.client(token=TOKEN) as client:
        response = client.request(method, address, params=query)
    if "histograms" in path:  # an empty run id is no run: 404, documented too
        assert response.status_code == 404
    else:
        assert response.status_code == 400, response.text
        assert response.json()["code"] in {"invalid_parameter", "invalid_request"}
    _conforms(spec, path, method, response)


def test_real_answers_fit_their_schemas(served, spec):
    running, (base, cand) = served
    with running.client(token=TOKEN) as client:
        for path, address, query in [
                ("/runs", "/runs", {}),
                ("/runs/{run_id}", f"/runs/{cand}", {}),
                ("/runs/{run_id}/cases", f"/runs/{cand}/cases", {"limit": "5"}),
                ("/runs/{run_id}/histograms", f"/runs/{cand}/histograms", {}),
                ("/runs/compare", "/runs/compare",
                 {"baseline_run_id": base, "candidate_run_id": cand, "case_limit": "5"})]:
            response = client.get(address, params=query)
            assert response.status_code == 200, (address, response.text)
            _conforms(spec, path, "get", response)
        unauthorised = httpx.get(running.url + "/runs")
        assert unauthorised.status_code == 401
        _conforms(spec, "/runs", "get", unauthorised)


def test_the_docs_page_is_served_from_bundled_assets(served):
    running, _ = served
    with running.client() as client:
        page = client.get("/docs")
        script = client.get("/static/docs.js")
    assert page.status_code == 200 and "static/docs.js" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "http://" not in page.text and "https://" not in page.text  # no CDN
    assert script.status_code == 200 and "openapi.json" in script.text
    bundled = Path(__file__).parents[1] / "src/assay/report/static/docs.html"
    assert bundled.read_text() == page.text


def test_a_runs_times_come_in_iso_8601_beside_epoch_seconds(served):
    from datetime import UTC, datetime

    running, (_, cand) = served
    with running.client(token=TOKEN) as client:
        listed = client.get("/runs").json()["items"][0]
        detail = client.get(f"/runs/{cand}").json()
    for run in (listed, detail):
        parsed = datetime.strptime(run["created"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert abs(parsed.timestamp() - run["created_at"]) < 1
        assert run["finished"] is not None and run["finished"].endswith("Z")


@pytest.mark.parametrize(("path", "name"), [("/runs/compare", "case_status"),
                                            ("/runs/{run_id}/cases", "verdict")])
def test_a_list_of_names_is_documented_as_exactly_what_the_server_takes(served, spec, path,
                                                                        name):
    """A value the document allows is answered 200, one it does not allow 400, so a client
    (or a fuzzer) reading the document is never refused what it was told to send."""
    import re

    running, (base, cand) = served
    parameter = next(p for p in spec["paths"][path]["get"]["parameters"] if p["name"] == name)
    allowed = re.compile(parameter["schema"]["items"]["pattern"])
    address = "/runs/compare" if name == "case_status" else f"/runs/{cand}/cases"
    query: dict[str, str] = {"baseline_run_id": base, "candidate_run_id": cand} \
        if name == "case_status" else {}
    good = "regression,,unchanged" if name == "case_status" else "pass,fail"
    with running.client(token=TOKEN) as client:
        for value in (good, "", "\x1bbogus", "pass,nope", "regression,error"):
            answer = client.get(address, params={**query, name: value})
            assert answer.status_code == (200 if allowed.search(value) else 400), \
                (value, answer.text)


def test_bodies_take_what_their_document_allows_and_refuse_null_and_other_types(served, spec):
    """JSON Schema's integer includes 0.0; strict bodies still refuse true and "0", and a
    PATCH field documented as never null is refused as null."""
    running, (_, cand) = served
    patch = spec["components"]["schemas"]["RunPatch"]["properties"]["is_baseline"]
    assert patch == {"title": "Is Baseline", "type": "boolean"}
    with running.client(token=TOKEN) as client:
        case_id = client.get(f"/runs/{cand}/cases", params={"limit": "1"}).json()["items"][0][
            "case_id"]
        body = {"case_id": case_id, "evaluator": "nope", "agrees": True, "author": "me"}
        for repeat, status in ((0.0, 404), (True, 400), ("0", 400)):
            answer = client.post(f"/runs/{cand}/labels", json={**body, "repeat": repeat})
            assert answer.status_code == status, (repeat, answer.text)
        assert client.patch(f"/runs/{cand}", json={"is_baseline": None}).status_code == 400


def test_the_trace_receivers_refusals_are_documented(spec, tmp_path):
    """A server without a token answers a request for another host 421, at ``/v1/traces``
    as everywhere; the receiver's document lists it (and the 408 of a body that stops)."""
    with serve(f"sqlite:///{tmp_path}/runs.db") as running, running.client() as client:
        answer = client.post("/v1/traces", content=b"{}",
                             headers={"content-type": "application/json",
                                      "host": "attacker.example"})
    assert answer.status_code == 421, answer.text
    _conforms(spec, "/v1/traces", "post", answer)
    assert "408" in spec["paths"]["/v1/traces"]["post"]["responses"]

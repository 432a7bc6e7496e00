"""The floor under a fully cached re-run: the same work with no framework, standard library only.

``suite_throughput.py --sections cache`` sets a cached ``assay run`` (0 requests) against this
process, pair by pair. Per case it does what any cached re-run must: read the case from the JSONL
file, call the same target function (the suite's ``agent.answer``, given the case's fields as
attributes), build the judge request (the system prompt, the prompt with the expected and the
actual answer, the answer's JSON schema) and its key (a SHA-256 of the request), look the answer
up in a SQLite cache and decode it, and write one SQLite row (id, output, score), committed once
at the end. No records, no checks, no second row, no results file: a lower bound, not a design.

::

    python benchmarks/cached_floor.py fill DIR      # once, untimed: the cache of DIR/cases.jsonl
    python benchmarks/cached_floor.py run DIR       # the timed process
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sqlite3
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

SYSTEM = ("You are an expert evaluator. Respond with a JSON object with two fields: "
          '"justification", then "score", a number from 0 to 100.')
SCHEMA = {"type": "json_schema", "json_schema": {"name": "evaluation_response", "schema": {
    "type": "object", "properties": {"justification": {"type": "string"},
                                     "score": {"type": "number"}},
    "required": ["justification", "score"]}}}


def request(expected: str, actual: str) -> dict[str, Any]:
    """The judge request for one case."""
    prompt = (f"Compare the meaning of these answers.\n----\nExpectedOutput:\n<expected>\n"
              f"{expected}\n</expected>\n----\nActualOutput:\n<actual>\n{actual}\n</actual>")
    return {"model": "bench", "temperature": 0.0, "response_format": SCHEMA,
            "messages": [{"role": "system", "content": SYSTEM},
                         {"role": "user", "content": prompt}]}


def key(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def agent(directory: Path) -> Any:
    """The suite's own target function (``agent.py``'s ``answer``)."""
    spec = importlib.util.spec_from_file_location("agent", directory / "agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.answer


def cases(directory: Path) -> Any:
    with (directory / "cases.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            yield json.loads(line)


def fill(directory: Path) -> None:
    """The cache the timed run reads: one answer per case, keyed as the run computes it."""
    answer = agent(directory)
    db = sqlite3.connect(directory / "floor-cache.db")
    db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, response BLOB)")
    rows = []
    for data in cases(directory):
        output = answer(SimpleNamespace(**data))
        content = json.dumps({"justification": "cached", "score": len(output) % 101})
        response = {"choices": [{"message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 10}}
        rows.append((key(request(data["expected_output"], output)),
                     json.dumps(response).encode()))
    db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?)", rows)
    db.commit()
    db.close()


def run(directory: Path) -> int:
    """Judge every case from the cache and store one row each; the number of misses."""
    answer = agent(directory)
    cache = sqlite3.connect(directory / "floor-cache.db")
    store = sqlite3.connect(directory / "floor-runs.db")
    store.execute("CREATE TABLE IF NOT EXISTS results (case_id TEXT, output TEXT, score REAL)")
    misses = 0
    with store:
        for data in cases(directory):
            output = answer(SimpleNamespace(**data))
            found = cache.execute("SELECT response FROM responses WHERE key = ?",
                                  (key(request(data["expected_output"], output)),)).fetchone()
            if found is None:
                misses += 1
                continue
            verdict = json.loads(json.loads(found[0])["choices"][0]["message"]["content"])
            store.execute("INSERT INTO results VALUES (?, ?, ?)",
                          (data["id"], output, float(verdict["score"]) / 100))
    cache.close()
    store.close()
    return misses


def main() -> int:
    action, directory = sys.argv[1], Path(sys.argv[2])
    if action == "fill":
        fill(directory)
        return 0
    misses = run(directory)
    print(misses)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())

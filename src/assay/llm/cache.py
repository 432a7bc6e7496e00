"""The response cache: a SQLite file keyed by a hash of the canonical request.

It survives processes, so a re-run with unchanged inputs makes no model calls. The key covers
everything that changes an answer: provider and model, messages, schema or tools, temperature,
max_tokens and seed. Modes: ``use`` (read and write), ``refresh`` (write only), ``off``.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from assay.llm.types import ChatRequest

_KEY_FIELDS = ("messages", "response_format", "tools", "tool_choice", "temperature",
               "max_tokens", "seed")


def request_key(model_name: str, request: ChatRequest) -> str:
    """A stable hash of what determines the answer (dict key order does not matter)."""
    canonical: dict[str, Any] = {"model": model_name}
    for field in _KEY_FIELDS:
        if field in request and request[field] is not None:  # type: ignore[literal-required]
            canonical[field] = request[field]  # type: ignore[literal-required]
    return hashlib.sha256(orjson.dumps(canonical, option=orjson.OPT_SORT_KEYS)).hexdigest()


class ResponseCache:
    """A thread-safe SQLite key-value store of responses, opened lazily."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                                   timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT, "
                "response BLOB NOT NULL, created REAL NOT NULL)"
            )
            self._conn = conn
        return self._conn

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db().execute(
                "SELECT response FROM responses WHERE key = ?", (key,)
            ).fetchone()
        return orjson.loads(row[0]) if row else None

    def put(self, key: str, model: str, response: dict[str, Any]) -> None:
        with self._lock:
            self._db().execute(
                "INSERT OR REPLACE INTO responses (key, model, response, created) "
                "VALUES (?, ?, ?, ?)",
                (key, model, orjson.dumps(response), time.time()),
            )

    def count(self) -> int:
        with self._lock:
            return int(self._db().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

"""The response cache: a SQLite file keyed by a hash of who answers and what was asked.

It survives processes, so a re-run with unchanged inputs makes no model calls. The key
(:func:`cache_key`) covers everything that changes an answer: who answers (the provider, the
model, and for a server its endpoint URL and the headers that choose how it answers, such as
an API version: :meth:`~assay.llm.providers.base.Provider.cache_identity`), every field of the
request that is sent (messages, schema or tools, temperature, max_tokens, seed, top_p,
log-probabilities...) and the sample number (repeats of a case are independent samples, each
cached on its own). It never holds a secret: a key or a password changes who pays, not the
answer. Modes: ``use`` (read and write), ``refresh`` (write only), ``off``; the mode comes
from :func:`assay.types.engine_config.cache_mode`.

Keys made before the endpoint was part of them (assay 0.2.0 and earlier) are never computed
again: those entries simply miss, and the answers are asked for (and cached) anew.

The engine stores only answers that were usable (a judge's answer only once it validated), so
a replayed answer is never one that already failed. A cache that cannot be opened or written
is reported by :meth:`ResponseCache.check` before a run, naming the file and the way out.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from assay._util.redact import scrub_json_bytes
from assay._util.sqlite_wal import use_wal
from assay.errors import ConfigError
from assay.llm.types import ChatRequest

_KEY_FIELDS = ("messages", "response_format", "tools", "tool_choice", "temperature",
               "max_tokens", "seed", "logprobs", "top_logprobs")
_NOT_ANSWER_FIELDS = frozenset({"model", "user", "metadata", "store", "stream_options"})
"""Request fields that cannot change an answer: ``model`` (the provider sends its own, which
the endpoint identity holds), an end user's id, request metadata and storage options."""
CACHE_KEY_VERSION = 2


def cache_key(endpoint: Mapping[str, Any], request: ChatRequest, sample: int = 0) -> str:
    """The response cache's key: a stable hash of who answers (``endpoint``, a provider's
    :meth:`~assay.llm.providers.base.Provider.cache_identity`), every request field that is
    sent and can change the answer (whatever its name, so a parameter assay does not know of
    yet counts too) and ``sample`` (N > 0 is another draw of the same request, cached apart).
    Dict key order does not matter; a field set to None is a field not set."""
    canonical: dict[str, Any] = {"v": CACHE_KEY_VERSION, "endpoint": endpoint}
    for field, value in request.items():
        if value is not None and field not in _NOT_ANSWER_FIELDS:
            canonical[field] = value
    if sample:
        canonical["sample"] = sample
    return hashlib.sha256(orjson.dumps(canonical, option=orjson.OPT_SORT_KEYS)).hexdigest()


def request_key(model_name: str, request: ChatRequest, sample: int = 0) -> str:
    """A stable hash of a model name and the request fields a judge sets: what identifies a
    judge for its calibrations (:mod:`assay.calibration.key`), unchanged since calibrations
    were first stored, so none of them goes stale. The response cache keys by
    :func:`cache_key`, which also holds the endpoint.
    """
    canonical: dict[str, Any] = {"model": model_name}
    for field in _KEY_FIELDS:
        if field in request and request[field] is not None:  # type: ignore[literal-required]
            canonical[field] = request[field]  # type: ignore[literal-required]
    if sample:
        canonical["sample"] = sample
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
            try:
                use_wal(conn)  # several processes may open a new cache at once
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT, "
                    "response BLOB NOT NULL, created REAL NOT NULL)"
                )
            except sqlite3.Error:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db().execute(
                "SELECT response FROM responses WHERE key = ?", (key,)
            ).fetchone()
        return orjson.loads(row[0]) if row else None

    def holds_model(self, model: str) -> bool:
        """Whether any answer of ``model`` (its display name, as :meth:`put` keeps it) is
        here: what lets a run whose model cannot be reached go on from the cache. One scan of
        the table, made only then."""
        with self._lock:
            return self._db().execute(
                "SELECT 1 FROM responses WHERE model = ? LIMIT 1", (model,)
            ).fetchone() is not None

    def put(self, key: str, model: str, response: dict[str, Any]) -> None:
        """Keep an answer, with every known secret in it hidden (see :mod:`assay._util.redact`):
        an answer that quotes a key is replayed with a label in its place."""
        blob = scrub_json_bytes(orjson.dumps(response))
        with self._lock:
            self._db().execute(
                "INSERT OR REPLACE INTO responses (key, model, response, created) "
                "VALUES (?, ?, ?, ?)",
                (key, model, blob, time.time()),
            )

    def delete(self, key: str) -> None:
        with self._lock:
            self._db().execute("DELETE FROM responses WHERE key = ?", (key,))

    def check(self) -> None:
        """Open the file and try a write, or raise ConfigError that names the file and says
        how to go on (another cache directory, or no cache)."""
        try:
            with self._lock:
                conn = self._db()
                conn.execute("BEGIN IMMEDIATE")  # takes the write lock: fails when read-only
                conn.execute("ROLLBACK")
                conn.execute("SELECT COUNT(*) FROM responses LIMIT 1").fetchone()
        except (sqlite3.Error, OSError) as exc:
            self.close()
            raise ConfigError(
                f"the response cache {self.path} cannot be used: {type(exc).__name__}: {exc}. "
                "Fix or delete that file, point ASSAY_CACHE_DIR at a writable directory, or "
                "run with --cache off", code="cache_unusable") from None

    def count(self) -> int:
        with self._lock:
            return int(self._db().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                conn, self._conn = self._conn, None
                conn.close()

"""Switching a SQLite file to write-ahead logging, safely when several processes open it new.

The run store and the response cache are SQLite files that several processes may open at
the same moment: pytest workers sharing a cache, a server and its runs, two commands started
together. Switching a new file to WAL needs the file to itself, and there SQLite answers
"locked" at once instead of waiting out the busy timeout, because waiting could deadlock
two connections that each hold a read lock. One of them wins; the others retry here until
the file is in WAL mode, which it keeps from then on.
"""

from __future__ import annotations

import random
import sqlite3
import time
from typing import Any


def use_wal(cursor: Any, wait_seconds: float = 30.0) -> None:
    """Run ``PRAGMA journal_mode=WAL`` on ``cursor`` (a sqlite3 cursor or connection),
    retrying for up to ``wait_seconds`` while another connection holds the file."""
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.005 + random.random() * 0.02)

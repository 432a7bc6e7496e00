"""A fresh PostgreSQL database per test, on the server named by ``$ASSAY_TEST_POSTGRES_URL``.

``scripts/postgres.sh start`` starts a throw-away server and prints such a URL. Without one,
tests marked ``postgres`` are skipped on a developer's machine but fail under CI (``$CI`` set),
so a CI job that forgot to start the server cannot pass by skipping them.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.ci_support import missing

URL_VARIABLE = "ASSAY_TEST_POSTGRES_URL"


def postgres_url() -> str:
    """The server's URL; skips the test (fails it under CI) when none is configured."""
    url = os.environ.get(URL_VARIABLE, "").strip()
    if url:
        return url
    message = (f"${URL_VARIABLE} is not set: start a server with "
               f'`export {URL_VARIABLE}="$(scripts/postgres.sh start)"`')
    missing("PostgreSQL", message)


@contextmanager
def fresh_database(base_url: str) -> Iterator[str]:
    """Create an empty database beside the one in ``base_url``, yield its URL, drop it."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    base = make_url(base_url)
    name = f"assay_t_{secrets.token_hex(6)}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        _drop(admin, name)
        admin.dispose()


def _drop(admin: Any, name: str) -> None:
    """Drop a test database, waiting out a server process in it that the test's role may not
    end: ``WITH (FORCE)`` ends the test's own sessions, but an autovacuum worker that has just
    started on the new database belongs to the server, and the drop is refused until it is
    done (seen once in CI as a teardown error)."""
    from sqlalchemy import text
    from sqlalchemy.exc import ProgrammingError

    for attempt in range(100):
        try:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            return
        except ProgrammingError as exc:
            if "pg_signal_backend" not in str(exc) or attempt == 99:
                raise
            time.sleep(0.1)

"""Model providers. Built-in ones register on first use (:mod:`.catalog`), so optional extras
stay optional."""

from __future__ import annotations

import sys

from assay.llm.providers.base import Provider, create_provider, register_provider


async def close_http_session() -> None:
    """Close the running loop's pooled HTTP session, if an HTTP provider opened one.

    Asks ``sys.modules`` rather than importing: aiohttp takes a quarter of a second to import,
    and a run whose evaluators call no model should not pay for it on the way out.
    """
    http_session = sys.modules.get("assay.llm.providers.http_session")
    if http_session is not None:
        await http_session.close_session()


__all__ = ["Provider", "close_http_session", "create_provider", "register_provider"]

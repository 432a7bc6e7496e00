"""The raw aiohttp loop as a whole process: the yardstick for a whole-process ``assay run``.

``suite_throughput.py`` sets ``assay run`` (start-up included) against the raw loop measured
in its own process after a warm-up, which pays no start-up at all. This script is the other
yardstick: a fresh interpreter that imports aiohttp and orjson, reads the request bodies the
benchmark prepared (the same judge requests the run makes), posts them under a semaphore,
checks each answer, and exits. Nothing of assay is imported. Its wall time, measured from
outside, is what any Python client pays for the same calls.

::

    python benchmarks/raw_process.py BASE_URL BODIES_JSON CONCURRENCY
"""

from __future__ import annotations

import asyncio
import sys

import aiohttp
import orjson

HEADERS = {"Content-Type": "application/json", "Authorization": "Bearer dummy"}


async def post_all(session: aiohttp.ClientSession, url: str, bodies: list[object],
                   concurrency: int) -> int:
    """Post every body under a semaphore; the number of calls without a usable answer.
    The in-process raw loop (``judge_throughput.RawAiohttp``) is this same function."""
    semaphore = asyncio.Semaphore(concurrency)

    async def one(body: object) -> bool:
        async with semaphore, session.post(url, data=orjson.dumps(body),
                                           headers=HEADERS) as resp:
            payload = await resp.read()
        if resp.status != 200:
            return False
        verdict = orjson.loads(orjson.loads(payload)["choices"][0]["message"]["content"])
        return isinstance(verdict.get("score"), int | float)

    results = await asyncio.gather(*(one(b) for b in bodies), return_exceptions=True)
    return sum(1 for ok in results if ok is not True)


async def post_file(base_url: str, bodies: list[object], concurrency: int) -> int:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        return await post_all(session, f"{base_url}/chat/completions", bodies, concurrency)


def main() -> int:
    base_url, path, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(path, "rb") as handle:
        bodies = orjson.loads(handle.read())
    errors = asyncio.run(post_file(base_url, bodies, concurrency))
    print(errors)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

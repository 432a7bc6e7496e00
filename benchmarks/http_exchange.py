"""Client CPU of one judge call's HTTP exchange (``http_session.exchange``), two versions
side by side in one process.

Every live judge call goes through ``exchange``, so a few microseconds there are paid per
call. A mock server in its own process answers at once; this process sends the same
chat-completions request through each version's ``exchange`` on the same pooled session, 32
at a time, in interleaved rounds of ``--calls``, and prints each version's CPU per call
(``time.process_time``, this process only). ``--old`` names another checkout's
``http_session.py`` to set against the installed one.

    python benchmarks/http_exchange.py --old /tmp/old/src/assay/llm/providers/http_session.py

A measurement, not a test: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import subprocess
import sys
import time
from types import ModuleType

import orjson
from _common import free_port


def load(path: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def measure(url: str, versions: dict[str, ModuleType], calls: int,
                  rounds: int) -> dict[str, list[float]]:
    body = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    headers = {"content-type": "application/json"}
    gate = asyncio.Semaphore(32)

    async def one(module: ModuleType) -> None:
        async with gate:
            await module.exchange("POST", f"{url}/chat/completions", body, headers, 30, None)

    for module in versions.values():  # warm the pool and both code paths
        await asyncio.gather(*(one(module) for _ in range(300)))
    found: dict[str, list[float]] = {name: [] for name in versions}
    names = list(versions)
    for r in range(rounds):
        for name in names if r % 2 else reversed(names):
            start = time.process_time()
            await asyncio.gather(*(one(versions[name]) for _ in range(calls)))
            found[name].append((time.process_time() - start) / calls * 1e6)
    await versions["installed"].close_session()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", help="another version's http_session.py")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    import assay.llm.providers.http_session as installed

    versions = {"installed": installed}
    if args.old:
        old = load(args.old, "old_http_session")
        old.session = installed.session  # one pooled session for both
        versions["old"] = old
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "assay.testing.mock_server", "--port",
                               str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        time.sleep(2.0)
        found = asyncio.run(measure(f"http://127.0.0.1:{port}/v1", versions, args.calls,
                                    args.rounds))
    finally:
        server.terminate()
        server.wait()
    for name, values in found.items():
        print(f"{name}: median {statistics.median(values):.0f} us CPU a call "
              f"({', '.join(f'{v:.0f}' for v in sorted(values))})")


if __name__ == "__main__":
    main()

"""Judge calls per second through assay, against the fastest plain clients, on a mock server.

Four ways of making the same semantic-similarity judge call, each measured in this process, one
after the other, with a warm-up, against ``python -m assay.testing.mock_server`` running as a
separate process (pinned to its own core where the OS allows):

``assay-api``     ``SemanticSimilarity().evaluate(case, execution, ctx)``: what a user calls
``assay-engine``  ``ask_structured(engine, messages, SimilarityVerdict)``: the engine alone
``raw-aiohttp``   an aiohttp session, a semaphore, ``orjson`` in and out: the practical limit
``openai-sdk``    ``AsyncOpenAI().chat.completions.create`` under the same semaphore

All four send the same request bodies (the ones the judge builds), every request is distinct,
and the engine runs with ``cache_mode="off"``, so every call reaches the server; the server's
request counter is checked against the number of calls. The table gives calls/s, the fraction
of the ideal rate (concurrency / latency), the fraction of the raw aiohttp loop's rate at the
same settings, and the client's CPU time per call (``time.process_time``, this process only).

    python benchmarks/judge_throughput.py                  # the full grid
    python benchmarks/judge_throughput.py --quick          # a smoke run, well under 30 s
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import aiohttp
import orjson
from _common import (
    MockServerProcess,
    core_plan,
    machine_line,
    markdown_table,
    parse_list,
    pin,
)
from _workload import triples
from raw_process import post_all

from assay.judges.base import EvalContext
from assay.judges.llm.base import DATA_NOT_INSTRUCTIONS
from assay.judges.llm.semantic_similarity import (
    DEFAULT_PROMPT,
    SYSTEM,
    SemanticSimilarity,
    SimilarityVerdict,
)
from assay.judges.llm.templates import delimit, render
from assay.llm import EngineConfig, JudgeEngine
from assay.llm.structured import ask_structured, build_request
from assay.types.case import Case
from assay.types.execution import Execution

IMPLEMENTATIONS = ("assay-api", "assay-engine", "raw-aiohttp", "openai-sdk")
MODEL_NAME = "bench"
JUDGE_NAME = SemanticSimilarity.type


def judge_messages(expected: str, actual: str) -> list[dict[str, Any]]:
    """The messages SemanticSimilarity sends, built the way it builds them."""
    user = render(DEFAULT_PROMPT, {"ActualOutput": delimit("actual_output", actual),
                                   "ExpectedOutput": delimit("expected_output", expected)})
    return [{"role": "system", "content": SYSTEM.format(data=DATA_NOT_INSTRUCTIONS)},
            {"role": "user", "content": user}]


def judge_body(expected: str, actual: str) -> dict[str, Any]:
    """The chat-completions body assay sends for one judgement (json_schema mode)."""
    return dict(build_request("json_schema", MODEL_NAME, judge_messages(expected, actual),
                              SimilarityVerdict.model_json_schema(), JUDGE_NAME, 0.0, None,
                              None))


class Implementation:
    """One way of making judge calls. ``prepare`` runs untimed; ``run`` is what is timed."""

    name: ClassVar[str] = ""

    def __init__(self, base_url: str, concurrency: int) -> None:
        self.base_url = base_url
        self.concurrency = concurrency

    async def setup(self) -> None:
        """Create clients; called once per measurement, before the warm-up."""

    def prepare(self, start: int, count: int) -> list[Any]:
        """The inputs for ``count`` distinct calls starting at workload index ``start``."""
        return [judge_body(expected, actual) for _, expected, actual in triples(start, count)]

    async def run(self, items: list[Any]) -> int:
        """Make one call per item at this implementation's concurrency; return the errors."""
        raise NotImplementedError

    async def close(self) -> None:
        """Release clients and connections."""


class AssayApi(Implementation):
    """The public judge API: an evaluator scoring (case, execution) pairs through the engine."""

    name = "assay-api"

    async def setup(self) -> None:
        model = f"{self.base_url}#{MODEL_NAME}"
        self.engine = JudgeEngine(EngineConfig(default_model=model, concurrency=self.concurrency,
                                               cache_mode="off"))
        self.ctx = EvalContext(self.engine, judge_model=model)
        self.judge = SemanticSimilarity()

    def prepare(self, start: int, count: int) -> list[Any]:
        return [(Case(id=f"case-{start + i}", input=question, expected_output=expected),
                 Execution(output=actual))
                for i, (question, expected, actual) in enumerate(triples(start, count))]

    async def run(self, items: list[Any]) -> int:
        scores = await asyncio.gather(*(self.judge.evaluate(case, execution, self.ctx)
                                        for case, execution in items))
        return sum(1 for score in scores if score.error is not None or score.value is None)

    async def close(self) -> None:
        await self.engine.aclose()


class AssayEngine(AssayApi):
    """The engine alone: ``ask_structured`` with prebuilt messages, no evaluator around it."""

    name = "assay-engine"

    def prepare(self, start: int, count: int) -> list[Any]:
        return [judge_messages(expected, actual) for _, expected, actual in triples(start, count)]

    async def run(self, items: list[Any]) -> int:
        results = await asyncio.gather(*(
            ask_structured(self.engine, messages, SimilarityVerdict, name=JUDGE_NAME)
            for messages in items))
        return sum(1 for result in results if result.value is None)


class RawAiohttp(Implementation):
    """The least a Python client can do: post bytes, read bytes, decode the JSON twice."""

    name = "raw-aiohttp"

    async def setup(self) -> None:
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        self.url = f"{self.base_url}/chat/completions"

    async def run(self, items: list[Any]) -> int:
        return await post_all(self.session, self.url, items, self.concurrency)

    async def close(self) -> None:
        await self.session.close()


async def raw_loop(base_url: str, concurrency: int, calls: int, start: int = 0,
                   server: Any = None) -> dict[str, Any]:
    """The raw aiohttp loop as the yardstick of another measurement in the same run: a
    warm-up, then ``calls`` distinct calls from workload index ``start``. Returns the wall
    seconds, calls/s, client CPU ms per call, errors, and (given the ``server`` process, whose
    counters are reset first) the requests the server saw."""
    impl = RawAiohttp(base_url, concurrency)
    await impl.setup()
    try:
        warm = max(2 * concurrency, 32)
        await impl.run(impl.prepare(start, warm))
        items = impl.prepare(start + warm, calls)
        if server is not None:
            server.reset()
        cpu = time.process_time()
        started = time.perf_counter()
        errors = await impl.run(items)
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu
        requests = int(server.stats()["requests"]) if server is not None else calls
    finally:
        await impl.close()
    return {"seconds": seconds, "rate": requests / seconds, "requests": requests,
            "errors": errors, "cpu_ms": cpu * 1000 / calls}


class OpenAISdk(Implementation):
    """The official SDK's async client under the same semaphore, decoding the same JSON."""

    name = "openai-sdk"

    async def setup(self) -> None:
        from openai import AsyncOpenAI

        self.client = AsyncOpenAI(base_url=self.base_url, api_key="dummy")

    async def run(self, items: list[Any]) -> int:
        semaphore = asyncio.Semaphore(self.concurrency)

        async def one(body: dict[str, Any]) -> bool:
            async with semaphore:
                completion = await self.client.chat.completions.create(**body)
            verdict = orjson.loads(completion.choices[0].message.content or "")
            return isinstance(verdict.get("score"), int | float)

        results = await asyncio.gather(*(one(body) for body in items), return_exceptions=True)
        return sum(1 for ok in results if ok is not True)

    async def close(self) -> None:
        await self.client.close()


CLASSES: dict[str, type[Implementation]] = {
    cls.name: cls for cls in (AssayApi, AssayEngine, RawAiohttp, OpenAISdk)}


@dataclass
class Measurement:
    """One timed run of one implementation at one concurrency and server latency."""

    impl: str
    concurrency: int
    latency_ms: float
    calls: int
    seconds: float
    client_cpu_s: float
    server_cpu_s: float
    server_requests: int
    errors: int

    @property
    def calls_per_s(self) -> float:
        return self.calls / self.seconds if self.seconds > 0 else 0.0

    @property
    def ideal_per_s(self) -> float | None:
        """Concurrency / latency; None at zero latency, where there is no such bound."""
        return self.concurrency / (self.latency_ms / 1000) if self.latency_ms > 0 else None


class Counter:
    """Hands out workload indexes so no two calls in a run ever send the same body."""

    def __init__(self) -> None:
        self.next = 0

    def take(self, count: int) -> int:
        start = self.next
        self.next += count
        return start


def calls_for(n: int, concurrency: int, latency_ms: float, max_seconds: float) -> int:
    """N, or fewer when the ideal rate would make the run longer than ``max_seconds``."""
    if latency_ms <= 0:
        return n
    ideal = concurrency / (latency_ms / 1000)
    return max(min(n, 2 * concurrency), min(n, int(ideal * max_seconds)))


async def measure(cls: type[Implementation], server: MockServerProcess, concurrency: int,
                  calls: int, counter: Counter) -> Measurement:
    """Warm up, then time ``calls`` calls; the server's counter must see every one."""
    impl = cls(server.base_url, concurrency)
    await impl.setup()
    try:
        warm = min(calls, max(2 * concurrency, 32))
        await impl.run(impl.prepare(counter.take(warm), warm))
        items = impl.prepare(counter.take(calls), calls)
        server.reset()
        gc.collect()
        server_cpu = server.cpu_seconds()
        cpu = time.process_time()
        started = time.perf_counter()
        errors = await impl.run(items)
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu
        server_cpu = server.cpu_seconds() - server_cpu
        stats = server.stats()
    finally:
        await impl.close()
    return Measurement(cls.name, concurrency, server.latency_ms, calls, seconds, cpu, server_cpu,
                       int(stats["requests"]), errors)


async def run_grid(server: MockServerProcess, impls: Sequence[str], concurrencies: Sequence[int],
                   latencies: Sequence[float], n: int, max_seconds: float,
                   repeat: int) -> list[Measurement]:
    """Every (latency, concurrency, implementation), ``repeat`` times; the median is kept."""
    counter = Counter()
    kept: list[Measurement] = []
    for latency in latencies:
        server.configure(latency)
        for concurrency in concurrencies:
            calls = calls_for(n, concurrency, latency, max_seconds)
            runs: dict[str, list[Measurement]] = {name: [] for name in impls}
            for _ in range(repeat):
                for name in impls:  # interleaved, so drift in machine load hits all alike
                    runs[name].append(await measure(CLASSES[name], server, concurrency, calls,
                                                    counter))
            for name in impls:
                ordered = sorted(runs[name], key=lambda m: m.calls_per_s)
                best = ordered[len(ordered) // 2]
                kept.append(best)
                print(f"  latency {latency:g} ms, concurrency {concurrency}, {name}: "
                      f"{best.calls_per_s:.0f} calls/s"
                      + (f" (runs: {', '.join(f'{m.calls_per_s:.0f}' for m in runs[name])})"
                         if repeat > 1 else ""), file=sys.stderr, flush=True)
    return kept


def table(results: Sequence[Measurement]) -> str:
    """The markdown results table."""
    raw = {(m.concurrency, m.latency_ms): m.calls_per_s for m in results
           if m.impl == "raw-aiohttp"}
    rows = []
    for m in results:
        ideal = m.ideal_per_s
        base = raw.get((m.concurrency, m.latency_ms))
        rows.append([
            m.impl, m.concurrency, f"{m.latency_ms:g}", m.calls, f"{m.calls_per_s:.0f}",
            f"{m.calls_per_s / ideal:.0%}" if ideal else "-",
            f"{m.calls_per_s / base:.0%}" if base else "-",
            f"{m.client_cpu_s / m.calls * 1000:.2f}",
            f"{m.server_cpu_s / m.seconds:.0%}" if m.seconds else "-",
            m.errors if m.server_requests == m.calls else
            f"{m.errors} (server saw {m.server_requests})",
        ])
    return markdown_table(["implementation", "concurrency", "latency ms", "calls", "calls/s",
                           "of ideal", "of raw aiohttp", "client CPU ms/call",
                           "server CPU", "errors"], rows)


def summary(results: Sequence[Measurement]) -> list[str]:
    """The engine's rate as a share of raw aiohttp's, at the settings the targets name."""
    lines = []
    by_key = {(m.impl, m.concurrency, m.latency_ms): m for m in results}
    for (concurrency, latency, target) in ((32, 100.0, 0.95), (32, 0.0, 0.40), (128, 0.0, 0.40)):
        raw = by_key.get(("raw-aiohttp", concurrency, latency))
        if raw is None:
            continue
        for impl in ("assay-api", "assay-engine"):
            got = by_key.get((impl, concurrency, latency))
            if got is None:
                continue
            share = got.calls_per_s / raw.calls_per_s if raw.calls_per_s else 0.0
            verdict = "meets" if share >= target else "MISSES"
            lines.append(f"- {impl} at concurrency {concurrency}, latency {latency:g} ms: "
                         f"{share:.0%} of raw aiohttp ({verdict} the {target:.0%} target)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=2000, help="calls per measurement")
    parser.add_argument("--concurrency", default="8,32,128", help="comma-separated list")
    parser.add_argument("--latency", default="0,100,500",
                        help="mock server latencies in ms, comma-separated")
    parser.add_argument("--impl", default=",".join(IMPLEMENTATIONS),
                        help=f"comma-separated subset of {', '.join(IMPLEMENTATIONS)}")
    parser.add_argument("--max-seconds", type=float, default=10.0,
                        help="fewer than N calls where the ideal rate would take longer")
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell; median kept")
    parser.add_argument("--no-pin", action="store_true",
                        help="do not pin the server and this process to separate cores")
    parser.add_argument("--json", help="also write the measurements to this file")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: N=100, concurrency 8,32, latency 0,50")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.concurrency, args.latency, args.max_seconds = 100, "8,32", "0,50", 2.0
    impls = [name for name in args.impl.split(",") if name]
    unknown = [name for name in impls if name not in CLASSES]
    if unknown:
        parser.error(f"unknown implementation(s) {unknown}; known: {list(CLASSES)}")
    if "openai-sdk" in impls:
        try:
            import openai  # noqa: F401
        except ImportError:
            print("openai is not installed: skipping openai-sdk (pip install openai)",
                  file=sys.stderr)
            impls.remove("openai-sdk")

    server_cores, client_cores = core_plan(not args.no_pin)
    pin(0, client_cores)
    print(f"# judge throughput\n\n{machine_line()}; server cores {server_cores or 'any'}, "
          f"client cores {client_cores or 'any'}\n", flush=True)
    with MockServerProcess(0.0, server_cores) as server:
        results = asyncio.run(run_grid(
            server, impls, parse_list(args.concurrency), parse_list(args.latency, float),
            args.n, args.max_seconds, args.repeat))
    print(table(results))
    lines = summary(results)
    if lines:
        print("\n" + "\n".join(lines))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([{**asdict(m), "calls_per_s": m.calls_per_s} for m in results], fh,
                      indent=1)
    failed = [m for m in results if m.calls_per_s <= 0 or m.server_requests != m.calls]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Every built-in judge's prompt puts what every case shares first and the case's data last,
byte for byte the same across cases, so a provider's prompt cache can reuse it."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from assay.judges.base import EvalContext
from assay.judges.catalog import MODULES
from assay.judges.llm.base import LLMEvaluator
from assay.judges.registry import build, evaluator_class
from assay.llm.engine import JudgeEngine
from assay.llm.prompt_cache import shared_end
from assay.llm.providers.custom import register_service
from assay.llm.providers.scripted import answer
from assay.types.engine_config import EngineConfig

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "prompt_caching.py"
sys.path.insert(0, str(SCRIPT.parent))
_spec = importlib.util.spec_from_file_location("prompt_caching", SCRIPT)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules["prompt_caching"] = bench  # its dataclasses look their module up
_spec.loader.exec_module(bench)

UIPATH_ONLY = {"uipath_custom"}
"""Judges whose prompt is the user's own, written for UiPath's evaluator classes."""
TRAILING = {"custom_judge": "the user's own instructions, written around its variables",
            "make_judge": "the user's own instructions, written around its variables",
            "connexity_judge": "Connexity's documented order ends with the metric ids (a "
                               "few dozen tokens after a shared prefix of 1,700)"}
"""Judges whose prompt may hold more than a line after the case's data, and why."""
CLOSE = re.compile(r"</[A-Za-z_][A-Za-z0-9_]*_[0-9a-f]{12}>")


def test_the_benchmark_covers_every_built_in_llm_judge() -> None:
    judges = {name for name in MODULES if name not in UIPATH_ONLY
              and issubclass(evaluator_class(name) or object, LLMEvaluator)}
    assert judges == set(bench.JUDGES)


def _requests(judge: str, n: int) -> list[dict[str, Any]]:
    """The first request of each of ``n`` different cases."""
    seen: list[dict[str, Any]] = []

    async def service(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        return answer(request)

    async def judge_all() -> list[dict[str, Any]]:
        engine = JudgeEngine(EngineConfig(default_model=register_service(f"t-{judge}", service),
                                          cache_mode="off"))
        config = dict(bench.JUDGES[judge])
        as_json = bool(config.pop("json", False))
        evaluator = build({"type": judge, **config})
        first = []
        try:
            for case, execution in bench.cases(n, as_json):
                before = len(seen)
                await evaluator.evaluate(case, execution, EvalContext(engine))
                assert len(seen) > before, f"{judge} made no request"
                first.append(seen[before])
        finally:
            await engine.aclose()
        return first

    return asyncio.run(judge_all())


@pytest.mark.parametrize("judge", sorted(bench.JUDGES))
def test_what_every_case_shares_comes_first_and_the_same(judge: str) -> None:
    requests = _requests(judge, 3)
    systems = [[m["content"] for m in r["messages"] if m["role"] == "system"]
               for r in requests]
    assert all(s == systems[0] for s in systems), f"{judge}: the system prompt varies by case"
    users = [next(m["content"] for m in r["messages"] if m["role"] == "user")
             for r in requests]
    heads = [text[:shared_end(text)] for text in users]
    assert all(h == heads[0] for h in heads), f"{judge}: the instructions vary by case"
    for case_index, text in enumerate(users):  # the data comes after: it differs by case
        assert text[len(heads[0]):] != users[(case_index + 1) % len(users)][len(heads[0]):]
    closes = list(CLOSE.finditer(users[0]))
    tail = users[0][closes[-1].end():] if closes else ""
    assert len(tail.strip()) <= 2 or judge in TRAILING, \
        f"{judge}: what follows the case's data could be shared: {tail[:200]!r}"
    schemas = [(r.get("response_format"), r.get("tools")) for r in requests]
    assert all(s == schemas[0] for s in schemas), f"{judge}: the schema varies by case"


def test_the_benchmark_prints_every_judge() -> None:
    from contextlib import redirect_stdout
    from io import StringIO

    out = StringIO()
    with redirect_stdout(out):
        assert bench.main(["--cases", "2", "--models", "openai:gpt-4o-mini"]) == 0
    rows = [line for line in out.getvalue().splitlines() if line.startswith("| ")][1:]
    assert {row.split("|")[1].strip() for row in rows} == set(bench.JUDGES)
    assert not [row for row in rows if "FAILED" in row]

"""The embedded 270M model calibrated end to end on 20 LLMBar pairs, fully offline: every
pair judged in both orders, the report complete and stored, and the demo-model notes on it."""

from __future__ import annotations

import pytest

from assay.calibration import store as calibrations
from assay.llm import RetryPolicy
from assay.llm.models import DEMO_MODEL_NOTE
from assay.run.calibrate import NEAR_CHANCE, calibrate_async
from assay.run.evaluate import open_store
from tests.conftest import local_model_available

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not local_model_available(),
                                 reason="needs the 'local' extra (scripts/setup.sh installs it)")]


@pytest.mark.timeout(3600)
async def test_the_embedded_model_calibrates_on_20_llmbar_pairs(tmp_path):
    store = f"sqlite:///{tmp_path}/runs.db"
    # On a shared 2-core machine one call of the CPU model can take a minute: generous time
    # bounds, so that the test measures the calibration and not the machine's load.
    patient = RetryPolicy(call_timeout_s=900, total_timeout_s=1800)
    report = await calibrate_async("llmbar-natural", limit=20,
                                   judge_model="local:gemma-3-270m", store=store,
                                   concurrency=2, resamples=500, retry=patient)
    counts = report.counts
    assert counts.items == 20 and counts.scored + counts.errors + counts.skipped == 20
    assert counts.scored >= 18, counts  # grammar-constrained answers parse
    assert report.judge.models == ["local:gemma-3-270m"]
    pair = report.pairwise
    assert pair is not None and pair.pairs == counts.scored
    for stat in (report.statistics["accuracy"], pair.position_consistency,
                 pair.longer_baseline_accuracy):
        assert stat.value is not None and 0.0 <= stat.value <= 1.0
    assert report.notes[:2] == [DEMO_MODEL_NOTE, NEAR_CHANCE]
    assert calibrations.latest(open_store(store), report.judge.key).id == report.id

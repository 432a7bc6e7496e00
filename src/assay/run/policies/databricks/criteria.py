"""Quality criteria: conditions a run's aggregates must meet (MLflow's ``quality_criteria``).

::

    correctness >= 0.9 AND `safety/mean` >= 1 AND `latency/p90` <= 2

Conditions are joined by ``AND``; each is ``<metric> <op> <number>`` with ``>=``, ``<=``, ``>``
or ``<``. A metric is ``<scorer>/<aggregation>`` (a bare scorer name means ``/mean``), in back
quotes when it holds a ``/``, or any aggregate key of the run's naming
(``response/llm_judged/correctness/rating/percentage``). The text is parsed before the run,
so a malformed one fails before any judge is called; the aggregations it names are computed.
A metric with no value (every score an error, say) does not meet its condition.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from assay.errors import ConfigError
from assay.types import numbers

OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}
AGGREGATION_NAMES = ("min", "max", "mean", "median", "variance", "p90")
_CONDITION = re.compile(
    r"^\s*(?:`(?P<quoted>[^`]+)`|(?P<bare>[A-Za-z_][A-Za-z0-9_./-]*))\s*"
    r"(?P<op>>=|<=|>|<)\s*(?P<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")
_AND = re.compile(r"\s+AND\s+", re.IGNORECASE)


@dataclass(frozen=True)
class Condition:
    """One condition: ``key`` is the metric as written (a bare name gets ``/mean``)."""

    key: str
    op: str
    threshold: float
    threshold_text: str

    @property
    def scorer(self) -> str:
        """The scorer name: the key without a trailing aggregation."""
        head, _, tail = self.key.rpartition("/")
        return head if head and tail in AGGREGATION_NAMES else self.key

    @property
    def aggregation(self) -> str | None:
        head, _, tail = self.key.rpartition("/")
        return tail if head and tail in AGGREGATION_NAMES else None

    def __str__(self) -> str:
        return f"{self.key} {self.op} {self.threshold_text}"


def parse(text: str) -> list[Condition]:
    """The conditions of ``text``; a ConfigError says which part is malformed and what a
    condition looks like."""
    if not text or not text.strip():
        raise ConfigError("quality criteria are empty; expected conditions such as "
                          "'correctness >= 0.9 AND `safety/mean` >= 1'",
                          code="invalid_quality_criteria")
    found = []
    for part in _AND.split(text.strip()):
        match = _CONDITION.match(part)
        if match is None:
            raise ConfigError(
                f"quality criteria: cannot read {part.strip()!r}; expected <metric> <op> "
                "<number> with op >=, <=, > or < (such as correctness >= 0.9 or "
                "`latency/p90` <= 2), conditions joined by AND",
                code="invalid_quality_criteria")
        key = match.group("quoted") or match.group("bare")
        head, _, tail = key.rpartition("/")
        if not head or (tail not in AGGREGATION_NAMES and "/" not in key):
            key = f"{key}/mean"
        found.append(Condition(key=key.strip(), op=match.group("op"),
                               threshold=float(match.group("number")),
                               threshold_text=match.group("number")))
    return found


def check_names(conditions: list[Condition], known: set[str], open_ended: bool,
                naming: str | None) -> None:
    """Refuse, before the run, a condition on a scorer the run does not have.

    ``known`` holds the scorers' names (assay's and MLflow's); ``open_ended`` when a scorer
    may name its own judgements (a Python scorer returning several feedbacks), which can only
    be checked once they exist. Keys in the naming's own form (``response/...``) are checked
    after the run.
    """
    prefixes = ("response/", "retrieval/", "agent/", "judge/", "metric/")
    for condition in conditions:
        if condition.scorer in known or open_ended:
            continue
        if naming == "databricks" and condition.key.startswith(prefixes):
            continue
        names = ", ".join(sorted(known)) or "none"
        raise ConfigError(f"quality criteria: no scorer named {condition.scorer!r} in "
                          f"{str(condition)!r}; the run's scorers: {names}",
                          code="invalid_quality_criteria")


def unmet(conditions: list[Condition], metrics: Mapping[str, float | int | None]) -> list[str]:
    """The conditions the metrics do not meet, as ``"<key> <op> <x> (got <value>)"``."""
    failures = []
    for condition in conditions:
        value = metrics.get(condition.key)
        if value is None:
            have = "no such metric" if condition.key not in metrics else "no value"
            failures.append(f"{condition} (got {have})")
        elif not OPERATORS[condition.op](float(value), condition.threshold):
            failures.append(f"{condition} (got {numbers.plain(float(value))})")
    return failures

"""Which part of an output an evaluator compares: ``target_output_key``, and line-by-line mode.

Agents often return a structure of which only one field matters (``{"answer": ..., "debug":
...}``). ``target_output_key`` picks it, with UiPath's rules so that eval sets written for
UiPath score the same here:

- ``"*"`` is the whole output;
- ``"a.b[0].c"`` walks dicts by key and lists by index;
- a list of keys gives ``{key: value_at(key)}`` for each.

Values are compared as they are, never turned into floats first: equality is
:func:`assay._util.jsondata.same_data` (``1`` equals ``1.0``, ``10**16 + 1`` does not equal
``10**16``, ``True`` is not ``1``), and a number compared as text is its own ``str()``.

A key that is not there is the user's mistake, not a low score: it raises
:class:`~assay.errors.EvaluationError` (``target_output_key_not_found``) naming the path and the
keys that do exist where the walk stopped, and the evaluator reports an error score.

Expected output given as a JSON string is parsed when a key other than ``"*"`` is used (as
UiPath does). So is an actual output that is a JSON string: agents run from the command line
or over HTTP return text, and a key can only be looked up in a structure.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import AliasChoices, Field, field_validator

from assay._util import jsondata
from assay.errors import EvaluationError
from assay.judges.base import EvalContext, Evaluator
from assay.judges.llm.templates import as_text
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.score import Score

WHOLE = "*"
TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")

Side = Literal["actual", "expected"]
TargetKey = str | list[str]


def path_tokens(path: str) -> list[str | int]:
    """``"items[0].name"`` -> ``["items", 0, "name"]``: names are str, indices int."""
    tokens: list[str | int] = []
    for name, index in TOKEN.findall(path):
        tokens.append(int(index) if index else name)
    return tokens


def _render(tokens: list[str | int]) -> str:
    text = ""
    for token in tokens:
        text += f"[{token}]" if isinstance(token, int) else (f".{token}" if text else token)
    return text


def _what_exists(value: Any) -> str:
    """The keys (or indices) available in ``value``, for an error message."""
    if isinstance(value, Mapping):
        keys = [str(k) for k in value]
        if not keys:
            return "the object has no keys"
        shown = ", ".join(keys[:30]) + (f", ... ({len(keys) - 30} more)" if len(keys) > 30 else "")
        return f"available keys: {shown}"
    if isinstance(value, list):
        if not value:
            return "the list is empty"
        return f"the list has {len(value)} item(s), indices 0-{len(value) - 1}"
    if value is None:
        return "it is null"
    return f"it is a {type(value).__name__}, which has no keys"


def resolve_path(value: Any, path: str, side: Side = "actual") -> Any:
    """The value at ``path`` inside ``value``; raise ``target_output_key_not_found`` if absent.

    A name token only indexes a dict and an index token only indexes a list, as in UiPath:
    ``items.0`` does not reach into a list, and ``[0]`` does not look up the key ``"0"``.
    """
    tokens = path_tokens(path)
    if not tokens:
        raise EvaluationError("target_output_key_not_found",
                              f"target_output_key {path!r} names no key")
    current = value
    for position, token in enumerate(tokens):
        found = False
        if isinstance(token, int):
            if isinstance(current, list) and token < len(current):
                current, found = current[token], True
        elif isinstance(current, Mapping) and token in current:
            current, found = current[token], True
        if not found:
            where = _render(tokens[:position]) or "the top level"
            raise EvaluationError(
                "target_output_key_not_found",
                f"target_output_key {path!r} not found in the {side} output: "
                f"no {_render([token]) if isinstance(token, int) else repr(token)} at {where}; "
                f"{_what_exists(current)}")
    return current


def _parse_json(value: Any, side: Side) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return jsondata.loads(value)
    except ValueError:
        raise EvaluationError(
            f"invalid_{side}_output",
            f"the {side} output is text that is not JSON, so a target_output_key cannot be "
            f"looked up in it: {value[:80]!r}") from None


def select(value: Any, key: TargetKey, side: Side = "actual") -> Any:
    """The part of ``value`` that ``key`` picks."""
    if key == WHOLE:
        return value
    value = _parse_json(value, side)
    if isinstance(key, str):
        return resolve_path(value, key, side)
    if not isinstance(value, Mapping):
        raise EvaluationError(
            f"invalid_{side}_output",
            f"target_output_key lists several keys, so the {side} output must be an object; "
            f"it is a {type(value).__name__}")
    return {k: resolve_path(value, k, side) for k in key}


def resolve_output(value: Any, key: TargetKey, side: Side = "actual") -> Any:
    """What an output evaluator compares: the part of ``value`` that ``key`` picks, its
    numbers as they are (see the module docstring)."""
    return select(value, key, side)


# -- line by line ------------------------------------------------------------------------


def split_lines(value: Any, delimiter: str = "\n") -> list[str]:
    """Non-blank lines of a value (non-strings are first written as JSON text)."""
    text = value if isinstance(value, str) else as_text(value)
    return [line for line in text.split(delimiter) if line.strip()]


def pair_lines(expected: Any, actual: Any, delimiter: str = "\n") -> list[tuple[str, str]]:
    """Lines paired by position; the shorter side is padded with ``""``.

    When neither side has a line the single pair ``("", "")`` is returned, so the comparison
    still runs once (on empty text) instead of averaging over nothing.
    """
    left, right = split_lines(expected, delimiter), split_lines(actual, delimiter)
    size = max(len(left), len(right))
    if size == 0:
        return [("", "")]
    left += [""] * (size - len(left))
    right += [""] * (size - len(right))
    return list(zip(left, right, strict=True))


@dataclass
class Comparison:
    """One comparison's result, before it becomes a :class:`Score`."""

    value: float
    raw: Any = None
    scale: str = "0-1"
    rationale: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def line_by_line(expected: Any, actual: Any, delimiter: str,
                 compare: Callable[[Any, Any], Comparison]) -> Comparison:
    """Compare line pairs and average; each line's result is kept in ``details["lines"]``."""
    lines: list[dict[str, Any]] = []
    for number, (want, got) in enumerate(pair_lines(expected, actual, delimiter), start=1):
        result = compare(want, got)
        lines.append({"line": number, "expected": want, "actual": got, "value": result.value,
                      **result.details})
    mean = sum(line["value"] for line in lines) / len(lines)
    perfect = sum(1 for line in lines if line["value"] == 1.0)
    return Comparison(value=mean, raw=mean, scale="0-1",
                      rationale=f"mean over {len(lines)} line(s); {perfect} scored 1",
                      details={"lines": lines})


# -- evaluator bases ---------------------------------------------------------------------


class TargetedEvaluator(Evaluator):
    """An evaluator that reads one part of the output, chosen by ``target_output_key``."""

    target_output_key: TargetKey = Field(
        default=WHOLE, validation_alias=AliasChoices("target_output_key", "targetOutputKey"))

    @field_validator("target_output_key")
    @classmethod
    def _key_is_usable(cls, key: TargetKey) -> TargetKey:
        keys = [key] if isinstance(key, str) else key
        if isinstance(key, list) and not key:
            raise ValueError("a list of target output keys cannot be empty")
        for one in keys:
            if isinstance(key, list) and one == WHOLE:
                raise ValueError("'*' means the whole output and cannot be one of several keys")
            if one != WHOLE and not path_tokens(one):
                raise ValueError(f"{one!r} is not a key path (e.g. 'answer' or 'items[0].name')")
        return key

    def actual_value(self, execution: Execution) -> Any:
        """The execution's output, narrowed by the key."""
        return resolve_output(execution.output, self.target_output_key, "actual")

    def expected_value(self, expected: Any) -> Any:
        """An expected output, narrowed by the key."""
        return resolve_output(expected, self.target_output_key, "expected")


def require_expected(name: str, case: Case, own: Any = None) -> Any:
    """The output an evaluator compares against: its own ``expected``, else the case's.

    Every evaluator that compares with an expected output asks here, so a case without one is
    the same error (``missing_expected_output``) for all of them, raised before any judge is
    called: comparing with nothing would give a number that means nothing.
    """
    expected = own if own is not None else case.expected_output
    if expected is None:
        raise EvaluationError(
            "missing_expected_output",
            f"{name}: case {case.id!r} has no expected_output and the evaluator sets no "
            "'expected'")
    return expected


class OutputEvaluator(TargetedEvaluator):
    """Base of evaluators that compare (part of) the output, optionally line by line.

    Subclasses implement :meth:`compare` on already resolved values; this base does the key
    resolution, line splitting and averaging so every output evaluator behaves the same.
    A list of keys turns line-by-line mode off, as it produces an object, not text.
    """

    line_by_line: bool = Field(
        default=False, validation_alias=AliasChoices("line_by_line", "lineByLineEvaluator"))
    line_delimiter: str = Field(
        default="\n", min_length=1,
        validation_alias=AliasChoices("line_delimiter", "lineDelimiter"))

    uses_expected: ClassVar[bool] = True
    """False for evaluators (like ``contains``) whose reference is part of their config."""

    def reference(self, case: Case) -> Any:
        """The expected output before resolution; raise when there is none to compare to."""
        return require_expected(self.name, case, getattr(self, "expected", None))

    @abstractmethod
    def compare(self, expected: Any, actual: Any) -> Comparison:
        """Score resolved values (``expected`` is None when :attr:`uses_expected` is False)."""

    async def score(self, case: Case, execution: Execution, ctx: EvalContext) -> Score:
        actual = self.actual_value(execution)
        expected = self.expected_value(self.reference(case)) if self.uses_expected else None
        if self.line_by_line and isinstance(self.target_output_key, str):
            result = line_by_line(expected if self.uses_expected else "", actual,
                                  self.line_delimiter, self.compare)
        else:
            result = self.compare(expected, actual)
        return Score(name=self.name, value=result.value, raw=result.raw, scale=result.scale,
                     passed=self.verdict(result.value), rationale=result.rationale or None,
                     details=result.details or None)

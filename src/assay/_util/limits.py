"""Bounds on the shape of suite files, so hostile input fails fast and small.

Everything after parsing (locating, checking, fingerprinting, storing, judging) walks a
suite's values, much of it recursively. A file that nests values thousands deep, or whose
YAML aliases stand for billions of values, would otherwise end in a ``RecursionError`` or
exhaust memory long after it was read. The bounds are far above what a suite needs.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator

from assay._util.jsondata import unpaired_surrogate

MAX_DEPTH = 100
"""How deep lists and mappings may nest in a suite file (a case, an expected output...)."""

MAX_ALIAS_VALUES = 250_000
"""How many values YAML aliases (``*name``) may add to a document in all. Each alias stands
for a copy of its anchored value, so a few hundred bytes of nested aliases can stand for
billions of values ("billion laughs")."""

DEPTH_EXPECTED = f"lists and mappings nested at most {MAX_DEPTH} deep"


def depth_message(limit: int = MAX_DEPTH) -> str:
    return f"values nest more than {limit} deep"


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether lists and mappings in ``value`` nest more than ``limit`` deep.

    Iterative, so it answers for values too deep for any recursive walk. Only containers
    are stacked: this runs on every case of a suite, and most values are text.
    """
    if not isinstance(value, dict | list):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
    return False


SURROGATE_EXPECTED = "valid Unicode text: \\ud800-\\udfff escapes only as pairs"
YAML_SURROGATE_EXPECTED = "a character written as itself, or as a \\UXXXXXXXX escape"
"""YAML's ``\\u`` escapes stand for code points, not UTF-16 units: no surrogate is valid."""


def surrogate_message(escape: str, where: str | None = None) -> str:
    """What a suite file is told of text holding a surrogate code point (``escape``) not
    paired into a character, found at ``where`` (a JSON path) when the problem's line
    alone does not say."""
    return f"text{f' at {where}' if where else ''} holds the surrogate code point " \
        f"{escape}, which is not valid Unicode on its own"


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def json_surrogate_problem(text: str, value: Any) -> tuple[str, str] | None:
    """(the problem, what was expected) when ``value``, decoded from the JSON ``text``, holds
    a surrogate code point on its own; None when it holds none. Looked for only when the text
    holds a surrogate's escape, the one way JSON writes one (so the common case, a file with
    none, costs a search of its text, not a walk of every value)."""
    found = surrogate_in(value) if _SURROGATE_ESCAPE.search(text) else None
    return None if found is None else (surrogate_message(found[1], found[0]),
                                       SURROGATE_EXPECTED)


def surrogate_in(value: Any) -> tuple[str, str] | None:
    """(where, which) for the first text, value or key, in ``value`` that holds an unpaired
    surrogate: ``$.input[2]`` and ``\\ud800``. None when there is none.

    A JSON file may write one as an escape (``"\\ud800"``), and its decoder keeps it; nothing
    can then encode the text as UTF-8, so fingerprinting, storing or writing the case failed
    with a traceback long after the file was read. Iterative, as :func:`too_deep`."""
    stack: list[tuple[Any, str]] = [(value, "$")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            found = unpaired_surrogate(item)
            if found is not None:
                return where, found
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                found = unpaired_surrogate(key) if isinstance(key, str) else None
                if found is not None:
                    return f"{where} (a key)", found
                stack.append((child, f"{where}.{key}"))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{i}]") for i, child in reversed(
                list(enumerate(item))))
    return None


# -- numeric limits -------------------------------------------------------------------------
#
# Every loop and every wait of a run is bounded by a number a suite, a targets file, a
# RunConfig or a flag gives: agent rounds, timeouts, repeats, retries, concurrency. Each such
# number is one of the types below, so a non-finite value (``.inf``, ``1e400``, ``nan``), a
# null where a bound is needed, or an absurd one is refused where it is read, with a message
# that states the accepted range; none can make a run loop or wait without end.

MAX_TURNS = 1_000
"""Agent rounds of one conversation."""
MAX_TIMEOUT_S = 86_400.0
"""One day: the longest any one wait (an agent run, a judge call, a conversation) may be."""
MAX_REPEAT = 1_000
"""Independent runs of one case."""
MAX_RETRIES = 100
"""Times one failed thing (an agent run, an unusable judge answer) is tried again."""
MAX_ATTEMPTS = 100_000
"""Attempts of one judge call (its total timeout bounds them too)."""
MAX_CONCURRENCY = 1_024
"""Cases, judge calls or workers in flight at once."""
MAX_CALLS = 10_000
"""Judge calls one code judge's script may make for one case."""


@dataclass(frozen=True)
class Bound:
    """The range a numeric limit accepts, and how to say it in a message."""

    what: str
    low: float
    high: float
    whole: bool = False
    low_open: bool = False
    """True: ``low`` itself is not accepted (a timeout of 0 means nothing)."""

    @property
    def expected(self) -> str:
        """``a whole number of agent rounds from 1 to 1000``."""
        kind = "a whole number" if self.whole else "a finite number"
        low = f"above {_plain(self.low)}" if self.low_open else f"from {_plain(self.low)}"
        return f"{kind} of {self.what} {low} to {_plain(self.high)}"

    def check(self, value: Any) -> Any:
        """``value`` as a number in range; ValueError stating the range otherwise. Meant as a
        pydantic before-validator, so it sees the value as written (text too)."""
        number = _number(value)
        if number is None or not math.isfinite(number) or number > self.high or \
                number < self.low or (self.low_open and number == self.low) or \
                (self.whole and number != int(number)):
            raise ValueError(f"expected {self.expected}, not {_shown(value)}")
        return int(number) if self.whole else number

    def accepts(self, value: Any) -> bool:
        """Whether :meth:`check` takes ``value``."""
        try:
            self.check(value)
        except ValueError:
            return False
        return True

    def check_optional(self, value: Any) -> Any:
        """As :meth:`check`, with None (no value given) passed through."""
        return None if value is None else self.check(value)


def _plain(number: float) -> str:
    return str(int(number)) if number == int(number) else f"{number:g}"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    return repr(value) if isinstance(value, str) else str(value)


TURNS = Bound("agent rounds", 1, MAX_TURNS, whole=True)
TIMEOUT_S = Bound("seconds", 0, MAX_TIMEOUT_S, low_open=True)
TIMEOUT_MS = Bound("milliseconds", 0, MAX_TIMEOUT_S * 1000, low_open=True)
DELAY_S = Bound("seconds", 0, MAX_TIMEOUT_S)
DELAY_MS = Bound("milliseconds", 0, MAX_TIMEOUT_S * 1000)
REPEATS = Bound("runs", 1, MAX_REPEAT, whole=True)
RETRIES = Bound("retries", 0, MAX_RETRIES, whole=True)
ATTEMPTS = Bound("attempts", 1, MAX_ATTEMPTS, whole=True)
CONCURRENCY = Bound("cases or calls in flight", 1, MAX_CONCURRENCY, whole=True)
CALLS = Bound("calls", 1, MAX_CALLS, whole=True)

Turns = Annotated[int, BeforeValidator(TURNS.check)]
OptionalTurns = Annotated[int | None, BeforeValidator(TURNS.check_optional)]
TimeoutS = Annotated[float, BeforeValidator(TIMEOUT_S.check)]
OptionalTimeoutS = Annotated[float | None, BeforeValidator(TIMEOUT_S.check_optional)]
TimeoutMs = Annotated[float, BeforeValidator(TIMEOUT_MS.check)]
DelayS = Annotated[float, BeforeValidator(DELAY_S.check)]
Repeats = Annotated[int, BeforeValidator(REPEATS.check)]
Retries = Annotated[int, BeforeValidator(RETRIES.check)]
Attempts = Annotated[int, BeforeValidator(ATTEMPTS.check)]
Concurrency = Annotated[int, BeforeValidator(CONCURRENCY.check)]
Calls = Annotated[int, BeforeValidator(CALLS.check)]
